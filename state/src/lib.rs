//! Keyed and operator state for typeinfo, on the heap and in RocksDB.
//!
//! - [`key_group`]: Flink's key groups with a stable hash of the key's bytes.
//! - [`CompositeKeyBuilder`]: `[key group][key][namespace][user key]` in one reused buffer.
//! - Descriptors and handles of value, list, map, reducing and aggregating state, under a
//!   current key and namespace, with [`StateTtlConfig`].
//! - [`KeyedStateBackend`], implemented by [`HeapKeyedStateBackend`] (live objects) and
//!   `RocksDbKeyedStateBackend` (serialized, in RocksDB).
//! - Savepoints that both backends write and read, restored at any parallelism and with
//!   migrated types (`FORMAT.md` of this crate).
//!
//! # Memory
//!
//! - RocksDB's memory is bounded per process, as Flink's managed memory: every RocksDB
//!   backend opened with the same [`RocksDbOptions::managed_memory_bytes`] (default
//!   [`default_managed_memory_bytes`], a quarter of the machine's memory from
//!   `/proc/meminfo` or the cgroup limit, 512 MiB where unknown) shares one
//!   [`RocksDbMemory`]: one LRU block cache (5/6 of the bound) holding data, index and
//!   filter blocks, and one write buffer manager (1/3 of the bound) that charges every
//!   memtable of every state to that cache; Flink's split, explained on [`RocksDbMemory`].
//!   The bound does not shrink with the number of subtasks or states, it is shared by them.
//! - Each RocksDB backend also keeps a write cache of recently used values of value,
//!   reducing and aggregating states ([`RocksDbOptions::write_cache_bytes`], default
//!   [`DEFAULT_WRITE_CACHE_BYTES`], 4 MiB), outside that bound: a state updated with every
//!   record reaches RocksDB once per flush of the cache instead of at every record.
//! - Map state is never materialized to be read: [`MapState::iter`], [`MapState::keys`],
//!   [`MapState::values`] and [`MapState::is_empty`] read entry by entry (RocksDB iterates
//!   under the `[key group][key][namespace]` prefix), [`MapState::put_all`] writes in
//!   batches of bounded size. [`MapState::entries`] still collects a vector, for small maps.

#![warn(missing_docs)]

mod backend;
mod codec;
mod composite_key;
mod descriptor;
mod error;
mod handles;
mod heap;
mod heap_map;
mod heap_user_map;
mod incremental;
pub mod key_group;
mod keyed_backend;
mod managed_memory;
mod map_iter;
mod meta;
mod operator;
mod options;
mod rocks;
pub mod savepoint;
mod ttl;

pub use backend::{KeyedStateBackend, StateId, StateKind, StateMeta};
pub use composite_key::{key_group_prefix_len, CompositeKeyBuilder};
pub use descriptor::*;
pub use error::{Error, Result};
pub use heap::HeapKeyedStateBackend;
pub use incremental::{
    native_to_canonical, read_native_meta, NativeCheckpoint, NativeFile, NATIVE_META,
};
pub use key_group::{
    default_max_parallelism, key_group_for_bytes, subtask_for_key_group, KeyGroupRange,
};
pub use keyed_backend::KeyedBackend;
pub use managed_memory::{default_managed_memory_bytes, RocksDbMemory, MIN_MANAGED_MEMORY_BYTES};
pub use map_iter::{MapIter, MapKeys, MapValues};
pub use operator::{
    BroadcastState, OperatorListState, OperatorStateBackend, OperatorStateFile, OperatorStateKind,
    ReadOnlyBroadcastState, Redistribution, StoredOperatorState,
};
pub use options::BackendOptions;
pub use rocks::backend::RocksDbKeyedStateBackend;
pub use rocks::options::{
    Compaction, Compression, RocksDbOptions, DEFAULT_TARGET_FILE_BYTES, DEFAULT_WRITE_CACHE_BYTES,
};
pub use rocks::sorted_set::{RocksDbSortedSet, POP_BATCH};
pub use savepoint::{KeyedSnapshot, RestoreReport};
pub use ttl::{Clock, ManualClock, StateTtlConfig, SystemClock, TtlUpdate, TtlVisibility};
