//! What the crash and checkpoint tests share: reading committed output, a seeded
//! generator, looking at a checkpoint directory, copying one, a paced source and an
//! operator that fails at a checkpoint.
#![allow(dead_code)] // each test uses what it needs

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Instant;

use typeinfo_runtime::{
    Data, Error, OneInputOperator, OperatorContext, ReadStatus, Result, Source, SourceOutput,
    SplitReader, StateContext,
};

/// Every published line of an output directory, sorted; fails on unpublished leftovers.
pub fn published(dir: &Path) -> Vec<String> {
    let mut lines = Vec::new();
    for entry in std::fs::read_dir(dir).expect("output dir") {
        let name = entry
            .expect("entry")
            .file_name()
            .to_string_lossy()
            .into_owned();
        assert!(
            !name.starts_with('.'),
            "left unpublished in {}: {name}",
            dir.display()
        );
        lines.extend(
            std::fs::read_to_string(dir.join(&name))
                .expect("read")
                .lines()
                .map(str::to_owned),
        );
    }
    lines.sort();
    lines
}

/// The lines of the output files in `dir` of checkpoints up to `epoch` (the files end in
/// `-<epoch>`).
pub fn published_up_to(dir: &Path, epoch: u64) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.starts_with("part-")
                && name
                    .rsplit('-')
                    .next()
                    .and_then(|n| n.parse::<u64>().ok())
                    .is_some_and(|e| e <= epoch)
        })
        .flat_map(|e| {
            std::fs::read_to_string(e.path())
                .unwrap()
                .lines()
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The checkpoint epoch a savepoint (or checkpoint) directory holds, from its `_metadata`.
pub fn savepoint_epoch(dir: &Path) -> u64 {
    let metadata = std::fs::read_to_string(dir.join("_metadata")).expect("read _metadata");
    metadata
        .lines()
        .find_map(|l| l.strip_prefix("epoch "))
        .expect("an epoch line in _metadata")
        .parse()
        .expect("a numeric epoch")
}

/// Fails with what differs (missing, unexpected and repeated lines) unless `got == want`
/// (both sorted); `log` is the last run's log, printed with the difference.
pub fn assert_same_lines(got: &[String], want: &[String], what: &str, log: &str) {
    if got == want {
        return;
    }
    let missing: Vec<&String> = want
        .iter()
        .filter(|l| got.binary_search(l).is_err())
        .collect();
    let extra: Vec<&String> = got
        .iter()
        .filter(|l| want.binary_search(l).is_err())
        .collect();
    let twice: Vec<&String> = got
        .windows(2)
        .filter(|w| w[0] == w[1] && want.iter().filter(|l| **l == w[0]).count() < 2)
        .map(|w| &w[0])
        .collect();
    panic!(
        "{what}: {} lines, {} expected; {} missing (first {:?}), {} unexpected (first {:?}), \
         {} twice (first {:?}); last run's log:\n{log}",
        got.len(),
        want.len(),
        missing.len(),
        missing.iter().take(5).collect::<Vec<_>>(),
        extra.len(),
        extra.iter().take(5).collect::<Vec<_>>(),
        twice.len(),
        twice.iter().take(5).collect::<Vec<_>>(),
    );
}

/// `--hosts` for `processes` processes on loopback: free ports, all different (every
/// listener is held until all are chosen).
pub fn loopback_hosts(processes: usize) -> String {
    let listeners: Vec<std::net::TcpListener> = (0..processes)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0").expect("bind loopback"))
        .collect();
    listeners
        .iter()
        .map(|l| format!("127.0.0.1:{}", l.local_addr().expect("address").port()))
        .collect::<Vec<_>>()
        .join(",")
}

/// The committed output of a failure-free run (no checkpoints) of the `orders_per_minute`
/// job at `program`: version 1, `orders` orders, parallelism 2, `state` backend.
pub fn failure_free_output(program: &Path, orders: &str, state: &str) -> Vec<String> {
    let out = tempfile::tempdir().expect("temp dir");
    let status = std::process::Command::new(program)
        .args([
            "run",
            "--version",
            "1",
            "--orders",
            orders,
            "--parallelism",
            "2",
        ])
        .args(["--state", state, "--output"])
        .arg(out.path())
        .stdout(std::process::Stdio::null())
        .status()
        .expect("run");
    assert!(status.success());
    published(out.path())
}

/// A small seeded generator (SplitMix64), so a failing run can be repeated.
pub struct Rng(pub u64);
impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub fn between(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo)
    }
}

pub fn incomplete_checkpoints(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .filter(|e| {
                    e.file_name().to_string_lossy().starts_with("chk-")
                        && !e.path().join("_metadata").exists()
                })
                .count()
        })
        .unwrap_or(0)
}

pub fn has_completed_checkpoint(dir: &Path) -> bool {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .any(|e| e.path().join("_metadata").exists())
        })
        .unwrap_or(false)
}

/// Every shared object the incremental parts of the completed checkpoints under
/// `checkpoints` refer to; fails when one is missing or of another size.
pub fn referenced_objects(checkpoints: &Path) -> BTreeSet<String> {
    let mut all = BTreeSet::new();
    for chk in std::fs::read_dir(checkpoints)
        .expect("checkpoint dir")
        .flatten()
    {
        if !chk.path().join("_metadata").is_file() {
            continue;
        }
        for op in std::fs::read_dir(chk.path()).expect("checkpoint").flatten() {
            for f in std::fs::read_dir(op.path()).into_iter().flatten().flatten() {
                if f.path().extension().is_none_or(|x| x != "native") {
                    continue;
                }
                let part = typeinfo_runtime::native_part::NativePart::read(&f.path())
                    .expect("an incremental part");
                for o in part.objects() {
                    let path = checkpoints
                        .join(typeinfo_runtime::native_part::SHARED_DIR)
                        .join(&o.object);
                    let len = std::fs::metadata(&path)
                        .unwrap_or_else(|_| {
                            panic!(
                                "{} refers to missing {}",
                                f.path().display(),
                                path.display()
                            )
                        })
                        .len();
                    assert_eq!(len, o.bytes, "{}", path.display());
                    all.insert(o.object.clone());
                }
            }
        }
    }
    all
}

