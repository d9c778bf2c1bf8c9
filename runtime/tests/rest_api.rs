//! The REST API of a running job (`runtime/src/exec/rest.rs`), asked over real HTTP:
//! status, plan, metrics, checkpoints and exceptions of a running job; a savepoint, a
//! stop with a savepoint and a cancel, in one process and in two; every request refused
//! without the job's secret when the server is not on loopback; malformed requests,
//! unknown paths, huge bodies and slow clients answered with a 4xx (or left to themselves)
//! while the job goes on.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test (or bench) panics on what it does not expect

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use typeinfo_runtime::{CheckpointConfig, Error, JobClient, StreamExecutionEnvironment};

mod common;

const SECRET: &str = "the secret every process of this job shares";

use common::free_port;

/// One request to loopback `port`: (status, body as JSON or `Null`).
fn call(port: u16, method: &str, path: &str, secret: Option<&str>, body: &str) -> (u16, Value) {
    let auth: Vec<String> = secret
        .map(|s| format!("Authorization: Bearer {s}"))
        .into_iter()
        .collect();
    let (status, body) = common::http(port, method, path, &auth, body)
        .unwrap_or_else(|| panic!("no HTTP answer to {method} {path}"));
    (status, serde_json::from_str(&body).unwrap_or(Value::Null))
}

fn get(port: u16, path: &str) -> (u16, Value) {
    call(port, "GET", path, None, "")
}

