//! The connection's data ([`Core`]) and the handlers of the generated trait, implemented on a
//! short-lived context ([`Ctx`]) that borrows the data, the output queue and the current state.
//! Each guard answers one question about its event's payload (and yields what it found, so no
//! action looks it up again); each action does one named thing. None of them chooses a state.

use std::collections::{BTreeSet, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::Payload;
use crate::backoff::Backoff;
use crate::calls::{Calls, Entry, InputRounds, Phase, RequestKind, Tombstones};
use crate::codes;
use crate::config::{Config, Era, EraMode};
use crate::event::{
    CallRequest, HandlerReply, InputReply, InputRound, Malformed, Notification, NotifyRequest,
    Oversized, PendingSend, Response, ResponseError, ResponseId, ServerInfo, ServerRequest,
    ServerRequestId, SessionChange, TaskResume, later,
};
use crate::failure::{Failure, TransportError};
use crate::generated::{State, TimerKind};
use crate::io::{
    Action, CallError, CallId, CallOptions, Generation, Report, RequestId, RpcError, SendToken,
};
use crate::listen::{
    self, ListenEnd, ListenEndReason, ListenFilter, ListenStatus, Listens, OpenListen,
};
use crate::outgoing::Outgoing;
use crate::protocol::{self, Envelope, ModernError};
use crate::rng::Rng;
use crate::tasks::{TaskPhase, TaskRun, TaskState, TaskStatus, Tasks};
use crate::timers::{TimerKey, Timers};

/// Whether a deliberate handler bug is on (model checker builds only; `false` in the product,
/// where the branch compiles away).
#[cfg(feature = "checker")]
macro_rules! mutant {
    ($core:expr, $m:ident) => {
        $core.mutant == Some(crate::mutant::Mutant::$m)
    };
}
#[cfg(not(feature = "checker"))]
macro_rules! mutant {
    ($core:expr, $m:ident) => {
        false
    };
}

mod calls;
mod handshake;
mod lifecycle;
mod server_requests;
mod tasks;
// `listen` names the crate's listen vocabulary here; the file keeps the spec file's name.
mod auth;
mod input;
#[path = "listen.rs"]
mod listen_rows;

/// The connection's data: everything but the state (the machine's) and the undrained actions.
/// `Hash + Eq` so the model checker can store it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Core {
    pub(crate) config: Arc<Config>,
    pub(crate) rng: Rng,
    pub(crate) now: Duration,
    pub(crate) generation: Generation,
    pub(crate) next_id: RequestId,
    /// What the current connection attempt (probing, initializing) holds.
    pub(crate) attempt: Attempt,
    /// Which era this server speaks, as far as the client knows (kept across generations).
    pub(crate) verdict: Option<Verdict>,
    /// The accepted handshake (shared: set once per handshake, never changed in place, so a
    /// copy of the machine, as the model checker makes for every successor, does not copy
    /// the server's JSON).
    pub(crate) server: Option<Arc<ServerInfo>>,
    pub(crate) last_error: Option<Failure>,
    pub(crate) calls: Calls,
    pub(crate) tombstones: Tombstones,
    /// Server requests handed to the handler and not yet answered or cancelled.
    pub(crate) server_requests: BTreeSet<ServerRequestId>,
    pub(crate) backoff: Backoff,
    pub(crate) timers: Timers,
    /// What the server keeps for us and a new server must be asked for again.
    pub(crate) session: Session,
    /// Frames owed to the server (responses, rejections, cancels) not yet taken by the
    /// transport, in order; the head is being offered or waits for the owed retry timer.
    pub(crate) outbox: VecDeque<Outgoing>,
    /// Sessions initialized again at once since a call was last answered.
    pub(crate) reinits: u32,
    /// When the session last made ready became ready, until the next backoff delay is
    /// scheduled (`note_ready`; `session_stable` is measured from it).
    pub(crate) ready_at: Option<Duration>,
    /// The listens of a 2026-07-28 connection (`subscriptions/listen`).
    pub(crate) listens: Listens,
    /// An authorization asked of the driver is under way (for this generation).
    pub(crate) authorizing: bool,
    /// Authorizations asked for since a call was last answered (bounded by
    /// `Config::max_authorizations`).
    pub(crate) authorizations: u32,
    /// The tasks polled for callers whose calls the server runs as tasks.
    pub(crate) tasks: Tasks,
    /// The callers' calls waiting for a ready connection, in the order they were made
    /// (at most `Config::max_waiting_calls`).
    pub(crate) waiting: VecDeque<crate::calls::WaitingCall>,
    #[cfg(feature = "checker")]
    pub(crate) mutant: Option<crate::mutant::Mutant>,
}

