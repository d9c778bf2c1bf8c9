//! Every built-in serializer and comparator.

pub mod array;
pub mod decimal;
pub mod list;
pub mod map;
pub mod option;
#[allow(unsafe_code)] // plain-old-data memcpy paths (each block has a SAFETY comment)
pub mod pod;
pub mod pointer;
pub mod primitive;
pub mod record;
pub mod set;
pub mod string;
pub mod time;
pub mod tuple;
pub mod varint;

use crate::compatibility::{Incompatibility, MigrationReader, PathSegment};
use crate::error::Result;
use crate::input::DataInputView;
use crate::serializer::SnapshotRegistry;
use crate::serializer::TypeSerializer;
use crate::serializer::{Compatibility, FieldReader};
use crate::snapshot::SerializerSnapshot;

/// Fails unless `old` has the kind and version of `new`.
pub(crate) fn check_kind(
    new: &SerializerSnapshot,
    old: &SerializerSnapshot,
) -> Result<(), Incompatibility> {
    if old.kind() == new.kind() && old.version() == new.version() {
        Ok(())
    } else {
        Err(Incompatibility::between(old, new))
    }
}

/// Resolves the part `child` against the old snapshot's nested snapshot at `index`.
///
/// An incompatibility is placed under `segment` and named after the stored (old) type;
/// an enclosing composite renames it after itself, so the outermost type names the path.
pub(crate) fn resolve_child<T: 'static, S: TypeSerializer<T> + Clone>(
    child: &S,
    old: &SerializerSnapshot,
    index: usize,
    registry: &SnapshotRegistry,
    segment: PathSegment,
) -> Result<FieldReader<T, S>, Incompatibility> {
    let old_child = old
        .nested_at(index)
        .map_err(|e| Incompatibility::new(old.type_name(), "?").with_detail(e.to_string()))?;
    child
        .resolve(old_child, registry)
        .into_reader(child.clone())
        .map_err(|inc| inc.within(segment).in_type(old.type_name()))
}

/// Reads a length-prefixed sequence of old-layout elements with `read`.
pub(crate) fn read_seq<T>(
    input: &mut DataInputView<'_>,
    mut read: impl FnMut(&mut DataInputView<'_>) -> Result<T>,
) -> Result<Vec<T>> {
    let n = input.read_count()?;
    let mut out = Vec::with_capacity(crate::capacity_for::<T>(n, 0));
    for _ in 0..n {
        out.push(read(input)?);
    }
    Ok(out)
}

/// Resolves a collection of one element type: kind must match; the element decides.
/// `rebuild` reads one whole old collection with the element reader when it migrates.
pub(crate) fn resolve_collection<C: 'static, T: 'static, S: TypeSerializer<T> + Clone>(
    new: SerializerSnapshot,
    old: &SerializerSnapshot,
    element: &S,
    registry: &SnapshotRegistry,
    rebuild: fn(Vec<T>) -> Result<C>,
) -> Compatibility<C> {
    if let Err(inc) = check_kind(&new, old) {
        return Compatibility::Incompatible(inc);
    }
    match resolve_child(element, old, 0, registry, PathSegment::Element) {
        Err(inc) => Compatibility::Incompatible(inc),
        Ok(FieldReader::Current(_)) => Compatibility::AsIs,
        Ok(reader) => Compatibility::AfterMigration(MigrationReader::new(move |input| {
            rebuild(read_seq(input, |i| reader.read(i))?)
        })),
    }
}
