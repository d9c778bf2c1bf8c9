//! Incremental checkpoints of the RocksDB backend: RocksDB's own files, as Flink's
//! incremental checkpoints are.
//!
//! [`RocksDbKeyedStateBackend::native_snapshot`] flushes the memtables and makes a RocksDB
//! checkpoint in a new local directory: hard links to the live SST files (immutable, and
//! named by a number RocksDB never reuses within one database), copies of the small files
//! that describe them (`MANIFEST-*`, `CURRENT`, `OPTIONS-*`), and [`NATIVE_META`], a
//! checksummed file in the savepoint format with the header only: max parallelism, key-group
//! range, the key's and every state's serializer snapshots, in registration order (state
//! `i` lives in column family `s<i>`). The result lists the files; SST files are marked
//! `shared`: a checkpoint store uploads an SST file once and refers to it from every later
//! checkpoint that still lists it (what makes a checkpoint incremental is the store's
//! bookkeeping, see the runtime's checkpoint docs).
//!
//! Restoring ([`RocksDbKeyedStateBackend::restore_native`]), as Flink's
//! `RocksDBIncrementalRestoreOperation` does:
//! - When every stored state is compatible as it is, the checkpoint whose key groups
//!   overlap this backend's the most is opened directly: its files are linked into a new
//!   database directory (SST files hard-linked, the others copied, as RocksDB rewrites
//!   them), opened with today's column family options, and the key groups outside this
//!   backend's range are deleted with range deletions (a restore at the same parallelism
//!   deletes nothing). The entries of this backend's key groups in the other checkpoints
//!   are copied in (scale-in). Nothing is deserialized.
//! - When a key, namespace or value type needs migration, each checkpoint is turned into the
//!   savepoint format ([`native_to_canonical`]) and restored as savepoints are (entries
//!   migrated one by one); the heap backend always restores this way.
//!
//! Decisions: TTL is not applied while taking or converting a native checkpoint (expired
//! values are dropped by compaction, by reads, or by the next full snapshot, as in Flink,
//! where `cleanupFullSnapshot` does not apply to incremental checkpoints). A restore opens a
//! fresh directory beside the backend's (`<dir>-restored-<n>`), because RocksDB cannot swap
//! the files of an open database; the backend's [`path`](RocksDbKeyedStateBackend::path)
//! is then that directory.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rocksdb::{ColumnFamilyDescriptor, Options, WriteBatch, DB};
use typeinfo::{DataOutputView, SnapshotRegistry, TypeSerializer};

use crate::backend::{KeyedStateBackend, StateKind};
use crate::composite_key::key_group_prefix_len;
use crate::descriptor::StateKey;
use crate::error::{not_registered, Error, Result};
use crate::key_group::KeyGroupRange;
use crate::rocks::backend::{RocksDbKeyedStateBackend, MARKER};
use crate::rocks::column_family::concat_merge;
use crate::rocks::error::rocks;
use crate::savepoint::{
    KeyedSnapshot, RestoreReport, SnapshotFile, SnapshotHeader, SnapshotWriter,
};

/// The metadata file of a native checkpoint (the savepoint format, header only).
pub const NATIVE_META: &str = "_typeinfo_meta.kstate";

/// One file of a native checkpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NativeFile {
    /// The file's name in the checkpoint directory.
    pub name: String,
    /// Its size in bytes.
    pub bytes: u64,
    /// An immutable SST file, shareable between checkpoints; the others (RocksDB's
    /// manifest, options, `CURRENT`, and [`NATIVE_META`]) belong to one checkpoint.
    pub shared: bool,
}

/// A native checkpoint of one RocksDB backend, in a local directory.
#[derive(Debug, Clone)]
pub struct NativeCheckpoint {
    /// The directory.
    pub dir: PathBuf,
    /// Every file of the checkpoint, by name.
    pub files: Vec<NativeFile>,
    /// The key groups it holds.
    pub range: KeyGroupRange,
}

impl NativeCheckpoint {
    /// The bytes of every file.
    pub fn bytes(&self) -> u64 {
        self.files.iter().map(|f| f.bytes).sum()
    }
}

fn is_shared(name: &str) -> bool {
    name.ends_with(".sst")
}

