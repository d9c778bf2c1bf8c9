//! Savepoints and restores into a changed job: another parallelism (1 -> 2 -> 1), another
//! state backend (heap <-> RocksDB), evolved record and accumulator types (migrated and
//! reported), and the refusals: an incompatible type (naming operator, state and field), a
//! corrupt snapshot, state of an operator the job no longer has. A refused restore writes
//! nothing.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test (or bench) panics on what it does not expect

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use typeinfo_runtime::{
    AggregateFunction, CheckpointConfig, Error, RestoreSettings, StateBackend, StopWithSavepoint,
    StreamExecutionEnvironment, TumblingEventTimeWindows, WatermarkStrategy,
};

const ORDERS: u64 = 6_000;
const USERS: [&str; 4] = ["ada", "bob", "cy", "dee"];

fn fields(i: u64) -> (&'static str, i32, i64) {
    (
        USERS[(i * 7919 % 4) as usize],
        (i * 37 % 1000) as i32 + 1,
        i as i64 * 250,
    )
}

mod v1 {
    use typeinfo::TypeInfo;
    #[derive(TypeInfo, Clone, Debug)]
    #[typeinfo(name = "test.Order")]
    pub struct Order {
        pub user: String,
        pub amount: i32,
        pub ts: i64,
        pub note: String,
    }
    #[derive(TypeInfo, Clone, Debug, Default)]
    #[typeinfo(name = "test.Total")]
    pub struct Total {
        pub orders: u32,
        pub total: i64,
        pub largest: Option<Order>,
    }
}

/// Every compatible change at once: `user` renamed (alias), `amount` widened, `ts` wrapped
/// in an `Option`, `note` removed, `coupon` added; the accumulator's count widened, its
/// total renamed, a field added, and its nested `Order` migrated inside an `Option`.
mod v2 {
    use typeinfo::TypeInfo;
    #[derive(TypeInfo, Clone, Debug)]
    #[typeinfo(name = "test.Order")]
    pub struct Order {
        #[typeinfo(alias = "user")]
        pub customer: String,
        pub amount: i64,
        pub ts: Option<i64>,
        #[typeinfo(default)]
        pub coupon: Option<String>,
    }
    #[derive(TypeInfo, Clone, Debug, Default)]
    #[typeinfo(name = "test.Total")]
    pub struct Total {
        pub orders: u64,
        #[typeinfo(alias = "total")]
        pub revenue: i64,
        pub largest: Option<Order>,
        #[typeinfo(default)]
        pub coupons: u32,
    }
}

/// An incompatible change: the total became a string.
mod v3 {
    use typeinfo::TypeInfo;
    #[derive(TypeInfo, Clone, Debug, Default)]
    #[typeinfo(name = "test.Total")]
    pub struct Total {
        pub orders: u32,
        pub total: String,
    }
}

struct Sum1;
impl AggregateFunction<v1::Order, v1::Total, v1::Total> for Sum1 {
    fn create_accumulator(&self) -> v1::Total {
        v1::Total::default()
    }
    fn add(&self, o: &v1::Order, a: &mut v1::Total) {
        a.orders += 1;
        a.total += i64::from(o.amount);
        if a.largest.as_ref().is_none_or(|l| o.amount > l.amount) {
            a.largest = Some(o.clone());
        }
    }
    fn get_result(&self, a: &v1::Total) -> v1::Total {
        a.clone()
    }
    fn merge(&self, a: v1::Total, _: v1::Total) -> v1::Total {
        a
    }
}

struct Sum2;
impl AggregateFunction<v2::Order, v2::Total, v2::Total> for Sum2 {
    fn create_accumulator(&self) -> v2::Total {
        v2::Total::default()
    }
    fn add(&self, o: &v2::Order, a: &mut v2::Total) {
        a.orders += 1;
        a.revenue += o.amount;
        a.coupons += u32::from(o.coupon.is_some());
        if a.largest.as_ref().is_none_or(|l| o.amount > l.amount) {
            a.largest = Some(o.clone());
        }
    }
    fn get_result(&self, a: &v2::Total) -> v2::Total {
        a.clone()
    }
    fn merge(&self, a: v2::Total, _: v2::Total) -> v2::Total {
        a
    }
}

struct Sum3;
impl AggregateFunction<v1::Order, v3::Total, v3::Total> for Sum3 {
    fn create_accumulator(&self) -> v3::Total {
        v3::Total::default()
    }
    fn add(&self, _: &v1::Order, a: &mut v3::Total) {
        a.orders += 1;
    }
    fn get_result(&self, a: &v3::Total) -> v3::Total {
        a.clone()
    }
    fn merge(&self, a: v3::Total, _: v3::Total) -> v3::Total {
        a
    }
}

