//! The layouts the derive writes, owned here for the type-free reader: a struct is its
//! fields back to back; an enum is a varint variant tag (the variant's index in
//! declaration order), then the variant's fields; a `recursive` snapshot refers to the
//! enclosing struct or enum of that name and has the bytes of a value of it.
//!
//! Reading a recursive reference spends one level of the view's depth budget, as the
//! typed serializer of a recursive field does (`typeinfo::__private::Lazy`).

use std::fmt;
use std::sync::{Arc, Weak};

use crate::error::{Error, Result};
use crate::input::{ensure_stack, DataInputView, LAYOUTS_PER_LEVEL};
use crate::output::DataOutputView;
use crate::restoring::{mismatch, restore_named, restoring, RecursiveTarget};
use crate::serializer::TypeSerializer;
use crate::serializer::{RestoredSerializer, SnapshotRegistry};
use crate::snapshot::{kinds, payload, SerializerSnapshot};
use crate::value::Value;

/// Reads an enum's variant tag and checks it against the `count` variants of `what`.
///
/// # Errors
///
/// [`Error::InvalidTag`] naming `what` for a tag no variant has.
#[inline]
pub fn read_variant_tag(input: &mut DataInputView<'_>, what: &str, count: usize) -> Result<usize> {
    let tag = input.read_varint()?;
    match usize::try_from(tag) {
        Ok(index) if index < count => Ok(index),
        _ => Err(Error::InvalidTag {
            what: what.to_owned(),
            tag,
        }),
    }
}

/// Writes an enum's variant tag.
#[inline]
pub fn write_variant_tag(out: &mut DataOutputView, index: usize) {
    out.write_len(index);
}

/// Reads the payload of a struct snapshot: its name and field names, checked against
/// the nested field snapshots.
///
/// # Errors
///
/// [`Error::CorruptSnapshot`] for a malformed payload or a count of names that differs
/// from the nested snapshots.
pub fn parse_struct_payload(snapshot: &SerializerSnapshot) -> Result<(String, Vec<String>)> {
    parse_named_payload(snapshot, "struct", "fields")
}

/// Reads the payload of an enum snapshot: its name and variant names, checked against
/// the nested variant snapshots.
///
/// # Errors
///
/// As [`parse_struct_payload`].
pub fn parse_enum_payload(snapshot: &SerializerSnapshot) -> Result<(String, Vec<String>)> {
    parse_named_payload(snapshot, "enum", "variants")
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

/// Named fields and their restored serializers.
type Fields = Vec<(Arc<str>, RestoredSerializer)>;

fn restore_fields(
    names: Vec<String>,
    snapshot: &SerializerSnapshot,
    registry: &SnapshotRegistry,
) -> Result<Fields> {
    names
        .into_iter()
        .zip(snapshot.nested())
        .map(|(n, s)| Ok((Arc::from(n), registry.restore(s)?)))
        .collect()
}

// The readers on the path of a recursive value (fields, enum, recursive reference) take
// care of their stack frames, which is what a level of a recursive value costs: they call
// through `&dyn` (`(**s)`) rather than through the `Arc`'s own impl (one frame less), match
// results instead of using `?` (whose temporaries a debug build keeps apart), and build
// errors in cold functions.

fn read_fields(
    fields: &[(Arc<str>, RestoredSerializer)],
    input: &mut DataInputView<'_>,
) -> Result<Vec<(Arc<str>, Value)>> {
    let mut values = Vec::with_capacity(fields.len());
    for (n, s) in fields {
        match (**s).deserialize(input) {
            // Names are shared, not copied: a value costs no more than its layout's fields.
            Ok(value) => values.push((Arc::clone(n), value)),
            Err(e) => return Err(e),
        }
    }
    Ok(values)
}

fn write_fields(
    fields: &[(Arc<str>, RestoredSerializer)],
    values: &[(Arc<str>, Value)],
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
        (**s).serialize(v, out)?;
    }
    Ok(())
}

fn skip_fields(
    fields: &[(Arc<str>, RestoredSerializer)],
    input: &mut DataInputView<'_>,
) -> Result<()> {
    for (_, s) in fields {
        (**s).skip(input)?;
    }
    Ok(())
}

