//! Batch execution (`RuntimeMode::Batch`): on bounded input without late records, a batch
//! run's output equals a streaming run's (order aside) for every window kind, rolling
//! aggregations (the final value per key) and keyed process functions with event-time
//! timers; a random-input property test checks it; out-of-order input is never late in batch
//! mode; a sort beyond its memory budget spills and gives the same output; windows that
//! reduce or aggregate give the same output by hash aggregation, in memory and spilled, as
//! by the sorted path and in streaming (with the same timestamps); an unbounded source is
//! refused by name.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test (or bench) panics on what it does not expect

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use proptest::prelude::*;
use typeinfo_runtime::{
    AggregateFunction, Boundedness, DataStream, EventTimeSessionWindows, KeyedContext,
    KeyedProcessFunction, OperatorContext, OutputTag, ProcessFunction, ReadStatus, RestartStrategy,
    RuntimeMode, SlidingEventTimeWindows, Source, SourceOutput, SplitReader, StateBackend,
    StreamExecutionEnvironment, TimeDomain, TumblingEventTimeWindows, WatermarkStrategy,
};
use typeinfo_state::{KeyedStateBackend, MapState, MapStateDescriptor};

/// `(key, timestamp, amount)`.
type Event = (u32, i64, i64);

fn sorted<T: Ord>(mut v: Vec<T>) -> Vec<T> {
    v.sort();
    v
}

/// `n` events over `keys` keys with distinct, increasing timestamps.
fn events(n: u64, keys: u64) -> Vec<Event> {
    (0..n)
        .map(|i| {
            (
                (i * 7 % keys) as u32,
                i as i64 * 3 + (i % 2) as i64,
                (i * 13 % 17) as i64 - 8,
            )
        })
        .collect()
}

/// The same events in another order (every third one moved to the end, the rest reversed).
fn shuffled(events: &[Event]) -> Vec<Event> {
    let mut rest: Vec<Event> = events.iter().copied().rev().collect();
    let moved: Vec<Event> = rest.iter().copied().step_by(3).collect();
    let mut i = 0;
    rest.retain(|_| {
        i += 1;
        (i - 1) % 3 != 0
    });
    rest.extend(moved);
    rest
}

#[derive(Debug, Clone, Copy)]
enum Windows {
    Tumbling(i64),
    Sliding(i64, i64),
    Session(i64),
    Count(u64),
    CountSliding(u64, u64),
}

/// The events of `input`, read by one source subtask, with their timestamps and monotonous
/// watermarks after every record (in streaming mode input out of timestamp order is late).
fn timestamped(env: &StreamExecutionEnvironment, input: &[Event]) -> DataStream<Event> {
    env.from_collection(input.to_vec())
        .assign_timestamps_and_watermarks(
            WatermarkStrategy::for_monotonous_timestamps()
                .with_timestamp_assigner(|e: &Event, _| e.1)
                .emit_per_event(),
        )
}

/// `(key, max timestamp, sum)` of every record so far (a rolling reduce) and the record with
/// the largest amount so far (`max_by`), per key.
fn rolling_job(input: &[Event], mode: RuntimeMode, parallelism: u32) -> (Vec<Event>, Vec<Event>) {
    let env = StreamExecutionEnvironment::new();
    env.set_parallelism(parallelism).set_runtime_mode(mode);
    let keyed = env.from_collection(input.to_vec()).key_by(|e: &Event| e.0);
    let sums = keyed
        .reduce(|a, b| (a.0, a.1.max(b.1), a.2 + b.2))
        .collect();
    let max = keyed.max_by(|e: &Event| e.2).collect();
    env.execute("rolling").unwrap();
    (sums.take(), max.take())
}

/// The last record of each key (streaming's final value of a rolling aggregation), by key.
fn last_per_key(records: Vec<Event>) -> Vec<Event> {
    let mut last = std::collections::BTreeMap::new();
    for r in records {
        last.insert(r.0, r);
    }
    last.into_values().collect()
}

