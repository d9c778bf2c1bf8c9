//! The entries of one map state under one key and namespace on the heap.
//!
//! Most map states are small (an interval join's buffer of a few timestamps, a top-N's rows,
//! a rule table): those are a vector sorted by user key, one allocation read front to back,
//! found by binary search and walked in order without any copy. A map that grows past
//! [`SMALL`] entries (q15/q16's distinct bidders per day: tens of thousands) becomes a hash
//! table, one probe per access whatever its size; it stays one when it shrinks again (a map
//! that grew once is likely to grow again, and switching back and forth would cost more than
//! it saves). A hash table has no order, so an iteration of a large map sorts a copy of its
//! user keys first ([`crate::heap`]'s map iterator); a snapshot writes its entries in the
//! table's order (no reader depends on the order of a key group's entries).

use std::hash::Hash;

/// The most entries a map keeps as a sorted vector.
pub(crate) const SMALL: usize = 32;

/// foldhash (hashbrown's default), seeded per process.
type Hasher = foldhash::fast::RandomState;

/// `user key -> V`, small and sorted or large and hashed.
pub(crate) enum UserMap<UK, V> {
    /// At most [`SMALL`] entries, sorted by user key, no key twice.
    Small(Vec<(UK, V)>),
    /// A hash table (a map that once held more than [`SMALL`] entries).
    Large(hashbrown::HashMap<UK, V, Hasher>),
}

impl<UK, V> Default for UserMap<UK, V> {
    fn default() -> Self {
        UserMap::Small(Vec::new())
    }
}

impl<UK: Ord + Hash + Eq + Clone, V> UserMap<UK, V> {
    /// The value of `key`.
    #[inline]
    pub(crate) fn get_mut(&mut self, key: &UK) -> Option<&mut V> {
        match self {
            UserMap::Small(entries) => match entries.binary_search_by(|(k, _)| k.cmp(key)) {
                Ok(at) => Some(&mut entries[at].1),
                Err(_) => None,
            },
            UserMap::Large(map) => map.get_mut(key),
        }
    }

    /// Sets the value of `key`.
    #[inline]
    pub(crate) fn insert(&mut self, key: UK, value: V) {
        match self {
            UserMap::Small(entries) => match entries.binary_search_by(|(k, _)| k.cmp(&key)) {
                Ok(at) => entries[at].1 = value,
                Err(at) if entries.len() < SMALL => entries.insert(at, (key, value)),
                Err(_) => {
                    let mut map =
                        hashbrown::HashMap::with_capacity_and_hasher(2 * SMALL, Hasher::default());
                    map.extend(entries.drain(..));
                    map.insert(key, value);
                    *self = UserMap::Large(map);
                }
            },
            UserMap::Large(map) => {
                map.insert(key, value);
            }
        }
    }

    /// Removes `key`'s entry.
    #[inline]
    pub(crate) fn remove(&mut self, key: &UK) -> Option<V> {
        match self {
            UserMap::Small(entries) => entries
                .binary_search_by(|(k, _)| k.cmp(key))
                .ok()
                .map(|at| entries.remove(at).1),
            UserMap::Large(map) => map.remove(key),
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        match self {
            UserMap::Small(entries) => entries.is_empty(),
            UserMap::Large(map) => map.is_empty(),
        }
    }

    /// Keeps the entries for which `keep` is true.
    pub(crate) fn retain(&mut self, mut keep: impl FnMut(&UK, &mut V) -> bool) {
        match self {
            UserMap::Small(entries) => entries.retain_mut(|(k, v)| keep(k, v)),
            UserMap::Large(map) => map.retain(|k, v| keep(k, v)),
        }
    }

    /// Every entry, in no promised order (sorted while small).
    pub(crate) fn iter(&self) -> Box<dyn Iterator<Item = (&UK, &V)> + '_> {
        match self {
            UserMap::Small(entries) => Box::new(entries.iter().map(|(k, v)| (k, v))),
            UserMap::Large(map) => Box::new(map.iter()),
        }
    }

