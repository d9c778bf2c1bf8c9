//! An operator removed from a savepoint: a job that no longer has it restores without
//! `allow_non_restored_state`, with exactly the results of a restore from the original
//! that drops the state through that setting (and which the original refuses without it).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{copy_dir, published, real_savepoint, tree, uninterrupted, Run};
use typeinfo_runtime::StateBackend;
use typeinfo_savepoint::{inspect, verify, Savepoint, SavepointWriter};

#[test]
fn a_removed_operator_needs_no_allow_non_restored_state() {
    let work = tempfile::tempdir().unwrap();
    let expected = uninterrupted(work.path());
    let (dir, first_output) = real_savepoint(work.path(), StateBackend::rocksdb());
    let before = tree(&dir);
    let removed = work.path().join("removed");
    let savepoint = SavepointWriter::from_savepoint(Savepoint::open(&dir).unwrap())
        .remove_operator("minute-totals")
        .unwrap()
        .write(&removed)
        .unwrap();
    assert!(verify(&savepoint).unwrap().is_ok());
    let keys: Vec<String> = inspect(&savepoint)
        .unwrap()
        .operators
        .iter()
        .map(|o| o.operator.key.clone())
        .collect();
    assert_eq!(keys, ["uid-orders", "uid-output", "uid-timestamps"]);
    assert!(tree(&dir) == before, "the input changed");

    // The new job has no `minute-totals` (its window operator has another uid).
    let job = |restore: &std::path::Path, allow: bool, output: &str| {
        let mut run = Run::new(work.path(), StateBackend::Heap, output);
        copy_dir(&first_output, &run.output);
        run.totals_uid = "totals-new";
        run.restore = Some(restore.to_owned());
        run.allow_non_restored_state = allow;
        run.window_job().map(|_| published(&run.output))
    };
    let refused = job(&dir, false, "refused").unwrap_err().to_string();
    assert!(
        refused.contains("uid-minute-totals") && refused.contains("allow non-restored state"),
        "{refused}"
    );
    let dropped = job(&dir, true, "dropped").unwrap();
    let from_removed = job(&removed, false, "from-removed").unwrap();
    assert_eq!(from_removed, dropped);
    // The windows open at the savepoint lost their first orders with the state.
    assert_ne!(from_removed, expected);
    assert_eq!(from_removed.len(), expected.len());
}
