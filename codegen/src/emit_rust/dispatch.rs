//! `dispatch`: one arm per (state, event) cell, trying the cell's rows in file order.
//!
//! The event is matched by value: its payload is bound as `p` when a guard or action of the
//! cell uses it. A guard gets `&p`; a guard that yields binds its witness as `w` when an action
//! of its row takes it. Actions get `p`/`&p` and `w`/`&w` as declared; the validator made sure a
//! moved value is not used again in its row, and each guarded row returns, so the code has no
//! unused binding and no double move. Each arm and each row carries a comment with the row's
//! spec line.

use proc_macro2::TokenStream;
use quote::quote;

use super::{Comments, Idents, maybe_unused, u16_lit};
use crate::ir::{Cell, Machine, Row, Use};

/// `dispatch`.
pub(super) fn dispatch(
    m: &Machine,
    ids: &Idents,
    path: &str,
    comments: &mut Comments,
) -> TokenStream {
    let calls = m
        .rows
        .iter()
        .any(|r| r.guard.is_some() || !r.actions.is_empty());
    let h = maybe_unused("h", calls);
    let arms: Vec<TokenStream> = m
        .cells
        .iter()
        .map(|cell| arm(m, ids, cell, path, comments))
        .collect();
    quote! {
        /// Handles one event: tries the rows of the (state, event) cell in file order, runs the
        /// actions of the first row whose guard holds (or that has none), handing them the
        /// event's payload and the guard's witness, and says which row fired and the state after
        /// it.
        ///
        /// Exhaustive over every (state, event) pair, with no wildcard arm: a cell missing
        /// from the spec is a compile error here too. It does not change any state itself; the
        /// caller stores `Fired::to`.
        #[deny(unreachable_patterns)]
        pub fn dispatch<H: Handlers + ?Sized>(#h: &mut H, state: State, event: Event) -> Fired {
            match (state, event) {
                #( #arms )*
            }
        }
    }
}

/// Where a row is written, for comments: `spec/calls.toml:329 row 23`.
fn row_comment(_path: &str, r: &Row) -> String {
    format!("{}:{} row {}", r.file, r.line, r.index)
}

/// The rows of an arm, for its comment: `spec.toml:12 row 3, :20 row 5`.
fn rows_comment(path: &str, rows: &[&Row]) -> String {
    let mut text = String::new();
    for (i, r) in rows.iter().enumerate() {
        if i == 0 {
            text.push_str(&row_comment(path, r));
        } else if r.file == rows[0].file {
            text.push_str(&format!(", :{} row {}", r.line, r.index));
        } else {
            text.push_str(&format!(", {}", row_comment(path, r)));
        }
    }
    text
}

/// The rows `dispatch` can reach in a cell: up to the first unguarded one.
fn live_rows<'a>(m: &'a Machine, cell: &Cell) -> Vec<&'a Row> {
    let end = cell
        .rows
        .iter()
        .position(|&r| m.rows[r].guard.is_none())
        .map_or(cell.rows.len(), |p| p + 1);
    cell.rows[..end].iter().map(|&r| &m.rows[r]).collect()
}

/// Whether a row's guard or actions use the event's payload (in a cell whose event has one).
fn uses_payload(m: &Machine, r: &Row) -> bool {
    r.guard.is_some_and(|g| m.guards[g].takes.is_some())
        || (!r.ignore && r.actions.iter().any(|&a| m.actions[a].payload.is_some()))
}

/// Whether a row's actions take the witness.
fn uses_witness(m: &Machine, r: &Row) -> bool {
    !r.ignore && r.actions.iter().any(|&a| m.actions[a].witness.is_some())
}

/// The arm of one cell, with a comment naming its rows.
fn arm(m: &Machine, ids: &Idents, cell: &Cell, path: &str, comments: &mut Comments) -> TokenStream {
    let rows = live_rows(m, cell);
    let s = &ids.st[cell.state];
    let e = &ids.ev[cell.event];
    let pattern = match (
        &m.events[cell.event].payload,
        rows.iter().any(|r| uses_payload(m, r)),
    ) {
        (Some(_), true) => quote!(Event::#e(p)),
        (Some(_), false) => quote!(Event::#e(_)),
        (None, _) => quote!(Event::#e),
    };
    let comment = comments.attribute(rows_comment(path, &rows));
    let fired = |r: &Row| {
        let (row, to) = (u16_lit(r.index), &ids.st[r.target(cell.state)]);
        quote!(Fired { row: #row, to: State::#to })
    };
    let Some((last, guarded)) = rows.split_last() else {
        return quote!(#comment (State::#s, #pattern) => Fired { row: u16::MAX, to: state },);
    };
    if guarded.is_empty() && (last.ignore || last.actions.is_empty()) {
        let tail = fired(last);
        return quote!(#comment (State::#s, #pattern) => #tail,);
    }
    let mut branches = Vec::new();
    for r in guarded {
        let mark = comments.statement(row_comment(path, r));
        let branch = guarded_row(m, ids, r, fired(r));
        branches.push(quote!(#mark #branch));
    }
    let last_mark = (!guarded.is_empty()).then(|| comments.statement(row_comment(path, last)));
    let last_calls = action_calls(m, ids, last);
    let tail = fired(last);
    quote! {
        #comment
        (State::#s, #pattern) => {
            #( #branches )*
            #last_mark
            #( #last_calls )*
            #tail
        }
    }
}

/// `if <guard> { <actions> return <fired>; }` for a guarded row.
fn guarded_row(m: &Machine, ids: &Idents, r: &Row, fired: TokenStream) -> TokenStream {
    let Some(g) = r.guard else {
        return TokenStream::new();
    };
    let guard = &m.guards[g];
    let f = &ids.gd_fn[g];
    let arg = guard.takes.as_ref().map(|_| quote!(&p));
    let condition = match (&guard.yields, uses_witness(m, r)) {
        (Some(_), true) => quote!(let Some(w) = h.#f(#arg)),
        (Some(_), false) => quote!(h.#f(#arg).is_some()),
        (None, _) => quote!(h.#f(#arg)),
    };
    let calls = action_calls(m, ids, r);
    quote! {
        if #condition {
            #( #calls )*
            return #fired;
        }
    }
}

/// The calls of a row's actions (none for an ignore row), each with what it declares.
fn action_calls(m: &Machine, ids: &Idents, r: &Row) -> Vec<TokenStream> {
    if r.ignore {
        return Vec::new();
    }
    r.actions
        .iter()
        .map(|&a| {
            let (action, f) = (&m.actions[a], &ids.ac_fn[a]);
            let p = action.payload.map(|u| pass(u, quote!(p)));
            let w = action.witness.map(|u| pass(u, quote!(w)));
            let args = p.into_iter().chain(w);
            quote!(h.#f( #( #args ),* );)
        })
        .collect()
}

/// `&x` or `x`.
fn pass(u: Use, x: TokenStream) -> TokenStream {
    match u {
        Use::Ref => quote!(&#x),
        Use::Move => x,
    }
}
