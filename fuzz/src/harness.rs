//! The case loop of one target in one process: seeds, truncations, then random mutations
//! until the deadline; every case under `catch_unwind`, with its heap peak measured and a
//! watchdog for cases that hang; failing inputs written to the corpus.

use std::collections::HashMap;
use std::fs;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fastrand::Rng;

use crate::alloc;
use crate::mutate::{self, Nest};
use crate::values::Gen;

/// What a case did with its input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The input was read as a value (and every check on the value held).
    Value,
    /// The input was refused with an error.
    Error,
}

/// A case's verdict: an outcome, or the invariant it broke.
pub type Check = Result<Outcome, String>;

/// The decoder and checks of a sub-target: one input in, its verdict out.
pub type CheckFn = Box<dyn FnMut(&[u8]) -> Check>;

/// One decoder under test: a type's serializer, a snapshot envelope, a backend's restore.
pub struct Sub {
    /// Its name, unique within the target (the first line of its corpus files).
    pub name: String,
    /// Valid encodings to start mutations from; each must decode as a value.
    pub seeds: Vec<Vec<u8>>,
    /// Recursive layouts for the deep-nesting mutator.
    pub nests: Vec<Nest>,
    /// Decodes one input and checks what came out.
    pub check: CheckFn,
    /// Restores the outer structure a random mutation breaks before the decoder under test
    /// ever sees the bytes (a checksum); applied to most mutated inputs.
    pub seal: Option<fn(&mut Vec<u8>)>,
}

impl Sub {
    /// A sub-target with no nesting and no seal.
    pub fn new(
        name: impl Into<String>,
        seeds: Vec<Vec<u8>>,
        check: impl FnMut(&[u8]) -> Check + 'static,
    ) -> Self {
        Sub {
            name: name.into(),
            seeds,
            nests: Vec::new(),
            check: Box::new(check),
            seal: None,
        }
    }

    /// With recursive layouts for the nesting mutator.
    pub fn nests(mut self, nests: Vec<Nest>) -> Self {
        self.nests = nests;
        self
    }

    /// With a seal applied to mutated inputs.
    pub fn seal(mut self, seal: fn(&mut Vec<u8>)) -> Self {
        self.seal = Some(seal);
        self
    }
}

/// A fuzz target: a family of decoders run in one process.
pub struct Target {
    /// Its name (`--target NAME`, the corpus directory).
    pub name: &'static str,
    /// What it covers, for `list`.
    pub about: &'static str,
    /// The bound on the process's peak resident set (`VmHWM`), in MiB.
    pub rss_bound_mib: u64,
    /// Builds the sub-targets with their seeds.
    pub build: fn(&mut Gen) -> Result<Vec<Sub>, String>,
}

/// Per case, the Rust heap may grow by this much...
pub const CASE_HEAP_BASE: usize = 64 << 20;
/// ...plus this much per input byte: decoded values are larger than their bytes (a
/// type-free `Value` takes 48 bytes per element, one byte in a `Vec<u8>`), and a case holds
/// two decoded values at once (the value and its re-serialization read back).
pub const CASE_HEAP_PER_BYTE: usize = 256;
/// No allocation may take the Rust heap past this (the process aborts instead).
pub const HARD_HEAP_CAP: usize = 2 << 30;

/// The heap a case with `len` input bytes may use.
pub fn case_heap_bound(len: usize) -> usize {
    CASE_HEAP_BASE.saturating_add(CASE_HEAP_PER_BYTE.saturating_mul(len))
}

/// Settings of one run.
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// Seconds of mutation (after the seeds and truncations, which also count).
    pub seconds: f64,
    /// The seed of every case's generator.
    pub seed: u64,
    /// The corpus root (`<corpus>/<target>/*.bin`).
    pub corpus: PathBuf,
    /// Where the input of the running case is kept for the driver if the process dies.
    pub current: PathBuf,
    /// A case running longer fails as a hang.
    pub case_timeout: Duration,
    /// The stack size of the thread that runs the cases.
    pub stack_bytes: usize,
    /// Replay only the corpus files sorted after this one (the driver restarts a replay
    /// after the file that crashed it).
    pub replay_after: Option<PathBuf>,
    /// Skip the unmutated seeds and their truncations (a restart after a crash).
    pub mutate_only: bool,
}

