//! The handle types of the API and what each holds, in one place; the methods of each type
//! live in the file named after it (`environment.rs`, `datastream.rs`, `keyed_stream.rs`,
//! `windowed_stream.rs`, `connected.rs`, `join.rs`, `interval_join.rs`, `broadcast.rs`).
//!
//! The handles refer to each other by construction (a `KeyedStream` holds the `DataStream`
//! it keys, and `DataStream::key_by` makes one); defining them apart from their methods
//! keeps the files' imports one way (every method file imports this one, this one imports
//! none of them) instead of in circles.

use std::cell::RefCell;
use std::marker::PhantomData;
use std::rc::Rc;
use std::sync::Arc;

use crate::api::node::{Producer, Selector};
use crate::config::ExecutionConfig;
use crate::exec::compile::NodeBuilder;
use crate::plan::Transformation;
use crate::types::{Data, Key};
use crate::user::broadcast::Declarations;
use crate::user::two_input::CoInput;
use crate::windowing::assigner::WindowAssigner;
use crate::windowing::evictor::Evictor;

/// A stream whose records go to every subtask of the operator it is connected to, with the
/// broadcast states that operator keeps ([`DataStream::broadcast_with`]).
pub struct BroadcastStream<T> {
    pub(crate) stream: DataStream<T>,
    pub(crate) states: Declarations,
}

/// A non-keyed stream connected to a [`BroadcastStream`] (`stream.connect(&broadcast)`).
pub struct BroadcastConnectedStreams<A, B> {
    pub(crate) first: DataStream<A>,
    pub(crate) broadcast: BroadcastStream<B>,
}

/// A keyed stream connected to a [`BroadcastStream`] (`keyed.connect(&broadcast)`).
pub struct KeyedBroadcastConnectedStreams<K, A, B> {
    pub(crate) keyed: KeyedStream<K, A>,
    pub(crate) broadcast: BroadcastStream<B>,
}

/// What a [`DataStream`] can be connected with ([`DataStream::connect`]): another
/// `DataStream` or a [`BroadcastStream`](crate::broadcast::BroadcastStream).
pub trait ConnectWith<A: Data> {
    /// The connected streams.
    type Connected;

    /// `first` connected with `self` as the second input.
    fn connected_to(&self, first: &DataStream<A>) -> Self::Connected;
}

/// Two streams connected for one function with a method per input
/// ([`DataStream::connect`]; see the [module docs](self)).
pub struct ConnectedStreams<A: Data, B: Data> {
    pub(crate) first: DataStream<A>,
    pub(crate) second: DataStream<B>,
}

/// Connected streams partitioned by one key ([`ConnectedStreams::key_by`]).
pub struct KeyedConnectedStreams<K: Key, A: Data, B: Data> {
    pub(crate) inputs: ConnectedStreams<A, B>,
    pub(crate) first: Arc<dyn Fn(&A) -> K + Send + Sync>,
    pub(crate) second: Arc<dyn Fn(&B) -> K + Send + Sync>,
}

/// A stream of `T` records.
pub struct DataStream<T> {
    pub(crate) env: StreamExecutionEnvironment,
    /// The operator whose main output this stream is (`name`, `uid` and `set_parallelism`
    /// apply to it); none for unions, partitionings and side outputs.
    pub(crate) node: Option<usize>,
    pub(crate) producers: Vec<Producer<T>>,
}

/// A sink: name it, give it a uid or a parallelism.
#[derive(Debug, Clone)]
pub struct DataStreamSink {
    pub(crate) env: StreamExecutionEnvironment,
    pub(crate) id: usize,
}

/// The typed builder of every node of a graph, by node id.
pub(crate) type Builders = Arc<Vec<Arc<dyn NodeBuilder>>>;

pub(crate) struct EnvState {
    pub(crate) config: ExecutionConfig,
    pub(crate) transformations: Vec<Transformation>,
    /// The typed builder of each transformation (same index).
    pub(crate) builders: Vec<Arc<dyn NodeBuilder>>,
    /// Mistakes in API calls found as they were made, reported when the graph is built.
    pub(crate) problems: Vec<String>,
}

/// The context a job is built in and run from, as Flink's `StreamExecutionEnvironment`.
///
/// Sources (`from_collection`, `from_sequence`, `read_text_file`, `from_generator`, ...)
/// start streams; [`execute`](Self::execute) runs every stream built from it.
#[derive(Clone)]
pub struct StreamExecutionEnvironment {
    pub(crate) state: Rc<RefCell<EnvState>>,
}

