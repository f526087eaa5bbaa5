//! The connection's data and the handlers of the generated trait: each guard answers one
//! question about the event, each action does one named thing. None of them chooses a state.

use std::collections::{BTreeSet, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::backoff::Backoff;
use crate::calls::{Calls, Entry, Phase, Tombstones};
use crate::classify::ResponseId;
use crate::config::Config;
use crate::generated::{Handlers, State, TimerKind};
use crate::io::{
    Action, CallError, CallId, CallOptions, Generation, Notification, Report, RequestId, RpcError,
    SendToken, ServerInfo,
};
use crate::machine::Mutant;
use crate::protocol;
use crate::rng::Rng;
use crate::timers::{TimerKey, Timers};

/// An event with its payload, after classification.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Event {
    /// Construction (the initial actions run with it).
    Start,
    TransportUp,
    TransportDown {
        reason: String,
    },
    Response {
        id: ResponseId,
        body: Result<Value, RpcError>,
    },
    ServerRequest {
        id: Value,
        method: String,
        params: Option<Value>,
    },
    ServerNotification {
        method: String,
        params: Option<Value>,
    },
    Malformed {
        reason: String,
    },
    Oversized {
        size: usize,
    },
    Stale,
    SendOutcome {
        token: SendToken,
    },
    HandlerReply {
        id: Value,
        result: Result<Value, RpcError>,
    },
    Call {
        call: CallId,
        method: String,
        params: Option<Value>,
        options: CallOptions,
    },
    Notify {
        call: CallId,
        method: String,
        params: Option<Value>,
    },
    Cancel {
        call: CallId,
    },
    Stop {
        call: CallId,
    },
    Timer(TimerKey),
}

/// The connection's data. Everything here is `Hash + Eq` so the model checker can store it;
/// server values (`ServerInfo`) are kept as their JSON text for that reason.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Core {
    pub(crate) config: Arc<Config>,
    pub(crate) rng: Rng,
    pub(crate) now: Duration,
    /// The state the dispatch runs in (set by the machine before each dispatch).
    pub(crate) state: State,
    pub(crate) generation: Generation,
    pub(crate) next_id: RequestId,
    pub(crate) init_id: Option<RequestId>,
    /// The accepted `initialize` result, as JSON text.
    pub(crate) server: Option<String>,
    pub(crate) last_error: Option<String>,
    pub(crate) calls: Calls,
    pub(crate) tombstones: Tombstones,
    /// Server requests handed to the handler, by their id's JSON text.
    pub(crate) server_requests: BTreeSet<String>,
    pub(crate) backoff: Backoff,
    pub(crate) timers: Timers,
    pub(crate) mutant: Option<Mutant>,
    #[allow(clippy::struct_field_names)]
    pub(crate) out: OutQueue,
}

/// The queue of actions not yet drained. Compared and hashed as always equal: the model
/// checker only stores machines whose queue was drained.
#[derive(Clone, Debug, Default)]
pub(crate) struct OutQueue(pub(crate) VecDeque<Action>);

impl PartialEq for OutQueue {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}
impl Eq for OutQueue {}
impl std::hash::Hash for OutQueue {
    fn hash<H: std::hash::Hasher>(&self, _: &mut H) {}
}

impl Core {
    pub(crate) fn new(config: Arc<Config>, seed: u64, now: Duration) -> Self {
        Core {
            config,
            rng: Rng::new(seed),
            now,
            state: State::INITIAL,
            generation: 0,
            next_id: 1,
            init_id: None,
            server: None,
            last_error: None,
            calls: Calls::default(),
            tombstones: Tombstones::default(),
            server_requests: BTreeSet::new(),
            backoff: Backoff::default(),
            timers: Timers::default(),
            mutant: None,
            out: OutQueue::default(),
        }
    }

    fn push(&mut self, action: Action) {
        self.out.0.push_back(action);
    }

