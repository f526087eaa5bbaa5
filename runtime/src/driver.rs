//! The driver: one tokio task that feeds the sans-IO machine and carries out its actions.
//!
//! It selects over caller commands, transport events, handler answers and one sleep until the
//! machine's next deadline; after each input it drains every action. It decides nothing: what
//! an event does in a state is the generated table's business.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use mcp_machine::codes;
use mcp_machine::{
    Action, Body, CallId, Failure, HandlerReply, Input, Machine, Payload, Report, RpcError,
    ServerRequestId, Step,
};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::AbortHandle;
use tokio::time::Instant;

use crate::command::{Command, Notifier, ProgressSink, Reply, TaskStatusSink};
use crate::feed::{Hub, json_size};
use crate::handler::{ClientHandler, RequestContext, route};
use crate::quiet::QuietRx;
use crate::trace::{Record, TraceSink};
use crate::transport::{self, Connector, TransportConfig, TransportEvent, TransportHandle};
use crate::types::{Notification, Progress, ServerInfo, ServerNotification};
use crate::{ConnState, Error};

/// What the driver publishes for the handles.
pub(crate) struct Outputs {
    pub(crate) state: watch::Sender<ConnState>,
    /// What the client wants told and what the listens cover (2026-07-28).
    pub(crate) listening: watch::Sender<mcp_machine::ListenStatus>,
    pub(crate) server: RwLock<Option<ServerInfo>>,
    pub(crate) last_error: RwLock<Option<Failure>>,
    pub(crate) notifications: Arc<Hub<Notification>>,
    pub(crate) transitions: Arc<Hub<crate::state::Transition>>,
    /// The response cache, told of every notification and step (it invalidates on them).
    pub(crate) cache: crate::cache::ResponseCache,
    /// True once the driver ended and every transport task finished (children reaped).
    pub(crate) closed: watch::Sender<bool>,
}

enum Pending {
    Call {
        reply: Reply,
        progress: Option<ProgressSink>,
        /// Where the status of the task the call runs as goes, if anywhere.
        task_status: Option<TaskStatusSink>,
        /// Its span and start, only while `mcp::request` debug events are wanted (a call
        /// in flight otherwise keeps neither).
        traced: Option<Box<Traced>>,
        /// Its OpenTelemetry span, when the client records telemetry.
        #[cfg(feature = "otel")]
        span: Option<Box<crate::otel::CallSpan>>,
    },
    Notify {
        reply: Reply,
    },
    Stop {
        reply: oneshot::Sender<()>,
    },
}

#[cfg(feature = "otel")]
impl Pending {
    /// A call's OpenTelemetry span, if it is a call that has one.
    fn span(&self) -> Option<&crate::otel::CallSpan> {
        match self {
            Pending::Call { span, .. } => span.as_deref(),
            Pending::Notify { .. } | Pending::Stop { .. } => None,
        }
    }

    fn span_mut(&mut self) -> Option<&mut crate::otel::CallSpan> {
        match self {
            Pending::Call { span, .. } => span.as_deref_mut(),
            Pending::Notify { .. } | Pending::Stop { .. } => None,
        }
    }
}

/// A traced call's span (it carries the method) and when the driver took it.
struct Traced {
    span: tracing::Span,
    started: Instant,
}

/// What the driver talks to: the transport factory and its settings, the handler of server
/// requests, and the way back into its own command queue.
pub(crate) struct Wiring {
    pub(crate) connector: Arc<dyn Connector>,
    pub(crate) transport_config: TransportConfig,
    pub(crate) handler: Arc<dyn ClientHandler>,
    pub(crate) notifier: Notifier,
    /// Who authorizes when the machine asks ([`Action::Authorize`]), when the client can.
    pub(crate) authorizer: Option<Authorizer>,
    /// The client runs the server's sampling and elicitation as tasks when asked (2025-11-25).
    pub(crate) client_tasks: bool,
    /// What the connection is recorded into (OpenTelemetry), if anything.
    #[cfg(feature = "otel")]
    pub(crate) recorder: Option<crate::otel::Recorder>,
}

/// The OAuth settings of an HTTP client and the endpoint they authorize for.
#[derive(Clone, Debug)]
pub(crate) struct Authorizer {
    pub(crate) oauth: crate::auth::OAuth,
    pub(crate) endpoint: reqwest::Url,
}

