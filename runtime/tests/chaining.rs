//! Operator chaining (issue 28): chained and unchained execution give the same output, on
//! both state backends and at parallelism 1 and 2 (a property test over random inputs and
//! pipelines), the plan shows the chains Flink's rules make, and a savepoint taken with
//! chaining restores without it and the other way round (each chained operator keeps its own
//! part of every checkpoint).
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test (or bench) panics on what it does not expect

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use proptest::prelude::*;
use typeinfo_runtime::functions::CountAndSum;
use typeinfo_runtime::{
    CheckpointConfig, KeyedBackend, KeyedContext, KeyedProcessFunction, OutputTag, RestoreSettings,
    StateBackend, StopWithSavepoint, StreamExecutionEnvironment, TimeDomain,
    TumblingEventTimeWindows, WatermarkStrategy,
};
use typeinfo_state::{MapState, MapStateDescriptor};

/// An event: key, timestamp, value.
type Event = (u8, i64, i64);

const NOTES: &str = "notes";

/// Sums per key the values of each 10 ms of event time and emits the sum on a timer at the
/// end of those 10 ms (every record of them has arrived by then, however the upstream
/// subtasks interleave); notes every tenth value on a side output.
#[derive(Clone, Default)]
struct BucketSums {
    sums: Option<MapState<(), i64, i64>>,
}

impl KeyedProcessFunction<u8, Event, String> for BucketSums {
    fn open(&mut self, state: &mut KeyedBackend<u8>) -> typeinfo_runtime::Result<()> {
        use typeinfo_state::KeyedStateBackend;
        self.sums = Some(state.map_state(&MapStateDescriptor::new("sums"))?);
        Ok(())
    }

    fn process_element(
        &mut self,
        e: Event,
        ctx: &mut KeyedContext<'_, u8, String>,
    ) -> typeinfo_runtime::Result<()> {
        let sums = self.sums.as_ref().expect("opened");
        let end = e.1 / 10 * 10 + 9;
        let before = sums.get(ctx.state(), &(), &end)?;
        if before.is_none() {
            ctx.register_event_time_timer(end);
        }
        sums.put(ctx.state(), &(), end, before.unwrap_or(0) + e.2)?;
        if e.2 % 10 == 0 {
            ctx.output(
                &OutputTag::<String>::new(NOTES),
                format!("{} {} {}", e.0, e.1, e.2),
            )?;
        }
        ctx.collect(format!("in {} {}", e.0, e.2));
        Ok(())
    }

    fn on_timer(
        &mut self,
        ts: i64,
        _domain: TimeDomain,
        ctx: &mut KeyedContext<'_, u8, String>,
    ) -> typeinfo_runtime::Result<()> {
        let sums = self.sums.as_ref().expect("opened");
        let total = sums.get(ctx.state(), &(), &ts)?.unwrap_or_default();
        sums.remove(ctx.state(), &(), &ts)?;
        ctx.collect(format!("timer {} {ts} {total}", ctx.key()));
        Ok(())
    }
}

/// What one run produced: the main output, the function's side output, the windows.
#[derive(Debug, PartialEq)]
struct Output {
    main: Vec<String>,
    notes: Vec<String>,
    windows: Vec<String>,
}

/// Runs the pipeline over `events` (in timestamp order, so that nothing is late whatever
/// the interleaving of subtasks) and returns its sorted outputs and the number of chains.
fn run(events: &[Event], parallelism: u32, state: StateBackend, chaining: bool) -> (Output, usize) {
    let env = StreamExecutionEnvironment::new();
    env.set_parallelism(parallelism).set_state_backend(state);
    if !chaining {
        env.disable_operator_chaining();
    }
    let stamped = env
        .from_collection(events.to_vec())
        .assign_timestamps_and_watermarks(
            WatermarkStrategy::for_monotonous_timestamps()
                .with_timestamp_assigner(|e: &Event, _| e.1)
                .emit_per_event(),
        )
        .map(|(k, ts, v)| (k % 5, ts, v * 3))
        .filter(|e: &Event| e.2 % 7 != 1)
        .flat_map(|e: Event| {
            let copies = if e.2 % 2 == 0 { 2 } else { 1 };
            std::iter::repeat_n(e, copies)
        });
    let processed = stamped
        .key_by(|e: &Event| e.0)
        .process(BucketSums::default());
    let notes = processed
        .side_output(&OutputTag::<String>::new(NOTES))
        .map(|s| format!("note {s}"))
        .collect();
    let main = processed.map(|s| s.to_uppercase()).collect();
    let windows = stamped
        .key_by(|e: &Event| e.0)
        .window(TumblingEventTimeWindows::of_millis(10))
        .aggregate_with(
            CountAndSum(|e: &Event| e.2),
            |k: &u8, w: &typeinfo_runtime::TimeWindow, (n, s): (u64, i64)| {
                format!("{k} {} {n} {s}", w.start)
            },
        )
        .filter(|s: &String| !s.is_empty())
        .collect();
    let chains = env.stream_graph().unwrap().chains().len();
    env.execute("chaining").unwrap();
    let sorted = |mut v: Vec<String>| {
        v.sort();
        v
    };
    (
        Output {
            main: sorted(main.take()),
            notes: sorted(notes.take()),
            windows: sorted(windows.take()),
        },
        chains,
    )
}

