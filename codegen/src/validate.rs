//! Checks a parsed [`Spec`] against every rule of the table and lowers it to an [`ir::Machine`].
//!
//! All errors are collected (not just the first), each pointing at the offending text. Nothing here
//! reads files or renders: [`crate::Diagnostics`] renders. A spec that passes yields a machine
//! whose every (state, event) cell has rows, the last of them unguarded, and no dead row.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::ops::Range;

use crate::diagnostic::{DeclKind, Diagnostic, SpecError};
use crate::ir::{self, Machine, Named};
use crate::spec::{Decl, Names, SourceDecl, Spec, TimerKindDecl};

/// Rust's strict and reserved keywords (edition 2024): names that cannot be identifiers.
const KEYWORDS: &[&str] = &[
    "abstract", "as", "async", "await", "become", "box", "break", "const", "continue", "crate",
    "do", "dyn", "else", "enum", "extern", "false", "final", "fn", "for", "gen", "if", "impl",
    "in", "let", "loop", "macro", "match", "mod", "move", "mut", "override", "priv", "pub", "ref",
    "return", "self", "static", "struct", "super", "trait", "true", "try", "type", "typeof",
    "unsafe", "unsized", "use", "virtual", "where", "while", "yield",
];

/// Why `name` is not acceptable as a spec name, if it is not.
///
/// Accepted: a lowercase ASCII letter, then lowercase letters and digits, with single underscores
/// between words; not a Rust keyword.
pub fn name_problem(name: &str) -> Option<&'static str> {
    let bytes = name.as_bytes();
    let Some(&first) = bytes.first() else {
        return Some("it is empty");
    };
    let shape_ok = first.is_ascii_lowercase()
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'_')
        && !name.ends_with('_')
        && !name.contains("__");
    if !shape_ok {
        return Some(
            "not snake_case (a lowercase letter, then lowercase letters, digits and single `_` \
             between words)",
        );
    }
    if KEYWORDS.contains(&name) {
        return Some("it is a Rust keyword");
    }
    None
}

/// Edit distance between two names (insertions, deletions, substitutions).
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// The declared name closest to `name`, if it is close enough to be a likely typo.
fn closest<'a>(name: &str, candidates: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    let limit = (name.chars().count() / 3).max(1);
    candidates
        .map(|c| (distance(name, c), c))
        .filter(|(d, _)| *d <= limit)
        .min()
        .map(|(_, c)| c)
}

/// A declaration seen by the checks: its name and where the name is written.
struct Seen {
    name: String,
    span: Range<usize>,
}

fn seen<T>(decls: &[Decl<T>]) -> Vec<Seen> {
    decls
        .iter()
        .map(|d| Seen {
            name: d.name.get_ref().clone(),
            span: d.name.span(),
        })
        .collect()
}

fn index_of(decls: &[Seen]) -> BTreeMap<&str, usize> {
    let mut map = BTreeMap::new();
    for (i, d) in decls.iter().enumerate() {
        map.entry(d.name.as_str()).or_insert(i);
    }
    map
}

/// A row with its names resolved as far as they resolve.
struct Resolved {
    header: Range<usize>,
    line: u32,
    from: Vec<usize>,
    from_star: bool,
    from_span: Range<usize>,
    on: Vec<usize>,
    on_span: Range<usize>,
    /// `Some((None, span))` is a guard that did not resolve: it still counts as a guard.
    guard: Option<(Option<usize>, Range<usize>)>,
    actions: Vec<usize>,
    to: Option<usize>,
    ignore: bool,
    impossible: bool,
}

fn cells_text(cells: &[(usize, usize)], states: &[Seen], events: &[Seen]) -> String {
    let list: Vec<String> = cells
        .iter()
        .map(|&(s, e)| format!("(`{}`, `{}`)", states[s].name, events[e].name))
        .collect();
    format!(
        "{} {}",
        if cells.len() == 1 { "cell" } else { "cells" },
        list.join(", ")
    )
}

