//! The general-purpose functions the queries are built from: a regular (unwindowed) join of
//! two keyed inputs, a final table per key emitted at the end of the input, and the lookup
//! join of q13's side table.

use std::sync::Arc;

use typeinfo_runtime::{
    AggregateFunction, Data, Error, Key, KeyedBackend, KeyedCoProcessFunction, KeyedContext,
    KeyedProcessFunction, Result, TimeDomain,
};
use typeinfo_state::{
    KeyedStateBackend, ListState, ListStateDescriptor, MapKey, MapState, MapStateDescriptor,
    ValueState, ValueStateDescriptor,
};

fn not_opened() -> Error {
    Error::function("a function was used before `open`")
}

/// The result of a pair of a regular join: a row, or nothing when the condition fails.
pub type PairFn<A, B, O> = Arc<dyn Fn(&A, &B) -> Option<O> + Send + Sync>;

/// The keyed lists of a join's first and second input.
type Lists<A, B> = (ListState<(), A>, ListState<(), B>);

/// The pairing function and the two keyed lists of a join of two inputs (one per input),
/// shared by [`RegularJoin`] and [`LookupJoin`].
struct PairedLists<A, B, O> {
    pair: PairFn<A, B, O>,
    /// The lists of the first and the second input (`None` until `open`).
    lists: Option<Lists<A, B>>,
}

impl<A, B, O> Clone for PairedLists<A, B, O> {
    fn clone(&self) -> Self {
        PairedLists {
            pair: Arc::clone(&self.pair),
            lists: None,
        }
    }
}

impl<A: Data, B: Data, O: Data> PairedLists<A, B, O> {
    fn new(pair: impl Fn(&A, &B) -> Option<O> + Send + Sync + 'static) -> Self {
        PairedLists {
            pair: Arc::new(pair),
            lists: None,
        }
    }

    fn open<K: Key>(&mut self, state: &mut KeyedBackend<K>, names: [&str; 2]) -> Result<()> {
        self.lists = Some((
            state.list_state(&ListStateDescriptor::new(names[0]))?,
            state.list_state(&ListStateDescriptor::new(names[1]))?,
        ));
        Ok(())
    }

    fn lists(&self) -> Result<&Lists<A, B>> {
        self.lists.as_ref().ok_or_else(not_opened)
    }

    /// Emits the rows of `a` with every record of the second input's list (read in place:
    /// only the rows are made, no copy of the list).
    fn pair_first<K: Key>(&self, a: &A, ctx: &mut KeyedContext<'_, K, O>) -> Result<()> {
        let mut rows = Vec::new();
        self.lists()?.1.for_each(ctx.state(), &(), |b| {
            rows.extend((self.pair)(a, b));
        })?;
        for row in rows {
            ctx.collect(row);
        }
        Ok(())
    }

    /// Emits the rows of every record of the first input's list with `b`.
    fn pair_second<K: Key>(&self, b: &B, ctx: &mut KeyedContext<'_, K, O>) -> Result<()> {
        let mut rows = Vec::new();
        self.lists()?.0.for_each(ctx.state(), &(), |a| {
            rows.extend((self.pair)(a, b));
        })?;
        for row in rows {
            ctx.collect(row);
        }
        Ok(())
    }
}

/// A regular inner join (Flink's unwindowed join): both inputs are kept in keyed list state
/// forever; a record is paired with every record of the other input already kept under its
/// key, then kept itself, so each matching pair is emitted exactly once, whichever side
/// arrives first.
pub struct RegularJoin<A, B, O>(PairedLists<A, B, O>);

impl<A, B, O> Clone for RegularJoin<A, B, O> {
    fn clone(&self) -> Self {
        RegularJoin(self.0.clone())
    }
}

