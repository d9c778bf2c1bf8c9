//! RocksDB's memory is bounded per process: backends opened with one setting share one block
//! cache and one write buffer manager charged to it, sized from that setting; index and
//! filter blocks live in the cache; the cache stays within its capacity while ten times the
//! bound of data passes through it.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test (or bench) panics on what it does not expect

use std::path::Path;

use typeinfo_state::*;

const MIB: usize = 1 << 20;

/// A backend whose every write reaches RocksDB: these tests measure RocksDB's own memory,
/// and the write cache (the backend's own memory, bounded by its own setting) would hold
/// the writes back.
fn open(dir: &Path, options: RocksDbOptions) -> Result<RocksDbKeyedStateBackend<u64>> {
    RocksDbKeyedStateBackend::open(
        dir,
        BackendOptions::new(128, KeyGroupRange::all(128))?,
        options.write_cache_bytes(0),
    )
}

fn tempdir() -> Result<tempfile::TempDir> {
    tempfile::tempdir().map_err(|e| Error::InvalidConfig(e.to_string()))
}

/// A value of `len` bytes that compresses poorly.
fn noise(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

#[test]
fn backends_opened_with_one_setting_share_one_cache_and_write_buffer_manager() -> Result<()> {
    let dir = tempdir()?;
    // Bounds no other test of this process uses (pools are shared by bound).
    let options = RocksDbOptions::default().managed_memory_bytes(48 * MIB);
    let mut a = open(&dir.path().join("a"), options.clone())?;
    let b = open(&dir.path().join("b"), options)?;
    let other = open(
        &dir.path().join("c"),
        RocksDbOptions::default().managed_memory_bytes(42 * MIB),
    )?;
    assert!(a.memory().shares_with(b.memory()));
    assert!(!a.memory().shares_with(other.memory()));
    assert_eq!(a.memory().total_bytes(), 48 * MIB);
    assert_eq!(a.memory().block_cache_bytes(), 40 * MIB, "5/6 of the bound");
    assert_eq!(
        a.memory().write_buffer_manager_bytes(),
        16 * MIB,
        "RocksDB's write buffer manager has 1/3 of the bound"
    );
    assert_eq!(other.memory().block_cache_bytes(), 35 * MIB);

    // Writes to `a` show in the pool seen from `b` (which holds nothing): memtables are
    // charged to the one cache.
    let state = a.value_state::<(), Vec<u8>>(&ValueStateDescriptor::new("v"))?;
    let other_before = other.memory().write_buffer_usage();
    let (cache_before, buffers_before) = (
        b.memory().block_cache_usage(),
        b.memory().write_buffer_usage(),
    );
    for key in 0..2_000u64 {
        a.set_current_key(&key)?;
        state.update(&mut a, &(), noise(key, 512))?;
    }
    let buffers = b.memory().write_buffer_usage();
    assert!(buffers > buffers_before, "{buffers} <= {buffers_before}");
    assert!(
        b.memory().block_cache_usage() >= cache_before + MIB / 4,
        "memtables are reserved in the cache: {} -> {}",
        cache_before,
        b.memory().block_cache_usage()
    );
    assert_eq!(
        other.memory().write_buffer_usage(),
        other_before,
        "another bound is another pool"
    );
    Ok(())
}

#[test]
fn the_default_pool_is_a_fraction_of_the_machine_shared_by_every_backend() -> Result<()> {
    let dir = tempdir()?;
    let a = open(&dir.path().join("a"), RocksDbOptions::default())?;
    let b = open(&dir.path().join("b"), RocksDbOptions::default())?;
    assert!(a.memory().shares_with(b.memory()));
    assert_eq!(a.memory().total_bytes(), default_managed_memory_bytes());
    Ok(())
}

#[test]
fn index_and_filter_blocks_are_held_in_the_block_cache() -> Result<()> {
    let dir = tempdir()?;
    let mut b = open(
        &dir.path().join("db"),
        RocksDbOptions::default().managed_memory_bytes(36 * MIB),
    )?;
    let state = b.value_state::<(), u64>(&ValueStateDescriptor::new("v"))?;
    let keys = 200_000u64;
    for key in 0..keys {
        b.set_current_key(&key)?;
        state.update(&mut b, &(), key)?;
    }
    b.flush()?;
    b.compact()?;
    for key in (0..keys).step_by(97) {
        b.set_current_key(&key)?;
        assert_eq!(state.value(&mut b, &())?, Some(key));
    }
    // The filter alone is 10 bits a key (about 244 KiB) and the index some more: held by
    // the table readers, they would show here; in the cache, they do not.
    let readers = b.int_property("rocksdb.estimate-table-readers-mem")?;
    eprintln!(
        "table readers: {readers} bytes; block cache: {} bytes",
        b.memory().block_cache_usage()
    );
    assert!(
        readers < 32 << 10,
        "table readers hold {readers} bytes outside the cache"
    );
    assert!(
        b.memory().block_cache_usage() > (keys as usize * 10 / 8),
        "filters, indexes and data blocks are in the cache: {}",
        b.memory().block_cache_usage()
    );
    Ok(())
}

#[test]
fn the_block_cache_stays_within_its_capacity_while_ten_times_the_bound_passes() -> Result<()> {
    let dir = tempdir()?;
    let bound = 8 * MIB;
    let mut b = open(
        &dir.path().join("db"),
        RocksDbOptions::default().managed_memory_bytes(bound),
    )?;
    let memory = b.memory().clone();
    let state = b.value_state::<(), Vec<u8>>(&ValueStateDescriptor::new("v"))?;
    let (value_len, keys) = (1024usize, 10 * bound as u64 / 1024);
    let mut most = 0;
    for key in 0..keys {
        b.set_current_key(&key)?;
        state.update(&mut b, &(), noise(key, value_len))?;
        most = most.max(memory.block_cache_usage());
    }
    // Read everything back, in an order that defeats the cache.
    for i in 0..keys {
        let key = (i * 7_919) % keys;
        b.set_current_key(&key)?;
        assert_eq!(state.value(&mut b, &())?.map(|v| v.len()), Some(value_len));
        most = most.max(memory.block_cache_usage());
    }
    eprintln!(
        "block cache: at most {most} of {} bytes",
        memory.block_cache_bytes()
    );
    // The cache is not strict (see the module docs of `managed_memory`): an insert lands
    // before the eviction it causes, so the usage may pass the capacity by the entry being
    // inserted: one dummy entry the write buffer manager charges (256 KiB) or one block. The
    // cache is one shard at this size, so pinned entries spread over shards cannot add more;
    // more than that is a leak.
    const IN_FLIGHT: usize = 256 << 10;
    assert!(
        most <= memory.block_cache_bytes() + IN_FLIGHT,
        "the cache held {most} bytes, more than its {} bytes and one entry in flight",
        memory.block_cache_bytes()
    );
    assert!(
        most > memory.block_cache_bytes() / 2,
        "the cache was used: {most} bytes"
    );
    Ok(())
}
