//! One host's session: the IO around the front's table ([`mcp_machine::front::FrontCore`]).
//!
//! The session is one task. It turns what happens (a line from the host, a call ending, the
//! upstream connecting, asking the host something or giving up on it, a deadline, a signal)
//! into the table's events, and carries out what the table asks: frames to the host, calls to
//! start or drop, the upstream's requests answered, the upstream connected or stopped. It
//! decides nothing itself: which request is answered and how, what waits for the host and
//! until when, and that nothing is written once the host is gone are the table's rows
//! (`spec/front.toml`), model-checked.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use mcp_machine::front::table::{ActionId, ROWS};
use mcp_machine::front::wire::HostMessage;
use mcp_machine::front::{
    CallAnswer, Event, Fired, FrontConfig, FrontCore, FrontOutput, HostNotification, HostRequest,
    HostResponse, Invalid, State, UpstreamFailed, UpstreamNotification, UpstreamReady,
};
use mcp_runtime::{ClientBuilder, Error, RequestOptions, Root, RpcError, codes};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::AbortHandle;
use tokio::time::Instant;

use crate::forward;
use crate::group::GroupForwarding;
use crate::handler::{ForwardingHandler, ServerRequest};
use crate::report::{BridgeReport, Ended};
use crate::upstream::{self, Up};
use crate::{BridgeOptions, MakeUpstream, Upstream};

/// What reaches the session from the host's link.
#[derive(Debug)]
pub(crate) enum HostInput {
    /// One message.
    Message(HostMessage),
    /// A line longer than the frame bound (skipped; answered with an error under no id).
    Oversized {
        /// Bytes seen before giving up on it.
        seen: usize,
    },
    /// The host closed its side (or reading it failed).
    Closed,
}

/// What reaches the session from its own tasks.
pub(crate) enum Inner {
    /// The upstream connected, or could not (why, in words).
    Connected(Box<Result<Up, String>>),
    /// A call ended: its answer, written if the call is still in flight.
    Answered(CallAnswer),
    /// The upstream asks the host something.
    ServerRequest(ServerRequest),
    /// A server request ended without the host's answer (cancelled, lost).
    ServerRequestEnded {
        /// Its id on the host's side.
        id: u64,
    },
    /// A notification for the host.
    Notification(UpstreamNotification),
    /// Writing to the host failed: it is gone.
    HostWriteFailed,
}

/// The session's IO state around the core.
pub(crate) struct Session {
    options: BridgeOptions,
    make: Option<MakeUpstream>,
    core: FrontCore,
    epoch: Instant,
    client: Option<Up>,
    /// Upstreams that connected after the session closed, being stopped.
    late: Vec<Up>,
    /// The tasks running the host's calls, by key, and the progress token each reports under.
    calls: HashMap<String, (AbortHandle, upstream::Token)>,
    /// Where each upstream request's answer goes, by its id on the host's side.
    replies: HashMap<u64, oneshot::Sender<Result<serde_json::Value, RpcError>>>,
    out: mpsc::Sender<Vec<u8>>,
    inner_tx: mpsc::UnboundedSender<Inner>,
    roots: Option<watch::Sender<Vec<Root>>>,
    background: Vec<AbortHandle>,
    told: forward::Told,
    host_gone: bool,
    report: BridgeReport,
}

impl Session {
    pub(crate) fn new(
        options: BridgeOptions,
        make: MakeUpstream,
        out: mpsc::Sender<Vec<u8>>,
        inner_tx: mpsc::UnboundedSender<Inner>,
    ) -> Self {
        let core = FrontCore::new(FrontConfig {
            max_calls: options.max_in_flight,
            host_answer_timeout: options.server_request_timeout,
        });
        Session {
            options,
            make: Some(make),
            core,
            epoch: Instant::now(),
            client: None,
            late: Vec::new(),
            calls: HashMap::new(),
            replies: HashMap::new(),
            out,
            inner_tx,
            roots: None,
            background: Vec::new(),
            told: forward::Told::default(),
            host_gone: false,
            report: BridgeReport::default(),
        }
    }