impl<A: Data, B: Data, O: Data> RegularJoin<A, B, O> {
    /// A join whose pairs `pair` turns into rows (or refuses).
    pub fn new(pair: impl Fn(&A, &B) -> Option<O> + Send + Sync + 'static) -> Self {
        RegularJoin(PairedLists::new(pair))
    }
}

impl<K: Key, A: Data, B: Data, O: Data> KeyedCoProcessFunction<K, A, B, O>
    for RegularJoin<A, B, O>
{
    fn open(&mut self, state: &mut KeyedBackend<K>) -> Result<()> {
        self.0.open(state, ["join-left", "join-right"])
    }

    fn process_element1(&mut self, a: A, ctx: &mut KeyedContext<'_, K, O>) -> Result<()> {
        self.0.pair_first(&a, ctx)?;
        self.0.lists()?.0.add(ctx.state(), &(), a)?;
        Ok(())
    }

    fn process_element2(&mut self, b: B, ctx: &mut KeyedContext<'_, K, O>) -> Result<()> {
        self.0.pair_second(&b, ctx)?;
        self.0.lists()?.1.add(ctx.state(), &(), b)?;
        Ok(())
    }
}

/// Makes a key's accumulator before its first record.
pub type InitFn<S> = Arc<dyn Fn() -> S + Send + Sync>;
/// Folds a record into a key's accumulator.
pub type UpdateFn<T, S> = Arc<dyn Fn(&mut S, T) + Send + Sync>;
/// Turns a key's final accumulator into rows.
pub type FinishFn<K, S, O> = Arc<dyn Fn(&K, S, &mut Vec<O>) + Send + Sync>;

/// A final table: an accumulator per key in keyed value state, folded from every record
/// (in place: [`ValueState::modify`]), turned into the key's rows at the end of the input
/// (an event-time timer at `i64::MAX`, registered with the key's first record, which the
/// final watermark fires).
pub struct FinalTable<K, T, S, O> {
    init: InitFn<S>,
    update: UpdateFn<T, S>,
    finish: FinishFn<K, S, O>,
    state: Option<ValueState<(), S>>,
}

impl<K, T, S, O> Clone for FinalTable<K, T, S, O> {
    fn clone(&self) -> Self {
        FinalTable {
            init: Arc::clone(&self.init),
            update: Arc::clone(&self.update),
            finish: Arc::clone(&self.finish),
            state: None,
        }
    }
}

impl<K, T, S, O> FinalTable<K, T, S, O> {
    pub fn new(
        init: impl Fn() -> S + Send + Sync + 'static,
        update: impl Fn(&mut S, T) + Send + Sync + 'static,
        finish: impl Fn(&K, S, &mut Vec<O>) + Send + Sync + 'static,
    ) -> Self {
        FinalTable {
            init: Arc::new(init),
            update: Arc::new(update),
            finish: Arc::new(finish),
            state: None,
        }
    }
}

impl<K: Key, T: Data, S: Data, O: Data> KeyedProcessFunction<K, T, O> for FinalTable<K, T, S, O> {
    fn open(&mut self, state: &mut KeyedBackend<K>) -> Result<()> {
        self.state = Some(state.value_state(&ValueStateDescriptor::new("table"))?);
        Ok(())
    }

    fn process_element(&mut self, value: T, ctx: &mut KeyedContext<'_, K, O>) -> Result<()> {
        let Some(state) = &self.state else {
            return Err(not_opened());
        };
        let mut value = Some(value);
        let mut first = false;
        state.modify(ctx.state(), &(), |acc| {
            let value = value.take()?;
            match acc {
                Some(acc) => {
                    (self.update)(acc, value);
                    None
                }
                None => {
                    first = true;
                    let mut acc = (self.init)();
                    (self.update)(&mut acc, value);
                    Some(acc)
                }
            }
        })?;
        if first {
            ctx.register_event_time_timer(i64::MAX);
        }
        Ok(())
    }

