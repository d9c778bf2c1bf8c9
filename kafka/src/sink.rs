//! [`KafkaSink`]: a two-phase [`Sink`] of the runtime writing Kafka records, with Flink's
//! three delivery guarantees (its docs say how each works, and how exactly once survives a
//! crash).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rdkafka::client::ClientContext;
use rdkafka::error::KafkaError;
use rdkafka::producer::{BaseRecord, DeliveryResult, Producer, ProducerContext, ThreadedProducer};
use rdkafka::ClientConfig;
use typeinfo::TypeInfo;
use typeinfo_runtime::{RuntimeContext, Sink, SinkContext, SinkWriter};

use crate::commit_log::{send_waiting, CommitLog};
use crate::error::{Error, Result};
use crate::format::ValueSerializer;

/// What the sink promises about the records in Kafka after a failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeliveryGuarantee {
    /// Nothing: records in flight at a failure may be lost.
    None,
    /// Every record is in Kafka, some maybe twice (flush at every checkpoint).
    AtLeastOnce,
    /// Every record once, for `read_committed` consumers (a transaction per checkpoint).
    ExactlyOnce,
}

/// A prepared transaction of the exactly-once sink: committed when its checkpoint completes.
#[derive(Debug, Clone, PartialEq, Eq, TypeInfo)]
pub struct KafkaCommittable {
    /// The transaction's transactional id.
    pub transactional_id: String,
    /// A copy of the transaction's records, which a process that does not hold the
    /// transaction sends again if the commit log shows it was not committed (see the
    /// [`KafkaSink`]); `None` where the copy outgrew the sink's budget.
    pub records: Option<Vec<StagedRecord>>,
}

/// A record as the exactly-once sink sent it, kept until its transaction commits.
#[derive(Debug, Clone, PartialEq, Eq, TypeInfo)]
pub struct StagedRecord {
    /// The topic.
    pub topic: String,
    /// The partition the sink's partitioner chose (`None`: the client's partitioner).
    pub partition: Option<i32>,
    /// The key bytes.
    pub key: Option<Vec<u8>>,
    /// The value bytes.
    pub value: Vec<u8>,
    /// The record's timestamp.
    pub timestamp: Option<i64>,
}

impl StagedRecord {
    /// The bytes the copy holds (for the sink's budget).
    fn size(&self) -> usize {
        self.topic.len() + self.key.as_ref().map_or(0, Vec::len) + self.value.len() + 32
    }
}

type TopicFn<T> = dyn Fn(&T) -> String + Send + Sync;
type PartitionFn<T> = dyn Fn(&T, Option<&[u8]>, i32) -> i32 + Send + Sync;

/// The options every writer of the sink shares.
struct SinkConfig<T> {
    client: Vec<(String, String)>,
    topic: Box<TopicFn<T>>,
    value: Box<dyn ValueSerializer<T>>,
    key: Option<Box<dyn ValueSerializer<T>>>,
    partitioner: Option<Box<PartitionFn<T>>>,
    guarantee: DeliveryGuarantee,
    prefix: Option<String>,
    lingering: u64,
    timeout: Duration,
    /// Exactly once: the commit log's topic (default `<prefix>-commits`).
    log_topic: Option<String>,
    /// Exactly once: the bytes of records a writer copies per open transaction.
    copy_budget: usize,
    /// Exactly once: the commit log (made by `build`).
    log: Option<CommitLog>,
}

/// Builds a [`KafkaSink`].
pub struct KafkaSinkBuilder<T> {
    config: SinkConfig<T>,
}

impl<T> std::fmt::Debug for KafkaSinkBuilder<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KafkaSinkBuilder")
            .field("guarantee", &self.config.guarantee)
            .field("prefix", &self.config.prefix)
            .finish_non_exhaustive()
    }
}

