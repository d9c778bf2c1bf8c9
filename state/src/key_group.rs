//! Key groups: the unit of state distribution, with Flink's formulas.
//!
//! The key group of a key is `xxh3_64(serialized key bytes) mod max_parallelism`. The hash is
//! XXH3 (64-bit, seed 0), whose output is fixed by the xxHash specification; golden vectors
//! in `compat-tests` pin it. It may never change: a changed hash would silently lose all
//! keyed state on upgrade. Rust's `DefaultHasher` is not stable and is not used.

use crate::error::{Error, Result};

/// The largest max parallelism (as in Flink: key groups fit in two bytes).
pub const UPPER_BOUND_MAX_PARALLELISM: u32 = 1 << 15;

/// The key group of serialized key bytes.
///
/// # Examples
///
/// ```
/// let kg = typeinfo_state::key_group_for_bytes(b"\x05hello", 128);
/// assert!(kg < 128);
/// ```
#[inline]
pub fn key_group_for_bytes(key_bytes: &[u8], max_parallelism: u32) -> u16 {
    (xxhash_rust::xxh3::xxh3_64(key_bytes) % u64::from(max_parallelism)) as u16
}

/// The subtask that owns `key_group`: `key_group * parallelism / max_parallelism`.
#[inline]
pub fn subtask_for_key_group(max_parallelism: u32, parallelism: u32, key_group: u16) -> u32 {
    (u32::from(key_group) * parallelism / max_parallelism) as u32
}

/// Flink's default max parallelism: `min(max(round_up_pow2(p + p / 2), 128), 32768)`.
pub fn default_max_parallelism(parallelism: u32) -> u32 {
    let p = parallelism.max(1);
    (p + p / 2)
        .next_power_of_two()
        .clamp(128, UPPER_BOUND_MAX_PARALLELISM)
}

/// An inclusive range of key groups.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct KeyGroupRange {
    start: u16,
    end: u16,
}

impl KeyGroupRange {
    /// The range `start..=end`.
    ///
    /// # Errors
    ///
    /// `start > end`.
    pub fn new(start: u16, end: u16) -> Result<Self> {
        if start > end {
            return Err(Error::InvalidConfig(format!(
                "empty key group range {start}..={end}"
            )));
        }
        Ok(Self { start, end })
    }

    /// Every key group of `max_parallelism`.
    pub fn all(max_parallelism: u32) -> Self {
        Self {
            start: 0,
            end: (max_parallelism - 1) as u16,
        }
    }

    /// The key groups subtask `index` of `parallelism` owns:
    /// `[ceil(i * maxP / p), ceil((i + 1) * maxP / p) - 1]`.
    ///
    /// # Errors
    ///
    /// Parallelism outside `1..=max_parallelism`, or `index >= parallelism`.
    pub fn for_subtask(max_parallelism: u32, parallelism: u32, index: u32) -> Result<Self> {
        validate(max_parallelism, parallelism)?;
        if index >= parallelism {
            return Err(Error::InvalidConfig(format!(
                "subtask {index} of parallelism {parallelism}"
            )));
        }
        let (m, p, i) = (
            u64::from(max_parallelism),
            u64::from(parallelism),
            u64::from(index),
        );
        let start = (i * m).div_ceil(p);
        let end = ((i + 1) * m).div_ceil(p) - 1;
        Ok(Self {
            start: start as u16,
            end: end as u16,
        })
    }

    /// The first key group.
    pub fn start(&self) -> u16 {
        self.start
    }

    /// The last key group.
    pub fn end(&self) -> u16 {
        self.end
    }

    /// The number of key groups.
    pub fn len(&self) -> usize {
        usize::from(self.end - self.start) + 1
    }

    /// Never empty; for symmetry with `len`.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Whether `key_group` is in the range.
    #[inline]
    pub fn contains(&self, key_group: u16) -> bool {
        (self.start..=self.end).contains(&key_group)
    }

    /// The key groups of the range.
    pub fn iter(&self) -> impl Iterator<Item = u16> {
        self.start..=self.end
    }

    /// The position of `key_group` in the range.
    #[inline]
    pub(crate) fn index_of(&self, key_group: u16) -> usize {
        usize::from(key_group - self.start)
    }
}

/// Checks `1 <= parallelism <= max_parallelism <= 32768`.
///
/// # Errors
///
/// [`Error::InvalidConfig`] naming the bad value.
pub fn validate(max_parallelism: u32, parallelism: u32) -> Result<()> {
    if max_parallelism == 0 || max_parallelism > UPPER_BOUND_MAX_PARALLELISM {
        return Err(Error::InvalidConfig(format!(
            "max parallelism {max_parallelism} is outside 1..={UPPER_BOUND_MAX_PARALLELISM}"
        )));
    }
    if parallelism == 0 || parallelism > max_parallelism {
        return Err(Error::InvalidConfig(format!(
            "parallelism {parallelism} is outside 1..={max_parallelism} (the max parallelism)"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_partition_the_key_groups_and_agree_with_the_subtask_formula() -> Result<()> {
        for max in [1u32, 7, 128, 129, 1000, 32768] {
            for p in [1u32, 2, 3, 5, 7, 64, 128] {
                if p > max {
                    continue;
                }
                let mut next = 0u32;
                for i in 0..p {
                    let r = KeyGroupRange::for_subtask(max, p, i)?;
                    assert_eq!(u32::from(r.start()), next, "max {max} p {p} i {i}");
                    for kg in r.iter() {
                        assert_eq!(
                            subtask_for_key_group(max, p, kg),
                            i,
                            "kg {kg} of max {max} p {p}"
                        );
                    }
                    next = u32::from(r.end()) + 1;
                }
                assert_eq!(next, max);
            }
        }
        Ok(())
    }

    #[test]
    fn default_max_parallelism_follows_flink() {
        assert_eq!(default_max_parallelism(1), 128);
        assert_eq!(default_max_parallelism(100), 256);
        assert_eq!(default_max_parallelism(1000), 2048);
        assert_eq!(default_max_parallelism(30000), 32768);
    }

    #[test]
    fn bad_parallelism_is_refused() {
        assert!(validate(0, 1).is_err());
        assert!(validate(32769, 1).is_err());
        assert!(validate(128, 0).is_err());
        assert!(validate(128, 129).is_err());
        assert!(KeyGroupRange::for_subtask(128, 2, 2).is_err());
    }
}
