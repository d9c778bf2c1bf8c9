//! Finding a checkpoint or savepoint to restore (`locate`), the list of completed
//! checkpoints, and what a restore hands each operator: its parts and files.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::checkpoint::format::checkpoint_epoch;
use crate::checkpoint::format::checkpoint_name;
use crate::checkpoint::format::operator_key;
use crate::checkpoint::format::shown;
use crate::checkpoint::format::subtask_file;
use crate::checkpoint::format::Metadata;
use crate::checkpoint::format::OperatorPart;
use crate::checkpoint::format::METADATA_FILE;
use crate::checkpoint::native_part::{self, KeyedFile};
use crate::checkpoint::storage::{join, Storage};
use crate::config::RestoreSettings;
use crate::error::{Error, Result};
use crate::plan::{StreamGraph, StreamNode};

/// Every `chk-<epoch>` directory under `root` with whether it is complete, oldest first.
fn checkpoints(root: &Storage) -> Result<Vec<(u64, bool)>> {
    let mut out = Vec::new();
    for name in root.list_dirs("")? {
        if let Some(epoch) = checkpoint_epoch(&name) {
            let complete = root.exists(&join(&name, METADATA_FILE))?;
            out.push((epoch, complete));
        }
    }
    out.sort();
    Ok(out)
}

/// The epochs of the completed checkpoints under `root`, oldest first.
pub(crate) fn completed(root: &Storage) -> Result<Vec<u64>> {
    Ok(checkpoints(root)?
        .into_iter()
        .filter(|(_, complete)| *complete)
        .map(|(epoch, _)| epoch)
        .collect())
}

/// Finds the snapshot `path` names: itself when it holds `_metadata`, else the latest
/// completed checkpoint under it (a checkpoint directory); returns its directory and
/// metadata.
///
/// # Errors
///
/// [`Error::Io`] for a path that does not exist, [`Error::Corrupt`] when it holds no
/// completed checkpoint or its `_metadata` is corrupt.
pub fn locate(path: &Path) -> Result<(PathBuf, Metadata)> {
    if !path.exists() {
        return Err(Error::Io {
            path: path.to_owned(),
            source: std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "no such checkpoint or savepoint",
            ),
        });
    }
    let (chk, metadata) = locate_in(&Storage::local(path))?;
    let dir = chk
        .local_dir()
        .map_or_else(|| path.to_owned(), Path::to_owned);
    Ok((dir, metadata))
}

/// [`locate`] in any storage: the snapshot's directory (as a storage) and metadata.
pub(crate) fn locate_in(location: &Storage) -> Result<(Storage, Metadata)> {
    let chk = if location.exists(METADATA_FILE)? {
        location.clone()
    } else {
        match completed(location)?.pop() {
            Some(epoch) => location.child(&checkpoint_name(epoch)),
            None if !location.has_any("")? => {
                return Err(Error::Io {
                    path: shown(location, ""),
                    source: std::io::Error::new(
                        std::io::ErrorKind::NotFound,
                        "no such checkpoint or savepoint",
                    ),
                })
            }
            None => {
                return Err(Error::Corrupt(format!(
                    "{}: no completed checkpoint (no chk-*/_metadata)",
                    location.describe("")
                )))
            }
        }
    };
    let metadata = Metadata::read_from(&chk)?;
    Ok((chk, metadata))
}

/// What a job restores from, checked against its graph.
#[derive(Debug, Clone)]
pub(crate) struct Restore {
    /// The checkpoint's (or savepoint's) directory.
    pub(crate) dir: Storage,
    pub(crate) metadata: Metadata,
}

/// The local files of one operator's state in a snapshot, for its restore: in place for a
/// local snapshot, downloaded into a scratch directory (removed when this is dropped) for
/// one in an object store.
pub(crate) struct RestoreFiles {
    /// The keyed state of every old subtask.
    pub(crate) keyed: Vec<KeyedFile>,
    /// The operator state files of every old subtask.
    pub(crate) operator_state: Vec<PathBuf>,
    _scratch: Option<tempfile::TempDir>,
}

