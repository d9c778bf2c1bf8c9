//! The Flink impls of `#[typeinfo(flink_pojo = "...")]` structs and
//! `#[typeinfo(flink_enum = "...")]` enums: `FlinkPojo` or `FlinkEnum`, and `FlinkType`, of
//! the `typeinfo_flink_compat` crate (which the user's crate depends on).
//!
//! A POJO's fields are written in the order of their Java names, compared as Java compares
//! strings (by UTF-16 unit), as Flink's `PojoTypeInfo` sorts them.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

use crate::ast::{Body, Container, Field, Variant};
use crate::attr;
use crate::ser::is_option;

/// The Flink impls, or nothing when the type has no Flink attribute.
pub fn expand(cont: &Container<'_>) -> TokenStream {
    match (&cont.data, &cont.attrs.flink_pojo, &cont.attrs.flink_enum) {
        (Body::Struct(_, fields), Some(class), _) => pojo(cont, &class.value(), fields),
        (Body::Enum(variants), _, Some(class)) => enumeration(cont, &class.value(), variants),
        _ => TokenStream::new(),
    }
}

/// The path of the generated code's helpers.
fn private() -> TokenStream {
    quote!(::typeinfo_flink_compat::__private)
}

/// The serializer of a field (null marker included) and whether it holds a null.
fn field_serializer(field: &Field<'_>) -> (TokenStream, TokenStream) {
    let p = private();
    let ty = field.ty;
    match &field.attrs.flink_with {
        Some(with) if is_option(ty) => (
            quote_spanned!(with.span()=> #p::Nullable::new(<#with as ::core::default::Default>::default())),
            quote!(true),
        ),
        Some(with) => (
            quote_spanned!(with.span()=> #p::NotNull(<#with as ::core::default::Default>::default())),
            quote!(false),
        ),
        None => (
            quote_spanned!(ty.span()=> <#ty as #p::FlinkField>::framed_serializer()),
            quote_spanned!(ty.span()=> <#ty as #p::FlinkField>::NULLABLE),
        ),
    }
}

/// The serialized fields in Flink's order (by Java name, as UTF-16).
fn flink_order<'f, 'a>(fields: &'f [Field<'a>]) -> Vec<&'f Field<'a>> {
    let mut sorted: Vec<&Field<'_>> = fields.iter().filter(|f| f.is_serialized()).collect();
    sorted.sort_by_cached_key(|f| f.java_name().encode_utf16().collect::<Vec<u16>>());
    sorted
}

/// The value of a skipped field.
fn skipped_value(field: &Field<'_>) -> TokenStream {
    match &field.attrs.default {
        attr::Default::Path(path) => quote!(#path()),
        _ => quote!(::core::default::Default::default()),
    }
}

/// The value of a field that Flink's old bytes lack: its default, `None`, or an error.
fn missing_value(field: &Field<'_>, class: &str, name: &str) -> TokenStream {
    let p = private();
    match &field.attrs.default {
        attr::Default::Path(path) => quote!(#path()),
        attr::Default::Trait => quote!(::core::default::Default::default()),
        attr::Default::None if is_option(field.ty) => quote!(::core::option::Option::None),
        attr::Default::None => {
            quote!(return ::core::result::Result::Err(#p::missing_field(#class, #name)))
        }
    }
}

/// `FlinkPojo::read_migrating`: the old fields in the plan's order, by name.
fn read_migrating(class: &str, fields: &[Field<'_>], sorted: &[&Field<'_>]) -> TokenStream {
    let p = private();
    let mut locals = Vec::new();
    let mut arms = Vec::new();
    for (i, field) in sorted.iter().enumerate() {
        let (ser, nullable) = field_serializer(field);
        let ty = field.ty;
        let name = field.java_name();
        let aliases: Vec<String> = field
            .attrs
            .flink_aliases
            .iter()
            .map(syn::LitStr::value)
            .collect();
        let local = quote::format_ident!("__f{}", i);
        locals.push(
            quote!(let mut #local: ::core::option::Option<#ty> = ::core::option::Option::None;),
        );
        arms.push(quote! {
            #name #(| #aliases)* if __step.reads() => {
                #local = ::core::option::Option::Some(#p::read_field::<#ty, _>(&#ser, #nullable, #class, #name, __in)?);
            }
        });
    }
    let build = struct_literal(fields, sorted, &|i, f| {
        let local = quote::format_ident!("__f{}", i);
        let missing = missing_value(f, class, &f.java_name());
        quote!(match #local { ::core::option::Option::Some(v) => v, ::core::option::Option::None => #missing })
    });
    quote! {
        fn read_migrating(__plan: &#p::PojoMigration, __in: &mut #p::DataInputView<'_>) -> #p::Result<Self> {
            #(#locals)*
            for __step in __plan.steps() {
                match __step.name() {
                    #(#arms)*
                    _ => __step.skip(__in)?,
                }
            }
            ::core::result::Result::Ok(#build)
        }
    }
}

/// The (old, current) Java names of the fields' `flink_alias`es.
fn aliases(sorted: &[&Field<'_>]) -> (Vec<String>, Vec<String>) {
    sorted
        .iter()
        .flat_map(|f| {
            f.attrs
                .flink_aliases
                .iter()
                .map(|a| (a.value(), f.java_name()))
        })
        .unzip()
}

/// Per field in Flink's order: its write, read (into `__f<i>`), skip and snapshot calls.
fn field_calls(class: &str, sorted: &[&Field<'_>]) -> [Vec<TokenStream>; 4] {
    let p = private();
    let mut calls: [Vec<TokenStream>; 4] = Default::default();
    for (i, field) in sorted.iter().enumerate() {
        let (ser, nullable) = field_serializer(field);
        let (ty, member, name) = (field.ty, &field.member, field.java_name());
        let local = quote::format_ident!("__f{}", i);
        calls[0].push(quote!(#p::write_field::<#ty, _>(&#ser, &self.#member, __out)?;));
        calls[1].push(
            quote!(let #local = #p::read_field::<#ty, _>(&#ser, #nullable, #class, #name, __in)?;),
        );
        calls[2].push(quote!(#p::skip_field::<#ty, _>(&#ser, __in)?;));
        calls[3].push(quote!(#p::field_snapshot::<#ty, _>(&#ser)));
    }
    calls
}

/// `Self { .. }` with each serialized field's `value` (by its index in Flink's order) and
/// each skipped field's default.
fn struct_literal(
    fields: &[Field<'_>],
    sorted: &[&Field<'_>],
    value: &dyn Fn(usize, &Field<'_>) -> TokenStream,
) -> TokenStream {
    let inits = fields.iter().map(|f| {
        let member = &f.member;
        let v = match sorted.iter().position(|s| std::ptr::eq(*s, f)) {
            Some(i) => value(i, f),
            None => skipped_value(f),
        };
        quote!(#member: #v)
    });
    quote!(Self { #(#inits),* })
}

fn pojo(cont: &Container<'_>, class: &str, fields: &[Field<'_>]) -> TokenStream {
    let p = private();
    let ident = &cont.ident;
    let sorted = flink_order(fields);
    let names: Vec<String> = sorted.iter().map(|f| f.java_name()).collect();
    let (alias_old, alias_new) = aliases(&sorted);
    let [write, read, skip, snapshots] = field_calls(class, &sorted);
    let build =
        |value: &dyn Fn(usize, &Field<'_>) -> TokenStream| struct_literal(fields, &sorted, value);
    let from_locals = build(&|i, _| {
        let local = quote::format_ident!("__f{}", i);
        quote!(#local)
    });
    let migrating = read_migrating(class, fields, &sorted);
    let copies = build(&|_, f| {
        let (ser, _) = field_serializer(f);
        let (ty, member) = (f.ty, &f.member);
        quote!(#p::copy_field::<#ty, _>(&#ser, &self.#member))
    });
    quote! {
        #[automatically_derived]
        impl #p::FlinkPojo for #ident {
            const CLASS_NAME: &'static str = #class;
            const FIELD_NAMES: &'static [&'static str] = &[#(#names),*];
            const FIELD_ALIASES: &'static [(&'static str, &'static str)] = &[#((#alias_old, #alias_new)),*];
            fn write_fields(&self, __out: &mut #p::DataOutputView) -> #p::Result<()> {
                #(#write)*
                ::core::result::Result::Ok(())
            }
            fn read_fields(__in: &mut #p::DataInputView<'_>) -> #p::Result<Self> {
                #(#read)*
                ::core::result::Result::Ok(#from_locals)
            }
            fn skip_fields(__in: &mut #p::DataInputView<'_>) -> #p::Result<()> {
                #(#skip)*
                ::core::result::Result::Ok(())
            }
            fn copy_fields(&self) -> Self {
                #copies
            }
            fn field_snapshots() -> ::std::vec::Vec<#p::SerializerSnapshot> {
                ::std::vec![#(#snapshots),*]
            }
            #migrating
        }
        #[automatically_derived]
        impl #p::FlinkType for #ident {
            type Serializer = #p::PojoSerializer<Self>;
            fn flink_serializer() -> Self::Serializer {
                #p::PojoSerializer::new()
            }
        }
    }
}

fn enumeration(cont: &Container<'_>, class: &str, variants: &[Variant<'_>]) -> TokenStream {
    let p = private();
    let ident = &cont.ident;
    let names: Vec<String> = variants.iter().map(Variant::java_name).collect();
    let idents: Vec<&syn::Ident> = variants.iter().map(|v| &v.ident).collect();
    let ordinals: Vec<i32> = (0..variants.len())
        .map(|i| i32::try_from(i).unwrap_or(i32::MAX))
        .collect();
    quote! {
        #[automatically_derived]
        impl #p::FlinkEnum for #ident {
            const CLASS_NAME: &'static str = #class;
            const CONSTANTS: &'static [&'static str] = &[#(#names),*];
            fn ordinal(&self) -> i32 {
                match self {
                    #(Self::#idents => #ordinals,)*
                }
            }
            fn from_ordinal(ordinal: i32) -> ::core::option::Option<Self> {
                match ordinal {
                    #(#ordinals => ::core::option::Option::Some(Self::#idents),)*
                    _ => ::core::option::Option::None,
                }
            }
        }
        #[automatically_derived]
        impl #p::FlinkType for #ident {
            type Serializer = #p::EnumSerializer<Self>;
            fn flink_serializer() -> Self::Serializer {
                #p::EnumSerializer::new()
            }
        }
    }
}
