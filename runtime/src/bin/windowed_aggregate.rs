//! Count and sum per key in event-time windows over a CSV file.
//!
//! ```text
//! cargo run --release -p typeinfo-runtime --bin windowed_aggregate -- --input FILE \
//!   --window tumbling:SIZE[:OFFSET]|sliding:SIZE:SLIDE|session:GAP|count:N[:SLIDE] \
//!   --out-of-orderness MS --allowed-lateness MS [--parallelism N] [--state heap|rocksdb] \
//!   [--trigger count:N|purging-count:N|continuous-event:MS] [--evictor count:N|time:MS] \
//!   [--hosts host:port,host:port --process I [--peer-timeout-ms MS]] [--metrics] \
//!   [--output DIR] [--checkpoint-dir DIR --checkpoint-interval-ms MS [--resume]] [--restore PATH] \
//!   [--lines-per-second N] [--mode streaming|batch]
//! ```
//!
//! `count:N` is Flink's `countWindow(N)` (global windows, a purging count trigger) and
//! `count:N:SLIDE` its `countWindow(N, SLIDE)` (a count evictor of N, a count trigger of SLIDE);
//! their lines print START and END as `-`. `--trigger` replaces the window's trigger as
//! `.trigger(...)` does (`CountTrigger`, `PurgingTrigger::of(CountTrigger)`,
//! `ContinuousEventTimeTrigger`), `--evictor` adds an evictor that evicts before the function
//! (`CountEvictor`, `TimeEvictor`).
//!
//! Input lines are `key,timestamp_ms,amount` (`#` lines and empty lines are skipped), read
//! by one source subtask in file order. After every event the watermark
//! `max timestamp - out_of_orderness - 1` is emitted; the end of the input emits the maximal
//! watermark. Each window firing prints `window,KEY,START,END,COUNT,SUM` (a late firing prints
//! the updated line again) and each late record prints `late,KEY,TIMESTAMP,AMOUNT`.
//! With `--hosts`, this process is process `--process` of a multi-process job and prints the
//! lines of its own workers. With `--output DIR` the lines go to the exactly-once text file
//! sink in `DIR` instead of stdout; with `--checkpoint-dir` the job checkpoints, and
//! `--restore` resumes from a checkpoint directory's latest checkpoint (or a savepoint);
//! `--resume` restores from the checkpoint directory's newest checkpoint when it has one, so
//! that the same command line, started again by a supervisor, resumes the job;
//! `--lines-per-second` slows the parsing down (for the crash tests that kill it mid-way).
//! `--mode batch` runs the same program in batch mode (`typeinfo_runtime::batch`, Flink's
//! BATCH execution mode): each window fires once per key with all its records, nothing is
//! late (no `late` lines), and the lines come out per key.

use std::process::ExitCode;

mod support;

use typeinfo::TypeInfo;
use typeinfo_runtime::evictor::{CountEvictor, TimeEvictor};
use typeinfo_runtime::functions::CountAndSum;
use typeinfo_runtime::trigger::{
    ContinuousEventTimeTrigger, CountTrigger, PurgingTrigger, Trigger,
};
use typeinfo_runtime::window::Window;
use typeinfo_runtime::{
    CheckpointConfig, DataStream, EventTimeSessionWindows, GlobalWindow, OutputTag,
    RestoreSettings, RuntimeMode, SlidingEventTimeWindows, StateBackend,
    StreamExecutionEnvironment, TimeWindow, TimeWindows, TumblingEventTimeWindows,
    WatermarkStrategy, WindowAssigner, WindowedStream,
};

#[derive(TypeInfo, Clone, Debug)]
struct Event {
    key: String,
    ts: i64,
    amount: i64,
}

/// The window of the command line.
#[derive(Debug, Clone, Copy)]
enum WindowSpec {
    Time(TimeWindows),
    /// `count:N` or `count:N:SLIDE`.
    Count(u64, Option<u64>),
}

/// `--trigger`.
#[derive(Debug, Clone, Copy)]
enum TriggerSpec {
    Count(u64),
    PurgingCount(u64),
    ContinuousEvent(i64),
}

/// `--evictor`.
#[derive(Debug, Clone, Copy)]
enum EvictorSpec {
    Count(usize),
    Time(i64),
}

