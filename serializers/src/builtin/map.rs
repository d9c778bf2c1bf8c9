//! `HashMap<K, V>` and `BTreeMap<K, V>`: a varint entry count, then key and value of each
//! entry.
//!
//! A `BTreeMap` writes in key order, so equal maps give equal bytes; a `HashMap` writes in
//! iteration order, which is why it is not a key type. Reading bytes that repeat a key is
//! an error, not a silent loss.

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasher, Hash};

use super::list::{read_len, with_capacity, write_len};
use super::{check_kind, read_seq, resolve_child};
use crate::comparator::TypeComparator;
use crate::compatibility::{MigrationReader, PathSegment};
use crate::error::{Error, Result};
use crate::input::DataInputView;
use crate::output::DataOutputView;
use crate::serializer::TypeSerializer;
use crate::serializer::{Compatibility, FieldReader};
use crate::serializer::{RestoredSerializer, SnapshotRegistry};
use crate::snapshot::{kinds, SerializerSnapshot};
use crate::value::Value;

#[cold]
#[inline(never)]
fn duplicate() -> Error {
    Error::custom("map bytes repeat a key")
}

/// The smallest serialized size of an entry.
#[inline(always)]
fn entry_min(key: usize, value: usize) -> usize {
    key.saturating_add(value)
}

macro_rules! map_impl {
    ($name:ident, $doc:literal, $coll:ty, [$($bound:tt)*], $($h:ident)?) => {
        #[doc = $doc]
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
        pub struct $name<KS, VS $(, $h = std::collections::hash_map::RandomState)?> {
            key: KS,
            value: VS,
            $(_hasher: std::marker::PhantomData<fn() -> $h>,)?
        }

        impl<KS, VS $(, $h)?> $name<KS, VS $(, $h)?> {
            /// A serializer of maps with these key and value serializers.
            pub const fn new(key: KS, value: VS) -> Self {
                Self { key, value $(, _hasher: std::marker::PhantomData::<fn() -> $h>)? }
            }
        }

        impl<K: 'static + $($bound)*, V: 'static, KS, VS $(, $h)?> TypeSerializer<$coll> for $name<KS, VS $(, $h)?>
        where
            KS: TypeSerializer<K> + Clone,
            VS: TypeSerializer<V> + Clone,
            $($h: BuildHasher + Default + Clone + std::fmt::Debug + Send + Sync + 'static,)?
        {
            fn serialize(&self, value: &$coll, out: &mut DataOutputView) -> Result<()> {
                write_len::<(K, V)>(out, value.len(), entry_min(self.key.min_length(), self.value.min_length()))?;
                for (k, v) in value {
                    self.key.serialize(k, out)?;
                    self.value.serialize(v, out)?;
                }
                Ok(())
            }
            fn deserialize(&self, input: &mut DataInputView<'_>) -> Result<$coll> {
                let n = read_len::<(K, V)>(input, entry_min(self.key.min_length(), self.value.min_length()))?;
                let mut map = <$coll>::default();
                for _ in 0..n {
                    let k = self.key.deserialize(input)?;
                    let v = self.value.deserialize(input)?;
                    if map.insert(k, v).is_some() {
                        return Err(duplicate());
                    }
                }
                Ok(map)
            }
            fn copy(&self, value: &$coll) -> $coll {
                value.iter().map(|(k, v)| (self.key.copy(k), self.value.copy(v))).collect()
            }
            fn skip(&self, input: &mut DataInputView<'_>) -> Result<()> {
                let n = read_len::<(K, V)>(input, entry_min(self.key.min_length(), self.value.min_length()))?;
                for _ in 0..n {
                    self.key.skip(input)?;
                    self.value.skip(input)?;
                }
                Ok(())
            }
            fn snapshot(&self) -> SerializerSnapshot {
                SerializerSnapshot::new(kinds::MAP, 1).with_nested(vec![self.key.snapshot(), self.value.snapshot()])
            }
            fn resolve(&self, old: &SerializerSnapshot, registry: &SnapshotRegistry) -> Compatibility<$coll> {
                if let Err(inc) = check_kind(&<Self as TypeSerializer<$coll>>::snapshot(self), old) {
                    return Compatibility::Incompatible(inc);
                }
                let key = match resolve_child(&self.key, old, 0, registry, PathSegment::MapKey) {
                    Ok(r) => r,
                    Err(inc) => return Compatibility::Incompatible(inc),
                };
                let value = match resolve_child(&self.value, old, 1, registry, PathSegment::MapValue) {
                    Ok(r) => r,
                    Err(inc) => return Compatibility::Incompatible(inc),
                };
                if let (FieldReader::Current(_), FieldReader::Current(_)) = (&key, &value) {
                    return Compatibility::AsIs;
                }
                Compatibility::AfterMigration(MigrationReader::new(move |input| {
                    let entries = read_seq(input, |i| Ok((key.read(i)?, value.read(i)?)))?;
                    let mut map = <$coll>::default();
                    for (k, v) in entries {
                        if map.insert(k, v).is_some() {
                            return Err(duplicate());
                        }
                    }
                    Ok(map)
                }))
            }
        }
    };
}

/// The type-free serializer of the map layout: the entries in stored order, a repeated
/// key (by its bytes) refused as the typed maps refuse it.
#[derive(Debug)]
struct RestoredMap {
    key: RestoredSerializer,
    value: RestoredSerializer,
    snapshot: SerializerSnapshot,
}

pub(crate) fn restore(
    snapshot: &SerializerSnapshot,
    registry: &SnapshotRegistry,
) -> Result<RestoredSerializer> {
    let key = registry.restore(snapshot.nested_at(0)?)?;
    let value = registry.restore(snapshot.nested_at(1)?)?;
    Ok(std::sync::Arc::new(RestoredMap {
        key,
        value,
        snapshot: snapshot.clone(),
    }))
}

impl TypeSerializer<Value> for RestoredMap {
    fn serialize(&self, value: &Value, out: &mut DataOutputView) -> Result<()> {
        let Value::Map(entries) = value else {
            return Err(crate::restoring::mismatch(self, value));
        };
        let min = entry_min(self.key.min_length(), self.value.min_length());
        write_len::<(Value, Value)>(out, entries.len(), min)?;
        for (k, v) in entries {
            self.key.serialize(k, out)?;
            self.value.serialize(v, out)?;
        }
        Ok(())
    }
    fn deserialize(&self, input: &mut DataInputView<'_>) -> Result<Value> {
        let min = entry_min(self.key.min_length(), self.value.min_length());
        let n = read_len::<(Value, Value)>(input, min)?;
        let mut seen =
            std::collections::HashSet::with_capacity(crate::capacity_for::<&[u8]>(n, min));
        let mut entries = with_capacity(n, min);
        for _ in 0..n {
            let start = input.position();
            let key = self.key.deserialize(input)?;
            if !seen.insert(input.consumed_since(start)) {
                return Err(duplicate());
            }
            entries.push((key, self.value.deserialize(input)?));
        }
        Ok(Value::Map(entries))
    }
    fn copy(&self, value: &Value) -> Value {
        value.clone()
    }
    fn skip(&self, input: &mut DataInputView<'_>) -> Result<()> {
        let n = read_len::<(Value, Value)>(
            input,
            entry_min(self.key.min_length(), self.value.min_length()),
        )?;
        for _ in 0..n {
            self.key.skip(input)?;
            self.value.skip(input)?;
        }
        Ok(())
    }
    fn snapshot(&self) -> SerializerSnapshot {
        self.snapshot.clone()
    }
}

map_impl!(HashMapSerializer, "Serializes `HashMap<K, V, H>` with a key and a value serializer, in iteration order.",
    HashMap<K, V, H>, [Eq + Hash], H);
map_impl!(BTreeMapSerializer, "Serializes `BTreeMap<K, V>` with a key and a value serializer, in key order.",
    BTreeMap<K, V>, [Ord],);

/// Orders `BTreeMap`s as their `Ord` does: entries lexicographically, key then value.
///
/// The normalized key writes `0x01`, the key's and the value's keys for each entry, then
/// `0x00`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct MapComparator<KC, VC> {
    key: KC,
    value: VC,
}

