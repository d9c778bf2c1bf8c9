use std::collections::HashMap;

fn requires_key<K: typeinfo::KeyType>() {}

fn main() {
    requires_key::<(String, HashMap<String, u32>)>();
}