    /// The first entry after `last` in user key order (the first of all without `last`),
    /// when the map is small; `None` from a large map, whose order is its caller's to
    /// establish ([`Self::sorted_keys`]).
    pub(crate) fn small_next_after(&mut self, last: Option<&UK>) -> Option<(&UK, &mut V)> {
        let UserMap::Small(entries) = self else {
            return None;
        };
        let at = match last {
            None => 0,
            Some(last) => entries.partition_point(|(k, _)| k <= last),
        };
        entries.get_mut(at).map(|(k, v)| (&*k, v))
    }

    /// The user keys in order, copied, when the map is large; `None` when it is small (walk
    /// it with [`Self::small_next_after`], no copy).
    pub(crate) fn sorted_keys(&self) -> Option<Vec<UK>> {
        let UserMap::Large(map) = self else {
            return None;
        };
        let mut keys: Vec<UK> = map.keys().cloned().collect();
        keys.sort_unstable();
        Some(keys)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)] // a test panics on what it does not expect

    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use super::*;

    #[derive(Debug, Clone)]
    enum Op {
        Insert(u16, u32),
        Remove(u16),
        Retain(u8),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            6 => (0u16..120, any::<u32>()).prop_map(|(k, v)| Op::Insert(k, v)),
            3 => (0u16..120).prop_map(Op::Remove),
            1 => (2u8..5).prop_map(Op::Retain),
        ]
    }

    /// Every entry in order, through the walk an iteration uses.
    fn in_order(map: &mut UserMap<u16, u32>) -> Vec<(u16, u32)> {
        if let Some(keys) = map.sorted_keys() {
            return keys
                .into_iter()
                .map(|k| {
                    let v = *map.get_mut(&k).expect("a listed key");
                    (k, v)
                })
                .collect();
        }
        let mut out = Vec::new();
        let mut last = None;
        while let Some((k, v)) = map.small_next_after(last.as_ref()) {
            out.push((*k, *v));
            last = Some(*k);
        }
        out
    }

    proptest! {
        /// Any sequence of operations gives the ordered map's contents, order and answers,
        /// across the switch from small to large.
        #[test]
        fn behaves_as_an_ordered_map(ops in prop::collection::vec(op(), 0..400)) {
            let mut ours = UserMap::default();
            let mut model = BTreeMap::new();
            for op in ops {
                match op {
                    Op::Insert(k, v) => {
                        ours.insert(k, v);
                        model.insert(k, v);
                    }
                    Op::Remove(k) => prop_assert_eq!(ours.remove(&k), model.remove(&k)),
                    Op::Retain(m) => {
                        ours.retain(|k, _| k % u16::from(m) != 0);
                        model.retain(|k, _| k % u16::from(m) != 0);
                    }
                }
                prop_assert_eq!(ours.is_empty(), model.is_empty());
            }
            for k in 0..120u16 {
                prop_assert_eq!(ours.get_mut(&k).copied(), model.get(&k).copied());
            }
            let mut listed: Vec<(u16, u32)> = ours.iter().map(|(k, v)| (*k, *v)).collect();
            listed.sort_unstable();
            let expected: Vec<(u16, u32)> = model.into_iter().collect();
            prop_assert_eq!(&listed, &expected);
            prop_assert_eq!(in_order(&mut ours), expected);
        }
    }

    #[test]
    fn a_map_becomes_a_hash_table_past_small_and_stays_one() {
        let mut map = UserMap::default();
        for k in 0..SMALL as u32 {
            map.insert(k, k);
        }
        assert!(matches!(map, UserMap::Small(_)));
        map.insert(SMALL as u32, 0);
        assert!(matches!(map, UserMap::Large(_)));
        for k in 0..=SMALL as u32 {
            map.remove(&k);
        }
        assert!(map.is_empty() && matches!(map, UserMap::Large(_)));
    }
}