fn io(path: &Path, source: std::io::Error) -> Error {
    Error::io(path, source)
}

fn corrupt(path: &Path, detail: impl Into<String>) -> Error {
    Error::CorruptSavepoint {
        path: path.to_owned(),
        detail: detail.into(),
    }
}

/// The column family of state `index` (registration order).
fn cf_name(index: usize) -> String {
    format!("s{index}")
}

/// Reads a native checkpoint's metadata.
///
/// # Errors
///
/// The metadata file is missing, truncated, corrupt or foreign.
pub fn read_native_meta(dir: &Path) -> Result<SnapshotHeader> {
    let path = dir.join(NATIVE_META);
    if !path.exists() {
        return Err(corrupt(
            &path,
            "missing: not a typeinfo native RocksDB checkpoint (or an incomplete one)",
        ));
    }
    Ok(SnapshotFile::open(&path)?.header().clone())
}

/// Opens a native checkpoint read-only (list states merged with the backend's operator).
fn open_read_only(dir: &Path, header: &SnapshotHeader) -> Result<DB> {
    let names = DB::list_cf(&Options::default(), dir).map_err(rocks)?;
    let descriptors = names.iter().map(|name| {
        let mut opts = Options::default();
        let list = name
            .strip_prefix('s')
            .and_then(|i| i.parse::<usize>().ok())
            .and_then(|i| header.states.get(i))
            .is_some_and(|s| s.kind == StateKind::List);
        if list {
            opts.set_merge_operator_associative("typeinfo_list_append", concat_merge);
        }
        ColumnFamilyDescriptor::new(name, opts)
    });
    DB::open_cf_descriptors_read_only(&Options::default(), dir, descriptors, false).map_err(rocks)
}

/// The first key of key group `kg` (and of every later one).
fn group_prefix(kg: u32, prefix_len: usize) -> Vec<u8> {
    if prefix_len == 1 {
        vec![kg as u8]
    } else {
        (kg as u16).to_be_bytes().to_vec()
    }
}

/// Turns a native checkpoint into one file in the savepoint format at `out` (written
/// atomically), with the checkpoint's own serializer snapshots, so that the ordinary
/// restore resolves and migrates it into either backend. Reads every entry once; needs no
/// Rust type (map states' keys and namespaces are measured with serializers restored from
/// the snapshots).
///
/// # Errors
///
/// The checkpoint is missing, incomplete or corrupt; RocksDB fails; `out` cannot be
/// written.
pub fn native_to_canonical(dir: &Path, out: &Path) -> Result<KeyedSnapshot> {
    let header = read_native_meta(dir)?;
    let db = open_read_only(dir, &header)?;
    let registry = SnapshotRegistry::default();
    let key = header.key.restore_serializer(&registry)?;
    let prefix_len = key_group_prefix_len(header.max_parallelism);
    let mut writer = SnapshotWriter::new(&header)?;
    for kg in header.range.iter() {
        writer.begin_key_group(kg);
        let start = group_prefix(u32::from(kg), prefix_len);
        for (index, state) in header.states.iter().enumerate() {
            let name = cf_name(index);
            let cf = db
                .cf_handle(&name)
                .ok_or_else(|| corrupt(dir, format!("column family `{name}` is missing")))?;
            let namespace = state.namespace.restore_serializer(&registry)?;
            let mut it = db.raw_iterator_cf(cf);
            it.seek(&start);
            writer.state_entries(index, |out: &mut DataOutputView| {
                let mut count = 0;
                while let (Some(k), Some(v)) = (it.key(), it.value()) {
                    if !k.starts_with(&start) {
                        break;
                    }
                    let rest = &k[prefix_len..];
                    match state.kind {
                        StateKind::List => {
                            out.write_bytes(rest);
                            out.write_len_prefixed(v);
                        }
                        StateKind::Map => {
                            let mut input = typeinfo::DataInputView::new(rest);
                            key.skip(&mut input)?;
                            namespace.skip(&mut input)?;
                            out.write_bytes(&rest[..input.position()]);
                            out.write_bytes(v);
                        }
                        _ => {
                            out.write_bytes(rest);
                            out.write_bytes(v);
                        }
                    }
                    count += 1;
                    it.next();
                }
                it.status().map_err(rocks)?;
                Ok(count)
            })?;
        }
    }
    let names: Vec<String> = header.states.iter().map(|s| s.name.clone()).collect();
    writer.finish(out, &names)
}

