//! Typed streams: [`DataStream`], [`KeyedStream`], [`WindowedStream`] and sinks.
//!
//! Every method appends one transformation to the environment's list and returns a handle to
//! it; nothing runs until [`StreamExecutionEnvironment::execute`].

use std::fmt::Display;
use std::marker::PhantomData;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use typeinfo::{DataOutputView, SerializerConfig, TypeSerializer};
use typeinfo_state::{
    key_group_for_bytes, subtask_for_key_group, AggregateFunction, AggregatingStateDescriptor,
    KeyedBackend, KeyedStateBackend, ListStateDescriptor, ReducingStateDescriptor, StateValue,
    ValueState, ValueStateDescriptor,
};

use crate::assigner::{GlobalWindows, WindowAssigner};
use crate::batch::keyed_operator;
use crate::channel::{Router, RouterFactory};
use crate::compile::{OneInputBuilder, Partition, SinkBuilder, SourceBuilder};
pub use crate::context::OutputTag;
use crate::env::StreamExecutionEnvironment;
use crate::error::Result;
use crate::evictor::{CountEvictor, Evictor};
use crate::operator::{KeyOf, Operator, OperatorSetup, Outputs, SideRecord};
use crate::plan::{Input, NodeKind, OutputType, Partitioning, Transformation, TAGGED_PORT};
use crate::process::{KeyedProcessFunction, KeyedProcessFunctionOperator, TimeDomain};
use crate::sink::{CollectSink, CollectedRecords, FnSink, PrintSink, Sink, TextFileSink};
use crate::source::{
    split_source, Boundedness, CollectionSource, GeneratorSource, IterSource, SequenceSource,
    Source, TextFileSource,
};
use crate::transform::{
    OneInputOperator, OperatorContext, ProcessFunction, ProcessFunctionOperator, StateContext,
    UserOperator,
};
use crate::trigger::{CountTrigger, PurgingTrigger, Trigger};
use crate::watermark::{TimestampsAndWatermarks, WatermarkStrategy};
use crate::window::GlobalWindow;
use crate::window_function::ProcessWindowFunction;
use crate::window_operator::{
    aggregate_fold, evicting_contents, reduce_fold, ApplyFn, ContentsFactory, Fold,
    IncrementalContents, InternalWindowFunction, ListContents, ProcessAll, ProcessOne, ResultFn,
    WindowContents, WindowOperator,
};
use crate::{Data, Key};

type Selector<T, K> = Arc<dyn Fn(&T) -> K + Send + Sync>;

/// What an API call says about the operator it adds, besides its function.
struct NodeSpec {
    kind: NodeKind,
    name: String,
    description: String,
    parallelism: Option<u32>,
    side_outputs: Vec<String>,
    invalid: Option<String>,
    non_parallel: bool,
    bounded: Option<bool>,
}

impl NodeSpec {
    fn new(kind: NodeKind, name: &str, description: impl Into<String>) -> Self {
        NodeSpec {
            kind,
            name: name.to_owned(),
            description: description.into(),
            parallelism: None,
            side_outputs: Vec::new(),
            invalid: None,
            non_parallel: false,
            bounded: None,
        }
    }

    fn transformation(self, inputs: Vec<Input>, output: Option<OutputType>) -> Transformation {
        Transformation {
            id: 0,
            kind: self.kind,
            name: self.name,
            uid: None,
            parallelism: self.parallelism,
            description: self.description,
            inputs,
            output,
            side_outputs: self.side_outputs,
            invalid: self.invalid,
            non_parallel: self.non_parallel,
            bounded: self.bounded,
        }
    }
}

/// One producer of a stream's records, with how they are partitioned on the way to the
/// next operator: typed (the router of a key) and as plan data.
struct Producer<T> {
    node: usize,
    port: usize,
    partition: Partition<T>,
    partitioning: Partitioning,
}

impl<T> Clone for Producer<T> {
    fn clone(&self) -> Self {
        Producer {
            node: self.node,
            port: self.port,
            partition: self.partition.clone(),
            partitioning: self.partitioning,
        }
    }
}

impl StreamExecutionEnvironment {
    fn add_source<O: Data, S: Source<O>>(
        &self,
        name: &str,
        parallelism: Option<u32>,
        description: String,
        source: S,
        strategy: WatermarkStrategy<O>,
    ) -> DataStream<O> {
        let spec = NodeSpec {
            parallelism,
            bounded: Some(source.boundedness() == Boundedness::Bounded),
            ..NodeSpec::new(NodeKind::Source, name, description)
        };
        let source = Arc::new(source);
        let make = move |setup: &OperatorSetup| {
            split_source(
                &source,
                &strategy.for_mode(setup.batch),
                &setup.serializer_config,
                setup.subtask,
                setup.parallelism,
            )
        };
        let id = self.add(
            spec.transformation(Vec::new(), Some(OutputType::of::<O>())),
            Arc::new(SourceBuilder::new(make)),
        );
        DataStream::of_node(self, id, 0)
    }

