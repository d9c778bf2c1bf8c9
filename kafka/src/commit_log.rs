//! The exactly-once sink's commit log: one marker record per committed transaction, in a
//! topic of its own, written inside the transaction it marks (so it is visible to a
//! `read_committed` consumer exactly when the transaction's records are), and the two
//! operations a process needs to finish a transaction another process prepared:
//! [`CommitLog::abort_leftovers`] and [`CommitLog::contains`].
//!
//! # Why a log, and why a probe
//!
//! librdkafka cannot commit a transaction another producer prepared (Flink resumes it from
//! its producer id and epoch; librdkafka has no such call). The sink therefore keeps a copy
//! of each open transaction's records in its committable, and a process that must commit a
//! transaction it does not hold (after a crash) re-sends the copy in a new transaction
//! under the same transactional id, unless the log shows that the transaction committed
//! before the crash. The marker makes "committed?" a question with a reliable answer: it is
//! in the transaction, so it is committed, or aborted, with the records.
//!
//! Before it looks, the process aborts whatever the crashed producer left open under the
//! id: on Apache Kafka, `InitProducerId` does that already (it fences the earlier producer);
//! on brokers whose `InitProducerId` does not (noida-db 0.2.2, the tests' broker, keeps the
//! records open, and a later commit under the id commits them too), a transaction holding
//! one probe record in the log, flushed and aborted, aborts them. The probe costs one round
//! trip per id at a restore and is invisible to `read_committed` consumers; it goes to the
//! log, never to the sink's output topics.
//!
//! The log has one partition; markers are keyed by transactional id and carry no value.
//! Its growth is one small record per subtask and checkpoint; the topic's retention bounds
//! it (a marker older than the retention can no longer stop a re-send, so a restore from a
//! checkpoint older than the retention may write that checkpoint's last transaction again).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::message::Message;
use rdkafka::producer::{BaseRecord, Producer, ProducerContext, ThreadedProducer};
use rdkafka::types::RDKafkaErrorCode;
use rdkafka::{ClientConfig, Offset, TopicPartitionList};

use crate::error::{Error, Result};

/// The key of the probe record (markers are keyed by transactional ids, which are never
/// empty).
const PROBE: &[u8] = b"";

/// The commit log of one exactly-once sink (see the [module docs](self)).
pub(crate) struct CommitLog {
    topic: String,
    /// The sink's client properties (brokers, security).
    client: Vec<(String, String)>,
    timeout: Duration,
    /// Whether the topic is known to exist.
    ready: AtomicBool,
}

impl CommitLog {
    pub(crate) fn new(topic: String, client: Vec<(String, String)>, timeout: Duration) -> Self {
        CommitLog {
            topic,
            client,
            timeout,
            ready: AtomicBool::new(false),
        }
    }

    /// A client configuration with the sink's properties.
    fn config(&self) -> ClientConfig {
        let mut config = ClientConfig::new();
        for (k, v) in &self.client {
            config.set(k, v);
        }
        config
    }

    /// Creates the topic (one partition, the brokers' default replication) unless it
    /// exists.
    pub(crate) fn ensure_topic(&self) -> Result<()> {
        if self.ready.load(Ordering::Acquire) {
            return Ok(());
        }
        let admin: AdminClient<DefaultClientContext> = self
            .config()
            .create()
            .map_err(Error::client("create an admin client"))?;
        let topic = NewTopic::new(&self.topic, 1, TopicReplication::Fixed(-1));
        let options = AdminOptions::new().operation_timeout(Some(self.timeout));
        let results = futures_executor::block_on(admin.create_topics([&topic], &options))
            .map_err(Error::client(format!("create topic `{}`", self.topic)))?;
        for result in results {
            match result {
                Ok(_) | Err((_, RDKafkaErrorCode::TopicAlreadyExists)) => {}
                Err((name, code)) => {
                    return Err(Error::Config(format!(
                        "creating the exactly-once sink's commit log `{name}`: {code}"
                    )))
                }
            }
        }
        self.ready.store(true, Ordering::Release);
        Ok(())
    }

