//! Connected streams (`DataStream::connect`): a keyed co-process function sharing keyed
//! state between its two inputs (an enrichment whose orders may come before their
//! customer), against a plain-loop reference, at parallelism 1 and 2, on both backends, in
//! streaming and batch mode; event-time timers fire only when the watermarks of both inputs
//! passed them; co-map, co-flat-map and a non-keyed co-process function with a side output;
//! window joins, co-groups and interval joins against nested loops; a two-input job restarted
//! from its checkpoint publishes exactly the failure-free output.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test (or bench) panics on what it does not expect

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use typeinfo_runtime::{
    CheckpointConfig, CoProcessFunction, DataStream, KeyedCoProcessFunction, KeyedContext,
    OperatorContext, OutputTag, RestartStrategy, RuntimeMode, StateBackend,
    StreamExecutionEnvironment, TimeDomain, WatermarkStrategy,
};
mod common;
use common::{FailAtThirdCheckpoint, Paced};

use typeinfo_state::{
    KeyedStateBackend, ListState, ListStateDescriptor, ValueState, ValueStateDescriptor,
};

/// `(customer id, name)`.
type Customer = (u32, String);
/// `(customer id, order id, amount)`.
type Order = (u32, u64, i64);

fn sorted<T: Ord>(mut v: Vec<T>) -> Vec<T> {
    v.sort();
    v
}

/// Customers 0..200 except every 7th (whose orders are never enriched), in an order that
/// puts many of them after their orders.
fn customers() -> Vec<Customer> {
    let mut c: Vec<Customer> = (0..200u32)
        .filter(|id| id % 7 != 3)
        .map(|id| (id, format!("customer-{id}")))
        .collect();
    c.reverse();
    c
}

/// 5,000 orders over customer ids 0..200.
fn orders() -> Vec<Order> {
    (0..5_000u64)
        .map(|i| (((i * 37) % 200) as u32, i, (i % 97) as i64 - 40))
        .collect()
}

/// `(name, order id, amount)` of every order whose customer exists, computed directly.
fn reference(customers: &[Customer], orders: &[Order]) -> Vec<(String, u64, i64)> {
    let names: BTreeMap<u32, &String> = customers.iter().map(|(id, n)| (*id, n)).collect();
    sorted(
        orders
            .iter()
            .filter_map(|(c, id, amount)| names.get(c).map(|n| ((*n).clone(), *id, *amount)))
            .collect(),
    )
}

/// Enriches orders with their customer's name; an order that arrives before its customer
/// waits in list state.
#[derive(Clone, Default)]
struct Enrich {
    name: Option<ValueState<(), String>>,
    waiting: Option<ListState<(), (u64, i64)>>,
}

impl KeyedCoProcessFunction<u32, Customer, Order, (String, u64, i64)> for Enrich {
    fn open(
        &mut self,
        state: &mut typeinfo_runtime::KeyedBackend<u32>,
    ) -> typeinfo_runtime::Result<()> {
        self.name = Some(state.value_state(&ValueStateDescriptor::new("name"))?);
        self.waiting = Some(state.list_state(&ListStateDescriptor::new("waiting"))?);
        Ok(())
    }

    fn process_element1(
        &mut self,
        customer: Customer,
        ctx: &mut KeyedContext<'_, u32, (String, u64, i64)>,
    ) -> typeinfo_runtime::Result<()> {
        assert_eq!(*ctx.key(), customer.0);
        let (name, waiting) = (self.name.as_ref().unwrap(), self.waiting.as_ref().unwrap());
        name.update(ctx.state(), &(), customer.1.clone())?;
        for (id, amount) in waiting.get(ctx.state(), &())? {
            ctx.collect((customer.1.clone(), id, amount));
        }
        waiting.clear(ctx.state(), &())?;
        Ok(())
    }

    fn process_element2(
        &mut self,
        order: Order,
        ctx: &mut KeyedContext<'_, u32, (String, u64, i64)>,
    ) -> typeinfo_runtime::Result<()> {
        assert_eq!(*ctx.key(), order.0);
        match self.name.as_ref().unwrap().value(ctx.state(), &())? {
            Some(name) => ctx.collect((name, order.1, order.2)),
            None => self
                .waiting
                .as_ref()
                .unwrap()
                .add(ctx.state(), &(), (order.1, order.2))?,
        }
        Ok(())
    }
}

