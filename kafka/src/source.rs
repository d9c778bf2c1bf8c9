//! [`KafkaSource`]: Kafka topics as a [`Source`] of the runtime, one split per partition
//! (its docs say how splits, offsets, watermarks and discovery work).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::message::{Message, Timestamp};
use rdkafka::{ClientConfig, Offset, TopicPartitionList};
use typeinfo::TypeInfo;
use typeinfo_runtime::{Boundedness, ReadStatus, Source, SourceOutput, SplitReader};

use crate::error::{Error, Result};
use crate::record::{ConsumerRecord, KeyValue, RecordDeserializer, ValueOnly};

/// Where a partition starts when the job does not restore its position (Flink's
/// `OffsetsInitializer`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartingOffsets {
    /// The earliest offset the partition still has.
    Earliest,
    /// The offset after the last record when the reader opens (only new records).
    Latest,
    /// The consumer group's committed offset (needs [`KafkaSourceBuilder::group_id`]); a
    /// partition without one starts at `fallback` ([`Earliest`](Self::Earliest) or
    /// [`Latest`](Self::Latest)).
    Committed {
        /// Where a partition without a committed offset starts.
        fallback: OffsetReset,
    },
    /// The first record whose timestamp is at or after this one (ms since the epoch); the
    /// end of the partition when there is none.
    Timestamp(i64),
}

/// Where a partition without a committed offset starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OffsetReset {
    /// The earliest offset.
    Earliest,
    /// The latest offset.
    Latest,
}

/// What the source does with a record that does not deserialize.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnDeserializationError {
    /// Fail the job with an error naming topic, partition and offset (the default).
    #[default]
    Fail,
    /// Skip the record and count it ([`KafkaSource::skipped_records`]).
    Skip,
    /// Send it to the side output [`BadRecord::tag`](crate::BadRecord::tag) (topic,
    /// partition, offset, timestamp, key and value bytes, and the deserializer's message),
    /// and count it ([`KafkaSource::skipped_records`]). Flink's Kafka source has no such
    /// option; its users write a deserializer that never fails.
    SideOutput,
}

/// Which topics the source reads.
#[derive(Clone)]
enum Topics {
    Names(Vec<String>),
    Filter(Arc<dyn Fn(&str) -> bool + Send + Sync>),
}

/// One partition of a topic: a split of the source.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct KafkaSplit {
    /// The topic.
    pub topic: String,
    /// The partition.
    pub partition: i32,
}

/// Where a split's reader is: the offset of the next record, and where it stops when the
/// source is bounded (in checkpoints, with typeinfo's serializer).
#[derive(Debug, Clone, PartialEq, Eq, TypeInfo)]
pub struct KafkaPosition {
    /// The offset of the next record to read.
    pub offset: i64,
    /// Bounded mode: the reader finishes at this offset.
    pub stopping_offset: Option<i64>,
}

/// The options every reader of the source shares.
struct SourceConfig {
    client: Vec<(String, String)>,
    topics: Topics,
    starting: StartingOffsets,
    bounded: bool,
    on_error: OnDeserializationError,
    timeout: Duration,
    skipped: Arc<AtomicU64>,
    /// Commit each split's offset to the consumer group when a checkpoint completes (only
    /// with a group the user named).
    commit_on_checkpoint: bool,
    /// How often to look for new partitions (zero: never).
    discovery: Duration,
}

/// Builds a [`KafkaSource`].
pub struct KafkaSourceBuilder<D> {
    config: SourceConfig,
    group: Option<String>,
    deserializer: D,
}

impl<D> std::fmt::Debug for KafkaSourceBuilder<D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KafkaSourceBuilder")
            .field("starting", &self.config.starting)
            .field("bounded", &self.config.bounded)
            .finish_non_exhaustive()
    }
}

