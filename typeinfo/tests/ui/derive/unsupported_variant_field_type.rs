// A variant field whose type has no TypeInfo: the first error lands on that field's type;
// the follow-on errors about the generated serializer point at `#[derive(TypeInfo)]`.
use typeinfo::TypeInfo;

struct NotDescribed;

#[derive(TypeInfo)]
enum Event {
    Created { id: u64 },
    Tagged(u64, NotDescribed),
}

fn main() {}
