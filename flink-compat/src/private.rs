//! Items the derive's generated code calls. Not a public API.

pub use crate::flink_snapshot::migration::{missing_field, PojoMigration};
pub use crate::flink_type::{FlinkField, FlinkType};
pub use crate::layout::enumeration::{EnumSerializer, FlinkEnum};
pub use crate::layout::nullable::{NotNull, Nullable};
pub use crate::layout::pojo::{FlinkPojo, PojoSerializer};
pub use typeinfo::{DataInputView, DataOutputView, Error, Result, SerializerSnapshot};

use typeinfo::TypeSerializer;

/// Writes one POJO field (its null marker included).
#[inline]
pub fn write_field<T, S: TypeSerializer<T>>(
    serializer: &S,
    value: &T,
    out: &mut DataOutputView,
) -> Result<()> {
    serializer.serialize(value, out)
}

/// Reads one POJO field; a null where the Rust type is not an `Option` is an error naming
/// the field.
#[inline]
pub fn read_field<T, S: TypeSerializer<T>>(
    serializer: &S,
    nullable: bool,
    class: &str,
    field: &str,
    input: &mut DataInputView<'_>,
) -> Result<T> {
    if !nullable && input.rest().first() == Some(&1) {
        return Err(Error::OutOfRange {
            what: format!("field `{field}` of Flink POJO `{class}`"),
            detail: "null in Flink's bytes, and its Rust type is not an Option".to_owned(),
        });
    }
    serializer.deserialize(input)
}

/// Skips one POJO field.
#[inline]
pub fn skip_field<T, S: TypeSerializer<T>>(
    serializer: &S,
    input: &mut DataInputView<'_>,
) -> Result<()> {
    serializer.skip(input)
}

/// Copies one POJO field.
#[inline]
pub fn copy_field<T, S: TypeSerializer<T>>(serializer: &S, value: &T) -> T {
    serializer.copy(value)
}

/// The snapshot of one POJO field's serializer, without the null marker every POJO field
/// has (as Flink's `PojoSerializerSnapshot` holds it).
#[inline]
pub fn field_snapshot<T, S: TypeSerializer<T>>(serializer: &S) -> SerializerSnapshot {
    crate::layout::nullable::without_marker(serializer.snapshot())
}
