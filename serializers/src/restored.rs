//! Serializers restored from snapshots of the built-in layouts, reading into [`Value`].

use std::cell::RefCell;
use std::collections::HashSet;
use std::sync::{OnceLock, Weak};
use std::time::Duration;

use crate::error::{Error, Result};
use crate::input::DataInputView;
use crate::output::DataOutputView;
use crate::registry::{RestoredSerializer, SnapshotRegistry};
use crate::serializer::TypeSerializer;
use crate::snapshot::{kinds, payload, SerializerSnapshot};
use crate::value::Value;
use std::sync::Arc;

/// The built-in layouts, with their restored parts.
#[derive(Debug)]
enum Layout {
    Bool,
    Char,
    U8,
    U16,
    U32,
    U64,
    U128,
    I8,
    I16,
    I32,
    I64,
    I128,
    F32,
    F64,
    Unit,
    String,
    List(RestoredSerializer),
    Set(RestoredSerializer),
    Map(RestoredSerializer, RestoredSerializer),
    Array(usize, RestoredSerializer),
    Option(RestoredSerializer),
    Tuple(Vec<RestoredSerializer>),
    Duration,
    SystemTime,
    Decimal,
    Struct {
        name: String,
        fields: Vec<(String, RestoredSerializer)>,
    },
    Enum {
        name: String,
        variants: Vec<(String, Vec<(String, RestoredSerializer)>)>,
    },
    Serde,
    VarU(u32),
    VarI(u32),
    Recursive {
        name: String,
        target: Arc<OnceLock<Weak<LayoutSerializer>>>,
    },
}

/// A serializer of [`Value`]s in the layout of a built-in snapshot.
#[derive(Debug)]
pub struct LayoutSerializer {
    layout: Layout,
    snapshot: SerializerSnapshot,
}

const BUILTIN: &[&str] = &[
    kinds::BOOL,
    kinds::CHAR,
    kinds::U8,
    kinds::U16,
    kinds::U32,
    kinds::U64,
    kinds::U128,
    kinds::I8,
    kinds::I16,
    kinds::I32,
    kinds::I64,
    kinds::I128,
    kinds::F32,
    kinds::F64,
    kinds::UNIT,
    kinds::STRING,
    kinds::LIST,
    kinds::SET,
    kinds::MAP,
    kinds::ARRAY,
    kinds::OPTION,
    kinds::TUPLE,
    kinds::DURATION,
    kinds::SYSTEM_TIME,
    kinds::DECIMAL,
    kinds::STRUCT,
    kinds::ENUM,
    kinds::SERDE,
    kinds::RECURSIVE,
    crate::varint_kinds::U16,
    crate::varint_kinds::U32,
    crate::varint_kinds::U64,
    crate::varint_kinds::I16,
    crate::varint_kinds::I32,
    crate::varint_kinds::I64,
];

thread_local! {
    /// Structs and enums being restored on this thread, innermost last, with the cell
    /// that will point at their restored serializer (for recursive references).
    static RESTORING: RefCell<Vec<(String, Arc<OnceLock<Weak<LayoutSerializer>>>)>> = const { RefCell::new(Vec::new()) };
}

/// Restores a struct or enum named `name`: recursive references inside it (restored by
/// `build`) resolve to the serializer built here.
fn restore_named(
    name: &str,
    snapshot: &SerializerSnapshot,
    build: impl FnOnce() -> Result<Layout>,
) -> Result<RestoredSerializer> {
    let cell = Arc::new(OnceLock::new());
    RESTORING.with(|r| r.borrow_mut().push((name.to_owned(), Arc::clone(&cell))));
    struct Pop;
    impl Drop for Pop {
        fn drop(&mut self) {
            RESTORING.with(|r| r.borrow_mut().pop());
        }
    }
    let pop = Pop;
    let layout = build()?;
    drop(pop);
    let restored = Arc::new(LayoutSerializer {
        layout,
        snapshot: snapshot.clone(),
    });
    let _ = cell.set(Arc::downgrade(&restored));
    Ok(restored)
}

pub(crate) fn is_builtin_kind(kind: &str) -> bool {
    BUILTIN.contains(&kind)
}

