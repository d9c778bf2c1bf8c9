//! The bounds every record and key type of a stream meets.

/// A type that can be a record of a stream: it has a serializer, and it can be cloned and shared (for
/// broadcast edges and operators with several consumers).
pub trait Data: typeinfo::TypeInfo + Clone + Sync {}
impl<T: typeinfo::TypeInfo + Clone + Sync> Data for T {}

/// A type that can key a stream: deterministic bytes, equality and hashing.
pub trait Key: typeinfo_state::StateKey + Data {}
impl<K: typeinfo_state::StateKey + Data> Key for K {}
