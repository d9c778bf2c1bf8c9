//! The serializer, `TypeInfo` impl, description, snapshot and migration of a type.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

use crate::ast::{Body, Container, Field, Style, Variant};
use crate::attr;
use crate::bound;
use crate::span::krate_at;

/// The path of the `typeinfo` crate in generated code.
pub fn krate(cont: &Container<'_>) -> syn::Path {
    cont.attrs
        .krate
        .clone()
        .unwrap_or_else(|| syn::parse_quote!(::typeinfo))
}

/// A type as readable text for messages (`Vec<String>`, not `Vec < String >`).
pub fn type_text(ty: &syn::Type) -> String {
    let raw = quote!(#ty).to_string();
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        if c == ' ' {
            let prev = out.chars().last();
            let next = chars.peek().copied();
            let glue = matches!(prev, Some('<' | '&' | '(' | '[' | ':'))
                || matches!(next, Some('<' | '>' | ',' | ')' | ']' | ':' | ';'));
            if glue && prev != Some(';') {
                continue;
            }
        }
        out.push(c);
    }
    out
}

/// Where errors about a field's serializer point: the `with` path, else the field's type.
fn field_span(field: &Field<'_>) -> Span {
    field
        .attrs
        .with
        .as_ref()
        .map_or_else(|| field.ty.span(), Spanned::span)
}

/// Whether the field's type is written as `Option<...>` (it then defaults to `None`).
pub(crate) fn is_option(ty: &syn::Type) -> bool {
    match ty {
        syn::Type::Path(p) => {
            p.qself.is_none() && p.path.segments.last().is_some_and(|s| s.ident == "Option")
        }
        _ => false,
    }
}

/// What generated code needs to know about one field.
pub struct FieldGen<'f, 'a> {
    pub field: &'f Field<'a>,
    /// The serializer field's name (`f0`, `v1_f2`), for serialized fields.
    pub slot: Option<syn::Ident>,
    /// The index of the field among the serialized ones (its schema index).
    pub schema_index: Option<usize>,
    /// A binding for the field's value in patterns (`__f0`).
    pub binding: syn::Ident,
}

/// Pairs fields with their serializer slots.
pub fn field_gens<'f, 'a>(fields: &'f [Field<'a>], prefix: &str) -> Vec<FieldGen<'f, 'a>> {
    let mut schema_index = 0;
    fields
        .iter()
        .enumerate()
        .map(|(i, field)| {
            let (slot, index) = if field.is_serialized() {
                schema_index += 1;
                (
                    Some(format_ident!("{}f{}", prefix, i)),
                    Some(schema_index - 1),
                )
            } else {
                (None, None)
            };
            FieldGen {
                field,
                slot,
                schema_index: index,
                binding: format_ident!("__f{}", i),
            }
        })
        .collect()
}

struct Gen<'c, 'a> {
    cont: &'c Container<'a>,
    krate: syn::Path,
}

impl Gen<'_, '_> {
    fn is_recursive(&self, field: &Field<'_>) -> bool {
        field.attrs.recursive.is_some() || bound::mentions_self(self.cont, field.ty)
    }

