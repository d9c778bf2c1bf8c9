//! The point accesses of map state, one RocksDB entry per user key (`[key group][key]
//! [namespace][user key]`), and `put_all` in bounded write batches; iteration is in
//! [`iter`](super::iter).

use rocksdb::WriteBatch;
use typeinfo::{DataInputView, TypeComparator, TypeSerializer};

use super::backend::RocksDbKeyedStateBackend;
use super::error::{missing_cf, rocks};
use crate::backend::StateId;
use crate::codec::MapCodec;
use crate::descriptor::{MapKey, StateKey, StateNamespace, StateValue};
use crate::error::Result;
use crate::ttl::{on_read, Visible};

/// Entries per write batch of `put_all`.
const WRITE_BATCH: usize = 4096;
/// Bytes per write batch of `put_all`, whichever of the two bounds comes first.
const WRITE_BATCH_BYTES: usize = 4 << 20;

impl<K: StateKey> RocksDbKeyedStateBackend<K> {
    /// `KeyedStateBackend::map_get` of this backend.
    pub(super) fn read_map_entry<N: StateNamespace, UK: MapKey, UV: StateValue>(
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

    /// `KeyedStateBackend::map_put` of this backend.
    pub(super) fn write_map_entry<N: StateNamespace, UK: MapKey, UV: StateValue>(
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

    /// `KeyedStateBackend::map_remove` of this backend.
    pub(super) fn remove_map_entry<N: StateNamespace, UK: MapKey, UV: StateValue>(
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

    /// `KeyedStateBackend::map_put_all` of this backend.
    pub(super) fn write_map_entries<N: StateNamespace, UK: MapKey, UV: StateValue>(
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
}
