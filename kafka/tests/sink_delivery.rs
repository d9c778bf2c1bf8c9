//! The sink against a real broker: with no guarantee and at least once, at parallelism 1
//! and 2 and with checkpoints, exactly the job's records arrive, each with its key, in the
//! partition the partitioner chose, with the element's timestamp; and what one job writes
//! in typeinfo's bytes another reads back.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test panics on what it does not expect

mod common;

use std::time::Duration;

use common::{read_all, Broker};
use typeinfo_kafka::{DeliveryGuarantee, KafkaSink, KafkaSource, TypeInfoBytes, Utf8};
use typeinfo_runtime::{CheckpointConfig, StreamExecutionEnvironment, WatermarkStrategy};

const RECORDS: u64 = 300;

fn write(
    broker: &Broker,
    topic: &str,
    guarantee: DeliveryGuarantee,
    parallelism: u32,
    checkpoints: Option<&std::path::Path>,
) {
    let env = StreamExecutionEnvironment::new();
    env.set_parallelism(parallelism);
    if let Some(dir) = checkpoints {
        env.enable_checkpointing(CheckpointConfig::new(dir, Duration::from_millis(20)));
    }
    let sink = KafkaSink::builder(&broker.bootstrap(), Utf8)
        .topic(topic)
        .key_serializer(|line: &String| line.split(' ').next().unwrap_or("").as_bytes().to_vec())
        .partitioner(|line: &String, _key, partitions| (line.len() as i32) % partitions)
        .delivery_guarantee(guarantee)
        .build()
        .unwrap();
    env.from_sequence(0, RECORDS as i64 - 1)
        .map(|i: i64| format!("k{} {}", i % 7, "x".repeat(i as usize % 5)))
        .sink_to(sink);
    env.execute("write").unwrap();
}

fn expected() -> Vec<(i32, String, String)> {
    let mut lines: Vec<(i32, String, String)> = (0..RECORDS)
        .map(|i| {
            let line = format!("k{} {}", i % 7, "x".repeat(i as usize % 5));
            ((line.len() as i32) % 3, format!("k{}", i % 7), line)
        })
        .collect();
    lines.sort();
    lines
}

fn written(broker: &Broker, topic: &str) -> Vec<(i32, String, String)> {
    let mut got: Vec<(i32, String, String)> =
        read_all(&broker.bootstrap(), topic, 3, "read_uncommitted")
            .into_iter()
            .map(|r| {
                (
                    r.partition,
                    String::from_utf8(r.key.unwrap()).unwrap(),
                    String::from_utf8(r.value).unwrap(),
                )
            })
            .collect();
    got.sort();
    got
}

#[test]
fn at_least_once_and_none_write_exactly_the_records_at_parallelism_1_and_2() {
    let broker = Broker::start();
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (DeliveryGuarantee::AtLeastOnce, 1, true),
        (DeliveryGuarantee::AtLeastOnce, 2, true),
        (DeliveryGuarantee::AtLeastOnce, 2, false),
        (DeliveryGuarantee::None, 2, false),
    ];
    for (n, (guarantee, parallelism, checkpoints)) in cases.into_iter().enumerate() {
        let topic = format!("out-{n}");
        broker.topic(&topic, 3);
        let checkpoint_dir = dir.path().join(&topic);
        write(
            &broker,
            &topic,
            guarantee,
            parallelism,
            checkpoints.then_some(checkpoint_dir.as_path()),
        );
        assert_eq!(
            written(&broker, &topic),
            expected(),
            "{guarantee:?} at parallelism {parallelism}"
        );
    }
}

#[test]
fn what_the_sink_writes_in_typeinfo_bytes_the_source_reads_back() {
    let broker = Broker::start();
    broker.topic("pairs", 2);
    let env = StreamExecutionEnvironment::new();
    env.set_parallelism(2);
    let sink = KafkaSink::builder(
        &broker.bootstrap(),
        TypeInfoBytes::<(String, i64)>::new().unwrap(),
    )
    .topic("pairs")
    .build()
    .unwrap();
    env.from_sequence(0, 99)
        .map(|i: i64| (format!("p{i}"), i * i))
        .sink_to(sink);
    env.execute("write pairs").unwrap();

    let env = StreamExecutionEnvironment::new();
    let source = KafkaSource::builder(&broker.bootstrap())
        .topics(["pairs"])
        .bounded()
        .value_deserializer(TypeInfoBytes::<(String, i64)>::new().unwrap())
        .build()
        .unwrap();
    let out = env
        .from_source(source, WatermarkStrategy::no_watermarks(), "pairs")
        .collect();
    env.execute("read pairs").unwrap();
    let mut got = out.take();
    got.sort();
    let mut expected: Vec<(String, i64)> = (0..100).map(|i| (format!("p{i}"), i * i)).collect();
    expected.sort();
    assert_eq!(got, expected);
}
