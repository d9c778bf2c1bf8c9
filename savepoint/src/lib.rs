//! Read, check and write typeinfo savepoints without running a job: Flink's State
//! Processor API, in Rust, as a library and a command-line tool (`typeinfo-savepoint`).
//!
//! - [`inspect`]: operators by uid with their parallelism, each operator's keyed states
//!   (name, kind, key / namespace / value types rendered from the serializer snapshots,
//!   TTL), entries and bytes per state and key group, operator states and parts.
//! - [`dump`]: the entries of one state as JSON lines, read through the serializers
//!   restored from the savepoint's snapshots (no Rust types needed); or, with the types,
//!   [`Savepoint::read_value_state`], [`read_list_state`](Savepoint::read_list_state) and
//!   [`read_map_state`](Savepoint::read_map_state), which migrate stored values to the
//!   given types as a restore would.
//! - [`verify`]: every file's checksum and layout, every entry readable, every key in its
//!   key group, nothing else in the directory.
//! - [`SavepointWriter`]: a new savepoint, from an existing one or from nothing, with
//!   operators removed, uids renamed, keyed state bootstrapped from datasets
//!   ([`KeyedStateBootstrap`]), or another max parallelism (every key's key group is
//!   computed again from its stored bytes).
//! - [`from_flink`]: an Apache Flink 2.3 savepoint's state converted into a typeinfo
//!   savepoint, so that a job moved from Flink to Rust continues where Flink stopped.
//!
//! Every command refuses a corrupt, truncated or foreign file with a message naming it
//! (and never panics on one), and none modifies its input: a savepoint is always written
//! into a new directory, built beside it under a temporary name (each file written and
//! synced, `_metadata` last) and renamed into place, so that the output is whole or
//! absent.
//!
//! The savepoint layout is owned by the runtime (`runtime/FORMAT.md`,
//! [`typeinfo_runtime::checkpoint`]) and the state files by the state crate
//! (`state/FORMAT.md`, [`typeinfo_state::savepoint`]); this crate reads and writes them
//! through those crates' APIs and parses no byte itself.
//!
//! # Examples
//!
//! Bootstrap a counter's state, restore-ready for a job whose keyed operator has the uid
//! `counter` and registers `ValueStateDescriptor::<u64>::new("count")`; then look at it:
//!
//! ```
//! use typeinfo_savepoint::{inspect, KeyedStateBootstrap, SavepointWriter};
//! use typeinfo_state::ValueStateDescriptor;
//!
//! # fn main() -> typeinfo_savepoint::Result<()> {
//! # let dir = tempfile::tempdir().map_err(|e| typeinfo_savepoint::Error::Refused(e.to_string()))?;
//! # let out = dir.path().join("bootstrapped");
//! let mut counts = KeyedStateBootstrap::<String>::new(128, 2)?;
//! counts.value_state(
//!     &ValueStateDescriptor::<u64>::new("count"),
//!     [("ada".to_owned(), 3), ("bob".to_owned(), 5)],
//! )?;
//! let savepoint = SavepointWriter::new(128)?
//!     .with_keyed_state("counter", counts)?
//!     .write(&out)?;
//!
//! let report = inspect(&savepoint)?;
//! assert!(report.to_string().contains("count (value): namespace (), value u64"));
//! let mut read: Vec<(String, (), u64)> = savepoint.read_value_state("counter", "count")?;
//! read.sort();
//! assert_eq!(read, [("ada".to_owned(), (), 3), ("bob".to_owned(), (), 5)]);
//! # Ok(())
//! # }
//! ```
//!
//! The command line (`typeinfo-savepoint help`):
//!
//! ```text
//! typeinfo-savepoint inspect DIR [--key-groups]
//! typeinfo-savepoint dump DIR --operator UID --state NAME
//! typeinfo-savepoint verify DIR
//! typeinfo-savepoint remove-operator DIR --operator UID --output NEW_DIR
//! typeinfo-savepoint rename-uid DIR --operator UID --to NEW_UID --output NEW_DIR
//! typeinfo-savepoint set-max-parallelism DIR --max-parallelism N --output NEW_DIR
//! ```

#![warn(missing_docs)]

mod bootstrap;
mod dump;
mod error;
pub mod flink;
pub mod from_flink;
mod inspect;
pub mod json;
mod render;
mod savepoint;
mod typed;
mod verify;
mod writer;

pub use bootstrap::{KeyedStateBootstrap, OperatorStateBootstrap};
pub use dump::dump;
pub use error::{Error, Result};
pub use inspect::{
    inspect, Inspection, KeyedInspection, OperatorInspection, OperatorStateInspection,
    StateInspection,
};
pub use render::{collect_definitions, type_of};
pub use savepoint::{Operator, Savepoint};
pub use verify::{verify, Verification};
pub use writer::SavepointWriter;
