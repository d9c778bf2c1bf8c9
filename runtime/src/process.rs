//! Keyed process functions: per-record logic with keyed state and timers.

use std::sync::Arc;

use typeinfo_state::KeyedStateBackend;

use crate::backend::KeyedBackend;
use crate::channel::NO_TIMESTAMP;
use crate::checkpoint::OperatorPart;
use crate::context::{OutputTag, RuntimeContext};
use crate::error::{Error, Result};
use crate::operator::{now_ms, Operator, OperatorSetup, Outputs, SideRecord};
use crate::timer::KeyedTimers;
use crate::{Data, Key};

/// Which clock a timer follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeDomain {
    /// Event time: fires when the watermark reaches the timer.
    EventTime,
    /// Processing time: fires when the wall clock reaches the timer.
    ProcessingTime,
}

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

/// What a keyed process function sees: the key, time, state, timers and its output.
pub struct KeyedContext<'a, K: Key, O> {
    key: &'a K,
    timestamp: i64,
    watermark: i64,
    backend: &'a mut KeyedBackend<K>,
    timers: &'a mut KeyedTimers<K, ()>,
    out: &'a mut Vec<(i64, O)>,
    tagged: &'a mut Vec<(i64, SideRecord)>,
    runtime: &'a RuntimeContext,
}

impl<K: Key, O> std::fmt::Debug for KeyedContext<'_, K, O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyedContext")
            .field("timestamp", &self.timestamp())
            .field("watermark", &self.watermark)
            .finish_non_exhaustive()
    }
}

impl<K: Key, O> KeyedContext<'_, K, O> {
    /// The current key.
    pub fn key(&self) -> &K {
        self.key
    }
    /// The event timestamp of the current record or event-time timer.
    pub fn timestamp(&self) -> Option<i64> {
        (self.timestamp != NO_TIMESTAMP).then_some(self.timestamp)
    }
    /// The operator's current watermark.
    pub fn current_watermark(&self) -> i64 {
        self.watermark
    }
    /// The wall clock in ms since the Unix epoch.
    pub fn current_processing_time(&self) -> i64 {
        now_ms()
    }
    /// The keyed state, scoped to the current key.
    pub fn state(&mut self) -> &mut KeyedBackend<K> {
        self.backend
    }
    /// Registers an event-time timer of the current key (once per time).
    pub fn register_event_time_timer(&mut self, time: i64) {
        self.timers.event.register(self.key, &(), time);
    }
    /// Deletes an event-time timer of the current key.
    pub fn delete_event_time_timer(&mut self, time: i64) {
        self.timers.event.delete(self.key, &(), time);
    }
    /// Registers a processing-time timer of the current key (once per time).
    pub fn register_processing_time_timer(&mut self, time: i64) {
        self.timers.processing.register(self.key, &(), time);
    }
    /// Deletes a processing-time timer of the current key.
    pub fn delete_processing_time_timer(&mut self, time: i64) {
        self.timers.processing.delete(self.key, &(), time);
    }
    /// Emits a record with the current record's (or event-time timer's) timestamp.
    pub fn collect(&mut self, value: O) {
        self.out.push((self.timestamp, value));
    }
    /// Emits a record with `timestamp`.
    pub fn collect_with_timestamp(&mut self, value: O, timestamp: i64) {
        self.out.push((timestamp, value));
    }
    /// Emits `value` to the side output `tag` (read it with
    /// [`DataStream::side_output`](crate::DataStream::side_output) on this function's result).
    ///
    /// # Errors
    ///
    /// The tag's type has no serializer, or refuses the value.
    pub fn output<S: Data>(&mut self, tag: &OutputTag<S>, value: S) -> Result<()> {
        let bytes = tag.encode(&value)?;
        self.tagged
            .push((self.timestamp, (tag.id().to_owned(), bytes)));
        Ok(())
    }
    /// Where the function runs: subtask index, parallelism, job name, metrics.
    pub fn runtime(&self) -> &RuntimeContext {
        self.runtime
    }
}

pub(crate) struct KeyedProcessOperator<K: Key, I, O, F> {
    function: F,
    key_selector: Arc<dyn Fn(&I) -> K + Send + Sync>,
    backend: KeyedBackend<K>,
    timers: KeyedTimers<K, ()>,
    watermark: i64,
    out: Vec<(i64, O)>,
    tagged: Vec<(i64, SideRecord)>,
    runtime: RuntimeContext,
    setup: OperatorSetup,
}

