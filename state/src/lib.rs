//! Keyed and operator state for typeinfo: key groups, composite keys, the heap and RocksDB
//! backends, TTL, snapshots, restore with migration and rescaling.
//!
//! Not built yet: this crate is the home of the state issue. It holds no code so that no
//! one mistakes a placeholder for the real backend.
