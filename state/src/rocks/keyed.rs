//! [`KeyedStateBackend`] for [`RocksDbKeyedStateBackend`]: the current key, registering
//! states and clearing a namespace here; every other access calls the method of its state
//! kind's file (`value`, `list`, `map`, `iter`, `snapshot`).

use std::marker::PhantomData;
use std::path::Path;
use std::sync::Arc;

use typeinfo::TypeSerializer;

use super::backend::{Current, RocksDbKeyedStateBackend};
use super::error::{missing_cf, rocks, unknown};
use super::iter::prefix_end;
use super::registered_state::serialize_namespace;
use crate::backend::{KeyedStateBackend, StateId, StateKind, StateMeta};
use crate::codec::{MapCodec, ValueCodec};
use crate::descriptor::*;
use crate::error::{Error, Result};
use crate::key_group::KeyGroupRange;
use crate::map_iter::MapIter;
use crate::savepoint::{KeyedSnapshot, RestoreReport};

impl<K: StateKey> RocksDbKeyedStateBackend<K> {
    /// Makes `key` (its bytes in `value_buf`), of the owned `key_group`, the current key.
    #[inline]
    fn set_current(&mut self, key: &K, key_group: u16) {
        self.builder
            .set_key_bytes(key_group, self.value_buf.as_slice());
        match &mut self.current {
            Some(c) => {
                c.key.clone_from(key);
                c.key_group = key_group;
            }
            None => {
                self.current = Some(Current {
                    key: key.clone(),
                    key_group,
                })
            }
        }
    }
}

impl<K: StateKey> KeyedStateBackend<K> for RocksDbKeyedStateBackend<K> {
    fn max_parallelism(&self) -> u32 {
        self.options.max_parallelism
    }

    fn key_group_range(&self) -> KeyGroupRange {
        self.options.range
    }

    #[inline]
    fn set_current_key(&mut self, key: &K) -> Result<()> {
        self.value_buf.clear();
        self.key_serializer.serialize(key, &mut self.value_buf)?;
        let key_group = self.options.owned_key_group(self.value_buf.as_slice())?;
        self.set_current(key, key_group);
        Ok(())
    }

    #[inline]
    fn set_current_key_in_group(&mut self, key: &K, key_group: u16) -> Result<()> {
        // The key's bytes are part of every RocksDB key: serialized as ever, only not hashed.
        self.value_buf.clear();
        self.key_serializer.serialize(key, &mut self.value_buf)?;
        let key_group = self
            .options
            .given_key_group(key_group, Some(self.value_buf.as_slice()))?;
        self.set_current(key, key_group);
        Ok(())
    }

    fn current_key(&self) -> Result<&K> {
        self.current
            .as_ref()
            .map(|c| &c.key)
            .ok_or(Error::NoCurrentKey)
    }

    fn current_key_group(&self) -> Result<u16> {
        self.current
            .as_ref()
            .map(|c| c.key_group)
            .ok_or(Error::NoCurrentKey)
    }

    fn value_state<N: StateNamespace, V: StateValue>(
        &mut self,
        descriptor: &ValueStateDescriptor<V>,
    ) -> Result<ValueState<N, V>> {
        let config = self.options.serializer_config.clone();
        let ttl = descriptor.ttl.clone();
        let id = self.register(&descriptor.name, StateKind::Value, ttl.clone(), || {
            ValueCodec::<N, V>::new(&descriptor.name, StateKind::Value, ttl.is_some(), &config)
        })?;
        Ok(ValueState {
            id,
            default: descriptor.default.clone(),
            _types: PhantomData,
        })
    }

    fn list_state<N: StateNamespace, V: StateValue>(
        &mut self,
        descriptor: &ListStateDescriptor<V>,
    ) -> Result<ListState<N, V>> {
        let config = self.options.serializer_config.clone();
        let ttl = descriptor.ttl.clone();
        let id = self.register(&descriptor.name, StateKind::List, ttl.clone(), || {
            ValueCodec::<N, V>::new(&descriptor.name, StateKind::List, ttl.is_some(), &config)
        })?;
        Ok(ListState {
            id,
            _types: PhantomData,
        })
    }

