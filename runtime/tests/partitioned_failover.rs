//! The supervised three-process job of `supervised_failover.rs`, each process in a network
//! namespace of its own, joined to the others by a veth link to one bridge (made by this test;
//! it needs root, as CI runs it). Instead of a process being killed, a process's link is cut
//! (set down: no reset reaches anyone, packets just stop) for longer than the job's peer
//! timeout, then restored. The processes must notice the silence (TCP keepalive and
//! `TCP_USER_TIMEOUT`, `--peer-timeout-ms 2000`), end with `EXIT_PEER_LOST`, be started
//! again by the supervisor with the same command line, find one another once the link is
//! back, resume from the same checkpoint, and end with committed output equal to a
//! failure-free run's.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test (or bench) panics on what it does not expect

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::{has_completed_checkpoint, keyed_input, published, Rng};

const SECRET: &str = "the secret every process of this job shares";
const PROCESSES: usize = 3;
const PORT: u16 = 7411;
const PEER_TIMEOUT_MS: u64 = 2_000;
/// How long a cut lasts: past the peer timeout, so that it is noticed.
const CUT: Duration = Duration::from_millis(PEER_TIMEOUT_MS + 2_000);

fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().unwrap_or_else(|e| {
        panic!("cannot run `ip` ({e}): the test needs iproute2 (Debian's package)")
    });
    assert!(
        out.status.success(),
        "ip {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Three network namespaces, each with an address on one bridge; removed when dropped.
struct Net {
    bridge: String,
    namespaces: Vec<String>,
    links: Vec<String>,
    addresses: Vec<String>,
}

impl Net {
    fn new() -> Self {
        let root = std::fs::read_to_string("/proc/self/status")
            .unwrap()
            .lines()
            .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"));
        assert!(
            root,
            "this test makes network namespaces and links: run it as root (CI does)"
        );
        let id = std::process::id() % 100_000;
        let subnet = format!("10.231.{}", id % 250);
        let mut net = Net {
            bridge: format!("tib{id}"),
            namespaces: Vec::new(),
            links: Vec::new(),
            addresses: Vec::new(),
        };
        ip(&["link", "add", &net.bridge, "type", "bridge"]);
        ip(&["link", "set", &net.bridge, "up"]);
        for i in 0..PROCESSES {
            let (ns, link) = (format!("tin{id}-{i}"), format!("tiv{id}-{i}"));
            ip(&["netns", "add", &ns]);
            net.namespaces.push(ns.clone());
            ip(&[
                "link", "add", &link, "type", "veth", "peer", "name", "eth0", "netns", &ns,
            ]);
            net.links.push(link.clone());
            ip(&["link", "set", &link, "master", &net.bridge]);
            ip(&["link", "set", &link, "up"]);
            let address = format!("{subnet}.{}", i + 1);
            ip(&[
                "-n",
                &ns,
                "addr",
                "add",
                &format!("{address}/24"),
                "dev",
                "eth0",
            ]);
            ip(&["-n", &ns, "link", "set", "eth0", "up"]);
            ip(&["-n", &ns, "link", "set", "lo", "up"]);
            net.addresses.push(address);
        }
        net
    }

    fn hosts(&self) -> String {
        self.addresses
            .iter()
            .map(|a| format!("{a}:{PORT}"))
            .collect::<Vec<_>>()
            .join(",")
    }

    fn cut(&self, i: usize) {
        ip(&["link", "set", &self.links[i], "down"]);
    }

    fn heal(&self, i: usize) {
        ip(&["link", "set", &self.links[i], "up"]);
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        for ns in &self.namespaces {
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
        let _ = Command::new("ip")
            .args(["link", "del", &self.bridge])
            .status();
    }
}

/// The one command line of process `index` (in its namespace when `net` is given).
fn start(work: &Path, input: &Path, net: Option<&Net>, index: usize, rate: &str) -> Child {
    let program = PathBuf::from(env!("CARGO_BIN_EXE_windowed_aggregate"));
    let mut cmd = match net {
        Some(net) => {
            let mut c = Command::new("ip");
            c.args(["netns", "exec", &net.namespaces[index]])
                .arg(program);
            c
        }
        None => Command::new(program),
    };
    cmd.arg("--input")
        .arg(input)
        .args(["--window", "count:9", "--out-of-orderness", "50"])
        .args([
            "--allowed-lateness",
            "0",
            "--parallelism",
            "3",
            "--state",
            "heap",
        ])
        .args(["--lines-per-second", rate])
        .args([
            "--checkpoint-interval-ms",
            "40",
            "--resume",
            "--checkpoint-dir",
        ])
        .arg(work.join("checkpoints"))
        .arg("--output")
        .arg(work.join("output"))
        .env("TYPEINFO_JOB_SECRET", SECRET)
        .env_remove("TYPEINFO_JOB_SECRET_FILE")
        .env("TMPDIR", work)
        .stdout(Stdio::null())
        .stderr(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(work.join(format!("process-{index}.log")))
                .unwrap(),
        );
    if let Some(net) = net {
        cmd.args(["--hosts", &net.hosts(), "--process", &index.to_string()])
            .args(["--peer-timeout-ms", &PEER_TIMEOUT_MS.to_string()]);
    }
    cmd.spawn().expect("start a process of the job")
}

/// Runs the processes under the supervisor (restart any process that exits unsuccessfully,
/// with the same command line) until all ended successfully, cutting a random process's link
/// for [`CUT`] every 1-2 s (once a checkpoint completed) until `cuts` cuts; returns the exit
/// statuses of the processes that failed.
fn supervise(work: &Path, input: &Path, net: &Net, cuts: usize, seed: u64) -> Vec<Option<i32>> {
    let mut rng = Rng(seed);
    let mut children: Vec<Option<Child>> = (0..PROCESSES)
        .map(|i| Some(start(work, input, Some(net), i, "2000")))
        .collect();
    let (mut statuses, mut done, mut cuts_done) = (Vec::new(), 0, 0);
    let mut cut: Option<(usize, Instant)> = None;
    let mut next_cut = Instant::now() + Duration::from_millis(rng.between(1_000, 2_000));
    let deadline = Instant::now() + Duration::from_secs(300);
    while done < PROCESSES {
        assert!(
            Instant::now() < deadline,
            "the job did not end within 300 s ({cuts_done} cuts)"
        );
        for (i, slot) in children.iter_mut().enumerate() {
            let Some(child) = slot.as_mut() else {
                continue;
            };
            let Some(status) = child.try_wait().unwrap() else {
                continue;
            };
            if status.success() {
                *slot = None;
                done += 1;
                continue;
            }
            statuses.push(status.code());
            *slot = Some(start(work, input, Some(net), i, "2000"));
        }
        match cut {
            Some((i, since)) if since.elapsed() >= CUT => {
                net.heal(i);
                cut = None;
                next_cut = Instant::now() + Duration::from_millis(rng.between(1_000, 2_000));
            }
            None if cuts_done < cuts
                && Instant::now() >= next_cut
                && has_completed_checkpoint(&work.join("checkpoints")) =>
            {
                let i = rng.next() as usize % PROCESSES;
                net.cut(i);
                cut = Some((i, Instant::now()));
                cuts_done += 1;
            }
            _ => {}
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(cuts_done, cuts, "every cut landed before the job ended");
    statuses
}

#[test]
fn cut_links_of_a_supervised_three_process_job_lose_and_duplicate_nothing() {
    let net = Net::new();
    let work = tempfile::tempdir().unwrap();
    let input = keyed_input(work.path(), 17);

    // The failure-free run: one process, three workers, the same program and input.
    let reference = work.path().join("reference");
    std::fs::create_dir_all(&reference).unwrap();
    let status = start(&reference, &input, None, 0, "1000000")
        .wait()
        .unwrap();
    assert!(status.success(), "the failure-free run failed");
    let expected = published(&reference.join("output"));
    assert!(expected.len() > 1_000, "{} lines", expected.len());

    let failing = work.path().join("failing");
    std::fs::create_dir_all(&failing).unwrap();
    let statuses = supervise(&failing, &input, &net, 3, 5);
    eprintln!("exit statuses of the processes that failed: {statuses:?}");
    assert!(
        statuses.contains(&Some(typeinfo_runtime::EXIT_PEER_LOST)),
        "a process that lost its peers ended with EXIT_PEER_LOST: {statuses:?}"
    );
    assert!(
        !statuses.contains(&Some(101)),
        "no process panicked: {statuses:?}"
    );
    assert_eq!(
        published(&failing.join("output")),
        expected,
        "the committed output after 3 cut links"
    );
}
