//! A uid renamed in a savepoint restores into the job whose operator has the new uid, with
//! the results of an uninterrupted run; the job with the old uid is refused (its state is
//! now another operator's), and the input savepoint is untouched.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{backends, copy_dir, published, real_savepoint, tree, uninterrupted, Run};
use typeinfo_runtime::StateBackend;
use typeinfo_savepoint::{verify, Error, Savepoint, SavepointWriter};

#[test]
fn a_renamed_uid_restores_into_the_job_with_the_new_uid() {
    let work = tempfile::tempdir().unwrap();
    let expected = uninterrupted(work.path());
    for (i, state) in backends().into_iter().enumerate() {
        let work = work.path().join(format!("backend-{i}"));
        let (dir, first_output) = real_savepoint(&work, state.clone());
        let before = tree(&dir);
        let renamed = work.join("renamed");
        let savepoint = SavepointWriter::from_savepoint(Savepoint::open(&dir).unwrap())
            .rename_uid("minute-totals", "totals-v2")
            .unwrap()
            .write(&renamed)
            .unwrap();
        assert!(verify(&savepoint).unwrap().is_ok());
        assert!(savepoint.operator("totals-v2").is_ok());
        assert!(savepoint.operator("minute-totals").is_err());
        assert!(tree(&dir) == before, "the input changed");

        // The job with the new uid restores it (on the other backend) and finishes as an
        // uninterrupted run does.
        let other = if matches!(state, StateBackend::Heap) {
            StateBackend::rocksdb()
        } else {
            StateBackend::Heap
        };
        let mut run = Run::new(&work, other.clone(), "restored");
        copy_dir(&first_output, &run.output);
        run.totals_uid = "totals-v2";
        run.restore = Some(renamed.clone());
        let result = run.window_job().unwrap();
        assert!(result.migrations.is_empty());
        assert_eq!(published(&run.output), expected, "{state:?} -> {other:?}");

        // The job with the old uid is refused: the state belongs to `totals-v2` now.
        let mut old = Run::new(&work, other, "refused");
        old.restore = Some(renamed);
        let refused = old.window_job().unwrap_err().to_string();
        assert!(
            refused.contains("uid-totals-v2") && refused.contains("allow non-restored state"),
            "{refused}"
        );
    }
}

#[test]
fn a_rename_to_a_taken_or_unusable_uid_is_refused() {
    let work = tempfile::tempdir().unwrap();
    let (dir, _) = real_savepoint(work.path(), StateBackend::Heap);
    let mut writer = SavepointWriter::from_savepoint(Savepoint::open(&dir).unwrap());
    let taken = writer.rename_uid("minute-totals", "orders").map(|_| ());
    assert!(
        matches!(&taken, Err(Error::Refused(m)) if m.contains("already has the uid")),
        "{taken:?}"
    );
    for bad in ["", "two words", "a/b", "..", "line\nbreak"] {
        let refused = writer.rename_uid("minute-totals", bad).map(|_| ());
        assert!(
            matches!(&refused, Err(Error::Refused(m)) if m.contains("not a usable uid")),
            "{bad:?}: {refused:?}"
        );
    }
    let unknown = writer.rename_uid("nope", "x").map(|_| ());
    assert!(
        matches!(&unknown, Err(Error::NotFound(m)) if m.contains("uid-minute-totals")),
        "{unknown:?}"
    );
    // Writing into the input, or over an existing directory, is refused.
    for inside in [dir.join("copy"), dir.join("a").join("b")] {
        let refused = writer.write(&inside);
        assert!(
            matches!(&refused, Err(Error::Refused(m)) if m.contains("inside the input")),
            "{refused:?}"
        );
    }
    assert!(!dir.join("a").exists());
    let existing = writer.write(work.path());
    assert!(
        matches!(&existing, Err(Error::Refused(m)) if m.contains("exists")),
        "{existing:?}"
    );
    assert!(!dir.join("copy").exists());
}
