//! The front's explored state: the real [`FrontCore`] (running the table of `spec/front.toml`),
//! the environment (a host and an upstream that may do anything the wire allows, within
//! budgets) and the ghost history the properties read.

use mcp_machine::RpcError;
use mcp_machine::front::{
    CallAnswer, CallKey, Event, Fired, FrontConfig, FrontCore, FrontMutant, FrontOutput,
    HostNotification, HostRequest, HostResponse, Invalid, ServerRequest, ServerRequestId, State,
    UpstreamFailed, UpstreamNotification, UpstreamReady,
};
use serde_json::{Value, json};

/// The budgets of one configuration: how much the host and the upstream may do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FrontBounds {
    /// Host requests (any method, ids 0 and 1 only: duplicates happen).
    pub host_requests: u8,
    /// `notifications/cancelled` from the host.
    pub host_cancels: u8,
    /// Other notifications from the host (roots changed, progress).
    pub host_notes: u8,
    /// Answers from the host to the bridge's requests (right or wrong ids).
    pub host_answers: u8,
    /// Requests of the upstream's for the host.
    pub server_requests: u8,
    /// Notifications of the upstream's for the host.
    pub upstream_notes: u8,
    /// Moves at most (the search's depth).
    pub depth: usize,
    /// The bound on calls in flight or held given to the core.
    pub max_calls: usize,
    /// Whether the host may open listens (`subscriptions/listen`).
    pub listens: bool,
}

/// What kind of request the host sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// `initialize`.
    Initialize,
    /// `tools/call` (any forwarded request).
    Call,
    /// `ping`.
    Ping,
    /// `server/discover`.
    Discover,
    /// `subscriptions/listen` (a 2026-07-28 host's).
    Listen,
}

/// One move of the environment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Move {
    /// The host sends a request of this kind under this id.
    HostRequest(Kind, u8),
    /// The host cancels the request with this id.
    HostCancel(u8),
    /// The host sends `notifications/roots/list_changed` (`true`) or another notification.
    HostNote(bool),
    /// The host answers the bridge's request with this id (a result, or an error).
    HostAnswer(ServerRequestId, bool),
    /// The host sends a line that is no message.
    HostGarbage,
    /// The host leaves.
    HostGone,
    /// The bridge is told to stop.
    Shutdown,
    /// The upstream connected.
    UpstreamReady,
    /// The upstream could not connect.
    UpstreamFailed,
    /// The call started `n`-th ends (its task answers, even if it was dropped meanwhile: the
    /// drop races the answer).
    CallEnds(usize),
    /// The upstream asks the host something.
    ServerRequest,
    /// The upstream tells the host something.
    UpstreamNote,
    /// The upstream gives up on its request.
    ServerRequestEnded(ServerRequestId),
    /// The deadline of an upstream request waiting for the host fires.
    HostAnswerDue(ServerRequestId),
    /// The host sends the `n`-th call whose `input_required` answer it holds again, under id
    /// `id`, with its input (`true`) or without.
    HostRetry(usize, u8, bool),
    /// The deadline of the `n`-th round the host holds fires.
    RoundDue(usize),
}

/// One host request as the ghost knows it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Asked {
    /// Its key (its id as JSON text).
    pub key: CallKey,
    /// Its kind.
    pub kind: Kind,
    /// Answered (a result or an error was written under its id).
    pub answered: bool,
    /// Cancelled by the host while unanswered (any request but `initialize`, which a client
    /// never cancels).
    pub cancelled: bool,
}

/// What the ghost saw of the upstream's requests.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Upstreamed {
    /// Sent to the host (a request frame under its id).
    pub sent: bool,
    /// The host's answer or the bridge's error went upstream (how many times).
    pub replies: u8,
    /// The upstream gave up on it.
    pub ended: bool,
    /// Asked in a call's `input_required` answer (a 2026-07-28 host).
    pub in_round: bool,
    /// Cancelled at the host (how many times).
    pub cancelled_at_host: u8,
    /// The host's answer was handed upstream.
    pub host_answered: bool,
}

