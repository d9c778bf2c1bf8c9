//! State descriptors (name, type, default, TTL) and the typed handles they register.
//!
//! A handle is a small value that names a registered state; its methods (in `handles.rs`)
//! take the backend (`&mut B`) and the namespace. Windows are namespaces; keyed state outside windows uses
//! the unit namespace `()`.

use std::fmt;
use std::hash::Hash;
use std::marker::PhantomData;
use std::sync::Arc;

use typeinfo::{KeyType, TypeInfo};

use crate::meta::StateId;
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
/// map's iteration order. `Hash` because the heap backend keeps a large map state's entries
/// in a hash table (one probe per `get` and `put`, as Flink's heap backend does).
pub trait MapKey: KeyType + Ord + Eq + Hash + Clone + Sync {}
impl<T: KeyType + Ord + Eq + Hash + Clone + Sync> MapKey for T {}

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
    #[allow(clippy::type_complexity)] // a marker of three type parameters
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
