//! A savepoint on disk, opened for reading: its `_metadata` and the files of its operators.

use std::path::{Path, PathBuf};

use typeinfo::SnapshotRegistry;
use typeinfo_runtime::checkpoint::{self, Metadata};
use typeinfo_state::savepoint::SnapshotFile;

use crate::error::{Error, Result};

/// A savepoint (or a completed checkpoint) opened for reading.
///
/// Opening reads and checks `_metadata` only; the state files are read by what needs them
/// ([`inspect`](crate::inspect), [`dump`](crate::dump), [`verify`](crate::verify), the
/// typed readers). Nothing here writes.
///
/// # Examples
///
/// ```no_run
/// use typeinfo_savepoint::Savepoint;
///
/// # fn main() -> typeinfo_savepoint::Result<()> {
/// let savepoint = Savepoint::open("savepoint".as_ref())?;
/// for op in savepoint.operators() {
///     println!("{} `{}` at parallelism {}", op.key, op.name, op.parallelism);
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct Savepoint {
    dir: PathBuf,
    metadata: Metadata,
    registry: SnapshotRegistry,
}

/// One operator of a savepoint, as `_metadata` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Operator {
    /// Its key: `uid-<uid>` for an operator with a uid, `node-<id>` otherwise (also the
    /// name of its directory).
    pub key: String,
    /// The parallelism it ran at.
    pub parallelism: u32,
    /// Its name (free text, for people).
    pub name: String,
}

impl Operator {
    /// Its uid, if it has one.
    pub fn uid(&self) -> Option<&str> {
        self.key.strip_prefix("uid-")
    }
}

impl Savepoint {
    /// Opens the savepoint at `path`: a savepoint, one checkpoint (`chk-<n>`), or a
    /// checkpoint directory (its latest completed checkpoint).
    ///
    /// # Errors
    ///
    /// [`Error::Io`] for a path that does not exist, [`Error::Corrupt`] for a directory
    /// without a completed checkpoint or with a damaged `_metadata`.
    pub fn open(path: &Path) -> Result<Self> {
        if path.exists() && !path.is_dir() {
            return Err(Error::Corrupt(format!(
                "{}: a file, not a savepoint directory",
                path.display()
            )));
        }
        let (dir, metadata) = checkpoint::locate(path).map_err(|e| {
            match e {
                // A directory with neither `_metadata` nor a completed checkpoint under it.
                typeinfo_runtime::Error::Corrupt(_) | typeinfo_runtime::Error::Damaged { .. }
                    if path.is_dir() && !path.join(checkpoint::METADATA_FILE).exists() =>
                {
                    Error::NotFound(format!(
                        "{} is not a savepoint: it holds no `_metadata`, and no completed checkpoint (chk-N/_metadata)",
                        path.display()
                    ))
                }
                e => e.into(),
            }
        })?;
        if let Some(part) = incremental_part(&dir) {
            return Err(Error::Refused(format!(
                "{}: an incremental checkpoint (RocksDB's own files, `{}`): this tool reads savepoints and whole checkpoints; take a savepoint of the job (stop-with-savepoint or a triggered one: savepoints are always whole) or checkpoint with `CheckpointConfig::incremental(false)`",
                dir.display(),
                part.display()
            )));
        }
        Ok(Self {
            dir,
            metadata,
            registry: SnapshotRegistry::default(),
        })
    }

    /// Reads values through `registry` (for states whose serializers have layouts of
    /// their own, registered as restorers) instead of the built-in kinds alone.
    pub fn with_registry(mut self, registry: SnapshotRegistry) -> Self {
        self.registry = registry;
        self
    }

    /// The restorers of serializer snapshots that type-free reading uses.
    pub fn registry(&self) -> &SnapshotRegistry {
        &self.registry
    }

    /// The savepoint's directory (the checkpoint's, when opened from a checkpoint
    /// directory).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Its `_metadata`.
    pub fn metadata(&self) -> &Metadata {
        &self.metadata
    }

