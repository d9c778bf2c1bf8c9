//! Peak RSS and throughput of the RocksDB backend while its state grows to ten times its
//! managed memory bound.
//!
//! Not a criterion benchmark: it measures one long run, not a repeated operation. Two
//! backends (two subtasks of one process) share one managed memory bound (default 64 MiB).
//! Each backend's write cache (`RocksDbOptions::write_cache_bytes`, 4 MiB by default, on
//! here) is outside that bound: about 4 MiB more per backend, 8 MiB here.
//! Phase `grow` writes 1 KiB values (incompressible) to new keys, round robin over the two
//! backends, until the state holds `FACTOR` (10) times the bound; phase `update` then reads,
//! changes and writes back random keys of the full state. Every second of the run the RSS
//! of the process is sampled (`/proc/self/status`); the report gives the RSS before the
//! backends opened (the baseline), the peak (`VmHWM`), the peak above the baseline against
//! the bound, the block cache's and the memtables' usage at the end, and each phase's rate.
//!
//! Run: `cargo bench -p typeinfo-benches --bench rocksdb_memory` (options after `--`:
//! `--bound-mib N`, `--factor N`, `--updates N`). Linux only (it reads `/proc`). Under
//! `cargo test --all-targets` it makes a small run (2 MiB bound, twice that in state).
//!
//! What RSS holds beyond the bound is mostly glibc's malloc keeping freed memory in one
//! arena per thread (RocksDB's flush and compaction threads allocate and free blocks): on
//! the 2-core machine of this repository, a 256 MiB bound peaked at 340 MiB above the
//! baseline, and at 227 MiB with `MALLOC_ARENA_MAX=1`; the same advice as Flink's for its
//! RocksDB (a bounded number of arenas, or jemalloc) applies.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test (or bench) panics on what it does not expect

use std::hint::black_box;
use std::time::Instant;

use typeinfo_state::*;

const MIB: usize = 1 << 20;
const VALUE_LEN: usize = 1024;

/// A `kB` field of `/proc/self/status`, in bytes.
fn status_bytes(field: &str) -> usize {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|kb| kb.parse::<usize>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// A value of `VALUE_LEN` bytes that compresses poorly.
fn noise(seed: u64, round: u64) -> Vec<u8> {
    let mut x = (seed ^ round.rotate_left(32)).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..VALUE_LEN)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn arg(args: &[String], name: &str, default: usize) -> usize {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|a| a == "--list") {
        // `cargo bench -- --list` (as criterion answers it): one benchmark, no listing.
        return Ok(());
    }
    // `cargo bench` passes `--bench`; `cargo test --all-targets` does not: then a small run
    // checks that the program works, in seconds.
    let full = args.iter().any(|a| a == "--bench");
    let bound = arg(&args, "--bound-mib", if full { 64 } else { 2 }) * MIB;
    let factor = arg(&args, "--factor", if full { 10 } else { 2 });
    let updates = arg(&args, "--updates", if full { 200_000 } else { 1_000 }) as u64;
    let dir = tempfile::tempdir().map_err(|e| Error::InvalidConfig(e.to_string()))?;

    let baseline = status_bytes("VmRSS:");
    let options = RocksDbOptions::default().managed_memory_bytes(bound);
    let mut backends = (0..2u32)
        .map(|i| {
            RocksDbKeyedStateBackend::<u64>::open(
                &dir.path().join(format!("subtask-{i}")),
                BackendOptions::for_subtask(128, 2, i)?,
                options.clone(),
            )
        })
        .collect::<Result<Vec<_>>>()?;
    let memory = backends[0].memory().clone();
    let states = backends
        .iter_mut()
        .map(|b| b.value_state::<(), Vec<u8>>(&ValueStateDescriptor::new("payload")))
        .collect::<Result<Vec<_>>>()?;
    let keys = (factor * bound / VALUE_LEN) as u64;
    let mut peak_sampled = baseline;
    let mut last_sample = Instant::now();
    let mut sample = |peak: &mut usize| {
        if last_sample.elapsed().as_secs() >= 1 {
            *peak = (*peak).max(status_bytes("VmRSS:"));
            last_sample = Instant::now();
        }
    };

    let started = Instant::now();
    for key in 0..keys {
        let i = route(&mut backends, key)?;
        states[i].update(&mut backends[i], &(), noise(key, 0))?;
        if key % 1024 == 0 {
            sample(&mut peak_sampled);
        }
    }
    let grow = started.elapsed();

    let started = Instant::now();
    let mut x = 0x2545_f491_4f6c_dd1du64;
    for round in 0..updates {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let key = x % keys;
        let i = route(&mut backends, key)?;
        let value = states[i].value(&mut backends[i], &())?.expect("written");
        black_box(&value);
        states[i].update(&mut backends[i], &(), noise(key, round + 1))?;
        if round % 1024 == 0 {
            sample(&mut peak_sampled);
        }
    }
    let update = started.elapsed();

    let peak = status_bytes("VmHWM:").max(peak_sampled);
    let above = peak.saturating_sub(baseline);
    let state_bytes = keys as usize * VALUE_LEN;
    println!("rocksdb_memory: bound {} MiB shared by 2 backends, state {} MiB ({}x the bound, {} keys of {} B)",
        bound / MIB, state_bytes / MIB, factor, keys, VALUE_LEN);
    println!(
        "  block cache capacity {} MiB, write buffer manager {} MiB",
        memory.block_cache_bytes() / MIB,
        memory.write_buffer_manager_bytes() / MIB
    );
    println!(
        "  grow:   {:>10.0} writes/s ({:.1} MiB/s) over {:.1} s",
        keys as f64 / grow.as_secs_f64(),
        state_bytes as f64 / MIB as f64 / grow.as_secs_f64(),
        grow.as_secs_f64()
    );
    println!(
        "  update: {:>10.0} read-modify-writes/s of random keys over {:.1} s",
        updates as f64 / update.as_secs_f64(),
        update.as_secs_f64()
    );
    println!(
        "  RSS: baseline {} MiB, peak {} MiB, peak above baseline {} MiB = bound + {} MiB ({:.2}x the bound)",
        baseline / MIB,
        peak / MIB,
        above / MIB,
        above.saturating_sub(bound) as f64 / MIB as f64,
        above as f64 / bound as f64
    );
    println!(
        "  at the end: block cache usage {} MiB (pinned {} MiB), memtables {} MiB, table readers {} KiB",
        memory.block_cache_usage() / MIB,
        memory.block_cache_pinned_usage() / MIB,
        memory.write_buffer_usage() / MIB,
        backends
            .iter()
            .map(|b| b.int_property("rocksdb.estimate-table-readers-mem"))
            .sum::<Result<u64>>()?
            >> 10
    );
    Ok(())
}

/// Sets `key` current on the backend that owns it, and returns that backend's index.
fn route(backends: &mut [RocksDbKeyedStateBackend<u64>], key: u64) -> Result<usize> {
    match backends[0].set_current_key(&key) {
        Ok(()) => Ok(0),
        Err(Error::KeyGroupOutOfRange { .. }) => {
            backends[1].set_current_key(&key)?;
            Ok(1)
        }
        Err(e) => Err(e),
    }
}
