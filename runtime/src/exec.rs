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
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use timely::dataflow::operators::generic::builder_rc::OperatorBuilder;
use timely::dataflow::operators::Capability;
use timely::dataflow::{Scope, Stream};
use timely::progress::frontier::MutableAntichain;
use timely::{CommunicationConfig, WorkerConfig};
use typeinfo::{DataInputView, DataOutputView};

use crate::channel::{
    register_wire_serializer, sender_id, Batch, EdgeDistributor, EdgePact, Epoch, Msg, Route,
    RouterFactory,
};
use crate::checkpoint::{
    self, checkpoint_dir, kstate_path, operator_key, ostate_path, Metadata, OperatorPart, Restore,
};
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
    /// The directories of file sinks (published by the checkpoint coordinator).
    pub(crate) sink_dirs: Mutex<Vec<PathBuf>>,
    /// What restores migrated (state names with the part), per operator.
    pub(crate) migrations: Mutex<Vec<String>>,
    /// A savepoint asked for while the job runs.
    pub(crate) savepoint: Mutex<SavepointRequest>,
}

/// A savepoint asked for with [`JobClient::trigger_savepoint`](crate::JobClient::trigger_savepoint).
#[derive(Debug, Default)]
pub(crate) struct SavepointRequest {
    /// Increases with every request; sources remember the last one they acted on.
    pub(crate) id: u64,
    /// Where the savepoint goes (`None` once answered).
    pub(crate) dir: Option<PathBuf>,
    /// The highest epoch a source closed for the request: any completed checkpoint at or
    /// after it holds everything before the request.
    pub(crate) after_epoch: Option<Epoch>,
    /// The answer.
    pub(crate) result: Option<std::result::Result<PathBuf, String>>,
}

impl JobShared {
    pub(crate) fn new() -> Self {
        JobShared {
            failed: AtomicBool::new(false),
            error: Mutex::new(None),
            metrics: Mutex::new(BTreeMap::new()),
            sink_dirs: Mutex::new(Vec::new()),
            migrations: Mutex::new(Vec::new()),
            savepoint: Mutex::new(SavepointRequest::default()),
        }
    }

    /// Records a file sink's directory (once).
    pub(crate) fn add_sink_dir(&self, dir: &Path) {
        let mut dirs = self.sink_dirs.lock().unwrap_or_else(|p| p.into_inner());
        if !dirs.iter().any(|d| d == dir) {
            dirs.push(dir.to_owned());
        }
    }

