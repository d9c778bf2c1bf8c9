//! Recovery from checkpoints with real crashes: the `orders_per_minute` job is killed with
//! SIGKILL at seeded random moments and restarted from its checkpoint directory, again and
//! again, on both state backends, in one process and in two; the committed output must equal
//! the failure-free run's, line for line (no line lost, none twice). With RocksDB the
//! checkpoints are incremental (the default), so kills land during uploads of SST files,
//! during retention and during restores of incremental parts; the test counts the kills that
//! left an interrupted upload or restore behind, requires (with RocksDB) that at least one
//! cut an asynchronous upload short, and checks that every object a retained checkpoint
//! refers to is there at the end.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test (or bench) panics on what it does not expect

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::{
    failure_free_output, has_completed_checkpoint, incomplete_checkpoints, published,
    referenced_objects, Rng,
};

/// The program under test, built by cargo for this test (`CARGO_BIN_EXE_*`), so a stale binary
/// from an earlier build can never stand in for it.
fn example() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_orders_per_minute"))
}

const ORDERS: &str = "40000";
const RATE: &str = "5000";

fn reference(state: &str) -> Vec<String> {
    failure_free_output(&example(), ORDERS, state)
}

/// Starts the job's processes (one, or two over loopback), restoring when a checkpoint exists.
fn start(
    processes: usize,
    state: &str,
    checkpoints: &Path,
    output: &Path,
    slow_checkpoints: bool,
    logs: &Path,
) -> Vec<Child> {
    let hosts = (processes > 1).then(|| common::loopback_hosts(processes));
    (0..processes)
        .map(|p| {
            let mut cmd = Command::new(example());
            cmd.args([
                "run",
                "--version",
                "1",
                "--orders",
                ORDERS,
                "--orders-per-second",
                RATE,
                "--parallelism",
                "2",
                "--state",
                state,
            ])
            .args(["--checkpoint-interval-ms", "50", "--checkpoint-dir"])
            .arg(checkpoints)
            .arg("--output")
            .arg(output)
            .stdout(Stdio::null())
            .stderr(
                std::fs::File::create(logs.join(format!("process-{p}.log"))).expect("log file"),
            );
            // The job's temporary RocksDB directories (left behind by every SIGKILL) go
            // into this test's directory, removed with it.
            cmd.env("TMPDIR", logs);
            if slow_checkpoints {
                // Half the runs write checkpoints slowly, so that kills land inside them.
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

/// Whether a file or folder whose name starts with `prefix` is anywhere under `dir`.
fn any_named(dir: &Path, prefix: &str) -> bool {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .any(|e| {
            e.file_name().to_string_lossy().starts_with(prefix)
                || (e.path().is_dir() && any_named(&e.path(), prefix))
        })
}

/// Removes every folder under `dir` whose name starts with `prefix`; whether there was one.
fn remove_named(dir: &Path, prefix: &str) -> bool {
    let mut found = false;
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if !e.path().is_dir() {
            continue;
        }
        if e.file_name().to_string_lossy().starts_with(prefix) {
            let _ = std::fs::remove_dir_all(e.path());
            found = true;
        } else {
            found |= remove_named(&e.path(), prefix);
        }
    }
    found
}

fn crash_and_recover(processes: usize, state: &str, seed: u64) {
    let expected = reference(state);
    let work = tempfile::tempdir().expect("temp dir");
    let (checkpoints, output) = (work.path().join("checkpoints"), work.path().join("output"));
    let mut rng = Rng(seed);
    let (mut kills, mut during_checkpoint, mut restarts) = (0, 0, 0);
    let (mut during_upload, mut during_restore) = (0, 0);
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        assert!(
            Instant::now() < deadline,
            "no progress after {restarts} restarts"
        );
        if incomplete_checkpoints(&checkpoints) > 0 {
            during_checkpoint += 1;
        }
        let mut children = start(
            processes,
            state,
            &checkpoints,
            &output,
            rng.next() % 2 == 0,
            work.path(),
        );
        restarts += 1;
        let kill_at = Instant::now() + Duration::from_millis(rng.between(150, 450));
        // At least 20 kills; with RocksDB more (up to 60) until one cut an upload short, so
        // that the assertion on uploads below does not hang on where 20 random kills fell
        // on a loaded machine.
        let enough = kills >= 60 || (kills >= 20 && (state != "rocksdb" || during_upload > 0));
        let mut finished = false;
        while Instant::now() < kill_at || enough {
            let done: Vec<bool> = children
                .iter_mut()
                .map(|c| c.try_wait().expect("wait").is_some())
                .collect();
            if done.iter().all(|d| *d) {
                finished = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        if finished {
            for (p, mut c) in children.into_iter().enumerate() {
                let log = || {
                    std::fs::read_to_string(work.path().join(format!("process-{p}.log")))
                        .unwrap_or_default()
                };
                assert!(
                    c.wait().expect("wait").success(),
                    "the job failed after {kills} kills: process {p}: {}",
                    log()
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
        if any_named(&checkpoints.join("shared"), ".") {
            during_upload += 1; // a temporary object: an upload was cut short
        }
        if remove_named(work.path(), ".typeinfo-restore-") {
            during_restore += 1; // a scratch directory of a restore in progress
        }
    }
    eprintln!(
        "{state}, {processes} process(es): {kills} kills, {during_checkpoint} during a checkpoint, \
         {during_upload} during an upload, {during_restore} during a restore"
    );
    if state == "rocksdb" {
        assert!(
            !referenced_objects(&checkpoints).is_empty(),
            "incremental checkpoints refer to shared SST files"
        );
        // Uploads run asynchronously, on each subtask's upload lane, while records flow: a
        // kill must have cut one short (7 of 20 did in each RocksDB run when this was added).
        assert!(
            during_upload > 0,
            "no kill landed during an asynchronous upload ({kills} kills)"
        );
    }
    assert!(kills >= 20, "only {kills} kills before the job finished");
    assert!(
        during_checkpoint > 0,
        "no kill landed while a checkpoint was being written ({kills} kills)"
    );
    let got = published(&output);
    assert_eq!(
        got.len(),
        expected.len(),
        "{kills} kills, {during_checkpoint} during a checkpoint: line counts differ"
    );
    assert_eq!(
        got, expected,
        "{kills} kills: the committed output differs from the failure-free run's"
    );
}

#[test]
fn twenty_sigkills_lose_and_duplicate_nothing_on_the_heap() {
    crash_and_recover(1, "heap", 0x5EED_0001);
}

#[test]
fn twenty_sigkills_lose_and_duplicate_nothing_in_rocksdb() {
    crash_and_recover(1, "rocksdb", 0x5EED_0002);
}

#[test]
fn a_two_process_job_killed_and_restarted_in_two_processes() {
    crash_and_recover(2, "rocksdb", 0x5EED_0003);
}
