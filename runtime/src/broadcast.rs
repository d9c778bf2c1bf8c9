//! The broadcast state pattern, as Flink's: one input (rules, thresholds, a dimension table)
//! is sent to every subtask of an operator and kept in **broadcast state**, a map every
//! subtask holds a copy of; the other input (keyed or not) is processed against it.
//!
//! - `rules.broadcast_with(&[&descriptor])` declares the broadcast states and gives a
//!   [`BroadcastStream`] (Flink's `broadcast(MapStateDescriptor...)`; the name differs from
//!   Flink's because [`DataStream::broadcast`] already is the plain broadcast partitioner).
//! - `keyed.connect(&rules).process(f)` runs a [`KeyedBroadcastProcessFunction`];
//!   `stream.connect(&rules).process(f)` (a non-keyed stream) a [`BroadcastProcessFunction`].
//! - The broadcast side ([`process_broadcast_element`](KeyedBroadcastProcessFunction::process_broadcast_element))
//!   reads and writes the broadcast state ([`BroadcastContext::broadcast_state`]) and can
//!   visit every key's keyed state ([`BroadcastContext::apply_to_keyed_state`]); the other
//!   side reads it only ([`ReadOnlyContext::broadcast_state`]), as in Flink, so that every
//!   subtask's copy stays the same: each subtask receives every broadcast record, and the
//!   function must update the state the same way on each (deterministically, from the
//!   record alone).
//! - **Checkpoints** hold each subtask's copy; a **restore** gives every new subtask a copy,
//!   at any parallelism (Flink does the same; the copies are equal, so which one does not
//!   matter). A broadcast state must be declared in `broadcast_with` to be used: that is how
//!   the operator knows to restore it.
//! - **Event time**: the operator's watermark is the minimum of both inputs', as for every
//!   two-input operator here. A broadcast input that never sends watermarks (no
//!   [`WatermarkStrategy`](crate::WatermarkStrategy)) holds event time back until it ends; give
//!   it one, or mark it idle with
//!   [`WatermarkStrategy::with_idleness`](crate::WatermarkStrategy::with_idleness).
//! - **Order between the inputs** is not defined (as in Flink): a record of the keyed side may
//!   arrive before the broadcast record it needs; buffer it in keyed state when that matters.
//!   In **batch mode** the operator gets the whole broadcast input first (Flink's batch
//!   mode reads a broadcast input before the other one), then the other side: key by key
//!   when it is keyed, in timestamp order (arrival order among equal timestamps) when not.
//!
//! # Examples
//!
//! Transactions checked against a per-currency limit that a control stream can change:
//!
//! ```
//! use typeinfo_runtime::{
//!     BroadcastContext, BroadcastStateDescriptor, KeyedBroadcastProcessFunction,
//!     ReadOnlyContext, StreamExecutionEnvironment,
//! };
//!
//! #[derive(Clone)]
//! struct OverLimit(BroadcastStateDescriptor<String, i64>);
//!
//! impl KeyedBroadcastProcessFunction<String, (String, i64), (String, i64), String> for OverLimit {
//!     // A transaction (currency, amount): read-only access to the limits.
//!     fn process_element(&mut self, t: (String, i64), ctx: &mut ReadOnlyContext<'_, String, String>) -> typeinfo_runtime::Result<()> {
//!         if let Some(&limit) = ctx.broadcast_state(&self.0)?.get(&t.0) {
//!             if t.1 > limit {
//!                 ctx.collect(format!("{} {} over {limit}", t.0, t.1));
//!             }
//!         }
//!         Ok(())
//!     }
//!     // A new limit (currency, limit): every subtask stores it.
//!     fn process_broadcast_element(&mut self, l: (String, i64), ctx: &mut BroadcastContext<'_, String, String>) -> typeinfo_runtime::Result<()> {
//!         ctx.broadcast_state(&self.0)?.put(l.0, l.1)
//!     }
//! }
//!
//! # fn main() -> typeinfo_runtime::Result<()> {
//! let env = StreamExecutionEnvironment::new();
//! env.set_runtime_mode(typeinfo_runtime::RuntimeMode::Batch); // limits first, for a fixed result
//! let limits = BroadcastStateDescriptor::<String, i64>::new("limits");
//! let rules = env
//!     .from_collection(vec![("eur".to_owned(), 100i64), ("usd".to_owned(), 50)])
//!     .broadcast_with(&[&limits]);
//! let flagged = env
//!     .from_collection(vec![("eur".to_owned(), 120i64), ("usd".to_owned(), 20), ("usd".to_owned(), 70)])
//!     .key_by(|t: &(String, i64)| t.0.clone())
//!     .connect(&rules)
//!     .process(OverLimit(limits))
//!     .collect();
//! env.execute("limits")?;
//! let mut flagged = flagged.take();
//! flagged.sort();
//! assert_eq!(flagged, ["eur 120 over 100", "usd 70 over 50"]);
//! # Ok(())
//! # }
//! ```

