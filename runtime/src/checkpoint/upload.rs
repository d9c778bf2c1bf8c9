//! Asynchronous checkpoints: the writes and uploads of a subtask's part of a checkpoint run
//! off its processing thread (Flink's asynchronous phase), while its records keep flowing.
//!
//! A subtask's checkpoint has two halves. The synchronous half is what consistency needs and
//! runs where the subtask runs, between two records: a native RocksDB checkpoint (hard links
//! to its SST files), or the heap's state serialized into a scratch file, and the operator's
//! own part in memory. The asynchronous half writes and uploads them, the operator part (the
//! marker that says the subtask's part is whole) last, on the subtask's *lane*: one thread
//! per operator subtask that runs its checkpoints' writes one after another, in epoch order
//! (an incremental part refers to the SST files its predecessors uploaded). A checkpoint
//! completes when the coordinator finds every part written, as before.
//!
//! - **Bounded.** At most [`MAX_QUEUED`] checkpoints of a subtask wait on its lane; a subtask
//!   whose uploads fall further behind waits at its next checkpoint (as Flink does not trigger
//!   a checkpoint while the one before is in flight), so local snapshots cannot pile up.
//! - **A failed write fails that checkpoint, not the job.** Its marker is not written, so it
//!   never completes; what it would have committed is in the next part (sinks' committables
//!   are cumulative). The subtask counts consecutive failures and fails the job when they pass
//!   [`CheckpointConfig::tolerable_failures`](crate::config::CheckpointConfig::tolerable_failures)
//!   (Flink's `tolerableCheckpointFailureNumber`); each failure is said on stderr with its
//!   cause (a full disk says "No space left on device").
//! - **Ordered with the run.** A subtask waits for its lane before it ends, and a run waits
//!   for every lane before it restarts, so no write of an earlier run lands among a later
//!   run's parts.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

use crate::error::{Error, Result};

/// Checkpoints of one subtask that may wait for its lane at once.
pub(crate) const MAX_QUEUED: usize = 2;

/// The asynchronous half of one subtask's checkpoint.
pub(crate) type Job = Box<dyn FnOnce() -> Result<()> + Send>;

/// What a lane has done: jobs queued or running, and the failures not yet reported.
#[derive(Default)]
struct LaneState {
    queued: usize,
    failures: Vec<(u64, Error)>,
    /// Checkpoints that failed since the last one written whole.
    consecutive: u32,
}

struct Lane {
    sender: Option<mpsc::Sender<(u64, Job)>>,
    state: Arc<(Mutex<LaneState>, Condvar)>,
    thread: Option<JoinHandle<()>>,
}

