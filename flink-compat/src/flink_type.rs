//! Which of Flink's serializers stands for a Rust type: [`FlinkType`] (the serializer
//! Flink's type extraction, `TypeInformation.of`, gives the Java type the Rust type stands
//! for) and [`FlinkField`] (a value behind Flink's null marker: a POJO field, a map value,
//! a list element or map key of an extracted list or map).

use std::collections::{BTreeMap, HashMap};
use std::hash::Hash;

use bigdecimal::BigDecimal;
use typeinfo::TypeSerializer;

use crate::layout::decimal::{BigDecSerializer, BigIntSerializer, BigInteger};
use crate::layout::list::ListSerializer;
use crate::layout::map::MapSerializer;
use crate::layout::nullable::{NotNull, Nullable};
use crate::layout::primitive::*;
use crate::layout::string::StringSerializer;
use crate::layout::time::*;
use crate::layout::tuple::TupleSerializer;

/// A Rust type that stands for a Java type, with the serializer Flink's type extraction
/// gives that Java type.
///
/// | Rust | Java | Flink's serializer |
/// |---|---|---|
/// | `bool`, `i8`, `i16`, `char`, `i32`, `i64`, `f32`, `f64` | the primitive or its boxed form | `BooleanSerializer` ... `DoubleSerializer` |
/// | `String` | `String` | `StringSerializer` |
/// | `Vec<T>` | `List<T>` | `NullableSerializer(ListSerializer(NullableSerializer(T)))` (Flink 2.x) |
/// | `HashMap<K, V>`, `BTreeMap<K, V>` | `Map<K, V>` | `NullableSerializer(MapSerializer(NullableSerializer(K), V))` (Flink 2.x) |
/// | `(A, B, ...)` (up to 12) | `Tuple2<A, B>` ... | `TupleSerializer` |
/// | [`Instant`], [`Date`] | `java.time.Instant`, `java.util.Date` | `InstantSerializer`, `DateSerializer` |
/// | [`SqlDate`], [`SqlTime`], [`SqlTimestamp`] | `java.sql` | `SqlDateSerializer` ... |
/// | [`BigInteger`], `bigdecimal::BigDecimal` | `java.math` | `BigIntSerializer`, `BigDecSerializer` |
/// | a derived `flink_pojo` struct | the POJO | `PojoSerializer` |
/// | a derived `flink_enum` enum | the enum | `EnumSerializer` |
///
/// `LocalDate`, `LocalTime` and `LocalDateTime` have none: type extraction gives them Kryo
/// (see the `time` module). Java arrays (`byte[]`, `int[]`, `String[]`, `Integer[]`) have no `FlinkType` (a `Vec`
/// is a `List`): name their serializer with `#[typeinfo(flink_with = "...")]` in a POJO, or
/// use [`BytePrimitiveArraySerializer`](crate::BytePrimitiveArraySerializer) and its
/// siblings directly. `Option<T>` is not a `FlinkType` (Java has no null of its own: the
/// container writes it); it is a [`FlinkField`].
///
/// # Examples
///
/// ```
/// use typeinfo::to_bytes;
/// use typeinfo_flink_compat::FlinkType;
///
/// # fn main() -> typeinfo::Result<()> {
/// let list = vec![Some("x".to_owned()), None];
/// let bytes = to_bytes(&Vec::<Option<String>>::flink_serializer(), &list)?;
/// assert_eq!(bytes, [0, 0, 0, 0, 2, 0, 2, b'x', 1]);
/// # Ok(())
/// # }
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no serializer that Flink's type extraction gives it",
    label = "no FlinkType",
    note = "Flink's type extraction gives java.time's LocalDate, LocalTime and LocalDateTime Kryo, which is not readable here",
    note = "a Java array (byte[], int[], String[]) is not a List: name its serializer with `#[typeinfo(flink_with = \"typeinfo_flink_compat::BytePrimitiveArraySerializer\")]`"
)]
pub trait FlinkType: Sized + Send + 'static {
    /// Flink's serializer of the Java type.
    type Serializer: TypeSerializer<Self> + Clone;
    /// The serializer.
    fn flink_serializer() -> Self::Serializer;
}