fn events() -> impl Strategy<Value = Vec<Event>> {
    prop::collection::vec((any::<u8>(), 0i64..5, 0i64..100), 1..300).prop_map(|steps| {
        // Timestamps in order: each step moves time on by 0-4 ms.
        let mut ts = 0;
        steps
            .into_iter()
            .map(|(k, dt, v)| {
                ts += dt;
                (k, ts, v)
            })
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    #[test]
    fn chained_and_unchained_execution_give_the_same_output(
        events in events(),
        parallelism in 1u32..=2,
        rocksdb in any::<bool>(),
    ) {
        let state = if rocksdb { StateBackend::rocksdb() } else { StateBackend::Heap };
        let (chained, fewer) = run(&events, parallelism, state.clone(), true);
        let (unchained, all) = run(&events, parallelism, state, false);
        prop_assert!(fewer < all, "chaining joined no operators ({fewer} chains of {all})");
        prop_assert!(!chained.main.is_empty());
        prop_assert_eq!(chained, unchained);
    }
}

#[test]
fn the_plan_chains_what_flinks_rules_allow_and_explain_shows_it() {
    let env = StreamExecutionEnvironment::new();
    env.set_parallelism(2);
    let mapped = env
        .from_collection(vec![1i64, 2, 3])
        .map(|x| x + 1) // parallelism 1 (the collection's) -> 2: not a forward edge
        .filter(|x| *x > 0);
    let keyed = mapped
        .key_by(|x: &i64| x % 2)
        .reduce(|a, b| a + b)
        .map(|x| x * 10);
    let _ = keyed.map(|x| x - 1).start_new_chain().collect();
    let _ = mapped.map(|x| x * 2).disable_chaining().print();
    let graph = env.stream_graph().unwrap();
    let names = |chain: &Vec<usize>| -> Vec<String> {
        chain
            .iter()
            .map(|n| graph.nodes()[*n].name().to_owned())
            .collect()
    };
    let chains: Vec<Vec<String>> = graph.chains().iter().map(names).collect();
    assert_eq!(
        chains,
        [
            vec!["Collection Source"],
            // `filter`'s output has two consumers: the chain stops there.
            vec!["Map", "Filter"],
            vec!["Keyed Reduce", "Map"],
            vec!["Map", "Collect Sink"],
            vec!["Map"],
            vec!["Print to Std. Out"],
        ],
        "{}",
        graph.explain()
    );
    let explain = graph.explain();
    assert!(explain.contains("chained to: [2]"), "{explain}");

    env.disable_operator_chaining();
    let unchained = env.stream_graph().unwrap();
    assert_eq!(unchained.chains().len(), unchained.nodes().len());
    assert!(!unchained.explain().contains("chained to"));
}

const RECORDS: u64 = 6_000;

/// Windows per key over generated events, written exactly once to `output`.
fn windowed_job(
    output: &Path,
    checkpoints: &Path,
    chaining: bool,
    restore: Option<&Path>,
    stop: Option<&Path>,
) -> typeinfo_runtime::Result<()> {
    let env = StreamExecutionEnvironment::new();
    env.set_parallelism(2).set_max_parallelism(32);
    env.enable_checkpointing(CheckpointConfig::new(
        checkpoints,
        Duration::from_millis(20),
    ));
    if !chaining {
        env.disable_operator_chaining();
    }
    if let Some(path) = restore {
        env.restore_from(RestoreSettings {
            path: path.to_owned(),
            allow_non_restored_state: false,
        });
    }
    if let Some(dir) = stop {
        env.stop_with_savepoint(StopWithSavepoint {
            after_records: RECORDS / 2,
            dir: dir.to_owned(),
        });
    }
    env.from_generator(RECORDS, |i| {
        ((i * 7919 % 13) as u8, i as i64 * 3, (i % 100) as i64)
    })
    .uid("events")
    .set_parallelism(1)
    .assign_timestamps_and_watermarks(
        WatermarkStrategy::for_monotonous_timestamps().with_timestamp_assigner(|e: &Event, _| e.1),
    )
    .uid("timestamps")
    .set_parallelism(1)
    .map(|(k, ts, v)| (k, ts, v + 1))
    .uid("plus-one")
    .set_parallelism(1)
    .key_by(|e: &Event| e.0)
    .window(TumblingEventTimeWindows::of_millis(500))
    .aggregate_with(
        CountAndSum(|e: &Event| e.2),
        |k: &u8, w: &typeinfo_runtime::TimeWindow, (n, s): (u64, i64)| {
            format!("{k},{},{n},{s}", w.start)
        },
    )
    .uid("windows")
    .map(|s| format!("w {s}"))
    .uid("prefix")
    .write_as_text(output)
    .uid("output");
    env.execute("windows").map(drop)
}

#[test]
fn a_savepoint_taken_with_chaining_restores_without_it_and_the_other_way_round() {
    let tmp = tempfile::tempdir().unwrap();
    let p = |name: &str| -> PathBuf { tmp.path().join(name) };
    windowed_job(&p("ref"), &p("ref-ck"), false, None, None).unwrap();
    let reference = common::published(&p("ref"));
    assert!(reference.len() > 100, "{}", reference.len());
    for (first, second) in [(true, false), (false, true)] {
        let name = format!("{first}-{second}");
        let (out, sp) = (p(&format!("out-{name}")), p(&format!("sp-{name}")));
        windowed_job(&out, &p(&format!("ck1-{name}")), first, None, Some(&sp)).unwrap();
        assert!(
            sp.join("_metadata").exists(),
            "the first run stopped with a savepoint"
        );
        let halfway = common::published_up_to(&out, common::savepoint_epoch(&sp)).len();
        assert!(halfway < reference.len(), "the first run stopped half-way");
        windowed_job(&out, &p(&format!("ck2-{name}")), second, Some(&sp), None).unwrap();
        assert_eq!(
            common::published(&out),
            reference,
            "chaining {first} then {second}: the output equals the uninterrupted run's"
        );
    }
}