/// The output of [`Buckets`] over `input`, sorted.
fn buckets_job(input: &[Event], mode: RuntimeMode, parallelism: u32) -> Vec<Event> {
    let env = StreamExecutionEnvironment::new();
    env.set_parallelism(parallelism).set_runtime_mode(mode);
    let out = timestamped(&env, input)
        .key_by(|e: &Event| e.0)
        .process(Buckets::default())
        .collect();
    env.execute("buckets").unwrap();
    sorted(out.take())
}

/// Runs `(key, max timestamp, sum)` per window of `windows` over `input`: in streaming mode
/// with monotonous watermarks after every record (the input must be in timestamp order, or
/// records are late), or in batch mode.
fn window_job(
    input: &[Event],
    windows: Windows,
    mode: RuntimeMode,
    parallelism: u32,
    backend: StateBackend,
) -> Vec<Event> {
    let env = StreamExecutionEnvironment::new();
    env.set_parallelism(parallelism)
        .set_state_backend(backend)
        .set_runtime_mode(mode);
    let keyed = timestamped(&env, input).key_by(|e: &Event| e.0);
    let reduce = |a: &Event, b: &Event| (a.0, a.1.max(b.1), a.2 + b.2);
    let out: DataStream<Event> = match windows {
        Windows::Tumbling(size) => keyed
            .window(TumblingEventTimeWindows::of_millis(size))
            .reduce(reduce),
        Windows::Sliding(size, slide) => keyed
            .window(SlidingEventTimeWindows::of_millis(size, slide))
            .reduce(reduce),
        Windows::Session(gap) => keyed
            .window(EventTimeSessionWindows::with_gap_millis(gap))
            .reduce(reduce),
        Windows::Count(n) => keyed.count_window(n).reduce(reduce),
        Windows::CountSliding(n, slide) => keyed.count_window_sliding(n, slide).reduce(reduce),
    };
    let out = out.collect();
    env.execute("windows").unwrap();
    sorted(out.take())
}

const ALL_WINDOWS: [Windows; 5] = [
    Windows::Tumbling(100),
    Windows::Sliding(100, 30),
    Windows::Session(5),
    Windows::Count(4),
    Windows::CountSliding(5, 2),
];

#[test]
fn every_window_kind_gives_the_streaming_result() {
    let input = events(3_000, 7);
    let late_free_order = input.clone();
    let scrambled = shuffled(&input);
    for windows in ALL_WINDOWS {
        let want = window_job(
            &late_free_order,
            windows,
            RuntimeMode::Streaming,
            1,
            StateBackend::Heap,
        );
        assert!(!want.is_empty(), "{windows:?}");
        for parallelism in [1, 2] {
            for backend in [StateBackend::Heap, StateBackend::rocksdb()] {
                let got = window_job(
                    &scrambled,
                    windows,
                    RuntimeMode::Batch,
                    parallelism,
                    backend,
                );
                assert_eq!(got, want, "{windows:?} at parallelism {parallelism}");
            }
        }
    }
}

#[test]
fn nothing_is_late_in_batch_mode() {
    // Out of order: in streaming mode with monotonous watermarks after every record most
    // records are late and go to the side output; in batch mode every record lands in its
    // window.
    let input = shuffled(&events(500, 3));
    let run = |mode: RuntimeMode| {
        let env = StreamExecutionEnvironment::new();
        env.set_runtime_mode(mode);
        let late = OutputTag::<Event>::new("late");
        let sums = timestamped(&env, &input)
            .key_by(|e: &Event| e.0)
            .window(TumblingEventTimeWindows::of_millis(50))
            .side_output_late_data(&late)
            .reduce(|a, b| (a.0, a.1.max(b.1), a.2 + b.2));
        let late_records = sums.side_output(&late).collect();
        let sums = sums.collect();
        env.execute("late").unwrap();
        (sums.take(), late_records.take())
    };
    let (streaming, streaming_late) = run(RuntimeMode::Streaming);
    assert!(!streaming_late.is_empty());
    let (batch, batch_late) = run(RuntimeMode::Batch);
    assert!(batch_late.is_empty());
    let total: i64 = input.iter().map(|e| e.2).sum();
    assert_eq!(batch.iter().map(|e| e.2).sum::<i64>(), total);
    assert!(streaming.len() < batch.len());
    let want = window_job(
        &sorted_by_time(&input),
        Windows::Tumbling(50),
        RuntimeMode::Streaming,
        1,
        StateBackend::Heap,
    );
    assert_eq!(sorted(batch), want);
}