pub(crate) struct Driver {
    machine: Machine,
    epoch: Instant,
    connector: Arc<dyn Connector>,
    transport_config: TransportConfig,
    /// Keyed by generation (our own counter: a fast hash, no peer chooses a key).
    transports: foldhash::HashMap<u64, TransportHandle>,
    events_tx: mpsc::UnboundedSender<(u64, TransportEvent)>,
    /// Polled only after a send woke it (as are the handler answers and the commands): the
    /// driver's `select!` would otherwise poll each empty channel on every turn.
    events_rx: QuietRx<(u64, TransportEvent)>,
    handler: Arc<dyn ClientHandler>,
    /// The tasks the client runs for its server (2025-11-25), when declared.
    client_tasks: Option<Arc<crate::client_tasks::ClientTasks>>,
    handler_tx: mpsc::UnboundedSender<(u64, Done)>,
    handler_rx: QuietRx<(u64, Done)>,
    /// Handler tasks in flight: how to abort each, and its context's cancellation flag.
    server_tasks: HashMap<(u64, TaskKey), (AbortHandle, watch::Sender<bool>)>,
    /// Sends the driver's own notifications (roots changed) and handlers' progress.
    notifier: Notifier,
    /// The host's roots, when it changes them at run time.
    roots: Option<watch::Receiver<Vec<crate::Root>>>,
    /// Keyed by our own call ids (a fast hash, no peer chooses a key).
    pending: foldhash::HashMap<CallId, Pending>,
    out: Arc<Outputs>,
    exited: bool,
    /// The trace being recorded, if asked for: the records of the current turn.
    trace: Option<TraceSink>,
    authorizer: Option<Authorizer>,
    /// The authorization running, and the generation to report its end to (the latest that
    /// asked: one authorization serves every generation that asks while it runs; read when
    /// its end is taken, so an `Authorize` carried out meanwhile is never lost).
    auth_task: Option<(AbortHandle, Arc<std::sync::atomic::AtomicU64>)>,
    /// The instant of the turn being run (a send's outcome is fed back at it).
    turn_now: Duration,
    /// What the connection is recorded into (OpenTelemetry), and the session clock.
    #[cfg(feature = "otel")]
    recorder: Option<(crate::otel::Recorder, crate::otel::SessionClock)>,
}

impl Driver {
    pub(crate) fn new(
        machine: Machine,
        epoch: Instant,
        wiring: Wiring,
        out: Arc<Outputs>,
        trace: Option<TraceSink>,
    ) -> Self {
        let Wiring {
            connector,
            transport_config,
            handler,
            notifier,
            authorizer,
            client_tasks,
            #[cfg(feature = "otel")]
            recorder,
        } = wiring;
        let (events_tx, events_rx) = mpsc::unbounded_channel();
        let (handler_tx, handler_rx) = mpsc::unbounded_channel();
        let roots = handler.roots_changes();
        Driver {
            notifier,
            roots,
            machine,
            epoch,
            connector,
            transport_config,
            transports: foldhash::HashMap::default(),
            events_tx,
            events_rx: QuietRx::new(events_rx),
            handler,
            handler_tx,
            handler_rx: QuietRx::new(handler_rx),
            server_tasks: HashMap::new(),
            pending: foldhash::HashMap::default(),
            out,
            exited: false,
            trace,
            authorizer,
            auth_task: None,
            turn_now: Duration::ZERO,
            client_tasks: client_tasks.then(Default::default),
            #[cfg(feature = "otel")]
            recorder: recorder.map(|r| (r, Default::default())),
        }
    }

    fn now(&self) -> Duration {
        Instant::now().saturating_duration_since(self.epoch)
    }

    /// Runs until the machine exits and every transport task has ended.
    pub(crate) async fn run(mut self, commands: mpsc::UnboundedReceiver<Command>) {
        let mut commands = QuietRx::new(commands);
        self.turn_now = self.now();
        self.drain();
        self.end_turn();
        let mut commands_open = true;
        // One timer for the machine's next deadline, kept across turns and moved only when
        // that deadline changes: a timer made and dropped on every wake-up costs two
        // registrations with the runtime's timer wheel per turn.
        let mut alarm = Alarm::new();
        while !(self.exited && self.transports.is_empty()) {
            let deadline = self.machine.poll_timeout().map(|d| self.epoch + d);
            alarm.set(deadline);
            tokio::select! {
                biased;
                Some((generation, event)) = self.events_rx.recv() => self.transport_event(generation, event),
                Some((generation, done)) = self.handler_rx.recv() => match done {
                    Done::Server(reply) => {
                        self.server_tasks.remove(&(generation, TaskKey::Server(reply.id.clone())));
                        self.input(Input::HandlerReply { generation, reply });
                    }
                    Done::Input(reply) => {
                        let key = TaskKey::Input(reply.request, reply.key.clone());
                        self.server_tasks.remove(&(generation, key));
                        self.input(Input::InputReply { generation, reply });
                    }
                    Done::Authorized(result) => {
                        // To the newest generation that asked (read here, after every
                        // `Authorize` the driver has carried out: none is lost).
                        let generation = self
                            .auth_task
                            .take()
                            .map_or(generation, |(_, target)| {
                                target.load(std::sync::atomic::Ordering::Relaxed)
                            });
                        self.input(match result {
                            Ok(()) => Input::Authorized { generation },
                            Err(reason) => Input::AuthorizationFailed {
                                generation,
                                failure: mcp_machine::AuthFailure { reason },
                            },
                        });
                    }
                },
                () = alarm.fired(), if deadline.is_some() => self.timeout(),
                () = roots_changed(&mut self.roots) => {
                    // The host changed its roots: tell the server, like a host's own notify.
                    let (reply, _) = oneshot::channel();
                    let input = Input::Notify(mcp_machine::NotifyRequest {
                        call: self.notifier.next_call(),
                        method: "notifications/roots/list_changed".to_owned(),
                        params: None,
                    });
                    self.command(Command::Notify { input, reply });
                }
                cmd = commands.recv(), if commands_open => match cmd {
                    Some(cmd) => self.command(cmd),
                    None => {
                        // Every handle was dropped: stop as if asked to.
                        commands_open = false;
                        self.input(Input::Stop { call: CallId(u64::MAX) });
                    }
                },
            }
        }
        for (_, task) in self.server_tasks.drain() {
            cancel(task);
        }
        if let Some((task, _)) = self.auth_task.take() {
            task.abort();
        }
        // The table answers every caller before exit; anyone left here is a bug, not a hang.
        for (call, p) in self.pending.drain() {
            tracing::error!(target: "mcp::driver", call = call.0, "caller left unanswered at exit");
            answer(p, Err(Error::Shutdown));
        }
        self.out.notifications.close();
        self.out.transitions.close();
        let _ = self.out.closed.send(true);
    }

