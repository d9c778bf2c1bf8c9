//! Sources: the public [`Source`] trait (splits, a position per split, watermarks per split,
//! idleness), and the built-in sources on it: collections and iterators, number sequences,
//! lines of a file, generators.
//!
//! A source enumerates its splits when the job starts; subtask `s` of `p` reads the splits
//! `i` with `i % p == s`, each with its own [`SplitReader`], taking records from them in
//! turn. Every checkpoint holds the position of each split after the records emitted before
//! the checkpoint's cut, so a restore continues each split exactly there: no record is
//! skipped or read twice. A source restores at the parallelism it had (its splits were
//! assigned by it), or at any other if it is [`Source::rescalable`].
//!
//! # Named splits and discovery
//!
//! A source whose splits have names ([`Source::split_id`], Kafka's `topic-partition`) has
//! each split's position recorded under its name, and a restore finds it by name in the parts
//! of every subtask: the splits listed at the restore may differ from those of the run that
//! wrote the checkpoint (partitions added in between). A split the checkpoint does not hold is
//! new since it: its reader starts where [`Source::new_split_reader`] says (Kafka: the
//! earliest offset, as Flink starts partitions it discovers).
//!
//! Such a source may also look for new splits while it runs ([`Source::discovery_interval`],
//! [`Source::discover`]; Flink's partition discovery). Every subtask looks on its own, and a
//! split found that way is read by subtask `xxh3(name) % parallelism` (the hash keyed state
//! gives a key's bytes, `typeinfo_state::key_group_for_bytes`),
//! which every subtask computes alike whenever it finds the split, so no split is read twice
//! or left unread and no subtask waits for another. After a restore the splits are listed
//! anew and assigned as at the start.
//!
//! Watermarks follow the stream's [`WatermarkStrategy`] per split, as Flink's per-split
//! watermarks do: each split has its own highest timestamp, and the subtask's watermark is
//! the minimum over its splits that are neither finished nor idle. With
//! [`WatermarkStrategy::with_idleness`], a split that produced nothing for that long stops
//! holding the watermark back; when every split of a subtask is idle, the subtask tells its
//! consumers it is idle, and they leave it out of their minimum until it sends a watermark
//! again (when one of its splits has data). A bounded source sends the maximal watermark when
//! every split is finished.
//!
//! The built-in sources: a collection, an iterator and a file are one split read by one
//! subtask (as Flink's non-parallel sources); a sequence is one contiguous range per subtask
//! and a generator one stride per subtask.
//!
//! ```
//! use typeinfo_runtime::{
//!     Boundedness, ReadStatus, RuntimeMode, Source, SourceOutput, SplitReader,
//!     StreamExecutionEnvironment, WatermarkStrategy,
//! };
//!
//! /// Lines of several in-memory "files", one split per file.
//! #[derive(Clone)]
//! struct Files(Vec<Vec<String>>);
//!
//! struct FileReader { lines: Vec<String>, next: u64 }
//!
//! impl SplitReader<String> for FileReader {
//!     type Position = u64;
//!     fn read(&mut self, out: &mut SourceOutput<'_, String>, budget: usize) -> typeinfo_runtime::Result<ReadStatus> {
//!         for _ in 0..budget {
//!             match self.lines.get(self.next as usize) {
//!                 Some(line) => out.collect(line.clone()),
//!                 None => return Ok(ReadStatus::Finished),
//!             }
//!             self.next += 1;
//!         }
//!         Ok(ReadStatus::More)
//!     }
//!     fn position(&self) -> u64 { self.next }
//!     fn seek(&mut self, position: u64) -> typeinfo_runtime::Result<()> { self.next = position; Ok(()) }
//! }
//!
//! impl Source<String> for Files {
//!     type Split = u32;
//!     type Reader = FileReader;
//!     fn splits(&self, _parallelism: usize) -> typeinfo_runtime::Result<Vec<u32>> {
//!         Ok((0..self.0.len() as u32).collect())
//!     }
//!     fn reader(&self, split: &u32) -> typeinfo_runtime::Result<FileReader> {
//!         Ok(FileReader { lines: self.0[*split as usize].clone(), next: 0 })
//!     }
//!     /// Every file ends: the job may run in batch mode.
//!     fn boundedness(&self) -> Boundedness {
//!         Boundedness::Bounded
//!     }
//! }
//!
//! # fn main() -> typeinfo_runtime::Result<()> {
//! let env = StreamExecutionEnvironment::new();
//! env.set_parallelism(2).set_runtime_mode(RuntimeMode::Automatic); // batch: every source ends
//! let files = Files(vec![vec!["a".into(), "b".into()], vec!["c".into()], vec!["d".into()]]);
//! let lines = env.from_source(files, WatermarkStrategy::no_watermarks(), "files").collect();
//! env.execute("files")?;
//! let mut lines = lines.take();
//! lines.sort();
//! assert_eq!(lines, ["a", "b", "c", "d"]);
//! # Ok(())
//! # }
//! ```

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use typeinfo::{DataInputView, DataOutputView, SerializerConfig, TypeInfo, TypeSerializer};

use crate::error::{Error, Result};
use crate::operator::context::OutputTag;
use crate::operator::contract::{now_ms, Output, SideRecord, SourceFunction};
use crate::operator::element::{Msg, NO_TIMESTAMP};
use crate::types::Data;
use crate::user::watermark::WatermarkStrategy;

