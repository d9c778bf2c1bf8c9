//! Bootstrapping an operator's keyed state from a dataset, as Flink's `StateBootstrapTransformation`.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use typeinfo::{DataOutputView, SerializerConfig, TypeInfo, TypeSerializer};
use typeinfo_runtime::checkpoint::{self, TimerState, TimerStateValue};
use typeinfo_runtime::TimeDomain;
use typeinfo_state::{
    key_group_for_bytes, subtask_for_key_group, BackendOptions, HeapKeyedStateBackend,
    KeyedStateBackend, ListStateDescriptor, MapKey, MapStateDescriptor, OperatorStateBackend,
    Redistribution, ReducingStateDescriptor, StateKey, StateNamespace, StateValue,
    ValueStateDescriptor,
};

use crate::error::{Error, Result};

/// The keyed state of one operator, built from datasets of keys and values, to be written
/// into a savepoint by [`SavepointWriter::with_keyed_state`](crate::SavepointWriter::with_keyed_state).
///
/// Each state is registered and filled exactly as a job's operator would do it (a heap
/// backend per subtask, each key routed to the subtask that owns its key group), so the
/// savepoint restores into a job that registers the same states, on either backend, at
/// any parallelism. [`value_state`](Self::value_state), [`list_state`](Self::list_state)
/// and [`map_state`](Self::map_state) fill the namespace `()`, that of keyed process
/// functions and user operators; the `_in` variants take each entry's namespace (a window
/// operator's contents are a state `window-contents` under its windows); [`timers`](Self::timers)
/// adds pending timers, [`with_operator_state`](Self::with_operator_state) the operator's
/// list and broadcast states. A TTL in a descriptor stamps each value with the time it was
/// written. Everything is held in memory until the savepoint is written.
///
/// # Examples
///
/// ```no_run
/// use typeinfo_savepoint::{KeyedStateBootstrap, SavepointWriter};
/// use typeinfo_state::ValueStateDescriptor;
///
/// # fn main() -> typeinfo_savepoint::Result<()> {
/// let mut counts = KeyedStateBootstrap::<String>::new(128, 2)?;
/// counts.value_state(
///     &ValueStateDescriptor::<u64>::new("count"),
///     [("ada".to_owned(), 3), ("bob".to_owned(), 5)],
/// )?;
/// SavepointWriter::new(128)?
///     .with_keyed_state("counter", counts)?
///     .write("bootstrapped".as_ref())?;
/// # Ok(())
/// # }
/// ```
pub struct KeyedStateBootstrap<K: StateKey> {
    name: String,
    max_parallelism: u32,
    backends: Vec<HeapKeyedStateBackend<K>>,
    key_serializer: K::Serializer,
    key_bytes: DataOutputView,
    operator_state: Option<OperatorStateBootstrap>,
}

impl<K: StateKey> std::fmt::Debug for KeyedStateBootstrap<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyedStateBootstrap")
            .field("name", &self.name)
            .field("max_parallelism", &self.max_parallelism)
            .field("parallelism", &self.backends.len())
            .finish_non_exhaustive()
    }
}

impl<K: StateKey> KeyedStateBootstrap<K> {
    /// Keyed state for an operator of `parallelism` subtasks in a job of
    /// `max_parallelism` key groups (the savepoint's).
    ///
    /// # Errors
    ///
    /// [`Error::State`](crate::Error::State) for a max parallelism outside `1..=32768` or a
    /// parallelism above it; a key type without a serializer.
    pub fn new(max_parallelism: u32, parallelism: u32) -> Result<Self> {
        typeinfo_state::key_group::validate(max_parallelism, parallelism)?;
        let backends = (0..parallelism)
            .map(|i| {
                HeapKeyedStateBackend::new(BackendOptions::for_subtask(
                    max_parallelism,
                    parallelism,
                    i,
                )?)
            })
            .collect::<typeinfo_state::Result<Vec<_>>>()?;
        Ok(Self {
            name: "Bootstrap".to_owned(),
            max_parallelism,
            backends,
            key_serializer: K::create_serializer(&SerializerConfig::default())?,
            key_bytes: DataOutputView::new(),
            operator_state: None,
        })
    }

    /// The operator's name in `_metadata` (free text; `Bootstrap` unless set).
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// The max parallelism it was built for.
    pub fn max_parallelism(&self) -> u32 {
        self.max_parallelism
    }

    /// The operator's parallelism.
    pub fn parallelism(&self) -> u32 {
        self.backends.len() as u32
    }

