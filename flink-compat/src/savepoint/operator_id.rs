//! Flink's operator ids: 16 bytes, derived from an operator's uid as `StreamGraphHasherV2`
//! does (`Hashing.murmur3_128(0).newHasher().putString(uid, UTF_8).hash().asBytes()`: Guava's
//! x64 MurmurHash3 of 128 bits, seed 0, over the uid's UTF-8 bytes, as the two 64-bit halves
//! in little-endian order).

use std::fmt;

/// An operator's id, as `_metadata` stores it and Flink prints it (32 hex digits).
///
/// # Examples
///
/// ```
/// use typeinfo_flink_compat::savepoint::OperatorId;
///
/// // The id Flink 2.3 gives the operator with `.uid("stateful")`.
/// assert_eq!(OperatorId::from_uid("stateful").to_string(), "2bf2326fd66dcbd2442fd50df173e152");
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct OperatorId(pub [u8; 16]);

impl OperatorId {
    /// The id Flink derives from a uid.
    pub fn from_uid(uid: &str) -> Self {
        let (h1, h2) = murmur3_x64_128(uid.as_bytes(), 0);
        let mut bytes = [0; 16];
        bytes[..8].copy_from_slice(&h1.to_le_bytes());
        bytes[8..].copy_from_slice(&h2.to_le_bytes());
        Self(bytes)
    }

    /// Parses 32 hex digits (as Flink prints an id).
    pub fn from_hex(hex: &str) -> Option<Self> {
        if hex.len() != 32 || !hex.is_ascii() {
            return None;
        }
        let mut bytes = [0; 16];
        for (i, b) in bytes.iter_mut().enumerate() {
            *b = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).ok()?;
        }
        Some(Self(bytes))
    }
}

impl fmt::Display for OperatorId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

impl fmt::Debug for OperatorId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "OperatorId({self})")
    }
}

const C1: u64 = 0x87c3_7b91_1142_53d5;
const C2: u64 = 0x4cf5_ad43_2745_937f;

fn fmix64(mut k: u64) -> u64 {
    k ^= k >> 33;
    k = k.wrapping_mul(0xff51_afd7_ed55_8ccd);
    k ^= k >> 33;
    k = k.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    k ^ (k >> 33)
}

fn mix_k1(k1: u64) -> u64 {
    k1.wrapping_mul(C1).rotate_left(31).wrapping_mul(C2)
}

fn mix_k2(k2: u64) -> u64 {
    k2.wrapping_mul(C2).rotate_left(33).wrapping_mul(C1)
}

/// MurmurHash3's x64 128-bit variant (Guava's `murmur3_128`).
fn murmur3_x64_128(data: &[u8], seed: u32) -> (u64, u64) {
    let mut h1 = u64::from(seed);
    let mut h2 = u64::from(seed);
    let mut blocks = data.chunks_exact(16);
    for block in &mut blocks {
        let k1 = u64::from_le_bytes(block[..8].try_into().unwrap_or_default());
        let k2 = u64::from_le_bytes(block[8..].try_into().unwrap_or_default());
        h1 ^= mix_k1(k1);
        h1 = h1
            .rotate_left(27)
            .wrapping_add(h2)
            .wrapping_mul(5)
            .wrapping_add(0x52dc_e729);
        h2 ^= mix_k2(k2);
        h2 = h2
            .rotate_left(31)
            .wrapping_add(h1)
            .wrapping_mul(5)
            .wrapping_add(0x3849_5ab5);
    }
    let tail = blocks.remainder();
    let mut k1 = 0u64;
    let mut k2 = 0u64;
    for (i, &b) in tail.iter().enumerate() {
        if i < 8 {
            k1 |= u64::from(b) << (8 * i);
        } else {
            k2 |= u64::from(b) << (8 * (i - 8));
        }
    }
    if tail.len() > 8 {
        h2 ^= mix_k2(k2);
    }
    if !tail.is_empty() {
        h1 ^= mix_k1(k1);
    }
    let len = data.len() as u64;
    h1 ^= len;
    h2 ^= len;
    h1 = h1.wrapping_add(h2);
    h2 = h2.wrapping_add(h1);
    h1 = fmix64(h1);
    h2 = fmix64(h2);
    h1 = h1.wrapping_add(h2);
    h2 = h2.wrapping_add(h1);
    (h1, h2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_of_uids_match_flink() {
        // Printed by tests/flink/FlinkSavepoints.java (and stored in its savepoints).
        for (uid, id) in [
            ("source", "e5a72f353fc1e6bbf3bd96a41384998c"),
            ("rules", "e635e88f2157f1386a91248eacaad37a"),
            ("stateful", "2bf2326fd66dcbd2442fd50df173e152"),
            ("window", "01203aa9a12dc1ec725e03853dd7c8f2"),
            ("sink", "2e588ce1c86a9d46e2e85186773ce4fd"),
        ] {
            assert_eq!(OperatorId::from_uid(uid).to_string(), id, "{uid}");
            assert_eq!(OperatorId::from_hex(id), Some(OperatorId::from_uid(uid)));
        }
    }

    #[test]
    fn murmur3_matches_reference_vectors() {
        // Guava's murmur3_128(0) of "" and of a 16+ byte input exercise the tail and blocks.
        assert_eq!(murmur3_x64_128(b"", 0), (0, 0));
        let (h1, _) = murmur3_x64_128(b"The quick brown fox jumps over the lazy dog", 0);
        assert_eq!(h1.to_le_bytes()[..4], [0x6c, 0x1b, 0x07, 0xbc]);
    }
}
