//! Users' own operators and functions: [`OneInputOperator`] (for
//! [`DataStream::transform`](crate::api::handles::DataStream::transform) and
//! [`KeyedStream::transform`](crate::api::handles::KeyedStream::transform)), the non-keyed
//! [`ProcessFunction`], and the [`RuntimeContext`] every one of them can read.
//!
//! An operator sees each record with its timestamp, the watermark, its own timers (on a
//! keyed stream: per key, as Flink's timer service), keyed state scoped to the current key
//! (on a keyed stream) and operator state (list state split or united on rescale, broadcast
//! state; the state crate's [`OperatorStateBackend`]). Both kinds of state are written into
//! every checkpoint and restored (rescaled) with the job.
//!
//! The life of an operator on one subtask: [`initialize_state`](OneInputOperator::initialize_state)
//! registers its states (their restored contents are there from the next call on),
//! [`open`](OneInputOperator::open), then records, watermarks and timers, a
//! [`snapshot_state`](OneInputOperator::snapshot_state) before each checkpoint, and
//! [`end_input`](OneInputOperator::end_input) when a bounded input ends.
//!
//! ```
//! use typeinfo_runtime::{
//!     OneInputOperator, OperatorContext, StateContext, StreamExecutionEnvironment,
//! };
//! use typeinfo_state::{OperatorListState, Redistribution};
//!
//! /// Numbers each record per subtask; the count survives restarts and rescaling.
//! #[derive(Clone, Default)]
//! struct Numbering {
//!     seen: Option<OperatorListState<u64>>,
//!     count: u64,
//! }
//!
//! impl OneInputOperator<(), String, (u64, String)> for Numbering {
//!     fn initialize_state(&mut self, ctx: &mut StateContext<'_, ()>) -> typeinfo_runtime::Result<()> {
//!         self.seen = Some(ctx.operator_state().list_state("seen", Redistribution::Split)?);
//!         Ok(())
//!     }
//!     fn open(&mut self, ctx: &mut StateContext<'_, ()>) -> typeinfo_runtime::Result<()> {
//!         if let Some(seen) = &self.seen {
//!             self.count = seen.get(ctx.operator_state())?.iter().sum();
//!         }
//!         Ok(())
//!     }
//!     fn process_element(
//!         &mut self,
//!         line: String,
//!         ctx: &mut OperatorContext<'_, (), (u64, String)>,
//!     ) -> typeinfo_runtime::Result<()> {
//!         self.count += 1;
//!         ctx.collect((self.count, line));
//!         Ok(())
//!     }
//!     fn snapshot_state(&mut self, _checkpoint: u64, ctx: &mut StateContext<'_, ()>) -> typeinfo_runtime::Result<()> {
//!         if let Some(seen) = &self.seen {
//!             seen.update(ctx.operator_state(), vec![self.count])?;
//!         }
//!         Ok(())
//!     }
//! }
//!
//! # fn main() -> typeinfo_runtime::Result<()> {
//! let env = StreamExecutionEnvironment::new();
//! let numbered = env
//!     .from_collection(vec!["a".to_owned(), "b".to_owned()])
//!     .transform("Numbering", Numbering::default())
//!     .collect();
//! env.execute("numbering")?;
//! assert_eq!(numbered.take(), [(1, "a".to_owned()), (2, "b".to_owned())]);
//! # Ok(())
//! # }
//! ```

use typeinfo_state::{KeyedBackend, KeyedStateBackend, OperatorStateBackend};

use crate::checkpoint::format::OperatorPart;
use crate::error::{Error, Result};
use crate::operator::context::{OutputTag, RuntimeContext, TimeDomain};
use crate::operator::contract::{
    now_ms, KeyOf, Operator, OperatorSetup, Outputs, SideRecord, FIRING_SLICE,
};
use crate::operator::element::NO_TIMESTAMP;
use crate::operator::timer::KeyedTimers;
use crate::types::{Data, Key};

