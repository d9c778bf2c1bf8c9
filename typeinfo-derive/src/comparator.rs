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
/// recursive (its comparator type would be infinite).
pub fn expand(cont: &Container<'_>) -> TokenStream {
    let fields = bound::all_fields(cont);
    if fields.iter().any(|f| {
        f.attrs.with.is_some() || f.attrs.recursive.is_some() || bound::mentions_self(cont, f.ty)
    }) {
        return TokenStream::new();
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
                let vi32 = vi as u32;
                index_arms.push(quote!(#any => #vi32));
                let pattern_a = pattern(&path, variant.style, &gens, "__a");
                let pattern_b = pattern(&path, variant.style, &gens, "__b");
                let (cmp, ser, key) = field_steps(&krate, &gens, &members, &tys, &mut next);
                cmp_arms.push(
                    quote!((#pattern_a, #pattern_b) => { #cmp ::core::cmp::Ordering::Equal }),
                );
                let tag = vi as u64;
                ser_arms.push(quote!(#tag => { #ser }));
                key_arms.push(quote!(#pattern_a => {
                    #krate::__private::variant_tag_key(#vi32, #count, __out);
                    #key
                }));
            }
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
                        return ::core::result::Result::Ok(__ta.cmp(&__tb));
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
        #[doc(hidden)]
        #[derive(::core::clone::Clone, ::core::fmt::Debug)]
        pub struct __TypeInfoComparator<#(#params),*> {
            #(#members: #params,)*
        }

        #[automatically_derived]
        impl<#(#impl_params,)* #(#comparator_bounds,)*> #krate::TypeComparator<#self_ty> for __TypeInfoComparator<#(#params),*>
        where #existing_where #self_ty: #krate::TypeInfo
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
