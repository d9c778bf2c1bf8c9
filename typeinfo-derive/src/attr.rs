//! `#[typeinfo(...)]` attributes on containers, variants and fields.
//!
//! Every error names the attribute and points at the offending token, and parsing goes on
//! after it (to the next item of the same `#[typeinfo(...)]`), so that one compile shows
//! every bad attribute.

use proc_macro2::{Span, TokenStream, TokenTree};
use quote::ToTokens;
use syn::meta::ParseNestedMeta;
use syn::parse::ParseStream;
use syn::spanned::Spanned;
use syn::{Attribute, LitStr, Path, Token, WherePredicate};

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
    /// `flink_pojo = "..."`: the Java class of the Flink POJO the struct stands for.
    pub flink_pojo: Option<LitStr>,
    /// `flink_enum = "..."`: the Java enum the enum stands for.
    pub flink_enum: Option<LitStr>,
}

/// Attributes of an enum variant.
#[derive(Default)]
pub struct Variant {
    /// `alias = "..."`: earlier names of the variant (repeatable).
    pub aliases: Vec<LitStr>,
    /// `flink_name = "..."`: the Java constant's name (of a `flink_enum`).
    pub flink_name: Option<LitStr>,
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
    /// `flink_name = "..."`: the Java field's name (of a `flink_pojo`).
    pub flink_name: Option<LitStr>,
    /// `flink_with = "..."`: the Flink serializer type of the field (of a `flink_pojo`).
    pub flink_with: Option<Path>,
    /// `flink_alias = "..."`: earlier Java names of the field (repeatable).
    pub flink_aliases: Vec<LitStr>,
}

/// The attributes of one position, for messages.
struct Known {
    /// `type`, `field` or `variant`.
    position: &'static str,
    names: &'static [&'static str],
    /// The Flink attributes (of `typeinfo_flink_compat`): accepted and suggested, but not
    /// listed in "expected one of" (the core attributes are what most users look for).
    flink: &'static [&'static str],
    /// One attribute, written out.
    example: &'static str,
}

const CONTAINER: Known = Known {
    position: "type",
    names: &["name", "bound", "crate"],
    flink: &["flink_pojo", "flink_enum"],
    example: "name = \"my.app.Type\"",
};
const VARIANT: Known = Known {
    position: "variant",
    names: &["alias"],
    flink: &["flink_name"],
    example: "alias = \"OldName\"",
};
const FIELD: Known = Known {
    position: "field",
    names: &["skip", "default", "alias", "with", "recursive"],
    flink: &["flink_name", "flink_with", "flink_alias"],
    example: "default",
};

/// Remembers which attributes were seen, to report duplicates.
struct Seen<'c> {
    cx: &'c Ctxt,
    names: Vec<String>,
}

impl<'c> Seen<'c> {
    fn new(cx: &'c Ctxt) -> Self {
        Self {
            cx,
            names: Vec::new(),
        }
    }

    /// Returns `true` the first time `name` is seen, reports a duplicate otherwise.
    fn first(&mut self, meta: &ParseNestedMeta<'_>, name: &str) -> bool {
        if self.names.iter().any(|n| n == name) {
            self.cx
                .error_spanned_by(&meta.path, format!("duplicate typeinfo attribute `{name}`"));
            return false;
        }
        self.names.push(name.to_owned());
        true
    }
}

/// The attribute's name as written (`a::b` for a path).
fn path_text(path: &Path) -> String {
    tokens_text(&path.to_token_stream())
}

/// Tokens as readable text for messages (`a::b`, `T: Trait`, `Vec<u8>`).
fn tokens_text(tokens: &TokenStream) -> String {
    let mut text = tokens.to_string();
    let glue = [
        (" :: ", "::"),
        (":: ", "::"),
        (" : ", ": "),
        (" < ", "<"),
        (" <", "<"),
        ("< ", "<"),
        (" >", ">"),
        (" ,", ","),
        (" (", "("),
        ("( ", "("),
        (" )", ")"),
        ("& ", "&"),
    ];
    for (from, to) in glue {
        text = text.replace(from, to);
    }
    text
}

/// The edit distance of two short strings, for "did you mean".
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let next = (row[j + 1] + 1)
                .min(row[j] + 1)
                .min(diagonal + usize::from(ca != *cb));
            diagonal = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

