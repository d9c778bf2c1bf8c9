//! A process of a multi-process job that loses a peer ends, promptly, with the distinct exit
//! status `EXIT_PEER_LOST` and an error that says so (instead of a panic's backtrace and
//! status 101), so that a supervisor can tell a lost peer from a failed job. Two processes of
//! `windowed_aggregate` run a job with checkpoints; once a checkpoint completed, process 1 is
//! killed with SIGKILL; process 0 must end with status 75.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test (or bench) panics on what it does not expect

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::{has_completed_checkpoint, keyed_input, loopback_hosts};

const SECRET: &str = "the secret every process of this job shares";

fn process(work: &Path, input: &Path, hosts: &str, index: usize) -> Child {
    Command::new(PathBuf::from(env!("CARGO_BIN_EXE_windowed_aggregate")))
        .arg("--input")
        .arg(input)
        .args([
            "--window",
            "count:9",
            "--out-of-orderness",
            "50",
            "--allowed-lateness",
            "0",
        ])
        .args(["--parallelism", "2", "--state", "heap"])
        .args(["--lines-per-second", "10000"])
        .args(["--checkpoint-interval-ms", "40", "--checkpoint-dir"])
        .arg(work.join("checkpoints"))
        .arg("--output")
        .arg(work.join("output"))
        .args(["--hosts", hosts, "--process", &index.to_string()])
        .env("TYPEINFO_JOB_SECRET", SECRET)
        .env_remove("TYPEINFO_JOB_SECRET_FILE")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn a process of the job")
}

#[test]
fn a_process_that_loses_its_peer_ends_with_the_peer_lost_status() {
    let work = tempfile::tempdir().unwrap();
    let input = keyed_input(work.path(), 3);
    let hosts = loopback_hosts(2);
    let mut first = process(work.path(), &input, &hosts, 0);
    let mut second = process(work.path(), &input, &hosts, 1);
    let deadline = Instant::now() + Duration::from_secs(60);
    while !has_completed_checkpoint(&work.path().join("checkpoints")) {
        assert!(
            Instant::now() < deadline,
            "the job never completed a checkpoint"
        );
        assert!(first.try_wait().unwrap().is_none(), "process 0 ended early");
        std::thread::sleep(Duration::from_millis(5));
    }
    second.kill().expect("SIGKILL process 1");
    let _ = second.wait();

    // Process 0 ends by itself (a bound far above what it takes, only so that a hang fails
    // the test instead of stalling it).
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = first.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = first.kill();
            panic!("process 0 still runs 60 s after its peer was killed");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let out = first.wait_with_output().expect("stderr");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        status.code(),
        Some(typeinfo_runtime::EXIT_PEER_LOST),
        "process 0's status; stderr: {stderr}"
    );
    assert!(
        stderr.contains("a process of the job was lost"),
        "process 0 says why: {stderr}"
    );
}
