//! The heap backend: per-key-group maps of live objects, serialized only when snapshotted.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::marker::PhantomData;
use std::path::Path;
use std::sync::Arc;

use typeinfo::{
    DataInputView, DataOutputView, SerializerSnapshot, SnapshotRegistry, TypeInfo, TypeSerializer,
};

use crate::backend::{KeyedStateBackend, StateId, StateKind, StateMeta};
use crate::codec::{ErasedCodec, MapCodec, ValueCodec};
use crate::descriptor::*;
use crate::error::{not_registered, Error, Result};
use crate::heap_map::KeyGroupMaps;
use crate::heap_user_map::UserMap;
use crate::key_group::KeyGroupRange;
use crate::map_iter::MapIter;
use crate::options::BackendOptions;
use crate::savepoint::{
    part_transcoder, restore_into, EntryTranscoder, KeyedSnapshot, PartFn, RestoreReport,
    RestoreTarget, SnapshotHeader, SnapshotWriter,
};
use crate::ttl::{expired_for_snapshot, on_read, stamp, Clock, StateTtlConfig, Visible};

/// One registered state on the heap, without its value types.
trait HeapState<K: StateKey>: Send {
    fn codec(&self) -> &dyn ErasedCodec;
    fn as_any_mut(&mut self) -> &mut dyn Any;
    /// Removes the state of `key` in `namespace`; `false` when the namespace has another type.
    fn clear(&mut self, group: usize, key: &K, namespace: &dyn Any) -> bool;
    /// The keys with state in `namespace`; `false` when the namespace has another type.
    fn keys(&self, namespace: &dyn Any, out: &mut Vec<K>) -> bool;
    fn write_key_group(
        &self,
        group: usize,
        key: &K::Serializer,
        out: &mut DataOutputView,
        now: i64,
    ) -> Result<u64>;
    fn ingest(&mut self, group: usize, key: K, entry: &[u8]) -> Result<()>;
    fn clear_all(&mut self);
    fn clear_group(&mut self, group: usize);
    fn cleanup_incrementally(&mut self, group: usize, now: i64);
}

struct Table<K, N, S, C> {
    groups: KeyGroupMaps<K, N, S>,
    codec: C,
    ttl: Option<StateTtlConfig>,
}

impl<K: StateKey, N: StateNamespace, S, C> Table<K, N, S, C> {
    fn new(groups: usize, codec: C, ttl: Option<StateTtlConfig>) -> Self {
        Self {
            groups: KeyGroupMaps::new(groups),
            codec,
            ttl,
        }
    }

    #[inline]
    fn slot(&mut self, group: usize, key: &K, namespace: &N) -> Option<&mut S> {
        self.groups.get_mut(group, key, namespace)
    }

    #[inline]
    fn insert(&mut self, group: usize, key: &K, namespace: &N, value: S) {
        self.groups.insert(group, key, namespace, value);
    }

    fn remove(&mut self, group: usize, key: &K, namespace: &N) {
        self.groups.remove(group, key, namespace);
    }
}

/// The methods every heap table implements the same way.
macro_rules! shared_heap_state_methods {
    () => {
        fn codec(&self) -> &dyn ErasedCodec {
            &self.codec
        }
        fn as_any_mut(&mut self) -> &mut dyn Any {
            self
        }
        fn clear(&mut self, group: usize, key: &K, namespace: &dyn Any) -> bool {
            downcast_ns::<N>(namespace)
                .map(|ns| self.remove(group, key, ns))
                .is_some()
        }
        fn keys(&self, namespace: &dyn Any, out: &mut Vec<K>) -> bool {
            downcast_ns::<N>(namespace)
                .map(|ns| self.groups.keys_in(ns, out))
                .is_some()
        }
        fn clear_all(&mut self) {
            self.groups.clear();
        }
        fn clear_group(&mut self, group: usize) {
            self.groups.clear_group(group);
        }
    };
}

fn read_ts(ttl: bool, input: &mut DataInputView<'_>) -> Result<i64> {
    Ok(if ttl { input.read_i64()? } else { 0 })
}

fn downcast_ns<N: 'static>(namespace: &dyn Any) -> Option<&N> {
    namespace.downcast_ref::<N>()
}

