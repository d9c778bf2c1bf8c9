//! One behaviour suite, run against every backend (parametrized by a macro, not copied).
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test (or bench) panics on what it does not expect

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use typeinfo::{TypeInfo, TypeSerializer};
use typeinfo_state::*;

/// A backend of all key groups of max parallelism 128 with a manual clock.
pub trait Factory {
    type Backend: KeyedStateBackend<String>;
    fn create(&self, dir: &Path, options: BackendOptions) -> Result<Self::Backend>;
}

pub struct Heap;
impl Factory for Heap {
    type Backend = HeapKeyedStateBackend<String>;
    fn create(&self, _dir: &Path, options: BackendOptions) -> Result<Self::Backend> {
        HeapKeyedStateBackend::new(options)
    }
}

/// RocksDB with its write cache of `write_cache_bytes` (the default, one so small that
/// almost every access flushes it, or none).
pub struct RocksDb {
    pub write_cache_bytes: usize,
}
impl Factory for RocksDb {
    type Backend = RocksDbKeyedStateBackend<String>;
    fn create(&self, dir: &Path, options: BackendOptions) -> Result<Self::Backend> {
        RocksDbKeyedStateBackend::open(
            &dir.join("db"),
            options,
            RocksDbOptions::default()
                .managed_memory_bytes(8 << 20)
                .write_cache_bytes(self.write_cache_bytes),
        )
    }
}

#[derive(TypeInfo, Debug, Clone, PartialEq)]
pub struct Avg {
    pub count: u64,
    pub sum: i64,
}

pub struct AvgFn;
impl AggregateFunction<i64, Avg, f64> for AvgFn {
    fn create_accumulator(&self) -> Avg {
        Avg { count: 0, sum: 0 }
    }
    fn add(&self, value: &i64, acc: &mut Avg) {
        acc.count += 1;
        acc.sum += value;
    }
    fn get_result(&self, acc: &Avg) -> f64 {
        acc.sum as f64 / acc.count as f64
    }
    fn merge(&self, a: Avg, b: Avg) -> Avg {
        Avg {
            count: a.count + b.count,
            sum: a.sum + b.sum,
        }
    }
}

pub fn options(clock: &ManualClock) -> BackendOptions {
    BackendOptions::new(128, KeyGroupRange::all(128))
        .expect("valid options")
        .clock(Arc::new(clock.clone()))
}

pub fn k(s: &str) -> String {
    s.to_owned()
}

pub fn value_state<F: Factory>(f: F) -> Result<()> {
    let dir = tempfile::tempdir().map_err(|e| Error::InvalidConfig(e.to_string()))?;
    let clock = ManualClock::new(0);
    let mut b = f.create(dir.path(), options(&clock))?;
    let count = b.value_state::<(), u64>(&ValueStateDescriptor::new("count"))?;
    let with_default =
        b.value_state::<(), String>(&ValueStateDescriptor::new("label").with_default(k("none")))?;
    assert!(matches!(count.value(&mut b, &()), Err(Error::NoCurrentKey)));
    b.set_current_key(&k("a"))?;
    assert_eq!(count.value(&mut b, &())?, None);
    assert_eq!(with_default.value(&mut b, &())?, Some(k("none")));
    count.update(&mut b, &(), 1)?;
    b.set_current_key(&k("b"))?;
    count.update(&mut b, &(), 2)?;
    assert_eq!(count.value(&mut b, &())?, Some(2));
    b.set_current_key(&k("a"))?;
    assert_eq!(count.value(&mut b, &())?, Some(1));
    // `modify`: in place when there is a value, made when there is none (or nothing).
    count.modify(&mut b, &(), |v| {
        *v.expect("a's value") += 10;
        None
    })?;
    assert_eq!(count.value(&mut b, &())?, Some(11));
    b.set_current_key(&k("c"))?;
    count.modify(&mut b, &(), |v| {
        assert!(v.is_none(), "c has no value");
        None
    })?;
    assert_eq!(count.value(&mut b, &())?, None, "nothing stored");
    count.modify(&mut b, &(), |v| v.map_or(Some(7), |_| None))?;
    assert_eq!(count.value(&mut b, &())?, Some(7));
    count.clear(&mut b, &())?;
    with_default.modify(&mut b, &(), |v| {
        v.expect("the default").push('!');
        None
    })?;
    assert_eq!(with_default.value(&mut b, &())?, Some(k("none!")));
    b.set_current_key(&k("a"))?;
    assert_eq!(
        count.take(&mut b, &())?,
        Some(11),
        "take hands the value over"
    );
    assert_eq!(count.value(&mut b, &())?, None, "and removes it");
    assert_eq!(count.take(&mut b, &())?, None);
    count.update(&mut b, &(), 11)?;
    count.clear(&mut b, &())?;
    assert_eq!(count.value(&mut b, &())?, None);
    let mut keys = b.keys(count.id(), &())?;
    keys.sort();
    assert_eq!(keys, vec![k("b")]);
    // Registering again returns the same state; another type is refused.
    assert_eq!(
        b.value_state::<(), u64>(&ValueStateDescriptor::new("count"))?
            .id(),
        count.id()
    );
    assert!(matches!(
        b.value_state::<(), i32>(&ValueStateDescriptor::new("count")),
        Err(Error::StateMismatch { .. })
    ));
    assert!(matches!(
        b.list_state::<(), u64>(&ListStateDescriptor::new("count")),
        Err(Error::StateMismatch { .. })
    ));
    Ok(())
}

