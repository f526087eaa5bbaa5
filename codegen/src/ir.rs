//! The lowered machine: names resolved to indexes, rows expanded into cells.
//!
//! A [`Machine`] is only built from a spec that passed [`crate::validate`], so every index is in
//! range, every cell has at least one row, and the last row of every cell has no guard; every
//! guard gets one payload type (or none) and every action that takes the payload or the witness
//! has its type, the same on every row that runs it. Types are canonical Rust type paths
//! ([`crate::rust_type`]). Order is
//! the spec's everywhere (declarations and rows in file order, the files of a split spec in the
//! manifest's order; the rows of a cell in their declared order), so everything emitted from it
//! is byte-stable. It holds no spans: diagnostics are done by then.

/// A declared name with its Rust spelling and its doc.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Named {
    /// The name as written in the spec (snake_case).
    pub name: String,
    /// The CamelCase variant name.
    pub camel: String,
    /// The doc text (possibly several lines).
    pub doc: String,
}

impl Named {
    /// A name, its CamelCase form computed with [`camel_case`], and its doc.
    pub fn new(name: &str, doc: &str) -> Self {
        Named {
            name: name.to_owned(),
            camel: camel_case(name),
            doc: doc.to_owned(),
        }
    }
}

/// A concern: one file of a split spec, with the guards and actions it declares (one handler
/// trait each).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Concern {
    /// Name (the file's stem) and doc.
    pub decl: Named,
    /// The file's path, as given.
    pub file: String,
}

/// A state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct State {
    /// Name and doc.
    pub decl: Named,
    /// `initial = true`.
    pub initial: bool,
    /// `terminal = true`.
    pub terminal: bool,
}

/// Where an event comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Source {
    /// The transport (frames, up/down, send outcomes).
    Transport,
    /// A caller of the client.
    Caller,
    /// A timer of the spec.
    Timer,
}

/// An event kind: the declared events first, then one per timer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// Name and doc.
    pub decl: Named,
    /// Its source.
    pub source: Source,
    /// The timer that fires it (index in [`Machine::timers`]), for timer events.
    pub timer: Option<usize>,
    /// The Rust type it carries (canonical text, see [`crate::rust_type`]), if any.
    pub payload: Option<String>,
}

/// How an action takes a value of its row (the event's payload, the guard's witness).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Use {
    /// By reference: `&T`.
    Ref,
    /// By value: `T` (the last use of the value in its row).
    Move,
}

/// A guard: a `Handlers` method that says whether a row fires.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Guard {
    /// Name and doc.
    pub decl: Named,
    /// The payload type of the events of its rows (it gets `&T`); `None`: they carry none.
    pub takes: Option<String>,
    /// `yields`: the witness type it returns (`Option<T>`); `None`: it returns `bool`.
    pub yields: Option<String>,
    /// The concern that declares it (`None` in a one-file spec).
    pub concern: Option<usize>,
}

/// An action: a `Handlers` method a row runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Action {
    /// Name and doc.
    pub decl: Named,
    /// `payload`: how it takes its row's event payload, if it does.
    pub payload: Option<Use>,
    /// `witness`: how it takes its row's guard's witness, if it does.
    pub witness: Option<Use>,
    /// The payload type, exactly when `payload` is set (one type on every row using it).
    pub payload_type: Option<String>,
    /// The witness type, exactly when `witness` is set (one type on every row using it).
    pub witness_type: Option<String>,
    /// The concern that declares it (`None` in a one-file spec).
    pub concern: Option<usize>,
}

/// How long a timer lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Scope {
    /// Cancelled on leaving its states.
    State,
    /// One per key.
    Keyed,
    /// Re-armed while in its states.
    Periodic,
}

/// A timer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Timer {
    /// Name and doc.
    pub decl: Named,
    /// Its scope.
    pub scope: Scope,
    /// Where it may stay armed (state indexes); empty for keyed timers.
    pub states: Vec<usize>,
    /// What keyed timers are keyed by.
    pub key: Option<String>,
    /// The event it fires (index in [`Machine::events`]).
    pub event: usize,
}

/// One row as written, names resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    /// Position in the spec (0-based; the files of a split spec in the manifest's order).
    pub index: usize,
    /// The path of its file, as given.
    pub file: String,
    /// Line of its `[[row]]` header (1-based, within its file).
    pub line: u32,
    /// The concern whose file holds it (`None` in a one-file spec).
    pub concern: Option<usize>,
    /// The from-states (all states for `"*"`), in the order written.
    pub from: Vec<usize>,
    /// Whether `from` was written `"*"`.
    pub from_star: bool,
    /// The events.
    pub on: Vec<usize>,
    /// The guard.
    pub guard: Option<usize>,
    /// The actions, in order.
    pub actions: Vec<usize>,
    /// The target state (`None`: stay in the from-state).
    pub to: Option<usize>,
    /// `ignore = true` (or `impossible = true`).
    pub ignore: bool,
    /// `impossible = true`: ignored at run time, and proven never to fire by the model checker.
    pub impossible: bool,
}

