//! Where clauses: bounds only for the type parameters that serialized fields use.

use quote::{quote, quote_spanned};
use syn::visit::Visit;

use crate::ast::{Body, Container, Field};
use crate::span::{ends, krate_at};

/// Whether `ty` mentions any of the container's type parameters.
pub fn mentions_param(cont: &Container<'_>, ty: &syn::Type) -> bool {
    !params_in(cont, ty).is_empty()
}

/// The container's type parameters that `ty` mentions, in declaration order.
fn params_in<'c>(cont: &'c Container<'_>, ty: &syn::Type) -> Vec<&'c syn::Ident> {
    struct Finder<'p> {
        params: Vec<&'p syn::Ident>,
        found: Vec<&'p syn::Ident>,
    }
    impl<'ast> Visit<'ast> for Finder<'_> {
        fn visit_path(&mut self, path: &'ast syn::Path) {
            if let Some(first) = path.segments.first() {
                if path.leading_colon.is_none() {
                    if let Some(param) = self.params.iter().find(|p| **p == &first.ident) {
                        if !self.found.contains(param) {
                            self.found.push(param);
                        }
                    }
                }
            }
            syn::visit::visit_path(self, path);
        }
    }
    let mut finder = Finder {
        params: cont.generics.type_params().map(|p| &p.ident).collect(),
        found: Vec::new(),
    };
    finder.visit_type(ty);
    let order: Vec<&syn::Ident> = cont.generics.type_params().map(|p| &p.ident).collect();
    order
        .into_iter()
        .filter(|p| finder.found.contains(p))
        .collect()
}

/// Whether `ty` mentions the container itself (direct recursion).
pub fn mentions_self(cont: &Container<'_>, ty: &syn::Type) -> bool {
    struct Finder<'i> {
        ident: &'i syn::Ident,
        found: bool,
    }
    impl<'ast> Visit<'ast> for Finder<'_> {
        fn visit_path_segment(&mut self, seg: &'ast syn::PathSegment) {
            if seg.ident == *self.ident || seg.ident == "Self" {
                self.found = true;
            }
            syn::visit::visit_path_segment(self, seg);
        }
    }
    let mut finder = Finder {
        ident: &cont.ident,
        found: false,
    };
    finder.visit_type(ty);
    finder.found
}

/// Every field, of every variant.
pub fn all_fields<'c, 'a>(cont: &'c Container<'a>) -> Vec<&'c Field<'a>> {
    match &cont.data {
        Body::Struct(_, fields) => fields.iter().collect(),
        Body::Enum(variants) => variants.iter().flat_map(|v| v.fields.iter()).collect(),
    }
}

/// The where clause of the generated impls: the container's own predicates, `'static +
/// Send` on every type parameter, `FieldType: TypeInfo` for each serialized field that
/// uses a type parameter (or the user's `bound = "..."` instead of those), and, spanned at
/// the user's tokens, `FieldType: TypeInfo` for each field of a concrete type and
/// `Path: TypeSerializer<FieldType> + Clone + Default` for each `with = "Path"`.
///
/// The bounds on concrete types are the diagnostics: a bound without type parameters that
/// does not hold is reported once, where it is written (the field's type, the `with`
/// path), and the impls' bodies, which assume it, report nothing more. Without them, a
/// field type without TypeInfo was reported once per use of its serializer in generated
/// code, mostly at `#[derive(TypeInfo)]`. Recursive fields are left out: their bound
/// would require the impl being defined.
///
/// A recursive field (`next: Option<Box<L<T>>>`, or one marked `recursive`) bounds the
/// parameters it uses instead (`T: TypeInfo`): its own type's bound would require the
/// impl being defined, a cycle the trait solver reports as an overflow wherever the type
/// is used. Inside the impl, the field's type is then a `TypeInfo` through that very impl.
pub fn where_clause(cont: &Container<'_>, krate: &syn::Path) -> proc_macro2::TokenStream {
    let mut predicates: Vec<proc_macro2::TokenStream> = Vec::new();
    if let Some(wc) = &cont.generics.where_clause {
        predicates.extend(wc.predicates.iter().map(|p| quote!(#p)));
    }
    for param in cont.generics.type_params() {
        let ident = &param.ident;
        predicates.push(quote!(#ident: 'static + ::core::marker::Send));
    }
    // A `with` serializer, spanned at its path in the attribute: where it lacks a trait,
    // that is the one place the compiler reports it.
    for field in all_fields(cont) {
        if let (true, Some(with)) = (field.is_serialized(), &field.attrs.with) {
            let ty = field.ty;
            let (first, last) = ends(with);
            let krate = krate_at(cont, krate, first);
            let serializer = syn::Ident::new("TypeSerializer", last);
            predicates.push(quote_spanned!(first=>
                #with: #krate::#serializer<#ty> + ::core::clone::Clone + ::core::default::Default
            ));
        }
    }
    for field in concrete_fields(cont) {
        let ty = field.ty;
        let (first, last) = ends(ty);
        let krate = krate_at(cont, krate, first);
        let type_info = syn::Ident::new("TypeInfo", last);
        predicates.push(quote_spanned!(first=> #ty: #krate::#type_info));
    }
    match &cont.attrs.bound {
        Some(custom) => predicates.extend(custom.iter().map(|p| quote!(#p))),
        None => {
            let mut bounded_params: Vec<&syn::Ident> = Vec::new();
            for field in all_fields(cont) {
                if !field.is_serialized()
                    || field.attrs.with.is_some()
                    || !mentions_param(cont, field.ty)
                {
                    continue;
                }
                if field.attrs.recursive.is_some() || mentions_self(cont, field.ty) {
                    for param in params_in(cont, field.ty) {
                        if !bounded_params.contains(&param) {
                            bounded_params.push(param);
                            predicates.push(quote!(#param: #krate::TypeInfo));
                        }
                    }
                } else {
                    let ty = field.ty;
                    predicates.push(quote!(#ty: #krate::TypeInfo));
                }
            }
        }
    }
    quote!(where #(#predicates,)*)
}

/// The serialized fields whose serializer comes from a concrete type's `TypeInfo`: no
/// `with`, not recursive, no type parameter.
fn concrete_fields<'c, 'a>(cont: &'c Container<'a>) -> Vec<&'c Field<'a>> {
    all_fields(cont)
        .into_iter()
        .filter(|field| {
            field.is_serialized()
                && field.attrs.with.is_none()
                && field.attrs.recursive.is_none()
                && !mentions_self(cont, field.ty)
                && !mentions_param(cont, field.ty)
        })
        .collect()
}
