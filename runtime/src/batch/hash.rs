//! Hash aggregation of keyed event-time windows in batch mode (Flink SQL's `HashAggregate`,
//! DataFusion's and DuckDB's hash aggregates): one hash table per subtask from (key, window) to
//! the window's accumulator, filled as records arrive and emitted when the input ends, with no
//! sort of the records. When the table outgrows its share of the memory budget, its partial
//! accumulators are spilled as sorted runs (the [`NormalizedKeySorter`] of the sort-based
//! path, keyed by (key, window)) and the table starts again empty; at the end the runs and the
//! last table are merged in (key, window) order and each group's partials are combined with
//! the aggregate's `merge` (the reduce function for `reduce`): a hybrid hash aggregation, as
//! DuckDB's and DataFusion's spill.
//!
//! # When it is used
//!
//! In batch mode ([`RuntimeMode::Batch`](crate::config::RuntimeMode)), with
//! [`ExecutionConfig::batch_hash_aggregation`](crate::ExecutionConfig) on (the default), for
//! `WindowedStream::reduce`, `aggregate` and `aggregate_with` (and `AllWindowedStream`'s) when
//! the windows are in event time and do not merge (tumbling and sliding windows), the trigger
//! is the assigner's default and there is no evictor. Everything else a keyed operator does
//! (process window functions, which may read state; custom triggers; count and session
//! windows; keyed process functions) keeps the sorted input of [`crate::batch`].
//!
//! # What is the same, and what is not
//!
//! The result is the sorted path's: every window fires once, at the end, with everything it
//! holds; each result has its window's largest timestamp; nothing is late. Two things differ,
//! neither promised by batch mode:
//! - **Order.** Results come in the table's order (or (key, window) order after a spill), not
//!   key by key in timestamp order. Batch mode promises no order across keys; a consumer that
//!   needs one sorts.
//! - **Order of combination.** Records are folded in arrival order, and after a spill the
//!   partial accumulators of a group are combined with `merge` in run order. An aggregation
//!   that is associative and commutative (counts, integer sums, min, max) gives identical
//!   results; a floating-point sum may differ in its last bits, as it does in Flink between
//!   a combiner and none. An aggregate whose `merge` is not a real merge must turn hash
//!   aggregation off ([`StreamExecutionEnvironment::set_batch_hash_aggregation`]).
//!
//! A failure of the aggregate function is a failure of the job (restarted whole by the restart
//! strategy, as a failure in a pipelined operator is): the table is filled while the input
//! flows, so there is no sorted input to rerun the stage from.
//!
//! # Memory
//!
//! The table may use three quarters of the batch memory budget
//! ([`StreamExecutionEnvironment::set_batch_sort_memory`], default 128 MiB per keyed subtask),
//! the spill sorter the last quarter. The table's bytes are counted as its buckets (key,
//! window, accumulator and control byte, at its capacity) plus, for keys and accumulators that
//! own heap memory, their serialized size when they enter the table (an accumulator that
//! grows afterwards, a list say, is counted at its first size). A table that would grow past
//! its share spills instead, so its buckets never exceed it (while a table grows, its old
//! buckets and the new ones are held together for a moment, as any hash table's are).
//!
//! [`StreamExecutionEnvironment::set_batch_hash_aggregation`]: crate::api::handles::StreamExecutionEnvironment::set_batch_hash_aggregation
//! [`StreamExecutionEnvironment::set_batch_sort_memory`]: crate::api::handles::StreamExecutionEnvironment::set_batch_sort_memory

use std::sync::Arc;

use hashbrown::HashMap;
use typeinfo_serializers::{DataOutputView, TypeSerializer};
use typeinfo_state::{AggregateFunction, ReduceFn};

use crate::batch::sort::{NormalizedKeySorter, SortConfig, SortedRecords};
use crate::error::{Error, Result};
use crate::operator::contract::{Operator, OperatorSetup, Outputs};
use crate::operator::element::NO_TIMESTAMP;
use crate::types::{Data, Key};
use crate::windowing::assigner::WindowAssigner;
use crate::windowing::window::Window;

