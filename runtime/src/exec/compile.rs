//! Compiling the stream graph onto timely dataflow, on each worker.
//!
//! Every API call that adds an operator records, beside its plain-data transformation, a
//! typed [`NodeBuilder`]: it knows the operator's input and output types, the typed router
//! of each hash input and how to make the operator. Compiling walks the graph's nodes in
//! order (producers before consumers) and lets each builder assemble its timely operator
//! with its real types, around a driver ([`crate::exec::driver`]). The serializers of the records
//! on each edge are made here from the job's serializer config and handed to the edge's
//! distributor and to the receiving driver.
//!
//! Every worker builds the whole graph (timely requires every worker to build the same
//! dataflow); a node with parallelism `p` runs its operator on workers `0..p` and leaves the
//! others idle.

use std::path::PathBuf;
use std::sync::Arc;

use timely::dataflow::channels::pushers;
use timely::dataflow::operators::generic::builder_rc::OperatorBuilder;
use timely::dataflow::operators::probe::Handle as ProbeHandle;
use timely::dataflow::operators::Capability;
use timely::dataflow::operators::Probe;
use timely::dataflow::{Scope, Stream};
use timely::progress::frontier::MutableAntichain;
use typeinfo::{SerializerConfig, TypeInfo};

use crate::checkpoint::format::operator_key;
use crate::checkpoint::restore::Restore;
use crate::checkpoint::store::CheckpointStore;
use crate::config::ExecutionConfig;
use crate::error::{Error, Result};
use crate::exec::chain::{both, take_caps, Chained, MainOut, NodeOutputs, OperatorStage, Stage};
use crate::exec::channel::{EdgeDistributor, EdgePact, Route, RouterFactory};
use crate::exec::coordinator::{Coordinator, CoordinatorThread, NodeCommitter};
use crate::exec::driver::{Next, OperatorDriver, OperatorDriverSetup};
use crate::exec::source_driver::{SourceDriver, SourceEmit};
use crate::job::{epoch_of, guarded, time_at, Epoch, JobShared, Time};
use crate::operator::contract::{Operator, OperatorSetup, SideRecord, SourceFunction};
use crate::operator::element::{sender_id, Batch, Msg};
use crate::plan::{PartitionerKind, StreamEdge, StreamGraph, StreamNode, TAGGED_PORT};
use crate::types::Data;
use crate::user::sink::{Committer, Sink, SinkCommitter, SinkOperator};

/// Builds one node's timely operator on one worker, with the node's real types.
pub(crate) trait NodeBuilder: Send + Sync {
    /// Builds the operator from its input edges (in the order of its inputs) and registers
    /// its output streams.
    fn build<'s>(
        &self,
        cx: &mut CompileCx<'s>,
        node: &StreamNode,
        inputs: &[&StreamEdge],
    ) -> Result<()>;

    /// The committer of a two-phase sink (see [`crate::sink`]).
    fn committer(&self, _config: &SerializerConfig) -> Result<Option<Arc<dyn Committer>>> {
        Ok(None)
    }
}

/// Builds a node as a stage chained after another node, whose output is `I` (see
/// [`crate::exec::chain`]).
pub(crate) trait StageMaker<I: Data>: Send + Sync {
    /// Builds node `node` as a stage of the timely operator `builder` builds.
    fn stage<'s>(
        &self,
        cx: &mut CompileCx<'s>,
        node: &StreamNode,
        inputs: &[&StreamEdge],
        builder: &mut OperatorBuilder<'s, Time>,
    ) -> Result<Box<dyn Stage<I>>>;
}

/// The consumers of a node's main output that could be chained after it, by node id,
/// typed by the output: the API registers each operator that reads the stream (the plan
/// decides which one, if any, is chained); the node's builder finds it here when it
/// builds the chain. Keeps the chain typed end to end.
pub(crate) struct ChainSlot<T> {
    consumers: std::sync::Mutex<Vec<Consumer<T>>>,
}

/// A node reading a stream, and how to build it as a stage chained after the producer.
type Consumer<T> = (usize, Arc<dyn StageMaker<T>>);

