//! The `Handlers` methods a spec requires: their signatures (shared with the generated trait), a
//! skeleton `impl`, and a comparison with an existing `impl` (which methods it lacks, which it
//! has that the spec no longer declares, which take the wrong number of arguments or return the
//! wrong kind of value).
//!
//! Used by the `mcp-codegen handlers` command. The comparison looks at names, argument counts
//! and the kind of return (`bool`, `Option`, none), not at the types themselves: the compiler
//! checks those, against the generated trait.

use std::collections::{BTreeMap, BTreeSet};

use proc_macro2::TokenStream;
use quote::quote;

use crate::emit_rust::rust;
use crate::ir::{Action, Guard, Machine, Use};

/// Whether a required method is a guard or an action.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum MethodKind {
    /// `fn name(&self[, p: &P]) -> bool` (or `-> Option<W>` when it yields a witness).
    Guard,
    /// `fn name(&mut self[, p: P | &P][, w: W | &W])`.
    Action,
}

/// One argument of a method after the receiver.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Param {
    /// `p` (the payload) or `w` (the witness).
    pub name: &'static str,
    /// Its type (`&Response`, `RequestId`).
    pub ty: String,
}

/// One method of the generated `Handlers` trait.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Method {
    /// The method's name (the guard's or action's name in the spec).
    pub name: String,
    /// Guard or action.
    pub kind: MethodKind,
    /// The arguments after the receiver: the payload first, then the witness.
    pub params: Vec<Param>,
    /// The return type (`bool` or `Option<W>` for guards, none for actions).
    pub output: Option<String>,
}

/// `&T` or `T`.
fn by(u: Use, t: &str) -> String {
    match u {
        Use::Ref => format!("&{t}"),
        Use::Move => t.to_owned(),
    }
}

impl Method {
    /// The method of a guard: `&P` of its rows' events if they carry one; `bool`, or
    /// `Option<W>` when it yields `W`.
    pub fn guard(g: &Guard) -> Self {
        Method {
            name: g.decl.name.clone(),
            kind: MethodKind::Guard,
            params: g
                .takes
                .iter()
                .map(|t| Param {
                    name: "p",
                    ty: format!("&{t}"),
                })
                .collect(),
            output: Some(
                g.yields
                    .as_ref()
                    .map_or_else(|| "bool".to_owned(), |w| format!("Option<{w}>")),
            ),
        }
    }

    /// The method of an action: the payload and the witness it declares, each by reference or
    /// by value.
    pub fn action(a: &Action) -> Self {
        let payload = a
            .payload
            .zip(a.payload_type.as_deref())
            .map(|(u, t)| Param {
                name: "p",
                ty: by(u, t),
            });
        let witness = a
            .witness
            .zip(a.witness_type.as_deref())
            .map(|(u, t)| Param {
                name: "w",
                ty: by(u, t),
            });
        Method {
            name: a.decl.name.clone(),
            kind: MethodKind::Action,
            params: payload.into_iter().chain(witness).collect(),
            output: None,
        }
    }

    /// `&self` for a guard, `&mut self` for an action.
    pub fn receiver(&self) -> &'static str {
        match self.kind {
            MethodKind::Guard => "&self",
            MethodKind::Action => "&mut self",
        }
    }

    /// The signature with arguments named with `prefix` (`""` in the trait, `"_"` in a
    /// skeleton).
    fn signature_with(&self, prefix: &str) -> String {
        let mut args = vec![self.receiver().to_owned()];
        args.extend(
            self.params
                .iter()
                .map(|p| format!("{prefix}{}: {}", p.name, p.ty)),
        );
        let output = self
            .output
            .as_ref()
            .map_or_else(String::new, |o| format!(" -> {o}"));
        format!("fn {}({}){output}", self.name, args.join(", "))
    }

    /// The method's signature as it appears in the trait (without `;`), for example
    /// `fn is_live_response(&self, p: &Response) -> Option<RequestId>`.
    pub fn signature(&self) -> String {
        self.signature_with("")
    }

    /// The signature's tokens (for the generated trait).
    pub(crate) fn tokens(&self) -> TokenStream {
        rust(&self.signature())
    }
}

/// The methods the spec requires, guards first, each in declaration order.
pub fn required_methods(m: &Machine) -> Vec<Method> {
    let guards = m.guards.iter().map(Method::guard);
    let actions = m.actions.iter().map(Method::action);
    guards.chain(actions).collect()
}

/// Every required method with its doc, guards first.
fn methods_with_docs(m: &Machine) -> impl Iterator<Item = (Method, &str)> {
    let guards = m
        .guards
        .iter()
        .map(|g| (Method::guard(g), g.decl.doc.as_str()));
    let actions = m
        .actions
        .iter()
        .map(|a| (Method::action(a), a.decl.doc.as_str()));
    guards.chain(actions)
}

