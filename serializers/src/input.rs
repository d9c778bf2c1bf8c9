//! [`DataInputView`]: a cursor over a byte slice that never panics.
//!
//! # Bounds on reading untrusted bytes
//!
//! Everything read from disk or a socket is untrusted, so every read is bounded three
//! ways (see `FORMAT.md`, "Limits"):
//!
//! - **By the bytes left.** A length prefix can never announce more elements than the
//!   remaining bytes can hold ([`DataInputView::read_len`]).
//! - **By an allocation budget.** Capacity reserved up front for a collection is capped
//!   ([`capacity_for`]: at most [`PREALLOC_BUDGET`] bytes unless the elements take no more
//!   memory than the bytes that must follow); collections grow as elements are actually
//!   read. Elements that take no bytes at all (`()`, a struct whose fields are all skipped)
//!   cannot be bounded by the bytes left: every list, set, map or array of them spends a
//!   budget of the view ([`DataInputView::zero_sized_budget`], [`MAX_ZERO_SIZED_ITEMS`]
//!   units by default), one unit per element (per [`ZERO_SIZED_UNIT_BYTES`] bytes of
//!   memory for larger elements). The budget is the whole read's: nested collections and
//!   arrays draw on the same one, so that they cannot multiply it (`Vec<Vec<()>>`,
//!   `[[(); 83]; 83]` ...), and a read does at most that much work and holds at most that
//!   many such elements. The typed and the type-free (`Value`) readers spend the same units
//!   for the same bytes, so each reads what the other reads.
//! - **By a depth budget.** Reads that can recurse (the serializer of a recursive field,
//!   the type-free reader's recursive layout) enter a nesting level
//!   ([`DataInputView::enter`]) and leave it when done; entering more than
//!   [`DataInputView::max_depth`] levels ([`DEFAULT_MAX_DEPTH`] by default) is
//!   [`Error::DepthLimitExceeded`], naming the limit. Non-recursive types have a nesting
//!   fixed by their type and spend nothing. [`DataOutputView`](crate::DataOutputView) has
//!   the same budget, so that nothing is written that cannot be read back.

use crate::error::{Error, Result};

/// The default budget of one read for elements that take no bytes (`()`, a struct whose
/// fields are all skipped): `2^18` = 262 144 units, one per element of at most
/// [`ZERO_SIZED_UNIT_BYTES`] bytes of memory (every `Value` of the type-free reader), one
/// per `ZERO_SIZED_UNIT_BYTES` otherwise. Shared by every collection and array of the read.
///
/// Why this number: such elements cost no input, so the budget alone bounds the work and
/// memory a few bytes can ask for. `2^18` type-free `Value`s take 12 MiB; the typed reader
/// holds at most `2^18 × 128` bytes = 32 MiB of them.
pub const MAX_ZERO_SIZED_ITEMS: usize = 1 << 18;

/// The memory one unit of the zero-sized budget stands for: an element of up to 128 bytes
/// (`()`, a type-free `Value` or a pair of them) spends one unit, a larger one one unit per
/// 128 bytes, so that the budget bounds memory as well as work.
pub const ZERO_SIZED_UNIT_BYTES: usize = 128;

/// The default depth budget of a view: how many reads at recursion points may be nested.
pub const DEFAULT_MAX_DEPTH: usize = 512;

/// How many layouts (structs, enums, options, collections, arrays, tuples) one level of
/// the depth budget covers in the type-free reader: a recursion whose level passes through
/// more (a snapshot from outside may nest 60 lists between a type and its recursive
/// reference) spends one level per `LAYOUTS_PER_LEVEL` of them, so that the `Value` it
/// builds is at most `LAYOUTS_PER_LEVEL × max_depth` layouts deep (what a consumer's
/// `drop`, `clone` and `==` recurse through). Derived types pass through 2 to 4 per level
/// (`Chain`: struct, option; `Doc`: enum, list) and spend one, as their typed serializers do.
pub const LAYOUTS_PER_LEVEL: usize = 4;

/// The stack a recursion point keeps free before it goes one level deeper: less than this
/// left, and the level runs on a new stack segment ([`ensure_stack`]).
const STACK_RED_ZONE: usize = 256 << 10;

/// The size of a stack segment [`ensure_stack`] adds.
const STACK_SEGMENT: usize = 2 << 20;

