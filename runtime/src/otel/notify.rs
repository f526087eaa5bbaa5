//! A notification the client sends (`notifications/initialized`, `notifications/cancelled`,
//! `notifications/roots/list_changed`, a handler's progress): a CLIENT span named by its
//! method, its context written into the frame's `params._meta`, and a point of
//! `mcp.client.operation.duration`. A notification has no answer: its span ends when the
//! transport took the frame (or refused it: `error.type = send_failed`), not when the server
//! read it.

use opentelemetry::Context;
use opentelemetry::trace::SpanKind;

use super::operation::{Opening, Operation};
use super::{Moment, Recorder, interned};

/// One notification's span, from the frame made to the transport's verdict on it.
pub(crate) struct NotificationSpan(Operation);

impl NotificationSpan {
    /// Opens the span of a notification of `method` under `parent` (a cancellation: the span
    /// of the call it cancels; anything else: the session's) and writes its context into the
    /// frame `bytes` (a frame that does not read as a JSON object is left as it is).
    pub(crate) fn start(
        recorder: &Recorder,
        parent: Option<&Context>,
        method: &str,
        moment: &Moment<'_>,
        bytes: &mut Vec<u8>,
    ) -> NotificationSpan {
        let op = Operation::start(
            recorder,
            Opening {
                name: method.to_owned(),
                kind: SpanKind::Client,
                point_method: interned(method),
                span_method: interned(method),
                extra: Vec::new(),
                parent: parent.unwrap_or(&Context::new()),
            },
            moment,
        );
        super::meta::inject_into_frame(&recorder.telemetry, op.context(), bytes);
        NotificationSpan(op)
    }

    /// Ends the span with the transport's verdict: `taken`, or refused (`send_failed`).
    pub(crate) fn finish(self, taken: bool) {
        let mut op = self.0;
        if !taken {
            op.fail(
                "send_failed".to_owned(),
                "the transport did not take the notification".to_owned(),
            );
        }
        op.end(|i| &i.operation);
    }
}