/// A skeleton `impl Handlers for Context { ... }` with every method and a `todo!()` body.
///
/// `Context` is a placeholder to rename.
pub fn skeleton(m: &Machine) -> String {
    let methods = methods_with_docs(m).map(|(method, doc)| {
        let docs = doc.lines().map(|l| format!(" {}", l.trim_end()));
        let sig = rust(&method.signature_with("_"));
        quote! {
            #( #[doc = #docs] )*
            #sig {
                todo!()
            }
        }
    });
    let tokens = quote! {
        impl Handlers for Context {
            #( #methods )*
        }
    };
    let body = match syn::parse2::<syn::File>(tokens) {
        Ok(file) => prettyplease::unparse(&file),
        Err(e) => format!("// internal error (a bug in mcp-codegen): {e}\n"),
    };
    format!(
        "// Skeleton of the `{}` machine's handlers, generated by mcp-codegen: rename `Context`.\n{body}",
        m.name
    )
}

/// Why an existing implementation could not be compared with the spec.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ImplError {
    /// The file is not Rust that `syn` parses.
    #[error("cannot parse the file as Rust: {0}")]
    Parse(String),
    /// The file has no `impl ... Handlers for ...` block.
    #[error("no `impl Handlers for ...` block in the file")]
    NoImpl,
}

/// The difference between the methods the spec requires and those of an `impl Handlers`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ImplDiff {
    /// Methods the spec requires that the impl lacks, in spec order.
    pub missing: Vec<Method>,
    /// Methods the impl has with another number of arguments or another kind of return than
    /// the spec requires, in spec order (the spec's signature).
    pub mismatched: Vec<Method>,
    /// Methods of the impl that the spec does not declare, sorted by name.
    pub extra: Vec<String>,
}

/// The shape of a method as written: its argument count after the receiver and what its
/// return type is called (`bool`, `Option`, or `""` for none).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Shape {
    args: usize,
    output: String,
}

impl Shape {
    fn of_sig(sig: &syn::Signature) -> Self {
        let output = match &sig.output {
            syn::ReturnType::Default => String::new(),
            syn::ReturnType::Type(_, ty) => match &**ty {
                syn::Type::Path(p) => p
                    .path
                    .segments
                    .last()
                    .map_or_else(String::new, |s| s.ident.to_string()),
                other => quote!(#other).to_string(),
            },
        };
        Shape {
            args: sig
                .inputs
                .iter()
                .filter(|i| matches!(i, syn::FnArg::Typed(_)))
                .count(),
            output,
        }
    }

    fn of_method(m: &Method) -> Self {
        let output = m.output.as_deref().unwrap_or_default();
        Shape {
            args: m.params.len(),
            output: output.split('<').next().unwrap_or_default().to_owned(),
        }
    }
}

fn collect_impl_methods(
    items: &[syn::Item],
    found: &mut bool,
    shapes: &mut BTreeMap<String, Shape>,
) {
    for item in items {
        match item {
            syn::Item::Impl(imp) => {
                let is_handlers = imp.trait_.as_ref().is_some_and(|(path, _)| {
                    path.segments.last().is_some_and(|s| s.ident == "Handlers")
                });
                if is_handlers {
                    *found = true;
                    for it in &imp.items {
                        if let syn::ImplItem::Fn(f) = it {
                            shapes.insert(f.sig.ident.to_string(), Shape::of_sig(&f.sig));
                        }
                    }
                }
            }
            syn::Item::Mod(m) => {
                if let Some((_, items)) = &m.content {
                    collect_impl_methods(items, found, shapes);
                }
            }
            _ => {}
        }
    }
}

/// Compares the `impl ... Handlers for ...` blocks of `rust_source` (all of them, in inline
/// modules too) with the methods `m` requires.
pub fn compare_impl(m: &Machine, rust_source: &str) -> Result<ImplDiff, ImplError> {
    let file = syn::parse_file(rust_source).map_err(|e| ImplError::Parse(e.to_string()))?;
    let mut found = false;
    let mut shapes = BTreeMap::new();
    collect_impl_methods(&file.items, &mut found, &mut shapes);
    if !found {
        return Err(ImplError::NoImpl);
    }
    let required = required_methods(m);
    let required_names: BTreeSet<&str> = required.iter().map(|r| r.name.as_str()).collect();
    let mut diff = ImplDiff::default();
    for method in &required {
        match shapes.get(&method.name) {
            None => diff.missing.push(method.clone()),
            Some(shape) if *shape != Shape::of_method(method) => {
                diff.mismatched.push(method.clone());
            }
            Some(_) => {}
        }
    }
    diff.extra = shapes
        .keys()
        .filter(|n| !required_names.contains(n.as_str()))
        .cloned()
        .collect();
    Ok(diff)
}
