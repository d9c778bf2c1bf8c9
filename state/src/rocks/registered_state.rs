//! One registered state in RocksDB without its value types ([`RocksState`], implemented by
//! [`Rocks`] for value-like and map states): its column family and codec, and how its
//! entries are written to savepoints and ingested from them.

use std::any::Any;
use std::marker::PhantomData;
use std::sync::Arc;

use rocksdb::{WriteBatch, DB};
use typeinfo::{DataInputView, DataOutputView, TypeComparator, TypeSerializer};

use super::error::{missing_cf, wrong_types};
use crate::backend::StateKind;
use crate::codec::{ErasedCodec, MapCodec, ValueCodec};
use crate::composite_key::CompositeKeyBuilder;
use crate::descriptor::{MapKey, StateKey, StateNamespace, StateValue};
use crate::error::Result;
use crate::ttl::{expired_bytes_for_snapshot, StateTtlConfig};

/// One registered state in RocksDB, without its value types.
pub(crate) trait RocksState<K: StateKey>: Send {
    fn codec(&self) -> &dyn ErasedCodec;
    fn as_any(&self) -> &dyn Any;
    fn cf(&self) -> &str;
    /// Moves the state to another column family (a restore that opened stored files).
    fn set_cf(&mut self, cf: Arc<str>);
    /// Today's entry `[namespace][value part]` as a RocksDB key suffix and value.
    fn ingest(
        &self,
        builder: &mut CompositeKeyBuilder,
        key_group: u16,
        key: &[u8],
        entry: &[u8],
        batch: &mut WriteBatch,
        db: &DB,
    ) -> Result<()>;
    /// Writes the entries of one RocksDB key-value pair in the savepoint layout.
    fn write_entry(
        &self,
        prefix_len: usize,
        key_serializer: &dyn Skip,
        key: &[u8],
        value: &[u8],
        out: &mut DataOutputView,
        now: i64,
    ) -> Result<u64>;
}

