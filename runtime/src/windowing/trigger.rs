//! Triggers: when a window fires and when it is purged, with Flink's `Trigger` contract.
//!
//! A trigger is asked about every element added to a window ([`Trigger::on_element`]), and
//! about every timer it (or the window operator, for the window's cleanup) registered for
//! the window ([`Trigger::on_event_time`], [`Trigger::on_processing_time`]). It answers with a
//! [`TriggerResult`]: continue, fire (emit the window's result and keep its contents), purge
//! (drop the contents), or both. Its state is keyed state per key and window (registered in
//! [`Trigger::initialize_state`], reached through [`TriggerContext::state`] with the window
//! as namespace), so it is checkpointed, restored, rescaled and migrated like any other
//! state. When session windows merge, [`Trigger::on_merge`] moves the trigger's state and
//! timers to the merged window; a trigger that cannot merge is refused with a merging
//! assigner when the job is built.
//!
//! The built-in triggers follow Flink's classes of the same names (Flink 2.3, package
//! `org.apache.flink.streaming.api.windowing.triggers`):
//!
//! | trigger | Flink class | fires | state |
//! |---|---|---|---|
//! | [`EventTimeTrigger`] | `EventTimeTrigger` | when the watermark passes the window's end (at once for a late element within allowed lateness) | none |
//! | [`ProcessingTimeTrigger`] | `ProcessingTimeTrigger` | when the wall clock passes the window's end | none |
//! | [`CountTrigger`] | `CountTrigger` | every `n` elements (the count restarts after each firing) | `count` (reducing, sum) |
//! | [`PurgingTrigger`] | `PurgingTrigger` | as the trigger it wraps, purging whenever that one fires | the wrapped trigger's |
//! | [`ContinuousEventTimeTrigger`] | `ContinuousEventTimeTrigger` | every `interval` of event time while the window is open, and at its end | `fire-time` (reducing, min) |
//! | [`ContinuousProcessingTimeTrigger`] | `ContinuousProcessingTimeTrigger` | every `interval` of processing time | `fire-time` (reducing, min) |
//! | [`DeltaTrigger`] | `DeltaTrigger` | when an element's delta to the last fired-on element exceeds a threshold (cannot merge) | `last-element` (value) |
//! | [`NeverTrigger`] | `GlobalWindows.NeverTrigger` | never | none |
//!
//! Trigger state names are the Flink names above; two triggers of one window operator must
//! not use the same name (a [`PurgingTrigger`] shares its wrapped trigger's state).

use std::fmt;
use std::sync::Arc;

use typeinfo_state::{
    KeyedBackend, KeyedStateBackend, ReducingState, ReducingStateDescriptor, ValueState,
    ValueStateDescriptor,
};

use crate::error::{Error, Result};
use crate::operator::context::TimeDomain;
use crate::operator::contract::now_ms;
use crate::operator::timer::KeyedTimers;
use crate::types::{Data, Key};
use crate::windowing::window::{DeltaFunction, MergingState, Window};

/// What a trigger decides for a window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TriggerResult {
    /// Nothing happens.
    Continue,
    /// The window's function runs on its contents, which are kept.
    Fire,
    /// The window's contents are dropped (its metadata and timers stay until cleanup).
    Purge,
    /// The function runs, then the contents are dropped.
    FireAndPurge,
}

impl TriggerResult {
    /// Whether the window fires.
    pub fn is_fire(self) -> bool {
        matches!(self, TriggerResult::Fire | TriggerResult::FireAndPurge)
    }
    /// Whether the window's contents are dropped.
    pub fn is_purge(self) -> bool {
        matches!(self, TriggerResult::Purge | TriggerResult::FireAndPurge)
    }
}

/// What a trigger sees of where it runs: the current key's state, timers for the window it
/// is asked about, the watermark and the wall clock (Flink's `TriggerContext` and
/// `OnMergeContext`).
pub struct TriggerContext<'a, K: Key, W: Window> {
    pub(crate) key: &'a K,
    pub(crate) backend: &'a mut KeyedBackend<K>,
    pub(crate) timers: &'a mut KeyedTimers<K, W>,
    /// The window the call is about (timers are registered for it).
    pub(crate) window: &'a W,
    pub(crate) watermark: i64,
    /// The windows merged into `window` (in `on_merge`; empty elsewhere).
    pub(crate) merged: &'a [W],
}

impl<K: Key, W: Window> fmt::Debug for TriggerContext<'_, K, W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TriggerContext")
            .field("window", self.window)
            .field("watermark", &self.watermark)
            .field("merged", &self.merged)
            .finish_non_exhaustive()
    }
}