/// Results emitted per activation at the end of the input (bounds the output between two runs
/// of the consumers).
const SLICE: usize = 4096;

type Hasher = foldhash::fast::RandomState;

/// Every window's table of groups.
type Tables<K, W, Acc> = Vec<(W, HashMap<K, Acc, Hasher>)>;

/// Folds records into a window's accumulator: a reduce function or an aggregate function.
pub(crate) trait Accumulate<T, Acc>: Send + Sync + 'static {
    /// The accumulator of a window whose first record is `value`.
    fn first(&self, value: &T) -> Acc;
    /// Folds `value` into `acc`.
    fn add(&self, value: &T, acc: &mut Acc);
    /// Combines two partial accumulators of one window (`a` from earlier records).
    fn merge(&self, a: Acc, b: Acc) -> Acc;
}

/// `reduce(f)`: the accumulator is the reduced record, `f(acc, value)` as the reducing state
/// folds.
pub(crate) struct Reducing<T>(pub(crate) ReduceFn<T>);

impl<T: Clone + 'static> Accumulate<T, T> for Reducing<T> {
    #[inline]
    fn first(&self, value: &T) -> T {
        value.clone()
    }
    #[inline]
    fn add(&self, value: &T, acc: &mut T) {
        *acc = (self.0)(acc, value);
    }
    fn merge(&self, a: T, b: T) -> T {
        (self.0)(&a, &b)
    }
}

/// `aggregate(function)`.
pub(crate) struct Aggregating<T, Acc, R>(pub(crate) Arc<dyn AggregateFunction<T, Acc, R>>);

impl<T: 'static, Acc: 'static, R: 'static> Accumulate<T, Acc> for Aggregating<T, Acc, R> {
    #[inline]
    fn first(&self, value: &T) -> Acc {
        let mut acc = self.0.create_accumulator();
        self.0.add(value, &mut acc);
        acc
    }
    #[inline]
    fn add(&self, value: &T, acc: &mut Acc) {
        self.0.add(value, acc);
    }
    fn merge(&self, a: Acc, b: Acc) -> Acc {
        self.0.merge(a, b)
    }
}

/// A window's result from its key, the window and its final accumulator.
pub(crate) type Finish<K, W, Acc, O> = Arc<dyn Fn(&K, &W, Acc) -> O + Send + Sync>;

/// What a hash-aggregated window operator is made of (shared by its subtasks).
pub(crate) struct HashWindowSpec<K, T, A: WindowAssigner, Acc, O> {
    pub(crate) selector: Arc<dyn Fn(&T) -> K + Send + Sync>,
    pub(crate) assigner: A,
    pub(crate) accumulate: Arc<dyn Accumulate<T, Acc>>,
    pub(crate) finish: Finish<K, A::Window, Acc, O>,
}

impl<K, T, A: WindowAssigner, Acc, O> Clone for HashWindowSpec<K, T, A, Acc, O> {
    fn clone(&self) -> Self {
        HashWindowSpec {
            selector: Arc::clone(&self.selector),
            assigner: self.assigner.clone(),
            accumulate: Arc::clone(&self.accumulate),
            finish: Arc::clone(&self.finish),
        }
    }
}

/// Bytes of the buckets of a table that holds `capacity` entries of `entry` bytes: hashbrown
/// keeps at most 7/8 of its buckets full, each bucket with a control byte.
fn bucket_bytes(capacity: usize, entry: usize) -> usize {
    capacity * 8 / 7 * (entry + 1)
}

/// The groups: one table per window, from key to accumulator, and an index of the windows.
/// The records of one window are near each other in the input (time moves forward), so the
/// table of the current window stays in the processor's caches where one table of every
/// (key, window) would take a cache miss per record.
struct Groups<K: Key, W: Window, Acc> {
    tables: Tables<K, W, Acc>,
    index: HashMap<W, usize, Hasher>,
    /// The table the last record went to.
    last: usize,
    /// Bytes of every table's buckets.
    bucket_bytes: usize,
    /// Estimated heap bytes owned by the keys and accumulators.
    heap_bytes: usize,
}

impl<K: Key, W: Window, Acc> Groups<K, W, Acc> {
    const ENTRY: usize = std::mem::size_of::<(K, Acc)>();

