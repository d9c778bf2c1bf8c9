//! Flink's `MapSerializer` (`java.util.Map`): an `int` size, then per entry the key and the
//! value behind a null marker (`true` for a null value).
//!
//! The value serializer of [`MapSerializer`] is the marker and the value together:
//! [`NotNull`] for maps whose values are never null, [`Nullable`] for `Option` values.
//! Type extraction (Flink 2.x, `NullableMapTypeInfo`) also wraps the key and the whole map
//! in a `NullableSerializer`, which [`FlinkType`](crate::FlinkType) gives `HashMap` and
//! `BTreeMap`.
//!
//! Entries are written in the Rust map's iteration order (Java writes its map's), so a
//! `Vec<(K, V)>` keeps the order of Flink's bytes; reading a `HashMap` or `BTreeMap`
//! refuses a key that appears twice.

use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasher, Hash};

use typeinfo::{DataInputView, DataOutputView, Error, Result, SerializerSnapshot, TypeSerializer};

use crate::java_io;
use crate::layout::nullable::{NotNull, Nullable};
use crate::snapshot;

/// `java.util.Map` as `Vec<(K, V)>`, `BTreeMap<K, V>` or `HashMap<K, V>`: Flink's
/// `MapSerializer` with key serializer `KS` and value framing `VS` (see the module docs).
///
/// # Examples
///
/// ```
/// use typeinfo::to_bytes;
/// use typeinfo_flink_compat::{IntSerializer, MapSerializer, StringSerializer};
///
/// # fn main() -> typeinfo::Result<()> {
/// let map = MapSerializer::with_null_values(StringSerializer, IntSerializer);
/// let bytes = to_bytes(&map, &vec![("a".to_owned(), None::<i32>)])?;
/// assert_eq!(bytes, [0, 0, 0, 1, 2, b'a', 1]);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MapSerializer<KS, VS> {
    key: KS,
    value: VS,
}

impl<KS, S> MapSerializer<KS, NotNull<S>> {
    /// Maps whose values are never null.
    pub const fn new(key: KS, value: S) -> Self {
        Self::from_parts(key, NotNull(value))
    }
}

impl<KS, S> MapSerializer<KS, Nullable<S>> {
    /// Maps whose values may be null (`Option` values).
    pub const fn with_null_values(key: KS, value: S) -> Self {
        Self::from_parts(key, Nullable::new(value))
    }
}

impl<KS, VS> MapSerializer<KS, VS> {
    /// A map of the key serializer and the value's framing ([`NotNull`] or [`Nullable`]).
    pub const fn from_parts(key: KS, value: VS) -> Self {
        Self { key, value }
    }

    fn write_entries<'a, K: 'static, V: 'static>(
        &self,
        len: usize,
        entries: impl Iterator<Item = (&'a K, &'a V)>,
        out: &mut DataOutputView,
    ) -> Result<()>
    where
        KS: TypeSerializer<K>,
        VS: TypeSerializer<V>,
    {
        java_io::write_len(out, len)?;
        for (k, v) in entries {
            self.key.serialize(k, out)?;
            self.value.serialize(v, out)?;
        }
        Ok(())
    }

    fn read_entries<K: 'static, V: 'static>(
        &self,
        input: &mut DataInputView<'_>,
        mut insert: impl FnMut(K, V) -> bool,
    ) -> Result<()>
    where
        KS: TypeSerializer<K>,
        VS: TypeSerializer<V>,
    {
        let min = self.key.min_length() + 1;
        let len = java_io::read_len(input, min)?;
        for _ in 0..len {
            let k = self.key.deserialize(input)?;
            let v = self.value.deserialize(input)?;
            if !insert(k, v) {
                return Err(Error::custom("map bytes hold the same key twice"));
            }
        }
        Ok(())
    }

    fn skip_entries<K: 'static, V: 'static>(&self, input: &mut DataInputView<'_>) -> Result<()>
    where
        KS: TypeSerializer<K>,
        VS: TypeSerializer<V>,
    {
        let len = java_io::read_len(input, self.key.min_length() + 1)?;
        for _ in 0..len {
            self.key.skip(input)?;
            self.value.skip(input)?;
        }
        Ok(())
    }

    fn map_snapshot<K: 'static, V: 'static>(&self) -> SerializerSnapshot
    where
        KS: TypeSerializer<K>,
        VS: TypeSerializer<V>,
    {
        // The value's own null marker is the map's (Flink's snapshot has the bare value).
        let value = crate::layout::nullable::without_marker(self.value.snapshot());
        snapshot::of("MapSerializer", vec![self.key.snapshot(), value])
    }
}

