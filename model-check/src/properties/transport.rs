//! Transports: the machine writes to and credits only the open transport of the current
//! generation, closes every transport before it spawns the next, always reads an open one,
//! never gives more read credit than the read window, and inputs of an older generation
//! change nothing.

use mcp_machine::State;
use stateright::Property;

use super::{fail, ok};
use crate::env::live_generation;
use crate::model::Harness;
use crate::world::World;

/// An input of an older generation changed something.
pub const STALE_CHANGED: u64 = 1 << 5;
/// Credit granted to a closed or dead transport.
pub const CREDIT_AFTER_CLOSE: u64 = 1 << 7;
/// A frame was offered to a closed or dead generation, or to one that is not current.
pub const SENT_ON_DEAD: u64 = 1 << 15;
/// A new transport was spawned while an older one was neither closed nor down.
pub const LEAKED_TRANSPORT: u64 = 1 << 16;
/// A transport open in initializing or ready had no read credit.
pub const DEAF: u64 = 1 << 20;

pub(super) fn stale_changes_nothing() -> Property<Harness> {
    Property::<Harness>::always("stale generations change nothing", |_, w| {
        ok(w, STALE_CHANGED)
    })
}

pub(super) fn credit_only_open() -> Property<Harness> {
    Property::<Harness>::always("credit only for the open transport", |_, w| {
        ok(w, CREDIT_AFTER_CLOSE)
    })
}

/// What waits between a transport and the machine is bounded by the read window: a frame
/// taken gives one credit back, never more.
pub(super) fn credit_within_window() -> Property<Harness> {
    Property::<Harness>::always("no more credit than the read window", |_, w| {
        let window = w.m.config().read_window.max(1);
        w.env.gens.values().all(|g| u32::from(g.credit) <= window)
    })
}

pub(super) fn frames_only_open() -> Property<Harness> {
    Property::<Harness>::always("frames only to the open transport", |_, w| {
        ok(w, SENT_ON_DEAD)
    })
}

pub(super) fn closed_before_spawn() -> Property<Harness> {
    Property::<Harness>::always("a transport is closed before the next spawns", |_, w| {
        ok(w, LEAKED_TRANSPORT)
    })
}

pub(super) fn open_always_read() -> Property<Harness> {
    Property::<Harness>::always("an open transport is always read", |_, w| ok(w, DEAF))
}

/// The machine spawns a transport: every older one was closed by the machine (a dead one
/// too: closing is what reaps it).
pub(crate) fn spawned(n: &mut World) {
    if n.env.gens.values().any(|g| !g.closed) {
        fail(n, LEAKED_TRANSPORT);
    }
}

/// The machine grants read credit to `generation`: only the current one, open. Whether it
/// may take the credit.
pub(crate) fn credit_for_open(n: &mut World, generation: u64) -> bool {
    let current = n.m.generation();
    let open = n
        .env
        .gens
        .get(&generation)
        .is_some_and(|g| !g.closed && !g.down && generation == current);
    if !open {
        fail(n, CREDIT_AFTER_CLOSE);
    }
    open
}

/// The machine offers a frame to `generation`: only the current one, open.
pub(crate) fn on_send(n: &mut World, generation: u64) {
    if n.env
        .gens
        .get(&generation)
        .is_none_or(|g| g.closed || g.down)
        || generation != n.m.generation()
    {
        fail(n, SENT_ON_DEAD);
    }
}

/// After a move of an older generation (`stale`): it changed nothing, not the machine and
/// no action (`emitted`: the actions of the step).
pub(crate) fn stale_changed_nothing(w: &World, n: &mut World, stale: bool, emitted: usize) {
    if stale && (emitted > 0 || n.m != w.m) {
        fail(n, STALE_CHANGED);
    }
}

/// At the end of a step: an open transport of the current generation in probing,
/// initializing or ready has a read credit.
pub(crate) fn always_read(n: &mut World) {
    let g = n.m.generation();
    if matches!(
        n.m.state(),
        State::Probing | State::Initializing | State::Ready
    ) && live_generation(n, g)
        && n.env.gens.get(&g).is_some_and(|e| e.credit == 0)
    {
        fail(n, DEAF);
    }
}
