//! Flink's `StringSerializer` (Java's `String`) and `StringArraySerializer` (`String[]`),
//! both in `StringValue`'s encoding.
//!
//! `StringValue.writeString`: the length in UTF-16 units plus one (0 is null) as a varint of
//! 7-bit groups, low group first, high bit set on every byte but the last; then each UTF-16
//! unit in the same varint form (one byte below 0x80, two below 0x4000, else three). A
//! character outside the Basic Multilingual Plane is two units (a surrogate pair), each
//! written on its own.
//!
//! Reads accept what Flink's reader accepts, but refuse what a Rust `String` cannot hold
//! (a lone surrogate: Java strings may hold one) and what no Flink writer produces (a unit
//! past `0xFFFF`, a length past `i32::MAX`).

use typeinfo::{DataInputView, DataOutputView, Error, Result, SerializerSnapshot, TypeSerializer};

use crate::java_io;
use crate::snapshot;

/// Java's `String`: `StringValue`'s encoding. Serializes `String` (a null in Flink's bytes
/// is an error) and `Option<String>` (null is `None`).
///
/// # Examples
///
/// ```
/// use typeinfo::{to_bytes, from_bytes};
/// use typeinfo_flink_compat::StringSerializer;
///
/// # fn main() -> typeinfo::Result<()> {
/// let bytes = to_bytes(&StringSerializer, &"u1".to_owned())?;
/// assert_eq!(bytes, [3, b'u', b'1']);
/// assert_eq!(from_bytes::<Option<String>, _>(&StringSerializer, &[0])?, None);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StringSerializer;

/// Reads a `StringValue` varint of at most `max_bytes` bytes.
fn read_varint(input: &mut DataInputView<'_>, max_bytes: u32, what: &str) -> Result<u32> {
    let mut value = 0u32;
    for i in 0..max_bytes {
        let b = input.read_u8()?;
        value |= u32::from(b & 0x7f) << (7 * i);
        if b < 0x80 {
            return Ok(value);
        }
    }
    Err(Error::OutOfRange {
        what: what.to_owned(),
        detail: format!("varint longer than {max_bytes} bytes"),
    })
}

fn write_varint(out: &mut DataOutputView, mut v: u32) {
    while v >= 0x80 {
        out.write_u8((v as u8) | 0x80);
        v >>= 7;
    }
    out.write_u8(v as u8);
}

/// Reads the length prefix: `None` for null, else the number of UTF-16 units, checked
/// against the bytes left (every unit takes at least one byte).
fn read_header(input: &mut DataInputView<'_>) -> Result<Option<usize>> {
    let len = read_varint(input, 5, "string length")?;
    if len == 0 {
        return Ok(None);
    }
    let units = (len - 1) as usize;
    if len > i32::MAX as u32 || units > input.remaining() {
        return Err(Error::LengthTooLarge {
            len: u64::from(len - 1),
            remaining: input.remaining(),
        });
    }
    Ok(Some(units))
}

/// Reads a nullable string.
pub(crate) fn read_string(input: &mut DataInputView<'_>) -> Result<Option<String>> {
    let Some(units) = read_header(input)? else {
        return Ok(None);
    };
    let mut buf = Vec::with_capacity(units);
    for _ in 0..units {
        let unit = read_varint(input, 3, "string character")?;
        let unit = u16::try_from(unit).map_err(|_| Error::OutOfRange {
            what: "string character".to_owned(),
            detail: format!("{unit:#x} is not a UTF-16 unit"),
        })?;
        buf.push(unit);
    }
    String::from_utf16(&buf)
        .map(Some)
        .map_err(|_| Error::OutOfRange {
            what: "string".to_owned(),
            detail: "a lone UTF-16 surrogate, which a Rust String cannot hold".to_owned(),
        })
}