/// Copies `from` to `to`: a hard link for an SST file (immutable), a copy for the others
/// (RocksDB rewrites them).
fn link_or_copy(from: &Path, to: &Path) -> Result<()> {
    let name = from.file_name().and_then(|n| n.to_str()).unwrap_or("");
    if is_shared(name) && fs::hard_link(from, to).is_ok() {
        return Ok(());
    }
    fs::copy(from, to).map(|_| ()).map_err(|e| io(from, e))
}

impl<K: StateKey> RocksDbKeyedStateBackend<K> {
    /// Writes a native checkpoint into `dir` (which must not exist yet): RocksDB's files
    /// (SST files hard-linked) and [`NATIVE_META`]. See the [module docs](self).
    ///
    /// # Errors
    ///
    /// `dir` exists; RocksDB or the file system fails.
    pub fn native_snapshot(&mut self, dir: &Path) -> Result<NativeCheckpoint> {
        self.flush()?;
        self.native_checkpoint(dir)?;
        let header = SnapshotHeader {
            max_parallelism: self.max_parallelism(),
            range: self.key_group_range(),
            key: self.key_serializer.snapshot(),
            states: self.states(),
        };
        let names: Vec<String> = header.states.iter().map(|s| s.name.clone()).collect();
        SnapshotWriter::new(&header)?.finish(&dir.join(NATIVE_META), &names)?;
        let mut files = Vec::new();
        for entry in fs::read_dir(dir).map_err(|e| io(dir, e))? {
            let entry = entry.map_err(|e| io(dir, e))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let bytes = entry.metadata().map_err(|e| io(&entry.path(), e))?.len();
            files.push(NativeFile {
                shared: is_shared(&name),
                name,
                bytes,
            });
        }
        files.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(NativeCheckpoint {
            dir: dir.to_owned(),
            files,
            range: header.range,
        })
    }

    /// Restores this (empty) backend's key groups from native checkpoints (each a
    /// directory from [`native_snapshot`](Self::native_snapshot), at any parallelism).
    /// Register every state first. See the [module docs](self) for the two ways.
    ///
    /// # Errors
    ///
    /// The backend already holds state; a checkpoint is incomplete, corrupt or of another
    /// max parallelism; a stored state is not registered or incompatible; RocksDB fails.
    /// The backend is then left empty.
    pub fn restore_native(&mut self, dirs: &[&Path]) -> Result<RestoreReport> {
        let mut headers = Vec::with_capacity(dirs.len());
        for dir in dirs {
            let header = read_native_meta(dir)?;
            if header.max_parallelism != self.max_parallelism() {
                return Err(Error::StateMismatch {
                    state: "(all)".to_owned(),
                    detail: format!(
                        "max parallelism {} in `{}` but {} today: key groups cannot be remapped",
                        header.max_parallelism,
                        dir.display(),
                        self.max_parallelism()
                    ),
                });
            }
            headers.push(header);
        }
        if !self.is_empty()? {
            return Err(Error::InvalidConfig(
                "a native checkpoint restores into an empty backend only".to_owned(),
            ));
        }
        if self.migrates(&headers)? {
            return self.restore_through_savepoint_format(dirs);
        }
        let range = self.key_group_range();
        let overlap = |h: &SnapshotHeader| range.iter().filter(|kg| h.range.contains(*kg)).count();
        let Some(base) = (0..dirs.len())
            .filter(|&i| overlap(&headers[i]) > 0)
            .max_by_key(|&i| overlap(&headers[i]))
        else {
            return Ok(RestoreReport::default());
        };
        let result = (|| {
            let mut report = self.open_base(dirs[base], &headers[base])?;
            report.opened_directly = Some(base);
            for (i, dir) in dirs.iter().enumerate() {
                if i != base && overlap(&headers[i]) > 0 {
                    self.copy_key_groups(dir, &headers[i], &mut report)?;
                }
            }
            Ok(report)
        })();
        if result.is_err() {
            let _ = self.clear_all_states();
        }
        result
    }

