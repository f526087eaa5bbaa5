//! Stage 2, check: the rules of the table as a whole, on the resolved spec.
//!
//! Declarations (states, exactly one initial, timers' `kind`/`key`/`states`), each row's
//! outcome (`do` or `ignore`, never both; terminal states stay), every (state, event) cell
//! covered with an unguarded last row and no dead or repeated-guard row, every state reachable,
//! every declaration used, and the payload and witness typing ([`super::typing`]). Names that did
//! not resolve were reported by [`super::resolve`] and are skipped here.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use crate::diagnostic::{DeclKind, Diagnostic, SpecError};
use crate::ir::{self, Cell};
use crate::spec::{Spec, TimerKindDecl};

use super::resolve::{Decl, Resolved};
use super::typing::{self, Types};

/// What the check stage hands to lowering.
pub(super) struct Checked {
    /// Every (state, event) cell and its rows.
    pub cells: Vec<Cell>,
    /// The types guards and actions take.
    pub types: Types,
}

/// Checks every rule on `r` (resolved from `spec`), pushing errors to `errors`.
pub(super) fn check(spec: &Spec, r: &Resolved, errors: &mut Vec<Diagnostic>) -> Checked {
    declarations(spec, r, errors);
    initial_state(spec, r, errors);
    timers(spec, errors);
    too_many_rows(spec, errors);
    row_outcomes(spec, errors);
    terminal_states_stay(spec, r, errors);
    let usage = Usage::of(r);
    unused(r, &usage, errors);
    let cells = cells(r, &usage, errors);
    reachability(r, &usage, errors);
    let types = typing::check(r, errors);
    Checked { cells, types }
}

/// At least one state and one event.
fn declarations(spec: &Spec, r: &Resolved, errors: &mut Vec<Diagnostic>) {
    let machine_span = spec.machine.span();
    if r.decls.states.is_empty() {
        errors.push(Diagnostic::new(
            SpecError::NoStates,
            machine_span.clone(),
            "this machine has no `[states.<name>]`",
        ));
    }
    if r.decls.events.is_empty() {
        errors.push(Diagnostic::new(
            SpecError::NoEvents,
            machine_span,
            "this machine has no `[events.<name>]` and no `[timers.<name>]`",
        ));
    }
}

/// Exactly one state has `initial = true`.
fn initial_state(spec: &Spec, r: &Resolved, errors: &mut Vec<Diagnostic>) {
    let states = &r.decls.states;
    let flags: Vec<(usize, std::ops::Range<usize>)> = spec
        .states
        .entries
        .iter()
        .enumerate()
        .filter_map(|(i, d)| {
            let f = d.value.get_ref().initial.as_ref()?;
            f.get_ref().then(|| (i, f.span()))
        })
        .collect();
    if let Some(((first, first_span), rest)) = flags.split_first() {
        for (i, span) in rest {
            errors.push(
                Diagnostic::new(
                    SpecError::TwoInitialStates {
                        first: states[*first].name.clone(),
                        name: states[*i].name.clone(),
                    },
                    span.clone(),
                    format!("`{}` is marked initial here", states[*i].name),
                )
                .with_context(
                    first_span.clone(),
                    format!("`{}` is already initial", states[*first].name),
                )
                .with_note("exactly one state has `initial = true`"),
            );
        }
    } else if let Some(first) = states.first() {
        let span = spec.states.span.clone().unwrap_or(first.span.clone());
        errors.push(
            Diagnostic::new(SpecError::NoInitialState, span, "no state here is initial")
                .with_note(format!(
                    "add `initial = true` to the state the machine starts in, for example `[states.{}]`",
                    first.name
                )),
        );
    }
}

