//! A record that does not deserialize fails the job by default, with its topic, partition
//! and offset in the error; with `Skip` it is left out and counted, and every other record
//! arrives; with `SideOutput` it arrives on the side output `BadRecord::tag()` with its place,
//! bytes and the deserializer's message, at parallelism 1 and 2 on both backends.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test panics on what it does not expect

mod common;

use std::sync::atomic::Ordering;

use common::{produce, Broker, Out};
use typeinfo_kafka::{BadRecord, Json, KafkaSource, OnDeserializationError, Utf8};
use typeinfo_runtime::{StateBackend, StreamExecutionEnvironment, WatermarkStrategy};

/// Partition 0: ten numbers; partition 1: four numbers, then `{oops` at offset 4, then one
/// more, then a record that is not UTF-8 at offset 6.
fn fill(broker: &Broker) {
    broker.topic("numbers", 2);
    let good: Vec<Vec<u8>> = (0..16u32).map(|i| i.to_string().into_bytes()).collect();
    let mut records: Vec<Out<'_>> = (0..10)
        .map(|i| Out {
            partition: 0,
            key: None,
            value: &good[i],
            timestamp: None,
        })
        .collect();
    records.extend((10..14).map(|i| Out {
        partition: 1,
        key: None,
        value: &good[i],
        timestamp: None,
    }));
    records.push(Out {
        partition: 1,
        key: None,
        value: b"{oops",
        timestamp: None,
    });
    records.push(Out {
        partition: 1,
        key: None,
        value: &good[14],
        timestamp: None,
    });
    records.push(Out {
        partition: 1,
        key: None,
        value: &[0xff, 0xfe],
        timestamp: None,
    });
    produce(&broker.bootstrap(), "numbers", &records);
}

#[test]
fn a_bad_record_fails_the_job_naming_topic_partition_and_offset() {
    let broker = Broker::start();
    fill(&broker);
    for parallelism in [1, 2] {
        let env = StreamExecutionEnvironment::new();
        env.set_parallelism(parallelism);
        let source = KafkaSource::builder(&broker.bootstrap())
            .topics(["numbers"])
            .bounded()
            .value_deserializer(Json::<u32>::new())
            .build()
            .unwrap();
        let _ = env
            .from_source(source, WatermarkStrategy::no_watermarks(), "numbers")
            .collect();
        let error = env
            .execute("bad json")
            .expect_err("a bad record must fail the job")
            .to_string();
        assert!(
            error.contains("topic `numbers` partition 1 offset 4"),
            "{error}"
        );
    }
}

#[test]
fn with_skip_bad_records_are_counted_and_the_rest_arrives() {
    let broker = Broker::start();
    fill(&broker);
    for parallelism in [1, 2] {
        let env = StreamExecutionEnvironment::new();
        env.set_parallelism(parallelism);
        let json = KafkaSource::builder(&broker.bootstrap())
            .topics(["numbers"])
            .bounded()
            .on_deserialization_error(OnDeserializationError::Skip)
            .value_deserializer(Json::<u32>::new())
            .build()
            .unwrap();
        let utf8 = KafkaSource::builder(&broker.bootstrap())
            .topics(["numbers"])
            .bounded()
            .on_deserialization_error(OnDeserializationError::Skip)
            .value_deserializer(Utf8)
            .build()
            .unwrap();
        let (json_skipped, utf8_skipped) = (json.skipped_records(), utf8.skipped_records());
        let numbers = env
            .from_source(json, WatermarkStrategy::no_watermarks(), "json")
            .collect();
        let lines = env
            .from_source(utf8, WatermarkStrategy::no_watermarks(), "utf8")
            .collect();
        env.execute("skip").unwrap();
        let mut numbers = numbers.take();
        numbers.sort_unstable();
        assert_eq!(numbers, (0..15).collect::<Vec<u32>>());
        assert_eq!(
            json_skipped.load(Ordering::Relaxed),
            2,
            "`{{oops` and the non-UTF-8 record"
        );
        let mut lines = lines.take();
        lines.sort();
        let mut expected: Vec<String> = (0..15)
            .map(|i: u32| i.to_string())
            .chain(["{oops".to_owned()])
            .collect();
        expected.sort();
        assert_eq!(lines, expected);
        assert_eq!(
            utf8_skipped.load(Ordering::Relaxed),
            1,
            "the non-UTF-8 record"
        );
    }
}

#[test]
fn with_side_output_bad_records_arrive_on_it_with_their_place_and_bytes() {
    let broker = Broker::start();
    fill(&broker);
    for (parallelism, backend) in [(1, StateBackend::Heap), (2, StateBackend::rocksdb())] {
        let env = StreamExecutionEnvironment::new();
        env.set_parallelism(parallelism).set_state_backend(backend);
        let json = KafkaSource::builder(&broker.bootstrap())
            .topics(["numbers"])
            .bounded()
            .on_deserialization_error(OnDeserializationError::SideOutput)
            .value_deserializer(Json::<u32>::new())
            .build()
            .unwrap();
        let skipped = json.skipped_records();
        let stream = env.from_source(json, WatermarkStrategy::no_watermarks(), "json");
        let numbers = stream.collect();
        let bad = stream.side_output(&BadRecord::tag()).collect();
        env.execute("side output").unwrap();
        let mut numbers = numbers.take();
        numbers.sort_unstable();
        assert_eq!(numbers, (0..15).collect::<Vec<u32>>(), "p{parallelism}");
        let mut bad = bad.take();
        bad.sort_by_key(|b| b.offset);
        let places: Vec<_> = bad
            .iter()
            .map(|b| (b.topic.as_str(), b.partition, b.offset, b.value.clone()))
            .collect();
        assert_eq!(
            places,
            [
                ("numbers", 1, 4, Some(b"{oops".to_vec())),
                ("numbers", 1, 6, Some(vec![0xff, 0xfe])),
            ],
            "p{parallelism}"
        );
        assert!(bad.iter().all(|b| !b.error.is_empty()), "{bad:?}");
        assert_eq!(skipped.load(Ordering::Relaxed), 2, "p{parallelism}");
    }
}
