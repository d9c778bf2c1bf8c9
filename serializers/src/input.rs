//! [`DataInputView`]: a cursor over a byte slice that never panics.

use crate::error::{Error, Result};

/// The largest element count accepted for collections of zero-sized values.
pub const MAX_ZERO_SIZED_LEN: usize = 1 << 24;

/// A read cursor over a byte slice.
///
/// Every read returns [`Result`]: short, truncated or corrupt input gives an [`Error`],
/// never a panic and never a read past the end.
///
/// # Examples
///
/// ```
/// use typeinfo_serializers::DataInputView;
///
/// # fn main() -> typeinfo_serializers::Result<()> {
/// let mut input = DataInputView::new(&[0x02, 0x01, 0xac, 0x02]);
/// assert_eq!(input.read_u16()?, 0x0102);
/// assert_eq!(input.read_varint()?, 300);
/// assert!(input.read_u8().is_err());
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct DataInputView<'a> {
    /// All the bytes, for positions and [`consumed_since`](Self::consumed_since).
    data: &'a [u8],
    /// The unread bytes: a suffix of `data`. Reads split their bytes off its front, so no
    /// read needs a separate check that a position lies within the data.
    rest: &'a [u8],
}

macro_rules! read_le {
    ($($name:ident: $ty:ty),* $(,)?) => {$(
        #[doc = concat!("Reads a little-endian `", stringify!($ty), "`.")]
        #[inline(always)]
        pub fn $name(&mut self) -> Result<$ty> {
            Ok(<$ty>::from_le_bytes(self.read_array()?))
        }
    )*};
}

impl<'a> DataInputView<'a> {
    /// A cursor at the start of `data`.
    #[inline]
    pub fn new(data: &'a [u8]) -> Self {
        Self { data, rest: data }
    }

    /// Bytes consumed so far.
    #[inline]
    pub fn position(&self) -> usize {
        self.data.len() - self.rest.len()
    }

    /// Bytes left to read.
    #[inline]
    pub fn remaining(&self) -> usize {
        self.rest.len()
    }

