//! Count and sum per key in event-time windows over a CSV file.
//!
//! ```text
//! cargo run --release -p typeinfo-runtime --bin windowed_aggregate -- --input FILE \
//!   --window tumbling:SIZE[:OFFSET]|sliding:SIZE:SLIDE|session:GAP \
//!   --out-of-orderness MS --allowed-lateness MS [--parallelism N] [--state heap|rocksdb] \
//!   [--hosts host:port,host:port --process I] [--metrics]
//! ```
//!
//! Input lines are `key,timestamp_ms,amount` (`#` lines and empty lines are skipped), read
//! by one source subtask in file order. After every event the watermark
//! `max timestamp - out_of_orderness - 1` is emitted; the end of the input emits the maximal
//! watermark. Each window firing prints `window,KEY,START,END,COUNT,SUM` (a late firing prints
//! the updated line again) and each late record prints `late,KEY,TIMESTAMP,AMOUNT`.
//! With `--hosts`, this process is process `--process` of a multi-process job and prints the
//! lines of its own workers.

use std::process::ExitCode;

use typeinfo::TypeInfo;
use typeinfo_runtime::functions::CountAndSum;
use typeinfo_runtime::{
    Cluster, EventTimeSessionWindows, OutputTag, SlidingEventTimeWindows, StateBackend,
    StreamExecutionEnvironment, TumblingEventTimeWindows, WatermarkStrategy, WindowAssigner,
};

#[derive(TypeInfo, Clone, Debug)]
struct Event {
    key: String,
    ts: i64,
    amount: i64,
}

struct Args {
    input: String,
    window: WindowAssigner,
    out_of_orderness: i64,
    allowed_lateness: i64,
    parallelism: u32,
    state: StateBackend,
    cluster: Option<Cluster>,
    /// A metrics line on stderr every 2 s.
    metrics: bool,
}

fn parse_window(spec: &str) -> Result<WindowAssigner, String> {
    let parts: Vec<&str> = spec.split(':').collect();
    let num = |s: &str| {
        s.parse::<i64>()
            .map_err(|e| format!("--window {spec}: `{s}`: {e}"))
    };
    match parts.as_slice() {
        ["tumbling", size] => Ok(TumblingEventTimeWindows::of_millis(num(size)?)),
        ["tumbling", size, offset] => Ok(TumblingEventTimeWindows::with_offset_millis(
            num(size)?,
            num(offset)?,
        )),
        ["sliding", size, slide] => Ok(SlidingEventTimeWindows::of_millis(num(size)?, num(slide)?)),
        ["session", gap] => Ok(EventTimeSessionWindows::with_gap_millis(num(gap)?)),
        _ => Err(format!(
            "--window {spec}: expected tumbling:SIZE[:OFFSET], sliding:SIZE:SLIDE or session:GAP"
        )),
    }
}

fn parse_args() -> Result<Args, String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value = |flag: &str| -> Result<Option<String>, String> {
        match args.iter().position(|a| a == flag) {
            Some(i) => args
                .get(i + 1)
                .cloned()
                .map(Some)
                .ok_or_else(|| format!("{flag} needs a value")),
            None => Ok(None),
        }
    };
    let required = |flag: &str| value(flag)?.ok_or_else(|| format!("missing {flag}"));
    let int = |flag: &str, v: String| v.parse::<i64>().map_err(|e| format!("{flag} `{v}`: {e}"));
    Ok(Args {
        input: required("--input")?,
        window: parse_window(&required("--window")?)?,
        out_of_orderness: int("--out-of-orderness", required("--out-of-orderness")?)?,
        allowed_lateness: int("--allowed-lateness", required("--allowed-lateness")?)?,
        parallelism: value("--parallelism")?
            .map(|v| v.parse().map_err(|e| format!("--parallelism `{v}`: {e}")))
            .transpose()?
            .unwrap_or(1),
        state: StateBackend::parse(&value("--state")?.unwrap_or_else(|| "heap".into()))
            .map_err(|e| e.to_string())?,
        cluster: Cluster::from_args(&args).map_err(|e| e.to_string())?,
        metrics: args.iter().any(|a| a == "--metrics"),
    })
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
        .set_state_backend(args.state)
        .set_cluster(args.cluster);
    let events = env
        .read_text_file(&args.input)
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
    let windows = events
        .key_by(|e: &Event| e.key.clone())
        .window(args.window)
        .allowed_lateness_millis(args.allowed_lateness)
        .side_output_late_data(&late)
        .aggregate_with(
            CountAndSum(|e: &Event| e.amount),
            |key: &String, w, (count, sum): (u64, i64)| {
                format!("window,{key},{},{},{count},{sum}", w.start, w.end)
            },
        )
        .name("Count and sum")
        .uid("count-and-sum");
    windows.print_raw().name("Windows");
    windows
        .side_output(&late)
        .map(|e: Event| format!("late,{},{},{}", e.key, e.ts, e.amount))
        .print_raw()
        .name("Late records");
    if args.metrics {
        env.execute_async("windowed_aggregate")
            .and_then(|client| client.wait_reporting(std::time::Duration::from_secs(2)))
            .map_err(|e| e.to_string())?;
    } else {
        env.execute("windowed_aggregate")
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

fn main() -> ExitCode {
    match parse_args().and_then(run) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("windowed_aggregate: {e}");
            ExitCode::FAILURE
        }
    }
}
