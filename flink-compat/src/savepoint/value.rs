//! Type-free values: one value of the layout a [`FlinkSnapshot`] describes, read without a
//! Rust type, as a savepoint dump shows it.

use std::fmt;

use bigdecimal::BigDecimal;
use typeinfo::{DataInputView, Error, Result, TypeSerializer, MAX_SNAPSHOT_DEPTH};

use crate::flink_snapshot::read::{FlinkSnapshot, Outer, SnapshotContent};
use crate::java_io;
use crate::layout::decimal::{BigDecSerializer, BigIntSerializer, BigInteger};
use crate::layout::pojo;
use crate::layout::string;
use crate::layout::time::*;

/// A value read from Flink's bytes by its serializer's snapshot.
///
/// Its `Display` is Java-like: `Order{count=12, total=1650.0, user="k0"}`, `[1, 2]`,
/// `{"m0": 2}`, `TimeWindow{start=0, end=10}`, `VoidNamespace`, `null`.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum FlinkValue {
    /// A Java null.
    Null,
    /// `boolean`.
    Bool(bool),
    /// `byte`.
    Byte(i8),
    /// `short`.
    Short(i16),
    /// `char` (a UTF-16 unit).
    Char(u16),
    /// `int`.
    Int(i32),
    /// `long`.
    Long(i64),
    /// `float`.
    Float(f32),
    /// `double`.
    Double(f64),
    /// `String`.
    String(String),
    /// A list, a Java array, the elements of a list state.
    List(Vec<FlinkValue>),
    /// A map, in the order of its bytes.
    Map(Vec<(FlinkValue, FlinkValue)>),
    /// A tuple's or a row's fields.
    Tuple(Vec<FlinkValue>),
    /// A POJO: its class and its fields in Flink's order.
    Pojo {
        /// The POJO's class.
        class: String,
        /// Its fields by Java name.
        fields: Vec<(String, FlinkValue)>,
    },
    /// An enum constant.
    Enum(String),
    /// The namespace of state outside windows.
    VoidNamespace,
    /// A `GlobalWindow`.
    GlobalWindow,
    /// A `TimeWindow` `[start, end)`.
    TimeWindow {
        /// Its start (inclusive).
        start: i64,
        /// Its end (exclusive).
        end: i64,
    },
    /// A time, date or big number, as its Rust value's `Debug`.
    Other(String),
}

fn short_class(class: &str) -> &str {
    class.rsplit(['.', '$']).next().unwrap_or(class)
}

fn join(f: &mut fmt::Formatter<'_>, items: &[FlinkValue]) -> fmt::Result {
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        write!(f, "{item}")?;
    }
    Ok(())
}

impl fmt::Display for FlinkValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FlinkValue::Null => f.write_str("null"),
            FlinkValue::Bool(v) => write!(f, "{v}"),
            FlinkValue::Byte(v) => write!(f, "{v}"),
            FlinkValue::Short(v) => write!(f, "{v}"),
            FlinkValue::Char(v) => write!(f, "{:?}", char::from_u32(u32::from(*v)).unwrap_or('?')),
            FlinkValue::Int(v) => write!(f, "{v}"),
            FlinkValue::Long(v) => write!(f, "{v}"),
            FlinkValue::Float(v) => write!(f, "{v:?}"),
            FlinkValue::Double(v) => write!(f, "{v:?}"),
            FlinkValue::String(v) => write!(f, "{v:?}"),
            FlinkValue::List(items) => {
                f.write_str("[")?;
                join(f, items)?;
                f.write_str("]")
            }
            FlinkValue::Tuple(items) => {
                f.write_str("(")?;
                join(f, items)?;
                f.write_str(")")
            }
            FlinkValue::Map(entries) => {
                f.write_str("{")?;
                for (i, (k, v)) in entries.iter().enumerate() {
                    let sep = if i > 0 { ", " } else { "" };
                    write!(f, "{sep}{k}: {v}")?;
                }
                f.write_str("}")
            }
            FlinkValue::Pojo { class, fields } => {
                write!(f, "{}{{", short_class(class))?;
                for (i, (name, v)) in fields.iter().enumerate() {
                    let sep = if i > 0 { ", " } else { "" };
                    write!(f, "{sep}{name}={v}")?;
                }
                f.write_str("}")
            }
            FlinkValue::Enum(c) => f.write_str(c),
            FlinkValue::VoidNamespace => f.write_str("VoidNamespace"),
            FlinkValue::GlobalWindow => f.write_str("GlobalWindow"),
            FlinkValue::TimeWindow { start, end } => {
                write!(f, "TimeWindow{{start={start}, end={end}}}")
            }
            FlinkValue::Other(s) => f.write_str(s),
        }
    }
}

/// Reads one value of the layout `snapshot` describes.
///
/// # Errors
///
/// Short or corrupt bytes; a layout that cannot be read without its Rust type: Kryo
/// (`Kryo state: not readable`), a POJO subclass, a serializer this crate does not know
/// (named).
pub fn read_value(snapshot: &FlinkSnapshot, input: &mut DataInputView<'_>) -> Result<FlinkValue> {
    read_at(snapshot, input, 0)
}

