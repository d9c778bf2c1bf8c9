//! The REST API: JSON about a running job and actions on it, in the shapes of Flink's REST
//! API where they fit, served by the job's HTTP server ([`crate::exec::server`]) beside
//! `/metrics` on [`ExecutionConfig::metrics_address`](crate::ExecutionConfig::metrics_address).
//!
//! | request | answer |
//! |---|---|
//! | `GET /jobs` | `{"jobs": [{"id", "status"}]}` |
//! | `GET /jobs/overview` | `{"jobs": [{"jid", "name", "state", "start-time", "duration"}]}` |
//! | `GET /jobs/<jid>` | the job: `jid`, `name`, `state`, `start-time`, `duration`, `now`, `process`, and `vertices`: per operator `id`, `name`, `parallelism`, `metrics` (`read-records`, `write-records`, their rates per second, `busy-time-ms-per-second`, `backpressured-time-ms-per-second`, `idle-time-ms-per-second` (the highest subtask's), `watermark` (the lowest subtask's input watermark), `state-size-bytes`), and `subtasks`: per subtask `read-records`, `write-records` |
//! | `GET /jobs/<jid>/plan` | `{"plan": {"jid", "name", "nodes": [{"id", "operator", "description", "parallelism", "uid", "inputs": [{"num", "id", "ship_strategy"}]}]}}` |
//! | `GET /jobs/<jid>/metrics` | every metric of this process: `{"counters", "gauges", "histograms"}` by the runtime's names |
//! | `GET /jobs/<jid>/checkpoints` | `{"counts": {"completed", "failed"}, "latest": {"completed"}, "history": [{"id", "status", "latest_ack_timestamp", "end_to_end_duration", "state_size", "savepoint"}]}`, newest first |
//! | `GET /jobs/<jid>/exceptions` | `{"entries": [{"timestamp", "message"}]}`, newest first |
//! | `PATCH /jobs/<jid>?mode=cancel` (or `POST /jobs/<jid>/cancel`) | cancels the job: `202` |
//! | `POST /jobs/<jid>/savepoints` with `{"target-directory": "<path or URL>"}` | asks for a savepoint: `202 {"target-directory"}` |
//! | `POST /jobs/<jid>/stop` with `{"targetDirectory": "<path or URL>"}` | stops the job with a savepoint: `202 {"targetDirectory"}` |
//!
//! `<jid>` is the job's id: 32 hex digits derived from its name, so every process of a job
//! answers to the same id (`GET /jobs` says it). Errors answer `{"errors": ["..."]}` with a
//! 4xx status: 400 for a malformed body, 401 without the secret, 404 for an unknown path or
//! job, 405 for a method a path does not take, 409 for an action the job cannot take
//! (a savepoint without checkpoints), 413 for a body over [`MAX_BODY`].
//!
//! **Who may ask.** When the server binds to a loopback address, every request is answered
//! (only this machine's users reach it). On any other address each request under `/jobs`
//! must carry the job's secret (`TYPEINFO_JOB_SECRET`, the one a multi-process job's
//! processes share) as `Authorization: Bearer <secret>`; without a secret configured, the
//! API refuses every such request (`/metrics` stays open, as Prometheus exporters are).
//!
//! **Several processes.** Each process serves its own API. The history of checkpoints is
//! the coordinator's (process 0); metrics are the answering process's. A savepoint, a stop
//! or a cancel asked of any process goes to the whole job through the checkpoint directory,
//! as `kill -USR1`/`-USR2` do (see [`crate::exec::signal`]).

use std::collections::BTreeMap;
use std::io::Read;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::{json, Value};

use crate::checkpoint::storage::Storage;
use crate::checkpoint::store::CheckpointStore;
use crate::job::{JobShared, JobStatus};
use crate::metrics::Metrics;
use crate::plan::StreamGraph;

/// The largest request body read (a savepoint's target fits many times over).
pub(crate) const MAX_BODY: usize = 64 << 10;

/// An answer: status and JSON.
pub(crate) type Answer = (u16, Value);

/// What the API knows of its job.
pub(crate) struct RestApi {
    pub(crate) job_name: String,
    pub(crate) jid: String,
    pub(crate) process: usize,
    pub(crate) job: Arc<JobShared>,
    pub(crate) graph: Arc<StreamGraph>,
    /// The checkpoint directory, when the job checkpoints.
    pub(crate) checkpoints: Option<PathBuf>,
    /// A job of several processes (actions go through the checkpoint directory).
    pub(crate) multi_process: bool,
    /// The job's secret, required off loopback.
    pub(crate) secret: Option<Vec<u8>>,
    /// The server listens on loopback only: no secret is asked for.
    pub(crate) loopback: bool,
    rates: Mutex<Rates>,
}

