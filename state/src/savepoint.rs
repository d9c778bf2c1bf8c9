//! The savepoint format both backends write and read, and the restore driver.
//!
//! One file holds the keyed state of one backend (one operator subtask): its key groups,
//! every state's metadata with the snapshots of its serializers, and the entries grouped by
//! key group, with an index so that a subtask of another parallelism reads only its own key
//! groups. The layout is specified in `state/FORMAT.md`.
//!
//! Restore first reads and checks every file (checksum, magic, version), resolves every
//! stored state against today's serializers, and only then writes anything: a corrupt,
//! foreign or incompatible savepoint leaves the target empty and the files untouched.
//!
//! A file's checksum proves only that it was not damaged after it was written, so the
//! entries are checked as they are read, the same way for both backends: every part is read
//! in full (parts that need no migration too, so that a string's bytes are valid UTF-8 in
//! RocksDB as on the heap), and every key must hash to the key group of the block that
//! holds it ([`key_group_for_bytes`] of its stored bytes). A file that fails either check
//! is [`Error::CorruptSavepoint`].
//!
//! Tools read a file without the job's types through [`SnapshotFile`] (its header, its
//! key-group blocks, and every entry as [`StoredEntry`]: each part's bytes and the
//! [`Value`] a serializer restored from its snapshot reads), through the
//! same block reader restore uses, with the same checks; [`rewrite_max_parallelism`] files
//! an operator's entries under another max parallelism.

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use typeinfo::{
    Compatibility, DataInputView, DataOutputView, RestoredSerializer, SerializerSnapshot,
    SnapshotRegistry, TypeSerializer, Value,
};

use crate::error::{Error, Result};
use crate::key_group::{key_group_for_bytes, KeyGroupRange};
use crate::meta::{StateKind, StateMeta};

/// Magic bytes at the start of a keyed snapshot file.
pub const MAGIC: [u8; 4] = *b"TIKS";
/// Magic bytes at the end of a keyed snapshot file.
pub const END_MAGIC: [u8; 4] = *b"TIKE";
/// The format version this code writes and reads.
pub const FORMAT_VERSION: u8 = 1;
const FOOTER_LEN: usize = 8 + 4 + 4;

/// What a snapshot wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyedSnapshot {
    /// The file.
    pub path: PathBuf,
    /// Its size in bytes.
    pub bytes: u64,
    /// Entries written per state name (a list or map counts its key-namespace pairs or entries).
    pub entries: BTreeMap<String, u64>,
}

/// What a restore did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RestoreReport {
    /// Entries restored per state name.
    pub entries: BTreeMap<String, u64>,
    /// The states (and the part: `key`, `namespace`, `value`, ...) that were migrated.
    pub migrated: Vec<String>,
    /// Entries of key groups outside this backend's range that were skipped.
    pub skipped: u64,
    /// For a restore from native RocksDB checkpoints: the index (in the directories given)
    /// of the checkpoint whose files the database was opened from, if one was (a checkpoint
    /// store may then keep referring to those files instead of uploading them again).
    pub opened_directly: Option<usize>,
}

/// The header of a keyed snapshot file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotHeader {
    /// The job's max parallelism.
    pub max_parallelism: u32,
    /// The key groups the file holds.
    pub range: KeyGroupRange,
    /// The key serializer's snapshot.
    pub key: SerializerSnapshot,
    /// The states, in the order of their entries.
    pub states: Vec<StateMeta>,
}

/// Writes a keyed snapshot file: the caller supplies the entries of each state per key group.
pub(crate) struct SnapshotWriter {
    out: DataOutputView,
    index: Vec<(u16, u64)>,
    entries: Vec<u64>,
    scratch: DataOutputView,
}

impl SnapshotWriter {
    pub(crate) fn new(header: &SnapshotHeader) -> Result<Self> {
        let mut out = DataOutputView::with_capacity(4096);
        out.write_bytes(&MAGIC);
        out.write_u8(FORMAT_VERSION);
        let mut h = DataOutputView::new();
        h.write_u32(header.max_parallelism);
        h.write_u16(header.range.start());
        h.write_u16(header.range.end());
        header.key.write_to(&mut h)?;
        h.write_len(header.states.len());
        for state in &header.states {
            h.write_len_prefixed(state.name.as_bytes());
            h.write_u8(state.kind as u8);
            h.write_bool(state.ttl);
            state.namespace.write_to(&mut h)?;
            h.write_len(state.values.len());
            for v in &state.values {
                v.write_to(&mut h)?;
            }
        }
        out.write_len_prefixed(h.as_slice());
        Ok(Self {
            out,
            index: Vec::new(),
            entries: vec![0; header.states.len()],
            scratch: DataOutputView::new(),
        })
    }

    /// Starts the block of `key_group`.
    pub(crate) fn begin_key_group(&mut self, key_group: u16) {
        self.index.push((key_group, self.out.len() as u64));
        self.out.write_u16(key_group);
    }

