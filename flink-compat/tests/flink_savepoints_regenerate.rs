//! The committed savepoints are what Flink 2.3 writes today: tests/flink/run_savepoints.sh
//! runs FlinkSavepoints.java against Flink's jars into a fresh folder, and each savepoint
//! there must dump to the same entries as the committed one, with the same `.expected`
//! file (a savepoint's bytes are not reproducible: its files' names are random UUIDs).
//!
//! Needs `java`, `javac` and Flink 2.3's jars in `$FLINK_BENCH_DIR` (default
//! `~/.cache/flink-bench`). Without them the test says so and passes, unless
//! `FLINK_COMPAT_REQUIRE_FLINK=1`, which makes it fail.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test panics on what it does not expect

use std::path::PathBuf;
use std::process::Command;

use typeinfo_flink_compat::savepoint::FlinkSavepoint;

mod common;

#[test]
fn flink_writes_the_committed_savepoints() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    if !common::flink_available() {
        return;
    }
    let out = tempfile::tempdir().expect("tempdir");
    let status = Command::new(root.join("tests/flink/run_savepoints.sh"))
        .arg(out.path())
        .env("FLINK_COMPAT_NO_DOWNLOAD", "1")
        .status()
        .expect("run_savepoints.sh");
    assert!(status.success(), "run_savepoints.sh failed: {status}");
    for name in ["hashmap", "rocksdb", "hashmap_snappy", "rocksdb_snappy"] {
        let committed_dir = root.join("tests/savepoints");
        let fresh = FlinkSavepoint::open(out.path().join(name)).expect("fresh savepoint");
        let committed = FlinkSavepoint::open(committed_dir.join(name)).expect("committed");
        assert_eq!(
            common::sorted_lines(&fresh).expect("dump fresh"),
            common::sorted_lines(&committed).expect("dump committed"),
            "{name}"
        );
        let expected = |dir: &std::path::Path| {
            std::fs::read_to_string(dir.join(format!("{name}.expected"))).expect("expected")
        };
        assert_eq!(expected(out.path()), expected(&committed_dir), "{name}");
    }
}
