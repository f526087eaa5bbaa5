//! The model checker of the MCP client's connection machine.
//!
//! A [stateright] model whose state is the real [`mcp_machine::Machine`] (running the table
//! generated from the spec in `spec/`) plus an adversarial environment and ghost history,
//! explored breadth-first to a fixed depth in several configurations ([`configurations`]). It
//! proves the properties below within those bounds, reports row and cell coverage, and a
//! mutation self-test ([`mutants`]) shows each property can fail. It is not a test of the
//! runtime's IO: only the lifecycle core is explored.
//!
//! # Layout
//!
//! - [`model`]: the [`model::Harness`] (a stateright `Model`), the bounds of a configuration
//!   and the machine explored (the real one or a mutant).
//! - [`world`]: the explored state: the machine, the environment, the ghost history.
//! - [`env`](mod@env): the environment's moves, how a move is applied and its step settled, how the
//!   machine's actions are carried out (as the driver does), and the server's frames with the
//!   predicates on them.
//! - [`ghost`]: what the ghost history learns from the machine's outputs.
//! - [`properties`]: one module per concern, each with its violation bits, its properties and
//!   the checks that set those bits; [`properties::guards`] holds the vacuity guards.
//! - [`coverage`], [`explore`] (the level-synchronous explorer), [`mutants`], [`walk`] (seeded
//!   random walks beyond the bounds), [`sorted`] (the state's small collections).
//!
//! # What is proven
//!
//! Within the bounds of every configuration, on every state reached (the property names are
//! those a run reports; each module's doc says more):
//!
//! - Answers ([`properties::replies`]): no caller is answered twice; an ended id never reaches
//!   its caller; answers reach the caller that asked; a live answer reaches its caller at
//!   once; a cancel is answered at once; no progress after the answer; a caller turned away is
//!   told the cause of the last failure.
//! - Stop ([`properties::stop`]): after stop every call has exactly one answer; nothing is
//!   sent after stop; every stop is answered once; the connection closes only when stopped,
//!   with its exit, every transport closed.
//! - Transports ([`properties::transport`]): stale generations change nothing; credit only
//!   for the open transport, never more than the read window; frames only to the open
//!   transport; a transport is closed before the next spawns; an open transport is always
//!   read.
//! - The wire ([`properties::wire`]): ids are never reused; cancel only what the server saw,
//!   once; initialized once, before any call; what is owed to the server goes on the wire
//!   once, or is being retried.
//! - Deadlines ([`properties::deadlines`], [`properties::backoff`]): request timers die with
//!   their calls; no call is pending past its deadline; starting, initializing, backoff and
//!   closing end within their bounds; backoff stays within bounds.
//! - Frames and sends ([`properties::reports`], [`properties::sends`]): every frame is
//!   reported, delivered or answered as the protocol says; late answers are recognised as
//!   late; no tombstone is held past its expiry plus one sweep period; a busy request is
//!   offered again in time.
//! - The session ([`properties::session`]): no call outlives ready, but those kept across a
//!   session expiry; a reconnect asks again for exactly the live subscriptions, once; an
//!   expired session's calls that never ran are sent again once on the new one, the others
//!   are answered at once; an expired session is initialized again at once, at most the
//!   budget in a row; after a session expiry the new session is restored before the kept
//!   calls are sent again.
//! - The era ([`properties::era`]): ready knows the server the handshake accepted; the era is
//!   decided before a modern request, initialize never goes to a modern server, and only a
//!   legacy server is answered; a legacy guess whose handshake failed is probed again; a
//!   server that dies of the probe is spawned again at once in auto (unless it was last found
//!   modern), after a backoff delay otherwise; an answer to a handshake request given up on
//!   its transport is known as late while the attempt runs.
//! - 2026-07-28 ([`properties::mrtr`], [`properties::reissue`], [`properties::listen`]): an
//!   `input_required` round is sent again exactly; a modern request lost without an answer is
//!   sent again at once under a new id, a bounded number of times, then its error is the
//!   answer (and -32020 waits for a listing of the tools); in modern ready the listen asks for
//!   what is wanted, its notifications are delivered exactly while due, a subscribe is
//!   answered by the acknowledgement, and a lost listen is reopened only by its timer, within
//!   the cap.
//! - Authorization ([`properties::auth`]): a request refused for want of authorization waits
//!   for one authorization at a time, within the budget, and goes out again exactly when it
//!   ends with a token; refused again, or the authorization failed, it is answered.
//! - Tasks ([`properties::tasks`]): a `tasks/get` goes out only for a live task, never
//!   before its interval since the last answer or poll (across reconnects too), and a live
//!   task in ready is always being polled; a task is cancelled on the server at most once,
//!   only with `tasks/cancel`, only once its caller stopped waiting; an input key is handed
//!   to the handler at most once while answered; a task survives a reconnect (never answered
//!   `ConnectionLost`); a task resumed by its id is polled at once in ready and turned away
//!   at once elsewhere; its timers die with its caller, and its caller's bound on the whole
//!   task is met (the deadlines above).
//! - The table ([`properties::rows`], [`coverage`]): impossible rows never fire; every other
//!   row and every cell with a possible row fires in some configuration.
//! - Vacuity ([`properties::guards`]): ready is reached and a call succeeds in every
//!   configuration, and each of [`properties::guards::RUN_GUARDS`] happens in some
//!   configuration.

