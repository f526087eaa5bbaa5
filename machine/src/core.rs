//! The connection's data ([`Core`]) and the handlers of the generated trait, implemented on a
//! short-lived context ([`Ctx`]) that borrows the data, the output queue and the current state.
//! Each guard answers one question about its event's payload (and yields what it found, so no
//! action looks it up again); each action does one named thing. None of them chooses a state.

use std::collections::{BTreeSet, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::backoff::Backoff;
use crate::calls::{Calls, Entry, Phase, Tombstones};
use crate::config::Config;
use crate::event::{
    CallRequest, HandlerReply, Malformed, Notification, NotifyRequest, Oversized, PendingSend,
    Response, ResponseError, ResponseId, ServerInfo, ServerRequest, ServerRequestId, SessionChange,
    later,
};
use crate::failure::{Failure, TransportError};
use crate::generated::{Handlers, State, TimerKind};
use crate::io::{
    Action, CallError, CallId, CallOptions, Generation, Report, RequestId, RpcError, SendToken,
};
use crate::protocol;
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
    pub(crate) init_id: Option<RequestId>,
    /// The bound the running init timeout was armed with (the row chose which).
    pub(crate) init_bound: Duration,
    /// The accepted handshake.
    pub(crate) server: Option<ServerInfo>,
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
            #[cfg(feature = "checker")]
            mutant: None,
        }
    }
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
        outcome: Result<Value, CallError>,
    ) {
        self.push(Action::Reply {
            call,
            request,
            outcome,
        });
    }

    /// Answers the call an entry is for: its caller, or for a request of the client's own (a
    /// session restore) a report when it failed.
    fn answer(&mut self, entry: &Entry, id: RequestId, outcome: Result<Value, CallError>) {
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
    /// call, or (`call: None`) a request of the client's own.
    fn issue(
        &mut self,
        call: Option<CallId>,
        method: &str,
        params: Option<Value>,
        options: CallOptions,
        session: Option<SessionChange>,
    ) {
        let id = self.core.next_id;
        self.core.next_id += 1;
        let timeout = options.timeout.unwrap_or(self.core.config.request_timeout);
        let mut deadline = timeout;
        if let Some(total) = options.max_total_timeout {
            deadline = deadline.min(total);
        }
        let token = options.progress.then_some(id);
        let frame = protocol::request(id, method, params, token);
        self.core.calls.insert(
            id,
            Entry {
                call,
                session,
                frame: frame.clone(),
                phase: Phase::Sending { attempt: 1 },
                started: self.core.now,
                timeout,
                progress: options.progress,
                reset_on_progress: options.reset_timeout_on_progress,
                max_total: options.max_total_timeout,
                resent: false,
            },
        );
        let at = later(self.core.now, deadline);
        self.core
            .timers
            .arm(TimerKey::keyed(TimerKind::RequestTimeout, id), at);
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

    fn response_id(p: &Response) -> Option<RequestId> {
        match p.id {
            ResponseId::Number(n) => Some(n),
            ResponseId::Other(_) => None,
        }
    }
}

impl Handlers for Ctx<'_> {
    fn is_init_accepted(&self, p: &Response) -> Option<ServerInfo> {
        let id = Self::response_id(p)?;
        let result = p.body.as_ref().ok()?;
        (Some(id) == self.core.init_id)
            .then(|| protocol::check_init_result(result).ok())
            .flatten()
    }

    fn is_init_response(&self, p: &Response) -> bool {
        Self::response_id(p).is_some_and(|id| Some(id) == self.core.init_id)
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
        Self::response_id(p).filter(|id| self.core.calls.get(*id).is_some())
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
        if mutant!(self.core, ReuseIds) {
            self.core.next_id = 1;
        }
        let generation = self.core.generation;
        self.push(Action::SpawnTransport { generation });
    }

    // Whether the transport is open is the table's business (the model checker proves credit
    // only goes to the open transport and each generation is closed once): no hidden guard here.
    fn close_transport(&mut self) {
        // What was owed to this transport's server ends with it.
        self.core.outbox.clear();
        let generation = self.core.generation;
        self.push(Action::CloseTransport { generation });
    }

    fn grant_credit(&mut self) {
        let generation = self.core.generation;
        self.push(Action::GrantCredit { generation });
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
            protocol::request(id, "initialize", Some(params), None),
        );
    }

    fn accept_init(&mut self, w: ServerInfo) {
        self.core.server = Some(w);
        self.core.init_id = None;
        self.core.last_error = None;
    }

    fn reject_init(&mut self, p: &Response) {
        let failure = match &p.body {
            Err(ResponseError::Rpc(e)) => Failure::Refused(e.clone()),
            Err(ResponseError::Invalid { reason }) => Failure::BadHandshake {
                reason: format!("invalid error answering initialize: {reason}"),
            },
            Ok(result) => match protocol::check_init_result(result) {
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
        self.reply(p.call, None, Ok(json!({})));
    }

    fn send_initialized(&mut self) {
        self.send(
            SendToken::Initialized,
            protocol::notification("notifications/initialized", None),
        );
    }

    fn reset_backoff(&mut self) {
        self.core.backoff.reset();
    }

    fn schedule_backoff(&mut self) {
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
            code: -32000,
            message: format!(
                "client busy: {cap} server requests are already being handled; try again later"
            ),
            data: None,
        };
        self.owe(protocol::response(&p.id, Err(&err)));
    }

    fn reject_server_request(&mut self, p: &ServerRequest) {
        let err = RpcError {
            code: -32601,
            message: format!("method not found: {}", p.method),
            data: None,
        };
        self.owe(protocol::response(&p.id, Err(&err)));
    }

    fn reject_early_server_request(&mut self, p: &ServerRequest) {
        let err = RpcError {
            code: -32601,
            message: format!("method not found: {} (client not initialized)", p.method),
            data: None,
        };
        self.owe(protocol::response(&p.id, Err(&err)));
    }

    fn reject_duplicate_server_request(&mut self, p: &ServerRequest) {
        let err = RpcError {
            code: -32600,
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
            code: -32602,
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
        let parked: Vec<RequestId> = self
            .core
            .calls
            .iter()
            .filter(|(_, e)| e.phase == Phase::Parked)
            .map(|(id, _)| id)
            .collect();
        for old in parked {
            let Some(mut entry) = self.core.calls.remove(old) else {
                continue;
            };
            let id = self.core.next_id;
            self.core.next_id += 1;
            entry.frame = protocol::with_new_id(&entry.frame, id, entry.progress);
            entry.phase = Phase::Sending { attempt: 1 };
            entry.resent = true;
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
        let frame = protocol::notification(&p.method, p.params);
        self.send(SendToken::Notify(p.call), frame);
    }

    fn reply_notified(&mut self, w: CallId) {
        self.reply(w, None, Ok(Value::Null));
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
}
