//! What the server initiates, as the client handles it: a request (sampling, elicitation,
//! roots, an input of a 2026-07-28 round) or a notification (a log message, progress, a list
//! that changed, a resource updated). Each is a SERVER span whose parent is the context the
//! server wrote into `params._meta` (so a handler runs in the server's trace), ended when the
//! client is done with it (a request: the handler's answer; a notification: delivered to the
//! subscribers), and a point of `mcp.server.operation.duration`.

use mcp_machine::{RpcError, ServerRequestId};
use opentelemetry::trace::SpanKind;
use opentelemetry::{Context, KeyValue};
use serde_json::Value;

use super::operation::{Opening, Operation};
use super::{Moment, Recorder, bounded, keys};

/// The span of one request or notification of the server while the client handles it.
pub(crate) struct ServerSpan(Operation);

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
        let parent = recorder
            .telemetry
            .extract(params, fallback.unwrap_or(&Context::new()));
        // The server names the method: a name of its own is bounded.
        let method = bounded(method, 128);
        let mut extra = Vec::new();
        if let Some(id) = id {
            extra.push(KeyValue::new(keys::REQUEST_ID, id.to_string()));
        }
        if method == "notifications/resources/updated"
            && let Some(uri) = params.and_then(|p| p.get("uri")).and_then(Value::as_str)
        {
            extra.push(KeyValue::new(keys::RESOURCE_URI, bounded(uri, 2048)));
        }
        ServerSpan(Operation::start(
            recorder,
            Opening {
                // The point names a method this module knows, else `_OTHER` (cardinality);
                // the span, which is not aggregated, names it as the server did.
                point_method: super::known_method(&method),
                span_method: super::interned(&method),
                name: method,
                kind: SpanKind::Server,
                extra,
                parent: &parent,
            },
            moment,
        ))
    }

    /// The context the handler runs in (its span is this one).
    pub(crate) fn context(&self) -> Context {
        self.0.context().clone()
    }

    /// Ends the span of a notification delivered to the subscribers.
    pub(crate) fn delivered(self) {
        self.finish(Some(&Ok(Value::Null)));
    }

    /// Ends the span and records its point with the handler's answer (`None`: it was
    /// cancelled).
    pub(crate) fn finish(self, result: Option<&Result<Value, RpcError>>) {
        let mut op = self.0;
        match result {
            Some(Ok(_)) => {}
            Some(Err(e)) => {
                op.both(KeyValue::new(keys::STATUS_CODE, e.code.to_string()));
                op.fail(e.code.to_string(), bounded(&e.message, 512));
            }
            None => op.fail("cancelled".to_owned(), "cancelled".to_owned()),
        }
        op.end(|i| &i.server_operation);
    }
}