/// A source of records in splits (Flink's `Source` of FLIP-27, without a separate
/// enumerator: the splits are listed when the job starts and assigned round robin).
pub trait Source<T>: Send + Sync + 'static {
    /// What a split is (a file, a partition, a range).
    type Split: Send + Sync + 'static;
    /// Reads one split.
    type Reader: SplitReader<T>;

    /// The splits of the source; `parallelism` is the source's parallelism (split `i` goes
    /// to subtask `i % parallelism`). Must give the same splits in the same order every
    /// time the job starts (a restore finds each split's position by its index).
    ///
    /// # Errors
    ///
    /// The splits cannot be listed: the job fails before it reads.
    fn splits(&self, parallelism: usize) -> Result<Vec<Self::Split>>;

    /// A reader of `split`, at its start.
    ///
    /// # Errors
    ///
    /// The split cannot be opened.
    fn reader(&self, split: &Self::Split) -> Result<Self::Reader>;

    /// Whether every split ends ([`Boundedness::Bounded`]) or may run forever (Flink's
    /// `Source.getBoundedness`). Batch mode ([`crate::config::RuntimeMode`]) runs only jobs whose
    /// sources are all bounded; the default, unbounded, keeps a source that does not say
    /// out of batch mode (an unbounded source in batch mode would never let a sort end).
    fn boundedness(&self) -> Boundedness {
        Boundedness::ContinuousUnbounded
    }

    /// Whether [`splits`](Self::splits) gives the same splits in the same order whatever
    /// the parallelism (a Kafka topic's partitions, a list of files), so that the source may
    /// restore at another parallelism: each split then goes to its new subtask and continues
    /// at the position the checkpoint holds for it (Flink reassigns splits the same way).
    /// `false` by default: a source whose splits depend on its parallelism (a range per
    /// subtask) restores only at the parallelism it had, and a restore at another is refused
    /// before the job starts.
    fn rescalable(&self) -> bool {
        false
    }

    /// A name of `split` that stays the same whatever else the source lists (Kafka's
    /// `topic-partition`), or `None`, the default. With names, checkpoints hold each split's
    /// position under its name and a restore finds it by name (see the [module docs](self)),
    /// so the splits may change between runs; [`discover`](Self::discover) needs them. Every
    /// split of a source that names one must be named, each differently.
    fn split_id(&self, split: &Self::Split) -> Option<String> {
        let _ = split;
        None
    }

    /// How often each subtask calls [`discover`](Self::discover) while it runs (Flink's
    /// `partition.discovery.interval.ms`), or `None`, the default: the splits are those
    /// listed when the job starts.
    fn discovery_interval(&self) -> Option<Duration> {
        None
    }

    /// The splits there are now that are not in `known` (every split listed or discovered
    /// so far), in an order of the source's choosing; each must be named
    /// ([`split_id`](Self::split_id)). None by default.
    ///
    /// # Errors
    ///
    /// The splits cannot be listed: the job fails (and restarts by its restart strategy).
    fn discover(&self, known: &[Self::Split]) -> Result<Vec<Self::Split>> {
        let _ = known;
        Ok(Vec::new())
    }

    /// A reader of a split that was not there when the job first listed its splits: found
    /// by [`discover`](Self::discover), or listed at a restore whose checkpoint does not
    /// hold it. [`reader`](Self::reader) by default; Kafka starts such a partition at its
    /// earliest offset (as Flink does), whatever the starting offsets.
    ///
    /// # Errors
    ///
    /// The split cannot be opened.
    fn new_split_reader(&self, split: &Self::Split) -> Result<Self::Reader> {
        self.reader(split)
    }
}

/// Whether a [`Source`] ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Boundedness {
    /// Every split ends: the source finishes.
    Bounded,
    /// A split may wait for data forever.
    ContinuousUnbounded,
}

/// Reads one split of a [`Source`].
pub trait SplitReader<T>: Send + 'static {
    /// Where the reader is in its split (written into checkpoints with its serializer).
    type Position: Data;

    /// Emits at most `budget` records into `out`.
    ///
    /// # Errors
    ///
    /// Any error fails the job (and, with a restart strategy, restarts it from its last
    /// checkpoint).
    fn read(&mut self, out: &mut SourceOutput<'_, T>, budget: usize) -> Result<ReadStatus>;

    /// The position after the records emitted so far.
    fn position(&self) -> Self::Position;

    /// Continues from a position [`position`](Self::position) gave.
    ///
    /// # Errors
    ///
    /// A position the split does not have.
    fn seek(&mut self, position: Self::Position) -> Result<()>;

    /// The checkpoint `checkpoint`, which holds `position` for this reader's split, completed
    /// (Flink's `SourceReader::notifyCheckpointComplete`): for what the source system should
    /// learn of the job's progress, such as Kafka's committed offsets of a consumer group, for
    /// monitoring; a restore never depends on it. Called on the reader's own thread, at most
    /// once per completed checkpoint, newest first skipped-over ones included in it (only
    /// the newest completed checkpoint's position is given when several completed between
    /// two calls). Not called for a split that had finished at the checkpoint. Does nothing
    /// by default.
    ///
    /// In a job of several processes only the sources of process 0 (which completes
    /// checkpoints) are told.
    ///
    /// # Errors
    ///
    /// An error fails the job; a reader that can fail here harmlessly (a commit for
    /// monitoring) should say so on stderr and return `Ok`.
    fn notify_checkpoint_complete(
        &mut self,
        checkpoint: u64,
        position: &Self::Position,
    ) -> Result<()> {
        let _ = (checkpoint, position);
        Ok(())
    }
}

