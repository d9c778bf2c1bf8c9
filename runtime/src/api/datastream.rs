//! Typed streams: [`DataStream`], [`KeyedStream`], [`WindowedStream`] and sinks.
//!
//! Every method appends one transformation to the environment's list and returns a handle to
//! it; nothing runs until [`StreamExecutionEnvironment::execute`].

use std::fmt::Display;
use std::marker::PhantomData;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use typeinfo::{DataOutputView, SerializerConfig};

use crate::api::handles::AllWindowedStream;
use crate::api::handles::BroadcastStream;
use crate::api::handles::CoGroup;
use crate::api::handles::ConnectWith;
use crate::api::handles::DataStream;
use crate::api::handles::DataStreamSink;
use crate::api::handles::Join;
use crate::api::handles::KeyedStream;
use crate::api::handles::StreamExecutionEnvironment;
use crate::api::handles::TwoInputWindows;
use crate::api::node::{NodeSpec, Producer, Selector};
use crate::batch::keyed::keyed_operator;
use crate::error::Result;
use crate::exec::channel::{KeyGroupRouter, Router, RouterFactory};
use crate::exec::compile::{
    ChainSlot, NodeBuilder, OneInputBuilder, Partition, SinkBuilder, StageMaker,
};
use crate::operator::builtin::{FilterOp, FlatMapOp, MapOp, SideOutputReader};
use crate::operator::context::OutputTag;
use crate::operator::contract::{KeyOf, Operator, OperatorSetup, SideRecord};
use crate::plan::{Chaining, Input, NodeKind, OutputType, Partitioning, TAGGED_PORT};
use crate::types::{Data, Key};
use crate::user::broadcast::BroadcastStateDeclaration;
use crate::user::one_input::{
    OneInputOperator, ProcessFunction, ProcessFunctionOperator, UserOperator,
};
use crate::user::sink::{CollectSink, CollectedRecords, FnSink, PrintSink, Sink, TextFileSink};
use crate::user::watermark::{TimestampsAndWatermarks, WatermarkStrategy};
use crate::windowing::assigner::WindowAssigner;
use crate::windowing::trigger::Trigger;

impl<T> Clone for DataStream<T> {
    fn clone(&self) -> Self {
        DataStream {
            env: self.env.clone(),
            node: self.node,
            producers: self.producers.clone(),
        }
    }
}

impl<T> std::fmt::Debug for DataStream<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DataStream")
            .field("operator", &self.node)
            .field(
                "producers",
                &self
                    .producers
                    .iter()
                    .map(|p| (p.node, p.port))
                    .collect::<Vec<_>>(),
            )
            .field("type", &std::any::type_name::<T>())
            .finish()
    }
}

impl<T: Data> DataStream<T> {
    /// The output `port` of operator `node`; `chain` the slot where the operators reading
    /// its main output register, so that one of them may be chained after it.
    pub(crate) fn of_node(
        env: &StreamExecutionEnvironment,
        node: usize,
        port: usize,
        chain: Option<Arc<ChainSlot<T>>>,
    ) -> Self {
        DataStream {
            env: env.clone(),
            node: (port == 0).then_some(node),
            producers: vec![Producer {
                node,
                port,
                partition: Partition::Default,
                partitioning: Partitioning::Default,
                chain: chain.filter(|_| port == 0),
            }],
        }
    }

    /// Node `node` reads this stream: it may be chained after a producer (the plan decides).
    fn chain_to(&self, node: usize, maker: Arc<dyn StageMaker<T>>) {
        for chain in self.producers.iter().filter_map(|p| p.chain.as_ref()) {
            chain.register(node, Arc::clone(&maker));
        }
    }

    /// This stream's records partitioned as `partition` on the way to the next operator.
    pub(crate) fn partitioned(&self, partition: Partition<T>, partitioning: Partitioning) -> Self {
        DataStream {
            env: self.env.clone(),
            node: None,
            producers: self
                .producers
                .iter()
                .map(|p| Producer {
                    partition: partition.clone(),
                    partitioning,
                    ..p.clone()
                })
                .collect(),
        }
    }

