//! What the server initiates, as the client handles it: a request (sampling, elicitation,
//! roots, an input of a 2026-07-28 round) or a notification (a log message, progress, a list
//! that changed, a resource updated). Each is a SERVER span whose parent is the context the
//! server wrote into `params._meta` (so a handler runs in the server's trace), ended when the
//! client is done with it (a request: the handler's answer; a notification: delivered to the
//! subscribers), and a point of `mcp.server.operation.duration`.

use std::time::Instant;

use mcp_machine::{RpcError, ServerRequestId};
use opentelemetry::trace::{SpanKind, Status, TraceContextExt, Tracer};
use opentelemetry::{Context, KeyValue};
use serde_json::Value;

use super::{Moment, Recorder, bounded, keys};

/// The span of one request or notification of the server while the client handles it.
pub(crate) struct ServerSpan {
    recorder: Recorder,
    cx: Context,
    started: Instant,
    /// The metric point's attributes known at the start.
    attributes: Vec<KeyValue>,
}

impl ServerSpan {
    /// Opens the span of the server's `method` with JSON-RPC id `id` (none for a notification
    /// or an input of a round, which has no id of its own). Its parent is the context in
    /// `params._meta`, else `fallback` (an input of a round: the span of the call it belongs
    /// to), else none.
    pub(crate) fn start(
        recorder: &Recorder,
        method: &str,
        id: Option<&ServerRequestId>,
        params: Option<&Value>,
        fallback: Option<&Context>,
        moment: &Moment<'_>,
    ) -> ServerSpan {
        let telemetry = &recorder.telemetry;
        let parent = telemetry.extract(params, fallback.unwrap_or(&Context::new()));
        // The server names the method: a name of its own is bounded.
        let method = bounded(method, 128);
        // The point names a method this module knows, else `_OTHER` (cardinality); the span,
        // which is not aggregated, names it as the server did.
        let mut attributes = Vec::with_capacity(8);
        attributes.push(KeyValue::new(keys::METHOD, super::known_method(&method)));
        if let Some(v) = moment.version {
            attributes.push(KeyValue::new(keys::PROTOCOL_VERSION, super::interned(v)));
        }
        if let Some(v) = moment.http {
            attributes.push(KeyValue::new(keys::NETWORK_PROTOCOL_VERSION, v));
        }
        attributes.extend_from_slice(recorder.common());
        let mut span_attributes = attributes.clone();
        span_attributes[0] = KeyValue::new(keys::METHOD, super::interned(&method));
        if let Some(id) = id {
            span_attributes.push(KeyValue::new(keys::REQUEST_ID, id.to_string()));
        }
        if let Some(s) = &moment.session {
            span_attributes.push(KeyValue::new(
                keys::SESSION_ID,
                recorder.session_attribute(s.clone()),
            ));
        }
        if method == "notifications/resources/updated"
            && let Some(uri) = params.and_then(|p| p.get("uri")).and_then(Value::as_str)
        {
            span_attributes.push(KeyValue::new(keys::RESOURCE_URI, bounded(uri, 2048)));
        }
        let span = telemetry
            .tracer
            .span_builder(method)
            .with_kind(SpanKind::Server)
            .with_attributes(span_attributes)
            .start_with_context(&*telemetry.tracer, &parent);
        ServerSpan {
            recorder: recorder.clone(),
            cx: parent.with_span(span),
            started: Instant::now(),
            attributes,
        }
    }

    /// The context the handler runs in (its span is this one).
    pub(crate) fn context(&self) -> Context {
        self.cx.clone()
    }

    /// Ends the span and records its point with the handler's answer (`None`: it was
    /// cancelled; a notification delivered: `Some(Ok(..))`).
    pub(crate) fn finish(self, result: Option<&Result<Value, RpcError>>) {
        let ServerSpan {
            recorder,
            cx,
            started,
            mut attributes,
        } = self;
        let span = cx.span();
        let kind = match result {
            Some(Ok(_)) => None,
            Some(Err(e)) => {
                let code = KeyValue::new(keys::STATUS_CODE, e.code.to_string());
                span.set_attribute(code.clone());
                attributes.push(code);
                span.set_status(Status::error(bounded(&e.message, 512)));
                Some(e.code.to_string())
            }
            None => {
                span.set_status(Status::error("cancelled"));
                Some("cancelled".to_owned())
            }
        };
        if let Some(kind) = kind {
            let kind = KeyValue::new(keys::ERROR_TYPE, kind);
            span.set_attribute(kind.clone());
            attributes.push(kind);
        }
        span.end();
        recorder
            .instruments()
            .server_operation
            .record(started.elapsed().as_secs_f64(), &attributes);
    }
}
