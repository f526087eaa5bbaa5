//! The guards and actions of `spec/calls.toml`: the caller's requests and notifications, their send outcomes, answers, timeouts, cancellation and re-issues.
//!
//! One method per guard and action the spec file declares, in its order; the shared helpers
//! (`send`, `owe`, `issue`, `end_call`, ...) are in [`super`]. What fires when is the
//! table's: nothing here decides a transition.

use super::*;
use crate::generated::CallsHandlers;

impl CallsHandlers for Ctx<'_> {
    fn is_bad_result_type(&self, p: &Response) -> Option<RequestId> {
        self.modern_version()?;
        let id = Self::response_id(p)?;
        // A call awaiting input was answered already: a second answer is not its result.
        let entry = self.core.calls.get(id)?;
        if entry.phase.answered() || entry.kind.caller().is_none() {
            return None;
        }
        let result = p.body.as_ref().ok()?.value();
        protocol::result_type(result)
            .is_some_and(|t| t != "complete")
            .then_some(id)
    }

    fn can_reissue(&self, p: &Response) -> Option<RequestId> {
        self.modern_version()?;
        let id = Self::response_id(p)?;
        let entry = self.core.calls.get(id)?;
        if entry.phase.answered()
            || entry.kind.caller().is_none()
            || (entry.reissues >= self.core.config.max_reissues
                && !mutant!(self.core, NoReissueCap))
        {
            return None;
        }
        let Err(ResponseError::Rpc(e)) = &p.body else {
            return None;
        };
        let lost = e.code == crate::headers::STREAM_LOST
            || matches!(protocol::modern_error(e),
                Some(ModernError::UnsupportedVersion(v)) if self.usable_modern(&v));
        lost.then_some(id)
    }

    fn is_header_mismatch(&self, p: &Response) -> Option<RequestId> {
        self.modern_version()?;
        let id = Self::response_id(p)?;
        let entry = self.core.calls.get(id)?;
        let Err(ResponseError::Rpc(e)) = &p.body else {
            return None;
        };
        (e.code == protocol::HEADER_MISMATCH
            && entry.kind.caller().is_some()
            && !entry.phase.answered()
            && (!entry.relisted || mutant!(self.core, RelistAlways))
            && entry.frame.head.method.as_deref() == Some("tools/call"))
        .then_some(id)
    }

    fn is_relist_timeout(&self, p: &RequestId) -> Option<RequestId> {
        self.core
            .calls
            .get(*p)
            .is_some_and(|e| e.kind == RequestKind::Relist)
            .then_some(*p)
    }

    fn is_relist_send_end(&self, p: &SendToken) -> Option<PendingSend> {
        self.pending_send(p).filter(|s| {
            self.core
                .calls
                .get(s.id)
                .is_some_and(|e| e.kind == RequestKind::Relist)
        })
    }

    fn is_relist_answer(&self, p: &Response) -> Option<RequestId> {
        let id = Self::response_id(p)?;
        self.core
            .calls
            .get(id)
            .is_some_and(|e| e.kind == RequestKind::Relist)
            .then_some(id)
    }

    fn is_unsubscribe(&self, p: &CallRequest) -> bool {
        matches!(p.session, Some(SessionChange::Unsubscribe(_)))
    }

    fn waits_for_ready(&self, p: &CallRequest) -> bool {
        if mutant!(self.core, WaitNever) {
            return false;
        }
        let failed_for_good = matches!(
            &self.core.last_error,
            Some(Failure::Transport(t)) if t.is_permanent()
        );
        p.options.wait_for_ready
            && self.core.waiting.len() < self.core.config.max_waiting_calls
            && !failed_for_good
    }

    fn is_permanent_down(&self, p: &TransportError) -> bool {
        p.is_permanent()
    }

    fn is_waiting_call(&self, p: &CallId) -> Option<CallId> {
        self.core
            .waiting
            .iter()
            .any(|w| w.request.call == *p)
            .then_some(*p)
    }

    fn is_live_response(&self, p: &Response) -> Option<RequestId> {
        // A call awaiting input was answered already: a second answer to that id is not live.
        Self::response_id(p).filter(|id| {
            self.core
                .calls
                .get(*id)
                .is_some_and(|e| !e.phase.answered())
        })
    }

    fn is_tombstoned(&self, p: &Response) -> Option<RequestId> {
        Self::response_id(p).filter(|id| self.core.tombstones.contains(*id, self.core.now))
    }

    fn is_progress(&self, p: &Notification) -> Option<RequestId> {
        let id = p
            .param("notifications/progress", "progressToken")?
            .as_u64()?;
        self.core.calls.get(id).filter(|e| e.progress).map(|_| id)
    }

    fn is_pending_send(&self, p: &SendToken) -> Option<PendingSend> {
        self.pending_send(p)
    }

    fn can_retry_send(&self, p: &SendToken) -> Option<PendingSend> {
        self.pending_send(p)
            .filter(|s| s.attempt < self.core.config.send_attempts)
    }

    fn is_notify_send(&self, p: &SendToken) -> Option<CallId> {
        match *p {
            SendToken::Notify(call) => Some(call),
            SendToken::Request(_) | SendToken::Initialized | SendToken::Owed => None,
        }
    }

    fn is_live_call(&self, p: &CallId) -> Option<RequestId> {
        self.core.calls.id_of(*p)
    }

    fn is_live_request(&self, p: &RequestId) -> Option<RequestId> {
        self.core.calls.get(*p).map(|_| *p)
    }

    fn is_retrying(&self, p: &RequestId) -> Option<RequestId> {
        matches!(
            self.core.calls.get(*p).map(|e| e.phase),
            Some(Phase::Retrying { .. })
        )
        .then_some(*p)
    }

    fn relist_tools(&mut self, w: RequestId) {
        let Some(entry) = self.core.calls.get_mut(w) else {
            return;
        };
        entry.phase = Phase::AwaitingRelist;
        entry.relisted = true;
        // Its request was answered: nothing is owed for it, and its send has nothing to retry.
        self.core
            .timers
            .cancel(TimerKey::keyed(TimerKind::SendRetry, w));
        // One listing serves every call waiting for it.
        if self
            .core
            .calls
            .iter()
            .any(|(_, e)| e.kind == RequestKind::Relist)
        {
            return;
        }
        let options = CallOptions::default();
        self.issue(RequestKind::Relist, "tools/list", None, options, None);
    }

    fn resend_after_relist(&mut self, w: RequestId) {
        if self.core.calls.remove(w).is_some() {
            self.cancel_call_timers(w);
            self.tombstone(w);
        }
        self.resend_relisted();
    }

    fn resend_relisted(&mut self) {
        if mutant!(self.core, NoResendAfterRelist) {
            return;
        }
        self.resend_waiting(Phase::AwaitingRelist);
    }

    fn time_out_relist(&mut self, w: RequestId) {
        self.end_call(w, "timeout");
    }

    fn lose_relist_send(&mut self, w: PendingSend) {
        self.end_call(w.id, "send failed");
    }

    fn reissue_call(&mut self, w: RequestId) {
        let Some(mut entry) = self.core.calls.remove(w) else {
            return;
        };
        let id = self.core.next_id;
        self.core.next_id += 1;
        entry.frame = protocol::with_new_id(&entry.frame, id, entry.progress);
        entry.reissues = entry.reissues.saturating_add(1);
        self.tombstone(w);
        self.reissue(w, id, entry);
    }

    fn fail_bad_result_type(&mut self, p: Response, w: RequestId) {
        let Some(entry) = self.core.calls.remove(w) else {
            return;
        };
        self.cancel_call_timers(w);
        self.tombstone(w);
        let result_type = p
            .body
            .ok()
            .as_ref()
            .and_then(|r| protocol::result_type(r.value()))
            .unwrap_or_default();
        self.answer(&entry, w, Err(CallError::UnknownResultType { result_type }));
    }

    fn forget_subscription(&mut self, p: &CallRequest) {
        let Some(SessionChange::Unsubscribe(uri)) = &p.session else {
            return;
        };
        self.core.session.subscriptions.remove(uri);
        // A modern subscribe of it waiting for its listen's acknowledgement is done: the
        // resource is unsubscribed, as the caller asked last.
        let uri = uri.clone();
        self.answer_waiters(|u| (u == uri).then_some(Ok(())));
        self.core.session.subscriptions.remove(&uri);
        // A subscribe still in flight must not record the subscription when it is acknowledged.
        let subscribe = SessionChange::Subscribe(uri.clone());
        for id in self.core.calls.ids() {
            if let Some(e) = self.core.calls.get_mut(id)
                && e.session.as_ref() == Some(&subscribe)
            {
                e.session = None;
            }
        }
    }

    fn reply_ended_locally(&mut self, p: CallRequest) {
        self.reply(p.call, None, Ok(json!({}).into()));
    }

    fn deliver_notification(&mut self, p: Notification) {
        self.push(Action::Notification(p));
    }

    fn deliver_progress(&mut self, p: Notification, w: RequestId) {
        let Some(entry) = self.core.calls.get(w) else {
            return;
        };
        let Some(call) = entry.kind.caller() else {
            return;
        };
        if entry.reset_on_progress {
            let mut at = later(self.core.now, entry.timeout);
            if let Some(total) = entry.max_total {
                at = at.min(later(entry.started, total));
            }
            self.core
                .timers
                .arm(TimerKey::keyed(TimerKind::RequestTimeout, w), at);
        }
        self.push(Action::Progress {
            call,
            params: p.params.unwrap_or(Value::Null),
        });
    }

    fn drop_late_response(&mut self, w: RequestId) {
        self.push(Action::Report(Report::LateResponse { id: w }));
    }

    fn drop_unknown_response(&mut self, p: Response) {
        self.push(Action::Report(Report::UnknownResponse { id: p.id }));
    }

    fn start_call(&mut self, p: CallRequest) {
        self.issue(
            RequestKind::Caller(p.call),
            &p.method,
            p.params,
            p.options,
            p.session,
        );
    }

    fn complete_call(&mut self, p: Response, w: RequestId) {
        #[cfg(feature = "checker")]
        let w = if mutant!(self.core, AnswerWrongCall) {
            let other = self.core.calls.iter().find(|(id, _)| *id != w);
            other.map_or(w, |(other, _)| other)
        } else {
            w
        };
        let entry = if mutant!(self.core, ReplyKeepsEntry) {
            self.core.calls.get(w).cloned()
        } else {
            self.core.calls.remove(w)
        };
        let Some(entry) = entry else {
            return;
        };
        self.cancel_call_timers(w);
        // A call answered (not for want of authorization) makes the authorizations whole again.
        if Self::auth_challenge(&p).is_none() {
            self.core.authorizations = 0;
        }
        self.answer(
            &entry,
            w,
            p.body.map_err(|e| match e {
                ResponseError::Rpc(e) => CallError::Server(e),
                ResponseError::Invalid { reason } => CallError::InvalidResponse { reason },
            }),
        );
    }

    fn mark_sent(&mut self, w: PendingSend) {
        if let Some(e) = self.core.calls.get_mut(w.id) {
            e.phase = Phase::Sent;
        }
    }

    fn schedule_send_retry(&mut self, w: PendingSend) {
        if let Some(e) = self.core.calls.get_mut(w.id) {
            e.phase = Phase::Retrying { attempt: w.attempt };
        }
        let c = &self.core.config;
        let delay = self.core.rng.jitter(c.retry_delay, c.retry_jitter_pct);
        let at = later(self.core.now, delay);
        self.core
            .timers
            .arm(TimerKey::keyed(TimerKind::SendRetry, w.id), at);
        self.push(Action::Report(Report::SendRetry {
            id: w.id,
            attempt: w.attempt,
        }));
    }

    fn retry_send(&mut self, w: RequestId) {
        let Some(e) = self.core.calls.get_mut(w) else {
            return;
        };
        let Phase::Retrying { attempt } = e.phase else {
            return;
        };
        e.phase = Phase::Sending {
            attempt: attempt + 1,
        };
        let frame = e.frame.clone();
        self.send(SendToken::Request(w), frame);
    }

    fn fail_backpressure(&mut self, w: PendingSend) {
        if let Some(entry) = self.end_call(w.id, "backpressure") {
            let error = CallError::Backpressure {
                attempts: w.attempt,
            };
            self.answer(&entry, w.id, Err(error));
        }
    }

    fn fail_send_error(&mut self, w: PendingSend) {
        if let Some(entry) = self.end_call(w.id, "send failed") {
            self.answer(&entry, w.id, Err(CallError::SendFailed));
        }
    }

    fn time_out_call(&mut self, w: RequestId) {
        if let Some(entry) = self.end_call(w, "timeout") {
            let after = self.core.now.saturating_sub(entry.started);
            self.answer(&entry, w, Err(CallError::Timeout { after }));
        }
    }

    fn cancel_call(&mut self, w: RequestId) {
        if let Some(entry) = self.end_call(w, "cancelled by the client") {
            self.answer(&entry, w, Err(CallError::Cancelled));
        }
    }

    fn park_unrun_calls(&mut self, w: Vec<RequestId>) {
        if mutant!(self.core, ParkNothing) {
            return;
        }
        for id in w {
            let Some(entry) = self.core.calls.get_mut(id) else {
                continue;
            };
            entry.phase = Phase::Parked;
            let frame = entry.frame.clone();
            // Its deadline stays armed; a busy send's retry has nothing to retry any more.
            self.core
                .timers
                .cancel(TimerKey::keyed(TimerKind::SendRetry, id));
            if mutant!(self.core, ResendOnExpired) {
                self.send(SendToken::Request(id), frame);
            }
        }
    }

    fn fail_running_calls(&mut self) {
        let cause = self
            .core
            .last_error
            .clone()
            .unwrap_or(Failure::Transport(TransportError::Closed));
        let error = CallError::ConnectionLost(cause);
        let running: Vec<RequestId> = self
            .core
            .calls
            .iter()
            .filter(|(_, e)| e.phase != Phase::Parked)
            .map(|(id, _)| id)
            .collect();
        for id in running {
            let Some(entry) = self.core.calls.remove(id) else {
                continue;
            };
            self.cancel_call_timers(id);
            self.tombstone(id);
            if let Some(call) = entry.kind.caller() {
                self.reply(call, Some(id), Err(error.clone()));
            }
        }
    }

    fn resend_parked(&mut self) {
        if mutant!(self.core, NoResend) {
            return;
        }
        let parked = self.core.calls.in_phase(Phase::Parked);
        for old in parked {
            let Some(mut entry) = self.core.calls.remove(old) else {
                continue;
            };
            let id = self.core.next_id;
            self.core.next_id += 1;
            entry.frame = protocol::with_new_id(&entry.frame, id, entry.progress);
            entry.resent = true;
            self.reissue(old, id, entry);
        }
    }

    fn fail_calls_lost(&mut self) {
        let cause = self
            .core
            .last_error
            .clone()
            .unwrap_or(Failure::Transport(TransportError::Closed));
        if mutant!(self.core, WaitFailedOnLoss) {
            let error = CallError::ConnectionLost(cause.clone());
            while let Some(waiting) = self.core.waiting.pop_front() {
                let call = waiting.request.call;
                self.core
                    .timers
                    .cancel(TimerKey::keyed(TimerKind::ReadyWait, call.0));
                self.reply(call, None, Err(error.clone()));
            }
        }
        self.fail_all(&CallError::ConnectionLost(cause));
    }

    fn fail_calls_shutdown(&mut self) {
        self.fail_all(&CallError::Shutdown);
    }

    fn tombstone_calls(&mut self) {
        // The listens are calls: they end here too, and nothing is covered any more.
        if self.core.listens != Listens::default() {
            self.core.listens = Listens::default();
            self.push(Action::Listening(ListenStatus::default()));
        }
        for id in self.core.calls.ids() {
            if mutant!(self.core, ForgetRetries)
                && matches!(
                    self.core.calls.get(id).map(|e| e.phase),
                    Some(Phase::Retrying { .. })
                )
            {
                continue;
            }
            self.core.calls.remove(id);
            self.cancel_call_timers(id);
            self.tombstone(id);
        }
    }

    fn hold_call(&mut self, p: CallRequest) {
        if mutant!(self.core, WaitSentAtOnce) {
            self.start_call(p);
            return;
        }
        let mut timeout = p
            .options
            .timeout
            .unwrap_or(self.core.config.request_timeout);
        if let Some(total) = p.options.max_total_timeout {
            timeout = timeout.min(total);
        }
        if !mutant!(self.core, NoWaitDeadline) {
            let at = later(self.core.now, timeout);
            self.core
                .timers
                .arm(TimerKey::keyed(TimerKind::ReadyWait, p.call.0), at);
        }
        self.core.waiting.push_back(crate::calls::WaitingCall {
            request: p,
            since: self.core.now,
        });
    }

    fn send_waiting(&mut self) {
        while let Some(waiting) = self.core.waiting.pop_front() {
            let p = waiting.request;
            self.core
                .timers
                .cancel(TimerKey::keyed(TimerKind::ReadyWait, p.call.0));
            let (id, frame) = self.record_request(
                RequestKind::Caller(p.call),
                &p.method,
                p.params,
                p.options,
                p.session,
                Phase::Sending { attempt: 1 },
            );
            // The time it waited counts: its deadline is the one it was made with.
            if !mutant!(self.core, WaitFreshDeadline)
                && let Some(entry) = self.core.calls.get_mut(id)
            {
                entry.started = waiting.since;
                let mut deadline = entry.timeout;
                if let Some(total) = entry.max_total {
                    deadline = deadline.min(total);
                }
                let at = later(waiting.since, deadline);
                self.core
                    .timers
                    .arm(TimerKey::keyed(TimerKind::RequestTimeout, id), at);
            }
            self.send(SendToken::Request(id), frame);
        }
    }

    fn time_out_waiting(&mut self, w: CallId) {
        if let Some(waiting) = self.take_waiting(w) {
            let after = self.core.now.saturating_sub(waiting.since);
            self.reply(w, None, Err(CallError::Timeout { after }));
        }
    }

    fn cancel_waiting(&mut self, w: CallId) {
        if self.take_waiting(w).is_some() {
            self.reply(w, None, Err(CallError::Cancelled));
        }
    }

    fn release_waiting(&mut self) {
        if mutant!(self.core, KeepWaitingOnPermanent) {
            return;
        }
        let error = self.unavailable();
        while let Some(waiting) = self.core.waiting.pop_front() {
            let call = waiting.request.call;
            self.core
                .timers
                .cancel(TimerKey::keyed(TimerKind::ReadyWait, call.0));
            self.reply(call, None, Err(error.clone()));
        }
    }

    fn fail_waiting_shutdown(&mut self) {
        if mutant!(self.core, WaitForgottenAtStop) {
            return;
        }
        while let Some(waiting) = self.core.waiting.pop_front() {
            let call = waiting.request.call;
            self.core
                .timers
                .cancel(TimerKey::keyed(TimerKind::ReadyWait, call.0));
            self.reply(call, None, Err(CallError::Shutdown));
        }
    }

    fn reject_call_unavailable(&mut self, p: &CallRequest) {
        let error = self.unavailable();
        self.reply(p.call, None, Err(error));
    }

    fn reject_notify_unavailable(&mut self, p: &NotifyRequest) {
        let error = self.unavailable();
        self.reply(p.call, None, Err(error));
    }

    fn reject_call_shutdown(&mut self, p: &CallRequest) {
        self.reply(p.call, None, Err(CallError::Shutdown));
    }

    fn reject_notify_shutdown(&mut self, p: &NotifyRequest) {
        self.reply(p.call, None, Err(CallError::Shutdown));
    }

    fn send_notification(&mut self, p: NotifyRequest) {
        let frame = protocol::notification(&p.method, p.params, self.modern_version());
        self.send(SendToken::Notify(p.call), frame);
    }

    fn reply_notified(&mut self, w: CallId) {
        self.reply(w, None, Ok(Value::Null.into()));
    }

    fn fail_notify(&mut self, w: CallId) {
        self.reply(w, None, Err(CallError::SendFailed));
    }
}

impl Ctx<'_> {
    /// Takes caller `call`'s waiting call out, its deadline disarmed.
    fn take_waiting(&mut self, call: CallId) -> Option<crate::calls::WaitingCall> {
        let at = self
            .core
            .waiting
            .iter()
            .position(|w| w.request.call == call)?;
        self.core
            .timers
            .cancel(TimerKey::keyed(TimerKind::ReadyWait, call.0));
        self.core.waiting.remove(at)
    }
}
