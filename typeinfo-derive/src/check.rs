//! Cross-field rules, checked before anything is generated.

use std::collections::HashSet;

use syn::visit::Visit;

use crate::ast::{Body, Container, Field};
use crate::ctxt::Ctxt;

/// Runs every check, reporting to `cx`.
pub fn check(cx: &Ctxt, cont: &Container<'_>) {
    check_generics(cx, cont);
    match &cont.data {
        Body::Struct(_, fields) => check_fields(cx, fields),
        Body::Enum(variants) => {
            if variants.is_empty() {
                cx.error_spanned_by(&cont.ident, "#[derive(TypeInfo)] needs at least one variant: an empty enum has no values");
            }
            let mut names = HashSet::new();
            for variant in variants {
                check_fields(cx, &variant.fields);
                for alias in &variant.attrs.aliases {
                    if variants.iter().any(|v| v.ident == alias.value()) {
                        cx.error_spanned_by(alias, format!("alias `{}` is the name of another variant", alias.value()));
                    }
                }
                for name in std::iter::once(variant.ident.to_string()).chain(variant.attrs.aliases.iter().map(syn::LitStr::value)) {
                    if !names.insert(name.clone()) {
                        cx.error_spanned_by(&variant.ident, format!("variant name or alias `{name}` is used twice"));
                    }
                }
            }
        }
    }
}

fn check_generics(cx: &Ctxt, cont: &Container<'_>) {
    for param in &cont.generics.params {
        if let syn::GenericParam::Lifetime(lt) = param {
            cx.error_spanned_by(
                lt,
                "borrowed data is not supported: TypeInfo types own their data (use `String`, `Vec<u8>` or `Box<T>`)",
            );
        }
    }
}

/// Finds references and lifetimes inside a type.
struct Borrow {
    found: Option<proc_macro2::Span>,
}

impl<'ast> Visit<'ast> for Borrow {
    fn visit_type_reference(&mut self, r: &'ast syn::TypeReference) {
        self.found.get_or_insert(r.and_token.span);
    }
    fn visit_lifetime(&mut self, lt: &'ast syn::Lifetime) {
        if lt.ident != "static" {
            self.found.get_or_insert(lt.apostrophe);
        }
    }
}

fn check_fields(cx: &Ctxt, fields: &[Field<'_>]) {
    let mut names = HashSet::new();
    for field in fields {
        let mut borrow = Borrow { found: None };
        borrow.visit_type(field.ty);
        if borrow.found.is_some() {
            cx.error_spanned_by(
                field.ty,
                format!(
                    "borrowed field `{}`: TypeInfo types own their data (use `String`, `Vec<u8>` or `Box<T>`)",
                    field.schema_name()
                ),
            );
        }
        if field.attrs.skip.is_some() {
            if field.attrs.with.is_some() {
                cx.error_spanned_by(field.original, "`skip` and `with` cannot be combined: a skipped field is not serialized");
            }
            if !field.attrs.aliases.is_empty() {
                cx.error_spanned_by(field.original, "`skip` and `alias` cannot be combined: a skipped field has no schema name");
            }
        }
        if let (Some(span), Some(_)) = (field.attrs.recursive, &field.attrs.with) {
            cx.syn_error(syn::Error::new(span, "`recursive` and `with` cannot be combined"));
        }
        if field.is_serialized() {
            for name in std::iter::once(field.schema_name()).chain(field.attrs.aliases.iter().map(syn::LitStr::value)) {
                if !names.insert(name.clone()) {
                    cx.error_spanned_by(field.original, format!("field name or alias `{name}` is used twice"));
                }
            }
        }
    }
}
