//! Emits the Markdown table of a validated machine: one line per `[[row]]` as written.
//!
//! Columns `#`, `line`, `from`, `on`, `guard`, `do`, `to`. `from = "*"` stays `*`; an omitted
//! `to` reads `(stay)`; an ignore row reads `ignore` in `do`. Not expanded into cells: the
//! generated `cell_rows` has those.

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
        let actions = if r.impossible {
            "impossible".to_owned()
        } else if r.ignore {
            "ignore".to_owned()
        } else {
            r.actions
                .iter()
                .map(|&a| m.actions[a].decl.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let to = match (r.ignore, r.to) {
            (true, _) => "",
            (false, Some(t)) => m.states[t].decl.name.as_str(),
            (false, None) => "(stay)",
        };
        let _ = writeln!(
            out,
            "| {} | {} | {from} | {on} | {guard} | {actions} | {to} |",
            r.index, r.line
        );
    }
    out
}
