//! The RocksDB backend's write cache: the latest serialized value of recently used entries of
//! value, reducing and aggregating states, in front of RocksDB.
//!
//! Every keyed-state update on RocksDB is a read and a write, each a search of the memtable's
//! skiplist and a trip through RocksDB's read and write paths (a profile of the keyed-window
//! job put two thirds of its time there). Jobs touch the same entries again and again (a
//! window's aggregate once per record of its key and window), so the backend keeps the
//! serialized value of each entry it reads or writes here, and RocksDB sees an entry's last
//! value once per flush instead of every change (Kafka Streams' record cache does the same in
//! front of its RocksDB stores).
//!
//! The backend's side (which states go through the cache, making room before an access, and
//! the flush that writes the changed entries in one batch) is [`super::cached`].
//!
//! What holds:
//! - **Reads see every write**: a value, reducing or aggregating state without TTL reads the
//!   cache first; a cleared entry is cached as absent until flushed.
//! - **RocksDB is whole before anything else reads it**: every operation that reads or copies
//!   the database other than these point accesses (iterating keys, snapshots, native
//!   checkpoints, restores, flushes, compactions, properties) first writes every changed entry
//!   in one write batch, so checkpoints and savepoints hold exactly what the job wrote.
//! - **Bounded**: at most [`RocksDbOptions::write_cache_bytes`](crate::RocksDbOptions::write_cache_bytes)
//!   bytes (keys and values as stored, plus [`ENTRY_OVERHEAD`] per entry) per backend, and
//!   one entry more: an access that finds more cached first writes the changed entries in
//!   one batch and empties the cache, before it changes anything (so an error means the
//!   access changed nothing, and a cache whose writes fail does not grow).
//!   This memory is the backend's own, outside the managed memory of RocksDB's block cache and
//!   write buffers.
//! - States with TTL bypass the cache (a read may expire or refresh an entry, which RocksDB's
//!   compaction filter also decides); list and map states are not cached.

use std::collections::HashMap;

/// foldhash, seeded per process (as the heap backend's tables).
type Hasher = foldhash::fast::RandomState;

/// The bytes an entry is charged beyond its key and value: the table slot, the key's and the
/// value's allocations.
pub(crate) const ENTRY_OVERHEAD: usize = 64;

/// One cached entry: its value as stored in RocksDB (`None`: no entry), and whether RocksDB
/// still holds an older one.
struct Entry {
    value: Option<Vec<u8>>,
    dirty: bool,
}

impl Entry {
    fn charge(&self, key: &[u8]) -> usize {
        key.len() + self.value.as_ref().map_or(0, Vec::len) + ENTRY_OVERHEAD
    }
}

/// Recently used entries of each state (indexed by the state's registration order), by their
/// full RocksDB key.
pub(crate) struct WriteCache {
    states: Vec<HashMap<Box<[u8]>, Entry, Hasher>>,
    bytes: usize,
    capacity: usize,
}

impl WriteCache {
    /// An empty cache of `capacity` bytes (0: no caching).
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            states: Vec::new(),
            bytes: 0,
            capacity,
        }
    }

    /// Whether entries are cached at all.
    #[inline]
    pub(crate) fn enabled(&self) -> bool {
        self.capacity > 0
    }

    /// Whether nothing is cached.
    pub(crate) fn is_empty(&self) -> bool {
        self.bytes == 0
    }

    /// Whether more than the capacity is cached (time to flush).
    #[inline]
    pub(crate) fn is_full(&self) -> bool {
        self.bytes > self.capacity
    }

    /// The cached value of `key` in `state`: `Some(None)` when the entry is known not to
    /// exist, `None` when the cache does not know.
    #[inline]
    pub(crate) fn get(&self, state: usize, key: &[u8]) -> Option<Option<&[u8]>> {
        self.states
            .get(state)?
            .get(key)
            .map(|entry| entry.value.as_deref())
    }

    /// Caches `value` for `key` in `state`; `dirty` when RocksDB does not hold it yet. A clean
    /// value never replaces a dirty one (it would be the older one).
    #[inline]
    pub(crate) fn put(&mut self, state: usize, key: &[u8], value: Option<&[u8]>, dirty: bool) {
        if self.states.len() <= state {
            self.states.resize_with(state + 1, HashMap::default);
        }
        let map = &mut self.states[state];
        if let Some(entry) = map.get_mut(key) {
            if entry.dirty && !dirty {
                return;
            }
            self.bytes -= entry.charge(key);
            match (value, &mut entry.value) {
                // Reuse the allocation: an aggregate is rewritten with every record.
                (Some(new), Some(old)) => {
                    old.clear();
                    old.extend_from_slice(new);
                }
                (new, old) => *old = new.map(<[u8]>::to_vec),
            }
            entry.dirty |= dirty;
            self.bytes += entry.charge(key);
            return;
        }
        let entry = Entry {
            value: value.map(<[u8]>::to_vec),
            dirty,
        };
        self.bytes += entry.charge(key);
        map.insert(key.into(), entry);
    }

    /// Every changed entry: `(state, key, value)`, `None` for a deleted entry.
    pub(crate) fn dirty(&self) -> impl Iterator<Item = (usize, &[u8], Option<&[u8]>)> {
        self.states.iter().enumerate().flat_map(|(state, map)| {
            map.iter()
                .filter(|(_, entry)| entry.dirty)
                .map(move |(key, entry)| (state, &key[..], entry.value.as_deref()))
        })
    }

    /// Forgets everything (after the changed entries were written, or when every state is
    /// cleared).
    pub(crate) fn clear(&mut self) {
        for map in &mut self.states {
            map.clear();
        }
        self.bytes = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_see_writes_and_deletes_and_clean_values_do_not_replace_dirty_ones() {
        let mut cache = WriteCache::new(1 << 20);
        assert_eq!(cache.get(0, b"k"), None);
        cache.put(1, b"k", Some(b"old"), false);
        assert_eq!(cache.get(1, b"k"), Some(Some(&b"old"[..])));
        assert_eq!(cache.get(0, b"k"), None, "states are apart");
        cache.put(1, b"k", Some(b"new!"), true);
        cache.put(1, b"k", Some(b"stale"), false);
        assert_eq!(cache.get(1, b"k"), Some(Some(&b"new!"[..])));
        cache.put(1, b"gone", None, true);
        assert_eq!(cache.get(1, b"gone"), Some(None));
        cache.put(0, b"clean", None, false);
        let mut dirty: Vec<_> = cache.dirty().collect();
        dirty.sort();
        assert_eq!(
            dirty,
            vec![(1, &b"gone"[..], None), (1, &b"k"[..], Some(&b"new!"[..]))]
        );
        cache.clear();
        assert!(cache.is_empty());
        assert_eq!(cache.get(1, b"k"), None);
    }

    #[test]
    fn the_charge_follows_the_entries_and_the_capacity_says_when_to_flush() {
        let mut cache = WriteCache::new(2 * (ENTRY_OVERHEAD + 10));
        cache.put(0, b"aaaaa", Some(b"12345"), true);
        assert_eq!(cache.bytes, ENTRY_OVERHEAD + 10);
        cache.put(0, b"aaaaa", Some(b"1"), true);
        assert_eq!(cache.bytes, ENTRY_OVERHEAD + 6);
        cache.put(0, b"bbbbb", Some(b"12345"), true);
        assert!(!cache.is_full());
        cache.put(0, b"ccccc", None, true);
        assert!(cache.is_full());
        assert!(!WriteCache::new(0).enabled());
    }
}
