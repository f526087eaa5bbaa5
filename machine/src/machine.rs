//! [`Machine`]: classification, dispatch through the generated table, timers, and the
//! action queue. The driver's whole interface to the connection lifecycle.

use std::sync::Arc;
use std::time::Duration;

use crate::classify::{Frame, classify};
use crate::config::Config;
use crate::core::{Core, Event};
use crate::generated::{self, EventKind, Row, State};
use crate::io::{Action, Input, Report, SendOutcome, ServerInfo, Step};
use crate::timers::TimerKey;

/// Deliberate bugs in the handlers, for the model checker's mutation self-test: each must be
/// caught by some property. Never set outside tests; `None` is the real machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Mutant {
    /// Ended ids (timeout, cancel, failure) are not tombstoned.
    NoTombstoneOnEnd,
    /// A completed call's request timer stays armed.
    KeepTimerAfterReply,
    /// Calls waiting to resend are neither failed nor cleared when ready is left.
    ForgetRetries,
    /// The id counter restarts with every transport generation.
    ReuseIds,
    /// Inputs from older transport generations are taken as current.
    AcceptStaleGeneration,
    /// `notifications/cancelled` is sent for requests that never went out.
    CancelUnsent,
    /// The tombstone sweep drops every tombstone, expired or not.
    SweepTooEarly,
    /// A response answers its call but the call stays in flight.
    ReplyKeepsEntry,
}

/// The sans-IO connection: feed it inputs with the current time, drain its actions.
///
/// Equality and hashing cover the connection's whole state except undrained actions (the
/// model checker compares machines at rest).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Machine {
    state: State,
    core: Core,
    rows: Option<Arc<Vec<Row>>>,
}

impl std::hash::Hash for Machine {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        // The table variant never changes during a run; equal machines hash equal without it.
        self.state.hash(state);
        self.core.hash(state);
    }
}

impl Machine {
    /// A machine in the initial state. Its initial actions (spawn the first transport, arm the
    /// init timeout and the tombstone sweep) are queued: drain them. `seed` drives all jitter;
    /// `now` is the time since the driver's epoch.
    pub fn new(config: Config, seed: u64, now: Duration) -> Self {
        let mut m = Machine {
            state: State::INITIAL,
            core: Core::new(Arc::new(config), seed, now),
            rows: None,
        };
        for action in generated::INITIAL_ACTIONS {
            generated::run_action(&mut m.core, action, &Event::Start);
        }
        m
    }

    /// The same machine running a replacement table (a mutated copy of [`generated::ROWS`]),
    /// dispatched by interpretation. For the model checker's mutation tests only.
    #[doc(hidden)]
    pub fn with_rows(mut self, rows: Vec<Row>) -> Self {
        self.rows = Some(Arc::new(rows));
        self
    }

