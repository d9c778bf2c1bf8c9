//! A checkpoint directory that fills up: checkpoints whose parts cannot be written fail, each
//! said on stderr, and the job fails once more of them than
//! `CheckpointConfig::tolerable_failures` failed in a row, with an error that says the disk
//! is full (the checkpoint directory is a 256 KiB tmpfs mounted by the test: it needs root,
//! as CI runs it). The state (40,000 keys, about a megabyte serialized) soon outgrows it, and
//! every checkpoint from then on fails. (The stderr lines, one per failed checkpoint with its
//! count in a row, are printed with `-- --nocapture`.)
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test (or bench) panics on what it does not expect

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use typeinfo_runtime::{CheckpointConfig, StateBackend, StreamExecutionEnvironment};

/// A tmpfs of `size` at a fresh directory, unmounted when dropped.
struct Tmpfs {
    at: PathBuf,
    _dir: tempfile::TempDir,
}

impl Tmpfs {
    fn mount(size: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let at = dir.path().join("full");
        std::fs::create_dir(&at).unwrap();
        let status = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&at)
            .status()
            .expect("run mount");
        assert!(
            status.success(),
            "mounting a tmpfs failed: this test needs root (CI runs as root)"
        );
        Tmpfs { at, _dir: dir }
    }

    fn path(&self) -> &Path {
        &self.at
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.at).status();
    }
}

fn job(checkpoints: &Path, tolerable: u32, state: StateBackend) -> typeinfo_runtime::Result<()> {
    let env = StreamExecutionEnvironment::new();
    env.set_parallelism(1).set_state_backend(state);
    env.enable_checkpointing(
        CheckpointConfig::new(checkpoints, Duration::from_millis(20))
            .incremental(false)
            .tolerable_failures(tolerable),
    );
    env.from_generator(2_000_000, |i| (i % 40_000, i))
        .key_by(|r: &(u64, u64)| r.0)
        .reduce(|a, b| (a.0, a.1 + b.1))
        .add_sink(|_| {});
    env.execute("fills its checkpoint directory").map(drop)
}

#[test]
fn a_full_checkpoint_directory_fails_checkpoints_then_the_job_saying_why() {
    for state in [StateBackend::Heap, StateBackend::rocksdb()] {
        let full = Tmpfs::mount("256k");
        let error = job(full.path(), 2, state.clone())
            .expect_err("no checkpoint fits: the job fails after 3 in a row");
        let message = error.to_string();
        assert!(
            message.contains("No space left on device"),
            "the error says the disk is full: {message}"
        );
    }
}
