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
use crate::checkpoint::native_part::{self, KeyedFile, NativePart, SHARED_DIR};
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

/// Finds the snapshot `path` names: itself when it holds `_metadata` (its `_metadata`
/// checked; its parts are checked as they are read), else the newest completed checkpoint
/// under it (a checkpoint directory) that verifies whole (`_metadata` and every part); returns
/// its directory and metadata. A checkpoint that does not verify is skipped for the one
/// before it, and the skip is said on stderr with the reason.
///
/// # Errors
///
/// [`Error::Io`] for a path that does not exist; [`Error::Corrupt`] when it holds no
/// completed checkpoint; [`Error::Damaged`] when the snapshot it names is damaged, or every
/// retained checkpoint is (naming each and its damaged file).
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
    if location.exists(METADATA_FILE)? {
        // A snapshot named by the user: used as it is, never another one; its `_metadata` is
        // checked here, each part as the restore (or the savepoint tool) reads it, and a
        // damaged part fails with its name.
        let metadata = Metadata::read_from(location)?;
        return Ok((location.clone(), metadata));
    }
    let epochs = completed(location)?;
    if epochs.is_empty() {
        if !location.has_any("")? {
            return Err(Error::Io {
                path: shown(location, ""),
                source: std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    "no such checkpoint or savepoint",
                ),
            });
        }
        return Err(Error::Corrupt(format!(
            "{}: no completed checkpoint (no chk-*/_metadata)",
            location.describe("")
        )));
    }
    let mut skipped = Vec::new();
    for epoch in epochs.iter().rev() {
        let chk = location.child(&checkpoint_name(*epoch));
        match verify(&chk) {
            Ok(metadata) => return Ok((chk, metadata)),
            Err(e @ Error::Damaged { .. }) => {
                eprintln!(
                    "restore: skipped checkpoint {}, which does not verify: {e}",
                    chk.describe("")
                );
                skipped.push(e.to_string());
            }
            Err(e) => return Err(e),
        }
    }
    Err(Error::Damaged {
        path: location.describe(""),
        what: format!(
            "none of its {} retained checkpoints verifies: {}",
            skipped.len(),
            skipped.join("; ")
        ),
    })
}

/// Checks a completed checkpoint or savepoint whole before it is restored: its `_metadata`
/// (checksum, ranges), then every part of every subtask it lists, where written: its
/// `.ostate`, its `.kstate` and `.opstate` (read and checked by the state crate: magics,
/// checksum, index) and its `.native` part (checksum, and each shared SST file it refers to
/// present at its recorded size; the SST files' checksums are checked as they are read at
/// restore). Parts in an object store are downloaded into a scratch directory to be checked.
///
/// # Errors
///
/// [`Error::Damaged`] naming the first file that does not verify, or a shared file that a
/// part refers to and that is missing; [`Error::Io`] or [`Error::Storage`] when a file cannot be read at all.
pub(crate) fn verify(chk: &Storage) -> Result<Metadata> {
    let metadata = Metadata::read_from(chk)?;
    let scratch = match chk.local_dir() {
        Some(_) => None,
        None => Some(crate::checkpoint::storage::scratch_dir()?),
    };
    let at = scratch.as_ref().map_or(Path::new(""), |s| s.path());
    let root = chk.parent().unwrap_or_else(|| chk.clone());
    for (key, (parallelism, _)) in &metadata.operators {
        let mut shared: Option<BTreeMap<String, u64>> = None;
        for subtask in 0..*parallelism as usize {
            // A part that is absent was not written (a savepoint made by the savepoint tool
            // has no operator-local parts; a stateless operator has no keyed state).
            let ostate = join(key, &subtask_file(subtask, "ostate"));
            if chk.exists(&ostate)? {
                OperatorPart::read_from(chk, &ostate)?;
            }
            for (extension, check) in [
                ("kstate", check_keyed_file as fn(&Path) -> Result<()>),
                ("opstate", check_operator_state_file),
            ] {
                let rel = join(key, &subtask_file(subtask, extension));
                if chk.exists(&rel)? {
                    check(&chk.local_copy(&rel, at)?)?;
                }
            }
            let native = join(key, &subtask_file(subtask, "native"));
            if chk.exists(&native)? {
                let part = NativePart::read(&chk.local_copy(&native, at)?)?;
                let sizes = match &mut shared {
                    Some(sizes) => sizes,
                    None => shared.insert(shared_sizes(&root, key)?),
                };
                for object in part.objects() {
                    let path = join(SHARED_DIR, &object.object);
                    match sizes.get(&object.object) {
                        Some(&bytes) if bytes == object.bytes => {}
                        Some(&bytes) => {
                            return Err(Error::Damaged {
                                path: root.describe(&path),
                                what: format!(
                                    "truncated or replaced: {bytes} bytes, the part {} records {}",
                                    chk.describe(&native),
                                    object.bytes
                                ),
                            })
                        }
                        None => {
                            return Err(Error::Damaged {
                                path: root.describe(&path),
                                what: format!(
                                    "missing, and {} refers to it",
                                    chk.describe(&native)
                                ),
                            })
                        }
                    }
                }
            }
        }
    }
    Ok(metadata)
}

/// The shared objects of operator `key` under the checkpoint root, with their sizes, by
/// their name under `shared/` (`<operator>/<object>`).
fn shared_sizes(root: &Storage, key: &str) -> Result<BTreeMap<String, u64>> {
    let dir = join(SHARED_DIR, key);
    Ok(root
        .list(&dir)?
        .into_iter()
        .map(|listed| (join(key, &listed.name), listed.bytes))
        .collect())
}

/// A keyed state file of the savepoint format, read and checked by the state crate.
fn check_keyed_file(path: &Path) -> Result<()> {
    typeinfo_state::savepoint::SnapshotFile::open(path)
        .map(drop)
        .map_err(damaged)
}

/// An operator state file, read and checked by the state crate.
fn check_operator_state_file(path: &Path) -> Result<()> {
    typeinfo_state::OperatorStateFile::open(path)
        .map(drop)
        .map_err(damaged)
}

/// The state crate's word for a damaged file, as this crate's.
fn damaged(e: typeinfo_state::Error) -> Error {
    match e {
        typeinfo_state::Error::CorruptSavepoint { path, detail } => Error::Damaged {
            path: path.display().to_string(),
            what: detail,
        },
        other => other.into(),
    }
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
                Some(node)
                    if graph.is_source(node.id())
                        && node.parallelism() != *p
                        && !node.rescalable =>
                {
                    return Err(Error::Config(format!(
                        "source `{}` ran at parallelism {p} in {shown}; a source whose splits depend on its parallelism restores at its old parallelism (see `Source::rescalable`)",
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
