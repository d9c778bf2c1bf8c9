//! A Flink job's state, converted into a typeinfo savepoint: the migration of a job from
//! Apache Flink 2.3 to typeinfo without losing its state.
//!
//! Flink's canonical savepoint is read by `typeinfo-flink-compat` (no JVM); each state is
//! read into Rust values through Flink's own byte layouts ([`FlinkType`](typeinfo_flink_compat::FlinkType),
//! a derived `#[typeinfo(flink_pojo = "...")]` struct, the serializers of
//! `typeinfo_flink_compat`) after Flink's serializer snapshots resolve against them as they
//! are, and written once, in typeinfo's own layout, through the bootstraps of this crate
//! ([`KeyedStateBootstrap`](crate::KeyedStateBootstrap),
//! [`OperatorStateBootstrap`](crate::OperatorStateBootstrap),
//! [`SavepointWriter`](crate::SavepointWriter)). The result is an ordinary typeinfo savepoint:
//! `inspect` and `verify` take it, and the Rust job restores it with
//! [`RestoreSettings`](typeinfo_runtime::RestoreSettings) (at any parallelism, on either
//! backend) and from then on checkpoints in its own format.
//!
//! The mapping is written by the user, one line per state, because only the user knows
//! which Rust operator continues which Flink operator and which Rust type a Java class
//! became: [`FlinkKeyedState`] reads one Flink operator's keyed states (value, reducing and
//! aggregating states by [`values`](FlinkKeyedState::values), lists, maps, a window's
//! contents under their windows, pending timers), [`operator_list_state`] and
//! [`broadcast_state`] its operator states. Namespaces become typeinfo's: `VoidNamespace`
//! is `()`, a `TimeWindow` is [`TimeWindow`]. A Flink timer state
//! (`_timer_state/event_user-timers`, `_timer_state/event_window-timers`, and the
//! `processing_` ones) gives each timer's domain from its name.
//!
//! Why a conversion step and not a restore that reads Flink's files: the runtime owns its
//! own layouts and knows nothing of Flink's (the dependency points from this crate to both);
//! the converted savepoint can be inspected and verified before the job starts; and every
//! later checkpoint is typeinfo's own, as if the job had always run here.
//!
//! Not converted: a source's position (Flink's `KafkaSource` keeps its splits in a
//! coordinator's state; a migrated job's sources start where the user points them, for
//! Kafka at the consumer group's committed offsets, which Flink commits on every
//! checkpoint); Kryo-serialized values and custom serializers without a Rust counterpart
//! (refused, naming the state and the class); a migration while reading other than a
//! POJO value's ([`pojo_values`](FlinkKeyedState::pojo_values) takes fields added, removed
//! and renamed; a POJO inside a list or map, or a field whose own type changed, is refused
//! by name: convert with the old struct, then migrate in typeinfo); operator and broadcast states of types other than Java's primitives, strings, lists
//! and nullables ([`FromFlinkValue`]).

use std::marker::PhantomData;

use typeinfo::TypeSerializer;
use typeinfo_flink_compat::savepoint::{
    read_operator_states, FlinkSavepoint, FlinkValue, RawKeyedState, TypedEntry,
};
use typeinfo_runtime::window::TimeWindow;
use typeinfo_runtime::TimeDomain;

use crate::error::{Error, Result};

/// A Flink namespace as its typeinfo counterpart.
pub trait FlinkNamespace: Sized {
    /// The namespace a Flink entry had.
    ///
    /// # Errors
    ///
    /// Another kind of namespace (named).
    fn from_flink(namespace: &FlinkValue) -> Result<Self>;
}

impl FlinkNamespace for () {
    fn from_flink(namespace: &FlinkValue) -> Result<Self> {
        match namespace {
            FlinkValue::VoidNamespace => Ok(()),
            other => Err(Error::Refused(format!(
                "the namespace {other} where `()` (VoidNamespace) was asked for"
            ))),
        }
    }
}

impl FlinkNamespace for TimeWindow {
    fn from_flink(namespace: &FlinkValue) -> Result<Self> {
        match namespace {
            FlinkValue::TimeWindow { start, end } => Ok(TimeWindow::new(*start, *end)),
            other => Err(Error::Refused(format!(
                "the namespace {other} where a TimeWindow was asked for"
            ))),
        }
    }
}