fn sorted_by_time(input: &[Event]) -> Vec<Event> {
    let mut v = input.to_vec();
    v.sort_by_key(|e| e.1);
    v
}

#[test]
fn rolling_aggregations_emit_the_final_value_per_key() {
    let input = events(2_000, 9);
    let (streaming_sums, streaming_max) = rolling_job(&input, RuntimeMode::Streaming, 1);
    // Streaming emits per record: the last emission of each key is its final value.
    assert_eq!(streaming_sums.len(), input.len());
    for parallelism in [1, 2] {
        let (sums, max) = rolling_job(&input, RuntimeMode::Batch, parallelism);
        assert_eq!(sorted(sums), last_per_key(streaming_sums.clone()));
        assert_eq!(sorted(max), last_per_key(streaming_max.clone()));
    }
}

/// Sums amounts per key and 100 ms bucket in map state; an event-time timer at each bucket's
/// end emits `(key, bucket end, sum)` and removes the bucket: a result that does not depend
/// on how records and timers interleave, so batch and streaming agree.
#[derive(Clone, Default)]
struct Buckets {
    sums: Option<MapState<(), i64, i64>>,
}

impl KeyedProcessFunction<u32, Event, Event> for Buckets {
    fn open(
        &mut self,
        state: &mut typeinfo_runtime::KeyedBackend<u32>,
    ) -> typeinfo_runtime::Result<()> {
        self.sums = Some(state.map_state(&MapStateDescriptor::new("sums"))?);
        Ok(())
    }

    fn process_element(
        &mut self,
        e: Event,
        ctx: &mut KeyedContext<'_, u32, Event>,
    ) -> typeinfo_runtime::Result<()> {
        let sums = self.sums.as_ref().unwrap();
        let end = e.1 - e.1.rem_euclid(100) + 99;
        let sum = sums.get(ctx.state(), &(), &end)?.unwrap_or(0);
        sums.put(ctx.state(), &(), end, sum + e.2)?;
        ctx.register_event_time_timer(end);
        Ok(())
    }

    fn on_timer(
        &mut self,
        time: i64,
        domain: TimeDomain,
        ctx: &mut KeyedContext<'_, u32, Event>,
    ) -> typeinfo_runtime::Result<()> {
        assert_eq!(domain, TimeDomain::EventTime);
        let sums = self.sums.as_ref().unwrap();
        if let Some(sum) = sums.get(ctx.state(), &(), &time)? {
            sums.remove(ctx.state(), &(), &time)?;
            let key = *ctx.key();
            ctx.collect((key, time, sum));
        }
        Ok(())
    }
}

#[test]
fn keyed_process_functions_with_event_time_timers_agree() {
    let input = events(2_500, 6);
    let want = buckets_job(&input, RuntimeMode::Streaming, 1);
    assert!(want.len() > 100);
    for parallelism in [1, 2] {
        assert_eq!(
            buckets_job(&shuffled(&input), RuntimeMode::Batch, parallelism),
            want
        );
    }
}

/// Counts a key's records in value state; a processing-time timer an hour ahead, set at the
/// key's first record, reports the count on a side output and the main output gets every
/// record's running count.
#[derive(Clone, Default)]
struct CountAtTheEnd {
    count: Option<typeinfo_state::ValueState<(), i64>>,
}

