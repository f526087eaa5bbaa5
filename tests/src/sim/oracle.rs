//! The properties checked on a run's history: what the model checker proves of the machine,
//! restated on what the callers of the real runtime saw.
//!
//! - every call future that was not dropped completes, exactly once;
//! - no call completes later than its deadline (its timeout from when it was issued, moved by
//!   each progress when `reset_timeout_on_progress` asked for it, never past its cap), give or
//!   take [`Bounds::slack`]; a timeout never fires before that deadline and says how long the
//!   call waited; a notify is answered at once;
//! - an answer reaches the caller that asked: a result or a server error carries the caller's
//!   own token (tokens are unique per call, so a late answer to an ended call, or an answer to
//!   another call, can never pass); progress carries it too and never follows the answer;
//! - a stop answers every call issued before it at once, returns within [`Bounds::stop`], and
//!   every call issued after it fails with `Shutdown` at once;
//! - after the faults stop, the client is ready again within the bound the run states and a
//!   call then succeeds;
//! - the client is closed within [`Bounds::stop`] of its stop (or of its last handle dropped),
//!   `Client::closed` returns after a stop, and no task is left on the runtime;
//! - what reaches the server is what the callers were told: a request the server got whose call
//!   then ended early (timed out, or its future dropped), with no answer of the server in the
//!   stream by that instant, is followed by `notifications/cancelled` on its connection, if that
//!   connection lived through the quiet period after the faults stopped (a connection that
//!   crashed or closed earlier may take owed frames with it; an answer in the stream by then may
//!   have completed the call in the client first, which then owes no cancel, though its caller
//!   never saw the answer: the driver reads the transport before its callers' commands); a call
//!   that was answered is never cancelled on the wire; a call failed as not sent (unavailable,
//!   busy, refused) never reached the server;
//! - a task call (the server ran it as a task: its caller was told the task's status) is
//!   answered once, with its own result, or the error the server chose for it (carrying its
//!   token), or `TaskLost` (only once a server said it did not know the task),
//!   `TaskCancelled` (only when the server cancelled it), `TaskUnreachable`, `Timeout` (only
//!   when the caller bounded the task, and not before that bound), `Shutdown` (only after a
//!   stop): never `ConnectionLost`, whatever happened to the connections meanwhile (a task
//!   lives on the server, and survives reconnects), nor any other error; until its task is
//!   created it is a plain call; the client asks the server to cancel a task (`tasks/cancel`)
//!   at most once, and only once its caller dropped the call or its bound passed (the servers
//!   check that a task's requests are never cancelled with `notifications/cancelled`);
//! - the servers saw no protocol violation, the runtime logged no error, the trace replays;
//! - links that end as an HTTP transport's do (a session expired, a stuck POST, a lost stream)
//!   and the attempts after them hold the properties of [`super::reconnect`]: a refused request
//!   sent again at most once, a call held behind a stuck POST never told "timed out" after its
//!   link failed, the re-initialization budget, and a backoff sequence that restarts only
//!   after a session proved itself.

use std::collections::BTreeMap;
use std::time::Duration;

use mcp_runtime::ConnState;

use super::history::{CallKind, Entry, Event, Outcome};

/// Time bounds the oracles allow.
#[derive(Clone, Copy, Debug)]
pub struct Bounds {
    /// How late an answer may be past its deadline. None: on the paused clock time moves in
    /// whole milliseconds (tokio's timer wheel rounds a deadline up to the next one), every
    /// call starts on one and every timeout in a simulation is a whole number of them, so a
    /// deadline is met exactly.
    pub slack: Duration,
    /// How long `stop` may take, and the client to be closed after its stop or its last handle
    /// dropped: the machine's closing bound (100 ms).
    pub stop: Duration,
    /// How long the stop the harness calls may take to return, when not [`Bounds::stop`]: a
    /// group's stop also waits until every server's transports ended, which has no such bound
    /// (the group's oracle judges it against its servers instead).
    pub stop_returns: Option<Duration>,
}

impl Default for Bounds {
    fn default() -> Self {
        Bounds {
            slack: Duration::ZERO,
            stop: Duration::from_millis(100),
            stop_returns: None,
        }
    }
}

/// A property that does not hold, with the entry where it was seen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// The index of the entry in the history (the history's length for what is missing at
    /// the end).
    pub index: usize,
    /// What is wrong.
    pub what: String,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "entry {}: {}", self.index, self.what)
    }
}

#[derive(Debug)]
struct Call {
    index: usize,
    at: Duration,
    kind: CallKind,
    token: String,
    timeout: Duration,
    cap: Option<Duration>,
    recovery: bool,
    /// The deadline as moved by the progress seen so far.
    deadline: Duration,
    /// The stops issued before this call, if any: it must fail with `Shutdown` at once.
    after_stop: bool,
    outcome: Option<(usize, Duration)>,
    dropped: bool,
    /// When the call ended early (timed out, or its future dropped before an answer).
    early: Option<Duration>,
    /// What it completed with.
    completed: Option<Outcome>,
    /// A task call's bound on the whole task.
    task_timeout: Option<Duration>,
    /// A task call whose task was created (its caller told the status): entry, when, task id.
    created: Option<(usize, Duration, String)>,
    /// Whether it waits for a ready connection ([`Event::CallMade`]).
    wait: bool,
    /// When its caller saw the connection in backoff, and it was made before the end of that
    /// backoff (as the transition into it said): that end. The driver is then certainly in
    /// backoff when it takes the call (nothing but a stop leaves backoff before its delay).
    in_backoff: Option<Duration>,
}

