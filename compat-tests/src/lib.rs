//! Golden files: bytes and snapshots of every built-in serializer, written once by an
//! earlier version (`fixtures/`, never regenerated) and read back by today's code
//! (`tests/builtin_golden.rs`).
//!
//! - [`builtin_cases`]: the single list of cases (name, type, fixed values);
//! - [`golden`]: what a case writes and what the test checks;
//! - `src/bin/write_fixtures.rs`: writes the fixtures that are missing, never overwrites.

pub mod builtin_cases;
pub mod golden;

pub use builtin_cases::builtin_cases;
pub use golden::{Case, Fixture, GoldenCase, Pinned};
