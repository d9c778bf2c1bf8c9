//! Sinks: the public two-phase [`Sink`] trait, and the built-in sinks: collect into a vector,
//! print, write text files (exactly once, on [`Sink`]), or call a function.
//!
//! A [`Sink`] writes in two phases, as Flink's `TwoPhaseCommittingSink`: each subtask's
//! [`SinkWriter`] writes records (to a staging place: a temporary file, an open transaction)
//! and, when the subtask writes its part of checkpoint `e`, hands over what must be made
//! visible for the records before the cut ([`SinkWriter::prepare_commit`]: file names,
//! transaction ids). Those committables are stored in the checkpoint; when checkpoint `e`
//! completes, the coordinator calls [`Sink::commit`] for each. A restored job first commits
//! the restored checkpoint's committables again (so [`Sink::commit`] must be idempotent: a
//! crash may land between a commit and the next checkpoint), then calls [`Sink::recover`]
//! to abort what no completed checkpoint covered (the restored job writes those records
//! again). At the end of a bounded input each subtask prepares its last committables
//! ([`SinkWriter::prepare_commit`] with `u64::MAX`) and leaves them, with every one no
//! completed checkpoint covered, as its final part; once the whole job has ended the
//! coordinator marks it finished and commits them (a crash before that replays from the last
//! completed checkpoint, so nothing is published twice; see [`crate::checkpoint::format`]). Without
//! checkpoints they are committed at once. Together with sources that restore their
//! positions exactly, the output is exactly once.
//!
//! A sink a user writes in 30 lines, appending committed lines to one file per subtask:
//!
//! ```
//! use std::io::Write;
//! use std::path::PathBuf;
//! use typeinfo_runtime::{RuntimeContext, Sink, SinkContext, SinkWriter, StreamExecutionEnvironment};
//!
//! /// Staged lines become a `<dir>/staged-<subtask>-<checkpoint>` file; committing appends it
//! /// to `<dir>/out-<subtask>` once (a committed file is removed, so a repeated commit does nothing).
//! struct AppendSink(PathBuf);
//! struct AppendWriter { dir: PathBuf, subtask: usize, lines: Vec<String> }
//!
//! impl SinkWriter<String> for AppendWriter {
//!     type Committable = String;
//!     fn write(&mut self, line: String, _: &SinkContext) -> typeinfo_runtime::Result<()> {
//!         self.lines.push(line);
//!         Ok(())
//!     }
//!     fn prepare_commit(&mut self, checkpoint: u64) -> typeinfo_runtime::Result<Vec<String>> {
//!         let staged = self.dir.join(format!("staged-{}-{checkpoint}", self.subtask));
//!         let text: String = self.lines.drain(..).map(|l| l + "\n").collect();
//!         std::fs::write(&staged, text).map_err(|e| typeinfo_runtime::Error::Function { operator: "sink".into(), message: e.to_string() })?;
//!         Ok(vec![staged.to_string_lossy().into_owned()])
//!     }
//! }
//!
//! impl Sink<String> for AppendSink {
//!     type Writer = AppendWriter;
//!     type Committable = String;
//!     fn writer(&self, ctx: &RuntimeContext) -> typeinfo_runtime::Result<AppendWriter> {
//!         Ok(AppendWriter { dir: self.0.clone(), subtask: ctx.subtask_index(), lines: Vec::new() })
//!     }
//!     fn commit(&self, staged: String) -> typeinfo_runtime::Result<()> {
//!         let Ok(text) = std::fs::read(&staged) else { return Ok(()) }; // committed before
//!         let subtask = staged.rsplit('-').nth(1).unwrap_or("0");
//!         let mut out = std::fs::OpenOptions::new().create(true).append(true).open(self.0.join(format!("out-{subtask}")))
//!             .and_then(|mut f| { f.write_all(&text)?; f.sync_all() });
//!         out.and_then(|()| std::fs::remove_file(&staged)).map_err(|e| typeinfo_runtime::Error::Function { operator: "sink".into(), message: e.to_string() })
//!     }
//! }
//!
//! # fn main() -> typeinfo_runtime::Result<()> {
//! let dir = tempfile::tempdir().unwrap();
//! let env = StreamExecutionEnvironment::new();
//! env.from_collection(vec!["a".to_owned(), "b".to_owned()]).sink_to(AppendSink(dir.path().to_owned()));
//! env.execute("append")?;
//! assert_eq!(std::fs::read_to_string(dir.path().join("out-0")).unwrap(), "a\nb\n");
//! # Ok(())
//! # }
//! ```

