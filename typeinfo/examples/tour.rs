//! A tour of the type layer: compact self-delimiting bytes, snapshots, schema evolution,
//! byte-comparable keys, and reading old bytes without the old type.
//!
//! Run it with `./dev demo` (or `cargo run --release -p typeinfo --example tour`).

use std::collections::BTreeMap;

use typeinfo::{
    to_bytes, Comparable, Compatibility, DataInputView, SnapshotRegistry, TypeComparator, TypeInfo,
    TypeSerializer,
};

/// Version 1 of a per-user state value: (user id, order count, amounts per currency).
type StateV1 = (String, i32, BTreeMap<String, f32>);
/// Version 2: the count widened to `i64`, amounts widened to `f64`, a new optional field.
type StateV2 = (String, i64, BTreeMap<String, f64>);

fn hex(bytes: &[u8]) -> String {
    bytes
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Each step checks what it shows; a failed check ends the tour with an error (exit code 1).
fn main() -> Result<(), Box<dyn std::error::Error>> {
    // 1. Compact, self-delimiting bytes with no type metadata.
    let v1 = typeinfo::serializer::<StateV1>()?;
    let value: StateV1 = (
        "ada".to_owned(),
        3,
        BTreeMap::from([("EUR".to_owned(), 12.5), ("USD".to_owned(), 4.0)]),
    );
    let bytes = to_bytes(&v1, &value)?;
    println!(
        "1. {} is {} bytes: {}",
        StateV1::description(),
        bytes.len(),
        hex(&bytes)
    );

    // 2. The snapshot describes the layout; it is what a savepoint stores beside the bytes.
    let snapshot = v1.snapshot();
    println!(
        "2. snapshot of {} is {} bytes",
        snapshot.type_name(),
        snapshot.to_bytes()?.len()
    );

    // 3. Restore with a changed type: the verdict decides, the reader migrates.
    let v2 = typeinfo::serializer::<StateV2>()?;
    let registry = SnapshotRegistry::default();
    match v2.resolve(&snapshot, &registry) {
        Compatibility::AfterMigration(reader) => {
            let migrated = reader.read(&mut DataInputView::new(&bytes))?;
            println!(
                "3. {} -> {}: compatible after migration, read {migrated:?}",
                snapshot.type_name(),
                v2.snapshot().type_name()
            );
        }
        other => {
            return Err(format!("3. expected compatible after migration, got {other:?}").into())
        }
    }
    let incompatible = typeinfo::serializer::<(String, String, BTreeMap<String, f64>)>()?;
    match incompatible.resolve(&snapshot, &registry).incompatibility() {
        Some(why) => println!("   and a count that became a String is refused: {why}"),
        None => return Err("3. a count that became a String was not refused".into()),
    }

    // 4. Old bytes can be read without the old type (savepoint inspection, removed fields).
    let restored = registry.restore(&snapshot)?;
    println!(
        "4. read without the type: {:?}",
        restored.deserialize(&mut DataInputView::new(&bytes))?
    );

    // 5. Normalized keys: sorting the bytes sorts the values.
    let comparator = <(String, i64)>::comparator();
    let mut keys: Vec<((String, i64), Vec<u8>)> = [("bob", 2), ("ada", 10), ("ada", -1), ("", 0)]
        .into_iter()
        .map(|(u, n)| {
            let value = (u.to_owned(), n);
            let mut key = Vec::new();
            comparator.write_normalized_key(&value, &mut key);
            (value, key)
        })
        .collect();
    keys.sort_by(|a, b| a.1.cmp(&b.1));
    let by_bytes: Vec<&(String, i64)> = keys.iter().map(|(v, _)| v).collect();
    let mut by_ord = by_bytes.clone();
    by_ord.sort();
    println!(
        "5. sorted by key bytes: {by_bytes:?} (same as Ord: {})",
        by_bytes == by_ord
    );
    if by_bytes != by_ord {
        return Err("5. the order of the key bytes differs from Ord".into());
    }
    Ok(())
}
