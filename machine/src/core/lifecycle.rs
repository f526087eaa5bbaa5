//! The guards and actions of `spec/lifecycle.toml`: the transport of each generation, backoff and reconnect, the session restore, stop and closing.
//!
//! One method per guard and action the spec file declares, in its order; the shared helpers
//! (`send`, `owe`, `issue`, `end_call`, ...) are in [`super`]. What fires when is the
//! table's: nothing here decides a transition.

use super::*;
use crate::generated::LifecycleHandlers;

impl LifecycleHandlers for Ctx<'_> {
    fn is_session_ack(&self, p: &Response) -> Option<RequestId> {
        let id = Self::response_id(p).filter(|_| p.body.is_ok())?;
        let change = self.core.calls.get(id)?.session.as_ref()?;
        (!matches!(change, SessionChange::Unsubscribe(_))).then_some(id)
    }

    fn can_reinitialize(&self, p: &TransportError) -> Option<Vec<RequestId>> {
        let TransportError::SessionExpired { refused, .. } = p else {
            return None;
        };
        // Sessions are of the legacy era: a modern connection has none to initialize again.
        if self.modern_version().is_some() {
            return None;
        }
        if self.core.reinits >= self.core.config.max_session_reinits
            && !mutant!(self.core, UnboundedReinit)
        {
            return None;
        }
        // Callers' calls only (a restore is asked for again by the new session anyway), not
        // sent again before: those the server refused, and those it never got (not yet taken
        // by the transport).
        let unrun = self
            .core
            .calls
            .iter()
            .filter(|(id, e)| {
                e.kind.caller().is_some()
                    && (!e.resent || mutant!(self.core, ParkResentAgain))
                    && (e.phase != Phase::Sent || refused.contains(id))
            })
            .map(|(id, _)| id)
            .collect();
        Some(unrun)
    }

    fn spawn_transport(&mut self) {
        self.core.generation += 1;
        self.core.attempt.reprobed = false;
        if mutant!(self.core, ReuseIds) {
            self.core.next_id = 1;
        }
        let generation = self.core.generation;
        self.push(Action::SpawnTransport { generation });
    }

    // Whether the transport is open is the table's business (the model checker proves credit
    // only goes to the open transport and each generation is closed once): no hidden guard here.
    fn close_transport(&mut self) {
        // What was owed to this transport's server ends with it, and so does the wait for an
        // authorization it asked for (its outcome will be stale; a new generation asks again).
        self.core.outbox.clear();
        self.core.authorizing = false;
        let generation = self.core.generation;
        self.push(Action::CloseTransport { generation });
    }

    fn grant_credit(&mut self) {
        let generation = self.core.generation;
        let credits = if mutant!(self.core, WindowOnEveryCredit) {
            self.core.config.read_window.max(1)
        } else {
            1
        };
        self.push(Action::GrantCredit {
            generation,
            credits,
        });
    }

    fn open_read_window(&mut self) {
        let generation = self.core.generation;
        let credits = self.core.config.read_window.max(1);
        self.push(Action::GrantCredit {
            generation,
            credits,
        });
    }

    fn arm_connect_timeout(&mut self) {
        self.core.attempt.init_bound = self.core.config.connect_timeout;
        self.arm(TimerKind::InitTimeout, self.core.attempt.init_bound);
    }

    fn arm_tombstone_sweep(&mut self) {
        self.arm(TimerKind::TombstoneSweep, self.core.config.tombstone_sweep);
    }

    fn arm_closing_exit(&mut self) {
        self.arm(TimerKind::ClosingExit, self.core.config.closing_exit);
    }

    fn note_down(&mut self, p: &TransportError) {
        self.set_last_error(Failure::Transport(p.clone()));
    }

    fn note_oversized(&mut self, p: &Oversized) {
        let max = self.core.config.max_frame_bytes;
        self.set_last_error(Failure::Oversized { size: p.size, max });
    }

    fn restore_session(&mut self) {
        let session = self.core.session.clone();
        if let Some(level) = session.log_level {
            self.send_session_request(SessionChange::SetLogLevel(level));
        }
        for uri in session.subscriptions {
            self.send_session_request(SessionChange::Subscribe(uri));
        }
    }

    fn record_session(&mut self, w: &RequestId) {
        let change = self.core.calls.get(*w).and_then(|e| e.session.clone());
        match change {
            Some(SessionChange::Subscribe(uri)) => {
                self.core.session.subscriptions.insert(uri);
            }
            Some(SessionChange::SetLogLevel(level)) => self.core.session.log_level = Some(level),
            Some(SessionChange::Unsubscribe(_)) | None => {}
        }
    }

    fn reset_backoff(&mut self) {
        self.core.backoff.reset();
    }

    fn schedule_backoff(&mut self) {
        // The session last made ready proved itself by staying up: a fresh sequence.
        if let Some(at) = self.core.ready_at.take()
            && self.core.now.saturating_sub(at) >= self.core.config.session_stable
            && !mutant!(self.core, StableNeverResets)
        {
            self.core.backoff.reset();
        }
        // A new attempt after the delay may authorize again (an authorization server that was
        // down, a login the user abandoned): the budget bounds authorizations in a row within
        // an attempt, the backoff delay the rate of attempts.
        self.core.authorizations = 0;
        let c = &self.core.config;
        let (min, max, pct) = (c.backoff_min, c.backoff_max, c.backoff_jitter_pct);
        let delay = self.core.backoff.next(min, max, pct, &mut self.core.rng);
        self.arm(TimerKind::Reconnect, delay);
    }

    fn report_malformed(&mut self, p: Malformed) {
        self.push(Action::Report(Report::Malformed { reason: p.reason }));
    }

    fn report_oversized(&mut self, p: &Oversized) {
        let max = self.core.config.max_frame_bytes;
        self.push(Action::Report(Report::Oversized { size: p.size, max }));
    }

    fn count_reinit(&mut self) {
        if !mutant!(self.core, UnboundedReinit) {
            self.core.reinits += 1;
        }
    }

    fn reset_reinits(&mut self) {
        self.core.reinits = 0;
    }

    fn reply_stopped(&mut self, p: &CallId) {
        self.push(Action::StopDone {
            call: *p,
            already: false,
        });
    }

    fn reply_already_closing(&mut self, p: &CallId) {
        self.push(Action::StopDone {
            call: *p,
            already: true,
        });
    }

    fn sweep_tombstones(&mut self) {
        let horizon = if mutant!(self.core, SweepTooEarly) {
            Duration::MAX
        } else {
            self.core.now
        };
        self.core.tombstones.sweep(horizon);
        self.arm(TimerKind::TombstoneSweep, self.core.config.tombstone_sweep);
    }

    fn exit(&mut self) {
        self.push(Action::Exit);
    }
}