pub mod coverage;
pub mod env;
pub mod explore;
pub mod front;
pub mod ghost;
pub mod model;
pub mod mutants;
pub mod properties;
pub mod sorted;
pub mod walk;
pub mod world;

pub use coverage::{cell_summary, coverage_summary};

use std::time::Duration;

use stateright::Model;

use crate::coverage::Coverage;
use crate::model::{Bounds, Harness, Variant};
use crate::world::{Junk, Move, ServerKind, World};
use mcp_machine::EraMode;

/// A named exhaustive configuration with its pinned unique-state count.
#[derive(Clone, Copy, Debug)]
pub struct Configuration {
    /// Its name.
    pub name: &'static str,
    /// Its bounds.
    pub bounds: Bounds,
    /// The unique states BFS must find: a change means the table, the machine or the harness
    /// changed (or the search was cut short), and must be deliberate.
    pub pinned_unique: usize,
}

const fn junk(bits: &[Junk]) -> u32 {
    let mut out = 0;
    let mut i = 0;
    while i < bits.len() {
        out |= bits[i] as u32;
        i += 1;
    }
    out
}

/// What every configuration has unless it says otherwise: one caller, one stopper, one crash,
/// two generations, a legacy server and client, no junk, the default timeouts.
const BASE: Bounds = Bounds {
    calls: 1,
    stops: 1,
    crashes: 1,
    busy: 0,
    gens: 2,
    notifies: 0,
    junk: 0,
    depth: 11,
    subscriptions: 0,
    first_connect: Duration::from_secs(60),
    jitter_extremes: false,
    waits: 0,
    ready_waiters: 0,
    expiries: 0,
    init_timeout: None,
    era: EraMode::Legacy,
    probe_timeout: None,
    servers: ServerKind::Legacy as u8,
    listen: false,
    listen_notes: 0,
    listen_ends: 0,
    read_window: 1,
    tasks: 0,
    tasks_on: false,
    resumes: 0,
};

