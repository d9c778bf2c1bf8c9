//! Tuples of 1 to 12 elements and `()`: the elements back to back.

use std::cmp::Ordering;

use super::{check_kind, resolve_child};
use crate::comparator::TypeComparator;
use crate::compatibility::{MigrationReader, PathSegment};
use crate::error::Result;
use crate::input::DataInputView;
use crate::output::DataOutputView;
use crate::serializer::TypeSerializer;
use crate::serializer::{Compatibility, FieldReader};
use crate::serializer::{RestoredSerializer, SnapshotRegistry};
use crate::snapshot::{kinds, SerializerSnapshot};

/// The type-free serializer of the tuple layout, with the parts its snapshot holds.
#[derive(Debug)]
struct RestoredTuple {
    parts: Vec<RestoredSerializer>,
    snapshot: SerializerSnapshot,
}

pub(crate) fn restore(
    snapshot: &SerializerSnapshot,
    registry: &SnapshotRegistry,
) -> Result<RestoredSerializer> {
    let parts = snapshot
        .nested()
        .iter()
        .map(|s| registry.restore(s))
        .collect::<Result<_>>()?;
    Ok(std::sync::Arc::new(RestoredTuple {
        parts,
        snapshot: snapshot.clone(),
    }))
}

impl TypeSerializer<crate::Value> for RestoredTuple {
    fn serialize(&self, value: &crate::Value, out: &mut DataOutputView) -> Result<()> {
        match value {
            crate::Value::Tuple(items) if items.len() == self.parts.len() => self
                .parts
                .iter()
                .zip(items)
                .try_for_each(|(p, item)| p.serialize(item, out)),
            _ => Err(crate::restoring::mismatch(self, value)),
        }
    }
    fn deserialize(&self, input: &mut DataInputView<'_>) -> Result<crate::Value> {
        let mut items = Vec::with_capacity(self.parts.len());
        for p in &self.parts {
            items.push(p.deserialize(input)?);
        }
        Ok(crate::Value::Tuple(items))
    }
    fn copy(&self, value: &crate::Value) -> crate::Value {
        value.clone()
    }
    fn skip(&self, input: &mut DataInputView<'_>) -> Result<()> {
        self.parts.iter().try_for_each(|p| p.skip(input))
    }
    fn fixed_length(&self) -> Option<usize> {
        self.parts
            .iter()
            .try_fold(0usize, |acc, p| acc.checked_add(p.fixed_length()?))
    }
    fn min_length(&self) -> usize {
        self.parts
            .iter()
            .fold(0usize, |acc, p| acc.saturating_add(p.min_length()))
    }
    fn snapshot(&self) -> SerializerSnapshot {
        self.snapshot.clone()
    }
}

/// Serializes a tuple with a tuple of element serializers: `TupleSerializer((A, B))`
/// serializes `(a, b)`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct TupleSerializer<S>(pub S);

/// Orders tuples lexicographically with a tuple of element comparators; the normalized
/// key is the elements' keys in a row.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct TupleComparator<C>(pub C);

