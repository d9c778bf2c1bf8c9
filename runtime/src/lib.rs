//! The typeinfo runtime: Flink's DataStream API, keyed event-time windows and watermarks for
//! [`TypeInfo`](typeinfo::TypeInfo) records, executed on timely dataflow.
//!
//! A job is written against a [`StreamExecutionEnvironment`]: sources give a
//! [`DataStream`], and each call that adds an operator (`map`, `window(..).aggregate(..)`,
//! `transform`, a sink, ...) records one transformation (plain data: name, uid, parallelism,
//! its inputs with their partitioning) and a typed builder; `key_by`, `rebalance`,
//! `broadcast` and `union` only say how the next operator reads its inputs.
//! [`execute`](StreamExecutionEnvironment::execute) turns the transformations into a
//! [`StreamGraph`] (serializers are checked there, so a disabled generic type fails before
//! anything runs), compiles it onto timely dataflow on every worker (each builder assembles
//! its operator with its real types around a driver), and runs it, restarting from the latest
//! checkpoint by its [`RestartStrategy`].
//!
//! Operators are chained as Flink chains them (on by default): consecutive operators joined
//! by a forward edge at equal parallelism, a source included, run as one timely operator per
//! subtask, each handing its records to the next by value in the same activation, each
//! keeping its own state, checkpoint part, watermark and metrics
//! ([`StreamGraph::chains`] gives the rules; [`StreamExecutionEnvironment::disable_operator_chaining`],
//! [`DataStream::start_new_chain`] and [`DataStream::disable_chaining`] the controls). A
//! checkpoint written with chaining restores without it, and the other way round.
//!
//! A keyed edge into more than one subtask computes each record's key group to route it, and
//! hands the group to the keyed operator with the record, which gives it to its state backend
//! (`KeyedStateBackend::set_current_key_in_group`) instead of serializing and hashing the key
//! again (Flink computes it twice, in its partitioner and in `setCurrentKey`). Into one
//! subtask nothing is routed, so the operator computes the group once. The group lives in
//! memory only: a batch sent to another process does not carry it (its layout is unchanged),
//! and the receiver computes the group of each key itself, so bytes from outside never tell
//! a backend where a key's state belongs. Two-input keyed operators (connected streams,
//! joins, broadcast) compute the group themselves.
//!
//! The crate is a folder per layer, and each layer imports only the layers below it (the
//! test `tests/architecture.rs` reads every file, derives the module graph from its
//! `crate::` paths and fails on an import upward, through a re-export, or in a circle):
//!
//! | layer | folder | what lives there |
//! |---|---|---|
//! | API | `api/` | the environment and the stream handles (plan-building only) |
//! | execution | `exec/` | compiling the plan onto timely, drivers, edges, coordinator, run |
//! | processes | `net/` | connecting the processes of a job, the handshake |
//! | user contracts, batch | `user/`, `batch/` | what users implement; batch execution (sorted inputs, hash aggregation of windows) |
//! | windowing | `windowing/` | window assigners, triggers, evictors, the window operator |
//! | operators | `operator/` | the operator contract, records, contexts, timers, built-ins |
//! | checkpoints | `checkpoint/` | format, store, restore, incremental parts, storage |
//! | plan | `plan.rs` | transformations and the stream graph |
//! | configuration, job | `config/`, `job.rs` | execution config, the job's shared state |
//! | base | `types.rs`, `error.rs`, `metrics.rs` | `Data`, `Key`, errors, metrics |
//!
//! Nothing inside the crate imports from this file: it declares the layers and re-exports
//! for users.
//!
//! Checkpoints ([`checkpoint`]) of RocksDB state are incremental by default: each uploads
//! the SST files written since the last one and refers to the others ([`native_part`]);
//! savepoints are always in the backend-independent format.
//!
//! Bounded jobs can run in batch mode ([`RuntimeMode::Batch`], module [`batch`]): keyed
//! operators sort their input by normalized key and timestamp ([`sort`]) and run one key at
//! a time with that key's state only; event time is perfect and nothing is late.
//!
//! Two inputs meet in one operator through [`DataStream::connect`] (co-map, co-process
//! functions, keyed with state shared by both inputs), window joins and co-groups
//! ([`DataStream::join`], [`DataStream::co_group`]) and interval joins
//! ([`KeyedStream::interval_join`]); see the module [`connect`]. Users' operators with two
//! inputs implement [`TwoInputOperator`]. The broadcast state pattern (a rules stream sent to
//! every subtask and kept in broadcast state beside a keyed stream) is the module
//! [`broadcast`].
//!
//! An operator whose inputs all ended while the rest of the job goes on (after a bounded
//! source of rules, say) writes its final state once; every later checkpoint takes it,
//! marked finished, so checkpoints keep completing, and a job restored from one does not end
//! that operator's input a second time (Flink's checkpoints after tasks finished).
//!
//! Users bring their own [`Source`]s (splits, positions, idleness), two-phase [`Sink`]s,
//! operators ([`OneInputOperator`]) and functions ([`ProcessFunction`],
//! [`KeyedProcessFunction`]); see the modules [`source`], [`sink`] and [`metrics`].
//!
//! ```
//! use std::time::Duration;
//! use typeinfo::TypeInfo;
//! use typeinfo_runtime::{StreamExecutionEnvironment, TumblingEventTimeWindows, WatermarkStrategy};
//!
//! #[derive(TypeInfo, Clone, Debug)]
//! struct Click { user: String, ts: i64 }
//!
//! # fn main() -> typeinfo_runtime::Result<()> {
//! let env = StreamExecutionEnvironment::new();
//! let clicks = env.from_collection(vec![
//!     Click { user: "ann".into(), ts: 1_000 },
//!     Click { user: "bob".into(), ts: 1_500 },
//!     Click { user: "ann".into(), ts: 2_500 },
//! ]);
//! let counts = clicks
//!     .assign_timestamps_and_watermarks(
//!         WatermarkStrategy::for_bounded_out_of_orderness(Duration::from_millis(100)).with_timestamp_assigner(|c: &Click, _| c.ts),
//!     )
//!     .key_by(|c: &Click| c.user.clone())
//!     .window(TumblingEventTimeWindows::of(Duration::from_secs(1)))
//!     .aggregate_with(typeinfo_runtime::functions::Count, |user: &String, w, n: u64| format!("{user} {}..{} {n}", w.start, w.end))
//!     .collect();
//! env.execute("clicks per second")?;
//! let mut lines = counts.take();
//! lines.sort();
//! assert_eq!(lines, ["ann 1000..2000 1", "ann 2000..3000 1", "bob 1000..2000 1"]);
//! # Ok(())
//! # }
//! ```
//!
//! # Execution
//!
//! Each parallel subtask is a timely worker. By default the workers are threads of this
//! process; [`ExecutionConfig::cluster`] runs the same program as one of several processes
//! (on one host or many) connected by timely's own TCP communication. Operators with a lower
//! parallelism than the job leave the extra workers idle. Forward edges between operators of
//! the same parallelism stay on their worker; hash edges route each record to subtask
//! `key_group * parallelism / max_parallelism` (Flink's formula, so keyed state rescales by
//! whole key groups); records that cross processes are written with their own serializers
//! (this crate's `FORMAT.md`).
//!
//! # Time
//!
//! Watermarks travel in band, as Flink's do: each subtask sends a copy of every watermark to
//! every consumer subtask, in order with its records, and an operator's watermark is the
//! minimum of the last watermark of each of its input subtasks. A record is therefore judged
//! late against exactly the watermark that preceded it on its channel. The end of a bounded
//! input sends the maximal watermark, which fires every pending event-time window and timer.
//! Windows follow Flink's `WindowOperator`: assigners ([`assigner`]), triggers
//! ([`trigger`]), evictors ([`evictor`]) and process window functions with a context
//! ([`ProcessWindowFunction`]); keyed with [`KeyedStream::window`], over a whole stream with
//! [`DataStream::window_all`].
//!
//! # Decisions where Flink leaves a choice
//!
//! - The default parallelism is 1 (deterministic output order for simple jobs); set it with
//!   [`StreamExecutionEnvironment::set_parallelism`].
//! - Default max parallelism is Flink's formula over the job's parallelism; set it explicitly
//!   for jobs whose state must be rescaled later.
//! - At the end of a bounded input, pending processing-time windows and timers fire (Flink
//!   drops them silently; losing results at the end of a job is the surprise users report).
//! - At the end of a bounded input, pending processing-time timers fire up to the latest one
//!   pending then; a timer a firing registers beyond it (a continuous trigger's next firing)
//!   does not, so a job with a continuous processing-time trigger on global windows ends.
//! - A `ContinuousEventTimeTrigger` whose window the end of the input would fire more than
//!   2^20 times (a global window) fires it once more at its end instead (Flink's job never
//!   finishes there; see [`trigger::ContinuousEventTimeTrigger`]).
//! - Per-window state of a `ProcessWindowFunction` (marked `per_window`) is refused with
//!   merging windows, as Flink's `MergingWindowStateStore` refuses it.
//! - When session windows merge, their list contents are concatenated in the order of the
//!   merged windows' state windows (Flink's order follows a hash set), so a `CountEvictor` on
//!   merged sessions keeps a deterministic set of elements.
//! - A `reduce` with an evictor that evicted every element runs no function (Flink hands the
//!   window function a `null`); an `aggregate` emits the empty accumulator's result, as
//!   Flink's does.
//! - Timers are kept on the heap by both state backends (Flink's `HEAP` timer service); window
//!   contents and all user state live in the chosen state backend, namespaced by window.
//! - A RocksDB backend without a directory lives in a temporary directory removed at the end
//!   of the job; a killed process cannot remove it (set a directory, or `TMPDIR`, for jobs that
//!   may be killed).

