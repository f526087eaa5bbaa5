//! Frames and reports: every frame the server sends is reported (dropped as malformed,
//! oversized, unknown or late), delivered (notifications, progress) or answered as the
//! protocol says (server requests: the right code, or handed to the handler); every move
//! brings about what it must (a dead transport left at once, the handler's requests aborted
//! with their generation, a fallback of the probe said why); a late answer within its
//! tombstone's TTL is known as late, and no tombstone is held past its expiry plus one sweep
//! (memory stays bounded).

use mcp_machine::{ResponseId, State, TimerKind};
use stateright::Property;

use super::{fail, ok, session};
use crate::env::drain::StepLog;
use crate::env::frames::{OTHER_SAMPLING_ID, SAMPLING_ID, UNDECLARED_ID};
use crate::env::{call_options, live_generation};
use crate::model::Harness;
use crate::properties::guards as seen;
use crate::world::{Move, Owner, ServerFrame, World};

/// A move did not bring about what it must: a dropped frame reported, a notification or
/// progress delivered, a server request answered with the right code or handed to the
/// handler, a refused or spent request answered, a busy one offered again in time (also set
/// by [`super::sends`] and [`super::era`], whose checks are part of this property).
pub const UNREPORTED: u64 = 1 << 22;
/// A late answer within the tombstone TTL was reported as unknown.
pub const LATE_MISREPORTED: u64 = 1 << 9;

pub(super) fn every_frame_handled() -> Property<Harness> {
    Property::<Harness>::always(
        "every frame is reported, delivered or answered as the protocol says",
        |_, w| ok(w, UNREPORTED),
    )
}

pub(super) fn late_known_as_late() -> Property<Harness> {
    Property::<Harness>::always("late answers are recognised as late", |_, w| {
        ok(w, LATE_MISREPORTED)
    })
}

pub(super) fn tombstones_bounded() -> Property<Harness> {
    Property::<Harness>::always(
        "no tombstone is held past its expiry plus one sweep period",
        |_, w| {
            let sweep = w.m.config().tombstone_sweep;
            w.m.oldest_tombstone_expiry()
                .is_none_or(|exp| w.m.now() <= exp.saturating_add(sweep))
        },
    )
}

/// The machine reported an answer to an id it does not know: not a caller's id that ended
/// within its tombstone's TTL.
pub(crate) fn unknown_response(n: &mut World, id: &ResponseId) {
    let ttl = n.m.config().tombstone_ttl;
    let now = n.m.now();
    if let ResponseId::Number(id) = id
        && matches!(n.ghost.owners.get(id), Some(Owner::Call(_)))
        && n.ghost.ended.get(id).is_some_and(|at| now < *at + ttl)
    {
        fail(n, LATE_MISREPORTED);
    }
}

