//! The checkpoint coordinator: completes a checkpoint when every operator has written its
//! part, commits two-phase sinks, and publishes the final parts of operators that ended.

use std::sync::Arc;

use crate::checkpoint::format::{OperatorPart, METADATA_FILE};
use crate::checkpoint::storage::Storage;
use crate::checkpoint::store::CheckpointStore;
use crate::config::StopWithSavepoint;
use crate::error::{Error, Result};
use crate::job::{Epoch, JobShared};
use crate::plan::StreamGraph;
use crate::user::sink::Committer;

/// A two-phase sink's committer and where its committables are in checkpoints.
pub(crate) struct NodeCommitter {
    pub(crate) key: String,
    pub(crate) name: String,
    pub(crate) parallelism: u32,
    pub(crate) committer: Arc<dyn Committer>,
}

/// The job ran to its end (with checkpoints): every sink subtask left its final part (what
/// no completed checkpoint covered). Marks the job finished, then commits the final parts;
/// a restore after a crash in between finds the mark and commits them again (see
/// [`crate::checkpoint::format`]). Committing is idempotent.
pub(crate) fn finish_job(store: &CheckpointStore, committers: &[NodeCommitter]) -> Result<()> {
    let mut parts = Vec::new();
    for c in committers {
        for subtask in 0..c.parallelism as usize {
            let part = store.find_final_part(&c.key, subtask)?.ok_or_else(|| {
                Error::Corrupt(format!(
                    "sink `{}` subtask {subtask} ended without its final part",
                    c.name
                ))
            })?;
            parts.push((c, part));
        }
    }
    store.mark_finished()?;
    publish_final_parts(parts)
}

/// Commits the final parts of a job that had finished, as [`finish_job`] did, when it is
/// restored from its checkpoint directory: there is nothing left to run.
pub(crate) fn republish_finished(
    store: &CheckpointStore,
    committers: &[NodeCommitter],
) -> Result<()> {
    let mut parts = Vec::new();
    for c in committers {
        for subtask in 0..c.parallelism as usize {
            if let Some(part) = store.find_final_part(&c.key, subtask)? {
                parts.push((c, part));
            }
        }
    }
    publish_final_parts(parts)
}

fn publish_final_parts(parts: Vec<(&NodeCommitter, OperatorPart)>) -> Result<()> {
    for (c, part) in parts {
        c.committer
            .commit_part(&part.data)
            .map_err(|e| e.in_operator(&c.name))?;
    }
    Ok(())
}

/// Watches every operator's progress (on worker 0): completes checkpoints (writes their
/// `_metadata` once every part is on disk), publishes file sinks' output up to each completed
/// checkpoint (and everything at the end of a job that ran to its end), copies the savepoint
/// of a stop-with-savepoint or of a client's request, and deletes old checkpoints.
pub(crate) struct Coordinator {
    graph: Arc<StreamGraph>,
    committers: Vec<NodeCommitter>,
    job: Arc<JobShared>,
    checkpoints: Option<(CheckpointStore, usize)>,
    stop: Option<StopWithSavepoint>,
    last_completed: Option<Epoch>,
    done: bool,
    /// The stop-with-savepoint's savepoint is written: nothing more is published.
    saved: bool,
    /// The newest checkpoint every operator has passed whose parts were not all written at
    /// the last look (their asynchronous halves still uploading), and when that look was.
    waiting: Option<(Epoch, Option<std::time::Instant>)>,
    /// Savepoint requests from any process (files in the checkpoint directory): request,
    /// target, and the first epoch whose checkpoint answers it.
    requests: Vec<(String, std::path::PathBuf, Epoch)>,
    /// When the coordinator last listed the requests (at most once a second: a listing is a
    /// request to an object store).
    requests_listed: Option<std::time::Instant>,
    /// The checkpoint waited for and since when (for [`CHECKPOINT_TIMEOUT`]).
    waiting_since: Option<(Epoch, std::time::Instant)>,
}

