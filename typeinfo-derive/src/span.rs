//! Spans of generated tokens, so that the compiler's errors point at the user's tokens.

use proc_macro2::{Group, Span, TokenStream, TokenTree};
use quote::ToTokens;

use crate::ast::Container;

/// `tokens` with every span set to `span`.
pub fn respan(tokens: TokenStream, span: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|mut tt| {
            if let TokenTree::Group(g) = &tt {
                tt = TokenTree::Group(Group::new(g.delimiter(), respan(g.stream(), span)));
            }
            tt.set_span(span);
            tt
        })
        .collect()
}

/// The path of the typeinfo crate (`krate`) for tokens spanned at `span` (a field's
/// type): the default `::typeinfo` is moved there, so that the whole path an error is about
/// lies in the user's code; a `crate = "..."` path keeps its own span, so that errors
/// about it point at the attribute.
pub fn krate_at(cont: &Container<'_>, krate: &syn::Path, span: Span) -> TokenStream {
    if cont.attrs.krate.is_some() {
        krate.to_token_stream()
    } else {
        respan(krate.to_token_stream(), span)
    }
}

/// The spans of the first and the last token of `tokens` (a type, a path), whose join the
/// compiler reports as their span (`Option<Address>`, not only `Option`).
pub fn ends(tokens: &impl ToTokens) -> (Span, Span) {
    let mut tokens = tokens.to_token_stream().into_iter();
    let first = tokens.next().map_or_else(Span::call_site, |tt| tt.span());
    let last = tokens.last().map_or(first, |tt| match &tt {
        TokenTree::Group(g) => g.span_close(),
        other => other.span(),
    });
    (first, last)
}
