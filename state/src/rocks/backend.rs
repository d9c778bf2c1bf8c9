//! [`RocksDbKeyedStateBackend`]: its database and directory, opening, flushes, native
//! checkpoints and compaction. Its other methods live in the files of their concept (see the
//! [`rocks`](crate::rocks) module).

use std::cell::RefCell;
use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

use rocksdb::checkpoint::Checkpoint;
use rocksdb::{Options, WriteOptions, DB};
use typeinfo::{DataOutputView, TypeSerializer};

use super::error::{missing_cf, rocks, unknown, wrong_types};
use super::options::RocksDbOptions;
use super::registered_state::{Rocks, RocksState};
use super::write_cache::WriteCache;
use crate::backend::StateId;
use crate::composite_key::CompositeKeyBuilder;
use crate::descriptor::StateKey;
use crate::error::{Error, Result};
use crate::managed_memory::RocksDbMemory;
use crate::options::BackendOptions;

/// The name of the marker file that identifies a directory this backend owns.
pub(crate) const MARKER: &str = "TYPEINFO_ROCKSDB_BACKEND";

pub(super) struct Current<K> {
    pub(super) key: K,
    pub(super) key_group: u16,
}

/// Keyed state in RocksDB: values are serialized on every access, and state can outgrow
/// memory.
///
/// Value, reducing and aggregating states (without TTL) keep the serialized values of
/// recently used entries in a bounded write cache in front of RocksDB
/// ([`RocksDbOptions::write_cache_bytes`], default
/// [`DEFAULT_WRITE_CACHE_BYTES`](crate::DEFAULT_WRITE_CACHE_BYTES)): an entry
/// updated with every record reaches RocksDB once per flush of the cache, and every snapshot,
/// checkpoint or iteration writes the changed entries first.
///
/// The directory belongs to the backend: it is created if missing, and a previous instance
/// of this backend in it is replaced (state comes back through savepoints or checkpoints,
/// as in Flink). A non-empty directory that is not one of ours is refused, never wiped.
/// Writes skip RocksDB's write-ahead log: durability comes from snapshots.
pub struct RocksDbKeyedStateBackend<K: StateKey> {
    pub(super) options: BackendOptions,
    pub(super) rocks_options: RocksDbOptions,
    pub(super) memory: RocksDbMemory,
    path: PathBuf,
    pub(crate) db: DB,
    /// The options of every column family, kept alive after the database: RocksDB holds
    /// raw pointers to their compaction filters (declared after `db`, so dropped after it).
    pub(crate) cf_options: Vec<Options>,
    pub(super) write: WriteOptions,
    pub(crate) key_serializer: K::Serializer,
    pub(super) builder: CompositeKeyBuilder,
    pub(super) current: Option<Current<K>>,
    pub(crate) states: Vec<Box<dyn RocksState<K>>>,
    pub(crate) by_name: HashMap<String, usize>,
    pub(super) value_buf: DataOutputView,
    /// Recently used values, in front of `db` (see [`crate::rocks::write_cache`]); a `RefCell`
    /// because operations that only read the database (a native checkpoint, a property)
    /// take `&self` and must write the changed entries first.
    pub(super) cache: RefCell<WriteCache>,
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

    /// The options this backend was opened with.
    pub fn rocks_options(&self) -> &RocksDbOptions {
        &self.rocks_options
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

    #[inline]
    pub(super) fn typed<C: 'static>(&self, id: StateId) -> Result<&Rocks<C>> {
        let state = self.states.get(id.0 as usize).ok_or_else(|| unknown(id))?;
        state
            .as_any()
            .downcast_ref::<Rocks<C>>()
            .ok_or_else(|| wrong_types(&state.codec().meta().name))
    }

    #[inline]
    pub(super) fn key_and_namespace<NS: TypeSerializer<N>, N>(
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
