//! Incremental checkpoints of RocksDB state in a running job: the window operator's keyed
//! state is checkpointed as `.native` parts whose SST files live once under `shared/`; a
//! stop-with-savepoint still writes the backend-independent format; the job restores from
//! its incremental checkpoints into RocksDB at the same and at another parallelism and into
//! the heap, with output equal to an uninterrupted run; retention never deletes an object a
//! retained checkpoint refers to; `incremental(false)` writes whole checkpoints.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test (or bench) panics on what it does not expect

use std::path::{Path, PathBuf};
use std::time::Duration;

mod common;
use common::{copy_dir, published, referenced_objects};
use typeinfo::TypeInfo;
use typeinfo_runtime::native_part::SHARED_DIR;
use typeinfo_runtime::{
    AggregateFunction, CheckpointConfig, RestoreSettings, StateBackend, StopWithSavepoint,
    StreamExecutionEnvironment, TumblingEventTimeWindows, WatermarkStrategy,
};

const RECORDS: u64 = 24_000;
const KEYS: u64 = 400;

#[derive(TypeInfo, Clone, Debug)]
#[typeinfo(name = "test.Event")]
struct Event {
    key: u64,
    ts: i64,
    amount: i64,
}

struct Sum;
impl AggregateFunction<Event, (u64, i64), (u64, i64)> for Sum {
    fn create_accumulator(&self) -> (u64, i64) {
        (0, 0)
    }
    fn add(&self, e: &Event, a: &mut (u64, i64)) {
        a.0 += 1;
        a.1 += e.amount;
    }
    fn get_result(&self, a: &(u64, i64)) -> (u64, i64) {
        *a
    }
    fn merge(&self, a: (u64, i64), b: (u64, i64)) -> (u64, i64) {
        (a.0 + b.0, a.1 + b.1)
    }
}

struct Run<'a> {
    parallelism: u32,
    state: StateBackend,
    checkpoints: Option<(&'a Path, bool)>,
    output: &'a Path,
    restore: Option<&'a Path>,
    stop: Option<(u64, &'a Path)>,
}

/// Events over `KEYS` keys, 10 ms apart, about 20,000 a second (so that checkpoints every
/// 20 ms land while it runs); per-key sums in 2-second tumbling windows, written as lines.
fn run(r: &Run<'_>) {
    let env = StreamExecutionEnvironment::new();
    env.set_parallelism(r.parallelism)
        .set_max_parallelism(64)
        .set_state_backend(r.state.clone());
    if let Some((dir, incremental)) = r.checkpoints {
        env.enable_checkpointing(
            CheckpointConfig::new(dir, Duration::from_millis(20)).incremental(incremental),
        );
    }
    if let Some(path) = r.restore {
        env.restore_from(RestoreSettings {
            path: path.to_owned(),
            allow_non_restored_state: false,
        });
    }
    if let Some((after_records, dir)) = r.stop {
        env.stop_with_savepoint(StopWithSavepoint {
            after_records,
            dir: dir.to_owned(),
        });
    }
    env.from_generator(RECORDS, |i| {
        if i % 20 == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
        Event {
            key: i.wrapping_mul(7919) % KEYS,
            ts: i as i64 * 10,
            amount: (i % 97) as i64,
        }
    })
    .uid("events")
    .set_parallelism(1)
    .assign_timestamps_and_watermarks(
        WatermarkStrategy::for_monotonous_timestamps().with_timestamp_assigner(|e: &Event, _| e.ts),
    )
    .uid("timestamps")
    .set_parallelism(1)
    .key_by(|e: &Event| e.key)
    .window(TumblingEventTimeWindows::of_millis(2_000))
    .aggregate_with(Sum, |k: &u64, w, (n, sum): (u64, i64)| {
        format!("{k},{},{n},{sum}", w.start)
    })
    .uid("totals")
    .write_as_text(r.output)
    .uid("output");
    env.execute("incremental").expect("the job runs");
}

/// The completed checkpoints under `root`, oldest first.
fn completed(root: &Path) -> Vec<PathBuf> {
    let mut out: Vec<(u64, PathBuf)> = std::fs::read_dir(root)
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let epoch = e
                .file_name()
                .to_string_lossy()
                .strip_prefix("chk-")?
                .parse()
                .ok()?;
            e.path()
                .join("_metadata")
                .is_file()
                .then(|| (epoch, e.path()))
        })
        .collect();
    out.sort();
    out.into_iter().map(|(_, p)| p).collect()
}

fn files_with(dir: &Path, extension: &str) -> usize {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .filter(|e| e.path().extension().is_some_and(|x| x == extension))
                .count()
        })
        .unwrap_or(0)
}

