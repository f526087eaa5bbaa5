//! The stateright [`Model`]: environment moves, the thin interpreter of the machine's actions
//! (the same role the runtime's driver plays), and the properties.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use mcp_machine::{
    Action, CallError, CallId, CallOptions, CallRequest, ClientCapabilities, Config, HandlerReply,
    Input, Machine, NotifyRequest, ROWS, Report, RequestId, ResponseId, SendOutcome, SendToken,
    ServerRequestId, SessionChange, State, Step, TimerKind, TransportError,
};
use serde_json::{Value, json};
use stateright::{Model, Property};

use crate::world::{CallGhost, Junk, Move, Owner, ServerFrame, World, seen, violation};

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
    pub junk: u16,
    /// BFS depth bound (stateright's `target_max_depth`).
    pub depth: usize,
    /// A subscriber that subscribes once, and another caller that may end it (0 or 1).
    pub subscriptions: u8,
}

/// Which machine is explored: the real one, or a deliberately broken one.
#[derive(Clone, Debug)]
pub enum Variant {
    /// The generated table and the real handlers.
    Real,
    /// A handler bug.
    Handler(mcp_machine::Mutant),
    /// A mutated copy of the table.
    Table(Vec<mcp_machine::Row>),
}

/// Rows fired during exploration (a bitset over the table's rows).
#[derive(Debug, Default)]
pub struct Coverage(Vec<AtomicU64>);

impl Coverage {
    /// An empty coverage with one bit per row of the table.
    pub fn for_table() -> Self {
        Coverage(
            (0..ROWS.len().div_ceil(64))
                .map(|_| AtomicU64::new(0))
                .collect(),
        )
    }

    fn mark(&self, row: u16) {
        let row = usize::from(row);
        if let Some(word) = self.0.get(row / 64) {
            word.fetch_or(1 << (row % 64), Ordering::Relaxed);
        }
    }

    /// Whether the row fired.
    pub fn fired(&self, row: usize) -> bool {
        self.0
            .get(row / 64)
            .is_some_and(|w| w.load(Ordering::Relaxed) & (1 << (row % 64)) != 0)
    }