/// The configurations of `cargo run --release -p model-check`.
pub fn configurations() -> Vec<Configuration> {
    use Junk::*;
    vec![
        Configuration {
            name: "lifecycle",
            bounds: Bounds {
                calls: 2,
                stops: 2,
                depth: 13,
                first_connect: Duration::from_secs(65),
                waits: 1,
                junk: junk(&[InitBadVersion, InitError, Duplicate, Oversized]),
                ..BASE
            },
            pinned_unique: 2633961,
        },
        Configuration {
            name: "server-traffic",
            bounds: Bounds {
                crashes: 0,
                busy: 1,
                gens: 1,
                notifies: 1,
                depth: 11,
                junk: junk(&[
                    Ping,
                    Sampling,
                    SamplingAgain,
                    ElicitUrl,
                    ServerCancel,
                    Undeclared,
                    Log,
                    Progress,
                    Unknown,
                    Malformed,
                    Oversized,
                ]),
                ..BASE
            },
            pinned_unique: 3047967,
        },
        Configuration {
            name: "send-retry",
            bounds: Bounds {
                calls: 2,
                busy: 3,
                depth: 12,
                jitter_extremes: true,
                junk: junk(&[SendFailed, Duplicate]),
                ..BASE
            },
            pinned_unique: 2249312,
        },
        Configuration {
            name: "server-crash",
            bounds: Bounds {
                busy: 1,
                depth: 11,
                junk: junk(&[
                    Ping,
                    Sampling,
                    SamplingOther,
                    ServerCancel,
                    Progress,
                    SendFailed,
                ]),
                ..BASE
            },
            pinned_unique: 994358,
        },
        Configuration {
            name: "three-callers",
            bounds: Bounds {
                calls: 3,
                depth: 12,
                junk: junk(&[Duplicate]),
                ..BASE
            },
            pinned_unique: 541364,
        },
        Configuration {
            name: "session",
            bounds: Bounds {
                calls: 0,
                crashes: 2,
                gens: 3,
                depth: 13,
                subscriptions: 1,
                jitter_extremes: true,
                junk: junk(&[Duplicate]),
                ..BASE
            },
            pinned_unique: 513326,
        },
        Configuration {
            name: "session-expiry",
            bounds: Bounds {
                busy: 1,
                gens: 3,
                depth: 11,
                subscriptions: 1,
                junk: junk(&[InitError, Oversized, Sampling]),
                expiries: 3,
                init_timeout: Some(Duration::from_secs(30)),
                ..BASE
            },
            pinned_unique: 3761498,
        },
        Configuration {
            name: "negotiation",
            bounds: Bounds {
                depth: 11,
                era: EraMode::Auto,
                servers: ServerKind::Legacy as u8
                    | ServerKind::Modern as u8
                    | ServerKind::Dual as u8
                    | ServerKind::Garbage as u8,
                junk: junk(&[Sampling, BadResultType, Duplicate]),
                ..BASE
            },
            pinned_unique: 1342592,
        },
        Configuration {
            name: "modern-forced",
            bounds: Bounds {
                busy: 1,
                notifies: 1,
                depth: 10,
                first_connect: Duration::from_secs(65),
                era: EraMode::Modern,
                probe_timeout: Some(Duration::from_secs(61)),
                servers: ServerKind::Legacy as u8 | ServerKind::Modern as u8,
                junk: junk(&[Malformed, Unknown, Oversized, Log, Ping, SendFailed]),
                ..BASE
            },
            pinned_unique: 2116614,
        },
        Configuration {
            name: "mrtr",
            bounds: Bounds {
                depth: 13,
                era: EraMode::Modern,
                servers: ServerKind::Modern as u8,
                junk: junk(&[InputRequired, InputError, Duplicate, Reissue]),
                ..BASE
            },
            pinned_unique: 1063801,
        },
        // A read window of 2 (the runtime's is 32): a second frame may arrive before the
        // machine gave the first one's credit back, also after a row that closed the transport
        // (stale frames of a generation already given up) and across a probe that falls back.
        Configuration {
            name: "read-window",
            bounds: Bounds {
                calls: 2,
                depth: 11,
                era: EraMode::Auto,
                servers: ServerKind::Legacy as u8 | ServerKind::Modern as u8,
                junk: junk(&[InitError, Duplicate, Sampling, Malformed]),
                read_window: 2,
                ..BASE
            },
            pinned_unique: 1863499,
        },
        Configuration {
            name: "tentative",
            bounds: Bounds {
                stops: 0,
                gens: 3,
                depth: 10,
                era: EraMode::Auto,
                junk: junk(&[InitError, Oversized, SendFailed]),
                ..BASE
            },
            pinned_unique: 81585,
        },
        // Modern calls refused for their headers (-32020): the tools are listed again, once
        // for every call waiting, and the calls sent again.
        Configuration {
            name: "relist",
            bounds: Bounds {
                calls: 2,
                crashes: 0,
                busy: 1,
                gens: 1,
                depth: 12,
                era: EraMode::Modern,
                servers: ServerKind::Modern as u8,
                junk: junk(&[Relist, SendFailed]),
                ..BASE
            },
            pinned_unique: 842959,
        },
        // A legacy server replaced by a modern one behind the same address: its session ends
        // with a call kept, `initialize` is refused as a modern server refuses it, and the
        // probe that follows may die.
        Configuration {
            name: "upgrade",
            bounds: Bounds {
                gens: 3,
                depth: 12,
                expiries: 1,
                era: EraMode::Auto,
                servers: ServerKind::Legacy as u8 | ServerKind::Modern as u8,
                ..BASE
            },
            pinned_unique: 1220242,
        },
        // 2026-07-28 listens: a subscriber whose resource joins the listen, and an
        // unsubscriber; acknowledgements that keep or leave out the resource, tagged
        // notifications (due or not), ends of every kind, a crash, a refused send.
        Configuration {
            name: "listen",
            bounds: Bounds {
                calls: 0,
                busy: 1,
                subscriptions: 2,
                depth: 10,
                era: EraMode::Modern,
                servers: ServerKind::Modern as u8,
                listen: true,
                listen_notes: 2,
                listen_ends: 2,
                junk: junk(&[SendFailed]),
                ..BASE
            },
            pinned_unique: 3791221,
        },
        // Authorization (HTTP with OAuth): the probe, `initialize` or a call refused for want
        // of authorization (401) any number of times; authorizations that end with a token or
        // fail, also after their generation was closed.
        Configuration {
            name: "auth",
            bounds: Bounds {
                calls: 2,
                crashes: 0,
                depth: 12,
                era: EraMode::Auto,
                servers: ServerKind::Legacy as u8 | ServerKind::Modern as u8,
                junk: junk(&[Auth]),
                ..BASE
            },
            pinned_unique: 1135254,
        },
        // Authorization meets the session rules and the tentative verdict: a call kept across
        // a session expiry while the new session's `initialize` is refused for want of
        // authorization (past the budget, or the authorization fails), and a legacy guess (the
        // server died of the probe) whose handshake is refused so.
        Configuration {
            name: "auth-session",
            bounds: Bounds {
                stops: 0,
                gens: 3,
                depth: 11,
                expiries: 1,
                era: EraMode::Auto,
                junk: junk(&[Auth]),
                ..BASE
            },
            pinned_unique: 188754,
        },
        // A server that ends listen after listen: reopened within the cap, given up past it,
        // and, after a long silence with one acknowledged, counted afresh.
        Configuration {
            name: "listen-churn",
            bounds: Bounds {
                calls: 0,
                subscriptions: 1,
                crashes: 0,
                gens: 1,
                depth: 11,
                waits: 1,
                era: EraMode::Modern,
                servers: ServerKind::Modern as u8,
                listen: true,
                listen_notes: 1,
                listen_ends: 3,
                ..BASE
            },
            pinned_unique: 3287011,
        },
        // 2025-11-25 tasks: a caller's tool call run as a task (caller 2 bounding the whole
        // task), polled at the server's interval to its outcome through `tasks/result`, its
        // exchanges failing (errors, silence, refused and busy sends) within the budget and
        // past it, cancelled by its caller or its bound, kept across a crash and a session
        // expiry and polled again on the new connection; a stop.
        Configuration {
            name: "tasks-legacy",
            bounds: Bounds {
                calls: 2,
                busy: 1,
                gens: 3,
                depth: 11,
                expiries: 1,
                junk: junk(&[SendFailed]),
                tasks: 1,
                tasks_on: true,
                ..BASE
            },
            pinned_unique: 1348936,
        },
        // 2026-07-28 tasks: a task asking for two inputs (given or failed by the handler,
        // sent with `tasks/update`, asked again after their acknowledgement), for input the
        // client did not declare, completed, failed, lost, erroring; a caller's cancel and
        // its bound; a crash and the poll on the new connection.
        Configuration {
            name: "tasks-modern",
            bounds: Bounds {
                calls: 2,
                depth: 12,
                era: EraMode::Modern,
                servers: ServerKind::Modern as u8,
                junk: junk(&[InputError]),
                tasks: 1,
                tasks_on: true,
                ..BASE
            },
            pinned_unique: 569211,
        },
        // A task resumed by its id (`t0`), in either era: polled at once in ready, then as
        // any task (working, input_required, completed, failed, lost, erroring), cancelled
        // by its caller or its bound, kept across a crash; turned away in every other state.
        Configuration {
            name: "tasks-resume",
            bounds: Bounds {
                calls: 0,
                depth: 13,
                era: EraMode::Auto,
                servers: ServerKind::Legacy as u8 | ServerKind::Modern as u8,
                tasks_on: true,
                resumes: 1,
                ..BASE
            },
            pinned_unique: 1237730,
        },
        // Tasks off: a server that answers a tool call with a task all the same (2026-07-28)
        // is answered to its caller at once as a result of a type the client cannot use.
        // Calls that wait for ready (`wait_for_ready`), made in any state: held through a
        // crash, a failed attempt and backoff, sent once ready (after `initialized`), timed
        // out at their deadline, cancelled, answered at stop.
        Configuration {
            name: "wait-ready",
            bounds: Bounds {
                calls: 2,
                ready_waiters: 2,
                depth: 11,
                junk: junk(&[InitError]),
                ..BASE
            },
            pinned_unique: 136845,
        },
        // The same across the era decision: a waiting call goes out on a modern connection
        // once discovery is answered, on a legacy one once `initialized` went out, and waits
        // through a probe that falls back.
        Configuration {
            name: "wait-ready-auto",
            bounds: Bounds {
                calls: 1,
                ready_waiters: 1,
                depth: 11,
                // Probing outlasts the call's deadline (30 s): it times out while probing.
                first_connect: Duration::from_secs(65),
                probe_timeout: Some(Duration::from_secs(61)),
                era: EraMode::Auto,
                servers: ServerKind::Legacy as u8 | ServerKind::Modern as u8,
                junk: junk(&[Duplicate]),
                ..BASE
            },
            pinned_unique: 354278,
        },
        // A program that cannot be spawned for good (every generation that goes down before it
        // came up: not found): the calls waiting for ready are answered `unavailable` at once,
        // and the calls made after it are not held; a later spawn that works takes them again.
        Configuration {
            name: "wait-ready-spawn",
            bounds: Bounds {
                calls: 2,
                ready_waiters: 2,
                crashes: 2,
                gens: 3,
                depth: 11,
                // A session that expires keeps calls into a new attempt whose spawn may fail.
                expiries: 1,
                junk: junk(&[Permanent]),
                ..BASE
            },
            pinned_unique: 535020,
        },
        Configuration {
            name: "tasks-off",
            bounds: Bounds {
                depth: 8,
                era: EraMode::Modern,
                servers: ServerKind::Modern as u8,
                tasks: 1,
                ..BASE
            },
            pinned_unique: 4459,
        },
    ]
}

