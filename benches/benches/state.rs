//! Keyed state beside raw RocksDB with pre-built keys, in one criterion run.
//!
//! Every case runs over the same 10,000 keys (round robin, one key per operation):
//! - `value/*`: read a `u64` counter, add one, write it back;
//! - `list/*`: append one element, then read the whole list (kept short by a reset every
//!   16 appends);
//! - `map/put`, `map/get`, `map/iterate` (a 16-entry map per key);
//! - `map_large/get`: reads of random user keys of one key's 200,000-entry map (q15/q16's
//!   shape: a map of distinct ids per day), the heap backend beside the two maps a
//!   hand-written operator would hold, `std` `HashMap` (the floor) and `BTreeMap` (the heap
//!   backend's own layout: a map state's entries are an ordered tree per key and namespace).
//!
//! `raw_rocksdb` is the `rocksdb` crate with the composite keys built once up front, the
//! same column family options and write options (no WAL), and the same value bytes: the
//! floor of any RocksDB-backed state. `typeinfo_rocksdb` and `typeinfo_heap` are this
//! crate's backends through their public API (current key, namespace, serializers).
//!
//! Run: `cargo bench -p typeinfo-benches --bench state`, report: `python3 benches/report_state.py`.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test (or bench) panics on what it does not expect

use std::hint::black_box;
use std::time::Duration;

use criterion::measurement::WallTime;
use criterion::{
    criterion_group, criterion_main, BatchSize, BenchmarkGroup, Criterion, Throughput,
};
use rocksdb::{MergeOperands, Options, WriteOptions, DB};
use typeinfo_state::*;

const KEYS: usize = 10_000;
const MAP_ENTRIES: u32 = 16;

/// A group of one operation per iteration, with this bench's measurement settings.
fn group<'a>(c: &'a mut Criterion, name: &str) -> BenchmarkGroup<'a, WallTime> {
    let mut group = c.benchmark_group(name);
    group
        .throughput(Throughput::Elements(1))
        .measurement_time(Duration::from_secs(3))
        .warm_up_time(Duration::from_secs(1))
        .sample_size(30);
    group
}

fn keys() -> Vec<String> {
    (0..KEYS).map(|i| format!("user-{i:05}")).collect()
}

fn options() -> BackendOptions {
    BackendOptions::new(128, KeyGroupRange::all(128)).expect("valid options")
}

fn concat(_: &[u8], existing: Option<&[u8]>, ops: &MergeOperands) -> Option<Vec<u8>> {
    let mut out = existing.map(<[u8]>::to_vec).unwrap_or_default();
    for op in ops {
        out.extend_from_slice(op);
    }
    Some(out)
}

/// Raw RocksDB with the keys our backend would build, pre-built.
struct Raw {
    db: DB,
    write: WriteOptions,
    keys: Vec<Vec<u8>>,
}

impl Raw {
    fn open(dir: &std::path::Path, keys: &[String]) -> Raw {
        // The same tuning as the backend's defaults (RocksDbOptions): 2 MiB write buffers,
        // LZ4, bloom filters, in-place memtable updates for values and map entries; so the
        // comparison measures the backend's own work, not a difference in configuration.
        let mut opts = Options::default();
        opts.create_if_missing(true);
        opts.create_missing_column_families(true);
        opts.set_allow_concurrent_memtable_write(false);
        let mut cf = Options::default();
        cf.set_write_buffer_size(2 << 20);
        cf.set_compression_type(rocksdb::DBCompressionType::Lz4);
        let mut table = rocksdb::BlockBasedOptions::default();
        table.set_bloom_filter(10.0, false);
        cf.set_block_based_table_factory(&table);
        let mut list = cf.clone();
        list.set_merge_operator_associative("concat", concat);
        cf.set_inplace_update_support(true);
        let db = DB::open_cf_with_opts(
            &opts,
            dir,
            [("value", cf.clone()), ("list", list), ("map", cf)],
        )
        .expect("open raw rocksdb");
        let mut write = WriteOptions::default();
        write.disable_wal(true);
        let mut builder = CompositeKeyBuilder::new(128);
        let keys = keys
            .iter()
            .map(|k| {
                let bytes = typeinfo::to_bytes(&typeinfo::StringSerializer, k)
                    .expect("a string serializes");
                builder.set_key_bytes(key_group_for_bytes(&bytes, 128), &bytes);
                builder.key_prefix().to_vec()
            })
            .collect();
        Raw { db, write, keys }
    }
}

