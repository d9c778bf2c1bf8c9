//! A keyed state of a Flink savepoint read into Rust types: the state's raw entries over
//! all subtasks ([`RawKeyedState`]), decoded by the Rust serializers of this crate after
//! Flink's snapshots of the key's and the value's serializers resolve against them as they
//! are (a layout that would need a migration, or is incompatible, is an error naming the
//! state and the change; the type-free dump reads any layout this crate knows).

use typeinfo::{Compatibility, DataInputView, Error, Result, TypeSerializer, Verdict};

use crate::flink_snapshot::migration::resolve_pojo;
use crate::flink_snapshot::read::FlinkSnapshot;
use crate::flink_snapshot::resolve::resolve;
use crate::java_io;
use crate::layout::pojo::FlinkPojo;
use crate::savepoint::keyed::{composite_part, RawEntry};
use crate::savepoint::meta_info::StateMetaInfo;
use crate::savepoint::value::{read_value, FlinkValue};
use crate::FlinkType;

/// One keyed state's undecoded entries over all subtasks, with what decodes them.
#[derive(Debug, Clone, PartialEq)]
pub struct RawKeyedState {
    /// The state's meta info (name, kind, serializer snapshots).
    pub meta: StateMetaInfo,
    /// The snapshot of the operator's key serializer.
    pub key_serializer: FlinkSnapshot,
    /// The bytes of the key-group prefix (1 when max parallelism is at most 128, else 2).
    pub prefix_bytes: usize,
    /// The entries.
    pub entries: Vec<RawEntry>,
}

/// One typed entry: the key, the namespace (type-free: `VoidNamespace` or a window) and the
/// value.
#[derive(Debug, Clone, PartialEq)]
pub struct TypedEntry<K, V> {
    /// The key.
    pub key: K,
    /// The namespace.
    pub namespace: FlinkValue,
    /// The value.
    pub value: V,
}

impl RawKeyedState {
    fn check<T, S: TypeSerializer<T>>(
        &self,
        role: &str,
        old: &FlinkSnapshot,
        new: &S,
    ) -> Result<()> {
        match resolve(old, new) {
            Ok(Verdict::AsIs) => Ok(()),
            Ok(verdict) => Err(Error::custom(format!(
                "state `{}`, {role}: {verdict:?}: the typed reader takes layouts as they are (the dump reads them type-free)",
                self.meta.name
            ))),
            Err(inc) => Err(Error::custom(format!(
                "state `{}`, {role}: incompatible: {inc}",
                self.meta.name
            ))),
        }
    }

    fn expect_kind(&self, kinds: &[&str]) -> Result<()> {
        if kinds.contains(&self.meta.kind()) {
            Ok(())
        } else {
            Err(Error::custom(format!(
                "state `{}` is a {} state, not {}",
                self.meta.name,
                self.meta.kind(),
                kinds.join(" or ")
            )))
        }
    }