impl<KC, VC> MapComparator<KC, VC> {
    /// A comparator of maps with these key and value comparators.
    pub const fn new(key: KC, value: VC) -> Self {
        Self { key, value }
    }
}

impl<K: 'static, V: 'static, KC: TypeComparator<K>, VC: TypeComparator<V>>
    TypeComparator<BTreeMap<K, V>> for MapComparator<KC, VC>
{
    fn compare(&self, a: &BTreeMap<K, V>, b: &BTreeMap<K, V>) -> Ordering {
        let mut a = a.iter();
        let mut b = b.iter();
        loop {
            match (a.next(), b.next()) {
                (Some((ka, va)), Some((kb, vb))) => {
                    match self
                        .key
                        .compare(ka, kb)
                        .then_with(|| self.value.compare(va, vb))
                    {
                        Ordering::Equal => continue,
                        other => return other,
                    }
                }
                (None, None) => return Ordering::Equal,
                (None, Some(_)) => return Ordering::Less,
                (Some(_), None) => return Ordering::Greater,
            }
        }
    }
    fn compare_serialized(
        &self,
        a: &mut DataInputView<'_>,
        b: &mut DataInputView<'_>,
    ) -> Result<Ordering> {
        let la = a.read_count()?;
        let lb = b.read_count()?;
        for _ in 0..la.min(lb) {
            match self.key.compare_serialized(a, b)? {
                Ordering::Equal => {}
                other => return Ok(other),
            }
            match self.value.compare_serialized(a, b)? {
                Ordering::Equal => {}
                other => return Ok(other),
            }
        }
        Ok(la.cmp(&lb))
    }
    fn write_normalized_key(&self, value: &BTreeMap<K, V>, out: &mut Vec<u8>) {
        for (k, v) in value {
            out.push(1);
            self.key.write_normalized_key(k, out);
            self.value.write_normalized_key(v, out);
        }
        out.push(0);
    }
    fn normalized_key_len(&self) -> Option<usize> {
        None
    }
}