    /// Writes the entries of state `index` in the current key group: `write` appends the
    /// entries to the scratch buffer and returns how many it wrote.
    pub(crate) fn state_entries(
        &mut self,
        index: usize,
        write: impl FnOnce(&mut DataOutputView) -> Result<u64>,
    ) -> Result<()> {
        self.scratch.clear();
        let count = write(&mut self.scratch)?;
        self.out.write_varint(count);
        self.out.write_bytes(self.scratch.as_slice());
        self.entries[index] += count;
        Ok(())
    }

    /// Finishes the file at `path` (temporary name, sync, rename, sync of the directory).
    pub(crate) fn finish(mut self, path: &Path, names: &[String]) -> Result<KeyedSnapshot> {
        let index_offset = self.out.len() as u64;
        self.out.write_len(self.index.len());
        for (kg, offset) in &self.index {
            self.out.write_u16(*kg);
            self.out.write_u64(*offset);
        }
        self.out.write_u64(index_offset);
        let crc = crc32fast::hash(self.out.as_slice());
        self.out.write_u32(crc);
        self.out.write_bytes(&END_MAGIC);
        write_atomically(path, self.out.as_slice())?;
        Ok(KeyedSnapshot {
            path: path.to_owned(),
            bytes: self.out.len() as u64,
            entries: names.iter().cloned().zip(self.entries).collect(),
        })
    }
}

