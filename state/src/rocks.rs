//! The RocksDB backend: one database per operator subtask, one column family per state,
//! composite keys, a merge operator for list appends, prefix iteration for map state,
//! batched writes, and the options a user tunes.

use std::any::Any;
use std::cell::RefCell;
use std::collections::HashMap;
use std::fs;
use std::marker::PhantomData;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rocksdb::checkpoint::Checkpoint;
use rocksdb::compaction_filter::Decision;
use rocksdb::{
    BlockBasedOptions, DBCompressionType, MergeOperands, Options, ReadOptions, WriteBatch,
    WriteOptions, DB,
};
use typeinfo::{
    Comparable, DataInputView, DataOutputView, SerializerSnapshot, SnapshotRegistry,
    TypeComparator, TypeSerializer,
};

use crate::backend::{KeyedStateBackend, StateId, StateKind, StateMeta};
use crate::codec::{ErasedCodec, MapCodec, ValueCodec};
use crate::composite_key::CompositeKeyBuilder;
use crate::descriptor::*;
use crate::error::{not_registered, Error, Result};
use crate::key_group::KeyGroupRange;
use crate::managed_memory::{default_managed_memory_bytes, RocksDbMemory};
use crate::map_iter::MapIter;
use crate::options::BackendOptions;
use crate::savepoint::{
    part_transcoder, restore_into, EntryTranscoder, KeyedSnapshot, PartFn, RestoreReport,
    RestoreTarget, SnapshotHeader, SnapshotWriter,
};
use crate::ttl::{expired_bytes_for_snapshot, on_read, Clock, StateTtlConfig, Visible};
use crate::write_cache::WriteCache;

/// The name of the marker file that identifies a directory this backend owns.
pub(crate) const MARKER: &str = "TYPEINFO_ROCKSDB_BACKEND";
/// Entries per write batch when restoring.
const RESTORE_BATCH: usize = 4096;
/// Entries per write batch of `put_all`.
const WRITE_BATCH: usize = 4096;
/// Bytes per write batch of `put_all`, whichever of the two bounds comes first.
const WRITE_BATCH_BYTES: usize = 4 << 20;

/// Compression of SST files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// None.
    None,
    /// LZ4 (the default: fast, modest ratio).
    Lz4,
    /// Zstandard (better ratio, more CPU).
    Zstd,
}

/// How RocksDB compacts SST files.
///
/// Universal compaction (the default) merges sorted runs of similar size: few bytes are
/// rewritten per change, so an incremental checkpoint uploads little more than what
/// changed, for up to twice the space on disk between full merges. Leveled compaction
/// (Flink's default) keeps fewer runs and less space, but once a state outgrows level 1 its
/// compactions into level 1 rewrite files that hold unchanged keys, and each such file is
/// uploaded again. Decision: universal, for large keyed state checkpointed incrementally:
/// `benches/benches/incremental_checkpoints.rs` at 10M keys (1.2 GB of SST files, release
/// build, 10 checkpoints after 1% of the keys changed each) measured 1.2-8.2% of the full
/// checkpoint's bytes per checkpoint with universal (mean 4.5%; a run merged from the newest
/// flushes is uploaded again as it grows) against 1.2-37.9% with leveled (mean 21.3%); at 1M
/// keys, 110 MB, both stay within 1-6%, leveled a little lower (see the README).
/// `benches/benches/windows.rs` measures both on the keyed-window job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compaction {
    /// Leveled compaction.
    Leveled,
    /// Universal (tiered) compaction (the default).
    Universal,
}

/// The default size of each RocksDB backend's write cache: 4 MiB (see
/// [`RocksDbOptions::write_cache_bytes`]). Decision: enough for the entries a keyed operator
/// updates between two watermarks in the jobs we measured (the README's keyed-window job:
/// 10,000 keys, two open windows each, about 2 MiB), small beside RocksDB's managed memory.
pub const DEFAULT_WRITE_CACHE_BYTES: usize = 4 << 20;

/// The RocksDB options a user tunes, with sensible defaults.
///
/// Memory is bounded per process by one setting,
/// [`managed_memory_bytes`](Self::managed_memory_bytes): see [`RocksDbMemory`].
#[derive(Debug, Clone)]
pub struct RocksDbOptions {
    managed_memory_bytes: Option<usize>,
    write_buffer_bytes: usize,
    compression: Compression,
    compaction: Compaction,
    max_background_jobs: i32,
    write_cache_bytes: usize,
}

impl Default for RocksDbOptions {
    /// Memory bounded by [`default_managed_memory_bytes`] for the whole process, 2 MiB
    /// write buffers per state, LZ4, universal compaction, two background jobs, a write
    /// cache of [`DEFAULT_WRITE_CACHE_BYTES`] per backend.
    fn default() -> Self {
        // A small write buffer: every keyed-state update searches the memtable's skiplist, and
        // a 2 MiB one stays in cache (measured with `window_throughput`: 64 MiB gave 240k
        // events/s, 2 MiB about 480k on this 2-core machine).
        Self {
            managed_memory_bytes: None,
            write_buffer_bytes: 2 << 20,
            compression: Compression::Lz4,
            compaction: Compaction::Universal,
            max_background_jobs: 2,
            write_cache_bytes: DEFAULT_WRITE_CACHE_BYTES,
        }
    }
}

impl RocksDbOptions {
    /// The bound of RocksDB's memory (block cache, index and filter blocks, memtables) shared
    /// by every backend of this process opened with the same bound; default
    /// [`default_managed_memory_bytes`], a quarter of the machine's memory. See
    /// [`RocksDbMemory`] for how it is split.
    ///
    /// # Examples
    ///
    /// ```
    /// use typeinfo_state::RocksDbOptions;
    ///
    /// let options = RocksDbOptions::default().managed_memory_bytes(256 << 20);
    /// assert_eq!(options.memory().total_bytes(), 256 << 20);
    /// ```
    pub fn managed_memory_bytes(mut self, bytes: usize) -> Self {
        self.managed_memory_bytes = Some(bytes);
        self
    }

    /// The process's memory pool these options name (created on first use, shared while a
    /// backend uses it).
    pub fn memory(&self) -> RocksDbMemory {
        RocksDbMemory::shared(
            self.managed_memory_bytes
                .unwrap_or_else(default_managed_memory_bytes),
        )
    }

    /// The write buffer (memtable) size of each state; every state's memtables together are
    /// bounded by the managed memory's write buffer manager.
    pub fn write_buffer_bytes(mut self, bytes: usize) -> Self {
        self.write_buffer_bytes = bytes;
        self
    }

    /// The compression of SST files.
    pub fn compression(mut self, compression: Compression) -> Self {
        self.compression = compression;
        self
    }

    /// The compaction style of every state's column family.
    pub fn compaction(mut self, compaction: Compaction) -> Self {
        self.compaction = compaction;
        self
    }

    /// Flush and compaction threads.
    pub fn max_background_jobs(mut self, jobs: i32) -> Self {
        self.max_background_jobs = jobs.max(1);
        self
    }

    /// The write cache of each backend: the latest serialized values of recently used
    /// entries of value, reducing and aggregating states (without TTL), written to RocksDB
    /// in one batch when more than `bytes` are cached and before anything reads the database
    /// as a whole (a snapshot, a checkpoint, an iteration). Default
    /// [`DEFAULT_WRITE_CACHE_BYTES`]; 0 turns it off, so every access goes to RocksDB. This
    /// memory is each backend's own, outside [`managed_memory_bytes`](Self::managed_memory_bytes).
    ///
    /// # Examples
    ///
    /// ```
    /// use typeinfo_state::RocksDbOptions;
    ///
    /// let every_access_to_rocksdb = RocksDbOptions::default().write_cache_bytes(0);
    /// # let _ = every_access_to_rocksdb;
    /// ```
    pub fn write_cache_bytes(mut self, bytes: usize) -> Self {
        self.write_cache_bytes = bytes;
        self
    }

    /// The block-based table options of every column family: the shared cache, with index
    /// and filter blocks in it.
    fn table(memory: &RocksDbMemory) -> BlockBasedOptions {
        let mut table = BlockBasedOptions::default();
        table.set_block_cache(memory.cache());
        // Index and filter blocks count in the cache (else they live, unbounded, in the
        // table readers), with high priority; level 0's and the top-level ones stay pinned,
        // as Flink configures its bounded memory.
        table.set_cache_index_and_filter_blocks(true);
        table.set_cache_index_and_filter_blocks_with_high_priority(true);
        table.set_pin_l0_filter_and_index_blocks_in_cache(true);
        table.set_pin_top_level_index_and_filter(true);
        // Most reads of keyed state are point lookups, many of keys not written yet (the first
        // record of a key in a window): a bloom filter answers those without reading blocks.
        table.set_bloom_filter(10.0, false);
        table
    }