    fn map_state<N: StateNamespace, UK: MapKey, UV: StateValue>(
        &mut self,
        descriptor: &MapStateDescriptor<UK, UV>,
    ) -> Result<MapState<N, UK, UV>> {
        let config = self.options.serializer_config.clone();
        let ttl = descriptor.ttl.clone();
        let id = self.register(&descriptor.name, StateKind::Map, ttl.clone(), || {
            MapCodec::<N, UK, UV>::new(&descriptor.name, ttl.is_some(), &config)
        })?;
        Ok(MapState {
            id,
            _types: PhantomData,
        })
    }

    fn reducing_state<N: StateNamespace, V: StateValue>(
        &mut self,
        descriptor: &ReducingStateDescriptor<V>,
    ) -> Result<ReducingState<N, V>> {
        let config = self.options.serializer_config.clone();
        let ttl = descriptor.ttl.clone();
        let id = self.register(&descriptor.name, StateKind::Reducing, ttl.clone(), || {
            ValueCodec::<N, V>::new(
                &descriptor.name,
                StateKind::Reducing,
                ttl.is_some(),
                &config,
            )
        })?;
        Ok(ReducingState {
            id,
            reduce: Arc::clone(&descriptor.reduce),
            _types: PhantomData,
        })
    }

    fn aggregating_state<N: StateNamespace, In: 'static, Acc: StateValue, Out: 'static>(
        &mut self,
        descriptor: &AggregatingStateDescriptor<In, Acc, Out>,
    ) -> Result<AggregatingState<N, In, Acc, Out>> {
        let config = self.options.serializer_config.clone();
        let ttl = descriptor.ttl.clone();
        let id = self.register(
            &descriptor.name,
            StateKind::Aggregating,
            ttl.clone(),
            || {
                ValueCodec::<N, Acc>::new(
                    &descriptor.name,
                    StateKind::Aggregating,
                    ttl.is_some(),
                    &config,
                )
            },
        )?;
        Ok(AggregatingState {
            id,
            function: Arc::clone(&descriptor.function),
            _types: PhantomData,
        })
    }

    fn value_get<N: StateNamespace, V: StateValue>(
        &mut self,
        state: StateId,
        namespace: &N,
    ) -> Result<Option<V>> {
        self.read_value::<N, V>(state, namespace)
    }

    fn value_update<N: StateNamespace, V: StateValue>(
        &mut self,
        state: StateId,
        namespace: &N,
        update: &mut dyn FnMut(Option<&mut V>) -> Option<V>,
    ) -> Result<()> {
        self.update_value::<N, V>(state, namespace, update)
    }

    fn value_put<N: StateNamespace, V: StateValue>(
        &mut self,
        state: StateId,
        namespace: &N,
        value: V,
    ) -> Result<()> {
        self.write_value::<N, V>(state, namespace, value)
    }

    fn copy_value<V: StateValue>(&mut self, state: StateId, value: &V) -> Result<V> {
        self.states
            .get(state.0 as usize)
            .ok_or_else(|| unknown(state))?;
        Ok(V::create_serializer(&self.options.serializer_config)?.copy(value))
    }

    fn list_get<N: StateNamespace, V: StateValue>(
        &mut self,
        state: StateId,
        namespace: &N,
    ) -> Result<Vec<V>> {
        self.read_list::<N, V>(state, namespace)
    }

    fn list_add<N: StateNamespace, V: StateValue>(
        &mut self,
        state: StateId,
        namespace: &N,
        value: V,
    ) -> Result<()> {
        self.append_to_list::<N, V>(state, namespace, value)
    }

    fn list_add_all<N: StateNamespace, V: StateValue>(
        &mut self,
        state: StateId,
        namespace: &N,
        values: Vec<V>,
    ) -> Result<()> {
        self.append_all_to_list::<N, V>(state, namespace, values)
    }

