// `with = "..."` naming a type that is not a serializer of the field's type: the error
// points at the path in the attribute.
use typeinfo::TypeInfo;

#[derive(Clone, Default, Debug)]
struct NotASerializer;

#[derive(TypeInfo)]
struct Order {
    #[typeinfo(with = "NotASerializer")]
    note: String,
}

fn main() {}
