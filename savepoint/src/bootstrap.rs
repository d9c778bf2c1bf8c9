//! Bootstrapping an operator's keyed state from a dataset, as Flink's `StateBootstrapTransformation`.

use std::path::Path;

use typeinfo::{DataOutputView, SerializerConfig, TypeInfo, TypeSerializer};
use typeinfo_runtime::checkpoint;
use typeinfo_state::{
    key_group_for_bytes, subtask_for_key_group, BackendOptions, HeapKeyedStateBackend,
    KeyedStateBackend, ListStateDescriptor, MapKey, MapStateDescriptor, StateKey, StateValue,
    ValueStateDescriptor,
};

use crate::error::Result;

/// The keyed state of one operator, built from datasets of keys and values, to be written
/// into a savepoint by [`SavepointWriter::with_keyed_state`](crate::SavepointWriter::with_keyed_state).
///
/// Each state is registered and filled exactly as a job's operator would do it (a heap
/// backend per subtask, each key routed to the subtask that owns its key group), so the
/// savepoint restores into a job that registers the same states, on either backend, at
/// any parallelism. States are in the namespace `()`, that of keyed process functions and
/// user operators (not of window contents); a TTL in a descriptor stamps each value with
/// the time it was written. Everything is held in memory until the savepoint is written.
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
        let handles = self.register(|b| b.value_state::<(), V>(descriptor))?;
        for (key, value) in data {
            let s = self.route(&key)?;
            handles[s].update(&mut self.backends[s], &(), value)?;
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
        let handles = self.register(|b| b.list_state::<(), V>(descriptor))?;
        for (key, values) in data {
            let s = self.route(&key)?;
            handles[s].add_all(&mut self.backends[s], &(), values)?;
        }
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

/// A bootstrapped operator without its key type, as the writer keeps it.
pub(crate) trait BootstrappedOperator {
    fn name(&self) -> &str;
    fn parallelism(&self) -> u32;
    fn max_parallelism(&self) -> u32;
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
    fn max_parallelism(&self) -> u32 {
        self.max_parallelism
    }
    fn write(&mut self, dir: &Path) -> Result<()> {
        for (subtask, backend) in self.backends.iter_mut().enumerate() {
            backend.snapshot(&checkpoint::kstate_path(dir, subtask))?;
        }
        Ok(())
    }
}

// `TypeInfo` is used through `K::create_serializer`.
#[allow(unused_imports)]
use TypeInfo as _;