pub fn namespaces<F: Factory>(f: F) -> Result<()> {
    let dir = tempfile::tempdir().map_err(|e| Error::InvalidConfig(e.to_string()))?;
    let clock = ManualClock::new(0);
    let mut b = f.create(dir.path(), options(&clock))?;
    let sum = b.value_state::<(i64, i64), i64>(&ValueStateDescriptor::new("sum"))?;
    b.set_current_key(&k("a"))?;
    sum.update(&mut b, &(0, 10), 5)?;
    sum.update(&mut b, &(10, 20), 7)?;
    assert_eq!(sum.value(&mut b, &(0, 10))?, Some(5));
    assert_eq!(sum.value(&mut b, &(10, 20))?, Some(7));
    assert_eq!(sum.value(&mut b, &(20, 30))?, None);
    b.set_current_key(&k("ab"))?;
    assert_eq!(
        sum.value(&mut b, &(0, 10))?,
        None,
        "key `a`'s state must not show under key `ab`"
    );
    assert_eq!(b.keys(sum.id(), &(10i64, 20i64))?, vec![k("a")]);
    assert!(
        matches!(
            b.keys(sum.id(), &(10i32, 20i32)),
            Err(Error::StateMismatch { .. })
        ),
        "a namespace of another type is refused"
    );
    Ok(())
}

pub fn list_state<F: Factory>(f: F) -> Result<()> {
    let dir = tempfile::tempdir().map_err(|e| Error::InvalidConfig(e.to_string()))?;
    let clock = ManualClock::new(0);
    let mut b = f.create(dir.path(), options(&clock))?;
    let list = b.list_state::<u32, String>(&ListStateDescriptor::new("events"))?;
    b.set_current_key(&k("a"))?;
    assert_eq!(list.get(&mut b, &1)?, Vec::<String>::new());
    list.add(&mut b, &1, k("x"))?;
    list.add(&mut b, &1, k("y"))?;
    list.add(&mut b, &2, k("z"))?;
    assert_eq!(list.get(&mut b, &1)?, vec![k("x"), k("y")]);
    let mut seen = Vec::new();
    list.for_each(&mut b, &1, |v| seen.push(v.clone()))?;
    assert_eq!(
        seen,
        vec![k("x"), k("y")],
        "for_each shows the list in order"
    );
    list.for_each(&mut b, &9, |v| seen.push(v.clone()))?;
    assert_eq!(seen.len(), 2, "no list: nothing to show");
    list.merge_namespaces(&mut b, &3, &[1, 2])?;
    assert_eq!(list.get(&mut b, &3)?, vec![k("x"), k("y"), k("z")]);
    assert_eq!(list.get(&mut b, &1)?, Vec::<String>::new());
    list.update(&mut b, &3, vec![k("only")])?;
    assert_eq!(list.get(&mut b, &3)?, vec![k("only")]);
    list.update(&mut b, &3, vec![])?;
    assert_eq!(list.get(&mut b, &3)?, Vec::<String>::new());
    list.add(&mut b, &4, k("w"))?;
    list.clear(&mut b, &4)?;
    assert_eq!(list.get(&mut b, &4)?, Vec::<String>::new());
    Ok(())
}

