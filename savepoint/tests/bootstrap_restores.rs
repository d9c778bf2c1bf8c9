//! A savepoint bootstrapped from datasets (value, list and map state of a keyed operator)
//! restores into a real job, on both backends and at another parallelism, which then sees
//! exactly the bootstrapped state.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{backends, Run};
use typeinfo_savepoint::{inspect, verify, Error, KeyedStateBootstrap, SavepointWriter};
use typeinfo_state::{ListStateDescriptor, MapStateDescriptor, ValueStateDescriptor};

/// The counter's state: counts, seen numbers and tags for a few words.
fn bootstrap(max_parallelism: u32, parallelism: u32) -> KeyedStateBootstrap<String> {
    let mut state = KeyedStateBootstrap::<String>::new(max_parallelism, parallelism)
        .unwrap()
        .with_name("Counter (bootstrapped)");
    state
        .value_state(
            &ValueStateDescriptor::<u64>::new("count"),
            [
                ("a".to_owned(), 3),
                ("b".to_owned(), 5),
                ("e".to_owned(), 9),
            ],
        )
        .unwrap()
        .list_state(
            &ListStateDescriptor::<i32>::new("seen"),
            [("a".to_owned(), vec![1, 2]), ("c".to_owned(), vec![7])],
        )
        .unwrap()
        .map_state(
            &MapStateDescriptor::<String, i64>::new("tags"),
            [
                ("a".to_owned(), "x".to_owned(), 1),
                ("b".to_owned(), "z".to_owned(), 3),
                ("b".to_owned(), "y".to_owned(), 2),
            ],
        )
        .unwrap();
    state
}

#[test]
fn a_bootstrapped_savepoint_restores_into_a_real_job_on_both_backends() {
    for state in backends() {
        let work = tempfile::tempdir().unwrap();
        let dir = work.path().join("bootstrapped");
        let savepoint = SavepointWriter::new(128)
            .unwrap()
            .with_keyed_state("counter", bootstrap(128, 2))
            .unwrap()
            .write(&dir)
            .unwrap();
        assert!(verify(&savepoint).unwrap().is_ok());
        let report = inspect(&savepoint).unwrap().to_string();
        for needle in [
            "uid-counter  \"Counter (bootstrapped)\"  parallelism 2",
            "count (value): namespace (), value u64",
            "seen (list): namespace (), element i32",
            "tags (map): namespace (), map String -> i64",
        ] {
            assert!(report.contains(needle), "`{needle}` in\n{report}");
        }
        let mut counts: Vec<(String, (), u64)> =
            savepoint.read_value_state("counter", "count").unwrap();
        counts.sort();
        assert_eq!(
            counts,
            [
                ("a".into(), (), 3),
                ("b".into(), (), 5),
                ("e".into(), (), 9)
            ]
        );
        let mut tags: Vec<(String, (), String, i64)> =
            savepoint.read_map_state("counter", "tags").unwrap();
        tags.sort();
        assert_eq!(tags[1], ("b".into(), (), "y".into(), 2));

        // A real job restores it, at parallelism 3, and counts on from the bootstrapped state.
        let mut run = Run::new(work.path(), state.clone(), "counted");
        run.parallelism = 3;
        run.restore = Some(dir.clone());
        let words = ["a", "b", "c", "d", "a"].map(str::to_owned).to_vec();
        let lines = run.counter_job(words).unwrap();
        assert_eq!(
            lines,
            [
                "a,4,1 2,x=1",
                "a,5,1 2,x=1",
                "b,6,,y=2 z=3",
                "c,1,7,",
                "d,1,,",
            ],
            "{state:?}"
        );
    }
}

#[test]
fn a_bootstrapped_operator_must_match_the_savepoint() {
    let work = tempfile::tempdir().unwrap();
    let out = work.path().join("out");
    let mismatched = SavepointWriter::new(256)
        .unwrap()
        .with_keyed_state("counter", bootstrap(128, 2))
        .unwrap()
        .write(&out);
    assert!(
        matches!(&mismatched, Err(Error::Refused(m)) if m.contains("bootstrapped for max parallelism 128")),
        "{mismatched:?}"
    );
    assert!(!out.exists());
    let mut twice = SavepointWriter::new(128).unwrap();
    twice
        .with_keyed_state("counter", bootstrap(128, 1))
        .unwrap();
    let again = twice.with_keyed_state("counter", bootstrap(128, 1));
    assert!(
        matches!(&again, Err(Error::Refused(m)) if m.contains("remove it first")),
        "{again:?}"
    );
    let bad_uid = SavepointWriter::new(128)
        .unwrap()
        .with_keyed_state("a/b", bootstrap(128, 1))
        .map(|_| ());
    assert!(
        matches!(&bad_uid, Err(Error::Refused(m)) if m.contains("not a usable uid")),
        "{bad_uid:?}"
    );
    let too_wide = KeyedStateBootstrap::<String>::new(4, 8);
    assert!(too_wide.is_err());
    // A job at another max parallelism refuses the bootstrapped savepoint, naming both.
    let dir = work.path().join("bootstrapped");
    SavepointWriter::new(128)
        .unwrap()
        .with_keyed_state("counter", bootstrap(128, 1))
        .unwrap()
        .write(&dir)
        .unwrap();
    let mut run = Run::new(work.path(), typeinfo_runtime::StateBackend::Heap, "refused");
    run.max_parallelism = 64;
    run.restore = Some(dir);
    let refused = run.counter_job(vec!["a".into()]).unwrap_err().to_string();
    assert!(refused.contains("max parallelism 128"), "{refused}");
}
