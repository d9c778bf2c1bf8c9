//! Compiling a stream graph onto timely dataflow, and the drivers that run operators.
//!
//! Every worker builds the whole graph (timely requires every worker to build the same
//! dataflow); a node with parallelism `p` runs its operator on workers `0..p` and leaves the
//! others idle. Each node is one timely operator whose inputs are the node's edges with their
//! pacts (see [`crate::channel`]). A driver reads each input batch, keeps the last watermark of
//! every upstream subtask, hands records and advanced watermarks to the operator, and ships its
//! output after every batch.

use std::any::TypeId;
use std::collections::{BTreeMap, HashMap};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use timely::dataflow::operators::generic::builder_rc::OperatorBuilder;
use timely::dataflow::{Scope, Stream};
use timely::progress::frontier::MutableAntichain;
use timely::{CommunicationConfig, WorkerConfig};

use crate::channel::{register_wire_serializer, sender_id, Batch, EdgeDistributor, EdgePact, Epoch, Msg, Route, RouterFactory};
use crate::env::{ExecutionConfig, StateBackend};
use crate::error::{Error, Result};
use crate::graph::{PartitionerKind, StreamEdge, StreamGraph, StreamNode};
use crate::operator::{now_ms, Operator, OperatorSetup, Output, Outputs, SourceFunction};
use crate::Data;

/// What the workers of one process share while a job runs.
pub(crate) struct JobShared {
    failed: AtomicBool,
    error: Mutex<Option<Error>>,
    metrics: Mutex<BTreeMap<String, u64>>,
}

impl JobShared {
    fn new() -> Self {
        JobShared { failed: AtomicBool::new(false), error: Mutex::new(None), metrics: Mutex::new(BTreeMap::new()) }
    }

    /// Records the job's first error; every operator stops at its next activation.
    pub(crate) fn fail(&self, error: Error) {
        let mut slot = self.error.lock().unwrap_or_else(|p| p.into_inner());
        if slot.is_none() {
            *slot = Some(error);
        }
        self.failed.store(true, Ordering::Release);
    }

    pub(crate) fn failed(&self) -> bool {
        self.failed.load(Ordering::Acquire)
    }

    /// Adds `value` to the counter `name`.
    pub(crate) fn count(&self, name: &str, value: u64) {
        *self.metrics.lock().unwrap_or_else(|p| p.into_inner()).entry(name.to_owned()).or_default() += value;
    }
}

/// A timely stream of a type known only at run time.
pub(crate) struct ErasedStream<'s> {
    type_id: TypeId,
    stream: Box<dyn ErasedInner + 's>,
}

trait ErasedInner {
    fn ptr(&self) -> *const ();
}

impl<'s, T: Data> ErasedInner for Stream<'s, Epoch, Batch<T>> {
    fn ptr(&self) -> *const () {
        (self as *const Self).cast()
    }
}

impl<'s> ErasedStream<'s> {
    fn new<T: Data>(stream: Stream<'s, Epoch, Batch<T>>) -> Self {
        ErasedStream { type_id: TypeId::of::<T>(), stream: Box::new(stream) }
    }

    fn get<T: Data>(&self) -> Option<Stream<'s, Epoch, Batch<T>>> {
        if self.type_id != TypeId::of::<T>() {
            return None;
        }
        // SAFETY: `stream` was boxed by `new::<T>` from a `Stream<'s, Epoch, Batch<T>>` (the
        // type id of `T` matches, and `'s` is this struct's own lifetime), so the pointer is
        // to a live value of exactly that type, borrowed here for the duration of the clone.
        let stream = unsafe { &*self.stream.ptr().cast::<Stream<'s, Epoch, Batch<T>>>() };
        Some(stream.clone())
    }
}

/// What building the graph on one worker needs.
pub(crate) struct BuildCtx<'s> {
    scope: Scope<'s, Epoch>,
    worker: usize,
    peers: usize,
    config: ExecutionConfig,
    max_parallelism: u32,
    state_root: PathBuf,
    job: Arc<JobShared>,
    graph: Arc<StreamGraph>,
    streams: HashMap<(usize, usize), ErasedStream<'s>>,
}

impl<'s> BuildCtx<'s> {
    fn setup(&self, node: &StreamNode) -> OperatorSetup {
        let dir = match &node.uid {
            Some(uid) => format!("op-{uid}"),
            None => format!("op-{}", node.id),
        };
        OperatorSetup {
            name: node.name.clone(),
            subtask: self.worker,
            parallelism: node.parallelism as usize,
            max_parallelism: self.max_parallelism,
            serializer_config: self.config.serializer_config.clone(),
            state_backend: self.config.state_backend.clone(),
            state_dir: self.state_root.join(dir),
            auto_watermark_interval_ms: self.config.auto_watermark_interval.as_millis() as i64,
            job: Arc::clone(&self.job),
        }
    }