fn bench_value(c: &mut Criterion) {
    let keys = keys();
    let dir = tempfile::tempdir().expect("temp dir");
    let raw = Raw::open(&dir.path().join("raw"), &keys);
    // Every access to RocksDB, as the raw side does (the backend's overhead over RocksDB);
    // the default write cache beside it.
    let mut rocks = RocksDbKeyedStateBackend::<String>::open(
        &dir.path().join("ours"),
        options(),
        RocksDbOptions::default().write_cache_bytes(0),
    )
    .expect("open");
    let mut cached = RocksDbKeyedStateBackend::<String>::open(
        &dir.path().join("cached"),
        options(),
        RocksDbOptions::default(),
    )
    .expect("open");
    let mut heap = HeapKeyedStateBackend::<String>::new(options()).expect("heap");
    let desc = ValueStateDescriptor::<u64>::new("count");
    let rocks_count = rocks.value_state::<(), u64>(&desc).expect("register");
    let cached_count = cached.value_state::<(), u64>(&desc).expect("register");
    let heap_count = heap.value_state::<(), u64>(&desc).expect("register");

    let mut group = group(c, "value/get_and_update");
    let cf = raw.db.cf_handle("value").expect("cf");
    let mut i = 0;
    group.bench_function("raw_rocksdb", |b| {
        b.iter(|| {
            let key = &raw.keys[i % KEYS];
            i += 1;
            let current = raw.db.get_pinned_cf(cf, key).expect("get").map_or(0, |v| {
                u64::from_le_bytes(v[..8].try_into().expect("8 bytes"))
            });
            raw.db
                .put_cf_opt(cf, key, (current + 1).to_le_bytes(), &raw.write)
                .expect("put");
        })
    });
    for (name, backend, count) in [
        ("typeinfo_rocksdb", &mut rocks, &rocks_count),
        ("typeinfo_rocksdb_write_cache", &mut cached, &cached_count),
    ] {
        let mut i = 0;
        group.bench_function(name, |b| {
            b.iter(|| {
                backend.set_current_key(&keys[i % KEYS]).expect("key");
                i += 1;
                let current = count.value(backend, &()).expect("get").unwrap_or(0);
                count.update(backend, &(), current + 1).expect("put");
            })
        });
    }
    let mut i = 0;
    group.bench_function("typeinfo_heap", |b| {
        b.iter(|| {
            heap.set_current_key(&keys[i % KEYS]).expect("key");
            i += 1;
            let current = heap_count.value(&mut heap, &()).expect("get").unwrap_or(0);
            heap_count
                .update(&mut heap, &(), black_box(current + 1))
                .expect("put");
        })
    });
    group.finish();
}

fn bench_list(c: &mut Criterion) {
    let keys = keys();
    let dir = tempfile::tempdir().expect("temp dir");
    let raw = Raw::open(&dir.path().join("raw"), &keys);
    let mut rocks = RocksDbKeyedStateBackend::<String>::open(
        &dir.path().join("ours"),
        options(),
        RocksDbOptions::default(),
    )
    .expect("open");
    let mut heap = HeapKeyedStateBackend::<String>::new(options()).expect("heap");
    let desc = ListStateDescriptor::<u64>::new("events");
    let rocks_list = rocks.list_state::<(), u64>(&desc).expect("register");
    let heap_list = heap.list_state::<(), u64>(&desc).expect("register");

    let mut group = group(c, "list/add_and_read");
    let cf = raw.db.cf_handle("list").expect("cf");
    let mut i = 0u64;
    group.bench_function("raw_rocksdb", |b| {
        b.iter(|| {
            let key = &raw.keys[i as usize % KEYS];
            if (i / KEYS as u64) % 16 == 0 {
                raw.db.delete_cf_opt(cf, key, &raw.write).expect("reset");
            }
            raw.db
                .merge_cf_opt(cf, key, i.to_le_bytes(), &raw.write)
                .expect("merge");
            let bytes = raw
                .db
                .get_pinned_cf(cf, key)
                .expect("get")
                .expect("present");
            let list: Vec<u64> = bytes
                .chunks_exact(8)
                .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
                .collect();
            black_box(list);
            i += 1;
        })
    });
    let mut i = 0u64;
    group.bench_function("typeinfo_rocksdb", |b| {
        b.iter(|| {
            rocks
                .set_current_key(&keys[i as usize % KEYS])
                .expect("key");
            if (i / KEYS as u64) % 16 == 0 {
                rocks_list.clear(&mut rocks, &()).expect("reset");
            }
            rocks_list.add(&mut rocks, &(), i).expect("add");
            black_box(rocks_list.get(&mut rocks, &()).expect("get"));
            i += 1;
        })
    });
    let mut i = 0u64;
    group.bench_function("typeinfo_heap", |b| {
        b.iter(|| {
            heap.set_current_key(&keys[i as usize % KEYS]).expect("key");
            if (i / KEYS as u64) % 16 == 0 {
                heap_list.clear(&mut heap, &()).expect("reset");
            }
            heap_list.add(&mut heap, &(), i).expect("add");
            black_box(heap_list.get(&mut heap, &()).expect("get"));
            i += 1;
        })
    });
    group.finish();
}