impl<T: Data> ChainSlot<T> {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(ChainSlot {
            consumers: std::sync::Mutex::new(Vec::new()),
        })
    }

    /// Node `node` reads the stream, and can be built as a stage with `maker`.
    pub(crate) fn register(&self, node: usize, maker: Arc<dyn StageMaker<T>>) {
        self.consumers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push((node, maker));
    }

    /// Builds node `node`, chained after node `after` (the node of this slot), as a stage of
    /// the timely operator `builder` builds, with a probe of `after`'s progress on every
    /// worker.
    fn chained<'s>(
        &self,
        cx: &mut CompileCx<'s>,
        after: usize,
        node: usize,
        builder: &mut OperatorBuilder<'s, Time>,
    ) -> Result<Chained<T>> {
        let mut upstream = None;
        if cx.graph.nodes[after].parallelism > 1 {
            // Its progress output, also what the coordinator and the sources' flow control read.
            let progress = cx
                .progress
                .iter()
                .find(|(n, _)| *n == after)
                .map(|(_, stream)| stream.clone())
                .ok_or_else(|| Error::Graph(format!("node {after} has no progress output")))?;
            let probe = ProbeHandle::new();
            progress.probe_with(&probe);
            upstream = Some(probe);
        }
        Ok(Chained {
            stage: self.stage(cx, node, builder)?,
            upstream,
        })
    }

    /// Builds node `node`, chained after the node of this slot, as a stage of the timely
    /// operator `builder` builds.
    fn stage<'s>(
        &self,
        cx: &mut CompileCx<'s>,
        node: usize,
        builder: &mut OperatorBuilder<'s, Time>,
    ) -> Result<Box<dyn Stage<T>>> {
        let maker = self
            .consumers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .find(|(n, _)| *n == node)
            .map(|(_, maker)| Arc::clone(maker))
            .ok_or_else(|| {
                Error::Graph(format!(
                    "node {node} is chained to a stream it does not read"
                ))
            })?;
        let graph = Arc::clone(&cx.graph);
        maker.stage(cx, &graph.nodes[node], &graph.inputs(node), builder)
    }
}

/// The builder of a node with a two-phase [`Sink`].
pub(crate) struct SinkBuilder<T, S> {
    partitions: Vec<Partition<T>>,
    sink: Arc<S>,
}

impl<T, S> SinkBuilder<T, S> {
    pub(crate) fn new(partitions: Vec<Partition<T>>, sink: S) -> Self {
        SinkBuilder {
            partitions,
            sink: Arc::new(sink),
        }
    }
}

impl<T: Data, S: Sink<T>> NodeBuilder for SinkBuilder<T, S> {
    fn build<'s>(
        &self,
        cx: &mut CompileCx<'s>,
        node: &StreamNode,
        inputs: &[&StreamEdge],
    ) -> Result<()> {
        let committer = Arc::new(SinkCommitter::new(
            Arc::clone(&self.sink),
            &cx.config.serializer_config,
        )?);
        build_operator::<T, ()>(cx, node, inputs, &self.partitions, None, move |setup| {
            Ok(Box::new(SinkOperator::new(setup, committer)?))
        })
    }

    fn committer(&self, config: &SerializerConfig) -> Result<Option<Arc<dyn Committer>>> {
        Ok(Some(Arc::new(SinkCommitter::new(
            Arc::clone(&self.sink),
            config,
        )?)))
    }
}

impl<T: Data, S: Sink<T>> StageMaker<T> for SinkBuilder<T, S> {
    fn stage<'s>(
        &self,
        cx: &mut CompileCx<'s>,
        node: &StreamNode,
        inputs: &[&StreamEdge],
        builder: &mut OperatorBuilder<'s, Time>,
    ) -> Result<Box<dyn Stage<T>>> {
        let committer = Arc::new(SinkCommitter::new(
            Arc::clone(&self.sink),
            &cx.config.serializer_config,
        )?);
        let stage = operator_stage::<T, ()>(cx, node, inputs, builder, None, move |setup| {
            Ok(Box::new(SinkOperator::new(setup, committer)?))
        })?;
        Ok(Box::new(stage))
    }
}

/// How a typed input is partitioned: the typed half of [`crate::plan::Partitioning`].
pub(crate) enum Partition<T> {
    /// Forward, or round robin when the parallelism differs.
    Default,
    /// By key group, with a router made per worker.
    Hash(RouterFactory<T>),
    /// Round robin.
    Rebalance,
    /// To every subtask.
    Broadcast,
}

impl<T> Clone for Partition<T> {
    fn clone(&self) -> Self {
        match self {
            Partition::Default => Partition::Default,
            Partition::Hash(f) => Partition::Hash(Arc::clone(f)),
            Partition::Rebalance => Partition::Rebalance,
            Partition::Broadcast => Partition::Broadcast,
        }
    }
}

/// The builder of a source node.
pub(crate) struct SourceBuilder<O, M> {
    make: M,
    /// What reads the source's records (one of them may be chained after it).
    chain: Arc<ChainSlot<O>>,
}

impl<O, M> SourceBuilder<O, M> {
    pub(crate) fn new(make: M, chain: Arc<ChainSlot<O>>) -> Self {
        SourceBuilder { make, chain }
    }
}

impl<O, M> NodeBuilder for SourceBuilder<O, M>
where
    O: Data,
    M: Fn(&OperatorSetup) -> Result<Box<dyn SourceFunction<O>>> + Send + Sync,
{
    fn build<'s>(
        &self,
        cx: &mut CompileCx<'s>,
        node: &StreamNode,
        _: &[&StreamEdge],
    ) -> Result<()> {
        build_source::<O>(cx, node, &self.chain, &self.make)
    }
}