use std::marker::PhantomData;
use std::sync::Arc;

use typeinfo_state::{
    BroadcastState, KeyedBackend, KeyedStateBackend, MapKey, OperatorStateBackend,
    ReadOnlyBroadcastState, StateId, StateValue,
};

use crate::connect::{CoInput, ConnectWith};
use crate::context::{OutputTag, RuntimeContext, TimeDomain};
use crate::error::{Error, Result};
use crate::operator::KeyOf;
use crate::stream::{DataStream, KeyedStream};
use crate::transform::{OneInputOperator, OperatorContext, StateContext};
use crate::{Data, Key};

/// Declares a broadcast state: its name and its key and value types (Flink declares one with
/// a `MapStateDescriptor`). Hand it to [`DataStream::broadcast_with`] and keep it to reach
/// the state from the function's contexts.
pub struct BroadcastStateDescriptor<K, V> {
    name: String,
    _types: PhantomData<fn() -> (K, V)>,
}

impl<K, V> BroadcastStateDescriptor<K, V> {
    /// A broadcast state named `name` (its identity in checkpoints and savepoints).
    pub fn new(name: impl Into<String>) -> Self {
        BroadcastStateDescriptor {
            name: name.into(),
            _types: PhantomData,
        }
    }

    /// The state's name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl<K, V> Clone for BroadcastStateDescriptor<K, V> {
    fn clone(&self) -> Self {
        BroadcastStateDescriptor::new(self.name.clone())
    }
}

impl<K, V> std::fmt::Debug for BroadcastStateDescriptor<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BroadcastStateDescriptor")
            .field("name", &self.name)
            .field("key", &std::any::type_name::<K>())
            .field("value", &std::any::type_name::<V>())
            .finish()
    }
}

/// A broadcast state as [`DataStream::broadcast_with`] takes it: a
/// [`BroadcastStateDescriptor`] of any key and value types.
pub trait BroadcastStateDeclaration: Send + Sync + 'static {
    /// The state's name.
    fn state_name(&self) -> &str;

    /// Registers the state in an operator's state backend.
    ///
    /// # Errors
    ///
    /// The name is taken by a state of another kind or other types.
    fn register(&self, backend: &mut OperatorStateBackend) -> Result<()>;

    /// A shared copy of the declaration (the broadcast stream keeps it).
    fn shared(&self) -> Arc<dyn BroadcastStateDeclaration>;
}

impl<K: MapKey + 'static, V: StateValue + 'static> BroadcastStateDeclaration
    for BroadcastStateDescriptor<K, V>
{
    fn state_name(&self) -> &str {
        &self.name
    }

    fn register(&self, backend: &mut OperatorStateBackend) -> Result<()> {
        backend.broadcast_state::<K, V>(&self.name)?;
        Ok(())
    }

    fn shared(&self) -> Arc<dyn BroadcastStateDeclaration> {
        Arc::new(self.clone())
    }
}

type Declarations = Arc<[Arc<dyn BroadcastStateDeclaration>]>;

/// A stream whose records go to every subtask of the operator it is connected to, with the
/// broadcast states that operator keeps ([`DataStream::broadcast_with`]).
pub struct BroadcastStream<T> {
    stream: DataStream<T>,
    states: Declarations,
}

