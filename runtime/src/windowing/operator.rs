//! The window operator of a keyed stream: Flink's `WindowOperator` (and, with an evictor, its
//! `EvictingWindowOperator`), step by step.
//!
//! For each record: the assigner gives its windows (merging windows merge first: the trigger
//! moves its state to the merged window, the merged windows' trigger state and cleanup timers
//! are cleared, and their contents merge); a window whose cleanup time the watermark has
//! passed is skipped; otherwise the record is added to the window's contents and the trigger
//! decides (fire, purge), and the window's cleanup timer is registered. A record no window
//! took is late if `timestamp + allowed lateness <= watermark`. For each timer: the trigger
//! decides; at the window's cleanup time its contents, trigger state, per-window function
//! state and merging-set entry are cleared.

use std::sync::Arc;

use typeinfo_state::{
    AggregateFunction, AggregatingState, KeyedBackend, KeyedStateBackend, ListState, ReducingState,
    StateId, ValueState, ValueStateDescriptor,
};

use crate::checkpoint::format::OperatorPart;
use crate::error::{Error, Result};
use crate::operator::context::{RuntimeContext, TimeDomain};
use crate::operator::contract::{
    now_ms, Operator, OperatorSetup, Outputs, SideRecord, FIRING_SLICE,
};
use crate::operator::element::NO_TIMESTAMP;
use crate::operator::timer::KeyedTimers;
use crate::types::{Data, Key};
use crate::windowing::assigner::WindowAssigner;
use crate::windowing::evictor::{Evictor, EvictorContext, TimestampedValue};
use crate::windowing::function::{ProcessWindowFunction, WindowContext, WindowFunctionSetup};
use crate::windowing::trigger::{Trigger, TriggerContext, TriggerResult};
use crate::windowing::window::{MergingState, Window};

/// Turns what a window holds when it fires into output: a closure, or a user's
/// [`ProcessWindowFunction`].
pub(crate) trait InternalWindowFunction<K: Key, W: Window, R, O>: Send + 'static {
    fn open(&mut self, _setup: &mut WindowFunctionSetup<'_, K, W>) -> Result<()> {
        Ok(())
    }
    fn process(&mut self, key: &K, input: R, ctx: &mut WindowContext<'_, K, W, O>) -> Result<()>;
    fn clear(&mut self, _ctx: &mut WindowContext<'_, K, W, O>) -> Result<()> {
        Ok(())
    }
}

/// `f(key, window, result)`: one output per firing.
pub(crate) struct ResultFn<F>(pub(crate) Arc<F>);

impl<F> Clone for ResultFn<F> {
    fn clone(&self) -> Self {
        ResultFn(Arc::clone(&self.0))
    }
}

impl<K: Key, W: Window, R, O, F> InternalWindowFunction<K, W, R, O> for ResultFn<F>
where
    F: Fn(&K, &W, R) -> O + Send + Sync + 'static,
{
    #[inline]
    fn process(&mut self, key: &K, input: R, ctx: &mut WindowContext<'_, K, W, O>) -> Result<()> {
        let out = (self.0)(key, ctx.window, input);
        ctx.collect(out);
        Ok(())
    }
}

/// `f(key, window, elements, out)` (Flink's `WindowFunction.apply`).
pub(crate) struct ApplyFn<F>(pub(crate) Arc<F>);

impl<F> Clone for ApplyFn<F> {
    fn clone(&self) -> Self {
        ApplyFn(Arc::clone(&self.0))
    }
}

impl<K: Key, W: Window, I, O, F> InternalWindowFunction<K, W, Vec<I>, O> for ApplyFn<F>
where
    F: Fn(&K, &W, Vec<I>, &mut Vec<O>) + Send + Sync + 'static,
{
    fn process(
        &mut self,
        key: &K,
        input: Vec<I>,
        ctx: &mut WindowContext<'_, K, W, O>,
    ) -> Result<()> {
        (self.0)(key, ctx.window, input, ctx.out);
        Ok(())
    }
}

/// A user's process window function over the elements.
#[derive(Clone)]
pub(crate) struct ProcessAll<F>(pub(crate) F);

impl<K: Key, W: Window, I, O, F: ProcessWindowFunction<K, I, O, W>>
    InternalWindowFunction<K, W, Vec<I>, O> for ProcessAll<F>
{
    fn open(&mut self, setup: &mut WindowFunctionSetup<'_, K, W>) -> Result<()> {
        self.0.open(setup)
    }
    fn process(
        &mut self,
        key: &K,
        input: Vec<I>,
        ctx: &mut WindowContext<'_, K, W, O>,
    ) -> Result<()> {
        self.0.process(key, input, ctx)
    }
    fn clear(&mut self, ctx: &mut WindowContext<'_, K, W, O>) -> Result<()> {
        self.0.clear(ctx)
    }
}

/// A user's process window function over the one incremental result (aggregate or reduce).
#[derive(Clone)]
pub(crate) struct ProcessOne<F>(pub(crate) F);

