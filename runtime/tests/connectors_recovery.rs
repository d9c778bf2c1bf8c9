//! A job of a user's own connectors (the `connectors` binary: a source with splits and an
//! idle split, an operator with operator state, a two-phase sink) killed with SIGKILL at
//! seeded random moments and restarted from its checkpoints until it finishes. Its committed
//! output must be every record of every split exactly once, each with gap 1 to the split's
//! previous record (the operator's state and the source's positions were restored exactly):
//! a reference computed here, not by the runtime.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test panics on what it does not expect

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::{has_completed_checkpoint, incomplete_checkpoints, Rng};

const RECORDS: u64 = 6_000;
const SPLITS: u64 = 4;

fn binary() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_connectors"))
}

/// Every line of the committed files; fails on anything else left in the directory.
fn committed(dir: &Path) -> Vec<String> {
    let mut lines = Vec::new();
    for entry in std::fs::read_dir(dir).expect("output dir").flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        assert!(name.starts_with("committed-"), "left in the output: {name}");
        lines.extend(
            std::fs::read_to_string(entry.path())
                .unwrap()
                .lines()
                .map(str::to_owned),
        );
    }
    lines.sort();
    lines
}

fn expected() -> Vec<String> {
    let mut lines: Vec<String> = (0..SPLITS)
        .flat_map(|s| (0..RECORDS).map(move |q| format!("{s} {q} 1")))
        .collect();
    lines.sort();
    lines
}

fn start(checkpoints: &Path, output: &Path, slow: bool, log: &Path) -> Child {
    let mut cmd = Command::new(binary());
    cmd.args(["--records", &RECORDS.to_string(), "--per-second", "8000"])
        .args(["--parallelism", "2", "--checkpoint-interval-ms", "40"])
        .arg("--checkpoint-dir")
        .arg(checkpoints)
        .arg("--output")
        .arg(output)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log).unwrap());
    if slow {
        cmd.env("TYPEINFO_CHECKPOINT_WRITE_DELAY_MS", "15");
    }
    // Anything the job leaves in a temporary directory when killed stays in the test's.
    cmd.env("TMPDIR", log.parent().unwrap_or(checkpoints));
    if has_completed_checkpoint(checkpoints) {
        cmd.arg("--restore").arg(checkpoints);
    }
    cmd.spawn().expect("spawn the job")
}

#[test]
fn the_failure_free_run_is_the_reference() {
    let work = tempfile::tempdir().unwrap();
    let output = work.path().join("out");
    let status = Command::new(binary())
        .args(["--records", &RECORDS.to_string(), "--per-second", "1000000"])
        .arg("--output")
        .arg(&output)
        .status()
        .unwrap();
    assert!(status.success());
    assert_eq!(committed(&output), expected());
}

#[test]
fn a_users_source_operator_and_sink_recover_from_sigkill_exactly_once() {
    let work = tempfile::tempdir().unwrap();
    let (checkpoints, output) = (work.path().join("checkpoints"), work.path().join("out"));
    let mut rng = Rng(20_261_201);
    let (mut kills, mut during_checkpoint, mut restarts) = (0, 0, 0);
    let deadline = Instant::now() + Duration::from_secs(240);
    let log = work.path().join("job.log");
    loop {
        assert!(
            Instant::now() < deadline,
            "no progress after {restarts} restarts"
        );
        if incomplete_checkpoints(&checkpoints) > 0 {
            during_checkpoint += 1;
        }
        let mut child = start(&checkpoints, &output, rng.next() % 2 == 0, &log);
        restarts += 1;
        let kill_at = Instant::now() + Duration::from_millis(rng.between(120, 400));
        let mut finished = None;
        while Instant::now() < kill_at || kills >= 12 {
            if let Some(status) = child.try_wait().unwrap() {
                finished = Some(status);
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        match finished {
            Some(status) => {
                assert!(
                    status.success(),
                    "the job failed: {}",
                    std::fs::read_to_string(&log).unwrap_or_default()
                );
                break;
            }
            None => {
                child.kill().unwrap();
                child.wait().unwrap();
                kills += 1;
            }
        }
    }
    assert!(
        kills >= 3,
        "only {kills} kills: the job ran too fast to test recovery"
    );
    eprintln!("{kills} kills, {during_checkpoint} with a checkpoint half written, {restarts} runs");
    assert_eq!(committed(&output), expected());
}