impl<K: Key, W: Window> TriggerContext<'_, K, W> {
    /// The operator's current watermark.
    pub fn current_watermark(&self) -> i64 {
        self.watermark
    }
    /// The wall clock (ms since the Unix epoch).
    pub fn current_processing_time(&self) -> i64 {
        now_ms()
    }
    /// The key whose window this is.
    pub fn current_key(&self) -> &K {
        self.key
    }
    /// Keyed state of the current key: use the window as the namespace of per-window state.
    pub fn state(&mut self) -> &mut KeyedBackend<K> {
        self.backend
    }
    /// Calls [`Trigger::on_event_time`] for this window when the watermark reaches `time`.
    pub fn register_event_time_timer(&mut self, time: i64) {
        self.timers.register(
            self.backend,
            TimeDomain::EventTime,
            self.key,
            self.window,
            time,
        );
    }
    /// Deletes an event-time timer of this window.
    pub fn delete_event_time_timer(&mut self, time: i64) {
        self.timers.delete(
            self.backend,
            TimeDomain::EventTime,
            self.key,
            self.window,
            time,
        );
    }
    /// Calls [`Trigger::on_processing_time`] for this window when the wall clock reaches
    /// `time` (ms since the Unix epoch).
    pub fn register_processing_time_timer(&mut self, time: i64) {
        self.timers.register(
            self.backend,
            TimeDomain::ProcessingTime,
            self.key,
            self.window,
            time,
        );
    }
    /// Deletes a processing-time timer of this window.
    pub fn delete_processing_time_timer(&mut self, time: i64) {
        self.timers.delete(
            self.backend,
            TimeDomain::ProcessingTime,
            self.key,
            self.window,
            time,
        );
    }
    /// The windows merged into this one (in [`Trigger::on_merge`]; empty elsewhere).
    pub fn merged_windows(&self) -> &[W] {
        self.merged
    }
    /// Merges `state` of the merged windows into this window (in [`Trigger::on_merge`]).
    ///
    /// # Errors
    ///
    /// The state backend failed.
    pub fn merge_state<S: MergingState<K, W>>(&mut self, state: &S) -> Result<()> {
        if self.merged.is_empty() {
            return Ok(());
        }
        state.merge(self.backend, self.window, self.merged)
    }
}

/// When a window fires, as Flink's `Trigger<T, W>`: `K` is the stream's key type, `T` its
/// records' type, `W` the window type. Each subtask runs its own clone.
///
/// A trigger keeps what it must remember in keyed state per window (never in fields: a
/// field is shared by every key and window of the subtask, and lost on restore).
///
/// ```
/// use typeinfo_runtime::trigger::{Trigger, TriggerContext, TriggerResult};
/// use typeinfo_runtime::window::{TimeWindow, Window};
/// use typeinfo_runtime::{Key, StreamExecutionEnvironment, TumblingEventTimeWindows, WatermarkStrategy};
///
/// /// Fires as soon as an element of 100 or more arrives, and at the window's end.
/// #[derive(Clone)]
/// struct Alarm;
///
/// impl<K: Key> Trigger<K, i64, TimeWindow> for Alarm {
///     fn on_element(&mut self, v: &i64, _ts: i64, w: &TimeWindow, ctx: &mut TriggerContext<'_, K, TimeWindow>) -> typeinfo_runtime::Result<TriggerResult> {
///         ctx.register_event_time_timer(w.max_timestamp());
///         Ok(if *v >= 100 { TriggerResult::Fire } else { TriggerResult::Continue })
///     }
///     fn on_event_time(&mut self, time: i64, w: &TimeWindow, _: &mut TriggerContext<'_, K, TimeWindow>) -> typeinfo_runtime::Result<TriggerResult> {
///         Ok(if time == w.max_timestamp() { TriggerResult::Fire } else { TriggerResult::Continue })
///     }
///     fn clear(&mut self, w: &TimeWindow, ctx: &mut TriggerContext<'_, K, TimeWindow>) -> typeinfo_runtime::Result<()> {
///         ctx.delete_event_time_timer(w.max_timestamp());
///         Ok(())
///     }
/// }
///
/// # fn main() -> typeinfo_runtime::Result<()> {
/// let env = StreamExecutionEnvironment::new();
/// let sums = env
///     .from_collection(vec![1i64, 150, 2])
///     .assign_timestamps_and_watermarks(WatermarkStrategy::for_monotonous_timestamps().with_timestamp_assigner(|_: &i64, _| 5))
///     .key_by(|_: &i64| 0u8)
///     .window(TumblingEventTimeWindows::of_millis(10))
///     .trigger(Alarm)
///     .reduce(|a, b| a + b)
///     .collect();
/// env.execute("alarm")?;
/// assert_eq!(sums.take(), [151, 153]); // early at 150, then at the window's end
/// # Ok(())
/// # }
/// ```
pub trait Trigger<K: Key, T, W: Window>: Clone + Send + Sync + 'static {
    /// Registers the trigger's state in the subtask's keyed backend (once per subtask,
    /// before restore: a restored job finds its trigger state here).
    ///
    /// # Errors
    ///
    /// A state that cannot be registered.
    fn initialize_state(&mut self, _backend: &mut KeyedBackend<K>) -> Result<()> {
        Ok(())
    }

    /// An element was added to `window` (`timestamp` is the element's, or `i64::MIN`).
    ///
    /// # Errors
    ///
    /// Any error fails the job.
    fn on_element(
        &mut self,
        element: &T,
        timestamp: i64,
        window: &W,
        ctx: &mut TriggerContext<'_, K, W>,
    ) -> Result<TriggerResult>;

    /// An event-time timer of `window` fired at `time`.
    ///
    /// # Errors
    ///
    /// Any error fails the job.
    fn on_event_time(
        &mut self,
        _time: i64,
        _window: &W,
        _ctx: &mut TriggerContext<'_, K, W>,
    ) -> Result<TriggerResult> {
        Ok(TriggerResult::Continue)
    }

    /// A processing-time timer of `window` fired at `time`.
    ///
    /// # Errors
    ///
    /// Any error fails the job.
    fn on_processing_time(
        &mut self,
        _time: i64,
        _window: &W,
        _ctx: &mut TriggerContext<'_, K, W>,
    ) -> Result<TriggerResult> {
        Ok(TriggerResult::Continue)
    }

    /// Whether the trigger can follow windows that merge ([`on_merge`](Self::on_merge)).
    fn can_merge(&self) -> bool {
        false
    }

    /// The windows [`TriggerContext::merged_windows`] merged into `window`: move their state
    /// ([`TriggerContext::merge_state`]) and register the merged window's timers. The merged
    /// windows are [`clear`](Self::clear)ed after this.
    ///
    /// # Errors
    ///
    /// The default refuses: a trigger that cannot merge is never used with merging windows.
    fn on_merge(&mut self, _window: &W, _ctx: &mut TriggerContext<'_, K, W>) -> Result<()> {
        Err(Error::Config(
            "this trigger does not support merging windows".to_owned(),
        ))
    }

    /// `window` is removed (its cleanup time came, or it was merged away): delete its timers
    /// and state.
    ///
    /// # Errors
    ///
    /// Any error fails the job.
    fn clear(&mut self, window: &W, ctx: &mut TriggerContext<'_, K, W>) -> Result<()>;

    /// Whether this trigger is exactly Flink's `EventTimeTrigger` for every element: it
    /// registers one event-time timer at `window.max_timestamp()`, keeps no state, and fires
    /// on an element only when the watermark has passed the window's end. The window
    /// operator then asks it only about a window's first element (the timer is registered
    /// already for the others) and decides the late re-firing itself: one timer lookup less
    /// per record on the default path. Leave it `false` for your own triggers.
    #[doc(hidden)]
    fn is_event_time_trigger(&self) -> bool {
        false
    }
}

