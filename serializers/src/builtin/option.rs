//! `Option<T>`: one tag byte (`0` none, `1` some), then the value if some.
//!
//! A field that was `T` and becomes `Option<T>` migrates: old values read as `Some`.

use std::cmp::Ordering;

use crate::comparator::TypeComparator;
use crate::compatibility::{Incompatibility, MigrationReader, PathSegment};
use crate::error::{Error, Result};
use crate::input::DataInputView;
use crate::output::DataOutputView;
use crate::serializer::SnapshotRegistry;
use crate::serializer::TypeSerializer;
use crate::serializer::{Compatibility, FieldReader};
use crate::snapshot::{kinds, SerializerSnapshot};

/// Serializes `Option<T>` with the value serializer `S`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct OptionSerializer<S> {
    inner: S,
}

impl<S> OptionSerializer<S> {
    /// A serializer of options whose values `inner` serializes.
    pub const fn new(inner: S) -> Self {
        Self { inner }
    }
}

#[inline(always)]
fn read_tag(input: &mut DataInputView<'_>) -> Result<bool> {
    match input.read_u8()? {
        0 => Ok(false),
        1 => Ok(true),
        tag => Err(invalid_tag(tag)),
    }
}

#[cold]
#[inline(never)]
fn invalid_tag(tag: u8) -> Error {
    Error::InvalidTag {
        what: "Option".to_owned(),
        tag: u64::from(tag),
    }
}

impl<T: 'static, S: TypeSerializer<T> + Clone> TypeSerializer<Option<T>> for OptionSerializer<S> {
    #[inline]
    fn serialize(&self, value: &Option<T>, out: &mut DataOutputView) -> Result<()> {
        match value {
            None => {
                out.write_u8(0);
                Ok(())
            }
            Some(v) => {
                out.write_u8(1);
                self.inner.serialize(v, out)
            }
        }
    }
    #[inline]
    fn deserialize(&self, input: &mut DataInputView<'_>) -> Result<Option<T>> {
        // Matches rather than `?` and `map`: the same code once optimized, and smaller
        // stack frames in a debug build, where every level of a recursive value (an
        // `Option<Box<Self>>` field) passes here.
        match read_tag(input) {
            Ok(true) => match self.inner.deserialize(input) {
                Ok(v) => Ok(Some(v)),
                Err(e) => Err(e),
            },
            Ok(false) => Ok(None),
            Err(e) => Err(e),
        }
    }
    fn deserialize_into(&self, reuse: &mut Option<T>, input: &mut DataInputView<'_>) -> Result<()> {
        if !read_tag(input)? {
            *reuse = None;
            return Ok(());
        }
        match reuse {
            Some(v) => self.inner.deserialize_into(v, input),
            None => {
                *reuse = Some(self.inner.deserialize(input)?);
                Ok(())
            }
        }
    }
    fn copy(&self, value: &Option<T>) -> Option<T> {
        value.as_ref().map(|v| self.inner.copy(v))
    }
    #[inline]
    fn skip(&self, input: &mut DataInputView<'_>) -> Result<()> {
        if read_tag(input)? {
            self.inner.skip(input)
        } else {
            Ok(())
        }
    }
    fn is_immutable(&self) -> bool {
        self.inner.is_immutable()
    }
    fn snapshot(&self) -> SerializerSnapshot {
        SerializerSnapshot::new(kinds::OPTION, 1).with_nested(vec![self.inner.snapshot()])
    }
    fn resolve(
        &self,
        old: &SerializerSnapshot,
        registry: &SnapshotRegistry,
    ) -> Compatibility<Option<T>> {
        if old.kind() != kinds::OPTION {
            // `T -> Option<T>`: old values become `Some`.
            return match self.inner.resolve(old, registry) {
                Compatibility::Incompatible(_) => {
                    Compatibility::Incompatible(Incompatibility::between(old, &self.snapshot()))
                }
                Compatibility::AsIs => {
                    let inner = self.inner.clone();
                    Compatibility::AfterMigration(MigrationReader::new(move |input| {
                        inner.deserialize(input).map(Some)
                    }))
                }
                migrating => migrating.map(Some),
            };
        }
        if old.version() != 1 {
            return Compatibility::Incompatible(Incompatibility::between(old, &self.snapshot()));
        }
        match super::resolve_child(&self.inner, old, 0, registry, PathSegment::Some) {
            Err(inc) => Compatibility::Incompatible(inc),
            Ok(FieldReader::Current(_)) => Compatibility::AsIs,
            Ok(reader) => Compatibility::AfterMigration(MigrationReader::new(move |input| {
                if read_tag(input)? {
                    reader.read(input).map(Some)
                } else {
                    Ok(None)
                }
            })),
        }
    }
}

