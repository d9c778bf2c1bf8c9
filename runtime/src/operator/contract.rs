//! The operator interface the drivers run: what an operator does with a record, a watermark,
//! the passing of processing time, and the end of its input.

use std::path::PathBuf;
use std::sync::Arc;

use typeinfo::SerializerConfig;
use typeinfo_state::{BackendOptions, KeyedBackend, OperatorStateBackend};

use crate::checkpoint::format::OperatorPart;
use crate::checkpoint::native_part::KeyedFile;
use crate::checkpoint::restore::Restore;
use crate::checkpoint::store::{CheckpointStore, KeyedPart};
use crate::config::StateBackend;
use crate::error::{Error, Result};
use crate::job::JobShared;
use crate::operator::element::Msg;
use crate::types::Key;

/// Gives a record's key (`K`), or maybe one (`Option<K>`).
type Selector<I, K> = Arc<dyn Fn(&I) -> K + Send + Sync>;

/// How a keyed operator finds a record's key.
pub(crate) enum KeyOf<I, K> {
    /// Every record has a key (a keyed stream).
    Every(Selector<I, K>),
    /// Some records have none: the broadcast input of a keyed broadcast operator, whose
    /// records are processed outside any key.
    Partly(Selector<I, Option<K>>),
}

impl<I, K> Clone for KeyOf<I, K> {
    fn clone(&self) -> Self {
        match self {
            KeyOf::Every(f) => KeyOf::Every(Arc::clone(f)),
            KeyOf::Partly(f) => KeyOf::Partly(Arc::clone(f)),
        }
    }
}

impl<I, K> KeyOf<I, K> {
    /// The key of `value`, if it has one.
    #[inline]
    pub(crate) fn key(&self, value: &I) -> Option<K> {
        match self {
            KeyOf::Every(f) => Some(f(value)),
            KeyOf::Partly(f) => f(value),
        }
    }
}

/// Where an operator emits: a buffer of elements the driver ships after each input batch.
pub(crate) struct Output<T> {
    pub(crate) msgs: Vec<Msg<T>>,
    /// Records emitted since the driver last took the count (for `numRecordsOut`).
    pub(crate) records: u64,
    from: u32,
}

impl<T> Output<T> {
    pub(crate) fn new(from: u32) -> Self {
        Output {
            msgs: Vec::new(),
            records: 0,
            from,
        }
    }

    /// Emits a record with an event timestamp ([`NO_TIMESTAMP`] for none).
    #[inline]
    pub(crate) fn collect(&mut self, ts: i64, value: T) {
        self.records += 1;
        self.msgs.push(Msg::Record {
            ts,
            value,
            key_group: None,
        });
    }

    pub(crate) fn watermark(&mut self, watermark: i64) {
        self.msgs.push(Msg::Watermark {
            from: self.from,
            watermark,
        });
    }

    /// Marks this subtask idle downstream (until its next watermark).
    pub(crate) fn idle(&mut self) {
        self.msgs.push(Msg::Idle { from: self.from });
    }
}

/// How many due timers an operator fires per call before the driver ships their output
/// (see [`Operator::firing`]).
pub(crate) const FIRING_SLICE: usize = 4096;

/// A record of a side output of any type: the tag's name and the value's bytes (written with
/// the type's serializer, read back by the node that reads the side output).
pub(crate) type SideRecord = (String, Vec<u8>);

/// The outputs of a one-input operator: the main output, the late-data side output (of the
/// input type, for windows), and the tagged side outputs of functions.
pub(crate) struct Outputs<O, I> {
    pub(crate) main: Output<O>,
    pub(crate) side: Output<I>,
    pub(crate) tagged: Output<SideRecord>,
}

impl<O, I> Outputs<O, I> {
    /// Empty outputs of the subtask whose watermarks say they come `from` it.
    pub(crate) fn new(from: u32) -> Self {
        Outputs {
            main: Output::new(from),
            side: Output::new(from),
            tagged: Output::new(from),
        }
    }

    /// Sends a watermark on every output (as Flink does for side outputs).
    pub(crate) fn watermark(&mut self, watermark: i64) {
        self.main.watermark(watermark);
        self.side.watermark(watermark);
        self.tagged.watermark(watermark);
    }

    /// Marks the operator's subtask idle on every output.
    pub(crate) fn idle(&mut self) {
        self.main.idle();
        self.side.idle();
        self.tagged.idle();
    }
}

