//! The keyed state backend trait both backends implement, and what they share.
//!
//! # Why a handle is an id, not an owner of its storage
//!
//! A state handle ([`ValueState`], [`MapState`], ...) is what registration returns: the
//! state's id, its namespace and value types, and (for value state) its default. Each access
//! passes the backend (`count.value(&mut backend, &ns)`), which finds the state's storage by
//! index and checks that the handle's types are the registered ones (a compare of two type
//! ids kept beside the table, no virtual call), then works on the typed table.
//!
//! A handle that owned its storage (Flink's state objects hold a reference to their table)
//! was considered and not taken: the heap backend's live objects are also reached by
//! snapshots, restores and TTL clean-up through the backend, so a handle owning them would
//! share mutable ownership with the backend, paid on every access with a lock (`Arc<Mutex>`)
//! or by making every backend `!Send` (`Rc<RefCell>`), and the handle type would depend on
//! the backend type (`ValueState<B, N, V>`), which every function and operator would carry.
//! The id check costs less than either and keeps one handle type for both backends and for
//! [`KeyedBackend`](crate::KeyedBackend), the run-time choice between them.

use std::path::Path;

use crate::descriptor::{
    AggregatingState, AggregatingStateDescriptor, ListState, ListStateDescriptor, MapKey, MapState,
    MapStateDescriptor, ReducingState, ReducingStateDescriptor, StateKey, StateNamespace,
    StateValue, ValueState, ValueStateDescriptor,
};
use crate::error::Result;
use crate::key_group::KeyGroupRange;
use crate::map_iter::MapIter;
pub use crate::meta::{StateId, StateKind, StateMeta};
use crate::savepoint::{KeyedSnapshot, RestoreReport};

/// Keyed state under a current key and namespace, on the heap or in RocksDB.
///
/// Register states with the `*_state` methods (registering a name again with the same
/// kind and types returns the same state), set the current key, then use the handles.
/// Both backends write and read the same savepoint format.
pub trait KeyedStateBackend<K: StateKey>: Send {
    /// The job's max parallelism (the number of key groups).
    fn max_parallelism(&self) -> u32;

    /// The key groups this backend holds.
    fn key_group_range(&self) -> KeyGroupRange;

    /// Sets the key that state operations apply to.
    ///
    /// # Errors
    ///
    /// The key's key group is outside this backend's range; a serialization error.
    fn set_current_key(&mut self, key: &K) -> Result<()>;

    /// Sets the key that state operations apply to, with its key group already known:
    /// `key_group` is [`key_group_for_bytes`](crate::key_group_for_bytes) of the key's
    /// serialized bytes and this backend's max parallelism, computed by the caller (the
    /// runtime's exchange computes it to route the record, and hands it to the keyed operator
    /// after it instead of computing it again). A backend that keeps its state by key object
    /// (the heap) then neither serializes nor hashes the key.
    ///
    /// The group is checked against the backend's range, as [`set_current_key`]'s is; that it
    /// is the key's own group is the caller's promise, checked in debug builds only (a wrong
    /// group would keep the key's state where a restore at another parallelism does not look
    /// for it). Bytes from outside the process never carry a key group to here: the runtime
    /// computes it again for records received from another process.
    ///
    /// The default computes the group again, as [`set_current_key`] does.
    ///
    /// [`set_current_key`]: Self::set_current_key
    ///
    /// # Errors
    ///
    /// As [`set_current_key`](Self::set_current_key).
    fn set_current_key_in_group(&mut self, key: &K, key_group: u16) -> Result<()> {
        let _ = key_group;
        self.set_current_key(key)
    }

    /// The current key.
    ///
    /// # Errors
    ///
    /// No current key is set.
    fn current_key(&self) -> Result<&K>;

    /// The current key's key group.
    ///
    /// # Errors
    ///
    /// No current key is set.
    fn current_key_group(&self) -> Result<u16>;

    /// Registers (or finds) a value state.
    ///
    /// # Errors
    ///
    /// The name is registered with another kind or other types; serializer creation fails.
    fn value_state<N: StateNamespace, V: StateValue>(
        &mut self,
        descriptor: &ValueStateDescriptor<V>,
    ) -> Result<ValueState<N, V>>;

    /// Registers (or finds) a list state.
    ///
    /// # Errors
    ///
    /// As [`value_state`](Self::value_state).
    fn list_state<N: StateNamespace, V: StateValue>(
        &mut self,
        descriptor: &ListStateDescriptor<V>,
    ) -> Result<ListState<N, V>>;

