//! A request's CLIENT span and its metric point: opened where the caller made the request
//! (its context is the parent, and is written into `params._meta`), ended by the driver when
//! it answers the caller, with what only the driver knows (the JSON-RPC id, the protocol
//! version and session of that moment, the transitions the call lived through).

use std::time::Instant;

use mcp_machine::{Body, Step};
use opentelemetry::trace::{SpanKind, Status, TraceContextExt, Tracer};
use opentelemetry::{Context, KeyValue};
use serde_json::Value;

use super::{Moment, OuterToolSpan, Recorder, bounded, error_type, interned, keys, shared};
use crate::Error;

/// How much of a tool's arguments or result an opt-in attribute keeps.
const MAX_CAPTURED: usize = 16 * 1024;
/// How much of a server's error message the span status keeps.
const MAX_MESSAGE: usize = 512;

/// One request's span (or the host's `execute_tool` span it reports into) and its metric
/// attributes, from the caller to the driver's answer.
pub(crate) struct CallSpan {
    recorder: Recorder,
    /// The context whose active span is the request's.
    cx: Context,
    /// Whether the span is ours to end (not the host's outer span).
    own: bool,
    started: Instant,
    /// The metric point's attributes known at the start.
    attributes: Vec<KeyValue>,
    /// A `tools/call`: its result may say `isError`.
    tool_call: bool,
    /// How many times the call's own request went out (a retry or a re-send is a second).
    sends: u8,
    /// The id the call's own request last went out with.
    sent_as: Option<u64>,
}