impl<K: Key, W: Window, R, O, F: ProcessWindowFunction<K, R, O, W>>
    InternalWindowFunction<K, W, R, O> for ProcessOne<F>
{
    fn open(&mut self, setup: &mut WindowFunctionSetup<'_, K, W>) -> Result<()> {
        self.0.open(setup)
    }
    fn process(&mut self, key: &K, input: R, ctx: &mut WindowContext<'_, K, W, O>) -> Result<()> {
        self.0.process(key, vec![input], ctx)
    }
    fn clear(&mut self, ctx: &mut WindowContext<'_, K, W, O>) -> Result<()> {
        self.0.clear(ctx)
    }
}

/// What a window keeps and what it emits when it fires.
pub(crate) trait WindowContents<K: Key, W: Window, I, O>: 'static {
    /// Registers the function's state.
    fn open(&mut self, setup: &mut WindowFunctionSetup<'_, K, W>) -> Result<()>;
    /// Adds `value` (with its timestamp) to `window`'s contents; `true` when it may be the
    /// window's first element (`false` promises the window held contents before).
    fn add(
        &mut self,
        backend: &mut KeyedBackend<K>,
        window: &W,
        value: &I,
        timestamp: i64,
    ) -> Result<bool>;
    /// Runs the function on the contents stored under `state_window`, if there are any.
    fn emit(&mut self, state_window: &W, ctx: &mut WindowContext<'_, K, W, O>) -> Result<()>;
    /// The window is cleaned up: the function's own clearing.
    fn clear_function(&mut self, ctx: &mut WindowContext<'_, K, W, O>) -> Result<()>;
    /// The state the contents live in.
    fn state(&self) -> &dyn MergingState<K, W>;
}

/// Makes a window's contents, registering their state in a subtask's backend.
pub(crate) type ContentsFactory<K, W, I, O> =
    Arc<dyn Fn(&mut KeyedBackend<K>) -> Result<Box<dyn WindowContents<K, W, I, O>>> + Send + Sync>;

/// State that folds each record into one value per window: aggregating (`aggregate`) or
/// reducing (`reduce`) state.
pub(crate) trait IncrementalState<K: Key, W: Window, I, R>: MergingState<K, W> {
    /// Folds `value` into the window's value; `true` when it is the window's first.
    fn add(&self, backend: &mut KeyedBackend<K>, window: &W, value: &I) -> Result<bool>;
    fn result(&self, backend: &mut KeyedBackend<K>, window: &W) -> Result<Option<R>>;
}

impl<K: Key, W: Window, I: 'static, A: Data, R: 'static> IncrementalState<K, W, I, R>
    for AggregatingState<W, I, A, R>
{
    #[inline]
    fn add(&self, backend: &mut KeyedBackend<K>, window: &W, value: &I) -> Result<bool> {
        Ok(self.add_is_first(backend, window, value)?)
    }
    fn result(&self, backend: &mut KeyedBackend<K>, window: &W) -> Result<Option<R>> {
        Ok(self.get(backend, window)?)
    }
}

impl<K: Key, W: Window, I: Data> IncrementalState<K, W, I, I> for ReducingState<W, I> {
    fn add(&self, backend: &mut KeyedBackend<K>, window: &W, value: &I) -> Result<bool> {
        Ok(self.add_is_first(backend, window, value.clone())?)
    }
    fn result(&self, backend: &mut KeyedBackend<K>, window: &W) -> Result<Option<I>> {
        Ok(self.get(backend, window)?)
    }
}

/// An incrementally aggregated or reduced window: one value per window, emitted when it fires.
pub(crate) struct IncrementalContents<S, F, R> {
    state: S,
    function: F,
    _result: std::marker::PhantomData<fn() -> R>,
}

impl<S, F, R> IncrementalContents<S, F, R> {
    pub(crate) fn new(state: S, function: F) -> Self {
        IncrementalContents {
            state,
            function,
            _result: std::marker::PhantomData,
        }
    }
}

impl<K, W, I, R, O, S, F> WindowContents<K, W, I, O> for IncrementalContents<S, F, R>
where
    K: Key,
    W: Window,
    R: 'static,
    O: 'static,
    S: IncrementalState<K, W, I, R> + 'static,
    F: InternalWindowFunction<K, W, R, O>,
{
    fn open(&mut self, setup: &mut WindowFunctionSetup<'_, K, W>) -> Result<()> {
        self.function.open(setup)
    }
    #[inline]
    fn add(
        &mut self,
        backend: &mut KeyedBackend<K>,
        window: &W,
        value: &I,
        _timestamp: i64,
    ) -> Result<bool> {
        self.state.add(backend, window, value)
    }
    fn emit(&mut self, state_window: &W, ctx: &mut WindowContext<'_, K, W, O>) -> Result<()> {
        if let Some(result) = self.state.result(ctx.backend, state_window)? {
            let key = ctx.key;
            self.function.process(key, result, ctx)?;
        }
        Ok(())
    }
    fn clear_function(&mut self, ctx: &mut WindowContext<'_, K, W, O>) -> Result<()> {
        self.function.clear(ctx)
    }
    fn state(&self) -> &dyn MergingState<K, W> {
        &self.state
    }
}

/// A window that keeps every record for a function that sees them all (`apply`, `process`).
pub(crate) struct ListContents<W, I, F> {
    pub(crate) state: ListState<W, I>,
    pub(crate) function: F,
}

impl<K: Key, W: Window, I: Data, O: 'static, F: InternalWindowFunction<K, W, Vec<I>, O>>
    WindowContents<K, W, I, O> for ListContents<W, I, F>
{
    fn open(&mut self, setup: &mut WindowFunctionSetup<'_, K, W>) -> Result<()> {
        self.function.open(setup)
    }
    fn add(
        &mut self,
        backend: &mut KeyedBackend<K>,
        window: &W,
        value: &I,
        _timestamp: i64,
    ) -> Result<bool> {
        // Whether the list was empty is not known without a read: report every element as
        // possibly the first.
        self.state.add(backend, window, value.clone())?;
        Ok(true)
    }
    fn emit(&mut self, state_window: &W, ctx: &mut WindowContext<'_, K, W, O>) -> Result<()> {
        let values = self.state.get(ctx.backend, state_window)?;
        if !values.is_empty() {
            let key = ctx.key;
            self.function.process(key, values, ctx)?;
        }
        Ok(())
    }
    fn clear_function(&mut self, ctx: &mut WindowContext<'_, K, W, O>) -> Result<()> {
        self.function.clear(ctx)
    }
    fn state(&self) -> &dyn MergingState<K, W> {
        &self.state
    }
}

/// How an evicting window turns its remaining elements into the function's input: an
/// aggregate's result, a reduction, or the elements themselves. `None` skips the function.
pub(crate) type Fold<I, R> = Arc<dyn Fn(Vec<I>) -> Option<R> + Send + Sync>;

/// The fold of `aggregate` over a whole window: the result of an accumulator that took every
/// element (the empty accumulator's result when the evictor left none, as Flink's
/// `AggregateApplyWindowFunction`).
pub(crate) fn aggregate_fold<I: 'static, A: 'static, R: 'static>(
    function: Arc<dyn AggregateFunction<I, A, R>>,
) -> Fold<I, R> {
    Arc::new(move |elements| {
        let mut acc = function.create_accumulator();
        for e in &elements {
            function.add(e, &mut acc);
        }
        Some(function.get_result(&acc))
    })
}

/// The fold of `reduce` over a whole window (nothing when the evictor left no element).
pub(crate) fn reduce_fold<I: 'static>(reduce: typeinfo_state::ReduceFn<I>) -> Fold<I, I> {
    Arc::new(move |elements| {
        let mut it = elements.into_iter();
        let first = it.next()?;
        Some(it.fold(first, |acc, e| reduce(&acc, &e)))
    })
}