/// The counts of a run.
#[derive(Debug, Default, Clone)]
pub struct Stats {
    /// Cases run.
    pub cases: u64,
    /// Cases whose input was read as a value.
    pub values: u64,
    /// Cases whose input was refused with an error.
    pub errors: u64,
    /// Cases that failed (panic, broken invariant, heap over its bound).
    pub failures: u64,
    /// The largest heap growth of one case, in bytes.
    pub max_case_heap: usize,
    /// The longest case.
    pub slowest_case: Duration,
    /// Its sub-target and input length.
    pub slowest_input: String,
    /// Corpus files written.
    pub written: Vec<PathBuf>,
    /// One line per distinct failure.
    pub failure_lines: Vec<String>,
}

/// A corpus file: the sub-target's name, a newline, the input.
pub fn corpus_bytes(sub: &str, input: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(sub.len() + 1 + input.len());
    out.extend_from_slice(sub.as_bytes());
    out.push(b'\n');
    out.extend_from_slice(input);
    out
}

/// Splits a corpus file into its sub-target's name and input.
pub fn parse_corpus(bytes: &[u8]) -> Option<(&str, &[u8])> {
    let nl = bytes.iter().position(|&b| b == b'\n')?;
    Some((std::str::from_utf8(&bytes[..nl]).ok()?, &bytes[nl + 1..]))
}

/// Writes a failing input into `<corpus>/<target>/<hash>.bin`; returns the path.
pub fn save_to_corpus(corpus: &Path, target: &str, file: &[u8]) -> std::io::Result<PathBuf> {
    let dir = corpus.join(target);
    fs::create_dir_all(&dir)?;
    let path = dir.join(format!("{:016x}.bin", xxhash_rust::xxh3::xxh3_64(file)));
    fs::write(&path, file)?;
    Ok(path)
}

/// The corpus files of `target`, sorted.
pub fn corpus_files(corpus: &Path, target: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = fs::read_dir(corpus.join(target))
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "bin"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

/// The input of the running case, kept in a file so that the driver can save it when the
/// process dies (stack overflow, abort): an 8-byte length, then the corpus bytes.
pub struct Current {
    file: fs::File,
}

impl Current {
    /// Opens (creates) the file.
    pub fn open(path: &Path) -> std::io::Result<Self> {
        let file = fs::OpenOptions::new()
            .create(true)
            .truncate(true)
            .read(true)
            .write(true)
            .open(path)?;
        Ok(Current { file })
    }

    /// Records the input about to run.
    pub fn set(&self, sub: &str, input: &[u8]) {
        let len = (sub.len() + 1 + input.len()) as u64;
        // Best effort: a failed write loses only the crash report's input, not the run.
        let _ = self.file.write_all_at(&len.to_le_bytes(), 0);
        let _ = self.file.write_all_at(sub.as_bytes(), 8);
        let _ = self.file.write_all_at(b"\n", 8 + sub.len() as u64);
        let _ = self.file.write_all_at(input, 9 + sub.len() as u64);
    }

    /// The corpus bytes a file of this kind holds (read by the driver after a crash).
    pub fn read(path: &Path) -> Option<Vec<u8>> {
        let bytes = fs::read(path).ok()?;
        let len = u64::from_le_bytes(bytes.get(..8)?.try_into().ok()?) as usize;
        bytes.get(8..8usize.checked_add(len)?).map(<[u8]>::to_vec)
    }
}

/// The message of the last panic on any thread (the hook keeps it instead of printing).
static LAST_PANIC: Mutex<Option<String>> = Mutex::new(None);

/// Keeps panic messages for the failure report instead of printing them per case.
pub fn install_panic_hook() {
    panic::set_hook(Box::new(|info| {
        if let Ok(mut last) = LAST_PANIC.lock() {
            *last = Some(info.to_string());
        }
    }));
}

fn take_panic_message() -> String {
    LAST_PANIC
        .lock()
        .ok()
        .and_then(|mut m| m.take())
        .unwrap_or_else(|| "panic without a message".to_owned())
}

/// A short, digit-free form of a failure, so that one bug is saved a few times, not a
/// thousand.
fn signature(sub: &str, kind: &str, detail: &str) -> String {
    // The rule or the panic's place and first words, without the values (hex, numbers).
    let head = detail.split(": ").next().unwrap_or(detail);
    let short: String = head
        .chars()
        .take(120)
        .map(|c| if c.is_ascii_digit() { '#' } else { c })
        .collect();
    format!("{sub}|{kind}|{short}")
}

/// Corpus files saved per failure signature.
const SAVES_PER_SIGNATURE: usize = 3;

struct Failures<'a> {
    config: &'a RunConfig,
    target: &'static str,
    seen: HashMap<String, usize>,
}

