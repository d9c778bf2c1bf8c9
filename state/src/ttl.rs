//! State time-to-live, with a controllable clock.
//!
//! As in Flink: a value (a list element, a map entry) expires `ttl` after its last
//! access; "access" is a write (`OnCreateAndWrite`) or also a read (`OnReadAndWrite`).
//! Expired values are never returned (`NeverReturnExpired`) or returned until cleaned up
//! (`ReturnExpiredIfNotCleanedUp`). Cleanup happens on full snapshots (expired values are
//! not written), incrementally (a number of entries checked on every state access, heap
//! backend) and in RocksDB compaction (a compaction filter drops expired values).

use std::fmt;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Where state TTL reads the time.
pub trait Clock: fmt::Debug + Send + Sync {
    /// Milliseconds since the UNIX epoch.
    fn now_ms(&self) -> i64;
}

/// The system clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64)
    }
}

/// A clock that moves only when told to (for tests and for replaying event time).
#[derive(Debug, Clone, Default)]
pub struct ManualClock {
    now: Arc<AtomicI64>,
}

impl ManualClock {
    /// A clock at `now_ms`.
    pub fn new(now_ms: i64) -> Self {
        Self {
            now: Arc::new(AtomicI64::new(now_ms)),
        }
    }

    /// Moves the clock by `by`.
    pub fn advance(&self, by: Duration) {
        self.now.fetch_add(by.as_millis() as i64, Ordering::SeqCst);
    }

    /// Sets the clock to `now_ms`.
    pub fn set(&self, now_ms: i64) {
        self.now.store(now_ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> i64 {
        self.now.load(Ordering::SeqCst)
    }
}

/// What refreshes a value's time to live.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TtlUpdate {
    /// Creating or writing the value.
    OnCreateAndWrite,
    /// Also reading it.
    OnReadAndWrite,
}

/// Whether expired values that were not cleaned up yet are returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TtlVisibility {
    /// Never.
    NeverReturnExpired,
    /// Yes, until cleanup removes them.
    ReturnExpiredIfNotCleanedUp,
}

/// The TTL of a state.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use typeinfo_state::StateTtlConfig;
///
/// let ttl = StateTtlConfig::new(Duration::from_secs(3600)).update_on_read_and_write().cleanup_incrementally(10);
/// assert_eq!(ttl.ttl_ms(), 3_600_000);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct StateTtlConfig {
    ttl: Duration,
    update: TtlUpdate,
    visibility: TtlVisibility,
    cleanup_in_full_snapshot: bool,
    cleanup_incremental: usize,
    cleanup_in_compaction: bool,
}

impl StateTtlConfig {
    /// Values live `ttl` after their last write; expired values are never returned; they are
    /// dropped from full snapshots and in RocksDB compaction.
    pub fn new(ttl: Duration) -> Self {
        Self {
            ttl,
            update: TtlUpdate::OnCreateAndWrite,
            visibility: TtlVisibility::NeverReturnExpired,
            cleanup_in_full_snapshot: true,
            cleanup_incremental: 0,
            cleanup_in_compaction: true,
        }
    }

    /// Reads refresh the time to live too.
    pub fn update_on_read_and_write(mut self) -> Self {
        self.update = TtlUpdate::OnReadAndWrite;
        self
    }

    /// Expired values are returned until cleaned up.
    pub fn return_expired_if_not_cleaned_up(mut self) -> Self {
        self.visibility = TtlVisibility::ReturnExpiredIfNotCleanedUp;
        self
    }

    /// Whether expired values are left out of full snapshots (default: yes).
    pub fn cleanup_in_full_snapshot(mut self, enabled: bool) -> Self {
        self.cleanup_in_full_snapshot = enabled;
        self
    }

    /// Checks `entries` more entries for expiry on every access of the state (heap backend).
    pub fn cleanup_incrementally(mut self, entries: usize) -> Self {
        self.cleanup_incremental = entries;
        self
    }

    /// Whether RocksDB's compaction drops expired values (default: yes).
    pub fn cleanup_in_rocksdb_compaction(mut self, enabled: bool) -> Self {
        self.cleanup_in_compaction = enabled;
        self
    }

    /// The time to live in milliseconds.
    pub fn ttl_ms(&self) -> i64 {
        self.ttl.as_millis().min(i64::MAX as u128) as i64
    }

    /// What refreshes a value's time to live.
    pub fn update(&self) -> TtlUpdate {
        self.update
    }

    /// Whether expired values are returned.
    pub fn visibility(&self) -> TtlVisibility {
        self.visibility
    }

    /// Whether full snapshots leave expired values out.
    pub fn cleans_up_in_full_snapshot(&self) -> bool {
        self.cleanup_in_full_snapshot
    }

    /// Entries checked per access.
    pub fn incremental_cleanup_size(&self) -> usize {
        self.cleanup_incremental
    }

    /// Whether RocksDB compaction drops expired values.
    pub fn cleans_up_in_compaction(&self) -> bool {
        self.cleanup_in_compaction
    }

    /// Whether a value last accessed at `last_access_ms` has expired at `now_ms`.
    #[inline]
    pub fn is_expired(&self, last_access_ms: i64, now_ms: i64) -> bool {
        last_access_ms.saturating_add(self.ttl_ms()) <= now_ms
    }
}

// What both backends do with the timestamps (the rules above, in one place).

/// What a read of a value with a TTL timestamp decides.
#[derive(PartialEq)]
pub(crate) enum Visible {
    Yes,
    /// Expired and never returned: remove it.
    Expired,
}

/// Applies TTL on read: refreshes the timestamp when reads count as access.
#[inline]
pub(crate) fn on_read(ttl: &Option<StateTtlConfig>, ts: &mut i64, now: i64) -> Visible {
    let Some(ttl) = ttl else { return Visible::Yes };
    if ttl.is_expired(*ts, now) {
        return match ttl.visibility() {
            TtlVisibility::NeverReturnExpired => Visible::Expired,
            TtlVisibility::ReturnExpiredIfNotCleanedUp => Visible::Yes,
        };
    }
    if ttl.update() == TtlUpdate::OnReadAndWrite {
        *ts = now;
    }
    Visible::Yes
}

/// Whether a full snapshot leaves out a value stamped `ts`.
#[inline]
pub(crate) fn expired_for_snapshot(ttl: &Option<StateTtlConfig>, ts: i64, now: i64) -> bool {
    ttl.as_ref()
        .is_some_and(|t| t.cleans_up_in_full_snapshot() && t.is_expired(ts, now))
}

/// The timestamp a write stores: `now` with a TTL, 0 without (never read then).
#[inline]
pub(crate) fn stamp(ttl: &Option<StateTtlConfig>, now: i64) -> i64 {
    if ttl.is_some() {
        now
    } else {
        0
    }
}

/// Whether a full snapshot leaves out a serialized value whose first 8 bytes are its
/// timestamp (RocksDB's entries).
pub(crate) fn expired_bytes_for_snapshot(
    ttl: &Option<StateTtlConfig>,
    value: &[u8],
    now: i64,
) -> bool {
    match (ttl, value.get(..8)) {
        (Some(t), Some(ts)) => {
            t.cleans_up_in_full_snapshot()
                && t.is_expired(i64::from_le_bytes(ts.try_into().unwrap_or([0; 8])), now)
        }
        _ => false,
    }
}
