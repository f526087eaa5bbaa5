//! An answer the machine gives a caller (`Action::Reply`): the ghost counts it, forgets what
//! the call waited for, notes the guards it meets, and, for an id that ended without the
//! server's answer, starts its tombstone's clock and the cancel owed for it. The properties of
//! answers ([`crate::properties::replies`]) judge it as it is counted.

use mcp_machine::{CallError, CallId, Payload, RequestId};

use crate::env::{SUBSCRIBER, live_generation};
use crate::properties::guards as seen;
use crate::properties::{listen, replies, tasks};
use crate::world::{Move, Owner, ServerFrame, World};

/// Whether an outcome is the server's answer (a result, an error it sent, a result the client
/// could not use), not one the client made up (a timeout, a lost connection, a cancel).
fn from_server(outcome: &Result<Payload, CallError>) -> bool {
    matches!(
        outcome,
        Ok(_)
            | Err(CallError::Server(_)
                | CallError::InvalidResponse { .. }
                | CallError::UnknownResultType { .. }
                | CallError::InputRequired { .. }
                | CallError::TaskCancelled { .. }
                | CallError::TaskLost { .. })
    )
}

/// The machine answers caller `call` (its request `request`, if one was issued) in a step
/// of move `mv`.
pub(crate) fn reply(
    n: &mut World,
    mv: Option<Move>,
    call: CallId,
    request: Option<RequestId>,
    outcome: Result<Payload, CallError>,
) {
    let current = n.m.generation();
    let Ok(c) = u8::try_from(call.0) else {
        replies::phantom(n);
        return;
    };
    let now = n.m.now();
    let Some(g) = n.ghost.calls.get_mut(&c) else {
        replies::phantom(n);
        return;
    };
    g.replies += 1;
    let (count, own, busy_seen) = (g.replies, g.request, g.busy_seen);
    let from_server = from_server(&outcome);
    if count == 1 {
        crate::properties::waiting::answered(n, c, own.is_some(), &outcome);
    }
    replies::answered(n, count, own, request, &outcome, from_server);
    tasks::replied(n, c, &outcome);
    if c == SUBSCRIBER && outcome.is_ok() && !n.ghost.unsubscribed {
        n.ghost.sub_live = true;
    }
    if c == SUBSCRIBER && n.ghost.discovered.contains(&current) {
        listen::subscriber_answered(n, mv, &outcome);
    }
    n.ghost.mrtr.remove(&c);
    n.ghost.reissue_due.remove(&c);
    n.ghost.relist_waiting.remove(&c);
    if outcome.is_ok() && n.ghost.reissues.get(&c).is_some_and(|r| *r > 0) {
        n.ghost.seen |= seen::REISSUED_ANSWERED;
    }
    if outcome.is_ok() && n.ghost.resent_relisted.remove(&c) {
        n.ghost.seen |= seen::RELISTED_ANSWERED;
    }
    if n.ghost.retried.remove(&c) && outcome.is_ok() {
        n.ghost.seen |= seen::MRTR_ANSWERED;
    }
    if matches!(outcome, Err(CallError::InputFailed { .. })) {
        n.ghost.seen |= seen::INPUT_FAILED;
    }
    if matches!(outcome, Err(CallError::InputRequired { .. })) {
        n.ghost.seen |= seen::ROUNDS_SPENT;
    }
    if matches!(outcome, Err(CallError::UnknownResultType { .. })) {
        n.ghost.seen |= seen::BAD_RESULT_TYPE;
    }
    if from_server && request.is_some() {
        // The session works: the re-initialization budget is whole again.
        n.ghost.reinits = 0;
        if n.ghost.resent.contains(&c) {
            n.ghost.seen |= seen::RESENT_ANSWERED;
        }
    }
    if outcome.is_ok() {
        n.ghost.seen |= seen::CALL_OK;
        if busy_seen {
            n.ghost.seen |= seen::BUSY_THEN_OK;
        }
    }
    if matches!(outcome, Err(CallError::Timeout { .. })) {
        n.ghost.seen |= seen::TIMED_OUT;
    }
    n.ghost.auth_waiting.remove(&c);
    n.ghost.auth_resend_due.remove(&c);
    if n.ghost.auth_resent.remove(&c) && outcome.is_ok() {
        n.ghost.seen |= seen::AUTH_RESENT_ANSWERED;
    }
    if matches!(outcome, Err(CallError::Unauthorized { .. })) {
        match mv {
            Some(Move::Authorize(_, false)) => n.ghost.seen |= seen::AUTH_FAILED_ANSWERED,
            Some(Move::Frame(_, ServerFrame::AuthRequired(_)))
                if n.ghost.auth_refusals.get(&c).is_some_and(|r| *r >= 1) =>
            {
                n.ghost.seen |= seen::AUTH_REFUSED_AGAIN;
            }
            _ => {}
        }
    }
    if !from_server && let Some(id) = request {
        n.ghost.ended.insert(id, now);
        // (A request the server answered, as with `input_required`, owes no cancel; a task's
        // request owes none: a task is cancelled with `tasks/cancel` or not at all.)
        let task_request = matches!(n.ghost.owners.get(&id), Some(Owner::Task(..)));
        if !task_request
            && !n.ghost.cancels.contains(&id)
            && n.env
                .on_wire
                .get(&id)
                .is_some_and(|(g, answers)| *g == current && *answers == 0)
            && live_generation(n, current)
        {
            n.ghost.cancel_owed.insert(id);
        }
    }
}
