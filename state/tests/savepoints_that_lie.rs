//! Savepoint files whose checksum is right but whose entries are not: invalid UTF-8 in a
//! part that needs no migration, and a key filed under another key group than its own.
//! Both backends refuse them with `CorruptSavepoint` and stay empty. Before, RocksDB copied
//! as-is parts without checking UTF-8 (the heap refused the same file), and both filed a
//! key under its block's key group without hashing it.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test (or bench) panics on what it does not expect

use std::path::Path;

use typeinfo_state::*;

const MAX: u32 = 128;

/// A savepoint of one value state (`String` keys and values) with `key -> value`.
fn savepoint(dir: &Path, key: &str, value: &str) -> Vec<u8> {
    let mut b = HeapKeyedStateBackend::<String>::new(
        BackendOptions::new(MAX, KeyGroupRange::all(MAX)).unwrap(),
    )
    .unwrap();
    let state = b
        .value_state::<(), String>(&ValueStateDescriptor::new("names"))
        .unwrap();
    b.set_current_key(&key.to_owned()).unwrap();
    state.update(&mut b, &(), value.to_owned()).unwrap();
    let path = dir.join("good.kstate");
    b.snapshot(&path).unwrap();
    std::fs::read(&path).unwrap()
}

/// `bytes` with the only occurrence of `from` replaced by `to` (as long), checksum resealed.
fn forge(bytes: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    assert_eq!(from.len(), to.len());
    let at: Vec<usize> = (0..=bytes.len() - from.len())
        .filter(|&i| &bytes[i..i + from.len()] == from)
        .collect();
    assert_eq!(at.len(), 1, "one occurrence of {from:?}");
    let mut out = bytes.to_vec();
    out[at[0]..at[0] + to.len()].copy_from_slice(to);
    let body = out.len() - 8;
    let crc = crc32fast::hash(&out[..body]);
    out[body..body + 4].copy_from_slice(&crc.to_le_bytes());
    out
}

/// Restores `file` into a heap and a RocksDB backend of all key groups that hold one entry
/// already; the errors of both, each after checking that the backend was left empty (the
/// entry it held is gone too: a failed restore leaves nothing half-restored, nor what was
/// there before it). Before, RocksDB's clean-up looked for the last key with a reverse
/// seek, which column families updated in place do not support, and kept everything.
fn restore_both(dir: &Path, file: &[u8]) -> Vec<Error> {
    let path = dir.join("forged.kstate");
    std::fs::write(&path, file).unwrap();
    let options = || BackendOptions::new(MAX, KeyGroupRange::all(MAX)).unwrap();
    let mut errors = Vec::new();
    let mut heap = HeapKeyedStateBackend::<String>::new(options()).unwrap();
    let state = heap
        .value_state::<(), String>(&ValueStateDescriptor::new("names"))
        .unwrap();
    heap.set_current_key(&"stray".to_owned()).unwrap();
    state.update(&mut heap, &(), "here before".into()).unwrap();
    errors.push(
        heap.restore(&[path.as_path()])
            .expect_err("heap must refuse"),
    );
    assert!(
        heap.keys(state.id(), &()).unwrap().is_empty(),
        "heap stays empty"
    );
    let mut rocks = RocksDbKeyedStateBackend::<String>::open(
        &dir.join("db"),
        options(),
        RocksDbOptions::default(),
    )
    .unwrap();
    let state = rocks
        .value_state::<(), String>(&ValueStateDescriptor::new("names"))
        .unwrap();
    rocks.set_current_key(&"stray".to_owned()).unwrap();
    state.update(&mut rocks, &(), "here before".into()).unwrap();
    errors.push(
        rocks
            .restore(&[path.as_path()])
            .expect_err("rocksdb must refuse"),
    );
    assert!(
        rocks.keys(state.id(), &()).unwrap().is_empty(),
        "rocksdb stays empty"
    );
    errors
}

