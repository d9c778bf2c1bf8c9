//! State descriptors (name, type, default, TTL) and the typed handles they register.
//!
//! A handle is a small value that names a registered state; its methods take the backend
//! (`&mut B`) and the namespace. Windows are namespaces; keyed state outside windows uses
//! the unit namespace `()`.

use std::fmt;
use std::hash::Hash;
use std::marker::PhantomData;
use std::sync::Arc;

use typeinfo::{KeyType, TypeInfo};

use crate::backend::{KeyedStateBackend, StateId};
use crate::error::Result;
use crate::ttl::StateTtlConfig;

/// A key of keyed state: a key type (equal keys give equal bytes) that can be hashed.
pub trait StateKey: KeyType + Clone + Eq + Hash + Sync {}
impl<T: KeyType + Clone + Eq + Hash + Sync> StateKey for T {}

/// A namespace of keyed state (a window, or `()`).
pub trait StateNamespace: KeyType + Clone + Eq + Hash + Sync {}
impl<T: KeyType + Clone + Eq + Hash + Sync> StateNamespace for T {}

/// A value kept in state.
pub trait StateValue: TypeInfo + Sync {}
impl<T: TypeInfo + Sync> StateValue for T {}

/// A user key of map state: a key type whose order (`Ord`, the comparator's order) is the
/// map's iteration order.
pub trait MapKey: KeyType + Ord + Clone + Sync {}
impl<T: KeyType + Ord + Clone + Sync> MapKey for T {}

/// Describes a value state.
#[derive(Clone)]
pub struct ValueStateDescriptor<V> {
    pub(crate) name: String,
    pub(crate) default: Option<Arc<V>>,
    pub(crate) ttl: Option<StateTtlConfig>,
}

impl<V> ValueStateDescriptor<V> {
    /// A value state named `name`, without default.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            default: None,
            ttl: None,
        }
    }

    /// The value returned when none is stored.
    pub fn with_default(mut self, default: V) -> Self {
        self.default = Some(Arc::new(default));
        self
    }

    /// Gives the state a time to live.
    pub fn with_ttl(mut self, ttl: StateTtlConfig) -> Self {
        self.ttl = Some(ttl);
        self
    }
}

/// Describes a list state.
#[derive(Debug, Clone)]
pub struct ListStateDescriptor<V> {
    pub(crate) name: String,
    pub(crate) ttl: Option<StateTtlConfig>,
    _value: PhantomData<fn() -> V>,
}

impl<V> ListStateDescriptor<V> {
    /// A list state named `name`.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            ttl: None,
            _value: PhantomData,
        }
    }

    /// Gives each element a time to live.
    pub fn with_ttl(mut self, ttl: StateTtlConfig) -> Self {
        self.ttl = Some(ttl);
        self
    }
}

/// Describes a map state; iteration follows the user key's order.
#[derive(Debug, Clone)]
pub struct MapStateDescriptor<UK, UV> {
    pub(crate) name: String,
    pub(crate) ttl: Option<StateTtlConfig>,
    _types: PhantomData<fn() -> (UK, UV)>,
}

impl<UK, UV> MapStateDescriptor<UK, UV> {
    /// A map state named `name`.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            ttl: None,
            _types: PhantomData,
        }
    }

    /// Gives each entry a time to live.
    pub fn with_ttl(mut self, ttl: StateTtlConfig) -> Self {
        self.ttl = Some(ttl);
        self
    }
}

/// Combines two values into one (reducing state).
pub type ReduceFn<V> = Arc<dyn Fn(&V, &V) -> V + Send + Sync>;

/// Describes a reducing state: added values are combined with the reduce function.
#[derive(Clone)]
pub struct ReducingStateDescriptor<V> {
    pub(crate) name: String,
    pub(crate) reduce: ReduceFn<V>,
    pub(crate) ttl: Option<StateTtlConfig>,
}

impl<V> ReducingStateDescriptor<V> {
    /// A reducing state named `name`.
    pub fn new(
        name: impl Into<String>,
        reduce: impl Fn(&V, &V) -> V + Send + Sync + 'static,
    ) -> Self {
        Self {
            name: name.into(),
            reduce: Arc::new(reduce),
            ttl: None,
        }
    }

