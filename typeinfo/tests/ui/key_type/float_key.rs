fn requires_key<K: typeinfo::KeyType>() {}

fn main() {
    requires_key::<f64>();
}