/// A window with an evictor: every element kept with its timestamp; at each firing the
/// evictor removes some before and after the function (Flink's `EvictingWindowOperator`).
pub(crate) struct EvictingContents<W, I, R, F> {
    pub(crate) state: ListState<W, (i64, I)>,
    pub(crate) evictor: Arc<dyn Evictor<I, W>>,
    pub(crate) fold: Fold<I, R>,
    pub(crate) function: F,
}

impl<K, W, I, R, O, F> WindowContents<K, W, I, O> for EvictingContents<W, I, R, F>
where
    K: Key,
    W: Window,
    I: Data,
    R: 'static,
    O: 'static,
    F: InternalWindowFunction<K, W, R, O>,
{
    fn open(&mut self, setup: &mut WindowFunctionSetup<'_, K, W>) -> Result<()> {
        self.function.open(setup)
    }
    fn add(
        &mut self,
        backend: &mut KeyedBackend<K>,
        window: &W,
        value: &I,
        timestamp: i64,
    ) -> Result<bool> {
        self.state
            .add(backend, window, (timestamp, value.clone()))?;
        Ok(true)
    }
    fn emit(&mut self, state_window: &W, ctx: &mut WindowContext<'_, K, W, O>) -> Result<()> {
        let stored = self.state.get(ctx.backend, state_window)?;
        if stored.is_empty() {
            return Ok(());
        }
        let mut elements: Vec<TimestampedValue<I>> = stored
            .into_iter()
            .map(|(ts, value)| TimestampedValue {
                value,
                timestamp: (ts != NO_TIMESTAMP).then_some(ts),
            })
            .collect();
        let evictor_ctx = EvictorContext {
            watermark: ctx.watermark,
        };
        self.evictor
            .evict_before(&mut elements, ctx.window, &evictor_ctx);
        let input: Vec<I> = elements.iter().map(|e| e.value.clone()).collect();
        if let Some(r) = (self.fold)(input) {
            let key = ctx.key;
            self.function.process(key, r, ctx)?;
        }
        self.evictor
            .evict_after(&mut elements, ctx.window, &evictor_ctx);
        let remaining = elements
            .into_iter()
            .map(|e| (e.timestamp.unwrap_or(NO_TIMESTAMP), e.value))
            .collect();
        self.state.update(ctx.backend, state_window, remaining)?;
        Ok(())
    }
    fn clear_function(&mut self, ctx: &mut WindowContext<'_, K, W, O>) -> Result<()> {
        self.function.clear(ctx)
    }
    fn state(&self) -> &dyn MergingState<K, W> {
        &self.state
    }
}

