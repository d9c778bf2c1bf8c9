//! Keyed process functions: per-record logic with keyed state and timers, run as a keyed
//! [`OneInputOperator`].

use typeinfo_state::KeyedBackend;

use crate::error::Result;
use crate::operator::context::{OutputTag, RuntimeContext, TimeDomain};
use crate::types::{Data, Key};
use crate::user::one_input::{OneInputOperator, OperatorContext, StateContext};

/// Per-record logic on a keyed stream, as Flink's `KeyedProcessFunction`.
///
/// Each subtask gets its own clone. Register state in [`open`](Self::open) and keep the
/// handles; use them on [`KeyedContext::state`], which is scoped to the current key.
pub trait KeyedProcessFunction<K: Key, I, O>: Send + Sync + 'static {
    /// Called once per subtask before the first record.
    ///
    /// # Errors
    ///
    /// A state that cannot be registered.
    fn open(&mut self, _state: &mut KeyedBackend<K>) -> Result<()> {
        Ok(())
    }

    /// Processes one record of the current key.
    ///
    /// # Errors
    ///
    /// Any error fails the job, naming the operator.
    fn process_element(&mut self, value: I, ctx: &mut KeyedContext<'_, K, O>) -> Result<()>;

    /// A timer of the current key fired.
    ///
    /// # Errors
    ///
    /// Any error fails the job, naming the operator.
    fn on_timer(
        &mut self,
        _timestamp: i64,
        _domain: TimeDomain,
        _ctx: &mut KeyedContext<'_, K, O>,
    ) -> Result<()> {
        Ok(())
    }
}

/// What a keyed process function sees: the key, time, state, timers and its output (a
/// keyed [`OperatorContext`] with the key always set).
pub struct KeyedContext<'a, K: Key, O> {
    inner: OperatorContext<'a, K, O>,
}

impl<K: Key, O> std::fmt::Debug for KeyedContext<'_, K, O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyedContext")
            .field("context", &self.inner)
            .finish()
    }
}

impl<K: Key, O> KeyedContext<'_, K, O> {
    /// The current key.
    pub fn key(&self) -> &K {
        match self.inner.current_key() {
            Some(key) => key,
            // A keyed process function is only called for a record or a timer of a key.
            None => unreachable!("a keyed process function runs with a key"),
        }
    }
    /// The event timestamp of the current record or event-time timer.
    pub fn timestamp(&self) -> Option<i64> {
        self.inner.timestamp()
    }
    /// The operator's current watermark.
    pub fn current_watermark(&self) -> i64 {
        self.inner.current_watermark()
    }
    /// The wall clock in ms since the Unix epoch.
    pub fn current_processing_time(&self) -> i64 {
        self.inner.current_processing_time()
    }
    /// The keyed state, scoped to the current key.
    pub fn state(&mut self) -> &mut KeyedBackend<K> {
        match self.inner.keyed_state() {
            Ok(backend) => backend,
            Err(_) => unreachable!("a keyed process function runs on a keyed stream"),
        }
    }
    /// Registers an event-time timer of the current key (once per time).
    pub fn register_event_time_timer(&mut self, time: i64) {
        // Cannot fail: the context is keyed.
        let _ = self.inner.register_event_time_timer(time);
    }
    /// Deletes an event-time timer of the current key.
    pub fn delete_event_time_timer(&mut self, time: i64) {
        let _ = self.inner.delete_event_time_timer(time);
    }
    /// Registers a processing-time timer of the current key (once per time).
    pub fn register_processing_time_timer(&mut self, time: i64) {
        let _ = self.inner.register_processing_time_timer(time);
    }
    /// Deletes a processing-time timer of the current key.
    pub fn delete_processing_time_timer(&mut self, time: i64) {
        let _ = self.inner.delete_processing_time_timer(time);
    }
    /// Emits a record with the current record's (or event-time timer's) timestamp.
    pub fn collect(&mut self, value: O) {
        self.inner.collect(value);
    }
    /// Emits a record with `timestamp`.
    pub fn collect_with_timestamp(&mut self, value: O, timestamp: i64) {
        self.inner.collect_with_timestamp(value, timestamp);
    }
    /// Emits `value` to the side output `tag` (read it with
    /// [`DataStream::side_output`](crate::api::handles::DataStream::side_output) on this function's result).
    ///
    /// # Errors
    ///
    /// The tag's type has no serializer, or refuses the value.
    pub fn output<S: Data>(&mut self, tag: &OutputTag<S>, value: S) -> Result<()> {
        self.inner.output(tag, value)
    }
    /// Where the function runs: subtask index, parallelism, job name, metrics.
    pub fn runtime(&self) -> &RuntimeContext {
        self.inner.runtime()
    }
}

/// A [`KeyedProcessFunction`] as a keyed operator (its timers keep the state name
/// `process-timers` of checkpoints written before operators were public).
#[derive(Clone)]
pub(crate) struct KeyedProcessFunctionOperator<F>(pub(crate) F);

impl<K: Key, I, O, F: KeyedProcessFunction<K, I, O>> OneInputOperator<K, I, O>
    for KeyedProcessFunctionOperator<F>
{
    fn initialize_state(&mut self, ctx: &mut StateContext<'_, K>) -> Result<()> {
        self.0.open(ctx.keyed_state()?)
    }
    fn process_element(&mut self, value: I, ctx: &mut OperatorContext<'_, K, O>) -> Result<()> {
        self.0.process_element(
            value,
            &mut KeyedContext {
                inner: ctx.reborrow(),
            },
        )
    }
    fn on_timer(
        &mut self,
        timestamp: i64,
        domain: TimeDomain,
        ctx: &mut OperatorContext<'_, K, O>,
    ) -> Result<()> {
        self.0.on_timer(
            timestamp,
            domain,
            &mut KeyedContext {
                inner: ctx.reborrow(),
            },
        )
    }
}
