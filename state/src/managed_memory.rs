//! RocksDB's memory, bounded per process as Flink's managed memory bounds it.
//!
//! Without a bound, every RocksDB backend (one per keyed operator subtask) would hold a block
//! cache of its own and every state (a column family) memtables of its own, so memory would
//! grow with the number of subtasks and states. Instead, every backend opened with the same
//! setting ([`RocksDbOptions::managed_memory_bytes`](crate::RocksDbOptions::managed_memory_bytes),
//! default [`default_managed_memory_bytes`]) shares one [`RocksDbMemory`]: one LRU block
//! cache and one write buffer manager charged to that cache. Data blocks, index and filter
//! blocks (`cache_index_and_filter_blocks`, with high priority; the filters and indexes of
//! level 0 and the top level of partitioned ones pinned) and the memtables of every column
//! family of every backend are all counted in that one cache.
//!
//! The split of the bound `T` follows Flink (`RocksDBMemoryControllerUtils`) with its
//! default write buffer ratio `r = 0.5`:
//! - block cache capacity `(3 - r) / 3 * T` (5/6 of `T`);
//! - write buffer manager limit `2 * r / 3 * T` (1/3 of `T`), charged to the cache.
//!
//! The memtables are part of the cache's usage; they may run over the write buffer manager's
//! limit by up to half of it before a flush frees memory (the mutable memtable is flushed at
//! 7/8 of the limit, and the active one keeps growing meanwhile), which is outside the cache's
//! accounting: `cache + limit / 2 = T`. The cache is not strict (as Flink's: a strict cache
//! fails reads when pinned blocks fill it), so pinned blocks may briefly exceed it. What is
//! not counted: RocksDB's table readers' fixed overhead, iterators' current blocks and
//! background compaction buffers, a small overhead per open file and per running iterator,
//! and each backend's write cache in front of RocksDB (`RocksDbOptions::write_cache_bytes`,
//! 4 MiB by default), which is the backend's own memory, not RocksDB's.

use std::fmt;
use std::sync::{Arc, Mutex, Weak};

use rocksdb::{Cache, LruCacheOptions, WriteBufferManager};

/// The smallest bound a [`RocksDbMemory`] takes (smaller settings are raised to it).
pub const MIN_MANAGED_MEMORY_BYTES: usize = 1 << 20;

/// The part of the machine's memory RocksDB may use by default: a quarter.
const DEFAULT_FRACTION_DENOMINATOR: u64 = 4;

/// The least capacity of one shard of the block cache: 8 MiB.
///
/// An LRU cache evicts within a shard, so a shard holding more pinned entries (the write buffer
/// manager's 256 KiB reservations, pinned index and filter blocks) than its capacity runs over
/// it, and the whole cache with it. RocksDB's own choice (shards of 512 KiB, up to 64) let an
/// 8 MiB pool run over its cache by 7% when a few reservations hashed to one shard. Shards of
/// at least 8 MiB keep a small pool in one shard (its capacity is then what it says), and a
/// large pool still gets RocksDB's 64 shards (at 512 MiB and up) for concurrent readers.
const MIN_CACHE_SHARD_BYTES: usize = 8 << 20;

/// RocksDB's greatest number of shard bits for an LRU cache.
const MAX_CACHE_SHARD_BITS: u32 = 6;

/// The shard bits of a block cache of `capacity` bytes: shards of at least
/// [`MIN_CACHE_SHARD_BYTES`], at most 2^[`MAX_CACHE_SHARD_BITS`] of them.
fn shard_bits(capacity: usize) -> i32 {
    let shards = (capacity / MIN_CACHE_SHARD_BYTES).max(1);
    // `ilog2` of a positive usize is below 64; the cast cannot truncate.
    shards.ilog2().min(MAX_CACHE_SHARD_BITS) as i32
}

/// The default bound where the machine's memory cannot be read (not Linux): 512 MiB.
const FALLBACK_MANAGED_MEMORY_BYTES: usize = 512 << 20;

