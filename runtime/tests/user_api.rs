//! Users' own operators and functions: a keyed operator with state and event-time timers,
//! operator state that survives a savepoint and a rescale, rolling aggregations, a
//! non-keyed process function with metrics, the runtime's own metrics, and the plan as DOT.
//! Every output is compared with a reference computed here, independently of the runtime.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test panics on what it does not expect

use std::collections::BTreeMap;
use std::time::Duration;

use typeinfo_runtime::{
    CheckpointConfig, OneInputOperator, OperatorContext, ProcessFunction, RestoreSettings, Result,
    StateBackend, StateContext, StopWithSavepoint, StreamExecutionEnvironment, TimeDomain,
    WatermarkStrategy,
};
use typeinfo_state::{
    KeyedStateBackend, OperatorListState, Redistribution, ValueState, ValueStateDescriptor,
};

fn events(n: u64) -> Vec<(String, i64)> {
    (0..n)
        .map(|i| (format!("k{}", i * 7 % 5), (i * 13 % 997) as i64))
        .collect()
}

/// Sums values per key and 500 ms bucket of event time: each record goes into keyed state
/// and registers an event-time timer at the end of its bucket; the timer emits
/// `(key, bucket end, sum)` of exactly the records up to it, whatever else arrived in the
/// same batch.
#[derive(Clone, Default)]
struct BucketSums {
    pending: Option<ValueState<(), Vec<(i64, i64)>>>,
}

const BUCKET: i64 = 500;

fn bucket_end(ts: i64) -> i64 {
    (ts.div_euclid(BUCKET) + 1) * BUCKET - 1
}

impl OneInputOperator<String, (String, i64), (String, i64, i64)> for BucketSums {
    fn initialize_state(&mut self, ctx: &mut StateContext<'_, String>) -> Result<()> {
        self.pending = Some(
            ctx.keyed_state()?
                .value_state(&ValueStateDescriptor::new("pending"))?,
        );
        Ok(())
    }

    fn process_element(
        &mut self,
        (_, v): (String, i64),
        ctx: &mut OperatorContext<'_, String, (String, i64, i64)>,
    ) -> Result<()> {
        let pending = self.pending.as_ref().unwrap();
        let ts = ctx.timestamp().unwrap();
        let backend = ctx.keyed_state()?;
        let mut entries = pending.value(backend, &())?.unwrap_or_default();
        entries.push((ts, v));
        pending.update(backend, &(), entries)?;
        ctx.register_event_time_timer(bucket_end(ts))
    }

    fn on_timer(
        &mut self,
        timestamp: i64,
        domain: TimeDomain,
        ctx: &mut OperatorContext<'_, String, (String, i64, i64)>,
    ) -> Result<()> {
        assert_eq!(domain, TimeDomain::EventTime);
        assert_eq!(ctx.timestamp(), Some(timestamp));
        let key = ctx.current_key().unwrap().clone();
        let pending = self.pending.as_ref().unwrap();
        let backend = ctx.keyed_state()?;
        let entries = pending.value(backend, &())?.unwrap_or_default();
        let (due, rest): (Vec<_>, Vec<_>) = entries.into_iter().partition(|(t, _)| *t <= timestamp);
        if rest.is_empty() {
            pending.clear(backend, &())?;
        } else {
            pending.update(backend, &(), rest)?;
        }
        ctx.collect((key, timestamp, due.iter().map(|(_, v)| v).sum()));
        Ok(())
    }
}

#[test]
fn a_keyed_operator_with_state_and_event_time_timers() {
    for backend in [StateBackend::Heap, StateBackend::rocksdb()] {
        let input = events(2_000);
        let env = StreamExecutionEnvironment::new();
        env.set_parallelism(2);
        env.set_state_backend(backend.clone());
        let out = env
            .from_collection(
                input
                    .iter()
                    .cloned()
                    .enumerate()
                    .map(|(i, e)| (i as u64, e))
                    .collect::<Vec<_>>(),
            )
            .assign_timestamps_and_watermarks(
                WatermarkStrategy::for_monotonous_timestamps()
                    .with_timestamp_assigner(|(i, _): &(u64, (String, i64)), _| *i as i64 * 7),
            )
            .map(|(_, e)| e)
            .key_by(|(k, _): &(String, i64)| k.clone())
            .transform("BucketSums", BucketSums::default())
            .collect();
        env.execute("bucket sums").unwrap();
        let mut got = out.take();
        let mut want: BTreeMap<(String, i64), i64> = BTreeMap::new();
        for (i, (k, v)) in input.iter().enumerate() {
            *want
                .entry((k.clone(), bucket_end(i as i64 * 7)))
                .or_default() += v;
        }
        let mut want: Vec<(String, i64, i64)> =
            want.into_iter().map(|((k, t), s)| (k, t, s)).collect();
        got.sort();
        want.sort();
        assert_eq!(got, want, "{backend:?}");
    }
}

