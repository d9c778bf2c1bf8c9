//! The committed golden files are what Flink 2.3 writes today: tests/flink/run.sh runs
//! FlinkGoldens.java against Flink's jars into a fresh folder, and every file must equal the
//! committed one (and no file may be missing or extra), so the goldens cannot drift from
//! Flink's bytes.
//!
//! Needs `java`, `javac` and Flink 2.3's jars in `$FLINK_BENCH_DIR` (default
//! `~/.cache/flink-bench`, where runtime/tests/windowed/flink/run.sh and this crate's run.sh
//! download them: run `flink-compat/tests/flink/run.sh /tmp/x` once). Without them the test
//! says so and passes, unless `FLINK_COMPAT_REQUIRE_FLINK=1`, which makes it fail.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test (or bench) panics on what it does not expect

mod common;

use std::path::PathBuf;
use std::process::Command;

fn names(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("read_dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".bin"))
        .collect();
    names.sort();
    names
}

#[test]
fn flink_writes_the_committed_goldens() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    if !common::flink_available() {
        return;
    }
    let out = tempfile::tempdir().expect("tempdir");
    let status = Command::new(root.join("tests/flink/run.sh"))
        .arg(out.path())
        .env("FLINK_COMPAT_NO_DOWNLOAD", "1")
        .status()
        .expect("run.sh");
    assert!(status.success(), "run.sh failed: {status}");
    let committed = root.join("tests/golden");
    assert_eq!(
        names(out.path()),
        names(&committed),
        "the set of golden files"
    );
    for name in names(&committed) {
        let fresh = std::fs::read(out.path().join(&name)).expect("fresh");
        let kept = std::fs::read(committed.join(&name)).expect("committed");
        assert_eq!(
            fresh, kept,
            "{name}: Flink writes other bytes than the committed golden"
        );
    }
}