    /// Gives the state a time to live.
    pub fn with_ttl(mut self, ttl: StateTtlConfig) -> Self {
        self.ttl = Some(ttl);
        self
    }
}

/// An aggregation with an accumulator of its own type, as Flink's `AggregateFunction`.
pub trait AggregateFunction<In, Acc, Out>: Send + Sync {
    /// A fresh accumulator.
    fn create_accumulator(&self) -> Acc;
    /// Adds a value to the accumulator.
    fn add(&self, value: &In, accumulator: &mut Acc);
    /// The result of an accumulator.
    fn get_result(&self, accumulator: &Acc) -> Out;
    /// Merges two accumulators (merging windows).
    fn merge(&self, a: Acc, b: Acc) -> Acc;
}

/// Describes an aggregating state: values go in, results come out, the accumulator is kept.
pub struct AggregatingStateDescriptor<In, Acc, Out> {
    pub(crate) name: String,
    pub(crate) function: Arc<dyn AggregateFunction<In, Acc, Out>>,
    pub(crate) ttl: Option<StateTtlConfig>,
}

impl<In, Acc, Out> Clone for AggregatingStateDescriptor<In, Acc, Out> {
    fn clone(&self) -> Self {
        Self {
            name: self.name.clone(),
            function: Arc::clone(&self.function),
            ttl: self.ttl.clone(),
        }
    }
}

impl<In, Acc, Out> AggregatingStateDescriptor<In, Acc, Out> {
    /// An aggregating state named `name`.
    pub fn new(
        name: impl Into<String>,
        function: impl AggregateFunction<In, Acc, Out> + 'static,
    ) -> Self {
        Self {
            name: name.into(),
            function: Arc::new(function),
            ttl: None,
        }
    }

    /// Gives the accumulator a time to live.
    pub fn with_ttl(mut self, ttl: StateTtlConfig) -> Self {
        self.ttl = Some(ttl);
        self
    }
}

macro_rules! debug_named {
    ($($ty:ident<$($p:ident),*>),*) => {$(
        impl<$($p),*> fmt::Debug for $ty<$($p),*> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_struct(stringify!($ty)).field("name", &self.name).field("ttl", &self.ttl).finish_non_exhaustive()
            }
        }
    )*};
}
debug_named!(ValueStateDescriptor<V>, ReducingStateDescriptor<V>, AggregatingStateDescriptor<In, Acc, Out>);

/// A registered value state.
pub struct ValueState<N, V> {
    pub(crate) id: StateId,
    pub(crate) default: Option<Arc<V>>,
    pub(crate) _types: PhantomData<fn() -> N>,
}

/// A registered list state.
pub struct ListState<N, V> {
    pub(crate) id: StateId,
    pub(crate) _types: PhantomData<fn() -> (N, V)>,
}

/// A registered map state.
pub struct MapState<N, UK, UV> {
    pub(crate) id: StateId,
    pub(crate) _types: PhantomData<fn() -> (N, UK, UV)>,
}

/// A registered reducing state.
pub struct ReducingState<N, V> {
    pub(crate) id: StateId,
    pub(crate) reduce: ReduceFn<V>,
    pub(crate) _types: PhantomData<fn() -> N>,
}

/// A registered aggregating state.
pub struct AggregatingState<N, In, Acc, Out> {
    pub(crate) id: StateId,
    pub(crate) function: Arc<dyn AggregateFunction<In, Acc, Out>>,
    pub(crate) _types: PhantomData<fn() -> N>,
}

