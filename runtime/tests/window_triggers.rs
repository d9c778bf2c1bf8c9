//! Triggers, evictors, count and global windows, `window_all` and process window functions
//! with a context, through the DataStream API on both state backends: each result is checked
//! against a small independent model written in the test (the command-line cases of
//! `tests/windowed/` check the same features against Apache Flink's own output).
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test (or bench) panics on what it does not expect

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use typeinfo_runtime::evictor::{CountEvictor, TimeEvictor};
use typeinfo_runtime::trigger::{CountTrigger, DeltaTrigger, PurgingTrigger};
use typeinfo_runtime::{
    CheckpointConfig, EventTimeSessionWindows, GlobalWindow, OutputTag, ProcessWindowFunction,
    RestoreSettings, StateBackend, StopWithSavepoint, StreamExecutionEnvironment, TimeWindow,
    TumblingEventTimeWindows, WatermarkStrategy, WindowContext, WindowFunctionSetup,
};
use typeinfo_state::{KeyedStateBackend, ValueState, ValueStateDescriptor};

mod common;
use common::published;

fn backends() -> [StateBackend; 2] {
    [StateBackend::Heap, StateBackend::rocksdb()]
}

/// `(key, ts, amount)` events: `n` of them over `keys` keys, timestamps increasing.
fn events(n: u64, keys: u64) -> Vec<(u64, i64, i64)> {
    (0..n)
        .map(|i| (i * 7 % keys, i as i64 * 3, (i * 13 % 17) as i64))
        .collect()
}

fn sorted<T: Ord>(mut v: Vec<T>) -> Vec<T> {
    v.sort();
    v
}

/// The events as one source subtask's records with their timestamps and monotonous
/// watermarks.
fn timestamped(
    env: &StreamExecutionEnvironment,
    input: &[(u64, i64, i64)],
) -> typeinfo_runtime::DataStream<(u64, i64, i64)> {
    env.from_collection(input.to_vec())
        .set_parallelism(1)
        .assign_timestamps_and_watermarks(
            WatermarkStrategy::for_monotonous_timestamps()
                .with_timestamp_assigner(|e: &(u64, i64, i64), _| e.1),
        )
        .set_parallelism(1)
}

/// Per key and tumbling window of `size`, the amounts in arrival order.
fn by_window(events: &[(u64, i64, i64)], size: i64) -> BTreeMap<(u64, i64), Vec<i64>> {
    let mut out: BTreeMap<(u64, i64), Vec<i64>> = BTreeMap::new();
    for &(k, ts, a) in events {
        out.entry((k, ts - ts.rem_euclid(size)))
            .or_default()
            .push(a);
    }
    out
}

#[test]
fn a_count_trigger_fires_early_and_never_at_the_window_end() {
    let input = events(2_000, 5);
    // CountTrigger::of(3) replaces the event-time trigger: every third element of a window
    // fires with everything so far (nothing is purged); the window's end fires nothing.
    let mut want = Vec::new();
    for ((k, start), amounts) in by_window(&input, 100) {
        for n in (3..=amounts.len()).step_by(3) {
            want.push((k, start, amounts[..n].iter().sum::<i64>()));
        }
    }
    for backend in backends() {
        for parallelism in [1, 2] {
            let env = StreamExecutionEnvironment::new();
            env.set_parallelism(parallelism)
                .set_state_backend(backend.clone());
            let out = timestamped(&env, &input)
                .key_by(|e: &(u64, i64, i64)| e.0)
                .window(TumblingEventTimeWindows::of_millis(100))
                .trigger(CountTrigger::of(3))
                .aggregate_with(
                    typeinfo_runtime::functions::CountAndSum(|e: &(u64, i64, i64)| e.2),
                    |k: &u64, w: &TimeWindow, (_, sum): (u64, i64)| (*k, w.start, sum),
                )
                .collect();
            env.execute("count trigger").unwrap();
            assert_eq!(
                sorted(out.take()),
                sorted(want.clone()),
                "{backend:?} p{parallelism}"
            );
        }
    }
}