use std::fmt::Display;
use std::fs::File;
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use typeinfo::{
    DataInputView, DataOutputView, FieldReader, SerializerConfig, SerializerSnapshot,
    SnapshotRegistry, TypeInfo, TypeSerializer,
};

use crate::error::{Error, Result};
use crate::operator::context::RuntimeContext;
use crate::operator::contract::{Operator, OperatorSetup, Outputs};
use crate::operator::element::NO_TIMESTAMP;
use crate::types::Data;

/// A sink that commits in two phases (see the [module docs](self)).
pub trait Sink<T>: Send + Sync + 'static {
    /// Writes one subtask's records.
    type Writer: SinkWriter<T, Committable = Self::Committable>;
    /// What a writer hands over to be committed (stored in checkpoints with its serializer).
    type Committable: Data;

    /// The writer of one subtask.
    ///
    /// # Errors
    ///
    /// Any error fails the job.
    fn writer(&self, ctx: &RuntimeContext) -> Result<Self::Writer>;

    /// Makes a committable's records visible. Must be idempotent: after a restore the
    /// restored checkpoint's committables are committed again.
    ///
    /// # Errors
    ///
    /// Any error fails the job (it is retried by the restore).
    fn commit(&self, committable: Self::Committable) -> Result<()>;

    /// Before a restored job runs (after the restored checkpoint's committables were
    /// committed again): aborts what earlier runs staged and no completed checkpoint
    /// covered.
    ///
    /// # Errors
    ///
    /// Any error fails the job before it starts.
    fn recover(&self) -> Result<()> {
        Ok(())
    }
}

/// Writes one subtask's records of a [`Sink`].
pub trait SinkWriter<T>: Send + 'static {
    /// What [`prepare_commit`](Self::prepare_commit) hands over.
    type Committable;

    /// Writes (stages) a record.
    ///
    /// # Errors
    ///
    /// Any error fails the job.
    fn write(&mut self, value: T, ctx: &SinkContext) -> Result<()>;

    /// The subtask writes its part of checkpoint `checkpoint` (or reached the end of its
    /// input): stage everything written so far durably and return what commits it.
    ///
    /// # Errors
    ///
    /// Any error fails the job.
    fn prepare_commit(&mut self, checkpoint: u64) -> Result<Vec<Self::Committable>>;
}

/// What a [`SinkWriter`] knows about a record.
#[derive(Debug, Clone, Copy)]
pub struct SinkContext {
    checkpoint: u64,
    timestamp: i64,
}

impl SinkContext {
    /// The checkpoint the record belongs to (it is committed with it).
    pub fn checkpoint(&self) -> u64 {
        self.checkpoint
    }
    /// The record's event timestamp.
    pub fn timestamp(&self) -> Option<i64> {
        (self.timestamp != NO_TIMESTAMP).then_some(self.timestamp)
    }
}

/// Commits the committables a sink's subtask stored in a checkpoint part (type-free: the
/// coordinator and the restore call it with the part's bytes).
pub(crate) trait Committer: Send + Sync {
    /// Commits every committable of one subtask's part.
    fn commit_part(&self, part: &[u8]) -> Result<()>;
    /// See [`Sink::recover`].
    fn recover(&self) -> Result<()>;
}

/// A [`Sink`] with the serializer of its committables.
pub(crate) struct SinkCommitter<T, S: Sink<T>> {
    sink: Arc<S>,
    serializer: <S::Committable as TypeInfo>::Serializer,
    _t: std::marker::PhantomData<fn(T)>,
}

impl<T, S: Sink<T>> SinkCommitter<T, S> {
    pub(crate) fn new(sink: Arc<S>, config: &SerializerConfig) -> Result<Self> {
        Ok(SinkCommitter {
            sink,
            serializer: S::Committable::create_serializer(config)?,
            _t: std::marker::PhantomData,
        })
    }

