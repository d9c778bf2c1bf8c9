//! Flow control bounds the memory of a job whose consumer is slower than its source: the
//! `slow_consumer` program (a generator of 1 KiB records, all of one key, so that every
//! record goes to one subtask while the other worker's source runs free; reduced, into a
//! sink that spins 5 µs per record; parallelism 2) runs at 1x, 2x, 4x and 8x its input, in one process and
//! in two, and its peak resident set must stay within a fixed bound that does not grow with
//! the input.
//!
//! The bound was fixed before it was measured: every peak at most 128 MiB, and the peak at
//! 8x at most 16 MiB above the peak at 1x (the in-flight budget here is 1,024 records of 1
//! KiB per source subtask: 2 MiB). A control run with an unlimited budget shows the workload
//! does pile up (its peak at 8x exceeds the bound), so the test can fail.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test (or bench) panics on what it does not expect

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

mod common;
use common::loopback_hosts;

const SECRET: &str = "the secret every process of this job shares";
/// Records at 1x.
const BASE: u64 = 50_000;
const BUDGET: &str = "1024";
const MAX_PEAK_KB: u64 = 128 * 1024;
const MAX_GROWTH_KB: u64 = 16 * 1024;

fn command(records: u64, budget: &str, extra: &[&str]) -> Command {
    let mut c = Command::new(PathBuf::from(env!("CARGO_BIN_EXE_slow_consumer")));
    c.args(["--records", &records.to_string()])
        .args([
            "--keys",
            "1",
            "--payload-bytes",
            "1024",
            "--sink-spin-us",
            "5",
        ])
        .args(["--parallelism", "2", "--max-in-flight-records", budget])
        .args(extra)
        .env("TYPEINFO_JOB_SECRET", SECRET)
        .env_remove("TYPEINFO_JOB_SECRET_FILE")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

/// `(records sunk, peak RSS in KiB)` from a finished process's output.
fn report(output: &Output) -> (u64, u64) {
    assert!(
        output.status.success(),
        "slow_consumer failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = String::from_utf8_lossy(&output.stdout);
    let field = |name: &str| -> u64 {
        text.split_whitespace()
            .find_map(|w| w.strip_prefix(name))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {name} in {text:?}"))
    };
    (field("records="), field("peak_rss_kb="))
}

/// Runs the job in `processes` processes; the highest peak of them.
fn peak(records: u64, budget: &str, processes: usize) -> u64 {
    if processes == 1 {
        let (sunk, peak) = report(&command(records, budget, &[]).output().unwrap());
        assert_eq!(sunk, records, "every record reaches the sink");
        return peak;
    }
    let hosts = loopback_hosts(processes);
    let children: Vec<_> = (0..processes)
        .map(|i| {
            command(
                records,
                budget,
                &["--hosts", &hosts, "--process", &i.to_string()],
            )
            .spawn()
            .unwrap()
        })
        .collect();
    let reports: Vec<_> = children
        .into_iter()
        .map(|c| report(&c.wait_with_output().unwrap()))
        .collect();
    let sunk: u64 = reports.iter().map(|r| r.0).sum();
    assert_eq!(sunk, records, "every record reaches a sink");
    reports.iter().map(|r| r.1).max().unwrap()
}

fn check_bounded(processes: usize) {
    let peaks: Vec<(u64, u64)> = [1, 2, 4, 8]
        .iter()
        .map(|x| (*x, peak(BASE * x, BUDGET, processes)))
        .collect();
    eprintln!("{processes} process(es): peaks (x, KiB): {peaks:?}");
    for (x, kb) in &peaks {
        assert!(
            *kb <= MAX_PEAK_KB,
            "{processes} process(es) at {x}x: peak {kb} KiB above the bound {MAX_PEAK_KB} KiB"
        );
    }
    let growth = peaks[3].1.saturating_sub(peaks[0].1);
    assert!(
        growth <= MAX_GROWTH_KB,
        "{processes} process(es): the peak grew {growth} KiB from 1x to 8x: {peaks:?}"
    );
}

#[test]
fn a_slow_consumer_keeps_memory_bounded_in_one_process() {
    check_bounded(1);
}

#[test]
fn a_slow_consumer_keeps_memory_bounded_in_two_processes() {
    check_bounded(2);
}

#[test]
fn without_a_budget_the_same_workload_piles_up() {
    let unbounded = peak(BASE * 8, "1000000000000", 1);
    assert!(
        unbounded > MAX_PEAK_KB,
        "the control run stayed at {unbounded} KiB: the workload does not outpace its sink, \
         so the bounded runs prove nothing"
    );
}
