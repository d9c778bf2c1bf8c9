//! Variable-length integers for fields that hold small values: `u16`, `u32`, `u64` as
//! unsigned LEB128 and `i16`, `i32`, `i64` as zigzag LEB128.
//!
//! The default integer layout is fixed width (one `memcpy` for vectors, fixed-length
//! structs). A field whose values are usually small (counters, ids, byte counts) can opt in
//! to these with `#[typeinfo(with = "typeinfo::VarU64Serializer")]`: 1 byte below 128.
//! A narrower varint of the same signedness reads as is (the bytes are the same); a fixed
//! integer of the same signedness and no wider migrates.

use crate::compatibility::{Incompatibility, MigrationReader};
use crate::error::{Error, Result};
use crate::input::DataInputView;
use crate::output::DataOutputView;
use crate::serializer::Compatibility;
use crate::serializer::SnapshotRegistry;
use crate::serializer::TypeSerializer;
use crate::snapshot::{kinds, SerializerSnapshot};

pub use crate::snapshot::varint_kinds;

#[cold]
#[inline(never)]
fn out_of_range(what: &str, v: impl std::fmt::Display) -> Error {
    Error::OutOfRange {
        what: what.to_owned(),
        detail: format!("{v} does not fit"),
    }
}

macro_rules! varint {
    ($(#[$doc:meta])* $ser:ident, $ty:ty, $kind:expr, signed: $signed:tt,
      same: [$($same:expr),*], fixed: [$($read:ident => $fixed_kind:expr),*]) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
        pub struct $ser;

        impl $ser {
            #[inline(always)]
            fn read(input: &mut DataInputView<'_>) -> Result<$ty> {
                varint!(@read $signed, $ty, input)
            }
        }

        impl TypeSerializer<$ty> for $ser {
            #[inline(always)]
            fn serialize(&self, value: &$ty, out: &mut DataOutputView) -> Result<()> {
                varint!(@write $signed, *value, out);
                Ok(())
            }
            #[inline(always)]
            fn deserialize(&self, input: &mut DataInputView<'_>) -> Result<$ty> {
                Self::read(input)
            }
            fn copy(&self, value: &$ty) -> $ty {
                *value
            }
            #[inline]
            fn skip(&self, input: &mut DataInputView<'_>) -> Result<()> {
                Self::read(input).map(|_| ())
            }
            fn is_immutable(&self) -> bool {
                true
            }
            fn snapshot(&self) -> SerializerSnapshot {
                SerializerSnapshot::new($kind, 1)
            }
            fn resolve(&self, old: &SerializerSnapshot, _: &SnapshotRegistry) -> Compatibility<$ty> {
                let new = self.snapshot();
                if old.version() == 1 && (old.kind() == $kind $(|| old.kind() == $same)*) {
                    return Compatibility::AsIs;
                }
                $(
                    if old.version() == 1 && old.kind() == $fixed_kind {
                        return Compatibility::AfterMigration(MigrationReader::new(|input| Ok(input.$read()? as $ty)));
                    }
                )*
                Compatibility::Incompatible(Incompatibility::between(old, &new))
            }
        }
    };
    (@read false, $ty:ty, $input:ident) => {{
        let v = $input.read_varint()?;
        <$ty>::try_from(v).map_err(|_| out_of_range(stringify!($ty), v))
    }};
    (@read true, $ty:ty, $input:ident) => {{
        let v = $input.read_varint_signed()?;
        <$ty>::try_from(v).map_err(|_| out_of_range(stringify!($ty), v))
    }};
    (@write false, $v:expr, $out:ident) => { $out.write_varint($v as u64) };
    (@write true, $v:expr, $out:ident) => { $out.write_varint_signed($v as i64) };
}

varint!(/// Serializes `u16` as unsigned LEB128 (1 byte below 128, at most 3).
    VarU16Serializer, u16, varint_kinds::U16, signed: false, same: [],
    fixed: [read_u8 => kinds::U8, read_u16 => kinds::U16]);
varint!(/// Serializes `u32` as unsigned LEB128 (1 byte below 128, at most 5).
    VarU32Serializer, u32, varint_kinds::U32, signed: false, same: [varint_kinds::U16],
    fixed: [read_u8 => kinds::U8, read_u16 => kinds::U16, read_u32 => kinds::U32]);
varint!(/// Serializes `u64` as unsigned LEB128 (1 byte below 128, at most 10).
    VarU64Serializer, u64, varint_kinds::U64, signed: false, same: [varint_kinds::U16, varint_kinds::U32],
    fixed: [read_u8 => kinds::U8, read_u16 => kinds::U16, read_u32 => kinds::U32, read_u64 => kinds::U64]);
varint!(/// Serializes `i16` as zigzag LEB128 (1 byte from -64 to 63, at most 3).
    VarI16Serializer, i16, varint_kinds::I16, signed: true, same: [],
    fixed: [read_i8 => kinds::I8, read_i16 => kinds::I16]);
varint!(/// Serializes `i32` as zigzag LEB128 (1 byte from -64 to 63, at most 5).
    VarI32Serializer, i32, varint_kinds::I32, signed: true, same: [varint_kinds::I16],
    fixed: [read_i8 => kinds::I8, read_i16 => kinds::I16, read_i32 => kinds::I32]);
varint!(/// Serializes `i64` as zigzag LEB128 (1 byte from -64 to 63, at most 10).
    VarI64Serializer, i64, varint_kinds::I64, signed: true, same: [varint_kinds::I16, varint_kinds::I32],
    fixed: [read_i8 => kinds::I8, read_i16 => kinds::I16, read_i32 => kinds::I32, read_i64 => kinds::I64]);