    fn column_family(&self, memory: &RocksDbMemory) -> Options {
        let mut opts = Options::default();
        opts.set_write_buffer_size(self.write_buffer_bytes);
        opts.set_compression_type(match self.compression {
            Compression::None => DBCompressionType::None,
            Compression::Lz4 => DBCompressionType::Lz4,
            Compression::Zstd => DBCompressionType::Zstd,
        });
        opts.set_block_based_table_factory(&Self::table(memory));
        // A bloom filter over the memtable's keys: a read of an entry that does not exist
        // (a window's first record, once the write cache forgot it) skips the skiplist.
        opts.set_memtable_whole_key_filtering(true);
        opts.set_memtable_prefix_bloom_ratio(0.1);
        opts.set_compaction_style(match self.compaction {
            Compaction::Leveled => rocksdb::DBCompactionStyle::Level,
            Compaction::Universal => rocksdb::DBCompactionStyle::Universal,
        });
        opts
    }
}

pub(crate) fn rocks(e: rocksdb::Error) -> Error {
    Error::RocksDb(e)
}

/// Concatenates list elements: the merge operator of list state (elements are
/// self-delimiting, so appending is concatenation).
pub(crate) fn concat_merge(
    _key: &[u8],
    existing: Option<&[u8]>,
    operands: &MergeOperands,
) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(
        existing.map_or(0, <[u8]>::len) + operands.iter().map(<[u8]>::len).sum::<usize>(),
    );
    if let Some(e) = existing {
        out.extend_from_slice(e);
    }
    for op in operands {
        out.extend_from_slice(op);
    }
    Some(out)
}

/// One registered state in RocksDB, without its value types.
pub(crate) trait RocksState<K: StateKey>: Send {
    fn codec(&self) -> &dyn ErasedCodec;
    fn as_any(&self) -> &dyn Any;
    fn cf(&self) -> &str;
    /// Moves the state to another column family (a restore that opened stored files).
    fn set_cf(&mut self, cf: Arc<str>);
    /// Today's entry `[namespace][value part]` as a RocksDB key suffix and value.
    fn ingest(
        &self,
        builder: &mut CompositeKeyBuilder,
        key_group: u16,
        key: &[u8],
        entry: &[u8],
        batch: &mut WriteBatch,
        db: &DB,
    ) -> Result<()>;
    /// Writes the entries of one RocksDB key-value pair in the savepoint layout.
    fn write_entry(
        &self,
        prefix_len: usize,
        key_serializer: &dyn Skip,
        key: &[u8],
        value: &[u8],
        out: &mut DataOutputView,
        now: i64,
    ) -> Result<u64>;
}

/// Moves past one serialized value (the key serializer, without its type).
pub(crate) trait Skip {
    fn skip_value(&self, input: &mut DataInputView<'_>) -> typeinfo::Result<()>;
}

impl<T, S: TypeSerializer<T>> Skip for PhantomSkip<T, S> {
    fn skip_value(&self, input: &mut DataInputView<'_>) -> typeinfo::Result<()> {
        self.0.skip(input)
    }
}

struct PhantomSkip<T, S>(S, PhantomData<fn() -> T>);

struct Rocks<C> {
    /// The column family's name (shared, so that operations clone it without allocating).
    cf: Arc<str>,
    codec: C,
    ttl: Option<StateTtlConfig>,
}

/// Where the namespace ends in today's entry `[namespace][value part]`.
fn namespace_end<N, S: TypeSerializer<N>>(namespace: &S, entry: &[u8]) -> Result<usize> {
    let mut input = DataInputView::new(entry);
    namespace.skip(&mut input)?;
    Ok(input.position())
}

/// The length of `[key][namespace]` at the start of `rest`.
fn key_ns_len(key: &dyn Skip, namespace: &dyn Skip, rest: &[u8]) -> Result<usize> {
    let mut input = DataInputView::new(rest);
    key.skip_value(&mut input)?;
    namespace.skip_value(&mut input)?;
    Ok(input.position())
}

impl<K: StateKey, N: StateNamespace, V: StateValue> RocksState<K> for Rocks<ValueCodec<N, V>> {
    fn codec(&self) -> &dyn ErasedCodec {
        &self.codec
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn cf(&self) -> &str {
        &self.cf
    }
    fn set_cf(&mut self, cf: Arc<str>) {
        self.cf = cf;
    }
    fn ingest(
        &self,
        builder: &mut CompositeKeyBuilder,
        key_group: u16,
        key: &[u8],
        entry: &[u8],
        batch: &mut WriteBatch,
        db: &DB,
    ) -> Result<()> {
        let cf = db.cf_handle(&self.cf).ok_or_else(|| missing_cf(&self.cf))?;
        let ns_end = namespace_end(&self.codec.namespace, entry)?;
        builder.set_key_bytes(key_group, key);
        let composite = builder.set_namespace_bytes(&entry[..ns_end]);
        let value = &entry[ns_end..];
        if self.codec.meta.kind == StateKind::List {
            batch.put_cf(
                cf,
                composite,
                DataInputView::new(value).read_len_prefixed()?,
            );
        } else {
            batch.put_cf(cf, composite, value);
        }
        Ok(())
    }
    fn write_entry(
        &self,
        prefix_len: usize,
        _key: &dyn Skip,
        composite: &[u8],
        value: &[u8],
        out: &mut DataOutputView,
        now: i64,
    ) -> Result<u64> {
        if self.codec.meta.kind == StateKind::List {
            let kept = live_elements(&self.ttl, &self.codec.value, value, now)?;
            if kept.is_empty() {
                return Ok(0);
            }
            out.write_bytes(&composite[prefix_len..]);
            out.write_len_prefixed(&kept);
            return Ok(1);
        }
        if expired_bytes_for_snapshot(&self.ttl, value, now) {
            return Ok(0);
        }
        out.write_bytes(&composite[prefix_len..]);
        out.write_bytes(value);
        Ok(1)
    }
}

/// The elements of a list value that have not expired (all of them without TTL).
fn live_elements<V, S: TypeSerializer<V>>(
    ttl: &Option<StateTtlConfig>,
    serializer: &S,
    value: &[u8],
    now: i64,
) -> Result<Vec<u8>> {
    let Some(t) = ttl.as_ref().filter(|t| t.cleans_up_in_full_snapshot()) else {
        return Ok(value.to_vec());
    };
    let mut input = DataInputView::new(value);
    let mut kept = Vec::with_capacity(value.len());
    while !input.is_empty() {
        let start = input.position();
        let ts = input.read_i64()?;
        serializer.skip(&mut input)?;
        if !t.is_expired(ts, now) {
            kept.extend_from_slice(input.consumed_since(start));
        }
    }
    Ok(kept)
}

impl<K: StateKey, N: StateNamespace, UK: MapKey, UV: StateValue> RocksState<K>
    for Rocks<MapCodec<N, UK, UV>>
{
    fn codec(&self) -> &dyn ErasedCodec {
        &self.codec
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn cf(&self) -> &str {
        &self.cf
    }
    fn set_cf(&mut self, cf: Arc<str>) {
        self.cf = cf;
    }
    fn ingest(
        &self,
        builder: &mut CompositeKeyBuilder,
        key_group: u16,
        key: &[u8],
        entry: &[u8],
        batch: &mut WriteBatch,
        db: &DB,
    ) -> Result<()> {
        let cf = db.cf_handle(&self.cf).ok_or_else(|| missing_cf(&self.cf))?;
        let ns_end = namespace_end(&self.codec.namespace, entry)?;
        let user_key = self
            .codec
            .user_key
            .deserialize(&mut DataInputView::new(&entry[ns_end..]))?;
        builder.set_key_bytes(key_group, key);
        builder.set_namespace_bytes(&entry[..ns_end]);
        let order = &self.codec.user_key_order;
        let composite =
            builder.with_user_key_from(|buf| order.write_normalized_key(&user_key, buf));
        batch.put_cf(cf, composite, &entry[ns_end..]);
        Ok(())
    }
    fn write_entry(
        &self,
        prefix_len: usize,
        key: &dyn Skip,
        composite: &[u8],
        value: &[u8],
        out: &mut DataOutputView,
        now: i64,
    ) -> Result<u64> {
        // The value is `[user key][ts?][user value]`.
        let mut input = DataInputView::new(value);
        self.codec.user_key.skip(&mut input)?;
        if expired_bytes_for_snapshot(&self.ttl, input.rest(), now) {
            return Ok(0);
        }
        let ns = PhantomSkip(self.codec.namespace.clone(), PhantomData::<fn() -> N>);
        let len = key_ns_len(key, &ns, &composite[prefix_len..])?;
        out.write_bytes(&composite[prefix_len..prefix_len + len]);
        out.write_bytes(value);
        Ok(1)
    }
}

/// A map state's entries in RocksDB: an iterator bounded to the prefix
/// `[key group][key][namespace]`, decoding one entry per step. Expired entries are deleted
/// as they are passed and refreshed timestamps written back, as `get` does (the iterator
/// reads an implicit snapshot, so these writes do not show up in it).
struct RocksMapIter<'a, UK: MapKey, UV: StateValue> {
    db: &'a DB,
    cf: &'a rocksdb::ColumnFamily,
    write: &'a WriteOptions,
    it: rocksdb::DBRawIteratorWithThreadMode<'a, DB>,
    prefix: Vec<u8>,
    user_key: UK::Serializer,
    user_value: UV::Serializer,
    ttl: Option<StateTtlConfig>,
    now: i64,
    done: bool,
}

impl<UK: MapKey, UV: StateValue> RocksMapIter<'_, UK, UV> {
    /// The entry under the iterator, then a step: `None` at the end, `Some(None)` for an
    /// expired entry.
    fn step(&mut self) -> Result<Option<Option<(UK, UV)>>> {
        let (Some(k), Some(v)) = (self.it.key(), self.it.value()) else {
            self.it.status().map_err(rocks)?;
            return Ok(None);
        };
        if !k.starts_with(&self.prefix) {
            return Ok(None);
        }
        // The value is `[user key][ts?][user value]`.
        let mut input = DataInputView::new(v);
        let uk = self.user_key.deserialize(&mut input)?;
        let entry = if self.ttl.is_some() {
            let ts_at = input.position();
            let mut ts = input.read_i64()?;
            let before = ts;
            if on_read(&self.ttl, &mut ts, self.now) == Visible::Expired {
                self.db
                    .delete_cf_opt(self.cf, k, self.write)
                    .map_err(rocks)?;
                None
            } else {
                let uv = self.user_value.deserialize(&mut input)?;
                if ts != before {
                    let mut refreshed = v.to_vec();
                    refreshed[ts_at..ts_at + 8].copy_from_slice(&ts.to_le_bytes());
                    self.db
                        .put_cf_opt(self.cf, k, refreshed, self.write)
                        .map_err(rocks)?;
                }
                Some((uk, uv))
            }
        } else {
            Some((uk, self.user_value.deserialize(&mut input)?))
        };
        self.it.next();
        Ok(Some(entry))
    }
}

impl<UK: MapKey, UV: StateValue> Iterator for RocksMapIter<'_, UK, UV> {
    type Item = Result<(UK, UV)>;

