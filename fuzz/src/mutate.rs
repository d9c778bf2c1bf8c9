//! Structure-aware mutators over valid encodings.
//!
//! Each case starts from a valid encoding (a seed) and applies one to four mutations:
//! truncation, bit flips, bytes set to boundary values, small arithmetic on a byte, words
//! overwritten with boundary integers, huge or overlong varint lengths inserted or written
//! over a length, slices deleted, duplicated or repeated many times, splices of two valid
//! encodings, and deep nesting (a recursive type's "node" prefix repeated up to a million
//! times). Mutated inputs are capped at [`MAX_INPUT`] bytes.

use fastrand::Rng;

/// The largest input a mutation produces.
pub const MAX_INPUT: usize = 2 << 20;

/// How a recursive layout nests: `open` once per level, then `leaf`, then `close` once per
/// level (for a tree, `open` is the node tag and `close` the right-hand leaf).
#[derive(Debug, Clone)]
pub struct Nest {
    /// Bytes that open one level.
    pub open: Vec<u8>,
    /// The innermost value.
    pub leaf: Vec<u8>,
    /// Bytes that close one level.
    pub close: Vec<u8>,
}

impl Nest {
    /// The bytes of `depth` levels, or `None` when they would exceed [`MAX_INPUT`].
    pub fn build(&self, depth: usize) -> Option<Vec<u8>> {
        let size = (self.open.len() + self.close.len())
            .checked_mul(depth)?
            .checked_add(self.leaf.len())?;
        if size > MAX_INPUT {
            return None;
        }
        let mut out = Vec::with_capacity(size);
        for _ in 0..depth {
            out.extend_from_slice(&self.open);
        }
        out.extend_from_slice(&self.leaf);
        for _ in 0..depth {
            out.extend_from_slice(&self.close);
        }
        Some(out)
    }
}

/// Depths around the usual budgets (64, 512) and far beyond them.
pub const NEST_DEPTHS: &[usize] = &[
    63, 64, 65, 100, 511, 512, 513, 1_000, 10_000, 100_000, 1_000_000,
];

/// LEB128 lengths that promise far more than any input holds, and overlong or overflowing
/// encodings.
const HUGE_VARINTS: &[&[u8]] = &[
    &[0xff, 0xff, 0xff, 0xff, 0x0f], // u32::MAX
    &[0xff, 0xff, 0xff, 0xff, 0x07], // i32::MAX
    &[0x80, 0x80, 0x80, 0x80, 0x10], // 2^32
    &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01], // u64::MAX
    &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f], // 2^63 - 1
    &[0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x02], // overflows u64
    &[
        0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01,
    ], // 11 bytes
    &[0x80, 0x80, 0x80, 0x08],       // 2^24 (the zero-sized cap)
    &[0x81, 0x80, 0x80, 0x08],       // 2^24 + 1
    &[0xff, 0xff, 0x7f],             // 2^21 - 1
    &[0xff, 0xff, 0x03],             // 65535
    &[0x80, 0x80, 0x04],             // 65536
    &[0xff, 0x7f],                   // 16383
    &[0x80, 0x00],                   // overlong zero
    &[0x81, 0x80, 0x00],             // overlong one
];

/// Little-endian words at the boundaries of their types.
fn boundary_word(rng: &mut Rng) -> Vec<u8> {
    match rng.usize(..10) {
        0 => u16::MAX.to_le_bytes().to_vec(),
        1 => 0x8000u16.to_le_bytes().to_vec(),
        2 => u32::MAX.to_le_bytes().to_vec(),
        3 => 0x8000_0000u32.to_le_bytes().to_vec(),
        4 => u64::MAX.to_le_bytes().to_vec(),
        5 => i64::MIN.to_le_bytes().to_vec(),
        6 => i64::MAX.to_le_bytes().to_vec(),
        7 => (1u64 << 32).to_le_bytes().to_vec(),
        8 => 0u64.to_le_bytes().to_vec(),
        _ => (rng.u64(..) >> rng.u32(..64)).to_le_bytes().to_vec(),
    }
}

/// A position in `0..=len`.
fn pos(rng: &mut Rng, len: usize) -> usize {
    rng.usize(..=len)
}

