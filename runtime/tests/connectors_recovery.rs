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

/// Fails with what differs (missing, unexpected and repeated lines, the files) unless
/// `got` is exactly the expected output.
fn assert_exact(got: &[String], log: &Path) {
    common::assert_same_lines(
        got,
        &expected(),
        "committed output differs",
        &std::fs::read_to_string(log).unwrap_or_default(),
    );
}

/// The job at `per_second` records per split, parallelism 2, a checkpoint every 40 ms into
/// `checkpoints`, committing into `output`, its stderr into `log`; `extra` arguments last.
fn job_at(
    per_second: &str,
    checkpoints: &Path,
    output: &Path,
    log: &Path,
    extra: &[&str],
) -> Command {
    let mut cmd = Command::new(binary());
    cmd.args([
        "--records",
        &RECORDS.to_string(),
        "--per-second",
        per_second,
    ])
    .args(["--parallelism", "2", "--checkpoint-interval-ms", "40"])
    .arg("--checkpoint-dir")
    .arg(checkpoints)
    .arg("--output")
    .arg(output)
    .args(extra)
    .stdout(Stdio::null())
    .stderr(std::fs::File::create(log).unwrap());
    cmd
}

/// Runs `job` to its end: it must succeed and leave exactly the expected output.
fn runs_to_the_exact_output(mut job: Command, output: &Path, log: &Path) {
    let status = job.status().unwrap();
    assert!(
        status.success(),
        "{}",
        std::fs::read_to_string(log).unwrap_or_default()
    );
    assert_exact(&committed(output), log);
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
    assert_exact(&committed(&output), &log);
}

/// The job's input has ended and sink subtask 0 is still staging its last records (slowly,
/// as an upload would) when the process is killed; sink subtask 1 has prepared its last
/// records (those after the last completed checkpoint) by then. Restored (faster,
/// so that its checkpoints cut the replay elsewhere than the first run's did), the job must
/// publish every record exactly once: a sink whose input ended commits nothing before the
/// whole job has ended, because a crash before that replays from the last completed
/// checkpoint.
#[test]
fn a_kill_while_the_sinks_finish_publishes_nothing_twice() {
    let work = tempfile::tempdir().unwrap();
    let (checkpoints, output) = (work.path().join("checkpoints"), work.path().join("out"));
    let log = work.path().join("job.log");
    let job =
        |per_second: &str, extra: &[&str]| job_at(per_second, &checkpoints, &output, &log, extra);
    let mut first = job("8000", &["--final-flush-ms", "60000"]).spawn().unwrap();
    let last_staging = output.join(format!(".staged-0-{}", u64::MAX));
    let deadline = Instant::now() + Duration::from_secs(60);
    while !last_staging.exists() {
        assert!(
            Instant::now() < deadline,
            "sink subtask 0 never staged its last records"
        );
        assert!(first.try_wait().unwrap().is_none(), "the job ended early");
        std::thread::sleep(Duration::from_millis(10));
    }
    // Sink subtask 1 ends at the same time (its input ended with the job's).
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        first.try_wait().unwrap().is_none(),
        "the job must still be finishing"
    );
    first.kill().unwrap();
    first.wait().unwrap();
    assert!(
        has_completed_checkpoint(&checkpoints),
        "no checkpoint completed"
    );

    let restore = ["--restore", checkpoints.to_str().unwrap()];
    runs_to_the_exact_output(job("1000000", &restore), &output, &log);
    // Restored again from the checkpoints of the job that ran to its end: it publishes its
    // last output again (idempotently) and ends, changing nothing.
    runs_to_the_exact_output(job("1000000", &restore), &output, &log);
}

/// Source subtask 0's splits end while split 3 (of subtask 1) pauses for a long time:
/// checkpoints must keep completing without subtask 0 (its last part stands in for it), so
/// the sink publishes the ended splits' last records while the job still runs; killed then
/// and restored, the job publishes every record exactly once.
#[test]
fn checkpoints_complete_after_a_source_subtask_ended() {
    let work = tempfile::tempdir().unwrap();
    let (checkpoints, output) = (work.path().join("checkpoints"), work.path().join("out"));
    let log = work.path().join("job.log");
    let job = |extra: &[&str]| job_at("8000", &checkpoints, &output, &log, extra);
    let pause_at = (RECORDS - 100).to_string();
    let mut first = job(&["--pause-at", &pause_at, "--pause-ms", "60000"])
        .spawn()
        .unwrap();
    let last_of = |split: u64| format!("{split} {} 1", RECORDS - 1);
    let published = |line: &str| {
        std::fs::read_dir(&output)
            .into_iter()
            .flatten()
            .flatten()
            .any(|e| {
                e.file_name().to_string_lossy().starts_with("committed-")
                    && std::fs::read_to_string(e.path())
                        .unwrap_or_default()
                        .lines()
                        .any(|l| l == line)
            })
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while !(0..3).all(|s| published(&last_of(s))) {
        if Instant::now() >= deadline {
            let list = |dir: &Path| {
                let mut names: Vec<String> = std::fs::read_dir(dir)
                    .into_iter()
                    .flatten()
                    .flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect();
                names.sort();
                names
            };
            let ended = list(&checkpoints.join("ended").join("uid-partitions"));
            panic!(
                "the ended splits' last records were never published while split 3 paused \
                 (published: {:?}); checkpoints {:?}, ended sources {ended:?}, output {:?}; log: {}",
                (0..4).map(|s| published(&last_of(s))).collect::<Vec<_>>(),
                list(&checkpoints),
                list(&output),
                std::fs::read_to_string(&log).unwrap_or_default()
            );
        }
        assert!(first.try_wait().unwrap().is_none(), "the job ended early");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!published(&last_of(3)), "split 3 is paused before its end");
    first.kill().unwrap();
    first.wait().unwrap();

    runs_to_the_exact_output(
        job(&["--restore", checkpoints.to_str().unwrap()]),
        &output,
        &log,
    );
}