/// Reads the payload of a struct snapshot: its name and field names, checked against
/// the nested field snapshots.
pub fn parse_struct_payload(snapshot: &SerializerSnapshot) -> Result<(String, Vec<String>)> {
    parse_named_payload(snapshot, "struct", "fields")
}

fn parse_named_payload(
    snapshot: &SerializerSnapshot,
    what: &str,
    parts: &str,
) -> Result<(String, Vec<String>)> {
    let mut input = DataInputView::new(snapshot.payload());
    let name = payload::read_name(&mut input)?;
    let names = payload::read_names(&mut input)?;
    if names.len() != snapshot.nested().len() {
        return Err(Error::CorruptSnapshot(format!(
            "{what} `{name}` names {} {parts} but has {} nested snapshots",
            names.len(),
            snapshot.nested().len()
        )));
    }
    if !input.is_empty() {
        return Err(Error::CorruptSnapshot(format!(
            "{what} `{name}` payload has {} trailing bytes",
            input.remaining()
        )));
    }
    Ok((name, names))
}

/// Reads the payload of an enum snapshot: its name and variant names, checked against
/// the nested variant snapshots.
pub fn parse_enum_payload(snapshot: &SerializerSnapshot) -> Result<(String, Vec<String>)> {
    parse_named_payload(snapshot, "enum", "variants")
}

pub(crate) fn restore_builtin(
    snapshot: &SerializerSnapshot,
    registry: &SnapshotRegistry,
) -> Result<Option<RestoredSerializer>> {
    if !is_builtin_kind(snapshot.kind()) {
        return Ok(None);
    }
    snapshot.check_version(1)?;
    let nested =
        |i: usize| -> Result<RestoredSerializer> { registry.restore(snapshot.nested_at(i)?) };
    let layout = match snapshot.kind() {
        kinds::BOOL => Layout::Bool,
        kinds::CHAR => Layout::Char,
        kinds::U8 => Layout::U8,
        kinds::U16 => Layout::U16,
        kinds::U32 => Layout::U32,
        kinds::U64 => Layout::U64,
        kinds::U128 => Layout::U128,
        kinds::I8 => Layout::I8,
        kinds::I16 => Layout::I16,
        kinds::I32 => Layout::I32,
        kinds::I64 => Layout::I64,
        kinds::I128 => Layout::I128,
        kinds::F32 => Layout::F32,
        kinds::F64 => Layout::F64,
        kinds::UNIT => Layout::Unit,
        kinds::STRING => Layout::String,
        kinds::LIST => Layout::List(nested(0)?),
        kinds::SET => Layout::Set(nested(0)?),
        kinds::MAP => Layout::Map(nested(0)?, nested(1)?),
        kinds::ARRAY => {
            let n = DataInputView::new(snapshot.payload()).read_varint()?;
            let n = usize::try_from(n)
                .ok()
                .filter(|n| *n <= 1 << 32)
                .ok_or_else(|| Error::CorruptSnapshot(format!("array length {n} too large")))?;
            let element = nested(0)?;
            if element.min_length() == 0 && n > crate::MAX_ZERO_SIZED_LEN {
                return Err(Error::CorruptSnapshot(format!(
                    "array of {n} zero-sized elements"
                )));
            }
            Layout::Array(n, element)
        }
        kinds::OPTION => Layout::Option(nested(0)?),
        kinds::TUPLE => Layout::Tuple(
            snapshot
                .nested()
                .iter()
                .map(|s| registry.restore(s))
                .collect::<Result<_>>()?,
        ),
        kinds::DURATION => Layout::Duration,
        kinds::SYSTEM_TIME => Layout::SystemTime,
        kinds::DECIMAL => Layout::Decimal,
        kinds::STRUCT => {
            let (name, names) = parse_struct_payload(snapshot)?;
            return restore_named(&name.clone(), snapshot, || {
                let fields = names
                    .into_iter()
                    .zip(snapshot.nested())
                    .map(|(n, s)| Ok((n, registry.restore(s)?)))
                    .collect::<Result<_>>()?;
                Ok(Layout::Struct { name, fields })
            })
            .map(Some);
        }
        kinds::RECURSIVE => {
            let name = payload::read_name(&mut DataInputView::new(snapshot.payload()))?;
            let target = RESTORING
                .with(|r| {
                    r.borrow()
                        .iter()
                        .rev()
                        .find(|(n, _)| *n == name)
                        .map(|(_, c)| Arc::clone(c))
                })
                .ok_or_else(|| {
                    Error::CorruptSnapshot(format!(
                        "recursive reference to `{name}` outside of `{name}`"
                    ))
                })?;
            Layout::Recursive { name, target }
        }
        kinds::ENUM => {
            let (name, names) = parse_enum_payload(snapshot)?;
            return restore_named(&name.clone(), snapshot, || {
            let mut variants = Vec::with_capacity(names.len());
            for (variant, s) in names.into_iter().zip(snapshot.nested()) {
                if s.kind() != kinds::STRUCT {
                    return Err(Error::CorruptSnapshot(format!(
                        "variant `{variant}` of enum `{name}` is a `{}` snapshot, expected `struct`",
                        s.kind()
                    )));
                }
                let (_, field_names) = parse_struct_payload(s)?;
                let fields = field_names
                    .into_iter()
                    .zip(s.nested())
                    .map(|(n, s)| Ok((n, registry.restore(s)?)))
                    .collect::<Result<_>>()?;
                variants.push((variant, fields));
            }
            Ok(Layout::Enum { name, variants })
            })
            .map(Some);
        }
        kinds::SERDE => Layout::Serde,
        crate::varint_kinds::U16 => Layout::VarU(16),
        crate::varint_kinds::U32 => Layout::VarU(32),
        crate::varint_kinds::U64 => Layout::VarU(64),
        crate::varint_kinds::I16 => Layout::VarI(16),
        crate::varint_kinds::I32 => Layout::VarI(32),
        crate::varint_kinds::I64 => Layout::VarI(64),
        _ => return Ok(None),
    };
    Ok(Some(Arc::new(LayoutSerializer {
        layout,
        snapshot: snapshot.clone(),
    })))
}