/// Kafka as a two-phase sink of the runtime, with Flink's three delivery guarantees
/// ([`DeliveryGuarantee`]).
///
/// - **None**: records are sent as they come; nothing waits for the broker (the end of the
///   input still flushes).
/// - **At least once**: at every checkpoint the subtask flushes its producer and fails if
///   the broker refused a record, so every record before a completed checkpoint is in Kafka;
///   records after it may be written again by a restored job.
/// - **Exactly once**: one Kafka transaction per subtask and checkpoint, with the
///   transactional id `<prefix>-<subtask>-<checkpoint>` (the checkpoint its first record
///   belongs to). At the checkpoint the transaction gets its marker in the commit log, is
///   flushed and handed over as the committable ([`KafkaCommittable`], with a copy of its
///   records); when the checkpoint completes, [`Sink::commit`] commits it. A restored or
///   restarted job aborts what no completed checkpoint covered: transactions this process
///   prepared and never committed ([`Sink::recover`]), and, when a writer first sees a
///   checkpoint `c`, the transactions an earlier run may have left open under the ids of
///   checkpoints `c ..= c + lingering`. Consumers of the output read with
///   `isolation.level=read_committed`.
///
/// # Exactly once after a crash: the commit log
///
/// Flink's committer commits a transaction prepared by another process (after a crash, or
/// on another host) by resuming it from its producer id and epoch. librdkafka has no such
/// call: a transaction can only be committed by the producer that opened it. So the sink
/// commits from the producer it kept when it can (the normal case, and a restart inside the
/// process), and otherwise, when a restored job commits its checkpoint's committables, it
/// finishes the transaction the crashed process prepared this way:
/// 1. it initializes the transactional id and aborts whatever the dead producer left open
///    under it (Kafka's `InitProducerId` does that itself; a probe transaction in the commit
///    log does it on brokers that do not fence, such as the tests' noida-db);
/// 2. it reads the commit log (`read_committed`): the transaction's marker is there exactly
///    when the transaction committed before the crash, and then nothing is sent;
/// 3. otherwise it sends the committable's copy of the records again, with the marker, in a
///    new transaction under the same id, and commits it.
///
/// Each transaction is thus committed once whichever moment a crash hits. The price: each
/// writer keeps a copy of its open transaction's records (memory, and checkpoint size, in
/// proportion to the records per checkpoint interval), bounded by
/// [`transaction_copy_budget`](KafkaSinkBuilder::transaction_copy_budget) (64 MiB by
/// default): a transaction that outgrows it keeps no copy, and a crash between its
/// checkpoint's completion and its commit loses its records (the sink says so on stderr),
/// as Flink's would not. The commit log (`<prefix>-commits` by default,
/// [`commit_log_topic`](KafkaSinkBuilder::commit_log_topic)) gets one small record per
/// subtask and checkpoint.
///
/// In a job of several processes the committables are committed in process 0 (the
/// runtime's coordinator), which holds only its own producers: the exactly-once sink is
/// meant for jobs in one process.
///
/// # Examples
///
/// ```no_run
/// use typeinfo_kafka::{DeliveryGuarantee, KafkaSink, Utf8};
/// use typeinfo_runtime::StreamExecutionEnvironment;
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let sink = KafkaSink::builder("127.0.0.1:9092", Utf8)
///     .topic("lines")
///     .delivery_guarantee(DeliveryGuarantee::AtLeastOnce)
///     .build()?;
/// let env = StreamExecutionEnvironment::new();
/// env.from_collection(vec!["a".to_owned(), "b".to_owned()]).sink_to(sink);
/// env.execute("write lines")?;
/// # Ok(())
/// # }
/// ```
pub struct KafkaSink<T> {
    config: Arc<SinkConfig<T>>,
    /// Exactly once: the producers of prepared transactions, by transactional id, until
    /// their checkpoint completes.
    prepared: Arc<Mutex<HashMap<String, Arc<Client>>>>,
    /// The ids committed last (a repeated commit of one is expected, not a lost one).
    committed: Arc<Mutex<VecDeque<String>>>,
}