struct Setup<'a> {
    parallelism: u32,
    state: StateBackend,
    checkpoints: &'a Path,
    output: &'a Path,
    restore: Option<&'a Path>,
    stop: Option<(u64, &'a Path)>,
    allow_dropping: bool,
}

fn env(s: &Setup<'_>) -> StreamExecutionEnvironment {
    let env = StreamExecutionEnvironment::new();
    env.set_parallelism(s.parallelism)
        .set_max_parallelism(64)
        .set_state_backend(s.state.clone());
    env.enable_checkpointing(CheckpointConfig::new(
        s.checkpoints,
        Duration::from_millis(20),
    ));
    if let Some(path) = s.restore {
        env.restore_from(RestoreSettings {
            path: path.to_owned(),
            allow_non_restored_state: s.allow_dropping,
        });
    }
    if let Some((after_records, dir)) = s.stop {
        env.stop_with_savepoint(StopWithSavepoint {
            after_records,
            dir: dir.to_owned(),
        });
    }
    env
}

fn line(user: &str, start: i64, orders: u64, revenue: i64, largest: i64) -> String {
    format!("{},{user},{orders},{revenue},{largest}", start / 60_000)
}

/// The job every version shares: orders generated by one subtask, monotonous timestamps,
/// per-user one-minute windows aggregated by `function`, lines written by the file sink; the
/// stateful operators keep their uids across versions.
fn pipeline<T: typeinfo_runtime::Data, A: typeinfo_runtime::Data, R: 'static>(
    s: &Setup<'_>,
    order: impl Fn(u64) -> T + Send + Sync + 'static,
    ts: fn(&T) -> i64,
    user: fn(&T) -> String,
    function: impl AggregateFunction<T, A, R> + 'static,
    result: impl Fn(&String, &typeinfo_runtime::TimeWindow, R) -> String + Send + Sync + 'static,
) -> StreamExecutionEnvironment {
    let env = env(s);
    env.from_generator(ORDERS, order)
        .uid("orders")
        .set_parallelism(1)
        .assign_timestamps_and_watermarks(
            WatermarkStrategy::for_monotonous_timestamps()
                .with_timestamp_assigner(move |o: &T, _| ts(o)),
        )
        .uid("timestamps")
        .set_parallelism(1)
        .key_by(user)
        .window(TumblingEventTimeWindows::of_millis(60_000))
        .aggregate_with(function, result)
        .uid("totals")
        .write_as_text(s.output)
        .uid("output");
    env
}

fn job_v1(s: &Setup<'_>) -> typeinfo_runtime::Result<typeinfo_runtime::JobResult> {
    build_v1(s, false).execute("v1")
}

/// Version 1; `slow` generates about 10,000 orders a second (to act while it runs).
fn build_v1(s: &Setup<'_>, slow: bool) -> StreamExecutionEnvironment {
    let order = move |i| {
        if slow && i % 10 == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
        let (user, amount, ts) = fields(i);
        v1::Order {
            user: user.into(),
            amount,
            ts,
            note: format!("order {i}"),
        }
    };
    pipeline(
        s,
        order,
        |o| o.ts,
        |o| o.user.clone(),
        Sum1,
        |u, w, t: v1::Total| {
            line(
                u,
                w.start,
                u64::from(t.orders),
                t.total,
                t.largest.map_or(0, |o| i64::from(o.amount)),
            )
        },
    )
}

fn job_v2(s: &Setup<'_>) -> typeinfo_runtime::Result<typeinfo_runtime::JobResult> {
    let order = |i| {
        let (user, amount, ts) = fields(i);
        v2::Order {
            customer: user.into(),
            amount: i64::from(amount),
            ts: Some(ts),
            coupon: None,
        }
    };
    pipeline(
        s,
        order,
        |o| o.ts.unwrap_or(0),
        |o| o.customer.clone(),
        Sum2,
        |u, w, t: v2::Total| {
            line(
                u,
                w.start,
                t.orders,
                t.revenue,
                t.largest.map_or(0, |o| o.amount),
            )
        },
    )
    .execute("v2")
}

