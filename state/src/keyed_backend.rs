//! The backend a job chooses when it runs: one type for keyed state on the heap or in
//! RocksDB, so that operators written once use either.

use std::path::Path;

use crate::backend::{KeyedStateBackend, StateId, StateMeta};
use crate::descriptor::{
    AggregatingState, AggregatingStateDescriptor, ListState, ListStateDescriptor, MapKey, MapState,
    MapStateDescriptor, ReducingState, ReducingStateDescriptor, StateKey, StateNamespace,
    StateValue, ValueState, ValueStateDescriptor,
};
use crate::heap::HeapKeyedStateBackend;
use crate::incremental::native_to_canonical;
use crate::key_group::KeyGroupRange;
use crate::map_iter::MapIter;
use crate::options::BackendOptions;
use crate::rocks::backend::RocksDbKeyedStateBackend;
use crate::rocks::options::RocksDbOptions;
use crate::savepoint::{KeyedSnapshot, RestoreReport};

/// Keyed state on the heap or in RocksDB, chosen at run time.
///
/// Both variants implement [`KeyedStateBackend`]; this type does too, by passing every call
/// to the chosen one, so that code written against it (an operator, a function) runs on
/// either. The match is a branch the processor predicts on every access, never a lookup.
///
/// # Examples
///
/// ```
/// use typeinfo_state::{BackendOptions, KeyGroupRange, KeyedBackend, KeyedStateBackend, ValueStateDescriptor};
///
/// # fn main() -> typeinfo_state::Result<()> {
/// let options = BackendOptions::new(128, KeyGroupRange::all(128))?;
/// let mut backend = KeyedBackend::<String>::heap(options)?;
/// let count = backend.value_state::<(), u64>(&ValueStateDescriptor::new("count"))?;
/// backend.set_current_key(&"ada".to_owned())?;
/// count.update(&mut backend, &(), 3)?;
/// assert_eq!(count.value(&mut backend, &())?, Some(3));
/// # Ok(())
/// # }
/// ```
// One per operator subtask, matched on every state access: boxing the larger variant would
// add an indirection to the hot path to save a few hundred bytes once.
#[allow(clippy::large_enum_variant)]
pub enum KeyedBackend<K: StateKey> {
    /// Live objects in hash tables per key group.
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
    /// Keyed state on the heap.
    ///
    /// # Errors
    ///
    /// As [`HeapKeyedStateBackend::new`].
    pub fn heap(options: BackendOptions) -> crate::Result<Self> {
        Ok(KeyedBackend::Heap(HeapKeyedStateBackend::new(options)?))
    }

    /// Keyed state in a RocksDB instance in `dir` (created when missing).
    ///
    /// # Errors
    ///
    /// `dir` cannot be created; as [`RocksDbKeyedStateBackend::open`].
    pub fn rocks_db(
        dir: &Path,
        options: BackendOptions,
        rocks: RocksDbOptions,
    ) -> crate::Result<Self> {
        std::fs::create_dir_all(dir).map_err(|source| crate::Error::io(dir, source))?;
        Ok(KeyedBackend::RocksDb(RocksDbKeyedStateBackend::open(
            dir, options, rocks,
        )?))
    }

    /// Drops the state of the current key, for a backend that holds one key at a time
    /// (batch execution): on the heap every entry of the current key's key group
    /// ([`HeapKeyedStateBackend::clear_current_key_group`]); RocksDB holds many keys and
    /// refuses.
    ///
    /// # Errors
    ///
    /// No current key; a RocksDB backend.
    pub fn clear_current_key_group(&mut self) -> crate::Result<()> {
        match self {
            KeyedBackend::Heap(b) => b.clear_current_key_group(),
            KeyedBackend::RocksDb(_) => Err(crate::Error::InvalidConfig(
                "dropping a key group's state at a key change is for the heap backend of batch execution".into(),
            )),
        }
    }

