//! Checkpoints, savepoints and restore.
//!
//! A job's timely timestamps are checkpoint epochs. Every `interval`, each source subtask
//! records its position and moves on to the next epoch. Operators process their input one
//! epoch at a time (records of a later epoch that arrive early wait, which is the alignment
//! of Flink's aligned checkpoints); when an operator's input frontier passes epoch `e`, it
//! has seen everything before the cut and writes its part of checkpoint `e`: keyed state
//! through the state crate's savepoint format (one file per subtask, for either backend),
//! and a small file of operator-local state (watermark, source position, the operator's
//! own bytes). Each part is written under a temporary name, synced and renamed. A
//! coordinator on worker 0 watches every operator's progress; once every subtask has moved
//! past `e` and every part of `e` is on disk, it writes the checkpoint's `_metadata` (the
//! completion marker), publishes the file sinks' output up to `e`, and deletes checkpoints
//! older than the last `retained` ones.
//!
//! A savepoint is a completed checkpoint copied to a directory of the user's choosing, never
//! deleted by the job. Both are in one format, independent of the state backend, so a job
//! restores from either into either backend, at another parallelism (keyed state moves by
//! key group; operator-local state takes the minimum watermark of the old subtasks), and
//! with evolved types (migrated on restore; the job result lists what was migrated).
//!
//! Layout of a checkpoint directory (`<dir>/chk-<epoch>/`):
//!
//! ```text
//! _metadata                       completion marker (text; see `Metadata`)
//! <operator>/subtask-<i>.ostate   operator-local state of subtask i
//! <operator>/subtask-<i>.kstate   keyed state of subtask i (state/FORMAT.md)
//! <operator>/subtask-<i>.opstate  operator state of subtask i (state/FORMAT.md, `TIOS`)
//! <operator>/subtask-<i>.native   keyed state of subtask i, incremental (RocksDB; FORMAT.md)
//! ```
//!
//! With RocksDB state, checkpoints are incremental by default
//! ([`CheckpointConfig::incremental`]): a subtask's keyed state is a native RocksDB
//! checkpoint whose SST files are uploaded once into `<dir>/shared/<operator>/` and referred
//! to by every later checkpoint that still holds them, with reference counting at retention
//! (see [`crate::native_part`]'s docs for the layout, the naming and why deletion is safe). A
//! savepoint is always written in the backend-independent format: copying a checkpoint into
//! a savepoint converts its incremental parts.
//!
//! `<operator>` is `uid-<uid>` for operators with a uid and `node-<id>` otherwise (set uids
//! on stateful operators of jobs that will change).
//!
//! The directory may be local or a prefix in an object store (`s3://bucket/prefix`, ...):
//! the store reads and writes it through [`crate::storage::Storage`], whose promises (a write
//! is whole or absent, listing shows every completed write) are all the rules above need. A
//! subtask restoring from an object store downloads its operator's files (every old
//! subtask's: the state crate keeps the key groups the subtask owns) into a scratch
//! directory that is removed after the restore.
//!
//! A source subtask whose input ends (its splits are read, while other subtasks still run)
//! takes no part in later epochs, yet every later checkpoint needs its part: when it ends it
//! writes its last part (its end position) for the current epoch and to
//! `<dir>/ended/<operator>/subtask-<i>.ostate`, and the coordinator copies that file into
//! each later checkpoint before completing it, so that checkpoints keep completing (and
//! sinks keep publishing) while the other subtasks run, as Flink does for finished tasks.
//!
//! The end of a job (every input exhausted, no stop-with-savepoint) is a step of its own, so
//! that a two-phase sink publishes its output after the last checkpoint exactly once. When
//! its input ends, each sink subtask prepares what it has not committed yet (everything
//! since the last completed checkpoint, and the records after the last cut) and writes it
//! as its *final part*, `<dir>/final/<operator>/subtask-<i>.ostate`, without committing
//! anything. Once every operator has ended, the coordinator writes `<dir>/_finished`
//! (atomically), then commits the final parts. A process killed before `_finished` exists
//! restores from the last completed checkpoint, whose restore aborts the staged output (the
//! sink's `recover`) and replays; one killed after it finds `_finished` when restored from
//! the directory, commits the final parts again (commits are idempotent) and ends at once:
//! the job had finished. A run that does not restore from the directory removes both.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use typeinfo::{DataInputView, DataOutputView};

pub use crate::config::{CheckpointConfig, RestoreSettings};
use crate::error::{Error, Result};
use crate::native_part::{self, KeyedFile, NativePart, SharedFiles, SHARED_DIR};
use crate::plan::{StreamGraph, StreamNode};
use crate::storage::{join, Storage};

/// The marker of a job that ran to its end (in the checkpoint root).
const FINISHED_FILE: &str = "_finished";

/// Where sinks leave their final parts (in the checkpoint root).
const FINAL_DIR: &str = "final";

/// Where source subtasks whose input ended leave their last part (in the checkpoint root).
const ENDED_DIR: &str = "ended";
/// The content of a subtask's `finished` mark.
const FINISHED_MARK: &[u8] = b"typeinfo operator subtask finished\n";

/// The completion marker of a checkpoint directory (written last).
pub const METADATA_FILE: &str = "_metadata";

