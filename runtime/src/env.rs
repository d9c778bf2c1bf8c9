//! The execution environment: configuration, the transformation list, and `execute`.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use typeinfo::SerializerConfig;
use typeinfo_state::{default_max_parallelism, RocksDbOptions};

use crate::checkpoint::{CheckpointConfig, RestoreSettings};
use crate::error::{Error, Result};
use crate::graph::{self, StreamGraph, Transformation};
use crate::handshake::JobSecret;

/// Where keyed state lives.
#[derive(Debug, Clone, Default)]
pub enum StateBackend {
    /// Live objects on the heap (fastest; state must fit in memory).
    #[default]
    Heap,
    /// Serialized in RocksDB on local disk, one instance per keyed operator subtask.
    RocksDb {
        /// The directory for the instances; a temporary directory removed at the end of the
        /// job when `None`.
        dir: Option<PathBuf>,
        /// RocksDB's tuning.
        options: RocksDbOptions,
    },
}

impl StateBackend {
    /// RocksDB in a temporary directory with default tuning.
    pub fn rocksdb() -> Self {
        StateBackend::RocksDb {
            dir: None,
            options: RocksDbOptions::default(),
        }
    }

    /// Parses `heap` or `rocksdb` (as command-line examples take it).
    ///
    /// # Errors
    ///
    /// Any other name.
    pub fn parse(name: &str) -> Result<Self> {
        match name {
            "heap" => Ok(StateBackend::Heap),
            "rocksdb" => Ok(StateBackend::rocksdb()),
            other => Err(Error::Config(format!(
                "unknown state backend `{other}`: expected `heap` or `rocksdb`"
            ))),
        }
    }
}

/// The processes of a job that runs on several processes or hosts.
///
/// Every process runs the same program with the same job; process `process` listens on
/// `hosts[process]` and connects to the others (timely's communication). The job's
/// parallelism is split evenly: each process runs `parallelism / hosts.len()` workers.
///
/// Before a connection carries a batch, both ends prove that they know the job's `secret`
/// (a challenge-response handshake with HMAC-SHA-256, see [`crate::handshake`] for the
/// protocol and the threat model: the traffic itself is not encrypted).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cluster {
    /// `host:port` of every process, in process order.
    pub hosts: Vec<String>,
    /// This process's index in `hosts`.
    pub process: usize,
    /// The secret every process of the job shares.
    pub secret: JobSecret,
}

impl Cluster {
    /// Reads `--hosts h1:p1,h2:p2 --process i` from command-line arguments and the job secret
    /// from the environment ([`JobSecret::from_env`]: `TYPEINFO_JOB_SECRET` or
    /// `TYPEINFO_JOB_SECRET_FILE`, never an argument); `None` when `--hosts` is absent.
    ///
    /// # Errors
    ///
    /// A malformed or missing value, or no (or too short a) secret.
    pub fn from_args(args: &[String]) -> Result<Option<Self>> {
        let value = |flag: &str| {
            args.iter()
                .position(|a| a == flag)
                .map(|i| args.get(i + 1).cloned())
        };
        let Some(hosts) = value("--hosts") else {
            return Ok(None);
        };
        let hosts = hosts.ok_or_else(|| Error::Config("--hosts needs a value".into()))?;
        let process = value("--process")
            .flatten()
            .ok_or_else(|| Error::Config("--hosts needs --process".into()))?
            .parse()
            .map_err(|e| Error::Config(format!("--process: {e}")))?;
        let hosts: Vec<String> = hosts.split(',').map(str::to_owned).collect();
        if process >= hosts.len() {
            return Err(Error::Config(format!(
                "--process {process}: there are only {} hosts",
                hosts.len()
            )));
        }
        Ok(Some(Cluster {
            hosts,
            process,
            secret: JobSecret::from_env()?,
        }))
    }
}

