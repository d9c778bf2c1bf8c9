//! Savepoint files (the state crate's backend-independent format) restored into the heap
//! and RocksDB backends, as they are and with migrated types, at the writer's parallelism
//! and rescaled.
//!
//! Seeds are files written by a small heap-backend job (value, list, map, namespaced and
//! TTL states of a derived, a recursive and a primitive type). Most mutated files are
//! sealed again (checksum and end marker recomputed) so that the parser behind the checksum
//! sees them. A restore that succeeds must leave state that reads, snapshots, restores into
//! a fresh heap backend and snapshots again with the same entries.

use std::path::{Path, PathBuf};
use std::time::Duration;

use typeinfo_state::{
    BackendOptions, HeapKeyedStateBackend, KeyedStateBackend, ListState, ListStateDescriptor,
    MapState, MapStateDescriptor, RocksDbKeyedStateBackend, RocksDbOptions, StateTtlConfig,
    StateValue, ValueState, ValueStateDescriptor,
};

use crate::harness::{Check, Outcome, Sub};
use crate::targets::derived::Tree;
use crate::targets::evolution::{v1, v2};
use crate::targets::scratch_dir;
use crate::values::{Arb, Gen};

const MAX_PARALLELISM: u32 = 128;
/// The namespace of the tree state.
const NS: u64 = 7;

/// The states of the job, with the order type `O` of its version.
struct Handles<O> {
    last: ValueState<(), O>,
    history: ListState<(), O>,
    by_day: MapState<(), u32, O>,
    tree: ValueState<u64, Tree>,
    counts: ValueState<(), u64>,
}

fn register<O: StateValue, B: KeyedStateBackend<String>>(
    b: &mut B,
) -> typeinfo_state::Result<Handles<O>> {
    Ok(Handles {
        last: b.value_state(&ValueStateDescriptor::new("last_order"))?,
        history: b.list_state(&ListStateDescriptor::new("history"))?,
        by_day: b.map_state(&MapStateDescriptor::new("by_day"))?,
        tree: b.value_state(&ValueStateDescriptor::new("tree"))?,
        counts: b.value_state(
            &ValueStateDescriptor::new("counts")
                .with_ttl(StateTtlConfig::new(Duration::from_secs(3600))),
        )?,
    })
}

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// Writes a savepoint of `keys` keys of version 1 (subtask `index` of `parallelism`).
fn write_seed(
    g: &mut Gen,
    dir: &Path,
    keys: usize,
    parallelism: u32,
    index: u32,
) -> Result<Vec<u8>, String> {
    let mut b = HeapKeyedStateBackend::<String>::new(
        BackendOptions::for_subtask(MAX_PARALLELISM, parallelism, index).map_err(err)?,
    )
    .map_err(err)?;
    let h = register::<v1::Order, _>(&mut b).map_err(err)?;
    for i in 0..keys {
        if b.set_current_key(&format!("user-{i}")).is_err() {
            continue; // another subtask's key group
        }
        h.last.update(&mut b, &(), v1::Order::arb(g)).map_err(err)?;
        h.history.update(&mut b, &(), Vec::arb(g)).map_err(err)?;
        for day in 0..(i % 3) as u32 {
            h.by_day
                .put(&mut b, &(), day, v1::Order::arb(g))
                .map_err(err)?;
        }
        h.tree.update(&mut b, &NS, Tree::arb(g)).map_err(err)?;
        h.counts.update(&mut b, &(), u64::arb(g)).map_err(err)?;
    }
    let path = dir.join(format!("seed-{keys}-{parallelism}-{index}.kstate"));
    b.snapshot(&path).map_err(err)?;
    std::fs::read(&path).map_err(err)
}

/// Recomputes the checksum and end marker of a keyed snapshot file.
#[allow(clippy::ptr_arg)] // the type of `Sub::seal`, which `_metadata` needs to grow
pub fn seal(bytes: &mut Vec<u8>) {
    let Some(body) = bytes.len().checked_sub(8) else {
        return;
    };
    let crc = crc32fast::hash(&bytes[..body]);
    bytes[body..body + 4].copy_from_slice(&crc.to_le_bytes());
    bytes[body + 4..].copy_from_slice(b"TIKE");
}

/// Reads every state of every key back.
fn read_all<O: StateValue, B: KeyedStateBackend<String>>(
    b: &mut B,
    h: &Handles<O>,
) -> typeinfo_state::Result<()> {
    let mut keys = b.keys::<()>(h.last.id(), &())?;
    keys.extend(b.keys::<()>(h.history.id(), &())?);
    keys.extend(b.keys::<()>(h.by_day.id(), &())?);
    keys.extend(b.keys::<u64>(h.tree.id(), &NS)?);
    keys.extend(b.keys::<()>(h.counts.id(), &())?);
    for key in keys {
        b.set_current_key(&key)?;
        h.last.value(b, &())?;
        h.history.get(b, &())?;
        h.by_day.entries(b, &())?;
        h.tree.value(b, &NS)?;
        h.counts.value(b, &())?;
    }
    Ok(())
}

