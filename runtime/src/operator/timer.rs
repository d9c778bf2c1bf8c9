//! Timers of keyed operators: one per (key, namespace, time), fired in time order.
//!
//! Where they live follows the state backend, as in Flink (whose RocksDB backend keeps its
//! timers in RocksDB by default, `RocksDBPriorityQueueSet`):
//! - **Heap backend** (and RocksDB with
//!   [`RocksDbOptions::heap_timers`](typeinfo_state::RocksDbOptions::heap_timers)): in memory
//!   ([`TimerQueue`]: a hash set and a time index), written into keyed state at each
//!   checkpoint.
//! - **RocksDB backend**: on disk, so that memory does not grow with the number of pending
//!   timers (a session window on each of ten million keys). The truth is the timer keyed state
//!   itself (per key, its timers), written through on every registration and deletion; the
//!   order in which they fire comes from a time index in a RocksDB instance beside the
//!   backend's ([`RocksDbSortedSet`]: `[time][key][namespace]` per timer, one lane per time
//!   domain) that shares the backend's managed memory. The index is derived: checkpoints carry
//!   the keyed state (with the backend's native checkpoint, nothing to write at the barrier),
//!   and a restore rebuilds the index from it, key page by key page, at any parallelism. A
//!   bounded set of timers known to be registered ([`KNOWN_TIMERS`]) spares the window
//!   operator's registration per record its read of the key's timers.
//!
//! Timers are registered for the backend's current key (a record's, or a firing timer's);
//! firing one sets the backend's current key to its key. A registration or deletion that
//! fails on disk inside a call that cannot return the error (a trigger's) is kept and
//! returned by the operator's next [`KeyedTimers::check`].

use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasher, Hash};
use std::path::PathBuf;

use typeinfo::{DataInputView, DataOutputView, TypeSerializer};
use typeinfo_state::{KeyedBackend, KeyedStateBackend, RocksDbSortedSet};

use crate::error::{Error, Result};
use crate::operator::context::TimeDomain;

use hashbrown::hash_table::Entry;
use hashbrown::HashTable;

type Hasher = foldhash::fast::RandomState;

/// A set of timers deduplicated by (key, namespace, time), popped in time order.
///
/// The set finds a timer with one probe from borrowed parts (registering a timer that exists,
/// which the window operator does for every record, costs one lookup). Deleted timers stay in
/// the time index and are skipped when popped.
pub(crate) struct TimerQueue<K, N> {
    set: HashTable<(K, N, i64)>,
    hasher: Hasher,
    by_time: BTreeMap<i64, Vec<(K, N)>>,
}

impl<K: Clone + Eq + Hash, N: Clone + Eq + Hash> TimerQueue<K, N> {
    pub(crate) fn new() -> Self {
        TimerQueue {
            set: HashTable::new(),
            hasher: Hasher::default(),
            by_time: BTreeMap::new(),
        }
    }

    #[inline]
    fn hash(hasher: &Hasher, key: &K, namespace: &N, time: i64) -> u64 {
        hasher.hash_one((key, namespace, time))
    }

    /// Registers a timer; a timer already registered is not added again.
    #[inline]
    pub(crate) fn register(&mut self, key: &K, namespace: &N, time: i64) {
        let hasher = &self.hasher;
        let hash = Self::hash(hasher, key, namespace, time);
        let entry = self.set.entry(
            hash,
            |(k, n, t)| *t == time && k == key && n == namespace,
            |(k, n, t)| Self::hash(hasher, k, n, *t),
        );
        if let Entry::Vacant(v) = entry {
            v.insert((key.clone(), namespace.clone(), time));
            self.by_time
                .entry(time)
                .or_default()
                .push((key.clone(), namespace.clone()));
        }
    }

    /// Deletes a timer; `false` when there was none (nothing happens then).
    #[inline]
    pub(crate) fn delete(&mut self, key: &K, namespace: &N, time: i64) -> bool {
        let hash = Self::hash(&self.hasher, key, namespace, time);
        match self
            .set
            .find_entry(hash, |(k, n, t)| *t == time && k == key && n == namespace)
        {
            Ok(entry) => {
                entry.remove();
                true
            }
            Err(_) => false,
        }
    }