/// A job's configuration.
#[derive(Debug, Clone)]
pub struct ExecutionConfig {
    /// The default parallelism of operators (and the number of workers of the job).
    pub parallelism: u32,
    /// The number of key groups; Flink's default for `parallelism` when `None`.
    pub max_parallelism: Option<u32>,
    /// Where keyed state lives.
    pub state_backend: StateBackend,
    /// The serializers' configuration (for example disabling generic types).
    pub serializer_config: SerializerConfig,
    /// How often periodic watermarks are emitted (Flink's `autoWatermarkInterval`); zero (the
    /// default) emits after every input batch (see [`crate::watermark`]).
    pub auto_watermark_interval: Duration,
    /// The processes of a multi-process job; one process when `None`.
    pub cluster: Option<Cluster>,
    /// Periodic checkpoints; none when `None`.
    pub checkpointing: Option<CheckpointConfig>,
    /// The checkpoint or savepoint to start from.
    pub restore: Option<RestoreSettings>,
    /// Stop with a savepoint once every source subtask has emitted this many records.
    pub stop_with_savepoint: Option<StopWithSavepoint>,
}

/// Stops a job with a savepoint: each source subtask stops after `after_records` records,
/// the first checkpoint in which every source has stopped is copied to `dir`, and the job
/// ends without firing what is pending (no final watermark), to be continued by a job that
/// restores from `dir`.
#[derive(Debug, Clone)]
pub struct StopWithSavepoint {
    /// Records per source subtask before it stops.
    pub after_records: u64,
    /// The savepoint directory.
    pub dir: PathBuf,
}

impl Default for ExecutionConfig {
    fn default() -> Self {
        ExecutionConfig {
            parallelism: 1,
            max_parallelism: None,
            state_backend: StateBackend::Heap,
            serializer_config: SerializerConfig::default(),
            auto_watermark_interval: Duration::ZERO,
            cluster: None,
            checkpointing: None,
            restore: None,
            stop_with_savepoint: None,
        }
    }
}

impl ExecutionConfig {
    /// The number of key groups of the job.
    pub fn max_parallelism(&self) -> u32 {
        self.max_parallelism
            .unwrap_or_else(|| default_max_parallelism(self.parallelism))
    }

    pub(crate) fn validate(&self) -> Result<()> {
        if self.parallelism == 0 {
            return Err(Error::Config("parallelism must be at least 1".into()));
        }
        let max = self.max_parallelism();
        if max == 0 || max > 32_768 {
            return Err(Error::Config(format!(
                "max parallelism {max} must be between 1 and 32768"
            )));
        }
        if self.parallelism > max {
            return Err(Error::Config(format!(
                "parallelism {} exceeds the max parallelism {max}",
                self.parallelism
            )));
        }
        if let Some(stop) = &self.stop_with_savepoint {
            if self.checkpointing.is_none() {
                return Err(Error::Config(format!("stop with savepoint into {} needs checkpointing (the savepoint is a checkpoint)", stop.dir.display())));
            }
        }
        if let Some(c) = &self.cluster {
            if c.hosts.is_empty() || c.process >= c.hosts.len() {
                return Err(Error::Config(format!(
                    "process {} is not one of the {} hosts",
                    c.process,
                    c.hosts.len()
                )));
            }
            if self.parallelism as usize % c.hosts.len() != 0 {
                return Err(Error::Config(format!(
                    "parallelism {} cannot be split evenly over {} processes",
                    self.parallelism,
                    c.hosts.len()
                )));
            }
        }
        Ok(())
    }
}

/// What a finished job reports.
#[derive(Debug, Clone)]
pub struct JobResult {
    /// Wall-clock time from the start of execution to the end.
    pub elapsed: Duration,
    /// Counters of this process's operators, such as `<operator>.numLateRecordsDropped`.
    pub metrics: BTreeMap<String, u64>,
    /// What the restore migrated: `operator: state (part)` per migrated state and subtask.
    pub migrations: Vec<String>,
}

impl JobResult {
    /// A counter's value (0 when it never counted).
    pub fn metric(&self, name: &str) -> u64 {
        self.metrics.get(name).copied().unwrap_or(0)
    }
}

pub(crate) struct EnvState {
    pub(crate) config: ExecutionConfig,
    pub(crate) transformations: Vec<Transformation>,
}