/// Moves past one serialized value (the key serializer, without its type).
pub(crate) trait Skip {
    fn skip_value(&self, input: &mut DataInputView<'_>) -> typeinfo::Result<()>;
}

impl<T, S: TypeSerializer<T>> Skip for PhantomSkip<T, S> {
    fn skip_value(&self, input: &mut DataInputView<'_>) -> typeinfo::Result<()> {
        self.0.skip(input)
    }
}

pub(super) struct PhantomSkip<T, S>(pub(super) S, pub(super) PhantomData<fn() -> T>);

pub(super) struct Rocks<C> {
    /// The column family's name (shared, so that operations clone it without allocating).
    pub(super) cf: Arc<str>,
    pub(super) codec: C,
    pub(super) ttl: Option<StateTtlConfig>,
}

/// Where the namespace ends in today's entry `[namespace][value part]`.
fn namespace_end<N, S: TypeSerializer<N>>(namespace: &S, entry: &[u8]) -> Result<usize> {
    let mut input = DataInputView::new(entry);
    namespace.skip(&mut input)?;
    Ok(input.position())
}

/// The length of `[key][namespace]` at the start of `rest`.
fn key_ns_len(key: &dyn Skip, namespace: &dyn Skip, rest: &[u8]) -> Result<usize> {
    let mut input = DataInputView::new(rest);
    key.skip_value(&mut input)?;
    namespace.skip_value(&mut input)?;
    Ok(input.position())
}

impl<K: StateKey, N: StateNamespace, V: StateValue> RocksState<K> for Rocks<ValueCodec<N, V>> {
    fn codec(&self) -> &dyn ErasedCodec {
        &self.codec
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn cf(&self) -> &str {
        &self.cf
    }
    fn set_cf(&mut self, cf: Arc<str>) {
        self.cf = cf;
    }
    fn ingest(
        &self,
        builder: &mut CompositeKeyBuilder,
        key_group: u16,
        key: &[u8],
        entry: &[u8],
        batch: &mut WriteBatch,
        db: &DB,
    ) -> Result<()> {
        let cf = db.cf_handle(&self.cf).ok_or_else(|| missing_cf(&self.cf))?;
        let ns_end = namespace_end(&self.codec.namespace, entry)?;
        builder.set_key_bytes(key_group, key);
        let composite = builder.set_namespace_bytes(&entry[..ns_end]);
        let value = &entry[ns_end..];
        if self.codec.meta.kind == StateKind::List {
            batch.put_cf(
                cf,
                composite,
                DataInputView::new(value).read_len_prefixed()?,
            );
        } else {
            batch.put_cf(cf, composite, value);
        }
        Ok(())
    }
    fn write_entry(
        &self,
        prefix_len: usize,
        _key: &dyn Skip,
        composite: &[u8],
        value: &[u8],
        out: &mut DataOutputView,
        now: i64,
    ) -> Result<u64> {
        if self.codec.meta.kind == StateKind::List {
            let kept = live_elements(&self.ttl, &self.codec.value, value, now)?;
            if kept.is_empty() {
                return Ok(0);
            }
            out.write_bytes(&composite[prefix_len..]);
            out.write_len_prefixed(&kept);
            return Ok(1);
        }
        if expired_bytes_for_snapshot(&self.ttl, value, now) {
            return Ok(0);
        }
        out.write_bytes(&composite[prefix_len..]);
        out.write_bytes(value);
        Ok(1)
    }
}

/// The elements of a list value that have not expired (all of them without TTL).
fn live_elements<V, S: TypeSerializer<V>>(
    ttl: &Option<StateTtlConfig>,
    serializer: &S,
    value: &[u8],
    now: i64,
) -> Result<Vec<u8>> {
    let Some(t) = ttl.as_ref().filter(|t| t.cleans_up_in_full_snapshot()) else {
        return Ok(value.to_vec());
    };
    let mut input = DataInputView::new(value);
    let mut kept = Vec::with_capacity(value.len());
    while !input.is_empty() {
        let start = input.position();
        let ts = input.read_i64()?;
        serializer.skip(&mut input)?;
        if !t.is_expired(ts, now) {
            kept.extend_from_slice(input.consumed_since(start));
        }
    }
    Ok(kept)
}

impl<K: StateKey, N: StateNamespace, UK: MapKey, UV: StateValue> RocksState<K>
    for Rocks<MapCodec<N, UK, UV>>
{
    fn codec(&self) -> &dyn ErasedCodec {
        &self.codec
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn cf(&self) -> &str {
        &self.cf
    }
    fn set_cf(&mut self, cf: Arc<str>) {
        self.cf = cf;
    }
    fn ingest(
        &self,
        builder: &mut CompositeKeyBuilder,
        key_group: u16,
        key: &[u8],
        entry: &[u8],
        batch: &mut WriteBatch,
        db: &DB,
    ) -> Result<()> {
        let cf = db.cf_handle(&self.cf).ok_or_else(|| missing_cf(&self.cf))?;
        let ns_end = namespace_end(&self.codec.namespace, entry)?;
        let user_key = self
            .codec
            .user_key
            .deserialize(&mut DataInputView::new(&entry[ns_end..]))?;
        builder.set_key_bytes(key_group, key);
        builder.set_namespace_bytes(&entry[..ns_end]);
        let order = &self.codec.user_key_order;
        let composite =
            builder.with_user_key_from(|buf| order.write_normalized_key(&user_key, buf));
        batch.put_cf(cf, composite, &entry[ns_end..]);
        Ok(())
    }
    fn write_entry(
        &self,
        prefix_len: usize,
        key: &dyn Skip,
        composite: &[u8],
        value: &[u8],
        out: &mut DataOutputView,
        now: i64,
    ) -> Result<u64> {
        // The value is `[user key][ts?][user value]`.
        let mut input = DataInputView::new(value);
        self.codec.user_key.skip(&mut input)?;
        if expired_bytes_for_snapshot(&self.ttl, input.rest(), now) {
            return Ok(0);
        }
        let ns = PhantomSkip(self.codec.namespace.clone(), PhantomData::<fn() -> N>);
        let len = key_ns_len(key, &ns, &composite[prefix_len..])?;
        out.write_bytes(&composite[prefix_len..prefix_len + len]);
        out.write_bytes(value);
        Ok(1)
    }
}

/// The namespace's bytes, serialized with the state's namespace serializer.
pub(super) fn serialize_namespace<N: StateNamespace>(
    codec: &dyn ErasedCodec,
    namespace: &N,
) -> Result<Vec<u8>> {
    let mut out = DataOutputView::new();
    codec
        .write_namespace(namespace, &mut out)
        .ok_or_else(|| wrong_types(&codec.meta().name))??;
    Ok(out.into_inner())
}
