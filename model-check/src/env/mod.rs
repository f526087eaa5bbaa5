//! The environment around the machine, and what the driver does for it: the moves the
//! callers, the transports, the server, the handler and the clock may make ([`moves`]), how a
//! move is fed to the machine and its step settled ([`apply`]), how the machine's actions are
//! carried out and recorded ([`drain`], as the runtime's driver carries them out), and the
//! server's frames ([`frames`]).

pub mod apply;
pub mod drain;
pub mod frames;
pub mod moves;

use std::time::Duration;

use mcp_machine::{CallId, CallOptions, CallRequest, Input, RequestId, SessionChange};
use serde_json::json;

use crate::world::{Owner, World};

/// The caller number of the subscriber.
pub const SUBSCRIBER: u8 = 60;
/// The caller number of the unsubscriber.
pub const UNSUBSCRIBER: u8 = 61;
/// The resource the subscriber subscribes to.
pub const URI: &str = "file:///watched";
/// Caller numbers of notifies start here (calls are 1, 2, ...).
pub const NOTIFY_BASE: u8 = 50;
/// The caller number of the caller that resumes a task by its id (past the walks' 40 callers).
pub const RESUMER: u8 = 45;
/// The number of the task the resumer names (`t0`): no `tools/call` has id 0, so it is never
/// a task the client created; the server answers it as any task (it may know it or not).
pub const RESUMED_TASK: RequestId = 0;

/// The options of caller `caller`'s call: caller 1 asks for progress, which resets its
/// timeout, within a total cap; the others take the defaults. With tasks on (`tasks`),
/// caller 2 bounds its call (5 s) and, should the server run it as a task, the whole task
/// (8 s), as does the resumer its resumed task.
pub fn call_options(caller: u8, tasks: bool) -> CallOptions {
    match caller {
        RESUMER => CallOptions {
            task_timeout: Some(TASK_TIMEOUT),
            ..CallOptions::default()
        },
        1 => CallOptions {
            timeout: None,
            progress: true,
            reset_timeout_on_progress: true,
            max_total_timeout: Some(Duration::from_secs(60)),
            task_timeout: None,
            wait_for_ready: false,
        },
        2 if tasks => CallOptions {
            timeout: Some(TASK_CALL_TIMEOUT),
            task_timeout: Some(TASK_TIMEOUT),
            ..CallOptions::default()
        },
        _ => CallOptions::default(),
    }
}

/// The timeout of caller 2's call with tasks on (before the server makes it a task).
pub const TASK_CALL_TIMEOUT: Duration = Duration::from_secs(5);
/// Caller 2's bound on its whole task with tasks on.
pub const TASK_TIMEOUT: Duration = Duration::from_secs(8);

/// The call of the subscriber or the unsubscriber.
pub(crate) fn session_call(caller: u8, change: SessionChange) -> Input {
    let method = match change {
        SessionChange::Unsubscribe(_) => "resources/unsubscribe",
        SessionChange::Subscribe(_) | SessionChange::SetLogLevel(_) => "resources/subscribe",
    };
    Input::Call(CallRequest {
        call: CallId(u64::from(caller)),
        method: method.into(),
        params: Some(json!({ "uri": URI, "caller": caller })),
        options: CallOptions::default(),
        session: Some(change),
    })
}

/// The requests of generation `g` a server that ended its session may say it refused: those on
/// the wire there that are unanswered, of callers still waiting, in id order.
pub(crate) fn refusable(w: &World, g: u64) -> Vec<RequestId> {
    w.env
        .on_wire
        .iter()
        .filter(|(id, (on, answers))| {
            *on == g
                && *answers == 0
                && matches!(w.ghost.owners.get(id), Some(Owner::Call(c))
                    if w.ghost.calls.get(c).is_some_and(|x| x.replies == 0))
        })
        .map(|(id, _)| *id)
        .collect()
}

/// Whether generation `g` is the current one and open: up, neither closed nor down, and it
/// has not refused a frame for good.
pub(crate) fn live_generation(w: &World, g: u64) -> bool {
    g == w.m.generation()
        && !w.ghost.refused.contains(&g)
        && w.env
            .gens
            .get(&g)
            .is_some_and(|e| e.up && !e.closed && !e.down)
}
