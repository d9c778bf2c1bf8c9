//! The RocksDB backend's write cache: what the cache holds (written, changed, cleared) is in
//! every snapshot and iteration taken while it holds it, whatever its size.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test panics on what it does not expect

use std::path::Path;

use typeinfo_state::*;

const KEYS: u64 = 1_000;

fn options() -> BackendOptions {
    BackendOptions::new(128, KeyGroupRange::all(128)).unwrap()
}

fn open(dir: &Path, cache: usize) -> RocksDbKeyedStateBackend<u64> {
    RocksDbKeyedStateBackend::open(
        dir,
        options(),
        RocksDbOptions::default()
            .managed_memory_bytes(8 << 20)
            .write_cache_bytes(cache),
    )
    .unwrap()
}

/// Writes every key, adds to every key's sum twice, clears every tenth key; then checks what
/// the backend reads, what `keys` lists, and what a savepoint restored into the heap holds.
fn holds_what_was_written(cache: usize) {
    let dir = tempfile::tempdir().unwrap();
    let mut b = open(&dir.path().join("db"), cache);
    let value = ValueStateDescriptor::<u64>::new("value");
    let sum = ReducingStateDescriptor::<u64>::new("sum", |a: &u64, b: &u64| a + b);
    let v = b.value_state::<u32, u64>(&value).unwrap();
    let s = b.reducing_state::<(), u64>(&sum).unwrap();
    for k in 0..KEYS {
        b.set_current_key(&k).unwrap();
        v.update(&mut b, &7, k * 3).unwrap();
        s.add(&mut b, &(), k).unwrap();
        s.add(&mut b, &(), 1).unwrap();
    }
    for k in (0..KEYS).step_by(10) {
        b.set_current_key(&k).unwrap();
        v.clear(&mut b, &7).unwrap();
        s.clear(&mut b, &()).unwrap();
    }
    let expected = |k: u64| (k % 10 != 0).then_some((k * 3, k + 1));
    for k in 0..KEYS {
        b.set_current_key(&k).unwrap();
        let read = (v.value(&mut b, &7).unwrap(), s.get(&mut b, &()).unwrap());
        assert_eq!(
            read,
            expected(k).map_or((None, None), |(a, b)| (Some(a), Some(b)))
        );
    }
    let mut keys = b.keys(v.id(), &7u32).unwrap();
    keys.sort_unstable();
    let live: Vec<u64> = (0..KEYS).filter(|k| k % 10 != 0).collect();
    assert_eq!(
        keys, live,
        "keys lists what the cache holds, not what it cleared"
    );

    // A savepoint taken now holds the cached values; the heap backend reads them back.
    let path = dir.path().join("savepoint.kstate");
    b.snapshot(&path).unwrap();
    let mut heap = HeapKeyedStateBackend::<u64>::new(options()).unwrap();
    let hv = heap.value_state::<u32, u64>(&value).unwrap();
    let hs = heap.reducing_state::<(), u64>(&sum).unwrap();
    heap.restore(&[&path]).unwrap();
    for k in 0..KEYS {
        heap.set_current_key(&k).unwrap();
        let read = (
            hv.value(&mut heap, &7).unwrap(),
            hs.get(&mut heap, &()).unwrap(),
        );
        assert_eq!(
            read,
            expected(k).map_or((None, None), |(a, b)| (Some(a), Some(b)))
        );
    }

    // A native checkpoint taken after more writes holds them too.
    for k in 0..KEYS {
        b.set_current_key(&k).unwrap();
        v.update(&mut b, &7, k).unwrap();
    }
    let native = dir.path().join("native");
    b.native_snapshot(&native).unwrap();
    let mut restored = open(&dir.path().join("restored"), cache);
    let rv = restored.value_state::<u32, u64>(&value).unwrap();
    restored
        .reducing_state::<(), u64>(&sum)
        .expect("register before restore");
    restored.restore_native(&[&native]).unwrap();
    for k in 0..KEYS {
        restored.set_current_key(&k).unwrap();
        assert_eq!(rv.value(&mut restored, &7).unwrap(), Some(k));
    }
}

#[test]
fn the_default_cache_holds_every_value_the_job_wrote() {
    holds_what_was_written(DEFAULT_WRITE_CACHE_BYTES);
}

#[test]
fn a_cache_that_flushes_at_nearly_every_access_loses_nothing() {
    holds_what_was_written(200);
}

#[test]
fn without_the_cache_every_access_goes_to_rocksdb() {
    holds_what_was_written(0);
}
