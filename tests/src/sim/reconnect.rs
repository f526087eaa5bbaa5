//! The properties of links that end the way an HTTP transport's links end, and of the
//! connection attempts after them, checked on a run's history (part of [`super::oracle`]):
//!
//! - a request refused by an expiry is sent again at most once, on a later connection, and only
//!   when the expiry listed it as refused: a call reaches the servers at most twice, never
//!   twice on one connection, and a second time only after its first request was refused
//!   and listed;
//! - a link ended with a typed error (a session expired, a stuck POST, a lost stream) is
//!   reported down by the client's transport at that instant;
//! - a call in flight when its link failed for a stuck POST or a lost stream ends at that
//!   instant (connection lost), unless it is a task call whose task was created (the task
//!   survives the link): it is not told "timed out" later, least of all when its request
//!   never reached the server (it was held behind the POST that got no answer);
//! - at most `max_session_reinits` sessions are initialized again at once without a call
//!   answered in between, and an expiry backs off only once they are spent;
//! - the backoff sequence restarts only after a session proved itself (a call of it answered,
//!   or ready for `session_stable`), never merely because a session reached ready: the k-th
//!   delay since the last possible restart is at least `min(min · 2^k, max)` less its jitter,
//!   and the next attempt comes when the driver said it would.
//!
//! Where the history cannot tell whether the sequence restarted (an answer written to the
//! stream may or may not have been read before the link ended), it is assumed to have
//! restarted: the bounds are the weakest the client could meet, never stronger.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use mcp_runtime::ConnState;

use super::history::{CallKind, Entry, Event, Outcome};

/// A backoff delay seen in a history: the attempt that ended into backoff, and the next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delay {
    /// The entry of the transition into backoff.
    pub index: usize,
    /// How long from it to the next connection attempt.
    pub gap: Duration,
    /// Delays since the sequence last may have restarted (0: it may have restarted just now).
    pub step: u32,
    /// The least the delay may be at that step.
    pub least: Duration,
    /// What the driver said the delay would be.
    pub retry_in: Option<Duration>,
}

/// The least delay at `step` of a sequence from `min` to `max` with `pct` % jitter.
pub fn least_delay(min: Duration, max: Duration, pct: u32, step: u32) -> Duration {
    let factor = 1u32.checked_shl(step.min(31)).unwrap_or(u32::MAX);
    let base = min.checked_mul(factor).map_or(max, |d| d.min(max));
    let nanos = base.as_nanos() * u128::from(1000 - 10 * pct.min(100)) / 1000;
    Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
}

/// The backoff delays of a history, each with the least it may be.
pub fn delays(history: &[Entry]) -> Vec<Delay> {
    let Some((min, max, pct)) = history.iter().find_map(|e| match &e.event {
        Event::Config { backoff, .. } => Some(*backoff),
        _ => None,
    }) else {
        return Vec::new();
    };
    let stable = session_stable(history);
    let methods = methods(history);
    let mut out = Vec::new();
    let mut step = 0u32;
    let mut restart = false;
    let mut ready_at: Option<Duration> = None;
    let mut pending: Option<(usize, Duration, u32, Option<Duration>)> = None;
    for (i, e) in history.iter().enumerate() {
        match &e.event {
            Event::Answered { conn, id } if answers_a_call(&methods, *conn, *id) => {
                restart = true;
            }
            Event::Transition { to, retry_in, .. } if *to == ConnState::Backoff => {
                if restart || ready_at.is_some_and(|at| e.at.saturating_sub(at) >= stable) {
                    step = 0;
                }
                restart = false;
                ready_at = None;
                pending = Some((i, e.at, step, *retry_in));
                step = step.saturating_add(1);
            }
            Event::Transition { to, .. } if *to == ConnState::Ready => ready_at = Some(e.at),
            Event::Connect { .. } => {
                if let Some((index, at, step, retry_in)) = pending.take() {
                    out.push(Delay {
                        index,
                        gap: e.at.saturating_sub(at),
                        step,
                        least: least_delay(min, max, pct, step),
                        retry_in,
                    });
                }
            }
            _ => {}
        }
    }
    out
}

