//! Cross-field rules, checked before anything is generated.

use std::collections::HashSet;

use syn::visit::Visit;

use crate::ast::{Body, Container, Field, Variant};
use crate::ctxt::Ctxt;

/// Runs every check, reporting to `cx`.
pub fn check(cx: &Ctxt, cont: &Container<'_>) {
    check_generics(cx, cont);
    check_flink(cx, cont);
    match &cont.data {
        Body::Struct(_, fields) => check_fields(cx, cont, fields),
        Body::Enum(variants) => {
            if variants.is_empty() {
                cx.error_spanned_by(
                    &cont.ident,
                    "#[derive(TypeInfo)] needs at least one variant: an empty enum has no values",
                );
            }
            check_variant_names(cx, variants);
            for variant in variants {
                check_fields(cx, cont, &variant.fields);
            }
        }
    }
}

fn check_generics(cx: &Ctxt, cont: &Container<'_>) {
    for param in &cont.generics.params {
        if let syn::GenericParam::Lifetime(lt) = param {
            cx.error_spanned_by(
                &lt.lifetime,
                format!(
                    "lifetime parameter `{}` is not supported: TypeInfo types own their data (use `String`, `Vec<u8>` or `Box<T>`)",
                    lt.lifetime
                ),
            );
        }
    }
}

/// Variant aliases: each names an old variant that is not a variant today, once.
fn check_variant_names(cx: &Ctxt, variants: &[Variant<'_>]) {
    let mut seen: Vec<(String, &syn::Ident)> = Vec::new();
    for variant in variants {
        for alias in &variant.attrs.aliases {
            let value = alias.value();
            if variant.ident == value {
                cx.error_spanned_by(alias, format!("alias `{value}` is the variant's own name"));
            } else if variants.iter().any(|v| v.ident == value) {
                cx.error_spanned_by(
                    alias,
                    format!("alias `{value}` is the name of another variant"),
                );
            } else if let Some((_, owner)) = seen.iter().find(|(a, _)| *a == value) {
                if *owner == &variant.ident {
                    cx.error_spanned_by(alias, format!("alias `{value}` is given twice"));
                } else {
                    cx.error_spanned_by(
                        alias,
                        format!("alias `{value}` is also an alias of variant `{owner}`"),
                    );
                }
            } else {
                seen.push((value, &variant.ident));
            }
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

/// Finds `Self` inside a type.
struct SelfType<'ast> {
    found: Option<&'ast syn::Ident>,
}

impl<'ast> Visit<'ast> for SelfType<'ast> {
    fn visit_path_segment(&mut self, seg: &'ast syn::PathSegment) {
        if seg.ident == "Self" {
            self.found.get_or_insert(&seg.ident);
        }
        syn::visit::visit_path_segment(self, seg);
    }
}

/// The container's type as written in a field (`Node`, `Tree<T>`).
fn self_type_text(cont: &Container<'_>) -> String {
    let params: Vec<String> = cont
        .generics
        .params
        .iter()
        .map(|p| match p {
            syn::GenericParam::Lifetime(lt) => lt.lifetime.to_string(),
            syn::GenericParam::Type(t) => t.ident.to_string(),
            syn::GenericParam::Const(c) => c.ident.to_string(),
        })
        .collect();
    if params.is_empty() {
        cont.ident.to_string()
    } else {
        format!("{}<{}>", cont.ident, params.join(", "))
    }
}

fn check_fields(cx: &Ctxt, cont: &Container<'_>, fields: &[Field<'_>]) {
    let names: HashSet<String> = fields
        .iter()
        .filter(|f| f.is_serialized())
        .map(Field::schema_name)
        .collect();
    let mut seen: Vec<(String, String)> = Vec::new();
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
        let mut self_type = SelfType { found: None };
        self_type.visit_type(field.ty);
        if let Some(token) = self_type.found {
            cx.error_spanned_by(
                token,
                format!(
                    "#[derive(TypeInfo)] does not support `Self` in a field's type: write `{}`",
                    self_type_text(cont)
                ),
            );
        }
        if field.attrs.skip.is_some() {
            if let Some(with) = &field.attrs.with {
                cx.error_spanned_by(
                    with,
                    "`skip` and `with` cannot be combined: a skipped field is not serialized",
                );
            }
            for alias in &field.attrs.aliases {
                cx.error_spanned_by(
                    alias,
                    "`skip` and `alias` cannot be combined: a skipped field has no schema name",
                );
            }
            if let Some(span) = field.attrs.recursive {
                cx.syn_error(syn::Error::new(
                    span,
                    "`skip` and `recursive` cannot be combined: a skipped field has no serializer",
                ));
            }
        }
        if let (Some(span), Some(_)) = (field.attrs.recursive, &field.attrs.with) {
            cx.syn_error(syn::Error::new(
                span,
                "`recursive` and `with` cannot be combined: a `with` serializer is used as it is",
            ));
        }
        if field.is_serialized() {
            let name = field.schema_name();
            for alias in &field.attrs.aliases {
                let value = alias.value();
                if value == name {
                    cx.error_spanned_by(alias, format!("alias `{value}` is the field's own name"));
                } else if names.contains(&value) {
                    cx.error_spanned_by(
                        alias,
                        format!("alias `{value}` is the name of another field"),
                    );
                } else if let Some((_, owner)) = seen.iter().find(|(a, _)| *a == value) {
                    if *owner == name {
                        cx.error_spanned_by(alias, format!("alias `{value}` is given twice"));
                    } else {
                        cx.error_spanned_by(
                            alias,
                            format!("alias `{value}` is also an alias of field `{owner}`"),
                        );
                    }
                } else {
                    seen.push((value, name.clone()));
                }
            }
        }
    }
}