impl<K: Key, I: Data, O: Data, F: KeyedProcessFunction<K, I, O>> KeyedProcessOperator<K, I, O, F> {
    pub(crate) fn new(
        setup: &OperatorSetup,
        mut function: F,
        key_selector: Arc<dyn Fn(&I) -> K + Send + Sync>,
    ) -> Result<Self> {
        let mut backend = setup.keyed_backend::<K>()?;
        function.open(&mut backend)?;
        let timers = KeyedTimers::new(&mut backend, "process-timers")?;
        Ok(KeyedProcessOperator {
            function,
            key_selector,
            backend,
            timers,
            watermark: i64::MIN,
            out: Vec::new(),
            tagged: Vec::new(),
            runtime: RuntimeContext::new(setup),
            setup: setup.clone(),
        })
    }

    fn ship(&mut self, out: &mut Outputs<O, I>) {
        for (ts, v) in self.out.drain(..) {
            out.main.collect(ts, v);
        }
        for (ts, v) in self.tagged.drain(..) {
            out.tagged.collect(ts, v);
        }
    }

    fn fire(
        &mut self,
        time: i64,
        key: K,
        domain: TimeDomain,
        out: &mut Outputs<O, I>,
    ) -> Result<()> {
        self.backend.set_current_key(&key).map_err(Error::from)?;
        let mut ctx = KeyedContext {
            key: &key,
            timestamp: if domain == TimeDomain::EventTime {
                time
            } else {
                NO_TIMESTAMP
            },
            watermark: self.watermark,
            backend: &mut self.backend,
            timers: &mut self.timers,
            out: &mut self.out,
            tagged: &mut self.tagged,
            runtime: &self.runtime,
        };
        self.function.on_timer(time, domain, &mut ctx)?;
        self.ship(out);
        Ok(())
    }
}

impl<K: Key, I: Data, O: Data, F: KeyedProcessFunction<K, I, O>> Operator<I, O>
    for KeyedProcessOperator<K, I, O, F>
{
    fn process(&mut self, ts: i64, value: I, out: &mut Outputs<O, I>) -> Result<()> {
        let key = (self.key_selector)(&value);
        self.backend.set_current_key(&key)?;
        let mut ctx = KeyedContext {
            key: &key,
            timestamp: ts,
            watermark: self.watermark,
            backend: &mut self.backend,
            timers: &mut self.timers,
            out: &mut self.out,
            tagged: &mut self.tagged,
            runtime: &self.runtime,
        };
        self.function.process_element(value, &mut ctx)?;
        self.ship(out);
        Ok(())
    }

    fn watermark(&mut self, watermark: i64, out: &mut Outputs<O, I>) -> Result<()> {
        self.watermark = watermark;
        while let Some((time, key, ())) = self.timers.event.pop_due(watermark) {
            self.fire(time, key, TimeDomain::EventTime, out)?;
        }
        out.watermark(watermark);
        Ok(())
    }

    fn next_processing_time(&self) -> Option<i64> {
        self.timers.processing.earliest()
    }

    fn processing_time(&mut self, now: i64, out: &mut Outputs<O, I>) -> Result<()> {
        while let Some((time, key, ())) = self.timers.processing.pop_due(now) {
            self.fire(time, key, TimeDomain::ProcessingTime, out)?;
        }
        Ok(())
    }

    fn finish(&mut self, out: &mut Outputs<O, I>) -> Result<()> {
        while let Some((time, key, ())) = self.timers.processing.pop_due(i64::MAX) {
            self.fire(time, key, TimeDomain::ProcessingTime, out)?;
        }
        Ok(())
    }

    fn snapshot(&mut self, _epoch: u64, kstate: &std::path::Path) -> Result<Vec<u8>> {
        self.timers.snapshot(&mut self.backend, kstate)?;
        Ok(Vec::new())
    }

    fn restore(&mut self, keyed: &[std::path::PathBuf], parts: &[OperatorPart]) -> Result<()> {
        self.watermark = self
            .timers
            .restore(&mut self.backend, keyed, parts, &self.setup)?;
        Ok(())
    }
}
