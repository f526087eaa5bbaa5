//! Backoff: each new reconnect delay is min·2ⁿ capped, ±20 %, n counting the delays since the
//! sequence last restarted; it restarts only once a session proved itself (a caller answered
//! with a result by the live ready session, or a restore of it answered, or the session
//! stayed up for `session_stable`), never merely because a handshake completed.
//!
//! The machine's count is not read: the ghost keeps two counts of its own, one that restarts
//! only on a sure proof ([`crate::world::Ghost::backoff_hi`]) and one that restarts on
//! anything that may be taken for one ([`crate::world::Ghost::backoff_lo`]); the delay must
//! lie between their bounds.

use std::time::Duration;

use mcp_machine::{Machine, State, TimerKind};
use stateright::Property;

use super::{fail, ok};
use crate::env::drain::StepLog;
use crate::model::Harness;
use crate::properties::guards as seen;
use crate::world::{Move, Owner, ServerFrame, World};

/// A reconnect delay outside the backoff bounds.
pub const BACKOFF_BOUNDS: u64 = 1 << 4;

pub(super) fn within_bounds() -> Property<Harness> {
    Property::<Harness>::always("backoff stays within bounds", |_, w| ok(w, BACKOFF_BOUNDS))
}

/// When the machine's reconnect timer is due, if it is armed.
pub(crate) fn reconnect_at(m: &Machine) -> Option<Duration> {
    m.armed_timers()
        .into_iter()
        .find(|(k, _)| k.kind == TimerKind::Reconnect)
        .map(|(_, d)| d)
}

/// At the end of a step: the proofs the step gave, and the bounds of a reconnect delay it
/// scheduled.
pub(crate) fn after_step(w: &World, n: &mut World, mv: Move, record: &StepLog) {
    // The session proved itself, or may have: the backoff sequence may restart. Only
    // while ready on the live generation: a result of it that answered a caller, or a
    // restore of the session, and was not dropped as late or unknown, proves it (the
    // sequence must restart: `backoff_hi`); any other frame of it may be taken for a
    // proof (an error, an answer to another request of the client's own: the sequence
    // may restart, `backoff_lo`). Being ready proves nothing.
    let (ready_before, ready_after) = (w.m.state() == State::Ready, n.m.state() == State::Ready);
    if let Move::Frame(fg, frame) = mv
        && fg == w.m.generation()
        && ready_before
        && ready_after
    {
        n.ghost.backoff_lo = 0;
        let dropped = record
            .reports
            .iter()
            .any(|r| matches!(*r, "late" | "unknown"));
        let proves = match frame {
            ServerFrame::Answer(id) => {
                !dropped
                    && (record.answered_ok > 0
                        || w.ghost.owners.get(&id) == Some(&Owner::Restore(fg)))
            }
            _ => false,
        };
        if proves {
            n.ghost.backoff_hi = 0;
        }
    }
    if ready_after && !ready_before {
        n.ghost.ready_since = Some(n.m.now());
    }
    // Backoff bounds: each new reconnect delay is min·2^n capped, ±20 %, n counting the
    // delays since the sequence last restarted: after a proof, or when the session last
    // made ready stayed up for `session_stable`.
    if let Some(at) = reconnect_at(&n.m)
        && reconnect_at(&w.m) != Some(at)
    {
        let c = n.m.config();
        if let Some(since) = n.ghost.ready_since.take()
            && n.m.now().saturating_sub(since) >= c.session_stable
        {
            n.ghost.backoff_lo = 0;
            n.ghost.backoff_hi = 0;
            n.ghost.seen |= seen::STABLE_RESTART;
        }
        let base = |k: u32| {
            c.backoff_min
                .saturating_mul(1u32 << k.min(20))
                .min(c.backoff_max)
        };
        let delay = at.saturating_sub(n.m.now());
        let pct = c.backoff_jitter_pct;
        if delay < base(n.ghost.backoff_lo) * (100 - pct) / 100
            || delay > base(n.ghost.backoff_hi) * (100 + pct) / 100
        {
            fail(n, BACKOFF_BOUNDS);
        }
        if n.ghost.backoff_hi >= 1 && n.ghost.backoff_lo >= 1 && ready_before {
            n.ghost.seen |= seen::UNPROVEN_SESSION_BACKOFF;
        }
        n.ghost.backoff_lo += 1;
        n.ghost.backoff_hi += 1;
    }
}