/// The context a job is built in and run from, as Flink's `StreamExecutionEnvironment`.
///
/// Sources (`from_collection`, `from_sequence`, `read_text_file`, `from_generator`, ...)
/// start streams; [`execute`](Self::execute) runs every stream built from it.
#[derive(Clone)]
pub struct StreamExecutionEnvironment {
    pub(crate) state: Rc<RefCell<EnvState>>,
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

    /// Runs the job as one process of a cluster (see [`Cluster`]).
    pub fn set_cluster(&self, cluster: Option<Cluster>) -> &Self {
        self.state.borrow_mut().config.cluster = cluster;
        self
    }

    /// The configuration.
    pub fn config(&self) -> ExecutionConfig {
        self.state.borrow().config.clone()
    }

    pub(crate) fn add(&self, name: impl Into<String>, kind: graph::Kind) -> usize {
        let mut s = self.state.borrow_mut();
        let id = s.transformations.len();
        s.transformations.push(Transformation {
            id,
            name: name.into(),
            uid: None,
            parallelism: None,
            kind,
        });
        id
    }

    pub(crate) fn with_transformation<R>(
        &self,
        id: usize,
        f: impl FnOnce(&mut Transformation) -> R,
    ) -> R {
        f(&mut self.state.borrow_mut().transformations[id])
    }

    /// The stream graph of every transformation added so far.
    ///
    /// # Errors
    ///
    /// An invalid configuration, a serializer that cannot be created (for example a disabled
    /// generic type, named in the error), a duplicate uid.
    pub fn stream_graph(&self) -> Result<StreamGraph> {
        let s = self.state.borrow();
        graph::translate(&s.transformations, &s.config)
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
        let graph = Arc::new(self.stream_graph()?);
        let config = self.config();
        let started = Instant::now();
        let (metrics, migrations) = crate::exec::run(
            job_name,
            graph,
            config,
            Arc::new(crate::exec::JobShared::new()),
        )?;
        Ok(JobResult {
            elapsed: started.elapsed(),
            metrics,
            migrations,
        })
    }

    /// Starts the job in the background and returns a client to take savepoints while it
    /// runs and to wait for its end.
    ///
    /// # Errors
    ///
    /// A graph error (before anything runs).
    pub fn execute_async(&self, job_name: &str) -> Result<JobClient> {
        let graph = Arc::new(self.stream_graph()?);
        let config = self.config();
        let job = Arc::new(crate::exec::JobShared::new());
        let shared = Arc::clone(&job);
        let name = job_name.to_owned();
        let checkpointing = config.checkpointing.is_some();
        let thread = std::thread::Builder::new()
            .name(format!("job {job_name}"))
            .spawn(move || {
                let started = Instant::now();
                let (metrics, migrations) = crate::exec::run(&name, graph, config, shared)?;
                Ok(JobResult {
                    elapsed: started.elapsed(),
                    metrics,
                    migrations,
                })
            })
            .map_err(|e| Error::Config(format!("cannot start the job's thread: {e}")))?;
        Ok(JobClient {
            thread,
            job,
            checkpointing,
        })
    }
}

/// A job running in the background (see [`StreamExecutionEnvironment::execute_async`]).
#[derive(Debug)]
pub struct JobClient {
    thread: std::thread::JoinHandle<Result<JobResult>>,
    job: Arc<crate::exec::JobShared>,
    checkpointing: bool,
}

impl std::fmt::Debug for crate::exec::JobShared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JobShared")
            .field("failed", &self.failed())
            .finish_non_exhaustive()
    }
}

impl JobClient {
    /// Takes a savepoint of the running job into `dir`: the sources close their current
    /// epoch at once, and the first checkpoint that completes after that is copied to
    /// `dir` (same format; restore from it with [`RestoreSettings`](crate::RestoreSettings)).
    /// Waits at most `timeout`. Within one process (the client sees this process's sources).
    ///
    /// # Errors
    ///
    /// Checkpointing is off; the job ended or failed before the savepoint completed; the
    /// timeout passed; the copy failed.
    pub fn trigger_savepoint(&self, dir: impl Into<PathBuf>, timeout: Duration) -> Result<PathBuf> {
        if !self.checkpointing {
            return Err(Error::Config(
                "a savepoint is a checkpoint: enable checkpointing to take one".into(),
            ));
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
