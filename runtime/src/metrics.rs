//! Metrics: counters, gauges and histograms that functions and operators register on their
//! [`MetricGroup`], and the ones the runtime keeps itself.
//!
//! Names are scoped by operator: a counter is `<operator>.<name>` and sums over the
//! operator's subtasks (records in and out, late records dropped, a user's counter); a
//! gauge or histogram is `<operator>[<subtask>].<name>` (one value per subtask, such as the
//! current input watermark). The job's own are under `job.` (checkpoints completed, the last
//! checkpoint's duration and size). Read them live with
//! [`JobClient::metrics`](crate::api::environment::JobClient::metrics) and at the end in
//! [`JobResult`](crate::api::environment::JobResult); the examples print a line of them with `--metrics`.
//!
//! The runtime's metrics per operator:
//!
//! | name | kind | meaning |
//! |---|---|---|
//! | `<op>.numRecordsIn` | counter | records the operator processed |
//! | `<op>.numRecordsOut` | counter | records it emitted (main output) |
//! | `<op>[i].currentInputWatermark` | gauge | subtask `i`'s input watermark (ms) |
//! | `<op>[i].watermarkLag` | gauge | wall clock minus that watermark (ms) |
//! | `<op>.numLateRecordsDropped` | counter | late records a window dropped |
//! | `job.numCompletedCheckpoints` | counter | checkpoints completed |
//! | `job.lastCheckpointDurationMs` | gauge | from the first part written to `_metadata` |
//! | `job.lastCheckpointSizeBytes` | gauge | bytes of the last completed checkpoint |
//! | `<op>.stateSizeBytes` | gauge | the operator's bytes in the last checkpoint |

use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// The values a histogram keeps: Flink's `DescriptiveStatisticsHistogram` keeps a window of
/// the last values too.
const HISTOGRAM_WINDOW: usize = 1024;

/// A count that only grows; cheap to clone and to increment from any thread.
#[derive(Clone, Default)]
pub struct Counter(Arc<AtomicU64>);

impl Counter {
    /// Adds one.
    #[inline]
    pub fn inc(&self) {
        self.inc_by(1);
    }
    /// Adds `n`.
    #[inline]
    pub fn inc_by(&self, n: u64) {
        self.0.fetch_add(n, Ordering::Relaxed);
    }
    /// The count.
    pub fn count(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// A count kept per subtask (`<operator>[<subtask>].<name>`) and summed per operator
/// (`<operator>.<name>`): records in and out, which Flink reports per subtask.
#[derive(Clone, Debug)]
pub(crate) struct SubtaskCounter {
    operator: Counter,
    subtask: Counter,
}

impl SubtaskCounter {
    /// Adds `n` to both.
    #[inline]
    pub(crate) fn inc_by(&self, n: u64) {
        self.operator.inc_by(n);
        self.subtask.inc_by(n);
    }
}

impl fmt::Debug for Counter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Counter({})", self.count())
    }
}

/// A value that is set (the last set wins).
#[derive(Clone, Default)]
pub struct Gauge(Arc<AtomicI64>);

impl Gauge {
    /// Sets the value.
    #[inline]
    pub fn set(&self, value: i64) {
        self.0.store(value, Ordering::Relaxed);
    }
    /// The value.
    pub fn value(&self) -> i64 {
        self.0.load(Ordering::Relaxed)
    }
}

impl fmt::Debug for Gauge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Gauge({})", self.value())
    }
}

#[derive(Default)]
struct HistogramValues {
    count: u64,
    window: VecDeque<i64>,
}

/// The distribution of the last 1024 values recorded (and the count of all of them).
#[derive(Clone, Default)]
pub struct Histogram(Arc<Mutex<HistogramValues>>);

impl Histogram {
    /// Records a value.
    pub fn update(&self, value: i64) {
        let mut h = self.0.lock().unwrap_or_else(|p| p.into_inner());
        h.count += 1;
        if h.window.len() == HISTOGRAM_WINDOW {
            h.window.pop_front();
        }
        h.window.push_back(value);
    }

    /// The statistics of the values in the window.
    pub fn statistics(&self) -> HistogramStatistics {
        let h = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let mut values: Vec<i64> = h.window.iter().copied().collect();
        values.sort_unstable();
        let quantile = |q: f64| -> i64 {
            if values.is_empty() {
                return 0;
            }
            let at = ((values.len() - 1) as f64 * q).round() as usize;
            values[at.min(values.len() - 1)]
        };
        HistogramStatistics {
            count: h.count,
            min: values.first().copied().unwrap_or(0),
            max: values.last().copied().unwrap_or(0),
            mean: if values.is_empty() {
                0.0
            } else {
                values.iter().map(|v| *v as f64).sum::<f64>() / values.len() as f64
            },
            p50: quantile(0.5),
            p99: quantile(0.99),
        }
    }
}