/// A user's operator with one input, as Flink's `OneInputStreamOperator` with its
/// `AbstractStreamOperator` conveniences. `K` is the key type on a keyed stream and `()`
/// on a non-keyed one. Each subtask gets its own clone.
pub trait OneInputOperator<K: Key, I, O>: Send + Sync + 'static {
    /// Registers the operator's state (keyed and operator state). Their restored contents
    /// are in place from [`open`](Self::open) on.
    ///
    /// # Errors
    ///
    /// A state that cannot be registered; any error fails the job.
    fn initialize_state(&mut self, _ctx: &mut StateContext<'_, K>) -> Result<()> {
        Ok(())
    }

    /// Called once per subtask after state is restored, before the first record.
    ///
    /// # Errors
    ///
    /// Any error fails the job.
    fn open(&mut self, _ctx: &mut StateContext<'_, K>) -> Result<()> {
        Ok(())
    }

    /// Processes one record (on a keyed stream, with its key current).
    ///
    /// # Errors
    ///
    /// Any error fails the job, naming the operator.
    fn process_element(&mut self, value: I, ctx: &mut OperatorContext<'_, K, O>) -> Result<()>;

    /// The input watermark advanced (event-time timers up to it have fired); the runtime
    /// forwards it after this returns.
    ///
    /// # Errors
    ///
    /// Any error fails the job.
    fn process_watermark(
        &mut self,
        _watermark: i64,
        _ctx: &mut OperatorContext<'_, K, O>,
    ) -> Result<()> {
        Ok(())
    }

    /// A timer fired (with its key current).
    ///
    /// # Errors
    ///
    /// Any error fails the job.
    fn on_timer(
        &mut self,
        _timestamp: i64,
        _domain: TimeDomain,
        _ctx: &mut OperatorContext<'_, K, O>,
    ) -> Result<()> {
        Ok(())
    }

    /// Called before the operator's state is written into checkpoint `checkpoint`: put what
    /// the operator keeps in fields into its state here.
    ///
    /// # Errors
    ///
    /// Any error fails the job.
    fn snapshot_state(&mut self, _checkpoint: u64, _ctx: &mut StateContext<'_, K>) -> Result<()> {
        Ok(())
    }

    /// A bounded input ended (after the maximal watermark and its timers).
    ///
    /// # Errors
    ///
    /// Any error fails the job.
    fn end_input(&mut self, _ctx: &mut OperatorContext<'_, K, O>) -> Result<()> {
        Ok(())
    }
}

/// An operator's state outside record processing: operator state, keyed state (on a keyed
/// stream), and the runtime context.
pub struct StateContext<'a, K: Key> {
    operator_state: &'a mut OperatorStateBackend,
    keyed: Option<&'a mut KeyedBackend<K>>,
    runtime: &'a RuntimeContext,
    restored: bool,
}

impl<K: Key> std::fmt::Debug for StateContext<'_, K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StateContext")
            .field("restored", &self.restored)
            .finish_non_exhaustive()
    }
}

impl<K: Key> StateContext<'_, K> {
    /// The subtask's operator state.
    pub fn operator_state(&mut self) -> &mut OperatorStateBackend {
        self.operator_state
    }
    /// The subtask's keyed state (register keyed states here).
    ///
    /// # Errors
    ///
    /// The operator is not on a keyed stream.
    pub fn keyed_state(&mut self) -> Result<&mut KeyedBackend<K>> {
        keyed(self.keyed.as_deref_mut(), self.runtime.operator_name())
    }
    /// Whether the job started from a checkpoint or savepoint.
    pub fn is_restored(&self) -> bool {
        self.restored
    }
    /// Where the operator runs.
    pub fn runtime(&self) -> &RuntimeContext {
        self.runtime
    }
}

fn keyed<'b, K: Key>(
    backend: Option<&'b mut KeyedBackend<K>>,
    operator: &str,
) -> Result<&'b mut KeyedBackend<K>> {
    backend.ok_or_else(|| {
        Error::Config(format!(
            "operator `{operator}` uses keyed state or timers on a stream that is not keyed (key_by first)"
        ))
    })
}

/// What an operator sees while it processes a record, a watermark or a timer.
pub struct OperatorContext<'a, K: Key, O> {
    out: &'a mut Vec<(i64, O)>,
    tagged: &'a mut Vec<(i64, SideRecord)>,
    timestamp: i64,
    watermark: i64,
    key: Option<&'a K>,
    keyed: Option<&'a mut KeyedBackend<K>>,
    timers: Option<&'a mut KeyedTimers<K, ()>>,
    operator_state: &'a mut OperatorStateBackend,
    runtime: &'a RuntimeContext,
}