impl<T> Clone for BroadcastStream<T> {
    fn clone(&self) -> Self {
        BroadcastStream {
            stream: self.stream.clone(),
            states: Arc::clone(&self.states),
        }
    }
}

impl<T> std::fmt::Debug for BroadcastStream<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BroadcastStream")
            .field("stream", &self.stream)
            .field(
                "states",
                &self
                    .states
                    .iter()
                    .map(|s| s.state_name())
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl<T: Data> DataStream<T> {
    /// This stream as the broadcast input of the broadcast state pattern (see the
    /// [`broadcast`](crate::broadcast) module): connect a keyed or non-keyed stream to it.
    /// `states` are the broadcast states the connected operator keeps.
    pub fn broadcast_with(&self, states: &[&dyn BroadcastStateDeclaration]) -> BroadcastStream<T> {
        BroadcastStream {
            stream: self.clone(),
            states: states.iter().map(|s| s.shared()).collect(),
        }
    }
}

impl<B: Data> BroadcastStream<B> {
    /// The broadcast input tagged as the second input, sent to every subtask.
    fn tagged<A: Data>(&self) -> DataStream<CoInput<A, B>> {
        self.stream
            .map(CoInput::<A, B>::Second)
            .name("Connect (broadcast input)")
            .broadcast()
    }
}

impl<A: Data, B: Data> ConnectWith<A> for BroadcastStream<B> {
    type Connected = BroadcastConnectedStreams<A, B>;

    fn connected_to(&self, first: &DataStream<A>) -> Self::Connected {
        BroadcastConnectedStreams {
            first: first.clone(),
            broadcast: self.clone(),
        }
    }
}

/// A non-keyed stream connected to a [`BroadcastStream`] (`stream.connect(&broadcast)`).
pub struct BroadcastConnectedStreams<A, B> {
    first: DataStream<A>,
    broadcast: BroadcastStream<B>,
}

impl<A, B> std::fmt::Debug for BroadcastConnectedStreams<A, B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BroadcastConnectedStreams")
            .field("first", &self.first)
            .field("broadcast", &self.broadcast)
            .finish()
    }
}

impl<A: Data, B: Data> BroadcastConnectedStreams<A, B> {
    /// Runs a [`BroadcastProcessFunction`] on both inputs.
    pub fn process<O: Data, F: BroadcastProcessFunction<A, B, O> + Clone>(
        &self,
        function: F,
    ) -> DataStream<O> {
        let first = self
            .first
            .map(CoInput::<A, B>::First)
            .name("Connect (input 1)");
        let held = KeyOf::Partly(Arc::new(|record: &CoInput<A, B>| match record {
            CoInput::First(_) => Some(()),
            CoInput::Second(_) => None,
        }));
        first
            .union(&[self.broadcast.tagged()])
            .transform_after_unkeyed(
                "Broadcast Process",
                format!("BroadcastProcess ({})", std::any::type_name::<F>()),
                held,
                NonKeyed(BroadcastOperator {
                    function,
                    states: Arc::clone(&self.broadcast.states),
                }),
            )
    }
}

impl<K: Key, A: Data> KeyedStream<K, A> {
    /// Connects this keyed stream to a [`BroadcastStream`], for a
    /// [`KeyedBroadcastProcessFunction`] (see the [`broadcast`](crate::broadcast) module).
    pub fn connect<B: Data>(
        &self,
        broadcast: &BroadcastStream<B>,
    ) -> KeyedBroadcastConnectedStreams<K, A, B> {
        KeyedBroadcastConnectedStreams {
            keyed: KeyedStream::clone(self),
            broadcast: broadcast.clone(),
        }
    }
}

/// A keyed stream connected to a [`BroadcastStream`] (`keyed.connect(&broadcast)`).
pub struct KeyedBroadcastConnectedStreams<K, A, B> {
    keyed: KeyedStream<K, A>,
    broadcast: BroadcastStream<B>,
}

impl<K, A, B> std::fmt::Debug for KeyedBroadcastConnectedStreams<K, A, B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyedBroadcastConnectedStreams")
            .field("keyed", &self.keyed)
            .field("broadcast", &self.broadcast)
            .finish()
    }
}

