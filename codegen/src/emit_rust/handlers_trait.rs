//! The handler traits: one required method per guard and action, with the signatures of
//! [`crate::method::Method`]. A one-file spec gets one trait, `Handlers`; a spec split by concern
//! gets one trait per concern (`CallsHandlers` for `spec/calls.toml`) holding the guards and
//! actions that file declares, and `Handlers`, implemented for every type that implements them
//! all.

use proc_macro2::TokenStream;
use quote::quote;

use super::{doc, ident};
use crate::ir::Machine;
use crate::method::Method;

/// The methods of the guards and actions of `concern` (`None`: all of a one-file spec).
fn methods(m: &Machine, concern: Option<usize>) -> (Vec<TokenStream>, Vec<TokenStream>) {
    let guards = m
        .guards
        .iter()
        .filter(|g| concern.is_none() || g.concern == concern)
        .map(|g| {
            let (d, sig) = (doc(&g.decl.doc), Method::guard(g).tokens());
            quote!(#d #sig;)
        })
        .collect();
    let actions = m
        .actions
        .iter()
        .filter(|a| concern.is_none() || a.concern == concern)
        .map(|a| {
            let (d, sig) = (doc(&a.decl.doc), Method::action(a).tokens());
            quote!(#d #sig;)
        })
        .collect();
    (guards, actions)
}

/// The name of a concern's trait: `CallsHandlers` for `calls`.
pub(crate) fn concern_trait(m: &Machine, concern: usize) -> String {
    format!("{}Handlers", m.concerns[concern].decl.camel)
}

/// `Handlers`, and the concerns' traits of a split spec.
pub(super) fn handlers(m: &Machine) -> TokenStream {
    let contract = "Guards take `&self` and, when the row's event carries a payload, `&` to it; \
         they say\nwhether a row fires (`bool`), or return what they found (`Option<W>`, the \
         witness)\nwhen the spec says `yields`. Actions take `&mut self` and, as the spec \
         declares, the\npayload and the witness, by reference or by value (`move`: the last \
         use in the row).\n`dispatch` calls them in row order. A guard or action added to the \
         spec does not\ncompile until it is implemented. Not a state holder: the current \
         `State` is the\ncaller's.";
    if m.concerns.is_empty() {
        let (guards, actions) = methods(m, None);
        let handlers_doc = doc(&format!(
            "The guards and actions of the `{}` machine: one required method each, named as in\n\
             the spec, without default bodies.\n\n{contract}",
            m.name
        ));
        return quote! {
            #handlers_doc
            pub trait Handlers {
                #( #guards )*

                #( #actions )*
            }
        };
    }
    let traits = (0..m.concerns.len()).map(|c| {
        let (guards, actions) = methods(m, Some(c));
        let name = ident(&concern_trait(m, c));
        let concern = &m.concerns[c];
        let d = doc(&format!(
            "The guards and actions declared in `{}` (the `{}` concern): one required method\n\
             each, named as in the spec, without default bodies.\n\n{}\n\n{contract}",
            concern.file, concern.decl.name, concern.decl.doc
        ));
        quote! {
            #d
            pub trait #name {
                #( #guards )*

                #( #actions )*
            }
        }
    });
    let names: Vec<_> = (0..m.concerns.len())
        .map(|c| ident(&concern_trait(m, c)))
        .collect();
    let handlers_doc = doc(&format!(
        "Every guard and action of the `{}` machine: the traits of its concerns together.\n\
         Implemented for every type that implements them all; `dispatch` takes it.",
        m.name
    ));
    quote! {
        #( #traits )*

        #handlers_doc
        pub trait Handlers: #( #names )+* {}

        impl<T: #( #names )+* + ?Sized> Handlers for T {}
    }
}
