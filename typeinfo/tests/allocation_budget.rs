//! Reading crafted bytes into derived types allocates at most a small multiple of the
//! input: the derived `Vec` element fast path reserves a bounded amount up front, and a
//! struct whose fields are all skipped (no bytes, but memory) spends the view's
//! zero-sized budget by its size.
//!
//! A counting global allocator measures the peak of live bytes during each read. Tests in
//! this file run one at a time (a lock), so that they do not count each other.
#![allow(unsafe_code)] // a counting global allocator (GlobalAlloc is an unsafe trait)
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test (or bench) panics on what it does not expect

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use typeinfo::{
    from_bytes, DataOutputView, Error, TypeInfo, MAX_ZERO_SIZED_ITEMS, ZERO_SIZED_UNIT_BYTES,
};

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
    (r, PEAK.load(Ordering::Relaxed) - before)
}

fn varint(v: u64) -> Vec<u8> {
    let mut out = DataOutputView::new();
    out.write_varint(v);
    out.into_inner()
}

const MIB: usize = 1 << 20;
const SLACK: usize = 256 << 10;

/// Takes no bytes, but 32 bytes of memory: one unit of the zero-sized budget, as `()`.
#[derive(TypeInfo, Debug, Default, PartialEq)]
struct Hollow {
    #[typeinfo(skip)]
    pad: [u64; 4],
}

/// Takes no bytes, but 256 bytes of memory: two units (one per 128 bytes).
#[derive(TypeInfo, Debug, Default, PartialEq)]
struct Wide {
    #[typeinfo(skip)]
    pad: [u64; 32],
}

/// Takes at least 2 bytes, and 272 bytes of memory.
#[derive(TypeInfo, Debug, PartialEq)]
struct Big {
    block: Option<[u64; 32]>,
    id: u8,
}

#[test]
fn elements_that_take_no_bytes_spend_the_budget_by_their_size() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let s = typeinfo::serializer::<Vec<Hollow>>().expect("serializer");
    let bytes = varint(1 << 24);
    let (r, peak) = peak_during(|| from_bytes(&s, &bytes).map(|v| v.len()));
    assert!(matches!(r, Err(Error::LengthTooLarge { .. })), "{r:?}");
    assert!(peak <= SLACK, "4 bytes allocated {peak}");
    // One unit each (32 bytes of memory, at most `ZERO_SIZED_UNIT_BYTES`).
    let fits = MAX_ZERO_SIZED_ITEMS as u64;
    assert_eq!(
        from_bytes(&s, &varint(fits)).map(|v| v.len()),
        Ok(fits as usize)
    );
    assert!(from_bytes(&s, &varint(fits + 1)).is_err());
    // A larger element spends one unit per 128 bytes: `Wide` (256 bytes) two.
    assert_eq!(ZERO_SIZED_UNIT_BYTES, 128);
    assert_eq!(std::mem::size_of::<Wide>(), 2 * ZERO_SIZED_UNIT_BYTES);
    let inline = typeinfo::serializer::<Vec<Wide>>().expect("serializer");
    let fits = (MAX_ZERO_SIZED_ITEMS / 2) as u64;
    assert!(from_bytes(&inline, &varint(fits)).is_ok_and(|v| v.len() == fits as usize));
    assert!(from_bytes(&inline, &varint(fits + 1)).is_err());
}

#[test]
fn a_derived_element_reserves_a_bounded_amount_up_front() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let s = typeinfo::serializer::<Vec<Big>>().expect("serializer");
    // Half a million elements announced, a few read, then a bad option tag.
    let mut bytes = varint((MIB / 2) as u64);
    bytes.extend_from_slice(&[0, 1, 0, 2, 0, 3]);
    bytes.push(9);
    bytes.resize(MIB + 4, 0);
    let (r, peak) = peak_during(|| from_bytes(&s, &bytes).map(|v| v.len()));
    assert!(matches!(r, Err(Error::InvalidTag { tag: 9, .. })), "{r:?}");
    assert!(
        peak <= 2 * bytes.len() + SLACK,
        "reading {} bytes allocated {peak}",
        bytes.len()
    );
}
