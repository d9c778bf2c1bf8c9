//! Running a compiled job: checks the snapshot it restores from, recovers file sinks,
//! prepares the checkpoint directory, connects the processes, and runs every worker's
//! compiled dataflow to its end.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use timely::{CommunicationConfig, WorkerConfig};

use crate::checkpoint::{operator_key, CheckpointStore, Restore};
use crate::compile::{compile, CompileSettings, NodeBuilder};
use crate::config::{ExecutionConfig, RestoreSettings, StateBackend};
use crate::error::{Error, Result};
use crate::job::{Epoch, JobShared, JobStatus};
use crate::metrics::Metrics;
use crate::plan::StreamGraph;

/// Runs the job, restarting it by its restart strategy when it fails (see
/// [`RestartStrategy`](crate::RestartStrategy)): from the latest completed checkpoint, or
/// from where it started when none completed yet. Restarts apply to a job in one process; a
/// job on several processes fails, to be restarted by whatever launched its processes.
pub(crate) fn execute(
    job_name: &str,
    graph: Arc<StreamGraph>,
    builders: Arc<Vec<Arc<dyn NodeBuilder>>>,
    mut config: ExecutionConfig,
    job: Arc<JobShared>,
) -> Result<(Metrics, Vec<String>)> {
    loop {
        job.set_status(JobStatus::Running);
        let result = run(
            job_name,
            Arc::clone(&graph),
            Arc::clone(&builders),
            config.clone(),
            Arc::clone(&job),
        );
        let error = match result {
            Ok(done) => {
                job.set_status(JobStatus::Finished);
                return Ok(done);
            }
            Err(_) if job.cancelled() => {
                job.set_status(JobStatus::Cancelled);
                return Err(Error::Cancelled);
            }
            Err(e) => e,
        };
        let attempt = job.next_restart_attempt();
        let delay = config
            .restart_strategy
            .delay(attempt)
            .filter(|_| error.is_restartable() && config.cluster.is_none());
        let Some(delay) = delay else {
            job.set_status(JobStatus::Failed);
            return Err(error);
        };
        eprintln!("job `{job_name}` failed: {error}; restart {attempt} in {delay:?}");
        job.set_status(JobStatus::Restarting);
        job.metrics.counter("job.numRestarts".into()).inc();
        let until = std::time::Instant::now() + delay;
        while std::time::Instant::now() < until && !job.cancelled() {
            std::thread::sleep(Duration::from_millis(5).min(delay));
        }
        if job.cancelled() {
            job.set_status(JobStatus::Cancelled);
            return Err(Error::Cancelled);
        }
        job.reset_for_restart();
        if let Some(c) = &config.checkpointing {
            let root = crate::storage::Storage::open(&c.dir)?;
            if !crate::checkpoint::completed(&root)?.is_empty()
                || CheckpointStore::is_finished(&root)?
            {
                let allow = config
                    .restore
                    .as_ref()
                    .is_some_and(|r| r.allow_non_restored_state);
                config.restore = Some(RestoreSettings {
                    path: c.dir.clone(),
                    allow_non_restored_state: allow,
                });
            }
        }
    }
}

