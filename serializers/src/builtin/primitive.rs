//! `bool`, `char`, `()`, every integer up to 128 bits, `f32` and `f64`.
//!
//! Numbers are written little-endian at full width; a `Vec` of numbers is one `memcpy`.
//! Integers widen (`i8 -> i16 -> i32 -> i64 -> i128`, the same for unsigned, and an
//! unsigned type into any wider signed one) and `f32` widens to `f64`: resolving such a
//! change gives "compatible after migration".

use std::cmp::Ordering;

use super::pod;
use crate::comparator::TypeComparator;
use crate::compatibility::{Incompatibility, MigrationReader};
use crate::error::{Error, Result};
use crate::input::DataInputView;
use crate::output::DataOutputView;
use crate::serializer::Compatibility;
use crate::serializer::SnapshotRegistry;
use crate::serializer::{short_slot, TypeSerializer};
use crate::snapshot::{kinds, SerializerSnapshot};

/// A reader that widens an old primitive layout into today's type.
type Widen<T> = fn(&mut DataInputView<'_>) -> Result<T>;

/// Resolves a primitive: the same kind is compatible as is, a listed narrower kind is
/// migrated by widening, anything else is incompatible.
fn resolve_primitive<T: 'static>(
    new: SerializerSnapshot,
    old: &SerializerSnapshot,
    widenings: &[(&str, Widen<T>)],
) -> Compatibility<T> {
    if old.kind() == new.kind() && old.version() == new.version() {
        return Compatibility::AsIs;
    }
    if old.version() == 1 {
        if let Some((_, widen)) = widenings.iter().find(|(kind, _)| *kind == old.kind()) {
            let widen = *widen;
            return Compatibility::AfterMigration(MigrationReader::new(widen));
        }
    }
    Compatibility::Incompatible(Incompatibility::between(old, &new))
}