#[test]
fn count_windows_fire_per_n_records_of_a_key_and_slide() {
    let input = events(1_001, 3);
    let mut per_key: BTreeMap<u64, Vec<i64>> = BTreeMap::new();
    for &(k, _, a) in &input {
        per_key.entry(k).or_default().push(a);
    }
    // countWindow(4): disjoint groups of 4 per key, an incomplete last group never fires.
    let tumbling: Vec<(u64, i64)> = per_key
        .iter()
        .flat_map(|(k, v)| v.chunks_exact(4).map(move |c| (*k, c.iter().sum())))
        .collect();
    // countWindow(4, 2): at every second record, the sum of the last (up to) four.
    let sliding: Vec<(u64, i64)> = per_key
        .iter()
        .flat_map(|(k, v)| {
            (2..=v.len())
                .step_by(2)
                .map(move |n| (*k, v[n.saturating_sub(4)..n].iter().sum()))
        })
        .collect();
    for backend in backends() {
        for parallelism in [1, 2] {
            let env = StreamExecutionEnvironment::new();
            env.set_parallelism(parallelism)
                .set_state_backend(backend.clone());
            let keyed = env
                .from_collection(input.clone())
                .set_parallelism(1)
                .key_by(|e: &(u64, i64, i64)| e.0);
            let sum =
                |k: &u64, _: &GlobalWindow, v: Vec<(u64, i64, i64)>, out: &mut Vec<(u64, i64)>| {
                    out.push((*k, v.iter().map(|e| e.2).sum()));
                };
            let a = keyed.count_window(4).apply(sum).collect();
            let b = keyed.count_window_sliding(4, 2).apply(sum).collect();
            env.execute("count windows").unwrap();
            assert_eq!(
                sorted(a.take()),
                sorted(tumbling.clone()),
                "{backend:?} p{parallelism}"
            );
            assert_eq!(
                sorted(b.take()),
                sorted(sliding.clone()),
                "{backend:?} p{parallelism}"
            );
        }
    }
}

#[test]
fn a_purging_trigger_emits_disjoint_batches() {
    let input = events(999, 4);
    let mut want = Vec::new();
    for ((k, start), amounts) in by_window(&input, 60) {
        for pair in amounts.chunks_exact(2) {
            want.push((k, start, pair[0] + pair[1]));
        }
    }
    for backend in backends() {
        let env = StreamExecutionEnvironment::new();
        env.set_parallelism(2).set_state_backend(backend.clone());
        let out = timestamped(&env, &input)
            .key_by(|e: &(u64, i64, i64)| e.0)
            .window(TumblingEventTimeWindows::of_millis(60))
            .trigger(PurgingTrigger::of(CountTrigger::of(2)))
            .reduce(|a, b| (a.0, a.1, a.2 + b.2))
            .collect();
        env.execute("purging").unwrap();
        let mut got: Vec<(u64, i64, i64)> = out
            .take()
            .into_iter()
            .map(|(k, ts, sum)| (k, ts - ts.rem_euclid(60), sum))
            .collect();
        got.sort();
        assert_eq!(got, sorted(want.clone()), "{backend:?}");
    }
}

#[test]
fn evictors_see_arrival_order_and_timestamps() {
    // One key, timestamps out of order: 50, 10, 40, 20, 30 (amounts 1..5).
    let input: Vec<(u64, i64, i64)> =
        vec![(0, 50, 1), (0, 10, 2), (0, 40, 3), (0, 20, 4), (0, 30, 5)];
    for backend in backends() {
        let env = StreamExecutionEnvironment::new();
        env.set_state_backend(backend.clone());
        let stream = env
            .from_collection(input.clone())
            .assign_timestamps_and_watermarks(
                WatermarkStrategy::for_bounded_out_of_orderness_millis(1_000)
                    .with_timestamp_assigner(|e: &(u64, i64, i64), _| e.1),
            )
            .key_by(|e: &(u64, i64, i64)| e.0);
        let amounts =
            |_: &u64, _: &GlobalWindow, v: Vec<(u64, i64, i64)>, out: &mut Vec<Vec<i64>>| {
                out.push(v.iter().map(|e| e.2).collect());
            };
        // CountEvictor keeps the last two to arrive (20 and 30), not the two latest
        // timestamps (40 and 50).
        let by_count = stream
            .count_window(5)
            .evictor(CountEvictor::of(2))
            .apply(amounts)
            .collect();
        // TimeEvictor(15) keeps timestamps above max - 15 = 35: 50 and 40, in arrival order.
        let by_time = stream
            .count_window(5)
            .evictor(TimeEvictor::of_millis(15))
            .apply(amounts)
            .collect();
        // An evicting aggregate folds only what the evictor left (Flink's evicting windows
        // keep every element, so aggregate runs over the full contents).
        let aggregated = stream
            .count_window(5)
            .evictor(CountEvictor::of(3))
            .aggregate(typeinfo_runtime::functions::CountAndSum(
                |e: &(u64, i64, i64)| e.2,
            ))
            .collect();
        // Evicting after the function: every second element fires with what is there, then
        // only the newest stays for the next firing.
        let after = stream
            .window(typeinfo_runtime::GlobalWindows)
            .trigger(CountTrigger::of(2))
            .evictor(CountEvictor::of_after(1))
            .apply(amounts)
            .collect();
        env.execute("evictors").unwrap();
        assert_eq!(after.take(), [vec![1, 2], vec![2, 3, 4]], "{backend:?}");
        assert_eq!(by_count.take(), [vec![4, 5]], "{backend:?}");
        assert_eq!(by_time.take(), [vec![1, 3]], "{backend:?}");
        assert_eq!(aggregated.take(), [(3, 12)], "{backend:?}");
    }
}