/// The builder of a node with a one-input operator (sinks are one-input operators with no
/// output records).
pub(crate) struct OneInputBuilder<I, O, M> {
    /// The partitioning of each input, in the order of the node's inputs.
    partitions: Vec<Partition<I>>,
    make: M,
    /// What reads the operator's main output (one of them may be chained after it).
    chain: Arc<ChainSlot<O>>,
}

impl<I, O, M> OneInputBuilder<I, O, M> {
    pub(crate) fn new(partitions: Vec<Partition<I>>, make: M, chain: Arc<ChainSlot<O>>) -> Self {
        OneInputBuilder {
            partitions,
            make,
            chain,
        }
    }
}

impl<I, O, M> NodeBuilder for OneInputBuilder<I, O, M>
where
    I: Data,
    O: Data,
    M: Fn(&OperatorSetup) -> Result<Box<dyn Operator<I, O>>> + Send + Sync,
{
    fn build<'s>(
        &self,
        cx: &mut CompileCx<'s>,
        node: &StreamNode,
        inputs: &[&StreamEdge],
    ) -> Result<()> {
        build_operator::<I, O>(
            cx,
            node,
            inputs,
            &self.partitions,
            Some(&self.chain),
            &self.make,
        )
    }
}

impl<I, O, M> StageMaker<I> for OneInputBuilder<I, O, M>
where
    I: Data,
    O: Data,
    M: Fn(&OperatorSetup) -> Result<Box<dyn Operator<I, O>>> + Send + Sync,
{
    fn stage<'s>(
        &self,
        cx: &mut CompileCx<'s>,
        node: &StreamNode,
        inputs: &[&StreamEdge],
        builder: &mut OperatorBuilder<'s, Time>,
    ) -> Result<Box<dyn Stage<I>>> {
        let stage =
            operator_stage::<I, O>(cx, node, inputs, builder, Some(&self.chain), &self.make)?;
        Ok(Box::new(stage))
    }
}

/// What compiling the graph on one worker needs and collects.
pub(crate) struct CompileCx<'s> {
    scope: Scope<'s, Time>,
    job_name: String,
    worker: usize,
    config: ExecutionConfig,
    state_root: PathBuf,
    job: Arc<JobShared>,
    graph: Arc<StreamGraph>,
    streams: table::StreamTable<'s>,
    /// Every operator's progress output (by node), for the checkpoint coordinator and the
    /// sources' flow control.
    progress: Vec<(usize, Stream<'s, Time, Batch<()>>)>,
    /// Each source node's probe of the operators downstream of it (flow control).
    source_probes: Vec<(usize, ProbeHandle<Time>)>,
    /// The first epoch of this run (the restored checkpoint's plus one).
    start_epoch: Epoch,
    restore: Option<Arc<Restore>>,
    /// The job's checkpoints (opened once per run).
    checkpoints: Option<CheckpointStore>,
}

/// What a run gives every worker's compile.
#[derive(Clone)]
pub(crate) struct CompileSettings {
    pub(crate) job_name: String,
    pub(crate) config: ExecutionConfig,
    pub(crate) state_root: PathBuf,
    pub(crate) job: Arc<JobShared>,
    pub(crate) graph: Arc<StreamGraph>,
    pub(crate) builders: Arc<Vec<Arc<dyn NodeBuilder>>>,
    pub(crate) start_epoch: Epoch,
    pub(crate) restore: Option<Arc<Restore>>,
    pub(crate) checkpoints: Option<CheckpointStore>,
}

/// Compiles the whole graph on one worker: every node, then the checkpoint coordinator.
pub(crate) fn compile(scope: Scope<'_, Time>, worker: usize, settings: CompileSettings) {
    let CompileSettings {
        job_name,
        config,
        state_root,
        job,
        graph,
        builders,
        start_epoch,
        restore,
        checkpoints,
    } = settings;
    let mut cx = CompileCx {
        scope,
        job_name,
        worker,
        config,
        state_root,
        job: Arc::clone(&job),
        graph: Arc::clone(&graph),
        streams: table::StreamTable::default(),
        progress: Vec::new(),
        source_probes: Vec::new(),
        start_epoch,
        restore,
        checkpoints,
    };
    let mut committers = Vec::new();
    for node in graph.nodes() {
        let built = match builders.get(node.id()) {
            // A node chained to its input is built with the head of its chain.
            Some(builder) if node.chained => builder.committer(&cx.config.serializer_config),
            Some(builder) => builder
                .build(&mut cx, node, &graph.inputs(node.id()))
                .and_then(|()| builder.committer(&cx.config.serializer_config)),
            None => Err(Error::Graph(format!("node {} has no builder", node.id()))),
        };
        match built {
            Ok(Some(committer)) => committers.push(NodeCommitter {
                key: operator_key(node.uid(), node.id()),
                name: node.name().to_owned(),
                parallelism: node.parallelism(),
                committer,
            }),
            Ok(None) => {}
            Err(e) => job.fail(e),
        }
    }
    probe_downstream(&mut cx);
    build_coordinator(&mut cx, committers);
}

