//! The broadcast state pattern (`broadcast_with`, `KeyedBroadcastProcessFunction`,
//! `BroadcastProcessFunction`) and users' two-input operators (`TwoInputOperator`):
//! - rules broadcast to a keyed stream of readings: every (reading, rule) pair over the
//!   threshold is reported exactly once, whichever of the two arrives first (the broadcast
//!   side reaches the stored readings through `apply_to_keyed_state`), against a plain-loop
//!   reference, at parallelism 1 and 3, on both backends, in streaming and batch mode;
//! - a job stopped with a savepoint at parallelism 2 and restored at 3: every new subtask
//!   gets the broadcast state (readings of the second run match the first run's rules on
//!   every subtask) and the rescaled keyed state (new rules reach the first run's readings);
//! - a non-keyed broadcast function enriching records from a broadcast table;
//! - a broadcast state the broadcast stream does not declare is a clear error;
//! - a keyed `TwoInputOperator` with shared keyed state and an end-of-input timer.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test (or bench) panics on what it does not expect

use std::collections::BTreeMap;
use std::time::Duration;

use typeinfo_runtime::{
    BroadcastContext, BroadcastProcessFunction, BroadcastStateDescriptor, CheckpointConfig,
    DataStream, KeyedBroadcastProcessFunction, OperatorContext, ReadOnlyContext, RestoreSettings,
    RuntimeMode, StateBackend, StateContext, StopWithSavepoint, StreamExecutionEnvironment,
    TimeDomain, TwoInputOperator,
};
use typeinfo_state::{
    KeyedStateBackend, ListState, ListStateDescriptor, ValueState, ValueStateDescriptor,
};

/// `(reading id, sensor, value)`.
type Reading = (u64, u32, i64);
/// `(rule name, threshold)`: a reading over the threshold is reported.
type Rule = (String, i64);

fn readings(n: u64) -> Vec<Reading> {
    (0..n)
        .map(|i| (i, (i % 13) as u32, ((i * 37) % 100) as i64))
        .collect()
}

fn rules(names: &[(&str, i64)]) -> Vec<Rule> {
    names.iter().map(|(n, t)| ((*n).to_owned(), *t)).collect()
}

/// Every `(reading id, rule name)` with the reading over the rule's threshold.
fn reference(readings: &[Reading], rules: &[Rule]) -> Vec<(u64, String)> {
    let mut out: Vec<(u64, String)> = readings
        .iter()
        .flat_map(|r| {
            rules
                .iter()
                .filter(move |(_, t)| r.2 > *t)
                .map(move |(name, _)| (r.0, name.clone()))
        })
        .collect();
    out.sort();
    out
}

/// Reports each reading over each rule's threshold once, whichever comes first: readings
/// are kept in keyed state, a new rule visits them all.
#[derive(Clone)]
struct Alerts {
    rules: BroadcastStateDescriptor<String, i64>,
    seen: Option<ListState<(), (u64, i64)>>,
}

impl Alerts {
    fn new() -> Self {
        Alerts {
            rules: BroadcastStateDescriptor::new("rules"),
            seen: None,
        }
    }
}

impl KeyedBroadcastProcessFunction<u32, Reading, Rule, (u64, String)> for Alerts {
    fn open(
        &mut self,
        state: &mut typeinfo_runtime::KeyedBackend<u32>,
    ) -> typeinfo_runtime::Result<()> {
        self.seen = Some(state.list_state(&ListStateDescriptor::new("seen"))?);
        Ok(())
    }

    fn process_element(
        &mut self,
        r: Reading,
        ctx: &mut ReadOnlyContext<'_, u32, (u64, String)>,
    ) -> typeinfo_runtime::Result<()> {
        assert_eq!(ctx.current_key(), Some(&r.1));
        let seen = self.seen.clone().unwrap();
        seen.add(ctx.state()?, &(), (r.0, r.2))?;
        let hits: Vec<String> = ctx
            .broadcast_state(&self.rules)?
            .entries()
            .filter(|(_, t)| r.2 > **t)
            .map(|(name, _)| name.clone())
            .collect();
        for name in hits {
            ctx.collect((r.0, name));
        }
        Ok(())
    }