fn job_v3(s: &Setup<'_>) -> typeinfo_runtime::Result<typeinfo_runtime::JobResult> {
    let order = |i| {
        let (user, amount, ts) = fields(i);
        v1::Order {
            user: user.into(),
            amount,
            ts,
            note: String::new(),
        }
    };
    pipeline(
        s,
        order,
        |o| o.ts,
        |o| o.user.clone(),
        Sum3,
        |u, w, t: v3::Total| format!("{u},{},{}", w.start, t.orders),
    )
    .execute("v3")
}

fn published(dir: &Path) -> Vec<String> {
    let mut lines: Vec<String> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with("part-"))
                .flat_map(|e| {
                    std::fs::read_to_string(e.path())
                        .unwrap()
                        .lines()
                        .map(str::to_owned)
                        .collect::<Vec<_>>()
                })
                .collect()
        })
        .unwrap_or_default();
    lines.sort();
    lines
}

/// Waits (up to 30 s) until a checkpoint has published output into `dir`: a fixed sleep
/// is not enough on a busy machine, which may not have completed a checkpoint by then.
fn wait_until_published(dir: &Path) {
    let until = std::time::Instant::now() + Duration::from_secs(30);
    while published(dir).is_empty() && std::time::Instant::now() < until {
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = walk(dir);
    out.sort();
    out
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if e.path().is_dir() {
            out.extend(walk(&e.path()));
        } else {
            out.push(e.path());
        }
    }
    out
}

struct Dirs {
    _tmp: tempfile::TempDir,
    root: PathBuf,
}

impl Dirs {
    fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().to_owned();
        Dirs { _tmp: tmp, root }
    }
    fn p(&self, name: &str) -> PathBuf {
        self.root.join(name)
    }
}

fn uninterrupted_v2(d: &Dirs) -> Vec<String> {
    let s = Setup {
        parallelism: 2,
        state: StateBackend::Heap,
        checkpoints: &d.p("ref-ck"),
        output: &d.p("ref"),
        restore: None,
        stop: None,
        allow_dropping: false,
    };
    job_v2(&s).unwrap();
    published(&d.p("ref"))
}

fn uninterrupted_v1(d: &Dirs) -> Vec<String> {
    let s = Setup {
        parallelism: 2,
        state: StateBackend::Heap,
        checkpoints: &d.p("ref1-ck"),
        output: &d.p("ref1"),
        restore: None,
        stop: None,
        allow_dropping: false,
    };
    job_v1(&s).unwrap();
    published(&d.p("ref1"))
}

#[test]
fn parallelism_one_two_one_across_both_backends() -> typeinfo_runtime::Result<()> {
    let d = Dirs::new();
    let out = d.p("out");
    let base = |p, state, sp: Option<PathBuf>, stop: Option<(u64, PathBuf)>| (p, state, sp, stop);
    let runs = [
        base(1, StateBackend::Heap, None, Some((2_000, d.p("sp1")))),
        base(
            2,
            StateBackend::rocksdb(),
            Some(d.p("sp1")),
            Some((4_000, d.p("sp2"))),
        ),
        base(1, StateBackend::Heap, Some(d.p("sp2")), None),
    ];
    for (i, (p, state, restore, stop)) in runs.iter().enumerate() {
        let ck = d.p(&format!("ck{i}"));
        let s = Setup {
            parallelism: *p,
            state: state.clone(),
            checkpoints: &ck,
            output: &out,
            restore: restore.as_deref(),
            stop: stop.as_ref().map(|(n, dir)| (*n, dir.as_path())),
            allow_dropping: false,
        };
        job_v1(&s)?;
    }
    assert_eq!(
        published(&out),
        uninterrupted_v1(&d),
        "stopped twice, rescaled 1 -> 2 -> 1, heap -> RocksDB -> heap"
    );
    Ok(())
}

#[test]
fn evolved_types_are_migrated_on_restore_and_reported() -> typeinfo_runtime::Result<()> {
    for (first, second) in [
        (StateBackend::rocksdb(), StateBackend::Heap),
        (StateBackend::Heap, StateBackend::rocksdb()),
    ] {
        let d = Dirs::new();
        let (out, sp) = (d.p("out"), d.p("sp"));
        job_v1(&Setup {
            parallelism: 2,
            state: first,
            checkpoints: &d.p("ck1"),
            output: &out,
            restore: None,
            stop: Some((3_000, &sp)),
            allow_dropping: false,
        })?;
        let result = job_v2(&Setup {
            parallelism: 3,
            state: second,
            checkpoints: &d.p("ck2"),
            output: &out,
            restore: Some(&sp),
            stop: None,
            allow_dropping: false,
        })?;
        assert!(
            result
                .migrations
                .iter()
                .any(|m| m.contains("window-contents")),
            "{:?}",
            result.migrations
        );
        assert_eq!(published(&out), uninterrupted_v2(&d));
    }
    Ok(())
}