const OSTATE_MAGIC: &[u8; 4] = b"TIOP";
const OSTATE_VERSION: u8 = 1;
/// The first line of `_metadata` as written today: version 2 ends with a checksum line.
const METADATA_HEADER: &str = "typeinfo checkpoint v2";
/// The first line of `_metadata` written before it had a checksum (still read).
const METADATA_HEADER_V1: &str = "typeinfo checkpoint v1";
/// The largest epoch a checkpoint may carry: a restored job continues at `epoch + 1`, and
/// epochs are timely timestamps that must never wrap.
pub(crate) const MAX_EPOCH: u64 = i64::MAX as u64;
/// The largest max parallelism (Flink's limit, the key-group count a state file can hold).
const MAX_MAX_PARALLELISM: u64 = 32_768;

/// The directory name of an operator's state: `uid-<uid>` for an operator with a uid,
/// `node-<id>` otherwise. It is also the operator's key in [`Metadata::operators`].
pub fn operator_key(uid: Option<&str>, node: usize) -> String {
    match uid {
        Some(uid) => format!("uid-{uid}"),
        None => format!("node-{node}"),
    }
}

/// The name of checkpoint `epoch`'s directory (`chk-<epoch>`).
pub(crate) fn checkpoint_name(epoch: u64) -> String {
    format!("chk-{epoch}")
}

/// The name of subtask `subtask`'s file of kind `extension` (`subtask-<i>.<extension>`).
fn subtask_file(subtask: usize, extension: &str) -> String {
    format!("subtask-{subtask}.{extension}")
}

/// The message path of `rel` in `storage` (errors name the file, local or remote).
fn shown(storage: &Storage, rel: &str) -> PathBuf {
    PathBuf::from(storage.describe(rel))
}

/// The operator-local state of one subtask (a `.ostate` file, `FORMAT.md`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OperatorPart {
    /// The operator's input watermark (`i64::MIN` for sources).
    pub watermark: i64,
    /// The operator's own bytes (a source's position, a generator's state, ...).
    pub data: Vec<u8>,
}

impl OperatorPart {
    fn encode(&self) -> Vec<u8> {
        let mut out = DataOutputView::new();
        out.write_bytes(OSTATE_MAGIC);
        out.write_u8(OSTATE_VERSION);
        out.write_i64(self.watermark);
        out.write_len_prefixed(&self.data);
        let crc = crc32fast::hash(out.as_slice());
        out.write_u32(crc);
        out.into_inner()
    }

    pub(crate) fn decode(path: &Path, bytes: &[u8]) -> Result<Self> {
        let corrupt = |detail: String| Error::Corrupt(format!("{}: {detail}", path.display()));
        if bytes.len() < 4 + 1 + 8 + 1 + 4 || &bytes[..4] != OSTATE_MAGIC {
            return Err(corrupt("not an operator state file".into()));
        }
        let Some((body, crc)) = bytes.split_last_chunk::<4>() else {
            return Err(corrupt("not an operator state file".into()));
        };
        if crc32fast::hash(body) != u32::from_le_bytes(*crc) {
            return Err(corrupt("checksum mismatch".into()));
        }
        let mut input = DataInputView::new(&body[4..]);
        let version = input.read_u8().map_err(|e| corrupt(e.to_string()))?;
        if version != OSTATE_VERSION {
            return Err(corrupt(format!(
                "version {version}, this build reads {OSTATE_VERSION}"
            )));
        }
        let watermark = input.read_i64().map_err(|e| corrupt(e.to_string()))?;
        let data = input
            .read_len_prefixed()
            .map_err(|e| corrupt(e.to_string()))?
            .to_vec();
        if !input.is_empty() {
            return Err(corrupt("bytes after the state".into()));
        }
        Ok(OperatorPart { watermark, data })
    }

    /// Writes the part as `<dir>/subtask-<i>.ostate` in `storage` (whole or not at all).
    pub(crate) fn write_to(&self, storage: &Storage, dir: &str, subtask: usize) -> Result<()> {
        storage.put(&join(dir, &subtask_file(subtask, "ostate")), &self.encode())
    }

    /// Reads and checks the part at `rel` in `storage`.
    pub(crate) fn read_from(storage: &Storage, rel: &str) -> Result<Self> {
        Self::decode(&shown(storage, rel), &storage.read(rel)?)
    }

    /// Reads and checks the `.ostate` file at `path` (magic, version, checksum, length).
    ///
    /// # Errors
    ///
    /// [`Error::Io`] when it cannot be read, [`Error::Corrupt`] for a damaged or foreign
    /// file.
    pub fn read(path: &Path) -> Result<Self> {
        let bytes = std::fs::read(path).map_err(|source| Error::Io {
            path: path.to_owned(),
            source,
        })?;
        Self::decode(path, &bytes)
    }
}

/// The part subtask `subtask` wrote in `dir` of `storage`, if it wrote one.
fn find_part_in(storage: &Storage, dir: &str, subtask: usize) -> Result<Option<OperatorPart>> {
    let rel = join(dir, &subtask_file(subtask, "ostate"));
    if !storage.exists(&rel)? {
        return Ok(None);
    }
    OperatorPart::read_from(storage, &rel).map(Some)
}

/// The operator-local part of subtask `subtask` in an operator's directory `dir`.
pub fn ostate_path(dir: &Path, subtask: usize) -> PathBuf {
    dir.join(subtask_file(subtask, "ostate"))
}

/// The keyed state file of subtask `subtask` in an operator's directory `dir`.
pub fn kstate_path(dir: &Path, subtask: usize) -> PathBuf {
    dir.join(subtask_file(subtask, "kstate"))
}

/// The incremental keyed-state part of subtask `subtask` in an operator's directory `dir`.
pub fn native_path(dir: &Path, subtask: usize) -> PathBuf {
    dir.join(subtask_file(subtask, "native"))
}

