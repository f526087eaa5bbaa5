//! The ghost history: what the environment has seen of the machine's outputs (its actions and
//! armed deadlines), kept in [`crate::world::Ghost`] so that the properties can judge the
//! machine without reading its own bookkeeping. Each module learns one kind of fact: the
//! actions ([`interpret`], [`send`], [`reply`]), what the server saw on the wire ([`wire`]),
//! a frame of the server before the machine takes it ([`frame`]), the listens ([`listen`]),
//! the authorizations ([`auth`]), and a transport attempt's end ([`attempt`]).

pub mod attempt;
pub mod auth;
pub mod frame;
pub mod interpret;
pub mod listen;
pub mod reply;
pub mod send;
pub mod tasks;
pub mod wire;

use mcp_machine::{CallOptions, Machine, RequestId};

use crate::properties::guards as seen;
use crate::world::{CallGhost, Owner, World};

/// A new call's ghost: its deadline from its options (the configured default timeout, or its
/// own).
pub(crate) fn call_ghost(m: &Machine, options: &CallOptions) -> CallGhost {
    let mut timeout = options.timeout.unwrap_or(m.config().request_timeout);
    if let Some(total) = options.max_total_timeout {
        timeout = timeout.min(total);
    }
    CallGhost {
        started: m.now(),
        deadline: m.now().saturating_add(timeout),
        ..CallGhost::default()
    }
}

/// A caller's request found the transport busy: the guard of a busy send later succeeding.
pub(crate) fn mark_busy(n: &mut World, id: RequestId) {
    if let Some(Owner::Call(c)) = n.ghost.owners.get(&id).copied()
        && let Some(g) = n.ghost.calls.get_mut(&c)
    {
        g.busy_seen = true;
    }
}

/// At the end of a step: the guard of three calls in flight at once.
pub(crate) fn calls_in_flight(n: &mut World) {
    let in_flight = n
        .ghost
        .calls
        .iter()
        .filter(|(c, g)| **c < crate::env::NOTIFY_BASE && g.replies == 0 && g.request.is_some())
        .count();
    if in_flight >= 3 {
        n.ghost.seen |= seen::THREE_IN_FLIGHT;
    }
}