/// Fires when the watermark passes the window's end (Flink's `EventTimeTrigger`, the default
/// of event-time windows). A late element within allowed lateness fires the window again at
/// once.
///
/// # Examples
///
/// ```
/// use typeinfo_runtime::trigger::EventTimeTrigger;
/// use typeinfo_runtime::{StreamExecutionEnvironment, TumblingEventTimeWindows, WatermarkStrategy};
///
/// # fn main() -> typeinfo_runtime::Result<()> {
/// let env = StreamExecutionEnvironment::new();
/// let strategy = WatermarkStrategy::for_monotonous_timestamps().emit_per_event();
/// let sums = env
///     .from_collection(vec![1i64, 12, 3]) // each value is its timestamp
///     .assign_timestamps_and_watermarks(strategy.with_timestamp_assigner(|v: &i64, _| *v))
///     .key_by(|_: &i64| 0u8)
///     .window(TumblingEventTimeWindows::of_millis(10))
///     .trigger(EventTimeTrigger)
///     .allowed_lateness_millis(100)
///     .reduce(|a, b| a + b)
///     .collect();
/// env.execute("sums")?;
/// // [0, 10) fires when 12 moves the watermark past it, again at once for the late 3;
/// // [10, 20) fires at the end of the input.
/// assert_eq!(sums.take(), [1, 4, 12]);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct EventTimeTrigger;

impl<K: Key, T, W: Window> Trigger<K, T, W> for EventTimeTrigger {
    #[inline]
    fn on_element(
        &mut self,
        _element: &T,
        _timestamp: i64,
        window: &W,
        ctx: &mut TriggerContext<'_, K, W>,
    ) -> Result<TriggerResult> {
        if window.max_timestamp() <= ctx.current_watermark() {
            // The watermark is past the window already (a late element within lateness).
            Ok(TriggerResult::Fire)
        } else {
            ctx.register_event_time_timer(window.max_timestamp());
            Ok(TriggerResult::Continue)
        }
    }
    #[inline]
    fn on_event_time(
        &mut self,
        time: i64,
        window: &W,
        _ctx: &mut TriggerContext<'_, K, W>,
    ) -> Result<TriggerResult> {
        Ok(if time == window.max_timestamp() {
            TriggerResult::Fire
        } else {
            TriggerResult::Continue
        })
    }
    fn can_merge(&self) -> bool {
        true
    }
    fn on_merge(&mut self, window: &W, ctx: &mut TriggerContext<'_, K, W>) -> Result<()> {
        // Only a window whose end the watermark has not passed gets a timer: one that has
        // would fire at once, and its cleanup timer is enough.
        if window.max_timestamp() > ctx.current_watermark() {
            ctx.register_event_time_timer(window.max_timestamp());
        }
        Ok(())
    }
    #[inline]
    fn clear(&mut self, window: &W, ctx: &mut TriggerContext<'_, K, W>) -> Result<()> {
        ctx.delete_event_time_timer(window.max_timestamp());
        Ok(())
    }
    fn is_event_time_trigger(&self) -> bool {
        true
    }
}

/// Fires when the wall clock passes the window's end (Flink's `ProcessingTimeTrigger`, the
/// default of processing-time windows).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use typeinfo_runtime::trigger::ProcessingTimeTrigger;
/// use typeinfo_runtime::{ProcessingTimeSessionWindows, StreamExecutionEnvironment};
///
/// # fn main() -> typeinfo_runtime::Result<()> {
/// let env = StreamExecutionEnvironment::new();
/// let totals = env
///     .from_collection(vec![('a', 1i64), ('b', 2), ('a', 3)])
///     .key_by(|e: &(char, i64)| e.0)
///     .window(ProcessingTimeSessionWindows::with_gap(Duration::from_secs(3600)))
///     .trigger(ProcessingTimeTrigger)
///     .reduce(|x, y| (x.0, x.1 + y.1))
///     .collect();
/// env.execute("sessions")?;
/// // One session per key, an hour from ending: the end of the input fires it.
/// let mut totals = totals.take();
/// totals.sort();
/// assert_eq!(totals, [('a', 4), ('b', 2)]);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct ProcessingTimeTrigger;