    /// A stream read from a user's [`Source`] (see [`crate::source`]): its splits spread over
    /// the source's subtasks, a position per split in every checkpoint, timestamps and
    /// watermarks from `strategy` per split (with idleness, see
    /// [`WatermarkStrategy::with_idleness`]).
    pub fn from_source<T: Data, S: Source<T>>(
        &self,
        source: S,
        strategy: WatermarkStrategy<T>,
        name: &str,
    ) -> DataStream<T> {
        let description = format!(
            "Source: {} ({})",
            std::any::type_name::<S>(),
            strategy.describe()
        );
        self.add_source(name, None, description, source, strategy)
    }

    /// A stream of the vector's elements, read by one subtask in order.
    pub fn from_collection<T: Data + Send + Sync>(&self, elements: Vec<T>) -> DataStream<T> {
        self.add_source(
            "Collection Source",
            Some(1),
            "Source: collection".into(),
            CollectionSource(Arc::new(elements)),
            WatermarkStrategy::no_watermarks(),
        )
    }

    /// A stream of an iterator's items, read by one subtask (each run clones the iterator).
    pub fn from_iter<I>(&self, iter: I) -> DataStream<I::Item>
    where
        I: IntoIterator + Clone + Send + Sync + 'static,
        I::IntoIter: Send + 'static,
        I::Item: Data,
    {
        self.add_source(
            "Iterator Source",
            Some(1),
            "Source: iterator".into(),
            IterSource(iter),
            WatermarkStrategy::no_watermarks(),
        )
    }

    /// The numbers `from..=to`, split into contiguous ranges over the source's subtasks.
    pub fn from_sequence(&self, from: i64, to: i64) -> DataStream<i64> {
        self.add_source(
            "Sequence Source",
            None,
            format!("Source: sequence {from}..={to}"),
            SequenceSource { from, to },
            WatermarkStrategy::no_watermarks(),
        )
    }

    /// The lines of a text file (without line endings), read by one subtask in order.
    ///
    /// A missing or unreadable file fails the job with an error naming the path.
    pub fn read_text_file(&self, path: impl Into<PathBuf>) -> DataStream<String> {
        let path = path.into();
        self.add_source(
            "Text File Source",
            Some(1),
            format!("Source: text file {}", path.display()),
            TextFileSource(path),
            WatermarkStrategy::no_watermarks(),
        )
    }

    /// `generate(i)` for every `i` in `0..count`; subtask `s` of `p` generates
    /// `i = s, s + p, s + 2p, ...`.
    pub fn from_generator<T: Data>(
        &self,
        count: u64,
        generate: impl Fn(u64) -> T + Send + Sync + 'static,
    ) -> DataStream<T> {
        self.add_source(
            "Generator Source",
            None,
            format!("Source: generator of {count}"),
            GeneratorSource {
                count,
                generate: Arc::new(generate),
            },
            WatermarkStrategy::no_watermarks(),
        )
    }
}

/// A stream of `T` records.
pub struct DataStream<T> {
    env: StreamExecutionEnvironment,
    /// The operator whose main output this stream is (`name`, `uid` and `set_parallelism`
    /// apply to it); none for unions, partitionings and side outputs.
    node: Option<usize>,
    producers: Vec<Producer<T>>,
}

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

/// Routes records by the key group of their key.
struct KeyGroupRouter<T, K: Key> {
    selector: KeyOf<T, K>,
    serializer: K::Serializer,
    buffer: DataOutputView,
    parallelism: u32,
    max_parallelism: u32,
}

impl<T: 'static, K: Key> Router<T> for KeyGroupRouter<T, K> {
    #[inline]
    fn route(&mut self, value: &T) -> usize {
        // A record without a key (never routed here: only a keyed input's records are)
        // would go to subtask 0.
        let Some(key) = self.selector.key(value) else {
            return 0;
        };
        self.buffer.clear();
        // Serializing a key into memory cannot fail for key types; if it ever did, the
        // record goes to subtask 0, whose state backend fails the job on the same key.
        if self.serializer.serialize(&key, &mut self.buffer).is_err() {
            return 0;
        }
        let group = key_group_for_bytes(self.buffer.as_slice(), self.max_parallelism);
        subtask_for_key_group(self.max_parallelism, self.parallelism, group) as usize
    }
}

impl<T: Data> DataStream<T> {
    /// The output `port` of operator `node`.
    fn of_node(env: &StreamExecutionEnvironment, node: usize, port: usize) -> Self {
        DataStream {
            env: env.clone(),
            node: (port == 0).then_some(node),
            producers: vec![Producer {
                node,
                port,
                partition: Partition::Default,
                partitioning: Partitioning::Default,
            }],
        }
    }