#[test]
fn an_incompatible_type_is_refused_naming_operator_state_and_field_and_writes_nothing(
) -> typeinfo_runtime::Result<()> {
    let d = Dirs::new();
    let (out, sp) = (d.p("out"), d.p("sp"));
    job_v1(&Setup {
        parallelism: 1,
        state: StateBackend::Heap,
        checkpoints: &d.p("ck1"),
        output: &out,
        restore: None,
        stop: Some((3_000, &sp)),
        allow_dropping: false,
    })?;
    let (before_out, before_sp) = (files(&out), files(&sp));
    for state in [StateBackend::Heap, StateBackend::rocksdb()] {
        let err = job_v3(&Setup {
            parallelism: 2,
            state,
            checkpoints: &d.p("ck3"),
            output: &out,
            restore: Some(&sp),
            stop: None,
            allow_dropping: false,
        })
        .unwrap_err();
        let text = err.to_string();
        assert!(matches!(err, Error::State { .. }), "{err:?}");
        assert!(
            text.contains("Window")
                && text.contains("window-contents")
                && text.contains("Total.total: i64 -> String"),
            "{text}"
        );
        assert_eq!(files(&out), before_out, "no output written");
        assert_eq!(files(&sp), before_sp, "the savepoint is untouched");
    }
    Ok(())
}

#[test]
fn a_corrupt_snapshot_is_refused_with_a_clear_error() -> typeinfo_runtime::Result<()> {
    let d = Dirs::new();
    let (out, sp) = (d.p("out"), d.p("sp"));
    job_v1(&Setup {
        parallelism: 1,
        state: StateBackend::Heap,
        checkpoints: &d.p("ck1"),
        output: &out,
        restore: None,
        stop: Some((3_000, &sp)),
        allow_dropping: false,
    })?;
    let kstate = sp.join("uid-totals").join("subtask-0.kstate");
    let mut bytes = std::fs::read(&kstate).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0xFF;
    std::fs::write(&kstate, &bytes).unwrap();
    let before = files(&out);
    let err = job_v1(&Setup {
        parallelism: 1,
        state: StateBackend::rocksdb(),
        checkpoints: &d.p("ck2"),
        output: &out,
        restore: Some(&sp),
        stop: None,
        allow_dropping: false,
    })
    .unwrap_err();
    assert!(err.to_string().contains("subtask-0.kstate"), "{err}");
    assert_eq!(files(&out), before);

    let missing = job_v1(&Setup {
        parallelism: 1,
        state: StateBackend::Heap,
        checkpoints: &d.p("ck3"),
        output: &out,
        restore: Some(&d.p("nowhere")),
        stop: None,
        allow_dropping: false,
    })
    .unwrap_err();
    assert!(missing.to_string().contains("nowhere"), "{missing}");
    Ok(())
}

#[test]
fn state_of_a_removed_operator_is_refused_unless_dropping_is_allowed(
) -> typeinfo_runtime::Result<()> {
    let d = Dirs::new();
    let (out, sp) = (d.p("out"), d.p("sp"));
    job_v1(&Setup {
        parallelism: 1,
        state: StateBackend::Heap,
        checkpoints: &d.p("ck1"),
        output: &out,
        restore: None,
        stop: Some((3_000, &sp)),
        allow_dropping: false,
    })?;
    let without_window = |allow: bool, output: &Path| {
        let env = env(&Setup {
            parallelism: 1,
            state: StateBackend::Heap,
            checkpoints: &d.p("ck2"),
            output,
            restore: Some(&sp),
            stop: None,
            allow_dropping: allow,
        });
        env.from_generator(ORDERS, |i| i)
            .uid("orders")
            .set_parallelism(1)
            .write_as_text(output)
            .uid("output");
        env.execute("no windows")
    };
    let err = without_window(false, &d.p("o2")).unwrap_err();
    let text = err.to_string();
    assert!(
        (text.contains("uid-totals") || text.contains("uid-timestamps"))
            && text.contains("allow non-restored state"),
        "{text}"
    );
    without_window(true, &d.p("o3"))?;
    assert_eq!(
        published(&d.p("o3")).len() as u64,
        ORDERS - 3_000,
        "the source continued from its position"
    );
    Ok(())
}

