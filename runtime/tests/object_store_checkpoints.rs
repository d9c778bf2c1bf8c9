//! Checkpoints and savepoints on an object store, against a real S3-compatible server
//! (`moto_server`, from PyPI's `moto[server]`, which `./dev setup` installs) started by this
//! test on the loopback interface: a two-process job checkpoints to a bucket, is killed with
//! SIGKILL, and restores from the bucket with its committed output equal to a failure-free
//! run's; a savepoint written to the bucket restores at another parallelism on the other
//! state backend; and what is in the bucket is what the layout promises (every object a
//! retained checkpoint refers to is there, nothing of an incomplete checkpoint is taken for
//! complete).
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test (or bench) panics on what it does not expect

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use typeinfo_runtime::native_part::NativePart;
use typeinfo_runtime::storage::Storage;

mod common;
use common::{failure_free_output, published};

const ORDERS: &str = "30000";
const BUCKET: &str = "typeinfo";

fn example() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_orders_per_minute"))
}

/// A `moto_server` on a free loopback port, killed when dropped.
struct S3Server {
    child: Child,
    endpoint: String,
}

impl S3Server {
    fn start(logs: &Path) -> Self {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        // `./dev` installs it into a virtual environment of its own and says where.
        let moto = std::env::var_os("TYPEINFO_MOTO_SERVER").unwrap_or_else(|| "moto_server".into());
        let child = Command::new(moto)
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdout(std::fs::File::create(logs.join("moto.log")).unwrap())
            .stderr(std::fs::File::create(logs.join("moto.err")).unwrap())
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot start moto_server ({e}): the S3-compatible test server comes from \
                     PyPI's `moto[server]`; `./dev setup` installs it"
                )
            });
        let server = S3Server {
            child,
            endpoint: format!("http://127.0.0.1:{port}"),
        };
        let until = Instant::now() + Duration::from_secs(60);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < until,
                "moto_server did not start listening"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        server.create_bucket(port);
        server
    }

    /// Creates the bucket with a plain `PUT /<bucket>` (the object store client has no
    /// bucket management, and moto accepts unsigned requests).
    fn create_bucket(&self, port: u16) {
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        write!(
            s,
            "PUT /{BUCKET} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut response = String::new();
        s.read_to_string(&mut response).unwrap();
        assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    }

    /// The environment that points a job's S3 client at this server.
    fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("AWS_ENDPOINT", self.endpoint.clone()),
            ("AWS_ALLOW_HTTP", "true".into()),
            ("AWS_ACCESS_KEY_ID", "typeinfo-test".into()),
            ("AWS_SECRET_ACCESS_KEY", "typeinfo-test".into()),
            ("AWS_REGION", "us-east-1".into()),
        ]
    }

    /// This test's own view of `s3://<bucket>/<prefix>`.
    fn storage(&self, prefix: &str) -> Storage {
        let options: Vec<(String, String)> = self
            .env()
            .into_iter()
            .map(|(k, v)| (k.to_ascii_lowercase(), v))
            .collect();
        Storage::open_with(&format!("s3://{BUCKET}/{prefix}"), options).unwrap()
    }
}

impl Drop for S3Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One run of the `orders_per_minute` job's version 1 (`extra` adds arguments).
fn job(server: &S3Server, logs: &Path, name: &str, args: &[&str]) -> Command {
    let mut cmd = Command::new(example());
    cmd.args(["run", "--version", "1", "--orders", ORDERS])
        .args(args)
        .envs(server.env())
        .env("TMPDIR", logs)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(logs.join(format!("{name}.log"))).unwrap());
    cmd
}

/// The epochs of the completed checkpoints under `storage`.
fn completed(storage: &Storage) -> Vec<u64> {
    storage
        .list_dirs("")
        .unwrap()
        .iter()
        .filter_map(|d| d.strip_prefix("chk-").and_then(|e| e.parse().ok()))
        .filter(|e| storage.exists(&format!("chk-{e}/_metadata")).unwrap())
        .collect()
}