pub fn map_state<F: Factory>(f: F) -> Result<()> {
    let dir = tempfile::tempdir().map_err(|e| Error::InvalidConfig(e.to_string()))?;
    let clock = ManualClock::new(0);
    let mut b = f.create(dir.path(), options(&clock))?;
    let map = b.map_state::<(), i64, String>(&MapStateDescriptor::new("by_ts"))?;
    b.set_current_key(&k("a"))?;
    assert!(map.is_empty(&mut b, &())?);
    for ts in [5i64, -3, 100, 0, -1000] {
        map.put(&mut b, &(), ts, format!("v{ts}"))?;
    }
    map.put(&mut b, &(), 5, k("five"))?;
    assert_eq!(map.get(&mut b, &(), &5)?, Some(k("five")));
    assert!(map.contains(&mut b, &(), &-3)?);
    map.remove(&mut b, &(), &-3)?;
    assert!(!map.contains(&mut b, &(), &-3)?);
    let keys: Vec<i64> = map
        .entries(&mut b, &())?
        .into_iter()
        .map(|(k, _)| k)
        .collect();
    assert_eq!(
        keys,
        vec![-1000, 0, 5, 100],
        "iteration follows the user key's order"
    );
    b.set_current_key(&k("b"))?;
    assert!(map.is_empty(&mut b, &())?);
    b.set_current_key(&k("a"))?;
    map.clear(&mut b, &())?;
    assert!(map.is_empty(&mut b, &())?);
    Ok(())
}

pub fn reducing_and_aggregating<F: Factory>(f: F) -> Result<()> {
    let dir = tempfile::tempdir().map_err(|e| Error::InvalidConfig(e.to_string()))?;
    let clock = ManualClock::new(0);
    let mut b = f.create(dir.path(), options(&clock))?;
    let max = b
        .reducing_state::<u8, i64>(&ReducingStateDescriptor::new("max", |a: &i64, b: &i64| {
            *a.max(b)
        }))?;
    let avg =
        b.aggregating_state::<u8, i64, Avg, f64>(&AggregatingStateDescriptor::new("avg", AvgFn))?;
    b.set_current_key(&k("a"))?;
    for (ns, v) in [(1u8, 3i64), (1, 9), (1, -2), (2, 4)] {
        max.add(&mut b, &ns, v)?;
        avg.add(&mut b, &ns, &v)?;
    }
    assert_eq!(max.get(&mut b, &1)?, Some(9));
    assert_eq!(avg.get(&mut b, &1)?, Some(10.0 / 3.0));
    assert_eq!(
        avg.accumulator(&mut b, &1)?,
        Some(Avg { count: 3, sum: 10 })
    );
    max.merge_namespaces(&mut b, &3, &[1, 2])?;
    avg.merge_namespaces(&mut b, &3, &[1, 2])?;
    assert_eq!(max.get(&mut b, &3)?, Some(9));
    assert_eq!(
        avg.accumulator(&mut b, &3)?,
        Some(Avg { count: 4, sum: 14 })
    );
    assert_eq!(max.get(&mut b, &1)?, None);
    Ok(())
}

pub fn ttl<F: Factory>(f: F) -> Result<()> {
    let dir = tempfile::tempdir().map_err(|e| Error::InvalidConfig(e.to_string()))?;
    let clock = ManualClock::new(1_000);
    let mut b = f.create(dir.path(), options(&clock))?;
    let minute = Duration::from_secs(60);
    let on_write = b.value_state::<(), u32>(
        &ValueStateDescriptor::new("on_write").with_ttl(StateTtlConfig::new(minute)),
    )?;
    let on_read = b.value_state::<(), u32>(
        &ValueStateDescriptor::new("on_read")
            .with_ttl(StateTtlConfig::new(minute).update_on_read_and_write()),
    )?;
    let visible = b.value_state::<(), u32>(
        &ValueStateDescriptor::new("visible")
            .with_ttl(StateTtlConfig::new(minute).return_expired_if_not_cleaned_up()),
    )?;
    let list = b.list_state::<(), u32>(
        &ListStateDescriptor::new("list").with_ttl(StateTtlConfig::new(minute)),
    )?;
    let map = b.map_state::<(), u32, u32>(
        &MapStateDescriptor::new("map").with_ttl(StateTtlConfig::new(minute)),
    )?;
    b.set_current_key(&k("a"))?;
    on_write.update(&mut b, &(), 1)?;
    on_read.update(&mut b, &(), 2)?;
    visible.update(&mut b, &(), 3)?;
    list.add(&mut b, &(), 10)?;
    map.put(&mut b, &(), 1, 100)?;
    clock.advance(Duration::from_secs(40));
    list.add(&mut b, &(), 11)?;
    map.put(&mut b, &(), 2, 200)?;
    assert_eq!(
        on_read.value(&mut b, &())?,
        Some(2),
        "a read refreshes `on_read`"
    );
    assert_eq!(on_write.value(&mut b, &())?, Some(1));
    clock.advance(Duration::from_secs(30));
    assert_eq!(on_write.value(&mut b, &())?, None, "70 s after its write");
    assert_eq!(
        on_read.value(&mut b, &())?,
        Some(2),
        "30 s after its last read"
    );
    assert_eq!(
        visible.value(&mut b, &())?,
        Some(3),
        "expired but not cleaned up"
    );
    assert_eq!(on_write.take(&mut b, &())?, None, "take: expired is gone");
    assert_eq!(
        visible.take(&mut b, &())?,
        Some(3),
        "take: as visible as value"
    );
    assert_eq!(visible.value(&mut b, &())?, None, "taken");
    let mut seen = Vec::new();
    list.for_each(&mut b, &(), |v| seen.push(*v))?;
    assert_eq!(seen, vec![11], "for_each passes over expired elements");
    assert_eq!(
        list.get(&mut b, &())?,
        vec![11],
        "elements expire one by one"
    );
    assert_eq!(
        map.entries(&mut b, &())?,
        vec![(2, 200)],
        "entries expire one by one"
    );
    // A full snapshot leaves expired values out.
    clock.advance(Duration::from_secs(120));
    let snapshot = b.snapshot(&dir.path().join("ttl.kstate"))?;
    assert_eq!(snapshot.entries.values().sum::<u64>(), 0, "{snapshot:?}");
    Ok(())
}

