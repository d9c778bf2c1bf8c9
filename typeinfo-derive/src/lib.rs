//! `#[derive(TypeInfo)]` for structs and enums.
//!
//! Not built yet: this crate is the home of the derive issue. Until then, types implement
//! `typeinfo::TypeInfo` by hand (see the `typeinfo` crate docs).
