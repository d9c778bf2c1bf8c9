//! Partition discovery: an unbounded source over a topic of one partition reads the
//! partitions added to it while the job runs (from their earliest offset), at parallelism 1
//! and 2 on both state backends; a savepoint taken after that holds every partition's offset
//! under its name, and the job restored from it reads exactly the records written after it,
//! including those of a partition added while the job was down (from its earliest offset):
//! nothing skipped, nothing read twice.
//!
//! The source starts by timestamp (the first record at or after 1000 ms) and every record of
//! a partition added later has timestamp 500: had a new partition started where the
//! starting offsets say, its records would be skipped.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test panics on what it does not expect

mod common;

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{produce, Broker, Out};
use typeinfo_kafka::{KafkaAdmin, KafkaSource, StartingOffsets, Utf8};
use typeinfo_runtime::{
    CheckpointConfig, JobClient, RestoreSettings, StateBackend, StreamExecutionEnvironment,
    WatermarkStrategy,
};

/// Records per partition per round.
const PER_PARTITION: usize = 50;

/// Writes [`PER_PARTITION`] records `round/partition/i` with `timestamp` to each of
/// `partitions`.
fn write(
    broker: &Broker,
    topic: &str,
    round: u32,
    partitions: std::ops::Range<i32>,
    timestamp: i64,
) -> Vec<String> {
    let values: Vec<String> = partitions
        .clone()
        .flat_map(|p| (0..PER_PARTITION).map(move |i| format!("{round}/{p}/{i:03}")))
        .collect();
    let records: Vec<Out<'_>> = values
        .iter()
        .map(|v| Out {
            partition: v.split('/').nth(1).unwrap().parse().unwrap(),
            key: None,
            value: v.as_bytes(),
            timestamp: Some(timestamp),
        })
        .collect();
    produce(&broker.bootstrap(), topic, &records);
    values
}

type Read = Arc<Mutex<Vec<String>>>;

/// Starts the job (unbounded source, partition discovery every 200 ms -> collect), with
/// checkpoints into `checkpoints`, restored from `restore` if given.
fn start(
    broker: &Broker,
    topic: &str,
    parallelism: u32,
    backend: StateBackend,
    checkpoints: &Path,
    restore: Option<&Path>,
) -> (JobClient, Read) {
    let env = StreamExecutionEnvironment::new();
    env.set_parallelism(parallelism)
        .set_state_backend(backend)
        .enable_checkpointing(CheckpointConfig::new(
            checkpoints,
            Duration::from_millis(100),
        ));
    if let Some(path) = restore {
        env.restore_from(RestoreSettings {
            path: path.to_owned(),
            allow_non_restored_state: false,
        });
    }
    let source = KafkaSource::builder(&broker.bootstrap())
        .topics([topic])
        // New partitions start at their earliest offset whatever this says.
        .starting_offsets(StartingOffsets::Timestamp(1000))
        .partition_discovery_interval(Duration::from_millis(200))
        .value_deserializer(Utf8)
        .build()
        .unwrap();
    let read: Read = Arc::default();
    let sink = Arc::clone(&read);
    env.from_source(source, WatermarkStrategy::no_watermarks(), "records")
        .uid("records")
        .add_sink(move |r: String| sink.lock().unwrap().push(r))
        .uid("collect");
    (env.execute_async("discovery").unwrap(), read)
}

/// Waits until `read` holds `n` records, then a little longer (a record read twice would
/// show), and returns them sorted.
fn wait_for(read: &Read, n: usize, what: &str) -> Vec<String> {
    let until = Instant::now() + Duration::from_secs(60);
    while read.lock().unwrap().len() < n {
        assert!(
            Instant::now() < until,
            "{what}: {} of {n} records read",
            read.lock().unwrap().len()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(500));
    let mut got = read.lock().unwrap().clone();
    got.sort();
    got
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

#[test]
fn partitions_added_while_running_are_read_and_restored_by_name() {
    let broker = Broker::start();
    let admin = KafkaAdmin::new(&broker.bootstrap()).unwrap();
    let cases = [
        (1, StateBackend::Heap),
        (2, StateBackend::Heap),
        (2, StateBackend::rocksdb()),
    ];
    for (n, (parallelism, backend)) in cases.into_iter().enumerate() {
        let what = format!("parallelism {parallelism}, {backend:?}");
        let topic = format!("grow-{n}");
        broker.topic(&topic, 1);
        let work = tempfile::tempdir().unwrap();
        let (checkpoints, savepoints) = (work.path().join("chk"), work.path().join("sp"));

        let mut first = write(&broker, &topic, 0, 0..1, 1000);
        let (job, read) = start(
            &broker,
            &topic,
            parallelism,
            backend.clone(),
            &checkpoints,
            None,
        );
        wait_for(&read, PER_PARTITION, &what);
        // Two partitions more while the job runs, with records.
        admin.add_partitions(&topic, 3).unwrap();
        first.extend(write(&broker, &topic, 0, 1..3, 500));
        assert_eq!(
            wait_for(&read, 3 * PER_PARTITION, &what),
            sorted(first),
            "{what}"
        );
        let savepoint = job
            .trigger_savepoint(&savepoints, Duration::from_secs(30))
            .unwrap();
        job.cancel();
        let _ = job.wait();

        // While the job is down: a fourth partition, and records in all four.
        admin.add_partitions(&topic, 4).unwrap();
        let second = write(&broker, &topic, 1, 0..4, 500);
        let (job, read) = start(
            &broker,
            &topic,
            parallelism,
            backend,
            &checkpoints,
            Some(&savepoint),
        );
        let got = wait_for(&read, 4 * PER_PARTITION, &what);
        job.cancel();
        let _ = job.wait();
        assert_eq!(got, sorted(second), "{what}: after the restore");
    }
}