    fn command(&mut self, cmd: Command) {
        match cmd {
            Command::Call {
                input,
                progress,
                task_status,
                reply,
                #[cfg(feature = "otel")]
                span,
            } => {
                let (call, method) = match &input {
                    Input::Call(request) => (request.call, request.method.as_str()),
                    Input::ResumeTask(resume) => (resume.call, "tasks/get"),
                    _ => return,
                };
                // The span carries the method: the events inside it (the request's end
                // included) need not.
                let traced =
                    tracing::enabled!(target: "mcp::request", tracing::Level::DEBUG).then(|| {
                        let span = tracing::debug_span!(target: "mcp::request", "mcp.request",
                            method = %method, call = call.0, id = tracing::field::Empty);
                        span.in_scope(|| tracing::debug!(target: "mcp::request", "request"));
                        Box::new(Traced {
                            span,
                            started: Instant::now(),
                        })
                    });
                let pending = Pending::Call {
                    reply,
                    progress,
                    task_status,
                    traced,
                    #[cfg(feature = "otel")]
                    span,
                };
                self.pending.insert(call, pending);
                self.input(input);
            }
            Command::Notify { input, reply } => {
                let Input::Notify(request) = &input else {
                    return;
                };
                let call = &request.call;
                self.pending.insert(*call, Pending::Notify { reply });
                self.input(input);
            }
            Command::Cancel(call) => self.input(Input::Cancel { call }),
            Command::Stop { call, reply } => {
                self.pending.insert(call, Pending::Stop { reply });
                self.input(Input::Stop { call });
            }
        }
    }

    fn transport_event(&mut self, generation: u64, event: TransportEvent) {
        let input = match event {
            TransportEvent::Up => Input::TransportUp { generation },
            TransportEvent::Frame(bytes) => {
                // Taken off the queue: its bytes leave the transport's read-ahead budget.
                if let Some(t) = self.transports.get(&generation) {
                    t.frame_taken(&bytes);
                }
                match self.machine.unbatch(&bytes) {
                    // A batch (MCP 2025-03-26 only): each message is a frame of its own.
                    Some(frames) => {
                        for bytes in frames {
                            self.input(Input::Frame { generation, bytes });
                        }
                        return;
                    }
                    None => Input::Frame { generation, bytes },
                }
            }
            TransportEvent::Oversized { seen } => Input::Oversized {
                generation,
                size: seen,
            },
            TransportEvent::Down(error) => {
                self.transports.remove(&generation);
                Input::TransportDown { generation, error }
            }
        };
        self.input(input);
    }

    /// One turn: an input, its row, and every action it queued.
    fn input(&mut self, input: Input) {
        let now = self.now();
        self.turn_now = now;
        self.record(|| Record::Input {
            input: input.clone(),
            now,
        });
        let step = self.machine.handle(input, now);
        self.observe(step);
        self.drain();
        self.end_turn();
    }

    /// One turn: the timers due now, their rows, and every action they queued.
    fn timeout(&mut self) {
        let now = self.now();
        self.turn_now = now;
        self.record(|| Record::Timeout { now });
        for step in self.machine.handle_timeout(now) {
            self.observe(step);
        }
        self.drain();
        self.end_turn();
    }

    /// Records into the trace, if one is recorded (`record` is not called otherwise).
    fn record(&mut self, record: impl FnOnce() -> Record) {
        if let Some(trace) = &mut self.trace {
            trace.push(record());
        }
    }

    /// Hands the turn's records to the recorder, if there is one.
    fn end_turn(&mut self) {
        if let Some(trace) = &mut self.trace {
            trace.end_turn();
        }
    }

