//! What the workers of one process share while a job runs: the first failure, counters,
//! the file sinks to publish, what restores migrated, and a savepoint asked for by the
//! client. Also the guard that turns an operator's error or panic into the job's failure.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::error::{Error, Result};
use crate::metrics::MetricRegistry;

/// A checkpoint's number: the records between two checkpoints belong to one epoch.
pub(crate) type Epoch = u64;

/// The timely timestamp of every record: the checkpoint epoch it belongs to (high 64 bits)
/// and the flow-control tick at which its source emitted it (low 64 bits; see
/// [`crate::exec::source_driver`]). Ordered by epoch first, so every record of an epoch
/// comes before every record of the next one; ticks only let the frontier move within an
/// epoch, which is how a source learns how much of what it emitted is still in flight.
pub(crate) type Time = u128;

/// The epoch of a timestamp.
pub(crate) fn epoch_of(time: Time) -> Epoch {
    (time >> 64) as Epoch
}

/// The timestamp of `epoch` at `tick`.
pub(crate) fn time_at(epoch: Epoch, tick: u64) -> Time {
    (Time::from(epoch) << 64) | Time::from(tick)
}

/// The tick of a timestamp.
pub(crate) fn tick_of(time: Time) -> u64 {
    time as u64
}

/// What the workers of one process share while a job runs.
pub(crate) struct JobShared {
    failed: AtomicBool,
    cancelled: AtomicBool,
    status: Mutex<JobStatus>,
    pub(crate) error: Mutex<Option<Error>>,
    /// Every metric of this process's workers.
    pub(crate) metrics: Arc<MetricRegistry>,
    /// What restores migrated (state names with the part), per operator.
    pub(crate) migrations: Mutex<Vec<String>>,
    /// A savepoint asked for while the job runs.
    pub(crate) savepoint: Mutex<SavepointRequest>,
    /// Restarts so far, of the job and of batch stages (both count against the restart
    /// strategy's attempts).
    restarts: AtomicU32,
    /// The highest flow-control tick received from another worker (ticks of this process
    /// never fall behind it; see [`JobShared::tick_now`]).
    max_tick: AtomicU64,
    /// A stop with a savepoint asked for while the job runs (by `kill -USR2` on any process
    /// or [`JobClient::stop_with_savepoint`](crate::api::environment::JobClient::stop_with_savepoint)):
    /// where the savepoint goes. `stopping` says it is set without taking the lock.
    stop_request: Mutex<Option<PathBuf>>,
    stopping: AtomicBool,
    /// What the REST API shows of the job's history (see [`crate::exec::rest`]).
    pub(crate) history: Mutex<History>,
    /// The highest epoch a source may close: Flink's `maxConcurrentCheckpoints = 1` (see
    /// [`JobShared::may_close`]). `u64::MAX`: no limit.
    closable: AtomicU64,
    /// One more than the newest checkpoint this process completed (0: none yet).
    completed: AtomicU64,
}

/// The checkpoints completed and the failures seen by this process, newest last, at most
/// [`HISTORY_LEN`] of each.
#[derive(Debug, Default)]
pub(crate) struct History {
    /// When the job started, in ms since the Unix epoch.
    pub(crate) started_ms: u64,
    pub(crate) checkpoints: std::collections::VecDeque<CheckpointRecord>,
    pub(crate) exceptions: std::collections::VecDeque<ExceptionRecord>,
}

/// How many checkpoints and exceptions [`History`] keeps.
pub(crate) const HISTORY_LEN: usize = 64;

/// A completed checkpoint, as the REST API shows it.
#[derive(Debug, Clone)]
pub(crate) struct CheckpointRecord {
    pub(crate) id: Epoch,
    /// When it completed, in ms since the Unix epoch.
    pub(crate) completed_ms: u64,
    pub(crate) duration_ms: u64,
    pub(crate) bytes: u64,
    /// A savepoint was copied from it.
    pub(crate) savepoint: bool,
}

/// A failure of the job (it restarted or ended after it).
#[derive(Debug, Clone)]
pub(crate) struct ExceptionRecord {
    /// When it happened, in ms since the Unix epoch.
    pub(crate) timestamp_ms: u64,
    pub(crate) message: String,
}

/// Now, in ms since the Unix epoch.
pub(crate) fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis().min(u64::MAX as u128) as u64)
}

