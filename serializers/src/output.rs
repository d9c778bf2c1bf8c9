//! [`DataOutputView`]: the growable buffer serializers write into.

/// A growable byte buffer that serializers write into.
///
/// Numbers are written little-endian at their full width; lengths and enum tags are
/// unsigned LEB128 varints (see `FORMAT.md`). Writes never fail. Hot paths reserve once
/// ([`DataOutputView::reserve`]) and then write; the grow path is kept out of line.
///
/// # Examples
///
/// ```
/// use typeinfo_serializers::DataOutputView;
///
/// let mut out = DataOutputView::new();
/// out.write_u16(0x0102);
/// out.write_varint(300);
/// assert_eq!(out.as_slice(), &[0x02, 0x01, 0xac, 0x02]);
/// ```
///
/// A view has the depth budget of [`DataInputView`](crate::DataInputView): writes at
/// recursion points [`enter`](Self::enter) a nesting level, and a value nested deeper than
/// [`max_depth`](Self::max_depth) is an error, so that nothing is written that a reader
/// with the same budget could not read back. It also has the reader's zero-sized budget
/// ([`MAX_ZERO_SIZED_ITEMS`](crate::MAX_ZERO_SIZED_ITEMS) units): collections and arrays of
/// elements that serialize to no bytes spend it as reading them does, so that a value a
/// reader would refuse is refused when written
/// ([`Error::TooManyZeroSizedElements`](crate::Error::TooManyZeroSizedElements)). The budget
/// is a value's: [`clear`](Self::clear) restores it, and a view that holds several values
/// back to back calls [`reset_zero_sized_budget`](Self::reset_zero_sized_budget) before
/// each when their reader gives each its own. Views compare by their bytes.
#[derive(Debug, Clone)]
pub struct DataOutputView {
    buf: Vec<u8>,
    /// Writes at recursion points in progress.
    depth: u32,
    /// The most writes at recursion points that may be nested.
    max_depth: u32,
    /// Units left for elements that serialize to no bytes (as the reader's budget).
    zero_sized_left: usize,
    /// The budget [`clear`](Self::clear) restores.
    zero_sized_per_value: usize,
}

impl Default for DataOutputView {
    fn default() -> Self {
        Self::from_vec(Vec::new())
    }
}

impl PartialEq for DataOutputView {
    fn eq(&self, other: &Self) -> bool {
        self.buf == other.buf
    }
}

impl Eq for DataOutputView {}

macro_rules! write_le {
    ($($name:ident: $ty:ty),* $(,)?) => {$(
        #[doc = concat!("Writes a `", stringify!($ty), "` little-endian.")]
        #[inline(always)]
        pub fn $name(&mut self, v: $ty) {
            self.write_bytes(&v.to_le_bytes());
        }
    )*};
}

impl DataOutputView {
    /// An empty view.
    pub fn new() -> Self {
        Self::from_vec(Vec::new())
    }

    /// An empty view with room for `capacity` bytes.
    pub fn with_capacity(capacity: usize) -> Self {
        Self::from_vec(Vec::with_capacity(capacity))
    }

    /// A view that appends to an existing buffer (reuse its allocation).
    pub fn from_vec(buf: Vec<u8>) -> Self {
        Self {
            buf,
            depth: 0,
            max_depth: crate::DEFAULT_MAX_DEPTH as u32,
            zero_sized_left: crate::MAX_ZERO_SIZED_ITEMS,
            zero_sized_per_value: crate::MAX_ZERO_SIZED_ITEMS,
        }
    }

    /// This view with a zero-sized budget of `units` per value (default
    /// [`MAX_ZERO_SIZED_ITEMS`](crate::MAX_ZERO_SIZED_ITEMS)); match the reader's
    /// [`with_zero_sized_budget`](crate::DataInputView::with_zero_sized_budget).
    #[must_use]
    pub fn with_zero_sized_budget(mut self, units: usize) -> Self {
        self.zero_sized_per_value = units;
        self.zero_sized_left = units;
        self
    }