impl Failures<'_> {
    fn record(&mut self, stats: &mut Stats, sub: &str, input: &[u8], kind: &str, detail: &str) {
        stats.failures += 1;
        let sig = signature(sub, kind, detail);
        let n = self.seen.entry(sig).or_insert(0);
        *n += 1;
        if *n > SAVES_PER_SIGNATURE {
            return;
        }
        let saved =
            match save_to_corpus(&self.config.corpus, self.target, &corpus_bytes(sub, input)) {
                Ok(path) => {
                    stats.written.push(path.clone());
                    path.display().to_string()
                }
                Err(e) => format!("(not saved: {e})"),
            };
        let detail: String = detail.chars().take(400).collect();
        let line = format!(
            "FAIL target={} sub={sub} kind={kind} len={} file={saved}: {detail}",
            self.target,
            input.len()
        );
        println!("{line}");
        let _ = std::io::stdout().flush();
        if *n == 1 {
            stats.failure_lines.push(line);
        }
    }
}

/// What one case did.
struct CaseResult {
    outcome: Option<Outcome>,
    /// (kind, detail) of each broken rule.
    failures: Vec<(&'static str, String)>,
    heap: usize,
    took: Duration,
}

/// Runs one case: records its input for the driver, measures its heap and time, catches
/// its panic.
fn run_case(
    sub: &mut Sub,
    input: &[u8],
    must_decode: bool,
    current: &Current,
    progress: &Progress,
    start: Instant,
) -> CaseResult {
    current.set(&sub.name, input);
    alloc::reset_peak();
    let base = alloc::current();
    let case_start = Instant::now();
    progress
        .started_ms
        .store((start.elapsed().as_millis() as u64).max(1), Relaxed);
    let result = panic::catch_unwind(AssertUnwindSafe(|| (sub.check)(input)));
    progress.started_ms.store(0, Relaxed);
    let took = case_start.elapsed();
    let heap = alloc::peak().saturating_sub(base);
    let mut out = CaseResult {
        outcome: None,
        failures: Vec::new(),
        heap,
        took,
    };
    match result {
        Ok(Ok(outcome)) => {
            out.outcome = Some(outcome);
            if outcome == Outcome::Error && must_decode {
                out.failures
                    .push(("seed", "a valid seed was refused".to_owned()));
            }
        }
        Ok(Err(broken)) => out.failures.push(("invariant", broken)),
        Err(_) => out.failures.push(("panic", take_panic_message())),
    }
    if heap > case_heap_bound(input.len()) {
        out.failures.push((
            "memory",
            format!(
                "the case's heap grew by {} MiB (bound {} MiB)",
                heap >> 20,
                case_heap_bound(input.len()) >> 20
            ),
        ));
    }
    out
}

/// How long shrinking one failing input may take.
const MINIMIZE_FOR: Duration = Duration::from_secs(5);

/// The smallest input found by deleting ever smaller slices that still fails the same way.
#[allow(clippy::too_many_arguments)]
fn minimize(
    sub: &mut Sub,
    input: &[u8],
    must_decode: bool,
    kind: &str,
    detail: &str,
    current: &Current,
    progress: &Progress,
    start: Instant,
) -> Vec<u8> {
    if must_decode {
        return input.to_vec();
    }
    let wanted = signature(&sub.name, kind, detail);
    let deadline = Instant::now() + MINIMIZE_FOR;
    let mut best = input.to_vec();
    let mut chunk = best.len().div_ceil(2);
    while chunk >= 1 && Instant::now() < deadline {
        let mut i = 0;
        let mut shrunk = false;
        while i < best.len() && Instant::now() < deadline {
            let mut candidate = best.clone();
            candidate.drain(i..(i + chunk).min(best.len()));
            // Deleting bytes breaks a seal (a checksum); try the candidate sealed again too.
            let mut sealed = None;
            if let Some(seal) = sub.seal {
                let mut c = candidate.clone();
                seal(&mut c);
                sealed = Some(c);
            }
            let mut found = None;
            for c in std::iter::once(candidate).chain(sealed) {
                let case = run_case(sub, &c, false, current, progress, start);
                if case
                    .failures
                    .iter()
                    .any(|(k, d)| signature(&sub.name, k, d) == wanted)
                {
                    found = Some(c);
                    break;
                }
            }
            match found {
                Some(c) => {
                    best = c;
                    shrunk = true;
                }
                None => i += chunk,
            }
        }
        if !shrunk {
            chunk /= 2;
        }
    }
    best
}

/// What the watchdog sees of the case thread.
struct Progress {
    /// Milliseconds since the start of the run when the running case began; 0 when idle.
    started_ms: AtomicU64,
    done: AtomicBool,
}

/// A source of inputs: seeds first, then every truncation of each seed, then mutations.
struct Schedule {
    /// (sub index, bytes, is a valid seed)
    pool: Vec<(usize, Vec<u8>, bool)>,
    truncations: Vec<(usize, usize)>,
    next_seed: usize,
    next_truncation: usize,
    case: u64,
    seed: u64,
}

/// Truncation points per seed (all of them for short seeds, evenly spread for long ones).
const TRUNCATIONS_PER_SEED: usize = 512;

impl Schedule {
    fn new(pool: Vec<(usize, Vec<u8>, bool)>, seed: u64) -> Self {
        let mut truncations = Vec::new();
        for (i, (_, bytes, valid)) in pool.iter().enumerate() {
            if !valid {
                continue;
            }
            let len = bytes.len();
            let step = len.div_ceil(TRUNCATIONS_PER_SEED).max(1);
            truncations.extend((0..len).step_by(step).map(|cut| (i, cut)));
        }
        Schedule {
            pool,
            truncations,
            next_seed: 0,
            next_truncation: 0,
            case: 0,
            seed,
        }
    }