fn enrich_job(
    parallelism: u32,
    backend: StateBackend,
    mode: RuntimeMode,
) -> Vec<(String, u64, i64)> {
    let env = StreamExecutionEnvironment::new();
    env.set_parallelism(parallelism)
        .set_state_backend(backend)
        .set_runtime_mode(mode);
    let out = env
        .from_collection(customers())
        .connect(&env.from_collection(orders()))
        .key_by(|c: &Customer| c.0, |o: &Order| o.0)
        .process(Enrich::default())
        .collect();
    env.execute("enrich").unwrap();
    sorted(out.take())
}

#[test]
fn keyed_co_process_shares_state_between_inputs() {
    let want = reference(&customers(), &orders());
    assert!(want.len() > 4_000 && want.len() < 5_000);
    for parallelism in [1, 2] {
        for backend in [StateBackend::Heap, StateBackend::rocksdb()] {
            for mode in [RuntimeMode::Streaming, RuntimeMode::Batch] {
                let what = format!("p{parallelism} {backend:?} {mode:?}");
                assert_eq!(
                    enrich_job(parallelism, backend.clone(), mode),
                    want,
                    "{what}"
                );
            }
        }
    }
}

/// Registers an event-time timer 50 ms after each record and counts the second input's
/// records per key; a firing reports the key, the timer's time, the operator's watermark
/// then and how many records of the second input the key had seen.
#[derive(Clone, Default)]
struct Later {
    seen: Option<ValueState<(), u64>>,
}

type Fired = (u32, i64, i64, u64);

impl KeyedCoProcessFunction<u32, (u32, i64), (u32, i64), Fired> for Later {
    fn open(
        &mut self,
        state: &mut typeinfo_runtime::KeyedBackend<u32>,
    ) -> typeinfo_runtime::Result<()> {
        self.seen = Some(state.value_state(&ValueStateDescriptor::new("seen"))?);
        Ok(())
    }

    fn process_element1(
        &mut self,
        e: (u32, i64),
        ctx: &mut KeyedContext<'_, u32, Fired>,
    ) -> typeinfo_runtime::Result<()> {
        ctx.register_event_time_timer(e.1 + 50);
        Ok(())
    }

    fn process_element2(
        &mut self,
        e: (u32, i64),
        ctx: &mut KeyedContext<'_, u32, Fired>,
    ) -> typeinfo_runtime::Result<()> {
        let seen = self.seen.as_ref().unwrap();
        let n = seen.value(ctx.state(), &())?.unwrap_or(0);
        seen.update(ctx.state(), &(), n + 1)?;
        ctx.register_event_time_timer(e.1 + 50);
        Ok(())
    }

    fn on_timer(
        &mut self,
        time: i64,
        domain: TimeDomain,
        ctx: &mut KeyedContext<'_, u32, Fired>,
    ) -> typeinfo_runtime::Result<()> {
        assert_eq!(domain, TimeDomain::EventTime);
        let key = *ctx.key();
        let watermark = ctx.current_watermark();
        let seen = self
            .seen
            .as_ref()
            .unwrap()
            .value(ctx.state(), &())?
            .unwrap_or(0);
        ctx.collect((key, time, watermark, seen));
        Ok(())
    }
}

fn timestamped(
    env: &StreamExecutionEnvironment,
    events: Vec<(u32, i64)>,
) -> DataStream<(u32, i64)> {
    env.from_collection(events)
        .assign_timestamps_and_watermarks(
            WatermarkStrategy::for_monotonous_timestamps()
                .with_timestamp_assigner(|e: &(u32, i64), _| e.1)
                .emit_per_event(),
        )
}