    fn on_timer(
        &mut self,
        _timestamp: i64,
        _domain: TimeDomain,
        ctx: &mut KeyedContext<'_, K, O>,
    ) -> Result<()> {
        let Some(state) = &self.state else {
            return Err(not_opened());
        };
        if let Some(acc) = state.take(ctx.state(), &())? {
            let mut rows = Vec::new();
            (self.finish)(ctx.key(), acc, &mut rows);
            for row in rows {
                ctx.collect(row);
            }
        }
        Ok(())
    }
}

/// A lookup join with a bounded table read as a second input: table rows are kept in keyed
/// state; a record pairs with the rows of its key present when it arrives, and while the
/// table may still be incomplete (the operator's watermark, the minimum over both inputs, is
/// still `i64::MIN` until the table's input has ended) it also waits in keyed state for
/// rows that come later. Its event-time timer (at its timestamp) can only fire after the
/// table ended, and then drops it. Every pair is emitted once.
pub struct LookupJoin<A, B, O>(PairedLists<A, B, O>);

impl<A, B, O> Clone for LookupJoin<A, B, O> {
    fn clone(&self) -> Self {
        LookupJoin(self.0.clone())
    }
}

impl<A: Data, B: Data, O: Data> LookupJoin<A, B, O> {
    /// A lookup join whose pairs `pair` turns into rows (or refuses).
    pub fn new(pair: impl Fn(&A, &B) -> Option<O> + Send + Sync + 'static) -> Self {
        LookupJoin(PairedLists::new(pair))
    }
}

impl<K: Key, A: Data, B: Data, O: Data> KeyedCoProcessFunction<K, A, B, O> for LookupJoin<A, B, O> {
    /// The first list holds the records waiting for table rows, the second the table.
    fn open(&mut self, state: &mut KeyedBackend<K>) -> Result<()> {
        self.0.open(state, ["lookup-waiting", "lookup-table"])
    }

    fn process_element1(&mut self, a: A, ctx: &mut KeyedContext<'_, K, O>) -> Result<()> {
        self.0.pair_first(&a, ctx)?;
        if ctx.current_watermark() == i64::MIN {
            if let Some(ts) = ctx.timestamp() {
                self.0.lists()?.0.add(ctx.state(), &(), a)?;
                ctx.register_event_time_timer(ts);
            }
        }
        Ok(())
    }

    fn process_element2(&mut self, b: B, ctx: &mut KeyedContext<'_, K, O>) -> Result<()> {
        self.0.pair_second(&b, ctx)?;
        self.0.lists()?.1.add(ctx.state(), &(), b)?;
        Ok(())
    }

    fn on_timer(
        &mut self,
        _timestamp: i64,
        _domain: TimeDomain,
        ctx: &mut KeyedContext<'_, K, O>,
    ) -> Result<()> {
        if let Some((waiting, _)) = &self.0.lists {
            waiting.clear(ctx.state(), &())?;
        }
        Ok(())
    }
}

/// The maximum of `u64` values (q7's highest price per window).
#[derive(Debug, Clone, Copy)]
pub struct Max;

impl AggregateFunction<u64, u64, u64> for Max {
    fn create_accumulator(&self) -> u64 {
        0
    }
    fn add(&self, value: &u64, accumulator: &mut u64) {
        *accumulator = (*accumulator).max(*value);
    }
    fn get_result(&self, accumulator: &u64) -> u64 {
        *accumulator
    }
    fn merge(&self, a: u64, b: u64) -> u64 {
        a.max(b)
    }
}

/// The rank of a record in [`TopN`]: smaller is better.
pub type RankFn<T, R> = Arc<dyn Fn(&T) -> R + Send + Sync>;