/// A savepoint asked for with [`JobClient::trigger_savepoint`](crate::api::environment::JobClient::trigger_savepoint).
#[derive(Debug, Default)]
pub(crate) struct SavepointRequest {
    /// Increases with every request; sources remember the last one they acted on.
    pub(crate) id: u64,
    /// Where the savepoint goes (`None` once answered).
    pub(crate) dir: Option<PathBuf>,
    /// The highest epoch a source closed for the request: any completed checkpoint at or
    /// after it holds everything before the request.
    pub(crate) after_epoch: Option<Epoch>,
    /// The answer.
    pub(crate) result: Option<std::result::Result<PathBuf, String>>,
}

/// Where a job is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobStatus {
    /// Running.
    Running,
    /// Failed, waiting to restart (see [`RestartStrategy`](crate::config::RestartStrategy)).
    Restarting,
    /// Ran to its end (or stopped with a savepoint).
    Finished,
    /// Failed for good.
    Failed,
    /// Cancelled.
    Cancelled,
}

impl JobShared {
    /// Cancels the job: every operator stops at its next activation.
    pub(crate) fn cancel(&self) {
        self.cancelled.store(true, Ordering::Release);
        self.fail(Error::Cancelled);
    }

    pub(crate) fn cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Acquire)
    }

    /// Forgets a failure before the job restarts (a cancel stays).
    pub(crate) fn reset_for_restart(&self) {
        *self.error.lock().unwrap_or_else(|p| p.into_inner()) = None;
        self.failed.store(self.cancelled(), Ordering::Release);
    }

    pub(crate) fn set_status(&self, status: JobStatus) {
        *self.status.lock().unwrap_or_else(|p| p.into_inner()) = status;
    }

    pub(crate) fn status(&self) -> JobStatus {
        *self.status.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn new() -> Self {
        JobShared {
            failed: AtomicBool::new(false),
            cancelled: AtomicBool::new(false),
            status: Mutex::new(JobStatus::Running),
            error: Mutex::new(None),
            metrics: Arc::new(MetricRegistry::default()),
            migrations: Mutex::new(Vec::new()),
            savepoint: Mutex::new(SavepointRequest::default()),
            restarts: AtomicU32::new(0),
            max_tick: AtomicU64::new(0),
            closable: AtomicU64::new(u64::MAX),
            completed: AtomicU64::new(0),
            stop_request: Mutex::new(None),
            stopping: AtomicBool::new(false),
            history: Mutex::new(History {
                started_ms: unix_ms(),
                ..History::default()
            }),
        }
    }

    /// The job's history (see [`History`]).
    pub(crate) fn history(&self) -> std::sync::MutexGuard<'_, History> {
        self.history.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Notes a completed checkpoint in the history.
    pub(crate) fn record_checkpoint(&self, record: CheckpointRecord) {
        let mut history = self.history();
        if history.checkpoints.len() == HISTORY_LEN {
            history.checkpoints.pop_front();
        }
        history.checkpoints.push_back(record);
    }

    /// Notes a failure of the job in the history.
    pub(crate) fn record_exception(&self, message: String) {
        let mut history = self.history();
        if history.exceptions.len() == HISTORY_LEN {
            history.exceptions.pop_front();
        }
        history.exceptions.push_back(ExceptionRecord {
            timestamp_ms: unix_ms(),
            message,
        });
    }

    /// Asks the job to stop with a savepoint into `dir` (the first request wins).
    pub(crate) fn request_stop(&self, dir: PathBuf) {
        let mut request = self.stop_request.lock().unwrap_or_else(|p| p.into_inner());
        if request.is_none() {
            *request = Some(dir);
            self.stopping.store(true, Ordering::Release);
        }
    }

    /// Where the savepoint of a requested stop goes, once one is asked for.
    pub(crate) fn stop_requested(&self) -> Option<PathBuf> {
        if !self.stopping.load(Ordering::Acquire) {
            return None;
        }
        self.stop_request
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The current flow-control tick: the wall clock in milliseconds since the Unix epoch,
    /// raised to the highest tick received (so a process whose clock is behind its peers'
    /// does not hold their frontier back).
    pub(crate) fn tick_now(&self) -> u64 {
        let clock = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        clock.max(self.max_tick.load(Ordering::Relaxed))
    }

    /// A record stamped with `tick` was received.
    pub(crate) fn saw_tick(&self, tick: u64) {
        if tick > self.max_tick.load(Ordering::Relaxed) {
            self.max_tick.fetch_max(tick, Ordering::Relaxed);
        }
    }

    /// A run begins at `start_epoch`, with checkpoints one at a time (`Some`: one process
    /// with checkpoints) or without a limit (`None`: no checkpoints, or several processes,
    /// whose sources do not see the coordinator's completions).
    pub(crate) fn limit_checkpoints(&self, start_epoch: Option<Epoch>) {
        self.closable
            .store(start_epoch.unwrap_or(u64::MAX), Ordering::Release);
    }

    /// Whether a source may close `epoch` on its interval: only once the checkpoint of the
    /// epoch before it is settled (completed, failed or given up), so that at most one
    /// checkpoint is in flight and none is written only to be superseded (Flink's default
    /// `maxConcurrentCheckpoints` of 1; with an interval shorter than a checkpoint takes,
    /// checkpoints follow each other back to back, as in Flink).
    pub(crate) fn may_close(&self, epoch: Epoch) -> bool {
        epoch <= self.closable.load(Ordering::Acquire)
    }

    /// Checkpoint `epoch` completed (on the process that completes checkpoints).
    pub(crate) fn checkpoint_completed(&self, epoch: Epoch) {
        self.completed
            .fetch_max(epoch.saturating_add(1), Ordering::AcqRel);
    }

    /// The newest checkpoint this process completed, if any.
    pub(crate) fn completed_checkpoint(&self) -> Option<Epoch> {
        self.completed.load(Ordering::Acquire).checked_sub(1)
    }

    /// Whether checkpoints are taken one at a time (see [`JobShared::limit_checkpoints`]).
    pub(crate) fn checkpoints_limited(&self) -> bool {
        self.closable.load(Ordering::Acquire) != u64::MAX
    }

    /// Checkpoint `epoch` is settled: sources may close the epoch after it.
    pub(crate) fn checkpoint_settled(&self, epoch: Epoch) {
        self.closable
            .fetch_max(epoch.saturating_add(1), Ordering::AcqRel);
    }

    /// The number of the restart about to happen (from 1), of the job or of a batch stage.
    pub(crate) fn next_restart_attempt(&self) -> u32 {
        self.restarts
            .fetch_add(1, Ordering::AcqRel)
            .saturating_add(1)
    }

    /// Records what a restore migrated.
    pub(crate) fn migrated(&self, what: String) {
        self.migrations
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(what);
    }

    /// Records the job's first error; every operator stops at its next activation.
    pub(crate) fn fail(&self, error: Error) {
        let mut slot = self.error.lock().unwrap_or_else(|p| p.into_inner());
        if slot.is_none() {
            *slot = Some(error);
        }
        self.failed.store(true, Ordering::Release);
    }

    pub(crate) fn failed(&self) -> bool {
        self.failed.load(Ordering::Acquire)
    }

    pub(crate) fn request(&self) -> std::sync::MutexGuard<'_, SavepointRequest> {
        self.savepoint.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Adds `value` to the counter `name`.
    pub(crate) fn count(&self, name: &str, value: u64) {
        self.metrics.counter(name.to_owned()).inc_by(value);
    }
}

impl std::fmt::Debug for JobShared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JobShared")
            .field("failed", &self.failed())
            .finish_non_exhaustive()
    }
}

/// The message of a panic payload (a `String` or `&str`; other payloads have none).
///
/// The one place the runtime looks into a `dyn Any`: a panic's payload is type-erased by
/// the standard library, and only its two usual types carry a message.
pub(crate) fn panic_message(payload: Box<dyn std::any::Any + Send>) -> String {
    match payload.downcast::<String>() {
        Ok(s) => format!("panicked: {s}"),
        Err(payload) => match payload.downcast::<&'static str>() {
            Ok(s) => format!("panicked: {s}"),
            Err(_) => "panicked".to_owned(),
        },
    }
}

/// Runs `body` catching panics; an error or panic fails the job, named after `operator`.
pub(crate) fn guarded(job: &JobShared, operator: &str, body: impl FnOnce() -> Result<()>) -> bool {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => true,
        Ok(Err(e)) => {
            job.fail(e.in_operator(operator));
            false
        }
        Err(payload) => {
            job.fail(Error::Function {
                operator: operator.to_owned(),
                message: panic_message(payload),
            });
            false
        }
    }
}
