//! `typeinfo-fuzz`: the fuzz suite of typeinfo (see `README.md` of this crate).
//!
//! ```text
//! typeinfo-fuzz list
//! typeinfo-fuzz run [--target NAME|all] [--seconds S] [--seed N] [--corpus DIR]
//!                   [--case-timeout-ms MS] [--stack-kib KIB]
//! typeinfo-fuzz replay [--target NAME|all] [--seed N] [--corpus DIR]
//!                      [--case-timeout-ms MS] [--stack-kib KIB]
//! typeinfo-fuzz help [COMMAND]      (or --help after any command)
//! ```
//!
//! Exit status: 0 when every target passed, 1 on a failure, 2 on a usage error (clap's
//! message on stderr) or when a target cannot be set up.
//!
//! `run` and `replay` are drivers: each target runs in a child process (this binary with
//! the hidden `child` command), so that a stack overflow or an abort is reported as that
//! target's failure, with the input that caused it saved into the corpus.

#[allow(unsafe_code)] // the counting global allocator (each block has a SAFETY comment)
mod alloc;
mod harness;
mod mutate;
mod targets;
mod values;

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use clap::{Parser, Subcommand, ValueEnum};
use harness::{RunConfig, Target};

#[global_allocator]
static ALLOCATOR: alloc::Counting = alloc::Counting;

/// The stack of the thread that runs cases: Rust's default for spawned threads, which is
/// what timely's workers (and so every decoder in a running job) get.
const DEFAULT_STACK_KIB: usize = 2048;
const DEFAULT_CASE_TIMEOUT_MS: u64 = 10_000;

/// The default corpus: `corpus/` of this crate.
const DEFAULT_CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/corpus");

/// The fuzz suite of typeinfo: structure-aware corruption of every byte format read from
/// outside, each target in a child process.
// Every command: a repeated flag takes its last value (`args_override_self`), as before clap.
#[derive(Parser, Debug)]
#[command(
    name = "typeinfo-fuzz",
    subcommand_required = true,
    arg_required_else_help = true
)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// List the targets
    #[command(args_override_self = true)]
    List,
    /// Fuzz each target for --seconds in child processes, then print a table
    #[command(args_override_self = true)]
    Run {
        #[command(flatten)]
        common: Common,
        /// Seconds of fuzzing per target
        #[arg(long, value_name = "S", default_value_t = 10.0)]
        seconds: f64,
    },
    /// Replay every input of the corpus (inputs that once failed) on each target
    #[command(args_override_self = true)]
    Replay {
        #[command(flatten)]
        common: Common,
    },
    /// One target in this process (what `run` and `replay` start)
    #[command(hide = true, args_override_self = true)]
    Child {
        /// Run or replay
        mode: Mode,
        #[command(flatten)]
        common: Common,
        /// Seconds of fuzzing
        #[arg(long, value_name = "S", default_value_t = 10.0)]
        seconds: f64,
        /// The file that holds the case being run (saved into the corpus after a crash)
        #[arg(long, value_name = "FILE")]
        current: Option<PathBuf>,
        /// Replay only the corpus files after this one
        #[arg(long, value_name = "FILE")]
        after: Option<PathBuf>,
        /// Skip the unmutated seeds and their truncations (a restart after a crash)
        #[arg(long)]
        mutate_only: bool,
    },
}

/// What a child does.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Run,
    Replay,
}

/// The flags of `run` and `replay`.
#[derive(clap::Args, Debug)]
struct Common {
    /// `all`, or target names separated by commas (see `list`)
    #[arg(long, value_name = "NAME|all", default_value = "all")]
    target: String,
    /// The seed of the generators [default: the current time]
    #[arg(long, value_name = "N")]
    seed: Option<u64>,
    /// The corpus: inputs that once failed, one directory per target
    #[arg(long, value_name = "DIR", default_value = DEFAULT_CORPUS)]
    corpus: PathBuf,
    /// A case that runs longer fails
    #[arg(long, value_name = "MS", default_value_t = DEFAULT_CASE_TIMEOUT_MS)]
    case_timeout_ms: u64,
    /// The stack of the thread that runs the cases (a spawned thread's, as timely's workers)
    #[arg(long, value_name = "KIB", default_value_t = DEFAULT_STACK_KIB)]
    stack_kib: usize,
}