fn bench_map(c: &mut Criterion) {
    let keys = keys();
    let dir = tempfile::tempdir().expect("temp dir");
    let raw = Raw::open(&dir.path().join("raw"), &keys);
    let mut rocks = RocksDbKeyedStateBackend::<String>::open(
        &dir.path().join("ours"),
        options(),
        RocksDbOptions::default(),
    )
    .expect("open");
    let mut heap = HeapKeyedStateBackend::<String>::new(options()).expect("heap");
    let desc = MapStateDescriptor::<u32, u64>::new("by_minute");
    let rocks_map = rocks.map_state::<(), u32, u64>(&desc).expect("register");
    let heap_map = heap.map_state::<(), u32, u64>(&desc).expect("register");
    let cf = raw.db.cf_handle("map").expect("cf");
    let user_key = |k: &[u8], uk: u32| {
        let mut v = k.to_vec();
        v.extend_from_slice(&uk.to_be_bytes());
        v
    };
    let raw_value = |uk: u32, uv: u64| {
        let mut v = uk.to_le_bytes().to_vec();
        v.extend_from_slice(&uv.to_le_bytes());
        v
    };
    // The pre-built raw keys include the user key too.
    let raw_entries: Vec<Vec<Vec<u8>>> = raw
        .keys
        .iter()
        .map(|k| (0..MAP_ENTRIES).map(|uk| user_key(k, uk)).collect())
        .collect();

    let mut group = group(c, "map");
    let mut i = 0usize;
    group.bench_function("put/raw_rocksdb", |b| {
        b.iter(|| {
            let uk = (i / KEYS) as u32 % MAP_ENTRIES;
            raw.db
                .put_cf_opt(
                    cf,
                    &raw_entries[i % KEYS][uk as usize],
                    raw_value(uk, i as u64),
                    &raw.write,
                )
                .expect("put");
            i += 1;
        })
    });
    let mut i = 0usize;
    group.bench_function("put/typeinfo_rocksdb", |b| {
        b.iter(|| {
            rocks.set_current_key(&keys[i % KEYS]).expect("key");
            rocks_map
                .put(&mut rocks, &(), (i / KEYS) as u32 % MAP_ENTRIES, i as u64)
                .expect("put");
            i += 1;
        })
    });
    let mut i = 0usize;
    group.bench_function("put/typeinfo_heap", |b| {
        b.iter(|| {
            heap.set_current_key(&keys[i % KEYS]).expect("key");
            heap_map
                .put(&mut heap, &(), (i / KEYS) as u32 % MAP_ENTRIES, i as u64)
                .expect("put");
            i += 1;
        })
    });
    // Fill every map completely for get and iterate.
    for (k, key) in keys.iter().enumerate() {
        rocks.set_current_key(key).expect("key");
        heap.set_current_key(key).expect("key");
        for uk in 0..MAP_ENTRIES {
            rocks_map.put(&mut rocks, &(), uk, uk as u64).expect("put");
            heap_map.put(&mut heap, &(), uk, uk as u64).expect("put");
            raw.db
                .put_cf_opt(
                    cf,
                    &raw_entries[k][uk as usize],
                    raw_value(uk, uk as u64),
                    &raw.write,
                )
                .expect("put");
        }
    }
    let mut i = 0usize;
    group.bench_function("get/raw_rocksdb", |b| {
        b.iter(|| {
            let uk = i % MAP_ENTRIES as usize;
            let v = raw
                .db
                .get_pinned_cf(cf, &raw_entries[i % KEYS][uk])
                .expect("get")
                .expect("present");
            black_box(u64::from_le_bytes(v[4..12].try_into().expect("8 bytes")));
            i += 1;
        })
    });
    let mut i = 0usize;
    group.bench_function("get/typeinfo_rocksdb", |b| {
        b.iter(|| {
            rocks.set_current_key(&keys[i % KEYS]).expect("key");
            black_box(
                rocks_map
                    .get(&mut rocks, &(), &((i % MAP_ENTRIES as usize) as u32))
                    .expect("get"),
            );
            i += 1;
        })
    });
    let mut i = 0usize;
    group.bench_function("get/typeinfo_heap", |b| {
        b.iter(|| {
            heap.set_current_key(&keys[i % KEYS]).expect("key");
            black_box(
                heap_map
                    .get(&mut heap, &(), &((i % MAP_ENTRIES as usize) as u32))
                    .expect("get"),
            );
            i += 1;
        })
    });
    group.throughput(Throughput::Elements(u64::from(MAP_ENTRIES)));
    let mut i = 0usize;
    group.bench_function("iterate/raw_rocksdb", |b| {
        b.iter(|| {
            let prefix = &raw.keys[i % KEYS];
            let mut read = rocksdb::ReadOptions::default();
            let mut end = prefix.clone();
            if let Some(last) = end.last_mut() {
                *last += 1;
            }
            read.set_iterate_upper_bound(end);
            let mut it = raw.db.raw_iterator_cf_opt(cf, read);
            it.seek(prefix);
            let mut out = Vec::with_capacity(MAP_ENTRIES as usize);
            while let Some(v) = it.value() {
                out.push((
                    u32::from_le_bytes(v[..4].try_into().expect("4")),
                    u64::from_le_bytes(v[4..12].try_into().expect("8")),
                ));
                it.next();
            }
            black_box(out);
            i += 1;
        })
    });
    let mut i = 0usize;
    group.bench_function("iterate/typeinfo_rocksdb", |b| {
        b.iter(|| {
            rocks.set_current_key(&keys[i % KEYS]).expect("key");
            black_box(rocks_map.entries(&mut rocks, &()).expect("entries"));
            i += 1;
        })
    });
    let mut i = 0usize;
    group.bench_function("iterate/typeinfo_heap", |b| {
        b.iter(|| {
            heap.set_current_key(&keys[i % KEYS]).expect("key");
            black_box(heap_map.entries(&mut heap, &()).expect("entries"));
            i += 1;
        })
    });
    group.finish();
    let _ = BatchSize::SmallInput;
}

