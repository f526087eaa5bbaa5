//! The model: the bounds of one configuration, the machine explored (the real one or a
//! mutant), the machine configuration it runs with, and the [`Harness`] that makes the
//! environment ([`crate::env`](mod@crate::env)), the ghost history ([`crate::ghost`]) and the properties
//! ([`crate::properties`]) one stateright [`Model`].

use std::sync::Arc;
use std::time::Duration;

use mcp_machine::{ClientCapabilities, Config, EraMode, Machine};
use stateright::{Model, Property};

use crate::coverage::Coverage;
use crate::world::{Junk, Move, World};

/// Bounds of one exhaustive configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bounds {
    /// Callers (each calls once).
    pub calls: u8,
    /// Stoppers (each stops once).
    pub stops: u8,
    /// Transports that may die on their own.
    pub crashes: u8,
    /// Busy send outcomes.
    pub busy: u8,
    /// Highest transport generation spawned.
    pub gens: u64,
    /// Notifies (each once).
    pub notifies: u8,
    /// Enabled [`Junk`] bits.
    pub junk: u32,
    /// BFS depth bound (stateright's `target_max_depth`).
    pub depth: usize,
    /// Subscribes of the subscriber (0: none; past the first, each once the last is answered),
    /// and another caller that may end the subscription.
    pub subscriptions: u8,
    /// The bound of the first connect (the default is 60 s, the tombstone sweep's period: a
    /// longer one lets a sweep fall inside the first handshake).
    pub first_connect: Duration,
    /// Explore every jitter at both extremes (two initial states) instead of the seed's.
    pub jitter_extremes: bool,
    /// Long silences ([`Move::Wait`]).
    pub waits: u8,
    /// Callers (the first ones) whose calls ask to wait for ready
    /// (`CallOptions::wait_for_ready`).
    pub ready_waiters: u8,
    /// Sessions the server may end ([`Move::Expire`]).
    pub expiries: u8,
    /// The bound of a reconnect's handshake, when not the default (10 s): as long as the
    /// calls' timeouts (30 s), a call kept across a session expiry may time out in starting or
    /// initializing (when made before the expiry), and a handshake may time out with kept calls
    /// (due at the same instant, the init timeout fires first).
    pub init_timeout: Option<Duration>,
    /// The era mode of the client.
    pub era: EraMode,
    /// The probe timeout, when not the default (5 s): longer than the sweep period, the sweep
    /// can fire while probing.
    pub probe_timeout: Option<Duration>,
    /// The kinds of server a generation may talk to (bits of [`crate::world::ServerKind`]).
    pub servers: u8,
    /// The client's listen asks for list changes (`Config::listen_list_changed`), and a modern
    /// server advertises `tools.listChanged`.
    pub listen: bool,
    /// Notifications tagged with a listen id (any sent, or an unknown one) the server may send.
    pub listen_notes: u8,
    /// Ends of a listen by the server (a result, a broken stream, a refusal, an error, its
    /// cancel) it may send.
    pub listen_ends: u8,
    /// The read window a new transport is given (`Config::read_window`): 1 is active-once;
    /// more lets that many frames arrive before the machine gives a credit back.
    pub read_window: u32,
    /// Tasks the server may create, answering a caller's `tools/call` with one (0: none):
    /// 2025-11-25 ones when [`Bounds::tasks_on`], 2026-07-28 ones on a modern generation.
    pub tasks: u8,
    /// The client polls tasks (`Config::tasks`): off, a task is no answer it can use.
    pub tasks_on: bool,
    /// Tasks a caller may resume by their id ([`crate::world::Move::Resume`]; 0: none).
    pub resumes: u8,
}

/// Which machine is explored: the real one, or a deliberately broken one.
#[derive(Clone, Debug)]
pub enum Variant {
    /// The generated table and the real handlers.
    Real,
    /// A handler bug.
    Handler(mcp_machine::Mutant),
    /// A mutated copy of the table, and the rows (by index) whose guard is negated.
    Table(Vec<mcp_machine::Row>, Vec<u16>),
}

/// The model: bounds, the machine variant, and the coverage collected while exploring.
#[derive(Clone)]
pub struct Harness {
    /// The bounds.
    pub bounds: Bounds,
    /// The machine explored.
    pub variant: Variant,
    /// Rows that fired.
    pub coverage: Arc<Coverage>,
    /// Junk may be used any number of times (long walks), not once.
    pub repeat_junk: bool,
}