type ValueTable<K, N, V> = Table<K, N, (V, i64), ValueCodec<N, V>>;
type ListTable<K, N, V> = Table<K, N, Vec<(V, i64)>, ValueCodec<N, V>>;
type MapTable<K, N, UK, UV> = Table<K, N, UserMap<UK, (UV, i64)>, MapCodec<N, UK, UV>>;

impl<K: StateKey, N: StateNamespace, V: StateValue> HeapState<K> for ValueTable<K, N, V> {
    shared_heap_state_methods!();
    fn write_key_group(
        &self,
        group: usize,
        key: &K::Serializer,
        out: &mut DataOutputView,
        now: i64,
    ) -> Result<u64> {
        let mut count = 0;
        for (k, ns, (v, ts)) in self.groups.iter(group) {
            if expired_for_snapshot(&self.ttl, *ts, now) {
                continue;
            }
            // An entry is its own value to its reader (its own zero-sized budget).
            out.reset_zero_sized_budget();
            key.serialize(k, out)?;
            self.codec.namespace.serialize(ns, out)?;
            if self.ttl.is_some() {
                out.write_i64(*ts);
            }
            self.codec.value.serialize(v, out)?;
            count += 1;
        }
        Ok(count)
    }
    fn ingest(&mut self, group: usize, key: K, entry: &[u8]) -> Result<()> {
        let mut input = DataInputView::new(entry);
        let ns = self.codec.namespace.deserialize(&mut input)?;
        let ts = read_ts(self.ttl.is_some(), &mut input)?;
        let v = self.codec.value.deserialize(&mut input)?;
        self.insert(group, &key, &ns, (v, ts));
        Ok(())
    }
    fn cleanup_incrementally(&mut self, group: usize, now: i64) {
        let Some(ttl) = self.ttl.clone() else { return };
        self.groups
            .sweep(group, ttl.incremental_cleanup_size(), |(_, ts)| {
                ttl.is_expired(*ts, now)
            });
    }
}

impl<K: StateKey, N: StateNamespace, V: StateValue> HeapState<K> for ListTable<K, N, V> {
    shared_heap_state_methods!();
    fn write_key_group(
        &self,
        group: usize,
        key: &K::Serializer,
        out: &mut DataOutputView,
        now: i64,
    ) -> Result<u64> {
        let mut count = 0;
        let mut elements = DataOutputView::new();
        for (k, ns, list) in self.groups.iter(group) {
            elements.clear();
            for (v, ts) in list {
                if expired_for_snapshot(&self.ttl, *ts, now) {
                    continue;
                }
                if self.ttl.is_some() {
                    elements.write_i64(*ts);
                }
                // Each element of a list is its own value (its own zero-sized budget).
                elements.reset_zero_sized_budget();
                self.codec.value.serialize(v, &mut elements)?;
            }
            if elements.is_empty() {
                continue;
            }
            out.reset_zero_sized_budget();
            key.serialize(k, out)?;
            self.codec.namespace.serialize(ns, out)?;
            out.write_len_prefixed(elements.as_slice());
            count += 1;
        }
        Ok(count)
    }
    fn ingest(&mut self, group: usize, key: K, entry: &[u8]) -> Result<()> {
        let mut input = DataInputView::new(entry);
        let ns = self.codec.namespace.deserialize(&mut input)?;
        let mut elements = DataInputView::new(input.read_len_prefixed()?);
        let mut list = Vec::new();
        while !elements.is_empty() {
            elements.reset_zero_sized_budget();
            let ts = read_ts(self.ttl.is_some(), &mut elements)?;
            list.push((self.codec.value.deserialize(&mut elements)?, ts));
        }
        self.groups
            .get_or_insert_with(group, &key, &ns, Vec::new)
            .extend(list);
        Ok(())
    }
    fn cleanup_incrementally(&mut self, group: usize, now: i64) {
        let Some(ttl) = self.ttl.clone() else { return };
        self.groups
            .sweep(group, ttl.incremental_cleanup_size(), |list| {
                list.retain(|(_, ts)| !ttl.is_expired(*ts, now));
                list.is_empty()
            });
    }
}

