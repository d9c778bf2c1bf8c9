//! What the savepoint tool's tests share: two real jobs (per-user windows, as the main
//! demo; a keyed counter that reads bootstrapped state), their output, and the bytes of a
//! directory tree (to prove that no command modifies its input).
#![allow(dead_code)] // each test uses what it needs

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use typeinfo::TypeInfo;
use typeinfo_runtime::{
    AggregateFunction, CheckpointConfig, KeyedBackend, KeyedContext, KeyedProcessFunction,
    RestoreSettings, StateBackend, StopWithSavepoint, StreamExecutionEnvironment,
    TumblingEventTimeWindows, WatermarkStrategy,
};
use typeinfo_state::{
    KeyedStateBackend, ListState, ListStateDescriptor, MapState, MapStateDescriptor, ValueState,
    ValueStateDescriptor,
};

pub const ORDERS: u64 = 4_000;
const USERS: [&str; 5] = ["ada", "bob", "cy", "dee", "eve"];

#[derive(TypeInfo, Clone, Debug)]
#[typeinfo(name = "test.Order")]
pub struct Order {
    pub user: String,
    pub amount: i32,
    pub ts: i64,
}

#[derive(TypeInfo, Clone, Debug, Default, PartialEq)]
#[typeinfo(name = "test.Total")]
pub struct Total {
    pub orders: u32,
    pub cents: i64,
}

/// Order `i`: a user, an amount, 250 ms after the previous order.
pub fn order(i: u64) -> Order {
    Order {
        user: USERS[(i * 7919 % USERS.len() as u64) as usize].to_owned(),
        amount: (i * 37 % 1000) as i32 + 1,
        ts: i as i64 * 250,
    }
}

struct Sum;
impl AggregateFunction<Order, Total, Total> for Sum {
    fn create_accumulator(&self) -> Total {
        Total::default()
    }
    fn add(&self, o: &Order, t: &mut Total) {
        t.orders += 1;
        t.cents += i64::from(o.amount);
    }
    fn get_result(&self, t: &Total) -> Total {
        t.clone()
    }
    fn merge(&self, mut a: Total, b: Total) -> Total {
        a.orders += b.orders;
        a.cents += b.cents;
        a
    }
}

pub fn backends() -> [StateBackend; 2] {
    [StateBackend::Heap, StateBackend::rocksdb()]
}

/// How one run of a job is set up.
#[derive(Clone)]
pub struct Run<'a> {
    pub parallelism: u32,
    pub max_parallelism: u32,
    pub state: StateBackend,
    pub work: &'a Path,
    pub output: PathBuf,
    pub restore: Option<PathBuf>,
    pub allow_non_restored_state: bool,
    pub stop: Option<(u64, PathBuf)>,
    /// The uid of the window operator (the demo's `minute-totals`).
    pub totals_uid: &'a str,
}

impl<'a> Run<'a> {
    pub fn new(work: &'a Path, state: StateBackend, output: &str) -> Self {
        Run {
            parallelism: 2,
            max_parallelism: 128,
            state,
            work,
            output: work.join(output),
            restore: None,
            allow_non_restored_state: false,
            stop: None,
            totals_uid: "minute-totals",
        }
    }

    fn env(&self) -> StreamExecutionEnvironment {
        let env = StreamExecutionEnvironment::new();
        env.set_parallelism(self.parallelism)
            .set_max_parallelism(self.max_parallelism)
            .set_state_backend(self.state.clone());
        // One checkpoint directory per run (the runs of a test share the work directory).
        let run = self.restore.as_ref().map_or(0, |_| 1) + self.stop.as_ref().map_or(0, |_| 2);
        let checkpoints = self.work.join(format!(
            "checkpoints-{}-{run}",
            self.output
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
        ));
        env.enable_checkpointing(CheckpointConfig::new(
            checkpoints,
            Duration::from_millis(50),
        ));
        if let Some(path) = &self.restore {
            env.restore_from(RestoreSettings {
                path: path.clone(),
                allow_non_restored_state: self.allow_non_restored_state,
            });
        }
        if let Some((after_records, dir)) = &self.stop {
            env.stop_with_savepoint(StopWithSavepoint {
                after_records: *after_records,
                dir: dir.clone(),
            });
        }
        env
    }

