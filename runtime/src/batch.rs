//! Batch execution of bounded jobs ([`RuntimeMode::Batch`](crate::RuntimeMode)), as Flink's
//! BATCH execution mode runs a DataStream program: the same program, the same functions, the
//! same results on bounded input, computed by sorting instead of keeping every key's state.
//!
//! Set the mode with [`StreamExecutionEnvironment::set_runtime_mode`]
//! (`RuntimeMode::Automatic` picks batch when every source is bounded). A source says it is
//! bounded with [`Source::boundedness`](crate::Source::boundedness) (the built-in sources
//! are); a batch job with an unbounded source is refused when the graph is built, naming the
//! source.
//!
//! # How it runs
//!
//! - **Sorted keyed inputs.** Every keyed operator (windows, rolling aggregations, keyed
//!   process functions, keyed `transform`s) first takes its whole input into a
//!   [`NormalizedKeySorter`](crate::sort::NormalizedKeySorter): records serialized into
//!   memory segments, an index of (normalized-key prefix, timestamp, pointer) sorted in place,
//!   full keys compared only on prefix ties, sorted runs spilled to unlinked temporary files
//!   beyond the memory budget ([`StreamExecutionEnvironment::set_batch_sort_memory`], default
//!   128 MiB per keyed operator subtask) and merged at the end. Then it runs its operator on
//!   one key after another, each key's records in timestamp order. A keyed operator emits
//!   nothing before its input ended: the exchange in front of it is blocking, as Flink's
//!   batch shuffles are; non-keyed operators stay pipelined.
//! - **A single key's state.** Keyed state lives on the heap whatever the configured
//!   backend, and only for the current key: at the key change it is dropped (Flink's
//!   single-key state backend), so memory holds one key's state, not every key's.
//! - **Perfect event time.** Sources and timestamp assigners give records their
//!   timestamps but emit no watermarks; the only watermark is the maximal one at the end of
//!   the input. While a key's records are processed its event time is `i64::MIN`, so no
//!   record is ever late: `allowed_lateness` changes nothing and the late-data side output
//!   stays empty.
//! - **Timers fire at the end of each key**: every event-time timer, then every
//!   processing-time timer, as if both clocks had reached their end; a timer registered by a
//!   firing is dropped (Flink's `BatchExecutionInternalTimeService`). So an event-time
//!   window fires once per key with all its contents; a count trigger still fires every `n`
//!   records (in timestamp order); a continuous trigger fires once, at the end; processing
//!   time does not advance for timers within a key.
//! - **Rolling aggregations** (`reduce`, `sum`, `min`, `max`, `min_by`, `max_by` on a
//!   keyed stream) emit only the final value of each key, with timestamp `i64::MAX` (Flink's
//!   `BatchGroupedReduceOperator`).
//! - **Side outputs** work as in streaming (a function's `ctx.output(&tag, ..)`); the
//!   late-data side output of windows receives nothing.
//! - **No checkpoints**: checkpointing is ignored, a batch job neither restores from a
//!   checkpoint or savepoint nor stops with one (both refused at graph build). A failure
//!   with a restart strategy reruns the whole job; exactly-once sinks commit at its end.
//!
//! Not built (yet): Flink restarts only the failed stage of a batch job, from the blocking
//! exchanges' persisted outputs; here a restart reruns the job from its sources.
//!
//! # Examples
//!
//! ```
//! use typeinfo_runtime::{
//!     RuntimeMode, StreamExecutionEnvironment, TumblingEventTimeWindows, WatermarkStrategy,
//! };
//!
//! # fn main() -> typeinfo_runtime::Result<()> {
//! let env = StreamExecutionEnvironment::new();
//! env.set_runtime_mode(RuntimeMode::Batch);
//! // (key, timestamp ms, amount), far out of order: nothing is late in batch mode.
//! let events = vec![('a', 15, 1i64), ('b', 1, 10), ('a', 2, 2), ('a', 30, 4), ('a', 1, 8)];
//! let sums = env
//!     .from_collection(events)
//!     .assign_timestamps_and_watermarks(
//!         WatermarkStrategy::for_monotonous_timestamps().with_timestamp_assigner(|e: &(char, i64, i64), _| e.1),
//!     )
//!     .key_by(|e: &(char, i64, i64)| e.0)
//!     .window(TumblingEventTimeWindows::of_millis(10))
//!     .reduce(|x, y| (x.0, x.1.max(y.1), x.2 + y.2))
//!     .collect();
//! env.execute("batch windows")?;
//! let mut sums: Vec<(char, i64)> = sums.take().into_iter().map(|(k, _, s)| (k, s)).collect();
//! sums.sort();
//! assert_eq!(sums, [('a', 1), ('a', 4), ('a', 10), ('b', 10)]);
//! # Ok(())
//! # }
//! ```
//!
//! [`StreamExecutionEnvironment::set_runtime_mode`]: crate::StreamExecutionEnvironment::set_runtime_mode
//! [`StreamExecutionEnvironment::set_batch_sort_memory`]: crate::StreamExecutionEnvironment::set_batch_sort_memory