    /// Removes and returns the earliest timer at or before `time` (one lookup per timer:
    /// deleted timers left in the time index are dropped on the way).
    pub(crate) fn pop_due(&mut self, time: i64) -> Option<(i64, K, N)> {
        loop {
            let mut first = self.by_time.first_entry()?;
            let due = *first.key();
            if due > time {
                return None;
            }
            let Some((key, namespace)) = first.get_mut().pop() else {
                first.remove();
                continue;
            };
            if first.get().is_empty() {
                first.remove();
            }
            if self.delete(&key, &namespace, due) {
                return Some((due, key, namespace));
            }
        }
    }

    /// Every timer: (key, namespace, time).
    pub(crate) fn entries(&self) -> impl Iterator<Item = &(K, N, i64)> {
        self.set.iter()
    }

    /// The latest time of a live timer (deleted timers left in the index are passed over).
    pub(crate) fn latest(&self) -> Option<i64> {
        self.by_time
            .iter()
            .rev()
            .find(|(time, entries)| {
                entries.iter().any(|(k, n)| {
                    let hash = Self::hash(&self.hasher, k, n, **time);
                    self.set
                        .find(hash, |(k2, n2, t)| t == *time && k2 == k && n2 == n)
                        .is_some()
                })
            })
            .map(|(time, _)| *time)
    }

    /// The earliest time in the index (possibly of a deleted timer: a bound for wake-ups).
    pub(crate) fn earliest(&self) -> Option<i64> {
        self.by_time.keys().next().copied()
    }
}

/// The timers of a keyed operator as keyed state: per key (namespace `()`), every timer's
/// namespace, time and domain (`true` for event time). The heap backend writes it at each
/// checkpoint; the RocksDB backend keeps it current (see the module docs). Either way it
/// moves with its key groups when a job is rescaled.
pub(crate) type TimerState<N> =
    typeinfo_state::ValueState<(), crate::checkpoint::format::TimerStateValue<N>>;

/// How many timers the RocksDB timers remember as registered (then they forget them all and
/// start again): about 64 Ki entries of a key, a namespace and a time.
pub(crate) const KNOWN_TIMERS: usize = 1 << 16;

/// The lane of a time domain in the time index.
fn lane(domain: TimeDomain) -> usize {
    match domain {
        TimeDomain::EventTime => 0,
        TimeDomain::ProcessingTime => 1,
    }
}

/// A time as 8 bytes that sort as the times do (big-endian, sign bit flipped).
fn time_bytes(time: i64) -> [u8; 8] {
    ((time as u64) ^ (1 << 63)).to_be_bytes()
}

/// The time index's entries that are due at `time`: those below the next millisecond.
fn due_bound(time: i64) -> Option<[u8; 8]> {
    time.checked_add(1).map(time_bytes)
}

/// The RocksDB backend's timers (see the module docs).
pub(crate) struct RocksTimers<K: crate::types::Key, N: crate::types::Data> {
    /// Where the time index lives (opened at the first timer).
    dir: PathBuf,
    index: Option<RocksDbSortedSet>,
    key_serializer: K::Serializer,
    namespace_serializer: N::Serializer,
    entry: DataOutputView,
    /// Timers known to be registered: (key, namespace, time, event time?).
    known: HashTable<(K, N, i64, bool)>,
    hasher: Hasher,
    /// No processing-time timer is due before this (a bound for wake-ups, refreshed when a
    /// pop finds nothing due).
    processing_head: Option<i64>,
    /// The timer popped last, until it is registered again: deleting it (a window deletes
    /// its cleanup timer as it fires, the timer that fired) needs no read.
    popped: Option<(K, N, i64, bool)>,
}

impl<K: crate::types::Key, N: crate::types::Data + Eq + Hash> RocksTimers<K, N> {
    fn index(&mut self, backend: &KeyedBackend<K>) -> Result<&mut RocksDbSortedSet> {
        let index = match self.index.take() {
            Some(index) => index,
            None => match backend {
                KeyedBackend::RocksDb(b) => b.open_sorted_set(&self.dir, 2)?,
                KeyedBackend::Heap(_) => {
                    return Err(Error::Config(
                        "timers in RocksDB on a heap state backend".into(),
                    ))
                }
            },
        };
        Ok(self.index.insert(index))
    }

    fn encode(&mut self, time: i64, key: &K, namespace: &N) -> Result<()> {
        self.entry.clear();
        self.entry.write_bytes(&time_bytes(time));
        self.key_serializer.serialize(key, &mut self.entry)?;
        self.namespace_serializer
            .serialize(namespace, &mut self.entry)?;
        Ok(())
    }

