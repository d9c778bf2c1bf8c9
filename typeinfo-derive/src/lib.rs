//! `#[derive(TypeInfo)]` for structs and enums.
//!
//! Generates, for the type: its serializer (fields in declaration order, no per-field
//! markers, an enum's variant as a varint tag), its `TypeInfo` impl and description, its
//! snapshot (name, field names, field snapshots), the resolution against an older snapshot
//! with a reader that migrates old bytes into today's type, and, when every field is
//! comparable, a comparator (the order of `#[derive(PartialOrd, Ord)]`) with normalized
//! keys; the type is a `KeyType` when every field is.
//!
//! Attributes, under one `#[typeinfo(...)]`:
//!
//! | on | attribute | meaning |
//! |---|---|---|
//! | type | `name = "..."` | the stable type identity stored in snapshots (default: the identifier), so a type can move or be renamed |
//! | type | `bound = "T: Trait, ..."` | where predicates that replace the inferred ones |
//! | type | `crate = "path"` | where the `typeinfo` crate is (default `::typeinfo`) |
//! | field | `skip` | not serialized; read back as its default |
//! | field | `default` / `default = "path"` | the value of the field when old bytes lack it (`Default::default()` or `path()`); `Option` fields default to `None` without it |
//! | field | `alias = "old"` | an earlier name: old bytes with that field migrate (repeatable) |
//! | field | `with = "path::ToSerializer"` | a hand-written serializer type (`TypeSerializer<FieldType> + Clone + Default`) |
//! | field | `recursive` | create the field's serializer lazily (needed for indirect recursion; direct recursion is detected) |
//! | variant | `alias = "old"` | an earlier variant name |
//!
//! Decisions: skipped fields take no part in the schema, nor in the order; a type with a
//! `with` field has no comparator and is not a key type (the derive cannot know how its
//! bytes order), nor has a recursive type (its comparator's type would be infinite); `copy` of a value gives skipped fields their
//! default, as a round trip through bytes does; an enum variant removed from the code is
//! incompatible with stored values (they may hold it), while added variants migrate.

mod ast;
mod attr;
mod bound;
mod check;
mod comparator;
mod ctxt;
mod ser;
mod span;

use proc_macro::TokenStream;
use syn::{parse_macro_input, DeriveInput};

/// Derives `typeinfo::TypeInfo` (and `Comparable`/`KeyType` where the fields allow).
///
/// See the [crate docs](crate) for the attributes.
#[proc_macro_derive(TypeInfo, attributes(typeinfo))]
pub fn derive_type_info(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    expand(&input)
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

fn expand(input: &DeriveInput) -> syn::Result<proc_macro2::TokenStream> {
    let cx = ctxt::Ctxt::default();
    let Some(cont) = ast::Container::from_ast(&cx, input) else {
        cx.check()?;
        return Ok(proc_macro2::TokenStream::new());
    };
    check::check(&cx, &cont);
    cx.check()?;
    let serializer = ser::expand(&cont);
    let comparator = comparator::expand(&cont);
    Ok(quote::quote! {
        #[doc(hidden)]
        #[allow(non_upper_case_globals, unused_qualifications, clippy::all)]
        const _: () = {
            #serializer
            #comparator
        };
    })
}