/// Gives every source node's probe the progress of every node reachable from it (itself
/// included): the least time any of them still holds, which is what the source's flow
/// control counts its records in flight from (see [`crate::exec::source_driver`]).
fn probe_downstream(cx: &mut CompileCx<'_>) {
    for (source, probe) in std::mem::take(&mut cx.source_probes) {
        let mut reached = vec![false; cx.graph.nodes().len()];
        let mut todo = vec![source];
        while let Some(node) = todo.pop() {
            if std::mem::replace(&mut reached[node], true) {
                continue;
            }
            todo.extend(
                cx.graph
                    .edges()
                    .iter()
                    .filter(|e| e.source == node)
                    .map(|e| e.target),
            );
        }
        for (node, stream) in &cx.progress {
            if reached[*node] {
                stream.clone().probe_with(&probe);
            }
        }
    }
}

impl<'s> CompileCx<'s> {
    fn setup(&self, node: &StreamNode) -> OperatorSetup {
        let dir = match &node.uid {
            Some(uid) => format!("op-{uid}"),
            None => format!("op-{}", node.id),
        };
        OperatorSetup {
            job_name: self.job_name.clone(),
            name: node.name.clone(),
            node: node.id,
            subtask: self.worker,
            parallelism: node.parallelism as usize,
            max_parallelism: self.graph.max_parallelism(),
            serializer_config: self.config.serializer_config.clone(),
            state_backend: self.config.state_backend.clone(),
            state_dir: self.state_root.join(dir),
            auto_watermark_interval_ms: self.config.auto_watermark_interval.as_millis() as i64,
            job: Arc::clone(&self.job),
            restore: self.restore.clone(),
            key: operator_key(node.uid.as_deref(), node.id),
            checkpoints: self.checkpoint_store(),
            batch: self.graph.is_batch(),
            batch_sort_memory: self.config.batch_sort_memory,
            batch_hash_aggregation: self.config.batch_hash_aggregation,
            max_in_flight_records: self.config.max_in_flight_records,
            restart_strategy: self.config.restart_strategy.clone(),
        }
    }

    /// The serializer of `T` with the job's config (for an edge into `node`).
    fn serializer<T: TypeInfo>(&self, node: &StreamNode) -> Result<T::Serializer> {
        serializer::<T>(&self.config.serializer_config, &node.name)
    }

    /// The stream and pact of an input edge.
    #[allow(clippy::type_complexity)] // a stream and its pact
    fn input<I: Data>(
        &self,
        edge: &StreamEdge,
        partition: &Partition<I>,
    ) -> Result<(Stream<'s, Time, Batch<I>>, EdgePact<I>)> {
        let stream = self
            .streams
            .get::<I>(edge.source, edge.source_port)
            .ok_or_else(|| {
                Error::Graph(format!(
                    "edge {} -> {} does not carry {}",
                    edge.source,
                    edge.target,
                    std::any::type_name::<I>()
                ))
            })?;
        let node = &self.graph.nodes[edge.target];
        let targets = node.parallelism as usize;
        let own = self.worker;
        let route = match (edge.partitioner, partition) {
            (PartitionerKind::Forward, _) => return Ok((stream, EdgePact::Pipeline)),
            (PartitionerKind::Rebalance, _) => Route::Rebalance {
                next: own % targets,
            },
            (PartitionerKind::Broadcast, _) => Route::Broadcast,
            (PartitionerKind::Hash, Partition::Hash(factory)) => Route::Hash(
                factory(targets as u32, self.graph.max_parallelism()).map_err(|source| {
                    Error::Type {
                        operator: node.name.clone(),
                        source,
                    }
                })?,
            ),
            (PartitionerKind::Hash, _) => {
                return Err(Error::Graph(format!(
                    "hash edge {} -> {} has no key",
                    edge.source, edge.target
                )))
            }
        };
        let serializer = Arc::new(self.serializer::<I>(node)?);
        Ok((
            stream,
            EdgePact::Exchange(Box::new(move |peers| {
                EdgeDistributor::new(route, serializer, own, targets, peers)
            })),
        ))
    }

