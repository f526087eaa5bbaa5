//! Answers to callers: each caller is answered once, with its own request's answer, at once
//! when the server answers a live call; a caller turned away is told the cause of the last
//! failure; an id that ended never reaches its caller; a cancel is answered at once; no
//! progress comes after the answer.

use mcp_machine::{CallError, Failure, Payload, RequestId, State};
use serde_json::Value;
use stateright::Property;

use super::{fail, ok};
use crate::model::Harness;
use crate::world::{Cause, Move, Owner, ServerFrame, World};

/// A caller was answered twice.
pub const DOUBLE_REPLY: u64 = 1 << 0;
/// An answer went to a caller that never called.
pub const PHANTOM_REPLY: u64 = 1 << 12;
/// A call whose id ended (timeout, cancel, failure) got a server answer afterwards.
pub const LATE_DELIVERED: u64 = 1 << 1;
/// A caller got the answer to another request.
pub const WRONG_CALLER: u64 = 1 << 18;
/// A server answer to a live call did not reach its caller at once, or a good
/// `initialize` answer did not make the connection ready.
pub const ANSWER_LOST: u64 = 1 << 19;
/// A cancelled call was not answered at once.
pub const CANCEL_UNANSWERED: u64 = 1 << 10;
/// A call told the connection is unavailable was not given the cause of the last failure.
pub const WRONG_CAUSE: u64 = 1 << 24;
/// Progress delivered for a call already answered.
pub const PROGRESS_AFTER_REPLY: u64 = 1 << 13;

pub(super) fn answered_once() -> Property<Harness> {
    Property::<Harness>::always("no caller is answered twice", |_, w| {
        ok(w, DOUBLE_REPLY | PHANTOM_REPLY)
    })
}

pub(super) fn ended_never_delivered() -> Property<Harness> {
    Property::<Harness>::always("an ended id never reaches its caller", |_, w| {
        ok(w, LATE_DELIVERED)
    })
}

pub(super) fn cancel_answered() -> Property<Harness> {
    Property::<Harness>::always("a cancel is answered at once", |_, w| {
        ok(w, CANCEL_UNANSWERED)
    })
}

pub(super) fn no_progress_after_answer() -> Property<Harness> {
    Property::<Harness>::always("no progress after the answer", |_, w| {
        ok(w, PROGRESS_AFTER_REPLY)
    })
}

pub(super) fn answer_to_its_caller() -> Property<Harness> {
    Property::<Harness>::always("answers reach the caller that asked", |_, w| {
        ok(w, WRONG_CALLER)
    })
}

pub(super) fn live_answer_at_once() -> Property<Harness> {
    Property::<Harness>::always("a live answer reaches its caller at once", |_, w| {
        ok(w, ANSWER_LOST)
    })
}

pub(super) fn cause_told() -> Property<Harness> {
    Property::<Harness>::always(
        "a caller turned away is told the cause of the last failure",
        |_, w| ok(w, WRONG_CAUSE),
    )
}

/// An answer for a caller that never called (or a number no caller has).
pub(crate) fn phantom(n: &mut World) {
    fail(n, PHANTOM_REPLY);
}

/// The checks of one answer to a caller, made when it is counted: its `replies`-th answer;
/// the caller's own request `own` and the request the answer is for; whether the server
/// gave it.
pub(crate) fn answered(
    n: &mut World,
    replies: u8,
    own: Option<RequestId>,
    request: Option<RequestId>,
    outcome: &Result<Payload, CallError>,
    from_server: bool,
) {
    if replies > 1 {
        fail(n, DOUBLE_REPLY);
    }
    // A transport that failed for good answers the waiting calls in its own step, before the
    // ghost learns the attempt's cause at the step's end: the cause is that failure.
    let cause = if n.ghost.permanent_step {
        Some(Cause::Down)
    } else {
        n.ghost.cause
    };
    if let Err(CallError::Unavailable { last_error, .. }) = outcome
        && !same_cause(last_error.as_ref(), cause)
    {
        fail(n, WRONG_CAUSE);
    }
    // The model server's answers name the request they answer.
    if let Ok(body) = outcome
        && let Some(answered) = body.value().get("for").and_then(Value::as_u64)
        && own != Some(answered)
    {
        fail(n, WRONG_CALLER);
    }
    if from_server && request.is_some_and(|id| n.ghost.ended.contains_key(&id)) {
        fail(n, LATE_DELIVERED);
    }
}

