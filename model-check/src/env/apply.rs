//! One move of the environment, applied: the environment's and the ghost's view of it
//! updated, the input fed to the machine (or time run, firing the timers due), its actions
//! carried out ([`super::drain`]), and the step settled: what the ghost learns from the step,
//! and every property judging it, in a fixed order (`Harness::settle`).

use std::time::Duration;

use mcp_machine::{
    CallId, CallOptions, CallRequest, HandlerReply, Input, NotifyRequest, SendOutcome,
    ServerRequestId, SessionChange, TaskResume, TransportError,
};
use serde_json::json;

use super::drain::StepLog;
use super::frames::frame_bytes;
use super::moves::tick_target;
use super::{
    NOTIFY_BASE, RESUMED_TASK, SUBSCRIBER, UNSUBSCRIBER, URI, call_options, refusable, session_call,
};
use crate::ghost::frame::FrameNotes;
use crate::ghost::{self, call_ghost};
use crate::model::Harness;
use crate::properties::guards as seen;
use crate::properties::{
    auth, backoff, deadlines, era, listen, mrtr, reissue, replies, reports, sends, session, stop,
    tasks, transport, wire,
};
use crate::world::{Junk, Move, ServerFrame, World};

/// A handler's or an input's answer: a sampling result.
fn sampled() -> serde_json::Value {
    json!({"role": "assistant", "content": {"type": "text", "text": "x"}, "model": "m"})
}