const COUNTS: &str = "counts";

impl KeyedProcessFunction<u32, Event, i64> for CountAtTheEnd {
    fn open(
        &mut self,
        state: &mut typeinfo_runtime::KeyedBackend<u32>,
    ) -> typeinfo_runtime::Result<()> {
        self.count = Some(state.value_state(&typeinfo_state::ValueStateDescriptor::new("count"))?);
        Ok(())
    }

    fn process_element(
        &mut self,
        _e: Event,
        ctx: &mut KeyedContext<'_, u32, i64>,
    ) -> typeinfo_runtime::Result<()> {
        let count = self.count.as_ref().unwrap();
        let n = count.value(ctx.state(), &())?.unwrap_or(0) + 1;
        count.update(ctx.state(), &(), n)?;
        if n == 1 {
            let later = ctx.current_processing_time() + 3_600_000;
            ctx.register_processing_time_timer(later);
        }
        ctx.collect(n);
        Ok(())
    }

    fn on_timer(
        &mut self,
        _time: i64,
        domain: TimeDomain,
        ctx: &mut KeyedContext<'_, u32, i64>,
    ) -> typeinfo_runtime::Result<()> {
        assert_eq!(domain, TimeDomain::ProcessingTime);
        let n = self
            .count
            .as_ref()
            .unwrap()
            .value(ctx.state(), &())?
            .unwrap_or(0);
        let key = *ctx.key();
        ctx.output(&OutputTag::<(u32, i64)>::new(COUNTS), (key, n))
    }
}

#[test]
fn processing_time_timers_fire_at_the_end_of_each_key_and_side_outputs_work() {
    let input = shuffled(&events(3_000, 11));
    let env = StreamExecutionEnvironment::new();
    env.set_parallelism(2).set_runtime_mode(RuntimeMode::Batch);
    let running = env
        .from_collection(input.clone())
        .key_by(|e: &Event| e.0)
        .process(CountAtTheEnd::default());
    let counts = running
        .side_output(&OutputTag::<(u32, i64)>::new(COUNTS))
        .collect();
    let running = running.collect();
    let started = std::time::Instant::now();
    env.execute("counts").unwrap();
    // The timers are an hour ahead in processing time: they fired at each key's end, not by
    // the clock (and the job did not wait for them).
    assert!(started.elapsed() < std::time::Duration::from_secs(600));
    let mut want = std::collections::BTreeMap::new();
    for e in &input {
        *want.entry(e.0).or_insert(0i64) += 1;
    }
    assert_eq!(
        sorted(counts.take()),
        want.clone().into_iter().collect::<Vec<_>>()
    );
    // Each key's records in turn: its running counts are 1..=n.
    let mut all: Vec<i64> = want.values().flat_map(|&n| 1..=n).collect();
    all.sort();
    assert_eq!(sorted(running.take()), all);
}

#[test]
fn a_sort_beyond_its_memory_budget_spills_and_gives_the_same_output() {
    let input = shuffled(&events(60_000, 1_000));
    let run = |budget: usize| {
        let env = StreamExecutionEnvironment::new();
        env.set_runtime_mode(RuntimeMode::Batch)
            .set_batch_sort_memory(budget);
        let out = timestamped(&env, &input)
            .key_by(|e: &Event| e.0)
            .window(TumblingEventTimeWindows::of_millis(1_000))
            .reduce(|a, b| (a.0, a.1.max(b.1), a.2 + b.2))
            .name("sums")
            .collect();
        let result = env.execute("spill").unwrap();
        (sorted(out.take()), result.metric("sums.numSpilledRuns"))
    };
    let (in_memory, no_runs) = run(64 << 20);
    assert_eq!(no_runs, 0);
    let (spilled, runs) = run(256 << 10);
    assert!(runs >= 4, "{runs} runs");
    assert_eq!(spilled, in_memory);
}

/// How [`FailingBuckets`] fails, once.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Failure {
    Error,
    Panic,
}

