//! The DataStream API end to end: the stream graph a job becomes, operators and partitioners
//! at parallelism 2, keyed process functions with state and timers on both backends, window
//! functions, processing-time windows, and the errors a user meets.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test (or bench) panics on what it does not expect

use std::collections::BTreeMap;
use std::time::Duration;

use typeinfo::{SerializerConfig, TypeInfo};
use typeinfo_runtime::functions::{Count, CountAndSum};
use typeinfo_runtime::{
    DataStream, Error, EventTimeSessionWindows, KeyedBackend, KeyedContext, KeyedProcessFunction,
    PartitionerKind, SlidingEventTimeWindows, StateBackend, StreamExecutionEnvironment, TimeDomain,
    TumblingEventTimeWindows, TumblingProcessingTimeWindows, WatermarkStrategy,
};
use typeinfo_state::{ValueState, ValueStateDescriptor};

#[derive(TypeInfo, Clone, Debug, PartialEq)]
struct Reading {
    sensor: String,
    ts: i64,
    value: i64,
}

fn reading(sensor: &str, ts: i64, value: i64) -> Reading {
    Reading {
        sensor: sensor.into(),
        ts,
        value,
    }
}

fn readings() -> Vec<Reading> {
    vec![
        reading("a", 1, 10),
        reading("b", 2, 20),
        reading("a", 4, 1),
        reading("a", 12, 5),
        reading("b", 15, 7),
        reading("c", 21, 3),
        reading("a", 9, 100), // late for [0, 10) after a's 12 and b's 15 with no lateness
    ]
}

/// The readings with timestamps and per-event watermarks, assigned by one subtask (so the
/// watermark sequence is that of the collection's order).
fn timestamped(env: &StreamExecutionEnvironment, out_of_orderness: i64) -> DataStream<Reading> {
    env.from_collection(readings())
        .assign_timestamps_and_watermarks(
            WatermarkStrategy::for_bounded_out_of_orderness_millis(out_of_orderness)
                .with_timestamp_assigner(|r: &Reading, _| r.ts)
                .emit_per_event(),
        )
        .set_parallelism(1)
}

fn sorted<T: Ord>(mut v: Vec<T>) -> Vec<T> {
    v.sort();
    v
}

fn backends() -> [StateBackend; 2] {
    [StateBackend::Heap, StateBackend::rocksdb()]
}

#[test]
fn key_by_is_a_hash_edge_not_an_operator_and_the_plan_reads_well() -> typeinfo_runtime::Result<()> {
    let env = StreamExecutionEnvironment::new();
    env.set_parallelism(2);
    timestamped(&env, 0)
        .key_by(|r: &Reading| r.sensor.clone())
        .window(TumblingEventTimeWindows::of(Duration::from_millis(10)))
        .aggregate(Count)
        .uid("counts")
        .print();
    let graph = env.stream_graph()?;
    let names: Vec<&str> = graph.nodes().iter().map(|n| n.name()).collect();
    assert_eq!(
        names,
        [
            "Collection Source",
            "Timestamps/Watermarks",
            "Window",
            "Print to Std. Out"
        ]
    );
    assert_eq!(
        graph.nodes()[0].parallelism(),
        1,
        "a collection is read by one subtask"
    );
    assert_eq!(graph.nodes()[2].parallelism(), 2);
    assert_eq!(graph.nodes()[2].uid(), Some("counts"));
    let kinds: Vec<(usize, usize, PartitionerKind)> = graph
        .edges()
        .iter()
        .map(|e| (e.source(), e.target(), e.partitioner()))
        .collect();
    assert_eq!(
        kinds,
        [
            (0, 1, PartitionerKind::Forward),
            (1, 2, PartitionerKind::Hash),
            (2, 3, PartitionerKind::Forward)
        ]
    );
    assert_eq!(graph.edges()[1].key_type(), Some("alloc::string::String"));
    let plan = graph.explain();
    assert!(
        plan.contains("[2] Window (parallelism 2, uid \"counts\")"),
        "{plan}"
    );
    assert!(
        plan.contains("TumblingEventTimeWindows(10 ms, offset 0 ms)"),
        "{plan}"
    );
    assert!(
        plan.contains("input: [1] --HASH by alloc::string::String-->"),
        "{plan}"
    );
    Ok(())
}

#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
struct Legacy {
    id: u64,
}
typeinfo::generic_type!(Legacy, name = "com.example.Legacy");

