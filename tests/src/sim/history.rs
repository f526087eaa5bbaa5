//! What a run saw, in order: the callers' view (calls issued, progress, outcomes, dropped
//! futures, stops), the harness's phases, and what the simulated servers noticed.
//!
//! Times are simulated time since the run started (tokio's paused clock). The order of the
//! entries is the order things happened on the run's single thread, so an entry before another
//! happened first even at the same instant.

use std::time::Duration;

/// What kind of call a caller made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallKind {
    /// `tools/call` of the simulated tool, which echoes the caller's token.
    Tool,
    /// `ping`.
    Ping,
    /// A notification (`Client::notify`).
    Notify,
    /// `tools/call` of the simulated task tool (`execution.taskSupport: "required"`), which
    /// the server runs as a task when the call carries `params.task`; it echoes the token too.
    Task,
}

/// How a call ended, as its caller saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// A result; for a tool call, the token the result carried.
    Ok {
        /// The token in the result (`None` for ping and notify).
        token: Option<String>,
    },
    /// `Error::Timeout`.
    Timeout {
        /// How long the call waited, as the error says.
        after: Duration,
    },
    /// `Error::Shutdown`.
    Shutdown,
    /// `Error::Unavailable`.
    Unavailable,
    /// `Error::ConnectionLost`, with its cause.
    ConnectionLost(String),
    /// `Error::SendFailed`.
    SendFailed,
    /// `Error::Backpressure`.
    Backpressure,
    /// `Error::Server`, with its message (the simulated server puts the token in it).
    Server {
        /// The error's message.
        message: String,
    },
    /// `Error::Cancelled`.
    Cancelled,
    /// `Error::TaskLost`.
    TaskLost,
    /// `Error::TaskCancelled`.
    TaskCancelled,
    /// `Error::TaskUnreachable`.
    TaskUnreachable,
    /// Any other error, rendered.
    Other(String),
}

impl Outcome {
    /// The outcome of a call that returned `result` (`token` read from a success).
    pub fn of<T>(result: mcp_runtime::Result<T>, token: impl FnOnce(T) -> Option<String>) -> Self {
        use mcp_runtime::Error;
        match result {
            Ok(v) => Outcome::Ok { token: token(v) },
            Err(Error::Timeout { after }) => Outcome::Timeout { after },
            Err(Error::Shutdown) => Outcome::Shutdown,
            Err(Error::Unavailable { .. }) => Outcome::Unavailable,
            Err(Error::ConnectionLost(f)) => Outcome::ConnectionLost(f.to_string()),
            Err(Error::SendFailed) => Outcome::SendFailed,
            Err(Error::Backpressure { .. }) => Outcome::Backpressure,
            Err(Error::Server { message, .. }) => Outcome::Server { message },
            Err(Error::Cancelled) => Outcome::Cancelled,
            Err(Error::TaskLost { .. }) => Outcome::TaskLost,
            Err(Error::TaskCancelled { .. }) => Outcome::TaskCancelled,
            Err(Error::TaskUnreachable { .. }) => Outcome::TaskUnreachable,
            Err(other) => Outcome::Other(other.to_string()),
        }
    }
}