/// [`Buckets`] that fails at the 2000th record one subtask processes, the first time only
/// (the failure is shared by every subtask and every rerun).
#[derive(Clone, Default)]
struct FailingBuckets {
    inner: Buckets,
    seen: u64,
    failure: Arc<Mutex<Option<Failure>>>,
}

impl KeyedProcessFunction<u32, Event, Event> for FailingBuckets {
    fn open(
        &mut self,
        state: &mut typeinfo_runtime::KeyedBackend<u32>,
    ) -> typeinfo_runtime::Result<()> {
        self.inner.open(state)
    }

    fn process_element(
        &mut self,
        e: Event,
        ctx: &mut KeyedContext<'_, u32, Event>,
    ) -> typeinfo_runtime::Result<()> {
        self.seen += 1;
        if self.seen == 2_000 {
            let failure = self.failure.lock().unwrap().take();
            match failure {
                Some(Failure::Error) => {
                    return Err(typeinfo_runtime::Error::function("injected failure"))
                }
                Some(Failure::Panic) => panic!("injected panic"),
                None => {}
            }
        }
        self.inner.process_element(e, ctx)
    }

    fn on_timer(
        &mut self,
        time: i64,
        domain: TimeDomain,
        ctx: &mut KeyedContext<'_, u32, Event>,
    ) -> typeinfo_runtime::Result<()> {
        self.inner.on_timer(time, domain, ctx)
    }
}

/// Runs [`FailingBuckets`] in batch mode; returns its sorted output, the records that went
/// through the operator before the sort (the sources' work), and the job's result.
fn failing_buckets_job(
    input: &[Event],
    failure: Failure,
    parallelism: u32,
    budget: usize,
    restarts: RestartStrategy,
) -> typeinfo_runtime::Result<(Vec<Event>, usize, typeinfo_runtime::JobResult)> {
    let env = StreamExecutionEnvironment::new();
    env.set_parallelism(parallelism)
        .set_runtime_mode(RuntimeMode::Batch)
        .set_batch_sort_memory(budget)
        .set_restart_strategy(restarts);
    let mapped = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&mapped);
    let out = timestamped(&env, input)
        .map(move |e: Event| {
            count.fetch_add(1, Ordering::Relaxed);
            e
        })
        .key_by(|e: &Event| e.0)
        .process(FailingBuckets {
            failure: Arc::new(Mutex::new(Some(failure))),
            ..FailingBuckets::default()
        })
        .collect();
    let result = env.execute("failing buckets")?;
    Ok((sorted(out.take()), mapped.load(Ordering::Relaxed), result))
}

/// A keyed function that fails (an error, or a panic) in batch mode reruns its stage alone:
/// the sources and the map before the sort ran once, the stage restarted once, and the
/// output (held until the stage completed) equals the failure-free run's, nothing twice;
/// in memory, and with the sorted input and the held output spilled to disk.
#[test]
fn a_failed_stage_reruns_alone_from_its_sorted_input() {
    let input = events(12_000, 40);
    let want = buckets_job(&input, RuntimeMode::Streaming, 1);
    let input = shuffled(&input);
    let restarts = RestartStrategy::FixedDelay {
        attempts: 1,
        delay: std::time::Duration::from_millis(10),
    };
    for (failure, parallelism, budget) in [
        (Failure::Error, 1, 64 << 20),
        (Failure::Panic, 2, 64 << 20),
        (Failure::Error, 2, 64 << 10),
    ] {
        let what = format!("{failure:?} at p{parallelism}, budget {budget}");
        let (out, mapped, result) =
            failing_buckets_job(&input, failure, parallelism, budget, restarts.clone()).unwrap();
        assert_eq!(out, want, "{what}");
        assert_eq!(mapped, input.len(), "{what}: the sources ran once");
        assert_eq!(result.metric("job.numStageRestarts"), 1, "{what}");
        assert_eq!(result.metric("job.numRestarts"), 0, "{what}");
        if budget < 1 << 20 {
            assert!(result.metric("Keyed Process.numSpilledRuns") > 0, "{what}");
        }
    }
}

