//! The Nexmark benchmark on the typeinfo runtime: every query of this crate's `QUERIES.md`
//! (`nexmark/QUERIES.md`) as a DataStream job, over an event file in the form of its
//! `FORMAT.md` (`nexmark/FORMAT.md`) or over the `nexmark` crate's generator.
//!
//! ```text
//! nexmark --query qN --events FILE [--side-input FILE] [--parallelism P] [--state heap|rocksdb]
//! nexmark --query qN --generate N [--side-input FILE] [--parallelism P] [--state heap|rocksdb] [--base-time MS]
//! nexmark --generate N --write-events FILE [--base-time MS]
//! nexmark --help
//! ```
//!
//! * With `--events`, the query's CSV rows go to stdout (buffered, in no particular order;
//!   compare them after `LC_ALL=C sort`), and `events_per_s=...` to stderr: the file's lines
//!   over the job's time (`JobResult::elapsed`, from the start of execution to its end:
//!   process start-up and argument parsing excluded, reading and parsing the file included).
//! * With `--generate N`, the job reads `N` events of the generator (the crate's
//!   `NexmarkConfig::default()` with `base_time` fixed, by default to `1704067195000` as the
//!   files of FORMAT.md), its rows go to a counting sink (Nexmark's blackhole), and stdout ends
//!   with `rows=...`, then `events_per_s=...` as the last line.
//! * `--write-events FILE` writes `N` generated events in FORMAT.md's JSON lines (to a
//!   temporary name beside FILE, synced, then renamed); `--base-time` moves the first event.
//! * q6, q10 and q23 are refused (exit 2) with QUERIES.md's reason. q12 (processing-time
//!   windows) runs and prints its rows, which depend on the wall clock.
//! * Exit status: 0 on success (and for `--help`); 1 when an input is unreadable or
//!   malformed (the message names the file and the 1-based line) or the job fails; 2 on a
//!   usage error (a bad option or value, an unknown or refused query, a missing or
//!   conflicting option, q13 over a file without `--side-input`), reported by clap.
//! * `--parallelism P` is the job's parallelism (default 1); `--state rocksdb` keeps keyed
//!   state in RocksDB, in a temporary directory that the runtime removes at the end of the
//!   job (`heap`, the default, keeps it in memory).
//!
//! # How the queries run
//!
//! Each query is a job of the runtime's general API (module [`queries`]): `flat_map` splits
//! the event stream into persons, auctions and bids; `map`/`filter` for the stateless
//! queries; keyed windows for q5 (sliding), q7 (tumbling over all bids), q8 (a window
//! co-group), q11 (sessions) and q12 (processing time); `connect` + `key_by` + a
//! `KeyedCoProcessFunction` with keyed list state for the regular joins; a
//! `KeyedProcessFunction` with keyed state for the final tables (module [`functions`]).
//!
//! * **Time.** Timestamps are the events' `date_time`; watermarks come from the runtime's
//!   bounded-out-of-orderness strategy with 4 s (`max - 4000 - 1`, Flink's generator),
//!   generated per split in the source. The end of a bounded source sends the maximal
//!   watermark, which fires every open window and every timer.
//! * **Final tables** (q4, q9, q15-q19) keep an accumulator per key and print it once, from
//!   an event-time timer at `i64::MAX` registered with the key's first record, which fires
//!   at the end of the input. q4's second step (average per category) reads the first
//!   step's final rows, so it too prints at the end.
//! * **Regular joins** (q3, q4, q9, q20, q7's last step) keep both sides in keyed list state
//!   forever and emit each matching pair once, whichever side comes first; the condition
//!   (q4/q9's `A.dateTime <= B.dateTime <= A.expires`, q7's `E - 10000 <= B.dateTime <= E`)
//!   is checked per pair. Records are narrowed to the columns the query needs before the
//!   join, so state holds only those.
//! * **q13** reads the side table as a second bounded source (from `--side-input`; in
//!   generator mode without it, the table `k,k` for `k` in 0..9999) and joins it keyed by
//!   `auction % 10000`: a bid is paired with the table rows of its key at its arrival, and
//!   waits in keyed state for later rows while the table may be incomplete (until the
//!   table's input ended; see [`functions::LookupJoin`]).
//! * **Ties by file order** (q9's full ties, q18's equal `dateTime`, q19's equal prices)
//!   compare each record's event number (`seq`, its 0-based line), not arrival order, so the
//!   result is the same at every parallelism and with the generator's parallel splits.
//! * **q5** counts bids per auction in sliding windows (10 s every 2 s); the counts of one
//!   window all carry its last millisecond as timestamp, so a 2-s tumbling window keyed by
//!   the window's start collects them, and keeps the auctions with the maximal count.
//! * **q7** computes the maximum per 10-s tumbling window with `window_all` (parallelism 1,
//!   as Flink's global aggregation), then joins every bid with those maxima keyed by price.
//! * **q8** is a window co-group of persons (`id`, `name`) and auctions (`seller`) by id in
//!   10-s tumbling windows: a window with at least one auction gives one row per distinct
//!   name of that id in the window.
//! * **Input checks** follow the Python reference: each line is one JSON object of
//!   FORMAT.md with exactly the fields listed (unknown or missing fields, integers above
//!   2^63-1, strings with `,`, `"`, CR or LF, empty lines are errors), and `date_time` must
//!   never decrease along the file. Every line is checked, whatever the query reads.
//! * **The sources.** An event file is one split, read in order by one source subtask; the
//!   other operators run at the job's parallelism. The generator is split into one split per
//!   subtask (event `n` goes to split `n % P`), each in event order with its own watermark.