    /// Registers (or finds) a map state.
    ///
    /// # Errors
    ///
    /// As [`value_state`](Self::value_state).
    fn map_state<N: StateNamespace, UK: MapKey, UV: StateValue>(
        &mut self,
        descriptor: &MapStateDescriptor<UK, UV>,
    ) -> Result<MapState<N, UK, UV>>;

    /// Registers (or finds) a reducing state.
    ///
    /// # Errors
    ///
    /// As [`value_state`](Self::value_state).
    fn reducing_state<N: StateNamespace, V: StateValue>(
        &mut self,
        descriptor: &ReducingStateDescriptor<V>,
    ) -> Result<ReducingState<N, V>>;

    /// Registers (or finds) an aggregating state.
    ///
    /// # Errors
    ///
    /// As [`value_state`](Self::value_state).
    fn aggregating_state<N: StateNamespace, In: 'static, Acc: StateValue, Out: 'static>(
        &mut self,
        descriptor: &AggregatingStateDescriptor<In, Acc, Out>,
    ) -> Result<AggregatingState<N, In, Acc, Out>>;

    /// The value of the current key in `namespace`.
    #[doc(hidden)]
    fn value_get<N: StateNamespace, V: StateValue>(
        &mut self,
        state: StateId,
        namespace: &N,
    ) -> Result<Option<V>>;
    /// Removes the value of the current key in `namespace` and returns it. The default
    /// reads and clears; the heap backend hands over the stored value.
    #[doc(hidden)]
    fn value_take<N: StateNamespace, V: StateValue>(
        &mut self,
        state: StateId,
        namespace: &N,
    ) -> Result<Option<V>> {
        let value = self.value_get::<N, V>(state, namespace)?;
        if value.is_some() {
            self.clear(state, namespace)?;
        }
        Ok(value)
    }
    /// Sets the value of the current key in `namespace`.
    #[doc(hidden)]
    fn value_put<N: StateNamespace, V: StateValue>(
        &mut self,
        state: StateId,
        namespace: &N,
        value: V,
    ) -> Result<()>;
    /// Updates the value of the current key in `namespace` in one access: `update` gets the
    /// value to change in place and returns `None`, or gets `None` (no value) and returns
    /// the value to store. The default reads and writes; the heap backend changes the live
    /// object.
    #[doc(hidden)]
    fn value_update<N: StateNamespace, V: StateValue>(
        &mut self,
        state: StateId,
        namespace: &N,
        update: &mut dyn FnMut(Option<&mut V>) -> Option<V>,
    ) -> Result<()> {
        update_by_get_and_put(self, state, namespace, update)
    }
    /// A copy of `value` made with the state's serializer.
    #[doc(hidden)]
    fn copy_value<V: StateValue>(&mut self, state: StateId, value: &V) -> Result<V>;
    /// The list of the current key in `namespace`.
    #[doc(hidden)]
    fn list_get<N: StateNamespace, V: StateValue>(
        &mut self,
        state: StateId,
        namespace: &N,
    ) -> Result<Vec<V>>;
    /// Shows each element of the list of the current key in `namespace` to `visit`, in
    /// order (none when there is no list). The default reads a copy of the list
    /// ([`list_get`](Self::list_get)); the heap backend lends its own elements.
    #[doc(hidden)]
    fn list_for_each<N: StateNamespace, V: StateValue>(
        &mut self,
        state: StateId,
        namespace: &N,
        visit: &mut dyn FnMut(&V),
    ) -> Result<()> {
        for value in self.list_get::<N, V>(state, namespace)? {
            visit(&value);
        }
        Ok(())
    }
    /// Appends to the list of the current key in `namespace`.
    #[doc(hidden)]
    fn list_add<N: StateNamespace, V: StateValue>(
        &mut self,
        state: StateId,
        namespace: &N,
        value: V,
    ) -> Result<()>;
    /// Appends every element of `values` to the list of the current key in `namespace`
    /// (nothing when `values` is empty). The default adds one at a time; both backends
    /// append in one access.
    #[doc(hidden)]
    fn list_add_all<N: StateNamespace, V: StateValue>(
        &mut self,
        state: StateId,
        namespace: &N,
        values: Vec<V>,
    ) -> Result<()> {
        for value in values {
            self.list_add(state, namespace, value)?;
        }
        Ok(())
    }
    /// Replaces the list of the current key in `namespace`.
    #[doc(hidden)]
    fn list_update<N: StateNamespace, V: StateValue>(
        &mut self,
        state: StateId,
        namespace: &N,
        values: Vec<V>,
    ) -> Result<()>;
    /// The value of a user key.
    #[doc(hidden)]
    fn map_get<N: StateNamespace, UK: MapKey, UV: StateValue>(
        &mut self,
        state: StateId,
        namespace: &N,
        key: &UK,
    ) -> Result<Option<UV>>;
    /// Sets the value of a user key.
    #[doc(hidden)]
    fn map_put<N: StateNamespace, UK: MapKey, UV: StateValue>(
        &mut self,
        state: StateId,
        namespace: &N,
        key: UK,
        value: UV,
    ) -> Result<()>;
    /// Removes a user key.
    #[doc(hidden)]
    fn map_remove<N: StateNamespace, UK: MapKey, UV: StateValue>(
        &mut self,
        state: StateId,
        namespace: &N,
        key: &UK,
    ) -> Result<()>;
    /// Sets the value of every user key of `entries`, in their order (a later entry of an
    /// equal key wins). The default puts one at a time; RocksDB writes batches.
    #[doc(hidden)]
    fn map_put_all<N: StateNamespace, UK: MapKey, UV: StateValue>(
        &mut self,
        state: StateId,
        namespace: &N,
        entries: &mut dyn Iterator<Item = (UK, UV)>,
    ) -> Result<()> {
        for (key, value) in entries {
            self.map_put::<N, UK, UV>(state, namespace, key, value)?;
        }
        Ok(())
    }
    /// Every entry in the user key's order, read lazily (never the whole map at once).
    #[doc(hidden)]
    fn map_iter<'a, N: StateNamespace, UK: MapKey, UV: StateValue>(
        &'a mut self,
        state: StateId,
        namespace: &N,
    ) -> Result<MapIter<'a, UK, UV>>;
    /// Every entry in the user key's order, collected from
    /// [`map_iter`](Self::map_iter).
    #[doc(hidden)]
    fn map_entries<N: StateNamespace, UK: MapKey, UV: StateValue>(
        &mut self,
        state: StateId,
        namespace: &N,
    ) -> Result<Vec<(UK, UV)>> {
        self.map_iter(state, namespace)?.collect()
    }

    /// Removes the state of the current key in `namespace`.
    ///
    /// # Errors
    ///
    /// No current key; a backend error.
    fn clear<N: StateNamespace>(&mut self, state: StateId, namespace: &N) -> Result<()>;

    /// Every key with state in `namespace` (unordered).
    ///
    /// # Errors
    ///
    /// A backend or serialization error.
    fn keys<N: StateNamespace>(&mut self, state: StateId, namespace: &N) -> Result<Vec<K>>;

    /// The metadata of every registered state, in registration order.
    fn states(&self) -> Vec<StateMeta>;

    /// Writes a full snapshot of every state to `path` (temporary name, sync, rename).
    ///
    /// # Errors
    ///
    /// An I/O or serialization error; the previous file at `path`, if any, is intact.
    fn snapshot(&mut self, path: &Path) -> Result<KeyedSnapshot>;

    /// Restores the key groups of this backend's range from snapshot files (written by
    /// either backend, at any parallelism). Every stored state must be registered first;
    /// each is resolved against today's serializers, and nothing is written unless every
    /// state is compatible. States that need migration are rewritten entry by entry.
    ///
    /// # Errors
    ///
    /// A corrupt or foreign file, an incompatible or unregistered state: the backend is
    /// then left empty.
    fn restore(&mut self, files: &[&Path]) -> Result<RestoreReport>;
}

/// [`KeyedStateBackend::value_update`] as a read, a change and a write.
pub(crate) fn update_by_get_and_put<
    K: StateKey,
    B: KeyedStateBackend<K> + ?Sized,
    N: StateNamespace,
    V: StateValue,
>(
    backend: &mut B,
    state: StateId,
    namespace: &N,
    update: &mut dyn FnMut(Option<&mut V>) -> Option<V>,
) -> Result<()> {
    match backend.value_get::<N, V>(state, namespace)? {
        Some(mut v) => {
            update(Some(&mut v));
            backend.value_put(state, namespace, v)
        }
        None => match update(None) {
            Some(v) => backend.value_put(state, namespace, v),
            None => Ok(()),
        },
    }
}