    fn send(&mut self, token: SendToken, frame: Vec<u8>) {
        let generation = self.generation;
        self.push(Action::Send {
            generation,
            token,
            frame,
        });
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

    fn mutant(&self, m: Mutant) -> bool {
        self.mutant == Some(m)
    }

    fn tombstone(&mut self, id: RequestId) {
        let expires = self.now + self.config.tombstone_ttl;
        self.tombstones.insert(id, expires);
    }

    fn cancel_call_timers(&mut self, id: RequestId) {
        self.timers
            .cancel(TimerKey::keyed(TimerKind::SendRetry, id));
        if !self.mutant(Mutant::KeepTimerAfterReply) {
            self.timers
                .cancel(TimerKey::keyed(TimerKind::RequestTimeout, id));
        }
    }

    /// Ends a call that will get no server answer: forget it, cancel its timers, send
    /// `notifications/cancelled` if the server may have seen it, tombstone the id.
    fn end_call(&mut self, id: RequestId, reason: &str) -> Option<Entry> {
        let entry = self.calls.remove(id)?;
        self.cancel_call_timers(id);
        if entry.phase == Phase::Sent || self.mutant(Mutant::CancelUnsent) {
            self.send(SendToken::Other, protocol::cancelled(id, reason));
        }
        if !self.mutant(Mutant::NoTombstoneOnEnd) {
            self.tombstone(id);
        }
        Some(entry)
    }

    fn arm(&mut self, kind: TimerKind, after: Duration) {
        let at = self.now + after;
        self.timers.arm(TimerKey::plain(kind), at);
    }

    fn response_id(ev: &Event) -> Option<RequestId> {
        if let Event::Response {
            id: ResponseId::Number(n),
            ..
        } = ev
        {
            Some(*n)
        } else {
            None
        }
    }

    fn send_token_id(ev: &Event) -> Option<RequestId> {
        if let Event::SendOutcome {
            token: SendToken::Request(id),
        } = ev
        {
            Some(*id)
        } else {
            None
        }
    }

    fn pending_send(&self, ev: &Event) -> Option<(RequestId, u8)> {
        let id = Self::send_token_id(ev)?;
        let Phase::Sending { attempt } = self.calls.get(id)?.phase else {
            return None;
        };
        Some((id, attempt))
    }

    /// The live call an event names: a cancel by caller, or a keyed timer by id.
    fn named_call(&self, ev: &Event) -> Option<RequestId> {
        if let Event::Cancel { call } = ev {
            return self.calls.id_of(*call);
        }
        let Event::Timer(TimerKey { id: Some(id), .. }) = ev else {
            return None;
        };
        self.calls.get(*id).map(|_| *id)
    }

    fn retry_in(&self) -> Option<Duration> {
        self.timers
            .deadline(TimerKey::plain(TimerKind::Reconnect))
            .map(|at| at.saturating_sub(self.now))
    }

    fn fail_all(&mut self, error: &CallError) {
        let targets: Vec<(RequestId, CallId)> = self
            .calls
            .iter()
            .filter(|(_, e)| {
                !(self.mutant(Mutant::ForgetRetries) && matches!(e.phase, Phase::Retrying { .. }))
            })
            .map(|(id, e)| (id, e.call))
            .collect();
        for (id, call) in targets {
            self.reply(call, Some(id), Err(error.clone()));
        }
    }

    /// The call a progress notification is for, if it is live and asked for progress.
    fn progress_call(&self, ev: &Event) -> Option<RequestId> {
        let id = notification_param(ev, "notifications/progress", "progressToken")?.as_u64()?;
        self.calls.get(id).filter(|e| e.progress).map(|_| id)
    }

    /// The accepted handshake, parsed back from its JSON text.
    pub(crate) fn server_info(&self) -> Option<ServerInfo> {
        let v: Value = serde_json::from_str(self.server.as_deref()?).ok()?;
        protocol::check_init_result(&v).ok()
    }
}

/// The params of a server notification with this method.
fn notification_params<'a>(ev: &'a Event, method: &str) -> Option<&'a Value> {
    let Event::ServerNotification { method: m, params } = ev else {
        return None;
    };
    params.as_ref().filter(|_| m == method)
}

/// One param of a server notification with this method.
fn notification_param<'a>(ev: &'a Event, method: &str, key: &str) -> Option<&'a Value> {
    notification_params(ev, method)?.get(key)
}