/// What the servers said of the tasks, for the properties of task calls.
#[derive(Default)]
struct TasksSeen {
    /// Each task created: its token and how the server means it to end.
    created: BTreeMap<String, (String, String)>,
    /// Tasks a server said it did not know (-32602).
    unknown: std::collections::BTreeSet<String>,
    /// `tasks/cancel` taken: entry, when, connection, task.
    cancels: Vec<(usize, Duration, u64, String)>,
}

/// Checks every property on `history`; empty when all hold.
pub fn check(history: &[Entry], bounds: &Bounds) -> Vec<Violation> {
    let mut v = Vec::new();
    let mut bad = |index: usize, what: String| v.push(Violation { index, what });
    let mut calls: BTreeMap<usize, Call> = BTreeMap::new();
    let mut stops: BTreeMap<usize, (usize, Duration, bool)> = BTreeMap::new();
    let mut first_stop: Option<Duration> = None;
    let mut ending: Option<(usize, Duration)> = None;
    let mut calm: Option<(usize, Duration, Duration)> = None;
    let mut ready_seen = false;
    let mut closed_seen = false;
    let mut ended = false;
    let mut finished = false;
    let mut wire = Wire::default();
    let mut seen = TasksSeen::default();
    // The end of the last backoff the transitions feed told of.
    let mut backoff_end: Option<Duration> = None;
    for (i, Entry { at, event }) in history.iter().enumerate() {
        let at = *at;
        match event {
            Event::Issued {
                call,
                kind,
                token,
                timeout,
                cap,
                recovery,
                task_timeout,
            } => {
                let first = cap.map_or(*timeout, |c| c.min(*timeout));
                let c = Call {
                    index: i,
                    at,
                    kind: *kind,
                    token: token.clone(),
                    timeout: *timeout,
                    cap: *cap,
                    recovery: *recovery,
                    deadline: at + first,
                    after_stop: first_stop.is_some(),
                    outcome: None,
                    dropped: false,
                    early: None,
                    completed: None,
                    task_timeout: *task_timeout,
                    created: None,
                    wait: false,
                    in_backoff: None,
                };
                if calls.insert(*call, c).is_some() {
                    bad(i, format!("call {call} issued twice"));
                }
            }
            Event::CallMade { call, wait, seen } => {
                let Some(c) = calls.get_mut(call) else {
                    bad(i, format!("call {call} made, never issued"));
                    continue;
                };
                c.wait = *wait;
                c.in_backoff = backoff_end
                    .filter(|end| *seen == ConnState::Backoff && c.at < *end && at == c.at);
            }
            Event::Transition {
                to: ConnState::Backoff,
                retry_in: Some(delay),
                ..
            } => backoff_end = Some(at + *delay),
            Event::Progress { call, message } => {
                let Some(c) = calls.get_mut(call) else {
                    bad(i, format!("progress for call {call}, never issued"));
                    continue;
                };
                if c.outcome.is_some() {
                    bad(i, format!("progress for call {call} after its answer"));
                }
                if message.as_deref() != Some(c.token.as_str()) {
                    bad(
                        i,
                        format!(
                            "progress for call {call} carries {message:?}, not its token {}",
                            c.token
                        ),
                    );
                }
                match c.cap {
                    Some(cap) => c.deadline = (at + c.timeout).min(c.at + cap),
                    None => bad(i, format!("progress for call {call}, which asked for none")),
                }
            }
            Event::Outcome { call, outcome } => {
                let Some(c) = calls.get_mut(call) else {
                    bad(i, format!("an outcome for call {call}, never issued"));
                    continue;
                };
                if c.outcome.is_some() || c.dropped {
                    bad(
                        i,
                        format!("call {call} completed twice (or after it was dropped)"),
                    );
                }
                c.outcome = Some((i, at));
                if matches!(outcome, Outcome::Timeout { .. }) {
                    c.early = Some(at);
                }
                c.completed = Some(outcome.clone());
                check_outcome(i, at, *call, c, outcome, bounds, &mut bad);
                check_wait(i, at, *call, c, outcome, &mut bad);
                check_task_outcome(i, at, *call, c, outcome, first_stop, &seen, &mut bad);
            }
            Event::TaskStatus { call, task, .. } => {
                let Some(c) = calls.get_mut(call) else {
                    bad(i, format!("a task status for call {call}, never issued"));
                    continue;
                };
                if c.kind != CallKind::Task {
                    bad(i, format!("a task status for call {call}, not a task call"));
                }
                if c.outcome.is_some() {
                    bad(i, format!("a task status for call {call} after its answer"));
                }
                match &c.created {
                    Some((_, _, first)) if first != task => bad(
                        i,
                        format!("call {call} told of task {task}, after task {first}"),
                    ),
                    Some(_) => {}
                    None => c.created = Some((i, at, task.clone())),
                }
            }
            Event::TaskCreated {
                task, token, end, ..
            } => {
                seen.created
                    .insert(task.clone(), (token.clone(), end.clone()));
            }
            Event::TaskUnknown { task, .. } => {
                seen.unknown.insert(task.clone());
            }
            Event::TaskCancelGot { conn, task } => {
                seen.cancels.push((i, at, *conn, task.clone()));
            }
            Event::Dropped { call } => match calls.get_mut(call) {
                Some(c) if c.outcome.is_none() && !c.dropped => {
                    c.dropped = true;
                    c.early = Some(at);
                }
                Some(_) => bad(i, format!("call {call} dropped after it completed")),
                None => bad(i, format!("call {call} dropped, never issued")),
            },
            Event::StopIssued { stop } => {
                first_stop.get_or_insert(at);
                ending.get_or_insert((i, at));
                stops.insert(*stop, (i, at, false));
            }
            Event::StopReturned { stop } => match stops.get_mut(stop) {
                Some((_, issued, returned)) => {
                    *returned = true;
                    let bound = bounds.stop_returns.unwrap_or(bounds.stop);
                    if at > *issued + bound + bounds.slack {
                        bad(
                            i,
                            format!("stop {stop} took {:?} (bound {bound:?})", at - *issued),
                        );
                    }
                }
                None => bad(i, format!("stop {stop} returned, never issued")),
            },
            Event::HandlesDropped => {
                ending.get_or_insert((i, at));
            }
            Event::Calm { ready_within } => calm = Some((i, at, *ready_within)),
            Event::Ready => {
                ready_seen = true;
                match calm {
                    Some((_, since, within)) if at > since + within + bounds.slack => bad(
                        i,
                        format!(
                            "ready {:?} after the faults stopped (bound {within:?})",
                            at - since
                        ),
                    ),
                    Some(_) => {}
                    None => bad(i, "ready logged without calm".to_owned()),
                }
            }
            Event::Closed => {
                closed_seen = true;
                match ending {
                    Some((_, since)) if at > since + bounds.stop + bounds.slack => bad(
                        i,
                        format!(
                            "closed {:?} after the stop or drop (bound {:?})",
                            at - since,
                            bounds.stop
                        ),
                    ),
                    Some(_) => {}
                    None => bad(i, "closed without a stop or a drop".to_owned()),
                }
            }
            Event::TasksLeft { alive } => {
                if *alive != 0 {
                    bad(
                        i,
                        format!("{alive} tasks still alive after the client closed"),
                    );
                }
            }
            Event::ServerSaw { conn, what } => bad(i, format!("server {conn} saw: {what}")),
            Event::RuntimeError { message } => bad(i, format!("the runtime logged: {message}")),
            Event::TraceReplayed { error: Some(e) } => {
                bad(i, format!("the trace does not replay: {e}"))
            }
            Event::Finished => finished = true,
            Event::End => ended = true,
            Event::ServerGot {
                conn,
                id,
                token: Some(token),
                ..
            } => wire.got.push((i, at, *conn, *id, token.clone())),
            Event::Answered { conn, id } => {
                wire.answered.entry((*conn, *id)).or_insert(at);
            }
            Event::CancelGot { conn, id } => {
                wire.cancels.entry((*conn, *id)).or_insert(at);
            }
            Event::ConnEnded { conn } => {
                wire.ended.entry(*conn).or_insert(i);
            }
            Event::Quiet => wire.quiet = Some(i),
            Event::Refused { conn, id } => {
                wire.refused.insert((*conn, *id));
            }
            Event::TransitionsLost { lost } => bad(
                i,
                format!("the transitions feed lost {lost} transitions: the run cannot be judged"),
            ),
            Event::TraceReplayed { error: None }
            | Event::Listed
            | Event::TasksForgotten { .. }
            | Event::Config { .. }
            | Event::GroupStarted
            | Event::Connect { .. }
            | Event::ServerGot { token: None, .. }
            | Event::Crash { .. }
            | Event::LinkFault { .. }
            | Event::LinkDown { .. }
            | Event::Transition { .. } => {}
        }
    }
    check_wire(&wire, &calls, &mut bad);
    check_task_cancels(&seen, &calls, history, &mut bad);
    super::reconnect::check(history, &mut bad);
    let end = history.len();
    // Stops: every call in flight at the first stop (issued before it, neither answered nor
    // dropped before it) is answered at the stop's instant.
    if let Some((stop_index, stop_at)) = stops.values().map(|s| (s.0, s.1)).min() {
        for (n, c) in &calls {
            match c.outcome {
                Some((i, at)) if c.index < stop_index && i > stop_index && at > stop_at => bad(
                    i,
                    format!("call {n}, in flight at the stop ({stop_at:?}), answered at {at:?}"),
                ),
                _ => {}
            }
        }
    }
    for (stop, (i, _, returned)) in &stops {
        if !returned {
            bad(*i, format!("stop {stop} never returned"));
        }
    }
    for (n, c) in &calls {
        if c.outcome.is_none() && !c.dropped {
            bad(c.index, format!("call {n} ({:?}) never completed", c.kind));
        }
    }
    if let Some((i, _, _)) = calm
        && !ready_seen
    {
        bad(
            i,
            "the client was not ready again after the faults stopped".to_owned(),
        );
    }
    if ending.is_some() && !closed_seen {
        bad(end, "the client never closed".to_owned());
    }
    if !stops.is_empty() && !finished {
        bad(
            end,
            "Client::closed never returned after the stop".to_owned(),
        );
    }
    if !ended {
        bad(end, "the run did not end".to_owned());
    }
    v
}

