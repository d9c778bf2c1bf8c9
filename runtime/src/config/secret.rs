//! The job's shared secret ([`JobSecret`]): where it is read from (the environment or a
//! file), its minimum length, and the keyed MACs the handshake computes with it.

use std::fmt;
use std::path::Path;

use crate::error::{Error, Result};

/// The environment variable that holds the job's shared secret.
pub const SECRET_ENV: &str = "TYPEINFO_JOB_SECRET";

/// The environment variable that names a file holding the job's shared secret.
pub const SECRET_FILE_ENV: &str = "TYPEINFO_JOB_SECRET_FILE";

/// The shortest secret accepted, in bytes.
pub const MIN_SECRET_LEN: usize = 16;

/// The secret every process of a multi-process job shares; its `Debug` output never shows it.
///
/// Read it with [`JobSecret::from_env`] from `TYPEINFO_JOB_SECRET` (the secret itself) or
/// `TYPEINFO_JOB_SECRET_FILE` (a file holding it; one trailing newline is ignored). It is never
/// taken from a command-line argument, which other users of a host can read.
///
/// # Examples
///
/// ```
/// use typeinfo_runtime::JobSecret;
///
/// # fn main() -> typeinfo_runtime::Result<()> {
/// let secret = JobSecret::new(b"a long random string shared by every process".to_vec())?;
/// assert_eq!(format!("{secret:?}"), "JobSecret(<redacted>)");
/// assert!(JobSecret::new(b"short".to_vec()).is_err());
/// # Ok(())
/// # }
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct JobSecret(Vec<u8>);

impl fmt::Debug for JobSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("JobSecret(<redacted>)")
    }
}

impl JobSecret {
    /// A secret from its bytes.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] when it is shorter than [`MIN_SECRET_LEN`] bytes.
    pub fn new(bytes: Vec<u8>) -> Result<Self> {
        if bytes.len() < MIN_SECRET_LEN {
            return Err(Error::Config(format!(
                "the job secret has {} bytes; at least {MIN_SECRET_LEN} are needed (for example `openssl rand -hex 32`)",
                bytes.len()
            )));
        }
        Ok(JobSecret(bytes))
    }

    /// The secret from `TYPEINFO_JOB_SECRET`, or from the file named by
    /// `TYPEINFO_JOB_SECRET_FILE`.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] when neither is set, the file cannot be read, or the secret is too
    /// short.
    pub fn from_env() -> Result<Self> {
        if let Some(secret) = std::env::var_os(SECRET_ENV) {
            return Self::new(secret.into_encoded_bytes());
        }
        if let Some(path) = std::env::var_os(SECRET_FILE_ENV) {
            return Self::from_file(Path::new(&path));
        }
        Err(Error::Config(format!(
            "a multi-process job needs a shared secret: set {SECRET_ENV} (or {SECRET_FILE_ENV} to a file holding it) to the same value for every process; it is never read from the command line"
        )))
    }

    /// The secret held in a file (one trailing newline is ignored).
    ///
    /// # Errors
    ///
    /// [`Error::Config`] when the file cannot be read or the secret is too short.
    pub fn from_file(path: &Path) -> Result<Self> {
        let mut bytes = std::fs::read(path).map_err(|e| {
            Error::Config(format!(
                "cannot read the job secret from {}: {e}",
                path.display()
            ))
        })?;
        if bytes.last() == Some(&b'\n') {
            bytes.pop();
            if bytes.last() == Some(&b'\r') {
                bytes.pop();
            }
        }
        Self::new(bytes)
    }

    /// The secret's bytes, for the handshake's keyed MACs.
    pub(crate) fn as_bytes(&self) -> &[u8] {
        &self.0
    }
}