/// One thing that happened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// The client's settings the properties of reconnection depend on (first in a history).
    Config {
        /// Backoff: first delay, cap, jitter in percent.
        backoff: (Duration, Duration, u32),
        /// How many times in a row an expired session is initialized again at once.
        max_session_reinits: u32,
        /// How long a session must stay ready for the backoff to start again.
        session_stable: Duration,
        /// Whether every connection fails the same way until the calm (and how).
        looping: Option<String>,
    },
    /// A caller is about to send a call (logged in the same poll that sends the command).
    Issued {
        /// The caller's number.
        call: usize,
        /// What it calls.
        kind: CallKind,
        /// The token the server must echo back to this caller only.
        token: String,
        /// The call's timeout (its own, or the client's default).
        timeout: Duration,
        /// With `reset_timeout_on_progress`: the total cap.
        cap: Option<Duration>,
        /// The call made after the faults stopped: it must succeed.
        recovery: bool,
        /// A task call's bound on the whole task (`RequestOptions::task_timeout`).
        task_timeout: Option<Duration>,
    },
    /// How a call was made, logged right after its [`Event::Issued`] (in the same poll, before
    /// the call's future runs): whether it waits for a ready connection
    /// (`RequestOptions::wait_for_ready`, or the client's default), and the connection state
    /// its caller read just before issuing it (the client's, or the group's snapshot of its
    /// server).
    CallMade {
        /// The caller.
        call: usize,
        /// Whether the call waits for a ready connection.
        wait: bool,
        /// The state the caller saw.
        seen: mcp_runtime::ConnState,
    },
    /// A group's `start` returned (fail-open: with this server in the group, whatever its first
    /// attempt did). Only in a group's run, once per server's history.
    GroupStarted,
    /// A task call's caller was told its task's status (`on_task_status`, called on the
    /// driver): the first one means the client read the task's creation.
    TaskStatus {
        /// The caller.
        call: usize,
        /// The task's id.
        task: String,
        /// The status told.
        state: String,
    },
    /// The harness listed the tools (the task support of each is known to the client from
    /// now on, so no call lists them by itself).
    Listed,
    /// A progress notification reached a caller's callback.
    Progress {
        /// The caller.
        call: usize,
        /// Its message (the simulated server puts the token of the request in it).
        message: Option<String>,
    },
    /// A caller's future completed.
    Outcome {
        /// The caller.
        call: usize,
        /// With what.
        outcome: Outcome,
    },
    /// A caller dropped its future (or its task was aborted) before it completed.
    Dropped {
        /// The caller.
        call: usize,
    },
    /// `Client::stop` is about to send its command.
    StopIssued {
        /// Which stop.
        stop: usize,
    },
    /// `Client::stop` returned.
    StopReturned {
        /// Which stop.
        stop: usize,
    },
    /// Every handle of the client was dropped (the client stops by itself).
    HandlesDropped,
    /// The faults stopped: every server from now on behaves.
    Calm {
        /// How long the client may take to be ready again.
        ready_within: Duration,
    },
    /// The client was seen ready after [`Event::Calm`].
    Ready,
    /// A quiet period after the faults stopped and the client came back, long enough for every
    /// frame the client owed to reach the server.
    Quiet,
    /// The client's state became `closed`.
    Closed,
    /// `Client::closed` returned after a stop: the driver and every transport ended.
    Finished,
    /// Tasks still alive on the run's runtime once everything should have ended.
    TasksLeft {
        /// How many.
        alive: usize,
    },
    /// A connection was opened (`conn` counts them) with this plan.
    Connect {
        /// The connection.
        conn: u64,
        /// Its plan, rendered.
        plan: String,
    },
    /// A simulated server received a request.
    ServerGot {
        /// The connection.
        conn: u64,
        /// The request's id.
        id: u64,
        /// Its method.
        method: String,
        /// The caller's token, for a tool call.
        token: Option<String>,
    },
    /// A simulated server's first answer to a request is in the stream (the client can read it).
    Answered {
        /// The connection.
        conn: u64,
        /// The request answered.
        id: u64,
    },
    /// A simulated server received `notifications/cancelled` for one of its requests.
    CancelGot {
        /// The connection.
        conn: u64,
        /// The request cancelled.
        id: u64,
    },
    /// A simulated server stopped listening (the client closed the stream, or it crashed).
    ConnEnded {
        /// The connection.
        conn: u64,
    },
    /// A simulated server created a task for a `tools/call` carrying `params.task`.
    TaskCreated {
        /// The connection.
        conn: u64,
        /// The `tools/call` request's id.
        id: u64,
        /// The task's id.
        task: String,
        /// The caller's token.
        token: String,
        /// How the task will end: "completed", "failed", "cancelled" (by the server), "lost"
        /// (the server forgets it).
        end: String,
    },
    /// A simulated server answered a task's request with -32602: it does not know the task.
    TaskUnknown {
        /// The connection.
        conn: u64,
        /// The task.
        task: String,
    },
    /// A simulated server took a `tasks/cancel` (not refused by an expiry).
    TaskCancelGot {
        /// The connection.
        conn: u64,
        /// The task it names.
        task: String,
    },
    /// The server restarted without its task store: the tasks created before connection
    /// `conn` are forgotten.
    TasksForgotten {
        /// The connection.
        conn: u64,
        /// How many tasks were forgotten.
        count: usize,
    },
    /// A simulated server crashed (closed its side of the stream).
    Crash {
        /// The connection.
        conn: u64,
    },
    /// A simulated server whose session expired refused a request (it never ran it).
    Refused {
        /// The connection.
        conn: u64,
        /// The request refused.
        id: u64,
    },
    /// A simulated server ended its link with a typed error, as an HTTP transport's link ends
    /// ("session expired", "stuck POST", "stream lost").
    LinkFault {
        /// The connection.
        conn: u64,
        /// Which fault.
        fault: String,
        /// For an expiry: the requests the error lists as refused (never run).
        refused: Vec<u64>,
    },
    /// The client's transport ended a connection's link (it reports `Down` now).
    LinkDown {
        /// The connection.
        conn: u64,
    },
    /// The client's connection changed state (from its transitions feed).
    Transition {
        /// The state before.
        from: mcp_runtime::ConnState,
        /// The state after.
        to: mcp_runtime::ConnState,
        /// Whether the attempt ended because the server ended the session.
        expired: bool,
        /// Into backoff: the delay until the next attempt, as the driver says.
        retry_in: Option<Duration>,
    },
    /// The transitions feed lost this many transitions (it fell behind).
    TransitionsLost {
        /// How many.
        lost: u64,
    },
    /// A simulated server saw the client break the protocol.
    ServerSaw {
        /// The connection.
        conn: u64,
        /// What it saw.
        what: String,
    },
    /// The runtime logged an error (`tracing` at level ERROR).
    RuntimeError {
        /// The event's target and message.
        message: String,
    },
    /// The recorded trace was replayed into a fresh machine (`mcp_runtime::trace::replay`).
    TraceReplayed {
        /// Why it did not replay, if it did not.
        error: Option<String>,
    },
    /// The run ended.
    End,
}