/// The type-free serializer of a struct layout.
#[derive(Debug)]
struct RestoredStruct {
    name: Arc<str>,
    fields: Fields,
    snapshot: SerializerSnapshot,
}

pub(crate) fn restore_struct(
    snapshot: &SerializerSnapshot,
    registry: &SnapshotRegistry,
) -> Result<RestoredSerializer> {
    let (name, names) = parse_struct_payload(snapshot)?;
    restore_named(&name.clone(), snapshot, || {
        let fields = restore_fields(names, snapshot, registry)?;
        Ok(RestoredStruct {
            name: Arc::from(name),
            fields,
            snapshot: snapshot.clone(),
        })
    })
}

impl TypeSerializer<Value> for RestoredStruct {
    fn serialize(&self, value: &Value, out: &mut DataOutputView) -> Result<()> {
        match value {
            Value::Struct { fields, .. } => write_fields(&self.fields, fields, out),
            _ => Err(mismatch(self, value)),
        }
    }
    fn deserialize(&self, input: &mut DataInputView<'_>) -> Result<Value> {
        match read_fields(&self.fields, input) {
            Ok(fields) => Ok(Value::Struct {
                name: Arc::clone(&self.name),
                fields,
            }),
            Err(e) => Err(e),
        }
    }
    fn copy(&self, value: &Value) -> Value {
        value.clone()
    }
    fn skip(&self, input: &mut DataInputView<'_>) -> Result<()> {
        skip_fields(&self.fields, input)
    }
    fn fixed_length(&self) -> Option<usize> {
        self.fields
            .iter()
            .try_fold(0usize, |acc, (_, s)| acc.checked_add(s.fixed_length()?))
    }
    fn min_length(&self) -> usize {
        self.fields
            .iter()
            .fold(0usize, |acc, (_, s)| acc.saturating_add(s.min_length()))
    }
    fn snapshot(&self) -> SerializerSnapshot {
        self.snapshot.clone()
    }
}

/// The type-free serializer of an enum layout.
#[derive(Debug)]
struct RestoredEnum {
    name: Arc<str>,
    variants: Vec<(Arc<str>, Fields)>,
    snapshot: SerializerSnapshot,
}

pub(crate) fn restore_enum(
    snapshot: &SerializerSnapshot,
    registry: &SnapshotRegistry,
) -> Result<RestoredSerializer> {
    let (name, names) = parse_enum_payload(snapshot)?;
    if u32::try_from(names.len()).is_err() {
        return Err(Error::CorruptSnapshot(format!(
            "enum `{name}` has {} variants",
            names.len()
        )));
    }
    restore_named(&name.clone(), snapshot, || {
        let mut variants = Vec::with_capacity(names.len());
        for (variant, s) in names.into_iter().zip(snapshot.nested()) {
            if s.kind() != kinds::STRUCT {
                return Err(Error::CorruptSnapshot(format!(
                    "variant `{variant}` of enum `{name}` is a `{}` snapshot, expected `struct`",
                    s.kind()
                )));
            }
            let (_, field_names) = parse_struct_payload(s)?;
            variants.push((
                Arc::from(variant),
                restore_fields(field_names, s, registry)?,
            ));
        }
        Ok(RestoredEnum {
            name: Arc::from(name),
            variants,
            snapshot: snapshot.clone(),
        })
    })
}

impl RestoredEnum {
    /// Reads the variant tag: the variant's index, name and fields.
    #[inline(never)]
    fn variant(&self, input: &mut DataInputView<'_>) -> Result<(usize, &Arc<str>, &Fields)> {
        let index = read_variant_tag(input, &self.name, self.variants.len())?;
        match self.variants.get(index) {
            Some((variant, fields)) => Ok((index, variant, fields)),
            None => Err(Error::InvalidTag {
                what: self.name.to_string(),
                tag: index as u64,
            }),
        }
    }
}

