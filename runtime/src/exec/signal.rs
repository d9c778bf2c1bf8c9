//! `kill -USR1 <pid>` asks a running job with checkpoints for a savepoint, on any process of
//! a multi-process job: the savepoint goes to `<checkpoint dir>/savepoints/savepoint-<unix
//! ms>` (said on stderr), written once for the whole job by the coordinator from the first
//! checkpoint that completes after it saw the request (see
//! [`CheckpointStore::request_savepoint`]). The handler only sets a flag; a thread of the run
//! turns it into the request. While a job with checkpoints runs, SIGUSR1 no longer ends the
//! process (its default).
//!
//! `kill -USR2 <pid>` stops the job with a savepoint, on any process of a multi-process job
//! (Flink's stop-with-savepoint): the request is the file `requests/stop` of the checkpoint
//! directory, holding `<checkpoint dir>/savepoints/savepoint-<unix ms>`. The same thread on
//! every process of the job looks for that file every [`STOP_POLL`] (on an object store, a
//! request each time) and, once it is there, tells its process's sources: each stops at its
//! next epoch boundary, the coordinator writes the savepoint from the first checkpoint in
//! which every source has stopped (as for [`StopWithSavepoint`](crate::config::StopWithSavepoint)),
//! deletes the request, and every process ends with success, nothing fired after the
//! savepoint's cut (no final watermark). Decision: a file rather than a message between the
//! processes, because the checkpoint directory is what every process already shares and
//! reaches, also after a restart; the cost is up to [`STOP_POLL`] before a stop begins.
//! The same thread acts on `requests/cancel` (a cancel asked of any process through the
//! REST API, [`crate::exec::rest`]) made after this process started.
//!
//! One caveat: a process that runs no source subtask (a job with fewer source subtasks than
//! workers) learns of the stop only from the file, so its operators may end their input as
//! if the job had finished (emitting what the final watermark fires, after the savepoint)
//! when its sources' ends reach it before its own look at the file; run the sources at the
//! job's parallelism (the default) to stop exactly.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::checkpoint::store::CheckpointStore;
use crate::error::{Error, Result};
use crate::job::JobShared;

/// How often every process looks for a stop request in the checkpoint directory.
pub(crate) const STOP_POLL: Duration = Duration::from_millis(500);

/// How often the thread looks at the signals' flags.
const FLAG_POLL: Duration = Duration::from_millis(50);

/// Watches for SIGUSR1 and SIGUSR2 and for stop requests while a run goes on; stops when
/// dropped.
pub(crate) struct SavepointSignal {
    stop: Arc<AtomicBool>,
    ids: [signal_hook::SigId; 2],
    thread: Option<std::thread::JoinHandle<()>>,
}

impl SavepointSignal {
    /// Starts watching for the signals of a job checkpointing into `checkpoints`, and for
    /// stop requests of any process of the job.
    pub(crate) fn watch(checkpoints: &Path, job: Arc<JobShared>) -> Result<Self> {
        let store = CheckpointStore::open(checkpoints)?;
        let base = checkpoints.join("savepoints");
        let savepoint = Arc::new(AtomicBool::new(false));
        let stop_signal = Arc::new(AtomicBool::new(false));
        let ids = [
            register(signal_hook::consts::SIGUSR1, &savepoint)?,
            register(signal_hook::consts::SIGUSR2, &stop_signal)?,
        ];
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("savepoint signal".into())
            .spawn(move || {
                let polls_per_look = (STOP_POLL.as_millis() / FLAG_POLL.as_millis()).max(1);
                let mut poll = 0u128;
                while !stopped.load(Ordering::Relaxed) {
                    if savepoint.swap(false, Ordering::Relaxed) {
                        request(&store, &base);
                    }
                    if stop_signal.swap(false, Ordering::Relaxed) {
                        request_stop(&store, &base);
                        poll = 0;
                    }
                    if poll % polls_per_look == 0 && !job.cancelled() {
                        // A cancel asked of any process (through the REST API).
                        if let Ok(Some(at)) = store.cancel_request() {
                            if at >= job.history().started_ms {
                                eprintln!("the job is cancelled (a request of {at} ms)");
                                job.cancel();
                            }
                        }
                    }
                    if poll % polls_per_look == 0 && job.stop_requested().is_none() {
                        match store.stop_request() {
                            Ok(Some(target)) => {
                                eprintln!("stopping with a savepoint into {}", target.display());
                                job.request_stop(target);
                            }
                            Ok(None) => {}
                            Err(e) => eprintln!("the stop request could not be read: {e}"),
                        }
                    }
                    poll += 1;
                    std::thread::sleep(FLAG_POLL);
                }
            })
            .map_err(|source| Error::Io {
                path: "the savepoint signal's thread".into(),
                source,
            })?;
        Ok(SavepointSignal {
            stop,
            ids,
            thread: Some(thread),
        })
    }
}

/// Sets `flag` when `signal` arrives.
fn register(signal: i32, flag: &Arc<AtomicBool>) -> Result<signal_hook::SigId> {
    signal_hook::flag::register(signal, Arc::clone(flag)).map_err(|source| Error::Io {
        path: format!("the handler of signal {signal}").into(),
        source,
    })
}

/// Leaves a stop request for every process of the job.
fn request_stop(store: &CheckpointStore, base: &Path) {
    let target = savepoint_target(base);
    match store.request_stop(&target) {
        Ok(()) => eprintln!(
            "SIGUSR2: the job is asked to stop with a savepoint into {}",
            target.display()
        ),
        Err(e) => eprintln!("SIGUSR2: the stop request could not be written: {e}"),
    }
}

/// A new savepoint's directory under `base`.
fn savepoint_target(base: &Path) -> PathBuf {
    let ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    base.join(format!("savepoint-{ms}"))
}

/// Leaves the request, saying where the savepoint will be.
fn request(store: &CheckpointStore, base: &Path) {
    let target = savepoint_target(base);
    match store.request_savepoint(&target) {
        Ok(()) => eprintln!(
            "SIGUSR1: a savepoint of the job is asked for, into {}",
            target.display()
        ),
        Err(e) => eprintln!("SIGUSR1: the savepoint request could not be written: {e}"),
    }
}

impl Drop for SavepointSignal {
    fn drop(&mut self) {
        for id in self.ids {
            signal_hook::low_level::unregister(id);
        }
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