impl Row {
    /// The state after this row fires in `state`.
    pub fn target(&self, state: usize) -> usize {
        self.to.unwrap_or(state)
    }
}

/// One (state, event) cell and the rows covering it, in the order they are tried: the guarded
/// rows (in file order, or in the order an `[[order]]` declares), then the unguarded one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cell {
    /// The state index.
    pub state: usize,
    /// The event index.
    pub event: usize,
    /// The row indexes covering the cell, in the order they are tried.
    pub rows: Vec<usize>,
}

/// The whole lowered machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Machine {
    /// `[machine] name`.
    pub name: String,
    /// `initial_actions` (action indexes).
    pub initial_actions: Vec<usize>,
    /// The concerns of a split spec, in the manifest's order (empty for a one-file spec).
    pub concerns: Vec<Concern>,
    /// The states, in declaration order.
    pub states: Vec<State>,
    /// The initial state's index.
    pub initial: usize,
    /// The events: declared ones, then one per timer.
    pub events: Vec<Event>,
    /// The timers.
    pub timers: Vec<Timer>,
    /// The guards.
    pub guards: Vec<Guard>,
    /// The actions.
    pub actions: Vec<Action>,
    /// The rows, in file order.
    pub rows: Vec<Row>,
    /// Every (state, event) cell, state-major: `cells[state * events.len() + event]`.
    pub cells: Vec<Cell>,
}

impl Machine {
    /// The cell of `(state, event)`.
    pub fn cell(&self, state: usize, event: usize) -> &Cell {
        &self.cells[state * self.events.len() + event]
    }
}

/// Expands rows into cells: for every (state, event) pair, state-major, the indexes of the rows
/// whose `from × on` covers it, in row order. A row listing a state or event twice covers the
/// cell once.
///
/// `rows` yields each row's from-states and events (indexes below `n_states` / `n_events`;
/// others are skipped). Not a validator: cells may come out empty or badly guarded.
pub fn expand_cells<'a>(
    n_states: usize,
    n_events: usize,
    rows: impl IntoIterator<Item = (&'a [usize], &'a [usize])>,
) -> Vec<Cell> {
    let mut cells: Vec<Cell> = (0..n_states)
        .flat_map(|state| {
            (0..n_events).map(move |event| Cell {
                state,
                event,
                rows: Vec::new(),
            })
        })
        .collect();
    for (index, (from, on)) in rows.into_iter().enumerate() {
        for &s in from {
            for &e in on {
                if s < n_states && e < n_events {
                    let cell = &mut cells[s * n_events + e];
                    if cell.rows.last() != Some(&index) {
                        cell.rows.push(index);
                    }
                }
            }
        }
    }
    cells
}

/// `snake_case` → `CamelCase` (`init_timeout` → `InitTimeout`, `a_1b` → `A1b`).
pub fn camel_case(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for part in name.split('_') {
        let mut chars = part.chars();
        if let Some(first) = chars.next() {
            out.extend(first.to_uppercase());
            out.push_str(chars.as_str());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn camel_case_joins_parts() {
        assert_eq!(camel_case("init_timeout"), "InitTimeout");
        assert_eq!(camel_case("exit"), "Exit");
        assert_eq!(camel_case("a_1b"), "A1b");
    }

    #[test]
    fn expansion_is_from_times_on_in_row_order() {
        let r0: (&[usize], &[usize]) = (&[0, 1], &[1]);
        let r1: (&[usize], &[usize]) = (&[1], &[0, 1]);
        let r2: (&[usize], &[usize]) = (&[0, 1], &[0, 1]);
        let cells = expand_cells(2, 2, [r0, r1, r2]);
        let rows: Vec<(usize, usize, Vec<usize>)> = cells
            .iter()
            .map(|c| (c.state, c.event, c.rows.clone()))
            .collect();
        assert_eq!(
            rows,
            [
                (0, 0, vec![2]),
                (0, 1, vec![0, 2]),
                (1, 0, vec![1, 2]),
                (1, 1, vec![0, 1, 2]),
            ]
        );
    }

    #[test]
    fn expansion_dedups_repeated_names_and_skips_out_of_range() {
        let r0: (&[usize], &[usize]) = (&[0, 0, 7], &[0, 0]);
        let cells = expand_cells(1, 1, [r0]);
        assert_eq!(cells[0].rows, vec![0]);
    }

    #[test]
    fn empty_cells_stay_empty() {
        let cells = expand_cells(2, 3, std::iter::empty());
        assert_eq!(cells.len(), 6);
        assert!(cells.iter().all(|c| c.rows.is_empty()));
        assert_eq!((cells[5].state, cells[5].event), (1, 2));
    }
}