    /// This stream's records partitioned as `partition` on the way to the next operator.
    fn partitioned(&self, partition: Partition<T>, partitioning: Partitioning) -> Self {
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

    /// Adds an operator (or sink) that reads this stream; returns its id.
    fn add_operator<O: Data>(
        &self,
        spec: NodeSpec,
        output: Option<OutputType>,
        make: impl Fn(&OperatorSetup) -> Result<Box<dyn Operator<T, O>>> + Send + Sync + 'static,
    ) -> usize {
        let (inputs, partitions) = self.inputs();
        self.env.add(
            spec.transformation(inputs, output),
            Arc::new(OneInputBuilder::new(partitions, make)),
        )
    }

    /// Adds a one-input operator with output `O`.
    fn then<O: Data>(
        &self,
        name: &str,
        description: impl Into<String>,
        make: impl Fn(&OperatorSetup) -> Result<Box<dyn Operator<T, O>>> + Send + Sync + 'static,
    ) -> DataStream<O> {
        let id = self.add_operator(
            NodeSpec::new(NodeKind::Operator, name, description),
            Some(OutputType::of::<O>()),
            make,
        );
        DataStream::of_node(&self.env, id, 0)
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
            return DataStream::of_node(&self.env, id, port);
        }
        if tag.serializer().is_none() {
            self.env.problem(format!(
                "side output `{}`: {} has no serializer with the default configuration",
                tag.id(),
                std::any::type_name::<S>()
            ));
        }
        let tagged = DataStream::<SideRecord>::of_node(&self.env, id, TAGGED_PORT);
        let reader = SideOutputReader { tag: tag.clone() };
        let name = format!("Side output {}", tag.id());
        tagged.then(&name, name.clone(), move |_| Ok(Box::new(reader.clone())))
    }

    fn sink(
        &self,
        spec: NodeSpec,
        make: impl Fn(&OperatorSetup) -> Result<Box<dyn Operator<T, ()>>> + Send + Sync + 'static,
    ) -> DataStreamSink {
        let id = self.add_operator::<()>(spec, None, make);
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
        let id = self.env.add(
            NodeSpec::new(NodeKind::Sink, name, description).transformation(inputs, None),
            Arc::new(SinkBuilder::new(partitions, sink)),
        );
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

/// A sink: name it, give it a uid or a parallelism.
#[derive(Debug, Clone)]
pub struct DataStreamSink {
    env: StreamExecutionEnvironment,
    id: usize,
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
}

struct MapOp<F>(Arc<F>);
impl<I: 'static, O: 'static, F: Fn(I) -> O + Send + Sync + 'static> Operator<I, O> for MapOp<F> {
    #[inline]
    fn process(&mut self, ts: i64, value: I, out: &mut Outputs<O, I>) -> Result<()> {
        out.main.collect(ts, (self.0)(value));
        Ok(())
    }
}

struct FlatMapOp<F, It>(Arc<F>, PhantomData<fn() -> It>);
impl<
        I: 'static,
        O: 'static,
        It: IntoIterator<Item = O> + 'static,
        F: Fn(I) -> It + Send + Sync + 'static,
    > Operator<I, O> for FlatMapOp<F, It>
{
    #[inline]
    fn process(&mut self, ts: i64, value: I, out: &mut Outputs<O, I>) -> Result<()> {
        for o in (self.0)(value) {
            out.main.collect(ts, o);
        }
        Ok(())
    }
}

struct FilterOp<F>(Arc<F>);
impl<I: 'static, F: Fn(&I) -> bool + Send + Sync + 'static> Operator<I, I> for FilterOp<F> {
    #[inline]
    fn process(&mut self, ts: i64, value: I, out: &mut Outputs<I, I>) -> Result<()> {
        if (self.0)(&value) {
            out.main.collect(ts, value);
        }
        Ok(())
    }
}

/// A stream partitioned by a key of type `K`.
pub struct KeyedStream<K, T> {
    stream: DataStream<T>,
    selector: Selector<T, K>,
}

impl<K, T> Clone for KeyedStream<K, T> {
    fn clone(&self) -> Self {
        KeyedStream {
            stream: self.stream.clone(),
            selector: Arc::clone(&self.selector),
        }
    }
}

impl<K, T> std::fmt::Debug for KeyedStream<K, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyedStream")
            .field("key", &std::any::type_name::<K>())
            .field("stream", &self.stream)
            .finish()
    }
}

impl<K: Key, T: Data> KeyedStream<K, T> {
    /// The stream before partitioning (its records as their producers emit them), and its
    /// key selector: two-input operators tag each input and key both again together, with
    /// one exchange.
    pub(crate) fn parts(&self) -> (DataStream<T>, Selector<T, K>) {
        (
            self.stream
                .partitioned(Partition::Default, Partitioning::Default),
            Arc::clone(&self.selector),
        )
    }

    /// Windows per key, cut by `assigner` and fired by its default trigger (change it with
    /// [`WindowedStream::trigger`]).
    pub fn window<A: WindowAssigner>(
        &self,
        assigner: A,
    ) -> WindowedStream<K, T, A, A::DefaultTrigger>
    where
        A::DefaultTrigger: Trigger<K, T, A::Window>,
    {
        WindowedStream {
            keyed: KeyedStream {
                stream: self.stream.clone(),
                selector: Arc::clone(&self.selector),
            },
            trigger: assigner.default_trigger(),
            assigner,
            evictor: None,
            allowed_lateness: 0,
            late: None,
            non_parallel: false,
        }
    }

