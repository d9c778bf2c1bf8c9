//! Orders per user per minute: a stateful job that survives a code upgrade.
//!
//! ```text
//! cargo run --release -p typeinfo-runtime --bin orders_per_minute            # the demo
//! cargo run --release -p typeinfo-runtime --bin orders_per_minute -- run --version 1|2 \
//!   --orders N --output DIR [--parallelism P] [--state heap|rocksdb] \
//!   [--checkpoint-dir DIR --checkpoint-interval-ms MS] [--restore PATH] \
//!   [--stop-after N --savepoint DIR] [--orders-per-second R] [--hosts H1,H2 --process I] \
//!   [--quiet] [--metrics-port PORT] [--plan-dot]
//! ```
//!
//! `--help` lists every flag with its default. A run prints a progress line on stderr every
//! two seconds (records per second, watermark, checkpoints) unless `--quiet`.
//!
//! The demo: version 1 counts and sums generated orders per user per minute (event-time
//! tumbling windows, RocksDB state, checkpoints) and is stopped with a savepoint half-way.
//! Version 2 has an evolved `Order` (the user renamed to customer, the amount widened from
//! `i32` to `i64`, a coupon added) and an evolved accumulator (the count widened, the total
//! renamed, a coupon count added); it restores the savepoint at another parallelism, reports
//! what it migrated, and finishes. The demo prints the per-minute results and checks them
//! against an uninterrupted run of version 2 over the same orders.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

mod support;
use std::time::Duration;

use typeinfo_runtime::{
    AggregateFunction, CheckpointConfig, Cluster, Data, RestoreSettings, StateBackend,
    StopWithSavepoint, StreamExecutionEnvironment, TimeWindow, TumblingEventTimeWindows,
    WatermarkStrategy,
};

const USERS: [&str; 5] = ["ada", "bob", "cy", "dee", "eve"];
const MINUTE_MS: i64 = 60_000;

/// Order `i`: a user, an amount, 250 ms after the previous order.
fn order_fields(i: u64) -> (&'static str, i32, i64) {
    (
        USERS[(i.wrapping_mul(7919) % USERS.len() as u64) as usize],
        (i.wrapping_mul(37) % 10_000) as i32 + 1,
        i as i64 * 250,
    )
}

/// Version 1 of the job's types.
mod v1 {
    use typeinfo::TypeInfo;

    #[derive(TypeInfo, Clone, Debug)]
    #[typeinfo(name = "demo.Order")]
    pub struct Order {
        pub user: String,
        pub amount_cents: i32,
        pub ts: i64,
    }

    #[derive(TypeInfo, Clone, Debug, Default)]
    #[typeinfo(name = "demo.MinuteTotal")]
    pub struct MinuteTotal {
        pub orders: u32,
        pub total_cents: i64,
        pub largest: Option<Order>,
    }
}

/// Version 2: fields renamed, widened and added.
mod v2 {
    use typeinfo::TypeInfo;

    #[derive(TypeInfo, Clone, Debug)]
    #[typeinfo(name = "demo.Order")]
    pub struct Order {
        #[typeinfo(alias = "user")]
        pub customer: String,
        pub amount_cents: i64,
        pub ts: i64,
        #[typeinfo(default)]
        pub coupon: Option<String>,
    }

    #[derive(TypeInfo, Clone, Debug, Default)]
    #[typeinfo(name = "demo.MinuteTotal")]
    pub struct MinuteTotal {
        pub orders: u64,
        #[typeinfo(alias = "total_cents")]
        pub revenue_cents: i64,
        pub largest: Option<Order>,
        #[typeinfo(default)]
        pub coupons: u32,
    }
}

struct V1Totals;
impl AggregateFunction<v1::Order, v1::MinuteTotal, v1::MinuteTotal> for V1Totals {
    fn create_accumulator(&self) -> v1::MinuteTotal {
        v1::MinuteTotal::default()
    }
    fn add(&self, o: &v1::Order, acc: &mut v1::MinuteTotal) {
        acc.orders += 1;
        acc.total_cents += i64::from(o.amount_cents);
        if acc
            .largest
            .as_ref()
            .is_none_or(|l| o.amount_cents > l.amount_cents)
        {
            acc.largest = Some(o.clone());
        }
    }
    fn get_result(&self, acc: &v1::MinuteTotal) -> v1::MinuteTotal {
        acc.clone()
    }
    fn merge(&self, mut a: v1::MinuteTotal, b: v1::MinuteTotal) -> v1::MinuteTotal {
        a.orders += b.orders;
        a.total_cents += b.total_cents;
        if b.largest.as_ref().map(|o| o.amount_cents) > a.largest.as_ref().map(|o| o.amount_cents) {
            a.largest = b.largest;
        }
        a
    }
}

