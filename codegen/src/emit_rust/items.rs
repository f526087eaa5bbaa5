//! The enums of the generated file: `State`, `EventSource`, `EventKind`, the typed `Event`,
//! `TimerScope` and `TimerKind`, `GuardId` and `ActionId`.

use proc_macro2::TokenStream;
use quote::quote;

use super::{Idents, doc, ident, list, rust, usize_lit};
use crate::ir::{Machine, Scope, Source};

/// `State`: the variants, `ALL`, `INITIAL`, `name`, `is_terminal`.
pub(super) fn states(m: &Machine, ids: &Idents) -> TokenStream {
    let st = &ids.st;
    let st_doc = m.states.iter().map(|s| doc(&s.decl.doc));
    let st_name = m.states.iter().map(|s| s.decl.name.as_str());
    let n_states = usize_lit(m.states.len());
    let initial = &st[m.initial];
    let terminals: Vec<_> = m
        .states
        .iter()
        .zip(st)
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
    let initial_name = &m.states[m.initial].decl.name;
    let state_doc = doc(&format!(
        "The states of the `{}` machine, in the order the spec declares them.\n\n\
         The machine starts in `{initial_name}`{}.\n\
         What each (state, event) cell does is in `ROWS`, run by `dispatch`; `MERMAID` draws it.",
        m.name,
        if terminal_names.is_empty() {
            String::new()
        } else {
            format!("; terminal: {terminal_names}")
        }
    ));
    let initial_doc = doc(&format!(
        "The state the machine starts in (`{initial_name}`)."
    ));
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
    }
}

/// `EventSource`.
pub(super) fn event_source() -> TokenStream {
    quote! {
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
    }
}

/// The doc of an event's variant (in `EventKind` and `Event`).
fn event_doc(m: &Machine, e: usize) -> TokenStream {
    let e = &m.events[e];
    match e.timer {
        Some(_) => doc(&format!(
            "The `{}` timer fired.\n\n{}",
            e.decl.name, e.decl.doc
        )),
        None => doc(&e.decl.doc),
    }
}

/// `EventKind`: the variants, `ALL`, `name`, `source`.
pub(super) fn event_kinds(m: &Machine, ids: &Idents) -> TokenStream {
    let ev = &ids.ev;
    let ev_doc = (0..m.events.len()).map(|e| event_doc(m, e));
    let ev_name = m.events.iter().map(|e| e.decl.name.as_str());
    let ev_source = m.events.iter().map(|e| match e.source {
        Source::Transport => quote!(EventSource::Transport),
        Source::Caller => quote!(EventSource::Caller),
        Source::Timer => quote!(EventSource::Timer),
    });
    let n_events = usize_lit(m.events.len());
    let kind_doc = doc(&format!(
        "The kinds of event of the `{}` machine: the spec's events in declaration order,\n\
         then one per timer.\n\n\
         Fieldless: `Event` is the same list with the payloads; this is what the row table and\n\
         the timers name.",
        m.name
    ));
    quote! {
        #kind_doc
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
    }
}

/// `Event`: one variant per `EventKind`, holding the payload when the spec gives one; `kind`.
pub(super) fn event_enum(m: &Machine, ids: &Idents) -> TokenStream {
    let variants = m.events.iter().enumerate().map(|(i, e)| {
        let (d, v) = (event_doc(m, i), &ids.ev[i]);
        match &e.payload {
            Some(t) => {
                let t = rust(t);
                quote!(#d #v(#t),)
            }
            None => quote!(#d #v,),
        }
    });
    let kind_arms = m.events.iter().zip(&ids.ev).map(|(e, v)| match e.payload {
        Some(_) => quote!(Event::#v(_) => EventKind::#v,),
        None => quote!(Event::#v => EventKind::#v,),
    });
    let event_doc = doc(&format!(
        "An event of the `{}` machine with its payload, as `dispatch` takes it: one variant per\n\
         `EventKind`, in the same order, holding the spec's `payload` type when it has one.",
        m.name
    ));
    quote! {
        #event_doc
        #[derive(Debug)]
        pub enum Event {
            #( #variants )*
        }

        impl Event {
            /// The event's kind.
            pub fn kind(&self) -> EventKind {
                match self {
                    #( #kind_arms )*
                }
            }
        }
    }
}

/// The doc of a timer: its own, then its scope.
fn timer_doc(m: &Machine, t: &crate::ir::Timer) -> TokenStream {
    let states = || list(t.states.iter().map(|&s| m.states[s].decl.name.clone()));
    let scope = match t.scope {
        Scope::Keyed => format!(
            "Keyed by {}; may be armed in every state.",
            t.key.as_deref().unwrap_or("a key")
        ),
        Scope::State => format!("State timer: cancelled on leaving {}.", states()),
        Scope::Periodic => format!("Periodic: re-armed while in {}.", states()),
    };
    doc(&format!("{}\n\n{scope}", t.decl.doc.trim_end()))
}

/// `TimerScope` and `TimerKind`: the variants, `ALL`, `name`, `scope`, `event`, `armed_in`.
pub(super) fn timers(m: &Machine, ids: &Idents) -> TokenStream {
    let tm = &ids.tm;
    let tm_doc = m.timers.iter().map(|t| timer_doc(m, t));
    let tm_name = m.timers.iter().map(|t| t.decl.name.as_str());
    let tm_scope = m.timers.iter().map(|t| match t.scope {
        Scope::State => quote!(TimerScope::State),
        Scope::Keyed => quote!(TimerScope::Keyed),
        Scope::Periodic => quote!(TimerScope::Periodic),
    });
    let tm_event = m.timers.iter().map(|t| &ids.ev[t.event]);
    let tm_armed = m.timers.iter().map(|t| match t.scope {
        Scope::Keyed => quote!(true),
        Scope::State | Scope::Periodic if t.states.is_empty() => quote!(false),
        Scope::State | Scope::Periodic => {
            let s = t.states.iter().map(|&s| &ids.st[s]);
            quote!(matches!(state, #( State::#s )|* ))
        }
    });
    let armed_state = ident(if m.timers.iter().any(|t| t.scope != Scope::Keyed) {
        "state"
    } else {
        "_state"
    });
    let n_timers = usize_lit(m.timers.len());
    quote! {
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
    }
}

/// `GuardId`: the variants, `ALL`, `name`.
pub(super) fn guard_ids(m: &Machine, ids: &Idents) -> TokenStream {
    let gd = &ids.gd;
    let gd_doc = m.guards.iter().map(|g| doc(&g.decl.doc));
    let gd_name = m.guards.iter().map(|g| g.decl.name.as_str());
    let n_guards = usize_lit(m.guards.len());
    quote! {
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
    }
}

/// `ActionId`: the variants, `ALL`, `name`.
pub(super) fn action_ids(m: &Machine, ids: &Idents) -> TokenStream {
    let ac = &ids.ac;
    let ac_doc = m.actions.iter().map(|a| doc(&a.decl.doc));
    let ac_name = m.actions.iter().map(|a| a.decl.name.as_str());
    let n_actions = usize_lit(m.actions.len());
    quote! {
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
    }
}