/// What a [`SplitReader`] says after a read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadStatus {
    /// It may have more at once.
    More,
    /// Nothing now; ask again later (an unbounded split waiting for data).
    NothingAvailable,
    /// The split is read to its end.
    Finished,
}

/// Where a [`SplitReader`] emits records (and records of side outputs).
///
/// Records go straight into the source's output batch (the timestamp assigner and the
/// split's watermark bookkeeping then run over them in place), not through a buffer of
/// their own: a record is moved once between the reader and the next operator.
pub struct SourceOutput<'a, T> {
    records: &'a mut Output<T>,
    tagged: &'a mut Vec<SideRecord>,
}

impl<T> std::fmt::Debug for SourceOutput<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SourceOutput")
            .field("records", &self.records.msgs.len())
            .field("tagged", &self.tagged.len())
            .finish()
    }
}

impl<T> SourceOutput<'_, T> {
    /// Emits a record (its timestamp comes from the stream's timestamp assigner, if any).
    #[inline]
    pub fn collect(&mut self, value: T) {
        self.records.collect(NO_TIMESTAMP, value);
    }
    /// Emits a record with an event timestamp (the timestamp assigner may replace it).
    #[inline]
    pub fn collect_with_timestamp(&mut self, value: T, timestamp: i64) {
        self.records.collect(timestamp, value);
    }
    /// Emits `value` to the side output `tag` (without a timestamp); read it with
    /// [`DataStream::side_output`](crate::api::handles::DataStream::side_output) on the
    /// source's stream. The side output carries the source's watermarks. (Flink's sources
    /// have no side outputs; this is how a connector hands over records it cannot read,
    /// such as Kafka's undeserializable ones.)
    ///
    /// # Errors
    ///
    /// The tag's type has no serializer, or refuses the value.
    pub fn output<S: Data>(&mut self, tag: &OutputTag<S>, value: S) -> Result<()> {
        let bytes = tag.encode(&value)?;
        self.tagged.push((tag.id().to_owned(), bytes));
        Ok(())
    }
}

/// One split of a subtask, as its source function reads it.
struct SplitRun<R> {
    index: u32,
    /// The split's name ([`Source::split_id`]), if the source names its splits.
    id: Option<String>,
    reader: R,
    finished: bool,
    /// The highest timestamp read from the split.
    max_timestamp: i64,
    /// When the split last produced a record (ms).
    last_active: i64,
}

/// The splits of a source that names them: discovery while running and readers of new
/// splits, for [`SplitSource`] (which does not know the source's type).
trait SplitCatalog<R>: Send {
    /// How often to look for new splits.
    fn interval(&self) -> Option<Duration>;
    /// The splits found since the last look that this subtask reads: index, name, reader.
    fn discover(&mut self) -> Result<Vec<(u32, String, R)>>;
    /// A reader of listed split `index` at the start of a split new since a checkpoint.
    fn new_reader(&self, index: u32) -> Result<R>;
}

/// The [`SplitCatalog`] of source `S`: every split listed or discovered so far.
struct Catalog<T, S: Source<T>> {
    source: Arc<S>,
    known: Vec<S::Split>,
    subtask: usize,
    parallelism: usize,
    _records: std::marker::PhantomData<fn() -> T>,
}

/// The subtask (of `parallelism`) that reads a split found by discovery: `xxh3(name) %
/// parallelism` (keyed state's hash of a key's bytes), which every subtask computes alike.
fn discovered_owner(id: &str, parallelism: usize) -> usize {
    let parallelism = u32::try_from(parallelism.clamp(1, 1 << 15)).unwrap_or(1);
    usize::from(typeinfo_state::key_group_for_bytes(
        id.as_bytes(),
        parallelism,
    ))
}

impl<T: 'static, S: Source<T>> SplitCatalog<S::Reader> for Catalog<T, S> {
    fn interval(&self) -> Option<Duration> {
        self.source.discovery_interval()
    }

    fn discover(&mut self) -> Result<Vec<(u32, String, S::Reader)>> {
        let mut mine = Vec::new();
        for split in self.source.discover(&self.known)? {
            let id = self.source.split_id(&split).ok_or_else(|| {
                Error::Config("a source discovered a split without a name (`split_id`)".into())
            })?;
            let index = u32::try_from(self.known.len())
                .map_err(|_| Error::Config("a source with more than 2^32 splits".into()))?;
            if discovered_owner(&id, self.parallelism) == self.subtask {
                mine.push((index, id, self.source.new_split_reader(&split)?));
            }
            self.known.push(split);
        }
        Ok(mine)
    }

    fn new_reader(&self, index: u32) -> Result<S::Reader> {
        let split = self
            .known
            .get(index as usize)
            .ok_or_else(|| Error::Config(format!("no split {index}")))?;
        self.source.new_split_reader(split)
    }
}

/// How many checkpoints' positions a source subtask keeps for
/// [`SplitReader::notify_checkpoint_complete`] while none of them is known to be complete.
const MAX_PENDING_CHECKPOINTS: usize = 32;