macro_rules! handle_common {
    ($($ty:ident<$($p:ident),*> { $($extra:ident),* }),*) => {$(
        impl<$($p),*> Clone for $ty<$($p),*> {
            fn clone(&self) -> Self {
                Self { id: self.id, $($extra: self.$extra.clone(),)* _types: PhantomData }
            }
        }
        impl<$($p),*> fmt::Debug for $ty<$($p),*> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_struct(stringify!($ty)).field("id", &self.id).finish_non_exhaustive()
            }
        }
        impl<$($p),*> $ty<$($p),*> {
            /// The state's id in its backend.
            pub fn id(&self) -> StateId {
                self.id
            }
        }
    )*};
}
handle_common!(
    ValueState < N,
    V > { default },
    ListState < N,
    V > {},
    MapState < N,
    UK,
    UV > {},
    ReducingState < N,
    V > { reduce },
    AggregatingState < N,
    In,
    Acc,
    Out > { function }
);

impl<N: StateNamespace, V: StateValue> ValueState<N, V> {
    /// The value of the current key in `namespace`, or the descriptor's default.
    ///
    /// # Errors
    ///
    /// No current key; a backend or serialization error.
    pub fn value<K: StateKey, B: KeyedStateBackend<K> + ?Sized>(
        &self,
        backend: &mut B,
        namespace: &N,
    ) -> Result<Option<V>> {
        match backend.value_get::<N, V>(self.id, namespace)? {
            Some(v) => Ok(Some(v)),
            None => Ok(match &self.default {
                Some(d) => Some(backend.copy_value::<V>(self.id, d)?),
                None => None,
            }),
        }
    }

    /// Sets the value of the current key in `namespace`.
    ///
    /// # Errors
    ///
    /// No current key; a backend or serialization error.
    pub fn update<K: StateKey, B: KeyedStateBackend<K> + ?Sized>(
        &self,
        backend: &mut B,
        namespace: &N,
        value: V,
    ) -> Result<()> {
        backend.value_put(self.id, namespace, value)
    }

    /// Removes the value of the current key in `namespace`.
    ///
    /// # Errors
    ///
    /// No current key; a backend error.
    pub fn clear<K: StateKey, B: KeyedStateBackend<K> + ?Sized>(
        &self,
        backend: &mut B,
        namespace: &N,
    ) -> Result<()> {
        backend.clear(self.id, namespace)
    }
}

impl<N: StateNamespace, V: StateValue> ListState<N, V> {
    /// The elements of the current key in `namespace` (empty when none).
    ///
    /// # Errors
    ///
    /// No current key; a backend or serialization error.
    pub fn get<K: StateKey, B: KeyedStateBackend<K> + ?Sized>(
        &self,
        backend: &mut B,
        namespace: &N,
    ) -> Result<Vec<V>> {
        backend.list_get(self.id, namespace)
    }

    /// Appends an element.
    ///
    /// # Errors
    ///
    /// No current key; a backend or serialization error.
    pub fn add<K: StateKey, B: KeyedStateBackend<K> + ?Sized>(
        &self,
        backend: &mut B,
        namespace: &N,
        value: V,
    ) -> Result<()> {
        backend.list_add(self.id, namespace, value)
    }

    /// Replaces the elements.
    ///
    /// # Errors
    ///
    /// No current key; a backend or serialization error.
    pub fn update<K: StateKey, B: KeyedStateBackend<K> + ?Sized>(
        &self,
        backend: &mut B,
        namespace: &N,
        values: Vec<V>,
    ) -> Result<()> {
        backend.list_update(self.id, namespace, values)
    }

    /// Removes every element.
    ///
    /// # Errors
    ///
    /// No current key; a backend error.
    pub fn clear<K: StateKey, B: KeyedStateBackend<K> + ?Sized>(
        &self,
        backend: &mut B,
        namespace: &N,
    ) -> Result<()> {
        backend.clear(self.id, namespace)
    }

    /// Appends the elements of `sources` to `target` and clears the sources (merging windows).
    ///
    /// # Errors
    ///
    /// No current key; a backend or serialization error.
    pub fn merge_namespaces<K: StateKey, B: KeyedStateBackend<K> + ?Sized>(
        &self,
        backend: &mut B,
        target: &N,
        sources: &[N],
    ) -> Result<()> {
        let mut merged = Vec::new();
        for source in sources.iter().filter(|s| *s != target) {
            merged.extend(backend.list_get::<N, V>(self.id, source)?);
            backend.clear(self.id, source)?;
        }
        if merged.is_empty() {
            return Ok(());
        }
        let mut values = backend.list_get::<N, V>(self.id, target)?;
        values.extend(merged);
        backend.list_update(self.id, target, values)
    }
}

