//! Incremental checkpoints of RocksDB keyed state: a subtask's part is a native RocksDB
//! checkpoint whose immutable SST files live once in the checkpoint directory's shared
//! folder and are referenced from every checkpoint that still holds them, as Flink's
//! incremental checkpoints are (`RocksIncrementalSnapshotStrategy`).
//!
//! At a checkpoint, the subtask's backend writes a native checkpoint into a local directory
//! beside its database (a flush and hard links: see the state crate's `incremental` module).
//! Each SST file the subtask has not uploaded yet is copied into
//! `<root>/shared/<operator>/<epoch>-<subtask>-<file>` (under a temporary name, synced,
//! renamed: a partial upload never has its final name); the small files that describe the
//! database (`MANIFEST-*`, `CURRENT`, `OPTIONS-*`, the typeinfo metadata) are copied inside
//! the part itself. The part, `<operator>/subtask-<i>.native` in the checkpoint's directory,
//! lists every file with its size and CRC-32 and is written atomically; like a `.kstate`
//! file it is written before the subtask's `.ostate` marker.
//!
//! An object's name is unique: the epoch it was uploaded at, the subtask and RocksDB's file
//! number (never reused within one database's lineage, restores included, since a restored
//! database continues its base's numbering). Epochs of a run are new: before a run the
//! store deletes every checkpoint at or after its first epoch and the objects only they
//! referenced.
//!
//! Reference counting. An object is referenced by the parts that list it. When retention
//! deletes completed checkpoints, the objects they referenced and no retained completed
//! checkpoint references are deleted. That is safe for checkpoints in flight: a subtask
//! references an object only while the file is live in its database, and a file live at an
//! in-flight epoch and at a deleted one was live at every epoch between, so the newest
//! completed checkpoint lists it too. Objects of checkpoints that never completed (a crash
//! mid-upload, an abandoned checkpoint) are referenced by nothing completed; they are
//! collected before the next run, when no checkpoint is in flight.
//!
//! Restore: each old subtask's part is laid out in a scratch directory (private files
//! written, shared objects hard-linked, or copied across file systems, their sizes and
//! checksums verified), then the backend restores from those native checkpoints: RocksDB
//! opens the best-overlapping one directly and clips or copies key groups; the heap reads
//! them through the savepoint format. After a restore from this job's own checkpoint
//! directory, the subtask keeps referring to the objects of the checkpoint its database was
//! opened from, so the first checkpoint after a restore is incremental too.
//!
//! A savepoint is always in the backend-independent format: taking one converts every
//! native part (`native_to_canonical`).

use std::collections::{BTreeSet, HashMap};
use std::fs;
use std::path::{Path, PathBuf};

use typeinfo::{DataInputView, DataOutputView};
use typeinfo_state::{KeyedBackend, RocksDbKeyedStateBackend, StateKey};

use crate::checkpoint::storage::{join, Storage};
use crate::error::{Error, Result};

/// The folder of shared SST objects (in the checkpoint root).
pub const SHARED_DIR: &str = "shared";

const MAGIC: &[u8; 4] = b"TINP";
const VERSION: u8 = 1;
/// The longest file or object name a part may hold.
const MAX_NAME: usize = 255;
/// The most bytes a part may carry inline (RocksDB's manifest and options, the metadata).
const MAX_PRIVATE_BYTES: usize = 256 << 20;

pub(crate) fn io(path: &Path, source: std::io::Error) -> Error {
    Error::Io {
        path: path.to_owned(),
        source,
    }
}

fn corrupt(path: &Path, detail: impl std::fmt::Display) -> Error {
    Error::Damaged {
        path: path.display().to_string(),
        what: detail.to_string(),
    }
}

/// A name that stays inside its folder: no separators, no `.`/`..`, printable ASCII.
fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME
        && name != "."
        && name != ".."
        && name
            .bytes()
            .all(|b| b.is_ascii_graphic() && b != b'/' && b != b'\\')
}

