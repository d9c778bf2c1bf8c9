//! The headers of a savepoint's state files: which states a file holds, their kinds and
//! their serializers' snapshots.
//!
//! A keyed state file starts with `KeyedBackendSerializationProxy`: an `int` version (6),
//! a `boolean` (the key groups are compressed with snappy), the key serializer's snapshot
//! (`writeSerializerSnapshot`), a `short` count of states and each state's meta info. An
//! operator state file starts with `OperatorBackendSerializationProxy`: an `int` version
//! (6), a `boolean` (the states' data is snappy-compressed), a `short` count of operator states and their meta infos, then a `short` count of
//! broadcast states and theirs.
//!
//! A meta info (`StateMetaInfoSnapshotReadersWriters`, version 6): the state's name by
//! `writeUTF`, its backend type (`int`: 0 keyed value state, 1 operator state, 2 broadcast
//! state, 3 priority queue, Flink's timers), an `int` count of options, each a key and a value
//! by `writeUTF` (`KEYED_STATE_TYPE` = `VALUE`, `LIST`, `MAP`, `REDUCING`, `AGGREGATING`;
//! `OPERATOR_STATE_DISTRIBUTION_MODE`), then an `int` count of serializer snapshots, each a
//! key by `writeUTF` (`KEY_SERIALIZER`, `NAMESPACE_SERIALIZER`, `VALUE_SERIALIZER`) and the
//! snapshot.

use typeinfo::{DataInputView, Error, Result};

use crate::flink_snapshot::read::FlinkSnapshot;
use crate::java_io;

/// What kind of state a meta info describes (`StateMetaInfoSnapshot.BackendStateType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendStateType {
    /// Keyed state (value, list, map, reducing, aggregating).
    KeyValue,
    /// Operator list state (split or union).
    Operator,
    /// Broadcast state.
    Broadcast,
    /// A priority queue: the timers of a timer service.
    PriorityQueue,
}

/// A state's name, kind, options and serializer snapshots.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateMetaInfo {
    /// The state's name (`order`, `window-contents`, `_timer_state/event_window-timers`).
    pub name: String,
    /// Its backend type.
    pub backend_type: BackendStateType,
    /// Its options (`KEYED_STATE_TYPE`, `OPERATOR_STATE_DISTRIBUTION_MODE`).
    pub options: Vec<(String, String)>,
    /// Its serializers' snapshots by role (`VALUE_SERIALIZER`, `NAMESPACE_SERIALIZER`,
    /// `KEY_SERIALIZER`).
    pub serializers: Vec<(String, FlinkSnapshot)>,
}