/// Count and sum per key in event-time windows over a CSV file (`key,timestamp_ms,amount`).
#[derive(clap::Parser)]
#[command(name = "windowed_aggregate", about, long_about = None)]
struct Args {
    /// The CSV file.
    #[arg(long)]
    input: String,
    /// tumbling:SIZE[:OFFSET] | sliding:SIZE:SLIDE | session:GAP | count:N[:SLIDE] (ms).
    #[arg(long, value_parser = parse_window)]
    window: WindowSpec,
    /// Replaces the window's trigger: count:N | purging-count:N | continuous-event:MS.
    #[arg(long, value_parser = parse_trigger)]
    trigger: Option<TriggerSpec>,
    /// Evicts before the function: count:N | time:MS.
    #[arg(long, value_parser = parse_evictor)]
    evictor: Option<EvictorSpec>,
    /// Bounded out-of-orderness of the watermarks, in ms.
    #[arg(long, allow_negative_numbers = true)]
    out_of_orderness: i64,
    /// Allowed lateness of the windows, in ms.
    #[arg(long, allow_negative_numbers = true)]
    allowed_lateness: i64,
    /// Parallelism of every operator.
    #[arg(long, default_value_t = 1)]
    parallelism: u32,
    /// Where keyed state lives.
    #[arg(long, default_value = "heap", value_parser = parse_state)]
    state: StateBackend,
    #[command(flatten)]
    cluster: support::ClusterArgs,
    /// Progress lines on stderr every 2 s (records per second, watermark, checkpoints).
    #[arg(long)]
    metrics: bool,
    /// The exactly-once text file sink's directory (default: lines on stdout).
    #[arg(long)]
    output: Option<String>,
    /// Checkpoints into this directory (a path or an object store URL).
    #[arg(long)]
    checkpoint_dir: Option<String>,
    /// Checkpoint interval, in ms.
    #[arg(long, default_value_t = 1000, requires = "checkpoint_dir")]
    checkpoint_interval_ms: u64,
    /// Start from the checkpoint directory's newest checkpoint when there is one.
    #[arg(long, requires = "checkpoint_dir")]
    resume: bool,
    /// A checkpoint or savepoint to start from.
    #[arg(long)]
    restore: Option<String>,
    /// streaming | batch | automatic.
    #[arg(long, default_value = "streaming", value_parser = parse_mode)]
    mode: RuntimeMode,
    /// Slows the parsing down to this many lines per second.
    #[arg(long)]
    lines_per_second: Option<u64>,
}

fn parse_window(spec: &str) -> Result<WindowSpec, String> {
    let parts: Vec<&str> = spec.split(':').collect();
    let num = |s: &str| {
        s.parse::<i64>()
            .map_err(|e| format!("--window {spec}: `{s}`: {e}"))
    };
    let count = |s: &str| match s.parse::<u64>() {
        Ok(n) if n > 0 => Ok(n),
        Ok(_) => Err(format!(
            "--window {spec}: a count window needs a count above 0"
        )),
        Err(e) => Err(format!("--window {spec}: `{s}`: {e}")),
    };
    Ok(match parts.as_slice() {
        ["tumbling", size] => WindowSpec::Time(TumblingEventTimeWindows::of_millis(num(size)?)),
        ["tumbling", size, offset] => WindowSpec::Time(
            TumblingEventTimeWindows::with_offset_millis(num(size)?, num(offset)?),
        ),
        ["sliding", size, slide] => {
            WindowSpec::Time(SlidingEventTimeWindows::of_millis(num(size)?, num(slide)?))
        }
        ["session", gap] => WindowSpec::Time(EventTimeSessionWindows::with_gap_millis(num(gap)?)),
        ["count", n] => WindowSpec::Count(count(n)?, None),
        ["count", n, slide] => WindowSpec::Count(count(n)?, Some(count(slide)?)),
        _ => {
            return Err(format!(
                "--window {spec}: expected tumbling:SIZE[:OFFSET], sliding:SIZE:SLIDE, session:GAP or count:N[:SLIDE]"
            ))
        }
    })
}

fn parse_trigger(spec: &str) -> Result<TriggerSpec, String> {
    let bad = || {
        format!("--trigger {spec}: expected count:N, purging-count:N or continuous-event:MS (N, MS above 0)")
    };
    let (kind, n) = spec.split_once(':').ok_or_else(bad)?;
    let n = n.parse::<i64>().ok().filter(|n| *n > 0).ok_or_else(bad)?;
    Ok(match kind {
        "count" => TriggerSpec::Count(n as u64),
        "purging-count" => TriggerSpec::PurgingCount(n as u64),
        "continuous-event" => TriggerSpec::ContinuousEvent(n),
        _ => return Err(bad()),
    })
}