/// A Rust value from a type-free Flink value: what operator and broadcast states hold
/// (Java's primitives and their boxes, strings, lists, nullables).
pub trait FromFlinkValue: Sized {
    /// The value.
    ///
    /// # Errors
    ///
    /// A value of another Java type (named).
    fn from_flink(value: FlinkValue) -> Result<Self>;
}

fn mismatch<T>(value: &FlinkValue, rust: &str) -> Result<T> {
    Err(Error::Refused(format!(
        "the Flink value {value} where a {rust} was asked for"
    )))
}

macro_rules! from_flink_value {
    ($($rust:ty => $variant:ident),* $(,)?) => {$(
        impl FromFlinkValue for $rust {
            fn from_flink(value: FlinkValue) -> Result<Self> {
                match value {
                    FlinkValue::$variant(v) => Ok(v),
                    other => mismatch(&other, stringify!($rust)),
                }
            }
        }
    )*};
}

from_flink_value!(
    bool => Bool,
    i8 => Byte,
    i16 => Short,
    i32 => Int,
    i64 => Long,
    f32 => Float,
    f64 => Double,
    String => String,
);

impl<T: FromFlinkValue> FromFlinkValue for Option<T> {
    fn from_flink(value: FlinkValue) -> Result<Self> {
        match value {
            FlinkValue::Null => Ok(None),
            other => T::from_flink(other).map(Some),
        }
    }
}

impl<T: FromFlinkValue> FromFlinkValue for Vec<T> {
    fn from_flink(value: FlinkValue) -> Result<Self> {
        match value {
            FlinkValue::List(items) => items.into_iter().map(T::from_flink).collect(),
            other => mismatch(&other, "list"),
        }
    }
}

/// The keyed states of one operator of a Flink savepoint (by uid), read into Rust values
/// with the key's Flink serializer `KS`.
///
/// Each reader returns every entry over all of Flink's subtasks, in the shape the
/// bootstraps take: `(key, namespace, value)`.
pub struct FlinkKeyedState<'a, K, KS> {
    savepoint: &'a FlinkSavepoint,
    uid: String,
    key: KS,
    _k: PhantomData<fn() -> K>,
}

impl<K, KS> std::fmt::Debug for FlinkKeyedState<'_, K, KS> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FlinkKeyedState")
            .field("savepoint", &self.savepoint.dir())
            .field("uid", &self.uid)
            .finish_non_exhaustive()
    }
}

impl<'a, K, KS: TypeSerializer<K>> FlinkKeyedState<'a, K, KS> {
    /// The keyed states of the operator with uid `uid`, its keys read by `key` (Flink's
    /// layout of the key type: `typeinfo_flink_compat::StringSerializer` for a `String`
    /// key, `LongSerializer` for a `Long`, a derived POJO's `flink_serializer()`).
    ///
    /// # Errors
    ///
    /// [`Error::NotFound`] when the savepoint has no operator with that uid (the ones it
    /// has are named).
    pub fn new(savepoint: &'a FlinkSavepoint, uid: &str, key: KS) -> Result<Self> {
        operator(savepoint, uid)?;
        Ok(Self {
            savepoint,
            uid: uid.to_owned(),
            key,
            _k: PhantomData,
        })
    }

    fn context(&self, state: &str, e: impl std::fmt::Display) -> Error {
        Error::Refused(format!(
            "{}: operator `{}`, state `{state}`: {e}",
            self.savepoint.dir().display(),
            self.uid
        ))
    }

    /// State `state` decoded by `decode`, each entry made into the caller's shape by `shape`;
    /// every error names the savepoint, the operator and the state.
    fn read<E, T>(
        &self,
        state: &str,
        decode: impl FnOnce(&RawKeyedState) -> typeinfo::Result<Vec<TypedEntry<K, E>>>,
        shape: impl FnMut(TypedEntry<K, E>) -> Result<T>,
    ) -> Result<Vec<T>> {
        let raw = self
            .savepoint
            .keyed_state(&self.uid, state)
            .map_err(|e| self.context(state, e))?;
        decode(&raw)
            .map_err(|e| self.context(state, e))?
            .into_iter()
            .map(shape)
            .collect::<Result<_>>()
            .map_err(|e| self.context(state, e))
    }

