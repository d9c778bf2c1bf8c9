//! Evictors: elements removed from a window before or after its function runs, with Flink's
//! `Evictor` contract.
//!
//! A window with an evictor keeps every element with its timestamp (an evicting window
//! cannot fold elements as they come, so `aggregate` and `reduce` run over the full contents
//! when it fires, as in Flink's `EvictingWindowOperator`). At each firing the contents are
//! read in arrival order, [`Evictor::evict_before`] removes what it wants, the function runs
//! on the rest, [`Evictor::evict_after`] may remove more, and what remains is the window's
//! new contents.
//!
//! | evictor | Flink class | removes |
//! |---|---|---|
//! | [`CountEvictor`] | `CountEvictor` | the earliest-arrived elements beyond the newest `n` (arrival order, not timestamps) |
//! | [`TimeEvictor`] | `TimeEvictor` | elements whose timestamp is at or before `max timestamp - size` (any position) |
//! | [`DeltaEvictor`] | `DeltaEvictor` | elements whose delta to the last-arrived element is at or above a threshold |
//!
//! Each evicts before the function unless made with `after` (`CountEvictor::of_after`, ...).

use std::fmt;
use std::sync::Arc;

use crate::operator::contract::now_ms;
use crate::windowing::window::{DeltaFunction, Window};

/// An element of an evicting window with its timestamp (`None` when the record had none).
#[derive(Debug, Clone, PartialEq)]
pub struct TimestampedValue<T> {
    /// The element.
    pub value: T,
    /// Its event timestamp.
    pub timestamp: Option<i64>,
}

/// What an evictor sees of the operator.
#[derive(Debug, Clone, Copy)]
pub struct EvictorContext {
    pub(crate) watermark: i64,
}

impl EvictorContext {
    /// The operator's current watermark.
    pub fn current_watermark(&self) -> i64 {
        self.watermark
    }
    /// The wall clock (ms since the Unix epoch).
    pub fn current_processing_time(&self) -> i64 {
        now_ms()
    }
}

/// Removes elements from a firing window, before and after its function (Flink's
/// `Evictor<T, W>`). The elements are in arrival order.
///
/// ```
/// use typeinfo_runtime::evictor::{Evictor, EvictorContext, TimestampedValue};
/// use typeinfo_runtime::window::GlobalWindow;
/// use typeinfo_runtime::StreamExecutionEnvironment;
///
/// /// Keeps only the elements above zero for the function.
/// struct Positive;
/// impl Evictor<i64, GlobalWindow> for Positive {
///     fn evict_before(&self, elements: &mut Vec<TimestampedValue<i64>>, _: &GlobalWindow, _: &EvictorContext) {
///         elements.retain(|e| e.value > 0);
///     }
///     fn evict_after(&self, _: &mut Vec<TimestampedValue<i64>>, _: &GlobalWindow, _: &EvictorContext) {}
/// }
///
/// # fn main() -> typeinfo_runtime::Result<()> {
/// let env = StreamExecutionEnvironment::new();
/// let sums = env
///     .from_collection(vec![1i64, -5, 2, 3])
///     .key_by(|_: &i64| 0u8)
///     .count_window(2)
///     .evictor(Positive)
///     .reduce(|a, b| a + b)
///     .collect();
/// env.execute("positive pairs")?;
/// assert_eq!(sums.take(), [1, 5]);
/// # Ok(())
/// # }
/// ```
pub trait Evictor<T, W: Window>: Send + Sync + 'static {
    /// Removes elements before the window's function runs.
    fn evict_before(
        &self,
        elements: &mut Vec<TimestampedValue<T>>,
        window: &W,
        ctx: &EvictorContext,
    );
    /// Removes elements after the window's function ran.
    fn evict_after(
        &self,
        elements: &mut Vec<TimestampedValue<T>>,
        window: &W,
        ctx: &EvictorContext,
    );
}

/// The `Evictor` impl of a built-in evictor: its `evict` runs before the function, or after
/// it when the evictor was made with `after`.
macro_rules! before_or_after {
    ($ty:ty, $t:ident $(: $($bound:tt)+)?) => {
        impl<$t $(: $($bound)+)?, W: Window> Evictor<$t, W> for $ty {
            fn evict_before(&self, elements: &mut Vec<TimestampedValue<$t>>, _: &W, _: &EvictorContext) {
                if !self.after {
                    self.evict(elements);
                }
            }
            fn evict_after(&self, elements: &mut Vec<TimestampedValue<$t>>, _: &W, _: &EvictorContext) {
                if self.after {
                    self.evict(elements);
                }
            }
        }
    };
}