impl Lane {
    fn start(name: String, failed: Arc<AtomicU64>) -> Result<Self> {
        let (sender, receiver) = mpsc::channel::<(u64, Job)>();
        let state: Arc<(Mutex<LaneState>, Condvar)> = Arc::default();
        let lane_state = Arc::clone(&state);
        let thread = std::thread::Builder::new()
            .name(name)
            .spawn(move || {
                for (epoch, job) in receiver {
                    let result = job();
                    let (lock, done) = &*lane_state;
                    let mut s = lock
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner);
                    s.queued -= 1;
                    match result {
                        Ok(()) => s.consecutive = 0,
                        Err(e) => {
                            failed.fetch_max(epoch.saturating_add(1), Ordering::AcqRel);
                            s.consecutive += 1;
                            s.failures.push((epoch, e));
                        }
                    }
                    done.notify_all();
                }
            })
            .map_err(|source| Error::Io {
                path: "a checkpoint upload thread".into(),
                source,
            })?;
        Ok(Lane {
            sender: Some(sender),
            state,
            thread: Some(thread),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, LaneState> {
        self.state
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Waits until at most `queued` jobs are queued or running.
    fn wait_for(&self, queued: usize) {
        let (_, done) = &*self.state;
        let mut s = self.lock();
        while s.queued > queued {
            s = done
                .wait(s)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
    }
}

impl Drop for Lane {
    fn drop(&mut self) {
        self.sender.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A lane by operator key and subtask.
type Lanes = HashMap<(String, usize), Arc<Lane>>;

/// The lanes of a run's subtasks, by operator key and subtask (shared by the run's workers).
#[derive(Clone, Default)]
pub(crate) struct Uploads {
    lanes: Arc<Mutex<Lanes>>,
    /// One more than the highest epoch a lane failed to write (0: none failed), for the
    /// coordinator, which then stops waiting for that checkpoint.
    failed: Arc<AtomicU64>,
}

impl std::fmt::Debug for Uploads {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Uploads").finish_non_exhaustive()
    }
}

impl Uploads {
    fn lane(&self, key: &str, subtask: usize) -> Result<Arc<Lane>> {
        let mut lanes = self
            .lanes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(lane) = lanes.get(&(key.to_owned(), subtask)) {
            return Ok(Arc::clone(lane));
        }
        let lane = Arc::new(Lane::start(
            format!("checkpoint {key}[{subtask}]"),
            Arc::clone(&self.failed),
        )?);
        lanes.insert((key.to_owned(), subtask), Arc::clone(&lane));
        Ok(lane)
    }

    /// Queues the asynchronous half of checkpoint `epoch` of a subtask, after waiting while
    /// [`MAX_QUEUED`] of its checkpoints are in flight.
    pub(crate) fn submit(&self, key: &str, subtask: usize, epoch: u64, job: Job) -> Result<()> {
        let lane = self.lane(key, subtask)?;
        lane.wait_for(MAX_QUEUED - 1);
        lane.lock().queued += 1;
        let sent = lane
            .sender
            .as_ref()
            .is_some_and(|s| s.send((epoch, job)).is_ok());
        if !sent {
            lane.lock().queued -= 1;
            return Err(Error::Io {
                path: format!("the checkpoint upload thread of {key}[{subtask}]").into(),
                source: std::io::Error::other("it ended"),
            });
        }
        Ok(())
    }

    /// The highest epoch whose write failed on a lane of this process, if any did.
    pub(crate) fn latest_failure(&self) -> Option<u64> {
        self.failed.load(Ordering::Acquire).checked_sub(1)
    }

    /// Waits until every checkpoint of a subtask is written (or failed).
    pub(crate) fn flush(&self, key: &str, subtask: usize) -> Result<()> {
        self.lane(key, subtask)?.wait_for(0);
        Ok(())
    }

    /// The failures of a subtask's checkpoints since the last call, by epoch, and how many
    /// checkpoints in a row have failed by now.
    pub(crate) fn failures(&self, key: &str, subtask: usize) -> Result<(Vec<(u64, Error)>, u32)> {
        let lane = self.lane(key, subtask)?;
        let mut s = lane.lock();
        Ok((std::mem::take(&mut s.failures), s.consecutive))
    }

    /// Reports the failures of a subtask's checkpoints since the last call on stderr, and
    /// fails with the last one when more than `tolerable` checkpoints in a row failed.
    pub(crate) fn check(
        &self,
        key: &str,
        subtask: usize,
        name: &str,
        tolerable: u32,
    ) -> Result<()> {
        let (failures, consecutive) = self.failures(key, subtask)?;
        let mut last = None;
        for (epoch, e) in failures {
            eprintln!(
                "checkpoint {epoch}: `{name}` subtask {subtask} could not write its part, so \
                 the checkpoint will not complete: {e} ({consecutive} in a row, {tolerable} \
                 tolerated)"
            );
            last = Some(e);
        }
        match last {
            Some(e) if consecutive > tolerable => Err(e),
            _ => Ok(()),
        }
    }

    /// Waits for every lane and stops their threads (at the end of a run).
    pub(crate) fn finish(&self) {
        let lanes: Vec<Arc<Lane>> = self
            .lanes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .drain()
            .map(|(_, l)| l)
            .collect();
        for lane in lanes {
            lane.wait_for(0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_run_in_order_and_failures_are_reported_once() {
        let uploads = Uploads::default();
        let seen = Arc::new(Mutex::new(Vec::new()));
        for epoch in 0..5u64 {
            let seen = Arc::clone(&seen);
            uploads
                .submit(
                    "op",
                    0,
                    epoch,
                    Box::new(move || {
                        seen.lock().unwrap().push(epoch);
                        if epoch == 3 {
                            Err(Error::Io {
                                path: "part".into(),
                                source: std::io::Error::other("No space left on device"),
                            })
                        } else {
                            Ok(())
                        }
                    }),
                )
                .unwrap();
        }
        uploads.flush("op", 0).unwrap();
        assert_eq!(*seen.lock().unwrap(), [0, 1, 2, 3, 4]);
        let (failures, consecutive) = uploads.failures("op", 0).unwrap();
        assert_eq!(failures.len(), 1);
        assert_eq!(failures[0].0, 3);
        assert_eq!(consecutive, 0, "checkpoint 4 was written whole after it");
        assert!(uploads.failures("op", 0).unwrap().0.is_empty());
        uploads.finish();
    }
}