    /// Windows of `n` records per key: a window fires and is purged at every `n`-th record
    /// of its key (Flink's `countWindow(n)`: [`GlobalWindows`] with
    /// `PurgingTrigger::of(CountTrigger::of(n))`). Records that do not complete a window are
    /// never emitted.
    pub fn count_window(
        &self,
        n: u64,
    ) -> WindowedStream<K, T, GlobalWindows, PurgingTrigger<CountTrigger<GlobalWindow>>> {
        self.window(GlobalWindows)
            .trigger(PurgingTrigger::of(CountTrigger::of(n)))
    }

    /// Windows of the last `n` records per key, fired every `slide` records (Flink's
    /// `countWindow(n, slide)`: [`GlobalWindows`] with `CountEvictor::of(n)` and
    /// `CountTrigger::of(slide)`).
    pub fn count_window_sliding(
        &self,
        n: u64,
        slide: u64,
    ) -> WindowedStream<K, T, GlobalWindows, CountTrigger<GlobalWindow>> {
        self.window(GlobalWindows)
            .evictor(CountEvictor::of(usize::try_from(n).unwrap_or(usize::MAX)))
            .trigger(CountTrigger::of(slide))
    }

    /// Runs a user's operator on every record with its key current: keyed state, timers per
    /// key, operator state (see [`OneInputOperator`]).
    pub fn transform<O: Data, Op: OneInputOperator<K, T, O> + Clone>(
        &self,
        name: &str,
        operator: Op,
    ) -> DataStream<O> {
        let description = format!("Transform ({})", std::any::type_name::<Op>());
        self.stream.transform_keyed(
            name,
            description,
            KeyOf::Every(Arc::clone(&self.selector)),
            operator,
        )
    }

    fn rolling(&self, name: &str, f: impl Fn(&T, T) -> T + Send + Sync + 'static) -> DataStream<T>
    where
        T: StateValue,
    {
        self.transform(
            name,
            RollingReduce {
                f: Arc::new(f),
                state: None,
                batch: false,
            },
        )
    }

    /// Rolling reduce per key: emits, for every record, `f` of the key's previous result and
    /// the record (the first record of a key as it is), as Flink's `KeyedStream.reduce`.
    pub fn reduce(&self, f: impl Fn(&T, &T) -> T + Send + Sync + 'static) -> DataStream<T>
    where
        T: StateValue,
    {
        self.rolling("Keyed Reduce", move |acc, v| f(acc, &v))
    }

    /// Rolling sum per key: emits the running total with every record.
    ///
    /// ```
    /// use typeinfo_runtime::StreamExecutionEnvironment;
    /// # fn main() -> typeinfo_runtime::Result<()> {
    /// let env = StreamExecutionEnvironment::new();
    /// let totals = env
    ///     .from_collection(vec![1i64, 2, 3, 4, 5])
    ///     .key_by(|v: &i64| v % 2)
    ///     .sum()
    ///     .collect();
    /// env.execute("running totals")?;
    /// assert_eq!(totals.take(), [1, 2, 4, 6, 9]);
    /// # Ok(())
    /// # }
    /// ```
    pub fn sum(&self) -> DataStream<T>
    where
        T: StateValue + std::ops::Add<Output = T>,
    {
        self.rolling("Keyed Sum", |acc, v| acc.clone() + v)
    }

    /// Rolling minimum per key: emits the smallest record so far with every record.
    pub fn min(&self) -> DataStream<T>
    where
        T: StateValue + PartialOrd,
    {
        self.rolling("Keyed Min", |acc, v| if v < *acc { v } else { acc.clone() })
    }

    /// Rolling maximum per key: emits the largest record so far with every record.
    pub fn max(&self) -> DataStream<T>
    where
        T: StateValue + PartialOrd,
    {
        self.rolling("Keyed Max", |acc, v| if v > *acc { v } else { acc.clone() })
    }

    /// Rolling minimum by a field: emits the record with the smallest `field` so far (the
    /// first one among equals), as Flink's `minBy`.
    pub fn min_by<V: PartialOrd>(
        &self,
        field: impl Fn(&T) -> V + Send + Sync + 'static,
    ) -> DataStream<T>
    where
        T: StateValue,
    {
        self.rolling("Keyed MinBy", move |acc, v| {
            if field(&v) < field(acc) {
                v
            } else {
                acc.clone()
            }
        })
    }

    /// Rolling maximum by a field: emits the record with the largest `field` so far (the
    /// first one among equals), as Flink's `maxBy`.
    pub fn max_by<V: PartialOrd>(
        &self,
        field: impl Fn(&T) -> V + Send + Sync + 'static,
    ) -> DataStream<T>
    where
        T: StateValue,
    {
        self.rolling("Keyed MaxBy", move |acc, v| {
            if field(&v) > field(acc) {
                v
            } else {
                acc.clone()
            }
        })
    }

    /// Runs `function` on every record with its key's state and timers.
    pub fn process<O: Data, F: KeyedProcessFunction<K, T, O> + Clone>(
        &self,
        function: F,
    ) -> DataStream<O> {
        let selector = Arc::clone(&self.selector);
        self.stream.then(
            "Keyed Process",
            format!("KeyedProcess ({})", std::any::type_name::<F>()),
            move |setup| {
                let (function, inner_selector) = (function.clone(), Arc::clone(&selector));
                keyed_operator(
                    setup,
                    &KeyOf::Every(Arc::clone(&selector)),
                    move |setup: &OperatorSetup| {
                        Ok(Box::new(UserOperator::<K, T, O, _>::with_timer_state(
                            setup,
                            KeyedProcessFunctionOperator(function.clone()),
                            Some(KeyOf::Every(Arc::clone(&inner_selector))),
                            "process-timers",
                        )?))
                    },
                )
            },
        )
    }
}

/// A keyed stream cut into windows by an assigner `A`, fired by a trigger `Tr` (the
/// assigner's default until [`trigger`](Self::trigger) changes it).
pub struct WindowedStream<K, T, A: WindowAssigner, Tr> {
    keyed: KeyedStream<K, T>,
    assigner: A,
    trigger: Tr,
    evictor: Option<Arc<dyn Evictor<T, A::Window>>>,
    allowed_lateness: i64,
    late: Option<String>,
    /// `window_all`: one subtask.
    non_parallel: bool,
}

impl<K, T, A: WindowAssigner, Tr> std::fmt::Debug for WindowedStream<K, T, A, Tr> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WindowedStream")
            .field("assigner", &self.assigner)
            .field("trigger", &std::any::type_name::<Tr>())
            .field("evictor", &self.evictor.is_some())
            .field("allowed_lateness_ms", &self.allowed_lateness)
            .finish()
    }
}