impl<T> std::fmt::Debug for KafkaSink<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KafkaSink")
            .field("guarantee", &self.config.guarantee)
            .finish_non_exhaustive()
    }
}

impl KafkaSink<()> {
    /// A builder for a sink writing to the brokers `bootstrap_servers`, each record's value
    /// made by `value`.
    pub fn builder<T: 'static>(
        bootstrap_servers: &str,
        value: impl ValueSerializer<T>,
    ) -> KafkaSinkBuilder<T> {
        KafkaSinkBuilder {
            config: SinkConfig {
                client: vec![("bootstrap.servers".into(), bootstrap_servers.into())],
                topic: Box::new(|_| String::new()),
                value: Box::new(value),
                key: None,
                partitioner: None,
                guarantee: DeliveryGuarantee::AtLeastOnce,
                prefix: None,
                lingering: 4,
                timeout: Duration::from_secs(60),
                log_topic: None,
                copy_budget: 64 << 20,
                log: None,
            },
        }
    }
}

impl<T: 'static> KafkaSinkBuilder<T> {
    /// Writes every record to `topic`.
    #[must_use]
    pub fn topic(mut self, topic: &str) -> Self {
        let topic = topic.to_owned();
        self.config.topic = Box::new(move |_| topic.clone());
        self
    }

    /// Writes each record to the topic `select` names.
    #[must_use]
    pub fn topic_selector(mut self, select: impl Fn(&T) -> String + Send + Sync + 'static) -> Self {
        self.config.topic = Box::new(select);
        self
    }

    /// Gives records a key (Kafka's default partitioner then hashes it).
    #[must_use]
    pub fn key_serializer(mut self, key: impl ValueSerializer<T>) -> Self {
        self.config.key = Some(Box::new(key));
        self
    }

    /// Chooses each record's partition: `partition(value, key, partitions)` must be in
    /// `0..partitions`.
    #[must_use]
    pub fn partitioner(
        mut self,
        partition: impl Fn(&T, Option<&[u8]>, i32) -> i32 + Send + Sync + 'static,
    ) -> Self {
        self.config.partitioner = Some(Box::new(partition));
        self
    }

    /// The delivery guarantee (default: at least once).
    #[must_use]
    pub fn delivery_guarantee(mut self, guarantee: DeliveryGuarantee) -> Self {
        self.config.guarantee = guarantee;
        self
    }

    /// The prefix of the transactional ids (exactly once; required there). Two jobs writing
    /// the same cluster need different prefixes.
    #[must_use]
    pub fn transactional_id_prefix(mut self, prefix: &str) -> Self {
        self.config.prefix = Some(prefix.to_owned());
        self
    }

    /// Exactly once: how many checkpoints past the first one a writer sees it aborts the
    /// transactions of an earlier run under (default 4).
    #[must_use]
    pub fn lingering_transactions(mut self, checkpoints: u64) -> Self {
        self.config.lingering = checkpoints;
        self
    }

    /// Exactly once: the topic of the commit log (default `<prefix>-commits`; created with
    /// one partition when missing). Jobs with different prefixes may share one.
    #[must_use]
    pub fn commit_log_topic(mut self, topic: &str) -> Self {
        self.config.log_topic = Some(topic.to_owned());
        self
    }

    /// Exactly once: how many bytes of records a writer keeps a copy of per open
    /// transaction, so that another process can send them again after a crash (default
    /// 64 MiB; 0 keeps none). A transaction whose records outgrow it is committed as
    /// usual, but a crash between its checkpoint's completion and its commit loses it (as
    /// with no copy at all; the sink says so on stderr).
    #[must_use]
    pub fn transaction_copy_budget(mut self, bytes: usize) -> Self {
        self.config.copy_budget = bytes;
        self
    }

    /// Sets a librdkafka producer property (`linger.ms`, `compression.type`,
    /// `transaction.timeout.ms`, security options, ...).
    #[must_use]
    pub fn property(mut self, key: &str, value: &str) -> Self {
        self.config.client.push((key.to_owned(), value.to_owned()));
        self
    }

    /// How long a flush, a transaction's start or its commit may take (default 60 s).
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.config.timeout = timeout;
        self
    }

    /// The sink.
    ///
    /// # Errors
    ///
    /// Exactly once without a transactional id prefix.
    pub fn build(mut self) -> Result<KafkaSink<T>> {
        if self.config.guarantee == DeliveryGuarantee::ExactlyOnce {
            let Some(prefix) = self.config.prefix.as_deref().filter(|p| !p.is_empty()) else {
                return Err(Error::Config(
                    "an exactly-once Kafka sink needs a transactional id prefix".into(),
                ));
            };
            let topic = self
                .config
                .log_topic
                .clone()
                .unwrap_or_else(|| format!("{prefix}-commits"));
            self.config.log = Some(CommitLog::new(
                topic,
                self.config.client.clone(),
                self.config.timeout,
            ));
        }
        Ok(KafkaSink {
            config: Arc::new(self.config),
            prepared: Arc::default(),
            committed: Arc::default(),
        })
    }
}

