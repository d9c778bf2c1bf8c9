//! One checkpoint at a time in a job of one process (Flink's default
//! `maxConcurrentCheckpoints` of 1): with an interval far shorter than a checkpoint takes,
//! a source closes its next epoch only once the checkpoint before it has completed, so every
//! checkpoint begun completes and none is written only to be superseded (each superseded one
//! cost an object store a request per part, its listing and its deletion). Checked by the
//! checkpoint numbers: the newest completed checkpoint's number is at most the count of
//! completed ones (numbers start at 0), and the job still completes many checkpoints, on both
//! backends.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test (or bench) panics on what it does not expect

use std::path::Path;
use std::time::Duration;

use typeinfo_runtime::{CheckpointConfig, StateBackend, StreamExecutionEnvironment};

/// The highest completed `chk-N` left in `dir` (retention keeps the newest; a directory
/// without `_metadata` is the last epoch's, cut by the end of the input, not a checkpoint).
fn newest_checkpoint(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| {
            let e = e.unwrap();
            let name = e.file_name().into_string().unwrap();
            let completed = e.path().join("_metadata").exists();
            name.strip_prefix("chk-")
                .and_then(|n| n.parse().ok())
                .filter(|_| completed)
        })
        .max()
        .expect("a completed checkpoint")
}

#[test]
fn a_checkpoint_begins_only_after_the_one_before_it_completed() {
    for state in [StateBackend::Heap, StateBackend::rocksdb()] {
        let dir = tempfile::tempdir().unwrap();
        let env = StreamExecutionEnvironment::new();
        env.set_parallelism(2).set_state_backend(state.clone());
        // Every millisecond: far faster than a checkpoint completes (its parts are written
        // on their lanes, the coordinator looks for them, writes `_metadata`, retains).
        env.enable_checkpointing(CheckpointConfig::new(dir.path(), Duration::from_millis(1)));
        env.from_generator(3_000_000, |i| (i % 10_000, i))
            .key_by(|r: &(u64, u64)| r.0)
            .reduce(|a, b| (a.0, a.1 + b.1))
            .add_sink(|_| {});
        let result = env.execute("checkpoints back to back").unwrap();
        let completed = result
            .metrics
            .get("job.numCompletedCheckpoints")
            .copied()
            .unwrap_or(0);
        let newest = newest_checkpoint(dir.path());
        assert!(
            completed >= 5,
            "{state:?}: checkpoints follow each other back to back ({completed} completed)"
        );
        assert!(
            newest <= completed,
            "{state:?}: checkpoint {newest} is the newest but only {completed} completed: \
             checkpoints were begun while another was in flight and superseded"
        );
    }
}
