//! Prefix iteration: a map state's entries under `[key group][key][namespace]`, read one by
//! one ([`RocksMapIter`]), and the keys that hold a namespace of a state.

use rocksdb::{ReadOptions, WriteOptions, DB};
use typeinfo::{DataInputView, TypeSerializer};

use super::backend::RocksDbKeyedStateBackend;
use super::error::{missing_cf, rocks, unknown};
use super::registered_state::serialize_namespace;
use crate::backend::StateId;
use crate::codec::MapCodec;
use crate::descriptor::{MapKey, StateKey, StateNamespace, StateValue};
use crate::error::Result;
use crate::map_iter::MapIter;
use crate::ttl::{on_read, StateTtlConfig, Visible};

/// The successor of a prefix: the smallest key greater than every key that starts with it.
pub(super) fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last != 0xff {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
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

impl<K: StateKey> RocksDbKeyedStateBackend<K> {
    /// `KeyedStateBackend::map_iter` of this backend.
    pub(super) fn iter_map_entries<'a, N: StateNamespace, UK: MapKey, UV: StateValue>(
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

    /// `KeyedStateBackend::keys` of this backend.
    pub(super) fn keys_in_namespace<N: StateNamespace>(
        &mut self,
        state: StateId,
        namespace: &N,
    ) -> Result<Vec<K>> {
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

    /// The keys that hold `namespace` of `state`, at most `max` per call, in the database's
    /// order (key group, then key bytes): `cursor` (`None` to start) says where the previous
    /// call stopped and is moved on; an empty result ends the scan. Unlike
    /// [`keys`](crate::KeyedStateBackend::keys), memory stays bounded by `max` however many
    /// keys there are (the RocksDB timers rebuild their index this way after a restore).
    ///
    /// # Errors
    ///
    /// An unknown state; a stored key that does not deserialize; RocksDB fails.
    pub fn keys_page<N: StateNamespace>(
        &mut self,
        state: StateId,
        namespace: &N,
        cursor: &mut Option<Vec<u8>>,
        max: usize,
    ) -> Result<Vec<K>> {
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
        match cursor.as_deref() {
            Some(from) => it.seek(from),
            None => it.seek_to_first(),
        }
        let mut out: Vec<K> = Vec::new();
        // The bytes `[key group][key]` of the key under the iterator, and whether it is out.
        let mut current: Vec<u8> = Vec::new();
        let mut taken = false;
        loop {
            let Some(k) = it.key() else {
                // The end: the next call seeks past the last key and finds nothing.
                *cursor = prefix_end(&current).or_else(|| Some(vec![0xff; current.len() + 1]));
                break;
            };
            let mut input = DataInputView::new(&k[prefix_len.min(k.len())..]);
            let key = self.key_serializer.deserialize(&mut input)?;
            let key_end = k.len() - input.rest().len();
            if k[..key_end] != current[..] {
                if out.len() == max {
                    *cursor = Some(k[..key_end].to_vec());
                    break;
                }
                current.clear();
                current.extend_from_slice(&k[..key_end]);
                taken = false;
            }
            if !taken && input.rest().starts_with(&ns_bytes) {
                out.push(key);
                taken = true;
            }
            it.next();
        }
        it.status().map_err(rocks)?;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)] // a test panics on what it does not expect

    use super::*;
    use crate::backend::KeyedStateBackend;
    use crate::descriptor::MapStateDescriptor;
    use crate::error::Error;
    use crate::key_group::KeyGroupRange;
    use crate::options::BackendOptions;
    use crate::rocks::options::RocksDbOptions;

    /// Pages of keys cover every key holding the namespace once, in bounded pieces, and
    /// skip keys that hold only other namespaces.
    #[test]
    fn keys_come_in_pages() -> Result<()> {
        use crate::descriptor::ValueStateDescriptor;
        let dir = tempfile::tempdir().unwrap();
        let options = BackendOptions::new(128, KeyGroupRange::all(128))?;
        let mut b = RocksDbKeyedStateBackend::<u64>::open(
            &dir.path().join("db"),
            options,
            RocksDbOptions::default(),
        )?;
        let v = b.value_state::<u32, u8>(&ValueStateDescriptor::new("v"))?;
        for key in 0..1000u64 {
            b.set_current_key(&key)?;
            v.update(&mut b, &7, 1)?;
            v.update(&mut b, &(key as u32 % 3), 1)?;
        }
        let mut cursor = None;
        let mut seen = Vec::new();
        loop {
            let page = b.keys_page(v.id(), &1u32, &mut cursor, 64)?;
            assert!(page.len() <= 64);
            if page.is_empty() {
                break;
            }
            seen.extend(page);
        }
        seen.sort_unstable();
        let expected: Vec<u64> = (0..1000).filter(|k| k % 3 == 1).collect();
        assert_eq!(seen, expected);
        let mut cursor = None;
        assert_eq!(b.keys_page(v.id(), &7u32, &mut cursor, 2000)?.len(), 1000);
        assert!(b.keys_page(v.id(), &7u32, &mut cursor, 2000)?.is_empty());
        Ok(())
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