/// Remembers the first record the broker refused.
#[derive(Default)]
struct DeliveryContext {
    failed: Mutex<Option<(String, KafkaError)>>,
}

impl ClientContext for DeliveryContext {}

impl ProducerContext for DeliveryContext {
    type DeliveryOpaque = ();
    fn delivery(&self, result: &DeliveryResult<'_>, _: ()) {
        if let Err((error, message)) = result {
            let mut failed = self.failed.lock().unwrap_or_else(|p| p.into_inner());
            if failed.is_none() {
                use rdkafka::Message;
                *failed = Some((message.topic().to_owned(), error.clone()));
            }
        }
    }
}

type Client = ThreadedProducer<DeliveryContext>;

impl<T> SinkConfig<T> {
    /// A producer with the sink's properties, transactional under `transactional_id`.
    fn producer(&self, transactional_id: Option<&str>) -> Result<Client> {
        let mut config = ClientConfig::new();
        for (k, v) in &self.client {
            config.set(k, v);
        }
        if let Some(id) = transactional_id {
            config.set("transactional.id", id);
        }
        config
            .create_with_context(DeliveryContext::default())
            .map_err(Error::client("create a producer"))
    }

    /// A transactional producer with its transactions initialized (which aborts an open
    /// transaction of an earlier producer with the same id).
    fn transactional(&self, id: &str) -> Result<Client> {
        let producer = self.producer(Some(id))?;
        producer
            .init_transactions(self.timeout)
            .map_err(Error::client(format!("initialize transactions of `{id}`")))?;
        Ok(producer)
    }

    /// The commit log (exactly once).
    fn log(&self) -> Result<&CommitLog> {
        self.log
            .as_ref()
            .ok_or_else(|| Error::Config("the sink is not exactly-once".into()))
    }

    /// A transactional producer for `id` after aborting what an earlier producer left open
    /// under it (see [`CommitLog::abort_leftovers`]).
    fn transactional_clean(&self, id: &str) -> Result<Client> {
        let producer = self.transactional(id)?;
        self.log()?.abort_leftovers(&producer, id)?;
        Ok(producer)
    }

