//! Bulk copies for plain-old-data numbers: one `memcpy` per slice on little-endian targets.

use crate::error::Result;
use crate::input::DataInputView;
use crate::output::DataOutputView;

mod sealed {
    pub trait Sealed {}
}

/// Numbers whose in-memory form on a little-endian target is their serialized form: no
/// padding, no invalid bit patterns.
pub trait Pod: Copy + sealed::Sealed + 'static {
    /// Size in bytes.
    const SIZE: usize;
    /// Converts from the serialized (little-endian) bytes.
    fn from_le_slice(bytes: &[u8]) -> Self;
    /// Appends the serialized (little-endian) bytes.
    fn write_le(self, out: &mut DataOutputView);
}

macro_rules! pod {
    ($($ty:ty),*) => {$(
        impl sealed::Sealed for $ty {}
        impl Pod for $ty {
            const SIZE: usize = std::mem::size_of::<$ty>();
            #[inline(always)]
            fn from_le_slice(bytes: &[u8]) -> Self {
                let mut a = [0u8; std::mem::size_of::<$ty>()];
                a.copy_from_slice(bytes);
                <$ty>::from_le_bytes(a)
            }
            #[inline(always)]
            fn write_le(self, out: &mut DataOutputView) {
                out.write_bytes(&self.to_le_bytes());
            }
        }
    )*};
}
pod!(u8, u16, u32, u64, u128, i8, i16, i32, i64, i128, f32, f64);

/// Writes `values` back to back in their serialized form.
#[inline]
pub fn write_slice<T: Pod>(values: &[T], out: &mut DataOutputView) {
    #[cfg(target_endian = "little")]
    {
        // SAFETY: `T: Pod` is one of the primitive numbers: it has no padding bytes and its
        // little-endian in-memory form is its serialized form. The byte slice covers exactly
        // the memory of `values` and lives no longer than the borrow of `values`.
        let bytes = unsafe {
            std::slice::from_raw_parts(values.as_ptr().cast::<u8>(), std::mem::size_of_val(values))
        };
        out.write_bytes(bytes);
    }
    #[cfg(not(target_endian = "little"))]
    {
        out.reserve(values.len() * T::SIZE);
        for v in values {
            v.write_le(out);
        }
    }
}

/// Writes `values` back to back into the start of `dst`, in their serialized form.
///
/// # Errors
///
/// `dst` shorter than the values.
#[inline(always)]
pub fn write_slice_into<T: Pod>(values: &[T], dst: &mut [u8]) -> Result<()> {
    let total = std::mem::size_of_val(values);
    let Some(dst) = dst.get_mut(..total) else {
        return Err(crate::serializer::short_slot());
    };
    #[cfg(target_endian = "little")]
    {
        // SAFETY: as in `write_slice`: `T: Pod` has no padding and its little-endian
        // in-memory form is its serialized form; the byte slice covers exactly the memory
        // of `values` for the duration of the borrow.
        let bytes = unsafe { std::slice::from_raw_parts(values.as_ptr().cast::<u8>(), total) };
        dst.copy_from_slice(bytes);
    }
    #[cfg(not(target_endian = "little"))]
    {
        let mut out = DataOutputView::with_capacity(total);
        for v in values {
            v.write_le(&mut out);
        }
        dst.copy_from_slice(out.as_slice());
    }
    Ok(())
}

/// Reads `len` values written by [`write_slice`] and appends them to `out`.
///
/// # Errors
///
/// Fewer than `len * T::SIZE` bytes left.
#[inline]
pub fn read_append<T: Pod>(
    len: usize,
    input: &mut DataInputView<'_>,
    out: &mut Vec<T>,
) -> Result<()> {
    let total = len
        .checked_mul(T::SIZE)
        .ok_or(crate::Error::LengthTooLarge {
            len: len as u64,
            remaining: input.remaining(),
        })?;
    let bytes = input.read_bytes(total)?;
    #[cfg(target_endian = "little")]
    {
        out.reserve(len);
        // SAFETY: `reserve` made room for `len` more elements after `out.len()`. We copy
        // exactly `len * size_of::<T>()` initialized bytes into that spare capacity; every bit
        // pattern is a valid `T` (`T: Pod` is a primitive number), and the source (`input`'s
        // slice) cannot overlap the freshly reserved destination. Then the length covers
        // only initialized elements.
        unsafe {
            let dst = out.as_mut_ptr().add(out.len()).cast::<u8>();
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), dst, total);
            out.set_len(out.len() + len);
        }
    }
    #[cfg(not(target_endian = "little"))]
    {
        out.extend(bytes.chunks_exact(T::SIZE).map(T::from_le_slice));
    }
    Ok(())
}