    /// The inputs of an operator that reads this stream: as plan data, and typed.
    fn inputs(&self) -> (Vec<Input>, Vec<Partition<T>>) {
        self.producers
            .iter()
            .map(|p| {
                (
                    Input {
                        producer: p.node,
                        port: p.port,
                        partitioning: p.partitioning,
                    },
                    p.partition.clone(),
                )
            })
            .unzip()
    }

    /// The environment the stream belongs to.
    pub fn env(&self) -> &StreamExecutionEnvironment {
        &self.env
    }

    /// Adds an operator (or sink) that reads this stream; returns its id and the slot where
    /// the operators reading its output register.
    pub(crate) fn add_operator<O: Data>(
        &self,
        spec: NodeSpec,
        output: Option<OutputType>,
        make: impl Fn(&OperatorSetup) -> Result<Box<dyn Operator<T, O>>> + Send + Sync + 'static,
    ) -> (usize, Arc<ChainSlot<O>>) {
        let (inputs, partitions) = self.inputs();
        let chain = ChainSlot::new();
        let builder = Arc::new(OneInputBuilder::new(partitions, make, Arc::clone(&chain)));
        let id = self.env.add(
            spec.transformation(inputs, output),
            Arc::clone(&builder) as Arc<dyn NodeBuilder>,
        );
        self.chain_to(id, builder);
        (id, chain)
    }

    /// Adds a one-input operator with output `O`.
    pub(crate) fn then<O: Data>(
        &self,
        name: &str,
        description: impl Into<String>,
        make: impl Fn(&OperatorSetup) -> Result<Box<dyn Operator<T, O>>> + Send + Sync + 'static,
    ) -> DataStream<O> {
        let (id, chain) = self.add_operator(
            NodeSpec::new(NodeKind::Operator, name, description),
            Some(OutputType::of::<O>()),
            make,
        );
        DataStream::of_node(&self.env, id, 0, Some(chain))
    }

    /// Names the operator that makes this stream.
    pub fn name(self, name: &str) -> Self {
        if let Some(id) = self.node {
            self.env
                .with_transformation(id, |t| t.name = name.to_owned());
        }
        self
    }

    /// Gives the operator a stable id (the directory of its state, and its identity in
    /// savepoints).
    pub fn uid(self, uid: &str) -> Self {
        if let Some(id) = self.node {
            self.env
                .with_transformation(id, |t| t.uid = Some(uid.to_owned()));
        }
        self
    }

    /// Sets the parallelism of the operator that makes this stream (an operator that runs
    /// at parallelism 1 only, as `window_all`'s, refuses another when the job is built).
    pub fn set_parallelism(self, parallelism: u32) -> Self {
        if let Some(id) = self.node {
            self.env.with_transformation(id, |t| {
                if t.non_parallel && parallelism != 1 {
                    t.invalid = Some(format!(
                        "`{}` is not a parallel operator: its parallelism must be 1, not {parallelism}",
                        t.name
                    ));
                } else {
                    t.parallelism = Some(parallelism);
                }
            });
        }
        self
    }

    /// Makes the operator that makes this stream begin a new operator chain: it does not
    /// chain with its input (Flink's `startNewChain`; see [`StreamGraph::chains`]).
    ///
    /// [`StreamGraph::chains`]: crate::StreamGraph::chains
    pub fn start_new_chain(self) -> Self {
        self.set_chaining(Chaining::Head)
    }

    /// Runs the operator that makes this stream at its input's parallelism unless one is
    /// set (the adapters of `connect`; see `Transformation::parallelism_of_input`).
    pub(crate) fn at_input_parallelism(self) -> Self {
        if let Some(id) = self.node {
            self.env
                .with_transformation(id, |t| t.parallelism_of_input = true);
        }
        self
    }

    /// Keeps the operator that makes this stream out of every operator chain: it runs as an
    /// operator of its own, its input and output passed through timely channels (Flink's
    /// `disableChaining`).
    pub fn disable_chaining(self) -> Self {
        self.set_chaining(Chaining::Never)
    }

    fn set_chaining(self, chaining: Chaining) -> Self {
        if let Some(id) = self.node {
            self.env.with_transformation(id, |t| t.chaining = chaining);
        }
        self
    }