// Matches instead of `?` on the path of a recursive value: see `read_fields`.
#[allow(clippy::question_mark)]
impl TypeSerializer<Value> for RestoredEnum {
    fn serialize(&self, value: &Value, out: &mut DataOutputView) -> Result<()> {
        let Value::Enum { index, fields, .. } = value else {
            return Err(mismatch(self, value));
        };
        let index = *index as usize;
        let Some((_, variant)) = self.variants.get(index) else {
            return Err(mismatch(self, value));
        };
        write_variant_tag(out, index);
        write_fields(variant, fields, out)
    }
    fn deserialize(&self, input: &mut DataInputView<'_>) -> Result<Value> {
        let (index, variant, fields) = match self.variant(input) {
            Ok(found) => found,
            Err(e) => return Err(e),
        };
        match read_fields(fields, input) {
            // `restore_enum` refused more than `u32::MAX` variants.
            Ok(fields) => Ok(Value::Enum {
                name: Arc::clone(&self.name),
                index: index as u32,
                variant: Arc::clone(variant),
                fields,
            }),
            Err(e) => Err(e),
        }
    }
    fn copy(&self, value: &Value) -> Value {
        value.clone()
    }
    fn skip(&self, input: &mut DataInputView<'_>) -> Result<()> {
        match self.variant(input) {
            Ok((_, _, fields)) => skip_fields(fields, input),
            Err(e) => Err(e),
        }
    }
    fn snapshot(&self) -> SerializerSnapshot {
        self.snapshot.clone()
    }
}

/// A reference to the enclosing struct or enum of the same name.
struct RestoredRecursive {
    name: String,
    target: RecursiveTarget,
    /// The depth budget one level spends: one per [`LAYOUTS_PER_LEVEL`] layouts between
    /// the referenced type and this reference, at least one.
    levels: usize,
    snapshot: SerializerSnapshot,
}

impl fmt::Debug for RestoredRecursive {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Recursive({})", self.name)
    }
}

pub(crate) fn restore_recursive(
    snapshot: &SerializerSnapshot,
    _: &SnapshotRegistry,
) -> Result<RestoredSerializer> {
    let name = payload::read_name(&mut DataInputView::new(snapshot.payload()))?;
    let (target, layouts) = restoring(&name).ok_or_else(|| {
        Error::CorruptSnapshot(format!(
            "recursive reference to `{name}` outside of `{name}`"
        ))
    })?;
    Ok(Arc::new(RestoredRecursive {
        name,
        target,
        levels: layouts.div_ceil(LAYOUTS_PER_LEVEL).max(1),
        snapshot: snapshot.clone(),
    }))
}

impl RestoredRecursive {
    #[inline(always)]
    fn target(&self) -> Option<RestoredSerializer> {
        self.target.get().and_then(Weak::upgrade)
    }

    #[cold]
    #[inline(never)]
    fn gone(&self) -> Error {
        Error::custom(format!(
            "the restored serializer of recursive type `{}` is gone",
            self.name
        ))
    }
}

// Matches instead of `?` on the path of a recursive value: see `read_fields`. Each level
// spends `levels` of the depth budget and runs on a stack with room for it
// (`ensure_stack`): what a level costs on the stack depends on the snapshot.
#[allow(clippy::question_mark)]
impl TypeSerializer<Value> for RestoredRecursive {
    fn serialize(&self, value: &Value, out: &mut DataOutputView) -> Result<()> {
        let Some(target) = self.target() else {
            return Err(self.gone());
        };
        if let Err(e) = out.enter_levels(self.levels) {
            return Err(e);
        }
        let written = ensure_stack(|| (*target).serialize(value, out));
        out.leave_levels(self.levels);
        written
    }
    fn deserialize(&self, input: &mut DataInputView<'_>) -> Result<Value> {
        let Some(target) = self.target() else {
            return Err(self.gone());
        };
        if let Err(e) = input.enter_levels(self.levels) {
            return Err(e);
        }
        let value = ensure_stack(|| (*target).deserialize(input));
        input.leave_levels(self.levels);
        value
    }
    fn copy(&self, value: &Value) -> Value {
        value.clone()
    }
    fn skip(&self, input: &mut DataInputView<'_>) -> Result<()> {
        let Some(target) = self.target() else {
            return Err(self.gone());
        };
        if let Err(e) = input.enter_levels(self.levels) {
            return Err(e);
        }
        let skipped = ensure_stack(|| (*target).skip(input));
        input.leave_levels(self.levels);
        skipped
    }
    fn snapshot(&self) -> SerializerSnapshot {
        self.snapshot.clone()
    }
}