/// Kafka topics as a source of the runtime, one split per partition.
///
/// - **Splits**: every partition of the topics (named, or every topic a filter accepts),
///   ordered by topic and partition, listed when the job starts; split `i` goes to subtask
///   `i % parallelism` (the runtime's rule). Each is named `topic-partition`, and a
///   checkpoint holds its offset under that name, so a restore finds it whatever else the
///   topics gained in between.
/// - **Partition discovery** (Flink's `partition.discovery.interval.ms`, every 5 minutes by
///   default, [`KafkaSourceBuilder::partition_discovery_interval`], not in bounded mode):
///   each subtask lists the topics' partitions again and reads the new ones that fall to it
///   (by the runtime's rule for discovered splits), from their earliest offset, as Flink
///   does; a topic created later that the filter accepts is found the same way. After a
///   restore, a partition the checkpoint does not hold starts at its earliest offset too.
/// - **Positions**: a split's position is the offset of the next record to read (and, when
///   bounded, the offset it stops at); checkpoints hold it, and a restore assigns the
///   partition at exactly that offset: no record is skipped or read twice.
/// - **Starting offsets** ([`StartingOffsets`]) are resolved to a number when a split's reader
///   opens (earliest and latest from the partition's watermarks, a timestamp through
///   `ListOffsets`, the group's committed offsets with a fallback), so the position of a
///   checkpoint taken before the first record is exact too.
/// - **Bounded** mode stops each partition at the offset that was latest when its reader
///   first opened (kept in the position, so a restore stops at the same place); the source is
///   then [`Boundedness::Bounded`] and can run in batch mode.
/// - **Timestamps**: each element carries its record's Kafka timestamp; the stream's
///   [`WatermarkStrategy`](typeinfo_runtime::WatermarkStrategy) turns them into per-partition
///   watermarks with idleness, as the runtime does for every source's splits.
/// - **Bad records**: a record the deserializer refuses fails the job, naming topic,
///   partition and offset ([`OnDeserializationError::Fail`], the default), or is skipped
///   and counted ([`OnDeserializationError::Skip`], [`KafkaSource::skipped_records`]), or
///   sent to a side output ([`OnDeserializationError::SideOutput`], [`crate::BadRecord`]).
///
///
/// # Examples
///
/// ```no_run
/// use typeinfo_kafka::{KafkaSource, StartingOffsets, Utf8};
/// use typeinfo_runtime::{StreamExecutionEnvironment, WatermarkStrategy};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let source = KafkaSource::builder("127.0.0.1:9092")
///     .topics(["clicks"])
///     .starting_offsets(StartingOffsets::Earliest)
///     .bounded()
///     .value_deserializer(Utf8)
///     .build()?;
/// let env = StreamExecutionEnvironment::new();
/// let lines = env.from_source(source, WatermarkStrategy::no_watermarks(), "clicks").collect();
/// env.execute("read clicks")?;
/// println!("{:?}", lines.take());
/// # Ok(())
/// # }
/// ```
pub struct KafkaSource<D> {
    config: Arc<SourceConfig>,
    deserializer: Arc<D>,
}

impl<D> std::fmt::Debug for KafkaSource<D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KafkaSource")
            .field("starting", &self.config.starting)
            .field("bounded", &self.config.bounded)
            .finish_non_exhaustive()
    }
}

impl KafkaSource<()> {
    /// A builder for a source reading from the brokers `bootstrap_servers` (`host:port`,
    /// comma-separated).
    pub fn builder(bootstrap_servers: &str) -> KafkaSourceBuilder<()> {
        KafkaSourceBuilder {
            config: SourceConfig {
                client: vec![("bootstrap.servers".into(), bootstrap_servers.into())],
                topics: Topics::Names(Vec::new()),
                starting: StartingOffsets::Earliest,
                bounded: false,
                on_error: OnDeserializationError::Fail,
                timeout: Duration::from_secs(30),
                skipped: Arc::new(AtomicU64::new(0)),
                commit_on_checkpoint: true,
                discovery: Duration::from_secs(300),
            },
            group: None,
            deserializer: (),
        }
    }
}

impl<D> KafkaSourceBuilder<D> {
    /// Reads these topics (every partition of each).
    #[must_use]
    pub fn topics<S: Into<String>>(mut self, topics: impl IntoIterator<Item = S>) -> Self {
        self.config.topics = Topics::Names(topics.into_iter().map(Into::into).collect());
        self
    }

    /// Reads every topic whose name `accept` accepts (Flink's topic pattern; internal topics,
    /// whose names start with `__`, are never read), as they are when the job starts.
    #[must_use]
    pub fn topic_filter(mut self, accept: impl Fn(&str) -> bool + Send + Sync + 'static) -> Self {
        self.config.topics = Topics::Filter(Arc::new(accept));
        self
    }

    /// Where partitions start when no checkpoint says (default: earliest).
    #[must_use]
    pub fn starting_offsets(mut self, starting: StartingOffsets) -> Self {
        self.config.starting = starting;
        self
    }

