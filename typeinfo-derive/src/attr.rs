//! `#[typeinfo(...)]` attributes on containers, variants and fields.

use proc_macro2::Span;
use syn::meta::ParseNestedMeta;
use syn::spanned::Spanned;
use syn::{Attribute, LitStr, Path, WherePredicate};

use crate::ctxt::Ctxt;

/// Attributes of the struct or enum.
#[derive(Default)]
pub struct Container {
    /// `name = "..."`: the stable type identity in snapshots.
    pub name: Option<LitStr>,
    /// `bound = "..."`: where predicates that replace the inferred ones.
    pub bound: Option<Vec<WherePredicate>>,
    /// `crate = "..."`: the path of the `typeinfo` crate.
    pub krate: Option<Path>,
}

/// Attributes of an enum variant.
#[derive(Default)]
pub struct Variant {
    /// `alias = "..."`: earlier names of the variant (repeatable).
    pub aliases: Vec<LitStr>,
}

/// How a field gets a value when old bytes lack it, or when it is skipped.
pub enum Default {
    /// No default: an added field is refused on restore.
    None,
    /// `default`: the type's `Default::default()`.
    Trait,
    /// `default = path`: a function returning the value.
    Path(Path),
}

/// Attributes of a field.
pub struct Field {
    /// `skip`: not serialized; read back as its default.
    pub skip: Option<Span>,
    /// `default` or `default = path`.
    pub default: Default,
    /// `alias = "..."`: earlier names of the field (repeatable).
    pub aliases: Vec<LitStr>,
    /// `with = path`: the serializer type (implementing `TypeSerializer` and `Default`).
    pub with: Option<Path>,
    /// `recursive`: create the field's serializer lazily (indirectly recursive types).
    pub recursive: Option<Span>,
}

/// Remembers which attributes were seen, to report duplicates.
struct Seen<'c> {
    cx: &'c Ctxt,
    names: Vec<String>,
}

impl<'c> Seen<'c> {
    fn new(cx: &'c Ctxt) -> Self {
        Self { cx, names: Vec::new() }
    }

    /// Returns `true` the first time `name` is seen, reports a duplicate otherwise.
    fn first(&mut self, meta: &ParseNestedMeta<'_>, name: &str) -> bool {
        if self.names.iter().any(|n| n == name) {
            self.cx.error_spanned_by(&meta.path, format!("duplicate typeinfo attribute `{name}`"));
            return false;
        }
        self.names.push(name.to_owned());
        true
    }
}

fn unknown(cx: &Ctxt, meta: &ParseNestedMeta<'_>, allowed: &str) {
    let name = meta.path.to_token_stream_string();
    cx.error_spanned_by(&meta.path, format!("unknown typeinfo attribute `{name}` (expected one of: {allowed})"));
}

trait PathString {
    fn to_token_stream_string(&self) -> String;
}

impl PathString for Path {
    fn to_token_stream_string(&self) -> String {
        quote::ToTokens::to_token_stream(self).to_string().replace(' ', "")
    }
}

