//! Two-input operators under real crashes: the `two_inputs` job (orders enriched with their
//! customers by a keyed co-process function, joined with their payments by an interval join,
//! flagged by broadcast rules) is killed with SIGKILL at seeded random moments and restarted
//! from its checkpoint directory until it finishes, on both state backends, in one process
//! and in two. The committed output must equal the failure-free run's line for line (no
//! line lost, none twice), and the failure-free run's must equal a reference computed here
//! with plain loops.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test panics on what it does not expect

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::{has_completed_checkpoint, incomplete_checkpoints, published, Rng};

/// The program under test, built by cargo for this test.
fn binary() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_two_inputs"))
}

const EVENTS: u64 = 20_000;
/// Orders (and payments) per second: the events take twenty seconds uninterrupted, so that
/// all the kills land mid-run.
const RATE: &str = "1000";
const KILLS: u32 = 10;

/// The job's output computed with plain loops over the same generated inputs (the job's
/// functions of the index, written out again here).
fn plain_loop_reference(events: u64) -> Vec<String> {
    const CUSTOMERS: u64 = 50;
    const NAMES: [&str; 8] = ["ada", "bob", "cy", "dee", "eve", "fay", "gus", "hal"];
    const RULES: [(&str, i64); 3] = [("over-250", 250), ("over-500", 500), ("over-900", 900)];
    let mut lines = Vec::new();
    for i in 0..events {
        let customer = (i * 7919) % CUSTOMERS;
        let name = format!("{}-{customer}", NAMES[(customer % 8) as usize]);
        let amount = ((i * 37) % 1000) as i64 + 1;
        let order_ts = i as i64 * 100;
        let paid = amount - (i % 3) as i64;
        let payment_ts = order_ts + ((i * 13) % 8) as i64 * 1000;
        lines.push(format!("enriched,{i:06},{customer},{name},{amount}"));
        if payment_ts >= order_ts && payment_ts <= order_ts + 5000 {
            lines.push(format!(
                "paid,{i:06},{amount},{paid},{}",
                payment_ts - order_ts
            ));
        }
        for (rule, threshold) in RULES {
            if amount > threshold {
                lines.push(format!("flag,{i:06},{customer},{rule}"));
            }
        }
    }
    lines.sort();
    lines
}

/// The committed output of a failure-free run (no checkpoints, unpaced), checked against the
/// plain-loop reference.
fn failure_free(state: &str) -> Vec<String> {
    let work = tempfile::tempdir().unwrap();
    let output = work.path().join("output");
    let out = Command::new(binary())
        .args(["run", "--events", &EVENTS.to_string(), "--parallelism", "2"])
        .args(["--state", state, "--output"])
        .arg(&output)
        .env("TMPDIR", work.path())
        .stdout(Stdio::null())
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the failure-free run failed: {log}");
    let got = published(&output);
    common::assert_same_lines(
        &got,
        &plain_loop_reference(EVENTS),
        &format!("the failure-free run ({state}) against the plain loops"),
        &log,
    );
    got
}

/// Starts the job's processes (one, or two over loopback), restoring when a checkpoint
/// exists.
fn start(
    processes: usize,
    state: &str,
    checkpoints: &Path,
    output: &Path,
    slow: bool,
    logs: &Path,
) -> Vec<Child> {
    let hosts = (processes > 1).then(|| common::loopback_hosts(processes));
    (0..processes)
        .map(|p| {
            let mut cmd = Command::new(binary());
            cmd.args(["run", "--events", &EVENTS.to_string(), "--rate", RATE])
                .args(["--parallelism", "2", "--state", state])
                .args(["--checkpoint-interval-ms", "50", "--checkpoint-dir"])
                .arg(checkpoints)
                .arg("--output")
                .arg(output)
                .stdout(Stdio::null())
                .stderr(std::fs::File::create(logs.join(format!("process-{p}.log"))).unwrap());
            // Temporary directories left behind by every SIGKILL go into the test's.
            cmd.env("TMPDIR", logs);
            if slow {
                // Some runs write checkpoints slowly, so that kills land inside them.
                cmd.env("TYPEINFO_CHECKPOINT_WRITE_DELAY_MS", "15");
            }
            if has_completed_checkpoint(checkpoints) {
                cmd.arg("--restore").arg(checkpoints);
            }
            if let Some(hosts) = &hosts {
                cmd.args(["--hosts", hosts, "--process", &p.to_string()]);
                cmd.env("TYPEINFO_JOB_SECRET", "the secret of this test's job");
            }
            cmd.spawn().expect("spawn the job")
        })
        .collect()
}

