//! The execution environment: configuration, the transformation list, and `execute`.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use typeinfo::SerializerConfig;

use crate::api::handles::Builders;
use crate::api::handles::DataStream;
use crate::api::handles::EnvState;
use crate::api::handles::StreamExecutionEnvironment;
use crate::api::node::NodeSpec;
use crate::config::{
    CheckpointConfig, Cluster, ExecutionConfig, RestartStrategy, RestoreSettings, RuntimeMode,
    StateBackend, StopWithSavepoint,
};
use crate::error::{Error, Result};
use crate::exec::compile::{ChainSlot, NodeBuilder, SourceBuilder};
use crate::job::{JobShared, JobStatus};
use crate::metrics::{HistogramStatistics, Metrics};
use crate::operator::contract::OperatorSetup;
use crate::plan::{self, NodeKind, OutputType, StreamGraph, Transformation};
use crate::types::Data;
use crate::user::source::{
    split_source, Boundedness, CollectionSource, GeneratorSource, IterSource, SequenceSource,
    Source, TextFileSource,
};
use crate::user::watermark::WatermarkStrategy;

/// What a finished job reports.
#[derive(Debug, Clone)]
pub struct JobResult {
    /// Wall-clock time from the start of execution to the end.
    pub elapsed: Duration,
    /// Counters of this process's operators, such as `<operator>.numLateRecordsDropped`
    /// (see [`crate::metrics`]).
    pub metrics: BTreeMap<String, u64>,
    /// Gauges (per subtask: `<operator>[<i>].<name>`) and `job.` gauges.
    pub gauges: BTreeMap<String, i64>,
    /// Histograms (per subtask).
    pub histograms: BTreeMap<String, HistogramStatistics>,
    /// What the restore migrated: `operator: state (part)` per migrated state and subtask.
    pub migrations: Vec<String>,
}

impl JobResult {
    fn new(elapsed: Duration, metrics: Metrics, migrations: Vec<String>) -> Self {
        JobResult {
            elapsed,
            metrics: metrics.counters,
            gauges: metrics.gauges,
            histograms: metrics.histograms,
            migrations,
        }
    }

    /// A counter's value (0 when it never counted).
    pub fn metric(&self, name: &str) -> u64 {
        self.metrics.get(name).copied().unwrap_or(0)
    }
}

impl std::fmt::Debug for StreamExecutionEnvironment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self.state.borrow();
        f.debug_struct("StreamExecutionEnvironment")
            .field("config", &s.config)
            .field("transformations", &s.transformations.len())
            .finish()
    }
}

impl Default for StreamExecutionEnvironment {
    fn default() -> Self {
        Self::new()
    }
}

impl StreamExecutionEnvironment {
    /// An environment with the default configuration (parallelism 1, heap state).
    pub fn new() -> Self {
        Self::with_config(ExecutionConfig::default())
    }

    /// An environment with `config`.
    pub fn with_config(config: ExecutionConfig) -> Self {
        StreamExecutionEnvironment {
            state: Rc::new(RefCell::new(EnvState {
                config,
                transformations: Vec::new(),
                builders: Vec::new(),
                problems: Vec::new(),
            })),
        }
    }

    /// Sets the default parallelism of operators.
    pub fn set_parallelism(&self, parallelism: u32) -> &Self {
        self.state.borrow_mut().config.parallelism = parallelism;
        self
    }

    /// Sets the number of key groups (fix it for jobs whose state will be rescaled).
    pub fn set_max_parallelism(&self, max_parallelism: u32) -> &Self {
        self.state.borrow_mut().config.max_parallelism = Some(max_parallelism);
        self
    }

    /// Sets where keyed state lives.
    pub fn set_state_backend(&self, backend: StateBackend) -> &Self {
        self.state.borrow_mut().config.state_backend = backend;
        self
    }

    /// Sets the serializers' configuration.
    pub fn set_serializer_config(&self, config: SerializerConfig) -> &Self {
        self.state.borrow_mut().config.serializer_config = config;
        self
    }

    /// Sets the interval of periodic watermarks.
    pub fn set_auto_watermark_interval(&self, interval: Duration) -> &Self {
        self.state.borrow_mut().config.auto_watermark_interval = interval;
        self
    }

    /// Checkpoints the job periodically.
    pub fn enable_checkpointing(&self, config: CheckpointConfig) -> &Self {
        self.state.borrow_mut().config.checkpointing = Some(config);
        self
    }

