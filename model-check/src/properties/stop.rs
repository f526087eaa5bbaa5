//! Stop: every stop is answered once, at once (only one told "stopped"); after it every call
//! has exactly one answer and nothing more is sent; and stopping is the only way the
//! connection closes, with its exit and every transport closed.

use mcp_machine::{CallId, State};
use stateright::Property;

use super::{fail, ok};
use crate::model::Harness;
use crate::world::{Move, World};

/// A frame was sent after the stop was accepted.
pub const SENT_AFTER_STOP: u64 = 1 << 2;
/// A stop was not answered at once, or two stops were both told "stopped".
pub const STOP_REPLY: u64 = 1 << 11;
/// The connection closed without a stop, or closed without its exit, or a transport
/// generation was never closed.
pub const UNASKED_CLOSE: u64 = 1 << 23;

pub(super) fn every_call_answered() -> Property<Harness> {
    Property::<Harness>::always("after stop every call has exactly one answer", |_, w| {
        !w.ghost.stop_accepted || w.ghost.calls.values().all(|c| c.replies == 1)
    })
}

pub(super) fn nothing_sent() -> Property<Harness> {
    Property::<Harness>::always("nothing is sent after stop", |_, w| ok(w, SENT_AFTER_STOP))
}

pub(super) fn stop_answered_once() -> Property<Harness> {
    Property::<Harness>::always("every stop is answered once", |_, w| ok(w, STOP_REPLY))
}

pub(super) fn closes_only_when_stopped() -> Property<Harness> {
    Property::<Harness>::always(
        "the connection closes only when stopped, with its exit, every transport closed",
        |_, w| ok(w, UNASKED_CLOSE),
    )
}

/// The machine sends a frame: not after the stop was accepted.
pub(crate) fn on_send(n: &mut World) {
    if n.ghost.stop_accepted {
        fail(n, SENT_AFTER_STOP);
    }
}

/// The machine answers a stop (stopper `call - 100`): once, and only one stop is told
/// "stopped" (not "already").
pub(crate) fn stop_done(n: &mut World, call: CallId, already: bool) {
    let s = u8::try_from(call.0.saturating_sub(100)).unwrap_or(u8::MAX);
    let count = n.ghost.stops.entry(s).or_default();
    *count += 1;
    if *count > 1 || (!already && n.ghost.stop_accepted) {
        fail(n, STOP_REPLY);
    }
    if !already {
        n.ghost.stop_accepted = true;
    }
}

/// A stop is answered at once.
pub(crate) fn answered_at_once(n: &mut World, mv: Move) {
    if let Move::Stop(s) = mv
        && n.ghost.stops.get(&s) != Some(&1)
    {
        fail(n, STOP_REPLY);
    }
}

/// The machine asks the driver to exit: once, and only once stopped.
pub(crate) fn exit(n: &mut World) {
    if n.ghost.exited || !n.ghost.stop_accepted {
        fail(n, UNASKED_CLOSE);
    }
    n.ghost.exited = true;
}

/// At the end of a step: closing or closed only when stopped; closed only with its exit and
/// every transport closed.
pub(crate) fn closed_only_when_stopped(n: &mut World) {
    let state = n.m.state();
    if matches!(state, State::Closing | State::Closed) && !n.ghost.stop_accepted {
        fail(n, UNASKED_CLOSE);
    }
    if state == State::Closed && (!n.ghost.exited || n.env.gens.values().any(|e| !e.closed)) {
        fail(n, UNASKED_CLOSE);
    }
}
