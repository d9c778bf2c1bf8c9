//! What names and describes a registered state without its Rust types: its id, kind and
//! metadata. Plain data, read by the backends, the descriptors and the savepoint format.

use std::fmt;

use typeinfo::SerializerSnapshot;

/// The id of a registered state within its backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StateId(pub(crate) u32);

/// How a state stores its data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum StateKind {
    /// One value per key and namespace.
    Value = 1,
    /// A list per key and namespace.
    List = 2,
    /// A map per key and namespace.
    Map = 3,
    /// A reduced value per key and namespace.
    Reducing = 4,
    /// An accumulator per key and namespace.
    Aggregating = 5,
}

impl StateKind {
    /// The kind of a stored byte.
    pub fn from_byte(b: u8) -> Option<Self> {
        Some(match b {
            1 => Self::Value,
            2 => Self::List,
            3 => Self::Map,
            4 => Self::Reducing,
            5 => Self::Aggregating,
            _ => return None,
        })
    }

    /// How the kind lays out its data: value-like, list or map.
    pub fn layout(self) -> StateKind {
        match self {
            Self::Reducing | Self::Aggregating => Self::Value,
            other => other,
        }
    }
}

impl fmt::Display for StateKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Value => "value",
            Self::List => "list",
            Self::Map => "map",
            Self::Reducing => "reducing",
            Self::Aggregating => "aggregating",
        })
    }
}

/// What is known of a registered state without its Rust types: its name, kind, whether
/// values carry a TTL timestamp, and the snapshots of its namespace and value serializers
/// (for map state: user key, then user value).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateMeta {
    /// The state's name.
    pub name: String,
    /// The state's kind.
    pub kind: StateKind,
    /// Whether each value is preceded by an 8-byte last-access timestamp.
    pub ttl: bool,
    /// The namespace serializer's snapshot.
    pub namespace: SerializerSnapshot,
    /// The value serializer's snapshot (list: the element; map: the user key, then the user value).
    pub values: Vec<SerializerSnapshot>,
}