    /// Turns on one deliberate handler bug. For the model checker's mutation tests only.
    #[doc(hidden)]
    pub fn with_mutant(mut self, mutant: Mutant) -> Self {
        self.core.mutant = Some(mutant);
        self
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

    /// What the server said in the last accepted handshake.
    pub fn server(&self) -> Option<ServerInfo> {
        self.core.server_info()
    }

    /// Why the last connection attempt or connection failed, if it did.
    pub fn last_error(&self) -> Option<&str> {
        self.core.last_error.as_deref()
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

    /// The next deadline at which [`Machine::handle_timeout`] is due.
    pub fn poll_timeout(&self) -> Option<Duration> {
        self.core.timers.next()
    }

    /// The next action to carry out.
    pub fn poll_action(&mut self) -> Option<Action> {
        self.core.out.0.pop_front()
    }

    /// Feeds one input at `now`. Returns the row that fired.
    pub fn handle(&mut self, input: Input, now: Duration) -> Step {
        self.advance(now);
        let (kind, event) = self.classify(input);
        self.dispatch(kind, &event)
    }

    /// Fires every timer due at `now`, earliest first (ties in timer-key order).
    pub fn handle_timeout(&mut self, now: Duration) -> Vec<Step> {
        self.advance(now);
        let mut steps = Vec::new();
        while let Some(key) = self.core.timers.pop_due(self.core.now) {
            steps.push(self.dispatch(key.kind.event(), &Event::Timer(key)));
        }
        steps
    }

    /// Fires one armed timer now, whatever its deadline (time moves to its deadline if that is
    /// later). For the model checker, where any armed timer may fire at any point.
    /// Returns `None` if `key` is not armed.
    pub fn fire_timer(&mut self, key: TimerKey) -> Option<Step> {
        let at = self.core.timers.deadline(key)?;
        self.core.timers.cancel(key);
        self.advance(at);
        Some(self.dispatch(key.kind.event(), &Event::Timer(key)))
    }

    fn advance(&mut self, now: Duration) {
        self.core.now = self.core.now.max(now);
    }

    fn classify(&self, input: Input) -> (EventKind, Event) {
        use EventKind as K;
        let current = |generation: u64| {
            generation == self.core.generation
                || self.core.mutant == Some(Mutant::AcceptStaleGeneration)
        };
        match input {
            Input::TransportUp { generation } if current(generation) => {
                (K::TransportUp, Event::TransportUp)
            }
            Input::TransportDown { generation, reason } if current(generation) => {
                (K::TransportDown, Event::TransportDown { reason })
            }
            Input::Frame { generation, bytes } if current(generation) => {
                match classify(&bytes, self.core.config.max_frame_bytes) {
                    Frame::Response { id, body } => (K::Response, Event::Response { id, body }),
                    Frame::Request { id, method, params } => (
                        K::ServerRequest,
                        Event::ServerRequest { id, method, params },
                    ),
                    Frame::Notification { method, params } => (
                        K::ServerNotification,
                        Event::ServerNotification { method, params },
                    ),
                    Frame::Malformed { reason } => (K::MalformedFrame, Event::Malformed { reason }),
                    Frame::Oversized { size } => (K::OversizedFrame, Event::Oversized { size }),
                }
            }
            Input::Oversized { generation, size } if current(generation) => {
                (K::OversizedFrame, Event::Oversized { size })
            }
            Input::SendResult {
                generation,
                token,
                outcome,
            } if current(generation) => {
                let kind = match outcome {
                    SendOutcome::Ok => K::SendOk,
                    SendOutcome::Busy => K::SendBusy,
                    SendOutcome::Failed => K::SendFailed,
                };
                (kind, Event::SendOutcome { token })
            }
            Input::HandlerReply {
                generation,
                id,
                result,
            } if current(generation) => (K::HandlerReply, Event::HandlerReply { id, result }),
            Input::TransportUp { .. }
            | Input::TransportDown { .. }
            | Input::Frame { .. }
            | Input::Oversized { .. }
            | Input::SendResult { .. }
            | Input::HandlerReply { .. } => (K::StaleTransport, Event::Stale),
            Input::Call {
                call,
                method,
                params,
                options,
            } => (
                K::Call,
                Event::Call {
                    call,
                    method,
                    params,
                    options,
                },
            ),
            Input::Notify {
                call,
                method,
                params,
            } => (
                K::Notify,
                Event::Notify {
                    call,
                    method,
                    params,
                },
            ),
            Input::Cancel { call } => (K::Cancel, Event::Cancel { call }),
            Input::Stop { call } => (K::Stop, Event::Stop { call }),
        }
    }

    fn dispatch(&mut self, kind: EventKind, event: &Event) -> Step {
        let from = self.state;
        self.core.state = from;
        let fired = match &self.rows {
            None => generated::dispatch(&mut self.core, from, kind, event),
            Some(rows) => interpret(rows, &mut self.core, from, kind, event),
        };
        let rows: &[Row] = self.rows.as_deref().map_or(&generated::ROWS, Vec::as_slice);
        if rows
            .get(usize::from(fired.row))
            .is_some_and(|r| r.impossible)
        {
            let report = Report::ImpossibleRow { row: fired.row };
            self.core.out.0.push_back(Action::Report(report));
        }
        if fired.to != from {
            self.core.timers.leave_for(fired.to);
            self.state = fired.to;
            self.core.state = fired.to;
        }
        Step {
            from,
            event: kind,
            row: fired.row,
            to: fired.to,
        }
    }
}

/// Table-driven dispatch over a (possibly mutated) copy of the rows: the rows covering the
/// cell, in order, the first whose guard holds (or that has none) fires.
fn interpret(
    rows: &[Row],
    core: &mut Core,
    state: State,
    kind: EventKind,
    event: &Event,
) -> generated::Fired {
    for row in rows
        .iter()
        .filter(|r| r.from.contains(&state) && r.on.contains(&kind))
    {
        if row
            .guard
            .is_some_and(|g| !generated::eval_guard(core, g, event))
        {
            continue;
        }
        if !row.ignore {
            for &action in row.actions {
                generated::run_action(core, action, event);
            }
        }
        return generated::Fired {
            row: row.index,
            to: row.to.unwrap_or(state),
        };
    }
    // A mutated table may leave a cell empty: it then does nothing, which the checker judges.
    generated::Fired {
        row: u16::MAX,
        to: state,
    }
}