/// A shared SST object, as a part refers to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedObject {
    /// Its path under `<root>/shared/` (`<operator>/<object>`).
    pub object: String,
    /// Its size.
    pub bytes: u64,
    /// Its CRC-32 (IEEE).
    pub crc: u32,
}

/// One file of a native part.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Entry {
    /// A file of this checkpoint alone, carried in the part.
    Private { name: String, bytes: Vec<u8> },
    /// An SST file, kept once under the shared folder.
    Shared { name: String, shared: SharedObject },
}

/// The keyed-state part of one subtask in an incremental checkpoint (a `.native` file,
/// `FORMAT.md`).
///
/// # Examples
///
/// ```no_run
/// use typeinfo_runtime::native_part::NativePart;
///
/// # fn main() -> typeinfo_runtime::Result<()> {
/// let part = NativePart::read("checkpoints/chk-7/uid-totals/subtask-0.native".as_ref())?;
/// println!("{} bytes uploaded for this checkpoint", part.uploaded_bytes);
/// for object in part.objects() {
///     println!("refers to shared/{} ({} bytes)", object.object, object.bytes);
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NativePart {
    entries: Vec<Entry>,
    /// Bytes uploaded to the shared folder for this checkpoint (its incremental size).
    pub uploaded_bytes: u64,
}

