//! The fuzz suite as CI runs it: every input that once failed (the corpus) now passes, and
//! every target runs for a bounded time without a failure and under its memory bound.
//!
//! `TYPEINFO_FUZZ_SECONDS` sets the whole run's mutation time, shared by the targets
//! (default 48 s, which with each target's setup keeps the suite near a minute). Each target
//! runs in its own child process (`typeinfo-fuzz run`), so a stack overflow or an abort is
//! a failure of that target, with its input saved into `fuzz/corpus/<target>/`.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test (or bench) panics on what it does not expect

use std::process::{Command, Output};

fn fuzz(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_typeinfo-fuzz"))
        .args(args)
        .output()
        .expect("the fuzz binary runs")
}

fn report(out: &Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn the_corpus_replays_without_failure() {
    let out = fuzz(&["replay", "--target", "all"]);
    assert!(
        out.status.success(),
        "inputs of the corpus fail:\n{}",
        report(&out)
    );
}

#[test]
fn every_target_runs_for_a_bounded_time_without_failure() {
    let total: f64 = std::env::var("TYPEINFO_FUZZ_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(48.0);
    let list = fuzz(&["list"]);
    assert!(list.status.success(), "{}", report(&list));
    let targets = String::from_utf8_lossy(&list.stdout).lines().count().max(1);
    let per_target = format!("{:.1}", total / targets as f64);
    let out = fuzz(&["run", "--target", "all", "--seconds", &per_target]);
    let text = report(&out);
    assert!(out.status.success(), "the fuzz run failed:\n{text}");
    assert!(text.contains("ok: no failure"), "{text}");
    // Every target reported its counts and stayed under its peak-RSS bound (the child
    // fails with `kind=rss` otherwise, so a success implies it; the table shows it).
    println!("{text}");
}
