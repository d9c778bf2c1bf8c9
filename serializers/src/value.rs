//! [`Value`]: a dynamically typed value, read from bytes by a restored serializer.

use std::sync::Arc;
use std::time::Duration;

/// A value of any layout, read without the Rust type that wrote it.
///
/// Restored serializers ([`SnapshotRegistry::restore`](crate::SnapshotRegistry::restore))
/// read old bytes into this tree. It serves migration (skip or inspect fields of a type
/// that no longer exists) and tools that inspect savepoints.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Value {
    /// `()`.
    Unit,
    /// A `bool`.
    Bool(bool),
    /// A `char`.
    Char(char),
    /// A `u8`.
    U8(u8),
    /// A `u16`.
    U16(u16),
    /// A `u32`.
    U32(u32),
    /// A `u64`.
    U64(u64),
    /// A `u128`.
    U128(u128),
    /// An `i8`.
    I8(i8),
    /// An `i16`.
    I16(i16),
    /// An `i32`.
    I32(i32),
    /// An `i64`.
    I64(i64),
    /// An `i128`.
    I128(i128),
    /// An `f32`.
    F32(f32),
    /// An `f64`.
    F64(f64),
    /// A string.
    String(String),
    /// The elements of a list.
    List(Vec<Value>),
    /// The elements of a set, in stored order.
    Set(Vec<Value>),
    /// The entries of a map, in stored order.
    Map(Vec<(Value, Value)>),
    /// The elements of a fixed-size array.
    Array(Vec<Value>),
    /// An optional value.
    Option(Option<Box<Value>>),
    /// The elements of a tuple.
    Tuple(Vec<Value>),
    /// A duration.
    Duration(Duration),
    /// A point in time: whole seconds since the UNIX epoch (floored) and nanoseconds.
    SystemTime {
        /// Seconds since 1970-01-01T00:00:00Z, negative before it.
        secs: i64,
        /// Nanoseconds within the second, below 10^9.
        nanos: u32,
    },
    /// A decimal number `unscaled * 10^-scale`.
    Decimal {
        /// Digits after the point.
        scale: i64,
        /// The unscaled value, big-endian two's complement.
        unscaled: Vec<u8>,
    },
    /// A struct or a struct-like variant: its name and named fields.
    Struct {
        /// The type's stable name.
        name: Arc<str>,
        /// Fields in declaration order.
        fields: Vec<(Arc<str>, Value)>,
    },
    /// An enum value.
    Enum {
        /// The enum's stable name.
        name: Arc<str>,
        /// The variant's index in declaration order.
        index: u32,
        /// The variant's name.
        variant: Arc<str>,
        /// The variant's fields.
        fields: Vec<(Arc<str>, Value)>,
    },
    /// Bytes of a layout this code knows only by length (serde-bridged generic types).
    Opaque(Vec<u8>),
}

impl Value {
    /// The named field of a struct value.
    pub fn field(&self, name: &str) -> Option<&Value> {
        match self {
            Value::Struct { fields, .. } | Value::Enum { fields, .. } => {
                fields.iter().find(|(n, _)| &**n == name).map(|(_, v)| v)
            }
            _ => None,
        }
    }
}
