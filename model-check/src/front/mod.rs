//! The model of the bridge's front (`spec/front.toml`, run by
//! [`mcp_machine::front::FrontCore`]): the real core against a host and an upstream that may
//! do anything the wire allows within budgets, explored breadth-first by the same explorer as
//! the connection ([`crate::explore`]). What it proves: [`properties`]. Each property has a
//! deliberate bug of the core ([`mcp_machine::front::FrontMutant`]) that it catches
//! ([`mutants`]).

pub mod properties;
pub mod world;

use std::sync::atomic::{AtomicBool, Ordering};

use mcp_machine::front::FrontMutant;
use mcp_machine::front::table::ROWS;
use stateright::{Model, Property};

use self::world::{FrontBounds, FrontWorld, Move};
use crate::explore;

/// The front's model: bounds, and the core explored (the real one or a mutant).
pub struct FrontModel {
    /// The budgets.
    pub bounds: FrontBounds,
    /// The deliberate bug, if any.
    pub mutant: Option<FrontMutant>,
    /// Which rows of the table fired, by index.
    pub fired: Vec<AtomicBool>,
}

impl FrontModel {
    /// The model of one configuration.
    pub fn new(bounds: FrontBounds, mutant: Option<FrontMutant>) -> Self {
        FrontModel {
            bounds,
            mutant,
            fired: ROWS.iter().map(|_| AtomicBool::new(false)).collect(),
        }
    }
}

impl Model for FrontModel {
    type State = FrontWorld;
    type Action = Move;

    fn init_states(&self) -> Vec<FrontWorld> {
        vec![FrontWorld::new(&self.bounds, self.mutant)]
    }

    fn actions(&self, w: &FrontWorld, out: &mut Vec<Move>) {
        w.moves(out);
    }

    fn next_state(&self, w: &FrontWorld, mv: Move) -> Option<FrontWorld> {
        let (next, fired) = w.step_fired(mv);
        if let Some(row) = self.fired.get(usize::from(fired.row)) {
            row.store(true, Ordering::Relaxed);
        }
        Some(next)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        properties::all()
    }
}

/// One configuration of the front's checker, with its pinned count of unique states.
#[derive(Clone, Copy, Debug)]
pub struct FrontConfiguration {
    /// Its name.
    pub name: &'static str,
    /// What it explores.
    pub bounds: FrontBounds,
    /// Unique states: a change means the table, the core or the harness changed.
    pub pinned_unique: usize,
}

/// The front's configurations: the host's requests (duplicates, cancels, a bound of two in
/// flight) against connects that fail or succeed; the upstream's requests (answered, given up
/// on, timed out, held while connecting); and a 2026-07-28 host's input rounds (asked in a
/// call's answer, sent again with or without the input, abandoned).
pub fn configurations() -> Vec<FrontConfiguration> {
    vec![
        FrontConfiguration {
            name: "front-calls",
            bounds: FrontBounds {
                host_requests: 4,
                host_cancels: 2,
                host_notes: 1,
                host_answers: 0,
                server_requests: 0,
                upstream_notes: 0,
                depth: 10,
                max_calls: 1,
                listens: false,
            },
            pinned_unique: 8_976_684,
        },
        FrontConfiguration {
            name: "front-asks",
            bounds: FrontBounds {
                host_requests: 2,
                host_cancels: 1,
                host_notes: 0,
                host_answers: 2,
                server_requests: 2,
                upstream_notes: 1,
                depth: 10,
                max_calls: 2,
                listens: false,
            },
            pinned_unique: 1_699_312,
        },
        FrontConfiguration {
            name: "front-rounds",
            bounds: FrontBounds {
                host_requests: 3,
                host_cancels: 1,
                host_notes: 0,
                host_answers: 0,
                server_requests: 2,
                upstream_notes: 0,
                depth: 10,
                max_calls: 2,
                listens: true,
            },
            pinned_unique: 5_248_342,
        },
    ]
}

/// What one run of a configuration found.
#[derive(Debug)]
pub struct FrontOutcome {
    /// The configuration's name.
    pub name: &'static str,
    /// Unique states checked.
    pub unique: usize,
    /// The deepest shortest trace.
    pub depth: usize,
    /// Seconds.
    pub seconds: f64,
    /// Invariants violated, with a shortest trace.
    pub failures: Vec<(String, String)>,
    /// Whether the search finished.
    pub complete: bool,
    /// The vacuity guards met.
    pub guards_met: Vec<&'static str>,
    /// The rows that fired, by index.
    pub fired: Vec<bool>,
}

