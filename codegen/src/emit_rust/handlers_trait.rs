//! The `Handlers` trait: one required method per guard and action, with the signatures of
//! [`crate::handlers::Method`].

use proc_macro2::TokenStream;
use quote::quote;

use super::doc;
use crate::handlers::Method;
use crate::ir::Machine;

/// `Handlers`.
pub(super) fn handlers(m: &Machine) -> TokenStream {
    let guards = m.guards.iter().map(|g| {
        let (d, sig) = (doc(&g.decl.doc), Method::guard(g).tokens());
        quote!(#d #sig;)
    });
    let actions = m.actions.iter().map(|a| {
        let (d, sig) = (doc(&a.decl.doc), Method::action(a).tokens());
        quote!(#d #sig;)
    });
    let handlers_doc = doc(&format!(
        "The guards and actions of the `{}` machine: one required method each, named as in\n\
         the spec, without default bodies.\n\n\
         Guards take `&self` and, when the row's event carries a payload, `&` to it; they say\n\
         whether a row fires (`bool`), or return what they found (`Option<W>`, the witness)\n\
         when the spec says `yields`. Actions take `&mut self` and, as the spec declares, the\n\
         payload and the witness, by reference or by value (`move`: the last use in the row).\n\
         `dispatch` calls them in row order. A guard or action added to the spec does not\n\
         compile until it is implemented. Not a state holder: the current `State` is the\n\
         caller's.",
        m.name
    ));
    quote! {
        #handlers_doc
        pub trait Handlers {
            #( #guards )*

            #( #actions )*
        }
    }
}
