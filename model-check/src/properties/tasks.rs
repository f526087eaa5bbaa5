//! Task-backed tool calls (the 2025-11-25 tasks utility and the 2026-07-28 extension; the
//! ghost follows each task from the wire and the environment's moves alone,
//! [`crate::ghost::tasks`]):
//!
//! - a `tasks/get` goes out only for a live task (its caller waiting, the server not having
//!   ended it, no final status to fetch on this connection, not after stop), never before its
//!   interval (the server's, floored and capped) since the last answer to the task or the
//!   last poll; and a live task in ready is always being polled (its poll armed, a request of
//!   its in flight, or its inputs with the handler);
//! - a task is cancelled on the server at most once, only with `tasks/cancel` (never
//!   `notifications/cancelled` for its requests), and only once its caller cancelled, its
//!   bound passed, or its input failed or was refused;
//! - an input key of a 2026-07-28 task is handed to the handler at most once while the server
//!   has it answered (deduplicated across polls);
//! - a task survives a lost connection: its caller is never answered `ConnectionLost`;
//! - a task resumed by its id in ready is polled at once (its first `tasks/get` in the step
//!   of the resume, then as any task); a resume in any other state is answered at once,
//!   `unavailable` (the shutdown error when closing or closed);
//! - a task's timers die with its caller (its deadline, as every call's, is judged by
//!   [`super::deadlines`]: the caller's bound on the whole task).

use mcp_machine::{CallError, Payload, RequestId, State, TimerKind};
use stateright::Property;

use super::{fail, ok};
use crate::env::{RESUMER, live_generation};
use crate::ghost::tasks::{deadline_passed, key_bit};
use crate::model::Harness;
use crate::properties::guards as seen;
use crate::world::{Move, Owner, TaskReq, World};

/// A `tasks/get` for a task that is not live or not due, or a live task in ready not being
/// polled.
pub const TASK_POLL: u64 = 1 << 36;
/// A task cancelled on the server twice, with `notifications/cancelled`, or without cause.
pub const TASK_CANCEL: u64 = 1 << 37;
/// An input key of a task handed to the handler again while answered.
pub const TASK_INPUT: u64 = 1 << 38;
/// A task's caller answered `ConnectionLost`.
pub const TASK_KEPT: u64 = 1 << 39;
/// A resume in ready whose first `tasks/get` did not go out at once, or a resume elsewhere
/// not answered at once with `unavailable` (the shutdown error when closing or closed).
pub const TASK_RESUME: u64 = 1 << 40;

pub(super) fn polled_when_due() -> Property<Harness> {
    Property::<Harness>::always(
        "a task is polled only while live and due, never before its interval, and always while live in ready",
        |_, w| ok(w, TASK_POLL),
    )
}

pub(super) fn cancelled_once() -> Property<Harness> {
    Property::<Harness>::always(
        "a task is cancelled on the server at most once, with tasks/cancel, only when its caller stopped waiting",
        |_, w| ok(w, TASK_CANCEL),
    )
}

pub(super) fn inputs_once() -> Property<Harness> {
    Property::<Harness>::always(
        "a task's input is handed to the handler at most once while answered",
        |_, w| ok(w, TASK_INPUT),
    )
}

pub(super) fn kept_across_reconnects() -> Property<Harness> {
    Property::<Harness>::always(
        "a live task survives a reconnect (its caller never answered ConnectionLost)",
        |_, w| ok(w, TASK_KEPT),
    )
}

pub(super) fn resumed() -> Property<Harness> {
    Property::<Harness>::always(
        "a task resumed in ready is polled at once; a resume elsewhere is answered at once, unavailable or shut down",
        |_, w| ok(w, TASK_RESUME),
    )
}

pub(super) fn timers_die() -> Property<Harness> {
    Property::<Harness>::always("a task's timers die with its caller", |_, w| {
        w.m.armed_timers().iter().all(|(k, _)| match k.kind {
            TimerKind::TaskPoll | TimerKind::TaskDeadline => {
                k.id.and_then(|c| u8::try_from(c).ok()).is_some_and(|c| {
                    w.ghost.tasks.contains_key(&c)
                        && w.ghost.calls.get(&c).is_some_and(|x| x.replies == 0)
                })
            }
            _ => true,
        })
    })
}

/// A `tasks/get` for caller `c`'s task goes out: the task is live and due.
pub(crate) fn get_sent(n: &mut World, c: u8) {
    let now = n.m.now();
    let answered = n.ghost.calls.get(&c).is_none_or(|x| x.replies > 0);
    // No exemption after a lost connection: the table keeps a waiting task's timer, and a task
    // whose request the connection took waits its interval again.
    let bad = n.ghost.tasks.get(&c).is_none_or(|t| {
        let early = now < t.not_before;
        t.over || t.settled || answered || early || n.ghost.stop_accepted
    });
    if bad {
        fail(n, TASK_POLL);
    }
    if n.ghost.tasks.get(&c).is_some_and(|t| t.repoll) {
        n.ghost.seen |= seen::TASK_RESUMED;
    }
}