impl<K: StateKey, N: StateNamespace, UK: MapKey, UV: StateValue> HeapState<K>
    for MapTable<K, N, UK, UV>
{
    shared_heap_state_methods!();
    fn write_key_group(
        &self,
        group: usize,
        key: &K::Serializer,
        out: &mut DataOutputView,
        now: i64,
    ) -> Result<u64> {
        let mut count = 0;
        for (k, ns, map) in self.groups.iter(group) {
            for (uk, (uv, ts)) in map.iter() {
                if expired_for_snapshot(&self.ttl, *ts, now) {
                    continue;
                }
                out.reset_zero_sized_budget();
                key.serialize(k, out)?;
                self.codec.namespace.serialize(ns, out)?;
                self.codec.user_key.serialize(uk, out)?;
                if self.ttl.is_some() {
                    out.write_i64(*ts);
                }
                self.codec.user_value.serialize(uv, out)?;
                count += 1;
            }
        }
        Ok(count)
    }
    fn ingest(&mut self, group: usize, key: K, entry: &[u8]) -> Result<()> {
        let mut input = DataInputView::new(entry);
        let ns = self.codec.namespace.deserialize(&mut input)?;
        let uk = self.codec.user_key.deserialize(&mut input)?;
        let ts = read_ts(self.ttl.is_some(), &mut input)?;
        let uv = self.codec.user_value.deserialize(&mut input)?;
        self.groups
            .get_or_insert_with(group, &key, &ns, UserMap::default)
            .insert(uk, (uv, ts));
        Ok(())
    }
    fn cleanup_incrementally(&mut self, group: usize, now: i64) {
        let Some(ttl) = self.ttl.clone() else { return };
        self.groups
            .sweep(group, ttl.incremental_cleanup_size(), |map| {
                map.retain(|_, (_, ts)| !ttl.is_expired(*ts, now));
                map.is_empty()
            });
    }
}

/// A map state's entries on the heap, in the user key's order, read one at a time so that
/// expired entries can be removed on the way: a small map (a sorted vector) is walked from
/// the last user key returned (a binary search per entry, nothing copied); a large one (a
/// hash table) has its user keys copied and sorted when the iteration starts, and each
/// entry is looked up when reached. No value is copied ahead.
struct HeapMapIter<'a, UK: MapKey, UV: StateValue> {
    map: &'a mut UserMap<UK, (UV, i64)>,
    walk: Walk<UK>,
    ttl: Option<StateTtlConfig>,
    now: i64,
    user_key: &'a UK::Serializer,
    user_value: &'a UV::Serializer,
}

/// Where a [`HeapMapIter`] is.
enum Walk<UK> {
    /// A small map: the last user key returned or removed.
    After(Option<UK>),
    /// A large map: the user keys not reached yet, in order.
    Keys(std::vec::IntoIter<UK>),
}

impl<'a, UK: MapKey, UV: StateValue> HeapMapIter<'a, UK, UV> {
    fn new(
        map: &'a mut UserMap<UK, (UV, i64)>,
        ttl: Option<StateTtlConfig>,
        now: i64,
        (user_key, user_value): (&'a UK::Serializer, &'a UV::Serializer),
    ) -> Self {
        let walk = match map.sorted_keys() {
            Some(keys) => Walk::Keys(keys.into_iter()),
            None => Walk::After(None),
        };
        Self {
            map,
            walk,
            ttl,
            now,
            user_key,
            user_value,
        }
    }
}

/// The next entry of `walk` over `map`, expired or not, with its key owned.
fn step<'m, UK: MapKey, V>(
    map: &'m mut UserMap<UK, V>,
    walk: &mut Walk<UK>,
    user_key: &UK::Serializer,
) -> Option<(UK, &'m mut V)> {
    match walk {
        Walk::After(last) => {
            let (key, entry) = map.small_next_after(last.as_ref())?;
            let key = user_key.copy(key);
            *last = Some(key.clone());
            Some((key, entry))
        }
        // Every key was in the map when the iteration started, and only the iterator
        // changes the map while it lives (it borrows the backend): a key is missing only
        // when the iterator removed it.
        Walk::Keys(keys) => {
            let key = keys.find(|key| map.get_mut(key).is_some())?;
            let entry = map.get_mut(&key)?;
            Some((key, entry))
        }
    }
}