    /// Commits, from a process that does not hold it, the transaction `id` another producer
    /// prepared: what it left open is aborted, and `records` are sent again in a new
    /// transaction unless the commit log shows the transaction committed.
    fn commit_elsewhere(&self, id: &str, records: Option<&[StagedRecord]>) -> Result<()> {
        let producer = self.transactional_clean(id)?;
        let log = self.log()?;
        if log.contains(id)? {
            return Ok(());
        }
        let Some(records) = records else {
            eprintln!(
                "typeinfo-kafka: the transaction `{id}` was prepared by an earlier process and \
                 not committed; its records outgrew the sink's copy budget, so they are lost"
            );
            return Ok(());
        };
        eprintln!(
            "typeinfo-kafka: the transaction `{id}` was prepared by an earlier process and not \
             committed: sending its {} records again",
            records.len()
        );
        producer
            .begin_transaction()
            .map_err(Error::client(format!("begin a transaction of `{id}`")))?;
        for r in records {
            let mut record = BaseRecord::<[u8], [u8]>::to(&r.topic).payload(&r.value);
            if let Some(k) = &r.key {
                record = record.key(k);
            }
            if let Some(p) = r.partition {
                record = record.partition(p);
            }
            if let Some(ts) = r.timestamp {
                record = record.timestamp(ts);
            }
            send_waiting(&producer, record)?;
        }
        log.mark(&producer, id)?;
        flush(&producer, self.timeout)?;
        producer
            .commit_transaction(self.timeout)
            .map_err(Error::client(format!("commit the transaction of `{id}`")))
    }
}

/// Fails with the first record the broker refused, if any.
fn delivered(producer: &Client) -> Result<()> {
    let failed = producer
        .context()
        .failed
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .take();
    match failed {
        Some((topic, source)) => Err(Error::Delivery { topic, source }),
        None => Ok(()),
    }
}

/// Flushes a producer and fails with the first record the broker refused.
fn flush(producer: &Client, timeout: Duration) -> Result<()> {
    producer
        .flush(timeout)
        .map_err(Error::client("flush the producer"))?;
    delivered(producer)
}

/// Writes one subtask's records of a [`KafkaSink`].
pub struct KafkaSinkWriter<T> {
    config: Arc<SinkConfig<T>>,
    prepared: Arc<Mutex<HashMap<String, Arc<Client>>>>,
    subtask: usize,
    /// None / at least once: the producer; exactly once: the open transaction's, with its id.
    producer: Option<(String, Client)>,
    /// Exactly once: whether the transactions of an earlier run were aborted.
    swept: bool,
    /// Exactly once: the copy of the open transaction's records (`None` past the budget).
    staged: Option<Vec<StagedRecord>>,
    /// The bytes in `staged`.
    staged_bytes: usize,
    /// Partitions per topic (for a partitioner).
    partitions: HashMap<String, i32>,
    records_out: typeinfo_runtime::Counter,
}

impl<T> std::fmt::Debug for KafkaSinkWriter<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KafkaSinkWriter")
            .field("subtask", &self.subtask)
            .field("transaction", &self.producer.as_ref().map(|p| &p.0))
            .finish_non_exhaustive()
    }
}

