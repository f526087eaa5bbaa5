//! [`Machine`]: classification, dispatch through the generated table, timers, and the
//! action queue. The driver's whole interface to the connection lifecycle.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use crate::classify::{self, Frame, classify};
use crate::config::Config;
use crate::core::{Core, Ctx};
use crate::event::{Oversized, ServerInfo};
use crate::failure::Failure;
use crate::generated::{self, Event, State, TimerKind};
use crate::io::{Action, CallId, Input, Report, SendOutcome, SendToken, Step};
use crate::timers::TimerKey;

/// The only MCP revision with JSON-RPC batches (2025-06-18 removed them).
const BATCH_REVISION: &str = "2025-03-26";

/// The sans-IO connection: feed it inputs with the current time, drain its actions.
///
/// Equality and hashing cover the connection's state and data, not the undrained actions (the
/// model checker compares machines at rest).
#[derive(Clone, Debug)]
pub struct Machine {
    state: State,
    core: Core,
    out: VecDeque<Action>,
    /// The send whose outcome is due before anything else (debug builds check the contract).
    awaiting: Option<SendToken>,
    #[cfg(feature = "checker")]
    rows: Option<Arc<(Vec<generated::Row>, Vec<u16>)>>,
}

impl PartialEq for Machine {
    fn eq(&self, other: &Self) -> bool {
        self.state == other.state && self.core == other.core
    }
}
impl Eq for Machine {}

impl std::hash::Hash for Machine {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.state.hash(state);
        self.core.hash(state);
    }
}

impl Machine {
    /// A machine in the initial state. Its initial actions (spawn the first transport, arm the
    /// connect timeout and the tombstone sweep) are queued: drain them. `seed` drives all jitter;
    /// `now` is the time since the driver's epoch.
    pub fn new(config: Config, seed: u64, now: Duration) -> Self {
        let mut m = Machine {
            state: State::INITIAL,
            core: Core::new(Arc::new(config), seed, now),
            out: VecDeque::new(),
            awaiting: None,
            #[cfg(feature = "checker")]
            rows: None,
        };
        let mut ctx = m.ctx();
        generated::initial_actions(&mut ctx);
        m
    }