    fn observe(&mut self, step: Step) {
        self.record(|| Record::Step(step));
        self.out.cache.observe_step(&step);
        tracing::trace!(target: "mcp::row", row = step.row, file = step.file, line = step.line, state = step.from.name(), event = step.event.name(), "row fired");
        if step.from == step.to {
            return;
        }
        tracing::info!(
            target: "mcp::transition",
            from = step.from.name(),
            to = step.to.name(),
            event = step.event.name(),
            row = step.row,
            spec_file = step.file,
            spec_line = step.line,
            "transition"
        );
        #[cfg(feature = "otel")]
        self.record_transition(&step);
        if step.to == mcp_machine::State::Ready {
            *self.out.server.write().unwrap_or_else(|e| e.into_inner()) =
                self.machine.server().cloned();
        }
        *self
            .out
            .last_error
            .write()
            .unwrap_or_else(|e| e.into_inner()) = self.machine.last_error().cloned();
        use mcp_machine::State as S;
        let backoff = step.to == S::Backoff;
        // An attempt ended: into backoff, or from a live state straight into a new attempt
        // (an expired session initialized again at once).
        let ended = backoff || (step.to == S::Starting && step.from != S::Backoff);
        let transition = crate::state::Transition {
            step,
            at: Instant::now(),
            cause: ended.then(|| self.machine.last_error().cloned()).flatten(),
            retry_in: self
                .machine
                .reconnect_at()
                .filter(|_| backoff)
                .map(|at| at.saturating_sub(self.now())),
        };
        // The state first: a host that reads `Client::state` on a transition from the feed
        // reads that transition's state (or a later one), never the one before.
        self.out.state.send_replace(step.to);
        self.out.transitions.publish(&transition, 1);
    }

    fn drain(&mut self) {
        while let Some(action) = self.machine.poll_action() {
            self.record(|| Record::Action(action.clone()));
            self.execute(action);
        }
    }