/// Keyed timers have a `key` and no `states`; state and periodic timers the reverse.
fn timers(spec: &Spec, errors: &mut Vec<Diagnostic>) {
    for d in &spec.timers.entries {
        let decl = d.value.get_ref();
        let name = d.name.get_ref().clone();
        let kind = *decl.kind.get_ref();
        if kind == TimerKindDecl::Keyed {
            if decl.key.is_none() {
                errors.push(
                    Diagnostic::new(
                        SpecError::KeyedTimerWithoutKey { name: name.clone() },
                        d.name.span(),
                        "declared here",
                    )
                    .with_context(decl.kind.span(), "keyed")
                    .with_note("name what it is keyed by, for example `key = \"request id\"`"),
                );
            }
            if let Some(st) = &decl.states {
                errors.push(
                    Diagnostic::new(
                        SpecError::StatesOnKeyedTimer { name },
                        st.span(),
                        "keyed timers are armed in every state",
                    )
                    .with_context(decl.kind.span(), "keyed"),
                );
            }
            continue;
        }
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
                    SpecError::TimerWithoutStates { scope, name },
                    d.name.span(),
                    "declared here",
                )
                .with_note("list the states it may stay armed in: `states = [...]`"),
            ),
            Some(st) if st.get_ref().is_empty() => errors.push(Diagnostic::new(
                SpecError::TimerWithoutStates { scope, name },
                st.span(),
                "an empty list",
            )),
            Some(_) => {}
        }
    }
}

/// Row indexes fit a `u16`.
fn too_many_rows(spec: &Spec, errors: &mut Vec<Diagnostic>) {
    if let Some(row) = spec.row.get(usize::from(u16::MAX)) {
        errors.push(Diagnostic::new(
            SpecError::TooManyRows {
                count: spec.row.len(),
            },
            row.span(),
            "this row and the ones after it do not fit a `u16` index",
        ));
    }
}

/// Each row has `do` (with an optional `to`) or is ignored, not both.
fn row_outcomes(spec: &Spec, errors: &mut Vec<Diagnostic>) {
    for row in &spec.row {
        let r = row.get_ref();
        let ignore = r.ignore.as_ref().filter(|i| *i.get_ref());
        let impossible = r.impossible.as_ref().filter(|i| *i.get_ref());
        let Some(flag) = ignore.or(impossible) else {
            if r.actions.is_none() {
                errors.push(
                    Diagnostic::new(SpecError::NoOutcome, row.span(), "this row does nothing")
                        .with_note("write `do = [...]` (with an optional `to`) or `ignore = true`"),
                );
            }
            continue;
        };
        let ignore_span = r
            .ignore
            .as_ref()
            .or(r.impossible.as_ref())
            .map_or(flag.span(), |i| i.span());
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
    }
}

