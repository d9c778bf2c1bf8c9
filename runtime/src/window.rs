//! Keyed windows with Flink's semantics: assigners, the window operator, session merging.
//!
//! - Tumbling: a record at `ts` belongs to `[start, start + size)` with
//!   `start = ts - ((ts - offset) mod size)` (non-negative modulo).
//! - Sliding: to every `[s, s + size)` with `s = last_start, last_start - slide, ...` while
//!   `s > ts - size`, where `last_start` is the tumbling start for `slide`.
//! - Session: to `[ts, ts + gap)`; windows of a key that overlap or touch merge into their
//!   cover, and so do their contents and timers (Flink's `MergingWindowSet`).
//!
//! An event-time window fires when the watermark reaches its max timestamp `end - 1`, and is
//! kept until `max timestamp + allowed lateness` (its cleanup time). A record whose window is
//! past its cleanup time is not added to it; a record none of whose windows took it, and whose
//! `timestamp + allowed lateness <= watermark`, is late: it goes to the late-data side output
//! if there is one, else it is dropped and counted (`<operator>.numLateRecordsDropped`). A
//! record that arrives after its window fired but before the cleanup time fires the window
//! again with the updated contents. Processing-time windows assign and fire by the wall clock.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use typeinfo::TypeInfo;
use typeinfo_state::{
    AggregatingState, KeyedStateBackend, ListState, ReducingState, ValueState, ValueStateDescriptor,
};

use crate::channel::NO_TIMESTAMP;
use crate::checkpoint::OperatorPart;
use crate::error::{Error, Result};
use crate::operator::{now_ms, Operator, OperatorSetup, Outputs};
use crate::timer::{KeyedTimers, TimerQueue};
use crate::{Data, Key};
use typeinfo_state::KeyedBackend;

/// A window of time `[start, end)`.
#[derive(TypeInfo, Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[typeinfo(name = "typeinfo.runtime.TimeWindow")]
pub struct TimeWindow {
    /// The first timestamp in the window.
    pub start: i64,
    /// The first timestamp after the window.
    pub end: i64,
}

impl TimeWindow {
    /// The window `[start, end)`.
    pub fn new(start: i64, end: i64) -> Self {
        TimeWindow { start, end }
    }

    /// The largest timestamp in the window, `end - 1`.
    pub fn max_timestamp(&self) -> i64 {
        self.end.saturating_sub(1)
    }

    /// Whether the windows overlap or touch.
    pub fn intersects(&self, other: &TimeWindow) -> bool {
        self.start <= other.end && self.end >= other.start
    }

    /// The smallest window containing both.
    pub fn cover(&self, other: &TimeWindow) -> TimeWindow {
        TimeWindow::new(self.start.min(other.start), self.end.max(other.end))
    }
}

impl fmt::Display for TimeWindow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{}, {})", self.start, self.end)
    }
}

/// The start of the window of `size` (with `offset`) that contains `ts`; `None` when that
/// start lies before `i64::MIN` or `size` is not positive (computed without overflow for
/// every `ts` and offset).
///
/// # Examples
///
/// ```
/// use typeinfo_runtime::window::window_start;
///
/// assert_eq!(window_start(17, 0, 10), Some(10));
/// assert_eq!(window_start(-3, 0, 10), Some(-10));
/// assert_eq!(window_start(i64::MIN, 0, 1024), Some(i64::MIN));
/// assert_eq!(window_start(i64::MIN, 0, 10), None); // it would start at i64::MIN - 2
/// ```
#[inline]
pub fn window_start(ts: i64, offset: i64, size: i64) -> Option<i64> {
    if size <= 0 {
        return None;
    }
    match ts.checked_sub(offset) {
        Some(d) => ts.checked_sub(d.rem_euclid(size)),
        None => window_start_wide(ts, offset, size),
    }
}

/// [`window_start`] when `ts - offset` leaves `i64` (only near `i64::MIN`/`i64::MAX`).
#[cold]
fn window_start_wide(ts: i64, offset: i64, size: i64) -> Option<i64> {
    let rem = (i128::from(ts) - i128::from(offset)).rem_euclid(i128::from(size));
    i64::try_from(i128::from(ts) - rem).ok()
}

/// A record's timestamp has no window that `i64` milliseconds can represent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutOfRange;

impl fmt::Display for OutOfRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the window would lie outside the range of i64 milliseconds")
    }
}

impl std::error::Error for OutOfRange {}

fn millis(d: Duration) -> i64 {
    d.as_millis().min(i64::MAX as u128) as i64
}