/// A frame on the live transport in initializing or ready, judged from what the machine did
/// in its step: dropped frames are reported, notifications and progress reach the
/// application, server requests are answered as the protocol says (or reach the handler).
/// Responses are judged by the properties of what they answer.
pub(crate) fn frame_handled(w: &World, n: &mut World, mv: Move, record: &StepLog) {
    let before = w.m.state();
    let fail = |n: &mut World| fail(n, UNREPORTED);
    if let Move::Frame(g, f) = mv
        && g == w.m.generation()
        && live_generation(w, g)
        && matches!(before, State::Initializing | State::Ready)
    {
        let reported = |kind: &str| record.reports.contains(&kind);
        let ready = before == State::Ready;
        let held = |id: i64| {
            w.env.server_requests.contains(&(g, id)) && !w.ghost.server_cancelled.contains(&(g, id))
        };
        let handling = held(SAMPLING_ID);
        // The model's handler holds one request at a time (the machine only knows of
        // requests it has not seen answered or cancelled).
        let full = w
            .env
            .server_requests
            .iter()
            .any(|(on, id)| *on == g && !w.ghost.server_cancelled.contains(&(g, *id)));
        // Owed frames wait behind others while the outbox is retrying, or a busy transport.
        let quiet = w.env.send_mode.is_some()
            || w.m
                .armed_timers()
                .iter()
                .any(|(k, _)| k.kind == TimerKind::OwedRetry);
        let ttl = w.m.config().tombstone_ttl;
        let code = |id: i64| record.response_code(id);
        let modern = w.ghost.discovered.contains(&g);
        let ok = match f {
            // A modern server's request is reported, never handled nor answered.
            _ if modern && f.server_request_id().is_some() => {
                record.server_requests.is_empty()
                    && f.server_request_id().and_then(code).is_none()
                    && reported("unexpected server request")
            }
            ServerFrame::Malformed => reported("malformed"),
            ServerFrame::Oversized => reported("oversized"),
            ServerFrame::Unknown => reported("unknown"),
            // Within its tombstone's TTL an ended id is known as late; after it, the
            // sweep may have forgotten it.
            // after it and one more sweep, it must be forgotten (memory stays bounded).
            ServerFrame::Answer(id) if w.ghost.ended.contains_key(&id) => {
                let at = w.ghost.ended.get(&id).copied().unwrap_or_default();
                let now = w.m.now();
                let sweep = w.m.config().tombstone_sweep;
                if now < at + ttl {
                    reported("late")
                } else if now >= at + ttl + sweep {
                    reported("unknown")
                } else {
                    reported("late") || reported("unknown")
                }
            }
            ServerFrame::Log => record.notifications == 1,
            // A listen's notification is delivered while its notifications are due (its
            // acknowledgement taken, neither given up nor ended), and dropped, reported,
            // otherwise; an untagged one is delivered.
            ServerFrame::ListenNote(id) if ready && modern => {
                let due = w
                    .ghost
                    .listens
                    .get(&id)
                    .is_some_and(|l| l.taken && l.alive());
                if due {
                    n.ghost.seen |= seen::LISTEN_DELIVERED;
                    record.notifications == 1
                } else {
                    n.ghost.seen |= seen::LISTEN_STRAY;
                    record.notifications == 0 && reported("stray")
                }
            }
            ServerFrame::ListenStray if ready && modern => {
                record.notifications == 0 && reported("stray")
            }
            ServerFrame::ListenNote(_) | ServerFrame::ListenStray => true,
            ServerFrame::ServerCancel => !ready || record.notifications == 1,
            ServerFrame::Progress(id) => {
                let asked = match w.ghost.owners.get(&id) {
                    Some(Owner::Call(c)) => {
                        call_options(*c, w.m.config().tasks).progress
                            && w.ghost.calls.get(c).is_some_and(|g| g.replies == 0)
                            && !w.ghost.ended.contains_key(&id)
                    }
                    _ => false,
                };
                if ready && asked {
                    record.progress.len() == 1 && record.notifications == 0
                } else {
                    record.progress.is_empty() && (!ready || record.notifications == 1)
                }
            }
            // Answers are judged by the code they carry, when they went out at once.
            ServerFrame::Ping if ready && handling => quiet || code(SAMPLING_ID) == Some(-32600),
            ServerFrame::Ping => quiet || code(SAMPLING_ID) == Some(0),
            ServerFrame::Sampling | ServerFrame::SamplingAgain if ready && handling => {
                quiet || code(SAMPLING_ID) == Some(-32600)
            }
            ServerFrame::Sampling | ServerFrame::SamplingAgain if ready && full => {
                quiet || code(SAMPLING_ID) == Some(-32000)
            }
            ServerFrame::Sampling | ServerFrame::SamplingAgain if ready => {
                record.server_requests == [SAMPLING_ID]
            }
            ServerFrame::SamplingOther if ready && held(OTHER_SAMPLING_ID) => {
                quiet || code(OTHER_SAMPLING_ID) == Some(-32600)
            }
            ServerFrame::SamplingOther if ready && full => {
                quiet || code(OTHER_SAMPLING_ID) == Some(-32000)
            }
            ServerFrame::SamplingOther if ready => record.server_requests == [OTHER_SAMPLING_ID],
            ServerFrame::ElicitUrl if ready && handling => {
                quiet || code(SAMPLING_ID) == Some(-32600)
            }
            ServerFrame::ElicitUrl if ready => quiet || code(SAMPLING_ID) == Some(-32602),
            ServerFrame::Undeclared if ready => quiet || code(UNDECLARED_ID) == Some(-32601),
            ServerFrame::Sampling
            | ServerFrame::SamplingAgain
            | ServerFrame::SamplingOther
            | ServerFrame::ElicitUrl
            | ServerFrame::Undeclared => {
                record.server_requests.is_empty()
                    && (quiet || f.server_request_id().and_then(code).is_some_and(|c| c < 0))
            }
            // Responses are judged by the properties of what they answer; a listen's
            // acknowledgement and its end by the server by the listen properties. A frame of
            // any other kind needs an arm of its own above: until it has one, it fails here.
            _ => {
                f.answered_id().is_some()
                    || matches!(f, ServerFrame::ListenAck(..) | ServerFrame::ListenCancel(_))
            }
        };
        if !ok {
            fail(n);
        }
    }
}