    /// A part: the marker, the committable serializer's snapshot, the count, the
    /// committables (`runtime/FORMAT.md`). The snapshot lets a job whose committable type
    /// changed (a field added, a field's type widened) read the committables of a
    /// checkpoint written before the change, as keyed state is read.
    fn encode(&self, committables: &[S::Committable]) -> Result<Vec<u8>> {
        let mut out = DataOutputView::new();
        out.write_u32(SNAPSHOT_MARKER);
        self.serializer.snapshot().write_to(&mut out)?;
        out.write_u32(
            u32::try_from(committables.len())
                .ok()
                .filter(|&n| n != SNAPSHOT_MARKER)
                .ok_or_else(|| {
                    Error::Config("2^32 - 1 or more committables in one checkpoint".into())
                })?,
        );
        for c in committables {
            self.serializer.serialize(c, &mut out)?;
        }
        Ok(out.into_inner())
    }

    fn decode(&self, part: &[u8]) -> Result<Vec<S::Committable>> {
        let corrupt = |e: typeinfo::Error| Error::Corrupt(format!("sink committables: {e}"));
        let mut input = DataInputView::new(part);
        let first = input.read_u32().map_err(corrupt)?;
        // A part written before snapshots were stored starts with its count and was written
        // by the serializer of its time: it is read with today's, as before.
        let (count, reader) = if first == SNAPSHOT_MARKER {
            let old = SerializerSnapshot::read_from(&mut input).map_err(corrupt)?;
            let reader = self
                .serializer
                .resolve(&old, &SnapshotRegistry::default())
                .into_reader(self.serializer.clone())
                .map_err(|incompatibility| Error::from(typeinfo::Error::from(incompatibility)))?;
            (input.read_u32().map_err(corrupt)?, reader)
        } else {
            (first, FieldReader::Current(self.serializer.clone()))
        };
        let mut out = Vec::with_capacity(typeinfo::capacity_for::<S::Committable>(
            (count as usize).min(input.remaining()),
            1,
        ));
        for _ in 0..count {
            out.push(reader.read(&mut input).map_err(corrupt)?);
        }
        if !input.is_empty() {
            return Err(Error::Corrupt(
                "sink committables: bytes after the last".into(),
            ));
        }
        Ok(out)
    }
}

/// The first `u32` of a sink's part that carries its committable serializer's snapshot (a
/// count never reaches it: [`SinkCommitter::encode`] refuses that many committables).
const SNAPSHOT_MARKER: u32 = u32::MAX;

impl<T: 'static, S: Sink<T>> Committer for SinkCommitter<T, S> {
    fn commit_part(&self, part: &[u8]) -> Result<()> {
        for c in self.decode(part)? {
            self.sink.commit(c)?;
        }
        Ok(())
    }
    fn recover(&self) -> Result<()> {
        self.sink.recover()
    }
}

/// Runs one subtask of a [`Sink`]: writes records, prepares committables into each
/// checkpoint part, and leaves its last ones as its final part at the end of input.
///
/// The committables in a part are cumulative, as the state of Flink's committer: every one
/// prepared since the latest completed checkpoint, not only those of this checkpoint. A
/// checkpoint may never complete (an operator whose input moved past several epochs at once
/// writes only the last of them), and what the sink prepared for it must then be committed
/// with the next one that does, and be re-committed by a restore from that one.
pub(crate) struct SinkOperator<T, S: Sink<T>> {
    writer: S::Writer,
    committer: Arc<SinkCommitter<T, S>>,
    epoch: u64,
    /// Committables not yet covered by a completed checkpoint, by the epoch they were
    /// prepared in.
    pending: std::collections::BTreeMap<u64, Vec<S::Committable>>,
    checkpoints: Option<crate::checkpoint::store::CheckpointStore>,
    /// The latest completed checkpoint the store reported, and when it was asked.
    done: Option<u64>,
    last_look: Option<std::time::Instant>,
    /// The operator's directory name in checkpoints, and this subtask's index.
    key: String,
    subtask: usize,
}

/// How often a sink asks the checkpoint store for its latest completed checkpoint.
const LOOK_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