    /// How often each subtask looks for partitions added to the topics, or topics the
    /// [`topic_filter`](Self::topic_filter) accepts that were created, while the job runs
    /// (Flink's `partition.discovery.interval.ms`; default 5 minutes; `Duration::ZERO`
    /// turns it off; never in [`bounded`](Self::bounded) mode). New partitions are read from
    /// their earliest offset.
    #[must_use]
    pub fn partition_discovery_interval(mut self, interval: Duration) -> Self {
        self.config.discovery = interval;
        self
    }

    /// Stops every partition at the offset latest when its reader first opened.
    #[must_use]
    pub fn bounded(mut self) -> Self {
        self.config.bounded = true;
        self
    }

    /// The consumer group: where [`StartingOffsets::Committed`] starts, and where the
    /// source commits each partition's offset when a checkpoint completes (see
    /// [`commit_offsets_on_checkpoint`](Self::commit_offsets_on_checkpoint)).
    #[must_use]
    pub fn group_id(mut self, group: &str) -> Self {
        self.group = Some(group.to_owned());
        self
    }

    /// Whether each partition's offset in a completed checkpoint is committed to the
    /// consumer group (Flink's `commit.offsets.on.checkpoint`, on by default; only with a
    /// [`group_id`](Self::group_id)). The commits are for monitoring (consumer lag) and for
    /// [`StartingOffsets::Committed`] in a new job; a restore reads its offsets from the
    /// checkpoint, never from the group. A commit that fails is said on stderr and does not
    /// fail the job. In a job of several processes only the readers of process 0 commit.
    #[must_use]
    pub fn commit_offsets_on_checkpoint(mut self, commit: bool) -> Self {
        self.config.commit_on_checkpoint = commit;
        self
    }

    /// What to do with a record that does not deserialize (default: fail the job).
    #[must_use]
    pub fn on_deserialization_error(mut self, on_error: OnDeserializationError) -> Self {
        self.config.on_error = on_error;
        self
    }

    /// Sets a librdkafka consumer property (`isolation.level`, `fetch.max.bytes`,
    /// security options, ...). The source sets `enable.auto.commit=false` itself.
    #[must_use]
    pub fn property(mut self, key: &str, value: &str) -> Self {
        self.config.client.push((key.to_owned(), value.to_owned()));
        self
    }

    /// How long metadata and offset look-ups may take (default 30 s).
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.config.timeout = timeout;
        self
    }

    /// Makes elements with `deserializer` from whole records.
    pub fn deserializer<R: RecordDeserializer>(self, deserializer: R) -> KafkaSourceBuilder<R> {
        KafkaSourceBuilder {
            config: self.config,
            group: self.group,
            deserializer,
        }
    }

    /// Makes elements of the records' values alone.
    pub fn value_deserializer<V: crate::ValueDeserializer>(
        self,
        value: V,
    ) -> KafkaSourceBuilder<ValueOnly<V>> {
        self.deserializer(ValueOnly(value))
    }

    /// Makes `(Option<key>, value)` elements.
    pub fn key_value_deserializer<K: crate::ValueDeserializer, V: crate::ValueDeserializer>(
        self,
        key: K,
        value: V,
    ) -> KafkaSourceBuilder<KeyValue<K, V>> {
        self.deserializer(KeyValue(key, value))
    }
}

impl<D: RecordDeserializer> KafkaSourceBuilder<D> {
    /// The source.
    ///
    /// # Errors
    ///
    /// No topic was named, or committed offsets were asked for without a group.
    pub fn build(mut self) -> Result<KafkaSource<D>> {
        if matches!(&self.config.topics, Topics::Names(t) if t.is_empty()) {
            return Err(Error::Config(
                "a Kafka source needs topics (`topics` or `topic_filter`)".into(),
            ));
        }
        match &self.group {
            Some(group) => self.config.client.push(("group.id".into(), group.clone())),
            None if matches!(self.config.starting, StartingOffsets::Committed { .. }) => {
                return Err(Error::Config(
                    "starting from committed offsets needs a consumer group (`group_id`)".into(),
                ))
            }
            // librdkafka's consumer refuses `assign` without a group; the source never
            // joins it (no subscription) and commits nothing to it.
            None => {
                self.config.commit_on_checkpoint = false;
                self.config
                    .client
                    .push(("group.id".into(), "typeinfo-kafka-source".into()));
            }
        }
        Ok(KafkaSource {
            config: Arc::new(self.config),
            deserializer: Arc::new(self.deserializer),
        })
    }
}

impl<D> KafkaSource<D> {
    /// The records skipped because they did not deserialize, by every reader of this source
    /// in this process (with [`OnDeserializationError::Skip`]).
    pub fn skipped_records(&self) -> Arc<AtomicU64> {
        Arc::clone(&self.config.skipped)
    }
}