/// How records are assigned to windows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WindowAssigner {
    /// Fixed-size, non-overlapping windows.
    Tumbling {
        /// The window size in ms.
        size: i64,
        /// The offset of window starts in ms.
        offset: i64,
        /// Event time (`true`) or processing time.
        event_time: bool,
    },
    /// Fixed-size windows starting every `slide` ms.
    Sliding {
        /// The window size in ms.
        size: i64,
        /// The distance between window starts in ms.
        slide: i64,
        /// The offset of window starts in ms.
        offset: i64,
        /// Event time (`true`) or processing time.
        event_time: bool,
    },
    /// Windows per key that end after a gap of inactivity.
    Session {
        /// The gap in ms.
        gap: i64,
        /// Event time (`true`) or processing time.
        event_time: bool,
    },
}

impl WindowAssigner {
    /// Whether windows are in event time.
    pub fn is_event_time(&self) -> bool {
        match *self {
            WindowAssigner::Tumbling { event_time, .. }
            | WindowAssigner::Sliding { event_time, .. }
            | WindowAssigner::Session { event_time, .. } => event_time,
        }
    }

    fn is_merging(&self) -> bool {
        matches!(self, WindowAssigner::Session { .. })
    }

    /// Checks the sizes (Flink's rules: positive sizes, `|offset| < size` or `< slide`).
    pub(crate) fn validate(&self) -> Result<()> {
        let bad = |msg: String| Err(Error::Config(msg));
        match *self {
            WindowAssigner::Tumbling { size, offset, .. } => {
                if size <= 0 || offset.unsigned_abs() >= size as u64 {
                    return bad(format!("tumbling windows need size > 0 and |offset| < size (size {size}, offset {offset})"));
                }
            }
            WindowAssigner::Sliding {
                size,
                slide,
                offset,
                ..
            } => {
                if size <= 0 || slide <= 0 || offset.unsigned_abs() >= slide as u64 {
                    return bad(format!("sliding windows need size > 0, slide > 0 and |offset| < slide (size {size}, slide {slide}, offset {offset})"));
                }
            }
            WindowAssigner::Session { gap, .. } => {
                if gap <= 0 {
                    return bad(format!("session windows need a gap > 0 (gap {gap})"));
                }
            }
        }
        Ok(())
    }

    /// The one window of a record at `ts` for assigners that give exactly one and never
    /// merge (tumbling); `None` for the others (use [`assign`](Self::assign)).
    #[inline]
    pub(crate) fn assign_one(
        &self,
        ts: i64,
    ) -> Option<std::result::Result<TimeWindow, OutOfRange>> {
        match *self {
            WindowAssigner::Tumbling { size, offset, .. } => Some(
                window_start(ts, offset, size)
                    .and_then(|start| Some(TimeWindow::new(start, start.checked_add(size)?)))
                    .ok_or(OutOfRange),
            ),
            _ => None,
        }
    }

    /// The windows of a record at `ts`.
    ///
    /// # Errors
    ///
    /// [`OutOfRange`] when a window of `ts` cannot be represented in `i64` milliseconds: it
    /// would start before `i64::MIN` or end after `i64::MAX` (a window `[start, end)` holding
    /// `i64::MAX` needs `end = i64::MAX + 1`). Such a record is refused, never put into a
    /// window that does not contain it.
    #[inline]
    pub fn assign(
        &self,
        ts: i64,
        out: &mut Vec<TimeWindow>,
    ) -> std::result::Result<(), OutOfRange> {
        out.clear();
        let window = |start: i64, size: i64| {
            start
                .checked_add(size)
                .map(|end| TimeWindow::new(start, end))
                .ok_or(OutOfRange)
        };
        match *self {
            WindowAssigner::Tumbling { size, offset, .. } => {
                let start = window_start(ts, offset, size).ok_or(OutOfRange)?;
                out.push(window(start, size)?);
            }
            WindowAssigner::Sliding {
                size,
                slide,
                offset,
                ..
            } => {
                // Every start `s` of a window holding `ts` satisfies `ts - size < s <= ts`;
                // in i128 nothing here can overflow.
                let last = window_start(ts, offset, slide).ok_or(OutOfRange)?;
                let mut start = i128::from(last);
                let lowest = i128::from(ts) - i128::from(size);
                while start > lowest {
                    let s = i64::try_from(start).map_err(|_| OutOfRange)?;
                    out.push(window(s, size)?);
                    start -= i128::from(slide);
                }
            }
            WindowAssigner::Session { gap, .. } => out.push(window(ts, gap)?),
        }
        Ok(())
    }
}