    /// The operators `_metadata` lists, by key.
    pub fn operators(&self) -> impl Iterator<Item = Operator> + '_ {
        self.metadata
            .operators
            .iter()
            .map(|(key, (parallelism, name))| Operator {
                key: key.clone(),
                parallelism: *parallelism,
                name: name.clone(),
            })
    }

    /// The operator `id` names: a uid (`minute-totals`), or a key as `_metadata` writes it
    /// (`uid-minute-totals`, `node-3` for an operator without a uid). A uid is looked up
    /// first.
    ///
    /// # Errors
    ///
    /// [`Error::NotFound`] listing the operators there are.
    pub fn operator(&self, id: &str) -> Result<Operator> {
        let by_uid = checkpoint::operator_key(Some(id), 0);
        let found = [by_uid.as_str(), id]
            .into_iter()
            .find_map(|key| {
                self.metadata
                    .operators
                    .get_key_value(key)
                    .map(|(key, (parallelism, name))| Operator {
                        key: key.clone(),
                        parallelism: *parallelism,
                        name: name.clone(),
                    })
            })
            .ok_or_else(|| {
                let known: Vec<&str> = self.metadata.operators.keys().map(String::as_str).collect();
                Error::NotFound(format!(
                    "no operator `{id}` in {} (it has: {})",
                    self.dir.display(),
                    known.join(", ")
                ))
            });
        found
    }

    /// The directory of `operator`'s files.
    pub fn operator_dir(&self, operator: &Operator) -> PathBuf {
        self.dir.join(&operator.key)
    }

    /// The keyed state files (`.kstate`) of `operator`'s subtasks that exist, by subtask.
    pub fn keyed_files(&self, operator: &Operator) -> Vec<(u32, PathBuf)> {
        self.files(operator, checkpoint::kstate_path)
    }

    /// The operator state files (`.opstate`) of `operator`'s subtasks that exist.
    pub fn operator_state_files(&self, operator: &Operator) -> Vec<(u32, PathBuf)> {
        self.files(operator, checkpoint::opstate_path)
    }

    /// The operator-local parts (`.ostate`) of `operator`'s subtasks that exist.
    pub fn part_files(&self, operator: &Operator) -> Vec<(u32, PathBuf)> {
        self.files(operator, checkpoint::ostate_path)
    }

    fn files(&self, operator: &Operator, path: fn(&Path, usize) -> PathBuf) -> Vec<(u32, PathBuf)> {
        let dir = self.operator_dir(operator);
        (0..operator.parallelism)
            .map(|s| (s, path(&dir, s as usize)))
            .filter(|(_, p)| p.is_file())
            .collect()
    }

    /// Opens every keyed state file of `operator` and checks that each was written for
    /// this savepoint's max parallelism.
    pub(crate) fn open_keyed(&self, operator: &Operator) -> Result<Vec<(u32, SnapshotFile)>> {
        self.keyed_files(operator)
            .into_iter()
            .map(|(subtask, path)| {
                let path = &path;
                let file = SnapshotFile::open(path)?;
                if file.header().max_parallelism != self.metadata.max_parallelism {
                    return Err(Error::Corrupt(format!(
                        "{}: written for max parallelism {}, but `_metadata` says {}",
                        path.display(),
                        file.header().max_parallelism,
                        self.metadata.max_parallelism
                    )));
                }
                Ok((subtask, file))
            })
            .collect()
    }
}

/// An incremental keyed-state part (`subtask-<i>.native`) in a checkpoint directory, if
/// there is one.
fn incremental_part(dir: &Path) -> Option<PathBuf> {
    std::fs::read_dir(dir).ok()?.flatten().find_map(|op| {
        std::fs::read_dir(op.path())
            .ok()?
            .flatten()
            .map(|f| f.path())
            .find(|p| p.extension().is_some_and(|e| e == "native"))
    })
}