impl SourceConfig {
    /// A consumer with the source's properties (no subscription, no auto commit).
    fn consumer(&self, eof: bool) -> Result<BaseConsumer> {
        let mut config = ClientConfig::new();
        for (k, v) in &self.client {
            config.set(k, v);
        }
        config
            .set("enable.auto.commit", "false")
            .set("enable.auto.offset.store", "false")
            .set("enable.partition.eof", if eof { "true" } else { "false" });
        config.create().map_err(Error::client("create a consumer"))
    }

    /// Every partition of the source's topics, ordered by topic and partition.
    fn partitions(&self) -> Result<Vec<KafkaSplit>> {
        let consumer = self.consumer(false)?;
        let metadata = consumer
            .fetch_metadata(None, self.timeout)
            .map_err(Error::client("list the topics"))?;
        let accept = |name: &str| match &self.topics {
            Topics::Names(names) => names.iter().any(|n| n == name),
            Topics::Filter(f) => !name.starts_with("__") && f(name),
        };
        let mut splits = Vec::new();
        for topic in metadata.topics().iter().filter(|t| accept(t.name())) {
            splits.extend(topic.partitions().iter().map(|p| KafkaSplit {
                topic: topic.name().to_owned(),
                partition: p.id(),
            }));
        }
        if let Topics::Names(names) = &self.topics {
            if let Some(missing) = names
                .iter()
                .find(|n| !splits.iter().any(|s| &s.topic == *n))
            {
                return Err(Error::Config(format!("topic `{missing}` does not exist")));
            }
        }
        splits.sort();
        Ok(splits)
    }

    /// The offset a split starts at when no checkpoint says, by `starting`.
    fn starting_offset(
        &self,
        consumer: &BaseConsumer,
        split: &KafkaSplit,
        starting: StartingOffsets,
    ) -> Result<i64> {
        let (low, high) = watermarks(consumer, split, self.timeout)?;
        let at = |what: &str| format!("{what} of `{}` partition {}", split.topic, split.partition);
        Ok(match starting {
            StartingOffsets::Earliest => low,
            StartingOffsets::Latest => high,
            StartingOffsets::Timestamp(ts) => {
                let mut tpl = TopicPartitionList::new();
                tpl.add_partition_offset(&split.topic, split.partition, Offset::Offset(ts))
                    .map_err(Error::client(at("look up the offset by time")))?;
                let found = consumer
                    .offsets_for_times(tpl, self.timeout)
                    .map_err(Error::client(at("look up the offset by time")))?;
                match partition_offset(&found, split) {
                    Some(Offset::Offset(o)) => o,
                    _ => high,
                }
            }
            StartingOffsets::Committed { fallback } => {
                let mut tpl = TopicPartitionList::new();
                tpl.add_partition(&split.topic, split.partition);
                let committed = consumer
                    .committed_offsets(tpl, self.timeout)
                    .map_err(Error::client(at("read the committed offset")))?;
                match (partition_offset(&committed, split), fallback) {
                    (Some(Offset::Offset(o)), _) => o,
                    (_, OffsetReset::Earliest) => low,
                    (_, OffsetReset::Latest) => high,
                }
            }
        })
    }
}

/// The low and high watermarks of a partition.
fn watermarks(
    consumer: &BaseConsumer,
    split: &KafkaSplit,
    timeout: Duration,
) -> Result<(i64, i64)> {
    consumer
        .fetch_watermarks(&split.topic, split.partition, timeout)
        .map_err(Error::client(format!(
            "read the offsets of `{}` partition {}",
            split.topic, split.partition
        )))
}

fn partition_offset(tpl: &TopicPartitionList, split: &KafkaSplit) -> Option<Offset> {
    tpl.find_partition(&split.topic, split.partition)
        .map(|e| e.offset())
}

impl<D: RecordDeserializer> Source<D::Output> for KafkaSource<D> {
    type Split = KafkaSplit;
    type Reader = KafkaSplitReader<D>;

    fn splits(&self, _parallelism: usize) -> typeinfo_runtime::Result<Vec<KafkaSplit>> {
        Ok(self.config.partitions()?)
    }

    fn reader(&self, split: &KafkaSplit) -> typeinfo_runtime::Result<KafkaSplitReader<D>> {
        self.open_reader(split, self.config.starting)
    }

