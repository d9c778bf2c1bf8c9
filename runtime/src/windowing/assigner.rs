//! Window assigners with Flink's semantics: which windows a record belongs to.
//!
//! - [`TimeWindows`]: tumbling, sliding and session windows of time ([`TimeWindow`]).
//!   - Tumbling: a record at `ts` belongs to `[start, start + size)` with
//!     `start = ts - ((ts - offset) mod size)` (non-negative modulo).
//!   - Sliding: to every `[s, s + size)` with `s = last_start, last_start - slide, ...` while
//!     `s > ts - size`, where `last_start` is the tumbling start for `slide`.
//!   - Session: to `[ts, ts + gap)`; windows of a key that overlap or touch merge into their
//!     cover, and so do their contents, trigger state and timers (Flink's `MergingWindowSet`).
//! - [`GlobalWindows`]: one window per key that never ends ([`GlobalWindow`]); it fires only
//!   by a custom trigger (count windows are global windows with a [`CountTrigger`]).
//!
//! When a window fires is its trigger's decision ([`crate::trigger`]); each assigner has
//! Flink's default ([`WindowAssigner::default_trigger`]): [`EventTimeTrigger`] for event-time
//! windows, [`ProcessingTimeTrigger`] for processing-time windows, [`NeverTrigger`] for
//! global windows. An event-time window is kept until `max timestamp + allowed lateness` (its
//! cleanup time); a record whose window is past its cleanup time is not added to it; a record
//! none of whose windows took it, and whose `timestamp + allowed lateness <= watermark`, is
//! late: it goes to the late-data side output if there is one, else it is dropped and counted
//! (`<operator>.numLateRecordsDropped`). Processing-time windows assign and fire by the wall
//! clock; global windows are never late and never cleaned up.
//!
//! [`CountTrigger`]: crate::trigger::CountTrigger
//! [`EventTimeTrigger`]: crate::trigger::EventTimeTrigger
//! [`ProcessingTimeTrigger`]: crate::trigger::ProcessingTimeTrigger
//! [`NeverTrigger`]: crate::trigger::NeverTrigger

use std::fmt;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::windowing::trigger::{
    EventTimeTrigger, NeverTrigger, ProcessingTimeTrigger, TimeTrigger,
};
use crate::windowing::window::{window_start, GlobalWindow, OutOfRange, TimeWindow, Window};

fn millis(d: Duration) -> i64 {
    d.as_millis().min(i64::MAX as u128) as i64
}

/// Assigns records to windows of time: tumbling, sliding or session windows, in event or
/// processing time (made by [`TumblingEventTimeWindows`] and its siblings).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeWindows {
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

impl TimeWindows {
    /// Whether windows are in event time.
    pub fn is_event_time(&self) -> bool {
        match *self {
            TimeWindows::Tumbling { event_time, .. }
            | TimeWindows::Sliding { event_time, .. }
            | TimeWindows::Session { event_time, .. } => event_time,
        }
    }

