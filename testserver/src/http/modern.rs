//! The modern era (2026-07-28) over Streamable HTTP: stateless `POST`s only.
//!
//! Every modern request is served by a fresh [`crate::serve`] connection of its own (no
//! session, no `Mcp-Session-Id`), after its headers are checked against its body:
//! `MCP-Protocol-Version` must equal `_meta["io.modelcontextprotocol/protocolVersion"]`,
//! `Mcp-Method` the method, and `Mcp-Name` (`tools/call`, `prompts/get`: `params.name`; with
//! `--tasks`, `tasks/get|update|cancel`: `params.taskId`;
//! `resources/read`: `params.uri`; the value may be sent as `=?base64?…?=`) the name; else
//! `400` with -32020. Errors -32020, -32021, -32022 and -32602 come with `400`, -32601 with
//! `404`, each with a JSON-RPC body. A result is a JSON body with [`super::HttpConfig::json`],
//! else an SSE stream (whose events carry no ids: a modern stream is not resumed); notifications
//! sent before the answer go on that stream (with a JSON body they are dropped).
//!
//! `subscriptions/listen` is answered with an SSE stream even with JSON bodies (unless it is
//! refused: an error is a JSON body as above). Its stream gets a `: keep-alive` comment every
//! [`super::HttpConfig::sse_keepalive_ms`]; it ends after the `complete` result or the
//! server's `notifications/cancelled` naming it, and is cut (no response) by `break_listens`.
//!
//! The HTTP faults hit modern requests too (not `server/discover`, the handshake of the era),
//! except those that need a session or a resumable stream (`drop-stream…`, `close-stream`,
//! `expire-…`), which change nothing here.
//! Every request's server shares the HTTP server's [`crate::ListenBus`], so that a tool called
//! on one `POST` reaches a listen open on another; a listen whose client closes its stream ends
//! (its server is dropped).

use std::time::Duration;

use bytes::Bytes;
use hyper::header::HeaderMap;
use hyper::{Response, StatusCode};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::{broadcast, mpsc};
use tokio::time::Interval;

use super::fault::Fault;
use super::prefix::Prefix;
use super::session::{Chunk, event};
use super::{Body, Cut, Message, State, json_response, sse_after, text};
use crate::bus::{ListenBus, ListenEvent};
use crate::config::{Era, ServerConfig};
use crate::listen::LISTEN;
use crate::modern;
use crate::protocol::codes;
use crate::rpc::RpcError;

/// `MCP-Protocol-Version`.
pub const PROTOCOL_VERSION_HEADER: &str = "mcp-protocol-version";
/// `Mcp-Method`.
pub const METHOD_HEADER: &str = "mcp-method";
/// `Mcp-Name`.
pub const NAME_HEADER: &str = "mcp-name";

/// The HTTP status of a JSON-RPC error of the modern era.
pub(super) fn status_of(code: i64) -> StatusCode {
    match code {
        codes::HEADER_MISMATCH
        | codes::MISSING_CLIENT_CAPABILITY
        | codes::UNSUPPORTED_PROTOCOL_VERSION
        | codes::INVALID_PARAMS => StatusCode::BAD_REQUEST,
        codes::METHOD_NOT_FOUND => StatusCode::NOT_FOUND,
        _ => StatusCode::OK,
    }
}

fn error_response(id: &Value, e: &RpcError) -> Response<Body> {
    let body = json!({"jsonrpc": "2.0", "id": id, "error": e.to_json()});
    json_response(status_of(e.code), body.to_string().into_bytes())
}

/// A header value of the modern era: as is, or decoded from `=?base64?…?=` (`None`: not valid
/// base64 of UTF-8).
pub(super) fn decode_header(value: &str) -> Option<String> {
    match value
        .strip_prefix("=?base64?")
        .and_then(|v| v.strip_suffix("?="))
    {
        Some(encoded) => String::from_utf8(base64_decode(encoded)?).ok(),
        None => Some(value.to_owned()),
    }
}

/// RFC 4648 standard base64 (padding optional).
fn base64_decode(s: &str) -> Option<Vec<u8>> {
    let sextet = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let data = s.trim_end_matches('=').as_bytes();
    if data.len() % 4 == 1 || s.len() - data.len() > 2 {
        return None;
    }
    let mut out = Vec::with_capacity(data.len() * 3 / 4);
    for chunk in data.chunks(4) {
        let mut n = 0u32;
        for (i, c) in chunk.iter().enumerate() {
            n |= sextet(*c)? << (18 - 6 * i);
        }
        let bytes = n.to_be_bytes();
        out.extend_from_slice(&bytes[1..chunk.len()]);
    }
    Some(out)
}

/// The header `name` as a string (`None`: absent or not visible ASCII).
fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

fn mismatch(message: String) -> RpcError {
    RpcError::new(codes::HEADER_MISMATCH, message)
}