/// Counts the records of each subtask in split operator state and emits each subtask's
/// count at the end of input.
#[derive(Clone, Default)]
struct CountPerSubtask {
    state: Option<OperatorListState<u64>>,
    count: u64,
}

impl OneInputOperator<(), u64, u64> for CountPerSubtask {
    fn initialize_state(&mut self, ctx: &mut StateContext<'_, ()>) -> Result<()> {
        self.state = Some(
            ctx.operator_state()
                .list_state("count", Redistribution::Split)?,
        );
        Ok(())
    }
    fn open(&mut self, ctx: &mut StateContext<'_, ()>) -> Result<()> {
        self.count = self
            .state
            .as_ref()
            .unwrap()
            .get(ctx.operator_state())?
            .iter()
            .sum();
        Ok(())
    }
    fn process_element(&mut self, _: u64, _: &mut OperatorContext<'_, (), u64>) -> Result<()> {
        self.count += 1;
        Ok(())
    }
    fn snapshot_state(&mut self, _: u64, ctx: &mut StateContext<'_, ()>) -> Result<()> {
        self.state
            .as_ref()
            .unwrap()
            .update(ctx.operator_state(), vec![self.count])?;
        Ok(())
    }
    fn end_input(&mut self, ctx: &mut OperatorContext<'_, (), u64>) -> Result<()> {
        ctx.collect(self.count);
        Ok(())
    }
}

#[test]
fn operator_state_survives_a_savepoint_and_a_rescale() {
    const N: u64 = 30_000;
    let dir = tempfile::tempdir().unwrap();
    let savepoint = dir.path().join("savepoint");
    let job = |parallelism: u32, restore: bool| {
        let env = StreamExecutionEnvironment::new();
        env.set_max_parallelism(16);
        env.enable_checkpointing(CheckpointConfig::new(
            dir.path().join(format!("chk-{parallelism}-{restore}")),
            Duration::from_millis(20),
        ));
        if restore {
            env.restore_from(RestoreSettings {
                path: savepoint.clone(),
                allow_non_restored_state: false,
            });
        } else {
            env.stop_with_savepoint(StopWithSavepoint {
                after_records: N / 2,
                dir: savepoint.clone(),
            });
        }
        let counts = env
            .from_sequence(0, N as i64 - 1)
            .set_parallelism(1)
            .map(|i| i as u64)
            .rebalance()
            .transform("Count", CountPerSubtask::default())
            .uid("count")
            .set_parallelism(parallelism)
            .collect();
        let result = env.execute("count").unwrap();
        (counts.take(), result)
    };
    let (first, _) = job(2, false);
    assert!(
        first.is_empty(),
        "a stop with savepoint ends without end of input"
    );
    let (second, result) = job(3, true);
    assert_eq!(second.len(), 3, "one count per new subtask");
    assert_eq!(
        second.iter().sum::<u64>(),
        N,
        "the counts of the first run were split over the new subtasks, none lost or doubled"
    );
    assert_eq!(result.metric("Count.numRecordsIn"), N / 2);
}