impl fmt::Debug for Histogram {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Histogram({:?})", self.statistics())
    }
}

/// What a histogram holds.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct HistogramStatistics {
    /// Values recorded in all.
    pub count: u64,
    /// The smallest value in the window.
    pub min: i64,
    /// The largest value in the window.
    pub max: i64,
    /// The mean of the window.
    pub mean: f64,
    /// The median of the window.
    pub p50: i64,
    /// The 99th percentile of the window.
    pub p99: i64,
}

/// Every metric of a job (in this process), by name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Metrics {
    /// Counters.
    pub counters: BTreeMap<String, u64>,
    /// Gauges.
    pub gauges: BTreeMap<String, i64>,
    /// Histograms.
    pub histograms: BTreeMap<String, HistogramStatistics>,
}

impl Metrics {
    /// A counter's value (0 when it never counted).
    pub fn counter(&self, name: &str) -> u64 {
        self.counters.get(name).copied().unwrap_or(0)
    }
    /// A gauge's value, if it was ever set.
    pub fn gauge(&self, name: &str) -> Option<i64> {
        self.gauges.get(name).copied()
    }
}

impl Metrics {
    /// One line for a console: the busiest operator's records per second since `previous`
    /// (taken `elapsed` before), the lowest input watermark of any subtask, and the
    /// checkpoints (as the examples print with `--metrics`).
    pub fn summary(&self, previous: &Metrics, elapsed: std::time::Duration) -> String {
        let secs = elapsed.as_secs_f64().max(1e-9);
        let busiest = self
            .counters
            .iter()
            .filter(|(k, _)| k.ends_with(".numRecordsIn") && !k.contains("]."))
            .map(|(k, v)| {
                let before = previous.counters.get(k).copied().unwrap_or(0);
                (
                    v.saturating_sub(before) as f64 / secs,
                    k.trim_end_matches(".numRecordsIn"),
                )
            })
            .max_by(|a, b| a.0.total_cmp(&b.0));
        let watermark = self
            .gauges
            .iter()
            .filter(|(k, _)| k.ends_with(".currentInputWatermark"))
            .map(|(_, v)| *v)
            .filter(|v| *v > i64::MIN)
            .min();
        let mut line = match busiest {
            Some((rate, op)) => format!("{rate:.0} records/s into {op}"),
            None => "no records yet".to_owned(),
        };
        match watermark {
            Some(i64::MAX) => line.push_str(", watermark: end of input"),
            Some(w) => line.push_str(&format!(", watermark {w} ms")),
            None => line.push_str(", no watermark yet"),
        }
        let completed = self.counter("job.numCompletedCheckpoints");
        if completed > 0 {
            line.push_str(&format!(
                ", {completed} checkpoints, last {} bytes in {} ms",
                self.gauge("job.lastCheckpointSizeBytes").unwrap_or(0),
                self.gauge("job.lastCheckpointDurationMs").unwrap_or(0)
            ));
        }
        line
    }
}

/// The metrics of one process's workers.
#[derive(Default)]
pub(crate) struct MetricRegistry {
    counters: Mutex<BTreeMap<String, Counter>>,
    gauges: Mutex<BTreeMap<String, Gauge>>,
    histograms: Mutex<BTreeMap<String, Histogram>>,
}

impl MetricRegistry {
    pub(crate) fn counter(&self, name: String) -> Counter {
        self.counters
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(name)
            .or_default()
            .clone()
    }

    pub(crate) fn gauge(&self, name: String) -> Gauge {
        self.gauges
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(name)
            .or_default()
            .clone()
    }

    pub(crate) fn histogram(&self, name: String) -> Histogram {
        self.histograms
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(name)
            .or_default()
            .clone()
    }

    /// Every metric's value now.
    pub(crate) fn snapshot(&self) -> Metrics {
        Metrics {
            counters: self
                .counters
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .iter()
                .map(|(k, c)| (k.clone(), c.count()))
                .collect(),
            gauges: self
                .gauges
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .iter()
                .map(|(k, g)| (k.clone(), g.value()))
                .collect(),
            histograms: self
                .histograms
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .iter()
                .map(|(k, h)| (k.clone(), h.statistics()))
                .collect(),
        }
    }
}

impl fmt::Debug for MetricRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MetricRegistry").finish_non_exhaustive()
    }
}

/// An operator subtask's time split as Flink's task metrics split it: the gauges
/// `busyTimeMsPerSecond`, `backPressuredTimeMsPerSecond` and `idleTimeMsPerSecond`, each the
/// milliseconds per second spent so over the last second or more (updated when the subtask
/// runs). Busy is time in the operator's activations; back-pressured is time a source waited
/// for its in-flight budget (operators here never block on their output: flow control holds
/// back the sources, so the bottleneck is the busiest operator downstream of a back-pressured
/// source); idle is the rest.
pub(crate) struct TimeShares {
    busy: Gauge,
    backpressured: Gauge,
    idle: Gauge,
    window: std::time::Instant,
    busy_sum: std::time::Duration,
    backpressured_sum: std::time::Duration,
    /// The end of the last activation, and whether it found its budget used up.
    last: std::time::Instant,
    throttled: bool,
}

