//! `[T; N]`: the `N` elements back to back, no length (the snapshot holds `N`).

use std::cmp::Ordering;

use super::{check_kind, resolve_child};
use crate::comparator::TypeComparator;
use crate::compatibility::{Incompatibility, MigrationReader, PathSegment};
use crate::error::{Error, Result};
use crate::input::DataInputView;
use crate::output::DataOutputView;
use crate::serializer::TypeSerializer;
use crate::serializer::{Compatibility, FieldReader};
use crate::serializer::{RestoredSerializer, SnapshotRegistry};
use crate::snapshot::{array_payload, kinds, read_array_payload, SerializerSnapshot};
use crate::value::Value;

/// Serializes `[T; N]` with the element serializer `S`; arrays of numbers are one `memcpy`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct ArraySerializer<S, const N: usize> {
    element: S,
}

impl<S, const N: usize> ArraySerializer<S, N> {
    /// A serializer of arrays whose elements `element` serializes.
    pub const fn new(element: S) -> Self {
        Self { element }
    }
}

/// Spends the view's zero-sized budget for an array of `len` elements of `T` that may take
/// no bytes (`min_element_size` 0), as a list of them does: nested arrays of `()` cannot
/// multiply the work of one read (`[[(); 83]; 83]` spends 83 + 83 × 83 units).
#[inline(always)]
fn spend_zero_sized<T>(
    input: &mut DataInputView<'_>,
    len: usize,
    min_element_size: usize,
) -> Result<()> {
    if min_element_size == 0 && len > 0 {
        input.spend_zero_sized(len as u64, std::mem::size_of::<T>())
    } else {
        Ok(())
    }
}

/// Skips the `len` elements of an array. Elements that may take no bytes spend the
/// zero-sized budget as a read does, one by one (nested arrays of them too): a skip
/// refuses what a read refuses.
fn skip_elements<T, E: ?Sized + TypeSerializer<T>>(
    element: &E,
    len: usize,
    input: &mut DataInputView<'_>,
) -> Result<()> {
    if element.min_length() == 0 {
        spend_zero_sized::<T>(input, len, 0)?;
        for _ in 0..len {
            element.skip(input)?;
        }
        Ok(())
    } else {
        element.skip_many(len, input)
    }
}

/// Builds an array from `N` fallible reads, stopping at the first error.
pub(crate) fn read_array<T, const N: usize>(mut read: impl FnMut() -> Result<T>) -> Result<[T; N]> {
    let mut error = None;
    let items: [Option<T>; N] = std::array::from_fn(|_| {
        if error.is_some() {
            return None;
        }
        read().map_err(|e| error = Some(e)).ok()
    });
    match error {
        Some(e) => Err(e),
        // `from_fn` calls `read` for every element in order and stops only after an error
        // (recorded above), so with none recorded every element holds a value.
        None => Ok(items.map(|item| {
            item.unwrap_or_else(|| {
                unreachable!("every element was read when no error was recorded")
            })
        })),
    }
}

impl<T: 'static, S: TypeSerializer<T> + Clone, const N: usize> TypeSerializer<[T; N]>
    for ArraySerializer<S, N>
{
    #[inline]
    fn serialize(&self, value: &[T; N], out: &mut DataOutputView) -> Result<()> {
        if self.element.min_length() == 0 && N > 0 {
            out.spend_zero_sized(N as u64, std::mem::size_of::<T>())?;
        }
        self.element.serialize_slice(value, out)
    }
    #[inline]
    fn deserialize(&self, input: &mut DataInputView<'_>) -> Result<[T; N]> {
        spend_zero_sized::<T>(input, N, self.element.min_length())?;
        read_array(|| self.element.deserialize(input))
    }
    fn deserialize_into(&self, reuse: &mut [T; N], input: &mut DataInputView<'_>) -> Result<()> {
        spend_zero_sized::<T>(input, N, self.element.min_length())?;
        for slot in reuse.iter_mut() {
            self.element.deserialize_into(slot, input)?;
        }
        Ok(())
    }
    fn copy(&self, value: &[T; N]) -> [T; N] {
        std::array::from_fn(|i| self.element.copy(&value[i]))
    }
    fn skip(&self, input: &mut DataInputView<'_>) -> Result<()> {
        skip_elements::<T, S>(&self.element, N, input)
    }
    fn fixed_length(&self) -> Option<usize> {
        self.element.fixed_length()?.checked_mul(N)
    }
    fn is_immutable(&self) -> bool {
        self.element.is_immutable()
    }
    fn min_length(&self) -> usize {
        self.element.min_length().saturating_mul(N)
    }
    #[inline]
    fn writes_fixed(&self) -> bool {
        self.element.writes_fixed() && self.fixed_length().is_some()
    }
    #[inline]
    fn write_fixed(&self, value: &[T; N], dst: &mut [u8]) -> Result<()> {
        self.element.write_fixed_slice(value, dst)
    }
    fn snapshot(&self) -> SerializerSnapshot {
        SerializerSnapshot::new(kinds::ARRAY, 1)
            .with_payload(array_payload(N))
            .with_nested(vec![self.element.snapshot()])
    }
    fn resolve(
        &self,
        old: &SerializerSnapshot,
        registry: &SnapshotRegistry,
    ) -> Compatibility<[T; N]> {
        let new = self.snapshot();
        if check_kind(&new, old).is_err() || old.payload() != new.payload() {
            return Compatibility::Incompatible(Incompatibility::between(old, &new));
        }
        match resolve_child(&self.element, old, 0, registry, PathSegment::Element) {
            Err(inc) => Compatibility::Incompatible(inc),
            Ok(FieldReader::Current(_)) => Compatibility::AsIs,
            Ok(reader) => Compatibility::AfterMigration(MigrationReader::new(move |input| {
                read_array(|| reader.read(input))
            })),
        }
    }
}