/// What the simulated servers got, for the properties of the wire.
#[derive(Default)]
struct Wire {
    /// Tool calls received: entry, when, connection, request id, token.
    got: Vec<(usize, Duration, u64, u64, String)>,
    /// When each request's first answer went into the stream, by (connection, id).
    answered: BTreeMap<(u64, u64), Duration>,
    /// Cancels received, by (connection, request id): when the first came.
    cancels: BTreeMap<(u64, u64), Duration>,
    /// The entry where each connection's server stopped listening.
    ended: BTreeMap<u64, usize>,
    /// The entry where the quiet period after the faults ended.
    quiet: Option<usize>,
    /// Requests refused by a server whose session expired (they never ran), by (connection,
    /// id).
    refused: std::collections::BTreeSet<(u64, u64)>,
}

fn check_wire(wire: &Wire, calls: &BTreeMap<usize, Call>, bad: &mut impl FnMut(usize, String)) {
    let by_token: BTreeMap<&str, (usize, &Call)> = calls
        .iter()
        .map(|(n, c)| (c.token.as_str(), (*n, c)))
        .collect();
    for (i, got_at, conn, id, token) in &wire.got {
        let Some((n, c)) = by_token.get(token.as_str()) else {
            bad(
                *i,
                format!("server {conn} got request {id} with a token nobody sent"),
            );
            continue;
        };
        let cancelled = wire.cancels.get(&(*conn, *id));
        match (&c.completed, c.early) {
            (Some(Outcome::Ok { .. } | Outcome::Server { .. }), _) if cancelled.is_some() => bad(
                *i,
                format!("request {id} of call {n} was cancelled on the wire, though answered"),
            ),
            // A request refused by an expiry never ran: sent again on the new session, it may
            // fail there as not sent.
            (Some(o @ (Outcome::Unavailable | Outcome::Backpressure | Outcome::SendFailed)), _)
                if !wire.refused.contains(&(*conn, *id)) =>
            {
                bad(
                    *i,
                    format!(
                        "call {n} failed as not sent ({o:?}), yet server {conn} got it as {id}"
                    ),
                )
            }
            (_, Some(early)) => {
                let answered_first = wire
                    .answered
                    .get(&(*conn, *id))
                    .is_some_and(|a| *a <= early);
                let lived = !answered_first
                    && wire
                        .quiet
                        .is_some_and(|q| wire.ended.get(conn).is_none_or(|end| *end > q));
                if lived && cancelled.is_none() {
                    bad(
                        *i,
                        format!(
                            "call {n} ended early at {early:?} and server {conn} got its request \
                             {id} (at {got_at:?}), but no notifications/cancelled came, though \
                             the connection lived through the quiet period"
                        ),
                    );
                }
            }
            _ => {}
        }
    }
}

