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
//! # The broker of the tests: tansu
//!
//! The tests start [tansu](https://crates.io/crates/tansu) 0.6.0, a Kafka-protocol broker
//! written in Rust (crates.io, so `cargo install` builds it on a fresh machine), with its
//! SQLite storage (`libsql` feature) in a temporary directory, on a free loopback port;
//! `kafka/dev-setup.sh` installs it into `$HOME/.cache/typeinfo-tools/tansu` (a test whose
//! broker is missing fails and says to run `./dev setup`). What it supports, as the tests
//! found:
//! - produce, fetch, metadata, `CreateTopics` with partitions, `ListOffsets` (earliest,
//!   latest, by record timestamp), consumer group offsets (`OffsetCommit`/`OffsetFetch`):
//!   supported, and tested. Its `memory://` storage is not usable: its `ListOffsets`
//!   answers per record batch (the latest offset of a partition holding one batch of ten
//!   records is 1) and by storage time, not record time.
//! - transactions: `FindCoordinator` for transactions, `InitProducerId` with a
//!   transactional id and `AddPartitionsToTxn` are served; `EndTxn` (API key 26) is not
//!   (tansu's `ApiVersions` does not list it), so librdkafka's `commit_transaction` and
//!   `abort_transaction` fail with "EndTxnRequest (KIP-98) not supported by broker"; and
//!   its `read_committed` fetch returns the records of open transactions. The exactly-once
//!   sink is tested there up to the commit (`tests/exactly_once.rs`); that `read_committed`
//!   consumers see a checkpoint's records only once it completes needs a broker with
//!   transactions (Apache Kafka, Redpanda), which the registries this project installs
//!   from do not have.
//!
//! # What the runtime's source and sink traits do not let the connector do (yet)
//!
//! - Splits are listed when the job starts and assigned `i % parallelism`: partitions
//!   added while the job runs are not picked up, and a restore must keep the parallelism
//!   and the partitions (the runtime refuses a checkpoint whose split indexes this subtask
//!   does not read).
//! - A source hears nothing when a checkpoint completes: offsets are not committed to the
//!   consumer group (for monitoring); [`StartingOffsets::Committed`] reads offsets other
//!   clients committed.
//! - A reader gets no metrics group and no side output: skipped records are counted in
//!   [`KafkaSource::skipped_records`], not in the job's metrics, and cannot go to a side
//!   output.
//! - Each split has a consumer (a librdkafka client with its threads) of its own, because
//!   readers are created one split at a time; many partitions per subtask cost threads.

#![warn(missing_docs)]

mod admin;
mod error;
mod format;
mod record;
mod sink;
mod source;

pub use admin::KafkaAdmin;
pub use error::{Error, Result};
pub use format::{Json, RawBytes, TypeInfoBytes, Utf8, ValueDeserializer, ValueSerializer};
pub use record::{ConsumerRecord, KeyValue, RecordDeserializer, ValueOnly};
pub use sink::{DeliveryGuarantee, KafkaCommittable, KafkaSink, KafkaSinkBuilder, KafkaSinkWriter};
pub use source::{
    KafkaPosition, KafkaSource, KafkaSourceBuilder, KafkaSplit, KafkaSplitReader, OffsetReset,
    OnDeserializationError, StartingOffsets,
};