/// Checks a modern request's `_meta` and headers: -32020 (a header missing or not matching),
/// -32602 (`_meta` without its required keys) or -32022 (an unsupported version).
pub(super) fn check(
    config: &ServerConfig,
    headers: &HeaderMap,
    method: &str,
    params: &Value,
) -> Result<(), RpcError> {
    // In the conformance mock's order: the version header, `_meta`, their match, the method
    // and name headers, then the version itself.
    let sent = header(headers, PROTOCOL_VERSION_HEADER);
    if sent.is_none() {
        return Err(mismatch("missing MCP-Protocol-Version header".to_owned()));
    }
    let version = modern::meta_version(params)?;
    if sent != Some(version) {
        return Err(mismatch(format!(
            "MCP-Protocol-Version header {sent:?} does not match _meta's {version:?}"
        )));
    }
    let sent = header(headers, METHOD_HEADER);
    if sent != Some(method) {
        return Err(mismatch(format!(
            "Mcp-Method header {sent:?} does not match the method {method:?}"
        )));
    }
    let name = match method {
        "tools/call" | "prompts/get" => params.get("name").and_then(Value::as_str),
        "resources/read" => params.get("uri").and_then(Value::as_str),
        // The tasks extension routes a task's requests by its id.
        "tasks/get" | "tasks/update" | "tasks/cancel" if config.tasks => {
            params.get("taskId").and_then(Value::as_str)
        }
        _ => None,
    };
    if let Some(name) = name {
        let sent = header(headers, NAME_HEADER).and_then(decode_header);
        if sent.as_deref() != Some(name) {
            return Err(mismatch(format!(
                "Mcp-Name header {sent:?} does not match {name:?}"
            )));
        }
    }
    modern::check_meta(config, params).map(|_| ())
}