/// A [`Source`]'s subtask as the runtime's source function: reads its splits in turn,
/// assigns timestamps and generates watermarks per split.
pub(crate) struct SplitSource<T, R: SplitReader<T>> {
    splits: Vec<SplitRun<R>>,
    strategy: WatermarkStrategy<T>,
    positions: <R::Position as TypeInfo>::Serializer,
    next: usize,
    emitted_watermark: i64,
    idle: bool,
    /// What a read emitted to side outputs.
    tagged: Vec<SideRecord>,
    /// The subtask's index (a position written before splits existed names its split).
    subtask: u32,
    /// Each split's position (`None`: finished) as written into checkpoints not yet known to
    /// be complete, oldest first.
    pending: std::collections::VecDeque<(u64, Vec<Option<R::Position>>)>,
    /// A source that names its splits: discovery, and readers of new splits.
    catalog: Option<Box<dyn SplitCatalog<R>>>,
    /// When to look for new splits next.
    next_discovery: Option<Instant>,
    /// A restore by name: the indexes of the splits whose position it found.
    restored: Vec<u32>,
}

impl<T: Data, R: SplitReader<T>> SplitSource<T, R> {
    /// Subtask `subtask` of `parallelism` of `source`.
    pub(crate) fn open<S: Source<T, Reader = R>>(
        source: &Arc<S>,
        strategy: WatermarkStrategy<T>,
        config: &SerializerConfig,
        subtask: usize,
        parallelism: usize,
    ) -> Result<Self> {
        let now = now_ms();
        let listed = source.splits(parallelism)?;
        let named = listed.first().is_some_and(|s| source.split_id(s).is_some())
            || source.discovery_interval().is_some();
        let mut splits = Vec::new();
        for (i, split) in listed.iter().enumerate() {
            if i % parallelism.max(1) == subtask {
                let id = source.split_id(split);
                if named && id.is_none() {
                    return Err(Error::Config(
                        "a source that names a split (`split_id`) must name every split".into(),
                    ));
                }
                splits.push(SplitRun {
                    index: u32::try_from(i)
                        .map_err(|_| Error::Config("a source with more than 2^32 splits".into()))?,
                    id,
                    reader: source.reader(split)?,
                    finished: false,
                    max_timestamp: i64::MIN,
                    last_active: now,
                });
            }
        }
        let catalog: Option<Box<dyn SplitCatalog<R>>> = named.then(|| {
            Box::new(Catalog {
                source: Arc::clone(source),
                known: listed,
                subtask,
                parallelism,
                _records: std::marker::PhantomData,
            }) as Box<dyn SplitCatalog<R>>
        });
        let next_discovery = catalog
            .as_ref()
            .and_then(|c| c.interval())
            .map(|every| Instant::now() + every);
        Ok(SplitSource {
            catalog,
            next_discovery,
            restored: Vec::new(),
            splits,
            strategy,
            positions: R::Position::create_serializer(config)?,
            next: 0,
            emitted_watermark: i64::MIN,
            idle: false,
            tagged: Vec::new(),
            subtask: subtask as u32,
            pending: std::collections::VecDeque::new(),
        })
    }

    /// Looks for new splits when it is time to (a source that discovers them); the splits
    /// this subtask reads join its others.
    fn discover(&mut self) -> Result<()> {
        let (Some(catalog), Some(due)) = (self.catalog.as_mut(), self.next_discovery) else {
            return Ok(());
        };
        if Instant::now() < due {
            return Ok(());
        }
        let found = catalog.discover()?;
        self.next_discovery = catalog.interval().map(|every| Instant::now() + every);
        let now = now_ms();
        for (index, id, reader) in found {
            self.splits.push(SplitRun {
                index,
                id: Some(id),
                reader,
                finished: false,
                max_timestamp: i64::MIN,
                last_active: now,
            });
        }
        Ok(())
    }

    /// Emits the subtask's watermark if it advanced, or its idleness.
    fn watermark(&mut self, out: &mut Output<T>) {
        let Some(out_of_orderness) = self.strategy.out_of_orderness() else {
            return;
        };
        let now = now_ms();
        let idleness = self.strategy.idleness();
        let mut min: Option<i64> = None;
        let mut max_idle: Option<i64> = None;
        let mut any_open = false;
        for s in self.splits.iter().filter(|s| !s.finished) {
            any_open = true;
            let w = s
                .max_timestamp
                .saturating_sub(out_of_orderness)
                .saturating_sub(1);
            if idleness.is_some_and(|t| now - s.last_active >= t) {
                max_idle = Some(max_idle.map_or(w, |m| m.max(w)));
                continue;
            }
            min = Some(min.map_or(w, |m| m.min(w)));
        }
        match min {
            None if !any_open && self.next_discovery.is_some() && !self.idle => {
                // No split to read yet (splits may be discovered): idle, so that consumers
                // do not wait for this subtask's watermark.
                self.idle = true;
                out.idle();
            }
            None if any_open && idleness.is_some() && !self.idle => {
                // Every split idle: flush the highest of their watermarks first (as Flink's
                // valve does), then go idle.
                if let Some(w) = max_idle.filter(|w| *w > self.emitted_watermark) {
                    self.emitted_watermark = w;
                    out.watermark(w);
                }
                self.idle = true;
                out.idle();
            }
            None => {}
            Some(w) => {
                if self.idle {
                    // Active again: a watermark (even one that did not advance) rejoins the
                    // consumers' minimum.
                    self.idle = false;
                    self.emitted_watermark = self.emitted_watermark.max(w);
                    out.watermark(self.emitted_watermark);
                } else if w > self.emitted_watermark {
                    self.emitted_watermark = w;
                    out.watermark(w);
                }
            }
        }
    }
}

