//! The typeinfo snapshots of Flink's layouts.
//!
//! Each layout's snapshot has the kind `flink:<Flink's serializer class>` (for example
//! `flink:IntSerializer`), version 1, the nested snapshots of its parts and, for POJOs and
//! enums, a payload of names. A snapshot compares equal only to the same layout, so a
//! changed layout resolves as incompatible (typeinfo's default verdict). They are also what
//! [`resolve`](crate::resolve) compares Flink's own snapshots
//! ([`FlinkSnapshot`](crate::FlinkSnapshot)) with. The snapshot of a POJO field or a map
//! value leaves out the container's null marker, as Flink's snapshots do.

use typeinfo::{payload, DataOutputView, SerializerSnapshot};

/// The prefix of every kind id of this crate.
pub const KIND_PREFIX: &str = "flink:";

/// The snapshot of the layout of Flink's serializer `class` with parts `nested`.
pub(crate) fn of(class: &str, nested: Vec<SerializerSnapshot>) -> SerializerSnapshot {
    SerializerSnapshot::new(format!("{KIND_PREFIX}{class}"), 1).with_nested(nested)
}

/// The snapshot of a layout named by a Java class and a list of names (a POJO's fields in
/// Flink's order, an enum's constants).
pub(crate) fn named(
    class: &str,
    java_class: &str,
    names: &[&str],
    nested: Vec<SerializerSnapshot>,
) -> SerializerSnapshot {
    let mut out = DataOutputView::new();
    let all: Vec<&str> = std::iter::once(java_class)
        .chain(names.iter().copied())
        .collect();
    payload::write_names(&mut out, all.into_iter());
    of(class, nested).with_payload(out.into_inner())
}
