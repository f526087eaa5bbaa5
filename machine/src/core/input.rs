//! The guards and actions of `spec/input.toml`: multi round-trip requests: input rounds fulfilled through the handler, then the call sent again.
//!
//! One method per guard and action the spec file declares, in its order; the shared helpers
//! (`send`, `owe`, `issue`, `end_call`, ...) are in [`super`]. What fires when is the
//! table's: nothing here decides a transition.

use super::*;
use crate::generated::InputHandlers;

impl InputHandlers for Ctx<'_> {
    fn is_input_required(&self, p: &Response) -> Option<InputRound> {
        let (id, result) = self.input_required(p)?;
        self.input_round(id, result).ok()
    }

    fn is_input_required_refused(&self, p: &Response) -> Option<RequestId> {
        let (id, result) = self.input_required(p)?;
        self.input_round(id, result).is_err().then_some(id)
    }

    fn is_input_failure(&self, p: &InputReply) -> Option<RequestId> {
        self.awaited(p)?;
        p.outcome.is_err().then_some(p.request)
    }

    fn completes_input_round(&self, p: &InputReply) -> Option<RequestId> {
        let mrtr = self.awaited(p)?;
        let others_given = mrtr
            .awaiting
            .iter()
            .all(|(k, v)| *k == p.key || v.is_some());
        (p.outcome.is_ok() && others_given).then_some(p.request)
    }

    fn is_input_reply(&self, p: &InputReply) -> Option<RequestId> {
        self.awaited(p)?;
        p.outcome.is_ok().then_some(p.request)
    }

    fn start_input_round(&mut self, w: InputRound) {
        let Some(entry) = self.core.calls.get_mut(w.request) else {
            return;
        };
        entry.phase = Phase::AwaitingInput;
        // Its answered id needs no retry of its send any more.
        self.core
            .timers
            .cancel(TimerKey::keyed(TimerKind::SendRetry, w.request));
        let mrtr = entry.input_rounds.get_or_insert_with(Box::default);
        mrtr.round = mrtr.round.saturating_add(1);
        mrtr.awaiting = w.inputs.iter().map(|(k, _, _)| (k.clone(), None)).collect();
        mrtr.state = w.state;
        if w.inputs.is_empty() {
            self.send_round(w.request);
            return;
        }
        self.hand_inputs(w.request, w.inputs);
    }

    fn fail_input_required(&mut self, p: Response, w: RequestId) {
        let reason = match p.body.as_ref().ok().map(|r| self.input_round(w, r.value())) {
            Some(Err(reason)) => reason,
            Some(Ok(_)) | None => "it cannot be met".to_owned(),
        };
        let Some(entry) = self.core.calls.remove(w) else {
            return;
        };
        self.cancel_call_timers(w);
        self.tombstone(w);
        self.answer(&entry, w, Err(CallError::InputRequired { reason }));
    }

    fn record_input_reply(&mut self, p: InputReply, w: &RequestId) {
        let Ok(value) = p.outcome else {
            return;
        };
        if let Some(mrtr) = self
            .core
            .calls
            .get_mut(*w)
            .and_then(|e| e.input_rounds.as_deref_mut())
            && let Some(slot) = mrtr.awaiting.get_mut(&p.key)
        {
            *slot = Some(value.to_string());
        }
    }

    fn retry_with_inputs(&mut self, w: RequestId) {
        self.send_round(w);
    }

    fn fail_input_handler(&mut self, p: InputReply, w: RequestId) {
        let Some(entry) = self.core.calls.remove(w) else {
            return;
        };
        self.cancel_call_timers(w);
        self.tombstone(w);
        self.abort_inputs(w);
        let Err(error) = p.outcome else {
            return;
        };
        let key = p.key;
        self.answer(&entry, w, Err(CallError::InputFailed { key, error }));
    }
}
