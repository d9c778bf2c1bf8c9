//! Flink's serializer snapshots: reading them ([`read`]), resolving them against Rust
//! serializers ([`resolve`]), migrating Flink's old bytes ([`migration`]) and skipping values
//! a snapshot describes ([`skip`]).

pub(crate) mod migration;
pub(crate) mod read;
pub(crate) mod resolve;
pub(crate) mod skip;
