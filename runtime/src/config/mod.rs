//! A job's configuration: parallelism, state backend, serializers, watermarks, checkpoints,
//! restore, stop-with-savepoint and the processes of a cluster. Plain data, read by every
//! layer (plan, compile, drivers) and importing none of them.

pub(crate) mod secret;

use std::path::PathBuf;
use std::time::Duration;

use typeinfo::SerializerConfig;
use typeinfo_state::{default_max_parallelism, RocksDbOptions};

use crate::config::secret::JobSecret;
use crate::error::{Error, Result};

/// The default memory budget of one sorter of batch mode, in bytes (Flink's default managed
/// memory per slot is of this order; batch mode gives one sorter per keyed input of a
/// subtask); `typeinfo_runtime::sort::DEFAULT_MEMORY_BUDGET` names it too.
pub const DEFAULT_SORT_MEMORY: usize = 128 << 20;

/// The default in-flight budget of a source subtask, in records
/// ([`ExecutionConfig::max_in_flight_records`]): at 100 bytes a record, about 13 MB per source
/// subtask; enough that a source at ten million records a second is not held back by the
/// millisecond ticks of the frontier.
pub const DEFAULT_MAX_IN_FLIGHT_RECORDS: u64 = 128 * 1024;

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

/// How a job executes (Flink's `RuntimeExecutionMode`); see [`crate::batch::keyed`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum RuntimeMode {
    /// Records flow as they come; keyed state in the configured backend; watermarks,
    /// checkpoints (the default, as in Flink).
    #[default]
    Streaming,
    /// Every source must be bounded: each keyed operator sorts its whole input by (key,
    /// timestamp) and processes one key after another with its state on the heap for that key
    /// only; event time is perfect (nothing is late); no checkpoints.
    Batch,
    /// Batch when every source is bounded, streaming otherwise.
    Automatic,
}

