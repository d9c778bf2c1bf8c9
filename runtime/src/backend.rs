//! The keyed state backend of one keyed operator's subtask: heap or RocksDB, chosen when the
//! job runs.

use std::path::Path;

use typeinfo_state::savepoint::{KeyedSnapshot, RestoreReport};
use typeinfo_state::{
    AggregatingState, AggregatingStateDescriptor, BackendOptions, HeapKeyedStateBackend,
    KeyGroupRange, KeyedStateBackend, ListState, ListStateDescriptor, MapIter, MapKey, MapState,
    MapStateDescriptor, ReducingState, ReducingStateDescriptor, RocksDbKeyedStateBackend, StateId,
    StateKey, StateMeta, StateNamespace, StateValue, ValueState, ValueStateDescriptor,
};

use crate::config::StateBackend;

/// The keyed state of one operator subtask, on the heap or in RocksDB.
///
/// Keyed process functions reach it through [`KeyedContext::state`](crate::KeyedContext::state)
/// and use the state crate's handles on it (`ValueState::value(backend, &())`, ...).
// One per subtask, matched on every state access: boxing the larger variant would add an
// indirection to the hot path to save a few hundred bytes once.
#[allow(clippy::large_enum_variant)]
pub enum KeyedBackend<K: StateKey> {
    /// Live objects in hash maps per key group.
    Heap(HeapKeyedStateBackend<K>),
    /// Serialized entries in RocksDB.
    RocksDb(RocksDbKeyedStateBackend<K>),
}

impl<K: StateKey> std::fmt::Debug for KeyedBackend<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KeyedBackend::Heap(_) => f.write_str("KeyedBackend::Heap"),
            KeyedBackend::RocksDb(b) => write!(f, "KeyedBackend::RocksDb({})", b.path().display()),
        }
    }
}

impl<K: StateKey> KeyedBackend<K> {
    /// Opens the backend `config` names for one subtask; RocksDB lives in `dir`.
    pub(crate) fn open(
        config: &StateBackend,
        options: BackendOptions,
        dir: &Path,
    ) -> typeinfo_state::Result<Self> {
        Ok(match config {
            StateBackend::Heap => KeyedBackend::Heap(HeapKeyedStateBackend::new(options)?),
            StateBackend::RocksDb { options: rocks, .. } => {
                std::fs::create_dir_all(dir).map_err(|source| typeinfo_state::Error::Io {
                    path: dir.to_owned(),
                    source,
                })?;
                KeyedBackend::RocksDb(RocksDbKeyedStateBackend::open(dir, options, rocks.clone())?)
            }
        })
    }
}

macro_rules! delegate {
    ($self:ident, $b:ident => $e:expr) => {
        match $self {
            KeyedBackend::Heap($b) => $e,
            KeyedBackend::RocksDb($b) => $e,
        }
    };
}