/// What a command runs with (the driver's and the child's).
struct Args {
    /// Replay the corpus (rather than fuzz).
    replay: bool,
    target: String,
    seconds: f64,
    seed: u64,
    corpus: PathBuf,
    current: Option<PathBuf>,
    after: Option<PathBuf>,
    mutate_only: bool,
    case_timeout_ms: u64,
    stack_kib: usize,
}

impl Args {
    fn new(replay: bool, common: Common, seconds: f64) -> Self {
        let seed = common.seed.unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64)
        });
        Args {
            replay,
            target: common.target,
            seconds,
            seed,
            corpus: common.corpus,
            current: None,
            after: None,
            mutate_only: false,
            case_timeout_ms: common.case_timeout_ms,
            stack_kib: common.stack_kib,
        }
    }
}

fn main() -> ExitCode {
    // `--help` prints to stdout and exits 0; clap's usage errors exit 2.
    let result = match Cli::parse().command {
        Cmd::List => {
            for t in targets::TARGETS {
                println!("{:<10} {}", t.name, t.about);
            }
            Ok(true)
        }
        Cmd::Run { common, seconds } => drive(&Args::new(false, common, seconds)),
        // `replay` runs no mutations: its children get 0 s.
        Cmd::Replay { common } => drive(&Args::new(true, common, 10.0)),
        Cmd::Child {
            mode,
            common,
            seconds,
            current,
            after,
            mutate_only,
        } => child(&Args {
            current,
            after,
            mutate_only,
            ..Args::new(mode == Mode::Replay, common, seconds)
        }),
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("typeinfo-fuzz: {e}");
            ExitCode::from(2)
        }
    }
}

/// One target in this process; prints `FAIL` lines and a `RESULT` line.
fn child(args: &Args) -> Result<bool, String> {
    let target =
        targets::find(&args.target).ok_or_else(|| format!("no target `{}`", args.target))?;
    let current = args.current.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!(
            "typeinfo-fuzz-{}-{}.current",
            target.name,
            std::process::id()
        ))
    });
    let config = RunConfig {
        seconds: args.seconds,
        seed: args.seed,
        corpus: args.corpus.clone(),
        current,
        case_timeout: Duration::from_millis(args.case_timeout_ms),
        stack_bytes: args.stack_kib * 1024,
        replay_after: args.after.clone(),
        mutate_only: args.mutate_only,
    };
    let started = Instant::now();
    let stats = harness::run_target(target, &config, args.replay)?;
    let rss = alloc::peak_rss_kib();
    let mut ok = stats.failures == 0;
    if rss > target.rss_bound_mib * 1024 {
        ok = false;
        println!(
            "FAIL target={} kind=rss: peak resident set {} MiB, bound {} MiB",
            target.name,
            rss / 1024,
            target.rss_bound_mib
        );
    }
    println!(
        "slowest case of {}: {} ms, {}",
        target.name,
        stats.slowest_case.as_millis(),
        stats.slowest_input
    );
    println!(
        "RESULT target={} cases={} values={} errors={} failures={} peak_rss_kib={rss} rss_bound_mib={} max_case_heap_kib={} slowest_case_ms={} seconds={:.1} ok={ok}",
        target.name,
        stats.cases,
        stats.values,
        stats.errors,
        stats.failures,
        target.rss_bound_mib,
        stats.max_case_heap / 1024,
        stats.slowest_case.as_millis(),
        started.elapsed().as_secs_f64(),
    );
    let _ = std::io::stdout().flush();
    let _ = std::fs::remove_file(&config.current);
    Ok(ok)
}

/// What the driver learnt about one target (over every child it took).
#[derive(Default)]
struct Summary {
    target: String,
    cases: u64,
    values: u64,
    errors: u64,
    failures: u64,
    crashes: u64,
    peak_rss_kib: u64,
    rss_bound_mib: u64,
    max_case_heap_kib: u64,
    slowest_case_ms: u64,
    ok: bool,
    problems: Vec<String>,
}

/// What one child process reported.
struct ChildReport {
    fields: Vec<(String, String)>,
    /// It died or hung instead of reporting.
    crashed: bool,
    /// The last corpus file it started to replay.
    last_replayed: Option<String>,
    /// It could not set its target up (exit code 2).
    setup_failed: bool,
    problem: Option<String>,
}

impl ChildReport {
    fn number(&self, name: &str) -> u64 {
        self.fields
            .iter()
            .find(|(k, _)| k == name)
            .and_then(|(_, v)| v.parse().ok())
            .unwrap_or(0)
    }
}