/// A smaller configuration for `cargo test`.
pub fn small_configuration() -> Configuration {
    use Junk::*;
    Configuration {
        name: "small",
        bounds: Bounds {
            busy: 1,
            depth: 8,
            junk: junk(&[InitError, Duplicate, Ping]),
            ..BASE
        },
        pinned_unique: 19233,
    }
}

/// What one exhaustive run found.
pub struct Outcome {
    /// The configuration.
    pub name: &'static str,
    /// States generated (with repeats).
    pub states: usize,
    /// Unique states.
    pub unique: usize,
    /// The most moves of any checked state (every state up to it was checked).
    pub depth: usize,
    /// Wall time.
    pub elapsed: Duration,
    /// Properties that failed (always/eventually with a counterexample, or a per-configuration
    /// sometimes without an example), each with a readable trace.
    pub failures: Vec<(String, String)>,
    /// Run-level vacuity guards met here.
    pub guards_met: Vec<&'static str>,
    /// Whether the search finished.
    pub done: bool,
    /// Whether an `always` property failed and the search stopped there.
    pub invariant_failed: bool,
}

/// Explores one configuration and variant breadth-first, merging row coverage into
/// `coverage`. With `stop_at_first_failure`, the search ends after the level in which a
/// property first fails (mutants).
pub fn check(
    config: &Configuration,
    variant: Variant,
    coverage: &Coverage,
    stop_at_first_failure: bool,
) -> Outcome {
    let model = Harness::new(config.bounds, variant);
    let props = model.properties();
    let run = explore::explore(
        &model,
        config.bounds.depth,
        threads(),
        stop_at_first_failure,
    );
    coverage.merge(&model.coverage);
    let mut failures = Vec::new();
    let mut guards_met = Vec::new();
    for p in &props {
        let run_guard = properties::guards::RUN_GUARDS
            .iter()
            .any(|(name, _)| *name == p.name);
        let discovered = run.discoveries.get(p.name);
        if run_guard {
            if discovered.is_some() {
                guards_met.push(p.name);
            }
            continue;
        }
        // A search stopped at the first counterexample proves nothing about examples not found.
        let missing_example = discovered.is_none() && !p.expectation.discovery_is_failure();
        if !run.complete && missing_example {
            continue;
        }
        if discovered.is_some() == p.expectation.discovery_is_failure() {
            let trace = discovered
                .map(|(init, path)| render_trace(&model, *init, path.clone()))
                .unwrap_or_else(|| "  (no example found within the bounds)".to_string());
            failures.push((p.name.to_string(), trace));
        }
    }
    // Failed invariants first: a mutant is reported by what breaks, not by a missing example.
    failures.sort_by_key(|(name, _)| {
        props
            .iter()
            .any(|p| p.name == name && !p.expectation.discovery_is_failure())
    });
    if stop_at_first_failure {
        failures.truncate(1);
    }
    Outcome {
        name: config.name,
        states: run.generated,
        unique: run.unique,
        depth: run.depth,
        elapsed: run.elapsed,
        failures,
        guards_met,
        done: run.complete || stop_at_first_failure,
        invariant_failed: props
            .iter()
            .any(|p| p.expectation.discovery_is_failure() && run.discoveries.contains_key(p.name)),
    }
}

/// Worker threads: every core. The explorer is level-synchronous, so the counts do not depend
/// on it; `MODEL_CHECK_THREADS` overrides.
pub fn threads() -> usize {
    std::env::var("MODEL_CHECK_THREADS")
        .ok()
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// Replays a path from initial state `init` (an index into [`Harness::initials`]), describing
/// each step: the state, the event, the row that fired and the actions.
pub fn render_trace(model: &Harness, init: usize, moves: Vec<Move>) -> String {
    let mut w: World = model
        .initials()
        .into_iter()
        .nth(init)
        .unwrap_or_else(|| model.initial());
    let jitter = match (init, model.bounds.jitter_extremes) {
        (_, false) => "seeded",
        (0, true) => "at its lowest",
        (_, true) => "at its highest",
    };
    let mut lines = vec![format!(
        "  start in {} (jitter {jitter})",
        w.m.state().name()
    )];
    for mv in moves {
        let mut log = Vec::new();
        w = model.apply(&w, mv, Some(&mut log));
        lines.extend(log);
    }
    lines.join("\n")
}
