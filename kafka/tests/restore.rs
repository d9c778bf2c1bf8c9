//! Restoring the source from a savepoint continues every partition at its exact offset:
//! a job stopped with a savepoint after some records, then restored, reads each record of
//! the topic exactly once over both runs, at parallelism 1 and 2, on both state backends,
//! and when the restore runs at another parallelism (1 to 2, 2 to 3, 3 to 1: the partitions
//! are reassigned to the new subtasks, each at its offset).
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test panics on what it does not expect

mod common;

use common::{produce, Broker, Out};
use typeinfo_kafka::{KafkaSource, StartingOffsets, Utf8};
use typeinfo_runtime::{
    CheckpointConfig, RestoreSettings, StateBackend, StopWithSavepoint, StreamExecutionEnvironment,
    WatermarkStrategy,
};

const RECORDS: usize = 400;

fn source(broker: &Broker, topic: &str) -> KafkaSource<typeinfo_kafka::ValueOnly<Utf8>> {
    KafkaSource::builder(&broker.bootstrap())
        .topics([topic])
        .starting_offsets(StartingOffsets::Earliest)
        .bounded()
        .value_deserializer(Utf8)
        .build()
        .unwrap()
}

/// Runs the job (source -> keyed running count -> collect): the records it read, and the
/// final count per key it saw.
fn run(
    broker: &Broker,
    topic: &str,
    parallelism: u32,
    backend: StateBackend,
    dir: &std::path::Path,
    stop: Option<u64>,
    restore: bool,
) -> Vec<String> {
    let env = StreamExecutionEnvironment::new();
    env.set_parallelism(parallelism)
        .set_state_backend(backend)
        .enable_checkpointing(CheckpointConfig::new(
            dir.join("checkpoints"),
            std::time::Duration::from_millis(50),
        ));
    if let Some(after_records) = stop {
        env.stop_with_savepoint(StopWithSavepoint {
            after_records,
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
        .from_source(
            source(broker, topic),
            WatermarkStrategy::no_watermarks(),
            "lines",
        )
        .collect();
    env.execute("restore").unwrap();
    out.take()
}

#[test]
fn a_restored_source_reads_every_record_exactly_once() {
    let broker = Broker::start();
    let cases = [
        (1, 1, StateBackend::Heap),
        (2, 2, StateBackend::Heap),
        (2, 2, StateBackend::rocksdb()),
        (1, 2, StateBackend::Heap),
        (2, 3, StateBackend::rocksdb()),
        (3, 1, StateBackend::Heap),
    ];
    for (n, (parallelism, restored_at, backend)) in cases.into_iter().enumerate() {
        let topic = format!("lines-{n}");
        broker.topic(&topic, 3);
        let values: Vec<String> = (0..RECORDS).map(|i| format!("line {i:04}")).collect();
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
        produce(&broker.bootstrap(), &topic, &records);
        let dir = tempfile::tempdir().unwrap();
        let first = run(
            &broker,
            &topic,
            parallelism,
            backend.clone(),
            dir.path(),
            Some(70),
            false,
        );
        assert_eq!(
            first.len(),
            70 * parallelism as usize,
            "the first run stops after 70 records per subtask"
        );
        let second = run(
            &broker,
            &topic,
            restored_at,
            backend,
            dir.path(),
            None,
            true,
        );
        let mut all: Vec<String> = first.into_iter().chain(second).collect();
        all.sort();
        assert_eq!(
            all, values,
            "parallelism {parallelism} restored at {restored_at}: every record once over both runs"
        );
    }
}