    /// Starts the job from a checkpoint or savepoint.
    pub fn restore_from(&self, settings: RestoreSettings) -> &Self {
        self.state.borrow_mut().config.restore = Some(settings);
        self
    }

    /// Stops the job with a savepoint after each source subtask emitted `after_records`.
    pub fn stop_with_savepoint(&self, stop: StopWithSavepoint) -> &Self {
        self.state.borrow_mut().config.stop_with_savepoint = Some(stop);
        self
    }

    /// Sets what happens when the job fails (see [`RestartStrategy`]).
    pub fn set_restart_strategy(&self, strategy: RestartStrategy) -> &Self {
        self.state.borrow_mut().config.restart_strategy = strategy;
        self
    }

    /// Sets how the job executes (see [`RuntimeMode`] and [`crate::batch::keyed`]).
    ///
    /// ```
    /// use typeinfo_runtime::{RuntimeMode, StreamExecutionEnvironment};
    /// # fn main() -> typeinfo_runtime::Result<()> {
    /// let env = StreamExecutionEnvironment::new();
    /// env.set_runtime_mode(RuntimeMode::Batch);
    /// let totals = env
    ///     .from_collection(vec![('a', 1i64), ('b', 2), ('a', 3)])
    ///     .key_by(|(k, _): &(char, i64)| *k)
    ///     .reduce(|x, y| (x.0, x.1 + y.1))
    ///     .collect();
    /// env.execute("totals")?;
    /// let mut totals = totals.take(); // one final value per key in batch mode
    /// totals.sort();
    /// assert_eq!(totals, [('a', 4), ('b', 2)]);
    /// # Ok(())
    /// # }
    /// ```
    pub fn set_runtime_mode(&self, mode: RuntimeMode) -> &Self {
        self.state.borrow_mut().config.runtime_mode = mode;
        self
    }

    /// Turns operator chaining off for the whole job (Flink's `disableOperatorChaining`):
    /// every operator runs as a timely operator of its own. Chaining changes no result, no
    /// checkpoint and no metric name; it is on by default (see
    /// [`StreamGraph::chains`](crate::StreamGraph::chains)).
    pub fn disable_operator_chaining(&self) -> &Self {
        self.state.borrow_mut().config.chaining = false;
        self
    }

    /// Batch mode: the memory budget of each keyed operator subtask's sorter, in bytes
    /// (default 128 MiB); beyond it sorted runs spill to temporary files.
    pub fn set_batch_sort_memory(&self, bytes: usize) -> &Self {
        self.state.borrow_mut().config.batch_sort_memory = bytes;
        self
    }

    /// Batch mode: whether keyed event-time windows that `reduce` or `aggregate` run as a
    /// hash aggregation (the default) or sort their input as every other keyed operator does.
    /// Turn it off for an aggregate whose `merge` does not combine two partial accumulators
    /// (see [`crate::batch::hash`]).
    pub fn set_batch_hash_aggregation(&self, enabled: bool) -> &Self {
        self.state.borrow_mut().config.batch_hash_aggregation = enabled;
        self
    }

    /// Flow control: how many records each source subtask may have in flight before it
    /// waits for the operators downstream of it (default
    /// [`DEFAULT_MAX_IN_FLIGHT_RECORDS`](crate::config::DEFAULT_MAX_IN_FLIGHT_RECORDS)). Memory
    /// held by records between operators is bounded by it, whatever the input's size.
    pub fn set_max_in_flight_records(&self, records: u64) -> &Self {
        self.state.borrow_mut().config.max_in_flight_records = records.max(1);
        self
    }

    /// Serves this process's metrics to Prometheus at `address` (`GET /metrics`, the
    /// OpenMetrics text format) while the job runs; see [`crate::exec::prometheus`] for the
    /// names and labels.
    pub fn set_metrics_address(&self, address: std::net::SocketAddr) -> &Self {
        self.state.borrow_mut().config.metrics_address = Some(address);
        self
    }

    /// Keeps the metrics endpoint up for `linger` after the job ends (so that the last
    /// scrape sees the final values).
    pub fn set_metrics_linger(&self, linger: Duration) -> &Self {
        self.state.borrow_mut().config.metrics_linger = linger;
        self
    }

