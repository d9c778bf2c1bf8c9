//! Apache Flink's serializer byte layouts (Flink 2.3) as typeinfo serializers: bytes that
//! Flink's own `TypeSerializer`s wrote, read into Rust values, and Rust values written as
//! Flink writes them, byte for byte.
//!
//! Every serializer here implements typeinfo's [`TypeSerializer`](typeinfo::TypeSerializer)
//! (so it serves wherever a typeinfo serializer does, keyed state among them) and is
//! named after the Flink class whose layout it writes. Each layout is documented in its
//! module and pinned by golden files written by Flink 2.3 itself
//! (`tests/flink/FlinkGoldens.java`, `tests/golden/`).
//!
//! | Java | Rust | serializer |
//! |---|---|---|
//! | `boolean`/`Boolean` ... `double`/`Double`, `char` | `bool`, `i8`, `i16`, `i32`, `i64`, `f32`, `f64`, `char` | [`BooleanSerializer`] ... [`DoubleSerializer`], [`CharSerializer`] |
//! | a boxed value that may be null | `Option<T>` | [`Nullable`] (`NullableSerializer`, also padded) |
//! | `String` | `String` or `Option<String>` | [`StringSerializer`] (`StringValue`'s encoding) |
//! | `byte[]`, `int[]` ... | `Vec<u8>`, `Vec<i32>` ... (`char[]` as `Vec<u16>`) | [`BytePrimitiveArraySerializer`] ... |
//! | `String[]` | `Vec<Option<String>>` | [`StringArraySerializer`] |
//! | `T[]` | `Vec<Option<T>>` | [`GenericArraySerializer`] |
//! | `List<T>` | `Vec<T>` | [`ListSerializer`] |
//! | `Map<K, V>` | `Vec<(K, V)>`, `BTreeMap`, `HashMap` | [`MapSerializer`] (null values as `Option`) |
//! | `Tuple1` ... `Tuple12` | tuples | [`TupleSerializer`] |
//! | `Row` (position-based) | [`Row`] of a tuple of `Option`s | [`RowSerializer`] (kind and null mask) |
//! | `Instant`, `LocalDate`, `LocalTime`, `LocalDateTime` | [`Instant`], [`LocalDate`], [`LocalTime`], [`LocalDateTime`] | [`InstantSerializer`] ... |
//! | `java.util.Date` | [`Date`] | [`DateSerializer`] |
//! | `java.sql.Date`, `Time`, `Timestamp` | [`SqlDate`], [`SqlTime`], [`SqlTimestamp`] | [`SqlDateSerializer`] ... |
//! | `BigInteger`, `BigDecimal` | [`BigInteger`], `bigdecimal::BigDecimal` | [`BigIntSerializer`], [`BigDecSerializer`] |
//! | an enum | a derived `flink_enum` enum | [`EnumSerializer`] |
//! | a POJO | a derived `flink_pojo` struct | [`PojoSerializer`] |
//!
//! [`FlinkType`] gives a Rust type the serializer Flink's type extraction gives the Java
//! type it stands for (this is what a derived POJO uses for its fields), [`FlinkField`] the
//! same behind Flink's null marker.
//!
//! # POJOs
//!
//! ```
//! use typeinfo::{from_bytes, to_bytes, TypeInfo};
//! use typeinfo_flink_compat::FlinkType;
//!
//! #[derive(TypeInfo, Debug, PartialEq)]
//! #[typeinfo(flink_pojo = "com.example.Order")]
//! struct Order {
//!     #[typeinfo(flink_name = "userId")]
//!     user_id: String,
//!     amount: f64,
//! }
//!
//! # fn main() -> typeinfo::Result<()> {
//! let order = Order { user_id: "u1".into(), amount: 12.5 };
//! let bytes = to_bytes(&Order::flink_serializer(), &order)?;
//! assert_eq!(bytes.len(), 14);
//! assert_eq!(from_bytes::<Order, _>(&Order::flink_serializer(), &bytes)?, order);
//! # Ok(())
//! # }
//! ```
//!
//! A field whose Java value may be null is an `Option` (a null in a non-`Option` field is an
//! error naming the field). See [`pojo`] for the attributes and the layout.
//!
//! # Flink's serializer snapshots
//!
//! [`FlinkSnapshot::read_serializer_snapshot`] reads a `TypeSerializerSnapshot` as Flink 2.3
//! writes it into a savepoint's metadata (class, version, nested snapshots; a POJO's field
//! names and their snapshots; an enum's constants; Kryo's registrations, enough to name
//! them). [`resolve`] (or [`resolve_as`]) resolves it against a Rust serializer with
//! typeinfo's verdicts: as is; after migration for a POJO field added, removed or renamed
//! (`#[typeinfo(flink_alias = "oldName")]`) and for moved enum constants, with readers of
//! Flink's old bytes ([`resolve_pojo`], [`resolve_enum`]; dropped fields are skipped by their
//! old snapshot, [`skip_value`]); incompatible with the path of the change
//! (`Order.amount: Double -> String`) otherwise, and "Kryo state: not readable" for Kryo.
//! The snapshot golden files are written by the same Java program.
//!
//! # Flink savepoints
//!
//! [`savepoint::FlinkSavepoint`] opens a savepoint Flink 2.3 wrote in its canonical format
//! (from the hashmap or the RocksDB backend, with or without snapshot compression): its
//! `_metadata` ([`savepoint::Metadata`]: operators by id and uid, key groups, state
//! handles) and its state files, decoded by the serializer snapshots they carry into
//! [`savepoint::FlinkValue`]s: keyed value, list, map, reducing and aggregating state,
//! window contents by `TimeWindow`, timers, operator list, union and broadcast state.
//! [`savepoint::FlinkSavepoint::keyed_state`] reads one keyed state into Rust types
//! ([`savepoint::RawKeyedState::values`], `lists`, `maps`) when Flink's snapshots resolve
//! as they are against the Rust serializers.
//! [`savepoint::OperatorId::from_uid`] gives the id Flink derives from a uid. The golden
//! savepoints are written by a Flink job in a local MiniCluster
//! (`tests/flink/FlinkSavepoints.java`, `tests/savepoints/`).
//!
//! # What is not covered
//!
//! - POJO subclasses: a value Flink wrote for a subclass of the POJO's class (registered
//!   or not) is refused with an error naming it; Rust structs have no subclasses.
//! - Kryo (Flink's fallback for generic types: `java.util.Optional`, for which Flink has no
//!   serializer of its own, [`Nullable`] being the nearest; and `LocalDate`, `LocalTime`,
//!   `LocalDateTime` in extracted types such as POJO fields), Avro, Scala types,
//!   `Row`s with named fields, `Either`, `Value` types, `SetSerializer`, tuples past 12 fields.
//!   Kryo's snapshots are read and resolve as "Kryo state: not readable"; the others'
//!   snapshots are errors that name the snapshot class. The typeinfo snapshots of these
//!   serializers (kind `flink:<class>`) have no restorer in typeinfo's `SnapshotRegistry`,
//!   so typeinfo's type-free reader and its conformance harness do not take them.
//! - Migrations inside a value: a POJO field whose own layout changed (a nested POJO that
//!   gained a field, a widened number) is refused by [`resolve_pojo`], naming the field;
//!   migrations of lists, maps and tuples are not built.
//! - Flink savepoints: canonical savepoints are read into a type-free dump (see
//!   [`savepoint`]); RocksDB's native savepoints, incremental, changelog and unaligned
//!   checkpoints are refused by name. The typed readers take a state whose layouts resolve
//!   as they are, except [`savepoint::RawKeyedState::pojo_values`], which migrates a POJO
//!   whose class gained, lost or renamed fields (other migrations are left to the
//!   type-free dump). A typeinfo job continues
//!   from a Flink savepoint through `typeinfo_savepoint::from_flink`, which converts its
//!   states with these readers into a typeinfo savepoint.
//! - Flink's quirks are kept where they shape bytes and documented where they do not:
//!   `SqlTimestampSerializer` reads 8 of the 12 bytes it writes for a null (here 12 are
//!   read); `BigIntSerializer` writes 0, 1 and 10 short only for Java's shared constants
//!   (here always).
//!
//! # Bytes from outside
//!
//! Reads never panic: short input, a negative or huge length (checked against the bytes
//! left before anything is allocated), an unknown flag or tag, a lone UTF-16 surrogate, a
//! date that does not exist are all errors.

