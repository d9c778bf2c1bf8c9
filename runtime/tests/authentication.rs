//! Processes of a multi-process job authenticate each other before a batch is accepted: a job
//! whose processes share the secret runs; strangers connecting to a process of the job (one
//! with a wrong secret, one sending garbage, one replaying a recorded handshake) are refused
//! and the job still finishes with the right output.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test (or bench) panics on what it does not expect

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const SECRET: &str = "the secret every process of this job shares";
const CASE: &str = "tumbling_allowed_lateness";
/// hello (12 + 4 + 4 + 32) and the client's proof (32): what a client sends in a handshake.
const CLIENT_HANDSHAKE: usize = 84;

fn program() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_windowed_aggregate"))
}

fn case_file(ext: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/windowed")
        .join(format!("{CASE}.{ext}"))
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port()
}

fn process(hosts: &str, index: usize, secret: Option<&str>) -> Child {
    let args = std::fs::read_to_string(case_file("args")).expect("args");
    let mut cmd = Command::new(program());
    cmd.arg("--input")
        .arg(case_file("csv"))
        .args(args.split_whitespace())
        .args(["--parallelism", "2", "--state", "heap", "--hosts", hosts])
        .args(["--process", &index.to_string()])
        .env_remove("TYPEINFO_JOB_SECRET")
        .env_remove("TYPEINFO_JOB_SECRET_FILE")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(secret) = secret {
        cmd.env("TYPEINFO_JOB_SECRET", secret);
    }
    cmd.spawn().expect("spawn a process of the job")
}

fn connect(port: u16) -> TcpStream {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        match TcpStream::connect(("127.0.0.1", port)) {
            Ok(s) => return s,
            Err(e) if Instant::now() > deadline => panic!("process 0 never listened: {e}"),
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

fn sorted_lines(bytes: &[u8]) -> Vec<String> {
    let mut lines: Vec<String> = String::from_utf8_lossy(bytes)
        .lines()
        .map(str::to_owned)
        .collect();
    lines.sort();
    lines
}

fn expected() -> Vec<String> {
    sorted_lines(&std::fs::read(case_file("expected")).expect("expected output"))
}

/// Forwards connections from `listen` to `target` in both directions and records the first
/// bytes the connecting side sends.
fn recording_proxy(listen: TcpListener, target: u16) -> Arc<Mutex<Vec<u8>>> {
    let recorded = Arc::new(Mutex::new(Vec::new()));
    let rec = Arc::clone(&recorded);
    std::thread::spawn(move || {
        let Ok((client, _)) = listen.accept() else {
            return;
        };
        let server = connect(target);
        let (mut c_read, mut s_write) = (
            client.try_clone().expect("clone"),
            server.try_clone().expect("clone"),
        );
        let (mut s_read, mut c_write) = (server, client);
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            while let Ok(n) = c_read.read(&mut buf) {
                if n == 0 || s_write.write_all(&buf[..n]).is_err() {
                    break;
                }
                let mut r = rec.lock().expect("recording");
                let room = CLIENT_HANDSHAKE.saturating_sub(r.len());
                r.extend_from_slice(&buf[..n.min(room)]);
            }
            let _ = s_write.shutdown(std::net::Shutdown::Write);
        });
        let mut buf = [0u8; 8192];
        while let Ok(n) = s_read.read(&mut buf) {
            if n == 0 || c_write.write_all(&buf[..n]).is_err() {
                break;
            }
        }
        let _ = c_write.shutdown(std::net::Shutdown::Write);
    });
    recorded
}

fn finish(children: Vec<Child>) -> (Vec<u8>, String) {
    let (mut stdout, mut stderr) = (Vec::new(), String::new());
    for (i, child) in children.into_iter().enumerate() {
        let out = child.wait_with_output().expect("wait");
        stderr.push_str(&String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success(), "process {i} failed: {stderr}");
        stdout.extend_from_slice(&out.stdout);
    }
    (stdout, stderr)
}

#[test]
fn strangers_are_refused_and_the_job_still_finishes_with_the_right_output() {
    // A first run through a recording proxy: the job runs, and the proxy keeps what process 1
    // sent in its (accepted) handshake.
    let (p0, p1) = (free_port(), free_port());
    let proxy = TcpListener::bind("127.0.0.1:0").expect("bind the proxy");
    let proxy_port = proxy.local_addr().expect("addr").port();
    let first = process(&format!("127.0.0.1:{p0},127.0.0.1:{p1}"), 0, Some(SECRET));
    let recorded = recording_proxy(proxy, p0);
    let second = process(
        &format!("127.0.0.1:{proxy_port},127.0.0.1:{p1}"),
        1,
        Some(SECRET),
    );
    let (stdout, _) = finish(vec![first, second]);
    assert_eq!(
        sorted_lines(&stdout),
        expected(),
        "the job through the proxy"
    );
    let replay = recorded.lock().expect("recording").clone();
    assert_eq!(replay.len(), CLIENT_HANDSHAKE, "the recorded handshake");

    // The second run: process 0 waits for process 1; three strangers come first.
    let (p0, p1) = (free_port(), free_port());
    let hosts = format!("127.0.0.1:{p0},127.0.0.1:{p1}");
    let first = process(&hosts, 0, Some(SECRET));

    // 1. garbage
    let mut garbage = connect(p0);
    garbage.write_all(&[0x5a; 200]).expect("send garbage");
    let mut answer = Vec::new();
    let _ = garbage.read_to_end(&mut answer);
    assert!(answer.is_empty(), "garbage got an answer: {answer:?}");

    // 2. a replay of the recorded handshake: the server's fresh nonce makes it worthless.
    let mut replayer = connect(p0);
    replayer.write_all(&replay).expect("replay");
    let mut answer = Vec::new();
    let _ = replayer.read_to_end(&mut answer);
    assert!(
        answer.len() == 12 + 4 + 32 + 32,
        "the replay was answered with more than the challenge: {} bytes",
        answer.len()
    );

    // 3. a process of the job with a wrong secret: refused, and it says so itself.
    let impostor = process(&hosts, 1, Some("a wrong secret of the right length"));
    let out = impostor.wait_with_output().expect("wait");
    assert!(
        !out.status.success(),
        "a process with a wrong secret joined the job"
    );
    let why = String::from_utf8_lossy(&out.stderr);
    assert!(
        why.contains("did not prove that it knows the job secret"),
        "the impostor's error: {why}"
    );

    // The real process 1 joins, and the job gives the right output.
    let second = process(&hosts, 1, Some(SECRET));
    let (stdout, stderr) = finish(vec![first, second]);
    assert_eq!(
        sorted_lines(&stdout),
        expected(),
        "the job after the strangers"
    );
    assert_eq!(
        stderr.matches("refused a connection").count(),
        3,
        "process 0 reports each refusal: {stderr}"
    );
}