/// The environment: what it did and what it may still do.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Env {
    /// Moves left of each budget.
    pub requests_left: u8,
    /// Cancels left.
    pub cancels_left: u8,
    /// Other notifications left.
    pub notes_left: u8,
    /// Host answers left.
    pub answers_left: u8,
    /// Upstream requests left.
    pub server_requests_left: u8,
    /// Upstream notifications left.
    pub upstream_notes_left: u8,
    /// Garbage sent already.
    pub garbage_sent: bool,
    /// A connect is under way (the core asked for one).
    pub connecting: bool,
    /// Calls started, in order, and whether each ended already.
    pub started: Vec<(CallKey, bool)>,
    /// The core asked for the upstream to stop.
    pub stopped: bool,
}

/// What the properties read: the history of the session.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Ghost {
    /// Every host request, in order.
    pub asked: Vec<Asked>,
    /// Every upstream request, by id (index + 1).
    pub upstream: Vec<Upstreamed>,
    /// The host's `initialize` was answered with a result.
    pub initialized: bool,
    /// Violations seen while carrying out outputs (bits of [`super::properties`]).
    pub violations: u32,
    /// Examples met (bits of [`super::properties`], for the vacuity guards).
    pub met: u32,
}

/// The explored state.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FrontWorld {
    /// The real core.
    pub core: FrontCore,
    /// The environment.
    pub env: Env,
    /// The ghost history.
    pub ghost: Ghost,
    /// Moves made (the core's clock: one second per move).
    pub moves: u8,
    /// Whether the host may open listens.
    pub listens: bool,
}

impl FrontWorld {
    /// The initial state of a configuration, with the core under `mutant`.
    pub fn new(bounds: &FrontBounds, mutant: Option<FrontMutant>) -> Self {
        let config = FrontConfig {
            max_calls: bounds.max_calls,
            host_answer_timeout: std::time::Duration::from_secs(3600),
        };
        FrontWorld {
            core: FrontCore::new(config).with_mutant(mutant),
            env: Env {
                requests_left: bounds.host_requests,
                cancels_left: bounds.host_cancels,
                notes_left: bounds.host_notes,
                answers_left: bounds.host_answers,
                server_requests_left: bounds.server_requests,
                upstream_notes_left: bounds.upstream_notes,
                ..Env::default()
            },
            ghost: Ghost::default(),
            moves: 0,
            listens: bounds.listens,
        }
    }

    /// Every move the environment may make now. The host's moves stay possible after the
    /// session closed (lines read before the close was seen), except leaving twice.
    pub fn moves(&self, out: &mut Vec<Move>) {
        if self.env.requests_left > 0 {
            for kind in [Kind::Initialize, Kind::Call, Kind::Ping, Kind::Discover] {
                for id in 0..2 {
                    out.push(Move::HostRequest(kind, id));
                }
            }
            if self.listens {
                out.push(Move::HostRequest(Kind::Listen, 1));
            }
        }
        if self.env.cancels_left > 0 {
            out.extend((0..2).map(Move::HostCancel));
        }
        if self.env.requests_left > 0 {
            for n in 0..self.core.rounds().count() {
                for id in 0..2 {
                    out.push(Move::HostRetry(n, id, true));
                }
                out.push(Move::HostRetry(n, 0, false));
            }
        }
        if self.env.notes_left > 0 {
            out.push(Move::HostNote(true));
            out.push(Move::HostNote(false));
        }
        if self.env.answers_left > 0 {
            for (i, u) in self.ghost.upstream.iter().enumerate() {
                if u.sent {
                    out.push(Move::HostAnswer(i as u64 + 1, true));
                    out.push(Move::HostAnswer(i as u64 + 1, false));
                }
            }
            // An id the bridge never used.
            out.push(Move::HostAnswer(99, true));
        }
        if !self.env.garbage_sent {
            out.push(Move::HostGarbage);
        }
        out.push(Move::HostGone);
        out.push(Move::Shutdown);
        if self.env.connecting {
            out.push(Move::UpstreamReady);
            out.push(Move::UpstreamFailed);
        }
        for (n, (_, ended)) in self.env.started.iter().enumerate() {
            if !ended {
                out.push(Move::CallEnds(n));
            }
        }
        // A request may come from the upstream at any time: one queued before a connect
        // failed or the session closed arrives after.
        if self.env.server_requests_left > 0 {
            out.push(Move::ServerRequest);
        }
        if self.env.upstream_notes_left > 0 {
            out.push(Move::UpstreamNote);
        }
        for (i, u) in self.ghost.upstream.iter().enumerate() {
            let id = i as u64 + 1;
            // Giving up may race the reply (the handler dropped as the answer goes out).
            if !u.ended {
                out.push(Move::ServerRequestEnded(id));
            }
            // A deadline fires for a request still waiting, or (stale) for one that is not.
            out.push(Move::HostAnswerDue(id));
        }
        for n in 0..self.core.parked().count() {
            out.push(Move::RoundDue(n));
        }
        if self.core.is_modern() {
            // A round's deadline for a call no longer held (stale).
            out.push(Move::RoundDue(usize::MAX));
        }
    }