    /// Restores the zero-sized budget for the next value written into this view.
    #[inline]
    pub fn reset_zero_sized_budget(&mut self) {
        self.zero_sized_left = self.zero_sized_per_value;
    }

    /// Spends the zero-sized budget for `count` elements that serialize to no bytes and
    /// take `element_size` bytes of memory each, as
    /// [`DataInputView::spend_zero_sized`](crate::DataInputView::spend_zero_sized) does
    /// when reading them.
    ///
    /// # Errors
    ///
    /// [`Error::TooManyZeroSizedElements`](crate::Error::TooManyZeroSizedElements) when the
    /// budget has fewer units left: a reader would refuse the value.
    #[inline]
    pub fn spend_zero_sized(&mut self, count: u64, element_size: usize) -> crate::Result<()> {
        match crate::input::zero_sized_units(count, element_size) {
            Some(u) if u <= self.zero_sized_left => {
                self.zero_sized_left -= u;
                Ok(())
            }
            _ => Err(crate::Error::TooManyZeroSizedElements {
                count,
                budget: self.zero_sized_per_value,
            }),
        }
    }

    /// Writes the element count of a collection whose elements take at least
    /// `min_element_size` bytes and `element_size` bytes of memory: the writing side of
    /// [`DataInputView::read_len_sized`](crate::DataInputView::read_len_sized), which
    /// spends the zero-sized budget when `min_element_size` is 0.
    ///
    /// # Errors
    ///
    /// [`Error::TooManyZeroSizedElements`](crate::Error::TooManyZeroSizedElements).
    #[inline(always)]
    pub fn write_len_sized(
        &mut self,
        len: usize,
        min_element_size: usize,
        element_size: usize,
    ) -> crate::Result<()> {
        if min_element_size == 0 {
            self.spend_zero_sized(len as u64, element_size)?;
        }
        self.write_len(len);
        Ok(())
    }

    /// This view with a depth budget of `max_depth` nested writes at recursion points
    /// (default [`DEFAULT_MAX_DEPTH`](crate::DEFAULT_MAX_DEPTH)).
    #[must_use]
    pub fn with_max_depth(mut self, max_depth: usize) -> Self {
        self.max_depth = crate::input::depth_u32(max_depth);
        self
    }

    /// The depth budget: how many writes at recursion points may be nested.
    #[inline]
    pub fn max_depth(&self) -> usize {
        self.max_depth as usize
    }

    /// Writes at recursion points now in progress.
    #[inline]
    pub fn depth(&self) -> usize {
        self.depth as usize
    }

    /// Enters one nesting level of a write that can recurse; pair it with
    /// [`leave`](Self::leave).
    ///
    /// # Errors
    ///
    /// [`Error::DepthLimitExceeded`](crate::Error::DepthLimitExceeded) when
    /// [`max_depth`](Self::max_depth) levels are in progress already.
    #[inline]
    pub fn enter(&mut self) -> crate::Result<()> {
        self.enter_within(u32::MAX as usize)
    }

    /// Enters one nesting level, allowing at most the smaller of `limit` and the view's
    /// [`max_depth`](Self::max_depth).
    ///
    /// # Errors
    ///
    /// [`Error::DepthLimitExceeded`](crate::Error::DepthLimitExceeded) naming the smaller
    /// limit when it is reached.
    #[inline]
    pub fn enter_within(&mut self, limit: usize) -> crate::Result<()> {
        let limit = crate::input::depth_u32(limit).min(self.max_depth);
        if self.depth >= limit {
            return Err(crate::input::too_deep(limit));
        }
        self.depth += 1;
        Ok(())
    }

