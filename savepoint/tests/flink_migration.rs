//! A job moved from Apache Flink 2.3 to typeinfo, state and all (issue 31).
//!
//! `flink-compat/tests/flink/FlinkMigration.java` runs a keyed job in Flink 2.3 (a POJO
//! value state, list, map and reducing states, an event-time timer per key, a tumbling
//! event-time window with `reduce`, an operator list state, a broadcast state) twice:
//! uninterrupted over its whole input (`full.output`), and stopped with a canonical
//! savepoint after 550 of its 1,200 records, on the hashmap and on the RocksDB backend
//! (`half_<backend>/`, what it emitted until then in `half_<backend>.output`), with two
//! windows and every key's timer still pending. Here the savepoint is converted into a
//! typeinfo savepoint ([`typeinfo_savepoint::from_flink`]) and a typeinfo job with the
//! same logic, restored from it, reads the other 650 records: what Flink emitted before
//! the savepoint plus what typeinfo emits after it must be exactly Flink's uninterrupted
//! output, line for line, on both of typeinfo's backends, at Flink's parallelism and at
//! another one.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test panics on what it does not expect

use std::path::{Path, PathBuf};

use typeinfo::TypeInfo;
use typeinfo_flink_compat::savepoint::FlinkSavepoint;
use typeinfo_flink_compat::{FlinkType, IntSerializer, LongSerializer, StringSerializer};
use typeinfo_runtime::checkpoint::TimerState;
use typeinfo_runtime::window::TimeWindow;
use typeinfo_runtime::{
    assigner::TumblingEventTimeWindows, watermark::WatermarkStrategy, BroadcastContext,
    BroadcastStateDescriptor, KeyedBroadcastProcessFunction, OneInputOperator, OperatorContext,
    ReadOnlyContext, RestoreSettings, StateBackend, StateContext, StreamExecutionEnvironment,
    TimeDomain,
};
use typeinfo_savepoint::from_flink::{broadcast_state, operator_list_state, FlinkKeyedState};
use typeinfo_savepoint::{KeyedStateBootstrap, OperatorStateBootstrap, Savepoint, SavepointWriter};
use typeinfo_state::{
    KeyedStateBackend, ListState, ListStateDescriptor, MapState, MapStateDescriptor,
    OperatorListState, Redistribution, ReducingState, ReducingStateDescriptor, ValueState,
    ValueStateDescriptor,
};

const N: i64 = 1_200;
const HALF: i64 = 550;
const KEYS: i64 = 40;
const WINDOW_MS: i64 = 10_000;
const TIMER_BASE: i64 = 1_000_000_000;
const MAX_PARALLELISM: u32 = 128;

/// `FlinkMigration.Event`: a record.
#[derive(TypeInfo, Debug, Clone, PartialEq)]
#[typeinfo(flink_pojo = "FlinkMigration$Event")]
struct Event {
    key: String,
    value: i64,
    seq: i64,
}

/// `FlinkMigration.Order`: the POJO in value state `order`.
#[derive(TypeInfo, Debug, Clone, PartialEq)]
#[typeinfo(flink_pojo = "FlinkMigration$Order")]
struct Order {
    user: String,
    count: i64,
    total: f64,
}

fn goldens() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../flink-compat/tests/migration")
}

fn sum_descriptor() -> ReducingStateDescriptor<i64> {
    ReducingStateDescriptor::new("sum", |a: &i64, b: &i64| a + b)
}

fn merge(a: &Event, b: &Event) -> Event {
    Event {
        key: a.key.clone(),
        value: a.value + b.value,
        seq: a.seq.max(b.seq),
    }
}