impl<K: Key, A: Data, B: Data> KeyedBroadcastConnectedStreams<K, A, B> {
    /// Runs a [`KeyedBroadcastProcessFunction`]: the keyed input partitioned by its key (with
    /// the key's state and timers), the broadcast input to every subtask.
    pub fn process<O: Data, F: KeyedBroadcastProcessFunction<K, A, B, O> + Clone>(
        &self,
        function: F,
    ) -> DataStream<O> {
        let (stream, key) = self.keyed.parts();
        let selector = KeyOf::Partly(Arc::new(move |record: &CoInput<A, B>| match record {
            CoInput::First(a) => Some(key(a)),
            CoInput::Second(_) => None,
        }));
        let first = stream
            .map(CoInput::<A, B>::First)
            .name("Connect (input 1)")
            .partitioned_by_key(selector.clone());
        first.union(&[self.broadcast.tagged()]).transform_keyed(
            "Keyed Broadcast Process",
            format!("KeyedBroadcastProcess ({})", std::any::type_name::<F>()),
            selector,
            Keyed(BroadcastOperator {
                function,
                states: Arc::clone(&self.broadcast.states),
            }),
        )
    }
}

/// The function of a non-keyed stream connected to a broadcast stream (Flink's
/// `BroadcastProcessFunction`).
pub trait BroadcastProcessFunction<A, B, O>: Send + Sync + 'static {
    /// Called once per subtask before the first record.
    ///
    /// # Errors
    ///
    /// An error fails the job.
    fn open(&mut self, _ctx: &RuntimeContext) -> Result<()> {
        Ok(())
    }

    /// A record of the non-broadcast input: the broadcast state is read-only here.
    ///
    /// # Errors
    ///
    /// An error fails the job (or restarts it, by its restart strategy).
    fn process_element(&mut self, value: A, ctx: &mut ReadOnlyContext<'_, (), O>) -> Result<()>;

    /// A record of the broadcast input (every subtask gets each one): read and write the
    /// broadcast state here.
    ///
    /// # Errors
    ///
    /// An error fails the job (or restarts it, by its restart strategy).
    fn process_broadcast_element(
        &mut self,
        value: B,
        ctx: &mut BroadcastContext<'_, (), O>,
    ) -> Result<()>;
}

/// The function of a keyed stream connected to a broadcast stream (Flink's
/// `KeyedBroadcastProcessFunction`): keyed state and timers on the keyed side, broadcast
/// state on both (writable on the broadcast side only).
pub trait KeyedBroadcastProcessFunction<K: Key, A, B, O>: Send + Sync + 'static {
    /// Called once per subtask before the first record: register keyed state here (the
    /// broadcast states are those of [`DataStream::broadcast_with`]).
    ///
    /// # Errors
    ///
    /// An error fails the job.
    fn open(&mut self, _state: &mut KeyedBackend<K>) -> Result<()> {
        Ok(())
    }

    /// A record of the keyed input, with its key current: keyed state, timers, and the
    /// broadcast state read-only.
    ///
    /// # Errors
    ///
    /// An error fails the job (or restarts it, by its restart strategy).
    fn process_element(&mut self, value: A, ctx: &mut ReadOnlyContext<'_, K, O>) -> Result<()>;

    /// A record of the broadcast input (every subtask gets each one), outside any key: read
    /// and write the broadcast state, visit every key's state with
    /// [`BroadcastContext::apply_to_keyed_state`].
    ///
    /// # Errors
    ///
    /// An error fails the job (or restarts it, by its restart strategy).
    fn process_broadcast_element(
        &mut self,
        value: B,
        ctx: &mut BroadcastContext<'_, K, O>,
    ) -> Result<()>;

    /// A timer of the current key fired.
    ///
    /// # Errors
    ///
    /// An error fails the job (or restarts it, by its restart strategy).
    fn on_timer(
        &mut self,
        _timestamp: i64,
        _domain: TimeDomain,
        _ctx: &mut ReadOnlyContext<'_, K, O>,
    ) -> Result<()> {
        Ok(())
    }
}