impl<T: Data, R: SplitReader<T>> SourceFunction<T> for SplitSource<T, R> {
    fn run(
        &mut self,
        out: &mut Output<T>,
        tagged: &mut Output<SideRecord>,
        budget: usize,
    ) -> Result<bool> {
        self.discover()?;
        let mut produced = 0;
        let n = self.splits.len();
        for _ in 0..n {
            if produced >= budget {
                break;
            }
            let at = self.next % n.max(1);
            self.next = at + 1;
            let split = &mut self.splits[at];
            if split.finished {
                continue;
            }
            let start = out.msgs.len();
            let status = split.reader.read(
                &mut SourceOutput {
                    records: out,
                    tagged: &mut self.tagged,
                },
                budget - produced,
            )?;
            let read = &mut out.msgs[start..];
            if !read.is_empty() {
                split.last_active = now_ms();
            }
            let assigner = self.strategy.assigner();
            for msg in read {
                // Only records: a reader has no other way to write here.
                if let Msg::Record { ts, value, .. } = msg {
                    if let Some(assign) = assigner {
                        *ts = assign(value, *ts);
                    }
                    if *ts != NO_TIMESTAMP && *ts > split.max_timestamp {
                        split.max_timestamp = *ts;
                    }
                    produced += 1;
                }
            }
            for record in self.tagged.drain(..) {
                tagged.collect(NO_TIMESTAMP, record);
            }
            if status == ReadStatus::Finished {
                split.finished = true;
            }
        }
        self.watermark(out);
        // A subtask that may still discover splits runs on without any (Flink's reader
        // waiting for splits).
        Ok(self.next_discovery.is_some() || self.splits.iter().any(|s| !s.finished))
    }

    fn position(&self) -> Vec<u8> {
        let mut out = DataOutputView::new();
        let named = self.catalog.is_some();
        if named {
            // The layout with names: a marker no count of the layout without them can be.
            out.write_u32(NAMED_SPLITS);
        }
        out.write_u32(self.splits.len() as u32);
        let mut position = DataOutputView::new();
        for s in &self.splits {
            out.write_u32(s.index);
            if named {
                out.write_len_prefixed(s.id.as_deref().unwrap_or_default().as_bytes());
            }
            out.write_bool(s.finished);
            position.clear();
            // Positions are this crate's own values of `Data` types; a serializer that
            // refuses one writes an empty position, which `seek` then refuses loudly.
            let _ = self
                .positions
                .serialize(&s.reader.position(), &mut position);
            out.write_len_prefixed(position.as_slice());
        }
        out.into_inner()
    }

    fn checkpointed(&mut self, checkpoint: u64) {
        let positions = self
            .splits
            .iter()
            .map(|s| (!s.finished).then(|| s.reader.position()))
            .collect();
        self.pending.push_back((checkpoint, positions));
        // Where completions are never seen (another process than process 0), or a checkpoint
        // never completes, the oldest are forgotten: memory stays bounded.
        if self.pending.len() > MAX_PENDING_CHECKPOINTS {
            self.pending.pop_front();
        }
    }

    fn checkpoint_complete(&mut self, checkpoint: u64) -> Result<()> {
        let mut newest = None;
        while self.pending.front().is_some_and(|(c, _)| *c <= checkpoint) {
            newest = self.pending.pop_front();
        }
        let Some((at, positions)) = newest else {
            return Ok(());
        };
        for (split, position) in self.splits.iter_mut().zip(&positions) {
            if let Some(position) = position {
                split.reader.notify_checkpoint_complete(at, position)?;
            }
        }
        Ok(())
    }

    fn seek(&mut self, bytes: &[u8]) -> Result<()> {
        if let (Ok(word), false) = (<[u8; 8]>::try_from(bytes), names_splits(bytes)) {
            // Written before sources had splits: one `u64` position of the subtask's only
            // split (the built-in sources had one split per subtask, with this index).
            return self.seek_legacy(u64::from_le_bytes(word));
        }
        self.seek_splits(bytes, false)
    }

    fn seek_rescaled(&mut self, bytes: &[u8]) -> Result<()> {
        if bytes.len() == 8 && !names_splits(bytes) {
            return Err(Error::Config(
                "a source position of the layout before splits cannot be restored at another parallelism"
                    .into(),
            ));
        }
        self.seek_splits(bytes, true)
    }

    fn restores_by_split_id(&self) -> bool {
        self.catalog.is_some()
    }

    /// A restore by name: the splits the checkpoint did not hold are new since it, and
    /// start where a new split starts.
    fn restored(&mut self) -> Result<()> {
        let Some(catalog) = self.catalog.as_ref() else {
            return Ok(());
        };
        for split in &mut self.splits {
            if !self.restored.contains(&split.index) {
                split.reader = catalog.new_reader(split.index)?;
            }
        }
        Ok(())
    }
}

/// The first word of a source position whose splits have names ([`Source::split_id`]); the
/// layout without names starts with its count of splits, which never reaches it.
const NAMED_SPLITS: u32 = u32::MAX;

/// Whether `position` is of the layout with names: a subtask without splits writes 8 bytes
/// of it, which the layout before splits (one `u64`, a count of records far below 2^63)
/// never starts with.
fn names_splits(position: &[u8]) -> bool {
    DataInputView::new(position).read_u32().ok() == Some(NAMED_SPLITS)
}

