//! What the programs share: the flags of a multi-process job, the progress line, and the
//! peak resident set the measuring programs report.
#![allow(dead_code)] // each program uses a part of this module

use std::time::Duration;

use typeinfo_runtime::{Cluster, JobClient, JobResult};

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
