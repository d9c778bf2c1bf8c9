//! The exactly-once sink against a broker with transactions (noida-db serves
//! `InitProducerId` with a transactional id, `AddPartitionsToTxn`, `EndTxn` with commit and
//! abort markers, and `read_committed` fetches up to the last stable offset): a
//! `read_committed` consumer sees a transaction's records only once its checkpoint (here:
//! the end of the input) committed it, then every record exactly once, at parallelism 1
//! and 2 on both state backends; a job that fails part-way (its open transaction aborted)
//! and restarts from its checkpoint inside `execute` gives `read_committed` consumers every
//! record once.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test panics on what it does not expect

mod common;

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::{Duration, Instant};

use common::{read_all, Broker};
use typeinfo_kafka::{DeliveryGuarantee, KafkaSink, Utf8};
use typeinfo_runtime::{
    CheckpointConfig, RestartStrategy, StateBackend, StreamExecutionEnvironment,
};

const RECORDS: i64 = 300;

#[test]
fn exactly_once_needs_a_transactional_id_prefix() {
    let built = KafkaSink::builder("127.0.0.1:1", Utf8)
        .topic("t")
        .delivery_guarantee(DeliveryGuarantee::ExactlyOnce)
        .build();
    assert!(matches!(built, Err(typeinfo_kafka::Error::Config(_))));
}

fn sink(broker: &Broker, topic: &str, prefix: &str) -> KafkaSink<String> {
    KafkaSink::builder(&broker.bootstrap(), Utf8)
        .topic(topic)
        .delivery_guarantee(DeliveryGuarantee::ExactlyOnce)
        .transactional_id_prefix(prefix)
        .lingering_transactions(1)
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap()
}

/// The values of `topic` (2 partitions) a consumer with `isolation` reads, sorted.
fn values(broker: &Broker, topic: &str, isolation: &str) -> Vec<String> {
    let mut got: Vec<String> = read_all(&broker.bootstrap(), topic, 2, isolation)
        .into_iter()
        .map(|r| String::from_utf8(r.value).unwrap())
        .collect();
    got.sort();
    got
}

fn lines() -> Vec<String> {
    let mut lines: Vec<String> = (0..RECORDS).map(|i| format!("line {i:04}")).collect();
    lines.sort();
    lines
}

/// Claimed by the first subtask of `read_committed_consumers_see_records_only_once_committed`
/// whose map sees a record: that subtask blocks until the test sets [`RELEASE`].
static CLAIMED: AtomicBool = AtomicBool::new(false);
/// Set by the test to let the blocked subtask go on.
static RELEASE: AtomicBool = AtomicBool::new(false);

#[test]
fn read_committed_consumers_see_records_only_once_committed() {
    let broker = Broker::start();
    broker.topic("eo-open", 2);
    let dir = tempfile::tempdir().unwrap();
    let env = StreamExecutionEnvironment::new();
    // One subtask (one worker thread) is held at its first record; the other writes its
    // records into its transaction. No checkpoint completes (the interval is an hour and a
    // subtask is held), so the transaction stays open until the end of the input commits it.
    env.set_parallelism(2)
        .enable_checkpointing(CheckpointConfig::new(dir.path(), Duration::from_secs(3600)));
    env.from_sequence(0, RECORDS - 1)
        .map(|i: i64| {
            if !CLAIMED.swap(true, Ordering::SeqCst) {
                while !RELEASE.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_millis(5));
                }
            }
            format!("line {i:04}")
        })
        .sink_to(sink(&broker, "eo-open", "eo-open"));
    let job = env.execute_async("exactly once, held open").unwrap();
    let until = Instant::now() + Duration::from_secs(30);
    while values(&broker, "eo-open", "read_uncommitted").is_empty() {
        assert!(Instant::now() < until, "no record reached the broker");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        values(&broker, "eo-open", "read_committed"),
        Vec::<String>::new(),
        "a read_committed consumer sees records of an open transaction"
    );
    RELEASE.store(true, Ordering::SeqCst);
    job.wait().unwrap();
    assert_eq!(values(&broker, "eo-open", "read_committed"), lines());
    assert_eq!(values(&broker, "eo-open", "read_uncommitted"), lines());
}

#[test]
fn every_record_once_at_parallelism_1_and_2_on_both_backends() {
    let broker = Broker::start();
    for (n, (parallelism, backend)) in [
        (1, StateBackend::Heap),
        (2, StateBackend::Heap),
        (2, StateBackend::rocksdb()),
    ]
    .into_iter()
    .enumerate()
    {
        let topic = format!("eo-{n}");
        broker.topic(&topic, 2);
        let dir = tempfile::tempdir().unwrap();
        let env = StreamExecutionEnvironment::new();
        env.set_parallelism(parallelism)
            .set_state_backend(backend)
            .enable_checkpointing(CheckpointConfig::new(dir.path(), Duration::from_millis(30)));
        env.from_sequence(0, RECORDS - 1)
            .map(|i: i64| {
                if i % 50 == 0 {
                    // Spread the records over several checkpoints, so several transactions.
                    std::thread::sleep(Duration::from_millis(40));
                }
                format!("line {i:04}")
            })
            .sink_to(sink(&broker, &topic, &topic));
        env.execute("exactly once").unwrap();
        assert_eq!(
            values(&broker, &topic, "read_committed"),
            lines(),
            "parallelism {parallelism}"
        );
    }
}

/// Counts the map's failures across the restarts of `a_failed_job_restarts_and_writes_each_record_once`.
static FAILURES: AtomicU32 = AtomicU32::new(0);