/// Orders options as `Option`'s `Ord` does (`None` first); the normalized key is `0x00`
/// for none, `0x01` and the value's key for some.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct OptionComparator<C> {
    inner: C,
}

impl<C> OptionComparator<C> {
    /// A comparator of options whose values `inner` orders.
    pub const fn new(inner: C) -> Self {
        Self { inner }
    }
}

impl<T: 'static, C: TypeComparator<T>> TypeComparator<Option<T>> for OptionComparator<C> {
    fn compare(&self, a: &Option<T>, b: &Option<T>) -> Ordering {
        match (a, b) {
            (Some(x), Some(y)) => self.inner.compare(x, y),
            (a, b) => a.is_some().cmp(&b.is_some()),
        }
    }
    fn compare_serialized(
        &self,
        a: &mut DataInputView<'_>,
        b: &mut DataInputView<'_>,
    ) -> Result<Ordering> {
        match (read_tag(a)?, read_tag(b)?) {
            (true, true) => self.inner.compare_serialized(a, b),
            (x, y) => Ok(x.cmp(&y)),
        }
    }
    fn write_normalized_key(&self, value: &Option<T>, out: &mut Vec<u8>) {
        match value {
            None => out.push(0),
            Some(v) => {
                out.push(1);
                self.inner.write_normalized_key(v, out);
            }
        }
    }
    fn normalized_key_len(&self) -> Option<usize> {
        None
    }
}

/// The type-free serializer of the option layout: the tag of [`OptionSerializer`] (its
/// `read_tag`), then the value, in one small function per operation, because a level of
/// a recursive value (`next: Option<Box<Chain>>`) passes through it.
#[derive(Debug)]
pub(crate) struct RestoredOption {
    inner: crate::serializer::RestoredSerializer,
    snapshot: SerializerSnapshot,
}

pub(crate) fn restore(
    snapshot: &SerializerSnapshot,
    registry: &SnapshotRegistry,
) -> Result<crate::serializer::RestoredSerializer> {
    let inner = registry.restore(snapshot.nested_at(0)?)?;
    Ok(std::sync::Arc::new(RestoredOption {
        inner,
        snapshot: snapshot.clone(),
    }))
}

// Matches instead of `?` on the path of a recursive value (see `RestoredList`).
#[allow(clippy::question_mark)]
impl TypeSerializer<crate::Value> for RestoredOption {
    fn serialize(&self, value: &crate::Value, out: &mut DataOutputView) -> Result<()> {
        match value {
            crate::Value::Option(None) => {
                out.write_u8(0);
                Ok(())
            }
            crate::Value::Option(Some(v)) => {
                out.write_u8(1);
                (*self.inner).serialize(v, out)
            }
            _ => Err(crate::restoring::mismatch(self, value)),
        }
    }
    fn deserialize(&self, input: &mut DataInputView<'_>) -> Result<crate::Value> {
        match read_tag(input) {
            Ok(true) => match (*self.inner).deserialize(input) {
                Ok(v) => Ok(crate::Value::Option(Some(Box::new(v)))),
                Err(e) => Err(e),
            },
            Ok(false) => Ok(crate::Value::Option(None)),
            Err(e) => Err(e),
        }
    }
    fn copy(&self, value: &crate::Value) -> crate::Value {
        value.clone()
    }
    fn skip(&self, input: &mut DataInputView<'_>) -> Result<()> {
        match read_tag(input) {
            Ok(true) => (*self.inner).skip(input),
            Ok(false) => Ok(()),
            Err(e) => Err(e),
        }
    }
    fn snapshot(&self) -> SerializerSnapshot {
        self.snapshot.clone()
    }
}