fn session_stable(history: &[Entry]) -> Duration {
    history
        .iter()
        .find_map(|e| match &e.event {
            Event::Config { session_stable, .. } => Some(*session_stable),
            _ => None,
        })
        .unwrap_or(Duration::MAX)
}

/// The method of each request the servers got, by (connection, id).
fn methods(history: &[Entry]) -> BTreeMap<(u64, u64), &str> {
    history
        .iter()
        .filter_map(|e| match &e.event {
            Event::ServerGot {
                conn, id, method, ..
            } => Some(((*conn, *id), method.as_str())),
            _ => None,
        })
        .collect()
}

/// Whether the answer to request `id` on `conn` answers a caller's call (which restarts the
/// backoff sequence and the re-initialization budget when the client reads it while the call
/// is live; a task's creation does too, and so does the answer to the client's own
/// `tasks/cancel`, a live request of its own), rather than the client's own probe or a task's
/// poll (`tasks/get`, `tasks/result`: they prove nothing of the session).
fn answers_a_call(methods: &BTreeMap<(u64, u64), &str>, conn: u64, id: u64) -> bool {
    matches!(
        methods.get(&(conn, id)),
        Some(&("tools/call" | "ping" | "tools/list" | "tasks/cancel"))
    )
}

/// Checks the properties of the module's documentation on `history`.
pub fn check(history: &[Entry], bad: &mut impl FnMut(usize, String)) {
    check_resends(history, bad);
    check_link_downs(history, bad);
    check_lost_links(history, bad);
    check_reinits(history, bad);
    for d in delays(history) {
        if d.gap < d.least {
            bad(
                d.index,
                format!(
                    "backoff delay {:?} at step {} of the sequence (no call answered since it \
                     last could have restarted) is shorter than its least {:?}: the sequence \
                     restarted without a session proving itself",
                    d.gap, d.step, d.least
                ),
            );
        }
        if let Some(r) = d.retry_in
            && (d.gap < r || d.gap > r + Duration::from_millis(1))
        {
            bad(
                d.index,
                format!(
                    "the next attempt came {:?} after backoff began, the driver said {r:?}",
                    d.gap
                ),
            );
        }
    }
}

/// A request refused by an expiry is sent again at most once, on a later connection, and
/// only when the expiry listed it.
fn check_resends(history: &[Entry], bad: &mut impl FnMut(usize, String)) {
    let mut gets: BTreeMap<&str, Vec<(usize, u64, u64)>> = BTreeMap::new();
    let mut listed: BTreeSet<(u64, u64)> = BTreeSet::new();
    for (i, e) in history.iter().enumerate() {
        match &e.event {
            Event::ServerGot {
                conn,
                id,
                token: Some(token),
                ..
            } => gets.entry(token).or_default().push((i, *conn, *id)),
            Event::LinkFault { conn, refused, .. } => {
                listed.extend(refused.iter().map(|id| (*conn, *id)));
            }
            _ => {}
        }
    }
    for (token, gets) in gets {
        if let Some((i, conn, id)) = gets.get(2) {
            bad(
                *i,
                format!(
                    "the call of token {token} reached a server a third time (request {id} on \
                     connection {conn}): a refused request is sent again at most once"
                ),
            );
        }
        for pair in gets.windows(2) {
            let ((_, c0, id0), (i, c1, id1)) = (pair[0], pair[1]);
            if c1 <= c0 {
                bad(
                    i,
                    format!(
                        "the call of token {token} was sent again on connection {c1} (request \
                         {id1}) after connection {c0} (request {id0}): not on a new session"
                    ),
                );
            } else if !listed.contains(&(c0, id0)) {
                bad(
                    i,
                    format!(
                        "the call of token {token} was sent again on connection {c1} (request \
                         {id1}), though no expiry of connection {c0} listed its request {id0} \
                         as refused (it may have run)"
                    ),
                );
            }
        }
    }
}

