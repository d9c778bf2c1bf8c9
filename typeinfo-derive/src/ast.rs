//! The input as a small AST that keeps the original tokens for spans.

use syn::punctuated::Punctuated;
use syn::{Data, DeriveInput, Member, Token};

use crate::attr;
use crate::ctxt::Ctxt;

/// The struct or enum being derived.
pub struct Container<'a> {
    /// The type's identifier.
    pub ident: syn::Ident,
    /// Its attributes.
    pub attrs: attr::Container,
    /// Its shape.
    pub data: Body<'a>,
    /// Its generics.
    pub generics: &'a syn::Generics,
    /// The integer type of `#[repr(u8)]` and the like: the type of an enum's discriminants
    /// (`isize` without one).
    pub repr: Option<syn::Ident>,
}

/// A struct's fields or an enum's variants.
pub enum Body<'a> {
    /// An enum.
    Enum(Vec<Variant<'a>>),
    /// A struct.
    Struct(Style, Vec<Field<'a>>),
}

/// How fields are written.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// `{ a: A }`.
    Named,
    /// `(A)`.
    Tuple,
    /// No fields.
    Unit,
}

/// One enum variant.
pub struct Variant<'a> {
    /// The variant's identifier.
    pub ident: syn::Ident,
    /// Its attributes.
    pub attrs: attr::Variant,
    /// How its fields are written.
    pub style: Style,
    /// Its fields.
    pub fields: Vec<Field<'a>>,
    /// Its explicit discriminant (`High = 10`), if any.
    pub discriminant: Option<&'a syn::Expr>,
}

/// One field.
pub struct Field<'a> {
    /// `x` or `0`.
    pub member: Member,
    /// The field's type.
    pub ty: &'a syn::Type,
    /// Its attributes.
    pub attrs: attr::Field,
}

impl Field<'_> {
    /// The field's name in the schema: its identifier, or its index.
    pub fn schema_name(&self) -> String {
        match &self.member {
            Member::Named(ident) => ident.to_string().trim_start_matches("r#").to_owned(),
            Member::Unnamed(index) => index.index.to_string(),
        }
    }

    /// The field's Java name: `flink_name`, else its schema name.
    pub fn java_name(&self) -> String {
        self.attrs
            .flink_name
            .as_ref()
            .map_or_else(|| self.schema_name(), syn::LitStr::value)
    }

    /// Whether the field is written at all.
    pub fn is_serialized(&self) -> bool {
        self.attrs.skip.is_none()
    }
}

impl Variant<'_> {
    /// The variant's Java constant name: `flink_name`, else its identifier.
    pub fn java_name(&self) -> String {
        self.attrs
            .flink_name
            .as_ref()
            .map_or_else(|| self.ident.to_string(), syn::LitStr::value)
    }
}

impl<'a> Container<'a> {
    /// Parses the input; `None` for unions (reported to `cx`).
    pub fn from_ast(cx: &Ctxt, input: &'a DeriveInput) -> Option<Container<'a>> {
        let attrs = attr::Container::from_ast(cx, &input.attrs);
        let data = match &input.data {
            Data::Enum(data) => Body::Enum(enum_from_ast(cx, &data.variants)),
            Data::Struct(data) => {
                let (style, fields) = struct_from_ast(cx, &data.fields);
                Body::Struct(style, fields)
            }
            Data::Union(data) => {
                cx.error_spanned_by(
                    data.union_token,
                    "#[derive(TypeInfo)] does not support unions: use an enum",
                );
                return None;
            }
        };
        Some(Container {
            ident: input.ident.clone(),
            attrs,
            data,
            generics: &input.generics,
            repr: int_repr(&input.attrs),
        })
    }

    /// The stable type identity: `name = "..."`, else the identifier.
    pub fn type_name(&self) -> String {
        self.attrs
            .name
            .as_ref()
            .map_or_else(|| self.ident.to_string(), syn::LitStr::value)
    }
}

/// The integer type named in `#[repr(...)]`, if any. A malformed `repr` is left to the
/// compiler, which reports it.
fn int_repr(attrs: &[syn::Attribute]) -> Option<syn::Ident> {
    const INTS: [&str; 12] = [
        "u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16", "i32", "i64", "i128", "isize",
    ];
    attrs
        .iter()
        .filter(|attr| attr.path().is_ident("repr"))
        .filter_map(|attr| {
            attr.parse_args_with(Punctuated::<syn::Meta, Token![,]>::parse_terminated)
                .ok()
        })
        .flatten()
        .find_map(|meta| match meta {
            syn::Meta::Path(path) => path
                .get_ident()
                .filter(|i| INTS.iter().any(|int| *i == int))
                .cloned(),
            _ => None,
        })
}

fn enum_from_ast<'a>(
    cx: &Ctxt,
    variants: &'a Punctuated<syn::Variant, Token![,]>,
) -> Vec<Variant<'a>> {
    variants
        .iter()
        .map(|variant| {
            let attrs = attr::Variant::from_ast(cx, &variant.attrs);
            let (style, fields) = struct_from_ast(cx, &variant.fields);
            Variant {
                ident: variant.ident.clone(),
                attrs,
                style,
                fields,
                discriminant: variant.discriminant.as_ref().map(|(_, e)| e),
            }
        })
        .collect()
}

fn struct_from_ast<'a>(cx: &Ctxt, fields: &'a syn::Fields) -> (Style, Vec<Field<'a>>) {
    match fields {
        syn::Fields::Named(fields) => (Style::Named, fields_from_ast(cx, &fields.named)),
        syn::Fields::Unnamed(fields) => (Style::Tuple, fields_from_ast(cx, &fields.unnamed)),
        syn::Fields::Unit => (Style::Unit, Vec::new()),
    }
}

fn fields_from_ast<'a>(cx: &Ctxt, fields: &'a Punctuated<syn::Field, Token![,]>) -> Vec<Field<'a>> {
    fields
        .iter()
        .enumerate()
        .map(|(i, field)| Field {
            member: match &field.ident {
                Some(ident) => Member::Named(ident.clone()),
                None => Member::Unnamed(i.into()),
            },
            ty: &field.ty,
            attrs: attr::Field::from_ast(cx, &field.attrs),
        })
        .collect()
}
