//! The stateright [`Model`]: environment moves, the thin interpreter of the machine's actions
//! (the same role the runtime's driver plays), and the properties.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use mcp_machine::generated::EventKind;
use mcp_machine::{
    Action, CallError, CallId, CallOptions, CallRequest, ClientCapabilities, Config, EraMode,
    HandlerReply, Input, Machine, NotifyRequest, ROWS, Report, RequestId, ResponseId, SendOutcome,
    SendToken, ServerRequestId, SessionChange, State, Step, TimerKind, TransportError,
};
use serde_json::{Value, json};
use stateright::{Model, Property};

use crate::world::{
    CallGhost, Cause, Junk, ListenEndKind, ListenGhost, Move, Owner, ServerFrame, ServerKind,
    World, seen, violation,
};

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
    /// The kinds of server a generation may talk to (bits of [`ServerKind`]).
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

    fn mark(&self, step: &Step) {
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
        ..Config::default()
    }
}

fn call_options(caller: u8) -> CallOptions {
    if caller == 1 {
        CallOptions {
            timeout: None,
            progress: true,
            reset_timeout_on_progress: true,
            max_total_timeout: Some(Duration::from_secs(60)),
        }
    } else {
        CallOptions::default()
    }
}

const SAMPLING_ID: i64 = 7;
/// The id of the other sampling request.
const OTHER_SAMPLING_ID: i64 = 17;
/// The caller numbers of the subscriber and of the unsubscriber.
const SUBSCRIBER: u8 = 60;
const UNSUBSCRIBER: u8 = 61;
const URI: &str = "file:///watched";
/// The `_meta` key of a listen's tag.
const SUBSCRIPTION_ID: &str = mcp_machine::META_SUBSCRIPTION_ID;

fn session_call(caller: u8, change: SessionChange) -> Input {
    let method = match change {
        SessionChange::Unsubscribe(_) => "resources/unsubscribe",
        SessionChange::Subscribe(_) | SessionChange::SetLogLevel(_) => "resources/subscribe",
    };
    Input::Call(CallRequest {
        call: CallId(u64::from(caller)),
        method: method.into(),
        params: Some(json!({ "uri": URI, "caller": caller })),
        options: CallOptions::default(),
        session: Some(change),
    })
}
/// Caller numbers of notifies start here (calls are 1, 2, ...).
const NOTIFY_BASE: u8 = 50;

/// The bytes of `f`, built once per thread and copied after: a frame is a pure function of
/// its [`ServerFrame`], and building its JSON tree and writing it out on every delivery was a
/// tenth of the checker's time in the larger configurations.
fn frame_bytes(f: ServerFrame) -> Vec<u8> {
    thread_local! {
        static BUILT: RefCell<HashMap<ServerFrame, Vec<u8>>> = RefCell::new(HashMap::new());
    }
    BUILT.with(|built| {
        built
            .borrow_mut()
            .entry(f)
            .or_insert_with(|| build_frame(f))
            .clone()
    })
}