    fn execute(&mut self, action: Action) {
        match action {
            Action::SpawnTransport { generation } => {
                let handle = transport::spawn(
                    Arc::clone(&self.connector),
                    generation,
                    self.transport_config.clone(),
                    self.events_tx.clone(),
                );
                self.transports.insert(generation, handle);
            }
            Action::CloseTransport { generation } => {
                if let Some(t) = self.transports.get(&generation) {
                    t.close();
                }
            }
            Action::Send {
                generation,
                token,
                #[cfg(feature = "otel")]
                mut frame,
                #[cfg(not(feature = "otel"))]
                frame,
            } => {
                // A request: on its caller's span (a re-send, a task's request), else the
                // connection's own (the handshake, a listen, a restore).
                #[cfg(feature = "otel")]
                if let Some((recorder, clock)) = &self.recorder
                    && let mcp_machine::FrameKind::Request { id, own } = frame.head.kind
                {
                    let method = frame.head.method.as_deref();
                    let caller = self
                        .machine
                        .caller_of(id)
                        .and_then(|c| self.pending.get_mut(&c))
                        .and_then(Pending::span_mut);
                    match (caller, method) {
                        (Some(span), _) => span.sent(id, own, method, &mut frame.bytes),
                        (None, Some(method)) if own => {
                            clock.sent(recorder, method, id, &mut frame.bytes)
                        }
                        _ => {}
                    }
                }
                // A notification: a span of its own, ended with the transport's verdict.
                #[cfg(feature = "otel")]
                let notification = self.notification_span(&mut frame);
                // The outcome is fed back at once: the machine's send contract.
                let outcome = match self.transports.get(&generation) {
                    // A byte link writes the bytes alone: its frames carry no head.
                    Some(t) if t.reads_heads() => t.try_send(frame),
                    Some(t) => t.try_send(frame.bytes),
                    None => mcp_machine::SendOutcome::Failed,
                };
                #[cfg(feature = "otel")]
                if let Some(span) = notification {
                    span.finish(outcome == mcp_machine::SendOutcome::Ok);
                }
                if outcome != mcp_machine::SendOutcome::Ok {
                    tracing::debug!(target: "mcp::send", generation, ?token, ?outcome, "send not taken");
                }
                // Fed back at the turn's instant: the same moment, as far as the machine goes.
                let now = self.turn_now;
                let input = Input::SendResult {
                    generation,
                    token,
                    outcome,
                };
                self.record(|| Record::Input {
                    input: input.clone(),
                    now,
                });
                let step = self.machine.handle(input, now);
                self.observe(step);
            }
            Action::GrantCredit {
                generation,
                credits,
            } => {
                if let Some(t) = self.transports.get(&generation) {
                    t.grant_credits(credits);
                }
            }
            Action::Authorize {
                generation,
                challenge,
            } => self.authorize(generation, challenge),
            Action::Reply {
                call,
                request,
                outcome,
            } => match self.pending.remove(&call) {
                Some(Pending::Call {
                    reply,
                    traced,
                    #[cfg(feature = "otel")]
                    span,
                    ..
                }) => {
                    let outcome = outcome
                        .map(Payload::into_body)
                        .map_err(|e| Box::new(Error::from(e)));
                    #[cfg(feature = "otel")]
                    if let Some(span) = span {
                        self.finish_span(*span, request, &outcome);
                    }
                    if let Some(traced) = traced {
                        let elapsed = traced.started.elapsed();
                        traced.span.record("id", request);
                        let _entered = traced.span.enter();
                        match &outcome {
                            Ok(_) => {
                                tracing::debug!(target: "mcp::request", id = request, ?elapsed, outcome = "ok", "request done")
                            }
                            Err(e) => {
                                tracing::debug!(target: "mcp::request", id = request, ?elapsed, outcome = %e, "request done")
                            }
                        }
                    }
                    let _ = reply.send(outcome);
                }
                Some(p @ Pending::Notify { .. }) => {
                    answer(p, outcome.map(Payload::into_body).map_err(Error::from))
                }
                Some(Pending::Stop { reply }) => {
                    let _ = reply.send(());
                }
                None => {
                    tracing::error!(target: "mcp::driver", call = call.0, "reply for an unknown caller")
                }
            },
            Action::StopDone { call, already } => {
                tracing::debug!(target: "mcp::driver", already, "stop answered");
                if let Some(p) = self.pending.remove(&call) {
                    answer(p, Ok(Body::Tree(Value::Null)));
                }
            }
            Action::Notification(n) => {
                let n = Notification::new(n.method, n.params);
                if let ServerNotification::Log {
                    level,
                    logger,
                    data,
                } = &n.parsed
                {
                    tracing::debug!(target: "mcp::server_log", ?level, ?logger, %data, "server log message");
                }
                let size = n.method.len() + n.params.as_ref().map_or(0, json_size);
                #[cfg(feature = "otel")]
                let span = self.notification_received(&n.method, n.params.as_ref(), None);
                // Before any subscriber sees it: one that re-lists at once gets fresh results.
                self.out.cache.observe_notification(&n.parsed);
                let _dropped = self.out.notifications.publish(&n, size);
                #[cfg(feature = "otel")]
                if let Some((recorder, _)) = &self.recorder {
                    recorder.dropped_notifications(_dropped);
                }
                #[cfg(feature = "otel")]
                if let Some(span) = span {
                    span.delivered();
                }
            }
            Action::TaskStatus { call, status } => {
                tracing::debug!(target: "mcp::task", call = call.0,
                    task = %crate::shown::shown(&status.task_id, 128),
                    status = status.state.as_str(),
                    message = %crate::shown::shown(status.message.as_deref().unwrap_or(""), 256));
                if let Some(Pending::Call {
                    task_status: Some(sink),
                    ..
                }) = self.pending.get(&call)
                {
                    // A user's callback runs on the driver: its panic must not take the driver down.
                    let sink = std::panic::AssertUnwindSafe(|| sink(&status));
                    if std::panic::catch_unwind(sink).is_err() {
                        tracing::error!(target: "mcp::driver", call = call.0, "a task status callback panicked");
                    }
                }
            }
            Action::Progress { call, params } => {
                // The server's progress notification: under the context it carries, else
                // under the call's span.
                #[cfg(feature = "otel")]
                let span = {
                    let parent = self.pending.get(&call).and_then(Pending::span);
                    self.notification_received(
                        "notifications/progress",
                        Some(&params),
                        parent.map(|s| s.context()).as_ref(),
                    )
                };
                if let Some(Pending::Call {
                    progress: Some(sink),
                    ..
                }) = self.pending.get(&call)
                {
                    // A user's callback runs on the driver: its panic must not take the driver down.
                    let progress = Progress::from_params(&params);
                    let sink = std::panic::AssertUnwindSafe(|| sink(progress));
                    if std::panic::catch_unwind(sink).is_err() {
                        tracing::error!(target: "mcp::driver", call = call.0, "a progress callback panicked");
                    }
                }
                #[cfg(feature = "otel")]
                if let Some(span) = span {
                    span.delivered();
                }
            }
            Action::ServerRequest {
                generation,
                request,
            } => {
                let mcp_machine::ServerRequest { id, method, params } = request;
                tracing::debug!(target: "mcp::server_request", method = %method, %id, "server request");
                let params = params.unwrap_or(Value::Null);
                let task = TaskKey::Server(id.clone());
                self.spawn_handler(
                    generation,
                    task,
                    id.clone(),
                    method,
                    params,
                    move |result| Done::Server(HandlerReply { id, result }),
                );
            }
            Action::InputRequest {
                generation,
                request,
                key,
                method,
                params,
            } => {
                tracing::debug!(target: "mcp::input_request", method = %method, request, key = ?key, "input request of an input_required round");
                // The handler's context names the input by the call's request and its key.
                let cx_id = ServerRequestId::Str(format!("{request}/{key}"));
                let task = TaskKey::Input(request, key.clone());
                self.spawn_handler(generation, task, cx_id, method, params, move |outcome| {
                    Done::Input(mcp_machine::InputReply {
                        request,
                        key,
                        outcome,
                    })
                });
            }
            Action::AbortInputs {
                generation,
                request,
            } => {
                let ended: Vec<_> = self
                    .server_tasks
                    .keys()
                    .filter(|(g, k)| {
                        *g == generation && matches!(k, TaskKey::Input(r, _) if *r == request)
                    })
                    .cloned()
                    .collect();
                for key in ended {
                    if let Some(task) = self.server_tasks.remove(&key) {
                        cancel(task);
                    }
                }
            }
            Action::AbortServerRequest { generation, id } => {
                if let Some(task) = self.server_tasks.remove(&(generation, TaskKey::Server(id))) {
                    cancel(task);
                }
            }
            Action::AbortServerRequests { generation } => {
                let ended: Vec<_> = self
                    .server_tasks
                    .keys()
                    .filter(|(g, _)| *g == generation)
                    .cloned()
                    .collect();
                for key in ended {
                    if let Some(task) = self.server_tasks.remove(&key) {
                        cancel(task);
                    }
                }
            }
            Action::Listening(status) => {
                tracing::debug!(target: "mcp::listen", ?status, "listen status");
                self.out.cache.observe_listening(&status);
                self.out.listening.send_replace(status);
            }
            Action::Report(report) => trace_report(&report),
            Action::Exit => {
                self.exited = true;
                for t in self.transports.values() {
                    t.close();
                }
            }
        }
    }
}

