//! Emits the Markdown views of a validated machine: [`emit`], one line per `[[row]]` as written;
//! [`emit_cells`], the per-state view (for each state and event, the rows in the order they are
//! tried), which reviewers read instead of the spec files.
//!
//! Columns `#`, `line` (`file:line` for a split spec), `from`, `on`, `guard`, `do`, `to`.
//! `from = "*"` stays `*`; an omitted `to` reads `(stay)`; an ignore row reads `ignore` in `do`.

use std::fmt::Write as _;

use crate::ir::Machine;

/// The table of `m`; `path` names the spec in the header comment.
pub fn emit(m: &Machine, path: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "<!-- Generated from {path} by mcp-codegen; do not edit. -->"
    );
    let _ = writeln!(out, "# The `{}` transition table", m.name);
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "Rows of one (state, event) cell are tried in file order; the first whose guard holds (or \
         that has none) fires. Initial state: `{}`. Initial actions: {}.",
        m.states[m.initial].decl.name,
        if m.initial_actions.is_empty() {
            "none".to_owned()
        } else {
            m.initial_actions
                .iter()
                .map(|&a| m.actions[a].decl.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        }
    );
    let _ = writeln!(out);
    let _ = writeln!(out, "| # | line | from | on | guard | do | to |");
    let _ = writeln!(out, "|---|---|---|---|---|---|---|");
    for r in &m.rows {
        let from = if r.from_star {
            "*".to_owned()
        } else {
            r.from
                .iter()
                .map(|&s| m.states[s].decl.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let on =
            r.on.iter()
                .map(|&e| m.events[e].decl.name.as_str())
                .collect::<Vec<_>>()
                .join(", ");
        let guard = r.guard.map_or("", |g| m.guards[g].decl.name.as_str());
        let actions = actions_text(m, r);
        let to = match (r.ignore, r.to) {
            (true, _) => "",
            (false, Some(t)) => m.states[t].decl.name.as_str(),
            (false, None) => "(stay)",
        };
        let _ = writeln!(
            out,
            "| {} | {} | {from} | {on} | {guard} | {actions} | {to} |",
            r.index,
            place(m, r)
        );
    }
    out
}

/// What a row does, for a table cell: `impossible`, `ignore`, or its actions in order.
fn actions_text(m: &Machine, r: &crate::ir::Row) -> String {
    if r.impossible {
        "impossible".to_owned()
    } else if r.ignore {
        "ignore".to_owned()
    } else {
        r.actions
            .iter()
            .map(|&a| m.actions[a].decl.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Where a row is written: its line, or `file:line` in a split spec.
fn place(m: &Machine, r: &crate::ir::Row) -> String {
    if m.concerns.is_empty() {
        r.line.to_string()
    } else {
        format!("{}:{}", r.file, r.line)
    }
}

/// The per-state view of `m`: one section per state, one line per row of each of its cells in
/// the order the rows are tried; `path` names the spec in the header comment.
pub fn emit_cells(m: &Machine, path: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "<!-- Generated from {path} by mcp-codegen (`cargo run -p mcp-codegen -- cells`); do not edit. -->"
    );
    let _ = writeln!(out, "# The `{}` table, state by state", m.name);
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "For each state and event, the rows in the order they are tried: the first whose guard \
         holds (or that has none) fires, runs its actions in order and moves to its target. \
         `ignore` drops the event; `impossible` drops it too, and the model checker proves it \
         never happens. The last column says where the row is written."
    );
    for (s, state) in m.states.iter().enumerate() {
        let _ = writeln!(out);
        let _ = writeln!(out, "## `{}`", state.decl.name);
        let _ = writeln!(out);
        let _ = writeln!(out, "{}", state.decl.doc.replace('\n', " "));
        let _ = writeln!(out);
        let _ = writeln!(out, "| on | guard | do | to | row |");
        let _ = writeln!(out, "|---|---|---|---|---|");
        for e in 0..m.events.len() {
            let cell = m.cell(s, e);
            for (k, &ri) in cell.rows.iter().enumerate() {
                let r = &m.rows[ri];
                let on = if k == 0 {
                    format!("`{}`", m.events[e].decl.name)
                } else {
                    String::new()
                };
                let guard = r
                    .guard
                    .map_or(String::new(), |g| format!("`{}`", m.guards[g].decl.name));
                let actions = actions_text(m, r);
                let to = match (r.ignore, r.to) {
                    (true, _) => "",
                    (false, Some(t)) if t != s => m.states[t].decl.name.as_str(),
                    (false, _) => "",
                };
                let _ = writeln!(
                    out,
                    "| {on} | {guard} | {actions} | {to} | {} |",
                    place(m, r)
                );
            }
        }
    }
    out
}