/// The operator state file of subtask `subtask` in an operator's directory `dir`.
pub fn opstate_path(dir: &Path, subtask: usize) -> PathBuf {
    dir.join(subtask_file(subtask, "opstate"))
}

/// The completion marker of a checkpoint or savepoint (`_metadata`, `FORMAT.md`): its
/// epoch, the job's max parallelism, and which operators it holds at what parallelism.
///
/// # Examples
///
/// ```no_run
/// use typeinfo_runtime::checkpoint::Metadata;
///
/// # fn main() -> typeinfo_runtime::Result<()> {
/// let metadata = Metadata::read("savepoint".as_ref())?;
/// for (key, (parallelism, name)) in &metadata.operators {
///     println!("{key}: `{name}` at parallelism {parallelism}");
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Metadata {
    /// The checkpoint's epoch (a restored job continues at `epoch + 1`).
    pub epoch: u64,
    /// The job's max parallelism (the number of key groups).
    pub max_parallelism: u32,
    /// Operator key ([`operator_key`]: `uid-<uid>` or `node-<id>`) -> (parallelism, name).
    pub operators: BTreeMap<String, (u32, String)>,
}

impl Metadata {
    pub(crate) fn of(graph: &StreamGraph, epoch: u64) -> Self {
        let operators = graph
            .nodes()
            .iter()
            .map(|n| {
                (
                    operator_key(n.uid(), n.id()),
                    (n.parallelism(), n.name().to_owned()),
                )
            })
            .collect();
        Metadata {
            epoch,
            max_parallelism: graph.max_parallelism(),
            operators,
        }
    }

    /// The text of `_metadata`: a header, `epoch`, `max_parallelism`, one `operator` line per
    /// operator, and `crc32 <8 hex digits>` of every byte before that line.
    fn encode(&self) -> String {
        let mut s = format!(
            "{METADATA_HEADER}\nepoch {}\nmax_parallelism {}\n",
            self.epoch, self.max_parallelism
        );
        for (key, (p, name)) in &self.operators {
            // Names are free text for people; keep the file one operator a line.
            let name = name.replace(['\n', '\r'], " ");
            s.push_str(&format!("operator {key} {p} {name}\n"));
        }
        let crc = crc32fast::hash(s.as_bytes());
        s.push_str(&format!("crc32 {crc:08x}\n"));
        s
    }

    /// Writes `_metadata` into the directory `chk` (temporary name, sync, rename): the
    /// completion marker, so write it after every other file.
    ///
    /// # Errors
    ///
    /// [`Error::Corrupt`] for metadata that would not read back (a number out of range, an
    /// operator key with a space or a line break), naming the file; an I/O error.
    pub fn write(&self, chk: &Path) -> Result<()> {
        self.write_to(&Storage::local(chk))
    }

    /// Writes `_metadata` into the checkpoint directory `chk`, as [`Metadata::write`].
    pub(crate) fn write_to(&self, chk: &Storage) -> Result<()> {
        let text = self.encode();
        // What could not be read back is refused before anything is written (operator
        // names are free text: their line breaks are written as spaces).
        Self::parse(&shown(chk, METADATA_FILE), &text)?;
        chk.put(METADATA_FILE, text.as_bytes())
    }

    /// Reads and checks `_metadata` in the directory `chk` (checksum, every number in its
    /// range).
    ///
    /// # Errors
    ///
    /// [`Error::Io`] when it cannot be read, [`Error::Corrupt`] for a damaged, truncated
    /// or foreign file.
    pub fn read(chk: &Path) -> Result<Self> {
        Self::read_from(&Storage::local(chk))
    }

    /// Reads and checks `_metadata` in the checkpoint directory `chk`, as [`Metadata::read`].
    pub(crate) fn read_from(chk: &Storage) -> Result<Self> {
        let path = shown(chk, METADATA_FILE);
        let bytes = chk.read(METADATA_FILE)?;
        let text = String::from_utf8(bytes)
            .map_err(|_| Error::Corrupt(format!("{}: not text", path.display())))?;
        Self::parse(&path, &text)
    }