#![warn(missing_docs)]

/// Implements `TypeSerializer` for a value type and `Option` of it, for a Flink serializer
/// that writes its own null: `$read` returns `Option`, `$write` takes one.
macro_rules! nullable_layout {
    ($(#[$doc:meta])* $ser:ident, $ty:ty, $len:expr, $read:path, $write:path) => {
        $(#[$doc])*
        ///
        /// Serializes the value type (a null in Flink's bytes is an error) and `Option` of it.
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
        pub struct $ser;

        impl TypeSerializer<$ty> for $ser {
            fn serialize(&self, value: &$ty, out: &mut DataOutputView) -> Result<()> {
                $write(out, Some(value))
            }
            fn deserialize(&self, input: &mut DataInputView<'_>) -> Result<$ty> {
                $read(input)?.ok_or_else(|| null_error(stringify!($ty)))
            }
            fn copy(&self, value: &$ty) -> $ty {
                value.clone()
            }
            fn skip(&self, input: &mut DataInputView<'_>) -> Result<()> {
                $read(input).map(drop)
            }
            fn fixed_length(&self) -> Option<usize> {
                $len
            }
            fn is_immutable(&self) -> bool {
                true
            }
            fn snapshot(&self) -> SerializerSnapshot {
                snapshot::of(stringify!($ser), Vec::new())
            }
        }

        impl TypeSerializer<Option<$ty>> for $ser {
            fn serialize(&self, value: &Option<$ty>, out: &mut DataOutputView) -> Result<()> {
                $write(out, value.as_ref())
            }
            fn deserialize(&self, input: &mut DataInputView<'_>) -> Result<Option<$ty>> {
                $read(input)
            }
            fn copy(&self, value: &Option<$ty>) -> Option<$ty> {
                value.clone()
            }
            fn skip(&self, input: &mut DataInputView<'_>) -> Result<()> {
                $read(input).map(drop)
            }
            fn fixed_length(&self) -> Option<usize> {
                $len
            }
            fn is_immutable(&self) -> bool {
                true
            }
            fn snapshot(&self) -> SerializerSnapshot {
                snapshot::of(stringify!($ser), Vec::new())
            }
        }
    };
}

mod flink_snapshot;
mod flink_type;
mod java_io;
mod layout;
pub mod savepoint;
pub mod snapshot;
mod type_info;

pub use flink_snapshot::migration::{resolve_enum, resolve_pojo, MigrationStep, PojoMigration};
pub use flink_snapshot::read::{FlinkSnapshot, Outer, PojoFieldSnapshot, SnapshotContent};
pub use flink_snapshot::resolve::{resolve, resolve_as};
pub use flink_snapshot::skip::skip_value;
pub use flink_type::{FlinkField, FlinkType};
pub use layout::array::{
    BooleanPrimitiveArraySerializer, BytePrimitiveArraySerializer, CharPrimitiveArraySerializer,
    DoublePrimitiveArraySerializer, FloatPrimitiveArraySerializer, GenericArraySerializer,
    IntPrimitiveArraySerializer, LongPrimitiveArraySerializer, ShortPrimitiveArraySerializer,
};
pub use layout::decimal::{BigDecSerializer, BigIntSerializer, BigInteger};
pub use layout::enumeration::{EnumSerializer, FlinkEnum};
pub use layout::list::ListSerializer;
pub use layout::map::MapSerializer;
pub use layout::nullable::{NotNull, Nullable};
pub use layout::pojo;
pub use layout::pojo::{FlinkPojo, PojoSerializer};
pub use layout::primitive::{
    BooleanSerializer, ByteSerializer, CharSerializer, DoubleSerializer, FloatSerializer,
    IntSerializer, LongSerializer, ShortSerializer,
};
pub use layout::row::{Row, RowKind, RowSerializer};
pub use layout::string::{StringArraySerializer, StringSerializer};
pub use layout::time::{
    Date, DateSerializer, Instant, InstantSerializer, LocalDate, LocalDateSerializer,
    LocalDateTime, LocalDateTimeSerializer, LocalTime, LocalTimeSerializer, SqlDate,
    SqlDateSerializer, SqlTime, SqlTimeSerializer, SqlTimestamp, SqlTimestampSerializer,
};
pub use layout::tuple::TupleSerializer;
pub use type_info::Typed;

/// Items the derive's generated code calls. Not a public API.
#[doc(hidden)]
#[path = "private.rs"]
pub mod __private;