/// The JSON text of `f`.
fn build_frame(f: ServerFrame) -> Vec<u8> {
    let v = match f {
        ServerFrame::InitOk(id) => json!({"jsonrpc": "2.0", "id": id, "result": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "serverInfo": {"name": "model", "version": "0"}}}),
        ServerFrame::InitBadVersion(id) => json!({"jsonrpc": "2.0", "id": id, "result": {
            "protocolVersion": "1999-01-01", "capabilities": {}}}),
        ServerFrame::InitError(id) => {
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32603, "message": "no"}})
        }
        // The body names the request it answers, so a caller can tell it got its own.
        ServerFrame::Answer(id) => {
            json!({"jsonrpc": "2.0", "id": id, "result": {"content": [], "for": id}})
        }
        ServerFrame::Unknown => json!({"jsonrpc": "2.0", "id": 999, "result": {}}),
        ServerFrame::Malformed => return b"{not json".to_vec(),
        ServerFrame::Oversized => return Vec::new(),
        // The sampling request's id: while that is being handled, this is a duplicate.
        ServerFrame::Ping => json!({"jsonrpc": "2.0", "id": SAMPLING_ID, "method": "ping"}),
        ServerFrame::Sampling | ServerFrame::SamplingAgain => {
            json!({"jsonrpc": "2.0", "id": SAMPLING_ID,
            "method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 1}})
        }
        ServerFrame::Undeclared => json!({"jsonrpc": "2.0", "id": 8, "method": "roots/list"}),
        ServerFrame::SamplingOther => {
            json!({"jsonrpc": "2.0", "id": OTHER_SAMPLING_ID,
            "method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 1}})
        }
        // The sampling request's id: while that is being handled, this is a duplicate.
        ServerFrame::ElicitUrl => {
            json!({"jsonrpc": "2.0", "id": SAMPLING_ID, "method": "elicitation/create",
            "params": {"mode": "url", "url": "https://example.invalid", "message": "m", "elicitationId": "e"}})
        }
        ServerFrame::ServerCancel => json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": SAMPLING_ID}}),
        ServerFrame::Log => json!({"jsonrpc": "2.0", "method": "notifications/message",
            "params": {"level": "info", "data": "x"}}),
        ServerFrame::Progress(id) => json!({"jsonrpc": "2.0", "method": "notifications/progress",
            "params": {"progressToken": id, "progress": 1}}),
        ServerFrame::DiscoverOk(id) => json!({"jsonrpc": "2.0", "id": id, "result": {
            "supportedVersions": ["2026-07-28"], "capabilities": {"tools": {"listChanged": true}},
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "model", "version": "0"}}}}),
        ServerFrame::DiscoverVersion(id) | ServerFrame::InitModernRefusal(id) => {
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32022, "message": "unsupported",
                "data": {"supported": ["2026-07-28"], "requested": "x"}}})
        }
        ServerFrame::ProbeError(id) => json!({"jsonrpc": "2.0", "id": id,
            "error": {"code": -32601, "message": "method not found"}}),
        ServerFrame::DiscoverGarbage(id) => json!({"jsonrpc": "2.0", "id": id, "result": {}}),
        ServerFrame::AnswerBadType(id) => json!({"jsonrpc": "2.0", "id": id,
            "result": {"resultType": "task", "for": id}}),
        ServerFrame::InputRequired(id) => json!({"jsonrpc": "2.0", "id": id, "result": {
            "resultType": "input_required", "requestState": format!("s{id}"),
            "inputRequests": {"q": {"method": "sampling/createMessage",
                "params": {"messages": [], "maxTokens": 1}}}}}),
        ServerFrame::InputRequiredNoState(id) => json!({"jsonrpc": "2.0", "id": id, "result": {
            "resultType": "input_required",
            "inputRequests": {"q": {"method": "sampling/createMessage",
                "params": {"messages": [], "maxTokens": 1}},
                "r": {"method": "sampling/createMessage",
                "params": {"messages": [], "maxTokens": 1}}}}}),
        ServerFrame::InputRequiredStateOnly(id) => json!({"jsonrpc": "2.0", "id": id, "result": {
            "resultType": "input_required", "requestState": format!("s{id}")}}),
        ServerFrame::CallLost(id) => json!({"jsonrpc": "2.0", "id": id, "error": {
            "code": mcp_machine::headers::STREAM_LOST, "message": "stream lost"}}),
        ServerFrame::CallVersionRefused(id) => json!({"jsonrpc": "2.0", "id": id, "error": {
            "code": -32022, "message": "unsupported",
            "data": {"supported": ["2026-07-28"], "requested": "x"}}}),
        ServerFrame::HeaderMismatch(id) => json!({"jsonrpc": "2.0", "id": id, "error": {
            "code": -32020, "message": "header mismatch"}}),
        ServerFrame::ListenAck(id, full) => {
            let honored = if full {
                json!({"toolsListChanged": true, "resourceSubscriptions": [URI]})
            } else {
                json!({"toolsListChanged": true})
            };
            json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
                "params": {"_meta": {SUBSCRIPTION_ID: id}, "notifications": honored}})
        }
        ServerFrame::ListenNote(id) => json!({"jsonrpc": "2.0",
            "method": "notifications/resources/updated",
            "params": {"uri": URI, "_meta": {SUBSCRIPTION_ID: id}}}),
        ServerFrame::ListenStray => json!({"jsonrpc": "2.0",
            "method": "notifications/tools/list_changed",
            "params": {"_meta": {SUBSCRIPTION_ID: 999}}}),
        ServerFrame::ListenEnd(id, kind) => match kind {
            ListenEndKind::Complete => json!({"jsonrpc": "2.0", "id": id, "result": {
                "resultType": "complete", "_meta": {SUBSCRIPTION_ID: id}}}),
            ListenEndKind::Lost => json!({"jsonrpc": "2.0", "id": id, "error": {
                "code": mcp_machine::headers::STREAM_LOST, "message": "stream lost"}}),
            ListenEndKind::Refused => json!({"jsonrpc": "2.0", "id": id, "error": {
                "code": -32601, "message": "method not found"}}),
            ListenEndKind::Error => json!({"jsonrpc": "2.0", "id": id, "error": {
                "code": -32603, "message": "internal error"}}),
        },
        ServerFrame::ListenCancel(id) => json!({"jsonrpc": "2.0",
            "method": "notifications/cancelled", "params": {"requestId": id}}),
        ServerFrame::AuthRequired(id) => json!({"jsonrpc": "2.0", "id": id, "error": {
            "code": mcp_machine::headers::AUTH_REQUIRED, "message": "HTTP 401 Unauthorized",
            "data": {"httpStatus": 401, "wwwAuthenticate": "Bearer scope=\"s\""}}}),
    };
    serde_json::to_vec(&v).unwrap_or_default()
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

    fn junk_ok(&self, w: &World, j: Junk) -> bool {
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

    /// The environment's possible moves, in a fixed order.
    pub fn moves(&self, w: &World, out: &mut Vec<Move>) {
        let b = &self.bounds;
        if w.env.calls < b.calls {
            out.push(Move::Call(w.env.calls + 1));
        }
        for &caller in w.ghost.calls.keys() {
            if caller < NOTIFY_BASE && !w.env.cancelled.contains(&caller) {
                out.push(Move::Cancel(caller));
            }
        }
        // The subscriber subscribes once, or, when the bound allows, again once answered.
        let answered = w.ghost.calls.get(&SUBSCRIBER).is_none_or(|c| c.replies > 0);
        if w.env.subscribes < b.subscriptions && answered && !w.ghost.unsubscribed {
            out.push(Move::Subscribe);
        }
        if w.ghost.calls.contains_key(&SUBSCRIBER) && !w.ghost.calls.contains_key(&UNSUBSCRIBER) {
            out.push(Move::Unsubscribe);
        }
        if w.env.notifies < b.notifies {
            out.push(Move::Notify(w.env.notifies + 1));
        }
        if w.env.stops < b.stops {
            out.push(Move::Stop(w.env.stops + 1));
        }
        if w.env.send_mode.is_some() {
            out.push(Move::SendMode(SendOutcome::Ok));
        } else {
            if w.env.busy < b.busy {
                out.push(Move::SendMode(SendOutcome::Busy));
            }
            if self.junk_ok(w, Junk::SendFailed) {
                out.push(Move::SendMode(SendOutcome::Failed));
            }
        }
        for (&generation, g) in &w.env.gens {
            if g.down {
                continue;
            }
            if !g.up {
                for kind in ServerKind::ALL {
                    if b.servers & kind as u8 != 0 {
                        out.push(Move::Up(generation, kind));
                    }
                }
            }
            if g.closed || w.env.crashes < b.crashes {
                out.push(Move::Down(generation));
            }
            // Only a legacy server keeps a session to end: a modern generation has none.
            if g.up
                && !g.closed
                && w.env.expiries < b.expiries
                && !w.ghost.discovered.contains(&generation)
            {
                let refusable = refusable(w, generation).len();
                for mask in 0..(1u8 << refusable) {
                    out.push(Move::Expire(generation, mask));
                }
            }
            if g.credit == 0 || !g.up {
                continue;
            }
            for (&id, &(on, answers)) in &w.env.on_wire {
                if on != generation
                    || (answers >= 1 && !self.junk_ok(w, Junk::Duplicate))
                    || answers >= 2
                {
                    continue;
                }
                // Refusals for want of authorization are repeatable: the budget and once per
                // call are what bound them.
                if answers == 0
                    && self.bounds.junk & Junk::Auth as u32 != 0
                    && matches!(
                        w.ghost.owners.get(&id),
                        Some(Owner::Probe(_) | Owner::Init(_) | Owner::Call(_))
                    )
                {
                    out.push(Move::Frame(generation, ServerFrame::AuthRequired(id)));
                }
                match w.ghost.owners.get(&id) {
                    Some(Owner::Probe(_)) => match g.kind {
                        ServerKind::Modern => {
                            out.push(Move::Frame(generation, ServerFrame::DiscoverOk(id)));
                            out.push(Move::Frame(generation, ServerFrame::DiscoverVersion(id)));
                        }
                        ServerKind::Dual => {
                            out.push(Move::Frame(generation, ServerFrame::DiscoverOk(id)));
                        }
                        ServerKind::Legacy => {
                            out.push(Move::Frame(generation, ServerFrame::ProbeError(id)));
                        }
                        ServerKind::Garbage => {
                            out.push(Move::Frame(generation, ServerFrame::DiscoverGarbage(id)));
                        }
                    },
                    Some(Owner::Init(_)) if g.kind == ServerKind::Modern => {
                        out.push(Move::Frame(generation, ServerFrame::InitModernRefusal(id)));
                    }
                    Some(Owner::Init(_)) => {
                        out.push(Move::Frame(generation, ServerFrame::InitOk(id)));
                        if self.junk_ok(w, Junk::InitBadVersion) {
                            out.push(Move::Frame(generation, ServerFrame::InitBadVersion(id)));
                        }
                        if self.junk_ok(w, Junk::InitError) {
                            out.push(Move::Frame(generation, ServerFrame::InitError(id)));
                        }
                    }
                    // A listen's frames are the environment's listen moves.
                    Some(Owner::Listen(_)) => {}
                    Some(Owner::Restore(_) | Owner::Relist(_)) => {
                        out.push(Move::Frame(generation, ServerFrame::Answer(id)));
                    }
                    Some(Owner::Call(_)) => {
                        out.push(Move::Frame(generation, ServerFrame::Answer(id)));
                        if answers == 0
                            && w.ghost.discovered.contains(&generation)
                            && self.junk_ok(w, Junk::BadResultType)
                        {
                            out.push(Move::Frame(generation, ServerFrame::AnswerBadType(id)));
                        }
                        // Rounds are repeatable: the round cap is what bounds them.
                        if answers == 0
                            && w.ghost.discovered.contains(&generation)
                            && self.bounds.junk & Junk::InputRequired as u32 != 0
                        {
                            out.push(Move::Frame(generation, ServerFrame::InputRequired(id)));
                            out.push(Move::Frame(
                                generation,
                                ServerFrame::InputRequiredNoState(id),
                            ));
                            out.push(Move::Frame(
                                generation,
                                ServerFrame::InputRequiredStateOnly(id),
                            ));
                        }
                        // Losses are repeatable: the reissue cap is what bounds them.
                        if answers == 0
                            && w.ghost.discovered.contains(&generation)
                            && self.bounds.junk & Junk::Reissue as u32 != 0
                        {
                            out.push(Move::Frame(generation, ServerFrame::CallLost(id)));
                            out.push(Move::Frame(generation, ServerFrame::CallVersionRefused(id)));
                        }
                        if answers == 0
                            && w.ghost.discovered.contains(&generation)
                            && self.bounds.junk & Junk::Relist as u32 != 0
                        {
                            out.push(Move::Frame(generation, ServerFrame::HeaderMismatch(id)));
                        }
                        if answers == 0 && self.junk_ok(w, Junk::Progress) {
                            out.push(Move::Frame(generation, ServerFrame::Progress(id)));
                        }
                    }
                    None => {}
                }
            }
            if w.ghost.discovered.contains(&generation) {
                self.listen_frames(w, generation, out);
            }
            let singles = [
                (Junk::Unknown, ServerFrame::Unknown),
                (Junk::Malformed, ServerFrame::Malformed),
                (Junk::Oversized, ServerFrame::Oversized),
                (Junk::Ping, ServerFrame::Ping),
                (Junk::Sampling, ServerFrame::Sampling),
                (Junk::Undeclared, ServerFrame::Undeclared),
                (Junk::ElicitUrl, ServerFrame::ElicitUrl),
                (Junk::SamplingOther, ServerFrame::SamplingOther),
                (Junk::Log, ServerFrame::Log),
            ];
            for (j, f) in singles {
                if self.junk_ok(w, j) {
                    out.push(Move::Frame(generation, f));
                }
            }
            if w.env.server_requests.contains(&(generation, SAMPLING_ID)) {
                if self.junk_ok(w, Junk::ServerCancel) {
                    out.push(Move::Frame(generation, ServerFrame::ServerCancel));
                }
                if self.junk_ok(w, Junk::SamplingAgain) {
                    out.push(Move::Frame(generation, ServerFrame::SamplingAgain));
                }
            }
        }
        for &(generation, id) in &w.env.server_requests {
            out.push(Move::HandlerReply(generation, id));
        }
        for &generation in &w.ghost.auth_pending {
            out.push(Move::Authorize(generation, true));
            out.push(Move::Authorize(generation, false));
        }
        for &(generation, id, key) in &w.env.inputs {
            out.push(Move::InputReply(generation, id, key, true));
            if self.junk_ok(w, Junk::InputError) {
                out.push(Move::InputReply(generation, id, key, false));
            }
        }
        if tick_target(w).is_some() {
            out.push(Move::Tick);
        }
        let reconnect_armed =
            w.m.armed_timers()
                .iter()
                .any(|(k, _)| k.kind == TimerKind::Reconnect);
        // A long silence matters only once an id has ended: it is when its tombstone must go.
        let quiet = w.m.state() == State::Ready
            && w.all_calls_answered()
            && (!w.ghost.ended.is_empty()
                || (b.listen_ends > 0 && w.ghost.listens.values().any(|l| l.taken && l.alive())));
        if w.env.waits < b.waits && !reconnect_armed && quiet {
            out.push(Move::Wait);
        }
        // Timers fire in deadline order (all those due at one instant together), as the
        // driver fires them; no reconnect beyond the last generation allowed.
        if let Some((key, _)) =
            w.m.armed_timers()
                .into_iter()
                .min_by_key(|(k, at)| (*at, *k))
            && (key.kind != TimerKind::Reconnect || w.m.generation() < b.gens)
        {
            out.push(Move::Timer(key));
        }
    }

    /// The listen frames a modern generation may send: an acknowledgement (full, or without
    /// the resource) for a listen the server saw and has not acknowledged or ended; an end of
    /// any kind or a cancel for one it has not ended; a tagged notification for any listen it
    /// saw, or for no listen (each bounded).
    fn listen_frames(&self, w: &World, generation: u64, out: &mut Vec<Move>) {
        let b = &self.bounds;
        let mut any = false;
        for (&id, l) in &w.ghost.listens {
            if l.generation != generation || !w.env.on_wire.contains_key(&id) {
                continue;
            }
            any = true;
            if !l.acked && !l.ended {
                out.push(Move::Frame(generation, ServerFrame::ListenAck(id, true)));
                if l.uri {
                    out.push(Move::Frame(generation, ServerFrame::ListenAck(id, false)));
                }
            }
            if !l.ended && w.env.listen_ends < b.listen_ends {
                for kind in ListenEndKind::ALL {
                    out.push(Move::Frame(generation, ServerFrame::ListenEnd(id, kind)));
                }
                out.push(Move::Frame(generation, ServerFrame::ListenCancel(id)));
            }
            if w.env.listen_notes < b.listen_notes {
                out.push(Move::Frame(generation, ServerFrame::ListenNote(id)));
            }
        }
        if any && w.env.listen_notes < b.listen_notes {
            out.push(Move::Frame(generation, ServerFrame::ListenStray));
        }
    }

    /// After a step: a listen not acknowledged in time is lost; and in modern ready, what is wanted is asked for by the client's listen,
    /// or its reopening is armed, or it is excused (a refusal since the interest changed, or
    /// more losses than reopenings allowed).
    fn listen_after(&self, n: &mut World) {
        listen_timeouts(n);
        let g = n.m.generation();
        if n.m.state() != State::Ready || !n.ghost.discovered.contains(&g) {
            return;
        }
        let (lists, uri) = listen_wanted(n);
        if !lists && !uri {
            return;
        }
        let unsubscribed = n.ghost.unsubscribed;
        let asks = client_listen(n, g)
            .and_then(|id| n.ghost.listens.get(&id))
            .is_some_and(|l| (!lists || l.lists) && (!uri || l.uri) && !(unsubscribed && l.uri));
        let retry =
            n.m.armed_timers()
                .iter()
                .any(|(k, _)| k.kind == TimerKind::ListenRetry);
        let excused = n.ghost.listen_refused || n.ghost.listen_losses > n.m.config().max_relistens;
        if !(asks || retry || excused) {
            n.ghost.violations |= violation::LISTEN;
        }
    }

    /// Applies one move; `log` collects a readable account for traces.
    pub fn apply(&self, w: &World, mv: Move, mut log: Option<&mut Vec<String>>) -> World {
        let mut n = w.clone();
        // The listen counts are per ready: outside it they start afresh.
        if w.m.state() != State::Ready {
            n.ghost.listen_losses = 0;
            n.ghost.listen_reopens = 0;
            n.ghost.listen_refused = false;
        }
        // Inputs other than timers keep the time: only a firing timer moves the model's clock.
        let now = n.m.now();
        let stale_gen = |g: u64| g != w.m.generation();
        let mut stale = false;
        let mut expect_answer = None;
        let mut lost: Option<(u8, bool)> = None;
        let mut mismatch: Option<(u8, bool)> = None;
        let mut record = StepLog::default();
        let step: Option<Step> = match mv {
            Move::Call(c) => {
                n.env.calls = c;
                n.ghost.calls.insert(c, call_ghost(&n.m, &call_options(c)));
                Some(n.m.handle(
                    Input::Call(CallRequest {
                        call: CallId(u64::from(c)),
                        method: "tools/call".into(),
                        // The caller rides along, so a request sent again under a new id is
                        // known as this caller's from the wire alone.
                        params: Some(json!({"name": "t", "caller": c})),
                        options: call_options(c),
                        session: None,
                    }),
                    now,
                ))
            }
            Move::Subscribe => {
                n.env.subscribes += 1;
                n.ghost.listen_refused = false;
                n.ghost
                    .calls
                    .insert(SUBSCRIBER, call_ghost(&n.m, &CallOptions::default()));
                let change = SessionChange::Subscribe(URI.into());
                Some(n.m.handle(session_call(SUBSCRIBER, change), now))
            }
            Move::Unsubscribe => {
                n.ghost
                    .calls
                    .insert(UNSUBSCRIBER, call_ghost(&n.m, &CallOptions::default()));
                n.ghost.unsubscribed = true;
                n.ghost.sub_live = false;
                n.ghost.listen_refused = false;
                // Nothing wanted any more: every listen of the client's is given up.
                let g = w.m.generation();
                if w.m.state() == State::Ready
                    && w.ghost.discovered.contains(&g)
                    && listen_wanted(&n) == (false, false)
                {
                    let alive: Vec<RequestId> = n
                        .ghost
                        .listens
                        .iter()
                        .filter(|(_, l)| l.generation == g && l.alive())
                        .map(|(id, _)| *id)
                        .collect();
                    for id in alive {
                        drop_listen(&mut n, id);
                    }
                }
                let change = SessionChange::Unsubscribe(URI.into());
                Some(n.m.handle(session_call(UNSUBSCRIBER, change), now))
            }
            Move::Cancel(c) => {
                n.env.cancelled.insert(c);
                Some(n.m.handle(
                    Input::Cancel {
                        call: CallId(u64::from(c)),
                    },
                    now,
                ))
            }
            Move::Notify(k) => {
                n.env.notifies = k;
                n.ghost
                    .calls
                    .insert(NOTIFY_BASE + k, call_ghost(&n.m, &CallOptions::default()));
                let input = Input::Notify(NotifyRequest {
                    call: CallId(u64::from(NOTIFY_BASE + k)),
                    method: "notifications/roots/list_changed".into(),
                    params: None,
                });
                Some(n.m.handle(input, now))
            }
            Move::Stop(s) => {
                n.env.stops = s;
                n.ghost.stops.insert(s, 0);
                if !w.all_calls_answered() {
                    n.ghost.seen |= seen::STOP_WITH_CALLS;
                }
                Some(n.m.handle(
                    Input::Stop {
                        call: CallId(100 + u64::from(s)),
                    },
                    now,
                ))
            }
            Move::Up(g, kind) => {
                stale = stale_gen(g);
                if let Some(e) = n.env.gens.get_mut(&g) {
                    e.up = true;
                    e.kind = kind;
                }
                Some(n.m.handle(Input::TransportUp { generation: g }, now))
            }
            Move::Down(g) => {
                stale = stale_gen(g);
                if w.env.server_requests.iter().any(|(on, _)| *on == g) {
                    n.ghost.seen |= seen::CRASH_WITH_SERVER_REQUEST;
                }
                if let Some(e) = n.env.gens.get_mut(&g) {
                    e.down = true;
                    if !e.closed {
                        n.env.crashes += 1;
                    }
                    e.credit = 0;
                }
                Some(n.m.handle(
                    Input::TransportDown {
                        generation: g,
                        error: TransportError::Eof,
                    },
                    now,
                ))
            }
            Move::Expire(g, mask) => {
                stale = stale_gen(g);
                let refused: Vec<RequestId> = refusable(w, g)
                    .into_iter()
                    .enumerate()
                    .filter(|(i, _)| mask & (1 << i) != 0)
                    .map(|(_, id)| id)
                    .collect();
                n.env.expiries += 1;
                if let Some(e) = n.env.gens.get_mut(&g) {
                    e.down = true;
                    e.credit = 0;
                }
                Some(n.m.handle(
                    Input::TransportDown {
                        generation: g,
                        error: TransportError::SessionExpired {
                            session_hint: String::new(),
                            refused,
                        },
                    },
                    now,
                ))
            }
            Move::Frame(g, f) => {
                stale = stale_gen(g);
                let live = !stale
                    && live_generation(w, g)
                    && matches!(w.m.state(), State::Initializing | State::Ready);
                // A modern server is never answered (it never sends requests).
                if live
                    && !w.ghost.discovered.contains(&g)
                    && let Some(id) = server_request_id(f)
                {
                    *n.ghost.owed.entry((g, id)).or_default() += 1;
                }
                // A live modern call's `input_required` round: the retry it owes.
                if let ServerFrame::InputRequired(id)
                | ServerFrame::InputRequiredNoState(id)
                | ServerFrame::InputRequiredStateOnly(id) = f
                    && !stale
                    && w.m.state() == State::Ready
                    && w.ghost.discovered.contains(&g)
                    && w.env.on_wire.get(&id).is_some_and(|(_, a)| *a == 0)
                    && let Some(Owner::Call(c)) = w.ghost.owners.get(&id)
                    && w.ghost.calls.get(c).is_some_and(|x| x.replies == 0)
                {
                    let state = match f {
                        ServerFrame::InputRequiredNoState(_) => None,
                        _ => Some(format!("s{id}")),
                    };
                    let asks = match f {
                        ServerFrame::InputRequiredStateOnly(_) => 0,
                        ServerFrame::InputRequiredNoState(_) => 2,
                        _ => 1,
                    };
                    n.ghost.mrtr.insert(*c, (state, asks));
                }
                // A live call's request lost without an answer: with reissues left, its next
                // fresh id is the reissue.
                if let ServerFrame::CallLost(id) | ServerFrame::CallVersionRefused(id) = f
                    && !stale
                    && w.m.state() == State::Ready
                    && w.ghost.discovered.contains(&g)
                    && w.env.on_wire.get(&id).is_some_and(|(_, a)| *a == 0)
                    && let Some(Owner::Call(c)) = w.ghost.owners.get(&id)
                    && w.ghost
                        .calls
                        .get(c)
                        .is_some_and(|x| x.replies == 0 && x.request == Some(id))
                {
                    let left =
                        w.ghost.reissues.get(c).copied().unwrap_or(0) < w.m.config().max_reissues;
                    if left {
                        n.ghost.reissue_due.insert(*c);
                    }
                    lost = Some((*c, left));
                }
                // -32020 for a live call: the first time it waits for a listing of the tools.
                if let ServerFrame::HeaderMismatch(id) = f
                    && !stale
                    && w.m.state() == State::Ready
                    && w.ghost.discovered.contains(&g)
                    && w.env.on_wire.get(&id).is_some_and(|(_, a)| *a == 0)
                    && let Some(Owner::Call(c)) = w.ghost.owners.get(&id)
                    && w.ghost
                        .calls
                        .get(c)
                        .is_some_and(|x| x.replies == 0 && x.request == Some(id))
                {
                    // Only a tool call is listed again for (the subscriber's calls are
                    // `resources/subscribe` and `resources/unsubscribe`): another is answered.
                    let tool_call = *c != SUBSCRIBER && *c != UNSUBSCRIBER;
                    let first = tool_call && n.ghost.relisted.insert(*c);
                    if first {
                        n.ghost.relist_waiting.insert(*c);
                    }
                    mismatch = Some((*c, first));
                }
                // The environment answers the live probe as a modern server.
                // (Also on a transport that refused a frame for good: its frames still arrive.)
                // A modern refusal of the live `initialize`: the server is a modern one, owed
                // no response; what was owed to it until now is void (new debts, should it be
                // taken for legacy after all, are owed again).
                if let ServerFrame::InitModernRefusal(id) = f
                    && !stale
                    && w.m.state() == State::Initializing
                    && w.ghost.owners.get(&id) == Some(&Owner::Init(g))
                    && w.env.on_wire.get(&id).is_some_and(|(_, a)| *a == 0)
                    && !w.ghost.ended.contains_key(&id)
                {
                    n.ghost.owed.retain(|(on, _), _| *on != g);
                    // Whatever the server was found to speak before, it is deciding again.
                    n.ghost.verdict_modern = false;
                }
                let probing = !stale && w.m.state() == State::Probing;
                // (A probe refused for want of authorization is no longer live: a second
                // answer to it is late.)
                if let ServerFrame::DiscoverOk(id) | ServerFrame::DiscoverVersion(id) = f
                    && probing
                    && w.ghost.probes.get(&g) == Some(&id)
                    && w.ghost.handshake_auth != Some(g)
                {
                    n.ghost.modern_answered.insert(g);
                    if matches!(f, ServerFrame::DiscoverOk(_)) {
                        n.ghost.discovered.insert(g);
                    } else {
                        n.ghost.version_refused.insert(g);
                    }
                }
                if live
                    && f == ServerFrame::ServerCancel
                    && w.env.server_requests.contains(&(g, SAMPLING_ID))
                    && n.ghost.server_cancelled.insert((g, SAMPLING_ID))
                {
                    // A cancelled server request is owed nothing more (cancelled once).
                    if let Some(c) = n.ghost.owed.get_mut(&(g, SAMPLING_ID)) {
                        *c = c.saturating_sub(1);
                    }
                }
                expect_answer = live.then(|| expected_answer(w, f)).flatten();
                // A live restore answered shows the session works, as a call answered does
                // (a restore is live while its deadline is armed).
                if let ServerFrame::Answer(id) = f
                    && live
                    && w.m.state() == State::Ready
                    && w.ghost.owners.get(&id) == Some(&Owner::Restore(g))
                    && w.m.armed_timers().iter().any(|(k, _)| k.id == Some(id))
                {
                    n.ghost.reinits = 0;
                }
                let ready = !stale && w.m.state() == State::Ready;
                listen_frame(w, &mut n, g, f, ready);
                if let Some(e) = n.env.gens.get_mut(&g) {
                    e.credit -= 1;
                }
                let junk = match f {
                    ServerFrame::InitBadVersion(_) => Some(Junk::InitBadVersion),
                    ServerFrame::InitError(_) => Some(Junk::InitError),
                    ServerFrame::Unknown => Some(Junk::Unknown),
                    ServerFrame::Malformed => Some(Junk::Malformed),
                    ServerFrame::Oversized => Some(Junk::Oversized),
                    ServerFrame::Ping => Some(Junk::Ping),
                    ServerFrame::Sampling => Some(Junk::Sampling),
                    ServerFrame::SamplingAgain => Some(Junk::SamplingAgain),
                    ServerFrame::ElicitUrl => Some(Junk::ElicitUrl),
                    ServerFrame::Undeclared => Some(Junk::Undeclared),
                    ServerFrame::Log => Some(Junk::Log),
                    ServerFrame::Progress(_) => Some(Junk::Progress),
                    ServerFrame::ServerCancel => Some(Junk::ServerCancel),
                    ServerFrame::SamplingOther => Some(Junk::SamplingOther),
                    ServerFrame::AnswerBadType(_) => Some(Junk::BadResultType),
                    ServerFrame::InputRequired(_)
                    | ServerFrame::InputRequiredNoState(_)
                    | ServerFrame::InputRequiredStateOnly(_)
                    | ServerFrame::CallLost(_)
                    | ServerFrame::CallVersionRefused(_)
                    | ServerFrame::HeaderMismatch(_)
                    | ServerFrame::ListenAck(..)
                    | ServerFrame::ListenNote(_)
                    | ServerFrame::ListenStray
                    | ServerFrame::ListenEnd(..)
                    | ServerFrame::ListenCancel(_)
                    | ServerFrame::AuthRequired(_) => None,
                    ServerFrame::InitOk(_)
                    | ServerFrame::Answer(_)
                    | ServerFrame::DiscoverOk(_)
                    | ServerFrame::DiscoverVersion(_)
                    | ServerFrame::ProbeError(_)
                    | ServerFrame::DiscoverGarbage(_)
                    | ServerFrame::InitModernRefusal(_) => None,
                };
                if let Some(j) = junk {
                    n.env.junk_used |= j as u32;
                }
                if let Some(id) = answered_id(f)
                    && let Some(e) = n.env.on_wire.get_mut(&id)
                {
                    if e.1 >= 1 {
                        n.env.junk_used |= Junk::Duplicate as u32;
                    }
                    e.1 += 1;
                }
                let input = if f == ServerFrame::Oversized {
                    Input::Oversized {
                        generation: g,
                        size: n.m.config().max_frame_bytes + 1,
                    }
                } else {
                    Input::Frame {
                        generation: g,
                        bytes: frame_bytes(f),
                    }
                };
                Some(n.m.handle(input, now))
            }
            Move::SendMode(mode) => {
                match mode {
                    SendOutcome::Busy => n.env.busy += 1,
                    SendOutcome::Failed => n.env.junk_used |= Junk::SendFailed as u32,
                    SendOutcome::Ok => {}
                }
                n.env.send_mode = (mode != SendOutcome::Ok).then_some(mode);
                None
            }
            Move::HandlerReply(g, id) => {
                stale = stale_gen(g);
                n.env.server_requests.remove(&(g, id));
                let result = Ok(
                    json!({"role": "assistant", "content": {"type": "text", "text": "x"}, "model": "m"}),
                );
                Some(n.m.handle(
                    Input::HandlerReply {
                        generation: g,
                        reply: HandlerReply {
                            id: ServerRequestId::Int(id),
                            result,
                        },
                    },
                    now,
                ))
            }
            Move::InputReply(g, id, key, ok) => {
                stale = stale_gen(g);
                n.env.inputs.remove(&(g, id, key));
                if !ok {
                    n.env.junk_used |= Junk::InputError as u32;
                }
                let outcome = if ok {
                    Ok(
                        json!({"role": "assistant", "content": {"type": "text", "text": "x"}, "model": "m"}),
                    )
                } else {
                    Err(mcp_machine::RpcError {
                        code: -1,
                        message: "declined".into(),
                        data: None,
                    })
                };
                Some(n.m.handle(
                    Input::InputReply {
                        generation: g,
                        reply: mcp_machine::InputReply {
                            request: id,
                            key: if key == 0 { "q" } else { "r" }.into(),
                            outcome,
                        },
                    },
                    now,
                ))
            }
            Move::Authorize(g, ok) => {
                stale = stale_gen(g);
                n.ghost.auth_pending.remove(&g);
                if ok && !stale {
                    // Every caller waiting for it must go out again in this step.
                    let due: Vec<u8> = n
                        .ghost
                        .auth_waiting
                        .iter()
                        .filter(|(_, on)| **on == g)
                        .map(|(c, _)| *c)
                        .collect();
                    for c in due {
                        n.ghost.auth_waiting.remove(&c);
                        n.ghost.auth_resend_due.insert(c);
                    }
                }
                let input = if ok {
                    Input::Authorized { generation: g }
                } else {
                    Input::AuthorizationFailed {
                        generation: g,
                        failure: mcp_machine::AuthFailure {
                            reason: "declined".into(),
                        },
                    }
                };
                Some(n.m.handle(input, now))
            }
            Move::Timer(key) => {
                if let Some((_, at)) = n.m.armed_timers().into_iter().find(|(k, _)| *k == key) {
                    record.absorb(self.advance_to(&mut n, at, log.as_deref_mut()));
                }
                None
            }
            Move::Wait => {
                n.env.waits += 1;
                let c = n.m.config();
                let target =
                    n.m.now()
                        .saturating_add(c.tombstone_ttl)
                        .saturating_add(c.tombstone_sweep);
                record.absorb(self.advance_to(&mut n, target, log.as_deref_mut()));
                None
            }
            Move::Tick => {
                if let Some(target) = tick_target(&n) {
                    if let Some(log) = log.as_deref_mut() {
                        log.push(format!("  silence until {target:?}"));
                    }
                    record.absorb(self.advance_to(&mut n, target, log.as_deref_mut()));
                }
                None
            }
        };
        if let Some(step) = step {
            self.observe(&mut n, step, &format!("{mv:?}"), log.as_deref_mut());
        }
        record.absorb(self.drain(&mut n, Some(mv), log));
        let emitted = record.count;
        self.expectations(w, &mut n, mv, &record);
        auth_after(w, &mut n, mv, stale);
        if stale && (emitted > 0 || n.m != w.m) {
            n.ghost.violations |= violation::STALE_CHANGED;
        }
        match expect_answer {
            Some(Expected::Reply(c)) => {
                let ok = n.ghost.calls.get(&c).is_some_and(|g| g.replies == 1);
                if !ok {
                    n.ghost.violations |= violation::ANSWER_LOST;
                }
            }
            Some(Expected::Ready) => {
                let sent_ok = w.env.send_mode.is_none();
                if n.m.state() == State::Initializing || (sent_ok && n.m.state() != State::Ready) {
                    n.ghost.violations |= violation::ANSWER_LOST;
                }
            }
            None => {}
        }
        // A subscribe of a resource the client's acknowledged listen asks for is answered at
        // once (done, or not honored): it waits for nothing.
        if mv == Move::Subscribe
            && w.m.state() == State::Ready
            && w.ghost.discovered.contains(&w.m.generation())
            && client_listen(w, w.m.generation())
                .and_then(|id| w.ghost.listens.get(&id))
                .is_some_and(|l| l.taken && l.uri)
            && n.ghost
                .calls
                .get(&SUBSCRIBER)
                .is_none_or(|c| c.replies == 0)
        {
            n.ghost.violations |= violation::LISTEN;
        }
        // The last input of a round given: the round's retry goes out in the same step (or the
        // call was answered).
        if let Move::InputReply(g, id, _, true) = mv
            && g == w.m.generation()
            && w.m.state() == State::Ready
            && let Some(Owner::Call(c)) = w.ghost.owners.get(&id)
            && w.ghost.mrtr.contains_key(c)
            && !n.env.inputs.iter().any(|(on, r, _)| *on == g && *r == id)
            && n.ghost.mrtr.contains_key(c)
            && n.ghost.calls.get(c).is_some_and(|x| x.replies == 0)
        {
            n.ghost.violations |= violation::MRTR;
        }
        // A lost request with reissues left is sent again at once under a new id (its caller
        // not answered, unless that send was refused); past them, the error is its answer.
        if let Some((c, left)) = lost {
            let answered = n.ghost.calls.get(&c).is_some_and(|x| x.replies > 0);
            let refusing = w.env.send_mode == Some(SendOutcome::Failed);
            if left && (n.ghost.reissue_due.contains(&c) || (answered && !refusing)) {
                n.ghost.violations |= violation::REISSUE;
            }
            if !left {
                if answered {
                    n.ghost.seen |= seen::REISSUES_SPENT;
                } else {
                    n.ghost.violations |= violation::REISSUE;
                }
            }
        }
        // -32020 the first time: not answered (unless the transport refuses every frame), and
        // waiting for a listing of the tools in flight (or sent again already); the second
        // time: answered.
        if let Some((c, first)) = mismatch {
            let answered = n.ghost.calls.get(&c).is_some_and(|x| x.replies > 0);
            let refusing = w.env.send_mode == Some(SendOutcome::Failed);
            let waits_alone =
                n.ghost.relist_waiting.contains(&c) && n.ghost.relist_in_flight.is_none();
            let wrong = if first {
                if answered { !refusing } else { waits_alone }
            } else {
                !answered
            };
            if wrong {
                n.ghost.violations |= violation::REISSUE;
            }
        }
        // The listing ended (answered, or its request gone): no live call waits for it.
        if let Some(id) = n.ghost.relist_in_flight {
            let answered = matches!(mv, Move::Frame(g, ServerFrame::Answer(a))
                if a == id && g == w.m.generation());
            let gone =
                !n.m.armed_timers()
                    .iter()
                    .any(|(k, _)| k.kind == TimerKind::RequestTimeout && k.id == Some(id));
            // Its send refused, or busy with its sends spent: it ended too.
            let attempts = n.m.config().send_attempts;
            let unsent = record.request_outcomes.iter().any(|(r, o)| {
                *r == id
                    && (*o == SendOutcome::Failed
                        || (*o == SendOutcome::Busy
                            && n.ghost
                                .own_busy
                                .get(&id)
                                .is_some_and(|(b, _)| *b >= attempts)))
            });
            if answered || gone || unsent {
                n.ghost.relist_in_flight = None;
                let ghost = &n.ghost;
                if n.m.state() == State::Ready
                    && ghost
                        .relist_waiting
                        .iter()
                        .any(|c| ghost.calls.get(c).is_some_and(|x| x.replies == 0))
                {
                    n.ghost.violations |= violation::REISSUE;
                }
                n.ghost.relist_waiting.clear();
            }
        }
        // A handler's error to an input a live call awaits answers that call at once.
        if let Move::InputReply(g, id, _, false) = mv
            && g == w.m.generation()
            && w.m.state() == State::Ready
            && let Some(Owner::Call(c)) = w.ghost.owners.get(&id)
            && w.ghost.mrtr.contains_key(c)
            && n.ghost.calls.get(c).is_some_and(|x| x.replies == 0)
        {
            n.ghost.violations |= violation::MRTR;
        }
        self.after_step(w, &mut n, mv, &record);
        // A state is kept until its level is expanded: without the room its queues grew.
        n.m.compact();
        n
    }

    /// Time passes until `target`: every timer due on the way fires, earliest first (as the
    /// driver fires them), each followed by its actions.
    fn advance_to(
        &self,
        n: &mut World,
        target: Duration,
        mut log: Option<&mut Vec<String>>,
    ) -> StepLog {
        let mut record = StepLog::default();
        loop {
            let at =
                n.m.poll_timeout()
                    .filter(|at| *at <= target)
                    .unwrap_or(target);
            for step in n.m.handle_timeout(at) {
                let what = format!("time {at:?}");
                self.observe(n, step, &what, log.as_deref_mut());
            }
            record.absorb(self.drain(n, None, log.as_deref_mut()));
            // Timers still due (one queued a send, whose outcome came first) fire next round.
            if at >= target && n.m.poll_timeout().is_none_or(|d| d > target) {
                break;
            }
        }
        record
    }

    /// What the move must have brought about, judged from what the machine did in it: frames
    /// dropped are reported, notifications and progress reach the application, server
    /// requests are answered as the protocol says (or reach the handler), a caller whose
    /// request could not be handed over is answered or its send retried in time.
    fn expectations(&self, w: &World, n: &mut World, mv: Move, record: &StepLog) {
        let before = w.m.state();
        let fail = |n: &mut World| n.ghost.violations |= violation::UNREPORTED;
        if let Move::Frame(g, f) = mv
            && g == w.m.generation()
            && live_generation(w, g)
            && matches!(before, State::Initializing | State::Ready)
        {
            let reported = |kind: &str| record.reports.contains(&kind);
            let ready = before == State::Ready;
            let held = |id: i64| {
                w.env.server_requests.contains(&(g, id))
                    && !w.ghost.server_cancelled.contains(&(g, id))
            };
            let handling = held(SAMPLING_ID);
            // The model's handler holds one request at a time (the machine only knows of
            // requests it has not seen answered or cancelled).
            let full = w
                .env
                .server_requests
                .iter()
                .any(|(on, id)| *on == g && !w.ghost.server_cancelled.contains(&(g, *id)));
            // Owed frames wait behind others while the outbox is retrying, or a busy transport.
            let quiet = w.env.send_mode.is_some()
                || w.m
                    .armed_timers()
                    .iter()
                    .any(|(k, _)| k.kind == TimerKind::OwedRetry);
            let ttl = w.m.config().tombstone_ttl;
            let code = |id: i64| record.response_code(id);
            let modern = w.ghost.discovered.contains(&g);
            let ok = match f {
                // A modern server's request is reported, never handled nor answered.
                _ if modern && server_request_id(f).is_some() => {
                    record.server_requests.is_empty()
                        && server_request_id(f).and_then(code).is_none()
                        && reported("unexpected server request")
                }
                ServerFrame::Malformed => reported("malformed"),
                ServerFrame::Oversized => reported("oversized"),
                ServerFrame::Unknown => reported("unknown"),
                // Within its tombstone's TTL an ended id is known as late; after it, the
                // sweep may have forgotten it.
                // after it and one more sweep, it must be forgotten (memory stays bounded).
                ServerFrame::Answer(id) if w.ghost.ended.contains_key(&id) => {
                    let at = w.ghost.ended.get(&id).copied().unwrap_or_default();
                    let now = w.m.now();
                    let sweep = w.m.config().tombstone_sweep;
                    if now < at + ttl {
                        reported("late")
                    } else if now >= at + ttl + sweep {
                        reported("unknown")
                    } else {
                        reported("late") || reported("unknown")
                    }
                }
                ServerFrame::Log => record.notifications == 1,
                // A listen's notification is delivered while its notifications are due (its
                // acknowledgement taken, neither given up nor ended), and dropped, reported,
                // otherwise; an untagged one is delivered.
                ServerFrame::ListenNote(id) if ready && modern => {
                    let due = w
                        .ghost
                        .listens
                        .get(&id)
                        .is_some_and(|l| l.taken && l.alive());
                    if due {
                        n.ghost.seen |= seen::LISTEN_DELIVERED;
                        record.notifications == 1
                    } else {
                        n.ghost.seen |= seen::LISTEN_STRAY;
                        record.notifications == 0 && reported("stray")
                    }
                }
                ServerFrame::ListenStray if ready && modern => {
                    record.notifications == 0 && reported("stray")
                }
                ServerFrame::ListenNote(_) | ServerFrame::ListenStray => true,
                ServerFrame::ServerCancel => !ready || record.notifications == 1,
                ServerFrame::Progress(id) => {
                    let asked = match w.ghost.owners.get(&id) {
                        Some(Owner::Call(c)) => {
                            call_options(*c).progress
                                && w.ghost.calls.get(c).is_some_and(|g| g.replies == 0)
                                && !w.ghost.ended.contains_key(&id)
                        }
                        _ => false,
                    };
                    if ready && asked {
                        record.progress.len() == 1 && record.notifications == 0
                    } else {
                        record.progress.is_empty() && (!ready || record.notifications == 1)
                    }
                }
                // Answers are judged by the code they carry, when they went out at once.
                ServerFrame::Ping if ready && handling => {
                    quiet || code(SAMPLING_ID) == Some(-32600)
                }
                ServerFrame::Ping => quiet || code(SAMPLING_ID) == Some(0),
                ServerFrame::Sampling | ServerFrame::SamplingAgain if ready && handling => {
                    quiet || code(SAMPLING_ID) == Some(-32600)
                }
                ServerFrame::Sampling | ServerFrame::SamplingAgain if ready && full => {
                    quiet || code(SAMPLING_ID) == Some(-32000)
                }
                ServerFrame::Sampling | ServerFrame::SamplingAgain if ready => {
                    record.server_requests == [SAMPLING_ID]
                }
                ServerFrame::SamplingOther if ready && held(OTHER_SAMPLING_ID) => {
                    quiet || code(OTHER_SAMPLING_ID) == Some(-32600)
                }
                ServerFrame::SamplingOther if ready && full => {
                    quiet || code(OTHER_SAMPLING_ID) == Some(-32000)
                }
                ServerFrame::SamplingOther if ready => {
                    record.server_requests == [OTHER_SAMPLING_ID]
                }
                ServerFrame::ElicitUrl if ready && handling => {
                    quiet || code(SAMPLING_ID) == Some(-32600)
                }
                ServerFrame::ElicitUrl if ready => quiet || code(SAMPLING_ID) == Some(-32602),
                ServerFrame::Undeclared if ready => quiet || code(8) == Some(-32601),
                ServerFrame::Sampling
                | ServerFrame::SamplingAgain
                | ServerFrame::SamplingOther
                | ServerFrame::ElicitUrl
                | ServerFrame::Undeclared => {
                    record.server_requests.is_empty()
                        && (quiet || server_request_id(f).and_then(code).is_some_and(|c| c < 0))
                }
                ServerFrame::Answer(_)
                | ServerFrame::InitOk(_)
                | ServerFrame::InitBadVersion(_)
                | ServerFrame::InitError(_)
                | ServerFrame::DiscoverOk(_)
                | ServerFrame::DiscoverVersion(_)
                | ServerFrame::ProbeError(_)
                | ServerFrame::DiscoverGarbage(_)
                | ServerFrame::InitModernRefusal(_)
                | ServerFrame::AnswerBadType(_)
                | ServerFrame::InputRequired(_)
                | ServerFrame::InputRequiredNoState(_)
                | ServerFrame::InputRequiredStateOnly(_)
                | ServerFrame::CallLost(_)
                | ServerFrame::CallVersionRefused(_)
                | ServerFrame::HeaderMismatch(_)
                | ServerFrame::ListenAck(..)
                | ServerFrame::ListenEnd(..)
                | ServerFrame::ListenCancel(_)
                | ServerFrame::AuthRequired(_) => true,
            };
            if !ok {
                fail(n);
            }
        }
        // An answer to a handshake request given up for a newer one on the same transport (a
        // probe answered after `initialize` went out, a second answer to a refused
        // `initialize`) is reported: late while its tombstone lasts, unknown after.
        if let Move::Frame(g, f) = mv
            && g == w.m.generation()
            && live_generation(w, g)
            && matches!(before, State::Probing | State::Initializing | State::Ready)
            && let Some(id) = answered_id(f)
            && matches!(w.ghost.owners.get(&id), Some(Owner::Probe(o) | Owner::Init(o)) if *o == g)
            && w.ghost
                .owners
                .range(id + 1..)
                .any(|(_, o)| matches!(o, Owner::Probe(x) | Owner::Init(x) if *x == g))
            && !record.reports.contains(&"late")
            && !record.reports.contains(&"unknown")
        {
            fail(n);
        }
        // A silent probe that leads to `initialize` says so.
        if matches!(mv, Move::Timer(_) | Move::Tick | Move::Wait)
            && before == State::Probing
            && n.m.state() == State::Initializing
            && !record.reports.contains(&"probe timeout")
        {
            fail(n);
        }
        // A legacy answer to the probe that leads to `initialize` says why.
        if let Move::Frame(g, ServerFrame::ProbeError(_) | ServerFrame::DiscoverGarbage(_)) = mv
            && g == w.m.generation()
            && before == State::Probing
            && n.m.state() == State::Initializing
            && !record.reports.contains(&"probe fallback")
        {
            fail(n);
        }
        // A transport that dies is left at once (closing: closed at once).
        if let Move::Down(g) = mv
            && g == w.m.generation()
        {
            let left = match before {
                State::Starting | State::Initializing | State::Ready => {
                    n.m.state() == State::Backoff
                }
                // Auto, no verdict yet: a fresh process, taken for legacy.
                State::Probing => {
                    n.m.state() == State::Backoff
                        || (n.m.state() == State::Starting && n.m.generation() == g + 1)
                }
                State::Closing => n.m.state() == State::Closed,
                State::Backoff | State::Closed => true,
            };
            if !left {
                fail(n);
            }
        }
        // A session the server ended: while the budget lasts a new one at once, the calls
        // that never ran kept and those that may have run answered now; past it, backoff.
        if let Move::Expire(g, mask) = mv
            && g == w.m.generation()
        {
            let left = match before {
                State::Ready => {
                    self.expired(w, n, g, mask);
                    true
                }
                State::Starting | State::Initializing => n.m.state() == State::Backoff,
                State::Probing => {
                    n.m.state() == State::Backoff
                        || (n.m.state() == State::Starting && n.m.generation() == g + 1)
                }
                State::Closing => n.m.state() == State::Closed,
                State::Backoff | State::Closed => true,
            };
            if !left {
                fail(n);
            }
        }
        // The handler's requests of a generation that ends are aborted with it.
        let g = w.m.generation();
        let held = w
            .env
            .server_requests
            .iter()
            .any(|(on, id)| *on == g && !w.ghost.server_cancelled.contains(&(g, *id)));
        if held
            && before == State::Ready
            && n.m.state() != State::Ready
            && !record.aborted.contains(&g)
        {
            fail(n);
        }
        // A caller's request the transport refused is answered at once; a busy one is
        // answered at once when its sends are spent, and otherwise offered again in time.
        let attempts = n.m.config().send_attempts;
        let c = n.m.config();
        let bound = c.retry_delay * (100 + c.retry_jitter_pct) / 100;
        let now = n.m.now();
        let replied_before = |c: u8| w.ghost.calls.get(&c).map_or(0, |g| g.replies);
        for (id, outcome) in &record.request_outcomes {
            let owner = n.ghost.owners.get(id).copied();
            // A refused `initialize` ends the attempt at once.
            if let Some(Owner::Init(_) | Owner::Probe(_)) = owner
                && *outcome != SendOutcome::Ok
                && n.m.state() != State::Backoff
            {
                fail(n);
            }
            let resent = record
                .sends
                .iter()
                .filter(|(_, t, _)| *t == SendToken::Request(*id))
                .count()
                > 1;
            // A request of the client's own (a listen, a listing of the tools, a restore)
            // found busy is offered again in time too, while it has sends left.
            if let Some(Owner::Listen(_) | Owner::Relist(_) | Owner::Restore(_)) = owner {
                let entry = n.ghost.own_busy.entry(*id).or_default();
                match outcome {
                    SendOutcome::Busy => {
                        entry.0 = entry.0.saturating_add(1);
                        entry.1 =
                            (entry.0 < attempts && !resent).then(|| now.saturating_add(bound));
                    }
                    SendOutcome::Ok | SendOutcome::Failed => entry.1 = None,
                }
                continue;
            }
            let Some(Owner::Call(caller)) = owner else {
                continue;
            };
            let Some(g) = n.ghost.calls.get_mut(&caller) else {
                continue;
            };
            match outcome {
                SendOutcome::Failed if g.replies == 0 => fail(n),
                SendOutcome::Busy => {
                    g.busy += 1;
                    let answered_now = g.replies > replied_before(caller);
                    // (Answered in the same step by its deadline, which may fall there too.)
                    let early = answered_now && g.busy < attempts && now < g.deadline;
                    if (g.replies == 0 && g.busy >= attempts) || early {
                        fail(n);
                    } else if g.replies == 0 && !resent {
                        g.resend_due = Some(now.saturating_add(bound));
                    }
                }
                SendOutcome::Ok => g.resend_due = None,
                SendOutcome::Failed => {}
            }
        }
    }

    /// The checks of a session expiry in ready (see [`violation::SESSION`] and
    /// [`violation::REINIT`]).
    fn expired(&self, w: &World, n: &mut World, g: u64, mask: u8) {
        if w.ghost.reinits >= w.m.config().max_session_reinits {
            if n.m.state() != State::Backoff {
                n.ghost.violations |= violation::REINIT;
            }
            n.ghost.seen |= seen::REINITS_SPENT;
            return;
        }
        if n.m.state() != State::Starting || n.m.generation() != g + 1 {
            n.ghost.violations |= violation::REINIT;
        }
        n.ghost.reinits += 1;
        let refused: Vec<RequestId> = refusable(w, g)
            .into_iter()
            .enumerate()
            .filter(|(i, _)| mask & (1 << i) != 0)
            .map(|(_, id)| id)
            .collect();
        for (&c, before) in &w.ghost.calls {
            if before.replies > 0 || (NOTIFY_BASE..SUBSCRIBER).contains(&c) {
                continue;
            }
            let answered = n.ghost.calls.get(&c).is_some_and(|x| x.replies > 0);
            let on_wire = before
                .request
                .and_then(|id| w.env.on_wire.get(&id))
                .is_some_and(|(on, _)| *on == g);
            // A call already sent again once is not kept a second time.
            // A call refused for want of authorization (and waiting) never ran either.
            let ran = (on_wire
                && !before.request.is_some_and(|id| refused.contains(&id))
                && !w.ghost.auth_waiting.contains_key(&c))
                || w.ghost.resent.contains(&c);
            if ran != answered {
                n.ghost.violations |= violation::SESSION;
            }
            if !answered {
                // Kept: nothing is offered to the dead transport; it goes out on the next.
                n.ghost.parked.insert(c);
                if let Some(x) = n.ghost.calls.get_mut(&c) {
                    x.resend_due = None;
                }
            }
        }
    }

    /// Coverage, impossible rows and the trace line of one row that fired.
    fn observe(&self, n: &mut World, step: Step, what: &str, log: Option<&mut Vec<String>>) {
        self.coverage.mark(&step);
        if ROWS
            .get(usize::from(step.row))
            .is_some_and(|r| r.impossible)
        {
            n.ghost.violations |= violation::IMPOSSIBLE_ROW;
        }
        if let Some(log) = log {
            log.push(format!(
                "  {what} in {} → event {} → row #{} (line {}) → {}",
                step.from.name(),
                step.event.name(),
                step.row,
                step.line,
                step.to.name()
            ));
        }
    }

    /// Carries out every queued action, recording ghost history; a send gets its outcome at
    /// once, from the transport's mode (the machine's send contract, as in the driver).
    /// Returns how many actions there were.
    fn drain(&self, n: &mut World, mv: Option<Move>, mut log: Option<&mut Vec<String>>) -> StepLog {
        let mut record = StepLog::default();
        while let Some(action) = n.m.poll_action() {
            record.count += 1;
            match &action {
                Action::Report(r) => record.reports.push(report_kind(r)),
                Action::Notification(_) => record.notifications += 1,
                Action::Progress { call, .. } => record.progress.push(call.0),
                Action::ServerRequest { request, .. } => {
                    if let ServerRequestId::Int(i) = request.id {
                        record.server_requests.push(i);
                    }
                }
                Action::AbortServerRequests { generation } => record.aborted.push(*generation),
                Action::Reply {
                    outcome: Ok(_),
                    call,
                    ..
                } if call.0 < u64::from(NOTIFY_BASE) => record.answered_ok += 1,
                _ => {}
            }
            if let Some(log) = log.as_deref_mut() {
                log.push(format!("      {}", describe(&action)));
            }
            let send = match &action {
                Action::Send {
                    generation,
                    token,
                    frame,
                } => Some((*generation, *token, frame.clone())),
                _ => None,
            };
            interpret(n, mv, action);
            if let Some((generation, token, frame)) = send {
                let outcome = n.env.send_mode.unwrap_or(SendOutcome::Ok);
                let parsed: Value = serde_json::from_slice(&frame).unwrap_or(Value::Null);
                record.sends.push((generation, token, parsed));
                if let SendToken::Request(id) = token {
                    record.request_outcomes.push((id, outcome));
                }
                match outcome {
                    SendOutcome::Ok => delivered(n, generation, &frame),
                    SendOutcome::Failed => {
                        n.ghost.refused.insert(generation);
                    }
                    SendOutcome::Busy => {}
                }
                if let SendToken::Request(id) = token {
                    listen_send_outcome(n, id, outcome);
                }
                match (outcome, token) {
                    (SendOutcome::Busy, SendToken::Request(id)) => mark_busy(n, id),
                    (SendOutcome::Ok, SendToken::Request(id)) => {
                        n.env.on_wire.entry(id).or_insert((generation, 0));
                    }
                    _ => {}
                }
                let now = n.m.now();
                let input = Input::SendResult {
                    generation,
                    token,
                    outcome,
                };
                let step = n.m.handle(input, now);
                let what = format!("{outcome:?} outcome of {token:?}");
                self.observe(n, step, &what, log.as_deref_mut());
            }
        }
        record
    }

    fn after_step(&self, w: &World, n: &mut World, mv: Move, record: &StepLog) {
        self.listen_after(n);
        self.obligations(w, n, mv, record);
        // Calls kept across a session expiry go out as soon as the new session is initialized.
        let calls = &n.ghost.calls;
        n.ghost
            .parked
            .retain(|c| calls.get(c).is_some_and(|g| g.replies == 0));
        n.ghost
            .resent
            .retain(|c| calls.get(c).is_some_and(|g| g.replies == 0));
        let initialized = n
            .ghost
            .initialized
            .get(&n.m.generation())
            .is_some_and(|k| *k > 0);
        if n.m.state() == State::Ready && initialized && !n.ghost.parked.is_empty() {
            n.ghost.violations |= violation::SESSION;
        }
        let in_flight = n
            .ghost
            .calls
            .iter()
            .filter(|(c, g)| **c < NOTIFY_BASE && g.replies == 0 && g.request.is_some())
            .count();
        if in_flight >= 3 {
            n.ghost.seen |= seen::THREE_IN_FLIGHT;
        }
        // A cancelled call is answered at once.
        if let Move::Cancel(c) = mv
            && n.ghost.calls.get(&c).is_some_and(|g| g.replies == 0)
        {
            n.ghost.violations |= violation::CANCEL_UNANSWERED;
        }
        // A stop is answered at once.
        if let Move::Stop(s) = mv
            && n.ghost.stops.get(&s) != Some(&1)
        {
            n.ghost.violations |= violation::STOP_REPLY;
        }
        // The session proved itself, or may have: the backoff sequence may restart. Only
        // while ready on the live generation: a result of it that answered a caller, or a
        // restore of the session, and was not dropped as late or unknown, proves it (the
        // sequence must restart: `backoff_hi`); any other frame of it may be taken for a
        // proof (an error, an answer to another request of the client's own: the sequence
        // may restart, `backoff_lo`). Being ready proves nothing.
        let (ready_before, ready_after) =
            (w.m.state() == State::Ready, n.m.state() == State::Ready);
        if let Move::Frame(fg, frame) = mv
            && fg == w.m.generation()
            && ready_before
            && ready_after
        {
            n.ghost.backoff_lo = 0;
            let dropped = record
                .reports
                .iter()
                .any(|r| matches!(*r, "late" | "unknown"));
            let proves = match frame {
                ServerFrame::Answer(id) => {
                    !dropped
                        && (record.answered_ok > 0
                            || w.ghost.owners.get(&id) == Some(&Owner::Restore(fg)))
                }
                _ => false,
            };
            if proves {
                n.ghost.backoff_hi = 0;
            }
        }
        if ready_after && !ready_before {
            n.ghost.ready_since = Some(n.m.now());
        }
        // Backoff bounds: each new reconnect delay is min·2^n capped, ±20 %, n counting the
        // delays since the sequence last restarted: after a proof, or when the session last
        // made ready stayed up for `session_stable`.
        let reconnect = |m: &Machine| {
            m.armed_timers()
                .into_iter()
                .find(|(k, _)| k.kind == TimerKind::Reconnect)
                .map(|(_, d)| d)
        };
        if let Some(at) = reconnect(&n.m)
            && reconnect(&w.m) != Some(at)
        {
            let c = n.m.config();
            if let Some(since) = n.ghost.ready_since.take()
                && n.m.now().saturating_sub(since) >= c.session_stable
            {
                n.ghost.backoff_lo = 0;
                n.ghost.backoff_hi = 0;
                n.ghost.seen |= seen::STABLE_RESTART;
            }
            let base = |k: u32| {
                c.backoff_min
                    .saturating_mul(1u32 << k.min(20))
                    .min(c.backoff_max)
            };
            let delay = at.saturating_sub(n.m.now());
            let pct = c.backoff_jitter_pct;
            if delay < base(n.ghost.backoff_lo) * (100 - pct) / 100
                || delay > base(n.ghost.backoff_hi) * (100 + pct) / 100
            {
                n.ghost.violations |= violation::BACKOFF_BOUNDS;
            }
            if n.ghost.backoff_hi >= 1 && n.ghost.backoff_lo >= 1 && ready_before {
                n.ghost.seen |= seen::UNPROVEN_SESSION_BACKOFF;
            }
            n.ghost.backoff_lo += 1;
            n.ghost.backoff_hi += 1;
        }
        // A server that dies of the probe: in auto, unless the server was last found modern
        // (and has not refused `initialize` as a modern one since), it is spawned again at once
        // (taken for legacy); otherwise the attempt waits out a backoff delay like any other
        // failure.
        // (One that dies while the probe waits for an authorization did not die of it.)
        if let Move::Down(dg) = mv
            && dg == w.m.generation()
            && w.m.state() == State::Probing
            && w.ghost.handshake_auth != Some(dg)
        {
            let at_once = n.m.config().era == EraMode::Auto && !n.ghost.verdict_modern;
            let respawned = n.m.generation() > w.m.generation();
            let waits = n.m.state() == State::Backoff && reconnect(&n.m).is_some();
            if at_once != respawned || respawned == waits {
                n.ghost.violations |= violation::RESPAWN;
            }
        }
        let g = n.m.generation();
        if n.m.state() == State::Ready && w.m.state() != State::Ready {
            // The era this server was last found to speak (the client's verdict).
            n.ghost.verdict_modern = n.ghost.discovered.contains(&g);
            if n.ghost.discovered.contains(&g) {
                n.ghost.seen |= seen::READY_MODERN;
                if n.ghost.version_refused.contains(&g) {
                    n.ghost.seen |= seen::READY_MODERN_AFTER_RETRY;
                }
                if n.ghost.init_sent.contains(&g) {
                    n.ghost.seen |= seen::REPROBED_MODERN;
                }
            } else if n.ghost.probes.contains_key(&g) {
                n.ghost.seen |= seen::READY_LEGACY_AFTER_PROBE;
                if n.ghost.silent.contains(&g) {
                    n.ghost.seen |= seen::READY_LEGACY_AFTER_SILENCE;
                }
            }
            if !n.ghost.discovered.contains(&g) && n.ghost.respawned.contains(&g) {
                n.ghost.seen |= seen::READY_LEGACY_RESPAWNED;
            }
        }
        // A new legacy generation's ready asks again for exactly the live subscription, once
        // (a modern server keeps no session).
        if n.m.state() == State::Ready
            && w.m.state() != State::Ready
            && !n.ghost.discovered.contains(&g)
        {
            let sent = n
                .ghost
                .restores
                .get(&n.m.generation())
                .copied()
                .unwrap_or(0);
            if sent != u8::from(n.ghost.sub_live) {
                n.ghost.violations |= violation::RESTORE;
            }
            if sent == 1 {
                n.ghost.seen |= seen::RESTORED;
            }
        }
        if n.m.state() == State::Ready {
            n.ghost.seen |= seen::READY;
            if n.m.generation() >= 2 {
                n.ghost.seen |= seen::RECONNECT_READY;
            }
            if n.m.generation() >= 3 {
                n.ghost.seen |= seen::SECOND_RECONNECT_READY;
            }
        }
    }
}