    fn new() -> Self {
        Groups {
            tables: Vec::new(),
            index: HashMap::with_hasher(Hasher::default()),
            last: usize::MAX,
            bucket_bytes: 0,
            heap_bytes: 0,
        }
    }

    fn bytes(&self) -> usize {
        self.bucket_bytes + self.heap_bytes + bucket_bytes(self.index.capacity(), 64)
    }

    /// The position of `window`'s table, made if it has none.
    #[inline]
    fn table_of(&mut self, window: W) -> usize {
        if self
            .tables
            .get(self.last)
            .is_some_and(|(w, _)| *w == window)
        {
            return self.last;
        }
        let next = self.tables.len();
        let at = *self.index.entry(window.clone()).or_insert(next);
        if at == next {
            self.tables
                .push((window, HashMap::with_hasher(Hasher::default())));
        }
        self.last = at;
        at
    }

    /// Every group, emptying the groups.
    fn take(&mut self) -> Tables<K, W, Acc> {
        self.index.clear();
        self.last = usize::MAX;
        self.bucket_bytes = 0;
        self.heap_bytes = 0;
        std::mem::take(&mut self.tables)
    }
}

/// Where the operator is: filling the tables, emitting them (never spilled), merging the runs
/// (spilled), or done.
enum Phase<K: Key, W: Window, Acc: Data> {
    Building,
    Emitting {
        tables: <Tables<K, W, Acc> as IntoIterator>::IntoIter,
        /// The table being emitted.
        current: Option<(W, hashbrown::hash_map::IntoIter<K, Acc>)>,
    },
    Merging {
        runs: SortedRecords<(K, W), Acc>,
        /// The group being combined.
        group: Option<((K, W), Acc)>,
    },
    Done,
}

/// The batch window operator by hash aggregation; see the [module docs](self).
pub(crate) struct HashWindowAggregate<K: Key, T: Data, A: WindowAssigner, Acc: Data, O: Data> {
    spec: HashWindowSpec<K, T, A, Acc, O>,
    setup: OperatorSetup,
    groups: Groups<K, A::Window, Acc>,
    /// The tables' share of the memory budget.
    table_budget: usize,
    /// Whether keys and accumulators own heap memory (their serialized size is then counted).
    owns_heap: bool,
    key_serializer: K::Serializer,
    acc_serializer: Acc::Serializer,
    scratch: DataOutputView,
    /// The spilled runs, once the tables spilled.
    spill: Option<NormalizedKeySorter<(K, A::Window), Acc>>,
    windows: Vec<A::Window>,
    phase: Phase<K, A::Window, Acc>,
}

impl<K: Key, T: Data, A: WindowAssigner, Acc: Data, O: Data> HashWindowAggregate<K, T, A, Acc, O> {
    pub(crate) fn new(
        setup: &OperatorSetup,
        spec: HashWindowSpec<K, T, A, Acc, O>,
    ) -> Result<Self> {
        let config = &setup.serializer_config;
        Ok(HashWindowAggregate {
            spec,
            setup: setup.clone(),
            groups: Groups::new(),
            table_budget: setup.batch_sort_memory - sorter_budget(setup.batch_sort_memory),
            owns_heap: std::mem::needs_drop::<K>() || std::mem::needs_drop::<Acc>(),
            key_serializer: K::create_serializer(config)?,
            acc_serializer: Acc::create_serializer(config)?,
            scratch: DataOutputView::with_capacity(64),
            spill: None,
            windows: Vec::new(),
            phase: Phase::Building,
        })
    }