/// Aborts the request's server when the request is over (answered, or its client gone).
struct AbortOnDrop(tokio::task::JoinHandle<crate::Ended>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Serves one modern `POST`, as `fault` (taken for it) says.
pub(super) async fn post(
    state: &State,
    headers: &HeaderMap,
    msg: Message,
    fault: Option<Fault>,
) -> Response<Body> {
    let config = &state.config.server;
    let (Some(method), Some(id)) = (msg.method.as_deref(), msg.id.clone()) else {
        // Notifications and responses mean nothing to a stateless server.
        return text(StatusCode::ACCEPTED, "accepted");
    };
    if method == "initialize" {
        return error_response(&id, &modern::refuse_initialize(config, &msg.params));
    }
    if let Err(e) = check(config, headers, method, &msg.params) {
        return error_response(&id, &e);
    }
    let config = ServerConfig {
        era: Era::Modern,
        ..config.clone()
    };
    let listen = (method == LISTEN).then(|| Listen {
        // Subscribed before the request is served: no `break_listens` after the ack is missed.
        orders: state.bus.subscribe(),
        keepalive: Duration::from_millis(state.config.sse_keepalive_ms),
    });
    let cut = match fault {
        Some(f) => match super::faulty(state, None, f, &id).await {
            Ok(r) => return r,
            Err(cut) => cut,
        },
        None => None,
    };
    let prefix = match cut {
        Some(Cut::Prefix(p)) => Some(p),
        _ => None,
    };
    let sse_as_json = matches!(cut, Some(Cut::SseAsJson));
    let shape = Shape {
        json: (state.config.json || sse_as_json) && listen.is_none() && prefix.is_none(),
        sse_as_json,
        prefix,
    };
    let mut r = run(config, state.bus.clone(), msg.line, id, shape, listen).await;
    super::pad_headers(&mut r, cut);
    r
}

/// How a request's answer is sent.
struct Shape {
    /// A JSON body (else an SSE stream).
    json: bool,
    /// The JSON body is the answer framed as an SSE event (`sse-as-json`).
    sse_as_json: bool,
    /// What an SSE stream sends before its events.
    prefix: Option<Prefix>,
}

/// What a listen's stream needs besides a request's.
struct Listen {
    /// The bus, to hear `break_listens`.
    orders: broadcast::Receiver<ListenEvent>,
    /// The period of the keep-alive comments (zero: none).
    keepalive: Duration,
}

/// The keep-alive comment of a listen stream.
const KEEPALIVE: &[u8] = b": keep-alive\n\n";

/// Whether `line` is the answer to `id`.
fn answers(line: &Value, id: &Value) -> bool {
    line.get("method").is_none() && line.get("id") == Some(id)
}

/// Whether `line` ends the stream of request `id`: its answer, or the server's
/// `notifications/cancelled` naming it (a listen ended with `--listen-end cancel`).
fn ends(line: &Value, id: &Value) -> bool {
    answers(line, id)
        || (line.get("method").and_then(Value::as_str) == Some("notifications/cancelled")
            && line.get("params").and_then(|p| p.get("requestId")) == Some(id))
}

/// The next tick of `keepalive`; never without one.
async fn tick(keepalive: &mut Option<Interval>) {
    match keepalive {
        Some(i) => {
            i.tick().await;
        }
        None => std::future::pending().await,
    }
}

/// When `break_listens` is called; never without orders.
async fn broken(orders: &mut Option<broadcast::Receiver<ListenEvent>>) {
    let Some(rx) = orders else {
        return std::future::pending().await;
    };
    loop {
        match rx.recv().await {
            Ok(ListenEvent::Break) => return,
            Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
            Err(broadcast::error::RecvError::Closed) => return std::future::pending().await,
        }
    }
}

/// Runs one request on a fresh connection sharing `bus` and answers with what it says.
async fn run(
    config: ServerConfig,
    bus: ListenBus,
    mut line: Vec<u8>,
    id: Value,
    shape: Shape,
    listen: Option<Listen>,
) -> Response<Body> {
    let json = shape.json;
    let (ours, theirs) = tokio::io::duplex(1 << 16);
    let (sr, sw) = tokio::io::split(theirs);
    let server = AbortOnDrop(tokio::spawn(crate::serve_with(sr, sw, config, Some(bus))));
    let (r, mut w) = tokio::io::split(ours);
    line.push(b'\n');
    if w.write_all(&line).await.is_err() {
        return text(StatusCode::INTERNAL_SERVER_ERROR, "the server is gone");
    }
    let mut reader = BufReader::new(r);
    let mut buf = Vec::new();
    // Until the answer, or (without `json`) the first other line, which opens a stream.
    let first = loop {
        buf.clear();
        match reader.read_until(b'\n', &mut buf).await {
            Ok(0) | Err(_) => {
                return text(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "the server ended without answering",
                );
            }
            Ok(_) => {}
        }
        let raw = buf.trim_ascii().to_vec();
        let parsed: Option<Value> = serde_json::from_slice(&raw).ok();
        if let Some(v) = parsed.as_ref().filter(|v| answers(v, &id)) {
            let status = v
                .get("error")
                .and_then(|e| e.get("code"))
                .and_then(Value::as_i64)
                .map_or(StatusCode::OK, status_of);
            if shape.sse_as_json && status == StatusCode::OK {
                return json_response(status, event(None, false, &raw).to_vec());
            }
            if json || status != StatusCode::OK {
                return json_response(status, raw);
            }
            let (tx, rx) = mpsc::unbounded_channel();
            let _ = tx.send(Chunk::Data(event(None, false, &raw)));
            return sse_after(shape.prefix, rx);
        }
        if !json && !raw.is_empty() {
            break raw;
        }
    };
    let (tx, rx) = mpsc::unbounded_channel();
    let _ = tx.send(Chunk::Data(event(None, false, &first)));
    let (mut orders, mut keepalive) = match listen {
        Some(l) => {
            let period = (!l.keepalive.is_zero()).then(|| {
                tokio::time::interval_at(tokio::time::Instant::now() + l.keepalive, l.keepalive)
            });
            (Some(l.orders), period)
        }
        None => (None, None),
    };
    tokio::spawn(async move {
        // Dropped when the stream is over: the request's server goes with it.
        let _server = server;
        let _input = w;
        let mut buf = Vec::new();
        loop {
            tokio::select! {
                // Cancel safe enough: bytes of a line read so far stay in `buf`.
                read = reader.read_until(b'\n', &mut buf) => {
                    if matches!(read, Ok(0) | Err(_)) {
                        let _ = tx.send(Chunk::Abort);
                        return;
                    }
                    let raw = buf.trim_ascii().to_vec();
                    buf.clear();
                    if raw.is_empty() {
                        continue;
                    }
                    if tx.send(Chunk::Data(event(None, false, &raw))).is_err() {
                        return;
                    }
                    if serde_json::from_slice::<Value>(&raw).is_ok_and(|v| ends(&v, &id)) {
                        return;
                    }
                }
                () = tick(&mut keepalive) => {
                    if tx.send(Chunk::Data(Bytes::from_static(KEEPALIVE))).is_err() {
                        return;
                    }
                }
                () = broken(&mut orders) => {
                    tracing::debug!(%id, "break_listens: cutting the listen stream");
                    let _ = tx.send(Chunk::Abort);
                    return;
                }
                () = tx.closed() => {
                    tracing::debug!(%id, "the client closed the stream");
                    return;
                }
            }
        }
    });
    sse_after(shape.prefix, rx)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_values_decode() {
        assert_eq!(decode_header("echo").as_deref(), Some("echo"));
        assert_eq!(
            decode_header("=?base64?ZWNobw==?=").as_deref(),
            Some("echo")
        );
        assert_eq!(decode_header("=?base64?ZWNobw?=").as_deref(), Some("echo"));
        assert_eq!(
            decode_header("=?base64?IGjDqWxsbyA=?=").as_deref(),
            Some(" héllo ")
        );
        assert_eq!(decode_header("=?base64??=").as_deref(), Some(""));
        assert_eq!(decode_header("=?base64?!!!!?="), None);
        assert_eq!(decode_header("=?base64?/w==?="), None);
    }

    #[test]
    fn statuses() {
        assert_eq!(status_of(-32020), StatusCode::BAD_REQUEST);
        assert_eq!(status_of(-32022), StatusCode::BAD_REQUEST);
        assert_eq!(status_of(-32601), StatusCode::NOT_FOUND);
        assert_eq!(status_of(-32603), StatusCode::OK);
    }
}