    /// The type of a field's serializer.
    fn serializer_type(&self, field: &Field<'_>) -> TokenStream {
        let krate = &self.krate;
        let ty = field.ty;
        if let Some(with) = &field.attrs.with {
            quote!(#with)
        } else if self.is_recursive(field) {
            quote!(#krate::__private::Lazy<#ty>)
        } else {
            self.type_info_fn(ty, "Serializer")
        }
    }

    /// The expression that creates a field's serializer (inside `create_serializer`).
    fn serializer_new(&self, field: &Field<'_>) -> TokenStream {
        let krate = &self.krate;
        let ty = field.ty;
        if let Some(with) = &field.attrs.with {
            quote_spanned!(with.span()=> <#with as ::core::default::Default>::default())
        } else if self.is_recursive(field) {
            quote!(#krate::__private::Lazy::<#ty>::new(config)?)
        } else {
            let call = self.type_info_fn(ty, "create_serializer");
            quote!(#call(config)?)
        }
    }

    /// `<Type as TypeInfo>::item`, spanned from the type's first token to its last: where
    /// the type has no TypeInfo, the compiler reports it there, once for all the places
    /// generated code asks (the serializer's type, its creation, the description).
    fn type_info_fn(&self, ty: &syn::Type, item: &str) -> TokenStream {
        let (first, last) = crate::span::ends(ty);
        let krate = krate_at(self.cont, &self.krate, first);
        let item = syn::Ident::new(item, last);
        quote_spanned!(first=> <#ty as #krate::TypeInfo>::#item)
    }

    /// The value of a field that bytes do not hold (skipped, or added since), if it has one.
    fn default_value(&self, field: &Field<'_>) -> Option<TokenStream> {
        let ty = field.ty;
        match &field.attrs.default {
            attr::Default::Trait => {
                Some(quote_spanned!(ty.span()=> <#ty as ::core::default::Default>::default()))
            }
            attr::Default::Path(path) => Some(quote_spanned!(path.span()=> #path())),
            attr::Default::None if field.attrs.skip.is_some() => {
                Some(quote_spanned!(ty.span()=> <#ty as ::core::default::Default>::default()))
            }
            attr::Default::None if is_option(ty) => Some(quote!(::core::option::Option::None)),
            attr::Default::None => None,
        }
    }

    fn field_schema(&self, g: &FieldGen<'_, '_>) -> TokenStream {
        let krate = &self.krate;
        let name = g.field.schema_name();
        let aliases = g.field.attrs.aliases.iter().map(syn::LitStr::value);
        let has_default = self.default_value(g.field).is_some();
        let type_name = type_text(g.field.ty);
        quote!(#krate::__private::FieldSchema {
            name: #name,
            aliases: &[#(#aliases),*],
            has_default: #has_default,
            type_name: #type_name,
        })
    }

    fn struct_schema(&self, name: &str, gens: &[FieldGen<'_, '_>]) -> TokenStream {
        let krate = &self.krate;
        let fields = gens
            .iter()
            .filter(|g| g.slot.is_some())
            .map(|g| self.field_schema(g));
        quote!(#krate::__private::StructSchema { name: #name, fields: &[#(#fields),*] })
    }

    /// Builds `path { a: .., b: .. }`, `path(.., ..)` or `path` with a value per field.
    fn construct(
        &self,
        path: &TokenStream,
        style: Style,
        gens: &[FieldGen<'_, '_>],
        value: impl Fn(&FieldGen<'_, '_>) -> TokenStream,
    ) -> TokenStream {
        let values = gens.iter().map(&value);
        match style {
            Style::Named => {
                let members = gens.iter().map(|g| &g.field.member);
                quote!(#path { #(#members: #values),* })
            }
            Style::Tuple => quote!(#path ( #(#values),* )),
            Style::Unit => quote!(#path),
        }
    }

    /// A pattern binding every field to `__fN`.
    fn pattern(&self, path: &TokenStream, style: Style, gens: &[FieldGen<'_, '_>]) -> TokenStream {
        let bindings = gens.iter().map(|g| &g.binding);
        match style {
            Style::Named => {
                let members = gens.iter().map(|g| &g.field.member);
                quote!(#path { #(#members: #bindings),* })
            }
            Style::Tuple => quote!(#path ( #(#bindings),* )),
            Style::Unit => quote!(#path),
        }
    }

    fn ts_call(&self, g: &FieldGen<'_, '_>, method: &str, args: TokenStream) -> TokenStream {
        let krate = &self.krate;
        let ty = g.field.ty;
        let span = field_span(g.field);
        let slot = g.slot.clone().map(|mut slot| {
            slot.set_span(span);
            slot
        });
        let method = syn::Ident::new(method, span);
        let krate = krate_at(self.cont, krate, span);
        quote_spanned!(span=> #krate::TypeSerializer::<#ty>::#method(&self.#slot, #args))
    }

    /// Statements that serialize the fields bound to `__fN` (references).
    fn serialize_fields(&self, gens: &[FieldGen<'_, '_>]) -> TokenStream {
        let stmts = gens.iter().filter(|g| g.slot.is_some()).map(|g| {
            let b = &g.binding;
            let call = self.ts_call(g, "serialize", quote!(#b, __out));
            quote!(#call?;)
        });
        quote!(#(#stmts)*)
    }

    /// An expression that reads the fields into `path`.
    fn deserialize_fields(
        &self,
        path: &TokenStream,
        style: Style,
        gens: &[FieldGen<'_, '_>],
    ) -> TokenStream {
        self.construct(path, style, gens, |g| match &g.slot {
            Some(_) => {
                let call = self.ts_call(g, "deserialize", quote!(__input));
                quote!(#call?)
            }
            None => self
                .default_value(g.field)
                .unwrap_or_else(|| quote!(::core::default::Default::default())),
        })
    }

    fn skip_fields(&self, gens: &[FieldGen<'_, '_>]) -> TokenStream {
        let stmts = gens.iter().filter(|g| g.slot.is_some()).map(|g| {
            let call = self.ts_call(g, "skip", quote!(__input));
            quote!(#call?;)
        });
        quote!(#(#stmts)*)
    }

    fn copy_fields(
        &self,
        path: &TokenStream,
        style: Style,
        gens: &[FieldGen<'_, '_>],
    ) -> TokenStream {
        self.construct(path, style, gens, |g| match &g.slot {
            Some(_) => {
                let b = &g.binding;
                self.ts_call(g, "copy", quote!(#b))
            }
            None => self
                .default_value(g.field)
                .unwrap_or_else(|| quote!(::core::default::Default::default())),
        })
    }

    fn snapshots(&self, gens: &[FieldGen<'_, '_>]) -> TokenStream {
        let snaps = gens
            .iter()
            .filter(|g| g.slot.is_some())
            .map(|g| self.ts_call(g, "snapshot", quote!()));
        quote!(::std::vec![#(#snaps),*])
    }

    /// Field resolutions on a struct plan named `__plan`.
    fn plan_fields(&self, gens: &[FieldGen<'_, '_>]) -> TokenStream {
        let stmts = gens.iter().filter(|g| g.slot.is_some()).map(|g| {
            let index = g.schema_index;
            let span = field_span(g.field);
            let slot = g.slot.clone().map(|mut slot| {
                slot.set_span(span);
                slot
            });
            quote_spanned!(span=> __plan.field(#index, &self.#slot)?;)
        });
        quote!(#(#stmts)*)
    }

    /// A non-capturing closure that builds the value from migration slots.
    fn build_from_slots(
        &self,
        path: &TokenStream,
        style: Style,
        gens: &[FieldGen<'_, '_>],
    ) -> TokenStream {
        let krate = &self.krate;
        let value = self.construct(path, style, gens, |g| {
            let ty = g.field.ty;
            let default = self.default_value(g.field);
            match (g.schema_index, default) {
                (Some(i), Some(default)) => quote!(match __slots.take::<#ty>(#i)? {
                    ::core::option::Option::Some(__v) => __v,
                    ::core::option::Option::None => #default,
                }),
                (Some(i), None) => quote!(__slots.require::<#ty>(#i)?),
                (None, Some(default)) => default,
                (None, None) => quote!(::core::default::Default::default()),
            }
        });
        quote!(|__slots: &mut #krate::__private::Slots| -> #krate::Result<_> { ::core::result::Result::Ok(#value) })
    }

    fn fixed_length(&self, gens: &[FieldGen<'_, '_>]) -> TokenStream {
        let parts = gens.iter().filter(|g| g.slot.is_some()).map(|g| {
            let call = self.ts_call(g, "fixed_length", quote!());
            quote!(.checked_add(#call?)?)
        });
        quote!(::core::option::Option::Some(0usize #(#parts)*))
    }

    fn min_length(&self, gens: &[FieldGen<'_, '_>]) -> TokenStream {
        let parts = gens.iter().filter(|g| g.slot.is_some()).map(|g| {
            let call = self.ts_call(g, "min_length", quote!());
            quote!(.saturating_add(#call))
        });
        quote!(0usize #(#parts)*)
    }

    fn descriptions(&self, gens: &[FieldGen<'_, '_>]) -> TokenStream {
        let krate = &self.krate;
        let fields = gens.iter().filter(|g| g.slot.is_some()).map(|g| {
            let name = g.field.schema_name();
            let ty = g.field.ty;
            let description = if g.field.attrs.with.is_some() {
                let text = type_text(ty);
                quote!(#krate::TypeDescription::atomic(#text, #krate::TypeKind::Custom, false))
            } else {
                let call = self.type_info_fn(ty, "description");
                quote!(#call())
            };
            quote!(#krate::FieldDescription { name: ::std::string::String::from(#name), description: #description })
        });
        quote!(::std::vec![#(#fields),*])
    }
}

/// Generates the serializer struct and every impl for the container.
pub fn expand(cont: &Container<'_>) -> TokenStream {
    let krate = krate(cont);
    let g = Gen {
        cont,
        krate: krate.clone(),
    };
    let ident = &cont.ident;
    let (impl_generics, ty_generics, _) = cont.generics.split_for_impl();
    let where_clause = bound::where_clause(cont, &krate);
    let self_ty = quote!(#ident #ty_generics);
    let turbofish = ty_generics.as_turbofish();
    let self_path = quote!(#ident #turbofish);
    let name = cont.type_name();

    // Serializer fields, their creation, and the per-shape bodies.
    let (slots, body) = match &cont.data {
        Body::Struct(style, fields) => {
            let gens = field_gens(fields, "");
            (
                collect_slots(&g, &gens),
                struct_body(&g, &name, &self_ty, &self_path, *style, &gens),
            )
        }
        Body::Enum(variants) => {
            let per_variant: Vec<Vec<FieldGen<'_, '_>>> = variants
                .iter()
                .enumerate()
                .map(|(vi, v)| field_gens(&v.fields, &format!("v{vi}_")))
                .collect();
            let slots = per_variant
                .iter()
                .flat_map(|gens| collect_slots(&g, gens))
                .collect();
            (
                slots,
                enum_body(&g, &name, &self_ty, &self_path, variants, &per_variant),
            )
        }
    };
    let slot_decls = slots.iter().map(|(slot, ty, _)| quote!(#slot: #ty));
    let slot_news = slots.iter().map(|(slot, _, new)| quote!(#slot: #new));
    let slot_clones = slots.iter().map(|(slot, ty, _)| {
        let mut field = slot.clone();
        field.set_span(ty.span());
        quote_spanned!(ty.span()=> #slot: ::core::clone::Clone::clone(&self.#field))
    });
    let Body_ {
        serializer_impl,
        description,
        kind,
    } = body;

    quote! {
        #[doc(hidden)]
        pub struct __TypeInfoSerializer #impl_generics #where_clause {
            #(#slot_decls,)*
            __marker: ::core::marker::PhantomData<fn() -> #self_ty>,
        }

        impl #impl_generics ::core::clone::Clone for __TypeInfoSerializer #ty_generics #where_clause {
            fn clone(&self) -> Self {
                Self { #(#slot_clones,)* __marker: ::core::marker::PhantomData }
            }
        }

        impl #impl_generics ::core::fmt::Debug for __TypeInfoSerializer #ty_generics #where_clause {
            fn fmt(&self, __f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                __f.write_str(::core::concat!("TypeInfoSerializer<", #name, ">"))
            }
        }

        #[automatically_derived]
        impl #impl_generics #krate::TypeInfo for #self_ty #where_clause {
            type Serializer = __TypeInfoSerializer #ty_generics;

            fn create_serializer(config: &#krate::SerializerConfig) -> #krate::Result<Self::Serializer> {
                ::core::result::Result::Ok(__TypeInfoSerializer { #(#slot_news,)* __marker: ::core::marker::PhantomData })
            }

            fn description() -> #krate::TypeDescription {
                #krate::__private::guarded_description(#name, #krate::TypeKind::#kind, || { #description })
            }
        }

        #[automatically_derived]
        impl #impl_generics #krate::TypeSerializer<#self_ty> for __TypeInfoSerializer #ty_generics #where_clause {
            #serializer_impl
        }
    }
}

type Slot = (syn::Ident, TokenStream, TokenStream);

fn collect_slots(g: &Gen<'_, '_>, gens: &[FieldGen<'_, '_>]) -> Vec<Slot> {
    gens.iter()
        .filter_map(|fg| {
            fg.slot.clone().map(|slot| {
                (
                    slot,
                    g.serializer_type(fg.field),
                    g.serializer_new(fg.field),
                )
            })
        })
        .collect()
}

#[allow(non_camel_case_types)]
struct Body_ {
    serializer_impl: TokenStream,
    description: TokenStream,
    kind: syn::Ident,
}

fn struct_body(
    g: &Gen<'_, '_>,
    name: &str,
    self_ty: &TokenStream,
    self_path: &TokenStream,
    style: Style,
    gens: &[FieldGen<'_, '_>],
) -> Body_ {
    let krate = &g.krate;
    let schema = g.struct_schema(name, gens);
    let pattern = g.pattern(self_path, style, gens);
    let serialize = g.serialize_fields(gens);
    let deserialize = g.deserialize_fields(self_path, style, gens);
    let skip = g.skip_fields(gens);
    let copy = g.copy_fields(self_path, style, gens);
    let snapshots = g.snapshots(gens);
    let plan = g.plan_fields(gens);
    let build = g.build_from_slots(self_path, style, gens);
    let fixed = g.fixed_length(gens);
    let min = g.min_length(gens);
    let descriptions = g.descriptions(gens);
    // Skipped fields get their default, as in `deserialize`: the reused value comes from
    // another record, whose skipped fields must not leak into this one.
    let into_stmts = gens.iter().map(|fg| {
        let b = &fg.binding;
        match &fg.slot {
            Some(_) => {
                let call = g.ts_call(fg, "deserialize_into", quote!(#b, __input));
                quote!(#call?;)
            }
            None => {
                let default = g
                    .default_value(fg.field)
                    .unwrap_or_else(|| quote!(::core::default::Default::default()));
                quote!(*#b = #default;)
            }
        }
    });
    let ref_pattern = pattern.clone();
    let writes_fixed: Vec<TokenStream> = gens
        .iter()
        .filter(|fg| fg.slot.is_some())
        .map(|fg| {
            let call = g.ts_call(fg, "writes_fixed", quote!());
            quote!(&& #call)
        })
        .collect();
    let write_fixed_stmts = gens.iter().filter(|fg| fg.slot.is_some()).map(|fg| {
        let b = &fg.binding;
        let len = g.ts_call(fg, "fixed_length", quote!());
        let call = g.ts_call(fg, "write_fixed", quote!(#b, __d));
        quote! {
            let (__d, __rest) = #krate::__private::fixed_split(__rest, #len)?;
            #call?;
        }
    });
    let serializer_impl = quote! {
        #[inline]
        fn serialize(&self, __value: &#self_ty, __out: &mut #krate::DataOutputView) -> #krate::Result<()> {
            // A fixed-length struct reserves its bytes once and writes its fields into them
            // as a plain slice.
            if true #(#writes_fixed)* {
                if let ::core::option::Option::Some(__n) = #krate::TypeSerializer::<#self_ty>::fixed_length(self) {
                    return __out.append_with(__n, |__dst| #krate::TypeSerializer::<#self_ty>::write_fixed(self, __value, __dst));
                }
            }
            #[allow(unused_variables)]
            let #pattern = __value;
            #serialize
            ::core::result::Result::Ok(())
        }
        #[inline]
        fn writes_fixed(&self) -> bool {
            true #(#writes_fixed)* && #krate::TypeSerializer::<#self_ty>::fixed_length(self).is_some()
        }
        #[inline]
        fn write_fixed(&self, __value: &#self_ty, __dst: &mut [u8]) -> #krate::Result<()> {
            #[allow(unused_variables)]
            let #pattern = __value;
            #[allow(unused_variables)]
            let __rest = __dst;
            #(#write_fixed_stmts)*
            ::core::result::Result::Ok(())
        }
        #[inline]
        fn deserialize(&self, __input: &mut #krate::DataInputView<'_>) -> #krate::Result<#self_ty> {
            // A fixed-length struct takes all its bytes with one bounds check and reads its
            // fields from a view whose length the optimizer knows.
            let mut __whole;
            let __input = match #krate::TypeSerializer::<#self_ty>::fixed_length(self) {
                ::core::option::Option::Some(__n) => {
                    __whole = #krate::DataInputView::new(__input.read_bytes(__n)?);
                    &mut __whole
                }
                ::core::option::Option::None => __input,
            };
            ::core::result::Result::Ok(#deserialize)
        }
        #[inline]
        fn deserialize_append(&self, __len: usize, __input: &mut #krate::DataInputView<'_>, __out: &mut ::std::vec::Vec<#self_ty>) -> #krate::Result<()> {
            // Each value is built straight into the vector's next slot (no temporary copied
            // in), through a cursor that can stay in registers.
            #krate::__private::append_each(__len, __input, __out, |__input, __slot| {
                let mut __whole;
                let __input = match #krate::TypeSerializer::<#self_ty>::fixed_length(self) {
                    ::core::option::Option::Some(__n) => {
                        __whole = #krate::DataInputView::new(__input.read_bytes(__n)?);
                        &mut __whole
                    }
                    ::core::option::Option::None => __input,
                };
                ::core::result::Result::Ok(__slot.write(#deserialize))
            })
        }
        fn deserialize_into(&self, __reuse: &mut #self_ty, __input: &mut #krate::DataInputView<'_>) -> #krate::Result<()> {
            #[allow(unused_variables)]
            let #ref_pattern = __reuse;
            #(#into_stmts)*
            ::core::result::Result::Ok(())
        }
        fn copy(&self, __value: &#self_ty) -> #self_ty {
            #[allow(unused_variables)]
            let #pattern = __value;
            #copy
        }
        #[inline]
        fn skip(&self, __input: &mut #krate::DataInputView<'_>) -> #krate::Result<()> {
            #skip
            ::core::result::Result::Ok(())
        }
        #[inline]
        fn fixed_length(&self) -> ::core::option::Option<usize> {
            #fixed
        }
        fn min_length(&self) -> usize {
            #min
        }
        fn snapshot(&self) -> #krate::SerializerSnapshot {
            static __SCHEMA: #krate::__private::StructSchema = #schema;
            #krate::__private::guarded_snapshot(#name, || #krate::__private::struct_snapshot(&__SCHEMA, #snapshots))
        }
        fn resolve(&self, __old: &#krate::SerializerSnapshot, __registry: &#krate::SnapshotRegistry) -> #krate::Compatibility<#self_ty> {
            static __SCHEMA: #krate::__private::StructSchema = #schema;
            #krate::__private::resolve_struct(
                &__SCHEMA,
                &#krate::TypeSerializer::<#self_ty>::snapshot(self),
                __old,
                __registry,
                #[allow(unused_variables)]
                |__plan| { #plan ::core::result::Result::Ok(()) },
                #build,
            )
        }
    };
    let description = quote! {
        let __fields: ::std::vec::Vec<#krate::FieldDescription> = #descriptions;
        let __key = __fields.iter().all(|__f| __f.description.is_key_type());
        #krate::TypeDescription::composite(#name, #krate::TypeKind::Struct, __fields, __key)
    };
    Body_ {
        serializer_impl,
        description,
        kind: format_ident!("Struct"),
    }
}

fn enum_body(
    g: &Gen<'_, '_>,
    name: &str,
    self_ty: &TokenStream,
    self_path: &TokenStream,
    variants: &[Variant<'_>],
    per_variant: &[Vec<FieldGen<'_, '_>>],
) -> Body_ {
    let krate = &g.krate;
    let count = variants.len();
    let paths: Vec<TokenStream> = variants
        .iter()
        .map(|v| {
            let vi = &v.ident;
            quote!(#self_path::#vi)
        })
        .collect();
    let variant_schemas = variants.iter().zip(per_variant).map(|(v, gens)| {
        let schema = g.struct_schema(&v.ident.to_string(), gens);
        let aliases = v.attrs.aliases.iter().map(syn::LitStr::value);
        quote!(#krate::__private::VariantSchema { schema: #schema, aliases: &[#(#aliases),*] })
    });
    let variants_static = quote!(static __VARIANTS: [#krate::__private::VariantSchema; #count] = [#(#variant_schemas),*];);

    let mut serialize_arms = Vec::new();
    let mut deserialize_arms = Vec::new();
    let mut append_arms = Vec::new();
    let mut skip_arms = Vec::new();
    let mut copy_arms = Vec::new();
    let mut snapshot_items = Vec::new();
    let mut plan_variants = Vec::new();
    let mut describe_variants = Vec::new();
    for (vi, ((variant, gens), path)) in variants.iter().zip(per_variant).zip(&paths).enumerate() {
        let tag = vi as u64;
        let pattern = g.pattern(path, variant.style, gens);
        let serialize = g.serialize_fields(gens);
        serialize_arms.push(quote!(#pattern => { __out.write_varint(#tag); #serialize }));
        let deserialize = g.deserialize_fields(path, variant.style, gens);
        append_arms.push(
            quote!(#tag => #krate::__private::append_built(__out, |__slot| {
            ::core::result::Result::Ok(__slot.write(#deserialize))
        })?),
        );
        deserialize_arms.push(quote!(#tag => ::core::result::Result::Ok(#deserialize)));
        let skip = g.skip_fields(gens);
        skip_arms.push(quote!(#tag => { #skip }));
        let copy = g.copy_fields(path, variant.style, gens);
        copy_arms.push(quote!(#pattern => #copy));
        let snapshots = g.snapshots(gens);
        snapshot_items
            .push(quote!(#krate::__private::struct_snapshot(&__VARIANTS[#vi].schema, #snapshots)));
        let plan = g.plan_fields(gens);
        let build = g.build_from_slots(path, variant.style, gens);
        plan_variants.push(quote! {
            __enum_plan.variant::<#self_ty>(#vi, #[allow(unused_variables)] |__plan| { #plan ::core::result::Result::Ok(()) }, #build)?;
        });
        let descriptions = g.descriptions(gens);
        let vname = variant.ident.to_string();
        describe_variants.push(quote! {{
            let __fields: ::std::vec::Vec<#krate::FieldDescription> = #descriptions;
            let __key = __fields.iter().all(|__f| __f.description.is_key_type());
            #krate::FieldDescription {
                name: ::std::string::String::from(#vname),
                description: #krate::TypeDescription::composite(#vname, #krate::TypeKind::Struct, __fields, __key),
            }
        }});
    }

    let serializer_impl = quote! {
        #[inline]
        fn serialize(&self, __value: &#self_ty, __out: &mut #krate::DataOutputView) -> #krate::Result<()> {
            #[allow(unused_variables)]
            match __value { #(#serialize_arms)* }
            ::core::result::Result::Ok(())
        }
        #[inline]
        fn deserialize(&self, __input: &mut #krate::DataInputView<'_>) -> #krate::Result<#self_ty> {
            match __input.read_varint()? {
                #(#deserialize_arms,)*
                __tag => ::core::result::Result::Err(#krate::__private::invalid_tag(#name, __tag)),
            }
        }
        #[inline]
        fn deserialize_append(&self, __len: usize, __input: &mut #krate::DataInputView<'_>, __out: &mut ::std::vec::Vec<#self_ty>) -> #krate::Result<()> {
            // Each arm pushes its own variant: the optimizer then writes the fields straight
            // into the vector, where one value for all arms would be built in a temporary
            // and copied with wide loads over narrow stores (a store-forwarding stall).
            __out.reserve(__len.min(__input.remaining().max(16)));
            // Through a copy of the cursor, which can stay in registers (see the default
            // `deserialize_append`).
            let mut __local = ::core::clone::Clone::clone(&*__input);
            let __result = (|| -> #krate::Result<()> {
                let __input = &mut __local;
                for _ in 0..__len {
                    match __input.read_varint()? {
                        #(#append_arms,)*
                        __tag => return ::core::result::Result::Err(#krate::__private::invalid_tag(#name, __tag)),
                    }
                }
                ::core::result::Result::Ok(())
            })();
            *__input = __local;
            __result
        }
        fn copy(&self, __value: &#self_ty) -> #self_ty {
            #[allow(unused_variables)]
            match __value { #(#copy_arms,)* }
        }
        fn skip(&self, __input: &mut #krate::DataInputView<'_>) -> #krate::Result<()> {
            match __input.read_varint()? {
                #(#skip_arms)*
                __tag => return ::core::result::Result::Err(#krate::__private::invalid_tag(#name, __tag)),
            }
            ::core::result::Result::Ok(())
        }
        fn min_length(&self) -> usize {
            1
        }
        fn snapshot(&self) -> #krate::SerializerSnapshot {
            #variants_static
            #krate::__private::guarded_snapshot(#name, || {
                #krate::__private::enum_snapshot(#name, &__VARIANTS, ::std::vec![#(#snapshot_items),*])
            })
        }
        fn resolve(&self, __old: &#krate::SerializerSnapshot, __registry: &#krate::SnapshotRegistry) -> #krate::Compatibility<#self_ty> {
            #variants_static
            #krate::__private::resolve_enum(
                #name,
                &__VARIANTS,
                &#krate::TypeSerializer::<#self_ty>::snapshot(self),
                __old,
                __registry,
                |__enum_plan| { #(#plan_variants)* ::core::result::Result::Ok(()) },
            )
        }
    };
    let description = quote! {
        let __variants: ::std::vec::Vec<#krate::FieldDescription> = ::std::vec![#(#describe_variants),*];
        let __key = __variants.iter().all(|__v| __v.description.is_key_type());
        #krate::TypeDescription::composite(#name, #krate::TypeKind::Enum, __variants, __key)
    };
    Body_ {
        serializer_impl,
        description,
        kind: format_ident!("Enum"),
    }
}