    /// Runs the job as one process of a cluster (see [`Cluster`]).
    pub fn set_cluster(&self, cluster: Option<Cluster>) -> &Self {
        self.state.borrow_mut().config.cluster = cluster;
        self
    }

    /// The configuration.
    pub fn config(&self) -> ExecutionConfig {
        self.state.borrow().config.clone()
    }

    /// Records a transformation and its builder; returns its id.
    pub(crate) fn add(&self, mut t: Transformation, builder: Arc<dyn NodeBuilder>) -> usize {
        let mut s = self.state.borrow_mut();
        let id = s.transformations.len();
        t.id = id;
        s.transformations.push(t);
        s.builders.push(builder);
        id
    }

    /// A transformation recorded earlier (to read its side outputs, ...).
    pub(crate) fn transformation<R>(&self, id: usize, f: impl FnOnce(&Transformation) -> R) -> R {
        f(&self.state.borrow().transformations[id])
    }

    pub(crate) fn with_transformation<R>(
        &self,
        id: usize,
        f: impl FnOnce(&mut Transformation) -> R,
    ) -> R {
        f(&mut self.state.borrow_mut().transformations[id])
    }

    /// Records a mistake in an API call (reported when the graph is built).
    pub(crate) fn problem(&self, message: String) {
        self.state.borrow_mut().problems.push(message);
    }

    fn graph_and_builders(&self) -> Result<(Arc<StreamGraph>, Builders)> {
        let s = self.state.borrow();
        if let Some(problem) = s.problems.first() {
            return Err(Error::Graph(problem.clone()));
        }
        let graph = plan::translate(&s.transformations, &s.config)?;
        Ok((Arc::new(graph), Arc::new(s.builders.clone())))
    }

    /// The graph, the builders and the configuration a run uses: in batch mode without
    /// checkpoints (Flink's batch execution takes none; a failure reruns the job).
    fn prepared(&self) -> Result<(Arc<StreamGraph>, Builders, ExecutionConfig)> {
        let (graph, builders) = self.graph_and_builders()?;
        let mut config = self.config();
        if graph.is_batch() {
            config.checkpointing = None;
        }
        Ok((graph, builders, config))
    }

    /// The stream graph of every transformation added so far.
    ///
    /// # Errors
    ///
    /// An invalid configuration, a serializer that cannot be created (for example a disabled
    /// generic type, named in the error), a duplicate uid.
    pub fn stream_graph(&self) -> Result<StreamGraph> {
        let (graph, _) = self.graph_and_builders()?;
        Ok(Arc::unwrap_or_clone(graph))
    }

    /// The plan of the job, one operator per paragraph (see [`StreamGraph::explain`]).
    ///
    /// # Errors
    ///
    /// As [`stream_graph`](Self::stream_graph).
    pub fn explain(&self) -> Result<String> {
        Ok(self.stream_graph()?.explain())
    }

    /// Builds the stream graph and runs it until every source is exhausted.
    ///
    /// # Errors
    ///
    /// A graph error (before anything runs); the first error of any operator (a state or
    /// serialization error, a user function's error or panic, corrupt data from another
    /// process); a cluster that cannot connect.
    pub fn execute(&self, job_name: &str) -> Result<JobResult> {
        let (graph, builders, config) = self.prepared()?;
        let started = Instant::now();
        let (metrics, migrations) = crate::exec::run::execute(
            job_name,
            graph,
            builders,
            config,
            Arc::new(JobShared::new()),
        )?;
        Ok(JobResult::new(started.elapsed(), metrics, migrations))
    }

    /// Starts the job in the background and returns a client to take savepoints while it
    /// runs and to wait for its end.
    ///
    /// # Errors
    ///
    /// A graph error (before anything runs).
    pub fn execute_async(&self, job_name: &str) -> Result<JobClient> {
        let (graph, builders, config) = self.prepared()?;
        let job = Arc::new(JobShared::new());
        let shared = Arc::clone(&job);
        let name = job_name.to_owned();
        let checkpointing = config.checkpointing.is_some();
        // In a multi-process job the coordinator may run elsewhere: savepoints are asked for
        // through the shared checkpoint directory.
        let requests = config
            .checkpointing
            .as_ref()
            .filter(|_| config.cluster.is_some())
            .map(|c| c.dir.clone());
        let thread = std::thread::Builder::new()
            .name(format!("job {job_name}"))
            .spawn(move || {
                let started = Instant::now();
                let (metrics, migrations) =
                    crate::exec::run::execute(&name, graph, builders, config, shared)?;
                Ok(JobResult::new(started.elapsed(), metrics, migrations))
            })
            .map_err(|e| Error::Config(format!("cannot start the job's thread: {e}")))?;
        Ok(JobClient {
            thread,
            job,
            checkpointing,
            requests,
        })
    }
}