    /// Leaves a nesting level entered with [`enter`](Self::enter).
    #[inline]
    pub fn leave(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    /// Enters `levels` nesting levels at once (a recursion point of the type-free writer
    /// whose level passes through many layouts); pair it with
    /// [`leave_levels`](Self::leave_levels).
    ///
    /// # Errors
    ///
    /// [`Error::DepthLimitExceeded`](crate::Error::DepthLimitExceeded) naming
    /// [`max_depth`](Self::max_depth) when the levels do not fit.
    #[inline]
    pub fn enter_levels(&mut self, levels: usize) -> crate::Result<()> {
        let levels = crate::input::depth_u32(levels);
        match self.depth.checked_add(levels) {
            Some(d) if d <= self.max_depth => {
                self.depth = d;
                Ok(())
            }
            _ => Err(crate::input::too_deep(self.max_depth)),
        }
    }

    /// Leaves `levels` nesting levels entered with [`enter_levels`](Self::enter_levels).
    #[inline]
    pub fn leave_levels(&mut self, levels: usize) {
        self.depth = self.depth.saturating_sub(crate::input::depth_u32(levels));
    }

    /// The bytes written so far.
    #[inline]
    pub fn as_slice(&self) -> &[u8] {
        &self.buf
    }

    /// Number of bytes written.
    #[inline]
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    /// Whether nothing was written.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// Forgets the written bytes, keeping the allocation, and restores the zero-sized
    /// budget.
    #[inline]
    pub fn clear(&mut self) {
        self.buf.clear();
        self.zero_sized_left = self.zero_sized_per_value;
    }

    /// Cuts the buffer back to `len` bytes (for builders that reuse a common prefix).
    #[inline]
    pub fn truncate(&mut self, len: usize) {
        self.buf.truncate(len);
    }

    /// The underlying buffer.
    pub fn into_inner(self) -> Vec<u8> {
        self.buf
    }

    /// Mutable access to the underlying buffer, for code that must patch bytes in place.
    pub fn as_mut_vec(&mut self) -> &mut Vec<u8> {
        &mut self.buf
    }

    /// Makes room for at least `additional` more bytes.
    #[inline(always)]
    pub fn reserve(&mut self, additional: usize) {
        if self.buf.capacity() - self.buf.len() < additional {
            self.grow(additional);
        }
    }

    #[cold]
    #[inline(never)]
    fn grow(&mut self, additional: usize) {
        self.buf.reserve(additional);
    }

    /// Writes raw bytes.
    #[inline(always)]
    pub fn write_bytes(&mut self, bytes: &[u8]) {
        self.reserve(bytes.len());
        let len = self.buf.len();
        // SAFETY: `reserve` guaranteed `capacity - len >= bytes.len()`, so the destination
        // range `len..len + bytes.len()` lies within the allocation. `bytes` is a shared
        // borrow distinct from the `&mut self` buffer, so the ranges cannot overlap. The
        // bytes become initialized before `set_len` covers them.
        unsafe {
            std::ptr::copy_nonoverlapping(
                bytes.as_ptr(),
                self.buf.as_mut_ptr().add(len),
                bytes.len(),
            );
            self.buf.set_len(len + bytes.len());
        }
    }

    /// Appends `n` bytes that `write` fills in: the fixed-length write path
    /// ([`TypeSerializer::write_fixed`](crate::TypeSerializer::write_fixed)).
    ///
    /// One capacity check for the whole value; `write` stores into a plain slice of exactly
    /// `n` bytes, so the compiler need not reload the buffer's length and capacity after each
    /// store. The slice starts zeroed; that zeroing is dead once every byte is overwritten,
    /// which the optimizer sees when the writes have constant offsets (fixed-length structs)
    /// and then removes. When `write` fails, nothing is appended.
    ///
    /// # Errors
    ///
    /// The error of `write`.
    #[doc(hidden)]
    #[inline(always)]
    pub fn append_with(
        &mut self,
        n: usize,
        write: impl FnOnce(&mut [u8]) -> crate::Result<()>,
    ) -> crate::Result<()> {
        self.reserve(n);
        let len = self.buf.len();
        // SAFETY: `reserve(n)` left room for `n` bytes after `len`, so `len..len + n` lies
        // within the allocation, past the vector's length: no live reference covers it. The
        // bytes are zeroed (initialized) before the slice over them is made; the slice lives
        // only during `write`, which cannot reach `self` (borrowed mutably here).
        let dst = unsafe {
            let start = self.buf.as_mut_ptr().add(len);
            std::ptr::write_bytes(start, 0, n);
            std::slice::from_raw_parts_mut(start, n)
        };
        write(dst)?;
        // SAFETY: the `n` bytes after `len` were initialized above (zeroed, then perhaps
        // overwritten by `write`) and lie within the capacity.
        unsafe { self.buf.set_len(len + n) };
        Ok(())
    }

    /// Reserves room for `max` bytes and returns a writer that puts bytes into it: one
    /// capacity check for a whole record of varying length (strings, varints), then writes
    /// through a cursor the optimizer can keep in registers. The bytes written become part
    /// of the buffer at [`ReservedWriter::finish`]; a writer dropped without it (say, on an
    /// error returned halfway) appends nothing.
    ///
    /// A write past the `max` bytes fails; the writer never grows the buffer.
    ///
    /// # Examples
    ///
    /// ```
    /// use typeinfo_serializers::DataOutputView;
    ///
    /// # fn main() -> typeinfo_serializers::Result<()> {
    /// let mut out = DataOutputView::new();
    /// let name = "ab";
    /// let mut w = out.reserved_writer(1 + 10 + name.len() + 8);
    /// w.put_u8(7)?;
    /// w.put_len_prefixed(name.as_bytes())?;
    /// w.put_u64(1)?;
    /// w.finish();
    /// assert_eq!(out.as_slice(), &[7, 2, b'a', b'b', 1, 0, 0, 0, 0, 0, 0, 0]);
    /// # Ok(())
    /// # }
    /// ```
    #[inline(always)]
    pub fn reserved_writer(&mut self, max: usize) -> ReservedWriter<'_> {
        self.reserve(max);
        let len = self.buf.len();
        // SAFETY: `len <= capacity`, so the pointer stays within the allocation (or one
        // past its end). `as_mut_ptr` creates no reference to the elements, so the pointer
        // stays valid while the writer holds the vector borrowed.
        let next = unsafe { self.buf.as_mut_ptr().add(len) };
        // The room is exactly `max` (which the optimizer can then follow through the
        // writes): `reserve` made `capacity - len >= max` (`Vec::reserve` guarantees it).
        ReservedWriter {
            buf: &mut self.buf,
            next,
            left: max,
            room: max,
        }
    }