/// The windows of one key of a merging assigner, each with the window its contents are
/// stored under (Flink's `MergingWindowSet`, persisted in keyed state per key).
#[derive(Debug, Clone)]
struct MergingWindowSet<W> {
    /// (window, state window), sorted by window.
    mapping: Vec<(W, W)>,
}

/// One merge: the merged windows (without the new window), the merge result, its state
/// window, and the state windows to merge into it.
struct Merge<W> {
    result: W,
    merged_windows: Vec<W>,
    state_window: W,
    merged_state_windows: Vec<W>,
}

impl<W: Window> MergingWindowSet<W> {
    fn state_window(&self, window: &W) -> Option<W> {
        self.mapping
            .iter()
            .find(|(w, _)| w == window)
            .map(|(_, s)| s.clone())
    }

    fn remove(&mut self, window: &W) -> Option<W> {
        let i = self.mapping.iter().position(|(w, _)| w == window)?;
        Some(self.mapping.remove(i).1)
    }

    fn put(&mut self, window: W, state_window: W) {
        self.remove(&window);
        self.mapping.push((window, state_window));
        self.mapping.sort();
    }

    /// Adds `new` and merges what overlaps; returns the window `new` ended up in and the
    /// merges to apply to contents, trigger state and timers (Flink's
    /// `MergingWindowSet.addWindow`).
    ///
    /// # Errors
    ///
    /// [`Error::Corrupt`] when the set (read from state) maps a member to no state window.
    fn add_window<A: WindowAssigner<Window = W>>(
        &mut self,
        new: W,
        assigner: &A,
    ) -> Result<(W, Vec<Merge<W>>)> {
        let mut windows: Vec<W> = self.mapping.iter().map(|(w, _)| w.clone()).collect();
        windows.push(new.clone());
        let groups = assigner.merge_windows(&windows);
        let mut result = new.clone();
        let mut merged_new = false;
        let mut merges = Vec::new();
        let any_merge = !groups.is_empty();
        for (cover, mut members) in groups {
            if let Some(i) = members.iter().position(|w| *w == new) {
                members.remove(i);
                merged_new = true;
                result = cover.clone();
            }
            let state_window = members
                .first()
                .and_then(|first| self.state_window(first))
                .ok_or_else(|| {
                    Error::Corrupt(format!(
                        "the merging window set has no state window for {members:?}"
                    ))
                })?;
            let mut merged_state_windows: Vec<W> =
                members.iter().filter_map(|w| self.remove(w)).collect();
            self.put(cover.clone(), state_window.clone());
            merged_state_windows.retain(|w| *w != state_window);
            if !(members.len() == 1 && members[0] == cover) {
                merges.push(Merge {
                    result: cover,
                    merged_windows: members,
                    state_window,
                    merged_state_windows,
                });
            }
        }
        if !any_merge || (result == new && !merged_new) {
            self.put(result.clone(), result.clone());
        }
        Ok((result, merges))
    }
}

/// Where a key's [`MergingWindowSet`] is kept: (window, state window) pairs.
type MergingSetState<W> = ValueState<(), Vec<(W, W)>>;

/// The window operator of a keyed stream, with the assigner `A`, the trigger `Tr` and the
/// contents (and function) chosen by the stream.
pub(crate) struct WindowOperator<K: Key, I, O, A: WindowAssigner, Tr> {
    name: String,
    key_selector: Arc<dyn Fn(&I) -> K + Send + Sync>,
    assigner: A,
    trigger: Tr,
    event_time: bool,
    /// The trigger is `EventTimeTrigger` (see [`Trigger::is_event_time_trigger`]).
    fast_trigger: bool,
    allowed_lateness: i64,
    late_output: bool,
    backend: KeyedBackend<K>,
    contents: Box<dyn WindowContents<K, A::Window, I, O>>,
    merging: Option<MergingSetState<A::Window>>,
    timers: KeyedTimers<K, A::Window>,
    /// States of the function that are cleared with each window.
    per_window: Vec<StateId>,
    watermark: i64,
    /// A watermark whose due timers are not all fired yet (see `Operator::firing`).
    firing: Option<i64>,
    windows: Vec<A::Window>,
    results: Vec<O>,
    tagged: Vec<(i64, SideRecord)>,
    late_dropped: u64,
    runtime: RuntimeContext,
    setup: OperatorSetup,
}

