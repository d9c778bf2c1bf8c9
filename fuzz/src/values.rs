//! Seeded generation of valid values, biased towards boundaries (empty, zero, MIN, MAX,
//! NaN, multi-byte characters), so that seeds cover every branch of a layout.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
use std::hash::Hash;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use fastrand::Rng;

/// The generator: a seeded PRNG and the largest collection length.
pub struct Gen {
    /// The PRNG.
    pub rng: Rng,
    /// Collections have at most this many elements.
    pub max_len: usize,
}

impl Gen {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        Gen {
            rng: Rng::with_seed(seed),
            max_len: 8,
        }
    }

    /// A collection length (often 0 or 1).
    pub fn len(&mut self) -> usize {
        match self.rng.usize(..4) {
            0 => 0,
            1 => 1,
            _ => self.rng.usize(..=self.max_len),
        }
    }

    /// `n` values.
    pub fn many<T: Arb>(&mut self, n: usize) -> Vec<T> {
        (0..n).map(|_| T::arb(self)).collect()
    }
}

/// A type whose valid values can be generated.
pub trait Arb: Sized {
    /// A random value.
    fn arb(g: &mut Gen) -> Self;
}

macro_rules! ints {
    ($($t:ty),*) => {$(
        impl Arb for $t {
            fn arb(g: &mut Gen) -> Self {
                match g.rng.usize(..6) {
                    0 => 0,
                    1 => <$t>::MIN,
                    2 => <$t>::MAX,
                    3 => 1,
                    _ => {
                        let mut bytes = [0u8; std::mem::size_of::<$t>()];
                        g.rng.fill(&mut bytes);
                        <$t>::from_le_bytes(bytes)
                    }
                }
            }
        }
    )*};
}
ints!(u8, u16, u32, u64, u128, i8, i16, i32, i64, i128);

impl Arb for bool {
    fn arb(g: &mut Gen) -> Self {
        g.rng.bool()
    }
}

impl Arb for char {
    fn arb(g: &mut Gen) -> Self {
        match g.rng.usize(..4) {
            0 => g.rng.alphanumeric(),
            1 => ['\0', 'é', '€', '𝄞', char::MAX, '\u{d7ff}', '\u{e000}'][g.rng.usize(..7)],
            _ => g.rng.char(..),
        }
    }
}

impl Arb for f32 {
    fn arb(g: &mut Gen) -> Self {
        match g.rng.usize(..5) {
            0 => [
                0.0,
                -0.0,
                f32::NAN,
                f32::INFINITY,
                f32::MIN_POSITIVE,
                f32::MAX,
            ][g.rng.usize(..6)],
            1 => f32::from_bits(g.rng.u32(..)),
            _ => g.rng.f32() * 1e6 - 5e5,
        }
    }
}

impl Arb for f64 {
    fn arb(g: &mut Gen) -> Self {
        match g.rng.usize(..5) {
            0 => [
                0.0,
                -0.0,
                f64::NAN,
                f64::NEG_INFINITY,
                f64::MIN_POSITIVE,
                f64::MAX,
            ][g.rng.usize(..6)],
            1 => f64::from_bits(g.rng.u64(..)),
            _ => g.rng.f64() * 1e9 - 5e8,
        }
    }
}

impl Arb for () {
    fn arb(_: &mut Gen) -> Self {}
}

impl Arb for String {
    fn arb(g: &mut Gen) -> Self {
        let n = g.len() * 2;
        (0..n).map(|_| char::arb(g)).collect()
    }
}

impl Arb for bytes::Bytes {
    fn arb(g: &mut Gen) -> Self {
        bytes::Bytes::from(Vec::<u8>::arb(g))
    }
}

impl<T: Arb> Arb for Vec<T> {
    fn arb(g: &mut Gen) -> Self {
        let n = g.len();
        g.many(n)
    }
}

impl<T: Arb> Arb for VecDeque<T> {
    fn arb(g: &mut Gen) -> Self {
        Vec::arb(g).into()
    }
}

impl<T: Arb> Arb for Option<T> {
    fn arb(g: &mut Gen) -> Self {
        g.rng.bool().then(|| T::arb(g))
    }
}

impl<T: Arb> Arb for Box<T> {
    fn arb(g: &mut Gen) -> Self {
        Box::new(T::arb(g))
    }
}

impl<T: Arb> Arb for Arc<T> {
    fn arb(g: &mut Gen) -> Self {
        Arc::new(T::arb(g))
    }
}

impl<T: Arb, const N: usize> Arb for [T; N] {
    fn arb(g: &mut Gen) -> Self {
        std::array::from_fn(|_| T::arb(g))
    }
}

impl<K: Arb + Eq + Hash, V: Arb> Arb for HashMap<K, V> {
    fn arb(g: &mut Gen) -> Self {
        let n = g.len();
        (0..n).map(|_| (K::arb(g), V::arb(g))).collect()
    }
}

impl<K: Arb + Ord, V: Arb> Arb for BTreeMap<K, V> {
    fn arb(g: &mut Gen) -> Self {
        let n = g.len();
        (0..n).map(|_| (K::arb(g), V::arb(g))).collect()
    }
}

impl<T: Arb + Eq + Hash> Arb for HashSet<T> {
    fn arb(g: &mut Gen) -> Self {
        Vec::arb(g).into_iter().collect()
    }
}

impl<T: Arb + Ord> Arb for BTreeSet<T> {
    fn arb(g: &mut Gen) -> Self {
        Vec::arb(g).into_iter().collect()
    }
}

impl Arb for Duration {
    fn arb(g: &mut Gen) -> Self {
        match g.rng.usize(..3) {
            0 => [Duration::ZERO, Duration::MAX, Duration::from_nanos(1)][g.rng.usize(..3)],
            _ => Duration::new(g.rng.u64(..), g.rng.u32(..1_000_000_000)),
        }
    }
}

impl Arb for SystemTime {
    fn arb(g: &mut Gen) -> Self {
        let d = Duration::new(g.rng.u64(..1 << 40), g.rng.u32(..1_000_000_000));
        let t = if g.rng.bool() {
            UNIX_EPOCH.checked_add(d)
        } else {
            UNIX_EPOCH.checked_sub(d)
        };
        t.unwrap_or(UNIX_EPOCH)
    }
}

impl Arb for rust_decimal::Decimal {
    fn arb(g: &mut Gen) -> Self {
        rust_decimal::Decimal::from_parts(
            g.rng.u32(..),
            g.rng.u32(..),
            g.rng.u32(..),
            g.rng.bool(),
            g.rng.u32(..=28),
        )
    }
}

impl Arb for bigdecimal::BigDecimal {
    fn arb(g: &mut Gen) -> Self {
        let digits = bigdecimal::num_bigint::BigInt::from(i128::arb(g));
        bigdecimal::BigDecimal::new(digits, g.rng.i64(-40..40))
    }
}

macro_rules! tuples {
    ($(($($t:ident),+))*) => {$(
        impl<$($t: Arb),+> Arb for ($($t,)+) {
            fn arb(g: &mut Gen) -> Self {
                ($($t::arb(g),)+)
            }
        }
    )*};
}
tuples! {
    (A)
    (A, B)
    (A, B, C)
    (A, B, C, D)
    (A, B, C, D, E, F, G, H, I, J, K, L)
}
