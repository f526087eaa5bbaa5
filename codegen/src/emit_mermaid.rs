//! Emits the Mermaid `stateDiagram-v2` of a validated machine.
//!
//! One edge per state-changing row and from-state, labelled with the row's events (joined with
//! `, `) and its guard in brackets; identical edges are drawn once. Rows that stay in their state
//! are not drawn (the table has them). Not a layout: Mermaid lays it out.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use crate::ir::Machine;

/// The diagram of `m`; `path` names the spec in a comment line.
pub fn emit(m: &Machine, path: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "stateDiagram-v2");
    let _ = writeln!(
        out,
        "    %% Generated from {path} by mcp-codegen; do not edit."
    );
    let _ = writeln!(
        out,
        "    %% Self-loops (rows that stay in their state) are not drawn: see the table."
    );
    let _ = writeln!(out, "    [*] --> {}", m.states[m.initial].decl.name);
    let mut seen = BTreeSet::new();
    for row in &m.rows {
        let Some(to) = row.to else { continue };
        let mut label = row
            .on
            .iter()
            .map(|&e| m.events[e].decl.name.as_str())
            .collect::<Vec<_>>()
            .join(", ");
        if let Some(g) = row.guard {
            let _ = write!(label, " [{}]", m.guards[g].decl.name);
        }
        for &from in &row.from {
            if from == to {
                continue;
            }
            let line = format!(
                "    {} --> {} : {label}",
                m.states[from].decl.name, m.states[to].decl.name
            );
            if seen.insert(line.clone()) {
                let _ = writeln!(out, "{line}");
            }
        }
    }
    for s in m.states.iter().filter(|s| s.terminal) {
        let _ = writeln!(out, "    {} --> [*]", s.decl.name);
    }
    out
}