#[test]
fn a_job_checkpoints_incrementally_and_restores_from_its_parts_anywhere() {
    let work = tempfile::tempdir().unwrap();
    let w = work.path();
    let reference_out = w.join("reference");
    run(&Run {
        parallelism: 1,
        state: StateBackend::Heap,
        checkpoints: None,
        output: &reference_out,
        restore: None,
        stop: None,
    });
    let reference = published(&reference_out);
    assert!(reference.len() > 1_000, "{} lines", reference.len());

    // Version 1 on RocksDB, stopped half-way with a savepoint.
    let (checkpoints, output, savepoint) = (w.join("chk"), w.join("out"), w.join("savepoint"));
    run(&Run {
        parallelism: 2,
        state: StateBackend::rocksdb(),
        checkpoints: Some((&checkpoints, true)),
        output: &output,
        restore: None,
        stop: Some((RECORDS / 2, &savepoint)),
    });
    let latest = completed(&checkpoints)
        .pop()
        .expect("a completed checkpoint");
    assert_eq!(
        files_with(&latest.join("uid-totals"), "native"),
        2,
        "{}",
        latest.display()
    );
    assert_eq!(files_with(&latest.join("uid-totals"), "kstate"), 0);
    let objects = referenced_objects(&checkpoints);
    assert!(!objects.is_empty(), "SST files under shared/");
    assert_eq!(
        files_with(&savepoint.join("uid-totals"), "kstate"),
        2,
        "a savepoint is whole"
    );
    assert_eq!(files_with(&savepoint.join("uid-totals"), "native"), 0);
    assert!(!savepoint.join(SHARED_DIR).exists());

    // Restored from the incremental checkpoints: in place (the job's own directory, RocksDB,
    // same parallelism), into RocksDB at parallelism 3, and into the heap.
    for (name, state, parallelism, own) in [
        ("same", StateBackend::rocksdb(), 2, true),
        ("rescaled", StateBackend::rocksdb(), 3, false),
        ("heap", StateBackend::Heap, 1, false),
    ] {
        let out = w.join(format!("out-{name}"));
        copy_dir(&output, &out);
        let chk = w.join(format!("chk-{name}"));
        copy_dir(&checkpoints, &chk);
        let new_chk = if own {
            chk.clone()
        } else {
            w.join(format!("new-chk-{name}"))
        };
        run(&Run {
            parallelism,
            state,
            checkpoints: Some((&new_chk, true)),
            output: &out,
            restore: Some(&chk),
            stop: None,
        });
        assert_eq!(published(&out), reference, "restored {name}");
        if own {
            referenced_objects(&chk);
        }
    }

    // The savepoint restores too (whole format).
    let out = w.join("out-savepoint");
    copy_dir(&output, &out);
    run(&Run {
        parallelism: 2,
        state: StateBackend::rocksdb(),
        checkpoints: Some((&w.join("chk-from-savepoint"), true)),
        output: &out,
        restore: Some(&savepoint),
        stop: None,
    });
    assert_eq!(published(&out), reference, "restored from the savepoint");
}

#[test]
fn full_checkpoints_when_incremental_is_off() {
    let work = tempfile::tempdir().unwrap();
    let (checkpoints, output) = (work.path().join("chk"), work.path().join("out"));
    run(&Run {
        parallelism: 2,
        state: StateBackend::rocksdb(),
        checkpoints: Some((&checkpoints, false)),
        output: &output,
        restore: None,
        stop: Some((RECORDS / 4, &work.path().join("savepoint"))),
    });
    let latest = completed(&checkpoints)
        .pop()
        .expect("a completed checkpoint");
    assert_eq!(files_with(&latest.join("uid-totals"), "kstate"), 2);
    assert_eq!(files_with(&latest.join("uid-totals"), "native"), 0);
    assert!(!checkpoints.join(SHARED_DIR).exists());
}

/// The object-store path of the checkpoint store without a server: checkpoints into a
/// process-wide in-memory object store (`memory://`), stopped with a savepoint there, and
/// restored from it at another parallelism, with output equal to an uninterrupted run. The
/// S3 server tests (`object_store_checkpoints.rs`) run the same layout across processes.
#[test]
fn checkpoints_and_savepoints_in_an_object_store_restore_exactly() {
    use typeinfo_runtime::storage::Storage;
    let tmp = tempfile::tempdir().unwrap();
    let expected_dir = tmp.path().join("expected");
    run(&Run {
        parallelism: 2,
        state: StateBackend::rocksdb(),
        checkpoints: None,
        output: &expected_dir,
        restore: None,
        stop: None,
    });
    let expected = published(&expected_dir);
    let out = tmp.path().join("out");
    let checkpoints = Path::new("memory://incremental-test/job");
    let savepoint = Path::new("memory://incremental-test/savepoints/one");
    run(&Run {
        parallelism: 2,
        state: StateBackend::rocksdb(),
        checkpoints: Some((checkpoints, true)),
        output: &out,
        restore: None,
        stop: Some((RECORDS / 2, savepoint)),
    });
    let store = Storage::open(checkpoints).unwrap();
    let dirs = store.list_dirs("").unwrap();
    assert!(dirs.iter().any(|d| d.starts_with("chk-")), "{dirs:?}");
    assert!(
        !store.list(SHARED_DIR).unwrap().is_empty(),
        "no SST objects were uploaded"
    );
    let saved = Storage::open(savepoint).unwrap();
    assert!(saved.exists("_metadata").unwrap());
    assert!(published(&out).len() < expected.len());
    run(&Run {
        parallelism: 3,
        state: StateBackend::rocksdb(),
        checkpoints: Some((checkpoints, true)),
        output: &out,
        restore: Some(savepoint),
        stop: None,
    });
    assert_eq!(published(&out), expected);
}