#![warn(missing_docs)]

/// Thin entry points to the runtime's decoders for the fuzz suite (`fuzz/`); not an API.
#[doc(hidden)]
pub mod __fuzz;

// The layers, top to bottom (each imports only the layers below it; the test
// `tests/architecture.rs` enforces the order): the API, execution, what users implement
// beside windowing and batch execution, the operator contract, checkpoints, the plan,
// configuration and the job's shared state, and the base types.
mod api;
pub mod batch;
pub mod checkpoint;
mod config;
mod error;
mod exec;
mod job;
pub mod metrics;
mod net;
mod operator;
mod plan;
mod types;
mod user;
mod windowing;

// The public modules, where users have always found them.
pub use batch::sort;
pub use checkpoint::{native_part, storage};
pub use net::handshake;
pub use user::{functions, sink, source, watermark};
pub use windowing::{assigner, evictor, trigger, window};

pub mod connect {
    //! Two inputs: [`DataStream::connect`] joins two streams of different types into
    //! [`ConnectedStreams`], processed by one function with a method per input, as Flink's
    //! `connect` and co-functions do.
    //!
    //! - `a.connect(&b).map(f1, f2)` / `flat_map(f1, f2)`: a function per input, one output.
    //! - `a.connect(&b).process(f)`: a [`CoProcessFunction`] (non-keyed), with side outputs.
    //! - `a.connect(&b).key_by(ka, kb).process(f)`: a [`KeyedCoProcessFunction`]. Both inputs
    //!   are partitioned by the same key type; the function's keyed state is shared by both
    //!   inputs under the current key, and it registers event- and processing-time timers.
    //! - `a.key_by(ka).interval_join(&b.key_by(kb)).between(lower, upper).process(f)`: an
    //!   interval join, `f` on every pair with `a.ts + lower <= b.ts <= a.ts + upper`
    //!   ([`IntervalJoin`]).
    //! - `a.join(&b).where_(ka).equal_to(kb).window(assigner).apply(f)`: a window join, `f` on
    //!   every pair of a key's records in a window; `a.co_group(&b)...apply(f)`: both sides'
    //!   records of a key and window at once. Every window assigner, trigger and evictor
    //!   applies (Flink builds them the same way: both inputs tagged into one windowed stream).
    //!
    //! # How it runs
    //!
    //! Each input is tagged into one stream of [`CoInput`] (`First(a)` or `Second(b)`, a light
    //! operator per input named `Connect (input 1)` and `Connect (input 2)`), the two are
    //! unioned, and one operator dispatches each record to the function's method for its input.
    //! Everything a one-input operator has therefore holds for both inputs at once:
    //!
    //! - **Watermarks**: the operator's event time is the minimum over the subtasks of *both*
    //!   inputs (its driver takes the minimum over every sending subtask), so a timer fires only
    //!   when both inputs passed it; an idle input ([`WatermarkStrategy::with_idleness`]) stops
    //!   holding the other back, as in Flink.
    //! - **Checkpoints, restores, rescaling, both state backends, several processes** and
    //!   **batch mode** (where a keyed co-function sees each key's records of both inputs
    //!   together, in timestamp order).
    //! - **Order between the inputs** is not defined (as in Flink): records of one input keep
    //!   their order per sending subtask, but how the two interleave depends on scheduling.
    //!   Functions must not depend on it; an enrichment that may see the order before the
    //!   customer buffers the order (see the example).
    //!
    //! # Examples
    //!
    //! Orders enriched with their customer's name, whichever arrives first:
    //!
    //! ```
    //! use typeinfo_runtime::{KeyedCoProcessFunction, KeyedContext, StreamExecutionEnvironment};
    //! use typeinfo_state::{KeyedStateBackend, ListState, ListStateDescriptor, ValueState, ValueStateDescriptor};
    //!
    //! #[derive(Clone, Default)]
    //! struct Enrich {
    //!     name: Option<ValueState<(), String>>,
    //!     waiting: Option<ListState<(), i64>>,
    //! }
    //!
    //! impl KeyedCoProcessFunction<u32, (u32, String), (u32, i64), (String, i64)> for Enrich {
    //!     fn open(&mut self, state: &mut typeinfo_runtime::KeyedBackend<u32>) -> typeinfo_runtime::Result<()> {
    //!         self.name = Some(state.value_state(&ValueStateDescriptor::new("name"))?);
    //!         self.waiting = Some(state.list_state(&ListStateDescriptor::new("waiting"))?);
    //!         Ok(())
    //!     }
    //!     // A customer: remember the name, release the orders that waited for it.
    //!     fn process_element1(&mut self, c: (u32, String), ctx: &mut KeyedContext<'_, u32, (String, i64)>) -> typeinfo_runtime::Result<()> {
    //!         let (name, waiting) = (self.name.as_ref().unwrap(), self.waiting.as_ref().unwrap());
    //!         name.update(ctx.state(), &(), c.1.clone())?;
    //!         for amount in waiting.get(ctx.state(), &())? {
    //!             ctx.collect((c.1.clone(), amount));
    //!         }
    //!         waiting.clear(ctx.state(), &())?;
    //!         Ok(())
    //!     }
    //!     // An order: enrich it now, or wait for its customer.
    //!     fn process_element2(&mut self, o: (u32, i64), ctx: &mut KeyedContext<'_, u32, (String, i64)>) -> typeinfo_runtime::Result<()> {
    //!         match self.name.as_ref().unwrap().value(ctx.state(), &())? {
    //!             Some(name) => ctx.collect((name, o.1)),
    //!             None => self.waiting.as_ref().unwrap().add(ctx.state(), &(), o.1)?,
    //!         }
    //!         Ok(())
    //!     }
    //! }
    //!
    //! # fn main() -> typeinfo_runtime::Result<()> {
    //! let env = StreamExecutionEnvironment::new();
    //! let customers = env.from_collection(vec![(1u32, "ada".to_owned()), (2, "bob".to_owned())]);
    //! let orders = env.from_collection(vec![(2u32, 20i64), (1, 10), (2, 5), (3, 7)]);
    //! let enriched = customers
    //!     .connect(&orders)
    //!     .key_by(|c: &(u32, String)| c.0, |o: &(u32, i64)| o.0)
    //!     .process(Enrich::default())
    //!     .collect();
    //! env.execute("enrich")?;
    //! let mut out = enriched.take();
    //! out.sort();
    //! assert_eq!(out, [("ada".into(), 10), ("bob".into(), 5), ("bob".into(), 20)]);
    //! # Ok(())
    //! # }
    //! ```
    //!
    //! [`WatermarkStrategy::with_idleness`]: crate::WatermarkStrategy::with_idleness