/// The most frames the outbox holds; more are dropped (reported).
pub(crate) const MAX_OWED: usize = 1024;

impl Core {
    pub(crate) fn new(config: Arc<Config>, seed: u64, now: Duration) -> Self {
        Core {
            config,
            rng: Rng::new(seed),
            now,
            generation: 0,
            next_id: 1,
            attempt: Attempt::default(),
            verdict: None,
            server: None,
            last_error: None,
            calls: Calls::default(),
            tombstones: Tombstones::default(),
            server_requests: BTreeSet::new(),
            backoff: Backoff::default(),
            timers: Timers::default(),
            session: Session::default(),
            outbox: VecDeque::new(),
            reinits: 0,
            ready_at: None,
            listens: Listens::default(),
            authorizing: false,
            authorizations: 0,
            tasks: Tasks::default(),
            waiting: VecDeque::new(),
            #[cfg(feature = "checker")]
            mutant: None,
        }
    }
}

/// The data of one connection attempt: the handshake request in flight and what the probe and
/// the init timeout chose for it. Only the handshake's rows (probing, initializing) read it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct Attempt {
    /// The id of the handshake request in flight: `initialize`, or `server/discover`.
    pub(crate) init_id: Option<RequestId>,
    /// This generation probed again after a legacy verdict proved wrong.
    pub(crate) reprobed: bool,
    /// The probe in flight was already sent again at another version.
    pub(crate) probe_retried: bool,
    /// The version the last probe asked for.
    pub(crate) probe_version: String,
    /// The bound the running init timeout was armed with (the row chose which).
    pub(crate) init_bound: Duration,
}

/// What the client knows of the era a server speaks.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Verdict {
    pub(crate) era: Era,
    /// The protocol version agreed on.
    pub(crate) version: String,
    /// Assumed (the server died of the probe), until a handshake confirms it.
    pub(crate) tentative: bool,
}

/// The session a server keeps for this client: restored on every new transport generation.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct Session {
    /// Acknowledged resource subscriptions not ended since.
    pub(crate) subscriptions: BTreeSet<String>,
    /// The acknowledged logging level.
    pub(crate) log_level: Option<String>,
}

/// What the handlers run in: the data, the output queue, and the state of this dispatch
/// (read-only: only the table moves it).
pub(crate) struct Ctx<'a> {
    pub(crate) core: &'a mut Core,
    pub(crate) out: &'a mut VecDeque<Action>,
    pub(crate) state: State,
}