/// What one move made the machine do, for the checks at its end (not part of the state).
#[derive(Debug, Default)]
pub struct StepLog {
    /// Actions carried out.
    pub count: usize,
    /// Frames offered to the transport: generation, token, the frame parsed.
    pub sends: Vec<(u64, SendToken, Value)>,
    /// Reports, by kind.
    pub reports: Vec<&'static str>,
    /// Server notifications handed to the application.
    pub notifications: usize,
    /// Callers that got progress.
    pub progress: Vec<u64>,
    /// Server requests handed to the handler (ids).
    pub server_requests: Vec<i64>,
    /// Send outcomes of callers' request frames: the id and the outcome.
    pub request_outcomes: Vec<(RequestId, SendOutcome)>,
    /// Generations whose handler requests were all aborted.
    pub aborted: Vec<u64>,
    /// Callers answered with a result.
    pub answered_ok: usize,
}

impl StepLog {
    fn absorb(&mut self, other: StepLog) {
        self.count += other.count;
        self.sends.extend(other.sends);
        self.reports.extend(other.reports);
        self.notifications += other.notifications;
        self.progress.extend(other.progress);
        self.server_requests.extend(other.server_requests);
        self.request_outcomes.extend(other.request_outcomes);
        self.aborted.extend(other.aborted);
        self.answered_ok += other.answered_ok;
    }

