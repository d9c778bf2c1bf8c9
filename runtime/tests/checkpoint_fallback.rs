//! A restore from a checkpoint directory uses the newest retained checkpoint that verifies
//! whole, says on stderr which one it skipped and why, and fails with an error naming the
//! files only when none does. `windowed_aggregate` (count windows over 7 keys, heap state,
//! parallelism 2, the exactly-once file sink) is killed with SIGKILL once at least two
//! checkpoints completed; the newest one is damaged in one way per case; the job restarted
//! from the directory must publish exactly the failure-free run's output.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test (or bench) panics on what it does not expect

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::{keyed_input, published};

fn program() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_windowed_aggregate"))
}

fn input(dir: &Path) -> PathBuf {
    keyed_input(dir, 5)
}

fn command(input: &Path, checkpoints: &Path, output: &Path, slow: bool) -> Command {
    let mut cmd = Command::new(program());
    cmd.arg("--input")
        .arg(input)
        .args(["--window", "count:9"])
        .args(["--out-of-orderness", "50", "--allowed-lateness", "0"])
        .args(["--parallelism", "2", "--state", "heap"])
        .args(["--checkpoint-interval-ms", "40", "--checkpoint-dir"])
        .arg(checkpoints)
        .arg("--output")
        .arg(output)
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if slow {
        cmd.args(["--lines-per-second", "10000"]);
    }
    cmd
}

/// The completed checkpoints under `dir`, oldest first.
fn completed(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<(u64, PathBuf)> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    let epoch = name.strip_prefix("chk-")?.parse().ok()?;
                    e.path()
                        .join("_metadata")
                        .is_file()
                        .then(|| (epoch, e.path()))
                })
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out.into_iter().map(|(_, p)| p).collect()
}

/// Runs the job slowly and kills it with SIGKILL once at least two checkpoints completed.
fn run_until_two_checkpoints(input: &Path, checkpoints: &Path, output: &Path) {
    let mut child = command(input, checkpoints, output, true)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    while completed(checkpoints).len() < 2 {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the job ended before two checkpoints completed"
        );
        assert!(Instant::now() < deadline, "no two checkpoints in 120 s");
        std::thread::sleep(Duration::from_millis(5));
    }
    let _ = child.kill(); // SIGKILL
    let _ = child.wait();
}

/// Restarts the job from the directory (with the same, throttled source: the checkpoint
/// holds that source's position).
fn restart(input: &Path, checkpoints: &Path, output: &Path) -> Output {
    command(input, checkpoints, output, true)
        .arg("--restore")
        .arg(checkpoints)
        .output()
        .unwrap()
}

/// A part file of the checkpoint (`extension`, subtask 0) of the window operator: the
/// operator with keyed state.
fn part(chk: &Path, extension: &str) -> PathBuf {
    let mut found: Vec<PathBuf> = std::fs::read_dir(chk)
        .unwrap()
        .flatten()
        .filter(|e| e.path().is_dir())
        .map(|e| e.path().join(format!("subtask-0.{extension}")))
        .filter(|p| p.is_file())
        .collect();
    found.sort();
    assert!(
        !found.is_empty(),
        "no .{extension} part in {}",
        chk.display()
    );
    found.swap_remove(0)
}

fn flip_byte(path: &Path, at: impl Fn(usize) -> usize) {
    let mut bytes = std::fs::read(path).unwrap();
    let i = at(bytes.len());
    bytes[i] ^= 0x10;
    std::fs::write(path, bytes).unwrap();
}

#[derive(Clone, Copy, Debug)]
enum Damage {
    /// A byte of `_metadata` flipped.
    Metadata,
    /// A byte in the middle of a keyed state part flipped: the file still parses (a value's
    /// byte), only its checksum tells.
    PartStillParses,
    /// The last byte of an operator-local part flipped (its checksum).
    PartChecksum,
    /// A keyed state part cut to half its length.
    PartTruncated,
}