    /// Applies `f` to every record.
    pub fn map<O: Data>(&self, f: impl Fn(T) -> O + Send + Sync + 'static) -> DataStream<O> {
        let f = Arc::new(f);
        self.then("Map", "Map", move |_| Ok(Box::new(MapOp(Arc::clone(&f)))))
    }

    /// Replaces every record with the items `f` returns.
    pub fn flat_map<O: Data, I: IntoIterator<Item = O> + 'static>(
        &self,
        f: impl Fn(T) -> I + Send + Sync + 'static,
    ) -> DataStream<O> {
        let f = Arc::new(f);
        self.then("Flat Map", "FlatMap", move |_| {
            Ok(Box::new(FlatMapOp(Arc::clone(&f), PhantomData)))
        })
    }

    /// Keeps the records for which `f` is true.
    pub fn filter(&self, f: impl Fn(&T) -> bool + Send + Sync + 'static) -> DataStream<T> {
        let f = Arc::new(f);
        self.then("Filter", "Filter", move |_| {
            Ok(Box::new(FilterOp(Arc::clone(&f))))
        })
    }

    /// Runs a user's operator on every record (see [`OneInputOperator`]): with operator
    /// state, the watermark and the runtime context (timers and keyed state need a
    /// [`KeyedStream`]). Each subtask gets a clone of `operator`.
    pub fn transform<O: Data, Op: OneInputOperator<(), T, O> + Clone>(
        &self,
        name: &str,
        operator: Op,
    ) -> DataStream<O> {
        let description = format!("Transform ({})", std::any::type_name::<Op>());
        self.then(name, description, move |setup| {
            Ok(Box::new(UserOperator::<(), T, O, Op>::new(
                setup,
                operator.clone(),
                None,
            )?))
        })
    }

    /// Runs `function` on every record (Flink's `ProcessFunction` on a non-keyed stream).
    pub fn process<O: Data, F: ProcessFunction<T, O> + Clone>(&self, function: F) -> DataStream<O> {
        let description = format!("Process ({})", std::any::type_name::<F>());
        self.then("Process", description, move |setup| {
            Ok(Box::new(UserOperator::<(), T, O, _>::new(
                setup,
                ProcessFunctionOperator(function.clone()),
                None,
            )?))
        })
    }

    /// Partitions the stream by a key: records with equal keys go to the same subtask (by key
    /// group), and keyed state and windows are per key.
    pub fn key_by<K: Key>(
        &self,
        selector: impl Fn(&T) -> K + Send + Sync + 'static,
    ) -> KeyedStream<K, T> {
        let selector: Selector<T, K> = Arc::new(selector);
        KeyedStream {
            stream: self.partitioned_by_key(KeyOf::Every(Arc::clone(&selector))),
            selector,
        }
    }

    /// This stream partitioned by the key `selector` gives (by key group).
    pub(crate) fn partitioned_by_key<K: Key>(&self, selector: KeyOf<T, K>) -> DataStream<T> {
        let router: RouterFactory<T> = Arc::new(move |parallelism, max_parallelism| {
            Ok(Box::new(KeyGroupRouter::<T, K> {
                selector: selector.clone(),
                serializer: K::create_serializer(&SerializerConfig::default())?,
                buffer: DataOutputView::new(),
                parallelism,
                max_parallelism,
            }) as Box<dyn Router<T>>)
        });
        self.partitioned(
            Partition::Hash(router),
            Partitioning::Hash {
                key_type: OutputType::of::<K>(),
            },
        )
    }

    /// Runs a user's non-keyed operator whose records with a "key" of `()` wait, in batch
    /// mode, until its input ended and every other record was processed (the broadcast
    /// input of a broadcast function comes first, as in Flink's batch mode); in streaming
    /// mode it is [`transform`](Self::transform).
    pub(crate) fn transform_after_unkeyed<O: Data, Op: OneInputOperator<(), T, O> + Clone>(
        &self,
        name: &str,
        description: String,
        held: KeyOf<T, ()>,
        operator: Op,
    ) -> DataStream<O> {
        self.then(name, description, move |setup| {
            let operator = operator.clone();
            keyed_operator(setup, &held, move |setup: &OperatorSetup| {
                Ok(Box::new(UserOperator::<(), T, O, Op>::new(
                    setup,
                    operator.clone(),
                    None,
                )?))
            })
        })
    }

    /// Runs a user's operator on a stream partitioned by key (see
    /// [`partitioned_by_key`](Self::partitioned_by_key)), with each record's key current; a
    /// record without a key (`KeyOf::Partly`) is processed outside any key.
    pub(crate) fn transform_keyed<K: Key, O: Data, Op: OneInputOperator<K, T, O> + Clone>(
        &self,
        name: &str,
        description: String,
        selector: KeyOf<T, K>,
        operator: Op,
    ) -> DataStream<O> {
        self.then(name, description, move |setup| {
            let (operator, inner_selector) = (operator.clone(), selector.clone());
            keyed_operator(setup, &selector, move |setup: &OperatorSetup| {
                Ok(Box::new(UserOperator::<K, T, O, Op>::new(
                    setup,
                    operator.clone(),
                    Some(inner_selector.clone()),
                )?))
            })
        })
    }

    /// Windows over all records of the stream (Flink's `windowAll`): one window operator at
    /// parallelism 1, with every assigner, trigger, evictor and function of a keyed window
    /// (see [`AllWindowedStream`]).
    pub fn window_all<A: WindowAssigner>(
        &self,
        assigner: A,
    ) -> AllWindowedStream<T, A, A::DefaultTrigger>
    where
        A::DefaultTrigger: Trigger<(), T, A::Window>,
    {
        let mut windowed = self.key_by(|_: &T| ()).window(assigner);
        windowed.non_parallel = true;
        windowed
    }

    /// Distributes records round robin over the next operator's subtasks.
    pub fn rebalance(&self) -> DataStream<T> {
        self.partitioned(Partition::Rebalance, Partitioning::Rebalance)
    }

    /// Sends every record to every subtask of the next operator.
    pub fn broadcast(&self) -> DataStream<T> {
        self.partitioned(Partition::Broadcast, Partitioning::Broadcast)
    }

    /// The records of this stream and of `others`.
    pub fn union(&self, others: &[DataStream<T>]) -> DataStream<T> {
        DataStream {
            env: self.env.clone(),
            node: None,
            producers: std::iter::once(self)
                .chain(others)
                .flat_map(|s| s.producers.iter().cloned())
                .collect(),
        }
    }

    /// Gives records event timestamps and generates watermarks.
    ///
    /// The assigner runs at its input's parallelism unless
    /// [`set_parallelism`](Self::set_parallelism) says otherwise (as Flink's
    /// `assignTimestampsAndWatermarks` does): it forwards its input's records as they come,
    /// so each input subtask's order, which the watermarks describe, is kept.
    pub fn assign_timestamps_and_watermarks(
        &self,
        strategy: WatermarkStrategy<T>,
    ) -> DataStream<T> {
        let description = strategy.describe();
        self.then("Timestamps/Watermarks", description, move |setup| {
            Ok(Box::new(TimestampsAndWatermarks::new(
                strategy.for_mode(setup.batch),
                setup.auto_watermark_interval_ms,
            )))
        })
        .at_input_parallelism()
    }

    /// The records of the side output `tag` of the operator that makes this stream.
    ///
    /// A tag the operator does not have, or a stream that no single operator makes (a
    /// union, a partitioning), is an error when the graph is built.
    pub fn side_output<S: Data>(&self, tag: &OutputTag<S>) -> DataStream<S> {
        let Some(id) = self.node else {
            self.env.problem(format!(
                "side output `{}` of a stream that no single operator makes (a union or a partitioning)",
                tag.id()
            ));
            return DataStream {
                env: self.env.clone(),
                node: None,
                producers: Vec::new(),
            };
        };
        // A window's late data has its own typed output; every other tag travels on the
        // operator's tagged output and is read back by a node per tag.
        if let Some(port) = self.env.transformation(id, |t| t.side_port(tag.id())) {
            return DataStream::of_node(&self.env, id, port, None);
        }
        if tag.serializer().is_none() {
            self.env.problem(format!(
                "side output `{}`: {} has no serializer with the default configuration",
                tag.id(),
                std::any::type_name::<S>()
            ));
        }
        let tagged = DataStream::<SideRecord>::of_node(&self.env, id, TAGGED_PORT, None);
        let reader = SideOutputReader { tag: tag.clone() };
        let name = format!("Side output {}", tag.id());
        tagged.then(&name, name.clone(), move |_| Ok(Box::new(reader.clone())))
    }

    fn sink(
        &self,
        spec: NodeSpec,
        make: impl Fn(&OperatorSetup) -> Result<Box<dyn Operator<T, ()>>> + Send + Sync + 'static,
    ) -> DataStreamSink {
        let (id, _) = self.add_operator::<()>(spec, None, make);
        DataStreamSink {
            env: self.env.clone(),
            id,
        }
    }

    /// Collects every record into a vector readable after the job ran (in this process).
    pub fn collect(&self) -> CollectedRecords<T>
    where
        T: Send,
    {
        let records = Arc::new(Mutex::new(Vec::new()));
        let shared = Arc::clone(&records);
        self.sink(
            NodeSpec::new(NodeKind::Sink, "Collect Sink", "Sink: collect"),
            move |_| {
                Ok(Box::new(CollectSink {
                    records: Arc::clone(&shared),
                    buffer: Vec::new(),
                }))
            },
        );
        CollectedRecords { records }
    }

    /// Prints every record on its own line; with a sink parallelism above 1 each line starts
    /// with Flink's `N> ` (the subtask index plus one).
    pub fn print(&self) -> DataStreamSink
    where
        T: Display,
    {
        self.sink(
            NodeSpec::new(NodeKind::Sink, "Print to Std. Out", "Sink: print"),
            move |setup| {
                let prefix = (setup.parallelism > 1).then(|| format!("{}> ", setup.subtask + 1));
                Ok(Box::new(PrintSink {
                    prefix,
                    buffer: Vec::new(),
                }))
            },
        )
    }

    /// Prints every record on its own line, without a prefix.
    pub fn print_raw(&self) -> DataStreamSink
    where
        T: Display,
    {
        self.sink(
            NodeSpec::new(NodeKind::Sink, "Print to Std. Out", "Sink: print"),
            move |_| {
                Ok(Box::new(PrintSink {
                    prefix: None,
                    buffer: Vec::new(),
                }))
            },
        )
    }

    /// Writes every record as a line to files `dir/part-<subtask>-<epoch>`, published
    /// exactly once: per completed checkpoint with checkpointing, else at the end of the job
    /// (written under a hidden name, synced, renamed; a two-phase [`Sink`], see
    /// [`crate::sink`]).
    pub fn write_as_text(&self, dir: impl Into<PathBuf>) -> DataStreamSink
    where
        T: Display,
    {
        let dir: PathBuf = dir.into();
        let description = format!("Sink: text files in {}", dir.display());
        self.sink_to_named(TextFileSink { dir }, "Text File Sink", description)
    }

    /// Writes every record to a user's two-phase [`Sink`]: exactly once with checkpoints
    /// (see [`crate::sink`]).
    pub fn sink_to<S: Sink<T>>(&self, sink: S) -> DataStreamSink {
        let description = format!("Sink: {}", std::any::type_name::<S>());
        self.sink_to_named(sink, "Sink", description)
    }

    fn sink_to_named<S: Sink<T>>(
        &self,
        sink: S,
        name: &str,
        description: String,
    ) -> DataStreamSink {
        let (inputs, partitions) = self.inputs();
        let builder = Arc::new(SinkBuilder::new(partitions, sink));
        let id = self.env.add(
            NodeSpec::new(NodeKind::Sink, name, description).transformation(inputs, None),
            Arc::clone(&builder) as Arc<dyn NodeBuilder>,
        );
        self.chain_to(id, builder);
        DataStreamSink {
            env: self.env.clone(),
            id,
        }
    }

    /// Calls `f` with every record.
    pub fn add_sink(&self, f: impl Fn(T) + Send + Sync + 'static) -> DataStreamSink {
        let f = Arc::new(f);
        self.sink(
            NodeSpec::new(NodeKind::Sink, "Sink", "Sink: function"),
            move |_| Ok(Box::new(FnSink(Arc::clone(&f)))),
        )
    }
}

