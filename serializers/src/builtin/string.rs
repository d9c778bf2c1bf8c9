//! `String` and `bytes::Bytes`.
//!
//! A string is a varint byte length, then its UTF-8 bytes. `Bytes` shares the layout (and
//! the snapshot) of `Vec<u8>`: a varint length, then the bytes.

use std::cmp::Ordering;

use crate::comparator::TypeComparator;
use crate::error::{Error, Result};
use crate::input::DataInputView;
use crate::output::DataOutputView;
use crate::serializer::TypeSerializer;
use crate::snapshot::{kinds, SerializerSnapshot};

#[inline(always)]
fn read_str<'a>(input: &mut DataInputView<'a>) -> Result<&'a str> {
    let bytes = input.read_len_prefixed()?;
    std::str::from_utf8(bytes).map_err(|_| Error::InvalidUtf8)
}

/// Serializes `String` as a varint length and UTF-8 bytes; invalid UTF-8 is refused.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct StringSerializer;

impl TypeSerializer<String> for StringSerializer {
    #[inline(always)]
    fn serialize(&self, value: &String, out: &mut DataOutputView) -> Result<()> {
        out.write_len_prefixed(value.as_bytes());
        Ok(())
    }
    #[inline(always)]
    fn deserialize(&self, input: &mut DataInputView<'_>) -> Result<String> {
        read_str(input).map(str::to_owned)
    }
    #[inline]
    fn deserialize_into(&self, reuse: &mut String, input: &mut DataInputView<'_>) -> Result<()> {
        let s = read_str(input)?;
        reuse.clear();
        reuse.push_str(s);
        Ok(())
    }
    fn copy(&self, value: &String) -> String {
        value.clone()
    }
    #[inline]
    fn skip(&self, input: &mut DataInputView<'_>) -> Result<()> {
        input.read_len_prefixed().map(|_| ())
    }
    #[inline]
    fn copy_serialized(
        &self,
        input: &mut DataInputView<'_>,
        out: &mut DataOutputView,
    ) -> Result<()> {
        out.write_len_prefixed(input.read_len_prefixed()?);
        Ok(())
    }
    fn snapshot(&self) -> SerializerSnapshot {
        SerializerSnapshot::new(kinds::STRING, 1)
    }
}

/// Orders strings by their UTF-8 bytes (the order of `String`'s `Ord`).
///
/// The normalized key is every byte plus one (UTF-8 never contains `0xFF`), then a `0x00`
/// terminator: prefix-free and byte-comparable.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct StringComparator;

impl TypeComparator<String> for StringComparator {
    #[inline]
    fn compare(&self, a: &String, b: &String) -> Ordering {
        a.cmp(b)
    }
    #[inline]
    fn compare_serialized(
        &self,
        a: &mut DataInputView<'_>,
        b: &mut DataInputView<'_>,
    ) -> Result<Ordering> {
        Ok(read_str(a)?.cmp(read_str(b)?))
    }
    fn write_normalized_key(&self, value: &String, out: &mut Vec<u8>) {
        out.reserve(value.len() + 1);
        out.extend(value.bytes().map(|b| b + 1));
        out.push(0);
    }
    fn normalized_key_len(&self) -> Option<usize> {
        None
    }
}

/// Serializes `bytes::Bytes` as a varint length and the bytes (the layout of `Vec<u8>`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct BytesSerializer;

/// The snapshot of `Vec<u8>`, shared by [`BytesSerializer`].
pub(crate) fn byte_list_snapshot() -> SerializerSnapshot {
    SerializerSnapshot::new(kinds::LIST, 1).with_nested(vec![SerializerSnapshot::new(kinds::U8, 1)])
}

impl TypeSerializer<bytes::Bytes> for BytesSerializer {
    #[inline]
    fn serialize(&self, value: &bytes::Bytes, out: &mut DataOutputView) -> Result<()> {
        out.write_len_prefixed(value);
        Ok(())
    }
    #[inline]
    fn deserialize(&self, input: &mut DataInputView<'_>) -> Result<bytes::Bytes> {
        Ok(bytes::Bytes::copy_from_slice(input.read_len_prefixed()?))
    }
    fn copy(&self, value: &bytes::Bytes) -> bytes::Bytes {
        value.clone()
    }
    fn skip(&self, input: &mut DataInputView<'_>) -> Result<()> {
        input.read_len_prefixed().map(|_| ())
    }
    fn copy_serialized(
        &self,
        input: &mut DataInputView<'_>,
        out: &mut DataOutputView,
    ) -> Result<()> {
        out.write_len_prefixed(input.read_len_prefixed()?);
        Ok(())
    }
    fn is_immutable(&self) -> bool {
        true
    }
    fn snapshot(&self) -> SerializerSnapshot {
        byte_list_snapshot()
    }
}

/// Orders `bytes::Bytes` lexicographically.
///
/// The normalized key escapes `0x00` as `0x00 0xFF` and ends with `0x00 0x00`:
/// prefix-free and byte-comparable.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct BytesComparator;

impl TypeComparator<bytes::Bytes> for BytesComparator {
    fn compare(&self, a: &bytes::Bytes, b: &bytes::Bytes) -> Ordering {
        a.cmp(b)
    }
    fn compare_serialized(
        &self,
        a: &mut DataInputView<'_>,
        b: &mut DataInputView<'_>,
    ) -> Result<Ordering> {
        Ok(a.read_len_prefixed()?.cmp(b.read_len_prefixed()?))
    }
    fn write_normalized_key(&self, value: &bytes::Bytes, out: &mut Vec<u8>) {
        for &b in value.iter() {
            out.push(b);
            if b == 0 {
                out.push(0xff);
            }
        }
        out.extend_from_slice(&[0, 0]);
    }
    fn normalized_key_len(&self) -> Option<usize> {
        None
    }
}