    fn process_broadcast_element(
        &mut self,
        rule: Rule,
        ctx: &mut BroadcastContext<'_, u32, (u64, String)>,
    ) -> typeinfo_runtime::Result<()> {
        ctx.broadcast_state(&self.rules)?
            .put(rule.0.clone(), rule.1)?;
        let seen = self.seen.clone().unwrap();
        let mut hits = Vec::new();
        ctx.apply_to_keyed_state(seen.id(), |sensor, state| {
            for (id, value) in seen.get(state, &())? {
                assert_eq!(id % 13, u64::from(*sensor), "the key is current");
                if value > rule.1 {
                    hits.push((id, rule.0.clone()));
                }
            }
            Ok(())
        })?;
        for hit in hits {
            ctx.collect(hit);
        }
        Ok(())
    }
}

fn alerts(
    env: &StreamExecutionEnvironment,
    readings: Vec<Reading>,
    rules: DataStream<Rule>,
) -> DataStream<(u64, String)> {
    let descriptor = BroadcastStateDescriptor::<String, i64>::new("rules");
    env.from_collection(readings)
        .uid("readings")
        .key_by(|r: &Reading| r.1)
        .connect(&rules.broadcast_with(&[&descriptor]))
        .process(Alerts::new())
        .uid("alerts")
}

#[test]
fn every_reading_meets_every_rule_once_whichever_comes_first() -> typeinfo_runtime::Result<()> {
    let (data, rule_list) = (
        readings(3_000),
        rules(&[("low", 20), ("mid", 50), ("high", 90), ("all", -1)]),
    );
    let expected = reference(&data, &rule_list);
    for mode in [RuntimeMode::Streaming, RuntimeMode::Batch] {
        for state in [StateBackend::Heap, StateBackend::rocksdb()] {
            for parallelism in [1, 3] {
                let env = StreamExecutionEnvironment::new();
                env.set_parallelism(parallelism)
                    .set_state_backend(state.clone())
                    .set_runtime_mode(mode);
                let rules = env.from_collection(rule_list.clone());
                let out = alerts(&env, data.clone(), rules).collect();
                env.execute("alerts")?;
                let mut got = out.take();
                got.sort();
                assert_eq!(
                    got, expected,
                    "{mode:?}, {state:?}, parallelism {parallelism}"
                );
            }
        }
    }
    Ok(())
}

#[test]
fn a_restore_at_another_parallelism_gives_every_subtask_the_broadcast_state(
) -> typeinfo_runtime::Result<()> {
    let data = readings(600);
    let first_rules = rules(&[("low", 20), ("high", 90)]);
    let later_rules = rules(&[("mid", 50)]);
    for state in [StateBackend::Heap, StateBackend::rocksdb()] {
        let dir = tempfile::tempdir().unwrap();
        let savepoint = dir.path().join("savepoint");
        // First run, parallelism 2: all rules of the first run, the first 250 readings.
        let env = StreamExecutionEnvironment::new();
        env.set_parallelism(2)
            .set_max_parallelism(32)
            .set_state_backend(state.clone())
            .enable_checkpointing(CheckpointConfig::new(
                dir.path().join("ck1"),
                Duration::from_millis(50),
            ))
            .stop_with_savepoint(StopWithSavepoint {
                after_records: 250,
                dir: savepoint.clone(),
            });
        // The same job in both runs (operators without a uid are known by their place in
        // the graph); the later rules arrive in the second run only.
        let rules = env
            .from_collection(first_rules.clone())
            .uid("rules")
            .union(&[env
                .from_collection(Vec::<Rule>::new())
                .uid("no-later-rules")]);
        let first = alerts(&env, data.clone(), rules).collect();
        // The readings' source is one subtask, so it stops after exactly 250 readings; the
        // rules' sources end before (the job's checkpoints go on without them).
        env.execute("alerts, first run")?;
        assert!(savepoint.join("_metadata").is_file());

        // Second run, parallelism 3, restored: the rest of the readings and a new rule.
        let env = StreamExecutionEnvironment::new();
        env.set_parallelism(3)
            .set_max_parallelism(32)
            .set_state_backend(state.clone())
            .enable_checkpointing(CheckpointConfig::new(
                dir.path().join("ck2"),
                Duration::from_millis(50),
            ))
            // The first run's empty source of later rules ended: its position is dropped,
            // the later rules come from a new source.
            .restore_from(RestoreSettings {
                path: savepoint.clone(),
                allow_non_restored_state: true,
            });
        let rules = env
            .from_collection(first_rules.clone())
            .uid("rules")
            .union(&[env.from_collection(later_rules.clone()).uid("later-rules")]);
        let second = alerts(&env, data.clone(), rules).collect();
        env.execute("alerts, second run")?;

        let mut got = first.take();
        let second = second.take();
        assert!(
            second.iter().any(|(id, _)| *id >= 250),
            "the second run reported readings of its own"
        );
        got.extend(second);
        got.sort();
        let all_rules: Vec<Rule> = first_rules.iter().chain(&later_rules).cloned().collect();
        assert_eq!(got, reference(&data, &all_rules), "{state:?}");
    }
    Ok(())
}