#[test]
fn a_trigger_that_cannot_merge_is_refused_with_session_windows() {
    let env = StreamExecutionEnvironment::new();
    env.from_collection(vec![(0u64, 1i64, 1i64)])
        .assign_timestamps_and_watermarks(
            WatermarkStrategy::for_monotonous_timestamps()
                .with_timestamp_assigner(|e: &(u64, i64, i64), _| e.1),
        )
        .key_by(|e: &(u64, i64, i64)| e.0)
        .window(EventTimeSessionWindows::with_gap_millis(10))
        .trigger(DeltaTrigger::of(
            1.0,
            |a: &(u64, i64, i64), b: &(u64, i64, i64)| (a.2 - b.2).abs() as f64,
        ))
        .reduce(|a, _| *a)
        .collect();
    let err = env.execute("delta sessions").unwrap_err().to_string();
    assert!(
        err.contains("merging window assigner") && err.contains("DeltaTrigger"),
        "{err}"
    );
}

#[test]
fn window_all_runs_one_subtask_and_refuses_more() {
    let input = events(500, 7);
    let want: Vec<i64> = by_window(&input, 100)
        .into_iter()
        .fold(BTreeMap::<i64, i64>::new(), |mut m, ((_, start), v)| {
            *m.entry(start).or_default() += v.iter().sum::<i64>();
            m
        })
        .into_values()
        .collect();
    for backend in backends() {
        let env = StreamExecutionEnvironment::new();
        env.set_parallelism(2).set_state_backend(backend.clone());
        let totals = env
            .from_collection(input.clone())
            .set_parallelism(1)
            .assign_timestamps_and_watermarks(
                WatermarkStrategy::for_monotonous_timestamps()
                    .with_timestamp_assigner(|e: &(u64, i64, i64), _| e.1),
            )
            .window_all(TumblingEventTimeWindows::of_millis(100))
            .aggregate(typeinfo_runtime::functions::CountAndSum(
                |e: &(u64, i64, i64)| e.2,
            ))
            .map(|(_, sum)| sum)
            .collect();
        let plan = env.explain().unwrap();
        assert!(plan.contains("Window All (parallelism 1"), "{plan}");
        env.execute("window all").unwrap();
        assert_eq!(sorted(totals.take()), sorted(want.clone()), "{backend:?}");
    }
    let env = StreamExecutionEnvironment::new();
    env.from_collection(vec![1i64])
        .window_all(TumblingEventTimeWindows::of_millis(10))
        .reduce(|a, b| a + b)
        .set_parallelism(2)
        .collect();
    let err = env.execute("parallel window all").unwrap_err().to_string();
    assert!(err.contains("parallelism must be 1"), "{err}");
}

/// Counts a window's firings in per-window state (cleared with the window) and the key's
/// elements over all windows in global state; reports each window's max on a side output.
#[derive(Clone)]
struct Firings {
    per_window: Option<ValueState<TimeWindow, u64>>,
    global: Option<ValueState<(), u64>>,
    maxima: OutputTag<i64>,
}