/// The declared state named `name`, or an error naming the undeclared one.
fn declared<'s>(
    states: &'s [Arc<dyn BroadcastStateDeclaration>],
    name: &str,
    operator: &str,
) -> Result<&'s dyn BroadcastStateDeclaration> {
    states
        .iter()
        .find(|s| s.state_name() == name)
        .map(|s| s.as_ref())
        .ok_or_else(|| {
            Error::Config(format!(
                "operator `{operator}` uses broadcast state `{name}`, which its broadcast \
                 stream does not declare (list it in `broadcast_with`)"
            ))
        })
}

/// What the non-broadcast side sees (Flink's `ReadOnlyContext`): its output, time, the
/// current key's state and timers (keyed), and the broadcast state read-only.
pub struct ReadOnlyContext<'a, K: Key, O> {
    inner: OperatorContext<'a, K, O>,
    states: &'a [Arc<dyn BroadcastStateDeclaration>],
}

impl<K: Key, O> std::fmt::Debug for ReadOnlyContext<'_, K, O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadOnlyContext")
            .field("context", &self.inner)
            .finish()
    }
}

impl<K: Key, O> ReadOnlyContext<'_, K, O> {
    /// The broadcast state `descriptor` declares, read-only.
    ///
    /// # Errors
    ///
    /// The broadcast stream does not declare it, or declares other types under its name.
    pub fn broadcast_state<BK: MapKey, BV: StateValue>(
        &mut self,
        descriptor: &BroadcastStateDescriptor<BK, BV>,
    ) -> Result<ReadOnlyBroadcastState<'_, BK, BV>> {
        declared(
            self.states,
            descriptor.name(),
            self.inner.runtime().operator_name(),
        )?;
        let backend = self.inner.operator_state();
        let handle: BroadcastState<BK, BV> = backend.broadcast_state(descriptor.name())?;
        Ok(handle.read_only(backend)?)
    }
    /// The current key (on a keyed stream).
    pub fn current_key(&self) -> Option<&K> {
        self.inner.current_key()
    }
    /// The keyed state, scoped to the current key.
    ///
    /// # Errors
    ///
    /// The function is not on a keyed stream.
    pub fn state(&mut self) -> Result<&mut KeyedBackend<K>> {
        self.inner.keyed_state()
    }
    /// Registers an event-time timer of the current key.
    ///
    /// # Errors
    ///
    /// The function is not on a keyed stream.
    pub fn register_event_time_timer(&mut self, time: i64) -> Result<()> {
        self.inner.register_event_time_timer(time)
    }
    /// Deletes an event-time timer of the current key.
    ///
    /// # Errors
    ///
    /// The function is not on a keyed stream.
    pub fn delete_event_time_timer(&mut self, time: i64) -> Result<()> {
        self.inner.delete_event_time_timer(time)
    }
    /// Registers a processing-time timer of the current key.
    ///
    /// # Errors
    ///
    /// The function is not on a keyed stream.
    pub fn register_processing_time_timer(&mut self, time: i64) -> Result<()> {
        self.inner.register_processing_time_timer(time)
    }
    /// Deletes a processing-time timer of the current key.
    ///
    /// # Errors
    ///
    /// The function is not on a keyed stream.
    pub fn delete_processing_time_timer(&mut self, time: i64) -> Result<()> {
        self.inner.delete_processing_time_timer(time)
    }
}

/// What the broadcast side sees (Flink's `Context` of a broadcast process function): its
/// output, time, the broadcast state read-write, and every key's state.
pub struct BroadcastContext<'a, K: Key, O> {
    inner: OperatorContext<'a, K, O>,
    states: &'a [Arc<dyn BroadcastStateDeclaration>],
}

impl<K: Key, O> std::fmt::Debug for BroadcastContext<'_, K, O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BroadcastContext")
            .field("context", &self.inner)
            .finish()
    }
}

