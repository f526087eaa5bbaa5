//! A request of the server (sampling, elicitation, roots, an input of a 2026-07-28 round) as
//! the client handles it: a SERVER span whose parent is the context the server wrote into
//! `params._meta` (so the handler runs in the server's trace), ended with the handler's answer.

use mcp_machine::{RpcError, ServerRequestId};
use opentelemetry::trace::{SpanKind, Status, TraceContextExt, Tracer};
use opentelemetry::{Context, KeyValue};
use serde_json::Value;

use super::{Recorder, bounded, keys};

/// The span of one server request while the client's handler runs.
pub(crate) struct ServerSpan {
    cx: Context,
}

impl ServerSpan {
    /// Opens the span of the server's request `method` with id `id` (none for an input of a
    /// round, which has no JSON-RPC id of its own).
    pub(crate) fn start(
        recorder: &Recorder,
        method: &str,
        id: Option<&ServerRequestId>,
        params: &Value,
        version: Option<&str>,
        session: Option<String>,
    ) -> ServerSpan {
        let telemetry = &recorder.telemetry;
        let parent = telemetry.extract(Some(params), &Context::new());
        // The server names the method: a name of its own is bounded.
        let method = super::bounded(method, 128);
        let mut attributes = vec![KeyValue::new(keys::METHOD, super::interned(&method))];
        if let Some(id) = id {
            attributes.push(KeyValue::new(keys::REQUEST_ID, id.to_string()));
        }
        if let Some(v) = version {
            attributes.push(KeyValue::new(keys::PROTOCOL_VERSION, v.to_owned()));
        }
        if let Some(s) = session {
            attributes.push(KeyValue::new(
                keys::SESSION_ID,
                recorder.session_attribute(s),
            ));
        }
        attributes.extend_from_slice(recorder.common());
        let span = telemetry
            .tracer
            .span_builder(method)
            .with_kind(SpanKind::Server)
            .with_attributes(attributes)
            .start_with_context(&*telemetry.tracer, &parent);
        ServerSpan {
            cx: parent.with_span(span),
        }
    }

    /// The context the handler runs in (its span is this one).
    pub(crate) fn context(&self) -> Context {
        self.cx.clone()
    }

    /// Ends the span with the handler's answer (`None`: it was cancelled).
    pub(crate) fn finish(self, result: Option<&Result<Value, RpcError>>) {
        let span = self.cx.span();
        let kind = match result {
            Some(Ok(_)) => None,
            Some(Err(e)) => {
                span.set_attribute(KeyValue::new(keys::STATUS_CODE, e.code.to_string()));
                span.set_status(Status::error(bounded(&e.message, 512)));
                Some(e.code.to_string())
            }
            None => {
                span.set_status(Status::error("cancelled"));
                Some("cancelled".to_owned())
            }
        };
        if let Some(kind) = &kind {
            span.set_attribute(KeyValue::new(keys::ERROR_TYPE, kind.clone()));
        }
        span.end();
    }
}
