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
//! checkpoint by its [`RestartStrategy`]. The layers import one way: plan -> compile ->
//! drivers -> operators and the checkpoint store (a test derives the module graph and fails
//! on a cycle).
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
pub mod assigner;
pub mod batch;
pub mod broadcast;
mod channel;
pub mod checkpoint;
mod cluster;
mod compile;
mod config;
pub mod connect;
mod context;
mod drive;
mod env;
mod error;
pub mod evictor;
pub mod functions;
pub mod handshake;
mod job;
pub mod metrics;
pub mod native_part;
mod operator;
mod plan;
mod process;
mod run;
pub mod sink;
pub mod sort;
pub mod source;
pub mod storage;
mod stream;
mod timer;
mod transform;
pub mod trigger;
mod types;
pub mod watermark;
pub mod window;
mod window_function;
mod window_operator;

pub use assigner::{
    EventTimeSessionWindows, GlobalWindows, ProcessingTimeSessionWindows, SlidingEventTimeWindows,
    SlidingProcessingTimeWindows, TimeWindows, TumblingEventTimeWindows,
    TumblingProcessingTimeWindows, WindowAssigner,
};
pub use broadcast::{
    BroadcastConnectedStreams, BroadcastContext, BroadcastProcessFunction,
    BroadcastStateDeclaration, BroadcastStateDescriptor, BroadcastStream,
    KeyedBroadcastConnectedStreams, KeyedBroadcastProcessFunction, ReadOnlyContext,
    WritableBroadcastState,
};
pub use checkpoint::{CheckpointConfig, RestoreSettings};
pub use connect::{
    CoGroup, CoInput, CoProcessFunction, ConnectWith, ConnectedStreams, IntervalJoin, Join,
    JoinContext, KeyedCoProcessFunction, KeyedConnectedStreams, ProcessJoinFunction, TwoInputKeyed,
    TwoInputOperator, TwoInputWhere, TwoInputWindowed, TwoInputWindows,
};
pub use env::{
    Cluster, ExecutionConfig, JobClient, JobResult, RestartStrategy, RuntimeMode, StateBackend,
    StopWithSavepoint, StreamExecutionEnvironment,
};
pub use error::{Error, Result};
pub use handshake::JobSecret;
pub use job::JobStatus;
pub use metrics::{Counter, Gauge, Histogram, MetricGroup, Metrics};
pub use plan::{PartitionerKind, StreamEdge, StreamGraph, StreamNode};
pub use process::{KeyedContext, KeyedProcessFunction, TimeDomain};
pub use sink::{CollectedRecords, Sink, SinkContext, SinkWriter};
pub use source::{Boundedness, ReadStatus, Source, SourceOutput, SplitReader};
pub use stream::{
    AllWindowedStream, DataStream, DataStreamSink, KeyedStream, OutputTag, WindowedStream,
};
pub use transform::{
    OneInputOperator, OperatorContext, ProcessFunction, RuntimeContext, StateContext,
};
pub use typeinfo_state::AggregateFunction;
pub use typeinfo_state::KeyedBackend;
pub use watermark::WatermarkStrategy;
pub use window::{GlobalWindow, TimeWindow, Window};
pub use window_function::{ProcessWindowFunction, WindowContext, WindowFunctionSetup};

pub use types::{Data, Key};

/// The README's examples, compiled and run as doc tests so that the front door never drifts.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;