/// The default bound of RocksDB's memory in this process: a quarter of the machine's memory
/// (`MemTotal` of `/proc/meminfo`, or the cgroup v2 limit `/sys/fs/cgroup/memory.max` when it
/// is lower, as in a container), or 512 MiB where neither can be read.
///
/// # Examples
///
/// ```
/// let bytes = typeinfo_state::default_managed_memory_bytes();
/// assert!(bytes >= typeinfo_state::MIN_MANAGED_MEMORY_BYTES);
/// ```
pub fn default_managed_memory_bytes() -> usize {
    match machine_memory_bytes() {
        Some(total) => usize::try_from(total / DEFAULT_FRACTION_DENOMINATOR)
            .unwrap_or(usize::MAX)
            .max(MIN_MANAGED_MEMORY_BYTES),
        None => FALLBACK_MANAGED_MEMORY_BYTES,
    }
}

/// The memory of this machine (or of this container, when lower), if it can be read.
fn machine_memory_bytes() -> Option<u64> {
    let total = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|text| mem_total_bytes(&text));
    let cgroup = std::fs::read_to_string("/sys/fs/cgroup/memory.max")
        .ok()
        .and_then(|text| text.trim().parse::<u64>().ok());
    match (total, cgroup) {
        (Some(t), Some(c)) => Some(t.min(c)),
        (t, c) => t.or(c),
    }
}

/// `MemTotal` of `/proc/meminfo` in bytes (the file says kB, meaning KiB).
fn mem_total_bytes(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let mut words = line["MemTotal:".len()..].split_whitespace();
    let value: u64 = words.next()?.parse().ok()?;
    match words.next() {
        Some("kB") => value.checked_mul(1024),
        None => Some(value),
        Some(_) => None,
    }
}

struct Shared {
    total: usize,
    cache_capacity: usize,
    write_buffer_limit: usize,
    cache: Cache,
    write_buffers: WriteBufferManager,
}

/// The pools of this process, one per distinct bound, alive while a backend uses them.
static POOLS: Mutex<Vec<(usize, Weak<Shared>)>> = Mutex::new(Vec::new());

/// One bound on RocksDB's memory: a block cache and a write buffer manager charged to it,
/// shared by every backend and column family that uses it (see the module docs for the
/// split).
///
/// Backends get theirs from [`RocksDbOptions`](crate::RocksDbOptions): every backend of the
/// process opened with the same setting shares one, as Flink's slots share managed memory.
///
/// # Examples
///
/// ```
/// use typeinfo_state::RocksDbMemory;
///
/// let a = RocksDbMemory::shared(96 << 20);
/// let b = RocksDbMemory::shared(96 << 20);
/// assert!(a.shares_with(&b));
/// assert_eq!(a.block_cache_bytes(), 80 << 20);
/// assert_eq!(a.write_buffer_manager_bytes(), 32 << 20);
/// ```
#[derive(Clone)]
pub struct RocksDbMemory {
    shared: Arc<Shared>,
}

impl RocksDbMemory {
    /// The process's pool of `total_bytes` (at least [`MIN_MANAGED_MEMORY_BYTES`]): the one
    /// that other backends of this process already use with this bound, or a new one.
    pub fn shared(total_bytes: usize) -> Self {
        let total = total_bytes.max(MIN_MANAGED_MEMORY_BYTES);
        let mut pools = POOLS.lock().unwrap_or_else(|e| e.into_inner());
        pools.retain(|(_, pool)| pool.strong_count() > 0);
        if let Some(shared) = pools
            .iter()
            .find(|(bytes, _)| *bytes == total)
            .and_then(|(_, pool)| pool.upgrade())
        {
            return Self { shared };
        }
        let memory = Self::new(total);
        pools.push((total, Arc::downgrade(&memory.shared)));
        memory
    }

    /// A pool of `total_bytes` (at least [`MIN_MANAGED_MEMORY_BYTES`]) of its own, shared only
    /// by the backends it is given to.
    pub fn new(total_bytes: usize) -> Self {
        let total = total_bytes.max(MIN_MANAGED_MEMORY_BYTES);
        // Flink's split with write buffer ratio 1/2: cache (3 - r)/3 T, write buffers 2r/3 T.
        let cache_capacity = total / 6 * 5 + total % 6 * 5 / 6;
        let write_buffer_limit = total / 3;
        let mut cache_options = LruCacheOptions::default();
        cache_options.set_capacity(cache_capacity);
        cache_options.set_num_shard_bits(shard_bits(cache_capacity));
        let cache = Cache::new_lru_cache_opts(&cache_options);
        // Writers are not stalled: a flush is triggered instead, as in Flink.
        let write_buffers = WriteBufferManager::new_write_buffer_manager_with_cache(
            write_buffer_limit,
            false,
            cache.clone(),
        );
        Self {
            shared: Arc::new(Shared {
                total,
                cache_capacity,
                write_buffer_limit,
                cache,
                write_buffers,
            }),
        }
    }

