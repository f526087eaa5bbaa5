//! What the ghost knows of task-backed tool calls, from the wire and the environment's moves
//! alone: which caller's `tools/call` the server answered with a task (and in which era), the
//! poll interval the server asked for, when the server answered the task's requests and what
//! it said (a status to act on, an outcome, an input round, an acknowledgement), the input
//! keys it acknowledged, whether the client may cancel it (its caller cancelled, its bound
//! passed, its input failed or was refused), and whether a lost connection left it to be
//! polled again. A task a caller resumes by its id in ready is followed the same way from the
//! resume on. [`crate::properties::tasks`] judges the machine's outputs against it.

use std::time::Duration;

use mcp_machine::{CallOptions, RequestId, State, TimerKind};
use serde_json::Value;

use super::call_ghost;
use crate::env::{NOTIFY_BASE, RESUMED_TASK, call_options};
use crate::world::{Move, Owner, ServerFrame, TaskGhost, TaskReply, TaskReq, World};

/// The server's interval in milliseconds (none: the last in force), floored and capped as the
/// client is configured (what the machine must use).
fn interval(n: &World, server_ms: Option<u64>, last: Duration) -> Duration {
    let c = n.m.config();
    server_ms
        .map_or(last, Duration::from_millis)
        .clamp(c.task_poll_min, c.task_poll_max.max(c.task_poll_min))
}

/// The input key bit of `key` (`q`: 1, `r`: 2, any other: 4).
pub(crate) fn key_bit(key: &str) -> u8 {
    match key {
        "q" => 1,
        "r" => 2,
        _ => 4,
    }
}

/// The caller whose task is `t<number>` (a task id the machine sent), if the server created it.
pub(crate) fn caller_of(n: &World, v: &Value) -> Option<u8> {
    let number: RequestId = v["params"]["taskId"]
        .as_str()?
        .strip_prefix('t')?
        .parse()
        .ok()?;
    n.ghost
        .tasks
        .iter()
        .find(|(_, t)| t.task == number)
        .map(|(c, _)| *c)
}

/// The task server's frame `f` on generation `g` arrives (judged from `w`, before the
/// machine takes it): a task created for a live call, or an answer to a task's live request.
pub(crate) fn frame(w: &World, n: &mut World, g: u64, f: ServerFrame, stale: bool) {
    let ServerFrame::Task {
        id, reply, modern, ..
    } = f
    else {
        return;
    };
    // (Also on a transport that refused a frame for good: its frames still arrive, and the
    // machine takes them.)
    let open = w
        .env
        .gens
        .get(&g)
        .is_some_and(|e| e.up && !e.closed && !e.down);
    let live = !stale && w.m.state() == State::Ready && g == w.m.generation() && open;
    let first = w.env.on_wire.get(&id).is_some_and(|(_, a)| *a == 0);
    if !live || !first {
        return;
    }
    let now = w.m.now();
    match w.ghost.owners.get(&id) {
        Some(Owner::Call(c))
            if reply == TaskReply::Created
                && *c < NOTIFY_BASE
                && w.m.config().tasks
                && w.ghost
                    .calls
                    .get(c)
                    .is_some_and(|x| x.replies == 0 && x.request == Some(id)) =>
        {
            let every = interval(n, Some(0), Duration::ZERO);
            n.ghost.tasks.insert(
                *c,
                TaskGhost {
                    task: id,
                    modern,
                    interval: every,
                    not_before: now.saturating_add(every),
                    ..TaskGhost::default()
                },
            );
            // The call's deadline is now its bound on the whole task, if it gave one.
            let bound = call_options(*c, true).task_timeout;
            if let Some(x) = n.ghost.calls.get_mut(c) {
                x.deadline = bound.map_or(Duration::MAX, |b| x.started.saturating_add(b));
                x.resend_due = None;
            }
        }
        Some(Owner::Task(c, _)) => {
            let c = *c;
            let Some(t) = w.ghost.tasks.get(&c) else {
                return;
            };
            if t.inflight != Some(id) || t.over {
                return;
            }
            let last = t.interval;
            let every = match reply {
                TaskReply::Working => interval(n, Some(3000), last),
                _ => last,
            };
            let Some(t) = n.ghost.tasks.get_mut(&c) else {
                return;
            };
            t.inflight = None;
            t.interval = every;
            match reply {
                TaskReply::Working | TaskReply::Error => {
                    t.not_before = now.saturating_add(every);
                }
                TaskReply::Ack => {
                    t.answered_keys |= t.updating;
                    t.updating = 0;
                    t.not_before = now.saturating_add(every);
                }
                // 2025-11-25: the outcome comes through `tasks/result`.
                TaskReply::InputRequired | TaskReply::Completed | TaskReply::Failed if !modern => {
                    t.settled = true;
                }
                // A round: the next poll waits for its inputs and their acknowledgement.
                TaskReply::InputRequired => {}
                TaskReply::InputRefused => {
                    t.may_cancel = true;
                    t.over = true;
                }
                TaskReply::Completed
                | TaskReply::Failed
                | TaskReply::Cancelled
                | TaskReply::Lost
                | TaskReply::Outcome
                | TaskReply::OutcomeError
                | TaskReply::Created => t.over = true,
            }
        }
        _ => {}
    }
}