    /// The state after `mv`.
    pub fn step(&self, mv: Move) -> FrontWorld {
        self.step_fired(mv).0
    }

    /// The state after `mv`, and the row that fired.
    pub fn step_fired(&self, mv: Move) -> (FrontWorld, Fired) {
        let mut w = self.clone();
        w.moves = w.moves.saturating_add(1);
        let before = w.core.state();
        let event = w.event(mv);
        let now = std::time::Duration::from_secs(u64::from(w.moves));
        let fired = w.core.handle(now, event);
        while let Some(output) = w.core.poll_output() {
            w.carry_out(before, output);
        }
        (w, fired)
    }

    /// The core's event for a move (the budgets spent).
    fn event(&mut self, mv: Move) -> Event {
        match mv {
            Move::HostRequest(kind, id) => {
                self.env.requests_left -= 1;
                let method = match kind {
                    Kind::Initialize => "initialize",
                    Kind::Call => "tools/call",
                    Kind::Ping => "ping",
                    Kind::Discover => "server/discover",
                    Kind::Listen => "subscriptions/listen",
                };
                let request = HostRequest::new(json!(id), method, Some(json!({})));
                self.ghost.asked.push(Asked {
                    key: request.key.clone(),
                    kind,
                    answered: false,
                    cancelled: false,
                });
                Event::HostRequest(request)
            }
            Move::HostCancel(id) => {
                self.env.cancels_left -= 1;
                let key = json!(id).to_string();
                // Any request but `initialize` (which a client never cancels) may be.
                for a in &mut self.ghost.asked {
                    if a.key == key && a.kind != Kind::Initialize && !a.answered {
                        a.cancelled = true;
                    }
                }
                Event::HostNotification(HostNotification {
                    method: "notifications/cancelled".into(),
                    params: Some(json!({"requestId": id})),
                })
            }
            Move::HostAnswer(id, ok) => {
                self.env.answers_left -= 1;
                let outcome = if ok {
                    Ok(json!({"ok": id}))
                } else {
                    Err(RpcError {
                        code: -1,
                        message: "declined".into(),
                        data: None,
                    })
                };
                Event::HostResponse(HostResponse {
                    id: json!(id),
                    outcome,
                })
            }
            Move::HostNote(roots) => {
                self.env.notes_left -= 1;
                let method = if roots {
                    "notifications/roots/list_changed"
                } else {
                    "notifications/progress"
                };
                Event::HostNotification(HostNotification {
                    method: method.into(),
                    params: Some(json!({"progressToken": 1, "progress": 1})),
                })
            }
            Move::HostGarbage => {
                self.env.garbage_sent = true;
                Event::HostInvalid(Invalid {
                    id: Value::Null,
                    error: RpcError {
                        code: -32700,
                        message: "parse error".into(),
                        data: None,
                    },
                })
            }
            Move::HostGone => Event::HostGone,
            Move::Shutdown => Event::Shutdown,
            Move::UpstreamReady => {
                self.env.connecting = false;
                Event::UpstreamReady(UpstreamReady {
                    result: json!({"protocolVersion": "2025-11-25"}),
                    discover: json!({"supportedVersions": ["2026-07-28"]}),
                })
            }
            Move::UpstreamFailed => {
                self.env.connecting = false;
                Event::UpstreamFailed(UpstreamFailed {
                    reason: "refused".into(),
                })
            }
            Move::CallEnds(n) => {
                let (key, ended) = &mut self.env.started[n];
                *ended = true;
                let key = key.clone();
                Event::CallAnswered(CallAnswer {
                    key,
                    outcome: Ok(json!({})),
                })
            }
            Move::ServerRequest => {
                self.env.server_requests_left -= 1;
                self.ghost.upstream.push(Upstreamed::default());
                let id = self.ghost.upstream.len() as u64;
                Event::ServerRequest(ServerRequest {
                    id,
                    method: "sampling/createMessage".into(),
                    params: json!({}),
                })
            }
            Move::UpstreamNote => {
                self.env.upstream_notes_left -= 1;
                Event::UpstreamNotification(UpstreamNotification {
                    method: "notifications/message".into(),
                    params: Some(json!({"level": "info", "data": "note"})),
                })
            }
            Move::ServerRequestEnded(id) => {
                if let Some(u) = self.upstream_mut(id) {
                    u.ended = true;
                }
                Event::ServerRequestEnded(id)
            }
            Move::HostAnswerDue(id) => Event::HostAnswerDue(id),
            Move::HostRetry(n, id, with_inputs) => {
                self.env.requests_left -= 1;
                let state = self
                    .core
                    .rounds()
                    .nth(n)
                    .map(|(_, s)| s.to_owned())
                    .unwrap_or_default();
                let mut params = json!({"requestState": state});
                if with_inputs {
                    let inputs: serde_json::Map<String, Value> = (1..=self.ghost.upstream.len())
                        .map(|i| (format!("s{i}"), json!({"ok": i})))
                        .collect();
                    params["inputResponses"] = Value::Object(inputs);
                }
                let request = HostRequest::new(json!(id), "tools/call", Some(params));
                self.ghost.asked.push(Asked {
                    key: request.key.clone(),
                    kind: Kind::Call,
                    answered: false,
                    cancelled: false,
                });
                Event::HostRequest(request)
            }
            Move::RoundDue(n) => {
                let key = self
                    .core
                    .parked()
                    .nth(n)
                    .cloned()
                    .unwrap_or_else(|| "99".into());
                Event::RoundDue(key)
            }
        }
    }