#[test]
fn a_disabled_generic_type_fails_when_the_graph_is_built_and_names_the_type() {
    let env = StreamExecutionEnvironment::new();
    env.set_serializer_config(SerializerConfig::default().disable_generic_types());
    env.from_sequence(1, 3)
        .map(|id| Legacy { id: id as u64 })
        .name("To legacy")
        .add_sink(|_| {});
    let err = env.stream_graph().unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, Error::Type { .. }), "{err:?}");
    assert!(
        text.contains("To legacy") && text.contains("Legacy") && text.contains("disabled"),
        "{text}"
    );
    assert!(env.execute("refused").is_err(), "nothing runs");
}

#[test]
fn map_filter_flat_map_union_and_partitioners_at_parallelism_two() -> typeinfo_runtime::Result<()> {
    let env = StreamExecutionEnvironment::new();
    env.set_parallelism(2);
    let numbers = env.from_sequence(1, 100);
    let evens = numbers.filter(|n| n % 2 == 0).map(|n| n * 10);
    let odds = numbers.filter(|n| n % 2 == 1).flat_map(|n| vec![n, -n]);
    let all = evens.union(&[odds]).rebalance().map(|n| n + 1).collect();
    let broadcast = env
        .from_collection(vec![7_i64, 8])
        .broadcast()
        .map(|n| n * 2)
        .collect();
    env.execute("partitioners")?;
    let mut expected: Vec<i64> = (1..=100)
        .filter(|n| n % 2 == 0)
        .map(|n| n * 10 + 1)
        .collect();
    expected.extend(
        (1..=100)
            .filter(|n| n % 2 == 1)
            .flat_map(|n| [n + 1, -n + 1]),
    );
    assert_eq!(sorted(all.take()), sorted(expected));
    assert_eq!(
        sorted(broadcast.take()),
        [14, 14, 16, 16],
        "every subtask gets every broadcast record"
    );
    Ok(())
}

/// Sums values per sensor and emits the sum 5 ms (event time) after the sensor's first reading.
#[derive(Clone)]
struct DelayedSum {
    sum: Option<ValueState<(), i64>>,
}

impl KeyedProcessFunction<String, Reading, String> for DelayedSum {
    fn open(&mut self, state: &mut KeyedBackend<String>) -> typeinfo_runtime::Result<()> {
        use typeinfo_state::KeyedStateBackend;
        self.sum = Some(state.value_state(&ValueStateDescriptor::new("sum"))?);
        Ok(())
    }

    fn process_element(
        &mut self,
        r: Reading,
        ctx: &mut KeyedContext<'_, String, String>,
    ) -> typeinfo_runtime::Result<()> {
        let sum = self.sum.as_ref().expect("opened");
        let before = sum.value(ctx.state(), &())?;
        if before.is_none() {
            ctx.register_event_time_timer(r.ts + 5);
        }
        sum.update(ctx.state(), &(), before.unwrap_or(0) + r.value)?;
        Ok(())
    }

    fn on_timer(
        &mut self,
        ts: i64,
        domain: TimeDomain,
        ctx: &mut KeyedContext<'_, String, String>,
    ) -> typeinfo_runtime::Result<()> {
        let sum = self.sum.as_ref().expect("opened");
        let total = sum.value(ctx.state(), &())?.unwrap_or(0);
        sum.clear(ctx.state(), &())?;
        let line = format!(
            "{} {ts} {domain:?} {total} wm={}",
            ctx.key(),
            ctx.current_watermark()
        );
        ctx.collect(line);
        Ok(())
    }
}

#[test]
fn keyed_process_function_with_state_and_event_time_timers_on_both_backends(
) -> typeinfo_runtime::Result<()> {
    for backend in backends() {
        let env = StreamExecutionEnvironment::new();
        env.set_parallelism(2).set_state_backend(backend.clone());
        let out = timestamped(&env, 0)
            .key_by(|r: &Reading| r.sensor.clone())
            .process(DelayedSum { sum: None })
            .collect();
        env.execute("delayed sums")?;
        // Watermark after each reading = max timestamp - 1. a: 1 -> timer 6, fired by the
        // watermark 11 (after a's 12, which is already summed) with 10 + 1 + 5; b: 2 -> timer 7,
        // fired by the same watermark with 20; b: 15 -> timer 20, fired by watermark 20 (after
        // c's 21) with 7; a: 9 arrives after a's state was cleared -> timer 14, already past,
        // fires at the next advance (the end of input) with 100; c: 21 -> timer 26 at the end.
        let expected = [
            "a 14 EventTime 100 wm=9223372036854775807",
            "a 6 EventTime 16 wm=11",
            "b 20 EventTime 7 wm=20",
            "b 7 EventTime 20 wm=11",
            "c 26 EventTime 3 wm=9223372036854775807",
        ];
        assert_eq!(sorted(out.take()), expected, "{backend:?}");
    }
    Ok(())
}