    fn now(&self) -> Duration {
        Instant::now().saturating_duration_since(self.epoch)
    }

    /// Runs until the table closes the session (the host gone, or `shutdown`); then stops the
    /// upstream (its child processes reaped within the options' bound) and says what happened.
    pub(crate) async fn run(
        mut self,
        mut host: mpsc::Receiver<HostInput>,
        mut inner: mpsc::UnboundedReceiver<Inner>,
        shutdown: impl std::future::Future<Output = ()>,
    ) -> BridgeReport {
        tokio::pin!(shutdown);
        let mut ended = Ended::HostClosed;
        while self.core.state() != State::Closed {
            let deadline = self.core.next_deadline().map(|d| self.epoch + d);
            tokio::select! {
                biased;
                () = &mut shutdown => {
                    ended = Ended::Shutdown;
                    self.feed(Event::Shutdown).await;
                }
                Some(event) = inner.recv() => self.on_inner(event).await,
                () = sleep_until(deadline) => {
                    let now = self.now();
                    for id in self.core.due(now) {
                        self.feed(Event::HostAnswerDue(id)).await;
                    }
                    for key in self.core.due_rounds(now) {
                        self.feed(Event::RoundDue(key)).await;
                    }
                }
                input = host.recv() => {
                    let event = match input {
                        Some(HostInput::Message(m)) => self.host_event(m),
                        Some(HostInput::Oversized { seen }) => {
                            self.report.invalid += 1;
                            Event::HostInvalid(Invalid {
                            id: serde_json::Value::Null,
                            error: RpcError {
                                code: codes::INVALID_REQUEST,
                                message: format!(
                                    "message too large: more than {} bytes (read {seen})",
                                    self.options.max_frame_bytes
                                ),
                                data: None,
                            },
                        })
                        }
                        Some(HostInput::Closed) | None => Event::HostGone,
                    };
                    self.feed(event).await;
                }
            }
            if self.host_gone && self.core.state() != State::Closed {
                self.feed(Event::HostGone).await;
            }
        }
        self.finish(ended).await
    }

    /// The table's event for a message from the host (counted for the report).
    fn host_event(&mut self, message: HostMessage) -> Event {
        match message {
            HostMessage::Request { id, method, params } => {
                self.report.requests += 1;
                Event::HostRequest(HostRequest::new(id, method, params))
            }
            HostMessage::Notification { method, params } => {
                Event::HostNotification(HostNotification { method, params })
            }
            HostMessage::Response { id, outcome } => {
                Event::HostResponse(HostResponse { id, outcome })
            }
            HostMessage::Invalid { id, error } => {
                self.report.invalid += 1;
                Event::HostInvalid(Invalid { id, error })
            }
        }
    }

    async fn on_inner(&mut self, event: Inner) {
        match event {
            Inner::Connected(result) => match *result {
                Ok(up) => {
                    let version = self
                        .report
                        .host
                        .as_ref()
                        .map(|h| h.protocol_version.clone())
                        .unwrap_or_default();
                    let result = up.initialize_result(&version);
                    let discover = up.discover_result();
                    if self.core.state() == State::Connecting {
                        let task = match &up {
                            Up::One(client) => forward::list_changes(
                                client,
                                self.inner_tx.clone(),
                                self.told.clone(),
                            ),
                            Up::Group(group) => crate::group::forward(group, self.inner_tx.clone()),
                        };
                        self.background.push(task);
                        self.client = Some(up);
                    } else {
                        self.late.push(up);
                    }
                    self.feed(Event::UpstreamReady(UpstreamReady { result, discover }))
                        .await;
                }
                Err(reason) => {
                    self.feed(Event::UpstreamFailed(UpstreamFailed { reason }))
                        .await;
                }
            },
            Inner::Answered(answer) => self.feed(Event::CallAnswered(answer)).await,
            Inner::ServerRequest(request) => {
                self.report.server_requests += 1;
                self.replies.insert(request.id, request.reply);
                let event = Event::ServerRequest(mcp_machine::front::ServerRequest {
                    id: request.id,
                    method: request.method,
                    params: request.params,
                });
                self.feed(event).await;
            }
            Inner::ServerRequestEnded { id } => {
                self.feed(Event::ServerRequestEnded(id)).await;
            }
            Inner::Notification(note) => self.feed(Event::UpstreamNotification(note)).await,
            Inner::HostWriteFailed => self.host_gone = true,
        }
    }