impl Harness {
    /// Applies one move; `log` collects a readable account for traces.
    pub fn apply(&self, w: &World, mv: Move, mut log: Option<&mut Vec<String>>) -> World {
        let mut n = w.clone();
        ghost::listen::new_ready_counts(w, &mut n);
        // Inputs other than timers keep the time: only a firing timer moves the model's clock.
        let now = n.m.now();
        let stale = mv.generation().is_some_and(|g| g != w.m.generation());
        let mut notes = FrameNotes::default();
        let mut record = StepLog::default();
        ghost::tasks::before_move(w, &mut n, mv);
        let input = match mv {
            Move::Call(c) => {
                n.env.calls = c;
                let mut options = call_options(c, n.m.config().tasks);
                options.wait_for_ready = c <= self.bounds.ready_waiters;
                let mut ghost = call_ghost(&n.m, &options);
                // It waits when made while no connection is ready, unless the last attempt
                // failed for good.
                let failed_for_good = matches!(
                    w.m.last_error(),
                    Some(mcp_machine::Failure::Transport(t)) if t.is_permanent()
                );
                ghost.waits = options.wait_for_ready
                    && !failed_for_good
                    && matches!(
                        w.m.state(),
                        mcp_machine::State::Starting
                            | mcp_machine::State::Probing
                            | mcp_machine::State::Initializing
                            | mcp_machine::State::Backoff
                    );
                n.ghost.calls.insert(c, ghost);
                Some(Input::Call(CallRequest {
                    call: CallId(u64::from(c)),
                    method: "tools/call".into(),
                    // The caller rides along, so a request sent again under a new id is
                    // known as this caller's from the wire alone.
                    params: Some(json!({"name": "t", "caller": c})),
                    options,
                    session: None,
                }))
            }
            Move::Resume(c) => {
                n.env.resumes += 1;
                let options = call_options(c, true);
                ghost::tasks::resume(w, &mut n, c, &options);
                Some(Input::ResumeTask(TaskResume {
                    call: CallId(u64::from(c)),
                    task_id: format!("t{RESUMED_TASK}"),
                    options,
                }))
            }
            Move::Subscribe => {
                n.env.subscribes += 1;
                n.ghost.listen_refused = false;
                n.ghost
                    .calls
                    .insert(SUBSCRIBER, call_ghost(&n.m, &CallOptions::default()));
                let change = SessionChange::Subscribe(URI.into());
                Some(session_call(SUBSCRIBER, change))
            }
            Move::Unsubscribe => {
                n.ghost
                    .calls
                    .insert(UNSUBSCRIBER, call_ghost(&n.m, &CallOptions::default()));
                n.ghost.unsubscribed = true;
                n.ghost.sub_live = false;
                n.ghost.listen_refused = false;
                // Nothing wanted any more: every listen of the client's is given up.
                ghost::listen::unsubscribed(w, &mut n);
                let change = SessionChange::Unsubscribe(URI.into());
                Some(session_call(UNSUBSCRIBER, change))
            }
            Move::Cancel(c) => {
                n.env.cancelled.insert(c);
                Some(Input::Cancel {
                    call: CallId(u64::from(c)),
                })
            }
            Move::Notify(k) => {
                n.env.notifies = k;
                n.ghost
                    .calls
                    .insert(NOTIFY_BASE + k, call_ghost(&n.m, &CallOptions::default()));
                Some(Input::Notify(NotifyRequest {
                    call: CallId(u64::from(NOTIFY_BASE + k)),
                    method: "notifications/roots/list_changed".into(),
                    params: None,
                }))
            }
            Move::Stop(s) => {
                n.env.stops = s;
                n.ghost.stops.insert(s, 0);
                if !w.all_calls_answered() {
                    n.ghost.seen |= seen::STOP_WITH_CALLS;
                }
                Some(Input::Stop {
                    call: CallId(100 + u64::from(s)),
                })
            }
            Move::Up(g, kind) => {
                if let Some(e) = n.env.gens.get_mut(&g) {
                    e.up = true;
                    e.kind = kind;
                }
                Some(Input::TransportUp { generation: g })
            }
            Move::Down(g) => {
                if !stale {
                    crate::properties::waiting::loss(&mut n);
                }
                if w.env.server_requests.iter().any(|(on, _)| *on == g) {
                    n.ghost.seen |= seen::CRASH_WITH_SERVER_REQUEST;
                }
                // Down before up (and before the machine closed it), where the configuration
                // says so: the program could not be spawned for good.
                let permanent = self.bounds.junk & Junk::Permanent as u32 != 0
                    && w.env.gens.get(&g).is_some_and(|e| !e.up && !e.closed);
                n.ghost.permanent_step = permanent && !stale;
                if let Some(e) = n.env.gens.get_mut(&g) {
                    e.down = true;
                    if !e.closed {
                        n.env.crashes += 1;
                    }
                    e.credit = 0;
                }
                let error = if permanent {
                    TransportError::Spawn(std::io::Error::from(std::io::ErrorKind::NotFound).into())
                } else {
                    TransportError::Eof
                };
                Some(Input::TransportDown {
                    generation: g,
                    error,
                })
            }
            Move::Expire(g, mask) => Some(expire(w, &mut n, g, mask)),
            Move::Frame(g, f) => {
                notes = ghost::frame::before(w, &mut n, g, f, stale);
                ghost::tasks::frame(w, &mut n, g, f, stale);
                Some(frame(&mut n, g, f))
            }
            Move::SendMode(mode) => {
                match mode {
                    SendOutcome::Busy => n.env.busy += 1,
                    SendOutcome::Failed => n.env.junk_used |= Junk::SendFailed as u32,
                    SendOutcome::Ok => {}
                }
                n.env.send_mode = (mode != SendOutcome::Ok).then_some(mode);
                None
            }
            Move::HandlerReply(g, id) => {
                n.env.server_requests.remove(&(g, id));
                Some(Input::HandlerReply {
                    generation: g,
                    reply: HandlerReply {
                        id: ServerRequestId::Int(id),
                        result: Ok(sampled()),
                    },
                })
            }
            Move::InputReply(g, id, key, ok) => {
                n.env.inputs.remove(&(g, id, key));
                if !ok {
                    n.env.junk_used |= Junk::InputError as u32;
                }
                let outcome = if ok {
                    Ok(sampled())
                } else {
                    Err(mcp_machine::RpcError {
                        code: -1,
                        message: "declined".into(),
                        data: None,
                    })
                };
                Some(Input::InputReply {
                    generation: g,
                    reply: mcp_machine::InputReply {
                        request: id,
                        key: if key == 0 { "q" } else { "r" }.into(),
                        outcome,
                    },
                })
            }
            Move::Authorize(g, ok) => {
                // Every caller waiting for it must go out again in this step.
                ghost::auth::authorize_move(&mut n, g, ok, stale);
                Some(if ok {
                    Input::Authorized { generation: g }
                } else {
                    Input::AuthorizationFailed {
                        generation: g,
                        failure: mcp_machine::AuthFailure {
                            reason: "declined".into(),
                        },
                    }
                })
            }
            Move::Timer(key) => {
                if let Some((_, at)) = n.m.armed_timers().into_iter().find(|(k, _)| *k == key) {
                    record.absorb(self.advance_to(&mut n, at, log.as_deref_mut()));
                }
                None
            }
            Move::Wait => {
                n.env.waits += 1;
                let c = n.m.config();
                let target =
                    n.m.now()
                        .saturating_add(c.tombstone_ttl)
                        .saturating_add(c.tombstone_sweep);
                record.absorb(self.advance_to(&mut n, target, log.as_deref_mut()));
                None
            }
            Move::Tick => {
                if let Some(target) = tick_target(&n) {
                    if let Some(log) = log.as_deref_mut() {
                        log.push(format!("  silence until {target:?}"));
                    }
                    record.absorb(self.advance_to(&mut n, target, log.as_deref_mut()));
                }
                None
            }
        };
        if let Some(input) = input {
            let step = n.m.handle(input, now);
            self.observe(&mut n, step, &format!("{mv:?}"), log.as_deref_mut());
        }
        record.absorb(self.drain(&mut n, Some(mv), log));
        self.settle(w, &mut n, mv, stale, &notes, &record);
        if n.ghost.permanent_step {
            crate::properties::waiting::after_permanent(&mut n);
            n.ghost.permanent_step = false;
        }
        // A state is kept until its level is expanded: without the room its queues grew.
        n.m.compact();
        n
    }