    fn ctx(&mut self) -> Ctx<'_> {
        Ctx {
            core: &mut self.core,
            out: &mut self.out,
            state: self.state,
        }
    }

    /// The time of the latest input (time since the driver's epoch).
    pub fn now(&self) -> Duration {
        self.core.now
    }

    /// The current state.
    pub fn state(&self) -> State {
        self.state
    }

    /// The current transport generation (0 before the first spawn).
    pub fn generation(&self) -> u64 {
        self.core.generation
    }

    /// The era this server was found to speak (`None` before the first verdict, or while it is
    /// only assumed).
    pub fn era(&self) -> Option<crate::config::Era> {
        self.core
            .verdict
            .as_ref()
            .filter(|v| !v.tentative)
            .map(|v| v.era)
    }

    /// What the server said in the last accepted handshake (or discovery).
    pub fn server(&self) -> Option<&ServerInfo> {
        self.core.server.as_deref()
    }

    /// The messages of `bytes` when it is a JSON-RPC batch this connection must accept (MCP
    /// 2025-03-26 was negotiated, the only revision with batches), to be fed one by one as
    /// [`Input::Frame`]s of the same generation; `None` otherwise (feed `bytes` as it is: a
    /// batch under any other revision is a malformed frame). Replies to the requests of a batch
    /// are sent one by one, not as a batch (JSON-RPC allows a server to receive either).
    pub fn unbatch(&self, bytes: &[u8]) -> Option<Vec<Vec<u8>>> {
        let negotiated = self.core.server.as_ref()?;
        if negotiated.protocol_version != BATCH_REVISION {
            return None;
        }
        classify::batch_elements(bytes, self.core.config.max_frame_bytes)
    }

    /// Why the last connection attempt or connection failed, if it did (cleared by a handshake).
    pub fn last_error(&self) -> Option<&Failure> {
        self.core.last_error.as_ref()
    }

    /// The caller request `id` is sent for, while it is in flight: the caller's own request,
    /// or a request of the task its call runs as (`tasks/get`, `tasks/result`,
    /// `tasks/update`). `None` for the client's own requests (the handshake, a listen, a
    /// restore, a relist, a `tasks/cancel` nobody waits for) and for an id not in flight. A
    /// read for observers (telemetry); it changes nothing.
    pub fn caller_of(&self, id: crate::RequestId) -> Option<crate::CallId> {
        self.core.calls.get(id)?.kind.served_call()
    }

    /// Calls in flight or waiting to resend.
    pub fn calls_in_flight(&self) -> usize {
        self.core.calls.len()
    }

    /// Ids remembered as ended.
    pub fn tombstones(&self) -> usize {
        self.core.tombstones.len()
    }

    /// Every armed timer with its deadline.
    pub fn armed_timers(&self) -> Vec<(TimerKey, Duration)> {
        self.core.timers.armed().collect()
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.core.config
    }

    /// When the next reconnect attempt is due (in backoff), on the machine's clock.
    pub fn reconnect_at(&self) -> Option<Duration> {
        self.core
            .timers
            .deadline(TimerKey::plain(TimerKind::Reconnect))
    }

    /// The next deadline at which [`Machine::handle_timeout`] is due.
    pub fn poll_timeout(&self) -> Option<Duration> {
        self.core.timers.next()
    }

    /// The next action to carry out. After an [`Action::Send`], its [`Input::SendResult`] is
    /// due before the next call of this method or any other input.
    pub fn poll_action(&mut self) -> Option<Action> {
        debug_assert!(
            self.awaiting.is_none(),
            "the outcome of {:?} is due before the next action",
            self.awaiting
        );
        let action = self.out.pop_front()?;
        if let Action::Send { token, .. } = &action {
            self.awaiting = Some(*token);
        }
        Some(action)
    }

    /// Feeds one input at `now`. Returns the row that fired.
    pub fn handle(&mut self, input: Input, now: Duration) -> Step {
        match (&input, self.awaiting.take()) {
            (Input::SendResult { token, .. }, Some(due)) => {
                debug_assert_eq!(*token, due, "a send outcome for another send");
            }
            (_, due) => debug_assert!(due.is_none(), "the outcome of {due:?} is due first"),
        }
        self.advance(now);
        let event = self.classify(input);
        self.dispatch(event)
    }

    /// Fires the timers due at `now`, earliest first (ties in timer-key order), until one of
    /// them queues a [`Action::Send`]: that send's outcome is due before anything else happens
    /// (a call must not time out between its request's send and the send's outcome). Timers
    /// still due then fire at the next call: drain the actions, feed the outcomes, and call
    /// again while [`Machine::poll_timeout`] is at or before `now`.
    pub fn handle_timeout(&mut self, now: Duration) -> Vec<Step> {
        debug_assert!(self.awaiting.is_none(), "a send outcome is due first");
        self.advance(now);
        let mut steps = Vec::new();
        while let Some(key) = self.core.timers.pop_due(self.core.now) {
            steps.push(self.dispatch(timer_event(key)));
            if self.out.iter().any(|a| matches!(a, Action::Send { .. })) {
                break;
            }
        }
        steps
    }

    /// Fires one armed timer now, whatever its deadline (time moves to its deadline if that is
    /// later). For the model checker, where any armed timer may fire at any point.
    /// Returns `None` if `key` is not armed.
    #[cfg(feature = "checker")]
    pub fn fire_timer(&mut self, key: TimerKey) -> Option<Step> {
        let at = self.core.timers.deadline(key)?;
        self.core.timers.cancel(key);
        self.advance(at);
        Some(self.dispatch(timer_event(key)))
    }

    fn advance(&mut self, now: Duration) {
        self.core.now = self.core.now.max(now);
    }

    fn current(&self, generation: u64) -> bool {
        #[cfg(feature = "checker")]
        if self.core.mutant == Some(crate::mutant::Mutant::AcceptStaleGeneration) {
            return true;
        }
        generation == self.core.generation
    }

    fn classify(&self, input: Input) -> Event {
        match input {
            Input::TransportUp { generation } if self.current(generation) => Event::TransportUp,
            Input::TransportDown { generation, error } if self.current(generation) => {
                Event::TransportDown(error)
            }
            Input::Frame { generation, bytes } if self.current(generation) => {
                match classify(&bytes, self.core.config.max_frame_bytes) {
                    Frame::Response(r) => Event::Response(r),
                    Frame::Request(r) => Event::ServerRequest(r),
                    Frame::Notification(n) => Event::ServerNotification(n),
                    Frame::Malformed(m) => Event::MalformedFrame(m),
                    Frame::Oversized(o) => Event::OversizedFrame(o),
                }
            }
            Input::Oversized { generation, size } if self.current(generation) => {
                Event::OversizedFrame(Oversized { size })
            }
            Input::SendResult {
                generation,
                token,
                outcome,
            } if self.current(generation) => match outcome {
                SendOutcome::Ok => Event::SendOk(token),
                SendOutcome::Busy => Event::SendBusy(token),
                SendOutcome::Failed => Event::SendFailed(token),
            },
            Input::HandlerReply { generation, reply } if self.current(generation) => {
                Event::HandlerReply(reply)
            }
            Input::InputReply { generation, reply } if self.current(generation) => {
                Event::InputReply(reply)
            }
            Input::Authorized { generation } if self.current(generation) => Event::Authorized,
            Input::AuthorizationFailed {
                generation,
                failure,
            } if self.current(generation) => Event::AuthorizationFailed(failure),
            Input::TransportUp { .. }
            | Input::TransportDown { .. }
            | Input::Frame { .. }
            | Input::Oversized { .. }
            | Input::SendResult { .. }
            | Input::HandlerReply { .. }
            | Input::InputReply { .. }
            | Input::Authorized { .. }
            | Input::AuthorizationFailed { .. } => Event::StaleTransport,
            Input::Call(call) => Event::Call(call),
            Input::ResumeTask(resume) => Event::ResumeTask(resume),
            Input::Notify(notify) => Event::Notify(notify),
            Input::Cancel { call } => Event::Cancel(call),
            Input::Stop { call } => Event::Stop(call),
        }
    }

    fn dispatch(&mut self, event: Event) -> Step {
        let from = self.state;
        let kind = event.kind();
        let fired = self.run(event);
        let row = generated::ROWS.get(usize::from(fired.row));
        if row.is_some_and(|r| r.impossible) {
            let report = Report::ImpossibleRow { row: fired.row };
            self.out.push_back(Action::Report(report));
        }
        if fired.to != from {
            self.core.timers.leave_for(fired.to);
            self.state = fired.to;
        }
        Step {
            from,
            event: kind,
            row: fired.row,
            file: row.map_or("", |r| r.file),
            line: row.map_or(0, |r| r.line),
            to: fired.to,
        }
    }

    #[cfg(not(feature = "checker"))]
    fn run(&mut self, event: Event) -> generated::Fired {
        let state = self.state;
        generated::dispatch(&mut self.ctx(), state, event)
    }

    #[cfg(feature = "checker")]
    fn run(&mut self, event: Event) -> generated::Fired {
        let state = self.state;
        match self.rows.clone() {
            None => generated::dispatch(&mut self.ctx(), state, event),
            Some(table) => {
                let (rows, negated) = &*table;
                generated::interpret(&mut self.ctx(), rows, negated, state, event)
            }
        }
    }
}

