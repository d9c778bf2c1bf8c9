//! The RocksDB backend: one database per operator subtask, one column family per state,
//! composite keys, a merge operator for list appends, prefix iteration for map state,
//! batched writes, and the options a user tunes.
//!
//! The methods of [`RocksDbKeyedStateBackend`](backend::RocksDbKeyedStateBackend) are split
//! by concept, one `impl` block per file:
//! - [`backend`]: the backend itself: its directory, opening, flushes, native checkpoints,
//!   compaction.
//! - [`keyed`]: its [`KeyedStateBackend`](crate::backend::KeyedStateBackend) implementation,
//!   which calls the files below for each access.
//! - [`column_family`]: registering a state as a column family, list state's merge operator,
//!   TTL's compaction filter.
//! - [`value`] (value, reducing and aggregating states), [`list`], [`map`]: the accesses of
//!   each state kind.
//! - [`iter`]: prefix iteration (map entries, the keys of a namespace).
//! - [`snapshot`]: savepoints written and restored.
//! - [`cached`]: the write cache's side of the backend: which states go through it, flushes.
//! - [`sorted_set`]: ordered sets of bytes in a database of their own beside the backend's
//!   (the time index of timers).
//!
//! [`write_cache`] is the cache itself (it holds no methods of the backend).
//!
//! The other files hold no methods of the backend: [`options`] (what a user tunes),
//! [`registered_state`] (one registered state without its value types), [`error`].
//! Native (incremental) checkpoints are [`crate::incremental`]'s.

pub(crate) mod backend;
mod cached;
pub(crate) mod column_family;
pub(crate) mod error;
mod iter;
mod keyed;
mod list;
mod map;
pub(crate) mod options;
mod registered_state;
mod snapshot;
pub(crate) mod sorted_set;
mod value;
mod write_cache;
