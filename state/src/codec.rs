//! The typed side of a registered state that both backends share: its serializers, its
//! metadata, and how stored entries become today's.

use std::any::Any;

use typeinfo::{
    Comparable, DataInputView, DataOutputView, SerializerConfig, SnapshotRegistry, TypeInfo,
    TypeSerializer,
};

use crate::backend::{StateKind, StateMeta};
use crate::descriptor::{MapKey, StateNamespace, StateValue};
use crate::error::{Error, Result};
use crate::savepoint::{check_shape, part_transcoder, EntryTranscoder};

/// A registered state's serializers and metadata, without its values' types.
pub(crate) trait ErasedCodec: Send + Sync {
    fn meta(&self) -> &StateMeta;
    /// How entries stored under `stored` become today's.
    fn transcoder(
        &self,
        stored: &StateMeta,
        registry: &SnapshotRegistry,
    ) -> Result<EntryTranscoder>;
    /// Serializes a namespace given as `&dyn Any`; `None` when it has another type.
    fn write_namespace(&self, namespace: &dyn Any, out: &mut DataOutputView) -> Option<Result<()>>;
    /// For map state, a function that skips the user key at the start of a stored value.
    fn user_key_skipper(&self) -> Option<UserKeySkip> {
        None
    }
}

/// Skips one serialized user key.
pub(crate) type UserKeySkip =
    Box<dyn Fn(&mut DataInputView<'_>) -> typeinfo::Result<()> + Send + Sync>;

fn write_ns<N: 'static, S: TypeSerializer<N>>(
    serializer: &S,
    namespace: &dyn Any,
    out: &mut DataOutputView,
) -> Option<Result<()>> {
    namespace
        .downcast_ref::<N>()
        .map(|ns| serializer.serialize(ns, out).map_err(Into::into))
}

/// Value-like states (value, reducing, aggregating) and lists: a namespace and one value
/// serializer.
pub(crate) struct ValueCodec<N: TypeInfo, V: TypeInfo> {
    pub(crate) namespace: N::Serializer,
    pub(crate) value: V::Serializer,
    pub(crate) meta: StateMeta,
}

impl<N: StateNamespace, V: StateValue> ValueCodec<N, V> {
    pub(crate) fn new(
        name: &str,
        kind: StateKind,
        ttl: bool,
        config: &SerializerConfig,
    ) -> Result<Self> {
        let namespace = N::create_serializer(config)?;
        let value = V::create_serializer(config)?;
        // A list stores its elements back to back, without a count (as Flink's list state
        // does): elements that serialize to no bytes could not be counted back, so the list
        // would read back empty. With TTL each element carries its timestamp.
        if kind == StateKind::List && !ttl && value.fixed_length() == Some(0) {
            return Err(Error::InvalidConfig(format!(
                "list state `{name}`: its elements ({}) serialize to no bytes, so a list of them \
                 could not be read back; keep their count in a value state instead",
                std::any::type_name::<V>()
            )));
        }
        let meta = StateMeta {
            name: name.to_owned(),
            kind,
            ttl,
            namespace: namespace.snapshot(),
            values: vec![value.snapshot()],
        };
        Ok(Self {
            namespace,
            value,
            meta,
        })
    }
}

impl<N: StateNamespace, V: StateValue> ErasedCodec for ValueCodec<N, V> {
    fn meta(&self) -> &StateMeta {
        &self.meta
    }
    fn transcoder(
        &self,
        stored: &StateMeta,
        registry: &SnapshotRegistry,
    ) -> Result<EntryTranscoder> {
        check_shape(stored, &self.meta)?;
        let (namespace, ns_migrates) = part_transcoder(
            &self.namespace,
            &stored.namespace,
            registry,
            &stored.name,
            "namespace",
        )?;
        let part = if self.meta.kind == StateKind::List {
            "element"
        } else {
            "value"
        };
        let (value, v_migrates) =
            part_transcoder(&self.value, &stored.values[0], registry, &stored.name, part)?;
        let migrated = [("namespace", ns_migrates), (part, v_migrates)]
            .into_iter()
            .filter(|(_, m)| *m)
            .map(|(p, _)| p)
            .collect();
        Ok(EntryTranscoder {
            kind: self.meta.kind,
            ttl: self.meta.ttl,
            namespace,
            values: vec![value],
            migrated,
        })
    }
    fn write_namespace(&self, namespace: &dyn Any, out: &mut DataOutputView) -> Option<Result<()>> {
        write_ns::<N, _>(&self.namespace, namespace, out)
    }
}

/// Map states: a namespace, a user key (with its comparator, for ordered keys) and a user value.
pub(crate) struct MapCodec<N: TypeInfo, UK: Comparable, UV: TypeInfo> {
    pub(crate) namespace: N::Serializer,
    pub(crate) user_key: UK::Serializer,
    pub(crate) user_key_order: UK::Comparator,
    pub(crate) user_value: UV::Serializer,
    pub(crate) meta: StateMeta,
}

impl<N: StateNamespace, UK: MapKey, UV: StateValue> MapCodec<N, UK, UV> {
    pub(crate) fn new(name: &str, ttl: bool, config: &SerializerConfig) -> Result<Self> {
        let namespace = N::create_serializer(config)?;
        let user_key = UK::create_serializer(config)?;
        let user_value = UV::create_serializer(config)?;
        let meta = StateMeta {
            name: name.to_owned(),
            kind: StateKind::Map,
            ttl,
            namespace: namespace.snapshot(),
            values: vec![user_key.snapshot(), user_value.snapshot()],
        };
        Ok(Self {
            namespace,
            user_key,
            user_key_order: UK::comparator(),
            user_value,
            meta,
        })
    }
}

impl<N: StateNamespace, UK: MapKey, UV: StateValue> ErasedCodec for MapCodec<N, UK, UV> {
    fn meta(&self) -> &StateMeta {
        &self.meta
    }
    fn transcoder(
        &self,
        stored: &StateMeta,
        registry: &SnapshotRegistry,
    ) -> Result<EntryTranscoder> {
        check_shape(stored, &self.meta)?;
        let (namespace, ns_m) = part_transcoder(
            &self.namespace,
            &stored.namespace,
            registry,
            &stored.name,
            "namespace",
        )?;
        let (uk, uk_m) = part_transcoder(
            &self.user_key,
            &stored.values[0],
            registry,
            &stored.name,
            "user key",
        )?;
        let (uv, uv_m) = part_transcoder(
            &self.user_value,
            &stored.values[1],
            registry,
            &stored.name,
            "user value",
        )?;
        let migrated = [
            ("namespace", ns_m),
            ("user key", uk_m),
            ("user value", uv_m),
        ]
        .into_iter()
        .filter(|(_, m)| *m)
        .map(|(p, _)| p)
        .collect();
        Ok(EntryTranscoder {
            kind: StateKind::Map,
            ttl: self.meta.ttl,
            namespace,
            values: vec![uk, uv],
            migrated,
        })
    }
    fn write_namespace(&self, namespace: &dyn Any, out: &mut DataOutputView) -> Option<Result<()>> {
        write_ns::<N, _>(&self.namespace, namespace, out)
    }
    fn user_key_skipper(&self) -> Option<UserKeySkip> {
        let s = self.user_key.clone();
        Some(Box::new(move |input| s.skip(input)))
    }
}