    /// The ids of the upstream subtasks whose watermarks reach this worker through `edges`.
    fn senders(&self, edges: &[&StreamEdge]) -> Vec<u32> {
        let mut senders = Vec::new();
        for e in edges {
            match e.partitioner {
                PartitionerKind::Forward => senders.push(sender_id(e.source, self.worker)),
                _ => senders.extend(
                    (0..self.graph.nodes[e.source].parallelism as usize)
                        .map(|s| sender_id(e.source, s)),
                ),
            }
        }
        senders
    }

    /// The driver of `node`'s operator on this worker: none on a worker past the node's
    /// parallelism or in a job that failed already (an error opening it fails the job).
    fn open_driver<I: Data, O: Data>(
        &self,
        node: &StreamNode,
        inputs: &[&StreamEdge],
        make: impl FnOnce(&OperatorSetup) -> Result<Box<dyn Operator<I, O>>>,
    ) -> Result<Option<OperatorDriver<I, O>>> {
        let mut driver = None;
        if self.worker < node.parallelism as usize && !self.job.failed() {
            let setup = OperatorDriverSetup {
                setup: self.setup(node),
                senders: self.senders(inputs),
                start: time_at(self.start_epoch, 0),
                checkpoints: self.checkpoint_store(),
                stopping: self.config.stop_with_savepoint.is_some(),
            };
            let serializer = self.serializer::<I>(node)?;
            guarded(&self.job, &node.name, || {
                driver = Some(OperatorDriver::open(setup, serializer, make)?);
                Ok(())
            });
        }
        Ok(driver)
    }

    fn checkpoint_store(&self) -> Option<CheckpointStore> {
        self.checkpoints.clone()
    }
}

fn serializer<T: TypeInfo>(config: &SerializerConfig, operator: &str) -> Result<T::Serializer> {
    T::create_serializer(config).map_err(|source| Error::Type {
        operator: operator.to_owned(),
        source,
    })
}

/// The lowest epoch any input may still deliver (`None` once every input is exhausted).
fn frontier_min(frontiers: &[MutableAntichain<Time>]) -> Option<Time> {
    frontiers
        .iter()
        .filter_map(|f| f.frontier().iter().copied().min())
        .min()
}

/// Builds a chain whose head is an operator node: the timely operator reads the head's
/// inputs and runs the chain's stages (see [`crate::exec::chain`]).
fn build_operator<'s, I: Data, O: Data>(
    cx: &mut CompileCx<'s>,
    node: &StreamNode,
    inputs: &[&StreamEdge],
    partitions: &[Partition<I>],
    chain: Option<&ChainSlot<O>>,
    make: impl FnOnce(&OperatorSetup) -> Result<Box<dyn Operator<I, O>>>,
) -> Result<()> {
    let mut builder = OperatorBuilder::new(node.name.clone(), cx.scope);
    let info = builder.operator_info();
    let mut handles = Vec::with_capacity(inputs.len());
    for edge in inputs {
        let (stream, pact) = cx.input::<I>(edge, partition_of(node, edge, partitions)?)?;
        handles.push(builder.new_input(stream, pact));
    }
    let mut stage = operator_stage::<I, O>(cx, node, inputs, &mut builder, chain, make)?;
    let activator = cx.scope.activator_for(info.address.clone());
    let start = time_at(cx.start_epoch, 0);
    builder.build(move |caps| {
        let mut caps: Vec<Option<Capability<Time>>> = caps.into_iter().map(Some).collect();
        stage.start(&mut caps, start);
        drop(caps);
        move |frontiers: &[MutableAntichain<Time>]| {
            let current = stage.current().filter(|_| stage.running());
            for handle in &mut handles {
                handle.for_each(|time, batch| {
                    let batch = std::mem::take(batch);
                    if let Some(current) = current {
                        // Our messages carry one time each (the least of their stamp).
                        stage.receive(time.least().copied().unwrap_or(current), batch);
                    }
                });
            }
            match stage.step(frontier_min(frontiers)) {
                Next::Wait { wake: Some(after) } => activator.activate_after(after),
                Next::Now => activator.activate(),
                Next::Wait { .. } | Next::Finished => {}
            }
        }
    });
    Ok(())
}

/// Creates the timely outputs of operator node `node` (see [`crate::exec::chain::OPERATOR_OUTPUTS`]) and
/// registers their streams under the node's id.
fn node_outputs<'s, O: Data, I: Data>(
    cx: &mut CompileCx<'s>,
    node: &StreamNode,
    builder: &mut OperatorBuilder<'s, Time>,
) -> NodeOutputs<O, I> {
    let first = builder.shape().outputs();
    let (main, main_stream) = builder.new_output::<Batch<O>>();
    let (side, side_stream) = builder.new_output::<Batch<I>>();
    let (tagged, tagged_stream) = builder.new_output::<Batch<SideRecord>>();
    let (progress, progress_stream) = builder.new_output::<Batch<()>>();
    cx.streams.insert(node.id, 0, main_stream);
    cx.streams.insert(node.id, 1, side_stream);
    cx.streams.insert(node.id, TAGGED_PORT, tagged_stream);
    cx.progress.push((node.id, progress_stream));
    NodeOutputs {
        main,
        side,
        tagged,
        _progress: progress,
        first,
    }
}

