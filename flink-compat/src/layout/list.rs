//! Flink's `ListSerializer` (`java.util.List`): an `int` size, then each element with the
//! element serializer, no marker of its own.
//!
//! Type extraction (Flink 2.x, `NullableListTypeInfo`) wraps the list and each element in
//! a `NullableSerializer`: that layout is `NotNull<ListSerializer<NotNull<S>>>` (or
//! [`Nullable`](crate::Nullable) where the Rust side holds `Option`s), which
//! [`FlinkType`](crate::FlinkType) gives `Vec<T>`.

use typeinfo::{
    capacity_for, DataInputView, DataOutputView, Result, SerializerSnapshot, TypeSerializer,
};

use crate::java_io;
use crate::snapshot;

/// `java.util.List` as `Vec<T>`: Flink's `ListSerializer` over the element serializer `S`.
///
/// # Examples
///
/// ```
/// use typeinfo::to_bytes;
/// use typeinfo_flink_compat::{ListSerializer, LongSerializer};
///
/// # fn main() -> typeinfo::Result<()> {
/// let bytes = to_bytes(&ListSerializer::new(LongSerializer), &vec![1_i64])?;
/// assert_eq!(bytes, [0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1]);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ListSerializer<S>(pub S);

impl<S> ListSerializer<S> {
    /// Lists whose elements `element` serializes.
    pub const fn new(element: S) -> Self {
        Self(element)
    }
}

impl<T: 'static, S: TypeSerializer<T>> TypeSerializer<Vec<T>> for ListSerializer<S> {
    fn serialize(&self, value: &Vec<T>, out: &mut DataOutputView) -> Result<()> {
        java_io::write_len(out, value.len())?;
        value.iter().try_for_each(|v| self.0.serialize(v, out))
    }
    fn deserialize(&self, input: &mut DataInputView<'_>) -> Result<Vec<T>> {
        let min = self.0.min_length();
        let len = java_io::read_len(input, min)?;
        let mut out = Vec::with_capacity(capacity_for::<T>(len, min));
        for _ in 0..len {
            out.push(self.0.deserialize(input)?);
        }
        Ok(out)
    }
    fn copy(&self, value: &Vec<T>) -> Vec<T> {
        value.iter().map(|v| self.0.copy(v)).collect()
    }
    fn skip(&self, input: &mut DataInputView<'_>) -> Result<()> {
        let len = java_io::read_len(input, self.0.min_length())?;
        self.0.skip_many(len, input)
    }
    fn snapshot(&self) -> SerializerSnapshot {
        snapshot::of("ListSerializer", vec![self.0.snapshot()])
    }
}