    /// The error code of the response to server request `id` sent in this step, or `Some(0)`
    /// for a result.
    fn response_code(&self, id: i64) -> Option<i64> {
        self.sends.iter().find_map(|(_, _, v)| {
            let matches = match &v["id"] {
                Value::String(_) => id == -1,
                other => other.as_i64() == Some(id),
            };
            (matches && v.get("method").is_none()).then(|| {
                v.get("error")
                    .map_or(0, |e| e["code"].as_i64().unwrap_or(i64::MIN))
            })
        })
    }
}

/// Why a move that sent the machine to backoff ended the attempt (`None`: not judged).
fn cause_of(mv: Move, from: State) -> Option<Cause> {
    match (mv, from) {
        (Move::Down(_) | Move::Expire(..), _) => Some(Cause::Down),
        (Move::Frame(_, ServerFrame::Oversized), _) => Some(Cause::Oversized),
        (Move::Frame(_, ServerFrame::InitError(_)), _) => Some(Cause::Refused),
        (Move::Frame(_, ServerFrame::InitBadVersion(_)), _) => Some(Cause::UnsupportedVersion),
        (Move::Frame(_, ServerFrame::InitOk(_)), _) => Some(Cause::InitializedNotSent),
        (Move::Up(..), _) => Some(Cause::InitNotSent),
        (
            Move::Frame(_, ServerFrame::DiscoverVersion(_) | ServerFrame::InitModernRefusal(_)),
            _,
        ) => Some(Cause::Refused),
        (
            Move::Frame(
                _,
                ServerFrame::ProbeError(_)
                | ServerFrame::DiscoverGarbage(_)
                | ServerFrame::Malformed
                | ServerFrame::Unknown,
            ),
            State::Probing,
        ) => Some(Cause::NotModern),
        (Move::Frame(_, ServerFrame::AuthRequired(_)), State::Probing | State::Initializing)
        | (Move::Authorize(_, false), _) => Some(Cause::Unauthorized),
        (Move::Timer(key), State::Probing) if key.kind == TimerKind::ProbeTimeout => {
            Some(Cause::ProbeTimeout)
        }
        (Move::Timer(_) | Move::Tick, State::Starting | State::Probing | State::Initializing) => {
            Some(Cause::InitTimeout)
        }
        _ => None,
    }
}