/// Parses every `#[typeinfo(...)]` in `attrs`, calling `each` per item.
fn for_each_typeinfo(cx: &Ctxt, attrs: &[Attribute], mut each: impl FnMut(&ParseNestedMeta<'_>) -> syn::Result<()>) {
    for attr in attrs {
        if !attr.path().is_ident("typeinfo") {
            continue;
        }
        if let Err(err) = attr.parse_nested_meta(|meta| each(&meta)) {
            cx.syn_error(err);
        }
    }
}

/// Consumes the rest of an unknown item (`= value` or `(...)`) so parsing goes on.
fn skip_value(meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
    if meta.input.peek(syn::Token![=]) {
        let _: proc_macro2::TokenStream = meta.value()?.parse()?;
    } else if meta.input.peek(syn::token::Paren) {
        let _ = meta.parse_nested_meta(|inner| skip_value(&inner));
    }
    Ok(())
}

fn parse_lit_str<T: syn::parse::Parse>(lit: &LitStr) -> syn::Result<T> {
    lit.parse()
}

impl Container {
    /// Parses the container's attributes.
    pub fn from_ast(cx: &Ctxt, attrs: &[Attribute]) -> Self {
        let mut out = Container::default();
        let mut seen = Seen::new(cx);
        for_each_typeinfo(cx, attrs, |meta| {
            if meta.path.is_ident("name") {
                let lit: LitStr = meta.value()?.parse()?;
                if lit.value().is_empty() {
                    cx.error_spanned_by(&lit, "typeinfo `name` must not be empty");
                }
                if seen.first(meta, "name") {
                    out.name = Some(lit);
                }
            } else if meta.path.is_ident("bound") {
                let lit: LitStr = meta.value()?.parse()?;
                let parsed = parse_lit_str::<syn::WhereClause>(&LitStr::new(&format!("where {}", lit.value()), lit.span()))
                    .map(|w| w.predicates.into_iter().collect());
                match parsed {
                    Ok(preds) => {
                        if seen.first(meta, "bound") {
                            out.bound = Some(preds);
                        }
                    }
                    Err(_) => cx.error_spanned_by(&lit, format!("cannot parse `{}` as where predicates", lit.value())),
                }
            } else if meta.path.is_ident("crate") {
                let lit: LitStr = meta.value()?.parse()?;
                match parse_lit_str::<Path>(&lit) {
                    Ok(path) => {
                        if seen.first(meta, "crate") {
                            out.krate = Some(path);
                        }
                    }
                    Err(_) => cx.error_spanned_by(&lit, format!("cannot parse `{}` as a path", lit.value())),
                }
            } else {
                unknown(cx, meta, "`name`, `bound`, `crate`");
                skip_value(meta)?;
            }
            Ok(())
        });
        out
    }
}

impl Variant {
    /// Parses a variant's attributes.
    pub fn from_ast(cx: &Ctxt, attrs: &[Attribute]) -> Self {
        let mut out = Variant::default();
        for_each_typeinfo(cx, attrs, |meta| {
            if meta.path.is_ident("alias") {
                out.aliases.push(meta.value()?.parse()?);
            } else {
                unknown(cx, meta, "`alias`");
                skip_value(meta)?;
            }
            Ok(())
        });
        out
    }
}

impl Field {
    /// Parses a field's attributes.
    pub fn from_ast(cx: &Ctxt, attrs: &[Attribute]) -> Self {
        let mut out = Field { skip: None, default: Default::None, aliases: Vec::new(), with: None, recursive: None };
        let mut seen = Seen::new(cx);
        for_each_typeinfo(cx, attrs, |meta| {
            if meta.path.is_ident("skip") {
                if seen.first(meta, "skip") {
                    out.skip = Some(meta.path.span());
                }
            } else if meta.path.is_ident("default") {
                let value = if meta.input.peek(syn::Token![=]) {
                    let lit: LitStr = meta.value()?.parse()?;
                    match parse_lit_str::<Path>(&lit) {
                        Ok(path) => Default::Path(path),
                        Err(_) => {
                            cx.error_spanned_by(&lit, format!("cannot parse `{}` as a path", lit.value()));
                            Default::None
                        }
                    }
                } else {
                    Default::Trait
                };
                if seen.first(meta, "default") {
                    out.default = value;
                }
            } else if meta.path.is_ident("alias") {
                out.aliases.push(meta.value()?.parse()?);
            } else if meta.path.is_ident("with") {
                let lit: LitStr = meta.value()?.parse()?;
                match parse_lit_str::<Path>(&lit) {
                    Ok(path) => {
                        if seen.first(meta, "with") {
                            out.with = Some(path);
                        }
                    }
                    Err(_) => cx.error_spanned_by(&lit, format!("cannot parse `{}` as a path", lit.value())),
                }
            } else if meta.path.is_ident("recursive") {
                if seen.first(meta, "recursive") {
                    out.recursive = Some(meta.path.span());
                }
            } else {
                unknown(cx, meta, "`skip`, `default`, `alias`, `with`, `recursive`");
                skip_value(meta)?;
            }
            Ok(())
        });
        out
    }
}