    /// Parses the text of `_metadata` (from `path`, for messages); every number is checked
    /// against its range, and a version 2 file against its checksum.
    fn parse(path: &Path, text: &str) -> Result<Self> {
        let corrupt = |what: &str| Error::Corrupt(format!("{}: {what}", path.display()));
        let header = text.lines().next();
        let body = match header {
            Some(METADATA_HEADER) => {
                // The checksum line is the last line; it covers every byte before it.
                let trimmed = text
                    .strip_suffix('\n')
                    .ok_or_else(|| corrupt("truncated (no final newline)"))?;
                let at = trimmed
                    .rfind('\n')
                    .ok_or_else(|| corrupt("no checksum line"))?;
                let (body, last) = (&text[..at + 1], &trimmed[at + 1..]);
                let stored = last
                    .strip_prefix("crc32 ")
                    .filter(|hex| hex.len() == 8)
                    .and_then(|hex| u32::from_str_radix(hex, 16).ok())
                    .ok_or_else(|| corrupt("no checksum line"))?;
                if crc32fast::hash(body.as_bytes()) != stored {
                    return Err(corrupt("checksum mismatch"));
                }
                body
            }
            Some(METADATA_HEADER_V1) => text,
            _ => return Err(corrupt("not a typeinfo checkpoint")),
        };
        let mut lines = body.lines().skip(1);
        let mut field = |name: &str, max: u64| -> Result<u64> {
            let value = lines
                .next()
                .and_then(|l| l.strip_prefix(name))
                .and_then(|l| l.strip_prefix(' '))
                .and_then(|v| v.parse::<u64>().ok())
                .ok_or_else(|| corrupt(&format!("missing `{name}`")))?;
            if value > max {
                return Err(corrupt(&format!("`{name}` {value} is above {max}")));
            }
            Ok(value)
        };
        let epoch = field("epoch", MAX_EPOCH)?;
        let max_parallelism = u32::try_from(field("max_parallelism", MAX_MAX_PARALLELISM)?)
            .map_err(|_| corrupt("`max_parallelism` out of range"))?;
        if max_parallelism == 0 {
            return Err(corrupt("`max_parallelism` 0"));
        }
        let mut operators = BTreeMap::new();
        for line in lines {
            let mut parts = line.splitn(4, ' ');
            match (
                parts.next(),
                parts.next(),
                parts.next().and_then(|p| p.parse::<u32>().ok()),
                parts.next(),
            ) {
                (Some("operator"), Some(key), Some(p), Some(name))
                    // `encode` writes a `\r` of a name as a space: one that reads must be written back the same.
                    if (1..=max_parallelism).contains(&p) && !name.contains('\r') =>
                {
                    if operators
                        .insert(key.to_owned(), (p, name.to_owned()))
                        .is_some()
                    {
                        return Err(corrupt(&format!("operator `{key}` listed twice")));
                    }
                }
                _ => return Err(corrupt(&format!("bad line `{line}`"))),
            }
        }
        Ok(Metadata {
            epoch,
            max_parallelism,
            operators,
        })
    }
}

/// The epoch of a checkpoint directory's name (`chk-<epoch>`): the one place that parses it.
pub(crate) fn checkpoint_epoch(name: &str) -> Option<u64> {
    name.strip_prefix("chk-")
        .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|n| n.parse::<u64>().ok())
}

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
            None => Some(crate::storage::scratch_dir()?),
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
    let scratch = crate::storage::scratch_dir()?;
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

/// The checkpoints of one job under its checkpoint directory (local or in an object store):
/// the only code that knows the layout (`chk-<epoch>/<operator>/subtask-<i>.{ostate,kstate}`,
/// `_metadata`), writes parts atomically, completes checkpoints, retains the last ones and
/// cleans up before a run.
#[derive(Debug, Clone)]
pub(crate) struct CheckpointStore {
    root: Storage,
    /// RocksDB state is written as incremental parts.
    incremental: bool,
    /// The shared objects each completed checkpoint refers to, by epoch, as read at
    /// retention (its parts never change; a run's store starts empty).
    objects: std::sync::Arc<std::sync::Mutex<BTreeMap<u64, Vec<String>>>>,
    /// Checkpoints known to be complete (a completed checkpoint stays complete until it is
    /// deleted, and its directory then leaves the listing), so that listing the checkpoints
    /// asks the storage only about the others.
    known_complete: std::sync::Arc<std::sync::Mutex<BTreeSet<u64>>>,
}

impl CheckpointStore {
    /// The store at `location` (a path or a storage URL), writing whole checkpoints.
    pub(crate) fn open(location: &Path) -> Result<Self> {
        Ok(CheckpointStore {
            root: Storage::open(location)?,
            incremental: false,
            objects: Default::default(),
            known_complete: Default::default(),
        })
    }

    /// The store of `config`'s directory, incremental as it says.
    pub(crate) fn of(config: &CheckpointConfig) -> Result<Self> {
        Ok(CheckpointStore {
            root: Storage::open(&config.dir)?,
            incremental: config.incremental,
            objects: Default::default(),
            known_complete: Default::default(),
        })
    }

    /// The checkpoint root.
    pub(crate) fn root(&self) -> &Storage {
        &self.root
    }

    /// The directory of operator `key` in checkpoint `epoch` (relative to the root).
    fn operator_dir(epoch: u64, key: &str) -> String {
        join(&checkpoint_name(epoch), key)
    }

