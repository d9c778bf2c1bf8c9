//! The storage of one state on the heap: per key group, one hash table of
//! `(key, namespace, state)`, found with one probe from a borrowed key and namespace.
//!
//! A table per key group keeps snapshots (written key group by key group) and rescaling cheap;
//! one flat table per group, instead of a map of keys holding maps of namespaces, halves the
//! dependent memory loads of an access (the window operator touches a state of a different key
//! with every record, so those loads are cache misses on the hot path).

use std::hash::{BuildHasher, Hash};

use hashbrown::hash_table::Entry;
use hashbrown::HashTable;

/// foldhash (hashbrown's default), seeded per process.
type Hasher = foldhash::fast::RandomState;

/// `(key, namespace) -> S` per key group.
pub(crate) struct KeyGroupMaps<K, N, S> {
    groups: Vec<HashTable<(K, N, S)>>,
    hasher: Hasher,
    /// Where the next incremental sweep starts, in iteration order of the swept group.
    cursor: usize,
}

impl<K: Eq + Hash + Clone, N: Eq + Hash + Clone, S> KeyGroupMaps<K, N, S> {
    /// Empty tables for `groups` key groups.
    pub(crate) fn new(groups: usize) -> Self {
        Self {
            groups: (0..groups).map(|_| HashTable::new()).collect(),
            hasher: Hasher::default(),
            cursor: 0,
        }
    }

    #[inline]
    fn hash(hasher: &Hasher, key: &K, namespace: &N) -> u64 {
        hasher.hash_one((key, namespace))
    }

    /// The state of `key` in `namespace`.
    #[inline]
    pub(crate) fn get_mut(&mut self, group: usize, key: &K, namespace: &N) -> Option<&mut S> {
        let hash = Self::hash(&self.hasher, key, namespace);
        self.groups[group]
            .find_mut(hash, |(k, n, _)| k == key && n == namespace)
            .map(|(_, _, s)| s)
    }

    /// The entry of `key` in `namespace` (one probe).
    #[inline]
    fn entry<'a>(&'a mut self, group: usize, key: &K, namespace: &N) -> Entry<'a, (K, N, S)> {
        let hasher = &self.hasher;
        let hash = Self::hash(hasher, key, namespace);
        self.groups[group].entry(
            hash,
            |(k, n, _)| k == key && n == namespace,
            |(k, n, _)| Self::hash(hasher, k, n),
        )
    }

    /// The state of `key` in `namespace`, made by `make` when there is none (one probe).
    #[inline]
    pub(crate) fn get_or_insert_with(
        &mut self,
        group: usize,
        key: &K,
        namespace: &N,
        make: impl FnOnce() -> S,
    ) -> &mut S {
        let occupied = match self.entry(group, key, namespace) {
            Entry::Occupied(o) => o,
            Entry::Vacant(v) => v.insert((key.clone(), namespace.clone(), make())),
        };
        &mut occupied.into_mut().2
    }

    /// Changes the state of `key` in `namespace` in place, or stores what `update` makes
    /// from nothing (nothing is stored when it makes `None`): one probe either way.
    #[inline]
    pub(crate) fn update_or_insert(
        &mut self,
        group: usize,
        key: &K,
        namespace: &N,
        update: impl FnOnce(Option<&mut S>) -> Option<S>,
    ) {
        match self.entry(group, key, namespace) {
            Entry::Occupied(mut o) => {
                update(Some(&mut o.get_mut().2));
            }
            Entry::Vacant(v) => {
                if let Some(state) = update(None) {
                    v.insert((key.clone(), namespace.clone(), state));
                }
            }
        }
    }

    /// Sets the state of `key` in `namespace`.
    #[inline]
    pub(crate) fn insert(&mut self, group: usize, key: &K, namespace: &N, state: S) {
        match self.entry(group, key, namespace) {
            Entry::Occupied(mut o) => o.get_mut().2 = state,
            Entry::Vacant(v) => {
                v.insert((key.clone(), namespace.clone(), state));
            }
        }
    }

    /// Removes the state of `key` in `namespace`.
    pub(crate) fn remove(&mut self, group: usize, key: &K, namespace: &N) -> Option<S> {
        let hash = Self::hash(&self.hasher, key, namespace);
        self.groups[group]
            .find_entry(hash, |(k, n, _)| k == key && n == namespace)
            .ok()
            .map(|o| o.remove().0 .2)
    }

    /// Every `(key, namespace, state)` of one key group, in no particular order.
    pub(crate) fn iter(&self, group: usize) -> impl Iterator<Item = &(K, N, S)> {
        self.groups[group].iter()
    }

    /// Appends every key with a state in `namespace` (each once: a key has one entry per
    /// namespace).
    pub(crate) fn keys_in(&self, namespace: &N, out: &mut Vec<K>) {
        out.extend(
            self.groups
                .iter()
                .flat_map(HashTable::iter)
                .filter(|(_, n, _)| n == namespace)
                .map(|(k, _, _)| k.clone()),
        );
    }

    /// Removes every entry of `group`.
    pub(crate) fn clear_group(&mut self, group: usize) {
        if let Some(table) = self.groups.get_mut(group) {
            table.clear();
        }
    }

    /// Removes everything.
    pub(crate) fn clear(&mut self) {
        self.groups.iter_mut().for_each(HashTable::clear);
    }

    /// Looks at the next `n` entries of `group` (continuing where the last sweep stopped) and
    /// removes those `expired` says are gone (it may change the entries it keeps).
    pub(crate) fn sweep(
        &mut self,
        group: usize,
        n: usize,
        mut expired: impl FnMut(&mut S) -> bool,
    ) {
        let table = &mut self.groups[group];
        if n == 0 || table.is_empty() {
            return;
        }
        if self.cursor >= table.len() {
            self.cursor = 0;
        }
        let gone: Vec<(K, N)> = table
            .iter_mut()
            .skip(self.cursor)
            .take(n)
            .filter_map(|(k, ns, s)| expired(s).then(|| (k.clone(), ns.clone())))
            .collect();
        self.cursor += n;
        for (key, namespace) in gone {
            self.remove(group, &key, &namespace);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn update_or_insert_changes_in_place_inserts_or_leaves_absent() {
        let mut maps = KeyGroupMaps::<u64, u32, i64>::new(2);
        maps.update_or_insert(1, &7, &0, |slot| {
            assert!(slot.is_none());
            Some(10)
        });
        maps.update_or_insert(1, &7, &0, |slot| {
            *slot.expect("inserted before") += 5;
            None
        });
        maps.update_or_insert(1, &8, &0, |slot| {
            assert!(slot.is_none());
            None
        });
        assert_eq!(maps.get_mut(1, &7, &0), Some(&mut 15));
        assert_eq!(maps.get_mut(1, &8, &0), None);
        assert_eq!(maps.get_mut(0, &7, &0), None);
        assert_eq!(maps.iter(1).count(), 1);
    }
}