macro_rules! numeric {
    (
        $(#[$doc:meta])*
        $ser:ident, $cmp:ident, $ty:ty, $kind:expr, $write:ident, $read:ident,
        key: |$kv:ident| $key:expr,
        compare: |$ca:ident, $cb:ident| $compare:expr,
        widen: [$($from_kind:expr => |$wi:ident| $widen:expr),* $(,)?]
    ) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
        pub struct $ser;

        impl TypeSerializer<$ty> for $ser {
            #[inline(always)]
            fn serialize(&self, value: &$ty, out: &mut DataOutputView) -> Result<()> {
                out.$write(*value);
                Ok(())
            }
            #[inline(always)]
            fn deserialize(&self, input: &mut DataInputView<'_>) -> Result<$ty> {
                input.$read()
            }
            #[inline(always)]
            fn copy(&self, value: &$ty) -> $ty {
                *value
            }
            #[inline(always)]
            fn skip(&self, input: &mut DataInputView<'_>) -> Result<()> {
                input.skip_bytes(std::mem::size_of::<$ty>())
            }
            #[inline(always)]
            fn copy_serialized(&self, input: &mut DataInputView<'_>, out: &mut DataOutputView) -> Result<()> {
                out.write_bytes(input.read_bytes(std::mem::size_of::<$ty>())?);
                Ok(())
            }
            fn fixed_length(&self) -> Option<usize> {
                Some(std::mem::size_of::<$ty>())
            }
            fn is_immutable(&self) -> bool {
                true
            }
            fn snapshot(&self) -> SerializerSnapshot {
                SerializerSnapshot::new($kind, 1)
            }
            fn resolve(&self, old: &SerializerSnapshot, _: &SnapshotRegistry) -> Compatibility<$ty> {
                resolve_primitive(self.snapshot(), old, &[
                    $(($from_kind, |$wi: &mut DataInputView<'_>| -> Result<$ty> { Ok($widen) })),*
                ])
            }
            #[inline]
            fn serialize_slice(&self, values: &[$ty], out: &mut DataOutputView) -> Result<()> {
                pod::write_slice(values, out);
                Ok(())
            }
            #[inline]
            fn deserialize_append(&self, len: usize, input: &mut DataInputView<'_>, out: &mut Vec<$ty>) -> Result<()> {
                pod::read_append(len, input, out)
            }
            fn min_length(&self) -> usize {
                std::mem::size_of::<$ty>()
            }
            #[inline(always)]
            fn writes_fixed(&self) -> bool {
                true
            }
            #[inline(always)]
            fn write_fixed(&self, value: &$ty, dst: &mut [u8]) -> Result<()> {
                match dst.first_chunk_mut::<{ std::mem::size_of::<$ty>() }>() {
                    Some(d) => {
                        *d = value.to_le_bytes();
                        Ok(())
                    }
                    None => Err(short_slot()),
                }
            }
            #[inline(always)]
            fn write_fixed_slice(&self, values: &[$ty], dst: &mut [u8]) -> Result<()> {
                pod::write_slice_into(values, dst)
            }
        }

        #[doc = concat!("Orders `", stringify!($ty), "` values; normalized keys are ", stringify!($kind), " in a byte-comparable big-endian form.")]
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
        pub struct $cmp;

        impl TypeComparator<$ty> for $cmp {
            #[inline]
            fn compare(&self, $ca: &$ty, $cb: &$ty) -> Ordering {
                $compare
            }
            #[inline]
            fn compare_serialized(&self, a: &mut DataInputView<'_>, b: &mut DataInputView<'_>) -> Result<Ordering> {
                let ($ca, $cb) = (&a.$read()?, &b.$read()?);
                Ok($compare)
            }
            #[inline]
            fn write_normalized_key(&self, value: &$ty, out: &mut Vec<u8>) {
                let $kv = *value;
                out.extend_from_slice(&$key);
            }
            fn normalized_key_len(&self) -> Option<usize> {
                Some(std::mem::size_of::<$ty>())
            }
        }
    };
}

numeric!(/// Serializes `u8` as one byte.
    U8Serializer, U8Comparator, u8, kinds::U8, write_u8, read_u8,
    key: |v| v.to_be_bytes(), compare: |a, b| a.cmp(b), widen: []);
numeric!(/// Serializes `u16` as 2 bytes, little-endian.
    U16Serializer, U16Comparator, u16, kinds::U16, write_u16, read_u16,
    key: |v| v.to_be_bytes(), compare: |a, b| a.cmp(b),
    widen: [kinds::U8 => |i| i.read_u8()? as u16]);
numeric!(/// Serializes `u32` as 4 bytes, little-endian.
    U32Serializer, U32Comparator, u32, kinds::U32, write_u32, read_u32,
    key: |v| v.to_be_bytes(), compare: |a, b| a.cmp(b),
    widen: [kinds::U8 => |i| i.read_u8()? as u32, kinds::U16 => |i| i.read_u16()? as u32]);
numeric!(/// Serializes `u64` as 8 bytes, little-endian.
    U64Serializer, U64Comparator, u64, kinds::U64, write_u64, read_u64,
    key: |v| v.to_be_bytes(), compare: |a, b| a.cmp(b),
    widen: [kinds::U8 => |i| i.read_u8()? as u64, kinds::U16 => |i| i.read_u16()? as u64,
            kinds::U32 => |i| i.read_u32()? as u64]);
numeric!(/// Serializes `u128` as 16 bytes, little-endian.
    U128Serializer, U128Comparator, u128, kinds::U128, write_u128, read_u128,
    key: |v| v.to_be_bytes(), compare: |a, b| a.cmp(b),
    widen: [kinds::U8 => |i| i.read_u8()? as u128, kinds::U16 => |i| i.read_u16()? as u128,
            kinds::U32 => |i| i.read_u32()? as u128, kinds::U64 => |i| i.read_u64()? as u128]);
numeric!(/// Serializes `i8` as one byte.
    I8Serializer, I8Comparator, i8, kinds::I8, write_i8, read_i8,
    key: |v| ((v as u8) ^ 0x80).to_be_bytes(), compare: |a, b| a.cmp(b), widen: []);
numeric!(/// Serializes `i16` as 2 bytes, little-endian two's complement.
    I16Serializer, I16Comparator, i16, kinds::I16, write_i16, read_i16,
    key: |v| ((v as u16) ^ (1 << 15)).to_be_bytes(), compare: |a, b| a.cmp(b),
    widen: [kinds::I8 => |i| i.read_i8()? as i16, kinds::U8 => |i| i.read_u8()? as i16]);
numeric!(/// Serializes `i32` as 4 bytes, little-endian two's complement.
    I32Serializer, I32Comparator, i32, kinds::I32, write_i32, read_i32,
    key: |v| ((v as u32) ^ (1 << 31)).to_be_bytes(), compare: |a, b| a.cmp(b),
    widen: [kinds::I8 => |i| i.read_i8()? as i32, kinds::I16 => |i| i.read_i16()? as i32,
            kinds::U8 => |i| i.read_u8()? as i32, kinds::U16 => |i| i.read_u16()? as i32]);
numeric!(/// Serializes `i64` as 8 bytes, little-endian two's complement.
    I64Serializer, I64Comparator, i64, kinds::I64, write_i64, read_i64,
    key: |v| ((v as u64) ^ (1 << 63)).to_be_bytes(), compare: |a, b| a.cmp(b),
    widen: [kinds::I8 => |i| i.read_i8()? as i64, kinds::I16 => |i| i.read_i16()? as i64,
            kinds::I32 => |i| i.read_i32()? as i64, kinds::U8 => |i| i.read_u8()? as i64,
            kinds::U16 => |i| i.read_u16()? as i64, kinds::U32 => |i| i.read_u32()? as i64]);
numeric!(/// Serializes `i128` as 16 bytes, little-endian two's complement.
    I128Serializer, I128Comparator, i128, kinds::I128, write_i128, read_i128,
    key: |v| ((v as u128) ^ (1 << 127)).to_be_bytes(), compare: |a, b| a.cmp(b),
    widen: [kinds::I8 => |i| i.read_i8()? as i128, kinds::I16 => |i| i.read_i16()? as i128,
            kinds::I32 => |i| i.read_i32()? as i128, kinds::I64 => |i| i.read_i64()? as i128,
            kinds::U8 => |i| i.read_u8()? as i128, kinds::U16 => |i| i.read_u16()? as i128,
            kinds::U32 => |i| i.read_u32()? as i128, kinds::U64 => |i| i.read_u64()? as i128]);
numeric!(/// Serializes `f32` as its IEEE 754 bits, 4 bytes little-endian (NaN payloads kept).
    F32Serializer, F32Comparator, f32, kinds::F32, write_f32, read_f32,
    key: |v| {
        let bits = v.to_bits();
        (if bits >> 31 == 1 { !bits } else { bits | (1 << 31) }).to_be_bytes()
    },
    compare: |a, b| a.total_cmp(b), widen: []);
numeric!(/// Serializes `f64` as its IEEE 754 bits, 8 bytes little-endian (NaN payloads kept).
    F64Serializer, F64Comparator, f64, kinds::F64, write_f64, read_f64,
    key: |v| {
        let bits = v.to_bits();
        (if bits >> 63 == 1 { !bits } else { bits | (1 << 63) }).to_be_bytes()
    },
    compare: |a, b| a.total_cmp(b),
    widen: [kinds::F32 => |i| i.read_f32()? as f64]);

/// Serializes `bool` as one byte, 0 or 1; any other byte is refused.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct BoolSerializer;

impl TypeSerializer<bool> for BoolSerializer {
    #[inline(always)]
    fn serialize(&self, value: &bool, out: &mut DataOutputView) -> Result<()> {
        out.write_bool(*value);
        Ok(())
    }
    #[inline(always)]
    fn deserialize(&self, input: &mut DataInputView<'_>) -> Result<bool> {
        input.read_bool()
    }
    fn copy(&self, value: &bool) -> bool {
        *value
    }
    fn skip(&self, input: &mut DataInputView<'_>) -> Result<()> {
        input.read_bool().map(|_| ())
    }
    fn fixed_length(&self) -> Option<usize> {
        Some(1)
    }
    fn is_immutable(&self) -> bool {
        true
    }
    fn snapshot(&self) -> SerializerSnapshot {
        SerializerSnapshot::new(kinds::BOOL, 1)
    }
    #[inline(always)]
    fn writes_fixed(&self) -> bool {
        true
    }
    #[inline(always)]
    fn write_fixed(&self, value: &bool, dst: &mut [u8]) -> Result<()> {
        match dst.first_mut() {
            Some(d) => {
                *d = u8::from(*value);
                Ok(())
            }
            None => Err(short_slot()),
        }
    }
}

/// Orders `bool` (`false < true`); the normalized key is one byte.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct BoolComparator;

impl TypeComparator<bool> for BoolComparator {
    fn compare(&self, a: &bool, b: &bool) -> Ordering {
        a.cmp(b)
    }
    fn compare_serialized(
        &self,
        a: &mut DataInputView<'_>,
        b: &mut DataInputView<'_>,
    ) -> Result<Ordering> {
        Ok(a.read_bool()?.cmp(&b.read_bool()?))
    }
    fn write_normalized_key(&self, value: &bool, out: &mut Vec<u8>) {
        out.push(*value as u8);
    }
    fn normalized_key_len(&self) -> Option<usize> {
        Some(1)
    }
}

/// Serializes `char` as its scalar value, 4 bytes little-endian; surrogates and values
/// past `0x10FFFF` are refused.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct CharSerializer;

#[inline(always)]
fn read_char(input: &mut DataInputView<'_>) -> Result<char> {
    let v = input.read_u32()?;
    char::from_u32(v).ok_or(Error::InvalidChar(v))
}

impl TypeSerializer<char> for CharSerializer {
    #[inline(always)]
    fn serialize(&self, value: &char, out: &mut DataOutputView) -> Result<()> {
        out.write_u32(*value as u32);
        Ok(())
    }
    #[inline(always)]
    fn deserialize(&self, input: &mut DataInputView<'_>) -> Result<char> {
        read_char(input)
    }
    fn copy(&self, value: &char) -> char {
        *value
    }
    fn skip(&self, input: &mut DataInputView<'_>) -> Result<()> {
        read_char(input).map(|_| ())
    }
    fn fixed_length(&self) -> Option<usize> {
        Some(4)
    }
    fn is_immutable(&self) -> bool {
        true
    }
    fn snapshot(&self) -> SerializerSnapshot {
        SerializerSnapshot::new(kinds::CHAR, 1)
    }
    #[inline(always)]
    fn writes_fixed(&self) -> bool {
        true
    }
    #[inline(always)]
    fn write_fixed(&self, value: &char, dst: &mut [u8]) -> Result<()> {
        match dst.first_chunk_mut::<4>() {
            Some(d) => {
                *d = (*value as u32).to_le_bytes();
                Ok(())
            }
            None => Err(short_slot()),
        }
    }
}

/// Orders `char` by scalar value; the normalized key is 4 bytes big-endian.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct CharComparator;

impl TypeComparator<char> for CharComparator {
    fn compare(&self, a: &char, b: &char) -> Ordering {
        a.cmp(b)
    }
    fn compare_serialized(
        &self,
        a: &mut DataInputView<'_>,
        b: &mut DataInputView<'_>,
    ) -> Result<Ordering> {
        Ok(read_char(a)?.cmp(&read_char(b)?))
    }
    fn write_normalized_key(&self, value: &char, out: &mut Vec<u8>) {
        out.extend_from_slice(&(*value as u32).to_be_bytes());
    }
    fn normalized_key_len(&self) -> Option<usize> {
        Some(4)
    }
}

/// Serializes `()` as no bytes at all.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct UnitSerializer;

impl TypeSerializer<()> for UnitSerializer {
    fn serialize(&self, _: &(), _: &mut DataOutputView) -> Result<()> {
        Ok(())
    }
    fn deserialize(&self, _: &mut DataInputView<'_>) -> Result<()> {
        Ok(())
    }
    fn copy(&self, _: &()) {}
    fn skip(&self, _: &mut DataInputView<'_>) -> Result<()> {
        Ok(())
    }
    fn fixed_length(&self) -> Option<usize> {
        Some(0)
    }
    fn is_immutable(&self) -> bool {
        true
    }
    fn snapshot(&self) -> SerializerSnapshot {
        SerializerSnapshot::new(kinds::UNIT, 1)
    }
    fn min_length(&self) -> usize {
        0
    }
    #[inline(always)]
    fn writes_fixed(&self) -> bool {
        true
    }
    #[inline(always)]
    fn write_fixed(&self, _: &(), _: &mut [u8]) -> Result<()> {
        Ok(())
    }
}

/// Orders `()`: all values are equal; the normalized key is empty.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct UnitComparator;

impl TypeComparator<()> for UnitComparator {
    fn compare(&self, _: &(), _: &()) -> Ordering {
        Ordering::Equal
    }
    fn compare_serialized(
        &self,
        _: &mut DataInputView<'_>,
        _: &mut DataInputView<'_>,
    ) -> Result<Ordering> {
        Ok(Ordering::Equal)
    }
    fn write_normalized_key(&self, _: &(), _: &mut Vec<u8>) {}
    fn normalized_key_len(&self) -> Option<usize> {
        Some(0)
    }
}
