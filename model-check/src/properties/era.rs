//! The era and the handshake: the era (2026-07-28 or the handshake era) is decided before a
//! modern request goes out, `initialize` never goes to a server that answered the probe as a
//! modern one, and only a legacy server is answered; ready knows the server the handshake
//! accepted; a legacy guess whose handshake failed is probed again; a server that dies of the
//! probe is spawned again at once in auto (unless last found modern); and an answer to a
//! handshake request given up on its transport is reported (known as late while the attempt
//! that gave it up runs).

use mcp_machine::{EraMode, State};
use stateright::Property;

use super::backoff::reconnect_at;
use super::reports::UNREPORTED;
use super::{fail, ok};
use crate::env::drain::StepLog;
use crate::env::live_generation;
use crate::model::Harness;
use crate::world::{Move, Owner, World};

/// A modern request went out on a generation before the server answered its probe as a
/// modern server, `initialize` went to a server that answered the probe as a modern one,
/// or a response (to a server request) went to a server whose era is modern or undecided.
pub const ERA: u64 = 1 << 27;
/// A generation taken for legacy after its server died of the probe failed its
/// handshake, and the next generation did not probe again.
pub const VERDICT: u64 = 1 << 28;
/// A server that died of the probe was not spawned again at once in auto (the server not
/// last found modern), or was spawned again without a backoff delay otherwise.
pub const RESPAWN: u64 = 1 << 30;
/// While the attempt that gave it up still ran (probing or initializing, within its bound,
/// which a tombstone outlasts), an answer to a handshake request given up for a newer one on
/// the same transport was not known as late.
pub const ABANDONED_LATE: u64 = 1 << 35;

pub(super) fn ready_knows_server() -> Property<Harness> {
    Property::<Harness>::always("ready knows the server the handshake accepted", |_, w| {
        w.m.state() != State::Ready || w.m.server().is_some_and(|s| s.name() == "model")
    })
}

pub(super) fn era_decided() -> Property<Harness> {
    Property::<Harness>::always(
        "the era is decided before a modern request, initialize never goes to a modern server, and only a legacy server is answered",
        |_, w| ok(w, ERA),
    )
}

pub(super) fn verdict_probed_again() -> Property<Harness> {
    Property::<Harness>::always(
        "a legacy guess whose handshake failed is probed again",
        |_, w| ok(w, VERDICT),
    )
}

pub(super) fn respawn() -> Property<Harness> {
    Property::<Harness>::always(
        "a server that dies of the probe is spawned again at once in auto (unless it was last found modern), after a backoff delay otherwise",
        |_, w| ok(w, RESPAWN),
    )
}

pub(super) fn abandoned_answer_late() -> Property<Harness> {
    Property::<Harness>::always(
        "an answer to a handshake request given up on its transport is known as late while the attempt runs",
        |_, w| ok(w, ABANDONED_LATE),
    )
}

/// `initialize` goes out on `generation` (`first`: the generation's first handshake
/// request): not where the verdict says to probe, and never to a server that answered the
/// probe as a modern one.
pub(crate) fn initialize_sent(n: &mut World, generation: u64, first: bool) {
    if first && n.ghost.must_probe {
        fail(n, VERDICT);
    }
    if n.ghost.modern_answered.contains(&generation) {
        fail(n, ERA);
    }
}

/// Another request goes out on `generation`: a modern one (`modern_frame`) only once the
/// server answered that generation's probe with a DiscoverResult.
pub(crate) fn request_sent(n: &mut World, generation: u64, modern_frame: bool) {
    if modern_frame && !n.ghost.discovered.contains(&generation) {
        fail(n, ERA);
    }
}

/// A response to a server request goes out on `generation`: only a legacy server (one sent
/// `initialize`, not found modern) is ever answered.
pub(crate) fn response_sent(n: &mut World, generation: u64) {
    if !n.ghost.init_sent.contains(&generation) || n.ghost.discovered.contains(&generation) {
        fail(n, ERA);
    }
}

/// A server that dies of the probe: in auto, unless the server was last found modern (and
/// has not refused `initialize` as a modern one since), it is spawned again at once (taken
/// for legacy); otherwise the attempt waits out a backoff delay like any other failure.
/// (One that dies while the probe waits for an authorization did not die of it.)
pub(crate) fn died_of_probe(w: &World, n: &mut World, mv: Move) {
    if let Move::Down(dg) = mv
        && dg == w.m.generation()
        && w.m.state() == State::Probing
        && w.ghost.handshake_auth != Some(dg)
    {
        let at_once = n.m.config().era == EraMode::Auto && !n.ghost.verdict_modern;
        let respawned = n.m.generation() > w.m.generation();
        let waits = n.m.state() == State::Backoff && reconnect_at(&n.m).is_some();
        if at_once != respawned || respawned == waits {
            fail(n, RESPAWN);
        }
    }
}

/// An answer to a handshake request given up for a newer one on the same transport (a probe
/// the machine fell back from, after an answer or after its silence, or sent again after an
/// authorization; an `initialize` refused as a modern server refuses it, the probe sent
/// after it) is reported: late while its tombstone lasts, unknown after (see
/// [`UNREPORTED`]).
///
/// And while the attempt that gave the request up still runs (probing or initializing) it is
/// known as late ([`ABANDONED_LATE`]): the machine tombstones a handshake request it gives
/// up, and the attempt is younger than a tombstone lives. The ghost bounds the attempt's age
/// by its phase deadline (the attempt began at that deadline less the init bound, and gave
/// the request up since), so the check needs no history of its own.
pub(crate) fn abandoned_answer(w: &World, n: &mut World, mv: Move, record: &StepLog) {
    let before = w.m.state();
    if let Move::Frame(g, f) = mv
        && g == w.m.generation()
        && live_generation(w, g)
        && matches!(before, State::Probing | State::Initializing | State::Ready)
        && let Some(id) = f.answered_id()
        && matches!(w.ghost.owners.get(&id), Some(Owner::Probe(o) | Owner::Init(o)) if *o == g)
        && w.ghost
            .owners
            .range(id + 1..)
            .any(|(_, o)| matches!(o, Owner::Probe(x) | Owner::Init(x) if *x == g))
    {
        let late = record.reports.contains(&"late");
        if !late && !record.reports.contains(&"unknown") {
            fail(n, UNREPORTED);
        }
        if !late && matches!(before, State::Probing | State::Initializing) && tombstone_lasts(w) {
            fail(n, ABANDONED_LATE);
        }
    }
}

/// Whether a tombstone made since the current attempt began still lasts (the attempt's
/// phase deadline is its start plus the init bound).
fn tombstone_lasts(w: &World) -> bool {
    let c = w.m.config();
    let bound = if w.m.generation() <= 1 {
        c.connect_timeout
    } else {
        c.init_timeout
    };
    w.ghost
        .phase_deadline
        .is_some_and(|d| w.m.now() < d.saturating_sub(bound).saturating_add(c.tombstone_ttl))
}