/// One entry: when, and what.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// Simulated time since the run started.
    pub at: Duration,
    /// What happened.
    pub event: Event,
}

/// Renders entries one a line, numbered from `first` (for a failing seed's report).
pub fn render(entries: &[Entry], first: usize) -> String {
    let mut s = String::new();
    for (i, e) in entries.iter().enumerate() {
        s.push_str(&format!(
            "{:6} {:>9.3} ms  {:?}\n",
            first + i,
            e.at.as_secs_f64() * 1e3,
            e.event
        ));
    }
    s
}

static LIVE: std::sync::LazyLock<bool> =
    std::sync::LazyLock::new(|| std::env::var_os("SIM_LIVE").is_some());

/// The run's log, shared by the callers, the simulated servers and the harness (all on one
/// thread; the lock is never held across an await).
#[derive(Clone)]
pub struct Log {
    inner: std::sync::Arc<std::sync::Mutex<Inner>>,
}

struct Inner {
    start: tokio::time::Instant,
    entries: Vec<Entry>,
    /// Every request id any simulated server received, across connections.
    ids: std::collections::BTreeSet<u64>,
}

impl Log {
    /// An empty log whose time zero is now (on tokio's clock).
    pub fn new() -> Self {
        Log {
            inner: std::sync::Arc::new(std::sync::Mutex::new(Inner {
                start: tokio::time::Instant::now(),
                entries: Vec::new(),
                ids: std::collections::BTreeSet::new(),
            })),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Appends `event`, stamped with the simulated time now (and prints it at once when
    /// `SIM_LIVE` is set: to see where a run that never ends got stuck).
    pub fn push(&self, event: Event) {
        let mut inner = self.lock();
        let at = tokio::time::Instant::now().saturating_duration_since(inner.start);
        if *LIVE {
            eprintln!("{:6} {at:>12?}  {event:?}", inner.entries.len());
        }
        inner.entries.push(Entry { at, event });
    }

    /// Simulated time since the run started.
    pub fn now(&self) -> Duration {
        tokio::time::Instant::now().saturating_duration_since(self.lock().start)
    }

    /// Notes that a server received request `id`; false if some server already had it.
    pub fn first_sight_of(&self, id: u64) -> bool {
        self.lock().ids.insert(id)
    }

    /// The entries so far.
    pub fn entries(&self) -> Vec<Entry> {
        self.lock().entries.clone()
    }
}

impl Default for Log {
    fn default() -> Self {
        Self::new()
    }
}