    fn next(&mut self) -> Option<Self::Item> {
        while !self.done {
            match self.step() {
                Ok(Some(Some(entry))) => return Some(Ok(entry)),
                Ok(Some(None)) => {}
                Ok(None) => self.done = true,
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
            }
        }
        None
    }
}

fn missing_cf(name: &str) -> Error {
    Error::Storage(format!("column family `{name}` is missing"))
}

struct Current<K> {
    key: K,
    key_group: u16,
}

/// Keyed state in RocksDB: values are serialized on every access, and state can outgrow
/// memory.
///
/// Value, reducing and aggregating states (without TTL) keep the serialized values of
/// recently used entries in a bounded write cache in front of RocksDB
/// ([`RocksDbOptions::write_cache_bytes`], default [`DEFAULT_WRITE_CACHE_BYTES`]): an entry
/// updated with every record reaches RocksDB once per flush of the cache, and every snapshot,
/// checkpoint or iteration writes the changed entries first.
///
/// The directory belongs to the backend: it is created if missing, and a previous instance
/// of this backend in it is replaced (state comes back through savepoints or checkpoints,
/// as in Flink). A non-empty directory that is not one of ours is refused, never wiped.
/// Writes skip RocksDB's write-ahead log: durability comes from snapshots.
pub struct RocksDbKeyedStateBackend<K: StateKey> {
    options: BackendOptions,
    rocks_options: RocksDbOptions,
    memory: RocksDbMemory,
    path: PathBuf,
    pub(crate) db: DB,
    /// The options of every column family, kept alive after the database: RocksDB holds
    /// raw pointers to their compaction filters (declared after `db`, so dropped after it).
    pub(crate) cf_options: Vec<Options>,
    write: WriteOptions,
    pub(crate) key_serializer: K::Serializer,
    builder: CompositeKeyBuilder,
    current: Option<Current<K>>,
    pub(crate) states: Vec<Box<dyn RocksState<K>>>,
    pub(crate) by_name: HashMap<String, usize>,
    value_buf: DataOutputView,
    /// Recently used values, in front of `db` (see [`crate::write_cache`]); a `RefCell`
    /// because operations that only read the database (a native checkpoint, a property)
    /// take `&self` and must write the changed entries first.
    cache: RefCell<WriteCache>,
}