    /// Reads the key and the namespace of an entry; the rest of the key's bytes follow.
    fn key_and_namespace<'a, K, KS: TypeSerializer<K>>(
        &self,
        raw: &'a RawEntry,
        key: &KS,
    ) -> Result<(K, FlinkValue, DataInputView<'a>)> {
        let mut input = DataInputView::new(&raw.key);
        input.skip_bytes(self.prefix_bytes)?;
        let namespace_serializer = self.meta.serializer("NAMESPACE_SERIALIZER")?;
        let ambiguous =
            key.fixed_length().is_none() && !super::keyed::is_fixed_length(namespace_serializer);
        let start = input.position();
        let k = key.deserialize(&mut input)?;
        if ambiguous {
            let len = input.position() - start;
            super::keyed::skip_length_bytes(&mut input, len)?;
        }
        let start = input.position();
        let namespace = read_value(namespace_serializer, &mut input)?;
        if ambiguous {
            let len = input.position() - start;
            super::keyed::skip_length_bytes(&mut input, len)?;
        }
        Ok((k, namespace, input))
    }

    fn decode_each<T>(&self, mut f: impl FnMut(&RawEntry) -> Result<T>) -> Result<Vec<T>> {
        self.entries
            .iter()
            .map(|raw| {
                f(raw).map_err(|e| {
                    Error::custom(format!(
                        "state `{}`, key group {}: {e}",
                        self.meta.name, raw.key_group
                    ))
                })
            })
            .collect()
    }

    /// A value, reducing or aggregating state's entries.
    ///
    /// # Errors
    ///
    /// Another kind of state; a key or value layout that does not resolve as is against
    /// `key` or `value`; corrupt bytes.
    pub fn values<K, V, KS, VS>(&self, key: &KS, value: &VS) -> Result<Vec<TypedEntry<K, V>>>
    where
        KS: TypeSerializer<K>,
        VS: TypeSerializer<V>,
    {
        self.expect_kind(&["VALUE", "REDUCING", "AGGREGATING"])?;
        self.check("key", &self.key_serializer, key)?;
        self.check("value", self.meta.serializer("VALUE_SERIALIZER")?, value)?;
        self.decode_each(|raw| {
            let (k, namespace, rest) = self.key_and_namespace(raw, key)?;
            ensure_empty(&rest, "key")?;
            let mut input = DataInputView::new(&raw.value);
            let v = value.deserialize(&mut input)?;
            ensure_empty(&input, "value")?;
            Ok(TypedEntry {
                key: k,
                namespace,
                value: v,
            })
        })
    }

    /// A list state's entries: each key's (and namespace's) elements.
    ///
    /// # Errors
    ///
    /// As [`values`](Self::values), for the list's element.
    pub fn lists<K, V, KS, VS>(&self, key: &KS, element: &VS) -> Result<Vec<TypedEntry<K, Vec<V>>>>
    where
        KS: TypeSerializer<K>,
        VS: TypeSerializer<V>,
    {
        self.expect_kind(&["LIST"])?;
        self.check("key", &self.key_serializer, key)?;
        let list = self.meta.serializer("VALUE_SERIALIZER")?;
        self.check(
            "element",
            composite_part(list, "ListSerializer", 0)?,
            element,
        )?;
        self.decode_each(|raw| {
            let (k, namespace, rest) = self.key_and_namespace(raw, key)?;
            ensure_empty(&rest, "key")?;
            let mut input = DataInputView::new(&raw.value);
            let mut items = Vec::new();
            while !input.is_empty() {
                if !items.is_empty() && input.read_u8()? != b',' {
                    return Err(Error::custom("list state elements without their delimiter"));
                }
                items.push(element.deserialize(&mut input)?);
            }
            Ok(TypedEntry {
                key: k,
                namespace,
                value: items,
            })
        })
    }

    /// A map state's entries, one per user key: `(user key, value)`, the value `None` when
    /// Flink holds a null.
    ///
    /// # Errors
    ///
    /// As [`values`](Self::values), for the map's user key and value.
    #[allow(clippy::type_complexity)]
    pub fn maps<K, UK, UV, KS, UKS, UVS>(
        &self,
        key: &KS,
        user_key: &UKS,
        user_value: &UVS,
    ) -> Result<Vec<TypedEntry<K, (UK, Option<UV>)>>>
    where
        KS: TypeSerializer<K>,
        UKS: TypeSerializer<UK>,
        UVS: TypeSerializer<UV>,
    {
        self.expect_kind(&["MAP"])?;
        self.check("key", &self.key_serializer, key)?;
        let map = self.meta.serializer("VALUE_SERIALIZER")?;
        self.check(
            "user key",
            composite_part(map, "MapSerializer", 0)?,
            user_key,
        )?;
        self.check(
            "user value",
            composite_part(map, "MapSerializer", 1)?,
            user_value,
        )?;
        self.decode_each(|raw| {
            let (k, namespace, mut rest) = self.key_and_namespace(raw, key)?;
            let uk = user_key.deserialize(&mut rest)?;
            ensure_empty(&rest, "key")?;
            let mut input = DataInputView::new(&raw.value);
            let uv = if java_io::read_bool(&mut input)? {
                None
            } else {
                Some(user_value.deserialize(&mut input)?)
            };
            ensure_empty(&input, "value")?;
            Ok(TypedEntry {
                key: k,
                namespace,
                value: (uk, uv),
            })
        })
    }
}