/// How often the coordinator lists a checkpoint whose parts are still being written.
/// (Each look is a listing: on an object store, a request.)
const COMPLETION_RETRY: std::time::Duration = std::time::Duration::from_millis(25);

/// How often the coordinator of a one-process job lists a checkpoint whose parts it has
/// not all seen written (parts of subtasks that ended are counted, but a look now and then
/// covers what counting cannot).
const LOOK_AT_LEAST: std::time::Duration = std::time::Duration::from_secs(1);

/// How long a checkpoint may take before the coordinator gives up on it (Flink's default
/// `checkpointTimeout`, 10 minutes): it never completes; the next one begins.
const CHECKPOINT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(600);

impl Coordinator {
    pub(crate) fn new(
        graph: Arc<StreamGraph>,
        job: Arc<JobShared>,
        checkpoints: Option<(CheckpointStore, usize)>,
        stop: Option<StopWithSavepoint>,
        start_epoch: Epoch,
        committers: Vec<NodeCommitter>,
    ) -> Self {
        Coordinator {
            graph,
            committers,
            job,
            checkpoints,
            stop,
            last_completed: start_epoch.checked_sub(1),
            done: false,
            saved: false,
            waiting: None,
            requests: Vec::new(),
            requests_listed: None,
            waiting_since: None,
        }
    }

    /// The lowest epoch any operator may still work on moved to `frontier` (`None`: the job
    /// ended): completes the checkpoint before it.
    pub(crate) fn progress(&mut self, frontier: Option<Epoch>) -> Result<()> {
        if self.done {
            return Ok(());
        }
        if let Some(epoch) = frontier
            .and_then(|f| f.checked_sub(1))
            .filter(|e| self.last_completed.is_none_or(|l| *e > l))
            .filter(|e| self.waiting.is_none_or(|(w, _)| *e > w))
        {
            // A newer checkpoint supersedes one still waiting for its parts.
            self.waiting = Some((epoch, None));
        }
        if let Some((epoch, looked)) = self.waiting {
            // At the end every subtask has written its parts (each waits for its uploads
            // before it ends): one last look.
            if frontier.is_none() || self.due(epoch, looked) {
                self.waiting = if self.complete(epoch)? {
                    None
                } else {
                    Some((epoch, Some(std::time::Instant::now())))
                };
            }
            if frontier.is_some() && self.waiting.is_some() && self.given_up(epoch) {
                self.waiting = None;
                self.job.checkpoint_settled(epoch);
            }
        }
        if frontier.is_none() {
            self.done = true;
            if self.stop.is_none() && self.job.stop_requested().is_none() {
                if let Some((store, _)) = &self.checkpoints {
                    finish_job(store, &self.committers)?;
                }
            }
        }
        Ok(())
    }

