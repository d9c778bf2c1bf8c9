//! The RocksDB options a user tunes ([`RocksDbOptions`]: memory, write buffers, compression,
//! compaction, background jobs, the write cache), and the column family options made of them.

use rocksdb::{BlockBasedOptions, DBCompressionType, Options};

use crate::managed_memory::{default_managed_memory_bytes, RocksDbMemory};

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

/// The default largest SST file a compaction writes: 8 MiB (see
/// [`RocksDbOptions::target_file_bytes`]).
pub const DEFAULT_TARGET_FILE_BYTES: u64 = 8 << 20;

/// The RocksDB options a user tunes, with sensible defaults.
///
/// RocksDB's own memory (block cache and memtables) is bounded per process by one setting,
/// [`managed_memory_bytes`](Self::managed_memory_bytes): see [`RocksDbMemory`]. Outside that
/// bound: each backend's write cache ([`write_cache_bytes`](Self::write_cache_bytes),
/// [`DEFAULT_WRITE_CACHE_BYTES`] by default).
#[derive(Debug, Clone)]
pub struct RocksDbOptions {
    managed_memory_bytes: Option<usize>,
    write_buffer_bytes: usize,
    target_file_bytes: u64,
    compression: Compression,
    compaction: Compaction,
    pub(super) max_background_jobs: i32,
    pub(super) write_cache_bytes: usize,
    heap_timers: bool,
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
            target_file_bytes: DEFAULT_TARGET_FILE_BYTES,
            compression: Compression::Lz4,
            compaction: Compaction::Universal,
            max_background_jobs: 2,
            write_cache_bytes: DEFAULT_WRITE_CACHE_BYTES,
            heap_timers: false,
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

    /// The largest SST file a compaction writes before it starts the next one (RocksDB's
    /// `target_file_size_base`, for every level and for universal compaction's sorted runs);
    /// default [`DEFAULT_TARGET_FILE_BYTES`].
    ///
    /// Decision: smaller than RocksDB's 64 MiB because a compaction builds each output
    /// file's bloom filter from a hash of every key it holds (8 bytes a key, outside the
    /// managed memory until the file is done): the size of the files bounds that memory.
    /// With universal compaction and no bound, a full compaction writes one file of every
    /// key, so that memory grew with the number of keys (measured with `pending_timers`:
    /// 14 MiB of key hashes at two million keys, more at ten million).
    pub fn target_file_bytes(mut self, bytes: u64) -> Self {
        self.target_file_bytes = bytes.max(1 << 20);
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

    /// Keeps a keyed operator's timers in memory instead of in RocksDB (Flink's
    /// `state.backend.rocksdb.timer-service.factory: HEAP`); default `false`, timers in
    /// RocksDB, as Flink's default. The trade: in RocksDB, memory does not grow with the
    /// number of pending timers, and each new timer costs a few RocksDB operations (about
    /// half the throughput of the README's keyed-window job, which makes a timer per ten
    /// records); on the heap, timers cost a hash probe and every pending one is in memory.
    ///
    /// # Examples
    ///
    /// ```
    /// use typeinfo_state::RocksDbOptions;
    ///
    /// let options = RocksDbOptions::default().heap_timers(true);
    /// assert!(options.timers_on_heap());
    /// ```
    pub fn heap_timers(mut self, on_heap: bool) -> Self {
        self.heap_timers = on_heap;
        self
    }

    /// Whether keyed operators keep their timers in memory ([`heap_timers`](Self::heap_timers)).
    pub fn timers_on_heap(&self) -> bool {
        self.heap_timers
    }

    /// The block-based table options of every column family: the shared cache, with index
    /// and filter blocks in it.
    pub(super) fn table(memory: &RocksDbMemory) -> BlockBasedOptions {
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

    pub(super) fn column_family(&self, memory: &RocksDbMemory) -> Options {
        let mut opts = Options::default();
        opts.set_write_buffer_size(self.write_buffer_bytes);
        opts.set_target_file_size_base(self.target_file_bytes);
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