    /// Registers a state on every subtask's backend; returns its handles by subtask.
    fn register<H>(
        &mut self,
        register: impl FnMut(&mut HeapKeyedStateBackend<K>) -> typeinfo_state::Result<H>,
    ) -> Result<Vec<H>> {
        Ok(self
            .backends
            .iter_mut()
            .map(register)
            .collect::<typeinfo_state::Result<Vec<H>>>()?)
    }

    /// Sets `key` current on the backend of the subtask that owns it; returns that subtask.
    fn route(&mut self, key: &K) -> Result<usize> {
        self.key_bytes.clear();
        self.key_serializer.serialize(key, &mut self.key_bytes)?;
        let kg = key_group_for_bytes(self.key_bytes.as_slice(), self.max_parallelism);
        let subtask = subtask_for_key_group(self.max_parallelism, self.parallelism(), kg) as usize;
        self.backends[subtask].set_current_key(key)?;
        Ok(subtask)
    }

    /// Adds value state `descriptor` with one value per key (a key given twice keeps its
    /// last value).
    ///
    /// # Errors
    ///
    /// A state registered before under the same name with another kind or type; a value
    /// that cannot be serialized.
    pub fn value_state<V: StateValue>(
        &mut self,
        descriptor: &ValueStateDescriptor<V>,
        data: impl IntoIterator<Item = (K, V)>,
    ) -> Result<&mut Self> {
        self.value_state_in(descriptor, data.into_iter().map(|(k, v)| (k, (), v)))
    }

    /// Adds value state `descriptor` with one value per key and namespace.
    ///
    /// # Errors
    ///
    /// As [`value_state`](Self::value_state).
    pub fn value_state_in<N: StateNamespace, V: StateValue>(
        &mut self,
        descriptor: &ValueStateDescriptor<V>,
        data: impl IntoIterator<Item = (K, N, V)>,
    ) -> Result<&mut Self> {
        let handles = self.register(|b| b.value_state::<N, V>(descriptor))?;
        for (key, namespace, value) in data {
            let s = self.route(&key)?;
            handles[s].update(&mut self.backends[s], &namespace, value)?;
        }
        Ok(self)
    }

    /// Adds list state `descriptor`: each key's elements (a key given twice gets both
    /// lists, in order).
    ///
    /// # Errors
    ///
    /// As [`value_state`](Self::value_state).
    pub fn list_state<V: StateValue>(
        &mut self,
        descriptor: &ListStateDescriptor<V>,
        data: impl IntoIterator<Item = (K, Vec<V>)>,
    ) -> Result<&mut Self> {
        self.list_state_in(descriptor, data.into_iter().map(|(k, v)| (k, (), v)))
    }

    /// Adds list state `descriptor`: each key's and namespace's elements.
    ///
    /// # Errors
    ///
    /// As [`value_state`](Self::value_state).
    pub fn list_state_in<N: StateNamespace, V: StateValue>(
        &mut self,
        descriptor: &ListStateDescriptor<V>,
        data: impl IntoIterator<Item = (K, N, Vec<V>)>,
    ) -> Result<&mut Self> {
        let handles = self.register(|b| b.list_state::<N, V>(descriptor))?;
        for (key, namespace, values) in data {
            let s = self.route(&key)?;
            handles[s].add_all(&mut self.backends[s], &namespace, values)?;
        }
        Ok(self)
    }

    /// Adds reducing state `descriptor` (a window operator's `reduce` keeps its contents in
    /// one named `window-contents`, namespaced by window): each key's and namespace's
    /// reduced value (a key and namespace given twice are reduced by the descriptor's
    /// function).
    ///
    /// # Errors
    ///
    /// As [`value_state`](Self::value_state).
    pub fn reducing_state_in<N: StateNamespace, V: StateValue>(
        &mut self,
        descriptor: &ReducingStateDescriptor<V>,
        data: impl IntoIterator<Item = (K, N, V)>,
    ) -> Result<&mut Self> {
        let handles = self.register(|b| b.reducing_state::<N, V>(descriptor))?;
        for (key, namespace, value) in data {
            let s = self.route(&key)?;
            handles[s].add(&mut self.backends[s], &namespace, value)?;
        }
        Ok(self)
    }