/// What a call did, for the properties here.
struct CallSeen {
    at: Duration,
    kind: CallKind,
    token: String,
    outcome: Option<(usize, Duration, Outcome)>,
    /// A task call: the entry where its caller was first told its task's status.
    created: Option<usize>,
    /// Whether its caller saw the connection not ready when it made the call
    /// ([`Event::CallMade`]).
    not_ready: bool,
}

/// Whether `fault` (of an [`Event::LinkFault`]) ends the link with a typed error.
fn is_typed(fault: &str) -> bool {
    matches!(fault, "session expired" | "stuck POST" | "stream lost")
}

/// A link ended with a typed error is reported down by the client's transport at that instant
/// (unless the client had ended it first).
fn check_link_downs(history: &[Entry], bad: &mut impl FnMut(usize, String)) {
    let mut downs: BTreeMap<u64, Vec<(usize, Duration)>> = BTreeMap::new();
    for (i, e) in history.iter().enumerate() {
        if let Event::LinkDown { conn } = e.event {
            downs.entry(conn).or_default().push((i, e.at));
        }
    }
    for (i, e) in history.iter().enumerate() {
        let Event::LinkFault { conn, fault, .. } = &e.event else {
            continue;
        };
        if !is_typed(fault) {
            continue;
        }
        match downs.get(conn).and_then(|d| d.first()) {
            Some((down, _)) if *down < i => {}
            Some((_, at)) if *at == e.at => {}
            Some((_, at)) => bad(
                i,
                format!(
                    "the link of connection {conn} ended ({fault}) at {:?}, but the client's \
                     transport reported it down only at {at:?}",
                    e.at
                ),
            ),
            None => bad(
                i,
                format!(
                    "the link of connection {conn} ended ({fault}), but the client's transport \
                     never reported it down"
                ),
            ),
        }
    }
}

/// A call in flight when its link failed for a stuck POST or a lost stream ends at that
/// instant: it is not told anything later, "timed out" least of all.
fn check_lost_links(history: &[Entry], bad: &mut impl FnMut(usize, String)) {
    let mut calls: BTreeMap<usize, CallSeen> = BTreeMap::new();
    let mut got: BTreeSet<&str> = BTreeSet::new();
    // Links that failed so, and when (the client's transport reports it at that instant).
    let mut lost: Vec<(usize, u64, &str, Duration)> = Vec::new();
    for (i, e) in history.iter().enumerate() {
        match &e.event {
            Event::Issued {
                call, kind, token, ..
            } => {
                calls.insert(
                    *call,
                    CallSeen {
                        at: e.at,
                        kind: *kind,
                        token: token.clone(),
                        outcome: None,
                        created: None,
                        not_ready: false,
                    },
                );
            }
            Event::Outcome { call, outcome } => {
                if let Some(c) = calls.get_mut(call) {
                    c.outcome = Some((i, e.at, outcome.clone()));
                }
            }
            Event::TaskStatus { call, .. } => {
                if let Some(c) = calls.get_mut(call) {
                    c.created.get_or_insert(i);
                }
            }
            Event::CallMade { call, seen, .. } => {
                if let Some(c) = calls.get_mut(call) {
                    c.not_ready = *seen != mcp_runtime::ConnState::Ready;
                }
            }
            Event::ServerGot {
                token: Some(token), ..
            } => {
                got.insert(token);
            }
            Event::LinkFault { conn, fault, .. }
                if fault == "stuck POST" || fault == "stream lost" =>
            {
                lost.push((i, *conn, fault, e.at));
            }
            _ => {}
        }
    }
    for (n, c) in &calls {
        let Some((i, at, outcome)) = &c.outcome else {
            continue;
        };
        // A task created before the link failed is not in flight on it: it survives. A call
        // made at the instant the link failed, its caller seeing the connection not ready, was
        // made after the client saw it down (a call waiting for ready waits for the next one).
        let Some((_, conn, fault, down)) = lost.iter().find(|(fault_at, _, _, down)| {
            c.at <= *down
                && at > down
                && c.created.is_none_or(|t| t > *fault_at)
                && !(c.at == *down && c.not_ready)
        }) else {
            continue;
        };
        let never_sent = c.kind != CallKind::Notify && !got.contains(c.token.as_str());
        let what = match outcome {
            Outcome::Timeout { .. } if never_sent && *fault == "stuck POST" => format!(
                "call {n} was told it timed out at {at:?}, though its request was never sent: \
                 it was held behind the stuck POST of connection {conn}, whose link failed at \
                 {down:?} (the call must fail then, as the connection lost)"
            ),
            other => format!(
                "call {n}, in flight when the link of connection {conn} failed ({fault}) at \
                 {down:?}, was answered {other:?} only at {at:?}"
            ),
        };
        bad(*i, what);
    }
}

