//! What a SERVER span of the server's request or notification and a CLIENT span of the
//! client's notification share: a span and the metric point recorded when it ends, with the
//! conventions' attributes of the moment it began (method, protocol version, HTTP version,
//! the peer, the session on the span only), and the failure it may end with.

use std::time::Instant;

use opentelemetry::metrics::Histogram;
use opentelemetry::trace::{SpanKind, Status, TraceContextExt, Tracer};
use opentelemetry::{Context, KeyValue};

use super::{Instruments, Moment, Recorder, interned, keys};

/// A span in progress and its metric point's attributes.
pub(crate) struct Operation {
    recorder: Recorder,
    cx: Context,
    started: Instant,
    /// The metric point's attributes.
    attributes: Vec<KeyValue>,
}

/// How an operation's span is opened.
pub(crate) struct Opening<'a> {
    /// The span's name.
    pub(crate) name: String,
    pub(crate) kind: SpanKind,
    /// `mcp.method.name` on the point (low cardinality) and on the span.
    pub(crate) point_method: opentelemetry::Value,
    pub(crate) span_method: opentelemetry::Value,
    /// More attributes of the span only.
    pub(crate) extra: Vec<KeyValue>,
    pub(crate) parent: &'a Context,
}

impl Operation {
    /// Opens the span under `opening.parent` with the attributes of `moment`.
    pub(crate) fn start(recorder: &Recorder, opening: Opening<'_>, moment: &Moment<'_>) -> Self {
        let mut attributes = Vec::with_capacity(8);
        attributes.push(KeyValue::new(keys::METHOD, opening.point_method));
        if let Some(v) = moment.version {
            attributes.push(KeyValue::new(keys::PROTOCOL_VERSION, interned(v)));
        }
        if let Some(v) = moment.http {
            attributes.push(KeyValue::new(keys::NETWORK_PROTOCOL_VERSION, v));
        }
        attributes.extend_from_slice(recorder.common());
        let mut span_attributes = attributes.clone();
        span_attributes[0] = KeyValue::new(keys::METHOD, opening.span_method);
        if let Some(s) = &moment.session {
            span_attributes.push(KeyValue::new(
                keys::SESSION_ID,
                recorder.session_attribute(s.clone()),
            ));
        }
        span_attributes.extend(opening.extra);
        let tracer = &recorder.telemetry.tracer;
        let span = tracer
            .span_builder(opening.name)
            .with_kind(opening.kind)
            .with_attributes(span_attributes)
            .start_with_context(&**tracer, opening.parent);
        Operation {
            recorder: recorder.clone(),
            cx: opening.parent.with_span(span),
            started: Instant::now(),
            attributes,
        }
    }

    /// The context whose span is this one.
    pub(crate) fn context(&self) -> &Context {
        &self.cx
    }

    /// An attribute on the span and on the point.
    pub(crate) fn both(&mut self, attribute: KeyValue) {
        self.cx.span().set_attribute(attribute.clone());
        self.attributes.push(attribute);
    }

    /// It failed: `error.type` on the span and the point, the span's status ERROR.
    pub(crate) fn fail(&mut self, error_type: String, message: String) {
        self.both(KeyValue::new(keys::ERROR_TYPE, error_type));
        self.cx.span().set_status(Status::error(message));
    }

    /// Ends the span and records the point into the histogram `into` picks.
    pub(crate) fn end(self, into: fn(&Instruments) -> &Histogram<f64>) {
        self.cx.span().end();
        into(self.recorder.instruments())
            .record(self.started.elapsed().as_secs_f64(), &self.attributes);
    }
}
