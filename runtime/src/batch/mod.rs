//! Batch execution of bounded jobs ([`RuntimeMode::Batch`](crate::config::RuntimeMode)), as Flink's
//! BATCH execution mode runs a DataStream program: the same program, the same functions, the
//! same results on bounded input, computed by sorting instead of keeping every key's state.
//!
//! Set the mode with [`StreamExecutionEnvironment::set_runtime_mode`]
//! (`RuntimeMode::Automatic` picks batch when every source is bounded). A source says it is
//! bounded with [`Source::boundedness`](crate::sort::Source::boundedness) (the built-in sources
//! are); a batch job with an unbounded source is refused when the graph is built, naming the
//! source.
//!
//! # How it runs
//!
//! - **Sorted keyed inputs.** Every keyed operator (windows, rolling aggregations, keyed
//!   process functions, keyed `transform`s) first takes its whole input into a
//!   [`NormalizedKeySorter`]: records serialized into
//!   memory segments, an index of (normalized-key prefix, timestamp, pointer) sorted in place,
//!   full keys compared only on prefix ties, sorted runs spilled to unlinked temporary files
//!   beyond the memory budget ([`StreamExecutionEnvironment::set_batch_sort_memory`], default
//!   128 MiB per keyed operator subtask) and merged at the end. Then it runs its operator on
//!   one key after another, each key's records in timestamp order. A keyed operator emits
//!   nothing before its input ended: the exchange in front of it is blocking, as Flink's
//!   batch shuffles are; non-keyed operators stay pipelined.
//! - **Windows that reduce or aggregate, by hash.** A keyed event-time window (tumbling or
//!   sliding, the assigner's trigger, no evictor) whose function is `reduce`, `aggregate`
//!   or `aggregate_with` does not sort its input: one hash table per subtask holds every
//!   (key, window)'s accumulator and the results go out at the end of the input; beyond
//!   the memory budget the tables spill sorted runs of partial accumulators that are merged
//!   at the end ([`hash`], Flink SQL's `HashAggregate`).
//!   [`StreamExecutionEnvironment::set_batch_hash_aggregation`]`(false)` sorts them as
//!   every other keyed operator.
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
//!   checkpoint or savepoint nor stops with one (both refused at graph build); exactly-once
//!   sinks commit at the end of the job.
//!
//! # Failures: the failed stage reruns, not the job
//!
//! A keyed operator's sorted input is a stage boundary, as a blocking exchange is in
//! Flink: the producing stage has finished when the keyed operator starts on its sorted
//! input. With a [`RestartStrategy`] set, when the keyed operator's
//! function fails (returns an error or panics) that stage alone is rerun: the operator is
//! created and opened again and reads its sorted input again from the first record (kept in
//! memory, or in the spilled runs, until the stage completes); the sources and every
//! operator before the sort are not run again. So that a rerun emits nothing twice, the stage
//! holds its output until it completes (a blocking result partition: in memory up to the sort
//! budget, spilled to unlinked temporary files beyond it) and only then passes it on; without
//! a restart strategy, nothing can rerun and the output streams out as it is produced.
//!
//! Each rerun counts against the restart strategy's attempts (shared with restarts of the
//! whole job) and waits its delay; `job.numStageRestarts` counts them. What reruns is the
//! keyed operator, not the pipelined operators after it: a failure in a source, in a
//! non-keyed operator or in a sink, or in the sort itself (I/O), restarts the whole job, as
//! in streaming mode. A function's fields start afresh in a rerun, as they do when Flink
//! restarts a task.
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
//! [`StreamExecutionEnvironment::set_runtime_mode`]: crate::api::handles::StreamExecutionEnvironment::set_runtime_mode
//! [`StreamExecutionEnvironment::set_batch_sort_memory`]: crate::api::handles::StreamExecutionEnvironment::set_batch_sort_memory
//! [`StreamExecutionEnvironment::set_batch_hash_aggregation`]: crate::api::handles::StreamExecutionEnvironment::set_batch_hash_aggregation

pub mod hash;
pub(crate) mod keyed;
pub mod sort;
