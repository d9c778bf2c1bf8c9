//! Throughput of keyed tumbling event-time windows.
//!
//! ```text
//! cargo run --release -p typeinfo-runtime --example window_throughput -- --events N --keys K \
//!   --events-per-ms E --window-ms W --parallelism P --state heap|rocksdb
//! ```
//!
//! Event `i` (for `i` in `0..N`) has key `(i * 2654435761) % K`, timestamp `i / E` ms and
//! amount `(i % 1000) / 10.0`. Watermarks are monotonous (periodic, Flink's default); each key
//! is counted and summed in tumbling windows of `W` ms; the results are counted and dropped.
//! The last line printed is `events_per_s=<number>`. With `--checkpoint-interval-ms MS`
//! (and optionally `--checkpoint-dir DIR`, a temporary directory otherwise) the job takes a
//! checkpoint every `MS` milliseconds, to measure what checkpointing costs.

use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use typeinfo::TypeInfo;
use typeinfo_runtime::{AggregateFunction, CheckpointConfig, StateBackend, StreamExecutionEnvironment, TumblingEventTimeWindows, WatermarkStrategy};

#[derive(TypeInfo, Clone, Debug)]
struct Event {
    key: u64,
    ts: i64,
    amount: f64,
}

/// Count and sum of the amounts.
struct CountSum;

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

fn run() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value = |flag: &str, default: &str| -> String {
        args.iter().position(|a| a == flag).and_then(|i| args.get(i + 1)).cloned().unwrap_or_else(|| default.to_owned())
    };
    let num = |flag: &str, default: &str| value(flag, default).parse::<u64>().map_err(|e| format!("{flag}: {e}"));
    let events = num("--events", "20000000")?;
    let keys = num("--keys", "10000")?.max(1);
    let per_ms = num("--events-per-ms", "100")?.max(1);
    let window_ms = num("--window-ms", "1000")?;
    let parallelism = num("--parallelism", "1")? as u32;
    let state = StateBackend::parse(&value("--state", "heap")).map_err(|e| e.to_string())?;
    let checkpoint_ms = num("--checkpoint-interval-ms", "0")?;
    let temp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let checkpoint_dir = args.iter().position(|a| a == "--checkpoint-dir").and_then(|i| args.get(i + 1)).map_or_else(|| temp.path().to_owned(), std::path::PathBuf::from);

    let env = StreamExecutionEnvironment::new();
    env.set_parallelism(parallelism).set_state_backend(state);
    if checkpoint_ms > 0 {
        env.enable_checkpointing(CheckpointConfig::new(checkpoint_dir, std::time::Duration::from_millis(checkpoint_ms)));
    }
    let results = Arc::new(AtomicU64::new(0));
    let counted = Arc::clone(&results);
    env.from_generator(events, move |i| Event {
        key: i.wrapping_mul(2_654_435_761) % keys,
        ts: (i / per_ms) as i64,
        amount: (i % 1000) as f64 / 10.0,
    })
    .assign_timestamps_and_watermarks(WatermarkStrategy::for_monotonous_timestamps().with_timestamp_assigner(|e: &Event, _| e.ts))
    .key_by(|e: &Event| e.key)
    .window(TumblingEventTimeWindows::of_millis(window_ms as i64))
    .aggregate(CountSum)
    .add_sink(move |_: (u64, f64)| {
        counted.fetch_add(1, Ordering::Relaxed);
    });
    let result = env.execute("window_throughput").map_err(|e| e.to_string())?;
    let secs = result.elapsed.as_secs_f64();
    println!(
        "events={events} keys={keys} parallelism={parallelism} checkpoint_interval_ms={checkpoint_ms} window_results={} seconds={secs:.3}",
        results.load(Ordering::Relaxed)
    );
    println!("events_per_s={:.0}", events as f64 / secs);
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("window_throughput: {e}");
            ExitCode::FAILURE
        }
    }
}