/// A job running in the background (see [`StreamExecutionEnvironment::execute_async`]).
#[derive(Debug)]
pub struct JobClient {
    pub(crate) thread: std::thread::JoinHandle<Result<JobResult>>,
    pub(crate) job: Arc<JobShared>,
    pub(crate) checkpointing: bool,
    /// A multi-process job's checkpoint directory, where savepoint requests go.
    pub(crate) requests: Option<PathBuf>,
}

impl JobClient {
    /// Takes a savepoint of the running job into `dir`: the sources close their current
    /// epoch at once, and the first checkpoint that completes after that is copied to
    /// `dir` (same format; restore from it with [`RestoreSettings`](crate::config::RestoreSettings)).
    /// Waits at most `timeout`. In a multi-process job, any process may ask: the request goes
    /// through the shared checkpoint directory to the coordinator (on process 0), which
    /// copies the first checkpoint that completes after it saw the request, once for the
    /// whole job; `kill -USR1` on any process asks for one too (see
    /// [`crate::exec::run`]).
    ///
    /// # Errors
    ///
    /// Checkpointing is off; the job ended or failed before the savepoint completed; the
    /// timeout passed; the copy failed.
    pub fn trigger_savepoint(&self, dir: impl Into<PathBuf>, timeout: Duration) -> Result<PathBuf> {
        self.savepoint(dir, timeout)
    }