macro_rules! tuple_impl {
    ($(($T:ident, $S:ident, $i:tt)),+) => {
        impl<$($T: 'static,)+ $($S: TypeSerializer<$T> + Clone,)+> TypeSerializer<($($T,)+)> for TupleSerializer<($($S,)+)> {
            #[inline]
            fn serialize(&self, value: &($($T,)+), out: &mut DataOutputView) -> Result<()> {
                $(self.0.$i.serialize(&value.$i, out)?;)+
                Ok(())
            }
            #[inline]
            fn deserialize(&self, input: &mut DataInputView<'_>) -> Result<($($T,)+)> {
                Ok(($(self.0.$i.deserialize(input)?,)+))
            }
            fn deserialize_into(&self, reuse: &mut ($($T,)+), input: &mut DataInputView<'_>) -> Result<()> {
                $(self.0.$i.deserialize_into(&mut reuse.$i, input)?;)+
                Ok(())
            }
            fn copy(&self, value: &($($T,)+)) -> ($($T,)+) {
                ($(self.0.$i.copy(&value.$i),)+)
            }
            #[inline]
            fn skip(&self, input: &mut DataInputView<'_>) -> Result<()> {
                $(self.0.$i.skip(input)?;)+
                Ok(())
            }
            fn fixed_length(&self) -> Option<usize> {
                let len = 0usize;
                $(let len = len.checked_add(self.0.$i.fixed_length()?)?;)+
                Some(len)
            }
            fn is_immutable(&self) -> bool {
                true $(&& self.0.$i.is_immutable())+
            }
            fn min_length(&self) -> usize {
                0usize $(.saturating_add(self.0.$i.min_length()))+
            }
            fn snapshot(&self) -> SerializerSnapshot {
                SerializerSnapshot::new(kinds::TUPLE, 1).with_nested(vec![$(self.0.$i.snapshot()),+])
            }
            fn resolve(&self, old: &SerializerSnapshot, registry: &SnapshotRegistry) -> Compatibility<($($T,)+)> {
                let new = self.snapshot();
                if check_kind(&new, old).is_err() || old.nested().len() != new.nested().len() {
                    return Compatibility::Incompatible(crate::Incompatibility::between(old, &new));
                }
                let readers = ($(
                    match resolve_child(&self.0.$i, old, $i, registry, PathSegment::Index($i)) {
                        Ok(r) => r,
                        Err(inc) => return Compatibility::Incompatible(inc),
                    },
                )+);
                if true $(&& matches!(readers.$i, FieldReader::Current(_)))+ {
                    return Compatibility::AsIs;
                }
                Compatibility::AfterMigration(MigrationReader::new(move |input| {
                    Ok(($(readers.$i.read(input)?,)+))
                }))
            }
        }

        impl<$($T: 'static,)+ $($S: TypeComparator<$T>,)+> TypeComparator<($($T,)+)> for TupleComparator<($($S,)+)> {
            fn compare(&self, a: &($($T,)+), b: &($($T,)+)) -> Ordering {
                Ordering::Equal $(.then_with(|| self.0.$i.compare(&a.$i, &b.$i)))+
            }
            fn compare_serialized(&self, a: &mut DataInputView<'_>, b: &mut DataInputView<'_>) -> Result<Ordering> {
                $(
                    match self.0.$i.compare_serialized(a, b)? {
                        Ordering::Equal => {}
                        other => return Ok(other),
                    }
                )+
                Ok(Ordering::Equal)
            }
            fn write_normalized_key(&self, value: &($($T,)+), out: &mut Vec<u8>) {
                $(self.0.$i.write_normalized_key(&value.$i, out);)+
            }
            fn normalized_key_len(&self) -> Option<usize> {
                let len = 0usize;
                $(let len = len.checked_add(self.0.$i.normalized_key_len()?)?;)+
                Some(len)
            }
        }
    };
}

tuple_impl!((T0, S0, 0));
tuple_impl!((T0, S0, 0), (T1, S1, 1));
tuple_impl!((T0, S0, 0), (T1, S1, 1), (T2, S2, 2));
tuple_impl!((T0, S0, 0), (T1, S1, 1), (T2, S2, 2), (T3, S3, 3));
tuple_impl!(
    (T0, S0, 0),
    (T1, S1, 1),
    (T2, S2, 2),
    (T3, S3, 3),
    (T4, S4, 4)
);
tuple_impl!(
    (T0, S0, 0),
    (T1, S1, 1),
    (T2, S2, 2),
    (T3, S3, 3),
    (T4, S4, 4),
    (T5, S5, 5)
);
tuple_impl!(
    (T0, S0, 0),
    (T1, S1, 1),
    (T2, S2, 2),
    (T3, S3, 3),
    (T4, S4, 4),
    (T5, S5, 5),
    (T6, S6, 6)
);
tuple_impl!(
    (T0, S0, 0),
    (T1, S1, 1),
    (T2, S2, 2),
    (T3, S3, 3),
    (T4, S4, 4),
    (T5, S5, 5),
    (T6, S6, 6),
    (T7, S7, 7)
);
tuple_impl!(
    (T0, S0, 0),
    (T1, S1, 1),
    (T2, S2, 2),
    (T3, S3, 3),
    (T4, S4, 4),
    (T5, S5, 5),
    (T6, S6, 6),
    (T7, S7, 7),
    (T8, S8, 8)
);
tuple_impl!(
    (T0, S0, 0),
    (T1, S1, 1),
    (T2, S2, 2),
    (T3, S3, 3),
    (T4, S4, 4),
    (T5, S5, 5),
    (T6, S6, 6),
    (T7, S7, 7),
    (T8, S8, 8),
    (T9, S9, 9)
);
tuple_impl!(
    (T0, S0, 0),
    (T1, S1, 1),
    (T2, S2, 2),
    (T3, S3, 3),
    (T4, S4, 4),
    (T5, S5, 5),
    (T6, S6, 6),
    (T7, S7, 7),
    (T8, S8, 8),
    (T9, S9, 9),
    (T10, S10, 10)
);
tuple_impl!(
    (T0, S0, 0),
    (T1, S1, 1),
    (T2, S2, 2),
    (T3, S3, 3),
    (T4, S4, 4),
    (T5, S5, 5),
    (T6, S6, 6),
    (T7, S7, 7),
    (T8, S8, 8),
    (T9, S9, 9),
    (T10, S10, 10),
    (T11, S11, 11)
);