    /// Where and how subtask `subtask` of operator `key` writes the keyed state of
    /// checkpoint `epoch`.
    pub(crate) fn keyed_part(&self, epoch: u64, key: &str, subtask: usize) -> KeyedPart<'_> {
        let dir = Self::operator_dir(epoch, key);
        KeyedPart {
            store: self,
            full: join(&dir, &subtask_file(subtask, "kstate")),
            native: join(&dir, &subtask_file(subtask, "native")),
            full_only: false,
            key: key.to_owned(),
            epoch,
            subtask,
        }
    }

    /// Where an operator subtask whose input ended (while the job goes on) writes its final
    /// keyed state: a full file among its ended parts.
    pub(crate) fn ended_keyed_part(&self, epoch: u64, key: &str, subtask: usize) -> KeyedPart<'_> {
        let dir = join(ENDED_DIR, key);
        KeyedPart {
            store: self,
            full: join(&dir, &subtask_file(subtask, "kstate")),
            native: join(&dir, &subtask_file(subtask, "native")),
            full_only: true,
            key: key.to_owned(),
            epoch,
            subtask,
        }
    }

    /// Writes the final operator state of an operator subtask whose input ended.
    pub(crate) fn write_ended_operator_state(
        &self,
        key: &str,
        subtask: usize,
        write: impl FnOnce(&Path) -> Result<()>,
    ) -> Result<()> {
        let rel = join(&join(ENDED_DIR, key), &subtask_file(subtask, "opstate"));
        self.root.write_with(&rel, write)
    }

    /// Writes the final part of an operator subtask whose input ended, after its keyed and
    /// operator state ([`ended_keyed_part`](Self::ended_keyed_part),
    /// [`write_ended_operator_state`](Self::write_ended_operator_state)): every later
    /// checkpoint gets these files, marked finished, so that a restore neither waits for
    /// the subtask nor ends its input a second time (Flink's checkpoints after tasks
    /// finished).
    pub(crate) fn write_ended_operator_part(
        &self,
        key: &str,
        subtask: usize,
        part: &OperatorPart,
    ) -> Result<()> {
        let dir = join(ENDED_DIR, key);
        self.root.put(
            &join(&dir, &subtask_file(subtask, "finished")),
            FINISHED_MARK,
        )?;
        part.write_to(&self.root, &dir, subtask)
    }

    /// Writes the operator state of subtask `subtask` of operator `key` in checkpoint
    /// `epoch` with `write`, which is handed the local path to write it to.
    pub(crate) fn write_operator_state(
        &self,
        epoch: u64,
        key: &str,
        subtask: usize,
        write: impl FnOnce(&Path) -> Result<()>,
    ) -> Result<()> {
        let rel = join(
            &Self::operator_dir(epoch, key),
            &subtask_file(subtask, "opstate"),
        );
        self.root.write_with(&rel, write)
    }

    /// Writes the operator-local part of one subtask (written last: its presence says the
    /// subtask's part of the checkpoint is whole).
    pub(crate) fn write_part(
        &self,
        epoch: u64,
        key: &str,
        subtask: usize,
        part: &OperatorPart,
    ) -> Result<()> {
        part.write_to(&self.root, &Self::operator_dir(epoch, key), subtask)
    }

    /// Reads the operator part of one subtask of checkpoint `epoch`.
    pub(crate) fn read_part(&self, epoch: u64, key: &str, subtask: usize) -> Result<OperatorPart> {
        let rel = join(
            &Self::operator_dir(epoch, key),
            &subtask_file(subtask, "ostate"),
        );
        OperatorPart::read_from(&self.root, &rel)
    }

    /// Writes the final part of a sink's subtask: what it had not committed when its input
    /// ended (see the module docs).
    pub(crate) fn write_final_part(
        &self,
        key: &str,
        subtask: usize,
        part: &OperatorPart,
    ) -> Result<()> {
        part.write_to(&self.root, &join(FINAL_DIR, key), subtask)
    }

    /// The final part of a sink's subtask, if it wrote one.
    pub(crate) fn find_final_part(
        &self,
        key: &str,
        subtask: usize,
    ) -> Result<Option<OperatorPart>> {
        find_part_in(&self.root, &join(FINAL_DIR, key), subtask)
    }

    /// Writes the last part of a source subtask whose input ended: its part of checkpoint
    /// `epoch`, and the copy that stands in for it in every later checkpoint.
    pub(crate) fn write_ended_source_part(
        &self,
        epoch: u64,
        key: &str,
        subtask: usize,
        part: &OperatorPart,
    ) -> Result<()> {
        self.write_part(epoch, key, subtask, part)?;
        part.write_to(&self.root, &join(ENDED_DIR, key), subtask)
    }

    /// Gives checkpoint `epoch` the last part of every subtask that ended before it (a
    /// source at its end, an operator whose every input ended: they write no more parts),
    /// with an operator's final keyed and operator state and its `finished` mark;
    /// `written` is what the checkpoint's directory holds (names relative to it), and
    /// gains the parts written here.
    fn fill_ended(
        &self,
        graph: &StreamGraph,
        epoch: u64,
        written: &mut BTreeSet<String>,
    ) -> Result<()> {
        for n in graph.nodes() {
            let key = Self::node_key(n);
            let ended = join(ENDED_DIR, &key);
            for s in 0..n.parallelism() as usize {
                let name = join(&key, &subtask_file(s, "ostate"));
                if written.contains(&name) {
                    continue;
                }
                let Some(part) = find_part_in(&self.root, &ended, s)? else {
                    continue;
                };
                let dir = Self::operator_dir(epoch, &key);
                for kind in ["kstate", "opstate", "finished"] {
                    let from = join(&ended, &subtask_file(s, kind));
                    if self.root.exists(&from)? {
                        let bytes = self.root.read(&from)?;
                        self.root.put(&join(&dir, &subtask_file(s, kind)), &bytes)?;
                    }
                }
                self.write_part(epoch, &key, s, &part)?;
                written.insert(name);
            }
        }
        Ok(())
    }

    /// Marks the job as run to its end (written whole or not at all): from now on its final
    /// parts are the output to publish, and a restore from this directory only publishes
    /// them again.
    pub(crate) fn mark_finished(&self) -> Result<()> {
        self.root.put(FINISHED_FILE, b"typeinfo job finished\n")
    }

    /// Whether a job that keeps its checkpoints in `root` ran to its end.
    ///
    /// # Errors
    ///
    /// The storage cannot tell (never taken for "not finished").
    pub(crate) fn is_finished(root: &Storage) -> Result<bool> {
        root.exists(FINISHED_FILE)
    }

    /// The latest completed checkpoint's epoch.
    ///
    /// # Errors
    ///
    /// The storage cannot be listed.
    pub(crate) fn latest_completed(&self) -> Result<Option<u64>> {
        Ok(self
            .checkpoints()?
            .into_iter()
            .filter(|(_, complete)| *complete)
            .map(|(epoch, _)| epoch)
            .next_back())
    }

    /// Every checkpoint directory with whether it is complete, oldest first (as
    /// [`checkpoints`], asking the storage only about those not known complete).
    fn checkpoints(&self) -> Result<Vec<(u64, bool)>> {
        let known = self.known_complete().clone();
        let mut out = Vec::new();
        for name in self.root.list_dirs("")? {
            if let Some(epoch) = checkpoint_epoch(&name) {
                let complete =
                    known.contains(&epoch) || self.root.exists(&join(&name, METADATA_FILE))?;
                if complete && !known.contains(&epoch) {
                    self.known_complete().insert(epoch);
                }
                out.push((epoch, complete));
            }
        }
        out.sort();
        Ok(out)
    }

    fn known_complete(&self) -> std::sync::MutexGuard<'_, BTreeSet<u64>> {
        self.known_complete
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    /// Deletes checkpoint `epoch` (see [`remove_checkpoint`]) and what is cached about it.
    fn remove(&self, epoch: u64) {
        self.known_complete().remove(&epoch);
        self.objects
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&epoch);
        remove_checkpoint(&self.root.child(&checkpoint_name(epoch)));
    }

    fn node_key(node: &StreamNode) -> String {
        operator_key(node.uid(), node.id())
    }

    /// Whether every subtask of every operator wrote its part, by what the checkpoint's
    /// directory holds (`written`, names relative to it).
    fn all_parts_written(graph: &StreamGraph, written: &BTreeSet<String>) -> bool {
        graph.nodes().iter().all(|n| {
            let key = Self::node_key(n);
            (0..n.parallelism() as usize)
                .all(|s| written.contains(&join(&key, &subtask_file(s, "ostate"))))
        })
    }

    /// Completes checkpoint `epoch` if every part is written: writes `_metadata`, then
    /// deletes completed checkpoints beyond the last `retained` and incomplete older ones.
    /// Returns the checkpoint's statistics when it completed it.
    pub(crate) fn complete(
        &self,
        graph: &StreamGraph,
        epoch: u64,
        retained: usize,
    ) -> Result<Option<CheckpointStats>> {
        let chk = checkpoint_name(epoch);
        // One listing of the checkpoint's directory answers which parts are there (one
        // request on an object store, instead of one per part) and what they weigh.
        let listing = self.root.list(&chk)?;
        if listing.is_empty() {
            return Ok(None);
        }
        let mut written: BTreeSet<String> = listing.iter().map(|l| l.name.clone()).collect();
        self.fill_ended(graph, epoch, &mut written)?;
        if !Self::all_parts_written(graph, &written) {
            return Ok(None);
        }
        Metadata::of(graph, epoch).write_to(&self.root.child(&chk))?;
        self.known_complete().insert(epoch);
        let stats = self.stats(graph, epoch, &listing);
        let all = self.checkpoints()?;
        let completed = all.iter().filter(|(_, c)| *c).count();
        let mut to_drop = completed.saturating_sub(retained.max(1));
        let mut dropped_objects = BTreeSet::new();
        for (e, complete) in &all {
            if *e >= epoch {
                continue;
            }
            if *complete && to_drop > 0 {
                to_drop -= 1;
                // A part that cannot be read keeps its objects (a leak, never a loss).
                dropped_objects.extend(self.shared_objects(*e).unwrap_or_default());
                self.remove(*e);
            } else if !*complete {
                // Its uploads are referenced by nothing completed: collected before the
                // next run (a checkpoint in flight may share them until then).
                self.remove(*e);
            }
        }
        if !dropped_objects.is_empty() {
            if let Some(kept) = self.referenced_objects() {
                for object in dropped_objects.difference(&kept) {
                    let _ = self.root.delete(&join(SHARED_DIR, object));
                }
            }
        }
        Ok(Some(stats))
    }

    /// Deletes every shared object no completed checkpoint refers to (uploads of
    /// checkpoints that never completed, temporary files of interrupted uploads). Only
    /// while no checkpoint is in flight: before a run.
    fn collect_shared_objects(&self) -> Result<()> {
        let objects = self.root.list(SHARED_DIR)?;
        if objects.is_empty() {
            return Ok(());
        }
        let Some(kept) = self.referenced_objects() else {
            return Ok(());
        };
        for object in objects {
            if !kept.contains(&object.name) {
                let _ = self.root.delete(&join(SHARED_DIR, &object.name));
            }
        }
        if let Some(shared) = self.root.local_dir().map(|d| d.join(SHARED_DIR)) {
            // Empty operator folders, locally (an object store has no folders).
            for dir in self.root.list_dirs(SHARED_DIR)? {
                let _ = std::fs::remove_dir(shared.join(dir));
            }
        }
        Ok(())
    }

    /// The bytes of checkpoint `epoch` (in all and per operator) and the time from its first
    /// file to now, from `listing` (its directory's files, names relative to it).
    fn stats(
        &self,
        graph: &StreamGraph,
        epoch: u64,
        listing: &[crate::storage::Listed],
    ) -> CheckpointStats {
        let mut stats = CheckpointStats::default();
        let mut first: Option<std::time::SystemTime> = None;
        for n in graph.nodes() {
            let key = Self::node_key(n);
            let prefix = format!("{key}/");
            let mut bytes = 0;
            for file in listing.iter().filter(|f| f.name.starts_with(&prefix)) {
                if file.name.ends_with(".native") {
                    // What this checkpoint uploaded to the shared folder.
                    let rel = join(&checkpoint_name(epoch), &file.name);
                    bytes += self
                        .root
                        .read(&rel)
                        .and_then(|b| NativePart::decode(&shown(&self.root, &rel), &b))
                        .map_or(0, |p| p.uploaded_bytes);
                }
                bytes += file.bytes;
                if let Some(modified) = file.modified {
                    first = Some(first.map_or(modified, |f| f.min(modified)));
                }
            }
            stats.bytes += bytes;
            stats.operators.push((n.name().to_owned(), bytes));
        }
        stats.duration = first.and_then(|f| f.elapsed().ok()).unwrap_or_default();
        stats
    }

    /// Whether every source subtask had stopped (for a stop-with-savepoint) in checkpoint
    /// `epoch`.
    pub(crate) fn sources_stopped(&self, graph: &StreamGraph, epoch: u64) -> Result<bool> {
        for n in graph.nodes().iter().filter(|n| graph.is_source(n.id())) {
            for s in 0..n.parallelism() as usize {
                let part = self.read_part(epoch, &Self::node_key(n), s)?;
                if !SourcePart::decode(&part.data)?.stopped {
                    return Ok(false);
                }
            }
        }
        Ok(true)
    }

    /// Copies completed checkpoint `epoch` to `target` (a savepoint, a path or a storage
    /// URL).
    pub(crate) fn copy_to(&self, epoch: u64, target: &Path) -> Result<()> {
        copy_checkpoint(
            &self.root.child(&checkpoint_name(epoch)),
            &Storage::open(target)?,
        )
    }

    /// Before a run that starts at `start_epoch`: creates the directory and deletes the
    /// parts of checkpoints that never completed and every checkpoint at or after
    /// `start_epoch` (not part of this run's history), except `keep` (the one restored from).
    pub(crate) fn prepare_run(&self, start_epoch: u64, keep: Option<&Storage>) -> Result<()> {
        if let Some(dir) = self.root.local_dir() {
            std::fs::create_dir_all(dir).map_err(|source| Error::Io {
                path: dir.to_owned(),
                source,
            })?;
            std::fs::read_dir(dir).map_err(|source| Error::Io {
                path: dir.to_owned(),
                source,
            })?;
        }
        for (epoch, complete) in self.checkpoints()? {
            let chk = self.root.child(&checkpoint_name(epoch));
            if (epoch >= start_epoch || !complete) && keep.is_none_or(|k| !k.same_location(&chk)) {
                self.remove(epoch);
            }
        }
        self.collect_shared_objects()?;
        // The end of an earlier run: the marker first, so that no run can take the final
        // parts that are about to go for a finished job's.
        self.root.delete(FINISHED_FILE)?;
        for dir in [FINAL_DIR, ENDED_DIR] {
            self.root.delete_all(dir)?;
        }
        Ok(())
    }
}