/// Names each code from a broadcast table (non-keyed).
#[derive(Clone)]
struct Names(BroadcastStateDescriptor<u32, String>);

impl BroadcastProcessFunction<u32, (u32, String), String> for Names {
    fn process_element(
        &mut self,
        code: u32,
        ctx: &mut ReadOnlyContext<'_, (), String>,
    ) -> typeinfo_runtime::Result<()> {
        let name = ctx
            .broadcast_state(&self.0)?
            .get(&code)
            .cloned()
            .unwrap_or_else(|| "unknown".to_owned());
        ctx.collect(format!("{code}={name}"));
        Ok(())
    }

    fn process_broadcast_element(
        &mut self,
        entry: (u32, String),
        ctx: &mut BroadcastContext<'_, (), String>,
    ) -> typeinfo_runtime::Result<()> {
        let mut table = ctx.broadcast_state(&self.0)?;
        table.put(entry.0, entry.1)?;
        assert!(table.view()?.contains(&entry.0));
        Ok(())
    }
}

#[test]
fn a_non_keyed_function_reads_the_broadcast_table() -> typeinfo_runtime::Result<()> {
    for parallelism in [1, 2] {
        let env = StreamExecutionEnvironment::new();
        // Batch mode: the broadcast side comes first, so every code finds its name.
        env.set_parallelism(parallelism)
            .set_runtime_mode(RuntimeMode::Batch);
        let table = BroadcastStateDescriptor::<u32, String>::new("names");
        let names = env
            .from_collection(vec![(1u32, "one".to_owned()), (2, "two".to_owned())])
            .broadcast_with(&[&table]);
        let out = env
            .from_collection(vec![1u32, 2, 3, 1])
            .rebalance()
            .connect(&names)
            .process(Names(table))
            .collect();
        env.execute("names")?;
        let mut got = out.take();
        got.sort();
        assert_eq!(
            got,
            ["1=one", "1=one", "2=two", "3=unknown"],
            "p{parallelism}"
        );
    }
    Ok(())
}

#[test]
fn a_uid_that_cannot_name_a_directory_is_refused() {
    let env = StreamExecutionEnvironment::new();
    env.from_collection(vec![1u32]).uid("later rules").collect();
    let error = env.execute("uid").unwrap_err().to_string();
    assert!(
        error.contains("uid \"later rules\"") && error.contains("without spaces"),
        "{error}"
    );
}

#[test]
fn an_undeclared_broadcast_state_is_a_clear_error() {
    let env = StreamExecutionEnvironment::new();
    let rules = env
        .from_collection(rules(&[("low", 20)]))
        .broadcast_with(&[]);
    env.from_collection(readings(10))
        .key_by(|r: &Reading| r.1)
        .connect(&rules)
        .process(Alerts::new())
        .collect();
    let error = env.execute("undeclared").unwrap_err().to_string();
    assert!(
        error.contains("broadcast state `rules`") && error.contains("broadcast_with"),
        "{error}"
    );
}

/// Per key: the sum of the first input minus the count of the second, emitted when both
/// inputs ended (a timer at the end of event time).
#[derive(Clone, Default)]
struct Net {
    total: Option<ValueState<(), i64>>,
}