fn check_outcome(
    i: usize,
    at: Duration,
    n: usize,
    c: &Call,
    outcome: &Outcome,
    bounds: &Bounds,
    bad: &mut impl FnMut(usize, String),
) {
    // A created task's request timeout no longer applies: only its bound on the whole task
    // (from when it was issued; or its request timeout, if the task came after that bound).
    let deadline = match (&c.created, c.task_timeout) {
        (None, _) => Some(c.deadline),
        (Some(_), Some(bound)) => Some(c.at + bound.max(c.timeout)),
        (Some(_), None) => None,
    };
    if let Some(deadline) = deadline
        && at > deadline + bounds.slack
    {
        bad(
            i,
            format!(
                "call {n} answered {:?} past its deadline ({:?} after it was issued)",
                at - deadline,
                at - c.at
            ),
        );
    }
    if c.kind == CallKind::Notify && at != c.at {
        bad(
            i,
            format!("notify {n} answered {:?} after it was sent", at - c.at),
        );
    }
    if c.after_stop && (*outcome != Outcome::Shutdown || at != c.at) {
        bad(
            i,
            format!(
                "call {n}, issued after a stop, got {outcome:?} {:?} later",
                at - c.at
            ),
        );
    }
    match outcome {
        Outcome::Ok { token } => {
            let expected =
                matches!(c.kind, CallKind::Tool | CallKind::Task).then(|| c.token.clone());
            if *token != expected {
                bad(
                    i,
                    format!("call {n} got the result carrying {token:?}, expected {expected:?}"),
                );
            }
        }
        Outcome::Server { message }
            if !message.ends_with(&format!(" {}", c.token))
                && c.created
                    .as_ref()
                    .is_none_or(|(_, _, task)| *message != format!("unknown task {task}")) =>
        {
            bad(
                i,
                format!("call {n} got the server error {message:?}, not its own"),
            );
        }
        Outcome::Timeout { after } if c.created.is_some() => {
            match c.task_timeout {
                None => bad(
                    i,
                    format!(
                        "task call {n} timed out {:?} after it was issued, though it set no \
                         task_timeout (a task's request timeout ends when the task is created)",
                        at - c.at
                    ),
                ),
                Some(bound) if at < c.at + bound => bad(
                    i,
                    format!(
                        "task call {n} timed out {:?} before its task_timeout ({bound:?})",
                        c.at + bound - at
                    ),
                ),
                Some(_) => {}
            }
            if *after != at - c.at {
                bad(
                    i,
                    format!(
                        "call {n} timed out after {:?} but says {after:?}",
                        at - c.at
                    ),
                );
            }
        }
        Outcome::Timeout { after } => {
            if at < c.deadline {
                bad(
                    i,
                    format!(
                        "call {n} timed out {:?} before its deadline",
                        c.deadline - at
                    ),
                );
            }
            if *after != at - c.at {
                bad(
                    i,
                    format!(
                        "call {n} timed out after {:?} but says {after:?}",
                        at - c.at
                    ),
                );
            }
        }
        _ => {}
    }
    if c.recovery && !matches!(outcome, Outcome::Ok { .. }) {
        bad(
            i,
            format!("call {n}, made after the faults stopped, failed: {outcome:?}"),
        );
    }
}