    pub use crate::api::handles::{
        CoGroup, ConnectWith, ConnectedStreams, IntervalJoin, Join, KeyedConnectedStreams,
        TwoInputKeyed, TwoInputWhere, TwoInputWindowed, TwoInputWindows,
    };
    pub use crate::user::interval_join::{JoinContext, ProcessJoinFunction};
    pub use crate::user::two_input::{
        CoInput, CoProcessFunction, KeyedCoProcessFunction, TwoInputOperator,
    };
}

pub mod broadcast {
    //! The broadcast state pattern, as Flink's: one input (rules, thresholds, a dimension table)
    //! is sent to every subtask of an operator and kept in **broadcast state**, a map every
    //! subtask holds a copy of; the other input (keyed or not) is processed against it.
    //!
    //! - `rules.broadcast_with(&[&descriptor])` declares the broadcast states and gives a
    //!   [`BroadcastStream`] (Flink's `broadcast(MapStateDescriptor...)`; the name differs from
    //!   Flink's because [`DataStream::broadcast`] already is the plain broadcast partitioner).
    //! - `keyed.connect(&rules).process(f)` runs a [`KeyedBroadcastProcessFunction`];
    //!   `stream.connect(&rules).process(f)` (a non-keyed stream) a [`BroadcastProcessFunction`].
    //! - The broadcast side ([`process_broadcast_element`](KeyedBroadcastProcessFunction::process_broadcast_element))
    //!   reads and writes the broadcast state ([`BroadcastContext::broadcast_state`]) and can
    //!   visit every key's keyed state ([`BroadcastContext::apply_to_keyed_state`]); the other
    //!   side reads it only ([`ReadOnlyContext::broadcast_state`]), as in Flink, so that every
    //!   subtask's copy stays the same: each subtask receives every broadcast record, and the
    //!   function must update the state the same way on each (deterministically, from the
    //!   record alone).
    //! - **Checkpoints** hold each subtask's copy; a **restore** gives every new subtask a copy,
    //!   at any parallelism (Flink does the same; the copies are equal, so which one does not
    //!   matter). A broadcast state must be declared in `broadcast_with` to be used: that is how
    //!   the operator knows to restore it.
    //! - **Event time**: the operator's watermark is the minimum of both inputs', as for every
    //!   two-input operator here. A broadcast input that never sends watermarks (no
    //!   [`WatermarkStrategy`](crate::WatermarkStrategy)) holds event time back until it ends; give
    //!   it one, or mark it idle with
    //!   [`WatermarkStrategy::with_idleness`](crate::WatermarkStrategy::with_idleness).
    //! - **Order between the inputs** is not defined (as in Flink): a record of the keyed side may
    //!   arrive before the broadcast record it needs; buffer it in keyed state when that matters.
    //!   In **batch mode** the operator gets the whole broadcast input first (Flink's batch
    //!   mode reads a broadcast input before the other one), then the other side: key by key
    //!   when it is keyed, in timestamp order (arrival order among equal timestamps) when not.
    //!
    //! # Examples
    //!
    //! Transactions checked against a per-currency limit that a control stream can change:
    //!
    //! ```
    //! use typeinfo_runtime::{
    //!     BroadcastContext, BroadcastStateDescriptor, KeyedBroadcastProcessFunction,
    //!     ReadOnlyContext, StreamExecutionEnvironment,
    //! };
    //!
    //! #[derive(Clone)]
    //! struct OverLimit(BroadcastStateDescriptor<String, i64>);
    //!
    //! impl KeyedBroadcastProcessFunction<String, (String, i64), (String, i64), String> for OverLimit {
    //!     // A transaction (currency, amount): read-only access to the limits.
    //!     fn process_element(&mut self, t: (String, i64), ctx: &mut ReadOnlyContext<'_, String, String>) -> typeinfo_runtime::Result<()> {
    //!         if let Some(&limit) = ctx.broadcast_state(&self.0)?.get(&t.0) {
    //!             if t.1 > limit {
    //!                 ctx.collect(format!("{} {} over {limit}", t.0, t.1));
    //!             }
    //!         }
    //!         Ok(())
    //!     }
    //!     // A new limit (currency, limit): every subtask stores it.
    //!     fn process_broadcast_element(&mut self, l: (String, i64), ctx: &mut BroadcastContext<'_, String, String>) -> typeinfo_runtime::Result<()> {
    //!         ctx.broadcast_state(&self.0)?.put(l.0, l.1)
    //!     }
    //! }
    //!
    //! # fn main() -> typeinfo_runtime::Result<()> {
    //! let env = StreamExecutionEnvironment::new();
    //! env.set_runtime_mode(typeinfo_runtime::RuntimeMode::Batch); // limits first, for a fixed result
    //! let limits = BroadcastStateDescriptor::<String, i64>::new("limits");
    //! let rules = env
    //!     .from_collection(vec![("eur".to_owned(), 100i64), ("usd".to_owned(), 50)])
    //!     .broadcast_with(&[&limits]);
    //! let flagged = env
    //!     .from_collection(vec![("eur".to_owned(), 120i64), ("usd".to_owned(), 20), ("usd".to_owned(), 70)])
    //!     .key_by(|t: &(String, i64)| t.0.clone())
    //!     .connect(&rules)
    //!     .process(OverLimit(limits))
    //!     .collect();
    //! env.execute("limits")?;
    //! let mut flagged = flagged.take();
    //! flagged.sort();
    //! assert_eq!(flagged, ["eur 120 over 100", "usd 70 over 50"]);
    //! # Ok(())
    //! # }
    //! ```