impl<T: 'static> KafkaSinkWriter<T> {
    fn exactly_once(&self) -> bool {
        self.config.guarantee == DeliveryGuarantee::ExactlyOnce
    }

    fn transactional_id(&self, checkpoint: u64) -> String {
        let prefix = self.config.prefix.as_deref().unwrap_or("typeinfo");
        format!("{prefix}-{}-{checkpoint}", self.subtask)
    }

    /// Aborts what an earlier run may have left open under the ids of checkpoints
    /// `from ..= from + lingering`.
    fn sweep(&mut self, from: u64) -> Result<()> {
        if self.swept || from == u64::MAX {
            return Ok(());
        }
        self.swept = true;
        for checkpoint in from..=from.saturating_add(self.config.lingering) {
            drop(
                self.config
                    .transactional_clean(&self.transactional_id(checkpoint))?,
            );
        }
        Ok(())
    }

    /// The producer a record of `checkpoint` goes to (opening a transaction if needed).
    fn producer(&mut self, checkpoint: u64) -> Result<&Client> {
        if self.producer.is_none() {
            let (id, producer) = if self.exactly_once() {
                self.sweep(checkpoint)?;
                let id = self.transactional_id(checkpoint);
                let producer = self.config.transactional(&id)?;
                producer
                    .begin_transaction()
                    .map_err(Error::client(format!("begin a transaction of `{id}`")))?;
                (id, producer)
            } else {
                (String::new(), self.config.producer(None)?)
            };
            self.producer = Some((id, producer));
        }
        match &self.producer {
            Some((_, producer)) => Ok(producer),
            None => Err(Error::Config("no producer".into())),
        }
    }

    /// The partition `partitioner` chooses for `value` in `topic`.
    fn partition(&mut self, topic: &str, value: &T, key: Option<&[u8]>) -> Result<Option<i32>> {
        let Some(partitioner) = &self.config.partitioner else {
            return Ok(None);
        };
        let count = match self.partitions.get(topic) {
            Some(n) => *n,
            None => {
                let producer = self.config.producer(None)?;
                let metadata = producer
                    .client()
                    .fetch_metadata(Some(topic), self.config.timeout)
                    .map_err(Error::client(format!("read the metadata of `{topic}`")))?;
                let n = metadata
                    .topics()
                    .first()
                    .map_or(0, |t| t.partitions().len()) as i32;
                self.partitions.insert(topic.to_owned(), n);
                n
            }
        };
        let p = partitioner(value, key, count);
        if !(0..count).contains(&p) {
            return Err(Error::Config(format!(
                "the partitioner chose partition {p} of topic `{topic}`, which has {count}"
            )));
        }
        Ok(Some(p))
    }

    fn send(&mut self, value: &T, ctx: &SinkContext) -> Result<()> {
        let topic = (self.config.topic)(value);
        let serialize_error = |message| Error::Serialize {
            topic: topic.clone(),
            message,
        };
        let payload = self
            .config
            .value
            .serialize(value)
            .map_err(serialize_error)?;
        let key = match &self.config.key {
            Some(k) => Some(k.serialize(value).map_err(serialize_error)?),
            None => None,
        };
        let partition = self.partition(&topic, value, key.as_deref())?;
        let producer = self.producer(ctx.checkpoint())?;
        delivered(producer)?;
        let mut record = BaseRecord::<[u8], [u8]>::to(&topic).payload(&payload);
        if let Some(k) = &key {
            record = record.key(k);
        }
        if let Some(p) = partition {
            record = record.partition(p);
        }
        if let Some(ts) = ctx.timestamp() {
            record = record.timestamp(ts);
        }
        send_waiting(producer, record)?;
        if self.exactly_once() {
            self.stage(StagedRecord {
                topic,
                partition,
                key,
                value: payload,
                timestamp: ctx.timestamp(),
            });
        }
        Ok(())
    }

    /// Keeps a copy of a record of the open transaction, or drops the whole copy once it
    /// outgrows the budget.
    fn stage(&mut self, record: StagedRecord) {
        let Some(staged) = &mut self.staged else {
            return;
        };
        self.staged_bytes += record.size();
        if self.staged_bytes > self.config.copy_budget {
            self.staged = None;
        } else {
            staged.push(record);
        }
    }
}

impl<T: 'static> SinkWriter<T> for KafkaSinkWriter<T> {
    type Committable = KafkaCommittable;

    fn write(&mut self, value: T, ctx: &SinkContext) -> typeinfo_runtime::Result<()> {
        self.send(&value, ctx)?;
        self.records_out.inc();
        Ok(())
    }

    fn prepare_commit(
        &mut self,
        checkpoint: u64,
    ) -> typeinfo_runtime::Result<Vec<KafkaCommittable>> {
        if !self.exactly_once() {
            if let Some((_, producer)) = &self.producer {
                if self.config.guarantee == DeliveryGuarantee::AtLeastOnce || checkpoint == u64::MAX
                {
                    flush(producer, self.config.timeout)?;
                } else {
                    delivered(producer)?;
                }
            }
            return Ok(Vec::new());
        }
        let Some((id, producer)) = self.producer.take() else {
            self.sweep(checkpoint)?;
            return Ok(Vec::new());
        };
        self.config.log()?.mark(&producer, &id)?;
        flush(&producer, self.config.timeout)?;
        self.prepared
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id.clone(), Arc::new(producer));
        let records = self.staged.replace(Vec::new());
        self.staged_bytes = 0;
        Ok(vec![KafkaCommittable {
            transactional_id: id,
            records,
        }])
    }
}