/// No row leaves a terminal state.
fn terminal_states_stay(spec: &Spec, r: &Resolved, errors: &mut Vec<Diagnostic>) {
    let states = &r.decls.states;
    for (row, decl) in r.rows.iter().zip(&spec.row) {
        let (Some(t), Some(to_decl)) = (row.to, &decl.get_ref().to) else {
            continue;
        };
        for &s in &row.from {
            if r.terminal[s] && s != t {
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
}

/// Which declarations the rows (and `initial_actions`) use.
struct Usage {
    states: Vec<bool>,
    events: Vec<bool>,
    guards: Vec<bool>,
    actions: Vec<bool>,
}

impl Usage {
    fn of(r: &Resolved) -> Self {
        let d = &r.decls;
        let mut u = Usage {
            states: vec![false; d.states.len()],
            events: vec![false; d.events.len()],
            guards: vec![false; d.guards.len()],
            actions: vec![false; d.actions.len()],
        };
        for &(a, _) in &r.initial_actions {
            u.actions[a] = true;
        }
        for row in &r.rows {
            row.from
                .iter()
                .chain(&row.to)
                .for_each(|&s| u.states[s] = true);
            row.on.iter().for_each(|&e| u.events[e] = true);
            if let Some((Some(g), _)) = row.guard {
                u.guards[g] = true;
            }
            row.actions.iter().for_each(|&a| u.actions[a] = true);
        }
        u
    }
}

/// Every declaration is used.
fn unused(r: &Resolved, usage: &Usage, errors: &mut Vec<Diagnostic>) {
    let d = &r.decls;
    let n_declared = d.declared_events.len();
    let lists: [(DeclKind, &[Decl], &[bool], &str); 5] = [
        (
            DeclKind::State,
            &d.states,
            &usage.states,
            "no row has it in `from` or `to`",
        ),
        (
            DeclKind::Event,
            &d.declared_events,
            &usage.events[..n_declared],
            "no row has it in `on`",
        ),
        (
            DeclKind::Timer,
            &d.timers,
            &usage.events[n_declared..],
            "no row has its event in `on`",
        ),
        (
            DeclKind::Guard,
            &d.guards,
            &usage.guards,
            "no row has it as `guard`",
        ),
        (
            DeclKind::Action,
            &d.actions,
            &usage.actions,
            "no row has it in `do`, and `initial_actions` does not list it",
        ),
    ];
    for (kind, decls, used, note) in lists {
        for (decl, _) in decls.iter().zip(used).filter(|(_, u)| !**u) {
            errors.push(
                Diagnostic::new(
                    SpecError::Unused {
                        kind,
                        name: decl.name.clone(),
                    },
                    decl.span.clone(),
                    "declared here, never used",
                )
                .with_note(note),
            );
        }
    }
}

/// The cells as `` (`state`, `event`) `` pairs, for messages.
fn cells_text(cells: &[(usize, usize)], r: &Resolved) -> String {
    let list: Vec<String> = cells
        .iter()
        .map(|&(s, e)| {
            format!(
                "(`{}`, `{}`)",
                r.decls.states[s].name, r.decls.events[e].name
            )
        })
        .collect();
    format!(
        "{} {}",
        if cells.len() == 1 { "cell" } else { "cells" },
        list.join(", ")
    )
}

/// The problems of the cells, grouped by row so that a row covering many cells gives one error.
#[derive(Default)]
struct CellProblems {
    /// (dead row, earlier unguarded row) → cells.
    dead: BTreeMap<(usize, usize), Vec<(usize, usize)>>,
    /// Guarded last row → cells.
    no_fallback: BTreeMap<usize, Vec<(usize, usize)>>,
    /// (row, first row with the guard, guard) → cells.
    repeated: BTreeMap<(usize, usize, usize), Vec<(usize, usize)>>,
}

/// Every cell covered, by rows whose last is unguarded, without dead rows or a guard twice.
fn cells(r: &Resolved, usage: &Usage, errors: &mut Vec<Diagnostic>) -> Vec<Cell> {
    let mut cells = ir::expand_cells(
        r.decls.states.len(),
        r.decls.events.len(),
        r.rows
            .iter()
            .map(|row| (row.from.as_slice(), row.on.as_slice())),
    );
    let mut problems = CellProblems::default();
    order_cells(r, &mut cells, &mut problems, errors);
    for cell in &cells {
        if cell.rows.is_empty() {
            if usage.states[cell.state] && usage.events[cell.event] {
                errors.push(missing_cell(r, cell));
            }
            continue;
        }
        cell_rows(r, cell, &mut problems);
    }
    report_cell_problems(r, problems, errors);
    cells
}

/// Puts the rows of every cell in the order they are tried. A cell whose guarded rows all come
/// from one file keeps that file's order. A cell an `[[order]]` covers has its guarded rows in
/// the order's guard order, then its unguarded rows; a cell whose guarded rows come from several
/// files must be covered by one. Unused sequences are reported here too.
fn order_cells(
    r: &Resolved,
    cells: &mut [Cell],
    problems: &mut CellProblems,
    errors: &mut Vec<Diagnostic>,
) {
    let n_events = r.decls.events.len();
    // Guarded rows first, unguarded last; a guarded row written after an unguarded row of the
    // same cell in the same file can never fire (across files the fallback is last by rule).
    for cell in cells.iter_mut() {
        let key = (cell.state, cell.event);
        let (guarded, unguarded): (Vec<usize>, Vec<usize>) =
            cell.rows.iter().partition(|&&i| r.rows[i].guard.is_some());
        for &g in &guarded {
            let earlier = unguarded
                .iter()
                .find(|&&u| u < g && r.rows[u].file == r.rows[g].file);
            if let Some(&u) = earlier {
                problems.dead.entry((g, u)).or_default().push(key);
            }
        }
        cell.rows = guarded.into_iter().chain(unguarded).collect();
    }
    let mut covered: Vec<Option<usize>> = vec![None; cells.len()];
    let mut overlap: BTreeMap<usize, Vec<(usize, usize)>> = BTreeMap::new();
    let mut incomplete: BTreeMap<(usize, usize), Vec<(usize, usize)>> = BTreeMap::new();
    let mut unordered: BTreeMap<usize, Vec<(usize, usize)>> = BTreeMap::new();
    for (o, order) in r.orders.iter().enumerate() {
        let mut seen: Vec<usize> = Vec::new();
        let mut guards_used: BTreeSet<usize> = BTreeSet::new();
        for (g, span) in &order.guards {
            if seen.contains(g) {
                errors.push(stray(r, *g, span.clone()));
            }
            seen.push(*g);
        }
        for &st in &order.from {
            for &ev in &order.on {
                let c = st * n_events + ev;
                if covered[c].replace(o).is_some() {
                    overlap.entry(o).or_default().push((st, ev));
                }
                let cell = &mut cells[c];
                let (mut guarded, unguarded): (Vec<usize>, Vec<usize>) =
                    cell.rows.iter().partition(|&&i| r.rows[i].guard.is_some());
                for &i in &guarded {
                    if let Some((Some(g), _)) = r.rows[i].guard {
                        guards_used.insert(g);
                        if !seen.contains(&g) {
                            incomplete.entry((o, i)).or_default().push((st, ev));
                        }
                    }
                }
                guarded.sort_by_key(|&i| match r.rows[i].guard {
                    Some((Some(g), _)) => seen.iter().position(|&x| x == g).unwrap_or(usize::MAX),
                    _ => usize::MAX,
                });
                cell.rows = guarded.into_iter().chain(unguarded).collect();
            }
        }
        for (g, span) in &order.guards {
            if !guards_used.contains(g) {
                errors.push(stray(r, *g, span.clone()));
            }
        }
    }
    for (c, cell) in cells.iter().enumerate() {
        if covered[c].is_some() {
            continue;
        }
        let files: BTreeSet<usize> = cell
            .rows
            .iter()
            .filter(|&&i| r.rows[i].guard.is_some())
            .map(|&i| r.rows[i].file)
            .collect();
        if files.len() > 1
            && let Some(&first) = cell.rows.first()
        {
            unordered
                .entry(first)
                .or_default()
                .push((cell.state, cell.event));
        }
    }
    for (o, cells_of) in overlap {
        errors.push(Diagnostic::new(
            SpecError::OrderOverlap {
                cells: cells_text(&cells_of, r),
            },
            r.orders[o].span.clone(),
            "a second `[[order]]` covers it here",
        ));
    }
    for ((o, i), cells_of) in incomplete {
        let Some((Some(g), span)) = r.rows[i].guard.clone() else {
            continue;
        };
        errors.push(
            Diagnostic::new(
                SpecError::OrderIncomplete {
                    guard: r.decls.guards[g].name.clone(),
                    cells: cells_text(&cells_of, r),
                },
                span,
                "this row's guard",
            )
            .with_context(r.orders[o].span.clone(), "the order of its cell")
            .with_note("list every guard of the cell's guarded rows in `guards`"),
        );
    }
    for (first, cells_of) in unordered {
        errors.push(
            Diagnostic::new(
                SpecError::UnorderedCell {
                    cells: cells_text(&cells_of, r),
                },
                r.rows[first].header.clone(),
                "the first of its rows",
            )
            .with_note(
                "rows of one cell written in several files are not ordered by file order: add an \
                 `[[order]]` with `from`, `on` and `guards` to the manifest",
            ),
        );
    }
    for (d, used) in r.sequences_decls.iter().zip(&r.sequences_used) {
        if !used {
            errors.push(Diagnostic::new(
                SpecError::UnusedSequence {
                    name: d.name.clone(),
                },
                d.span.clone(),
                "declared here",
            ));
        }
    }
}

/// A guard an `[[order]]` lists twice or uselessly.
fn stray(r: &Resolved, g: usize, span: std::ops::Range<usize>) -> Diagnostic {
    Diagnostic::new(
        SpecError::OrderStray {
            guard: r.decls.guards[g].name.clone(),
        },
        span,
        "here",
    )
}

/// A cell no row covers.
fn missing_cell(r: &Resolved, cell: &Cell) -> Diagnostic {
    let (state, event) = (&r.decls.states[cell.state], &r.decls.events[cell.event]);
    Diagnostic::new(
        SpecError::MissingCell {
            state: state.name.clone(),
            event: event.name.clone(),
        },
        state.span.clone(),
        format!("state `{}` declared here", state.name),
    )
    .with_context(event.span.clone(), format!("event `{}` declared here", event.name))
    .with_note(format!(
        "every (state, event) cell needs a row: add one with `from = \"{}\"` and `on = \"{}\"`, and `do = [...]` or `ignore = true`",
        state.name, event.name
    ))
}

/// The rows of one covered cell: dead rows, a missing fallback, a guard used twice.
fn cell_rows(r: &Resolved, cell: &Cell, problems: &mut CellProblems) {
    let key = (cell.state, cell.event);
    let fallback = cell.rows.iter().position(|&i| r.rows[i].guard.is_none());
    match fallback {
        Some(p) => {
            for &i in &cell.rows[p + 1..] {
                problems
                    .dead
                    .entry((i, cell.rows[p]))
                    .or_default()
                    .push(key);
            }
        }
        None => {
            if let Some(&last) = cell.rows.last() {
                problems.no_fallback.entry(last).or_default().push(key);
            }
        }
    }
    let live = &cell.rows[..fallback.map_or(cell.rows.len(), |p| p + 1)];
    let mut first_use: BTreeMap<usize, usize> = BTreeMap::new();
    for &i in live {
        if let Some((Some(g), _)) = r.rows[i].guard {
            match first_use.get(&g) {
                Some(&first) => problems
                    .repeated
                    .entry((i, first, g))
                    .or_default()
                    .push(key),
                None => {
                    first_use.insert(g, i);
                }
            }
        }
    }
}

/// The grouped cell problems as diagnostics.
fn report_cell_problems(r: &Resolved, p: CellProblems, errors: &mut Vec<Diagnostic>) {
    let rows = &r.rows;
    let guard_span = |i: usize| {
        rows[i]
            .guard
            .as_ref()
            .map_or(rows[i].header.clone(), |g| g.1.clone())
    };
    for ((i, earlier), cells_of) in p.dead {
        let (row, prev) = (&rows[i], &rows[earlier]);
        errors.push(
            Diagnostic::new(
                SpecError::DuplicateCell {
                    cells: cells_text(&cells_of, r),
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
    for (i, cells_of) in p.no_fallback {
        let row = &rows[i];
        errors.push(
            Diagnostic::new(
                SpecError::NoFallback {
                    cells: cells_text(&cells_of, r),
                },
                guard_span(i),
                "when this guard is false, no row handles the event",
            )
            .with_context(row.from_span.clone(), "")
            .with_context(row.on_span.clone(), "")
            .with_note("the last row of every cell has no guard: add one after this row (`do = [...]` or `ignore = true`)"),
        );
    }
    for ((i, first, g), cells_of) in p.repeated {
        errors.push(
            Diagnostic::new(
                SpecError::RepeatedGuard {
                    guard: r.decls.guards[g].name.clone(),
                    cells: cells_text(&cells_of, r),
                },
                guard_span(i),
                "used again here: this row only runs when it was already false",
            )
            .with_context(guard_span(first), "first used here"),
        );
    }
}

/// Every used state is reachable from the initial state.
fn reachability(r: &Resolved, usage: &Usage, errors: &mut Vec<Diagnostic>) {
    let Some(init) = r.initial else {
        return;
    };
    let states = &r.decls.states;
    let mut edges: BTreeMap<usize, BTreeSet<usize>> = BTreeMap::new();
    for row in &r.rows {
        if let Some(t) = row.to {
            for &s in &row.from {
                edges.entry(s).or_default().insert(t);
            }
        }
    }
    let mut reached = vec![false; states.len()];
    reached[init] = true;
    let mut queue = VecDeque::from([init]);
    while let Some(s) = queue.pop_front() {
        for &t in edges.get(&s).into_iter().flatten() {
            if !reached[t] {
                reached[t] = true;
                queue.push_back(t);
            }
        }
    }
    for (s, d) in states.iter().enumerate() {
        if !reached[s] && usage.states[s] {
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