/// Waits until `f` holds, at most a minute.
fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !f() {
        assert!(Instant::now() < deadline, "{what}: not within a minute");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A slow keyed job with checkpoints every 100 ms, serving on loopback `port`.
fn slow_job(port: u16, checkpoints: &Path) -> (StreamExecutionEnvironment, Vec<String>) {
    let env = StreamExecutionEnvironment::new();
    env.set_parallelism(2)
        .enable_checkpointing(CheckpointConfig::new(
            checkpoints,
            Duration::from_millis(100),
        ))
        .set_metrics_address(SocketAddr::from(([127, 0, 0, 1], port)));
    env.from_generator(10_000_000, |i| {
        if i % 20 == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
        (i % 100, 1u64)
    })
    .uid("numbers")
    .key_by(|r: &(u64, u64)| r.0)
    .reduce(|a, b| (a.0, a.1 + b.1))
    .uid("sums")
    .add_sink(|_| {});
    let names = env
        .stream_graph()
        .unwrap()
        .nodes()
        .iter()
        .map(|n| n.name().to_owned())
        .collect();
    (env, names)
}

fn jid(port: u16) -> String {
    let (status, jobs) = get(port, "/jobs");
    assert_eq!(status, 200, "{jobs}");
    let id = jobs["jobs"][0]["id"].as_str().unwrap().to_owned();
    assert_eq!(id.len(), 32, "{id}");
    id
}

#[test]
fn a_running_job_answers_status_plan_metrics_and_checkpoints_then_takes_a_savepoint_and_stops() {
    let port = free_port();
    let work = tempfile::tempdir().unwrap();
    let (env, operators) = slow_job(port, &work.path().join("checkpoints"));
    let client = env.execute_async("rest test").unwrap();
    eventually("the server answers", || {
        TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    let jid = jid(port);

    let (status, overview) = get(port, "/jobs/overview");
    assert_eq!(status, 200);
    assert_eq!(overview["jobs"][0]["name"], "rest test");
    assert_eq!(overview["jobs"][0]["state"], "RUNNING");

    // The plan: every operator of the job's graph, and the keyed edge hashes.
    let (status, plan) = get(port, &format!("/jobs/{jid}/plan"));
    assert_eq!(status, 200, "{plan}");
    let nodes = plan["plan"]["nodes"].as_array().unwrap();
    let mut named: Vec<String> = nodes
        .iter()
        .map(|n| n["operator"].as_str().unwrap().to_owned())
        .collect();
    named.sort();
    let mut want = operators.clone();
    want.sort();
    assert_eq!(named, want);
    assert!(
        nodes
            .iter()
            .flat_map(|n| n["inputs"].as_array().unwrap())
            .any(|i| i["ship_strategy"] == "HASH"),
        "{plan}"
    );

    // Records per second: a rate over at least a second, positive while the job runs.
    eventually("a records-out rate", || {
        let (_, job) = get(port, &format!("/jobs/{jid}"));
        job["vertices"].as_array().is_some_and(|vs| {
            vs.iter().any(|v| {
                v["metrics"]["write-records-per-second"]
                    .as_f64()
                    .is_some_and(|r| r > 0.0)
            })
        })
    });
    let (_, job) = get(port, &format!("/jobs/{jid}"));
    assert_eq!(job["vertices"].as_array().unwrap().len(), operators.len());
    for v in job["vertices"].as_array().unwrap() {
        let subtasks = v["subtasks"].as_array().unwrap();
        assert_eq!(subtasks.len() as u64, v["parallelism"].as_u64().unwrap());
    }
    assert!(
        job["vertices"]
            .as_array()
            .unwrap()
            .iter()
            .any(|v| v["subtasks"]
                .as_array()
                .unwrap()
                .iter()
                .any(|s| s["write-records"].as_u64().is_some_and(|n| n > 0))),
        "some subtask wrote records: {job}"
    );

    let (status, metrics) = get(port, &format!("/jobs/{jid}/metrics"));
    assert_eq!(status, 200);
    assert!(metrics["counters"]
        .as_object()
        .unwrap()
        .keys()
        .any(|k| k.ends_with(".numRecordsOut")));

    eventually("a completed checkpoint in the history", || {
        let (_, c) = get(port, &format!("/jobs/{jid}/checkpoints"));
        c["history"].as_array().is_some_and(|h| !h.is_empty())
            && c["counts"]["completed"].as_u64().is_some_and(|n| n >= 1)
    });
    let (_, c) = get(port, &format!("/jobs/{jid}/checkpoints"));
    assert_eq!(c["latest"]["completed"]["status"], "COMPLETED");
    let (status, exceptions) = get(port, &format!("/jobs/{jid}/exceptions"));
    assert_eq!(
        (status, exceptions["entries"].as_array().unwrap().len()),
        (200, 0)
    );

    // Bad requests: 4xx, and the job runs on.
    assert_eq!(get(port, "/nothing/here").0, 404);
    assert_eq!(get(port, "/jobs/0123456789abcdef0123456789abcdef").0, 404);
    assert_eq!(
        call(port, "DELETE", &format!("/jobs/{jid}/plan"), None, "").0,
        405
    );
    let savepoints = format!("/jobs/{jid}/savepoints");
    assert_eq!(call(port, "POST", &savepoints, None, "{not json").0, 400);
    assert_eq!(
        call(port, "POST", &savepoints, None, "{\"target\": 1}").0,
        400
    );
    assert_eq!(huge_body(port, &savepoints), 413);
    let slow = slow_client(port);
    let began = Instant::now();
    assert_eq!(get(port, &format!("/jobs/{jid}")).0, 200);
    assert!(
        began.elapsed() < Duration::from_secs(5),
        "a slow client held up the server"
    );
    drop(slow);
    assert_eq!(client.status(), typeinfo_runtime::JobStatus::Running);

    // A savepoint, then a stop with a savepoint.
    let sp = work.path().join("savepoint");
    let body = format!("{{\"target-directory\": {:?}}}", sp.display().to_string());
    let (status, answer) = call(port, "POST", &savepoints, None, &body);
    assert_eq!(status, 202, "{answer}");
    eventually("the savepoint", || sp.join("_metadata").is_file());
    let stopped = work.path().join("stopped");
    let body = format!(
        "{{\"targetDirectory\": {:?}}}",
        stopped.display().to_string()
    );
    let (status, answer) = call(port, "POST", &format!("/jobs/{jid}/stop"), None, &body);
    assert_eq!(status, 202, "{answer}");
    let result = wait_for(client);
    assert!(stopped.join("_metadata").is_file(), "the stop's savepoint");
    // At the end, records per subtask add up to the operator's, for every operator.
    for operator in &operators {
        for m in ["numRecordsIn", "numRecordsOut"] {
            let total = result.metric(&format!("{operator}.{m}"));
            let parts: u64 = (0..2)
                .map(|i| result.metric(&format!("{operator}[{i}].{m}")))
                .sum();
            assert_eq!(parts, total, "{operator}.{m}");
        }
    }
}

fn wait_for(client: JobClient) -> typeinfo_runtime::JobResult {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !client.is_finished() {
        assert!(Instant::now() < deadline, "the job did not end");
        std::thread::sleep(Duration::from_millis(20));
    }
    client.wait().unwrap()
}

/// A request that announces a 10 MB body: its status.
fn huge_body(port: u16, path: &str) -> u16 {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    write!(
        stream,
        "POST {path} HTTP/1.0\r\nHost: x\r\nContent-Length: 10000000\r\n\r\n{{\"target-directory\": \""
    )
    .unwrap();
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    response
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

/// A client that sends half a request and then nothing.
fn slow_client(port: u16) -> TcpStream {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(stream, "GET /jobs HTTP/1.1\r\nHost: 127.").unwrap();
    stream
}

#[test]
fn a_cancel_over_rest_cancels_the_job() {
    let port = free_port();
    let work = tempfile::tempdir().unwrap();
    let (env, _) = slow_job(port, &work.path().join("checkpoints"));
    let client = env.execute_async("cancel test").unwrap();
    eventually("the server answers", || {
        TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    let jid = jid(port);
    let (status, answer) = call(port, "PATCH", &format!("/jobs/{jid}?mode=cancel"), None, "");
    assert_eq!(status, 202, "{answer}");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !client.is_finished() {
        assert!(Instant::now() < deadline, "not cancelled");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(matches!(client.wait(), Err(Error::Cancelled)));
}

fn program() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_orders_per_minute"))
}

/// The main demo's job at 2,000 orders a second with checkpoints, serving on `port` (on
/// every address: not loopback), as process `process` of `hosts` when given.
fn demo(work: &Path, port: u16, cluster: Option<(&str, usize)>) -> Child {
    let mut c = Command::new(program());
    c.args([
        "run",
        "--version",
        "1",
        "--orders",
        "200000",
        "--orders-per-second",
        "2000",
    ])
    .args(["--parallelism", "2", "--state", "rocksdb", "--output"])
    .arg(work.join("output"))
    .args(["--checkpoint-interval-ms", "100", "--checkpoint-dir"])
    .arg(work.join("checkpoints"))
    .args(["--metrics-port", &port.to_string()])
    .env("TYPEINFO_JOB_SECRET", SECRET)
    .env_remove("TYPEINFO_JOB_SECRET_FILE")
    .stdout(Stdio::null())
    .stderr(Stdio::piped());
    if let Some((hosts, process)) = cluster {
        c.args(["--hosts", hosts, "--process", &process.to_string()]);
    }
    c.spawn().unwrap()
}

fn serving(port: u16) {
    eventually("the server answers", || {
        TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
}

fn ended(mut child: Child, within: Duration) -> std::process::Output {
    let deadline = Instant::now() + within;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() >= deadline {
            let _ = child.kill();
            panic!("the process did not end within {within:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

#[test]
fn off_loopback_every_request_needs_the_secret() {
    let work = tempfile::tempdir().unwrap();
    let port = free_port();
    let child = demo(work.path(), port, None);
    serving(port);
    for (method, path) in [
        ("GET", "/jobs".to_owned()),
        ("GET", "/jobs/overview".to_owned()),
        ("POST", "/jobs/x/stop".to_owned()),
    ] {
        assert_eq!(
            call(port, method, &path, None, "{}").0,
            401,
            "{method} {path}"
        );
        assert_eq!(
            call(
                port,
                method,
                &path,
                Some("a wrong secret of some length"),
                "{}"
            )
            .0,
            401
        );
    }
    let (status, jobs) = call(port, "GET", "/jobs", Some(SECRET), "");
    assert_eq!(status, 200);
    let jid = jobs["jobs"][0]["id"].as_str().unwrap().to_owned();
    for (method, path) in [
        ("PATCH", format!("/jobs/{jid}?mode=cancel")),
        ("POST", format!("/jobs/{jid}/cancel")),
    ] {
        assert_eq!(
            call(port, method, &path, None, "").0,
            401,
            "{method} {path}"
        );
    }
    let body = format!(
        "{{\"target-directory\": {:?}}}",
        work.path().join("sp").display().to_string()
    );
    assert_eq!(
        call(
            port,
            "POST",
            &format!("/jobs/{jid}/savepoints"),
            None,
            &body
        )
        .0,
        401
    );
    // Prometheus' endpoint stays open; the job still runs after all of that.
    assert_eq!(call(port, "GET", "/metrics", None, "").0, 200);
    assert_eq!(
        call(port, "GET", &format!("/jobs/{jid}"), Some(SECRET), "").1["state"],
        "RUNNING"
    );
    let (status, _) = call(
        port,
        "POST",
        &format!("/jobs/{jid}/cancel"),
        Some(SECRET),
        "",
    );
    assert_eq!(status, 202);
    let out = ended(child, Duration::from_secs(30));
    assert!(
        !out.status.success(),
        "a cancelled job does not end with success"
    );
    assert!(
        !work.path().join("sp").exists(),
        "no savepoint without the secret"
    );
}

/// The demo in two processes, each serving on a port of its own, once both answer (to the
/// job's one id, which they must share) and a checkpoint completed: (processes, ports, id).
fn two_processes(w: &Path) -> (Vec<Child>, [u16; 2], String) {
    let hosts = common::loopback_hosts(2);
    let ports = [free_port(), free_port()];
    let children: Vec<Child> = (0..2)
        .map(|i| demo(w, ports[i], Some((&hosts, i))))
        .collect();
    let ids: Vec<String> = ports
        .iter()
        .map(|&port| {
            serving(port);
            call(port, "GET", "/jobs", Some(SECRET), "").1["jobs"][0]["id"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(ids[0], ids[1], "every process answers to the job's one id");
    eventually("a completed checkpoint", || {
        common::has_completed_checkpoint(&w.join("checkpoints"))
    });
    (children, ports, ids[0].clone())
}

#[test]
fn two_processes_take_a_savepoint_and_stop_with_one_asked_of_either() {
    let work = tempfile::tempdir().unwrap();
    let w = work.path();
    let (children, ports, jid) = two_processes(w);
    // A savepoint asked of process 1: process 0's coordinator writes it.
    let sp = w.join("savepoint");
    let body = format!("{{\"target-directory\": {:?}}}", sp.display().to_string());
    let (status, answer) = call(
        ports[1],
        "POST",
        &format!("/jobs/{jid}/savepoints"),
        Some(SECRET),
        &body,
    );
    assert_eq!(status, 202, "{answer}");
    eventually("the savepoint", || sp.join("_metadata").is_file());
    // The coordinator notes a checkpoint in its history once everything it does for it is
    // done, the savepoint's copy included: the file can be seen a moment before the entry.
    let shown = Instant::now() + Duration::from_secs(10);
    loop {
        let (_, c) = call(
            ports[0],
            "GET",
            &format!("/jobs/{jid}/checkpoints"),
            Some(SECRET),
            "",
        );
        if c["history"]
            .as_array()
            .unwrap()
            .iter()
            .any(|h| h["savepoint"] == true)
        {
            break;
        }
        assert!(
            Instant::now() < shown,
            "the coordinator's history shows the savepoint: {c}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // A stop asked of process 1 ends both, with success.
    let stopped = w.join("stopped");
    let body = format!(
        "{{\"targetDirectory\": {:?}}}",
        stopped.display().to_string()
    );
    let (status, answer) = call(
        ports[1],
        "POST",
        &format!("/jobs/{jid}/stop"),
        Some(SECRET),
        &body,
    );
    assert_eq!(status, 202, "{answer}");
    for (i, child) in children.into_iter().enumerate() {
        let out = ended(child, Duration::from_secs(60));
        assert!(
            out.status.success(),
            "process {i}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert!(
        stopped.join("_metadata").is_file(),
        "one savepoint of the stop"
    );
}

#[test]
fn a_cancel_asked_of_one_process_ends_both() {
    let work = tempfile::tempdir().unwrap();
    let w = work.path();
    let (children, ports, jid) = two_processes(w);
    let (status, _) = call(
        ports[1],
        "PATCH",
        &format!("/jobs/{jid}?mode=cancel"),
        Some(SECRET),
        "",
    );
    assert_eq!(status, 202);
    for child in children {
        let out = ended(child, Duration::from_secs(30));
        assert!(!out.status.success());
    }
}
