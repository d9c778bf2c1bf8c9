//! The source against a real broker: a bounded read gives every record of every partition
//! exactly once at parallelism 1 and 2 on both state backends, with the records' Kafka
//! timestamps driving event-time windows; starting offsets (earliest, latest, timestamp,
//! the group's committed offsets) and the deserializers (JSON, UTF-8, raw bytes, key and
//! value, typeinfo's bytes).
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test panics on what it does not expect

mod common;

use std::time::Duration;

use common::{produce, Broker, Out};
use serde::{Deserialize, Serialize};
use typeinfo::TypeInfo;
use typeinfo_kafka::{
    Json, KafkaSource, KeyValue, OffsetReset, RawBytes, StartingOffsets, TypeInfoBytes, Utf8,
    ValueSerializer,
};
use typeinfo_runtime::{
    StateBackend, StreamExecutionEnvironment, TumblingEventTimeWindows, WatermarkStrategy,
};

#[derive(TypeInfo, Serialize, Deserialize, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Order {
    id: u64,
    user: String,
    amount: i64,
}

const PARTITIONS: i32 = 3;
const RECORDS: u64 = 120;

fn order(i: u64) -> Order {
    Order {
        id: i,
        user: format!("u{}", i % 4),
        amount: i as i64 * 3,
    }
}

/// Record `i` goes to partition `i % 3`, with key `u<i % 4>` and timestamp `1000 + 10 i`.
fn fill(broker: &Broker, topic: &str) {
    broker.topic(topic, PARTITIONS);
    let values: Vec<Vec<u8>> = (0..RECORDS)
        .map(|i| serde_json::to_vec(&order(i)).unwrap())
        .collect();
    let keys: Vec<String> = (0..RECORDS).map(|i| order(i).user).collect();
    let records: Vec<Out<'_>> = (0..RECORDS as usize)
        .map(|i| Out {
            partition: (i as i32) % PARTITIONS,
            key: Some(keys[i].as_bytes()),
            value: &values[i],
            timestamp: Some(1000 + 10 * i as i64),
        })
        .collect();
    produce(&broker.bootstrap(), topic, &records);
}

fn json_source(
    broker: &Broker,
    topic: &str,
    starting: StartingOffsets,
) -> KafkaSource<typeinfo_kafka::ValueOnly<Json<Order>>> {
    KafkaSource::builder(&broker.bootstrap())
        .topics([topic])
        .starting_offsets(starting)
        .bounded()
        .value_deserializer(Json::<Order>::new())
        .build()
        .unwrap()
}

#[test]
fn a_bounded_source_reads_every_record_once_at_parallelism_1_and_2_on_both_backends() {
    let broker = Broker::start();
    fill(&broker, "orders");
    for (parallelism, backend) in [
        (1, StateBackend::Heap),
        (2, StateBackend::Heap),
        (2, StateBackend::rocksdb()),
    ] {
        let env = StreamExecutionEnvironment::new();
        env.set_parallelism(parallelism).set_state_backend(backend);
        let source = json_source(&broker, "orders", StartingOffsets::Earliest);
        let out = env
            .from_source(source, WatermarkStrategy::no_watermarks(), "orders")
            .collect();
        env.execute("read orders").unwrap();
        let mut got = out.take();
        got.sort();
        assert_eq!(
            got,
            (0..RECORDS).map(order).collect::<Vec<_>>(),
            "parallelism {parallelism}"
        );
    }
}

#[test]
fn kafka_timestamps_drive_event_time_windows() {
    let broker = Broker::start();
    fill(&broker, "orders");
    let env = StreamExecutionEnvironment::new();
    env.set_parallelism(2)
        .set_state_backend(StateBackend::rocksdb());
    let source = json_source(&broker, "orders", StartingOffsets::Earliest);
    let counts = env
        .from_source(
            source,
            WatermarkStrategy::for_bounded_out_of_orderness(Duration::ZERO),
            "orders",
        )
        .key_by(|o: &Order| o.user.clone())
        .window(TumblingEventTimeWindows::of(Duration::from_millis(200)))
        .aggregate_with(
            typeinfo_runtime::functions::Count,
            |user: &String, w, n: u64| (user.clone(), w.start, n),
        )
        .collect();
    env.execute("windows").unwrap();
    let mut got = counts.take();
    got.sort();
    // Record i has timestamp 1000 + 10 i: window [1000 + 200 k, ...) holds i in 20k..20k+20.
    let mut expected = std::collections::BTreeMap::<(String, i64), u64>::new();
    for i in 0..RECORDS {
        let ts = 1000 + 10 * i as i64;
        *expected
            .entry((order(i).user, ts - ts.rem_euclid(200)))
            .or_default() += 1;
    }
    let expected: Vec<(String, i64, u64)> =
        expected.into_iter().map(|((u, s), n)| (u, s, n)).collect();
    assert_eq!(got, expected);
}