/// Explores one configuration with the core under `mutant`.
pub fn check(
    config: &FrontConfiguration,
    mutant: Option<FrontMutant>,
    threads: usize,
) -> FrontOutcome {
    let model = FrontModel::new(config.bounds, mutant);
    let run = explore::explore(&model, config.bounds.depth, threads, mutant.is_some());
    let mut failures = Vec::new();
    let mut guards_met = Vec::new();
    for p in model.properties() {
        let found = run.discoveries.get(p.name);
        let is_invariant = p.expectation.discovery_is_failure();
        if !is_invariant {
            // A vacuity guard: met by some configuration of the whole run.
            if found.is_some() {
                guards_met.push(p.name);
            }
            continue;
        }
        if found.is_some() {
            let trace = found
                .map(|(_, moves)| render(&model, moves))
                .unwrap_or_else(|| "  (no example within the bounds)".into());
            failures.push((p.name.to_string(), trace));
        }
    }
    FrontOutcome {
        name: config.name,
        unique: run.unique,
        depth: run.depth,
        seconds: run.elapsed.as_secs_f64(),
        failures,
        complete: run.complete,
        guards_met,
        fired: model
            .fired
            .iter()
            .map(|f| f.load(Ordering::Relaxed))
            .collect(),
    }
}

/// A trace, one move per line with the state it leads to.
fn render(model: &FrontModel, moves: &[Move]) -> String {
    let mut w = FrontWorld::new(&model.bounds, model.mutant);
    let mut text = String::new();
    for mv in moves {
        w = w.step(*mv);
        text.push_str(&format!("  {mv:?} -> {:?}\n", w.core.state()));
    }
    text
}

/// The front's mutants: each deliberate bug of the core, with the property expected to catch
/// it.
pub fn mutants() -> Vec<(FrontMutant, &'static str)> {
    vec![
        (
            FrontMutant::AnswerCancelled,
            "front: one answer per request",
        ),
        (
            FrontMutant::ForgetHeldOnFailure,
            "front: every request answered or owed",
        ),
        (FrontMutant::NoReplyOnClose, "front: upstream requests owed"),
        (
            FrontMutant::ForwardBeforeInit,
            "front: no request before initialize, none twice",
        ),
        (
            FrontMutant::SilentCancel,
            "front: host told of what it need not answer",
        ),
        (
            FrontMutant::DuplicateStarts,
            "front: every request answered or owed",
        ),
        (
            FrontMutant::AnswerKeepsWaiting,
            "front: upstream requests answered once",
        ),
        (
            FrontMutant::ResumeForgetsInputs,
            "front: upstream requests owed",
        ),
        (
            FrontMutant::ForgetParkedAnswer,
            "front: every request answered or owed",
        ),
        (
            FrontMutant::AskModernHostDirectly,
            "front: no request before initialize, none twice",
        ),
    ]
}

/// Whether `mutant` is caught by an invariant in some configuration: the name of the first
/// property that caught it.
pub fn judge(mutant: FrontMutant, threads: usize) -> Option<String> {
    // The smallest configurations first: most mutants are caught there.
    let mut configs = configurations();
    configs.sort_by_key(|c| c.pinned_unique);
    for config in configs {
        let out = check(&config, Some(mutant), threads);
        if let Some((name, _)) = out.failures.first() {
            return Some(format!("{name} in {}", config.name));
        }
    }
    None
}

/// The rows no configuration fired (rows marked impossible excluded), given which fired.
pub fn unfired(fired: &[bool]) -> Vec<String> {
    ROWS.iter()
        .zip(fired)
        .filter(|(row, fired)| !row.impossible && !**fired)
        .map(|(row, _)| format!("front row {} ({}:{})", row.index, row.file, row.line))
        .collect()
}

/// The vacuity guards of the front's properties.
pub fn guards() -> Vec<&'static str> {
    properties::all()
        .into_iter()
        .filter(|p| !p.expectation.discovery_is_failure())
        .map(|p| p.name)
        .collect()
}