impl<K: StateKey> std::fmt::Debug for RocksDbKeyedStateBackend<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RocksDbKeyedStateBackend")
            .field("path", &self.path)
            .field("range", &self.options.range)
            .field("states", &self.by_name.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl<K: StateKey> RocksDbKeyedStateBackend<K> {
    /// Opens a fresh backend in `dir`.
    ///
    /// # Errors
    ///
    /// `dir` is a non-empty directory that this backend did not create; RocksDB cannot
    /// open it; the key serializer cannot be created.
    pub fn open(
        dir: &Path,
        options: BackendOptions,
        rocks_options: RocksDbOptions,
    ) -> Result<Self> {
        prepare_dir(dir)?;
        let key_serializer = K::create_serializer(&options.serializer_config)?;
        let memory = rocks_options.memory();
        let db = DB::open(&Self::make_db_options(&memory, &rocks_options), dir).map_err(rocks)?;
        fs::write(dir.join(MARKER), b"typeinfo rocksdb keyed state backend\n")
            .map_err(|e| Error::io(dir.join(MARKER), e))?;
        let mut write = WriteOptions::default();
        write.disable_wal(true);
        let cache = RefCell::new(WriteCache::new(rocks_options.write_cache_bytes));
        Ok(Self {
            builder: CompositeKeyBuilder::new(options.max_parallelism),
            options,
            rocks_options,
            memory,
            path: dir.to_owned(),
            db,
            cf_options: Vec::new(),
            write,
            key_serializer,
            current: None,
            states: Vec::new(),
            by_name: HashMap::new(),
            value_buf: DataOutputView::with_capacity(256),
            cache,
        })
    }

    fn make_db_options(memory: &RocksDbMemory, rocks_options: &RocksDbOptions) -> Options {
        let mut db_opts = Options::default();
        db_opts.create_if_missing(true);
        // Every memtable of every backend of the pool is charged to its one cache.
        db_opts.set_write_buffer_manager(memory.write_buffer_manager());
        db_opts.set_block_based_table_factory(&RocksDbOptions::table(memory));
        db_opts.set_max_background_jobs(rocks_options.max_background_jobs);
        // Required by in-place memtable updates (one writer thread per backend anyway).
        db_opts.set_allow_concurrent_memtable_write(false);
        db_opts
    }

    /// Writes every changed entry of the write cache to RocksDB in one batch and empties the
    /// cache. Called before anything reads the database other than a cached point access.
    /// On an error the cache keeps its entries (nothing is lost).
    pub(crate) fn flush_write_cache(&self) -> Result<()> {
        let mut cache = self.cache.borrow_mut();
        if cache.is_empty() {
            return Ok(());
        }
        let mut batch = WriteBatch::default();
        for (state, key, value) in cache.dirty() {
            let name = self
                .states
                .get(state)
                .map(|s| s.cf())
                .ok_or_else(|| unknown(StateId(state as u32)))?;
            let cf = self.cf_handle(name)?;
            match value {
                Some(value) => batch.put_cf(cf, key, value),
                None => batch.delete_cf(cf, key),
            }
        }
        if !batch.is_empty() {
            self.db.write_opt(batch, &self.write).map_err(rocks)?;
        }
        cache.clear();
        Ok(())
    }

    /// Whether the entries of registered state `index` go through the write cache: a value,
    /// reducing or aggregating state without TTL, with the cache on.
    #[inline]
    fn cached(&mut self, index: usize) -> bool {
        self.cache.get_mut().enabled()
            && self.states.get(index).is_some_and(|s| {
                let meta = s.codec().meta();
                !meta.ttl
                    && matches!(
                        meta.kind,
                        StateKind::Value | StateKind::Reducing | StateKind::Aggregating
                    )
            })
    }

    /// Before a cached access: flushes the write cache when it holds more than its capacity.
    /// Called before the access changes anything, so that an error means nothing changed
    /// and a cache whose flushes fail does not grow (it overshoots by one entry at most).
    #[inline]
    fn make_room_in_write_cache(&mut self) -> Result<()> {
        if self.cache.get_mut().is_full() {
            self.flush_write_cache()?;
        }
        Ok(())
    }

    /// The database options of this backend (for a database opened in its place).
    pub(crate) fn db_options(&self) -> Options {
        Self::make_db_options(&self.memory, &self.rocks_options)
    }

    /// The handle of column family `name`.
    pub(crate) fn cf_handle(&self, name: &str) -> Result<&rocksdb::ColumnFamily> {
        self.db.cf_handle(name).ok_or_else(|| missing_cf(name))
    }

    /// Puts `db` (opened in `path`) in place of this backend's database, which is closed;
    /// returns the old database's directory.
    pub(crate) fn replace_db(&mut self, db: DB, path: PathBuf) -> PathBuf {
        // The one caller (`restore_native`) runs on a backend it found empty, and finding
        // it empty flushed the cache: there is nothing cached, and nothing must survive the
        // database it belonged to.
        self.cache.get_mut().clear();
        drop(std::mem::replace(&mut self.db, db));
        std::mem::replace(&mut self.path, path)
    }

    /// Removes every entry of every state.
    pub(crate) fn clear_all_states(&mut self) -> Result<()> {
        for state in &self.states {
            let cf = self.cf_handle(state.cf())?;
            // Every key of a state starts with its key group (below 2^15, big-endian, in
            // one or two bytes), so its first byte is below 0x80 and one range covers them
            // all. (Finding the last key with a reverse seek fails on column families that
            // are updated in place, which left their entries in place.)
            self.db
                .delete_range_cf(cf, &[] as &[u8], &[0x80u8] as &[u8])
                .map_err(rocks)?;
        }
        // After the deletes: if one failed, the cached changes were not dropped with them.
        self.cache.get_mut().clear();
        Ok(())
    }

    /// The database directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The memory pool this backend shares with the others of the process opened with the
    /// same bound.
    pub fn memory(&self) -> &RocksDbMemory {
        &self.memory
    }

    /// An integer property of RocksDB (`rocksdb.estimate-table-readers-mem`,
    /// `rocksdb.cur-size-all-mem-tables`, ...), summed over the column families of every
    /// registered state.
    ///
    /// # Errors
    ///
    /// RocksDB does not know the property, or fails.
    pub fn int_property(&self, name: &str) -> Result<u64> {
        self.flush_write_cache()?;
        let mut sum = 0u64;
        for state in &self.states {
            let cf = self
                .db
                .cf_handle(state.cf())
                .ok_or_else(|| missing_cf(state.cf()))?;
            let value = self
                .db
                .property_int_value_cf(cf, name)
                .map_err(rocks)?
                .ok_or_else(|| Error::InvalidConfig(format!("no RocksDB property `{name}`")))?;
            sum = sum.saturating_add(value);
        }
        Ok(sum)
    }

    /// Writes every state's memtable to SST files now.
    ///
    /// # Errors
    ///
    /// RocksDB fails.
    pub fn flush(&self) -> Result<()> {
        self.flush_write_cache()?;
        for state in &self.states {
            let cf = self
                .db
                .cf_handle(state.cf())
                .ok_or_else(|| missing_cf(state.cf()))?;
            self.db.flush_cf(cf).map_err(rocks)?;
        }
        Ok(())
    }

    /// RocksDB's native checkpoint: hard links of the current SST files in `dir` (fast,
    /// incremental on disk). It is readable by RocksDB and by this backend's `open` of a
    /// copy, not by the backend-independent restore.
    ///
    /// # Errors
    ///
    /// `dir` exists, or RocksDB fails.
    pub fn native_checkpoint(&self, dir: &Path) -> Result<()> {
        self.flush_write_cache()?;
        let checkpoint = Checkpoint::new(&self.db).map_err(rocks)?;
        checkpoint.create_checkpoint(dir).map_err(rocks)
    }

    /// Compacts every state's column family now (TTL's compaction filter runs then).
    ///
    /// # Errors
    ///
    /// RocksDB fails.
    pub fn compact(&self) -> Result<()> {
        self.flush_write_cache()?;
        for state in &self.states {
            let cf = self
                .db
                .cf_handle(state.cf())
                .ok_or_else(|| missing_cf(state.cf()))?;
            self.db.compact_range_cf(cf, None::<&[u8]>, None::<&[u8]>);
        }
        Ok(())
    }

    fn register<C: ErasedCodec + 'static>(
        &mut self,
        name: &str,
        kind: StateKind,
        ttl: Option<StateTtlConfig>,
        make: impl FnOnce() -> Result<C>,
    ) -> Result<StateId>
    where
        Rocks<C>: RocksState<K>,
    {
        if let Some(&index) = self.by_name.get(name) {
            let existing = &self.states[index];
            if existing.codec().meta().kind != kind
                || existing.as_any().downcast_ref::<Rocks<C>>().is_none()
            {
                return Err(Error::StateMismatch {
                    state: name.to_owned(),
                    detail: format!(
                        "kind {kind} or types other than its first registration ({})",
                        existing.codec().meta().kind
                    ),
                });
            }
            return Ok(StateId(index as u32));
        }
        let codec = make()?;
        let cf = format!("s{}", self.states.len());
        let mut cf_opts = self.rocks_options.column_family(&self.memory);
        if kind == StateKind::List {
            cf_opts.set_merge_operator_associative("typeinfo_list_append", concat_merge);
        } else {
            // Values are read, changed and written back per record (aggregates, counters):
            // overwrite them in the memtable where the new value fits, instead of adding a
            // version per write, which keeps the memtable's skiplist small and its searches
            // short. Safe because one thread owns the backend and snapshots are taken
            // synchronously, with no writes in between.
            cf_opts.set_inplace_update_support(true);
        }
        if let Some(t) = ttl
            .clone()
            .filter(|t| t.cleans_up_in_compaction() && kind != StateKind::List)
        {
            let clock = Arc::clone(&self.options.clock);
            let map = kind == StateKind::Map;
            let skip_user_key = codec.user_key_skipper();
            cf_opts.set_compaction_filter(
                "typeinfo_ttl",
                move |_level: u32, _key: &[u8], value: &[u8]| {
                    ttl_decision(&t, clock.now_ms(), value, map, skip_user_key.as_deref())
                },
            );
        }
        self.db.create_cf(&cf, &cf_opts).map_err(rocks)?;
        self.cf_options.push(cf_opts);
        self.states.push(Box::new(Rocks {
            cf: Arc::from(cf.as_str()),
            codec,
            ttl,
        }));
        self.by_name.insert(name.to_owned(), self.states.len() - 1);
        Ok(StateId((self.states.len() - 1) as u32))
    }

    #[inline]
    fn typed<C: 'static>(&self, id: StateId) -> Result<&Rocks<C>> {
        let state = self.states.get(id.0 as usize).ok_or_else(|| unknown(id))?;
        state
            .as_any()
            .downcast_ref::<Rocks<C>>()
            .ok_or_else(|| wrong_types(&state.codec().meta().name))
    }

    #[inline]
    fn key_and_namespace<NS: TypeSerializer<N>, N>(
        &mut self,
        ns_serializer: &NS,
        namespace: &N,
    ) -> Result<()> {
        if self.current.is_none() {
            return Err(Error::NoCurrentKey);
        }
        self.builder.set_namespace(namespace, ns_serializer)?;
        Ok(())
    }
}

/// The compaction filter of TTL: drops values (map entries) whose timestamp expired.
#[allow(clippy::type_complexity)] // an optional skipper of a user key
fn ttl_decision(
    ttl: &StateTtlConfig,
    now: i64,
    value: &[u8],
    map: bool,
    skip_user_key: Option<&(dyn Fn(&mut DataInputView<'_>) -> typeinfo::Result<()> + Send + Sync)>,
) -> Decision {
    let mut input = DataInputView::new(value);
    if map {
        match skip_user_key {
            Some(skip) if skip(&mut input).is_ok() => {}
            _ => return Decision::Keep,
        }
    }
    match input.read_i64() {
        Ok(ts) if ttl.is_expired(ts, now) => Decision::Remove,
        _ => Decision::Keep,
    }
}

fn prepare_dir(dir: &Path) -> Result<()> {
    match fs::read_dir(dir) {
        Ok(mut entries) => {
            if entries.next().is_none() {
                return Ok(());
            }
            if dir.join(MARKER).exists() {
                DB::destroy(&Options::default(), dir).map_err(rocks)?;
                let _ = fs::remove_dir_all(dir);
                return fs::create_dir_all(dir).map_err(|e| Error::io(dir, e));
            }
            Err(Error::InvalidConfig(format!(
                "`{}` is not empty and is not a typeinfo RocksDB backend directory: refusing to use it",
                dir.display()
            )))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))
        }
        Err(e) => Err(Error::io(dir, e)),
    }
}