/// The migration a user writes: each Flink state read through its Java type's layout and
/// written into the typeinfo operator that continues it.
fn convert(flink: &Path, out: &Path, parallelism: u32) -> typeinfo_savepoint::Result<Savepoint> {
    let flink = FlinkSavepoint::open(flink)?;

    let from = FlinkKeyedState::new(&flink, "stateful", StringSerializer)?;
    let mut stateful = KeyedStateBootstrap::<String>::new(MAX_PARALLELISM, parallelism)?;
    stateful
        .value_state_in(
            &ValueStateDescriptor::<Order>::new("order"),
            from.values::<(), _, _>("order", &Order::flink_serializer())?,
        )?
        .list_state_in(
            &ListStateDescriptor::<i64>::new("thirds"),
            from.lists::<(), _, _>("thirds", &LongSerializer)?,
        )?
        .map_state(
            &MapStateDescriptor::<String, i32>::new("buckets"),
            from.maps("buckets", &StringSerializer, &IntSerializer)?,
        )?
        .reducing_state_in(
            &sum_descriptor(),
            from.values::<(), _, _>("sum", &LongSerializer)?,
        )?
        .timers(
            TimerState::Operator,
            from.timers::<()>("_timer_state/event_user-timers")?,
        )?;
    let mut rules = OperatorStateBootstrap::new(parallelism)?;
    rules.broadcast_state::<String, String>(
        "rules",
        broadcast_state(&flink, "stateful", "rules")?,
    )?;
    let stateful = stateful.with_operator_state(rules)?;

    let from = FlinkKeyedState::new(&flink, "window", StringSerializer)?;
    let mut window = KeyedStateBootstrap::<String>::new(MAX_PARALLELISM, parallelism)?;
    window
        .reducing_state_in(
            &ReducingStateDescriptor::new("window-contents", merge),
            from.values::<TimeWindow, _, _>("window-contents", &Event::flink_serializer())?,
        )?
        .timers(
            TimerState::Window,
            from.timers::<TimeWindow>("_timer_state/event_window-timers")?,
        )?;

    let mut tagger = OperatorStateBootstrap::new(1)?;
    tagger.list_state(
        "seen",
        Redistribution::Split,
        operator_list_state::<i64>(&flink, "tagger", "seen")?,
    )?;

    SavepointWriter::new(MAX_PARALLELISM)?
        .with_keyed_state("stateful", stateful)?
        .with_keyed_state("window", window)?
        .with_operator_state("tagger", tagger)?
        .write(out)
}

/// Numbers the records (Flink's `tagger`: operator list state `seen`).
#[derive(Clone, Default)]
struct Tagger {
    seen: Option<OperatorListState<i64>>,
    count: i64,
}

impl OneInputOperator<(), Event, Event> for Tagger {
    fn initialize_state(&mut self, ctx: &mut StateContext<'_, ()>) -> typeinfo_runtime::Result<()> {
        self.seen = Some(
            ctx.operator_state()
                .list_state("seen", Redistribution::Split)?,
        );
        Ok(())
    }
    fn open(&mut self, ctx: &mut StateContext<'_, ()>) -> typeinfo_runtime::Result<()> {
        // The restored lists are there once every state is registered.
        if let Some(seen) = &self.seen {
            self.count = seen.get(ctx.operator_state())?.iter().sum();
        }
        Ok(())
    }
    fn process_element(
        &mut self,
        e: Event,
        ctx: &mut OperatorContext<'_, (), Event>,
    ) -> typeinfo_runtime::Result<()> {
        ctx.collect(Event {
            seq: self.count,
            ..e
        });
        self.count += 1;
        Ok(())
    }
    fn snapshot_state(
        &mut self,
        _checkpoint: u64,
        ctx: &mut StateContext<'_, ()>,
    ) -> typeinfo_runtime::Result<()> {
        if let Some(seen) = &self.seen {
            seen.update(ctx.operator_state(), vec![self.count])?;
        }
        Ok(())
    }
}

/// Flink's `Stateful`, state for state.
#[derive(Clone)]
struct Stateful {
    rules: BroadcastStateDescriptor<String, String>,
    states: Option<States>,
}

#[derive(Clone)]
struct States {
    order: ValueState<(), Order>,
    thirds: ListState<(), i64>,
    buckets: MapState<(), String, i32>,
    sum: ReducingState<(), i64>,
}

