//! The byte layer of typeinfo.
//!
//! - [`DataOutputView`] and [`DataInputView`]: writing into a growable buffer and reading
//!   from a byte slice; every read returns [`Result`] and never panics on bad input.
//! - [`TypeSerializer`]: compact, self-delimiting bytes with no type metadata; copy,
//!   skip and byte-level copy without decoding; a [`SerializerSnapshot`] of the layout.
//! - [`SnapshotRegistry`]: reads a snapshot back by kind id and restores a serializer that
//!   reads (into [`Value`]), skips and copies bytes of that layout without the Rust type.
//! - [`Compatibility`]: the four verdicts of resolving a new serializer against an old
//!   snapshot, with [`MigrationReader`]s that read old bytes into today's type and an
//!   [`Incompatibility`] that names the path and the change (`Order.amount: f64 -> String`).
//! - [`TypeComparator`]: value order, order of serialized bytes, and normalized
//!   (byte-comparable) keys, ascending or [`Descending`].
//! - Every built-in serializer and comparator ([`builtin`]).
//! - The conformance harness (`testing` feature) for built-in and hand-written serializers.
//!
//! Byte layouts are specified in `FORMAT.md` at the root of this crate and pinned by the
//! golden files of `compat-tests`.
//!
//! # Decisions
//!
//! - Numbers are little-endian at full width (the native order of every mainstream CPU, so
//!   a `Vec<u64>` is one `memcpy`); lengths and enum tags are LEB128 varints (one byte below
//!   128).
//! - Serializers are stateless values: cloning one is free, and one instance serves many
//!   threads.
//! - A composite whose part was reconfigured migrates through the reconfigured part
//!   (static types cannot swap a part's serializer in place).
//! - Bytes are untrusted. Reads are bounded by the bytes left, by an allocation budget
//!   ([`capacity_for`], [`MAX_ZERO_SIZED_ITEMS`] elements that take no bytes per read,
//!   the same for typed and type-free readers) and by a depth budget spent only at
//!   recursion points ([`DEFAULT_MAX_DEPTH`], [`Error::DepthLimitExceeded`]; the type-free
//!   reader spends one level per [`LAYOUTS_PER_LEVEL`] layouts a level passes through).
//!   Every recursion point runs its level on a stack with room for it ([`ensure_stack`]),
//!   so the full budget is safe on a 2 MiB thread in debug and optimized builds alike.
//!   Writing what could not be read back (too deep a value or snapshot) is an error at
//!   write time. Varints are read in their shortest form only
//!   ([`Error::NonCanonicalVarint`]): every value has one encoding. See [`DataInputView`]
//!   and `FORMAT.md` ("Limits of a read").
//! - Each built-in layout has one owner, its module under [`builtin`]: the typed serializer
//!   and the type-free reader restored from a snapshot call the same functions, so a check
//!   on a layout holds on both paths.

#![warn(missing_docs)]

pub mod builtin;
mod comparator;
mod compatibility;
mod error;
mod input;
#[allow(unsafe_code)] // reserve once, then unchecked writes (each block has a SAFETY comment)
mod output;
mod restored;
mod restoring;
mod serializer;
mod snapshot;
#[cfg(feature = "testing")]
pub mod testing;
mod value;

pub use builtin::array::{ArrayComparator, ArraySerializer};
#[cfg(feature = "bigdecimal")]
pub use builtin::decimal::BigDecimalSerializer;
#[cfg(feature = "rust_decimal")]
pub use builtin::decimal::RustDecimalSerializer;
pub use builtin::list::{SeqComparator, VecDequeSerializer, VecSerializer};
pub use builtin::map::{BTreeMapSerializer, HashMapSerializer, MapComparator};
pub use builtin::option::{OptionComparator, OptionSerializer};
pub use builtin::pod::Pod;
pub use builtin::pointer::{ArcSerializer, BoxSerializer, DerefComparator};
pub use builtin::primitive::*;
pub use builtin::record::{parse_enum_payload, parse_struct_payload};
pub use builtin::set::{BTreeSetSerializer, HashSetSerializer};
pub use builtin::string::{BytesComparator, BytesSerializer, StringComparator, StringSerializer};
pub use builtin::time::{
    DurationComparator, DurationSerializer, SystemTimeComparator, SystemTimeSerializer,
};
pub use builtin::tuple::{TupleComparator, TupleSerializer};
pub use builtin::varint::{
    varint_kinds, VarI16Serializer, VarI32Serializer, VarI64Serializer, VarU16Serializer,
    VarU32Serializer, VarU64Serializer,
};
pub use comparator::{Descending, TypeComparator};
pub use compatibility::{Incompatibility, MigrationReader, PathSegment, Verdict};
pub use error::{Error, Result};
pub use input::{
    capacity_for, ensure_stack, DataInputView, DEFAULT_MAX_DEPTH, LAYOUTS_PER_LEVEL,
    MAX_ZERO_SIZED_ITEMS, PREALLOC_BUDGET, ZERO_SIZED_UNIT_BYTES,
};
pub use output::{DataOutputView, ReservedWriter};
pub use serializer::{
    from_bytes, to_bytes, Compatibility, FieldReader, RestoredSerializer, Restorer,
    SnapshotRegistry, TypeSerializer,
};
pub use snapshot::{
    kinds, payload, SerializerSnapshot, MAX_SNAPSHOT_DEPTH, SNAPSHOT_FORMAT_VERSION, SNAPSHOT_MAGIC,
};
pub use value::Value;
