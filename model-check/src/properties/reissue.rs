//! Lost modern requests and -32020 (2026-07-28): a modern request lost without an answer (its
//! response stream broke, or -32022 naming a version the client speaks) is sent again at once
//! under a new id while the call has reissues left, and past them the error is its answer; a
//! `tools/call` refused with -32020 the first time waits for a listing of the tools in flight
//! (one for every call waiting) and is sent again, once, when that listing ends; a second
//! -32020 is its answer.

use mcp_machine::{SendOutcome, State, TimerKind};
use stateright::Property;

use super::{fail, ok};
use crate::env::drain::StepLog;
use crate::ghost::frame::FrameNotes;
use crate::model::Harness;
use crate::properties::guards as seen;
use crate::world::{Move, ServerFrame, World};

/// A modern call whose request was lost without an answer was not sent again at once
/// under a new id while it had reissues left, or was not answered with the error past
/// them; or, refused with -32020 the first time, it was answered, or no listing of the
/// tools was in flight, or that listing ended and it was not sent again; or, refused so a
/// second time, it was not answered.
pub const REISSUE: u64 = 1 << 31;

pub(super) fn reissue() -> Property<Harness> {
    Property::<Harness>::always(
        "a modern request lost without an answer is sent again at once under a new id, a bounded number of times, then its error is the answer",
        |_, w| ok(w, REISSUE),
    )
}

/// After a frame that lost a live call's request (`notes.lost`) or refused it with -32020
/// (`notes.mismatch`), judged from the step's end.
pub(crate) fn lost_or_refused(w: &World, n: &mut World, notes: &FrameNotes) {
    // A lost request with reissues left is sent again at once under a new id (its caller
    // not answered, unless that send was refused); past them, the error is its answer.
    if let Some((c, left)) = notes.lost {
        let answered = n.ghost.calls.get(&c).is_some_and(|x| x.replies > 0);
        let refusing = w.env.send_mode == Some(SendOutcome::Failed);
        if left && (n.ghost.reissue_due.contains(&c) || (answered && !refusing)) {
            fail(n, REISSUE);
        }
        if !left {
            if answered {
                n.ghost.seen |= seen::REISSUES_SPENT;
            } else {
                fail(n, REISSUE);
            }
        }
    }
    // -32020 the first time: not answered (unless the transport refuses every frame), and
    // waiting for a listing of the tools in flight (or sent again already); the second
    // time: answered.
    if let Some((c, first)) = notes.mismatch {
        let answered = n.ghost.calls.get(&c).is_some_and(|x| x.replies > 0);
        let refusing = w.env.send_mode == Some(SendOutcome::Failed);
        let waits_alone = n.ghost.relist_waiting.contains(&c) && n.ghost.relist_in_flight.is_none();
        let wrong = if first {
            if answered { !refusing } else { waits_alone }
        } else {
            !answered
        };
        if wrong {
            fail(n, REISSUE);
        }
    }
}

/// The listing of the tools ended (answered, or its request gone): no live call waits for
/// it (the ghost forgets the listing and who waited for it).
pub(crate) fn relist_ended(w: &World, n: &mut World, mv: Move, record: &StepLog) {
    let Some(id) = n.ghost.relist_in_flight else {
        return;
    };
    let answered = matches!(mv, Move::Frame(g, ServerFrame::Answer(a))
        if a == id && g == w.m.generation());
    let gone =
        !n.m.armed_timers()
            .iter()
            .any(|(k, _)| k.kind == TimerKind::RequestTimeout && k.id == Some(id));
    // Its send refused, or busy with its sends spent: it ended too.
    let attempts = n.m.config().send_attempts;
    let unsent = record.request_outcomes.iter().any(|(r, o)| {
        *r == id
            && (*o == SendOutcome::Failed
                || (*o == SendOutcome::Busy
                    && n.ghost
                        .own_busy
                        .get(&id)
                        .is_some_and(|(b, _)| *b >= attempts)))
    });
    if answered || gone || unsent {
        n.ghost.relist_in_flight = None;
        let ghost = &n.ghost;
        if n.m.state() == State::Ready
            && ghost
                .relist_waiting
                .iter()
                .any(|c| ghost.calls.get(c).is_some_and(|x| x.replies == 0))
        {
            fail(n, REISSUE);
        }
        n.ghost.relist_waiting.clear();
    }
}