fn unknown(cx: &Ctxt, meta: &ParseNestedMeta<'_>, known: &Known) {
    let name = path_text(&meta.path);
    let list = known
        .names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ");
    let expected = if known.names.len() == 1 {
        format!("expected {list}")
    } else {
        format!("expected one of: {list}")
    };
    let hint = if name == "rename" && known.position != "type" {
        format!(
            "; the schema name of a {0} is its identifier: rename the {0} and keep the old name with `alias = \"old_name\"`",
            known.position
        )
    } else if let Some(close) = known
        .names
        .iter()
        .chain(known.flink)
        .filter(|n| distance(&name, n) <= 2)
        .min_by_key(|n| distance(&name, n))
    {
        format!("; did you mean `{close}`?")
    } else {
        String::new()
    };
    cx.error_spanned_by(
        &meta.path,
        format!(
            "unknown typeinfo attribute `{name}` on a {} ({expected}){hint}",
            known.position
        ),
    );
}

/// Parses every `#[typeinfo(...)]` in `attrs`, calling `each` per item.
fn for_each_typeinfo(
    cx: &Ctxt,
    attrs: &[Attribute],
    known: &Known,
    mut each: impl FnMut(&ParseNestedMeta<'_>) -> syn::Result<()>,
) {
    for attr in attrs {
        if !attr.path().is_ident("typeinfo") {
            continue;
        }
        let example = match &attr.meta {
            syn::Meta::List(_) => {
                if let Err(err) = attr.parse_nested_meta(|meta| each(&meta)) {
                    cx.syn_error(err);
                }
                continue;
            }
            syn::Meta::NameValue(syn::MetaNameValue {
                value:
                    syn::Expr::Lit(syn::ExprLit {
                        lit: syn::Lit::Str(lit),
                        ..
                    }),
                ..
            }) if syn::parse_str::<syn::Meta>(&lit.value())
                .is_ok_and(|m| known.names.iter().any(|n| m.path().is_ident(n))) =>
            {
                lit.value()
            }
            _ => known.example.to_owned(),
        };
        cx.error_spanned_by(
            attr,
            format!("typeinfo attributes are written as a list: `#[typeinfo({example})]`"),
        );
    }
}

/// The tokens up to the next `,` of the attribute (or its end).
fn until_comma(input: ParseStream<'_>) -> syn::Result<TokenStream> {
    let mut out = TokenStream::new();
    while !input.is_empty() && !input.peek(Token![,]) {
        out.extend([input.parse::<TokenTree>()?]);
    }
    Ok(out)
}

/// Consumes the value of an item (`= value` up to the next `,`, or `(...)`) so parsing
/// goes on with the next item; returns what it consumed.
fn skip_value(meta: &ParseNestedMeta<'_>) -> syn::Result<TokenStream> {
    let mut out = TokenStream::new();
    if meta.input.peek(Token![=]) {
        let eq: Token![=] = meta.input.parse()?;
        eq.to_tokens(&mut out);
        out.extend(until_comma(meta.input)?);
    } else if meta.input.peek(syn::token::Paren) {
        out.extend([meta.input.parse::<TokenTree>()?]);
    }
    Ok(out)
}

/// A flag (`skip`, `recursive`): reports and skips a value given to it.
fn flag(cx: &Ctxt, meta: &ParseNestedMeta<'_>, name: &str) -> syn::Result<()> {
    let value = skip_value(meta)?;
    if !value.is_empty() {
        cx.error_spanned_by(
            &value,
            format!("typeinfo attribute `{name}` takes no value: write `{name}`"),
        );
    }
    Ok(())
}

/// The string of `name = "..."`; reports a missing value or one that is not a string
/// literal (and returns `None`), so that parsing goes on.
fn string_value(
    cx: &Ctxt,
    meta: &ParseNestedMeta<'_>,
    name: &str,
    example: &str,
) -> syn::Result<Option<LitStr>> {
    if !meta.input.peek(Token![=]) {
        let rest = skip_value(meta)?;
        let path = &meta.path;
        cx.error_spanned_by(
            quote::quote!(#path #rest),
            format!("typeinfo attribute `{name}` needs a value: `{name} = \"{example}\"`"),
        );
        return Ok(None);
    }
    let value = meta.value()?;
    if value.peek(LitStr) {
        return Ok(Some(value.parse()?));
    }
    let tokens = until_comma(value)?;
    if tokens.is_empty() {
        cx.error_spanned_by(
            &meta.path,
            format!("typeinfo attribute `{name}` needs a value: `{name} = \"{example}\"`"),
        );
    } else {
        let text = match syn::parse2::<syn::Lit>(tokens.clone()) {
            Ok(syn::Lit::Char(c)) => c.value().to_string(),
            _ => tokens_text(&tokens),
        };
        cx.error_spanned_by(
            &tokens,
            format!(
                "typeinfo attribute `{name}` takes a string literal: write `{name} = {:?}`",
                text
            ),
        );
    }
    Ok(None)
}

/// The path in `name = "..."`: `what` says what it names, `example` is one.
fn path_value(
    cx: &Ctxt,
    meta: &ParseNestedMeta<'_>,
    name: &str,
    what: &str,
    example: &str,
) -> syn::Result<Option<Path>> {
    let Some(lit) = string_value(cx, meta, name, example)? else {
        return Ok(None);
    };
    let text = lit.value();
    match lit.parse::<Path>() {
        Ok(path) => Ok(Some(path)),
        Err(err) => {
            let must =
                format!("typeinfo attribute `{name}` takes {what}, like `{name} = \"{example}\"`");
            let call = text
                .trim()
                .strip_suffix("()")
                .filter(|f| syn::parse_str::<Path>(f).is_ok());
            let message = if text.trim().is_empty() {
                format!("{must}, not an empty string")
            } else if let Some(function) = call {
                format!(
                    "{must}: name the function without `()`, as in `{name} = \"{}\"`",
                    function.trim()
                )
            } else {
                format!("{must}; cannot parse `{text}`: {err}")
            };
            cx.error_spanned_by(&lit, message);
            Ok(None)
        }
    }
}

/// A Java name (`flink_pojo`, `flink_enum`, `flink_name`): a non-empty string without
/// whitespace.
fn java_name(
    cx: &Ctxt,
    meta: &ParseNestedMeta<'_>,
    name: &str,
    example: &str,
) -> syn::Result<Option<LitStr>> {
    let lit = string_value(cx, meta, name, example)?;
    if let Some(lit) = &lit {
        let value = lit.value();
        if value.is_empty() || value.chars().any(char::is_whitespace) {
            cx.error_spanned_by(
                lit,
                format!("typeinfo attribute `{name}` takes a Java name, like `{name} = \"{example}\"`, not `{value}`"),
            );
            return Ok(None);
        }
    }
    Ok(lit)
}

impl Container {
    /// Parses the container's attributes.
    pub fn from_ast(cx: &Ctxt, attrs: &[Attribute]) -> Self {
        let mut out = Container::default();
        let mut seen = Seen::new(cx);
        for_each_typeinfo(cx, attrs, &CONTAINER, |meta| {
            if meta.path.is_ident("name") {
                let lit = string_value(cx, meta, "name", "my.app.Type")?;
                if let Some(lit) = &lit {
                    if lit.value().trim().is_empty() {
                        cx.error_spanned_by(lit, "typeinfo attribute `name` must not be empty: it is the type's identity in snapshots");
                    }
                }
                if seen.first(meta, "name") {
                    out.name = lit;
                }
            } else if meta.path.is_ident("bound") {
                let Some(lit) = string_value(cx, meta, "bound", "T: typeinfo::TypeInfo")? else {
                    let _ = seen.first(meta, "bound");
                    return Ok(());
                };
                let parsed = LitStr::new(&format!("where {}", lit.value()), lit.span())
                    .parse::<syn::WhereClause>()
                    .map(|w| w.predicates.into_iter().collect());
                match parsed {
                    Ok(preds) => {
                        if seen.first(meta, "bound") {
                            out.bound = Some(preds);
                        }
                    }
                    Err(err) => {
                        let _ = seen.first(meta, "bound");
                        cx.error_spanned_by(
                            &lit,
                            format!(
                                "typeinfo attribute `bound` takes where predicates, like `bound = \"T: typeinfo::TypeInfo\"`; cannot parse `{}`: {err}",
                                lit.value()
                            ),
                        );
                    }
                }
            } else if meta.path.is_ident("crate") {
                let path = path_value(
                    cx,
                    meta,
                    "crate",
                    "the path of the typeinfo crate",
                    "::typeinfo",
                )?;
                if seen.first(meta, "crate") {
                    out.krate = path;
                }
            } else if meta.path.is_ident("flink_pojo") || meta.path.is_ident("flink_enum") {
                let pojo = meta.path.is_ident("flink_pojo");
                let name = if pojo { "flink_pojo" } else { "flink_enum" };
                let lit = java_name(cx, meta, name, "com.example.Order")?;
                if seen.first(meta, name) {
                    if pojo {
                        out.flink_pojo = lit;
                    } else {
                        out.flink_enum = lit;
                    }
                }
            } else {
                unknown(cx, meta, &CONTAINER);
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
        let mut seen = Seen::new(cx);
        for_each_typeinfo(cx, attrs, &VARIANT, |meta| {
            if meta.path.is_ident("alias") {
                out.aliases
                    .extend(string_value(cx, meta, "alias", "OldName")?);
            } else if meta.path.is_ident("flink_name") {
                let lit = java_name(cx, meta, "flink_name", "BUY")?;
                if seen.first(meta, "flink_name") {
                    out.flink_name = lit;
                }
            } else {
                unknown(cx, meta, &VARIANT);
                skip_value(meta)?;
            }
            Ok(())
        });
        out
    }
}

impl Field {
    /// Parses `flink_name` or `flink_with` (of a `flink_pojo` field).
    fn flink_from_ast(
        &mut self,
        cx: &Ctxt,
        meta: &ParseNestedMeta<'_>,
        seen: &mut Seen<'_>,
    ) -> syn::Result<()> {
        if meta.path.is_ident("flink_name") {
            let lit = java_name(cx, meta, "flink_name", "userId")?;
            if seen.first(meta, "flink_name") {
                self.flink_name = lit;
            }
        } else {
            let path = path_value(
                cx,
                meta,
                "flink_with",
                "the path of a serializer type",
                "typeinfo_flink_compat::BytePrimitiveArraySerializer",
            )?;
            if seen.first(meta, "flink_with") {
                self.flink_with = path;
            }
        }
        Ok(())
    }

    /// Parses a field's attributes.
    pub fn from_ast(cx: &Ctxt, attrs: &[Attribute]) -> Self {
        let mut out = Field {
            skip: None,
            default: Default::None,
            aliases: Vec::new(),
            with: None,
            recursive: None,
            flink_name: None,
            flink_with: None,
            flink_aliases: Vec::new(),
        };
        let mut seen = Seen::new(cx);
        for_each_typeinfo(cx, attrs, &FIELD, |meta| {
            if meta.path.is_ident("skip") {
                flag(cx, meta, "skip")?;
                if seen.first(meta, "skip") {
                    out.skip = Some(meta.path.span());
                }
            } else if meta.path.is_ident("default") {
                let value = if meta.input.peek(Token![=]) {
                    match path_value(
                        cx,
                        meta,
                        "default",
                        "the path of a function",
                        "my::default_value",
                    )? {
                        Some(path) => Default::Path(path),
                        None => Default::None,
                    }
                } else {
                    let value = skip_value(meta)?;
                    if !value.is_empty() {
                        cx.error_spanned_by(
                            &value,
                            "typeinfo attribute `default` takes no arguments: write `default` or `default = \"path::to::function\"`",
                        );
                    }
                    Default::Trait
                };
                if seen.first(meta, "default") {
                    out.default = value;
                }
            } else if meta.path.is_ident("alias") {
                out.aliases
                    .extend(string_value(cx, meta, "alias", "old_name")?);
            } else if meta.path.is_ident("with") {
                let path = path_value(
                    cx,
                    meta,
                    "with",
                    "the path of a serializer type",
                    "my::Serializer",
                )?;
                if seen.first(meta, "with") {
                    out.with = path;
                }
            } else if meta.path.is_ident("recursive") {
                flag(cx, meta, "recursive")?;
                if seen.first(meta, "recursive") {
                    out.recursive = Some(meta.path.span());
                }
            } else if meta.path.is_ident("flink_name") || meta.path.is_ident("flink_with") {
                out.flink_from_ast(cx, meta, &mut seen)?;
            } else if meta.path.is_ident("flink_alias") {
                out.flink_aliases
                    .extend(java_name(cx, meta, "flink_alias", "oldName")?);
            } else {
                unknown(cx, meta, &FIELD);
                skip_value(meta)?;
            }
            Ok(())
        });
        out
    }
}