    /// Runs one event through the table and carries out what it asks.
    async fn feed(&mut self, event: Event) {
        let now = self.now();
        let fired = self.core.handle(now, event);
        tracing::trace!(target: "mcp::bridge", row = fired.row, to = ?fired.to, "front");
        self.count(fired);
        while let Some(output) = self.core.poll_output() {
            self.carry_out(output).await;
        }
    }

    /// Counts what the fired row did, for the report.
    fn count(&mut self, fired: Fired) {
        let Some(row) = ROWS.get(usize::from(fired.row)) else {
            return;
        };
        for action in row.actions {
            match action {
                ActionId::WriteAnswer => self.report.answered += 1,
                ActionId::CancelCall => self.report.cancelled += 1,
                ActionId::CancelAtHost | ActionId::ExpireServerRequest => {
                    self.report.server_requests_ended += 1;
                }
                _ => {}
            }
        }
    }

    async fn carry_out(&mut self, output: FrontOutput) {
        match output {
            FrontOutput::Write(frame) => self.write(frame).await,
            FrontOutput::Connect(init) => self.connect(init),
            FrontOutput::StartCall(request) => self.start_call(request),
            FrontOutput::CallResumed(key, request) => {
                if let Some((_, token)) = self.calls.get(&key) {
                    let (_, new) = upstream::take_progress_token(request.params);
                    token.set(new);
                }
            }
            FrontOutput::AbortCall(key) => {
                if let Some((task, _)) = self.calls.remove(&key) {
                    // Dropping the call's future sends the upstream its cancellation.
                    task.abort();
                }
            }
            FrontOutput::ReplyServerRequest(HostResponse { id, outcome }) => {
                let slot = id.as_u64().and_then(|id| self.replies.remove(&id));
                if let Some(reply) = slot {
                    let _ = reply.send(outcome);
                }
            }
            FrontOutput::Notify(HostNotification { method, params }) => {
                if let Some(up) = self.client.clone() {
                    tokio::spawn(async move {
                        up.notify(&method, params).await;
                    });
                }
            }
            FrontOutput::Subscribe(uris) => {
                if let Some(up) = self.client.clone() {
                    tokio::spawn(async move {
                        for uri in uris {
                            up.subscribe(&uri).await;
                        }
                    });
                }
            }
            FrontOutput::RootsChanged => {
                if let Some(roots) = &self.roots {
                    roots.send_modify(|_| {});
                }
            }
            FrontOutput::StopUpstream => {
                for task in self.background.drain(..) {
                    task.abort();
                }
            }
            _ => {}
        }
    }

    /// Writes a frame to the host (waiting for room: a host that does not read slows the
    /// bridge down, nothing grows); a failed write means the host is gone.
    async fn write(&mut self, frame: Vec<u8>) {
        if !self.host_gone && self.out.send(frame).await.is_err() {
            self.host_gone = true;
        }
    }