/// Without a restart strategy a failing stage fails the job with the function's error.
#[test]
fn a_failed_stage_without_attempts_left_fails_the_job() {
    let input = shuffled(&events(6_000, 10));
    let err = failing_buckets_job(&input, Failure::Error, 1, 64 << 20, RestartStrategy::None)
        .map(|_| ())
        .unwrap_err();
    assert!(err.to_string().contains("injected failure"), "{err}");
}

/// A source that never says it is bounded.
#[derive(Clone)]
struct Ticks;

struct TickReader;

impl SplitReader<u64> for TickReader {
    type Position = u64;
    fn read(
        &mut self,
        _out: &mut SourceOutput<'_, u64>,
        _budget: usize,
    ) -> typeinfo_runtime::Result<ReadStatus> {
        Ok(ReadStatus::Finished)
    }
    fn position(&self) -> u64 {
        0
    }
    fn seek(&mut self, _position: u64) -> typeinfo_runtime::Result<()> {
        Ok(())
    }
}

impl Source<u64> for Ticks {
    type Split = ();
    type Reader = TickReader;
    fn splits(&self, _parallelism: usize) -> typeinfo_runtime::Result<Vec<()>> {
        Ok(vec![()])
    }
    fn reader(&self, _split: &()) -> typeinfo_runtime::Result<TickReader> {
        Ok(TickReader)
    }
}

#[test]
fn batch_mode_refuses_an_unbounded_source_by_name_and_automatic_picks_streaming() {
    let env = StreamExecutionEnvironment::new();
    env.set_runtime_mode(RuntimeMode::Batch);
    let _ = env
        .from_source(Ticks, WatermarkStrategy::no_watermarks(), "ticks")
        .key_by(|t: &u64| *t)
        .sum()
        .collect();
    let err = env.execute("refused").unwrap_err().to_string();
    assert!(
        err.contains("source `ticks`") && err.contains("unbounded"),
        "{err}"
    );

    env.set_runtime_mode(RuntimeMode::Automatic);
    assert!(!env.stream_graph().unwrap().is_batch());
    env.execute("automatic streaming").unwrap();

    let bounded = StreamExecutionEnvironment::new();
    bounded.set_runtime_mode(RuntimeMode::Automatic);
    let _ = bounded
        .from_sequence(1, 10)
        .key_by(|v: &i64| v % 2)
        .sum()
        .collect();
    let graph = bounded.stream_graph().unwrap();
    assert!(graph.is_batch());
    assert!(graph.explain().contains("batch mode"));
    assert_eq!(Ticks.boundedness(), Boundedness::ContinuousUnbounded);
}

#[test]
fn batch_mode_refuses_a_restore_and_ignores_checkpointing() {
    let dir = tempfile::tempdir().unwrap();
    let env = StreamExecutionEnvironment::new();
    env.set_runtime_mode(RuntimeMode::Batch)
        .enable_checkpointing(typeinfo_runtime::CheckpointConfig::new(
            dir.path(),
            std::time::Duration::from_millis(1),
        ));
    let out = env
        .from_sequence(1, 1_000)
        .key_by(|v: &i64| v % 3)
        .sum()
        .collect();
    env.execute("no checkpoints").unwrap();
    let want = sorted(
        (0..3)
            .map(|r| (1..=1_000i64).filter(|v| v % 3 == r).sum::<i64>())
            .collect(),
    );
    assert_eq!(sorted(out.take()), want);
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "no checkpoint written"
    );

    env.restore_from(typeinfo_runtime::RestoreSettings {
        path: dir.path().to_owned(),
        allow_non_restored_state: false,
    });
    let err = env.execute("restore").unwrap_err().to_string();
    assert!(err.contains("BATCH") && err.contains("restore"), "{err}");
}