/// Mutates `input` in place with one randomly chosen operator; `others` are valid encodings
/// of the same kind (for splices), `nests` the recursive layouts of the kind.
pub fn mutate_once(rng: &mut Rng, input: &mut Vec<u8>, others: &[&[u8]], nests: &[Nest]) {
    let len = input.len();
    match rng.usize(..15) {
        // Truncate.
        0 => input.truncate(pos(rng, len.saturating_sub(1))),
        // Flip one to eight bits.
        1 if len > 0 => {
            for _ in 0..rng.usize(1..=8) {
                let i = rng.usize(..len);
                input[i] ^= 1 << rng.u32(..8);
            }
        }
        // A byte set to a boundary value.
        2 if len > 0 => {
            let i = rng.usize(..len);
            input[i] = [0x00, 0xff, 0x80, 0x7f, 0x01, 0xfe, rng.u8(..)][rng.usize(..7)];
        }
        // Small arithmetic on a byte (lengths and tags off by a little).
        3 if len > 0 => {
            let i = rng.usize(..len);
            let delta = rng.u8(1..=16);
            input[i] = if rng.bool() {
                input[i].wrapping_add(delta)
            } else {
                input[i].wrapping_sub(delta)
            };
        }
        // A word overwritten with a boundary integer.
        4 if len > 0 => {
            let word = boundary_word(rng);
            let i = rng.usize(..len);
            let n = word.len().min(len - i);
            input[i..i + n].copy_from_slice(&word[..n]);
        }
        // A huge or overlong varint inserted (a length where an element was).
        5 => {
            let v = HUGE_VARINTS[rng.usize(..HUGE_VARINTS.len())];
            let i = pos(rng, len);
            input.splice(i..i, v.iter().copied());
        }
        // A huge varint written over the bytes at a position (a length replaced).
        6 => {
            let v = HUGE_VARINTS[rng.usize(..HUGE_VARINTS.len())];
            let i = pos(rng, len);
            let end = (i + rng.usize(1..=3)).min(len);
            input.splice(i..end, v.iter().copied());
        }
        // Delete a slice.
        7 if len > 0 => {
            let i = rng.usize(..len);
            let n = rng.usize(1..=(len - i).min(16));
            input.drain(i..i + n);
        }
        // Duplicate a slice right after itself.
        8 if len > 0 => {
            let i = rng.usize(..len);
            let n = rng.usize(1..=(len - i).min(64));
            let slice = input[i..i + n].to_vec();
            input.splice(i + n..i + n, slice);
        }
        // Repeat a slice many times (many elements, or nesting by repetition).
        9 if len > 0 => {
            let i = rng.usize(..len);
            let n = rng.usize(1..=(len - i).min(16));
            let times = [2, 10, 255, 1_000, 65_536, 1_000_000][rng.usize(..6)];
            let times = times.min(MAX_INPUT / n.max(1));
            let slice = input[i..i + n].to_vec();
            let repeated: Vec<u8> = slice.iter().copied().cycle().take(n * times).collect();
            input.splice(i..i, repeated);
        }
        // Splice with another valid encoding.
        10 if !others.is_empty() => {
            let other = others[rng.usize(..others.len())];
            let i = pos(rng, len);
            let j = pos(rng, other.len());
            input.truncate(i);
            input.extend_from_slice(&other[j..]);
        }
        // Insert a piece of another valid encoding.
        11 if !others.is_empty() => {
            let other = others[rng.usize(..others.len())];
            if !other.is_empty() {
                let j = rng.usize(..other.len());
                let n = rng.usize(1..=(other.len() - j).min(32));
                let i = pos(rng, len);
                input.splice(i..i, other[j..j + n].iter().copied());
            }
        }
        // Deep nesting: the whole input, or a deep value inserted.
        12 | 13 if !nests.is_empty() => {
            let nest = &nests[rng.usize(..nests.len())];
            let depth = NEST_DEPTHS[rng.usize(..NEST_DEPTHS.len())];
            if let Some(deep) = nest.build(depth) {
                if rng.bool() {
                    *input = deep;
                } else {
                    let i = pos(rng, len);
                    input.splice(i..i, deep);
                }
            }
        }
        // Random bytes inserted.
        _ => {
            let i = pos(rng, len);
            let n = rng.usize(1..=8);
            let bytes: Vec<u8> = (0..n).map(|_| rng.u8(..)).collect();
            input.splice(i..i, bytes);
        }
    }
    input.truncate(MAX_INPUT);
}

/// One to four mutations of `seed`.
pub fn mutate(rng: &mut Rng, seed: &[u8], others: &[&[u8]], nests: &[Nest]) -> Vec<u8> {
    let mut input = seed.to_vec();
    let n = [1, 1, 1, 2, 2, 3, 4][rng.usize(..7)];
    for _ in 0..n {
        mutate_once(rng, &mut input, others, nests);
    }
    input
}