pub fn snapshot_and_restore<F: Factory>(f: F) -> Result<()> {
    let dir = tempfile::tempdir().map_err(|e| Error::InvalidConfig(e.to_string()))?;
    let clock = ManualClock::new(0);
    let mut b = f.create(&dir.path().join("a"), options(&clock))?;
    fill(&mut b)?;
    let path = dir.path().join("full.kstate");
    let snapshot = b.snapshot(&path)?;
    assert_eq!(snapshot.entries.get("count"), Some(&50));

    let mut restored = f.create(&dir.path().join("b"), options(&clock))?;
    register(&mut restored)?;
    let report = restored.restore(&[&path])?;
    assert!(report.migrated.is_empty());
    check(&mut restored, 0..50)
}

/// Writes fifty keys' worth of every kind of state.
pub fn fill<B: KeyedStateBackend<String>>(b: &mut B) -> Result<()> {
    let (count, list, map) = register(b)?;
    for i in 0..50u64 {
        b.set_current_key(&format!("key-{i}"))?;
        count.update(b, &(), i)?;
        list.add(b, &(), i as i32)?;
        list.add(b, &(), -(i as i32))?;
        map.put(b, &(), format!("m{i}"), i * 10)?;
    }
    Ok(())
}

type States = (
    ValueState<(), u64>,
    ListState<(), i32>,
    MapState<(), String, u64>,
);

pub fn register<B: KeyedStateBackend<String>>(b: &mut B) -> Result<States> {
    Ok((
        b.value_state(&ValueStateDescriptor::new("count"))?,
        b.list_state(&ListStateDescriptor::new("list"))?,
        b.map_state(&MapStateDescriptor::new("map"))?,
    ))
}

/// Checks the state `fill` wrote for the keys in `range` that this backend holds.
pub fn check<B: KeyedStateBackend<String>>(b: &mut B, range: std::ops::Range<u64>) -> Result<()> {
    let (count, list, map) = register(b)?;
    let mut seen = 0;
    for i in range {
        let key = format!("key-{i}");
        match b.set_current_key(&key) {
            Err(Error::KeyGroupOutOfRange { .. }) => continue,
            other => other?,
        }
        seen += 1;
        assert_eq!(count.value(b, &())?, Some(i), "{key}");
        assert_eq!(list.get(b, &())?, vec![i as i32, -(i as i32)], "{key}");
        assert_eq!(
            map.entries(b, &())?,
            vec![(format!("m{i}"), i * 10)],
            "{key}"
        );
    }
    assert!(seen > 0, "no key of the range is in this backend");
    Ok(())
}

