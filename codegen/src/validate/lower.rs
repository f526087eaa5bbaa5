//! Stage 3, lower: the resolved and checked spec becomes an [`ir::Machine`].
//!
//! Only run on a spec with no error, so every name resolved and every rule holds; it copies
//! docs, flags and indexes into the IR and gives guards and actions the types the check found.

use crate::diagnostic::{Diagnostic, SpecError};
use crate::ir::{self, Machine, Named};
use crate::source::Sources;
use crate::spec::{SourceDecl, Spec, TimerKindDecl};

use super::check::Checked;
use super::resolve::Resolved;

/// The machine of a spec without errors; an internal error if the stages disagree.
pub(super) fn lower(
    spec: &Spec,
    sources: &Sources,
    r: &Resolved,
    checked: Checked,
) -> Result<Machine, Vec<Diagnostic>> {
    let initial = r
        .initial
        .ok_or_else(|| vec![internal("no initial state after checking")])?;
    let Checked { cells, types } = checked;
    let order = row_order(r.rows.len(), &cells).ok_or_else(|| {
        vec![
            Diagnostic::new(
                SpecError::OrderCycle,
                spec.machine.span(),
                "the declared orders of the cells",
            )
            .with_note(
                "two cells try the same rows in opposite orders; make the `[[order]]`s agree",
            ),
        ]
    })?;
    let mut position = vec![0; order.len()];
    for (new, &old) in order.iter().enumerate() {
        position[old] = new;
    }
    let cells = cells
        .into_iter()
        .map(|c| ir::Cell {
            rows: c.rows.iter().map(|&i| position[i]).collect(),
            ..c
        })
        .collect();
    let rows = {
        let mut by_file = rows(r, sources);
        let mut placed: Vec<Option<ir::Row>> = by_file.drain(..).map(Some).collect();
        order
            .iter()
            .enumerate()
            .filter_map(|(new, &old)| {
                let mut row = placed[old].take()?;
                row.index = new;
                Some(row)
            })
            .collect()
    };
    Ok(Machine {
        name: spec.machine.get_ref().name.get_ref().clone(),
        initial_actions: r.initial_actions.iter().map(|(a, _)| *a).collect(),
        concerns: spec
            .concerns
            .entries
            .iter()
            .map(|d| ir::Concern {
                decl: named(d, &d.value.get_ref().doc),
                file: sources.path_of(d.name.span().start).to_owned(),
            })
            .collect(),
        states: states(spec, r, initial),
        initial,
        events: events(spec, r),
        timers: timers(spec, r),
        guards: guards(spec, r, types.guard_takes),
        actions: actions(spec, r, &types.action_payload, &types.action_witness)?,
        rows,
        cells,
    })
}

/// The order of the rows in the row table: every cell's rows appear in the order the cell
/// tries them, and otherwise the spec's order (the first row of the spec first). So a table
/// interpreter that tries a cell's rows in table order agrees with the dispatch, and a
/// one-file spec keeps its file order. `None` when the cells' orders contradict each other.
fn row_order(n: usize, cells: &[ir::Cell]) -> Option<Vec<usize>> {
    let mut after: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut before = vec![0usize; n];
    for cell in cells {
        for w in cell.rows.windows(2) {
            if !after[w[0]].contains(&w[1]) {
                after[w[0]].push(w[1]);
                before[w[1]] += 1;
            }
        }
    }
    let mut ready: std::collections::BTreeSet<usize> = (0..n).filter(|&i| before[i] == 0).collect();
    let mut out = Vec::with_capacity(n);
    while let Some(i) = ready.pop_first() {
        out.push(i);
        for &j in &after[i] {
            before[j] -= 1;
            if before[j] == 0 {
                ready.insert(j);
            }
        }
    }
    (out.len() == n).then_some(out)
}

/// An error of the generator itself.
fn internal(message: &str) -> Diagnostic {
    Diagnostic::new(
        SpecError::Internal {
            message: message.to_owned(),
        },
        0..0,
        "while lowering this spec",
    )
}

/// A declaration's name and doc.
fn named<T>(d: &crate::spec::Decl<T>, doc: &toml::Spanned<String>) -> Named {
    Named::new(d.name.get_ref(), doc.get_ref())
}

