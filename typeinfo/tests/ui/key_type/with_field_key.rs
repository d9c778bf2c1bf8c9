// A derived type with a `with` field has no comparator (the derive cannot know how the
// hand-written serializer's bytes order): where a key is required, the error says so and
// names the field, instead of blaming floats and hash maps.
use typeinfo::TypeInfo;

#[derive(TypeInfo)]
struct Account {
    tenant: String,
    #[typeinfo(with = "typeinfo::VarU64Serializer")]
    id: u64,
}

fn key<K: typeinfo::KeyType>() {}
fn sortable<C: typeinfo::Comparable>() {}

fn main() {
    key::<Account>();
    sortable::<Account>();
}