#[test]
fn a_multi_process_job_without_a_secret_does_not_start() {
    let hosts = format!("127.0.0.1:{},127.0.0.1:{}", free_port(), free_port());
    let out = process(&hosts, 0, None).wait_with_output().expect("wait");
    assert!(!out.status.success());
    let why = String::from_utf8_lossy(&out.stderr);
    assert!(why.contains("TYPEINFO_JOB_SECRET"), "{why}");
    let out = process(&hosts, 0, Some("short"))
        .wait_with_output()
        .expect("wait");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("at least 16"));
}

#[test]
fn a_process_whose_peer_has_another_secret_stops_with_a_clear_error() {
    let (p0, p1) = (free_port(), free_port());
    let hosts = format!("127.0.0.1:{p0},127.0.0.1:{p1}");
    let mut server = process(&hosts, 0, Some("process zero's secret, which differs"));
    let client = process(&hosts, 1, Some(SECRET));
    let out = client.wait_with_output().expect("wait");
    let _ = server.kill();
    let _ = server.wait();
    assert!(!out.status.success());
    let why = String::from_utf8_lossy(&out.stderr);
    assert!(
        why.contains("the handshake with process 0") && why.contains("job secret"),
        "{why}"
    );
}

/// What a stranger does on its connection until `stop` is set.
#[derive(Clone, Copy, Debug)]
enum Stranger {
    /// Sends the start of a handshake one byte at a time, every 200 ms.
    Trickles,
    /// Connects and sends nothing.
    Silent,
    /// Sends bytes that are no handshake, then waits.
    Garbage,
}

fn stranger(port: u16, kind: Stranger, stop: Arc<std::sync::atomic::AtomicBool>) {
    use std::sync::atomic::Ordering;
    let mut stream = connect(port);
    let hello = b"TYPEINFOJOB1\0\0\0\x01\0\0\0\x02";
    if let Stranger::Garbage = kind {
        let _ = stream.write_all(&[0xa5; 64]);
    }
    let mut sent = 0;
    while !stop.load(Ordering::Relaxed) {
        if let Stranger::Trickles = kind {
            let byte = hello[sent % hello.len()];
            if stream.write_all(&[byte]).is_err() {
                return; // cut off by the server's deadline
            }
            sent += 1;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Strangers that trickle a handshake a byte at a time, stay silent or send garbage, 24 of
/// them at once, each holding its connection open: process 0 handles each connection's
/// handshake on its own thread with a total deadline, so the real process 1 is accepted
/// while they wait, and the job gives its right output. (Handled one at a time with a
/// deadline per read, as before, a single trickler held the job up for good; with a total
/// deadline but one at a time, 24 strangers of 5 s each outlast the 60 s a process waits
/// for its peers.) The job's time with and without the strangers is printed, not asserted
/// (timings belong in benchmarks).
#[test]
fn strangers_that_trickle_stay_silent_or_send_garbage_do_not_hold_the_job_up() {
    let run = |strangers: usize| {
        let (p0, p1) = (free_port(), free_port());
        let hosts = format!("127.0.0.1:{p0},127.0.0.1:{p1}");
        let started = Instant::now();
        let first = process(&hosts, 0, Some(SECRET));
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let kinds = [Stranger::Trickles, Stranger::Silent, Stranger::Garbage];
        let threads: Vec<_> = (0..strangers)
            .map(|i| {
                let stop = Arc::clone(&stop);
                std::thread::spawn(move || stranger(p0, kinds[i % kinds.len()], stop))
            })
            .collect();
        // Every stranger has connected before the real process 1 starts.
        std::thread::sleep(Duration::from_millis(500));
        let second = process(&hosts, 1, Some(SECRET));
        let (stdout, stderr) = finish(vec![first, second]);
        let elapsed = started.elapsed();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for t in threads {
            t.join().expect("a stranger's thread");
        }
        assert_eq!(
            sorted_lines(&stdout),
            expected(),
            "the job with {strangers} strangers: {stderr}"
        );
        elapsed
    };
    let alone = run(0);
    let with_strangers = run(24);
    println!("two-process job alone: {alone:?}; with 24 strangers: {with_strangers:?}");
}