/// Why an event ends a connection or a handshake, in words, when the event says.
fn failure_reason(ev: &Event) -> Option<String> {
    if let Event::TransportDown { reason } = ev {
        return Some(reason.clone());
    }
    if let Event::Oversized { size } = ev {
        return Some(format!("the server sent an oversized frame ({size} bytes)"));
    }
    matches!(ev, Event::Timer(_)).then(|| "timed out".to_owned())
}

fn id_key(id: &Value) -> String {
    id.to_string()
}

impl Handlers for Core {
    type Event = Event;

    fn is_init_accepted(&self, ev: &Event) -> bool {
        matches!(ev, Event::Response { id: ResponseId::Number(n), body: Ok(result) }
            if Some(*n) == self.init_id && protocol::check_init_result(result).is_ok())
    }

    fn is_init_response(&self, ev: &Event) -> bool {
        Self::response_id(ev).is_some_and(|id| Some(id) == self.init_id)
    }

    fn is_ping(&self, ev: &Event) -> bool {
        matches!(ev, Event::ServerRequest { method, .. } if method == "ping")
    }

    fn has_handler(&self, ev: &Event) -> bool {
        matches!(ev, Event::ServerRequest { method, .. } if self.config.capabilities.handles(method))
    }

    fn is_live_response(&self, ev: &Event) -> bool {
        Self::response_id(ev).is_some_and(|id| self.calls.get(id).is_some())
    }

    fn is_tombstoned(&self, ev: &Event) -> bool {
        Self::response_id(ev).is_some_and(|id| self.tombstones.contains(id, self.now))
    }

    fn is_progress(&self, ev: &Event) -> bool {
        self.progress_call(ev).is_some()
    }

    fn is_server_cancel(&self, ev: &Event) -> bool {
        notification_param(ev, "notifications/cancelled", "requestId")
            .is_some_and(|id| self.server_requests.contains(&id_key(id)))
    }

    fn is_pending_send(&self, ev: &Event) -> bool {
        self.pending_send(ev).is_some()
    }

    fn can_retry_send(&self, ev: &Event) -> bool {
        self.pending_send(ev)
            .is_some_and(|(_, attempt)| attempt < self.config.send_attempts)
    }

    fn is_init_send(&self, ev: &Event) -> bool {
        Self::send_token_id(ev).is_some_and(|id| Some(id) == self.init_id)
    }

    fn is_live_server_request(&self, ev: &Event) -> bool {
        matches!(ev, Event::HandlerReply { id, .. } if self.server_requests.contains(&id_key(id)))
    }

    fn is_live_call(&self, ev: &Event) -> bool {
        self.named_call(ev).is_some()
    }

    fn is_retrying(&self, ev: &Event) -> bool {
        matches!(ev, Event::Timer(TimerKey { kind: TimerKind::SendRetry, id: Some(id) })
            if matches!(self.calls.get(*id).map(|e| e.phase), Some(Phase::Retrying { .. })))
    }

    fn spawn_transport(&mut self, _: &Event) {
        self.generation += 1;
        if self.mutant(Mutant::ReuseIds) {
            self.next_id = 1;
        }
        let generation = self.generation;
        self.push(Action::SpawnTransport { generation });
    }

    // Whether the transport is open is the table's business (the model checker proves credit
    // only goes to the open transport and each generation is closed once): no hidden guard here.
    fn close_transport(&mut self, _: &Event) {
        let generation = self.generation;
        self.push(Action::CloseTransport { generation });
    }

    fn grant_credit(&mut self, _: &Event) {
        let generation = self.generation;
        self.push(Action::GrantCredit { generation });
    }

    fn arm_init_timeout(&mut self, _: &Event) {
        self.arm(TimerKind::InitTimeout, self.config.init_timeout);
    }

    fn arm_tombstone_sweep(&mut self, _: &Event) {
        self.arm(TimerKind::TombstoneSweep, self.config.tombstone_sweep);
    }

    fn arm_closing_exit(&mut self, _: &Event) {
        self.arm(TimerKind::ClosingExit, self.config.closing_exit);
    }

