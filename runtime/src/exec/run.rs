//! Running a compiled job: checks the snapshot it restores from, recovers file sinks,
//! prepares the checkpoint directory, connects the processes, and runs every worker's
//! compiled dataflow to its end.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use timely::{CommunicationConfig, WorkerConfig};

use crate::checkpoint::format::operator_key;
use crate::checkpoint::restore::{completed, Restore};
use crate::checkpoint::storage::Storage;
use crate::checkpoint::store::CheckpointStore;
use crate::config::{ExecutionConfig, RestoreSettings, StateBackend};
use crate::error::{Error, Result};
use crate::exec::compile::{compile, CompileSettings, NodeBuilder};
use crate::exec::coordinator::{republish_finished, NodeCommitter};
use crate::job::{panic_message, Epoch, JobShared, JobStatus, Time};
use crate::metrics::Metrics;
use crate::net::cluster::connect;
use crate::plan::StreamGraph;

/// Runs the job, restarting it by its restart strategy when it fails (see
/// [`RestartStrategy`](crate::config::RestartStrategy)): from the latest completed checkpoint, or
/// from where it started when none completed yet. Restarts apply to a job in one process; a
/// job on several processes fails, to be restarted by whatever launched its processes.
pub(crate) fn execute(
    job_name: &str,
    graph: Arc<StreamGraph>,
    builders: Arc<Vec<Arc<dyn NodeBuilder>>>,
    mut config: ExecutionConfig,
    job: Arc<JobShared>,
) -> Result<(Metrics, Vec<String>)> {
    if config.restore.is_none() && config.checkpointing.as_ref().is_some_and(|c| c.resume) {
        restore_from_own_checkpoints(&mut config)?;
    }
    // The HTTP server (Prometheus, REST), for the whole job (restarts included) and its
    // linger.
    let _server = crate::exec::server::JobServer::for_job(job_name, &config, &job, &graph)?;
    // Freed memory back to the system while RocksDB churns its cache (see `exec::trim`).
    let _trimmer = match config.state_backend {
        crate::config::StateBackend::RocksDb { .. } => crate::exec::trim::Trimmer::start(),
        crate::config::StateBackend::Heap => None,
    };
    // `kill -USR1` asks for a savepoint while the job runs, `kill -USR2` stops it with one
    // (see [`crate::exec::signal`]).
    let _signal = match &config.checkpointing {
        Some(c) => Some(crate::exec::signal::SavepointSignal::watch(
            &c.dir,
            Arc::clone(&job),
        )?),
        None => None,
    };
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
        job.record_exception(error.to_string());
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
        restore_from_own_checkpoints(&mut config)?;
    }
}

/// From now on the job restores from its own checkpoint directory, when that holds a
/// completed checkpoint (or the marks of a job that ran to its end); otherwise nothing
/// changes. Keeps an explicit restore's `allow_non_restored_state`.
fn restore_from_own_checkpoints(config: &mut ExecutionConfig) -> Result<()> {
    let Some(c) = &config.checkpointing else {
        return Ok(());
    };
    let root = Storage::open(&c.dir)?;
    if !completed(&root)?.is_empty() || CheckpointStore::is_finished(&root)? {
        let allow = config
            .restore
            .as_ref()
            .is_some_and(|r| r.allow_non_restored_state);
        config.restore = Some(RestoreSettings {
            path: c.dir.clone(),
            allow_non_restored_state: allow,
        });
    }
    Ok(())
}

/// Runs `graph` on timely with `config`; returns this process's metrics and migrations. The
/// phases: a restore from a job that had finished only publishes again; otherwise the
/// restore is checked, the sinks recover, the checkpoint directory is prepared, the state
/// directory chosen, and the workers run the compiled graph to its end.
fn run(
    job_name: &str,
    graph: Arc<StreamGraph>,
    builders: Arc<Vec<Arc<dyn NodeBuilder>>>,
    config: ExecutionConfig,
    job: Arc<JobShared>,
) -> Result<(Metrics, Vec<String>)> {
    if let Some(settings) = &config.restore {
        if republish_if_finished(job_name, settings, &graph, &builders, &config)? {
            return Ok((job.metrics.snapshot(), Vec::new()));
        }
    }
    if let Some(stop) = &config.stop_with_savepoint {
        // A savepoint URL no storage serves is refused before the job starts.
        Storage::open(&stop.dir)?;
    }
    let restore = match &config.restore {
        Some(settings) => Some(Arc::new(Restore::check(settings, &graph)?)),
        None => None,
    };
    let start_epoch: Epoch = restore.as_ref().map_or(0, |r| r.metadata.epoch + 1);
    let one_process = config.cluster.is_none() && config.checkpointing.is_some();
    job.limit_checkpoints(one_process.then_some(start_epoch));
    if let Some(r) = &restore {
        recover_sinks(r, &graph, &builders, &config)?;
    }
    let checkpoints = prepare_checkpoints(&config, start_epoch, restore.as_deref())?;
    let uploads = checkpoints.as_ref().map(|c| c.uploads().clone());
    let (state_root, _temp) = state_root(job_name, &config.state_backend)?;
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
    let panicked = run_workers(&config, settings);
    // Every part this run queued is written (or failed) before the run ends: a restart must
    // not find a write of this run landing among its own parts.
    if let Some(uploads) = uploads {
        uploads.finish();
    }
    outcome(&job, panicked?)
}