/// An interval join being built ([`KeyedStream::interval_join`]): records `a` of the first
/// input and `b` of the second with equal keys are joined when
/// `a.ts + lower <= b.ts <= a.ts + upper` (either bound exclusive on request).
///
/// As Flink's `IntervalJoinOperator`: each input's records wait in keyed map state (by
/// timestamp) for partners of the other input; a record joins with every partner already
/// waiting, so each pair is produced once, whichever comes first, with the larger of the
/// two timestamps. A record behind the operator's watermark (the minimum of both inputs') is
/// late and dropped; a waiting record is removed when the watermark passes the last time a
/// partner could still come (its timestamp plus the interval's far end), so state stays
/// bounded by the interval. Records need timestamps. In batch mode nothing is late and a
/// key's records wait until its end.
pub struct IntervalJoin<K: Key, A: Data, B: Data> {
    pub(crate) keyed: KeyedConnectedStreams<K, A, B>,
    pub(crate) lower: i64,
    pub(crate) upper: i64,
    pub(crate) lower_exclusive: bool,
    pub(crate) upper_exclusive: bool,
}

/// [`TwoInputWindows`] of a window join: the function gets each pair.
#[derive(Debug, Clone, Copy)]
pub struct Join;

/// [`TwoInputWindows`] of a co-group: the function gets both sides' records.
#[derive(Debug, Clone, Copy)]
pub struct CoGroup;

/// A window join or co-group being built: `where_`, then `equal_to`, then `window`.
pub struct TwoInputWindows<A: Data, B: Data, J> {
    pub(crate) inputs: ConnectedStreams<A, B>,
    pub(crate) kind: PhantomData<J>,
}

/// A window join or co-group with the first input's key.
pub struct TwoInputWhere<K: Key, A: Data, B: Data, J> {
    pub(crate) inputs: ConnectedStreams<A, B>,
    pub(crate) first: Arc<dyn Fn(&A) -> K + Send + Sync>,
    pub(crate) kind: PhantomData<J>,
}

/// A window join or co-group with both keys.
pub struct TwoInputKeyed<K: Key, A: Data, B: Data, J> {
    pub(crate) keyed: KeyedConnectedStreams<K, A, B>,
    pub(crate) kind: PhantomData<J>,
}

/// A window join or co-group with its windows: set a trigger, an evictor or an allowed
/// lateness (over both inputs' records), then `apply` the function.
pub struct TwoInputWindowed<K: Key, A: Data, B: Data, W: WindowAssigner, Tr, J> {
    pub(crate) windowed: WindowedStream<K, CoInput<A, B>, W, Tr>,
    pub(crate) kind: PhantomData<J>,
}

/// A stream partitioned by a key of type `K`.
pub struct KeyedStream<K, T> {
    pub(crate) stream: DataStream<T>,
    pub(crate) selector: Selector<T, K>,
}

/// A keyed stream cut into windows by an assigner `A`, fired by a trigger `Tr` (the
/// assigner's default until [`trigger`](Self::trigger) changes it).
pub struct WindowedStream<K, T, A: WindowAssigner, Tr> {
    pub(crate) keyed: KeyedStream<K, T>,
    pub(crate) assigner: A,
    pub(crate) trigger: Tr,
    pub(crate) evictor: Option<Arc<dyn Evictor<T, A::Window>>>,
    pub(crate) allowed_lateness: i64,
    pub(crate) late: Option<String>,
    /// `window_all`: one subtask.
    pub(crate) non_parallel: bool,
    /// The trigger is the assigner's default (not replaced by [`WindowedStream::trigger`]).
    pub(crate) default_trigger: bool,
}

/// A stream cut into windows over all its records (Flink's `AllWindowedStream`): one
/// operator at parallelism 1 (as in Flink), with every assigner, trigger, evictor and
/// function of [`WindowedStream`].
///
/// ```
/// use typeinfo_runtime::{StreamExecutionEnvironment, TumblingEventTimeWindows, WatermarkStrategy};
///
/// # fn main() -> typeinfo_runtime::Result<()> {
/// let env = StreamExecutionEnvironment::new();
/// env.set_parallelism(2);
/// let totals = env
///     .from_collection(vec![1i64, 2, 3, 15])
///     .assign_timestamps_and_watermarks(WatermarkStrategy::for_monotonous_timestamps().with_timestamp_assigner(|v: &i64, _| *v))
///     .window_all(TumblingEventTimeWindows::of_millis(10))
///     .reduce(|a, b| a + b)
///     .collect();
/// env.execute("totals")?;
/// let mut totals = totals.take(); // the collecting sink runs at the job's parallelism
/// totals.sort();
/// assert_eq!(totals, [6, 15]);
/// # Ok(())
/// # }
/// ```
pub type AllWindowedStream<T, A, Tr> = WindowedStream<(), T, A, Tr>;
