//! The environment's moves: everything the callers, the transports, the server, the handler,
//! the authorization and the clock may do next in a state, in a fixed order, within the
//! configuration's bounds.

use std::time::Duration;

use mcp_machine::{SendOutcome, State, TimerKind};

use super::frames::SAMPLING_ID;
use super::{NOTIFY_BASE, RESUMER, SUBSCRIBER, UNSUBSCRIBER, refusable};
use crate::model::Harness;
use crate::world::{Junk, ListenEndKind, Move, Owner, ServerFrame, ServerKind, TaskReply, World};

impl Harness {
    /// The environment's possible moves, in a fixed order.
    pub fn moves(&self, w: &World, out: &mut Vec<Move>) {
        let b = &self.bounds;
        if w.env.calls < b.calls {
            out.push(Move::Call(w.env.calls + 1));
        }
        // A task resumed by its id, in any state (ready polls it; elsewhere it is turned away).
        if w.env.resumes < b.resumes {
            out.push(Move::Resume(RESUMER));
        }
        for &caller in w.ghost.calls.keys() {
            if caller < NOTIFY_BASE && !w.env.cancelled.contains(&caller) {
                out.push(Move::Cancel(caller));
            }
        }
        // The subscriber subscribes once, or, when the bound allows, again once answered.
        let answered = w.ghost.calls.get(&SUBSCRIBER).is_none_or(|c| c.replies > 0);
        if w.env.subscribes < b.subscriptions && answered && !w.ghost.unsubscribed {
            out.push(Move::Subscribe);
        }
        if w.ghost.calls.contains_key(&SUBSCRIBER) && !w.ghost.calls.contains_key(&UNSUBSCRIBER) {
            out.push(Move::Unsubscribe);
        }
        if w.env.notifies < b.notifies {
            out.push(Move::Notify(w.env.notifies + 1));
        }
        if w.env.stops < b.stops {
            out.push(Move::Stop(w.env.stops + 1));
        }
        if w.env.send_mode.is_some() {
            out.push(Move::SendMode(SendOutcome::Ok));
        } else {
            if w.env.busy < b.busy {
                out.push(Move::SendMode(SendOutcome::Busy));
            }
            if self.junk_ok(w, Junk::SendFailed) {
                out.push(Move::SendMode(SendOutcome::Failed));
            }
        }
        for (&generation, g) in &w.env.gens {
            if g.down {
                continue;
            }
            if !g.up {
                for kind in ServerKind::ALL {
                    if b.servers & kind as u8 != 0 {
                        out.push(Move::Up(generation, kind));
                    }
                }
            }
            if g.closed || w.env.crashes < b.crashes {
                out.push(Move::Down(generation));
            }
            // Only a legacy server keeps a session to end: a modern generation has none.
            if g.up
                && !g.closed
                && w.env.expiries < b.expiries
                && !w.ghost.discovered.contains(&generation)
            {
                let refusable = refusable(w, generation).len();
                for mask in 0..(1u8 << refusable) {
                    out.push(Move::Expire(generation, mask));
                }
            }
            if g.credit == 0 || !g.up {
                continue;
            }
            for (&id, &(on, answers)) in &w.env.on_wire {
                if on != generation
                    || (answers >= 1 && !self.junk_ok(w, Junk::Duplicate))
                    || answers >= 2
                {
                    continue;
                }
                // Refusals for want of authorization are repeatable: the budget and once per
                // call are what bound them.
                if answers == 0
                    && self.bounds.junk & Junk::Auth as u32 != 0
                    && matches!(
                        w.ghost.owners.get(&id),
                        Some(Owner::Probe(_) | Owner::Init(_) | Owner::Call(_))
                    )
                {
                    out.push(Move::Frame(generation, ServerFrame::AuthRequired(id)));
                }
                match w.ghost.owners.get(&id) {
                    Some(Owner::Probe(_)) => match g.kind {
                        ServerKind::Modern => {
                            out.push(Move::Frame(generation, ServerFrame::DiscoverOk(id)));
                            out.push(Move::Frame(generation, ServerFrame::DiscoverVersion(id)));
                        }
                        ServerKind::Dual => {
                            out.push(Move::Frame(generation, ServerFrame::DiscoverOk(id)));
                        }
                        ServerKind::Legacy => {
                            out.push(Move::Frame(generation, ServerFrame::ProbeError(id)));
                        }
                        ServerKind::Garbage => {
                            out.push(Move::Frame(generation, ServerFrame::DiscoverGarbage(id)));
                        }
                    },
                    Some(Owner::Init(_)) if g.kind == ServerKind::Modern => {
                        out.push(Move::Frame(generation, ServerFrame::InitModernRefusal(id)));
                    }
                    Some(Owner::Init(_)) => {
                        out.push(Move::Frame(generation, ServerFrame::InitOk(id)));
                        if self.junk_ok(w, Junk::InitBadVersion) {
                            out.push(Move::Frame(generation, ServerFrame::InitBadVersion(id)));
                        }
                        if self.junk_ok(w, Junk::InitError) {
                            out.push(Move::Frame(generation, ServerFrame::InitError(id)));
                        }
                    }
                    // A listen's frames are the environment's listen moves.
                    Some(Owner::Listen(_)) => {}
                    Some(Owner::Restore(_) | Owner::Relist(_)) => {
                        out.push(Move::Frame(generation, ServerFrame::Answer(id)));
                    }
                    Some(Owner::Task(c, req)) => {
                        let modern = w.ghost.tasks.get(c).is_some_and(|t| t.modern);
                        let task = w.ghost.tasks.get(c).map_or(0, |t| t.task);
                        for &reply in TaskReply::answers(*req, modern) {
                            let f = ServerFrame::Task {
                                id,
                                task,
                                reply,
                                modern,
                            };
                            out.push(Move::Frame(generation, f));
                        }
                    }
                    Some(Owner::TaskCancel(c)) => {
                        let t = w.ghost.tasks.get(c);
                        let f = ServerFrame::Task {
                            id,
                            task: t.map_or(0, |t| t.task),
                            reply: TaskReply::Ack,
                            modern: t.is_some_and(|t| t.modern),
                        };
                        out.push(Move::Frame(generation, f));
                    }
                    Some(Owner::Call(c)) => {
                        // The server runs a tool call as a task (2025-11-25 only when the
                        // client asked for tasks; 2026-07-28 whenever it likes).
                        let modern = w.ghost.discovered.contains(&generation);
                        if answers == 0
                            && *c < NOTIFY_BASE
                            && w.env.tasks_created < b.tasks
                            && (modern || b.tasks_on)
                        {
                            let f = ServerFrame::Task {
                                id,
                                task: id,
                                reply: TaskReply::Created,
                                modern,
                            };
                            out.push(Move::Frame(generation, f));
                        }
                        out.push(Move::Frame(generation, ServerFrame::Answer(id)));
                        if answers == 0
                            && w.ghost.discovered.contains(&generation)
                            && self.junk_ok(w, Junk::BadResultType)
                        {
                            out.push(Move::Frame(generation, ServerFrame::AnswerBadType(id)));
                        }
                        // Rounds are repeatable: the round cap is what bounds them.
                        if answers == 0
                            && w.ghost.discovered.contains(&generation)
                            && self.bounds.junk & Junk::InputRequired as u32 != 0
                        {
                            out.push(Move::Frame(generation, ServerFrame::InputRequired(id)));
                            out.push(Move::Frame(
                                generation,
                                ServerFrame::InputRequiredNoState(id),
                            ));
                            out.push(Move::Frame(
                                generation,
                                ServerFrame::InputRequiredStateOnly(id),
                            ));
                        }
                        // Losses are repeatable: the reissue cap is what bounds them.
                        if answers == 0
                            && w.ghost.discovered.contains(&generation)
                            && self.bounds.junk & Junk::Reissue as u32 != 0
                        {
                            out.push(Move::Frame(generation, ServerFrame::CallLost(id)));
                            out.push(Move::Frame(generation, ServerFrame::CallVersionRefused(id)));
                        }
                        if answers == 0
                            && w.ghost.discovered.contains(&generation)
                            && self.bounds.junk & Junk::Relist as u32 != 0
                        {
                            out.push(Move::Frame(generation, ServerFrame::HeaderMismatch(id)));
                        }
                        if answers == 0 && self.junk_ok(w, Junk::Progress) {
                            out.push(Move::Frame(generation, ServerFrame::Progress(id)));
                        }
                    }
                    None => {}
                }
            }
            if w.ghost.discovered.contains(&generation) {
                self.listen_frames(w, generation, out);
            }
            let singles = [
                (Junk::Unknown, ServerFrame::Unknown),
                (Junk::Malformed, ServerFrame::Malformed),
                (Junk::Oversized, ServerFrame::Oversized),
                (Junk::Ping, ServerFrame::Ping),
                (Junk::Sampling, ServerFrame::Sampling),
                (Junk::Undeclared, ServerFrame::Undeclared),
                (Junk::ElicitUrl, ServerFrame::ElicitUrl),
                (Junk::SamplingOther, ServerFrame::SamplingOther),
                (Junk::Log, ServerFrame::Log),
            ];
            for (j, f) in singles {
                if self.junk_ok(w, j) {
                    out.push(Move::Frame(generation, f));
                }
            }
            if w.env.server_requests.contains(&(generation, SAMPLING_ID)) {
                if self.junk_ok(w, Junk::ServerCancel) {
                    out.push(Move::Frame(generation, ServerFrame::ServerCancel));
                }
                if self.junk_ok(w, Junk::SamplingAgain) {
                    out.push(Move::Frame(generation, ServerFrame::SamplingAgain));
                }
            }
        }
        for &(generation, id) in &w.env.server_requests {
            out.push(Move::HandlerReply(generation, id));
        }
        for &generation in &w.ghost.auth_pending {
            out.push(Move::Authorize(generation, true));
            out.push(Move::Authorize(generation, false));
        }
        for &(generation, id, key) in &w.env.inputs {
            out.push(Move::InputReply(generation, id, key, true));
            if self.junk_ok(w, Junk::InputError) {
                out.push(Move::InputReply(generation, id, key, false));
            }
        }
        if tick_target(w).is_some() {
            out.push(Move::Tick);
        }
        let reconnect_armed =
            w.m.armed_timers()
                .iter()
                .any(|(k, _)| k.kind == TimerKind::Reconnect);
        // A long silence matters only once an id has ended: it is when its tombstone must go.
        let quiet = w.m.state() == State::Ready
            && w.all_calls_answered()
            && (!w.ghost.ended.is_empty()
                || (b.listen_ends > 0 && w.ghost.listens.values().any(|l| l.taken && l.alive())));
        if w.env.waits < b.waits && !reconnect_armed && quiet {
            out.push(Move::Wait);
        }
        // Timers fire in deadline order (all those due at one instant together), as the
        // driver fires them; no reconnect beyond the last generation allowed.
        if let Some((key, _)) =
            w.m.armed_timers()
                .into_iter()
                .min_by_key(|(k, at)| (*at, *k))
            && (key.kind != TimerKind::Reconnect || w.m.generation() < b.gens)
        {
            out.push(Move::Timer(key));
        }
    }

