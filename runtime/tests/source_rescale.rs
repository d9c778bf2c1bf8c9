//! A source whose splits do not depend on its parallelism (`Source::rescalable`) restores
//! at another parallelism: stopped with a savepoint at parallelism 2 part-way, restored at 3
//! and at 1, every record arrives exactly once over both runs (each split continues on its
//! new subtask at the savepoint's position). A source whose splits depend on its parallelism
//! (a sequence: a range per subtask) is refused at another parallelism before the job starts,
//! with an error that says why.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test panics on what it does not expect

use typeinfo_runtime::{
    CheckpointConfig, ReadStatus, RestoreSettings, Source, SourceOutput, SplitReader,
    StopWithSavepoint, StreamExecutionEnvironment, WatermarkStrategy,
};

/// Five splits of 200 numbers each (split `s` holds `s * 1000 ..`), whatever the parallelism.
#[derive(Clone)]
struct Blocks;

struct BlockReader {
    base: u64,
    next: u64,
}

impl SplitReader<u64> for BlockReader {
    type Position = u64;
    fn read(
        &mut self,
        out: &mut SourceOutput<'_, u64>,
        budget: usize,
    ) -> typeinfo_runtime::Result<ReadStatus> {
        for _ in 0..budget.min(7) {
            if self.next == 200 {
                return Ok(ReadStatus::Finished);
            }
            out.collect(self.base + self.next);
            self.next += 1;
        }
        Ok(ReadStatus::More)
    }
    fn position(&self) -> u64 {
        self.next
    }
    fn seek(&mut self, position: u64) -> typeinfo_runtime::Result<()> {
        self.next = position;
        Ok(())
    }
}

impl Source<u64> for Blocks {
    type Split = u64;
    type Reader = BlockReader;
    fn splits(&self, _parallelism: usize) -> typeinfo_runtime::Result<Vec<u64>> {
        Ok((0..5).collect())
    }
    fn reader(&self, split: &u64) -> typeinfo_runtime::Result<BlockReader> {
        Ok(BlockReader {
            base: split * 1000,
            next: 0,
        })
    }
    fn boundedness(&self) -> typeinfo_runtime::Boundedness {
        typeinfo_runtime::Boundedness::Bounded
    }
    fn rescalable(&self) -> bool {
        true
    }
}

fn all() -> Vec<u64> {
    (0..5u64)
        .flat_map(|s| (0..200).map(move |i| s * 1000 + i))
        .collect()
}

fn run(dir: &std::path::Path, parallelism: u32, stop: bool, restore: bool) -> Vec<u64> {
    let env = StreamExecutionEnvironment::new();
    env.set_parallelism(parallelism)
        .enable_checkpointing(CheckpointConfig::new(
            dir.join("checkpoints"),
            std::time::Duration::from_millis(20),
        ));
    if stop {
        env.stop_with_savepoint(StopWithSavepoint {
            after_records: 150,
            dir: dir.join("savepoint"),
        });
    }
    if restore {
        env.restore_from(RestoreSettings {
            path: dir.join("savepoint"),
            allow_non_restored_state: false,
        });
    }
    let out = env
        .from_source(Blocks, WatermarkStrategy::no_watermarks(), "blocks")
        .uid("blocks")
        .collect();
    env.execute("rescale a source").unwrap();
    out.take()
}

#[test]
fn a_rescalable_source_restores_at_another_parallelism_exactly() {
    for restored_at in [3, 1] {
        let dir = tempfile::tempdir().unwrap();
        let first = run(dir.path(), 2, true, false);
        assert_eq!(first.len(), 300, "150 records per subtask before the stop");
        let second = run(dir.path(), restored_at, false, true);
        let mut got: Vec<u64> = first.into_iter().chain(second).collect();
        got.sort_unstable();
        assert_eq!(got, all(), "2 -> {restored_at}: every record once");
    }
}

#[test]
fn a_source_whose_splits_depend_on_its_parallelism_is_refused_at_another() {
    let dir = tempfile::tempdir().unwrap();
    let job = |parallelism: u32, stop: bool, restore: bool| {
        let env = StreamExecutionEnvironment::new();
        env.set_parallelism(parallelism)
            .enable_checkpointing(CheckpointConfig::new(
                dir.path().join("checkpoints"),
                std::time::Duration::from_millis(20),
            ));
        if stop {
            env.stop_with_savepoint(StopWithSavepoint {
                after_records: 50,
                dir: dir.path().join("savepoint"),
            });
        }
        if restore {
            env.restore_from(RestoreSettings {
                path: dir.path().join("savepoint"),
                allow_non_restored_state: false,
            });
        }
        let _ = env.from_sequence(0, 9_999).uid("numbers").collect();
        env.execute("sequence")
    };
    job(2, true, false).unwrap();
    let error = job(3, false, true)
        .expect_err("a sequence's ranges depend on its parallelism")
        .to_string();
    assert!(
        error.contains("restores at its old parallelism") && error.contains("Source::rescalable"),
        "{error}"
    );
}