impl<K: Key, O> std::fmt::Debug for OperatorContext<'_, K, O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OperatorContext")
            .field("timestamp", &self.timestamp())
            .field("watermark", &self.watermark)
            .finish_non_exhaustive()
    }
}

impl<K: Key, O> OperatorContext<'_, K, O> {
    /// This context for a shorter borrow (to hand to a function that takes its own context).
    pub(crate) fn reborrow(&mut self) -> OperatorContext<'_, K, O> {
        OperatorContext {
            out: &mut *self.out,
            tagged: &mut *self.tagged,
            timestamp: self.timestamp,
            watermark: self.watermark,
            key: self.key,
            keyed: self.keyed.as_deref_mut(),
            timers: self.timers.as_deref_mut(),
            operator_state: &mut *self.operator_state,
            runtime: self.runtime,
        }
    }

    /// Emits a record with the current element's timestamp (none outside a record).
    pub fn collect(&mut self, value: O) {
        self.out.push((self.timestamp, value));
    }
    /// Emits a record with `timestamp`.
    pub fn collect_with_timestamp(&mut self, value: O, timestamp: i64) {
        self.out.push((timestamp, value));
    }
    /// Emits `value` to the side output `tag` (with the current timestamp); read it with
    /// [`DataStream::side_output`](crate::api::handles::DataStream::side_output) on this operator's result.
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
    /// The current record's timestamp, or the firing timer's (event time).
    pub fn timestamp(&self) -> Option<i64> {
        (self.timestamp != NO_TIMESTAMP).then_some(self.timestamp)
    }
    /// The operator's input watermark.
    pub fn current_watermark(&self) -> i64 {
        self.watermark
    }
    /// The wall clock (ms since the Unix epoch).
    pub fn current_processing_time(&self) -> i64 {
        now_ms()
    }
    /// The current key (on a keyed stream).
    pub fn current_key(&self) -> Option<&K> {
        self.key
    }
    /// Keyed state, scoped to the current key.
    ///
    /// # Errors
    ///
    /// The operator is not on a keyed stream.
    pub fn keyed_state(&mut self) -> Result<&mut KeyedBackend<K>> {
        keyed(self.keyed.as_deref_mut(), self.runtime.operator_name())
    }
    /// The subtask's operator state.
    pub fn operator_state(&mut self) -> &mut OperatorStateBackend {
        self.operator_state
    }
    /// Where the operator runs (subtask index, metrics, ...).
    pub fn runtime(&self) -> &RuntimeContext {
        self.runtime
    }

    fn timer(
        &mut self,
        f: impl FnOnce(&mut KeyedTimers<K, ()>, &mut KeyedBackend<K>, &K),
    ) -> Result<()> {
        match (
            self.timers.as_deref_mut(),
            self.keyed.as_deref_mut(),
            self.key,
        ) {
            (Some(timers), Some(backend), Some(key)) => {
                f(timers, backend, key);
                timers.check()
            }
            _ => Err(Error::Config(format!(
                "operator `{}` uses timers outside a keyed context (key_by first; timers are per key)",
                self.runtime.operator_name()
            ))),
        }
    }

    /// Fires [`on_timer`](OneInputOperator::on_timer) for the current key when the
    /// watermark reaches `time`.
    ///
    /// # Errors
    ///
    /// Not on a keyed stream.
    pub fn register_event_time_timer(&mut self, time: i64) -> Result<()> {
        self.timer(|t, b, k| t.register(b, TimeDomain::EventTime, k, &(), time))
    }
    /// Deletes an event-time timer of the current key.
    ///
    /// # Errors
    ///
    /// Not on a keyed stream.
    pub fn delete_event_time_timer(&mut self, time: i64) -> Result<()> {
        self.timer(|t, b, k| t.delete(b, TimeDomain::EventTime, k, &(), time))
    }
    /// Fires [`on_timer`](OneInputOperator::on_timer) for the current key when the wall
    /// clock reaches `time` (ms since the Unix epoch).
    ///
    /// # Errors
    ///
    /// Not on a keyed stream.
    pub fn register_processing_time_timer(&mut self, time: i64) -> Result<()> {
        self.timer(|t, b, k| t.register(b, TimeDomain::ProcessingTime, k, &(), time))
    }
    /// Deletes a processing-time timer of the current key.
    ///
    /// # Errors
    ///
    /// Not on a keyed stream.
    pub fn delete_processing_time_timer(&mut self, time: i64) -> Result<()> {
        self.timer(|t, b, k| t.delete(b, TimeDomain::ProcessingTime, k, &(), time))
    }
}