    /// The listen frames a modern generation may send: an acknowledgement (full, or without
    /// the resource) for a listen the server saw and has not acknowledged or ended; an end of
    /// any kind or a cancel for one it has not ended; a tagged notification for any listen it
    /// saw, or for no listen (each bounded).
    fn listen_frames(&self, w: &World, generation: u64, out: &mut Vec<Move>) {
        let b = &self.bounds;
        let mut any = false;
        for (&id, l) in &w.ghost.listens {
            if l.generation != generation || !w.env.on_wire.contains_key(&id) {
                continue;
            }
            any = true;
            if !l.acked && !l.ended {
                out.push(Move::Frame(generation, ServerFrame::ListenAck(id, true)));
                if l.uri {
                    out.push(Move::Frame(generation, ServerFrame::ListenAck(id, false)));
                }
            }
            if !l.ended && w.env.listen_ends < b.listen_ends {
                for kind in ListenEndKind::ALL {
                    out.push(Move::Frame(generation, ServerFrame::ListenEnd(id, kind)));
                }
                out.push(Move::Frame(generation, ServerFrame::ListenCancel(id)));
            }
            if w.env.listen_notes < b.listen_notes {
                out.push(Move::Frame(generation, ServerFrame::ListenNote(id)));
            }
        }
        if any && w.env.listen_notes < b.listen_notes {
            out.push(Move::Frame(generation, ServerFrame::ListenStray));
        }
    }
}

/// The earliest deadline the machine owes: an unanswered call's, or its state's bound.
pub(crate) fn earliest_deadline(w: &World) -> Option<Duration> {
    w.ghost
        .calls
        .values()
        .filter(|g| g.replies == 0)
        // (A task without a bound of its caller's owes no deadline: `Duration::MAX`.)
        .flat_map(|g| {
            [
                Some(g.deadline).filter(|d| *d != Duration::MAX),
                g.resend_due,
            ]
        })
        .flatten()
        .chain(w.ghost.phase_deadline)
        .min()
}

/// Where [`Move::Tick`] moves the clock: just past the earliest deadline owed, if no timer
/// that could meet it (any but the periodic sweep) is armed at or before it.
pub(crate) fn tick_target(w: &World) -> Option<Duration> {
    let due = earliest_deadline(w)?;
    let guarded =
        w.m.armed_timers()
            .iter()
            .any(|(k, at)| k.kind != TimerKind::TombstoneSweep && *at <= due);
    let target = due.saturating_add(Duration::from_millis(1));
    (!guarded && target > w.m.now()).then_some(target)
}