/// The machine configuration used in the model: defaults, with sampling declared so that
/// server requests reach the handler, and the first connect bound of `bounds`.
pub fn model_config(bounds: &Bounds) -> Config {
    let defaults = Config::default();
    let init_timeout = bounds.init_timeout.unwrap_or(defaults.init_timeout);
    Config {
        tombstone_ttl: Config::ttl_for(
            defaults.request_timeout,
            init_timeout,
            defaults.backoff_max,
        ),
        capabilities: ClientCapabilities {
            sampling: true,
            elicitation: true,
            ..Default::default()
        },
        connect_timeout: bounds.first_connect,
        init_timeout,
        // One server request at a time: a second is over the cap.
        max_server_requests: 1,
        // Two re-initializations per outage: the third expiry in a row takes the backoff path
        // within the depth bound.
        max_session_reinits: 2,
        // Two rounds per call: a third `input_required` is past the cap within the bound.
        max_input_rounds: 2,
        // One reissue per call: a second lost request is past the cap within the bound.
        max_reissues: 1,
        // One reopening of a lost listen per ready: the second loss gives up within the bound.
        listen_list_changed: bounds.listen,
        max_relistens: 1,
        relisten_delay: Duration::from_secs(1),
        listen_stable: Duration::from_secs(90),
        // As long as the listen's: a long silence in ready reaches it within the bound.
        session_stable: Duration::from_secs(90),
        era: bounds.era,
        probe_timeout: bounds.probe_timeout.unwrap_or(defaults.probe_timeout),
        // Two authorizations in a row: a third refusal is past the budget within the bound.
        max_authorizations: 2,
        read_window: bounds.read_window,
        tasks: bounds.tasks_on,
        // A server asking for 0 is polled every second; one naming none, every 2 s.
        task_poll_min: Duration::from_secs(1),
        task_poll_default: Duration::from_secs(2),
        // Two failed exchanges in a row: the second answers the caller within the bound.
        max_task_failures: 2,
        ..Config::default()
    }
}

impl Harness {
    /// A harness for `bounds` exploring `variant`.
    pub fn new(bounds: Bounds, variant: Variant) -> Self {
        Harness {
            bounds,
            variant,
            coverage: Arc::new(Coverage::for_table()),
            repeat_junk: false,
        }
    }

    /// The same harness with junk usable any number of times.
    pub fn repeating_junk(mut self) -> Self {
        self.repeat_junk = true;
        self
    }

    pub(crate) fn junk_ok(&self, w: &World, j: Junk) -> bool {
        let bit = j as u32;
        self.bounds.junk & bit != 0 && (self.repeat_junk || w.env.junk_used & bit == 0)
    }

    /// The initial world (with the machine's initial actions carried out), jitter from the
    /// seed.
    pub fn initial(&self) -> World {
        self.initial_with(None)
    }

    /// The initial worlds: with [`Bounds::jitter_extremes`], one with every jitter at its
    /// lowest and one at its highest (a nondeterministic choice the search explores both
    /// ways); otherwise the seeded one.
    pub fn initials(&self) -> Vec<World> {
        if self.bounds.jitter_extremes {
            vec![
                self.initial_with(Some(false)),
                self.initial_with(Some(true)),
            ]
        } else {
            vec![self.initial()]
        }
    }

    fn initial_with(&self, extreme: Option<bool>) -> World {
        let mut m = Machine::new(model_config(&self.bounds), 0x5eed, Duration::ZERO);
        if let Some(high) = extreme {
            m = m.with_jitter_extreme(high);
        }
        m = match &self.variant {
            Variant::Real => m,
            Variant::Handler(mutant) => m.with_mutant(*mutant),
            Variant::Table(rows, negated) => m.with_rows(rows.clone(), negated.clone()),
        };
        let mut w = World {
            m,
            env: Default::default(),
            ghost: Default::default(),
        };
        w.ghost.phase_deadline = Some(self.bounds.first_connect);
        self.drain(&mut w, None, None);
        w
    }
}

impl Model for Harness {
    type State = World;
    type Action = Move;

    fn init_states(&self) -> Vec<World> {
        self.initials()
    }

    fn actions(&self, w: &World, out: &mut Vec<Move>) {
        self.moves(w, out);
    }

    fn next_state(&self, w: &World, mv: Move) -> Option<World> {
        Some(self.apply(w, mv, None))
    }

    fn properties(&self) -> Vec<Property<Self>> {
        crate::properties::all()
    }
}