impl StateMetaInfo {
    /// An option's value.
    pub fn option(&self, key: &str) -> Option<&str> {
        self.options
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The snapshot of the serializer in a role.
    ///
    /// # Errors
    ///
    /// The state has no serializer in that role (named).
    pub fn serializer(&self, role: &str) -> Result<&FlinkSnapshot> {
        self.serializers
            .iter()
            .find(|(k, _)| k == role)
            .map(|(_, s)| s)
            .ok_or_else(|| Error::CorruptSnapshot(format!("state `{}` has no {role}", self.name)))
    }

    /// The keyed state's kind (`VALUE`, `LIST`, `MAP`, `REDUCING`, `AGGREGATING`), or
    /// `PRIORITY_QUEUE` for timers, `OPERATOR` and `BROADCAST` for operator states.
    pub fn kind(&self) -> &str {
        match self.backend_type {
            BackendStateType::KeyValue => self.option("KEYED_STATE_TYPE").unwrap_or("VALUE"),
            BackendStateType::Operator => "OPERATOR",
            BackendStateType::Broadcast => "BROADCAST",
            BackendStateType::PriorityQueue => "PRIORITY_QUEUE",
        }
    }

    /// Reads one meta info (version 6).
    ///
    /// # Errors
    ///
    /// Short or corrupt bytes, an unknown backend type, a snapshot this crate cannot read
    /// (its error names the state).
    pub fn read(input: &mut DataInputView<'_>) -> Result<Self> {
        let name = java_io::read_utf(input)?;
        let backend_type = match java_io::read_i32(input)? {
            0 => BackendStateType::KeyValue,
            1 => BackendStateType::Operator,
            2 => BackendStateType::Broadcast,
            3 => BackendStateType::PriorityQueue,
            t => {
                return Err(Error::CorruptSnapshot(format!(
                    "state `{name}` has backend state type {t}"
                )))
            }
        };
        let count = java_io::read_len(input, 4)?;
        let mut options = Vec::with_capacity(count.min(16));
        for _ in 0..count {
            options.push((java_io::read_utf(input)?, java_io::read_utf(input)?));
        }
        let count = java_io::read_len(input, 6)?;
        let mut serializers = Vec::with_capacity(count.min(16));
        for _ in 0..count {
            let role = java_io::read_utf(input)?;
            let snapshot = FlinkSnapshot::read_serializer_snapshot(input)
                .map_err(|e| Error::custom(format!("state `{name}`, {role}: {e}")))?;
            serializers.push((role, snapshot));
        }
        Ok(Self {
            name,
            backend_type,
            options,
            serializers,
        })
    }
}

/// The header of a keyed state file (`KeyedBackendSerializationProxy`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyedHeader {
    /// The proxy's version.
    pub version: i32,
    /// Whether each key group's data is snappy-compressed.
    pub compressed: bool,
    /// The key serializer's snapshot.
    pub key_serializer: FlinkSnapshot,
    /// The states, by their id (their position).
    pub states: Vec<StateMetaInfo>,
}

impl KeyedHeader {
    /// Reads the header at the start of a keyed state file.
    ///
    /// # Errors
    ///
    /// A version other than 6, short or corrupt bytes, a snapshot this crate cannot read.
    pub fn read(input: &mut DataInputView<'_>) -> Result<Self> {
        let version = read_proxy_version(input, "KeyedBackendSerializationProxy", 6)?;
        let compressed = java_io::read_bool(input)?;
        let key_serializer = FlinkSnapshot::read_serializer_snapshot(input)
            .map_err(|e| Error::custom(format!("key serializer: {e}")))?;
        let states = read_meta_infos(input)?;
        Ok(Self {
            version,
            compressed,
            key_serializer,
            states,
        })
    }
}

/// The header of an operator state file (`OperatorBackendSerializationProxy`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OperatorHeader {
    /// The proxy's version.
    pub version: i32,
    /// Whether the states' data is snappy-compressed.
    pub compressed: bool,
    /// The list states (split and union).
    pub states: Vec<StateMetaInfo>,
    /// The broadcast states.
    pub broadcast_states: Vec<StateMetaInfo>,
}

impl OperatorHeader {
    /// Reads the header at the start of an operator state file.
    ///
    /// # Errors
    ///
    /// A version other than 6, short or corrupt bytes, a snapshot this crate cannot read.
    pub fn read(input: &mut DataInputView<'_>) -> Result<Self> {
        let version = read_proxy_version(input, "OperatorBackendSerializationProxy", 6)?;
        let compressed = java_io::read_bool(input)?;
        let states = read_meta_infos(input)?;
        let broadcast_states = read_meta_infos(input)?;
        Ok(Self {
            version,
            compressed,
            states,
            broadcast_states,
        })
    }
}

fn read_proxy_version(input: &mut DataInputView<'_>, kind: &str, supported: i32) -> Result<i32> {
    let version = java_io::read_i32(input)?;
    if version != supported {
        return Err(Error::UnsupportedSnapshotVersion {
            kind: kind.to_owned(),
            version: version as u32,
            supported: supported as u32,
        });
    }
    Ok(version)
}

fn read_meta_infos(input: &mut DataInputView<'_>) -> Result<Vec<StateMetaInfo>> {
    let count = java_io::read_i16(input)?;
    let count =
        usize::try_from(count).map_err(|_| Error::CorruptSnapshot(format!("{count} states")))?;
    let mut states = Vec::with_capacity(count.min(64));
    for _ in 0..count {
        states.push(StateMetaInfo::read(input)?);
    }
    Ok(states)
}
