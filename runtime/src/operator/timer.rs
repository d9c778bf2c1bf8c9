//! Timers of keyed operators: one per (key, namespace, time), fired in time order.

use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasher, Hash};

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
    /// Registrations are dropped (batch mode, while a key's timers fire at its end).
    quiesced: bool,
}

impl<K: Clone + Eq + Hash, N: Clone + Eq + Hash> TimerQueue<K, N> {
    pub(crate) fn new() -> Self {
        TimerQueue {
            set: HashTable::new(),
            hasher: Hasher::default(),
            by_time: BTreeMap::new(),
            quiesced: false,
        }
    }

    /// Drops registrations from now on (`true`) or takes them again (`false`).
    pub(crate) fn quiesce(&mut self, quiesced: bool) {
        self.quiesced = quiesced;
    }

    #[inline]
    fn hash(hasher: &Hasher, key: &K, namespace: &N, time: i64) -> u64 {
        hasher.hash_one((key, namespace, time))
    }

    /// Registers a timer; a timer already registered is not added again.
    #[inline]
    pub(crate) fn register(&mut self, key: &K, namespace: &N, time: i64) {
        if self.quiesced {
            return;
        }
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
/// namespace, time and domain (`true` for event time). Written into the state backend at each
/// checkpoint so that they move with their key groups when a job is rescaled.
pub(crate) type TimerState<N> = typeinfo_state::ValueState<(), Vec<(N, i64, bool)>>;

/// A keyed operator's event- and processing-time timers, and the keyed state that holds them
/// in checkpoints.
pub(crate) struct KeyedTimers<K, N> {
    pub(crate) event: TimerQueue<K, N>,
    pub(crate) processing: TimerQueue<K, N>,
    state: TimerState<N>,
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
    /// Registers the timer state `name` in `backend`.
    pub(crate) fn new(
        backend: &mut typeinfo_state::KeyedBackend<K>,
        name: &str,
    ) -> crate::error::Result<Self> {
        use typeinfo_state::KeyedStateBackend;
        let state = backend.value_state(&typeinfo_state::ValueStateDescriptor::new(name))?;
        Ok(KeyedTimers {
            event: TimerQueue::new(),
            processing: TimerQueue::new(),
            state,
            shared: Default::default(),
        })
    }

    /// Writes the operator's keyed part of a checkpoint: the timers into their state
    /// (replacing an earlier snapshot's), then the backend's state (whole, or incremental).
    /// Batch mode, at the end of a key: the next of its timers to fire, every event-time
    /// timer first, then every processing-time timer, as if both clocks had reached their
    /// end. Registrations are dropped from the first call until the `None` that ends the key
    /// (Flink's `BatchExecutionInternalTimeService` quiesces the same way, so a firing that
    /// registers its next timer cannot loop forever).
    pub(crate) fn pop_end_of_key(
        &mut self,
    ) -> Option<(i64, K, N, crate::operator::context::TimeDomain)> {
        self.event.quiesce(true);
        self.processing.quiesce(true);
        if let Some((t, k, n)) = self.event.pop_due(i64::MAX) {
            return Some((t, k, n, crate::operator::context::TimeDomain::EventTime));
        }
        if let Some((t, k, n)) = self.processing.pop_due(i64::MAX) {
            return Some((
                t,
                k,
                n,
                crate::operator::context::TimeDomain::ProcessingTime,
            ));
        }
        self.event.quiesce(false);
        self.processing.quiesce(false);
        None
    }

    pub(crate) fn snapshot(
        &mut self,
        backend: &mut typeinfo_state::KeyedBackend<K>,
        keyed: &crate::checkpoint::store::KeyedPart<'_>,
    ) -> crate::error::Result<()> {
        use typeinfo_state::KeyedStateBackend;
        for key in backend.keys::<()>(self.state.id(), &())? {
            backend.set_current_key(&key)?;
            self.state.clear(backend, &())?;
        }
        let mut all: HashMap<K, Vec<(N, i64, bool)>, Hasher> = HashMap::default();
        for (queue, is_event) in [(&self.event, true), (&self.processing, false)] {
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
        keyed.write(backend, &self.shared)
    }

    /// Restores keyed state from the snapshot's files (any parallelism, either backend;
    /// migrations reported on stderr and in the job's result), then the timers it holds;
    /// returns the operator's watermark (the lowest of the old subtasks).
    pub(crate) fn restore(
        &mut self,
        backend: &mut typeinfo_state::KeyedBackend<K>,
        keyed: &[crate::checkpoint::native_part::KeyedFile],
        parts: &[crate::checkpoint::format::OperatorPart],
        setup: &crate::operator::contract::OperatorSetup,
    ) -> crate::error::Result<i64> {
        use typeinfo_state::KeyedStateBackend;
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
        for key in backend.keys::<()>(self.state.id(), &())? {
            backend.set_current_key(&key)?;
            for (n, t, is_event) in self.state.value(backend, &())?.unwrap_or_default() {
                let queue = if is_event {
                    &mut self.event
                } else {
                    &mut self.processing
                };
                queue.register(&key, &n, t);
            }
        }
        Ok(parts.iter().map(|p| p.watermark).min().unwrap_or(i64::MIN))
    }
}
