//! Apache Flink's type system for Rust: the type layer users name.
//!
//! - [`TypeInfo`]: a type's [description](TypeDescription) and its serializer. Implemented
//!   here for `bool`, `char`, every integer, `f32`, `f64`, `()`, `String`, `bytes::Bytes`,
//!   `Vec`, `VecDeque`, arrays, `Option`, tuples up to 12, `Box`, `Arc`, `HashMap`,
//!   `BTreeMap`, `HashSet`, `BTreeSet`, `Duration`, `SystemTime`, and decimals
//!   (`rust_decimal` and `bigdecimal` features).
//! - [`Comparable`] (a comparator with normalized keys) and [`KeyType`] (equal values give
//!   equal bytes), checked by the compiler wherever a key is required.
//! - [`SerializerConfig`], with [`disable_generic_types`](SerializerConfig::disable_generic_types).
//! - [`generic_type!`] (feature `serde`): the serde-bridged fallback, under a stable name
//!   (`generic_type!(Legacy, name = "com.example.Legacy")`).
//! - The byte layer, re-exported: serializers, snapshots, verdicts, comparators, and
//!   (feature `testing`) the conformance harness.
//!
//! Users depend on this crate alone.
//!
//! # Example
//!
//! ```
//! use typeinfo::{from_bytes, to_bytes, Compatibility, SnapshotRegistry, TypeInfo, TypeSerializer};
//!
//! # fn main() -> typeinfo::Result<()> {
//! // Version 1 of a state value was an `i32`; today it is an `Option<i64>`.
//! let old = typeinfo::serializer::<i32>()?;
//! let bytes = to_bytes(&old, &-7)?;
//! let new = typeinfo::serializer::<Option<i64>>()?;
//! match new.resolve(&old.snapshot(), &SnapshotRegistry::default()) {
//!     Compatibility::AfterMigration(reader) => {
//!         let value = reader.read(&mut typeinfo::DataInputView::new(&bytes))?;
//!         assert_eq!(value, Some(-7));
//!     }
//!     other => panic!("expected a migration, got {other:?}"),
//! }
//! # Ok(())
//! # }
//! ```
//!
//! # Decisions
//!
//! - The error type is the byte layer's [`Error`]: creating a serializer fails only for the
//!   reasons reading and writing bytes fail, plus a disabled generic type.
//! - Generic types are allowed by default, as in Flink; a job that wants every type to
//!   evolve safely disables them.
//! - `Box<T>` and `Arc<T>` are invisible: same bytes, same schema as `T`.
//! - Bytes from outside are bounded the same way on every path (see the byte layer's
//!   [`DataInputView`] and `FORMAT.md`, "Limits of a read"): a depth budget of
//!   [`DEFAULT_MAX_DEPTH`] levels spent at each recursive field of a derived type, by its
//!   reader, its writer and its migration alike, and by the serde bridge for each nested
//!   serde value; each level runs on a stack with room for it ([`ensure_stack`]), so 512
//!   levels are safe on a 2 MiB worker thread in debug and release builds; at most
//!   [`MAX_ZERO_SIZED_ITEMS`] elements that take no bytes per read; varints in their
//!   shortest form only.

#![warn(missing_docs)]

mod config;
mod derived;
mod description;
#[cfg(feature = "serde")]
mod generic;
mod impls;
#[cfg(feature = "serde")]
mod serde_depth;
mod type_info;

pub use config::SerializerConfig;
pub use description::{FieldDescription, TypeDescription, TypeKind};
#[cfg(feature = "serde")]
pub use generic::GenericSerializer;
pub use type_info::{serializer, Comparable, KeyType, TypeInfo};

pub use typeinfo_serializers::*;

/// Derives [`TypeInfo`] (and [`Comparable`] and [`KeyType`] where every field allows) for a
/// struct or enum. See the `typeinfo-derive` crate for its attributes.
pub use typeinfo_derive::TypeInfo;

/// Items the derive's generated code calls. Not a public API.
#[doc(hidden)]
pub mod __private {
    pub use crate::derived::*;
}

// The README's examples are compiled and run as doc tests of `typeinfo-runtime`, which
// depends on every crate they use.