impl CheckpointStore {
    /// Every shared object a completed checkpoint refers to; `None` when a part cannot be
    /// read (then nothing may be deleted).
    fn referenced_objects(&self) -> Option<BTreeSet<String>> {
        let mut kept = BTreeSet::new();
        for (epoch, complete) in self.checkpoints().ok()? {
            if complete {
                kept.extend(self.shared_objects(epoch).ok()?);
            }
        }
        Some(kept)
    }

    /// The shared objects the incremental parts of completed checkpoint `epoch` refer to.
    ///
    /// # Errors
    ///
    /// A part cannot be read (then nothing is deleted on its account).
    fn shared_objects(&self, epoch: u64) -> Result<Vec<String>> {
        let cached = self
            .objects
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&epoch)
            .cloned();
        if let Some(objects) = cached {
            return Ok(objects);
        }
        let chk = self.root.child(&checkpoint_name(epoch));
        let mut out = Vec::new();
        for file in chk.list("")? {
            if file.name.ends_with(".native") {
                let part = NativePart::decode(&shown(&chk, &file.name), &chk.read(&file.name)?)?;
                out.extend(part.objects().map(|o| o.object.clone()));
            }
        }
        self.objects
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(epoch, out.clone());
        Ok(out)
    }
}

/// Where and how one subtask writes the keyed state of one checkpoint: a full file of the
/// savepoint format, or, for RocksDB in an incremental store, an incremental part.
pub(crate) struct KeyedPart<'a> {
    store: &'a CheckpointStore,
    full: String,
    native: String,
    /// Always a full file (the final state of an operator that ended, copied into later
    /// checkpoints, must not refer to shared objects that retention may delete).
    full_only: bool,
    key: String,
    epoch: u64,
    subtask: usize,
}

