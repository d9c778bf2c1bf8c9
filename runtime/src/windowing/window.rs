//! Windows: the time window `[start, end)` and the global window, and what every window type
//! offers ([`Window`]). How records are assigned to windows is in [`crate::assigner`], when a
//! window fires in [`crate::trigger`], what is evicted before and after in
//! [`crate::evictor`].

use std::fmt;
use std::hash::Hash;
use std::sync::Arc;

use typeinfo::TypeInfo;
use typeinfo_state::{AggregatingState, KeyedBackend, ListState, ReducingState};

use crate::error::Result;
use crate::types::{Data, Key};

/// A window: the namespace of its contents and trigger state, with the largest timestamp it
/// holds (when an event-time trigger fires it and where its cleanup time counts from).
pub trait Window:
    TypeInfo + typeinfo::KeyType + Clone + Eq + Hash + Ord + Sync + Send + fmt::Debug + 'static
{
    /// The largest timestamp in the window.
    fn max_timestamp(&self) -> i64;
}

/// The window of every record of a key ([`GlobalWindows`](crate::assigner::GlobalWindows)): it never ends.
///
/// ```
/// use typeinfo_runtime::window::{GlobalWindow, Window};
/// assert_eq!(GlobalWindow.max_timestamp(), i64::MAX);
/// ```
#[derive(TypeInfo, Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
#[typeinfo(name = "typeinfo.runtime.GlobalWindow")]
pub struct GlobalWindow;

impl Window for GlobalWindow {
    fn max_timestamp(&self) -> i64 {
        i64::MAX
    }
}

impl fmt::Display for GlobalWindow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("GlobalWindow")
    }
}

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

impl Window for TimeWindow {
    fn max_timestamp(&self) -> i64 {
        TimeWindow::max_timestamp(self)
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

/// Keyed state per window that can be cleared and merged: a window's contents, and trigger
/// state that follows windows when they merge ([`TriggerContext::merge_state`](crate::trigger::TriggerContext::merge_state)).
/// Implemented by the state crate's reducing, aggregating and list states namespaced by a
/// window.
pub trait MergingState<K: Key, W: Window> {
    /// Clears the current key's state in `window`.
    ///
    /// # Errors
    ///
    /// The state backend failed.
    fn clear(&self, backend: &mut KeyedBackend<K>, window: &W) -> Result<()>;
    /// Merges the current key's state in `sources` into `target` (and clears `sources`).
    ///
    /// # Errors
    ///
    /// The state backend failed.
    fn merge(&self, backend: &mut KeyedBackend<K>, target: &W, sources: &[W]) -> Result<()>;
}

macro_rules! merging_state {
    ($($handle:ident<$($p:ident),*> where $($bound:ident: $($b:path)|+),*;)*) => {$(
        impl<K: Key, W: Window, $($p),*> MergingState<K, W> for $handle<W, $($p),*>
        where
            $($bound: $($b +)+ 'static),*
        {
            fn clear(&self, backend: &mut KeyedBackend<K>, window: &W) -> Result<()> {
                Ok($handle::clear(self, backend, window)?)
            }
            fn merge(&self, backend: &mut KeyedBackend<K>, target: &W, sources: &[W]) -> Result<()> {
                Ok(self.merge_namespaces(backend, target, sources)?)
            }
        }
    )*};
}

merging_state! {
    AggregatingState<I, A, R> where I: Sized, A: Data, R: Sized;
    ReducingState<I> where I: Data;
    ListState<I> where I: Data;
}

/// The distance between two elements, for [`DeltaTrigger`](crate::trigger::DeltaTrigger) and
/// [`DeltaEvictor`](crate::evictor::DeltaEvictor).
pub type DeltaFunction<T> = Arc<dyn Fn(&T, &T) -> f64 + Send + Sync>;