/// Events of `(key, gap, amount)`: each `gap + 1` ms after the one before.
fn increasing(raw: &[(u32, i64, i64)]) -> Vec<Event> {
    let mut ts = 0;
    raw.iter()
        .map(|&(k, gap, amount)| {
            ts += gap + 1;
            (k, ts, amount)
        })
        .collect()
}

/// `(count, sum)` of the amounts, with a real `merge`.
struct CountSum;

impl AggregateFunction<Event, (i64, i64), (i64, i64)> for CountSum {
    fn create_accumulator(&self) -> (i64, i64) {
        (0, 0)
    }
    fn add(&self, e: &Event, acc: &mut (i64, i64)) {
        acc.0 += 1;
        acc.1 += e.2;
    }
    fn get_result(&self, acc: &(i64, i64)) -> (i64, i64) {
        *acc
    }
    fn merge(&self, a: (i64, i64), b: (i64, i64)) -> (i64, i64) {
        (a.0 + b.0, a.1 + b.1)
    }
}

/// A window result: `(which function, key, three values, timestamp)`.
type Stamped = (u8, u32, i64, i64, i64, i64);

/// Adds each record's timestamp to it.
#[derive(Clone)]
struct Stamp;

impl ProcessFunction<(u8, u32, i64, i64, i64), Stamped> for Stamp {
    fn process_element(
        &mut self,
        v: (u8, u32, i64, i64, i64),
        ctx: &mut OperatorContext<'_, (), Stamped>,
    ) -> typeinfo_runtime::Result<()> {
        let ts = ctx.timestamp().unwrap_or(i64::MIN);
        ctx.collect((v.0, v.1, v.2, v.3, v.4, ts));
        Ok(())
    }
}

/// How a run of [`aggregations_job`] aggregates its windows.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Path {
    Streaming,
    /// Batch mode's sorted input (hash aggregation off).
    Sorted,
    /// Batch mode's hash aggregation with this memory budget.
    Hash(usize),
}

/// Every windowed aggregation batch mode may run by hash: `reduce`, `aggregate`,
/// `aggregate_with` (key and window in the result) on keyed windows of `windows`, and a
/// `reduce` over all records (`window_all`), each result with its timestamp; and the windows'
/// spilled runs. Batch runs read `input` shuffled.
fn aggregations_job(
    input: &[Event],
    windows: Windows,
    path: Path,
    parallelism: u32,
) -> (Vec<Stamped>, u64) {
    let env = StreamExecutionEnvironment::new();
    env.set_parallelism(parallelism);
    let input = match path {
        Path::Streaming => input.to_vec(),
        Path::Sorted | Path::Hash(_) => {
            env.set_runtime_mode(RuntimeMode::Batch)
                .set_batch_hash_aggregation(path != Path::Sorted);
            shuffled(input)
        }
    };
    if let Path::Hash(budget) = path {
        env.set_batch_sort_memory(budget);
    }
    let stream = timestamped(&env, &input);
    let keyed = stream.key_by(|e: &Event| e.0);
    let reduce = |a: &Event, b: &Event| (a.0, a.1.max(b.1), a.2 + b.2);
    let assigner = match windows {
        Windows::Tumbling(size) => TumblingEventTimeWindows::of_millis(size),
        Windows::Sliding(size, slide) => SlidingEventTimeWindows::of_millis(size, slide),
        other => panic!("{other:?} is not aggregated by hash"),
    };
    let reduced = keyed
        .window(assigner)
        .reduce(reduce)
        .name("reduced")
        .map(|e| (0u8, e.0, e.1, e.2, 0));
    let aggregated = keyed
        .window(assigner)
        .aggregate(CountSum)
        .map(|(count, sum)| (1u8, 0, count, sum, 0));
    let with_window = keyed
        .window(assigner)
        .aggregate_with(CountSum, |k: &u32, w, (count, sum): (i64, i64)| {
            (2u8, *k, w.start, count, sum)
        });
    let all = stream
        .window_all(assigner)
        .reduce(reduce)
        .map(|e| (3u8, 0, e.1, e.2, 0));
    let out = reduced
        .union(&[aggregated, with_window, all])
        .process(Stamp)
        .collect();
    let result = env.execute("aggregations").unwrap();
    (sorted(out.take()), result.metric("reduced.numSpilledRuns"))
}