impl<K: Key, T: Data, A: WindowAssigner, Tr: Trigger<K, T, A::Window>> WindowedStream<K, T, A, Tr> {
    /// Keeps windows for `lateness` after they fire; late records within it fire them again.
    pub fn allowed_lateness(self, lateness: Duration) -> Self {
        self.allowed_lateness_millis(lateness.as_millis().min(i64::MAX as u128) as i64)
    }

    /// As [`allowed_lateness`](Self::allowed_lateness), in milliseconds (a negative lateness
    /// is refused when the job is built, as Flink refuses it).
    pub fn allowed_lateness_millis(mut self, lateness: i64) -> Self {
        self.allowed_lateness = lateness;
        self
    }

    /// Sends late records to the side output `tag` (read it with [`DataStream::side_output`]
    /// on the window's result stream) instead of dropping them.
    pub fn side_output_late_data(mut self, tag: &OutputTag<T>) -> Self {
        self.late = Some(tag.id().to_owned());
        self
    }

    /// Replaces the trigger (Flink's `WindowedStream.trigger`): when windows fire and purge.
    /// With a merging assigner (session windows) the trigger must be able to merge; one that
    /// cannot is refused when the job is built.
    ///
    /// ```
    /// use typeinfo_runtime::trigger::CountTrigger;
    /// use typeinfo_runtime::{StreamExecutionEnvironment, TumblingEventTimeWindows, WatermarkStrategy};
    ///
    /// # fn main() -> typeinfo_runtime::Result<()> {
    /// let env = StreamExecutionEnvironment::new();
    /// let sums = env
    ///     .from_collection(vec![1i64, 2, 3, 4, 5])
    ///     .assign_timestamps_and_watermarks(WatermarkStrategy::for_monotonous_timestamps().with_timestamp_assigner(|v: &i64, _| *v))
    ///     .key_by(|_: &i64| 0u8)
    ///     .window(TumblingEventTimeWindows::of_millis(100))
    ///     .trigger(CountTrigger::of(2)) // early results every two records, nothing at the end
    ///     .reduce(|a, b| a + b)
    ///     .collect();
    /// env.execute("early")?;
    /// assert_eq!(sums.take(), [3, 10]);
    /// # Ok(())
    /// # }
    /// ```
    pub fn trigger<Tr2: Trigger<K, T, A::Window>>(
        self,
        trigger: Tr2,
    ) -> WindowedStream<K, T, A, Tr2> {
        WindowedStream {
            keyed: self.keyed,
            assigner: self.assigner,
            trigger,
            evictor: self.evictor,
            allowed_lateness: self.allowed_lateness,
            late: self.late,
            non_parallel: self.non_parallel,
        }
    }

    /// Evicts elements before (or after) the window's function (Flink's
    /// `WindowedStream.evictor`). The window then keeps all its elements: `aggregate` and
    /// `reduce` run over the full contents when it fires.
    pub fn evictor(mut self, evictor: impl Evictor<T, A::Window>) -> Self {
        self.evictor = Some(Arc::new(evictor));
        self
    }

