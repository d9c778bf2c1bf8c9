//! A session window on each of many keys, all open until the input ends: as many pending
//! timers as keys, for the memory bound of timers in RocksDB.
//!
//! ```text
//! pending_timers --keys N [--state heap|rocksdb] [--managed-memory-mib M] [--parallelism P]
//!   [--quiet]
//! ```
//!
//! A generator source makes one record per key (`(i, 1)` at event time `i` ms) for keys
//! `0..N`; a session window with a gap of a year on each key reduces them (summing the
//! second field), so every key holds one window and its cleanup timer until the end of the
//! input, when the final watermark fires them all. The sink counts the windows and sums
//! `key * 3 + count`. At the end the program prints
//! `windows=<count> checksum=<sum> peak_rss_kb=<VmHWM of this process>`; every key's one
//! window gives `windows = N` and `checksum = 3 N (N - 1) / 2 + N` (the reference a caller
//! checks against, computed without the job).

use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use typeinfo_runtime::{
    EventTimeSessionWindows, StateBackend, StreamExecutionEnvironment, WatermarkStrategy,
};

mod support;
use support::{finish, peak_rss_kb};

/// A session window on each of many keys, all open until the input ends (pending timers).
#[derive(clap::Parser, Debug)]
#[command(name = "pending_timers", about, long_about = None)]
struct Args {
    /// Keys, one record each.
    #[arg(long, default_value_t = 1_000_000)]
    keys: u64,
    /// Parallelism of every operator.
    #[arg(long, default_value_t = 1)]
    parallelism: u32,
    /// Where keyed state (and timers) live.
    #[arg(long, default_value = "rocksdb", value_parser = ["heap", "rocksdb"])]
    state: String,
    /// RocksDB's managed memory in MiB (0: the default, a quarter of the machine's memory).
    #[arg(long, default_value_t = 0)]
    managed_memory_mib: usize,
    /// No progress line on stderr.
    #[arg(long)]
    quiet: bool,
}

const YEAR_MS: i64 = 365 * 24 * 3600 * 1000;

fn run() -> Result<(), String> {
    let args = <Args as clap::Parser>::parse();
    let (keys, parallelism, managed_mib) = (args.keys, args.parallelism, args.managed_memory_mib);
    let mut state = StateBackend::parse(&args.state).map_err(|e| e.to_string())?;
    if let (StateBackend::RocksDb { options, .. }, true) = (&mut state, managed_mib > 0) {
        *options = options.clone().managed_memory_bytes(managed_mib << 20);
    }
    let env = StreamExecutionEnvironment::new();
    env.set_parallelism(parallelism).set_state_backend(state);
    let windows = Arc::new(AtomicU64::new(0));
    let checksum = Arc::new(AtomicU64::new(0));
    let (w, c) = (Arc::clone(&windows), Arc::clone(&checksum));
    env.from_generator(keys, |i| (i, 1u64))
        .assign_timestamps_and_watermarks(
            WatermarkStrategy::for_monotonous_timestamps()
                .with_timestamp_assigner(|r: &(u64, u64), _| r.0 as i64),
        )
        .key_by(|r: &(u64, u64)| r.0)
        .window(EventTimeSessionWindows::with_gap_millis(YEAR_MS))
        .reduce(|a, b| (a.0, a.1 + b.1))
        .add_sink(move |(key, count): (u64, u64)| {
            w.fetch_add(1, Ordering::Relaxed);
            c.fetch_add(key.wrapping_mul(3).wrapping_add(count), Ordering::Relaxed);
        });
    let client = env
        .execute_async("pending timers")
        .map_err(|e| e.to_string())?;
    finish(client, args.quiet).map_err(|e| e.to_string())?;
    println!(
        "windows={} checksum={} peak_rss_kb={}",
        windows.load(Ordering::Relaxed),
        checksum.load(Ordering::Relaxed),
        peak_rss_kb()?
    );
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("pending_timers: {e}");
            ExitCode::FAILURE
        }
    }
}