/// Waiting for ready ([`Event::CallMade`]): a call that waits is never answered `Unavailable`
/// (a simulated attempt never fails for good: no program is missing, no permission denied;
/// and no run has 1024 calls waiting at once); made while its connection was certainly in
/// backoff, it is not answered at that instant (but by a stop), and one that does not wait is
/// answered `Unavailable` at that instant (or `Shutdown`, by a stop). Where the state is not
/// certain (starting, initializing: the handshake may end before the driver takes the call),
/// only the first holds.
fn check_wait(
    i: usize,
    at: Duration,
    n: usize,
    c: &Call,
    outcome: &Outcome,
    bad: &mut impl FnMut(usize, String),
) {
    if c.wait && *outcome == Outcome::Unavailable {
        bad(
            i,
            format!(
                "call {n} waits for ready, yet was answered Unavailable {:?} after it was made \
                 (no attempt of a simulated server fails for good)",
                at - c.at
            ),
        );
    }
    let Some(end) = c.in_backoff else { return };
    let at_once = at == c.at;
    match (c.wait, outcome) {
        (_, Outcome::Shutdown) if at_once => {}
        (true, _) if at_once => bad(
            i,
            format!(
                "call {n} waits for ready, made in backoff (until {end:?}), yet was answered \
                 {outcome:?} at once"
            ),
        ),
        (false, Outcome::Unavailable) if at_once => {}
        (false, _) => bad(
            i,
            format!(
                "call {n} does not wait for ready, made in backoff (until {end:?}), yet was \
                 answered {outcome:?} {:?} after it was made (Unavailable at once expected)",
                at - c.at
            ),
        ),
        _ => {}
    }
}

/// The errors a task call may be answered with, beyond those of [`check_outcome`]: once its
/// task is created, never `ConnectionLost` (the task lives on the server and survives
/// reconnects), nor an error of a call never sent; a task's errors only for a task call whose
/// task was created, and only when the server gave cause.
#[allow(clippy::too_many_arguments)]
fn check_task_outcome(
    i: usize,
    at: Duration,
    n: usize,
    c: &Call,
    outcome: &Outcome,
    first_stop: Option<Duration>,
    seen: &TasksSeen,
    bad: &mut impl FnMut(usize, String),
) {
    let task_error = matches!(
        outcome,
        Outcome::TaskLost | Outcome::TaskCancelled | Outcome::TaskUnreachable
    );
    let Some((_, created_at, task)) = &c.created else {
        if task_error {
            bad(
                i,
                format!("call {n} got {outcome:?}, though no task of it was ever created"),
            );
        }
        return;
    };
    match outcome {
        Outcome::ConnectionLost(cause) => bad(
            i,
            format!(
                "task call {n} was answered ConnectionLost ({cause}) at {at:?}, though its task \
                 {task} was created at {created_at:?}: a task lives on the server and survives \
                 a lost connection (the client must poll it on the next one)"
            ),
        ),
        Outcome::Unavailable | Outcome::SendFailed | Outcome::Backpressure => bad(
            i,
            format!(
                "task call {n} was answered {outcome:?} at {at:?}, an error of a call never \
                 sent, though its task {task} was created at {created_at:?}"
            ),
        ),
        Outcome::Cancelled => bad(
            i,
            format!("task call {n} was answered Cancelled, though its caller never cancelled"),
        ),
        Outcome::Shutdown if first_stop.is_none_or(|stop| stop > at) => bad(
            i,
            format!("task call {n} was answered Shutdown at {at:?}, with no stop before"),
        ),
        Outcome::TaskLost if !seen.unknown.contains(task) => bad(
            i,
            format!(
                "task call {n} was answered TaskLost, though no server said it did not know \
                 task {task}"
            ),
        ),
        Outcome::TaskCancelled
            if seen.created.get(task).map(|(_, end)| end.as_str()) != Some("cancelled") =>
        {
            bad(
                i,
                format!(
                    "task call {n} was answered TaskCancelled, though the server never \
                     cancelled task {task}"
                ),
            )
        }
        Outcome::Other(what) => bad(i, format!("task call {n} was answered: {what}")),
        _ => {}
    }
}