#[test]
fn rolling_aggregations_emit_per_record_as_flink_does() {
    let input: Vec<(u32, i64)> = (0..500)
        .map(|i| (i % 7, (i * 31 % 101) as i64 - 50))
        .collect();
    let env = StreamExecutionEnvironment::new();
    env.set_parallelism(2);
    let stream = env.from_collection(input.clone());
    let keyed = stream.key_by(|(k, _): &(u32, i64)| *k);
    let reduce = keyed
        .reduce(|a, b| (a.0, (a.1 * 3 + b.1) % 1_000_003))
        .collect();
    // One subtask for the sums, so that their order across keys is the input's.
    let sums_env = StreamExecutionEnvironment::new();
    let sum = sums_env
        .from_collection(input.iter().map(|(_, v)| *v).collect::<Vec<i64>>())
        .key_by(|v: &i64| v.rem_euclid(3))
        .sum()
        .collect();
    sums_env.execute("sums").unwrap();
    let min = keyed.min().collect();
    let max = keyed.max().collect();
    let min_by = keyed.min_by(|(_, v)| v.abs()).collect();
    let max_by = keyed.max_by(|(_, v)| *v / 10).collect();
    env.execute("rolling").unwrap();

    let mut reference: BTreeMap<&str, Vec<(u32, i64)>> = BTreeMap::new();
    let mut acc: [BTreeMap<u32, (u32, i64)>; 5] = Default::default();
    for &(k, v) in &input {
        let r = acc[0]
            .get(&k)
            .map_or((k, v), |a| (a.0, (a.1 * 3 + v) % 1_000_003));
        acc[0].insert(k, r);
        reference.entry("reduce").or_default().push(r);
        let m = acc[1]
            .get(&k)
            .map_or((k, v), |a| if (k, v) < *a { (k, v) } else { *a });
        acc[1].insert(k, m);
        reference.entry("min").or_default().push(m);
        let m = acc[2]
            .get(&k)
            .map_or((k, v), |a| if (k, v) > *a { (k, v) } else { *a });
        acc[2].insert(k, m);
        reference.entry("max").or_default().push(m);
        let m = acc[3]
            .get(&k)
            .map_or((k, v), |a| if v.abs() < a.1.abs() { (k, v) } else { *a });
        acc[3].insert(k, m);
        reference.entry("min_by").or_default().push(m);
        let m = acc[4]
            .get(&k)
            .map_or((k, v), |a| if v / 10 > a.1 / 10 { (k, v) } else { *a });
        acc[4].insert(k, m);
        reference.entry("max_by").or_default().push(m);
    }
    let mut sums: BTreeMap<i64, i64> = BTreeMap::new();
    let mut want_sum = Vec::new();
    for &(_, v) in &input {
        let s = sums.entry(v.rem_euclid(3)).or_default();
        *s += v;
        want_sum.push(*s);
    }
    // Per key, the emitted sequence is in input order (one source subtask, hash edges keep
    // a key's order); across keys the subtasks interleave, so compare per key.
    fn per_key(v: Vec<(u32, i64)>) -> BTreeMap<u32, Vec<i64>> {
        let mut m: BTreeMap<u32, Vec<i64>> = BTreeMap::new();
        for (k, x) in v {
            m.entry(k).or_default().push(x);
        }
        m
    }
    assert_eq!(per_key(reduce.take()), per_key(reference["reduce"].clone()));
    assert_eq!(per_key(min.take()), per_key(reference["min"].clone()));
    assert_eq!(per_key(max.take()), per_key(reference["max"].clone()));
    assert_eq!(per_key(min_by.take()), per_key(reference["min_by"].clone()));
    assert_eq!(per_key(max_by.take()), per_key(reference["max_by"].clone()));
    assert_eq!(sum.take(), want_sum);
}

#[derive(Clone)]
struct Tokenize;

impl ProcessFunction<String, String> for Tokenize {
    fn process_element(
        &mut self,
        line: String,
        ctx: &mut OperatorContext<'_, (), String>,
    ) -> Result<()> {
        let runtime = ctx.runtime();
        assert_eq!(runtime.parallelism(), 2);
        assert!(runtime.subtask_index() < 2);
        assert_eq!(runtime.job_name(), "tokens");
        runtime.metrics().counter("lines").inc();
        runtime
            .metrics()
            .histogram("words")
            .update(line.split_whitespace().count() as i64);
        for w in line.split_whitespace() {
            ctx.collect(w.to_owned());
        }
        Ok(())
    }
}