/// Every shared object the completed checkpoints refer to is in the bucket, whole.
fn check_references(storage: &Storage) -> usize {
    let objects: std::collections::BTreeMap<String, u64> = storage
        .list("shared")
        .unwrap()
        .into_iter()
        .map(|l| (l.name, l.bytes))
        .collect();
    let mut referenced = 0;
    for epoch in completed(storage) {
        let chk = storage.child(&format!("chk-{epoch}"));
        for file in chk.list("").unwrap() {
            if !file.name.ends_with(".native") {
                continue;
            }
            let part = NativePart::read_from(&chk, &file.name).unwrap();
            for o in part.objects() {
                assert_eq!(
                    objects.get(&o.object),
                    Some(&o.bytes),
                    "chk-{epoch}/{} refers to shared/{}, which is not in the bucket whole",
                    file.name,
                    o.object
                );
                referenced += 1;
            }
        }
    }
    referenced
}

/// Runs `cmd` (a job named `name`) to its end; fails with its log when it fails.
fn run_to_end(mut cmd: Command, logs: &Path, name: &str) {
    let status = cmd.status().unwrap();
    let log = std::fs::read_to_string(logs.join(format!("{name}.log"))).unwrap_or_default();
    assert!(status.success(), "{name} failed: {status}\n{log}");
}

fn wait_all(children: Vec<Child>, what: &str, logs: &Path) {
    for (i, mut c) in children.into_iter().enumerate() {
        let status = c.wait().unwrap();
        let log = std::fs::read_to_string(logs.join(format!("{what}-{i}.log"))).unwrap_or_default();
        assert!(
            status.success(),
            "{what} process {i} failed: {status}\n{log}"
        );
    }
}

