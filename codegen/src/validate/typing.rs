//! Part of stage 2, check: the types rows move around, and who owns them.
//!
//! A row's events carry a payload (`payload = "T"` on the event or timer); its guard gets `&T` and
//! may yield a witness (`yields = "W"`: it returns `Option<W>`); its actions may take either, by
//! `ref` or by `move`. The rules: a guard gets one payload type (or none) on all its rows; a row
//! whose guard or actions use the payload has one payload type; an action gets one payload type
//! and one witness type everywhere, and only in rows that have them; in a row, a value moved by
//! an action is not used by a later one; a yielded witness is taken by some action; initial
//! actions take nothing. The types found are what lowering gives the guards and actions.

use std::ops::Range;

use crate::diagnostic::{Diagnostic, SpecError};
use crate::ir::Use;

use super::resolve::{Resolved, Row, Taking};

/// The types guards and actions take, as the rows determine them.
#[derive(Default)]
pub(super) struct Types {
    /// The payload type each guard gets (`None`: its events carry none).
    pub guard_takes: Vec<Option<String>>,
    /// The payload type each action taking the payload gets.
    pub action_payload: Vec<Option<String>>,
    /// The witness type each action taking the witness gets.
    pub action_witness: Vec<Option<String>>,
}

/// The payload of a row: one type (or none) for all its events, or unknown (events disagree).
type RowPayload<'a> = Option<Option<&'a str>>;

/// Checks the typing rules, pushing errors to `errors`; the types found.
pub(super) fn check(r: &Resolved, errors: &mut Vec<Diagnostic>) -> Types {
    let payloads: Vec<RowPayload<'_>> = r
        .rows
        .iter()
        .map(|row| row_payload(r, row, errors))
        .collect();
    let mut types = Types {
        guard_takes: guard_payloads(r, &payloads, errors),
        ..Types::default()
    };
    types.action_payload = action_payloads(r, &payloads, errors);
    types.action_witness = action_witnesses(r, errors);
    for row in &r.rows {
        ownership(r, row, errors);
    }
    unused_witnesses(r, errors);
    initial_actions(r, errors);
    types
}

/// The payload type of event `e`.
fn payload(r: &Resolved, e: usize) -> Option<&str> {
    r.payloads[e].as_ref().map(|t| t.text.as_str())
}

/// `` `T` `` or `no payload`, for labels.
fn carries(t: Option<&str>) -> String {
    t.map_or_else(
        || "carries no payload".to_owned(),
        |t| format!("carries `{t}`"),
    )
}

/// The payload of one row; an error when its events disagree and its guard or actions use it.
fn row_payload<'a>(r: &'a Resolved, row: &Row, errors: &mut Vec<Diagnostic>) -> RowPayload<'a> {
    let first = *row.on.first()?;
    let Some(j) = row
        .on
        .iter()
        .position(|&e| payload(r, e) != payload(r, first))
    else {
        return Some(payload(r, first));
    };
    let uses = row.guard.is_some() || row.actions.iter().any(|&a| r.takes[a].payload.is_some());
    if uses {
        let (e, names) = (row.on[j], &r.decls.events);
        errors.push(
            Diagnostic::new(
                SpecError::RowPayloadMismatch {
                    first_event: names[first].name.clone(),
                    first: payload(r, first).map(str::to_owned),
                    event: names[e].name.clone(),
                    payload: payload(r, e).map(str::to_owned),
                },
                row.on_spans[j].clone(),
                carries(payload(r, e)),
            )
            .with_context(row.on_spans[0].clone(), carries(payload(r, first)))
            .with_note(
                "the guard and the actions of a row get one payload type: split the row by event",
            ),
        );
    }
    None
}