struct V2Totals;
impl AggregateFunction<v2::Order, v2::MinuteTotal, v2::MinuteTotal> for V2Totals {
    fn create_accumulator(&self) -> v2::MinuteTotal {
        v2::MinuteTotal::default()
    }
    fn add(&self, o: &v2::Order, acc: &mut v2::MinuteTotal) {
        acc.orders += 1;
        acc.revenue_cents += o.amount_cents;
        acc.coupons += u32::from(o.coupon.is_some());
        if acc
            .largest
            .as_ref()
            .is_none_or(|l| o.amount_cents > l.amount_cents)
        {
            acc.largest = Some(o.clone());
        }
    }
    fn get_result(&self, acc: &v2::MinuteTotal) -> v2::MinuteTotal {
        acc.clone()
    }
    fn merge(&self, mut a: v2::MinuteTotal, b: v2::MinuteTotal) -> v2::MinuteTotal {
        a.orders += b.orders;
        a.revenue_cents += b.revenue_cents;
        a.coupons += b.coupons;
        if b.largest.as_ref().map(|o| o.amount_cents) > a.largest.as_ref().map(|o| o.amount_cents) {
            a.largest = b.largest;
        }
        a
    }
}

/// How one run is set up.
#[derive(Debug, Clone)]
struct Run {
    version: u32,
    orders: u64,
    output: PathBuf,
    parallelism: u32,
    state: StateBackend,
    checkpoints: Option<CheckpointConfig>,
    restore: Option<PathBuf>,
    stop: Option<StopWithSavepoint>,
    orders_per_second: Option<u64>,
    cluster: Option<Cluster>,
    /// Print a progress line (metrics) on stderr every 2 s.
    metrics: bool,
    /// Serve the metrics to Prometheus on this port (all interfaces).
    metrics_port: Option<u16>,
    /// Print the job's plan as Graphviz DOT and exit.
    plan_dot: bool,
}

/// Sleeps now and then so that the generator emits about `rate` orders per second (1 ms
/// per `rate / 1000` orders).
fn throttle(i: u64, rate: Option<u64>) {
    if let Some(rate) = rate.filter(|r| *r > 0) {
        let every = (rate / 1000).max(1);
        if i % every == 0 {
            std::thread::sleep(Duration::from_micros(every * 1_000_000 / rate));
        }
    }
}

// Long: the job as a user writes it, read top to bottom (sources, operators, sink); split
// into functions, its dataflow would be spread over them.
fn run(r: &Run) -> typeinfo_runtime::Result<typeinfo_runtime::JobResult> {
    let env = StreamExecutionEnvironment::new();
    env.set_parallelism(r.parallelism)
        .set_max_parallelism(128)
        .set_state_backend(r.state.clone())
        .set_cluster(r.cluster.clone());
    if let Some(port) = r.metrics_port {
        env.set_metrics_address(std::net::SocketAddr::from(([0, 0, 0, 0], port)));
    }
    if let Some(c) = &r.checkpoints {
        env.enable_checkpointing(c.clone());
    }
    if let Some(path) = &r.restore {
        env.restore_from(RestoreSettings {
            path: path.clone(),
            allow_non_restored_state: false,
        });
    }
    if let Some(stop) = &r.stop {
        env.stop_with_savepoint(stop.clone());
    }
    let rate = r.orders_per_second;
    let line = |user: &str, start: i64, orders: u64, revenue: i64, largest: i64| {
        format!("{},{user},{orders},{revenue},{largest}", start / MINUTE_MS)
    };
    match r.version {
        1 => pipeline(
            &env,
            r,
            move |i| {
                throttle(i, rate);
                let (user, amount_cents, ts) = order_fields(i);
                v1::Order {
                    user: user.into(),
                    amount_cents,
                    ts,
                }
            },
            |o| o.ts,
            |o| o.user.clone(),
            V1Totals,
            move |user, w, t: v1::MinuteTotal| {
                line(
                    user,
                    w.start,
                    u64::from(t.orders),
                    t.total_cents,
                    t.largest.map_or(0, |o| i64::from(o.amount_cents)),
                )
            },
        ),
        _ => pipeline(
            &env,
            r,
            move |i| {
                throttle(i, rate);
                let (user, amount_cents, ts) = order_fields(i);
                v2::Order {
                    customer: user.into(),
                    amount_cents: i64::from(amount_cents),
                    ts,
                    coupon: None,
                }
            },
            |o| o.ts,
            |o| o.customer.clone(),
            V2Totals,
            move |user, w, t: v2::MinuteTotal| {
                line(
                    user,
                    w.start,
                    t.orders,
                    t.revenue_cents,
                    t.largest.map_or(0, |o| o.amount_cents),
                )
            },
        ),
    }
    let name = format!("orders per minute v{}", r.version);
    if r.plan_dot {
        print!("{}", env.stream_graph()?.to_dot());
        std::process::exit(0);
    }
    if r.metrics {
        return env
            .execute_async(&name)?
            .wait_reporting(Duration::from_secs(2));
    }
    env.execute(&name)
}