    fn upstream_mut(&mut self, id: ServerRequestId) -> Option<&mut Upstreamed> {
        let i = usize::try_from(id).ok()?.checked_sub(1)?;
        self.ghost.upstream.get_mut(i)
    }

    /// Carries out one output as the bridge does, and lets the ghost learn from it.
    fn carry_out(&mut self, before: State, output: FrontOutput) {
        use super::properties as p;
        match output {
            FrontOutput::Write(frame) => {
                if before == State::Closed {
                    self.ghost.violations |= p::WRITE_AFTER_CLOSE;
                }
                self.learn_frame(&frame);
            }
            FrontOutput::Connect(_) => self.env.connecting = true,
            FrontOutput::StartCall(request) => self.env.started.push((request.key, false)),
            FrontOutput::AbortCall(_) => {}
            FrontOutput::ReplyServerRequest(HostResponse { id, outcome }) => {
                let id = id.as_u64().unwrap_or(0);
                // The host answers with `{"ok": id}` or code -1; the bridge's own errors differ.
                let host = outcome
                    .as_ref()
                    .map_or_else(|e| e.code == -1, |v| v.get("ok").is_some());
                let (mut met, mut violations) = (0, 0);
                match self.upstream_mut(id) {
                    Some(u) => {
                        u.replies += 1;
                        if host {
                            u.host_answered = true;
                            met |= p::MET_HOST_ANSWERED;
                        }
                        if u.replies > 1 || u.ended {
                            violations |= p::UPSTREAM_REPLIED_TWICE;
                        }
                    }
                    None => violations |= p::UPSTREAM_REPLIED_TWICE,
                }
                self.ghost.met |= met;
                self.ghost.violations |= violations;
            }
            FrontOutput::StopUpstream => self.env.stopped = true,
            _ => {}
        }
    }

