//! A job whose consumer is slower than its source, for flow control's memory bound.
//!
//! ```text
//! slow_consumer --records N [--keys K] [--payload-bytes B] [--sink-spin-us U] [--parallelism P]
//!   [--state heap|rocksdb] [--managed-memory-mib M] [--max-in-flight-records R]
//!   [--hosts host:port,host:port --process I]
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

use typeinfo_runtime::{Cluster, StateBackend, StreamExecutionEnvironment};

mod support;
use support::{num, peak_rss_kb, value};

fn run() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let records = num(&args, "--records", 100_000)?;
    let keys = num(&args, "--keys", 1000)?.max(1);
    let payload = num(&args, "--payload-bytes", 1024)? as usize;
    let spin = Duration::from_micros(num(&args, "--sink-spin-us", 5)?);
    let parallelism = num(&args, "--parallelism", 2)? as u32;
    let mut state = StateBackend::parse(&value(&args, "--state").unwrap_or_else(|| "heap".into()))
        .map_err(|e| e.to_string())?;
    let managed_mib = num(&args, "--managed-memory-mib", 0)? as usize;
    if let (StateBackend::RocksDb { options, .. }, true) = (&mut state, managed_mib > 0) {
        *options = options.clone().managed_memory_bytes(managed_mib << 20);
    }
    let env = StreamExecutionEnvironment::new();
    env.set_parallelism(parallelism)
        .set_state_backend(state)
        .set_cluster(Cluster::from_args(&args).map_err(|e| e.to_string())?);
    if let Some(budget) = value(&args, "--max-in-flight-records") {
        env.set_max_in_flight_records(budget.parse().map_err(|e| format!("{budget}: {e}"))?);
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
    env.execute("slow consumer").map_err(|e| e.to_string())?;
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