fn recursive_target(
    name: &str,
    target: &OnceLock<Weak<LayoutSerializer>>,
) -> Result<Arc<LayoutSerializer>> {
    target.get().and_then(Weak::upgrade).ok_or_else(|| {
        Error::custom(format!(
            "the restored serializer of recursive type `{name}` is gone"
        ))
    })
}

fn mismatch(layout: &Layout, value: &Value) -> Error {
    Error::custom(format!(
        "value {value:?} does not fit the restored layout {layout:?}"
    ))
}

fn read_fields(
    fields: &[(String, RestoredSerializer)],
    input: &mut DataInputView<'_>,
) -> Result<Vec<(String, Value)>> {
    fields
        .iter()
        .map(|(n, s)| Ok((n.clone(), s.deserialize(input)?)))
        .collect()
}

fn write_fields(
    fields: &[(String, RestoredSerializer)],
    values: &[(String, Value)],
    out: &mut DataOutputView,
) -> Result<()> {
    if fields.len() != values.len() {
        return Err(Error::custom(format!(
            "expected {} fields, got {}",
            fields.len(),
            values.len()
        )));
    }
    for ((_, s), (_, v)) in fields.iter().zip(values) {
        s.serialize(v, out)?;
    }
    Ok(())
}

impl TypeSerializer<Value> for LayoutSerializer {
    fn serialize(&self, value: &Value, out: &mut DataOutputView) -> Result<()> {
        match (&self.layout, value) {
            (Layout::Bool, Value::Bool(v)) => out.write_bool(*v),
            (Layout::Char, Value::Char(v)) => out.write_u32(*v as u32),
            (Layout::U8, Value::U8(v)) => out.write_u8(*v),
            (Layout::U16, Value::U16(v)) => out.write_u16(*v),
            (Layout::U32, Value::U32(v)) => out.write_u32(*v),
            (Layout::U64, Value::U64(v)) => out.write_u64(*v),
            (Layout::U128, Value::U128(v)) => out.write_u128(*v),
            (Layout::I8, Value::I8(v)) => out.write_i8(*v),
            (Layout::I16, Value::I16(v)) => out.write_i16(*v),
            (Layout::I32, Value::I32(v)) => out.write_i32(*v),
            (Layout::I64, Value::I64(v)) => out.write_i64(*v),
            (Layout::I128, Value::I128(v)) => out.write_i128(*v),
            (Layout::F32, Value::F32(v)) => out.write_f32(*v),
            (Layout::F64, Value::F64(v)) => out.write_f64(*v),
            (Layout::Unit, Value::Unit) => {}
            (Layout::String, Value::String(s)) => out.write_len_prefixed(s.as_bytes()),
            (Layout::List(e), Value::List(items)) | (Layout::Set(e), Value::Set(items)) => {
                out.write_len(items.len());
                for item in items {
                    e.serialize(item, out)?;
                }
            }
            (Layout::Map(k, v), Value::Map(entries)) => {
                out.write_len(entries.len());
                for (key, value) in entries {
                    k.serialize(key, out)?;
                    v.serialize(value, out)?;
                }
            }
            (Layout::Array(n, e), Value::Array(items)) if items.len() == *n => {
                for item in items {
                    e.serialize(item, out)?;
                }
            }
            (Layout::Option(_), Value::Option(None)) => out.write_u8(0),
            (Layout::Option(e), Value::Option(Some(v))) => {
                out.write_u8(1);
                e.serialize(v, out)?;
            }
            (Layout::Tuple(parts), Value::Tuple(items)) if parts.len() == items.len() => {
                for (p, item) in parts.iter().zip(items) {
                    p.serialize(item, out)?;
                }
            }
            (Layout::Duration, Value::Duration(d)) => {
                out.write_u64(d.as_secs());
                out.write_u32(d.subsec_nanos());
            }
            (Layout::SystemTime, Value::SystemTime { secs, nanos }) => {
                out.write_i64(*secs);
                out.write_u32(*nanos);
            }
            (Layout::Decimal, Value::Decimal { scale, unscaled }) => {
                out.write_varint_signed(*scale);
                out.write_len_prefixed(unscaled);
            }
            (Layout::Struct { fields, .. }, Value::Struct { fields: values, .. }) => {
                write_fields(fields, values, out)?;
            }
            (
                Layout::Enum { variants, .. },
                Value::Enum {
                    index,
                    fields: values,
                    ..
                },
            ) => {
                let (_, fields) = variants
                    .get(*index as usize)
                    .ok_or_else(|| mismatch(&self.layout, value))?;
                out.write_varint(*index as u64);
                write_fields(fields, values, out)?;
            }
            (Layout::Serde, Value::Opaque(bytes)) => out.write_len_prefixed(bytes),
            (Layout::VarU(16), Value::U16(v)) => out.write_varint(u64::from(*v)),
            (Layout::VarU(32), Value::U32(v)) => out.write_varint(u64::from(*v)),
            (Layout::VarU(64), Value::U64(v)) => out.write_varint(*v),
            (Layout::VarI(16), Value::I16(v)) => out.write_varint_signed(i64::from(*v)),
            (Layout::VarI(32), Value::I32(v)) => out.write_varint_signed(i64::from(*v)),
            (Layout::VarI(64), Value::I64(v)) => out.write_varint_signed(*v),
            (Layout::Recursive { name, target }, value) => {
                recursive_target(name, target)?.serialize(value, out)?
            }
            (layout, value) => return Err(mismatch(layout, value)),
        }
        Ok(())
    }

