// A derived struct with an `f64` field is not a key type: where a key is required, the
// compiler says so, and names the field's type that is not one.
use typeinfo::TypeInfo;

#[derive(TypeInfo)]
struct Reading {
    sensor: String,
    value: f64,
}

fn key<K: typeinfo::KeyType>() {}

fn main() {
    key::<Reading>();
}