#[test]
fn a_failed_job_restarts_and_writes_each_record_once() {
    let broker = Broker::start();
    for (n, (parallelism, backend)) in [(1, StateBackend::Heap), (2, StateBackend::rocksdb())]
        .into_iter()
        .enumerate()
    {
        let topic = format!("eo-restart-{n}");
        broker.topic(&topic, 2);
        FAILURES.store(0, Ordering::SeqCst);
        let dir = tempfile::tempdir().unwrap();
        let env = StreamExecutionEnvironment::new();
        env.set_parallelism(parallelism)
            .set_state_backend(backend)
            .enable_checkpointing(CheckpointConfig::new(dir.path(), Duration::from_millis(30)))
            .set_restart_strategy(RestartStrategy::FixedDelay {
                attempts: 2,
                delay: Duration::from_millis(50),
            });
        env.from_sequence(0, RECORDS - 1)
            .map(|i: i64| {
                if i % 50 == 0 {
                    std::thread::sleep(Duration::from_millis(40));
                }
                // The first run fails after about 200 records, past several checkpoints.
                if i == 210 && FAILURES.fetch_add(1, Ordering::SeqCst) == 0 {
                    panic!("the map fails once at record 210");
                }
                format!("line {i:04}")
            })
            .sink_to(sink(&broker, &topic, &topic));
        env.execute("exactly once, restarted").unwrap();
        assert_eq!(
            FAILURES.load(Ordering::SeqCst),
            2,
            "one failure, then 210 again"
        );
        assert_eq!(
            values(&broker, &topic, "read_committed"),
            lines(),
            "parallelism {parallelism}: every record once for read_committed"
        );
        let uncommitted = values(&broker, &topic, "read_uncommitted");
        assert!(
            uncommitted.len() >= lines().len(),
            "read_uncommitted sees the aborted records too: {}",
            uncommitted.len()
        );
    }
}

/// What a process that died leaves: a transaction under `id` holding `values`, flushed to
/// the broker and neither committed nor aborted (the producer is leaked, as a SIGKILL
/// would leave it); with `committed`, the transaction is committed with its marker in the
/// commit log first, as the sink commits one.
fn prepared_by_a_dead_process(
    broker: &Broker,
    topic: &str,
    id: &str,
    values: &[String],
    committed: bool,
) {
    use rdkafka::producer::DefaultProducerContext;
    use rdkafka::producer::{BaseRecord, Producer, ThreadedProducer};
    let producer: ThreadedProducer<DefaultProducerContext> = rdkafka::ClientConfig::new()
        .set("bootstrap.servers", broker.bootstrap())
        .set("transactional.id", id)
        .create()
        .unwrap();
    producer.init_transactions(Duration::from_secs(10)).unwrap();
    producer.begin_transaction().unwrap();
    for v in values {
        producer
            .send(
                BaseRecord::<[u8], [u8]>::to(topic)
                    .payload(v.as_bytes())
                    .partition(0),
            )
            .unwrap();
    }
    if committed {
        let log = format!("{topic}-commits");
        producer
            .send(
                BaseRecord::<[u8], [u8]>::to(&log)
                    .key(id.as_bytes())
                    .payload(&[])
                    .partition(0),
            )
            .unwrap();
    }
    producer.flush(Duration::from_secs(10)).unwrap();
    if committed {
        producer
            .commit_transaction(Duration::from_secs(10))
            .unwrap();
    }
    std::mem::forget(producer);
}

fn committable(id: &str, topic: &str, values: &[String]) -> typeinfo_kafka::KafkaCommittable {
    typeinfo_kafka::KafkaCommittable {
        transactional_id: id.to_owned(),
        records: Some(
            values
                .iter()
                .map(|v| typeinfo_kafka::StagedRecord {
                    topic: topic.to_owned(),
                    partition: Some(0),
                    key: None,
                    value: v.as_bytes().to_vec(),
                    timestamp: None,
                })
                .collect(),
        ),
    }
}

/// The crash the sink's commit log is for: a checkpoint completed, and the process that
/// prepared its transaction died before committing it. Another process (a fresh sink, as a
/// restored job makes) commits the restored committable: the dead producer's open records
/// are aborted and the committable's copy is sent again, so a `read_committed` consumer
/// sees each record once; committing it again (a second restore) sends nothing; and a
/// transaction that did commit before the crash is not sent again.
#[test]
fn a_transaction_prepared_by_a_dead_process_is_committed_once_by_another() {
    use typeinfo_runtime::Sink;
    let broker = Broker::start();
    let topic = "eo-elsewhere";
    broker.topic(topic, 2);
    let lost: Vec<String> = (0..10).map(|i| format!("prepared {i}")).collect();
    let done: Vec<String> = (0..10).map(|i| format!("committed {i}")).collect();
    // Its log topic exists before the dead process writes a marker to it.
    broker.topic(&format!("{topic}-commits"), 1);
    prepared_by_a_dead_process(&broker, topic, "eo-elsewhere-0-7", &lost, false);
    prepared_by_a_dead_process(&broker, topic, "eo-elsewhere-0-8", &done, true);
    assert_eq!(
        values(&broker, topic, "read_uncommitted").len(),
        20,
        "the dead process's records are in the topic"
    );
    for restore in 0..2 {
        let sink = sink(&broker, topic, topic);
        sink.commit(committable("eo-elsewhere-0-7", topic, &lost))
            .unwrap();
        sink.commit(committable("eo-elsewhere-0-8", topic, &done))
            .unwrap();
        let mut want: Vec<String> = lost.iter().chain(&done).cloned().collect();
        want.sort();
        assert_eq!(
            values(&broker, topic, "read_committed"),
            want,
            "restore {restore}: each record once for read_committed"
        );
        assert_eq!(
            values(&broker, topic, "read_uncommitted").len(),
            30,
            "restore {restore}: only the uncommitted transaction was sent again, once"
        );
    }
}