impl NativePart {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = DataOutputView::new();
        out.write_bytes(MAGIC);
        out.write_u8(VERSION);
        out.write_u64(self.uploaded_bytes);
        out.write_u32(self.entries.len() as u32);
        for e in &self.entries {
            match e {
                Entry::Private { name, bytes } => {
                    out.write_u8(0);
                    out.write_len_prefixed(name.as_bytes());
                    out.write_len_prefixed(bytes);
                }
                Entry::Shared { name, shared } => {
                    out.write_u8(1);
                    out.write_len_prefixed(name.as_bytes());
                    out.write_len_prefixed(shared.object.as_bytes());
                    out.write_u64(shared.bytes);
                    out.write_u32(shared.crc);
                }
            }
        }
        let crc = crc32fast::hash(out.as_slice());
        out.write_u32(crc);
        out.into_inner()
    }

    // Long: it reads the part top to bottom in the order FORMAT.md documents it, one bounded
    // check per field; split, the order of the checks would be harder to hold against the doc.
    pub(crate) fn decode(path: &Path, bytes: &[u8]) -> Result<Self> {
        if bytes.len() < 4 + 1 + 8 + 4 + 4 || &bytes[..4] != MAGIC {
            return Err(corrupt(path, "not an incremental keyed-state part"));
        }
        let Some((body, crc)) = bytes.split_last_chunk::<4>() else {
            return Err(corrupt(path, "not an incremental keyed-state part"));
        };
        if crc32fast::hash(body) != u32::from_le_bytes(*crc) {
            return Err(corrupt(path, "checksum mismatch"));
        }
        let c = |e: typeinfo::Error| corrupt(path, e);
        let mut input = DataInputView::new(&body[4..]);
        let version = input.read_u8().map_err(c)?;
        if version != VERSION {
            return Err(corrupt(
                path,
                format!("version {version}, this build reads {VERSION}"),
            ));
        }
        let uploaded_bytes = input.read_u64().map_err(c)?;
        let count = input.read_u32().map_err(c)? as usize;
        // Every entry takes at least 6 bytes: a count larger than the bytes left is a lie.
        if count > input.remaining() / 6 {
            return Err(corrupt(
                path,
                format!("{count} entries in {} bytes", input.remaining()),
            ));
        }
        let name = |input: &mut DataInputView<'_>| -> Result<String> {
            let raw = input.read_len_prefixed().map_err(c)?;
            let name = std::str::from_utf8(raw)
                .ok()
                .filter(|n| valid_name(n))
                .ok_or_else(|| corrupt(path, "a file name that is not a plain name"))?;
            Ok(name.to_owned())
        };
        let mut entries = Vec::with_capacity(count);
        let mut private = 0usize;
        for _ in 0..count {
            let tag = input.read_u8().map_err(c)?;
            let file = name(&mut input)?;
            match tag {
                0 => {
                    let data = input.read_len_prefixed().map_err(c)?;
                    private += data.len();
                    if private > MAX_PRIVATE_BYTES {
                        return Err(corrupt(path, "more inline bytes than a part may hold"));
                    }
                    entries.push(Entry::Private {
                        name: file,
                        bytes: data.to_vec(),
                    });
                }
                1 => {
                    let raw = input.read_len_prefixed().map_err(c)?;
                    let object = std::str::from_utf8(raw)
                        .ok()
                        .filter(|o| {
                            let mut parts = o.split('/');
                            matches!((parts.next(), parts.next(), parts.next()),
                                (Some(a), Some(b), None) if valid_name(a) && valid_name(b))
                        })
                        .ok_or_else(|| {
                            corrupt(path, "a shared object name that is not `<operator>/<name>`")
                        })?
                        .to_owned();
                    let bytes = input.read_u64().map_err(c)?;
                    let crc = input.read_u32().map_err(c)?;
                    entries.push(Entry::Shared {
                        name: file,
                        shared: SharedObject { object, bytes, crc },
                    });
                }
                t => return Err(corrupt(path, format!("unknown entry kind {t}"))),
            }
        }
        if input.remaining() != 0 {
            return Err(corrupt(path, "trailing bytes"));
        }
        let mut names = BTreeSet::new();
        for e in &entries {
            let (Entry::Private { name, .. } | Entry::Shared { name, .. }) = e;
            if !names.insert(name.as_str()) {
                return Err(corrupt(path, format!("file `{name}` listed twice")));
            }
        }
        Ok(NativePart {
            entries,
            uploaded_bytes,
        })
    }

    /// Reads and checks a part.
    ///
    /// # Errors
    ///
    /// [`Error::Io`] when it cannot be read, [`Error::Damaged`] when it is not a whole part
    /// of this layout (checksum, names, counts).
    pub fn read(path: &Path) -> Result<Self> {
        let bytes = fs::read(path).map_err(|e| io(path, e))?;
        Self::decode(path, &bytes)
    }

    /// Reads and checks the part at `rel` in `storage` (a checkpoint directory, local or in
    /// an object store).
    ///
    /// # Errors
    ///
    /// As [`NativePart::read`]; the storage fails.
    pub fn read_from(storage: &Storage, rel: &str) -> Result<Self> {
        Self::decode(Path::new(&storage.describe(rel)), &storage.read(rel)?)
    }

    /// The shared objects the part refers to.
    pub fn objects(&self) -> impl Iterator<Item = &SharedObject> {
        self.entries.iter().filter_map(|e| match e {
            Entry::Shared { shared, .. } => Some(shared),
            Entry::Private { .. } => None,
        })
    }

    /// A part of private files (name, bytes) and shared ones (name, object, size, CRC-32), for
    /// tests and the fuzz suite.
    pub(crate) fn of(
        private: Vec<(String, Vec<u8>)>,
        shared: Vec<(String, SharedObject)>,
        uploaded_bytes: u64,
    ) -> Self {
        let mut entries: Vec<Entry> = private
            .into_iter()
            .map(|(name, bytes)| Entry::Private { name, bytes })
            .collect();
        entries.extend(
            shared
                .into_iter()
                .map(|(name, shared)| Entry::Shared { name, shared }),
        );
        NativePart {
            entries,
            uploaded_bytes,
        }
    }

    /// The shared files by their name in the database.
    fn shared_files(&self) -> SharedFiles {
        SharedFiles {
            files: self
                .entries
                .iter()
                .filter_map(|e| match e {
                    Entry::Shared { name, shared } => Some((name.clone(), shared.clone())),
                    Entry::Private { .. } => None,
                })
                .collect(),
        }
    }

    /// Lays the part out as a native RocksDB checkpoint in `dir` (created): private files
    /// written, shared objects of the checkpoint root `root` brought over (hard-linked, or
    /// copied across file systems, or downloaded from an object store), then their size and
    /// checksum checked.
    ///
    /// # Errors
    ///
    /// An object is missing, of another size or checksum; the storage fails.
    pub(crate) fn materialize(&self, root: &Storage, dir: &Path) -> Result<()> {
        fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
        for e in &self.entries {
            match e {
                Entry::Private { name, bytes } => {
                    let to = dir.join(name);
                    fs::write(&to, bytes).map_err(|e| io(&to, e))?;
                }
                Entry::Shared { name, shared } => {
                    let from = join(SHARED_DIR, &shared.object);
                    let to = dir.join(name);
                    root.fetch(&from, &to)?;
                    let (bytes, crc) = crate::checkpoint::storage::stream(&to, |_| Ok(()))?;
                    if bytes != shared.bytes || crc != shared.crc {
                        return Err(corrupt(
                            Path::new(&root.describe(&from)),
                            format!(
                                "shared file of {bytes} bytes with CRC-32 {crc:08x}, the checkpoint lists {} bytes with {:08x}",
                                shared.bytes, shared.crc
                            ),
                        ));
                    }
                }
            }
        }
        Ok(())
    }
}