/// The stage of operator node `node` in the timely operator `builder` builds: its outputs
/// (main output of `O`, late-data side output of `I`, tagged side outputs, progress), its
/// driver, and the stages chained after it.
fn operator_stage<'s, I: Data, O: Data>(
    cx: &mut CompileCx<'s>,
    node: &StreamNode,
    inputs: &[&StreamEdge],
    builder: &mut OperatorBuilder<'s, Time>,
    chain: Option<&ChainSlot<O>>,
    make: impl FnOnce(&OperatorSetup) -> Result<Box<dyn Operator<I, O>>>,
) -> Result<OperatorStage<I, O>> {
    let outputs = node_outputs::<O, I>(cx, node, builder);
    let driver = cx.open_driver(node, inputs, make)?;
    let next = match (node.chained_next, chain) {
        (Some(next), Some(chain)) => Some(chain.chained(cx, node.id, next, builder)?),
        (Some(next), None) => {
            return Err(Error::Graph(format!(
                "`{}` cannot have node {next} chained after it",
                node.name
            )))
        }
        (None, _) => None,
    };
    Ok(OperatorStage::new(
        node.name.clone(),
        Arc::clone(&cx.job),
        driver,
        outputs,
        next,
    ))
}

/// The partition of `edge`'s input of `node`.
fn partition_of<'p, I>(
    node: &StreamNode,
    edge: &StreamEdge,
    partitions: &'p [Partition<I>],
) -> Result<&'p Partition<I>> {
    partitions.get(edge.input).ok_or_else(|| {
        Error::Graph(format!(
            "`{}` has no input {} (edge from {})",
            node.name, edge.input, edge.source
        ))
    })
}

/// A source driver's output on timely.
struct SourceTimelyEmit<'a, O: Data> {
    out: MainOut<'a, O>,
    tagged: pushers::OutputSession<'a, Time, Batch<SideRecord>>,
    caps: &'a mut Vec<Capability<Time>>,
    /// The progress of every operator downstream of the source.
    probe: &'a ProbeHandle<Time>,
}

impl<O: Data> SourceEmit<O> for SourceTimelyEmit<'_, O> {
    fn ship(&mut self, msgs: &mut Vec<Msg<O>>) {
        let time = *self.caps[0].time();
        self.out.ship(&self.caps[0], &time, msgs);
    }
    fn ship_tagged(&mut self, msgs: &mut Vec<Msg<SideRecord>>) {
        if !msgs.is_empty() {
            // The capability of the tagged output (the second).
            self.tagged
                .give(&self.caps[1], &mut Batch::of(std::mem::take(msgs)));
        }
    }
    fn time(&self) -> Time {
        *self.caps[0].time()
    }
    fn advance(&mut self, time: Time) {
        self.out.before_advance(*self.caps[0].time(), time);
        self.caps.iter_mut().for_each(|c| c.downgrade(&time));
    }
    fn frontier(&self) -> Option<Time> {
        self.probe.with_frontier(|f| f.iter().min().copied())
    }
}

/// Builds a chain whose head is a source node: its subtasks run the source driver until
/// the function is exhausted (see [`SourceDriver`]), then the stages chained after it.
fn build_source<'s, O: Data>(
    cx: &mut CompileCx<'s>,
    node: &StreamNode,
    chain: &ChainSlot<O>,
    make: impl FnOnce(&OperatorSetup) -> Result<Box<dyn SourceFunction<O>>>,
) -> Result<()> {
    let mut builder = OperatorBuilder::new(node.name.clone(), cx.scope);
    let info = builder.operator_info();
    let (out, stream) = builder.new_output::<Batch<O>>();
    let (tagged, tagged_stream) = builder.new_output::<Batch<SideRecord>>();
    let (_progress_out, progress_stream) = builder.new_output::<Batch<()>>();
    cx.streams.insert(node.id, 0, stream);
    cx.streams.insert(node.id, TAGGED_PORT, tagged_stream);
    cx.progress.push((node.id, progress_stream));
    let probe = ProbeHandle::new();
    cx.source_probes.push((node.id, probe.clone()));
    let job = Arc::clone(&cx.job);
    let activator = cx.scope.activator_for(info.address.clone());
    let start = time_at(cx.start_epoch, 0);
    let mut driver: Option<SourceDriver<O>> = None;
    if cx.worker < node.parallelism as usize && !job.failed() {
        let setup = cx.setup(node);
        let checkpoints = cx
            .checkpoint_store()
            .zip(cx.config.checkpointing.as_ref().map(|c| c.interval));
        let stop = cx.config.stop_with_savepoint.clone();
        guarded(&job, &node.name, || {
            driver = Some(SourceDriver::open(&setup, checkpoints, stop, make)?);
            Ok(())
        });
    }
    let next = match node.chained_next {
        Some(next) => Some(chain.chained(cx, node.id, next, &mut builder)?),
        None => None,
    };
    let mut head = SourceHead {
        name: node.name.clone(),
        job,
        driver,
        caps: None,
        out,
        tagged,
        _progress: _progress_out,
        probe,
        next,
    };
    builder.build(move |caps| {
        let mut caps: Vec<Option<Capability<Time>>> = caps.into_iter().map(Some).collect();
        head.start(&mut caps, start);
        drop(caps);
        activator.activate();
        move |_frontiers: &[MutableAntichain<Time>]| match head.step() {
            Next::Now => activator.activate(),
            Next::Wait { wake: Some(after) } => activator.activate_after(after),
            Next::Wait { wake: None } | Next::Finished => {}
        }
    });
    Ok(())
}

