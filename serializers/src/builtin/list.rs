//! `Vec<T>` and `VecDeque<T>`: a varint element count, then the elements back to back.
//!
//! A `Vec` of numbers is written and read with one `memcpy` (little-endian targets).

use std::cmp::Ordering;
use std::collections::{BTreeSet, VecDeque};

use super::resolve_collection;
use crate::comparator::TypeComparator;
use crate::error::Result;
use crate::input::DataInputView;
use crate::output::DataOutputView;
use crate::serializer::Compatibility;
use crate::serializer::SnapshotRegistry;
use crate::serializer::TypeSerializer;
use crate::snapshot::{kinds, SerializerSnapshot};

/// Serializes `Vec<T>` with the element serializer `S`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct VecSerializer<S> {
    element: S,
}

impl<S> VecSerializer<S> {
    /// A serializer of vectors whose elements `element` serializes.
    pub const fn new(element: S) -> Self {
        Self { element }
    }

    /// The element serializer.
    pub fn element(&self) -> &S {
        &self.element
    }
}

pub(crate) fn list_snapshot(element: SerializerSnapshot) -> SerializerSnapshot {
    SerializerSnapshot::new(kinds::LIST, 1).with_nested(vec![element])
}

/// Reads the element count of a list, set or map whose elements (entries) take at least
/// `min_element_size` bytes and are `T`s in memory: bounded by the bytes left, or, for
/// elements that may take no bytes, by the view's zero-sized budget.
///
/// # Errors
///
/// [`Error::LengthTooLarge`](crate::Error::LengthTooLarge).
#[inline(always)]
pub(crate) fn read_len<T>(input: &mut DataInputView<'_>, min_element_size: usize) -> Result<usize> {
    input.read_len_sized(min_element_size, std::mem::size_of::<T>())
}

/// Writes the element count of a list, set or map whose elements take at least
/// `min_element_size` bytes and are `T`s in memory, spending the view's zero-sized budget
/// as [`read_len`] does, so that nothing is written that it would refuse.
///
/// # Errors
///
/// [`Error::TooManyZeroSizedElements`](crate::Error::TooManyZeroSizedElements).
#[inline(always)]
pub(crate) fn write_len<T>(
    out: &mut DataOutputView,
    len: usize,
    min_element_size: usize,
) -> Result<()> {
    out.write_len_sized(len, min_element_size, std::mem::size_of::<T>())
}

/// A vector for `len` elements of `T` (checked by [`read_len`]), reserving at most
/// [`capacity_for`](crate::capacity_for) of them up front; all of them for elements that
/// may take no bytes, whose count the zero-sized budget bounds (at most
/// `MAX_ZERO_SIZED_ITEMS` × `ZERO_SIZED_UNIT_BYTES` bytes), so that such a vector is
/// allocated once rather than grown past its length.
#[inline(always)]
pub(crate) fn with_capacity<T>(len: usize, min_element_size: usize) -> Vec<T> {
    if min_element_size == 0 {
        Vec::with_capacity(len)
    } else {
        Vec::with_capacity(crate::capacity_for::<T>(len, min_element_size))
    }
}

impl<T: 'static, S: TypeSerializer<T> + Clone> TypeSerializer<Vec<T>> for VecSerializer<S> {
    #[inline]
    fn serialize(&self, value: &Vec<T>, out: &mut DataOutputView) -> Result<()> {
        write_len::<T>(out, value.len(), self.element.min_length())?;
        self.element.serialize_slice(value, out)
    }
    #[inline]
    fn deserialize(&self, input: &mut DataInputView<'_>) -> Result<Vec<T>> {
        let min = self.element.min_length();
        let n = read_len::<T>(input, min)?;
        let mut v = with_capacity(n, min);
        self.element.deserialize_append(n, input, &mut v)?;
        Ok(v)
    }
    #[inline]
    fn deserialize_into(&self, reuse: &mut Vec<T>, input: &mut DataInputView<'_>) -> Result<()> {
        let n = read_len::<T>(input, self.element.min_length())?;
        reuse.clear();
        self.element.deserialize_append(n, input, reuse)
    }
    fn copy(&self, value: &Vec<T>) -> Vec<T> {
        value.iter().map(|v| self.element.copy(v)).collect()
    }
    #[inline]
    fn skip(&self, input: &mut DataInputView<'_>) -> Result<()> {
        let n = input.read_len(self.element.min_length())?;
        self.element.skip_many(n, input)
    }
    fn snapshot(&self) -> SerializerSnapshot {
        list_snapshot(self.element.snapshot())
    }
    fn resolve(
        &self,
        old: &SerializerSnapshot,
        registry: &SnapshotRegistry,
    ) -> Compatibility<Vec<T>> {
        resolve_collection(self.snapshot(), old, &self.element, registry, Ok)
    }
}

