// A recursive type has no comparator (its comparator's type would be infinite): where a
// key is required, the error says so and names the field, instead of blaming floats and
// hash maps.
use typeinfo::TypeInfo;

#[derive(TypeInfo)]
struct Path {
    segment: String,
    rest: Option<Box<Path>>,
}

fn key<K: typeinfo::KeyType>() {}

fn main() {
    key::<Path>();
}