impl<K, I, O, A, Tr> WindowOperator<K, I, O, A, Tr>
where
    K: Key,
    I: Data,
    O: Data,
    A: WindowAssigner,
    Tr: Trigger<K, I, A::Window>,
{
    pub(crate) fn new(
        setup: &OperatorSetup,
        key_selector: Arc<dyn Fn(&I) -> K + Send + Sync>,
        assigner: A,
        mut trigger: Tr,
        allowed_lateness: i64,
        late_output: bool,
        contents: &ContentsFactory<K, A::Window, I, O>,
    ) -> Result<Self> {
        let mut backend = setup.keyed_backend::<K>()?;
        let mut contents = contents(&mut backend)?;
        let merging = if assigner.is_merging() {
            Some(backend.value_state(&ValueStateDescriptor::new("window-merging-set"))?)
        } else {
            None
        };
        let timers = KeyedTimers::new(
            &mut backend,
            crate::checkpoint::format::TimerState::Window.name(),
            setup,
        )?;
        trigger.initialize_state(&mut backend)?;
        let runtime = RuntimeContext::new(setup);
        let mut per_window = Vec::new();
        contents.open(&mut WindowFunctionSetup {
            backend: &mut backend,
            per_window: &mut per_window,
            runtime: &runtime,
            _window: std::marker::PhantomData,
        })?;
        if merging.is_some() && !per_window.is_empty() {
            // Flink's `MergingWindowStateStore`: per-window state cannot follow merges.
            return Err(Error::Config(format!(
                "operator `{}`: per-window state is not allowed with merging windows ({assigner})",
                setup.name
            )));
        }
        let event_time = assigner.is_event_time();
        Ok(WindowOperator {
            name: setup.name.clone(),
            key_selector,
            fast_trigger: trigger.is_event_time_trigger(),
            assigner,
            trigger,
            event_time,
            allowed_lateness: if event_time { allowed_lateness } else { 0 },
            late_output,
            backend,
            contents,
            merging,
            timers,
            per_window,
            watermark: i64::MIN,
            windows: Vec::new(),
            results: Vec::new(),
            tagged: Vec::new(),
            late_dropped: 0,
            firing: None,
            runtime,
            setup: setup.clone(),
        })
    }

    /// `max timestamp + allowed lateness` in event time (`i64::MAX` when that overflows,
    /// which means never); the max timestamp in processing time (Flink's `cleanupTime`).
    fn cleanup_time(&self, window: &A::Window) -> i64 {
        if !self.event_time {
            return window.max_timestamp();
        }
        window
            .max_timestamp()
            .checked_add(self.allowed_lateness)
            .unwrap_or(i64::MAX)
    }

    fn is_window_late(&self, window: &A::Window) -> bool {
        self.event_time && self.cleanup_time(window) <= self.watermark
    }

    /// The time domain of the window's cleanup timers.
    fn domain(&self) -> TimeDomain {
        if self.event_time {
            TimeDomain::EventTime
        } else {
            TimeDomain::ProcessingTime
        }
    }

    fn register_cleanup_timer(&mut self, key: &K, window: &A::Window) {
        let cleanup = self.cleanup_time(window);
        if cleanup == i64::MAX {
            return;
        }
        let domain = self.domain();
        self.timers
            .register(&mut self.backend, domain, key, window, cleanup);
    }

    fn delete_cleanup_timer(&mut self, key: &K, window: &A::Window) {
        let cleanup = self.cleanup_time(window);
        if cleanup == i64::MAX {
            return;
        }
        let domain = self.domain();
        self.timers
            .delete(&mut self.backend, domain, key, window, cleanup);
    }

    /// Runs the function on `window`'s contents (stored under `state_window`) and ships its
    /// results with the window's max timestamp.
    fn emit(
        &mut self,
        key: &K,
        window: &A::Window,
        state_window: &A::Window,
        out: &mut Outputs<O, I>,
    ) -> Result<()> {
        let mut ctx = WindowContext {
            key,
            window,
            watermark: self.watermark,
            backend: &mut self.backend,
            out: &mut self.results,
            tagged: &mut self.tagged,
            runtime: &self.runtime,
        };
        self.contents.emit(state_window, &mut ctx)?;
        let ts = window.max_timestamp();
        for r in self.results.drain(..) {
            out.main.collect(ts, r);
        }
        for (t, r) in self.tagged.drain(..) {
            out.tagged.collect(t, r);
        }
        Ok(())
    }

    /// Acts on a trigger's decision for `window`.
    fn apply(
        &mut self,
        result: TriggerResult,
        key: &K,
        window: &A::Window,
        state_window: &A::Window,
        out: &mut Outputs<O, I>,
    ) -> Result<()> {
        if result.is_fire() {
            self.emit(key, window, state_window, out)?;
        }
        if result.is_purge() {
            self.contents
                .state()
                .clear(&mut self.backend, state_window)?;
        }
        Ok(())
    }

    /// Everything of `window` goes: contents, trigger state, the function's per-window
    /// state, its entry in the merging set (Flink's `clearAllState`). Called when the
    /// window's cleanup timer fires.
    fn clear_all_state(
        &mut self,
        key: &K,
        window: &A::Window,
        state_window: &A::Window,
        set: Option<&mut MergingWindowSet<A::Window>>,
        out: &mut Outputs<O, I>,
    ) -> Result<()> {
        self.contents
            .state()
            .clear(&mut self.backend, state_window)?;
        // EventTimeTrigger's only timer of a window is at its max timestamp, at or before
        // the cleanup time whose timer is firing now: it has fired (timers pop in time
        // order) or is this very timer, so its `clear` would delete nothing.
        if !self.fast_trigger {
            self.trigger.clear(
                window,
                &mut TriggerContext {
                    key,
                    backend: &mut self.backend,
                    timers: &mut self.timers,
                    window,
                    watermark: self.watermark,
                    merged: &[],
                },
            )?;
        }
        let mut ctx = WindowContext {
            key,
            window,
            watermark: self.watermark,
            backend: &mut self.backend,
            out: &mut self.results,
            tagged: &mut self.tagged,
            runtime: &self.runtime,
        };
        self.contents.clear_function(&mut ctx)?;
        for id in &self.per_window {
            self.backend.clear(*id, window)?;
        }
        // A function's clearing may emit to side outputs (with the window's max timestamp,
        // as Flink's `clear` context does); it has no main output (Flink's has no collector).
        if !self.results.is_empty() {
            self.results.clear();
            return Err(Error::Function {
                operator: self.name.clone(),
                message: "a process window function's `clear` emitted to the main output (only side outputs are allowed there)".to_owned(),
            });
        }
        for (t, r) in self.tagged.drain(..) {
            out.tagged.collect(t, r);
        }
        if let Some(set) = set {
            set.remove(window);
        }
        Ok(())
    }

    fn load_set(&mut self) -> Result<MergingWindowSet<A::Window>> {
        let mapping = match self.merging.as_ref() {
            Some(state) => state.value(&mut self.backend, &())?.unwrap_or_default(),
            None => Vec::new(),
        };
        Ok(MergingWindowSet { mapping })
    }

    fn store_set(&mut self, set: &MergingWindowSet<A::Window>) -> Result<()> {
        let Some(state) = self.merging.as_ref() else {
            return Ok(());
        };
        if set.mapping.is_empty() {
            state.clear(&mut self.backend, &())?;
        } else {
            state.update(&mut self.backend, &(), set.mapping.clone())?;
        }
        Ok(())
    }

    fn process_merging(
        &mut self,
        key: &K,
        value: &I,
        ts: i64,
        out: &mut Outputs<O, I>,
    ) -> Result<bool> {
        let mut set = self.load_set()?;
        let mut skipped = true;
        let windows = std::mem::take(&mut self.windows);
        for window in &windows {
            let (actual, merges) = set.add_window(window.clone(), &self.assigner)?;
            for m in merges {
                if self.event_time && self.cleanup_time(&m.result) <= self.watermark {
                    return Err(Error::Function {
                        operator: self.name.clone(),
                        message: format!(
                            "merging made the window {:?} end before the current watermark {}",
                            m.result, self.watermark
                        ),
                    });
                }
                if !self.event_time && m.result.max_timestamp() <= now_ms() {
                    return Err(Error::Function {
                        operator: self.name.clone(),
                        message: format!(
                            "merging made the window {:?} end before the current processing time",
                            m.result
                        ),
                    });
                }
                self.trigger.on_merge(
                    &m.result,
                    &mut TriggerContext {
                        key,
                        backend: &mut self.backend,
                        timers: &mut self.timers,
                        window: &m.result,
                        watermark: self.watermark,
                        merged: &m.merged_windows,
                    },
                )?;
                for w in &m.merged_windows {
                    self.trigger.clear(
                        w,
                        &mut TriggerContext {
                            key,
                            backend: &mut self.backend,
                            timers: &mut self.timers,
                            window: w,
                            watermark: self.watermark,
                            merged: &[],
                        },
                    )?;
                    self.delete_cleanup_timer(key, w);
                }
                self.contents.state().merge(
                    &mut self.backend,
                    &m.state_window,
                    &m.merged_state_windows,
                )?;
            }
            if self.is_window_late(&actual) {
                set.remove(&actual);
                continue;
            }
            skipped = false;
            let state_window = set.state_window(&actual).ok_or_else(|| {
                Error::Corrupt(format!(
                    "the merging window set lost the window {actual:?} it just added"
                ))
            })?;
            self.contents
                .add(&mut self.backend, &state_window, value, ts)?;
            self.on_element(key, value, ts, &actual, &state_window, out)?;
        }
        self.windows = windows;
        self.store_set(&set)?;
        Ok(skipped)
    }

    /// Adds `value` to a window of a non-merging assigner; `false` when the window is late
    /// (nothing added).
    #[inline]
    fn add_to_window(
        &mut self,
        key: &K,
        window: A::Window,
        value: &I,
        ts: i64,
        out: &mut Outputs<O, I>,
    ) -> Result<bool> {
        if self.is_window_late(&window) {
            return Ok(false);
        }
        let first = self.contents.add(&mut self.backend, &window, value, ts)?;
        if self.fast_trigger && !first {
            // EventTimeTrigger on a window that held contents: its timer is registered, and
            // so is the cleanup timer; it fires now only if the watermark passed the window
            // (a late element within allowed lateness).
            if window.max_timestamp() <= self.watermark {
                self.emit(key, &window, &window, out)?;
            }
            return Ok(true);
        }
        self.on_element(key, value, ts, &window, &window, out)?;
        Ok(true)
    }

    /// An element was added to `window` (stored under `state_window`): the trigger decides,
    /// then the window's cleanup timer is registered (Flink's `processElement`, per window).
    fn on_element(
        &mut self,
        key: &K,
        value: &I,
        ts: i64,
        window: &A::Window,
        state_window: &A::Window,
        out: &mut Outputs<O, I>,
    ) -> Result<()> {
        let result = self.trigger.on_element(
            value,
            ts,
            window,
            &mut TriggerContext {
                key,
                backend: &mut self.backend,
                timers: &mut self.timers,
                window,
                watermark: self.watermark,
                merged: &[],
            },
        )?;
        self.apply(result, key, window, state_window, out)?;
        // EventTimeTrigger without allowed lateness: the cleanup time is the window's max
        // timestamp, whose timer the trigger has just registered (the window is not late, so
        // the trigger did not fire at once); a second registration would only find it.
        if !(self.fast_trigger && self.event_time && self.allowed_lateness == 0) {
            self.register_cleanup_timer(key, window);
        }
        Ok(())
    }

    /// Processes one record; `key_group` is its key's group when the exchange computed it.
    #[inline]
    fn process_record(
        &mut self,
        ts: i64,
        value: I,
        key_group: Option<u16>,
        out: &mut Outputs<O, I>,
    ) -> Result<()> {
        let time = if self.event_time {
            if ts == NO_TIMESTAMP {
                return Err(Error::MissingTimestamp {
                    operator: self.name.clone(),
                });
            }
            ts
        } else {
            now_ms()
        };
        let key = (self.key_selector)(&value);
        match key_group {
            Some(group) => self.backend.set_current_key_in_group(&key, group)?,
            None => self.backend.set_current_key(&key)?,
        }
        let out_of_range = |this: &Self| Error::TimestampOutOfRange {
            operator: this.name.clone(),
            timestamp: time,
            assigner: this.assigner.to_string(),
        };
        let skipped = if let Some(window) = self.assigner.assign_one(time) {
            // One window (tumbling, global): no list of windows to fill and read back.
            let window = window.map_err(|_| out_of_range(self))?;
            !self.add_to_window(&key, window, &value, ts, out)?
        } else {
            let mut windows = std::mem::take(&mut self.windows);
            let assigned = self.assigner.assign_windows(time, &mut windows);
            self.windows = windows;
            if assigned.is_err() {
                return Err(out_of_range(self));
            }
            if self.merging.is_some() {
                self.process_merging(&key, &value, ts, out)?
            } else {
                let mut skipped = true;
                for i in 0..self.windows.len() {
                    let window = self.windows[i].clone();
                    if self.add_to_window(&key, window, &value, ts, out)? {
                        skipped = false;
                    }
                }
                skipped
            }
        };
        if skipped && self.event_time && ts.saturating_add(self.allowed_lateness) <= self.watermark
        {
            if self.late_output {
                out.side.collect(ts, value);
            } else {
                self.late_dropped += 1;
            }
        }
        // A timer registration that failed on disk (inside a trigger) fails the record.
        self.timers.check()
    }

    /// Fires a timer of `key` for `window` at `time` in `domain`.
    fn on_timer(
        &mut self,
        time: i64,
        key: K,
        window: A::Window,
        domain: TimeDomain,
        out: &mut Outputs<O, I>,
    ) -> Result<()> {
        self.backend.set_current_key(&key)?;
        let mut set = None;
        let state_window = if self.merging.is_some() {
            let s = self.load_set()?;
            // A timer of a window merged away (its trigger did not delete it): nothing left.
            let Some(state_window) = s.state_window(&window) else {
                return Ok(());
            };
            set = Some(s);
            state_window
        } else {
            window.clone()
        };
        let mut ctx = TriggerContext {
            key: &key,
            backend: &mut self.backend,
            timers: &mut self.timers,
            window: &window,
            watermark: self.watermark,
            merged: &[],
        };
        let result = match domain {
            TimeDomain::EventTime => self.trigger.on_event_time(time, &window, &mut ctx)?,
            TimeDomain::ProcessingTime => {
                self.trigger.on_processing_time(time, &window, &mut ctx)?
            }
        };
        self.apply(result, &key, &window, &state_window, out)?;
        let own_domain = self.event_time == (domain == TimeDomain::EventTime);
        if own_domain && time == self.cleanup_time(&window) {
            self.clear_all_state(&key, &window, &state_window, set.as_mut(), out)?;
        }
        if let Some(s) = set {
            self.store_set(&s)?;
        }
        Ok(())
    }
}

