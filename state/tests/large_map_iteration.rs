//! A map of 5M entries under one key is read through lazily within a small memory bound.
//!
//! The bound is chosen before measuring: while the map is iterated, the peak of live Rust
//! heap bytes (beyond those live before the iteration) stays under [`BOUND`] = 64 MiB, on
//! both backends, while the map itself (its serialized entries: 5M x 57 bytes, about
//! 270 MiB) is more than four times the bound. A counting global allocator measures it, as
//! `serializers/tests/allocation_budget.rs` does; it lives in its own file so that it counts
//! no other test, and the tests here run one at a time (a lock).
//!
//! On the heap a map this large is a hash table: an iteration sorts a copy of its user keys
//! (here 5M `u64`, 40 MB, inside the bound; the map itself holds about 556 MiB of live
//! objects) and copies no value ahead.
//!
//! What the Rust heap does not show: RocksDB's own C++ allocations (block cache, memtables,
//! iterator blocks) are bounded by its options (see the crate docs on managed memory), not
//! by this test.
#![allow(unsafe_code)] // a counting global allocator (GlobalAlloc is an unsafe trait)
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test (or bench) panics on what it does not expect

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use typeinfo_state::*;

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

// SAFETY: every call is forwarded to the system allocator with the same arguments; the
// counters are only statistics.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let live = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
        PEAK.fetch_max(live, Ordering::Relaxed);
        // SAFETY: forwarded as is; the caller upholds `alloc`'s contract.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: forwarded as is; `ptr` came from `alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // Count the moment both blocks may be live.
        let live = LIVE.fetch_add(new_size, Ordering::Relaxed) + new_size;
        PEAK.fetch_max(live, Ordering::Relaxed);
        // SAFETY: forwarded as is; the caller upholds `realloc`'s contract.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The peak of bytes allocated (beyond those live before) while `f` runs.
fn peak_during<R>(f: impl FnOnce() -> R) -> (R, usize) {
    let before = LIVE.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let r = f();
    (r, PEAK.load(Ordering::Relaxed).saturating_sub(before))
}

const MIB: usize = 1 << 20;
/// The most live Rust heap an iteration of the whole map may add (chosen before measuring).
const BOUND: usize = 64 * MIB;
/// Entries of the map, all under one key and namespace.
const ENTRIES: u64 = 5_000_000;
/// Characters of each value.
const VALUE_LEN: usize = 48;

/// The value of user key `i`: 48 hexadecimal digits of a mix of `i` (not compressible to
/// nothing, and checkable on the way out).
fn value(i: u64) -> String {
    let mut x = i.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0xdead_beef;
    let mut bytes = [0u8; VALUE_LEN];
    for chunk in bytes.chunks_mut(16) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let mut digits = x;
        for b in chunk {
            *b = HEX[digits as usize & 0xf];
            digits >>= 4;
        }
    }
    String::from_utf8(bytes.to_vec()).expect("hexadecimal digits")
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// The serialized size of the map: user key (8 bytes), value length (1 byte), value.
fn map_bytes() -> usize {
    ENTRIES as usize * (8 + 1 + VALUE_LEN)
}

/// The meter sees what a materialized map would allocate (so that a bound met is not an
/// allocator that counts nothing). The counters are the process's: another thread of the
/// test harness (the previous test's output capture, a RocksDB thread's Rust callback) may
/// free a few bytes meanwhile, which lowers the baseline, so the peak must reach the
/// allocation less 1 MiB, not the exact byte (CI once saw 24 bytes fewer).
fn meter_counts() {
    let (v, peak) = peak_during(|| vec![1u8; 2 * BOUND]);
    assert!(
        peak >= 2 * BOUND - MIB && v.len() == 2 * BOUND,
        "the meter saw {peak} bytes of a {} byte allocation",
        2 * BOUND
    );
}

/// Fills the map of key `big`, then iterates it lazily, checking every entry in order, and
/// returns the peak of live heap the iteration added.
fn fill_and_iterate<B: KeyedStateBackend<String>>(b: &mut B) -> Result<usize> {
    let map = b.map_state::<(), u64, String>(&MapStateDescriptor::new("big"))?;
    b.set_current_key(&"small".to_owned())?;
    map.put(b, &(), 0, "not under `big`".to_owned())?;
    b.set_current_key(&"big".to_owned())?;
    map.put_all(b, &(), (0..ENTRIES).map(|i| (i, value(i))))?;
    let (checked, peak) = peak_during(|| -> Result<u64> {
        let mut expected = 0u64;
        for entry in map.iter(b, &())? {
            let (key, v) = entry?;
            assert_eq!(key, expected, "entries in the user key's order");
            if key % 100_003 == 0 {
                assert_eq!(v, value(key));
            } else {
                assert_eq!(v.len(), VALUE_LEN);
            }
            expected += 1;
        }
        Ok(expected)
    });
    assert_eq!(checked?, ENTRIES, "every entry, and only those of `big`");
    Ok(peak)
}

#[test]
fn a_map_of_5m_entries_in_rocksdb_is_iterated_within_64_mib_of_heap() -> Result<()> {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    meter_counts();
    let dir = tempfile::tempdir().map_err(|e| Error::InvalidConfig(e.to_string()))?;
    let mut b = RocksDbKeyedStateBackend::<String>::open(
        &dir.path().join("db"),
        BackendOptions::new(128, KeyGroupRange::all(128))?,
        RocksDbOptions::default(),
    )?;
    let peak = fill_and_iterate(&mut b)?;
    eprintln!(
        "rocksdb: map of {} MiB serialized, peak Rust heap added during iteration {peak} bytes",
        map_bytes() / MIB
    );
    assert!(map_bytes() > 4 * BOUND);
    assert!(
        peak < BOUND,
        "iterating added {peak} bytes of live heap, more than {BOUND}"
    );
    Ok(())
}

#[test]
fn a_map_of_5m_entries_on_the_heap_is_iterated_without_a_copy_of_its_values() -> Result<()> {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    meter_counts();
    let before = LIVE.load(Ordering::Relaxed);
    let mut b = HeapKeyedStateBackend::<String>::new(
        BackendOptions::new(128, KeyGroupRange::all(128))?.clock(Arc::new(ManualClock::new(0))),
    )?;
    let peak = fill_and_iterate(&mut b)?;
    let held = LIVE.load(Ordering::Relaxed).saturating_sub(before);
    eprintln!(
        "heap: map holds {} MiB of live objects, peak added during iteration {peak} bytes",
        held / MIB
    );
    assert!(held > 4 * BOUND, "the map holds {held} bytes");
    assert!(
        peak < BOUND,
        "iterating added {peak} bytes of live heap, more than {BOUND}"
    );
    Ok(())
}