    fn deserialize(&self, input: &mut DataInputView<'_>) -> Result<Value> {
        Ok(match &self.layout {
            Layout::Bool => Value::Bool(input.read_bool()?),
            Layout::Char => {
                let v = input.read_u32()?;
                Value::Char(char::from_u32(v).ok_or(Error::InvalidChar(v))?)
            }
            Layout::U8 => Value::U8(input.read_u8()?),
            Layout::U16 => Value::U16(input.read_u16()?),
            Layout::U32 => Value::U32(input.read_u32()?),
            Layout::U64 => Value::U64(input.read_u64()?),
            Layout::U128 => Value::U128(input.read_u128()?),
            Layout::I8 => Value::I8(input.read_i8()?),
            Layout::I16 => Value::I16(input.read_i16()?),
            Layout::I32 => Value::I32(input.read_i32()?),
            Layout::I64 => Value::I64(input.read_i64()?),
            Layout::I128 => Value::I128(input.read_i128()?),
            Layout::F32 => Value::F32(input.read_f32()?),
            Layout::F64 => Value::F64(input.read_f64()?),
            Layout::Unit => Value::Unit,
            Layout::String => {
                let bytes = input.read_len_prefixed()?;
                Value::String(
                    std::str::from_utf8(bytes)
                        .map_err(|_| Error::InvalidUtf8)?
                        .to_owned(),
                )
            }
            Layout::List(e) => {
                let n = input.read_len(e.min_length())?;
                {
                    let mut v = Vec::new();
                    e.deserialize_append(n, input, &mut v)?;
                    Value::List(v)
                }
            }
            Layout::Set(e) => {
                let n = input.read_len(e.min_length())?;
                let mut seen = HashSet::with_capacity(n.min(input.remaining()));
                let mut items = Vec::with_capacity(n.min(input.remaining()));
                for _ in 0..n {
                    let start = input.position();
                    items.push(e.deserialize(input)?);
                    if !seen.insert(input.consumed_since(start)) {
                        return Err(Error::custom("set bytes repeat an element"));
                    }
                }
                Value::Set(items)
            }
            Layout::Map(k, v) => {
                let n = input.read_len(k.min_length().saturating_add(v.min_length()))?;
                let mut seen = HashSet::with_capacity(n.min(input.remaining()));
                let mut entries = Vec::with_capacity(n.min(input.remaining()));
                for _ in 0..n {
                    let start = input.position();
                    let key = k.deserialize(input)?;
                    if !seen.insert(input.consumed_since(start)) {
                        return Err(Error::custom("map bytes repeat a key"));
                    }
                    entries.push((key, v.deserialize(input)?));
                }
                Value::Map(entries)
            }
            Layout::Array(n, e) => {
                let mut v = Vec::new();
                e.deserialize_append(*n, input, &mut v)?;
                Value::Array(v)
            }
            Layout::Option(e) => match input.read_u8()? {
                0 => Value::Option(None),
                1 => Value::Option(Some(Box::new(e.deserialize(input)?))),
                tag => {
                    return Err(Error::InvalidTag {
                        what: "Option".to_owned(),
                        tag: tag as u64,
                    })
                }
            },
            Layout::Tuple(parts) => Value::Tuple(
                parts
                    .iter()
                    .map(|p| p.deserialize(input))
                    .collect::<Result<_>>()?,
            ),
            Layout::Duration => {
                let secs = input.read_u64()?;
                let nanos = input.read_u32()?;
                if nanos >= 1_000_000_000 {
                    return Err(Error::OutOfRange {
                        what: "Duration".to_owned(),
                        detail: format!("{nanos} nanoseconds"),
                    });
                }
                Value::Duration(Duration::new(secs, nanos))
            }
            Layout::SystemTime => {
                let secs = input.read_i64()?;
                let nanos = input.read_u32()?;
                if nanos >= 1_000_000_000 {
                    return Err(Error::OutOfRange {
                        what: "SystemTime".to_owned(),
                        detail: format!("{nanos} nanoseconds"),
                    });
                }
                Value::SystemTime { secs, nanos }
            }
            Layout::Decimal => {
                let scale = input.read_varint_signed()?;
                let unscaled = input.read_len_prefixed()?.to_vec();
                if unscaled.is_empty() {
                    return Err(Error::OutOfRange {
                        what: "Decimal".to_owned(),
                        detail: "empty unscaled value".to_owned(),
                    });
                }
                Value::Decimal { scale, unscaled }
            }
            Layout::Struct { name, fields } => Value::Struct {
                name: name.clone(),
                fields: read_fields(fields, input)?,
            },
            Layout::Enum { name, variants } => {
                let tag = input.read_varint()?;
                let index = u32::try_from(tag).map_err(|_| Error::InvalidTag {
                    what: name.clone(),
                    tag,
                })?;
                let (variant, fields) =
                    variants
                        .get(index as usize)
                        .ok_or_else(|| Error::InvalidTag {
                            what: name.clone(),
                            tag,
                        })?;
                Value::Enum {
                    name: name.clone(),
                    index,
                    variant: variant.clone(),
                    fields: read_fields(fields, input)?,
                }
            }
            Layout::Serde => Value::Opaque(input.read_len_prefixed()?.to_vec()),
            Layout::VarU(bits) => {
                let v = input.read_varint()?;
                let range = || Error::OutOfRange {
                    what: format!("varint u{bits}"),
                    detail: format!("{v} does not fit"),
                };
                match bits {
                    16 => Value::U16(u16::try_from(v).map_err(|_| range())?),
                    32 => Value::U32(u32::try_from(v).map_err(|_| range())?),
                    _ => Value::U64(v),
                }
            }
            Layout::VarI(bits) => {
                let v = input.read_varint_signed()?;
                let range = || Error::OutOfRange {
                    what: format!("varint i{bits}"),
                    detail: format!("{v} does not fit"),
                };
                match bits {
                    16 => Value::I16(i16::try_from(v).map_err(|_| range())?),
                    32 => Value::I32(i32::try_from(v).map_err(|_| range())?),
                    _ => Value::I64(v),
                }
            }
            Layout::Recursive { name, target } => {
                recursive_target(name, target)?.deserialize(input)?
            }
        })
    }