/// An operator with one input (possibly fed by several edges) and its outputs.
pub(crate) trait Operator<I, O>: 'static {
    /// The records that follow belong to checkpoint epoch `epoch`.
    fn begin_epoch(&mut self, _epoch: u64) {}

    /// Processes one record.
    fn process(&mut self, ts: i64, value: I, out: &mut Outputs<O, I>) -> Result<()>;

    /// Processes one record whose key group the exchange before this operator computed to
    /// route it (the group of this operator's key of `value`, by the job's max parallelism):
    /// a keyed operator hands it to its state backend
    /// ([`set_current_key_in_group`](typeinfo_state::KeyedStateBackend::set_current_key_in_group))
    /// instead of serializing and hashing the key again. The default ignores it.
    fn process_in_group(
        &mut self,
        ts: i64,
        value: I,
        key_group: u16,
        out: &mut Outputs<O, I>,
    ) -> Result<()> {
        let _ = key_group;
        self.process(ts, value, out)
    }

    /// The operator's input watermark advanced to `watermark`: fire what it makes due and
    /// pass it on.
    fn watermark(&mut self, watermark: i64, out: &mut Outputs<O, I>) -> Result<()> {
        out.watermark(watermark);
        Ok(())
    }

    /// Whether the last [`watermark`](Self::watermark) left due timers to fire: an operator
    /// with timers fires at most [`FIRING_SLICE`] per call, so that a watermark that makes
    /// millions due (the end of the input, over a window per key) does not hold their output
    /// in memory at once. The driver ships the output, lets the consumers run, and calls
    /// [`resume_firing`](Self::resume_firing) before anything else reaches the operator; the
    /// watermark goes downstream after its last timer.
    fn firing(&self) -> bool {
        false
    }

    /// Fires the next slice of what the last watermark made due (see
    /// [`firing`](Self::firing)).
    fn resume_firing(&mut self, _out: &mut Outputs<O, I>) -> Result<()> {
        Ok(())
    }

    /// Called once at the end of each activation (periodic watermarks).
    fn end_of_activation(&mut self, _out: &mut Outputs<O, I>) -> Result<()> {
        Ok(())
    }

    /// The next processing time (ms since the epoch) the operator wants to be woken at.
    fn next_processing_time(&self) -> Option<i64> {
        None
    }

    /// Processing time reached `now` (ms since the epoch).
    fn processing_time(&mut self, _now: i64, _out: &mut Outputs<O, I>) -> Result<()> {
        Ok(())
    }

    /// Every input is exhausted: work that takes more than one activation (batch mode's
    /// sorted input, [`crate::batch::keyed`]) does a slice of it and returns `true` while more
    /// remains; the driver ships the output and calls again before [`finish`](Self::finish).
    fn finish_step(&mut self, _out: &mut Outputs<O, I>) -> Result<bool> {
        Ok(false)
    }

    /// Every input is exhausted (after the maximal watermark, if the inputs sent one).
    fn finish(&mut self, _out: &mut Outputs<O, I>) -> Result<()> {
        Ok(())
    }

    /// Batch mode: the records of the current key ended. Fires every event-time timer, then
    /// every processing-time timer, as if both clocks had reached their end (a timer a firing
    /// registers is dropped, as Flink's batch timer service does), drops the key's state, and
    /// starts the next key's event time at the minimum again.
    fn end_of_key(&mut self, _out: &mut Outputs<O, I>) -> Result<()> {
        Ok(())
    }

    /// Writes the operator's part of checkpoint `epoch`: keyed state through `keyed` (if it
    /// has any); returns its operator-local bytes.
    fn snapshot(&mut self, _epoch: u64, _keyed: &KeyedPart<'_>) -> Result<Vec<u8>> {
        Ok(Vec::new())
    }

    /// Restores from the keyed state files and operator-local parts of every subtask of
    /// the snapshot (any parallelism); called once, before the first record.
    fn restore(&mut self, _keyed: &[KeyedFile], _parts: &[OperatorPart]) -> Result<()> {
        Ok(())
    }

    /// The operator's operator (non-keyed) state, if it has any: the driver writes it into
    /// every checkpoint and restores it (redistributed to the new parallelism) after
    /// [`restore`](Self::restore).
    fn operator_state(&mut self) -> Option<&mut OperatorStateBackend> {
        None
    }

    /// Called once after every restore, before the first record.
    fn open(&mut self) -> Result<()> {
        Ok(())
    }
}