impl Summary {
    fn add(&mut self, child: &ChildReport) {
        self.cases += child.number("cases");
        self.values += child.number("values");
        self.errors += child.number("errors");
        self.failures += child.number("failures");
        self.peak_rss_kib = self.peak_rss_kib.max(child.number("peak_rss_kib"));
        self.max_case_heap_kib = self
            .max_case_heap_kib
            .max(child.number("max_case_heap_kib"));
        self.slowest_case_ms = self.slowest_case_ms.max(child.number("slowest_case_ms"));
        let reported_ok = child.fields.iter().any(|(k, v)| k == "ok" && v == "true");
        if child.crashed {
            self.crashes += 1;
            self.failures += 1;
        }
        self.ok &= reported_ok && !child.crashed;
        if let Some(p) = &child.problem {
            self.problems.push(p.clone());
        }
    }
}

/// Children a target may take (a crash or hang ends a child; the driver starts another
/// with the time left, so that one bug does not end the run of its target).
const MAX_CHILDREN: usize = 20;

/// Runs each selected target in child processes and prints the table.
fn drive(args: &Args) -> Result<bool, String> {
    let selected: Vec<&'static Target> = if args.target == "all" {
        targets::TARGETS.iter().collect()
    } else {
        args.target
            .split(',')
            .map(|n| targets::find(n).ok_or_else(|| format!("no target `{n}`")))
            .collect::<Result<_, _>>()?
    };
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    let scratch = targets::scratch_dir()?;
    let replay = args.replay;
    if !replay {
        println!(
            "seed {} ({} s per target; case k of a child is a function of its seed and k)",
            args.seed, args.seconds
        );
    }
    let run_started = Instant::now();
    let mut summaries = Vec::new();
    for target in selected {
        let current = scratch.path().join(format!("{}.current", target.name));
        let deadline = Instant::now() + Duration::from_secs_f64(args.seconds.max(0.0));
        let mut summary = Summary {
            target: target.name.to_owned(),
            rss_bound_mib: target.rss_bound_mib,
            ok: true,
            ..Summary::default()
        };
        let mut after: Option<String> = None;
        for child in 0..MAX_CHILDREN {
            let seconds = if replay {
                0.0
            } else {
                deadline
                    .saturating_duration_since(Instant::now())
                    .as_secs_f64()
            };
            let seed = args.seed.wrapping_add(child as u64);
            let mut cmd = Command::new(&exe);
            cmd.arg("child").arg(if replay { "replay" } else { "run" });
            cmd.args([
                "--target",
                target.name,
                "--seconds",
                &format!("{seconds:.3}"),
                "--seed",
                &seed.to_string(),
            ]);
            cmd.arg("--corpus")
                .arg(&args.corpus)
                .arg("--current")
                .arg(&current);
            cmd.args([
                "--case-timeout-ms",
                &args.case_timeout_ms.to_string(),
                "--stack-kib",
                &args.stack_kib.to_string(),
            ]);
            if let Some(a) = &after {
                cmd.args(["--after", a]);
            }
            if child > 0 && !replay {
                // The seeds and truncations ran in the first child; a restart mutates.
                cmd.arg("--mutate-only");
            }
            // A child gets its run time, its setup (RocksDB, seeds) and one case's timeout.
            let limit = Duration::from_secs_f64(seconds)
                + Duration::from_millis(args.case_timeout_ms)
                + Duration::from_secs(300);
            let report = run_child(target, cmd, &current, &args.corpus, limit, seed);
            summary.add(&report);
            // A setup error (exit code 2) would repeat in every child.
            if !report.crashed || report.setup_failed {
                break;
            }
            if replay {
                match report.last_replayed {
                    Some(last) => after = Some(last),
                    None => break,
                }
            } else if Instant::now() >= deadline {
                break;
            }
        }
        summaries.push(summary);
    }
    println!();
    println!(
        "{:<10} {:>11} {:>11} {:>11} {:>8} {:>7} {:>9} {:>9} {:>14} {:>9}",
        "target",
        "cases",
        "values",
        "errors",
        "failures",
        "crashes",
        "peak RSS",
        "bound",
        "max case heap",
        "slowest"
    );
    let mut all_ok = true;
    for s in &summaries {
        all_ok &= s.ok;
        let heap = if s.max_case_heap_kib >= 1024 {
            format!("{} MiB", s.max_case_heap_kib / 1024)
        } else {
            format!("{} KiB", s.max_case_heap_kib)
        };
        println!(
            "{:<10} {:>11} {:>11} {:>11} {:>8} {:>7} {:>9} {:>9} {:>14} {:>9}",
            s.target,
            s.cases,
            s.values,
            s.errors,
            s.failures,
            s.crashes,
            format!("{} MiB", s.peak_rss_kib / 1024),
            format!("{} MiB", s.rss_bound_mib),
            heap,
            format!("{} ms", s.slowest_case_ms),
        );
        for p in s.problems.iter().take(3) {
            println!("           {p}");
        }
        if s.problems.len() > 3 {
            println!("           ({} more crashes)", s.problems.len() - 3);
        }
    }
    println!("{:.0} s in all", run_started.elapsed().as_secs_f64());
    println!(
        "{}",
        if all_ok {
            "ok: no failure"
        } else {
            "FAILED: see the FAIL lines above; the inputs are in the corpus"
        }
    );
    Ok(all_ok)
}