    fn send_initialize(&mut self, _: &Event) {
        let id = self.next_id;
        self.next_id += 1;
        self.init_id = Some(id);
        let params = protocol::initialize_params(&self.config);
        self.send(
            SendToken::Request(id),
            protocol::request(id, "initialize", Some(&params), None),
        );
    }

    fn accept_init(&mut self, ev: &Event) {
        if let Event::Response {
            body: Ok(result), ..
        } = ev
        {
            self.server = Some(result.to_string());
        }
        self.init_id = None;
        self.last_error = None;
    }

    fn reject_init(&mut self, ev: &Event) {
        // Rows run this on the answer to initialize, or on its failed send.
        let reason = if let Event::Response { body, .. } = ev {
            match body {
                Err(e) => format!("server refused initialize: {} ({})", e.message, e.code),
                Ok(result) => protocol::check_init_result(result)
                    .err()
                    .unwrap_or_else(|| "initialize result rejected".into()),
            }
        } else {
            "could not send initialize".into()
        };
        self.last_error = Some(reason.clone());
        self.push(Action::Report(Report::InitRejected { reason }));
    }

    fn abandon_init(&mut self, _: &Event) {
        if let Some(id) = self.init_id.take() {
            self.tombstone(id);
        }
    }

    fn note_failure(&mut self, ev: &Event) {
        if let Some(why) = failure_reason(ev) {
            let during = if self.state == State::Ready {
                "connection lost"
            } else {
                "connection failed"
            };
            self.last_error = Some(format!("{during}: {why}"));
        }
    }

    fn send_initialized(&mut self, _: &Event) {
        self.send(
            SendToken::Other,
            protocol::notification("notifications/initialized", None),
        );
    }

    fn reset_backoff(&mut self, _: &Event) {
        self.backoff.reset();
    }

    fn schedule_backoff(&mut self, _: &Event) {
        let c = &self.config;
        let (min, max, pct) = (c.backoff_min, c.backoff_max, c.backoff_jitter_pct);
        let delay = self.backoff.next(min, max, pct, &mut self.rng);
        self.arm(TimerKind::Reconnect, delay);
    }

    fn answer_ping(&mut self, ev: &Event) {
        if let Event::ServerRequest { id, .. } = ev {
            self.send(SendToken::Other, protocol::response(id, &Ok(json!({}))));
        }
    }

    fn reject_server_request(&mut self, ev: &Event) {
        if let Event::ServerRequest { id, method, .. } = ev {
            let message = if self.state == State::Ready {
                format!("method not found: {method}")
            } else {
                format!("method not found: {method} (client not initialized)")
            };
            let err = RpcError {
                code: -32601,
                message,
                data: None,
            };
            self.send(SendToken::Other, protocol::response(id, &Err(err)));
        }
    }

    fn dispatch_server_request(&mut self, ev: &Event) {
        if let Event::ServerRequest { id, method, params } = ev {
            self.server_requests.insert(id_key(id));
            let generation = self.generation;
            self.push(Action::ServerRequest {
                generation,
                id: id.clone(),
                method: method.clone(),
                params: params.clone(),
            });
        }
    }

    fn send_handler_reply(&mut self, ev: &Event) {
        if let Event::HandlerReply { id, result } = ev {
            self.server_requests.remove(&id_key(id));
            self.send(SendToken::Other, protocol::response(id, result));
        }
    }

    fn abort_server_request(&mut self, ev: &Event) {
        if let Some(id) = notification_param(ev, "notifications/cancelled", "requestId") {
            self.server_requests.remove(&id_key(id));
            let generation = self.generation;
            self.push(Action::AbortServerRequest {
                generation,
                id: id.clone(),
            });
        }
    }

    fn abort_server_requests(&mut self, _: &Event) {
        self.server_requests.clear();
        let generation = self.generation;
        self.push(Action::AbortServerRequests { generation });
    }

    fn deliver_notification(&mut self, ev: &Event) {
        if let Event::ServerNotification { method, params } = ev {
            self.push(Action::Notification(Notification {
                method: method.clone(),
                params: params.clone(),
            }));
        }
    }