/// The first input runs to 10 s, the second stops at 100 ms: the second input's watermark
/// stays below 100 until it ends, so a timer at 100 or later fires only after every record
/// of the second input was processed, whatever the first input's watermark (the operator's
/// event time is the minimum of both); every timer fires once, never before its time.
#[test]
fn event_time_is_the_minimum_of_both_inputs() {
    let fast: Vec<(u32, i64)> = (0..1_000).map(|i| (i % 5, i as i64 * 10)).collect();
    let slow: Vec<(u32, i64)> = (0..=100).map(|i| (i % 5, i as i64)).collect();
    let mut want: Vec<(u32, i64)> = fast
        .iter()
        .chain(&slow)
        .map(|(k, t)| (*k, t + 50))
        .collect();
    want.sort();
    want.dedup();
    let mut slow_per_key = BTreeMap::new();
    for (k, _) in &slow {
        *slow_per_key.entry(*k).or_insert(0u64) += 1;
    }
    for parallelism in [1, 2] {
        let env = StreamExecutionEnvironment::new();
        env.set_parallelism(parallelism);
        let fired = timestamped(&env, fast.clone())
            .connect(&timestamped(&env, slow.clone()))
            .key_by(|e: &(u32, i64)| e.0, |e: &(u32, i64)| e.0)
            .process(Later::default())
            .collect();
        env.execute("timers").unwrap();
        let fired = sorted(fired.take());
        assert_eq!(
            fired
                .iter()
                .map(|(k, t, _, _)| (*k, *t))
                .collect::<Vec<_>>(),
            want,
            "p{parallelism}: every timer once"
        );
        for (key, time, watermark, seen) in fired {
            assert!(
                watermark >= time,
                "p{parallelism}: {key} {time} fired at {watermark}"
            );
            if time >= 100 {
                assert_eq!(
                    seen, slow_per_key[&key],
                    "p{parallelism}: timer {time} of key {key} fired before the slow input ended"
                );
            }
        }
    }
}

/// Counts each input's records on a side output at the end, and passes the second
/// input's records on as strings.
#[derive(Clone, Default)]
struct CountSides {
    first: u64,
    second: u64,
}

const COUNTS: &str = "counts";

impl CoProcessFunction<i64, String, String> for CountSides {
    fn process_element1(
        &mut self,
        _value: i64,
        _ctx: &mut OperatorContext<'_, (), String>,
    ) -> typeinfo_runtime::Result<()> {
        self.first += 1;
        Ok(())
    }

    fn process_element2(
        &mut self,
        value: String,
        ctx: &mut OperatorContext<'_, (), String>,
    ) -> typeinfo_runtime::Result<()> {
        self.second += 1;
        ctx.collect(value);
        Ok(())
    }

    fn close(&mut self, ctx: &mut OperatorContext<'_, (), String>) -> typeinfo_runtime::Result<()> {
        ctx.output(
            &OutputTag::<(u64, u64)>::new(COUNTS),
            (self.first, self.second),
        )
    }
}

#[test]
fn co_map_co_flat_map_and_co_process() {
    let env = StreamExecutionEnvironment::new();
    env.set_parallelism(2);
    let numbers = env.from_collection((0..100i64).collect::<Vec<_>>());
    let words = env.from_collection((0..30).map(|i| format!("w{i}")).collect::<Vec<_>>());
    let connected = numbers.connect(&words);
    let mapped = connected.map(|n| n * 2, |w| w.len() as i64).collect();
    let flat = connected
        .flat_map(|n| vec![n; (n % 3) as usize], |w| vec![-(w.len() as i64)])
        .collect();
    let processed = connected.process(CountSides::default());
    let counts = processed
        .side_output(&OutputTag::<(u64, u64)>::new(COUNTS))
        .collect();
    let passed = processed.collect();
    env.execute("co functions").unwrap();

    let mut want: Vec<i64> = (0..100).map(|n| n * 2).collect();
    want.extend((0..30).map(|i| format!("w{i}").len() as i64));
    assert_eq!(sorted(mapped.take()), sorted(want));
    let mut want: Vec<i64> = (0..100).flat_map(|n| vec![n; (n % 3) as usize]).collect();
    want.extend((0..30).map(|i| -(format!("w{i}").len() as i64)));
    assert_eq!(sorted(flat.take()), sorted(want));
    assert_eq!(
        sorted(passed.take()),
        sorted((0..30).map(|i| format!("w{i}")).collect())
    );
    // One count per subtask; together every record of both inputs.
    let counts = counts.take();
    assert_eq!(counts.len(), 2);
    let total = counts.iter().fold((0, 0), |a, c| (a.0 + c.0, a.1 + c.1));
    assert_eq!(total, (100, 30));
}

