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

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use typeinfo::{
    Compatibility, DataInputView, DataOutputView, SerializerSnapshot, SnapshotRegistry,
    TypeSerializer,
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

/// A checked, parsed snapshot file in memory.
pub(crate) struct SnapshotFile {
    pub(crate) path: PathBuf,
    bytes: Vec<u8>,
    pub(crate) header: SnapshotHeader,
    /// Offsets of the key group blocks.
    pub(crate) index: Vec<(u16, usize)>,
}

fn corrupt(path: &Path, detail: impl Into<String>) -> Error {
    Error::CorruptSavepoint {
        path: path.to_owned(),
        detail: detail.into(),
    }
}

impl SnapshotFile {
    /// Reads and checks a file: size, magics, checksum, version, header and index.
    pub(crate) fn open(path: &Path) -> Result<Self> {
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
        })
    }

    /// The block of a key group: its bytes after the key group number.
    pub(crate) fn block(&self, offset: usize) -> DataInputView<'_> {
        let body_len = self.bytes.len() - 8;
        DataInputView::new(&self.bytes[offset..body_len - 8])
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
            let mut key_bytes = DataOutputView::new();
            let mut entry = DataOutputView::new();
            for &(kg, offset) in &file.index {
                // Keys keep their key group unless the key itself migrates.
                if !*key_migrates && !range.contains(kg) {
                    continue;
                }
                let mut block = file.block(offset);
                let stored_kg = block
                    .read_u16()
                    .map_err(|e| corrupt(&file.path, e.to_string()))?;
                if stored_kg != kg {
                    return Err(corrupt(
                        &file.path,
                        format!("block of key group {kg} is labelled {stored_kg}"),
                    ));
                }
                for ((index, transcoder), meta) in states.iter().zip(&file.header.states) {
                    let count = block
                        .read_varint()
                        .map_err(|e| corrupt(&file.path, e.to_string()))?;
                    // Entries of one state in one key group have distinct composite keys, so
                    // at most one of them can be written in zero bytes: a count beyond the
                    // bytes left (plus that one) is corrupt, not a reason to loop.
                    if count > block.remaining() as u64 + 1 {
                        return Err(corrupt(
                            &file.path,
                            format!(
                                "state `{}`: {count} entries in key group {kg} cannot fit in the {} bytes left",
                                meta.name,
                                block.remaining()
                            ),
                        ));
                    }
                    for _ in 0..count {
                        key_bytes.clear();
                        entry.clear();
                        // One entry is one read: the budget for elements that take no bytes
                        // is the entry's, not shared by the whole block.
                        block.reset_zero_sized_budget();
                        let key_start = block.position();
                        key(&mut block, &mut key_bytes).map_err(|e| {
                            corrupt(&file.path, format!("state `{}`: {e}", meta.name))
                        })?;
                        // A key is filed under the key group of its stored bytes: one that
                        // hashes elsewhere would be unreachable (or land outside this
                        // backend's range), so it is corrupt, not a key to file as labelled.
                        let stored_kg =
                            key_group_for_bytes(block.consumed_since(key_start), max_parallelism);
                        if stored_kg != kg {
                            return Err(corrupt(
                                &file.path,
                                format!(
                                    "state `{}`: a key in the block of key group {kg} belongs to key group {stored_kg}",
                                    meta.name
                                ),
                            ));
                        }
                        transcoder.transcode(&mut block, &mut entry).map_err(|e| {
                            corrupt(&file.path, format!("state `{}`: {e}", meta.name))
                        })?;
                        let today_kg = if *key_migrates {
                            key_group_for_bytes(key_bytes.as_slice(), max_parallelism)
                        } else {
                            kg
                        };
                        if !range.contains(today_kg) {
                            report.skipped += 1;
                            continue;
                        }
                        target.ingest(*index, today_kg, key_bytes.as_slice(), entry.as_slice())?;
                        *report.entries.entry(meta.name.clone()).or_default() += 1;
                    }
                }
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
    let expected = if today.kind.layout() == StateKind::Map {
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
