//! The keyed-window workload of `window_throughput` (and of the `windows` criterion bench,
//! which includes this file): event `i` has key `(i * 2654435761) % keys`, timestamp
//! `i / events_per_ms` ms and amount `(i % 1000) / 10.0`; monotonous watermarks; each key
//! counted and summed in tumbling event-time windows of `window_ms` (or, with
//! `count_window`, in count windows of that many records: `countWindow(n)`, a purging
//! `CountTrigger::of(n)` on global windows); results counted.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use typeinfo::TypeInfo;
use typeinfo_runtime::{
    AggregateFunction, StreamExecutionEnvironment, TumblingEventTimeWindows, WatermarkStrategy,
};

/// One generated event.
#[derive(TypeInfo, Clone, Debug)]
pub struct Event {
    pub key: u64,
    pub ts: i64,
    pub amount: f64,
}

/// The workload's parameters.
#[derive(Debug, Clone, Copy)]
pub struct Workload {
    pub events: u64,
    pub keys: u64,
    pub events_per_ms: u64,
    pub window_ms: i64,
    /// Count windows of this many records per key instead of time windows.
    pub count_window: Option<u64>,
}

impl Workload {
    /// Event `i`.
    pub fn event(&self, i: u64) -> Event {
        Event {
            key: i.wrapping_mul(2_654_435_761) % self.keys,
            ts: (i / self.events_per_ms) as i64,
            amount: (i % 1000) as f64 / 10.0,
        }
    }

    /// Adds the job to `env`; the returned counter holds the number of window results.
    pub fn build(&self, env: &StreamExecutionEnvironment) -> Arc<AtomicU64> {
        let results = Arc::new(AtomicU64::new(0));
        let counted = Arc::clone(&results);
        let workload = *self;
        let keyed = env
            .from_generator(self.events, move |i| workload.event(i))
            .assign_timestamps_and_watermarks(
                WatermarkStrategy::for_monotonous_timestamps()
                    .with_timestamp_assigner(|e: &Event, _| e.ts),
            )
            .key_by(|e: &Event| e.key);
        let windows = match self.count_window {
            None => keyed
                .window(TumblingEventTimeWindows::of_millis(self.window_ms))
                .aggregate(CountSum),
            Some(n) => keyed.count_window(n).aggregate(CountSum),
        };
        windows.add_sink(move |r: (u64, f64)| {
            std::hint::black_box(r);
            counted.fetch_add(1, Ordering::Relaxed);
        });
        results
    }
}

/// Count and sum of the amounts.
pub struct CountSum;

impl AggregateFunction<Event, (u64, f64), (u64, f64)> for CountSum {
    fn create_accumulator(&self) -> (u64, f64) {
        (0, 0.0)
    }
    fn add(&self, e: &Event, acc: &mut (u64, f64)) {
        acc.0 += 1;
        acc.1 += e.amount;
    }
    fn get_result(&self, acc: &(u64, f64)) -> (u64, f64) {
        *acc
    }
    fn merge(&self, a: (u64, f64), b: (u64, f64)) -> (u64, f64) {
        (a.0 + b.0, a.1 + b.1)
    }
}
