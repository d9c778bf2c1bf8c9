//! A job whose consumer is slower than its source, for flow control's memory bound.
//!
//! ```text
//! slow_consumer --records N [--keys K] [--payload-bytes B] [--sink-spin-us U] [--parallelism P]
//!   [--state heap|rocksdb] [--managed-memory-mib M] [--max-in-flight-records R]
//!   [--hosts host:port,host:port --process I] [--quiet]
//! ```
//!
//! A generator source makes `N` records (`(i, B bytes)`), keyed by `i % K` (1,000 keys by
//! default; with one key every record goes to one subtask, a hot key), reduced
//! by a keyed reduce (state on the heap or in RocksDB), and sunk by a sink that spins `U`
//! microseconds per record: the consumer is slower than the source, so without flow control
//! the records between them pile up in memory. At the end the program prints
//! `records=<sunk by this process> peak_rss_kb=<VmHWM of this process>`; with `--hosts`,
//! this process is process `--process` of a multi-process job.

use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use typeinfo_runtime::{StateBackend, StreamExecutionEnvironment};

mod support;
use support::{finish, peak_rss_kb, ClusterArgs};

/// A job whose consumer is slower than its source (flow control's memory bound).
#[derive(clap::Parser, Debug)]
#[command(name = "slow_consumer", about, long_about = None)]
struct Args {
    /// Records the source makes.
    #[arg(long, default_value_t = 100_000)]
    records: u64,
    /// Distinct keys (1: a hot key).
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..))]
    keys: u64,
    /// Bytes of payload per record.
    #[arg(long, default_value_t = 1024)]
    payload_bytes: usize,
    /// Microseconds the sink spins per record.
    #[arg(long, default_value_t = 5)]
    sink_spin_us: u64,
    /// Parallelism of every operator.
    #[arg(long, default_value_t = 2)]
    parallelism: u32,
    /// Where keyed state lives.
    #[arg(long, default_value = "heap", value_parser = ["heap", "rocksdb"])]
    state: String,
    /// RocksDB's managed memory in MiB (0: the default, a quarter of the machine's memory).
    #[arg(long, default_value_t = 0)]
    managed_memory_mib: usize,
    /// The in-flight budget between operators, in records (default: the runtime's).
    #[arg(long)]
    max_in_flight_records: Option<u64>,
    #[command(flatten)]
    cluster: ClusterArgs,
    /// No progress line on stderr.
    #[arg(long)]
    quiet: bool,
}

fn run() -> Result<(), String> {
    let args = <Args as clap::Parser>::parse();
    let (records, keys, payload) = (args.records, args.keys, args.payload_bytes);
    let spin = Duration::from_micros(args.sink_spin_us);
    let parallelism = args.parallelism;
    let mut state = StateBackend::parse(&args.state).map_err(|e| e.to_string())?;
    let managed_mib = args.managed_memory_mib;
    if let (StateBackend::RocksDb { options, .. }, true) = (&mut state, managed_mib > 0) {
        *options = options.clone().managed_memory_bytes(managed_mib << 20);
    }
    let env = StreamExecutionEnvironment::new();
    env.set_parallelism(parallelism)
        .set_state_backend(state)
        .set_cluster(args.cluster.cluster()?);
    if let Some(budget) = args.max_in_flight_records {
        env.set_max_in_flight_records(budget);
    }
    let sunk = Arc::new(AtomicU64::new(0));
    let counted = Arc::clone(&sunk);
    env.from_generator(records, move |i| (i % keys, "x".repeat(payload)))
        .key_by(|r: &(u64, String)| r.0)
        .reduce(|a, b| {
            (
                a.0,
                if a.1.len() >= b.1.len() {
                    a.1.clone()
                } else {
                    b.1.clone()
                },
            )
        })
        .add_sink(move |_| {
            let began = Instant::now();
            while began.elapsed() < spin {
                std::hint::spin_loop();
            }
            counted.fetch_add(1, Ordering::Relaxed);
        });
    let client = env
        .execute_async("slow consumer")
        .map_err(|e| e.to_string())?;
    finish(client, args.quiet).map_err(|e| e.to_string())?;
    println!(
        "records={} peak_rss_kb={}",
        sunk.load(Ordering::Relaxed),
        peak_rss_kb()?
    );
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("slow_consumer: {e}");
            ExitCode::FAILURE
        }
    }
}
