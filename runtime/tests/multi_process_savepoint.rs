//! A stop-with-savepoint of a two-process job, restored at another parallelism: version 1 of
//! `orders_per_minute` runs in two processes (RocksDB, checkpoints), both stop once every
//! source subtask emitted a quarter of the orders, and one savepoint is written for the whole
//! job (by process 0's coordinator, into a directory both processes share, as a savepoint on
//! an object store is); the other process waits for it and ends. The savepoint is then
//! restored by one process at parallelism 3 on the heap, which finishes the job: the committed
//! output of both runs equals a failure-free run's.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test (or bench) panics on what it does not expect

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

mod common;
use common::{assert_same_lines, failure_free_output, loopback_hosts, published, published_up_to};

const SECRET: &str = "the secret every process of this job shares";
const ORDERS: &str = "8000";

fn program() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_orders_per_minute"))
}

fn version_1(work: &Path) -> Command {
    let mut c = Command::new(program());
    c.args(["run", "--version", "1", "--orders", ORDERS, "--output"])
        .arg(work.join("output"))
        .env("TYPEINFO_JOB_SECRET", SECRET)
        .env_remove("TYPEINFO_JOB_SECRET_FILE")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    c
}

/// Version 1 in two processes at 2,000 orders a second with checkpoints every 50 ms, once a
/// checkpoint completed.
fn running_pair(w: &Path) -> Vec<std::process::Child> {
    let hosts = loopback_hosts(2);
    let processes: Vec<_> = (0..2)
        .map(|i| {
            version_1(w)
                .args(["--parallelism", "2", "--state", "rocksdb"])
                .args(["--orders-per-second", "2000"])
                .args(["--checkpoint-interval-ms", "50", "--checkpoint-dir"])
                .arg(w.join("checkpoints"))
                .args(["--hosts", &hosts, "--process", &i.to_string()])
                .spawn()
                .unwrap()
        })
        .collect();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !common::has_completed_checkpoint(&w.join("checkpoints")) {
        assert!(
            std::time::Instant::now() < deadline,
            "no checkpoint completed"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    processes
}

/// Sends `signal` (`-USR1`, ...) to `process`.
fn signal(signal: &str, process: &std::process::Child) {
    let sent = Command::new("kill")
        .args([signal, &process.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
}

#[test]
fn a_two_process_stop_with_savepoint_restores_at_another_parallelism() {
    let work = tempfile::tempdir().unwrap();
    let w = work.path();
    let reference = failure_free_output(&program(), ORDERS, "heap");
    assert!(!reference.is_empty());

    let hosts = loopback_hosts(2);
    let processes: Vec<_> = (0..2)
        .map(|i| {
            version_1(w)
                .args(["--parallelism", "2", "--state", "rocksdb"])
                .args(["--checkpoint-interval-ms", "50", "--checkpoint-dir"])
                .arg(w.join("checkpoints"))
                .args(["--stop-after", "2000", "--savepoint"])
                .arg(w.join("savepoint"))
                .args(["--hosts", &hosts, "--process", &i.to_string()])
                .spawn()
                .unwrap()
        })
        .collect();
    for (i, p) in processes.into_iter().enumerate() {
        let out = p.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "process {i} of the stopped job: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert!(
        w.join("savepoint").join("_metadata").is_file(),
        "one savepoint for the whole job"
    );
    restore_the_rest(
        w,
        &w.join("savepoint"),
        &reference,
        "stopped in two processes, restored at parallelism 3",
    );
}

/// The job stopped part-way with `savepoint`; restored from it at parallelism 3 on the heap
/// into the same output, the committed output equals `reference`.
fn restore_the_rest(w: &Path, savepoint: &Path, reference: &[String], what: &str) {
    let stopped = published(&w.join("output"));
    assert!(
        !stopped.is_empty() && stopped.len() < reference.len(),
        "the job stopped part-way: {} of {} lines",
        stopped.len(),
        reference.len()
    );
    let out = version_1(w)
        .args(["--parallelism", "3", "--state", "heap", "--restore"])
        .arg(savepoint)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the restore at parallelism 3: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_same_lines(
        &published(&w.join("output")),
        reference,
        what,
        &String::from_utf8_lossy(&out.stderr),
    );
}

/// `kill -USR1` on process 1 of a running two-process job asks for a savepoint; process 0's
/// coordinator writes it once, under the checkpoint directory's `savepoints/`, and the job
/// goes on to its end. The savepoint, restored at parallelism 3, continues the job exactly:
/// the first run's output up to the savepoint's checkpoint and the restored run's output
/// together equal a failure-free run's.
#[test]
fn a_signal_to_any_process_takes_one_savepoint_of_the_whole_job() {
    let work = tempfile::tempdir().unwrap();
    let w = work.path();
    let reference = failure_free_output(&program(), ORDERS, "heap");
    let mut processes = running_pair(w);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    signal("-USR1", &processes[1]);
    let savepoint = loop {
        let found = std::fs::read_dir(w.join("checkpoints").join("savepoints"))
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .find(|p| p.join("_metadata").is_file());
        if let Some(p) = found {
            break p;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no savepoint after SIGUSR1"
        );
        assert!(
            processes
                .iter_mut()
                .all(|p| p.try_wait().unwrap().is_none()),
            "the job ended before the savepoint was written"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    for (i, p) in processes.into_iter().enumerate() {
        let out = p.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "process {i}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let epoch = common::savepoint_epoch(&savepoint);

    let second = w.join("second");
    let out = Command::new(program())
        .args(["run", "--version", "1", "--orders", ORDERS, "--output"])
        .arg(&second)
        .args(["--parallelism", "3", "--state", "heap", "--restore"])
        .arg(&savepoint)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the restore: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut lines = published_up_to(&w.join("output"), epoch);
    let restored = published(&second);
    assert!(
        !restored.is_empty() && !lines.is_empty(),
        "the savepoint was taken part-way ({} lines before, {} after)",
        lines.len(),
        restored.len()
    );
    lines.extend(restored);
    lines.sort();
    assert_same_lines(
        &lines,
        &reference,
        "the first run up to the savepoint, then the restored run",
        &String::from_utf8_lossy(&out.stderr),
    );
}

/// `kill -USR2` on process 1 of a running two-process job stops the whole job with one
/// savepoint (Flink's stop-with-savepoint, asked for by a signal): both processes end with
/// success, the savepoint is under the checkpoint directory's `savepoints/`, the request is
/// gone, and the savepoint restored at parallelism 3 on the heap writes the rest: the
/// committed output of both runs together equals a failure-free run's.
#[test]
fn a_signal_to_any_process_stops_the_whole_job_with_one_savepoint() {
    let work = tempfile::tempdir().unwrap();
    let w = work.path();
    let reference = failure_free_output(&program(), ORDERS, "heap");
    let processes = running_pair(w);
    signal("-USR2", &processes[1]);
    let began = std::time::Instant::now();
    for (i, p) in processes.into_iter().enumerate() {
        let out = p.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "process {i} of the stopped job: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // At 2,000 orders a second the whole input takes 4 s: a stop ends the job well before.
    assert!(
        began.elapsed() < std::time::Duration::from_secs(30),
        "the processes ended {:?} after the signal",
        began.elapsed()
    );
    let savepoints: Vec<PathBuf> = std::fs::read_dir(w.join("checkpoints").join("savepoints"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(savepoints.len(), 1, "one savepoint: {savepoints:?}");
    assert!(savepoints[0].join("_metadata").is_file());
    assert!(
        !w.join("checkpoints").join("requests").join("stop").exists(),
        "the stop request is answered"
    );
    restore_the_rest(
        w,
        &savepoints[0],
        &reference,
        "stopped by a signal in two processes, restored at parallelism 3",
    );
}
