//! `TypeInfo` for the Java value types of this crate, so that a derived struct may hold
//! them: their typeinfo layout is Flink's (the same serializer, fixed to the value type by
//! [`Typed`], since Flink's serializers of nullable values serialize `Option` too).

use std::marker::PhantomData;

use typeinfo::{
    DataInputView, DataOutputView, Result, SerializerConfig, SerializerSnapshot, TypeDescription,
    TypeInfo, TypeKind, TypeSerializer,
};

/// One of Flink's serializers fixed to one Rust type `T` (the `TypeInfo` serializer of the
/// Java value types here): generic code that names only the serializer then knows `T`.
pub struct Typed<T, S>(S, PhantomData<fn() -> T>);

impl<T, S: Default> Default for Typed<T, S> {
    fn default() -> Self {
        Self(S::default(), PhantomData)
    }
}

impl<T, S: Clone> Clone for Typed<T, S> {
    fn clone(&self) -> Self {
        Self(self.0.clone(), PhantomData)
    }
}

impl<T, S: std::fmt::Debug> std::fmt::Debug for Typed<T, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl<T: 'static, S: TypeSerializer<T>> TypeSerializer<T> for Typed<T, S> {
    fn serialize(&self, value: &T, out: &mut DataOutputView) -> Result<()> {
        self.0.serialize(value, out)
    }
    fn deserialize(&self, input: &mut DataInputView<'_>) -> Result<T> {
        self.0.deserialize(input)
    }
    fn copy(&self, value: &T) -> T {
        self.0.copy(value)
    }
    fn skip(&self, input: &mut DataInputView<'_>) -> Result<()> {
        self.0.skip(input)
    }
    fn fixed_length(&self) -> Option<usize> {
        self.0.fixed_length()
    }
    fn is_immutable(&self) -> bool {
        self.0.is_immutable()
    }
    fn snapshot(&self) -> SerializerSnapshot {
        self.0.snapshot()
    }
}

use crate::layout::decimal::{BigIntSerializer, BigInteger};
use crate::layout::time::*;

macro_rules! type_infos {
    ($($ty:ty => $ser:ident, $name:literal, $kind:ident;)*) => {$(
        impl TypeInfo for $ty {
            type Serializer = Typed<$ty, $ser>;
            fn create_serializer(_: &SerializerConfig) -> Result<Self::Serializer> {
                Ok(Typed::default())
            }
            fn description() -> TypeDescription {
                TypeDescription::atomic($name, TypeKind::$kind, false)
            }
        }
    )*};
}

type_infos! {
    Instant => InstantSerializer, "java.time.Instant", Time;
    Date => DateSerializer, "java.util.Date", Time;
    SqlDate => SqlDateSerializer, "java.sql.Date", Time;
    SqlTime => SqlTimeSerializer, "java.sql.Time", Time;
    SqlTimestamp => SqlTimestampSerializer, "java.sql.Timestamp", Time;
    LocalDate => LocalDateSerializer, "java.time.LocalDate", Time;
    LocalTime => LocalTimeSerializer, "java.time.LocalTime", Time;
    LocalDateTime => LocalDateTimeSerializer, "java.time.LocalDateTime", Time;
    BigInteger => BigIntSerializer, "java.math.BigInteger", Decimal;
}