impl CallSpan {
    /// Opens the span of a request of `method` under the caller's current context and writes
    /// that span's context into `params._meta`.
    pub(crate) fn start(
        recorder: &Recorder,
        method: &str,
        params: &mut Option<Value>,
    ) -> Box<CallSpan> {
        let telemetry = &recorder.telemetry;
        let parent = Context::current();
        let field = |name: &str| {
            params
                .as_ref()
                .and_then(|p| p.get(name))
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        let tool_call = method == "tools/call";
        let mut attributes = Vec::with_capacity(10);
        attributes.push(KeyValue::new(keys::METHOD, interned(method)));
        let mut target = None;
        match method {
            "tools/call" => {
                if let Some(name) = field("name") {
                    attributes.push(KeyValue::new(keys::TOOL_NAME, shared(&name)));
                    target = Some(name);
                }
                attributes.push(KeyValue::new(keys::OPERATION_NAME, "execute_tool"));
            }
            "prompts/get" => {
                if let Some(name) = field("name") {
                    attributes.push(KeyValue::new(keys::PROMPT_NAME, shared(&name)));
                    target = Some(name);
                }
            }
            _ => {}
        }
        attributes.extend_from_slice(recorder.common());
        let mut span_attributes = attributes.clone();
        if matches!(
            method,
            "resources/read" | "resources/subscribe" | "resources/unsubscribe"
        ) && let Some(uri) = field("uri")
        {
            if telemetry.uri_in_span_name {
                target = Some(uri.clone());
            }
            span_attributes.push(KeyValue::new(keys::RESOURCE_URI, uri));
        }
        if tool_call && telemetry.capture_tool_io {
            let arguments = params
                .as_ref()
                .and_then(|p| p.get("arguments"))
                .map(Value::to_string)
                .unwrap_or_else(|| "{}".to_owned());
            span_attributes.push(KeyValue::new(
                keys::TOOL_ARGUMENTS,
                bounded(&arguments, MAX_CAPTURED),
            ));
        }
        let outer = tool_call
            && parent.get::<OuterToolSpan>().is_some()
            && parent.span().span_context().is_valid();
        let cx = if outer {
            parent.span().set_attributes(span_attributes);
            parent
        } else {
            let mut name =
                String::with_capacity(method.len() + 1 + target.as_ref().map_or(0, String::len));
            name.push_str(method);
            if let Some(t) = &target {
                name.push(' ');
                name.push_str(t);
            }
            let span = telemetry
                .tracer
                .span_builder(name)
                .with_kind(SpanKind::Client)
                .with_attributes(span_attributes)
                .start_with_context(&*telemetry.tracer, &parent);
            parent.with_span(span)
        };
        telemetry.inject(&cx, params);
        Box::new(CallSpan {
            recorder: recorder.clone(),
            cx,
            own: !outer,
            started: Instant::now(),
            attributes,
            tool_call,
            sends: 0,
            sent_as: None,
        })
    }

    /// A request of this call went out with id `id`: the call's own (a second send of it is a
    /// retry of a busy transport or a re-send on a new session: an event), or one of the task
    /// it runs as (`own`: `tasks/get`, `tasks/result`, `tasks/update`: an event, and the
    /// call's context written into the frame the machine made).
    pub(crate) fn sent(&mut self, id: u64, own: bool, method: Option<&str>, bytes: &mut Vec<u8>) {
        let span = self.cx.span();
        if own {
            span.add_event(
                "mcp_client_rs.task_request",
                vec![
                    KeyValue::new(keys::METHOD, interned(method.unwrap_or(""))),
                    KeyValue::new(keys::REQUEST_ID, id.to_string()),
                ],
            );
            super::meta::inject_into_frame(&self.recorder.telemetry, &self.cx, bytes);
            return;
        }
        self.sends = self.sends.saturating_add(1);
        self.sent_as = Some(id);
        if self.sends > 1 {
            span.add_event(
                "mcp_client_rs.resend",
                vec![
                    KeyValue::new(keys::REQUEST_ID, id.to_string()),
                    KeyValue::new("mcp_client_rs.attempt", i64::from(self.sends)),
                ],
            );
        }
    }

    /// The id the call's own request last went out with, once it went out.
    pub(crate) fn sent_as(&self) -> Option<u64> {
        self.sent_as
    }

    /// The context whose span is the request's (what a request or notification that belongs
    /// to the call has as its parent).
    pub(crate) fn context(&self) -> Context {
        self.cx.clone()
    }

    /// The call lived through a transition of the connection (a reconnect it waited out, a
    /// session that ended under it): an event on its span.
    pub(crate) fn transition(&self, step: &Step) {
        self.cx.span().add_event(
            "mcp_client_rs.transition",
            vec![
                KeyValue::new("mcp_client_rs.state.from", step.from.name()),
                KeyValue::new("mcp_client_rs.state.to", step.to.name()),
                KeyValue::new("mcp_client_rs.event", step.event.name().to_owned()),
                KeyValue::new("mcp_client_rs.row", i64::from(step.row)),
            ],
        );
    }

    /// Ends the span (unless it is the host's) and records the metric point, with the outcome
    /// the caller is answered. `request` is the JSON-RPC id the request went out with, if it
    /// went out; `moment` what the connection is at this moment.
    pub(crate) fn finish(
        self,
        request: Option<u64>,
        outcome: &Result<Body, Box<Error>>,
        moment: Moment<'_>,
    ) {
        let CallSpan {
            recorder,
            cx,
            own,
            started,
            mut attributes,
            tool_call,
            sends: _,
            sent_as: _,
        } = self;
        let span = cx.span();
        let mut late = Vec::with_capacity(5);
        if let Some(id) = request {
            late.push(KeyValue::new(keys::REQUEST_ID, id.to_string()));
        }
        if let Some(v) = moment.version {
            let v = KeyValue::new(keys::PROTOCOL_VERSION, interned(v));
            attributes.push(v.clone());
            late.push(v);
        }
        if let Some(v) = moment.http {
            let v = KeyValue::new(keys::NETWORK_PROTOCOL_VERSION, v);
            attributes.push(v.clone());
            late.push(v);
        }
        if let Some(s) = moment.session {
            late.push(KeyValue::new(
                keys::SESSION_ID,
                recorder.session_attribute(s),
            ));
        }
        let mut status = Status::Unset;
        match outcome {
            Err(e) => {
                let kind = error_type(e);
                if let Error::Server { code, message, .. } = &**e {
                    let code = KeyValue::new(keys::STATUS_CODE, code.to_string());
                    attributes.push(code.clone());
                    late.push(code);
                    status = Status::error(bounded(message, MAX_MESSAGE));
                } else {
                    status = Status::error(bounded(&e.to_string(), MAX_MESSAGE));
                }
                if matches!(**e, Error::Unavailable { .. }) {
                    recorder.instruments().refused.add(1, recorder.common());
                }
                let kind = KeyValue::new(keys::ERROR_TYPE, kind);
                attributes.push(kind.clone());
                late.push(kind);
            }
            Ok(body) if tool_call => {
                if is_error(body) {
                    let kind = KeyValue::new(keys::ERROR_TYPE, "tool_error");
                    attributes.push(kind.clone());
                    late.push(kind);
                    status = Status::error("");
                } else if recorder.telemetry.capture_tool_io {
                    late.push(KeyValue::new(
                        keys::TOOL_RESULT,
                        bounded(&body_text(body), MAX_CAPTURED),
                    ));
                }
            }
            Ok(_) => {}
        }
        span.set_attributes(late);
        if !matches!(status, Status::Unset) {
            span.set_status(status);
        }
        if own {
            span.end();
        }
        recorder
            .instruments()
            .operation
            .record(started.elapsed().as_secs_f64(), &attributes);
    }
}

/// Whether a tool call's result says `isError: true` (read without building its tree).
fn is_error(body: &Body) -> bool {
    #[derive(serde::Deserialize)]
    struct Flag {
        #[serde(rename = "isError", default)]
        is_error: Option<bool>,
    }
    match body {
        Body::Tree(v) => v.get("isError").and_then(Value::as_bool) == Some(true),
        // Most results never name it: no parse for them.
        Body::Text(raw) => {
            memchr::memmem::find(raw.get().as_bytes(), b"\"isError\"").is_some()
                && serde_json::from_str::<Flag>(raw.get())
                    .ok()
                    .and_then(|f| f.is_error)
                    == Some(true)
        }
    }
}

fn body_text(body: &Body) -> String {
    match body {
        Body::Tree(v) => v.to_string(),
        Body::Text(raw) => raw.get().to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn is_error_reads_text_and_trees() {
        let text =
            |s: &str| Body::Text(serde_json::value::RawValue::from_string(s.into()).unwrap());
        assert!(is_error(&text(r#"{"content":[],"isError":true}"#)));
        assert!(!is_error(&text(r#"{"content":[],"isError":false}"#)));
        assert!(!is_error(&text(r#"{"content":[{"isError":true}]}"#)));
        assert!(!is_error(&text(r#"{"isError":"yes"}"#)));
        assert!(is_error(&Body::Tree(serde_json::json!({"isError": true}))));
    }
}
