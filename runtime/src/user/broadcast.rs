//! What users implement for the broadcast state pattern: the broadcast process functions, their
//! contexts, the broadcast state and its descriptor; with the operators that run them.

use std::marker::PhantomData;
use std::sync::Arc;

use typeinfo_state::{
    BroadcastState, KeyedBackend, KeyedStateBackend, MapKey, OperatorStateBackend,
    ReadOnlyBroadcastState, StateId, StateValue,
};

use crate::error::{Error, Result};
use crate::operator::context::{OutputTag, RuntimeContext, TimeDomain};
use crate::types::{Data, Key};
use crate::user::one_input::{OneInputOperator, OperatorContext, StateContext};
use crate::user::two_input::CoInput;

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

pub(crate) type Declarations = Arc<[Arc<dyn BroadcastStateDeclaration>]>;

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
/// [`KeyedContext`](crate::user::keyed_process::KeyedContext)'s).
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
pub(crate) struct BroadcastOperator<F> {
    pub(crate) function: F,
    pub(crate) states: Declarations,
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
pub(crate) struct NonKeyed<F>(pub(crate) BroadcastOperator<F>);

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
pub(crate) struct Keyed<F>(pub(crate) BroadcastOperator<F>);

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