    /// Folds `value` into the accumulator of (`key`, `window`), spilling the tables first
    /// when a new group would grow them past their budget.
    #[inline]
    fn fold(&mut self, key: &K, window: A::Window, value: &T) -> Result<()> {
        let mut at = self.groups.table_of(window.clone());
        let table = &mut self.groups.tables[at].1;
        if let Some(acc) = table.get_mut(key) {
            self.spec.accumulate.add(value, acc);
            return Ok(());
        }
        // A new group: the insert may reallocate the table to twice its buckets.
        let entry = Groups::<K, A::Window, Acc>::ENTRY;
        let before = table.capacity();
        if table.len() == before {
            let grown = bucket_bytes(before.max(3) * 2, entry) - bucket_bytes(before, entry);
            if self.groups.bytes() + grown > self.table_budget
                && self.groups.heap_bytes + self.groups.bucket_bytes > 0
            {
                self.spill_groups()?;
                at = self.groups.table_of(window);
            }
        }
        let acc = self.spec.accumulate.first(value);
        if self.owns_heap {
            self.groups.heap_bytes += self.serialized_len(key, &acc)?;
        }
        let table = &mut self.groups.tables[at].1;
        let before = table.capacity();
        table.insert(key.clone(), acc);
        let after = table.capacity();
        if after != before {
            self.groups.bucket_bytes += bucket_bytes(after, entry) - bucket_bytes(before, entry);
        }
        Ok(())
    }

    /// The serialized size of a key and an accumulator (the estimate of the heap they own).
    fn serialized_len(&mut self, key: &K, acc: &Acc) -> Result<usize> {
        self.scratch.clear();
        self.key_serializer.serialize(key, &mut self.scratch)?;
        self.acc_serializer.serialize(acc, &mut self.scratch)?;
        Ok(self.scratch.len())
    }

    /// Moves every group into the spill sorter (which writes sorted runs as its own budget
    /// fills) and frees the tables.
    fn spill_groups(&mut self) -> Result<()> {
        if self.spill.is_none() {
            let budget = sorter_budget(self.setup.batch_sort_memory);
            self.spill = Some(
                NormalizedKeySorter::new(SortConfig::default().memory_budget(budget))?
                    .with_serializer_config(self.setup.serializer_config.clone())?,
            );
        }
        let tables = self.groups.take();
        let Some(spill) = self.spill.as_mut() else {
            return Ok(());
        };
        add_to_runs(spill, tables)
    }

    /// Ends the input: emitting the tables as they are, or merging them with the spilled runs.
    fn end_of_input(&mut self) -> Result<()> {
        let mut tables = self.groups.take();
        // `<operator>.numSpilledRuns`: sorted runs this subtask wrote to disk (as the sorted
        // path counts them; 0 when the tables fit).
        let runs = format!("{}.numSpilledRuns", self.setup.name);
        let Some(mut spill) = self.spill.take() else {
            self.setup.job.count(&runs, 0);
            // Windows in time order (each window's keys in the table's order).
            tables.sort_unstable_by(|a, b| a.0.cmp(&b.0));
            self.phase = Phase::Emitting {
                tables: tables.into_iter(),
                current: None,
            };
            return Ok(());
        };
        add_to_runs(&mut spill, tables)?;
        self.setup.job.count(&runs, spill.spilled_runs() as u64);
        self.phase = Phase::Merging {
            runs: spill.finish()?,
            group: None,
        };
        Ok(())
    }

    /// Emits one window's result, at the window's largest timestamp.
    #[inline]
    fn emit(&self, key: &K, window: &A::Window, acc: Acc, out: &mut Outputs<O, T>) {
        out.main
            .collect(window.max_timestamp(), (self.spec.finish)(key, window, acc));
    }

    /// Up to [`SLICE`] results; `false` once every result is out.
    fn emit_slice(&mut self, out: &mut Outputs<O, T>) -> Result<bool> {
        let mut phase = std::mem::replace(&mut self.phase, Phase::Done);
        let more = match &mut phase {
            Phase::Building | Phase::Done => false,
            Phase::Emitting { tables, current } => self.table_slice(tables, current, out),
            Phase::Merging { runs, group } => self.merge_slice(runs, group, out)?,
        };
        self.phase = if more { phase } else { Phase::Done };
        Ok(more)
    }

    /// Up to [`SLICE`] results of the tables, in window order.
    fn table_slice(
        &self,
        tables: &mut <Tables<K, A::Window, Acc> as IntoIterator>::IntoIter,
        current: &mut Option<(A::Window, hashbrown::hash_map::IntoIter<K, Acc>)>,
        out: &mut Outputs<O, T>,
    ) -> bool {
        let mut left = SLICE;
        while left > 0 {
            let Some((window, groups)) = current.as_mut() else {
                let Some((window, table)) = tables.next() else {
                    return false;
                };
                *current = Some((window, table.into_iter()));
                continue;
            };
            match groups.next() {
                Some((key, acc)) => {
                    self.emit(&key, window, acc, out);
                    left -= 1;
                }
                None => *current = None,
            }
        }
        true
    }

