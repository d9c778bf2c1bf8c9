// A field whose type has no TypeInfo: one error, on the field's type, that says it has no
// TypeInfo and how to give it one (the generated impls bound the field's type, so that the
// compiler reports that bound, where it is written, instead of each use of the serializer).
use typeinfo::TypeInfo;

struct NotDescribed;

#[derive(TypeInfo)]
struct Order {
    id: u64,
    customer: NotDescribed,
}

fn main() {}