impl ProcessWindowFunction<u64, (u64, i64, i64), String, TimeWindow> for Firings {
    fn open(
        &mut self,
        setup: &mut WindowFunctionSetup<'_, u64, TimeWindow>,
    ) -> typeinfo_runtime::Result<()> {
        let w = setup
            .keyed_state()
            .value_state(&ValueStateDescriptor::new("firings"))?;
        setup.per_window(w.id());
        self.per_window = Some(w);
        self.global = Some(
            setup
                .keyed_state()
                .value_state(&ValueStateDescriptor::new("seen"))?,
        );
        Ok(())
    }
    fn process(
        &mut self,
        key: &u64,
        elements: Vec<(u64, i64, i64)>,
        ctx: &mut WindowContext<'_, u64, TimeWindow, String>,
    ) -> typeinfo_runtime::Result<()> {
        let (pw, global) = (
            self.per_window.clone().unwrap(),
            self.global.clone().unwrap(),
        );
        let w = *ctx.window();
        let firings = pw.value(ctx.state(), &w)?.unwrap_or(0) + 1;
        pw.update(ctx.state(), &w, firings)?;
        let seen = global.value(ctx.state(), &())?.unwrap_or(0) + elements.len() as u64;
        global.update(ctx.state(), &(), seen)?;
        ctx.output(
            &self.maxima,
            elements.iter().map(|e| e.2).max().unwrap_or(0),
        )?;
        ctx.collect(format!(
            "{key},{},{},{firings},{seen}",
            w.start,
            elements.len()
        ));
        Ok(())
    }
}

#[test]
fn a_process_window_function_has_per_window_and_global_state_and_side_outputs() {
    // Tumbling windows of 10 with allowed lateness 100 and a late element per window: each
    // window fires at its end, then again at the late element (firing 2), its per-window
    // count is cleared at cleanup; the global count grows over all windows of the key.
    let input: Vec<(u64, i64, i64)> = vec![
        (1, 1, 5),
        (1, 2, 7),
        (1, 12, 1),
        (1, 5, 9), // late for [0, 10), within lateness: fires it again
        (1, 25, 2),
        (1, 300, 3), // passes every cleanup time
        (1, 8, 4),   // too late: dropped
    ];
    for backend in backends() {
        let env = StreamExecutionEnvironment::new();
        env.set_state_backend(backend.clone());
        let maxima = OutputTag::<i64>::new("maxima");
        let lines = env
            .from_collection(input.clone())
            .assign_timestamps_and_watermarks(
                WatermarkStrategy::for_monotonous_timestamps()
                    .emit_per_event()
                    .with_timestamp_assigner(|e: &(u64, i64, i64), _| e.1),
            )
            .key_by(|e: &(u64, i64, i64)| e.0)
            .window(TumblingEventTimeWindows::of_millis(10))
            .allowed_lateness_millis(100)
            .process(Firings {
                per_window: None,
                global: None,
                maxima: maxima.clone(),
            });
        let got = lines.collect();
        let max = lines.side_output(&maxima).collect();
        env.execute("process window function").unwrap();
        assert_eq!(
            sorted(got.take()),
            sorted(vec![
                "1,0,2,1,2".to_owned(),  // [0,10) at watermark 11: 2 elements
                "1,0,3,2,5".to_owned(),  // late 5 fires it again
                "1,10,1,1,6".to_owned(), // [10,20)
                "1,20,1,1,7".to_owned(), // [20,30)
                "1,300,1,1,8".to_owned(),
            ]),
            "{backend:?}"
        );
        assert_eq!(sorted(max.take()), vec![1, 2, 3, 7, 9], "{backend:?}");
    }
}

#[derive(Clone)]
struct Label;

impl ProcessWindowFunction<u64, i64, String, TimeWindow> for Label {
    fn process(
        &mut self,
        key: &u64,
        elements: Vec<i64>,
        ctx: &mut WindowContext<'_, u64, TimeWindow, String>,
    ) -> typeinfo_runtime::Result<()> {
        assert_eq!(
            elements.len(),
            1,
            "an incremental window hands over one result"
        );
        ctx.collect(format!("{key}@{}={}", ctx.window().start, elements[0]));
        Ok(())
    }
}