    /// What a frame to the host tells the ghost.
    fn learn_frame(&mut self, frame: &[u8]) {
        use super::properties as p;
        let Ok(msg) = serde_json::from_slice::<Value>(frame) else {
            self.ghost.violations |= p::BAD_FRAME;
            return;
        };
        let method = msg.get("method").and_then(Value::as_str);
        match (method, msg.get("id")) {
            // An answer to a host request.
            (None, Some(id)) => {
                if id.is_null() {
                    return; // the answer to garbage
                }
                let key = id.to_string();
                // The newest open request under the id: a duplicate is refused in the step it
                // arrives, while the first keeps waiting for its own answer.
                let open = self
                    .ghost
                    .asked
                    .iter_mut()
                    .rev()
                    .find(|a| a.key == key && !a.answered && !a.cancelled);
                let kind = match open {
                    Some(a) => {
                        a.answered = true;
                        a.kind
                    }
                    None => {
                        self.ghost.violations |= p::ANSWERED_UNASKED;
                        return;
                    }
                };
                let result = msg.get("result");
                if matches!(kind, Kind::Initialize | Kind::Discover) && result.is_some() {
                    self.ghost.initialized = true;
                }
                if kind == Kind::Call && result.is_some() {
                    self.ghost.met |= p::MET_CALL_ANSWERED;
                }
                let asked_input: Vec<u64> = result
                    .and_then(|r| r.get("inputRequests"))
                    .and_then(Value::as_object)
                    .map(|inputs| {
                        inputs
                            .keys()
                            .filter_map(|k| k.strip_prefix('s')?.parse::<u64>().ok())
                            .collect()
                    })
                    .unwrap_or_default();
                for id in asked_input {
                    let fresh = match self.upstream_mut(id) {
                        Some(u) if !u.in_round && !u.sent => {
                            u.in_round = true;
                            true
                        }
                        _ => false,
                    };
                    if fresh {
                        self.ghost.met |= p::MET_ROUND;
                    } else {
                        self.ghost.violations |= p::ASKED_TWICE;
                    }
                }
            }
            // A request of the upstream's.
            (Some(_), Some(id)) => {
                if !self.ghost.initialized || self.core.is_modern() {
                    self.ghost.violations |= p::ASKED_BEFORE_INIT;
                }
                let id = id.as_u64().unwrap_or(0);
                let fresh = match self.upstream_mut(id) {
                    Some(u) if !u.sent => {
                        u.sent = true;
                        true
                    }
                    _ => false,
                };
                if !fresh {
                    self.ghost.violations |= p::ASKED_TWICE;
                }
            }
            (Some("notifications/cancelled"), None) => {
                let id = msg["params"]["requestId"].as_u64().unwrap_or(0);
                let proper = match self.upstream_mut(id) {
                    Some(u) if u.sent && !u.host_answered && u.cancelled_at_host == 0 => {
                        u.cancelled_at_host += 1;
                        true
                    }
                    _ => false,
                };
                if proper {
                    self.ghost.met |= p::MET_CANCELLED_AT_HOST;
                } else {
                    self.ghost.violations |= p::BAD_CANCEL_AT_HOST;
                }
            }
            (Some(_), None) => {
                // Any other notification: only once the host's `initialize` was answered (a
                // 2026-07-28 host has no handshake).
                if !self.ghost.initialized && !self.core.is_modern() {
                    self.ghost.violations |= p::ASKED_BEFORE_INIT;
                }
                self.ghost.met |= p::MET_NOTIFIED;
            }
            _ => {}
        }
    }
}