impl RuntimeMode {
    /// Parses `streaming`, `batch` or `automatic` (as command-line examples take it).
    ///
    /// # Errors
    ///
    /// Any other name.
    pub fn parse(name: &str) -> Result<Self> {
        match name {
            "streaming" => Ok(RuntimeMode::Streaming),
            "batch" => Ok(RuntimeMode::Batch),
            "automatic" => Ok(RuntimeMode::Automatic),
            other => Err(Error::Config(format!(
                "unknown runtime mode `{other}`: expected `streaming`, `batch` or `automatic`"
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
    /// How long a peer may stay silent (a cut link, a host that froze, data sent and never
    /// acknowledged) before this process counts it lost and ends with
    /// [`Error::PeerLost`](crate::Error::PeerLost): TCP keepalive probes and
    /// `TCP_USER_TIMEOUT` on every connection between processes. 10 s by default
    /// (`--peer-timeout-ms`).
    pub peer_timeout: std::time::Duration,
}

/// The default [`Cluster::peer_timeout`].
pub const DEFAULT_PEER_TIMEOUT: Duration = Duration::from_secs(10);

impl Cluster {
    /// Reads `--hosts h1:p1,h2:p2 --process i [--peer-timeout-ms MS]` from command-line
    /// arguments and the job secret
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
        let peer_timeout = match value("--peer-timeout-ms") {
            None => DEFAULT_PEER_TIMEOUT,
            Some(ms) => Duration::from_millis(
                ms.ok_or_else(|| Error::Config("--peer-timeout-ms needs a value".into()))?
                    .parse::<u64>()
                    .map_err(|e| Error::Config(format!("--peer-timeout-ms: {e}")))?
                    .max(1_000),
            ),
        };
        Ok(Some(Cluster {
            hosts,
            process,
            secret: JobSecret::from_env()?,
            peer_timeout,
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
    /// What happens when the job fails while it runs.
    pub restart_strategy: RestartStrategy,
    /// Streaming, batch, or batch when every source is bounded.
    pub runtime_mode: RuntimeMode,
    /// Batch mode: the memory budget of each keyed operator subtask's sorter (bytes; beyond
    /// it sorted runs spill to temporary files). Default 128 MiB.
    pub batch_sort_memory: usize,
    /// Batch mode: keyed event-time windows that `reduce` or `aggregate` run as a hash
    /// aggregation (one table per subtask, spilling sorted runs beyond the memory budget)
    /// instead of sorting their input; on by default. See [`crate::batch::hash`].
    pub batch_hash_aggregation: bool,
    /// Flow control: how many records each source subtask may have in flight (emitted and
    /// not yet finished with by every operator downstream of it) before it waits for its
    /// consumers; [`DEFAULT_MAX_IN_FLIGHT_RECORDS`] by default. See
    /// [`crate::exec::source_driver`] for how it is counted.
    pub max_in_flight_records: u64,
    /// Where this process serves its metrics to Prometheus (`GET /metrics`), if anywhere
    /// (see [`crate::exec::prometheus`] for the names; `--metrics-port` in the programs).
    pub metrics_address: Option<std::net::SocketAddr>,
    /// How long the metrics endpoint stays up after the job ends, so that a scrape sees the
    /// final values (default: not at all).
    pub metrics_linger: Duration,
    /// Operator chaining (on by default): consecutive operators joined by a forward edge
    /// run as one timely operator (see [`StreamGraph::chains`](crate::StreamGraph::chains)).
    pub chaining: bool,
}

/// What a failing job does (Flink's restart strategies): a function's error or panic, a
/// state or I/O error, corrupt data from a peer. The job restarts inside the same
/// `execute` from its latest completed checkpoint (from its start, or the savepoint it
/// started from, when none completed yet), so exactly-once output stays exactly once.
/// Errors in building the job (configuration, graph, types) and a cancel never restart.
///
/// ```
/// use std::time::Duration;
/// use typeinfo_runtime::{CheckpointConfig, RestartStrategy, StreamExecutionEnvironment};
///
/// let env = StreamExecutionEnvironment::new();
/// env.enable_checkpointing(CheckpointConfig::new("/tmp/checkpoints", Duration::from_secs(10)))
///     .set_restart_strategy(RestartStrategy::ExponentialBackoff {
///         attempts: 10,
///         initial: Duration::from_millis(100),
///         max: Duration::from_secs(60),
///         multiplier: 2.0,
///     });
/// assert_eq!(
///     env.config().restart_strategy.delay(3),
///     Some(Duration::from_millis(400))
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
pub enum RestartStrategy {
    /// Fail at the first error (the default).
    #[default]
    None,
    /// Restart up to `attempts` times, waiting `delay` before each.
    FixedDelay {
        /// Restarts at most.
        attempts: u32,
        /// Wait before a restart.
        delay: Duration,
    },
    /// Restart up to `attempts` times, waiting `initial`, then `multiplier` times longer
    /// each time, at most `max`.
    ExponentialBackoff {
        /// Restarts at most.
        attempts: u32,
        /// The first wait.
        initial: Duration,
        /// The longest wait.
        max: Duration,
        /// How much longer each wait is than the one before.
        multiplier: f64,
    },
}

impl RestartStrategy {
    /// The wait before restart number `attempt` (from 1), or `None` when no restart is left.
    pub fn delay(&self, attempt: u32) -> Option<Duration> {
        match self {
            RestartStrategy::None => None,
            RestartStrategy::FixedDelay { attempts, delay } => {
                (attempt <= *attempts).then_some(*delay)
            }
            RestartStrategy::ExponentialBackoff {
                attempts,
                initial,
                max,
                multiplier,
            } => (attempt <= *attempts).then(|| {
                let factor = multiplier
                    .max(1.0)
                    .powi(attempt.saturating_sub(1).min(64) as i32);
                initial.mul_f64(factor.min(1e9)).min(*max)
            }),
        }
    }
}

/// Stops a job with a savepoint: each source subtask stops after `after_records` records,
/// the first checkpoint in which every source has stopped is copied to `dir`, and the job
/// ends without firing what is pending (no final watermark), to be continued by a job that
/// restores from `dir`.
#[derive(Debug, Clone)]
pub struct StopWithSavepoint {
    /// Records per source subtask before it stops.
    pub after_records: u64,
    /// The savepoint directory: a path or a storage URL such as `s3://bucket/savepoints/1`
    /// ([`crate::storage`]).
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
            restart_strategy: RestartStrategy::None,
            runtime_mode: RuntimeMode::Streaming,
            batch_sort_memory: DEFAULT_SORT_MEMORY,
            batch_hash_aggregation: true,
            max_in_flight_records: DEFAULT_MAX_IN_FLIGHT_RECORDS,
            metrics_address: None,
            metrics_linger: Duration::ZERO,
            chaining: true,
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

/// Periodic checkpoints of a job.
#[derive(Debug, Clone)]
pub struct CheckpointConfig {
    /// Where checkpoints are written, shared by every process of a job: a local (or
    /// mounted) directory, or an object store's URL, `s3://bucket/prefix`, `gs://...`,
    /// `az://...` (see [`crate::storage`] for the forms and their configuration).
    pub dir: PathBuf,
    /// Time between checkpoints: a source closes its next epoch this long after the last
    /// one, and, in a job of one process, not before the checkpoint before it completed
    /// (one checkpoint at a time, Flink's default; see [`crate::checkpoint`]).
    pub interval: Duration,
    /// How many completed checkpoints to keep.
    pub retained: usize,
    /// RocksDB keyed state is checkpointed incrementally (the default): each checkpoint
    /// uploads the SST files written since the last one and refers to the others. `false`
    /// writes every checkpoint whole, in the savepoint format. The heap backend always
    /// writes whole checkpoints; savepoints are always whole.
    pub incremental: bool,
    /// Start from the job's own checkpoints: when `dir` holds a completed checkpoint, the job
    /// restores from the newest that verifies (as with a [`RestoreSettings`] naming `dir`);
    /// when it holds none, the job starts from its sources. A process started again with the
    /// same command line (by Kubernetes, systemd, any supervisor) thereby resumes where the
    /// job's checkpoints left it, and every process of a multi-process job finds the same
    /// checkpoint. Off by default: a job started anew starts from its sources. An explicit
    /// restore takes precedence.
    pub resume: bool,
    /// Consecutive checkpoints a subtask may fail to write (an upload refused, a full disk)
    /// before the job fails (Flink's `tolerableCheckpointFailureNumber`); 3 by default. A
    /// checkpoint that failed never completes; the job goes on and the next one carries what
    /// it held (see [`crate::checkpoint`]).
    pub tolerable_failures: u32,
}

impl CheckpointConfig {
    /// Checkpoints in `dir` (a path or a storage URL) every `interval`, keeping the last 3,
    /// incremental with RocksDB.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use typeinfo_runtime::CheckpointConfig;
    ///
    /// let local = CheckpointConfig::new("/var/lib/job/checkpoints", Duration::from_secs(10));
    /// // The AWS_* variables of the environment configure the client (region, credentials,
    /// // AWS_ENDPOINT for an S3-compatible server).
    /// let on_s3 = CheckpointConfig::new("s3://checkpoints/orders-job", Duration::from_secs(10));
    /// assert_eq!(on_s3.dir.to_str(), Some("s3://checkpoints/orders-job"));
    /// # let _ = local;
    /// ```
    pub fn new(dir: impl Into<PathBuf>, interval: Duration) -> Self {
        CheckpointConfig {
            dir: dir.into(),
            interval,
            retained: 3,
            incremental: true,
            resume: false,
            tolerable_failures: 3,
        }
    }

    /// How many consecutive checkpoints a subtask may fail to write before the job fails
    /// (see [`tolerable_failures`](Self::tolerable_failures)).
    #[must_use]
    pub fn tolerable_failures(mut self, failures: u32) -> Self {
        self.tolerable_failures = failures;
        self
    }

    /// Whether RocksDB keyed state is checkpointed incrementally (see
    /// [`incremental`](Self::incremental)).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use typeinfo_runtime::CheckpointConfig;
    ///
    /// let full = CheckpointConfig::new("/tmp/checkpoints", Duration::from_secs(10)).incremental(false);
    /// assert!(!full.incremental);
    /// ```
    #[must_use]
    pub fn incremental(mut self, incremental: bool) -> Self {
        self.incremental = incremental;
        self
    }

    /// Whether the job starts from its own newest completed checkpoint when there is one
    /// (see [`resume`](Self::resume)).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use typeinfo_runtime::CheckpointConfig;
    ///
    /// // Under a supervisor that restarts the process with the same command line.
    /// let config = CheckpointConfig::new("/var/lib/job/checkpoints", Duration::from_secs(10))
    ///     .resume(true);
    /// assert!(config.resume);
    /// ```
    #[must_use]
    pub fn resume(mut self, resume: bool) -> Self {
        self.resume = resume;
        self
    }
}

/// Where a job starts from.
#[derive(Debug, Clone)]
pub struct RestoreSettings {
    /// A checkpoint directory (its latest completed checkpoint is used), one checkpoint
    /// (`chk-<epoch>`), or a savepoint; a path or a storage URL ([`crate::storage`]).
    pub path: PathBuf,
    /// Start even if the snapshot holds state of operators the job no longer has (that
    /// state is dropped).
    pub allow_non_restored_state: bool,
}

/// `TYPEINFO_CHECKPOINT_WRITE_DELAY_MS`: a pause between an operator's keyed state and its
/// part marker when it writes a checkpoint, and before each upload of an incremental
/// checkpoint's SST file is renamed into place. A fault-injection aid for crash tests (a kill then
/// often lands while a checkpoint is half written); unset in production.
pub(crate) fn checkpoint_write_delay() -> Option<Duration> {
    static DELAY: std::sync::OnceLock<Option<Duration>> = std::sync::OnceLock::new();
    *DELAY.get_or_init(|| {
        std::env::var("TYPEINFO_CHECKPOINT_WRITE_DELAY_MS")
            .ok()
            .and_then(|v| v.parse().ok())
            .map(Duration::from_millis)
    })
}
