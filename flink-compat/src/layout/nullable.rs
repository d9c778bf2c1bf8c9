//! Flink's null marker: a `boolean` that is `true` for null, then the value when there is
//! one. `NullableSerializer` writes it, and so do a POJO before each field, a map before
//! each value, and type extraction's list, map and set serializers around themselves and
//! their elements and keys (`NullableListTypeInfo` and friends, Flink 2.x).
//!
//! [`Nullable`] reads and writes `Option<T>` behind the marker; [`NotNull`] writes `T`
//! behind it (always `false`) and refuses a null with an error, for Rust types that have
//! no `Option`.

use typeinfo::{DataInputView, DataOutputView, Result, SerializerSnapshot, TypeSerializer};

use crate::java_io;
use crate::layout::string::null_error;
use crate::snapshot;

/// `Option<T>` behind Flink's null marker: Flink's `NullableSerializer`, and the null
/// marker of POJO fields and map values.
///
/// [`padded`](Nullable::padded) is `NullableSerializer` with `padNullValue`: a null of a
/// fixed-length layout is followed by that many zero bytes, so the whole stays fixed-length.
///
/// # Examples
///
/// ```
/// use typeinfo::to_bytes;
/// use typeinfo_flink_compat::{IntSerializer, Nullable};
///
/// # fn main() -> typeinfo::Result<()> {
/// assert_eq!(to_bytes(&Nullable::new(IntSerializer), &Some(7))?, [0, 0, 0, 0, 7]);
/// assert_eq!(to_bytes(&Nullable::new(IntSerializer), &None)?, [1]);
/// assert_eq!(to_bytes(&Nullable::padded(IntSerializer), &None)?, [1, 0, 0, 0, 0]);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Nullable<S> {
    inner: S,
    padded: bool,
}

impl<S> Nullable<S> {
    /// `inner`'s values behind a null marker, nothing after a null.
    pub const fn new(inner: S) -> Self {
        Self {
            inner,
            padded: false,
        }
    }

    /// `inner`'s values behind a null marker, a null padded to `inner`'s fixed length.
    pub const fn padded(inner: S) -> Self {
        Self {
            inner,
            padded: true,
        }
    }

    /// The serializer of the values.
    pub fn into_inner(self) -> S {
        self.inner
    }
}

impl<S> Nullable<S> {
    fn padding<T>(&self) -> usize
    where
        S: TypeSerializer<T>,
    {
        if self.padded {
            self.inner.fixed_length().unwrap_or(0)
        } else {
            0
        }
    }
}

impl<T: 'static, S: TypeSerializer<T>> TypeSerializer<Option<T>> for Nullable<S> {
    fn serialize(&self, value: &Option<T>, out: &mut DataOutputView) -> Result<()> {
        match value {
            None => {
                java_io::write_bool(out, true);
                let padding = self.padding::<T>();
                out.write_bytes(&vec![0; padding]);
                Ok(())
            }
            Some(v) => {
                java_io::write_bool(out, false);
                self.inner.serialize(v, out)
            }
        }
    }
    fn deserialize(&self, input: &mut DataInputView<'_>) -> Result<Option<T>> {
        if java_io::read_bool(input)? {
            input.skip_bytes(self.padding::<T>())?;
            Ok(None)
        } else {
            self.inner.deserialize(input).map(Some)
        }
    }
    fn copy(&self, value: &Option<T>) -> Option<T> {
        value.as_ref().map(|v| self.inner.copy(v))
    }
    fn skip(&self, input: &mut DataInputView<'_>) -> Result<()> {
        if java_io::read_bool(input)? {
            input.skip_bytes(self.padding::<T>())
        } else {
            self.inner.skip(input)
        }
    }
    fn fixed_length(&self) -> Option<usize> {
        let len = self.inner.fixed_length()?;
        self.padded.then_some(len + 1)
    }
    fn snapshot(&self) -> SerializerSnapshot {
        let name = if self.padded {
            "NullableSerializer(padded)"
        } else {
            "NullableSerializer"
        };
        snapshot::of(name, vec![self.inner.snapshot()])
    }
}

/// `T` behind Flink's null marker, for a Rust type without `Option`: writes `false` and the
/// value; a null in Flink's bytes is an error that says so.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NotNull<S>(pub S);

impl<T: 'static, S: TypeSerializer<T>> TypeSerializer<T> for NotNull<S> {
    fn serialize(&self, value: &T, out: &mut DataOutputView) -> Result<()> {
        java_io::write_bool(out, false);
        self.0.serialize(value, out)
    }
    fn deserialize(&self, input: &mut DataInputView<'_>) -> Result<T> {
        if java_io::read_bool(input)? {
            return Err(null_error("value behind a null marker"));
        }
        self.0.deserialize(input)
    }
    fn copy(&self, value: &T) -> T {
        self.0.copy(value)
    }
    fn skip(&self, input: &mut DataInputView<'_>) -> Result<()> {
        if java_io::read_bool(input)? {
            return Err(null_error("value behind a null marker"));
        }
        self.0.skip(input)
    }
    fn is_immutable(&self) -> bool {
        self.0.is_immutable()
    }
    fn snapshot(&self) -> SerializerSnapshot {
        snapshot::of("NullableSerializer", vec![self.0.snapshot()])
    }
}

/// The snapshot of a value behind a container's own null marker (a POJO field, a map value):
/// the snapshot of the value's serializer, without the marker's `NullableSerializer` level
/// that [`NotNull`] and [`Nullable`] add (Flink's snapshots of POJOs and maps do not have it).
pub(crate) fn without_marker(framed: SerializerSnapshot) -> SerializerSnapshot {
    if framed.kind() == "flink:NullableSerializer" && framed.nested().len() == 1 {
        framed.nested()[0].clone()
    } else {
        framed
    }
}