/// What the other moves must bring about, judged from what the machine did in the step: the
/// probe's fallback says why, a dead transport is left at once, a session the server ended
/// is left as the session rules say, and the handler's requests die with their generation.
pub(crate) fn move_brought_about(w: &World, n: &mut World, mv: Move, record: &StepLog) {
    let before = w.m.state();
    let fail = |n: &mut World| fail(n, UNREPORTED);
    // A silent probe that leads to `initialize` says so.
    if matches!(mv, Move::Timer(_) | Move::Tick | Move::Wait)
        && before == State::Probing
        && n.m.state() == State::Initializing
        && !record.reports.contains(&"probe timeout")
    {
        fail(n);
    }
    // A legacy answer to the probe that leads to `initialize` says why.
    if let Move::Frame(g, ServerFrame::ProbeError(_) | ServerFrame::DiscoverGarbage(_)) = mv
        && g == w.m.generation()
        && before == State::Probing
        && n.m.state() == State::Initializing
        && !record.reports.contains(&"probe fallback")
    {
        fail(n);
    }
    // A transport that dies is left at once (closing: closed at once).
    if let Move::Down(g) = mv
        && g == w.m.generation()
    {
        let left = match before {
            State::Starting | State::Initializing | State::Ready => n.m.state() == State::Backoff,
            // Auto, no verdict yet: a fresh process, taken for legacy.
            State::Probing => {
                n.m.state() == State::Backoff
                    || (n.m.state() == State::Starting && n.m.generation() == g + 1)
            }
            State::Closing => n.m.state() == State::Closed,
            State::Backoff | State::Closed => true,
        };
        if !left {
            fail(n);
        }
    }
    // A session the server ended: while the budget lasts a new one at once, the calls
    // that never ran kept and those that may have run answered now; past it, backoff.
    if let Move::Expire(g, mask) = mv
        && g == w.m.generation()
    {
        let left = match before {
            State::Ready => {
                session::expired(w, n, g, mask);
                true
            }
            State::Starting | State::Initializing => n.m.state() == State::Backoff,
            State::Probing => {
                n.m.state() == State::Backoff
                    || (n.m.state() == State::Starting && n.m.generation() == g + 1)
            }
            State::Closing => n.m.state() == State::Closed,
            State::Backoff | State::Closed => true,
        };
        if !left {
            fail(n);
        }
    }
    // The handler's requests of a generation that ends are aborted with it.
    let g = w.m.generation();
    let held = w
        .env
        .server_requests
        .iter()
        .any(|(on, id)| *on == g && !w.ghost.server_cancelled.contains(&(g, *id)));
    if held && before == State::Ready && n.m.state() != State::Ready && !record.aborted.contains(&g)
    {
        fail(n);
    }
}
