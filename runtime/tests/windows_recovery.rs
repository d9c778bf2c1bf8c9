//! Count windows and an early-firing trigger under real crashes: `windowed_aggregate` with
//! `--window count:N`, `--window count:N:SLIDE` and `--trigger count:N` writes its lines
//! through the exactly-once file sink while it checkpoints; it is killed with SIGKILL at
//! seeded random moments and restarted from its checkpoints, again and again, on both state
//! backends at parallelism 2; the committed output must equal a failure-free run's, line for
//! line (trigger state, evictor contents and count windows restored exactly: a count that was
//! lost or counted twice moves every later firing).
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test (or bench) panics on what it does not expect

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::{has_completed_checkpoint, incomplete_checkpoints, keyed_input, published, Rng};

fn program() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_windowed_aggregate"))
}

fn input(dir: &Path) -> PathBuf {
    keyed_input(dir, 7)
}

fn start(
    input: &Path,
    case: &[&str],
    state: &str,
    checkpoints: &Path,
    output: &Path,
    slow: bool,
    logs: &Path,
) -> Child {
    let mut cmd = Command::new(program());
    cmd.arg("--input")
        .arg(input)
        .args(case)
        .args(["--out-of-orderness", "50", "--allowed-lateness", "0"])
        .args(["--parallelism", "2", "--state", state])
        .args(["--checkpoint-interval-ms", "40", "--checkpoint-dir"])
        .arg(checkpoints)
        .arg("--output")
        .arg(output)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(logs.join("process.log")).unwrap())
        .env("TMPDIR", logs);
    if slow {
        cmd.args(["--lines-per-second", "10000"]);
    }
    if has_completed_checkpoint(checkpoints) {
        cmd.arg("--restore").arg(checkpoints);
    }
    cmd.spawn().expect("spawn the job")
}

fn crash_and_recover(case: &[&str], state: &str, seed: u64) {
    let work = tempfile::tempdir().unwrap();
    let input = input(work.path());
    // The failure-free run (checkpointing too, never killed).
    let reference = work.path().join("reference");
    let mut child = start(
        &input,
        case,
        state,
        &work.path().join("reference-checkpoints"),
        &reference,
        false,
        work.path(),
    );
    assert!(
        child.wait().unwrap().success(),
        "the failure-free run failed"
    );
    let expected = published(&reference);
    assert!(expected.len() > 1_000, "{case:?}: {} lines", expected.len());

    let (checkpoints, output) = (work.path().join("checkpoints"), work.path().join("output"));
    let mut rng = Rng(seed);
    let (mut kills, mut during_checkpoint, mut restored) = (0, 0, 0);
    let deadline = Instant::now() + Duration::from_secs(240);
    loop {
        assert!(Instant::now() < deadline, "no progress after {kills} kills");
        if incomplete_checkpoints(&checkpoints) > 0 {
            during_checkpoint += 1;
        }
        if has_completed_checkpoint(&checkpoints) {
            restored += 1; // this run resumes from a checkpoint, mid-input
        }
        let mut child = start(
            &input,
            case,
            state,
            &checkpoints,
            &output,
            true,
            work.path(),
        );
        let kill_at = Instant::now() + Duration::from_millis(rng.between(300, 700));
        let mut finished = false;
        // A kill lands only once a checkpoint has completed, so that every later run resumes
        // from one mid-input (a run that restarted from nothing would prove nothing).
        while Instant::now() < kill_at || kills >= 8 || !has_completed_checkpoint(&checkpoints) {
            if child.try_wait().unwrap().is_some() {
                finished = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        if finished {
            let log = std::fs::read_to_string(work.path().join("process.log")).unwrap_or_default();
            assert!(
                child.wait().unwrap().success(),
                "the job failed after {kills} kills: {log}"
            );
            break;
        }
        let _ = child.kill(); // SIGKILL
        let _ = child.wait();
        kills += 1;
    }
    eprintln!(
        "{case:?} {state}: {kills} kills, {during_checkpoint} during a checkpoint, {restored} runs restored"
    );
    assert!(kills >= 8, "only {kills} kills before the job finished");
    assert!(
        restored >= 8,
        "only {restored} runs resumed from a checkpoint"
    );
    assert_eq!(
        published(&output),
        expected,
        "{case:?} on {state}, {kills} kills: the committed output differs from the failure-free run's"
    );
}

#[test]
fn count_windows_survive_sigkills_on_the_heap() {
    crash_and_recover(&["--window", "count:9"], "heap", 11);
    crash_and_recover(&["--window", "count:6:4"], "heap", 12);
}

#[test]
fn count_windows_survive_sigkills_in_rocksdb() {
    crash_and_recover(&["--window", "count:9"], "rocksdb", 21);
    crash_and_recover(&["--window", "count:6:4"], "rocksdb", 22);
}

#[test]
fn an_early_firing_trigger_survives_sigkills() {
    crash_and_recover(
        &["--window", "tumbling:400", "--trigger", "count:5"],
        "heap",
        31,
    );
    crash_and_recover(
        &["--window", "tumbling:400", "--trigger", "count:5"],
        "rocksdb",
        32,
    );
}