fn unknown(id: StateId) -> Error {
    Error::StateMismatch {
        state: format!("#{}", id.0),
        detail: "an id this backend never gave out".to_owned(),
    }
}

fn wrong_types(name: &str) -> Error {
    Error::StateMismatch {
        state: name.to_owned(),
        detail: "types other than its registration".to_owned(),
    }
}

/// The successor of a prefix: the smallest key greater than every key that starts with it.
fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last != 0xff {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

impl<K: StateKey> KeyedStateBackend<K> for RocksDbKeyedStateBackend<K> {
    fn max_parallelism(&self) -> u32 {
        self.options.max_parallelism
    }

    fn key_group_range(&self) -> KeyGroupRange {
        self.options.range
    }

    #[inline]
    fn set_current_key(&mut self, key: &K) -> Result<()> {
        self.value_buf.clear();
        self.key_serializer.serialize(key, &mut self.value_buf)?;
        let key_group = self.options.owned_key_group(self.value_buf.as_slice())?;
        self.builder
            .set_key_bytes(key_group, self.value_buf.as_slice());
        match &mut self.current {
            Some(c) => {
                c.key.clone_from(key);
                c.key_group = key_group;
            }
            None => {
                self.current = Some(Current {
                    key: key.clone(),
                    key_group,
                })
            }
        }
        Ok(())
    }

    fn current_key(&self) -> Result<&K> {
        self.current
            .as_ref()
            .map(|c| &c.key)
            .ok_or(Error::NoCurrentKey)
    }

    fn current_key_group(&self) -> Result<u16> {
        self.current
            .as_ref()
            .map(|c| c.key_group)
            .ok_or(Error::NoCurrentKey)
    }

    fn value_state<N: StateNamespace, V: StateValue>(
        &mut self,
        descriptor: &ValueStateDescriptor<V>,
    ) -> Result<ValueState<N, V>> {
        let config = self.options.serializer_config.clone();
        let ttl = descriptor.ttl.clone();
        let id = self.register(&descriptor.name, StateKind::Value, ttl.clone(), || {
            ValueCodec::<N, V>::new(&descriptor.name, StateKind::Value, ttl.is_some(), &config)
        })?;
        Ok(ValueState {
            id,
            default: descriptor.default.clone(),
            _types: PhantomData,
        })
    }

    fn list_state<N: StateNamespace, V: StateValue>(
        &mut self,
        descriptor: &ListStateDescriptor<V>,
    ) -> Result<ListState<N, V>> {
        let config = self.options.serializer_config.clone();
        let ttl = descriptor.ttl.clone();
        let id = self.register(&descriptor.name, StateKind::List, ttl.clone(), || {
            ValueCodec::<N, V>::new(&descriptor.name, StateKind::List, ttl.is_some(), &config)
        })?;
        Ok(ListState {
            id,
            _types: PhantomData,
        })
    }

    fn map_state<N: StateNamespace, UK: MapKey, UV: StateValue>(
        &mut self,
        descriptor: &MapStateDescriptor<UK, UV>,
    ) -> Result<MapState<N, UK, UV>> {
        let config = self.options.serializer_config.clone();
        let ttl = descriptor.ttl.clone();
        let id = self.register(&descriptor.name, StateKind::Map, ttl.clone(), || {
            MapCodec::<N, UK, UV>::new(&descriptor.name, ttl.is_some(), &config)
        })?;
        Ok(MapState {
            id,
            _types: PhantomData,
        })
    }

    fn reducing_state<N: StateNamespace, V: StateValue>(
        &mut self,
        descriptor: &ReducingStateDescriptor<V>,
    ) -> Result<ReducingState<N, V>> {
        let config = self.options.serializer_config.clone();
        let ttl = descriptor.ttl.clone();
        let id = self.register(&descriptor.name, StateKind::Reducing, ttl.clone(), || {
            ValueCodec::<N, V>::new(
                &descriptor.name,
                StateKind::Reducing,
                ttl.is_some(),
                &config,
            )
        })?;
        Ok(ReducingState {
            id,
            reduce: Arc::clone(&descriptor.reduce),
            _types: PhantomData,
        })
    }

    fn aggregating_state<N: StateNamespace, In: 'static, Acc: StateValue, Out: 'static>(
        &mut self,
        descriptor: &AggregatingStateDescriptor<In, Acc, Out>,
    ) -> Result<AggregatingState<N, In, Acc, Out>> {
        let config = self.options.serializer_config.clone();
        let ttl = descriptor.ttl.clone();
        let id = self.register(
            &descriptor.name,
            StateKind::Aggregating,
            ttl.clone(),
            || {
                ValueCodec::<N, Acc>::new(
                    &descriptor.name,
                    StateKind::Aggregating,
                    ttl.is_some(),
                    &config,
                )
            },
        )?;
        Ok(AggregatingState {
            id,
            function: Arc::clone(&descriptor.function),
            _types: PhantomData,
        })
    }

    fn value_get<N: StateNamespace, V: StateValue>(
        &mut self,
        state: StateId,
        namespace: &N,
    ) -> Result<Option<V>> {
        let now = self.options.clock.now_ms();
        let s = self.typed::<ValueCodec<N, V>>(state)?;
        let (ns_ser, v_ser, ttl, cf_name) = (
            s.codec.namespace.clone(),
            s.codec.value.clone(),
            s.ttl.clone(),
            s.cf.clone(),
        );
        self.key_and_namespace(&ns_ser, namespace)?;
        let index = state.0 as usize;
        let cached = self.cached(index);
        if cached {
            self.make_room_in_write_cache()?;
        }
        let cf = self
            .db
            .cf_handle(&cf_name)
            .ok_or_else(|| missing_cf(&cf_name))?;
        if cached {
            if let Some(hit) = self
                .cache
                .get_mut()
                .get(index, self.builder.key_and_namespace())
            {
                return match hit {
                    Some(bytes) => Ok(Some(v_ser.deserialize(&mut DataInputView::new(bytes))?)),
                    None => Ok(None),
                };
            }
        }
        let Some(bytes) = self
            .db
            .get_pinned_cf(cf, self.builder.key_and_namespace())
            .map_err(rocks)?
        else {
            if cached {
                let key = self.builder.key_and_namespace();
                self.cache.get_mut().put(index, key, None, false);
            }
            return Ok(None);
        };
        if cached {
            let key = self.builder.key_and_namespace();
            self.cache.get_mut().put(index, key, Some(&bytes), false);
            return Ok(Some(v_ser.deserialize(&mut DataInputView::new(&bytes))?));
        }
        let mut input = DataInputView::new(&bytes);
        if ttl.is_some() {
            let mut ts = input.read_i64()?;
            let before = ts;
            match on_read(&ttl, &mut ts, now) {
                Visible::Expired => {
                    drop(bytes);
                    self.db
                        .delete_cf_opt(cf, self.builder.key_and_namespace(), &self.write)
                        .map_err(rocks)?;
                    return Ok(None);
                }
                Visible::Yes if ts != before => {
                    let mut refreshed = bytes.to_vec();
                    refreshed[..8].copy_from_slice(&ts.to_le_bytes());
                    let value = v_ser.deserialize(&mut input)?;
                    drop(bytes);
                    self.db
                        .put_cf_opt(cf, self.builder.key_and_namespace(), refreshed, &self.write)
                        .map_err(rocks)?;
                    return Ok(Some(value));
                }
                Visible::Yes => {}
            }
        }
        Ok(Some(v_ser.deserialize(&mut input)?))
    }

    fn value_update<N: StateNamespace, V: StateValue>(
        &mut self,
        state: StateId,
        namespace: &N,
        update: &mut dyn FnMut(Option<&mut V>) -> Option<V>,
    ) -> Result<()> {
        let s = self.typed::<ValueCodec<N, V>>(state)?;
        if s.ttl.is_some() {
            // TTL reads may refresh or expire the entry: take the general path.
            return crate::backend::update_by_get_and_put(self, state, namespace, update);
        }
        // One key build, one column-family lookup, one read and one write.
        let (ns_ser, v_ser, cf_name) = (
            s.codec.namespace.clone(),
            s.codec.value.clone(),
            s.cf.clone(),
        );
        self.key_and_namespace(&ns_ser, namespace)?;
        let index = state.0 as usize;
        let cached = self.cached(index);
        if cached {
            self.make_room_in_write_cache()?;
        }
        let cf = self
            .db
            .cf_handle(&cf_name)
            .ok_or_else(|| missing_cf(&cf_name))?;
        let hit = if cached {
            self.cache
                .get_mut()
                .get(index, self.builder.key_and_namespace())
        } else {
            None
        };
        let current = match hit {
            Some(Some(bytes)) => Some(v_ser.deserialize(&mut DataInputView::new(bytes))?),
            Some(None) => None,
            None => match self
                .db
                .get_pinned_cf(cf, self.builder.key_and_namespace())
                .map_err(rocks)?
            {
                Some(bytes) => Some(v_ser.deserialize(&mut DataInputView::new(&bytes))?),
                None => None,
            },
        };
        let value = match current {
            Some(mut v) => {
                update(Some(&mut v));
                v
            }
            None => match update(None) {
                Some(v) => v,
                None => return Ok(()),
            },
        };
        self.value_buf.clear();
        v_ser.serialize(&value, &mut self.value_buf)?;
        if cached {
            let key = self.builder.key_and_namespace();
            let bytes = self.value_buf.as_slice();
            self.cache.get_mut().put(index, key, Some(bytes), true);
            return Ok(());
        }
        self.db
            .put_cf_opt(
                cf,
                self.builder.key_and_namespace(),
                self.value_buf.as_slice(),
                &self.write,
            )
            .map_err(rocks)
    }

    fn value_put<N: StateNamespace, V: StateValue>(
        &mut self,
        state: StateId,
        namespace: &N,
        value: V,
    ) -> Result<()> {
        let now = self.options.clock.now_ms();
        let s = self.typed::<ValueCodec<N, V>>(state)?;
        let (ns_ser, v_ser, ttl, cf_name) = (
            s.codec.namespace.clone(),
            s.codec.value.clone(),
            s.ttl.is_some(),
            s.cf.clone(),
        );
        self.key_and_namespace(&ns_ser, namespace)?;
        self.value_buf.clear();
        if ttl {
            self.value_buf.write_i64(now);
        }
        v_ser.serialize(&value, &mut self.value_buf)?;
        if self.cached(state.0 as usize) {
            self.make_room_in_write_cache()?;
            let key = self.builder.key_and_namespace();
            let bytes = self.value_buf.as_slice();
            self.cache
                .get_mut()
                .put(state.0 as usize, key, Some(bytes), true);
            return Ok(());
        }
        let cf = self
            .db
            .cf_handle(&cf_name)
            .ok_or_else(|| missing_cf(&cf_name))?;
        self.db
            .put_cf_opt(
                cf,
                self.builder.key_and_namespace(),
                self.value_buf.as_slice(),
                &self.write,
            )
            .map_err(rocks)
    }

    fn copy_value<V: StateValue>(&mut self, state: StateId, value: &V) -> Result<V> {
        self.states
            .get(state.0 as usize)
            .ok_or_else(|| unknown(state))?;
        Ok(V::create_serializer(&self.options.serializer_config)?.copy(value))
    }

    fn list_get<N: StateNamespace, V: StateValue>(
        &mut self,
        state: StateId,
        namespace: &N,
    ) -> Result<Vec<V>> {
        let now = self.options.clock.now_ms();
        let s = self.typed::<ValueCodec<N, V>>(state)?;
        let (ns_ser, v_ser, ttl, cf_name) = (
            s.codec.namespace.clone(),
            s.codec.value.clone(),
            s.ttl.clone(),
            s.cf.clone(),
        );
        self.key_and_namespace(&ns_ser, namespace)?;
        let cf = self
            .db
            .cf_handle(&cf_name)
            .ok_or_else(|| missing_cf(&cf_name))?;
        let Some(bytes) = self
            .db
            .get_pinned_cf(cf, self.builder.key_and_namespace())
            .map_err(rocks)?
        else {
            return Ok(Vec::new());
        };
        let mut input = DataInputView::new(&bytes);
        let mut out = Vec::new();
        let mut rewritten = DataOutputView::new();
        let mut changed = false;
        while !input.is_empty() {
            // Each element of a list is its own value (its own zero-sized budget): `add`
            // writes them one at a time.
            input.reset_zero_sized_budget();
            let mut ts = if ttl.is_some() { input.read_i64()? } else { 0 };
            let before = ts;
            let start = input.position();
            let value = v_ser.deserialize(&mut input)?;
            if on_read(&ttl, &mut ts, now) == Visible::Expired {
                changed = true;
                continue;
            }
            changed |= ts != before;
            if ttl.is_some() {
                rewritten.write_i64(ts);
            }
            rewritten.write_bytes(input.consumed_since(start));
            out.push(value);
        }
        drop(bytes);
        if changed {
            if rewritten.is_empty() {
                self.db
                    .delete_cf_opt(cf, self.builder.key_and_namespace(), &self.write)
                    .map_err(rocks)?;
            } else {
                self.db
                    .put_cf_opt(
                        cf,
                        self.builder.key_and_namespace(),
                        rewritten.as_slice(),
                        &self.write,
                    )
                    .map_err(rocks)?;
            }
        }
        Ok(out)
    }

    fn list_add<N: StateNamespace, V: StateValue>(
        &mut self,
        state: StateId,
        namespace: &N,
        value: V,
    ) -> Result<()> {
        let now = self.options.clock.now_ms();
        let s = self.typed::<ValueCodec<N, V>>(state)?;
        let (ns_ser, v_ser, ttl, cf_name) = (
            s.codec.namespace.clone(),
            s.codec.value.clone(),
            s.ttl.is_some(),
            s.cf.clone(),
        );
        self.key_and_namespace(&ns_ser, namespace)?;
        self.value_buf.clear();
        if ttl {
            self.value_buf.write_i64(now);
        }
        v_ser.serialize(&value, &mut self.value_buf)?;
        let cf = self
            .db
            .cf_handle(&cf_name)
            .ok_or_else(|| missing_cf(&cf_name))?;
        self.db
            .merge_cf_opt(
                cf,
                self.builder.key_and_namespace(),
                self.value_buf.as_slice(),
                &self.write,
            )
            .map_err(rocks)
    }

    fn list_add_all<N: StateNamespace, V: StateValue>(
        &mut self,
        state: StateId,
        namespace: &N,
        values: Vec<V>,
    ) -> Result<()> {
        if values.is_empty() {
            return Ok(());
        }
        let now = self.options.clock.now_ms();
        let s = self.typed::<ValueCodec<N, V>>(state)?;
        let (ns_ser, v_ser, ttl, cf_name) = (
            s.codec.namespace.clone(),
            s.codec.value.clone(),
            s.ttl.is_some(),
            s.cf.clone(),
        );
        self.key_and_namespace(&ns_ser, namespace)?;
        self.value_buf.clear();
        for v in &values {
            if ttl {
                self.value_buf.write_i64(now);
            }
            // Each element is its own value, as `add` writes it.
            self.value_buf.reset_zero_sized_budget();
            v_ser.serialize(v, &mut self.value_buf)?;
        }
        let cf = self
            .db
            .cf_handle(&cf_name)
            .ok_or_else(|| missing_cf(&cf_name))?;
        // One merge operand: the list's merge operator concatenates self-delimiting elements.
        self.db
            .merge_cf_opt(
                cf,
                self.builder.key_and_namespace(),
                self.value_buf.as_slice(),
                &self.write,
            )
            .map_err(rocks)
    }

    fn list_update<N: StateNamespace, V: StateValue>(
        &mut self,
        state: StateId,
        namespace: &N,
        values: Vec<V>,
    ) -> Result<()> {
        let now = self.options.clock.now_ms();
        let s = self.typed::<ValueCodec<N, V>>(state)?;
        let (ns_ser, v_ser, ttl, cf_name) = (
            s.codec.namespace.clone(),
            s.codec.value.clone(),
            s.ttl.is_some(),
            s.cf.clone(),
        );
        self.key_and_namespace(&ns_ser, namespace)?;
        let cf = self
            .db
            .cf_handle(&cf_name)
            .ok_or_else(|| missing_cf(&cf_name))?;
        if values.is_empty() {
            return self
                .db
                .delete_cf_opt(cf, self.builder.key_and_namespace(), &self.write)
                .map_err(rocks);
        }
        self.value_buf.clear();
        for v in &values {
            if ttl {
                self.value_buf.write_i64(now);
            }
            // Each element is its own value, as `add` writes it.
            self.value_buf.reset_zero_sized_budget();
            v_ser.serialize(v, &mut self.value_buf)?;
        }
        self.db
            .put_cf_opt(
                cf,
                self.builder.key_and_namespace(),
                self.value_buf.as_slice(),
                &self.write,
            )
            .map_err(rocks)
    }

    fn map_get<N: StateNamespace, UK: MapKey, UV: StateValue>(
        &mut self,
        state: StateId,
        namespace: &N,
        key: &UK,
    ) -> Result<Option<UV>> {
        let now = self.options.clock.now_ms();
        let s = self.typed::<MapCodec<N, UK, UV>>(state)?;
        let (ns_ser, uk_ser, uv_ser, order, ttl, cf_name) = (
            s.codec.namespace.clone(),
            s.codec.user_key.clone(),
            s.codec.user_value.clone(),
            s.codec.user_key_order.clone(),
            s.ttl.clone(),
            s.cf.clone(),
        );
        self.key_and_namespace(&ns_ser, namespace)?;
        let composite = self
            .builder
            .with_user_key_from(|buf| order.write_normalized_key(key, buf))
            .to_vec();
        let cf = self
            .db
            .cf_handle(&cf_name)
            .ok_or_else(|| missing_cf(&cf_name))?;
        let Some(bytes) = self.db.get_pinned_cf(cf, &composite).map_err(rocks)? else {
            return Ok(None);
        };
        let mut input = DataInputView::new(&bytes);
        uk_ser.skip(&mut input)?;
        let ts_at = input.position();
        if ttl.is_some() {
            let mut ts = input.read_i64()?;
            let before = ts;
            if on_read(&ttl, &mut ts, now) == Visible::Expired {
                drop(bytes);
                self.db
                    .delete_cf_opt(cf, &composite, &self.write)
                    .map_err(rocks)?;
                return Ok(None);
            }
            if ts != before {
                let mut refreshed = bytes.to_vec();
                refreshed[ts_at..ts_at + 8].copy_from_slice(&ts.to_le_bytes());
                let value = uv_ser.deserialize(&mut input)?;
                drop(bytes);
                self.db
                    .put_cf_opt(cf, &composite, refreshed, &self.write)
                    .map_err(rocks)?;
                return Ok(Some(value));
            }
        }
        Ok(Some(uv_ser.deserialize(&mut input)?))
    }

    fn map_put<N: StateNamespace, UK: MapKey, UV: StateValue>(
        &mut self,
        state: StateId,
        namespace: &N,
        key: UK,
        value: UV,
    ) -> Result<()> {
        let now = self.options.clock.now_ms();
        let s = self.typed::<MapCodec<N, UK, UV>>(state)?;
        let (ns_ser, uk_ser, uv_ser, order, ttl, cf_name) = (
            s.codec.namespace.clone(),
            s.codec.user_key.clone(),
            s.codec.user_value.clone(),
            s.codec.user_key_order.clone(),
            s.ttl.is_some(),
            s.cf.clone(),
        );
        self.key_and_namespace(&ns_ser, namespace)?;
        self.value_buf.clear();
        uk_ser.serialize(&key, &mut self.value_buf)?;
        if ttl {
            self.value_buf.write_i64(now);
        }
        uv_ser.serialize(&value, &mut self.value_buf)?;
        let composite = self
            .builder
            .with_user_key_from(|buf| order.write_normalized_key(&key, buf));
        let cf = self
            .db
            .cf_handle(&cf_name)
            .ok_or_else(|| missing_cf(&cf_name))?;
        self.db
            .put_cf_opt(cf, composite, self.value_buf.as_slice(), &self.write)
            .map_err(rocks)
    }

    fn map_remove<N: StateNamespace, UK: MapKey, UV: StateValue>(
        &mut self,
        state: StateId,
        namespace: &N,
        key: &UK,
    ) -> Result<()> {
        let s = self.typed::<MapCodec<N, UK, UV>>(state)?;
        let (ns_ser, order, cf_name) = (
            s.codec.namespace.clone(),
            s.codec.user_key_order.clone(),
            s.cf.clone(),
        );
        self.key_and_namespace(&ns_ser, namespace)?;
        let composite = self
            .builder
            .with_user_key_from(|buf| order.write_normalized_key(key, buf));
        let cf = self
            .db
            .cf_handle(&cf_name)
            .ok_or_else(|| missing_cf(&cf_name))?;
        self.db
            .delete_cf_opt(cf, composite, &self.write)
            .map_err(rocks)
    }

    fn map_put_all<N: StateNamespace, UK: MapKey, UV: StateValue>(
        &mut self,
        state: StateId,
        namespace: &N,
        entries: &mut dyn Iterator<Item = (UK, UV)>,
    ) -> Result<()> {
        let now = self.options.clock.now_ms();
        let s = self.typed::<MapCodec<N, UK, UV>>(state)?;
        let (ns_ser, uk_ser, uv_ser, order, ttl, cf_name) = (
            s.codec.namespace.clone(),
            s.codec.user_key.clone(),
            s.codec.user_value.clone(),
            s.codec.user_key_order.clone(),
            s.ttl.is_some(),
            s.cf.clone(),
        );
        self.key_and_namespace(&ns_ser, namespace)?;
        let cf = self
            .db
            .cf_handle(&cf_name)
            .ok_or_else(|| missing_cf(&cf_name))?;
        let mut batch = WriteBatch::default();
        for (key, value) in entries {
            // Each entry is its own value, as `put` writes it.
            self.value_buf.clear();
            uk_ser.serialize(&key, &mut self.value_buf)?;
            if ttl {
                self.value_buf.write_i64(now);
            }
            uv_ser.serialize(&value, &mut self.value_buf)?;
            let composite = self
                .builder
                .with_user_key_from(|buf| order.write_normalized_key(&key, buf));
            batch.put_cf(cf, composite, self.value_buf.as_slice());
            if batch.len() >= WRITE_BATCH || batch.size_in_bytes() >= WRITE_BATCH_BYTES {
                self.db
                    .write_opt(std::mem::take(&mut batch), &self.write)
                    .map_err(rocks)?;
            }
        }
        if !batch.is_empty() {
            self.db.write_opt(batch, &self.write).map_err(rocks)?;
        }
        Ok(())
    }

    fn map_iter<'a, N: StateNamespace, UK: MapKey, UV: StateValue>(
        &'a mut self,
        state: StateId,
        namespace: &N,
    ) -> Result<MapIter<'a, UK, UV>> {
        let now = self.options.clock.now_ms();
        let s = self.typed::<MapCodec<N, UK, UV>>(state)?;
        let (ns_ser, user_key, user_value, ttl, cf_name) = (
            s.codec.namespace.clone(),
            s.codec.user_key.clone(),
            s.codec.user_value.clone(),
            s.ttl.clone(),
            s.cf.clone(),
        );
        self.key_and_namespace(&ns_ser, namespace)?;
        let this: &'a Self = self;
        let prefix = this.builder.key_and_namespace().to_vec();
        let cf = this
            .db
            .cf_handle(&cf_name)
            .ok_or_else(|| missing_cf(&cf_name))?;
        let mut read = ReadOptions::default();
        if let Some(end) = prefix_end(&prefix) {
            read.set_iterate_upper_bound(end);
        }
        let mut it = this.db.raw_iterator_cf_opt(cf, read);
        it.seek(&prefix);
        Ok(MapIter::new(RocksMapIter::<UK, UV> {
            db: &this.db,
            cf,
            write: &this.write,
            it,
            prefix,
            user_key,
            user_value,
            ttl,
            now,
            done: false,
        }))
    }

    fn clear<N: StateNamespace>(&mut self, state: StateId, namespace: &N) -> Result<()> {
        if self.current.is_none() {
            return Err(Error::NoCurrentKey);
        }
        let s = self
            .states
            .get(state.0 as usize)
            .ok_or_else(|| unknown(state))?;
        let cf_name = s.cf().to_owned();
        let is_map = s.codec().meta().kind == StateKind::Map;
        let ns_bytes = serialize_namespace::<N>(s.codec(), namespace)?;
        if self.cached(state.0 as usize) {
            self.make_room_in_write_cache()?;
            // Cached as absent: reads see the delete, and the flush writes it.
            let key = self.builder.set_namespace_bytes(&ns_bytes);
            self.cache.get_mut().put(state.0 as usize, key, None, true);
            return Ok(());
        }
        let prefix = self.builder.set_namespace_bytes(&ns_bytes);
        let prefix = prefix.to_vec();
        let cf = self
            .db
            .cf_handle(&cf_name)
            .ok_or_else(|| missing_cf(&cf_name))?;
        if is_map {
            match prefix_end(&prefix) {
                Some(end) => self.db.delete_range_cf(cf, &prefix, &end).map_err(rocks),
                None => Err(Error::Storage(
                    "cannot bound a prefix of 0xff bytes".to_owned(),
                )),
            }
        } else {
            self.db
                .delete_cf_opt(cf, &prefix, &self.write)
                .map_err(rocks)
        }
    }

    fn keys<N: StateNamespace>(&mut self, state: StateId, namespace: &N) -> Result<Vec<K>> {
        self.flush_write_cache()?;
        let s = self
            .states
            .get(state.0 as usize)
            .ok_or_else(|| unknown(state))?;
        let ns_bytes = serialize_namespace::<N>(s.codec(), namespace)?;
        let cf = self
            .db
            .cf_handle(s.cf())
            .ok_or_else(|| missing_cf(s.cf()))?;
        let prefix_len = self.builder.prefix_len();
        let mut it = self.db.raw_iterator_cf(cf);
        it.seek_to_first();
        let mut out: Vec<K> = Vec::new();
        while let Some(k) = it.key() {
            let mut input = DataInputView::new(&k[prefix_len.min(k.len())..]);
            let key = self.key_serializer.deserialize(&mut input)?;
            if input.rest().starts_with(&ns_bytes) && out.last() != Some(&key) {
                out.push(key);
            }
            it.next();
        }
        it.status().map_err(rocks)?;
        Ok(out)
    }

    fn states(&self) -> Vec<StateMeta> {
        self.states
            .iter()
            .map(|s| s.codec().meta().clone())
            .collect()
    }

    fn snapshot(&mut self, path: &Path) -> Result<KeyedSnapshot> {
        self.flush_write_cache()?;
        let header = SnapshotHeader {
            max_parallelism: self.options.max_parallelism,
            range: self.options.range,
            key: self.key_serializer.snapshot(),
            states: self.states(),
        };
        let now = self.options.clock.now_ms();
        let prefix_len = self.builder.prefix_len();
        let key_skip = PhantomSkip(self.key_serializer.clone(), PhantomData::<fn() -> K>);
        let snapshot = self.db.snapshot();
        let mut writer = SnapshotWriter::new(&header)?;
        let mut prefix = CompositeKeyBuilder::new(self.options.max_parallelism);
        for key_group in self.options.range.iter() {
            writer.begin_key_group(key_group);
            prefix.set_key_bytes(key_group, &[]);
            let start = prefix.key_prefix().to_vec();
            for (index, state) in self.states.iter().enumerate() {
                let cf = self
                    .db
                    .cf_handle(state.cf())
                    .ok_or_else(|| missing_cf(state.cf()))?;
                let mut read = ReadOptions::default();
                read.set_snapshot(&snapshot);
                if let Some(end) = prefix_end(&start) {
                    read.set_iterate_upper_bound(end);
                }
                let mut it = self.db.raw_iterator_cf_opt(cf, read);
                it.seek(&start);
                writer.state_entries(index, |out| {
                    let mut count = 0;
                    while let (Some(k), Some(v)) = (it.key(), it.value()) {
                        if !k.starts_with(&start) {
                            break;
                        }
                        count += state.write_entry(prefix_len, &key_skip, k, v, out, now)?;
                        it.next();
                    }
                    it.status().map_err(rocks)?;
                    Ok(count)
                })?;
            }
        }
        let names: Vec<String> = header.states.iter().map(|s| s.name.clone()).collect();
        writer.finish(path, &names)
    }

    fn restore(&mut self, files: &[&Path]) -> Result<RestoreReport> {
        self.flush_write_cache()?;
        let (max, range) = (self.options.max_parallelism, self.options.range);
        let mut target = RocksRestore {
            backend: self,
            batch: WriteBatch::default(),
            pending: 0,
        };
        restore_into(&mut target, files, max, range)
    }
}