    fn copy(&self, value: &Value) -> Value {
        value.clone()
    }

    fn skip(&self, input: &mut DataInputView<'_>) -> Result<()> {
        match &self.layout {
            Layout::String | Layout::Serde => input.read_len_prefixed().map(|_| ()),
            Layout::List(e) | Layout::Set(e) => {
                let n = input.read_len(e.min_length())?;
                e.skip_many(n, input)
            }
            Layout::Map(k, v) => {
                let n = input.read_len(k.min_length().saturating_add(v.min_length()))?;
                for _ in 0..n {
                    k.skip(input)?;
                    v.skip(input)?;
                }
                Ok(())
            }
            Layout::Array(n, e) => e.skip_many(*n, input),
            Layout::Option(e) => match input.read_u8()? {
                0 => Ok(()),
                1 => e.skip(input),
                tag => Err(Error::InvalidTag {
                    what: "Option".to_owned(),
                    tag: tag as u64,
                }),
            },
            Layout::Tuple(parts) => parts.iter().try_for_each(|p| p.skip(input)),
            Layout::Decimal => {
                input.read_varint_signed()?;
                input.read_len_prefixed().map(|_| ())
            }
            Layout::Struct { fields, .. } => fields.iter().try_for_each(|(_, s)| s.skip(input)),
            Layout::Enum { name, variants } => {
                let tag = input.read_varint()?;
                let (_, fields) = usize::try_from(tag)
                    .ok()
                    .and_then(|i| variants.get(i))
                    .ok_or_else(|| Error::InvalidTag {
                        what: name.clone(),
                        tag,
                    })?;
                fields.iter().try_for_each(|(_, s)| s.skip(input))
            }
            Layout::Recursive { name, target } => recursive_target(name, target)?.skip(input),
            // Fixed-length layouts; validate while skipping so that a restored serializer
            // never accepts bytes its typed counterpart refuses.
            _ => self.deserialize(input).map(|_| ()),
        }
    }