#[test]
fn invalid_utf8_in_a_part_restored_as_is_is_refused_by_both_backends() {
    let dir = tempfile::tempdir().unwrap();
    let good = savepoint(dir.path(), "ada", "lovelace");
    let forged = forge(&good, b"lovelace", b"love\xff\xfe\xfd\xfc");
    for e in restore_both(dir.path(), &forged) {
        assert!(
            matches!(&e, Error::CorruptSavepoint { detail, .. } if detail.contains("UTF-8")),
            "{e}"
        );
        assert!(e.to_string().contains("state `names`"), "{e}");
    }
}

#[test]
fn a_key_filed_under_another_key_group_is_refused_by_both_backends() {
    let dir = tempfile::tempdir().unwrap();
    // Two keys of the same length in different key groups: the file holds `a`'s block with
    // `b` in it.
    let (a, b) = ("user-1", "user-2");
    let (kg_a, kg_b) = (
        key_group_for_bytes(b"\x06user-1", MAX),
        key_group_for_bytes(b"\x06user-2", MAX),
    );
    assert_ne!(kg_a, kg_b);
    let good = savepoint(dir.path(), a, "x");
    let forged = forge(&good, a.as_bytes(), b.as_bytes());
    for e in restore_both(dir.path(), &forged) {
        let expected =
            format!("a key in the block of key group {kg_a} belongs to key group {kg_b}");
        assert!(
            matches!(&e, Error::CorruptSavepoint { detail, .. } if detail.contains(&expected)),
            "{e}"
        );
    }
}

#[test]
fn each_entry_has_its_own_budget_for_elements_that_take_no_bytes() {
    // Three values of 2^17 `()` in one key group: 3 × 2^17 elements in one block, more
    // than one read's budget (2^18), but each entry within it. Both backends restore them.
    let dir = tempfile::tempdir().unwrap();
    let key_bytes = |k: &str| {
        let mut b = vec![k.len() as u8];
        b.extend_from_slice(k.as_bytes());
        b
    };
    let group = key_group_for_bytes(&key_bytes("k0"), MAX);
    let keys: Vec<String> = (0..10_000)
        .map(|i| format!("k{i}"))
        .filter(|k| key_group_for_bytes(&key_bytes(k), MAX) == group)
        .take(3)
        .collect();
    assert_eq!(keys.len(), 3);
    let units = vec![(); typeinfo::MAX_ZERO_SIZED_ITEMS / 2];
    let options = || BackendOptions::new(MAX, KeyGroupRange::all(MAX)).unwrap();
    let mut b = HeapKeyedStateBackend::<String>::new(options()).unwrap();
    let state = b
        .value_state::<(), Vec<()>>(&ValueStateDescriptor::new("units"))
        .unwrap();
    for k in &keys {
        b.set_current_key(k).unwrap();
        state.update(&mut b, &(), units.clone()).unwrap();
    }
    let path = dir.path().join("units.kstate");
    b.snapshot(&path).unwrap();

    let mut heap = HeapKeyedStateBackend::<String>::new(options()).unwrap();
    let state = heap
        .value_state::<(), Vec<()>>(&ValueStateDescriptor::new("units"))
        .unwrap();
    heap.restore(&[path.as_path()]).unwrap();
    for k in &keys {
        heap.set_current_key(k).unwrap();
        assert_eq!(
            state.value(&mut heap, &()).unwrap().map(|v| v.len()),
            Some(units.len())
        );
    }
    let mut rocks = RocksDbKeyedStateBackend::<String>::open(
        &dir.path().join("db"),
        options(),
        RocksDbOptions::default(),
    )
    .unwrap();
    let state = rocks
        .value_state::<(), Vec<()>>(&ValueStateDescriptor::new("units"))
        .unwrap();
    rocks.restore(&[path.as_path()]).unwrap();
    for k in &keys {
        rocks.set_current_key(k).unwrap();
        assert_eq!(
            state.value(&mut rocks, &()).unwrap().map(|v| v.len()),
            Some(units.len())
        );
    }
}
