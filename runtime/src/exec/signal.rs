//! `kill -USR1 <pid>` asks a running job with checkpoints for a savepoint, on any process of
//! a multi-process job: the savepoint goes to `<checkpoint dir>/savepoints/savepoint-<unix
//! ms>` (said on stderr), written once for the whole job by the coordinator from the first
//! checkpoint that completes after it saw the request (see
//! [`CheckpointStore::request_savepoint`]). The handler only sets a flag; a thread of the run
//! turns it into the request. While a job with checkpoints runs, SIGUSR1 no longer ends the
//! process (its default).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::checkpoint::store::CheckpointStore;
use crate::error::{Error, Result};

/// Watches for SIGUSR1 while a run goes on; stops when dropped.
pub(crate) struct SavepointSignal {
    stop: Arc<AtomicBool>,
    id: signal_hook::SigId,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl SavepointSignal {
    /// Starts watching for the signal of a job checkpointing into `checkpoints`.
    pub(crate) fn watch(checkpoints: &Path) -> Result<Self> {
        let store = CheckpointStore::open(checkpoints)?;
        let base = checkpoints.join("savepoints");
        let flag = Arc::new(AtomicBool::new(false));
        let id = signal_hook::flag::register(signal_hook::consts::SIGUSR1, Arc::clone(&flag))
            .map_err(|source| Error::Io {
                path: "the SIGUSR1 handler".into(),
                source,
            })?;
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("savepoint signal".into())
            .spawn(move || {
                while !stopped.load(Ordering::Relaxed) {
                    if flag.swap(false, Ordering::Relaxed) {
                        request(&store, &base);
                    }
                    std::thread::sleep(Duration::from_millis(50));
                }
            })
            .map_err(|source| Error::Io {
                path: "the savepoint signal's thread".into(),
                source,
            })?;
        Ok(SavepointSignal {
            stop,
            id,
            thread: Some(thread),
        })
    }
}

/// Leaves the request, saying where the savepoint will be.
fn request(store: &CheckpointStore, base: &Path) {
    let ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    let target: PathBuf = base.join(format!("savepoint-{ms}"));
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
        signal_hook::low_level::unregister(self.id);
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