    /// Restores this (empty) backend's key groups from native RocksDB checkpoints (see
    /// [`RocksDbKeyedStateBackend::restore_native`]): RocksDB opens their files, the heap
    /// reads them through the savepoint format ([`native_to_canonical`]).
    ///
    /// # Errors
    ///
    /// As [`RocksDbKeyedStateBackend::restore_native`]; a scratch file cannot be written.
    pub fn restore_native(&mut self, dirs: &[&Path]) -> crate::Result<RestoreReport> {
        match self {
            KeyedBackend::RocksDb(b) => b.restore_native(dirs),
            KeyedBackend::Heap(b) => {
                let scratch = tempfile::tempdir()
                    .map_err(|source| crate::Error::io(std::env::temp_dir(), source))?;
                let mut files = Vec::with_capacity(dirs.len());
                for (i, dir) in dirs.iter().enumerate() {
                    let file = scratch.path().join(format!("part-{i}.kstate"));
                    native_to_canonical(dir, &file)?;
                    files.push(file);
                }
                let refs: Vec<&Path> = files.iter().map(std::path::PathBuf::as_path).collect();
                b.restore(&refs)
            }
        }
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
    fn set_current_key(&mut self, key: &K) -> crate::Result<()> {
        delegate!(self, b => b.set_current_key(key))
    }
    #[inline]
    fn set_current_key_in_group(&mut self, key: &K, key_group: u16) -> crate::Result<()> {
        delegate!(self, b => b.set_current_key_in_group(key, key_group))
    }
    fn current_key(&self) -> crate::Result<&K> {
        delegate!(self, b => b.current_key())
    }
    fn current_key_group(&self) -> crate::Result<u16> {
        delegate!(self, b => b.current_key_group())
    }
    fn value_state<N: StateNamespace, V: StateValue>(
        &mut self,
        d: &ValueStateDescriptor<V>,
    ) -> crate::Result<ValueState<N, V>> {
        delegate!(self, b => b.value_state(d))
    }
    fn list_state<N: StateNamespace, V: StateValue>(
        &mut self,
        d: &ListStateDescriptor<V>,
    ) -> crate::Result<ListState<N, V>> {
        delegate!(self, b => b.list_state(d))
    }
    fn map_state<N: StateNamespace, UK: MapKey, UV: StateValue>(
        &mut self,
        d: &MapStateDescriptor<UK, UV>,
    ) -> crate::Result<MapState<N, UK, UV>> {
        delegate!(self, b => b.map_state(d))
    }
    fn reducing_state<N: StateNamespace, V: StateValue>(
        &mut self,
        d: &ReducingStateDescriptor<V>,
    ) -> crate::Result<ReducingState<N, V>> {
        delegate!(self, b => b.reducing_state(d))
    }
    fn aggregating_state<N: StateNamespace, In: 'static, Acc: StateValue, Out: 'static>(
        &mut self,
        d: &AggregatingStateDescriptor<In, Acc, Out>,
    ) -> crate::Result<AggregatingState<N, In, Acc, Out>> {
        delegate!(self, b => b.aggregating_state(d))
    }
    #[inline]
    fn value_get<N: StateNamespace, V: StateValue>(
        &mut self,
        state: StateId,
        namespace: &N,
    ) -> crate::Result<Option<V>> {
        delegate!(self, b => b.value_get(state, namespace))
    }
    #[inline]
    fn value_put<N: StateNamespace, V: StateValue>(
        &mut self,
        state: StateId,
        namespace: &N,
        value: V,
    ) -> crate::Result<()> {
        delegate!(self, b => b.value_put(state, namespace, value))
    }
    #[inline]
    fn value_take<N: StateNamespace, V: StateValue>(
        &mut self,
        state: StateId,
        namespace: &N,
    ) -> crate::Result<Option<V>> {
        delegate!(self, b => b.value_take(state, namespace))
    }
    fn value_update<N: StateNamespace, V: StateValue>(
        &mut self,
        state: StateId,
        namespace: &N,
        update: &mut dyn FnMut(Option<&mut V>) -> Option<V>,
    ) -> crate::Result<()> {
        delegate!(self, b => b.value_update(state, namespace, update))
    }
    fn copy_value<V: StateValue>(&mut self, state: StateId, value: &V) -> crate::Result<V> {
        delegate!(self, b => b.copy_value(state, value))
    }
    fn list_get<N: StateNamespace, V: StateValue>(
        &mut self,
        state: StateId,
        namespace: &N,
    ) -> crate::Result<Vec<V>> {
        delegate!(self, b => b.list_get(state, namespace))
    }
    fn list_for_each<N: StateNamespace, V: StateValue>(
        &mut self,
        state: StateId,
        namespace: &N,
        visit: &mut dyn FnMut(&V),
    ) -> crate::Result<()> {
        delegate!(self, b => b.list_for_each(state, namespace, visit))
    }
    fn list_add<N: StateNamespace, V: StateValue>(
        &mut self,
        state: StateId,
        namespace: &N,
        value: V,
    ) -> crate::Result<()> {
        delegate!(self, b => b.list_add(state, namespace, value))
    }
    fn list_add_all<N: StateNamespace, V: StateValue>(
        &mut self,
        state: StateId,
        namespace: &N,
        values: Vec<V>,
    ) -> crate::Result<()> {
        delegate!(self, b => b.list_add_all(state, namespace, values))
    }
    fn list_update<N: StateNamespace, V: StateValue>(
        &mut self,
        state: StateId,
        namespace: &N,
        values: Vec<V>,
    ) -> crate::Result<()> {
        delegate!(self, b => b.list_update(state, namespace, values))
    }
    fn map_get<N: StateNamespace, UK: MapKey, UV: StateValue>(
        &mut self,
        state: StateId,
        namespace: &N,
        key: &UK,
    ) -> crate::Result<Option<UV>> {
        delegate!(self, b => b.map_get(state, namespace, key))
    }
    fn map_put<N: StateNamespace, UK: MapKey, UV: StateValue>(
        &mut self,
        state: StateId,
        namespace: &N,
        key: UK,
        value: UV,
    ) -> crate::Result<()> {
        delegate!(self, b => b.map_put::<N, UK, UV>(state, namespace, key, value))
    }
    fn map_remove<N: StateNamespace, UK: MapKey, UV: StateValue>(
        &mut self,
        state: StateId,
        namespace: &N,
        key: &UK,
    ) -> crate::Result<()> {
        delegate!(self, b => b.map_remove::<N, UK, UV>(state, namespace, key))
    }
    fn map_put_all<N: StateNamespace, UK: MapKey, UV: StateValue>(
        &mut self,
        state: StateId,
        namespace: &N,
        entries: &mut dyn Iterator<Item = (UK, UV)>,
    ) -> crate::Result<()> {
        delegate!(self, b => b.map_put_all::<N, UK, UV>(state, namespace, entries))
    }
    fn map_iter<'a, N: StateNamespace, UK: MapKey, UV: StateValue>(
        &'a mut self,
        state: StateId,
        namespace: &N,
    ) -> crate::Result<MapIter<'a, UK, UV>> {
        delegate!(self, b => b.map_iter(state, namespace))
    }
    fn map_entries<N: StateNamespace, UK: MapKey, UV: StateValue>(
        &mut self,
        state: StateId,
        namespace: &N,
    ) -> crate::Result<Vec<(UK, UV)>> {
        delegate!(self, b => b.map_entries(state, namespace))
    }
    fn clear<N: StateNamespace>(&mut self, state: StateId, namespace: &N) -> crate::Result<()> {
        delegate!(self, b => b.clear(state, namespace))
    }
    fn keys<N: StateNamespace>(&mut self, state: StateId, namespace: &N) -> crate::Result<Vec<K>> {
        delegate!(self, b => b.keys(state, namespace))
    }
    fn states(&self) -> Vec<StateMeta> {
        delegate!(self, b => b.states())
    }
    fn snapshot(&mut self, path: &Path) -> crate::Result<KeyedSnapshot> {
        delegate!(self, b => b.snapshot(path))
    }
    fn restore(&mut self, files: &[&Path]) -> crate::Result<RestoreReport> {
        delegate!(self, b => b.restore(files))
    }
}