/// Runs `f`, the read or write of one level of a recursive value, on a stack with at least
/// 256 KiB free: on the current one when it has that much left, else on a new 2 MiB
/// segment on the heap (`stacker`, as rustc uses it).
///
/// The depth budget bounds how many levels a read may nest; what one level costs on the
/// stack depends on the build (a debug build takes four to five times the stack of an
/// optimized one) and, for the type-free reader, on a snapshot from outside (how many
/// layouts it nests between a type and its recursive reference). With this at every
/// recursion point, the full budget of [`DEFAULT_MAX_DEPTH`] levels is safe on any thread,
/// including a timely worker's 2 MiB, in every build.
#[inline(always)]
pub fn ensure_stack<R>(f: impl FnOnce() -> R) -> R {
    stacker::maybe_grow(STACK_RED_ZONE, STACK_SEGMENT, f)
}

/// The most memory a collection reserves up front for elements that take more memory
/// than the bytes that must follow for them: 64 KiB. Beyond it, collections grow as
/// elements are actually read.
pub const PREALLOC_BUDGET: usize = 64 << 10;

/// How many elements of `T` a collection may reserve up front for a length `len` that was
/// checked with [`DataInputView::read_len`] against `min_element_size`.
///
/// All of them when an element takes no more memory than its smallest serialized form
/// (the input holds at least that many bytes, so the reservation is no larger than the
/// input); else at most [`PREALLOC_BUDGET`] bytes worth.
///
/// # Examples
///
/// ```
/// use typeinfo_serializers::{capacity_for, PREALLOC_BUDGET};
///
/// assert_eq!(capacity_for::<u64>(1000, 8), 1000);
/// assert_eq!(capacity_for::<[u64; 64]>(1000, 1), PREALLOC_BUDGET / 512);
/// ```
#[inline(always)]
pub fn capacity_for<T>(len: usize, min_element_size: usize) -> usize {
    let size = std::mem::size_of::<T>();
    if size <= min_element_size {
        len
    } else {
        len.min(PREALLOC_BUDGET / size)
    }
}

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
    /// Reads at recursion points in progress.
    depth: u32,
    /// The most reads at recursion points that may be nested.
    max_depth: u32,
    /// Units left for elements that take no bytes.
    zero_sized_left: usize,
    /// The budget of one value ([`reset_zero_sized_budget`](Self::reset_zero_sized_budget)).
    zero_sized_per_value: usize,
}

/// A depth as the `u32` the views keep (limits beyond `u32::MAX` are that).
#[inline]
pub(crate) fn depth_u32(depth: usize) -> u32 {
    u32::try_from(depth).unwrap_or(u32::MAX)
}

/// The units of the zero-sized budget that `count` elements of `element_size` bytes of
/// memory spend (`None` past `usize`): the same for readers and writers.
#[inline]
pub(crate) fn zero_sized_units(count: u64, element_size: usize) -> Option<usize> {
    let per_element = element_size.div_ceil(ZERO_SIZED_UNIT_BYTES).max(1);
    usize::try_from(count)
        .ok()
        .and_then(|c| c.checked_mul(per_element))
}