impl DataStreamSink {
    /// Names the sink.
    pub fn name(self, name: &str) -> Self {
        self.env
            .with_transformation(self.id, |t| t.name = name.to_owned());
        self
    }
    /// Gives the sink a stable id.
    pub fn uid(self, uid: &str) -> Self {
        self.env
            .with_transformation(self.id, |t| t.uid = Some(uid.to_owned()));
        self
    }
    /// Sets the sink's parallelism.
    pub fn set_parallelism(self, parallelism: u32) -> Self {
        self.env
            .with_transformation(self.id, |t| t.parallelism = Some(parallelism));
        self
    }
    /// Keeps the sink out of its input's operator chain (Flink's `disableChaining`).
    pub fn disable_chaining(self) -> Self {
        self.env
            .with_transformation(self.id, |t| t.chaining = Chaining::Never);
        self
    }
}

impl<T: Data> DataStream<T> {
    /// Connects this stream with `other` for one function with a method per input.
    ///
    /// - `other` a [`DataStream`] (of any type): [`ConnectedStreams`], for `map`,
    ///   `flat_map`, `process`, or `key_by` both sides for a keyed co-process function with
    ///   shared keyed state and timers (see the [`connect`](crate::connect) module).
    /// - `other` a [`BroadcastStream`](crate::broadcast::BroadcastStream):
    ///   [`BroadcastConnectedStreams`](crate::broadcast::BroadcastConnectedStreams), for a
    ///   [`BroadcastProcessFunction`](crate::broadcast::BroadcastProcessFunction) (see the
    ///   [`broadcast`](crate::broadcast) module).
    pub fn connect<S: ConnectWith<T>>(&self, other: &S) -> S::Connected {
        other.connected_to(self)
    }
}