impl<T: Data, S: Sink<T>> SinkOperator<T, S> {
    pub(crate) fn new(setup: &OperatorSetup, committer: Arc<SinkCommitter<T, S>>) -> Result<Self> {
        Ok(SinkOperator {
            writer: committer.sink.writer(&RuntimeContext::new(setup))?,
            committer,
            epoch: 0,
            pending: std::collections::BTreeMap::new(),
            checkpoints: setup.checkpoints.clone(),
            done: None,
            last_look: None,
            key: setup.key.clone(),
            subtask: setup.subtask,
        })
    }
}

impl<T: Data, S: Sink<T>> Operator<T, ()> for SinkOperator<T, S> {
    fn begin_epoch(&mut self, epoch: u64) {
        self.epoch = epoch;
    }
    #[inline]
    fn process(&mut self, ts: i64, value: T, _out: &mut Outputs<(), T>) -> Result<()> {
        self.writer.write(
            value,
            &SinkContext {
                checkpoint: self.epoch,
                timestamp: ts,
            },
        )
    }
    fn watermark(&mut self, _watermark: i64, _out: &mut Outputs<(), T>) -> Result<()> {
        Ok(())
    }
    fn snapshot(
        &mut self,
        epoch: u64,
        _keyed: &crate::checkpoint::store::KeyedPart<'_>,
    ) -> Result<Vec<u8>> {
        let prepared = self.writer.prepare_commit(epoch)?;
        self.pending.insert(epoch, prepared);
        // What a completed checkpoint covered was committed with it. Asking the store costs
        // a listing (requests, on an object store), so it is asked at most once a second:
        // a part that still carries committables of a completed checkpoint only repeats
        // commits, which are idempotent.
        if let Some(store) = &self.checkpoints {
            if self.last_look.is_none_or(|t| t.elapsed() >= LOOK_EVERY) {
                self.last_look = Some(std::time::Instant::now());
                self.done = store.latest_completed()?;
            }
        }
        if let Some(done) = self.done {
            self.pending.retain(|e, _| *e > done);
        }
        let all: Vec<S::Committable> = self.pending.values().flatten().cloned().collect();
        self.committer.encode(&all)
    }
    /// The end of the input. With checkpoints, nothing is committed here: what no completed
    /// checkpoint covered becomes this subtask's final part, which the coordinator commits
    /// once the whole job has ended (a crash before that replays from the last completed
    /// checkpoint, so a commit now could publish records twice). Without checkpoints there
    /// is no replay: it is committed at once.
    fn finish(&mut self, _out: &mut Outputs<(), T>) -> Result<()> {
        let last = self.writer.prepare_commit(u64::MAX)?;
        let all = std::mem::take(&mut self.pending)
            .into_values()
            .flatten()
            .chain(last);
        match &self.checkpoints {
            Some(store) => {
                let all: Vec<S::Committable> = all.collect();
                let part = crate::checkpoint::format::OperatorPart {
                    watermark: i64::MAX,
                    data: self.committer.encode(&all)?,
                };
                store.write_final_part(&self.key, self.subtask, &part)
            }
            None => all
                .into_iter()
                .try_for_each(|c| self.committer.sink.commit(c)),
        }
    }
}

/// The records a `collect` sink received, readable after the job ran.
#[derive(Debug)]
pub struct CollectedRecords<T> {
    pub(crate) records: Arc<Mutex<Vec<T>>>,
}

impl<T> Clone for CollectedRecords<T> {
    fn clone(&self) -> Self {
        CollectedRecords {
            records: Arc::clone(&self.records),
        }
    }
}