impl<K: StateKey> KeyedStateBackend<K> for KeyedBackend<K> {
    fn max_parallelism(&self) -> u32 {
        delegate!(self, b => b.max_parallelism())
    }
    fn key_group_range(&self) -> KeyGroupRange {
        delegate!(self, b => b.key_group_range())
    }
    #[inline]
    fn set_current_key(&mut self, key: &K) -> typeinfo_state::Result<()> {
        delegate!(self, b => b.set_current_key(key))
    }
    fn current_key(&self) -> typeinfo_state::Result<&K> {
        delegate!(self, b => b.current_key())
    }
    fn current_key_group(&self) -> typeinfo_state::Result<u16> {
        delegate!(self, b => b.current_key_group())
    }
    fn value_state<N: StateNamespace, V: StateValue>(
        &mut self,
        d: &ValueStateDescriptor<V>,
    ) -> typeinfo_state::Result<ValueState<N, V>> {
        delegate!(self, b => b.value_state(d))
    }
    fn list_state<N: StateNamespace, V: StateValue>(
        &mut self,
        d: &ListStateDescriptor<V>,
    ) -> typeinfo_state::Result<ListState<N, V>> {
        delegate!(self, b => b.list_state(d))
    }
    fn map_state<N: StateNamespace, UK: MapKey, UV: StateValue>(
        &mut self,
        d: &MapStateDescriptor<UK, UV>,
    ) -> typeinfo_state::Result<MapState<N, UK, UV>> {
        delegate!(self, b => b.map_state(d))
    }
    fn reducing_state<N: StateNamespace, V: StateValue>(
        &mut self,
        d: &ReducingStateDescriptor<V>,
    ) -> typeinfo_state::Result<ReducingState<N, V>> {
        delegate!(self, b => b.reducing_state(d))
    }
    fn aggregating_state<N: StateNamespace, In: 'static, Acc: StateValue, Out: 'static>(
        &mut self,
        d: &AggregatingStateDescriptor<In, Acc, Out>,
    ) -> typeinfo_state::Result<AggregatingState<N, In, Acc, Out>> {
        delegate!(self, b => b.aggregating_state(d))
    }
    #[inline]
    fn value_get<N: StateNamespace, V: StateValue>(
        &mut self,
        state: StateId,
        namespace: &N,
    ) -> typeinfo_state::Result<Option<V>> {
        delegate!(self, b => b.value_get(state, namespace))
    }
    #[inline]
    fn value_put<N: StateNamespace, V: StateValue>(
        &mut self,
        state: StateId,
        namespace: &N,
        value: V,
    ) -> typeinfo_state::Result<()> {
        delegate!(self, b => b.value_put(state, namespace, value))
    }
    #[inline]
    fn value_update<N: StateNamespace, V: StateValue>(
        &mut self,
        state: StateId,
        namespace: &N,
        update: &mut dyn FnMut(Option<&mut V>) -> Option<V>,
    ) -> typeinfo_state::Result<()> {
        delegate!(self, b => b.value_update(state, namespace, update))
    }
    fn copy_value<V: StateValue>(
        &mut self,
        state: StateId,
        value: &V,
    ) -> typeinfo_state::Result<V> {
        delegate!(self, b => b.copy_value(state, value))
    }
    fn list_get<N: StateNamespace, V: StateValue>(
        &mut self,
        state: StateId,
        namespace: &N,
    ) -> typeinfo_state::Result<Vec<V>> {
        delegate!(self, b => b.list_get(state, namespace))
    }
    fn list_add<N: StateNamespace, V: StateValue>(
        &mut self,
        state: StateId,
        namespace: &N,
        value: V,
    ) -> typeinfo_state::Result<()> {
        delegate!(self, b => b.list_add(state, namespace, value))
    }
    fn list_add_all<N: StateNamespace, V: StateValue>(
        &mut self,
        state: StateId,
        namespace: &N,
        values: Vec<V>,
    ) -> typeinfo_state::Result<()> {
        delegate!(self, b => b.list_add_all(state, namespace, values))
    }
    fn list_update<N: StateNamespace, V: StateValue>(
        &mut self,
        state: StateId,
        namespace: &N,
        values: Vec<V>,
    ) -> typeinfo_state::Result<()> {
        delegate!(self, b => b.list_update(state, namespace, values))
    }
    fn map_get<N: StateNamespace, UK: MapKey, UV: StateValue>(
        &mut self,
        state: StateId,
        namespace: &N,
        key: &UK,
    ) -> typeinfo_state::Result<Option<UV>> {
        delegate!(self, b => b.map_get(state, namespace, key))
    }
    fn map_put<N: StateNamespace, UK: MapKey, UV: StateValue>(
        &mut self,
        state: StateId,
        namespace: &N,
        key: UK,
        value: UV,
    ) -> typeinfo_state::Result<()> {
        delegate!(self, b => b.map_put::<N, UK, UV>(state, namespace, key, value))
    }
    fn map_remove<N: StateNamespace, UK: MapKey, UV: StateValue>(
        &mut self,
        state: StateId,
        namespace: &N,
        key: &UK,
    ) -> typeinfo_state::Result<()> {
        delegate!(self, b => b.map_remove::<N, UK, UV>(state, namespace, key))
    }
    fn map_put_all<N: StateNamespace, UK: MapKey, UV: StateValue>(
        &mut self,
        state: StateId,
        namespace: &N,
        entries: &mut dyn Iterator<Item = (UK, UV)>,
    ) -> typeinfo_state::Result<()> {
        delegate!(self, b => b.map_put_all::<N, UK, UV>(state, namespace, entries))
    }
    fn map_iter<'a, N: StateNamespace, UK: MapKey, UV: StateValue>(
        &'a mut self,
        state: StateId,
        namespace: &N,
    ) -> typeinfo_state::Result<MapIter<'a, UK, UV>> {
        delegate!(self, b => b.map_iter(state, namespace))
    }
    fn map_entries<N: StateNamespace, UK: MapKey, UV: StateValue>(
        &mut self,
        state: StateId,
        namespace: &N,
    ) -> typeinfo_state::Result<Vec<(UK, UV)>> {
        delegate!(self, b => b.map_entries(state, namespace))
    }
    fn clear<N: StateNamespace>(
        &mut self,
        state: StateId,
        namespace: &N,
    ) -> typeinfo_state::Result<()> {
        delegate!(self, b => b.clear(state, namespace))
    }
    fn keys<N: StateNamespace>(
        &mut self,
        state: StateId,
        namespace: &N,
    ) -> typeinfo_state::Result<Vec<K>> {
        delegate!(self, b => b.keys(state, namespace))
    }
    fn states(&self) -> Vec<StateMeta> {
        delegate!(self, b => b.states())
    }
    fn snapshot(&mut self, path: &Path) -> typeinfo_state::Result<KeyedSnapshot> {
        delegate!(self, b => b.snapshot(path))
    }
    fn restore(&mut self, files: &[&Path]) -> typeinfo_state::Result<RestoreReport> {
        delegate!(self, b => b.restore(files))
    }
}