/// Caller `c` resumes task `t0` by its id with `options` (judged from `w`, before the machine
/// takes it): the caller waits from now, bounded by its bound on the whole task, and its
/// answer names the task; in ready the task is live in the connection's era, at the default
/// interval (floored and capped), its first poll due at once (the first contact: no interval
/// to respect) and owed in this step; elsewhere the caller is turned away at once.
pub(crate) fn resume(w: &World, n: &mut World, c: u8, options: &CallOptions) {
    let now = w.m.now();
    let mut call = call_ghost(&n.m, options);
    call.request = Some(RESUMED_TASK);
    call.deadline = options
        .task_timeout
        .map_or(Duration::MAX, |b| now.saturating_add(b));
    n.ghost.calls.insert(c, call);
    if w.m.state() != State::Ready {
        return;
    }
    let every = interval(n, None, n.m.config().task_poll_default);
    n.ghost.tasks.insert(
        c,
        TaskGhost {
            task: RESUMED_TASK,
            modern: w.ghost.discovered.contains(&w.m.generation()),
            interval: every,
            not_before: now,
            resumed: true,
            ..TaskGhost::default()
        },
    );
}

/// Before move `mv` is fed to the machine: a caller's cancel, or a handler's error to a
/// task's input, lets the client cancel the task on the server.
pub(crate) fn before_move(w: &World, n: &mut World, mv: Move) {
    let caller = match mv {
        Move::Cancel(c) => Some(c),
        Move::InputReply(_, id, _, false) => match w.ghost.owners.get(&id) {
            Some(Owner::Task(c, _)) => Some(*c),
            _ => None,
        },
        _ => None,
    };
    if let Some(c) = caller
        && let Some(t) = n.ghost.tasks.get_mut(&c)
    {
        t.may_cancel = true;
    }
}

/// Whether caller `c`'s bound on its whole task has passed (model time).
pub(crate) fn deadline_passed(n: &World, c: u8) -> bool {
    let bound = call_options(c, true).task_timeout;
    match (bound, n.ghost.calls.get(&c)) {
        (Some(b), Some(x)) => n.m.now() >= x.started.saturating_add(b),
        _ => false,
    }
}

/// A request of caller `c`'s task went out: `req` (or a `tasks/cancel`, `None`) under id `id`
/// (`v`: the frame).
pub(crate) fn sent(n: &mut World, c: u8, req: Option<TaskReq>, id: RequestId, v: &Value) {
    let now = n.m.now();
    let Some(t) = n.ghost.tasks.get_mut(&c) else {
        return;
    };
    match req {
        Some(TaskReq::Get) => {
            t.not_before = now.saturating_add(t.interval);
            t.inflight = Some(id);
            t.repoll = false;
            t.resumed = false;
        }
        Some(TaskReq::Result) => {
            t.inflight = Some(id);
            t.settled = false;
        }
        Some(TaskReq::Update) => {
            t.updating = v["params"]["inputResponses"]
                .as_object()
                .map_or(0, |m| m.keys().fold(0, |bits, k| bits | key_bit(k)));
            t.handed = 0;
            t.inflight = Some(id);
        }
        None => t.cancels = t.cancels.saturating_add(1),
    }
}

/// At the end of a step: a task's request that ended is in flight no more; a connection lost
/// under a live task leaves it to be polled again at
/// the next ready, with nothing in flight and no round under way.
pub(crate) fn after_step(w: &World, n: &mut World) {
    // A task's request whose timers are gone ended (answered, timed out, given up): an answer
    // to it now is late.
    let timers = n.m.armed_timers();
    for t in n.ghost.tasks.values_mut() {
        if let Some(id) = t.inflight
            && !timers.iter().any(|(k, _)| {
                k.id == Some(id)
                    && matches!(k.kind, TimerKind::RequestTimeout | TimerKind::SendRetry)
            })
        {
            t.inflight = None;
        }
    }
    if w.m.state() == State::Ready && n.m.state() != State::Ready {
        let calls = &n.ghost.calls;
        for (c, t) in n.ghost.tasks.iter_mut() {
            let waiting = calls.get(c).is_some_and(|x| x.replies == 0);
            if waiting && !t.over {
                t.repoll = true;
                t.settled = false;
                t.inflight = None;
                t.handed = 0;
                t.updating = 0;
            }
        }
    }
}