    /// A value, reducing or aggregating state (a reducing state's reduced value, an
    /// aggregating state's accumulator; a window's contents under `TimeWindow`s).
    ///
    /// # Errors
    ///
    /// No such state, another kind of state, a key or value layout that does not resolve
    /// as is against the serializers, a namespace of another kind, damaged bytes: each
    /// naming the savepoint, the operator and the state.
    pub fn values<N: FlinkNamespace, V, VS: TypeSerializer<V>>(
        &self,
        state: &str,
        value: &VS,
    ) -> Result<Vec<(K, N, V)>> {
        self.read(state, |raw| raw.values(&self.key, value), keyed_entry)
    }

    /// A value, reducing or aggregating state holding a POJO, read into the derived
    /// `#[typeinfo(flink_pojo = "...")]` struct `V` even when the class changed since the
    /// savepoint (fields added, removed, renamed with `flink_alias`): Flink's
    /// "compatible after migration", done while converting.
    ///
    /// # Errors
    ///
    /// As [`values`](Self::values); a change that cannot migrate names the field.
    pub fn pojo_values<N, V>(&self, state: &str) -> Result<Vec<(K, N, V)>>
    where
        N: FlinkNamespace,
        V: typeinfo_flink_compat::FlinkPojo + typeinfo_flink_compat::FlinkType,
    {
        self.read(state, |raw| raw.pojo_values(&self.key), keyed_entry)
    }

    /// A list state: each key's (and namespace's) elements, read by `element`.
    ///
    /// # Errors
    ///
    /// As [`values`](Self::values).
    pub fn lists<N: FlinkNamespace, V, VS: TypeSerializer<V>>(
        &self,
        state: &str,
        element: &VS,
    ) -> Result<Vec<(K, N, Vec<V>)>> {
        self.read(state, |raw| raw.lists(&self.key, element), keyed_entry)
    }

    /// A map state outside windows: one `(key, user key, user value)` per map entry.
    ///
    /// # Errors
    ///
    /// As [`values`](Self::values); a null user value (a typeinfo map state holds none:
    /// make the Rust value an `Option` and read it with `typeinfo_flink_compat::Nullable`).
    pub fn maps<UK, UV, UKS, UVS>(
        &self,
        state: &str,
        user_key: &UKS,
        user_value: &UVS,
    ) -> Result<Vec<(K, UK, UV)>>
    where
        UKS: TypeSerializer<UK>,
        UVS: TypeSerializer<UV>,
    {
        self.read(
            state,
            |raw| raw.maps(&self.key, user_key, user_value),
            |e| {
                <()>::from_flink(&e.namespace)?;
                let (uk, uv) = e.value;
                let uv = uv.ok_or_else(|| Error::Refused("a null user value".to_owned()))?;
                Ok((e.key, uk, uv))
            },
        )
    }

    /// A timer state's pending timers, `(key, namespace, time, domain)`: Flink's
    /// `_timer_state/event_<service>` holds event-time timers, `_timer_state/processing_<service>`
    /// processing-time ones (`user-timers` for process functions, `window-timers` for a
    /// window operator, namespaced by window).
    ///
    /// # Errors
    ///
    /// As [`values`](Self::values); a state whose name is not a timer state's.
    pub fn timers<N: FlinkNamespace>(&self, state: &str) -> Result<Vec<(K, N, i64, TimeDomain)>> {
        let domain =
            match state.strip_prefix("_timer_state/") {
                Some(s) if s.starts_with("event_") => TimeDomain::EventTime,
                Some(s) if s.starts_with("processing_") => TimeDomain::ProcessingTime,
                _ => return Err(self.context(
                    state,
                    "not a timer state (`_timer_state/event_...` or `_timer_state/processing_...`)",
                )),
            };
        self.read(
            state,
            |raw| raw.timers(&self.key),
            |e| Ok((e.key, N::from_flink(&e.namespace)?, e.value, domain)),
        )
    }
}