    /// The bound: block cache and write buffers together.
    pub fn total_bytes(&self) -> usize {
        self.shared.total
    }

    /// The block cache's capacity (5/6 of the bound).
    pub fn block_cache_bytes(&self) -> usize {
        self.shared.cache_capacity
    }

    /// The write buffer manager's limit (1/3 of the bound), as RocksDB reports it.
    pub fn write_buffer_manager_bytes(&self) -> usize {
        self.shared.write_buffers.get_buffer_size()
    }

    /// The bytes the block cache holds now: blocks, index and filter blocks, and the
    /// reservations of the memtables.
    pub fn block_cache_usage(&self) -> usize {
        self.shared.cache.get_usage()
    }

    /// The bytes of the block cache that are pinned now (in use, or pinned index and filter
    /// blocks).
    pub fn block_cache_pinned_usage(&self) -> usize {
        self.shared.cache.get_pinned_usage()
    }

    /// The bytes the memtables of every backend of this pool hold now.
    pub fn write_buffer_usage(&self) -> usize {
        self.shared.write_buffers.get_usage()
    }

    /// Whether `other` is the same pool (the same cache and write buffer manager).
    pub fn shares_with(&self, other: &RocksDbMemory) -> bool {
        Arc::ptr_eq(&self.shared, &other.shared)
    }

    pub(crate) fn cache(&self) -> &Cache {
        &self.shared.cache
    }

    pub(crate) fn write_buffer_manager(&self) -> &WriteBufferManager {
        &self.shared.write_buffers
    }
}

impl fmt::Debug for RocksDbMemory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RocksDbMemory")
            .field("total_bytes", &self.shared.total)
            .field("block_cache_bytes", &self.shared.cache_capacity)
            .field(
                "write_buffer_manager_bytes",
                &self.shared.write_buffer_limit,
            )
            .field("block_cache_usage", &self.block_cache_usage())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mem_total_is_read_in_kib() {
        let meminfo = "MemTotal:       24731648 kB\nMemFree:        16929792 kB\n";
        assert_eq!(mem_total_bytes(meminfo), Some(24_731_648 * 1024));
        assert_eq!(mem_total_bytes("MemFree: 1 kB\n"), None);
        assert_eq!(mem_total_bytes("MemTotal: many kB\n"), None);
        assert_eq!(mem_total_bytes("MemTotal: 1 MB\n"), None);
    }

    #[test]
    fn the_default_is_a_quarter_of_the_machine() {
        let bytes = default_managed_memory_bytes();
        match machine_memory_bytes() {
            Some(total) => assert_eq!(
                bytes as u64,
                (total / 4).max(MIN_MANAGED_MEMORY_BYTES as u64)
            ),
            None => assert_eq!(bytes, FALLBACK_MANAGED_MEMORY_BYTES),
        }
    }

    #[test]
    fn cache_shards_hold_at_least_eight_mib() {
        assert_eq!(shard_bits(0), 0);
        assert_eq!(shard_bits(7 << 20), 0);
        assert_eq!(shard_bits(16 << 20), 1);
        assert_eq!(shard_bits(100 << 20), 3);
        assert_eq!(shard_bits(512 << 20), 6);
        assert_eq!(shard_bits(5 << 30), 6);
    }

    #[test]
    fn pools_split_as_flink_and_are_shared_by_bound() {
        let a = RocksDbMemory::shared(60 << 20);
        assert_eq!(a.block_cache_bytes(), 50 << 20);
        assert_eq!(a.write_buffer_manager_bytes(), 20 << 20);
        assert!(a.shares_with(&RocksDbMemory::shared(60 << 20)));
        assert!(!a.shares_with(&RocksDbMemory::shared(61 << 20)));
        assert!(!a.shares_with(&RocksDbMemory::new(60 << 20)));
        assert_eq!(
            RocksDbMemory::shared(0).total_bytes(),
            MIN_MANAGED_MEMORY_BYTES
        );
    }
}