impl<T: Data, R: SplitReader<T>> SplitSource<T, R> {
    /// Moves each split the position holds to its position; `rescaled`: the position was
    /// written at another parallelism, and the splits this subtask does not read are skipped.
    fn seek_splits(&mut self, bytes: &[u8], rescaled: bool) -> Result<()> {
        let corrupt = |e: typeinfo::Error| Error::Corrupt(format!("source position: {e}"));
        let mut input = DataInputView::new(bytes);
        let mut count = input.read_u32().map_err(corrupt)?;
        let named = count == NAMED_SPLITS;
        if named {
            count = input.read_u32().map_err(corrupt)?;
        }
        // A source that names its splits finds them by name (in every subtask's part);
        // others, and positions written without names, by index.
        let by_name = named && self.catalog.is_some();
        for _ in 0..count {
            let index = input.read_u32().map_err(corrupt)?;
            let id = if named {
                let bytes = input.read_len_prefixed().map_err(corrupt)?;
                Some(String::from_utf8(bytes.to_vec()).map_err(|_| {
                    Error::Corrupt("source position: a split name that is not UTF-8".into())
                })?)
            } else {
                None
            };
            let finished = input.read_bool().map_err(corrupt)?;
            let mut position = DataInputView::new(input.read_len_prefixed().map_err(corrupt)?);
            let is = |s: &SplitRun<R>| {
                if by_name {
                    s.id == id
                } else {
                    s.index == index
                }
            };
            let mine = self.splits.iter().any(is);
            if (rescaled || self.catalog.is_some()) && !mine {
                continue;
            }
            let split = self.splits.iter_mut().find(|s| is(s)).ok_or_else(|| {
                    Error::Config(format!(
                        "the checkpoint holds split {index}, which this subtask of the source does not read (the source's splits or parallelism changed)"
                    ))
                })?;
            split.finished = finished;
            self.restored.push(split.index);
            if !finished {
                let p = self.positions.deserialize(&mut position).map_err(corrupt)?;
                if !position.is_empty() {
                    return Err(Error::Corrupt(
                        "source position: bytes after a split's position".into(),
                    ));
                }
                split.reader.seek(p)?;
            }
        }
        if !input.is_empty() {
            return Err(Error::Corrupt(
                "source position: bytes after the last split".into(),
            ));
        }
        Ok(())
    }
}

impl<T: Data, R: SplitReader<T>> SplitSource<T, R> {
    /// A position of the single-split layout written before sources had splits.
    fn seek_legacy(&mut self, position: u64) -> Result<()> {
        let mut bytes = DataOutputView::new();
        bytes.write_u64(position);
        let mut input = DataInputView::new(bytes.as_slice());
        let p = self
            .positions
            .deserialize(&mut input)
            .map_err(|e| Error::Corrupt(format!("source position: {e}")))?;
        let subtask = self.subtask;
        let split = match self.splits.as_mut_slice() {
            [only] => only,
            _ => self
                .splits
                .iter_mut()
                .find(|s| s.index == subtask)
                .ok_or_else(|| {
                    Error::Corrupt(
                        "a source position of the old layout for a source with several splits"
                            .into(),
                    )
                })?,
        };
        split.reader.seek(p)
    }
}

/// Makes a [`Source`]'s subtask into the runtime's source function.
pub(crate) fn split_source<T: Data, S: Source<T>>(
    source: &Arc<S>,
    strategy: &WatermarkStrategy<T>,
    config: &SerializerConfig,
    subtask: usize,
    parallelism: usize,
) -> Result<Box<dyn SourceFunction<T>>> {
    Ok(Box::new(SplitSource::open(
        source,
        strategy.clone(),
        config,
        subtask,
        parallelism,
    )?))
}

/// Reads an iterator, counting the items consumed (its position).
pub(crate) struct IterReader<I> {
    iter: I,
    consumed: u64,
}

impl<I: Iterator<Item = T> + Send + 'static, T: Send + 'static> SplitReader<T> for IterReader<I> {
    type Position = u64;

    fn read(&mut self, out: &mut SourceOutput<'_, T>, budget: usize) -> Result<ReadStatus> {
        for _ in 0..budget {
            match self.iter.next() {
                Some(v) => {
                    self.consumed += 1;
                    out.collect(v);
                }
                None => return Ok(ReadStatus::Finished),
            }
        }
        Ok(ReadStatus::More)
    }

    fn position(&self) -> u64 {
        self.consumed
    }

    fn seek(&mut self, n: u64) -> Result<()> {
        for i in self.consumed..n {
            if self.iter.next().is_none() {
                return Err(Error::Corrupt(format!(
                    "the source's position {n} is past its end ({i} items)"
                )));
            }
        }
        self.consumed = n;
        Ok(())
    }
}

/// A vector's elements, one split.
pub(crate) struct CollectionSource<T>(pub(crate) Arc<Vec<T>>);

/// The items of a shared vector, by index.
pub(crate) struct VecIter<T> {
    items: Arc<Vec<T>>,
    next: usize,
}

impl<T: Clone> Iterator for VecIter<T> {
    type Item = T;
    fn next(&mut self) -> Option<T> {
        let item = self.items.get(self.next).cloned();
        self.next += 1;
        item
    }
}

impl<T: Data> Source<T> for CollectionSource<T> {
    fn boundedness(&self) -> Boundedness {
        Boundedness::Bounded
    }

    type Split = ();
    type Reader = IterReader<VecIter<T>>;
    fn splits(&self, _: usize) -> Result<Vec<()>> {
        Ok(vec![()])
    }
    fn reader(&self, _: &()) -> Result<Self::Reader> {
        Ok(IterReader {
            iter: VecIter {
                items: Arc::clone(&self.0),
                next: 0,
            },
            consumed: 0,
        })
    }
}

/// An iterator's items (each run clones the iterator), one split.
pub(crate) struct IterSource<I>(pub(crate) I);