impl<K: Key, T, W: Window> Trigger<K, T, W> for ProcessingTimeTrigger {
    fn on_element(
        &mut self,
        _element: &T,
        _timestamp: i64,
        window: &W,
        ctx: &mut TriggerContext<'_, K, W>,
    ) -> Result<TriggerResult> {
        ctx.register_processing_time_timer(window.max_timestamp());
        Ok(TriggerResult::Continue)
    }
    fn on_processing_time(
        &mut self,
        _time: i64,
        _window: &W,
        _ctx: &mut TriggerContext<'_, K, W>,
    ) -> Result<TriggerResult> {
        Ok(TriggerResult::Fire)
    }
    fn can_merge(&self) -> bool {
        true
    }
    fn on_merge(&mut self, window: &W, ctx: &mut TriggerContext<'_, K, W>) -> Result<()> {
        if window.max_timestamp() > ctx.current_processing_time() {
            ctx.register_processing_time_timer(window.max_timestamp());
        }
        Ok(())
    }
    fn clear(&mut self, window: &W, ctx: &mut TriggerContext<'_, K, W>) -> Result<()> {
        ctx.delete_processing_time_timer(window.max_timestamp());
        Ok(())
    }
}

/// The default trigger of [`TimeWindows`](crate::assigner::TimeWindows): [`EventTimeTrigger`]
/// for event-time windows, [`ProcessingTimeTrigger`] for processing-time ones.
#[derive(Debug, Clone, Copy)]
pub enum TimeTrigger {
    /// Fires at the watermark.
    EventTime(EventTimeTrigger),
    /// Fires at the wall clock.
    ProcessingTime(ProcessingTimeTrigger),
}

macro_rules! dispatch {
    ($self:ident, $t:ident => $e:expr) => {
        match $self {
            TimeTrigger::EventTime($t) => $e,
            TimeTrigger::ProcessingTime($t) => $e,
        }
    };
}

impl<K: Key, T, W: Window> Trigger<K, T, W> for TimeTrigger {
    #[inline]
    fn on_element(
        &mut self,
        element: &T,
        timestamp: i64,
        window: &W,
        ctx: &mut TriggerContext<'_, K, W>,
    ) -> Result<TriggerResult> {
        dispatch!(self, t => Trigger::<K, T, W>::on_element(t, element, timestamp, window, ctx))
    }
    #[inline]
    fn on_event_time(
        &mut self,
        time: i64,
        window: &W,
        ctx: &mut TriggerContext<'_, K, W>,
    ) -> Result<TriggerResult> {
        dispatch!(self, t => Trigger::<K, T, W>::on_event_time(t, time, window, ctx))
    }
    fn on_processing_time(
        &mut self,
        time: i64,
        window: &W,
        ctx: &mut TriggerContext<'_, K, W>,
    ) -> Result<TriggerResult> {
        dispatch!(self, t => Trigger::<K, T, W>::on_processing_time(t, time, window, ctx))
    }
    fn can_merge(&self) -> bool {
        true
    }
    fn on_merge(&mut self, window: &W, ctx: &mut TriggerContext<'_, K, W>) -> Result<()> {
        dispatch!(self, t => Trigger::<K, T, W>::on_merge(t, window, ctx))
    }
    #[inline]
    fn clear(&mut self, window: &W, ctx: &mut TriggerContext<'_, K, W>) -> Result<()> {
        dispatch!(self, t => Trigger::<K, T, W>::clear(t, window, ctx))
    }
    #[inline]
    fn is_event_time_trigger(&self) -> bool {
        matches!(self, TimeTrigger::EventTime(_))
    }
}

/// Never fires (Flink's `GlobalWindows.NeverTrigger`, the default of
/// [`GlobalWindows`](crate::assigner::GlobalWindows)).
///
/// # Examples
///
/// ```
/// use typeinfo_runtime::trigger::NeverTrigger;
/// use typeinfo_runtime::{GlobalWindows, StreamExecutionEnvironment};
///
/// # fn main() -> typeinfo_runtime::Result<()> {
/// let env = StreamExecutionEnvironment::new();
/// let sums = env
///     .from_collection(vec![1i64, 2, 3])
///     .key_by(|_: &i64| 0u8)
///     .window(GlobalWindows)
///     .trigger(NeverTrigger)
///     .reduce(|a, b| a + b)
///     .collect();
/// env.execute("never")?;
/// assert_eq!(sums.take(), Vec::<i64>::new()); // not even the end of the input fires it
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct NeverTrigger;

impl<K: Key, T, W: Window> Trigger<K, T, W> for NeverTrigger {
    fn on_element(
        &mut self,
        _element: &T,
        _timestamp: i64,
        _window: &W,
        _ctx: &mut TriggerContext<'_, K, W>,
    ) -> Result<TriggerResult> {
        Ok(TriggerResult::Continue)
    }
    fn can_merge(&self) -> bool {
        true
    }
    fn on_merge(&mut self, _window: &W, _ctx: &mut TriggerContext<'_, K, W>) -> Result<()> {
        Ok(())
    }
    fn clear(&mut self, _window: &W, _ctx: &mut TriggerContext<'_, K, W>) -> Result<()> {
        Ok(())
    }
}

