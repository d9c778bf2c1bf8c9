//! Resolving a Flink snapshot of stored state against the serializer of the Rust type that
//! is to read the state, with typeinfo's verdicts.
//!
//! The Rust side is described by its serializer's typeinfo snapshot (every serializer of
//! this crate has one of kind `flink:<Flink serializer>`), so a layout is compared with a
//! layout, part by part:
//!
//! - the same serializer with the same parts: compatible as is;
//! - a POJO whose fields were added or removed (by Java name): compatible after migration,
//!   as Flink's `PojoSerializerSnapshot` decides; an enum whose constants were reordered or
//!   added in the middle: after migration (ordinals move); constants added at the end: as is;
//! - anything else is incompatible, with the path to the part that changed
//!   (`Order.amount: Double -> String`): a different serializer, a tuple or row of another
//!   arity, a removed enum constant, a null padding that changed, a row without `RowKind`
//!   (Flink before 1.11), a POJO with subclasses, and Kryo (`Kryo state: not readable`).
//!
//! [`resolve_pojo`](crate::resolve_pojo) and [`resolve_enum`](crate::resolve_enum) give the
//! verdict with the reader that migrates Flink's old bytes.

use typeinfo::{
    payload, DataInputView, Incompatibility, PathSegment, SerializerSnapshot, TypeSerializer,
    Verdict,
};

use crate::flink_snapshot::read::{FlinkSnapshot, Outer, SnapshotContent};
use crate::snapshot::KIND_PREFIX;

/// Resolves `old`, Flink's snapshot of stored state, against `new`, the serializer that is to
/// read it: `Ok(Verdict::AsIs)`, `Ok(Verdict::AfterMigration)`, or the incompatibility.
///
/// # Errors
///
/// The [`Incompatibility`] when Flink's bytes cannot become values of the new type.
///
/// # Examples
///
/// ```
/// use typeinfo::{DataInputView, Verdict};
/// use typeinfo_flink_compat::{resolve, FlinkSnapshot, IntSerializer, StringSerializer};
///
/// # fn main() -> typeinfo::Result<()> {
/// // IntSerializer's snapshot as Flink 2.3 writes it.
/// let class = "org.apache.flink.api.common.typeutils.base.IntSerializer$IntSerializerSnapshot";
/// let mut bytes = vec![0, 0, 0, 2, 0, class.len() as u8];
/// bytes.extend_from_slice(class.as_bytes());
/// bytes.extend_from_slice(&[0, 0, 0, 3]);
/// let old = FlinkSnapshot::read_serializer_snapshot(&mut DataInputView::new(&bytes))?;
/// assert_eq!(resolve(&old, &IntSerializer), Ok(Verdict::AsIs));
/// let err = resolve::<String, _>(&old, &StringSerializer).unwrap_err();
/// assert_eq!(err.to_string(), "Int -> String");
/// # Ok(())
/// # }
/// ```
pub fn resolve<T, S: TypeSerializer<T>>(
    old: &FlinkSnapshot,
    new: &S,
) -> Result<Verdict, Incompatibility> {
    compare(old, &new.snapshot())
}

/// Resolves `old` against the serializer Flink's type extraction gives `T`
/// ([`FlinkType`](crate::FlinkType)): `resolve_as::<Order>(&old)`.
///
/// # Errors
///
/// As [`resolve`].
pub fn resolve_as<T: crate::FlinkType>(old: &FlinkSnapshot) -> Result<Verdict, Incompatibility> {
    resolve::<T, _>(old, &T::flink_serializer())
}

/// The Rust side of a comparison: a serializer's name, its parts and its names (a POJO's
/// class and fields, an enum's class and constants).
struct New<'a> {
    name: String,
    nested: &'a [SerializerSnapshot],
    names: Vec<String>,
}

impl<'a> New<'a> {
    fn of(snapshot: &'a SerializerSnapshot) -> Self {
        let kind = snapshot.kind();
        let name = kind.strip_prefix(KIND_PREFIX).unwrap_or(kind).to_owned();
        let names = if snapshot.payload().is_empty() {
            Vec::new()
        } else {
            payload::read_names(&mut DataInputView::new(snapshot.payload())).unwrap_or_default()
        };
        Self {
            name,
            nested: snapshot.nested(),
            names,
        }
    }

    /// The serializer's name without its configuration (`TupleSerializer(Tuple2)` ->
    /// `TupleSerializer`).
    fn base(&self) -> &str {
        self.name.split('(').next().unwrap_or(&self.name)
    }

    fn display(&self) -> String {
        let parts: Vec<String> = self.nested.iter().map(|n| New::of(n).display()).collect();
        match self.base() {
            "PojoSerializer" | "EnumSerializer" => {
                short_class(self.names.first().map_or("?", String::as_str))
            }
            base => display(base, &parts),
        }
    }
}

/// `com.example.Outer$Order` -> `Order`.
fn short_class(class: &str) -> String {
    class.rsplit(['.', '$']).next().unwrap_or(class).to_owned()
}

/// A readable name of a layout: `Int`, `List<String>`, `Map<String, Long>`, `Tuple2<...>`.
fn display(serializer: &str, parts: &[String]) -> String {
    let short = serializer.strip_suffix("Serializer").unwrap_or(serializer);
    match short {
        "List" | "Map" | "Nullable" | "GenericArray" => format!("{short}<{}>", parts.join(", ")),
        "Tuple" => format!("Tuple{}<{}>", parts.len(), parts.join(", ")),
        "Row" => format!("Row({})", parts.join(", ")),
        _ => short.to_owned(),
    }
}