#[test]
fn aggregate_and_reduce_hand_one_result_to_a_process_window_function() {
    let input = events(300, 3);
    let want: Vec<String> = by_window(&input, 50)
        .into_iter()
        .map(|((k, start), v)| format!("{k}@{start}={}", v.iter().sum::<i64>()))
        .collect();
    for backend in backends() {
        let env = StreamExecutionEnvironment::new();
        env.set_parallelism(2).set_state_backend(backend.clone());
        let windowed = timestamped(&env, &input)
            .map(|e: (u64, i64, i64)| (e.0, e.2))
            .key_by(|e: &(u64, i64)| e.0)
            .window(TumblingEventTimeWindows::of_millis(50));
        struct Amounts;
        impl typeinfo_runtime::AggregateFunction<(u64, i64), i64, i64> for Amounts {
            fn create_accumulator(&self) -> i64 {
                0
            }
            fn add(&self, v: &(u64, i64), acc: &mut i64) {
                *acc += v.1;
            }
            fn get_result(&self, acc: &i64) -> i64 {
                *acc
            }
            fn merge(&self, a: i64, b: i64) -> i64 {
                a + b
            }
        }
        let aggregated = windowed.aggregate_process(Amounts, Label).collect();
        let reduced = windowed
            .reduce_process(|a, b| (a.0, a.1 + b.1), LabelPair)
            .collect();
        env.execute("incremental process").unwrap();
        assert_eq!(
            sorted(aggregated.take()),
            sorted(want.clone()),
            "{backend:?}"
        );
        assert_eq!(sorted(reduced.take()), sorted(want.clone()), "{backend:?}");
    }
}

#[derive(Clone)]
struct LabelPair;

impl ProcessWindowFunction<u64, (u64, i64), String, TimeWindow> for LabelPair {
    fn process(
        &mut self,
        key: &u64,
        elements: Vec<(u64, i64)>,
        ctx: &mut WindowContext<'_, u64, TimeWindow, String>,
    ) -> typeinfo_runtime::Result<()> {
        ctx.collect(format!("{key}@{}={}", ctx.window().start, elements[0].1));
        Ok(())
    }
}

/// A job whose count-triggered windows span a savepoint: stopped after `stop` records at
/// parallelism `p1` on `b1`, restored at `p2` on `b2`; the output of both runs together
/// must equal an uninterrupted run's (a lost or reset count would move every later firing).
fn count_trigger_job(
    dir: &Path,
    parallelism: u32,
    backend: StateBackend,
    restore: Option<&Path>,
    stop: Option<(u64, &Path)>,
    out: &Path,
) {
    let env = StreamExecutionEnvironment::new();
    env.set_parallelism(parallelism)
        .set_max_parallelism(64)
        .set_state_backend(backend);
    env.enable_checkpointing(CheckpointConfig::new(dir, Duration::from_millis(50)));
    if let Some(path) = restore {
        env.restore_from(RestoreSettings {
            path: path.to_owned(),
            allow_non_restored_state: false,
        });
    }
    if let Some((after_records, dir)) = stop {
        env.stop_with_savepoint(StopWithSavepoint {
            after_records,
            dir: dir.to_owned(),
        });
    }
    env.from_generator(3_000, |i| (i % 11, i as i64 * 2, (i % 5) as i64))
        .uid("events")
        .set_parallelism(1)
        .assign_timestamps_and_watermarks(
            WatermarkStrategy::for_monotonous_timestamps()
                .with_timestamp_assigner(|e: &(u64, i64, i64), _| e.1),
        )
        .uid("timestamps")
        .set_parallelism(1)
        .key_by(|e: &(u64, i64, i64)| e.0)
        .window(TumblingEventTimeWindows::of_millis(1_000))
        .trigger(CountTrigger::of(7))
        .aggregate_with(
            typeinfo_runtime::functions::CountAndSum(|e: &(u64, i64, i64)| e.2),
            |k: &u64, w: &TimeWindow, (n, sum): (u64, i64)| format!("{k},{},{n},{sum}", w.start),
        )
        .uid("windows")
        .write_as_text(out)
        .uid("out");
    env.execute("count trigger across a savepoint").unwrap();
}

