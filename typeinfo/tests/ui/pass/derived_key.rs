// A derived struct and enum whose fields are all key types are key types themselves, with
// a comparator in `#[derive(Ord)]` order; a generic one is a key when its parameter is.
use typeinfo::{Comparable, KeyType, TypeComparator, TypeInfo};

#[derive(TypeInfo, Debug, PartialEq, Eq, PartialOrd, Ord, Clone)]
struct UserKey {
    tenant: String,
    id: u64,
}

#[derive(TypeInfo, Debug, PartialEq, Eq, PartialOrd, Ord, Clone)]
enum Region {
    Eu,
    Us { zone: u8 },
}

#[derive(TypeInfo)]
struct Keyed<K> {
    key: K,
    #[typeinfo(skip)]
    hits: f64,
}

fn key<K: KeyType>() {}

fn main() {
    key::<UserKey>();
    key::<Region>();
    key::<(UserKey, Region)>();
    key::<Keyed<String>>();
    assert!(UserKey::description().is_key_type());

    let c = UserKey::comparator();
    let mut keys = vec![
        UserKey { tenant: "b".to_owned(), id: 1 },
        UserKey { tenant: "a".to_owned(), id: 2 },
        UserKey { tenant: "a".to_owned(), id: 1 },
    ];
    let mut by_bytes: Vec<(Vec<u8>, UserKey)> = keys
        .iter()
        .map(|k| {
            let mut bytes = Vec::new();
            c.write_normalized_key(k, &mut bytes);
            (bytes, k.clone())
        })
        .collect();
    by_bytes.sort();
    keys.sort();
    assert_eq!(by_bytes.into_iter().map(|(_, k)| k).collect::<Vec<_>>(), keys);
    assert!(Region::comparator().compare(&Region::Eu, &Region::Us { zone: 0 }).is_lt());
}
