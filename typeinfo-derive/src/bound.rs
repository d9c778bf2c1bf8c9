//! Where clauses: bounds only for the type parameters that serialized fields use.

use quote::quote;
use syn::visit::Visit;

use crate::ast::{Body, Container, Field};

/// Whether `ty` mentions any of the container's type parameters.
pub fn mentions_param(cont: &Container<'_>, ty: &syn::Type) -> bool {
    struct Finder<'p> {
        params: Vec<&'p syn::Ident>,
        found: bool,
    }
    impl<'ast> Visit<'ast> for Finder<'_> {
        fn visit_path(&mut self, path: &'ast syn::Path) {
            if let Some(first) = path.segments.first() {
                if path.leading_colon.is_none() && self.params.contains(&&first.ident) {
                    self.found = true;
                }
            }
            syn::visit::visit_path(self, path);
        }
    }
    let mut finder = Finder {
        params: cont.generics.type_params().map(|p| &p.ident).collect(),
        found: false,
    };
    finder.visit_type(ty);
    finder.found
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
/// Send` on every type parameter, and `FieldType: TypeInfo` for each serialized field
/// that uses a type parameter (or the user's `bound = "..."` instead of those).
pub fn where_clause(cont: &Container<'_>, krate: &syn::Path) -> proc_macro2::TokenStream {
    let mut predicates: Vec<proc_macro2::TokenStream> = Vec::new();
    if let Some(wc) = &cont.generics.where_clause {
        predicates.extend(wc.predicates.iter().map(|p| quote!(#p)));
    }
    for param in cont.generics.type_params() {
        let ident = &param.ident;
        predicates.push(quote!(#ident: 'static + ::core::marker::Send));
    }
    match &cont.attrs.bound {
        Some(custom) => predicates.extend(custom.iter().map(|p| quote!(#p))),
        None => {
            for field in all_fields(cont) {
                if field.is_serialized()
                    && field.attrs.with.is_none()
                    && mentions_param(cont, field.ty)
                {
                    let ty = field.ty;
                    predicates.push(quote!(#ty: #krate::TypeInfo));
                }
            }
        }
    }
    quote!(where #(#predicates,)*)
}