/// An entry as `(key, namespace, value)`, its namespace made typeinfo's.
fn keyed_entry<K, N: FlinkNamespace, V>(e: TypedEntry<K, V>) -> Result<(K, N, V)> {
    Ok((e.key, N::from_flink(&e.namespace)?, e.value))
}

fn operator<'a>(
    savepoint: &'a FlinkSavepoint,
    uid: &str,
) -> Result<&'a typeinfo_flink_compat::savepoint::OperatorState> {
    savepoint.metadata().operator_by_uid(uid).ok_or_else(|| {
        let known: Vec<&str> = savepoint
            .metadata()
            .operators
            .iter()
            .map(|o| o.uid.as_str())
            .filter(|u| !u.is_empty())
            .collect();
        Error::NotFound(format!(
            "{}: no operator with uid `{uid}`; it has {}",
            savepoint.dir().display(),
            known.join(", ")
        ))
    })
}

/// Operator state `state` of the operator with uid `uid`, per subtask in subtask order,
/// every part of the subtask's value in turn.
fn operator_state_parts(
    savepoint: &FlinkSavepoint,
    uid: &str,
    state: &str,
) -> Result<Vec<(i32, FlinkValue)>> {
    let op = operator(savepoint, uid)?;
    let mut parts = Vec::new();
    for subtask in &op.subtasks {
        if let Some(handle) = &subtask.managed_operator {
            let in_file = |e: typeinfo::Error| {
                Error::Corrupt(format!(
                    "{}: {e}",
                    savepoint.handle_path(&handle.stream).display()
                ))
            };
            let bytes = savepoint.stream_bytes(&handle.stream).map_err(in_file)?;
            for s in read_operator_states(&bytes, handle, subtask.index).map_err(in_file)? {
                if s.name == state {
                    parts.push((s.subtask, s.value));
                }
            }
        }
    }
    if parts.is_empty() {
        return Err(Error::NotFound(format!(
            "{}: operator `{uid}` has no operator state `{state}`",
            savepoint.dir().display()
        )));
    }
    parts.sort_by_key(|(subtask, _)| *subtask);
    Ok(parts)
}

/// An operator list (or union list) state: each Flink subtask's list, in subtask order,
/// for [`OperatorStateBootstrap::list_state`](crate::OperatorStateBootstrap::list_state).
///
/// # Errors
///
/// No such operator or state; an element of another type; damaged bytes.
pub fn operator_list_state<T: FromFlinkValue>(
    savepoint: &FlinkSavepoint,
    uid: &str,
    state: &str,
) -> Result<Vec<Vec<T>>> {
    operator_state_parts(savepoint, uid, state)?
        .into_iter()
        .map(|(_, value)| Vec::<T>::from_flink(value))
        .collect::<Result<_>>()
        .map_err(|e| Error::Refused(format!("operator `{uid}`, state `{state}`: {e}")))
}

/// A broadcast state's entries (Flink keeps a copy per subtask; the copies must be equal,
/// as a broadcast state's are unless a function broke the contract).
///
/// # Errors
///
/// No such operator or state; subtasks whose copies differ; an entry of another type;
/// damaged bytes.
pub fn broadcast_state<BK: FromFlinkValue, BV: FromFlinkValue>(
    savepoint: &FlinkSavepoint,
    uid: &str,
    state: &str,
) -> Result<Vec<(BK, BV)>> {
    let parts = operator_state_parts(savepoint, uid, state)?;
    let context = |e: String| Error::Refused(format!("operator `{uid}`, state `{state}`: {e}"));
    let mut copies = parts.into_iter().map(|(_, v)| v);
    let first = copies.next().unwrap_or(FlinkValue::Map(Vec::new()));
    if copies.any(|other| other != first) {
        return Err(context(
            "the subtasks' copies differ (a broadcast state must be the same on every subtask)"
                .to_owned(),
        ));
    }
    let FlinkValue::Map(entries) = first else {
        return Err(context(format!("{first} is not a broadcast state's map")));
    };
    entries
        .into_iter()
        .map(|(k, v)| Ok((BK::from_flink(k)?, BV::from_flink(v)?)))
        .collect::<Result<_>>()
        .map_err(|e| context(e.to_string()))
}
