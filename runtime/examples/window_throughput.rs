//! Throughput of keyed tumbling event-time windows.
//!
//! ```text
//! cargo run --release -p typeinfo-runtime --example window_throughput -- --events N --keys K \
//!   --events-per-ms E --window-ms W --parallelism P --state heap|rocksdb [--count-window N] \
//!   [--mode streaming|batch] [--batch-sort-memory-mib M]
//! ```
//!
//! Event `i` (for `i` in `0..N`) has key `(i * 2654435761) % K`, timestamp `i / E` ms and
//! amount `(i % 1000) / 10.0`. Watermarks are monotonous (emitted after every batch); each key
//! is counted and summed in tumbling windows of `W` ms (with `--count-window N`, in count
//! windows of `N` records per key: global windows with a purging `CountTrigger::of(N)`); the
//! results are counted and dropped.
//! The last line printed is `events_per_s=<number>`. With `--checkpoint-interval-ms MS`
//! (and optionally `--checkpoint-dir DIR`, a temporary directory otherwise) the job takes a
//! checkpoint every `MS` milliseconds, to measure what checkpointing costs. With `--metrics`
//! a line of metrics goes to stderr every 2 seconds. With `--mode batch` the same bounded job
//! runs in batch mode (`typeinfo_runtime::batch`: sorted by key, one key's state at a time;
//! `--state` and checkpoints do not apply; `--batch-sort-memory-mib` sets each keyed
//! subtask's sort budget, 128 MiB by default, beyond which sorted runs spill to disk).
//! `--managed-memory-mib M` bounds RocksDB's memory (block cache and write buffers of every
//! instance of the process; a quarter of the machine's memory by default) and
//! `--max-in-flight-records N` sets the flow-control budget of each source subtask.
//! `--heap-timers` keeps RocksDB's timers in memory (`RocksDbOptions::heap_timers`; in
//! RocksDB by default, as Flink's).

use std::process::ExitCode;
use std::sync::atomic::Ordering;

use typeinfo_runtime::{CheckpointConfig, RuntimeMode, StateBackend, StreamExecutionEnvironment};

#[path = "window_workload/mod.rs"]
mod window_workload;
use window_workload::Workload;

fn run() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value = |flag: &str, default: &str| -> String {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .cloned()
            .unwrap_or_else(|| default.to_owned())
    };
    let num = |flag: &str, default: &str| {
        value(flag, default)
            .parse::<u64>()
            .map_err(|e| format!("{flag}: {e}"))
    };
    let events = num("--events", "20000000")?;
    let keys = num("--keys", "10000")?.max(1);
    let per_ms = num("--events-per-ms", "100")?.max(1);
    let window_ms = num("--window-ms", "1000")?;
    let count_window = num("--count-window", "0")?;
    let parallelism = num("--parallelism", "1")? as u32;
    let mut state = StateBackend::parse(&value("--state", "heap")).map_err(|e| e.to_string())?;
    let managed_mib = num("--managed-memory-mib", "0")?;
    if let (StateBackend::RocksDb { options, .. }, true) = (&mut state, managed_mib > 0) {
        *options = options
            .clone()
            .managed_memory_bytes((managed_mib as usize) << 20);
    }
    if let (StateBackend::RocksDb { options, .. }, true) =
        (&mut state, args.iter().any(|a| a == "--heap-timers"))
    {
        *options = options.clone().heap_timers(true);
    }
    let in_flight = num("--max-in-flight-records", "0")?;
    let checkpoint_ms = num("--checkpoint-interval-ms", "0")?;
    let temp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let checkpoint_dir = args
        .iter()
        .position(|a| a == "--checkpoint-dir")
        .and_then(|i| args.get(i + 1))
        .map_or_else(|| temp.path().to_owned(), std::path::PathBuf::from);

    let mode = RuntimeMode::parse(&value("--mode", "streaming")).map_err(|e| e.to_string())?;
    let sort_mib = num("--batch-sort-memory-mib", "128")?;

    let env = StreamExecutionEnvironment::new();
    env.set_parallelism(parallelism)
        .set_state_backend(state)
        .set_runtime_mode(mode)
        .set_batch_sort_memory((sort_mib as usize) << 20);
    if in_flight > 0 {
        env.set_max_in_flight_records(in_flight);
    }
    if checkpoint_ms > 0 {
        env.enable_checkpointing(CheckpointConfig::new(
            checkpoint_dir,
            std::time::Duration::from_millis(checkpoint_ms),
        ));
    }
    let results = Workload {
        events,
        keys,
        events_per_ms: per_ms,
        window_ms: window_ms as i64,
        count_window: (count_window > 0).then_some(count_window),
    }
    .build(&env);
    let result = if args.iter().any(|a| a == "--metrics") {
        env.execute_async("window_throughput")
            .and_then(|client| client.wait_reporting(std::time::Duration::from_secs(2)))
    } else {
        env.execute("window_throughput")
    }
    .map_err(|e| e.to_string())?;
    let secs = result.elapsed.as_secs_f64();
    println!(
        "events={events} keys={keys} parallelism={parallelism} checkpoint_interval_ms={checkpoint_ms} window_results={} spilled_runs={} seconds={secs:.3}",
        results.load(Ordering::Relaxed),
        result.metric("Window.numSpilledRuns")
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