impl States {
    fn summary(
        &self,
        s: &mut typeinfo_runtime::KeyedBackend<String>,
    ) -> typeinfo_runtime::Result<(i64, usize, i64, usize)> {
        let count = self.order.value(s, &())?.map_or(0, |o| o.count);
        let thirds = self.thirds.get(s, &())?.len();
        let sum = self.sum.get(s, &())?.unwrap_or(0);
        let buckets = self.buckets.entries(s, &())?.len();
        Ok((count, thirds, sum, buckets))
    }
}

impl KeyedBroadcastProcessFunction<String, Event, String, String> for Stateful {
    fn open(
        &mut self,
        state: &mut typeinfo_runtime::KeyedBackend<String>,
    ) -> typeinfo_runtime::Result<()> {
        self.states = Some(States {
            order: state.value_state(&ValueStateDescriptor::new("order"))?,
            thirds: state.list_state(&ListStateDescriptor::new("thirds"))?,
            buckets: state.map_state(&MapStateDescriptor::new("buckets"))?,
            sum: state.reducing_state(&sum_descriptor())?,
        });
        Ok(())
    }

    fn process_element(
        &mut self,
        e: Event,
        ctx: &mut ReadOnlyContext<'_, String, String>,
    ) -> typeinfo_runtime::Result<()> {
        let st = self.states.clone().expect("opened");
        let s = ctx.state()?;
        let mut order = st.order.value(s, &())?.unwrap_or(Order {
            user: e.key.clone(),
            count: 0,
            total: 0.0,
        });
        order.count += 1;
        order.total += e.value as f64 * 0.5;
        st.order.update(s, &(), order.clone())?;
        if e.value % 3 == 0 {
            st.thirds.add(s, &(), e.value)?;
        }
        let bucket = format!("m{}", e.value % 7);
        let bc = st.buckets.get(s, &(), &bucket)?.unwrap_or(0) + 1;
        st.buckets.put(s, &(), bucket.clone(), bc)?;
        st.sum.add(s, &(), e.value)?;
        let thirds = st.thirds.get(s, &())?.len();
        let sum = st.sum.get(s, &())?.unwrap_or(0);
        let rule = ctx
            .broadcast_state(&self.rules)?
            .get(&format!("r{}", e.value % 3))
            .cloned()
            .unwrap_or_else(|| "null".to_owned());
        let key_index: i64 = e.key[1..].parse().expect("k<n>");
        ctx.register_event_time_timer(TIMER_BASE + key_index)?;
        ctx.collect(format!(
            "element {} {} seq={} count={} total={:.1} thirds={thirds} {bucket}={bc} sum={sum} rule={rule}",
            e.key, e.value, e.seq, order.count, order.total
        ));
        Ok(())
    }

    fn process_broadcast_element(
        &mut self,
        rule: String,
        ctx: &mut BroadcastContext<'_, String, String>,
    ) -> typeinfo_runtime::Result<()> {
        let (k, v) = rule.split_once('=').expect("k=v");
        ctx.broadcast_state(&self.rules)?
            .put(k.to_owned(), v.to_owned())?;
        Ok(())
    }

    fn on_timer(
        &mut self,
        timestamp: i64,
        _domain: TimeDomain,
        ctx: &mut ReadOnlyContext<'_, String, String>,
    ) -> typeinfo_runtime::Result<()> {
        let st = self.states.clone().expect("opened");
        let key = ctx.current_key().cloned().expect("a key");
        let (count, thirds, sum, buckets) = st.summary(ctx.state()?)?;
        ctx.collect(format!(
            "timer {key} {timestamp} count={count} sum={sum} thirds={thirds} buckets={buckets}"
        ));
        Ok(())
    }
}

/// The second half of the input (the first was Flink's).
fn rest() -> Vec<Event> {
    (HALF..N)
        .map(|i| Event {
            key: format!("k{}", i % KEYS),
            value: i,
            seq: 0,
        })
        .collect()
}

