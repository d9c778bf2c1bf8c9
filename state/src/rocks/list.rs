//! The accesses of list state: elements appended with RocksDB's merge operator (see
//! [`concat_merge`](super::column_family::concat_merge)), read and rewritten as one value.

use typeinfo::{DataInputView, DataOutputView, TypeSerializer};

use super::backend::RocksDbKeyedStateBackend;
use super::error::{missing_cf, rocks};
use crate::backend::StateId;
use crate::codec::ValueCodec;
use crate::descriptor::{StateKey, StateNamespace, StateValue};
use crate::error::Result;
use crate::ttl::{on_read, Visible};

impl<K: StateKey> RocksDbKeyedStateBackend<K> {
    /// `KeyedStateBackend::list_get` of this backend.
    pub(super) fn read_list<N: StateNamespace, V: StateValue>(
        &mut self,
        state: StateId,
        namespace: &N,
    ) -> Result<Vec<V>> {
        let now = self.options.clock.now_ms();
        let s = self.typed::<ValueCodec<N, V>>(state)?;
        let (ns_ser, v_ser, ttl, cf_name) = (
            s.codec.namespace.clone(),
            s.codec.value.clone(),
            s.ttl.clone(),
            s.cf.clone(),
        );
        self.key_and_namespace(&ns_ser, namespace)?;
        let cf = self
            .db
            .cf_handle(&cf_name)
            .ok_or_else(|| missing_cf(&cf_name))?;
        let Some(bytes) = self
            .db
            .get_pinned_cf(cf, self.builder.key_and_namespace())
            .map_err(rocks)?
        else {
            return Ok(Vec::new());
        };
        let mut input = DataInputView::new(&bytes);
        let mut out = Vec::new();
        let mut rewritten = DataOutputView::new();
        let mut changed = false;
        while !input.is_empty() {
            // Each element of a list is its own value (its own zero-sized budget): `add`
            // writes them one at a time.
            input.reset_zero_sized_budget();
            let mut ts = if ttl.is_some() { input.read_i64()? } else { 0 };
            let before = ts;
            let start = input.position();
            let value = v_ser.deserialize(&mut input)?;
            if on_read(&ttl, &mut ts, now) == Visible::Expired {
                changed = true;
                continue;
            }
            changed |= ts != before;
            if ttl.is_some() {
                rewritten.write_i64(ts);
            }
            rewritten.write_bytes(input.consumed_since(start));
            out.push(value);
        }
        drop(bytes);
        if changed {
            if rewritten.is_empty() {
                self.db
                    .delete_cf_opt(cf, self.builder.key_and_namespace(), &self.write)
                    .map_err(rocks)?;
            } else {
                self.db
                    .put_cf_opt(
                        cf,
                        self.builder.key_and_namespace(),
                        rewritten.as_slice(),
                        &self.write,
                    )
                    .map_err(rocks)?;
            }
        }
        Ok(out)
    }

    /// `KeyedStateBackend::list_add` of this backend.
    pub(super) fn append_to_list<N: StateNamespace, V: StateValue>(
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
        let cf = self
            .db
            .cf_handle(&cf_name)
            .ok_or_else(|| missing_cf(&cf_name))?;
        self.db
            .merge_cf_opt(
                cf,
                self.builder.key_and_namespace(),
                self.value_buf.as_slice(),
                &self.write,
            )
            .map_err(rocks)
    }

    /// `KeyedStateBackend::list_add_all` of this backend.
    pub(super) fn append_all_to_list<N: StateNamespace, V: StateValue>(
        &mut self,
        state: StateId,
        namespace: &N,
        values: Vec<V>,
    ) -> Result<()> {
        if values.is_empty() {
            return Ok(());
        }
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
        for v in &values {
            if ttl {
                self.value_buf.write_i64(now);
            }
            // Each element is its own value, as `add` writes it.
            self.value_buf.reset_zero_sized_budget();
            v_ser.serialize(v, &mut self.value_buf)?;
        }
        let cf = self
            .db
            .cf_handle(&cf_name)
            .ok_or_else(|| missing_cf(&cf_name))?;
        // One merge operand: the list's merge operator concatenates self-delimiting elements.
        self.db
            .merge_cf_opt(
                cf,
                self.builder.key_and_namespace(),
                self.value_buf.as_slice(),
                &self.write,
            )
            .map_err(rocks)
    }

    /// `KeyedStateBackend::list_update` of this backend.
    pub(super) fn replace_list<N: StateNamespace, V: StateValue>(
        &mut self,
        state: StateId,
        namespace: &N,
        values: Vec<V>,
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
        let cf = self
            .db
            .cf_handle(&cf_name)
            .ok_or_else(|| missing_cf(&cf_name))?;
        if values.is_empty() {
            return self
                .db
                .delete_cf_opt(cf, self.builder.key_and_namespace(), &self.write)
                .map_err(rocks);
        }
        self.value_buf.clear();
        for v in &values {
            if ttl {
                self.value_buf.write_i64(now);
            }
            // Each element is its own value, as `add` writes it.
            self.value_buf.reset_zero_sized_budget();
            v_ser.serialize(v, &mut self.value_buf)?;
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
}