/// Copies the directory tree `from` to `to`.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create");
    for e in std::fs::read_dir(from).expect("read").flatten() {
        let target = to.join(e.file_name());
        if e.path().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).expect("copy");
        }
    }
}

/// `0..count`, paced at `per_second` (so that checkpoints happen while it runs); one split.
/// With `hold_last_until_checkpoint` above 0 the last record waits until the reader has been
/// told that a checkpoint with at least that id completed, so a job is sure to reach that
/// many checkpoints however slowly this machine writes them.
#[derive(Clone)]
pub struct Paced {
    pub count: u64,
    pub per_second: f64,
    pub hold_last_until_checkpoint: u64,
}

pub struct PacedReader {
    next: u64,
    count: u64,
    per_second: f64,
    opened: Option<Instant>,
    from: u64,
    hold_until: u64,
    completed: u64,
}

impl SplitReader<u64> for PacedReader {
    type Position = u64;
    fn read(&mut self, out: &mut SourceOutput<'_, u64>, budget: usize) -> Result<ReadStatus> {
        // The pace counts from the first read, not from the reader's creation (the job may
        // take a while to start on a busy machine, and all would be due at once).
        let opened = *self.opened.get_or_insert_with(Instant::now);
        let due = self.from + (opened.elapsed().as_secs_f64() * self.per_second) as u64;
        let held = u64::from(self.completed < self.hold_until);
        let mut n = 0;
        while n < budget && self.next < due.min(self.count.saturating_sub(held)) {
            out.collect(self.next);
            self.next += 1;
            n += 1;
        }
        Ok(if self.next >= self.count {
            ReadStatus::Finished
        } else if n == 0 {
            ReadStatus::NothingAvailable
        } else {
            ReadStatus::More
        })
    }
    fn position(&self) -> u64 {
        self.next
    }
    fn seek(&mut self, position: u64) -> Result<()> {
        self.next = position;
        self.from = position;
        Ok(())
    }
    fn notify_checkpoint_complete(&mut self, checkpoint: u64, _: &u64) -> Result<()> {
        self.completed = self.completed.max(checkpoint);
        Ok(())
    }
}

impl Source<u64> for Paced {
    type Split = ();
    type Reader = PacedReader;
    fn splits(&self, _: usize) -> Result<Vec<()>> {
        Ok(vec![()])
    }
    fn reader(&self, _: &()) -> Result<PacedReader> {
        Ok(PacedReader {
            next: 0,
            count: self.count,
            per_second: self.per_second,
            opened: None,
            from: 0,
            hold_until: self.hold_last_until_checkpoint,
            completed: 0,
        })
    }
}

/// Passes records on; fails in its part of checkpoint 3 the first time it gets there, or
/// always with `always`.
#[derive(Clone)]
pub struct FailAtThirdCheckpoint {
    pub failed_once: Arc<AtomicBool>,
    pub always: bool,
    pub opened: Arc<AtomicU32>,
}

impl<T: Data> OneInputOperator<(), T, T> for FailAtThirdCheckpoint {
    fn open(&mut self, _: &mut StateContext<'_, ()>) -> Result<()> {
        self.opened.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
    fn process_element(&mut self, v: T, ctx: &mut OperatorContext<'_, (), T>) -> Result<()> {
        ctx.collect(v);
        Ok(())
    }
    fn snapshot_state(&mut self, checkpoint: u64, _: &mut StateContext<'_, ()>) -> Result<()> {
        if checkpoint >= 3 && (self.always || !self.failed_once.swap(true, Ordering::SeqCst)) {
            return Err(Error::function(format!(
                "injected failure at checkpoint {checkpoint}"
            )));
        }
        Ok(())
    }
}

/// 40,000 lines `key,ts,amount` over 7 keys from the seed `seed`, timestamps rising with a
/// jitter below 20 ms (nothing is late under an out-of-orderness of 50 ms, so lateness never
/// depends on when a kill landed), written to `dir/input.csv`.
pub fn keyed_input(dir: &Path, seed: u64) -> std::path::PathBuf {
    let mut rng = Rng(seed);
    let mut text = String::new();
    for i in 0..40_000u64 {
        let ts = i as i64 * 2 + (rng.next() % 20) as i64;
        text.push_str(&format!("k{},{ts},{}\n", rng.next() % 7, rng.next() % 100));
    }
    let path = dir.join("input.csv");
    std::fs::write(&path, text).unwrap();
    path
}

/// A port free on loopback now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// One HTTP/1.0 request to loopback `port` with `headers` (`Name: value` lines) and `body`:
/// (status, body), or `None` when nothing answers or the answer is not HTTP.
pub fn http(
    port: u16,
    method: &str,
    path: &str,
    headers: &[String],
    body: &str,
) -> Option<(u16, String)> {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .ok()?;
    let mut head = format!("{method} {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n");
    for h in headers {
        head.push_str(h);
        head.push_str("\r\n");
    }
    write!(stream, "{head}Content-Length: {}\r\n\r\n{body}", body.len()).ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let status = response.split_whitespace().nth(1)?.parse().ok()?;
    let body = response
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_owned();
    Some((status, body))
}
