//! Flink's array serializers: the primitive arrays (`BytePrimitiveArraySerializer` and its
//! siblings: an `int` length, then the elements big-endian) and `GenericArraySerializer`
//! (arrays of objects: an `int` length, then per element a `boolean` that is `true` when the
//! element is present, followed by it; note the marker is the opposite of a POJO's).

use typeinfo::{
    capacity_for, DataInputView, DataOutputView, Result, SerializerSnapshot, TypeSerializer,
};

use crate::java_io;
use crate::layout::primitive::{
    BooleanSerializer, DoubleSerializer, FloatSerializer, IntSerializer, LongSerializer,
    ShortSerializer,
};
use crate::snapshot;

macro_rules! primitive_array {
    ($(#[$doc:meta])* $name:ident, $ty:ty, $size:expr, $read:expr, $write:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
        pub struct $name;

        impl TypeSerializer<Vec<$ty>> for $name {
            fn serialize(&self, value: &Vec<$ty>, out: &mut DataOutputView) -> Result<()> {
                java_io::write_len(out, value.len())?;
                out.reserve(value.len() * $size);
                for v in value {
                    #[allow(clippy::redundant_closure_call)]
                    ($write)(out, *v)?;
                }
                Ok(())
            }
            fn deserialize(&self, input: &mut DataInputView<'_>) -> Result<Vec<$ty>> {
                let len = java_io::read_len(input, $size)?;
                let mut out = Vec::with_capacity(capacity_for::<$ty>(len, $size));
                for _ in 0..len {
                    #[allow(clippy::redundant_closure_call)]
                    out.push(($read)(input)?);
                }
                Ok(out)
            }
            fn copy(&self, value: &Vec<$ty>) -> Vec<$ty> {
                value.clone()
            }
            fn skip(&self, input: &mut DataInputView<'_>) -> Result<()> {
                let len = java_io::read_len(input, $size)?;
                input.skip_bytes(len * $size)
            }
            fn snapshot(&self) -> SerializerSnapshot {
                snapshot::of(stringify!($name), Vec::new())
            }
        }
    };
}

primitive_array!(
    /// Java's `byte[]`: an `int` length, then the bytes.
    BytePrimitiveArraySerializer, u8, 1, |input: &mut DataInputView<'_>| input.read_u8(),
    |out: &mut DataOutputView, v| { out.write_u8(v); Ok::<(), typeinfo::Error>(()) }
);
primitive_array!(
    /// Java's `boolean[]`.
    BooleanPrimitiveArraySerializer, bool, 1, |i: &mut DataInputView<'_>| BooleanSerializer.deserialize(i),
    |out: &mut DataOutputView, v| BooleanSerializer.serialize(&v, out)
);
primitive_array!(
    /// Java's `short[]`.
    ShortPrimitiveArraySerializer, i16, 2, |i: &mut DataInputView<'_>| ShortSerializer.deserialize(i),
    |out: &mut DataOutputView, v| ShortSerializer.serialize(&v, out)
);
primitive_array!(
    /// Java's `char[]`, as the UTF-16 units it holds (a `char[]` may hold half of a
    /// surrogate pair, which no Rust `char` can).
    CharPrimitiveArraySerializer, u16, 2, java_io::read_u16,
    |out: &mut DataOutputView, v| { java_io::write_u16(out, v); Ok::<(), typeinfo::Error>(()) }
);
primitive_array!(
    /// Java's `int[]`.
    IntPrimitiveArraySerializer, i32, 4, |i: &mut DataInputView<'_>| IntSerializer.deserialize(i),
    |out: &mut DataOutputView, v| IntSerializer.serialize(&v, out)
);
primitive_array!(
    /// Java's `long[]`.
    LongPrimitiveArraySerializer, i64, 8, |i: &mut DataInputView<'_>| LongSerializer.deserialize(i),
    |out: &mut DataOutputView, v| LongSerializer.serialize(&v, out)
);
primitive_array!(
    /// Java's `float[]`.
    FloatPrimitiveArraySerializer, f32, 4, |i: &mut DataInputView<'_>| FloatSerializer.deserialize(i),
    |out: &mut DataOutputView, v| FloatSerializer.serialize(&v, out)
);
primitive_array!(
    /// Java's `double[]`.
    DoublePrimitiveArraySerializer, f64, 8, |i: &mut DataInputView<'_>| DoubleSerializer.deserialize(i),
    |out: &mut DataOutputView, v| DoubleSerializer.serialize(&v, out)
);

/// An array of objects (`Integer[]`, `Order[]`): Flink's `GenericArraySerializer` over the
/// elements' serializer `S`, as `Vec<Option<T>>` (Java arrays may hold nulls).
///
/// # Examples
///
/// ```
/// use typeinfo::to_bytes;
/// use typeinfo_flink_compat::{GenericArraySerializer, IntSerializer};
///
/// # fn main() -> typeinfo::Result<()> {
/// let bytes = to_bytes(&GenericArraySerializer::new(IntSerializer), &vec![Some(1), None])?;
/// assert_eq!(bytes, [0, 0, 0, 2, 1, 0, 0, 0, 1, 0]);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GenericArraySerializer<S>(pub S);

impl<S> GenericArraySerializer<S> {
    /// Arrays whose elements `element` serializes.
    pub const fn new(element: S) -> Self {
        Self(element)
    }
}

impl<T: 'static, S: TypeSerializer<T>> TypeSerializer<Vec<Option<T>>>
    for GenericArraySerializer<S>
{
    fn serialize(&self, value: &Vec<Option<T>>, out: &mut DataOutputView) -> Result<()> {
        java_io::write_len(out, value.len())?;
        for v in value {
            java_io::write_bool(out, v.is_some());
            if let Some(v) = v {
                self.0.serialize(v, out)?;
            }
        }
        Ok(())
    }
    fn deserialize(&self, input: &mut DataInputView<'_>) -> Result<Vec<Option<T>>> {
        let len = java_io::read_len(input, 1)?;
        let mut out = Vec::with_capacity(capacity_for::<Option<T>>(len, 1));
        for _ in 0..len {
            let present = java_io::read_bool(input)?;
            out.push(if present {
                Some(self.0.deserialize(input)?)
            } else {
                None
            });
        }
        Ok(out)
    }
    fn copy(&self, value: &Vec<Option<T>>) -> Vec<Option<T>> {
        value
            .iter()
            .map(|v| v.as_ref().map(|v| self.0.copy(v)))
            .collect()
    }
    fn skip(&self, input: &mut DataInputView<'_>) -> Result<()> {
        let len = java_io::read_len(input, 1)?;
        for _ in 0..len {
            if java_io::read_bool(input)? {
                self.0.skip(input)?;
            }
        }
        Ok(())
    }
    fn snapshot(&self) -> SerializerSnapshot {
        snapshot::of("GenericArraySerializer", vec![self.0.snapshot()])
    }
}
