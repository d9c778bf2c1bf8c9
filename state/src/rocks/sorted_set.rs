//! Ordered sets of byte strings on disk, popped from the front: the time index of the
//! RocksDB backend's timers (the role of Flink's `RocksDBCachingPriorityQueueSet`), so that
//! a job's memory does not grow with the number of pending timers.
//!
//! A [`RocksDbSortedSet`] is a RocksDB instance of its own, beside the backend's database
//! and sharing its managed memory (block cache and write buffer manager): it is a derived
//! index, not state. It is not part of native checkpoints or savepoints (the owner keeps the
//! truth in keyed state and rebuilds the index after a restore), so checkpoints do not carry
//! it twice and a rescaled restore needs no clipping of it.
//!
//! Each set has lanes (column families), each ordered by its entries' bytes. Popping from the
//! front of an LSM tree is the classic case of a queue in RocksDB: deletes of the head leave
//! tombstones that every later seek to the head must step over. Here a lane pops in batches:
//! it reads up to [`POP_BATCH`] entries from its *floor* (the lowest key that can still hold
//! one), deletes them with one range tombstone, hands them out from memory, and raises its
//! floor past them, so a seek never walks over its own earlier pops. Entries inserted below
//! the last entry read go into that in-memory batch, in order, so the front is always the
//! smallest entry of the lane.

use std::collections::VecDeque;
use std::fs;
use std::path::{Path, PathBuf};

use rocksdb::{ColumnFamilyDescriptor, Options, ReadOptions, WriteBatch, WriteOptions, DB};

use super::backend::RocksDbKeyedStateBackend;
use super::error::{missing_cf, rocks};
use crate::descriptor::StateKey;
use crate::error::{Error, Result};

/// How many entries a lane reads from disk at once when its front is asked for.
pub const POP_BATCH: usize = 256;

/// How many inserts and removals wait in one write batch before they are written (sooner
/// when the set is read).
const WRITE_BATCH: usize = 1024;

/// The marker file of a sorted set's directory (a non-empty directory without it is refused).
const MARKER: &str = "TYPEINFO_SORTED_SET";

/// One lane: where its entries start, and the batch read from disk but not yet popped.
#[derive(Debug, Default)]
struct Lane {
    /// Every entry on disk is at or above this key.
    floor: Vec<u8>,
    /// Entries below `read_to` that are not yet popped, in order (they are no longer on disk).
    batch: VecDeque<Vec<u8>>,
    /// The exclusive end of the last batch read (entries below it live in `batch`), when a
    /// batch is held.
    read_to: Option<Vec<u8>>,
}

/// Ordered sets of byte strings in a RocksDB instance of their own (see the module docs).
pub struct RocksDbSortedSet {
    db: DB,
    lanes: Vec<Lane>,
    /// Inserts and removals not yet written, in order (written before any read).
    pending: WriteBatch,
    write: WriteOptions,
    path: PathBuf,
    /// Kept alive after the database (declared after it).
    _options: Options,
}

impl std::fmt::Debug for RocksDbSortedSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RocksDbSortedSet")
            .field("path", &self.path)
            .field("lanes", &self.lanes.len())
            .finish_non_exhaustive()
    }
}

/// The column family of `lane`.
fn cf_of(db: &DB, lane: usize) -> Result<&rocksdb::ColumnFamily> {
    let name = format!("lane{lane}");
    db.cf_handle(&name).ok_or_else(|| missing_cf(&name))
}

/// The smallest key above `key`.
fn successor(key: &[u8]) -> Vec<u8> {
    let mut next = Vec::with_capacity(key.len() + 1);
    next.extend_from_slice(key);
    next.push(0);
    next
}