impl<T> CollectedRecords<T> {
    /// Takes the records received so far (in arrival order per subtask).
    pub fn take(&self) -> Vec<T> {
        std::mem::take(&mut *self.records.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

pub(crate) struct CollectSink<T> {
    pub(crate) records: Arc<Mutex<Vec<T>>>,
    pub(crate) buffer: Vec<T>,
}

impl<T: 'static> Operator<T, ()> for CollectSink<T> {
    #[inline]
    fn process(&mut self, _ts: i64, value: T, _out: &mut Outputs<(), T>) -> Result<()> {
        self.buffer.push(value);
        Ok(())
    }
    fn watermark(&mut self, _watermark: i64, _out: &mut Outputs<(), T>) -> Result<()> {
        Ok(())
    }
    fn end_of_activation(&mut self, _out: &mut Outputs<(), T>) -> Result<()> {
        if !self.buffer.is_empty() {
            self.records
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .append(&mut self.buffer);
        }
        Ok(())
    }
}

/// Prints `Display` lines to stdout; with `prefix`, Flink's `N> ` subtask prefix.
pub(crate) struct PrintSink {
    pub(crate) prefix: Option<String>,
    pub(crate) buffer: Vec<u8>,
}

impl<T: Display + 'static> Operator<T, ()> for PrintSink {
    #[inline]
    fn process(&mut self, _ts: i64, value: T, _out: &mut Outputs<(), T>) -> Result<()> {
        if let Some(p) = &self.prefix {
            self.buffer.extend_from_slice(p.as_bytes());
        }
        let _ = writeln!(self.buffer, "{value}");
        Ok(())
    }
    fn watermark(&mut self, _watermark: i64, _out: &mut Outputs<(), T>) -> Result<()> {
        Ok(())
    }
    fn end_of_activation(&mut self, _out: &mut Outputs<(), T>) -> Result<()> {
        if !self.buffer.is_empty() {
            let mut stdout = std::io::stdout().lock();
            stdout
                .write_all(&self.buffer)
                .and_then(|()| stdout.flush())
                .map_err(|source| Error::Io {
                    path: PathBuf::from("<stdout>"),
                    source,
                })?;
            self.buffer.clear();
        }
        Ok(())
    }
}

/// Writes `Display` lines to files in `dir`, one file per subtask and epoch, committed with
/// the checkpoints (two-phase, as Flink's file sink), built on [`Sink`]:
///
/// - records of epoch `e` go to `.part-<subtask>-<e>.inprogress`;
/// - when the subtask writes its part of checkpoint `e` ([`SinkWriter::prepare_commit`]),
///   the files of epochs up to `e` are synced and renamed to `.part-<subtask>-<e>.pending`,
///   and their names are the committables;
/// - when checkpoint `e` completes, [`Sink::commit`] renames them to `part-<subtask>-<e>`
///   (published; a file already published is left as it is). A job that runs to its end
///   publishes the rest once it is marked finished.
///
/// After a crash, the restore commits what the restored checkpoint covered again, and
/// [`Sink::recover`] deletes the rest, which the restored job writes again: every published
/// line is written exactly once. Without checkpoints everything is epoch 0 and published at
/// the end.
pub(crate) struct TextFileSink {
    pub(crate) dir: PathBuf,
}

/// The writer of one subtask of a [`TextFileSink`].
pub(crate) struct TextFileWriter {
    dir: PathBuf,
    subtask: usize,
    open: std::collections::BTreeMap<u64, (PathBuf, std::io::BufWriter<File>)>,
}

impl TextFileWriter {
    fn writer(&mut self, epoch: u64) -> Result<&mut std::io::BufWriter<File>> {
        let open = match self.open.entry(epoch) {
            std::collections::btree_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::btree_map::Entry::Vacant(v) => {
                let path = self
                    .dir
                    .join(format!(".part-{}-{}.inprogress", self.subtask, epoch));
                let file = File::create(&path).map_err(|source| Error::Io {
                    path: path.clone(),
                    source,
                })?;
                v.insert((path, std::io::BufWriter::new(file)))
            }
        };
        Ok(&mut open.1)
    }
}

impl<T: Display> SinkWriter<T> for TextFileWriter {
    type Committable = String;

    fn write(&mut self, value: T, ctx: &SinkContext) -> Result<()> {
        let dir = self.dir.clone();
        writeln!(self.writer(ctx.checkpoint())?, "{value}")
            .map_err(|source| Error::Io { path: dir, source })
    }