/// Whether a failure the machine gave a caller is the cause the environment brought about.
fn same_cause(failure: Option<&mcp_machine::Failure>, cause: Option<Cause>) -> bool {
    use mcp_machine::Failure as F;
    matches!(
        (failure, cause),
        (None, None)
            | (Some(F::Transport(_)), Some(Cause::Down))
            | (Some(F::InitTimeout { .. }), Some(Cause::InitTimeout))
            | (Some(F::Oversized { .. }), Some(Cause::Oversized))
            | (Some(F::Refused(_)), Some(Cause::Refused))
            | (
                Some(F::UnsupportedVersion { .. }),
                Some(Cause::UnsupportedVersion)
            )
            | (Some(F::InitNotSent), Some(Cause::InitNotSent))
            | (Some(F::InitializedNotSent), Some(Cause::InitializedNotSent))
            | (Some(F::NotModern { .. }), Some(Cause::NotModern))
            | (Some(F::ProbeTimeout { .. }), Some(Cause::ProbeTimeout))
            | (Some(F::Unauthorized { .. }), Some(Cause::Unauthorized))
    )
}

/// A report's kind, as the expectations name it.
fn report_kind(r: &Report) -> &'static str {
    match r {
        Report::Malformed { .. } => "malformed",
        Report::Oversized { .. } => "oversized",
        Report::LateResponse { .. } => "late",
        Report::UnknownResponse { .. } => "unknown",
        Report::SendRetry { .. } => "send retry",
        Report::OwedDropped { .. } => "owed dropped",
        Report::InitRejected(_) => "init rejected",
        Report::RestoreFailed(_) => "restore failed",
        Report::ImpossibleRow { .. } => "impossible row",
        Report::UnexpectedServerRequest { .. } => "unexpected server request",
        Report::ProbeFallback { .. } => "probe fallback",
        Report::ProbeTimeout => "probe timeout",
        Report::StrayListenNotification { .. } => "stray",
        Report::ListenGaveUp => "listen gave up",
        _ => "other",
    }
}

/// A new call's ghost: its deadline from its options (the configured default timeout, or its
/// own).
fn call_ghost(m: &Machine, options: &CallOptions) -> CallGhost {
    let mut timeout = options.timeout.unwrap_or(m.config().request_timeout);
    if let Some(total) = options.max_total_timeout {
        timeout = timeout.min(total);
    }
    CallGhost {
        started: m.now(),
        deadline: m.now().saturating_add(timeout),
        ..CallGhost::default()
    }
}

/// The requests of generation `g` a server that ended its session may say it refused: those on
/// the wire there that are unanswered, of callers still waiting, in id order.
fn refusable(w: &World, g: u64) -> Vec<RequestId> {
    w.env
        .on_wire
        .iter()
        .filter(|(id, (on, answers))| {
            *on == g
                && *answers == 0
                && matches!(w.ghost.owners.get(id), Some(Owner::Call(c))
                    if w.ghost.calls.get(c).is_some_and(|x| x.replies == 0))
        })
        .map(|(id, _)| *id)
        .collect()
}

/// Whether generation `g` is the current one and open: up, neither closed nor down, and it
/// has not refused a frame for good.
fn live_generation(w: &World, g: u64) -> bool {
    g == w.m.generation()
        && !w.ghost.refused.contains(&g)
        && w.env
            .gens
            .get(&g)
            .is_some_and(|e| e.up && !e.closed && !e.down)
}

/// The id of a server request frame (-1 for the ping's string id).
fn server_request_id(f: ServerFrame) -> Option<i64> {
    match f {
        ServerFrame::Ping
        | ServerFrame::Sampling
        | ServerFrame::SamplingAgain
        | ServerFrame::ElicitUrl => Some(SAMPLING_ID),
        ServerFrame::Undeclared => Some(8),
        ServerFrame::SamplingOther => Some(OTHER_SAMPLING_ID),
        ServerFrame::InitOk(_)
        | ServerFrame::InitBadVersion(_)
        | ServerFrame::InitError(_)
        | ServerFrame::Answer(_)
        | ServerFrame::Unknown
        | ServerFrame::Malformed
        | ServerFrame::Oversized
        | ServerFrame::ServerCancel
        | ServerFrame::Log
        | ServerFrame::Progress(_)
        | ServerFrame::DiscoverOk(_)
        | ServerFrame::DiscoverVersion(_)
        | ServerFrame::ProbeError(_)
        | ServerFrame::DiscoverGarbage(_)
        | ServerFrame::InitModernRefusal(_)
        | ServerFrame::AnswerBadType(_)
        | ServerFrame::InputRequired(_)
        | ServerFrame::InputRequiredNoState(_)
        | ServerFrame::InputRequiredStateOnly(_)
        | ServerFrame::CallLost(_)
        | ServerFrame::CallVersionRefused(_)
        | ServerFrame::HeaderMismatch(_)
        | ServerFrame::ListenAck(..)
        | ServerFrame::ListenNote(_)
        | ServerFrame::ListenStray
        | ServerFrame::ListenEnd(..)
        | ServerFrame::ListenCancel(_)
        | ServerFrame::AuthRequired(_) => None,
    }
}

/// The id of our request a frame answers, if it is a response.
fn answered_id(f: ServerFrame) -> Option<RequestId> {
    match f {
        ServerFrame::InitOk(id)
        | ServerFrame::InitBadVersion(id)
        | ServerFrame::InitError(id)
        | ServerFrame::Answer(id)
        | ServerFrame::DiscoverOk(id)
        | ServerFrame::DiscoverVersion(id)
        | ServerFrame::ProbeError(id)
        | ServerFrame::DiscoverGarbage(id)
        | ServerFrame::InitModernRefusal(id)
        | ServerFrame::AnswerBadType(id)
        | ServerFrame::InputRequired(id)
        | ServerFrame::InputRequiredNoState(id)
        | ServerFrame::InputRequiredStateOnly(id)
        | ServerFrame::CallLost(id)
        | ServerFrame::CallVersionRefused(id)
        | ServerFrame::HeaderMismatch(id)
        | ServerFrame::AuthRequired(id)
        | ServerFrame::ListenEnd(id, _) => Some(id),
        ServerFrame::ListenAck(..)
        | ServerFrame::ListenNote(_)
        | ServerFrame::ListenStray
        | ServerFrame::ListenCancel(_)
        | ServerFrame::Unknown
        | ServerFrame::Malformed
        | ServerFrame::Oversized
        | ServerFrame::Ping
        | ServerFrame::Sampling
        | ServerFrame::Undeclared
        | ServerFrame::SamplingAgain
        | ServerFrame::ElicitUrl
        | ServerFrame::ServerCancel
        | ServerFrame::SamplingOther
        | ServerFrame::Log
        | ServerFrame::Progress(_) => None,
    }
}

/// What a frame on the live transport must bring about in the same step.
#[derive(Clone, Copy, Debug)]
enum Expected {
    /// The caller gets its answer.
    Reply(u8),
    /// The handshake completes.
    Ready,
}

fn expected_answer(w: &World, f: ServerFrame) -> Option<Expected> {
    match f {
        ServerFrame::Answer(id) if w.m.state() == State::Ready => {
            let first = w
                .env
                .on_wire
                .get(&id)
                .is_some_and(|(_, answers)| *answers == 0);
            match w.ghost.owners.get(&id) {
                Some(Owner::Call(c))
                    if first
                        && !w.ghost.ended.contains_key(&id)
                        && w.ghost.calls.get(c).is_some_and(|g| g.replies == 0) =>
                {
                    Some(Expected::Reply(*c))
                }
                _ => None,
            }
        }
        ServerFrame::DiscoverOk(id) if w.m.state() == State::Probing => {
            let first = w
                .env
                .on_wire
                .get(&id)
                .is_some_and(|(_, answers)| *answers == 0);
            let live = w.ghost.probes.get(&w.m.generation()) == Some(&id);
            (first && live).then_some(Expected::Ready)
        }
        ServerFrame::InitOk(id) if w.m.state() == State::Initializing => {
            let first = w
                .env
                .on_wire
                .get(&id)
                .is_some_and(|(_, answers)| *answers == 0);
            let this_generation = w.ghost.owners.get(&id) == Some(&Owner::Init(w.m.generation()));
            (first && this_generation).then_some(Expected::Ready)
        }
        _ => None,
    }
}

/// The earliest deadline the machine owes: an unanswered call's, or its state's bound.
fn earliest_deadline(w: &World) -> Option<Duration> {
    w.ghost
        .calls
        .values()
        .filter(|g| g.replies == 0)
        .flat_map(|g| [Some(g.deadline), g.resend_due])
        .flatten()
        .chain(w.ghost.phase_deadline)
        .min()
}

/// Where [`Move::Tick`] moves the clock: just past the earliest deadline owed, if no timer
/// that could meet it (any but the periodic sweep) is armed at or before it.
fn tick_target(w: &World) -> Option<Duration> {
    let due = earliest_deadline(w)?;
    let guarded =
        w.m.armed_timers()
            .iter()
            .any(|(k, at)| k.kind != TimerKind::TombstoneSweep && *at <= due);
    let target = due.saturating_add(Duration::from_millis(1));
    (!guarded && target > w.m.now()).then_some(target)
}

/// The client's listen on generation `g`: the latest it sent there, unless that is gone.
fn client_listen(w: &World, g: u64) -> Option<RequestId> {
    let (&id, l) = w
        .ghost
        .listens
        .iter()
        .rev()
        .find(|(_, l)| l.generation == g)?;
    l.alive().then_some(id)
}

/// What the client wants told now: list changes (as configured), and the resource (live, or
/// its subscriber waiting).
fn listen_wanted(w: &World) -> (bool, bool) {
    let waiting = w
        .ghost
        .calls
        .get(&SUBSCRIBER)
        .is_some_and(|c| c.replies == 0)
        && !w.ghost.unsubscribed;
    (
        w.m.config().listen_list_changed,
        w.ghost.sub_live || waiting,
    )
}

/// The client gives listen `id` up: a cancel is owed when the server saw it and has not
/// ended it (and none went out yet).
fn drop_listen(n: &mut World, id: RequestId) {
    let Some(l) = n.ghost.listens.get_mut(&id) else {
        return;
    };
    l.dropped = true;
    if !l.ended && n.env.on_wire.contains_key(&id) && !n.ghost.cancels.contains(&id) {
        n.ghost.cancel_owed.insert(id);
    }
}

/// The client's listen is lost (a step toward giving up).
fn lose_listen(n: &mut World, id: RequestId) {
    drop_listen(n, id);
    n.ghost.listen_losses = n.ghost.listen_losses.saturating_add(1);
}

/// The client's listen not acknowledged by its request timeout is lost.
fn listen_timeouts(n: &mut World) {
    let g = n.m.generation();
    let Some(id) = client_listen(n, g) else {
        return;
    };
    let timeout = n.m.config().request_timeout;
    if n.ghost
        .listens
        .get(&id)
        .is_some_and(|l| !l.taken && n.m.now() >= l.sent_at.saturating_add(timeout))
    {
        lose_listen(n, id);
    }
}

/// A listen's send refused, or busy for every attempt: it is lost.
fn listen_send_outcome(n: &mut World, id: RequestId, outcome: SendOutcome) {
    let attempts = n.m.config().send_attempts;
    let Some(l) = n.ghost.listens.get_mut(&id) else {
        return;
    };
    let spent = match outcome {
        SendOutcome::Ok => false,
        SendOutcome::Failed => true,
        SendOutcome::Busy => {
            l.busy = l.busy.saturating_add(1);
            l.busy >= attempts
        }
    };
    if spent && l.alive() {
        lose_listen(n, id);
    }
}

/// A listen went out: what it asks for is recorded; the client's earlier listens on the
/// generation are given up, but for the latest acknowledged one (kept until this one is
/// acknowledged). It goes out at ready, on an interest change, or, as a reopening, when its
/// retry timer fires: at most the cap per ready (unless a long silence let one become
/// stable), never after a refusal, never when nothing is wanted.
fn listen_sent(n: &mut World, mv: Option<Move>, generation: u64, id: RequestId, v: &Value) {
    listen_timeouts(n);
    let asks = &v["params"]["notifications"];
    let uri = asks["resourceSubscriptions"]
        .as_array()
        .is_some_and(|a| a.iter().any(|u| u == URI));
    let lists = asks["toolsListChanged"] == Value::Bool(true);
    if listen_wanted(n) == (false, false) {
        n.ghost.violations |= violation::LISTEN;
    }
    let earlier: Vec<(RequestId, bool)> = n
        .ghost
        .listens
        .iter()
        .filter(|(_, l)| l.generation == generation && l.alive())
        .map(|(i, l)| (*i, l.taken))
        .collect();
    let keep = earlier.iter().filter(|(_, t)| *t).map(|(i, _)| *i).max();
    for (i, _) in earlier {
        if Some(i) != keep {
            drop_listen(n, i);
        }
    }
    let sent_at = n.m.now();
    n.ghost.listens.insert(
        id,
        ListenGhost {
            generation,
            uri,
            lists,
            sent_at,
            ..ListenGhost::default()
        },
    );
    match mv {
        Some(Move::Subscribe | Move::Unsubscribe | Move::Frame(_, ServerFrame::DiscoverOk(_))) => {}
        // Timers fire with no move of their own (`None`), inside a timer, tick or wait move.
        None | Some(Move::Timer(_) | Move::Tick | Move::Wait) => {
            n.ghost.listen_reopens = n.ghost.listen_reopens.saturating_add(1);
            n.ghost.seen |= seen::LISTEN_REOPENED;
            let cap = n.m.config().max_relistens;
            if n.ghost.listen_refused || n.ghost.listen_reopens > cap {
                n.ghost.violations |= violation::LISTEN;
            }
        }
        _ => n.ghost.violations |= violation::LISTEN,
    }
}