/// The job both versions share (the stateful operators keep their uids): orders generated by
/// one subtask, monotonous timestamps, per-user one-minute windows aggregated by `totals`,
/// per-minute lines written by the file sink.
fn pipeline<O: Data, A: Data, R: 'static>(
    env: &StreamExecutionEnvironment,
    r: &Run,
    order: impl Fn(u64) -> O + Send + Sync + 'static,
    ts: fn(&O) -> i64,
    user: fn(&O) -> String,
    totals: impl AggregateFunction<O, A, R> + 'static,
    result: impl Fn(&String, &TimeWindow, R) -> String + Send + Sync + 'static,
) {
    env.from_generator(r.orders, order)
        .uid("orders")
        .set_parallelism(1)
        .assign_timestamps_and_watermarks(
            WatermarkStrategy::for_monotonous_timestamps()
                .with_timestamp_assigner(move |o: &O, _| ts(o)),
        )
        .uid("timestamps")
        .set_parallelism(1)
        .key_by(user)
        .window(TumblingEventTimeWindows::of_millis(MINUTE_MS))
        .aggregate_with(totals, result)
        .uid("minute-totals")
        .write_as_text(&r.output)
        .uid("output");
}

/// Every published line of an output directory, sorted.
fn published(dir: &Path) -> std::io::Result<Vec<String>> {
    let mut lines = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_name().to_string_lossy().starts_with("part-") {
            lines.extend(
                std::fs::read_to_string(entry.path())?
                    .lines()
                    .map(str::to_owned),
            );
        }
    }
    lines.sort();
    Ok(lines)
}

// Long: the demo's story in the order it prints it (version 1 stopped with a savepoint,
// version 2 restored from it, the uninterrupted reference, the comparison).
fn demo() -> Result<(), String> {
    let work = tempfile::tempdir().map_err(|e| e.to_string())?;
    let (upgraded, reference, savepoint) = (
        work.path().join("upgraded"),
        work.path().join("reference"),
        work.path().join("savepoint"),
    );
    let orders = 20_000;
    let base = Run {
        version: 1,
        orders,
        output: upgraded.clone(),
        parallelism: 2,
        state: StateBackend::rocksdb(),
        checkpoints: Some(CheckpointConfig::new(
            work.path().join("checkpoints-v1"),
            Duration::from_millis(100),
        )),
        restore: None,
        stop: Some(StopWithSavepoint {
            after_records: orders / 2,
            dir: savepoint.clone(),
        }),
        orders_per_second: None,
        cluster: None,
        metrics: false,
        metrics_port: None,
        plan_dot: false,
    };
    println!("== version 1: {orders} generated orders, RocksDB state, parallelism 2, checkpoints every 100 ms");
    let v1 = run(&base).map_err(|e| e.to_string())?;
    println!(
        "   stopped after {} orders with a savepoint ({:.2} s)",
        orders / 2,
        v1.elapsed.as_secs_f64()
    );
    println!(
        "   published so far: {} per-minute lines",
        published(&upgraded).map_err(|e| e.to_string())?.len()
    );

    println!(
        "== version 2: Order.user -> customer, Order.amount_cents i32 -> i64, Order.coupon added;"
    );
    println!("   MinuteTotal.orders u32 -> u64, total_cents -> revenue_cents, coupons added; parallelism 3");
    let v2 = run(&Run {
        version: 2,
        parallelism: 3,
        checkpoints: Some(CheckpointConfig::new(
            work.path().join("checkpoints-v2"),
            Duration::from_millis(100),
        )),
        restore: Some(savepoint.clone()),
        stop: None,
        ..base.clone()
    })
    .map_err(|e| e.to_string())?;
    for m in &v2.migrations {
        println!("   migrated: {m}");
    }
    let after_upgrade = published(&upgraded).map_err(|e| e.to_string())?;

    println!("== version 2 again, uninterrupted, over the same orders");
    run(&Run {
        version: 2,
        parallelism: 3,
        output: reference.clone(),
        checkpoints: None,
        stop: None,
        ..base.clone()
    })
    .map_err(|e| e.to_string())?;
    let uninterrupted = published(&reference).map_err(|e| e.to_string())?;

    println!("== per-minute results (all users): minute, orders, revenue in cents");
    let mut per_minute: BTreeMap<i64, (u64, i64)> = BTreeMap::new();
    for line in &after_upgrade {
        let f: Vec<&str> = line.split(',').collect();
        if let (Some(m), Some(n), Some(r)) = (f.first(), f.get(2), f.get(3)) {
            let e = per_minute.entry(m.parse().unwrap_or(0)).or_default();
            e.0 += n.parse::<u64>().unwrap_or(0);
            e.1 += r.parse::<i64>().unwrap_or(0);
        }
    }
    for (minute, (n, revenue)) in &per_minute {
        println!("   {minute:>3}  {n:>4}  {revenue:>9}");
    }
    let matches = after_upgrade == uninterrupted;
    println!(
        "== {} per-user lines after the upgrade, {} in the uninterrupted run: {}",
        after_upgrade.len(),
        uninterrupted.len(),
        if matches { "they match" } else { "THEY DIFFER" }
    );
    if matches {
        Ok(())
    } else {
        Err("the upgraded run's results differ from the uninterrupted run's".into())
    }
}

