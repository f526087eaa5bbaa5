//! The table interpreter (a second generated file, for the model checker): `Witness`,
//! `eval_guard`, `run_action` and `interpret`, the table-driven twin of `dispatch` that runs
//! mutated copies of `ROWS`. No wildcard arm here either: every event that does not carry what a
//! guard or action takes is listed.

use proc_macro2::{Ident, TokenStream};
use quote::quote;

use super::{Idents, ident, maybe_unused, rust};
use crate::ir::{Action, Guard, Machine, Use};
use crate::rust_type;

/// Everything in the interpreter file.
pub(super) fn interpreter(m: &Machine, ids: &Idents) -> TokenStream {
    let witnesses = Witnesses::of(m);
    let items = [
        witnesses.enum_tokens(),
        eval_guard(m, ids, &witnesses),
        run_action(m, ids, &witnesses),
        interpret(),
    ];
    quote!( #( #items )* )
}

/// The distinct witness types, in the order guards declare them, with their variant names.
struct Witnesses {
    /// (type, variant).
    types: Vec<(String, Ident)>,
}

impl Witnesses {
    fn of(m: &Machine) -> Self {
        let mut types: Vec<&str> = Vec::new();
        for t in m.guards.iter().filter_map(|g| g.yields.as_deref()) {
            if !types.contains(&t) {
                types.push(t);
            }
        }
        let names = variant_names(&types);
        Witnesses {
            types: types
                .iter()
                .zip(names)
                .map(|(t, n)| ((*t).to_owned(), ident(&n)))
                .collect(),
        }
    }

    /// The variant holding type `t`.
    fn variant(&self, t: &str) -> Option<&Ident> {
        self.types.iter().find(|(ty, _)| ty == t).map(|(_, v)| v)
    }

    /// `Witness`.
    fn enum_tokens(&self) -> TokenStream {
        let variants = self.types.iter().map(|(t, v)| {
            let d = format!(" What a guard yielding `{t}` found.");
            let t = rust(t);
            quote!(#[doc = #d] #v(#t),)
        });
        quote! {
            /// What a guard found, for the interpreter: `Held` for a `bool` guard that holds,
            /// else the value a `yields` guard returned (one variant per yielded type).
            #[derive(Debug)]
            pub enum Witness {
                /// A `bool` guard held.
                Held,
                #( #variants )*
            }
        }
    }
}

/// Variant names for distinct types: the short name (`RequestId`), the full path's name when
/// two short names collide (`IoRequestId`), a number when even those do; never `Held`.
fn variant_names(types: &[&str]) -> Vec<String> {
    let parsed: Vec<Option<rust_type::TypePath>> =
        types.iter().map(|t| rust_type::parse(t).ok()).collect();
    let short = |p: &Option<rust_type::TypePath>, t: &str| {
        p.as_ref()
            .map_or_else(|| crate::ir::camel_case(t), |p| p.short_name())
    };
    let shorts: Vec<String> = parsed.iter().zip(types).map(|(p, t)| short(p, t)).collect();
    let mut names: Vec<String> = Vec::new();
    for (i, (p, t)) in parsed.iter().zip(types).enumerate() {
        let clash = shorts.iter().filter(|s| **s == shorts[i]).count() > 1;
        let mut name = match (clash, p) {
            (true, Some(p)) => p.long_name(),
            _ => short(p, t),
        };
        if name == "Held" || name.is_empty() {
            name = format!("W{name}");
        }
        let base = name.clone();
        let mut n = 2;
        while names.contains(&name) {
            name = format!("{base}{n}");
            n += 1;
        }
        names.push(name);
    }
    names
}

/// The `Event` variants that carry payload type `t`.
fn carrying<'a>(m: &Machine, ids: &'a Idents, t: &str) -> Vec<&'a Ident> {
    m.events
        .iter()
        .zip(&ids.ev)
        .filter(|(e, _)| e.payload.as_deref() == Some(t))
        .map(|(_, v)| v)
        .collect()
}