    /// Adds pending timers, each `(key, namespace, time, domain)`, into the timer state of
    /// an operator of kind `owner` ([`TimerState`]: a window operator's timers are
    /// namespaced by window, the others' by `()`); they fire in the restored job as they
    /// would have in the one that set them. A timer given twice is kept once.
    ///
    /// # Errors
    ///
    /// As [`value_state`](Self::value_state).
    pub fn timers<N>(
        &mut self,
        owner: TimerState,
        data: impl IntoIterator<Item = (K, N, i64, TimeDomain)>,
    ) -> Result<&mut Self>
    where
        N: StateNamespace,
        TimerStateValue<N>: StateValue,
    {
        let descriptor = ValueStateDescriptor::<TimerStateValue<N>>::new(owner.name());
        let handles = self.register(|b| b.value_state::<(), TimerStateValue<N>>(&descriptor))?;
        // Each key's timers gathered first (by the key's bytes), then read, merged and
        // written once per key: linear in the timers, however many a key has.
        let mut by_key: HashMap<Vec<u8>, (K, HashSet<Timer<N>>)> = HashMap::new();
        for (key, namespace, time, domain) in data {
            self.key_bytes.clear();
            self.key_serializer.serialize(&key, &mut self.key_bytes)?;
            let timer = (namespace, time, domain == TimeDomain::EventTime);
            match by_key.get_mut(self.key_bytes.as_slice()) {
                Some((_, timers)) => {
                    timers.insert(timer);
                }
                None => {
                    by_key.insert(
                        self.key_bytes.as_slice().to_vec(),
                        (key, HashSet::from([timer])),
                    );
                }
            }
        }
        for (key, new) in by_key.into_values() {
            let s = self.route(&key)?;
            let backend = &mut self.backends[s];
            let mut timers = handles[s].value(backend, &())?.unwrap_or_default();
            let known: HashSet<Timer<N>> = timers.iter().cloned().collect();
            timers.extend(new.into_iter().filter(|t| !known.contains(t)));
            handles[s].update(backend, &(), timers)?;
        }
        Ok(self)
    }

    /// Gives the operator `state`'s operator state (list and broadcast states) beside its
    /// keyed state.
    ///
    /// # Errors
    ///
    /// [`Error::Refused`] when `state` was built for another parallelism.
    pub fn with_operator_state(mut self, state: OperatorStateBootstrap) -> Result<Self> {
        if state.parallelism() != self.parallelism() {
            return Err(Error::Refused(format!(
                "operator state for parallelism {} beside keyed state for parallelism {}",
                state.parallelism(),
                self.parallelism()
            )));
        }
        self.operator_state = Some(state);
        Ok(self)
    }

    /// Adds map state `descriptor`: one `(key, user key, user value)` per map entry.
    ///
    /// # Errors
    ///
    /// As [`value_state`](Self::value_state).
    pub fn map_state<UK: MapKey, UV: StateValue>(
        &mut self,
        descriptor: &MapStateDescriptor<UK, UV>,
        data: impl IntoIterator<Item = (K, UK, UV)>,
    ) -> Result<&mut Self> {
        let handles = self.register(|b| b.map_state::<(), UK, UV>(descriptor))?;
        for (key, user_key, user_value) in data {
            let s = self.route(&key)?;
            handles[s].put(&mut self.backends[s], &(), user_key, user_value)?;
        }
        Ok(self)
    }
}

/// One timer as a timer state holds it: namespace, time, event time.
type Timer<N> = (N, i64, bool);

/// The operator state of one operator (list and broadcast states), built from data, to be
/// written into a savepoint by [`SavepointWriter::with_operator_state`](crate::SavepointWriter::with_operator_state)
/// (an operator without keyed state) or beside keyed state
/// ([`KeyedStateBootstrap::with_operator_state`]).
///
/// # Examples
///
/// ```
/// use typeinfo_savepoint::OperatorStateBootstrap;
/// use typeinfo_state::Redistribution;
///
/// # fn main() -> typeinfo_savepoint::Result<()> {
/// let mut offsets = OperatorStateBootstrap::new(2)?;
/// offsets.list_state("offsets", Redistribution::Split, [vec![10u64], vec![20]])?;
/// offsets.broadcast_state("rules", [("r0".to_owned(), "alpha".to_owned())])?;
/// # Ok(())
/// # }
/// ```
pub struct OperatorStateBootstrap {
    name: String,
    backends: Vec<OperatorStateBackend>,
}

impl std::fmt::Debug for OperatorStateBootstrap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OperatorStateBootstrap")
            .field("name", &self.name)
            .field("parallelism", &self.backends.len())
            .finish_non_exhaustive()
    }
}