/// Elements that serialize to no bytes cannot be counted back out of a list: registering
/// such a list is refused with a message (with TTL each element has its timestamp, and works).
pub fn lists_of_elements_without_bytes<F: Factory>(f: F) -> Result<()> {
    let dir = tempfile::tempdir().map_err(|e| Error::InvalidConfig(e.to_string()))?;
    let clock = ManualClock::new(0);
    let mut b = f.create(dir.path(), options(&clock))?;
    let refused = b.list_state::<(), ()>(&ListStateDescriptor::new("ticks"));
    let message = refused.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(
        message.contains("ticks") && message.contains("no bytes"),
        "refused with a message naming the state: {message}"
    );
    let ttl = StateTtlConfig::new(Duration::from_secs(60));
    let ticks =
        b.list_state::<(), ()>(&ListStateDescriptor::new("ticks with ttl").with_ttl(ttl))?;
    b.set_current_key(&k("a"))?;
    ticks.add(&mut b, &(), ())?;
    ticks.add(&mut b, &(), ())?;
    assert_eq!(ticks.get(&mut b, &())?, vec![(), ()]);
    Ok(())
}

/// Values of collections of elements that serialize to no bytes: each value (each entry of a
/// snapshot, each element of a list) has its own budget of `MAX_ZERO_SIZED_ITEMS` such
/// elements, when written and when read, so that many of them fit the state, a checkpoint
/// and a restore, while one value over the budget is refused when written (it could not be
/// read back).
type UnitStates = (ValueState<(), Vec<()>>, ListState<(), Vec<()>>);

pub fn values_of_zero_sized_elements<F: Factory>(f: F) -> Result<()> {
    let dir = tempfile::tempdir().map_err(|e| Error::InvalidConfig(e.to_string()))?;
    let clock = ManualClock::new(0);
    let big = typeinfo::MAX_ZERO_SIZED_ITEMS * 3 / 4;
    let register = |b: &mut F::Backend| -> Result<UnitStates> {
        Ok((
            b.value_state(&ValueStateDescriptor::new("units"))?,
            b.list_state(&ListStateDescriptor::new("unit lists"))?,
        ))
    };
    let mut b = f.create(&dir.path().join("a"), options(&clock))?;
    let (units, lists) = register(&mut b)?;
    for i in 0..4 {
        b.set_current_key(&k(&format!("key-{i}")))?;
        units.update(&mut b, &(), vec![(); big])?;
        lists.add(&mut b, &(), vec![(); big])?;
        lists.add(&mut b, &(), vec![(); big])?;
    }
    lists.update(
        &mut b,
        &(),
        vec![vec![(); big], vec![(); big], vec![(); big]],
    )?;
    assert_eq!(lists.get(&mut b, &())?.len(), 3);
    let path = dir.path().join("units.kstate");
    b.snapshot(&path)?;

    // One value over the budget: refused when serialized (RocksDB at the update, the heap,
    // which keeps objects, at the snapshot), never written where a restore would fail.
    let mut over = f.create(&dir.path().join("c"), options(&clock))?;
    let (too_many, _) = register(&mut over)?;
    over.set_current_key(&k("key-0"))?;
    let refused = too_many
        .update(&mut over, &(), vec![(); typeinfo::MAX_ZERO_SIZED_ITEMS + 1])
        .and_then(|()| over.snapshot(&dir.path().join("over.kstate")).map(|_| ()));
    let message = refused.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(message.contains("no bytes"), "{message}");

    let mut restored = f.create(&dir.path().join("b"), options(&clock))?;
    let (units, lists) = register(&mut restored)?;
    restored.restore(&[&path])?;
    for i in 0..4 {
        restored.set_current_key(&k(&format!("key-{i}")))?;
        assert_eq!(units.value(&mut restored, &())?.map(|v| v.len()), Some(big));
        let elements = lists.get(&mut restored, &())?;
        assert!(elements.iter().all(|e| e.len() == big));
        assert_eq!(elements.len(), if i == 3 { 3 } else { 2 });
    }
    Ok(())
}