/// The namespace's bytes, serialized with the state's namespace serializer.
fn serialize_namespace<N: StateNamespace>(
    codec: &dyn ErasedCodec,
    namespace: &N,
) -> Result<Vec<u8>> {
    let mut out = DataOutputView::new();
    codec
        .write_namespace(namespace, &mut out)
        .ok_or_else(|| wrong_types(&codec.meta().name))??;
    Ok(out.into_inner())
}

struct RocksRestore<'a, K: StateKey> {
    backend: &'a mut RocksDbKeyedStateBackend<K>,
    batch: WriteBatch,
    pending: usize,
}

impl<K: StateKey> RestoreTarget for RocksRestore<'_, K> {
    fn key_transcoder(
        &self,
        stored: &SerializerSnapshot,
        registry: &SnapshotRegistry,
    ) -> Result<(PartFn, bool)> {
        part_transcoder(
            &self.backend.key_serializer,
            stored,
            registry,
            "(key)",
            "key",
        )
    }

    fn state_transcoder(
        &self,
        stored: &StateMeta,
        registry: &SnapshotRegistry,
    ) -> Result<(usize, EntryTranscoder)> {
        let index = *self
            .backend
            .by_name
            .get(&stored.name)
            .ok_or_else(|| not_registered(&stored.name))?;
        Ok((
            index,
            self.backend.states[index]
                .codec()
                .transcoder(stored, registry)?,
        ))
    }

    fn ingest(&mut self, state: usize, key_group: u16, key: &[u8], entry: &[u8]) -> Result<()> {
        let b = &mut *self.backend;
        b.states[state].ingest(
            &mut b.builder,
            key_group,
            key,
            entry,
            &mut self.batch,
            &b.db,
        )?;
        self.pending += 1;
        if self.pending >= RESTORE_BATCH {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        let batch = std::mem::take(&mut self.batch);
        self.pending = 0;
        self.backend
            .db
            .write_opt(batch, &self.backend.write)
            .map_err(rocks)
    }

    fn clear_all(&mut self) -> Result<()> {
        self.batch = WriteBatch::default();
        self.pending = 0;
        self.backend.clear_all_states()
    }
}