    /// Whether any stored state (or the key) needs migration or differs in kind or TTL.
    fn migrates(&self, headers: &[SnapshotHeader]) -> Result<bool> {
        let registry = SnapshotRegistry::default();
        for header in headers {
            let (_, key_migrates) = crate::savepoint::part_transcoder(
                &self.key_serializer,
                &header.key,
                &registry,
                "(key)",
                "key",
            )?;
            if key_migrates {
                return Ok(true);
            }
            for stored in &header.states {
                let index = *self
                    .by_name
                    .get(&stored.name)
                    .ok_or_else(|| not_registered(&stored.name))?;
                let codec = self.states[index].codec();
                let t = codec.transcoder(stored, &registry)?;
                if !t.migrated.is_empty()
                    || codec.meta().kind != stored.kind
                    || codec.meta().ttl != stored.ttl
                {
                    return Ok(true);
                }
            }
        }
        Ok(false)
    }

    fn restore_through_savepoint_format(&mut self, dirs: &[&Path]) -> Result<RestoreReport> {
        let scratch = tempfile::Builder::new()
            .prefix(".native-restore-")
            .tempdir_in(self.path().parent().unwrap_or(Path::new(".")))
            .map_err(|e| io(self.path(), e))?;
        let mut files = Vec::with_capacity(dirs.len());
        for (i, dir) in dirs.iter().enumerate() {
            let file = scratch.path().join(format!("part-{i}.kstate"));
            native_to_canonical(dir, &file)?;
            files.push(file);
        }
        let refs: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
        self.restore(&refs)
    }

    /// Whether no state holds an entry.
    fn is_empty(&self) -> Result<bool> {
        self.flush_write_cache()?;
        for state in &self.states {
            let cf = self.cf_handle(state.cf())?;
            let mut it = self.db.raw_iterator_cf(cf);
            it.seek_to_first();
            if it.valid() {
                return Ok(false);
            }
            it.status().map_err(rocks)?;
        }
        Ok(true)
    }

    /// Opens the checkpoint in `dir` as this backend's database (files linked into a new
    /// directory), then deletes the key groups outside this backend's range.
    fn open_base(&mut self, dir: &Path, header: &SnapshotHeader) -> Result<RestoreReport> {
        let target = self.fresh_sibling_dir()?;
        fs::create_dir_all(&target).map_err(|e| io(&target, e))?;
        for entry in fs::read_dir(dir).map_err(|e| io(dir, e))? {
            let entry = entry.map_err(|e| io(dir, e))?;
            let name = entry.file_name();
            if name == NATIVE_META {
                continue;
            }
            link_or_copy(&entry.path(), &target.join(&name))?;
        }
        // Today's column family options for the stored states' column families (by name).
        let stored_cfs = DB::list_cf(&Options::default(), &target).map_err(rocks)?;
        let mut by_cf: HashMap<String, usize> = HashMap::new();
        for (i, stored) in header.states.iter().enumerate() {
            let index = *self
                .by_name
                .get(&stored.name)
                .ok_or_else(|| not_registered(&stored.name))?;
            by_cf.insert(cf_name(i), index);
        }
        let mut descriptors = Vec::with_capacity(stored_cfs.len());
        for name in &stored_cfs {
            let opts = match by_cf.get(name) {
                Some(&index) => self.cf_options[index].clone(),
                None if name == "default" => Options::default(),
                None => {
                    return Err(corrupt(
                        dir,
                        format!("column family `{name}` belongs to no stored state"),
                    ))
                }
            };
            descriptors.push(ColumnFamilyDescriptor::new(name, opts));
        }
        let mut db =
            DB::open_cf_descriptors(&self.db_options(), &target, descriptors).map_err(rocks)?;
        fs::write(
            target.join(MARKER),
            b"typeinfo rocksdb keyed state backend\n",
        )
        .map_err(|e| io(&target.join(MARKER), e))?;
        // Registered states: the stored column family, or a new one (a state new today).
        let mut assigned: Vec<Option<String>> = vec![None; self.states.len()];
        for (cf, &index) in &by_cf {
            assigned[index] = Some(cf.clone());
        }
        let mut fresh = stored_cfs.len();
        for (index, cf) in assigned.iter_mut().enumerate() {
            if cf.is_none() {
                let name = loop {
                    let candidate = format!("s{fresh}");
                    fresh += 1;
                    if !stored_cfs.contains(&candidate) {
                        break candidate;
                    }
                };
                db.create_cf(&name, &self.cf_options[index])
                    .map_err(rocks)?;
                *cf = Some(name);
            }
        }
        let old_dir = self.replace_db(db, target);
        for (state, cf) in self.states.iter_mut().zip(assigned) {
            state.set_cf(Arc::from(cf.unwrap_or_default().as_str()));
        }
        let _ = DB::destroy(&Options::default(), &old_dir);
        let _ = fs::remove_dir_all(&old_dir);
        // Clip: delete the key groups outside this backend's range.
        let range = self.key_group_range();
        let prefix_len = key_group_prefix_len(self.max_parallelism());
        let report = RestoreReport::default();
        let mut deletions = Vec::new();
        if range.start() > header.range.start() {
            deletions.push((
                group_prefix(u32::from(header.range.start()), prefix_len),
                group_prefix(u32::from(range.start()), prefix_len),
            ));
        }
        if range.end() < header.range.end() {
            deletions.push((
                group_prefix(u32::from(range.end()) + 1, prefix_len),
                group_prefix(u32::from(header.range.end()) + 1, prefix_len),
            ));
        }
        for state in &self.states {
            let cf = self.cf_handle(state.cf())?;
            for (from, to) in &deletions {
                // The last key group's end is past every key of its width (0x..ff + 1
                // carries into a longer prefix, still above every key).
                self.db.delete_range_cf(cf, from, to).map_err(rocks)?;
            }
        }
        Ok(report)
    }