impl<K: StateKey> RocksDbKeyedStateBackend<K> {
    /// Opens an empty sorted set with `lanes` lanes in `dir` (created when missing; a sorted
    /// set left there earlier is replaced; any other non-empty directory is refused), sharing
    /// this backend's managed memory and table options.
    ///
    /// # Errors
    ///
    /// `dir` cannot be prepared; RocksDB cannot open it.
    pub fn open_sorted_set(&self, dir: &Path, lanes: usize) -> Result<RocksDbSortedSet> {
        prepare(dir)?;
        let options = self.db_options();
        let cf_options = self.rocks_options.column_family(&self.memory);
        let names: Vec<String> = (0..lanes).map(|i| format!("lane{i}")).collect();
        let descriptors = names
            .iter()
            .map(|n| ColumnFamilyDescriptor::new(n, cf_options.clone()));
        let mut open = options.clone();
        open.create_missing_column_families(true);
        let db = DB::open_cf_descriptors(&open, dir, descriptors).map_err(rocks)?;
        fs::write(dir.join(MARKER), b"typeinfo sorted set\n")
            .map_err(|e| Error::io(dir.join(MARKER), e))?;
        let mut write = WriteOptions::default();
        write.disable_wal(true);
        Ok(RocksDbSortedSet {
            db,
            lanes: (0..lanes).map(|_| Lane::default()).collect(),
            pending: WriteBatch::default(),
            write,
            path: dir.to_owned(),
            _options: open,
        })
    }
}

fn prepare(dir: &Path) -> Result<()> {
    match fs::read_dir(dir) {
        Ok(mut entries) => {
            if entries.next().is_none() {
                return Ok(());
            }
            if !dir.join(MARKER).exists() {
                return Err(Error::InvalidConfig(format!(
                    "`{}` is not empty and is not a typeinfo sorted set: refusing to use it",
                    dir.display()
                )));
            }
            fs::remove_dir_all(dir).map_err(|e| Error::io(dir, e))?;
            fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))
        }
        Err(e) => Err(Error::io(dir, e)),
    }
}

