//! A savepoint's keyed state filed under another max parallelism (each key's key group
//! computed again from its stored bytes) restores into the job at that max parallelism,
//! at another parallelism and on either backend, with the results of an uninterrupted
//! run; what cannot be done is refused.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{backends, copy_dir, published, real_savepoint, tree, uninterrupted, Run};
use typeinfo_runtime::StateBackend;
use typeinfo_savepoint::{inspect, verify, Error, Savepoint, SavepointWriter};

#[test]
fn another_max_parallelism_restores_with_the_same_results() {
    let work = tempfile::tempdir().unwrap();
    let expected = uninterrupted(work.path());
    for (i, state) in backends().into_iter().enumerate() {
        let work = work.path().join(format!("backend-{i}"));
        let (dir, first_output) = real_savepoint(&work, state.clone());
        let before = tree(&dir);
        let original = Savepoint::open(&dir).unwrap();
        let entries = |s: &Savepoint| -> Vec<(String, u64)> {
            let report = inspect(s).unwrap();
            let keyed = report.operators[0].keyed.clone().unwrap();
            keyed
                .states
                .iter()
                .map(|s| (s.name.clone(), s.entries))
                .collect()
        };
        for max in [256, 32_768, 2] {
            let out = work.join(format!("max-{max}"));
            let savepoint = SavepointWriter::from_savepoint(original.clone())
                .set_max_parallelism(max)
                .unwrap()
                .write(&out)
                .unwrap();
            assert_eq!(savepoint.metadata().max_parallelism, max);
            assert!(verify(&savepoint).unwrap().is_ok(), "{max}");
            assert_eq!(entries(&savepoint), entries(&original), "{max}");

            // Restore at the new max parallelism, at parallelism 2 (at most `max`) on both
            // backends in turn.
            let mut run = Run::new(
                &work,
                backends()[(i + 1) % 2].clone(),
                &format!("restored-{max}"),
            );
            copy_dir(&first_output, &run.output);
            run.max_parallelism = max;
            run.parallelism = 2;
            run.restore = Some(out.clone());
            run.window_job().unwrap();
            assert_eq!(
                published(&run.output),
                expected,
                "{state:?}, max parallelism {max}"
            );
        }
        // The job at the old max parallelism refuses the rewritten savepoint.
        let mut old = Run::new(&work, StateBackend::Heap, "refused");
        old.restore = Some(work.join("max-256"));
        let refused = old.window_job().unwrap_err().to_string();
        assert!(refused.contains("max parallelism 256"), "{refused}");
        assert!(tree(&dir) == before, "the input changed");
    }
}

#[test]
fn a_max_parallelism_below_an_operators_parallelism_is_refused() {
    let work = tempfile::tempdir().unwrap();
    let (dir, _) = real_savepoint(work.path(), StateBackend::Heap);
    let out = work.path().join("out");
    let refused = SavepointWriter::from_savepoint(Savepoint::open(&dir).unwrap())
        .set_max_parallelism(1)
        .unwrap()
        .write(&out);
    assert!(
        matches!(&refused, Err(Error::Refused(m)) if m.contains("parallelism 2, above max parallelism 1")),
        "{refused:?}"
    );
    assert!(!out.exists());
    for bad in [0, 32_769] {
        let refused = SavepointWriter::from_savepoint(Savepoint::open(&dir).unwrap())
            .set_max_parallelism(bad)
            .map(|_| ());
        assert!(
            matches!(&refused, Err(Error::Refused(m)) if m.contains("outside 1..=32768")),
            "{refused:?}"
        );
    }
}