/// `(key, timestamp, id)`.
type Tick = (u32, i64, u64);

fn ticks(n: u64, keys: u64, step: i64, first_id: u64) -> Vec<Tick> {
    (0..n)
        .map(|i| (((i * 7) % keys) as u32, i as i64 * step, first_id + i))
        .collect()
}

fn ticking(env: &StreamExecutionEnvironment, events: Vec<Tick>) -> DataStream<Tick> {
    env.from_collection(events)
        .assign_timestamps_and_watermarks(
            WatermarkStrategy::for_monotonous_timestamps()
                .with_timestamp_assigner(|e: &Tick, _| e.1)
                .emit_per_event(),
        )
}

/// The window starts of `ts` for windows of `size` every `slide` ms (tumbling when equal).
fn starts(ts: i64, size: i64, slide: i64) -> Vec<i64> {
    let last = ts - ts.rem_euclid(slide);
    (0..)
        .map(|i| last - i * slide)
        .take_while(|s| s + size > ts)
        .collect()
}

/// Every `(first id, second id)` of records with equal keys in a common window, once per
/// common window.
fn join_reference(first: &[Tick], second: &[Tick], size: i64, slide: i64) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    for a in first {
        for b in second.iter().filter(|b| b.0 == a.0) {
            let common = starts(a.1, size, slide)
                .into_iter()
                .filter(|s| starts(b.1, size, slide).contains(s))
                .count();
            out.extend(std::iter::repeat_n((a.2, b.2), common));
        }
    }
    sorted(out)
}

#[test]
fn window_joins_pair_records_of_a_key_in_each_window() {
    let first = ticks(600, 9, 5, 0);
    let second = ticks(250, 7, 12, 10_000);
    for (size, slide) in [(100, 100), (100, 40)] {
        let want = join_reference(&first, &second, size, slide);
        assert!(want.len() > 500, "{}", want.len());
        for parallelism in [1, 2] {
            for backend in [StateBackend::Heap, StateBackend::rocksdb()] {
                let env = StreamExecutionEnvironment::new();
                env.set_parallelism(parallelism)
                    .set_state_backend(backend.clone());
                let joined = ticking(&env, first.clone()).join(&ticking(&env, second.clone()));
                let keyed = joined.where_(|a: &Tick| a.0).equal_to(|b: &Tick| b.0);
                let pairs = if size == slide {
                    keyed
                        .window(typeinfo_runtime::TumblingEventTimeWindows::of_millis(size))
                        .apply(|a, b| (a.2, b.2))
                } else {
                    keyed
                        .window(typeinfo_runtime::SlidingEventTimeWindows::of_millis(
                            size, slide,
                        ))
                        .apply(|a, b| (a.2, b.2))
                }
                .collect();
                env.execute("window join").unwrap();
                assert_eq!(
                    sorted(pairs.take()),
                    want,
                    "size {size} slide {slide} p{parallelism} {backend:?}"
                );
            }
        }
    }
}