impl fmt::Display for WindowAssigner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let time = |e: bool| if e { "EventTime" } else { "ProcessingTime" };
        match *self {
            WindowAssigner::Tumbling {
                size,
                offset,
                event_time,
            } => write!(
                f,
                "Tumbling{}Windows({size} ms, offset {offset} ms)",
                time(event_time)
            ),
            WindowAssigner::Sliding {
                size,
                slide,
                offset,
                event_time,
            } => {
                write!(
                    f,
                    "Sliding{}Windows({size} ms, slide {slide} ms, offset {offset} ms)",
                    time(event_time)
                )
            }
            WindowAssigner::Session { gap, event_time } => {
                write!(f, "{}SessionWindows(gap {gap} ms)", time(event_time))
            }
        }
    }
}

macro_rules! fixed_windows {
    ($(#[$doc:meta])* $name:ident, $event:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy)]
        pub struct $name;
        impl $name {
            /// Windows of `size`.
            pub fn of(size: Duration) -> WindowAssigner {
                Self::of_millis(millis(size))
            }
            /// Windows of `size` ms.
            pub fn of_millis(size: i64) -> WindowAssigner {
                WindowAssigner::Tumbling { size, offset: 0, event_time: $event }
            }
            /// Windows of `size` ms whose starts are shifted by `offset` ms (may be negative).
            pub fn with_offset_millis(size: i64, offset: i64) -> WindowAssigner {
                WindowAssigner::Tumbling { size, offset, event_time: $event }
            }
        }
    };
}

macro_rules! sliding_windows {
    ($(#[$doc:meta])* $name:ident, $event:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy)]
        pub struct $name;
        impl $name {
            /// Windows of `size` starting every `slide`.
            pub fn of(size: Duration, slide: Duration) -> WindowAssigner {
                Self::of_millis(millis(size), millis(slide))
            }
            /// Windows of `size` ms starting every `slide` ms.
            pub fn of_millis(size: i64, slide: i64) -> WindowAssigner {
                WindowAssigner::Sliding { size, slide, offset: 0, event_time: $event }
            }
        }
    };
}

macro_rules! session_windows {
    ($(#[$doc:meta])* $name:ident, $event:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy)]
        pub struct $name;
        impl $name {
            /// Sessions that end after `gap` without records.
            pub fn with_gap(gap: Duration) -> WindowAssigner {
                Self::with_gap_millis(millis(gap))
            }
            /// Sessions that end after `gap` ms without records.
            pub fn with_gap_millis(gap: i64) -> WindowAssigner {
                WindowAssigner::Session { gap, event_time: $event }
            }
        }
    };
}

fixed_windows!(
    /// Tumbling windows in event time.
    TumblingEventTimeWindows, true);
fixed_windows!(
    /// Tumbling windows in processing time.
    TumblingProcessingTimeWindows, false);
sliding_windows!(
    /// Sliding windows in event time.
    SlidingEventTimeWindows, true);
sliding_windows!(
    /// Sliding windows in processing time.
    SlidingProcessingTimeWindows, false);
session_windows!(
    /// Session windows in event time.
    EventTimeSessionWindows, true);
session_windows!(
    /// Session windows in processing time.
    ProcessingTimeSessionWindows, false);

/// The state handle behind a window's contents: what clearing and merging need, the same
/// for every kind of contents.
pub(crate) trait WindowState<K: Key> {
    fn clear(&self, backend: &mut KeyedBackend<K>, window: &TimeWindow) -> Result<()>;
    fn merge(
        &self,
        backend: &mut KeyedBackend<K>,
        target: &TimeWindow,
        sources: &[TimeWindow],
    ) -> Result<()>;
}

macro_rules! window_state {
    ($($handle:ident<$($p:ident),*> where $($bound:ident: $($b:path)|+),*;)*) => {$(
        impl<K: Key, $($p),*> WindowState<K> for $handle<TimeWindow, $($p),*>
        where
            $($bound: $($b +)+ 'static),*
        {
            fn clear(&self, backend: &mut KeyedBackend<K>, window: &TimeWindow) -> Result<()> {
                Ok($handle::clear(self, backend, window)?)
            }
            fn merge(&self, backend: &mut KeyedBackend<K>, target: &TimeWindow, sources: &[TimeWindow]) -> Result<()> {
                Ok(self.merge_namespaces(backend, target, sources)?)
            }
        }
    )*};
}

window_state! {
    AggregatingState<I, A, R> where I: Sized, A: Data, R: Sized;
    ReducingState<I> where I: Data;
    ListState<I> where I: Data;
}

/// What a window keeps and what it emits when it fires.
pub(crate) trait WindowContents<K: Key, I, O>: 'static {
    /// Adds `value` to `window`'s contents; `true` when it may be the window's first element
    /// (then the window's timers are registered; `false` promises they are, as the contents
    /// and the timers of a window are created together and removed together).
    fn add(
        &mut self,
        backend: &mut KeyedBackend<K>,
        window: &TimeWindow,
        value: &I,
    ) -> Result<bool>;
    /// Emits the results of `window` (contents stored under `state_window`), if it has any.
    fn emit(
        &mut self,
        backend: &mut KeyedBackend<K>,
        key: &K,
        window: &TimeWindow,
        state_window: &TimeWindow,
        out: &mut Vec<O>,
    ) -> Result<()>;
    /// The state the contents live in.
    fn state(&self) -> &dyn WindowState<K>;
}

/// Makes a window's contents, registering their state in a subtask's backend.
pub(crate) type ContentsFactory<K, I, O> =
    Arc<dyn Fn(&mut KeyedBackend<K>) -> Result<Box<dyn WindowContents<K, I, O>>> + Send + Sync>;

/// Turns a window's result into output records.
pub(crate) type WindowFn<K, R, O> = Arc<dyn Fn(&K, &TimeWindow, R, &mut Vec<O>) + Send + Sync>;

/// State that folds each record into one value per window: aggregating (`aggregate`) or
/// reducing (`reduce`) state.
pub(crate) trait IncrementalState<K: Key, I, R>: WindowState<K> {
    /// Folds `value` into the window's value; `true` when it is the window's first.
    fn add(&self, backend: &mut KeyedBackend<K>, window: &TimeWindow, value: &I) -> Result<bool>;
    fn result(&self, backend: &mut KeyedBackend<K>, window: &TimeWindow) -> Result<Option<R>>;
}

impl<K: Key, I: 'static, A: Data, R: 'static> IncrementalState<K, I, R>
    for AggregatingState<TimeWindow, I, A, R>
{
    #[inline]
    fn add(&self, backend: &mut KeyedBackend<K>, window: &TimeWindow, value: &I) -> Result<bool> {
        Ok(self.add_is_first(backend, window, value)?)
    }
    fn result(&self, backend: &mut KeyedBackend<K>, window: &TimeWindow) -> Result<Option<R>> {
        Ok(self.get(backend, window)?)
    }
}

impl<K: Key, I: Data> IncrementalState<K, I, I> for ReducingState<TimeWindow, I> {
    fn add(&self, backend: &mut KeyedBackend<K>, window: &TimeWindow, value: &I) -> Result<bool> {
        Ok(self.add_is_first(backend, window, value.clone())?)
    }
    fn result(&self, backend: &mut KeyedBackend<K>, window: &TimeWindow) -> Result<Option<I>> {
        Ok(self.get(backend, window)?)
    }
}

/// An incrementally aggregated or reduced window: one value per window, emitted when it fires.
pub(crate) struct IncrementalContents<S, K, R, O> {
    pub(crate) state: S,
    pub(crate) finish: WindowFn<K, R, O>,
}

impl<K: Key, I, R: 'static, O: 'static, S: IncrementalState<K, I, R> + 'static>
    WindowContents<K, I, O> for IncrementalContents<S, K, R, O>
{
    #[inline]
    fn add(
        &mut self,
        backend: &mut KeyedBackend<K>,
        window: &TimeWindow,
        value: &I,
    ) -> Result<bool> {
        self.state.add(backend, window, value)
    }
    fn emit(
        &mut self,
        backend: &mut KeyedBackend<K>,
        key: &K,
        window: &TimeWindow,
        state_window: &TimeWindow,
        out: &mut Vec<O>,
    ) -> Result<()> {
        if let Some(result) = self.state.result(backend, state_window)? {
            (self.finish)(key, window, result, out);
        }
        Ok(())
    }
    fn state(&self) -> &dyn WindowState<K> {
        &self.state
    }
}

/// A window that keeps every record for a function that sees them all (`process`).
pub(crate) struct ListContents<K, I, O> {
    pub(crate) state: ListState<TimeWindow, I>,
    pub(crate) finish: WindowFn<K, Vec<I>, O>,
}

impl<K: Key, I: Data, O: 'static> WindowContents<K, I, O> for ListContents<K, I, O> {
    fn add(
        &mut self,
        backend: &mut KeyedBackend<K>,
        window: &TimeWindow,
        value: &I,
    ) -> Result<bool> {
        // Whether the list was empty is not known without a read: report every element as a
        // first one (registering a timer that exists finds it and adds nothing).
        self.state.add(backend, window, value.clone())?;
        Ok(true)
    }
    fn emit(
        &mut self,
        backend: &mut KeyedBackend<K>,
        key: &K,
        window: &TimeWindow,
        state_window: &TimeWindow,
        out: &mut Vec<O>,
    ) -> Result<()> {
        let values = self.state.get(backend, state_window)?;
        if !values.is_empty() {
            (self.finish)(key, window, values, out);
        }
        Ok(())
    }
    fn state(&self) -> &dyn WindowState<K> {
        &self.state
    }
}

/// The windows of one key of a merging assigner, each with the window its contents are
/// stored under (Flink's `MergingWindowSet`, persisted in keyed state per key).
#[derive(Debug, Clone, Default)]
struct MergingWindowSet {
    /// (window, state window), sorted by window.
    mapping: Vec<(TimeWindow, TimeWindow)>,
}

/// One merge: the merged windows (without the new window), the merge result, its state
/// window, and the state windows to merge into it.
struct Merge {
    result: TimeWindow,
    merged_windows: Vec<TimeWindow>,
    state_window: TimeWindow,
    merged_state_windows: Vec<TimeWindow>,
}

impl MergingWindowSet {
    fn state_window(&self, window: &TimeWindow) -> Option<TimeWindow> {
        self.mapping
            .iter()
            .find(|(w, _)| w == window)
            .map(|(_, s)| *s)
    }

    fn remove(&mut self, window: &TimeWindow) -> Option<TimeWindow> {
        let i = self.mapping.iter().position(|(w, _)| w == window)?;
        Some(self.mapping.remove(i).1)
    }

    fn put(&mut self, window: TimeWindow, state_window: TimeWindow) {
        self.remove(&window);
        self.mapping.push((window, state_window));
        self.mapping.sort();
    }

    /// Adds `new` and merges what overlaps; returns the window `new` ended up in and the
    /// merges to apply to contents and timers (Flink's `MergingWindowSet.addWindow`).
    ///
    /// # Errors
    ///
    /// [`Error::Corrupt`] when the set (read from state) maps a member to no state window.
    fn add_window(&mut self, new: TimeWindow) -> Result<(TimeWindow, Vec<Merge>)> {
        let mut windows: Vec<TimeWindow> = self.mapping.iter().map(|(w, _)| *w).collect();
        windows.push(new);
        windows.sort_by_key(|w| w.start);
        // TimeWindow.mergeWindows: consecutive windows (by start) that intersect merge.
        let mut groups: Vec<(TimeWindow, Vec<TimeWindow>)> = Vec::new();
        for w in windows {
            match groups.last_mut() {
                Some((cover, members)) if cover.intersects(&w) => {
                    *cover = cover.cover(&w);
                    if !members.contains(&w) {
                        members.push(w);
                    }
                }
                _ => groups.push((w, vec![w])),
            }
        }
        let mut result = new;
        let mut merged_new = false;
        let mut merges = Vec::new();
        let mut any_merge = false;
        for (cover, mut members) in groups.into_iter().filter(|(_, m)| m.len() > 1) {
            any_merge = true;
            if let Some(i) = members.iter().position(|w| *w == new) {
                members.remove(i);
                merged_new = true;
                result = cover;
            }
            let state_window = members
                .first()
                .and_then(|first| self.state_window(first))
                .ok_or_else(|| {
                    Error::Corrupt(format!(
                        "the merging window set has no state window for {members:?}"
                    ))
                })?;
            let mut merged_state_windows: Vec<TimeWindow> =
                members.iter().filter_map(|w| self.remove(w)).collect();
            self.put(cover, state_window);
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
            self.put(result, result);
        }
        Ok((result, merges))
    }
}

/// The window operator of a keyed stream.
pub(crate) struct WindowOperator<K: Key, I, O> {
    name: String,
    key_selector: Arc<dyn Fn(&I) -> K + Send + Sync>,
    assigner: WindowAssigner,
    allowed_lateness: i64,
    late_output: bool,
    backend: KeyedBackend<K>,
    contents: Box<dyn WindowContents<K, I, O>>,
    merging: Option<ValueState<(), Vec<(TimeWindow, TimeWindow)>>>,
    timers: KeyedTimers<K, TimeWindow>,
    watermark: i64,
    windows: Vec<TimeWindow>,
    results: Vec<O>,
    late_dropped: u64,
    setup: OperatorSetup,
}

impl<K: Key, I: Data, O: Data> WindowOperator<K, I, O> {
    pub(crate) fn new(
        setup: &OperatorSetup,
        key_selector: Arc<dyn Fn(&I) -> K + Send + Sync>,
        assigner: WindowAssigner,
        allowed_lateness: i64,
        late_output: bool,
        contents: &ContentsFactory<K, I, O>,
    ) -> Result<Self> {
        let mut backend = setup.keyed_backend::<K>()?;
        let contents = contents(&mut backend)?;
        let merging = if assigner.is_merging() {
            Some(backend.value_state(&ValueStateDescriptor::new("window-merging-set"))?)
        } else {
            None
        };
        let timers = KeyedTimers::new(&mut backend, "window-timers")?;
        Ok(WindowOperator {
            name: setup.name.clone(),
            key_selector,
            assigner,
            allowed_lateness: if assigner.is_event_time() {
                allowed_lateness
            } else {
                0
            },
            late_output,
            backend,
            contents,
            merging,
            timers,
            watermark: i64::MIN,
            windows: Vec::new(),
            results: Vec::new(),
            late_dropped: 0,
            setup: setup.clone(),
        })
    }

    /// `max timestamp + allowed lateness`, or `i64::MAX` when that overflows.
    fn cleanup_time(&self, window: &TimeWindow) -> i64 {
        if !self.assigner.is_event_time() {
            return window.max_timestamp();
        }
        window
            .max_timestamp()
            .checked_add(self.allowed_lateness)
            .unwrap_or(i64::MAX)
    }

    fn is_window_late(&self, window: &TimeWindow) -> bool {
        self.assigner.is_event_time() && self.cleanup_time(window) <= self.watermark
    }

    /// The time the trigger compares windows with: the watermark, or the wall clock `now`.
    fn trigger_time(&self, now: i64) -> i64 {
        if self.assigner.is_event_time() {
            self.watermark
        } else {
            now
        }
    }

    /// The timers of the assigner's time domain.
    fn queue(&mut self) -> &mut TimerQueue<K, TimeWindow> {
        if self.assigner.is_event_time() {
            &mut self.timers.event
        } else {
            &mut self.timers.processing
        }
    }

    fn emit(
        &mut self,
        key: &K,
        window: &TimeWindow,
        state_window: &TimeWindow,
        out: &mut Outputs<O, I>,
    ) -> Result<()> {
        self.contents.emit(
            &mut self.backend,
            key,
            window,
            state_window,
            &mut self.results,
        )?;
        let ts = window.max_timestamp();
        for r in self.results.drain(..) {
            out.main.collect(ts, r);
        }
        Ok(())
    }

    fn load_set(&mut self) -> Result<MergingWindowSet> {
        let Some(state) = self.merging.as_ref() else {
            return Ok(MergingWindowSet::default());
        };
        Ok(MergingWindowSet {
            mapping: state.value(&mut self.backend, &())?.unwrap_or_default(),
        })
    }

    fn store_set(&mut self, set: &MergingWindowSet) -> Result<()> {
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

    /// The trigger's reaction to an element in `window`: fire now if the time has passed its
    /// max timestamp, else register the firing timer.
    fn on_element(
        &mut self,
        key: &K,
        window: &TimeWindow,
        state_window: &TimeWindow,
        now: i64,
        out: &mut Outputs<O, I>,
    ) -> Result<()> {
        let (time, fire) = (self.trigger_time(now), window.max_timestamp());
        if fire <= time {
            self.emit(key, window, state_window, out)?;
        } else {
            self.queue().register(key, window, fire);
        }
        // The clean-up timer; without allowed lateness it is the firing timer just registered
        // (a second registration would only find it there).
        let cleanup = self.cleanup_time(window);
        if cleanup != i64::MAX && (cleanup != fire || fire <= time) {
            self.queue().register(key, window, cleanup);
        }
        Ok(())
    }

    fn process_merging(
        &mut self,
        key: &K,
        value: &I,
        now: i64,
        out: &mut Outputs<O, I>,
    ) -> Result<bool> {
        let mut set = self.load_set()?;
        let mut skipped = true;
        let windows = std::mem::take(&mut self.windows);
        for window in &windows {
            let (actual, merges) = set.add_window(*window)?;
            for m in merges {
                if self.assigner.is_event_time() && self.cleanup_time(&m.result) <= self.watermark {
                    return Err(Error::Function {
                        operator: self.name.clone(),
                        message: format!(
                            "merging made the window {} end before the current watermark {}",
                            m.result, self.watermark
                        ),
                    });
                }
                // EventTimeTrigger.onMerge, then the merged windows' timers are deleted.
                let time = self.trigger_time(now);
                if m.result.max_timestamp() > time {
                    self.queue()
                        .register(key, &m.result, m.result.max_timestamp());
                }
                for w in &m.merged_windows {
                    let (fire, cleanup) = (w.max_timestamp(), self.cleanup_time(w));
                    self.queue().delete(key, w, fire);
                    self.queue().delete(key, w, cleanup);
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
                    "the merging window set lost the window {actual} it just added"
                ))
            })?;
            // Merging moves contents between windows: register the timers of every element.
            self.contents.add(&mut self.backend, &state_window, value)?;
            self.on_element(key, &actual, &state_window, now, out)?;
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
        window: TimeWindow,
        value: &I,
        now: i64,
        out: &mut Outputs<O, I>,
    ) -> Result<bool> {
        if self.is_window_late(&window) {
            return Ok(false);
        }
        if self.contents.add(&mut self.backend, &window, value)? {
            self.on_element(key, &window, &window, now, out)?;
        } else if window.max_timestamp() <= self.trigger_time(now) {
            // A late element into a window kept for allowed lateness fires it again.
            self.emit(key, &window, &window, out)?;
        }
        Ok(true)
    }

    /// Fires a timer of `key` for `window` at `time`.
    fn on_timer(
        &mut self,
        time: i64,
        key: K,
        window: TimeWindow,
        out: &mut Outputs<O, I>,
    ) -> Result<()> {
        self.backend.set_current_key(&key)?;
        let mut set = None;
        let state_window = if self.merging.is_some() {
            let s = self.load_set()?;
            let Some(state_window) = s.state_window(&window) else {
                return Ok(());
            };
            set = Some(s);
            state_window
        } else {
            window
        };
        if time == window.max_timestamp() {
            self.emit(&key, &window, &state_window, out)?;
        }
        if time == self.cleanup_time(&window) {
            self.contents
                .state()
                .clear(&mut self.backend, &state_window)?;
            let fire = window.max_timestamp();
            if fire != time {
                self.queue().delete(&key, &window, fire);
            }
            if let Some(mut s) = set {
                s.remove(&window);
                self.store_set(&s)?;
            }
        }
        Ok(())
    }
}

impl<K: Key, I: Data, O: Data> Operator<I, O> for WindowOperator<K, I, O> {
    #[inline]
    fn process(&mut self, ts: i64, value: I, out: &mut Outputs<O, I>) -> Result<()> {
        let now = if self.assigner.is_event_time() {
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
        self.backend.set_current_key(&key)?;
        let out_of_range = |this: &Self| Error::TimestampOutOfRange {
            operator: this.name.clone(),
            timestamp: now,
            assigner: this.assigner.to_string(),
        };
        let skipped = if let Some(window) = self.assigner.assign_one(now) {
            // One window (tumbling): no list of windows to fill and read back.
            let window = window.map_err(|_| out_of_range(self))?;
            !self.add_to_window(&key, window, &value, now, out)?
        } else {
            if self.assigner.assign(now, &mut self.windows).is_err() {
                return Err(out_of_range(self));
            }
            if self.merging.is_some() {
                self.process_merging(&key, &value, now, out)?
            } else {
                let mut skipped = true;
                for i in 0..self.windows.len() {
                    let window = self.windows[i];
                    if self.add_to_window(&key, window, &value, now, out)? {
                        skipped = false;
                    }
                }
                skipped
            }
        };
        if skipped
            && self.assigner.is_event_time()
            && ts.saturating_add(self.allowed_lateness) <= self.watermark
        {
            if self.late_output {
                out.side.collect(ts, value);
            } else {
                self.late_dropped += 1;
            }
        }
        Ok(())
    }

    fn watermark(&mut self, watermark: i64, out: &mut Outputs<O, I>) -> Result<()> {
        self.watermark = watermark;
        while let Some((time, key, window)) = self.timers.event.pop_due(watermark) {
            self.on_timer(time, key, window, out)?;
        }
        out.watermark(watermark);
        Ok(())
    }

    fn next_processing_time(&self) -> Option<i64> {
        self.timers.processing.earliest()
    }

    fn processing_time(&mut self, now: i64, out: &mut Outputs<O, I>) -> Result<()> {
        while let Some((time, key, window)) = self.timers.processing.pop_due(now) {
            self.on_timer(time, key, window, out)?;
        }
        Ok(())
    }

    fn finish(&mut self, out: &mut Outputs<O, I>) -> Result<()> {
        // Pending processing-time windows fire at the end of the input (see the crate docs).
        while let Some((time, key, window)) = self.timers.processing.pop_due(i64::MAX) {
            self.on_timer(time, key, window, out)?;
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
        keyed: &crate::checkpoint::KeyedPart<'_>,
    ) -> Result<Vec<u8>> {
        self.timers.snapshot(&mut self.backend, keyed)?;
        Ok(self.late_dropped.to_le_bytes().to_vec())
    }

    fn restore(
        &mut self,
        keyed: &[crate::native_part::KeyedFile],
        parts: &[OperatorPart],
    ) -> Result<()> {
        self.watermark = self
            .timers
            .restore(&mut self.backend, keyed, parts, &self.setup)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Flink's windows of `ts`, computed in i128 (no overflow anywhere).
    fn reference(assigner: &WindowAssigner, ts: i64) -> Vec<(i128, i128)> {
        let start_of = |size: i128, offset: i128| {
            let ts = i128::from(ts);
            ts - (ts - offset).rem_euclid(size)
        };
        match *assigner {
            WindowAssigner::Tumbling { size, offset, .. } => {
                let s = start_of(size.into(), offset.into());
                vec![(s, s + i128::from(size))]
            }
            WindowAssigner::Sliding {
                size,
                slide,
                offset,
                ..
            } => {
                let mut out = Vec::new();
                let mut s = start_of(slide.into(), offset.into());
                while s > i128::from(ts) - i128::from(size) {
                    out.push((s, s + i128::from(size)));
                    s -= i128::from(slide);
                }
                out
            }
            WindowAssigner::Session { gap, .. } => {
                vec![(ts.into(), i128::from(ts) + i128::from(gap))]
            }
        }
    }

    fn check(assigner: &WindowAssigner, ts: i64) {
        let want = reference(assigner, ts);
        let representable = want
            .iter()
            .all(|&(s, e)| i64::try_from(s).is_ok() && i64::try_from(e).is_ok());
        let mut got = Vec::new();
        let assigned = assigner.assign(ts, &mut got);
        if let Some(one) = assigner.assign_one(ts) {
            // The one-window path agrees with the general one, refusals included.
            match (&one, &assigned) {
                (Ok(w), Ok(())) => assert_eq!(vec![*w], got, "{assigner} at {ts}"),
                (Err(_), Err(_)) => {}
                _ => panic!("{assigner} at {ts}: assign_one {one:?}, assign {assigned:?}"),
            }
        }
        match assigned {
            Ok(()) => {
                assert!(
                    representable,
                    "{assigner} at {ts}: accepted {got:?}, want {want:?}"
                );
                let got: Vec<(i128, i128)> =
                    got.iter().map(|w| (w.start.into(), w.end.into())).collect();
                assert_eq!(got, want, "{assigner} at {ts}");
                for &(s, e) in &got {
                    assert!(s <= i128::from(ts) && i128::from(ts) < e);
                }
            }
            Err(OutOfRange) => {
                assert!(!representable, "{assigner} at {ts}: refused, want {want:?}")
            }
        }
    }

    fn extreme_ts() -> impl Strategy<Value = i64> {
        prop_oneof![
            Just(i64::MIN),
            Just(i64::MAX),
            (0i64..100_000).prop_map(|d| i64::MIN + d),
            (0i64..100_000).prop_map(|d| i64::MAX - d),
            any::<i64>(),
            -100_000i64..100_000,
        ]
    }

    #[test]
    fn extreme_timestamps_land_in_a_correct_window_or_are_refused() {
        let tumbling = |size: i64, offset: i64| WindowAssigner::Tumbling {
            size,
            offset,
            event_time: true,
        };
        for ts in [i64::MIN, i64::MIN + 1, -1, 0, 1, i64::MAX - 1, i64::MAX] {
            for (size, offset) in [(10, 0), (10, 9), (10, -9), (1024, 0), (1, 0), (i64::MAX, 0)] {
                check(&tumbling(size, offset), ts);
            }
            check(
                &WindowAssigner::Session {
                    gap: 10,
                    event_time: true,
                },
                ts,
            );
        }
        // i64::MAX is in no window: [start, i64::MAX + 1) cannot be written.
        let mut out = Vec::new();
        assert_eq!(tumbling(10, 0).assign(i64::MAX, &mut out), Err(OutOfRange));
        assert_eq!(tumbling(1024, 0).assign(i64::MIN, &mut out), Ok(()));
        assert_eq!(out, vec![TimeWindow::new(i64::MIN, i64::MIN + 1024)]);
        // Not the saturated [MAX - 7, MAX), which does not hold MAX.
        assert!(WindowAssigner::Session {
            gap: 5,
            event_time: true
        }
        .assign(i64::MAX - 2, &mut out)
        .is_err());
    }

    proptest! {
        #[test]
        fn every_assigner_is_exact_near_the_extremes(
            ts in extreme_ts(),
            size in prop_oneof![1i64..100, 1i64..i64::MAX],
            slide_div in 1i64..10,
            offset_frac in -99i64..100,
        ) {
            let slide = (size / slide_div).max(1);
            // Sliding windows are few per record only when size / slide is small.
            let offset = slide / 100 * offset_frac;
            check(&WindowAssigner::Tumbling { size, offset: size / 100 * offset_frac, event_time: true }, ts);
            check(&WindowAssigner::Sliding { size, slide, offset, event_time: true }, ts);
            check(&WindowAssigner::Session { gap: size, event_time: true }, ts);
        }
    }
}