/// What a listen frame tells the ghost: the environment's facts (acknowledged, ended)
/// always; in ready, what the client takes of it: the acknowledgement of its listen (the
/// listens before it given up), or the end of its listen (lost, or refused) or of the one it
/// replaces.
fn listen_frame(w: &World, n: &mut World, g: u64, f: ServerFrame, ready: bool) {
    match f {
        ServerFrame::ListenNote(_) | ServerFrame::ListenStray => n.env.listen_notes += 1,
        ServerFrame::ListenEnd(..) | ServerFrame::ListenCancel(_) => n.env.listen_ends += 1,
        _ => {}
    }
    let modern = ready && w.ghost.discovered.contains(&g);
    let current = client_listen(w, g);
    match f {
        ServerFrame::ListenAck(id, full) => {
            let Some(l) = n.ghost.listens.get_mut(&id) else {
                return;
            };
            l.acked = true;
            if !modern || current != Some(id) || l.taken {
                return;
            }
            l.taken = true;
            l.honored = full && l.uri;
            l.acked_at = w.m.now();
            let earlier: Vec<(RequestId, bool)> = n
                .ghost
                .listens
                .range(..id)
                .filter(|(_, l)| l.generation == g && l.alive())
                .map(|(i, l)| (*i, l.taken))
                .collect();
            for (i, taken) in earlier {
                if taken {
                    n.ghost.seen |= seen::LISTEN_REPLACED;
                }
                drop_listen(n, i);
            }
        }
        ServerFrame::ListenEnd(id, _) | ServerFrame::ListenCancel(id) => {
            let refused = f == ServerFrame::ListenEnd(id, ListenEndKind::Refused);
            let Some(l) = n.ghost.listens.get_mut(&id) else {
                return;
            };
            let kept = l.alive() && !l.ended;
            l.ended = true;
            if !modern || !kept {
                return;
            }
            if current == Some(id) {
                l.dead = true;
                // One that stayed acknowledged long enough makes the count start again (its
                // refusal does not: it stops the reopenings).
                let stable = w.m.config().listen_stable;
                if !refused && l.taken && w.m.now() >= l.acked_at.saturating_add(stable) {
                    n.ghost.listen_reopens = 0;
                    n.ghost.listen_losses = 0;
                }
                if refused {
                    n.ghost.listen_refused = true;
                    n.ghost.seen |= seen::LISTEN_REFUSED;
                } else {
                    n.ghost.listen_losses = n.ghost.listen_losses.saturating_add(1);
                }
            } else if l.taken {
                l.dead = true;
            }
        }
        _ => {}
    }
}

/// A frame the transport took: what the server now sees.
fn delivered(n: &mut World, generation: u64, frame: &[u8]) {
    let v: Value = serde_json::from_slice(frame).unwrap_or(Value::Null);
    let method = v.get("method").and_then(Value::as_str);
    match method {
        Some("notifications/initialized") => {
            let count = n.ghost.initialized.entry(generation).or_default();
            *count += 1;
            if *count > 1 {
                n.ghost.violations |= violation::INITIALIZED;
            }
        }
        Some("notifications/cancelled") => {
            let id = v["params"]["requestId"].as_u64().unwrap_or(u64::MAX);
            if !n.env.on_wire.contains_key(&id) || !n.ghost.cancels.insert(id) {
                n.ghost.violations |= violation::BAD_CANCEL;
            }
            // A listen the server ended while the client kept it is owed no cancel.
            if n.ghost.listens.get(&id).is_some_and(|l| l.dead) {
                n.ghost.violations |= violation::BAD_CANCEL;
            }
            n.ghost.cancel_owed.remove(&id);
        }
        Some(_) => {}
        None => {
            // A response to a server request.
            let id = match &v["id"] {
                Value::String(_) => -1,
                other => other.as_i64().unwrap_or(i64::MIN),
            };
            // A transport that refused a frame for good owes nothing any more; the model's
            // environment may still take frames on it.
            match n.ghost.owed.get_mut(&(generation, id)) {
                Some(count) if *count > 0 => *count -= 1,
                _ if n.ghost.refused.contains(&generation) => {}
                _ => n.ghost.violations |= violation::OWED,
            }
        }
    }
}

fn mark_busy(n: &mut World, id: RequestId) {
    if let Some(Owner::Call(c)) = n.ghost.owners.get(&id).copied()
        && let Some(g) = n.ghost.calls.get_mut(&c)
    {
        g.busy_seen = true;
    }
}

impl Harness {
    /// The deadlines and debts of the step's end state: the bound of a newly entered state,
    /// a read credit on an open transport, and what is owed to the server either on the wire
    /// or being retried.
    fn obligations(&self, w: &World, n: &mut World, mv: Move, record: &StepLog) {
        let c = n.m.config();
        let now = n.m.now();
        let state = n.m.state();
        // Why the attempt ended: into backoff, or from ready straight into a new session (or
        // from probing into a fresh process taken for legacy).
        let reinit =
            state == State::Starting && matches!(w.m.state(), State::Ready | State::Probing);
        if (state == State::Backoff && w.m.state() != State::Backoff) || reinit {
            // A handshake request (`initialize`, `server/discover`) the transport did not take
            // ends the attempt whatever move made the machine send it.
            let unsent = record.request_outcomes.iter().any(|(id, outcome)| {
                *outcome != SendOutcome::Ok
                    && matches!(
                        n.ghost.owners.get(id),
                        Some(Owner::Init(_) | Owner::Probe(_))
                    )
            });
            n.ghost.cause = if unsent {
                Some(Cause::InitNotSent)
            } else {
                cause_of(mv, w.m.state())
            };
        }
        if state == State::Starting && w.m.state() == State::Probing {
            n.ghost.respawned.insert(n.m.generation());
        }
        // A respawned generation's handshake failed: its tentative verdict must not outlive it
        // (a good answer to `initialize` confirms it, even if `initialized` then fails).
        // (`initialize` may also go out and fail in the step the transport comes up.)
        let init_in_step = record
            .sends
            .iter()
            .any(|(g, _, v)| *g == w.m.generation() && v["method"] == "initialize");
        if state == State::Backoff
            && (w.m.state() == State::Initializing
                || (w.m.state() == State::Starting && init_in_step))
            && n.ghost.respawned.contains(&w.m.generation())
            && !matches!(mv, Move::Frame(_, ServerFrame::InitOk(_)))
        {
            n.ghost.must_probe = true;
        }
        if state == State::Backoff
            && w.m.state() == State::Probing
            && n.ghost.cause == Some(Cause::NotModern)
            && self.bounds.era == EraMode::Modern
        {
            n.ghost.seen |= seen::FORCED_REFUSED;
        }
        if state != w.m.state() {
            n.ghost.phase_deadline = match state {
                // The init bound covers spawning and the handshake together.
                State::Starting => {
                    let bound = if n.m.generation() <= 1 {
                        c.connect_timeout
                    } else {
                        c.init_timeout
                    };
                    Some(now.saturating_add(bound))
                }
                // Only a transport coming up starts a handshake (or the probe, which the
                // handshake may follow, or the reverse): the init bound covers them all; from
                // anywhere else the machine owes leaving at once.
                State::Initializing | State::Probing
                    if matches!(
                        w.m.state(),
                        State::Starting | State::Probing | State::Initializing
                    ) =>
                {
                    n.ghost.phase_deadline
                }
                State::Initializing | State::Probing => Some(now),
                State::Backoff => {
                    let factor = 1u32 << n.ghost.backoff_hi.min(20);
                    let base = c.backoff_min.saturating_mul(factor).min(c.backoff_max);
                    let most = base * (100 + c.backoff_jitter_pct) / 100;
                    Some(now.saturating_add(most))
                }
                State::Closing => Some(now.saturating_add(c.closing_exit)),
                State::Ready | State::Closed => None,
            };
        }
        let g = n.m.generation();
        // Debts die with their transport, and an answered call has no deadline: forget them,
        // so that histories differing only there are one state.
        let live = live_generation(n, g);
        // A modern server is owed no response (a legacy guess proved wrong drops what was).
        let modern = n.ghost.discovered.contains(&g);
        n.ghost
            .owed
            .retain(|(on, _), count| live && !modern && *on == g && *count > 0);
        let on_wire = &n.env.on_wire;
        n.ghost
            .cancel_owed
            .retain(|id| live && on_wire.get(id).is_some_and(|(on, _)| *on == g));
        n.ghost.refused.retain(|on| *on == g);
        // A request of the client's own is retried while it lives: in ready, on its
        // generation, and (a listen) not given up.
        let ready = state == State::Ready;
        let owners = &n.ghost.owners;
        let listens = &n.ghost.listens;
        n.ghost.own_busy.retain(|id, (_, due)| {
            let mine = matches!(owners.get(id),
                Some(Owner::Listen(on) | Owner::Relist(on) | Owner::Restore(on)) if *on == g);
            let alive = listens.get(id).is_none_or(|l| l.alive());
            ready && mine && alive && due.is_some()
        });
        n.ghost.server_cancelled.retain(|(on, _)| live && *on == g);
        for call in n.ghost.calls.values_mut().filter(|c| c.replies > 0) {
            call.started = Duration::ZERO;
            call.deadline = Duration::ZERO;
            call.busy = 0;
            call.resend_due = None;
        }
        if matches!(state, State::Closing | State::Closed) && !n.ghost.stop_accepted {
            n.ghost.violations |= violation::UNASKED_CLOSE;
        }
        if state == State::Closed && (!n.ghost.exited || n.env.gens.values().any(|e| !e.closed)) {
            n.ghost.violations |= violation::UNASKED_CLOSE;
        }
        if matches!(state, State::Probing | State::Initializing | State::Ready) && live {
            if n.env.gens.get(&g).is_some_and(|e| e.credit == 0) {
                n.ghost.violations |= violation::DEAF;
            }
            let retrying =
                n.m.armed_timers()
                    .iter()
                    .any(|(k, _)| k.kind == TimerKind::OwedRetry);
            let handed = |id: i64| u8::from(n.env.server_requests.contains(&(g, id)));
            let unpaid = n
                .ghost
                .owed
                .iter()
                .any(|(&(gen_, id), &count)| gen_ == g && count > handed(id))
                || n.ghost
                    .cancel_owed
                    .iter()
                    .any(|id| n.env.on_wire.get(id).is_some_and(|(on, _)| *on == g));
            if unpaid && !retrying {
                n.ghost.violations |= violation::OWED;
            }
        }
    }
}

/// The interpreter: what the driver would do, recorded as ghost history.
/// The authorization obligations of one step (HTTP with OAuth; see [`violation::AUTH`]), from
/// the moves and the machine's outputs.
fn auth_after(w: &World, n: &mut World, mv: Move, stale: bool) {
    let unanswered = |n: &World, c: u8| n.ghost.calls.get(&c).is_some_and(|x| x.replies == 0);
    let closed = |n: &World, g: u64| n.env.gens.get(&g).is_none_or(|e| e.closed);
    match mv {
        // (On the current transport, open; also one that refused a frame for good: its
        // frames still arrive, and the machine takes them.)
        Move::Frame(g, ServerFrame::AuthRequired(id))
            if !stale
                && !closed(w, g)
                && w.env.gens.get(&g).is_some_and(|e| e.up && !e.down)
                && w.env.on_wire.get(&id).is_some_and(|(_, a)| *a == 0) =>
        {
            match w.ghost.owners.get(&id) {
                Some(Owner::Call(c))
                    if w.m.state() == State::Ready
                        && w.ghost
                            .calls
                            .get(c)
                            .is_some_and(|x| x.replies == 0 && x.request == Some(id)) =>
                {
                    let refusals = n.ghost.auth_refusals.entry(*c).or_default();
                    *refusals += 1;
                    let again = *refusals > 1;
                    if unanswered(n, *c) {
                        if again {
                            // Refused after an authorization already: that is its answer.
                            n.ghost.violations |= violation::AUTH;
                        } else {
                            n.ghost.auth_waiting.insert(*c, g);
                        }
                    }
                }
                // The live handshake request waits for an authorization, or (past the
                // budget) its attempt ended.
                Some(Owner::Probe(on))
                    if *on == g
                        && w.m.state() == State::Probing
                        && w.ghost.probes.get(&g) == Some(&id)
                        && !closed(n, g) =>
                {
                    n.ghost.handshake_auth = Some(g);
                }
                Some(Owner::Init(on))
                    if *on == g && w.m.state() == State::Initializing && !closed(n, g) =>
                {
                    n.ghost.handshake_auth = Some(g);
                }
                _ => {}
            }
        }
        Move::Authorize(g, ok) if !stale && !closed(w, g) => {
            let waited: Vec<u8> = w
                .ghost
                .auth_waiting
                .iter()
                .filter(|(c, on)| **on == g && unanswered(w, **c))
                .map(|(c, _)| *c)
                .collect();
            let missed = if ok {
                // Sent again in this step (or answered), the handshake request too.
                waited
                    .iter()
                    .any(|c| n.ghost.auth_resend_due.contains(c) && unanswered(n, *c))
                    || (w.ghost.handshake_auth == Some(g) && n.ghost.handshake_auth == Some(g))
            } else {
                // Answered in this step, the handshake's attempt ended.
                waited.iter().any(|c| unanswered(n, *c))
                    || (w.ghost.handshake_auth == Some(g) && !closed(n, g))
            };
            if missed {
                n.ghost.violations |= violation::AUTH;
            }
        }
        _ => {}
    }
    // The budget counts authorizations since a call or a request of the client's own was
    // last answered (the ghost forgets on any such answer: never later than the machine).
    if let Move::Frame(_, f) = mv
        && !matches!(f, ServerFrame::AuthRequired(_))
        && answered_id(f).is_some_and(|id| {
            matches!(
                w.ghost.owners.get(&id),
                Some(Owner::Call(_) | Owner::Restore(_) | Owner::Relist(_) | Owner::Listen(_))
            )
        })
    {
        n.ghost.authorizations = 0;
    }
    // And at a backoff delay (the machine's next attempt may authorize again).
    if n.m.state() == State::Backoff && w.m.state() != State::Backoff {
        n.ghost.authorizations = 0;
    }
    n.ghost
        .auth_waiting
        .retain(|c, _| n.ghost.calls.get(c).is_some_and(|x| x.replies == 0));
    // Nobody waits for an authorization nobody runs.
    let g = n.m.generation();
    if !closed(n, g)
        && !n.ghost.auth_pending.contains(&g)
        && (n.ghost.auth_waiting.values().any(|on| *on == g) || n.ghost.handshake_auth == Some(g))
    {
        n.ghost.violations |= violation::AUTH;
    }
    if n.m.state() == State::Ready
        && w.m.state() != State::Ready
        && n.ghost.handshake_authorized.contains(&g)
    {
        n.ghost.seen |= seen::AUTH_HANDSHAKE_READY;
    }
}

