//! Waiting for ready (`CallOptions::wait_for_ready`): a call made while no connection is
//! ready, that asked to wait, is never turned away as unavailable and never failed by a lost
//! connection it was not sent on; it goes out only once a connection is ready (after the
//! handshake: [`super::wire`] checks that a legacy request follows `initialized`). That it is
//! answered once, by its deadline at the latest, and at stop, is what [`super::replies`],
//! [`super::deadlines`] and [`super::stop`] prove of every call; [`super::session`]'s "no call
//! outlives ready" lets it live outside ready only while it waits.

use mcp_machine::{CallError, Payload, State};
use stateright::Property;

use super::{fail, ok};
use crate::model::Harness;
use crate::properties::guards as seen;
use crate::world::World;

/// A call waiting for ready was answered `Unavailable` (but by a transport that failed for
/// good), or with a lost connection before it went out, or went out while no connection was
/// ready, or was left waiting by a transport that failed for good.
pub const WAIT: u64 = 1 << 41;

pub(super) fn waits_for_ready() -> Property<Harness> {
    Property::<Harness>::always(
        "a call that waits for ready is not turned away, is not failed by a connection it was not sent on, and goes out only once a connection is ready",
        |_, w| ok(w, WAIT),
    )
}

/// Whether caller `c`'s call is one that waits for ready and has not gone out yet.
pub(crate) fn waiting(w: &World, c: u8) -> bool {
    w.ghost
        .calls
        .get(&c)
        .is_some_and(|g| g.waits && g.request.is_none() && g.replies == 0)
}

/// Caller `c`'s request goes out for the first time, in a step that leaves the machine in
/// `n`.
pub(crate) fn first_sent(n: &mut World, c: u8) {
    if n.ghost.calls.get(&c).is_some_and(|g| g.waits) && n.m.state() != State::Ready {
        fail(n, WAIT);
    }
}

/// Caller `c` is answered with `outcome` (`sent`: its request went out).
pub(crate) fn answered(n: &mut World, c: u8, sent: bool, outcome: &Result<Payload, CallError>) {
    let Some(g) = n.ghost.calls.get(&c) else {
        return;
    };
    if !g.waits {
        return;
    }
    let across_loss = g.waited_across_loss;
    match outcome {
        // Turned away only by a transport that failed for good, in that step.
        Err(CallError::Unavailable { .. }) if !n.ghost.permanent_step => fail(n, WAIT),
        Err(CallError::Unavailable { .. }) => n.ghost.seen |= seen::WAIT_RELEASED,
        Err(CallError::ConnectionLost(_)) if !sent => fail(n, WAIT),
        Err(CallError::Timeout { .. }) if !sent => n.ghost.seen |= seen::WAIT_TIMED_OUT,
        Ok(_) => {
            n.ghost.seen |= seen::WAITED_ANSWERED;
            if across_loss {
                n.ghost.seen |= seen::WAITED_ACROSS_LOSS;
            }
        }
        _ => {}
    }
}

/// A transport goes down or an attempt ends: every call still waiting waited across it.
pub(crate) fn loss(n: &mut World) {
    for g in n.ghost.calls.values_mut() {
        if g.waits && g.request.is_none() && g.replies == 0 {
            g.waited_across_loss = true;
        }
    }
}

/// At the end of a step whose transport failed for good: no call is left waiting (no
/// reconnect can help it).
pub(crate) fn after_permanent(n: &mut World) {
    let left = n
        .ghost
        .calls
        .values()
        .any(|g| g.waits && g.request.is_none() && g.replies == 0);
    if left {
        fail(n, WAIT);
    }
}
