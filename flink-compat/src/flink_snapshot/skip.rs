//! Moving past one value of a layout that a [`FlinkSnapshot`] describes, without a Rust
//! type: how a migration passes over the bytes of a POJO field that the new type dropped.

use typeinfo::{DataInputView, Error, Result};

use crate::flink_snapshot::read::{FlinkSnapshot, Outer, SnapshotContent};
use crate::java_io;
use crate::layout::{pojo, string};

/// Skips one value of the layout `snapshot` describes.
///
/// # Errors
///
/// Short or corrupt input, or a layout that cannot be skipped without its Rust type (Kryo,
/// a POJO subclass).
pub fn skip_value(snapshot: &FlinkSnapshot, input: &mut DataInputView<'_>) -> Result<()> {
    match &snapshot.content {
        SnapshotContent::Simple { serializer } => skip_simple(serializer, input),
        SnapshotContent::Composite {
            serializer,
            outer,
            nested,
            ..
        } => skip_composite(serializer, outer, nested, input),
        SnapshotContent::Enum { .. } => input.skip_bytes(4),
        SnapshotContent::Pojo {
            pojo_class, fields, ..
        } => {
            match input.read_u8()? {
                pojo::IS_NULL => return Ok(()),
                pojo::NO_SUBCLASS => {}
                flags => {
                    return Err(Error::custom(format!(
                        "Flink POJO `{pojo_class}`: flags {flags:#x} (a subclass, or corrupt bytes) cannot be skipped"
                    )))
                }
            }
            for field in fields {
                let snapshot = field.snapshot.as_ref().ok_or_else(|| {
                    Error::custom(format!(
                        "no serializer for field `{}` of `{pojo_class}`",
                        field.name
                    ))
                })?;
                skip_behind_marker(snapshot, input)?;
            }
            Ok(())
        }
        SnapshotContent::Kryo { type_class, .. } => Err(Error::custom(format!(
            "Kryo state: not readable: `{type_class}` was serialized with Kryo"
        ))),
    }
}

/// Skips a value behind a `true`-for-null marker (a POJO field, a map value).
fn skip_behind_marker(snapshot: &FlinkSnapshot, input: &mut DataInputView<'_>) -> Result<()> {
    if java_io::read_bool(input)? {
        Ok(())
    } else {
        skip_value(snapshot, input)
    }
}

fn skip_simple(serializer: &str, input: &mut DataInputView<'_>) -> Result<()> {
    let fixed = match serializer {
        "BooleanSerializer" | "ByteSerializer" => 1,
        "ShortSerializer" | "CharSerializer" => 2,
        "IntSerializer" | "FloatSerializer" => 4,
        "LongSerializer" | "DoubleSerializer" | "DateSerializer" | "SqlDateSerializer"
        | "SqlTimeSerializer" => 8,
        "InstantSerializer" | "SqlTimestampSerializer" => 12,
        "LocalDateSerializer" => 6,
        "LocalTimeSerializer" => 7,
        "LocalDateTimeSerializer" => 13,
        "VoidSerializer" => 0,
        "VoidNamespaceSerializer" | "GlobalWindowSerializer" => 1,
        "TimeWindowSerializer" => 16,
        "StringSerializer" => return string::skip_string(input),
        "BigIntSerializer" => return skip_big_int(input).map(drop),
        "BigDecSerializer" => {
            return match skip_big_int(input)? {
                true => input.skip_bytes(4),
                false => Ok(()),
            }
        }
        "StringArraySerializer" => {
            let len = java_io::read_len(input, 1)?;
            return (0..len).try_for_each(|_| string::skip_string(input));
        }
        array => return skip_primitive_array(array, input),
    };
    input.skip_bytes(fixed)
}

/// Skips a `BigInteger`; `false` when it was null.
fn skip_big_int(input: &mut DataInputView<'_>) -> Result<bool> {
    match java_io::read_i32(input)? {
        0 => Ok(false),
        1..=3 => Ok(true),
        len @ 5.. => input.skip_bytes((len - 4) as usize).map(|()| true),
        len => Err(Error::OutOfRange {
            what: "BigInteger".to_owned(),
            detail: format!("length word {len}"),
        }),
    }
}

fn skip_primitive_array(array: &str, input: &mut DataInputView<'_>) -> Result<()> {
    let size = match array {
        "BooleanPrimitiveArraySerializer" | "BytePrimitiveArraySerializer" => 1,
        "ShortPrimitiveArraySerializer" | "CharPrimitiveArraySerializer" => 2,
        "IntPrimitiveArraySerializer" | "FloatPrimitiveArraySerializer" => 4,
        "LongPrimitiveArraySerializer" | "DoublePrimitiveArraySerializer" => 8,
        other => return Err(Error::UnknownSnapshotKind(other.to_owned())),
    };
    let len = java_io::read_len(input, size)?;
    input.skip_bytes(len * size)
}

fn skip_composite(
    serializer: &str,
    outer: &Outer,
    nested: &[FlinkSnapshot],
    input: &mut DataInputView<'_>,
) -> Result<()> {
    let part = |i: usize| {
        nested
            .get(i)
            .ok_or_else(|| Error::CorruptSnapshot(format!("{serializer} without part {i}")))
    };
    match serializer {
        "ListSerializer" => {
            let len = java_io::read_len(input, 1)?;
            (0..len).try_for_each(|_| skip_value(part(0)?, input))
        }
        "MapSerializer" => {
            let len = java_io::read_len(input, 2)?;
            (0..len).try_for_each(|_| {
                skip_value(part(0)?, input)?;
                skip_behind_marker(part(1)?, input)
            })
        }
        "GenericArraySerializer" => {
            let len = java_io::read_len(input, 1)?;
            (0..len).try_for_each(|_| match java_io::read_bool(input)? {
                true => skip_value(part(0)?, input),
                false => Ok(()),
            })
        }
        "NullableSerializer" => match java_io::read_bool(input)? {
            true => input.skip_bytes(match outer {
                Outer::NullPadding(n) => usize::try_from(*n).unwrap_or(0),
                _ => 0,
            }),
            false => skip_value(part(0)?, input),
        },
        "TupleSerializer" => nested.iter().try_for_each(|s| skip_value(s, input)),
        "TimerSerializer" => {
            input.skip_bytes(8)?;
            nested.iter().try_for_each(|s| skip_value(s, input))
        }
        "RowSerializer" => {
            let mut nulls = vec![false; nested.len()];
            crate::layout::row::read_mask(input, &mut nulls)?;
            nested
                .iter()
                .zip(nulls)
                .try_for_each(|(s, null)| if null { Ok(()) } else { skip_value(s, input) })
        }
        other => Err(Error::UnknownSnapshotKind(other.to_owned())),
    }
}
