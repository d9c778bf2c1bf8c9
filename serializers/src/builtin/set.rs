//! `HashSet<T>` and `BTreeSet<T>`: a varint element count, then the elements.
//!
//! A `BTreeSet` writes in sorted order, so equal sets give equal bytes; a `HashSet` writes
//! in iteration order, which is why it is not a key type. Reading bytes that repeat an
//! element is an error, not a silent loss.

use std::collections::{BTreeSet, HashSet};
use std::hash::{BuildHasher, Hash};

use super::list::{read_len, with_capacity, write_len};
use super::resolve_collection;
use crate::error::{Error, Result};
use crate::input::DataInputView;
use crate::output::DataOutputView;
use crate::serializer::Compatibility;
use crate::serializer::TypeSerializer;
use crate::serializer::{RestoredSerializer, SnapshotRegistry};
use crate::snapshot::{kinds, SerializerSnapshot};
use crate::value::Value;

#[cold]
#[inline(never)]
fn duplicate() -> Error {
    Error::custom("set bytes repeat an element")
}

fn collect_set<T, C: Default>(
    items: Vec<T>,
    mut insert: impl FnMut(&mut C, T) -> bool,
) -> Result<C> {
    let mut set = C::default();
    for item in items {
        if !insert(&mut set, item) {
            return Err(duplicate());
        }
    }
    Ok(set)
}

macro_rules! set_impl {
    ($name:ident, $doc:literal, $coll:ty, [$($bound:tt)*], $($h:ident)?) => {
        #[doc = $doc]
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
        pub struct $name<S $(, $h = std::collections::hash_map::RandomState)?> {
            element: S,
            $(_hasher: std::marker::PhantomData<fn() -> $h>,)?
        }

        impl<S $(, $h)?> $name<S $(, $h)?> {
            /// A serializer of sets whose elements `element` serializes.
            pub const fn new(element: S) -> Self {
                Self { element $(, _hasher: std::marker::PhantomData::<fn() -> $h>)? }
            }
        }

        impl<T: 'static + $($bound)*, S: TypeSerializer<T> + Clone $(, $h: BuildHasher + Default + Clone + std::fmt::Debug + Send + Sync + 'static)?>
            TypeSerializer<$coll> for $name<S $(, $h)?>
        {
            fn serialize(&self, value: &$coll, out: &mut DataOutputView) -> Result<()> {
                write_len::<T>(out, value.len(), self.element.min_length())?;
                for item in value {
                    self.element.serialize(item, out)?;
                }
                Ok(())
            }
            fn deserialize(&self, input: &mut DataInputView<'_>) -> Result<$coll> {
                let n = read_len::<T>(input, self.element.min_length())?;
                let mut set = <$coll>::default();
                for _ in 0..n {
                    if !set.insert(self.element.deserialize(input)?) {
                        return Err(duplicate());
                    }
                }
                Ok(set)
            }
            fn copy(&self, value: &$coll) -> $coll {
                value.iter().map(|v| self.element.copy(v)).collect()
            }
            fn skip(&self, input: &mut DataInputView<'_>) -> Result<()> {
                let n = input.read_len(self.element.min_length())?;
                self.element.skip_many(n, input)
            }
            fn snapshot(&self) -> SerializerSnapshot {
                SerializerSnapshot::new(kinds::SET, 1).with_nested(vec![self.element.snapshot()])
            }
            fn resolve(&self, old: &SerializerSnapshot, registry: &SnapshotRegistry) -> Compatibility<$coll> {
                resolve_collection(<Self as TypeSerializer<$coll>>::snapshot(self), old, &self.element, registry, |items| {
                    collect_set(items, |s: &mut $coll, v| s.insert(v))
                })
            }
        }
    };
}

set_impl!(HashSetSerializer, "Serializes `HashSet<T, H>` with the element serializer `S`, in iteration order.",
    HashSet<T, H>, [Eq + Hash], H);
set_impl!(
    BTreeSetSerializer,
    "Serializes `BTreeSet<T>` with the element serializer `S`, in sorted order.",
    BTreeSet<T>,
    [Ord],
);

/// The type-free serializer of the set layout: the elements in stored order, a repeated
/// element (by its bytes) refused as the typed sets refuse it.
#[derive(Debug)]
struct RestoredSet {
    element: RestoredSerializer,
    snapshot: SerializerSnapshot,
}

pub(crate) fn restore(
    snapshot: &SerializerSnapshot,
    registry: &SnapshotRegistry,
) -> Result<RestoredSerializer> {
    let element = registry.restore(snapshot.nested_at(0)?)?;
    Ok(std::sync::Arc::new(RestoredSet {
        element,
        snapshot: snapshot.clone(),
    }))
}

impl TypeSerializer<Value> for RestoredSet {
    fn serialize(&self, value: &Value, out: &mut DataOutputView) -> Result<()> {
        let Value::Set(items) = value else {
            return Err(crate::restoring::mismatch(self, value));
        };
        write_len::<Value>(out, items.len(), self.element.min_length())?;
        items
            .iter()
            .try_for_each(|item| self.element.serialize(item, out))
    }
    fn deserialize(&self, input: &mut DataInputView<'_>) -> Result<Value> {
        let min = self.element.min_length();
        let n = read_len::<Value>(input, min)?;
        let mut seen = HashSet::with_capacity(crate::capacity_for::<&[u8]>(n, min));
        let mut items = with_capacity(n, min);
        for _ in 0..n {
            let start = input.position();
            items.push(self.element.deserialize(input)?);
            if !seen.insert(input.consumed_since(start)) {
                return Err(duplicate());
            }
        }
        Ok(Value::Set(items))
    }
    fn copy(&self, value: &Value) -> Value {
        value.clone()
    }
    fn skip(&self, input: &mut DataInputView<'_>) -> Result<()> {
        let n = read_len::<Value>(input, self.element.min_length())?;
        self.element.skip_many(n, input)
    }
    fn snapshot(&self) -> SerializerSnapshot {
        self.snapshot.clone()
    }
}
