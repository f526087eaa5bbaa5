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
//! - the servers saw no protocol violation, the runtime logged no error, the trace replays;
//! - links that end as an HTTP transport's do (a session expired, a stuck POST, a lost stream)
//!   and the attempts after them hold the properties of [`super::reconnect`]: a refused request
//!   sent again at most once, a call held behind a stuck POST never told "timed out" after its
//!   link failed, the re-initialization budget, and a backoff sequence that restarts only
//!   after a session proved itself.

use std::collections::BTreeMap;
use std::time::Duration;

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
}

impl Default for Bounds {
    fn default() -> Self {
        Bounds {
            slack: Duration::ZERO,
            stop: Duration::from_millis(100),
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
                };
                if calls.insert(*call, c).is_some() {
                    bad(i, format!("call {call} issued twice"));
                }
            }
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
                    if at > *issued + bounds.stop + bounds.slack {
                        bad(
                            i,
                            format!(
                                "stop {stop} took {:?} (bound {:?})",
                                at - *issued,
                                bounds.stop
                            ),
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
            | Event::Config { .. }
            | Event::Connect { .. }
            | Event::ServerGot { token: None, .. }
            | Event::Crash { .. }
            | Event::LinkFault { .. }
            | Event::LinkDown { .. }
            | Event::Transition { .. } => {}
        }
    }
    check_wire(&wire, &calls, &mut bad);
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
    if at > c.deadline + bounds.slack {
        bad(
            i,
            format!(
                "call {n} answered {:?} past its deadline ({:?} after it was issued)",
                at - c.deadline,
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
            let expected = (c.kind == CallKind::Tool).then(|| c.token.clone());
            if *token != expected {
                bad(
                    i,
                    format!("call {n} got the result carrying {token:?}, expected {expected:?}"),
                );
            }
        }
        Outcome::Server { message } if !message.ends_with(&format!(" {}", c.token)) => {
            bad(
                i,
                format!("call {n} got the server error {message:?}, not its own"),
            );
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
