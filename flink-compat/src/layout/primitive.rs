//! Flink's serializers of Java's primitives and their boxed forms: `BooleanSerializer`,
//! `ByteSerializer`, `ShortSerializer`, `CharSerializer`, `IntSerializer`, `LongSerializer`,
//! `FloatSerializer`, `DoubleSerializer`.
//!
//! Big-endian at full width, no null marker: Flink's serializers of `Integer` and the
//! other boxed types are these same serializers, and a null boxed value is written by the
//! container around it (a POJO field's or map value's null marker, [`Nullable`](crate::Nullable)).

use typeinfo::{DataInputView, DataOutputView, Error, Result, SerializerSnapshot, TypeSerializer};

use crate::java_io;
use crate::snapshot;

macro_rules! fixed_serializer {
    ($(#[$doc:meta])* $name:ident, $ty:ty, $len:expr, $read:expr, $write:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
        pub struct $name;

        impl TypeSerializer<$ty> for $name {
            fn serialize(&self, value: &$ty, out: &mut DataOutputView) -> Result<()> {
                #[allow(clippy::redundant_closure_call)]
                ($write)(out, *value)
            }
            fn deserialize(&self, input: &mut DataInputView<'_>) -> Result<$ty> {
                #[allow(clippy::redundant_closure_call)]
                ($read)(input)
            }
            fn copy(&self, value: &$ty) -> $ty {
                *value
            }
            fn skip(&self, input: &mut DataInputView<'_>) -> Result<()> {
                input.skip_bytes($len)
            }
            fn fixed_length(&self) -> Option<usize> {
                Some($len)
            }
            fn is_immutable(&self) -> bool {
                true
            }
            fn snapshot(&self) -> SerializerSnapshot {
                snapshot::of(stringify!($name), Vec::new())
            }
        }
    };
}

fixed_serializer!(
    /// Java's `boolean`/`Boolean`: one byte, 0 or 1.
    BooleanSerializer, bool, 1, java_io::read_bool,
    |out: &mut DataOutputView, v| { java_io::write_bool(out, v); Ok(()) }
);
fixed_serializer!(
    /// Java's `byte`/`Byte`: one signed byte.
    ByteSerializer, i8, 1, |input: &mut DataInputView<'_>| input.read_i8(),
    |out: &mut DataOutputView, v| { out.write_i8(v); Ok(()) }
);
fixed_serializer!(
    /// Java's `short`/`Short`: two bytes, big-endian.
    ShortSerializer, i16, 2, java_io::read_i16,
    |out: &mut DataOutputView, v| { java_io::write_i16(out, v); Ok(()) }
);
fixed_serializer!(
    /// Java's `char`/`Character`: one UTF-16 unit, big-endian. A Rust `char` outside the
    /// Basic Multilingual Plane does not fit one Java `char` (an error at write time), and a
    /// lone surrogate read from Flink's bytes is not a Rust `char` (an error at read time).
    CharSerializer, char, 2, read_char, write_char
);
fixed_serializer!(
    /// Java's `int`/`Integer`: four bytes, big-endian.
    IntSerializer, i32, 4, java_io::read_i32,
    |out: &mut DataOutputView, v| { java_io::write_i32(out, v); Ok(()) }
);
fixed_serializer!(
    /// Java's `long`/`Long`: eight bytes, big-endian.
    LongSerializer, i64, 8, java_io::read_i64,
    |out: &mut DataOutputView, v| { java_io::write_i64(out, v); Ok(()) }
);
fixed_serializer!(
    /// Java's `float`/`Float`: the IEEE 754 bits, big-endian (every NaN as Java's
    /// `floatToIntBits` canonical NaN, as Flink writes it).
    FloatSerializer, f32, 4, java_io::read_f32,
    |out: &mut DataOutputView, v: f32| { java_io::write_f32(out, if v.is_nan() { f32::NAN } else { v }); Ok(()) }
);
fixed_serializer!(
    /// Java's `double`/`Double`: the IEEE 754 bits, big-endian (every NaN as Java's
    /// `doubleToLongBits` canonical NaN, as Flink writes it).
    DoubleSerializer, f64, 8, java_io::read_f64,
    |out: &mut DataOutputView, v: f64| { java_io::write_f64(out, if v.is_nan() { f64::NAN } else { v }); Ok(()) }
);

/// Reads one Java `char` as a Rust `char`.
pub(crate) fn read_char(input: &mut DataInputView<'_>) -> Result<char> {
    let unit = java_io::read_u16(input)?;
    char::from_u32(u32::from(unit)).ok_or(Error::InvalidChar(u32::from(unit)))
}

/// Writes one Rust `char` as a Java `char`.
pub(crate) fn write_char(out: &mut DataOutputView, c: char) -> Result<()> {
    let unit = u16::try_from(u32::from(c)).map_err(|_| Error::OutOfRange {
        what: "Java char".to_owned(),
        detail: format!(
            "{c:?} (U+{:04X}) is outside the Basic Multilingual Plane",
            u32::from(c)
        ),
    })?;
    java_io::write_u16(out, unit);
    Ok(())
}