impl RawKeyedState {
    /// A timer state's timers (a `PRIORITY_QUEUE` state such as
    /// `_timer_state/event_user-timers` or `_timer_state/event_window-timers`): each
    /// timer's key, namespace and time.
    ///
    /// # Errors
    ///
    /// Another kind of state; a key layout that does not resolve as is against `key`;
    /// corrupt bytes.
    pub fn timers<K, KS: TypeSerializer<K>>(&self, key: &KS) -> Result<Vec<TypedEntry<K, i64>>> {
        self.expect_kind(&["PRIORITY_QUEUE"])?;
        let timer = self.meta.serializer("VALUE_SERIALIZER")?;
        self.check("key", composite_part(timer, "TimerSerializer", 0)?, key)?;
        let namespace_serializer = composite_part(timer, "TimerSerializer", 1)?;
        self.decode_each(|raw| {
            let mut input = DataInputView::new(&raw.key);
            input.skip_bytes(self.prefix_bytes)?;
            // TimerSerializer: the timestamp with its sign bit flipped, the key, the namespace.
            let time = java_io::read_i64(&mut input)? ^ i64::MIN;
            let k = key.deserialize(&mut input)?;
            let namespace = read_value(namespace_serializer, &mut input)?;
            ensure_empty(&input, "timer")?;
            Ok(TypedEntry {
                key: k,
                namespace,
                value: time,
            })
        })
    }
}

impl RawKeyedState {
    /// A value, reducing or aggregating state holding a POJO, read into the Rust POJO `V`
    /// even when the class changed since Flink wrote it: fields added (an `Option` or a
    /// `#[typeinfo(default)]` field takes its default), removed (skipped by their old
    /// snapshot) or renamed (`#[typeinfo(flink_alias = "oldName")]`), as a restore in
    /// Flink would migrate them (`PojoSerializerSnapshot`'s "compatible after migration").
    ///
    /// # Errors
    ///
    /// As [`values`](Self::values); a change that cannot migrate (a field's type changed,
    /// a field without a default missing from Flink's state) names the field.
    pub fn pojo_values<K, V, KS>(&self, key: &KS) -> Result<Vec<TypedEntry<K, V>>>
    where
        KS: TypeSerializer<K>,
        V: FlinkPojo + FlinkType,
    {
        self.expect_kind(&["VALUE", "REDUCING", "AGGREGATING"])?;
        self.check("key", &self.key_serializer, key)?;
        let reader = match resolve_pojo::<V>(self.meta.serializer("VALUE_SERIALIZER")?) {
            Compatibility::AsIs | Compatibility::Reconfigured(_) => None,
            Compatibility::AfterMigration(reader) => Some(reader),
            Compatibility::Incompatible(inc) => {
                return Err(Error::custom(format!(
                    "state `{}`, value: incompatible: {inc}",
                    self.meta.name
                )))
            }
        };
        let serializer = V::flink_serializer();
        self.decode_each(|raw| {
            let (k, namespace, rest) = self.key_and_namespace(raw, key)?;
            ensure_empty(&rest, "key")?;
            let mut input = DataInputView::new(&raw.value);
            let v = match &reader {
                Some(reader) => reader.read(&mut input)?,
                None => serializer.deserialize(&mut input)?,
            };
            ensure_empty(&input, "value")?;
            Ok(TypedEntry {
                key: k,
                namespace,
                value: v,
            })
        })
    }
}

fn ensure_empty(input: &DataInputView<'_>, what: &str) -> Result<()> {
    if input.is_empty() {
        Ok(())
    } else {
        Err(Error::custom(format!(
            "{} trailing bytes after the {what}",
            input.remaining()
        )))
    }
}