    /// Writes the bytes `head`, then the first `n` bytes of `word` in big-endian order
    /// (`n <= 16`), with one capacity check and fixed-size stores (the whole of `word` is
    /// stored; the bytes past `n` stay outside the written length).
    #[doc(hidden)]
    #[inline(always)]
    pub fn write_fixed_prefix<const H: usize>(&mut self, head: &[u8; H], word: u128, n: usize) {
        let n = n.min(16);
        self.reserve(H + 16);
        let len = self.buf.len();
        // SAFETY: `reserve(H + 16)` left room for `H + 16` bytes after `len`: the head and
        // the whole word fit. The written length grows by `H + n <= H + 16`, all of which
        // was just written. `head` and `word` are shared borrows distinct from the buffer.
        unsafe {
            let start = self.buf.as_mut_ptr().add(len);
            start.cast::<[u8; H]>().write_unaligned(*head);
            write_be_word(start.add(H), word);
            self.buf.set_len(len + H + n);
        }
    }

    /// Writes one byte.
    #[inline(always)]
    pub fn write_u8(&mut self, v: u8) {
        self.reserve(1);
        let len = self.buf.len();
        // SAFETY: `reserve(1)` left room for one more byte after `len`; it is written
        // before `set_len` covers it.
        unsafe {
            self.buf.as_mut_ptr().add(len).write(v);
            self.buf.set_len(len + 1);
        }
    }

    /// Writes one signed byte.
    #[inline(always)]
    pub fn write_i8(&mut self, v: i8) {
        self.write_u8(v as u8);
    }

    /// Writes a `bool` as one byte, 0 or 1.
    #[inline(always)]
    pub fn write_bool(&mut self, v: bool) {
        self.write_u8(v as u8);
    }

    write_le! {
        write_u16: u16, write_u32: u32, write_u64: u64, write_u128: u128,
        write_i16: i16, write_i32: i32, write_i64: i64, write_i128: i128,
        write_f32: f32, write_f64: f64,
    }

