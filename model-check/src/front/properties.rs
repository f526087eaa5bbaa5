//! What the front's checker proves, on every state reached within the bounds:
//!
//! - **One answer per host request** (`front: one answer per request`): no answer is written
//!   under an id without an open request of the host's under it (never twice, never after
//!   the host cancelled it, never for nothing).
//! - **Nothing lost** (`front: every request answered or owed`): while the session is open,
//!   every request of the host's that is neither answered nor cancelled is in flight, held, or
//!   the `initialize` being answered; and every call in flight can still end (its task has not
//!   answered yet).
//! - **Nothing after the end** (`front: nothing written after close`).
//! - **The upstream's requests** (`front: upstream requests answered once`,
//!   `front: upstream requests owed`): each gets at most one reply, none after the upstream
//!   gave up on it; one neither replied to nor given up on is still waiting in the core (so
//!   its deadline or the host answers it), and none is waiting once the session is closed.
//! - **The host is told** (`front: host told of what it need not answer`): a request sent to
//!   the host that the core stops waiting for without the host's answer is cancelled at the
//!   host (unless the session closed: the host is gone); a cancellation is sent only for a
//!   request the host was sent and did not answer, once.
//! - **Asked in order** (`front: no request before initialize, none twice`): the host is sent
//!   the upstream's requests and notifications only after its `initialize` (or `server/discover`)
//!   was answered, each request once, and a 2026-07-28 host never gets a request: it is asked
//!   in a call's `input_required` answer, each upstream request in one round only.
//!
//! Vacuity guards (`sometimes`, each must be met): a call answered, a host's answer handed
//! upstream, a request cancelled at the host, a call the host cancelled.

use stateright::Property;

use super::FrontModel;
use super::world::{FrontWorld, Kind};
use mcp_machine::front::State;

/// An answer under an id without an open request.
pub const ANSWERED_UNASKED: u32 = 1 << 0;
/// A frame written after the session closed.
pub const WRITE_AFTER_CLOSE: u32 = 1 << 1;
/// An upstream request replied to twice, after the upstream gave up, or never issued.
pub const UPSTREAM_REPLIED_TWICE: u32 = 1 << 2;
/// An upstream request or notification sent to the host before its `initialize` was answered.
pub const ASKED_BEFORE_INIT: u32 = 1 << 3;
/// An upstream request sent to the host twice, or one never issued.
pub const ASKED_TWICE: u32 = 1 << 4;
/// A cancellation at the host for a request it was not sent, already answered or cancelled.
pub const BAD_CANCEL_AT_HOST: u32 = 1 << 5;
/// A frame that is not JSON.
pub const BAD_FRAME: u32 = 1 << 6;

/// Met: a host call answered with a result.
pub const MET_CALL_ANSWERED: u32 = 1 << 0;
/// Met: the host's answer handed upstream.
pub const MET_HOST_ANSWERED: u32 = 1 << 1;
/// Met: a request cancelled at the host.
pub const MET_CANCELLED_AT_HOST: u32 = 1 << 2;
/// Met: an upstream notification reached the host.
pub const MET_NOTIFIED: u32 = 1 << 3;
/// Met: an upstream request asked in a call's `input_required` answer.
pub const MET_ROUND: u32 = 1 << 4;

fn ok(w: &FrontWorld, bits: u32) -> bool {
    w.ghost.violations & bits == 0
}

/// Every open request of the host's is tracked by the core while the session is open.
fn nothing_lost(w: &FrontWorld) -> bool {
    if w.core.state() == State::Closed {
        return true;
    }
    let tracked = |key: &String| {
        w.core.waiters().any(|k| k == key)
            || w.core.held().any(|k| k == key)
            || w.core.initializing() == Some(key)
            || w.core.listens().any(|k| k == key)
    };
    let open_tracked = w
        .ghost
        .asked
        .iter()
        .filter(|a| !a.answered && !a.cancelled)
        .all(|a| tracked(&a.key));
    // A call a host request waits for can still end (one the host holds a round of waits for
    // the host instead, within the round's deadline).
    let parked: Vec<&String> = w.core.parked().collect();
    let calls_can_end = w
        .core
        .in_flight()
        .filter(|k| !parked.contains(k))
        .all(|k| w.env.started.iter().any(|(s, ended)| s == k && !ended));
    open_tracked && calls_can_end
}

/// Every upstream request neither replied to nor given up on is waiting in the core; none
/// waits once the session is closed.
fn upstream_owed(w: &FrontWorld) -> bool {
    let waiting: Vec<u64> = w.core.waiting().map(|(id, _)| id).collect();
    let owed = w
        .ghost
        .upstream
        .iter()
        .enumerate()
        .all(|(i, u)| u.ended || u.replies > 0 || waiting.contains(&(i as u64 + 1)));
    owed && (w.core.state() != State::Closed || waiting.is_empty())
}

/// A request sent to the host and not answered by it is still waited for, or was cancelled
/// at the host, or the session closed.
fn host_told(w: &FrontWorld) -> bool {
    w.core.state() == State::Closed
        || w.ghost.upstream.iter().enumerate().all(|(i, u)| {
            !u.sent
                || u.host_answered
                || u.cancelled_at_host > 0
                || w.core
                    .waiting()
                    .any(|(id, sent)| id == i as u64 + 1 && sent)
        })
}

/// The properties, invariants first.
pub fn all() -> Vec<Property<FrontModel>> {
    vec![
        Property::always("front: one answer per request", |_, w: &FrontWorld| {
            ok(w, ANSWERED_UNASKED | BAD_FRAME)
        }),
        Property::always(
            "front: every request answered or owed",
            |_, w: &FrontWorld| nothing_lost(w),
        ),
        Property::always("front: nothing written after close", |_, w: &FrontWorld| {
            ok(w, WRITE_AFTER_CLOSE)
        }),
        Property::always(
            "front: upstream requests answered once",
            |_, w: &FrontWorld| ok(w, UPSTREAM_REPLIED_TWICE),
        ),
        Property::always("front: upstream requests owed", |_, w: &FrontWorld| {
            upstream_owed(w)
        }),
        Property::always(
            "front: host told of what it need not answer",
            |_, w: &FrontWorld| ok(w, BAD_CANCEL_AT_HOST) && host_told(w),
        ),
        Property::always(
            "front: no request before initialize, none twice",
            |_, w: &FrontWorld| ok(w, ASKED_BEFORE_INIT | ASKED_TWICE),
        ),
        Property::sometimes("front guard: a call answered", |_, w: &FrontWorld| {
            w.ghost.met & MET_CALL_ANSWERED != 0
        }),
        Property::sometimes(
            "front guard: a host answer handed upstream",
            |_, w: &FrontWorld| w.ghost.met & MET_HOST_ANSWERED != 0,
        ),
        Property::sometimes(
            "front guard: a request cancelled at the host",
            |_, w: &FrontWorld| w.ghost.met & MET_CANCELLED_AT_HOST != 0,
        ),
        Property::sometimes("front guard: a notification told", |_, w: &FrontWorld| {
            w.ghost.met & MET_NOTIFIED != 0
        }),
        Property::sometimes(
            "front guard: input asked in a call's answer",
            |_, w: &FrontWorld| w.ghost.met & MET_ROUND != 0,
        ),
        Property::sometimes(
            "front guard: a call the host cancelled",
            |_, w: &FrontWorld| {
                w.ghost
                    .asked
                    .iter()
                    .any(|a| a.cancelled && a.kind == Kind::Call)
                    && w.core.state() == State::Ready
            },
        ),
    ]
}