/// The job, restored from `savepoint`; its output lines.
fn run_rest(savepoint: &Path, backend: StateBackend, parallelism: u32) -> Vec<String> {
    let env = StreamExecutionEnvironment::new();
    env.set_parallelism(parallelism)
        .set_max_parallelism(MAX_PARALLELISM)
        .set_state_backend(backend)
        .restore_from(RestoreSettings {
            path: savepoint.to_owned(),
            allow_non_restored_state: false,
        });
    let rules_descriptor = BroadcastStateDescriptor::<String, String>::new("rules");
    // Flink's rules source sent its three rules before the savepoint; they are in the
    // broadcast state now, and this run sends none.
    let rules = env
        .from_collection(Vec::<String>::new())
        .uid("rules")
        .broadcast_with(&[&rules_descriptor]);
    let tagged = env
        .from_collection(rest())
        .uid("events")
        .assign_timestamps_and_watermarks(
            WatermarkStrategy::for_monotonous_timestamps()
                .with_timestamp_assigner(|e: &Event, _| e.value * 100)
                .emit_per_event(),
        )
        .transform("tagger", Tagger::default())
        .uid("tagger")
        .set_parallelism(1);
    let stateful = tagged
        .key_by(|e: &Event| e.key.clone())
        .connect(&rules)
        .process(Stateful {
            rules: rules_descriptor.clone(),
            states: None,
        })
        .uid("stateful");
    let windows = tagged
        .key_by(|e: &Event| e.key.clone())
        .window(TumblingEventTimeWindows::of_millis(WINDOW_MS))
        .reduce(merge)
        .uid("window")
        .map(|e: Event| format!("window {} {} seq={}", e.key, e.value, e.seq))
        .uid("window-lines");
    let out = stateful.union(&[windows]).collect();
    env.execute("migrated from Flink")
        .expect("the restored job runs");
    out.take()
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn a_flink_job_continues_in_typeinfo_from_its_savepoint() {
    let full = lines(&goldens().join("full.output"));
    assert_eq!(full.len(), 1_720, "the golden run's output");
    for flink_backend in ["hashmap", "rocksdb"] {
        let before = lines(&goldens().join(format!("half_{flink_backend}.output")));
        for (backend, parallelism) in [
            (StateBackend::Heap, 2),
            (StateBackend::rocksdb(), 2),
            (StateBackend::Heap, 3),
        ] {
            let what =
                format!("Flink {flink_backend} -> typeinfo {backend:?}, parallelism {parallelism}");
            let dir = tempfile::tempdir().unwrap();
            let converted = dir.path().join("converted");
            let savepoint = convert(
                &goldens().join(format!("half_{flink_backend}")),
                &converted,
                parallelism,
            )
            .unwrap_or_else(|e| panic!("{what}: {e}"));
            let report = typeinfo_savepoint::verify(&savepoint).expect("verify");
            assert!(report.is_ok(), "{what}: {:?}", report.problems);

            let after = run_rest(&converted, backend, parallelism);
            // k0's window [40000, 50000) (records 400, 440, 480) was all Flink's and still
            // pending: its contents and its timer came over. Its window [50000, 60000) holds
            // 520 from Flink and 560 from here. Its user timer fires at the end of the input.
            for line in [
                "window k0 1320 seq=480",
                "window k0 1080 seq=560",
                "timer k0 1000000000 count=30 sum=17400 thirds=10 buckets=7",
            ] {
                assert!(after.iter().any(|l| l == line), "{what}: no `{line}`");
            }
            let mut got: Vec<String> = before.iter().cloned().chain(after).collect();
            got.sort();
            assert_eq!(got.len(), full.len(), "{what}");
            let diff: Vec<(&String, &String)> = got
                .iter()
                .zip(&full)
                .filter(|(a, b)| a != b)
                .take(5)
                .collect();
            assert!(diff.is_empty(), "{what}: first differences {diff:#?}");
        }
    }
}

#[test]
fn a_state_read_as_another_type_is_refused_by_name() {
    let flink = FlinkSavepoint::open(goldens().join("half_hashmap")).unwrap();
    let from = FlinkKeyedState::<String, _>::new(&flink, "stateful", StringSerializer).unwrap();
    let error = from
        .values::<(), _, _>("order", &LongSerializer)
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("operator `stateful`, state `order`") && error.contains("incompatible"),
        "{error}"
    );
    let error = from
        .values::<TimeWindow, _, _>("sum", &LongSerializer)
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("VoidNamespace") && error.contains("TimeWindow"),
        "{error}"
    );
    let error = FlinkKeyedState::<String, _>::new(&flink, "no-such-uid", StringSerializer)
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("no-such-uid") && error.contains("stateful"),
        "{error}"
    );
    let error = from.timers::<()>("order").unwrap_err().to_string();
    assert!(error.contains("not a timer state"), "{error}");
    let error = broadcast_state::<String, i64>(&flink, "stateful", "rules")
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("state `rules`") && error.contains("i64"),
        "{error}"
    );
}