impl Driver {
    /// Runs the authorization the machine asked for (one at a time: asked again while one
    /// runs, it reports to the newest generation that asked).
    fn authorize(&mut self, generation: u64, challenge: mcp_machine::AuthChallenge) {
        use std::sync::atomic::Ordering;
        if let Some((_, target)) = &self.auth_task {
            target.store(generation, Ordering::Relaxed);
            return;
        }
        let tx = self.handler_tx.clone();
        let Some(auth) = self.authorizer.clone() else {
            // A server that sent the authorization code itself to a client that cannot
            // authorize: the machine is told at once, through the same path.
            let reason = "this client has no OAuth settings (ClientBuilder::oauth)".to_owned();
            let _ = tx.send((generation, Done::Authorized(Err(reason))));
            return;
        };
        tracing::info!(target: "mcp::auth", status = challenge.status, "the server asks for authorization");
        let target = Arc::new(std::sync::atomic::AtomicU64::new(generation));
        let task = tokio::spawn(async move {
            // Whatever ends this task before it reports (a panic in the authorization, an
            // abort), the machine is told the authorization failed: its slot is never held.
            let mut report = AuthReport {
                tx: Some(tx),
                generation,
            };
            let result = auth
                .oauth
                .on_challenge(
                    &auth.endpoint,
                    challenge.status,
                    &challenge.www_authenticate,
                )
                .await
                .map(|_| ())
                .map_err(|e| e.to_string());
            report.send(result);
        });
        self.auth_task = Some((task.abort_handle(), target));
    }
}

/// Reports the end of an authorization task to the driver exactly once: with its result, or,
/// when the task ends without one (it panicked or was aborted), with a failure.
struct AuthReport {
    tx: Option<mpsc::UnboundedSender<(u64, Done)>>,
    generation: u64,
}

impl AuthReport {
    fn send(&mut self, result: Result<(), String>) {
        if let Some(tx) = self.tx.take() {
            // The generation is read when the driver takes this (see `run`).
            let _ = tx.send((self.generation, Done::Authorized(result)));
        }
    }
}

impl Drop for AuthReport {
    fn drop(&mut self) {
        self.send(Err(
            "the authorization ended without an answer (it failed unexpectedly)".into(),
        ));
    }
}

#[cfg(feature = "otel")]
impl Driver {
    /// Ends a call's span with the answer its caller gets.
    fn finish_span(
        &self,
        span: crate::otel::CallSpan,
        request: Option<mcp_machine::RequestId>,
        outcome: &Result<Body, Box<Error>>,
    ) {
        span.finish(request, outcome, self.moment());
    }

    /// What the connection is now: the server's protocol version, the session, the HTTP
    /// version of the latest response.
    fn moment(&self) -> crate::otel::Moment<'_> {
        crate::otel::Moment {
            version: self.machine.server().map(|s| s.protocol_version.as_str()),
            session: self.connector.session_id(),
            http: self.connector.protocol_version(),
        }
    }

    /// The context of the span of the call whose request went out as `request`, if it has one
    /// (the machine may have ended the call already: its cancellation goes out before its
    /// caller is answered).
    fn call_context(&self, request: mcp_machine::RequestId) -> Option<opentelemetry::Context> {
        let span = match self.machine.caller_of(request) {
            Some(call) => self.pending.get(&call).and_then(Pending::span),
            None => self
                .pending
                .values()
                .filter_map(Pending::span)
                .find(|span| span.sent_as() == Some(request)),
        };
        span.map(crate::otel::CallSpan::context)
    }

    /// The SERVER span of a notification of the server's (none without telemetry): under the
    /// context in its `_meta`, else under `fallback`.
    fn notification_received(
        &self,
        method: &str,
        params: Option<&Value>,
        fallback: Option<&opentelemetry::Context>,
    ) -> Option<crate::otel::ServerSpan> {
        let (recorder, _) = self.recorder.as_ref()?;
        Some(crate::otel::ServerSpan::start(
            recorder,
            method,
            None,
            params,
            fallback,
            &self.moment(),
        ))
    }

    /// The span of a notification the client is about to send (none for other frames, or
    /// without telemetry): under the span of the call a cancellation names, else under the
    /// session's; its context written into the frame.
    fn notification_span(
        &self,
        frame: &mut mcp_machine::Outgoing,
    ) -> Option<crate::otel::NotificationSpan> {
        let (recorder, clock) = self.recorder.as_ref()?;
        if frame.head.kind != mcp_machine::FrameKind::Notification {
            return None;
        }
        let method = frame.head.method.as_deref()?;
        let parent = frame
            .head
            .cancels
            .and_then(|request| self.call_context(request));
        let parent = parent.as_ref().or(clock.context());
        Some(crate::otel::NotificationSpan::start(
            recorder,
            parent,
            method,
            &self.moment(),
            &mut frame.bytes,
        ))
    }

    /// A transition: an event on the span of every call in flight, and the session metrics.
    fn record_transition(&mut self, step: &Step) {
        let Some((recorder, clock)) = &mut self.recorder else {
            return;
        };
        for p in self.pending.values() {
            if let Pending::Call {
                span: Some(span), ..
            } = p
            {
                span.transition(step);
            }
        }
        let version = self.machine.server().map(|s| s.protocol_version.as_str());
        let session = (step.to == mcp_machine::State::Ready)
            .then(|| self.connector.session_id())
            .flatten();
        clock.observe(
            recorder,
            step,
            self.machine.last_error(),
            version,
            session,
            std::time::Instant::now(),
        );
    }
}