    fn decode(&self, entry: &[u8]) -> Result<(i64, K, N)> {
        let mut input = DataInputView::new(entry);
        let time = u64::from_be_bytes(
            input
                .read_bytes(8)?
                .try_into()
                .map_err(|_| Error::Config("a timer entry without its time".into()))?,
        ) ^ (1 << 63);
        let key = self.key_serializer.deserialize(&mut input)?;
        let namespace = self.namespace_serializer.deserialize(&mut input)?;
        Ok((time as i64, key, namespace))
    }

    fn is_popped(&self, key: &K, namespace: &N, time: i64, event: bool) -> bool {
        self.popped
            .as_ref()
            .is_some_and(|(k, n, t, e)| *t == time && *e == event && k == key && n == namespace)
    }

    #[inline]
    fn known_hash(&self, key: &K, namespace: &N, time: i64, event: bool) -> u64 {
        self.hasher.hash_one((key, namespace, time, event))
    }

    fn forget(&mut self, key: &K, namespace: &N, time: i64, event: bool) {
        let hash = self.known_hash(key, namespace, time, event);
        if let Ok(entry) = self.known.find_entry(hash, |(k, n, t, e)| {
            *t == time && *e == event && k == key && n == namespace
        }) {
            entry.remove();
        }
    }

    fn register(
        &mut self,
        backend: &mut KeyedBackend<K>,
        state: &TimerState<N>,
        domain: TimeDomain,
        key: &K,
        namespace: &N,
        time: i64,
    ) -> Result<()> {
        let event = domain == TimeDomain::EventTime;
        if self.is_popped(key, namespace, time, event) {
            self.popped = None;
        }
        let hash = self.known_hash(key, namespace, time, event);
        if self
            .known
            .find(hash, |(k, n, t, e)| {
                *t == time && *e == event && k == key && n == namespace
            })
            .is_some()
        {
            return Ok(());
        }
        set_key(backend, key)?;
        let mut timers = state.value(backend, &())?.unwrap_or_default();
        if !timers
            .iter()
            .any(|(n, t, e)| *t == time && *e == event && n == namespace)
        {
            timers.push((namespace.clone(), time, event));
            state.update(backend, &(), timers)?;
            self.index_insert(backend, domain, time, key, namespace)?;
        }
        if self.known.len() >= KNOWN_TIMERS {
            self.known.clear();
        }
        let hasher = &self.hasher;
        self.known.insert_unique(
            hash,
            (key.clone(), namespace.clone(), time, event),
            |(k, n, t, e)| hasher.hash_one((k, n, *t, *e)),
        );
        Ok(())
    }

    fn delete(
        &mut self,
        backend: &mut KeyedBackend<K>,
        state: &TimerState<N>,
        domain: TimeDomain,
        key: &K,
        namespace: &N,
        time: i64,
    ) -> Result<()> {
        let event = domain == TimeDomain::EventTime;
        if self.is_popped(key, namespace, time, event) {
            return Ok(());
        }
        self.forget(key, namespace, time, event);
        set_key(backend, key)?;
        if !drop_timer(backend, state, namespace, time, event)? {
            return Ok(());
        }
        self.encode(time, key, namespace)?;
        let entry = std::mem::take(&mut self.entry);
        let removed = self.index(backend)?.remove(lane(domain), entry.as_slice());
        self.entry = entry;
        Ok(removed?)
    }

    /// Adds a timer to the time index.
    fn index_insert(
        &mut self,
        backend: &KeyedBackend<K>,
        domain: TimeDomain,
        time: i64,
        key: &K,
        namespace: &N,
    ) -> Result<()> {
        self.encode(time, key, namespace)?;
        let entry = std::mem::take(&mut self.entry);
        let inserted = self.index(backend)?.insert(lane(domain), entry.as_slice());
        self.entry = entry;
        inserted?;
        if domain == TimeDomain::ProcessingTime {
            self.processing_head = Some(self.processing_head.map_or(time, |h| h.min(time)));
        }
        Ok(())
    }