/// A reducing `i64` state per window, registered by a trigger (count, fire time).
#[derive(Clone)]
struct TriggerState<W> {
    descriptor: ReducingStateDescriptor<i64>,
    state: Option<ReducingState<W, i64>>,
}

impl<W: Window> TriggerState<W> {
    fn new(name: &str, reduce: fn(&i64, &i64) -> i64) -> Self {
        TriggerState {
            descriptor: ReducingStateDescriptor::new(name, reduce),
            state: None,
        }
    }

    fn register<K: Key>(&mut self, backend: &mut KeyedBackend<K>) -> Result<()> {
        self.state = Some(backend.reducing_state(&self.descriptor)?);
        Ok(())
    }

    fn handle(&self) -> Result<&ReducingState<W, i64>> {
        self.state.as_ref().ok_or_else(unregistered)
    }

    /// Stores and returns a continuous trigger's next fire time: `time + interval`, capped at
    /// the window's end (Flink's `registerNextFireTimestamp`; the caller registers the timer
    /// in its time domain).
    fn next_fire<K: Key>(
        &self,
        time: i64,
        interval: i64,
        window: &W,
        ctx: &mut TriggerContext<'_, K, W>,
    ) -> Result<i64> {
        let next = time.saturating_add(interval).min(window.max_timestamp());
        self.handle()?.add(ctx.state(), window, next)?;
        Ok(next)
    }
}

/// A trigger's state used before [`Trigger::initialize_state`] registered it.
fn unregistered() -> Error {
    Error::Config("a trigger's state was used before it was registered".to_owned())
}

impl<W> fmt::Debug for TriggerState<W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("TriggerState")
    }
}

/// Fires every `n` elements of a window (Flink's `CountTrigger`): a count per window in
/// keyed state (`count`), cleared at each firing; merging windows add their counts.
///
/// ```
/// use typeinfo_runtime::trigger::CountTrigger;
/// use typeinfo_runtime::StreamExecutionEnvironment;
///
/// # fn main() -> typeinfo_runtime::Result<()> {
/// let env = StreamExecutionEnvironment::new();
/// let sums = env
///     .from_collection(vec![1i64, 2, 3, 4, 5])
///     .key_by(|_: &i64| 0u8)
///     .count_window(2) // GlobalWindows + PurgingTrigger::of(CountTrigger::of(2))
///     .reduce(|a, b| a + b)
///     .collect();
/// env.execute("pairs")?;
/// assert_eq!(sums.take(), [3, 7]); // the fifth record never completes a window
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct CountTrigger<W = crate::windowing::window::GlobalWindow> {
    max_count: i64,
    count: TriggerState<W>,
}

impl<W: Window> CountTrigger<W> {
    /// Fires every `n` elements.
    pub fn of(n: u64) -> Self {
        CountTrigger {
            max_count: i64::try_from(n).unwrap_or(i64::MAX),
            count: TriggerState::new("count", |a, b| a.saturating_add(*b)),
        }
    }
}

impl<K: Key, T, W: Window> Trigger<K, T, W> for CountTrigger<W> {
    fn initialize_state(&mut self, backend: &mut KeyedBackend<K>) -> Result<()> {
        self.count.register(backend)
    }
    fn on_element(
        &mut self,
        _element: &T,
        _timestamp: i64,
        window: &W,
        ctx: &mut TriggerContext<'_, K, W>,
    ) -> Result<TriggerResult> {
        let state = self.count.handle()?;
        state.add(ctx.state(), window, 1)?;
        if state.get(ctx.state(), window)?.unwrap_or(0) >= self.max_count {
            state.clear(ctx.state(), window)?;
            return Ok(TriggerResult::Fire);
        }
        Ok(TriggerResult::Continue)
    }
    fn can_merge(&self) -> bool {
        true
    }
    fn on_merge(&mut self, _window: &W, ctx: &mut TriggerContext<'_, K, W>) -> Result<()> {
        ctx.merge_state(self.count.handle()?)
    }
    fn clear(&mut self, window: &W, ctx: &mut TriggerContext<'_, K, W>) -> Result<()> {
        Ok(self.count.handle()?.clear(ctx.state(), window)?)
    }
}

/// Turns every firing of the trigger it wraps into a firing that also purges the window's
/// contents (Flink's `PurgingTrigger`).
///
/// ```
/// use typeinfo_runtime::trigger::{CountTrigger, PurgingTrigger};
/// use typeinfo_runtime::{StreamExecutionEnvironment, TumblingEventTimeWindows, WatermarkStrategy};
///
/// # fn main() -> typeinfo_runtime::Result<()> {
/// let env = StreamExecutionEnvironment::new();
/// let sums = env
///     .from_collection(vec![1i64, 2, 3, 4, 5])
///     .assign_timestamps_and_watermarks(WatermarkStrategy::for_monotonous_timestamps().with_timestamp_assigner(|v: &i64, _| *v))
///     .key_by(|_: &i64| 0u8)
///     .window(TumblingEventTimeWindows::of_millis(100))
///     .trigger(PurgingTrigger::of(CountTrigger::of(2)))
///     .reduce(|a, b| a + b)
///     .collect();
/// env.execute("pairs")?;
/// assert_eq!(sums.take(), [3, 7]); // each firing starts afresh; 5 is dropped at the window's end
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct PurgingTrigger<Tr> {
    nested: Tr,
}

