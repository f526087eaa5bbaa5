//! Emits the Rust of a validated machine: enums, the row table, the typed `Event`, the `Handlers`
//! trait and the exhaustive `dispatch` ([`emit`]); and, separately, the table interpreter the
//! model checker runs mutated tables with ([`emit_interpreter`]).
//!
//! One function per generated item (in `items`, `table`, `handlers_trait`, `dispatch`,
//! `interpreter`), built with `quote`, checked with `syn::parse2`, printed with `prettyplease`
//! (one `#[doc]` per line, so docs print as `///`). The output is meant to be `include!`d inside
//! a module, so it has no inner attribute and no inner doc comment, only a leading `//` line.
//! The main file never contains a `_` match arm: every match is over all (state, event) pairs
//! or all variants. Comments naming the spec line of each dispatch row are emitted as markers
//! (prettyplease drops comments) and turned into `//` lines after printing (`Comments`).

mod dispatch;
mod handlers_trait;
mod interpreter;
mod items;
mod table;

use proc_macro2::{Ident, Literal, Span, TokenStream};
use quote::quote;

use crate::ir::Machine;

/// The generated Rust for `m`, whose Mermaid diagram is `mermaid`; `path` names the spec in the
/// header line and in the comments of `dispatch`. Fails only on a bug of the generator (output
/// that does not parse).
pub fn emit(m: &Machine, path: &str, mermaid: &str) -> Result<String, String> {
    let ids = Idents::new(m);
    let mut comments = Comments::default();
    let items = [
        items::states(m, &ids),
        items::event_source(),
        items::event_kinds(m, &ids),
        items::event_enum(m, &ids),
        items::timers(m, &ids),
        items::guard_ids(m, &ids),
        items::action_ids(m, &ids),
        table::row_struct(),
        table::rows(m, &ids),
        table::constants(m, &ids),
        handlers_trait::handlers(m),
        table::initial_actions_fn(m, &ids),
        dispatch::dispatch(m, &ids, path, &mut comments),
        table::cell_rows(m, &ids),
        table::mermaid(mermaid),
    ];
    let tokens = quote!( #( #items )* );
    print(tokens, path, &comments)
}

/// The generated table interpreter for `m`: `Witness`, `eval_guard`, `run_action` and
/// `interpret`, to be `include!`d in the same module as [`emit`]'s output (it uses its items).
/// Fails only on a bug of the generator.
pub fn emit_interpreter(m: &Machine, path: &str) -> Result<String, String> {
    let ids = Idents::new(m);
    print(
        interpreter::interpreter(m, &ids),
        path,
        &Comments::default(),
    )
}

/// The identifiers every item refers to, computed once.
pub(crate) struct Idents {
    /// `State` variants.
    pub st: Vec<Ident>,
    /// `EventKind` (and `Event`) variants.
    pub ev: Vec<Ident>,
    /// `TimerKind` variants.
    pub tm: Vec<Ident>,
    /// `GuardId` variants.
    pub gd: Vec<Ident>,
    /// Guard methods.
    pub gd_fn: Vec<Ident>,
    /// `ActionId` variants.
    pub ac: Vec<Ident>,
    /// Action methods.
    pub ac_fn: Vec<Ident>,
}

impl Idents {
    fn new(m: &Machine) -> Self {
        Idents {
            st: m.states.iter().map(|s| ident(&s.decl.camel)).collect(),
            ev: m.events.iter().map(|e| ident(&e.decl.camel)).collect(),
            tm: m.timers.iter().map(|t| ident(&t.decl.camel)).collect(),
            gd: m.guards.iter().map(|g| ident(&g.decl.camel)).collect(),
            gd_fn: m.guards.iter().map(|g| ident(&g.decl.name)).collect(),
            ac: m.actions.iter().map(|a| ident(&a.decl.camel)).collect(),
            ac_fn: m.actions.iter().map(|a| ident(&a.decl.name)).collect(),
        }
    }
}

/// Comments to put in the printed code: each is emitted as a marker holding its index, and the
/// marker's line becomes a `//` line after printing.
///
/// Two marker forms, for the two places prettyplease keeps something: a statement
/// `"@@<i>@@";` (inside a block) and an attribute `#[doc = "@@<i>"]` (on a match arm).
#[derive(Default)]
pub(crate) struct Comments {
    texts: Vec<String>,
}

impl Comments {
    /// A statement that becomes the comment `text`.
    pub fn statement(&mut self, text: String) -> TokenStream {
        let marker = format!("@@{}@@", self.push(text));
        quote!(#marker;)
    }

    /// An outer attribute that becomes the comment `text` (for a match arm).
    pub fn attribute(&mut self, text: String) -> TokenStream {
        let marker = format!("@@{}", self.push(text));
        quote!(#[doc = #marker])
    }

    fn push(&mut self, text: String) -> usize {
        self.texts.push(text);
        self.texts.len() - 1
    }

    /// The comment a printed line stands for, if it is a marker.
    fn of_line(&self, line: &str) -> Option<&str> {
        let t = line.trim_start();
        let index = t
            .strip_prefix("\"@@")
            .and_then(|r| r.strip_suffix("@@\";"))
            .or_else(|| t.strip_prefix("///@@"))?;
        self.texts
            .get(index.parse::<usize>().ok()?)
            .map(String::as_str)
    }

    /// `text` with every marker line replaced by its comment (same indentation).
    fn apply(&self, text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        for line in text.lines() {
            match self.of_line(line) {
                Some(comment) => {
                    let indent = line.len() - line.trim_start().len();
                    out.push_str(&line[..indent]);
                    out.push_str("// ");
                    out.push_str(comment);
                }
                None => out.push_str(line),
            }
            out.push('\n');
        }
        out
    }
}

/// Parses, pretty-prints, spaces and comments generated tokens, under the header line.
fn print(tokens: TokenStream, path: &str, comments: &Comments) -> Result<String, String> {
    let file = syn::parse2::<syn::File>(tokens).map_err(|e| e.to_string())?;
    let text = comments.apply(&space_items(&prettyplease::unparse(&file)));
    Ok(format!(
        "// Generated from {path} by mcp-codegen; do not edit (change the spec instead).\n\n{text}"
    ))
}

/// Puts a blank line between consecutive items (prettyplease prints them back to back): before a
/// line opening an item (`///` or `#[`) that follows, at the same indentation, the end of another
/// item (`}` or `;`, not in a comment). Lines of the raw Mermaid string never start that way.
fn space_items(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 20);
    let mut prev: Option<&str> = None;
    for line in text.lines() {
        let indent = line.len() - line.trim_start().len();
        let t = line.trim_start();
        let opens = (t.starts_with("///") && !t.starts_with("///@@")) || t.starts_with("#[");
        if let Some(p) = prev {
            let p_indent = p.len() - p.trim_start().len();
            let is_comment = p.trim_start().starts_with("//");
            let closes = !is_comment
                && (p.trim_end() == format!("{}}}", " ".repeat(p_indent)) || p.ends_with(';'));
            if opens && closes && indent == p_indent {
                out.push('\n');
            }
        }
        out.push_str(line);
        out.push('\n');
        prev = Some(line);
    }
    out
}

pub(crate) fn ident(name: &str) -> Ident {
    Ident::new(name, Span::call_site())
}

/// `name`, or `_name` when it is not used (so that no binding is unused).
pub(crate) fn maybe_unused(name: &str, used: bool) -> Ident {
    if used {
        ident(name)
    } else {
        ident(&format!("_{name}"))
    }
}

pub(crate) fn u16_lit(n: usize) -> Literal {
    Literal::u16_unsuffixed(u16::try_from(n).unwrap_or(u16::MAX))
}

pub(crate) fn usize_lit(n: usize) -> Literal {
    Literal::usize_unsuffixed(n)
}

pub(crate) use crate::method::rust;

/// One `#[doc]` attribute per line (so prettyplease prints `///` lines); never empty.
pub(crate) fn doc(text: &str) -> TokenStream {
    let text = if text.trim().is_empty() {
        "(The spec gives no doc.)"
    } else {
        text.trim_end()
    };
    let lines = text.lines().map(|l| {
        let l = l.trim_end();
        if l.is_empty() {
            String::new()
        } else {
            format!(" {l}")
        }
    });
    quote! { #( #[doc = #lines] )* }
}

/// `` `a`, `b` ``.
pub(crate) fn list(names: impl IntoIterator<Item = String>) -> String {
    names
        .into_iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A raw string literal holding `text` verbatim (newlines kept, so the output stays readable).
pub(crate) fn raw_string(text: &str) -> Literal {
    let mut hashes = String::from("#");
    while text.contains(&format!("\"{hashes}")) {
        hashes.push('#');
    }
    let raw = format!("r{hashes}\"{text}\"{hashes}");
    raw.parse::<Literal>()
        .unwrap_or_else(|_| Literal::string(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_become_comments() {
        let mut c = Comments::default();
        let stmt = c.statement("spec.toml:3 row 0".to_owned());
        let attr = c.attribute("spec.toml:9 row 1".to_owned());
        let tokens = quote! {
            fn f(x: u8) -> u8 {
                #stmt
                match x {
                    #attr
                    0 => 1,
                    _ => 2,
                }
            }
        };
        let text = print(tokens, "spec.toml", &c).unwrap();
        assert!(text.contains("    // spec.toml:3 row 0\n"), "{text}");
        assert!(
            text.contains("        // spec.toml:9 row 1\n        0 => 1,"),
            "{text}"
        );
        assert!(!text.contains("@@"), "{text}");
        syn::parse_file(&text).unwrap();
    }
}
