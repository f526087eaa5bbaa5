//! What goes on the wire: ids are never reused; `notifications/initialized` goes out once per
//! handshake, before any other legacy request; a cancel goes only for a request the server
//! saw, once, and never for a listen the server ended; and what is owed to the server (the
//! answers to its requests, the cancels of requests that ended early) goes on the wire once,
//! or is being retried.

use mcp_machine::{RequestId, State, TimerKind};
use stateright::Property;

use super::{fail, ok};
use crate::env::live_generation;
use crate::model::Harness;
use crate::world::World;

/// An id was issued twice.
pub const ID_REUSED: u64 = 1 << 3;
/// `notifications/cancelled` for a request the server never saw, or twice.
pub const BAD_CANCEL: u64 = 1 << 6;
/// `notifications/initialized` missing before a call, or sent twice.
pub const INITIALIZED: u64 = 1 << 8;
/// A server request (or a cancel we owe) is neither on the wire nor being retried, or
/// went on the wire twice.
pub const OWED: u64 = 1 << 21;

pub(super) fn ids_not_reused() -> Property<Harness> {
    Property::<Harness>::always("ids are never reused", |_, w| ok(w, ID_REUSED))
}

pub(super) fn cancels_once() -> Property<Harness> {
    Property::<Harness>::always("cancel only what the server saw, once", |_, w| {
        ok(w, BAD_CANCEL)
    })
}

pub(super) fn initialized_once() -> Property<Harness> {
    Property::<Harness>::always("initialized once, before any call", |_, w| {
        ok(w, INITIALIZED)
    })
}

pub(super) fn owed_once_or_retried() -> Property<Harness> {
    Property::<Harness>::always(
        "what is owed to the server goes on the wire once, or is being retried",
        |_, w| ok(w, OWED),
    )
}

/// A request went out under an id issued before to someone else, or a caller's request
/// went out again under a new id when nothing called for it.
pub(crate) fn reused(n: &mut World) {
    fail(n, ID_REUSED);
}

/// A legacy request (`method`, not modern) went out on `generation`: only after
/// `notifications/initialized` went on the wire there.
pub(crate) fn request_after_initialized(
    n: &mut World,
    generation: u64,
    method: &str,
    modern_frame: bool,
) {
    if method != "initialize"
        && method != "server/discover"
        && !modern_frame
        && n.ghost.initialized.get(&generation).copied().unwrap_or(0) == 0
    {
        fail(n, INITIALIZED);
    }
}

/// `notifications/initialized` went on the wire, the `count`-th time on its generation.
pub(crate) fn initialized_delivered(n: &mut World, count: u8) {
    if count > 1 {
        fail(n, INITIALIZED);
    }
}

/// `notifications/cancelled` for request `id` went on the wire: the server saw `id`, and no
/// cancel went for it before (recorded here); a listen the server ended while the client kept
/// it is owed none.
pub(crate) fn cancel_delivered(n: &mut World, id: RequestId) {
    if !n.env.on_wire.contains_key(&id) || !n.ghost.cancels.insert(id) {
        fail(n, BAD_CANCEL);
    }
    if n.ghost.listens.get(&id).is_some_and(|l| l.dead) {
        fail(n, BAD_CANCEL);
    }
}

/// A response to server request `id` went on the wire on `generation`: it was owed (paid
/// here). A transport that refused a frame for good owes nothing any more; the model's
/// environment may still take frames on it.
pub(crate) fn response_delivered(n: &mut World, generation: u64, id: i64) {
    match n.ghost.owed.get_mut(&(generation, id)) {
        Some(count) if *count > 0 => *count -= 1,
        _ if n.ghost.refused.contains(&generation) => {}
        _ => fail(n, OWED),
    }
}

/// At the end of a step, on the open transport of the current generation in probing,
/// initializing or ready: what is owed (beyond what the handler holds) is being retried.
pub(crate) fn owed_paid_or_retrying(n: &mut World) {
    let g = n.m.generation();
    if !matches!(
        n.m.state(),
        State::Probing | State::Initializing | State::Ready
    ) || !live_generation(n, g)
    {
        return;
    }
    let retrying =
        n.m.armed_timers()
            .iter()
            .any(|(k, _)| k.kind == TimerKind::OwedRetry);
    let handed = |id: i64| u8::from(n.env.server_requests.contains(&(g, id)));
    let unpaid = n
        .ghost
        .owed
        .iter()
        .any(|(&(gen_, id), &count)| gen_ == g && count > handed(id))
        || n.ghost
            .cancel_owed
            .iter()
            .any(|id| n.env.on_wire.get(id).is_some_and(|(on, _)| *on == g));
    if unpaid && !retrying {
        fail(n, OWED);
    }
}