/// Per-record logic on a non-keyed stream, as Flink's `ProcessFunction`: a
/// [`OneInputOperator`] without keys, for [`DataStream::process`](crate::api::handles::DataStream::process).
///
/// ```
/// use typeinfo_runtime::{OperatorContext, ProcessFunction, StreamExecutionEnvironment};
///
/// #[derive(Clone)]
/// struct Split;
/// impl ProcessFunction<String, String> for Split {
///     fn process_element(&mut self, line: String, ctx: &mut OperatorContext<'_, (), String>) -> typeinfo_runtime::Result<()> {
///         ctx.runtime().metrics().counter("lines").inc();
///         for word in line.split_whitespace() {
///             ctx.collect(word.to_owned());
///         }
///         Ok(())
///     }
/// }
///
/// # fn main() -> typeinfo_runtime::Result<()> {
/// let env = StreamExecutionEnvironment::new();
/// let words = env.from_collection(vec!["to be".to_owned(), "or not".to_owned()]).process(Split).collect();
/// let result = env.execute("words")?;
/// assert_eq!(words.take(), ["to", "be", "or", "not"]);
/// assert_eq!(result.metric("Process.lines"), 2);
/// # Ok(())
/// # }
/// ```
pub trait ProcessFunction<I, O>: Send + Sync + 'static {
    /// Called once per subtask before the first record.
    ///
    /// # Errors
    ///
    /// Any error fails the job.
    fn open(&mut self, _ctx: &RuntimeContext) -> Result<()> {
        Ok(())
    }

    /// Processes one record.
    ///
    /// # Errors
    ///
    /// Any error fails the job, naming the operator.
    fn process_element(&mut self, value: I, ctx: &mut OperatorContext<'_, (), O>) -> Result<()>;

    /// A bounded input ended.
    ///
    /// # Errors
    ///
    /// Any error fails the job.
    fn close(&mut self, _ctx: &mut OperatorContext<'_, (), O>) -> Result<()> {
        Ok(())
    }
}

/// A [`ProcessFunction`] as an operator.
#[derive(Clone)]
pub(crate) struct ProcessFunctionOperator<F>(pub(crate) F);

impl<I, O, F: ProcessFunction<I, O>> OneInputOperator<(), I, O> for ProcessFunctionOperator<F> {
    fn open(&mut self, ctx: &mut StateContext<'_, ()>) -> Result<()> {
        self.0.open(ctx.runtime())
    }
    fn process_element(&mut self, value: I, ctx: &mut OperatorContext<'_, (), O>) -> Result<()> {
        self.0.process_element(value, ctx)
    }
    fn end_input(&mut self, ctx: &mut OperatorContext<'_, (), O>) -> Result<()> {
        self.0.close(ctx)
    }
}

/// Runs a user's operator: keys, state, timers and checkpoints around its calls.
pub(crate) struct UserOperator<K: Key, I, O, Op> {
    op: Op,
    selector: Option<KeyOf<I, K>>,
    keyed: Option<(KeyedBackend<K>, KeyedTimers<K, ()>)>,
    operator_state: OperatorStateBackend,
    runtime: RuntimeContext,
    restored: bool,
    watermark: i64,
    /// A watermark whose due timers are not all fired yet (see `Operator::firing`).
    firing: Option<i64>,
    out: Vec<(i64, O)>,
    tagged: Vec<(i64, SideRecord)>,
    setup: OperatorSetup,
}

impl<K: Key, I: Data, O: Data, Op: OneInputOperator<K, I, O>> UserOperator<K, I, O, Op> {
    /// The operator on a keyed stream (`selector` gives each record's key) or not.
    pub(crate) fn new(
        setup: &OperatorSetup,
        op: Op,
        selector: Option<KeyOf<I, K>>,
    ) -> Result<Self> {
        Self::with_timer_state(
            setup,
            op,
            selector,
            crate::checkpoint::format::TimerState::Operator.name(),
        )
    }