impl TimeShares {
    pub(crate) fn new(group: &MetricGroup) -> Self {
        TimeShares {
            busy: group.gauge("busyTimeMsPerSecond"),
            backpressured: group.gauge("backPressuredTimeMsPerSecond"),
            idle: group.gauge("idleTimeMsPerSecond"),
            window: std::time::Instant::now(),
            busy_sum: std::time::Duration::ZERO,
            backpressured_sum: std::time::Duration::ZERO,
            last: std::time::Instant::now(),
            throttled: false,
        }
    }

    /// An activation that began at `began` and ends now; `throttled`: a source that found
    /// its in-flight budget used up (the time until its next activation is back-pressured).
    pub(crate) fn activation(&mut self, began: std::time::Instant, throttled: bool) {
        let now = std::time::Instant::now();
        if self.throttled {
            self.backpressured_sum += began.saturating_duration_since(self.last);
        }
        let spent = now.saturating_duration_since(began);
        if throttled {
            self.backpressured_sum += spent;
        } else {
            self.busy_sum += spent;
        }
        self.throttled = throttled;
        self.last = now;
        self.publish();
    }

    fn publish(&mut self) {
        let elapsed = self.window.elapsed();
        if elapsed < std::time::Duration::from_secs(1) {
            return;
        }
        let per_second = |d: std::time::Duration| {
            ((d.as_secs_f64() * 1000.0 / elapsed.as_secs_f64()).round() as i64).min(1000)
        };
        let busy = per_second(self.busy_sum);
        let backpressured = per_second(self.backpressured_sum);
        self.busy.set(busy);
        self.backpressured.set(backpressured);
        self.idle.set((1000 - busy - backpressured).max(0));
        self.window = std::time::Instant::now();
        self.busy_sum = std::time::Duration::ZERO;
        self.backpressured_sum = std::time::Duration::ZERO;
    }
}

/// Where a function or operator registers its metrics (scoped by its operator and subtask).
#[derive(Clone)]
pub struct MetricGroup {
    operator: String,
    subtask: usize,
    registry: Arc<MetricRegistry>,
}

impl fmt::Debug for MetricGroup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MetricGroup")
            .field("operator", &self.operator)
            .field("subtask", &self.subtask)
            .finish()
    }
}

impl MetricGroup {
    pub(crate) fn new(operator: &str, subtask: usize, registry: Arc<MetricRegistry>) -> Self {
        MetricGroup {
            operator: operator.to_owned(),
            subtask,
            registry,
        }
    }

    /// The counter `<operator>.<name>` (shared by the operator's subtasks: their sum).
    pub fn counter(&self, name: &str) -> Counter {
        self.registry.counter(format!("{}.{name}", self.operator))
    }

    /// The counters `<operator>.<name>` and `<operator>[<subtask>].<name>`, counted
    /// together.
    pub(crate) fn subtask_counter(&self, name: &str) -> SubtaskCounter {
        SubtaskCounter {
            operator: self.counter(name),
            subtask: self
                .registry
                .counter(format!("{}[{}].{name}", self.operator, self.subtask)),
        }
    }

    /// The gauge `<operator>[<subtask>].<name>`.
    pub fn gauge(&self, name: &str) -> Gauge {
        self.registry
            .gauge(format!("{}[{}].{name}", self.operator, self.subtask))
    }

    /// The histogram `<operator>[<subtask>].<name>`.
    pub fn histogram(&self, name: &str) -> Histogram {
        self.registry
            .histogram(format!("{}[{}].{name}", self.operator, self.subtask))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_sum_over_subtasks_and_gauges_are_per_subtask() {
        let registry = Arc::new(MetricRegistry::default());
        let a = MetricGroup::new("op", 0, Arc::clone(&registry));
        let b = MetricGroup::new("op", 1, Arc::clone(&registry));
        a.counter("n").inc_by(2);
        b.counter("n").inc();
        a.gauge("g").set(-5);
        b.gauge("g").set(7);
        let m = registry.snapshot();
        assert_eq!(m.counter("op.n"), 3);
        assert_eq!(m.gauge("op[0].g"), Some(-5));
        assert_eq!(m.gauge("op[1].g"), Some(7));
    }

    #[test]
    fn a_histogram_keeps_the_last_values() {
        let h = Histogram::default();
        for v in 0..2000 {
            h.update(v);
        }
        let s = h.statistics();
        assert_eq!(s.count, 2000);
        assert_eq!((s.min, s.max), (2000 - 1024, 1999));
        assert_eq!(s.p50, 2000 - 512);
    }
}