    fn deliver_progress(&mut self, ev: &Event) {
        let Some(params) = notification_params(ev, "notifications/progress") else {
            return;
        };
        let Some(id) = self.progress_call(ev) else {
            return;
        };
        let Some(entry) = self.calls.get(id) else {
            return;
        };
        let call = entry.call;
        if entry.reset_on_progress {
            let mut at = self.now + entry.timeout;
            if let Some(total) = entry.max_total {
                at = at.min(entry.started + total);
            }
            self.timers
                .arm(TimerKey::keyed(TimerKind::RequestTimeout, id), at);
        }
        self.push(Action::Progress {
            call,
            params: params.clone(),
        });
    }

    fn report_malformed(&mut self, ev: &Event) {
        if let Event::Malformed { reason } = ev {
            self.push(Action::Report(Report::Malformed {
                reason: reason.clone(),
            }));
        }
    }

    fn report_oversized(&mut self, ev: &Event) {
        if let Event::Oversized { size } = ev {
            let max = self.config.max_frame_bytes;
            self.push(Action::Report(Report::Oversized { size: *size, max }));
        }
    }

    fn drop_late_response(&mut self, ev: &Event) {
        if let Some(id) = Self::response_id(ev) {
            self.push(Action::Report(Report::LateResponse { id }));
        }
    }

    fn drop_unknown_response(&mut self, ev: &Event) {
        let Event::Response { id, .. } = ev else {
            return;
        };
        let id = match id {
            ResponseId::Number(n) => n.to_string(),
            ResponseId::Other(s) => s.clone(),
        };
        self.push(Action::Report(Report::UnknownResponse { id }));
    }

    fn start_call(&mut self, ev: &Event) {
        let Event::Call {
            call,
            method,
            params,
            options,
        } = ev
        else {
            return;
        };
        let id = self.next_id;
        self.next_id += 1;
        let timeout = options.timeout.unwrap_or(self.config.request_timeout);
        let mut deadline = timeout;
        if let Some(total) = options.max_total_timeout {
            deadline = deadline.min(total);
        }
        let token = options.progress.then_some(id);
        let frame = protocol::request(id, method, params.as_ref(), token);
        self.calls.insert(
            id,
            Entry {
                call: *call,
                frame: frame.clone(),
                phase: Phase::Sending { attempt: 1 },
                started: self.now,
                timeout,
                progress: options.progress,
                reset_on_progress: options.reset_timeout_on_progress,
                max_total: options.max_total_timeout,
            },
        );
        let at = self.now + deadline;
        self.timers
            .arm(TimerKey::keyed(TimerKind::RequestTimeout, id), at);
        self.send(SendToken::Request(id), frame);
    }

    fn complete_call(&mut self, ev: &Event) {
        let Event::Response { body, .. } = ev else {
            return;
        };
        let Some(id) = Self::response_id(ev) else {
            return;
        };
        let Some(entry) = (if self.mutant(Mutant::ReplyKeepsEntry) {
            self.calls.get(id).cloned()
        } else {
            self.calls.remove(id)
        }) else {
            return;
        };
        self.cancel_call_timers(id);
        let outcome = body.clone().map_err(CallError::Server);
        self.reply(entry.call, Some(id), outcome);
    }

    fn mark_sent(&mut self, ev: &Event) {
        if let Some((id, _)) = self.pending_send(ev)
            && let Some(e) = self.calls.get_mut(id)
        {
            e.phase = Phase::Sent;
        }
    }

    fn schedule_send_retry(&mut self, ev: &Event) {
        let Some((id, attempt)) = self.pending_send(ev) else {
            return;
        };
        if let Some(e) = self.calls.get_mut(id) {
            e.phase = Phase::Retrying { attempt };
        }
        let delay = self
            .rng
            .jitter(self.config.retry_delay, self.config.retry_jitter_pct);
        let at = self.now + delay;
        self.timers
            .arm(TimerKey::keyed(TimerKind::SendRetry, id), at);
        self.push(Action::Report(Report::SendRetry { id, attempt }));
    }