    /// The stream and pact of an input edge.
    fn input<I: Data>(&self, edge: &StreamEdge) -> Result<(Stream<'s, Epoch, Batch<I>>, EdgePact<I>)> {
        let stream = self
            .streams
            .get(&(edge.source, edge.source_port))
            .and_then(ErasedStream::get::<I>)
            .ok_or_else(|| Error::Graph(format!("edge {} -> {} does not carry {}", edge.source, edge.target, std::any::type_name::<I>())))?;
        let targets = self.graph.nodes[edge.target].parallelism as usize;
        let own = self.worker;
        let route = match edge.partitioner {
            PartitionerKind::Forward => return Ok((stream, EdgePact::Pipeline)),
            PartitionerKind::Rebalance => Route::Rebalance { next: own % targets },
            PartitionerKind::Broadcast => Route::Broadcast,
            PartitionerKind::Hash => {
                let factory = edge
                    .router
                    .as_ref()
                    .and_then(|r| r.downcast_ref::<RouterFactory<I>>())
                    .ok_or_else(|| Error::Graph(format!("hash edge {} -> {} has no router", edge.source, edge.target)))?;
                let node = &self.graph.nodes[edge.target];
                Route::Hash(factory(targets as u32, self.max_parallelism).map_err(|source| Error::Type { operator: node.name.clone(), source })?)
            }
        };
        Ok((stream, EdgePact::Exchange(Box::new(move |peers| EdgeDistributor::new(route, own, targets, peers)))))
    }

    /// The ids of the upstream subtasks whose watermarks reach this worker through `edges`.
    fn senders(&self, edges: &[&StreamEdge]) -> Vec<u32> {
        let mut senders = Vec::new();
        for e in edges {
            match e.partitioner {
                PartitionerKind::Forward => senders.push(sender_id(e.source, self.worker)),
                _ => senders.extend((0..self.graph.nodes[e.source].parallelism as usize).map(|s| sender_id(e.source, s))),
            }
        }
        senders
    }

    fn register_output<T: Data>(&mut self, node: &StreamNode, port: usize, stream: Stream<'s, Epoch, Batch<T>>) {
        if port == 0 {
            if let Some(serializer) = node.serializer.as_ref().and_then(|s| s.downcast_ref::<T::Serializer>()) {
                register_wire_serializer::<T>(serializer.clone());
            }
        }
        self.streams.insert((node.id, port), ErasedStream::new(stream));
    }
}

/// The minimum of the last watermark of each upstream subtask.
pub(crate) struct WatermarkTracker {
    slots: HashMap<u32, usize>,
    marks: Vec<i64>,
    current: i64,
}

impl WatermarkTracker {
    pub(crate) fn new(senders: &[u32]) -> Self {
        WatermarkTracker {
            slots: senders.iter().enumerate().map(|(i, s)| (*s, i)).collect(),
            marks: vec![i64::MIN; senders.len()],
            current: i64::MIN,
        }
    }

    /// Records a watermark of `from`; returns the operator's new watermark if it advanced.
    pub(crate) fn update(&mut self, from: u32, watermark: i64) -> Result<Option<i64>> {
        let slot = *self.slots.get(&from).ok_or_else(|| Error::Corrupt(format!("watermark from unknown sender {from:#x}")))?;
        if watermark <= self.marks[slot] {
            return Ok(None);
        }
        self.marks[slot] = watermark;
        let min = self.marks.iter().copied().min().unwrap_or(i64::MIN);
        if min > self.current {
            self.current = min;
            return Ok(Some(min));
        }
        Ok(None)
    }
}

fn panic_message(payload: Box<dyn std::any::Any + Send>) -> String {
    match payload.downcast::<String>() {
        Ok(s) => format!("panicked: {s}"),
        Err(payload) => match payload.downcast::<&'static str>() {
            Ok(s) => format!("panicked: {s}"),
            Err(_) => "panicked".to_owned(),
        },
    }
}

/// Runs `body` catching panics; an error or panic fails the job, named after `operator`.
fn guarded(job: &JobShared, operator: &str, body: impl FnOnce() -> Result<()>) -> bool {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => true,
        Ok(Err(e)) => {
            job.fail(e.in_operator(operator));
            false
        }
        Err(payload) => {
            job.fail(Error::Function { operator: operator.to_owned(), message: panic_message(payload) });
            false
        }
    }
}