impl<Tr> PurgingTrigger<Tr> {
    /// Purges whenever `trigger` fires.
    pub fn of(trigger: Tr) -> Self {
        PurgingTrigger { nested: trigger }
    }
}

fn purging(result: TriggerResult) -> TriggerResult {
    if result.is_fire() {
        TriggerResult::FireAndPurge
    } else {
        result
    }
}

impl<K: Key, T, W: Window, Tr: Trigger<K, T, W>> Trigger<K, T, W> for PurgingTrigger<Tr> {
    fn initialize_state(&mut self, backend: &mut KeyedBackend<K>) -> Result<()> {
        self.nested.initialize_state(backend)
    }
    fn on_element(
        &mut self,
        element: &T,
        timestamp: i64,
        window: &W,
        ctx: &mut TriggerContext<'_, K, W>,
    ) -> Result<TriggerResult> {
        Ok(purging(
            self.nested.on_element(element, timestamp, window, ctx)?,
        ))
    }
    fn on_event_time(
        &mut self,
        time: i64,
        window: &W,
        ctx: &mut TriggerContext<'_, K, W>,
    ) -> Result<TriggerResult> {
        Ok(purging(self.nested.on_event_time(time, window, ctx)?))
    }
    fn on_processing_time(
        &mut self,
        time: i64,
        window: &W,
        ctx: &mut TriggerContext<'_, K, W>,
    ) -> Result<TriggerResult> {
        Ok(purging(self.nested.on_processing_time(time, window, ctx)?))
    }
    fn can_merge(&self) -> bool {
        self.nested.can_merge()
    }
    fn on_merge(&mut self, window: &W, ctx: &mut TriggerContext<'_, K, W>) -> Result<()> {
        self.nested.on_merge(window, ctx)
    }
    fn clear(&mut self, window: &W, ctx: &mut TriggerContext<'_, K, W>) -> Result<()> {
        self.nested.clear(window, ctx)
    }
}

/// Java's `%` (the remainder takes the dividend's sign), which Flink's continuous triggers
/// use to align their first firing.
fn java_rem(a: i64, b: i64) -> i64 {
    a.checked_rem(b).unwrap_or(0)
}

/// How many firings the final watermark may catch up on in one window of a
/// [`ContinuousEventTimeTrigger`] before it stops (only windows ending near `i64::MAX` have
/// more).
const MAX_CATCH_UP_FIRINGS: i64 = 1 << 20;

/// Fires every `interval` ms of event time while the window is open, and at its end (Flink's
/// `ContinuousEventTimeTrigger`): the first firing is at the end of the interval holding the
/// window's first element (`ts - ts % interval + interval`, capped at the window's end), each
/// firing registers the next; the next fire time is keyed state (`fire-time`), merged as the
/// minimum when windows merge. One deliberate difference from Flink: when the end of the
/// input would fire a window more than 2^20 times (a global window, which ends at
/// `i64::MAX`, or one nearly as long), it fires once more at its end instead (Flink's job
/// never finishes there).
///
/// ```
/// use typeinfo_runtime::trigger::ContinuousEventTimeTrigger;
/// use typeinfo_runtime::{StreamExecutionEnvironment, TumblingEventTimeWindows, WatermarkStrategy};
///
/// # fn main() -> typeinfo_runtime::Result<()> {
/// let env = StreamExecutionEnvironment::new();
/// let sums = env
///     .from_collection(vec![5i64, 15, 25, 35])
///     .assign_timestamps_and_watermarks(
///         WatermarkStrategy::for_monotonous_timestamps().emit_per_event().with_timestamp_assigner(|v: &i64, _| *v),
///     )
///     .key_by(|_: &i64| 0u8)
///     .window(TumblingEventTimeWindows::of_millis(100))
///     .trigger(ContinuousEventTimeTrigger::of_millis(10))
///     .reduce(|a, b| a + b)
///     .collect();
/// env.execute("running sums")?;
/// // At 10, 20 and 30 of event time (each passed by the next element), then every 10 ms up
/// // to the window's end when the input ends (the last at its max timestamp, 99).
/// assert_eq!(sums.take(), [20, 45, 80, 80, 80, 80, 80, 80, 80, 80]);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct ContinuousEventTimeTrigger<W = crate::windowing::window::TimeWindow> {
    interval: i64,
    fire_time: TriggerState<W>,
}

impl<W: Window> ContinuousEventTimeTrigger<W> {
    /// Fires every `interval` of event time.
    pub fn of(interval: std::time::Duration) -> Self {
        Self::of_millis(interval.as_millis().min(i64::MAX as u128) as i64)
    }
    /// Fires every `interval` ms of event time (a job with an interval below 1 fails at its
    /// start, naming the trigger).
    pub fn of_millis(interval: i64) -> Self {
        ContinuousEventTimeTrigger {
            interval,
            fire_time: TriggerState::new("fire-time", |a, b| *a.min(b)),
        }
    }
}

