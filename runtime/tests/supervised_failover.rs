//! A three-process job under a small supervisor, as Kubernetes or systemd would run it: the
//! supervisor starts every process with one fixed command line (`--resume`: restore from the
//! checkpoint directory's newest checkpoint when there is one) and starts again, with the
//! same command line, any process that exits other than successfully. Random processes are
//! killed with SIGKILL, again and again; each time, the others see the lost peer and end
//! with `EXIT_PEER_LOST`, everything is started again, the processes find one another and
//! the same checkpoint, and the job goes on. The committed output must equal a failure-free
//! run's, line for line.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test (or bench) panics on what it does not expect

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::{has_completed_checkpoint, keyed_input, loopback_hosts, published, Rng};

const SECRET: &str = "the secret every process of this job shares";
const PROCESSES: usize = 3;

/// The one command line of process `index` (the supervisor never changes it).
fn start(work: &Path, input: &Path, hosts: &str, index: usize) -> Child {
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
        .args(["--parallelism", "3", "--state", "heap"])
        .args(["--lines-per-second", "10000"])
        .args([
            "--checkpoint-interval-ms",
            "40",
            "--resume",
            "--checkpoint-dir",
        ])
        .arg(work.join("checkpoints"))
        .arg("--output")
        .arg(work.join("output"))
        .args(["--hosts", hosts, "--process", &index.to_string()])
        .env("TYPEINFO_JOB_SECRET", SECRET)
        .env_remove("TYPEINFO_JOB_SECRET_FILE")
        .env("TMPDIR", work)
        .stdout(Stdio::null())
        .stderr(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(work.join(format!("process-{index}.log")))
                .unwrap(),
        )
        .spawn()
        .expect("start a process of the job")
}

/// Runs the three processes under the supervisor until every one has ended successfully,
/// killing a random running process with SIGKILL every 300-700 ms (once a checkpoint
/// completed) until `kills` kills; returns the exit statuses of the processes it restarted
/// that were not killed by it.
fn supervise(work: &Path, input: &Path, kills: usize, seed: u64) -> Vec<Option<i32>> {
    let hosts = loopback_hosts(PROCESSES);
    let mut rng = Rng(seed);
    let mut children: Vec<Option<Child>> = (0..PROCESSES)
        .map(|i| Some(start(work, input, &hosts, i)))
        .collect();
    let mut killed = [false; PROCESSES];
    let mut statuses = Vec::new();
    let mut done = 0;
    let mut next_kill = Instant::now() + Duration::from_millis(rng.between(300, 700));
    let (mut kills_done, deadline) = (0, Instant::now() + Duration::from_secs(300));
    while done < PROCESSES {
        assert!(
            Instant::now() < deadline,
            "the job did not end within 300 s ({kills_done} kills)"
        );
        for i in 0..PROCESSES {
            let Some(child) = children[i].as_mut() else {
                continue;
            };
            let Some(status) = child.try_wait().unwrap() else {
                continue;
            };
            if status.success() {
                children[i] = None;
                done += 1;
                continue;
            }
            if !std::mem::take(&mut killed[i]) {
                statuses.push(status.code());
            }
            // The supervisor's whole policy: start it again, with the same command line.
            children[i] = Some(start(work, input, &hosts, i));
        }
        if kills_done < kills
            && Instant::now() >= next_kill
            && has_completed_checkpoint(&work.join("checkpoints"))
        {
            let i = rng.next() as usize % PROCESSES;
            if let Some(child) = children[i].as_mut() {
                if child.try_wait().unwrap().is_none() {
                    let _ = child.kill(); // SIGKILL
                    killed[i] = true;
                    kills_done += 1;
                }
            }
            next_kill = Instant::now() + Duration::from_millis(rng.between(300, 700));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(kills_done, kills, "every kill landed before the job ended");
    statuses
}

#[test]
fn random_sigkills_of_a_supervised_three_process_job_lose_and_duplicate_nothing() {
    let work = tempfile::tempdir().unwrap();
    let input = keyed_input(work.path(), 13);
    let reference = work.path().join("reference");
    std::fs::create_dir_all(&reference).unwrap();
    let statuses = supervise(&reference, &input, 0, 1);
    assert!(
        statuses.is_empty(),
        "the failure-free run failed: {statuses:?}"
    );
    let expected = published(&reference.join("output"));
    assert!(expected.len() > 1_000, "{} lines", expected.len());

    let failing = work.path().join("failing");
    std::fs::create_dir_all(&failing).unwrap();
    let statuses = supervise(&failing, &input, 10, 27);
    eprintln!("exit statuses of the processes that lost a peer: {statuses:?}");
    for i in 0..PROCESSES {
        let log = std::fs::read_to_string(failing.join(format!("process-{i}.log"))).unwrap();
        for line in log.lines().filter(|l| {
            l.starts_with("windowed_aggregate:") && !l.contains("a process of the job was lost")
        }) {
            eprintln!("process {i} ended with: {line}");
        }
    }
    assert!(
        statuses.contains(&Some(typeinfo_runtime::EXIT_PEER_LOST)),
        "the processes that lost a peer ended with EXIT_PEER_LOST: {statuses:?}"
    );
    assert!(
        !statuses.contains(&Some(101)),
        "no process panicked: {statuses:?}"
    );
    assert_eq!(
        published(&failing.join("output")),
        expected,
        "the committed output after 10 SIGKILLs"
    );
}