#[test]
fn a_process_function_with_metrics_and_the_runtime_counts_records() {
    let lines: Vec<String> = (0..300).map(|i| "w ".repeat(i % 4 + 1)).collect();
    let words: usize = lines.iter().map(|l| l.split_whitespace().count()).sum();
    let env = StreamExecutionEnvironment::new();
    env.set_parallelism(2);
    let out = env
        .from_collection(lines)
        .rebalance()
        .process(Tokenize)
        .name("Tokenize")
        .collect();
    let result = env.execute("tokens").unwrap();
    assert_eq!(out.take().len(), words);
    assert_eq!(result.metric("Tokenize.lines"), 300);
    assert_eq!(result.metric("Tokenize.numRecordsIn"), 300);
    assert_eq!(result.metric("Tokenize.numRecordsOut"), words as u64);
    assert_eq!(result.metric("Collection Source.numRecordsOut"), 300);
    let histograms: u64 = result.histograms.values().map(|h| h.count).sum();
    assert_eq!(histograms, 300, "{:?}", result.histograms);
    assert_eq!(
        result.gauges.get("Tokenize[0].currentInputWatermark"),
        Some(&i64::MAX),
        "the end of input is the maximal watermark"
    );
}

#[test]
fn timers_on_a_stream_that_is_not_keyed_are_refused_with_a_message() {
    #[derive(Clone)]
    struct Timer;
    impl OneInputOperator<(), u32, u32> for Timer {
        fn process_element(
            &mut self,
            _: u32,
            ctx: &mut OperatorContext<'_, (), u32>,
        ) -> Result<()> {
            ctx.register_event_time_timer(5)
        }
    }
    let env = StreamExecutionEnvironment::new();
    env.from_collection(vec![1u32])
        .transform("Timer", Timer)
        .collect();
    let err = env.execute("timers").unwrap_err().to_string();
    assert!(err.contains("Timer") && err.contains("key_by"), "{err}");
}

#[test]
fn the_plan_as_graphviz_dot() {
    let env = StreamExecutionEnvironment::new();
    env.set_parallelism(2);
    env.from_collection(vec![(1u32, 2i64)])
        .key_by(|(k, _): &(u32, i64)| *k)
        .sum_by_value()
        .uid("totals")
        .collect();
    let dot = env.stream_graph().unwrap().to_dot();
    assert!(dot.starts_with("digraph job {"), "{dot}");
    assert!(
        dot.contains("n0 [label=\"Collection Source\\nparallelism 1\"];"),
        "{dot}"
    );
    assert!(dot.contains("uid totals"), "{dot}");
    assert!(dot.contains("n0 -> n1 [label=\"HASH by u32\"];"), "{dot}");
    assert!(
        dot.contains("n1 -> n2 [label=\"FORWARD, chained\", style=bold];"),
        "{dot}"
    );
    assert!(dot.trim_end().ends_with('}'));
}

/// Helpers the tests use on the API.
trait KeyedExt<T> {
    fn sum_by_value(&self) -> typeinfo_runtime::DataStream<T>;
}

impl KeyedExt<(u32, i64)> for typeinfo_runtime::KeyedStream<u32, (u32, i64)> {
    fn sum_by_value(&self) -> typeinfo_runtime::DataStream<(u32, i64)> {
        self.reduce(|a, b| (a.0, a.1 + b.1))
    }
}