    /// Writes an unsigned LEB128 varint (1 byte below 128, at most 10 bytes).
    #[inline(always)]
    pub fn write_varint(&mut self, mut v: u64) {
        if v < 0x80 {
            return self.write_u8(v as u8);
        }
        self.reserve(10);
        let len = self.buf.len();
        // SAFETY: `reserve(10)` left room for at least 10 bytes after `len`, and a u64 takes
        // at most 10 LEB128 bytes (7 bits each); every byte is written before `set_len`
        // covers it.
        unsafe {
            let start = self.buf.as_mut_ptr().add(len);
            let mut n = 0;
            while v >= 0x80 {
                start.add(n).write((v as u8) | 0x80);
                v >>= 7;
                n += 1;
            }
            start.add(n).write(v as u8);
            self.buf.set_len(len + n + 1);
        }
    }

    /// Writes a signed varint: zigzag, then LEB128.
    #[inline(always)]
    pub fn write_varint_signed(&mut self, v: i64) {
        self.write_varint(((v << 1) ^ (v >> 63)) as u64);
    }

    /// Writes a length or element count as a varint.
    #[inline(always)]
    pub fn write_len(&mut self, len: usize) {
        self.write_varint(len as u64);
    }

    /// Writes a varint length, then the bytes.
    #[inline(always)]
    pub fn write_len_prefixed(&mut self, bytes: &[u8]) {
        let n = bytes.len();
        self.reserve(n + 10);
        let len = self.buf.len();
        // SAFETY: `reserve(n + 10)` left room for the length (at most 10 LEB128 bytes) and
        // the `n` bytes after `len`. `bytes` is a shared borrow, distinct from the buffer,
        // so the copy does not overlap. Every byte is written before `set_len` covers it.
        unsafe {
            let start = self.buf.as_mut_ptr().add(len);
            let mut v = n as u64;
            let mut i = 0;
            while v >= 0x80 {
                start.add(i).write((v as u8) | 0x80);
                v >>= 7;
                i += 1;
            }
            start.add(i).write(v as u8);
            i += 1;
            copy_short(bytes, start.add(i));
            self.buf.set_len(len + i + n);
        }
    }
}

/// Writes into room reserved at the end of a [`DataOutputView`]
/// ([`DataOutputView::reserved_writer`]): a cursor over the buffer's spare capacity.
///
/// Every `put_*` checks the room left and fails, writing nothing, when the value does not
/// fit in what was reserved. The bytes put are appended to the buffer by
/// [`finish`](Self::finish).
#[derive(Debug)]
pub struct ReservedWriter<'b> {
    buf: &'b mut Vec<u8>,
    /// Where the next byte goes. Invariant: the bytes from the vector's length up to
    /// `next` are initialized, and `next + left` is within the vector's capacity.
    next: *mut u8,
    /// Bytes of room from `next` on.
    left: usize,
    /// Bytes of room at the start: `next` is `room - left` bytes past the length.
    room: usize,
}

/// The error of a write past the reserved room.
#[cold]
#[inline(never)]
fn no_room(needed: usize, left: usize) -> crate::Error {
    crate::Error::custom(format!(
        "a reserved write of {needed} bytes with {left} left"
    ))
}