/// A source: emits records until it is exhausted.
pub(crate) trait SourceFunction<O>: 'static {
    /// Emits at most `budget` records into `out`, and records of tagged side outputs into
    /// `tagged`; returns `false` once exhausted.
    fn run(
        &mut self,
        out: &mut Output<O>,
        tagged: &mut Output<SideRecord>,
        budget: usize,
    ) -> Result<bool>;

    /// The position to resume from (written into checkpoints).
    fn position(&self) -> Vec<u8>;

    /// Resumes from a position written by [`position`](Self::position).
    fn seek(&mut self, position: &[u8]) -> Result<()>;

    /// Resumes the splits this subtask reads from a position another subtask wrote at
    /// another parallelism (a restore that rescales a source); the splits it holds that
    /// this subtask does not read are left to theirs.
    fn seek_rescaled(&mut self, position: &[u8]) -> Result<()>;

    /// Whether a restore gives this subtask every subtask's position, at any parallelism
    /// ([`seek_rescaled`](Self::seek_rescaled) with each): a source whose splits have names
    /// finds them by name wherever they were.
    fn restores_by_split_id(&self) -> bool {
        false
    }

    /// Called once after the positions of a restore were sought.
    fn restored(&mut self) -> Result<()> {
        Ok(())
    }

    /// The position [`position`](Self::position) gave was written into checkpoint
    /// `checkpoint` (remembered for [`checkpoint_complete`](Self::checkpoint_complete)).
    fn checkpointed(&mut self, _checkpoint: u64) {}

    /// Checkpoint `checkpoint` completed (Flink's `notifyCheckpointComplete`).
    fn checkpoint_complete(&mut self, _checkpoint: u64) -> Result<()> {
        Ok(())
    }
}

/// What an operator's subtask knows about its place in the job.
#[derive(Clone)]
pub(crate) struct OperatorSetup {
    /// The job's name.
    pub(crate) job_name: String,
    pub(crate) name: String,
    /// The node's id in the stream graph.
    pub(crate) node: usize,
    pub(crate) subtask: usize,
    pub(crate) parallelism: usize,
    pub(crate) max_parallelism: u32,
    pub(crate) serializer_config: SerializerConfig,
    pub(crate) state_backend: StateBackend,
    pub(crate) state_dir: PathBuf,
    pub(crate) auto_watermark_interval_ms: i64,
    pub(crate) job: Arc<JobShared>,
    /// The snapshot this run restores from.
    pub(crate) restore: Option<Arc<Restore>>,
    /// The operator's directory name in checkpoints.
    pub(crate) key: String,
    /// The job's checkpoints, when it takes them.
    pub(crate) checkpoints: Option<CheckpointStore>,
    /// The job runs in batch mode ([`crate::batch::keyed`]).
    pub(crate) batch: bool,
    /// Batch mode: the memory budget of a keyed operator's sorter.
    pub(crate) batch_sort_memory: usize,
    /// Batch mode: windows that reduce or aggregate may run as a hash aggregation.
    pub(crate) batch_hash_aggregation: bool,
    /// Flow control: a source subtask's in-flight budget, in records.
    pub(crate) max_in_flight_records: u64,
    /// The job's restart strategy (batch mode reruns a failed stage by it).
    pub(crate) restart_strategy: crate::config::RestartStrategy,
}

impl OperatorSetup {
    /// An empty operator state backend for this subtask (with the job's serializer config).
    pub(crate) fn operator_state_backend(&self) -> OperatorStateBackend {
        OperatorStateBackend::new(self.subtask as u32, self.parallelism as u32)
            .with_serializer_config(self.serializer_config.clone())
    }

    /// Opens this subtask's keyed state backend (its key-group range of the job): in batch
    /// mode always on the heap, where it holds one key at a time ([`crate::batch::keyed`]).
    pub(crate) fn keyed_backend<K: Key>(&self) -> Result<KeyedBackend<K>> {
        let options = BackendOptions::for_subtask(
            self.max_parallelism,
            self.parallelism as u32,
            self.subtask as u32,
        )
        .map_err(|source| Error::State {
            operator: self.name.clone(),
            source,
        })?
        .serializer_config(self.serializer_config.clone());
        let dir = self.state_dir.join(format!("subtask-{}", self.subtask));
        let backend = match &self.state_backend {
            StateBackend::RocksDb { options: rocks, .. } if !self.batch => {
                KeyedBackend::rocks_db(&dir, options, rocks.clone())
            }
            _ => KeyedBackend::heap(options),
        };
        backend.map_err(|source| Error::State {
            operator: self.name.clone(),
            source,
        })
    }
}

/// The wall clock in milliseconds since the Unix epoch (processing time).
pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}
