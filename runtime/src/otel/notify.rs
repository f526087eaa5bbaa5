//! A notification the client sends (`notifications/initialized`, `notifications/cancelled`,
//! `notifications/roots/list_changed`, a handler's progress): a CLIENT span named by its
//! method, its context written into the frame's `params._meta`, and a point of
//! `mcp.client.operation.duration`. A notification has no answer: its span ends when the
//! transport took the frame (or refused it: `error.type = send_failed`), not when the server
//! read it.

use std::time::Instant;

use opentelemetry::trace::{SpanKind, Status, TraceContextExt, Tracer};
use opentelemetry::{Context, KeyValue};

use super::{Moment, Recorder, interned, keys};

/// One notification's span, from the frame made to the transport's verdict on it.
pub(crate) struct NotificationSpan {
    recorder: Recorder,
    cx: Context,
    started: Instant,
    attributes: Vec<KeyValue>,
}

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
        let telemetry = &recorder.telemetry;
        let parent = parent.cloned().unwrap_or_default();
        let mut attributes = Vec::with_capacity(8);
        attributes.push(KeyValue::new(keys::METHOD, interned(method)));
        if let Some(v) = moment.version {
            attributes.push(KeyValue::new(keys::PROTOCOL_VERSION, interned(v)));
        }
        if let Some(v) = moment.http {
            attributes.push(KeyValue::new(keys::NETWORK_PROTOCOL_VERSION, v));
        }
        attributes.extend_from_slice(recorder.common());
        let mut span_attributes = attributes.clone();
        if let Some(s) = &moment.session {
            span_attributes.push(KeyValue::new(
                keys::SESSION_ID,
                recorder.session_attribute(s.clone()),
            ));
        }
        let span = telemetry
            .tracer
            .span_builder(method.to_owned())
            .with_kind(SpanKind::Client)
            .with_attributes(span_attributes)
            .start_with_context(&*telemetry.tracer, &parent);
        let cx = parent.with_span(span);
        super::meta::inject_into_frame(telemetry, &cx, bytes);
        NotificationSpan {
            recorder: recorder.clone(),
            cx,
            started: Instant::now(),
            attributes,
        }
    }

    /// Ends the span with the transport's verdict: `taken`, or refused (`send_failed`).
    pub(crate) fn finish(self, taken: bool) {
        let NotificationSpan {
            recorder,
            cx,
            started,
            mut attributes,
        } = self;
        let span = cx.span();
        if !taken {
            let kind = KeyValue::new(keys::ERROR_TYPE, "send_failed");
            span.set_attribute(kind.clone());
            span.set_status(Status::error("the transport did not take the notification"));
            attributes.push(kind);
        }
        span.end();
        recorder
            .instruments()
            .operation
            .record(started.elapsed().as_secs_f64(), &attributes);
    }
}
