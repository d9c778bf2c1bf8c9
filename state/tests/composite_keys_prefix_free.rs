//! Composite keys are prefix-free: the entries of one key never appear in a prefix scan of
//! another, for strings, byte vectors and composite keys; and RocksDB's native checkpoint
//! writes a usable copy.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test (or bench) panics on what it does not expect

use proptest::prelude::*;
use typeinfo::TypeInfo;
use typeinfo_state::*;

/// `[kg][key]` of `a` must not be a prefix of `[kg][key][namespace]` of `b` when `a != b`.
fn check<K: TypeInfo + PartialEq>(
    a: &K,
    b: &K,
    max_parallelism: u32,
) -> std::result::Result<(), TestCaseError> {
    if a == b {
        return Ok(());
    }
    let ser = K::create_serializer(&Default::default())
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    let bytes = |k: &K| typeinfo::to_bytes(&ser, k).map_err(|e| TestCaseError::fail(e.to_string()));
    let (ab, bb) = (bytes(a)?, bytes(b)?);
    let mut builder = CompositeKeyBuilder::new(max_parallelism);
    // Same key group on purpose: the worst case for a scan.
    builder.set_key_bytes(3, &ab);
    let prefix_a = builder.key_prefix().to_vec();
    builder.set_key_bytes(3, &bb);
    let full_b = builder
        .set_namespace(
            &(7i64, 9i64),
            &typeinfo::TupleSerializer((typeinfo::I64Serializer, typeinfo::I64Serializer)),
        )
        .map_err(|e| TestCaseError::fail(e.to_string()))?
        .to_vec();
    prop_assert!(
        !full_b.starts_with(&prefix_a),
        "{prefix_a:02x?} is a prefix of {full_b:02x?}"
    );
    Ok(())
}

proptest! {
    #[test]
    fn string_keys(a in ".{0,6}", b in ".{0,6}") {
        check(&a, &b, 128)?;
        check(&a, &format!("{a}{b}"), 4096)?;
    }

    #[test]
    fn byte_vector_keys(a in proptest::collection::vec(any::<u8>(), 0..6), b in proptest::collection::vec(any::<u8>(), 0..6)) {
        let mut ab = a.clone();
        ab.extend_from_slice(&b);
        check(&a, &b, 128)?;
        check(&a, &ab, 128)?;
    }

    #[test]
    fn composite_keys(a in (".{0,4}", any::<u32>()), b in (".{0,4}", any::<u32>())) {
        check(&a, &b, 128)?;
        check(&(a.0.clone(), a.1, a.0.clone()), &(a.0.clone(), a.1, format!("{}x", a.0)), 128)?;
    }
}

#[test]
fn map_entries_of_key_a_never_show_under_key_ab_in_rocksdb() -> Result<()> {
    let dir = tempfile::tempdir().map_err(|e| Error::InvalidConfig(e.to_string()))?;
    let mut b = RocksDbKeyedStateBackend::<Vec<u8>>::open(
        dir.path(),
        BackendOptions::new(1, KeyGroupRange::all(1))?,
        RocksDbOptions::default(),
    )?;
    let map = b.map_state::<(), u8, u8>(&MapStateDescriptor::new("m"))?;
    b.set_current_key(&vec![b'a'])?;
    map.put(&mut b, &(), 1, 1)?;
    b.set_current_key(&vec![b'a', b'b'])?;
    map.put(&mut b, &(), 2, 2)?;
    assert_eq!(map.entries(&mut b, &())?, vec![(2, 2)]);
    b.set_current_key(&vec![b'a'])?;
    assert_eq!(map.entries(&mut b, &())?, vec![(1, 1)]);
    Ok(())
}

#[test]
fn native_checkpoints_are_hard_linked_copies() -> Result<()> {
    let dir = tempfile::tempdir().map_err(|e| Error::InvalidConfig(e.to_string()))?;
    let mut b = RocksDbKeyedStateBackend::<String>::open(
        &dir.path().join("db"),
        BackendOptions::new(128, KeyGroupRange::all(128))?,
        RocksDbOptions::default(),
    )?;
    let v = b.value_state::<(), u64>(&ValueStateDescriptor::new("v"))?;
    b.set_current_key(&"k".to_owned())?;
    v.update(&mut b, &(), 7)?;
    let checkpoint = dir.path().join("checkpoint-1");
    b.native_checkpoint(&checkpoint)?;
    let files: Vec<_> = std::fs::read_dir(&checkpoint)
        .map_err(|e| Error::io(&checkpoint, e))?
        .filter_map(|e| e.ok())
        .collect();
    assert!(
        files
            .iter()
            .any(|f| f.file_name().to_string_lossy() == "CURRENT"),
        "a RocksDB checkpoint has a CURRENT file"
    );
    assert!(
        b.native_checkpoint(&checkpoint).is_err(),
        "an existing checkpoint directory is refused"
    );
    Ok(())
}