/// Checks `spec` (parsed from `source`) and lowers it, or returns every error found, sorted by
/// position in the file.
pub fn validate(spec: &Spec, source: &str) -> Result<Machine, Vec<Diagnostic>> {
    let mut errors: Vec<Diagnostic> = Vec::new();
    let line_of = |offset: usize| crate::diagnostic::line_column(source, offset).0;

    let states = seen(&spec.states.entries);
    let declared_events = seen(&spec.events.entries);
    let timers = seen(&spec.timers.entries);
    let guards = seen(&spec.guards.entries);
    let actions = seen(&spec.actions.entries);
    // Event kinds: the declared events, then one per timer.
    let events: Vec<Seen> = declared_events
        .iter()
        .chain(timers.iter())
        .map(|d| Seen {
            name: d.name.clone(),
            span: d.span.clone(),
        })
        .collect();
    let n_declared = declared_events.len();

    // ---- names -------------------------------------------------------------------------------
    for d in states
        .iter()
        .chain(&declared_events)
        .chain(&timers)
        .chain(&guards)
        .chain(&actions)
    {
        if let Some(reason) = name_problem(&d.name) {
            errors.push(Diagnostic::new(
                SpecError::BadName {
                    name: d.name.clone(),
                    reason,
                },
                d.span.clone(),
                "declared here",
            ));
        }
    }
    let clash =
        |errors: &mut Vec<Diagnostic>, a: &[Seen], ak: DeclKind, b: &[Seen], bk: DeclKind| {
            let first = index_of(a);
            for d in b {
                if let Some(&i) = first.get(d.name.as_str()) {
                    errors.push(
                        Diagnostic::new(
                            SpecError::NameClash {
                                name: d.name.clone(),
                                first: ak,
                                second: bk,
                            },
                            d.span.clone(),
                            format!("the {bk} is declared here"),
                        )
                        .with_context(a[i].span.clone(), format!("the {ak} is declared here"))
                        .with_note(match (ak, bk) {
                            (DeclKind::Guard, DeclKind::Action) => {
                                "guards and actions both become methods of the `Handlers` trait"
                            }
                            _ => "each timer declares an event of its own name",
                        }),
                    );
                }
            }
        };
    clash(
        &mut errors,
        &guards,
        DeclKind::Guard,
        &actions,
        DeclKind::Action,
    );
    clash(
        &mut errors,
        &declared_events,
        DeclKind::Event,
        &timers,
        DeclKind::Timer,
    );
    let camel = |errors: &mut Vec<Diagnostic>, list: &[Seen]| {
        let mut first: BTreeMap<String, usize> = BTreeMap::new();
        for (i, d) in list.iter().enumerate() {
            let c = ir::camel_case(&d.name);
            match first.get(&c) {
                Some(&j) if list[j].name != d.name => errors.push(
                    Diagnostic::new(
                        SpecError::CamelClash {
                            first: list[j].name.clone(),
                            name: d.name.clone(),
                            camel: c.clone(),
                        },
                        d.span.clone(),
                        "declared here",
                    )
                    .with_context(list[j].span.clone(), "the other name"),
                ),
                Some(_) => {}
                None => {
                    first.insert(c, i);
                }
            }
        }
    };
    camel(&mut errors, &states);
    camel(&mut errors, &events);
    camel(&mut errors, &timers);
    camel(&mut errors, &guards);
    camel(&mut errors, &actions);

    let state_ix = index_of(&states);
    let event_ix = index_of(&events);
    let guard_ix = index_of(&guards);
    let action_ix = index_of(&actions);

    let tables: [(DeclKind, &BTreeMap<&str, usize>); 4] = [
        (DeclKind::State, &state_ix),
        (DeclKind::Event, &event_ix),
        (DeclKind::Guard, &guard_ix),
        (DeclKind::Action, &action_ix),
    ];
    let unknown = |errors: &mut Vec<Diagnostic>, kind: DeclKind, name: &str, span: Range<usize>| {
        let mut d = Diagnostic::new(
            SpecError::Unknown {
                kind,
                name: name.to_owned(),
            },
            span,
            format!("no `[{}.{}]` is declared", kind.table(), name),
        );
        let same_kind = tables.iter().find(|(k, _)| *k == kind).map(|(_, t)| *t);
        if let Some(close) = same_kind.and_then(|t| closest(name, t.keys().copied())) {
            d = d.with_note(format!("did you mean `{close}`?"));
        } else if let Some((other, _)) = tables
            .iter()
            .find(|(k, t)| *k != kind && t.contains_key(name))
        {
            d = d.with_note(format!(
                "`{name}` is {}, not {}",
                other.with_article(),
                kind.with_article()
            ));
        }
        errors.push(d.with_note(if kind == DeclKind::Event {
            "events are declared in `[events]`; every `[timers]` entry also declares one".to_owned()
        } else {
            format!("{}s are declared in `[{}]`", kind.word(), kind.table())
        }));
    };

    // ---- states ------------------------------------------------------------------------------
    let machine_span = spec.machine.span();
    if states.is_empty() {
        errors.push(Diagnostic::new(
            SpecError::NoStates,
            machine_span.clone(),
            "this machine has no `[states.<name>]`",
        ));
    }
    if events.is_empty() {
        errors.push(Diagnostic::new(
            SpecError::NoEvents,
            machine_span.clone(),
            "this machine has no `[events.<name>]` and no `[timers.<name>]`",
        ));
    }
    let mut initial: Option<usize> = None;
    for (i, d) in spec.states.entries.iter().enumerate() {
        let Some(flag) = &d.value.get_ref().initial else {
            continue;
        };
        if !*flag.get_ref() {
            continue;
        }
        match initial {
            None => initial = Some(i),
            Some(first) => {
                let first_flag = spec.states.entries[first]
                    .value
                    .get_ref()
                    .initial
                    .as_ref()
                    .map_or(states[first].span.clone(), |f| f.span());
                errors.push(
                    Diagnostic::new(
                        SpecError::TwoInitialStates {
                            first: states[first].name.clone(),
                            name: states[i].name.clone(),
                        },
                        flag.span(),
                        format!("`{}` is marked initial here", states[i].name),
                    )
                    .with_context(
                        first_flag,
                        format!("`{}` is already initial", states[first].name),
                    )
                    .with_note("exactly one state has `initial = true`"),
                );
            }
        }
    }
    if initial.is_none() && !states.is_empty() {
        let span = spec
            .states
            .span
            .clone()
            .unwrap_or_else(|| states[0].span.clone());
        errors.push(
            Diagnostic::new(SpecError::NoInitialState, span, "no state here is initial")
                .with_note(format!(
                    "add `initial = true` to the state the machine starts in, for example `[states.{}]`",
                    states[0].name
                )),
        );
    }
    let terminal: Vec<bool> = spec
        .states
        .entries
        .iter()
        .map(|d| {
            d.value
                .get_ref()
                .terminal
                .as_ref()
                .is_some_and(|t| *t.get_ref())
        })
        .collect();

    // ---- timers ------------------------------------------------------------------------------
    let mut timer_states: Vec<Vec<usize>> = Vec::new();
    for (t, d) in spec.timers.entries.iter().enumerate() {
        let decl = d.value.get_ref();
        let name = timers[t].name.clone();
        let kind = *decl.kind.get_ref();
        let mut resolved = Vec::new();
        match kind {
            TimerKindDecl::Keyed => {
                if decl.key.is_none() {
                    errors.push(
                        Diagnostic::new(
                            SpecError::KeyedTimerWithoutKey { name: name.clone() },
                            timers[t].span.clone(),
                            "declared here",
                        )
                        .with_context(decl.kind.span(), "keyed")
                        .with_note("name what it is keyed by, for example `key = \"request id\"`"),
                    );
                }
                if let Some(st) = &decl.states {
                    errors.push(
                        Diagnostic::new(
                            SpecError::StatesOnKeyedTimer { name: name.clone() },
                            st.span(),
                            "keyed timers are armed in every state",
                        )
                        .with_context(decl.kind.span(), "keyed"),
                    );
                }
            }
            TimerKindDecl::State | TimerKindDecl::Periodic => {
                let scope = if kind == TimerKindDecl::State {
                    "state"
                } else {
                    "periodic"
                };
                if let Some(key) = &decl.key {
                    errors.push(
                        Diagnostic::new(
                            SpecError::KeyOnUnkeyedTimer { name: name.clone() },
                            key.span(),
                            "only keyed timers have a key",
                        )
                        .with_context(decl.kind.span(), format!("this timer is {scope}")),
                    );
                }
                match &decl.states {
                    None => errors.push(
                        Diagnostic::new(
                            SpecError::TimerWithoutStates {
                                scope,
                                name: name.clone(),
                            },
                            timers[t].span.clone(),
                            "declared here",
                        )
                        .with_note("list the states it may stay armed in: `states = [...]`"),
                    ),
                    Some(st) if st.get_ref().is_empty() => errors.push(Diagnostic::new(
                        SpecError::TimerWithoutStates {
                            scope,
                            name: name.clone(),
                        },
                        st.span(),
                        "an empty list",
                    )),
                    Some(st) => {
                        for s in st.get_ref() {
                            match state_ix.get(s.get_ref().as_str()) {
                                Some(&i) if resolved.contains(&i) => {
                                    errors.push(Diagnostic::new(
                                        SpecError::RepeatedName {
                                            name: s.get_ref().clone(),
                                            field: "states",
                                        },
                                        s.span(),
                                        "listed again here",
                                    ));
                                }
                                Some(&i) => resolved.push(i),
                                None => {
                                    unknown(&mut errors, DeclKind::State, s.get_ref(), s.span())
                                }
                            }
                        }
                    }
                }
            }
        }
        timer_states.push(resolved);
    }

    // ---- initial actions ---------------------------------------------------------------------
    let mut action_used = vec![false; actions.len()];
    let mut initial_actions = Vec::new();
    for a in &spec.machine.get_ref().initial_actions {
        match action_ix.get(a.get_ref().as_str()) {
            Some(&i) => {
                action_used[i] = true;
                initial_actions.push(i);
            }
            None => unknown(&mut errors, DeclKind::Action, a.get_ref(), a.span()),
        }
    }

    // ---- rows --------------------------------------------------------------------------------
    if spec.row.len() > usize::from(u16::MAX) {
        errors.push(Diagnostic::new(
            SpecError::TooManyRows {
                count: spec.row.len(),
            },
            spec.row[usize::from(u16::MAX)].span(),
            "this row and the ones after it do not fit a `u16` index",
        ));
    }
    let mut state_used = vec![false; states.len()];
    let mut event_used = vec![false; events.len()];
    let mut guard_used = vec![false; guards.len()];
    let mut rows: Vec<Resolved> = Vec::new();
    for row in &spec.row {
        let header = row.span();
        let r = row.get_ref();
        // from
        let from_span = r.from.span();
        let mut from = Vec::new();
        let mut from_star = false;
        match r.from.get_ref() {
            Names::One(s) if s == "*" => {
                from_star = true;
                from = (0..states.len()).collect();
                state_used.iter_mut().for_each(|u| *u = true);
            }
            Names::Many(v) if v.is_empty() => errors.push(Diagnostic::new(
                SpecError::EmptyList { field: "from" },
                from_span.clone(),
                "this row covers no state",
            )),
            names => {
                for (name, span) in names.items(from_span.clone()) {
                    if name == "*" {
                        errors.push(Diagnostic::new(SpecError::StarInList, span, "here"));
                        continue;
                    }
                    match state_ix.get(name.as_str()) {
                        Some(&i) if from.contains(&i) => errors.push(Diagnostic::new(
                            SpecError::RepeatedName {
                                name,
                                field: "from",
                            },
                            span,
                            "listed again here",
                        )),
                        Some(&i) => {
                            state_used[i] = true;
                            from.push(i);
                        }
                        None => unknown(&mut errors, DeclKind::State, &name, span),
                    }
                }
            }
        }
        // on
        let on_span = r.on.span();
        let mut on = Vec::new();
        let on_items = r.on.get_ref().items(on_span.clone());
        if on_items.is_empty() {
            errors.push(Diagnostic::new(
                SpecError::EmptyList { field: "on" },
                on_span.clone(),
                "this row covers no event",
            ));
        }
        for (name, span) in on_items {
            match event_ix.get(name.as_str()) {
                Some(&i) if on.contains(&i) => errors.push(Diagnostic::new(
                    SpecError::RepeatedName { name, field: "on" },
                    span,
                    "listed again here",
                )),
                Some(&i) => {
                    event_used[i] = true;
                    on.push(i);
                }
                None => unknown(&mut errors, DeclKind::Event, &name, span),
            }
        }
        // guard
        let guard = r.guard.as_ref().map(|g| {
            let ix = guard_ix.get(g.get_ref().as_str()).copied();
            match ix {
                Some(i) => guard_used[i] = true,
                None => unknown(&mut errors, DeclKind::Guard, g.get_ref(), g.span()),
            }
            (ix, g.span())
        });
        // do
        let mut row_actions = Vec::new();
        if let Some(list) = &r.actions {
            if list.get_ref().is_empty() {
                errors.push(
                    Diagnostic::new(
                        SpecError::EmptyList { field: "do" },
                        list.span(),
                        "no action",
                    )
                    .with_note("a row that does nothing is written `ignore = true`"),
                );
            }
            for a in list.get_ref() {
                match action_ix.get(a.get_ref().as_str()) {
                    Some(&i) => {
                        action_used[i] = true;
                        row_actions.push(i);
                    }
                    None => unknown(&mut errors, DeclKind::Action, a.get_ref(), a.span()),
                }
            }
        }
        // to
        let to = r.to.as_ref().and_then(|t| {
            let ix = state_ix.get(t.get_ref().as_str()).copied();
            match ix {
                Some(i) => state_used[i] = true,
                None => unknown(&mut errors, DeclKind::State, t.get_ref(), t.span()),
            }
            ix
        });
        // outcome
        let impossible = r.impossible.as_ref().is_some_and(|i| *i.get_ref());
        let ignore = r.ignore.as_ref().is_some_and(|i| *i.get_ref()) || impossible;
        if ignore {
            let ignore_span = r
                .ignore
                .as_ref()
                .or(r.impossible.as_ref())
                .map_or(header.clone(), |i| i.span());
            if let Some(list) = &r.actions {
                errors.push(
                    Diagnostic::new(
                        SpecError::IgnoreWith { field: "do" },
                        list.span(),
                        "actions on an ignored row",
                    )
                    .with_context(ignore_span.clone(), "the row is ignored here"),
                );
            }
            if let Some(t) = &r.to {
                errors.push(
                    Diagnostic::new(
                        SpecError::IgnoreWith { field: "to" },
                        t.span(),
                        "a target on an ignored row",
                    )
                    .with_context(ignore_span, "the row is ignored here")
                    .with_note("an ignored event leaves the state as it is"),
                );
            }
        } else if r.actions.is_none() {
            errors.push(
                Diagnostic::new(
                    SpecError::NoOutcome,
                    header.clone(),
                    "this row does nothing",
                )
                .with_note("write `do = [...]` (with an optional `to`) or `ignore = true`"),
            );
        }
        // terminal states stay
        if let (Some(t), Some(to_decl)) = (to, &r.to) {
            for &s in &from {
                if terminal[s] && s != t {
                    errors.push(
                        Diagnostic::new(
                            SpecError::TerminalLeaves {
                                state: states[s].name.clone(),
                                to: states[t].name.clone(),
                            },
                            to_decl.span(),
                            format!("leaves `{}`", states[s].name),
                        )
                        .with_context(states[s].span.clone(), "declared `terminal = true`"),
                    );
                }
            }
        }
        let line = u32::try_from(line_of(header.start)).unwrap_or(u32::MAX);
        rows.push(Resolved {
            header,
            line,
            from,
            from_star,
            from_span,
            on,
            on_span,
            guard,
            actions: row_actions,
            to,
            ignore,
            impossible,
        });
    }

    // ---- unused declarations -----------------------------------------------------------------
    let timer_used: Vec<bool> = (0..timers.len())
        .map(|t| event_used[n_declared + t])
        .collect();
    let unused =
        |errors: &mut Vec<Diagnostic>, kind: DeclKind, list: &[Seen], used: &[bool], note: &str| {
            for (d, &u) in list.iter().zip(used) {
                if !u {
                    errors.push(
                        Diagnostic::new(
                            SpecError::Unused {
                                kind,
                                name: d.name.clone(),
                            },
                            d.span.clone(),
                            "declared here, never used",
                        )
                        .with_note(note.to_owned()),
                    );
                }
            }
        };
    unused(
        &mut errors,
        DeclKind::State,
        &states,
        &state_used,
        "no row has it in `from` or `to`",
    );
    unused(
        &mut errors,
        DeclKind::Event,
        &declared_events,
        &event_used[..n_declared],
        "no row has it in `on`",
    );
    unused(
        &mut errors,
        DeclKind::Timer,
        &timers,
        &timer_used,
        "no row has its event in `on`",
    );
    unused(
        &mut errors,
        DeclKind::Guard,
        &guards,
        &guard_used,
        "no row has it as `guard`",
    );
    unused(
        &mut errors,
        DeclKind::Action,
        &actions,
        &action_used,
        "no row has it in `do`, and `initial_actions` does not list it",
    );

    // ---- cells -------------------------------------------------------------------------------
    let cells = ir::expand_cells(
        states.len(),
        events.len(),
        rows.iter().map(|r| (r.from.as_slice(), r.on.as_slice())),
    );
    // Grouped by row so that a row covering many cells gives one error.
    let mut dead: BTreeMap<(usize, usize), Vec<(usize, usize)>> = BTreeMap::new();
    let mut no_fallback: BTreeMap<usize, Vec<(usize, usize)>> = BTreeMap::new();
    let mut repeated: BTreeMap<(usize, usize, usize), Vec<(usize, usize)>> = BTreeMap::new();
    for cell in &cells {
        let key = (cell.state, cell.event);
        if cell.rows.is_empty() {
            if state_used[cell.state] && event_used[cell.event] {
                errors.push(
                    Diagnostic::new(
                        SpecError::MissingCell {
                            state: states[cell.state].name.clone(),
                            event: events[cell.event].name.clone(),
                        },
                        states[cell.state].span.clone(),
                        format!("state `{}` declared here", states[cell.state].name),
                    )
                    .with_context(
                        events[cell.event].span.clone(),
                        format!("event `{}` declared here", events[cell.event].name),
                    )
                    .with_note(format!(
                        "every (state, event) cell needs a row: add one with `from = \"{}\"` and `on = \"{}\"`, and `do = [...]` or `ignore = true`",
                        states[cell.state].name, events[cell.event].name
                    )),
                );
            }
            continue;
        }
        let fallback = cell.rows.iter().position(|&r| rows[r].guard.is_none());
        match fallback {
            Some(p) => {
                for &r in &cell.rows[p + 1..] {
                    dead.entry((r, cell.rows[p])).or_default().push(key);
                }
            }
            None => {
                if let Some(&last) = cell.rows.last() {
                    no_fallback.entry(last).or_default().push(key);
                }
            }
        }
        let live = &cell.rows[..fallback.map_or(cell.rows.len(), |p| p + 1)];
        let mut first_use: BTreeMap<usize, usize> = BTreeMap::new();
        for &r in live {
            if let Some((Some(g), _)) = rows[r].guard {
                match first_use.get(&g) {
                    Some(&first) => repeated.entry((r, first, g)).or_default().push(key),
                    None => {
                        first_use.insert(g, r);
                    }
                }
            }
        }
    }
    for ((r, earlier), cells_of) in dead {
        let (row, prev) = (&rows[r], &rows[earlier]);
        errors.push(
            Diagnostic::new(
                SpecError::DuplicateCell {
                    cells: cells_text(&cells_of, &states, &events),
                    earlier_line: prev.line as usize,
                },
                row.header.clone(),
                "this row can never fire there",
            )
            .with_context(row.from_span.clone(), "")
            .with_context(row.on_span.clone(), "")
            .with_context(
                prev.header.clone(),
                format!("the row at line {} has no guard and always fires first", prev.line),
            )
            .with_note("the rows of a cell are tried in file order; the first row without a guard ends the search"),
        );
    }
    for (r, cells_of) in no_fallback {
        let row = &rows[r];
        let span = row
            .guard
            .as_ref()
            .map_or(row.header.clone(), |g| g.1.clone());
        errors.push(
            Diagnostic::new(
                SpecError::NoFallback {
                    cells: cells_text(&cells_of, &states, &events),
                },
                span,
                "when this guard is false, no row handles the event",
            )
            .with_context(row.from_span.clone(), "")
            .with_context(row.on_span.clone(), "")
            .with_note("the last row of every cell has no guard: add one after this row (`do = [...]` or `ignore = true`)"),
        );
    }
    for ((r, first, g), cells_of) in repeated {
        let span = |i: usize| {
            rows[i]
                .guard
                .as_ref()
                .map_or(rows[i].header.clone(), |g| g.1.clone())
        };
        errors.push(
            Diagnostic::new(
                SpecError::RepeatedGuard {
                    guard: guards[g].name.clone(),
                    cells: cells_text(&cells_of, &states, &events),
                },
                span(r),
                "used again here: this row only runs when it was already false",
            )
            .with_context(span(first), "first used here"),
        );
    }

    // ---- reachability ------------------------------------------------------------------------
    if let Some(init) = initial {
        let mut reached = vec![false; states.len()];
        reached[init] = true;
        let mut queue = VecDeque::from([init]);
        let mut edges: BTreeMap<usize, BTreeSet<usize>> = BTreeMap::new();
        for r in &rows {
            if let Some(t) = r.to {
                for &s in &r.from {
                    edges.entry(s).or_default().insert(t);
                }
            }
        }
        while let Some(s) = queue.pop_front() {
            for &t in edges.get(&s).into_iter().flatten() {
                if !reached[t] {
                    reached[t] = true;
                    queue.push_back(t);
                }
            }
        }
        for (s, d) in states.iter().enumerate() {
            if !reached[s] && state_used[s] {
                errors.push(
                    Diagnostic::new(
                        SpecError::UnreachableState {
                            name: d.name.clone(),
                            initial: states[init].name.clone(),
                        },
                        d.span.clone(),
                        "declared here",
                    )
                    .with_note(format!(
                        "no row with `to = \"{}\"` starts from a state reachable from `{}`",
                        d.name, states[init].name
                    )),
                );
            }
        }
    }

    if !errors.is_empty() {
        errors.sort_by_key(|d| d.primary.span.start);
        return Err(errors);
    }
    let Some(initial) = initial else {
        return Err(vec![Diagnostic::new(
            SpecError::NoInitialState,
            0..0,
            "no initial state",
        )]);
    };

    // ---- lower -------------------------------------------------------------------------------
    let doc = |d: &toml::Spanned<String>| d.get_ref().clone();
    let ir_states = spec
        .states
        .entries
        .iter()
        .enumerate()
        .map(|(i, d)| ir::State {
            decl: Named::new(d.name.get_ref(), &doc(&d.value.get_ref().doc)),
            initial: i == initial,
            terminal: terminal[i],
        })
        .collect();
    let mut ir_events: Vec<ir::Event> = spec
        .events
        .entries
        .iter()
        .map(|d| ir::Event {
            decl: Named::new(d.name.get_ref(), &doc(&d.value.get_ref().doc)),
            source: match d.value.get_ref().source.get_ref() {
                SourceDecl::Transport => ir::Source::Transport,
                SourceDecl::Caller => ir::Source::Caller,
            },
            timer: None,
        })
        .collect();
    let mut ir_timers = Vec::new();
    for (t, d) in spec.timers.entries.iter().enumerate() {
        let decl = d.value.get_ref();
        let named = Named::new(d.name.get_ref(), &doc(&decl.doc));
        ir_events.push(ir::Event {
            decl: named.clone(),
            source: ir::Source::Timer,
            timer: Some(t),
        });
        ir_timers.push(ir::Timer {
            decl: named,
            scope: match decl.kind.get_ref() {
                TimerKindDecl::State => ir::Scope::State,
                TimerKindDecl::Keyed => ir::Scope::Keyed,
                TimerKindDecl::Periodic => ir::Scope::Periodic,
            },
            states: timer_states[t].clone(),
            key: decl.key.as_ref().map(|k| k.get_ref().clone()),
            event: n_declared + t,
        });
    }
    let named = |list: &[Decl<crate::spec::DocDecl>]| -> Vec<Named> {
        list.iter()
            .map(|d| Named::new(d.name.get_ref(), &doc(&d.value.get_ref().doc)))
            .collect()
    };
    let ir_rows = rows
        .iter()
        .enumerate()
        .map(|(index, r)| ir::Row {
            index,
            line: r.line,
            from: r.from.clone(),
            from_star: r.from_star,
            on: r.on.clone(),
            guard: r.guard.as_ref().and_then(|g| g.0),
            actions: r.actions.clone(),
            to: r.to,
            ignore: r.ignore,
            impossible: r.impossible,
        })
        .collect();
    Ok(Machine {
        name: spec.machine.get_ref().name.get_ref().clone(),
        initial_actions,
        states: ir_states,
        initial,
        events: ir_events,
        timers: ir_timers,
        guards: named(&spec.guards.entries),
        actions: named(&spec.actions.entries),
        rows: ir_rows,
        cells,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str = r#"
[machine]
name = "m"
initial_actions = ["boot"]

[states.idle]
doc = "Idle."
initial = true

[states.busy]
doc = "Busy."

[states.done]
doc = "Done."
terminal = true

[events.go]
doc = "Go."
source = "caller"

[events.stop]
doc = "Stop."
source = "caller"

[guards.ok]
doc = "Ok."

[actions.boot]
doc = "Boot."

[actions.work]
doc = "Work."
"#;

    const ROWS: &str = r#"
[[row]]
from = "idle"
on = "go"
guard = "ok"
do = ["work"]
to = "busy"

[[row]]
from = "*"
on = "go"
ignore = true

[[row]]
from = ["idle", "busy"]
on = "stop"
do = ["work"]
to = "done"

[[row]]
from = "done"
on = "stop"
ignore = true
"#;

    fn codes(src: &str) -> Vec<&'static str> {
        let spec = crate::spec::parse(src).unwrap();
        match validate(&spec, src) {
            Ok(_) => Vec::new(),
            Err(e) => e.iter().map(|d| d.error.code()).collect(),
        }
    }

    #[test]
    fn the_small_spec_is_valid_and_lowers() {
        let src = format!("{HEAD}{ROWS}");
        let spec = crate::spec::parse(&src).unwrap();
        let m = validate(&spec, &src).unwrap();
        assert_eq!(m.states.len(), 3);
        assert_eq!(m.initial, 0);
        assert_eq!(m.cells.len(), 6);
        assert_eq!(m.cell(0, 0).rows, vec![0, 1]);
        assert_eq!(m.cell(1, 0).rows, vec![1]);
        assert_eq!(m.cell(2, 1).rows, vec![3]);
        assert_eq!(m.rows[1].from, vec![0, 1, 2]);
        assert!(m.rows[1].from_star);
        assert_eq!(m.initial_actions, vec![0]);
        let header = src.find("[[row]]").unwrap();
        assert_eq!(
            m.rows[0].line as usize,
            src[..header].matches('\n').count() + 1
        );
    }

    #[test]
    fn a_missing_cell_is_reported() {
        let src = format!(
            "{HEAD}{}",
            ROWS.replace("from = \"done\"", "from = \"busy\"")
        );
        let c = codes(&src);
        assert!(c.contains(&"missing-cell"), "{c:?}");
        assert!(c.contains(&"duplicate-cell"), "{c:?}");
    }

    #[test]
    fn a_guarded_last_row_has_no_fallback() {
        let src = format!(
            "{HEAD}{}",
            ROWS.replace("from = \"*\"", "from = [\"busy\", \"done\"]")
        );
        assert_eq!(codes(&src), ["no-fallback"]);
    }

    #[test]
    fn the_same_guard_twice_in_a_cell() {
        let extra = "\n[[row]]\nfrom = \"idle\"\non = \"go\"\nguard = \"ok\"\ndo = [\"work\"]\n";
        let src = format!(
            "{HEAD}{}",
            ROWS.replacen(
                "[[row]]\nfrom = \"*\"",
                &format!("{extra}\n[[row]]\nfrom = \"*\""),
                1
            )
        );
        assert_eq!(codes(&src), ["repeated-guard"]);
    }

    #[test]
    fn leaving_a_terminal_state_is_an_error() {
        let src = format!(
            "{HEAD}{}",
            ROWS.replace(
                "from = \"done\"\non = \"stop\"\nignore = true",
                "from = \"done\"\non = \"stop\"\ndo = [\"work\"]\nto = \"idle\""
            )
        );
        assert_eq!(codes(&src), ["terminal-leaves"]);
    }

    #[test]
    fn unused_and_unreachable() {
        let src = format!(
            "{HEAD}\n[states.lost]\ndoc = \"Lost.\"\n\n[actions.spare]\ndoc = \"Spare.\"\n{ROWS}\n[[row]]\nfrom = \"lost\"\non = \"stop\"\nignore = true\n"
        );
        let c = codes(&src);
        assert!(c.contains(&"unused"), "{c:?}");
        assert!(c.contains(&"unreachable-state"), "{c:?}");
    }

    #[test]
    fn typos_get_a_suggestion() {
        assert_eq!(distance("is_redy", "is_ready"), 1);
        assert_eq!(distance("", "ab"), 2);
        assert_eq!(
            closest("is_redy", ["is_ready", "is_ping"].into_iter()),
            Some("is_ready")
        );
        assert_eq!(closest("zzz", ["is_ready"].into_iter()), None);
    }

    #[test]
    fn names_are_checked() {
        assert_eq!(name_problem("ready"), None);
        assert_eq!(name_problem("send_2x"), None);
        assert!(name_problem("").is_some());
        assert!(name_problem("Ready").is_some());
        assert!(name_problem("_x").is_some());
        assert!(name_problem("x_").is_some());
        assert!(name_problem("a__b").is_some());
        assert!(name_problem("9a").is_some());
        assert!(name_problem("a-b").is_some());
        assert_eq!(name_problem("loop"), Some("it is a Rust keyword"));
        assert_eq!(name_problem("self"), Some("it is a Rust keyword"));
    }

    #[test]
    fn unknown_names_everywhere() {
        let src = format!(
            "{HEAD}{}",
            ROWS.replace("guard = \"ok\"", "guard = \"okay\"")
                .replace("to = \"busy\"", "to = \"bussy\"")
                .replace(
                    "do = [\"work\"]\nto = \"done\"",
                    "do = [\"wrk\"]\nto = \"done\""
                )
                .replace("on = \"go\"\nignore", "on = \"goo\"\nignore")
        );
        let c = codes(&src);
        for code in [
            "unknown-guard",
            "unknown-state",
            "unknown-action",
            "unknown-event",
        ] {
            assert!(c.contains(&code), "{code} not in {c:?}");
        }
    }

    #[test]
    fn an_unknown_guard_still_counts_as_a_guard() {
        // Otherwise the `*` row after it would look dead.
        let src = format!(
            "{HEAD}{}",
            ROWS.replace("guard = \"ok\"", "guard = \"okay\"")
        );
        // Sorted by position: the declaration comes first.
        assert_eq!(codes(&src), ["unused", "unknown-guard"]);
    }
}