/// Whether this process commits the job's output (the only process, or process 0).
fn commits_output(config: &ExecutionConfig) -> bool {
    config.cluster.as_ref().is_none_or(|c| c.process == 0)
}

/// The committers of the job's two-phase sinks, with their nodes' names.
fn committers(
    graph: &StreamGraph,
    builders: &[Arc<dyn NodeBuilder>],
    config: &ExecutionConfig,
) -> Result<Vec<NodeCommitter>> {
    let mut committers = Vec::new();
    for node in graph.nodes() {
        let Some(builder) = builders.get(node.id()) else {
            continue;
        };
        if let Some(committer) = builder.committer(&config.serializer_config)? {
            committers.push(NodeCommitter {
                key: operator_key(node.uid(), node.id()),
                name: node.name().to_owned(),
                parallelism: node.parallelism(),
                committer,
            });
        }
    }
    Ok(committers)
}

/// Restored from the checkpoints of a job that ran to its end (a crash while or after it
/// published its last output): publishes the final parts again and says so; `true` when the
/// job had finished and nothing is left to run.
fn republish_if_finished(
    job_name: &str,
    settings: &RestoreSettings,
    graph: &StreamGraph,
    builders: &[Arc<dyn NodeBuilder>],
    config: &ExecutionConfig,
) -> Result<bool> {
    let store = CheckpointStore::open(&settings.path)?;
    if !CheckpointStore::is_finished(store.root())? {
        return Ok(false);
    }
    if commits_output(config) {
        republish_finished(&store, &committers(graph, builders, config)?)?;
    }
    eprintln!(
        "job `{job_name}`: {} holds the checkpoints of a job that ran to its end; its output is published, nothing is left to run",
        settings.path.display()
    );
    Ok(true)
}

/// The restored checkpoint's committables are committed again (a crash may have landed
/// between its completion and their commit), then each sink aborts what no completed
/// checkpoint covered. One process does it for the job.
fn recover_sinks(
    restore: &Restore,
    graph: &StreamGraph,
    builders: &[Arc<dyn NodeBuilder>],
    config: &ExecutionConfig,
) -> Result<()> {
    if !commits_output(config) {
        return Ok(());
    }
    for sink in committers(graph, builders, config)? {
        for part in restore.parts(&sink.key)? {
            sink.committer
                .commit_part(&part.data)
                .map_err(|e| e.in_operator(&sink.name))?;
        }
        sink.committer
            .recover()
            .map_err(|e| e.in_operator(&sink.name))?;
    }
    Ok(())
}

/// The job's checkpoint store, if it checkpoints: parts of checkpoints that never completed
/// (a crash while writing them) and any checkpoint past the one restored from are not part
/// of this run's history and are removed.
fn prepare_checkpoints(
    config: &ExecutionConfig,
    start_epoch: Epoch,
    restore: Option<&Restore>,
) -> Result<Option<CheckpointStore>> {
    let Some(c) = &config.checkpointing else {
        return Ok(None);
    };
    let store = CheckpointStore::of(c)?;
    store.prepare_run(start_epoch, restore.map(|r| &r.dir))?;
    Ok(Some(store))
}

/// Where RocksDB instances live: under the configured directory, or a temporary one removed
/// at the end of the job (kept alive by the returned guard).
fn state_root(
    job_name: &str,
    backend: &StateBackend,
) -> Result<(PathBuf, Option<tempfile::TempDir>)> {
    Ok(match backend {
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
    })
}

/// Runs every worker of this process (threads, connected to the other processes of a
/// cluster) on the compiled graph until the dataflow ends; returns the first worker's panic.
fn run_workers(config: &ExecutionConfig, settings: CompileSettings) -> Result<Option<String>> {
    let workers = settings.graph.workers() as usize;
    let (builders, others) = match &config.cluster {
        None if workers == 1 => CommunicationConfig::Thread
            .try_build()
            .map_err(Error::Cluster)?,
        None => CommunicationConfig::Process(workers)
            .try_build()
            .map_err(Error::Cluster)?,
        Some(cluster) => connect(cluster, workers / cluster.hosts.len())?,
    };
    let guards =
        timely::execute::execute_from(builders, others, WorkerConfig::default(), move |worker| {
            let index = worker.index();
            let settings = settings.clone();
            worker.dataflow::<Time, _, _>(move |scope| compile(scope, index, settings));
        })
        .map_err(Error::Cluster)?;
    // Joining the workers also joins timely's network threads (dropping its guard), which
    // panics when a network thread did: a connection to another process broke.
    let joined = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| guards.join()));
    let results = match joined {
        Ok(results) => results,
        Err(payload) if config.cluster.is_some() => {
            return Err(Error::PeerLost(format!(
                "a connection to another process broke ({})",
                panic_message(payload)
            )))
        }
        Err(payload) => std::panic::resume_unwind(payload),
    };
    let mut panicked = None;
    for result in results {
        if let Err(message) = result {
            panicked.get_or_insert(message);
        }
    }
    Ok(panicked)
}

/// The run's result once its workers ended: the first error an operator reported, a
/// worker's panic, or this process's metrics and the migrations of restored state.
fn outcome(job: &JobShared, panicked: Option<String>) -> Result<(Metrics, Vec<String>)> {
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