/// The type-free serializer of the array layout, with the length its snapshot holds.
#[derive(Debug)]
struct RestoredArray {
    len: usize,
    element: RestoredSerializer,
    snapshot: SerializerSnapshot,
}

pub(crate) fn restore(
    snapshot: &SerializerSnapshot,
    registry: &SnapshotRegistry,
) -> Result<RestoredSerializer> {
    let len = read_array_payload(snapshot)?;
    let element = registry.restore(snapshot.nested_at(0)?)?;
    if element.min_length() == 0 && len > crate::MAX_ZERO_SIZED_ITEMS {
        return Err(Error::CorruptSnapshot(format!(
            "array of {len} zero-sized elements"
        )));
    }
    Ok(std::sync::Arc::new(RestoredArray {
        len,
        element,
        snapshot: snapshot.clone(),
    }))
}

impl TypeSerializer<Value> for RestoredArray {
    fn serialize(&self, value: &Value, out: &mut DataOutputView) -> Result<()> {
        match value {
            Value::Array(items) if items.len() == self.len => {
                if self.element.min_length() == 0 && self.len > 0 {
                    out.spend_zero_sized(self.len as u64, std::mem::size_of::<Value>())?;
                }
                items
                    .iter()
                    .try_for_each(|item| self.element.serialize(item, out))
            }
            _ => Err(crate::restoring::mismatch(self, value)),
        }
    }
    fn deserialize(&self, input: &mut DataInputView<'_>) -> Result<Value> {
        spend_zero_sized::<Value>(input, self.len, self.element.min_length())?;
        let mut items = Vec::new();
        self.element
            .deserialize_append(self.len, input, &mut items)?;
        Ok(Value::Array(items))
    }
    fn copy(&self, value: &Value) -> Value {
        value.clone()
    }
    fn skip(&self, input: &mut DataInputView<'_>) -> Result<()> {
        skip_elements::<Value, _>(&self.element, self.len, input)
    }
    fn fixed_length(&self) -> Option<usize> {
        self.element.fixed_length()?.checked_mul(self.len)
    }
    fn min_length(&self) -> usize {
        self.element.min_length().saturating_mul(self.len)
    }
    fn snapshot(&self) -> SerializerSnapshot {
        self.snapshot.clone()
    }
}

/// Orders arrays lexicographically; the normalized key is the elements' keys in a row.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct ArrayComparator<C> {
    element: C,
}

impl<C> ArrayComparator<C> {
    /// A comparator of arrays whose elements `element` orders.
    pub const fn new(element: C) -> Self {
        Self { element }
    }
}

impl<T: 'static, C: TypeComparator<T>, const N: usize> TypeComparator<[T; N]>
    for ArrayComparator<C>
{
    fn compare(&self, a: &[T; N], b: &[T; N]) -> Ordering {
        a.iter()
            .zip(b)
            .map(|(x, y)| self.element.compare(x, y))
            .find(|o| o.is_ne())
            .unwrap_or(Ordering::Equal)
    }
    fn compare_serialized(
        &self,
        a: &mut DataInputView<'_>,
        b: &mut DataInputView<'_>,
    ) -> Result<Ordering> {
        for _ in 0..N {
            match self.element.compare_serialized(a, b)? {
                Ordering::Equal => {}
                other => return Ok(other),
            }
        }
        Ok(Ordering::Equal)
    }
    fn write_normalized_key(&self, value: &[T; N], out: &mut Vec<u8>) {
        for item in value {
            self.element.write_normalized_key(item, out);
        }
    }
    fn normalized_key_len(&self) -> Option<usize> {
        self.element.normalized_key_len()?.checked_mul(N)
    }
}