impl Restore {
    /// Checks `metadata` against the graph: the same max parallelism, sources at their old
    /// parallelism, and no operator state without an operator (unless allowed).
    pub(crate) fn check(settings: &RestoreSettings, graph: &StreamGraph) -> Result<Self> {
        let (dir, metadata) = locate_in(&Storage::open(&settings.path)?)?;
        let shown = dir.describe("");
        if metadata.max_parallelism != graph.max_parallelism() {
            return Err(Error::Config(format!(
                "{shown} was written with max parallelism {}, the job has {}: key groups would not match (set the job's max parallelism to {})",
                metadata.max_parallelism,
                graph.max_parallelism(),
                metadata.max_parallelism
            )));
        }
        let keys: BTreeMap<String, &StreamNode> = graph
            .nodes()
            .iter()
            .map(|n| (operator_key(n.uid(), n.id()), n))
            .collect();
        for (key, (p, name)) in &metadata.operators {
            match keys.get(key) {
                None if !settings.allow_non_restored_state && dir.has_any(key)? => {
                    return Err(Error::Config(format!(
                        "{shown} holds state of operator `{name}` ({key}), which this job does not have; \
                         give the operator its old uid, or allow non-restored state to drop it"
                    )));
                }
                Some(node) if graph.is_source(node.id()) && node.parallelism() != *p => {
                    return Err(Error::Config(format!(
                        "source `{}` ran at parallelism {p} in {shown}; sources restore at their old parallelism",
                        node.name(),
                    )));
                }
                _ => {}
            }
        }
        Ok(Restore { dir, metadata })
    }

    /// The operator-local parts of every old subtask of `key` (empty for a new operator).
    /// Whether every old subtask of `key` had ended (its input exhausted) before the
    /// snapshot: its state is its final state, and its input is not ended again.
    pub(crate) fn finished(&self, key: &str) -> Result<bool> {
        let parts = self.files(key, "ostate")?.len();
        Ok(parts > 0 && self.files(key, "finished")?.len() == parts)
    }

    pub(crate) fn parts(&self, key: &str) -> Result<Vec<OperatorPart>> {
        let mut parts = Vec::new();
        for rel in self.files(key, "ostate")? {
            parts.push(OperatorPart::read_from(&self.dir, &rel)?);
        }
        Ok(parts)
    }

    /// The local files of `key`'s keyed and operator state: full files of the savepoint
    /// format or incremental parts (their objects in the checkpoint root), and operator
    /// state files, of every old subtask (none for a new operator).
    pub(crate) fn fetch(&self, key: &str) -> Result<RestoreFiles> {
        let scratch = match self.dir.local_dir() {
            Some(_) => None,
            None => Some(crate::checkpoint::storage::scratch_dir()?),
        };
        let at = scratch.as_ref().map_or(Path::new(""), |s| s.path());
        let root = self.dir.parent().unwrap_or_else(|| self.dir.clone());
        let mut keyed = Vec::new();
        for rel in self.files(key, "kstate")? {
            keyed.push(KeyedFile::Full(self.dir.local_copy(&rel, at)?));
        }
        for rel in self.files(key, "native")? {
            keyed.push(KeyedFile::Native {
                part: self.dir.local_copy(&rel, at)?,
                root: root.clone(),
            });
        }
        let mut operator_state = Vec::new();
        for rel in self.files(key, "opstate")? {
            operator_state.push(self.dir.local_copy(&rel, at)?);
        }
        Ok(RestoreFiles {
            keyed,
            operator_state,
            _scratch: scratch,
        })
    }

    /// The files of kind `extension` of every old subtask of `key` that wrote one.
    fn files(&self, key: &str, extension: &str) -> Result<Vec<String>> {
        let Some((p, _)) = self.metadata.operators.get(key) else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for s in 0..*p as usize {
            let rel = join(key, &subtask_file(s, extension));
            if self.dir.exists(&rel)? {
                out.push(rel);
            }
        }
        Ok(out)
    }
}

/// Copies the completed checkpoint `chk` to `target` (a savepoint): files first,
/// `_metadata` last. Incremental keyed-state parts become keyed state files of the
/// savepoint format (their objects are in `chk`'s parent, the checkpoint root).
pub(crate) fn copy_checkpoint(chk: &Storage, target: &Storage) -> Result<()> {
    let root = chk.parent().unwrap_or_else(|| chk.clone());
    let scratch = crate::checkpoint::storage::scratch_dir()?;
    for file in chk.list("")? {
        let name = file.name.rsplit('/').next().unwrap_or_default();
        // Only the operators' folders are copied (and `_metadata`, last); names with a dot
        // in front are temporary files of writes in progress.
        if !file.name.contains('/') || name.starts_with('.') {
            continue;
        }
        let local = chk.local_copy(&file.name, scratch.path())?;
        if let Some(stem) = file.name.strip_suffix(".native") {
            let out = scratch.path().join("canonical.kstate");
            native_part::to_canonical(&local, &root, &out)?;
            target.put_file(&format!("{stem}.kstate"), &out)?;
        } else {
            target.put_file(&file.name, &local)?;
        }
    }
    target.put(METADATA_FILE, &chk.read(METADATA_FILE)?)
}