#[test]
fn a_two_process_job_checkpoints_to_s3_is_killed_and_restores_from_it() {
    let tmp = tempfile::tempdir().unwrap();
    let logs = tmp.path();
    let server = S3Server::start(logs);
    let expected = failure_free_output(&example(), ORDERS, "heap");
    let url = format!("s3://{BUCKET}/two-process");
    let out = tmp.path().join("out");
    let out_arg = out.to_str().unwrap().to_owned();
    let start = |restore: bool, name: &str| -> Vec<Child> {
        let listeners: Vec<TcpListener> = (0..2)
            .map(|_| TcpListener::bind("127.0.0.1:0").unwrap())
            .collect();
        let hosts = listeners
            .iter()
            .map(|l| format!("127.0.0.1:{}", l.local_addr().unwrap().port()))
            .collect::<Vec<_>>()
            .join(",");
        drop(listeners);
        (0..2)
            .map(|p| {
                let mut cmd = job(
                    &server,
                    logs,
                    &format!("{name}-{p}"),
                    &[
                        "--parallelism",
                        "2",
                        "--state",
                        "rocksdb",
                        "--orders-per-second",
                        "4000",
                        "--checkpoint-interval-ms",
                        "500",
                        "--checkpoint-dir",
                        &url,
                        "--output",
                        &out_arg,
                        "--hosts",
                        &hosts,
                        "--process",
                        &p.to_string(),
                    ],
                );
                cmd.env("TYPEINFO_JOB_SECRET", "the secret of this test's job");
                if restore {
                    cmd.args(["--restore", &url]);
                }
                cmd.spawn().unwrap()
            })
            .collect()
    };
    let storage = server.storage("two-process");

    let mut first = start(false, "first");
    let until = Instant::now() + Duration::from_secs(120);
    let published_any = || std::fs::read_dir(&out).is_ok_and(|mut d| d.next().is_some());
    while completed(&storage).len() < 2 || !published_any() {
        assert!(
            Instant::now() < until,
            "no two completed checkpoints in the bucket and published output after 120 s"
        );
        assert!(
            first.iter_mut().all(|c| c.try_wait().unwrap().is_none()),
            "the job ended before it was killed (make it slower)"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    for c in &mut first {
        c.kill().unwrap(); // SIGKILL
        c.wait().unwrap();
    }
    // The incremental parts' SST files went to the bucket, and each is there whole.
    assert!(
        !storage.list("shared").unwrap().is_empty(),
        "no shared objects in the bucket"
    );
    assert!(check_references(&storage) > 0);

    wait_all(start(true, "second"), "second", logs);
    assert_eq!(
        published(&out),
        expected,
        "output after the restore from S3"
    );
    check_references(&storage);
}

#[test]
fn a_savepoint_in_a_bucket_restores_at_another_parallelism_on_the_other_backend() {
    let tmp = tempfile::tempdir().unwrap();
    let logs = tmp.path();
    let server = S3Server::start(logs);
    let expected = failure_free_output(&example(), ORDERS, "heap");
    let out = tmp.path().join("out");
    let out_arg = out.to_str().unwrap();
    let savepoint = format!("s3://{BUCKET}/savepoints/half-way");
    let cmd = job(
        &server,
        logs,
        "stopped",
        &[
            "--parallelism",
            "2",
            "--state",
            "heap",
            "--checkpoint-interval-ms",
            "500",
            "--checkpoint-dir",
            &format!("s3://{BUCKET}/stopped"),
            "--stop-after",
            "12000",
            "--savepoint",
            &savepoint,
            "--output",
            out_arg,
        ],
    );
    run_to_end(cmd, logs, "stopped");
    let stored = server.storage("savepoints/half-way");
    assert!(
        stored.exists("_metadata").unwrap(),
        "no savepoint in the bucket"
    );
    assert!(
        published(&out).len() < expected.len(),
        "the first run was not stopped half-way"
    );

    let cmd = job(
        &server,
        logs,
        "restored",
        &[
            "--parallelism",
            "3",
            "--state",
            "rocksdb",
            "--restore",
            &savepoint,
            "--output",
            out_arg,
        ],
    );
    run_to_end(cmd, logs, "restored");
    assert_eq!(
        published(&out),
        expected,
        "output after the restore at parallelism 3"
    );
    // The savepoint is the backend-independent format, and the job never deletes it.
    let names: Vec<String> = stored
        .list("")
        .unwrap()
        .into_iter()
        .map(|l| l.name)
        .collect();
    assert!(names.iter().any(|n| n.ends_with(".kstate")), "{names:?}");
    assert!(!names.iter().any(|n| n.ends_with(".native")), "{names:?}");
}

#[test]
fn a_missing_bucket_or_an_empty_prefix_is_a_clear_error() {
    let tmp = tempfile::tempdir().unwrap();
    let logs = tmp.path();
    let server = S3Server::start(logs);
    let out = tmp.path().join("out");
    let output = job(
        &server,
        logs,
        "no-bucket",
        &[
            "--checkpoint-dir",
            "s3://no-such-bucket/job",
            "--checkpoint-interval-ms",
            "50",
            "--output",
            out.to_str().unwrap(),
        ],
    )
    .output()
    .unwrap();
    assert!(!output.status.success());
    let log = std::fs::read_to_string(logs.join("no-bucket.log")).unwrap();
    assert!(log.contains("s3://no-such-bucket"), "{log}");

    // Restoring from a prefix with no checkpoint names it.
    let output = job(
        &server,
        logs,
        "nothing",
        &[
            "--restore",
            &format!("s3://{BUCKET}/nothing-here"),
            "--output",
            out.to_str().unwrap(),
        ],
    )
    .output()
    .unwrap();
    assert!(!output.status.success());
    let log = std::fs::read_to_string(logs.join("nothing.log")).unwrap();
    assert!(log.contains("s3://typeinfo/nothing-here"), "{log}");
}