fn interpret(n: &mut World, mv: Option<Move>, action: Action) {
    let current = n.m.generation();
    match action {
        Action::SpawnTransport { generation } => {
            // Every older transport was closed by the machine (a dead one too: closing is
            // what reaps it).
            if n.env.gens.values().any(|g| !g.closed) {
                n.ghost.violations |= violation::LEAKED_TRANSPORT;
            }
            n.env.gens.insert(generation, Default::default());
        }
        Action::CloseTransport { generation } => {
            if let Some(g) = n.env.gens.get_mut(&generation) {
                g.closed = true;
            }
            // Nobody waits for an authorization of a closed generation (kept calls go out
            // on the next one, under the session rules).
            n.ghost.auth_waiting.retain(|_, on| *on != generation);
            if n.ghost.handshake_auth == Some(generation) {
                n.ghost.handshake_auth = None;
            }
        }
        Action::Authorize { generation, .. } => {
            // One at a time, for the generation that met the refusal, within the budget.
            if !n.ghost.auth_pending.insert(generation) || generation != current {
                n.ghost.violations |= violation::AUTH;
            }
            n.ghost.authorizations += 1;
            if n.ghost.authorizations > n.m.config().max_authorizations {
                n.ghost.violations |= violation::AUTH;
            }
        }
        Action::GrantCredit {
            generation,
            credits,
        } => match n.env.gens.get_mut(&generation) {
            Some(g) if !g.closed && !g.down && generation == current => {
                g.credit = g
                    .credit
                    .saturating_add(u8::try_from(credits).unwrap_or(u8::MAX));
            }
            _ => n.ghost.violations |= violation::CREDIT_AFTER_CLOSE,
        },
        Action::Send {
            generation, frame, ..
        } => {
            if n.ghost.stop_accepted {
                n.ghost.violations |= violation::SENT_AFTER_STOP;
            }
            if n.env
                .gens
                .get(&generation)
                .is_none_or(|g| g.closed || g.down)
                || generation != current
            {
                n.ghost.violations |= violation::SENT_ON_DEAD;
            }
            let v: Value = serde_json::from_slice(&frame).unwrap_or(Value::Null);
            let method = v.get("method").and_then(Value::as_str).unwrap_or("");
            if let Some(id) = v
                .get("id")
                .and_then(Value::as_u64)
                .filter(|_| !method.is_empty())
            {
                let caller = v["params"]["caller"]
                    .as_u64()
                    .and_then(|c| u8::try_from(c).ok());
                let modern_frame = v["params"]["_meta"]
                    .get("io.modelcontextprotocol/protocolVersion")
                    .is_some();
                let first_of_generation = !n.ghost.init_sent.contains(&generation)
                    && !n.ghost.probes.contains_key(&generation);
                // A handshake request refused for want of authorization goes out again only
                // when the authorization ends with a token.
                if matches!(method, "server/discover" | "initialize")
                    && n.ghost.handshake_auth == Some(generation)
                {
                    if mv == Some(Move::Authorize(generation, true)) {
                        n.ghost.handshake_auth = None;
                        n.ghost.handshake_authorized.insert(generation);
                    } else {
                        n.ghost.violations |= violation::AUTH;
                    }
                }
                match method {
                    "server/discover" => {
                        if first_of_generation {
                            n.ghost.must_probe = false;
                        }
                        n.ghost.probes.insert(generation, id);
                    }
                    "initialize" => {
                        if first_of_generation && n.ghost.must_probe {
                            n.ghost.violations |= violation::VERDICT;
                        }
                        // Never to a server that answered the probe as a modern one.
                        if n.ghost.modern_answered.contains(&generation) {
                            n.ghost.violations |= violation::ERA;
                        }
                        // The probe went unanswered (it was abandoned).
                        if n.ghost.probes.get(&generation).is_some_and(|probe| {
                            n.env.on_wire.get(probe).is_some_and(|(_, a)| *a == 0)
                        }) {
                            n.ghost.silent.insert(generation);
                        }
                        n.ghost.init_sent.insert(generation);
                    }
                    // No modern request before the server answered the probe as modern.
                    _ if modern_frame && !n.ghost.discovered.contains(&generation) => {
                        n.ghost.violations |= violation::ERA;
                    }
                    _ => {}
                }
                if method == "subscriptions/listen" && !n.ghost.owners.contains_key(&id) {
                    listen_sent(n, mv, generation, id, &v);
                }
                // An `input_required` retry carries exactly what its round owes: the inputs it
                // asked for and its state as received (none when none was given); nothing else
                // carries them.
                let fresh = !n.ghost.owners.contains_key(&id);
                let params = &v["params"];
                let has_state = params.get("requestState").is_some();
                let has_inputs = params.get("inputResponses").is_some();
                if let Some(c) = params["caller"].as_u64().and_then(|c| u8::try_from(c).ok())
                    && fresh
                {
                    match n.ghost.mrtr.remove(&c) {
                        Some((state, asks)) => {
                            let sent_state = params.get("requestState").and_then(Value::as_str);
                            let keys_ok = match asks {
                                0 => !has_inputs,
                                n => params["inputResponses"].as_object().is_some_and(|r| {
                                    r.len() == usize::from(n)
                                        && r.contains_key("q")
                                        && (n == 1 || r.contains_key("r"))
                                }),
                            };
                            let cap = n.m.config().max_input_rounds;
                            let rounds = n.ghost.rounds.entry(c).or_default();
                            *rounds += 1;
                            if sent_state != state.as_deref()
                                || (state.is_none() && has_state)
                                || !keys_ok
                                || *rounds > cap
                            {
                                n.ghost.violations |= violation::MRTR;
                            }
                            n.ghost.retried.insert(c);
                            if let Some(g) = n.ghost.calls.get_mut(&c) {
                                // A retry is the call's request from now on (a new id).
                                g.request = None;
                            }
                        }
                        // A reissue, or a call sent again after a listing of the tools or
                        // an authorization, carries what its last request carried.
                        None if (has_state || has_inputs)
                            && !n.ghost.reissue_due.contains(&c)
                            && !n.ghost.relist_waiting.contains(&c)
                            && !n.ghost.auth_resend_due.contains(&c) =>
                        {
                            n.ghost.violations |= violation::MRTR;
                        }
                        None => {}
                    }
                }
                let owner = match (method, mv, n.ghost.owners.get(&id)) {
                    ("initialize", _, _) => Owner::Init(generation),
                    ("server/discover", _, _) => Owner::Probe(generation),
                    ("subscriptions/listen", _, _) => Owner::Listen(generation),
                    _ if caller.is_some() => Owner::Call(caller.unwrap_or_default()),
                    (_, Some(Move::Call(c)), _) => Owner::Call(c),
                    (_, Some(Move::Subscribe), _) => Owner::Call(SUBSCRIBER),
                    (_, Some(Move::Unsubscribe), _) => Owner::Call(UNSUBSCRIBER),
                    (_, _, Some(o)) => *o,
                    ("resources/subscribe" | "logging/setLevel", _, None) => {
                        Owner::Restore(generation)
                    }
                    ("tools/list", _, None) => Owner::Relist(generation),
                    (_, _, None) => Owner::Init(0),
                };
                if owner == Owner::Relist(generation) && !n.ghost.owners.contains_key(&id) {
                    n.ghost.relist_in_flight = Some(id);
                }
                if owner == Owner::Restore(generation)
                    && !n.ghost.owners.contains_key(&id)
                    && v["params"]["uri"] == URI
                {
                    *n.ghost.restores.entry(generation).or_default() += 1;
                }
                match n.ghost.owners.get(&id) {
                    Some(o) if *o != owner => n.ghost.violations |= violation::ID_REUSED,
                    Some(_) => {}
                    None => {
                        if let Owner::Call(c) = owner
                            && let Some(g) = n.ghost.calls.get_mut(&c)
                        {
                            // Only a call kept across a session expiry is sent again (once),
                            // under a new id.
                            if g.request.is_some() {
                                if n.ghost.parked.remove(&c) {
                                    n.ghost.resent.insert(c);
                                } else if n.ghost.reissue_due.remove(&c) {
                                    *n.ghost.reissues.entry(c).or_default() += 1;
                                } else if n.ghost.relist_waiting.remove(&c) {
                                    n.ghost.resent_relisted.insert(c);
                                } else if n.ghost.auth_resend_due.remove(&c) {
                                    n.ghost.auth_resent.insert(c);
                                } else if n.ghost.auth_waiting.contains_key(&c) {
                                    n.ghost.violations |= violation::AUTH;
                                } else {
                                    n.ghost.violations |= violation::ID_REUSED;
                                }
                            }
                            g.request = Some(id);
                            // A new request's sends start over (its own attempts).
                            g.busy = 0;
                        }
                        n.ghost.owners.insert(id, owner);
                    }
                }
                // A legacy request goes out only after `notifications/initialized`.
                if method != "initialize"
                    && method != "server/discover"
                    && !modern_frame
                    && n.ghost.initialized.get(&generation).copied().unwrap_or(0) == 0
                {
                    n.ghost.violations |= violation::INITIALIZED;
                }
            } else if v.get("method").is_none()
                && v.get("id").is_some()
                && (!n.ghost.init_sent.contains(&generation)
                    || n.ghost.discovered.contains(&generation))
            {
                // A response to a server request: only a legacy server is ever answered.
                n.ghost.violations |= violation::ERA;
            }
        }
        Action::Reply {
            call,
            request,
            outcome,
        } => {
            let Ok(c) = u8::try_from(call.0) else {
                n.ghost.violations |= violation::PHANTOM_REPLY;
                return;
            };
            let now = n.m.now();
            let Some(g) = n.ghost.calls.get_mut(&c) else {
                n.ghost.violations |= violation::PHANTOM_REPLY;
                return;
            };
            g.replies += 1;
            if g.replies > 1 {
                n.ghost.violations |= violation::DOUBLE_REPLY;
            }
            if let Err(CallError::Unavailable { last_error, .. }) = &outcome
                && !same_cause(last_error.as_ref(), n.ghost.cause)
            {
                n.ghost.violations |= violation::WRONG_CAUSE;
            }
            if let Ok(body) = &outcome
                && let Some(answered) = body.value().get("for").and_then(Value::as_u64)
                && g.request != Some(answered)
            {
                n.ghost.violations |= violation::WRONG_CALLER;
            }
            if c == SUBSCRIBER && outcome.is_ok() && !n.ghost.unsubscribed {
                n.ghost.sub_live = true;
            }
            // A modern subscribe is answered done only by an acknowledgement that kept its
            // resource (or its unsubscribe), and not-honored only by one that left it out.
            if c == SUBSCRIBER && n.ghost.discovered.contains(&current) {
                let by_ack = |full: bool| matches!(mv, Some(Move::Frame(_, ServerFrame::ListenAck(_, f))) if f == full);
                let by_call = matches!(mv, Some(Move::Subscribe));
                match &outcome {
                    Ok(_) => {
                        if by_ack(true) {
                            n.ghost.seen |= seen::LISTEN_SUBSCRIBED;
                        } else if !by_call && mv != Some(Move::Unsubscribe) {
                            n.ghost.violations |= violation::LISTEN;
                        }
                    }
                    Err(CallError::SubscriptionNotHonored { .. }) => {
                        if by_ack(false) {
                            n.ghost.seen |= seen::LISTEN_NOT_HONORED;
                        } else if !by_call {
                            n.ghost.violations |= violation::LISTEN;
                        }
                    }
                    Err(_) => {}
                }
            }
            let from_server = matches!(
                outcome,
                Ok(_)
                    | Err(CallError::Server(_)
                        | CallError::InvalidResponse { .. }
                        | CallError::UnknownResultType { .. }
                        | CallError::InputRequired { .. })
            );
            n.ghost.mrtr.remove(&c);
            n.ghost.reissue_due.remove(&c);
            n.ghost.relist_waiting.remove(&c);
            if outcome.is_ok() && n.ghost.reissues.get(&c).is_some_and(|r| *r > 0) {
                n.ghost.seen |= seen::REISSUED_ANSWERED;
            }
            if outcome.is_ok() && n.ghost.resent_relisted.remove(&c) {
                n.ghost.seen |= seen::RELISTED_ANSWERED;
            }
            if n.ghost.retried.remove(&c) && outcome.is_ok() {
                n.ghost.seen |= seen::MRTR_ANSWERED;
            }
            if matches!(outcome, Err(CallError::InputFailed { .. })) {
                n.ghost.seen |= seen::INPUT_FAILED;
            }
            if matches!(outcome, Err(CallError::InputRequired { .. })) {
                n.ghost.seen |= seen::ROUNDS_SPENT;
            }
            if matches!(outcome, Err(CallError::UnknownResultType { .. })) {
                n.ghost.seen |= seen::BAD_RESULT_TYPE;
            }
            if from_server && request.is_some_and(|id| n.ghost.ended.contains_key(&id)) {
                n.ghost.violations |= violation::LATE_DELIVERED;
            }
            if from_server && request.is_some() {
                // The session works: the re-initialization budget is whole again.
                n.ghost.reinits = 0;
                if n.ghost.resent.contains(&c) {
                    n.ghost.seen |= seen::RESENT_ANSWERED;
                }
            }
            if outcome.is_ok() {
                n.ghost.seen |= seen::CALL_OK;
                if g.busy_seen {
                    n.ghost.seen |= seen::BUSY_THEN_OK;
                }
            }
            if matches!(outcome, Err(CallError::Timeout { .. })) {
                n.ghost.seen |= seen::TIMED_OUT;
            }
            n.ghost.auth_waiting.remove(&c);
            n.ghost.auth_resend_due.remove(&c);
            if n.ghost.auth_resent.remove(&c) && outcome.is_ok() {
                n.ghost.seen |= seen::AUTH_RESENT_ANSWERED;
            }
            if matches!(outcome, Err(CallError::Unauthorized { .. })) {
                match mv {
                    Some(Move::Authorize(_, false)) => n.ghost.seen |= seen::AUTH_FAILED_ANSWERED,
                    Some(Move::Frame(_, ServerFrame::AuthRequired(_)))
                        if n.ghost.auth_refusals.get(&c).is_some_and(|r| *r >= 1) =>
                    {
                        n.ghost.seen |= seen::AUTH_REFUSED_AGAIN;
                    }
                    _ => {}
                }
            }
            if !from_server && let Some(id) = request {
                n.ghost.ended.insert(id, now);
                // (A request the server answered, as with `input_required`, owes no cancel.)
                if !n.ghost.cancels.contains(&id)
                    && n.env
                        .on_wire
                        .get(&id)
                        .is_some_and(|(g, answers)| *g == current && *answers == 0)
                    && live_generation(n, current)
                {
                    n.ghost.cancel_owed.insert(id);
                }
            }
        }
        Action::StopDone { call, already } => {
            let s = u8::try_from(call.0.saturating_sub(100)).unwrap_or(u8::MAX);
            let count = n.ghost.stops.entry(s).or_default();
            *count += 1;
            if *count > 1 || (!already && n.ghost.stop_accepted) {
                n.ghost.violations |= violation::STOP_REPLY;
            }
            if !already {
                n.ghost.stop_accepted = true;
            }
        }
        Action::ServerRequest {
            generation,
            request,
        } => {
            let id = match request.id {
                ServerRequestId::Int(i) => i,
                ServerRequestId::Str(_) | ServerRequestId::Number(_) => -1,
            };
            n.env.server_requests.insert((generation, id));
            n.ghost.server_cancelled.remove(&(generation, id));
        }
        Action::InputRequest {
            generation,
            request,
            key,
            ..
        } => {
            n.env
                .inputs
                .insert((generation, request, u8::from(key != "q")));
        }
        // An abort races the handler: its answer may still come, and must change nothing.
        Action::AbortServerRequest { .. }
        | Action::AbortServerRequests { .. }
        | Action::AbortInputs { .. } => {}
        Action::Progress { call, .. } => {
            let replied = u8::try_from(call.0)
                .ok()
                .and_then(|c| n.ghost.calls.get(&c))
                .is_none_or(|g| g.replies > 0);
            if replied {
                n.ghost.violations |= violation::PROGRESS_AFTER_REPLY;
            }
            // Progress moves the deadline of a call that asked for it, never past its cap.
            let now = n.m.now();
            let timeout = n.m.config().request_timeout;
            if let Ok(c) = u8::try_from(call.0)
                && let options = call_options(c)
                && options.reset_timeout_on_progress
                && let Some(g) = n.ghost.calls.get_mut(&c)
            {
                let cap = options
                    .max_total_timeout
                    .map_or(Duration::MAX, |t| g.started.saturating_add(t));
                let moved = now.saturating_add(options.timeout.unwrap_or(timeout));
                g.deadline = moved.min(cap);
            }
        }
        Action::Report(Report::LateResponse { .. }) => n.ghost.seen |= seen::LATE_DROPPED,
        Action::Report(Report::ListenGaveUp) => n.ghost.seen |= seen::LISTEN_GAVE_UP,
        Action::Report(Report::UnknownResponse { id }) => {
            let ttl = n.m.config().tombstone_ttl;
            let now = n.m.now();
            if let ResponseId::Number(id) = id
                && matches!(n.ghost.owners.get(&id), Some(Owner::Call(_)))
                && n.ghost.ended.get(&id).is_some_and(|at| now < *at + ttl)
            {
                n.ghost.violations |= violation::LATE_MISREPORTED;
            }
        }
        Action::Exit => {
            if n.ghost.exited || !n.ghost.stop_accepted {
                n.ghost.violations |= violation::UNASKED_CLOSE;
            }
            n.ghost.exited = true;
        }
        Action::Report(_) | Action::Notification(_) | Action::Listening(_) => {}
    }
}

