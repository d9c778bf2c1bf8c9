//! A global allocator that counts the bytes the Rust heap holds, so that each case's peak
//! can be checked against a bound, and that refuses to go past a hard cap (the process then
//! aborts with "memory allocation of N bytes failed", which the driver reports as a crash
//! of the target with the input on disk).
//!
//! RocksDB's C++ allocations do not pass through here; the process-wide peak (`VmHWM`) is
//! checked separately at the end of a run.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

/// Bytes held now.
static CURRENT: AtomicUsize = AtomicUsize::new(0);
/// The highest `CURRENT` since the last [`reset_peak`].
static PEAK: AtomicUsize = AtomicUsize::new(0);
/// No allocation may take the heap past this many bytes.
static HARD_CAP: AtomicUsize = AtomicUsize::new(usize::MAX);

/// The counting allocator; installed in `main.rs`.
pub struct Counting;

impl Counting {
    #[inline]
    fn grew(&self, by: usize) -> bool {
        let now = CURRENT.fetch_add(by, Relaxed).saturating_add(by);
        if now > HARD_CAP.load(Relaxed) {
            CURRENT.fetch_sub(by, Relaxed);
            return false;
        }
        PEAK.fetch_max(now, Relaxed);
        true
    }
}

// SAFETY: every method forwards to `System` with the caller's layout and pointer unchanged;
// the counters are only bookkeeping. A refused allocation returns null, which `GlobalAlloc`
// allows.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if !self.grew(layout.size()) {
            return std::ptr::null_mut();
        }
        // SAFETY: the caller's contract for `alloc` is passed on unchanged.
        let p = unsafe { System.alloc(layout) };
        if p.is_null() {
            CURRENT.fetch_sub(layout.size(), Relaxed);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if !self.grew(layout.size()) {
            return std::ptr::null_mut();
        }
        // SAFETY: as `alloc`.
        let p = unsafe { System.alloc_zeroed(layout) };
        if p.is_null() {
            CURRENT.fetch_sub(layout.size(), Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract for `dealloc` is passed on unchanged.
        unsafe { System.dealloc(ptr, layout) };
        CURRENT.fetch_sub(layout.size(), Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let old = layout.size();
        if new_size > old && !self.grew(new_size - old) {
            return std::ptr::null_mut();
        }
        // SAFETY: the caller's contract for `realloc` is passed on unchanged.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if p.is_null() {
            if new_size > old {
                CURRENT.fetch_sub(new_size - old, Relaxed);
            }
        } else if new_size < old {
            CURRENT.fetch_sub(old - new_size, Relaxed);
        }
        p
    }
}

/// Bytes the Rust heap holds now.
pub fn current() -> usize {
    CURRENT.load(Relaxed)
}

/// Starts a new peak measurement at the current level.
pub fn reset_peak() {
    PEAK.store(CURRENT.load(Relaxed), Relaxed);
}

/// The highest level since [`reset_peak`].
pub fn peak() -> usize {
    PEAK.load(Relaxed)
}

/// Refuses allocations that would take the heap past `bytes`.
pub fn set_hard_cap(bytes: usize) {
    HARD_CAP.store(bytes, Relaxed);
}

/// The process's peak resident set (`VmHWM`) in KiB, or 0 where `/proc` has none.
pub fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}