/// jemalloc instead of the system allocator: the queries' state clones and drops many small
/// strings (glibc's malloc and free were a third of q9's time; see the workspace's
/// Cargo.toml for why not mimalloc).
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

mod csv;
mod functions;
mod model;
mod parse;
mod queries;
mod source;

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use clap::error::ErrorKind;
use clap::{ArgGroup, CommandFactory, Parser};
use serde::Serialize;
use typeinfo_runtime::{StateBackend, StreamExecutionEnvironment, WatermarkStrategy};

use crate::csv::CountSink;
use crate::model::Event;
use crate::queries::Output;
use crate::source::{EventFile, Generated, SideTable};

/// The base time of FORMAT.md's event files: 2023-12-31T23:59:55Z.
const DEFAULT_BASE_TIME: u64 = 1_704_067_195_000;

/// The three forms of the command line.
const USAGE: &str = "nexmark --query qN --events FILE [--side-input FILE] [--parallelism P] [--state heap|rocksdb]
       nexmark --query qN --generate N [--side-input FILE] [--parallelism P] [--state heap|rocksdb] [--base-time MS]
       nexmark --generate N --write-events FILE [--base-time MS]";

const AFTER_HELP: &str = "\
With --events, the query's CSV rows go to stdout (in no particular order) and events_per_s=...
to stderr. With --generate N, the rows are counted: stdout ends with rows=... and
events_per_s=.... q6, q10 and q23 are refused with QUERIES.md's reason.

Exit status: 0 on success, 1 when an input is unreadable or malformed or the job fails,
2 on a usage error.";

/// How the program ends: the exit status and what it says on stderr.
enum Failure {
    /// A usage error (exit 2) beyond clap's checks (q13 over a file without its side input).
    Usage(String),
    /// Bad input or a failed job (exit 1).
    Input(String),
}

/// The Nexmark queries as DataStream jobs, over an event file (FORMAT.md) or the generator.
// A repeated flag takes its last value (`args_override_self`), as before clap.
#[derive(Parser, Debug)]
#[command(
    name = "nexmark",
    override_usage = USAGE,
    after_help = AFTER_HELP,
    args_override_self = true,
    group(ArgGroup::new("input").required(true).args(["events", "generate"])),
)]
struct Args {
    /// The query (case-insensitive): q0-q5, q7-q9, q11-q22
    #[arg(
        long,
        value_name = "qN",
        value_parser = parse_query,
        required_unless_present = "write_events"
    )]
    query: Option<String>,
    /// Read the events from FILE (FORMAT.md's JSON lines); the rows go to stdout
    #[arg(long, value_name = "FILE")]
    events: Option<PathBuf>,
    /// q13's side table (CSV key,value), required over --events [generator default: k,k
    /// for k in 0..9999]
    #[arg(long, value_name = "FILE")]
    side_input: Option<PathBuf>,
    /// Read N events of the nexmark crate's generator (rows counted, not printed)
    #[arg(long, value_name = "N")]
    generate: Option<u64>,
    /// Write the N generated events to FILE in FORMAT.md's JSON lines (no query)
    #[arg(
        long,
        value_name = "FILE",
        requires = "generate",
        conflicts_with_all = ["query", "events"]
    )]
    write_events: Option<PathBuf>,
    /// The first generated event's time, ms since the epoch (FORMAT.md's: 2023-12-31T23:59:55Z)
    #[arg(long, value_name = "MS", default_value_t = DEFAULT_BASE_TIME)]
    base_time: u64,
    /// The job's parallelism (1..=1024)
    #[arg(
        long,
        value_name = "P",
        default_value_t = 1,
        value_parser = clap::value_parser!(u32).range(1..=1024)
    )]
    parallelism: u32,
    /// Where keyed state lives: in memory, or in RocksDB in a temporary directory
    #[arg(long, default_value = "heap", value_parser = ["heap", "rocksdb"])]
    state: String,
    /// Every operator a timely operator of its own (operator chaining off)
    #[arg(long)]
    no_chaining: bool,
}