impl Ctx<'_> {
    fn push(&mut self, action: Action) {
        self.out.push_back(action);
    }

    fn send(&mut self, token: SendToken, frame: Outgoing) {
        let generation = self.core.generation;
        self.push(Action::Send {
            generation,
            token,
            frame,
        });
    }

    /// Queues a frame owed to the server in the outbox, offering it at once when nothing is
    /// ahead of it (the outbox keeps a copy until the transport takes it). A full outbox (a
    /// server that floods requests and does not read) drops the frame, reported.
    fn owe(&mut self, frame: Outgoing) {
        if self.core.outbox.len() >= MAX_OWED {
            self.push(Action::Report(Report::OwedDropped { bytes: frame.len() }));
            return;
        }
        let first = self.core.outbox.is_empty();
        if first {
            self.core.outbox.push_back(frame.clone());
            self.send(SendToken::Owed, frame);
        } else {
            self.core.outbox.push_back(frame);
        }
    }

    fn reply(
        &mut self,
        call: CallId,
        request: Option<RequestId>,
        outcome: Result<Payload, CallError>,
    ) {
        self.push(Action::Reply {
            call,
            request,
            outcome,
        });
    }

    /// Answers the call an entry is for: its caller, or for a request of the client's own (a
    /// session restore) a report when it failed.
    fn answer(&mut self, entry: &Entry, id: RequestId, outcome: Result<Payload, CallError>) {
        match (entry.kind.caller(), outcome) {
            (Some(call), outcome) => self.reply(call, Some(id), outcome),
            (None, Ok(_)) => {}
            (None, Err(_)) => {
                if let Some(change) = entry.session.clone() {
                    self.push(Action::Report(Report::RestoreFailed(change)));
                }
            }
        }
    }

    /// Sends a request of the client's own that changes the session (a restore).
    fn send_session_request(&mut self, change: SessionChange) {
        let (method, params) = match &change {
            SessionChange::Subscribe(uri) => ("resources/subscribe", json!({ "uri": uri })),
            SessionChange::Unsubscribe(uri) => ("resources/unsubscribe", json!({ "uri": uri })),
            SessionChange::SetLogLevel(level) => ("logging/setLevel", json!({ "level": level })),
        };
        let options = CallOptions::default();
        self.issue(
            RequestKind::Restore,
            method,
            Some(params),
            options,
            Some(change),
        );
    }

    /// Gives a request the next id, records it, arms its timeout and sends its frame: a caller's
    /// call, or a request of the client's own (`kind`). Returns its id.
    fn issue(
        &mut self,
        kind: RequestKind,
        method: &str,
        params: Option<Value>,
        options: CallOptions,
        session: Option<SessionChange>,
    ) -> RequestId {
        let (id, frame) = self.record_request(
            kind,
            method,
            params,
            options,
            session,
            Phase::Sending { attempt: 1 },
        );
        self.send(SendToken::Request(id), frame);
        id
    }

    /// Gives a request the next id, records it in `phase` and arms its timeout; returns the id
    /// and the frame, not sent.
    fn record_request(
        &mut self,
        kind: RequestKind,
        method: &str,
        params: Option<Value>,
        options: CallOptions,
        session: Option<SessionChange>,
        phase: Phase,
    ) -> (RequestId, Outgoing) {
        let id = self.core.next_id;
        self.core.next_id += 1;
        let timeout = options.timeout.unwrap_or(self.core.config.request_timeout);
        let mut deadline = timeout;
        if let Some(total) = options.max_total_timeout {
            deadline = deadline.min(total);
        }
        let token = options.progress.then_some(id);
        let config = Arc::clone(&self.core.config);
        let version = if mutant!(self.core, EnvelopeAlways) {
            Some(protocol::MODERN_PROTOCOL_VERSIONS[0])
        } else {
            self.modern_version()
        };
        let envelope = version.map(|version| Envelope {
            version,
            config: &config,
        });
        let method = protocol::method_in_era(method, envelope.is_some());
        let mut frame = protocol::request(id, method, params, token, envelope.as_ref());
        if kind.caller().is_none() {
            frame.head.mark_own();
        }
        self.core.calls.insert(
            id,
            Entry {
                kind,
                session,
                frame: frame.clone(),
                phase,
                started: self.core.now,
                timeout,
                progress: options.progress,
                reset_on_progress: options.reset_timeout_on_progress,
                max_total: options.max_total_timeout,
                task_timeout: options.task_timeout,
                resent: false,
                input_rounds: None,
                reissues: 0,
                relisted: false,
                auth_refused: false,
            },
        );
        let at = later(self.core.now, deadline);
        self.core
            .timers
            .arm(TimerKey::keyed(TimerKind::RequestTimeout, id), at);
        (id, frame)
    }

    /// The version of a modern verdict (the era this connection's requests are written in).
    fn modern_version(&self) -> Option<&str> {
        self.core
            .verdict
            .as_ref()
            .filter(|v| v.era == Era::Modern)
            .map(|v| v.version.as_str())
    }

    /// Whether `versions` has a modern version this client speaks.
    fn usable_modern(&self, versions: &[String]) -> bool {
        protocol::common_modern(versions).is_some()
    }

    fn era_is_auto(&self) -> bool {
        self.core.config.era == EraMode::Auto
    }

    /// Hands each input request (key, method, params) of the answer to `request` to the
    /// client handler.
    fn hand_inputs(&mut self, request: RequestId, inputs: Vec<(String, String, Value)>) {
        let generation = self.core.generation;
        for (key, method, params) in inputs {
            self.push(Action::InputRequest {
                generation,
                request,
                key,
                method,
                params,
            });
        }
    }

    /// Aborts the handler tasks of a call's input requests.
    fn abort_inputs(&mut self, request: RequestId) {
        let generation = self.core.generation;
        self.push(Action::AbortInputs {
            generation,
            request,
        });
    }

    /// The modern `input_required` result of a live call that was sent (not one awaiting
    /// input: a second answer to an answered id is not a new round).
    fn input_required<'p>(&self, p: &'p Response) -> Option<(RequestId, &'p Value)> {
        self.modern_version()?;
        let id = Self::response_id(p)?;
        let entry = self.core.calls.get(id)?;
        let result = p.body.as_ref().ok()?.value();
        (!entry.phase.answered()
            && entry.kind.caller().is_some()
            && protocol::result_type(result).as_deref() == Some("input_required"))
        .then_some((id, result))
    }

    /// The round an `input_required` result asks for, or why it cannot be met.
    fn input_round(&self, id: RequestId, result: &Value) -> Result<InputRound, String> {
        let entry = self.core.calls.get(id).ok_or("the call ended")?;
        let method = entry.frame.head.method.as_deref().unwrap_or_default();
        if !protocol::INPUT_METHODS.contains(&method) {
            return Err(format!("{method} cannot ask for input"));
        }
        let rounds = entry.input_rounds.as_ref().map_or(0, |m| m.round);
        let cap = self.core.config.max_input_rounds;
        if rounds >= cap && !mutant!(self.core, NoRoundCap) {
            return Err(format!("the server asked for input {cap} times already"));
        }
        let state = match result.get("requestState") {
            None => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => return Err("its requestState is not a string".into()),
        };
        let mut inputs = Vec::new();
        match result.get("inputRequests") {
            None => {}
            Some(Value::Object(requests)) => {
                for (key, request) in requests {
                    let method = request
                        .get("method")
                        .and_then(Value::as_str)
                        .ok_or_else(|| format!("input {key:?} names no method"))?;
                    let params = request.get("params").cloned().unwrap_or(Value::Null);
                    let caps = &self.core.config.capabilities;
                    if !caps.handles(method, Some(&params)) {
                        return Err(format!(
                            "input {key:?} asks for {method}, which this client did not declare"
                        ));
                    }
                    inputs.push((key.clone(), method.to_owned(), params));
                }
                // The handler runs a bounded number of inputs per round: a server cannot tie up
                // the host with one round.
                let most = self.core.config.max_round_inputs;
                if inputs.len() > most {
                    return Err(format!(
                        "it asks for {} inputs at once (at most {most})",
                        inputs.len()
                    ));
                }
            }
            Some(_) => return Err("its inputRequests is not an object".into()),
        }
        if inputs.is_empty() && state.is_none() {
            return Err("it asks for nothing and carries no requestState".into());
        }
        Ok(InputRound {
            request: id,
            inputs,
            state,
        })
    }

    /// The call an input reply is for, if it awaits that input.
    fn awaited(&self, p: &InputReply) -> Option<&InputRounds> {
        let entry = self.core.calls.get(p.request)?;
        let mrtr = entry.input_rounds.as_deref()?;
        (entry.phase == Phase::AwaitingInput && matches!(mrtr.awaiting.get(&p.key), Some(None)))
            .then_some(mrtr)
    }

    /// Sends a call awaiting input again: a new id, its deadline kept, with the inputs given
    /// and the round's state.
    fn send_round(&mut self, old: RequestId) {
        let Some(mut entry) = self.core.calls.remove(old) else {
            return;
        };
        let id = self.core.next_id;
        self.core.next_id += 1;
        let mrtr = entry.input_rounds.get_or_insert_with(Box::default);
        let inputs: serde_json::Map<String, Value> = std::mem::take(&mut mrtr.awaiting)
            .into_iter()
            .filter_map(|(k, v)| Some((k, serde_json::from_str(&v?).ok()?)))
            .collect();
        let state = if mutant!(self.core, DropRequestState) {
            None
        } else {
            mrtr.state.take()
        };
        entry.frame =
            protocol::with_inputs(&entry.frame, id, entry.progress, inputs, state.as_deref());
        self.tombstone(old);
        self.reissue(old, id, entry);
    }

    /// Sends a call again under the new id `id` (its frame already rewritten): its deadline
    /// moves from `old` to `id` unchanged, and its send starts over.
    fn reissue(&mut self, old: RequestId, id: RequestId, mut entry: Entry) {
        entry.phase = Phase::Sending { attempt: 1 };
        let deadline = self
            .core
            .timers
            .deadline(TimerKey::keyed(TimerKind::RequestTimeout, old));
        self.cancel_call_timers(old);
        if let Some(at) = deadline {
            self.core
                .timers
                .arm(TimerKey::keyed(TimerKind::RequestTimeout, id), at);
        }
        let frame = entry.frame.clone();
        self.core.calls.insert(id, entry);
        self.send(SendToken::Request(id), frame);
    }

    /// What the client wants told (2026-07-28): the list changes of the kinds the server
    /// advertises `listChanged` for (when configured), and the resources subscribed or being
    /// subscribed.
    fn wanted(&self) -> ListenFilter {
        let caps = self.core.server.as_ref().map(|s| &s.capabilities);
        let lists = self.core.config.listen_list_changed;
        let advertised = |kind: &str| {
            lists
                && caps
                    .and_then(|c| c.get(kind))
                    .and_then(|k| k.get("listChanged"))
                    == Some(&Value::Bool(true))
        };
        let mut uris = self.core.session.subscriptions.clone();
        for (_, e) in self.core.calls.iter() {
            if e.phase == Phase::AwaitingAck
                && let Some(SessionChange::Subscribe(uri)) = &e.session
            {
                uris.insert(uri.clone());
            }
        }
        ListenFilter {
            tools: advertised("tools"),
            prompts: advertised("prompts"),
            resources: advertised("resources"),
            uris,
        }
    }

    /// Sends `subscriptions/listen` for `filter`: the open listen from now on.
    fn send_listen(&mut self, mut filter: ListenFilter) {
        self.core.listens.filter = filter.clone();
        if mutant!(self.core, ListenDropsUris) {
            filter.uris.clear();
        }
        let params = listen::params(&filter);
        let options = CallOptions::default();
        let id = self.issue(
            RequestKind::Listen,
            listen::LISTEN_METHOD,
            Some(params),
            options,
            None,
        );
        self.core.listens.current = Some(OpenListen {
            id,
            asked: filter,
            acked: None,
        });
    }

    /// Forgets a listen that ended without the client's doing (nothing is owed for it).
    fn forget_listen(&mut self, id: RequestId) {
        if mutant!(self.core, CancelEndedListen) {
            self.end_call(id, "ended");
            return;
        }
        if self.core.calls.remove(id).is_some() {
            self.cancel_call_timers(id);
            self.tombstone(id);
        }
    }

    /// Tells the driver what is wanted and what the listens cover, when either changed.
    fn tell_listening(&mut self) {
        let status = ListenStatus {
            wanted: self.wanted(),
            covered: self.core.listens.covered(),
        };
        if status != self.core.listens.told {
            self.core.listens.told = status.clone();
            self.push(Action::Listening(status));
        }
    }

    /// Answers the modern subscribes waiting for an acknowledgement as `decide` says by URI
    /// (`None`: it keeps waiting); one answered done is recorded in the session.
    fn answer_waiters(&mut self, decide: impl Fn(&str) -> Option<Result<(), CallError>>) {
        for id in self.core.calls.ids() {
            let Some(Entry {
                phase: Phase::AwaitingAck,
                session: Some(SessionChange::Subscribe(uri)),
                ..
            }) = self.core.calls.get(id)
            else {
                continue;
            };
            let uri = uri.clone();
            let Some(outcome) = decide(&uri) else {
                continue;
            };
            let Some(entry) = self.core.calls.remove(id) else {
                continue;
            };
            self.cancel_call_timers(id);
            if outcome.is_ok() {
                self.core.session.subscriptions.insert(uri);
            }
            if let Some(call) = entry.kind.caller() {
                self.reply(call, None, outcome.map(|()| json!({}).into()));
            }
        }
    }

    /// Whether the response answers the handshake request in flight.
    fn answers_handshake(&self, p: &Response) -> bool {
        Self::response_id(p).is_some_and(|id| Some(id) == self.core.attempt.init_id)
    }

    /// Sends `server/discover` at `version` as the handshake request.
    fn send_discover_at(&mut self, version: &str) {
        let id = self.core.next_id;
        self.core.next_id += 1;
        self.core.attempt.init_id = Some(id);
        self.core.attempt.probe_version = version.to_owned();
        let config = Arc::clone(&self.core.config);
        let envelope = Envelope {
            version,
            config: &config,
        };
        let mut frame = protocol::request(id, "server/discover", None, None, Some(&envelope));
        frame.head.mark_own();
        self.send(SendToken::Request(id), frame);
    }

    fn tombstone(&mut self, id: RequestId) {
        let expires = later(self.core.now, self.core.config.tombstone_ttl);
        self.core.tombstones.insert(id, expires);
    }

    fn cancel_call_timers(&mut self, id: RequestId) {
        let timers = &mut self.core.timers;
        timers.cancel(TimerKey::keyed(TimerKind::SendRetry, id));
        if !mutant!(self.core, KeepTimerAfterReply) {
            self.core
                .timers
                .cancel(TimerKey::keyed(TimerKind::RequestTimeout, id));
        }
    }

    /// Ends a call that will get no server answer: forget it, cancel its timers, send
    /// `notifications/cancelled` if the server may have seen it, tombstone the id.
    fn end_call(&mut self, id: RequestId, reason: &str) -> Option<Entry> {
        let entry = self.core.calls.remove(id)?;
        self.cancel_call_timers(id);
        if entry.phase == Phase::AwaitingInput {
            self.abort_inputs(id);
        }
        if entry.phase == Phase::Sent || mutant!(self.core, CancelUnsent) {
            self.owe(protocol::cancelled(id, reason));
        }
        if !mutant!(self.core, NoTombstoneOnEnd) {
            self.tombstone(id);
        }
        Some(entry)
    }

    fn arm(&mut self, kind: TimerKind, after: Duration) {
        let at = later(self.core.now, after);
        self.core.timers.arm(TimerKey::plain(kind), at);
    }

    fn pending_send(&self, token: &SendToken) -> Option<PendingSend> {
        let SendToken::Request(id) = *token else {
            return None;
        };
        let Phase::Sending { attempt } = self.core.calls.get(id)?.phase else {
            return None;
        };
        Some(PendingSend { id, attempt })
    }

    fn retry_in(&self) -> Option<Duration> {
        self.core
            .timers
            .deadline(TimerKey::plain(TimerKind::Reconnect))
            .map(|at| at.saturating_sub(self.core.now))
    }

    fn fail_all(&mut self, error: &CallError) {
        let targets: Vec<(RequestId, CallId)> = self
            .core
            .calls
            .iter()
            .filter(|(_, e)| {
                !(mutant!(self.core, ForgetRetries) && matches!(e.phase, Phase::Retrying { .. }))
            })
            .filter_map(|(id, e)| Some((id, e.kind.caller()?)))
            .collect();
        for (id, call) in targets {
            self.reply(call, Some(id), Err(error.clone()));
        }
    }

    fn set_last_error(&mut self, failure: Failure) {
        self.core.last_error = Some(failure);
    }

    fn unavailable(&self) -> CallError {
        CallError::Unavailable {
            state: self.state,
            retry_in: self.retry_in(),
            last_error: self.core.last_error.clone(),
        }
    }

    /// The challenge of an AUTH_REQUIRED answer (the HTTP transport's, for a 401 or a 403
    /// `insufficient_scope`).
    fn auth_challenge(p: &Response) -> Option<crate::event::AuthChallenge> {
        let Err(ResponseError::Rpc(e)) = &p.body else {
            return None;
        };
        if e.code != crate::headers::AUTH_REQUIRED {
            return None;
        }
        // The transport's answer names the HTTP status (a server's own use of the code,
        // without it, is an error like any other).
        let data = e.data.as_ref();
        let status = data
            .and_then(|d| d.get("httpStatus"))
            .and_then(Value::as_u64)
            .and_then(|s| u16::try_from(s).ok())
            .filter(|s| matches!(s, 401 | 403))?;
        let www_authenticate = data
            .and_then(|d| d.get("wwwAuthenticate"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        Some(crate::event::AuthChallenge {
            status,
            www_authenticate,
        })
    }

    /// Whether another authorization may be asked for.
    fn authorizations_left(&self) -> bool {
        self.core.authorizations < self.core.config.max_authorizations
            || mutant!(self.core, UnboundedAuth)
    }

    /// Asks the driver to authorize, unless an authorization is under way already.
    fn authorize(&mut self, challenge: crate::event::AuthChallenge) {
        if self.core.authorizing {
            return;
        }
        self.core.authorizing = true;
        self.core.authorizations += 1;
        let generation = self.core.generation;
        self.push(Action::Authorize {
            generation,
            challenge,
        });
    }

    /// The AUTH_REQUIRED answer to a caller's live call that was on its way (not one answered
    /// already); its id.
    fn auth_refused_call(&self, p: &Response) -> Option<RequestId> {
        Self::auth_challenge(p)?;
        let id = Self::response_id(p)?;
        let entry = self.core.calls.get(id)?;
        (entry.kind.caller().is_some()
            && !entry.phase.answered()
            && entry.kind != RequestKind::Listen
            && entry.kind != RequestKind::Relist)
            .then_some(id)
    }

    /// Sends every call in `phase` again, each under a new id, its deadline kept.
    fn resend_waiting(&mut self, phase: Phase) {
        let waiting = self.core.calls.in_phase(phase);
        for old in waiting {
            let Some(mut entry) = self.core.calls.remove(old) else {
                continue;
            };
            let id = self.core.next_id;
            self.core.next_id += 1;
            entry.frame = protocol::with_new_id(&entry.frame, id, entry.progress);
            self.tombstone(old);
            self.reissue(old, id, entry);
        }
    }

    fn response_id(p: &Response) -> Option<RequestId> {
        match p.id {
            ResponseId::Number(n) => Some(n),
            ResponseId::Other(_) => None,
        }
    }
}