    /// Checks the sizes (Flink's rules: positive sizes, `|offset| < size` or `< slide`).
    pub(crate) fn check_sizes(&self) -> Result<()> {
        let bad = |msg: String| Err(Error::Config(msg));
        match *self {
            TimeWindows::Tumbling { size, offset, .. } => {
                if size <= 0 || offset.unsigned_abs() >= size as u64 {
                    return bad(format!("tumbling windows need size > 0 and |offset| < size (size {size}, offset {offset})"));
                }
            }
            TimeWindows::Sliding {
                size,
                slide,
                offset,
                ..
            } => {
                if size <= 0 || slide <= 0 || offset.unsigned_abs() >= slide as u64 {
                    return bad(format!("sliding windows need size > 0, slide > 0 and |offset| < slide (size {size}, slide {slide}, offset {offset})"));
                }
            }
            TimeWindows::Session { gap, .. } => {
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
    pub(crate) fn one_window(
        &self,
        ts: i64,
    ) -> Option<std::result::Result<TimeWindow, OutOfRange>> {
        match *self {
            TimeWindows::Tumbling { size, offset, .. } => Some(
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
            TimeWindows::Tumbling { size, offset, .. } => {
                let start = window_start(ts, offset, size).ok_or(OutOfRange)?;
                out.push(window(start, size)?);
            }
            TimeWindows::Sliding {
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
            TimeWindows::Session { gap, .. } => out.push(window(ts, gap)?),
        }
        Ok(())
    }
}

impl fmt::Display for TimeWindows {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let time = |e: bool| if e { "EventTime" } else { "ProcessingTime" };
        match *self {
            TimeWindows::Tumbling {
                size,
                offset,
                event_time,
            } => write!(
                f,
                "Tumbling{}Windows({size} ms, offset {offset} ms)",
                time(event_time)
            ),
            TimeWindows::Sliding {
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
            TimeWindows::Session { gap, event_time } => {
                write!(f, "{}SessionWindows(gap {gap} ms)", time(event_time))
            }
        }
    }
}

/// How records are assigned to windows: Flink's `WindowAssigner` (and, for assigners whose
/// windows merge, its `MergingWindowAssigner`).
///
/// Implemented by [`TimeWindows`] and [`GlobalWindows`]; a user's assigner implements it too.
pub trait WindowAssigner: fmt::Display + fmt::Debug + Clone + Send + Sync + 'static {
    /// The windows it assigns.
    type Window: Window;
    /// The trigger windows get unless the stream sets one ([`WindowedStream::trigger`](crate::api::handles::WindowedStream::trigger)).
    type DefaultTrigger: Clone + Send + Sync + 'static;

    /// The trigger windows get unless the stream sets one.
    fn default_trigger(&self) -> Self::DefaultTrigger;

    /// The windows of a record at `time` (its timestamp for an event-time assigner, the wall
    /// clock for a processing-time one), into `out` (cleared first).
    ///
    /// # Errors
    ///
    /// [`OutOfRange`] when a window of `time` cannot be represented.
    fn assign_windows(
        &self,
        time: i64,
        out: &mut Vec<Self::Window>,
    ) -> std::result::Result<(), OutOfRange>;

    /// The one window of a record at `time`, for assigners that always give exactly one and
    /// never merge; `None` for the others (the operator then uses
    /// [`assign_windows`](Self::assign_windows)). A fast path, never required.
    #[inline]
    fn assign_one(&self, _time: i64) -> Option<std::result::Result<Self::Window, OutOfRange>> {
        None
    }

    /// Whether windows are in event time (late records, cleanup after allowed lateness).
    fn is_event_time(&self) -> bool;

    /// Whether windows of a key merge ([`merge_windows`](Self::merge_windows)).
    fn is_merging(&self) -> bool {
        false
    }

    /// The merges among a key's windows: each group of windows that becomes one, with the
    /// window it becomes (Flink's `MergingWindowAssigner.mergeWindows`). Only groups of two
    /// or more windows are returned.
    fn merge_windows(&self, _windows: &[Self::Window]) -> Vec<(Self::Window, Vec<Self::Window>)> {
        Vec::new()
    }

    /// Checks the assigner's settings; the message says what is wrong (the job is refused at
    /// graph build with it).
    ///
    /// # Errors
    ///
    /// A setting the assigner cannot work with.
    fn validate(&self) -> std::result::Result<(), String> {
        Ok(())
    }
}

impl WindowAssigner for TimeWindows {
    type Window = TimeWindow;
    type DefaultTrigger = TimeTrigger;

    fn default_trigger(&self) -> TimeTrigger {
        if self.is_event_time() {
            TimeTrigger::EventTime(EventTimeTrigger)
        } else {
            TimeTrigger::ProcessingTime(ProcessingTimeTrigger)
        }
    }

    #[inline]
    fn assign_windows(
        &self,
        time: i64,
        out: &mut Vec<TimeWindow>,
    ) -> std::result::Result<(), OutOfRange> {
        self.assign(time, out)
    }

    #[inline]
    fn assign_one(&self, time: i64) -> Option<std::result::Result<TimeWindow, OutOfRange>> {
        self.one_window(time)
    }

    fn is_event_time(&self) -> bool {
        TimeWindows::is_event_time(self)
    }

    fn is_merging(&self) -> bool {
        matches!(self, TimeWindows::Session { .. })
    }

    /// Flink's `TimeWindow.mergeWindows`: windows sorted by start; each one that intersects
    /// (overlaps or touches) the cover of the group before it joins that group.
    fn merge_windows(&self, windows: &[TimeWindow]) -> Vec<(TimeWindow, Vec<TimeWindow>)> {
        let mut sorted = windows.to_vec();
        sorted.sort_by_key(|w| w.start);
        let mut groups: Vec<(TimeWindow, Vec<TimeWindow>)> = Vec::new();
        for w in sorted {
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
        groups.retain(|(_, members)| members.len() > 1);
        groups
    }

    fn validate(&self) -> std::result::Result<(), String> {
        self.check_sizes().map_err(|e| match e {
            Error::Config(message) => message,
            other => other.to_string(),
        })
    }
}

/// One [`GlobalWindow`] per key, holding all of its records; its default trigger
/// ([`NeverTrigger`]) never fires, so it needs a custom one (Flink's `GlobalWindows`).
/// [`KeyedStream::count_window`](crate::api::handles::KeyedStream::count_window) is built on it.
///
/// ```
/// use typeinfo_runtime::trigger::CountTrigger;
/// use typeinfo_runtime::GlobalWindows;
/// use typeinfo_runtime::StreamExecutionEnvironment;
///
/// # fn main() -> typeinfo_runtime::Result<()> {
/// let env = StreamExecutionEnvironment::new();
/// let sums = env
///     .from_collection(vec![1i64, 2, 3, 4, 5])
///     .key_by(|_: &i64| 0u8)
///     .window(GlobalWindows)
///     .trigger(CountTrigger::of(2))
///     .reduce(|a, b| a + b)
///     .collect();
/// env.execute("global windows")?;
/// assert_eq!(sums.take(), [3, 10]); // fires at 2 and 4 records; the window is never purged
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct GlobalWindows;

impl fmt::Display for GlobalWindows {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("GlobalWindows")
    }
}

impl WindowAssigner for GlobalWindows {
    type Window = GlobalWindow;
    type DefaultTrigger = NeverTrigger;

    fn default_trigger(&self) -> NeverTrigger {
        NeverTrigger
    }

    #[inline]
    fn assign_windows(
        &self,
        _time: i64,
        out: &mut Vec<GlobalWindow>,
    ) -> std::result::Result<(), OutOfRange> {
        out.clear();
        out.push(GlobalWindow);
        Ok(())
    }

    #[inline]
    fn assign_one(&self, _time: i64) -> Option<std::result::Result<GlobalWindow, OutOfRange>> {
        Some(Ok(GlobalWindow))
    }

    fn is_event_time(&self) -> bool {
        false
    }
}

macro_rules! fixed_windows {
    ($(#[$doc:meta])* $name:ident, $event:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy)]
        pub struct $name;
        impl $name {
            /// Windows of `size`.
            pub fn of(size: Duration) -> TimeWindows {
                Self::of_millis(millis(size))
            }
            /// Windows of `size` ms.
            pub fn of_millis(size: i64) -> TimeWindows {
                TimeWindows::Tumbling { size, offset: 0, event_time: $event }
            }
            /// Windows of `size` ms whose starts are shifted by `offset` ms (may be negative).
            pub fn with_offset_millis(size: i64, offset: i64) -> TimeWindows {
                TimeWindows::Tumbling { size, offset, event_time: $event }
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
            pub fn of(size: Duration, slide: Duration) -> TimeWindows {
                Self::of_millis(millis(size), millis(slide))
            }
            /// Windows of `size` ms starting every `slide` ms.
            pub fn of_millis(size: i64, slide: i64) -> TimeWindows {
                TimeWindows::Sliding { size, slide, offset: 0, event_time: $event }
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
            pub fn with_gap(gap: Duration) -> TimeWindows {
                Self::with_gap_millis(millis(gap))
            }
            /// Sessions that end after `gap` ms without records.
            pub fn with_gap_millis(gap: i64) -> TimeWindows {
                TimeWindows::Session { gap, event_time: $event }
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Flink's windows of `ts`, computed in i128 (no overflow anywhere).
    fn reference(assigner: &TimeWindows, ts: i64) -> Vec<(i128, i128)> {
        let start_of = |size: i128, offset: i128| {
            let ts = i128::from(ts);
            ts - (ts - offset).rem_euclid(size)
        };
        match *assigner {
            TimeWindows::Tumbling { size, offset, .. } => {
                let s = start_of(size.into(), offset.into());
                vec![(s, s + i128::from(size))]
            }
            TimeWindows::Sliding {
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
            TimeWindows::Session { gap, .. } => {
                vec![(ts.into(), i128::from(ts) + i128::from(gap))]
            }
        }
    }

    fn check(assigner: &TimeWindows, ts: i64) {
        let want = reference(assigner, ts);
        let representable = want
            .iter()
            .all(|&(s, e)| i64::try_from(s).is_ok() && i64::try_from(e).is_ok());
        let mut got = Vec::new();
        let assigned = assigner.assign(ts, &mut got);
        if let Some(one) = assigner.one_window(ts) {
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
        let tumbling = |size: i64, offset: i64| TimeWindows::Tumbling {
            size,
            offset,
            event_time: true,
        };
        for ts in [i64::MIN, i64::MIN + 1, -1, 0, 1, i64::MAX - 1, i64::MAX] {
            for (size, offset) in [(10, 0), (10, 9), (10, -9), (1024, 0), (1, 0), (i64::MAX, 0)] {
                check(&tumbling(size, offset), ts);
            }
            check(
                &TimeWindows::Session {
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
        assert!(TimeWindows::Session {
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
            check(&TimeWindows::Tumbling { size, offset: size / 100 * offset_frac, event_time: true }, ts);
            check(&TimeWindows::Sliding { size, slide, offset, event_time: true }, ts);
            check(&TimeWindows::Session { gap: size, event_time: true }, ts);
        }
    }
}