    /// The host's `initialize`: the upstream made for what it declared, connecting.
    fn connect(&mut self, init: HostRequest) {
        let Some(make) = self.make.take() else {
            // A second `initialize` after a failed one: the upstream was spent on the first.
            let reason = "the upstream could not be reached before; restart the bridge".to_owned();
            let _ = self.inner_tx.send(Inner::Connected(Box::new(Err(reason))));
            return;
        };
        let host = if mcp_machine::front::is_modern(&init) {
            upstream::modern_host_info(init.params.as_ref())
        } else {
            upstream::host_info(&init.params.unwrap_or_default())
        };
        let (roots_tx, roots_rx) = watch::channel(Vec::new());
        let roots_changes = host.roots_list_changed.then_some(roots_rx);
        if roots_changes.is_some() {
            self.roots = Some(roots_tx);
        }
        let handler = ForwardingHandler::new(
            host.capabilities.clone(),
            self.inner_tx.clone(),
            roots_changes.clone(),
        );
        let events = self.inner_tx.clone();
        let hint = self.options.login_hint.clone();
        let wait = self.options.wait_for_ready;
        match make(&host) {
            Upstream::Client(builder) => {
                let builder: ClientBuilder = builder.handler(handler).wait_for_ready(wait);
                self.told = forward::Told::default();
                let task =
                    forward::notifications(&builder, self.inner_tx.clone(), self.told.clone());
                self.background.push(task);
                tokio::spawn(async move {
                    let result = builder.connect().await.map(Up::One).map_err(|e| {
                        let hint = login_hint(&e, hint.as_deref());
                        format!("{e}{hint}")
                    });
                    let _ = events.send(Inner::Connected(Box::new(result)));
                });
            }
            Upstream::Group(builder, config) => {
                // The group's own `configure` hook sets each server's options (waiting for
                // ready included): the caller's.
                let builder = builder.handler(GroupForwarding::new(handler, roots_changes));
                tokio::spawn(async move {
                    let result = builder
                        .start_config(&config)
                        .await
                        .map(|g| Up::Group(Arc::new(g)))
                        .map_err(|e| e.to_string());
                    let _ = events.send(Inner::Connected(Box::new(result)));
                });
            }
        }
        self.report.host = Some(host);
    }

    fn start_call(&mut self, request: HostRequest) {
        let Some(client) = self.client.clone() else {
            return;
        };
        let HostRequest {
            key,
            id: _,
            method,
            params,
        } = request;
        let (params, token) = upstream::take_progress_token(upstream::without_envelope(params));
        let token = upstream::Token::new(token);
        let task_token = token.clone();
        // A 2026-07-28 host may send the call again with a token after an input round.
        let always = self.core.is_modern();
        let out = self.out.clone();
        let events = self.inner_tx.clone();
        let timeout = self.options.call_timeout;
        let hint = self.options.login_hint.clone();
        let task_key = key.clone();
        let options = task_token.options(RequestOptions::new().timeout(timeout), out, always);
        let task = tokio::spawn(async move {
            let outcome = client.call(&method, params, options, hint.as_deref()).await;
            let _ = events.send(Inner::Answered(CallAnswer {
                key: task_key,
                outcome,
            }));
        });
        self.calls.insert(key, (task.abort_handle(), token));
    }

    async fn finish(mut self, ended: Ended) -> BridgeReport {
        // The table dropped every call and failed every upstream request; what is left is IO.
        for (_, (task, _)) in self.calls.drain() {
            task.abort();
        }
        self.replies.clear();
        for task in self.background.drain(..) {
            task.abort();
        }
        let bound = self.options.close_bound;
        let upstreams: Vec<Up> = self
            .client
            .take()
            .into_iter()
            .chain(self.late.drain(..))
            .collect();
        let closed = tokio::time::timeout(bound, async {
            for up in &upstreams {
                up.stop().await;
            }
        })
        .await;
        self.report.upstream_closed = closed.is_ok();
        self.report.ended = ended;
        self.report
    }
}

/// Sleeps until `deadline`, or forever without one.
async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// What an authorization failure tells the host to do (never a token).
fn login_hint(e: &Error, hint: Option<&str>) -> String {
    match (e, hint) {
        (Error::Unauthorized { .. }, Some(hint)) => format!(" ({hint})"),
        (Error::Connect(c), Some(hint)) if c.to_string().contains("authoriz") => {
            format!(" ({hint})")
        }
        _ => String::new(),
    }
}