#[test]
fn reduce_process_and_aggregate_agree_on_sliding_and_session_windows(
) -> typeinfo_runtime::Result<()> {
    for backend in backends() {
        for assigner in [
            SlidingEventTimeWindows::of_millis(10, 5),
            EventTimeSessionWindows::with_gap_millis(4),
        ] {
            let env = StreamExecutionEnvironment::new();
            env.set_parallelism(2).set_state_backend(backend.clone());
            let windows = timestamped(&env, 3)
                .key_by(|r: &Reading| r.sensor.clone())
                .window(assigner)
                .allowed_lateness_millis(100);
            let reduced = windows
                .reduce(|a, b| Reading {
                    sensor: a.sensor.clone(),
                    ts: a.ts.max(b.ts),
                    value: a.value + b.value,
                })
                .map(|r: Reading| (r.sensor, r.value))
                .collect();
            let processed = windows
                .apply(
                    |key: &String,
                     w,
                     records: Vec<Reading>,
                     out: &mut Vec<(String, i64, i64, i64)>| {
                        out.push((
                            key.clone(),
                            w.start,
                            w.end,
                            records.iter().map(|r| r.value).sum(),
                        ));
                    },
                )
                .collect();
            let aggregated = windows
                .aggregate_with(
                    CountAndSum(|r: &Reading| r.value),
                    |key: &String, w, (_, sum): (u64, i64)| (key.clone(), w.start, w.end, sum),
                )
                .collect();
            env.execute("three window functions")?;
            let processed = sorted(processed.take());
            assert_eq!(
                processed,
                sorted(aggregated.take()),
                "{assigner} {backend:?}"
            );
            let mut from_process: Vec<(String, i64)> =
                processed.into_iter().map(|(k, _, _, s)| (k, s)).collect();
            from_process.sort();
            assert_eq!(
                sorted(reduced.take()),
                from_process,
                "{assigner} {backend:?}"
            );
            assert!(!from_process.is_empty());
        }
    }
    Ok(())
}

#[test]
fn late_records_are_dropped_and_counted_without_a_side_output() -> typeinfo_runtime::Result<()> {
    let env = StreamExecutionEnvironment::new();
    let counts = timestamped(&env, 0)
        .key_by(|r: &Reading| r.sensor.clone())
        .window(TumblingEventTimeWindows::of_millis(10))
        .aggregate_with(Count, |k: &String, w, n: u64| {
            format!("{k} {} {n}", w.start)
        })
        .name("Counts")
        .collect();
    let result = env.execute("late")?;
    assert_eq!(
        sorted(counts.take()),
        ["a 0 2", "a 10 1", "b 0 1", "b 10 1", "c 20 1"]
    );
    assert_eq!(
        result.metric("Counts.numLateRecordsDropped"),
        1,
        "a's reading at 9 came after watermark 20"
    );
    Ok(())
}

#[test]
fn processing_time_windows_fire_at_the_end_of_a_bounded_input() -> typeinfo_runtime::Result<()> {
    let env = StreamExecutionEnvironment::new();
    let counts = env
        .from_collection(readings())
        .key_by(|r: &Reading| r.sensor.clone())
        .window(TumblingProcessingTimeWindows::of(Duration::from_secs(3600)))
        .aggregate_with(Count, |k: &String, _, n: u64| (k.clone(), n))
        .collect();
    env.execute("processing time")?;
    let total: BTreeMap<String, u64> =
        counts
            .take()
            .into_iter()
            .fold(BTreeMap::new(), |mut m, (k, n)| {
                *m.entry(k).or_default() += n;
                m
            });
    assert_eq!(
        total,
        BTreeMap::from([("a".into(), 4), ("b".into(), 2), ("c".into(), 1)])
    );
    Ok(())
}

#[test]
fn event_time_windows_without_timestamps_fail_with_a_hint() {
    let env = StreamExecutionEnvironment::new();
    env.from_collection(readings())
        .key_by(|r: &Reading| r.sensor.clone())
        .window(TumblingEventTimeWindows::of_millis(10))
        .aggregate(Count)
        .name("Untimed")
        .add_sink(|_| {});
    let err = env.execute("no timestamps").unwrap_err();
    assert!(
        matches!(&err, Error::MissingTimestamp { operator } if operator == "Untimed"),
        "{err:?}"
    );
    assert!(
        err.to_string().contains("assign_timestamps_and_watermarks"),
        "{err}"
    );
}

