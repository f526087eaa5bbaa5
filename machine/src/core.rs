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
use crate::calls::{Calls, Entry, Mrtr, Phase, Tombstones};
use crate::codes;
use crate::config::{Config, Era, EraMode};
use crate::event::{
    CallRequest, HandlerReply, InputReply, InputRound, Malformed, Notification, NotifyRequest,
    Oversized, PendingSend, Response, ResponseError, ResponseId, ServerInfo, ServerRequest,
    ServerRequestId, SessionChange, later,
};
use crate::failure::{Failure, TransportError};
use crate::generated::{Handlers, State, TimerKind};
use crate::io::{
    Action, CallError, CallId, CallOptions, Generation, Report, RequestId, RpcError, SendToken,
};
use crate::listen::{
    self, ListenEnd, ListenEndReason, ListenFilter, ListenStatus, Listens, OpenListen,
};
use crate::protocol::{self, Envelope, ModernError};
use crate::rng::Rng;
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

/// The connection's data: everything but the state (the machine's) and the undrained actions.
/// `Hash + Eq` so the model checker can store it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Core {
    pub(crate) config: Arc<Config>,
    pub(crate) rng: Rng,
    pub(crate) now: Duration,
    pub(crate) generation: Generation,
    pub(crate) next_id: RequestId,
    /// The id of the handshake request in flight: `initialize`, or `server/discover`.
    pub(crate) init_id: Option<RequestId>,
    /// Which era this server speaks, as far as the client knows (kept across generations).
    pub(crate) verdict: Option<Verdict>,
    /// This generation probed again after a legacy verdict proved wrong.
    pub(crate) reprobed: bool,
    /// The probe in flight was already sent again at another version.
    pub(crate) probe_retried: bool,
    /// The version the last probe asked for.
    pub(crate) probe_version: String,
    /// The bound the running init timeout was armed with (the row chose which).
    pub(crate) init_bound: Duration,
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
    pub(crate) outbox: VecDeque<Vec<u8>>,
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
            init_id: None,
            verdict: None,
            reprobed: false,
            probe_retried: false,
            probe_version: String::new(),
            init_bound: Duration::ZERO,
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
            #[cfg(feature = "checker")]
            mutant: None,
        }
    }
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

    fn send(&mut self, token: SendToken, frame: Vec<u8>) {
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
    fn owe(&mut self, frame: Vec<u8>) {
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
        match (entry.call, outcome) {
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
        self.issue(None, method, Some(params), options, Some(change));
    }

    /// Gives a request the next id, records it, arms its timeout and sends its frame: a caller's
    /// call, or (`call: None`) a request of the client's own. Returns its id.
    fn issue(
        &mut self,
        call: Option<CallId>,
        method: &str,
        params: Option<Value>,
        options: CallOptions,
        session: Option<SessionChange>,
    ) -> RequestId {
        let (id, frame) = self.enter(
            call,
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
    fn enter(
        &mut self,
        call: Option<CallId>,
        method: &str,
        params: Option<Value>,
        options: CallOptions,
        session: Option<SessionChange>,
        phase: Phase,
    ) -> (RequestId, Vec<u8>) {
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
        let frame = protocol::request(id, method, params, token, envelope.as_ref());
        self.core.calls.insert(
            id,
            Entry {
                call,
                session,
                frame: frame.clone(),
                phase,
                started: self.core.now,
                timeout,
                progress: options.progress,
                reset_on_progress: options.reset_timeout_on_progress,
                max_total: options.max_total_timeout,
                resent: false,
                mrtr: None,
                reissues: 0,
                relisted: false,
                relist: false,
                listen: false,
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

    fn auto(&self) -> bool {
        self.core.config.era == EraMode::Auto
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
            && entry.call.is_some()
            && protocol::result_type(result).as_deref() == Some("input_required"))
        .then_some((id, result))
    }

    /// The round an `input_required` result asks for, or why it cannot be met.
    fn input_round(&self, id: RequestId, result: &Value) -> Result<InputRound, String> {
        let entry = self.core.calls.get(id).ok_or("the call ended")?;
        let method = protocol::method_of(&entry.frame).unwrap_or_default();
        if !protocol::INPUT_METHODS.contains(&method.as_str()) {
            return Err(format!("{method} cannot ask for input"));
        }
        let rounds = entry.mrtr.as_ref().map_or(0, |m| m.round);
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
    fn awaited(&self, p: &InputReply) -> Option<&Mrtr> {
        let entry = self.core.calls.get(p.request)?;
        let mrtr = entry.mrtr.as_deref()?;
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
        let mrtr = entry.mrtr.get_or_insert_with(Box::default);
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
        let id = self.issue(None, listen::LISTEN_METHOD, Some(params), options, None);
        if let Some(e) = self.core.calls.get_mut(id) {
            e.listen = true;
        }
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
            if let Some(call) = entry.call {
                self.reply(call, None, outcome.map(|()| json!({}).into()));
            }
        }
    }

    /// Whether the response answers the handshake request in flight.
    fn answers_handshake(&self, p: &Response) -> bool {
        Self::response_id(p).is_some_and(|id| Some(id) == self.core.init_id)
    }

    /// Sends `server/discover` at `version` as the handshake request.
    fn send_discover_at(&mut self, version: &str) {
        let id = self.core.next_id;
        self.core.next_id += 1;
        self.core.init_id = Some(id);
        self.core.probe_version = version.to_owned();
        let config = Arc::clone(&self.core.config);
        let envelope = Envelope {
            version,
            config: &config,
        };
        let frame = protocol::request(id, "server/discover", None, None, Some(&envelope));
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
            .filter_map(|(id, e)| Some((id, e.call?)))
            .collect();
        for (id, call) in targets {
            self.reply(call, Some(id), Err(error.clone()));
        }
    }

    fn note(&mut self, failure: Failure) {
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
        (entry.call.is_some() && !entry.phase.answered() && !entry.listen && !entry.relist)
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

impl Handlers for Ctx<'_> {
    fn era_is_legacy(&self) -> bool {
        self.core.config.era == EraMode::Legacy
            || self
                .core
                .verdict
                .as_ref()
                .is_some_and(|v| v.era == Era::Legacy)
    }

    fn is_discover_accepted(&self, p: &Response) -> Option<ServerInfo> {
        if !self.answers_handshake(p) {
            return None;
        }
        let result = p.body.as_ref().ok()?.value();
        let versions = protocol::discover_versions(result)?;
        let version = protocol::common_modern(&versions)?;
        Some(protocol::discovered(result, version))
    }

    fn can_retry_version(&self, p: &Response) -> Option<String> {
        if !self.answers_handshake(p) || self.core.probe_retried {
            return None;
        }
        let Err(ResponseError::Rpc(e)) = &p.body else {
            return None;
        };
        let Some(ModernError::UnsupportedVersion(offered)) = protocol::modern_error(e) else {
            return None;
        };
        protocol::common_modern(&offered).map(str::to_owned)
    }

    fn is_modern_refusal(&self, p: &Response) -> bool {
        if !self.answers_handshake(p) || mutant!(self.core, NoModernRefusal) {
            return false;
        }
        // A modern version in common was taken by the rows before (accepted, or asked for
        // again once): what is left of a modern answer is usable only as a legacy one (auto).
        let legacy_only = |v: &[String]| {
            self.auto() && protocol::common_legacy(v).is_some() && !self.usable_modern(v)
        };
        match &p.body {
            Ok(result) => {
                protocol::discover_versions(result.value()).is_some_and(|v| !legacy_only(&v))
            }
            Err(ResponseError::Rpc(e)) => match protocol::modern_error(e) {
                Some(ModernError::UnsupportedVersion(v)) => !legacy_only(&v),
                Some(ModernError::Other) => true,
                None => false,
            },
            Err(ResponseError::Invalid { .. }) => false,
        }
    }

    fn can_fall_back(&self, p: &Response) -> bool {
        self.auto() && self.answers_handshake(p)
    }

    fn is_probe_answer(&self, p: &Response) -> bool {
        self.answers_handshake(p)
    }

    fn can_fall_back_silent(&self) -> bool {
        self.auto() && !self.core.probe_retried
    }

    fn can_respawn_legacy(&self, _p: &TransportError) -> bool {
        // Only a probe in flight can have killed the server (not a wait for authorization).
        self.auto() && self.core.verdict.is_none() && self.core.init_id.is_some()
    }

    fn is_init_modern_refusal(&self, p: &Response) -> bool {
        if !self.auto() || self.core.reprobed || !self.answers_handshake(p) {
            return false;
        }
        // Any error only a modern server answers with proves the legacy verdict wrong.
        let Err(ResponseError::Rpc(e)) = &p.body else {
            return false;
        };
        protocol::modern_error(e).is_some()
    }

    fn is_input_required(&self, p: &Response) -> Option<InputRound> {
        let (id, result) = self.input_required(p)?;
        self.input_round(id, result).ok()
    }

    fn is_input_required_refused(&self, p: &Response) -> Option<RequestId> {
        let (id, result) = self.input_required(p)?;
        self.input_round(id, result).is_err().then_some(id)
    }

    fn is_input_failure(&self, p: &InputReply) -> Option<RequestId> {
        self.awaited(p)?;
        p.outcome.is_err().then_some(p.request)
    }

    fn completes_input_round(&self, p: &InputReply) -> Option<RequestId> {
        let mrtr = self.awaited(p)?;
        let others_given = mrtr
            .awaiting
            .iter()
            .all(|(k, v)| *k == p.key || v.is_some());
        (p.outcome.is_ok() && others_given).then_some(p.request)
    }

    fn is_input_reply(&self, p: &InputReply) -> Option<RequestId> {
        self.awaited(p)?;
        p.outcome.is_ok().then_some(p.request)
    }

    fn is_bad_result_type(&self, p: &Response) -> Option<RequestId> {
        self.modern_version()?;
        let id = Self::response_id(p)?;
        // A call awaiting input was answered already: a second answer is not its result.
        let entry = self.core.calls.get(id)?;
        if entry.phase.answered() || entry.call.is_none() {
            return None;
        }
        let result = p.body.as_ref().ok()?.value();
        protocol::result_type(result)
            .is_some_and(|t| t != "complete")
            .then_some(id)
    }

    fn can_reissue(&self, p: &Response) -> Option<RequestId> {
        self.modern_version()?;
        let id = Self::response_id(p)?;
        let entry = self.core.calls.get(id)?;
        if entry.phase.answered()
            || entry.call.is_none()
            || (entry.reissues >= self.core.config.max_reissues
                && !mutant!(self.core, NoReissueCap))
        {
            return None;
        }
        let Err(ResponseError::Rpc(e)) = &p.body else {
            return None;
        };
        let lost = e.code == crate::headers::STREAM_LOST
            || matches!(protocol::modern_error(e),
                Some(ModernError::UnsupportedVersion(v)) if self.usable_modern(&v));
        lost.then_some(id)
    }

    fn is_header_mismatch(&self, p: &Response) -> Option<RequestId> {
        self.modern_version()?;
        let id = Self::response_id(p)?;
        let entry = self.core.calls.get(id)?;
        let Err(ResponseError::Rpc(e)) = &p.body else {
            return None;
        };
        (e.code == protocol::HEADER_MISMATCH
            && entry.call.is_some()
            && !entry.phase.answered()
            && (!entry.relisted || mutant!(self.core, RelistAlways))
            && protocol::method_of(&entry.frame).as_deref() == Some("tools/call"))
        .then_some(id)
    }

    fn is_modern_unsubscribe(&self, p: &CallRequest) -> bool {
        self.modern_version().is_some() && matches!(p.session, Some(SessionChange::Unsubscribe(_)))
    }

    fn is_listened_subscribe(&self, p: &CallRequest) -> bool {
        let Some(SessionChange::Subscribe(uri)) = &p.session else {
            return false;
        };
        self.modern_version().is_some()
            && self
                .core
                .listens
                .current
                .as_ref()
                .is_some_and(|l| l.acked.is_some() && l.asked.uris.contains(uri))
    }

    fn is_modern_subscribe(&self, p: &CallRequest) -> bool {
        self.modern_version().is_some() && matches!(p.session, Some(SessionChange::Subscribe(_)))
    }

    fn is_listen_send_end(&self, p: &SendToken) -> Option<PendingSend> {
        self.pending_send(p)
            .filter(|s| self.core.calls.get(s.id).is_some_and(|e| e.listen))
    }

    fn is_listen_refused(&self, p: &Response) -> Option<RequestId> {
        let id = Self::response_id(p)?;
        let refused = matches!(&p.body, Err(ResponseError::Rpc(e))
            if e.code == protocol::METHOD_NOT_FOUND || e.code == protocol::INVALID_PARAMS);
        (self.core.listens.current.as_ref()?.id == id && refused).then_some(id)
    }

    fn is_listen_end(&self, p: &Response) -> Option<ListenEnd> {
        let id = Self::response_id(p)?;
        if self.core.listens.current.as_ref()?.id != id {
            return None;
        }
        let reason = match &p.body {
            Ok(_) => ListenEndReason::Complete,
            Err(ResponseError::Rpc(e)) => ListenEndReason::Error {
                code: e.code,
                message: e.message.clone(),
            },
            Err(ResponseError::Invalid { .. }) => ListenEndReason::Invalid,
        };
        Some(ListenEnd { id, reason })
    }

    fn is_replaced_listen_end(&self, p: &Response) -> Option<RequestId> {
        let id = Self::response_id(p)?;
        (self.core.listens.previous.as_ref()?.id == id).then_some(id)
    }

    fn is_listen_timeout(&self, p: &RequestId) -> Option<RequestId> {
        (self.core.listens.current.as_ref()?.id == *p).then_some(*p)
    }

    fn is_listen_ack(&self, p: &Notification) -> Option<RequestId> {
        if p.method != listen::ACK_METHOD {
            return None;
        }
        let id = listen::tag(p)?.ok()?;
        let open = self.core.listens.current.as_ref()?;
        (open.id == id && open.acked.is_none()).then_some(id)
    }

    fn is_listen_cancelled(&self, p: &Notification) -> Option<ListenEnd> {
        let id = listen::cancelled_id(p)?;
        (self.core.listens.current.as_ref()?.id == id).then_some(ListenEnd {
            id,
            reason: ListenEndReason::Cancelled,
        })
    }

    fn is_replaced_listen_cancelled(&self, p: &Notification) -> Option<RequestId> {
        let id = listen::cancelled_id(p)?;
        (self.core.listens.previous.as_ref()?.id == id).then_some(id)
    }

    fn is_listen_notification(&self, p: &Notification) -> bool {
        if !listen::NOTIFICATION_METHODS.contains(&p.method.as_str()) {
            return false;
        }
        let Some(Ok(id)) = listen::tag(p) else {
            return false;
        };
        if mutant!(self.core, DeliverAnyListenId) {
            return true;
        }
        let l = &self.core.listens;
        l.current
            .as_ref()
            .is_some_and(|c| c.id == id && c.acked.is_some())
            || l.previous.as_ref().is_some_and(|c| c.id == id)
    }

    fn is_stray_listen_notification(&self, p: &Notification) -> bool {
        self.modern_version().is_some()
            && (p.method == listen::ACK_METHOD
                || (listen::NOTIFICATION_METHODS.contains(&p.method.as_str())
                    && listen::tag(p).is_some()))
    }

    fn can_relisten(&self) -> bool {
        let l = &self.core.listens;
        l.current.is_none()
            && !l.refused
            && (l.reopened < self.core.config.max_relistens || mutant!(self.core, NoRelistenCap))
            && !self.wanted().is_empty()
    }

    fn is_relist_timeout(&self, p: &RequestId) -> Option<RequestId> {
        self.core
            .calls
            .get(*p)
            .is_some_and(|e| e.relist)
            .then_some(*p)
    }

    fn is_relist_send_end(&self, p: &SendToken) -> Option<PendingSend> {
        self.pending_send(p)
            .filter(|s| self.core.calls.get(s.id).is_some_and(|e| e.relist))
    }

    fn is_relist_answer(&self, p: &Response) -> Option<RequestId> {
        let id = Self::response_id(p)?;
        self.core
            .calls
            .get(id)
            .is_some_and(|e| e.relist)
            .then_some(id)
    }

    fn era_is_modern(&self, _p: &ServerRequest) -> bool {
        self.modern_version().is_some()
    }

    fn is_init_accepted(&self, p: &Response) -> Option<ServerInfo> {
        let id = Self::response_id(p)?;
        let result = p.body.as_ref().ok()?.value();
        (Some(id) == self.core.init_id)
            .then(|| protocol::check_init_result(result).ok())
            .flatten()
    }

    fn is_init_response(&self, p: &Response) -> bool {
        Self::response_id(p).is_some_and(|id| Some(id) == self.core.init_id)
    }

    fn can_authorize_handshake(&self, p: &Response) -> bool {
        self.answers_handshake(p) && Self::auth_challenge(p).is_some() && self.authorizations_left()
    }

    fn is_handshake_auth_refusal(&self, p: &Response) -> bool {
        self.answers_handshake(p) && Self::auth_challenge(p).is_some()
    }

    fn can_authorize_call(&self, p: &Response) -> Option<RequestId> {
        let id = self.auth_refused_call(p)?;
        let entry = self.core.calls.get(id)?;
        let again = entry.auth_refused && !mutant!(self.core, AuthRetryAlways);
        (!again && (self.core.authorizing || self.authorizations_left())).then_some(id)
    }

    fn is_final_auth_refusal(&self, p: &Response) -> Option<RequestId> {
        self.auth_refused_call(p)
    }

    fn is_authorizing(&self) -> bool {
        self.core.authorizing
    }

    fn is_authorizing_failure(&self, _p: &crate::event::AuthFailure) -> bool {
        self.core.authorizing
    }

    fn is_unsubscribe(&self, p: &CallRequest) -> bool {
        matches!(p.session, Some(SessionChange::Unsubscribe(_)))
    }

    fn is_session_ack(&self, p: &Response) -> Option<RequestId> {
        let id = Self::response_id(p).filter(|_| p.body.is_ok())?;
        let change = self.core.calls.get(id)?.session.as_ref()?;
        (!matches!(change, SessionChange::Unsubscribe(_))).then_some(id)
    }

    fn is_ping(&self, p: &ServerRequest) -> bool {
        p.method == "ping"
    }

    fn is_duplicate_server_request(&self, p: &ServerRequest) -> bool {
        self.core.server_requests.contains(&p.id)
    }

    fn is_undeclared_elicitation_mode(&self, p: &ServerRequest) -> bool {
        let caps = &self.core.config.capabilities;
        p.method == "elicitation/create"
            && (caps.elicitation || caps.elicitation_url)
            && !caps.handles(&p.method, p.params.as_ref())
    }

    fn is_over_server_request_cap(&self, p: &ServerRequest) -> bool {
        self.has_handler(p)
            && self.core.server_requests.len() >= self.core.config.max_server_requests
    }

    fn has_handler(&self, p: &ServerRequest) -> bool {
        self.core
            .config
            .capabilities
            .handles(&p.method, p.params.as_ref())
    }

    fn is_live_response(&self, p: &Response) -> Option<RequestId> {
        // A call awaiting input was answered already: a second answer to that id is not live.
        Self::response_id(p).filter(|id| {
            self.core
                .calls
                .get(*id)
                .is_some_and(|e| !e.phase.answered())
        })
    }

    fn is_tombstoned(&self, p: &Response) -> Option<RequestId> {
        Self::response_id(p).filter(|id| self.core.tombstones.contains(*id, self.core.now))
    }

    fn is_progress(&self, p: &Notification) -> Option<RequestId> {
        let id = p
            .param("notifications/progress", "progressToken")?
            .as_u64()?;
        self.core.calls.get(id).filter(|e| e.progress).map(|_| id)
    }

    fn is_server_cancel(&self, p: &Notification) -> Option<ServerRequestId> {
        let id = ServerRequestId::from_json(p.param("notifications/cancelled", "requestId")?)?;
        self.core.server_requests.contains(&id).then_some(id)
    }

    fn is_pending_send(&self, p: &SendToken) -> Option<PendingSend> {
        self.pending_send(p)
    }

    fn can_retry_send(&self, p: &SendToken) -> Option<PendingSend> {
        self.pending_send(p)
            .filter(|s| s.attempt < self.core.config.send_attempts)
    }

    fn is_owed_send(&self, p: &SendToken) -> bool {
        *p == SendToken::Owed
    }

    fn is_initialized_send(&self, p: &SendToken) -> bool {
        *p == SendToken::Initialized
    }

    fn is_init_send(&self, p: &SendToken) -> bool {
        matches!(*p, SendToken::Request(id) if Some(id) == self.core.init_id)
    }

    fn is_notify_send(&self, p: &SendToken) -> Option<CallId> {
        match *p {
            SendToken::Notify(call) => Some(call),
            SendToken::Request(_) | SendToken::Initialized | SendToken::Owed => None,
        }
    }

    fn is_live_server_request(&self, p: &HandlerReply) -> bool {
        self.core.server_requests.contains(&p.id)
    }

    fn is_live_call(&self, p: &CallId) -> Option<RequestId> {
        self.core.calls.id_of(*p)
    }

    fn is_live_request(&self, p: &RequestId) -> Option<RequestId> {
        self.core.calls.get(*p).map(|_| *p)
    }

    fn can_reinitialize(&self, p: &TransportError) -> Option<Vec<RequestId>> {
        let TransportError::SessionExpired { refused, .. } = p else {
            return None;
        };
        // Sessions are of the legacy era: a modern connection has none to initialize again.
        if self.modern_version().is_some() {
            return None;
        }
        if self.core.reinits >= self.core.config.max_session_reinits
            && !mutant!(self.core, UnboundedReinit)
        {
            return None;
        }
        // Callers' calls only (a restore is asked for again by the new session anyway), not
        // sent again before: those the server refused, and those it never got (not yet taken
        // by the transport).
        let unrun = self
            .core
            .calls
            .iter()
            .filter(|(id, e)| {
                e.call.is_some()
                    && (!e.resent || mutant!(self.core, ParkResentAgain))
                    && (e.phase != Phase::Sent || refused.contains(id))
            })
            .map(|(id, _)| id)
            .collect();
        Some(unrun)
    }

    fn is_retrying(&self, p: &RequestId) -> Option<RequestId> {
        matches!(
            self.core.calls.get(*p).map(|e| e.phase),
            Some(Phase::Retrying { .. })
        )
        .then_some(*p)
    }

    fn spawn_transport(&mut self) {
        self.core.generation += 1;
        self.core.reprobed = false;
        if mutant!(self.core, ReuseIds) {
            self.core.next_id = 1;
        }
        let generation = self.core.generation;
        self.push(Action::SpawnTransport { generation });
    }

    // Whether the transport is open is the table's business (the model checker proves credit
    // only goes to the open transport and each generation is closed once): no hidden guard here.
    fn close_transport(&mut self) {
        // What was owed to this transport's server ends with it, and so does the wait for an
        // authorization it asked for (its outcome will be stale; a new generation asks again).
        self.core.outbox.clear();
        self.core.authorizing = false;
        let generation = self.core.generation;
        self.push(Action::CloseTransport { generation });
    }

    fn grant_credit(&mut self) {
        let generation = self.core.generation;
        let credits = if mutant!(self.core, WindowOnEveryCredit) {
            self.core.config.read_window.max(1)
        } else {
            1
        };
        self.push(Action::GrantCredit {
            generation,
            credits,
        });
    }

    fn open_read_window(&mut self) {
        let generation = self.core.generation;
        let credits = self.core.config.read_window.max(1);
        self.push(Action::GrantCredit {
            generation,
            credits,
        });
    }

    fn arm_connect_timeout(&mut self) {
        self.core.init_bound = self.core.config.connect_timeout;
        self.arm(TimerKind::InitTimeout, self.core.init_bound);
    }

    fn arm_init_timeout(&mut self) {
        self.core.init_bound = self.core.config.init_timeout;
        self.arm(TimerKind::InitTimeout, self.core.init_bound);
    }

    fn arm_tombstone_sweep(&mut self) {
        self.arm(TimerKind::TombstoneSweep, self.core.config.tombstone_sweep);
    }

    fn arm_closing_exit(&mut self) {
        self.arm(TimerKind::ClosingExit, self.core.config.closing_exit);
    }

    fn send_initialize(&mut self) {
        let id = self.core.next_id;
        self.core.next_id += 1;
        self.core.init_id = Some(id);
        let params = protocol::initialize_params(&self.core.config);
        self.send(
            SendToken::Request(id),
            protocol::request(id, "initialize", Some(params), None, None),
        );
    }

    fn send_discover(&mut self) {
        self.core.probe_retried = false;
        let version = self
            .modern_version()
            .unwrap_or(protocol::MODERN_PROTOCOL_VERSIONS[0])
            .to_owned();
        self.send_discover_at(&version);
    }

    fn arm_probe_timeout(&mut self) {
        self.arm(TimerKind::ProbeTimeout, self.core.config.probe_timeout);
    }

    fn accept_discover(&mut self, w: ServerInfo) {
        self.core.verdict = Some(Verdict {
            era: Era::Modern,
            version: w.protocol_version.clone(),
            tentative: false,
        });
        self.core.server = Some(Arc::new(w));
        self.core.init_id = None;
        self.core.last_error = None;
    }

    fn retry_discover(&mut self, w: String) {
        if let Some(id) = self.core.init_id.take() {
            self.tombstone(id);
        }
        self.core.probe_retried = true;
        self.send_discover_at(&w);
    }

    fn reject_probe(&mut self, p: &Response) {
        let not_modern = |reason: String| Failure::NotModern { reason };
        let failure = match &p.body {
            Ok(result) => match protocol::discover_versions(result.value()) {
                Some(offered) => Failure::NoCommonVersion { offered },
                None => not_modern("its answer to server/discover is not a DiscoverResult".into()),
            },
            Err(ResponseError::Rpc(e)) => match protocol::modern_error(e) {
                // It names a version we speak, yet refused it again: a refusal, not a gap.
                Some(ModernError::UnsupportedVersion(offered))
                    if protocol::common_modern(&offered).is_some() =>
                {
                    Failure::Refused(e.clone())
                }
                Some(ModernError::UnsupportedVersion(offered)) => {
                    Failure::NoCommonVersion { offered }
                }
                Some(ModernError::Other) => Failure::Refused(e.clone()),
                None => not_modern(format!("it answered server/discover with the error {e}")),
            },
            Err(ResponseError::Invalid { reason }) => {
                not_modern(format!("invalid error answering server/discover: {reason}"))
            }
        };
        self.note(failure.clone());
        self.push(Action::Report(Report::InitRejected(failure)));
    }

    fn note_probe_fallback(&mut self, p: &Response) {
        let reason = match &p.body {
            Ok(_) => "a result that is not a DiscoverResult".to_owned(),
            Err(ResponseError::Rpc(e)) => format!("the error {e}"),
            Err(ResponseError::Invalid { reason }) => format!("an invalid error ({reason})"),
        };
        self.push(Action::Report(Report::ProbeFallback { reason }));
    }

    fn note_probe_timeout(&mut self) {
        let after = self.core.config.probe_timeout;
        self.note(Failure::ProbeTimeout { after });
        self.push(Action::Report(Report::ProbeTimeout));
    }

    fn report_probe_timeout(&mut self) {
        self.push(Action::Report(Report::ProbeTimeout));
    }

    fn set_legacy_tentative(&mut self) {
        self.core.verdict = Some(Verdict {
            era: Era::Legacy,
            version: protocol::LATEST_PROTOCOL_VERSION.to_owned(),
            tentative: true,
        });
    }

    fn drop_tentative_verdict(&mut self) {
        if self.core.verdict.as_ref().is_some_and(|v| v.tentative)
            && !mutant!(self.core, KeepTentativeVerdict)
        {
            self.core.verdict = None;
        }
    }

    fn forget_verdict(&mut self) {
        self.core.verdict = None;
        self.core.reprobed = true;
    }

    fn report_unexpected_server_request(&mut self, p: ServerRequest) {
        if mutant!(self.core, AnswerUnexpected) {
            self.reject_server_request(&p);
        }
        self.push(Action::Report(Report::UnexpectedServerRequest {
            method: p.method,
        }));
    }

    fn start_input_round(&mut self, w: InputRound) {
        let Some(entry) = self.core.calls.get_mut(w.request) else {
            return;
        };
        entry.phase = Phase::AwaitingInput;
        // Its answered id needs no retry of its send any more.
        self.core
            .timers
            .cancel(TimerKey::keyed(TimerKind::SendRetry, w.request));
        let mrtr = entry.mrtr.get_or_insert_with(Box::default);
        mrtr.round = mrtr.round.saturating_add(1);
        mrtr.awaiting = w.inputs.iter().map(|(k, _, _)| (k.clone(), None)).collect();
        mrtr.state = w.state;
        if w.inputs.is_empty() {
            self.send_round(w.request);
            return;
        }
        let generation = self.core.generation;
        for (key, method, params) in w.inputs {
            self.push(Action::InputRequest {
                generation,
                request: w.request,
                key,
                method,
                params,
            });
        }
    }

    fn fail_input_required(&mut self, p: Response, w: RequestId) {
        let reason = match p.body.as_ref().ok().map(|r| self.input_round(w, r.value())) {
            Some(Err(reason)) => reason,
            Some(Ok(_)) | None => "it cannot be met".to_owned(),
        };
        let Some(entry) = self.core.calls.remove(w) else {
            return;
        };
        self.cancel_call_timers(w);
        self.tombstone(w);
        self.answer(&entry, w, Err(CallError::InputRequired { reason }));
    }

    fn record_input_reply(&mut self, p: InputReply, w: &RequestId) {
        let Ok(value) = p.outcome else {
            return;
        };
        if let Some(mrtr) = self
            .core
            .calls
            .get_mut(*w)
            .and_then(|e| e.mrtr.as_deref_mut())
            && let Some(slot) = mrtr.awaiting.get_mut(&p.key)
        {
            *slot = Some(value.to_string());
        }
    }

    fn retry_with_inputs(&mut self, w: RequestId) {
        self.send_round(w);
    }

    fn fail_input_handler(&mut self, p: InputReply, w: RequestId) {
        let Some(entry) = self.core.calls.remove(w) else {
            return;
        };
        self.cancel_call_timers(w);
        self.tombstone(w);
        self.abort_inputs(w);
        let Err(error) = p.outcome else {
            return;
        };
        let key = p.key;
        self.answer(&entry, w, Err(CallError::InputFailed { key, error }));
    }

    fn relist_tools(&mut self, w: RequestId) {
        let Some(entry) = self.core.calls.get_mut(w) else {
            return;
        };
        entry.phase = Phase::AwaitingRelist;
        entry.relisted = true;
        // Its request was answered: nothing is owed for it, and its send has nothing to retry.
        self.core
            .timers
            .cancel(TimerKey::keyed(TimerKind::SendRetry, w));
        // One listing serves every call waiting for it.
        if self.core.calls.iter().any(|(_, e)| e.relist) {
            return;
        }
        let id = self.issue(None, "tools/list", None, CallOptions::default(), None);
        if let Some(e) = self.core.calls.get_mut(id) {
            e.relist = true;
        }
    }

    fn resend_after_relist(&mut self, w: RequestId) {
        if self.core.calls.remove(w).is_some() {
            self.cancel_call_timers(w);
            self.tombstone(w);
        }
        self.resend_relisted();
    }

    fn resend_relisted(&mut self) {
        if mutant!(self.core, NoResendAfterRelist) {
            return;
        }
        self.resend_waiting(Phase::AwaitingRelist);
    }

    fn open_listen(&mut self) {
        self.core.listens = Listens::default();
        let want = self.wanted();
        if !want.is_empty() {
            self.send_listen(want);
        }
        self.tell_listening();
    }

    fn relisten(&mut self) {
        let want = self.wanted();
        let l = &self.core.listens;
        let retrying = self
            .core
            .timers
            .deadline(TimerKey::plain(TimerKind::ListenRetry))
            .is_some();
        // Nothing changed, unless the listen is dead (refused, given up) and something is
        // wanted: a new subscribe tries once more.
        let dead = l.current.is_none() && !retrying && !want.is_empty();
        if want == l.filter && !dead {
            self.tell_listening();
            return;
        }
        self.core
            .timers
            .cancel(TimerKey::plain(TimerKind::ListenRetry));
        self.core.listens.refused = false;
        if let Some(open) = self.core.listens.current.take() {
            if open.acked.is_some() {
                // It keeps delivering until its successor is acknowledged.
                if let Some(old) = self.core.listens.previous.replace(open) {
                    self.end_call(old.id, "replaced");
                }
            } else {
                self.end_call(open.id, "replaced");
            }
        }
        if want.is_empty() {
            if let Some(old) = self.core.listens.previous.take() {
                self.end_call(old.id, "nothing to listen for");
            }
            self.core.listens.filter = want;
        } else {
            self.send_listen(want);
        }
        self.tell_listening();
    }

    fn await_listen_ack(&mut self, p: CallRequest) {
        let phase = Phase::AwaitingAck;
        self.enter(
            Some(p.call),
            &p.method,
            p.params,
            p.options,
            p.session,
            phase,
        );
    }

    fn reply_subscribed(&mut self, p: CallRequest) {
        let Some(SessionChange::Subscribe(uri)) = p.session else {
            return;
        };
        let honored = self
            .core
            .listens
            .current
            .as_ref()
            .and_then(|l| l.acked.as_ref())
            .is_some_and(|(f, _)| f.uris.contains(&uri));
        if honored {
            self.core.session.subscriptions.insert(uri);
            self.reply(p.call, None, Ok(json!({}).into()));
        } else {
            let error = CallError::SubscriptionNotHonored { uri };
            self.reply(p.call, None, Err(error));
        }
    }

    fn accept_listen_ack(&mut self, p: Notification, w: RequestId) {
        let now = self.core.now;
        let Some(open) = self.core.listens.current.as_mut() else {
            return;
        };
        let said = listen::honored(&p);
        let honored = said.intersect(&open.asked);
        let asked = open.asked.clone();
        open.acked = Some((honored.clone(), now));
        // A listen lives long: its request timer bounded only the acknowledgement.
        self.core
            .timers
            .cancel(TimerKey::keyed(TimerKind::RequestTimeout, w));
        if !said.is_subset(&asked) {
            self.push(Action::Report(Report::ListenWider { id: w }));
        }
        if honored != asked {
            let missing = asked.minus(&honored);
            self.push(Action::Report(Report::ListenNarrowed { id: w, missing }));
        }
        if !mutant!(self.core, NoListenCancel)
            && let Some(old) = self.core.listens.previous.take()
        {
            self.end_call(old.id, "replaced");
        }
        let ignore = mutant!(self.core, AckIgnoresFilter);
        self.answer_waiters(|uri| {
            asked.uris.contains(uri).then(|| {
                if ignore || honored.uris.contains(uri) {
                    Ok(())
                } else {
                    Err(CallError::SubscriptionNotHonored {
                        uri: uri.to_owned(),
                    })
                }
            })
        });
        let restored: Vec<String> = self
            .core
            .session
            .subscriptions
            .iter()
            .filter(|uri| asked.uris.contains(*uri) && !honored.uris.contains(*uri))
            .cloned()
            .collect();
        for uri in restored {
            let change = SessionChange::Subscribe(uri);
            self.push(Action::Report(Report::RestoreFailed(change)));
        }
        self.tell_listening();
    }

    fn drop_stray_listen_notification(&mut self, p: Notification) {
        let method = p.method;
        self.push(Action::Report(Report::StrayListenNotification { method }));
    }

    fn refuse_listen(&mut self, p: Response, w: RequestId) {
        self.core.listens.current = None;
        self.forget_listen(w);
        self.core.listens.refused = true;
        let error = match p.body {
            Err(ResponseError::Rpc(e)) => e,
            Ok(_) | Err(ResponseError::Invalid { .. }) => return,
        };
        let code = error.code;
        self.answer_waiters(|_| Some(Err(CallError::Server(error.clone()))));
        self.push(Action::Report(Report::ListenRefused { id: w, code }));
        self.tell_listening();
    }

    fn end_listen(&mut self, w: ListenEnd) {
        let Some(open) = self.core.listens.current.take() else {
            return;
        };
        self.forget_listen(w.id);
        let stable = self.core.config.listen_stable;
        if open
            .acked
            .is_some_and(|(_, at)| self.core.now >= at.saturating_add(stable))
        {
            self.core.listens.reopened = 0;
        }
        let reason = w.reason.to_string();
        self.answer_waiters(|_| {
            Some(Err(CallError::ListenEnded {
                reason: reason.clone(),
            }))
        });
        let id = w.id;
        self.push(Action::Report(Report::ListenLost { id, reason }));
        self.tell_listening();
    }

    fn forget_replaced_listen(&mut self, w: RequestId) {
        self.core.listens.previous = None;
        self.forget_listen(w);
        self.tell_listening();
    }

    fn time_out_listen(&mut self, w: RequestId) {
        self.core.listens.current = None;
        if let Some(entry) = self.end_call(w, "timeout") {
            let after = self.core.now.saturating_sub(entry.started);
            self.answer_waiters(|_| Some(Err(CallError::Timeout { after })));
        }
        let reason = "not acknowledged in time".to_owned();
        self.push(Action::Report(Report::ListenLost { id: w, reason }));
        self.tell_listening();
    }

    fn lose_listen_send(&mut self, w: PendingSend) {
        self.core.listens.current = None;
        self.end_call(w.id, "send failed");
        self.answer_waiters(|_| Some(Err(CallError::SendFailed)));
        let reason = "its send was refused".to_owned();
        let id = w.id;
        self.push(Action::Report(Report::ListenLost { id, reason }));
        self.tell_listening();
    }

    fn schedule_listen_retry(&mut self) {
        let c = &self.core.config;
        let doublings = u32::from(self.core.listens.reopened.min(16));
        let delay = c.relisten_delay.saturating_mul(1 << doublings);
        let delay = self.core.rng.jitter(delay, 20);
        self.arm(TimerKind::ListenRetry, delay);
    }

    fn reopen_listen(&mut self) {
        self.core.listens.reopened = self.core.listens.reopened.saturating_add(1);
        let want = self.wanted();
        self.send_listen(want);
        self.tell_listening();
    }

    fn give_up_listen(&mut self) {
        self.push(Action::Report(Report::ListenGaveUp));
        let reason = "it was opened again as often as allowed".to_owned();
        self.answer_waiters(|_| {
            Some(Err(CallError::ListenEnded {
                reason: reason.clone(),
            }))
        });
        self.tell_listening();
    }

    fn time_out_relist(&mut self, w: RequestId) {
        self.end_call(w, "timeout");
    }

    fn lose_relist_send(&mut self, w: PendingSend) {
        self.end_call(w.id, "send failed");
    }

    fn reissue_call(&mut self, w: RequestId) {
        let Some(mut entry) = self.core.calls.remove(w) else {
            return;
        };
        let id = self.core.next_id;
        self.core.next_id += 1;
        entry.frame = protocol::with_new_id(&entry.frame, id, entry.progress);
        entry.reissues = entry.reissues.saturating_add(1);
        self.tombstone(w);
        self.reissue(w, id, entry);
    }

    fn fail_bad_result_type(&mut self, p: Response, w: RequestId) {
        let Some(entry) = self.core.calls.remove(w) else {
            return;
        };
        self.cancel_call_timers(w);
        self.tombstone(w);
        let result_type = p
            .body
            .ok()
            .as_ref()
            .and_then(|r| protocol::result_type(r.value()))
            .unwrap_or_default();
        self.answer(&entry, w, Err(CallError::UnknownResultType { result_type }));
    }

    fn accept_init(&mut self, w: ServerInfo) {
        self.core.verdict = Some(Verdict {
            era: Era::Legacy,
            version: w.protocol_version.clone(),
            tentative: false,
        });
        self.core.server = Some(Arc::new(w));
        self.core.init_id = None;
        self.core.last_error = None;
    }

    fn reject_init(&mut self, p: &Response) {
        let failure = match &p.body {
            Err(ResponseError::Rpc(e)) => Failure::Refused(e.clone()),
            Err(ResponseError::Invalid { reason }) => Failure::BadHandshake {
                reason: format!("invalid error answering initialize: {reason}"),
            },
            Ok(result) => match protocol::check_init_result(result.value()) {
                Err(f) => f,
                // Unreachable through the table (is_init_accepted comes first); say so plainly.
                Ok(_) => Failure::BadHandshake {
                    reason: "initialize result rejected".into(),
                },
            },
        };
        self.note(failure.clone());
        self.push(Action::Report(Report::InitRejected(failure)));
    }

    fn send_next_owed(&mut self) {
        self.core.outbox.pop_front();
        if let Some(next) = self.core.outbox.front() {
            let frame = next.clone();
            self.send(SendToken::Owed, frame);
        }
    }

    fn schedule_owed_retry(&mut self) {
        let c = &self.core.config;
        let delay = self.core.rng.jitter(c.retry_delay, c.retry_jitter_pct);
        self.arm(TimerKind::OwedRetry, delay);
    }

    fn resend_owed(&mut self) {
        if let Some(head) = self.core.outbox.front() {
            let frame = head.clone();
            self.send(SendToken::Owed, frame);
        }
    }

    fn drop_owed(&mut self) {
        self.core.outbox.clear();
    }

    fn note_initialized_refused(&mut self) {
        self.note(Failure::InitializedNotSent);
    }

    fn fail_init_send(&mut self) {
        self.note(Failure::InitNotSent);
        self.push(Action::Report(Report::InitRejected(Failure::InitNotSent)));
    }

    fn abandon_init(&mut self) {
        if let Some(id) = self.core.init_id.take() {
            self.tombstone(id);
        }
    }

    fn note_down(&mut self, p: &TransportError) {
        self.note(Failure::Transport(p.clone()));
    }

    fn note_oversized(&mut self, p: &Oversized) {
        let max = self.core.config.max_frame_bytes;
        self.note(Failure::Oversized { size: p.size, max });
    }

    fn note_init_timeout(&mut self) {
        let after = self.core.init_bound;
        self.note(Failure::InitTimeout { after });
    }

    fn restore_session(&mut self) {
        let session = self.core.session.clone();
        if let Some(level) = session.log_level {
            self.send_session_request(SessionChange::SetLogLevel(level));
        }
        for uri in session.subscriptions {
            self.send_session_request(SessionChange::Subscribe(uri));
        }
    }

    fn record_session(&mut self, w: &RequestId) {
        let change = self.core.calls.get(*w).and_then(|e| e.session.clone());
        match change {
            Some(SessionChange::Subscribe(uri)) => {
                self.core.session.subscriptions.insert(uri);
            }
            Some(SessionChange::SetLogLevel(level)) => self.core.session.log_level = Some(level),
            Some(SessionChange::Unsubscribe(_)) | None => {}
        }
    }

    fn forget_subscription(&mut self, p: &CallRequest) {
        let Some(SessionChange::Unsubscribe(uri)) = &p.session else {
            return;
        };
        self.core.session.subscriptions.remove(uri);
        // A modern subscribe of it waiting for its listen's acknowledgement is done: the
        // resource is unsubscribed, as the caller asked last.
        let uri = uri.clone();
        self.answer_waiters(|u| (u == uri).then_some(Ok(())));
        self.core.session.subscriptions.remove(&uri);
        // A subscribe still in flight must not record the subscription when it is acknowledged.
        let subscribe = SessionChange::Subscribe(uri.clone());
        for id in self.core.calls.ids() {
            if let Some(e) = self.core.calls.get_mut(id)
                && e.session.as_ref() == Some(&subscribe)
            {
                e.session = None;
            }
        }
    }

    fn reply_ended_locally(&mut self, p: CallRequest) {
        self.reply(p.call, None, Ok(json!({}).into()));
    }

    fn send_initialized(&mut self) {
        self.send(
            SendToken::Initialized,
            protocol::notification("notifications/initialized", None, None),
        );
    }

    fn reset_backoff(&mut self) {
        self.core.backoff.reset();
    }

    fn note_ready(&mut self) {
        self.core.ready_at = Some(self.core.now);
    }

    fn schedule_backoff(&mut self) {
        // The session last made ready proved itself by staying up: a fresh sequence.
        if let Some(at) = self.core.ready_at.take()
            && self.core.now.saturating_sub(at) >= self.core.config.session_stable
            && !mutant!(self.core, StableNeverResets)
        {
            self.core.backoff.reset();
        }
        // A new attempt after the delay may authorize again (an authorization server that was
        // down, a login the user abandoned): the budget bounds authorizations in a row within
        // an attempt, the backoff delay the rate of attempts.
        self.core.authorizations = 0;
        let c = &self.core.config;
        let (min, max, pct) = (c.backoff_min, c.backoff_max, c.backoff_jitter_pct);
        let delay = self.core.backoff.next(min, max, pct, &mut self.core.rng);
        self.arm(TimerKind::Reconnect, delay);
    }

    fn answer_ping(&mut self, p: &ServerRequest) {
        self.owe(protocol::response(&p.id, Ok(&json!({}))));
    }

    fn reject_server_request_busy(&mut self, p: &ServerRequest) {
        let cap = self.core.config.max_server_requests;
        let err = RpcError {
            code: codes::SERVER_ERROR,
            message: format!(
                "client busy: {cap} server requests are already being handled; try again later"
            ),
            data: None,
        };
        self.owe(protocol::response(&p.id, Err(&err)));
    }

    fn reject_server_request(&mut self, p: &ServerRequest) {
        let err = RpcError {
            code: codes::METHOD_NOT_FOUND,
            message: format!("method not found: {}", p.method),
            data: None,
        };
        self.owe(protocol::response(&p.id, Err(&err)));
    }

    fn reject_early_server_request(&mut self, p: &ServerRequest) {
        let err = RpcError {
            code: codes::METHOD_NOT_FOUND,
            message: format!("method not found: {} (client not initialized)", p.method),
            data: None,
        };
        self.owe(protocol::response(&p.id, Err(&err)));
    }

    fn reject_duplicate_server_request(&mut self, p: &ServerRequest) {
        let err = RpcError {
            code: codes::INVALID_REQUEST,
            message: format!(
                "duplicate request id {} (a request with this id is in progress)",
                p.id
            ),
            data: None,
        };
        self.owe(protocol::response(&p.id, Err(&err)));
    }

    fn reject_undeclared_mode(&mut self, p: &ServerRequest) {
        let mode = p
            .params
            .as_ref()
            .and_then(|v| v.get("mode"))
            .and_then(Value::as_str)
            .unwrap_or("form");
        let err = RpcError {
            code: codes::INVALID_PARAMS,
            message: format!("elicitation mode {mode:?} was not declared by this client"),
            data: None,
        };
        self.owe(protocol::response(&p.id, Err(&err)));
    }

    fn dispatch_server_request(&mut self, p: ServerRequest) {
        self.core.server_requests.insert(p.id.clone());
        let generation = self.core.generation;
        self.push(Action::ServerRequest {
            generation,
            request: p,
        });
    }

    fn send_handler_reply(&mut self, p: HandlerReply) {
        self.core.server_requests.remove(&p.id);
        let frame = protocol::response(&p.id, p.result.as_ref());
        self.owe(frame);
    }

    fn abort_server_request(&mut self, w: ServerRequestId) {
        self.core.server_requests.remove(&w);
        let generation = self.core.generation;
        self.push(Action::AbortServerRequest { generation, id: w });
    }

    fn abort_server_requests(&mut self) {
        self.core.server_requests.clear();
        let generation = self.core.generation;
        self.push(Action::AbortServerRequests { generation });
    }

    fn deliver_notification(&mut self, p: Notification) {
        self.push(Action::Notification(p));
    }

    fn deliver_progress(&mut self, p: Notification, w: RequestId) {
        let Some(entry) = self.core.calls.get(w) else {
            return;
        };
        let Some(call) = entry.call else {
            return;
        };
        if entry.reset_on_progress {
            let mut at = later(self.core.now, entry.timeout);
            if let Some(total) = entry.max_total {
                at = at.min(later(entry.started, total));
            }
            self.core
                .timers
                .arm(TimerKey::keyed(TimerKind::RequestTimeout, w), at);
        }
        self.push(Action::Progress {
            call,
            params: p.params.unwrap_or(Value::Null),
        });
    }

    fn report_malformed(&mut self, p: Malformed) {
        self.push(Action::Report(Report::Malformed { reason: p.reason }));
    }

    fn report_oversized(&mut self, p: &Oversized) {
        let max = self.core.config.max_frame_bytes;
        self.push(Action::Report(Report::Oversized { size: p.size, max }));
    }

    fn drop_late_response(&mut self, w: RequestId) {
        self.push(Action::Report(Report::LateResponse { id: w }));
    }

    fn drop_unknown_response(&mut self, p: Response) {
        self.push(Action::Report(Report::UnknownResponse { id: p.id }));
    }

    fn start_call(&mut self, p: CallRequest) {
        self.issue(Some(p.call), &p.method, p.params, p.options, p.session);
    }

    fn complete_call(&mut self, p: Response, w: RequestId) {
        #[cfg(feature = "checker")]
        let w = if mutant!(self.core, AnswerWrongCall) {
            let other = self.core.calls.iter().find(|(id, _)| *id != w);
            other.map_or(w, |(other, _)| other)
        } else {
            w
        };
        let entry = if mutant!(self.core, ReplyKeepsEntry) {
            self.core.calls.get(w).cloned()
        } else {
            self.core.calls.remove(w)
        };
        let Some(entry) = entry else {
            return;
        };
        self.cancel_call_timers(w);
        // A call answered (not for want of authorization) makes the authorizations whole again.
        if Self::auth_challenge(&p).is_none() {
            self.core.authorizations = 0;
        }
        self.answer(
            &entry,
            w,
            p.body.map_err(|e| match e {
                ResponseError::Rpc(e) => CallError::Server(e),
                ResponseError::Invalid { reason } => CallError::InvalidResponse { reason },
            }),
        );
    }

    fn mark_sent(&mut self, w: PendingSend) {
        if let Some(e) = self.core.calls.get_mut(w.id) {
            e.phase = Phase::Sent;
        }
    }

    fn schedule_send_retry(&mut self, w: PendingSend) {
        if let Some(e) = self.core.calls.get_mut(w.id) {
            e.phase = Phase::Retrying { attempt: w.attempt };
        }
        let c = &self.core.config;
        let delay = self.core.rng.jitter(c.retry_delay, c.retry_jitter_pct);
        let at = later(self.core.now, delay);
        self.core
            .timers
            .arm(TimerKey::keyed(TimerKind::SendRetry, w.id), at);
        self.push(Action::Report(Report::SendRetry {
            id: w.id,
            attempt: w.attempt,
        }));
    }

    fn retry_send(&mut self, w: RequestId) {
        let Some(e) = self.core.calls.get_mut(w) else {
            return;
        };
        let Phase::Retrying { attempt } = e.phase else {
            return;
        };
        e.phase = Phase::Sending {
            attempt: attempt + 1,
        };
        let frame = e.frame.clone();
        self.send(SendToken::Request(w), frame);
    }

    fn fail_backpressure(&mut self, w: PendingSend) {
        if let Some(entry) = self.end_call(w.id, "backpressure") {
            let error = CallError::Backpressure {
                attempts: w.attempt,
            };
            self.answer(&entry, w.id, Err(error));
        }
    }

    fn fail_send_error(&mut self, w: PendingSend) {
        if let Some(entry) = self.end_call(w.id, "send failed") {
            self.answer(&entry, w.id, Err(CallError::SendFailed));
        }
    }

    fn time_out_call(&mut self, w: RequestId) {
        if let Some(entry) = self.end_call(w, "timeout") {
            let after = self.core.now.saturating_sub(entry.started);
            self.answer(&entry, w, Err(CallError::Timeout { after }));
        }
    }

    fn cancel_call(&mut self, w: RequestId) {
        if let Some(entry) = self.end_call(w, "cancelled by the client") {
            self.answer(&entry, w, Err(CallError::Cancelled));
        }
    }

    fn park_unrun_calls(&mut self, w: Vec<RequestId>) {
        if mutant!(self.core, ParkNothing) {
            return;
        }
        for id in w {
            let Some(entry) = self.core.calls.get_mut(id) else {
                continue;
            };
            entry.phase = Phase::Parked;
            let frame = entry.frame.clone();
            // Its deadline stays armed; a busy send's retry has nothing to retry any more.
            self.core
                .timers
                .cancel(TimerKey::keyed(TimerKind::SendRetry, id));
            if mutant!(self.core, ResendOnExpired) {
                self.send(SendToken::Request(id), frame);
            }
        }
    }

    fn fail_running_calls(&mut self) {
        let cause = self
            .core
            .last_error
            .clone()
            .unwrap_or(Failure::Transport(TransportError::Closed));
        let error = CallError::ConnectionLost(cause);
        let running: Vec<RequestId> = self
            .core
            .calls
            .iter()
            .filter(|(_, e)| e.phase != Phase::Parked)
            .map(|(id, _)| id)
            .collect();
        for id in running {
            let Some(entry) = self.core.calls.remove(id) else {
                continue;
            };
            self.cancel_call_timers(id);
            self.tombstone(id);
            if let Some(call) = entry.call {
                self.reply(call, Some(id), Err(error.clone()));
            }
        }
    }

    fn count_reinit(&mut self) {
        if !mutant!(self.core, UnboundedReinit) {
            self.core.reinits += 1;
        }
    }

    fn reset_reinits(&mut self) {
        self.core.reinits = 0;
    }

    fn resend_parked(&mut self) {
        if mutant!(self.core, NoResend) {
            return;
        }
        let parked = self.core.calls.in_phase(Phase::Parked);
        for old in parked {
            let Some(mut entry) = self.core.calls.remove(old) else {
                continue;
            };
            let id = self.core.next_id;
            self.core.next_id += 1;
            entry.frame = protocol::with_new_id(&entry.frame, id, entry.progress);
            entry.resent = true;
            self.reissue(old, id, entry);
        }
    }

    fn fail_calls_lost(&mut self) {
        let cause = self
            .core
            .last_error
            .clone()
            .unwrap_or(Failure::Transport(TransportError::Closed));
        self.fail_all(&CallError::ConnectionLost(cause));
    }

    fn fail_calls_shutdown(&mut self) {
        self.fail_all(&CallError::Shutdown);
    }

    fn tombstone_calls(&mut self) {
        // The listens are calls: they end here too, and nothing is covered any more.
        if self.core.listens != Listens::default() {
            self.core.listens = Listens::default();
            self.push(Action::Listening(ListenStatus::default()));
        }
        for id in self.core.calls.ids() {
            if mutant!(self.core, ForgetRetries)
                && matches!(
                    self.core.calls.get(id).map(|e| e.phase),
                    Some(Phase::Retrying { .. })
                )
            {
                continue;
            }
            self.core.calls.remove(id);
            self.cancel_call_timers(id);
            self.tombstone(id);
        }
    }

    fn reject_call_unavailable(&mut self, p: &CallRequest) {
        let error = self.unavailable();
        self.reply(p.call, None, Err(error));
    }

    fn reject_notify_unavailable(&mut self, p: &NotifyRequest) {
        let error = self.unavailable();
        self.reply(p.call, None, Err(error));
    }

    fn reject_call_shutdown(&mut self, p: &CallRequest) {
        self.reply(p.call, None, Err(CallError::Shutdown));
    }

    fn reject_notify_shutdown(&mut self, p: &NotifyRequest) {
        self.reply(p.call, None, Err(CallError::Shutdown));
    }

    fn send_notification(&mut self, p: NotifyRequest) {
        let frame = protocol::notification(&p.method, p.params, self.modern_version());
        self.send(SendToken::Notify(p.call), frame);
    }

    fn reply_notified(&mut self, w: CallId) {
        self.reply(w, None, Ok(Value::Null.into()));
    }

    fn fail_notify(&mut self, w: CallId) {
        self.reply(w, None, Err(CallError::SendFailed));
    }

    fn reply_stopped(&mut self, p: &CallId) {
        self.push(Action::StopDone {
            call: *p,
            already: false,
        });
    }

    fn reply_already_closing(&mut self, p: &CallId) {
        self.push(Action::StopDone {
            call: *p,
            already: true,
        });
    }

    fn sweep_tombstones(&mut self) {
        let horizon = if mutant!(self.core, SweepTooEarly) {
            Duration::MAX
        } else {
            self.core.now
        };
        self.core.tombstones.sweep(horizon);
        self.arm(TimerKind::TombstoneSweep, self.core.config.tombstone_sweep);
    }

    fn exit(&mut self) {
        self.push(Action::Exit);
    }

    fn await_handshake_authorization(&mut self, p: &Response) {
        self.abandon_init();
        self.core
            .timers
            .cancel(TimerKey::plain(TimerKind::ProbeTimeout));
        if let Some(challenge) = Self::auth_challenge(p) {
            self.authorize(challenge);
        }
    }

    fn await_call_authorization(&mut self, p: &Response, w: RequestId) {
        let Some(entry) = self.core.calls.get_mut(w) else {
            return;
        };
        entry.phase = Phase::AwaitingAuth;
        entry.auth_refused = true;
        // Its request was answered: nothing is owed for it, and its send has nothing to retry.
        self.core
            .timers
            .cancel(TimerKey::keyed(TimerKind::SendRetry, w));
        if let Some(challenge) = Self::auth_challenge(p) {
            self.authorize(challenge);
        }
        if mutant!(self.core, ResendBeforeAuth) {
            self.resend_waiting(Phase::AwaitingAuth);
        }
    }

    fn end_authorization(&mut self) {
        self.core.authorizing = false;
    }

    fn resend_discover(&mut self) {
        let version = self.core.probe_version.clone();
        self.send_discover_at(&version);
    }

    fn resend_authorized(&mut self) {
        if mutant!(self.core, NoResendAfterAuth) {
            return;
        }
        self.resend_waiting(Phase::AwaitingAuth);
    }

    fn fail_awaiting_auth(&mut self, p: &crate::event::AuthFailure) {
        let waiting = self.core.calls.in_phase(Phase::AwaitingAuth);
        for id in waiting {
            let Some(entry) = self.core.calls.remove(id) else {
                continue;
            };
            self.cancel_call_timers(id);
            self.tombstone(id);
            let reason = p.reason.clone();
            self.answer(&entry, id, Err(CallError::Unauthorized { reason }));
        }
    }

    fn note_auth_failure(&mut self, p: &crate::event::AuthFailure) {
        let reason = p.reason.clone();
        self.note(Failure::Unauthorized { reason });
    }

    fn note_auth_refusal(&mut self, p: &Response) {
        let status = Self::auth_challenge(p).map_or(401, |c| c.status);
        let failure = Failure::Unauthorized {
            reason: format!(
                "HTTP {status} again after {} authorizations in a row",
                self.core.authorizations
            ),
        };
        self.note(failure.clone());
        self.push(Action::Report(Report::InitRejected(failure)));
    }

    fn fail_auth_refused(&mut self, p: &Response, w: RequestId) {
        let Some(entry) = self.core.calls.remove(w) else {
            return;
        };
        self.cancel_call_timers(w);
        self.tombstone(w);
        let status = Self::auth_challenge(p).map_or(401, |c| c.status);
        let reason = if entry.auth_refused {
            format!("HTTP {status} again after an authorization")
        } else {
            format!(
                "HTTP {status}, and {} authorizations in a row were spent",
                self.core.authorizations
            )
        };
        self.answer(&entry, w, Err(CallError::Unauthorized { reason }));
    }
}