#[test]
fn a_damaged_flink_savepoint_converts_to_nothing_with_the_file_named() {
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("half_hashmap");
    std::fs::create_dir(&copy).unwrap();
    let mut largest = (0, PathBuf::new());
    for entry in std::fs::read_dir(goldens().join("half_hashmap")).unwrap() {
        let entry = entry.unwrap();
        let to = copy.join(entry.file_name());
        std::fs::copy(entry.path(), &to).unwrap();
        let len = entry.metadata().unwrap().len();
        if entry.file_name() != "_metadata" && len > largest.0 {
            largest = (len, to);
        }
    }
    let (len, victim) = largest;
    let bytes = std::fs::read(&victim).unwrap();
    std::fs::write(&victim, &bytes[..len as usize / 2]).unwrap();
    let out = dir.path().join("converted");
    let error = convert(&copy, &out, 2).unwrap_err().to_string();
    let name = victim.file_name().unwrap().to_string_lossy().into_owned();
    assert!(error.contains(&name), "{error}");
    assert!(!out.exists(), "nothing is written from a damaged savepoint");
}

/// `FlinkMigration.Order` as the Rust job has it now: `user` renamed `buyer` in Java (its
/// old name kept), `total` dropped, `region` added.
#[derive(TypeInfo, Debug, Clone, PartialEq)]
#[typeinfo(flink_pojo = "FlinkMigration$Order")]
struct OrderV2 {
    #[typeinfo(flink_alias = "user")]
    buyer: String,
    count: i64,
    region: Option<String>,
}

#[test]
fn a_pojo_whose_class_changed_migrates_while_it_is_converted() {
    let flink = FlinkSavepoint::open(goldens().join("half_rocksdb")).unwrap();
    let from = FlinkKeyedState::<String, _>::new(&flink, "stateful", StringSerializer).unwrap();
    let mut old: Vec<(String, (), Order)> = from
        .values::<(), _, _>("order", &Order::flink_serializer())
        .unwrap();
    let mut new = from.pojo_values::<(), OrderV2>("order").unwrap();
    old.sort_by(|a, b| a.0.cmp(&b.0));
    new.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(old.len(), 40);
    let expected: Vec<(String, (), OrderV2)> = old
        .into_iter()
        .map(|(key, (), o)| {
            let v2 = OrderV2 {
                buyer: o.user,
                count: o.count,
                region: None,
            };
            (key, (), v2)
        })
        .collect();
    assert_eq!(new, expected);
    // The strict reader refuses the changed class, naming what changed.
    let error = from
        .values::<(), OrderV2, _>("order", &OrderV2::flink_serializer())
        .unwrap_err()
        .to_string();
    assert!(error.contains("state `order`"), "{error}");

    /// `total` became a string: no migration reads a double as a string.
    #[derive(TypeInfo, Debug, Clone, PartialEq)]
    #[typeinfo(flink_pojo = "FlinkMigration$Order")]
    struct OrderTotalText {
        user: String,
        count: i64,
        total: String,
    }
    let error = from
        .pojo_values::<(), OrderTotalText>("order")
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("total") && error.contains("incompatible"),
        "{error}"
    );
}