impl<W: Window> ContinuousEventTimeTrigger<W> {
    fn register_next<K: Key>(
        &self,
        time: i64,
        window: &W,
        ctx: &mut TriggerContext<'_, K, W>,
    ) -> Result<()> {
        if ctx.current_watermark() == i64::MAX
            && window.max_timestamp().saturating_sub(time) / self.interval > MAX_CATCH_UP_FIRINGS
        {
            // The end of the input, far before the window's end (a global window ends at
            // i64::MAX): Flink registers the next firing `interval` later, which the final
            // watermark fires at once, again and again, up to 2^63 / interval times (its job
            // never finishes). Here the trigger stops after this firing; the window's own
            // timer fires it once more at its end.
            return Ok(());
        }
        let next = self.fire_time.next_fire(time, self.interval, window, ctx)?;
        ctx.register_event_time_timer(next);
        Ok(())
    }
}

/// Refuses an interval a continuous trigger cannot fire by.
fn check_interval(trigger: &str, interval: i64) -> Result<()> {
    if interval < 1 {
        return Err(Error::Config(format!(
            "{trigger} needs an interval of at least 1 ms (got {interval})"
        )));
    }
    Ok(())
}

impl<K: Key, T, W: Window> Trigger<K, T, W> for ContinuousEventTimeTrigger<W> {
    fn initialize_state(&mut self, backend: &mut KeyedBackend<K>) -> Result<()> {
        check_interval("ContinuousEventTimeTrigger", self.interval)?;
        self.fire_time.register(backend)
    }
    fn on_element(
        &mut self,
        _element: &T,
        timestamp: i64,
        window: &W,
        ctx: &mut TriggerContext<'_, K, W>,
    ) -> Result<TriggerResult> {
        if window.max_timestamp() <= ctx.current_watermark() {
            return Ok(TriggerResult::Fire);
        }
        ctx.register_event_time_timer(window.max_timestamp());
        if self.fire_time.handle()?.get(ctx.state(), window)?.is_none() {
            let start = timestamp.saturating_sub(java_rem(timestamp, self.interval));
            self.register_next(start, window, ctx)?;
        }
        Ok(TriggerResult::Continue)
    }
    fn on_event_time(
        &mut self,
        time: i64,
        window: &W,
        ctx: &mut TriggerContext<'_, K, W>,
    ) -> Result<TriggerResult> {
        if time == window.max_timestamp() {
            return Ok(TriggerResult::Fire);
        }
        let state = self.fire_time.handle()?;
        if state.get(ctx.state(), window)? == Some(time) {
            state.clear(ctx.state(), window)?;
            self.register_next(time, window, ctx)?;
            return Ok(TriggerResult::Fire);
        }
        Ok(TriggerResult::Continue)
    }
    fn can_merge(&self) -> bool {
        true
    }
    fn on_merge(&mut self, window: &W, ctx: &mut TriggerContext<'_, K, W>) -> Result<()> {
        let state = self.fire_time.handle()?;
        ctx.merge_state(state)?;
        if let Some(next) = state.get(ctx.state(), window)? {
            ctx.register_event_time_timer(next);
        }
        Ok(())
    }
    fn clear(&mut self, window: &W, ctx: &mut TriggerContext<'_, K, W>) -> Result<()> {
        let state = self.fire_time.handle()?;
        if let Some(time) = state.get(ctx.state(), window)? {
            ctx.delete_event_time_timer(time);
            state.clear(ctx.state(), window)?;
        }
        Ok(())
    }
}

/// Fires every `interval` ms of processing time (Flink's `ContinuousProcessingTimeTrigger`):
/// the first firing at the end of the interval holding the wall clock when the window's first
/// element came, capped at the window's end; the next fire time is keyed state
/// (`fire-time`), merged as the minimum.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use typeinfo_runtime::trigger::ContinuousProcessingTimeTrigger;
/// use typeinfo_runtime::{GlobalWindows, StreamExecutionEnvironment};
///
/// # fn main() -> typeinfo_runtime::Result<()> {
/// let env = StreamExecutionEnvironment::new();
/// let sums = env
///     .from_collection(vec![1i64, 2, 3, 4])
///     .key_by(|_: &i64| 0u8)
///     .window(GlobalWindows)
///     .trigger(ContinuousProcessingTimeTrigger::of(Duration::from_secs(60)))
///     .reduce(|a, b| a + b)
///     .collect();
/// env.execute("running sum")?; // ends: the end of the input fires only the pending firing
/// // Each firing emits the sum so far; how many come before the end depends on the clock
/// // (a minute boundary may pass while the job runs), the last one holds every element.
/// assert_eq!(sums.take().last(), Some(&10));
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct ContinuousProcessingTimeTrigger<W = crate::windowing::window::TimeWindow> {
    interval: i64,
    fire_time: TriggerState<W>,
}

impl<W: Window> ContinuousProcessingTimeTrigger<W> {
    /// Fires every `interval` of processing time.
    pub fn of(interval: std::time::Duration) -> Self {
        Self::of_millis(interval.as_millis().min(i64::MAX as u128) as i64)
    }
    /// Fires every `interval` ms of processing time (a job with an interval below 1 fails at
    /// its start, naming the trigger).
    pub fn of_millis(interval: i64) -> Self {
        ContinuousProcessingTimeTrigger {
            interval,
            fire_time: TriggerState::new("fire-time", |a, b| *a.min(b)),
        }
    }
}

impl<W: Window> ContinuousProcessingTimeTrigger<W> {
    fn register_next<K: Key>(
        &self,
        time: i64,
        window: &W,
        ctx: &mut TriggerContext<'_, K, W>,
    ) -> Result<()> {
        let next = self.fire_time.next_fire(time, self.interval, window, ctx)?;
        ctx.register_processing_time_timer(next);
        Ok(())
    }
}