impl TwoInputOperator<u32, (u32, i64), u32, (u32, i64)> for Net {
    fn initialize_state(
        &mut self,
        ctx: &mut StateContext<'_, u32>,
    ) -> typeinfo_runtime::Result<()> {
        self.total = Some(
            ctx.keyed_state()?
                .value_state(&ValueStateDescriptor::new("total"))?,
        );
        Ok(())
    }
    fn process_element1(
        &mut self,
        v: (u32, i64),
        ctx: &mut OperatorContext<'_, u32, (u32, i64)>,
    ) -> typeinfo_runtime::Result<()> {
        self.add(v.1, ctx)
    }
    fn process_element2(
        &mut self,
        _: u32,
        ctx: &mut OperatorContext<'_, u32, (u32, i64)>,
    ) -> typeinfo_runtime::Result<()> {
        self.add(-1, ctx)
    }
    fn on_timer(
        &mut self,
        _timestamp: i64,
        domain: TimeDomain,
        ctx: &mut OperatorContext<'_, u32, (u32, i64)>,
    ) -> typeinfo_runtime::Result<()> {
        assert_eq!(domain, TimeDomain::EventTime);
        let key = *ctx.current_key().unwrap();
        let total = self.total.clone().unwrap();
        let sum = total.value(ctx.keyed_state()?, &())?.unwrap_or(0);
        ctx.collect((key, sum));
        Ok(())
    }
}

impl Net {
    fn add(
        &mut self,
        delta: i64,
        ctx: &mut OperatorContext<'_, u32, (u32, i64)>,
    ) -> typeinfo_runtime::Result<()> {
        let total = self.total.clone().unwrap();
        let state = ctx.keyed_state()?;
        let now = total.value(state, &())?.unwrap_or(0);
        total.update(state, &(), now + delta)?;
        ctx.register_event_time_timer(i64::MAX)
    }
}

#[test]
fn a_keyed_two_input_operator_shares_state_between_its_inputs() -> typeinfo_runtime::Result<()> {
    let amounts: Vec<(u32, i64)> = (0..500u32).map(|i| (i % 7, i64::from(i % 11))).collect();
    let marks: Vec<u32> = (0..300u32).map(|i| i % 5).collect();
    let mut expected: BTreeMap<u32, i64> = BTreeMap::new();
    for (k, v) in &amounts {
        *expected.entry(*k).or_default() += v;
    }
    for k in &marks {
        *expected.entry(*k).or_default() -= 1;
    }
    let expected: Vec<(u32, i64)> = expected.into_iter().collect();
    for state in [StateBackend::Heap, StateBackend::rocksdb()] {
        for parallelism in [1, 2] {
            let env = StreamExecutionEnvironment::new();
            env.set_parallelism(parallelism)
                .set_state_backend(state.clone());
            let out = env
                .from_collection(amounts.clone())
                .connect(&env.from_collection(marks.clone()))
                .key_by(|a: &(u32, i64)| a.0, |m: &u32| *m)
                .transform("Net", Net::default())
                .collect();
            env.execute("net")?;
            let mut got = out.take();
            got.sort();
            assert_eq!(got, expected, "{state:?}, parallelism {parallelism}");
        }
    }
    Ok(())
}

/// Passes numbers on and emits `-1` when its input ends.
#[derive(Clone)]
struct MarksTheEnd;

impl typeinfo_runtime::OneInputOperator<(), i64, i64> for MarksTheEnd {
    fn process_element(
        &mut self,
        v: i64,
        ctx: &mut OperatorContext<'_, (), i64>,
    ) -> typeinfo_runtime::Result<()> {
        ctx.collect(v);
        Ok(())
    }
    fn end_input(
        &mut self,
        ctx: &mut OperatorContext<'_, (), i64>,
    ) -> typeinfo_runtime::Result<()> {
        ctx.collect(-1);
        Ok(())
    }
}