fn answer(p: Pending, outcome: Result<Body, Error>) {
    match p {
        Pending::Call { reply, .. } | Pending::Notify { reply } => {
            let _ = reply.send(outcome.map_err(Box::new));
        }
        Pending::Stop { reply } => {
            let _ = reply.send(());
        }
    }
}

/// A handler task: a server request's, or one input request of a call's MRTR round.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum TaskKey {
    Server(ServerRequestId),
    Input(mcp_machine::RequestId, String),
}

/// What a finished handler task gives back.
enum Done {
    Server(HandlerReply),
    Input(mcp_machine::InputReply),
    /// The authorization ended: with a token held, or why not (no secret in it).
    Authorized(Result<(), String>),
}

impl Driver {
    /// Runs the client handler for one request (of the server, or of an input round) on its own
    /// task, tagged with its generation; `done` turns the outcome into what goes back to the
    /// machine. Building the future runs user code on the driver: a panic there becomes an
    /// internal error, like a panic inside the future.
    fn spawn_handler(
        &mut self,
        generation: u64,
        task: TaskKey,
        id: ServerRequestId,
        method: String,
        params: Value,
        done: impl FnOnce(Result<Value, RpcError>) -> Done + Send + 'static,
    ) {
        // Its span first (the params move into the handler): parent, the server's context.
        #[cfg(feature = "otel")]
        let span = self.recorder.as_ref().map(|(recorder, _)| {
            // An input of a round belongs to a call: its span is the parent when the server
            // wrote no context of its own.
            let call = match &task {
                TaskKey::Input(request, _) => self.call_context(*request),
                TaskKey::Server(_) => None,
            };
            crate::otel::ServerSpan::start(
                recorder,
                &method,
                matches!(task, TaskKey::Server(_)).then_some(&id),
                Some(&params),
                call.as_ref(),
                &self.moment(),
            )
        });
        let handler = &*self.handler;
        let (cancelled_tx, cancelled) = watch::channel(false);
        let server = self.machine.server().cloned();
        // A request to run as a task, or about a task the client runs: answered by the store.
        let tasked = self.client_tasks.as_ref().and_then(|store| {
            store.handle(
                &self.handler,
                &method,
                &params,
                server.clone(),
                Some(self.notifier.clone()),
            )
        });
        let cx = RequestContext::new(
            id,
            method.clone(),
            &params,
            server,
            cancelled,
            Some(self.notifier.clone()),
        );
        // The handler is built in its span's context too (a handler may read it at once).
        #[cfg(feature = "otel")]
        let entered = span.as_ref().map(|s| s.context().attach());
        let built = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match tasked {
            Some(fut) => fut,
            None => route(handler, &method, params, cx),
        }));
        #[cfg(feature = "otel")]
        drop(entered);
        let fut: crate::handler::HandlerFuture<Value> = match built {
            Ok(fut) => fut,
            Err(_) => {
                let message = format!("the client's handler for {method} panicked");
                Box::pin(async move {
                    Err(RpcError {
                        code: codes::INTERNAL_ERROR,
                        message,
                        data: None,
                    })
                })
            }
        };
        #[cfg(feature = "otel")]
        let fut: crate::handler::HandlerFuture<Value> = match &span {
            Some(span) => Box::pin(opentelemetry::context::FutureExt::with_context(
                fut,
                span.context(),
            )),
            None => fut,
        };
        let inner = tokio::spawn(fut);
        let abort = inner.abort_handle();
        let tx = self.handler_tx.clone();
        tokio::spawn(async move {
            let result = match inner.await {
                Ok(r) => r,
                Err(e) if e.is_panic() => Err(RpcError {
                    code: codes::INTERNAL_ERROR,
                    message: format!("the client's handler for {method} panicked"),
                    data: None,
                }),
                Err(_) => {
                    #[cfg(feature = "otel")]
                    if let Some(span) = span {
                        span.finish(None);
                    }
                    return;
                }
            };
            #[cfg(feature = "otel")]
            if let Some(span) = span {
                span.finish(Some(&result));
            }
            let _ = tx.send((generation, done(result)));
        });
        self.server_tasks
            .insert((generation, task), (abort, cancelled_tx));
    }
}