/// The SST files a subtask has in the shared folder, by their name in its database: what
/// its next checkpoint refers to instead of uploading.
#[derive(Debug, Clone, Default)]
pub struct SharedFiles {
    files: HashMap<String, SharedObject>,
}

/// Writes the keyed state of a RocksDB backend as an incremental part at `part` (relative
/// to `root`, see the module docs) in the checkpoint root `root` (a local directory or an
/// object store), both halves at once: `snapshot_native` then `upload_native` (the
/// runtime runs the second on the subtask's upload lane). `operator` (the operator's
/// directory name) and `subtask` name the uploads; `shared` is what this subtask uploaded
/// before, and is updated.
///
/// # Errors
///
/// RocksDB, the file system or the store fails.
pub fn write_native_part<K: StateKey>(
    backend: &mut RocksDbKeyedStateBackend<K>,
    root: &Storage,
    operator: &str,
    epoch: u64,
    subtask: usize,
    part: &str,
    shared: &mut SharedFiles,
) -> Result<()> {
    let local = snapshot_native(backend, operator, epoch)?;
    let known = std::sync::Mutex::new(std::mem::take(shared));
    let result = upload_native(local, root, operator, epoch, subtask, part, &known);
    *shared = known
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    result.map(drop)
}

/// The synchronous half of an incremental part: a native RocksDB checkpoint of `backend`
/// (hard links to its SST files) in a directory beside the database, which the processing
/// thread can go on writing to while [`upload_native`] uploads it.
pub(crate) struct LocalNative {
    dir: PathBuf,
    files: Vec<typeinfo_state::NativeFile>,
}