/// Progress for caller number `call`: it must not be answered yet.
pub(crate) fn progress(n: &mut World, call: u64) {
    let replied = u8::try_from(call)
        .ok()
        .and_then(|c| n.ghost.calls.get(&c))
        .is_none_or(|g| g.replies > 0);
    if replied {
        fail(n, PROGRESS_AFTER_REPLY);
    }
}

/// A cancelled call is answered at once.
pub(crate) fn cancel_answered_at_once(n: &mut World, mv: Move) {
    if let Move::Cancel(c) = mv
        && n.ghost.calls.get(&c).is_some_and(|g| g.replies == 0)
    {
        fail(n, CANCEL_UNANSWERED);
    }
}

/// What a frame on the live transport must bring about in the same step.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Expected {
    /// The caller gets its answer.
    Reply(u8),
    /// The handshake completes.
    Ready,
}

/// What frame `f` must bring about, judged before the step from `w`.
pub(crate) fn expected_answer(w: &World, f: ServerFrame) -> Option<Expected> {
    match f {
        // With tasks off, a task is an answer like any other (an odd or unusable one).
        ServerFrame::Answer(id)
        | ServerFrame::Task {
            id,
            reply: crate::world::TaskReply::Created,
            ..
        } if w.m.state() == State::Ready
            && (matches!(f, ServerFrame::Answer(_)) || !w.m.config().tasks) =>
        {
            let first = w
                .env
                .on_wire
                .get(&id)
                .is_some_and(|(_, answers)| *answers == 0);
            match w.ghost.owners.get(&id) {
                Some(Owner::Call(c))
                    if first
                        && !w.ghost.ended.contains_key(&id)
                        && w.ghost.calls.get(c).is_some_and(|g| g.replies == 0) =>
                {
                    Some(Expected::Reply(*c))
                }
                _ => None,
            }
        }
        ServerFrame::DiscoverOk(id) if w.m.state() == State::Probing => {
            let first = w
                .env
                .on_wire
                .get(&id)
                .is_some_and(|(_, answers)| *answers == 0);
            let live = w.ghost.probes.get(&w.m.generation()) == Some(&id);
            (first && live).then_some(Expected::Ready)
        }
        ServerFrame::InitOk(id) if w.m.state() == State::Initializing => {
            let first = w
                .env
                .on_wire
                .get(&id)
                .is_some_and(|(_, answers)| *answers == 0);
            let this_generation = w.ghost.owners.get(&id) == Some(&Owner::Init(w.m.generation()));
            (first && this_generation).then_some(Expected::Ready)
        }
        _ => None,
    }
}

/// After the step: what the frame had to bring about, it did.
pub(crate) fn expected_brought_about(w: &World, n: &mut World, expect: Option<Expected>) {
    match expect {
        Some(Expected::Reply(c)) => {
            let ok = n.ghost.calls.get(&c).is_some_and(|g| g.replies == 1);
            if !ok {
                fail(n, ANSWER_LOST);
            }
        }
        Some(Expected::Ready) => {
            let sent_ok = w.env.send_mode.is_none();
            if n.m.state() == State::Initializing || (sent_ok && n.m.state() != State::Ready) {
                fail(n, ANSWER_LOST);
            }
        }
        None => {}
    }
}

/// Whether a failure the machine gave a caller is the cause the environment brought about.
fn same_cause(failure: Option<&Failure>, cause: Option<Cause>) -> bool {
    use mcp_machine::Failure as F;
    matches!(
        (failure, cause),
        (None, None)
            | (Some(F::Transport(_)), Some(Cause::Down))
            | (Some(F::InitTimeout { .. }), Some(Cause::InitTimeout))
            | (Some(F::Oversized { .. }), Some(Cause::Oversized))
            | (Some(F::Refused(_)), Some(Cause::Refused))
            | (
                Some(F::UnsupportedVersion { .. }),
                Some(Cause::UnsupportedVersion)
            )
            | (Some(F::InitNotSent), Some(Cause::InitNotSent))
            | (Some(F::InitializedNotSent), Some(Cause::InitializedNotSent))
            | (Some(F::NotModern { .. }), Some(Cause::NotModern))
            | (Some(F::ProbeTimeout { .. }), Some(Cause::ProbeTimeout))
            | (Some(F::Unauthorized { .. }), Some(Cause::Unauthorized))
    )
}