    /// Records what a restore migrated.
    pub(crate) fn migrated(&self, what: String) {
        self.migrations
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(what);
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

    pub(crate) fn request(&self) -> std::sync::MutexGuard<'_, SavepointRequest> {
        self.savepoint.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Adds `value` to the counter `name`.
    pub(crate) fn count(&self, name: &str, value: u64) {
        *self
            .metrics
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(name.to_owned())
            .or_default() += value;
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
        ErasedStream {
            type_id: TypeId::of::<T>(),
            stream: Box::new(stream),
        }
    }

    fn get<T: Data>(&self) -> Option<Stream<'s, Epoch, Batch<T>>> {
        if self.type_id != TypeId::of::<T>() {
            return None;
        }
        // SAFETY: `stream` was boxed by `new::<T>` from a `Stream<'s, Epoch, Batch<T>>` (the
        // type id of `T` matches, and `'s` is this struct's own lifetime), so the pointer is
        // to a live value of exactly that type, borrowed here for the duration of the clone.
        // The one unsafe block of the runtime; the redesign of issue 11 (typed builders)
        // removes it, and with it this allow.
        #[allow(unsafe_code)]
        let stream = unsafe { &*self.stream.ptr().cast::<Stream<'s, Epoch, Batch<T>>>() };
        Some(stream.clone())
    }
}

/// What building the graph on one worker needs.
pub(crate) struct BuildCtx<'s> {
    scope: Scope<'s, Epoch>,
    worker: usize,
    config: ExecutionConfig,
    max_parallelism: u32,
    state_root: PathBuf,
    job: Arc<JobShared>,
    graph: Arc<StreamGraph>,
    streams: HashMap<(usize, usize), ErasedStream<'s>>,
    /// Every operator's progress output, for the checkpoint coordinator.
    progress: Vec<Stream<'s, Epoch, Batch<()>>>,
    /// The first epoch of this run (the restored checkpoint's plus one).
    start_epoch: Epoch,
    restore: Option<Arc<Restore>>,
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
            restore: self.restore.clone(),
            key: operator_key(node.uid.as_deref(), node.id),
        }
    }

    /// The stream and pact of an input edge.
    fn input<I: Data>(
        &self,
        edge: &StreamEdge,
    ) -> Result<(Stream<'s, Epoch, Batch<I>>, EdgePact<I>)> {
        let stream = self
            .streams
            .get(&(edge.source, edge.source_port))
            .and_then(ErasedStream::get::<I>)
            .ok_or_else(|| {
                Error::Graph(format!(
                    "edge {} -> {} does not carry {}",
                    edge.source,
                    edge.target,
                    std::any::type_name::<I>()
                ))
            })?;
        let targets = self.graph.nodes[edge.target].parallelism as usize;
        let own = self.worker;
        let route =
            match edge.partitioner {
                PartitionerKind::Forward => return Ok((stream, EdgePact::Pipeline)),
                PartitionerKind::Rebalance => Route::Rebalance {
                    next: own % targets,
                },
                PartitionerKind::Broadcast => Route::Broadcast,
                PartitionerKind::Hash => {
                    let factory = edge
                        .router
                        .as_ref()
                        .and_then(|r| r.downcast_ref::<RouterFactory<I>>())
                        .ok_or_else(|| {
                            Error::Graph(format!(
                                "hash edge {} -> {} has no router",
                                edge.source, edge.target
                            ))
                        })?;
                    let node = &self.graph.nodes[edge.target];
                    Route::Hash(factory(targets as u32, self.max_parallelism).map_err(
                        |source| Error::Type {
                            operator: node.name.clone(),
                            source,
                        },
                    )?)
                }
            };
        Ok((
            stream,
            EdgePact::Exchange(Box::new(move |peers| {
                EdgeDistributor::new(route, own, targets, peers)
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

    fn register_output<T: Data>(
        &mut self,
        node: &StreamNode,
        port: usize,
        stream: Stream<'s, Epoch, Batch<T>>,
    ) {
        if port == 0 {
            if let Some(serializer) = node
                .serializer
                .as_ref()
                .and_then(|s| s.downcast_ref::<T::Serializer>())
            {
                register_wire_serializer::<T>(serializer.clone());
            }
        }
        self.streams
            .insert((node.id, port), ErasedStream::new(stream));
    }
}

/// The minimum of the last watermark of each upstream subtask.
pub(crate) struct WatermarkTracker {
    slots: HashMap<u32, usize>,
    marks: Vec<i64>,
    pub(crate) current: i64,
}

impl WatermarkTracker {
    pub(crate) fn new(senders: &[u32]) -> Self {
        WatermarkTracker {
            slots: senders.iter().enumerate().map(|(i, s)| (*s, i)).collect(),
            marks: vec![i64::MIN; senders.len()],
            current: i64::MIN,
        }
    }

    /// Starts from a restored watermark (for every input subtask).
    pub(crate) fn restore(&mut self, watermark: i64) {
        self.marks.iter_mut().for_each(|m| *m = watermark);
        self.current = watermark;
    }

    /// Records a watermark of `from`; returns the operator's new watermark if it advanced.
    pub(crate) fn update(&mut self, from: u32, watermark: i64) -> Result<Option<i64>> {
        let slot = *self
            .slots
            .get(&from)
            .ok_or_else(|| Error::Corrupt(format!("watermark from unknown sender {from:#x}")))?;
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
            job.fail(Error::Function {
                operator: operator.to_owned(),
                message: panic_message(payload),
            });
            false
        }
    }
}

/// The lowest epoch any input may still deliver (`None` once every input is exhausted).
fn frontier_min(frontiers: &[MutableAntichain<Epoch>]) -> Option<Epoch> {
    frontiers
        .iter()
        .filter_map(|f| f.frontier().iter().copied().min())
        .min()
}

/// Builds a node with a one-input operator: main output of `O` (port 0), late-data side
/// output of `I` (port 1), and a progress output (no data; its capability tells the
/// checkpoint coordinator which epochs the operator has finished).
///
/// Input is processed one epoch at a time: batches of a later epoch wait in `stash` until
/// every input has passed the earlier ones (aligned checkpoints). When the input frontier
/// moves past epoch `e`, the operator writes its part of checkpoint `e`.
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
    let (_progress_out, progress_stream) = builder.new_output::<Batch<()>>();
    ctx.register_output(node, 0, main_stream);
    ctx.register_output(node, 1, side_stream);
    ctx.progress.push(progress_stream);

    let setup = ctx.setup(node);
    let job = Arc::clone(&ctx.job);
    let name = node.name.clone();
    let active = ctx.worker < node.parallelism as usize;
    let mut tracker = WatermarkTracker::new(&ctx.senders(inputs));
    let activator = ctx.scope.activator_for(info.address.clone());
    let from = sender_id(node.id, ctx.worker);
    let checkpoints = ctx.config.checkpointing.as_ref().map(|c| c.dir.clone());
    let stopping = ctx.config.stop_with_savepoint.is_some();
    let start = ctx.start_epoch;
    let mut op: Option<Box<dyn Operator<I, O>>> = None;
    if active && !job.failed() {
        let mut made = None;
        if guarded(&job, &name, || {
            let mut operator = make(&setup)?;
            if let Some(restore) = &setup.restore {
                let parts = restore.parts(&setup.key)?;
                if let Some(w) = parts.iter().map(|p| p.watermark).min() {
                    tracker.restore(w);
                }
                operator.restore(&restore.keyed_files(&setup.key), &parts)?;
            }
            made = Some(operator);
            Ok(())
        }) {
            op = made;
        }
    }

    builder.build(move |caps| {
        let mut caps = op.is_some().then(|| {
            let mut caps = caps;
            caps.iter_mut().for_each(|c| c.downgrade(&start));
            caps
        });
        let mut current = start;
        let mut stash: BTreeMap<Epoch, Vec<Batch<I>>> = BTreeMap::new();
        let mut outputs: Outputs<O, I> = Outputs {
            main: Output::new(from),
            side: Output::new(from),
        };
        move |frontiers: &[MutableAntichain<Epoch>]| {
            if job.failed() {
                op = None;
                caps = None;
            }
            let (Some(operator), Some(cap)) = (op.as_mut(), caps.as_mut()) else {
                for handle in &mut handles {
                    handle.for_each(|_, batch| batch.msgs.clear());
                }
                return;
            };
            for handle in &mut handles {
                handle.for_each(|time, batch| {
                    // Our messages carry one epoch each (the least of their stamp).
                    let epoch = time.least().copied().unwrap_or(current);
                    stash.entry(epoch).or_default().push(std::mem::take(batch));
                });
            }
            let frontier = frontier_min(frontiers);
            let mut main = main_out.activate();
            let mut side = side_out.activate();
            let mut finished = false;
            let ok = guarded(&job, &name, || {
                // Every batch of a finished epoch, in epoch order; then, if the frontier moved,
                // this subtask's part of the checkpoint of the last finished epoch; then the
                // batches of the current epoch (which belong to the next checkpoint).
                drain(
                    &mut stash,
                    frontier,
                    operator.as_mut(),
                    &mut tracker,
                    &mut outputs,
                    cap,
                    &mut main,
                    &mut side,
                )?;
                if let Some(f) = frontier.filter(|f| *f > current) {
                    if let Some(root) = &checkpoints {
                        snapshot(operator.as_mut(), root, &setup, f - 1, tracker.current)?;
                    }
                    current = f;
                    cap.iter_mut().for_each(|c| c.downgrade(&f));
                }
                drain(
                    &mut stash,
                    frontier.map(|f| f + 1),
                    operator.as_mut(),
                    &mut tracker,
                    &mut outputs,
                    cap,
                    &mut main,
                    &mut side,
                )?;
                let now_cap = (cap[0].delayed(&current), cap[1].delayed(&current));
                operator.begin_epoch(current);
                if let Some(due) = operator.next_processing_time() {
                    let now = now_ms();
                    if due <= now {
                        operator.processing_time(now, &mut outputs)?;
                    }
                    if let Some(next) = operator.next_processing_time() {
                        activator
                            .activate_after(Duration::from_millis((next - now_ms()).max(1) as u64));
                    }
                }
                operator.end_of_activation(&mut outputs)?;
                ship(&mut outputs, &mut main, &now_cap.0, &mut side, &now_cap.1);
                if frontier.is_none() {
                    // Every input is exhausted: the end of the job, or a stop with a savepoint
                    // (whose state was written with the last checkpoint, and after which
                    // nothing fires).
                    if !stopping {
                        operator.finish(&mut outputs)?;
                    }
                    ship(&mut outputs, &mut main, &now_cap.0, &mut side, &now_cap.1);
                    finished = true;
                }
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

/// Processes the stashed batches of every epoch below `below` (all with `None`), in order.
#[allow(clippy::too_many_arguments)]
fn drain<I: Data, O: Data>(
    stash: &mut BTreeMap<Epoch, Vec<Batch<I>>>,
    below: Option<Epoch>,
    operator: &mut dyn Operator<I, O>,
    tracker: &mut WatermarkTracker,
    outputs: &mut Outputs<O, I>,
    cap: &[Capability<Epoch>],
    main: &mut OutputSession<'_, O>,
    side: &mut OutputSession<'_, I>,
) -> Result<()> {
    while let Some((&t, _)) = stash.first_key_value() {
        if below.is_some_and(|b| t >= b) {
            break;
        }
        let Some(batches) = stash.remove(&t) else {
            break;
        };
        let (main_cap, side_cap) = (cap[0].delayed(&t), cap[1].delayed(&t));
        operator.begin_epoch(t);
        for mut batch in batches {
            if let Some((msg, _)) = batch.corrupt.take() {
                return Err(Error::Corrupt(msg));
            }
            for msg in batch.msgs.drain(..) {
                match msg {
                    Msg::Record { ts, value } => operator.process(ts, value, outputs)?,
                    Msg::Watermark { from, watermark } => {
                        if let Some(w) = tracker.update(from, watermark)? {
                            operator.watermark(w, outputs)?;
                        }
                    }
                }
            }
            ship(outputs, main, &main_cap, side, &side_cap);
        }
    }
    Ok(())
}

type OutputSession<'a, T> = timely::dataflow::channels::pushers::progress::ProgressSession<
    'a,
    Epoch,
    Batch<T>,
    timely::dataflow::channels::pushers::Counter<
        Epoch,
        timely::dataflow::channels::pushers::Tee<Epoch, Batch<T>>,
    >,
>;

/// Ships what an operator emitted, at the epoch of `main_cap` / `side_cap`.
fn ship<O: Data, I: Data>(
    outputs: &mut Outputs<O, I>,
    main: &mut OutputSession<'_, O>,
    main_cap: &Capability<Epoch>,
    side: &mut OutputSession<'_, I>,
    side_cap: &Capability<Epoch>,
) {
    if !outputs.main.msgs.is_empty() {
        main.give(
            main_cap,
            &mut Batch::of(std::mem::take(&mut outputs.main.msgs)),
        );
    }
    if !outputs.side.msgs.is_empty() {
        side.give(
            side_cap,
            &mut Batch::of(std::mem::take(&mut outputs.side.msgs)),
        );
    }
}

/// Writes one operator subtask's part of checkpoint `epoch`.
fn snapshot<I: 'static, O: 'static>(
    operator: &mut dyn Operator<I, O>,
    root: &Path,
    setup: &OperatorSetup,
    epoch: Epoch,
    watermark: i64,
) -> Result<()> {
    let dir = checkpoint_dir(root, epoch).join(&setup.key);
    std::fs::create_dir_all(&dir).map_err(|source| Error::Io {
        path: dir.clone(),
        source,
    })?;
    let data = operator.snapshot(epoch, &kstate_path(&dir, setup.subtask))?;
    if let Some(delay) = checkpoint_write_delay() {
        // Fault injection: widen the window in which a crash leaves a half-written checkpoint.
        std::thread::sleep(delay);
    }
    OperatorPart { watermark, data }.write(&dir, setup.subtask)
}

/// `TYPEINFO_CHECKPOINT_WRITE_DELAY_MS`: a pause between an operator's keyed state and its
/// part marker when it writes a checkpoint. A fault-injection aid for crash tests (a kill then
/// often lands while a checkpoint is half written); unset in production.
fn checkpoint_write_delay() -> Option<Duration> {
    static DELAY: std::sync::OnceLock<Option<Duration>> = std::sync::OnceLock::new();
    *DELAY.get_or_init(|| {
        std::env::var("TYPEINFO_CHECKPOINT_WRITE_DELAY_MS")
            .ok()
            .and_then(|v| v.parse().ok())
            .map(Duration::from_millis)
    })
}

/// Builds a source node: its subtasks run `make`'s function until it is exhausted, then send
/// the maximal watermark. With checkpoints, every `interval` the source records its
/// position and moves to the next epoch; with a stop-with-savepoint bound, it stops emitting
/// after that many records, keeps moving through (empty) epochs until a checkpoint in which
/// every source has stopped is the savepoint, and then ends without a final watermark.
pub(crate) fn build_source<'s, O: Data>(
    ctx: &mut BuildCtx<'s>,
    node: &StreamNode,
    make: impl FnOnce(&OperatorSetup) -> Result<Box<dyn SourceFunction<O>>>,
) -> Result<()> {
    let mut builder = OperatorBuilder::new(node.name.clone(), ctx.scope.clone());
    let info = builder.operator_info();
    let (mut out, stream) = builder.new_output::<Batch<O>>();
    let (_progress_out, progress_stream) = builder.new_output::<Batch<()>>();
    ctx.register_output(node, 0, stream);
    ctx.progress.push(progress_stream);
    let setup = ctx.setup(node);
    let job = Arc::clone(&ctx.job);
    let name = node.name.clone();
    let activator = ctx.scope.activator_for(info.address.clone());
    let checkpoints = ctx.config.checkpointing.clone();
    let stop = ctx.config.stop_with_savepoint.clone();
    let start = ctx.start_epoch;
    let mut source: Option<Box<dyn SourceFunction<O>>> = None;
    let mut emitted: u64 = 0;
    if ctx.worker < node.parallelism as usize && !job.failed() {
        let mut made = None;
        if guarded(&job, &name, || {
            let mut function = make(&setup)?;
            if let Some(restore) = &setup.restore {
                let parts = restore.parts(&setup.key)?;
                if let Some(part) = parts.get(setup.subtask) {
                    let (count, position) = decode_source_part(&part.data)?;
                    emitted = count;
                    function.seek(position)?;
                }
            }
            made = Some(function);
            Ok(())
        }) {
            source = made;
        }
    }
    let mut output = Output::new(sender_id(node.id, ctx.worker));
    builder.build(move |caps| {
        let mut cap = if source.is_some() {
            let mut caps = caps;
            caps.iter_mut().for_each(|c| c.downgrade(&start));
            Some(caps)
        } else {
            None
        };
        let mut next_checkpoint = Instant::now()
            + checkpoints
                .as_ref()
                .map_or(Duration::MAX / 4, |c| c.interval);
        let mut stopped_at: Option<Epoch> = None;
        let mut seen_request = 0;
        activator.activate();
        move |_frontiers: &[MutableAntichain<Epoch>]| {
            if job.failed() {
                source = None;
                cap = None;
            }
            let (Some(function), Some(c)) = (source.as_mut(), cap.as_mut()) else {
                return;
            };
            let epoch = *c[0].time();
            let stopped = stop.as_ref().is_some_and(|s| emitted >= s.after_records);
            let mut more = true;
            let ok = guarded(&job, &name, || {
                if !stopped {
                    let mut session = out.activate();
                    // A bounded slice of work per activation (at most 8 batches, or about a
                    // millisecond: a source may block), in small calls, shipped in batches of
                    // up to 1024 as it is made, so that the operators sharing this worker run
                    // in between.
                    let began = Instant::now();
                    let mut made = 0;
                    loop {
                        let budget = stop
                            .as_ref()
                            .map_or(64, |s| (s.after_records - emitted).min(64) as usize);
                        let before = output.msgs.len();
                        more = function.run(&mut output, budget)?;
                        let n = output.msgs.len() - before;
                        emitted += n as u64;
                        made += n;
                        if !more {
                            output.watermark(i64::MAX);
                        }
                        let stop_now =
                            !more || stop.as_ref().is_some_and(|s| emitted >= s.after_records);
                        let out_of_time =
                            made >= 8 * 1024 || began.elapsed() > Duration::from_millis(1);
                        if output.msgs.len() >= 1024 || stop_now || out_of_time {
                            session.give(&c[0], &mut Batch::of(std::mem::take(&mut output.msgs)));
                        }
                        if stop_now || out_of_time {
                            break;
                        }
                    }
                }
                let stopped = stop.as_ref().is_some_and(|s| emitted >= s.after_records);
                if let Some(checkpoints) = &checkpoints {
                    // A savepoint asked for: close this epoch now.
                    let asked = {
                        let mut request = job.request();
                        if request.dir.is_some() && request.id > seen_request {
                            seen_request = request.id;
                            request.after_epoch =
                                Some(request.after_epoch.map_or(epoch, |e| e.max(epoch)));
                            true
                        } else {
                            false
                        }
                    };
                    if more
                        && (asked
                            || Instant::now() >= next_checkpoint
                            || (stopped && stopped_at.is_none()))
                    {
                        // The position after this epoch's records, then the next epoch.
                        let dir = checkpoint_dir(&checkpoints.dir, epoch).join(&setup.key);
                        let data = encode_source_part(emitted, &function.position(), stopped);
                        OperatorPart {
                            watermark: i64::MIN,
                            data,
                        }
                        .write(&dir, setup.subtask)?;
                        c.iter_mut().for_each(|c| c.downgrade(&(epoch + 1)));
                        next_checkpoint = Instant::now() + checkpoints.interval;
                        if stopped && stopped_at.is_none() {
                            stopped_at = Some(epoch);
                        }
                    }
                    if stopped {
                        if let Some(s) = &stop {
                            if s.dir.join("_metadata").is_file() {
                                // The savepoint is complete: end without a final watermark.
                                more = false;
                            }
                        }
                    }
                }
                Ok(())
            });
            if more && ok {
                if stopped {
                    activator.activate_after(Duration::from_millis(10));
                } else {
                    activator.activate();
                }
            } else {
                source = None;
                cap = None;
            }
        }
    });
    Ok(())
}

fn encode_source_part(emitted: u64, position: &[u8], stopped: bool) -> Vec<u8> {
    let mut out = DataOutputView::new();
    out.write_bool(stopped);
    out.write_u64(emitted);
    out.write_len_prefixed(position);
    out.into_inner()
}

/// The record count and position of a source part.
fn decode_source_part(data: &[u8]) -> Result<(u64, &[u8])> {
    let mut input = DataInputView::new(data);
    let corrupt = |e: typeinfo::Error| Error::Corrupt(format!("source position: {e}"));
    let _stopped = input.read_bool().map_err(corrupt)?;
    let emitted = input.read_u64().map_err(corrupt)?;
    let position = input.read_len_prefixed().map_err(corrupt)?;
    Ok((emitted, position))
}

/// Whether a source part says the source had stopped for a savepoint.
pub(crate) fn source_part_stopped(data: &[u8]) -> bool {
    data.first() == Some(&1)
}

/// Watches every operator's progress on worker 0: completes checkpoints (writes their
/// `_metadata` once every part is on disk), publishes file sinks' output up to each completed
/// checkpoint (and everything at the end of a job that ran to its end), copies the savepoint
/// of a stop-with-savepoint, and deletes old checkpoints.
fn build_coordinator<'s>(ctx: &mut BuildCtx<'s>) {
    let mut builder = OperatorBuilder::new("Checkpoint coordinator".to_owned(), ctx.scope.clone());
    let mut handles = Vec::new();
    for stream in std::mem::take(&mut ctx.progress) {
        let pact = EdgePact::Exchange(Box::new(move |peers| {
            EdgeDistributor::new(Route::Rebalance { next: 0 }, 0, 1, peers)
        }));
        handles.push(builder.new_input(stream, pact));
    }
    let active = ctx.worker == 0;
    let graph = Arc::clone(&ctx.graph);
    let job = Arc::clone(&ctx.job);
    let checkpoints = ctx.config.checkpointing.clone();
    let stop = ctx.config.stop_with_savepoint.clone();
    let mut last_completed: Option<Epoch> = ctx.start_epoch.checked_sub(1);
    let mut done = false;
    let mut saved = false;
    builder.build(move |_caps| {
        move |frontiers: &[MutableAntichain<Epoch>]| {
            for handle in &mut handles {
                handle.for_each(|_, batch| batch.msgs.clear());
            }
            if !active || done || job.failed() {
                return;
            }
            let frontier = frontier_min(frontiers);
            let result = (|| -> Result<()> {
                if let (Some(checkpoints), Some(f)) = (&checkpoints, frontier) {
                    if let Some(epoch) = f
                        .checked_sub(1)
                        .filter(|e| last_completed.is_none_or(|l| *e > l))
                    {
                        if complete_checkpoint(
                            &graph,
                            &checkpoints.dir,
                            epoch,
                            checkpoints.retained,
                        )? {
                            last_completed = Some(epoch);
                            // After the savepoint of a stop, nothing more is published: the job
                            // that restores the savepoint writes the rest.
                            if !saved {
                                publish_sinks(&job, Some(epoch))?;
                            }
                            if let Some(stop) = &stop {
                                saved = saved
                                    || save_if_stopped(&graph, &checkpoints.dir, epoch, &stop.dir)?;
                            }
                            let mut request = job.request();
                            if let (Some(dir), Some(after)) =
                                (request.dir.clone(), request.after_epoch)
                            {
                                if epoch >= after {
                                    let copied = checkpoint::copy_checkpoint(
                                        &checkpoint_dir(&checkpoints.dir, epoch),
                                        &dir,
                                    );
                                    request.result =
                                        Some(copied.map(|()| dir).map_err(|e| e.to_string()));
                                    request.dir = None;
                                    request.after_epoch = None;
                                }
                            }
                        }
                    }
                }
                if frontier.is_none() {
                    done = true;
                    if stop.is_none() {
                        publish_sinks(&job, None)?;
                    }
                }
                Ok(())
            })();
            if let Err(e) = result {
                job.fail(e.in_operator("Checkpoint coordinator"));
            }
        }
    });
}

/// Writes `_metadata` of checkpoint `epoch` if every part of every subtask is on disk;
/// deletes older checkpoints beyond `retained`, and incomplete older ones.
fn complete_checkpoint(
    graph: &StreamGraph,
    root: &Path,
    epoch: Epoch,
    retained: usize,
) -> Result<bool> {
    let chk = checkpoint_dir(root, epoch);
    for n in graph.nodes() {
        let dir = chk.join(operator_key(n.uid(), n.id()));
        if (0..n.parallelism() as usize).any(|s| !ostate_path(&dir, s).is_file()) {
            return Ok(false);
        }
    }
    Metadata::of(graph, epoch).write(&chk)?;
    let completed = checkpoint::completed(root);
    let keep_from = completed.len().saturating_sub(retained.max(1));
    for (e, path) in completed.iter().take(keep_from) {
        if *e < epoch {
            let _ = std::fs::remove_dir_all(path);
        }
    }
    if let Ok(entries) = std::fs::read_dir(root) {
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if let Some(e) = name
                .strip_prefix("chk-")
                .and_then(|n| n.parse::<u64>().ok())
            {
                if e < epoch && !entry.path().join("_metadata").is_file() {
                    let _ = std::fs::remove_dir_all(entry.path());
                }
            }
        }
    }
    Ok(true)
}

/// After completing `epoch`: if every source stopped in it, copies it to the savepoint and
/// returns `true`.
fn save_if_stopped(
    graph: &StreamGraph,
    root: &Path,
    epoch: Epoch,
    savepoint: &Path,
) -> Result<bool> {
    let chk = checkpoint_dir(root, epoch);
    for n in graph
        .nodes()
        .iter()
        .filter(|n| graph.inputs(n.id()).is_empty())
    {
        let dir = chk.join(operator_key(n.uid(), n.id()));
        for s in 0..n.parallelism() as usize {
            if !source_part_stopped(&OperatorPart::read(&ostate_path(&dir, s))?.data) {
                return Ok(false);
            }
        }
    }
    if !savepoint.join("_metadata").is_file() {
        checkpoint::copy_checkpoint(&chk, savepoint)?;
    }
    Ok(true)
}

/// Publishes the pending output files of every file sink up to `epoch` (all with `None`).
fn publish_sinks(job: &JobShared, epoch: Option<Epoch>) -> Result<()> {
    let dirs = job
        .sink_dirs
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    for dir in dirs {
        crate::sink::publish(&dir, epoch)?;
    }
    Ok(())
}

/// Runs `graph` on timely with `config`; returns this process's metrics and migrations.
pub(crate) fn run(
    job_name: &str,
    graph: Arc<StreamGraph>,
    config: ExecutionConfig,
    job: Arc<JobShared>,
) -> Result<(BTreeMap<String, u64>, Vec<String>)> {
    let workers = graph.workers() as usize;
    let communication = match &config.cluster {
        None if workers == 1 => Some(CommunicationConfig::Thread),
        None => Some(CommunicationConfig::Process(workers)),
        Some(_) => None,
    };
    let sources: Vec<usize> = graph
        .nodes()
        .iter()
        .filter(|n| graph.inputs(n.id()).is_empty())
        .map(|n| n.id())
        .collect();
    let restore = match &config.restore {
        Some(settings) => Some(Arc::new(Restore::check(settings, &graph, &sources)?)),
        None => None,
    };
    let start_epoch = restore.as_ref().map_or(0, |r| r.metadata.epoch + 1);
    if let Some(r) = &restore {
        for node in graph.nodes() {
            if let Some(dir) = node.factory.output_dir() {
                crate::sink::recover(dir, r.metadata.epoch)?;
            }
        }
    }
    if let Some(c) = &config.checkpointing {
        std::fs::create_dir_all(&c.dir).map_err(|source| Error::Io {
            path: c.dir.clone(),
            source,
        })?;
        // Parts of checkpoints that never completed (a crash while writing them) and any
        // checkpoint past the one restored from are not part of this run's history.
        for (epoch, path) in std::fs::read_dir(&c.dir)
            .map_err(|source| Error::Io {
                path: c.dir.clone(),
                source,
            })?
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                name.strip_prefix("chk-")
                    .and_then(|n| n.parse::<u64>().ok())
                    .map(|n| (n, e.path()))
            })
        {
            if epoch >= start_epoch || !path.join("_metadata").is_file() {
                if restore.as_ref().is_none_or(|r| r.dir != path) {
                    let _ = std::fs::remove_dir_all(&path);
                }
            }
        }
    }
    // RocksDB instances live under the configured directory, or a temporary one removed at
    // the end of the job.
    let (state_root, _temp) = match &config.state_backend {
        StateBackend::RocksDb { dir: Some(dir), .. } => (dir.join(sanitize(job_name)), None),
        StateBackend::RocksDb { dir: None, .. } => {
            let temp = tempfile::Builder::new()
                .prefix("typeinfo-job-")
                .tempdir()
                .map_err(|source| Error::Io {
                    path: std::env::temp_dir(),
                    source,
                })?;
            (temp.path().to_owned(), Some(temp))
        }
        StateBackend::Heap => (PathBuf::new(), None),
    };
    let shared = Arc::clone(&job);
    let max_parallelism = graph.max_parallelism;
    let (builders, others) = match (communication, &config.cluster) {
        (Some(c), _) => c.try_build().map_err(Error::Cluster)?,
        (None, Some(cluster)) => crate::cluster::connect(cluster, workers / cluster.hosts.len())?,
        (None, None) => unreachable!("a communication config or a cluster"),
    };
    let guards =
        timely::execute::execute_from(builders, others, WorkerConfig::default(), move |worker| {
            let index = worker.index();
            let graph = Arc::clone(&graph);
            let job = Arc::clone(&shared);
            let config = config.clone();
            let state_root = state_root.clone();
            let restore = restore.clone();
            worker.dataflow::<Epoch, _, _>(move |scope| {
                let mut ctx = BuildCtx {
                    scope,
                    worker: index,
                    config,
                    max_parallelism,
                    state_root,
                    job: Arc::clone(&job),
                    graph: Arc::clone(&graph),
                    streams: HashMap::new(),
                    progress: Vec::new(),
                    start_epoch,
                    restore: restore.clone(),
                };
                for node in &graph.nodes {
                    let inputs = graph.inputs(node.id);
                    if let Err(e) = node.factory.build(&mut ctx, node, &inputs) {
                        job.fail(e);
                    }
                }
                build_coordinator(&mut ctx);
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
        return Err(Error::Function {
            operator: "worker".into(),
            message,
        });
    }
    let metrics = std::mem::take(&mut *job.metrics.lock().unwrap_or_else(|p| p.into_inner()));
    let migrations = std::mem::take(&mut *job.migrations.lock().unwrap_or_else(|p| p.into_inner()));
    Ok((metrics, migrations))
}

fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}
