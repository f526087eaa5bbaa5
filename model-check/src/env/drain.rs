//! Carrying out the machine's actions, as the runtime's driver does: each action is
//! interpreted into the ghost history ([`crate::ghost::interpret`]), and a send gets its
//! outcome at once, from the transport's mode (the machine's send contract). What one move
//! made the machine do is recorded in a [`StepLog`] for the checks at its end.

use mcp_machine::{
    Action, Input, Report, RequestId, SendOutcome, SendToken, ServerRequestId, Step,
};
use serde_json::Value;

use super::NOTIFY_BASE;
use crate::ghost::interpret::interpret;
use crate::ghost::listen::listen_send_outcome;
use crate::ghost::mark_busy;
use crate::ghost::wire::delivered;
use crate::model::Harness;
use crate::properties::rows;
use crate::world::{Move, World};

/// What one move made the machine do, for the checks at its end (not part of the state).
#[derive(Debug, Default)]
pub struct StepLog {
    /// Actions carried out.
    pub count: usize,
    /// Frames offered to the transport: generation, token, the frame parsed.
    pub sends: Vec<(u64, SendToken, Value)>,
    /// Reports, by kind.
    pub reports: Vec<&'static str>,
    /// Server notifications handed to the application.
    pub notifications: usize,
    /// Callers that got progress.
    pub progress: Vec<u64>,
    /// Server requests handed to the handler (ids).
    pub server_requests: Vec<i64>,
    /// Send outcomes of callers' request frames: the id and the outcome.
    pub request_outcomes: Vec<(RequestId, SendOutcome)>,
    /// Generations whose handler requests were all aborted.
    pub aborted: Vec<u64>,
    /// Callers answered with a result.
    pub answered_ok: usize,
}

impl StepLog {
    pub(crate) fn absorb(&mut self, other: StepLog) {
        self.count += other.count;
        self.sends.extend(other.sends);
        self.reports.extend(other.reports);
        self.notifications += other.notifications;
        self.progress.extend(other.progress);
        self.server_requests.extend(other.server_requests);
        self.request_outcomes.extend(other.request_outcomes);
        self.aborted.extend(other.aborted);
        self.answered_ok += other.answered_ok;
    }

    /// The error code of the response to server request `id` sent in this step, or `Some(0)`
    /// for a result.
    pub(crate) fn response_code(&self, id: i64) -> Option<i64> {
        self.sends.iter().find_map(|(_, _, v)| {
            let matches = match &v["id"] {
                Value::String(_) => id == -1,
                other => other.as_i64() == Some(id),
            };
            (matches && v.get("method").is_none()).then(|| {
                v.get("error")
                    .map_or(0, |e| e["code"].as_i64().unwrap_or(i64::MIN))
            })
        })
    }
}

/// A report's kind, as the expectations name it.
fn report_kind(r: &Report) -> &'static str {
    match r {
        Report::Malformed { .. } => "malformed",
        Report::Oversized { .. } => "oversized",
        Report::LateResponse { .. } => "late",
        Report::UnknownResponse { .. } => "unknown",
        Report::SendRetry { .. } => "send retry",
        Report::OwedDropped { .. } => "owed dropped",
        Report::InitRejected(_) => "init rejected",
        Report::RestoreFailed(_) => "restore failed",
        Report::ImpossibleRow { .. } => "impossible row",
        Report::UnexpectedServerRequest { .. } => "unexpected server request",
        Report::ProbeFallback { .. } => "probe fallback",
        Report::ProbeTimeout => "probe timeout",
        Report::StrayListenNotification { .. } => "stray",
        Report::ListenGaveUp => "listen gave up",
        _ => "other",
    }
}

impl Harness {
    /// Coverage, impossible rows and the trace line of one row that fired.
    pub(crate) fn observe(
        &self,
        n: &mut World,
        step: Step,
        what: &str,
        log: Option<&mut Vec<String>>,
    ) {
        self.coverage.mark(&step);
        rows::fired(n, &step);
        if let Some(log) = log {
            log.push(format!(
                "  {what} in {} → event {} → row #{} (line {}) → {}",
                step.from.name(),
                step.event.name(),
                step.row,
                step.line,
                step.to.name()
            ));
        }
    }

    /// Carries out every queued action, recording ghost history; a send gets its outcome at
    /// once, from the transport's mode (the machine's send contract, as in the driver).
    /// Returns what the actions were.
    pub(crate) fn drain(
        &self,
        n: &mut World,
        mv: Option<Move>,
        mut log: Option<&mut Vec<String>>,
    ) -> StepLog {
        let mut record = StepLog::default();
        while let Some(action) = n.m.poll_action() {
            record.count += 1;
            match &action {
                Action::Report(r) => record.reports.push(report_kind(r)),
                Action::Notification(_) => record.notifications += 1,
                Action::Progress { call, .. } => record.progress.push(call.0),
                Action::ServerRequest { request, .. } => {
                    if let ServerRequestId::Int(i) = request.id {
                        record.server_requests.push(i);
                    }
                }
                Action::AbortServerRequests { generation } => record.aborted.push(*generation),
                Action::Reply {
                    outcome: Ok(_),
                    call,
                    ..
                } if call.0 < u64::from(NOTIFY_BASE) => record.answered_ok += 1,
                _ => {}
            }
            if let Some(log) = log.as_deref_mut() {
                log.push(format!("      {}", describe(&action)));
            }
            let send = match &action {
                Action::Send {
                    generation,
                    token,
                    frame,
                } => Some((*generation, *token, frame.clone())),
                _ => None,
            };
            interpret(n, mv, action);
            if let Some((generation, token, frame)) = send {
                let outcome = n.env.send_mode.unwrap_or(SendOutcome::Ok);
                let parsed: Value = serde_json::from_slice(&frame).unwrap_or(Value::Null);
                record.sends.push((generation, token, parsed));
                if let SendToken::Request(id) = token {
                    record.request_outcomes.push((id, outcome));
                }
                match outcome {
                    SendOutcome::Ok => delivered(n, generation, &frame),
                    SendOutcome::Failed => {
                        n.ghost.refused.insert(generation);
                    }
                    SendOutcome::Busy => {}
                }
                if let SendToken::Request(id) = token {
                    listen_send_outcome(n, id, outcome);
                }
                match (outcome, token) {
                    (SendOutcome::Busy, SendToken::Request(id)) => mark_busy(n, id),
                    (SendOutcome::Ok, SendToken::Request(id)) => {
                        n.env.on_wire.entry(id).or_insert((generation, 0));
                    }
                    _ => {}
                }
                let now = n.m.now();
                let input = Input::SendResult {
                    generation,
                    token,
                    outcome,
                };
                let step = n.m.handle(input, now);
                let what = format!("{outcome:?} outcome of {token:?}");
                self.observe(n, step, &what, log.as_deref_mut());
            }
        }
        record
    }
}

/// One line for an action in a trace.
pub fn describe(a: &Action) -> String {
    match a {
        Action::Send {
            generation,
            token,
            frame,
        } => {
            format!(
                "send generation {generation} {token:?}: {}",
                String::from_utf8_lossy(frame)
            )
        }
        Action::Reply {
            call,
            request,
            outcome,
        } => {
            let o = match outcome {
                Ok(_) => "ok".to_string(),
                Err(e) => format!("{e:?}"),
            };
            format!("reply caller {} (request {request:?}): {o}", call.0)
        }
        other => format!("{other:?}"),
    }
}