    /// Completes checkpoint `epoch` if every part of it is written; whether it did (no
    /// checkpoints: nothing to wait for).
    fn complete(&mut self, epoch: Epoch) -> Result<bool> {
        let Some((store, retained)) = &self.checkpoints else {
            return Ok(true);
        };
        let Some(stats) = store.complete(&self.graph, epoch, *retained)? else {
            return Ok(false);
        };
        self.last_completed = Some(epoch);
        self.job.checkpoint_completed(epoch);
        self.job.checkpoint_settled(epoch);
        let savepoint_before = self.saved;
        self.count_completed(&stats);
        // The sinks' committables of the checkpoint become visible. After the savepoint of a
        // stop-with-savepoint nothing more is committed: what operators emit after its cut
        // (a watermark that crossed the cut fires windows later) is the restored job's to
        // write, from the savepoint's state.
        if !self.saved {
            for c in &self.committers {
                for subtask in 0..c.parallelism as usize {
                    let part = store.read_part(epoch, &c.key, subtask)?;
                    c.committer
                        .commit_part(&part.data)
                        .map_err(|e| e.in_operator(&c.name))?;
                }
            }
        }
        if self.stop.is_none() {
            // A stop asked for while the job runs: this process's sources were told before
            // they stopped, so it is seen here before every source has stopped.
            self.stop = self.job.stop_requested().map(|dir| StopWithSavepoint {
                after_records: 0,
                dir,
            });
        }
        if let Some(stop) = &self.stop {
            if !self.saved && store.sources_stopped(&self.graph, epoch)? {
                if !Storage::open(&stop.dir)?.exists(METADATA_FILE)? {
                    store.copy_to(epoch, &stop.dir)?;
                }
                store.stop_answered()?;
                self.saved = true;
                eprintln!(
                    "stopped with savepoint {} (checkpoint {epoch})",
                    stop.dir.display()
                );
            }
        }
        let mut request = self.job.request();
        let mut copied = false;
        if let (Some(dir), Some(after)) = (request.dir.clone(), request.after_epoch) {
            if epoch >= after {
                copied = true;
                let copied = store.copy_to(epoch, &dir);
                request.result = Some(copied.map(|()| dir).map_err(|e| e.to_string()));
                request.dir = None;
                request.after_epoch = None;
            }
        }
        drop(request);
        let answered = self.answer_requests(epoch)?;
        self.job.record_checkpoint(crate::job::CheckpointRecord {
            id: epoch,
            completed_ms: crate::job::unix_ms(),
            duration_ms: stats.duration.as_millis().min(u64::MAX as u128) as u64,
            bytes: stats.bytes,
            savepoint: (self.saved && !savepoint_before) || answered || copied,
        });
        Ok(true)
    }
}

impl Coordinator {
    /// The metrics of a completed checkpoint: the count, its duration and size, and the
    /// state size per operator.
    fn count_completed(&self, stats: &crate::checkpoint::store::CheckpointStats) {
        let metrics = &self.job.metrics;
        metrics.counter("job.numCompletedCheckpoints".into()).inc();
        metrics
            .gauge("job.lastCheckpointDurationMs".into())
            .set(stats.duration.as_millis().min(i64::MAX as u128) as i64);
        metrics
            .gauge("job.lastCheckpointSizeBytes".into())
            .set(stats.bytes.min(i64::MAX as u64) as i64);
        for (operator, bytes) in &stats.operators {
            metrics
                .gauge(format!("{operator}.stateSizeBytes"))
                .set((*bytes).min(i64::MAX as u64) as i64);
        }
    }

    /// Whether to look whether checkpoint `epoch` is whole now (`looked`: when it last did).
    /// In a job of one process, once every subtask has written its part here (see
    /// [`CheckpointStore::parts_written`]) or a second after the last look; otherwise every
    /// [`COMPLETION_RETRY`] (parts written by other processes are seen only by listing).
    fn due(&mut self, epoch: Epoch, looked: Option<std::time::Instant>) -> bool {
        let since = self.waiting_began(epoch);
        let Some((store, _)) = &self.checkpoints else {
            return true;
        };
        if self.job.checkpoints_limited() {
            let subtasks = self.graph.nodes().iter().map(|n| n.parallelism() as usize);
            store.parts_written(epoch) >= subtasks.sum()
                || looked.unwrap_or(since).elapsed() >= LOOK_AT_LEAST
        } else {
            looked.is_none_or(|t| t.elapsed() >= COMPLETION_RETRY)
        }
    }

    /// When the coordinator began to wait for checkpoint `epoch`.
    fn waiting_began(&mut self, epoch: Epoch) -> std::time::Instant {
        match self.waiting_since {
            Some((e, since)) if e == epoch => since,
            _ => {
                self.waiting_since
                    .insert((epoch, std::time::Instant::now()))
                    .1
            }
        }
    }

    /// Whether to stop waiting for checkpoint `epoch`: a part of it failed to write in
    /// this process (the subtask says so and counts it against the tolerable failures), or
    /// it took longer than [`CHECKPOINT_TIMEOUT`]. The next checkpoint may then begin.
    fn given_up(&mut self, epoch: Epoch) -> bool {
        let since = self.waiting_began(epoch);
        let Some((store, _)) = &self.checkpoints else {
            return false;
        };
        if store.uploads().latest_failure().is_some_and(|f| f >= epoch) {
            return true;
        }
        if since.elapsed() >= CHECKPOINT_TIMEOUT {
            eprintln!(
                "checkpoint {epoch} did not complete within {} s: given up; the next one begins",
                CHECKPOINT_TIMEOUT.as_secs()
            );
            return true;
        }
        false
    }