/// Keeps the newest `n` elements by arrival (Flink's `CountEvictor`).
#[derive(Debug, Clone, Copy)]
pub struct CountEvictor {
    max_count: usize,
    after: bool,
}

impl CountEvictor {
    /// Keeps `n` elements, evicting before the function.
    pub fn of(n: usize) -> Self {
        CountEvictor {
            max_count: n,
            after: false,
        }
    }
    /// Keeps `n` elements, evicting after the function.
    pub fn of_after(n: usize) -> Self {
        CountEvictor {
            max_count: n,
            after: true,
        }
    }
    fn evict<T>(&self, elements: &mut Vec<TimestampedValue<T>>) {
        if elements.len() > self.max_count {
            let extra = elements.len() - self.max_count;
            elements.drain(..extra);
        }
    }
}

before_or_after!(CountEvictor, T);

/// Keeps the elements within `size` ms of the newest timestamp among them (Flink's
/// `TimeEvictor`): an element with `timestamp <= max - size` is removed wherever it sits.
/// Contents without timestamps are left alone.
///
/// ```
/// use typeinfo_runtime::evictor::TimeEvictor;
/// use typeinfo_runtime::{StreamExecutionEnvironment, WatermarkStrategy};
///
/// # fn main() -> typeinfo_runtime::Result<()> {
/// let env = StreamExecutionEnvironment::new();
/// let recent = env
///     .from_collection(vec![(0i64, 1i64), (50, 2), (20, 3), (45, 4)]) // (timestamp, amount)
///     .assign_timestamps_and_watermarks(
///         WatermarkStrategy::for_bounded_out_of_orderness_millis(100).with_timestamp_assigner(|e: &(i64, i64), _| e.0),
///     )
///     .key_by(|_: &(i64, i64)| 0u8)
///     .count_window(4)
///     .evictor(TimeEvictor::of_millis(30)) // keeps timestamps above 50 - 30 = 20
///     .reduce(|a, b| (a.0.max(b.0), a.1 + b.1))
///     .map(|e| e.1)
///     .collect();
/// env.execute("recent")?;
/// assert_eq!(recent.take(), [6]); // the amounts at 50 and 45
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, Copy)]
pub struct TimeEvictor {
    size: i64,
    after: bool,
}

impl TimeEvictor {
    /// Keeps `size` of event time, evicting before the function.
    pub fn of(size: std::time::Duration) -> Self {
        Self::of_millis(size.as_millis().min(i64::MAX as u128) as i64)
    }
    /// Keeps `size` ms of event time, evicting before the function.
    pub fn of_millis(size: i64) -> Self {
        TimeEvictor { size, after: false }
    }
    /// Keeps `size` ms of event time, evicting after the function.
    pub fn of_millis_after(size: i64) -> Self {
        TimeEvictor { size, after: true }
    }
    fn evict<T>(&self, elements: &mut Vec<TimestampedValue<T>>) {
        // Flink's `hasTimestamp` looks at the first element only.
        if elements.first().is_none_or(|e| e.timestamp.is_none()) {
            return;
        }
        let Some(max) = elements.iter().filter_map(|e| e.timestamp).max() else {
            return;
        };
        let cutoff = max.saturating_sub(self.size);
        elements.retain(|e| e.timestamp.is_none_or(|t| t > cutoff));
    }
}

before_or_after!(TimeEvictor, T);

/// Removes the elements whose delta to the last-arrived element is at or above `threshold`
/// (Flink's `DeltaEvictor`).
///
/// # Examples
///
/// ```
/// use typeinfo_runtime::evictor::DeltaEvictor;
/// use typeinfo_runtime::StreamExecutionEnvironment;
///
/// # fn main() -> typeinfo_runtime::Result<()> {
/// let env = StreamExecutionEnvironment::new();
/// let sums = env
///     .from_collection(vec![20i64, 3, 18, 21, 5, 6, 7, 30])
///     .key_by(|_: &i64| 0u8)
///     .count_window(4)
///     .evictor(DeltaEvictor::of(5.0, |v: &i64, last: &i64| (v - last).abs() as f64))
///     .reduce(|a, b| a + b)
///     .collect();
/// env.execute("near the last")?;
/// // 3 is 18 from 21, the last of its window; 30 is the last of its window, every other is
/// // at least 23 from it.
/// assert_eq!(sums.take(), [59, 30]);
/// # Ok(())
/// # }
/// ```
pub struct DeltaEvictor<T> {
    threshold: f64,
    delta: DeltaFunction<T>,
    after: bool,
}