impl<T> Drop for KafkaSinkWriter<T> {
    /// An open transaction of a failed or cancelled job is aborted at once (so that
    /// `read_committed` consumers are not held back until it times out).
    fn drop(&mut self) {
        if self.config.guarantee == DeliveryGuarantee::ExactlyOnce {
            if let Some((_, producer)) = self.producer.take() {
                let _ = producer.abort_transaction(Duration::from_secs(5));
            }
        }
    }
}

impl<T: 'static> Sink<T> for KafkaSink<T> {
    type Writer = KafkaSinkWriter<T>;
    type Committable = KafkaCommittable;

    fn writer(&self, ctx: &RuntimeContext) -> typeinfo_runtime::Result<KafkaSinkWriter<T>> {
        Ok(KafkaSinkWriter {
            config: Arc::clone(&self.config),
            prepared: Arc::clone(&self.prepared),
            subtask: ctx.subtask_index(),
            producer: None,
            swept: false,
            staged: Some(Vec::new()),
            staged_bytes: 0,
            partitions: HashMap::new(),
            records_out: ctx.metrics().counter("kafkaRecordsOut"),
        })
    }

    /// Commits a prepared transaction. One this process does not hold was committed before
    /// (a commit repeated by a later checkpoint or a restore), or was prepared by another
    /// process, which librdkafka cannot resume (see the [`KafkaSink`]).
    fn commit(&self, committable: KafkaCommittable) -> typeinfo_runtime::Result<()> {
        let id = committable.transactional_id;
        let producer = self
            .prepared
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&id);
        let mut committed = self.committed.lock().unwrap_or_else(|p| p.into_inner());
        match producer {
            Some(producer) => match producer.commit_transaction(self.config.timeout) {
                Ok(()) => {}
                Err(e) if committable.records.is_none() => {
                    // Kept for the retry (the broker may be back by then): librdkafka lets
                    // the producer that prepared a transaction commit it again after a
                    // retriable error; a restart's `recover` aborts it otherwise.
                    self.prepared
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .insert(id.clone(), producer);
                    return Err(
                        Error::client(format!("commit the transaction of `{id}`"))(e).into(),
                    );
                }
                Err(e) => {
                    // The producer may be unusable for good (a broker that lost its
                    // transaction state over a restart): finish the transaction as another
                    // process would, from the committable's copy.
                    eprintln!(
                        "typeinfo-kafka: committing the transaction `{id}` failed ({e}); \
                         finishing it with a new producer"
                    );
                    drop(producer);
                    self.config
                        .commit_elsewhere(&id, committable.records.as_deref())?;
                }
            },
            None if committed.contains(&id) => return Ok(()),
            None => self
                .config
                .commit_elsewhere(&id, committable.records.as_deref())?,
        }
        if committed.len() >= 1024 {
            committed.pop_front();
        }
        committed.push_back(id);
        Ok(())
    }

    /// Aborts every transaction this process prepared that no completed checkpoint covered
    /// (a restart inside the process; the restored job writes their records again).
    fn recover(&self) -> typeinfo_runtime::Result<()> {
        let open: Vec<(String, Arc<Client>)> = self
            .prepared
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .drain()
            .collect();
        for (id, producer) in open {
            producer
                .abort_transaction(self.config.timeout)
                .map_err(Error::client(format!("abort the transaction of `{id}`")))?;
        }
        Ok(())
    }
}
