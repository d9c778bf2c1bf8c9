//! Java's `DataInput`/`DataOutput` conventions, which every Flink layout is built from:
//! big-endian numbers, `int` lengths, `boolean` bytes and `writeUTF`'s modified UTF-8.
//!
//! Every read is bounded by the bytes left: a length can never promise more elements than
//! the remaining bytes hold (each element takes at least `min_element` bytes), so a corrupt
//! or huge length is an error before anything is allocated.

use typeinfo::{DataInputView, DataOutputView, Error, Result};

macro_rules! be_numbers {
    ($($read:ident, $write:ident: $ty:ty;)*) => {$(
        #[doc = concat!("Reads a big-endian `", stringify!($ty), "`.")]
        #[inline]
        pub(crate) fn $read(input: &mut DataInputView<'_>) -> Result<$ty> {
            Ok(<$ty>::from_be_bytes(input.read_array()?))
        }

        #[doc = concat!("Writes a big-endian `", stringify!($ty), "`.")]
        #[inline]
        pub(crate) fn $write(out: &mut DataOutputView, v: $ty) {
            out.write_bytes(&v.to_be_bytes());
        }
    )*};
}

be_numbers! {
    read_i16, write_i16: i16;
    read_u16, write_u16: u16;
    read_i32, write_i32: i32;
    read_i64, write_i64: i64;
    read_f32, write_f32: f32;
    read_f64, write_f64: f64;
}

/// Reads Java's `readBoolean`: Flink writes 0 or 1; any other byte is refused (Java would
/// read it as `true`, but no Flink serializer writes it, so it means the bytes are corrupt).
pub(crate) fn read_bool(input: &mut DataInputView<'_>) -> Result<bool> {
    match input.read_u8()? {
        0 => Ok(false),
        1 => Ok(true),
        b => Err(Error::InvalidBool(b)),
    }
}

/// Writes Java's `writeBoolean`.
pub(crate) fn write_bool(out: &mut DataOutputView, v: bool) {
    out.write_u8(u8::from(v));
}

/// Reads an `int` length of elements that take at least `min_element` bytes each.
///
/// # Errors
///
/// A negative length ([`Error::OutOfRange`]) or one the remaining bytes cannot hold
/// ([`Error::LengthTooLarge`]).
pub(crate) fn read_len(input: &mut DataInputView<'_>, min_element: usize) -> Result<usize> {
    let len = read_i32(input)?;
    let Ok(n) = usize::try_from(len) else {
        return Err(Error::OutOfRange {
            what: "length".to_owned(),
            detail: format!("{len} is negative"),
        });
    };
    match n.checked_mul(min_element.max(1)) {
        Some(bytes) if bytes <= input.remaining() => Ok(n),
        _ => Err(Error::LengthTooLarge {
            len: n as u64,
            remaining: input.remaining(),
        }),
    }
}

/// Writes an `int` length.
///
/// # Errors
///
/// A length past `i32::MAX`, which Java cannot hold.
pub(crate) fn write_len(out: &mut DataOutputView, len: usize) -> Result<()> {
    let n = i32::try_from(len).map_err(|_| Error::OutOfRange {
        what: "length".to_owned(),
        detail: format!("{len} elements do not fit a Java int"),
    })?;
    write_i32(out, n);
    Ok(())
}

/// Reads `DataInput.readUTF`: a `u16` byte length, then modified UTF-8 (a NUL is `C0 80`,
/// a supplementary character two 3-byte surrogates).
pub(crate) fn read_utf(input: &mut DataInputView<'_>) -> Result<String> {
    let len = usize::from(read_u16(input)?);
    let bytes = input.read_bytes(len)?;
    let mut units = Vec::with_capacity(len);
    let mut i = 0;
    while i < bytes.len() {
        let b = u32::from(bytes[i]);
        let (unit, width) = match b {
            0x00..=0x7f => (b, 1),
            0xc0..=0xdf => (((b & 0x1f) << 6) | continuation(bytes, i + 1)?, 2),
            0xe0..=0xef => (
                ((b & 0x0f) << 12)
                    | (continuation(bytes, i + 1)? << 6)
                    | continuation(bytes, i + 2)?,
                3,
            ),
            _ => return Err(Error::InvalidUtf8),
        };
        units.push(unit as u16);
        i += width;
    }
    String::from_utf16(&units).map_err(|_| Error::InvalidUtf8)
}

fn continuation(bytes: &[u8], at: usize) -> Result<u32> {
    match bytes.get(at) {
        Some(b) if b & 0xc0 == 0x80 => Ok(u32::from(b & 0x3f)),
        _ => Err(Error::InvalidUtf8),
    }
}

/// Writes `DataOutput.writeUTF` (the tests' counterpart of [`read_utf`]).
///
/// # Errors
///
/// More than 65535 encoded bytes (Java's limit too).
#[cfg(test)]
pub(crate) fn write_utf(out: &mut DataOutputView, s: &str) -> Result<()> {
    let mut bytes = Vec::with_capacity(s.len());
    for unit in s.encode_utf16() {
        match unit {
            1..=0x7f => bytes.push(unit as u8),
            0 | 0x80..=0x7ff => {
                bytes.push(0xc0 | (unit >> 6) as u8);
                bytes.push(0x80 | (unit & 0x3f) as u8);
            }
            _ => {
                bytes.push(0xe0 | (unit >> 12) as u8);
                bytes.push(0x80 | ((unit >> 6) & 0x3f) as u8);
                bytes.push(0x80 | (unit & 0x3f) as u8);
            }
        }
    }
    let len = u16::try_from(bytes.len()).map_err(|_| Error::OutOfRange {
        what: "writeUTF string".to_owned(),
        detail: format!("{} encoded bytes exceed 65535", bytes.len()),
    })?;
    write_u16(out, len);
    out.write_bytes(&bytes);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_utf_matches_java_and_reads_back() -> Result<()> {
        // Java's writeUTF("a\0é😀"): NUL as C0 80, the emoji as two 3-byte surrogates.
        let mut out = DataOutputView::new();
        write_utf(&mut out, "a\0é😀")?;
        let java = [
            0, 11, b'a', 0xc0, 0x80, 0xc3, 0xa9, 0xed, 0xa0, 0xbd, 0xed, 0xb8, 0x80,
        ];
        assert_eq!(out.as_slice(), &java);
        assert_eq!(read_utf(&mut DataInputView::new(&java))?, "a\0é😀");
        Ok(())
    }

    #[test]
    fn read_utf_refuses_bad_bytes_and_lengths() {
        for bad in [
            &[0, 2, 0xc3][..],
            &[0, 1, 0xff],
            &[0, 2, 0xc3, 0x41],
            &[0, 3, 0xed, 0xa0, 0xbd],
        ] {
            assert!(read_utf(&mut DataInputView::new(bad)).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn lengths_are_bounded_by_the_bytes_left() {
        let negative = [0xff, 0xff, 0xff, 0xff];
        assert!(matches!(
            read_len(&mut DataInputView::new(&negative), 1),
            Err(Error::OutOfRange { .. })
        ));
        let huge = [0x7f, 0xff, 0xff, 0xff, 0];
        assert!(matches!(
            read_len(&mut DataInputView::new(&huge), 1),
            Err(Error::LengthTooLarge { .. })
        ));
        let fits = [0, 0, 0, 2, 0, 0];
        assert_eq!(read_len(&mut DataInputView::new(&fits), 1), Ok(2));
        assert!(read_len(&mut DataInputView::new(&fits), 2).is_err());
    }
}