fn read_at(
    snapshot: &FlinkSnapshot,
    input: &mut DataInputView<'_>,
    depth: usize,
) -> Result<FlinkValue> {
    if depth > MAX_SNAPSHOT_DEPTH {
        return Err(Error::DepthLimitExceeded {
            limit: MAX_SNAPSHOT_DEPTH,
        });
    }
    match &snapshot.content {
        SnapshotContent::Simple { serializer } => read_simple(serializer, input),
        SnapshotContent::Composite {
            serializer,
            outer,
            nested,
            ..
        } => read_composite(serializer, outer, nested, input, depth + 1),
        SnapshotContent::Enum {
            enum_class,
            constants,
        } => {
            let ordinal = java_io::read_i32(input)?;
            usize::try_from(ordinal)
                .ok()
                .and_then(|i| constants.get(i))
                .map(|c| FlinkValue::Enum(c.clone()))
                .ok_or_else(|| Error::OutOfRange {
                    what: format!("enum `{enum_class}`"),
                    detail: format!("ordinal {ordinal} of {} constants", constants.len()),
                })
        }
        SnapshotContent::Pojo {
            pojo_class, fields, ..
        } => read_pojo(pojo_class, fields, input, depth + 1),
        SnapshotContent::Kryo { type_class, .. } => Err(Error::custom(format!(
            "Kryo state: not readable: `{type_class}` was serialized with Kryo"
        ))),
    }
}

fn read_pojo(
    class: &str,
    fields: &[crate::PojoFieldSnapshot],
    input: &mut DataInputView<'_>,
    depth: usize,
) -> Result<FlinkValue> {
    match input.read_u8()? {
        pojo::IS_NULL => return Ok(FlinkValue::Null),
        pojo::NO_SUBCLASS => {}
        flags => {
            return Err(Error::custom(format!(
                "Flink POJO `{class}`: flags {flags:#x} (a subclass, or corrupt bytes) cannot be read without its class"
            )))
        }
    }
    let mut values = Vec::with_capacity(fields.len());
    for field in fields {
        let snapshot = field.snapshot.as_ref().ok_or_else(|| {
            Error::custom(format!(
                "no serializer for field `{}` of `{class}`",
                field.name
            ))
        })?;
        values.push((
            field.name.clone(),
            read_behind_marker(snapshot, input, depth)?,
        ));
    }
    Ok(FlinkValue::Pojo {
        class: class.to_owned(),
        fields: values,
    })
}

/// A value behind a `true`-for-null marker (a POJO field, a map value).
fn read_behind_marker(
    snapshot: &FlinkSnapshot,
    input: &mut DataInputView<'_>,
    depth: usize,
) -> Result<FlinkValue> {
    if java_io::read_bool(input)? {
        Ok(FlinkValue::Null)
    } else {
        read_at(snapshot, input, depth)
    }
}

fn other<T: fmt::Debug, S: TypeSerializer<Option<T>>>(
    serializer: &S,
    input: &mut DataInputView<'_>,
) -> Result<FlinkValue> {
    Ok(match serializer.deserialize(input)? {
        Some(v) => FlinkValue::Other(format!("{v:?}")),
        None => FlinkValue::Null,
    })
}

fn read_simple(serializer: &str, input: &mut DataInputView<'_>) -> Result<FlinkValue> {
    Ok(match serializer {
        "BooleanSerializer" => FlinkValue::Bool(java_io::read_bool(input)?),
        "ByteSerializer" => FlinkValue::Byte(input.read_i8()?),
        "ShortSerializer" => FlinkValue::Short(java_io::read_i16(input)?),
        "CharSerializer" => FlinkValue::Char(java_io::read_u16(input)?),
        "IntSerializer" => FlinkValue::Int(java_io::read_i32(input)?),
        "LongSerializer" => FlinkValue::Long(java_io::read_i64(input)?),
        "FloatSerializer" => FlinkValue::Float(java_io::read_f32(input)?),
        "DoubleSerializer" => FlinkValue::Double(java_io::read_f64(input)?),
        "StringSerializer" => {
            string::read_string(input)?.map_or(FlinkValue::Null, FlinkValue::String)
        }
        "VoidSerializer" => FlinkValue::Null,
        "VoidNamespaceSerializer" => {
            input.read_u8()?;
            FlinkValue::VoidNamespace
        }
        "GlobalWindowSerializer" => {
            input.read_u8()?;
            FlinkValue::GlobalWindow
        }
        "TimeWindowSerializer" => FlinkValue::TimeWindow {
            start: java_io::read_i64(input)?,
            end: java_io::read_i64(input)?,
        },
        "InstantSerializer" => other::<Instant, _>(&InstantSerializer, input)?,
        "DateSerializer" => other::<Date, _>(&DateSerializer, input)?,
        "SqlDateSerializer" => other::<SqlDate, _>(&SqlDateSerializer, input)?,
        "SqlTimeSerializer" => other::<SqlTime, _>(&SqlTimeSerializer, input)?,
        "SqlTimestampSerializer" => other::<SqlTimestamp, _>(&SqlTimestampSerializer, input)?,
        "LocalDateSerializer" => other::<LocalDate, _>(&LocalDateSerializer, input)?,
        "LocalTimeSerializer" => other::<LocalTime, _>(&LocalTimeSerializer, input)?,
        "LocalDateTimeSerializer" => other::<LocalDateTime, _>(&LocalDateTimeSerializer, input)?,
        "BigIntSerializer" => other::<BigInteger, _>(&BigIntSerializer, input)?,
        "BigDecSerializer" => other::<BigDecimal, _>(&BigDecSerializer, input)?,
        "StringArraySerializer" => {
            let len = java_io::read_len(input, 1)?;
            let mut items = Vec::with_capacity(len.min(4096));
            for _ in 0..len {
                items
                    .push(string::read_string(input)?.map_or(FlinkValue::Null, FlinkValue::String));
            }
            FlinkValue::List(items)
        }
        array => read_primitive_array(array, input)?,
    })
}