impl<UK: MapKey, UV: StateValue> Iterator for HeapMapIter<'_, UK, UV> {
    type Item = Result<(UK, UV)>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let (key, (value, ts)) = step(self.map, &mut self.walk, self.user_key)?;
            if on_read(&self.ttl, ts, self.now) == Visible::Expired {
                self.map.remove(&key);
                continue;
            }
            return Some(Ok((key, self.user_value.copy(value))));
        }
    }
}

/// A registered state: its table, with the table's type and whether it has a TTL, which
/// every access checks without a virtual call.
struct Registered<K: StateKey> {
    table: Box<dyn HeapState<K>>,
    type_id: TypeId,
    ttl: bool,
}

struct Current<K> {
    key: K,
    key_group: u16,
    group: usize,
}

/// Keyed state held as live objects in per-key-group hash maps.
///
/// Fast (no serialization on access) and bounded by memory. Values are copied out with
/// their serializer's `copy` on read. Snapshots serialize every live value; the format is
/// the one the RocksDB backend reads and writes too.
///
/// # Examples
///
/// ```
/// use typeinfo_state::{BackendOptions, HeapKeyedStateBackend, KeyGroupRange, KeyedStateBackend, ValueStateDescriptor};
///
/// # fn main() -> typeinfo_state::Result<()> {
/// let mut backend = HeapKeyedStateBackend::<String>::new(BackendOptions::new(128, KeyGroupRange::all(128))?)?;
/// let count = backend.value_state::<(), u64>(&ValueStateDescriptor::new("count"))?;
/// backend.set_current_key(&"ada".to_owned())?;
/// count.update(&mut backend, &(), 3)?;
/// assert_eq!(count.value(&mut backend, &())?, Some(3));
/// # Ok(())
/// # }
/// ```
pub struct HeapKeyedStateBackend<K: StateKey> {
    options: BackendOptions,
    key_serializer: K::Serializer,
    key_buf: DataOutputView,
    current: Option<Current<K>>,
    states: Vec<Registered<K>>,
    by_name: HashMap<String, usize>,
}

impl<K: StateKey> std::fmt::Debug for HeapKeyedStateBackend<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HeapKeyedStateBackend")
            .field("max_parallelism", &self.options.max_parallelism)
            .field("range", &self.options.range)
            .field("states", &self.by_name.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl<K: StateKey> HeapKeyedStateBackend<K> {
    /// Makes `key`, of the owned `key_group`, the current key.
    #[inline]
    fn set_current(&mut self, key: &K, key_group: u16) {
        let group = self.options.range.index_of(key_group);
        match &mut self.current {
            Some(current) => {
                current.key.clone_from(key);
                current.key_group = key_group;
                current.group = group;
            }
            None => {
                self.current = Some(Current {
                    key: key.clone(),
                    key_group,
                    group,
                })
            }
        }
    }

    /// Removes every entry, of every state and namespace, in the current key's key group;
    /// the states stay registered. Batch execution keeps one key at a time in a backend and
    /// drops it this way at the key change (Flink's single-key state backend): the cost is
    /// the entries of that key, not a walk over every key group.
    ///
    /// # Errors
    ///
    /// No current key.
    pub fn clear_current_key_group(&mut self) -> Result<()> {
        let group = self.current.as_ref().ok_or(Error::NoCurrentKey)?.group;
        self.states
            .iter_mut()
            .for_each(|s| s.table.clear_group(group));
        Ok(())
    }

    /// A backend with no state.
    ///
    /// # Errors
    ///
    /// The key serializer cannot be created (a disabled generic type).
    pub fn new(options: BackendOptions) -> Result<Self> {
        let key_serializer = K::create_serializer(&options.serializer_config)?;
        Ok(Self {
            options,
            key_serializer,
            key_buf: DataOutputView::with_capacity(64),
            current: None,
            states: Vec::new(),
            by_name: HashMap::new(),
        })
    }

    fn groups(&self) -> usize {
        self.options.range.len()
    }

    fn now(&self) -> i64 {
        self.options.clock.now_ms()
    }

    /// Finds or registers a state; `make` builds it on first registration.
    fn register<S: HeapState<K> + 'static>(
        &mut self,
        name: &str,
        kind: StateKind,
        make: impl FnOnce(usize) -> Result<S>,
    ) -> Result<StateId> {
        if let Some(&index) = self.by_name.get(name) {
            let existing = &self.states[index];
            let same_kind = existing.table.codec().meta().kind == kind;
            if !same_kind || existing.type_id != TypeId::of::<S>() {
                return Err(Error::StateMismatch {
                    state: name.to_owned(),
                    detail: format!(
                        "kind {kind} or types other than its first registration ({})",
                        existing.table.codec().meta().kind
                    ),
                });
            }
            return Ok(StateId(index as u32));
        }
        let state = make(self.groups())?;
        self.states.push(Registered {
            type_id: TypeId::of::<S>(),
            ttl: state.codec().meta().ttl,
            table: Box::new(state),
        });
        self.by_name.insert(name.to_owned(), self.states.len() - 1);
        Ok(StateId((self.states.len() - 1) as u32))
    }

    /// The current key's group and the typed state `id`, running incremental TTL cleanup.
    /// The clock is read only for states with a TTL (`now` is 0 otherwise).
    #[inline]
    fn access<S: 'static>(&mut self, id: StateId) -> Result<(&Current<K>, &mut S, i64)> {
        let current = self.current.as_ref().ok_or(Error::NoCurrentKey)?;
        let Registered {
            table: state,
            type_id,
            ttl,
        } = self
            .states
            .get_mut(id.0 as usize)
            .ok_or_else(|| unknown(id))?;
        if *type_id != TypeId::of::<S>() {
            return Err(wrong_types(&state.codec().meta().name));
        }
        let now = if *ttl {
            let now = self.options.clock.now_ms();
            state.cleanup_incrementally(current.group, now);
            now
        } else {
            0
        };
        let typed = state
            .as_any_mut()
            .downcast_mut::<S>()
            .ok_or_else(|| unknown(id))?;
        Ok((current, typed, now))
    }
}

