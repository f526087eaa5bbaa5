//! Row and cell coverage: which rows of the table, and which (state, event) cells, fired
//! while exploring (bitsets shared by the worker threads), and the summaries a run reports
//! (every row not marked impossible, and every cell with such a row, must fire).

use std::sync::atomic::{AtomicU64, Ordering};

use mcp_machine::generated::EventKind;
use mcp_machine::{ROWS, State, Step};

/// Rows and (state, event) cells fired during exploration (bitsets).
#[derive(Debug, Default)]
pub struct Coverage {
    rows: Vec<AtomicU64>,
    cells: Vec<AtomicU64>,
}

fn bits(n: usize) -> Vec<AtomicU64> {
    (0..n.div_ceil(64)).map(|_| AtomicU64::new(0)).collect()
}

fn set(bits: &[AtomicU64], i: usize) {
    if let Some(word) = bits.get(i / 64) {
        word.fetch_or(1 << (i % 64), Ordering::Relaxed);
    }
}

fn get(bits: &[AtomicU64], i: usize) -> bool {
    bits.get(i / 64)
        .is_some_and(|w| w.load(Ordering::Relaxed) & (1 << (i % 64)) != 0)
}

/// The index of a (state, event) cell in [`Coverage`].
pub fn cell_index(state: State, event: EventKind) -> usize {
    let s = State::ALL.iter().position(|x| *x == state).unwrap_or(0);
    let e = EventKind::ALL.iter().position(|x| *x == event).unwrap_or(0);
    s * EventKind::ALL.len() + e
}

impl Coverage {
    /// An empty coverage with one bit per row and per cell of the table.
    pub fn for_table() -> Self {
        Coverage {
            rows: bits(ROWS.len()),
            cells: bits(State::ALL.len() * EventKind::ALL.len()),
        }
    }

    pub(crate) fn mark(&self, step: &Step) {
        set(&self.rows, usize::from(step.row));
        set(&self.cells, cell_index(step.from, step.event));
    }

    /// Whether the row fired.
    pub fn fired(&self, row: usize) -> bool {
        get(&self.rows, row)
    }

    /// Whether some row fired in the cell.
    pub fn cell_fired(&self, state: State, event: EventKind) -> bool {
        get(&self.cells, cell_index(state, event))
    }

    /// Adds another coverage into this one.
    pub fn merge(&self, other: &Coverage) {
        for (a, b) in self.rows.iter().zip(&other.rows) {
            a.fetch_or(b.load(Ordering::Relaxed), Ordering::Relaxed);
        }
        for (a, b) in self.cells.iter().zip(&other.cells) {
            a.fetch_or(b.load(Ordering::Relaxed), Ordering::Relaxed);
        }
    }
}

/// The cells that must fire (those with a row not marked impossible) and those that did not.
pub fn cell_summary(coverage: &Coverage) -> (usize, usize, Vec<String>) {
    let mut fired = 0;
    let mut total = 0;
    let mut missing = Vec::new();
    for state in mcp_machine::State::ALL {
        for event in mcp_machine::generated::EventKind::ALL {
            let possible = ROWS
                .iter()
                .any(|r| r.from.contains(&state) && r.on.contains(&event) && !r.impossible);
            if !possible {
                continue;
            }
            total += 1;
            if coverage.cell_fired(state, event) {
                fired += 1;
            } else {
                missing.push(format!("cell ({}, {})", state.name(), event.name()));
            }
        }
    }
    (fired, total, missing)
}

/// The rows that must fire (all but those marked impossible) and those that did.
pub fn coverage_summary(coverage: &Coverage) -> (usize, usize, Vec<String>) {
    let mut fired = 0;
    let mut total = 0;
    let mut missing = Vec::new();
    for (i, row) in ROWS.iter().enumerate() {
        if row.impossible {
            continue;
        }
        total += 1;
        if coverage.fired(i) {
            fired += 1;
        } else {
            let from: Vec<_> = row.from.iter().map(|s| s.name()).collect();
            let on: Vec<_> = row.on.iter().map(|e| e.name()).collect();
            missing.push(format!(
                "row #{i} (line {}): {from:?} on {on:?} guard {:?}",
                row.line, row.guard
            ));
        }
    }
    (fired, total, missing)
}
