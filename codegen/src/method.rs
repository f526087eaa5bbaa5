//! The signature of each method a spec requires of its handlers: one per guard and action,
//! shared by the generated traits ([`crate::emit_rust`]) and by the skeleton and comparison of
//! [`crate::handlers`]. Holds no spec logic: the types come from the lowered [`Machine`].

use proc_macro2::TokenStream;
use quote::quote;

use crate::ir::{Action, Guard, Machine, Use};

/// Rust text as tokens; text that is not Rust becomes a `compile_error!` naming it.
pub(crate) fn rust(text: &str) -> TokenStream {
    text.parse::<TokenStream>().unwrap_or_else(|_| {
        let message = format!("mcp-codegen: `{text}` is not Rust");
        quote!(::core::compile_error!(#message))
    })
}

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
    pub(crate) fn signature_with(&self, prefix: &str) -> String {
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