/// Builds a node with a one-input operator: main output of `O` (port 0), late-data side
/// output of `I` (port 1).
pub(crate) fn build_operator<'s, I: Data, O: Data>(
    ctx: &mut BuildCtx<'s>,
    node: &StreamNode,
    inputs: &[&StreamEdge],
    make: impl FnOnce(&OperatorSetup) -> Result<Box<dyn Operator<I, O>>>,
) -> Result<()> {
    let mut builder = OperatorBuilder::new(node.name.clone(), ctx.scope.clone());
    let info = builder.operator_info();
    let mut handles = Vec::with_capacity(inputs.len());
    for edge in inputs {
        let (stream, pact) = ctx.input::<I>(edge)?;
        handles.push(builder.new_input(stream, pact));
    }
    let (mut main_out, main_stream) = builder.new_output::<Batch<O>>();
    let (mut side_out, side_stream) = builder.new_output::<Batch<I>>();
    ctx.register_output(node, 0, main_stream);
    ctx.register_output(node, 1, side_stream);

    let setup = ctx.setup(node);
    let job = Arc::clone(&ctx.job);
    let name = node.name.clone();
    let active = ctx.worker < node.parallelism as usize;
    let mut tracker = WatermarkTracker::new(&ctx.senders(inputs));
    let activator = ctx.scope.activator_for(info.address.clone());
    let from = sender_id(node.id, ctx.worker);
    let mut op: Option<Box<dyn Operator<I, O>>> = None;
    if active {
        let mut made = None;
        if guarded(&job, &name, || {
            made = Some(make(&setup)?);
            Ok(())
        }) {
            op = made;
        }
    }

    builder.build(move |caps| {
        let mut caps = if op.is_some() { Some(caps) } else { None };
        let mut outputs: Outputs<O, I> = Outputs { main: Output::new(from), side: Output::new(from) };
        move |frontiers: &[MutableAntichain<Epoch>]| {
            if job.failed() {
                op = None;
                caps = None;
            }
            let (Some(operator), Some(cap)) = (op.as_mut(), caps.as_ref()) else {
                for handle in &mut handles {
                    handle.for_each(|_, batch| batch.msgs.clear());
                }
                return;
            };
            let (main_cap, side_cap) = (&cap[0], &cap[1]);
            let mut main = main_out.activate();
            let mut side = side_out.activate();
            let mut finished = false;
            let ok = guarded(&job, &name, || {
                let mut ship = |outputs: &mut Outputs<O, I>| {
                    if !outputs.main.msgs.is_empty() {
                        let mut b = Batch { msgs: std::mem::take(&mut outputs.main.msgs), corrupt: None };
                        main.give(main_cap, &mut b);
                    }
                    if !outputs.side.msgs.is_empty() {
                        let mut b = Batch { msgs: std::mem::take(&mut outputs.side.msgs), corrupt: None };
                        side.give(side_cap, &mut b);
                    }
                };
                for handle in &mut handles {
                    let mut result = Ok(());
                    handle.for_each(|_, batch| {
                        if result.is_err() {
                            batch.msgs.clear();
                            return;
                        }
                        result = (|| {
                            if let Some((msg, _)) = batch.corrupt.take() {
                                return Err(Error::Corrupt(msg));
                            }
                            for msg in batch.msgs.drain(..) {
                                match msg {
                                    Msg::Record { ts, value } => operator.process(ts, value, &mut outputs)?,
                                    Msg::Watermark { from, watermark } => {
                                        if let Some(w) = tracker.update(from, watermark)? {
                                            operator.watermark(w, &mut outputs)?;
                                        }
                                    }
                                }
                            }
                            Ok(())
                        })();
                        ship(&mut outputs);
                    });
                    result?;
                }
                if let Some(due) = operator.next_processing_time() {
                    let now = now_ms();
                    if due <= now {
                        operator.processing_time(now, &mut outputs)?;
                    }
                    if let Some(next) = operator.next_processing_time() {
                        activator.activate_after(Duration::from_millis((next - now_ms()).max(1) as u64));
                    }
                }
                operator.end_of_activation(&mut outputs)?;
                if frontiers.iter().all(|f| f.is_empty()) {
                    operator.finish(&mut outputs)?;
                    finished = true;
                }
                ship(&mut outputs);
                Ok(())
            });
            drop(main);
            drop(side);
            if finished || !ok {
                op = None;
                caps = None;
            }
        }
    });
    Ok(())
}

