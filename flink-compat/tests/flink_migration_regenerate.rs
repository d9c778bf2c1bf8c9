//! The migration goldens (`tests/migration/`, used by typeinfo-savepoint's
//! `flink_migration` test) are what Flink 2.3 writes today: tests/flink/run_migration.sh
//! runs FlinkMigration.java again into a fresh folder; its outputs must equal the committed
//! ones line for line and its savepoints must dump to the same entries (a savepoint's bytes
//! are not reproducible: its files' names are random UUIDs).
//!
//! Needs `java`, `javac` and Flink 2.3's jars in `$FLINK_BENCH_DIR` (default
//! `~/.cache/flink-bench`). Without them the test says so and passes, unless
//! `FLINK_COMPAT_REQUIRE_FLINK=1` (set by `./dev test`), which makes it fail.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test panics on what it does not expect

use std::path::PathBuf;
use std::process::Command;

use typeinfo_flink_compat::savepoint::FlinkSavepoint;

mod common;

#[test]
fn flink_writes_the_committed_migration_goldens() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    if !common::flink_available() {
        return;
    }
    let out = tempfile::tempdir().expect("tempdir");
    let status = Command::new(root.join("tests/flink/run_migration.sh"))
        .arg(out.path())
        .env("FLINK_COMPAT_NO_DOWNLOAD", "1")
        .status()
        .expect("run_migration.sh");
    assert!(status.success(), "run_migration.sh failed: {status}");
    let committed = root.join("tests/migration");
    for name in ["full", "half_hashmap", "half_rocksdb"] {
        let read = |dir: &std::path::Path| {
            std::fs::read_to_string(dir.join(format!("{name}.output"))).expect("output")
        };
        assert_eq!(read(out.path()), read(&committed), "{name}.output");
    }
    for name in ["half_hashmap", "half_rocksdb"] {
        let fresh = FlinkSavepoint::open(out.path().join(name)).expect("fresh savepoint");
        let kept = FlinkSavepoint::open(committed.join(name)).expect("committed savepoint");
        assert_eq!(
            common::sorted_lines(&fresh).expect("dump fresh"),
            common::sorted_lines(&kept).expect("dump committed"),
            "{name}"
        );
    }
}