/// The error of a nesting level past `limit`.
#[cold]
#[inline(never)]
pub(crate) fn too_deep(limit: u32) -> Error {
    Error::DepthLimitExceeded {
        limit: limit as usize,
    }
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
        Self {
            data,
            rest: data,
            depth: 0,
            max_depth: DEFAULT_MAX_DEPTH as u32,
            zero_sized_left: MAX_ZERO_SIZED_ITEMS,
            zero_sized_per_value: MAX_ZERO_SIZED_ITEMS,
        }
    }

    /// This view with a depth budget of `max_depth` nested reads at recursion points
    /// (default [`DEFAULT_MAX_DEPTH`]). Serializers created with a
    /// [`SerializerConfig`](../typeinfo/struct.SerializerConfig.html) of their own limit
    /// enforce the smaller of the two.
    ///
    /// # Examples
    ///
    /// ```
    /// use typeinfo_serializers::{DataInputView, Error};
    ///
    /// let mut input = DataInputView::new(&[]).with_max_depth(1);
    /// assert!(input.enter().is_ok());
    /// assert_eq!(input.enter(), Err(Error::DepthLimitExceeded { limit: 1 }));
    /// input.leave();
    /// assert_eq!(input.depth(), 0);
    /// ```
    #[must_use]
    pub fn with_max_depth(mut self, max_depth: usize) -> Self {
        self.max_depth = depth_u32(max_depth);
        self
    }

    /// The depth budget: how many reads at recursion points may be nested.
    #[inline]
    pub fn max_depth(&self) -> usize {
        self.max_depth as usize
    }

    /// Reads at recursion points now in progress.
    #[inline]
    pub fn depth(&self) -> usize {
        self.depth as usize
    }

    /// Enters one nesting level of a read that can recurse; pair it with
    /// [`leave`](Self::leave).
    ///
    /// # Errors
    ///
    /// [`Error::DepthLimitExceeded`] when [`max_depth`](Self::max_depth) levels are in
    /// progress already.
    #[inline]
    pub fn enter(&mut self) -> Result<()> {
        self.enter_within(u32::MAX as usize)
    }

    /// Enters one nesting level, allowing at most the smaller of `limit` and the view's
    /// [`max_depth`](Self::max_depth) (a serializer's own configured limit).
    ///
    /// # Errors
    ///
    /// [`Error::DepthLimitExceeded`] naming the smaller limit when it is reached.
    #[inline]
    pub fn enter_within(&mut self, limit: usize) -> Result<()> {
        let limit = depth_u32(limit).min(self.max_depth);
        if self.depth >= limit {
            return Err(too_deep(limit));
        }
        self.depth += 1;
        Ok(())
    }

    /// Leaves a nesting level entered with [`enter`](Self::enter).
    #[inline]
    pub fn leave(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    /// Enters `levels` nesting levels at once: a recursion point of the type-free reader
    /// whose level passes through more than [`LAYOUTS_PER_LEVEL`] layouts spends one level
    /// per that many. Pair it with [`leave_levels`](Self::leave_levels).
    ///
    /// # Errors
    ///
    /// [`Error::DepthLimitExceeded`] naming [`max_depth`](Self::max_depth) when the levels
    /// do not fit.
    #[inline]
    pub fn enter_levels(&mut self, levels: usize) -> Result<()> {
        let levels = depth_u32(levels);
        match self.depth.checked_add(levels) {
            Some(d) if d <= self.max_depth => {
                self.depth = d;
                Ok(())
            }
            _ => Err(too_deep(self.max_depth)),
        }
    }

    /// Leaves `levels` nesting levels entered with [`enter_levels`](Self::enter_levels).
    #[inline]
    pub fn leave_levels(&mut self, levels: usize) {
        self.depth = self.depth.saturating_sub(depth_u32(levels));
    }

    /// This view with a budget of `units` for elements that take no bytes (default
    /// [`MAX_ZERO_SIZED_ITEMS`]); see [`spend_zero_sized`](Self::spend_zero_sized).
    #[must_use]
    pub fn with_zero_sized_budget(mut self, units: usize) -> Self {
        self.zero_sized_left = units;
        self.zero_sized_per_value = units;
        self
    }

    /// Restores the zero-sized budget before the next of several values read from this
    /// view that are each their own value (the records of a batch, the elements of a list
    /// state); their writer calls
    /// [`DataOutputView::reset_zero_sized_budget`](crate::DataOutputView::reset_zero_sized_budget)
    /// at the same points.
    #[inline]
    pub fn reset_zero_sized_budget(&mut self) {
        self.zero_sized_left = self.zero_sized_per_value;
    }

    /// The units left for elements that take no bytes.
    #[inline]
    pub fn zero_sized_budget(&self) -> usize {
        self.zero_sized_left
    }

    /// Spends the budget for `count` elements that take no bytes and `element_size` bytes
    /// of memory each: one unit per element, or one per [`ZERO_SIZED_UNIT_BYTES`] of a
    /// larger element. Collections do it in [`read_len_sized`](Self::read_len_sized); an
    /// array of such elements (whose length its type or snapshot gives) calls it directly.
    ///
    /// # Errors
    ///
    /// [`Error::LengthTooLarge`] when the budget has fewer units left.
    #[inline]
    pub fn spend_zero_sized(&mut self, count: u64, element_size: usize) -> Result<()> {
        match zero_sized_units(count, element_size) {
            Some(u) if u <= self.zero_sized_left => {
                self.zero_sized_left -= u;
                Ok(())
            }
            _ => Err(Error::LengthTooLarge {
                len: count,
                remaining: self.remaining(),
            }),
        }
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

    /// Reads an unsigned LEB128 varint of at most 10 bytes, in its shortest form.
    ///
    /// A varint of more than one byte whose last byte is `0x00` (`80 00` for 0) is
    /// refused: every value has exactly one encoding, the one
    /// [`DataOutputView::write_varint`](crate::DataOutputView::write_varint) writes, so
    /// that equal values have equal bytes (the type-free map and set readers find repeated
    /// keys by their bytes; `copy_serialized` copies bytes that read as they were written).
    ///
    /// # Errors
    ///
    /// [`Error::NonCanonicalVarint`], [`Error::VarintOverflow`] past 64 bits, or
    /// [`Error::UnexpectedEof`].
    #[inline(always)]
    pub fn read_varint(&mut self) -> Result<u64> {
        // Fast paths: one byte (below 128), two bytes (below 16384), three bytes (below
        // 2^21). The last byte of a longer form is 1..=0x7f (`wrapping_sub` sends 0, an
        // overlong form, to the slow path, which refuses it).
        match self.rest {
            [b0, rest @ ..] if *b0 < 0x80 => {
                self.rest = rest;
                Ok(u64::from(*b0))
            }
            [b0, b1, rest @ ..] if b1.wrapping_sub(1) < 0x7f => {
                self.rest = rest;
                Ok(u64::from(b0 & 0x7f) | (u64::from(*b1) << 7))
            }
            [b0, b1, b2, rest @ ..] if *b1 >= 0x80 && b2.wrapping_sub(1) < 0x7f => {
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
    /// elements than the remaining bytes could hold. Pass `0` for elements that may take
    /// no bytes: each then spends one unit of the view's
    /// [`zero_sized_budget`](Self::zero_sized_budget) (use
    /// [`read_len_sized`](Self::read_len_sized) when the elements take memory).
    #[inline(always)]
    pub fn read_len(&mut self, min_element_size: usize) -> Result<usize> {
        self.read_len_sized(min_element_size, 0)
    }

    /// Reads a length prefix of elements that take at least `min_element_size` bytes and
    /// `element_size` bytes of memory each (`size_of` of the element type).
    ///
    /// As [`read_len`](Self::read_len); when `min_element_size` is 0 the elements spend
    /// the view's [`zero_sized_budget`](Self::zero_sized_budget)
    /// ([`spend_zero_sized`](Self::spend_zero_sized)), shared by every collection the view
    /// reads (nested ones cannot multiply it).
    ///
    /// # Errors
    ///
    /// [`Error::LengthTooLarge`] when the elements cannot fit the bytes left or the budget.
    #[inline(always)]
    pub fn read_len_sized(
        &mut self,
        min_element_size: usize,
        element_size: usize,
    ) -> Result<usize> {
        let len = self.read_varint()?;
        if min_element_size == 0 {
            self.spend_zero_sized(len, element_size)?;
            // `spend_zero_sized` checked that `len` fits a `usize`.
            return Ok(len as usize);
        }
        match usize::try_from(len) {
            Ok(l)
                if l.checked_mul(min_element_size)
                    .is_some_and(|b| b <= self.remaining()) =>
            {
                Ok(l)
            }
            _ => Err(Error::LengthTooLarge {
                len,
                remaining: self.remaining(),
            }),
        }
    }

    /// Reads an element count whose element size is unknown (comparing or migrating
    /// serialized collections): accepted when it is at most the remaining bytes (elements
    /// of one byte or more), or else spends one unit per element of the
    /// [`zero_sized_budget`](Self::zero_sized_budget). Callers reserve at most
    /// [`capacity_for`]`(len, 0)` elements up front.
    #[inline]
    pub fn read_count(&mut self) -> Result<usize> {
        let len = self.read_varint()?;
        match usize::try_from(len) {
            Ok(l) if l <= self.remaining() => Ok(l),
            _ => self.spend_zero_sized(len, 1).map(|()| len as usize),
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
            if n > 1 && (w >> (8 * (n - 1))) & 0xff == 0 {
                return Err(Error::NonCanonicalVarint);
            }
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
            if b == 0 && i > 0 {
                return Err(Error::NonCanonicalVarint);
            }
            return Ok((result, i + 1));
        }
    }
    if bytes.len() < 10 {
        Err(Error::eof(bytes.len() + 1, bytes.len()))
    } else {
        Err(Error::VarintOverflow)
    }
}