    /// Copies the entries of this backend's key groups from the checkpoint in `dir`.
    fn copy_key_groups(
        &mut self,
        dir: &Path,
        header: &SnapshotHeader,
        report: &mut RestoreReport,
    ) -> Result<()> {
        let source = open_read_only(dir, header)?;
        let range = self.key_group_range();
        let prefix_len = key_group_prefix_len(self.max_parallelism());
        for (i, stored) in header.states.iter().enumerate() {
            let index = *self
                .by_name
                .get(&stored.name)
                .ok_or_else(|| not_registered(&stored.name))?;
            let name = cf_name(i);
            let from = source
                .cf_handle(&name)
                .ok_or_else(|| corrupt(dir, format!("column family `{name}` is missing")))?;
            let to = self.cf_handle(self.states[index].cf())?;
            let mut batch = WriteBatch::default();
            let mut copied = 0u64;
            for kg in range.iter().filter(|kg| header.range.contains(*kg)) {
                let start = group_prefix(u32::from(kg), prefix_len);
                let mut it = source.raw_iterator_cf(from);
                it.seek(&start);
                while let (Some(k), Some(v)) = (it.key(), it.value()) {
                    if !k.starts_with(&start) {
                        break;
                    }
                    batch.put_cf(to, k, v);
                    copied += 1;
                    if batch.len() >= 4096 {
                        self.db
                            .write_without_wal(std::mem::take(&mut batch))
                            .map_err(rocks)?;
                    }
                    it.next();
                }
                it.status().map_err(rocks)?;
            }
            self.db.write_without_wal(batch).map_err(rocks)?;
            *report.entries.entry(stored.name.clone()).or_default() += copied;
        }
        Ok(())
    }

    /// A directory beside this backend's that does not exist yet.
    fn fresh_sibling_dir(&self) -> Result<PathBuf> {
        let base = self.path().to_owned();
        let name = base
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "rocksdb".to_owned());
        let root = name.split("-restored-").next().unwrap_or(&name).to_owned();
        for n in 1u32.. {
            let candidate = base.with_file_name(format!("{root}-restored-{n}"));
            if !candidate.exists() {
                return Ok(candidate);
            }
        }
        Err(Error::Storage(
            "no free directory name for a restore".to_owned(),
        ))
    }
}