/// Lazy iteration (`iter`, `keys`, `values`, `is_empty`) gives what the eager `entries` gives,
/// under one key and namespace only.
pub fn lazy_map_iteration<F: Factory>(f: F) -> Result<()> {
    let dir = tempfile::tempdir().map_err(|e| Error::InvalidConfig(e.to_string()))?;
    let clock = ManualClock::new(0);
    let mut b = f.create(dir.path(), options(&clock))?;
    let map = b.map_state::<u8, i64, String>(&MapStateDescriptor::new("lazy"))?;
    b.set_current_key(&k("a"))?;
    assert!(map.is_empty(&mut b, &1)?);
    assert_eq!(map.iter(&mut b, &1)?.count(), 0);
    for ts in (-500i64..500).rev().step_by(7) {
        map.put(&mut b, &1, ts, format!("v{ts}"))?;
    }
    map.put(&mut b, &2, 0, k("other namespace"))?;
    b.set_current_key(&k("ab"))?;
    map.put(&mut b, &1, 1, k("other key"))?;
    b.set_current_key(&k("a"))?;
    let eager = map.entries(&mut b, &1)?;
    assert_eq!(eager.len(), 143);
    let lazy: Vec<(i64, String)> = map.iter(&mut b, &1)?.collect::<Result<_>>()?;
    assert_eq!(lazy, eager);
    let keys: Vec<i64> = map.keys(&mut b, &1)?.collect::<Result<_>>()?;
    assert_eq!(
        keys,
        eager.iter().map(|(k, _)| *k).collect::<Vec<_>>(),
        "keys in the user key's order"
    );
    assert!(keys.windows(2).all(|w| w[0] < w[1]));
    let values: Vec<String> = map.values(&mut b, &1)?.collect::<Result<_>>()?;
    assert_eq!(
        values,
        eager.into_iter().map(|(_, v)| v).collect::<Vec<_>>()
    );
    assert!(!map.is_empty(&mut b, &1)?);
    // A partly consumed iterator reads no further than asked.
    let first_two: Vec<(i64, String)> = map.iter(&mut b, &1)?.take(2).collect::<Result<_>>()?;
    assert_eq!(first_two, vec![(-495, k("v-495")), (-488, k("v-488"))]);
    assert_eq!(
        map.iter(&mut b, &2)?.collect::<Result<Vec<_>>>()?,
        vec![(0, k("other namespace"))]
    );
    b.set_current_key(&k("ab"))?;
    assert_eq!(
        map.iter(&mut b, &1)?.collect::<Result<Vec<_>>>()?,
        vec![(1, k("other key"))],
        "key `a`'s entries never show under key `ab`"
    );
    map.clear(&mut b, &1)?;
    assert!(map.is_empty(&mut b, &1)?);
    assert_eq!(map.keys(&mut b, &1)?.count(), 0);
    Ok(())
}

/// `put_all` is `put` one by one (a later equal key wins, existing keys are overwritten);
/// `add_all` appends in order, and an empty `add_all` creates nothing.
pub fn put_all_and_add_all<F: Factory>(f: F) -> Result<()> {
    let dir = tempfile::tempdir().map_err(|e| Error::InvalidConfig(e.to_string()))?;
    let clock = ManualClock::new(0);
    let mut b = f.create(dir.path(), options(&clock))?;
    let map = b.map_state::<(), u32, String>(&MapStateDescriptor::new("map"))?;
    let list = b.list_state::<(), String>(&ListStateDescriptor::new("list"))?;
    b.set_current_key(&k("a"))?;
    map.put(&mut b, &(), 2, k("old"))?;
    map.put_all(
        &mut b,
        &(),
        [(3, k("c")), (2, k("b")), (1, k("a")), (3, k("last wins"))],
    )?;
    assert_eq!(
        map.entries(&mut b, &())?,
        vec![(1, k("a")), (2, k("b")), (3, k("last wins"))]
    );
    map.put_all(&mut b, &(), std::iter::empty())?;
    assert_eq!(map.entries(&mut b, &())?.len(), 3);
    // More entries than one write batch holds.
    map.put_all(&mut b, &(), (10..10_010).map(|i| (i, format!("{i}"))))?;
    assert_eq!(map.keys(&mut b, &())?.count(), 10_003);
    assert_eq!(map.get(&mut b, &(), &10_009)?, Some(k("10009")));

    list.add_all(&mut b, &(), Vec::<String>::new())?;
    assert_eq!(
        b.keys(list.id(), &())?,
        Vec::<String>::new(),
        "nothing created"
    );
    list.add(&mut b, &(), k("x"))?;
    list.add_all(&mut b, &(), [k("y"), k("z")])?;
    list.add_all(&mut b, &(), Vec::new())?;
    assert_eq!(list.get(&mut b, &())?, vec![k("x"), k("y"), k("z")]);
    list.update(&mut b, &(), vec![k("only")])?;
    list.add_all(&mut b, &(), [k("then")])?;
    assert_eq!(list.get(&mut b, &())?, vec![k("only"), k("then")]);
    list.update(&mut b, &(), Vec::new())?;
    assert_eq!(list.get(&mut b, &())?, Vec::<String>::new());
    b.set_current_key(&k("b"))?;
    list.add_all(&mut b, &(), [k("first")])?;
    assert_eq!(list.get(&mut b, &())?, vec![k("first")]);
    Ok(())
}