    /// The next input: (sub index, bytes, whether it must decode as a value).
    fn next(&mut self, subs: &[Sub]) -> Option<(usize, Vec<u8>, bool)> {
        if self.pool.is_empty() {
            return None;
        }
        if self.next_seed < self.pool.len() {
            let (s, bytes, valid) = &self.pool[self.next_seed];
            self.next_seed += 1;
            return Some((*s, bytes.clone(), *valid));
        }
        if self.next_truncation < self.truncations.len() {
            let (i, cut) = self.truncations[self.next_truncation];
            self.next_truncation += 1;
            let (s, bytes, _) = &self.pool[i];
            return Some((*s, bytes[..cut].to_vec(), false));
        }
        // Case k is a function of (seed, k) alone.
        self.case += 1;
        let mut rng = Rng::with_seed(self.seed ^ self.case.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let (s, bytes, _) = &self.pool[rng.usize(..self.pool.len())];
        let s = *s;
        let others: Vec<&[u8]> = self
            .pool
            .iter()
            .filter(|(o, _, _)| *o == s)
            .map(|(_, b, _)| b.as_slice())
            .collect();
        let mut input = mutate::mutate(&mut rng, bytes, &others, &subs[s].nests);
        if let Some(seal) = subs[s].seal {
            if rng.usize(..4) != 0 {
                seal(&mut input);
            }
        }
        Some((s, input, false))
    }
}

/// Runs `target` for `config.seconds` (or, with `replay_only`, just its corpus files) on a
/// thread of `config.stack_bytes`, with a watchdog on this thread. Prints one `FAIL` line
/// per distinct failure and returns the counts; exits the process on a hang.
pub fn run_target(
    target: &'static Target,
    config: &RunConfig,
    replay_only: bool,
) -> Result<Stats, String> {
    install_panic_hook();
    alloc::set_hard_cap(HARD_HEAP_CAP);
    let progress = Arc::new(Progress {
        started_ms: AtomicU64::new(0),
        done: AtomicBool::new(false),
    });
    let start = Instant::now();
    let worker = {
        let progress = Arc::clone(&progress);
        let config = config.clone();
        std::thread::Builder::new()
            .name(format!("fuzz-{}", target.name))
            .stack_size(config.stack_bytes)
            .spawn(move || {
                let result = cases(target, &config, replay_only, &progress, start);
                progress.done.store(true, Relaxed);
                result
            })
            .map_err(|e| format!("cannot start the case thread: {e}"))?
    };
    let timeout_ms = config.case_timeout.as_millis() as u64;
    while !progress.done.load(Relaxed) {
        std::thread::sleep(Duration::from_millis(20));
        let started = progress.started_ms.load(Relaxed);
        let now = start.elapsed().as_millis() as u64;
        if started != 0 && now.saturating_sub(started) > timeout_ms && !progress.done.load(Relaxed)
        {
            let saved = Current::read(&config.current)
                .and_then(|bytes| save_to_corpus(&config.corpus, target.name, &bytes).ok())
                .map_or_else(|| "(not saved)".to_owned(), |p| p.display().to_string());
            println!(
                "FAIL target={} kind=timeout file={saved}: a case ran longer than {} ms",
                target.name,
                config.case_timeout.as_millis()
            );
            let _ = std::io::stdout().flush();
            std::process::exit(3);
        }
    }
    worker
        .join()
        .map_err(|_| "the case thread panicked outside a case".to_owned())?
}

fn cases(
    target: &'static Target,
    config: &RunConfig,
    replay_only: bool,
    progress: &Progress,
    start: Instant,
) -> Result<Stats, String> {
    let current =
        Current::open(&config.current).map_err(|e| format!("{}: {e}", config.current.display()))?;
    let mut gen = Gen::new(config.seed);
    let mut subs = (target.build)(&mut gen)?;
    let mut stats = Stats::default();
    let mut failures = Failures {
        config,
        target: target.name,
        seen: HashMap::new(),
    };
    let mut pool = Vec::new();
    if !replay_only {
        for (i, sub) in subs.iter_mut().enumerate() {
            for seed in std::mem::take(&mut sub.seeds) {
                pool.push((i, seed, true));
            }
        }
    }
    // A run explores from valid seeds; the corpus (inputs that once failed) is replay's.
    let mut corpus = if replay_only {
        corpus_files(&config.corpus, target.name)
    } else {
        Vec::new()
    };
    if let Some(after) = &config.replay_after {
        corpus.retain(|p| p > after);
    }
    let mut paths = Vec::new();
    for path in corpus {
        let bytes = fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        match parse_corpus(&bytes)
            .and_then(|(name, input)| subs.iter().position(|s| s.name == name).map(|i| (i, input)))
        {
            Some((i, input)) => {
                pool.push((i, input.to_vec(), false));
                paths.push(path);
            }
            None => {
                stats.failures += 1;
                let line = format!(
                    "FAIL target={} kind=corpus file={}: names no sub-target of this target",
                    target.name,
                    path.display()
                );
                println!("{line}");
                stats.failure_lines.push(line);
            }
        }
    }
    let seed_count = if config.mutate_only { 0 } else { pool.len() };
    let mut schedule = Schedule::new(pool, config.seed);
    if config.mutate_only {
        schedule.next_seed = schedule.pool.len();
        schedule.next_truncation = schedule.truncations.len();
    }
    let deadline = Duration::from_secs_f64(config.seconds.max(0.0));
    loop {
        if replay_only && stats.cases as usize >= seed_count {
            break;
        }
        if !replay_only && start.elapsed() >= deadline && stats.cases as usize >= seed_count {
            break;
        }
        if replay_only {
            // The driver restarts a crashed replay after the last file it announced.
            if let Some(path) = paths.get(stats.cases as usize) {
                println!("REPLAY {}", path.display());
                let _ = std::io::stdout().flush();
            }
        }
        let Some((s, input, must_decode)) = schedule.next(&subs) else {
            break;
        };
        let sub = &mut subs[s];
        let case = run_case(sub, &input, must_decode, &current, progress, start);
        stats.cases += 1;
        if case.took > stats.slowest_case {
            stats.slowest_case = case.took;
            stats.slowest_input = format!("{} ({} bytes)", sub.name, input.len());
        }
        stats.max_case_heap = stats.max_case_heap.max(case.heap);
        match case.outcome {
            Some(Outcome::Value) => stats.values += 1,
            Some(Outcome::Error) => stats.errors += 1,
            None => {}
        }
        for (kind, detail) in case.failures {
            let first_time = !failures
                .seen
                .contains_key(&signature(&sub.name, kind, &detail));
            // Shrink the input of a new failure (not of crashes or hangs, which end the
            // process), so that the corpus holds the smallest input that still fails.
            let input = if first_time && !replay_only {
                minimize(
                    sub,
                    &input,
                    must_decode,
                    kind,
                    &detail,
                    &current,
                    progress,
                    start,
                )
            } else {
                input.clone()
            };
            failures.record(&mut stats, &sub.name, &input, kind, &detail);
        }
    }
    Ok(stats)
}