fn parse_evictor(spec: &str) -> Result<EvictorSpec, String> {
    let bad = || format!("--evictor {spec}: expected count:N or time:MS");
    let (kind, n) = spec.split_once(':').ok_or_else(bad)?;
    Ok(match kind {
        "count" => EvictorSpec::Count(n.parse().map_err(|_| bad())?),
        "time" => EvictorSpec::Time(n.parse().map_err(|_| bad())?),
        _ => return Err(bad()),
    })
}

fn parse_state(s: &str) -> Result<StateBackend, String> {
    StateBackend::parse(s).map_err(|e| e.to_string())
}

fn parse_mode(s: &str) -> Result<RuntimeMode, String> {
    RuntimeMode::parse(s).map_err(|e| e.to_string())
}

/// Parses one input line; `None` for comments and empty lines.
fn parse_line(line: &str) -> Option<Result<Event, String>> {
    if line.is_empty() || line.starts_with('#') {
        return None;
    }
    let mut fields = line.split(',');
    let (Some(key), Some(ts), Some(amount), None) =
        (fields.next(), fields.next(), fields.next(), fields.next())
    else {
        return Some(Err(format!("`{line}`: expected key,timestamp_ms,amount")));
    };
    let num = |s: &str| {
        s.trim()
            .parse::<i64>()
            .map_err(|e| format!("`{line}`: `{s}`: {e}"))
    };
    Some((|| {
        Ok(Event {
            key: key.to_owned(),
            ts: num(ts)?,
            amount: num(amount)?,
        })
    })())
}