    fn build<O: Data>(
        &self,
        what: &str,
        contents: ContentsFactory<K, A::Window, T, O>,
    ) -> DataStream<O> {
        let (selector, assigner, trigger, lateness, late) = (
            Arc::clone(&self.keyed.selector),
            self.assigner.clone(),
            self.trigger.clone(),
            self.allowed_lateness,
            self.late.is_some(),
        );
        let name = if self.non_parallel {
            "Window All"
        } else {
            "Window"
        };
        let description = format!(
            "{}({assigner}, {}{}, allowed lateness {lateness} ms, {what}{})",
            if self.non_parallel {
                "WindowAll"
            } else {
                "Window"
            },
            short_type_name::<Tr>(),
            if self.evictor.is_some() {
                ", evicting"
            } else {
                ""
            },
            if late {
                ", late data to side output"
            } else {
                ""
            }
        );
        let window = Arc::new(
            move |setup: &OperatorSetup| -> Result<Box<dyn Operator<T, O>>> {
                Ok(Box::new(WindowOperator::new(
                    setup,
                    Arc::clone(&selector),
                    assigner.clone(),
                    trigger.clone(),
                    lateness,
                    late,
                    &contents,
                )?))
            },
        );
        let selector = Arc::clone(&self.keyed.selector);
        let make = move |setup: &OperatorSetup| {
            let window = Arc::clone(&window);
            keyed_operator(
                setup,
                &KeyOf::Every(Arc::clone(&selector)),
                move |setup: &OperatorSetup| window(setup),
            )
        };
        let negative = (self.allowed_lateness < 0).then(|| {
            format!(
                "the allowed lateness must not be negative (got {} ms)",
                self.allowed_lateness
            )
        });
        let invalid = negative.or_else(|| self.assigner.validate().err()).or_else(|| {
            (self.assigner.is_merging() && !self.trigger.can_merge()).then(|| {
                format!(
                    "a merging window assigner ({}) cannot be used with a trigger that does not support merging ({})",
                    self.assigner,
                    short_type_name::<Tr>()
                )
            })
        });
        let spec = NodeSpec {
            side_outputs: self.late.iter().cloned().collect(),
            invalid,
            parallelism: self.non_parallel.then_some(1),
            non_parallel: self.non_parallel,
            ..NodeSpec::new(NodeKind::Operator, name, description)
        };
        let id = self
            .keyed
            .stream
            .add_operator(spec, Some(OutputType::of::<O>()), make);
        DataStream::of_node(&self.keyed.stream.env, id, 0)
    }