impl<T: Data> DataStream<T> {
    /// Joins this stream with `other` in windows (Flink's window join):
    /// `a.join(&b).where_(ka).equal_to(kb).window(assigner).apply(f)` calls `f` on every pair
    /// of records with equal keys in the same window, when the window fires (`where` is a
    /// Rust keyword, hence `where_`).
    ///
    /// ```
    /// use typeinfo_runtime::{StreamExecutionEnvironment, TumblingEventTimeWindows, WatermarkStrategy};
    /// # fn main() -> typeinfo_runtime::Result<()> {
    /// let env = StreamExecutionEnvironment::new();
    /// let at = |e: &(char, i64), _| e.1;
    /// let clicks = env.from_collection(vec![('a', 1i64), ('a', 12), ('b', 3)])
    ///     .assign_timestamps_and_watermarks(WatermarkStrategy::for_monotonous_timestamps().with_timestamp_assigner(at));
    /// let views = env.from_collection(vec![('a', 5i64), ('b', 15)])
    ///     .assign_timestamps_and_watermarks(WatermarkStrategy::for_monotonous_timestamps().with_timestamp_assigner(at));
    /// let pairs = clicks
    ///     .join(&views)
    ///     .where_(|c: &(char, i64)| c.0)
    ///     .equal_to(|v: &(char, i64)| v.0)
    ///     .window(TumblingEventTimeWindows::of_millis(10))
    ///     .apply(|c, v| (c.0, c.1, v.1))
    ///     .collect();
    /// env.execute("window join")?;
    /// assert_eq!(pairs.take(), [('a', 1, 5)]); // 'a' at 12 and 'b' at 3 have no partner in their window
    /// # Ok(())
    /// # }
    /// ```
    pub fn join<U: Data>(&self, other: &DataStream<U>) -> TwoInputWindows<T, U, Join> {
        TwoInputWindows::new(self.connect(other))
    }

    /// Groups this stream and `other` by key and window together (Flink's `coGroup`): the
    /// function gets both inputs' records of a key and window (either side may be empty).
    pub fn co_group<U: Data>(&self, other: &DataStream<U>) -> TwoInputWindows<T, U, CoGroup> {
        TwoInputWindows::new(self.connect(other))
    }
}

impl<T: Data> DataStream<T> {
    /// This stream as the broadcast input of the broadcast state pattern (see the
    /// [`broadcast`](crate::broadcast) module): connect a keyed or non-keyed stream to it.
    /// `states` are the broadcast states the connected operator keeps.
    pub fn broadcast_with(&self, states: &[&dyn BroadcastStateDeclaration]) -> BroadcastStream<T> {
        BroadcastStream {
            stream: self.clone(),
            states: states.iter().map(|s| s.shared()).collect(),
        }
    }
}
