//! Golden files: bytes and snapshots of every built-in serializer, written once by an
//! earlier version (`fixtures/`, never regenerated) and read back by today's code
//! (`tests/builtin_golden.rs`).
//!
//! - [`builtin_cases`]: the single list of cases (name, type, fixed values);
//! - [`golden`]: what a case writes and what the test checks;
//! - [`user_types`]: version 1 of a set of user types (`#[derive(TypeInfo)]`) pinned in
//!   `fixtures/v1/user/`, and today's versions (v2, v3, ...) that evolve them
//!   (`tests/user_types_evolution.rs`);
//! - [`state_cases`]: key groups of fixed keys, composite key bytes, and keyed and operator
//!   snapshots of the state crate, pinned in `fixtures/v1/state/` (`tests/state_golden.rs`);
//! - `src/bin/write_fixtures.rs` and `src/bin/write_state_fixtures.rs`: write the fixtures
//!   that are missing, never overwrite.

pub mod builtin_cases;
pub mod golden;
pub mod state_cases;
pub mod user_types;

pub use builtin_cases::builtin_cases;
pub use golden::{Case, Fixture, GoldenCase, Pinned};
pub use user_types::user_cases;
