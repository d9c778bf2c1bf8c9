//! The schema of a derived type and its snapshot.

use std::cell::RefCell;

use typeinfo_serializers::{kinds, payload, DataOutputView, SerializerSnapshot};

/// The kind id of a reference to an enclosing type of the same name (recursive types).
pub use typeinfo_serializers::kinds::RECURSIVE;

/// One serialized field of a struct or variant.
#[derive(Debug, Clone, Copy)]
pub struct FieldSchema {
    /// The field's name in the schema (the identifier, or the index of a tuple field).
    pub name: &'static str,
    /// Earlier names of the field (`#[typeinfo(alias = "...")]`).
    pub aliases: &'static [&'static str],
    /// Whether a value can be made when old bytes lack the field (`default`, or an `Option`).
    pub has_default: bool,
    /// The field's Rust type, as written (for messages).
    pub type_name: &'static str,
}

impl FieldSchema {
    /// Whether `old` names this field, by its name or an alias.
    pub fn answers_to(&self, old: &str) -> bool {
        self.name == old || self.aliases.contains(&old)
    }
}

/// The schema of a struct, or of one enum variant.
#[derive(Debug, Clone, Copy)]
pub struct StructSchema {
    /// The stable type identity (`#[typeinfo(name = "...")]`, else the identifier), or the
    /// variant's name.
    pub name: &'static str,
    /// The serialized fields, in declaration order.
    pub fields: &'static [FieldSchema],
}

/// One variant of an enum.
#[derive(Debug, Clone, Copy)]
pub struct VariantSchema {
    /// The variant's fields.
    pub schema: StructSchema,
    /// Earlier names of the variant.
    pub aliases: &'static [&'static str],
}

impl VariantSchema {
    /// Whether `old` names this variant, by its name or an alias.
    pub fn answers_to(&self, old: &str) -> bool {
        self.schema.name == old || self.aliases.contains(&old)
    }
}

fn named_payload<'a>(name: &str, names: impl ExactSizeIterator<Item = &'a str>) -> Vec<u8> {
    let mut out = DataOutputView::new();
    out.write_len_prefixed(name.as_bytes());
    payload::write_names(&mut out, names);
    out.into_inner()
}

/// The snapshot of a struct: its name and field names, and the field snapshots.
pub fn struct_snapshot(
    schema: &StructSchema,
    fields: Vec<SerializerSnapshot>,
) -> SerializerSnapshot {
    SerializerSnapshot::new(kinds::STRUCT, 1)
        .with_payload(named_payload(
            schema.name,
            schema.fields.iter().map(|f| f.name),
        ))
        .with_nested(fields)
}

/// The snapshot of an enum: its name and variant names, and one struct snapshot per variant.
pub fn enum_snapshot(
    name: &str,
    variants: &[VariantSchema],
    nested: Vec<SerializerSnapshot>,
) -> SerializerSnapshot {
    SerializerSnapshot::new(kinds::ENUM, 1)
        .with_payload(named_payload(name, variants.iter().map(|v| v.schema.name)))
        .with_nested(nested)
}

thread_local! {
    static IN_PROGRESS: RefCell<Vec<&'static str>> = const { RefCell::new(Vec::new()) };
}

/// Builds the snapshot of the type `name` with `build`, unless `name` is already being
/// snapshotted further up this thread's stack: a recursive type then refers to itself with
/// a `recursive` snapshot naming it, instead of recursing forever.
pub fn guarded_snapshot(
    name: &'static str,
    build: impl FnOnce() -> SerializerSnapshot,
) -> SerializerSnapshot {
    let recursive = IN_PROGRESS.with(|s| s.borrow().contains(&name));
    if recursive {
        let mut out = DataOutputView::new();
        out.write_len_prefixed(name.as_bytes());
        return SerializerSnapshot::new(RECURSIVE, 1).with_payload(out.into_inner());
    }
    struct Pop;
    impl Drop for Pop {
        fn drop(&mut self) {
            IN_PROGRESS.with(|s| s.borrow_mut().pop());
        }
    }
    IN_PROGRESS.with(|s| s.borrow_mut().push(name));
    let _pop = Pop;
    build()
}

/// The normalized key of an enum's variant index: one byte for up to 256 variants, else
/// four bytes big-endian (the variant count is fixed per type, so keys stay prefix-free).
#[inline]
pub fn variant_tag_key(index: u32, variant_count: usize, out: &mut Vec<u8>) {
    if variant_count <= 256 {
        out.push(index as u8);
    } else {
        out.extend_from_slice(&index.to_be_bytes());
    }
}

/// The rank of each variant (by declaration index) in the order of their discriminants,
/// for an enum with explicit discriminants (`High = 10, Low = 1`), which
/// `#[derive(PartialOrd, Ord)]` orders by discriminant value, not by declaration.
///
/// `keys` holds each variant's discriminant mapped to a `u128` in the same order (unsigned
/// values as they are, signed ones with the sign bit flipped). Discriminants are distinct
/// (the compiler checks), so the ranks are a permutation of `0..N`.
pub const fn variant_ranks<const N: usize>(keys: [u128; N]) -> [u32; N] {
    let mut ranks = [0u32; N];
    let mut i = 0;
    while i < N {
        let mut j = 0;
        while j < N {
            if keys[j] < keys[i] {
                ranks[i] += 1;
            }
            j += 1;
        }
        i += 1;
    }
    ranks
}

/// The order-preserving `u128` of a signed discriminant, for [`variant_ranks`].
#[inline]
pub const fn signed_discriminant_key(d: i128) -> u128 {
    (d as u128) ^ (1u128 << 127)
}

/// The rank of the variant with serialized tag `tag` (its declaration index), for a derived
/// comparator's `compare_serialized`.
///
/// # Errors
///
/// [`Error::InvalidTag`](crate::Error::InvalidTag) for a tag no variant has.
#[inline]
pub fn variant_rank(ranks: &[u32], tag: u64, what: &str) -> crate::Result<u32> {
    match usize::try_from(tag).ok().and_then(|i| ranks.get(i)) {
        Some(rank) => Ok(*rank),
        None => Err(super::invalid_tag(what, tag)),
    }
}

thread_local! {
    static DESCRIBING: RefCell<Vec<&'static str>> = const { RefCell::new(Vec::new()) };
}

/// Builds the description of the type `name` with `build`, unless it is already being
/// described further up this thread's stack: a recursive type then refers to itself by a
/// description with its name and no fields.
pub fn guarded_description(
    name: &'static str,
    kind: crate::TypeKind,
    build: impl FnOnce() -> crate::TypeDescription,
) -> crate::TypeDescription {
    let recursive = DESCRIBING.with(|s| s.borrow().contains(&name));
    if recursive {
        return crate::TypeDescription::composite(name, kind, Vec::new(), true);
    }
    struct Pop;
    impl Drop for Pop {
        fn drop(&mut self) {
            DESCRIBING.with(|s| s.borrow_mut().pop());
        }
    }
    DESCRIBING.with(|s| s.borrow_mut().push(name));
    let _pop = Pop;
    build()
}