impl KeyedPart<'_> {
    /// Writes `backend`'s keyed state; `shared` is what the subtask uploaded before (kept up
    /// to date by incremental parts).
    pub(crate) fn write<K: typeinfo_state::StateKey>(
        &self,
        backend: &mut typeinfo_state::KeyedBackend<K>,
        shared: &mut SharedFiles,
    ) -> Result<()> {
        use typeinfo_state::KeyedStateBackend;
        match backend {
            typeinfo_state::KeyedBackend::RocksDb(b)
                if self.store.incremental && !self.full_only =>
            {
                native_part::write_native_part(
                    b,
                    &self.store.root,
                    &self.key,
                    self.epoch,
                    self.subtask,
                    &self.native,
                    shared,
                )
            }
            _ => self.store.root.write_with(&self.full, |path| {
                backend
                    .snapshot(path)
                    .map(drop)
                    .map_err(|source| Error::State {
                        operator: self.key.clone(),
                        source,
                    })
            }),
        }
    }
}

/// Deletes a checkpoint directory, its `_metadata` first: a deletion cut short leaves an
/// incomplete checkpoint, never a complete-looking one with parts missing.
fn remove_checkpoint(chk: &Storage) {
    if chk.delete(METADATA_FILE).is_ok() {
        let _ = chk.delete_all("");
    }
}