    fn list_update<N: StateNamespace, V: StateValue>(
        &mut self,
        state: StateId,
        namespace: &N,
        values: Vec<V>,
    ) -> Result<()> {
        self.replace_list::<N, V>(state, namespace, values)
    }

    fn map_get<N: StateNamespace, UK: MapKey, UV: StateValue>(
        &mut self,
        state: StateId,
        namespace: &N,
        key: &UK,
    ) -> Result<Option<UV>> {
        self.read_map_entry::<N, UK, UV>(state, namespace, key)
    }

    fn map_put<N: StateNamespace, UK: MapKey, UV: StateValue>(
        &mut self,
        state: StateId,
        namespace: &N,
        key: UK,
        value: UV,
    ) -> Result<()> {
        self.write_map_entry::<N, UK, UV>(state, namespace, key, value)
    }

    fn map_remove<N: StateNamespace, UK: MapKey, UV: StateValue>(
        &mut self,
        state: StateId,
        namespace: &N,
        key: &UK,
    ) -> Result<()> {
        self.remove_map_entry::<N, UK, UV>(state, namespace, key)
    }

    fn map_put_all<N: StateNamespace, UK: MapKey, UV: StateValue>(
        &mut self,
        state: StateId,
        namespace: &N,
        entries: &mut dyn Iterator<Item = (UK, UV)>,
    ) -> Result<()> {
        self.write_map_entries::<N, UK, UV>(state, namespace, entries)
    }

    fn map_iter<'a, N: StateNamespace, UK: MapKey, UV: StateValue>(
        &'a mut self,
        state: StateId,
        namespace: &N,
    ) -> Result<MapIter<'a, UK, UV>> {
        self.iter_map_entries::<N, UK, UV>(state, namespace)
    }

    fn clear<N: StateNamespace>(&mut self, state: StateId, namespace: &N) -> Result<()> {
        if self.current.is_none() {
            return Err(Error::NoCurrentKey);
        }
        let s = self
            .states
            .get(state.0 as usize)
            .ok_or_else(|| unknown(state))?;
        let cf_name = s.cf().to_owned();
        let is_map = s.codec().meta().kind == StateKind::Map;
        let ns_bytes = serialize_namespace::<N>(s.codec(), namespace)?;
        if self.cached(state.0 as usize) {
            self.make_room_in_write_cache()?;
            // Cached as absent: reads see the delete, and the flush writes it.
            let key = self.builder.set_namespace_bytes(&ns_bytes);
            self.cache.get_mut().put(state.0 as usize, key, None, true);
            return Ok(());
        }
        let prefix = self.builder.set_namespace_bytes(&ns_bytes);
        let prefix = prefix.to_vec();
        let cf = self
            .db
            .cf_handle(&cf_name)
            .ok_or_else(|| missing_cf(&cf_name))?;
        if is_map {
            match prefix_end(&prefix) {
                Some(end) => self.db.delete_range_cf(cf, &prefix, &end).map_err(rocks),
                None => Err(Error::Storage(
                    "cannot bound a prefix of 0xff bytes".to_owned(),
                )),
            }
        } else {
            self.db
                .delete_cf_opt(cf, &prefix, &self.write)
                .map_err(rocks)
        }
    }

    fn keys<N: StateNamespace>(&mut self, state: StateId, namespace: &N) -> Result<Vec<K>> {
        self.keys_in_namespace::<N>(state, namespace)
    }

    fn states(&self) -> Vec<StateMeta> {
        self.states
            .iter()
            .map(|s| s.codec().meta().clone())
            .collect()
    }

    fn snapshot(&mut self, path: &Path) -> Result<KeyedSnapshot> {
        self.write_snapshot(path)
    }

    fn restore(&mut self, files: &[&Path]) -> Result<RestoreReport> {
        self.restore_snapshots(files)
    }
}