/// Runs `graph` on timely with `config`; returns this process's metrics and migrations.
fn run(
    job_name: &str,
    graph: Arc<StreamGraph>,
    builders: Arc<Vec<Arc<dyn NodeBuilder>>>,
    config: ExecutionConfig,
    job: Arc<JobShared>,
) -> Result<(Metrics, Vec<String>)> {
    let workers = graph.workers() as usize;
    let communication = match &config.cluster {
        None if workers == 1 => Some(CommunicationConfig::Thread),
        None => Some(CommunicationConfig::Process(workers)),
        Some(_) => None,
    };
    if let Some(settings) = &config.restore {
        let store = CheckpointStore::open(&settings.path)?;
        if CheckpointStore::is_finished(store.root())? {
            // Restored from the checkpoints of a job that ran to its end (a crash while or
            // after it published its last output): publish the final parts again and end.
            if config.cluster.as_ref().is_none_or(|c| c.process == 0) {
                let mut committers = Vec::new();
                for node in graph.nodes() {
                    let Some(builder) = builders.get(node.id()) else {
                        continue;
                    };
                    if let Some(committer) = builder.committer(&config.serializer_config)? {
                        committers.push(crate::drive::NodeCommitter {
                            key: operator_key(node.uid(), node.id()),
                            name: node.name().to_owned(),
                            parallelism: node.parallelism(),
                            committer,
                        });
                    }
                }
                crate::drive::republish_finished(&store, &committers)?;
            }
            eprintln!(
                "job `{job_name}`: {} holds the checkpoints of a job that ran to its end; its output is published, nothing is left to run",
                settings.path.display()
            );
            return Ok((job.metrics.snapshot(), Vec::new()));
        }
    }
    if let Some(stop) = &config.stop_with_savepoint {
        // A savepoint URL no storage serves is refused before the job starts.
        crate::storage::Storage::open(&stop.dir)?;
    }
    let restore = match &config.restore {
        Some(settings) => Some(Arc::new(Restore::check(settings, &graph)?)),
        None => None,
    };
    let start_epoch: Epoch = restore.as_ref().map_or(0, |r| r.metadata.epoch + 1);
    if let Some(r) = &restore {
        // The restored checkpoint's committables are committed again (a crash may have
        // landed between its completion and their commit), then each sink aborts what no
        // completed checkpoint covered. One process does it for the job.
        if config.cluster.as_ref().is_none_or(|c| c.process == 0) {
            for node in graph.nodes() {
                let Some(builder) = builders.get(node.id()) else {
                    continue;
                };
                let Some(committer) = builder.committer(&config.serializer_config)? else {
                    continue;
                };
                let key = operator_key(node.uid(), node.id());
                for part in r.parts(&key)? {
                    committer
                        .commit_part(&part.data)
                        .map_err(|e| e.in_operator(node.name()))?;
                }
                committer
                    .recover()
                    .map_err(|e| e.in_operator(node.name()))?;
            }
        }
    }
    let checkpoints = match &config.checkpointing {
        Some(c) => {
            // Parts of checkpoints that never completed (a crash while writing them) and
            // any checkpoint past the one restored from are not part of this run's history.
            let store = CheckpointStore::of(c)?;
            store.prepare_run(start_epoch, restore.as_ref().map(|r| &r.dir))?;
            Some(store)
        }
        None => None,
    };
    // RocksDB instances live under the configured directory, or a temporary one removed at
    // the end of the job.
    let (state_root, _temp) = match &config.state_backend {
        StateBackend::RocksDb { dir: Some(dir), .. } => (dir.join(sanitize(job_name)), None),
        StateBackend::RocksDb { dir: None, .. } => {
            let temp = tempfile::Builder::new()
                .prefix("typeinfo-job-")
                .tempdir()
                .map_err(|source| Error::Io {
                    path: std::env::temp_dir(),
                    source,
                })?;
            (temp.path().to_owned(), Some(temp))
        }
        StateBackend::Heap => (PathBuf::new(), None),
    };
    let settings = CompileSettings {
        job_name: job_name.to_owned(),
        config: config.clone(),
        state_root,
        job: Arc::clone(&job),
        graph,
        builders,
        start_epoch,
        restore,
        checkpoints,
    };
    let (builders, others) = match (communication, &config.cluster) {
        (Some(c), _) => c.try_build().map_err(Error::Cluster)?,
        (None, Some(cluster)) => crate::cluster::connect(cluster, workers / cluster.hosts.len())?,
        (None, None) => unreachable!("a communication config or a cluster"),
    };
    let guards =
        timely::execute::execute_from(builders, others, WorkerConfig::default(), move |worker| {
            let index = worker.index();
            let settings = settings.clone();
            worker.dataflow::<Epoch, _, _>(move |scope| compile(scope, index, settings));
        })
        .map_err(Error::Cluster)?;
    let mut panicked = None;
    for result in guards.join() {
        if let Err(message) = result {
            panicked.get_or_insert(message);
        }
    }
    if let Some(e) = job.error.lock().unwrap_or_else(|p| p.into_inner()).take() {
        return Err(e);
    }
    if let Some(message) = panicked {
        return Err(Error::Function {
            operator: "worker".into(),
            message,
        });
    }
    let metrics = job.metrics.snapshot();
    let migrations = std::mem::take(&mut *job.migrations.lock().unwrap_or_else(|p| p.into_inner()));
    Ok((metrics, migrations))
}

fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}
