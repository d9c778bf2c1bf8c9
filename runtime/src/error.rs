//! The runtime's error type.

use std::fmt;
use std::path::PathBuf;

/// What went wrong building or running a job.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The job's configuration is invalid (parallelism, max parallelism, cluster).
    Config(String),
    /// The transformations do not form a valid stream graph.
    Graph(String),
    /// A serializer could not be created or failed, for example a disabled generic type.
    Type {
        /// The operator whose type failed.
        operator: String,
        /// The cause.
        source: typeinfo::Error,
    },
    /// Keyed or operator state failed.
    State {
        /// The operator.
        operator: String,
        /// The cause.
        source: typeinfo_state::Error,
    },
    /// An I/O operation on `path` failed.
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// An event-time operator received a record without a timestamp.
    MissingTimestamp {
        /// The operator.
        operator: String,
    },
    /// A record's timestamp has no window that `i64` milliseconds can represent (its window
    /// would start before `i64::MIN` or end after `i64::MAX`).
    TimestampOutOfRange {
        /// The operator.
        operator: String,
        /// The record's timestamp.
        timestamp: i64,
        /// The window assigner.
        assigner: String,
    },
    /// A user function returned an error or panicked.
    Function {
        /// The operator.
        operator: String,
        /// The function's message.
        message: String,
    },
    /// Data the runtime reads could not be decoded: a batch from another worker, a source's
    /// or sink's position, a window set read from state.
    Corrupt(String),
    /// A file of a checkpoint or savepoint is damaged (its checksum does not match, it is
    /// truncated, it does not parse, or a part the checkpoint needs is missing).
    Damaged {
        /// The file (a path, or an object's URL).
        path: String,
        /// What is wrong with it.
        what: String,
    },
    /// Checkpoint storage on an object store failed (`location` is the object's URL; the
    /// source is the object store client's error).
    Storage {
        /// The URL of the object (or prefix) the request was for.
        location: String,
        /// The object store client's error.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The cluster (timely's communication) could not be set up.
    Cluster(String),
    /// A process of a multi-process job was lost while the job ran (its connection broke:
    /// the process died, or the network between them failed). Every process of the job ends
    /// with this error; a process should exit with [`EXIT_PEER_LOST`]
    /// ([`Error::exit_code`]) so that its supervisor starts it again.
    PeerLost(String),
    /// The job was cancelled through its [`JobClient`](crate::api::environment::JobClient).
    Cancelled,
}

/// The exit status a process of a multi-process job should end with when it lost a peer
/// ([`Error::PeerLost`]): 75 (`EX_TEMPFAIL` of BSD's `sysexits.h`: try again), distinct from a
/// failed job's 1 and a panic's 101, so that a supervisor (Kubernetes, systemd, a script) can
/// tell a lost peer from a broken job.
pub const EXIT_PEER_LOST: i32 = 75;

/// The runtime's result type.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// An error returned by a user function.
    pub fn function(message: impl Into<String>) -> Self {
        Error::Function {
            operator: String::new(),
            message: message.into(),
        }
    }

    /// The exit status for a process that ends with this error: [`EXIT_PEER_LOST`] for a
    /// lost peer, 1 otherwise.
    ///
    /// # Examples
    ///
    /// ```
    /// use typeinfo_runtime::{Error, EXIT_PEER_LOST};
    ///
    /// assert_eq!(Error::PeerLost("process 1".into()).exit_code(), EXIT_PEER_LOST);
    /// assert_eq!(Error::Cancelled.exit_code(), 1);
    /// ```
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::PeerLost(_) => EXIT_PEER_LOST,
            _ => 1,
        }
    }

    /// Whether a restart strategy restarts a job that failed with this error: not for a
    /// job that cannot be built (configuration, graph, types) or was cancelled.
    pub fn is_restartable(&self) -> bool {
        !matches!(
            self,
            Error::Config(_) | Error::Graph(_) | Error::Type { .. } | Error::Cancelled
        )
    }

    /// Names the operator in errors that carry one and do not name one yet.
    pub(crate) fn in_operator(mut self, name: &str) -> Self {
        match &mut self {
            Error::Function { operator, .. }
            | Error::MissingTimestamp { operator }
            | Error::TimestampOutOfRange { operator, .. }
            | Error::State { operator, .. }
            | Error::Type { operator, .. }
                if operator.is_empty() =>
            {
                name.clone_into(operator);
            }
            _ => {}
        }
        self
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Config(msg) => write!(f, "invalid job configuration: {msg}"),
            Error::Graph(msg) => write!(f, "invalid stream graph: {msg}"),
            Error::Type { operator, source } => write!(f, "operator `{operator}`: {source}"),
            Error::State { operator, source } => {
                write!(f, "operator `{operator}`: state: {source}")
            }
            Error::Io { path, source } => write!(f, "{}: {source}", path.display()),
            Error::MissingTimestamp { operator } => write!(
                f,
                "operator `{operator}` needs event timestamps but a record has none: \
                 call assign_timestamps_and_watermarks before event-time windows or timers"
            ),
            Error::TimestampOutOfRange {
                operator,
                timestamp,
                assigner,
            } => write!(
                f,
                "operator `{operator}`: a record at timestamp {timestamp} has no window of {assigner} within the range of i64 milliseconds"
            ),
            Error::Function { operator, message } => write!(f, "operator `{operator}`: {message}"),
            Error::Corrupt(msg) => write!(f, "corrupt data: {msg}"),
            Error::Damaged { path, what } => write!(f, "{path} is damaged: {what}"),
            Error::Cluster(msg) => write!(f, "cluster: {msg}"),
            Error::PeerLost(msg) => write!(f, "a process of the job was lost: {msg}"),
            Error::Storage { location, source } => write!(f, "{location}: {source}"),
            Error::Cancelled => f.write_str("the job was cancelled"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Type { source, .. } => Some(source),
            Error::State { source, .. } => Some(source),
            Error::Io { source, .. } => Some(source),
            Error::Storage { source, .. } => Some(source.as_ref()),
            _ => None,
        }
    }
}

impl From<typeinfo_state::Error> for Error {
    fn from(source: typeinfo_state::Error) -> Self {
        Error::State {
            operator: String::new(),
            source,
        }
    }
}

impl From<typeinfo::Error> for Error {
    fn from(source: typeinfo::Error) -> Self {
        Error::Type {
            operator: String::new(),
            source,
        }
    }
}