impl<N: StateNamespace, UK: MapKey, UV: StateValue> MapState<N, UK, UV> {
    /// The value of `key`.
    ///
    /// # Errors
    ///
    /// No current key; a backend or serialization error.
    pub fn get<K: StateKey, B: KeyedStateBackend<K> + ?Sized>(
        &self,
        backend: &mut B,
        namespace: &N,
        key: &UK,
    ) -> Result<Option<UV>> {
        backend.map_get(self.id, namespace, key)
    }

    /// Sets the value of `key`.
    ///
    /// # Errors
    ///
    /// No current key; a backend or serialization error.
    pub fn put<K: StateKey, B: KeyedStateBackend<K> + ?Sized>(
        &self,
        backend: &mut B,
        namespace: &N,
        key: UK,
        value: UV,
    ) -> Result<()> {
        backend.map_put(self.id, namespace, key, value)
    }

    /// Removes `key`.
    ///
    /// # Errors
    ///
    /// No current key; a backend error.
    pub fn remove<K: StateKey, B: KeyedStateBackend<K> + ?Sized>(
        &self,
        backend: &mut B,
        namespace: &N,
        key: &UK,
    ) -> Result<()> {
        backend.map_remove::<N, UK, UV>(self.id, namespace, key)
    }

    /// Whether `key` has a value.
    ///
    /// # Errors
    ///
    /// No current key; a backend or serialization error.
    pub fn contains<K: StateKey, B: KeyedStateBackend<K> + ?Sized>(
        &self,
        backend: &mut B,
        namespace: &N,
        key: &UK,
    ) -> Result<bool> {
        Ok(self.get(backend, namespace, key)?.is_some())
    }

    /// Every entry, in the user key's order.
    ///
    /// # Errors
    ///
    /// No current key; a backend or serialization error.
    pub fn entries<K: StateKey, B: KeyedStateBackend<K> + ?Sized>(
        &self,
        backend: &mut B,
        namespace: &N,
    ) -> Result<Vec<(UK, UV)>> {
        backend.map_entries(self.id, namespace)
    }

    /// Whether the map is empty.
    ///
    /// # Errors
    ///
    /// No current key; a backend or serialization error.
    pub fn is_empty<K: StateKey, B: KeyedStateBackend<K> + ?Sized>(
        &self,
        backend: &mut B,
        namespace: &N,
    ) -> Result<bool> {
        Ok(self.entries(backend, namespace)?.is_empty())
    }

    /// Removes every entry.
    ///
    /// # Errors
    ///
    /// No current key; a backend error.
    pub fn clear<K: StateKey, B: KeyedStateBackend<K> + ?Sized>(
        &self,
        backend: &mut B,
        namespace: &N,
    ) -> Result<()> {
        backend.clear(self.id, namespace)
    }
}

impl<N: StateNamespace, V: StateValue> ReducingState<N, V> {
    /// The reduced value.
    ///
    /// # Errors
    ///
    /// No current key; a backend or serialization error.
    pub fn get<K: StateKey, B: KeyedStateBackend<K> + ?Sized>(
        &self,
        backend: &mut B,
        namespace: &N,
    ) -> Result<Option<V>> {
        backend.value_get(self.id, namespace)
    }

    /// Reduces `value` into the state.
    ///
    /// # Errors
    ///
    /// No current key; a backend or serialization error.
    pub fn add<K: StateKey, B: KeyedStateBackend<K> + ?Sized>(
        &self,
        backend: &mut B,
        namespace: &N,
        value: V,
    ) -> Result<()> {
        let next = match backend.value_get::<N, V>(self.id, namespace)? {
            Some(current) => (self.reduce)(&current, &value),
            None => value,
        };
        backend.value_put(self.id, namespace, next)
    }