impl<I> Source<I::Item> for IterSource<I>
where
    I: IntoIterator + Clone + Send + Sync + 'static,
    I::IntoIter: Send + 'static,
    I::Item: Data,
{
    fn boundedness(&self) -> Boundedness {
        Boundedness::Bounded
    }

    type Split = ();
    type Reader = IterReader<I::IntoIter>;
    fn splits(&self, _: usize) -> Result<Vec<()>> {
        Ok(vec![()])
    }
    fn reader(&self, _: &()) -> Result<Self::Reader> {
        Ok(IterReader {
            iter: self.0.clone().into_iter(),
            consumed: 0,
        })
    }
}

/// The numbers `from..=to`, one contiguous range per subtask.
pub(crate) struct SequenceSource {
    pub(crate) from: i64,
    pub(crate) to: i64,
}

impl Source<i64> for SequenceSource {
    fn boundedness(&self) -> Boundedness {
        Boundedness::Bounded
    }

    type Split = std::ops::RangeInclusive<i64>;
    type Reader = IterReader<std::ops::RangeInclusive<i64>>;
    fn splits(&self, parallelism: usize) -> Result<Vec<Self::Split>> {
        Ok((0..parallelism.max(1))
            .map(|i| sequence_range(self.from, self.to, i, parallelism.max(1)))
            .collect())
    }
    fn reader(&self, range: &Self::Split) -> Result<Self::Reader> {
        Ok(IterReader {
            iter: range.clone(),
            consumed: 0,
        })
    }
}

/// Subtask `index` of `parallelism` takes `[from + n*index/p, from + n*(index+1)/p)` of a sequence.
pub(crate) fn sequence_range(
    from: i64,
    to: i64,
    index: usize,
    parallelism: usize,
) -> std::ops::RangeInclusive<i64> {
    if to < from {
        #[allow(clippy::reversed_empty_ranges)]
        return 1..=0;
    }
    let n = (to as i128) - (from as i128) + 1;
    let start = from as i128 + n * index as i128 / parallelism as i128;
    let end = from as i128 + n * (index as i128 + 1) / parallelism as i128 - 1;
    if end < start {
        #[allow(clippy::reversed_empty_ranges)]
        return 1..=0;
    }
    (start as i64)..=(end as i64)
}

/// `generate(i)` for `i` below `count`, one stride per subtask.
pub(crate) struct GeneratorSource<F> {
    pub(crate) count: u64,
    pub(crate) generate: Arc<F>,
}

/// Subtask `s` of `p` generates `i = s, s + p, s + 2p, ...`.
pub(crate) struct GeneratorReader<F> {
    next: u64,
    step: u64,
    count: u64,
    generate: Arc<F>,
}

impl<T: Send + 'static, F: Fn(u64) -> T + Send + Sync + 'static> SplitReader<T>
    for GeneratorReader<F>
{
    type Position = u64;

    #[inline]
    fn read(&mut self, out: &mut SourceOutput<'_, T>, budget: usize) -> Result<ReadStatus> {
        out.records.msgs.reserve(budget);
        for _ in 0..budget {
            if self.next >= self.count {
                return Ok(ReadStatus::Finished);
            }
            out.collect((self.generate)(self.next));
            self.next += self.step;
        }
        Ok(if self.next < self.count {
            ReadStatus::More
        } else {
            ReadStatus::Finished
        })
    }

    fn position(&self) -> u64 {
        self.next
    }

    fn seek(&mut self, position: u64) -> Result<()> {
        self.next = position;
        Ok(())
    }
}

impl<T: Data, F: Fn(u64) -> T + Send + Sync + 'static> Source<T> for GeneratorSource<F> {
    fn boundedness(&self) -> Boundedness {
        Boundedness::Bounded
    }

    type Split = (u64, u64);
    type Reader = GeneratorReader<F>;
    fn splits(&self, parallelism: usize) -> Result<Vec<(u64, u64)>> {
        let p = parallelism.max(1) as u64;
        Ok((0..p).map(|s| (s, p)).collect())
    }
    fn reader(&self, &(first, step): &(u64, u64)) -> Result<Self::Reader> {
        Ok(GeneratorReader {
            next: first,
            step,
            count: self.count,
            generate: Arc::clone(&self.generate),
        })
    }
}

/// The lines of a text file (without line endings), one split.
pub(crate) struct TextFileSource(pub(crate) PathBuf);

/// Reads lines; its position is the byte offset.
pub(crate) struct FileReader {
    path: PathBuf,
    reader: BufReader<File>,
    line: String,
    offset: u64,
}

impl SplitReader<String> for FileReader {
    type Position = u64;

    fn read(&mut self, out: &mut SourceOutput<'_, String>, budget: usize) -> Result<ReadStatus> {
        for _ in 0..budget {
            self.line.clear();
            let n = self
                .reader
                .read_line(&mut self.line)
                .map_err(|source| Error::Io {
                    path: self.path.clone(),
                    source,
                })?;
            if n == 0 {
                return Ok(ReadStatus::Finished);
            }
            self.offset += n as u64;
            let line = self.line.strip_suffix('\n').unwrap_or(&self.line);
            let line = line.strip_suffix('\r').unwrap_or(line);
            out.collect(line.to_owned());
        }
        Ok(ReadStatus::More)
    }

    fn position(&self) -> u64 {
        self.offset
    }

    fn seek(&mut self, offset: u64) -> Result<()> {
        use std::io::Seek;
        self.reader
            .seek(std::io::SeekFrom::Start(offset))
            .map_err(|source| Error::Io {
                path: self.path.clone(),
                source,
            })?;
        self.offset = offset;
        Ok(())
    }
}