impl<K, I, O, A, Tr> Operator<I, O> for WindowOperator<K, I, O, A, Tr>
where
    K: Key,
    I: Data,
    O: Data,
    A: WindowAssigner,
    Tr: Trigger<K, I, A::Window>,
{
    #[inline]
    fn process(&mut self, ts: i64, value: I, out: &mut Outputs<O, I>) -> Result<()> {
        self.process_record(ts, value, None, out)
    }

    #[inline]
    fn process_in_group(
        &mut self,
        ts: i64,
        value: I,
        key_group: u16,
        out: &mut Outputs<O, I>,
    ) -> Result<()> {
        self.process_record(ts, value, Some(key_group), out)
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
            let Some((time, key, window)) =
                self.timers
                    .pop_due(&mut self.backend, TimeDomain::EventTime, watermark)?
            else {
                self.firing = None;
                out.watermark(watermark);
                return Ok(());
            };
            self.on_timer(time, key, window, TimeDomain::EventTime, out)?;
        }
        Ok(())
    }

    fn next_processing_time(&self) -> Option<i64> {
        self.timers.next_processing_time()
    }

    fn processing_time(&mut self, now: i64, out: &mut Outputs<O, I>) -> Result<()> {
        while let Some((time, key, window)) =
            self.timers
                .pop_due(&mut self.backend, TimeDomain::ProcessingTime, now)?
        {
            self.on_timer(time, key, window, TimeDomain::ProcessingTime, out)?;
        }
        Ok(())
    }

    fn end_of_key(&mut self, out: &mut Outputs<O, I>) -> Result<()> {
        self.watermark = i64::MAX;
        while let Some((time, key, window, domain)) =
            self.timers.pop_end_of_key(&mut self.backend)?
        {
            self.on_timer(time, key, window, domain, out)?;
        }
        self.watermark = i64::MIN;
        // What the firings left (a window whose trigger never fired, a count window's
        // remainder) goes with the key.
        self.backend.clear_current_key_group()?;
        Ok(())
    }

    fn finish(&mut self, out: &mut Outputs<O, I>) -> Result<()> {
        // Pending processing-time timers fire at the end of the input, as if the clock had
        // jumped to the latest of them (see the crate docs); a timer a firing registers
        // beyond it (a continuous trigger's next firing) does not.
        if let Some(last) = self
            .timers
            .latest(&self.backend, TimeDomain::ProcessingTime)?
        {
            while let Some((time, key, window)) =
                self.timers
                    .pop_due(&mut self.backend, TimeDomain::ProcessingTime, last)?
            {
                self.on_timer(time, key, window, TimeDomain::ProcessingTime, out)?;
            }
        }
        if self.late_dropped > 0 {
            self.setup.job.count(
                &format!("{}.numLateRecordsDropped", self.name),
                self.late_dropped,
            );
        }
        Ok(())
    }

    fn snapshot(
        &mut self,
        _epoch: u64,
        keyed: &crate::checkpoint::store::KeyedPart<'_>,
    ) -> Result<Vec<u8>> {
        self.timers.snapshot(&mut self.backend, keyed)?;
        Ok(self.late_dropped.to_le_bytes().to_vec())
    }

    fn restore(
        &mut self,
        keyed: &[crate::checkpoint::native_part::KeyedFile],
        parts: &[OperatorPart],
    ) -> Result<()> {
        self.watermark = self
            .timers
            .restore(&mut self.backend, keyed, parts, &self.setup)?;
        Ok(())
    }
}

/// Makes the contents of a window: incremental (aggregate, reduce), a list (apply,
/// process), or, with an evictor, every element with its timestamp.
pub(crate) fn evicting_contents<K, W, I, R, O, F>(
    backend: &mut KeyedBackend<K>,
    evictor: Arc<dyn Evictor<I, W>>,
    fold: Fold<I, R>,
    function: F,
) -> Result<Box<dyn WindowContents<K, W, I, O>>>
where
    K: Key,
    W: Window,
    I: Data,
    R: 'static,
    O: 'static,
    F: InternalWindowFunction<K, W, R, O>,
{
    Ok(Box::new(EvictingContents {
        state: backend.list_state(&typeinfo_state::ListStateDescriptor::new("window-contents"))?,
        evictor,
        fold,
        function,
    }))
}