/// A source node at the head of its chain: its driver, its timely outputs (main, tagged
/// side outputs, progress) and the stages chained after it.
struct SourceHead<O: Data> {
    name: String,
    job: Arc<JobShared>,
    driver: Option<SourceDriver<O>>,
    caps: Option<Vec<Capability<Time>>>,
    out: pushers::Output<Time, Batch<O>>,
    tagged: pushers::Output<Time, Batch<SideRecord>>,
    _progress: pushers::Output<Time, Batch<()>>,
    /// The progress of every operator downstream of the source (its flow control).
    probe: ProbeHandle<Time>,
    next: Option<Chained<O>>,
}

impl<O: Data> SourceHead<O> {
    /// Takes the source's capabilities (its three outputs come first) and gives the rest
    /// to the chain.
    fn start(&mut self, caps: &mut [Option<Capability<Time>>], start: Time) {
        self.caps = take_caps(caps, 0..3, start, self.driver.is_some());
        if let Some(next) = self.next.as_mut() {
            next.stage.start(caps, start);
        }
    }

    /// Runs the source driver (until it is exhausted, or the job failed), then the chain
    /// with the source's time as its input frontier.
    fn step(&mut self) -> Next {
        if self.job.failed() {
            self.driver = None;
            self.caps = None;
        }
        let mut next = Next::Finished;
        if let (Some(d), Some(c)) = (self.driver.as_mut(), self.caps.as_mut()) {
            let out = match self.next.as_mut() {
                Some(next) => MainOut::Chained(next),
                None => MainOut::Timely(self.out.activate()),
            };
            let mut emit = SourceTimelyEmit {
                out,
                tagged: self.tagged.activate(),
                caps: c,
                probe: &self.probe,
            };
            let ok = guarded(&self.job, &self.name, || {
                next = d.step(&mut emit)?;
                Ok(())
            });
            drop(emit);
            // A source runs at once or at a time; anything else ends it.
            if !ok || !matches!(next, Next::Now | Next::Wait { wake: Some(_) }) {
                next = Next::Finished;
                self.driver = None;
                self.caps = None;
            }
        }
        match self.next.as_mut() {
            Some(chained) => {
                let local = self.caps.as_ref().map(|c| *c[0].time());
                both(next, chained.step(local))
            }
            None => next,
        }
    }
}

/// Builds the checkpoint coordinator: an operator on every worker (timely builds the same
/// dataflow everywhere) that reads every operator's progress output, active on worker 0.
fn build_coordinator(cx: &mut CompileCx<'_>, committers: Vec<NodeCommitter>) {
    let mut builder = OperatorBuilder::new("Checkpoint coordinator".to_owned(), cx.scope);
    let unit = match serializer::<()>(&cx.config.serializer_config, "Checkpoint coordinator") {
        Ok(s) => Arc::new(s),
        Err(e) => {
            cx.job.fail(e);
            return;
        }
    };
    let mut handles = Vec::new();
    for (_, stream) in std::mem::take(&mut cx.progress) {
        let unit = Arc::clone(&unit);
        let pact = EdgePact::Exchange(Box::new(move |peers| {
            EdgeDistributor::new(Route::Rebalance { next: 0 }, unit, 0, 1, peers)
        }));
        handles.push(builder.new_input(stream, pact));
    }
    let active = cx.worker == 0;
    let job = Arc::clone(&cx.job);
    let coordinator = Coordinator::new(
        Arc::clone(&cx.graph),
        Arc::clone(&cx.job),
        cx.checkpoint_store()
            .zip(cx.config.checkpointing.as_ref().map(|c| c.retained)),
        cx.config.stop_with_savepoint.clone(),
        cx.start_epoch,
        committers,
    );
    let mut thread = if active {
        match CoordinatorThread::start(coordinator, Arc::clone(&job)) {
            Ok(t) => Some(t),
            Err(e) => {
                job.fail(e);
                None
            }
        }
    } else {
        None
    };
    builder.build(move |_caps| {
        move |frontiers: &[MutableAntichain<Time>]| {
            for handle in &mut handles {
                handle.for_each(|_, batch| drop(std::mem::take(batch)));
            }
            let Some(t) = thread.as_mut() else {
                return;
            };
            if job.failed() {
                thread = None;
                return;
            }
            let frontier = frontier_min(frontiers).map(epoch_of);
            t.progress(frontier);
            if frontier.is_none() {
                // The job ends once its checkpoints are completed and its output published.
                if let Some(t) = thread.take() {
                    t.join();
                }
            }
        }
    });
}