    fn pop_due(
        &mut self,
        backend: &mut KeyedBackend<K>,
        state: &TimerState<N>,
        domain: TimeDomain,
        time: i64,
    ) -> Result<Option<(i64, K, N)>> {
        if self.index.is_none() {
            return Ok(None);
        }
        let bound = due_bound(time);
        let index = self.index(backend)?;
        let Some(entry) = index.pop_below(lane(domain), bound.as_ref().map(|b| &b[..]))? else {
            if domain == TimeDomain::ProcessingTime {
                let first = index.first(lane(domain))?.map(<[u8]>::to_vec);
                self.processing_head = first.map(|e| self.decode(&e)).transpose()?.map(|t| t.0);
            }
            return Ok(None);
        };
        let (due, key, namespace) = self.decode(&entry)?;
        let event = domain == TimeDomain::EventTime;
        self.forget(&key, &namespace, due, event);
        backend.set_current_key(&key)?;
        drop_timer(backend, state, &namespace, due, event)?;
        self.popped = Some((key.clone(), namespace.clone(), due, event));
        Ok(Some((due, key, namespace)))
    }

    fn latest(&mut self, backend: &KeyedBackend<K>, domain: TimeDomain) -> Result<Option<i64>> {
        if self.index.is_none() {
            return Ok(None);
        }
        let last = self.index(backend)?.last(lane(domain))?;
        Ok(last.map(|e| self.decode(&e)).transpose()?.map(|t| t.0))
    }

    /// After a restore: a fresh index of every timer in `state`, read a page of keys at a
    /// time.
    fn rebuild(&mut self, backend: &mut KeyedBackend<K>, state: &TimerState<N>) -> Result<()> {
        const PAGE: usize = 4096;
        self.index = None;
        self.known.clear();
        self.processing_head = None;
        self.popped = None;
        let mut cursor = None;
        loop {
            let keys = match backend {
                KeyedBackend::RocksDb(b) => b.keys_page(state.id(), &(), &mut cursor, PAGE)?,
                KeyedBackend::Heap(_) => Vec::new(),
            };
            if keys.is_empty() {
                return Ok(());
            }
            for key in keys {
                backend.set_current_key(&key)?;
                for (namespace, time, event) in state.value(backend, &())?.unwrap_or_default() {
                    let domain = if event {
                        TimeDomain::EventTime
                    } else {
                        TimeDomain::ProcessingTime
                    };
                    self.index_insert(backend, domain, time, &key, &namespace)?;
                }
            }
        }
    }
}

/// Makes `key` the backend's current key unless it is already.
fn set_key<K: crate::types::Key>(backend: &mut KeyedBackend<K>, key: &K) -> Result<()> {
    if backend.current_key().ok() != Some(key) {
        backend.set_current_key(key)?;
    }
    Ok(())
}

/// Removes one timer from the current key's timer state; `false` when it held none such.
fn drop_timer<K: crate::types::Key, N: crate::types::Data + Eq>(
    backend: &mut KeyedBackend<K>,
    state: &TimerState<N>,
    namespace: &N,
    time: i64,
    event: bool,
) -> Result<bool>
where
    Vec<(N, i64, bool)>: typeinfo_state::StateValue,
{
    let mut timers = state.value(backend, &())?.unwrap_or_default();
    let Some(at) = timers
        .iter()
        .position(|(n, t, e)| *t == time && *e == event && n == namespace)
    else {
        return Ok(false);
    };
    timers.swap_remove(at);
    if timers.is_empty() {
        state.clear(backend, &())?;
    } else {
        state.update(backend, &(), timers)?;
    }
    Ok(true)
}

/// Where a keyed operator's timers live.
enum Store<K: crate::types::Key, N: crate::types::Data> {
    Heap {
        event: TimerQueue<K, N>,
        processing: TimerQueue<K, N>,
    },
    Rocks(Box<RocksTimers<K, N>>),
}

/// A keyed operator's event- and processing-time timers, and the keyed state that holds them
/// in checkpoints (see the module docs).
pub(crate) struct KeyedTimers<K: crate::types::Key, N: crate::types::Data> {
    store: Store<K, N>,
    state: TimerState<N>,
    /// Registrations are dropped (batch mode, while a key's timers fire at its end).
    quiesced: bool,
    /// The first failure of a call that could not return it (see [`KeyedTimers::check`]).
    failed: Option<Error>,
    /// The SST files of this subtask's incremental checkpoints (RocksDB), as their
    /// asynchronous uploads succeed.
    shared: std::sync::Arc<std::sync::Mutex<crate::checkpoint::native_part::SharedFiles>>,
}