/// `tasks/cancel` is sent at most once per task, and only for a task whose caller dropped the
/// call (before) or whose bound on the whole task passed.
fn check_task_cancels(
    seen: &TasksSeen,
    calls: &BTreeMap<usize, Call>,
    history: &[Entry],
    bad: &mut impl FnMut(usize, String),
) {
    let by_token: BTreeMap<&str, (usize, &Call)> = calls
        .iter()
        .map(|(n, c)| (c.token.as_str(), (*n, c)))
        .collect();
    let mut cancelled: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, at, conn, task) in &seen.cancels {
        if let Some(first) = cancelled.insert(task.as_str(), *i) {
            bad(
                *i,
                format!(
                    "task {task} cancelled a second time (tasks/cancel on connection {conn}; the \
                     first at entry {first}): the server is asked once"
                ),
            );
        }
        let Some((n, c)) = seen
            .created
            .get(task)
            .and_then(|(token, _)| by_token.get(token.as_str()))
        else {
            bad(
                *i,
                format!("tasks/cancel of task {task}, which no call's server created"),
            );
            continue;
        };
        let dropped_before = history[..*i]
            .iter()
            .any(|e| matches!(&e.event, Event::Dropped { call } if call == n));
        let bound_passed = c.task_timeout.is_some_and(|b| *at >= c.at + b);
        if !dropped_before && !bound_passed {
            bad(
                *i,
                format!(
                    "tasks/cancel of task {task} (call {n}) at {at:?}, though its caller neither \
                     dropped the call nor bounded the task by then (the client cancels a task \
                     only when its caller asks)"
                ),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn e(at: u64, event: Event) -> Entry {
        Entry { at: ms(at), event }
    }

    fn issued(call: usize, timeout: u64, cap: Option<u64>) -> Event {
        Event::Issued {
            call,
            kind: CallKind::Tool,
            token: format!("t{call}"),
            timeout: ms(timeout),
            cap: cap.map(ms),
            recovery: false,
            task_timeout: None,
        }
    }

    fn ok(call: usize, token: &str) -> Event {
        Event::Outcome {
            call,
            outcome: Outcome::Ok {
                token: Some(token.to_owned()),
            },
        }
    }

    fn stopped() -> Vec<Entry> {
        vec![
            e(5_000, Event::StopIssued { stop: 0 }),
            e(5_000, Event::StopReturned { stop: 0 }),
            e(5_001, Event::Closed),
            e(5_050, Event::Finished),
            e(5_100, Event::TasksLeft { alive: 0 }),
            e(5_100, Event::End),
        ]
    }

    fn run(mut entries: Vec<Entry>) -> Vec<Violation> {
        entries.extend(stopped());
        check(&entries, &Bounds::default())
    }

    fn timeout(call: usize, after: u64) -> Event {
        Event::Outcome {
            call,
            outcome: Outcome::Timeout { after: ms(after) },
        }
    }

    fn progress(call: usize) -> Event {
        Event::Progress {
            call,
            message: Some(format!("t{call}")),
        }
    }

    fn whats(v: &[Violation]) -> String {
        v.iter().map(|v| format!("{v}\n")).collect()
    }

    #[test]
    fn a_good_history_passes() {
        let v = run(vec![
            e(0, issued(0, 100, None)),
            e(10, issued(1, 100, Some(300))),
            e(50, progress(1)),
            e(60, ok(0, "t0")),
            e(150, progress(1)),
            e(250, timeout(1, 240)),
        ]);
        assert_eq!(v, vec![], "{}", whats(&v));
    }

    #[test]
    fn a_late_answer_is_caught() {
        let v = run(vec![e(0, issued(0, 100, None)), e(101, ok(0, "t0"))]);
        assert!(whats(&v).contains("past its deadline"), "{}", whats(&v));
        // Progress moves the deadline only when the call asked for the reset.
        let v = run(vec![
            e(0, issued(0, 100, Some(150))),
            e(90, progress(0)),
            e(151, ok(0, "t0")),
        ]);
        assert!(whats(&v).contains("past its deadline"), "{}", whats(&v));
    }

    #[test]
    fn an_answer_to_another_caller_is_caught() {
        let v = run(vec![
            e(0, issued(0, 100, None)),
            e(0, issued(1, 100, None)),
            e(5, ok(0, "t1")),
            e(6, ok(1, "t1")),
        ]);
        assert!(
            whats(&v).contains("call 0 got the result carrying"),
            "{}",
            whats(&v)
        );
    }

    #[test]
    fn progress_after_the_answer_or_to_another_caller_is_caught() {
        let v = run(vec![
            e(0, issued(0, 100, Some(200))),
            e(5, ok(0, "t0")),
            e(6, progress(0)),
        ]);
        assert!(whats(&v).contains("after its answer"), "{}", whats(&v));
        let v = run(vec![
            e(0, issued(0, 100, Some(200))),
            e(
                1,
                Event::Progress {
                    call: 0,
                    message: Some("t9".into()),
                },
            ),
            e(5, ok(0, "t0")),
        ]);
        assert!(whats(&v).contains("not its token"), "{}", whats(&v));
    }

    #[test]
    fn an_early_or_mislabelled_timeout_is_caught() {
        let v = run(vec![e(0, issued(0, 100, None)), e(99, timeout(0, 99))]);
        assert!(whats(&v).contains("before its deadline"), "{}", whats(&v));
        let v = run(vec![e(0, issued(0, 100, None)), e(100, timeout(0, 90))]);
        assert!(whats(&v).contains("says"), "{}", whats(&v));
    }

    #[test]
    fn a_call_never_answered_is_caught_but_a_dropped_one_is_not() {
        let v = run(vec![e(0, issued(0, 100, None))]);
        assert!(whats(&v).contains("never completed"), "{}", whats(&v));
        let v = run(vec![
            e(0, issued(0, 100, None)),
            e(3, Event::Dropped { call: 0 }),
        ]);
        assert_eq!(v, vec![], "{}", whats(&v));
    }

    #[test]
    fn stop_must_answer_calls_at_once_and_return_and_leave_no_task() {
        let v = check(
            &[
                e(0, issued(0, 500, None)),
                e(200, Event::StopIssued { stop: 0 }),
                e(201, ok(0, "t0")),
                e(250, issued(1, 500, None)),
                e(
                    260,
                    Event::Outcome {
                        call: 1,
                        outcome: Outcome::Shutdown,
                    },
                ),
                e(400, Event::Closed),
                e(400, Event::TasksLeft { alive: 2 }),
                e(400, Event::End),
            ],
            &Bounds::default(),
        );
        let w = whats(&v);
        assert!(w.contains("in flight at the stop"), "{w}");
        assert!(w.contains("issued after a stop"), "{w}");
        assert!(w.contains("stop 0 never returned"), "{w}");
        assert!(w.contains("2 tasks still alive"), "{w}");
    }

    /// Task call `call` (token `t{call}`, request timeout 100 ms), its task `task{call}`
    /// created by the server at 1 ms (to end as `end`) and told its caller at 2 ms.
    fn task_call(call: usize, task_timeout: Option<u64>, end: &str) -> Vec<Entry> {
        vec![
            e(
                0,
                Event::Issued {
                    call,
                    kind: CallKind::Task,
                    token: format!("t{call}"),
                    timeout: ms(100),
                    cap: None,
                    recovery: false,
                    task_timeout: task_timeout.map(ms),
                },
            ),
            e(
                1,
                Event::TaskCreated {
                    conn: 0,
                    id: 7,
                    task: format!("task{call}"),
                    token: format!("t{call}"),
                    end: end.to_owned(),
                },
            ),
            e(
                2,
                Event::TaskStatus {
                    call,
                    task: format!("task{call}"),
                    state: "working".to_owned(),
                },
            ),
        ]
    }

    fn outcome(at: u64, call: usize, outcome: Outcome) -> Entry {
        e(at, Event::Outcome { call, outcome })
    }

    #[test]
    fn a_task_outlives_its_deadline_and_its_connection_but_is_never_told_connection_lost() {
        // Created, its request timeout no longer applies: answered much later, it passes.
        let mut h = task_call(0, None, "completed");
        h.push(e(3_000, ok(0, "t0")));
        let v = run(h);
        assert_eq!(v, vec![], "{}", whats(&v));
        // Never ConnectionLost once created.
        let mut h = task_call(0, None, "completed");
        h.push(outcome(50, 0, Outcome::ConnectionLost("closed".into())));
        let w = whats(&run(h));
        assert!(w.contains("survives a lost connection"), "{w}");
        // Before its task is created it is a plain call: ConnectionLost is its answer then.
        let mut h = task_call(0, None, "completed");
        h.truncate(2);
        h.push(outcome(50, 0, Outcome::ConnectionLost("closed".into())));
        let v = run(h);
        assert_eq!(v, vec![], "{}", whats(&v));
    }

    #[test]
    fn a_task_error_needs_its_cause_and_a_timeout_its_bound() {
        let mut h = task_call(0, None, "completed");
        h.push(outcome(50, 0, Outcome::TaskLost));
        h.extend(task_call(1, None, "completed"));
        h.push(outcome(50, 1, Outcome::TaskCancelled));
        h.extend(task_call(2, None, "completed"));
        h.push(outcome(150, 2, Outcome::Timeout { after: ms(150) }));
        h.extend(task_call(3, Some(300), "completed"));
        h.push(outcome(250, 3, Outcome::Timeout { after: ms(250) }));
        let w = whats(&run(h));
        assert!(w.contains("no server said it did not know"), "{w}");
        assert!(w.contains("the server never cancelled"), "{w}");
        assert!(w.contains("set no task_timeout"), "{w}");
        assert!(w.contains("before its task_timeout"), "{w}");
        // With their causes, they pass.
        let mut h = task_call(0, None, "lost");
        h.push(e(
            40,
            Event::TaskUnknown {
                conn: 0,
                task: "task0".into(),
            },
        ));
        h.push(outcome(50, 0, Outcome::TaskLost));
        h.extend(task_call(1, None, "cancelled"));
        h.push(outcome(50, 1, Outcome::TaskCancelled));
        h.extend(task_call(3, Some(300), "completed"));
        h.push(outcome(300, 3, Outcome::Timeout { after: ms(300) }));
        let v = run(h);
        assert_eq!(v, vec![], "{}", whats(&v));
    }

    #[test]
    fn a_task_is_cancelled_on_the_server_once_and_only_when_its_caller_asks() {
        let cancel = |at: u64| {
            e(
                at,
                Event::TaskCancelGot {
                    conn: 0,
                    task: "task0".into(),
                },
            )
        };
        let mut h = task_call(0, None, "completed");
        h.push(cancel(10));
        h.push(e(20, Event::Dropped { call: 0 }));
        let w = whats(&run(h));
        assert!(w.contains("neither dropped the call"), "{w}");
        let mut h = task_call(0, None, "completed");
        h.push(e(20, Event::Dropped { call: 0 }));
        h.push(cancel(21));
        h.push(cancel(30));
        let w = whats(&run(h));
        assert!(w.contains("cancelled a second time"), "{w}");
        assert!(!w.contains("neither dropped"), "{w}");
    }

    fn made(call: usize, wait: bool, seen: ConnState) -> Event {
        Event::CallMade { call, wait, seen }
    }

    /// Into backoff, the next attempt `retry` ms later.
    fn backoff(retry: u64) -> Event {
        Event::Transition {
            from: ConnState::Starting,
            to: ConnState::Backoff,
            expired: false,
            retry_in: Some(ms(retry)),
        }
    }

    #[test]
    fn waiting_for_ready_is_judged_where_the_state_is_certain() {
        // In backoff until 50 ms: a call that does not wait is turned away at once, one that
        // waits is answered later; a call made after the backoff's end is not judged so.
        let v = run(vec![
            e(10, backoff(40)),
            e(20, issued(0, 100, None)),
            e(20, made(0, false, ConnState::Backoff)),
            e(20, issued(1, 100, None)),
            e(20, made(1, true, ConnState::Backoff)),
            outcome(20, 0, Outcome::Unavailable),
            e(60, issued(2, 100, None)),
            e(60, made(2, false, ConnState::Backoff)),
            e(70, ok(1, "t1")),
            e(70, ok(2, "t2")),
        ]);
        assert_eq!(v, vec![], "{}", whats(&v));
        // A waiting call answered Unavailable (anywhere), or at once in backoff; one that does
        // not wait answered later than at once in backoff.
        let v = run(vec![
            e(0, issued(0, 100, None)),
            e(0, made(0, true, ConnState::Starting)),
            outcome(5, 0, Outcome::Unavailable),
            e(10, backoff(40)),
            e(20, issued(1, 100, None)),
            e(20, made(1, true, ConnState::Backoff)),
            e(20, issued(2, 100, None)),
            e(20, made(2, false, ConnState::Backoff)),
            outcome(20, 1, Outcome::ConnectionLost("closed".into())),
            outcome(30, 2, Outcome::Unavailable),
        ]);
        let w = whats(&v);
        assert!(
            w.contains("call 0 waits for ready, yet was answered Unavailable"),
            "{w}"
        );
        assert!(w.contains("call 1 waits for ready, made in backoff"), "{w}");
        assert!(w.contains("call 2 does not wait for ready"), "{w}");
    }

    #[test]
    fn recovery_must_happen_in_time_and_succeed() {
        let mut recovery = issued(0, 500, None);
        if let Event::Issued { recovery: r, .. } = &mut recovery {
            *r = true;
        }
        let v = run(vec![
            e(
                0,
                Event::Calm {
                    ready_within: ms(50),
                },
            ),
            e(60, Event::Ready),
            e(60, recovery),
            e(
                61,
                Event::Outcome {
                    call: 0,
                    outcome: Outcome::Unavailable,
                },
            ),
        ]);
        let w = whats(&v);
        assert!(w.contains("ready 60ms after"), "{w}");
        assert!(w.contains("made after the faults stopped, failed"), "{w}");
    }
}