/// `--query`: lower case, and one this crate runs (the refused ones say why).
fn parse_query(value: &str) -> Result<String, String> {
    let query = value.to_lowercase();
    if let Some(reason) = queries::not_covered(&query) {
        return Err(reason.to_owned());
    }
    if !queries::QUERIES.contains(&query.as_str()) {
        return Err(format!(
            "unknown query (supported: {})",
            queries::QUERIES.join(" ")
        ));
    }
    Ok(query)
}

fn main() -> ExitCode {
    // `--help` prints to stdout and exits 0; clap's usage errors exit 2.
    let args = Args::parse();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Usage(message)) => {
            // In clap's form (message, usage, the pointer to --help) and status (2).
            let error = Args::command().error(ErrorKind::MissingRequiredArgument, message);
            let _ = error.print();
            ExitCode::from(2)
        }
        Err(Failure::Input(message)) => {
            eprintln!("nexmark: error: {message}");
            ExitCode::from(1)
        }
    }
}

fn run(args: &Args) -> Result<(), Failure> {
    // clap checked the combinations: --write-events comes with --generate and without
    // --query/--events; otherwise --query with exactly one of --events and --generate.
    let base_time = args.base_time;
    if let Some(path) = &args.write_events {
        let n = args
            .generate
            .ok_or_else(|| Failure::Usage("--write-events needs --generate N".into()))?;
        return write_events(path, n, base_time)
            .map_err(|e| Failure::Input(format!("{}: {e}", path.display())));
    }
    let query = args
        .query
        .clone()
        .ok_or_else(|| Failure::Usage("--query is required".into()))?;
    let state = StateBackend::parse(&args.state).map_err(|e| Failure::Usage(e.to_string()))?;
    match (&args.events, args.generate) {
        (Some(_), Some(_)) => Err(Failure::Usage(
            "give either --events FILE or --generate N".into(),
        )),
        (None, None) => Err(Failure::Usage(
            "--events FILE or --generate N is required".into(),
        )),
        (Some(events), None) => {
            if query == "q13" && args.side_input.is_none() {
                return Err(Failure::Usage(
                    "q13 needs --side-input FILE (CSV key,value)".into(),
                ));
            }
            run_file(&query, events, args, state)
        }
        (None, Some(n)) => run_generated(&query, n, base_time, args, state),
    }
}

/// The environment of a run.
fn environment(args: &Args, state: StateBackend) -> StreamExecutionEnvironment {
    let env = StreamExecutionEnvironment::new();
    env.set_parallelism(args.parallelism)
        .set_state_backend(state);
    if args.no_chaining {
        env.disable_operator_chaining();
    }
    env
}

/// Nexmark's watermarks: 4 s behind the highest event time.
fn watermarks() -> WatermarkStrategy<Event> {
    WatermarkStrategy::for_bounded_out_of_orderness(Duration::from_secs(4))
        .with_timestamp_assigner(|e: &Event, _| e.date_time())
}

/// Fails with an input error unless `path` can be opened for reading.
fn check_readable(path: &Path, what: &str) -> Result<(), Failure> {
    File::open(path)
        .map(drop)
        .map_err(|e| Failure::Input(format!("{}: cannot open {what}: {e}", path.display())))
}

fn run_file(query: &str, events: &Path, args: &Args, state: StateBackend) -> Result<(), Failure> {
    check_readable(events, "event file")?;
    if query == "q13" {
        if let Some(side) = &args.side_input {
            check_readable(side, "side-input file")?;
        }
    }
    let env = environment(args, state);
    let lines = Arc::new(AtomicU64::new(0));
    let stream = env
        .from_source(
            EventFile {
                path: events.to_owned(),
                keep: queries::projection(query),
                lines: Arc::clone(&lines),
            },
            watermarks(),
            "Event file",
        )
        .set_parallelism(1);
    let side = (query == "q13").then(|| side_table(&env, args.side_input.clone()));
    if !queries::build(query, &stream, side.as_ref(), &Output::Stdout) {
        return Err(Failure::Usage(format!("unknown query `{query}`")));
    }
    let result = env
        .execute(&format!("nexmark {query}"))
        .map_err(|e| Failure::Input(e.to_string()))?;
    let n = lines.load(Ordering::Relaxed);
    eprintln!("events_per_s={}", rate(n, result.elapsed));
    Ok(())
}