/// The checks after a restore of `input` into `b` returned.
fn after_restore<O: StateValue, B: KeyedStateBackend<String>>(
    b: &mut B,
    h: &Handles<O>,
    restored: typeinfo_state::Result<typeinfo_state::RestoreReport>,
    options: &BackendOptions,
    dir: &Path,
) -> Check {
    if restored.is_err() {
        return Ok(Outcome::Error);
    }
    read_all(b, h).map_err(|e| format!("restored state does not read back: {e}"))?;
    let first = b
        .snapshot(&dir.join("first.kstate"))
        .map_err(|e| format!("restored state does not snapshot: {e}"))?;
    let mut heap = HeapKeyedStateBackend::<String>::new(options.clone()).map_err(err)?;
    let hh = register::<O, _>(&mut heap).map_err(err)?;
    heap.restore(&[first.path.as_path()]).map_err(|e| {
        format!("the snapshot of restored state does not restore into the heap backend: {e}")
    })?;
    read_all(&mut heap, &hh)
        .map_err(|e| format!("state restored from a re-snapshot does not read back: {e}"))?;
    let second = heap.snapshot(&dir.join("second.kstate")).map_err(err)?;
    if first.entries != second.entries {
        return Err(format!(
            "a re-snapshot holds other entries: {:?} then {:?}",
            first.entries, second.entries
        ));
    }
    Ok(Outcome::Value)
}

fn heap_sub<O: StateValue>(
    name: &str,
    seeds: Vec<Vec<u8>>,
    options: BackendOptions,
) -> Result<Sub, String> {
    let dir = scratch_dir()?;
    let input: PathBuf = dir.path().join("input.kstate");
    Ok(Sub::new(name, seeds, move |bytes| {
        let _keep = &dir;
        std::fs::write(&input, bytes).map_err(err)?;
        let mut b = HeapKeyedStateBackend::<String>::new(options.clone()).map_err(err)?;
        let h = register::<O, _>(&mut b).map_err(err)?;
        let restored = b.restore(&[input.as_path()]);
        after_restore(&mut b, &h, restored, &options, dir.path())
    })
    .seal(seal))
}

fn rocks_sub<O: StateValue>(
    name: &str,
    seeds: Vec<Vec<u8>>,
    options: BackendOptions,
) -> Result<Sub, String> {
    let dir = scratch_dir()?;
    let input: PathBuf = dir.path().join("input.kstate");
    let db_options = options.clone();
    let open = move |dir: &Path,
                     generation: u64|
          -> Result<(RocksDbKeyedStateBackend<String>, Handles<O>), String> {
        let db = dir.join(format!("db-{generation}"));
        let mut b = RocksDbKeyedStateBackend::<String>::open(
            &db,
            db_options.clone(),
            RocksDbOptions::default(),
        )
        .map_err(err)?;
        let h = register::<O, _>(&mut b).map_err(err)?;
        Ok((b, h))
    };
    // One database while restores fail (a failed restore leaves it empty); a fresh one after
    // a restore succeeded, so that every case starts from an empty backend.
    let mut generation = 0;
    let mut backend = Some(open(dir.path(), generation)?);
    Ok(Sub::new(name, seeds, move |bytes| {
        std::fs::write(&input, bytes).map_err(err)?;
        let (b, h) = match &mut backend {
            Some(bh) => bh,
            None => backend.insert(open(dir.path(), generation)?),
        };
        let restored = b.restore(&[input.as_path()]);
        let succeeded = restored.is_ok();
        let result = after_restore(b, h, restored, &options, dir.path());
        if succeeded {
            backend = None;
            let _ = std::fs::remove_dir_all(dir.path().join(format!("db-{generation}")));
            generation += 1;
        }
        result
    })
    .seal(seal))
}

/// Builds the sub-targets.
pub fn build(g: &mut Gen) -> Result<Vec<Sub>, String> {
    let dir = scratch_dir()?;
    let mut seeds = Vec::new();
    for (keys, parallelism, index) in [
        (0, 1, 0),
        (1, 1, 0),
        (12, 1, 0),
        (40, 1, 0),
        (20, 2, 0),
        (20, 2, 1),
    ] {
        seeds.push(write_seed(g, dir.path(), keys, parallelism, index)?);
    }
    let full = BackendOptions::for_subtask(MAX_PARALLELISM, 1, 0).map_err(err)?;
    let half = BackendOptions::for_subtask(MAX_PARALLELISM, 2, 1).map_err(err)?;
    Ok(vec![
        heap_sub::<v1::Order>("heap", seeds.clone(), full.clone())?,
        heap_sub::<v2::Order>("heap, migrated", seeds.clone(), full.clone())?,
        heap_sub::<v1::Order>("heap, subtask 1 of 2", seeds.clone(), half.clone())?,
        rocks_sub::<v1::Order>("rocksdb", seeds.clone(), full.clone())?,
        rocks_sub::<v2::Order>("rocksdb, migrated", seeds.clone(), full)?,
        rocks_sub::<v1::Order>("rocksdb, subtask 1 of 2", seeds, half)?,
    ])
}