impl<T> fmt::Debug for DeltaEvictor<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeltaEvictor")
            .field("threshold", &self.threshold)
            .field("after", &self.after)
            .finish_non_exhaustive()
    }
}

impl<T> DeltaEvictor<T> {
    /// Evicts before the function what is `threshold` or more from the last element.
    pub fn of(threshold: f64, delta: impl Fn(&T, &T) -> f64 + Send + Sync + 'static) -> Self {
        DeltaEvictor {
            threshold,
            delta: Arc::new(delta),
            after: false,
        }
    }
    /// As [`of`](Self::of), evicting after the function.
    pub fn of_after(threshold: f64, delta: impl Fn(&T, &T) -> f64 + Send + Sync + 'static) -> Self {
        DeltaEvictor {
            after: true,
            ..Self::of(threshold, delta)
        }
    }
    fn evict(&self, elements: &mut Vec<TimestampedValue<T>>)
    where
        T: Clone,
    {
        let Some(last) = elements.last().map(|e| e.value.clone()) else {
            return;
        };
        // Flink removes an element when `delta >= threshold`; a NaN delta keeps it.
        elements.retain(|e| {
            !matches!(
                (self.delta)(&e.value, &last).partial_cmp(&self.threshold),
                Some(std::cmp::Ordering::Greater | std::cmp::Ordering::Equal)
            )
        });
    }
}

before_or_after!(DeltaEvictor<T>, T: Clone + Send + Sync + 'static);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::windowing::window::GlobalWindow;

    fn values(ts: &[Option<i64>]) -> Vec<TimestampedValue<usize>> {
        ts.iter()
            .enumerate()
            .map(|(value, &timestamp)| TimestampedValue { value, timestamp })
            .collect()
    }

    fn kept(v: &[TimestampedValue<usize>]) -> Vec<usize> {
        v.iter().map(|e| e.value).collect()
    }

    const CTX: EvictorContext = EvictorContext { watermark: 0 };

    #[test]
    fn count_evictor_keeps_the_newest_arrivals_not_the_newest_timestamps() {
        let mut v = values(&[Some(50), Some(10), Some(40), Some(20)]);
        Evictor::<usize, GlobalWindow>::evict_before(
            &CountEvictor::of(2),
            &mut v,
            &GlobalWindow,
            &CTX,
        );
        assert_eq!(kept(&v), [2, 3]);
        Evictor::<usize, GlobalWindow>::evict_after(
            &CountEvictor::of(1),
            &mut v,
            &GlobalWindow,
            &CTX,
        );
        assert_eq!(
            kept(&v),
            [2, 3],
            "an evict-before evictor does nothing after"
        );
    }

    #[test]
    fn time_evictor_removes_old_timestamps_wherever_they_sit() {
        let mut v = values(&[Some(50), Some(10), Some(40), Some(20), Some(31)]);
        // max 50, size 20: cutoff 30, elements at or before it go.
        Evictor::<usize, GlobalWindow>::evict_before(
            &TimeEvictor::of_millis(20),
            &mut v,
            &GlobalWindow,
            &CTX,
        );
        assert_eq!(kept(&v), [0, 2, 4]);
        let mut none = values(&[None, Some(1), Some(100)]);
        Evictor::<usize, GlobalWindow>::evict_before(
            &TimeEvictor::of_millis(20),
            &mut none,
            &GlobalWindow,
            &CTX,
        );
        assert_eq!(
            kept(&none),
            [0, 1, 2],
            "no timestamp on the first: left alone"
        );
    }

    #[test]
    fn delta_evictor_measures_against_the_last_arrival() {
        let mut v = vec![10.0, 1.0, 9.5, 3.0, 10.0]
            .into_iter()
            .map(|value| TimestampedValue {
                value,
                timestamp: None,
            })
            .collect::<Vec<TimestampedValue<f64>>>();
        let e = DeltaEvictor::of(2.0, |a: &f64, b: &f64| (a - b).abs());
        Evictor::<f64, GlobalWindow>::evict_before(&e, &mut v, &GlobalWindow, &CTX);
        let kept: Vec<f64> = v.iter().map(|e| e.value).collect();
        assert_eq!(kept, [10.0, 9.5, 10.0]);
    }
}