use std::sync::Arc;

use crate::error::Result;
use crate::job::JobShared;
use crate::operator::{Operator, OperatorSetup, Outputs};
use crate::sort::{NormalizedKeySorter, SortConfig, SortedRecords};
use crate::{Data, Key};

/// Records a keyed operator handles per activation at the end of its input before it lets
/// its consumers run (bounds the output held between activations).
const SLICE: usize = 4096;

/// The operator of a keyed input: in batch mode wrapped into [`SortedKeyedInput`], as is in
/// streaming mode.
pub(crate) fn keyed_operator<K: Key, I: Data, O: 'static>(
    setup: &OperatorSetup,
    selector: &Arc<dyn Fn(&I) -> K + Send + Sync>,
    operator: Box<dyn Operator<I, O>>,
) -> Result<Box<dyn Operator<I, O>>> {
    if !setup.batch {
        return Ok(operator);
    }
    // Spilled runs go to the system's temporary directory (`TMPDIR`), unlinked.
    let config = SortConfig::default().memory_budget(setup.batch_sort_memory);
    Ok(Box::new(SortedKeyedInput {
        selector: Arc::clone(selector),
        sorter: Some(
            NormalizedKeySorter::new(config)?
                .with_serializer_config(setup.serializer_config.clone())?,
        ),
        sorted: None,
        current: None,
        inner: operator,
        name: setup.name.clone(),
        job: Arc::clone(&setup.job),
    }))
}

/// A keyed operator in batch mode: sorts its input by (key, timestamp), then runs the
/// operator key by key, ending each key with [`Operator::end_of_key`].
struct SortedKeyedInput<K: Key, I: Data, O> {
    selector: Arc<dyn Fn(&I) -> K + Send + Sync>,
    /// Takes the input; `None` once sorted.
    sorter: Option<NormalizedKeySorter<K, I>>,
    /// The sorted input, being replayed.
    sorted: Option<SortedRecords<K, I>>,
    /// The key whose records the operator is receiving.
    current: Option<K>,
    inner: Box<dyn Operator<I, O>>,
    name: String,
    job: Arc<JobShared>,
}

impl<K: Key, I: Data, O: 'static> Operator<I, O> for SortedKeyedInput<K, I, O> {
    #[inline]
    fn process(&mut self, ts: i64, value: I, _out: &mut Outputs<O, I>) -> Result<()> {
        let key = (self.selector)(&value);
        match self.sorter.as_mut() {
            Some(sorter) => sorter.add(&key, ts, &value),
            None => Err(crate::Error::Config(
                "a record arrived after the end of a batch operator's input".into(),
            )),
        }
    }

    /// Watermarks are not passed on (the operator's event time is per key); the maximal one
    /// follows the last key.
    fn watermark(&mut self, _watermark: i64, _out: &mut Outputs<O, I>) -> Result<()> {
        Ok(())
    }

    fn finish_step(&mut self, out: &mut Outputs<O, I>) -> Result<bool> {
        if let Some(sorter) = self.sorter.take() {
            // `<operator>.numSpilledRuns`: sorted runs this subtask wrote to disk.
            let runs = sorter.spilled_runs() as u64;
            self.job
                .count(&format!("{}.numSpilledRuns", self.name), runs);
            self.sorted = Some(sorter.finish()?);
        }
        let Some(sorted) = self.sorted.as_mut() else {
            return Ok(false);
        };
        for _ in 0..SLICE {
            let Some(record) = sorted.next() else {
                self.sorted = None;
                if self.current.take().is_some() {
                    self.inner.end_of_key(out)?;
                }
                self.inner.watermark(i64::MAX, out)?;
                return Ok(false);
            };
            let (key, ts, value) = record?;
            if self.current.as_ref() != Some(&key) {
                if self.current.is_some() {
                    self.inner.end_of_key(out)?;
                }
                self.current = Some(key);
            }
            self.inner.process(ts, value, out)?;
        }
        Ok(true)
    }

    fn finish(&mut self, out: &mut Outputs<O, I>) -> Result<()> {
        self.inner.finish(out)
    }

    fn open(&mut self) -> Result<()> {
        self.inner.open()
    }

    fn operator_state(&mut self) -> Option<&mut typeinfo_state::OperatorStateBackend> {
        self.inner.operator_state()
    }
}
