//! Timers of keyed operators: one per (key, namespace, time), fired in time order.

use std::collections::{BTreeMap, HashMap};
use std::hash::Hash;

type Hasher = foldhash::fast::RandomState;

/// A set of timers deduplicated by (key, namespace, time), popped in time order.
///
/// Deleted timers stay in the time index and are skipped when popped.
pub(crate) struct TimerQueue<K, N> {
    by_key: HashMap<K, Vec<(N, i64)>, Hasher>,
    by_time: BTreeMap<i64, Vec<(K, N)>>,
}

impl<K: Clone + Eq + Hash, N: Clone + Eq> TimerQueue<K, N> {
    pub(crate) fn new() -> Self {
        TimerQueue { by_key: HashMap::default(), by_time: BTreeMap::new() }
    }

    /// Registers a timer; a timer already registered is not added again.
    #[inline]
    pub(crate) fn register(&mut self, key: &K, namespace: &N, time: i64) {
        match self.by_key.get_mut(key) {
            Some(timers) => {
                if timers.iter().any(|(n, t)| *t == time && n == namespace) {
                    return;
                }
                timers.push((namespace.clone(), time));
            }
            None => {
                self.by_key.insert(key.clone(), vec![(namespace.clone(), time)]);
            }
        }
        self.by_time.entry(time).or_default().push((key.clone(), namespace.clone()));
    }

    /// Deletes a timer (nothing happens if there is none).
    pub(crate) fn delete(&mut self, key: &K, namespace: &N, time: i64) {
        if let Some(timers) = self.by_key.get_mut(key) {
            if let Some(i) = timers.iter().position(|(n, t)| *t == time && n == namespace) {
                timers.swap_remove(i);
                if timers.is_empty() {
                    self.by_key.remove(key);
                }
            }
        }
    }

    /// The earliest registered time.
    pub(crate) fn peek_time(&mut self) -> Option<i64> {
        loop {
            let (&time, entries) = self.by_time.iter_mut().next()?;
            while let Some((k, n)) = entries.last() {
                if self.by_key.get(k).is_some_and(|t| t.iter().any(|(n2, t2)| *t2 == time && n2 == n)) {
                    return Some(time);
                }
                entries.pop();
            }
            self.by_time.remove(&time);
        }
    }

    /// Removes and returns the earliest timer at or before `time`.
    pub(crate) fn pop_due(&mut self, time: i64) -> Option<(i64, K, N)> {
        let due = self.peek_time()?;
        if due > time {
            return None;
        }
        let entries = self.by_time.get_mut(&due)?;
        let (key, namespace) = entries.pop()?;
        if entries.is_empty() {
            self.by_time.remove(&due);
        }
        self.delete(&key, &namespace, due);
        Some((due, key, namespace))
    }

    /// The earliest time in the index (possibly of a deleted timer: a bound for wake-ups).
    pub(crate) fn earliest(&self) -> Option<i64> {
        self.by_time.keys().next().copied()
    }
}