    /// Combines up to [`SLICE`] sorted partials into their groups' results.
    fn merge_slice(
        &self,
        runs: &mut SortedRecords<(K, A::Window), Acc>,
        group: &mut Option<((K, A::Window), Acc)>,
        out: &mut Outputs<O, T>,
    ) -> Result<bool> {
        for _ in 0..SLICE {
            let Some(next) = runs.next() else {
                if let Some(((key, window), acc)) = group.take() {
                    self.emit(&key, &window, acc, out);
                }
                return Ok(false);
            };
            let (next, _, partial) = next?;
            match group.take() {
                Some((current, acc)) if current == next => {
                    *group = Some((current, self.spec.accumulate.merge(acc, partial)));
                }
                Some(((key, window), acc)) => {
                    self.emit(&key, &window, acc, out);
                    *group = Some((next, partial));
                }
                None => *group = Some((next, partial)),
            }
        }
        Ok(true)
    }
}

/// Adds every group of `tables` to the spill sorter, keyed by (key, window).
fn add_to_runs<K: Key, W: Window, Acc: Data>(
    spill: &mut NormalizedKeySorter<(K, W), Acc>,
    tables: Tables<K, W, Acc>,
) -> Result<()> {
    for (window, table) in tables {
        let ts = window.max_timestamp();
        for (key, acc) in table {
            spill.add(&(key, window.clone()), ts, &acc)?;
        }
    }
    Ok(())
}

/// The spill sorter's share of a batch memory budget: a quarter (at least the sorter's
/// minimum of two segments).
fn sorter_budget(budget: usize) -> usize {
    (budget / 4)
        .max(2 * crate::batch::sort::DEFAULT_SEGMENT_BYTES)
        .min(budget)
}

impl<K: Key, T: Data, A: WindowAssigner, Acc: Data, O: Data> Operator<T, O>
    for HashWindowAggregate<K, T, A, Acc, O>
{
    #[inline]
    fn process(&mut self, ts: i64, value: T, _out: &mut Outputs<O, T>) -> Result<()> {
        if !matches!(self.phase, Phase::Building) {
            return Err(Error::Config(
                "a record arrived after the end of a batch operator's input".into(),
            ));
        }
        if ts == NO_TIMESTAMP {
            return Err(Error::MissingTimestamp {
                operator: self.setup.name.clone(),
            });
        }
        let out_of_range = |this: &Self| Error::TimestampOutOfRange {
            operator: this.setup.name.clone(),
            timestamp: ts,
            assigner: this.spec.assigner.to_string(),
        };
        let key = (self.spec.selector)(&value);
        if let Some(window) = self.spec.assigner.assign_one(ts) {
            let window = window.map_err(|_| out_of_range(self))?;
            return self.fold(&key, window, &value);
        }
        let mut windows = std::mem::take(&mut self.windows);
        if self.spec.assigner.assign_windows(ts, &mut windows).is_err() {
            self.windows = windows;
            return Err(out_of_range(self));
        }
        let folded = windows
            .drain(..)
            .try_for_each(|window| self.fold(&key, window, &value));
        self.windows = windows;
        folded
    }

    /// Watermarks are not passed on: every window fires at the end, then the maximal
    /// watermark follows the results.
    fn watermark(&mut self, _watermark: i64, _out: &mut Outputs<O, T>) -> Result<()> {
        Ok(())
    }

    fn finish_step(&mut self, out: &mut Outputs<O, T>) -> Result<bool> {
        if matches!(self.phase, Phase::Done) {
            return Ok(false);
        }
        if matches!(self.phase, Phase::Building) {
            self.end_of_input()?;
        }
        let more = self.emit_slice(out)?;
        if !more {
            out.watermark(i64::MAX);
        }
        Ok(more)
    }
}