/// The lines the committed (published) files of `dir` hold so far, sorted.
fn committed_so_far(dir: &Path) -> Vec<String> {
    let mut lines: Vec<String> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .flat_map(|e| {
            std::fs::read_to_string(e.path())
                .unwrap_or_default()
                .lines()
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .collect();
    lines.sort();
    lines
}

/// Removes the job's scratch directories (`typeinfo-job-*`) directly under `dir`.
fn remove_scratch(dir: &Path) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if e.file_name().to_string_lossy().starts_with("typeinfo-job-") {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

fn crash_and_recover(processes: usize, state: &str, seed: u64) {
    let expected = failure_free(state);
    let work = tempfile::tempdir().unwrap();
    let (checkpoints, output) = (work.path().join("checkpoints"), work.path().join("output"));
    let log = |p: usize| {
        std::fs::read_to_string(work.path().join(format!("process-{p}.log"))).unwrap_or_default()
    };
    let mut rng = Rng(seed);
    let (mut kills, mut during_checkpoint, mut restarts, mut restores) = (0, 0, 0, 0);
    // Committed lines after each kill: they grow from run to run (restores resume), and
    // the last kill lands before the job committed everything.
    let mut progress = Vec::new();
    let began = Instant::now();
    let deadline = began + Duration::from_secs(150);
    loop {
        assert!(
            Instant::now() < deadline,
            "no end after {restarts} restarts; last log: {}",
            log(0)
        );
        if incomplete_checkpoints(&checkpoints) > 0 {
            during_checkpoint += 1;
        }
        restores += usize::from(has_completed_checkpoint(&checkpoints));
        let mut children = start(
            processes,
            state,
            &checkpoints,
            &output,
            rng.next() % 2 == 0,
            work.path(),
        );
        restarts += 1;
        // Long enough for a restored job to complete checkpoints: a RocksDB one (debug
        // build, slow checkpoint writes) takes about two seconds to commit anew.
        let (lo, hi) = if state == "rocksdb" {
            (1000, 3500)
        } else {
            (400, 1500)
        };
        let kill_at = Instant::now() + Duration::from_millis(rng.between(lo, hi));
        let mut finished = false;
        while Instant::now() < kill_at || kills >= KILLS {
            if children
                .iter_mut()
                .all(|c| c.try_wait().expect("wait").is_some())
            {
                finished = true;
                break;
            }
            if Instant::now() > deadline {
                for c in &mut children {
                    let _ = c.kill();
                }
                panic!("the last run did not end; its log: {}", log(0));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        if finished {
            for (p, mut c) in children.into_iter().enumerate() {
                assert!(
                    c.wait().expect("wait").success(),
                    "the job failed after {kills} kills: process {p}: {}",
                    log(p)
                );
            }
            break;
        }
        for c in &mut children {
            let _ = c.kill(); // SIGKILL
        }
        for mut c in children {
            let _ = c.wait();
        }
        kills += 1;
        // What is committed so far is part of the expected output, each line once.
        let so_far = committed_so_far(&output);
        let wrong: Vec<&String> = so_far
            .iter()
            .filter(|l| expected.binary_search(l).is_err())
            .collect();
        let twice: Vec<&String> = so_far
            .windows(2)
            .filter(|w| w[0] == w[1])
            .map(|w| &w[0])
            .collect();
        assert!(
            wrong.is_empty() && twice.is_empty(),
            "after kill {kills}: {} committed lines not expected (first {:?}), {} twice \
             (first {:?}); last run's log:\n{}",
            wrong.len(),
            wrong.iter().take(5).collect::<Vec<_>>(),
            twice.len(),
            twice.iter().take(5).collect::<Vec<_>>(),
            log(0)
        );
        progress.push(so_far.len());
        // The killed processes' scratch directories (RocksDB instances of tens of MB each)
        // would fill the disk over the kills; the next run makes its own.
        remove_scratch(work.path());
    }
    eprintln!(
        "{state}, {processes} process(es): {kills} kills ({during_checkpoint} during a \
         checkpoint), {restores} restores, {:.1} s; committed lines after each kill: \
         {progress:?} of {}",
        began.elapsed().as_secs_f64(),
        expected.len()
    );
    assert!(
        kills >= KILLS,
        "the job finished after only {kills} kills: the kills did not land mid-run"
    );
    assert!(
        progress.last().is_some_and(|n| *n < expected.len()),
        "the last kill came after everything was committed: {progress:?}"
    );
    assert!(
        restores >= 3,
        "only {restores} of {restarts} runs restored a checkpoint"
    );
    assert!(
        progress.windows(2).any(|w| w[1] > w[0]),
        "restored runs committed nothing new before their kills: {progress:?}"
    );
    let got = published(&output);
    common::assert_same_lines(
        &got,
        &expected,
        &format!(
            "{state}, {processes} process(es), {kills} kills: committed output against \
             the failure-free run's"
        ),
        &log(0),
    );
}

#[test]
fn the_plain_loop_reference_covers_every_operator() {
    let lines = plain_loop_reference(EVENTS);
    for kind in ["enriched,", "paid,", "flag,"] {
        assert!(lines.iter().any(|l| l.starts_with(kind)), "no {kind} line");
    }
    // Some payments come too late for the interval join.
    assert!(lines.iter().filter(|l| l.starts_with("paid,")).count() < EVENTS as usize);
}

#[test]
fn sigkills_lose_and_duplicate_nothing_on_the_heap() {
    crash_and_recover(1, "heap", 0x021A_0001);
}

#[test]
fn sigkills_lose_and_duplicate_nothing_in_rocksdb() {
    crash_and_recover(1, "rocksdb", 0x021A_0002);
}

#[test]
fn a_two_process_job_killed_and_restarted_in_two_processes() {
    crash_and_recover(2, "rocksdb", 0x021A_0003);
}