    fn fixed_length(&self) -> Option<usize> {
        Some(match &self.layout {
            Layout::Bool | Layout::U8 | Layout::I8 => 1,
            Layout::U16 | Layout::I16 => 2,
            Layout::Char | Layout::U32 | Layout::I32 | Layout::F32 => 4,
            Layout::U64 | Layout::I64 | Layout::F64 => 8,
            Layout::U128 | Layout::I128 => 16,
            Layout::Unit => 0,
            Layout::Duration | Layout::SystemTime => 12,
            Layout::Array(n, e) => e.fixed_length()?.checked_mul(*n)?,
            Layout::Tuple(parts) => parts
                .iter()
                .try_fold(0usize, |acc, p| acc.checked_add(p.fixed_length()?))?,
            Layout::Struct { fields, .. } => fields
                .iter()
                .try_fold(0usize, |acc, (_, s)| acc.checked_add(s.fixed_length()?))?,
            _ => return None,
        })
    }

    fn min_length(&self) -> usize {
        match &self.layout {
            Layout::Array(n, e) => e.min_length().saturating_mul(*n),
            Layout::Tuple(parts) => parts
                .iter()
                .fold(0usize, |acc, p| acc.saturating_add(p.min_length())),
            Layout::Struct { fields, .. } => fields
                .iter()
                .fold(0usize, |acc, (_, s)| acc.saturating_add(s.min_length())),
            _ => self.fixed_length().unwrap_or(1),
        }
    }

    fn snapshot(&self) -> SerializerSnapshot {
        self.snapshot.clone()
    }
}