impl<K: Key, O> BroadcastContext<'_, K, O> {
    /// The broadcast state `descriptor` declares, to read and write.
    ///
    /// # Errors
    ///
    /// The broadcast stream does not declare it, or declares other types under its name.
    pub fn broadcast_state<BK: MapKey, BV: StateValue>(
        &mut self,
        descriptor: &BroadcastStateDescriptor<BK, BV>,
    ) -> Result<WritableBroadcastState<'_, BK, BV>> {
        declared(
            self.states,
            descriptor.name(),
            self.inner.runtime().operator_name(),
        )?;
        let backend = self.inner.operator_state();
        let handle = backend.broadcast_state(descriptor.name())?;
        Ok(WritableBroadcastState { handle, backend })
    }

    /// Calls `f` with every key that has a value in the keyed state `state` (the id of a
    /// handle registered in [`open`](KeyedBroadcastProcessFunction::open)), with that key
    /// current in the keyed state `f` gets (Flink's `applyToKeyedState`): to update or clear
    /// every key's state when a broadcast record says so. Only the keys of this subtask are
    /// visited.
    ///
    /// # Errors
    ///
    /// The function is not on a keyed stream, a state error, or the first error of `f`.
    pub fn apply_to_keyed_state(
        &mut self,
        state: StateId,
        mut f: impl FnMut(&K, &mut KeyedBackend<K>) -> Result<()>,
    ) -> Result<()> {
        let backend = self.inner.keyed_state()?;
        for key in backend.keys(state, &())? {
            backend.set_current_key(&key)?;
            f(&key, backend)?;
        }
        Ok(())
    }
}

/// The output, time and runtime methods both broadcast contexts have (the same as a
/// [`KeyedContext`](crate::KeyedContext)'s).
macro_rules! output_and_time {
    ($context:ident) => {
        impl<K: Key, O> $context<'_, K, O> {
            /// Emits a record with the current record's (or event-time timer's) timestamp.
            pub fn collect(&mut self, value: O) {
                self.inner.collect(value);
            }
            /// Emits a record with `timestamp`.
            pub fn collect_with_timestamp(&mut self, value: O, timestamp: i64) {
                self.inner.collect_with_timestamp(value, timestamp);
            }
            /// Emits `value` to the side output `tag`.
            ///
            /// # Errors
            ///
            /// The tag's type has no serializer, or refuses the value.
            pub fn output<S: Data>(&mut self, tag: &OutputTag<S>, value: S) -> Result<()> {
                self.inner.output(tag, value)
            }
            /// The event timestamp of the current record or event-time timer.
            pub fn timestamp(&self) -> Option<i64> {
                self.inner.timestamp()
            }
            /// The operator's watermark (the minimum of both inputs').
            pub fn current_watermark(&self) -> i64 {
                self.inner.current_watermark()
            }
            /// The wall clock in ms since the Unix epoch.
            pub fn current_processing_time(&self) -> i64 {
                self.inner.current_processing_time()
            }
            /// Where the function runs: subtask index, parallelism, job name, metrics.
            pub fn runtime(&self) -> &RuntimeContext {
                self.inner.runtime()
            }
        }
    };
}

output_and_time!(ReadOnlyContext);
output_and_time!(BroadcastContext);

/// A broadcast state open for writing ([`BroadcastContext::broadcast_state`]).
pub struct WritableBroadcastState<'a, K, V> {
    handle: BroadcastState<K, V>,
    backend: &'a mut OperatorStateBackend,
}

impl<K, V> std::fmt::Debug for WritableBroadcastState<'_, K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WritableBroadcastState")
            .finish_non_exhaustive()
    }
}

impl<K: MapKey, V: StateValue> WritableBroadcastState<'_, K, V> {
    /// Sets the value of `key`.
    ///
    /// # Errors
    ///
    /// A state error.
    pub fn put(&mut self, key: K, value: V) -> Result<()> {
        Ok(self.handle.put(self.backend, key, value)?)
    }
    /// Sets the value of every key of `entries`, in order.
    ///
    /// # Errors
    ///
    /// A state error.
    pub fn put_all(&mut self, entries: impl IntoIterator<Item = (K, V)>) -> Result<()> {
        Ok(self.handle.put_all(self.backend, entries)?)
    }
    /// Removes `key`.
    ///
    /// # Errors
    ///
    /// A state error.
    pub fn remove(&mut self, key: &K) -> Result<()> {
        Ok(self.handle.remove(self.backend, key)?)
    }
    /// Removes every entry.
    ///
    /// # Errors
    ///
    /// A state error.
    pub fn clear(&mut self) -> Result<()> {
        Ok(self.handle.clear(self.backend)?)
    }
    /// The state to read (`get`, `contains`, `entries` in key order).
    ///
    /// # Errors
    ///
    /// A state error.
    pub fn view(&mut self) -> Result<ReadOnlyBroadcastState<'_, K, V>> {
        Ok(self.handle.read_only(self.backend)?)
    }
}

