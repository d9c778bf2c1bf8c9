//! The one error type of the savepoint tool.

use std::fmt;
use std::path::PathBuf;

/// Everything the savepoint tool can refuse or fail at.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// A file or directory could not be read or written.
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A file of the savepoint is truncated, damaged, or not a file of a typeinfo savepoint
    /// (the message names the file and what is wrong with it).
    Corrupt(String),
    /// The savepoint has no operator or state of that name (the message lists what it has).
    NotFound(String),
    /// The request cannot be carried out on this savepoint or with these arguments (the
    /// message says why); nothing was written.
    Refused(String),
    /// The state layer refused: a state that cannot be read as the given types, a bad
    /// configuration of a bootstrapped state, a serializer kind no restorer knows.
    State(typeinfo_state::Error),
    /// The runtime's checkpoint layer refused.
    Runtime(typeinfo_runtime::Error),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io { path, source } => write!(f, "`{}`: {source}", path.display()),
            Error::Corrupt(detail) => write!(f, "corrupt savepoint: {detail}"),
            Error::NotFound(what) | Error::Refused(what) => f.write_str(what),
            Error::State(e) => write!(f, "{e}"),
            Error::Runtime(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            Error::State(e) => Some(e),
            Error::Runtime(e) => Some(e),
            _ => None,
        }
    }
}

impl From<typeinfo_state::Error> for Error {
    fn from(e: typeinfo_state::Error) -> Self {
        match e {
            typeinfo_state::Error::CorruptSavepoint { path, detail } => {
                Error::Corrupt(format!("{}: {detail}", path.display()))
            }
            typeinfo_state::Error::Io { path, source } => Error::Io { path, source },
            other => Error::State(other),
        }
    }
}

impl From<typeinfo_runtime::Error> for Error {
    fn from(e: typeinfo_runtime::Error) -> Self {
        match e {
            // The runtime's message names the file (`<path>: checksum mismatch`).
            typeinfo_runtime::Error::Corrupt(detail) => Error::Corrupt(detail),
            typeinfo_runtime::Error::Damaged { path, what } => {
                Error::Corrupt(format!("{path} is damaged: {what}"))
            }
            typeinfo_runtime::Error::Io { path, source } => Error::Io { path, source },
            typeinfo_runtime::Error::State { source, .. } => source.into(),
            other => Error::Runtime(other),
        }
    }
}

impl From<typeinfo::Error> for Error {
    fn from(e: typeinfo::Error) -> Self {
        Error::State(typeinfo_state::Error::Serialization(e))
    }
}

impl Error {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }
}

/// The result type of the savepoint tool.
pub type Result<T> = std::result::Result<T, Error>;