    /// The contents of a window whose function takes one value folded from the elements:
    /// incremental state, or every element when there is an evictor.
    fn folded<R: 'static, O: Data, F>(
        &self,
        what: &str,
        incremental: impl Fn(&mut KeyedBackend<K>, F) -> Result<Box<dyn WindowContents<K, A::Window, T, O>>>
            + Send
            + Sync
            + 'static,
        fold: Fold<T, R>,
        function: F,
    ) -> DataStream<O>
    where
        F: InternalWindowFunction<K, A::Window, R, O> + Clone + Sync,
    {
        let contents: ContentsFactory<K, A::Window, T, O> = match &self.evictor {
            None => Arc::new(move |backend| incremental(backend, function.clone())),
            Some(evictor) => {
                let evictor = Arc::clone(evictor);
                Arc::new(move |backend| {
                    evicting_contents(
                        backend,
                        Arc::clone(&evictor),
                        Arc::clone(&fold),
                        function.clone(),
                    )
                })
            }
        };
        self.build(what, contents)
    }

    /// The contents of a window whose function takes all elements.
    fn listed<O: Data, F>(&self, what: &str, function: F) -> DataStream<O>
    where
        F: InternalWindowFunction<K, A::Window, Vec<T>, O> + Clone + Sync,
    {
        let contents: ContentsFactory<K, A::Window, T, O> = match &self.evictor {
            None => {
                let descriptor = ListStateDescriptor::new("window-contents");
                Arc::new(move |backend| {
                    Ok(Box::new(ListContents {
                        state: backend.list_state(&descriptor)?,
                        function: function.clone(),
                    }))
                })
            }
            Some(evictor) => {
                let evictor = Arc::clone(evictor);
                Arc::new(move |backend| {
                    evicting_contents(
                        backend,
                        Arc::clone(&evictor),
                        Arc::new(Some),
                        function.clone(),
                    )
                })
            }
        };
        self.build(what, contents)
    }

    fn reduced<O: Data, F>(
        &self,
        f: impl Fn(&T, &T) -> T + Send + Sync + 'static,
        function: F,
    ) -> DataStream<O>
    where
        F: InternalWindowFunction<K, A::Window, T, O> + Clone + Sync,
    {
        let f: typeinfo_state::ReduceFn<T> = Arc::new(f);
        let g = Arc::clone(&f);
        let descriptor =
            ReducingStateDescriptor::new("window-contents", move |a: &T, b: &T| g(a, b));
        self.folded(
            "reduce",
            move |backend, function| {
                Ok(Box::new(IncrementalContents::new(
                    backend.reducing_state(&descriptor)?,
                    function,
                )))
            },
            reduce_fold(f),
            function,
        )
    }

    fn aggregated<Acc: Data + Sync, R: 'static, O: Data, F>(
        &self,
        aggregate: impl AggregateFunction<T, Acc, R> + 'static,
        function: F,
    ) -> DataStream<O>
    where
        F: InternalWindowFunction<K, A::Window, R, O> + Clone + Sync,
    {
        let aggregate: Arc<dyn AggregateFunction<T, Acc, R>> = Arc::new(aggregate);
        let shared = SharedAggregate(Arc::clone(&aggregate));
        let descriptor = AggregatingStateDescriptor::new("window-contents", shared);
        self.folded(
            "aggregate",
            move |backend, function| {
                Ok(Box::new(IncrementalContents::new(
                    backend.aggregating_state(&descriptor)?,
                    function,
                )))
            },
            aggregate_fold(aggregate),
            function,
        )
    }

    /// Reduces each window's records with `f`; emits the reduced record when it fires.
    pub fn reduce(&self, f: impl Fn(&T, &T) -> T + Send + Sync + 'static) -> DataStream<T> {
        self.reduced(f, ResultFn(Arc::new(|_: &K, _: &A::Window, r: T| r)))
    }

    /// Reduces each window incrementally with `f`, then runs `function` on the one reduced
    /// record with the window's context (Flink's `reduce(reduceFunction, processWindowFunction)`).
    pub fn reduce_process<O: Data, F: ProcessWindowFunction<K, T, O, A::Window> + Clone + Sync>(
        &self,
        f: impl Fn(&T, &T) -> T + Send + Sync + 'static,
        function: F,
    ) -> DataStream<O> {
        self.reduced(f, ProcessOne(function))
    }

    /// Aggregates each window's records incrementally with `function`; emits its result.
    pub fn aggregate<Acc: Data + Sync, R: Data>(
        &self,
        function: impl AggregateFunction<T, Acc, R> + 'static,
    ) -> DataStream<R> {
        self.aggregate_with(function, |_: &K, _: &A::Window, r: R| r)
    }

    /// Aggregates each window incrementally with `function`, then emits
    /// `f(key, window, result)` (Flink's `aggregate` with a window function).
    pub fn aggregate_with<Acc: Data + Sync, R: 'static, O: Data>(
        &self,
        function: impl AggregateFunction<T, Acc, R> + 'static,
        f: impl Fn(&K, &A::Window, R) -> O + Send + Sync + 'static,
    ) -> DataStream<O> {
        self.aggregated(function, ResultFn(Arc::new(f)))
    }

    /// Aggregates each window incrementally with `aggregate`, then runs `function` on the one
    /// result with the window's context (Flink's
    /// `aggregate(aggregateFunction, processWindowFunction)`).
    ///
    /// ```
    /// use typeinfo_runtime::functions::Count;
    /// use typeinfo_runtime::{
    ///     ProcessWindowFunction, StreamExecutionEnvironment, TimeWindow, TumblingEventTimeWindows,
    ///     WatermarkStrategy, WindowContext,
    /// };
    ///
    /// #[derive(Clone)]
    /// struct Label;
    /// impl ProcessWindowFunction<u8, u64, String, TimeWindow> for Label {
    ///     fn process(&mut self, _: &u8, counts: Vec<u64>, ctx: &mut WindowContext<'_, u8, TimeWindow, String>) -> typeinfo_runtime::Result<()> {
    ///         let (w, n) = (*ctx.window(), counts[0]); // one incremental result
    ///         ctx.collect(format!("{n} in [{}, {})", w.start, w.end));
    ///         Ok(())
    ///     }
    /// }
    ///
    /// # fn main() -> typeinfo_runtime::Result<()> {
    /// let env = StreamExecutionEnvironment::new();
    /// let lines = env
    ///     .from_collection(vec![1i64, 2, 12])
    ///     .assign_timestamps_and_watermarks(WatermarkStrategy::for_monotonous_timestamps().with_timestamp_assigner(|v: &i64, _| *v))
    ///     .key_by(|_: &i64| 0u8)
    ///     .window(TumblingEventTimeWindows::of_millis(10))
    ///     .aggregate_process(Count, Label)
    ///     .collect();
    /// env.execute("labels")?;
    /// assert_eq!(lines.take(), ["2 in [0, 10)", "1 in [10, 20)"]);
    /// # Ok(())
    /// # }
    /// ```
    pub fn aggregate_process<Acc: Data + Sync, R: 'static, O: Data, F>(
        &self,
        aggregate: impl AggregateFunction<T, Acc, R> + 'static,
        function: F,
    ) -> DataStream<O>
    where
        F: ProcessWindowFunction<K, R, O, A::Window> + Clone + Sync,
    {
        self.aggregated(aggregate, ProcessOne(function))
    }

    /// Keeps every record of a window and calls `f(key, window, records, out)` when it fires
    /// (Flink's `apply` with a `WindowFunction`).
    pub fn apply<O: Data>(
        &self,
        f: impl Fn(&K, &A::Window, Vec<T>, &mut Vec<O>) + Send + Sync + 'static,
    ) -> DataStream<O> {
        self.listed("apply", ApplyFn(Arc::new(f)))
    }

    /// Keeps every record of a window and runs `function` on them with the window's context
    /// when it fires (Flink's `process` with a `ProcessWindowFunction`): the window, the
    /// watermark, per-window and per-key state, side outputs.
    pub fn process<O: Data, F: ProcessWindowFunction<K, T, O, A::Window> + Clone + Sync>(
        &self,
        function: F,
    ) -> DataStream<O> {
        self.listed("process", ProcessAll(function))
    }
}