/// What a completed checkpoint took.
#[derive(Debug, Clone, Default)]
pub(crate) struct CheckpointStats {
    /// Bytes of every part.
    pub(crate) bytes: u64,
    /// From its first part on disk to its completion.
    pub(crate) duration: std::time::Duration,
    /// Bytes per operator (by name).
    pub(crate) operators: Vec<(String, u64)>,
}

/// What a source subtask writes into a checkpoint: whether it had stopped for a savepoint,
/// how many records it emitted, and its position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SourcePart {
    pub(crate) stopped: bool,
    pub(crate) emitted: u64,
    pub(crate) position: Vec<u8>,
}

impl SourcePart {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = DataOutputView::new();
        out.write_bool(self.stopped);
        out.write_u64(self.emitted);
        out.write_len_prefixed(&self.position);
        out.into_inner()
    }

    pub(crate) fn decode(data: &[u8]) -> Result<Self> {
        let mut input = DataInputView::new(data);
        let corrupt = |e: typeinfo::Error| Error::Corrupt(format!("source position: {e}"));
        let stopped = input.read_bool().map_err(corrupt)?;
        let emitted = input.read_u64().map_err(corrupt)?;
        let position = input.read_len_prefixed().map_err(corrupt)?.to_vec();
        if !input.is_empty() {
            return Err(Error::Corrupt(
                "source position: bytes after the position".into(),
            ));
        }
        Ok(SourcePart {
            stopped,
            emitted,
            position,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operator_parts_round_trip_and_refuse_damage() {
        let part = OperatorPart {
            watermark: -5,
            data: vec![1, 2, 3],
        };
        let bytes = part.encode();
        assert_eq!(OperatorPart::decode(Path::new("p"), &bytes).unwrap(), part);
        for i in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 0x40;
            assert!(
                OperatorPart::decode(Path::new("p"), &bad).is_err(),
                "flipped byte {i}"
            );
        }
        for n in 0..bytes.len() {
            assert!(
                OperatorPart::decode(Path::new("p"), &bytes[..n]).is_err(),
                "truncated to {n}"
            );
        }
    }

    fn metadata() -> Metadata {
        Metadata {
            epoch: 41,
            max_parallelism: 128,
            operators: BTreeMap::from([
                ("uid-orders".to_owned(), (2, "orders source".to_owned())),
                ("node-3".to_owned(), (3, "window".to_owned())),
            ]),
        }
    }

    #[test]
    fn metadata_round_trips_and_every_damage_is_refused() {
        let m = metadata();
        let text = m.encode();
        assert!(
            text.starts_with("typeinfo checkpoint v2\nepoch 41\n"),
            "{text}"
        );
        assert_eq!(Metadata::parse(Path::new("m"), &text).unwrap(), m);
        let bytes = text.as_bytes();
        for i in 0..bytes.len() {
            let mut bad = bytes.to_vec();
            bad[i] ^= 0x01;
            if let Ok(bad) = String::from_utf8(bad) {
                assert!(
                    Metadata::parse(Path::new("m"), &bad).is_err(),
                    "flipped byte {i}: {bad}"
                );
            }
        }
        for n in 0..bytes.len() {
            assert!(
                Metadata::parse(Path::new("m"), &text[..n]).is_err(),
                "truncated to {n}"
            );
        }
    }

    #[test]
    fn metadata_numbers_out_of_range_are_refused_not_truncated() {
        let with = |epoch: &str, maxp: &str, p: &str| {
            format!("typeinfo checkpoint v1\nepoch {epoch}\nmax_parallelism {maxp}\noperator node-0 {p} x\n")
        };
        let parse = |t: &str| Metadata::parse(Path::new("m"), t);
        assert!(
            parse(&with("7", "128", "2")).is_ok(),
            "a version 1 file still reads"
        );
        // 2^32 + 128 would truncate to 128 with `as u32`.
        assert!(parse(&with("7", "4294967424", "2")).is_err());
        assert!(parse(&with("7", "0", "1")).is_err());
        assert!(parse(&with("7", "32769", "2")).is_err());
        // `epoch + 1` must not overflow when the job continues after it.
        assert!(parse(&with(&u64::MAX.to_string(), "128", "2")).is_err());
        assert!(parse(&with(&MAX_EPOCH.to_string(), "128", "2")).is_ok());
        // An operator's parallelism is within 1..=max_parallelism (it sizes loops over parts).
        assert!(parse(&with("7", "128", "0")).is_err());
        assert!(parse(&with("7", "128", "129")).is_err());
        assert!(parse(&with("7", "128", "4294967295")).is_err());
        assert!(parse(&with("-1", "128", "2")).is_err());
    }

    #[test]
    fn the_metadata_example_of_format_md_reads() {
        let format =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/FORMAT.md")).unwrap();
        let start = format.find("typeinfo checkpoint v2\n").unwrap();
        let end = start + format[start..].find("```").unwrap();
        let m = Metadata::parse(Path::new("FORMAT.md"), &format[start..end]).unwrap();
        assert_eq!(m.epoch, 12);
        assert_eq!(m.operators.len(), 2);
        assert_eq!(m.encode(), format[start..end]);
    }
}