#[test]
fn count_trigger_state_survives_a_restore_at_another_parallelism_and_backend() {
    let tmp = tempfile::tempdir().unwrap();
    let p = |n: &str| tmp.path().join(n);
    count_trigger_job(&p("ref-ck"), 2, StateBackend::Heap, None, None, &p("ref"));
    let reference = published(&p("ref"));
    assert!(reference.len() > 100, "{}", reference.len());
    for (b1, b2) in [
        (StateBackend::Heap, StateBackend::rocksdb()),
        (StateBackend::rocksdb(), StateBackend::Heap),
    ] {
        let name = format!("{b1:?}-{b2:?}").replace(|c: char| !c.is_alphanumeric(), "");
        let out = p(&format!("out-{name}"));
        let savepoint = p(&format!("sp-{name}"));
        count_trigger_job(
            &p(&format!("ck1-{name}")),
            2,
            b1,
            None,
            Some((1_234, &savepoint)),
            &out,
        );
        let first = published(&out);
        assert!(
            !first.is_empty() && first.len() < reference.len(),
            "stopped half-way: {}",
            first.len()
        );
        count_trigger_job(
            &p(&format!("ck2-{name}")),
            3,
            b2,
            Some(&savepoint),
            None,
            &out,
        );
        assert_eq!(published(&out), reference, "{name}");
    }
}

#[test]
fn a_continuous_trigger_on_global_windows_ends_with_the_input() {
    // Flink's ContinuousEventTimeTrigger in a window that never ends fires every interval up
    // to i64::MAX at the end of input (its job never finishes); here it fires at its first
    // fire time, then once more for the window's own end, and the job ends.
    for backend in backends() {
        let env = StreamExecutionEnvironment::new();
        env.set_state_backend(backend.clone());
        let sums = env
            .from_collection(vec![(0u64, 1i64, 1i64), (0, 2, 2), (0, 3, 3)])
            .assign_timestamps_and_watermarks(
                WatermarkStrategy::for_monotonous_timestamps()
                    .with_timestamp_assigner(|e: &(u64, i64, i64), _| e.1),
            )
            .key_by(|e: &(u64, i64, i64)| e.0)
            .window(typeinfo_runtime::GlobalWindows)
            .trigger(typeinfo_runtime::trigger::ContinuousEventTimeTrigger::of_millis(10))
            .reduce(|a, b| (a.0, a.1, a.2 + b.2))
            .map(|e| e.2)
            .collect();
        env.execute("continuous global").unwrap();
        assert_eq!(sums.take(), [6, 6], "{backend:?}");
    }
}

/// Reports each window on a side output when it is cleaned up.
#[derive(Clone)]
struct Closing {
    closed: OutputTag<i64>,
}

impl ProcessWindowFunction<u64, (u64, i64, i64), i64, TimeWindow> for Closing {
    fn process(
        &mut self,
        _: &u64,
        elements: Vec<(u64, i64, i64)>,
        ctx: &mut WindowContext<'_, u64, TimeWindow, i64>,
    ) -> typeinfo_runtime::Result<()> {
        ctx.collect(elements.len() as i64);
        Ok(())
    }
    fn clear(
        &mut self,
        ctx: &mut WindowContext<'_, u64, TimeWindow, i64>,
    ) -> typeinfo_runtime::Result<()> {
        let start = ctx.window().start;
        ctx.output(&self.closed, start)
    }
}

#[test]
fn a_window_function_clears_with_side_outputs_and_per_window_state_refuses_sessions() {
    for backend in backends() {
        let env = StreamExecutionEnvironment::new();
        env.set_state_backend(backend.clone());
        let closed = OutputTag::<i64>::new("closed");
        let counts = timestamped(&env, &[(1, 1, 1), (1, 2, 1), (1, 15, 1), (2, 27, 1)])
            .key_by(|e: &(u64, i64, i64)| e.0)
            .window(TumblingEventTimeWindows::of_millis(10))
            .process(Closing {
                closed: closed.clone(),
            });
        let sizes = counts.collect();
        let cleaned = counts.side_output(&closed).collect();
        env.execute("closing").unwrap();
        assert_eq!(sorted(sizes.take()), [1, 1, 2], "{backend:?}");
        assert_eq!(sorted(cleaned.take()), [0, 10, 20], "{backend:?}");
    }
    // Per-window state cannot follow merging windows (Flink's MergingWindowStateStore).
    let env = StreamExecutionEnvironment::new();
    timestamped(&env, &[(1, 1, 1)])
        .key_by(|e: &(u64, i64, i64)| e.0)
        .window(EventTimeSessionWindows::with_gap_millis(10))
        .process(Firings {
            per_window: None,
            global: None,
            maxima: OutputTag::new("maxima"),
        })
        .collect();
    let err = env.execute("per-window sessions").unwrap_err().to_string();
    assert!(
        err.contains("per-window state is not allowed with merging windows"),
        "{err}"
    );
}