fn unknown(id: StateId) -> Error {
    Error::StateMismatch {
        state: format!("#{}", id.0),
        detail: "an id this backend never gave out".to_owned(),
    }
}

fn wrong_types(name: &str) -> Error {
    Error::StateMismatch {
        state: name.to_owned(),
        detail: "types other than its registration".to_owned(),
    }
}

impl<K: StateKey> KeyedStateBackend<K> for HeapKeyedStateBackend<K> {
    fn max_parallelism(&self) -> u32 {
        self.options.max_parallelism
    }

    fn key_group_range(&self) -> KeyGroupRange {
        self.options.range
    }

    #[inline]
    fn set_current_key(&mut self, key: &K) -> Result<()> {
        if self.current.as_ref().is_some_and(|c| c.key == *key) {
            // The same key again (every record of a key in turn, in batch execution): its
            // key group is known.
            return Ok(());
        }
        self.key_buf.clear();
        self.key_serializer.serialize(key, &mut self.key_buf)?;
        let key_group = self.options.owned_key_group(self.key_buf.as_slice())?;
        self.set_current(key, key_group);
        Ok(())
    }

    #[inline]
    fn set_current_key_in_group(&mut self, key: &K, key_group: u16) -> Result<()> {
        if self.current.as_ref().is_some_and(|c| c.key == *key) {
            return Ok(());
        }
        // The state is kept by key object: the key's bytes are needed only for the debug
        // build's check that the group is the key's own.
        let bytes = if cfg!(debug_assertions) {
            self.key_buf.clear();
            self.key_serializer.serialize(key, &mut self.key_buf)?;
            Some(self.key_buf.as_slice())
        } else {
            None
        };
        let key_group = self.options.given_key_group(key_group, bytes)?;
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
        let id =
            self.register::<ValueTable<K, N, V>>(&descriptor.name, StateKind::Value, |groups| {
                Ok(Table::new(
                    groups,
                    ValueCodec::new(&descriptor.name, StateKind::Value, ttl.is_some(), &config)?,
                    ttl,
                ))
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
        let id =
            self.register::<ListTable<K, N, V>>(&descriptor.name, StateKind::List, |groups| {
                Ok(Table::new(
                    groups,
                    ValueCodec::new(&descriptor.name, StateKind::List, ttl.is_some(), &config)?,
                    ttl,
                ))
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
        let id =
            self.register::<MapTable<K, N, UK, UV>>(&descriptor.name, StateKind::Map, |groups| {
                Ok(Table::new(
                    groups,
                    MapCodec::new(&descriptor.name, ttl.is_some(), &config)?,
                    ttl,
                ))
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
        let id = self.register::<ValueTable<K, N, V>>(
            &descriptor.name,
            StateKind::Reducing,
            |groups| {
                Ok(Table::new(
                    groups,
                    ValueCodec::new(
                        &descriptor.name,
                        StateKind::Reducing,
                        ttl.is_some(),
                        &config,
                    )?,
                    ttl,
                ))
            },
        )?;
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
        let id = self.register::<ValueTable<K, N, Acc>>(
            &descriptor.name,
            StateKind::Aggregating,
            |groups| {
                Ok(Table::new(
                    groups,
                    ValueCodec::new(
                        &descriptor.name,
                        StateKind::Aggregating,
                        ttl.is_some(),
                        &config,
                    )?,
                    ttl,
                ))
            },
        )?;
        Ok(AggregatingState {
            id,
            function: Arc::clone(&descriptor.function),
            _types: PhantomData,
        })
    }

    #[inline]
    fn value_get<N: StateNamespace, V: StateValue>(
        &mut self,
        state: StateId,
        namespace: &N,
    ) -> Result<Option<V>> {
        let (current, table, now) = self.access::<ValueTable<K, N, V>>(state)?;
        let (group, ttl) = (current.group, table.ttl.clone());
        let Some((value, ts)) = table.groups.get_mut(group, &current.key, namespace) else {
            return Ok(None);
        };
        if on_read(&ttl, ts, now) == Visible::Expired {
            let key = current.key.clone();
            table.remove(group, &key, namespace);
            return Ok(None);
        }
        Ok(Some(table.codec.value.copy(value)))
    }

    fn value_take<N: StateNamespace, V: StateValue>(
        &mut self,
        state: StateId,
        namespace: &N,
    ) -> Result<Option<V>> {
        let (current, table, now) = self.access::<ValueTable<K, N, V>>(state)?;
        let Some((value, mut ts)) = table.groups.remove(current.group, &current.key, namespace)
        else {
            return Ok(None);
        };
        Ok(match on_read(&table.ttl, &mut ts, now) {
            Visible::Expired => None,
            _ => Some(value),
        })
    }

    #[inline]
    fn value_put<N: StateNamespace, V: StateValue>(
        &mut self,
        state: StateId,
        namespace: &N,
        value: V,
    ) -> Result<()> {
        let (current, table, now) = self.access::<ValueTable<K, N, V>>(state)?;
        let ts = stamp(&table.ttl, now);
        table.insert(current.group, &current.key, namespace, (value, ts));
        Ok(())
    }

    #[inline]
    fn value_update<N: StateNamespace, V: StateValue>(
        &mut self,
        state: StateId,
        namespace: &N,
        update: &mut dyn FnMut(Option<&mut V>) -> Option<V>,
    ) -> Result<()> {
        let (current, table, now) = self.access::<ValueTable<K, N, V>>(state)?;
        if table.ttl.is_none() {
            // No TTL: change the live object where it is, or insert the first value where the
            // probe ended (one probe, no copy).
            table.groups.update_or_insert(
                current.group,
                &current.key,
                namespace,
                |slot| match slot {
                    Some((value, _)) => {
                        update(Some(value));
                        None
                    }
                    None => update(None).map(|value| (value, 0)),
                },
            );
            return Ok(());
        }
        let _ = now;
        crate::backend::update_by_get_and_put(self, state, namespace, update)
    }

    fn copy_value<V: StateValue>(&mut self, state: StateId, value: &V) -> Result<V> {
        self.states
            .get(state.0 as usize)
            .ok_or_else(|| unknown(state))?;
        // The namespace type is not known here, so copy through the value's own serializer.
        Ok(V::create_serializer(&self.options.serializer_config)?.copy(value))
    }

    fn list_get<N: StateNamespace, V: StateValue>(
        &mut self,
        state: StateId,
        namespace: &N,
    ) -> Result<Vec<V>> {
        let (current, table, now) = self.access::<ListTable<K, N, V>>(state)?;
        let (group, ttl) = (current.group, table.ttl.clone());
        let key = current.key.clone();
        let Some(list) = table.groups.get_mut(group, &key, namespace) else {
            return Ok(Vec::new());
        };
        list.retain_mut(|(_, ts)| on_read(&ttl, ts, now) == Visible::Yes);
        let out = list
            .iter()
            .map(|(v, _)| table.codec.value.copy(v))
            .collect::<Vec<_>>();
        if out.is_empty() {
            table.remove(group, &key, namespace);
        }
        Ok(out)
    }

    fn list_for_each<N: StateNamespace, V: StateValue>(
        &mut self,
        state: StateId,
        namespace: &N,
        visit: &mut dyn FnMut(&V),
    ) -> Result<()> {
        let (current, table, now) = self.access::<ListTable<K, N, V>>(state)?;
        let (group, ttl) = (current.group, table.ttl.clone());
        let key = current.key.clone();
        let Some(list) = table.groups.get_mut(group, &key, namespace) else {
            return Ok(());
        };
        if ttl.is_some() {
            list.retain_mut(|(_, ts)| on_read(&ttl, ts, now) == Visible::Yes);
        }
        for (value, _) in list.iter() {
            visit(value);
        }
        if list.is_empty() {
            table.remove(group, &key, namespace);
        }
        Ok(())
    }

    fn list_add<N: StateNamespace, V: StateValue>(
        &mut self,
        state: StateId,
        namespace: &N,
        value: V,
    ) -> Result<()> {
        let (current, table, now) = self.access::<ListTable<K, N, V>>(state)?;
        let ts = stamp(&table.ttl, now);
        table
            .groups
            .get_or_insert_with(current.group, &current.key, namespace, Vec::new)
            .push((value, ts));
        Ok(())
    }

    fn list_add_all<N: StateNamespace, V: StateValue>(
        &mut self,
        state: StateId,
        namespace: &N,
        values: Vec<V>,
    ) -> Result<()> {
        if values.is_empty() {
            return Ok(());
        }
        let (current, table, now) = self.access::<ListTable<K, N, V>>(state)?;
        let ts = stamp(&table.ttl, now);
        let values = values.into_iter().map(|v| (v, ts));
        table
            .groups
            .get_or_insert_with(current.group, &current.key, namespace, Vec::new)
            .extend(values);
        Ok(())
    }

    fn list_update<N: StateNamespace, V: StateValue>(
        &mut self,
        state: StateId,
        namespace: &N,
        values: Vec<V>,
    ) -> Result<()> {
        let (current, table, now) = self.access::<ListTable<K, N, V>>(state)?;
        let ts = stamp(&table.ttl, now);
        if values.is_empty() {
            let key = current.key.clone();
            table.remove(current.group, &key, namespace);
            return Ok(());
        }
        table.insert(
            current.group,
            &current.key,
            namespace,
            values.into_iter().map(|v| (v, ts)).collect(),
        );
        Ok(())
    }

    fn map_get<N: StateNamespace, UK: MapKey, UV: StateValue>(
        &mut self,
        state: StateId,
        namespace: &N,
        key: &UK,
    ) -> Result<Option<UV>> {
        let (current, table, now) = self.access::<MapTable<K, N, UK, UV>>(state)?;
        let ttl = table.ttl.clone();
        let Some(map) = table.groups.get_mut(current.group, &current.key, namespace) else {
            return Ok(None);
        };
        let Some((value, ts)) = map.get_mut(key) else {
            return Ok(None);
        };
        if on_read(&ttl, ts, now) == Visible::Expired {
            map.remove(key);
            return Ok(None);
        }
        Ok(Some(table.codec.user_value.copy(value)))
    }

    fn map_put<N: StateNamespace, UK: MapKey, UV: StateValue>(
        &mut self,
        state: StateId,
        namespace: &N,
        key: UK,
        value: UV,
    ) -> Result<()> {
        let (current, table, now) = self.access::<MapTable<K, N, UK, UV>>(state)?;
        let ts = stamp(&table.ttl, now);
        table
            .groups
            .get_or_insert_with(current.group, &current.key, namespace, UserMap::default)
            .insert(key, (value, ts));
        Ok(())
    }

    fn map_remove<N: StateNamespace, UK: MapKey, UV: StateValue>(
        &mut self,
        state: StateId,
        namespace: &N,
        key: &UK,
    ) -> Result<()> {
        let (current, table, _) = self.access::<MapTable<K, N, UK, UV>>(state)?;
        let (group, k) = (current.group, current.key.clone());
        if let Some(map) = table.slot(group, &k, namespace) {
            map.remove(key);
            if map.is_empty() {
                table.remove(group, &k, namespace);
            }
        }
        Ok(())
    }

    fn map_iter<'a, N: StateNamespace, UK: MapKey, UV: StateValue>(
        &'a mut self,
        state: StateId,
        namespace: &N,
    ) -> Result<MapIter<'a, UK, UV>> {
        let (current, table, now) = self.access::<MapTable<K, N, UK, UV>>(state)?;
        let Table {
            groups, codec, ttl, ..
        } = table;
        let Some(map) = groups.get_mut(current.group, &current.key, namespace) else {
            return Ok(MapIter::empty());
        };
        Ok(MapIter::new(HeapMapIter::new(
            map,
            ttl.clone(),
            now,
            (&codec.user_key, &codec.user_value),
        )))
    }

    fn clear<N: StateNamespace>(&mut self, state: StateId, namespace: &N) -> Result<()> {
        let current = self.current.as_ref().ok_or(Error::NoCurrentKey)?;
        let s = self
            .states
            .get_mut(state.0 as usize)
            .map(|r| &mut r.table)
            .ok_or_else(|| unknown(state))?;
        if !s.clear(current.group, &current.key, namespace) {
            return Err(wrong_types(&s.codec().meta().name.clone()));
        }
        Ok(())
    }

    fn keys<N: StateNamespace>(&mut self, state: StateId, namespace: &N) -> Result<Vec<K>> {
        let s = self
            .states
            .get(state.0 as usize)
            .map(|r| &r.table)
            .ok_or_else(|| unknown(state))?;
        let mut out = Vec::new();
        if !s.keys(namespace, &mut out) {
            return Err(wrong_types(&s.codec().meta().name));
        }
        Ok(out)
    }

    fn states(&self) -> Vec<StateMeta> {
        self.states
            .iter()
            .map(|s| s.table.codec().meta().clone())
            .collect()
    }

    fn snapshot(&mut self, path: &Path) -> Result<KeyedSnapshot> {
        let header = SnapshotHeader {
            max_parallelism: self.options.max_parallelism,
            range: self.options.range,
            key: self.key_serializer.snapshot(),
            states: self.states(),
        };
        let now = self.now();
        let mut writer = SnapshotWriter::new(&header)?;
        for (group, key_group) in self.options.range.iter().enumerate() {
            writer.begin_key_group(key_group);
            for (index, state) in self.states.iter().enumerate() {
                writer.state_entries(index, |out| {
                    state
                        .table
                        .write_key_group(group, &self.key_serializer, out, now)
                })?;
            }
        }
        let names: Vec<String> = header.states.iter().map(|s| s.name.clone()).collect();
        writer.finish(path, &names)
    }

    fn restore(&mut self, files: &[&Path]) -> Result<RestoreReport> {
        let (max, range) = (self.options.max_parallelism, self.options.range);
        restore_into(self, files, max, range)
    }
}

impl<K: StateKey> RestoreTarget for HeapKeyedStateBackend<K> {
    fn key_transcoder(
        &self,
        stored: &SerializerSnapshot,
        registry: &SnapshotRegistry,
    ) -> Result<(PartFn, bool)> {
        part_transcoder(&self.key_serializer, stored, registry, "(key)", "key")
    }

    fn state_transcoder(
        &self,
        stored: &StateMeta,
        registry: &SnapshotRegistry,
    ) -> Result<(usize, EntryTranscoder)> {
        let index = *self
            .by_name
            .get(&stored.name)
            .ok_or_else(|| not_registered(&stored.name))?;
        Ok((
            index,
            self.states[index]
                .table
                .codec()
                .transcoder(stored, registry)?,
        ))
    }

    fn ingest(&mut self, state: usize, key_group: u16, key: &[u8], entry: &[u8]) -> Result<()> {
        let key = typeinfo::from_bytes(&self.key_serializer, key)?;
        let group = self.options.range.index_of(key_group);
        self.states[state].table.ingest(group, key, entry)
    }

    fn clear_all(&mut self) -> Result<()> {
        self.states.iter_mut().for_each(|s| s.table.clear_all());
        Ok(())
    }
}

// `TypeInfo` is used through the state traits' bounds.
#[allow(unused_imports)]
use Clock as _;
#[allow(unused_imports)]
use TypeInfo as _;
