//! Golden cases of the state layer: key groups of fixed keys, composite key bytes, and a
//! keyed and an operator snapshot written by version 1 of the state crate.

use std::path::Path;

use typeinfo::{I64Serializer, StringSerializer, TupleSerializer, U32Serializer, UnitSerializer};
use typeinfo_state::{
    key_group_for_bytes, BackendOptions, CompositeKeyBuilder, HeapKeyedStateBackend, KeyGroupRange,
    KeyedStateBackend, ListStateDescriptor, MapStateDescriptor, OperatorStateBackend,
    Redistribution, Result, ValueStateDescriptor,
};

/// The subdirectory of the fixture directory holding the state fixtures.
pub const STATE_SUBDIR: &str = "state";

/// Keys (as serialized bytes, with a readable label) whose key groups are pinned.
pub fn pinned_keys() -> Vec<(String, Vec<u8>)> {
    let mut keys = Vec::new();
    for s in ["", "a", "ab", "user-1", "user-2", "EURUSD", "日本"] {
        keys.push((
            format!("String {s:?}"),
            typeinfo::to_bytes(&StringSerializer, &s.to_owned()).unwrap_or_default(),
        ));
    }
    for n in [0i64, 1, -1, 42, i64::MAX] {
        keys.push((
            format!("i64 {n}"),
            typeinfo::to_bytes(&I64Serializer, &n).unwrap_or_default(),
        ));
    }
    keys.push((
        "(u32, String) (7, \"x\")".to_owned(),
        typeinfo::to_bytes(
            &TupleSerializer((U32Serializer, StringSerializer)),
            &(7u32, "x".to_owned()),
        )
        .unwrap_or_default(),
    ));
    keys
}

/// The max parallelisms the key groups are pinned for.
pub const MAX_PARALLELISMS: [u32; 4] = [1, 128, 1000, 32768];

/// The text of `key_groups.txt`: `label | hex bytes | key group per max parallelism`.
pub fn key_groups_text() -> String {
    let mut out = String::from(
        "# key | serialized bytes (hex) | key group for max parallelism 1, 128, 1000, 32768\n",
    );
    for (label, bytes) in pinned_keys() {
        let groups: Vec<String> = MAX_PARALLELISMS
            .iter()
            .map(|m| key_group_for_bytes(&bytes, *m).to_string())
            .collect();
        out.push_str(&format!(
            "{label} | {} | {}\n",
            crate::golden::hex(&bytes),
            groups.join(" ")
        ));
    }
    out
}

/// The text of `composite_keys.txt`: `description | hex`.
pub fn composite_keys_text() -> Result<String> {
    let mut out = String::from("# composite key | bytes (hex)\n");
    let mut small = CompositeKeyBuilder::new(128);
    small.set_key(7, &"ab".to_owned(), &StringSerializer)?;
    let line = crate::golden::hex(small.set_namespace(&(), &UnitSerializer)?);
    out.push_str(&format!("maxP 128, kg 7, key \"ab\", ns () | {line}\n"));
    let ns = small
        .set_namespace(
            &(0i64, 60_000i64),
            &TupleSerializer((I64Serializer, I64Serializer)),
        )?
        .to_vec();
    out.push_str(&format!(
        "maxP 128, kg 7, key \"ab\", ns (0, 60000) | {}\n",
        crate::golden::hex(&ns)
    ));
    let with_user_key = small.with_user_key(&[0x80, 0, 0, 5]).to_vec();
    out.push_str(&format!(
        "... with user key 5i32 normalized | {}\n",
        crate::golden::hex(&with_user_key)
    ));
    let mut large = CompositeKeyBuilder::new(1024);
    large.set_key(700, &"ab".to_owned(), &StringSerializer)?;
    let line = crate::golden::hex(large.set_namespace(&(), &UnitSerializer)?);
    out.push_str(&format!("maxP 1024, kg 700, key \"ab\", ns () | {line}\n"));
    Ok(out)
}

/// The values the v1 keyed snapshot holds for key `user-{i}`, `i` in `0..SAVEPOINT_KEYS`.
pub const SAVEPOINT_KEYS: u64 = 20;

/// Writes the v1 keyed snapshot: a value, a list and a map state over 20 keys.
pub fn write_keyed_snapshot(path: &Path) -> Result<()> {
    let mut b =
        HeapKeyedStateBackend::<String>::new(BackendOptions::new(128, KeyGroupRange::all(128))?)?;
    let count = b.value_state::<(), u64>(&ValueStateDescriptor::new("count"))?;
    let events = b.list_state::<(), String>(&ListStateDescriptor::new("events"))?;
    let by_minute = b.map_state::<(), i64, f64>(&MapStateDescriptor::new("by_minute"))?;
    for i in 0..SAVEPOINT_KEYS {
        b.set_current_key(&format!("user-{i}"))?;
        count.update(&mut b, &(), i * 3)?;
        events.update(&mut b, &(), vec![format!("login-{i}"), format!("buy-{i}")])?;
        by_minute.put(&mut b, &(), 60_000, i as f64 + 0.25)?;
        by_minute.put(&mut b, &(), -60_000, -(i as f64))?;
    }
    b.snapshot(path)?;
    Ok(())
}

/// Writes the v1 operator snapshot of subtask 0 of 1.
pub fn write_operator_snapshot(path: &Path) -> Result<()> {
    let mut ops = OperatorStateBackend::new(0, 1);
    let offsets = ops.list_state::<u64>("offsets", Redistribution::Split)?;
    let rules = ops.broadcast_state::<String, i32>("rules")?;
    for o in [10u64, 20, 30, 40] {
        offsets.add(&mut ops, o)?;
    }
    rules.put(&mut ops, "limit".to_owned(), 100)?;
    ops.snapshot(path)
}
