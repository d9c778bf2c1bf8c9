//! The comparator (the order of `#[derive(PartialOrd, Ord)]`) and the `Comparable` and
//! `KeyType` impls, which hold only when every serialized field's type allows.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

use crate::ast::{Body, Container};
use crate::bound;
use crate::ser::{field_gens, krate, FieldGen};
use crate::span::krate_at;

/// Generates the comparator, unless a field has a hand-written serializer or the type is
/// recursive (its comparator type would be infinite): then impls that never hold and say
/// why (see [`no_comparator`]).
pub fn expand(cont: &Container<'_>) -> TokenStream {
    let fields = bound::all_fields(cont);
    if let Some(with) = fields.iter().find(|f| f.attrs.with.is_some()) {
        let reason = format!(
            "its field `{}` has a hand-written serializer (`with`), and the derive cannot know how that serializer's bytes order",
            with.schema_name()
        );
        let span = with
            .attrs
            .with
            .as_ref()
            .map_or_else(|| with.ty.span(), Spanned::span);
        return no_comparator(cont, &reason, span);
    }
    if let Some(rec) = fields
        .iter()
        .find(|f| f.attrs.recursive.is_some() || bound::mentions_self(cont, f.ty))
    {
        let reason = format!(
            "it is recursive (field `{}`), and the comparator of a recursive type would have an infinite type",
            rec.schema_name()
        );
        return no_comparator(cont, &reason, rec.ty.span());
    }
    let krate = krate(cont);
    let ident = &cont.ident;
    let (impl_generics, ty_generics, _) = cont.generics.split_for_impl();
    let where_clause = bound::where_clause(cont, &krate);
    let self_ty = quote!(#ident #ty_generics);
    let self_path = {
        let turbofish = ty_generics.as_turbofish();
        quote!(#ident #turbofish)
    };

    // One comparator per serialized field, as generic parameters of the comparator struct
    // (so the struct exists even when a field's type has no comparator).
    let fields: Vec<&crate::ast::Field<'_>> = bound::all_fields(cont)
        .into_iter()
        .filter(|f| f.is_serialized())
        .collect();
    let params: Vec<syn::Ident> = (0..fields.len())
        .map(|i| format_ident!("__C{}", i))
        .collect();
    let members: Vec<syn::Ident> = (0..fields.len()).map(|i| format_ident!("c{}", i)).collect();
    let tys: Vec<&syn::Type> = fields.iter().map(|f| f.ty).collect();

    let mut rank_table = TokenStream::new();
    let (compare, compare_serialized, key, key_len) = match &cont.data {
        Body::Struct(style, fs) => {
            let gens = field_gens(fs, "");
            let pattern_a = pattern(&self_path, *style, &gens, "__a");
            let pattern_b = pattern(&self_path, *style, &gens, "__b");
            let mut next = 0;
            let (cmp, ser, key) = field_steps(&krate, &gens, &members, &tys, &mut next);
            let lens = members.iter().zip(&tys).map(|(m, ty)| {
                quote!(.checked_add(#krate::TypeComparator::<#ty>::normalized_key_len(&self.#m)?)?)
            });
            (
                quote! {
                    #[allow(unused_variables)]
                    let #pattern_a = __a;
                    #[allow(unused_variables)]
                    let #pattern_b = __b;
                    #cmp
                    ::core::cmp::Ordering::Equal
                },
                quote! { #ser ::core::result::Result::Ok(::core::cmp::Ordering::Equal) },
                quote! {
                    #[allow(unused_variables)]
                    let #pattern_a = __value;
                    #key
                },
                quote!(::core::option::Option::Some(0usize #(#lens)*)),
            )
        }
        Body::Enum(variants) => {
            let count = variants.len();
            let ranks = discriminant_ranks(cont, variants, &krate);
            // A variant's place in the order: its declaration index, or its rank among the
            // discriminants when the enum has explicit ones (the order of `derive(Ord)`).
            let rank_of = |vi: usize| -> TokenStream {
                let vi32 = vi as u32;
                if ranks.is_some() {
                    quote!(__VARIANT_RANK[#vi])
                } else {
                    quote!(#vi32)
                }
            };
            let mut next = 0;
            let mut index_arms = Vec::new();
            let mut cmp_arms = Vec::new();
            let mut ser_arms = Vec::new();
            let mut key_arms = Vec::new();
            for (vi, variant) in variants.iter().enumerate() {
                let gens = field_gens(&variant.fields, "");
                let vident = &variant.ident;
                let path = quote!(#self_path::#vident);
                let any = match variant.style {
                    crate::ast::Style::Named => quote!(#path { .. }),
                    crate::ast::Style::Tuple => quote!(#path(..)),
                    crate::ast::Style::Unit => quote!(#path),
                };
                let rank = rank_of(vi);
                index_arms.push(quote!(#any => #rank));
                let pattern_a = pattern(&path, variant.style, &gens, "__a");
                let pattern_b = pattern(&path, variant.style, &gens, "__b");
                let (cmp, ser, key) = field_steps(&krate, &gens, &members, &tys, &mut next);
                cmp_arms.push(
                    quote!((#pattern_a, #pattern_b) => { #cmp ::core::cmp::Ordering::Equal }),
                );
                let tag = vi as u64;
                ser_arms.push(quote!(#tag => { #ser }));
                key_arms.push(quote!(#pattern_a => {
                    #krate::__private::variant_tag_key(#rank, #count, __out);
                    #key
                }));
            }
            // The bytes hold the declaration index as the tag; with explicit discriminants,
            // two tags order by their variants' ranks.
            let tag_order = if ranks.is_some() {
                let name = cont.type_name();
                quote! {
                    let __ra = #krate::__private::variant_rank(&__VARIANT_RANK, __ta, #name)?;
                    let __rb = #krate::__private::variant_rank(&__VARIANT_RANK, __tb, #name)?;
                    return ::core::result::Result::Ok(__ra.cmp(&__rb));
                }
            } else {
                quote!(return ::core::result::Result::Ok(__ta.cmp(&__tb));)
            };
            rank_table = ranks.unwrap_or_default();
            (
                quote! {
                    fn __index #impl_generics (__v: &#self_ty) -> u32 #where_clause {
                        match __v { #(#index_arms,)* }
                    }
                    match __index(__a).cmp(&__index(__b)) {
                        ::core::cmp::Ordering::Equal => {}
                        __other => return __other,
                    }
                    #[allow(unused_variables)]
                    match (__a, __b) {
                        #(#cmp_arms)*
                        _ => ::core::cmp::Ordering::Equal,
                    }
                },
                quote! {
                    let __ta = __ia.read_varint()?;
                    let __tb = __ib.read_varint()?;
                    if __ta != __tb {
                        #tag_order
                    }
                    match __ta {
                        #(#ser_arms)*
                        __tag => return ::core::result::Result::Err(#krate::Error::InvalidTag { what: ::std::string::String::from(::core::stringify!(#ident)), tag: __tag }),
                    }
                    ::core::result::Result::Ok(::core::cmp::Ordering::Equal)
                },
                quote! {
                    #[allow(unused_variables)]
                    match __value { #(#key_arms)* }
                },
                quote!(::core::option::Option::None),
            )
        }
    };

    let comparator_bounds = params
        .iter()
        .zip(&tys)
        .map(|(p, ty)| quote!(#p: #krate::TypeComparator<#ty>));
    // Spanned at the field's type, so that "required for `T` to implement `KeyType`" points
    // at the field that is not a key.
    let comparable_where = tys.iter().map(|ty| {
        let krate = krate_at(cont, &krate, ty.span());
        quote_spanned!(ty.span()=> for<'__ti> #ty: #krate::Comparable)
    });
    let key_where = tys.iter().map(|ty| {
        let krate = krate_at(cont, &krate, ty.span());
        quote_spanned!(ty.span()=> for<'__ti> #ty: #krate::KeyType)
    });
    let assoc = tys
        .iter()
        .map(|ty| quote!(<#ty as #krate::Comparable>::Comparator));
    let news = members
        .iter()
        .zip(&tys)
        .map(|(m, ty)| quote!(#m: <#ty as #krate::Comparable>::comparator()));
    let impl_params = cont.generics.params.iter();
    let existing_where = where_predicates(&where_clause);

    quote! {
        #rank_table

        #[doc(hidden)]
        #[derive(::core::clone::Clone, ::core::fmt::Debug)]
        pub struct __TypeInfoComparator<#(#params),*> {
            #(#members: #params,)*
        }

        #[automatically_derived]
        impl<#(#impl_params,)* #(#comparator_bounds,)*> #krate::TypeComparator<#self_ty> for __TypeInfoComparator<#(#params),*>
        where #existing_where for<'__ti> #self_ty: #krate::TypeInfo
        {
            fn compare(&self, __a: &#self_ty, __b: &#self_ty) -> ::core::cmp::Ordering {
                #compare
            }
            fn compare_serialized(&self, __ia: &mut #krate::DataInputView<'_>, __ib: &mut #krate::DataInputView<'_>) -> #krate::Result<::core::cmp::Ordering> {
                #compare_serialized
            }
            fn write_normalized_key(&self, __value: &#self_ty, __out: &mut ::std::vec::Vec<u8>) {
                #key
            }
            fn normalized_key_len(&self) -> ::core::option::Option<usize> {
                #key_len
            }
        }

        #[automatically_derived]
        impl #impl_generics #krate::Comparable for #self_ty
        where #existing_where #(#comparable_where,)*
        {
            type Comparator = __TypeInfoComparator<#(#assoc),*>;
            fn comparator() -> Self::Comparator {
                __TypeInfoComparator { #(#news,)* }
            }
        }

        #[automatically_derived]
        impl #impl_generics #krate::KeyType for #self_ty
        where #existing_where #(#key_where,)*
        {}
    }
}

/// For a type without a comparator: `Comparable` and `KeyType` impls that hold only when
/// the type implements a trait private to this expansion, which nothing does. Where a key
/// or a comparator is required, the compiler then reports that trait's message, which
/// names the real cause (`reason`), instead of the generic note of `KeyType` about floats
/// and hash maps.
///
/// The trait and the type it is asked of are spanned at `cause` (the `with` path or the
/// recursive field's type), where the compiler's "not implemented" help then points.
fn no_comparator(cont: &Container<'_>, reason: &str, cause: proc_macro2::Span) -> TokenStream {
    let krate = krate(cont);
    let ident = &cont.ident;
    let (impl_generics, ty_generics, _) = cont.generics.split_for_impl();
    let where_clause = bound::where_clause(cont, &krate);
    let existing_where = where_predicates(&where_clause);
    let self_ty = quote!(#ident #ty_generics);
    let message = format!(
        "`{ident}` has no comparator, so it is neither `Comparable` nor a `KeyType`: {reason}"
    );
    let label = format!("`{ident}` has no comparator");
    let note = "key or sort by another type: a field of it, or a tuple of its key fields";
    let why = quote_spanned! {cause=>
        #[doc(hidden)]
        #[diagnostic::on_unimplemented(message = #message, label = #label, note = #note)]
        pub trait __TypeInfoNoComparator {}

        #[doc(hidden)]
        #[derive(::core::clone::Clone, ::core::fmt::Debug)]
        pub struct __TypeInfoNoComparator_;
    };
    quote! {
        #why

        // Never used: its impl holds only where `__TypeInfoNoComparator` does.
        #[automatically_derived]
        impl #impl_generics #krate::TypeComparator<#self_ty> for __TypeInfoNoComparator_
        where #existing_where for<'__ti> __TypeInfoNoComparator_: __TypeInfoNoComparator
        {
            fn compare(&self, _: &#self_ty, _: &#self_ty) -> ::core::cmp::Ordering {
                ::core::cmp::Ordering::Equal
            }
            fn compare_serialized(&self, _: &mut #krate::DataInputView<'_>, _: &mut #krate::DataInputView<'_>) -> #krate::Result<::core::cmp::Ordering> {
                ::core::result::Result::Err(#krate::Error::custom(#message))
            }
            fn write_normalized_key(&self, _: &#self_ty, _: &mut ::std::vec::Vec<u8>) {}
            fn normalized_key_len(&self) -> ::core::option::Option<usize> {
                ::core::option::Option::None
            }
        }

        #[automatically_derived]
        impl #impl_generics #krate::Comparable for #self_ty
        where #existing_where for<'__ti> __TypeInfoNoComparator_: __TypeInfoNoComparator
        {
            type Comparator = __TypeInfoNoComparator_;
            fn comparator() -> Self::Comparator {
                __TypeInfoNoComparator_
            }
        }

        #[automatically_derived]
        impl #impl_generics #krate::KeyType for #self_ty
        where #existing_where for<'__ti> __TypeInfoNoComparator_: __TypeInfoNoComparator
        {}
    }
}

/// For an enum with explicit discriminants, the constant `__VARIANT_RANK: [u32; N]`: each
/// variant's rank (by declaration index) in the order of its discriminant value, computed
/// by the compiler from the discriminant expressions as written (an implicit one is the
/// previous one plus one, the first zero), in the `repr` type (`isize` without one).
fn discriminant_ranks(
    cont: &Container<'_>,
    variants: &[crate::ast::Variant<'_>],
    krate: &syn::Path,
) -> Option<TokenStream> {
    if variants.iter().all(|v| v.discriminant.is_none()) {
        return None;
    }
    let repr = cont.repr.clone().unwrap_or_else(|| format_ident!("isize"));
    let signed = repr.to_string().starts_with('i');
    let names: Vec<syn::Ident> = (0..variants.len())
        .map(|i| format_ident!("__d{}", i))
        .collect();
    let lets = variants.iter().enumerate().map(|(i, v)| {
        let name = &names[i];
        let value = match (v.discriminant, i) {
            (Some(expr), _) => quote!(#expr),
            (None, 0) => quote!(0),
            (None, _) => {
                let prev = &names[i - 1];
                quote!(#prev + 1)
            }
        };
        quote!(let #name: #repr = #value;)
    });
    let keys = names.iter().map(|name| {
        if signed {
            quote!(#krate::__private::signed_discriminant_key(#name as i128))
        } else {
            quote!(#name as u128)
        }
    });
    let count = variants.len();
    Some(quote! {
        const __VARIANT_RANK: [u32; #count] = {
            #(#lets)*
            #krate::__private::variant_ranks([#(#keys),*])
        };
    })
}

/// The predicates of a generated where clause, each followed by a comma.
fn where_predicates(where_clause: &TokenStream) -> TokenStream {
    let mut tokens = where_clause.clone().into_iter();
    // Drop the leading `where`.
    tokens.next();
    tokens.collect()
}

/// A pattern binding each field to `<prefix>N`.
fn pattern(
    path: &TokenStream,
    style: crate::ast::Style,
    gens: &[FieldGen<'_, '_>],
    prefix: &str,
) -> TokenStream {
    let bindings: Vec<syn::Ident> = gens
        .iter()
        .enumerate()
        .map(|(i, _)| format_ident!("{}{}", prefix, i))
        .collect();
    let members = gens.iter().map(|g| &g.field.member);
    match style {
        crate::ast::Style::Named => quote!(#path { #(#members: #bindings),* }),
        crate::ast::Style::Tuple => quote!(#path ( #(#bindings),* )),
        crate::ast::Style::Unit => quote!(#path),
    }
}

/// The compare, compare-serialized and key steps of the serialized fields of one struct
/// or variant; `next` is the index of its first field among all comparator members.
fn field_steps(
    krate: &syn::Path,
    gens: &[FieldGen<'_, '_>],
    members: &[syn::Ident],
    tys: &[&syn::Type],
    next: &mut usize,
) -> (TokenStream, TokenStream, TokenStream) {
    let mut cmp = Vec::new();
    let mut ser = Vec::new();
    let mut key = Vec::new();
    for (i, g) in gens.iter().enumerate() {
        if g.slot.is_none() {
            continue;
        }
        let m = &members[*next];
        let ty = tys[*next];
        *next += 1;
        let a = format_ident!("__a{}", i);
        let b = format_ident!("__b{}", i);
        cmp.push(quote! {
            match #krate::TypeComparator::<#ty>::compare(&self.#m, #a, #b) {
                ::core::cmp::Ordering::Equal => {}
                __other => return __other,
            }
        });
        ser.push(quote! {
            match #krate::TypeComparator::<#ty>::compare_serialized(&self.#m, __ia, __ib)? {
                ::core::cmp::Ordering::Equal => {}
                __other => return ::core::result::Result::Ok(__other),
            }
        });
        key.push(quote!(#krate::TypeComparator::<#ty>::write_normalized_key(&self.#m, #a, __out);));
    }
    (quote!(#(#cmp)*), quote!(#(#ser)*), quote!(#(#key)*))
}
