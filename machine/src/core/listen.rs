//! The guards and actions of `spec/listen.toml`: the 2026-07-28 listen: subscriptions and list changes, its acknowledgement, notifications, end and reopening.
//!
//! One method per guard and action the spec file declares, in its order; the shared helpers
//! (`send`, `owe`, `issue`, `end_call`, ...) are in [`super`]. What fires when is the
//! table's: nothing here decides a transition.

use super::*;
use crate::generated::ListenHandlers;

impl ListenHandlers for Ctx<'_> {
    fn is_modern_unsubscribe(&self, p: &CallRequest) -> bool {
        self.modern_version().is_some() && matches!(p.session, Some(SessionChange::Unsubscribe(_)))
    }

    fn is_listened_subscribe(&self, p: &CallRequest) -> bool {
        let Some(SessionChange::Subscribe(uri)) = &p.session else {
            return false;
        };
        self.modern_version().is_some()
            && self
                .core
                .listens
                .current
                .as_ref()
                .is_some_and(|l| l.acked.is_some() && l.asked.uris.contains(uri))
    }

    fn is_modern_subscribe(&self, p: &CallRequest) -> bool {
        self.modern_version().is_some() && matches!(p.session, Some(SessionChange::Subscribe(_)))
    }

    fn is_listen_send_end(&self, p: &SendToken) -> Option<PendingSend> {
        self.pending_send(p).filter(|s| {
            self.core
                .calls
                .get(s.id)
                .is_some_and(|e| e.kind == RequestKind::Listen)
        })
    }

    fn is_listen_refused(&self, p: &Response) -> Option<RequestId> {
        let id = Self::response_id(p)?;
        let refused = matches!(&p.body, Err(ResponseError::Rpc(e))
            if e.code == protocol::METHOD_NOT_FOUND || e.code == protocol::INVALID_PARAMS);
        (self.core.listens.current.as_ref()?.id == id && refused).then_some(id)
    }

    fn is_listen_end(&self, p: &Response) -> Option<ListenEnd> {
        let id = Self::response_id(p)?;
        if self.core.listens.current.as_ref()?.id != id {
            return None;
        }
        let reason = match &p.body {
            Ok(_) => ListenEndReason::Complete,
            Err(ResponseError::Rpc(e)) => ListenEndReason::Error {
                code: e.code,
                message: e.message.clone(),
            },
            Err(ResponseError::Invalid { .. }) => ListenEndReason::Invalid,
        };
        Some(ListenEnd { id, reason })
    }

    fn is_replaced_listen_end(&self, p: &Response) -> Option<RequestId> {
        let id = Self::response_id(p)?;
        (self.core.listens.previous.as_ref()?.id == id).then_some(id)
    }

    fn is_listen_timeout(&self, p: &RequestId) -> Option<RequestId> {
        (self.core.listens.current.as_ref()?.id == *p).then_some(*p)
    }

    fn is_listen_ack(&self, p: &Notification) -> Option<RequestId> {
        if p.method != listen::ACK_METHOD {
            return None;
        }
        let id = listen::tag(p)?.ok()?;
        let open = self.core.listens.current.as_ref()?;
        (open.id == id && open.acked.is_none()).then_some(id)
    }

    fn is_listen_cancelled(&self, p: &Notification) -> Option<ListenEnd> {
        let id = listen::cancelled_id(p)?;
        (self.core.listens.current.as_ref()?.id == id).then_some(ListenEnd {
            id,
            reason: ListenEndReason::Cancelled,
        })
    }

    fn is_replaced_listen_cancelled(&self, p: &Notification) -> Option<RequestId> {
        let id = listen::cancelled_id(p)?;
        (self.core.listens.previous.as_ref()?.id == id).then_some(id)
    }

    fn is_listen_notification(&self, p: &Notification) -> bool {
        if !listen::NOTIFICATION_METHODS.contains(&p.method.as_str()) {
            return false;
        }
        let Some(Ok(id)) = listen::tag(p) else {
            return false;
        };
        if mutant!(self.core, DeliverAnyListenId) {
            return true;
        }
        let l = &self.core.listens;
        l.current
            .as_ref()
            .is_some_and(|c| c.id == id && c.acked.is_some())
            || l.previous.as_ref().is_some_and(|c| c.id == id)
    }

    fn is_stray_listen_notification(&self, p: &Notification) -> bool {
        self.modern_version().is_some()
            && (p.method == listen::ACK_METHOD
                || (listen::NOTIFICATION_METHODS.contains(&p.method.as_str())
                    && listen::tag(p).is_some()))
    }

    fn can_relisten(&self) -> bool {
        let l = &self.core.listens;
        l.current.is_none()
            && !l.refused
            && (l.reopened < self.core.config.max_relistens || mutant!(self.core, NoRelistenCap))
            && !self.wanted().is_empty()
    }

    fn open_listen(&mut self) {
        self.core.listens = Listens::default();
        let want = self.wanted();
        if !want.is_empty() {
            self.send_listen(want);
        }
        self.tell_listening();
    }

    fn relisten(&mut self) {
        let want = self.wanted();
        let l = &self.core.listens;
        let retrying = self
            .core
            .timers
            .deadline(TimerKey::plain(TimerKind::ListenRetry))
            .is_some();
        // Nothing changed, unless the listen is dead (refused, given up) and something is
        // wanted: a new subscribe tries once more.
        let dead = l.current.is_none() && !retrying && !want.is_empty();
        if want == l.filter && !dead {
            self.tell_listening();
            return;
        }
        self.core
            .timers
            .cancel(TimerKey::plain(TimerKind::ListenRetry));
        self.core.listens.refused = false;
        if let Some(open) = self.core.listens.current.take() {
            if open.acked.is_some() {
                // It keeps delivering until its successor is acknowledged.
                if let Some(old) = self.core.listens.previous.replace(open) {
                    self.end_call(old.id, "replaced");
                }
            } else {
                self.end_call(open.id, "replaced");
            }
        }
        if want.is_empty() {
            if let Some(old) = self.core.listens.previous.take() {
                self.end_call(old.id, "nothing to listen for");
            }
            self.core.listens.filter = want;
        } else {
            self.send_listen(want);
        }
        self.tell_listening();
    }

    fn await_listen_ack(&mut self, p: CallRequest) {
        let phase = Phase::AwaitingAck;
        self.record_request(
            RequestKind::Caller(p.call),
            &p.method,
            p.params,
            p.options,
            p.session,
            phase,
        );
    }

    fn reply_subscribed(&mut self, p: CallRequest) {
        let Some(SessionChange::Subscribe(uri)) = p.session else {
            return;
        };
        let honored = self
            .core
            .listens
            .current
            .as_ref()
            .and_then(|l| l.acked.as_ref())
            .is_some_and(|(f, _)| f.uris.contains(&uri));
        if honored {
            self.core.session.subscriptions.insert(uri);
            self.reply(p.call, None, Ok(json!({}).into()));
        } else {
            let error = CallError::SubscriptionNotHonored { uri };
            self.reply(p.call, None, Err(error));
        }
    }

    fn accept_listen_ack(&mut self, p: Notification, w: RequestId) {
        let now = self.core.now;
        let Some(open) = self.core.listens.current.as_mut() else {
            return;
        };
        let said = listen::honored(&p);
        let honored = said.intersect(&open.asked);
        let asked = open.asked.clone();
        open.acked = Some((honored.clone(), now));
        // A listen lives long: its request timer bounded only the acknowledgement.
        self.core
            .timers
            .cancel(TimerKey::keyed(TimerKind::RequestTimeout, w));
        if !said.is_subset(&asked) {
            self.push(Action::Report(Report::ListenWider { id: w }));
        }
        if honored != asked {
            let missing = asked.minus(&honored);
            self.push(Action::Report(Report::ListenNarrowed { id: w, missing }));
        }
        if !mutant!(self.core, NoListenCancel)
            && let Some(old) = self.core.listens.previous.take()
        {
            self.end_call(old.id, "replaced");
        }
        let ignore = mutant!(self.core, AckIgnoresFilter);
        self.answer_waiters(|uri| {
            asked.uris.contains(uri).then(|| {
                if ignore || honored.uris.contains(uri) {
                    Ok(())
                } else {
                    Err(CallError::SubscriptionNotHonored {
                        uri: uri.to_owned(),
                    })
                }
            })
        });
        let restored: Vec<String> = self
            .core
            .session
            .subscriptions
            .iter()
            .filter(|uri| asked.uris.contains(*uri) && !honored.uris.contains(*uri))
            .cloned()
            .collect();
        for uri in restored {
            let change = SessionChange::Subscribe(uri);
            self.push(Action::Report(Report::RestoreFailed(change)));
        }
        self.tell_listening();
    }

    fn drop_stray_listen_notification(&mut self, p: Notification) {
        let method = p.method;
        self.push(Action::Report(Report::StrayListenNotification { method }));
    }

    fn refuse_listen(&mut self, p: Response, w: RequestId) {
        self.core.listens.current = None;
        self.forget_listen(w);
        self.core.listens.refused = true;
        let error = match p.body {
            Err(ResponseError::Rpc(e)) => e,
            Ok(_) | Err(ResponseError::Invalid { .. }) => return,
        };
        let code = error.code;
        self.answer_waiters(|_| Some(Err(CallError::Server(error.clone()))));
        self.push(Action::Report(Report::ListenRefused { id: w, code }));
        self.tell_listening();
    }

    fn end_listen(&mut self, w: ListenEnd) {
        let Some(open) = self.core.listens.current.take() else {
            return;
        };
        self.forget_listen(w.id);
        let stable = self.core.config.listen_stable;
        if open
            .acked
            .is_some_and(|(_, at)| self.core.now >= at.saturating_add(stable))
        {
            self.core.listens.reopened = 0;
        }
        let reason = w.reason.to_string();
        self.answer_waiters(|_| {
            Some(Err(CallError::ListenEnded {
                reason: reason.clone(),
            }))
        });
        let id = w.id;
        self.push(Action::Report(Report::ListenLost { id, reason }));
        self.tell_listening();
    }

    fn forget_replaced_listen(&mut self, w: RequestId) {
        self.core.listens.previous = None;
        self.forget_listen(w);
        self.tell_listening();
    }

    fn time_out_listen(&mut self, w: RequestId) {
        self.core.listens.current = None;
        if let Some(entry) = self.end_call(w, "timeout") {
            let after = self.core.now.saturating_sub(entry.started);
            self.answer_waiters(|_| Some(Err(CallError::Timeout { after })));
        }
        let reason = "not acknowledged in time".to_owned();
        self.push(Action::Report(Report::ListenLost { id: w, reason }));
        self.tell_listening();
    }

    fn lose_listen_send(&mut self, w: PendingSend) {
        self.core.listens.current = None;
        self.end_call(w.id, "send failed");
        self.answer_waiters(|_| Some(Err(CallError::SendFailed)));
        let reason = "its send was refused".to_owned();
        let id = w.id;
        self.push(Action::Report(Report::ListenLost { id, reason }));
        self.tell_listening();
    }

    fn schedule_listen_retry(&mut self) {
        let c = &self.core.config;
        let doublings = u32::from(self.core.listens.reopened.min(16));
        let delay = c.relisten_delay.saturating_mul(1 << doublings);
        let delay = self.core.rng.jitter(delay, 20);
        self.arm(TimerKind::ListenRetry, delay);
    }

    fn reopen_listen(&mut self) {
        self.core.listens.reopened = self.core.listens.reopened.saturating_add(1);
        let want = self.wanted();
        self.send_listen(want);
        self.tell_listening();
    }

    fn give_up_listen(&mut self) {
        self.push(Action::Report(Report::ListenGaveUp));
        let reason = "it was opened again as often as allowed".to_owned();
        self.answer_waiters(|_| {
            Some(Err(CallError::ListenEnded {
                reason: reason.clone(),
            }))
        });
        self.tell_listening();
    }
}