fn states(spec: &Spec, r: &Resolved, initial: usize) -> Vec<ir::State> {
    spec.states
        .entries
        .iter()
        .enumerate()
        .map(|(i, d)| ir::State {
            decl: named(d, &d.value.get_ref().doc),
            initial: i == initial,
            terminal: r.terminal[i],
        })
        .collect()
}

/// The declared events, then one per timer.
fn events(spec: &Spec, r: &Resolved) -> Vec<ir::Event> {
    let payload = |e: usize| r.payloads[e].as_ref().map(|t| t.text.clone());
    let declared = spec.events.entries.iter().map(|d| {
        let e = d.value.get_ref();
        let source = match e.source.get_ref() {
            SourceDecl::Transport => ir::Source::Transport,
            SourceDecl::Caller => ir::Source::Caller,
        };
        (named(d, &e.doc), source, None)
    });
    let timers = spec
        .timers
        .entries
        .iter()
        .enumerate()
        .map(|(t, d)| (named(d, &d.value.get_ref().doc), ir::Source::Timer, Some(t)));
    declared
        .chain(timers)
        .enumerate()
        .map(|(e, (decl, source, timer))| ir::Event {
            decl,
            source,
            timer,
            payload: payload(e),
        })
        .collect()
}

fn timers(spec: &Spec, r: &Resolved) -> Vec<ir::Timer> {
    let n_declared = spec.events.entries.len();
    spec.timers
        .entries
        .iter()
        .enumerate()
        .map(|(t, d)| {
            let decl = d.value.get_ref();
            ir::Timer {
                decl: named(d, &decl.doc),
                scope: match decl.kind.get_ref() {
                    TimerKindDecl::State => ir::Scope::State,
                    TimerKindDecl::Keyed => ir::Scope::Keyed,
                    TimerKindDecl::Periodic => ir::Scope::Periodic,
                },
                states: r.timer_states[t].clone(),
                key: decl.key.as_ref().map(|k| k.get_ref().clone()),
                event: n_declared + t,
            }
        })
        .collect()
}

fn guards(spec: &Spec, r: &Resolved, takes: Vec<Option<String>>) -> Vec<ir::Guard> {
    spec.guards
        .entries
        .iter()
        .zip(takes)
        .enumerate()
        .map(|(g, (d, takes))| ir::Guard {
            decl: named(d, &d.value.get_ref().doc),
            takes,
            yields: r.yields[g].as_ref().map(|t| t.text.clone()),
            concern: r.file_concern[r.guard_file[g]],
        })
        .collect()
}

fn actions(
    spec: &Spec,
    r: &Resolved,
    payload_types: &[Option<String>],
    witness_types: &[Option<String>],
) -> Result<Vec<ir::Action>, Vec<Diagnostic>> {
    let mut out = Vec::new();
    for (a, d) in spec.actions.entries.iter().enumerate() {
        let takes = &r.takes[a];
        let payload = takes.payload.as_ref().map(|t| t.by);
        let witness = takes.witness.as_ref().map(|t| t.by);
        let payload_type = payload_types.get(a).cloned().flatten();
        let witness_type = witness_types.get(a).cloned().flatten();
        if payload.is_some() != payload_type.is_some()
            || witness.is_some() != witness_type.is_some()
        {
            return Err(vec![internal(
                "an action's payload or witness type is unknown after checking",
            )]);
        }
        out.push(ir::Action {
            decl: named(d, &d.value.get_ref().doc),
            payload,
            witness,
            payload_type,
            witness_type,
            concern: r.file_concern[r.action_file[a]],
        });
    }
    Ok(out)
}

fn rows(r: &Resolved, sources: &Sources) -> Vec<ir::Row> {
    r.rows
        .iter()
        .enumerate()
        .map(|(index, row)| ir::Row {
            index,
            file: sources.files()[row.file].path.clone(),
            line: row.line,
            concern: r.file_concern[row.file],
            from: row.from.clone(),
            from_star: row.from_star,
            on: row.on.clone(),
            guard: row.guard.as_ref().and_then(|g| g.0),
            actions: row.actions.clone(),
            to: row.to,
            ignore: row.ignore,
            impossible: row.impossible,
        })
        .collect()
}