/// A value behind Flink's null marker: `T` (never null) or `Option<T>` for a [`FlinkType`]
/// `T`.
pub trait FlinkField: Sized + Send + 'static {
    /// The marker and the value.
    type Framed: TypeSerializer<Self> + Clone;
    /// Whether the Rust type holds a null (`Option`).
    const NULLABLE: bool;
    /// The serializer of the marker and the value.
    fn framed_serializer() -> Self::Framed;
}

impl<T: FlinkType> FlinkField for T {
    type Framed = NotNull<T::Serializer>;
    const NULLABLE: bool = false;
    fn framed_serializer() -> Self::Framed {
        NotNull(T::flink_serializer())
    }
}

impl<T: FlinkType> FlinkField for Option<T> {
    type Framed = Nullable<T::Serializer>;
    const NULLABLE: bool = true;
    fn framed_serializer() -> Self::Framed {
        Nullable::new(T::flink_serializer())
    }
}

macro_rules! flink_types {
    ($($ty:ty => $ser:ident;)*) => {$(
        impl FlinkType for $ty {
            type Serializer = $ser;
            fn flink_serializer() -> Self::Serializer {
                $ser
            }
        }
    )*};
}

flink_types! {
    bool => BooleanSerializer;
    i8 => ByteSerializer;
    i16 => ShortSerializer;
    char => CharSerializer;
    i32 => IntSerializer;
    i64 => LongSerializer;
    f32 => FloatSerializer;
    f64 => DoubleSerializer;
    String => StringSerializer;
    Instant => InstantSerializer;
    Date => DateSerializer;
    SqlDate => SqlDateSerializer;
    SqlTime => SqlTimeSerializer;
    SqlTimestamp => SqlTimestampSerializer;
    BigInteger => BigIntSerializer;
    BigDecimal => BigDecSerializer;
}

impl<T: FlinkField> FlinkType for Vec<T> {
    type Serializer = NotNull<ListSerializer<T::Framed>>;
    fn flink_serializer() -> Self::Serializer {
        NotNull(ListSerializer(T::framed_serializer()))
    }
}

impl<K: FlinkField + Eq + Hash, V: FlinkField> FlinkType for HashMap<K, V> {
    type Serializer = NotNull<MapSerializer<K::Framed, V::Framed>>;
    fn flink_serializer() -> Self::Serializer {
        NotNull(MapSerializer::from_parts(
            K::framed_serializer(),
            V::framed_serializer(),
        ))
    }
}

impl<K: FlinkField + Ord, V: FlinkField> FlinkType for BTreeMap<K, V> {
    type Serializer = NotNull<MapSerializer<K::Framed, V::Framed>>;
    fn flink_serializer() -> Self::Serializer {
        NotNull(MapSerializer::from_parts(
            K::framed_serializer(),
            V::framed_serializer(),
        ))
    }
}

macro_rules! tuple_types {
    ($(($($T:ident),+);)*) => {$(
        impl<$($T: FlinkType),+> FlinkType for ($($T,)+) {
            type Serializer = TupleSerializer<($($T::Serializer,)+)>;
            fn flink_serializer() -> Self::Serializer {
                TupleSerializer(($($T::flink_serializer(),)+))
            }
        }
    )*};
}

tuple_types! {
    (T0);
    (T0, T1);
    (T0, T1, T2);
    (T0, T1, T2, T3);
    (T0, T1, T2, T3, T4);
    (T0, T1, T2, T3, T4, T5);
    (T0, T1, T2, T3, T4, T5, T6);
    (T0, T1, T2, T3, T4, T5, T6, T7);
    (T0, T1, T2, T3, T4, T5, T6, T7, T8);
    (T0, T1, T2, T3, T4, T5, T6, T7, T8, T9);
    (T0, T1, T2, T3, T4, T5, T6, T7, T8, T9, T10);
    (T0, T1, T2, T3, T4, T5, T6, T7, T8, T9, T10, T11);
}