/// The payload type of each guard: the same on every row using it.
fn guard_payloads(
    r: &Resolved,
    payloads: &[RowPayload<'_>],
    errors: &mut Vec<Diagnostic>,
) -> Vec<Option<String>> {
    (0..r.decls.guards.len())
        .map(|g| {
            let mut uses = r
                .rows
                .iter()
                .zip(payloads)
                .filter_map(|(row, p)| match row.guard {
                    Some((Some(used), _)) if used == g => p.map(|p| (row, p)),
                    _ => None,
                });
            let (first_row, first) = uses.next()?;
            if let Some((row, p)) = uses.find(|&(_, p)| p != first) {
                errors.push(guard_mismatch(r, g, (first_row, first), (row, p)));
            }
            first.map(str::to_owned)
        })
        .collect()
}

/// Guard `g` gets payload `first` on one row and `p` on a later one.
fn guard_mismatch(
    r: &Resolved,
    g: usize,
    (first_row, first): (&Row, Option<&str>),
    (row, p): (&Row, Option<&str>),
) -> Diagnostic {
    let event = |row: &Row| r.decls.events[row.on[0]].name.clone();
    Diagnostic::new(
        SpecError::GuardPayloadMismatch {
            guard: r.decls.guards[g].name.clone(),
            first_event: event(first_row),
            first: first.map(str::to_owned),
            event: event(row),
            payload: p.map(str::to_owned),
        },
        row.on_span.clone(),
        format!("`{}` {}", event(row), carries(p)),
    )
    .with_context(
        first_row.on_span.clone(),
        format!("`{}` {}", event(first_row), carries(first)),
    )
    .with_note("a guard gets `&T` of its rows' events: they all carry the same `T`, or none")
}

/// Where action `a` is written in `row` (the first time).
fn action_span(row: &Row, a: usize) -> Range<usize> {
    let i = row.actions.iter().position(|&x| x == a).unwrap_or(0);
    row.action_spans
        .get(i)
        .cloned()
        .unwrap_or(row.header.clone())
}

/// The rows using action `a`, with their index.
fn rows_using(r: &Resolved, a: usize) -> impl Iterator<Item = (usize, &Row)> {
    r.rows
        .iter()
        .enumerate()
        .filter(move |(_, row)| row.actions.contains(&a))
}

/// The payload type of each action that takes the payload: present, and one type everywhere.
fn action_payloads(
    r: &Resolved,
    payloads: &[RowPayload<'_>],
    errors: &mut Vec<Diagnostic>,
) -> Vec<Option<String>> {
    (0..r.decls.actions.len())
        .map(|a| {
            let taking = r.takes[a].payload.as_ref()?;
            let mut first: Option<(&Row, &str)> = None;
            for (i, row) in rows_using(r, a) {
                match (payloads[i], first) {
                    (None, _) => {}
                    (Some(None), _) => errors.push(no_payload(r, a, row, taking)),
                    (Some(Some(t)), None) => first = Some((row, t)),
                    (Some(Some(t)), Some((first_row, f))) if t != f => {
                        errors.push(type_mismatch(r, a, "payload", (first_row, f), (row, t)));
                    }
                    (Some(Some(_)), Some(_)) => {}
                }
            }
            first.map(|(_, t)| t.to_owned())
        })
        .collect()
}

/// Action `a` takes the payload in `row`, whose events carry none.
fn no_payload(r: &Resolved, a: usize, row: &Row, taking: &Taking) -> Diagnostic {
    let event = &r.decls.events[row.on[0]].name;
    Diagnostic::new(
        SpecError::ActionWithoutPayload {
            action: r.decls.actions[a].name.clone(),
            event: event.clone(),
        },
        action_span(row, a),
        "takes the payload",
    )
    .with_context(row.on_span.clone(), format!("`{event}` carries no payload"))
    .with_context(taking.span.clone(), "declared here")
}

/// Action `a` takes a `value` of type `f` on one row and `t` on a later one.
fn type_mismatch(
    r: &Resolved,
    a: usize,
    value: &'static str,
    (first_row, f): (&Row, &str),
    (row, t): (&Row, &str),
) -> Diagnostic {
    let action = r.decls.actions[a].name.clone();
    let (first, first_line) = (f.to_owned(), first_row.line as usize);
    let error = if value == "payload" {
        SpecError::ActionPayloadMismatch {
            action,
            first,
            first_line,
            payload: t.to_owned(),
        }
    } else {
        SpecError::WitnessMismatch {
            action,
            first,
            first_line,
            witness: t.to_owned(),
        }
    };
    Diagnostic::new(error, action_span(row, a), format!("gets `{t}` here"))
        .with_context(action_span(first_row, a), format!("gets `{f}` here"))
        .with_note(format!(
            "an action that takes the {value} gets one type on every row that runs it"
        ))
}

/// The witness type of each action that takes the witness: a guard yields it on every row,
/// one type everywhere.
fn action_witnesses(r: &Resolved, errors: &mut Vec<Diagnostic>) -> Vec<Option<String>> {
    (0..r.decls.actions.len())
        .map(|a| {
            let taking = r.takes[a].witness.as_ref()?;
            let mut first: Option<(&Row, &str)> = None;
            for (_, row) in rows_using(r, a) {
                let (g, guard_span) = match &row.guard {
                    None => {
                        errors.push(witness_without_guard(r, a, row, taking));
                        continue;
                    }
                    Some((None, _)) => continue,
                    Some((Some(g), span)) => (*g, span.clone()),
                };
                let Some(t) = r.yields[g].as_ref().map(|y| y.text.as_str()) else {
                    errors.push(not_yielded(r, a, g, row, guard_span));
                    continue;
                };
                match first {
                    None => first = Some((row, t)),
                    Some((first_row, f)) if f != t => {
                        errors.push(type_mismatch(r, a, "witness", (first_row, f), (row, t)));
                    }
                    Some(_) => {}
                }
            }
            first.map(|(_, t)| t.to_owned())
        })
        .collect()
}

/// Action `a` takes the witness in a row without a guard.
fn witness_without_guard(r: &Resolved, a: usize, row: &Row, taking: &Taking) -> Diagnostic {
    Diagnostic::new(
        SpecError::WitnessWithoutGuard {
            action: r.decls.actions[a].name.clone(),
        },
        action_span(row, a),
        "takes the witness",
    )
    .with_context(taking.span.clone(), "declared here")
    .with_note("only a guard with `yields` gives a row a witness; a row without a guard has none")
}

/// Action `a` takes the witness in a row whose guard `g` yields none.
fn not_yielded(r: &Resolved, a: usize, g: usize, row: &Row, guard: Range<usize>) -> Diagnostic {
    let name = &r.decls.guards[g].name;
    Diagnostic::new(
        SpecError::WitnessNotYielded {
            action: r.decls.actions[a].name.clone(),
            guard: name.clone(),
        },
        action_span(row, a),
        "takes the witness",
    )
    .with_context(guard, format!("`{name}` has no `yields`"))
    .with_note(format!(
        "add `yields = \"<type>\"` to `[guards.{name}]`, or drop `witness` from the action"
    ))
}

/// In one row: after an action moves the payload (or the witness), no later action uses it.
fn ownership(r: &Resolved, row: &Row, errors: &mut Vec<Diagnostic>) {
    for value in ["payload", "witness"] {
        let mut moved: Option<(usize, Range<usize>)> = None;
        for (&a, span) in row.actions.iter().zip(&row.action_spans) {
            let takes = &r.takes[a];
            let Some(taking) = (if value == "payload" {
                &takes.payload
            } else {
                &takes.witness
            }) else {
                continue;
            };
            if let Some((by, by_span)) = &moved {
                errors.push(
                    Diagnostic::new(
                        SpecError::UseAfterMove {
                            value,
                            moved_by: r.decls.actions[*by].name.clone(),
                            used_by: r.decls.actions[a].name.clone(),
                        },
                        span.clone(),
                        format!("uses the {value}"),
                    )
                    .with_context(by_span.clone(), format!("moves the {value}"))
                    .with_note(format!(
                        "a `move` is the last use of the {value} in its row: reorder `do`, or take it by `ref`"
                    )),
                );
            }
            if taking.by == Use::Move {
                moved = Some((a, span.clone()));
            }
        }
    }
}

/// A guard that yields a witness is used on some row whose actions take it.
fn unused_witnesses(r: &Resolved, errors: &mut Vec<Diagnostic>) {
    for (g, yields) in r.yields.iter().enumerate() {
        let Some(ty) = yields else {
            continue;
        };
        let mut rows = r
            .rows
            .iter()
            .filter(|row| matches!(row.guard, Some((Some(used), _)) if used == g))
            .peekable();
        if rows.peek().is_none() {
            continue; // an unused guard: reported as such
        }
        let taken = rows.any(|row| row.actions.iter().any(|&a| r.takes[a].witness.is_some()));
        if !taken {
            errors.push(
                Diagnostic::new(
                    SpecError::UnusedWitness {
                        guard: r.decls.guards[g].name.clone(),
                        witness: ty.text.clone(),
                    },
                    ty.span.clone(),
                    "no action takes this witness",
                )
                .with_note("a guard without `yields` returns `bool`"),
            );
        }
    }
}

/// Initial actions run before any event: they take no payload and no witness.
fn initial_actions(r: &Resolved, errors: &mut Vec<Diagnostic>) {
    for (a, span) in &r.initial_actions {
        let takes = &r.takes[*a];
        for (value, taking) in [("payload", &takes.payload), ("witness", &takes.witness)] {
            if let Some(taking) = taking {
                errors.push(
                    Diagnostic::new(
                        SpecError::InitialActionTakes {
                            action: r.decls.actions[*a].name.clone(),
                            value,
                        },
                        span.clone(),
                        "an initial action",
                    )
                    .with_context(taking.span.clone(), format!("takes the {value}")),
                );
            }
        }
    }
}