    /// The end of a step from `w` to `n` by move `mv`: what the ghost learns from it and
    /// every property's judgement of it, in this order (a check reads the ghost as the steps
    /// before it left it).
    fn settle(
        &self,
        w: &World,
        n: &mut World,
        mv: Move,
        stale: bool,
        notes: &FrameNotes,
        record: &StepLog,
    ) {
        // What the move must have brought about.
        reports::frame_handled(w, n, mv, record);
        era::abandoned_answer(w, n, mv, record);
        reports::move_brought_about(w, n, mv, record);
        sends::outcomes(w, n, record);
        // Authorizations.
        let refused_again = ghost::auth::after_move(w, n, mv, stale);
        auth::judge(w, n, mv, stale, refused_again);
        transport::stale_changed_nothing(w, n, stale, record.count);
        replies::expected_brought_about(w, n, notes.expect);
        listen::subscribe_answered_at_once(w, n, mv);
        mrtr::retried_at_last_input(w, n, mv);
        reissue::lost_or_refused(w, n, notes);
        reissue::relist_ended(w, n, mv, record);
        mrtr::input_error_answers(w, n, mv);
        // The listens, the attempt, its deadlines and its debts.
        ghost::listen::listen_timeouts(n);
        listen::wanted_asked(n);
        ghost::attempt::step_end(self.bounds.era, w, n, mv, record);
        deadlines::enter_phase(w, n);
        ghost::attempt::forget(n);
        stop::closed_only_when_stopped(n);
        transport::always_read(n);
        wire::owed_paid_or_retrying(n);
        // The session, the callers, the backoff and the era.
        session::kept_calls_sent(n);
        session::restored_before_resent(w, n, record);
        ghost::calls_in_flight(n);
        replies::cancel_answered_at_once(n, mv);
        stop::answered_at_once(n, mv);
        backoff::after_step(w, n, mv, record);
        era::died_of_probe(w, n, mv);
        ghost::attempt::ready_entered(w, n);
        session::restored(w, n);
        ghost::attempt::ready_guards(n);
        // Tasks: a resume polled at once in ready (turned away elsewhere), kept across a lost
        // connection, always polled.
        tasks::resume_handled(w, n, mv);
        ghost::tasks::after_step(w, n);
        tasks::always_polled(n);
    }

    /// Time passes until `target`: every timer due on the way fires, earliest first (as the
    /// driver fires them), each followed by its actions.
    fn advance_to(
        &self,
        n: &mut World,
        target: Duration,
        mut log: Option<&mut Vec<String>>,
    ) -> StepLog {
        let mut record = StepLog::default();
        loop {
            let at =
                n.m.poll_timeout()
                    .filter(|at| *at <= target)
                    .unwrap_or(target);
            for step in n.m.handle_timeout(at) {
                let what = format!("time {at:?}");
                self.observe(n, step, &what, log.as_deref_mut());
            }
            record.absorb(self.drain(n, None, log.as_deref_mut()));
            // Timers still due (one queued a send, whose outcome came first) fire next round.
            if at >= target && n.m.poll_timeout().is_none_or(|d| d > target) {
                break;
            }
        }
        record
    }
}

/// The server ends generation `g`'s session, saying it refused the requests picked by `mask`.
fn expire(w: &World, n: &mut World, g: u64, mask: u8) -> Input {
    let refused = refusable(w, g)
        .into_iter()
        .enumerate()
        .filter(|(i, _)| mask & (1 << i) != 0)
        .map(|(_, id)| id)
        .collect();
    n.env.expiries += 1;
    if let Some(e) = n.env.gens.get_mut(&g) {
        e.down = true;
        e.credit = 0;
    }
    Input::TransportDown {
        generation: g,
        error: TransportError::SessionExpired {
            session_hint: String::new(),
            refused,
        },
    }
}

/// Generation `g` delivers frame `f`: it spends a credit (and its one-shot junk), the server
/// counts an answer to the request it answers, and the machine gets its bytes.
fn frame(n: &mut World, g: u64, f: ServerFrame) -> Input {
    if let Some(e) = n.env.gens.get_mut(&g) {
        e.credit -= 1;
    }
    if let Some(j) = f.junk() {
        n.env.junk_used |= j as u32;
    }
    if let ServerFrame::Task {
        reply: crate::world::TaskReply::Created,
        ..
    } = f
    {
        n.env.tasks_created += 1;
    }
    if let Some(id) = f.answered_id()
        && let Some(e) = n.env.on_wire.get_mut(&id)
    {
        if e.1 >= 1 {
            n.env.junk_used |= Junk::Duplicate as u32;
        }
        e.1 += 1;
    }
    if f == ServerFrame::Oversized {
        Input::Oversized {
            generation: g,
            size: n.m.config().max_frame_bytes + 1,
        }
    } else {
        Input::Frame {
            generation: g,
            bytes: frame_bytes(f),
        }
    }
}
