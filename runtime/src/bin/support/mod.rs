//! What the programs share: the flags of a multi-process job, the progress line, and the
//! peak resident set the measuring programs report.
#![allow(dead_code)] // each program uses a part of this module

use std::time::Duration;

use std::path::PathBuf;

use typeinfo_runtime::{CheckpointConfig, Cluster, JobClient, JobResult, StateBackend};

/// Where a job keeps its state, and its checkpoints and restore.
#[derive(clap::Args, Debug, Clone)]
pub struct StateArgs {
    /// Where keyed state lives: heap or rocksdb.
    #[arg(long, default_value = "heap", value_parser = parse_state)]
    pub state: StateBackend,
    /// Checkpoints into this directory (a path or an object store URL).
    #[arg(long)]
    pub checkpoint_dir: Option<PathBuf>,
    /// Checkpoint interval, in ms.
    #[arg(long, default_value_t = 1000, requires = "checkpoint_dir")]
    pub checkpoint_interval_ms: u64,
    /// A checkpoint or savepoint to start from.
    #[arg(long)]
    pub restore: Option<PathBuf>,
}

impl StateArgs {
    /// The checkpoints these flags ask for, if any.
    pub fn checkpoints(&self) -> Option<CheckpointConfig> {
        self.checkpoint_dir.as_ref().map(|dir| {
            CheckpointConfig::new(dir, Duration::from_millis(self.checkpoint_interval_ms))
        })
    }
}

fn parse_state(s: &str) -> Result<StateBackend, String> {
    StateBackend::parse(s).map_err(|e| e.to_string())
}

/// The flags of a multi-process job (see [`Cluster::from_args`]); the job's secret comes
/// from the environment (`TYPEINFO_JOB_SECRET` or `TYPEINFO_JOB_SECRET_FILE`), never from a
/// flag.
#[derive(clap::Args, Debug, Clone)]
pub struct ClusterArgs {
    /// Every process of a multi-process job, `host:port,host:port,...` (the same list on
    /// every process); one process when absent.
    #[arg(long, requires = "process")]
    pub hosts: Option<String>,
    /// This process's index in --hosts.
    #[arg(long, requires = "hosts")]
    pub process: Option<usize>,
    /// How long a silent peer is waited for before the job fails, in ms (at least 1000;
    /// default 10000).
    #[arg(long, requires = "hosts")]
    pub peer_timeout_ms: Option<u64>,
}

impl ClusterArgs {
    /// The cluster these flags name, if any.
    pub fn cluster(&self) -> Result<Option<Cluster>, String> {
        let mut args = Vec::new();
        if let (Some(hosts), Some(process)) = (&self.hosts, self.process) {
            args.extend(["--hosts".to_owned(), hosts.clone()]);
            args.extend(["--process".to_owned(), process.to_string()]);
        }
        if let Some(ms) = self.peer_timeout_ms {
            args.extend(["--peer-timeout-ms".to_owned(), ms.to_string()]);
        }
        Cluster::from_args(&args).map_err(|e| e.to_string())
    }
}

/// Waits for a job's end; unless `quiet`, prints a progress line on stderr every two
/// seconds (records per second into the busiest operator, watermark, checkpoints).
pub fn finish(client: JobClient, quiet: bool) -> typeinfo_runtime::Result<JobResult> {
    if quiet {
        client.wait()
    } else {
        client.wait_reporting(Duration::from_secs(2))
    }
}

/// This process's peak resident set, in KiB (`VmHWM` of `/proc/self/status`).
pub fn peak_rss_kb() -> Result<u64, String> {
    let status = std::fs::read_to_string("/proc/self/status").map_err(|e| e.to_string())?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .ok_or_else(|| "no VmHWM in /proc/self/status".to_owned())
}