    /// Puts the marker of the transaction `id` into `producer`'s open transaction.
    pub(crate) fn mark<C: ProducerContext<DeliveryOpaque = ()> + 'static>(
        &self,
        producer: &ThreadedProducer<C>,
        id: &str,
    ) -> Result<()> {
        send(producer, &self.topic, id.as_bytes())
    }

    /// Aborts what an earlier producer left open under `producer`'s transactional id `id`:
    /// a transaction with one probe record, flushed and aborted (see the [module
    /// docs](self)). `producer` has its transactions initialized and none open; it has none
    /// open afterwards either.
    pub(crate) fn abort_leftovers<C: ProducerContext<DeliveryOpaque = ()> + 'static>(
        &self,
        producer: &ThreadedProducer<C>,
        id: &str,
    ) -> Result<()> {
        self.ensure_topic()?;
        producer.begin_transaction().map_err(Error::client(format!(
            "begin the probe transaction of `{id}`"
        )))?;
        send(producer, &self.topic, PROBE)?;
        producer
            .flush(self.timeout)
            .map_err(Error::client(format!("flush the probe of `{id}`")))?;
        producer
            .abort_transaction(self.timeout)
            .map_err(Error::client(format!(
                "abort the probe transaction of `{id}`"
            )))
    }

    /// Whether the log holds the committed marker of the transaction `id` (read with
    /// `read_committed` from the start to the end the partition has now).
    pub(crate) fn contains(&self, id: &str) -> Result<bool> {
        self.ensure_topic()?;
        let consumer: BaseConsumer = self
            .config()
            .set("group.id", format!("{}-reader", self.topic))
            .set("enable.auto.commit", "false")
            .set("enable.partition.eof", "true")
            .set("isolation.level", "read_committed")
            .create()
            .map_err(Error::client("create the commit log's consumer"))?;
        let mut assignment = TopicPartitionList::new();
        assignment
            .add_partition_offset(&self.topic, 0, Offset::Beginning)
            .map_err(Error::client("assign the commit log"))?;
        consumer
            .assign(&assignment)
            .map_err(Error::client("assign the commit log"))?;
        let until = Instant::now() + self.timeout;
        let mut found = false;
        loop {
            if Instant::now() > until {
                return Err(Error::Config(format!(
                    "reading the commit log `{}` did not reach its end in {:?}",
                    self.topic, self.timeout
                )));
            }
            match consumer.poll(Duration::from_millis(100)) {
                None => {}
                Some(Err(KafkaError::PartitionEOF(_))) => return Ok(found),
                Some(Err(e)) => {
                    return Err(Error::client(format!(
                        "read the commit log `{}`",
                        self.topic
                    ))(e))
                }
                Some(Ok(m)) => found |= m.key() == Some(id.as_bytes()),
            }
        }
    }
}

/// Sends an empty record keyed `key` to partition 0 of `topic`.
fn send<C: ProducerContext<DeliveryOpaque = ()> + 'static>(
    producer: &ThreadedProducer<C>,
    topic: &str,
    key: &[u8],
) -> Result<()> {
    let record = BaseRecord::<[u8], [u8]>::to(topic)
        .key(key)
        .payload(&[])
        .partition(0);
    send_waiting(producer, record)
}

/// Sends `record`, waiting while the producer's local queue is full (back-pressure); the
/// sink sends its records through it too.
pub(crate) fn send_waiting<C: ProducerContext<DeliveryOpaque = ()> + 'static>(
    producer: &ThreadedProducer<C>,
    mut record: BaseRecord<'_, [u8], [u8]>,
) -> Result<()> {
    loop {
        match producer.send(record) {
            Ok(()) => return Ok(()),
            Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), r)) => {
                record = r;
                std::thread::sleep(Duration::from_millis(5));
            }
            Err((e, r)) => {
                return Err(Error::client(format!("send a record to `{}`", r.topic))(e));
            }
        }
    }
}