#[test]
fn a_savepoint_taken_while_the_job_runs_continues_it_exactly() -> typeinfo_runtime::Result<()> {
    for state in [StateBackend::Heap, StateBackend::rocksdb()] {
        let d = Dirs::new();
        let (first, second, sp) = (d.p("first"), d.p("second"), d.p("sp"));
        let running = build_v1(
            &Setup {
                parallelism: 2,
                state: state.clone(),
                checkpoints: &d.p("ck1"),
                output: &first,
                restore: None,
                stop: None,
                allow_dropping: false,
            },
            true,
        )
        .execute_async("slow v1")?;
        // Take it once a checkpoint has published output.
        wait_until_published(&first);
        let saved = running.trigger_savepoint(&sp, Duration::from_secs(30))?;
        assert_eq!(saved, sp);
        running.wait()?;
        let epoch = common::savepoint_epoch(&sp);
        job_v1(&Setup {
            parallelism: 1,
            state,
            checkpoints: &d.p("ck2"),
            output: &second,
            restore: Some(&sp),
            stop: None,
            allow_dropping: false,
        })?;
        // The first run's output up to the savepoint, then the second run's, is the whole output.
        let mut lines = common::published_up_to(&first, epoch);
        lines.extend(published(&second));
        lines.sort();
        assert_eq!(lines, uninterrupted_v1(&d));
        assert!(
            !published(&second).is_empty() && published(&second).len() < lines.len(),
            "the savepoint was taken part-way"
        );
    }
    Ok(())
}

/// `JobClient::stop_with_savepoint` on a running job: the job ends with the savepoint
/// written and nothing fired after its cut, and a job restored from it writes the rest: the
/// two runs' committed output together is the uninterrupted run's, on both backends.
#[test]
fn a_job_stopped_with_a_savepoint_on_request_continues_exactly() -> typeinfo_runtime::Result<()> {
    for state in [StateBackend::Heap, StateBackend::rocksdb()] {
        let d = Dirs::new();
        let (output, sp) = (d.p("output"), d.p("sp"));
        let running = build_v1(
            &Setup {
                parallelism: 2,
                state: state.clone(),
                checkpoints: &d.p("ck1"),
                output: &output,
                restore: None,
                stop: None,
                allow_dropping: false,
            },
            true,
        )
        .execute_async("slow v1")?;
        // Stop once a checkpoint has published output.
        wait_until_published(&output);
        running.stop_with_savepoint(&sp)?;
        assert!(sp.join("_metadata").is_file(), "the savepoint is written");
        let stopped = published(&output).len();
        job_v1(&Setup {
            parallelism: 1,
            state,
            checkpoints: &d.p("ck2"),
            output: &output,
            restore: Some(&sp),
            stop: None,
            allow_dropping: false,
        })?;
        let whole = uninterrupted_v1(&d);
        assert!(
            stopped > 0 && stopped < whole.len(),
            "the job stopped part-way: {stopped} of {} lines",
            whole.len()
        );
        let mut lines = published(&output);
        lines.sort();
        assert_eq!(lines, whole);
    }
    Ok(())
}

#[test]
fn file_and_sequence_sources_resume_at_their_position() -> typeinfo_runtime::Result<()> {
    let d = Dirs::new();
    let input = d.p("input.txt");
    std::fs::write(
        &input,
        (0..3_000)
            .map(|i| format!("line {i}\n"))
            .collect::<String>(),
    )
    .unwrap();
    let build = |out: &Path, ck: &Path, restore: Option<&Path>, stop: Option<(u64, &Path)>| {
        let env = env(&Setup {
            parallelism: 2,
            state: StateBackend::Heap,
            checkpoints: ck,
            output: out,
            restore,
            stop,
            allow_dropping: false,
        });
        let lines = env.read_text_file(&input).uid("file");
        let numbers = env
            .from_sequence(1, 3_000)
            .uid("sequence")
            .set_parallelism(1)
            .map(|n| format!("n {n}"));
        lines
            .union(&[numbers])
            .map(|l| l.to_uppercase())
            .write_as_text(out)
            .uid("output");
        env
    };
    let sp = d.p("sp");
    build(&d.p("out"), &d.p("ck1"), None, Some((1_000, &sp))).execute("first half")?;
    let first = published(&d.p("out")).len();
    build(&d.p("out"), &d.p("ck2"), Some(&sp), None).execute("second half")?;
    build(&d.p("ref"), &d.p("ck3"), None, None).execute("reference")?;
    assert_eq!(first, 2_000, "each source stopped after 1,000 lines");
    assert_eq!(
        published(&d.p("out")),
        published(&d.p("ref")),
        "resumed by byte offset and by count"
    );
    Ok(())
}