/// A co-group gets both sides of every key and window, one side possibly empty; in batch
/// mode too.
#[test]
fn co_group_gets_both_sides_of_each_window() {
    let first = ticks(300, 5, 7, 0);
    let second = ticks(40, 3, 50, 10_000);
    // (key, window start, first ids, second ids), computed directly.
    let mut want = BTreeMap::<(u32, i64), (Vec<u64>, Vec<u64>)>::new();
    for a in &first {
        want.entry((a.0, a.1 - a.1 % 100)).or_default().0.push(a.2);
    }
    for b in &second {
        want.entry((b.0, b.1 - b.1 % 100)).or_default().1.push(b.2);
    }
    let want: Vec<_> = want
        .into_iter()
        .map(|((k, s), (a, b))| (k, s, a, b))
        .collect();
    assert!(want.iter().any(|w| w.3.is_empty()) && want.iter().any(|w| !w.3.is_empty()));
    for mode in [RuntimeMode::Streaming, RuntimeMode::Batch] {
        let env = StreamExecutionEnvironment::new();
        env.set_parallelism(2).set_runtime_mode(mode);
        let groups = ticking(&env, first.clone())
            .co_group(&ticking(&env, second.clone()))
            .where_(|a: &Tick| a.0)
            .equal_to(|b: &Tick| b.0)
            .window(typeinfo_runtime::TumblingEventTimeWindows::of_millis(100))
            .apply(|key, window, a, b, out| {
                // Arrival order interleaves the two source subtasks: compare as sets.
                out.push((
                    *key,
                    window.start,
                    sorted(a.iter().map(|t| t.2).collect::<Vec<_>>()),
                    sorted(b.iter().map(|t| t.2).collect::<Vec<_>>()),
                ));
            })
            .collect();
        env.execute("co-group").unwrap();
        assert_eq!(sorted(groups.take()), want, "{mode:?}");
    }
}

/// Every `(first id, second id)` with equal keys and `lo <= b.ts - a.ts <= hi`.
fn interval_reference(first: &[Tick], second: &[Tick], lo: i64, hi: i64) -> Vec<(u64, u64, i64)> {
    let mut out = Vec::new();
    for a in first {
        for b in second {
            if a.0 == b.0 && (lo..=hi).contains(&(b.1 - a.1)) {
                out.push((a.2, b.2, a.1.max(b.1)));
            }
        }
    }
    sorted(out)
}

fn interval_job(
    first: &[Tick],
    second: &[Tick],
    (lower, upper, lower_exclusive, upper_exclusive): (i64, i64, bool, bool),
    parallelism: u32,
    backend: StateBackend,
    mode: RuntimeMode,
) -> Vec<(u64, u64, i64)> {
    let env = StreamExecutionEnvironment::new();
    env.set_parallelism(parallelism)
        .set_state_backend(backend)
        .set_runtime_mode(mode);
    let mut join = ticking(&env, first.to_vec())
        .key_by(|a: &Tick| a.0)
        .interval_join(&ticking(&env, second.to_vec()).key_by(|b: &Tick| b.0))
        .between(lower, upper);
    if lower_exclusive {
        join = join.lower_bound_exclusive();
    }
    if upper_exclusive {
        join = join.upper_bound_exclusive();
    }
    let pairs = join
        .process(
            |a: &Tick,
             b: &Tick,
             ctx: &mut typeinfo_runtime::JoinContext<'_, '_, u32, (u64, u64, i64)>| {
                assert_eq!(*ctx.key(), a.0);
                assert_eq!((ctx.left_timestamp(), ctx.right_timestamp()), (a.1, b.1));
                let ts = ctx.timestamp();
                ctx.collect((a.2, b.2, ts));
                Ok(())
            },
        )
        .collect();
    env.execute("interval join").unwrap();
    sorted(pairs.take())
}

/// Pairs within the interval, once each, whichever input brings the second record, with
/// inclusive and exclusive bounds and an interval before the first record; at p1 and p2, on
/// both backends, in streaming and batch mode.
#[test]
fn interval_joins_pair_records_within_the_interval() {
    let first = ticks(500, 6, 4, 0);
    let second = ticks(400, 5, 5, 10_000);
    for bounds in [
        (0, 20, false, false),
        (-15, 10, true, true),
        (-30, -10, false, true),
    ] {
        let lo = bounds.0 + i64::from(bounds.2);
        let hi = bounds.1 - i64::from(bounds.3);
        let want = interval_reference(&first, &second, lo, hi);
        assert!(want.len() > 100, "{bounds:?}: {}", want.len());
        for parallelism in [1, 2] {
            for backend in [StateBackend::Heap, StateBackend::rocksdb()] {
                for mode in [RuntimeMode::Streaming, RuntimeMode::Batch] {
                    assert_eq!(
                        interval_job(&first, &second, bounds, parallelism, backend.clone(), mode),
                        want,
                        "{bounds:?} p{parallelism} {backend:?} {mode:?}"
                    );
                }
            }
        }
    }
}