// Long: the job as a user writes it, read top to bottom (sources, operators, sink); split
// into functions, its dataflow would be spread over them.
fn run(args: Args) -> Result<(), String> {
    // Check the whole input first, so a malformed line is reported with its number before
    // anything is printed.
    let text = std::fs::read_to_string(&args.input).map_err(|e| format!("{}: {e}", args.input))?;
    for (i, line) in text.lines().enumerate() {
        if let Some(Err(e)) = parse_line(line) {
            return Err(format!("{}:{}: {e}", args.input, i + 1));
        }
    }

    let env = StreamExecutionEnvironment::new();
    env.set_parallelism(args.parallelism)
        .set_state_backend(args.state.clone())
        .set_runtime_mode(args.mode)
        .set_cluster(args.cluster.cluster()?);
    if let Some((dir, interval_ms)) = args
        .checkpoint_dir
        .as_ref()
        .map(|dir| (dir, &args.checkpoint_interval_ms))
    {
        env.enable_checkpointing(
            CheckpointConfig::new(dir.as_str(), std::time::Duration::from_millis(*interval_ms))
                .resume(args.resume),
        );
    }
    if let Some(path) = &args.restore {
        env.restore_from(RestoreSettings {
            path: path.into(),
            allow_non_restored_state: false,
        });
    }
    let lines = match args.lines_per_second {
        None => env.read_text_file(&args.input),
        Some(rate) => {
            // Throttled at the source, so that checkpoints (which a source starts) come
            // while the input is read: one line in every `rate / 1000` sleeps a millisecond.
            let all: std::sync::Arc<Vec<String>> =
                std::sync::Arc::new(text.lines().map(str::to_owned).collect());
            let every = (rate / 1000).max(1);
            let count = all.len() as u64;
            env.from_generator(count, move |i| {
                if i % every == every - 1 {
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
                all.get(i as usize).cloned().unwrap_or_default()
            })
            .set_parallelism(1)
        }
    };
    let events = lines
        .uid("lines")
        .flat_map(|line: String| parse_line(&line).and_then(Result::ok))
        .name("Parse")
        .set_parallelism(1)
        .assign_timestamps_and_watermarks(
            WatermarkStrategy::for_bounded_out_of_orderness_millis(args.out_of_orderness)
                .with_timestamp_assigner(|e: &Event, _| e.ts)
                .emit_per_event(),
        )
        .set_parallelism(1);
    let late = OutputTag::<Event>::new("late");
    let keyed = events.key_by(|e: &Event| e.key.clone());
    let windows = match args.window {
        WindowSpec::Time(assigner) => with_trigger(keyed.window(assigner), &args, &late),
        WindowSpec::Count(n, None) => with_trigger(keyed.count_window(n), &args, &late),
        WindowSpec::Count(n, Some(slide)) => {
            with_trigger(keyed.count_window_sliding(n, slide), &args, &late)
        }
    };
    let late_lines = windows
        .side_output(&late)
        .map(|e: Event| format!("late,{},{},{}", e.key, e.ts, e.amount))
        .name("Late records");
    match &args.output {
        None => {
            windows.print_raw().name("Windows");
            late_lines.print_raw().name("Late lines");
        }
        Some(dir) => {
            windows
                .union(&[late_lines])
                .write_as_text(dir)
                .name("Output")
                .uid("output");
        }
    }
    if args.metrics {
        env.execute_async("windowed_aggregate")
            .and_then(|client| client.wait_reporting(std::time::Duration::from_secs(2)))
            .map_err(ended)?;
    } else {
        env.execute("windowed_aggregate").map_err(ended)?;
    }
    Ok(())
}

/// START and END of a window's output line (`-` for a global window).
trait Bounds: Window {
    fn bounds(&self) -> (String, String);
}

impl Bounds for TimeWindow {
    fn bounds(&self) -> (String, String) {
        (self.start.to_string(), self.end.to_string())
    }
}

impl Bounds for GlobalWindow {
    fn bounds(&self) -> (String, String) {
        ("-".to_owned(), "-".to_owned())
    }
}

/// The window with the command line's trigger (replacing the window's own) and evictor.
fn with_trigger<A, Tr>(
    windowed: WindowedStream<String, Event, A, Tr>,
    args: &Args,
    late: &OutputTag<Event>,
) -> DataStream<String>
where
    A: WindowAssigner,
    A::Window: Bounds,
    Tr: Trigger<String, Event, A::Window>,
{
    match args.trigger {
        None => count_and_sum(windowed, args, late),
        Some(TriggerSpec::Count(n)) => {
            count_and_sum(windowed.trigger(CountTrigger::of(n)), args, late)
        }
        Some(TriggerSpec::PurgingCount(n)) => count_and_sum(
            windowed.trigger(PurgingTrigger::of(CountTrigger::of(n))),
            args,
            late,
        ),
        Some(TriggerSpec::ContinuousEvent(ms)) => count_and_sum(
            windowed.trigger(ContinuousEventTimeTrigger::of_millis(ms)),
            args,
            late,
        ),
    }
}

/// Count and sum per window firing, with the command line's evictor and lateness.
fn count_and_sum<A, Tr>(
    windowed: WindowedStream<String, Event, A, Tr>,
    args: &Args,
    late: &OutputTag<Event>,
) -> DataStream<String>
where
    A: WindowAssigner,
    A::Window: Bounds,
    Tr: Trigger<String, Event, A::Window>,
{
    let windowed = match args.evictor {
        None => windowed,
        Some(EvictorSpec::Count(n)) => windowed.evictor(CountEvictor::of(n)),
        Some(EvictorSpec::Time(ms)) => windowed.evictor(TimeEvictor::of_millis(ms)),
    };
    windowed
        .allowed_lateness_millis(args.allowed_lateness)
        .side_output_late_data(late)
        .aggregate_with(
            CountAndSum(|e: &Event| e.amount),
            |key: &String, w: &A::Window, (count, sum): (u64, i64)| {
                let (start, end) = w.bounds();
                format!("window,{key},{start},{end},{count},{sum}")
            },
        )
        .name("Count and sum")
        .uid("count-and-sum")
}

/// The job's error as this program's message; a lost peer ends the process at once with
/// its own exit status (`typeinfo_runtime::EXIT_PEER_LOST`), so that a supervisor starts it
/// again.
fn ended(e: typeinfo_runtime::Error) -> String {
    if let typeinfo_runtime::Error::PeerLost(_) = e {
        eprintln!("windowed_aggregate: {e}");
        std::process::exit(e.exit_code());
    }
    e.to_string()
}

fn main() -> ExitCode {
    match run(<Args as clap::Parser>::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("windowed_aggregate: {e}");
            ExitCode::FAILURE
        }
    }
}