fn run_child(
    target: &'static Target,
    mut cmd: Command,
    current: &Path,
    corpus: &Path,
    limit: Duration,
    seed: u64,
) -> ChildReport {
    let mut report = ChildReport {
        fields: Vec::new(),
        crashed: false,
        last_replayed: None,
        setup_failed: false,
        problem: None,
    };
    let _ = std::fs::remove_file(current);
    let mut child = match cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn() {
        Ok(c) => c,
        Err(e) => {
            report.crashed = true;
            report.problem = Some(format!("cannot start: {e}"));
            return report;
        }
    };
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let out_thread = std::thread::spawn(move || {
        let mut result = None;
        let mut last = None;
        if let Some(out) = stdout {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if let Some(rest) = line.strip_prefix("RESULT ") {
                    result = Some(rest.to_owned());
                } else if let Some(path) = line.strip_prefix("REPLAY ") {
                    last = Some(path.to_owned());
                } else {
                    println!("{line}");
                }
            }
        }
        (result, last)
    });
    let err_thread = std::thread::spawn(move || {
        let mut text = String::new();
        if let Some(mut err) = stderr {
            let _ = err.read_to_string(&mut text);
        }
        text
    });
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if started.elapsed() > limit => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(50)),
            Err(_) => break None,
        }
    };
    let (result, last) = out_thread.join().unwrap_or_default();
    report.last_replayed = last;
    let stderr_text = err_thread.join().unwrap_or_default();
    let tail = |n: usize| {
        stderr_text
            .lines()
            .rev()
            .take(n)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect::<Vec<_>>()
            .join(" | ")
    };
    if let Some(line) = &result {
        report.fields = line
            .split(' ')
            .filter_map(|kv| kv.split_once('='))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
    }
    let finished = result.is_some()
        && status
            .as_ref()
            .is_some_and(|s| s.code().is_some_and(|c| c == 0 || c == 1));
    if !finished {
        report.crashed = true;
        report.setup_failed = status.as_ref().is_some_and(|s| s.code() == Some(2));
        let how = match &status {
            None => format!("was killed after {} s", limit.as_secs()),
            Some(s) => describe_exit(s),
        };
        let saved = harness::Current::read(current)
            .and_then(|bytes| harness::save_to_corpus(corpus, target.name, &bytes).ok())
            .map_or_else(
                || "(no input recorded)".to_owned(),
                |p| p.display().to_string(),
            );
        let line = format!(
            "FAIL target={} kind=crash seed={seed} file={saved}: the process {how}: {}",
            target.name,
            tail(6)
        );
        println!("{line}");
        report.problem = Some(line);
    } else if status.as_ref().is_some_and(|s| !s.success()) && !stderr_text.trim().is_empty() {
        report.problem = Some(format!("stderr: {}", tail(4)));
    }
    report
}

fn describe_exit(status: &std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exited with code {code} without a result"),
        (None, Some(sig)) => format!(
            "died of signal {sig}{}",
            match sig {
                6 => " (SIGABRT: an abort, a stack overflow or a failed allocation)",
                9 => " (SIGKILL)",
                11 => " (SIGSEGV)",
                _ => "",
            }
        ),
        _ => "ended abnormally".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// clap's own checks of the definition (names, groups, defaults that parse).
    #[test]
    fn the_command_line_is_well_formed() {
        super::Cli::command().debug_assert();
    }
}