/// Counters' rates per second, from the last two samples at least a second apart.
#[derive(Default)]
struct Rates {
    sampled: Option<(Instant, BTreeMap<String, u64>)>,
    per_second: BTreeMap<String, f64>,
}

/// The job id of a job named `name`: the first 16 bytes of its SHA-256, in hex.
pub(crate) fn job_id(name: &str) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(name.as_bytes());
    digest[..16].iter().map(|b| format!("{b:02x}")).collect()
}

fn error(status: u16, message: impl Into<String>) -> Answer {
    (status, json!({ "errors": [message.into()] }))
}

/// Compares two byte strings in time independent of where they differ.
fn same_secret(given: &[u8], secret: &[u8]) -> bool {
    given.len() == secret.len()
        && given
            .iter()
            .zip(secret)
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
}

impl RestApi {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        job_name: &str,
        process: usize,
        job: Arc<JobShared>,
        graph: Arc<StreamGraph>,
        checkpoints: Option<PathBuf>,
        multi_process: bool,
        secret: Option<Vec<u8>>,
        loopback: bool,
    ) -> Self {
        RestApi {
            job_name: job_name.to_owned(),
            jid: job_id(job_name),
            process,
            job,
            graph,
            checkpoints,
            multi_process,
            secret,
            loopback,
            rates: Mutex::new(Rates::default()),
        }
    }

    /// Answers a request under `/jobs`.
    pub(crate) fn handle(&self, request: &mut tiny_http::Request) -> Answer {
        if !self.loopback {
            let given = request
                .headers()
                .iter()
                .find(|h| h.field.equiv("Authorization"))
                .and_then(|h| h.value.as_str().strip_prefix("Bearer "))
                .map(|s| s.trim().as_bytes().to_vec());
            match (&self.secret, given) {
                (None, _) => {
                    return error(
                        401,
                        "this API is not on loopback and the job has no secret: set TYPEINFO_JOB_SECRET",
                    )
                }
                (Some(secret), Some(given)) if same_secret(&given, secret) => {}
                (Some(_), _) => {
                    return error(401, "the job's secret is needed: Authorization: Bearer <secret>")
                }
            }
        }
        let url = request.url().to_owned();
        let (path, query) = url.split_once('?').unwrap_or((&url, ""));
        let parts: Vec<&str> = path.trim_end_matches('/').split('/').skip(1).collect();
        let method = request.method().clone();
        use tiny_http::Method::{Get, Patch, Post};
        match (parts.as_slice(), &method) {
            (["jobs"], Get) => (
                200,
                json!({ "jobs": [{ "id": self.jid, "status": state(self.job.status()) }] }),
            ),
            (["jobs", "overview"], Get) => (200, json!({ "jobs": [self.overview()] })),
            (["jobs", jid, rest @ ..], _) if *jid != self.jid => {
                let _ = rest;
                error(404, format!("no job {jid} here: this is job {}", self.jid))
            }
            (["jobs", _], Get) => (200, self.details()),
            (["jobs", _], Patch) if query.split('&').any(|q| q == "mode=cancel") => self.cancel(),
            (["jobs", _, "cancel"], Post) => self.cancel(),
            (["jobs", _, "plan"], Get) => (200, json!({ "plan": self.plan() })),
            (["jobs", _, "metrics"], Get) => (200, metrics_json(&self.job.metrics.snapshot())),
            (["jobs", _, "checkpoints"], Get) => (200, self.checkpoints_json()),
            (["jobs", _, "exceptions"], Get) => (200, self.exceptions()),
            (["jobs", _, "savepoints"], Post) => match read_target(request, "target-directory") {
                Ok(dir) => self.save(dir, false, "target-directory"),
                Err(answer) => answer,
            },
            (["jobs", _, "stop"], Post) => match read_target(request, "targetDirectory") {
                Ok(dir) => self.save(dir, true, "targetDirectory"),
                Err(answer) => answer,
            },
            (["jobs", ..], _) if self.known_path(&parts) => {
                error(405, format!("{method} is not taken by {path}"))
            }
            _ => error(404, format!("unknown path {path}")),
        }
    }

    fn known_path(&self, parts: &[&str]) -> bool {
        matches!(parts, ["jobs"] | ["jobs", "overview"] | ["jobs", _])
            || matches!(
                parts,
                [
                    "jobs",
                    _,
                    "cancel"
                        | "plan"
                        | "metrics"
                        | "checkpoints"
                        | "exceptions"
                        | "savepoints"
                        | "stop"
                ]
            )
    }

    fn overview(&self) -> Value {
        let started = self.job.history().started_ms;
        json!({
            "jid": self.jid,
            "name": self.job_name,
            "state": state(self.job.status()),
            "start-time": started,
            "duration": crate::job::unix_ms().saturating_sub(started),
            "process": self.process,
        })
    }

    fn details(&self) -> Value {
        let metrics = self.job.metrics.snapshot();
        let rates = self.rates(&metrics);
        let vertices: Vec<Value> = self
            .graph
            .nodes()
            .iter()
            .map(|n| {
                let name = n.name();
                let counter = |m: &str| metrics.counter(&format!("{name}.{m}"));
                let rate = |m: &str| rates.get(&format!("{name}.{m}")).copied().unwrap_or(0.0);
                let subtasks = |m: &str| -> Vec<i64> {
                    (0..n.parallelism())
                        .filter_map(|i| metrics.gauges.get(&format!("{name}[{i}].{m}")).copied())
                        .collect()
                };
                let highest = |m: &str| subtasks(m).into_iter().max();
                let per_subtask: Vec<Value> = (0..n.parallelism())
                    .map(|i| {
                        let c = |m: &str| metrics.counter(&format!("{name}[{i}].{m}"));
                        json!({
                            "subtask": i,
                            "read-records": c("numRecordsIn"),
                            "write-records": c("numRecordsOut"),
                        })
                    })
                    .collect();
                json!({
                    "id": n.id(),
                    "name": name,
                    "uid": n.uid(),
                    "parallelism": n.parallelism(),
                    "subtasks": per_subtask,
                    "metrics": {
                        "read-records": counter("numRecordsIn"),
                        "write-records": counter("numRecordsOut"),
                        "read-records-per-second": rate("numRecordsIn"),
                        "write-records-per-second": rate("numRecordsOut"),
                        "busy-time-ms-per-second": highest("busyTimeMsPerSecond"),
                        "backpressured-time-ms-per-second": highest("backPressuredTimeMsPerSecond"),
                        "idle-time-ms-per-second": highest("idleTimeMsPerSecond"),
                        "watermark": subtasks("currentInputWatermark").into_iter().min(),
                        "state-size-bytes": metrics.gauges.get(&format!("{name}.stateSizeBytes")),
                    },
                })
            })
            .collect();
        let mut out = self.overview();
        out["now"] = json!(crate::job::unix_ms());
        out["vertices"] = Value::Array(vertices);
        out
    }

    /// Every counter's rate per second, resampled when the last sample is a second old.
    fn rates(&self, metrics: &Metrics) -> BTreeMap<String, f64> {
        let mut rates = self.rates.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        match &rates.sampled {
            Some((at, before)) if now.duration_since(*at).as_secs_f64() >= 1.0 => {
                let seconds = now.duration_since(*at).as_secs_f64();
                rates.per_second = metrics
                    .counters
                    .iter()
                    .map(|(name, value)| {
                        let was = before.get(name).copied().unwrap_or(0);
                        (name.clone(), value.saturating_sub(was) as f64 / seconds)
                    })
                    .collect();
                rates.sampled = Some((now, metrics.counters.clone()));
            }
            Some(_) => {}
            None => rates.sampled = Some((now, metrics.counters.clone())),
        }
        rates.per_second.clone()
    }

    fn plan(&self) -> Value {
        let nodes: Vec<Value> = self
            .graph
            .nodes()
            .iter()
            .map(|n| {
                let inputs: Vec<Value> = self
                    .graph
                    .edges()
                    .iter()
                    .filter(|e| e.target() == n.id())
                    .enumerate()
                    .map(|(num, e)| {
                        json!({
                            "num": num,
                            "id": e.source(),
                            "ship_strategy": e.partitioner().to_string(),
                        })
                    })
                    .collect();
                json!({
                    "id": n.id(),
                    "operator": n.name(),
                    "description": n.description(),
                    "parallelism": n.parallelism(),
                    "uid": n.uid(),
                    "inputs": inputs,
                })
            })
            .collect();
        json!({ "jid": self.jid, "name": self.job_name, "nodes": nodes })
    }

    fn checkpoints_json(&self) -> Value {
        let history = self.job.history();
        let entry = |c: &crate::job::CheckpointRecord| {
            json!({
                "id": c.id,
                "status": "COMPLETED",
                "latest_ack_timestamp": c.completed_ms,
                "end_to_end_duration": c.duration_ms,
                "state_size": c.bytes,
                "savepoint": c.savepoint,
            })
        };
        let metrics = self.job.metrics.snapshot();
        json!({
            "counts": {
                "completed": metrics.counter("job.numCompletedCheckpoints"),
                "failed": metrics.counter("job.numFailedCheckpoints"),
            },
            "latest": { "completed": history.checkpoints.back().map(entry) },
            "history": history.checkpoints.iter().rev().map(entry).collect::<Vec<_>>(),
        })
    }

    fn exceptions(&self) -> Value {
        let history = self.job.history();
        let entries: Vec<Value> = history
            .exceptions
            .iter()
            .rev()
            .map(|e| json!({ "timestamp": e.timestamp_ms, "message": e.message }))
            .collect();
        json!({ "entries": entries })
    }

    fn running(&self) -> Option<Answer> {
        match self.job.status() {
            JobStatus::Running | JobStatus::Restarting => None,
            other => Some(error(409, format!("the job is {}", state(other)))),
        }
    }

    fn store(&self) -> Result<CheckpointStore, Answer> {
        let Some(dir) = &self.checkpoints else {
            return Err(error(
                409,
                "a savepoint is a checkpoint: the job runs without checkpoints",
            ));
        };
        CheckpointStore::open(dir).map_err(|e| error(500, e.to_string()))
    }

    fn cancel(&self) -> Answer {
        if let Some(refused) = self.running() {
            return refused;
        }
        if self.multi_process {
            if let Ok(store) = self.store() {
                if let Err(e) = store.request_cancel() {
                    return error(500, e.to_string());
                }
            }
        }
        self.job.cancel();
        (202, json!({}))
    }

    /// A savepoint (`stop`: and then the job stops) into `dir`, answered with `field`.
    fn save(&self, dir: PathBuf, stop: bool, field: &str) -> Answer {
        if let Some(refused) = self.running() {
            return refused;
        }
        let store = match self.store() {
            Ok(store) => store,
            Err(answer) => return answer,
        };
        if let Err(e) = Storage::open(&dir) {
            return error(400, e.to_string());
        }
        if self.multi_process {
            let asked = if stop {
                store.request_stop(&dir)
            } else {
                store.request_savepoint(&dir)
            };
            if let Err(e) = asked {
                return error(500, e.to_string());
            }
        }
        if stop {
            self.job.request_stop(dir.clone());
        } else if !self.multi_process {
            let mut request = self.job.request();
            request.id += 1;
            request.dir = Some(dir.clone());
            request.after_epoch = None;
            request.result = None;
        }
        (202, json!({ field: dir.display().to_string() }))
    }
}