/// The operator of both broadcast functions: registers the declared broadcast states before
/// the restore, and hands each input's records to the function with its context.
#[derive(Clone)]
struct BroadcastOperator<F> {
    function: F,
    states: Declarations,
}

impl<F> BroadcastOperator<F> {
    fn register<K: Key>(&self, ctx: &mut StateContext<'_, K>) -> Result<()> {
        for state in self.states.iter() {
            state.register(ctx.operator_state())?;
        }
        Ok(())
    }

    /// Hands a record to the function's method for its input, with that input's context.
    fn dispatch<K: Key, A, B, O>(
        &mut self,
        value: CoInput<A, B>,
        ctx: &mut OperatorContext<'_, K, O>,
        element: impl FnOnce(&mut F, A, &mut ReadOnlyContext<'_, K, O>) -> Result<()>,
        broadcast: impl FnOnce(&mut F, B, &mut BroadcastContext<'_, K, O>) -> Result<()>,
    ) -> Result<()> {
        let (inner, states) = (ctx.reborrow(), &*self.states);
        match value {
            CoInput::First(a) => element(
                &mut self.function,
                a,
                &mut ReadOnlyContext { inner, states },
            ),
            CoInput::Second(b) => broadcast(
                &mut self.function,
                b,
                &mut BroadcastContext { inner, states },
            ),
        }
    }
}

/// A [`BroadcastProcessFunction`]'s operator.
#[derive(Clone)]
struct NonKeyed<F>(BroadcastOperator<F>);

impl<A, B, O, F: BroadcastProcessFunction<A, B, O>> OneInputOperator<(), CoInput<A, B>, O>
    for NonKeyed<F>
{
    fn initialize_state(&mut self, ctx: &mut StateContext<'_, ()>) -> Result<()> {
        self.0.register(ctx)
    }
    fn open(&mut self, ctx: &mut StateContext<'_, ()>) -> Result<()> {
        self.0.function.open(ctx.runtime())
    }
    fn process_element(
        &mut self,
        value: CoInput<A, B>,
        ctx: &mut OperatorContext<'_, (), O>,
    ) -> Result<()> {
        self.0.dispatch(
            value,
            ctx,
            |f, a, ctx| f.process_element(a, ctx),
            |f, b, ctx| f.process_broadcast_element(b, ctx),
        )
    }
}

/// A [`KeyedBroadcastProcessFunction`]'s operator.
#[derive(Clone)]
struct Keyed<F>(BroadcastOperator<F>);

impl<K: Key, A, B, O, F: KeyedBroadcastProcessFunction<K, A, B, O>>
    OneInputOperator<K, CoInput<A, B>, O> for Keyed<F>
{
    fn initialize_state(&mut self, ctx: &mut StateContext<'_, K>) -> Result<()> {
        self.0.register(ctx)?;
        self.0.function.open(ctx.keyed_state()?)
    }
    fn process_element(
        &mut self,
        value: CoInput<A, B>,
        ctx: &mut OperatorContext<'_, K, O>,
    ) -> Result<()> {
        self.0.dispatch(
            value,
            ctx,
            |f, a, ctx| f.process_element(a, ctx),
            |f, b, ctx| f.process_broadcast_element(b, ctx),
        )
    }
    fn on_timer(
        &mut self,
        timestamp: i64,
        domain: TimeDomain,
        ctx: &mut OperatorContext<'_, K, O>,
    ) -> Result<()> {
        let op = &mut self.0;
        op.function.on_timer(
            timestamp,
            domain,
            &mut ReadOnlyContext {
                inner: ctx.reborrow(),
                states: &op.states,
            },
        )
    }
}