/// Damages `chk`; returns the damaged file.
fn damage(chk: &Path, how: Damage) -> PathBuf {
    match how {
        Damage::Metadata => {
            let path = chk.join("_metadata");
            flip_byte(&path, |len| len / 2);
            path
        }
        Damage::PartStillParses => {
            let path = part(chk, "kstate");
            flip_byte(&path, |len| len / 2);
            path
        }
        Damage::PartChecksum => {
            let path = part(chk, "ostate");
            flip_byte(&path, |len| len - 1);
            path
        }
        Damage::PartTruncated => {
            let path = part(chk, "kstate");
            let bytes = std::fs::read(&path).unwrap();
            std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
            path
        }
    }
}

/// The published files' names and sizes, leftovers of the killed run (its unpublished
/// files) included.
fn published_so_far(dir: &Path) -> Vec<(String, u64)> {
    let mut out: Vec<(String, u64)> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| {
                    let len = e.metadata().map(|m| m.len()).unwrap_or(0);
                    (e.file_name().to_string_lossy().into_owned(), len)
                })
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

fn reference(work: &Path, input: &Path) -> Vec<String> {
    let output = work.join("reference");
    let run = command(input, &work.join("reference-checkpoints"), &output, true)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "the failure-free run failed: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    let lines = published(&output);
    assert!(lines.len() > 1_000, "{} lines", lines.len());
    lines
}

#[test]
fn a_damaged_latest_checkpoint_is_skipped_for_the_one_before_it() {
    let work = tempfile::tempdir().unwrap();
    let input = input(work.path());
    let expected = reference(work.path(), &input);
    for how in [
        Damage::Metadata,
        Damage::PartStillParses,
        Damage::PartChecksum,
        Damage::PartTruncated,
    ] {
        let case = work.path().join(format!("{how:?}"));
        let (checkpoints, output) = (case.join("checkpoints"), case.join("output"));
        run_until_two_checkpoints(&input, &checkpoints, &output);
        let all = completed(&checkpoints);
        let newest = all.last().unwrap().clone();
        let damaged = damage(&newest, how);

        let run = restart(&input, &checkpoints, &output);
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert!(
            run.status.success(),
            "{how:?}: the restart failed: {stderr}"
        );
        let said = format!("skipped checkpoint {}", newest.display());
        assert!(
            stderr.contains(&said) && stderr.contains(&damaged.display().to_string()),
            "{how:?}: stderr says which checkpoint was skipped and names {}: {stderr}",
            damaged.display()
        );
        let word = if matches!(how, Damage::PartTruncated) {
            "truncated"
        } else {
            "damaged"
        };
        assert!(
            stderr.contains(word),
            "{how:?}: stderr says `{word}`: {stderr}"
        );
        let got = published(&output);
        if got != expected {
            let (mut extra, mut missing) = (got.clone(), expected.clone());
            for l in &expected {
                if let Some(i) = extra.iter().position(|x| x == l) {
                    extra.swap_remove(i);
                }
            }
            for l in &got {
                if let Some(i) = missing.iter().position(|x| x == l) {
                    missing.swap_remove(i);
                }
            }
            panic!(
                "{how:?}: the output after restoring from the checkpoint before: {} lines, expected {}; {} extra (first {:?}), {} missing (first {:?}); stderr: {stderr}",
                got.len(),
                expected.len(),
                extra.len(),
                extra.iter().take(3).collect::<Vec<_>>(),
                missing.len(),
                missing.iter().take(3).collect::<Vec<_>>()
            );
        }
    }
}

#[test]
fn when_every_checkpoint_is_damaged_the_error_names_the_files() {
    let work = tempfile::tempdir().unwrap();
    let input = input(work.path());
    let (checkpoints, output) = (work.path().join("checkpoints"), work.path().join("output"));
    run_until_two_checkpoints(&input, &checkpoints, &output);
    let all = completed(&checkpoints);
    let damaged: Vec<PathBuf> = all.iter().map(|c| damage(c, Damage::Metadata)).collect();
    let before = published_so_far(&output);

    let run = restart(&input, &checkpoints, &output);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        !run.status.success(),
        "a job restored from damaged checkpoints only"
    );
    assert!(
        stderr.contains("verifies"),
        "the error says no checkpoint verifies: {stderr}"
    );
    for file in &damaged {
        assert!(
            stderr.contains(&file.display().to_string()),
            "the error names {}: {stderr}",
            file.display()
        );
    }
    assert_eq!(
        published_so_far(&output),
        before,
        "the refused restore published nothing"
    );
}