/// Builds a source node: its subtasks run `make`'s function until it is exhausted, then send
/// the maximal watermark.
pub(crate) fn build_source<'s, O: Data>(
    ctx: &mut BuildCtx<'s>,
    node: &StreamNode,
    make: impl FnOnce(&OperatorSetup) -> Result<Box<dyn SourceFunction<O>>>,
) -> Result<()> {
    let mut builder = OperatorBuilder::new(node.name.clone(), ctx.scope.clone());
    let info = builder.operator_info();
    let (mut out, stream) = builder.new_output::<Batch<O>>();
    ctx.register_output(node, 0, stream);
    let setup = ctx.setup(node);
    let job = Arc::clone(&ctx.job);
    let name = node.name.clone();
    let activator = ctx.scope.activator_for(info.address.clone());
    let mut source: Option<Box<dyn SourceFunction<O>>> = None;
    if ctx.worker < node.parallelism as usize {
        let mut made = None;
        if guarded(&job, &name, || {
            made = Some(make(&setup)?);
            Ok(())
        }) {
            source = made;
        }
    }
    let mut output = Output::new(sender_id(node.id, ctx.worker));
    builder.build(move |caps| {
        let mut cap = if source.is_some() { caps.into_iter().next() } else { None };
        // Schedule the first run.
        activator.activate();
        move |_frontiers: &[MutableAntichain<Epoch>]| {
            if job.failed() {
                source = None;
                cap = None;
            }
            let (Some(function), Some(c)) = (source.as_mut(), cap.as_ref()) else { return };
            let mut session = out.activate();
            let mut more = true;
            let mut ok = true;
            // A bounded slice of work per activation, shipped in batches as it is made.
            for _ in 0..8 {
                ok = guarded(&job, &name, || {
                    more = function.run(&mut output, 1024)?;
                    if !more {
                        output.watermark(i64::MAX);
                    }
                    Ok(())
                });
                let mut b = Batch { msgs: std::mem::take(&mut output.msgs), corrupt: None };
                session.give(c, &mut b);
                if !more || !ok {
                    break;
                }
            }
            drop(session);
            if more && ok {
                activator.activate();
            } else {
                source = None;
                cap = None;
            }
        }
    });
    Ok(())
}

/// Runs `graph` on timely with `config`; returns this process's metrics.
pub(crate) fn run(job_name: &str, graph: Arc<StreamGraph>, config: ExecutionConfig) -> Result<BTreeMap<String, u64>> {
    let workers = graph.workers() as usize;
    let communication = match &config.cluster {
        None if workers == 1 => Some(CommunicationConfig::Thread),
        None => Some(CommunicationConfig::Process(workers)),
        Some(_) => None,
    };
    // RocksDB instances live under the configured directory, or a temporary one removed at
    // the end of the job.
    let (state_root, _temp) = match &config.state_backend {
        StateBackend::RocksDb { dir: Some(dir), .. } => (dir.join(sanitize(job_name)), None),
        StateBackend::RocksDb { dir: None, .. } => {
            let temp = tempfile::Builder::new()
                .prefix("typeinfo-job-")
                .tempdir()
                .map_err(|source| Error::Io { path: std::env::temp_dir(), source })?;
            (temp.path().to_owned(), Some(temp))
        }
        StateBackend::Heap => (PathBuf::new(), None),
    };
    let job = Arc::new(JobShared::new());
    let shared = Arc::clone(&job);
    let max_parallelism = graph.max_parallelism;
    let (builders, others) = match (communication, &config.cluster) {
        (Some(c), _) => c.try_build().map_err(Error::Cluster)?,
        (None, Some(cluster)) => crate::cluster::connect(cluster, workers / cluster.hosts.len())?,
        (None, None) => unreachable!("a communication config or a cluster"),
    };
    let guards = timely::execute::execute_from(builders, others, WorkerConfig::default(), move |worker| {
        let (index, peers) = (worker.index(), worker.peers());
        let graph = Arc::clone(&graph);
        let job = Arc::clone(&shared);
        let config = config.clone();
        let state_root = state_root.clone();
        worker.dataflow::<Epoch, _, _>(move |scope| {
            let mut ctx = BuildCtx {
                scope,
                worker: index,
                peers,
                config,
                max_parallelism,
                state_root,
                job: Arc::clone(&job),
                graph: Arc::clone(&graph),
                streams: HashMap::new(),
            };
            for node in &graph.nodes {
                let inputs = graph.inputs(node.id);
                if let Err(e) = node.factory.build(&mut ctx, node, &inputs) {
                    job.fail(e);
                }
            }
            let _ = ctx.peers;
        });
    })
    .map_err(Error::Cluster)?;
    let mut panicked = None;
    for result in guards.join() {
        if let Err(message) = result {
            panicked.get_or_insert(message);
        }
    }
    if let Some(e) = job.error.lock().unwrap_or_else(|p| p.into_inner()).take() {
        return Err(e);
    }
    if let Some(message) = panicked {
        return Err(Error::Function { operator: "worker".into(), message });
    }
    let metrics = std::mem::take(&mut *job.metrics.lock().unwrap_or_else(|p| p.into_inner()));
    Ok(metrics)
}

fn sanitize(name: &str) -> String {
    name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' }).collect()
}