/// The best `n` records per key by a rank (smaller is better), as a final table: the ranks
/// of the kept records in keyed value state (small, sorted), the records themselves in keyed
/// map state by rank, so a record that does not enter the top `n` costs one read of the
/// ranks and nothing else. Emits `(record, position)` (1-based) per kept record at the end of
/// the input (an event-time timer at `i64::MAX`). Flink's top-N (`ROW_NUMBER() <= n`);
/// `n = 1` keeps the single best record (q9's winner, q18's last bid).
pub struct TopN<T, R> {
    n: usize,
    rank: RankFn<T, R>,
    ranks: Option<ValueState<(), Vec<R>>>,
    rows: Option<MapState<(), R, T>>,
}

impl<T, R> Clone for TopN<T, R> {
    fn clone(&self) -> Self {
        TopN {
            n: self.n,
            rank: Arc::clone(&self.rank),
            ranks: None,
            rows: None,
        }
    }
}

impl<T, R> TopN<T, R> {
    pub fn new(n: usize, rank: impl Fn(&T) -> R + Send + Sync + 'static) -> Self {
        TopN {
            n: n.max(1),
            rank: Arc::new(rank),
            ranks: None,
            rows: None,
        }
    }
}

/// Puts `rank` into the sorted `ranks` if it is among the best `n`: `None` when it is not
/// (nothing changed), else the rank it pushed out, if any.
fn admit<R: Ord + Clone>(ranks: &mut Vec<R>, rank: &R, n: usize) -> Option<Option<R>> {
    if ranks.len() >= n && ranks.last().is_some_and(|last| rank >= last) {
        return None;
    }
    let at = ranks.partition_point(|r| r < rank);
    ranks.insert(at, rank.clone());
    Some(if ranks.len() > n { ranks.pop() } else { None })
}

impl<K: Key, T: Data, R: Data + MapKey> KeyedProcessFunction<K, T, (T, u64)> for TopN<T, R> {
    fn open(&mut self, state: &mut KeyedBackend<K>) -> Result<()> {
        self.ranks = Some(state.value_state(&ValueStateDescriptor::new("top-ranks"))?);
        self.rows = Some(state.map_state(&MapStateDescriptor::new("top-rows"))?);
        Ok(())
    }

    fn process_element(&mut self, value: T, ctx: &mut KeyedContext<'_, K, (T, u64)>) -> Result<()> {
        let (Some(ranks_state), Some(rows)) = (&self.ranks, &self.rows) else {
            return Err(not_opened());
        };
        let rank = (self.rank)(&value);
        // The ranks change in place (one probe on the heap, no copy of the list); a record
        // that does not enter the top `n` changes nothing.
        let (n, mut first, mut admitted) = (self.n, false, None);
        ranks_state.modify(ctx.state(), &(), |ranks| match ranks {
            Some(ranks) => {
                admitted = admit(ranks, &rank, n);
                None
            }
            None => {
                first = true;
                let mut ranks = Vec::new();
                admitted = admit(&mut ranks, &rank, n);
                Some(ranks)
            }
        })?;
        if first {
            ctx.register_event_time_timer(i64::MAX);
        }
        if let Some(evicted) = admitted {
            rows.put(ctx.state(), &(), rank, value)?;
            if let Some(evicted) = evicted {
                rows.remove(ctx.state(), &(), &evicted)?;
            }
        }
        Ok(())
    }

    fn on_timer(
        &mut self,
        _timestamp: i64,
        _domain: TimeDomain,
        ctx: &mut KeyedContext<'_, K, (T, u64)>,
    ) -> Result<()> {
        let (Some(ranks_state), Some(rows)) = (&self.ranks, &self.rows) else {
            return Err(not_opened());
        };
        let ranks = ranks_state.value(ctx.state(), &())?.unwrap_or_default();
        for (position, rank) in (1u64..).zip(&ranks) {
            if let Some(row) = rows.get(ctx.state(), &(), rank)? {
                ctx.collect((row, position));
            }
        }
        // Nothing follows the end of input: the state is left as it is (clearing a map
        // is a range deletion in RocksDB, which would slow down every later key's read).
        Ok(())
    }
}
