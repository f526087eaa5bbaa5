//! Emits the Rust of a validated machine: enums, the row table, the `Handlers` trait and the
//! exhaustive `dispatch`.
//!
//! Built with `quote`, checked with `syn::parse2`, printed with `prettyplease` (one `#[doc]` per
//! line, so docs print as `///`). The output is meant to be `include!`d inside a module, so it has
//! no inner attribute and no inner doc comment, only a leading `//` line. It never contains a `_`
//! match arm: every match is over all (state, event) pairs or all variants.

use proc_macro2::{Ident, Literal, Span, TokenStream};
use quote::quote;

use crate::ir::{Machine, Scope, Source};

fn ident(name: &str) -> Ident {
    Ident::new(name, Span::call_site())
}

fn u16_lit(n: usize) -> Literal {
    Literal::u16_unsuffixed(u16::try_from(n).unwrap_or(u16::MAX))
}

fn u32_lit(n: u32) -> Literal {
    Literal::u32_unsuffixed(n)
}

fn usize_lit(n: usize) -> Literal {
    Literal::usize_unsuffixed(n)
}

/// One `#[doc]` attribute per line (so prettyplease prints `///` lines); never empty.
fn doc(text: &str) -> TokenStream {
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

fn list(names: impl IntoIterator<Item = String>) -> String {
    names
        .into_iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A raw string literal holding `text` verbatim (newlines kept, so the output stays readable).
fn raw_string(text: &str) -> Literal {
    let mut hashes = String::from("#");
    while text.contains(&format!("\"{hashes}")) {
        hashes.push('#');
    }
    let raw = format!("r{hashes}\"{text}\"{hashes}");
    raw.parse::<Literal>()
        .unwrap_or_else(|_| Literal::string(text))
}

/// The generated Rust for `m`, whose Mermaid diagram is `mermaid`; `path` names the spec in the
/// header line. Fails only on a bug of the generator (output that does not parse).
pub fn emit(m: &Machine, path: &str, mermaid: &str) -> Result<String, String> {
    let tokens = tokens(m, mermaid);
    let file = syn::parse2::<syn::File>(tokens).map_err(|e| e.to_string())?;
    Ok(format!(
        "// Generated from {path} by mcp-codegen; do not edit (change the spec instead).\n\n{}",
        space_items(&prettyplease::unparse(&file))
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
        let opens = {
            let t = line.trim_start();
            t.starts_with("///") || t.starts_with("#[")
        };
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

fn tokens(m: &Machine, mermaid: &str) -> TokenStream {
    let machine = &m.name;

    // ---- State -------------------------------------------------------------------------------
    let st: Vec<Ident> = m.states.iter().map(|s| ident(&s.decl.camel)).collect();
    let st_doc: Vec<TokenStream> = m.states.iter().map(|s| doc(&s.decl.doc)).collect();
    let st_name: Vec<&str> = m.states.iter().map(|s| s.decl.name.as_str()).collect();
    let n_states = usize_lit(m.states.len());
    let initial = &st[m.initial];
    let terminals: Vec<&Ident> = m
        .states
        .iter()
        .zip(&st)
        .filter(|(s, _)| s.terminal)
        .map(|(_, i)| i)
        .collect();
    let is_terminal_body = if terminals.is_empty() {
        quote! { let _ = self; false }
    } else {
        quote! { matches!(self, #( State::#terminals )|* ) }
    };
    let terminal_names = list(
        m.states
            .iter()
            .filter(|s| s.terminal)
            .map(|s| s.decl.name.clone()),
    );
    let state_doc = doc(&format!(
        "The states of the `{machine}` machine, in the order the spec declares them.\n\n\
         The machine starts in `{}`{}.\n\
         What each (state, event) cell does is in `ROWS`, run by `dispatch`; `MERMAID` draws it.",
        m.states[m.initial].decl.name,
        if terminal_names.is_empty() {
            String::new()
        } else {
            format!("; terminal: {terminal_names}")
        }
    ));
    let initial_doc = doc(&format!(
        "The state the machine starts in (`{}`).",
        m.states[m.initial].decl.name
    ));

    // ---- EventKind ---------------------------------------------------------------------------
    let ev: Vec<Ident> = m.events.iter().map(|e| ident(&e.decl.camel)).collect();
    let ev_doc: Vec<TokenStream> = m
        .events
        .iter()
        .map(|e| match e.timer {
            Some(_) => doc(&format!(
                "The `{}` timer fired.\n\n{}",
                e.decl.name, e.decl.doc
            )),
            None => doc(&e.decl.doc),
        })
        .collect();
    let ev_name: Vec<&str> = m.events.iter().map(|e| e.decl.name.as_str()).collect();
    let ev_source: Vec<TokenStream> = m
        .events
        .iter()
        .map(|e| match e.source {
            Source::Transport => quote!(EventSource::Transport),
            Source::Caller => quote!(EventSource::Caller),
            Source::Timer => quote!(EventSource::Timer),
        })
        .collect();
    let n_events = usize_lit(m.events.len());
    let event_doc = doc(&format!(
        "The kinds of event of the `{machine}` machine: the spec's events in declaration order,\n\
         then one per timer.\n\n\
         Fieldless: the payload stays in the caller's event type (`Handlers::Event`);\n\
         this is only what `dispatch` matches on."
    ));

    // ---- TimerKind ---------------------------------------------------------------------------
    let tm: Vec<Ident> = m.timers.iter().map(|t| ident(&t.decl.camel)).collect();
    let tm_doc: Vec<TokenStream> = m
        .timers
        .iter()
        .map(|t| {
            let scope = match t.scope {
                Scope::Keyed => format!(
                    "Keyed by {}; may be armed in every state.",
                    t.key.as_deref().unwrap_or("a key")
                ),
                Scope::State => format!(
                    "State timer: cancelled on leaving {}.",
                    list(t.states.iter().map(|&s| m.states[s].decl.name.clone()))
                ),
                Scope::Periodic => format!(
                    "Periodic: re-armed while in {}.",
                    list(t.states.iter().map(|&s| m.states[s].decl.name.clone()))
                ),
            };
            doc(&format!("{}\n\n{scope}", t.decl.doc.trim_end()))
        })
        .collect();
    let tm_name: Vec<&str> = m.timers.iter().map(|t| t.decl.name.as_str()).collect();
    let tm_scope: Vec<TokenStream> = m
        .timers
        .iter()
        .map(|t| match t.scope {
            Scope::State => quote!(TimerScope::State),
            Scope::Keyed => quote!(TimerScope::Keyed),
            Scope::Periodic => quote!(TimerScope::Periodic),
        })
        .collect();
    let tm_event: Vec<&Ident> = m.timers.iter().map(|t| &ev[t.event]).collect();
    let armed_uses_state = m.timers.iter().any(|t| t.scope != Scope::Keyed);
    let tm_armed: Vec<TokenStream> = m
        .timers
        .iter()
        .map(|t| match t.scope {
            Scope::Keyed => quote!(true),
            Scope::State | Scope::Periodic if t.states.is_empty() => quote!(false),
            Scope::State | Scope::Periodic => {
                let s = t.states.iter().map(|&s| &st[s]);
                quote!(matches!(state, #( State::#s )|* ))
            }
        })
        .collect();
    let armed_state = if armed_uses_state {
        ident("state")
    } else {
        ident("_state")
    };
    let n_timers = usize_lit(m.timers.len());

    // ---- GuardId / ActionId ------------------------------------------------------------------
    let gd: Vec<Ident> = m.guards.iter().map(|g| ident(&g.camel)).collect();
    let gd_doc: Vec<TokenStream> = m.guards.iter().map(|g| doc(&g.doc)).collect();
    let gd_name: Vec<&str> = m.guards.iter().map(|g| g.name.as_str()).collect();
    let gd_fn: Vec<Ident> = m.guards.iter().map(|g| ident(&g.name)).collect();
    let n_guards = usize_lit(m.guards.len());
    let ac: Vec<Ident> = m.actions.iter().map(|a| ident(&a.camel)).collect();
    let ac_doc: Vec<TokenStream> = m.actions.iter().map(|a| doc(&a.doc)).collect();
    let ac_name: Vec<&str> = m.actions.iter().map(|a| a.name.as_str()).collect();
    let ac_fn: Vec<Ident> = m.actions.iter().map(|a| ident(&a.name)).collect();
    let n_actions = usize_lit(m.actions.len());

    // ---- ROWS --------------------------------------------------------------------------------
    let rows: Vec<TokenStream> = m
        .rows
        .iter()
        .map(|r| {
            let index = u16_lit(r.index);
            let line = u32_lit(r.line);
            let from = r.from.iter().map(|&s| &st[s]);
            let on = r.on.iter().map(|&e| &ev[e]);
            let guard = match r.guard {
                Some(g) => {
                    let g = &gd[g];
                    quote!(Some(GuardId::#g))
                }
                None => quote!(None),
            };
            let actions = r.actions.iter().map(|&a| &ac[a]);
            let to = match r.to {
                Some(t) => {
                    let t = &st[t];
                    quote!(Some(State::#t))
                }
                None => quote!(None),
            };
            let ignore = r.ignore;
            let impossible = r.impossible;
            quote! {
                Row {
                    index: #index,
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
        })
        .collect();
    let n_rows = usize_lit(m.rows.len());
    let init_actions = m.initial_actions.iter().map(|&a| &ac[a]);
    let n_init_actions = usize_lit(m.initial_actions.len());

    // ---- dispatch / cell_rows ----------------------------------------------------------------
    let calls = m
        .rows
        .iter()
        .any(|r| r.guard.is_some() || !r.actions.is_empty());
    let (h, evp) = if calls {
        (ident("h"), ident("ev"))
    } else {
        (ident("_h"), ident("_ev"))
    };
    let mut dispatch_arms = Vec::new();
    let mut cell_arms = Vec::new();
    for cell in &m.cells {
        let s = &st[cell.state];
        let e = &ev[cell.event];
        let mut body = Vec::new();
        let mut tail = quote!();
        for (k, &ri) in cell.rows.iter().enumerate() {
            let r = &m.rows[ri];
            let row = u16_lit(r.index);
            let to = &st[r.target(cell.state)];
            let acts = r.actions.iter().map(|&a| &ac_fn[a]);
            let fired = quote!(Fired { row: #row, to: State::#to });
            let last = k + 1 == cell.rows.len();
            match (r.guard, last) {
                (Some(g), false) => {
                    let g = &gd_fn[g];
                    body.push(quote! {
                        if h.#g(ev) {
                            #( h.#acts(ev); )*
                            return #fired;
                        }
                    });
                }
                _ => {
                    body.push(quote! { #( h.#acts(ev); )* });
                    tail = fired;
                    break;
                }
            }
        }
        let arm_body = quote!( #( #body )* #tail );
        let simple = cell
            .rows
            .first()
            .is_some_and(|&r| m.rows[r].guard.is_none() && m.rows[r].actions.is_empty());
        dispatch_arms.push(if simple {
            quote! { (State::#s, EventKind::#e) => #tail, }
        } else {
            quote! { (State::#s, EventKind::#e) => { #arm_body } }
        });
        let ids = cell.rows.iter().map(|&r| u16_lit(r));
        cell_arms.push(quote! { (State::#s, EventKind::#e) => &[ #( #ids ),* ], });
    }
    let guard_params = if m.guards.is_empty() {
        (ident("_h"), ident("_ev"))
    } else {
        (ident("h"), ident("ev"))
    };
    let (gh, gev) = guard_params;
    let (ah, aev) = if m.actions.is_empty() {
        (ident("_h"), ident("_ev"))
    } else {
        (ident("h"), ident("ev"))
    };
    let handlers_doc = doc(&format!(
        "The guards and actions of the `{machine}` machine: one required method each, named as in\n\
         the spec, without default bodies.\n\n\
         Guards take `&self` and say whether a row fires; actions take `&mut self` and do (or\n\
         record) a row's effects. `dispatch` calls them in row order. A guard or action added to\n\
         the spec does not compile until it is implemented. Not a state holder: the current\n\
         `State` is the caller's."
    ));
    let mermaid_lit = raw_string(mermaid);
    let machine_doc = doc(&format!("The machine's name in the spec (`{machine}`)."));

    quote! {
        #state_doc
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum State {
            #( #st_doc #st, )*
        }

        impl State {
            /// Every state, in the order the spec declares them.
            pub const ALL: [State; #n_states] = [ #( State::#st ),* ];
            #initial_doc
            pub const INITIAL: State = State::#initial;

            /// The state's name as written in the spec.
            pub const fn name(self) -> &'static str {
                match self {
                    #( State::#st => #st_name, )*
                }
            }

            /// Whether the spec marks the state `terminal` (no row leaves it).
            pub const fn is_terminal(self) -> bool {
                #is_terminal_body
            }
        }

        /// Where an event comes from.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum EventSource {
            /// The transport: frames, up/down, send outcomes, handler replies.
            Transport,
            /// A caller of the client.
            Caller,
            /// One of the spec's timers.
            Timer,
        }

        #event_doc
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum EventKind {
            #( #ev_doc #ev, )*
        }

        impl EventKind {
            /// Every event kind: declared events, then timer events.
            pub const ALL: [EventKind; #n_events] = [ #( EventKind::#ev ),* ];

            /// The event's name as written in the spec (a timer event has its timer's name).
            pub const fn name(self) -> &'static str {
                match self {
                    #( EventKind::#ev => #ev_name, )*
                }
            }

            /// Where the event comes from.
            pub const fn source(self) -> EventSource {
                match self {
                    #( EventKind::#ev => #ev_source, )*
                }
            }
        }

        /// How long a timer lives.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum TimerScope {
            /// Armed in some states and cancelled on leaving them.
            State,
            /// One per key (for example per request id), in any state.
            Keyed,
            /// Re-armed each time it fires, while in some states.
            Periodic,
        }

        /// The timers of the spec, in declaration order; each fires the event of its name.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum TimerKind {
            #( #tm_doc #tm, )*
        }

        impl TimerKind {
            /// Every timer, in declaration order.
            pub const ALL: [TimerKind; #n_timers] = [ #( TimerKind::#tm ),* ];

            /// The timer's name as written in the spec.
            pub const fn name(self) -> &'static str {
                match self {
                    #( TimerKind::#tm => #tm_name, )*
                }
            }

            /// The timer's scope (`kind` in the spec).
            pub const fn scope(self) -> TimerScope {
                match self {
                    #( TimerKind::#tm => #tm_scope, )*
                }
            }

            /// The event kind the timer fires.
            pub const fn event(self) -> EventKind {
                match self {
                    #( TimerKind::#tm => EventKind::#tm_event, )*
                }
            }

            /// Whether the timer may stay armed in `state`: keyed timers in every state, the
            /// others in the states the spec lists.
            pub const fn armed_in(self, #armed_state: State) -> bool {
                match self {
                    #( TimerKind::#tm => #tm_armed, )*
                }
            }
        }

        /// The guards of the spec, in declaration order (each is a method of `Handlers`).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum GuardId {
            #( #gd_doc #gd, )*
        }

        impl GuardId {
            /// Every guard, in declaration order.
            pub const ALL: [GuardId; #n_guards] = [ #( GuardId::#gd ),* ];

            /// The guard's name as written in the spec (also its method's name).
            pub const fn name(self) -> &'static str {
                match self {
                    #( GuardId::#gd => #gd_name, )*
                }
            }
        }

        /// The actions of the spec, in declaration order (each is a method of `Handlers`).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum ActionId {
            #( #ac_doc #ac, )*
        }

        impl ActionId {
            /// Every action, in declaration order.
            pub const ALL: [ActionId; #n_actions] = [ #( ActionId::#ac ),* ];

            /// The action's name as written in the spec (also its method's name).
            pub const fn name(self) -> &'static str {
                match self {
                    #( ActionId::#ac => #ac_name, )*
                }
            }
        }

        /// One row of the table as written (a row may cover several cells).
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub struct Row {
            /// The row's position in the spec (0-based); `Fired::row` and `cell_rows` use it.
            pub index: u16,
            /// The line of the row's `[[row]]` header in the spec (1-based).
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

        /// The rows of the spec in file order (`ROWS[i].index == i`).
        pub const ROWS: [Row; #n_rows] = [ #( #rows ),* ];

        /// The actions run once when the machine is constructed, in order.
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

        #handlers_doc
        pub trait Handlers {
            /// The event payload guards and actions read (the full event; `dispatch` matches
            /// only on its kind).
            type Event: ?Sized;

            #( #gd_doc fn #gd_fn(&self, ev: &Self::Event) -> bool; )*

            #( #ac_doc fn #ac_fn(&mut self, ev: &Self::Event); )*
        }

        /// Handles one event: tries the rows of the (state, event) cell in file order, runs the
        /// actions of the first row whose guard holds (or that has none) and says which row fired
        /// and the state after it.
        ///
        /// Exhaustive over every (state, event kind) pair, with no wildcard arm: a cell missing
        /// from the spec is a compile error here too. It does not change any state itself; the
        /// caller stores `Fired::to`.
        #[deny(unreachable_patterns)]
        pub fn dispatch<H: Handlers + ?Sized>(#h: &mut H, state: State, event: EventKind, #evp: &H::Event) -> Fired {
            match (state, event) {
                #( #dispatch_arms )*
            }
        }

        /// The row indexes of one cell in the order `dispatch` tries them (all guarded but the
        /// last).
        #[deny(unreachable_patterns)]
        pub const fn cell_rows(state: State, event: EventKind) -> &'static [u16] {
            match (state, event) {
                #( #cell_arms )*
            }
        }

        /// Evaluates one guard by id: the table-driven equivalent of the calls in `dispatch`.
        #[deny(unreachable_patterns)]
        pub fn eval_guard<H: Handlers + ?Sized>(#gh: &H, guard: GuardId, #gev: &H::Event) -> bool {
            match guard {
                #( GuardId::#gd => h.#gd_fn(ev), )*
            }
        }

        /// Runs one action by id: the table-driven equivalent of the calls in `dispatch`.
        #[deny(unreachable_patterns)]
        pub fn run_action<H: Handlers + ?Sized>(#ah: &mut H, action: ActionId, #aev: &H::Event) {
            match action {
                #( ActionId::#ac => h.#ac_fn(ev), )*
            }
        }

        /// The Mermaid `stateDiagram-v2` of the table (rows that stay in their state are not
        /// drawn).
        pub const MERMAID: &str = #mermaid_lit;
    }
}