impl RocksDbSortedSet {
    /// The directory of the set.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn cf(&self, lane: usize) -> Result<&rocksdb::ColumnFamily> {
        cf_of(&self.db, lane)
    }

    fn lane(&mut self, lane: usize) -> Result<&mut Lane> {
        let count = self.lanes.len();
        self.lanes.get_mut(lane).ok_or_else(|| {
            Error::InvalidConfig(format!("lane {lane} of a sorted set with {count} lanes"))
        })
    }

    /// Adds `entry` to `lane` (adding an entry that is there changes nothing).
    ///
    /// # Errors
    ///
    /// An unknown lane; RocksDB fails.
    pub fn insert(&mut self, lane: usize, entry: &[u8]) -> Result<()> {
        let l = self.lane(lane)?;
        if l.read_to.as_deref().is_some_and(|end| entry < end) {
            if let Err(at) = l.batch.binary_search_by(|e| e.as_slice().cmp(entry)) {
                l.batch.insert(at, entry.to_vec());
            }
            return Ok(());
        }
        if entry < l.floor.as_slice() {
            l.floor = entry.to_vec();
        }
        let cf = cf_of(&self.db, lane)?;
        self.pending.put_cf(cf, entry, []);
        self.write_pending_if_full()
    }

    fn write_pending_if_full(&mut self) -> Result<()> {
        if self.pending.len() >= WRITE_BATCH {
            self.write_pending()?;
        }
        Ok(())
    }

    /// Writes the waiting inserts and removals.
    fn write_pending(&mut self) -> Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let batch = std::mem::take(&mut self.pending);
        self.db.write_opt(batch, &self.write).map_err(rocks)
    }

    /// Removes `entry` from `lane` (removing an entry that is not there changes nothing).
    ///
    /// # Errors
    ///
    /// An unknown lane; RocksDB fails.
    pub fn remove(&mut self, lane: usize, entry: &[u8]) -> Result<()> {
        let l = self.lane(lane)?;
        if l.read_to.as_deref().is_some_and(|end| entry < end) {
            if let Ok(at) = l.batch.binary_search_by(|e| e.as_slice().cmp(entry)) {
                l.batch.remove(at);
            }
            return Ok(());
        }
        let cf = cf_of(&self.db, lane)?;
        self.pending.delete_cf(cf, entry);
        self.write_pending_if_full()
    }

    /// Reads the next batch of `lane` from disk into memory when none is held; the batch's
    /// entries leave the disk with one range delete.
    fn fill(&mut self, lane: usize) -> Result<()> {
        if self.lanes.get(lane).is_some_and(|l| !l.batch.is_empty()) {
            return Ok(());
        }
        self.write_pending()?;
        let floor = self.lane(lane)?.floor.clone();
        let mut read = ReadOptions::default();
        read.set_iterate_lower_bound(floor.clone());
        let cf = self.cf(lane)?;
        let mut it = self.db.raw_iterator_cf_opt(cf, read);
        it.seek(&floor);
        let mut batch = VecDeque::new();
        while batch.len() < POP_BATCH {
            let Some(k) = it.key() else { break };
            batch.push_back(k.to_vec());
            it.next();
        }
        it.status().map_err(rocks)?;
        drop(it);
        let Some(last) = batch.back() else {
            let l = self.lane(lane)?;
            l.read_to = None;
            return Ok(());
        };
        let end = successor(last);
        let cf = self.cf(lane)?;
        self.db
            .delete_range_cf_opt(cf, &floor, &end, &self.write)
            .map_err(rocks)?;
        let l = self.lane(lane)?;
        l.floor.clone_from(&end);
        l.read_to = Some(end);
        l.batch = batch;
        Ok(())
    }

    /// The smallest entry of `lane`, if any.
    ///
    /// # Errors
    ///
    /// An unknown lane; RocksDB fails.
    pub fn first(&mut self, lane: usize) -> Result<Option<&[u8]>> {
        self.fill(lane)?;
        Ok(self.lane(lane)?.batch.front().map(Vec::as_slice))
    }

    /// Removes and returns the smallest entry of `lane` when it is below `bound` (`None`: any).
    ///
    /// # Errors
    ///
    /// An unknown lane; RocksDB fails.
    pub fn pop_below(&mut self, lane: usize, bound: Option<&[u8]>) -> Result<Option<Vec<u8>>> {
        self.fill(lane)?;
        let l = self.lane(lane)?;
        if l.batch
            .front()
            .is_some_and(|e| bound.is_none_or(|b| e.as_slice() < b))
        {
            Ok(l.batch.pop_front())
        } else {
            Ok(None)
        }
    }

    /// The largest entry of `lane`, if any.
    ///
    /// # Errors
    ///
    /// An unknown lane; RocksDB fails.
    pub fn last(&mut self, lane: usize) -> Result<Option<Vec<u8>>> {
        self.write_pending()?;
        let cf = self.cf(lane)?;
        // A forward scan: memtables that update in place cannot iterate backwards, and this
        // is asked once at the end of an input, not per record.
        let floor = self
            .lanes
            .get(lane)
            .map(|l| l.floor.clone())
            .unwrap_or_default();
        let mut it = self.db.raw_iterator_cf(cf);
        it.seek(&floor);
        let mut last = None;
        while let Some(k) = it.key() {
            last = Some(k.to_vec());
            it.next();
        }
        it.status().map_err(rocks)?;
        drop(it);
        let held = self.lane(lane)?.batch.back().cloned();
        Ok(last.or(held))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)] // a test panics on what it does not expect

    use std::collections::BTreeSet;

    use proptest::prelude::*;

    use super::*;
    use crate::key_group::KeyGroupRange;
    use crate::options::BackendOptions;
    use crate::rocks::options::RocksDbOptions;

    fn backend(dir: &Path) -> RocksDbKeyedStateBackend<u64> {
        let options = BackendOptions::new(128, KeyGroupRange::all(128)).unwrap();
        RocksDbKeyedStateBackend::open(&dir.join("db"), options, RocksDbOptions::default()).unwrap()
    }

    #[derive(Debug, Clone)]
    enum Op {
        Insert(u8, Vec<u8>),
        Remove(u8, Vec<u8>),
        Pop(u8, Vec<u8>),
        First(u8),
        Last(u8),
    }

    fn entry() -> impl Strategy<Value = Vec<u8>> {
        prop::collection::vec(0u8..4, 0..4)
    }

    fn op() -> impl Strategy<Value = Op> {
        let lane = 0u8..2;
        prop_oneof![
            6 => (lane.clone(), entry()).prop_map(|(l, e)| Op::Insert(l, e)),
            2 => (lane.clone(), entry()).prop_map(|(l, e)| Op::Remove(l, e)),
            4 => (lane.clone(), entry()).prop_map(|(l, e)| Op::Pop(l, e)),
            1 => lane.clone().prop_map(Op::First),
            1 => lane.prop_map(Op::Last),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// Every operation answers as an ordered set in memory does (`BTreeSet`), across
        /// batches read from disk and entries inserted below and above the batch.
        #[test]
        fn behaves_as_an_ordered_set(ops in prop::collection::vec(op(), 1..300)) {
            let dir = tempfile::tempdir().unwrap();
            let b = backend(dir.path());
            let mut set = b.open_sorted_set(&dir.path().join("set"), 2).unwrap();
            let mut model = [BTreeSet::<Vec<u8>>::new(), BTreeSet::new()];
            for op in ops {
                match op {
                    Op::Insert(l, e) => {
                        set.insert(l.into(), &e).unwrap();
                        model[usize::from(l)].insert(e);
                    }
                    Op::Remove(l, e) => {
                        set.remove(l.into(), &e).unwrap();
                        model[usize::from(l)].remove(&e);
                    }
                    Op::Pop(l, bound) => {
                        let m = &mut model[usize::from(l)];
                        let expected = m.first().filter(|e| **e < bound).cloned();
                        if let Some(e) = &expected {
                            m.remove(e);
                        }
                        prop_assert_eq!(set.pop_below(l.into(), Some(&bound)).unwrap(), expected);
                    }
                    Op::First(l) => {
                        let expected = model[usize::from(l)].first().cloned();
                        prop_assert_eq!(set.first(l.into()).unwrap().map(<[u8]>::to_vec), expected);
                    }
                    Op::Last(l) => {
                        let expected = model[usize::from(l)].last().cloned();
                        prop_assert_eq!(set.last(l.into()).unwrap(), expected);
                    }
                }
            }
        }
    }

    /// Many more entries than a batch come back in order, and popping them all leaves the
    /// lane empty (the range deletes cover exactly what was read).
    #[test]
    fn pops_many_batches_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let b = backend(dir.path());
        let mut set = b.open_sorted_set(&dir.path().join("set"), 1).unwrap();
        for i in (0u32..5_000).rev() {
            set.insert(0, &i.to_be_bytes()).unwrap();
        }
        let mut popped = Vec::new();
        while let Some(e) = set.pop_below(0, None).unwrap() {
            popped.push(u32::from_be_bytes(e.try_into().unwrap()));
            if popped.len() == 1000 {
                // Below the batch held in memory: it must come out next.
                set.insert(0, &0u32.to_be_bytes()).unwrap();
            }
        }
        let mut expected: Vec<u32> = (0..5_000).collect();
        expected.insert(1000, 0);
        assert_eq!(popped, expected);
        assert_eq!(set.first(0).unwrap(), None);
    }

    /// A directory that holds something else is refused, never wiped; a set's own directory
    /// is replaced.
    #[test]
    fn refuses_foreign_directories() {
        let dir = tempfile::tempdir().unwrap();
        let b = backend(dir.path());
        let foreign = dir.path().join("foreign");
        fs::create_dir_all(&foreign).unwrap();
        fs::write(foreign.join("notes.txt"), b"mine").unwrap();
        let error = b.open_sorted_set(&foreign, 1).unwrap_err();
        assert!(error.to_string().contains("refusing"), "{error}");
        assert!(foreign.join("notes.txt").exists());

        let own = dir.path().join("set");
        let mut set = b.open_sorted_set(&own, 1).unwrap();
        set.insert(0, b"a").unwrap();
        drop(set);
        let mut set = b.open_sorted_set(&own, 1).unwrap();
        assert_eq!(set.first(0).unwrap(), None, "a set opens empty");
    }
}