    /// Adds another coverage into this one.
    pub fn merge(&self, other: &Coverage) {
        for (a, b) in self.0.iter().zip(&other.0) {
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
/// server requests reach the handler.
pub fn model_config() -> Config {
    Config {
        capabilities: ClientCapabilities {
            sampling: true,
            elicitation: true,
            ..Default::default()
        },
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
/// The caller numbers of the subscriber and of the unsubscriber.
const SUBSCRIBER: u8 = 60;
const UNSUBSCRIBER: u8 = 61;
const URI: &str = "file:///watched";

fn session_call(caller: u8, change: SessionChange) -> Input {
    let method = match change {
        SessionChange::Unsubscribe(_) => "resources/unsubscribe",
        SessionChange::Subscribe(_) | SessionChange::SetLogLevel(_) => "resources/subscribe",
    };
    Input::Call(CallRequest {
        call: CallId(u64::from(caller)),
        method: method.into(),
        params: Some(json!({ "uri": URI })),
        options: CallOptions::default(),
        session: Some(change),
    })
}
/// Caller numbers of notifies start here (calls are 1, 2, ...).
const NOTIFY_BASE: u8 = 50;

fn frame_bytes(f: ServerFrame) -> Vec<u8> {
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
        ServerFrame::Ping => json!({"jsonrpc": "2.0", "id": "p", "method": "ping"}),
        ServerFrame::Sampling | ServerFrame::SamplingAgain => {
            json!({"jsonrpc": "2.0", "id": SAMPLING_ID,
            "method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 1}})
        }
        ServerFrame::Undeclared => json!({"jsonrpc": "2.0", "id": 8, "method": "roots/list"}),
        ServerFrame::ElicitUrl => json!({"jsonrpc": "2.0", "id": 9, "method": "elicitation/create",
            "params": {"mode": "url", "url": "https://example.invalid", "message": "m", "elicitationId": "e"}}),
        ServerFrame::ServerCancel => json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": SAMPLING_ID}}),
        ServerFrame::Log => json!({"jsonrpc": "2.0", "method": "notifications/message",
            "params": {"level": "info", "data": "x"}}),
        ServerFrame::Progress(id) => json!({"jsonrpc": "2.0", "method": "notifications/progress",
            "params": {"progressToken": id, "progress": 1}}),
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
        let bit = j as u16;
        self.bounds.junk & bit != 0 && (self.repeat_junk || w.env.junk_used & bit == 0)
    }

    /// The initial world (with the machine's initial actions carried out).
    pub fn initial(&self) -> World {
        let mut m = Machine::new(model_config(), 0x5eed, Duration::ZERO);
        m = match &self.variant {
            Variant::Real => m,
            Variant::Handler(mutant) => m.with_mutant(*mutant),
            Variant::Table(rows) => m.with_rows(rows.clone()),
        };
        let mut w = World {
            m,
            env: Default::default(),
            ghost: Default::default(),
        };
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
        if b.subscriptions > 0 && !w.ghost.calls.contains_key(&SUBSCRIBER) {
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
                out.push(Move::Up(generation));
            }
            if g.closed || w.env.crashes < b.crashes {
                out.push(Move::Down(generation));
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
                match w.ghost.owners.get(&id) {
                    Some(Owner::Init(_)) => {
                        out.push(Move::Frame(generation, ServerFrame::InitOk(id)));
                        if self.junk_ok(w, Junk::InitBadVersion) {
                            out.push(Move::Frame(generation, ServerFrame::InitBadVersion(id)));
                        }
                        if self.junk_ok(w, Junk::InitError) {
                            out.push(Move::Frame(generation, ServerFrame::InitError(id)));
                        }
                    }
                    Some(Owner::Restore(_)) => {
                        out.push(Move::Frame(generation, ServerFrame::Answer(id)));
                    }
                    Some(Owner::Call(_)) => {
                        out.push(Move::Frame(generation, ServerFrame::Answer(id)));
                        if answers == 0 && self.junk_ok(w, Junk::Progress) {
                            out.push(Move::Frame(generation, ServerFrame::Progress(id)));
                        }
                    }
                    None => {}
                }
            }
            let singles = [
                (Junk::Unknown, ServerFrame::Unknown),
                (Junk::Malformed, ServerFrame::Malformed),
                (Junk::Oversized, ServerFrame::Oversized),
                (Junk::Ping, ServerFrame::Ping),
                (Junk::Sampling, ServerFrame::Sampling),
                (Junk::Undeclared, ServerFrame::Undeclared),
                (Junk::ElicitUrl, ServerFrame::ElicitUrl),
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
        for (key, _) in w.m.armed_timers() {
            // The generation bound: no reconnect beyond the last generation allowed.
            if key.kind == TimerKind::Reconnect && w.m.generation() >= self.bounds.gens {
                continue;
            }
            out.push(Move::Timer(key));
        }
    }

    /// Applies one move; `log` collects a readable account for traces.
    pub fn apply(&self, w: &World, mv: Move, mut log: Option<&mut Vec<String>>) -> World {
        let mut n = w.clone();
        // Inputs other than timers keep the time: only a firing timer moves the model's clock.
        let now = n.m.now();
        let stale_gen = |g: u64| g != w.m.generation();
        let mut stale = false;
        let step: Option<Step> = match mv {
            Move::Call(c) => {
                n.env.calls = c;
                n.ghost.calls.insert(c, CallGhost::default());
                Some(n.m.handle(
                    Input::Call(CallRequest {
                        call: CallId(u64::from(c)),
                        method: "tools/call".into(),
                        params: Some(json!({"name": "t"})),
                        options: call_options(c),
                        session: None,
                    }),
                    now,
                ))
            }
            Move::Subscribe => {
                n.ghost.calls.insert(SUBSCRIBER, CallGhost::default());
                let change = SessionChange::Subscribe(URI.into());
                Some(n.m.handle(session_call(SUBSCRIBER, change), now))
            }
            Move::Unsubscribe => {
                n.ghost.calls.insert(UNSUBSCRIBER, CallGhost::default());
                n.ghost.unsubscribed = true;
                n.ghost.sub_live = false;
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
                n.ghost.calls.insert(NOTIFY_BASE + k, CallGhost::default());
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
            Move::Up(g) => {
                stale = stale_gen(g);
                if let Some(e) = n.env.gens.get_mut(&g) {
                    e.up = true;
                }
                Some(n.m.handle(Input::TransportUp { generation: g }, now))
            }
            Move::Down(g) => {
                stale = stale_gen(g);
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
            Move::Frame(g, f) => {
                stale = stale_gen(g);
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
                    ServerFrame::InitOk(_) | ServerFrame::Answer(_) => None,
                };
                if let Some(j) = junk {
                    n.env.junk_used |= j as u16;
                }
                if let ServerFrame::InitOk(id)
                | ServerFrame::InitBadVersion(id)
                | ServerFrame::InitError(id)
                | ServerFrame::Answer(id) = f
                    && let Some(e) = n.env.on_wire.get_mut(&id)
                {
                    if e.1 >= 1 {
                        n.env.junk_used |= Junk::Duplicate as u16;
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
                    SendOutcome::Failed => n.env.junk_used |= Junk::SendFailed as u16,
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
            Move::Timer(key) => n.m.fire_timer(key),
        };
        if let Some(step) = step {
            self.observe(&mut n, step, &format!("{mv:?}"), log.as_deref_mut());
        }
        let emitted = self.drain(&mut n, Some(mv), log);
        if stale && (emitted > 0 || n.m != w.m) {
            n.ghost.violations |= violation::STALE_CHANGED;
        }
        self.after_step(w, &mut n, mv);
        n
    }

    /// Coverage, impossible rows and the trace line of one row that fired.
    fn observe(&self, n: &mut World, step: Step, what: &str, log: Option<&mut Vec<String>>) {
        self.coverage.mark(step.row);
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
    fn drain(&self, n: &mut World, mv: Option<Move>, mut log: Option<&mut Vec<String>>) -> usize {
        let mut count = 0;
        while let Some(action) = n.m.poll_action() {
            count += 1;
            if let Some(log) = log.as_deref_mut() {
                log.push(format!("      {}", describe(&action)));
            }
            let send = match &action {
                Action::Send {
                    generation, token, ..
                } => Some((*generation, *token)),
                _ => None,
            };
            interpret(n, mv, action);
            if let Some((generation, token)) = send {
                let outcome = n.env.send_mode.unwrap_or(SendOutcome::Ok);
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
        count
    }

    fn after_step(&self, w: &World, n: &mut World, mv: Move) {
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
        // Backoff bounds: each new reconnect delay is min·2^n capped, ±20 %.
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
            let factor = 1u32 << n.ghost.backoff_n.min(20);
            let base = c.backoff_min.saturating_mul(factor).min(c.backoff_max);
            let delay = at.saturating_sub(n.m.now());
            let pct = c.backoff_jitter_pct;
            if delay < base * (100 - pct) / 100 || delay > base * (100 + pct) / 100 {
                n.ghost.violations |= violation::BACKOFF_BOUNDS;
            }
            n.ghost.backoff_n += 1;
        }
        // A new generation's ready asks again for exactly the live subscription, once.
        if n.m.state() == State::Ready && w.m.state() != State::Ready {
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
            n.ghost.backoff_n = 0;
            if n.m.generation() >= 2 {
                n.ghost.seen |= seen::RECONNECT_READY;
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

/// The interpreter: what the driver would do, recorded as ghost history.
fn interpret(n: &mut World, mv: Option<Move>, action: Action) {
    let current = n.m.generation();
    match action {
        Action::SpawnTransport { generation } => {
            if n.env.gens.values().any(|g| !g.closed && !g.down) {
                n.ghost.violations |= violation::LEAKED_TRANSPORT;
            }
            n.env.gens.insert(generation, Default::default());
        }
        Action::CloseTransport { generation } => {
            if let Some(g) = n.env.gens.get_mut(&generation) {
                g.closed = true;
            }
        }
        Action::GrantCredit { generation } => match n.env.gens.get_mut(&generation) {
            Some(g) if !g.closed && !g.down && generation == current => g.credit += 1,
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
                let owner = match (method, mv, n.ghost.owners.get(&id)) {
                    ("initialize", _, _) => Owner::Init(generation),
                    (_, Some(Move::Call(c)), _) => Owner::Call(c),
                    (_, Some(Move::Subscribe), _) => Owner::Call(SUBSCRIBER),
                    (_, Some(Move::Unsubscribe), _) => Owner::Call(UNSUBSCRIBER),
                    (_, _, Some(o)) => *o,
                    ("resources/subscribe" | "logging/setLevel", _, None) => {
                        Owner::Restore(generation)
                    }
                    (_, _, None) => Owner::Init(0),
                };
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
                            if g.request.is_some() {
                                n.ghost.violations |= violation::ID_REUSED;
                            }
                            g.request = Some(id);
                        }
                        n.ghost.owners.insert(id, owner);
                    }
                }
                if method != "initialize"
                    && n.ghost.initialized.get(&generation).copied().unwrap_or(0) == 0
                {
                    n.ghost.violations |= violation::INITIALIZED;
                }
            }
            if method == "notifications/initialized" {
                let count = n.ghost.initialized.entry(generation).or_default();
                *count += 1;
                if *count > 1 {
                    n.ghost.violations |= violation::INITIALIZED;
                }
            }
            if method == "notifications/cancelled" {
                let id = v["params"]["requestId"].as_u64().unwrap_or(u64::MAX);
                if !n.env.on_wire.contains_key(&id) || !n.ghost.cancels.insert(id) {
                    n.ghost.violations |= violation::BAD_CANCEL;
                }
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
            if let Ok(body) = &outcome
                && let Some(answered) = body.get("for").and_then(Value::as_u64)
                && g.request != Some(answered)
            {
                n.ghost.violations |= violation::WRONG_CALLER;
            }
            if c == SUBSCRIBER && outcome.is_ok() && !n.ghost.unsubscribed {
                n.ghost.sub_live = true;
            }
            let from_server = matches!(outcome, Ok(_) | Err(CallError::Server(_)));
            if from_server && request.is_some_and(|id| n.ghost.ended.contains_key(&id)) {
                n.ghost.violations |= violation::LATE_DELIVERED;
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
            if !from_server && let Some(id) = request {
                n.ghost.ended.insert(id, now);
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
        }
        // An abort races the handler: its answer may still come, and must change nothing.
        Action::AbortServerRequest { .. } | Action::AbortServerRequests { .. } => {}
        Action::Progress { call, .. } => {
            let replied = u8::try_from(call.0)
                .ok()
                .and_then(|c| n.ghost.calls.get(&c))
                .is_none_or(|g| g.replies > 0);
            if replied {
                n.ghost.violations |= violation::PROGRESS_AFTER_REPLY;
            }
        }
        Action::Report(Report::LateResponse { .. }) => n.ghost.seen |= seen::LATE_DROPPED,
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
        Action::Report(_) | Action::Notification(_) | Action::Exit => {}
    }
}

/// Liveness, bounded: if the environment falls silent from here (every pending send taken,
/// the server answers nothing, no one calls or stops), timers alone answer every call.
pub fn silence_answers_every_call(w: &World) -> bool {
    if w.all_calls_answered() {
        return true;
    }
    let mut m = w.m.clone();
    let mut open: std::collections::BTreeSet<u64> = w
        .ghost
        .calls
        .iter()
        .filter(|(_, g)| g.replies == 0)
        .map(|(c, _)| u64::from(*c))
        .collect();
    // Every send is taken at once; only the replies matter.
    let mut drain = |m: &mut Machine| {
        while let Some(a) = m.poll_action() {
            match a {
                Action::Reply { call, .. } => {
                    open.remove(&call.0);
                }
                Action::Send {
                    generation, token, ..
                } => {
                    let now = m.now();
                    let outcome = SendOutcome::Ok;
                    m.handle(
                        Input::SendResult {
                            generation,
                            token,
                            outcome,
                        },
                        now,
                    );
                }
                _ => {}
            }
        }
        open.is_empty()
    };
    for _ in 0..64 {
        let Some(at) = m.poll_timeout() else {
            return false;
        };
        m.handle_timeout(at);
        if drain(&mut m) {
            return true;
        }
    }
    false
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
        vec![self.initial()]
    }

    fn actions(&self, w: &World, out: &mut Vec<Move>) {
        self.moves(w, out);
    }

    fn next_state(&self, w: &World, mv: Move) -> Option<World> {
        Some(self.apply(w, mv, None))
    }

    fn properties(&self) -> Vec<Property<Self>> {
        use violation as v;
        fn ok(w: &World, bit: u32) -> bool {
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
            Property::<Self>::always("no call outlives ready", |_, w| {
                w.m.state() == State::Ready || w.all_calls_answered()
            }),
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
                        Some(Owner::Restore(g)) => *g == w.m.generation(),
                        _ => false,
                    },
                })
            }),
            Property::<Self>::always("every call is eventually answered", |_, w| {
                silence_answers_every_call(w)
            }),
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
        ]
    }
}

/// Vacuity guards beyond the two every configuration must meet; each must be met by at
/// least one configuration of a run.
pub const RUN_GUARDS: [(&str, u32); 6] = [
    ("a busy send later succeeds", seen::BUSY_THEN_OK),
    ("a reconnect reaches ready", seen::RECONNECT_READY),
    ("a late response is dropped", seen::LATE_DROPPED),
    ("a call times out", seen::TIMED_OUT),
    ("a stop finds calls in flight", seen::STOP_WITH_CALLS),
    (
        "a subscription is restored after a reconnect",
        seen::RESTORED,
    ),
];
