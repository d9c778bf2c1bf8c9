//! Support for the code `#[derive(TypeInfo)]` generates. Not a public API: the derive
//! calls these items through `typeinfo::__private`, and they may change in any release.
//!
//! Generated code stays thin: it lists its fields and calls the generic helpers here, so
//! that a user's compile time does not grow with pasted code per field.

pub mod lazy;
pub mod migration;
pub mod schema;

pub use lazy::Lazy;
pub use migration::{resolve_enum, resolve_struct, EnumPlan, Slots, StructPlan};
pub use schema::{enum_snapshot, guarded_description, guarded_snapshot, struct_snapshot, variant_tag_key, FieldSchema, StructSchema, VariantSchema};