/// The event a timer fires, with its payload.
fn timer_event(key: TimerKey) -> Event {
    match (key.kind, key.id) {
        (TimerKind::InitTimeout, _) => Event::InitTimeout,
        (TimerKind::ProbeTimeout, _) => Event::ProbeTimeout,
        (TimerKind::Reconnect, _) => Event::Reconnect,
        (TimerKind::ClosingExit, _) => Event::ClosingExit,
        (TimerKind::OwedRetry, _) => Event::OwedRetry,
        (TimerKind::ListenRetry, _) => Event::ListenRetry,
        (TimerKind::TombstoneSweep, _) => Event::TombstoneSweep,
        (TimerKind::RequestTimeout, id) => Event::RequestTimeout(id.unwrap_or(u64::MAX)),
        (TimerKind::SendRetry, id) => Event::SendRetry(id.unwrap_or(u64::MAX)),
        (TimerKind::TaskPoll, id) => Event::TaskPoll(CallId(id.unwrap_or(u64::MAX))),
        (TimerKind::TaskDeadline, id) => Event::TaskDeadline(CallId(id.unwrap_or(u64::MAX))),
        (TimerKind::ReadyWait, id) => Event::ReadyWait(CallId(id.unwrap_or(u64::MAX))),
    }
}

/// The model checker's hooks: a mutated table run by interpretation, and handler bugs.
#[cfg(feature = "checker")]
impl Machine {
    /// The same machine running a replacement table (a mutated copy of [`generated::ROWS`]),
    /// dispatched by interpretation; the rows whose index is in `negated_guards` fire when
    /// their guard does *not* hold.
    pub fn with_rows(mut self, rows: Vec<generated::Row>, negated_guards: Vec<u16>) -> Self {
        self.rows = Some(Arc::new((rows, negated_guards)));
        self
    }

    /// When the oldest tombstone the machine still holds expired: memory the model checker
    /// bounds (a tombstone must be gone within one sweep period of its expiry).
    pub fn oldest_tombstone_expiry(&self) -> Option<Duration> {
        self.core.tombstones.oldest_expiry()
    }

    /// Every jitter at its lowest (`false`) or highest (`true`) instead of from the seed: the
    /// model checker explores both extremes.
    pub fn with_jitter_extreme(mut self, high: bool) -> Self {
        self.core.rng.1 = Some(high);
        self
    }

    /// Turns on one deliberate handler bug.
    pub fn with_mutant(mut self, mutant: crate::mutant::Mutant) -> Self {
        self.core.mutant = Some(mutant);
        self
    }

    /// Gives back the room its queues grew and no longer use (the model checker keeps
    /// millions of machines; a product machine keeps its room for the next turn).
    pub fn compact(&mut self) {
        self.out.shrink_to_fit();
        self.core.outbox.shrink_to_fit();
    }
}