/// The savepoint target `field` of a JSON body of at most [`MAX_BODY`] bytes.
fn read_target(request: &mut tiny_http::Request, field: &str) -> Result<PathBuf, Answer> {
    if request.body_length().is_some_and(|n| n > MAX_BODY) {
        return Err(error(413, format!("a body of at most {MAX_BODY} bytes")));
    }
    let mut body = Vec::new();
    let read = request
        .as_reader()
        .take(MAX_BODY as u64 + 1)
        .read_to_end(&mut body);
    if read.is_err() {
        return Err(error(400, "the body could not be read"));
    }
    if body.len() > MAX_BODY {
        return Err(error(413, format!("a body of at most {MAX_BODY} bytes")));
    }
    let value: Value = serde_json::from_slice(&body)
        .map_err(|e| error(400, format!("the body is not JSON: {e}")))?;
    match value.get(field).and_then(Value::as_str) {
        Some(dir) if !dir.is_empty() => Ok(PathBuf::from(dir)),
        _ => Err(error(
            400,
            format!("the body needs {{\"{field}\": \"<path or URL>\"}}"),
        )),
    }
}

/// Flink's names of job states.
fn state(status: JobStatus) -> &'static str {
    match status {
        JobStatus::Running => "RUNNING",
        JobStatus::Restarting => "RESTARTING",
        JobStatus::Finished => "FINISHED",
        JobStatus::Failed => "FAILED",
        JobStatus::Cancelled => "CANCELED",
    }
}

fn metrics_json(metrics: &Metrics) -> Value {
    let histograms: serde_json::Map<String, Value> = metrics
        .histograms
        .iter()
        .map(|(name, s)| {
            (
                name.clone(),
                json!({ "count": s.count, "min": s.min, "max": s.max, "mean": s.mean, "p50": s.p50, "p99": s.p99 }),
            )
        })
        .collect();
    json!({
        "counters": metrics.counters,
        "gauges": metrics.gauges,
        "histograms": histograms,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_id_is_32_hex_digits_of_its_name() {
        let id = job_id("orders per minute");
        assert_eq!(id.len(), 32);
        assert!(id.bytes().all(|b| b.is_ascii_hexdigit()));
        assert_eq!(id, job_id("orders per minute"));
        assert_ne!(id, job_id("orders per hour"));
    }

    #[test]
    fn secrets_compare_whole() {
        assert!(same_secret(b"abc", b"abc"));
        assert!(!same_secret(b"abd", b"abc"));
        assert!(!same_secret(b"ab", b"abc"));
    }
}
