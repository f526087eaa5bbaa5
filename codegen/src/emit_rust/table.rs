//! The row table and its companions: `Row`, `ROWS`, `INITIAL_ACTIONS`, `MACHINE_NAME`, `Fired`,
//! `initial_actions`, `cell_rows` and `MERMAID`.

use proc_macro2::{Literal, TokenStream};
use quote::quote;

use super::{Idents, doc, maybe_unused, raw_string, u16_lit, usize_lit};
use crate::ir::Machine;

/// The `Row` struct (its field names are used by the model checker).
pub(super) fn row_struct() -> TokenStream {
    quote! {
        /// One row of the table as written (a row may cover several cells).
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub struct Row {
            /// The row's position in the spec (0-based); `Fired::row` and `cell_rows` use it.
            pub index: u16,
            /// The spec file the row is written in, as the generator was given it.
            pub file: &'static str,
            /// The line of the row's `[[row]]` header in its file (1-based).
            pub line: u32,
            /// The states the row starts from (every state for `from = "*"`).
            pub from: &'static [State],
            /// The event kinds the row handles.
            pub on: &'static [EventKind],
            /// The guard that must hold for the row to fire, if any.
            pub guard: Option<GuardId>,
            /// The actions the row runs, in order (none for an ignore row).
            pub actions: &'static [ActionId],
            /// The state the row goes to; `None` stays in the from-state.
            pub to: Option<State>,
            /// Whether the row drops the event (`ignore = true`): no action, no state change.
            pub ignore: bool,
            /// Whether the row is `impossible = true`: dropped like an ignore row, and proven by
            /// the model checker never to fire (a transport or timer broke its contract if it does).
            pub impossible: bool,
        }
    }
}

/// `ROWS`: every row in file order.
pub(super) fn rows(m: &Machine, ids: &Idents) -> TokenStream {
    let rows = m.rows.iter().map(|r| {
        let index = u16_lit(r.index);
        let line = Literal::u32_unsuffixed(r.line);
        let file = r.file.as_str();
        let from = r.from.iter().map(|&s| &ids.st[s]);
        let on = r.on.iter().map(|&e| &ids.ev[e]);
        let guard = match r.guard {
            Some(g) => {
                let g = &ids.gd[g];
                quote!(Some(GuardId::#g))
            }
            None => quote!(None),
        };
        let actions = r.actions.iter().map(|&a| &ids.ac[a]);
        let to = match r.to {
            Some(t) => {
                let t = &ids.st[t];
                quote!(Some(State::#t))
            }
            None => quote!(None),
        };
        let (ignore, impossible) = (r.ignore, r.impossible);
        quote! {
            Row {
                index: #index,
                file: #file,
                line: #line,
                from: &[ #( State::#from ),* ],
                on: &[ #( EventKind::#on ),* ],
                guard: #guard,
                actions: &[ #( ActionId::#actions ),* ],
                to: #to,
                ignore: #ignore,
                impossible: #impossible,
            }
        }
    });
    let n_rows = usize_lit(m.rows.len());
    quote! {
        /// The rows of the spec in file order (`ROWS[i].index == i`).
        pub const ROWS: [Row; #n_rows] = [ #( #rows ),* ];
    }
}

/// `INITIAL_ACTIONS`, `MACHINE_NAME` and `Fired`.
pub(super) fn constants(m: &Machine, ids: &Idents) -> TokenStream {
    let init_actions = m.initial_actions.iter().map(|&a| &ids.ac[a]);
    let n_init_actions = usize_lit(m.initial_actions.len());
    let machine = &m.name;
    let machine_doc = doc(&format!("The machine's name in the spec (`{machine}`)."));
    quote! {
        /// The actions run once when the machine is constructed, in order (`initial_actions`
        /// runs them).
        pub const INITIAL_ACTIONS: [ActionId; #n_init_actions] = [ #( ActionId::#init_actions ),* ];

        #machine_doc
        pub const MACHINE_NAME: &str = #machine;

        /// The outcome of one dispatch: which row fired and the state after it.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub struct Fired {
            /// The index of the row that fired (into `ROWS`).
            pub row: u16,
            /// The state after the row (the same state for rows without `to`).
            pub to: State,
        }
    }
}

/// `initial_actions`: calls the `INITIAL_ACTIONS` (which take no payload and no witness).
pub(super) fn initial_actions_fn(m: &Machine, ids: &Idents) -> TokenStream {
    let calls = m.initial_actions.iter().map(|&a| &ids.ac_fn[a]);
    let h = maybe_unused("h", !m.initial_actions.is_empty());
    quote! {
        /// Runs the machine's initial actions (`INITIAL_ACTIONS`), in order: once, when the
        /// machine is constructed.
        pub fn initial_actions<H: Handlers + ?Sized>(#h: &mut H) {
            #( #h.#calls(); )*
        }
    }
}

/// `cell_rows`: the rows of each cell in the order `dispatch` tries them.
pub(super) fn cell_rows(m: &Machine, ids: &Idents) -> TokenStream {
    let arms = m.cells.iter().map(|cell| {
        let (s, e) = (&ids.st[cell.state], &ids.ev[cell.event]);
        let rows = cell.rows.iter().map(|&r| u16_lit(r));
        quote! { (State::#s, EventKind::#e) => &[ #( #rows ),* ], }
    });
    quote! {
        /// The row indexes of one cell in the order `dispatch` tries them (all guarded but the
        /// last).
        #[deny(unreachable_patterns)]
        pub const fn cell_rows(state: State, event: EventKind) -> &'static [u16] {
            match (state, event) {
                #( #arms )*
            }
        }
    }
}

/// `MERMAID`.
pub(super) fn mermaid(mermaid: &str) -> TokenStream {
    let text = raw_string(mermaid);
    quote! {
        /// The Mermaid `stateDiagram-v2` of the table (rows that stay in their state are not
        /// drawn).
        pub const MERMAID: &str = #text;
    }
}
