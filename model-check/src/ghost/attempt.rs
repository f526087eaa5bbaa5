//! What the ghost knows of a transport attempt (spawn, handshake, ready, its end): why it
//! ended (the cause callers turned away must be told), which generations were spawned at once
//! after a server died of the probe and whether the next must probe again, the era the last
//! ready spoke, and the debts and deadlines that die with it (forgotten, so that histories
//! differing only there are one state).

use mcp_machine::{EraMode, SendOutcome, State, TimerKind};
use std::time::Duration;

use crate::env::drain::StepLog;
use crate::env::live_generation;
use crate::properties::guards as seen;
use crate::world::{Cause, Move, Owner, ServerFrame, World};

/// At the end of a step: why an attempt that ended did (into backoff, or from ready straight
/// into a new session, or from probing into a fresh process taken for legacy), the
/// generations spawned at once after a server died of the probe, and whether the next
/// generation must probe again. `era`: the client's era mode.
pub(crate) fn step_end(era: EraMode, w: &World, n: &mut World, mv: Move, record: &StepLog) {
    let state = n.m.state();
    let reinit = state == State::Starting && matches!(w.m.state(), State::Ready | State::Probing);
    if (state == State::Backoff && w.m.state() != State::Backoff) || reinit {
        // A handshake request (`initialize`, `server/discover`) the transport did not take
        // ends the attempt whatever move made the machine send it.
        let unsent = record.request_outcomes.iter().any(|(id, outcome)| {
            *outcome != SendOutcome::Ok
                && matches!(
                    n.ghost.owners.get(id),
                    Some(Owner::Init(_) | Owner::Probe(_))
                )
        });
        n.ghost.cause = if unsent {
            Some(Cause::InitNotSent)
        } else {
            cause_of(mv, w.m.state())
        };
    }
    if state == State::Starting && w.m.state() == State::Probing {
        n.ghost.respawned.insert(n.m.generation());
    }
    // A respawned generation's handshake failed: its tentative verdict must not outlive it
    // (a good answer to `initialize` confirms it, even if `initialized` then fails).
    // (`initialize` may also go out and fail in the step the transport comes up.)
    let init_in_step = record
        .sends
        .iter()
        .any(|(g, _, v)| *g == w.m.generation() && v["method"] == "initialize");
    if state == State::Backoff
        && (w.m.state() == State::Initializing || (w.m.state() == State::Starting && init_in_step))
        && n.ghost.respawned.contains(&w.m.generation())
        && !matches!(mv, Move::Frame(_, ServerFrame::InitOk(_)))
    {
        n.ghost.must_probe = true;
    }
    if state == State::Backoff
        && w.m.state() == State::Probing
        && n.ghost.cause == Some(Cause::NotModern)
        && era == EraMode::Modern
    {
        n.ghost.seen |= seen::FORCED_REFUSED;
    }
}

/// At the end of a step: debts die with their transport, and an answered call has no
/// deadline: the ghost forgets them, so that histories differing only there are one state.
pub(crate) fn forget(n: &mut World) {
    let g = n.m.generation();
    let live = live_generation(n, g);
    // A modern server is owed no response (a legacy guess proved wrong drops what was).
    let modern = n.ghost.discovered.contains(&g);
    n.ghost
        .owed
        .retain(|(on, _), count| live && !modern && *on == g && *count > 0);
    let on_wire = &n.env.on_wire;
    n.ghost
        .cancel_owed
        .retain(|id| live && on_wire.get(id).is_some_and(|(on, _)| *on == g));
    n.ghost.refused.retain(|on| *on == g);
    // A request of the client's own is retried while it lives: in ready, on its
    // generation, and (a listen) not given up.
    let ready = n.m.state() == State::Ready;
    let owners = &n.ghost.owners;
    let listens = &n.ghost.listens;
    n.ghost.own_busy.retain(|id, (_, due)| {
        let mine = matches!(owners.get(id),
            Some(Owner::Listen(on) | Owner::Relist(on) | Owner::Restore(on)) if *on == g);
        let alive = listens.get(id).is_none_or(|l| l.alive());
        ready && mine && alive && due.is_some()
    });
    n.ghost.server_cancelled.retain(|(on, _)| live && *on == g);
    for call in n.ghost.calls.values_mut().filter(|c| c.replies > 0) {
        call.started = Duration::ZERO;
        call.deadline = Duration::ZERO;
        call.busy = 0;
        call.resend_due = None;
    }
}

