//! The Streamable HTTP leg's POSTs of modern (2026-07-28) frames: stateless, one POST per
//! request, with the standard headers and the tool's `Mcp-Param-*` headers
//! ([`mcp_machine::headers`]).
//!
//! A frame is modern iff [`headers::is_modern`] (its head says so: see the bridge's `Frame`);
//! every other frame takes the handshake era's path in [`super::http`], unchanged. For a
//! modern frame:
//! - no `Mcp-Session-Id`, no `Last-Event-ID`, and an `mcp-session-id` in the answer is ignored
//!   (it never makes a session; so no GET stream and no `DELETE` follow);
//! - a non-2xx answer never ends the link: the JSON-RPC response to the request in its body
//!   (read up to the frame limit) is delivered as it is, else an error response with
//!   [`headers::HTTP_REFUSED`] is made up for the request; so is one for a 2xx answer that is
//!   neither JSON nor SSE, or that does not hold the response ([`no_response`]: "the server
//!   answered the POST of tools/call with HTTP 200 and no response", at once, as the handshake
//!   era's path does);
//! - an SSE answer that ends or breaks before the response is not resumed: an error response
//!   with [`headers::STREAM_LOST`] is made up, and the table's `can_reissue` row sends the
//!   call again under a new id (a bounded number of times);
//! - `notifications/cancelled` is never posted: it aborts the POST of the request it names
//!   when that is still in flight (closing its stream *is* the cancel);
//! - the responses to `tools/list` that no client reads (the machine's own, or all of them on
//!   a link whose catalog no client adopted) fill the link's [`ToolCatalog`].
//!
//! Failures of the connection itself (connect, timeout, an SSE event over the frame limit)
//! still end the link, as for every frame.

use std::collections::HashMap;
use std::sync::Mutex;

use mcp_machine::codes::{HTTP_REFUSED, STREAM_LOST};
use mcp_machine::headers;
use reqwest::StatusCode;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderName, HeaderValue};
use serde_json::{Value, json};
use tokio::sync::oneshot;

use super::bridge::{Frame, Out, PostError};
use super::web::{
    SseError, SseEvents, Wait, WebOptions, is_sse, message_of, one_line, read_capped,
};
use crate::ToolCatalog;

/// The `params.arguments` of a `tools/call` frame (`Null` when absent, or when the frame does
/// not parse): the one part of a frame its head does not carry, read only for a tool whose
/// arguments some `Mcp-Param-*` header mirrors. Nothing else of the frame is kept.
fn arguments(frame: &str) -> Value {
    #[derive(serde::Deserialize)]
    struct Call {
        params: Option<Params>,
    }
    #[derive(serde::Deserialize)]
    struct Params {
        arguments: Option<Value>,
    }
    serde_json::from_str::<Call>(frame)
        .ok()
        .and_then(|c| c.params?.arguments)
        .unwrap_or(Value::Null)
}

/// A modern request admitted and not yet answered (or aborted).
struct Entry {
    /// Tells a reused id's entry apart.
    token: u64,
    /// Aborts the POST (taken by the cancellation).
    abort: Option<oneshot::Sender<()>>,
    /// What the POST waits on for the abort (taken when the POST starts).
    aborted: Option<oneshot::Receiver<()>>,
}

/// What the leg knows of its modern POSTs.
#[derive(Default)]
struct State {
    /// The requests admitted and not yet done, by the JSON text of their id.
    in_flight: HashMap<String, Entry>,
    /// The next token.
    next: u64,
    /// Whether a modern frame was posted on this link.
    seen: bool,
    /// Whether an `initialize` was posted on this link (it speaks the handshake era).
    initialized: bool,
}

/// The modern POSTs of one link.
pub(crate) struct ModernPosts {
    tools: ToolCatalog,
    state: Mutex<State>,
}

/// Removes a POST's entry from the in-flight map when the POST ends, however it ends.
struct InFlight<'a> {
    posts: &'a ModernPosts,
    key: String,
    token: u64,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        let mut state = self.posts.lock();
        if state
            .in_flight
            .get(&self.key)
            .is_some_and(|e| e.token == self.token)
        {
            state.in_flight.remove(&self.key);
        }
    }
}