fn ids(broker: &Broker, source: KafkaSource<typeinfo_kafka::ValueOnly<Json<Order>>>) -> Vec<u64> {
    let _ = broker;
    let env = StreamExecutionEnvironment::new();
    let out = env
        .from_source(source, WatermarkStrategy::no_watermarks(), "orders")
        .map(|o: Order| o.id)
        .collect();
    env.execute("ids").unwrap();
    let mut got = out.take();
    got.sort();
    got
}

#[test]
fn starting_offsets_latest_timestamp_and_committed() {
    let broker = Broker::start();
    fill(&broker, "orders");
    assert_eq!(
        ids(
            &broker,
            json_source(&broker, "orders", StartingOffsets::Latest)
        ),
        Vec::<u64>::new()
    );
    // From the first record at or after 1600 (record 60), in every partition.
    let from_time = ids(
        &broker,
        json_source(&broker, "orders", StartingOffsets::Timestamp(1600)),
    );
    assert_eq!(from_time, (60..RECORDS).collect::<Vec<_>>());
    // The group committed offset 10 of partition 0 (records 30, 33, ...), nothing else.
    commit(&broker, "readers", "orders", 0, 10);
    let committed = KafkaSource::builder(&broker.bootstrap())
        .topics(["orders"])
        .group_id("readers")
        .starting_offsets(StartingOffsets::Committed {
            fallback: OffsetReset::Latest,
        })
        .bounded()
        .value_deserializer(Json::<Order>::new())
        .build()
        .unwrap();
    assert_eq!(
        ids(&broker, committed),
        (30..RECORDS).step_by(3).collect::<Vec<_>>()
    );
}

/// Commits `offset` of `partition` for `group` with a plain consumer.
fn commit(broker: &Broker, group: &str, topic: &str, partition: i32, offset: i64) {
    use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
    let consumer: BaseConsumer = rdkafka::ClientConfig::new()
        .set("bootstrap.servers", broker.bootstrap())
        .set("group.id", group)
        .create()
        .unwrap();
    let mut tpl = rdkafka::TopicPartitionList::new();
    tpl.add_partition_offset(topic, partition, rdkafka::Offset::Offset(offset))
        .unwrap();
    consumer.commit(&tpl, CommitMode::Sync).unwrap();
}

#[test]
fn key_and_value_utf8_raw_bytes_and_typeinfo_bytes() {
    let broker = Broker::start();
    fill(&broker, "orders");
    let env = StreamExecutionEnvironment::new();
    env.set_parallelism(2);
    let kv = KafkaSource::builder(&broker.bootstrap())
        .topics(["orders"])
        .bounded()
        .deserializer(KeyValue(Utf8, Json::<Order>::new()))
        .build()
        .unwrap();
    let raw = KafkaSource::builder(&broker.bootstrap())
        .topics(["orders"])
        .bounded()
        .value_deserializer(RawBytes)
        .build()
        .unwrap();
    let kv = env
        .from_source(kv, WatermarkStrategy::no_watermarks(), "kv")
        .collect();
    let raw = env
        .from_source(raw, WatermarkStrategy::no_watermarks(), "raw")
        .collect();
    env.execute("formats").unwrap();
    let mut kv = kv.take();
    kv.sort();
    let mut expected_kv: Vec<(Option<String>, Order)> = (0..RECORDS)
        .map(|i| (Some(order(i).user), order(i)))
        .collect();
    expected_kv.sort();
    assert_eq!(kv, expected_kv);
    let mut raw = raw.take();
    raw.sort();
    let mut expected: Vec<Vec<u8>> = (0..RECORDS)
        .map(|i| serde_json::to_vec(&order(i)).unwrap())
        .collect();
    expected.sort();
    assert_eq!(raw, expected);

    // typeinfo's own bytes, written with the same format.
    broker.topic("binary", 1);
    let format = TypeInfoBytes::<Order>::new().unwrap();
    let values: Vec<Vec<u8>> = (0..10)
        .map(|i| format.serialize(&order(i)).unwrap())
        .collect();
    let records: Vec<Out<'_>> = values
        .iter()
        .map(|v| Out {
            partition: 0,
            key: None,
            value: v,
            timestamp: None,
        })
        .collect();
    produce(&broker.bootstrap(), "binary", &records);
    let env = StreamExecutionEnvironment::new();
    let source = KafkaSource::builder(&broker.bootstrap())
        .topic_filter(|t| t == "binary")
        .bounded()
        .value_deserializer(format)
        .build()
        .unwrap();
    let out = env
        .from_source(source, WatermarkStrategy::no_watermarks(), "binary")
        .collect();
    env.execute("binary").unwrap();
    assert_eq!(out.take(), (0..10).map(order).collect::<Vec<_>>());
}