/// Two splits: `a` emits timestamps 0..1000 and then waits, `b` emits one record at 0 and
/// waits; both finish when a window result has reached the sink (or after 10 s).
#[derive(Clone)]
struct TwoSplits {
    fired: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

struct TwoSplitsReader {
    split: u8,
    next: i64,
    fired: std::sync::Arc<std::sync::atomic::AtomicBool>,
    opened: std::time::Instant,
}

impl typeinfo_runtime::SplitReader<i64> for TwoSplitsReader {
    type Position = i64;
    fn read(
        &mut self,
        out: &mut typeinfo_runtime::SourceOutput<'_, i64>,
        budget: usize,
    ) -> Result<typeinfo_runtime::ReadStatus> {
        use typeinfo_runtime::ReadStatus;
        let end = if self.split == 0 { 1000 } else { 1 };
        let mut n = 0;
        while self.next < end && n < budget {
            out.collect_with_timestamp(self.next, self.next);
            self.next += 1;
            n += 1;
        }
        if self.next < end {
            return Ok(ReadStatus::More);
        }
        let done = self.fired.load(std::sync::atomic::Ordering::SeqCst)
            || self.opened.elapsed() > Duration::from_secs(10);
        Ok(if done {
            ReadStatus::Finished
        } else {
            ReadStatus::NothingAvailable
        })
    }
    fn position(&self) -> i64 {
        self.next
    }
    fn seek(&mut self, position: i64) -> Result<()> {
        self.next = position;
        Ok(())
    }
}

impl typeinfo_runtime::Source<i64> for TwoSplits {
    type Split = u8;
    type Reader = TwoSplitsReader;
    fn splits(&self, _: usize) -> Result<Vec<u8>> {
        Ok(vec![0, 1])
    }
    fn reader(&self, split: &u8) -> Result<TwoSplitsReader> {
        Ok(TwoSplitsReader {
            split: *split,
            next: 0,
            fired: std::sync::Arc::clone(&self.fired),
            opened: std::time::Instant::now(),
        })
    }
}

#[test]
fn an_idle_split_stops_holding_back_the_watermark() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let fired = Arc::new(AtomicBool::new(false));
    let env = StreamExecutionEnvironment::new();
    let seen = Arc::clone(&fired);
    let first = Arc::new(std::sync::Mutex::new(None::<(i64, u64)>));
    let first_result = Arc::clone(&first);
    env.from_source(
        TwoSplits {
            fired: Arc::clone(&fired),
        },
        WatermarkStrategy::for_monotonous_timestamps().with_idleness(Duration::from_millis(50)),
        "two splits",
    )
    .map(|t| (0u8, t))
    .key_by(|(k, _): &(u8, i64)| *k)
    .window(typeinfo_runtime::TumblingEventTimeWindows::of(
        Duration::from_millis(100),
    ))
    .aggregate_with(typeinfo_runtime::functions::Count, |_, w, n: u64| {
        (w.start, n)
    })
    .add_sink(move |r: (i64, u64)| {
        first_result.lock().unwrap().get_or_insert(r);
        seen.store(true, Ordering::SeqCst);
    });
    let started = std::time::Instant::now();
    env.execute("idleness").unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "the windows waited for the idle split ({:?})",
        started.elapsed()
    );
    // Split b's record at 0 is in the first window with split a's 0..100.
    assert_eq!(*first.lock().unwrap(), Some((0, 101)));
}

#[derive(Clone)]
struct Route {
    odd: typeinfo_runtime::OutputTag<u64>,
    big: typeinfo_runtime::OutputTag<String>,
}

impl ProcessFunction<u64, u64> for Route {
    fn process_element(&mut self, v: u64, ctx: &mut OperatorContext<'_, (), u64>) -> Result<()> {
        if v % 2 == 0 {
            ctx.collect(v);
        } else {
            ctx.output(&self.odd, v)?;
        }
        if v > 90 {
            ctx.output(&self.big, format!("big {v} at {:?}", ctx.timestamp()))?;
        }
        Ok(())
    }
}

#[test]
fn side_outputs_of_any_type_from_a_process_function() {
    let env = StreamExecutionEnvironment::new();
    env.set_parallelism(2);
    let route = Route {
        odd: typeinfo_runtime::OutputTag::new("odd"),
        big: typeinfo_runtime::OutputTag::new("big"),
    };
    let routed = env
        .from_collection((0..100u64).collect())
        .assign_timestamps_and_watermarks(
            WatermarkStrategy::for_monotonous_timestamps()
                .with_timestamp_assigner(|v: &u64, _| *v as i64),
        )
        .rebalance()
        .process(route.clone());
    let evens = routed.collect();
    let odds = routed.side_output(&route.odd).collect();
    let big = routed.side_output(&route.big).collect();
    let plan = env.explain().unwrap();
    env.execute("side outputs").unwrap();
    let sorted = |mut v: Vec<u64>| {
        v.sort_unstable();
        v
    };
    assert_eq!(
        sorted(evens.take()),
        (0..100).step_by(2).collect::<Vec<_>>()
    );
    assert_eq!(sorted(odds.take()), (1..100).step_by(2).collect::<Vec<_>>());
    let mut big = big.take();
    big.sort();
    let want: Vec<String> = (91..100).map(|v| format!("big {v} at Some({v})")).collect();
    assert_eq!(big, want);
    assert!(plan.contains("(tagged side outputs)"), "{plan}");
}