    /// Whether all bytes were read.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.rest.is_empty()
    }

    /// The unread bytes.
    #[inline]
    pub fn rest(&self) -> &'a [u8] {
        self.rest
    }

    /// The bytes between `start` (an earlier [`position`](Self::position)) and the cursor.
    ///
    /// # Panics
    ///
    /// Panics if `start` is after the cursor.
    #[inline]
    pub fn consumed_since(&self, start: usize) -> &'a [u8] {
        &self.data[start..self.position()]
    }

    /// Reads `n` bytes.
    #[inline(always)]
    pub fn read_bytes(&mut self, n: usize) -> Result<&'a [u8]> {
        match self.rest.split_at_checked(n) {
            Some((bytes, rest)) => {
                self.rest = rest;
                Ok(bytes)
            }
            None => Err(Error::eof(n, self.remaining())),
        }
    }

    /// Skips `n` bytes.
    #[inline(always)]
    pub fn skip_bytes(&mut self, n: usize) -> Result<()> {
        self.read_bytes(n).map(|_| ())
    }

    /// Reads exactly `N` bytes into an array.
    #[inline(always)]
    pub fn read_array<const N: usize>(&mut self) -> Result<[u8; N]> {
        match self.rest.split_first_chunk::<N>() {
            Some((bytes, rest)) => {
                self.rest = rest;
                Ok(*bytes)
            }
            None => Err(Error::eof(N, self.remaining())),
        }
    }

    /// Reads one byte.
    #[inline(always)]
    pub fn read_u8(&mut self) -> Result<u8> {
        match self.rest.split_first() {
            Some((&b, rest)) => {
                self.rest = rest;
                Ok(b)
            }
            None => Err(Error::eof(1, 0)),
        }
    }

    /// Reads one signed byte.
    #[inline(always)]
    pub fn read_i8(&mut self) -> Result<i8> {
        self.read_u8().map(|b| b as i8)
    }

    /// Reads a `bool`: byte 0 or 1; anything else is an error.
    #[inline(always)]
    pub fn read_bool(&mut self) -> Result<bool> {
        match self.read_u8()? {
            0 => Ok(false),
            1 => Ok(true),
            b => Err(Error::InvalidBool(b)),
        }
    }

    read_le! {
        read_u16: u16, read_u32: u32, read_u64: u64, read_u128: u128,
        read_i16: i16, read_i32: i32, read_i64: i64, read_i128: i128,
        read_f32: f32, read_f64: f64,
    }

    /// Reads an unsigned LEB128 varint of at most 10 bytes.
    #[inline(always)]
    pub fn read_varint(&mut self) -> Result<u64> {
        // Fast paths: one byte (below 128), two bytes (below 16384), three bytes (below 2^21).
        match self.rest {
            [b0, rest @ ..] if *b0 < 0x80 => {
                self.rest = rest;
                Ok(u64::from(*b0))
            }
            [b0, b1, rest @ ..] if *b1 < 0x80 => {
                self.rest = rest;
                Ok(u64::from(b0 & 0x7f) | (u64::from(*b1) << 7))
            }
            [b0, b1, b2, rest @ ..] if *b2 < 0x80 => {
                self.rest = rest;
                Ok(u64::from(b0 & 0x7f) | (u64::from(b1 & 0x7f) << 7) | (u64::from(*b2) << 14))
            }
            bytes => {
                let (v, n) = read_varint_slow(bytes)?;
                // `n` is at most the length of `bytes` (the varint lies within it).
                self.rest = bytes.get(n..).unwrap_or_default();
                Ok(v)
            }
        }
    }
    /// Reads a zigzag LEB128 varint.
    #[inline(always)]
    pub fn read_varint_signed(&mut self) -> Result<i64> {
        let v = self.read_varint()?;
        Ok(((v >> 1) as i64) ^ -((v & 1) as i64))
    }

    /// Reads a length prefix and checks that `len * min_element_size` bytes can follow.
    ///
    /// Guards allocations against corrupt lengths: a collection can never announce more
    /// elements than the remaining bytes could hold. Pass `0` for zero-sized elements.
    #[inline(always)]
    pub fn read_len(&mut self, min_element_size: usize) -> Result<usize> {
        let len = self.read_varint()?;
        let fits = match usize::try_from(len) {
            // Zero-sized elements occupy no bytes; cap their count so that a corrupt
            // length cannot make a reader spin for hours.
            Ok(l) if min_element_size == 0 => l <= MAX_ZERO_SIZED_LEN,
            Ok(l) => l
                .checked_mul(min_element_size)
                .is_some_and(|b| b <= self.remaining()),
            Err(_) => false,
        };
        if !fits {
            return Err(Error::LengthTooLarge {
                len,
                remaining: self.remaining(),
            });
        }
        Ok(len as usize)
    }

    /// Reads an element count whose element size is unknown (comparing or migrating
    /// serialized collections): accepted when it is at most the remaining bytes (elements
    /// of one byte or more) or at most [`MAX_ZERO_SIZED_LEN`] (zero-sized elements).
    /// Callers must not allocate more than [`remaining`](Self::remaining) elements up front.
    #[inline]
    pub fn read_count(&mut self) -> Result<usize> {
        let len = self.read_varint()?;
        match usize::try_from(len) {
            Ok(l) if l <= self.remaining().max(MAX_ZERO_SIZED_LEN) => Ok(l),
            _ => Err(Error::LengthTooLarge {
                len,
                remaining: self.remaining(),
            }),
        }
    }

    /// Reads a varint length, then that many bytes.
    #[inline(always)]
    pub fn read_len_prefixed(&mut self) -> Result<&'a [u8]> {
        let len = self.read_len(1)?;
        self.read_bytes(len)
    }
}

/// The varint at the start of `bytes` (not on the one- and two-byte fast paths) and its
/// length. A function of the slice rather than a method, so that callers' cursors need not
/// live in memory.
#[inline(never)]
fn read_varint_slow(bytes: &[u8]) -> Result<(u64, usize)> {
    // Up to 8 bytes with 8 readable: one load, the end found from the high bits, the
    // 7-bit groups gathered without a loop.
    if let Some(word) = bytes.first_chunk::<8>() {
        let w = u64::from_le_bytes(*word);
        let ends = !w & 0x8080_8080_8080_8080;
        if ends != 0 {
            let n = (ends.trailing_zeros() / 8 + 1) as usize;
            let w = if n == 8 {
                w
            } else {
                w & ((1u64 << (8 * n)) - 1)
            };
            let mut v = 0;
            let mut i = 0;
            while i < 8 {
                v |= (w >> i) & (0x7f << (7 * i));
                i += 1;
            }
            return Ok((v, n));
        }
    }
    let mut result: u64 = 0;
    for (i, &b) in bytes.iter().take(10).enumerate() {
        if i == 9 && b > 1 {
            return Err(Error::VarintOverflow);
        }
        result |= u64::from(b & 0x7f) << (7 * i);
        if b < 0x80 {
            return Ok((result, i + 1));
        }
    }
    if bytes.len() < 10 {
        Err(Error::eof(bytes.len() + 1, bytes.len()))
    } else {
        Err(Error::VarintOverflow)
    }
}