/// Skips a nullable string.
pub(crate) fn skip_string(input: &mut DataInputView<'_>) -> Result<()> {
    let Some(units) = read_header(input)? else {
        return Ok(());
    };
    for _ in 0..units {
        read_varint(input, 3, "string character")?;
    }
    Ok(())
}

/// Writes a nullable string.
pub(crate) fn write_string(out: &mut DataOutputView, s: Option<&str>) -> Result<()> {
    let Some(s) = s else {
        out.write_u8(0);
        return Ok(());
    };
    let units = s.encode_utf16().count();
    let len = u32::try_from(units)
        .ok()
        .filter(|n| *n < i32::MAX as u32)
        .ok_or_else(|| Error::OutOfRange {
            what: "string".to_owned(),
            detail: format!("{units} UTF-16 units do not fit a Java string"),
        })?;
    out.reserve(units + 5);
    write_varint(out, len + 1);
    for unit in s.encode_utf16() {
        write_varint(out, u32::from(unit));
    }
    Ok(())
}

/// The error of a null where the Rust type has no `Option`.
pub(crate) fn null_error(what: &str) -> Error {
    Error::OutOfRange {
        what: what.to_owned(),
        detail: "null in Flink's bytes, and the Rust type is not an Option".to_owned(),
    }
}

impl TypeSerializer<String> for StringSerializer {
    fn serialize(&self, value: &String, out: &mut DataOutputView) -> Result<()> {
        write_string(out, Some(value))
    }
    fn deserialize(&self, input: &mut DataInputView<'_>) -> Result<String> {
        read_string(input)?.ok_or_else(|| null_error("String"))
    }
    fn copy(&self, value: &String) -> String {
        value.clone()
    }
    fn skip(&self, input: &mut DataInputView<'_>) -> Result<()> {
        skip_string(input)
    }
    fn is_immutable(&self) -> bool {
        true
    }
    fn snapshot(&self) -> SerializerSnapshot {
        snapshot::of("StringSerializer", Vec::new())
    }
}

impl TypeSerializer<Option<String>> for StringSerializer {
    fn serialize(&self, value: &Option<String>, out: &mut DataOutputView) -> Result<()> {
        write_string(out, value.as_deref())
    }
    fn deserialize(&self, input: &mut DataInputView<'_>) -> Result<Option<String>> {
        read_string(input)
    }
    fn copy(&self, value: &Option<String>) -> Option<String> {
        value.clone()
    }
    fn skip(&self, input: &mut DataInputView<'_>) -> Result<()> {
        skip_string(input)
    }
    fn is_immutable(&self) -> bool {
        true
    }
    fn snapshot(&self) -> SerializerSnapshot {
        snapshot::of("StringSerializer", Vec::new())
    }
}

/// Java's `String[]` (`StringArraySerializer`): an `int` length, then each element in
/// `StringValue`'s encoding, null elements included.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StringArraySerializer;

impl TypeSerializer<Vec<Option<String>>> for StringArraySerializer {
    fn serialize(&self, value: &Vec<Option<String>>, out: &mut DataOutputView) -> Result<()> {
        java_io::write_len(out, value.len())?;
        for s in value {
            write_string(out, s.as_deref())?;
        }
        Ok(())
    }
    fn deserialize(&self, input: &mut DataInputView<'_>) -> Result<Vec<Option<String>>> {
        let len = java_io::read_len(input, 1)?;
        let mut out = Vec::with_capacity(typeinfo::capacity_for::<Option<String>>(len, 1));
        for _ in 0..len {
            out.push(read_string(input)?);
        }
        Ok(out)
    }
    fn copy(&self, value: &Vec<Option<String>>) -> Vec<Option<String>> {
        value.clone()
    }
    fn skip(&self, input: &mut DataInputView<'_>) -> Result<()> {
        let len = java_io::read_len(input, 1)?;
        (0..len).try_for_each(|_| skip_string(input))
    }
    fn snapshot(&self) -> SerializerSnapshot {
        snapshot::of("StringArraySerializer", Vec::new())
    }
}
