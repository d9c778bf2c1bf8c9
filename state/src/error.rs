//! The error type of the state layer.

use std::fmt;
use std::path::PathBuf;

/// Everything that can go wrong with keyed and operator state, snapshots and restore.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// Bytes could not be read or written by a serializer.
    Serialization(typeinfo::Error),
    /// An I/O operation on `path` failed.
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// RocksDB reported an error (kept as the error's source).
    RocksDb(rocksdb::Error),
    /// The backend's own storage is not in the shape it wrote (a column family missing, a
    /// key prefix it cannot bound).
    Storage(String),
    /// A savepoint or checkpoint is truncated, corrupt or not one of ours.
    CorruptSavepoint {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        detail: String,
    },
    /// A state's stored type cannot be read by today's type; nothing was restored.
    IncompatibleState {
        /// The state's name.
        state: String,
        /// Which part (`key`, `namespace`, `value`, `user key`, `user value`).
        part: &'static str,
        /// The incompatibility, with the type path and the change.
        incompatibility: Box<typeinfo::Incompatibility>,
    },
    /// A state was registered twice with different kinds or types.
    StateMismatch {
        /// The state's name.
        state: String,
        /// What differs.
        detail: String,
    },
    /// An operation needs a current key and none is set.
    NoCurrentKey,
    /// A key group outside this backend's range was addressed.
    KeyGroupOutOfRange {
        /// The key group.
        key_group: u16,
        /// The first key group of the range.
        start: u16,
        /// The last key group of the range.
        end: u16,
    },
    /// A configuration value is out of range.
    InvalidConfig(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Serialization(e) => write!(f, "serialization failed: {e}"),
            Error::Io { path, source } => write!(f, "i/o error on `{}`: {source}", path.display()),
            Error::RocksDb(e) => write!(f, "rocksdb: {e}"),
            Error::Storage(e) => write!(f, "state storage: {e}"),
            Error::CorruptSavepoint { path, detail } => {
                write!(f, "corrupt savepoint `{}`: {detail}", path.display())
            }
            Error::IncompatibleState {
                state,
                part,
                incompatibility,
            } => {
                write!(
                    f,
                    "state `{state}` cannot be restored: {part} {incompatibility}: incompatible"
                )
            }
            Error::StateMismatch { state, detail } => {
                write!(f, "state `{state}` registered again with {detail}")
            }
            Error::NoCurrentKey => f.write_str("no current key is set"),
            Error::KeyGroupOutOfRange {
                key_group,
                start,
                end,
            } => {
                write!(
                    f,
                    "key group {key_group} is outside this backend's range {start}..={end}"
                )
            }
            Error::InvalidConfig(msg) => write!(f, "invalid configuration: {msg}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Serialization(e) => Some(e),
            Error::Io { source, .. } => Some(source),
            Error::RocksDb(e) => Some(e),
            Error::IncompatibleState {
                incompatibility, ..
            } => Some(incompatibility.as_ref()),
            _ => None,
        }
    }
}

impl From<typeinfo::Error> for Error {
    fn from(e: typeinfo::Error) -> Self {
        Error::Serialization(e)
    }
}

impl Error {
    /// An I/O error on `path`.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }
}

/// The result type of the state layer.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A state found in a savepoint that the backend has not registered.
pub(crate) fn not_registered(name: &str) -> Error {
    Error::StateMismatch {
        state: name.to_owned(),
        detail: "nothing: it is in the savepoint but not registered; register every state before restoring".to_owned(),
    }
}