impl ReservedWriter<'_> {
    /// The bytes of room left.
    #[inline(always)]
    pub fn remaining(&self) -> usize {
        self.left
    }

    /// Appends the bytes put so far to the buffer.
    #[inline(always)]
    pub fn finish(self) {
        let len = self.buf.len();
        let written = self.room - self.left;
        // SAFETY: by the invariant, `next` is `written` bytes past the length, every byte
        // before it was initialized by a `put_*`, and it lies within the capacity, so
        // `len + written <= capacity`.
        unsafe { self.buf.set_len(len + written) };
    }

    /// Writes `N` bytes.
    ///
    /// # Errors
    ///
    /// Less than `N` bytes of room left.
    #[inline(always)]
    pub fn put_array<const N: usize>(&mut self, bytes: [u8; N]) -> crate::Result<()> {
        if self.left < N {
            return Err(no_room(N, self.left));
        }
        // SAFETY: `N <= left` bytes from `next` lie within the vector's capacity, past its
        // length (no reference covers them); they are written before `next` moves past
        // them, which keeps the invariant.
        unsafe {
            self.next.cast::<[u8; N]>().write_unaligned(bytes);
            self.next = self.next.add(N);
        }
        self.left -= N;
        Ok(())
    }

    /// Writes one byte.
    ///
    /// # Errors
    ///
    /// No room left.
    #[inline(always)]
    pub fn put_u8(&mut self, v: u8) -> crate::Result<()> {
        self.put_array([v])
    }

    /// Writes a `u16` little-endian.
    ///
    /// # Errors
    ///
    /// Less than 2 bytes of room left.
    #[inline(always)]
    pub fn put_u16(&mut self, v: u16) -> crate::Result<()> {
        self.put_array(v.to_le_bytes())
    }

    /// Writes a `u32` little-endian.
    ///
    /// # Errors
    ///
    /// Less than 4 bytes of room left.
    #[inline(always)]
    pub fn put_u32(&mut self, v: u32) -> crate::Result<()> {
        self.put_array(v.to_le_bytes())
    }

    /// Writes a `u64` little-endian.
    ///
    /// # Errors
    ///
    /// Less than 8 bytes of room left.
    #[inline(always)]
    pub fn put_u64(&mut self, v: u64) -> crate::Result<()> {
        self.put_array(v.to_le_bytes())
    }

    /// Writes an `i64` little-endian.
    ///
    /// # Errors
    ///
    /// Less than 8 bytes of room left.
    #[inline(always)]
    pub fn put_i64(&mut self, v: i64) -> crate::Result<()> {
        self.put_array(v.to_le_bytes())
    }

    /// Writes an `f32` little-endian.
    ///
    /// # Errors
    ///
    /// Less than 4 bytes of room left.
    #[inline(always)]
    pub fn put_f32(&mut self, v: f32) -> crate::Result<()> {
        self.put_array(v.to_le_bytes())
    }

    /// Writes an `f64` little-endian.
    ///
    /// # Errors
    ///
    /// Less than 8 bytes of room left.
    #[inline(always)]
    pub fn put_f64(&mut self, v: f64) -> crate::Result<()> {
        self.put_array(v.to_le_bytes())
    }

    /// Writes raw bytes.
    ///
    /// # Errors
    ///
    /// Less room left than `bytes`.
    #[inline(always)]
    pub fn put_bytes(&mut self, bytes: &[u8]) -> crate::Result<()> {
        let n = bytes.len();
        if self.left < n {
            return Err(no_room(n, self.left));
        }
        // SAFETY: `n <= left` bytes from `next` lie within the vector's capacity, past its
        // length, so no reference covers them and they cannot overlap the shared `bytes`;
        // they are written before `next` moves past them (the invariant).
        unsafe {
            copy_short(bytes, self.next);
            self.next = self.next.add(n);
        }
        self.left -= n;
        Ok(())
    }

    /// Writes the first `n` bytes of `word` in big-endian order (`n <= 16`): where 16
    /// bytes of room are left, with fixed-size stores of the whole word (the bytes past `n`
    /// are then written but not kept).
    ///
    /// # Errors
    ///
    /// Less than `n` bytes of room left.
    #[inline(always)]
    pub fn put_be_prefix(&mut self, word: u128, n: usize) -> crate::Result<()> {
        let n = n.min(16);
        if self.left < 16 {
            return self.put_bytes(&word.to_be_bytes()[..n]);
        }
        // SAFETY: 16 <= left bytes from `next` lie within the vector's capacity, past its
        // length; all 16 are written, and `next` moves past `n <= 16` of them (the
        // invariant holds: those are initialized).
        unsafe {
            write_be_word(self.next, word);
            self.next = self.next.add(n);
        }
        self.left -= n;
        Ok(())
    }

    /// Writes an unsigned LEB128 varint, as [`DataOutputView::write_varint`].
    ///
    /// # Errors
    ///
    /// Less room left than the varint's bytes.
    #[inline(always)]
    pub fn put_varint(&mut self, v: u64) -> crate::Result<()> {
        if v < 0x80 {
            return self.put_u8(v as u8);
        }
        let mut bytes = [0u8; 10];
        let mut v = v;
        let mut n = 0;
        // A `u64` has at most 10 groups of 7 bits: after 9 shifts `v` is below 2.
        while v >= 0x80 && n < 9 {
            bytes[n] = (v as u8) | 0x80;
            v >>= 7;
            n += 1;
        }
        bytes[n] = v as u8;
        self.put_bytes(&bytes[..=n])
    }

    /// Writes a signed varint: zigzag, then LEB128.
    ///
    /// # Errors
    ///
    /// Less room left than the varint's bytes.
    #[inline(always)]
    pub fn put_varint_signed(&mut self, v: i64) -> crate::Result<()> {
        self.put_varint(((v << 1) ^ (v >> 63)) as u64)
    }

    /// Writes a varint length, then the bytes, as [`DataOutputView::write_len_prefixed`].
    ///
    /// # Errors
    ///
    /// Less room left than the length and the bytes.
    #[inline(always)]
    pub fn put_len_prefixed(&mut self, bytes: &[u8]) -> crate::Result<()> {
        self.put_varint(bytes.len() as u64)?;
        self.put_bytes(bytes)
    }
}

