// A variant field whose type has no TypeInfo: one error, on that field's type.
use typeinfo::TypeInfo;

struct NotDescribed;

#[derive(TypeInfo)]
enum Event {
    Created { id: u64 },
    Tagged(u64, NotDescribed),
}

fn main() {}