/// An aggregate function shared between the window's state and its evicting fold.
struct SharedAggregate<T, Acc, R>(Arc<dyn AggregateFunction<T, Acc, R>>);

impl<T, Acc, R> AggregateFunction<T, Acc, R> for SharedAggregate<T, Acc, R> {
    fn create_accumulator(&self) -> Acc {
        self.0.create_accumulator()
    }
    fn add(&self, value: &T, accumulator: &mut Acc) {
        self.0.add(value, accumulator);
    }
    fn get_result(&self, accumulator: &Acc) -> R {
        self.0.get_result(accumulator)
    }
    fn merge(&self, a: Acc, b: Acc) -> Acc {
        self.0.merge(a, b)
    }
}

/// A type's name without its module path (`CountTrigger<GlobalWindow>`), for `explain`.
fn short_type_name<X>() -> String {
    let full = std::any::type_name::<X>();
    let mut out = String::new();
    let mut word = String::new();
    for c in full.chars() {
        if c.is_alphanumeric() || c == '_' || c == ':' {
            word.push(c);
        } else {
            out.push_str(word.rsplit("::").next().unwrap_or(&word));
            word.clear();
            out.push(c);
        }
    }
    out.push_str(word.rsplit("::").next().unwrap_or(&word));
    out
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

/// The rolling aggregations of [`KeyedStream`]: one value per key in keyed state. In batch
/// mode only the final value per key is emitted (timestamp `i64::MAX`), from an event-time
/// timer at the end of time that fires at the end of the key (Flink's
/// `BatchGroupedReduceOperator`).
struct RollingReduce<T, F> {
    f: Arc<F>,
    state: Option<ValueState<(), T>>,
    batch: bool,
}

impl<T, F> Clone for RollingReduce<T, F> {
    fn clone(&self) -> Self {
        RollingReduce {
            f: Arc::clone(&self.f),
            state: None,
            batch: false,
        }
    }
}

impl<K: Key, T: Data + StateValue, F: Fn(&T, T) -> T + Send + Sync + 'static>
    OneInputOperator<K, T, T> for RollingReduce<T, F>
{
    fn initialize_state(&mut self, ctx: &mut StateContext<'_, K>) -> Result<()> {
        self.batch = ctx.runtime().is_batch();
        self.state = Some(
            ctx.keyed_state()?
                .value_state(&ValueStateDescriptor::new("rolling"))?,
        );
        Ok(())
    }

    fn process_element(&mut self, value: T, ctx: &mut OperatorContext<'_, K, T>) -> Result<()> {
        let Some(state) = &self.state else {
            return Ok(());
        };
        let backend = ctx.keyed_state()?;
        let (next, first) = match state.value(backend, &())? {
            Some(acc) => ((self.f)(&acc, value), false),
            None => (value, true),
        };
        if self.batch {
            state.update(backend, &(), next)?;
            if first {
                ctx.register_event_time_timer(i64::MAX)?;
            }
        } else {
            state.update(backend, &(), next.clone())?;
            ctx.collect(next);
        }
        Ok(())
    }

    fn on_timer(
        &mut self,
        _time: i64,
        _domain: TimeDomain,
        ctx: &mut OperatorContext<'_, K, T>,
    ) -> Result<()> {
        let Some(state) = &self.state else {
            return Ok(());
        };
        if let Some(value) = state.value(ctx.keyed_state()?, &())? {
            ctx.collect_with_timestamp(value, i64::MAX);
        }
        Ok(())
    }
}

/// Reads one tag's values out of an operator's tagged side outputs.
struct SideOutputReader<S: Data> {
    tag: OutputTag<S>,
}

impl<S: Data> Clone for SideOutputReader<S> {
    fn clone(&self) -> Self {
        SideOutputReader {
            tag: self.tag.clone(),
        }
    }
}

impl<S: Data> Operator<SideRecord, S> for SideOutputReader<S> {
    fn process(
        &mut self,
        ts: i64,
        (tag, bytes): SideRecord,
        out: &mut Outputs<S, SideRecord>,
    ) -> Result<()> {
        if tag != self.tag.id() {
            return Ok(());
        }
        let serializer = self.tag.serializer().ok_or_else(|| {
            crate::Error::Graph(format!("side output `{}` has no serializer", self.tag.id()))
        })?;
        let mut input = typeinfo::DataInputView::new(&bytes);
        let value = serializer.deserialize(&mut input)?;
        if !input.is_empty() {
            return Err(crate::Error::Corrupt(format!(
                "side output `{}`: bytes after a value",
                self.tag.id()
            )));
        }
        out.main.collect(ts, value);
        Ok(())
    }
}
