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

/// MurmurHash3's x64 128-bit variant (Guava's `murmur3_128`), by the `murmur3` crate: the
/// two 64-bit halves, `h1` first (Guava's `HashCode.asBytes` writes each little-endian).
fn murmur3_x64_128(data: &[u8], seed: u32) -> (u64, u64) {
    // Reading from a slice cannot fail.
    let hash = murmur3::murmur3_x64_128(&mut std::io::Cursor::new(data), seed).unwrap_or(0);
    (hash as u64, (hash >> 64) as u64)
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