/// Serializes `VecDeque<T>` in the layout (and with the snapshot) of `Vec<T>`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct VecDequeSerializer<S> {
    element: S,
}

impl<S> VecDequeSerializer<S> {
    /// A serializer of deques whose elements `element` serializes.
    pub const fn new(element: S) -> Self {
        Self { element }
    }
}

impl<T: 'static, S: TypeSerializer<T> + Clone> TypeSerializer<VecDeque<T>>
    for VecDequeSerializer<S>
{
    fn serialize(&self, value: &VecDeque<T>, out: &mut DataOutputView) -> Result<()> {
        write_len::<T>(out, value.len(), self.element.min_length())?;
        let (a, b) = value.as_slices();
        self.element.serialize_slice(a, out)?;
        self.element.serialize_slice(b, out)
    }
    fn deserialize(&self, input: &mut DataInputView<'_>) -> Result<VecDeque<T>> {
        let n = read_len::<T>(input, self.element.min_length())?;
        let mut v = Vec::new();
        self.element.deserialize_append(n, input, &mut v)?;
        Ok(v.into())
    }
    fn copy(&self, value: &VecDeque<T>) -> VecDeque<T> {
        value.iter().map(|v| self.element.copy(v)).collect()
    }
    fn skip(&self, input: &mut DataInputView<'_>) -> Result<()> {
        let n = input.read_len(self.element.min_length())?;
        self.element.skip_many(n, input)
    }
    fn snapshot(&self) -> SerializerSnapshot {
        list_snapshot(self.element.snapshot())
    }
    fn resolve(
        &self,
        old: &SerializerSnapshot,
        registry: &SnapshotRegistry,
    ) -> Compatibility<VecDeque<T>> {
        resolve_collection(self.snapshot(), old, &self.element, registry, |v| {
            Ok(v.into())
        })
    }
}

/// Orders sequences lexicographically by an element comparator (`Vec`, `VecDeque`,
/// `BTreeSet`), as their `Ord` does.
///
/// The normalized key writes `0x01` and the element's key for each element, then `0x00`:
/// a shorter sequence that is a prefix of a longer one sorts first.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct SeqComparator<C> {
    element: C,
}

impl<C> SeqComparator<C> {
    /// A comparator of sequences whose elements `element` orders.
    pub const fn new(element: C) -> Self {
        Self { element }
    }

    fn compare_iter<'a, T: 'a>(
        &self,
        a: impl Iterator<Item = &'a T>,
        b: impl Iterator<Item = &'a T>,
    ) -> Ordering
    where
        C: TypeComparator<T>,
    {
        let mut a = a;
        let mut b = b;
        loop {
            match (a.next(), b.next()) {
                (Some(x), Some(y)) => match self.element.compare(x, y) {
                    Ordering::Equal => continue,
                    other => return other,
                },
                (None, None) => return Ordering::Equal,
                (None, Some(_)) => return Ordering::Less,
                (Some(_), None) => return Ordering::Greater,
            }
        }
    }