    fn retry_send(&mut self, ev: &Event) {
        let Event::Timer(TimerKey { id: Some(id), .. }) = ev else {
            return;
        };
        let Some(e) = self.calls.get_mut(*id) else {
            return;
        };
        let Phase::Retrying { attempt } = e.phase else {
            return;
        };
        e.phase = Phase::Sending {
            attempt: attempt + 1,
        };
        let frame = e.frame.clone();
        self.send(SendToken::Request(*id), frame);
    }

    fn fail_backpressure(&mut self, ev: &Event) {
        let Some((id, attempts)) = self.pending_send(ev) else {
            return;
        };
        if let Some(entry) = self.end_call(id, "backpressure") {
            self.reply(
                entry.call,
                Some(id),
                Err(CallError::Backpressure { attempts }),
            );
        }
    }

    fn fail_send_error(&mut self, ev: &Event) {
        let Some((id, _)) = self.pending_send(ev) else {
            return;
        };
        if let Some(entry) = self.end_call(id, "send failed") {
            let reason = "the transport refused the request frame".to_string();
            self.reply(entry.call, Some(id), Err(CallError::Transport { reason }));
        }
    }

    fn time_out_call(&mut self, ev: &Event) {
        let Some(id) = self.named_call(ev) else {
            return;
        };
        if let Some(entry) = self.end_call(id, "timeout") {
            let after = self.now.saturating_sub(entry.started);
            self.reply(entry.call, Some(id), Err(CallError::Timeout { after }));
        }
    }

    fn cancel_call(&mut self, ev: &Event) {
        let Some(id) = self.named_call(ev) else {
            return;
        };
        if let Some(entry) = self.end_call(id, "cancelled by the client") {
            self.reply(entry.call, Some(id), Err(CallError::Cancelled));
        }
    }

    fn fail_calls_lost(&mut self, ev: &Event) {
        let reason = failure_reason(ev).map_or_else(
            || "connection lost".into(),
            |why| format!("connection lost: {why}"),
        );
        self.fail_all(&CallError::Transport { reason });
    }

    fn fail_calls_shutdown(&mut self, _: &Event) {
        self.fail_all(&CallError::Shutdown);
    }

    fn tombstone_calls(&mut self, _: &Event) {
        for id in self.calls.ids() {
            if self.mutant(Mutant::ForgetRetries)
                && matches!(
                    self.calls.get(id).map(|e| e.phase),
                    Some(Phase::Retrying { .. })
                )
            {
                continue;
            }
            self.calls.remove(id);
            self.cancel_call_timers(id);
            self.tombstone(id);
        }
    }

    fn reject_unavailable(&mut self, ev: &Event) {
        let (Event::Call { call, .. } | Event::Notify { call, .. }) = ev else {
            return;
        };
        let error = CallError::Unavailable {
            state: self.state,
            retry_in: self.retry_in(),
            last_error: self.last_error.clone(),
        };
        self.reply(*call, None, Err(error));
    }

    fn reject_shutdown(&mut self, ev: &Event) {
        let (Event::Call { call, .. } | Event::Notify { call, .. }) = ev else {
            return;
        };
        self.reply(*call, None, Err(CallError::Shutdown));
    }

    fn send_notification(&mut self, ev: &Event) {
        let Event::Notify {
            call,
            method,
            params,
        } = ev
        else {
            return;
        };
        self.send(
            SendToken::Other,
            protocol::notification(method, params.as_ref()),
        );
        self.reply(*call, None, Ok(Value::Null));
    }

    fn reply_stopped(&mut self, ev: &Event) {
        if let Event::Stop { call } = ev {
            self.push(Action::StopDone {
                call: *call,
                already: false,
            });
        }
    }

    fn reply_already_closing(&mut self, ev: &Event) {
        if let Event::Stop { call } = ev {
            self.push(Action::StopDone {
                call: *call,
                already: true,
            });
        }
    }

    fn sweep_tombstones(&mut self, _: &Event) {
        let horizon = if self.mutant(Mutant::SweepTooEarly) {
            Duration::MAX
        } else {
            self.now
        };
        self.tombstones.sweep(horizon);
        self.arm(TimerKind::TombstoneSweep, self.config.tombstone_sweep);
    }

    fn exit(&mut self, _: &Event) {
        self.push(Action::Exit);
    }
}
