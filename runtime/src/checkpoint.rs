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

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use typeinfo::{DataInputView, DataOutputView};
use typeinfo_state::savepoint::write_atomically;

pub use crate::config::{CheckpointConfig, RestoreSettings};
use crate::error::{Error, Result};
use crate::native_part::{self, KeyedFile, NativePart, SharedFiles, SHARED_DIR};
use crate::plan::{StreamGraph, StreamNode};

/// The marker of a job that ran to its end (in the checkpoint root).
const FINISHED_FILE: &str = "_finished";

/// Where sinks leave their final parts (in the checkpoint root).
const FINAL_DIR: &str = "final";

/// Where source subtasks whose input ended leave their last part (in the checkpoint root).
const ENDED_DIR: &str = "ended";

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

pub(crate) fn checkpoint_dir(root: &Path, epoch: u64) -> PathBuf {
    root.join(format!("chk-{epoch}"))
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

    fn decode(path: &Path, bytes: &[u8]) -> Result<Self> {
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

    pub(crate) fn write(&self, dir: &Path, subtask: usize) -> Result<()> {
        fs::create_dir_all(dir).map_err(|source| Error::Io {
            path: dir.to_owned(),
            source,
        })?;
        write_atomically(&ostate_path(dir, subtask), &self.encode()).map_err(|source| {
            Error::State {
                operator: String::new(),
                source,
            }
        })
    }

    /// Reads and checks the `.ostate` file at `path` (magic, version, checksum, length).
    ///
    /// # Errors
    ///
    /// [`Error::Io`] when it cannot be read, [`Error::Corrupt`] for a damaged or foreign
    /// file.
    pub fn read(path: &Path) -> Result<Self> {
        let bytes = fs::read(path).map_err(|source| Error::Io {
            path: path.to_owned(),
            source,
        })?;
        Self::decode(path, &bytes)
    }
}

/// The part subtask `subtask` wrote in `dir`, if it wrote one.
fn find_part_in(dir: &Path, subtask: usize) -> Result<Option<OperatorPart>> {
    let path = ostate_path(dir, subtask);
    if !path.is_file() {
        return Ok(None);
    }
    OperatorPart::read(&path).map(Some)
}

/// The operator-local part of subtask `subtask` in an operator's directory `dir`.
pub fn ostate_path(dir: &Path, subtask: usize) -> PathBuf {
    dir.join(format!("subtask-{subtask}.ostate"))
}

/// The keyed state file of subtask `subtask` in an operator's directory `dir`.
pub fn kstate_path(dir: &Path, subtask: usize) -> PathBuf {
    dir.join(format!("subtask-{subtask}.kstate"))
}

/// The incremental keyed-state part of subtask `subtask` in an operator's directory `dir`.
pub fn native_path(dir: &Path, subtask: usize) -> PathBuf {
    dir.join(format!("subtask-{subtask}.native"))
}

/// The operator state file of subtask `subtask` in an operator's directory `dir`.
pub fn opstate_path(dir: &Path, subtask: usize) -> PathBuf {
    dir.join(format!("subtask-{subtask}.opstate"))
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
        let path = chk.join(METADATA_FILE);
        let text = self.encode();
        // What could not be read back is refused before anything is written (operator
        // names are free text: their line breaks are written as spaces).
        Self::parse(&path, &text)?;
        write_atomically(&path, text.as_bytes()).map_err(|source| Error::State {
            operator: String::new(),
            source,
        })
    }

    /// Reads and checks `_metadata` in the directory `chk` (checksum, every number in its
    /// range).
    ///
    /// # Errors
    ///
    /// [`Error::Io`] when it cannot be read, [`Error::Corrupt`] for a damaged, truncated
    /// or foreign file.
    pub fn read(chk: &Path) -> Result<Self> {
        let path = chk.join(METADATA_FILE);
        let text = fs::read_to_string(&path).map_err(|source| Error::Io {
            path: path.clone(),
            source,
        })?;
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
fn checkpoints(root: &Path) -> Vec<(u64, PathBuf, bool)> {
    let mut out = Vec::new();
    if let Ok(entries) = fs::read_dir(root) {
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if let Some(epoch) = checkpoint_epoch(&name) {
                let path = e.path();
                let complete = path.join(METADATA_FILE).is_file();
                out.push((epoch, path, complete));
            }
        }
    }
    out.sort();
    out
}

/// The completed checkpoints under `root`, oldest first.
pub(crate) fn completed(root: &Path) -> Vec<(u64, PathBuf)> {
    checkpoints(root)
        .into_iter()
        .filter(|(_, _, complete)| *complete)
        .map(|(epoch, path, _)| (epoch, path))
        .collect()
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
    let chk = if path.join(METADATA_FILE).is_file() {
        path.to_owned()
    } else {
        completed(path).pop().map(|(_, p)| p).ok_or_else(|| {
            Error::Corrupt(format!(
                "{}: no completed checkpoint (no chk-*/_metadata)",
                path.display()
            ))
        })?
    };
    let metadata = Metadata::read(&chk)?;
    Ok((chk, metadata))
}

/// What a job restores from, checked against its graph.
#[derive(Debug, Clone)]
pub(crate) struct Restore {
    pub(crate) dir: PathBuf,
    pub(crate) metadata: Metadata,
}

impl Restore {
    /// Checks `metadata` against the graph: the same max parallelism, sources at their old
    /// parallelism, and no operator state without an operator (unless allowed).
    pub(crate) fn check(settings: &RestoreSettings, graph: &StreamGraph) -> Result<Self> {
        let (dir, metadata) = locate(&settings.path)?;
        if metadata.max_parallelism != graph.max_parallelism() {
            return Err(Error::Config(format!(
                "{} was written with max parallelism {}, the job has {}: key groups would not match (set the job's max parallelism to {})",
                dir.display(),
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
            let has_state = dir.join(key).is_dir();
            match keys.get(key) {
                None if has_state && !settings.allow_non_restored_state => {
                    return Err(Error::Config(format!(
                        "{} holds state of operator `{name}` ({key}), which this job does not have; \
                         give the operator its old uid, or allow non-restored state to drop it",
                        dir.display()
                    )));
                }
                Some(node) if graph.is_source(node.id()) && node.parallelism() != *p => {
                    return Err(Error::Config(format!(
                        "source `{}` ran at parallelism {p} in {}; sources restore at their old parallelism",
                        node.name(),
                        dir.display()
                    )));
                }
                _ => {}
            }
        }
        Ok(Restore { dir, metadata })
    }

    /// The operator-local parts of every old subtask of `key` (empty for a new operator).
    pub(crate) fn parts(&self, key: &str) -> Result<Vec<OperatorPart>> {
        let Some((p, _)) = self.metadata.operators.get(key) else {
            return Ok(Vec::new());
        };
        let dir = self.dir.join(key);
        (0..*p as usize)
            .map(|s| ostate_path(&dir, s))
            .filter(|p| p.exists())
            .map(|p| OperatorPart::read(&p))
            .collect()
    }

    /// The keyed state files of every old subtask of `key`: full files of the savepoint
    /// format, incremental parts (their objects in the checkpoint root), or none.
    pub(crate) fn keyed_files(&self, key: &str) -> Vec<KeyedFile> {
        let root = self.dir.parent().unwrap_or(&self.dir).to_owned();
        let mut files: Vec<KeyedFile> = self
            .files(key, kstate_path)
            .into_iter()
            .map(KeyedFile::Full)
            .collect();
        files.extend(
            self.files(key, native_path)
                .into_iter()
                .map(|part| KeyedFile::Native {
                    part,
                    root: root.clone(),
                }),
        );
        files
    }

    /// The operator state files of every old subtask of `key`.
    pub(crate) fn operator_state_files(&self, key: &str) -> Vec<PathBuf> {
        self.files(key, opstate_path)
    }

    fn files(&self, key: &str, path: fn(&Path, usize) -> PathBuf) -> Vec<PathBuf> {
        let Some((p, _)) = self.metadata.operators.get(key) else {
            return Vec::new();
        };
        let dir = self.dir.join(key);
        (0..*p as usize)
            .map(|s| path(&dir, s))
            .filter(|p| p.exists())
            .collect()
    }
}

/// Copies a completed checkpoint to `target` (a savepoint): files first, `_metadata` last.
/// Incremental keyed-state parts become keyed state files of the savepoint format.
pub(crate) fn copy_checkpoint(chk: &Path, target: &Path) -> Result<()> {
    let io = |path: &Path, source| Error::Io {
        path: path.to_owned(),
        source,
    };
    fs::create_dir_all(target).map_err(|e| io(target, e))?;
    for entry in fs::read_dir(chk).map_err(|e| io(chk, e))? {
        let entry = entry.map_err(|e| io(chk, e))?;
        let path = entry.path();
        if path.is_dir() {
            let sub = target.join(entry.file_name());
            fs::create_dir_all(&sub).map_err(|e| io(&sub, e))?;
            for f in fs::read_dir(&path).map_err(|e| io(&path, e))? {
                let f = f.map_err(|e| io(&path, e))?.path();
                if f.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with('.'))
                {
                    continue; // a temporary file of a write in progress
                }
                let Some(name) = f.file_name() else {
                    continue;
                };
                if f.extension().is_some_and(|e| e == "native") {
                    let to = sub.join(name).with_extension("kstate");
                    native_part::to_canonical(&f, chk.parent().unwrap_or(chk), &to)?;
                    continue;
                }
                let bytes = fs::read(&f).map_err(|e| io(&f, e))?;
                let to = sub.join(name);
                write_atomically(&to, &bytes).map_err(|source| Error::State {
                    operator: String::new(),
                    source,
                })?;
            }
        }
    }
    let bytes = fs::read(chk.join(METADATA_FILE)).map_err(|e| io(chk, e))?;
    write_atomically(&target.join(METADATA_FILE), &bytes).map_err(|source| Error::State {
        operator: String::new(),
        source,
    })
}

/// The checkpoints of one job under its checkpoint directory: the only code that knows the
/// layout (`chk-<epoch>/<operator>/subtask-<i>.{ostate,kstate}`, `_metadata`), writes parts
/// atomically, completes checkpoints, retains the last ones and cleans up before a run.
#[derive(Debug, Clone)]
pub(crate) struct CheckpointStore {
    root: PathBuf,
    /// RocksDB state is written as incremental parts.
    incremental: bool,
}

impl CheckpointStore {
    pub(crate) fn new(root: &Path) -> Self {
        CheckpointStore {
            root: root.to_owned(),
            incremental: false,
        }
    }

    /// The store of `config`'s directory, incremental as it says.
    pub(crate) fn of(config: &CheckpointConfig) -> Self {
        CheckpointStore {
            root: config.dir.clone(),
            incremental: config.incremental,
        }
    }

    /// The checkpoint root.
    pub(crate) fn root(&self) -> &Path {
        &self.root
    }

    /// The directory of checkpoint `epoch`.
    pub(crate) fn checkpoint(&self, epoch: u64) -> PathBuf {
        checkpoint_dir(&self.root, epoch)
    }

    fn operator_dir(&self, epoch: u64, key: &str) -> PathBuf {
        self.checkpoint(epoch).join(key)
    }

    /// Where and how subtask `subtask` of operator `key` writes the keyed state of
    /// checkpoint `epoch` (its directory is created).
    pub(crate) fn keyed_part(
        &self,
        epoch: u64,
        key: &str,
        subtask: usize,
    ) -> Result<KeyedPart<'_>> {
        Ok(KeyedPart {
            store: self,
            full: self.file_path(epoch, key, subtask, kstate_path)?,
            native: native_path(&self.operator_dir(epoch, key), subtask),
            key: key.to_owned(),
            epoch,
            subtask,
        })
    }

    /// Where subtask `subtask` of operator `key` writes the operator state of checkpoint
    /// `epoch` (its directory is created).
    pub(crate) fn operator_state_path(
        &self,
        epoch: u64,
        key: &str,
        subtask: usize,
    ) -> Result<PathBuf> {
        self.file_path(epoch, key, subtask, opstate_path)
    }

    fn file_path(
        &self,
        epoch: u64,
        key: &str,
        subtask: usize,
        path: fn(&Path, usize) -> PathBuf,
    ) -> Result<PathBuf> {
        let dir = self.operator_dir(epoch, key);
        fs::create_dir_all(&dir).map_err(|source| Error::Io {
            path: dir.clone(),
            source,
        })?;
        Ok(path(&dir, subtask))
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
        part.write(&self.operator_dir(epoch, key), subtask)
    }

    /// Reads the operator part of one subtask of checkpoint `epoch`.
    pub(crate) fn read_part(&self, epoch: u64, key: &str, subtask: usize) -> Result<OperatorPart> {
        OperatorPart::read(&ostate_path(&self.operator_dir(epoch, key), subtask))
    }

    /// Writes the final part of a sink's subtask: what it had not committed when its input
    /// ended (see the module docs).
    pub(crate) fn write_final_part(
        &self,
        key: &str,
        subtask: usize,
        part: &OperatorPart,
    ) -> Result<()> {
        part.write(&self.root.join(FINAL_DIR).join(key), subtask)
    }

    /// The final part of a sink's subtask, if it wrote one.
    pub(crate) fn find_final_part(
        &self,
        key: &str,
        subtask: usize,
    ) -> Result<Option<OperatorPart>> {
        find_part_in(&self.root.join(FINAL_DIR).join(key), subtask)
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
        part.write(&self.root.join(ENDED_DIR).join(key), subtask)
    }

    /// Gives checkpoint `epoch` the last part of every source subtask that ended before it
    /// (they write no more parts).
    fn fill_ended_sources(&self, graph: &StreamGraph, epoch: u64) -> Result<()> {
        for n in graph.nodes().iter().filter(|n| graph.is_source(n.id())) {
            let key = Self::node_key(n);
            let ended = self.root.join(ENDED_DIR).join(&key);
            for s in 0..n.parallelism() as usize {
                if ostate_path(&self.operator_dir(epoch, &key), s).is_file() {
                    continue;
                }
                if let Some(part) = find_part_in(&ended, s)? {
                    self.write_part(epoch, &key, s, &part)?;
                }
            }
        }
        Ok(())
    }

    /// Marks the job as run to its end (written, synced, renamed): from now on its final
    /// parts are the output to publish, and a restore from this directory only publishes
    /// them again.
    pub(crate) fn mark_finished(&self) -> Result<()> {
        write_atomically(&self.root.join(FINISHED_FILE), b"typeinfo job finished\n").map_err(
            |source| Error::State {
                operator: "Checkpoint coordinator".into(),
                source,
            },
        )
    }

    /// Whether a job that keeps its checkpoints in `root` ran to its end.
    pub(crate) fn is_finished(root: &Path) -> bool {
        root.join(FINISHED_FILE).is_file()
    }

    /// The latest completed checkpoint's epoch.
    pub(crate) fn latest_completed(&self) -> Option<u64> {
        completed(&self.root).last().map(|(epoch, _)| *epoch)
    }

    fn node_key(node: &StreamNode) -> String {
        operator_key(node.uid(), node.id())
    }

    /// Whether every subtask of every operator wrote its part of checkpoint `epoch`.
    fn all_parts_written(&self, graph: &StreamGraph, epoch: u64) -> bool {
        graph.nodes().iter().all(|n| {
            let dir = self.operator_dir(epoch, &Self::node_key(n));
            (0..n.parallelism() as usize).all(|s| ostate_path(&dir, s).is_file())
        })
    }

    /// Completes checkpoint `epoch` if every part is on disk: writes `_metadata`, then
    /// deletes completed checkpoints beyond the last `retained` and incomplete older ones.
    /// Returns the checkpoint's statistics when it completed it.
    pub(crate) fn complete(
        &self,
        graph: &StreamGraph,
        epoch: u64,
        retained: usize,
    ) -> Result<Option<CheckpointStats>> {
        if !self.checkpoint(epoch).is_dir() {
            return Ok(None);
        }
        self.fill_ended_sources(graph, epoch)?;
        if !self.all_parts_written(graph, epoch) {
            return Ok(None);
        }
        Metadata::of(graph, epoch).write(&self.checkpoint(epoch))?;
        let stats = self.stats(graph, epoch);
        let all = checkpoints(&self.root);
        let completed = all.iter().filter(|(_, _, c)| *c).count();
        let mut to_drop = completed.saturating_sub(retained.max(1));
        let mut dropped_objects = std::collections::BTreeSet::new();
        for (e, path, complete) in &all {
            if *e >= epoch {
                continue;
            }
            if *complete && to_drop > 0 {
                to_drop -= 1;
                // A part that cannot be read keeps its objects (a leak, never a loss).
                dropped_objects.extend(shared_objects(path).unwrap_or_default());
                remove_checkpoint(path);
            } else if !*complete {
                // Its uploads are referenced by nothing completed: collected before the
                // next run (a checkpoint in flight may share them until then).
                remove_checkpoint(path);
            }
        }
        if !dropped_objects.is_empty() {
            if let Some(kept) = referenced_objects(&self.root) {
                for object in dropped_objects.difference(&kept) {
                    let _ = fs::remove_file(self.root.join(SHARED_DIR).join(object));
                }
            }
        }
        Ok(Some(stats))
    }

    /// Deletes every shared object no completed checkpoint refers to (uploads of
    /// checkpoints that never completed, temporary files of interrupted uploads). Only
    /// while no checkpoint is in flight: before a run.
    fn collect_shared_objects(&self) -> Result<()> {
        let shared = self.root.join(SHARED_DIR);
        if !shared.is_dir() {
            return Ok(());
        }
        let Some(kept) = referenced_objects(&self.root) else {
            return Ok(());
        };
        for operator in fs::read_dir(&shared)
            .map_err(|e| native_part::io(&shared, e))?
            .flatten()
        {
            let dir = operator.path();
            let Ok(objects) = fs::read_dir(&dir) else {
                continue;
            };
            let name = operator.file_name().to_string_lossy().into_owned();
            for object in objects.flatten() {
                let id = format!("{name}/{}", object.file_name().to_string_lossy());
                if !kept.contains(&id) {
                    let _ = fs::remove_file(object.path());
                }
            }
            let _ = fs::remove_dir(&dir); // when empty
        }
        Ok(())
    }

    /// The bytes of checkpoint `epoch` (in all and per operator) and the time from its first
    /// file to now.
    fn stats(&self, graph: &StreamGraph, epoch: u64) -> CheckpointStats {
        let mut stats = CheckpointStats::default();
        let mut first: Option<std::time::SystemTime> = None;
        for n in graph.nodes() {
            let mut bytes = 0;
            if let Ok(entries) = fs::read_dir(self.operator_dir(epoch, &Self::node_key(n))) {
                for entry in entries.flatten() {
                    let path = entry.path();
                    if path.extension().is_some_and(|e| e == "native") {
                        // What this checkpoint uploaded to the shared folder.
                        bytes += NativePart::read(&path).map_or(0, |p| p.uploaded_bytes);
                    }
                    let Ok(meta) = entry.metadata() else {
                        continue;
                    };
                    bytes += meta.len();
                    if let Ok(modified) = meta.modified() {
                        first = Some(first.map_or(modified, |f| f.min(modified)));
                    }
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
            let dir = self.operator_dir(epoch, &Self::node_key(n));
            for s in 0..n.parallelism() as usize {
                if !SourcePart::decode(&OperatorPart::read(&ostate_path(&dir, s))?.data)?.stopped {
                    return Ok(false);
                }
            }
        }
        Ok(true)
    }

    /// Copies completed checkpoint `epoch` to `target` (a savepoint).
    pub(crate) fn copy_to(&self, epoch: u64, target: &Path) -> Result<()> {
        copy_checkpoint(&self.checkpoint(epoch), target)
    }

    /// Before a run that starts at `start_epoch`: creates the directory and deletes the
    /// parts of checkpoints that never completed and every checkpoint at or after
    /// `start_epoch` (not part of this run's history), except `keep` (the one restored from).
    pub(crate) fn prepare_run(&self, start_epoch: u64, keep: Option<&Path>) -> Result<()> {
        fs::create_dir_all(&self.root).map_err(|source| Error::Io {
            path: self.root.clone(),
            source,
        })?;
        fs::read_dir(&self.root).map_err(|source| Error::Io {
            path: self.root.clone(),
            source,
        })?;
        for (epoch, path, complete) in checkpoints(&self.root) {
            if (epoch >= start_epoch || !complete) && keep.is_none_or(|k| k != path) {
                remove_checkpoint(&path);
            }
        }
        self.collect_shared_objects()?;
        // The end of an earlier run: the marker first, so that no run can take the final
        // parts that are about to go for a finished job's.
        let marker = self.root.join(FINISHED_FILE);
        if marker.exists() {
            fs::remove_file(&marker).map_err(|source| Error::Io {
                path: marker,
                source,
            })?;
        }
        for dir in [FINAL_DIR, ENDED_DIR] {
            let dir = self.root.join(dir);
            if dir.exists() {
                fs::remove_dir_all(&dir).map_err(|source| Error::Io { path: dir, source })?;
            }
        }
        Ok(())
    }
}

/// Where and how one subtask writes the keyed state of one checkpoint: a full file of the
/// savepoint format, or, for RocksDB in an incremental store, an incremental part.
pub(crate) struct KeyedPart<'a> {
    store: &'a CheckpointStore,
    full: PathBuf,
    native: PathBuf,
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
            typeinfo_state::KeyedBackend::RocksDb(b) if self.store.incremental => {
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
            _ => {
                backend
                    .snapshot(&self.full)
                    .map_err(|source| Error::State {
                        operator: self.key.clone(),
                        source,
                    })?;
                Ok(())
            }
        }
    }
}

/// Deletes a checkpoint directory, its `_metadata` first: a deletion cut short leaves an
/// incomplete checkpoint, never a complete-looking one with parts missing.
fn remove_checkpoint(path: &Path) {
    let _ = fs::remove_file(path.join(METADATA_FILE));
    let _ = fs::remove_dir_all(path);
}

/// Every shared object a completed checkpoint under `root` refers to; `None` when a part
/// cannot be read (then nothing may be deleted).
fn referenced_objects(root: &Path) -> Option<std::collections::BTreeSet<String>> {
    let mut kept = std::collections::BTreeSet::new();
    for (_, path) in completed(root) {
        kept.extend(shared_objects(&path).ok()?);
    }
    Some(kept)
}

/// The shared objects the incremental parts of checkpoint `chk` refer to.
///
/// # Errors
///
/// A part cannot be read (then nothing is deleted on its account).
fn shared_objects(chk: &Path) -> Result<Vec<String>> {
    let mut out = Vec::new();
    let Ok(operators) = fs::read_dir(chk) else {
        return Ok(out);
    };
    for operator in operators.flatten() {
        let Ok(files) = fs::read_dir(operator.path()) else {
            continue;
        };
        for f in files.flatten() {
            let path = f.path();
            if path.extension().is_some_and(|e| e == "native") {
                out.extend(NativePart::read(&path)?.objects().map(|o| o.object.clone()));
            }
        }
    }
    Ok(out)
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