/// Writes `bytes` to `path` through a temporary file in the same directory: write, sync,
/// rename, sync the directory. A crash leaves the previous file (if any) intact.
///
/// # Errors
///
/// Any I/O error, naming the path.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let file_name = path
        .file_name()
        .ok_or_else(|| Error::InvalidConfig(format!("`{}` has no file name", path.display())))?;
    let tmp = dir.join(format!(
        ".{}.tmp-{}",
        file_name.to_string_lossy(),
        std::process::id()
    ));
    let result = (|| {
        let mut file = fs::File::create(&tmp).map_err(|e| Error::io(&tmp, e))?;
        file.write_all(bytes).map_err(|e| Error::io(&tmp, e))?;
        file.sync_all().map_err(|e| Error::io(&tmp, e))?;
        fs::rename(&tmp, path).map_err(|e| Error::io(path, e))?;
        if let Ok(d) = fs::File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// A keyed snapshot file (`.kstate`), read and checked, in memory.
///
/// [`open`](Self::open) checks what can be checked without the state's types: the size,
/// both magics, the checksum, the version, the header (every serializer snapshot) and the
/// index. [`read_entries`](Self::read_entries) then reads every entry without the Rust
/// types that wrote it, through serializers restored from the header's snapshots, with the
/// checks restore makes (each key in the key group of its block, each part read in full).
/// Tools read savepoints with it; the backends restore through the same block reader.
///
/// # Examples
///
/// ```no_run
/// use typeinfo::SnapshotRegistry;
/// use typeinfo_state::savepoint::SnapshotFile;
///
/// # fn main() -> typeinfo_state::Result<()> {
/// let file = SnapshotFile::open("savepoint/uid-counts/subtask-0.kstate".as_ref())?;
/// for state in &file.header().states {
///     println!("{} ({})", state.name, state.kind);
/// }
/// file.read_entries(&SnapshotRegistry::default(), |entry| {
///     println!("{:?} -> {:?}", entry.key.value, entry.value);
///     Ok(())
/// })?;
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct SnapshotFile {
    path: PathBuf,
    bytes: Vec<u8>,
    header: SnapshotHeader,
    /// Offsets of the key group blocks.
    index: Vec<(u16, usize)>,
    /// Where the index starts (the end of the last block).
    index_offset: usize,
}

fn corrupt(path: &Path, detail: impl Into<String>) -> Error {
    Error::CorruptSavepoint {
        path: path.to_owned(),
        detail: detail.into(),
    }
}

impl SnapshotFile {
    /// Reads and checks a file: size, magics, checksum, version, header and index.
    ///
    /// # Errors
    ///
    /// [`Error::Io`] when the file cannot be read, [`Error::CorruptSavepoint`] for a
    /// truncated, damaged or foreign file.
    pub fn open(path: &Path) -> Result<Self> {
        let bytes = fs::read(path).map_err(|e| Error::io(path, e))?;
        if bytes.len() < MAGIC.len() + 1 + FOOTER_LEN || bytes[..4] != MAGIC {
            return Err(corrupt(
                path,
                "not a typeinfo keyed snapshot (bad magic or too short)",
            ));
        }
        let body_len = bytes.len() - 8;
        if bytes[body_len + 4..] != END_MAGIC {
            return Err(corrupt(path, "truncated: the end marker is missing"));
        }
        let stored_crc = u32::from_le_bytes([
            bytes[body_len],
            bytes[body_len + 1],
            bytes[body_len + 2],
            bytes[body_len + 3],
        ]);
        if crc32fast::hash(&bytes[..body_len]) != stored_crc {
            return Err(corrupt(path, "checksum mismatch: the file is corrupt"));
        }
        let parse = |e: typeinfo::Error| corrupt(path, format!("malformed: {e}"));
        let mut input = DataInputView::new(&bytes[..body_len]);
        input.skip_bytes(4).map_err(parse)?;
        let version = input.read_u8().map_err(parse)?;
        if version != FORMAT_VERSION {
            return Err(corrupt(
                path,
                format!("format version {version}, this code reads {FORMAT_VERSION}"),
            ));
        }
        let header_bytes = input.read_len_prefixed().map_err(parse)?;
        let header =
            parse_header(header_bytes).map_err(|e| corrupt(path, format!("bad header: {e}")))?;
        let index_offset = {
            let tail = &bytes[body_len - 8..body_len];
            u64::from_le_bytes(
                tail.try_into()
                    .map_err(|_| corrupt(path, "bad index offset"))?,
            ) as usize
        };
        if index_offset > body_len - 8 {
            return Err(corrupt(path, "index offset past the end"));
        }
        let mut idx = DataInputView::new(&bytes[index_offset..body_len - 8]);
        let count = idx.read_len(10).map_err(parse)?;
        let mut index = Vec::with_capacity(count);
        for _ in 0..count {
            let kg = idx.read_u16().map_err(parse)?;
            let offset = idx.read_u64().map_err(parse)? as usize;
            if offset >= index_offset || !header.range.contains(kg) {
                return Err(corrupt(
                    path,
                    format!("index entry for key group {kg} is out of place"),
                ));
            }
            index.push((kg, offset));
        }
        Ok(Self {
            path: path.to_owned(),
            bytes,
            header,
            index,
            index_offset,
        })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The file's header: max parallelism, key group range, key serializer and states.
    pub fn header(&self) -> &SnapshotHeader {
        &self.header
    }

    /// The file's size in bytes.
    pub fn len(&self) -> u64 {
        self.bytes.len() as u64
    }

    /// Whether the file is empty (never: an open file has at least its header and footer).
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// The key group blocks in index order, each with its size in bytes (from its offset
    /// to the next block's, or to the index).
    pub fn key_group_blocks(&self) -> Vec<(u16, u64)> {
        self.index
            .iter()
            .zip(self.block_ends())
            .map(|(&(kg, offset), end)| (kg, (end - offset) as u64))
            .collect()
    }

    /// Where each block of the index ends: where the next block by offset begins, or at
    /// the index.
    fn block_ends(&self) -> Vec<usize> {
        let mut starts: Vec<usize> = self.index.iter().map(|&(_, o)| o).collect();
        starts.sort_unstable();
        self.index
            .iter()
            .map(|&(_, offset)| {
                let next = starts.partition_point(|&o| o <= offset);
                starts.get(next).copied().unwrap_or(self.index_offset)
            })
            .collect()
    }

    /// Reads every entry of every key group, in index order, without the Rust types that
    /// wrote them: each part through the serializer `registry` restores from its snapshot
    /// in the header. Every key must hash to the key group of its block, and every block
    /// must end where the next begins.
    ///
    /// # Errors
    ///
    /// [`Error::CorruptSavepoint`] naming the state for an entry that cannot be read or is
    /// filed under the wrong key group; [`Error::Serialization`] for a snapshot no
    /// restorer knows (a user's own serializer kind: register its restorer); any error of
    /// `visit`, as it is.
    pub fn read_entries(
        &self,
        registry: &SnapshotRegistry,
        visit: impl FnMut(StoredEntry<'_>) -> Result<()>,
    ) -> Result<()> {
        let mut reader = ValueReader::new(&self.header, registry, visit)?;
        for (&(kg, offset), expected) in self.index.iter().zip(self.block_ends()) {
            let end = self.read_block(kg, offset, &mut reader)?;
            if end != expected {
                return Err(corrupt(
                    &self.path,
                    format!(
                        "the block of key group {kg} ends at byte {end}, not where the next begins ({expected})"
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Reads the block of `key_group` at `offset` with `visitor`, checking each key's key
    /// group; returns the offset where the block's entries end.
    fn read_block<'a>(
        &'a self,
        key_group: u16,
        offset: usize,
        visitor: &mut impl EntryVisitor<'a>,
    ) -> Result<usize> {
        let path = &self.path;
        let body_len = self.bytes.len() - 8;
        let mut block = DataInputView::new(&self.bytes[offset..body_len - 8]);
        let stored_kg = block.read_u16().map_err(|e| corrupt(path, e.to_string()))?;
        if stored_kg != key_group {
            return Err(corrupt(
                path,
                format!("block of key group {key_group} is labelled {stored_kg}"),
            ));
        }
        for (index, meta) in self.header.states.iter().enumerate() {
            let count = block
                .read_varint()
                .map_err(|e| corrupt(path, e.to_string()))?;
            // Entries of one state in one key group have distinct composite keys, so
            // at most one of them can be written in zero bytes: a count beyond the
            // bytes left (plus that one) is corrupt, not a reason to loop.
            if count > block.remaining() as u64 + 1 {
                return Err(corrupt(
                    path,
                    format!(
                        "state `{}`: {count} entries in key group {key_group} cannot fit in the {} bytes left",
                        meta.name,
                        block.remaining()
                    ),
                ));
            }
            let in_state =
                |e: &dyn std::fmt::Display| corrupt(path, format!("state `{}`: {e}", meta.name));
            for _ in 0..count {
                // One entry is one read: the budget for elements that take no bytes
                // is the entry's, not shared by the whole block.
                block.reset_zero_sized_budget();
                let key_start = block.position();
                visitor.key(&mut block).map_err(|e| in_state(&e))?;
                // A key is filed under the key group of its stored bytes: one that
                // hashes elsewhere would be unreachable (or land outside this
                // backend's range), so it is corrupt, not a key to file as labelled.
                let stored_kg = key_group_for_bytes(
                    block.consumed_since(key_start),
                    self.header.max_parallelism,
                );
                if stored_kg != key_group {
                    return Err(in_state(&format!(
                        "a key in the block of key group {key_group} belongs to key group {stored_kg}"
                    )));
                }
                match visitor.rest(key_group, index, &mut block) {
                    Ok(()) => {}
                    Err(EntryError::Read(e)) => return Err(in_state(&e)),
                    Err(EntryError::Other(e)) => return Err(e),
                }
            }
        }
        Ok(offset + block.position())
    }
}

/// Why reading one entry failed.
pub(crate) enum EntryError {
    /// Its bytes could not be read: the file is corrupt (reported naming the state).
    Read(typeinfo::Error),
    /// Anything else, passed on as it is.
    Other(Error),
}

impl From<typeinfo::Error> for EntryError {
    fn from(e: typeinfo::Error) -> Self {
        Self::Read(e)
    }
}

impl From<Error> for EntryError {
    fn from(e: Error) -> Self {
        Self::Other(e)
    }
}

/// Reads the entries of a key group block one at a time: the key, then the rest.
pub(crate) trait EntryVisitor<'a> {
    /// Reads the key at the input's position.
    fn key(&mut self, input: &mut DataInputView<'a>) -> typeinfo::Result<()>;
    /// Reads the rest of an entry of state `state` (`[namespace][value part]`) in the
    /// block of `key_group`.
    fn rest(
        &mut self,
        key_group: u16,
        state: usize,
        input: &mut DataInputView<'a>,
    ) -> std::result::Result<(), EntryError>;
}

/// One part of a stored entry (key, namespace, value, list element, user key ...): its
/// bytes as stored and the value they hold, read without its Rust type.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredPart<'a> {
    /// The part's bytes in the file.
    pub bytes: &'a [u8],
    /// The part read through the serializer restored from its snapshot.
    pub value: Value,
}

/// What an entry holds after its key and namespace, by the kind of its state. `ttl` is the
/// last-access time (milliseconds since the epoch) of a state with a TTL.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum StoredValue<'a> {
    /// The value of a value, reducing or aggregating state.
    Single {
        /// The last-access time, for a state with a TTL.
        ttl: Option<i64>,
        /// The value (the accumulator of an aggregating state).
        value: StoredPart<'a>,
    },
    /// The elements of a list, each with its last-access time for a state with a TTL.
    List(Vec<(Option<i64>, StoredPart<'a>)>),
    /// One entry of a map (a map state stores each of its entries as an entry).
    MapEntry {
        /// The user key.
        user_key: StoredPart<'a>,
        /// The last-access time, for a state with a TTL.
        ttl: Option<i64>,
        /// The user value.
        value: StoredPart<'a>,
    },
}

/// One entry of a keyed snapshot file, read without its Rust types
/// ([`SnapshotFile::read_entries`]).
#[derive(Debug, Clone, PartialEq)]
pub struct StoredEntry<'a> {
    /// The key group of its block (that of its key's bytes).
    pub key_group: u16,
    /// The index of its state in the header's states.
    pub state: usize,
    /// The key.
    pub key: StoredPart<'a>,
    /// The namespace (`()` for plain keyed state, a window for window contents).
    pub namespace: StoredPart<'a>,
    /// What it holds after the namespace.
    pub value: StoredValue<'a>,
    /// The bytes after the key, `[namespace][value part]`, as stored.
    pub rest: &'a [u8],
}

impl StoredEntry<'_> {
    /// The entry's size in the file (its key and the rest).
    pub fn len(&self) -> usize {
        self.key.bytes.len() + self.rest.len()
    }

    /// Whether the entry takes no bytes (only a `()` key and namespace with an empty value).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The serializers of one state restored from its snapshots.
struct StateReader {
    kind: StateKind,
    ttl: bool,
    namespace: RestoredSerializer,
    values: Vec<RestoredSerializer>,
}

/// Reads one part with a restored serializer: its value and its bytes.
fn read_part<'a>(
    serializer: &RestoredSerializer,
    input: &mut DataInputView<'a>,
) -> typeinfo::Result<StoredPart<'a>> {
    let start = input.position();
    let value = serializer.deserialize(input)?;
    Ok(StoredPart {
        bytes: input.consumed_since(start),
        value,
    })
}

fn read_ttl(ttl: bool, input: &mut DataInputView<'_>) -> typeinfo::Result<Option<i64>> {
    ttl.then(|| input.read_i64()).transpose()
}

/// The entry visitor of [`SnapshotFile::read_entries`]: every part through the serializers
/// restored from the header.
struct ValueReader<'a, F> {
    key_serializer: RestoredSerializer,
    states: Vec<StateReader>,
    key: Option<StoredPart<'a>>,
    visit: F,
}

impl<'a, F: FnMut(StoredEntry<'a>) -> Result<()>> ValueReader<'a, F> {
    fn new(header: &SnapshotHeader, registry: &SnapshotRegistry, visit: F) -> Result<Self> {
        let restore = |snapshot: &SerializerSnapshot, state: &str, part: &str| {
            registry.restore(snapshot).map_err(|e| {
                Error::Serialization(typeinfo::Error::custom(format!(
                    "the {part} of state `{state}` ({}) cannot be read without its type: {e}",
                    snapshot.type_name()
                )))
            })
        };
        let key_serializer = restore(&header.key, "(all)", "key")?;
        let mut states = Vec::with_capacity(header.states.len());
        for meta in &header.states {
            check_value_serializers(meta)?;
            states.push(StateReader {
                kind: meta.kind.layout(),
                ttl: meta.ttl,
                namespace: restore(&meta.namespace, &meta.name, "namespace")?,
                values: meta
                    .values
                    .iter()
                    .map(|v| restore(v, &meta.name, "value"))
                    .collect::<Result<_>>()?,
            });
        }
        Ok(Self {
            key_serializer,
            states,
            key: None,
            visit,
        })
    }
}

impl<'a, F: FnMut(StoredEntry<'a>) -> Result<()>> EntryVisitor<'a> for ValueReader<'a, F> {
    fn key(&mut self, input: &mut DataInputView<'a>) -> typeinfo::Result<()> {
        self.key = Some(read_part(&self.key_serializer, input)?);
        Ok(())
    }

    fn rest(
        &mut self,
        key_group: u16,
        state: usize,
        input: &mut DataInputView<'a>,
    ) -> std::result::Result<(), EntryError> {
        let reader = &self.states[state];
        let start = input.position();
        let namespace = read_part(&reader.namespace, input)?;
        let value = match reader.kind {
            StateKind::List => {
                let mut elements = DataInputView::new(input.read_len_prefixed()?);
                let mut list = Vec::new();
                while !elements.is_empty() {
                    // Each element of a list is its own value (its own zero-sized budget).
                    elements.reset_zero_sized_budget();
                    let ttl = read_ttl(reader.ttl, &mut elements)?;
                    list.push((ttl, read_part(&reader.values[0], &mut elements)?));
                }
                StoredValue::List(list)
            }
            StateKind::Map => StoredValue::MapEntry {
                user_key: read_part(&reader.values[0], input)?,
                ttl: read_ttl(reader.ttl, input)?,
                value: read_part(&reader.values[1], input)?,
            },
            _ => StoredValue::Single {
                ttl: read_ttl(reader.ttl, input)?,
                value: read_part(&reader.values[0], input)?,
            },
        };
        let key = self
            .key
            .take()
            .ok_or_else(|| typeinfo::Error::custom("an entry without a key"))?;
        (self.visit)(StoredEntry {
            key_group,
            state,
            key,
            namespace,
            value,
            rest: input.consumed_since(start),
        })?;
        Ok(())
    }
}

fn parse_header(bytes: &[u8]) -> typeinfo::Result<SnapshotHeader> {
    let mut input = DataInputView::new(bytes);
    let max_parallelism = input.read_u32()?;
    let start = input.read_u16()?;
    let end = input.read_u16()?;
    let range =
        KeyGroupRange::new(start, end).map_err(|e| typeinfo::Error::custom(e.to_string()))?;
    if u32::from(end) >= max_parallelism {
        return Err(typeinfo::Error::custom(format!(
            "key group {end} beyond max parallelism {max_parallelism}"
        )));
    }
    let key = SerializerSnapshot::read_from(&mut input)?;
    let count = input.read_len(4)?;
    let mut states = Vec::with_capacity(typeinfo::capacity_for::<StateMeta>(count, 4));
    for _ in 0..count {
        let name = std::str::from_utf8(input.read_len_prefixed()?)
            .map_err(|_| typeinfo::Error::InvalidUtf8)?
            .to_owned();
        let kind_byte = input.read_u8()?;
        let kind = StateKind::from_byte(kind_byte).ok_or_else(|| typeinfo::Error::InvalidTag {
            what: "state kind".to_owned(),
            tag: u64::from(kind_byte),
        })?;
        let ttl = input.read_bool()?;
        let namespace = SerializerSnapshot::read_from(&mut input)?;
        let n = input.read_len(4)?;
        let mut values = Vec::with_capacity(typeinfo::capacity_for::<SerializerSnapshot>(n, 4));
        for _ in 0..n {
            values.push(SerializerSnapshot::read_from(&mut input)?);
        }
        states.push(StateMeta {
            name,
            kind,
            ttl,
            namespace,
            values,
        });
    }
    if !input.is_empty() {
        return Err(typeinfo::Error::TrailingBytes(input.remaining()));
    }
    Ok(SnapshotHeader {
        max_parallelism,
        range,
        key,
        states,
    })
}

/// Turns one serialized part in a stored layout into today's layout.
pub(crate) type PartFn =
    Arc<dyn Fn(&mut DataInputView<'_>, &mut DataOutputView) -> typeinfo::Result<()> + Send + Sync>;

/// The transcoder of one part (`key`, `namespace`, `value`) of one state, and whether it migrates.
pub(crate) fn part_transcoder<T: 'static, S: TypeSerializer<T> + Clone>(
    serializer: &S,
    stored: &SerializerSnapshot,
    registry: &SnapshotRegistry,
    state: &str,
    part: &'static str,
) -> Result<(PartFn, bool)> {
    let s = serializer.clone();
    Ok(match serializer.resolve(stored, registry) {
        // `copy_serialized` checks only the structure of the bytes (not a string's UTF-8, a
        // set's distinct elements ...): a part that needs no migration is read in full, so
        // that what one backend refuses the other refuses too, then copied as it was.
        Compatibility::AsIs => (
            Arc::new(move |i, o| {
                let start = i.position();
                s.deserialize(i)?;
                o.write_bytes(i.consumed_since(start));
                Ok(())
            }),
            false,
        ),
        Compatibility::AfterMigration(reader) => {
            (Arc::new(move |i, o| s.serialize(&reader.read(i)?, o)), true)
        }
        Compatibility::Reconfigured(r) => (
            Arc::new(move |i, o| s.serialize(&r.deserialize(i)?, o)),
            true,
        ),
        Compatibility::Incompatible(incompatibility) => {
            return Err(Error::IncompatibleState {
                state: state.to_owned(),
                part,
                incompatibility: Box::new(incompatibility),
            })
        }
    })
}

/// Transcodes the part of an entry after the key: `[namespace][value part]`.
pub(crate) struct EntryTranscoder {
    pub(crate) kind: StateKind,
    pub(crate) ttl: bool,
    pub(crate) namespace: PartFn,
    /// Value (or list element, or map user key then user value).
    pub(crate) values: Vec<PartFn>,
    pub(crate) migrated: Vec<&'static str>,
}

impl EntryTranscoder {
    fn ttl(&self, input: &mut DataInputView<'_>, out: &mut DataOutputView) -> typeinfo::Result<()> {
        if self.ttl {
            out.write_bytes(input.read_bytes(8)?);
        }
        Ok(())
    }

    /// Reads one stored `[namespace][value part]` and writes it in today's layout.
    pub(crate) fn transcode(
        &self,
        input: &mut DataInputView<'_>,
        out: &mut DataOutputView,
    ) -> typeinfo::Result<()> {
        (self.namespace)(input, out)?;
        match self.kind.layout() {
            StateKind::List => {
                let stored = input.read_len_prefixed()?;
                let mut elements = DataInputView::new(stored);
                let mut today = DataOutputView::with_capacity(stored.len());
                while !elements.is_empty() {
                    // Each element of a list is its own value (its own zero-sized budget).
                    elements.reset_zero_sized_budget();
                    today.reset_zero_sized_budget();
                    self.ttl(&mut elements, &mut today)?;
                    (self.values[0])(&mut elements, &mut today)?;
                }
                out.write_len_prefixed(today.as_slice());
            }
            StateKind::Map => {
                (self.values[0])(input, out)?;
                self.ttl(input, out)?;
                (self.values[1])(input, out)?;
            }
            _ => {
                self.ttl(input, out)?;
                (self.values[0])(input, out)?;
            }
        }
        Ok(())
    }
}

/// A registered state as restore sees it: its metadata, how to transcode stored entries,
/// and how to ingest today's entries.
pub(crate) trait RestoreTarget {
    /// Transcodes stored keys into today's key bytes; `true` when keys migrate.
    fn key_transcoder(
        &self,
        stored: &SerializerSnapshot,
        registry: &SnapshotRegistry,
    ) -> Result<(PartFn, bool)>;
    /// The index of the registered state named `name`, with its transcoder for `stored`.
    fn state_transcoder(
        &self,
        stored: &StateMeta,
        registry: &SnapshotRegistry,
    ) -> Result<(usize, EntryTranscoder)>;
    /// Stores one entry in today's layout.
    fn ingest(&mut self, state: usize, key_group: u16, key: &[u8], entry: &[u8]) -> Result<()>;
    /// Removes everything (after a failed restore).
    fn clear_all(&mut self) -> Result<()>;
    /// Flushes batched writes.
    fn flush(&mut self) -> Result<()> {
        Ok(())
    }
}

/// Restores `files` into `target`, which holds `range` of `max_parallelism` key groups.
pub(crate) fn restore_into(
    target: &mut dyn RestoreTarget,
    files: &[&Path],
    max_parallelism: u32,
    range: KeyGroupRange,
) -> Result<RestoreReport> {
    let registry = SnapshotRegistry::default();
    // 1. Read and check every file, resolve every state: nothing is written yet.
    let mut opened = Vec::with_capacity(files.len());
    for path in files {
        let file = SnapshotFile::open(path)?;
        if file.header.max_parallelism != max_parallelism {
            return Err(Error::StateMismatch {
                state: "(all)".to_owned(),
                detail: format!(
                    "max parallelism {} in `{}` but {} today: key groups cannot be remapped",
                    file.header.max_parallelism,
                    path.display(),
                    max_parallelism
                ),
            });
        }
        let (key, key_migrates) = target.key_transcoder(&file.header.key, &registry)?;
        let mut states = Vec::with_capacity(file.header.states.len());
        for stored in &file.header.states {
            states.push(target.state_transcoder(stored, &registry)?);
        }
        opened.push((file, key, key_migrates, states));
    }
    // 2. Ingest; on any error, leave the target empty.
    let mut report = RestoreReport::default();
    let result = (|| {
        for (file, key, key_migrates, states) in &opened {
            if *key_migrates {
                report.migrated.push("key".to_owned());
            }
            for ((_, t), meta) in states.iter().zip(&file.header.states) {
                for part in &t.migrated {
                    report.migrated.push(format!("{}.{part}", meta.name));
                }
            }
            let mut ingest = Ingest {
                target: &mut *target,
                report: &mut report,
                names: &file.header.states,
                key,
                key_migrates: *key_migrates,
                states,
                max_parallelism,
                range,
                key_bytes: DataOutputView::new(),
                entry: DataOutputView::new(),
            };
            for &(kg, offset) in &file.index {
                // Keys keep their key group unless the key itself migrates.
                if !*key_migrates && !range.contains(kg) {
                    continue;
                }
                file.read_block(kg, offset, &mut ingest)?;
            }
        }
        target.flush()
    })();
    if let Err(e) = result {
        target.clear_all()?;
        return Err(e);
    }
    report.migrated.sort();
    report.migrated.dedup();
    Ok(report)
}

/// The entry visitor of restore: transcodes each entry into today's layout and stores it
/// if its key group is in the target's range.
struct Ingest<'t, 'f> {
    target: &'t mut dyn RestoreTarget,
    report: &'t mut RestoreReport,
    names: &'f [StateMeta],
    key: &'f PartFn,
    key_migrates: bool,
    /// Per stored state: the registered state's index and the transcoder.
    states: &'f [(usize, EntryTranscoder)],
    max_parallelism: u32,
    range: KeyGroupRange,
    key_bytes: DataOutputView,
    entry: DataOutputView,
}

impl<'a> EntryVisitor<'a> for Ingest<'_, '_> {
    fn key(&mut self, input: &mut DataInputView<'a>) -> typeinfo::Result<()> {
        self.key_bytes.clear();
        (self.key)(input, &mut self.key_bytes)
    }

    fn rest(
        &mut self,
        key_group: u16,
        state: usize,
        input: &mut DataInputView<'a>,
    ) -> std::result::Result<(), EntryError> {
        let (index, transcoder) = &self.states[state];
        self.entry.clear();
        transcoder.transcode(input, &mut self.entry)?;
        let today_kg = if self.key_migrates {
            key_group_for_bytes(self.key_bytes.as_slice(), self.max_parallelism)
        } else {
            key_group
        };
        if !self.range.contains(today_kg) {
            self.report.skipped += 1;
            return Ok(());
        }
        self.target.ingest(
            *index,
            today_kg,
            self.key_bytes.as_slice(),
            self.entry.as_slice(),
        )?;
        *self
            .report
            .entries
            .entry(self.names[state].name.clone())
            .or_default() += 1;
        Ok(())
    }
}

/// Files the keyed state of one operator under another max parallelism: reads `files`
/// (the `.kstate` files of all its subtasks, any parallelism) without their Rust types,
/// computes each key's key group again from its stored bytes (a key group is a hash of
/// them, so this needs no type), and writes one file per subtask of `parallelism` to
/// `out(subtask)`, each holding that subtask's key groups of `max_parallelism`. Entries
/// are copied byte for byte. Everything is read and checked before the first file is
/// written; the entries are held in memory meanwhile.
///
/// # Errors
///
/// [`Error::InvalidConfig`] for a max parallelism outside `1..=32768` or a parallelism
/// above it; [`Error::StateMismatch`] when the files disagree on the key type or the
/// states; [`Error::Serialization`] when a key or value cannot be delimited without its
/// Rust type (a serializer kind no restorer in `registry` knows); a corrupt file; an I/O
/// error.
pub fn rewrite_max_parallelism(
    files: &[&Path],
    max_parallelism: u32,
    parallelism: u32,
    registry: &SnapshotRegistry,
    out: impl Fn(u32) -> PathBuf,
) -> Result<Vec<KeyedSnapshot>> {
    crate::key_group::validate(max_parallelism, parallelism)?;
    let opened = files
        .iter()
        .map(|p| SnapshotFile::open(p))
        .collect::<Result<Vec<_>>>()?;
    let Some(first) = opened.first() else {
        return Ok(Vec::new());
    };
    for file in &opened[1..] {
        if file.header.key != first.header.key || file.header.states != first.header.states {
            return Err(Error::StateMismatch {
                state: "(all)".to_owned(),
                detail: format!(
                    "a key type or states in `{}` that differ from those in `{}`",
                    file.path.display(),
                    first.path.display()
                ),
            });
        }
    }
    let states = first.header.states.len();
    // New key group -> per state: entry count and bytes.
    let mut groups: BTreeMap<u16, Vec<(u64, Vec<u8>)>> = BTreeMap::new();
    for file in &opened {
        file.read_entries(registry, |e| {
            let kg = key_group_for_bytes(e.key.bytes, max_parallelism);
            let slot = &mut groups
                .entry(kg)
                .or_insert_with(|| vec![(0, Vec::new()); states])[e.state];
            slot.0 += 1;
            slot.1.extend_from_slice(e.key.bytes);
            slot.1.extend_from_slice(e.rest);
            Ok(())
        })?;
    }
    let names: Vec<String> = first.header.states.iter().map(|s| s.name.clone()).collect();
    let mut written = Vec::with_capacity(parallelism as usize);
    for subtask in 0..parallelism {
        let header = SnapshotHeader {
            max_parallelism,
            range: KeyGroupRange::for_subtask(max_parallelism, parallelism, subtask)?,
            key: first.header.key.clone(),
            states: first.header.states.clone(),
        };
        let mut writer = SnapshotWriter::new(&header)?;
        for kg in header.range.iter() {
            writer.begin_key_group(kg);
            let entries = groups.get(&kg);
            for index in 0..states {
                writer.state_entries(index, |o| {
                    Ok(entries.map_or(0, |e| {
                        o.write_bytes(&e[index].1);
                        e[index].0
                    }))
                })?;
            }
        }
        written.push(writer.finish(&out(subtask), &names)?);
    }
    Ok(written)
}

/// Checks that a stored state matches a registered one in kind and TTL.
pub(crate) fn check_shape(stored: &StateMeta, today: &StateMeta) -> Result<()> {
    if stored.kind.layout() != today.kind.layout() {
        return Err(Error::StateMismatch {
            state: stored.name.clone(),
            detail: format!("kind {} but it was stored as {}", today.kind, stored.kind),
        });
    }
    if stored.ttl != today.ttl {
        return Err(Error::StateMismatch {
            state: stored.name.clone(),
            detail: format!(
                "TTL {} but it was stored with TTL {}",
                onoff(today.ttl),
                onoff(stored.ttl)
            ),
        });
    }
    check_value_serializers(stored)
}

/// Checks that a stored state has as many value serializers as its kind needs (a map:
/// user key and user value; every other kind: one).
fn check_value_serializers(stored: &StateMeta) -> Result<()> {
    let expected = if stored.kind.layout() == StateKind::Map {
        2
    } else {
        1
    };
    if stored.values.len() != expected {
        return Err(Error::StateMismatch {
            state: stored.name.clone(),
            detail: format!(
                "{expected} value serializers but {} were stored",
                stored.values.len()
            ),
        });
    }
    Ok(())
}

fn onoff(b: bool) -> &'static str {
    if b {
        "on"
    } else {
        "off"
    }
}
