//! Restart strategies and the job client: a job whose operator fails once, at its 3rd
//! checkpoint, restarts from its latest checkpoint inside `execute` and finishes with exactly
//! the output of a failure-free run; a job that keeps failing stops after its attempts; a
//! running job is cancelled.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test panics on what it does not expect

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use typeinfo_runtime::{
    CheckpointConfig, Error, JobStatus, RestartStrategy, StreamExecutionEnvironment,
    WatermarkStrategy,
};

mod common;
use common::{FailAtThirdCheckpoint, Paced};

fn job(
    dir: &std::path::Path,
    count: u64,
    operator: FailAtThirdCheckpoint,
    strategy: RestartStrategy,
) -> StreamExecutionEnvironment {
    let env = StreamExecutionEnvironment::new();
    env.enable_checkpointing(CheckpointConfig::new(
        dir.join("checkpoints"),
        Duration::from_millis(20),
    ));
    env.set_restart_strategy(strategy);
    env.from_source(
        Paced {
            count,
            per_second: 40_000.0,
            hold_last_until_checkpoint: 0,
        },
        WatermarkStrategy::no_watermarks(),
        "paced",
    )
    .transform("Fails once", operator)
    .uid("fails")
    .write_as_text(dir.join("out"));
    env
}

fn published(dir: &std::path::Path) -> Vec<u64> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        assert!(!name.starts_with('.'), "left unpublished: {name}");
        out.extend(
            std::fs::read_to_string(entry.path())
                .unwrap()
                .lines()
                .map(|l| l.parse::<u64>().unwrap()),
        );
    }
    out.sort_unstable();
    out
}

#[test]
fn a_job_that_fails_once_restarts_from_its_checkpoint_and_its_output_is_exactly_once() {
    const N: u64 = 20_000;
    let dir = tempfile::tempdir().unwrap();
    let opened = Arc::new(AtomicU32::new(0));
    let env = job(
        dir.path(),
        N,
        FailAtThirdCheckpoint {
            failed_once: Arc::new(AtomicBool::new(false)),
            always: false,
            opened: Arc::clone(&opened),
        },
        RestartStrategy::FixedDelay {
            attempts: 3,
            delay: Duration::from_millis(10),
        },
    );
    let result = env.execute("fails once").unwrap();
    assert_eq!(result.metric("job.numRestarts"), 1);
    assert_eq!(
        opened.load(Ordering::SeqCst),
        2,
        "the operator opened once per run"
    );
    // The failure-free output, computed here: every number once.
    assert_eq!(
        published(&dir.path().join("out")),
        (0..N).collect::<Vec<_>>()
    );
}

#[test]
fn a_job_that_keeps_failing_stops_after_its_attempts() {
    let dir = tempfile::tempdir().unwrap();
    let opened = Arc::new(AtomicU32::new(0));
    let env = job(
        dir.path(),
        1_000_000,
        FailAtThirdCheckpoint {
            failed_once: Arc::new(AtomicBool::new(false)),
            always: true,
            opened: Arc::clone(&opened),
        },
        RestartStrategy::ExponentialBackoff {
            attempts: 2,
            initial: Duration::from_millis(5),
            max: Duration::from_millis(20),
            multiplier: 2.0,
        },
    );
    let err = env.execute("keeps failing").unwrap_err().to_string();
    assert!(err.contains("injected failure"), "{err}");
    assert_eq!(
        opened.load(Ordering::SeqCst),
        3,
        "the first run and two restarts"
    );
}

#[test]
fn backoff_delays_grow_to_their_maximum() {
    let s = RestartStrategy::ExponentialBackoff {
        attempts: 4,
        initial: Duration::from_millis(10),
        max: Duration::from_millis(25),
        multiplier: 2.0,
    };
    let delays: Vec<_> = (1..=5).map(|a| s.delay(a)).collect();
    assert_eq!(
        delays,
        [
            Some(Duration::from_millis(10)),
            Some(Duration::from_millis(20)),
            Some(Duration::from_millis(25)),
            Some(Duration::from_millis(25)),
            None
        ]
    );
    assert_eq!(RestartStrategy::None.delay(1), None);
}

#[test]
fn a_running_job_is_cancelled() {
    let dir = tempfile::tempdir().unwrap();
    let env = job(
        dir.path(),
        u64::MAX,
        FailAtThirdCheckpoint {
            failed_once: Arc::new(AtomicBool::new(true)),
            always: false,
            opened: Arc::new(AtomicU32::new(0)),
        },
        RestartStrategy::FixedDelay {
            attempts: 10,
            delay: Duration::from_millis(1),
        },
    );
    let client = env.execute_async("forever").unwrap();
    // Checkpoints complete asynchronously (their parts are uploaded off the workers'
    // threads): wait for the first, however loaded the machine is.
    let deadline = Instant::now() + Duration::from_secs(10);
    while client.metrics().counter("job.numCompletedCheckpoints") == 0 {
        assert!(Instant::now() < deadline, "no checkpoint completed");
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(client.status(), JobStatus::Running);
    client.cancel();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !client.is_finished() {
        assert!(Instant::now() < deadline, "the job did not stop");
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(client.status(), JobStatus::Cancelled);
    assert!(matches!(client.wait(), Err(Error::Cancelled)));
}
