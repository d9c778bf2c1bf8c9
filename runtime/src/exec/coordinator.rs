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
}

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
        {
            self.complete(epoch)?;
        }
        if frontier.is_none() {
            self.done = true;
            if self.stop.is_none() {
                if let Some((store, _)) = &self.checkpoints {
                    finish_job(store, &self.committers)?;
                }
            }
        }
        Ok(())
    }

    fn complete(&mut self, epoch: Epoch) -> Result<()> {
        let Some((store, retained)) = &self.checkpoints else {
            return Ok(());
        };
        let Some(stats) = store.complete(&self.graph, epoch, *retained)? else {
            return Ok(());
        };
        self.last_completed = Some(epoch);
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
        if let Some(stop) = &self.stop {
            if !self.saved && store.sources_stopped(&self.graph, epoch)? {
                if !Storage::open(&stop.dir)?.exists(METADATA_FILE)? {
                    store.copy_to(epoch, &stop.dir)?;
                }
                self.saved = true;
            }
        }
        let mut request = self.job.request();
        if let (Some(dir), Some(after)) = (request.dir.clone(), request.after_epoch) {
            if epoch >= after {
                let copied = store.copy_to(epoch, &dir);
                request.result = Some(copied.map(|()| dir).map_err(|e| e.to_string()));
                request.dir = None;
                request.after_epoch = None;
            }
        }
        Ok(())
    }
}