    /// The main demo's job: orders from one generator subtask, per-user one-minute
    /// windows summed (`totals_uid`), one line per user and minute to a file sink.
    pub fn window_job(&self) -> typeinfo_runtime::Result<typeinfo_runtime::JobResult> {
        let env = self.env();
        env.from_generator(ORDERS, order)
            .uid("orders")
            .set_parallelism(1)
            .assign_timestamps_and_watermarks(
                WatermarkStrategy::for_monotonous_timestamps()
                    .with_timestamp_assigner(|o: &Order, _| o.ts),
            )
            .uid("timestamps")
            .set_parallelism(1)
            .key_by(|o: &Order| o.user.clone())
            .window(TumblingEventTimeWindows::of_millis(60_000))
            .aggregate_with(Sum, |user: &String, w, t: Total| {
                format!("{},{user},{},{}", w.start / 60_000, t.orders, t.cents)
            })
            .uid(self.totals_uid)
            .write_as_text(&self.output)
            .uid("output");
        env.execute("orders per minute")
    }

    /// A keyed counter (uid `counter`): for each input word, the count so far (its value
    /// state `count` plus one), its list state `seen` and its map state `tags` as restored;
    /// writes `word,count,seen,tags` lines.
    pub fn counter_job(&self, words: Vec<String>) -> typeinfo_runtime::Result<Vec<String>> {
        let env = self.env();
        let out = env
            .from_collection(words)
            .uid("words")
            .set_parallelism(1)
            .key_by(|w: &String| w.clone())
            .process(Counter::default())
            .uid("counter")
            .collect();
        env.execute("counter")?;
        let mut lines = out.take();
        lines.sort();
        Ok(lines)
    }
}

/// The keyed process function of [`Run::counter_job`].
#[derive(Clone, Default)]
pub struct Counter {
    count: Option<ValueState<(), u64>>,
    seen: Option<ListState<(), i32>>,
    tags: Option<MapState<(), String, i64>>,
}

impl KeyedProcessFunction<String, String, String> for Counter {
    fn open(&mut self, state: &mut KeyedBackend<String>) -> typeinfo_runtime::Result<()> {
        self.count = Some(state.value_state(&ValueStateDescriptor::new("count"))?);
        self.seen = Some(state.list_state(&ListStateDescriptor::new("seen"))?);
        self.tags = Some(state.map_state(&MapStateDescriptor::new("tags"))?);
        Ok(())
    }

    fn process_element(
        &mut self,
        word: String,
        ctx: &mut KeyedContext<'_, String, String>,
    ) -> typeinfo_runtime::Result<()> {
        let (Some(count), Some(seen), Some(tags)) = (&self.count, &self.seen, &self.tags) else {
            return Ok(());
        };
        let n = count.value(ctx.state(), &())?.unwrap_or(0) + 1;
        count.update(ctx.state(), &(), n)?;
        let seen: Vec<String> = seen
            .get(ctx.state(), &())?
            .iter()
            .map(i32::to_string)
            .collect();
        let tags: Vec<String> = tags
            .entries(ctx.state(), &())?
            .into_iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        ctx.collect(format!("{word},{n},{},{}", seen.join(" "), tags.join(" ")));
        Ok(())
    }
}

/// Every published line of an output directory, sorted.
pub fn published(dir: &Path) -> Vec<String> {
    let mut lines = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            if entry.file_name().to_string_lossy().starts_with("part-") {
                let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
                lines.extend(text.lines().map(str::to_owned));
            }
        }
    }
    lines.sort();
    lines
}

/// Every file under `dir` (relative path) with its bytes.
pub fn tree(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
        if let Ok(entries) = std::fs::read_dir(dir) {
            for entry in entries.flatten() {
                let path = entry.path();
                if path.is_dir() {
                    walk(root, &path, out);
                } else {
                    let rel = path.strip_prefix(root).unwrap_or(&path).to_owned();
                    out.insert(rel, std::fs::read(&path).unwrap_or_default());
                }
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// Runs the window job on `state` until half of the orders, stopping with a savepoint in
/// `<work>/savepoint`; returns the savepoint and the output directory.
pub fn real_savepoint(work: &Path, state: StateBackend) -> (PathBuf, PathBuf) {
    let savepoint = work.join("savepoint");
    let mut run = Run::new(work, state, "output-v1");
    run.stop = Some((ORDERS / 2, savepoint.clone()));
    run.window_job().expect("the job stops with a savepoint");
    (savepoint, run.output)
}

/// The window job's output over every order, uninterrupted (on the heap, parallelism 2).
pub fn uninterrupted(work: &Path) -> Vec<String> {
    let run = Run::new(work, StateBackend::Heap, "reference");
    run.window_job().expect("the reference run");
    let lines = published(&run.output);
    // 4,000 orders 250 ms apart: 17 minutes, each with orders of every user.
    assert_eq!(lines.len(), 17 * 5, "{lines:?}");
    lines
}

/// Copies the directory tree `from` to `to` (an output directory, so that several runs
/// can each continue from the same first run).
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create the copy");
    for (rel, bytes) in tree(from) {
        let path = to.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("create a directory of the copy");
        }
        std::fs::write(path, bytes).expect("copy a file");
    }
}