/// The `Event` patterns of the events that do not carry payload type `t` (binding nothing).
fn not_carrying(m: &Machine, ids: &Idents, t: &str) -> Vec<TokenStream> {
    m.events
        .iter()
        .zip(&ids.ev)
        .filter_map(|(e, v)| match e.payload.as_deref() {
            Some(p) if p == t => None,
            Some(_) => Some(quote!(Event::#v(_))),
            None => Some(quote!(Event::#v)),
        })
        .collect()
}

/// `eval_guard`.
fn eval_guard(m: &Machine, ids: &Idents, w: &Witnesses) -> TokenStream {
    let arms = m
        .guards
        .iter()
        .enumerate()
        .map(|(g, guard)| guard_arm(m, ids, w, g, guard));
    let h = maybe_unused("h", !m.guards.is_empty());
    let event = maybe_unused("event", m.guards.iter().any(|g| g.takes.is_some()));
    quote! {
        /// Evaluates one guard by id on an event: what it found (`Witness::Held` for a `bool`
        /// guard that holds), or `None` when it does not hold or the event does not carry the
        /// payload the guard takes (only a mutated table gets there).
        #[deny(unreachable_patterns)]
        pub fn eval_guard<H: Handlers + ?Sized>(#h: &H, guard: GuardId, #event: &Event) -> Option<Witness> {
            match guard {
                #( #arms )*
            }
        }
    }
}

/// The arm of one guard in `eval_guard`.
fn guard_arm(m: &Machine, ids: &Idents, w: &Witnesses, g: usize, guard: &Guard) -> TokenStream {
    let (id, f) = (&ids.gd[g], &ids.gd_fn[g]);
    let found = |call: TokenStream| match guard.yields.as_deref().and_then(|t| w.variant(t)) {
        Some(v) => quote!(#call.map(Witness::#v)),
        None => quote!(#call.then_some(Witness::Held)),
    };
    let Some(t) = &guard.takes else {
        let call = found(quote!(h.#f()));
        return quote!(GuardId::#id => #call,);
    };
    let with = carrying(m, ids, t);
    let without = not_carrying(m, ids, t);
    let call = found(quote!(h.#f(p)));
    let other = (!without.is_empty()).then(|| quote!( #( #without )|* => None, ));
    quote! {
        GuardId::#id => match event {
            #( Event::#with(p) )|* => #call,
            #other
        },
    }
}

/// `run_action`.
fn run_action(m: &Machine, ids: &Idents, w: &Witnesses) -> TokenStream {
    let arms = m
        .actions
        .iter()
        .enumerate()
        .map(|(a, action)| action_arm(m, ids, w, a, action));
    let h = maybe_unused("h", !m.actions.is_empty());
    let event = maybe_unused("event", m.actions.iter().any(|a| a.payload.is_some()));
    let witness = maybe_unused("witness", m.actions.iter().any(|a| a.witness.is_some()));
    quote! {
        /// Runs one action by id with the payload and witness it takes: borrowed for a `ref`
        /// use, taken out of the `Option` for a `move`. Returns false, running nothing and
        /// taking nothing, when one is missing or of another type (only a mutated table gets
        /// there).
        #[deny(unreachable_patterns)]
        pub fn run_action<H: Handlers + ?Sized>(
            #h: &mut H,
            action: ActionId,
            #event: &mut Option<Event>,
            #witness: &mut Option<Witness>,
        ) -> bool {
            match action {
                #( #arms )*
            }
        }
    }
}

/// The arm of one action in `run_action`: check what it needs (when something is moved, so that
/// a failed match takes nothing), bind it, call.
fn action_arm(m: &Machine, ids: &Idents, w: &Witnesses, a: usize, action: &Action) -> TokenStream {
    let (id, f) = (&ids.ac[a], &ids.ac_fn[a]);
    let mut checks = Vec::new();
    let mut binds = Vec::new();
    let mut args = Vec::new();
    if let (Some(u), Some(t)) = (action.payload, action.payload_type.as_deref()) {
        let variants = carrying(m, ids, t);
        checks.push(quote!(matches!(event, Some( #( Event::#variants(_) )|* ))));
        binds.push(bind(quote!( #( Event::#variants(p) )|* ), quote!(event), u));
        args.push(quote!(p));
    }
    if let (Some(u), Some(v)) = (
        action.witness,
        action.witness_type.as_deref().and_then(|t| w.variant(t)),
    ) {
        checks.push(quote!(matches!(witness, Some(Witness::#v(_)))));
        binds.push(bind(quote!(Witness::#v(w)), quote!(witness), u));
        args.push(quote!(w));
    }
    let moves = action.payload == Some(Use::Move) || action.witness == Some(Use::Move);
    let check = match checks.as_slice() {
        [] => None,
        _ if !moves => None,
        [one] => Some(quote!(if !#one { return false; })),
        many => Some(quote!(if !( #( #many )&&* ) { return false; })),
    };
    quote! {
        ActionId::#id => {
            #check
            #( #binds )*
            h.#f( #( #args ),* );
            true
        }
    }
}

/// `let Some(<pattern>) = <from>.as_ref() else { return false; };` (`.take()` for a move).
fn bind(pattern: TokenStream, from: TokenStream, u: Use) -> TokenStream {
    let get = match u {
        Use::Ref => quote!(as_ref),
        Use::Move => quote!(take),
    };
    quote! {
        let Some( #pattern ) = #from.#get() else {
            return false;
        };
    }
}

/// `interpret`.
fn interpret() -> TokenStream {
    quote! {
        /// Table-driven dispatch over a (possibly mutated) copy of the rows: the rows covering
        /// (state, event kind) in slice order; the first whose guard holds (or that has none)
        /// runs its actions (unless it is an ignore row) and fires. A row whose index is in
        /// `negated` has its guard negated (a mutant): it fires when the guard does not hold,
        /// without a witness, so actions that need one do nothing. No row fires: `u16::MAX`,
        /// and the state stays.
        pub fn interpret<H: Handlers + ?Sized>(
            h: &mut H,
            rows: &[Row],
            negated: &[u16],
            state: State,
            event: Event,
        ) -> Fired {
            let kind = event.kind();
            let mut event = Some(event);
            for row in rows.iter().filter(|r| r.from.contains(&state) && r.on.contains(&kind)) {
                let mut witness = match row.guard {
                    None => None,
                    Some(guard) => {
                        let found = event.as_ref().and_then(|e| eval_guard(h, guard, e));
                        match (found, negated.contains(&row.index)) {
                            (Some(found), false) => Some(found),
                            (None, true) => None,
                            (Some(_), true) | (None, false) => continue,
                        }
                    }
                };
                if !row.ignore {
                    for &action in row.actions {
                        run_action(h, action, &mut event, &mut witness);
                    }
                }
                return Fired { row: row.index, to: row.to.unwrap_or(state) };
            }
            Fired { row: u16::MAX, to: state }
        }
    }
}