/// Stores `word` big-endian at `dst` as two 8-byte stores: a value built in registers
/// goes straight to the buffer (a 16-byte array would go through the stack as two halves
/// and be reloaded whole, which stalls store forwarding).
///
/// # Safety
///
/// `dst` must be valid for writes of 16 bytes.
#[inline(always)]
unsafe fn write_be_word(dst: *mut u8, word: u128) {
    // SAFETY: the caller guarantees 16 writable bytes at `dst`: the two unaligned
    // 8-byte stores cover exactly `dst[..16]`.
    unsafe {
        dst.cast::<[u8; 8]>()
            .write_unaligned(((word >> 64) as u64).to_be_bytes());
        dst.add(8)
            .cast::<[u8; 8]>()
            .write_unaligned((word as u64).to_be_bytes());
    }
}

/// Copies `src` to `dst`: inline for up to 16 bytes (short strings, symbols, names), where a
/// call to `memcpy` would cost more than the copy; through `memcpy` above.
///
/// # Safety
///
/// `dst` must be valid for writes of `src.len()` bytes and must not overlap `src`.
#[inline(always)]
unsafe fn copy_short(src: &[u8], dst: *mut u8) {
    let n = src.len();
    let s = src.as_ptr();
    // SAFETY (all branches): every read is within `src` (offsets `0..n`, with the
    // overlapping pairs at `0` and `n - width` for `n >= width`), every write is within
    // `dst[..n]` at the same offsets, which the caller guarantees are writable and
    // disjoint from `src`; unaligned reads and writes are used for the wider words.
    unsafe {
        if n > 16 {
            std::ptr::copy_nonoverlapping(s, dst, n);
        } else if n >= 8 {
            let a = s.cast::<u64>().read_unaligned();
            let b = s.add(n - 8).cast::<u64>().read_unaligned();
            dst.cast::<u64>().write_unaligned(a);
            dst.add(n - 8).cast::<u64>().write_unaligned(b);
        } else if n >= 4 {
            let a = s.cast::<u32>().read_unaligned();
            let b = s.add(n - 4).cast::<u32>().read_unaligned();
            dst.cast::<u32>().write_unaligned(a);
            dst.add(n - 4).cast::<u32>().write_unaligned(b);
        } else if n > 0 {
            // 1 to 3 bytes: first, middle and last (some of them the same byte).
            dst.write(*s);
            dst.add(n / 2).write(*s.add(n / 2));
            dst.add(n - 1).write(*s.add(n - 1));
        }
    }
}

impl AsRef<[u8]> for DataOutputView {
    fn as_ref(&self) -> &[u8] {
        &self.buf
    }
}

impl From<DataOutputView> for Vec<u8> {
    fn from(view: DataOutputView) -> Vec<u8> {
        view.buf
    }
}