    /// A savepoint of a multi-process job, asked for from this process (any of them): a
    /// request in the shared checkpoint directory, answered by the coordinator with the
    /// first checkpoint that completes after it saw it; waits for the savepoint's
    /// `_metadata`.
    fn request_savepoint(
        &self,
        checkpoints: &std::path::Path,
        dir: PathBuf,
        timeout: Duration,
    ) -> Result<PathBuf> {
        crate::checkpoint::store::CheckpointStore::open(checkpoints)?.request_savepoint(&dir)?;
        let target = crate::checkpoint::storage::Storage::open(&dir)?;
        let deadline = Instant::now() + timeout;
        loop {
            if target.exists(crate::checkpoint::format::METADATA_FILE)? {
                return Ok(dir);
            }
            if self.thread.is_finished() {
                return Err(Error::Config(
                    "the job ended before the savepoint completed".into(),
                ));
            }
            if Instant::now() >= deadline {
                return Err(Error::Config(format!("no savepoint within {timeout:?}")));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn savepoint(&self, dir: impl Into<PathBuf>, timeout: Duration) -> Result<PathBuf> {
        if !self.checkpointing {
            return Err(Error::Config(
                "a savepoint is a checkpoint: enable checkpointing to take one".into(),
            ));
        }
        if let Some(checkpoints) = &self.requests {
            return self.request_savepoint(checkpoints, dir.into(), timeout);
        }
        {
            let mut request = self.job.request();
            request.id += 1;
            request.dir = Some(dir.into());
            request.after_epoch = None;
            request.result = None;
        }
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(result) = self.job.request().result.take() {
                return result.map_err(Error::Corrupt);
            }
            if self.thread.is_finished() {
                return Err(Error::Config(
                    "the job ended before the savepoint completed".into(),
                ));
            }
            if Instant::now() >= deadline {
                self.job.request().dir = None;
                return Err(Error::Config(format!("no savepoint within {timeout:?}")));
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// Stops the job with a savepoint into `dir` (Flink's stop-with-savepoint) and waits for
    /// it to end: every source stops where it is at its next epoch boundary, the first
    /// checkpoint in which all have stopped is copied to `dir`, and the job ends without a
    /// final watermark (nothing pending fires; a job restored from `dir` goes on from
    /// there). In a multi-process job any process may ask: the request goes through the
    /// shared checkpoint directory to every process, as `kill -USR2` on any process does
    /// (see [`crate::exec::signal`]).
    ///
    /// # Errors
    ///
    /// Checkpointing is off; `dir` names a storage no client serves; the job failed, or
    /// ended before the savepoint was written (its input ran out first).
    pub fn stop_with_savepoint(self, dir: impl Into<PathBuf>) -> Result<JobResult> {
        if !self.checkpointing {
            return Err(Error::Config(
                "a savepoint is a checkpoint: enable checkpointing to stop with one".into(),
            ));
        }
        let dir = dir.into();
        let target = crate::checkpoint::storage::Storage::open(&dir)?;
        if let Some(checkpoints) = &self.requests {
            crate::checkpoint::store::CheckpointStore::open(checkpoints)?.request_stop(&dir)?;
        }
        self.job.request_stop(dir.clone());
        let result = self.wait()?;
        if !target.exists(crate::checkpoint::format::METADATA_FILE)? {
            return Err(Error::Config(format!(
                "the job ended before its savepoint {} was written",
                dir.display()
            )));
        }
        Ok(result)
    }

    /// The job's metrics now (this process's workers; see [`crate::metrics`]).
    pub fn metrics(&self) -> Metrics {
        self.job.metrics.snapshot()
    }

    /// Cancels the job: its operators stop at their next activation, nothing more is
    /// committed, and [`wait`](Self::wait) returns [`Error::Cancelled`].
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use typeinfo_runtime::{Error, JobStatus, StreamExecutionEnvironment};
    ///
    /// # fn main() -> typeinfo_runtime::Result<()> {
    /// let env = StreamExecutionEnvironment::new();
    /// env.from_generator(u64::MAX, |i| i).add_sink(|_| {}); // would run for centuries
    /// let client = env.execute_async("forever")?;
    /// assert_eq!(client.status(), JobStatus::Running);
    /// client.cancel();
    /// while !client.is_finished() {
    ///     std::thread::sleep(Duration::from_millis(5));
    /// }
    /// assert_eq!(client.status(), JobStatus::Cancelled);
    /// assert!(matches!(client.wait(), Err(Error::Cancelled)));
    /// # Ok(())
    /// # }
    /// ```
    pub fn cancel(&self) {
        self.job.cancel();
    }

    /// Where the job is: running, restarting, finished, failed or cancelled.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use typeinfo_runtime::{JobStatus, StreamExecutionEnvironment};
    ///
    /// # fn main() -> typeinfo_runtime::Result<()> {
    /// let env = StreamExecutionEnvironment::new();
    /// let doubled = env.from_collection(vec![1i64, 2, 3]).map(|v| v * 2).collect();
    /// let client = env.execute_async("doubles")?;
    /// while !client.is_finished() {
    ///     std::thread::sleep(Duration::from_millis(5));
    /// }
    /// assert_eq!(client.status(), JobStatus::Finished);
    /// client.wait()?;
    /// assert_eq!(doubled.take(), [2, 4, 6]);
    /// # Ok(())
    /// # }
    /// ```
    pub fn status(&self) -> JobStatus {
        self.job.status()
    }

    /// Waits for the job's end, printing [`Metrics::summary`] on stderr every `interval`
    /// (the examples' `--metrics`).
    ///
    /// # Errors
    ///
    /// The job's error.
    pub fn wait_reporting(self, interval: Duration) -> Result<JobResult> {
        let mut previous = self.metrics();
        let mut at = Instant::now();
        while !self.is_finished() {
            std::thread::sleep(Duration::from_millis(20).min(interval));
            if at.elapsed() >= interval {
                let now = self.metrics();
                eprintln!("metrics: {}", now.summary(&previous, at.elapsed()));
                previous = now;
                at = Instant::now();
            }
        }
        self.wait()
    }

    /// Whether the job has ended.
    pub fn is_finished(&self) -> bool {
        self.thread.is_finished()
    }

    /// Waits for the job to end.
    ///
    /// # Errors
    ///
    /// The job's error.
    pub fn wait(self) -> Result<JobResult> {
        self.thread.join().unwrap_or_else(|_| {
            Err(Error::Function {
                operator: "job".into(),
                message: "the job's thread panicked".into(),
            })
        })
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
            rescalable: source.rescalable(),
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
        let chain = ChainSlot::new();
        let id = self.add(
            spec.transformation(Vec::new(), Some(OutputType::of::<O>())),
            Arc::new(SourceBuilder::new(make, Arc::clone(&chain))),
        );
        DataStream::of_node(self, id, 0, Some(chain))
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