impl<K, N> KeyedTimers<K, N>
where
    K: crate::types::Key,
    N: crate::types::Data + Eq + Hash,
    Vec<(N, i64, bool)>: typeinfo_state::StateValue,
{
    /// Registers the timer state `name` in `backend`; with the RocksDB backend the timers'
    /// time index goes into `dir` (opened at the first timer).
    pub(crate) fn new(
        backend: &mut KeyedBackend<K>,
        name: &str,
        setup: &crate::operator::contract::OperatorSetup,
    ) -> Result<Self> {
        let state = backend.value_state(&typeinfo_state::ValueStateDescriptor::new(name))?;
        let store = match backend {
            KeyedBackend::RocksDb(b) if !b.rocks_options().timers_on_heap() => {
                let config = &setup.serializer_config;
                Store::Rocks(Box::new(RocksTimers {
                    dir: setup
                        .state_dir
                        .join(format!("subtask-{}-{name}", setup.subtask)),
                    index: None,
                    key_serializer: K::create_serializer(config)?,
                    namespace_serializer: N::create_serializer(config)?,
                    entry: DataOutputView::with_capacity(64),
                    known: HashTable::new(),
                    hasher: Hasher::default(),
                    processing_head: None,
                    popped: None,
                }))
            }
            _ => Store::Heap {
                event: TimerQueue::new(),
                processing: TimerQueue::new(),
            },
        };
        Ok(KeyedTimers {
            store,
            state,
            quiesced: false,
            failed: None,
            shared: Default::default(),
        })
    }

    /// Registers a timer of `key` (the backend's current key); a timer already registered
    /// is not added again. A failure is kept for [`check`](Self::check).
    #[inline]
    pub(crate) fn register(
        &mut self,
        backend: &mut KeyedBackend<K>,
        domain: TimeDomain,
        key: &K,
        namespace: &N,
        time: i64,
    ) {
        if self.quiesced {
            return;
        }
        match &mut self.store {
            Store::Heap { event, processing } => match domain {
                TimeDomain::EventTime => event.register(key, namespace, time),
                TimeDomain::ProcessingTime => processing.register(key, namespace, time),
            },
            Store::Rocks(r) => {
                if let Err(e) = r.register(backend, &self.state, domain, key, namespace, time) {
                    self.failed.get_or_insert(e);
                }
            }
        }
    }

    /// Deletes a timer of `key` (nothing happens when there is none). A failure is kept for
    /// [`check`](Self::check).
    #[inline]
    pub(crate) fn delete(
        &mut self,
        backend: &mut KeyedBackend<K>,
        domain: TimeDomain,
        key: &K,
        namespace: &N,
        time: i64,
    ) {
        match &mut self.store {
            Store::Heap { event, processing } => {
                match domain {
                    TimeDomain::EventTime => event.delete(key, namespace, time),
                    TimeDomain::ProcessingTime => processing.delete(key, namespace, time),
                };
            }
            Store::Rocks(r) => {
                if let Err(e) = r.delete(backend, &self.state, domain, key, namespace, time) {
                    self.failed.get_or_insert(e);
                }
            }
        }
    }

    /// The first failure of a registration or deletion since the last call.
    ///
    /// # Errors
    ///
    /// That failure.
    pub(crate) fn check(&mut self) -> Result<()> {
        self.failed.take().map_or(Ok(()), Err)
    }

    /// Removes and returns the earliest timer of `domain` at or before `time`.
    ///
    /// # Errors
    ///
    /// A kept failure ([`check`](Self::check)); the RocksDB timers fail.
    pub(crate) fn pop_due(
        &mut self,
        backend: &mut KeyedBackend<K>,
        domain: TimeDomain,
        time: i64,
    ) -> Result<Option<(i64, K, N)>> {
        self.check()?;
        match &mut self.store {
            Store::Heap { event, processing } => Ok(match domain {
                TimeDomain::EventTime => event.pop_due(time),
                TimeDomain::ProcessingTime => processing.pop_due(time),
            }),
            Store::Rocks(r) => r.pop_due(backend, &self.state, domain, time),
        }
    }

    /// No processing-time timer is due before this (possibly a deleted timer's time: a
    /// bound for wake-ups).
    pub(crate) fn next_processing_time(&self) -> Option<i64> {
        match &self.store {
            Store::Heap { processing, .. } => processing.earliest(),
            Store::Rocks(r) => r.processing_head,
        }
    }

    /// The latest time of a live timer of `domain`.
    ///
    /// # Errors
    ///
    /// The RocksDB timers fail.
    pub(crate) fn latest(
        &mut self,
        backend: &KeyedBackend<K>,
        domain: TimeDomain,
    ) -> Result<Option<i64>> {
        match &mut self.store {
            Store::Heap { event, processing } => Ok(match domain {
                TimeDomain::EventTime => event.latest(),
                TimeDomain::ProcessingTime => processing.latest(),
            }),
            Store::Rocks(r) => r.latest(backend, domain),
        }
    }

    /// Batch mode, at the end of a key: the next of its timers to fire, every event-time
    /// timer first, then every processing-time timer, as if both clocks had reached their
    /// end. Registrations are dropped from the first call until the `None` that ends the key
    /// (Flink's `BatchExecutionInternalTimeService` quiesces the same way, so a firing that
    /// registers its next timer cannot loop forever).
    ///
    /// # Errors
    ///
    /// As [`pop_due`](Self::pop_due).
    pub(crate) fn pop_end_of_key(
        &mut self,
        backend: &mut KeyedBackend<K>,
    ) -> Result<Option<(i64, K, N, TimeDomain)>> {
        self.quiesced = true;
        for domain in [TimeDomain::EventTime, TimeDomain::ProcessingTime] {
            if let Some((t, k, n)) = self.pop_due(backend, domain, i64::MAX)? {
                return Ok(Some((t, k, n, domain)));
            }
        }
        self.quiesced = false;
        Ok(None)
    }

    /// Writes the operator's keyed part of a checkpoint: on the heap, the timers into their
    /// state (replacing an earlier snapshot's; RocksDB's are there already), then the
    /// backend's state (whole, or incremental).
    ///
    /// # Errors
    ///
    /// A kept failure; the state cannot be written.
    pub(crate) fn snapshot(
        &mut self,
        backend: &mut KeyedBackend<K>,
        keyed: &crate::checkpoint::store::KeyedPart<'_>,
    ) -> Result<()> {
        self.check()?;
        if let Store::Heap { event, processing } = &self.store {
            for key in backend.keys::<()>(self.state.id(), &())? {
                backend.set_current_key(&key)?;
                self.state.clear(backend, &())?;
            }
            let mut all: HashMap<K, Vec<(N, i64, bool)>, Hasher> = HashMap::default();
            for (queue, is_event) in [(event, true), (processing, false)] {
                for (k, n, t) in queue.entries() {
                    all.entry(k.clone())
                        .or_default()
                        .push((n.clone(), *t, is_event));
                }
            }
            for (k, timers) in all {
                backend.set_current_key(&k)?;
                self.state.update(backend, &(), timers)?;
            }
        }
        keyed.write(backend, &self.shared)
    }

    /// Restores keyed state from the snapshot's files (any parallelism, either backend;
    /// migrations reported on stderr and in the job's result), then the timers it holds;
    /// returns the operator's watermark (the lowest of the old subtasks).
    pub(crate) fn restore(
        &mut self,
        backend: &mut KeyedBackend<K>,
        keyed: &[crate::checkpoint::native_part::KeyedFile],
        parts: &[crate::checkpoint::format::OperatorPart],
        setup: &crate::operator::contract::OperatorSetup,
    ) -> Result<i64> {
        if !keyed.is_empty() {
            let (report, shared) = crate::checkpoint::native_part::restore_keyed(
                backend,
                keyed,
                setup
                    .checkpoints
                    .as_ref()
                    .map(crate::checkpoint::store::CheckpointStore::root),
                &setup.name,
            )?;
            self.shared = std::sync::Arc::new(std::sync::Mutex::new(shared));
            if setup.subtask == 0 {
                for m in &report.migrated {
                    eprintln!(
                        "restore: operator `{}` ({}): migrated {m}",
                        setup.name, setup.key
                    );
                    setup.job.migrated(format!("{}: {m}", setup.name));
                }
            }
        }
        match &mut self.store {
            Store::Rocks(r) => r.rebuild(backend, &self.state)?,
            Store::Heap { event, processing } => {
                for key in backend.keys::<()>(self.state.id(), &())? {
                    backend.set_current_key(&key)?;
                    for (n, t, is_event) in self.state.value(backend, &())?.unwrap_or_default() {
                        let queue = if is_event {
                            &mut *event
                        } else {
                            &mut *processing
                        };
                        queue.register(&key, &n, t);
                    }
                }
            }
        }
        Ok(parts.iter().map(|p| p.watermark).min().unwrap_or(i64::MIN))
    }
}