/// At most `max_session_reinits` sessions are initialized again at once without a call
/// answered in between; an expiry backs off only once they are spent.
fn check_reinits(history: &[Entry], bad: &mut impl FnMut(usize, String)) {
    let Some(max) = history.iter().find_map(|e| match &e.event {
        Event::Config {
            max_session_reinits,
            ..
        } => Some(*max_session_reinits),
        _ => None,
    }) else {
        return;
    };
    let methods = methods(history);
    // Task calls whose task was created: their caller's answer comes from polling the task,
    // which proves nothing of the session (the creation did).
    let mut tasks: BTreeSet<usize> = BTreeSet::new();
    let kinds: BTreeMap<usize, CallKind> = history
        .iter()
        .filter_map(|e| match &e.event {
            Event::Issued { call, kind, .. } => Some((*call, *kind)),
            _ => None,
        })
        .collect();
    // Re-initializations since a call answered may have restarted the count (fewest), and
    // since one surely did (most).
    let (mut fewest, mut most) = (0u32, 0u32);
    for (i, e) in history.iter().enumerate() {
        match &e.event {
            Event::Answered { conn, id } if answers_a_call(&methods, *conn, *id) => fewest = 0,
            Event::TaskStatus { call, .. } if tasks.insert(*call) => {
                // The client read the task's creation, the answer of a live call.
                fewest = 0;
                most = 0;
            }
            Event::Outcome {
                call,
                outcome: Outcome::Ok { .. } | Outcome::Server { .. },
            } if kinds.get(call) != Some(&CallKind::Notify) && !tasks.contains(call) => {
                // The caller was answered by the server: the client read the answer of a live
                // call (it would have restarted the count before the caller saw it).
                fewest = 0;
                most = 0;
            }
            Event::Transition {
                from: ConnState::Ready,
                to,
                expired: true,
                ..
            } => {
                if *to == ConnState::Starting {
                    fewest += 1;
                    most += 1;
                    if fewest > max {
                        bad(
                            i,
                            format!(
                                "session initialized again at once for the {fewest}th time \
                                 without a call answered in between (at most {max})"
                            ),
                        );
                    }
                } else if *to == ConnState::Backoff && most < max {
                    bad(
                        i,
                        format!(
                            "the session expired with re-initializations left ({most} of {max} \
                             used), yet the client backed off"
                        ),
                    );
                }
            }
            _ => {}
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

    fn config() -> Event {
        Event::Config {
            backoff: (ms(100), ms(1_000), 20),
            max_session_reinits: 3,
            session_stable: ms(60_000),
            looping: None,
        }
    }

    fn to(from: ConnState, to: ConnState, expired: bool, retry_in: Option<u64>) -> Event {
        Event::Transition {
            from,
            to,
            expired,
            retry_in: retry_in.map(ms),
        }
    }

    fn connect(conn: u64) -> Event {
        Event::Connect {
            conn,
            plan: String::new(),
        }
    }

    fn whats(history: &[Entry]) -> String {
        let mut s = String::new();
        check(history, &mut |i, w| s.push_str(&format!("{i}: {w}\n")));
        s
    }

    /// Sessions dropped right after their handshake, each followed by a backoff of `delays`.
    fn drop_loop(delays: &[u64]) -> Vec<Entry> {
        let mut h = vec![e(0, config()), e(0, connect(0))];
        let mut now = 0;
        for (k, d) in delays.iter().enumerate() {
            now += 5;
            h.push(e(
                now,
                to(ConnState::Initializing, ConnState::Ready, false, None),
            ));
            now += 1;
            h.push(e(
                now,
                to(ConnState::Ready, ConnState::Backoff, false, Some(*d)),
            ));
            now += d;
            h.push(e(
                now,
                to(ConnState::Backoff, ConnState::Starting, false, None),
            ));
            h.push(e(now, connect(k as u64 + 1)));
        }
        h
    }

    #[test]
    fn a_growing_sequence_passes_and_one_restarted_at_each_ready_is_caught() {
        assert_eq!(whats(&drop_loop(&[100, 200, 400, 800, 1_000])), "");
        // Jitter may take a step below its base, never below its base less the jitter.
        assert_eq!(whats(&drop_loop(&[80, 160, 320, 640, 800])), "");
        let w = whats(&drop_loop(&[100, 110, 100, 95]));
        assert!(
            w.contains("restarted without a session proving itself"),
            "{w}"
        );
        assert!(w.contains("at step 2"), "{w}");
    }

    #[test]
    fn an_answer_may_restart_the_sequence() {
        let mut h = drop_loop(&[100, 200]);
        h.push(e(
            310,
            Event::ServerGot {
                conn: 2,
                id: 9,
                method: "tools/call".into(),
                token: Some("t".into()),
            },
        ));
        h.push(e(311, Event::Answered { conn: 2, id: 9 }));
        h.push(e(
            312,
            to(ConnState::Ready, ConnState::Backoff, false, Some(100)),
        ));
        h.push(e(412, connect(3)));
        assert_eq!(whats(&h), "");
        // The probe's answer is no call's: it restarts nothing.
        let mut h = drop_loop(&[100, 200]);
        h.push(e(
            310,
            Event::ServerGot {
                conn: 2,
                id: 9,
                method: "server/discover".into(),
                token: None,
            },
        ));
        h.push(e(311, Event::Answered { conn: 2, id: 9 }));
        h.push(e(
            312,
            to(ConnState::Ready, ConnState::Backoff, false, Some(100)),
        ));
        h.push(e(412, connect(3)));
        assert!(whats(&h).contains("at step 2"), "{}", whats(&h));
    }

    #[test]
    fn an_attempt_off_the_drivers_word_is_caught() {
        let mut h = drop_loop(&[100]);
        if let Event::Transition { retry_in, .. } = &mut h[3].event {
            *retry_in = Some(ms(150));
        }
        assert!(whats(&h).contains("the driver said 150ms"), "{}", whats(&h));
    }

    fn expiry(at: u64, conn: u64, to_state: ConnState) -> Vec<Entry> {
        vec![
            e(
                at,
                Event::LinkFault {
                    conn,
                    fault: "session expired".into(),
                    refused: vec![],
                },
            ),
            e(at, Event::LinkDown { conn }),
            e(at, to(ConnState::Ready, to_state, true, None)),
        ]
    }

    #[test]
    fn the_reinit_budget_is_spent_before_backing_off_and_never_overspent() {
        let mut h = vec![e(0, config())];
        for k in 0..3 {
            h.extend(expiry(k * 10, k, ConnState::Starting));
        }
        h.extend(expiry(30, 3, ConnState::Backoff));
        assert_eq!(whats(&h), "");
        h.extend(expiry(500, 4, ConnState::Starting));
        assert!(whats(&h).contains("for the 4th time"), "{}", whats(&h));
        let mut h = vec![e(0, config())];
        h.extend(expiry(0, 0, ConnState::Starting));
        h.extend(expiry(10, 1, ConnState::Backoff));
        assert!(
            whats(&h).contains("re-initializations left (1 of 3 used)"),
            "{}",
            whats(&h)
        );
    }

    fn got(at: u64, conn: u64, id: u64) -> Entry {
        e(
            at,
            Event::ServerGot {
                conn,
                id,
                method: "tools/call".into(),
                token: Some("t0".into()),
            },
        )
    }

    fn refused(at: u64, conn: u64, ids: Vec<u64>) -> Entry {
        e(
            at,
            Event::LinkFault {
                conn,
                fault: "session expired".into(),
                refused: ids,
            },
        )
    }

    /// `entries`, each expiry followed by its link's end at the same instant.
    fn with_downs(entries: Vec<Entry>) -> Vec<Entry> {
        let mut out = Vec::new();
        for entry in entries {
            let down = match &entry.event {
                Event::LinkFault { conn, .. } => Some(e(0, Event::LinkDown { conn: *conn })),
                _ => None,
            };
            let at = entry.at;
            out.push(entry);
            out.extend(down.map(|d| Entry { at, ..d }));
        }
        out
    }

    #[test]
    fn a_refused_request_is_sent_again_once_and_only_when_listed() {
        let h = with_downs(vec![got(0, 0, 2), refused(1, 0, vec![2]), got(2, 1, 5)]);
        assert_eq!(whats(&h), "");
        let h = with_downs(vec![got(0, 0, 2), refused(1, 0, vec![]), got(2, 1, 5)]);
        assert!(whats(&h).contains("listed its request 2"), "{}", whats(&h));
        let h = with_downs(vec![
            got(0, 0, 2),
            refused(1, 0, vec![2]),
            got(2, 1, 5),
            refused(3, 1, vec![5]),
            got(4, 2, 7),
        ]);
        assert!(whats(&h).contains("a third time"), "{}", whats(&h));
        let h = vec![got(0, 0, 2), got(1, 0, 5)];
        assert!(whats(&h).contains("not on a new session"), "{}", whats(&h));
    }

    fn issued(call: usize, at: u64) -> Entry {
        e(
            at,
            Event::Issued {
                call,
                kind: CallKind::Tool,
                token: format!("t{call}"),
                timeout: ms(1_000),
                cap: None,
                recovery: false,
                task_timeout: None,
            },
        )
    }

    fn outcome(call: usize, at: u64, outcome: Outcome) -> Entry {
        e(at, Event::Outcome { call, outcome })
    }

    fn stuck(at: u64, down: u64) -> Vec<Entry> {
        vec![
            e(
                at,
                Event::LinkFault {
                    conn: 0,
                    fault: "stuck POST".into(),
                    refused: vec![],
                },
            ),
            e(down, Event::LinkDown { conn: 0 }),
        ]
    }

    #[test]
    fn a_typed_end_must_be_reported_down_at_once() {
        assert_eq!(whats(&stuck(300, 300)), "");
        let w = whats(&stuck(300, 301));
        assert!(w.contains("reported it down only at 301ms"), "{w}");
        let w = whats(&stuck(300, 300)[..1]);
        assert!(w.contains("never reported it down"), "{w}");
        // Closed by the client first: nothing to report.
        let mut h = vec![e(200, Event::LinkDown { conn: 0 })];
        h.extend(stuck(300, 300).into_iter().take(1));
        assert_eq!(whats(&h), "");
    }

    #[test]
    fn a_call_held_behind_a_stuck_post_fails_with_the_link_and_never_times_out_later() {
        let lost = Outcome::ConnectionLost("stuck".into());
        // Ended by the server, the link is lost then, whenever the transport says so.
        let mut h = vec![issued(0, 10)];
        h.extend(stuck(300, 310));
        h.push(outcome(0, 305, Outcome::Timeout { after: ms(295) }));
        let w = whats(&h);
        assert!(w.contains("though its request was never sent"), "{w}");
        let mut h = vec![issued(0, 10)];
        h.extend(stuck(300, 300));
        h.push(outcome(0, 300, lost));
        assert_eq!(whats(&h), "");
        // Its own deadline came first: that is a timeout, not a violation.
        let mut h = vec![
            issued(0, 10),
            outcome(0, 200, Outcome::Timeout { after: ms(190) }),
        ];
        h.extend(stuck(300, 300));
        assert_eq!(whats(&h), "");
        let mut h = vec![issued(0, 10)];
        h.extend(stuck(300, 300));
        h.push(outcome(0, 1_010, Outcome::Timeout { after: ms(1_000) }));
        let w = whats(&h);
        assert!(w.contains("though its request was never sent"), "{w}");
    }
}