fn read_primitive_array(array: &str, input: &mut DataInputView<'_>) -> Result<FlinkValue> {
    let element = match array {
        "BooleanPrimitiveArraySerializer" => "BooleanSerializer",
        "BytePrimitiveArraySerializer" => "ByteSerializer",
        "ShortPrimitiveArraySerializer" => "ShortSerializer",
        "CharPrimitiveArraySerializer" => "CharSerializer",
        "IntPrimitiveArraySerializer" => "IntSerializer",
        "FloatPrimitiveArraySerializer" => "FloatSerializer",
        "LongPrimitiveArraySerializer" => "LongSerializer",
        "DoublePrimitiveArraySerializer" => "DoubleSerializer",
        other => return Err(Error::UnknownSnapshotKind(other.to_owned())),
    };
    let len = java_io::read_len(input, 1)?;
    let mut items = Vec::with_capacity(len.min(4096));
    for _ in 0..len {
        items.push(read_simple(element, input)?);
    }
    Ok(FlinkValue::List(items))
}

fn read_composite(
    serializer: &str,
    outer: &Outer,
    nested: &[FlinkSnapshot],
    input: &mut DataInputView<'_>,
    depth: usize,
) -> Result<FlinkValue> {
    let part = |i: usize| {
        nested
            .get(i)
            .ok_or_else(|| Error::CorruptSnapshot(format!("{serializer} without part {i}")))
    };
    Ok(match serializer {
        "ListSerializer" => {
            let len = java_io::read_len(input, 1)?;
            let mut items = Vec::with_capacity(len.min(4096));
            for _ in 0..len {
                items.push(read_at(part(0)?, input, depth)?);
            }
            FlinkValue::List(items)
        }
        "MapSerializer" => {
            let len = java_io::read_len(input, 2)?;
            let mut entries = Vec::with_capacity(len.min(4096));
            for _ in 0..len {
                let k = read_at(part(0)?, input, depth)?;
                entries.push((k, read_behind_marker(part(1)?, input, depth)?));
            }
            FlinkValue::Map(entries)
        }
        "GenericArraySerializer" => {
            let len = java_io::read_len(input, 1)?;
            let mut items = Vec::with_capacity(len.min(4096));
            for _ in 0..len {
                items.push(match java_io::read_bool(input)? {
                    true => read_at(part(0)?, input, depth)?,
                    false => FlinkValue::Null,
                });
            }
            FlinkValue::List(items)
        }
        "NullableSerializer" => match java_io::read_bool(input)? {
            true => {
                let padding = match outer {
                    Outer::NullPadding(n) => usize::try_from(*n).unwrap_or(0),
                    _ => 0,
                };
                input.skip_bytes(padding)?;
                FlinkValue::Null
            }
            false => read_at(part(0)?, input, depth)?,
        },
        "TupleSerializer" => FlinkValue::Tuple(
            nested
                .iter()
                .map(|s| read_at(s, input, depth))
                .collect::<Result<_>>()?,
        ),
        "RowSerializer" => read_row(nested, input, depth)?,
        "TimerSerializer" => {
            // Timestamp (sign bit flipped), key, namespace: shown as (timestamp, key, namespace).
            let timestamp = java_io::read_i64(input)? ^ i64::MIN;
            let key = read_at(part(0)?, input, depth)?;
            let namespace = read_at(part(1)?, input, depth)?;
            FlinkValue::Tuple(vec![FlinkValue::Long(timestamp), key, namespace])
        }
        other => return Err(Error::UnknownSnapshotKind(other.to_owned())),
    })
}

fn read_row(
    nested: &[FlinkSnapshot],
    input: &mut DataInputView<'_>,
    depth: usize,
) -> Result<FlinkValue> {
    let mut nulls = vec![false; nested.len()];
    crate::layout::row::read_mask(input, &mut nulls)?;
    let mut fields = Vec::with_capacity(nested.len());
    for (s, null) in nested.iter().zip(nulls) {
        fields.push(if null {
            FlinkValue::Null
        } else {
            read_at(s, input, depth)?
        });
    }
    Ok(FlinkValue::Tuple(fields))
}