/// Lazy reads apply TTL as the eager ones do: expired entries are invisible (and gone
/// afterwards), `put_all` and `add_all` stamp what they write, a lazy read refreshes entries
/// under `OnReadAndWrite`, and `ReturnExpiredIfNotCleanedUp` still shows them.
pub fn lazy_reads_and_ttl<F: Factory>(f: F) -> Result<()> {
    let dir = tempfile::tempdir().map_err(|e| Error::InvalidConfig(e.to_string()))?;
    let clock = ManualClock::new(1_000);
    let mut b = f.create(dir.path(), options(&clock))?;
    let minute = Duration::from_secs(60);
    let map = b.map_state::<(), u32, u32>(
        &MapStateDescriptor::new("map").with_ttl(StateTtlConfig::new(minute)),
    )?;
    let on_read = b.map_state::<(), u32, u32>(
        &MapStateDescriptor::new("on_read")
            .with_ttl(StateTtlConfig::new(minute).update_on_read_and_write()),
    )?;
    let visible = b.map_state::<(), u32, u32>(
        &MapStateDescriptor::new("visible")
            .with_ttl(StateTtlConfig::new(minute).return_expired_if_not_cleaned_up()),
    )?;
    let list = b.list_state::<(), u32>(
        &ListStateDescriptor::new("list").with_ttl(StateTtlConfig::new(minute)),
    )?;
    // A map larger than the heap backend keeps as a sorted vector (a hash table there).
    let big = b.map_state::<(), u32, u32>(
        &MapStateDescriptor::new("big").with_ttl(StateTtlConfig::new(minute)),
    )?;
    b.set_current_key(&k("a"))?;
    map.put_all(&mut b, &(), [(1, 10), (2, 20)])?;
    big.put_all(&mut b, &(), (0..200).step_by(2).map(|i| (i, i)))?;
    on_read.put_all(&mut b, &(), [(1, 10)])?;
    visible.put_all(&mut b, &(), [(1, 10)])?;
    list.add_all(&mut b, &(), [1, 2])?;
    clock.advance(Duration::from_secs(40));
    map.put_all(&mut b, &(), [(3, 30)])?;
    big.put_all(&mut b, &(), (1..200).step_by(2).rev().map(|i| (i, i)))?;
    list.add_all(&mut b, &(), [3])?;
    assert_eq!(
        on_read.iter(&mut b, &())?.count(),
        1,
        "a lazy read refreshes"
    );
    clock.advance(Duration::from_secs(30));
    assert_eq!(
        map.iter(&mut b, &())?.collect::<Result<Vec<_>>>()?,
        vec![(3, 30)],
        "entries expire one by one"
    );
    assert_eq!(map.keys(&mut b, &())?.collect::<Result<Vec<_>>>()?, vec![3]);
    let odd: Vec<(u32, u32)> = (1..200).step_by(2).map(|i| (i, i)).collect();
    assert_eq!(
        big.iter(&mut b, &())?.collect::<Result<Vec<_>>>()?,
        odd,
        "a large map's entries expire one by one, the rest in order"
    );
    assert_eq!(big.get(&mut b, &(), &2)?, None);
    assert_eq!(big.entries(&mut b, &())?, odd);
    assert_eq!(
        map.values(&mut b, &())?.collect::<Result<Vec<_>>>()?,
        vec![30]
    );
    assert_eq!(map.entries(&mut b, &())?, vec![(3, 30)]);
    assert_eq!(
        on_read.iter(&mut b, &())?.collect::<Result<Vec<_>>>()?,
        vec![(1, 10)],
        "30 s after its last (lazy) read"
    );
    assert_eq!(
        visible.iter(&mut b, &())?.collect::<Result<Vec<_>>>()?,
        vec![(1, 10)],
        "expired but not cleaned up"
    );
    assert_eq!(
        list.get(&mut b, &())?,
        vec![3],
        "elements of add_all expire"
    );
    assert!(!map.is_empty(&mut b, &())?);
    clock.advance(Duration::from_secs(60));
    assert!(map.is_empty(&mut b, &())?, "every entry expired");
    assert_eq!(map.entries(&mut b, &())?, Vec::new());
    // What a lazy read found expired is gone, even where expired values are still shown.
    assert_eq!(map.get(&mut b, &(), &3)?, None);
    Ok(())
}

