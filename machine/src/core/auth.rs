//! The guards and actions of `spec/auth.toml`: authorization: a request refused with 401 waits for one authorization, then is sent again.
//!
//! One method per guard and action the spec file declares, in its order; the shared helpers
//! (`send`, `owe`, `issue`, `end_call`, ...) are in [`super`]. What fires when is the
//! table's: nothing here decides a transition.

use super::*;
use crate::generated::{AuthHandlers, HandshakeHandlers};

impl AuthHandlers for Ctx<'_> {
    fn can_authorize_handshake(&self, p: &Response) -> bool {
        self.answers_handshake(p) && Self::auth_challenge(p).is_some() && self.authorizations_left()
    }

    fn is_handshake_auth_refusal(&self, p: &Response) -> bool {
        self.answers_handshake(p) && Self::auth_challenge(p).is_some()
    }

    fn can_authorize_call(&self, p: &Response) -> Option<RequestId> {
        let id = self.auth_refused_call(p)?;
        let entry = self.core.calls.get(id)?;
        let again = entry.auth_refused && !mutant!(self.core, AuthRetryAlways);
        (!again && (self.core.authorizing || self.authorizations_left())).then_some(id)
    }

    fn is_final_auth_refusal(&self, p: &Response) -> Option<RequestId> {
        self.auth_refused_call(p)
    }

    fn is_authorizing(&self) -> bool {
        self.core.authorizing
    }

    fn is_authorizing_failure(&self, _p: &crate::event::AuthFailure) -> bool {
        self.core.authorizing
    }

    fn await_handshake_authorization(&mut self, p: &Response) {
        self.abandon_init();
        self.core
            .timers
            .cancel(TimerKey::plain(TimerKind::ProbeTimeout));
        if let Some(challenge) = Self::auth_challenge(p) {
            self.authorize(challenge);
        }
    }

    fn await_call_authorization(&mut self, p: &Response, w: RequestId) {
        let Some(entry) = self.core.calls.get_mut(w) else {
            return;
        };
        entry.phase = Phase::AwaitingAuth;
        entry.auth_refused = true;
        // Its request was answered: nothing is owed for it, and its send has nothing to retry.
        self.core
            .timers
            .cancel(TimerKey::keyed(TimerKind::SendRetry, w));
        if let Some(challenge) = Self::auth_challenge(p) {
            self.authorize(challenge);
        }
        if mutant!(self.core, ResendBeforeAuth) {
            self.resend_waiting(Phase::AwaitingAuth);
        }
    }

    fn end_authorization(&mut self) {
        self.core.authorizing = false;
    }

    fn resend_discover(&mut self) {
        let version = self.core.attempt.probe_version.clone();
        self.send_discover_at(&version);
    }

    fn resend_authorized(&mut self) {
        if mutant!(self.core, NoResendAfterAuth) {
            return;
        }
        self.resend_waiting(Phase::AwaitingAuth);
    }

    fn fail_awaiting_auth(&mut self, p: &crate::event::AuthFailure) {
        let waiting = self.core.calls.in_phase(Phase::AwaitingAuth);
        for id in waiting {
            let Some(entry) = self.core.calls.remove(id) else {
                continue;
            };
            self.cancel_call_timers(id);
            self.tombstone(id);
            let reason = p.reason.clone();
            self.answer(&entry, id, Err(CallError::Unauthorized { reason }));
        }
    }

    fn note_auth_failure(&mut self, p: &crate::event::AuthFailure) {
        let reason = p.reason.clone();
        self.set_last_error(Failure::Unauthorized { reason });
    }

    fn note_auth_refusal(&mut self, p: &Response) {
        let status = Self::auth_challenge(p).map_or(401, |c| c.status);
        let failure = Failure::Unauthorized {
            reason: format!(
                "HTTP {status} again after {} authorizations in a row",
                self.core.authorizations
            ),
        };
        self.set_last_error(failure.clone());
        self.push(Action::Report(Report::InitRejected(failure)));
    }

    fn fail_auth_refused(&mut self, p: &Response, w: RequestId) {
        let Some(entry) = self.core.calls.remove(w) else {
            return;
        };
        self.cancel_call_timers(w);
        self.tombstone(w);
        let status = Self::auth_challenge(p).map_or(401, |c| c.status);
        let reason = if entry.auth_refused {
            format!("HTTP {status} again after an authorization")
        } else {
            format!(
                "HTTP {status}, and {} authorizations in a row were spent",
                self.core.authorizations
            )
        };
        self.answer(&entry, w, Err(CallError::Unauthorized { reason }));
    }
}