/// Tells a handler's context that its request is cancelled, then aborts the handler's task.
fn cancel((task, cancelled): (AbortHandle, watch::Sender<bool>)) {
    cancelled.send_replace(true);
    task.abort();
}

/// Resolves when the host changed its roots (never without a roots handle).
async fn roots_changed(roots: &mut Option<watch::Receiver<Vec<crate::Root>>>) {
    if let Some(rx) = roots
        && rx.changed().await.is_ok()
    {
        return;
    }
    std::future::pending().await
}

/// The driver's one timer: armed for the machine's next deadline, moved only when that
/// deadline changes (not made anew on every turn), idle while there is none.
struct Alarm {
    /// Polled only when its timer woke it or was moved, not on every turn of the driver;
    /// `None` while there is no deadline (no timer left registered in the runtime).
    sleep: Option<crate::quiet::Quiet<tokio::time::Sleep>>,
    /// The deadline the timer is armed for, `None` while idle.
    armed: Option<Instant>,
}

impl Alarm {
    fn new() -> Self {
        Alarm {
            sleep: None,
            armed: None,
        }
    }

    /// Arms the timer for `deadline`, or drops it when there is none; a deadline already
    /// armed costs nothing.
    fn set(&mut self, deadline: Option<Instant>) {
        match (deadline, &mut self.sleep) {
            (None, _) => self.sleep = None,
            (Some(d), Some(sleep)) if self.armed != Some(d) => sleep.inner_mut().reset(d),
            (Some(_), Some(_)) => {}
            (Some(d), None) => {
                self.sleep = Some(crate::quiet::Quiet::new(tokio::time::sleep_until(d)));
            }
        }
        self.armed = deadline;
    }

    /// Resolves once the armed deadline is reached (never while none is armed). The timer is
    /// then unarmed: the same deadline asked for again fires again at once.
    async fn fired(&mut self) {
        match &mut self.sleep {
            Some(sleep) => sleep.await,
            None => std::future::pending().await,
        }
        self.armed = None;
    }
}

fn trace_report(report: &Report) {
    match report {
        Report::Malformed { reason } => {
            tracing::warn!(target: "mcp::protocol", violation = "malformed_frame", %reason, "protocol violation");
        }
        Report::Oversized { size, max } => {
            tracing::warn!(target: "mcp::protocol", violation = "oversized_frame", size, max, "protocol violation");
        }
        Report::LateResponse { id } => {
            tracing::debug!(target: "mcp::response", id, kind = "late", "response dropped")
        }
        Report::UnknownResponse { id } => {
            tracing::debug!(target: "mcp::response", id = %id, kind = "unknown", "response dropped");
        }
        Report::SendRetry { id, attempt } => {
            tracing::debug!(target: "mcp::retry", id, attempt, "transport busy; send retried")
        }
        Report::RestoreFailed(change) => {
            tracing::warn!(target: "mcp::session", ?change, "could not restore the session after a reconnect");
        }
        Report::InitRejected(reason) => {
            tracing::warn!(target: "mcp::protocol", violation = "handshake", reason = ?reason.to_string(), "handshake failed");
        }
        Report::ProbeFallback { reason } => {
            tracing::info!(target: "mcp::era", ?reason, "server/discover answered as by a legacy server: legacy handshake");
        }
        Report::ProbeTimeout => {
            tracing::info!(target: "mcp::era", "no answer to server/discover in time");
        }
        Report::UnexpectedServerRequest { method } => {
            tracing::warn!(target: "mcp::protocol", violation = "unexpected_server_request", ?method, "server request dropped unanswered");
        }
        other => tracing::debug!(target: "mcp::driver", ?other, "report"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 29, defect 3: an authorization that panics (or is aborted) still tells the
    /// machine it failed, so the authorization slot is freed and the client can authorize
    /// again.
    #[tokio::test]
    async fn an_authorization_task_that_dies_still_reports_a_failure() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let task = tokio::spawn(async move {
            let _report = AuthReport {
                tx: Some(tx),
                generation: 7,
            };
            panic!("an authorization that panics");
        });
        assert!(task.await.unwrap_err().is_panic());
        let (generation, done) = rx.recv().await.unwrap();
        assert_eq!(generation, 7);
        assert!(matches!(done, Done::Authorized(Err(_))));
        // Reported once: the sender is gone with the task.
        assert!(rx.recv().await.is_none());

        // An answer is sent once, not followed by a failure at drop.
        let (tx, mut rx) = mpsc::unbounded_channel();
        let mut report = AuthReport {
            tx: Some(tx),
            generation: 3,
        };
        report.send(Ok(()));
        drop(report);
        assert!(matches!(
            rx.recv().await,
            Some((3, Done::Authorized(Ok(()))))
        ));
        assert!(rx.recv().await.is_none());
    }
}