const LARGE_MAP_ENTRIES: u64 = 200_000;

/// The `i`th user key of the large map: ids spread over `u64` as a generator's would be.
fn large_user_key(i: u64) -> u64 {
    i.wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// The `i`th read's user key: a fixed pseudo-random walk over the map's keys.
fn large_read(i: u64) -> u64 {
    large_user_key(i.wrapping_mul(2_654_435_761) % LARGE_MAP_ENTRIES)
}

fn bench_map_large(c: &mut Criterion) {
    let mut heap = HeapKeyedStateBackend::<String>::new(options()).expect("heap");
    let desc = MapStateDescriptor::<u64, u8>::new("bidders");
    let heap_map = heap.map_state::<(), u64, u8>(&desc).expect("register");
    let key = "2024-01-01".to_string();
    heap.set_current_key(&key).expect("key");
    let mut hash = std::collections::HashMap::new();
    let mut tree = std::collections::BTreeMap::new();
    for i in 0..LARGE_MAP_ENTRIES {
        let uk = large_user_key(i);
        heap_map.put(&mut heap, &(), uk, 1).expect("put");
        hash.insert(uk, 1u8);
        tree.insert(uk, 1u8);
    }
    let mut group = group(c, "map_large/get");
    let mut i = 0u64;
    group.bench_function("std_hashmap", |b| {
        b.iter(|| {
            black_box(hash.get(&large_read(i)).copied());
            i += 1;
        })
    });
    let mut i = 0u64;
    group.bench_function("std_btreemap", |b| {
        b.iter(|| {
            black_box(tree.get(&large_read(i)).copied());
            i += 1;
        })
    });
    let mut i = 0u64;
    group.bench_function("typeinfo_heap", |b| {
        b.iter(|| {
            heap.set_current_key(&key).expect("key");
            black_box(heap_map.get(&mut heap, &(), &large_read(i)).expect("get"));
            i += 1;
        })
    });
    group.finish();
}

criterion_group!(benches, bench_value, bench_list, bench_map, bench_map_large);
criterion_main!(benches);