#[allow(unused_imports)]
use {Clock as _, Comparable as _, ErasedCodec as _};

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)] // a test panics on what it does not expect

    use super::*;

    /// A RocksDB error keeps RocksDB's error as its source (for callers that log chains).
    #[test]
    fn rocksdb_errors_keep_their_source() {
        let dir = tempfile::tempdir().unwrap();
        let opts = Options::default(); // create_if_missing is off: the open fails
        let error = rocks(DB::open(&opts, dir.path().join("absent")).err().unwrap());
        let source = std::error::Error::source(&error).expect("a source");
        assert!(
            source.downcast_ref::<rocksdb::Error>().is_some(),
            "{source:?}"
        );
        assert!(error.to_string().starts_with("rocksdb: "), "{error}");
    }

    /// Corrupt bytes under a map's prefix are an error of lazy and eager reads, never a panic
    /// or a silently shorter map.
    #[test]
    fn corrupt_map_entries_are_errors_of_lazy_reads() -> Result<()> {
        let dir = tempfile::tempdir().unwrap();
        let options = BackendOptions::new(128, KeyGroupRange::all(128))?;
        let mut b = RocksDbKeyedStateBackend::<String>::open(
            &dir.path().join("db"),
            options,
            RocksDbOptions::default(),
        )?;
        let map = b.map_state::<(), u32, String>(&MapStateDescriptor::new("map"))?;
        b.set_current_key(&"a".to_owned())?;
        map.put_all(&mut b, &(), [(1, "one".to_owned()), (2, "two".to_owned())])?;
        // Cut the second entry's value short: `[user key][user value]` with half a key.
        let cf = b.db.cf_handle("s0").unwrap();
        // (Forward only: memtables with in-place updates cannot iterate backwards.)
        let mut it = b.db.raw_iterator_cf(cf);
        it.seek_to_first();
        let mut last = Vec::new();
        while let Some(k) = it.key() {
            last = k.to_vec();
            it.next();
        }
        it.status().map_err(rocks)?;
        drop(it);
        b.db.put_cf(cf, &last, [0u8, 0]).map_err(rocks)?;

        let mut entries = map.iter(&mut b, &())?;
        assert_eq!(entries.next().transpose()?, Some((1, "one".to_owned())));
        assert!(matches!(entries.next(), Some(Err(Error::Serialization(_)))));
        assert!(entries.next().is_none(), "iteration ends at the error");
        drop(entries);
        assert!(matches!(
            map.entries(&mut b, &()),
            Err(Error::Serialization(_))
        ));
        assert!(map.keys(&mut b, &())?.any(|k| k.is_err()));
        assert!(map.values(&mut b, &())?.any(|v| v.is_err()));
        Ok(())
    }
}