/// The Flink attributes: `flink_pojo` on a struct with named fields, `flink_enum` on an enum
/// of unit variants, neither generic; `flink_name` and `flink_with` only under them; Java
/// names unique.
fn check_flink(cx: &Ctxt, cont: &Container<'_>) {
    let attrs = &cont.attrs;
    if let (Some(_), Some(e)) = (&attrs.flink_pojo, &attrs.flink_enum) {
        cx.error_spanned_by(
            e,
            "a type is either a `flink_pojo` or a `flink_enum`, not both",
        );
    }
    let flink = attrs.flink_pojo.as_ref().or(attrs.flink_enum.as_ref());
    if let (Some(lit), false) = (flink, cont.generics.params.is_empty()) {
        cx.error_spanned_by(
            lit,
            "a Flink POJO or enum cannot be generic: Java's class fixes its fields' types",
        );
    }
    match &cont.data {
        Body::Struct(style, fields) => {
            if let Some(e) = &attrs.flink_enum {
                cx.error_spanned_by(e, "`flink_enum` is for enums; a struct is a `flink_pojo`");
            }
            if let (Some(p), false) = (&attrs.flink_pojo, *style == crate::ast::Style::Named) {
                cx.error_spanned_by(p, "`flink_pojo` needs a struct with named fields (a Java POJO's fields have names)");
            }
            check_flink_fields(cx, attrs.flink_pojo.is_some(), fields);
        }
        Body::Enum(variants) => {
            if let Some(p) = &attrs.flink_pojo {
                cx.error_spanned_by(p, "`flink_pojo` is for structs; an enum is a `flink_enum`");
            }
            check_flink_variants(cx, attrs.flink_enum.is_some(), variants);
        }
    }
}

fn check_flink_fields(cx: &Ctxt, pojo: bool, fields: &[Field<'_>]) {
    let mut names = HashSet::new();
    check_flink_aliases(cx, pojo, fields);
    for field in fields {
        let a = &field.attrs;
        let flink_attr = a
            .flink_name
            .as_ref()
            .map(|l| l.span())
            .or(a.flink_with.as_ref().map(syn::spanned::Spanned::span));
        if let (Some(span), false) = (flink_attr, pojo) {
            cx.syn_error(syn::Error::new(span, "`flink_name` and `flink_with` need `#[typeinfo(flink_pojo = \"...\")]` on the type"));
        }
        if !pojo || !field.is_serialized() {
            if let (Some(span), true) = (flink_attr, pojo) {
                cx.syn_error(syn::Error::new(
                    span,
                    "a skipped field is not a field of the Flink POJO",
                ));
            }
            continue;
        }
        let name = field.java_name();
        if !names.insert(name.clone()) {
            cx.error_spanned_by(
                &field.member,
                format!("two fields have the Java name `{name}`"),
            );
        }
    }
}

fn check_flink_variants(cx: &Ctxt, flink_enum: bool, variants: &[Variant<'_>]) {
    let mut names = HashSet::new();
    for variant in variants {
        if let (Some(lit), false) = (&variant.attrs.flink_name, flink_enum) {
            cx.error_spanned_by(
                lit,
                "`flink_name` on a variant needs `#[typeinfo(flink_enum = \"...\")]` on the enum",
            );
        }
        if !flink_enum {
            continue;
        }
        if !variant.fields.is_empty() {
            cx.error_spanned_by(
                &variant.ident,
                format!(
                    "variant `{}` has fields: a Flink enum's constants have none",
                    variant.ident
                ),
            );
        }
        let name = variant.java_name();
        if !names.insert(name.clone()) {
            cx.error_spanned_by(
                &variant.ident,
                format!("two variants have the Java name `{name}`"),
            );
        }
    }
}

/// `flink_alias`: only in a `flink_pojo`, on a serialized field, never a current Java name,
/// once.
fn check_flink_aliases(cx: &Ctxt, pojo: bool, fields: &[Field<'_>]) {
    let current: HashSet<String> = fields
        .iter()
        .filter(|f| f.is_serialized())
        .map(Field::java_name)
        .collect();
    let mut seen = HashSet::new();
    for field in fields {
        for alias in &field.attrs.flink_aliases {
            let value = alias.value();
            if !pojo || !field.is_serialized() {
                cx.error_spanned_by(alias, "`flink_alias` needs a serialized field of a `#[typeinfo(flink_pojo = \"...\")]` type");
            } else if current.contains(&value) {
                cx.error_spanned_by(
                    alias,
                    format!("`flink_alias` `{value}` is a current Java name of the POJO"),
                );
            } else if !seen.insert(value.clone()) {
                cx.error_spanned_by(alias, format!("`flink_alias` `{value}` is given twice"));
            }
        }
    }
}