/// A `tasks/cancel` for caller `c`'s task goes out: the first, and the caller stopped waiting
/// (cancelled, its bound passed, its input failed or was refused).
pub(crate) fn cancel_sent(n: &mut World, c: u8) {
    let passed = deadline_passed(n, c);
    let bad = n
        .ghost
        .tasks
        .get(&c)
        .is_none_or(|t| t.cancels > 0 || !(t.may_cancel || passed));
    if bad {
        fail(n, TASK_CANCEL);
    }
}

/// `notifications/cancelled` for request `id` went on the wire: not a task's request, nor
/// the call a task answered.
pub(crate) fn cancel_notified(n: &mut World, id: RequestId) {
    let task_request = matches!(
        n.ghost.owners.get(&id),
        Some(Owner::Task(..) | Owner::TaskCancel(_))
    );
    if task_request || n.ghost.tasks.values().any(|t| t.task == id) {
        fail(n, TASK_CANCEL);
    }
}

/// An input request `key` of the round that came with `request` went to the handler: if that
/// is a task's poll, the key is neither answered for the task nor handed already.
pub(crate) fn input_handed(n: &mut World, request: RequestId, key: &str) {
    let Some(Owner::Task(c, TaskReq::Get)) = n.ghost.owners.get(&request).copied() else {
        return;
    };
    let bit = key_bit(key);
    let Some(t) = n.ghost.tasks.get_mut(&c) else {
        return;
    };
    let again = (t.answered_keys | t.handed) & bit != 0;
    t.handed |= bit;
    if again {
        fail(n, TASK_INPUT);
    }
}

/// Caller `c` is answered: a task's caller is never answered `ConnectionLost`; a resume
/// turned away (no task recorded: not in ready) is answered `unavailable`, or the shutdown
/// error when closing or closed.
pub(crate) fn replied(n: &mut World, c: u8, outcome: &Result<Payload, CallError>) {
    if c == RESUMER && !n.ghost.tasks.contains_key(&c) {
        let closing = matches!(n.m.state(), State::Closing | State::Closed);
        let right = match outcome {
            Err(CallError::Shutdown) => closing,
            Err(CallError::Unavailable { .. }) => !closing,
            _ => false,
        };
        if !right {
            fail(n, TASK_RESUME);
        }
        return;
    }
    if !n.ghost.tasks.contains_key(&c) {
        return;
    }
    if c == RESUMER && matches!(outcome, Ok(_) | Err(CallError::TaskLost { .. })) {
        n.ghost.seen |= seen::TASK_RESUME_ANSWERED;
    }
    match outcome {
        Err(CallError::ConnectionLost(_)) => fail(n, TASK_KEPT),
        Ok(_) => n.ghost.seen |= seen::TASK_OK,
        Err(CallError::Timeout { .. }) => n.ghost.seen |= seen::TASK_TIMED_OUT,
        Err(_) => {}
    }
}

/// At the end of the step of a resume (from `w`): in ready, the resumed task's first
/// `tasks/get` went out in this step; elsewhere, its caller was answered in this step (how:
/// [`replied`]).
pub(crate) fn resume_handled(w: &World, n: &mut World, mv: Move) {
    let Move::Resume(c) = mv else {
        return;
    };
    let done = if w.m.state() == State::Ready {
        n.ghost.tasks.get(&c).is_some_and(|t| !t.resumed)
    } else {
        n.ghost.calls.get(&c).is_some_and(|x| x.replies > 0)
    };
    if !done {
        fail(n, TASK_RESUME);
    }
}

/// At the end of a step, in ready on the open transport: every live task is being polled (its
/// poll armed, one of its requests in flight, or its inputs with the handler).
pub(crate) fn always_polled(n: &mut World) {
    let g = n.m.generation();
    if n.m.state() != State::Ready || !live_generation(n, g) {
        return;
    }
    let timers = n.m.armed_timers();
    let owners = &n.ghost.owners;
    let of_task =
        |id: RequestId, c: u8| matches!(owners.get(&id), Some(Owner::Task(t, _)) if *t == c);
    let stuck = n.ghost.tasks.iter().any(|(&c, t)| {
        let waiting = n.ghost.calls.get(&c).is_some_and(|x| x.replies == 0);
        let polled = timers.iter().any(|(k, _)| match k.kind {
            TimerKind::TaskPoll => k.id == Some(u64::from(c)),
            TimerKind::RequestTimeout | TimerKind::SendRetry => {
                k.id.is_some_and(|id| of_task(id, c))
            }
            _ => false,
        }) || n.env.inputs.iter().any(|(_, id, _)| of_task(*id, c));
        waiting && !t.over && !polled
    });
    if stuck {
        fail(n, TASK_POLL);
    }
}