    /// A partition found by discovery, or one a restore's checkpoint does not hold: from its
    /// earliest offset (Flink's choice for partitions it discovers).
    fn new_split_reader(
        &self,
        split: &KafkaSplit,
    ) -> typeinfo_runtime::Result<KafkaSplitReader<D>> {
        self.open_reader(split, StartingOffsets::Earliest)
    }

    /// `topic-partition`, as Kafka names a partition.
    fn split_id(&self, split: &KafkaSplit) -> Option<String> {
        Some(format!("{}-{}", split.topic, split.partition))
    }

    fn discovery_interval(&self) -> Option<Duration> {
        let every = self.config.discovery;
        (!self.config.bounded && !every.is_zero()).then_some(every)
    }

    fn discover(&self, known: &[KafkaSplit]) -> typeinfo_runtime::Result<Vec<KafkaSplit>> {
        let mut all = self.config.partitions()?;
        all.retain(|split| !known.contains(split));
        Ok(all)
    }

    fn boundedness(&self) -> Boundedness {
        if self.config.bounded {
            Boundedness::Bounded
        } else {
            Boundedness::ContinuousUnbounded
        }
    }

    /// The splits are the topics' partitions whatever the parallelism: a restore at another
    /// parallelism gives each partition to its new subtask at the checkpoint's offset.
    fn rescalable(&self) -> bool {
        true
    }
}

impl<D: RecordDeserializer> KafkaSource<D> {
    /// A reader of `split` starting by `starting` (unless a restore seeks it).
    fn open_reader(
        &self,
        split: &KafkaSplit,
        starting: StartingOffsets,
    ) -> typeinfo_runtime::Result<KafkaSplitReader<D>> {
        let consumer = self.config.consumer(self.config.bounded)?;
        let offset = self.config.starting_offset(&consumer, split, starting)?;
        let stopping_offset = if self.config.bounded {
            Some(watermarks(&consumer, split, self.config.timeout)?.1)
        } else {
            None
        };
        // The partition is assigned at the first read, not here: a restored reader is sought
        // to its checkpointed position first, and two assignments in a row while the broker
        // was away once aborted the process in librdkafka 2.12's assignment teardown
        // (`rd_kafka_assignment_partition_stopped: Assertion rktp->rktp_started failed`,
        // likely librdkafka issue 5573, a duplicate fetch stop, fixed after 2.15).
        Ok(KafkaSplitReader {
            consumer,
            split: split.clone(),
            position: KafkaPosition {
                offset,
                stopping_offset,
            },
            assigned: false,
            config: Arc::clone(&self.config),
            deserializer: Arc::clone(&self.deserializer),
        })
    }
}

/// Reads one partition with a consumer of its own, assigned at an exact offset.
pub struct KafkaSplitReader<D> {
    consumer: BaseConsumer,
    split: KafkaSplit,
    position: KafkaPosition,
    /// Whether the consumer is assigned the partition at `position`.
    assigned: bool,
    config: Arc<SourceConfig>,
    deserializer: Arc<D>,
}

impl<D> std::fmt::Debug for KafkaSplitReader<D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KafkaSplitReader")
            .field("split", &self.split)
            .field("position", &self.position)
            .finish_non_exhaustive()
    }
}

impl<D: RecordDeserializer> KafkaSplitReader<D> {
    /// Assigns the partition at the position's offset.
    fn assign(&mut self) -> Result<()> {
        let mut tpl = TopicPartitionList::new();
        let at = format!(
            "assign `{}` partition {} at offset {}",
            self.split.topic, self.split.partition, self.position.offset
        );
        tpl.add_partition_offset(
            &self.split.topic,
            self.split.partition,
            Offset::Offset(self.position.offset),
        )
        .map_err(Error::client(at.clone()))?;
        self.consumer.assign(&tpl).map_err(Error::client(at))?;
        self.assigned = true;
        Ok(())
    }

    fn finished(&self) -> bool {
        self.position
            .stopping_offset
            .is_some_and(|stop| self.position.offset >= stop)
    }
}

