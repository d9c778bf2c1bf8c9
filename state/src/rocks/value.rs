//! The accesses of value state, which reducing and aggregating states share: reading,
//! updating and writing one entry, through the write cache when the state has no TTL.

use typeinfo::{DataInputView, TypeSerializer};

use super::backend::RocksDbKeyedStateBackend;
use super::error::{missing_cf, rocks};
use crate::backend::StateId;
use crate::codec::ValueCodec;
use crate::descriptor::{StateKey, StateNamespace, StateValue};
use crate::error::Result;
use crate::ttl::{on_read, Visible};

impl<K: StateKey> RocksDbKeyedStateBackend<K> {
    /// `KeyedStateBackend::value_get` of this backend.
    pub(super) fn read_value<N: StateNamespace, V: StateValue>(
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

    /// `KeyedStateBackend::value_update` of this backend.
    pub(super) fn update_value<N: StateNamespace, V: StateValue>(
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

    /// `KeyedStateBackend::value_put` of this backend.
    pub(super) fn write_value<N: StateNamespace, V: StateValue>(
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
}