/// A lower bound beyond the upper bound fails the job with a clear message.
#[test]
fn an_empty_interval_is_refused() {
    let env = StreamExecutionEnvironment::new();
    ticking(&env, ticks(10, 2, 1, 0))
        .key_by(|a: &Tick| a.0)
        .interval_join(&ticking(&env, ticks(10, 2, 1, 100)).key_by(|b: &Tick| b.0))
        .between(5, 5)
        .lower_bound_exclusive()
        .process(
            |_: &Tick, _: &Tick, _: &mut typeinfo_runtime::JoinContext<'_, '_, u32, u64>| Ok(()),
        )
        .collect();
    let err = env.execute("empty interval").unwrap_err();
    assert!(
        err.to_string().contains("lower bound must not exceed"),
        "{err}"
    );
}

/// A two-input job (an interval join of two paced sources) whose operator after the join
/// fails once at its 3rd checkpoint restarts from its latest checkpoint inside `execute`:
/// the published output is exactly the failure-free result, nothing lost or repeated (the
/// join's waiting records and timers, and both sources' positions, come back from the
/// checkpoint).
#[test]
fn a_two_input_job_restarts_from_its_checkpoint_with_exactly_once_output() {
    let dir = tempfile::tempdir().unwrap();
    let env = StreamExecutionEnvironment::new();
    env.enable_checkpointing(CheckpointConfig::new(
        dir.path().join("checkpoints"),
        Duration::from_millis(20),
    ))
    .set_restart_strategy(RestartStrategy::FixedDelay {
        attempts: 2,
        delay: Duration::from_millis(10),
    });
    let left = |v: u64| -> Tick { ((v % 11) as u32, v as i64, v) };
    let right = |v: u64| -> Tick { (((v * 3) % 11) as u32, (v + v / 2) as i64, 100_000 + v) };
    let paced = |count: u64, name: &str| {
        env.from_source(
            Paced {
                count,
                per_second: 40_000.0,
                hold_last_until_checkpoint: 3,
            },
            WatermarkStrategy::no_watermarks(),
            name,
        )
    };
    let timestamps = || {
        WatermarkStrategy::for_monotonous_timestamps()
            .with_timestamp_assigner(|e: &Tick, _| e.1)
            .emit_per_event()
    };
    let opened = Arc::new(AtomicU32::new(0));
    paced(6_000, "left")
        .map(left)
        .assign_timestamps_and_watermarks(timestamps())
        .key_by(|a: &Tick| a.0)
        .interval_join(
            &paced(4_000, "right")
                .map(right)
                .assign_timestamps_and_watermarks(timestamps())
                .key_by(|b: &Tick| b.0),
        )
        .between(-3, 3)
        .process(
            |a: &Tick, b: &Tick, ctx: &mut typeinfo_runtime::JoinContext<'_, '_, u32, String>| {
                ctx.collect(format!("{},{}", a.2, b.2));
                Ok(())
            },
        )
        .uid("join")
        .transform(
            "Fails once",
            FailAtThirdCheckpoint {
                failed_once: Arc::new(AtomicBool::new(false)),
                always: false,
                opened: Arc::clone(&opened),
            },
        )
        .uid("fails")
        .write_as_text(dir.path().join("out"));
    let result = env.execute("two inputs restart").unwrap();
    assert!(
        result.metric("job.numRestarts") >= 1,
        "the job restarted (completed checkpoints: {})",
        result.metric("job.numCompletedCheckpoints")
    );
    assert!(opened.load(Ordering::SeqCst) >= 2);
    let lefts: Vec<Tick> = (0..6_000).map(left).collect();
    let rights: Vec<Tick> = (0..4_000).map(right).collect();
    let want: Vec<String> = sorted(
        interval_reference(&lefts, &rights, -3, 3)
            .into_iter()
            .map(|(a, b, _)| format!("{a},{b}"))
            .collect(),
    );
    assert!(want.len() > 2_000, "{}", want.len());
    assert_eq!(common::published(&dir.path().join("out")), want);
}