    /// Syncs and renames the files of epochs up to `checkpoint` to pending; their names are
    /// the committables.
    fn prepare_commit(&mut self, checkpoint: u64) -> Result<Vec<String>> {
        let done: Vec<u64> = self.open.range(..=checkpoint).map(|(e, _)| *e).collect();
        let mut pending = Vec::with_capacity(done.len());
        for e in done {
            let Some((path, writer)) = self.open.remove(&e) else {
                continue;
            };
            let file = writer.into_inner().map_err(|err| Error::Io {
                path: path.clone(),
                source: err.into_error(),
            })?;
            file.sync_all().map_err(|source| Error::Io {
                path: path.clone(),
                source,
            })?;
            let name = format!(".part-{}-{e}.pending", self.subtask);
            let to = self.dir.join(&name);
            std::fs::rename(&path, &to).map_err(|source| Error::Io { path: to, source })?;
            pending.push(name);
        }
        Ok(pending)
    }
}

impl<T: Display + 'static> Sink<T> for TextFileSink {
    type Writer = TextFileWriter;
    type Committable = String;

    fn writer(&self, ctx: &RuntimeContext) -> Result<TextFileWriter> {
        std::fs::create_dir_all(&self.dir).map_err(|source| Error::Io {
            path: self.dir.clone(),
            source,
        })?;
        Ok(TextFileWriter {
            dir: self.dir.clone(),
            subtask: ctx.subtask_index(),
            open: Default::default(),
        })
    }

    /// Publishes a pending file (renamed without its dot and suffix); one that is gone (already
    /// published by an earlier commit of the same checkpoint) counts as committed.
    fn commit(&self, name: String) -> Result<()> {
        let published = name.trim_start_matches('.').trim_end_matches(".pending");
        if published.contains(['/', '\\']) || published == name {
            return Err(Error::Corrupt(format!("not a pending file name: {name:?}")));
        }
        let (from, to) = (self.dir.join(&name), self.dir.join(published));
        match std::fs::rename(&from, &to) {
            Ok(()) => File::open(&self.dir)
                .and_then(|d| d.sync_all())
                .map_err(|source| Error::Io {
                    path: self.dir.clone(),
                    source,
                }),
            // Published already (a commit repeated after a restore), or staged in another
            // directory (a restored job that writes elsewhere): as Flink's file sink, a
            // pending file that is gone counts as committed.
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(source) => Err(Error::Io { path: from, source }),
        }
    }

    /// Deletes in-progress and pending files no completed checkpoint covered (the restored
    /// job writes their records again).
    fn recover(&self) -> Result<()> {
        if !self.dir.exists() {
            return Ok(());
        }
        let entries = std::fs::read_dir(&self.dir).map_err(|source| Error::Io {
            path: self.dir.clone(),
            source,
        })?;
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with(".part-")
                && (name.ends_with(".inprogress") || name.ends_with(".pending"))
            {
                match std::fs::remove_file(entry.path()) {
                    Err(err) if err.kind() != std::io::ErrorKind::NotFound => {
                        return Err(Error::Io {
                            path: entry.path(),
                            source: err,
                        })
                    }
                    _ => {}
                }
            }
        }
        Ok(())
    }
}

/// Calls a function with every record.
pub(crate) struct FnSink<F>(pub(crate) Arc<F>);