/// A key whose group the caller computed (the runtime's exchange does) is the same current
/// key as one set the usual way: what one writes the other reads, `current_key_group` is
/// that group, and a group outside the backend's range is refused as the key's would be.
pub fn key_group_given_by_the_caller<F: Factory>(f: F) -> Result<()> {
    let dir = tempfile::tempdir().map_err(|e| Error::InvalidConfig(e.to_string()))?;
    let clock = ManualClock::new(0);
    let range = KeyGroupRange::new(0, 63)?;
    let mut b = f.create(
        dir.path(),
        BackendOptions::new(128, range)?.clock(Arc::new(clock.clone())),
    )?;
    let count = b.value_state::<(), u64>(&ValueStateDescriptor::new("count"))?;
    let serializer = String::create_serializer(&typeinfo::SerializerConfig::default())?;
    let group_of = |key: &String| -> Result<u16> {
        let mut bytes = typeinfo::DataOutputView::new();
        serializer.serialize(key, &mut bytes)?;
        Ok(key_group_for_bytes(bytes.as_slice(), 128))
    };
    let (mut inside, mut outside) = (0, 0);
    for i in 0..200u64 {
        let key = format!("key-{i}");
        let group = group_of(&key)?;
        if !range.contains(group) {
            outside += 1;
            assert!(
                matches!(
                    b.set_current_key_in_group(&key, group),
                    Err(Error::KeyGroupOutOfRange { key_group, .. }) if key_group == group
                ),
                "{key}: group {group} is not this backend's"
            );
            continue;
        }
        inside += 1;
        if i % 2 == 0 {
            b.set_current_key_in_group(&key, group)?;
        } else {
            b.set_current_key(&key)?;
        }
        assert_eq!(b.current_key_group()?, group, "{key}");
        assert_eq!(b.current_key()?, &key);
        count.update(&mut b, &(), i)?;
    }
    assert!(
        inside > 0 && outside > 0,
        "{inside} keys inside, {outside} outside"
    );
    for i in 0..200u64 {
        let key = format!("key-{i}");
        let group = group_of(&key)?;
        if !range.contains(group) {
            continue;
        }
        // Read the other way round from the way it was written.
        if i % 2 == 0 {
            b.set_current_key(&key)?;
        } else {
            b.set_current_key_in_group(&key, group)?;
        }
        assert_eq!(count.value(&mut b, &())?, Some(i), "{key}");
    }
    Ok(())
}

#[macro_export]
macro_rules! backend_suite {
    ($module:ident, $factory:expr) => {
        mod $module {
            use super::*;
            #[test]
            fn value_state() -> Result<()> {
                super::value_state($factory)
            }
            #[test]
            fn namespaces() -> Result<()> {
                super::namespaces($factory)
            }
            #[test]
            fn list_state() -> Result<()> {
                super::list_state($factory)
            }
            #[test]
            fn map_state() -> Result<()> {
                super::map_state($factory)
            }
            #[test]
            fn reducing_and_aggregating() -> Result<()> {
                super::reducing_and_aggregating($factory)
            }
            #[test]
            fn ttl() -> Result<()> {
                super::ttl($factory)
            }
            #[test]
            fn snapshot_and_restore() -> Result<()> {
                super::snapshot_and_restore($factory)
            }
            #[test]
            fn lists_of_elements_without_bytes() -> Result<()> {
                super::lists_of_elements_without_bytes($factory)
            }
            #[test]
            fn values_of_zero_sized_elements() -> Result<()> {
                super::values_of_zero_sized_elements($factory)
            }
            #[test]
            fn lazy_map_iteration() -> Result<()> {
                super::lazy_map_iteration($factory)
            }
            #[test]
            fn put_all_and_add_all() -> Result<()> {
                super::put_all_and_add_all($factory)
            }
            #[test]
            fn lazy_reads_and_ttl() -> Result<()> {
                super::lazy_reads_and_ttl($factory)
            }
            #[test]
            fn key_group_given_by_the_caller() -> Result<()> {
                super::key_group_given_by_the_caller($factory)
            }
        }
    };
}

backend_suite!(heap, Heap);
backend_suite!(
    rocksdb,
    RocksDb {
        write_cache_bytes: DEFAULT_WRITE_CACHE_BYTES
    }
);
backend_suite!(
    rocksdb_tiny_write_cache,
    RocksDb {
        write_cache_bytes: 150
    }
);
backend_suite!(
    rocksdb_without_write_cache,
    RocksDb {
        write_cache_bytes: 0
    }
);
