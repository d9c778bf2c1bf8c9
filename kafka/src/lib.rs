//! Kafka for `typeinfo-runtime` jobs: [`KafkaSource`] (topics as a source, a split per
//! partition, offsets in checkpoints) and [`KafkaSink`] (none, at-least-once or exactly-once
//! delivery on Kafka transactions), as Flink's `flink-connector-kafka` behaves.
//!
//! ```no_run
//! use std::time::Duration;
//! use typeinfo_kafka::{DeliveryGuarantee, KafkaSink, KafkaSource, Utf8};
//! use typeinfo_runtime::{StreamExecutionEnvironment, WatermarkStrategy};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let source = KafkaSource::builder("127.0.0.1:9092").topics(["in"]).value_deserializer(Utf8).build()?;
//! let sink = KafkaSink::builder("127.0.0.1:9092", Utf8)
//!     .topic("out")
//!     .delivery_guarantee(DeliveryGuarantee::AtLeastOnce)
//!     .build()?;
//! let env = StreamExecutionEnvironment::new();
//! env.from_source(source, WatermarkStrategy::for_bounded_out_of_orderness(Duration::from_secs(1)), "in")
//!     .map(|line: String| line.to_uppercase())
//!     .sink_to(sink);
//! env.execute("upper")?;
//! # Ok(())
//! # }
//! ```
//!
//! # The client: librdkafka, built from the bundled sources
//!
//! The connector uses `rdkafka` (rust-rdkafka over librdkafka, Confluent's C client): the
//! most complete Kafka client Rust has (consumer groups, `ListOffsets` by time, idempotent
//! and transactional producers, `read_committed`), and the one librdkafka's own test suite
//! keeps conformant with Apache Kafka. Its pure-Rust alternatives lack transactions.
//! librdkafka is compiled from the copy bundled in `rdkafka-sys` with its default `mklove`
//! build, which needs only a C compiler and `make` (the workspace builds RocksDB's C++
//! already): Debian 12's `librdkafka-dev` is 2.0.2, older than the 2.12 that rdkafka 0.39
//! requires for dynamic linking, and the `cmake-build` feature would add cmake. TLS, SASL
//! and zstd are off (the `libz` feature only); a deployment that needs them enables the
//! matching `rdkafka` features.
//!
//! # The broker of the tests: noida-db
//!
//! The tests start the Kafka service of [noida-db](https://pypi.org/project/noida-db/)
//! 0.2.2 (PyPI: a wheel holding one prebuilt binary that also speaks other databases'
//! protocols; the tests start only its Kafka service) with its data in a temporary
//! directory, on a free loopback port; `kafka/dev-setup.sh` installs it into
//! `$HOME/.cache/typeinfo-tools/noida-db` (a test whose broker is missing fails and says to
//! run `./dev setup`). What it supports, as the tests and probes with librdkafka found:
//! - produce, fetch, metadata, `CreateTopics` with partitions and configs, `DeleteTopics`,
//!   `ListOffsets` (earliest, latest, by record timestamp), consumer group offsets
//!   (`OffsetCommit`/`OffsetFetch`): supported, and tested. It deletes records by their
//!   timestamps (`retention.ms`, checked in the background): the tests, whose records
//!   carry timestamps of 1970, create topics with `retention.ms=-1`.
//! - transactions: `InitProducerId` with a transactional id, `AddPartitionsToTxn`,
//!   `EndTxn` (commit and abort markers) and `read_committed` fetches up to the last
//!   stable offset (open and aborted transactions' records left out): the exactly-once sink
//!   is tested with real commits and a `read_committed` consumer (`tests/exactly_once.rs`).
//!   Gaps found: `InitProducerId` for a transactional id whose transaction is open does not
//!   abort it (Kafka's fencing does: a crashed process's open transaction kept holding
//!   `read_committed` consumers back, and a later commit under the id committed its
//!   records too); the sink's commit log aborts them with a probe transaction instead (see
//!   the sink's docs), with which `tests/crash.rs`'s exactly-once test passes.
//!   `TxnOffsetCommit` is applied at once, not at the commit (so the commit log is a topic
//!   of markers written in the transactions, not the group offsets Kafka would keep
//!   transactionally). Transaction state does not survive a restart of the broker (a
//!   producer that lived through it fails with `OUT_OF_ORDER_SEQUENCE_NUMBER`; records of a
//!   transaction open at the stop are skipped by `read_committed` consumers for good): the
//!   sink finishes a prepared transaction its producer cannot commit from the committable's
//!   copy with a new producer, and `tests/broker_restart.rs` checks exactly once through a
//!   restart.
//! - persistence: its topics, offsets and records are saved to its data directory from time
//!   to time (within about two seconds) and when it stops on SIGTERM; a SIGKILL loses what
//!   arrived since the last save. The broker-restart test stops it with SIGTERM.
//!
//! It replaced tansu 0.6.0 (crates.io's newest), whose `ApiVersions` lacks `EndTxn` (API
//! key 26): librdkafka's `commit_transaction` failed there with "EndTxnRequest (KIP-98)
//! not supported by broker", and its `read_committed` fetches returned open transactions'
//! records. Also looked at: krafka's in-process test broker (crates.io, `test-broker`
//! feature) serves transactions but only `EndTxn` v3-v5, and librdkafka sends v0-v1;
//! librdkafka's own mock cluster answers `EndTxn` without writing markers and gives the
//! high watermark as the last stable offset; rivine 0.2.0 (crates.io) serves no
//! transaction API past `InitProducerId`; Debian has no Kafka broker; noida-db 0.2.3 needs
//! glibc 2.39 (Debian 12 has 2.36).
//!
//! # What the runtime's source and sink traits do not let the connector do (yet)
//!
//! - Splits found by partition discovery are read by the subtask the runtime's rule for
//!   discovered splits names (a hash of `topic-partition`), not by Flink's
//!   `KafkaSourceEnumerator.getSplitOwner` (topic hash plus partition); both spread new
//!   partitions over the subtasks, the assignment differs. After a restore the partitions
//!   are listed and assigned anew (`i % parallelism`) and each finds its offset by name.
//! - Each split has a consumer (a librdkafka client with its threads) of its own, because
//!   readers are created one split at a time; many partitions per subtask cost threads.

#![warn(missing_docs)]

mod admin;
mod commit_log;
mod error;
mod format;
mod record;
mod sink;
mod source;

pub use admin::KafkaAdmin;
pub use error::{Error, Result};
pub use format::{Json, RawBytes, TypeInfoBytes, Utf8, ValueDeserializer, ValueSerializer};
pub use record::{BadRecord, ConsumerRecord, KeyValue, RecordDeserializer, ValueOnly};
pub use sink::{
    DeliveryGuarantee, KafkaCommittable, KafkaSink, KafkaSinkBuilder, KafkaSinkWriter, StagedRecord,
};
pub use source::{
    KafkaPosition, KafkaSource, KafkaSourceBuilder, KafkaSplit, KafkaSplitReader, OffsetReset,
    OnDeserializationError, StartingOffsets,
};
