//! Support for the code `#[derive(TypeInfo)]` generates. Not a public API: the derive
//! calls these items through `typeinfo::__private`, and they may change in any release.
//!
//! Generated code stays thin: it lists its fields and calls the generic helpers here, so
//! that a user's compile time does not grow with pasted code per field.

pub mod lazy;
pub mod migration;
pub mod schema;

pub use lazy::Lazy;
pub use migration::{resolve_enum, resolve_struct, EnumPlan, Slots, StructPlan};
pub use schema::{
    enum_snapshot, guarded_description, guarded_snapshot, signed_discriminant_key, struct_snapshot,
    variant_rank, variant_ranks, variant_tag_key, FieldSchema, StructSchema, VariantSchema,
};

/// Splits the first field's bytes (`len`, its fixed length) off a fixed-length record's
/// slot, for a derived `write_fixed`.
///
/// # Errors
///
/// A field without a fixed length, or a slot too short: the record does not write fixed
/// values (its `writes_fixed` is false) and the caller should not have asked.
#[inline(always)]
pub fn fixed_split(dst: &mut [u8], len: Option<usize>) -> crate::Result<(&mut [u8], &mut [u8])> {
    match len.and_then(|len| dst.split_at_mut_checked(len)) {
        Some(parts) => Ok(parts),
        None => Err(not_fixed()),
    }
}

#[cold]
#[inline(never)]
fn not_fixed() -> crate::Error {
    crate::Error::custom(
        "a field without a fixed length, or a slot too short, in a fixed-length write",
    )
}

/// Appends one value that `build` writes straight into the vector's next slot (with
/// `MaybeUninit::write`), for a derived enum's `deserialize_append`: the fields go to
/// their place directly, not through a temporary copied with wide loads over narrow
/// stores (a store-forwarding stall).
///
/// # Errors
///
/// The error of `build` (nothing is appended then), or `build` returning a reference
/// other than the one `write` gave it.
#[inline(always)]
#[allow(unsafe_code)] // `set_len` after the element was built in place (SAFETY comment below)
pub fn append_built<T>(
    out: &mut Vec<T>,
    build: impl for<'s> FnOnce(&'s mut std::mem::MaybeUninit<T>) -> crate::Result<&'s mut T>,
) -> crate::Result<()> {
    out.reserve(1);
    let len = out.len();
    let Some(slot) = out.spare_capacity_mut().first_mut() else {
        return Err(crate::Error::custom("no room after reserve"));
    };
    let slot_ptr: *const T = slot.as_ptr();
    let built: *const T = build(slot)?;
    if !std::ptr::eq(built, slot_ptr) {
        return Err(crate::Error::custom(
            "append_built: the value was not written into its slot",
        ));
    }
    // SAFETY: the slot at index `len` lies within the capacity (it came from
    // `spare_capacity_mut`), and `build` returned a `&mut T` to that very slot, which it can
    // only have obtained safely from `MaybeUninit::write` on it (or an equivalent safe
    // initialization), so the element is initialized.
    unsafe { out.set_len(len + 1) };
    Ok(())
}

/// Reads `len` values with `build`, each written straight into the vector's next slot
/// (see [`append_built`]), through a copy of the cursor that can stay in registers: a
/// derived struct's `deserialize_append`.
///
/// # Errors
///
/// The first error of `build`; the values read before it stay in `out`, and `input` is
/// left where the failing value started or later.
#[inline(always)]
pub fn append_each<'a, T>(
    len: usize,
    input: &mut crate::DataInputView<'a>,
    out: &mut Vec<T>,
    mut build: impl for<'s> FnMut(
        &mut crate::DataInputView<'a>,
        &'s mut std::mem::MaybeUninit<T>,
    ) -> crate::Result<&'s mut T>,
) -> crate::Result<()> {
    // `read_len` bounded `len` by the remaining bytes (or the zero-sized budget); reserve
    // at most `capacity_for` up front (grown as elements are read): an element may take
    // far more memory than its smallest bytes.
    out.reserve(typeinfo_serializers::capacity_for::<T>(len, 1));
    let mut local = input.clone();
    let mut result = Ok(());
    for _ in 0..len {
        if let Err(e) = append_built(out, |slot| build(&mut local, slot)) {
            result = Err(e);
            break;
        }
    }
    *input = local;
    result
}

/// The error of an enum tag no variant has, built out of line (the hot path of generated
/// `deserialize` stays small).
#[cold]
#[inline(never)]
pub fn invalid_tag(what: &str, tag: u64) -> crate::Error {
    crate::Error::InvalidTag {
        what: what.to_owned(),
        tag,
    }
}
