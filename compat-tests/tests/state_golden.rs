//! The state layer's golden files: key groups of fixed keys never change, composite keys
//! keep their bytes, and snapshots written by version 1 are restored by today's code into
//! both backends.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test (or bench) panics on what it does not expect

use std::path::PathBuf;

use typeinfo_compat_tests::golden::fixture_dir;
use typeinfo_compat_tests::state_cases::*;
use typeinfo_state::*;

fn state_dir() -> PathBuf {
    fixture_dir().join(STATE_SUBDIR)
}

fn read(name: &str) -> String {
    std::fs::read_to_string(state_dir().join(name))
        .unwrap_or_else(|e| panic!("missing fixture {name} ({e}); write it with `cargo run -p typeinfo-compat-tests --bin write_state_fixtures`"))
}

#[test]
fn key_groups_of_fixed_keys_never_change() {
    assert_eq!(
        key_groups_text(),
        read("key_groups.txt"),
        "the key group hash changed: every stored keyed state would be lost"
    );
}

#[test]
fn composite_keys_keep_their_bytes() -> Result<()> {
    assert_eq!(composite_keys_text()?, read("composite_keys.txt"));
    Ok(())
}

fn check_keyed<B: KeyedStateBackend<String>>(b: &mut B) -> Result<()> {
    let count = b.value_state::<(), u64>(&ValueStateDescriptor::new("count"))?;
    let events = b.list_state::<(), String>(&ListStateDescriptor::new("events"))?;
    let by_minute = b.map_state::<(), i64, f64>(&MapStateDescriptor::new("by_minute"))?;
    let report = b.restore(&[state_dir().join("keyed.kstate").as_path()])?;
    assert!(report.migrated.is_empty(), "{report:?}");
    for i in 0..SAVEPOINT_KEYS {
        b.set_current_key(&format!("user-{i}"))?;
        assert_eq!(count.value(b, &())?, Some(i * 3));
        assert_eq!(
            events.get(b, &())?,
            vec![format!("login-{i}"), format!("buy-{i}")]
        );
        assert_eq!(
            by_minute.entries(b, &())?,
            vec![(-60_000, -(i as f64)), (60_000, i as f64 + 0.25)]
        );
    }
    Ok(())
}

#[test]
fn the_v1_keyed_snapshot_restores_into_the_heap() -> Result<()> {
    check_keyed(&mut HeapKeyedStateBackend::new(BackendOptions::new(
        128,
        KeyGroupRange::all(128),
    )?)?)
}

#[test]
fn the_v1_keyed_snapshot_restores_into_rocksdb() -> Result<()> {
    let dir = tempfile::tempdir().map_err(|e| Error::InvalidConfig(e.to_string()))?;
    check_keyed(&mut RocksDbKeyedStateBackend::open(
        dir.path(),
        BackendOptions::new(128, KeyGroupRange::all(128))?,
        RocksDbOptions::default(),
    )?)
}

#[test]
fn the_v1_operator_snapshot_restores() -> Result<()> {
    let mut ops = OperatorStateBackend::new(0, 1);
    let offsets = ops.list_state::<u64>("offsets", Redistribution::Split)?;
    let rules = ops.broadcast_state::<String, i32>("rules")?;
    ops.restore(&[state_dir().join("operator.ostate").as_path()])?;
    assert_eq!(offsets.get(&mut ops)?, vec![10, 20, 30, 40]);
    assert_eq!(
        rules.read_only(&mut ops)?.get(&"limit".to_owned()),
        Some(&100)
    );
    Ok(())
}