    /// As [`new`](Self::new), with the timers in keyed state named `timers`.
    pub(crate) fn with_timer_state(
        setup: &OperatorSetup,
        mut op: Op,
        selector: Option<KeyOf<I, K>>,
        timers: &str,
    ) -> Result<Self> {
        let mut keyed = match selector {
            Some(_) => {
                let mut backend = setup.keyed_backend::<K>()?;
                let timers = KeyedTimers::new(&mut backend, timers, setup)?;
                Some((backend, timers))
            }
            None => None,
        };
        let mut operator_state = setup.operator_state_backend();
        let runtime = RuntimeContext::new(setup);
        let restored = setup.restore.is_some();
        op.initialize_state(&mut StateContext {
            operator_state: &mut operator_state,
            keyed: keyed.as_mut().map(|(b, _)| b),
            runtime: &runtime,
            restored,
        })?;
        Ok(UserOperator {
            op,
            selector,
            keyed,
            operator_state,
            runtime,
            restored,
            watermark: i64::MIN,
            firing: None,
            out: Vec::new(),
            tagged: Vec::new(),
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

    /// Calls `f` with a context for `key` (set as the backend's current key) and `timestamp`.
    fn with_context(
        &mut self,
        key: Option<&K>,
        timestamp: i64,
        f: impl FnOnce(&mut Op, &mut OperatorContext<'_, K, O>) -> Result<()>,
    ) -> Result<()> {
        self.with_context_in(key, None, timestamp, f)
    }

    /// As [`with_context`](Self::with_context), with the key's group when the exchange
    /// computed it.
    fn with_context_in(
        &mut self,
        key: Option<&K>,
        key_group: Option<u16>,
        timestamp: i64,
        f: impl FnOnce(&mut Op, &mut OperatorContext<'_, K, O>) -> Result<()>,
    ) -> Result<()> {
        let (keyed, timers) = match self.keyed.as_mut() {
            Some((backend, timers)) => {
                match (key, key_group) {
                    (Some(k), Some(group)) => backend.set_current_key_in_group(k, group)?,
                    (Some(k), None) => backend.set_current_key(k)?,
                    (None, _) => {}
                }
                (Some(backend), Some(timers))
            }
            None => (None, None),
        };
        let mut ctx = OperatorContext {
            out: &mut self.out,
            tagged: &mut self.tagged,
            timestamp,
            watermark: self.watermark,
            key,
            keyed,
            timers,
            operator_state: &mut self.operator_state,
            runtime: &self.runtime,
        };
        f(&mut self.op, &mut ctx)
    }

    fn fire(
        &mut self,
        time: i64,
        key: K,
        domain: TimeDomain,
        out: &mut Outputs<O, I>,
    ) -> Result<()> {
        let timestamp = if domain == TimeDomain::EventTime {
            time
        } else {
            NO_TIMESTAMP
        };
        self.with_context(Some(&key), timestamp, |op, ctx| {
            op.on_timer(time, domain, ctx)
        })?;
        self.ship(out);
        Ok(())
    }

    fn pop_timer(&mut self, domain: TimeDomain, until: i64) -> Result<Option<(i64, K)>> {
        let Some((backend, timers)) = self.keyed.as_mut() else {
            return Ok(None);
        };
        Ok(timers
            .pop_due(backend, domain, until)?
            .map(|(t, k, ())| (t, k)))
    }
}

impl<K: Key, I: Data, O: Data, Op: OneInputOperator<K, I, O>> Operator<I, O>
    for UserOperator<K, I, O, Op>
{
    fn process(&mut self, ts: i64, value: I, out: &mut Outputs<O, I>) -> Result<()> {
        let key = self.selector.as_ref().and_then(|s| s.key(&value));
        self.with_context(key.as_ref(), ts, |op, ctx| op.process_element(value, ctx))?;
        self.ship(out);
        Ok(())
    }

    fn process_in_group(
        &mut self,
        ts: i64,
        value: I,
        key_group: u16,
        out: &mut Outputs<O, I>,
    ) -> Result<()> {
        let key = self.selector.as_ref().and_then(|s| s.key(&value));
        self.with_context_in(key.as_ref(), Some(key_group), ts, |op, ctx| {
            op.process_element(value, ctx)
        })?;
        self.ship(out);
        Ok(())
    }

    fn watermark(&mut self, watermark: i64, out: &mut Outputs<O, I>) -> Result<()> {
        self.watermark = watermark;
        self.firing = Some(watermark);
        self.resume_firing(out)
    }

    fn firing(&self) -> bool {
        self.firing.is_some()
    }

    fn resume_firing(&mut self, out: &mut Outputs<O, I>) -> Result<()> {
        let Some(watermark) = self.firing else {
            return Ok(());
        };
        for _ in 0..FIRING_SLICE {
            let Some((time, key)) = self.pop_timer(TimeDomain::EventTime, watermark)? else {
                self.firing = None;
                self.with_context(None, NO_TIMESTAMP, |op, ctx| {
                    op.process_watermark(watermark, ctx)
                })?;
                self.ship(out);
                out.watermark(watermark);
                return Ok(());
            };
            self.fire(time, key, TimeDomain::EventTime, out)?;
        }
        Ok(())
    }

    fn next_processing_time(&self) -> Option<i64> {
        self.keyed
            .as_ref()
            .and_then(|(_, t)| t.next_processing_time())
    }

    fn processing_time(&mut self, now: i64, out: &mut Outputs<O, I>) -> Result<()> {
        while let Some((time, key)) = self.pop_timer(TimeDomain::ProcessingTime, now)? {
            self.fire(time, key, TimeDomain::ProcessingTime, out)?;
        }
        Ok(())
    }

    fn end_of_key(&mut self, out: &mut Outputs<O, I>) -> Result<()> {
        self.watermark = i64::MAX;
        while let Some((time, key, (), domain)) = match self.keyed.as_mut() {
            Some((backend, timers)) => timers.pop_end_of_key(backend)?,
            None => None,
        } {
            self.fire(time, key, domain, out)?;
        }
        self.watermark = i64::MIN;
        if let Some((backend, _)) = self.keyed.as_mut() {
            backend.clear_current_key_group()?;
        }
        Ok(())
    }

    fn finish(&mut self, out: &mut Outputs<O, I>) -> Result<()> {
        // As at the end of a bounded input elsewhere in this runtime: pending processing-time
        // timers fire (see the crate docs).
        while let Some((time, key)) = self.pop_timer(TimeDomain::ProcessingTime, i64::MAX)? {
            self.fire(time, key, TimeDomain::ProcessingTime, out)?;
        }
        self.with_context(None, NO_TIMESTAMP, |op, ctx| op.end_input(ctx))?;
        self.ship(out);
        Ok(())
    }

    fn snapshot(
        &mut self,
        epoch: u64,
        keyed: &crate::checkpoint::store::KeyedPart<'_>,
    ) -> Result<Vec<u8>> {
        let mut ctx = StateContext {
            operator_state: &mut self.operator_state,
            keyed: self.keyed.as_mut().map(|(b, _)| b),
            runtime: &self.runtime,
            restored: self.restored,
        };
        self.op.snapshot_state(epoch, &mut ctx)?;
        if let Some((backend, timers)) = self.keyed.as_mut() {
            timers.snapshot(backend, keyed)?;
        }
        Ok(Vec::new())
    }

    fn restore(
        &mut self,
        keyed: &[crate::checkpoint::native_part::KeyedFile],
        parts: &[OperatorPart],
    ) -> Result<()> {
        if let Some((backend, timers)) = self.keyed.as_mut() {
            self.watermark = timers.restore(backend, keyed, parts, &self.setup)?;
        } else {
            self.watermark = parts.iter().map(|p| p.watermark).min().unwrap_or(i64::MIN);
        }
        Ok(())
    }

    fn operator_state(&mut self) -> Option<&mut OperatorStateBackend> {
        Some(&mut self.operator_state)
    }

    fn open(&mut self) -> Result<()> {
        let mut ctx = StateContext {
            operator_state: &mut self.operator_state,
            keyed: self.keyed.as_mut().map(|(b, _)| b),
            runtime: &self.runtime,
            restored: self.restored,
        };
        self.op.open(&mut ctx)
    }
}