#[test]
fn hash_aggregation_spilled_and_in_memory_equals_the_sorted_path_and_streaming() {
    let input = events(40_000, 2_000);
    for windows in [Windows::Tumbling(1_000), Windows::Sliding(1_000, 300)] {
        let (want, _) = aggregations_job(&input, windows, Path::Streaming, 1);
        assert!(want.len() > 4_000, "{windows:?}: {} results", want.len());
        let (sorted_path, _) = aggregations_job(&input, windows, Path::Sorted, 2);
        assert_eq!(sorted_path, want, "{windows:?}: sorted path");
        let (in_memory, runs) = aggregations_job(&input, windows, Path::Hash(64 << 20), 2);
        assert_eq!(runs, 0, "{windows:?}: nothing spilled");
        assert_eq!(in_memory, want, "{windows:?}: hash aggregation in memory");
        // The smallest budget: the tables spill at every growth, the runs go to disk.
        let (spilled, runs) = aggregations_job(&input, windows, Path::Hash(64 << 10), 1);
        assert!(runs >= 2, "{windows:?}: {runs} runs");
        assert_eq!(spilled, want, "{windows:?}: hash aggregation spilled");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Random keys, gaps and amounts through every windowed aggregation: hash aggregation
    /// (with room, and with the smallest budget, which spills at every table growth) and the
    /// sorted path at parallelism 1 or 2 give the streaming run's results and timestamps.
    #[test]
    fn hash_aggregation_gives_the_streaming_result(
        raw in prop::collection::vec((0u32..6, 0i64..40, -50i64..50), 1..300),
        sliding in any::<bool>(),
        parallelism in 1u32..3,
    ) {
        let input = increasing(&raw);
        let windows = if sliding { Windows::Sliding(100, 30) } else { Windows::Tumbling(100) };
        let (want, _) = aggregations_job(&input, windows, Path::Streaming, 1);
        for path in [Path::Hash(64 << 20), Path::Hash(64 << 10), Path::Sorted] {
            let (got, _) = aggregations_job(&input, windows, path, parallelism);
            prop_assert_eq!(&got, &want, "{:?}", path);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Random keys, gaps and amounts; the streaming run reads them in timestamp order (nothing
    /// late), the batch run in a scrambled order, at parallelism 1 or 2: windows of a random
    /// kind, a rolling aggregation and a keyed process function with event-time timers.
    #[test]
    fn random_inputs_give_the_streaming_result(
        raw in prop::collection::vec((0u32..6, 0i64..40, -50i64..50), 1..400),
        kind in 0usize..5,
        parallelism in 1u32..3,
    ) {
        let input = increasing(&raw);
        let windows = ALL_WINDOWS[kind];
        let want = window_job(&input, windows, RuntimeMode::Streaming, 1, StateBackend::Heap);
        let got = window_job(&shuffled(&input), windows, RuntimeMode::Batch, parallelism, StateBackend::Heap);
        prop_assert_eq!(got, want);

        // A rolling aggregation: batch emits the last value streaming emitted for each key.
        let (batch, _) = rolling_job(&shuffled(&input), RuntimeMode::Batch, parallelism);
        let (streaming, _) = rolling_job(&input, RuntimeMode::Streaming, 1);
        prop_assert_eq!(sorted(batch), last_per_key(streaming));

        // A keyed process function with event-time timers.
        prop_assert_eq!(
            buckets_job(&shuffled(&input), RuntimeMode::Batch, parallelism),
            buckets_job(&input, RuntimeMode::Streaming, 1)
        );
    }
}
