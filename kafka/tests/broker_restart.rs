//! The broker stopped and started again mid-job, with the data it saved (noida-db keeps its
//! topics on disk; it is stopped with SIGTERM, as `noida-db down` does, since it saves from
//! time to time and a SIGKILL loses the latest writes, see `common`): a job reading one topic and writing another at least once,
//! with checkpoints and a restart strategy, fails while the broker is away (its reads and
//! its checkpoint's flush fail), restarts from its latest checkpoint until the broker is
//! back, and goes on: the output then holds every input record, also those written to the
//! input after the restart, and nothing else (records after the restored checkpoint may be
//! there twice, as at-least-once allows). At parallelism 1 and 2, on both state backends.
//!
//! Exactly once, the same run read with `read_committed`: every record once. The test broker
//! does not keep its transactions' state over a restart (Kafka keeps it in
//! `__transaction_state`): after the restart the records of a transaction open at the stop
//! are neither committed nor aborted (a `read_committed` consumer skips them for good), and
//! a producer that lived through the restart fails with `OUT_OF_ORDER_SEQUENCE_NUMBER`, so
//! a transaction prepared before the stop cannot be committed by its producer after it; the
//! sink then finishes it from the committable's copy of its records with a new producer
//! (see `KafkaSink`), and the restored job writes the rest again.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test panics on what it does not expect

mod common;

use std::time::{Duration, Instant};

use common::{produce, read_all, Broker, Out};
use typeinfo_kafka::{DeliveryGuarantee, KafkaSink, KafkaSource, Utf8};
use typeinfo_runtime::{
    CheckpointConfig, JobClient, RestartStrategy, StateBackend, StreamExecutionEnvironment,
    WatermarkStrategy,
};

const RECORDS: usize = 400;

/// Writes input records `range` ("in NNNN", round robin over 3 partitions).
fn write_input(broker: &Broker, topic: &str, range: std::ops::Range<usize>) {
    let values: Vec<String> = range.map(|i| format!("in {i:04}")).collect();
    let records: Vec<Out<'_>> = values
        .iter()
        .enumerate()
        .map(|(i, v)| Out {
            partition: (i % 3) as i32,
            key: None,
            value: v.as_bytes(),
            timestamp: None,
        })
        .collect();
    produce(&broker.bootstrap(), topic, &records);
}

/// The output's values (read with `isolation`), sorted.
fn output(broker: &Broker, topic: &str, isolation: &str) -> Vec<String> {
    let mut got: Vec<String> = read_all(&broker.bootstrap(), topic, 2, isolation)
        .into_iter()
        .map(|r| String::from_utf8(r.value).unwrap())
        .collect();
    got.sort();
    got
}

fn start(
    broker: &Broker,
    n: usize,
    (parallelism, backend): (u32, StateBackend),
    guarantee: DeliveryGuarantee,
    dir: &std::path::Path,
) -> JobClient {
    let env = StreamExecutionEnvironment::new();
    env.set_parallelism(parallelism)
        .set_state_backend(backend)
        .enable_checkpointing(CheckpointConfig::new(dir, Duration::from_millis(50)))
        .set_restart_strategy(RestartStrategy::FixedDelay {
            attempts: 200,
            delay: Duration::from_millis(100),
        });
    let source = KafkaSource::builder(&broker.bootstrap())
        .topics([format!("in-{n}")])
        .value_deserializer(Utf8)
        .timeout(Duration::from_secs(2))
        .build()
        .unwrap();
    let sink = KafkaSink::builder(&broker.bootstrap(), Utf8)
        .topic(&format!("out-{n}"))
        .delivery_guarantee(guarantee)
        .transactional_id_prefix(&format!("out-{n}"))
        .timeout(Duration::from_secs(2))
        .build()
        .unwrap();
    env.from_source(source, WatermarkStrategy::no_watermarks(), "in")
        .map(|line: String| line.replace("in", "out"))
        .sink_to(sink);
    env.execute_async("broker restart").unwrap()
}

/// Waits until the output holds at least `count` distinct records; fails with the job's
/// status and record and checkpoint counts otherwise.
fn wait_for(broker: &Broker, job: &JobClient, (topic, isolation): (&str, &str), count: usize) {
    let until = Instant::now() + Duration::from_secs(60);
    let distinct = || {
        let mut got = output(broker, topic, isolation);
        got.dedup();
        got.len()
    };
    while distinct() < count {
        if Instant::now() > until {
            let metrics = job.metrics();
            let counts: Vec<_> = metrics
                .counters
                .iter()
                .filter(|(k, _)| {
                    k.starts_with("job.") || k.ends_with("numRecordsOut") || k.contains("kafka")
                })
                .collect();
            panic!(
                "`{topic}` has {} of {count} records; job {:?}, {counts:?}",
                distinct(),
                job.status()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The job of `case` with `guarantee` through a broker restart; the output (read with
/// `isolation`) then, sorted, without removing duplicates.
fn through_a_restart(
    broker: &mut Broker,
    n: usize,
    case: (u32, StateBackend),
    guarantee: DeliveryGuarantee,
    isolation: &str,
) -> Vec<String> {
    broker.topic(&format!("in-{n}"), 3);
    broker.topic(&format!("out-{n}"), 2);
    let out = format!("out-{n}");
    write_input(broker, &format!("in-{n}"), 0..RECORDS / 2);
    let dir = tempfile::tempdir().unwrap();
    let job = start(broker, n, case, guarantee, dir.path());
    wait_for(broker, &job, (&out, isolation), RECORDS / 4);
    broker.stop();
    // Long enough for reads and flushes to fail and the job to restart.
    std::thread::sleep(Duration::from_secs(3));
    broker.restart();
    write_input(broker, &format!("in-{n}"), RECORDS / 2..RECORDS);
    wait_for(broker, &job, (&out, isolation), RECORDS);
    job.cancel();
    let _ = job.wait();
    output(broker, &out, isolation)
}

fn cases() -> [(u32, StateBackend); 3] {
    [
        (1, StateBackend::Heap),
        (2, StateBackend::Heap),
        (2, StateBackend::rocksdb()),
    ]
}

fn expected() -> Vec<String> {
    (0..RECORDS).map(|i| format!("out {i:04}")).collect()
}

#[test]
fn the_broker_restarted_mid_job_loses_nothing() {
    let mut broker = Broker::start();
    for (n, case) in cases().into_iter().enumerate() {
        let parallelism = case.0;
        let mut got = through_a_restart(
            &mut broker,
            n,
            case,
            DeliveryGuarantee::AtLeastOnce,
            "read_uncommitted",
        );
        got.dedup();
        assert_eq!(
            got,
            expected(),
            "parallelism {parallelism}: every record, nothing else"
        );
    }
}

#[test]
fn the_broker_restarted_mid_job_exactly_once_writes_each_record_once() {
    let mut broker = Broker::start();
    for (n, case) in cases().into_iter().enumerate() {
        let parallelism = case.0;
        let got = through_a_restart(
            &mut broker,
            n,
            case,
            DeliveryGuarantee::ExactlyOnce,
            "read_committed",
        );
        assert_eq!(
            got,
            expected(),
            "parallelism {parallelism}: every record once for read_committed"
        );
    }
}