/// Emits one record read from the client, or skips it (counted) when configured; the
/// position moves past it.
fn emit<D: RecordDeserializer>(
    deserializer: &D,
    config: &SourceConfig,
    position: &mut KafkaPosition,
    record: &ConsumerRecord<'_>,
    out: &mut SourceOutput<'_, D::Output>,
) -> Result<()> {
    match deserializer.deserialize(record) {
        Ok(value) => match record.timestamp {
            Some(ts) => out.collect_with_timestamp(value, ts),
            None => out.collect(value),
        },
        Err(_) if config.on_error == OnDeserializationError::Skip => {
            config.skipped.fetch_add(1, Ordering::Relaxed);
        }
        Err(message) if config.on_error == OnDeserializationError::SideOutput => {
            config.skipped.fetch_add(1, Ordering::Relaxed);
            out.output(
                &crate::BadRecord::tag(),
                crate::BadRecord::of(record, message),
            )
            .map_err(|e| Error::Config(format!("the side output of bad records: {e}")))?;
        }
        Err(message) => {
            return Err(Error::Deserialize {
                topic: record.topic.to_owned(),
                partition: record.partition,
                offset: record.offset,
                message,
            })
        }
    }
    position.offset = record.offset + 1;
    Ok(())
}

impl<D: RecordDeserializer> SplitReader<D::Output> for KafkaSplitReader<D> {
    type Position = KafkaPosition;

    fn read(
        &mut self,
        out: &mut SourceOutput<'_, D::Output>,
        budget: usize,
    ) -> typeinfo_runtime::Result<ReadStatus> {
        if !self.assigned && !self.finished() {
            self.assign()?;
        }
        for _ in 0..budget {
            if self.finished() {
                return Ok(ReadStatus::Finished);
            }
            let message = match self.consumer.poll(Duration::ZERO) {
                None => return Ok(ReadStatus::NothingAvailable),
                Some(Err(KafkaError::PartitionEOF(_)))
                    if self.position.stopping_offset.is_some() =>
                {
                    // Everything up to the partition's end was read (transaction markers past
                    // the last record never arrive as records): the stop is reached.
                    self.position.offset = self
                        .position
                        .offset
                        .max(self.position.stopping_offset.unwrap_or(0));
                    return Ok(ReadStatus::Finished);
                }
                Some(Err(KafkaError::PartitionEOF(_))) => return Ok(ReadStatus::NothingAvailable),
                Some(Err(e)) => {
                    return Err(Error::client(format!(
                        "read `{}` partition {} at offset {}",
                        self.split.topic, self.split.partition, self.position.offset
                    ))(e)
                    .into())
                }
                Some(Ok(message)) => message,
            };
            if self
                .position
                .stopping_offset
                .is_some_and(|stop| message.offset() >= stop)
            {
                self.position.offset = self.position.stopping_offset.unwrap_or(message.offset());
                return Ok(ReadStatus::Finished);
            }
            let timestamp = match message.timestamp() {
                Timestamp::CreateTime(t) | Timestamp::LogAppendTime(t) => Some(t),
                Timestamp::NotAvailable => None,
            };
            let record = ConsumerRecord {
                topic: &self.split.topic,
                partition: self.split.partition,
                offset: message.offset(),
                timestamp,
                key: message.key(),
                value: message.payload(),
            };
            emit(
                &*self.deserializer,
                &self.config,
                &mut self.position,
                &record,
                out,
            )?;
        }
        Ok(if self.finished() {
            ReadStatus::Finished
        } else {
            ReadStatus::More
        })
    }

    fn position(&self) -> KafkaPosition {
        self.position.clone()
    }

    fn notify_checkpoint_complete(
        &mut self,
        checkpoint: u64,
        position: &KafkaPosition,
    ) -> typeinfo_runtime::Result<()> {
        if !self.config.commit_on_checkpoint {
            return Ok(());
        }
        let mut tpl = TopicPartitionList::new();
        let offset = Offset::Offset(position.offset);
        if let Err(e) = tpl.add_partition_offset(&self.split.topic, self.split.partition, offset) {
            eprintln!("checkpoint {checkpoint}: offset {} of `{}` partition {} not committed to the group: {e}", position.offset, self.split.topic, self.split.partition);
            return Ok(());
        }
        // Asynchronous, as Flink's reader commits: the job does not wait for the broker.
        if let Err(e) = self.consumer.commit(&tpl, CommitMode::Async) {
            eprintln!("checkpoint {checkpoint}: offset {} of `{}` partition {} not committed to the group: {e}", position.offset, self.split.topic, self.split.partition);
        }
        Ok(())
    }

    fn seek(&mut self, position: KafkaPosition) -> typeinfo_runtime::Result<()> {
        if position.offset < 0 {
            return Err(typeinfo_runtime::Error::Corrupt(format!(
                "a Kafka position with offset {} for `{}` partition {}",
                position.offset, self.split.topic, self.split.partition
            )));
        }
        self.position = position;
        if self.assigned {
            self.assign()?;
        }
        Ok(())
    }
}