impl OperatorStateBootstrap {
    /// Operator state for an operator of `parallelism` subtasks.
    ///
    /// # Errors
    ///
    /// [`Error::Refused`] for a parallelism of 0 or above 32768.
    pub fn new(parallelism: u32) -> Result<Self> {
        if !(1..=32_768).contains(&parallelism) {
            return Err(Error::Refused(format!(
                "parallelism {parallelism} is outside 1..=32768"
            )));
        }
        Ok(Self {
            name: "Bootstrap".to_owned(),
            backends: (0..parallelism)
                .map(|i| OperatorStateBackend::new(i, parallelism))
                .collect(),
        })
    }

    /// The operator's name in `_metadata` (free text; `Bootstrap` unless set).
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// The operator's parallelism.
    pub fn parallelism(&self) -> u32 {
        self.backends.len() as u32
    }

    /// Adds list state `name`: the `i`-th list goes to subtask `i` modulo the parallelism
    /// (so the lists of a job that ran at the same parallelism stay where they were; a
    /// restore redistributes them by `redistribution` as it does the job's own).
    ///
    /// # Errors
    ///
    /// The name taken by a state of another kind or type; an element that cannot be
    /// serialized.
    pub fn list_state<T: StateValue>(
        &mut self,
        name: &str,
        redistribution: Redistribution,
        per_subtask: impl IntoIterator<Item = Vec<T>>,
    ) -> Result<&mut Self> {
        let handles = self
            .backends
            .iter_mut()
            .map(|b| b.list_state::<T>(name, redistribution))
            .collect::<typeinfo_state::Result<Vec<_>>>()?;
        let parallelism = self.backends.len();
        for (i, items) in per_subtask.into_iter().enumerate() {
            let s = i % parallelism;
            for item in items {
                handles[s].add(&mut self.backends[s], item)?;
            }
        }
        Ok(self)
    }

    /// Adds broadcast state `name` with these entries, on every subtask (a broadcast
    /// state's copies are equal).
    ///
    /// # Errors
    ///
    /// As [`list_state`](Self::list_state).
    pub fn broadcast_state<BK: MapKey, BV: StateValue + Clone>(
        &mut self,
        name: &str,
        entries: impl IntoIterator<Item = (BK, BV)>,
    ) -> Result<&mut Self> {
        let entries: Vec<(BK, BV)> = entries.into_iter().collect();
        for backend in &mut self.backends {
            let state = backend.broadcast_state::<BK, BV>(name)?;
            for (k, v) in &entries {
                state.put(backend, k.clone(), v.clone())?;
            }
        }
        Ok(self)
    }

    /// Writes each subtask's operator state file into the operator's directory `dir`.
    fn write_files(&self, dir: &Path) -> Result<()> {
        for (subtask, backend) in self.backends.iter().enumerate() {
            backend.snapshot(&checkpoint::opstate_path(dir, subtask))?;
        }
        Ok(())
    }
}

/// A bootstrapped operator without its key type, as the writer keeps it.
pub(crate) trait BootstrappedOperator {
    fn name(&self) -> &str;
    fn parallelism(&self) -> u32;
    /// The max parallelism its keyed state was built for (none without keyed state).
    fn max_parallelism(&self) -> Option<u32>;
    /// Writes each subtask's keyed state file into the operator's directory `dir`.
    fn write(&mut self, dir: &Path) -> Result<()>;
}

impl<K: StateKey> BootstrappedOperator for KeyedStateBootstrap<K> {
    fn name(&self) -> &str {
        &self.name
    }
    fn parallelism(&self) -> u32 {
        KeyedStateBootstrap::parallelism(self)
    }
    fn max_parallelism(&self) -> Option<u32> {
        Some(self.max_parallelism)
    }
    fn write(&mut self, dir: &Path) -> Result<()> {
        for (subtask, backend) in self.backends.iter_mut().enumerate() {
            backend.snapshot(&checkpoint::kstate_path(dir, subtask))?;
        }
        if let Some(operator_state) = &self.operator_state {
            operator_state.write_files(dir)?;
        }
        Ok(())
    }
}

impl BootstrappedOperator for OperatorStateBootstrap {
    fn name(&self) -> &str {
        &self.name
    }
    fn parallelism(&self) -> u32 {
        OperatorStateBootstrap::parallelism(self)
    }
    fn max_parallelism(&self) -> Option<u32> {
        None
    }
    fn write(&mut self, dir: &Path) -> Result<()> {
        self.write_files(dir)
    }
}

// `TypeInfo` is used through `K::create_serializer`.
#[allow(unused_imports)]
use TypeInfo as _;
