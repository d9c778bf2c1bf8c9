//! The per-subtask metrics of flow control and asynchronous checkpoints, as Flink names them:
//! `busyTimeMsPerSecond`, `backPressuredTimeMsPerSecond` and `idleTimeMsPerSecond` (which add
//! up to a second), and `checkpointSyncDurationMs`, `checkpointAsyncDurationMs` and
//! `checkpointAlignmentTimeMs`. A job whose sink is slower than its source (one hot key, a
//! sink that spins) runs for about two seconds with checkpoints: its sources must have been
//! back-pressured, its keyed operator must report its checkpoints' halves.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test (or bench) panics on what it does not expect

use std::time::{Duration, Instant};

use typeinfo_runtime::{CheckpointConfig, StreamExecutionEnvironment};

#[test]
fn time_shares_and_checkpoint_halves_are_reported_per_subtask() {
    let dir = tempfile::tempdir().unwrap();
    let env = StreamExecutionEnvironment::new();
    env.set_parallelism(2).set_max_in_flight_records(256);
    env.enable_checkpointing(CheckpointConfig::new(
        dir.path().join("checkpoints"),
        Duration::from_millis(50),
    ));
    env.from_generator(60_000, |i| (0u64, i))
        .key_by(|r: &(u64, u64)| r.0)
        .reduce(|a, b| (a.0, a.1.max(b.1)))
        .name("Max")
        .add_sink(|_| {
            let began = Instant::now();
            while began.elapsed() < Duration::from_micros(30) {
                std::hint::spin_loop();
            }
        });
    let result = env.execute("metrics").unwrap();
    assert!(
        result.elapsed > Duration::from_millis(1_200),
        "the job ran {:?}: too short for a second of time shares",
        result.elapsed
    );
    let gauge = |name: &str| result.gauges.get(name).copied();
    let backpressured = (0..2)
        .filter_map(|s| {
            gauge(&format!(
                "Generator Source[{s}].backPressuredTimeMsPerSecond"
            ))
        })
        .max()
        .expect("the sources report back-pressured time");
    assert!(
        backpressured > 0,
        "a source ahead of its sink was back-pressured: {:?}",
        result.gauges
    );
    for (name, _) in result
        .gauges
        .iter()
        .filter(|(n, _)| n.ends_with(".busyTimeMsPerSecond"))
    {
        let base = name.trim_end_matches("busyTimeMsPerSecond");
        let shares: Vec<i64> = ["busy", "backPressured", "idle"]
            .iter()
            .map(|s| gauge(&format!("{base}{s}TimeMsPerSecond")).unwrap())
            .collect();
        let sum: i64 = shares.iter().sum();
        assert!(
            (998..=1002).contains(&sum) || sum < 1000 && shares[2] == 0,
            "{base}: busy, back-pressured and idle add up to a second: {shares:?}"
        );
    }
    for half in ["Sync", "Async"] {
        let name = format!("Max[0].checkpoint{half}DurationMs");
        assert!(
            gauge(&name).is_some_and(|ms| ms >= 0),
            "{name}: {:?}",
            result.gauges
        );
    }
    assert!(gauge("Max[0].checkpointAlignmentTimeMs").is_some());
    assert!(result.gauges.contains_key("job.lastCheckpointDurationMs"));
}