impl Source<String> for TextFileSource {
    fn boundedness(&self) -> Boundedness {
        Boundedness::Bounded
    }

    type Split = ();
    type Reader = FileReader;
    fn splits(&self, _: usize) -> Result<Vec<()>> {
        Ok(vec![()])
    }
    fn reader(&self, _: &()) -> Result<FileReader> {
        let file = File::open(&self.0).map_err(|source| Error::Io {
            path: self.0.clone(),
            source,
        })?;
        Ok(FileReader {
            path: self.0.clone(),
            reader: BufReader::with_capacity(1 << 16, file),
            line: String::new(),
            offset: 0,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Splits named `s<i>`, each a counter whose position is how far it got.
    struct Named(Vec<u32>);

    struct Counter(u64);

    impl SplitReader<u64> for Counter {
        type Position = u64;
        fn read(&mut self, out: &mut SourceOutput<'_, u64>, _: usize) -> Result<ReadStatus> {
            self.0 += 1;
            out.collect(self.0);
            Ok(ReadStatus::More)
        }
        fn position(&self) -> u64 {
            self.0
        }
        fn seek(&mut self, position: u64) -> Result<()> {
            self.0 = position;
            Ok(())
        }
    }

    impl Source<u64> for Named {
        type Split = u32;
        type Reader = Counter;
        fn splits(&self, _: usize) -> Result<Vec<u32>> {
            Ok(self.0.clone())
        }
        fn reader(&self, _: &u32) -> Result<Counter> {
            Ok(Counter(0))
        }
        fn split_id(&self, split: &u32) -> Option<String> {
            Some(format!("s{split}"))
        }
        fn new_split_reader(&self, _: &u32) -> Result<Counter> {
            Ok(Counter(1000))
        }
    }

    fn open(splits: &[u32], subtask: usize, parallelism: usize) -> SplitSource<u64, Counter> {
        let source = Arc::new(Named(splits.to_vec()));
        SplitSource::open(
            &source,
            WatermarkStrategy::no_watermarks(),
            &SerializerConfig::default(),
            subtask,
            parallelism,
        )
        .unwrap()
    }

    fn positions(source: &SplitSource<u64, Counter>) -> Vec<(Option<String>, u64)> {
        source
            .splits
            .iter()
            .map(|s| (s.id.clone(), s.reader.position()))
            .collect()
    }

    #[test]
    fn named_positions_restore_by_name_wherever_the_split_went() {
        // Two subtasks read splits 10, 20, 30; each split moved forward by its own amount.
        let mut parts = Vec::new();
        for subtask in 0..2 {
            let mut source = open(&[10, 20, 30], subtask, 2);
            for split in &mut source.splits {
                split.reader.0 = u64::from(split.index) * 7 + 1;
            }
            parts.push(source.position());
        }
        // A split listed first now (5) shifts every index: names still find the positions,
        // and the split no part holds starts as a new split does.
        let mut restored = open(&[5, 10, 20, 30], 0, 1);
        assert!(restored.restores_by_split_id());
        for part in &parts {
            restored.seek_rescaled(part).unwrap();
        }
        restored.restored().unwrap();
        assert_eq!(
            positions(&restored),
            [
                (Some("s5".into()), 1000),
                (Some("s10".into()), 1),
                (Some("s20".into()), 8),
                (Some("s30".into()), 15),
            ]
        );
    }

    #[test]
    fn a_subtask_without_splits_restores_its_empty_named_position() {
        // Two subtasks, one split: subtask 1 writes a position naming no split (8 bytes, as
        // long as a position of the layout before splits).
        let empty = open(&[7], 1, 2).position();
        assert_eq!(empty.len(), 8);
        let mut source = open(&[7], 0, 2);
        source.seek(&empty).unwrap();
        source.seek_rescaled(&empty).unwrap();
        assert_eq!(
            positions(&source),
            [(Some("s7".into()), 0)],
            "nothing sought"
        );
        let mut idle = open(&[7], 1, 2);
        idle.seek(&empty).unwrap();
        idle.restored().unwrap();
    }

    #[test]
    fn damaged_named_positions_are_errors_not_panics() {
        let mut source = open(&[1, 2, 3], 0, 1);
        for split in &mut source.splits {
            split.reader.0 = 42;
        }
        let bytes = source.position();
        for cut in 0..bytes.len() {
            let mut fresh = open(&[1, 2, 3], 0, 1);
            assert!(fresh.seek_rescaled(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        for at in 0..bytes.len() {
            for flip in [0x01u8, 0x80, 0xff] {
                let mut damaged = bytes.clone();
                damaged[at] ^= flip;
                // Anything but a panic: an error, or positions of splits it names.
                let _ = open(&[1, 2, 3], 0, 1).seek_rescaled(&damaged);
            }
        }
        let mut trailing = bytes.clone();
        trailing.push(0);
        assert!(open(&[1, 2, 3], 0, 1).seek_rescaled(&trailing).is_err());
    }

    #[test]
    fn sequence_ranges_cover_the_sequence_once() {
        for p in 1..6 {
            let all: Vec<i64> = (0..p).flat_map(|i| sequence_range(-3, 10, i, p)).collect();
            assert_eq!(all, (-3..=10).collect::<Vec<_>>(), "parallelism {p}");
        }
        assert_eq!(sequence_range(5, 4, 0, 1).count(), 0);
    }
}