/// A made-up JSON-RPC error response for the request `id`.
fn error_response(id: &Value, code: i64, message: String, data: Option<Value>) -> Vec<u8> {
    let mut error = json!({"code": code, "message": message});
    if let Some(data) = data {
        error["data"] = data;
    }
    json!({"jsonrpc": "2.0", "id": id, "error": error})
        .to_string()
        .into_bytes()
}

/// The [`HTTP_REFUSED`] response for the request `id` answered `status`.
fn refused(id: &Value, status: StatusCode) -> Vec<u8> {
    let message = match status.canonical_reason() {
        Some(reason) => format!("HTTP {} {reason}", status.as_u16()),
        None => format!("HTTP {}", status.as_u16()),
    };
    error_response(
        id,
        HTTP_REFUSED,
        message,
        Some(json!({"httpStatus": status.as_u16()})),
    )
}

/// The [`HTTP_REFUSED`] response made up for the request `id` (of `method`) whose POST was
/// answered `status`, a success, with no response to it: an empty body, a body that is neither
/// JSON nor SSE (an SSE stream served as `application/json`, say), or JSON that answers
/// something else. Both eras make up the same one.
pub(crate) fn no_response(id: &Value, method: &str, status: StatusCode) -> Vec<u8> {
    error_response(
        id,
        HTTP_REFUSED,
        format!(
            "the server answered the POST of {method} with HTTP {} and no response",
            status.as_u16()
        ),
        Some(json!({"httpStatus": status.as_u16()})),
    )
}

/// Whether `message` is a JSON-RPC response (a result or an error) to the request `id`.
fn answers(message: &[u8], id: &Value) -> bool {
    /// `true` for a member that is present, whatever its value (`null` included).
    fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
        serde::de::IgnoredAny::deserialize(d).map(|_| true)
    }
    #[derive(serde::Deserialize)]
    struct Head {
        id: Option<Value>,
        #[serde(default, deserialize_with = "present")]
        method: bool,
        #[serde(default, deserialize_with = "present")]
        result: bool,
        #[serde(default, deserialize_with = "present")]
        error: bool,
    }
    use serde::Deserialize as _;
    serde_json::from_slice::<Head>(message)
        .is_ok_and(|h| !h.method && (h.result || h.error) && h.id.as_ref() == Some(id))
}

impl State {
    /// Puts a request in flight under `key` (replacing an entry of the same id); returns its
    /// token and the receiver its POST waits on.
    fn register(&mut self, key: String) -> (u64, oneshot::Receiver<()>) {
        let (abort, aborted) = oneshot::channel();
        self.next += 1;
        let token = self.next;
        let entry = Entry {
            token,
            abort: Some(abort),
            aborted: None,
        };
        self.in_flight.insert(key, entry);
        (token, aborted)
    }
}