fn side_table(
    env: &StreamExecutionEnvironment,
    path: Option<PathBuf>,
) -> typeinfo_runtime::DataStream<model::SideRow> {
    env.from_source(
        SideTable { path },
        WatermarkStrategy::no_watermarks(),
        "Side input",
    )
    .set_parallelism(1)
}

fn run_generated(
    query: &str,
    n: u64,
    base_time: u64,
    args: &Args,
    state: StateBackend,
) -> Result<(), Failure> {
    if let Some(side) = &args.side_input {
        check_readable(side, "side-input file")?;
    }
    let env = environment(args, state);
    let stream = env.from_source(
        Generated {
            count: n,
            splits: u64::from(args.parallelism),
            base_time,
        },
        watermarks(),
        "Generator",
    );
    let side = (query == "q13").then(|| side_table(&env, args.side_input.clone()));
    let sink = CountSink::default();
    if !queries::build(query, &stream, side.as_ref(), &Output::Count(sink.clone())) {
        return Err(Failure::Usage(format!("unknown query `{query}`")));
    }
    let result = env
        .execute(&format!("nexmark {query}"))
        .map_err(|e| Failure::Input(e.to_string()))?;
    let mut out = std::io::stdout().lock();
    let rows = sink.rows.load(Ordering::Relaxed);
    writeln!(out, "rows={rows}")
        .and_then(|()| writeln!(out, "events_per_s={}", rate(n, result.elapsed)))
        .map_err(|e| Failure::Input(format!("stdout: {e}")))
}

/// Events per second, rounded.
fn rate(events: u64, elapsed: Duration) -> u64 {
    let secs = elapsed.as_secs_f64();
    if secs <= 0.0 {
        return 0;
    }
    (events as f64 / secs).round() as u64
}

/// One line of an event file (FORMAT.md): the nested object is the crate's own serde form.
#[derive(Serialize)]
struct LineOut<'a> {
    event_type: u8,
    #[serde(skip_serializing_if = "Option::is_none")]
    person: Option<&'a nexmark::event::Person>,
    #[serde(skip_serializing_if = "Option::is_none")]
    auction: Option<&'a nexmark::event::Auction>,
    #[serde(skip_serializing_if = "Option::is_none")]
    bid: Option<&'a nexmark::event::Bid>,
}

/// Writes `n` generated events to `path`: to a temporary file beside it, synced, renamed.
fn write_events(path: &Path, n: u64, base_time: u64) -> std::io::Result<()> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "events".into());
    let tmp = path.with_file_name(format!(".{name}.tmp-{}", std::process::id()));
    let result = (|| {
        let mut out = BufWriter::with_capacity(1 << 20, File::create(&tmp)?);
        let generator =
            nexmark::EventGenerator::new(source::generator_config(base_time)).take(n as usize);
        for event in generator {
            let line = match &event {
                nexmark::event::Event::Person(p) => LineOut {
                    event_type: 0,
                    person: Some(p),
                    auction: None,
                    bid: None,
                },
                nexmark::event::Event::Auction(a) => LineOut {
                    event_type: 1,
                    person: None,
                    auction: Some(a),
                    bid: None,
                },
                nexmark::event::Event::Bid(b) => LineOut {
                    event_type: 2,
                    person: None,
                    auction: None,
                    bid: Some(b),
                },
            };
            serde_json::to_writer(&mut out, &line)?;
            out.write_all(b"\n")?;
        }
        let file = out.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)?;
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            File::open(dir).and_then(|d| d.sync_all())?;
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod cli_tests {
    use clap::{CommandFactory, Parser};

    use super::{Args, DEFAULT_BASE_TIME};

    /// clap's own checks of the definition (names, groups, defaults that parse).
    #[test]
    fn the_command_line_is_well_formed() {
        Args::command().debug_assert();
    }

    /// The defaults are the ones before clap, and a repeated flag takes its last value.
    #[test]
    fn defaults_and_repeated_flags() {
        let a = Args::try_parse_from(["nexmark", "--query", "Q5", "--generate", "10"]).unwrap();
        assert_eq!(a.query.as_deref(), Some("q5"));
        assert_eq!((a.parallelism, a.state.as_str()), (1, "heap"));
        assert_eq!(a.base_time, DEFAULT_BASE_TIME);
        let a = Args::try_parse_from([
            "nexmark",
            "--query",
            "q0",
            "--events",
            "f",
            "--parallelism",
            "3",
            "--parallelism",
            "2",
        ])
        .unwrap();
        assert_eq!(a.parallelism, 2);
    }
}
