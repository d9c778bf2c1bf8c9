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
//! | field | `skip` | not serialized; read back as its default (also by `deserialize_into`, which never keeps the reused value's) |
//! | field | `default` / `default = "path"` | the value of the field when old bytes lack it (`Default::default()` or `path()`); `Option` fields default to `None` without it |
//! | field | `alias = "old"` | an earlier name: old bytes with that field migrate (repeatable) |
//! | field | `with = "path::ToSerializer"` | a hand-written serializer type (`TypeSerializer<FieldType> + Clone + Default`) |
//! | field | `recursive` | create the field's serializer lazily (needed for indirect recursion and recursion through a type alias; direct recursion is detected) |
//! | variant | `alias = "old"` | an earlier variant name |
//! | type | `flink_pojo = "com.example.Order"` | also a Flink POJO of that Java class: `FlinkPojo` and `FlinkType` of `typeinfo_flink_compat` (a struct with named fields, not generic) |
//! | type | `flink_enum = "com.example.Side"` | also a Java enum: `FlinkEnum` and `FlinkType` of `typeinfo_flink_compat` (unit variants; the enum must be `Clone`) |
//! | field | `flink_name = "userId"` | the field's Java name in a `flink_pojo` (default: its Rust name); fields are written in Java-name order |
//! | field | `flink_alias = "oldName"` | an earlier Java name in a `flink_pojo`: migrating Flink's old bytes reads that field into this one (repeatable) |
//! | field | `flink_with = "path::Serializer"` | the field's Flink serializer type (`TypeSerializer<T> + Default`, `T` the field's type or the `T` of an `Option<T>` field), for Java arrays and the like |
//! | variant | `flink_name = "BUY"` | the constant's Java name in a `flink_enum` |
//!
//! Bounds: the impls bound `T: 'static + Send` for every type parameter, `FieldType:
//! TypeInfo` for every serialized field (a field whose type has no TypeInfo is then one
//! error, at its type) and `Path: TypeSerializer<FieldType> + Clone + Default` for every
//! `with = "Path"` (one error at the path when it lacks one). A recursive field
//! (`next: Option<Box<L<T>>>`, `kids: Vec<Node<T>>`, or one marked `recursive`) bounds the
//! parameters it uses instead (`T: TypeInfo`), since its own type's bound would be a cycle
//! through the impl being defined. A generic recursive type therefore compiles as written,
//! and its parameters need not be `Sync`. `bound = "..."` replaces the bounds of fields
//! that use type parameters.
//!
//! Enums with explicit discriminants (`enum Priority { High = 10, Low = 1 }`, with fields
//! too under `#[repr(u8)]` and the like): the bytes hold the declaration index as the tag,
//! like every enum (layouts do not depend on discriminants), while the comparator,
//! `compare_serialized` and the normalized keys order by discriminant value, as
//! `#[derive(PartialOrd, Ord)]` does. A variant's normalized key is its rank among the
//! discriminants (one byte up to 256 variants), computed by the compiler from the
//! discriminant expressions in the `repr` type; changing a discriminant therefore changes
//! the order and the normalized keys (not the serialized bytes). Before this rule, such
//! enums ordered by declaration: a RocksDB database or native checkpoint whose map state
//! has such an enum in its user key, written by an earlier version, must be restored from
//! a savepoint (which rebuilds the keys from the serialized bytes), not opened as it is.
//!
//! Diagnostics the compiler gives, and what they mean:
//! - "`X` has no TypeInfo" at a field's type: derive `TypeInfo` for `X`, or bridge it with
//!   `typeinfo::generic_type!`.
//! - "overflow evaluating the requirement `X: TypeInfo`" at a field's type: the field
//!   contains the type being derived where the derive cannot see it (through a type alias,
//!   or another type that contains this one: indirect recursion). Mark that field
//!   `#[typeinfo(recursive)]`. (The compiler cannot attach this hint to an overflow.)
//! - "`X` has no comparator, so it is neither `Comparable` nor a `KeyType`: ..." where a
//!   key or a comparator is required: the type has a `with` field or is recursive, and the
//!   message names the field. (The derive gives such types `Comparable` and `KeyType`
//!   impls that never hold, so that this message, not `KeyType`'s note about floats and
//!   hash maps, is what the compiler reports; a hand-written `Comparable` impl for such a
//!   type therefore conflicts with the derive.)
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
mod flink;
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
    let flink = flink::expand(&cont);
    Ok(quote::quote! {
        #[doc(hidden)]
        #[allow(non_upper_case_globals, unused_qualifications, clippy::all)]
        const _: () = {
            #serializer
            #comparator
            #flink
        };
    })
}