#[test]
fn a_panicking_user_function_fails_the_job_with_the_operator_name() {
    let env = StreamExecutionEnvironment::new();
    env.set_parallelism(2);
    env.from_sequence(1, 1000)
        .map(|n| {
            if n == 777 {
                panic!("bad record {n}")
            } else {
                n
            }
        })
        .name("Fragile")
        .add_sink(|_| {});
    let err = env.execute("panics").unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, Error::Function { .. }), "{err:?}");
    assert!(
        text.contains("Fragile") && text.contains("bad record 777"),
        "{text}"
    );
}

#[test]
fn invalid_windows_and_parallelism_are_refused_before_anything_runs() {
    let env = StreamExecutionEnvironment::new();
    timestamped(&env, 0)
        .key_by(|r: &Reading| r.sensor.clone())
        .window(TumblingEventTimeWindows::with_offset_millis(10, 10))
        .aggregate(Count)
        .add_sink(|_| {});
    let err = env.stream_graph().unwrap_err();
    assert!(
        matches!(err, Error::Config(_)) && err.to_string().contains("|offset| < size"),
        "{err}"
    );

    let env = StreamExecutionEnvironment::new();
    env.set_max_parallelism(4);
    env.from_sequence(1, 2).set_parallelism(8).add_sink(|_| {});
    let err = env.stream_graph().unwrap_err();
    assert!(err.to_string().contains("parallelism 8"), "{err}");
}

#[test]
fn a_missing_file_fails_the_job_naming_the_path() {
    let env = StreamExecutionEnvironment::new();
    env.read_text_file("/nonexistent/typeinfo/input.txt")
        .add_sink(|_| {});
    let err = env.execute("missing").unwrap_err();
    assert!(
        matches!(&err, Error::Io { path, .. } if path.ends_with("input.txt")),
        "{err:?}"
    );
}

#[test]
fn text_files_are_published_complete_per_subtask() -> typeinfo_runtime::Result<()> {
    let dir = tempfile::tempdir().expect("temp dir");
    let env = StreamExecutionEnvironment::new();
    env.set_parallelism(2);
    env.from_sequence(1, 10).write_as_text(dir.path());
    env.execute("files")?;
    let mut files: Vec<String> = std::fs::read_dir(dir.path())
        .expect("dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert_eq!(
        files,
        ["part-0-0", "part-1-0"],
        "no in-progress or pending file is left"
    );
    let mut lines: Vec<i64> = files
        .iter()
        .flat_map(|f| {
            std::fs::read_to_string(dir.path().join(f))
                .expect("read")
                .lines()
                .map(|l| l.parse().expect("number"))
                .collect::<Vec<_>>()
        })
        .collect();
    lines.sort();
    assert_eq!(lines, (1..=10).collect::<Vec<_>>());
    Ok(())
}

/// Counts readings per sensor and reports the count from a processing-time timer.
#[derive(Clone)]
struct CountLater {
    count: Option<ValueState<(), u64>>,
}

impl KeyedProcessFunction<String, Reading, String> for CountLater {
    fn open(&mut self, state: &mut KeyedBackend<String>) -> typeinfo_runtime::Result<()> {
        use typeinfo_state::KeyedStateBackend;
        self.count = Some(state.value_state(&ValueStateDescriptor::new("count"))?);
        Ok(())
    }

    fn process_element(
        &mut self,
        _r: Reading,
        ctx: &mut KeyedContext<'_, String, String>,
    ) -> typeinfo_runtime::Result<()> {
        let count = self.count.as_ref().expect("opened");
        let n = count.value(ctx.state(), &())?.unwrap_or(0);
        count.update(ctx.state(), &(), n + 1)?;
        let at = ctx.current_processing_time() + 20;
        ctx.register_processing_time_timer(at);
        Ok(())
    }

    fn on_timer(
        &mut self,
        _ts: i64,
        domain: TimeDomain,
        ctx: &mut KeyedContext<'_, String, String>,
    ) -> typeinfo_runtime::Result<()> {
        let count = self.count.as_ref().expect("opened");
        if let Some(n) = count.value(ctx.state(), &())? {
            count.clear(ctx.state(), &())?;
            let line = format!(
                "{} {n} {domain:?} timestamp={:?}",
                ctx.key(),
                ctx.timestamp()
            );
            ctx.collect(line);
        }
        Ok(())
    }
}

