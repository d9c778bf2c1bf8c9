//! `typeinfo-savepoint inspect` and `dump` of real Apache Flink 2.3 savepoints (written by
//! flink-compat/tests/flink/FlinkSavepoints.java, committed there): `inspect` lists every
//! operator by uid with its operator id and states; `dump` of a keyed state prints, for the
//! keys Flink's own program printed (`NAME.expected`), the values Flink holds, on both of
//! Flink's backends, compressed or not; a missing operator or state is refused naming what
//! there is; a damaged `_metadata` is refused (exit 1) naming the file.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test panics on what it does not expect

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn flink_savepoint(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../flink-compat/tests/savepoints")
        .join(name)
}

fn tool(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_typeinfo-savepoint"))
        .arg(args[0])
        .arg(dir)
        .args(&args[1..])
        .output()
        .expect("the binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn inspect_lists_every_operator_and_state_of_a_flink_savepoint() {
    for name in ["hashmap", "rocksdb", "hashmap_snappy", "rocksdb_snappy"] {
        let o = tool(&["inspect"], &flink_savepoint(name));
        assert_eq!(o.status.code(), Some(0), "{name}: {}", text(&o.stderr));
        let out = text(&o.stdout);
        for needle in [
            "(CANONICAL)",
            "operator uid stateful",
            "2bf2326fd66dcbd2442fd50df173e152",
            "keyed state order (VALUE)",
            "keyed state thirds (LIST)",
            "keyed state buckets (MAP)",
            "operator uid window",
            "operator uid rules",
        ] {
            assert!(out.contains(needle), "{name}: no `{needle}` in\n{out}");
        }
    }
}

#[test]
fn dump_prints_what_flink_holds_for_the_sampled_keys() {
    for name in ["hashmap", "rocksdb_snappy"] {
        let dir = flink_savepoint(name);
        let expected = std::fs::read_to_string(dir.with_extension("expected")).unwrap();
        let o = tool(&["dump", "--operator", "stateful", "--state", "sum"], &dir);
        assert_eq!(o.status.code(), Some(0), "{name}: {}", text(&o.stderr));
        let dumped = text(&o.stdout);
        // `stateful|sum|KEY|NAMESPACE|VALUE` in Flink's printout; `stateful\tsum\tKIND\t
        // KEY GROUP\tKEY\tNAMESPACE\t-\tVALUE` in the dump.
        let mut checked = 0;
        for line in expected.lines().filter(|l| l.starts_with("stateful|sum|")) {
            let fields: Vec<&str> = line.split('|').collect();
            let (key, value) = (fields[2], fields[4]);
            let found = dumped.lines().any(|d| {
                let d: Vec<&str> = d.split('\t').collect();
                d.len() == 8 && d[4].trim_matches('"') == key && d[7] == value
            });
            assert!(found, "{name}: key {key} with {value} not in\n{dumped}");
            checked += 1;
        }
        assert!(checked >= 3, "{name}: {checked} sampled keys");
    }
}

#[test]
fn a_missing_operator_or_state_and_a_damaged_metadata_are_refused() {
    let dir = flink_savepoint("hashmap");
    let o = tool(&["dump", "--operator", "nope", "--state", "sum"], &dir);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o.stderr).contains("stateful"), "{}", text(&o.stderr));
    let o = tool(&["dump", "--operator", "stateful", "--state", "nope"], &dir);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o.stderr).contains("thirds"), "{}", text(&o.stderr));

    let work = tempfile::tempdir().unwrap();
    let copy = work.path().join("damaged");
    std::fs::create_dir(&copy).unwrap();
    let metadata = std::fs::read(dir.join("_metadata")).unwrap();
    // Flink's magic number, then nothing: a truncated `_metadata`.
    std::fs::write(copy.join("_metadata"), &metadata[..12]).unwrap();
    let o = tool(&["inspect"], &copy);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stdout));
    assert!(text(&o.stderr).contains("_metadata"), "{}", text(&o.stderr));
}