    /// Removes the value.
    ///
    /// # Errors
    ///
    /// No current key; a backend error.
    pub fn clear<K: StateKey, B: KeyedStateBackend<K> + ?Sized>(
        &self,
        backend: &mut B,
        namespace: &N,
    ) -> Result<()> {
        backend.clear(self.id, namespace)
    }

    /// Reduces the values of `sources` into `target` and clears the sources.
    ///
    /// # Errors
    ///
    /// No current key; a backend or serialization error.
    pub fn merge_namespaces<K: StateKey, B: KeyedStateBackend<K> + ?Sized>(
        &self,
        backend: &mut B,
        target: &N,
        sources: &[N],
    ) -> Result<()> {
        let mut merged = backend.value_get::<N, V>(self.id, target)?;
        for source in sources.iter().filter(|s| *s != target) {
            if let Some(v) = backend.value_get::<N, V>(self.id, source)? {
                merged = Some(match merged {
                    Some(m) => (self.reduce)(&m, &v),
                    None => v,
                });
                backend.clear(self.id, source)?;
            }
        }
        match merged {
            Some(m) => backend.value_put(self.id, target, m),
            None => Ok(()),
        }
    }
}

impl<N: StateNamespace, In, Acc: StateValue, Out> AggregatingState<N, In, Acc, Out> {
    /// The result of the accumulator, if there is one.
    ///
    /// # Errors
    ///
    /// No current key; a backend or serialization error.
    pub fn get<K: StateKey, B: KeyedStateBackend<K> + ?Sized>(
        &self,
        backend: &mut B,
        namespace: &N,
    ) -> Result<Option<Out>> {
        Ok(backend
            .value_get::<N, Acc>(self.id, namespace)?
            .map(|acc| self.function.get_result(&acc)))
    }

    /// The accumulator itself.
    ///
    /// # Errors
    ///
    /// No current key; a backend or serialization error.
    pub fn accumulator<K: StateKey, B: KeyedStateBackend<K> + ?Sized>(
        &self,
        backend: &mut B,
        namespace: &N,
    ) -> Result<Option<Acc>> {
        backend.value_get::<N, Acc>(self.id, namespace)
    }

    /// Adds `value` to the accumulator (creating it first if needed).
    ///
    /// # Errors
    ///
    /// No current key; a backend or serialization error.
    pub fn add<K: StateKey, B: KeyedStateBackend<K> + ?Sized>(
        &self,
        backend: &mut B,
        namespace: &N,
        value: &In,
    ) -> Result<()> {
        backend.value_update::<N, Acc>(self.id, namespace, &mut |acc| match acc {
            Some(acc) => {
                self.function.add(value, acc);
                None
            }
            None => {
                let mut acc = self.function.create_accumulator();
                self.function.add(value, &mut acc);
                Some(acc)
            }
        })
    }

    /// Removes the accumulator.
    ///
    /// # Errors
    ///
    /// No current key; a backend error.
    pub fn clear<K: StateKey, B: KeyedStateBackend<K> + ?Sized>(
        &self,
        backend: &mut B,
        namespace: &N,
    ) -> Result<()> {
        backend.clear(self.id, namespace)
    }

    /// Merges the accumulators of `sources` into `target` and clears the sources.
    ///
    /// # Errors
    ///
    /// No current key; a backend or serialization error.
    pub fn merge_namespaces<K: StateKey, B: KeyedStateBackend<K> + ?Sized>(
        &self,
        backend: &mut B,
        target: &N,
        sources: &[N],
    ) -> Result<()> {
        let mut merged = backend.value_get::<N, Acc>(self.id, target)?;
        for source in sources.iter().filter(|s| *s != target) {
            if let Some(acc) = backend.value_get::<N, Acc>(self.id, source)? {
                merged = Some(match merged {
                    Some(m) => self.function.merge(m, acc),
                    None => acc,
                });
                backend.clear(self.id, source)?;
            }
        }
        match merged {
            Some(m) => backend.value_put(self.id, target, m),
            None => Ok(()),
        }
    }
}