#[test]
fn processing_time_timers_fire_by_the_clock_or_at_the_end() -> typeinfo_runtime::Result<()> {
    for backend in backends() {
        let env = StreamExecutionEnvironment::new();
        env.set_state_backend(backend);
        let out = env
            .from_generator(300, |i| {
                // Slow enough (about 300 ms) for timers to fire while records still arrive.
                std::thread::sleep(Duration::from_millis(1));
                reading(["a", "b", "c"][(i % 3) as usize], i as i64, 1)
            })
            .key_by(|r: &Reading| r.sensor.clone())
            .process(CountLater { count: None })
            .collect();
        env.execute("processing-time timers")?;
        let lines = out.take();
        let mut totals: BTreeMap<String, u64> = BTreeMap::new();
        for line in &lines {
            let mut f = line.split(' ');
            let (key, n) = (
                f.next().unwrap().to_owned(),
                f.next().unwrap().parse::<u64>().unwrap(),
            );
            assert!(line.ends_with("ProcessingTime timestamp=None"), "{line}");
            *totals.entry(key).or_default() += n;
        }
        assert_eq!(
            totals,
            BTreeMap::from([("a".into(), 100), ("b".into(), 100), ("c".into(), 100)]),
            "every record counted once"
        );
        assert!(
            lines.len() > 3,
            "timers fired while the job ran, not only at the end: {lines:?}"
        );
    }
    Ok(())
}

/// A keyed edge hands each record's key group to the operator after it (issue 28), end to
/// end at parallelism 2 on both backends: a window operator and a keyed process function
/// read the group the exchange computed (checked against the key's own group in the backend
/// of a debug build), and their results are exact.
#[test]
fn keyed_operators_after_a_keyed_edge_keep_each_keys_state_in_its_group(
) -> typeinfo_runtime::Result<()> {
    use typeinfo_state::KeyedStateBackend;

    #[derive(Clone)]
    struct Running(Option<ValueState<(), u64>>);
    impl KeyedProcessFunction<u64, (u64, i64), (u64, u64)> for Running {
        fn open(&mut self, state: &mut KeyedBackend<u64>) -> typeinfo_runtime::Result<()> {
            self.0 = Some(state.value_state(&ValueStateDescriptor::new("n"))?);
            Ok(())
        }
        fn process_element(
            &mut self,
            _: (u64, i64),
            ctx: &mut KeyedContext<'_, u64, (u64, u64)>,
        ) -> typeinfo_runtime::Result<()> {
            let n = self.0.as_ref().expect("opened");
            let next = n.value(ctx.state(), &())?.unwrap_or(0) + 1;
            n.update(ctx.state(), &(), next)?;
            let key = *ctx.key();
            ctx.collect((key, next));
            Ok(())
        }
    }

    let records: Vec<(u64, i64)> = (0..3000u64).map(|i| (i * 7 % 101, i as i64)).collect();
    let mut windows: BTreeMap<(u64, i64), u64> = BTreeMap::new();
    let mut totals: BTreeMap<u64, u64> = BTreeMap::new();
    for (key, ts) in &records {
        *windows.entry((*key, ts - ts % 100)).or_default() += 1;
        *totals.entry(*key).or_default() += 1;
    }
    for backend in [StateBackend::Heap, StateBackend::rocksdb()] {
        let env = StreamExecutionEnvironment::new();
        env.set_parallelism(2).set_state_backend(backend.clone());
        let keyed = env
            .from_collection(records.clone())
            .assign_timestamps_and_watermarks(
                WatermarkStrategy::for_monotonous_timestamps()
                    .with_timestamp_assigner(|r: &(u64, i64), _| r.1),
            )
            .key_by(|r: &(u64, i64)| r.0);
        let counted = keyed
            .window(TumblingEventTimeWindows::of_millis(100))
            .aggregate_with(Count, |key: &u64, w, n: u64| ((*key, w.start), n))
            .collect();
        let running = keyed.process(Running(None)).collect();
        env.execute("key groups handed on")?;
        let counted: BTreeMap<(u64, i64), u64> = counted.take().into_iter().collect();
        assert_eq!(counted, windows, "{backend:?}");
        let mut last: BTreeMap<u64, u64> = BTreeMap::new();
        for (key, n) in running.take() {
            let seen = last.entry(key).or_default();
            assert_eq!(n, *seen + 1, "{backend:?}: key {key} counts on");
            *seen = n;
        }
        assert_eq!(last, totals, "{backend:?}");
    }
    Ok(())
}