impl Drop for LocalNative {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// Takes the native checkpoint of `backend` for checkpoint `epoch` (see [`LocalNative`]).
///
/// # Errors
///
/// RocksDB or the file system fails.
pub(crate) fn snapshot_native<K: StateKey>(
    backend: &mut RocksDbKeyedStateBackend<K>,
    operator: &str,
    epoch: u64,
) -> Result<LocalNative> {
    let dir = PathBuf::from(format!("{}-chk-{epoch}", backend.path().display()));
    if dir.exists() {
        fs::remove_dir_all(&dir).map_err(|e| io(&dir, e))?;
    }
    match backend.native_snapshot(&dir) {
        Ok(checkpoint) => Ok(LocalNative {
            dir,
            files: checkpoint.files,
        }),
        Err(source) => {
            let _ = fs::remove_dir_all(&dir);
            Err(Error::State {
                operator: operator.to_owned(),
                source,
            })
        }
    }
}

/// The asynchronous half of an incremental part: uploads the SST files of `local` that
/// `shared` (what this subtask's earlier parts uploaded) does not hold into the checkpoint
/// root's `shared/` (see the module docs), writes the part at `part` (relative to `root`),
/// and only then records the uploads in `shared`; the local checkpoint is removed either way.
/// A failed upload leaves `shared` as it was, so the next part uploads again what this one
/// could not.
///
/// # Errors
///
/// The file system or the store fails.
pub(crate) fn upload_native(
    local: LocalNative,
    root: &Storage,
    operator: &str,
    epoch: u64,
    subtask: usize,
    part: &str,
    shared: &std::sync::Mutex<SharedFiles>,
) -> Result<Vec<u8>> {
    let known = shared
        .lock()
        .map_err(|_| Error::Corrupt("the shared files of an earlier part".into()))?
        .clone();
    let objects = join(SHARED_DIR, operator);
    let mut out = NativePart::default();
    let mut now = SharedFiles::default();
    for f in &local.files {
        let path = local.dir.join(&f.name);
        if !f.shared {
            let bytes = fs::read(&path).map_err(|e| io(&path, e))?;
            out.entries.push(Entry::Private {
                name: f.name.clone(),
                bytes,
            });
            continue;
        }
        let object = match known.files.get(&f.name) {
            Some(known) if known.bytes == f.bytes => known.clone(),
            _ => {
                let name = format!("{epoch}-{subtask}-{}", f.name);
                let (bytes, crc) = root.put_file(&join(&objects, &name), &path)?;
                out.uploaded_bytes += bytes;
                SharedObject {
                    object: format!("{operator}/{name}"),
                    bytes,
                    crc,
                }
            }
        };
        now.files.insert(f.name.clone(), object.clone());
        out.entries.push(Entry::Shared {
            name: f.name.clone(),
            shared: object,
        });
    }
    let bytes = out.encode();
    root.put(part, &bytes)?;
    if let Ok(mut shared) = shared.lock() {
        *shared = now;
    }
    Ok(bytes)
}

/// A scratch directory for laying out parts: beside the RocksDB database (so that hard
/// links reach it), or the system's temporary directory for the heap.
fn scratch_for<K: StateKey>(backend: &KeyedBackend<K>) -> Result<tempfile::TempDir> {
    let parent = match backend {
        KeyedBackend::RocksDb(b) => b.path().parent().map(Path::to_owned),
        KeyedBackend::Heap(_) => None,
    }
    .unwrap_or_else(std::env::temp_dir);
    tempfile::Builder::new()
        .prefix(".typeinfo-restore-")
        .tempdir_in(&parent)
        .map_err(|e| io(&parent, e))
}

/// One old subtask's keyed state in a checkpoint or savepoint.
#[derive(Debug, Clone)]
pub(crate) enum KeyedFile {
    /// The savepoint format (`.kstate`).
    Full(PathBuf),
    /// An incremental part (`.native`, a local copy) and the checkpoint root its objects
    /// live in.
    Native { part: PathBuf, root: Storage },
}

/// Restores `backend` from the keyed state of every old subtask. Returns the restore's
/// report and the shared files the backend may refer to from now on (those of the part its
/// database was opened from, when that part's objects live in `own_root`, the job's own
/// checkpoint directory).
///
/// # Errors
///
/// A part is corrupt or its objects are damaged; the state crate refuses the restore.
pub(crate) fn restore_keyed<K: StateKey>(
    backend: &mut KeyedBackend<K>,
    files: &[KeyedFile],
    own_root: Option<&Storage>,
    operator: &str,
) -> Result<(typeinfo_state::RestoreReport, SharedFiles)> {
    use typeinfo_state::KeyedStateBackend;
    let state_error = |source| Error::State {
        operator: operator.to_owned(),
        source,
    };
    let full: Vec<&Path> = files
        .iter()
        .filter_map(|f| match f {
            KeyedFile::Full(p) => Some(p.as_path()),
            KeyedFile::Native { .. } => None,
        })
        .collect();
    if full.len() == files.len() {
        return Ok((
            backend.restore(&full).map_err(state_error)?,
            SharedFiles::default(),
        ));
    }
    if !full.is_empty() {
        // This runtime writes one kind per operator and checkpoint.
        return Err(Error::Corrupt(format!(
            "operator `{operator}`: its keyed state is in whole files and incremental parts at once"
        )));
    }
    let scratch = scratch_for(backend)?;
    let mut dirs = Vec::new();
    let mut parts = Vec::new();
    for (i, f) in files.iter().enumerate() {
        if let KeyedFile::Native { part, root } = f {
            let native = NativePart::read(part)?;
            let dir = scratch.path().join(format!("part-{i}"));
            native.materialize(root, &dir)?;
            dirs.push(dir);
            parts.push((native, root.clone()));
        }
    }
    let refs: Vec<&Path> = dirs.iter().map(PathBuf::as_path).collect();
    let report = backend.restore_native(&refs).map_err(state_error)?;
    let same_root = |root: &Storage| own_root.is_some_and(|own| own.same_location(root));
    let inherited = match report.opened_directly.and_then(|i| parts.get(i)) {
        Some((part, root)) if same_root(root) => part.shared_files(),
        _ => SharedFiles::default(),
    };
    Ok((report, inherited))
}

/// Converts the part at `part` (objects in `root`) into a keyed state file in the savepoint
/// format at `out`.
///
/// # Errors
///
/// As [`restore_keyed`].
pub(crate) fn to_canonical(part: &Path, root: &Storage, out: &Path) -> Result<()> {
    let native = NativePart::read(part)?;
    let scratch = tempfile::Builder::new()
        .prefix(".typeinfo-savepoint-")
        .tempdir_in(out.parent().unwrap_or(Path::new(".")))
        .map_err(|e| io(out, e))?;
    let dir = scratch.path().join("part");
    native.materialize(root, &dir)?;
    typeinfo_state::native_to_canonical(&dir, out).map_err(|source| Error::State {
        operator: String::new(),
        source,
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use typeinfo_state::{
        BackendOptions, KeyGroupRange, KeyedStateBackend, RocksDbOptions, ValueState,
        ValueStateDescriptor,
    };

    const MAX: u32 = 128;
    const KEYS: u64 = 3_000;

    fn backend(dir: &Path, range: KeyGroupRange) -> (KeyedBackend<u64>, ValueState<(), String>) {
        let mut b = KeyedBackend::rocks_db(
            dir,
            BackendOptions::new(MAX, range).unwrap(),
            RocksDbOptions::default().managed_memory_bytes(64 << 20),
        )
        .unwrap();
        let v = b
            .value_state::<(), String>(&ValueStateDescriptor::new("v"))
            .unwrap();
        (b, v)
    }

    fn write(
        b: &mut KeyedBackend<u64>,
        v: &ValueState<(), String>,
        keys: impl Iterator<Item = u64>,
        round: u32,
    ) {
        for k in keys {
            b.set_current_key(&k).unwrap();
            v.update(b, &(), format!("{k} in round {round} {}", "x".repeat(64)))
                .unwrap();
        }
    }

    fn read(b: &mut KeyedBackend<u64>, v: &ValueState<(), String>) -> Vec<(u64, String)> {
        let mut out = Vec::new();
        for k in 0..KEYS {
            if b.set_current_key(&k).is_err() {
                continue;
            }
            if let Some(s) = v.value(b, &()).unwrap() {
                out.push((k, s));
            }
        }
        out
    }

    fn native(root: &Path, epoch: u64) -> PathBuf {
        root.join(format!("chk-{epoch}/uid-op/subtask-0.native"))
    }

    fn write_part(
        b: &mut KeyedBackend<u64>,
        root: &Path,
        epoch: u64,
        shared: &mut SharedFiles,
    ) -> NativePart {
        let KeyedBackend::RocksDb(r) = b else {
            unreachable!()
        };
        let part = format!("chk-{epoch}/uid-op/subtask-0.native");
        let local = snapshot_native(r, "uid-op", epoch).unwrap();
        let known = std::sync::Mutex::new(shared.clone());
        upload_native(
            local,
            &Storage::local(root),
            "uid-op",
            epoch,
            0,
            &part,
            &known,
        )
        .unwrap();
        *shared = known.into_inner().unwrap();
        NativePart::read(&native(root, epoch)).unwrap()
    }

    #[test]
    fn a_second_part_uploads_only_new_files_and_restores_exactly() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("checkpoints");
        let (mut b, v) = backend(&tmp.path().join("db"), KeyGroupRange::all(MAX));
        let mut shared = SharedFiles::default();
        write(&mut b, &v, 0..KEYS, 1);
        let first = write_part(&mut b, &root, 1, &mut shared);
        let total = |p: &NativePart| p.objects().map(|o| o.bytes).sum::<u64>();
        assert_eq!(
            first.uploaded_bytes,
            total(&first),
            "the first part uploads everything"
        );
        write(&mut b, &v, 0..30, 2);
        let expected = read(&mut b, &v);
        let second = write_part(&mut b, &root, 2, &mut shared);
        assert!(
            second.uploaded_bytes < total(&first) / 4,
            "1% of the keys changed: {} of {} bytes uploaded",
            second.uploaded_bytes,
            total(&first)
        );
        let reused: Vec<_> = second
            .objects()
            .filter(|o| first.objects().any(|f| f == *o))
            .collect();
        assert!(
            !reused.is_empty(),
            "the second part refers to the first one's objects"
        );
        // No local checkpoint directory is left beside the database.
        let leftovers: Vec<_> = fs::read_dir(tmp.path())
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().contains("-chk-"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");

        // Restore at the same parallelism: the database is opened from the part, and the
        // restored backend refers to the same objects (its next part uploads little).
        let files = [KeyedFile::Native {
            part: native(&root, 2),
            root: Storage::local(&root),
        }];
        let (mut c, cv) = backend(&tmp.path().join("restored"), KeyGroupRange::all(MAX));
        let (report, mut inherited) =
            restore_keyed(&mut c, &files, Some(&Storage::local(&root)), "op").unwrap();
        assert_eq!(report.opened_directly, Some(0));
        assert_eq!(read(&mut c, &cv), expected);
        let third = write_part(&mut c, &root, 3, &mut inherited);
        assert!(
            third.uploaded_bytes < total(&first) / 4,
            "{} bytes",
            third.uploaded_bytes
        );
        // Restored from another job's directory: nothing inherited, all uploaded again.
        let (mut d, _) = backend(&tmp.path().join("elsewhere"), KeyGroupRange::all(MAX));
        let (_, none) = restore_keyed(
            &mut d,
            &files,
            Some(&Storage::local(tmp.path().join("other"))),
            "op",
        )
        .unwrap();
        assert!(none.files.is_empty());

        // At another parallelism (two halves) and into the heap: the same entries.
        let mut halves = Vec::new();
        for range in [
            KeyGroupRange::new(0, 63).unwrap(),
            KeyGroupRange::new(64, 127).unwrap(),
        ] {
            let (mut h, hv) = backend(&tmp.path().join(format!("half-{}", range.start())), range);
            restore_keyed(&mut h, &files, Some(&Storage::local(&root)), "op").unwrap();
            halves.extend(read(&mut h, &hv));
        }
        halves.sort();
        assert_eq!(halves, expected);
        let mut heap =
            KeyedBackend::<u64>::heap(BackendOptions::new(MAX, KeyGroupRange::all(MAX)).unwrap())
                .unwrap();
        let hv = heap
            .value_state::<(), String>(&ValueStateDescriptor::new("v"))
            .unwrap();
        restore_keyed(&mut heap, &files, Some(&Storage::local(&root)), "op").unwrap();
        assert_eq!(read(&mut heap, &hv), expected);

        // And as a savepoint-format file.
        let out = tmp.path().join("subtask-0.kstate");
        to_canonical(&native(&root, 2), &Storage::local(&root), &out).unwrap();
        let (mut e, ev) = backend(&tmp.path().join("from-canonical"), KeyGroupRange::all(MAX));
        restore_keyed(&mut e, &[KeyedFile::Full(out)], None, "op").unwrap();
        assert_eq!(read(&mut e, &ev), expected);
    }

    #[test]
    fn a_damaged_or_missing_object_is_refused_by_name() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("checkpoints");
        let (mut b, v) = backend(&tmp.path().join("db"), KeyGroupRange::all(MAX));
        write(&mut b, &v, 0..KEYS, 1);
        let part = write_part(&mut b, &root, 1, &mut SharedFiles::default());
        let object = root
            .join(SHARED_DIR)
            .join(&part.objects().next().unwrap().object);
        let files = [KeyedFile::Native {
            part: native(&root, 1),
            root: Storage::local(&root),
        }];
        let mut bytes = fs::read(&object).unwrap();
        let middle = bytes.len() / 2;
        bytes[middle] ^= 1;
        fs::write(&object, &bytes).unwrap();
        let (mut c, _) = backend(&tmp.path().join("restored"), KeyGroupRange::all(MAX));
        let err = restore_keyed(&mut c, &files, Some(&Storage::local(&root)), "op")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(&*object.to_string_lossy()) && err.contains("CRC-32"),
            "{err}"
        );
        fs::remove_file(&object).unwrap();
        let err = restore_keyed(&mut c, &files, Some(&Storage::local(&root)), "op")
            .unwrap_err()
            .to_string();
        assert!(err.contains(&*object.to_string_lossy()), "{err}");
    }

    fn part() -> NativePart {
        NativePart {
            entries: vec![
                Entry::Private {
                    name: "CURRENT".into(),
                    bytes: b"MANIFEST-000005\n".to_vec(),
                },
                Entry::Shared {
                    name: "000012.sst".into(),
                    shared: SharedObject {
                        object: "uid-counts/3-0-000012.sst".into(),
                        bytes: 4096,
                        crc: 0xdead_beef,
                    },
                },
            ],
            uploaded_bytes: 4096,
        }
    }

    #[test]
    fn parts_round_trip_and_every_damage_is_refused() {
        let p = Path::new("subtask-0.native");
        let bytes = part().encode();
        assert_eq!(NativePart::decode(p, &bytes).unwrap(), part());
        for i in 0..bytes.len() {
            let mut b = bytes.clone();
            b[i] ^= 0x20;
            assert!(NativePart::decode(p, &b).is_err(), "byte {i} flipped");
            assert!(NativePart::decode(p, &bytes[..i]).is_err(), "cut at {i}");
        }
    }

    #[test]
    fn names_that_leave_their_folder_are_refused() {
        for bad in ["../x.sst", "a/b", "", ".", "..", "x\\y", "a b"] {
            assert!(!valid_name(bad), "{bad:?}");
        }
        let mut p = part();
        if let Entry::Shared { shared, .. } = &mut p.entries[1] {
            shared.object = "uid-counts/../../etc".into();
        }
        assert!(NativePart::decode(Path::new("x"), &p.encode()).is_err());
        let mut p = part();
        p.entries.push(p.entries[0].clone());
        let err = NativePart::decode(Path::new("x"), &p.encode()).unwrap_err();
        assert!(err.to_string().contains("listed twice"), "{err}");
    }
}