    pub use crate::api::handles::{
        BroadcastConnectedStreams, BroadcastStream, KeyedBroadcastConnectedStreams,
    };
    pub use crate::user::broadcast::{
        BroadcastContext, BroadcastProcessFunction, BroadcastStateDeclaration,
        BroadcastStateDescriptor, KeyedBroadcastProcessFunction, ReadOnlyContext,
        WritableBroadcastState,
    };
}

pub use api::environment::{JobClient, JobResult};
pub use api::handles::{
    AllWindowedStream, DataStream, DataStreamSink, KeyedStream, StreamExecutionEnvironment,
    WindowedStream,
};
pub use broadcast::*;
pub use checkpoint::{CheckpointConfig, RestoreSettings};
pub use config::secret::JobSecret;
pub use config::{
    Cluster, ExecutionConfig, RestartStrategy, RuntimeMode, StateBackend, StopWithSavepoint,
};
pub use connect::*;
pub use error::{Error, Result, EXIT_PEER_LOST};
pub use job::JobStatus;
pub use metrics::{Counter, Gauge, Histogram, MetricGroup, Metrics};
pub use operator::context::{OutputTag, RuntimeContext, TimeDomain};
pub use plan::{PartitionerKind, StreamEdge, StreamGraph, StreamNode};
pub use sink::{CollectedRecords, Sink, SinkContext, SinkWriter};
pub use source::{Boundedness, ReadStatus, Source, SourceOutput, SplitReader};
pub use typeinfo_state::AggregateFunction;
pub use typeinfo_state::KeyedBackend;
pub use types::{Data, Key};
pub use user::keyed_process::{KeyedContext, KeyedProcessFunction};
pub use user::one_input::{OneInputOperator, OperatorContext, ProcessFunction, StateContext};
pub use watermark::WatermarkStrategy;
pub use window::{GlobalWindow, TimeWindow, Window};
pub use windowing::assigner::{
    EventTimeSessionWindows, GlobalWindows, ProcessingTimeSessionWindows, SlidingEventTimeWindows,
    SlidingProcessingTimeWindows, TimeWindows, TumblingEventTimeWindows,
    TumblingProcessingTimeWindows, WindowAssigner,
};
pub use windowing::function::{ProcessWindowFunction, WindowContext, WindowFunctionSetup};

/// The README's examples, compiled and run as doc tests so that the front door never drifts.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;