/// Orders per user per minute: a stateful job that survives a code upgrade.
#[derive(clap::Parser)]
#[command(name = "orders_per_minute", about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(clap::Subcommand)]
enum Command {
    /// The demo (the default): version 1 stopped with a savepoint half-way, version 2
    /// restored from it at another parallelism, checked against an uninterrupted run.
    Demo,
    /// One run of version 1 or 2.
    Run(Box<RunArgs>),
}

#[derive(clap::Args)]
struct RunArgs {
    /// The job's version: 1, or 2 with the evolved types.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=2))]
    version: u32,
    /// Orders to generate (every source subtask's share of them).
    #[arg(long)]
    orders: u64,
    /// The exactly-once text file sink's directory.
    #[arg(long)]
    output: PathBuf,
    /// Parallelism of every operator.
    #[arg(long, default_value_t = 1)]
    parallelism: u32,
    #[command(flatten)]
    state: support::StateArgs,
    /// Stop with a savepoint once every source subtask emitted this many orders.
    #[arg(long, requires = "savepoint")]
    stop_after: Option<u64>,
    /// Where the stop's savepoint goes.
    #[arg(long, requires = "stop_after")]
    savepoint: Option<PathBuf>,
    /// Slows the source down to about this many orders per second.
    #[arg(long)]
    orders_per_second: Option<u64>,
    #[command(flatten)]
    cluster: support::ClusterArgs,
    /// Progress lines on stderr every 2 s (the default; kept for older command lines).
    #[arg(long, conflicts_with = "quiet")]
    metrics: bool,
    /// No progress lines.
    #[arg(long)]
    quiet: bool,
    /// Serve Prometheus' /metrics, the REST API and the dashboard on this port (all
    /// interfaces; the API then asks for TYPEINFO_JOB_SECRET).
    #[arg(long)]
    metrics_port: Option<u16>,
    /// Print the job's plan as Graphviz DOT and exit.
    #[arg(long)]
    plan_dot: bool,
}

impl RunArgs {
    fn into_run(self) -> Result<Run, String> {
        Ok(Run {
            version: self.version,
            orders: self.orders,
            output: self.output,
            parallelism: self.parallelism,
            checkpoints: self.state.checkpoints(),
            restore: self.state.restore.clone(),
            state: self.state.state,
            stop: match (self.stop_after, self.savepoint) {
                (Some(after_records), Some(dir)) => Some(StopWithSavepoint { after_records, dir }),
                _ => None,
            },
            orders_per_second: self.orders_per_second,
            cluster: self.cluster.cluster()?,
            metrics: self.metrics || !self.quiet,
            metrics_port: self.metrics_port,
            plan_dot: self.plan_dot,
        })
    }
}

fn main() -> ExitCode {
    let cli = <Cli as clap::Parser>::parse();
    let result = match cli.command {
        None | Some(Command::Demo) => demo(),
        Some(Command::Run(args)) => args.into_run().and_then(|r| {
            let result = run(&r).map_err(|e| e.to_string())?;
            for m in &result.migrations {
                eprintln!("migrated: {m}");
            }
            for (name, value) in &result.metrics {
                eprintln!("{name}: {value}");
            }
            Ok(())
        }),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("orders_per_minute: {e}");
            ExitCode::FAILURE
        }
    }
}