    /// Checkpoint `epoch` completed: copies it for every request from another process (or a
    /// signal) seen at an earlier completion, then takes note of the requests waiting now
    /// (answered by the next checkpoint that completes: one whose parts were written after
    /// the request was seen).
    fn answer_requests(&mut self, epoch: Epoch) -> Result<bool> {
        let Some((store, _)) = &self.checkpoints else {
            return Ok(false);
        };
        let mut answered = false;
        let mut left = Vec::new();
        for (request, target, after) in std::mem::take(&mut self.requests) {
            if epoch < after {
                left.push((request, target, after));
                continue;
            }
            if !Storage::open(&target)?.exists(METADATA_FILE)? {
                store.copy_to(epoch, &target)?;
            }
            store.answered(&request)?;
            answered = true;
            eprintln!(
                "savepoint {} written (checkpoint {epoch})",
                target.display()
            );
        }
        let due = self
            .requests_listed
            .is_none_or(|t| t.elapsed() >= std::time::Duration::from_secs(1));
        if due {
            self.requests_listed = Some(std::time::Instant::now());
            for (request, target) in store.savepoint_requests()? {
                if !left.iter().any(|(r, _, _)| *r == request) {
                    left.push((request, target, epoch + 1));
                }
            }
        }
        self.requests = left;
        Ok(answered)
    }
}

/// The coordinator on a thread of its own (on the process that coordinates): listing a
/// checkpoint's parts, writing its `_metadata`, committing sinks and deleting old checkpoints
/// are requests to the storage (an object store's take milliseconds each), which must not
/// stall the records of the worker the coordinator's operator runs on. The operator hands
/// it the frontier's epoch when it moves; the thread looks at least every
/// [`COMPLETION_RETRY`] while a checkpoint waits for its parts.
pub(crate) struct CoordinatorThread {
    sender: std::sync::mpsc::Sender<Option<Epoch>>,
    last: Option<Option<Epoch>>,
    thread: std::thread::JoinHandle<()>,
}

impl CoordinatorThread {
    pub(crate) fn start(mut coordinator: Coordinator, job: Arc<JobShared>) -> Result<Self> {
        let (sender, receiver) = std::sync::mpsc::channel::<Option<Epoch>>();
        let thread = std::thread::Builder::new()
            .name("checkpoint coordinator".into())
            .spawn(move || {
                let mut frontier = Some(0);
                loop {
                    match receiver.recv_timeout(COMPLETION_RETRY) {
                        Ok(f) => frontier = f,
                        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return,
                    }
                    // Only the newest frontier matters.
                    while let Ok(f) = receiver.try_recv() {
                        frontier = f;
                    }
                    if job.failed() {
                        return;
                    }
                    if let Err(e) = coordinator.progress(frontier) {
                        job.fail(e.in_operator("Checkpoint coordinator"));
                        return;
                    }
                    if frontier.is_none() {
                        return;
                    }
                }
            })
            .map_err(|source| crate::error::Error::Io {
                path: "the checkpoint coordinator's thread".into(),
                source,
            })?;
        Ok(CoordinatorThread {
            sender,
            last: None,
            thread,
        })
    }

    /// The lowest epoch any operator may still work on (`None`: the job ended).
    pub(crate) fn progress(&mut self, frontier: Option<Epoch>) {
        if self.last != Some(frontier) {
            self.last = Some(frontier);
            let _ = self.sender.send(frontier);
        }
    }

    /// Waits until the coordinator is done (after the frontier reached the end).
    pub(crate) fn join(self) {
        drop(self.sender);
        let _ = self.thread.join();
    }
}
