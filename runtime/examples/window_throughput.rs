//! Throughput of keyed tumbling event-time windows.
//!
//! ```text
//! cargo run --release -p typeinfo-runtime --example window_throughput -- --events N --keys K \
//!   --events-per-ms E --window-ms W --parallelism P --state heap|rocksdb [--count-window N] \
//!   [--mode streaming|batch] [--batch-sort-memory-mib M] [--no-hash-aggregation] [--quiet]
//! ```
//!
//! `--help` lists every flag with its default.
//!
//! Event `i` (for `i` in `0..N`) has key `(i * 2654435761) % K`, timestamp `i / E` ms and
//! amount `(i % 1000) / 10.0`. Watermarks are monotonous (emitted after every batch); each key
//! is counted and summed in tumbling windows of `W` ms (with `--count-window N`, in count
//! windows of `N` records per key: global windows with a purging `CountTrigger::of(N)`); the
//! results are counted and dropped.
//! The last line printed is `events_per_s=<number>`. With `--checkpoint-interval-ms MS`
//! (and optionally `--checkpoint-dir DIR`, a temporary directory otherwise) the job takes a
//! checkpoint every `MS` milliseconds, to measure what checkpointing costs. A progress line
//! (metrics) goes to stderr every 2 seconds unless `--quiet`. With `--mode batch` the same bounded job
//! runs in batch mode (`typeinfo_runtime::batch`: the windows' aggregation by hash,
//! `typeinfo_runtime::batch::hash`, or with `--no-hash-aggregation` sorted by key, one key's
//! state at a time; `--state` and checkpoints do not apply; `--batch-sort-memory-mib` sets
//! each keyed subtask's memory budget, 128 MiB by default, beyond which sorted runs spill to
//! disk).
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

/// Throughput of keyed tumbling event-time windows.
#[derive(clap::Parser)]
#[command(name = "window_throughput", about, long_about = None)]
struct Args {
    /// Events to generate.
    #[arg(long, default_value_t = 20_000_000)]
    events: u64,
    /// Distinct keys.
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..))]
    keys: u64,
    /// Events per millisecond of event time.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..))]
    events_per_ms: u64,
    /// Tumbling window size, in ms.
    #[arg(long, default_value_t = 1000)]
    window_ms: u64,
    /// Count windows of this many records per key instead (0: time windows).
    #[arg(long, default_value_t = 0)]
    count_window: u64,
    /// Parallelism of every operator.
    #[arg(long, default_value_t = 1)]
    parallelism: u32,
    /// Where keyed state lives: heap or rocksdb.
    #[arg(long, default_value = "heap")]
    state: String,
    /// RocksDB's managed memory in MiB (0: a quarter of the machine's memory).
    #[arg(long, default_value_t = 0)]
    managed_memory_mib: u64,
    /// Keep RocksDB's timers in memory.
    #[arg(long)]
    heap_timers: bool,
    /// The flow-control budget of each source subtask, in records (0: the runtime's).
    #[arg(long, default_value_t = 0)]
    max_in_flight_records: u64,
    /// A checkpoint every this many ms (0: no checkpoints).
    #[arg(long, default_value_t = 0)]
    checkpoint_interval_ms: u64,
    /// Where checkpoints go (default: a temporary directory).
    #[arg(long)]
    checkpoint_dir: Option<std::path::PathBuf>,
    /// streaming | batch | automatic.
    #[arg(long, default_value = "streaming")]
    mode: String,
    /// Each keyed subtask's sort budget in batch mode, in MiB.
    #[arg(long, default_value_t = 128)]
    batch_sort_memory_mib: u64,
    /// Progress lines on stderr every 2 s (the default; kept for older command lines).
    #[arg(long, conflicts_with = "quiet")]
    metrics: bool,
    /// No progress lines.
    #[arg(long)]
    quiet: bool,
    /// Every operator a timely operator of its own (chaining off, as before issue 28).
    #[arg(long)]
    no_chaining: bool,
    /// Batch mode: sort every keyed input, windows included (no hash aggregation, as before
    /// issue 28).
    #[arg(long)]
    no_hash_aggregation: bool,
}

fn run() -> Result<(), String> {
    let args = <Args as clap::Parser>::parse();
    let (events, keys, per_ms, window_ms) =
        (args.events, args.keys, args.events_per_ms, args.window_ms);
    let (count_window, parallelism) = (args.count_window, args.parallelism);
    let mut state = StateBackend::parse(&args.state).map_err(|e| e.to_string())?;
    let managed_mib = args.managed_memory_mib;
    if let (StateBackend::RocksDb { options, .. }, true) = (&mut state, managed_mib > 0) {
        *options = options
            .clone()
            .managed_memory_bytes((managed_mib as usize) << 20);
    }
    if let (StateBackend::RocksDb { options, .. }, true) = (&mut state, args.heap_timers) {
        *options = options.clone().heap_timers(true);
    }
    let in_flight = args.max_in_flight_records;
    let checkpoint_ms = args.checkpoint_interval_ms;
    let temp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let checkpoint_dir = args
        .checkpoint_dir
        .clone()
        .unwrap_or_else(|| temp.path().to_owned());

    let mode = RuntimeMode::parse(&args.mode).map_err(|e| e.to_string())?;
    let sort_mib = args.batch_sort_memory_mib;

    let env = StreamExecutionEnvironment::new();
    env.set_parallelism(parallelism)
        .set_state_backend(state)
        .set_runtime_mode(mode)
        .set_batch_sort_memory((sort_mib as usize) << 20)
        .set_batch_hash_aggregation(!args.no_hash_aggregation);
    if in_flight > 0 {
        env.set_max_in_flight_records(in_flight);
    }
    if args.no_chaining {
        env.disable_operator_chaining();
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
    let result = if args.metrics || !args.quiet {
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