fn display_old(old: &FlinkSnapshot) -> String {
    match &old.content {
        SnapshotContent::Composite { nested, .. } => {
            let parts: Vec<String> = nested.iter().map(display_old).collect();
            display(old.serializer_name(), &parts)
        }
        SnapshotContent::Enum { enum_class, .. } => short_class(enum_class),
        SnapshotContent::Pojo { pojo_class, .. } => short_class(pojo_class),
        SnapshotContent::Kryo { type_class, .. } => format!("Kryo({type_class})"),
        SnapshotContent::Simple { .. } => display(old.serializer_name(), &[]),
    }
}

fn worst(a: Verdict, b: Verdict) -> Verdict {
    if a == Verdict::AfterMigration || b == Verdict::AfterMigration {
        Verdict::AfterMigration
    } else {
        a
    }
}

pub(crate) fn compare(
    old: &FlinkSnapshot,
    new: &SerializerSnapshot,
) -> Result<Verdict, Incompatibility> {
    let new = New::of(new);
    let changed = || Incompatibility::new(display_old(old), new.display());
    if let SnapshotContent::Kryo { type_class, .. } = &old.content {
        return Err(changed().with_detail(format!(
            "Kryo state: not readable: Flink serialized `{type_class}` with Kryo, a generic type"
        )));
    }
    if old.serializer_name() != new.base() {
        return Err(changed());
    }
    match &old.content {
        SnapshotContent::Composite { outer, nested, .. } => {
            if let Some(detail) = outer_change(outer, &new) {
                return Err(changed().with_detail(detail));
            }
            compare_parts(old.serializer_name(), nested, new.nested)
                .map_err(|e| e.unwrap_or_else(&changed))
        }
        SnapshotContent::Enum {
            enum_class,
            constants,
        } => compare_enum(enum_class, constants, &new.names)
            .map_err(|detail| changed().with_detail(detail)),
        SnapshotContent::Pojo { .. } => compare_pojo(old, &new),
        _ => Ok(Verdict::AsIs),
    }
}

/// Why a composite's outer configuration does not match the Rust side's, if it does not.
fn outer_change(outer: &Outer, new: &New<'_>) -> Option<String> {
    match outer {
        Outer::NullPadding(n) if (*n > 0) != new.name.ends_with("(padded)") => {
            Some(format!("null padding of {n} bytes"))
        }
        Outer::RowKind(false) => Some("rows without RowKind (legacy mode)".to_owned()),
        _ => None,
    }
}

/// Compares the parts of two composites of the same serializer. `Err(None)`: the arity
/// changed (the caller names the whole).
fn compare_parts(
    serializer: &str,
    old: &[FlinkSnapshot],
    new: &[SerializerSnapshot],
) -> Result<Verdict, Option<Incompatibility>> {
    if old.len() != new.len() {
        return Err(None);
    }
    let mut verdict = Verdict::AsIs;
    for (i, (o, n)) in old.iter().zip(new).enumerate() {
        let segment = match (serializer, i) {
            ("ListSerializer" | "GenericArraySerializer", _) => PathSegment::Element,
            ("MapSerializer", 0) => PathSegment::MapKey,
            ("MapSerializer", _) => PathSegment::MapValue,
            ("NullableSerializer", _) => PathSegment::Some,
            _ => PathSegment::Index(i),
        };
        verdict = worst(verdict, compare(o, n).map_err(|e| Some(e.within(segment)))?);
    }
    Ok(verdict)
}

/// Old constants at their ordinals: as is; all there but moved: after migration; one gone:
/// the detail.
fn compare_enum(enum_class: &str, old: &[String], new_names: &[String]) -> Result<Verdict, String> {
    let (new_class, new) = new_names.split_first().ok_or("no constants")?;
    if new_class != enum_class {
        return Err(format!("enum class `{enum_class}` became `{new_class}`"));
    }
    if let Some(gone) = old.iter().find(|c| !new.contains(c)) {
        return Err(format!("constant `{gone}` removed"));
    }
    if new.starts_with(old) {
        Ok(Verdict::AsIs)
    } else {
        Ok(Verdict::AfterMigration)
    }
}

fn compare_pojo(old: &FlinkSnapshot, new: &New<'_>) -> Result<Verdict, Incompatibility> {
    let SnapshotContent::Pojo {
        pojo_class,
        fields,
        registered_subclasses,
        subclasses,
    } = &old.content
    else {
        return Ok(Verdict::AsIs);
    };
    let root = short_class(pojo_class);
    let changed = |detail: String| {
        Incompatibility::new(root.clone(), new.display())
            .with_detail(detail)
            .in_type(root.clone())
    };
    let (new_class, new_fields) = new
        .names
        .split_first()
        .ok_or_else(|| changed("no POJO class".to_owned()))?;
    if new_class != pojo_class {
        return Err(changed(format!(
            "POJO class `{pojo_class}` became `{new_class}`"
        )));
    }
    if let Some(sub) = registered_subclasses.iter().chain(subclasses).next() {
        return Err(changed(format!(
            "Flink's state may hold values of its subclass `{sub}`, which is not supported"
        )));
    }
    let mut verdict = if fields.len() == new_fields.len() {
        Verdict::AsIs
    } else {
        Verdict::AfterMigration
    };
    for field in fields {
        let Some(i) = new_fields.iter().position(|n| *n == field.name) else {
            verdict = Verdict::AfterMigration;
            continue;
        };
        let Some(old_field) = &field.snapshot else {
            return Err(changed(format!(
                "Flink wrote no serializer for field `{}`",
                field.name
            )));
        };
        let new_field = new
            .nested
            .get(i)
            .ok_or_else(|| changed("fewer field snapshots than fields".to_owned()))?;
        let v = compare(old_field, new_field).map_err(|e| {
            e.within(PathSegment::Field(field.name.clone()))
                .in_type(root.clone())
        })?;
        verdict = worst(verdict, v);
    }
    Ok(verdict)
}