/// The streams built so far on this worker, by (node, port).
///
/// The one place where the runtime erases a type. Every other value keeps its type from the
/// API call to the driver (serializers, routers, operators, functions); a stream cannot: a
/// timely `Stream` borrows its worker's scope (lifetime `'s`) and shares its pushers through
/// `Rc`, so it can be neither `'static` (for `Any`) nor `Send` (to sit in the shared plan
/// until a consumer on the same worker takes it), and a graph in which two consumers both
/// read the same two producers needs each producer's stream after the builder that made it
/// has returned. So the table keeps each stream behind a trait object with its type's id and
/// gives it back only for that type.
///
/// The typed designs tried instead, and why each fails:
/// - *Producers hand their stream to typed consumers* (each consumer's builder registered
///   with its producer's at plan time as a `dyn Consumer<T>`, called with the stream once the
///   producer is built): a consumer with several inputs (a union, the tagged inputs of a
///   two-input operator) gets them one at a time and must hold the first ones until the last
///   arrives, per worker; that holding place is again keyed by node and typed by the
///   consumer's input, which is the table.
/// - *Consumers pull their inputs, building producers on demand*: a producer read by two
///   consumers would be built twice, unless its stream is memoized per worker, which is the
///   table; consumers cannot build each other, since a producer's other consumers may need
///   inputs that are not built yet.
/// - *Per-worker typed cells created at plan time* (an `Arc` shared by producer and consumer
///   builders): the plan is shared by every worker thread, so a cell must be `Sync`, and a
///   timely stream (its `Rc` pushers, its scope borrow) cannot be stored in one.
/// - *Storing the stream's `'static` parts* (its source and pusher registry) as `Any` and
///   rebuilding it: timely 0.32 gives no access to a built stream's pusher registry.
/// - *Every node with one input*: unions and two-input operators need several inputs, each
///   with its own exchange; merging them into one stream first needs all of them at once.
///
/// What would remove it: a runtime-independent representation of every edge (a homogeneous
/// record type, as Materialize renders rows) or per-edge serialization, both of which cost
/// what the typed edges exist to avoid.
mod table {
    use std::any::TypeId;
    use std::collections::HashMap;

    use timely::dataflow::Stream;

    use crate::job::Time;
    use crate::operator::element::Batch;
    use crate::types::Data;

    trait Erased {
        fn ptr(&self) -> *const ();
    }

    impl<T: Data> Erased for Stream<'_, Time, Batch<T>> {
        fn ptr(&self) -> *const () {
            (self as *const Self).cast()
        }
    }

    struct Entry<'s> {
        type_id: TypeId,
        stream: Box<dyn Erased + 's>,
    }

    #[derive(Default)]
    pub(super) struct StreamTable<'s> {
        streams: HashMap<(usize, usize), Entry<'s>>,
    }

    impl<'s> StreamTable<'s> {
        pub(super) fn insert<T: Data>(
            &mut self,
            node: usize,
            port: usize,
            stream: Stream<'s, Time, Batch<T>>,
        ) {
            self.streams.insert(
                (node, port),
                Entry {
                    type_id: TypeId::of::<T>(),
                    stream: Box::new(stream),
                },
            );
        }

        /// The stream of `(node, port)` if it carries `T`.
        pub(super) fn get<T: Data>(
            &self,
            node: usize,
            port: usize,
        ) -> Option<Stream<'s, Time, Batch<T>>> {
            let entry = self.streams.get(&(node, port))?;
            if entry.type_id != TypeId::of::<T>() {
                return None;
            }
            // SAFETY: `insert::<T>` boxed a `Stream<'s, Time, Batch<T>>` under this type id
            // (checked just above; `'s` is the table's own lifetime), so the pointer is to a
            // live value of exactly that type, borrowed here only for the clone.
            #[allow(unsafe_code)]
            let stream = unsafe { &*entry.stream.ptr().cast::<Stream<'s, Time, Batch<T>>>() };
            Some(stream.clone())
        }
    }
}