impl<K: Key, T, W: Window> Trigger<K, T, W> for ContinuousProcessingTimeTrigger<W> {
    fn initialize_state(&mut self, backend: &mut KeyedBackend<K>) -> Result<()> {
        check_interval("ContinuousProcessingTimeTrigger", self.interval)?;
        self.fire_time.register(backend)
    }
    fn on_element(
        &mut self,
        _element: &T,
        _timestamp: i64,
        window: &W,
        ctx: &mut TriggerContext<'_, K, W>,
    ) -> Result<TriggerResult> {
        if self.fire_time.handle()?.get(ctx.state(), window)?.is_none() {
            let now = ctx.current_processing_time();
            self.register_next(now - java_rem(now, self.interval), window, ctx)?;
        }
        Ok(TriggerResult::Continue)
    }
    fn on_processing_time(
        &mut self,
        time: i64,
        window: &W,
        ctx: &mut TriggerContext<'_, K, W>,
    ) -> Result<TriggerResult> {
        let state = self.fire_time.handle()?;
        if state.get(ctx.state(), window)? == Some(time) {
            state.clear(ctx.state(), window)?;
            self.register_next(time, window, ctx)?;
            return Ok(TriggerResult::Fire);
        }
        Ok(TriggerResult::Continue)
    }
    fn can_merge(&self) -> bool {
        true
    }
    fn on_merge(&mut self, window: &W, ctx: &mut TriggerContext<'_, K, W>) -> Result<()> {
        let state = self.fire_time.handle()?;
        ctx.merge_state(state)?;
        if let Some(next) = state.get(ctx.state(), window)? {
            ctx.register_processing_time_timer(next);
        }
        Ok(())
    }
    fn clear(&mut self, window: &W, ctx: &mut TriggerContext<'_, K, W>) -> Result<()> {
        let state = self.fire_time.handle()?;
        if let Some(time) = state.get(ctx.state(), window)? {
            ctx.delete_processing_time_timer(time);
            state.clear(ctx.state(), window)?;
        }
        Ok(())
    }
}

/// Fires when an element's delta to the element it last fired on (or the window's first
/// element) exceeds `threshold` (Flink's `DeltaTrigger`); the last element is keyed state per
/// window (`last-element`). It cannot merge.
///
/// ```
/// use typeinfo_runtime::trigger::DeltaTrigger;
/// use typeinfo_runtime::{GlobalWindows, StreamExecutionEnvironment};
///
/// # fn main() -> typeinfo_runtime::Result<()> {
/// let env = StreamExecutionEnvironment::new();
/// let maxima = env
///     .from_collection(vec![10i64, 12, 25, 26, 50])
///     .key_by(|_: &i64| 0u8)
///     .window(GlobalWindows)
///     .trigger(DeltaTrigger::of(10.0, |last: &i64, v: &i64| (v - last) as f64))
///     .reduce(|a, b| *a.max(b))
///     .collect();
/// env.execute("jumps")?;
/// assert_eq!(maxima.take(), [25, 50]); // 25 is 15 above 10; 50 is 25 above 25
/// # Ok(())
/// # }
/// ```
pub struct DeltaTrigger<T, W> {
    threshold: f64,
    delta: DeltaFunction<T>,
    descriptor: ValueStateDescriptor<T>,
    last: Option<ValueState<W, T>>,
}

impl<T: Clone, W> Clone for DeltaTrigger<T, W> {
    fn clone(&self) -> Self {
        DeltaTrigger {
            threshold: self.threshold,
            delta: Arc::clone(&self.delta),
            descriptor: self.descriptor.clone(),
            last: self.last.clone(),
        }
    }
}

impl<T, W> fmt::Debug for DeltaTrigger<T, W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeltaTrigger")
            .field("threshold", &self.threshold)
            .finish_non_exhaustive()
    }
}

impl<T: Data, W: Window> DeltaTrigger<T, W> {
    /// Fires when `delta(last, element) > threshold`.
    pub fn of(threshold: f64, delta: impl Fn(&T, &T) -> f64 + Send + Sync + 'static) -> Self {
        DeltaTrigger {
            threshold,
            delta: Arc::new(delta),
            descriptor: ValueStateDescriptor::new("last-element"),
            last: None,
        }
    }
}

impl<K: Key, T: Data, W: Window> Trigger<K, T, W> for DeltaTrigger<T, W> {
    fn initialize_state(&mut self, backend: &mut KeyedBackend<K>) -> Result<()> {
        self.last = Some(backend.value_state(&self.descriptor)?);
        Ok(())
    }
    fn on_element(
        &mut self,
        element: &T,
        _timestamp: i64,
        window: &W,
        ctx: &mut TriggerContext<'_, K, W>,
    ) -> Result<TriggerResult> {
        let state = self.last.as_ref().ok_or_else(unregistered)?;
        match state.value(ctx.state(), window)? {
            None => {
                state.update(ctx.state(), window, element.clone())?;
                Ok(TriggerResult::Continue)
            }
            Some(last) if (self.delta)(&last, element) > self.threshold => {
                state.update(ctx.state(), window, element.clone())?;
                Ok(TriggerResult::Fire)
            }
            Some(_) => Ok(TriggerResult::Continue),
        }
    }
    fn clear(&mut self, window: &W, ctx: &mut TriggerContext<'_, K, W>) -> Result<()> {
        if let Some(state) = &self.last {
            state.clear(ctx.state(), window)?;
        }
        Ok(())
    }
}