impl<T: 'static, F: Fn(T) + Send + Sync + 'static> Operator<T, ()> for FnSink<F> {
    #[inline]
    fn process(&mut self, _ts: i64, value: T, _out: &mut Outputs<(), T>) -> Result<()> {
        (self.0)(value);
        Ok(())
    }
    fn watermark(&mut self, _watermark: i64, _out: &mut Outputs<(), T>) -> Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)] // a test panics on what it does not expect

    use super::*;

    /// The committable of a sink's first version: a staged file.
    mod v1 {
        #[derive(typeinfo::TypeInfo, Clone, Debug, PartialEq)]
        #[typeinfo(name = "Staged")]
        pub struct Staged {
            pub file: String,
            pub records: u32,
        }
    }

    /// The same committable a release later: `records` widened, a field added.
    mod v2 {
        #[derive(typeinfo::TypeInfo, Clone, Debug, PartialEq)]
        #[typeinfo(name = "Staged")]
        pub struct Staged {
            pub file: String,
            pub records: u64,
            #[typeinfo(default)]
            pub bytes: u64,
        }
    }

    /// A sink that keeps what it was asked to commit.
    struct Keep<C>(Mutex<Vec<C>>);
    struct NoWriter<C>(std::marker::PhantomData<C>);

    impl<C: Data> SinkWriter<()> for NoWriter<C> {
        type Committable = C;
        fn write(&mut self, _: (), _: &SinkContext) -> Result<()> {
            Ok(())
        }
        fn prepare_commit(&mut self, _: u64) -> Result<Vec<C>> {
            Ok(Vec::new())
        }
    }

    impl<C: Data + Send> Sink<()> for Keep<C> {
        type Writer = NoWriter<C>;
        type Committable = C;
        fn writer(&self, _: &RuntimeContext) -> Result<NoWriter<C>> {
            Ok(NoWriter(std::marker::PhantomData))
        }
        fn commit(&self, committable: C) -> Result<()> {
            self.0.lock().expect("lock").push(committable);
            Ok(())
        }
    }

    fn committer<C: Data + Send>() -> SinkCommitter<(), Keep<C>> {
        SinkCommitter::new(
            Arc::new(Keep(Mutex::new(Vec::new()))),
            &SerializerConfig::default(),
        )
        .expect("serializer")
    }

    fn committed<C: Data + Send>(c: &SinkCommitter<(), Keep<C>>) -> Vec<C> {
        c.sink.0.lock().expect("lock").clone()
    }

    fn staged(i: u32) -> v1::Staged {
        v1::Staged {
            file: format!("part-{i}"),
            records: 1_000 + i,
        }
    }

    #[test]
    fn committables_round_trip_with_their_snapshot() {
        let c = committer::<v1::Staged>();
        let part = c.encode(&[staged(0), staged(1)]).unwrap();
        assert_eq!(part[..4], SNAPSHOT_MARKER.to_be_bytes());
        c.commit_part(&part).unwrap();
        assert_eq!(committed(&c), vec![staged(0), staged(1)]);
        assert!(c.decode(&c.encode(&[]).unwrap()).unwrap().is_empty());
    }

    #[test]
    fn a_changed_committable_type_reads_the_old_checkpoints_committables() {
        let old = committer::<v1::Staged>().encode(&[staged(7)]).unwrap();
        let new = committer::<v2::Staged>();
        new.commit_part(&old).unwrap();
        assert_eq!(
            committed(&new),
            vec![v2::Staged {
                file: "part-7".into(),
                records: 1_007,
                bytes: 0
            }]
        );
    }

    #[test]
    fn an_incompatible_committable_type_is_refused_by_name_before_any_commit() {
        let old = committer::<v1::Staged>().encode(&[staged(1)]).unwrap();
        let new = committer::<u64>();
        let err = new.commit_part(&old).unwrap_err();
        assert!(
            matches!(
                &err,
                Error::Type {
                    source: typeinfo::Error::Incompatible(_),
                    ..
                }
            ),
            "{err}"
        );
        assert!(err.to_string().contains("Staged"), "{err}");
        assert!(committed(&new).is_empty());
    }

    #[test]
    fn a_part_from_before_snapshots_is_read_with_todays_serializer() {
        // The layout of earlier releases: the count, then the committables.
        let c = committer::<String>();
        let mut out = DataOutputView::new();
        out.write_u32(2);
        for s in ["a", "bc"] {
            c.serializer.serialize(&s.to_owned(), &mut out).unwrap();
        }
        c.commit_part(&out.into_inner()).unwrap();
        assert_eq!(committed(&c), vec!["a".to_owned(), "bc".to_owned()]);
    }

    #[test]
    fn damaged_parts_are_refused_and_nothing_is_committed() {
        let c = committer::<v1::Staged>();
        let part = c.encode(&[staged(0), staged(1)]).unwrap();
        for cut in 0..part.len() {
            assert!(c.decode(&part[..cut]).is_err(), "cut at {cut} was read");
        }
        let mut longer = part.clone();
        longer.push(0);
        assert!(matches!(c.decode(&longer), Err(Error::Corrupt(_))));
        // A count that claims more than the part holds.
        let mut huge = DataOutputView::new();
        huge.write_u32(SNAPSHOT_MARKER);
        c.serializer.snapshot().write_to(&mut huge).unwrap();
        huge.write_u32(u32::MAX - 1);
        assert!(matches!(
            c.decode(&huge.into_inner()),
            Err(Error::Corrupt(_))
        ));
        assert!(committed(&c).is_empty());
    }
}
