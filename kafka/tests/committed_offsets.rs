//! Offsets committed to the consumer group when a checkpoint completes (Flink's
//! `commit.offsets.on.checkpoint`): an unbounded source with a group id over a topic of two
//! partitions (7 and 5 records), checkpoints every 50 ms; once the records are read, later
//! checkpoints hold the partitions' ends, and the group's committed offsets reach them. With
//! `commit_offsets_on_checkpoint(false)` the group has no committed offset after several
//! completed checkpoints (the control that the commits come from the checkpoints).
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test panics on what it does not expect

mod common;

use std::time::{Duration, Instant};

use common::{produce, Broker, Out};
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::{ClientConfig, Offset, TopicPartitionList};
use typeinfo_kafka::{KafkaSource, Utf8};
use typeinfo_runtime::{
    CheckpointConfig, JobClient, StreamExecutionEnvironment, WatermarkStrategy,
};

/// Partition 0: 7 records, partition 1: 5.
fn fill(broker: &Broker, topic: &str) {
    broker.topic(topic, 2);
    let records: Vec<Out<'_>> = (0..12)
        .map(|i| Out {
            partition: i32::from(i >= 7),
            key: None,
            value: b"x",
            timestamp: Some(1000),
        })
        .collect();
    produce(&broker.bootstrap(), topic, &records);
}

/// The group's committed offsets of the topic's two partitions (`None`: none committed).
fn committed(broker: &Broker, group: &str, topic: &str) -> [Option<i64>; 2] {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", broker.bootstrap())
        .set("group.id", group)
        .set("enable.auto.commit", "false")
        .create()
        .unwrap();
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition(topic, 0);
    tpl.add_partition(topic, 1);
    let got = consumer
        .committed_offsets(tpl, Duration::from_secs(10))
        .unwrap();
    [0, 1].map(|p| match got.find_partition(topic, p).map(|e| e.offset()) {
        Some(Offset::Offset(o)) => Some(o),
        _ => None,
    })
}

fn start(
    broker: &Broker,
    topic: &str,
    group: &str,
    commit: bool,
    dir: &std::path::Path,
) -> JobClient {
    let env = StreamExecutionEnvironment::new();
    env.set_parallelism(2);
    env.enable_checkpointing(CheckpointConfig::new(dir, Duration::from_millis(50)));
    let source = KafkaSource::builder(&broker.bootstrap())
        .topics([topic])
        .group_id(group)
        .commit_offsets_on_checkpoint(commit)
        .value_deserializer(Utf8)
        .build()
        .unwrap();
    env.from_source(source, WatermarkStrategy::no_watermarks(), "records")
        .add_sink(|_: String| {});
    env.execute_async("committed offsets").unwrap()
}

#[test]
fn completed_checkpoints_commit_the_offsets_to_the_group() {
    let broker = Broker::start();
    fill(&broker, "offsets");
    let dir = tempfile::tempdir().unwrap();
    let job = start(&broker, "offsets", "monitoring", true, dir.path());
    let until = Instant::now() + Duration::from_secs(30);
    loop {
        let got = committed(&broker, "monitoring", "offsets");
        if got == [Some(7), Some(5)] {
            break;
        }
        assert!(
            Instant::now() < until,
            "committed offsets {got:?}, expected [7, 5]"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    job.cancel();
    let _ = job.wait();
}

#[test]
fn without_commits_on_checkpoint_the_group_has_no_offsets() {
    let broker = Broker::start();
    fill(&broker, "quiet");
    let dir = tempfile::tempdir().unwrap();
    let job = start(&broker, "quiet", "unwatched", false, dir.path());
    let until = Instant::now() + Duration::from_secs(30);
    while job.metrics().counter("job.numCompletedCheckpoints") < 5 {
        assert!(Instant::now() < until, "checkpoints did not complete");
        std::thread::sleep(Duration::from_millis(20));
    }
    job.cancel();
    let _ = job.wait();
    assert_eq!(committed(&broker, "unwatched", "quiet"), [None, None]);
}