    fn key_iter<'a, T: 'a>(&self, items: impl Iterator<Item = &'a T>, out: &mut Vec<u8>)
    where
        C: TypeComparator<T>,
    {
        for item in items {
            out.push(1);
            self.element.write_normalized_key(item, out);
        }
        out.push(0);
    }

    fn compare_serialized_seq<T>(
        &self,
        a: &mut DataInputView<'_>,
        b: &mut DataInputView<'_>,
    ) -> Result<Ordering>
    where
        C: TypeComparator<T>,
    {
        let la = a.read_count()?;
        let lb = b.read_count()?;
        for _ in 0..la.min(lb) {
            match self.element.compare_serialized(a, b)? {
                Ordering::Equal => continue,
                other => return Ok(other),
            }
        }
        Ok(la.cmp(&lb))
    }
}

macro_rules! seq_comparator {
    ($($coll:ident),*) => {$(
        impl<T: 'static, C: TypeComparator<T>> TypeComparator<$coll<T>> for SeqComparator<C> {
            fn compare(&self, a: &$coll<T>, b: &$coll<T>) -> Ordering {
                self.compare_iter(a.iter(), b.iter())
            }
            fn compare_serialized(&self, a: &mut DataInputView<'_>, b: &mut DataInputView<'_>) -> Result<Ordering> {
                self.compare_serialized_seq::<T>(a, b)
            }
            fn write_normalized_key(&self, value: &$coll<T>, out: &mut Vec<u8>) {
                self.key_iter(value.iter(), out)
            }
            fn normalized_key_len(&self) -> Option<usize> {
                None
            }
        }
    )*};
}
seq_comparator!(Vec, VecDeque, BTreeSet);

/// The type-free serializer of the list layout: the same count and elements as
/// [`VecSerializer`] (with [`read_len`] and [`with_capacity`], the functions it calls), in
/// one small function per operation, because a level of a recursive value
/// (`children: Vec<Doc>`) passes through it: the typed path over `Value` parts took four
/// frames per list, a quarter of a level's stack.
#[derive(Debug)]
pub(crate) struct RestoredList {
    element: crate::serializer::RestoredSerializer,
    snapshot: SerializerSnapshot,
}

pub(crate) fn restore(
    snapshot: &SerializerSnapshot,
    registry: &SnapshotRegistry,
) -> Result<crate::serializer::RestoredSerializer> {
    let element = registry.restore(snapshot.nested_at(0)?)?;
    Ok(std::sync::Arc::new(RestoredList {
        element,
        snapshot: snapshot.clone(),
    }))
}

// Matches instead of `?` on the path of a recursive value: a debug build keeps the
// temporaries of `?` apart.
#[allow(clippy::question_mark)]
impl TypeSerializer<crate::Value> for RestoredList {
    fn serialize(&self, value: &crate::Value, out: &mut DataOutputView) -> Result<()> {
        let crate::Value::List(items) = value else {
            return Err(crate::restoring::mismatch(self, value));
        };
        let element: &dyn TypeSerializer<crate::Value> = &*self.element;
        if let Err(e) = write_len::<crate::Value>(out, items.len(), element.min_length()) {
            return Err(e);
        }
        for item in items {
            if let Err(e) = element.serialize(item, out) {
                return Err(e);
            }
        }
        Ok(())
    }
    fn deserialize(&self, input: &mut DataInputView<'_>) -> Result<crate::Value> {
        let element: &dyn TypeSerializer<crate::Value> = &*self.element;
        let min = element.min_length();
        let n = match read_len::<crate::Value>(input, min) {
            Ok(n) => n,
            Err(e) => return Err(e),
        };
        let mut items = with_capacity(n, min);
        for _ in 0..n {
            match element.deserialize(input) {
                Ok(item) => items.push(item),
                Err(e) => return Err(e),
            }
        }
        Ok(crate::Value::List(items))
    }
    fn copy(&self, value: &crate::Value) -> crate::Value {
        value.clone()
    }
    fn skip(&self, input: &mut DataInputView<'_>) -> Result<()> {
        let element: &dyn TypeSerializer<crate::Value> = &*self.element;
        let n = match read_len::<crate::Value>(input, element.min_length()) {
            Ok(n) => n,
            Err(e) => return Err(e),
        };
        element.skip_many(n, input)
    }
    fn snapshot(&self) -> SerializerSnapshot {
        self.snapshot.clone()
    }
}
