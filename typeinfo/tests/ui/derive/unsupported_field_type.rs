// A field whose type has no TypeInfo: the first error lands on the field's type and says it
// has no TypeInfo. The follow-on errors (the generated serializer is then not `Send`/`Sync`)
// point at `#[derive(TypeInfo)]`: spans cannot place them on one field.
use typeinfo::TypeInfo;

struct NotDescribed;

#[derive(TypeInfo)]
struct Order {
    id: u64,
    customer: NotDescribed,
}

fn main() {}