/// An operator whose input ended while the rest of the job goes on (Flink's checkpoints
/// after tasks finished): later checkpoints complete with its final state, and a job
/// restored from one does not end its input a second time.
#[test]
fn an_operator_that_ended_is_in_later_checkpoints_and_ends_once() -> typeinfo_runtime::Result<()> {
    for state in [StateBackend::Heap, StateBackend::rocksdb()] {
        let dir = tempfile::tempdir().unwrap();
        let savepoint = dir.path().join("savepoint");
        let job = |restore: bool| -> typeinfo_runtime::Result<Vec<i64>> {
            let env = StreamExecutionEnvironment::new();
            env.set_parallelism(2)
                .set_state_backend(state.clone())
                .enable_checkpointing(CheckpointConfig::new(
                    dir.path().join(if restore { "ck2" } else { "ck1" }),
                    Duration::from_millis(20),
                ));
            if restore {
                env.restore_from(RestoreSettings {
                    path: savepoint.clone(),
                    allow_non_restored_state: false,
                });
            } else {
                env.stop_with_savepoint(StopWithSavepoint {
                    after_records: 300,
                    dir: savepoint.clone(),
                });
            }
            let short = env
                .from_collection(vec![1i64, 2, 3])
                .uid("short")
                .transform("Marks the end", MarksTheEnd)
                .uid("marks")
                .set_parallelism(1);
            let long = env
                .from_collection((100..1_000i64).collect())
                .uid("long")
                .map(|v| v)
                .uid("long-map");
            let out = short.union(&[long]).collect();
            env.execute("ended operator")?;
            Ok(out.take())
        };
        let mut got = job(false)?;
        assert!(savepoint.join("_metadata").is_file());
        got.extend(job(true)?);
        got.sort();
        let expected: Vec<i64> = [-1i64, 1, 2, 3].into_iter().chain(100..1_000).collect();
        assert_eq!(got, expected, "{state:?}");
    }
    Ok(())
}

/// Reports, per record, whether its id is above the last one its key saw.
#[derive(Clone)]
struct InOrder {
    last: Option<ValueState<(), u64>>,
}

impl KeyedBroadcastProcessFunction<u32, Reading, Rule, bool> for InOrder {
    fn open(
        &mut self,
        state: &mut typeinfo_runtime::KeyedBackend<u32>,
    ) -> typeinfo_runtime::Result<()> {
        self.last = Some(state.value_state(&ValueStateDescriptor::new("last"))?);
        Ok(())
    }

    fn process_element(
        &mut self,
        r: Reading,
        ctx: &mut ReadOnlyContext<'_, u32, bool>,
    ) -> typeinfo_runtime::Result<()> {
        let last = self.last.clone().unwrap();
        let s = ctx.state()?;
        let in_order = last.value(s, &())?.is_none_or(|l| l < r.0);
        last.update(s, &(), r.0)?;
        ctx.collect(in_order);
        Ok(())
    }

    fn process_broadcast_element(
        &mut self,
        _rule: Rule,
        _ctx: &mut BroadcastContext<'_, u32, bool>,
    ) -> typeinfo_runtime::Result<()> {
        Ok(())
    }
}

#[test]
fn each_keys_records_reach_the_function_in_order_from_a_narrower_input(
) -> typeinfo_runtime::Result<()> {
    // One source subtask, the function at parallelism 3: the adapter that tags the keyed
    // input for `connect` runs at its input's parallelism (Flink has no such adapter: its
    // two-input operator reads the keyed input directly), so the records of a key travel
    // one path, in order. At the default parallelism behind a round robin they overtook
    // each other.
    let env = StreamExecutionEnvironment::new();
    env.set_parallelism(3);
    let descriptor = BroadcastStateDescriptor::<String, i64>::new("rules");
    let rules = env
        .from_collection(Vec::<Rule>::new())
        .broadcast_with(&[&descriptor]);
    let out = env
        .from_collection(readings(30_000))
        .key_by(|r: &Reading| r.1)
        .connect(&rules)
        .process(InOrder { last: None })
        .collect();
    let plan = env.explain()?;
    assert!(plan.contains("Connect (input 1) (parallelism 1)"), "{plan}");
    env.execute("in order")?;
    let got = out.take();
    assert_eq!(got.len(), 30_000);
    assert!(
        got.iter().all(|ok| *ok),
        "a key's records arrived out of order"
    );
    Ok(())
}