impl<K, V, KS, VS> TypeSerializer<Vec<(K, V)>> for MapSerializer<KS, VS>
where
    K: 'static,
    V: 'static,
    KS: TypeSerializer<K>,
    VS: TypeSerializer<V>,
{
    fn serialize(&self, value: &Vec<(K, V)>, out: &mut DataOutputView) -> Result<()> {
        self.write_entries(value.len(), value.iter().map(|(k, v)| (k, v)), out)
    }
    fn deserialize(&self, input: &mut DataInputView<'_>) -> Result<Vec<(K, V)>> {
        let mut out = Vec::new();
        self.read_entries(input, |k, v| {
            out.push((k, v));
            true
        })?;
        Ok(out)
    }
    fn copy(&self, value: &Vec<(K, V)>) -> Vec<(K, V)> {
        value
            .iter()
            .map(|(k, v)| (self.key.copy(k), self.value.copy(v)))
            .collect()
    }
    fn skip(&self, input: &mut DataInputView<'_>) -> Result<()> {
        self.skip_entries::<K, V>(input)
    }
    fn snapshot(&self) -> SerializerSnapshot {
        self.map_snapshot::<K, V>()
    }
}

impl<K, V, KS, VS> TypeSerializer<BTreeMap<K, V>> for MapSerializer<KS, VS>
where
    K: Ord + 'static,
    V: 'static,
    KS: TypeSerializer<K>,
    VS: TypeSerializer<V>,
{
    fn serialize(&self, value: &BTreeMap<K, V>, out: &mut DataOutputView) -> Result<()> {
        self.write_entries(value.len(), value.iter(), out)
    }
    fn deserialize(&self, input: &mut DataInputView<'_>) -> Result<BTreeMap<K, V>> {
        let mut out = BTreeMap::new();
        self.read_entries(input, |k, v| out.insert(k, v).is_none())?;
        Ok(out)
    }
    fn copy(&self, value: &BTreeMap<K, V>) -> BTreeMap<K, V> {
        value
            .iter()
            .map(|(k, v)| (self.key.copy(k), self.value.copy(v)))
            .collect()
    }
    fn skip(&self, input: &mut DataInputView<'_>) -> Result<()> {
        self.skip_entries::<K, V>(input)
    }
    fn snapshot(&self) -> SerializerSnapshot {
        self.map_snapshot::<K, V>()
    }
}

impl<K, V, H, KS, VS> TypeSerializer<HashMap<K, V, H>> for MapSerializer<KS, VS>
where
    K: Eq + Hash + 'static,
    V: 'static,
    H: BuildHasher + Default + Send + Sync + 'static,
    KS: TypeSerializer<K>,
    VS: TypeSerializer<V>,
{
    fn serialize(&self, value: &HashMap<K, V, H>, out: &mut DataOutputView) -> Result<()> {
        self.write_entries(value.len(), value.iter(), out)
    }
    fn deserialize(&self, input: &mut DataInputView<'_>) -> Result<HashMap<K, V, H>> {
        let mut out = HashMap::with_hasher(H::default());
        self.read_entries(input, |k, v| out.insert(k, v).is_none())?;
        Ok(out)
    }
    fn copy(&self, value: &HashMap<K, V, H>) -> HashMap<K, V, H> {
        let mut out = HashMap::with_capacity_and_hasher(value.len(), H::default());
        out.extend(
            value
                .iter()
                .map(|(k, v)| (self.key.copy(k), self.value.copy(v))),
        );
        out
    }
    fn skip(&self, input: &mut DataInputView<'_>) -> Result<()> {
        self.skip_entries::<K, V>(input)
    }
    fn snapshot(&self) -> SerializerSnapshot {
        self.map_snapshot::<K, V>()
    }
}