impl ModernPosts {
    /// The modern POSTs of a link that reads and fills `tools`.
    pub(crate) fn new(tools: ToolCatalog) -> Self {
        ModernPosts {
            tools,
            state: Mutex::new(State::default()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Notes a modern frame as soon as it is read: the link has seen the era, and a request is
    /// in flight from now on (a cancellation read next finds it even before its POST starts).
    pub(crate) fn admit(&self, frame: &Frame) {
        let mut state = self.lock();
        state.seen = true;
        if let Some(id) = &frame.request
            && frame.method.as_deref() != Some("notifications/cancelled")
        {
            let key = id.to_string();
            let (_, aborted) = state.register(key.clone());
            if let Some(entry) = state.in_flight.get_mut(&key) {
                entry.aborted = Some(aborted);
            }
        }
    }

    /// Notes that the link posts `initialize`: it speaks the handshake era, and its
    /// cancellations are posted.
    pub(crate) fn initializing(&self) {
        self.lock().initialized = true;
    }

    /// Whether a frame that is not modern must not be posted: a `notifications/cancelled`
    /// naming a modern request whose POST is in flight (a listen, a call), or any on a link
    /// that has posted modern frames and no `initialize` (there is no such notification over
    /// HTTP in 2026-07-28). It aborts the POST it names, if still in flight. (A link that
    /// posted `initialize` and was then found modern, the upgrade path, still closes the
    /// streams it cancels.)
    pub(crate) fn intercepts(&self, frame: &Frame) -> bool {
        if frame.method.as_deref() != Some("notifications/cancelled") {
            return false;
        }
        let named = frame.cancels.as_ref().map(Value::to_string);
        {
            let state = self.lock();
            let modern_request = named.is_some_and(|id| state.in_flight.contains_key(&id));
            if !modern_request && (!state.seen || state.initialized) {
                return false;
            }
        }
        self.cancel(frame.cancels.as_ref());
        true
    }

    /// Aborts the POST of the request a `notifications/cancelled` names (`named`, its
    /// `params.requestId`), if still in flight.
    fn cancel(&self, named: Option<&Value>) {
        let Some(id) = named else {
            return;
        };
        // The entry stays until the POST ends: one not started yet finds itself aborted.
        let abort = self
            .lock()
            .in_flight
            .get_mut(&id.to_string())
            .and_then(|e| e.abort.take());
        if let Some(abort) = abort {
            tracing::debug!(target: "mcp::http", "cancelled: closing a request's POST");
            let _ = abort.send(());
        }
    }

    /// Posts one modern frame (read as `head`) and forwards what comes back.
    pub(crate) async fn post(
        &self,
        web: &WebOptions,
        endpoint: &reqwest::Url,
        frame: String,
        head: Frame,
        out: &Out,
    ) -> Result<(), PostError> {
        let method = head.method.as_deref().unwrap_or("");
        if method == "notifications/cancelled" {
            self.cancel(head.cancels.as_ref());
            return Ok(());
        }
        self.lock().seen = true;
        let Some(id) = &head.request else {
            // A notification (or a stray response): posted, its answer carries nothing.
            let exchange = format!(
                "POST of {}",
                if method.is_empty() {
                    "a response"
                } else {
                    method
                }
            );
            let response = web
                .send(
                    self.request(web, endpoint, frame, &head),
                    Wait::Prompt(&exchange),
                )
                .await?;
            if !response.status().is_success() {
                tracing::debug!(target: "mcp::http", status = response.status().as_u16(),
                    "a modern notification was refused");
            }
            return Ok(());
        };
        let key = id.to_string();
        let (token, aborted) = {
            let mut state = self.lock();
            let admitted = state
                .in_flight
                .get_mut(&key)
                .and_then(|e| Some((e.token, e.aborted.take()?)));
            match admitted {
                Some(admitted) => admitted,
                // Not admitted (or its receiver already taken by a POST of a reused id).
                None => state.register(key.clone()),
            }
        };
        let _entry = InFlight {
            posts: self,
            key,
            token,
        };
        let aborted = async {
            // A dropped sender (the entry replaced by a reused id) is not a cancel.
            if aborted.await.is_err() {
                std::future::pending::<()>().await;
            }
        };
        let request = self.request(web, endpoint, frame, &head);
        tokio::select! {
            // Aborted before it started: nothing is sent.
            biased;
            () = aborted => Ok(()),
            result = self.exchange(web, request, id, &head, out) => result,
        }
    }

    /// The POST of a modern frame (read as `head`) with its headers: the standard ones from
    /// its head, and, for a `tools/call` of a tool with `x-mcp-header` mappings, the
    /// `Mcp-Param-*` ones from its arguments (read off the frame for that alone).
    fn request(
        &self,
        web: &WebOptions,
        endpoint: &reqwest::Url,
        frame: String,
        head: &Frame,
    ) -> reqwest::RequestBuilder {
        let mut req = web
            .client
            .post(endpoint.clone())
            .header(ACCEPT, "application/json, text/event-stream")
            .header(CONTENT_TYPE, "application/json");
        for (name, v) in head.standard_headers() {
            if let Ok(v) = HeaderValue::from_str(&v) {
                req = req.header(name, v);
            }
        }
        if head.method.as_deref() == Some("tools/call")
            && let Some(tool) = head.name()
            && let Some(mappings) = self.tools.get(tool)
        {
            let arguments = arguments(&frame);
            for (name, v) in headers::params(&arguments, &mappings) {
                if let (Ok(name), Ok(v)) = (
                    HeaderName::from_bytes(name.as_bytes()),
                    HeaderValue::from_str(&v),
                ) {
                    req = req.header(name, v);
                }
            }
        }
        req.body(frame)
    }

    /// Sends the POST of the request `id` (read as `head`) and delivers its response, or one
    /// made up. The response to a `tools/list` is read for the catalog only when no client
    /// reads it ([`ToolCatalog`]).
    async fn exchange(
        &self,
        web: &WebOptions,
        request: reqwest::RequestBuilder,
        id: &Value,
        head: &Frame,
        out: &Out,
    ) -> Result<(), PostError> {
        let method = head.method.as_deref().unwrap_or("");
        let list = method == "tools/list" && self.tools.link_feeds(head.own);
        let exchange = format!("POST of {method}");
        let response = web.send(request, Wait::Call(&exchange)).await?;
        let status = response.status();
        if let Some(refusal) = web.auth_refusal(&response, id) {
            out.deliver(refusal).await;
            return Ok(());
        }
        if !status.is_success() {
            // The body may hold the JSON-RPC error (−32022 with a 400, −32601 with a 404);
            // one past the frame limit, or unreadable, is not read further.
            let body = read_capped(response, web.max_frame_bytes).await;
            let message = match body {
                Ok(body) if answers(&body, id) => one_line(&body),
                _ => refused(id, status),
            };
            out.deliver(message).await;
            return Ok(());
        }
        if is_sse(&response) {
            return self.forward(web, response, id, list, out).await;
        }
        let body = read_capped(response, web.max_frame_bytes).await?;
        if serde_json::from_slice::<serde::de::IgnoredAny>(&body).is_err() {
            // Neither JSON nor SSE (an empty 202 included): the request would wait forever.
            out.deliver(no_response(id, method, status)).await;
            return Ok(());
        }
        let message = one_line(&body);
        let answered = answers(&message, id);
        if answered && list {
            self.tools.record_response(&message);
        }
        out.deliver(message).await;
        if !answered {
            out.deliver(no_response(id, method, status)).await;
        }
        Ok(())
    }

    /// Forwards the messages of a modern request's SSE stream until its response; made up
    /// when the stream ends or breaks first.
    async fn forward(
        &self,
        web: &WebOptions,
        response: reqwest::Response,
        id: &Value,
        list: bool,
        out: &Out,
    ) -> Result<(), PostError> {
        let mut events = SseEvents::new(response, web.max_frame_bytes);
        let why = loop {
            match events.next().await {
                Ok(Some(event)) => {
                    let Some(message) = message_of(event) else {
                        continue; // a priming event, another event type
                    };
                    let answered = answers(&message, id);
                    if answered && list {
                        self.tools.record_response(&message);
                    }
                    out.deliver(message).await;
                    if answered {
                        return Ok(());
                    }
                }
                Ok(None) => break "the response stream ended before the response",
                Err(SseError::Broken(_)) => break "the response stream broke before the response",
                Err(SseError::Invalid(e)) => return Err(e.into()),
            }
        };
        tracing::debug!(target: "mcp::http", why, "a modern request's stream is lost");
        out.deliver(error_response(id, STREAM_LOST, why.to_owned(), None))
            .await;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn made_up_answers() {
        let r: Value = serde_json::from_slice(&refused(&json!(7), StatusCode::NOT_FOUND)).unwrap();
        assert_eq!(
            r,
            json!({"jsonrpc": "2.0", "id": 7, "error": {"code": HTTP_REFUSED,
                "message": "HTTP 404 Not Found", "data": {"httpStatus": 404}}})
        );
        let odd = StatusCode::from_u16(599).unwrap();
        let r: Value = serde_json::from_slice(&refused(&json!("a"), odd)).unwrap();
        assert_eq!(r["error"]["message"], "HTTP 599");
        assert!(answers(
            br#"{"jsonrpc":"2.0","id":7,"error":{"code":-32022,"message":"x"}}"#,
            &json!(7)
        ));
        assert!(answers(br#"{"id":"7","result":{}}"#, &json!("7")));
        assert!(!answers(br#"{"id":"7","result":{}}"#, &json!(7)));
        assert!(!answers(br#"{"id":7}"#, &json!(7)));
        assert!(answers(br#"{"id":7,"result":null}"#, &json!(7)));
        assert!(!answers(br#"{"id":7,"method":"x","result":1}"#, &json!(7)));
        assert!(!answers(b"<html>", &json!(7)));
    }
}
