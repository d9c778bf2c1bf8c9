//! The exactly-once sink as far as tansu allows. tansu 0.6.0 serves `FindCoordinator` for
//! transactions, `InitProducerId` with a transactional id and `AddPartitionsToTxn`, but not
//! `EndTxn` (API key 26 is missing from its `ApiVersions`, so librdkafka refuses
//! `commit_transaction` with "EndTxnRequest (KIP-98) not supported by broker"); and its
//! `read_committed` fetch returns the records of open transactions too. The test checks what
//! can be checked there: the sink initializes transactional producers, writes each record
//! once into its transaction, and the job fails at the first commit with an error naming the
//! transaction and the missing call (never silently publishing, never silently dropping).
//! That a `read_committed` consumer sees a checkpoint's records only once it completes, and
//! the crash test of issue 29, need a broker with transactions (Apache Kafka, Redpanda).
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test panics on what it does not expect

mod common;

use std::time::Duration;

use common::{read_all, Broker};
use typeinfo_kafka::{DeliveryGuarantee, KafkaSink, Utf8};
use typeinfo_runtime::{CheckpointConfig, StreamExecutionEnvironment};

#[test]
fn exactly_once_needs_a_transactional_id_prefix() {
    let built = KafkaSink::builder("127.0.0.1:1", Utf8)
        .topic("t")
        .delivery_guarantee(DeliveryGuarantee::ExactlyOnce)
        .build();
    assert!(matches!(built, Err(typeinfo_kafka::Error::Config(_))));
}

#[test]
fn on_tansu_transactions_are_written_and_the_commit_fails_naming_end_txn() {
    let broker = Broker::start();
    broker.topic("eo", 2);
    let dir = tempfile::tempdir().unwrap();
    let env = StreamExecutionEnvironment::new();
    env.set_parallelism(2)
        .enable_checkpointing(CheckpointConfig::new(dir.path(), Duration::from_millis(50)));
    let sink = KafkaSink::builder(&broker.bootstrap(), Utf8)
        .topic("eo")
        .delivery_guarantee(DeliveryGuarantee::ExactlyOnce)
        .transactional_id_prefix("eo-test")
        .lingering_transactions(1)
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    env.from_sequence(0, 199)
        .map(|i: i64| format!("line {i}"))
        .sink_to(sink);
    let error = env
        .execute("exactly once")
        .expect_err("tansu cannot commit a transaction")
        .to_string();
    assert!(
        error.contains("commit the transaction of `eo-test-"),
        "{error}"
    );
    assert!(error.contains("EndTxn"), "{error}");
    // What reached the broker inside the transactions: input lines, none twice.
    let written: Vec<String> = read_all(&broker.bootstrap(), "eo", 2, "read_uncommitted")
        .into_iter()
        .map(|r| String::from_utf8(r.value).unwrap())
        .collect();
    let mut unique = written.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), written.len(), "a record written twice");
    assert!(
        !written.is_empty() && written.iter().all(|l| l.starts_with("line ")),
        "{written:?}"
    );
}