/// At the end of a step that entered ready: the era this server was last found to speak (the
/// client's verdict), and the guards of how ready was reached.
pub(crate) fn ready_entered(w: &World, n: &mut World) {
    let g = n.m.generation();
    if n.m.state() == State::Ready && w.m.state() != State::Ready {
        n.ghost.verdict_modern = n.ghost.discovered.contains(&g);
        if n.ghost.discovered.contains(&g) {
            n.ghost.seen |= seen::READY_MODERN;
            if n.ghost.version_refused.contains(&g) {
                n.ghost.seen |= seen::READY_MODERN_AFTER_RETRY;
            }
            if n.ghost.init_sent.contains(&g) {
                n.ghost.seen |= seen::REPROBED_MODERN;
            }
        } else if n.ghost.probes.contains_key(&g) {
            n.ghost.seen |= seen::READY_LEGACY_AFTER_PROBE;
            if n.ghost.silent.contains(&g) {
                n.ghost.seen |= seen::READY_LEGACY_AFTER_SILENCE;
            }
        }
        if !n.ghost.discovered.contains(&g) && n.ghost.respawned.contains(&g) {
            n.ghost.seen |= seen::READY_LEGACY_RESPAWNED;
        }
    }
}

/// At the end of a step: the guards of being ready, and of reconnects reaching it.
pub(crate) fn ready_guards(n: &mut World) {
    if n.m.state() == State::Ready {
        n.ghost.seen |= seen::READY;
        if n.m.generation() >= 2 {
            n.ghost.seen |= seen::RECONNECT_READY;
        }
        if n.m.generation() >= 3 {
            n.ghost.seen |= seen::SECOND_RECONNECT_READY;
        }
    }
}

/// Why a move that sent the machine to backoff ended the attempt (`None`: not judged).
fn cause_of(mv: Move, from: State) -> Option<Cause> {
    match (mv, from) {
        (Move::Down(_) | Move::Expire(..), _) => Some(Cause::Down),
        (Move::Frame(_, ServerFrame::Oversized), _) => Some(Cause::Oversized),
        (Move::Frame(_, ServerFrame::InitError(_)), _) => Some(Cause::Refused),
        (Move::Frame(_, ServerFrame::InitBadVersion(_)), _) => Some(Cause::UnsupportedVersion),
        (Move::Frame(_, ServerFrame::InitOk(_)), _) => Some(Cause::InitializedNotSent),
        (Move::Up(..), _) => Some(Cause::InitNotSent),
        (
            Move::Frame(_, ServerFrame::DiscoverVersion(_) | ServerFrame::InitModernRefusal(_)),
            _,
        ) => Some(Cause::Refused),
        (
            Move::Frame(
                _,
                ServerFrame::ProbeError(_)
                | ServerFrame::DiscoverGarbage(_)
                | ServerFrame::Malformed
                | ServerFrame::Unknown,
            ),
            State::Probing,
        ) => Some(Cause::NotModern),
        (Move::Frame(_, ServerFrame::AuthRequired(_)), State::Probing | State::Initializing)
        | (Move::Authorize(_, false), _) => Some(Cause::Unauthorized),
        (Move::Timer(key), State::Probing) if key.kind == TimerKind::ProbeTimeout => {
            Some(Cause::ProbeTimeout)
        }
        (Move::Timer(_) | Move::Tick, State::Starting | State::Probing | State::Initializing) => {
            Some(Cause::InitTimeout)
        }
        _ => None,
    }
}
