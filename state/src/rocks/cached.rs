//! The backend's side of the write cache ([`super::write_cache`]): which states go through it,
//! making room before an access, and the flush that writes the changed entries in one batch.
//! Apart from the cache itself so that the backend (which owns a cache) and the cache do not
//! import each other.

use rocksdb::WriteBatch;

use super::backend::RocksDbKeyedStateBackend;
use super::error::{rocks, unknown};
use crate::backend::{StateId, StateKind};
use crate::descriptor::StateKey;
use crate::error::Result;

impl<K: StateKey> RocksDbKeyedStateBackend<K> {
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
    pub(super) fn cached(&mut self, index: usize) -> bool {
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
    pub(super) fn make_room_in_write_cache(&mut self) -> Result<()> {
        if self.cache.get_mut().is_full() {
            self.flush_write_cache()?;
        }
        Ok(())
    }
}