/// One line for an action in a trace.
pub fn describe(a: &Action) -> String {
    match a {
        Action::Send {
            generation,
            token,
            frame,
        } => {
            format!(
                "send generation {generation} {token:?}: {}",
                String::from_utf8_lossy(frame)
            )
        }
        Action::Reply {
            call,
            request,
            outcome,
        } => {
            let o = match outcome {
                Ok(_) => "ok".to_string(),
                Err(e) => format!("{e:?}"),
            };
            format!("reply caller {} (request {request:?}): {o}", call.0)
        }
        other => format!("{other:?}"),
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
        use violation as v;
        fn ok(w: &World, bit: u64) -> bool {
            w.ghost.violations & bit == 0
        }
        vec![
            Property::<Self>::always("no caller is answered twice", |_, w| {
                ok(w, v::DOUBLE_REPLY | v::PHANTOM_REPLY)
            }),
            Property::<Self>::always("an ended id never reaches its caller", |_, w| {
                ok(w, v::LATE_DELIVERED)
            }),
            Property::<Self>::always("after stop every call has exactly one answer", |_, w| {
                !w.ghost.stop_accepted || w.ghost.calls.values().all(|c| c.replies == 1)
            }),
            Property::<Self>::always("nothing is sent after stop", |_, w| {
                ok(w, v::SENT_AFTER_STOP)
            }),
            Property::<Self>::always(
                "no call outlives ready, but those kept across a session expiry",
                |_, w| {
                    let keeping = matches!(w.m.state(), State::Starting | State::Initializing);
                    w.m.state() == State::Ready
                        || w.ghost
                            .calls
                            .iter()
                            .all(|(c, g)| g.replies > 0 || (keeping && w.ghost.parked.contains(c)))
                },
            ),
            Property::<Self>::always("ids are never reused", |_, w| ok(w, v::ID_REUSED)),
            Property::<Self>::always("backoff stays within bounds", |_, w| {
                ok(w, v::BACKOFF_BOUNDS)
            }),
            Property::<Self>::always("stale generations change nothing", |_, w| {
                ok(w, v::STALE_CHANGED)
            }),
            Property::<Self>::always("cancel only what the server saw, once", |_, w| {
                ok(w, v::BAD_CANCEL)
            }),
            Property::<Self>::always("credit only for the open transport", |_, w| {
                ok(w, v::CREDIT_AFTER_CLOSE)
            }),
            // What waits between a transport and the machine is bounded by the read window:
            // a frame taken gives one credit back, never more.
            Property::<Self>::always("no more credit than the read window", |_, w| {
                let window = w.m.config().read_window.max(1);
                w.env.gens.values().all(|g| u32::from(g.credit) <= window)
            }),
            Property::<Self>::always("frames only to the open transport", |_, w| {
                ok(w, v::SENT_ON_DEAD)
            }),
            Property::<Self>::always("a transport is closed before the next spawns", |_, w| {
                ok(w, v::LEAKED_TRANSPORT)
            }),
            Property::<Self>::always("initialized once, before any call", |_, w| {
                ok(w, v::INITIALIZED)
            }),
            Property::<Self>::always("late answers are recognised as late", |_, w| {
                ok(w, v::LATE_MISREPORTED)
            }),
            Property::<Self>::always("a cancel is answered at once", |_, w| {
                ok(w, v::CANCEL_UNANSWERED)
            }),
            Property::<Self>::always("every stop is answered once", |_, w| ok(w, v::STOP_REPLY)),
            Property::<Self>::always("no progress after the answer", |_, w| {
                ok(w, v::PROGRESS_AFTER_REPLY)
            }),
            Property::<Self>::always(
                "a reconnect asks again for exactly the live subscriptions, once",
                |_, w| ok(w, v::RESTORE),
            ),
            Property::<Self>::always("answers reach the caller that asked", |_, w| {
                ok(w, v::WRONG_CALLER)
            }),
            Property::<Self>::always("impossible rows never fire", |_, w| {
                ok(w, v::IMPOSSIBLE_ROW)
            }),
            Property::<Self>::always("request timers die with their calls", |_, w| {
                w.m.armed_timers().iter().all(|(k, _)| match k.id {
                    None => true,
                    Some(id) => match w.ghost.owners.get(&id) {
                        Some(Owner::Call(c)) => {
                            w.ghost.calls.get(c).is_some_and(|g| g.replies == 0)
                        }
                        Some(Owner::Restore(g) | Owner::Relist(g)) => *g == w.m.generation(),
                        // A listen's timer bounds its acknowledgement only.
                        Some(Owner::Listen(g)) => {
                            *g == w.m.generation()
                                && w.ghost
                                    .listens
                                    .get(&id)
                                    .is_some_and(|l| l.alive() && !l.taken)
                        }
                        // A modern subscribe waits for an acknowledgement under an id never
                        // sent.
                        None => w
                            .ghost
                            .calls
                            .get(&SUBSCRIBER)
                            .is_some_and(|g| g.replies == 0),
                        _ => false,
                    },
                })
            }),
            Property::<Self>::always("no call is pending past its deadline", |_, w| {
                let now = w.m.now();
                w.ghost
                    .calls
                    .values()
                    .all(|g| g.replies > 0 || now <= g.deadline)
            }),
            Property::<Self>::always(
                "starting, initializing, backoff and closing end within their bounds",
                |_, w| w.ghost.phase_deadline.is_none_or(|d| w.m.now() <= d),
            ),
            Property::<Self>::always("a live answer reaches its caller at once", |_, w| {
                ok(w, v::ANSWER_LOST)
            }),
            Property::<Self>::always(
                "no tombstone is held past its expiry plus one sweep period",
                |_, w| {
                    let sweep = w.m.config().tombstone_sweep;
                    w.m.oldest_tombstone_expiry()
                        .is_none_or(|exp| w.m.now() <= exp.saturating_add(sweep))
                },
            ),
            Property::<Self>::always("ready knows the server the handshake accepted", |_, w| {
                w.m.state() != State::Ready || w.m.server().is_some_and(|s| s.name() == "model")
            }),
            Property::<Self>::always("an open transport is always read", |_, w| ok(w, v::DEAF)),
            Property::<Self>::always(
                "what is owed to the server goes on the wire once, or is being retried",
                |_, w| ok(w, v::OWED),
            ),
            Property::<Self>::always(
                "every frame is reported, delivered or answered as the protocol says",
                |_, w| ok(w, v::UNREPORTED),
            ),
            Property::<Self>::always("a busy request is offered again in time", |_, w| {
                let now = w.m.now();
                w.ghost
                    .calls
                    .values()
                    .all(|g| g.replies > 0 || g.resend_due.is_none_or(|d| now <= d))
                    && w.ghost
                        .own_busy
                        .values()
                        .all(|(_, due)| due.is_none_or(|d| now <= d))
            }),
            Property::<Self>::always(
                "the connection closes only when stopped, with its exit, every transport closed",
                |_, w| ok(w, v::UNASKED_CLOSE),
            ),
            Property::<Self>::always(
                "a caller turned away is told the cause of the last failure",
                |_, w| ok(w, v::WRONG_CAUSE),
            ),
            Property::<Self>::always(
                "an expired session's calls that never ran are sent again once on the new one; the others are answered at once",
                |_, w| ok(w, v::SESSION),
            ),
            Property::<Self>::always(
                "an expired session is initialized again at once, at most the budget in a row",
                |_, w| ok(w, v::REINIT),
            ),
            Property::<Self>::always(
                "the era is decided before a modern request, initialize never goes to a modern server, and only a legacy server is answered",
                |_, w| ok(w, v::ERA),
            ),
            Property::<Self>::always(
                "in modern ready the listen asks for what is wanted, its notifications are delivered exactly while due, a subscribe is answered by the acknowledgement, and a lost listen is reopened only by its timer, within the cap",
                |_, w| ok(w, v::LISTEN),
            ),
            Property::<Self>::always(
                "a request refused for want of authorization waits for one authorization at a time, within the budget, and goes out again exactly when it ends with a token; refused again, or the authorization failed, it is answered",
                |_, w| ok(w, v::AUTH),
            ),
            Property::<Self>::always(
                "a legacy guess whose handshake failed is probed again",
                |_, w| ok(w, v::VERDICT),
            ),
            Property::<Self>::always(
                "a modern request lost without an answer is sent again at once under a new id, a bounded number of times, then its error is the answer",
                |_, w| ok(w, v::REISSUE),
            ),
            Property::<Self>::always(
                "a server that dies of the probe is spawned again at once in auto (unless it was last found modern), after a backoff delay otherwise",
                |_, w| ok(w, v::RESPAWN),
            ),
            Property::<Self>::always(
                "an input_required round is sent again exactly: a new id, its inputs, its state as received, within the round cap",
                |_, w| ok(w, v::MRTR),
            ),
            Property::<Self>::sometimes("ready is reached", |_, w| w.ghost.seen & seen::READY != 0),
            Property::<Self>::sometimes("a call succeeds", |_, w| {
                w.ghost.seen & seen::CALL_OK != 0
            }),
            Property::<Self>::sometimes(RUN_GUARDS[0].0, |_, w| {
                w.ghost.seen & RUN_GUARDS[0].1 != 0
            }),
            Property::<Self>::sometimes(RUN_GUARDS[1].0, |_, w| {
                w.ghost.seen & RUN_GUARDS[1].1 != 0
            }),
            Property::<Self>::sometimes(RUN_GUARDS[2].0, |_, w| {
                w.ghost.seen & RUN_GUARDS[2].1 != 0
            }),
            Property::<Self>::sometimes(RUN_GUARDS[3].0, |_, w| {
                w.ghost.seen & RUN_GUARDS[3].1 != 0
            }),
            Property::<Self>::sometimes(RUN_GUARDS[4].0, |_, w| {
                w.ghost.seen & RUN_GUARDS[4].1 != 0
            }),
            Property::<Self>::sometimes(RUN_GUARDS[5].0, |_, w| {
                w.ghost.seen & RUN_GUARDS[5].1 != 0
            }),
            Property::<Self>::sometimes(RUN_GUARDS[6].0, |_, w| {
                w.ghost.seen & RUN_GUARDS[6].1 != 0
            }),
            Property::<Self>::sometimes(RUN_GUARDS[7].0, |_, w| {
                w.ghost.seen & RUN_GUARDS[7].1 != 0
            }),
            Property::<Self>::sometimes(RUN_GUARDS[8].0, |_, w| {
                w.ghost.seen & RUN_GUARDS[8].1 != 0
            }),
            Property::<Self>::sometimes(RUN_GUARDS[9].0, |_, w| {
                w.ghost.seen & RUN_GUARDS[9].1 != 0
            }),
            Property::<Self>::sometimes(RUN_GUARDS[10].0, |_, w| {
                w.ghost.seen & RUN_GUARDS[10].1 != 0
            }),
            Property::<Self>::sometimes(RUN_GUARDS[11].0, |_, w| {
                w.ghost.seen & RUN_GUARDS[11].1 != 0
            }),
            Property::<Self>::sometimes(RUN_GUARDS[12].0, |_, w| {
                w.ghost.seen & RUN_GUARDS[12].1 != 0
            }),
            Property::<Self>::sometimes(RUN_GUARDS[13].0, |_, w| {
                w.ghost.seen & RUN_GUARDS[13].1 != 0
            }),
            Property::<Self>::sometimes(RUN_GUARDS[14].0, |_, w| {
                w.ghost.seen & RUN_GUARDS[14].1 != 0
            }),
            Property::<Self>::sometimes(RUN_GUARDS[15].0, |_, w| {
                w.ghost.seen & RUN_GUARDS[15].1 != 0
            }),
            Property::<Self>::sometimes(RUN_GUARDS[16].0, |_, w| {
                w.ghost.seen & RUN_GUARDS[16].1 != 0
            }),
            Property::<Self>::sometimes(RUN_GUARDS[17].0, |_, w| {
                w.ghost.seen & RUN_GUARDS[17].1 != 0
            }),
            Property::<Self>::sometimes(RUN_GUARDS[18].0, |_, w| {
                w.ghost.seen & RUN_GUARDS[18].1 != 0
            }),
            Property::<Self>::sometimes(RUN_GUARDS[19].0, |_, w| {
                w.ghost.seen & RUN_GUARDS[19].1 != 0
            }),
            Property::<Self>::sometimes(RUN_GUARDS[20].0, |_, w| {
                w.ghost.seen & RUN_GUARDS[20].1 != 0
            }),
            Property::<Self>::sometimes(RUN_GUARDS[21].0, |_, w| {
                w.ghost.seen & RUN_GUARDS[21].1 != 0
            }),
            Property::<Self>::sometimes(RUN_GUARDS[22].0, |_, w| {
                w.ghost.seen & RUN_GUARDS[22].1 != 0
            }),
            Property::<Self>::sometimes(RUN_GUARDS[23].0, |_, w| {
                w.ghost.seen & RUN_GUARDS[23].1 != 0
            }),
            Property::<Self>::sometimes(RUN_GUARDS[24].0, |_, w| {
                w.ghost.seen & RUN_GUARDS[24].1 != 0
            }),
            Property::<Self>::sometimes(RUN_GUARDS[25].0, |_, w| {
                w.ghost.seen & RUN_GUARDS[25].1 != 0
            }),
            Property::<Self>::sometimes(RUN_GUARDS[26].0, |_, w| {
                w.ghost.seen & RUN_GUARDS[26].1 != 0
            }),
            Property::<Self>::sometimes(RUN_GUARDS[27].0, |_, w| {
                w.ghost.seen & RUN_GUARDS[27].1 != 0
            }),
            Property::<Self>::sometimes(RUN_GUARDS[28].0, |_, w| {
                w.ghost.seen & RUN_GUARDS[28].1 != 0
            }),
            Property::<Self>::sometimes(RUN_GUARDS[29].0, |_, w| {
                w.ghost.seen & RUN_GUARDS[29].1 != 0
            }),
            Property::<Self>::sometimes(RUN_GUARDS[30].0, |_, w| {
                w.ghost.seen & RUN_GUARDS[30].1 != 0
            }),
            Property::<Self>::sometimes(RUN_GUARDS[31].0, |_, w| {
                w.ghost.seen & RUN_GUARDS[31].1 != 0
            }),
            Property::<Self>::sometimes(RUN_GUARDS[32].0, |_, w| {
                w.ghost.seen & RUN_GUARDS[32].1 != 0
            }),
            Property::<Self>::sometimes(RUN_GUARDS[33].0, |_, w| {
                w.ghost.seen & RUN_GUARDS[33].1 != 0
            }),
            Property::<Self>::sometimes(RUN_GUARDS[34].0, |_, w| {
                w.ghost.seen & RUN_GUARDS[34].1 != 0
            }),
            Property::<Self>::sometimes(RUN_GUARDS[35].0, |_, w| {
                w.ghost.seen & RUN_GUARDS[35].1 != 0
            }),
            Property::<Self>::sometimes(RUN_GUARDS[36].0, |_, w| {
                w.ghost.seen & RUN_GUARDS[36].1 != 0
            }),
            Property::<Self>::sometimes(RUN_GUARDS[37].0, |_, w| {
                w.ghost.seen & RUN_GUARDS[37].1 != 0
            }),
            Property::<Self>::sometimes(RUN_GUARDS[38].0, |_, w| {
                w.ghost.seen & RUN_GUARDS[38].1 != 0
            }),
        ]
    }
}

/// Vacuity guards beyond the two every configuration must meet; each must be met by at
/// least one configuration of a run.
pub const RUN_GUARDS: [(&str, u64); 39] = [
    (
        "two full reconnect cycles reach ready",
        seen::SECOND_RECONNECT_READY,
    ),
    (
        "a transport dies while the handler holds a server request",
        seen::CRASH_WITH_SERVER_REQUEST,
    ),
    ("three calls are in flight at once", seen::THREE_IN_FLIGHT),
    ("a busy send later succeeds", seen::BUSY_THEN_OK),
    ("a reconnect reaches ready", seen::RECONNECT_READY),
    ("a late response is dropped", seen::LATE_DROPPED),
    ("a call times out", seen::TIMED_OUT),
    ("a stop finds calls in flight", seen::STOP_WITH_CALLS),
    (
        "a subscription is restored after a reconnect",
        seen::RESTORED,
    ),
    (
        "a call kept across a session expiry is answered by the new session",
        seen::RESENT_ANSWERED,
    ),
    (
        "a session expiry past the budget takes the backoff path",
        seen::REINITS_SPENT,
    ),
    ("ready in the modern era", seen::READY_MODERN),
    (
        "ready in the legacy era after the probe was answered",
        seen::READY_LEGACY_AFTER_PROBE,
    ),
    (
        "ready in the legacy era on a fresh process after the server died of the probe",
        seen::READY_LEGACY_RESPAWNED,
    ),
    (
        "ready in the modern era after an unsupported-version answer",
        seen::READY_MODERN_AFTER_RETRY,
    ),
    (
        "ready in the modern era after initialize was refused by a modern server",
        seen::REPROBED_MODERN,
    ),
    (
        "modern forced refuses a server that is not modern",
        seen::FORCED_REFUSED,
    ),
    (
        "a modern result of an unusable type is answered to its caller",
        seen::BAD_RESULT_TYPE,
    ),
    (
        "ready in the legacy era after a probe that got no answer",
        seen::READY_LEGACY_AFTER_SILENCE,
    ),
    (
        "a call sent again with its input_required inputs gets a result",
        seen::MRTR_ANSWERED,
    ),
    (
        "a handler's error to an input is answered to its caller",
        seen::INPUT_FAILED,
    ),
    ("a call past the round cap is answered", seen::ROUNDS_SPENT),
    (
        "a call sent again after its request was lost gets a result",
        seen::REISSUED_ANSWERED,
    ),
    (
        "a call lost past the reissue cap is answered with the error",
        seen::REISSUES_SPENT,
    ),
    (
        "a call sent again after the tools were listed again gets a result",
        seen::RELISTED_ANSWERED,
    ),
    (
        "a listen's notification is delivered",
        seen::LISTEN_DELIVERED,
    ),
    (
        "a notification of a listen whose notifications are not due is dropped",
        seen::LISTEN_STRAY,
    ),
    (
        "a modern subscribe is answered done by the listen's acknowledgement",
        seen::LISTEN_SUBSCRIBED,
    ),
    (
        "a modern subscribe the acknowledgement left out is told so",
        seen::LISTEN_NOT_HONORED,
    ),
    (
        "a listen's acknowledgement replaces an acknowledged one",
        seen::LISTEN_REPLACED,
    ),
    (
        "a lost listen is opened again by its retry timer",
        seen::LISTEN_REOPENED,
    ),
    (
        "lost listens are given up past the cap",
        seen::LISTEN_GAVE_UP,
    ),
    ("a refused listen is not opened again", seen::LISTEN_REFUSED),
    (
        "a call sent again after an authorization gets a result",
        seen::AUTH_RESENT_ANSWERED,
    ),
    (
        "ready after the handshake request was authorized",
        seen::AUTH_HANDSHAKE_READY,
    ),
    (
        "a failed authorization answers a caller waiting for it",
        seen::AUTH_FAILED_ANSWERED,
    ),
    (
        "a call refused again after an authorization is answered with the error",
        seen::AUTH_REFUSED_AGAIN,
    ),
    (
        "a session that stayed up restarts the backoff sequence",
        seen::STABLE_RESTART,
    ),
    (
        "a session that proved nothing is followed by a grown delay",
        seen::UNPROVEN_SESSION_BACKOFF,
    ),
];
