//! The test server over HTTP: Streamable HTTP (MCP 2025-03-26 … 2025-11-25) at `/mcp` and the
//! legacy HTTP+SSE transport (2024-11-05) at `/sse` + `/message`, on one listener, with chaos
//! ([`Fault`]).
//!
//! Every session is a [`crate::serve`] connection (the same tools, resources, prompts and
//! server requests as over stdio) behind an in-memory pipe; `session` routes what it writes.
//! HTTP is hyper 1's HTTP/1.1 server (already in the tree through reqwest): no parsing by hand.
//!
//! Streamable HTTP at `/mcp`:
//! - `POST` of `initialize` (without `Mcp-Session-Id`) starts a session, whose id comes back in
//!   `Mcp-Session-Id`; every other `POST` needs it (missing: `400`; unknown or expired: `404`);
//! - a request is answered with an SSE stream (default: a priming event with an id, the
//!   request's progress notifications, what the server sends meanwhile if no standalone stream
//!   is open, then the answer; the stream ends) or, with [`HttpConfig::json`], a JSON body;
//!   notifications and responses get `202`; bodies that are not one JSON-RPC object get `400`;
//! - `GET` opens the standalone stream (server requests and notifications); with
//!   `Last-Event-ID: {stream}-{seq}` it resumes that stream instead (the events after it are
//!   replayed, later ones follow);
//! - `DELETE` ends the session (`200`; unknown: `404`).
//!
//! Legacy HTTP+SSE: `GET /sse` starts a session and streams `event: endpoint` with
//! `data: /message?sessionId=ID`, then every message as `event: message`; `POST
//! /message?sessionId=ID` hands a message to the session and answers `202` (unknown: `404`).
//!
//! `subscriptions/listen` (modern) is always answered with an SSE stream, even with
//! [`HttpConfig::json`], with a `: keep-alive` comment every [`HttpConfig::sse_keepalive_ms`];
//! one [`ListenBus`] per server carries the changes made by any request or session to every
//! open listen. A listen's stream ends after its `complete` result or the server's
//! `notifications/cancelled`, and is cut by `break_listens`; the listen ends when its client
//! closes the stream.
//!
//! The modern era ([`crate::Era`], see `modern`): with `Era::Modern` every `POST /mcp` is a
//! stateless modern request checked against its headers (`MCP-Protocol-Version`, `Mcp-Method`,
//! `Mcp-Name`), other methods on `/mcp` get `405` and `/sse`, `/message` `404`; with
//! `Era::Dual` only the requests carrying the modern `_meta` (and `server/discover`) take that
//! path, the others are served in sessions as above. A legacy server's sessionless
//! `server/discover` gets `400` (no session id) as any request, unless [`crate::Probe`] says
//! otherwise: `silent` never answers, `die` cuts the connection, `garbage` answers `{}`.

mod fault;
mod modern;
mod session;

use std::collections::{HashMap, HashSet};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::header::{CONTENT_LENGTH, CONTENT_TYPE, HeaderValue, LOCATION};
use hyper::{Method, Request, Response, StatusCode};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio::task::JoinSet;

pub use fault::Fault;
pub use modern::{METHOD_HEADER, NAME_HEADER, PROTOCOL_VERSION_HEADER};
use session::{Chunk, Session, lock};

use crate::{Era, ListenBus, ServerConfig};

/// `Mcp-Session-Id`.
pub const SESSION_HEADER: &str = "mcp-session-id";
/// The largest request body accepted (bigger: `413`).
pub const MAX_REQUEST_BYTES: usize = 4 << 20;

/// Configuration of an HTTP server: what each session serves, and how HTTP misbehaves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpConfig {
    /// What every session serves (as over stdio).
    pub server: ServerConfig,
    /// Answer requests with a JSON body instead of an SSE stream (`--json`).
    pub json: bool,
    /// `retry` (ms) in the priming event of every SSE stream (`None`: left out).
    pub retry_ms: Option<u64>,
    /// The fault (`--http-chaos NAME`); `None`: well behaved.
    pub fault: Option<Fault>,
    /// How many requests the fault hits before the server behaves (`--http-chaos-times N`);
    /// `None`: all of them. Not counted for [`Fault::Get405`], which hits every `GET`.
    pub fault_times: Option<u32>,
    /// The period of the keep-alive comments (`: keep-alive`) on a `subscriptions/listen`
    /// stream, in ms (`--sse-keepalive-ms N`; default [`DEFAULT_SSE_KEEPALIVE_MS`]; 0: none).
    pub sse_keepalive_ms: u64,
}

/// The default period of a listen stream's keep-alive comments (15 s, as the Python SDK).
pub const DEFAULT_SSE_KEEPALIVE_MS: u64 = 15_000;

impl HttpConfig {
    /// A well-behaved HTTP server serving `server` in every session, answering with SSE.
    pub fn new(server: ServerConfig) -> Self {
        HttpConfig {
            server,
            json: false,
            retry_ms: None,
            fault: None,
            fault_times: None,
            sse_keepalive_ms: DEFAULT_SSE_KEEPALIVE_MS,
        }
    }

    /// This configuration with `fault` hitting the first `times` requests (`None`: all).
    pub fn with_fault(mut self, fault: Fault, times: Option<u32>) -> Self {
        self.fault = Some(fault);
        self.fault_times = times;
        self
    }
}

/// What the connection handlers share.
struct State {
    config: HttpConfig,
    addr: SocketAddr,
    sessions: Mutex<HashMap<String, Arc<Session>>>,
    /// Ids of sessions that expired (a fault) or ended (the server died).
    expired: Mutex<HashSet<String>>,
    faults_left: Mutex<Option<u32>>,
    next_session: AtomicU64,
    /// What every session and modern request publishes to and listens on.
    bus: ListenBus,
}

impl State {
    /// The fault for this request, if it is one of those the fault hits.
    fn take_fault(&self) -> Option<Fault> {
        let fault = self.config.fault.filter(|f| *f != Fault::Get405)?;
        let mut left = lock(&self.faults_left);
        match left.as_mut() {
            None => Some(fault),
            Some(0) => None,
            Some(n) => {
                *n -= 1;
                Some(fault)
            }
        }
    }

    /// Ends session `id`: later requests carrying it get `404`.
    fn forget(&self, id: &str) {
        lock(&self.expired).insert(id.to_owned());
        let gone = lock(&self.sessions).remove(id);
        drop(gone);
    }

    fn new_session(self: &Arc<Self>, legacy: bool) -> Arc<Session> {
        let n = self.next_session.fetch_add(1, Ordering::Relaxed) + 1;
        // Unguessable enough for a test server, visible ASCII as the specification asks.
        let id = format!("{n:04}-{:016x}", fastish_random(n));
        let session = Arc::new(Session::start(
            id.clone(),
            self.config.server.clone(),
            Arc::downgrade(self),
            legacy,
            self.bus.clone(),
        ));
        lock(&self.sessions).insert(id, Arc::clone(&session));
        session
    }

    /// Session `id`, unless it is unknown, expired or dead.
    fn session(&self, id: &str) -> Option<Arc<Session>> {
        lock(&self.sessions)
            .get(id)
            .filter(|s| !s.is_dead())
            .cloned()
    }
}

fn fastish_random(n: u64) -> u64 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    // splitmix64 of the time and the counter.
    let mut z = t ^ n.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ u64::from(std::process::id());
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A running HTTP test server; dropping it stops it (its sessions and connections end).
pub struct HttpServer {
    addr: SocketAddr,
    state: Arc<State>,
    task: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for HttpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpServer")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl HttpServer {
    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The Streamable HTTP endpoint, `http://ADDR/mcp`.
    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// The legacy HTTP+SSE endpoint, `http://ADDR/sse`.
    pub fn sse_url(&self) -> String {
        format!("http://{}/sse", self.addr)
    }

    /// How many sessions are open.
    pub fn sessions(&self) -> usize {
        lock(&self.state.sessions).len()
    }

    /// The bus every session and modern request of this server shares: its open listens and
    /// what they hear.
    pub fn listen_bus(&self) -> &ListenBus {
        &self.state.bus
    }

    /// Serves until the task is dropped (for binaries).
    pub async fn run(mut self) {
        let _ = (&mut self.task).await;
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        self.task.abort();
        let sessions = std::mem::take(&mut *lock(&self.state.sessions));
        drop(sessions);
    }
}

/// Binds `addr` (e.g. `127.0.0.1:0`) and serves `config` there, in tasks of the current tokio
/// runtime, until the returned [`HttpServer`] is dropped.
pub async fn serve(addr: SocketAddr, config: HttpConfig) -> std::io::Result<HttpServer> {
    let listener = TcpListener::bind(addr).await?;
    let addr = listener.local_addr()?;
    let state = Arc::new(State {
        faults_left: Mutex::new(config.fault_times),
        config,
        addr,
        sessions: Mutex::new(HashMap::new()),
        expired: Mutex::new(HashSet::new()),
        next_session: AtomicU64::new(0),
        bus: ListenBus::new(),
    });
    let weak = Arc::downgrade(&state);
    let task = tokio::spawn(accept_loop(listener, weak));
    Ok(HttpServer { addr, state, task })
}

async fn accept_loop(listener: TcpListener, state: Weak<State>) {
    // Dropping the set (the task aborted) aborts every connection.
    let mut connections = JoinSet::new();
    loop {
        let (stream, _) = match listener.accept().await {
            Ok(s) => s,
            Err(e) => {
                tracing::debug!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        let state = state.clone();
        connections.spawn(async move {
            let service = hyper::service::service_fn(move |req| {
                let state = state.clone();
                async move {
                    Ok::<_, Infallible>(match state.upgrade() {
                        Some(state) => handle(state, req).await,
                        None => text(StatusCode::SERVICE_UNAVAILABLE, "shutting down"),
                    })
                }
            });
            let io = hyper_util::rt::TokioIo::new(stream);
            if let Err(e) = hyper::server::conn::http1::Builder::new()
                .serve_connection(io, service)
                .await
            {
                tracing::debug!(error = %e, "connection ended with an error");
            }
        });
        while connections.try_join_next().is_some() {}
    }
}

type Body = BoxBody<Bytes, std::io::Error>;

fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into())
        .map_err(|never| match never {})
        .boxed()
}

fn text(status: StatusCode, message: &str) -> Response<Body> {
    let mut r = Response::new(full(format!("{message}\n")));
    *r.status_mut() = status;
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    r
}

fn json_response(status: StatusCode, body: Vec<u8>) -> Response<Body> {
    let mut r = Response::new(full(body));
    *r.status_mut() = status;
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r
}

/// `400` with a JSON-RPC error body.
fn rpc_error(status: StatusCode, code: i64, message: &str) -> Response<Body> {
    let body = json!({"jsonrpc": "2.0", "id": null, "error": {"code": code, "message": message}});
    json_response(status, body.to_string().into_bytes())
}

/// An SSE response fed by `rx`; [`Chunk::Abort`] cuts the connection.
fn sse(rx: mpsc::UnboundedReceiver<Chunk>) -> Response<Body> {
    let body = futures_util::stream::unfold(rx, |mut rx| async move {
        match rx.recv().await? {
            Chunk::Data(b) => Some((Ok(Frame::data(b)), rx)),
            Chunk::Abort => {
                // Let hyper flush what was sent, then fail the body: the connection is cut.
                tokio::time::sleep(Duration::from_millis(20)).await;
                Some((Err(std::io::Error::other("cut on purpose")), rx))
            }
        }
    });
    let mut r = Response::new(BodyExt::boxed(StreamBody::new(body)));
    let h = r.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    h.insert("cache-control", HeaderValue::from_static("no-cache"));
    r
}

/// An SSE response of `chunks` (then, with `endless`, keep-alive comments forever).
fn sse_of(chunks: Vec<Bytes>, endless: bool) -> Response<Body> {
    let (tx, rx) = mpsc::unbounded_channel();
    for c in chunks {
        let _ = tx.send(Chunk::Data(c));
    }
    if endless {
        tokio::spawn(async move {
            while tx
                .send(Chunk::Data(Bytes::from_static(b": keep-alive\n\n")))
                .is_ok()
            {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        });
    }
    sse(rx)
}

async fn handle(state: Arc<State>, req: Request<Incoming>) -> Response<Body> {
    let path = req.uri().path().to_owned();
    let query = req.uri().query().unwrap_or("").to_owned();
    let modern_only = state.config.server.era == Era::Modern;
    match (req.method().clone(), path.as_str()) {
        (Method::POST, "/mcp") => post(state, req).await,
        (_, "/mcp") if modern_only => text(
            StatusCode::METHOD_NOT_ALLOWED,
            "method not allowed (a modern server answers POST only)",
        ),
        (_, "/sse" | "/message") if modern_only => text(StatusCode::NOT_FOUND, "not found"),
        (Method::GET, "/mcp") => get(&state, &req),
        (Method::DELETE, "/mcp") => match session_id(&req) {
            Some(id) if lock(&state.sessions).contains_key(&id) => {
                state.forget(&id);
                text(StatusCode::OK, "session ended")
            }
            _ => text(StatusCode::NOT_FOUND, "unknown session"),
        },
        (Method::GET, "/sse") => legacy_open(&state),
        (Method::POST, "/message") => legacy_post(state, req, &query).await,
        (_, "/mcp" | "/sse" | "/message") => {
            text(StatusCode::METHOD_NOT_ALLOWED, "method not allowed")
        }
        _ => text(StatusCode::NOT_FOUND, "not found"),
    }
}

fn session_id(req: &Request<Incoming>) -> Option<String> {
    req.headers()
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

/// The answer to a request carrying a session id that is not (or no longer) known.
fn unknown_session(state: &State) -> Response<Body> {
    if state.config.fault == Some(Fault::Expire400) {
        rpc_error(
            StatusCode::BAD_REQUEST,
            -32600,
            "Bad Request: unknown session",
        )
    } else {
        text(StatusCode::NOT_FOUND, "session not found")
    }
}

/// Reads a request's body (at most [`MAX_REQUEST_BYTES`]): one JSON-RPC message, or the
/// response refusing it.
async fn message_of(req: Request<Incoming>) -> Result<Message, Box<Response<Body>>> {
    let limited = http_body_util::Limited::new(req.into_body(), MAX_REQUEST_BYTES);
    match limited.collect().await {
        Ok(c) => parse(&c.to_bytes()),
        Err(e) => Err(Box::new(text(
            StatusCode::PAYLOAD_TOO_LARGE,
            &format!("body: {e}"),
        ))),
    }
}

/// One JSON-RPC message, classified.
struct Message {
    line: Vec<u8>,
    /// `params` (`null` if absent).
    params: Value,
    method: Option<String>,
    id: Option<Value>,
    token: Option<Value>,
}

fn parse(body: &[u8]) -> Result<Message, Box<Response<Body>>> {
    let v: Value = serde_json::from_slice(body).map_err(|e| {
        Box::new(rpc_error(
            StatusCode::BAD_REQUEST,
            crate::codes::PARSE_ERROR,
            &format!("Parse error: {e}"),
        ))
    })?;
    let Value::Object(obj) = &v else {
        return Err(Box::new(rpc_error(
            StatusCode::BAD_REQUEST,
            crate::codes::INVALID_REQUEST,
            "one JSON-RPC object per POST (batches are not supported)",
        )));
    };
    Ok(Message {
        params: obj.get("params").cloned().unwrap_or(Value::Null),
        method: obj.get("method").and_then(Value::as_str).map(str::to_owned),
        id: obj.get("id").cloned(),
        token: obj
            .get("params")
            .and_then(|p| p.get("_meta"))
            .and_then(|m| m.get("progressToken"))
            .cloned(),
        // One line, whatever the client's layout.
        line: v.to_string().into_bytes(),
    })
}

async fn post(state: Arc<State>, req: Request<Incoming>) -> Response<Body> {
    let sid = session_id(&req);
    let era = state.config.server.era;
    let headers = (era != Era::Legacy).then(|| req.headers().clone());
    let msg = match message_of(req).await {
        Ok(m) => m,
        Err(r) => return *r,
    };
    if let Some(headers) = headers {
        let modern = era == Era::Modern
            || msg
                .method
                .as_deref()
                .is_some_and(|m| crate::modern::is_modern_request(m, &msg.params));
        if modern {
            return modern::post(&state, &headers, msg).await;
        }
    }
    if sid.is_none()
        && era == Era::Legacy
        && msg.method.as_deref() == Some(crate::modern::DISCOVER)
        && let Some(r) = probe(state.config.server.probe, msg.id.as_ref()).await
    {
        return r;
    }
    let initialize = msg.method.as_deref() == Some("initialize");
    let session = match &sid {
        Some(id) => match state.session(id) {
            Some(s) => s,
            None => return unknown_session(&state),
        },
        None if initialize => state.new_session(false),
        None => {
            return rpc_error(
                StatusCode::BAD_REQUEST,
                crate::codes::INVALID_REQUEST,
                "Bad Request: no Mcp-Session-Id",
            );
        }
    };
    let Some(id) = msg.id.clone().filter(|_| msg.method.is_some()) else {
        // A notification or a response.
        session.send(msg.line);
        return text(StatusCode::ACCEPTED, "accepted");
    };
    let fault = if initialize { None } else { state.take_fault() };
    let mut response = match fault {
        Some(f) => match faulty(&state, &session, f, &id).await {
            Ok(r) => return r,
            Err(cut) => answer(&state, &session, msg, &id, cut).await,
        },
        None => answer(&state, &session, msg, &id, None).await,
    };
    if let Ok(v) = HeaderValue::from_str(&session.id) {
        response.headers_mut().insert(SESSION_HEADER, v);
    }
    response
}

/// How a legacy server answers a sessionless `server/discover` ([`crate::Probe`]); `None`: as
/// today (`400`, no session id). `silent` never answers, `die` cuts the connection after the
/// headers, `garbage` answers `{}`.
async fn probe(probe: crate::Probe, id: Option<&Value>) -> Option<Response<Body>> {
    use crate::Probe;
    match probe {
        Probe::Error => None,
        Probe::Silent => std::future::pending().await,
        Probe::Die => {
            let (tx, rx) = mpsc::unbounded_channel();
            let _ = tx.send(Chunk::Abort);
            Some(sse(rx))
        }
        Probe::Garbage => {
            let body = json!({"jsonrpc": "2.0", "id": id, "result": {}});
            Some(json_response(StatusCode::OK, body.to_string().into_bytes()))
        }
    }
}

/// How a request stream misbehaves on the way.
#[derive(Clone, Copy)]
enum Cut {
    /// Cut the connection after `after` whole events (and the priming one), with or without
    /// ids.
    Drop { ids: bool, after: u32 },
    /// End the stream cleanly after the priming event.
    Close,
    /// These chunks before the events.
    Garbage(&'static [&'static [u8]]),
}

/// The response of a faulty request, or (`Err`) how the normal answer misbehaves.
async fn faulty(
    state: &State,
    session: &Session,
    fault: Fault,
    id: &Value,
) -> Result<Response<Body>, Option<Cut>> {
    tracing::debug!(fault = %fault.name(), %id, "fault");
    match fault {
        Fault::Slow(d) => {
            tokio::time::sleep(d).await;
            Err(None)
        }
        Fault::Never => std::future::pending().await,
        Fault::DropStream(after) => Err(Some(Cut::Drop { ids: true, after })),
        Fault::DropStreamNoIds => Err(Some(Cut::Drop {
            ids: false,
            after: 0,
        })),
        Fault::CloseStream => Err(Some(Cut::Close)),
        Fault::Html => {
            let mut r = text(StatusCode::OK, "<html><body>not MCP</body></html>");
            r.headers_mut()
                .insert(CONTENT_TYPE, HeaderValue::from_static("text/html"));
            Ok(r)
        }
        Fault::GarbageSse => Err(Some(Cut::Garbage(GARBAGE))),
        Fault::BrokenSse => Err(Some(Cut::Garbage(BROKEN))),
        Fault::Expire404 | Fault::Expire400 => {
            state.forget(&session.id);
            Ok(unknown_session(state))
        }
        Fault::Get405 => Err(None),
        Fault::Status(code) => Ok(text(
            StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            "failing on purpose (--http-chaos status)",
        )),
        Fault::BigJson(n) => Ok(json_response(StatusCode::OK, big_answer(id, n))),
        Fault::BigEvent(n) => Ok(sse_of(
            vec![session::event(None, false, &big_answer(id, n))],
            false,
        )),
        Fault::EndlessSse => Ok(sse_of(Vec::new(), true)),
        Fault::Redirect(code) => {
            let other = if state.addr.ip().is_loopback() && state.addr.is_ipv4() {
                format!("http://localhost:{}/mcp", state.addr.port())
            } else {
                format!("http://127.0.0.1:{}/mcp", state.addr.port())
            };
            let mut r = text(
                StatusCode::from_u16(code).unwrap_or(StatusCode::TEMPORARY_REDIRECT),
                "moved",
            );
            if let Ok(v) = HeaderValue::from_str(&other) {
                r.headers_mut().insert(LOCATION, v);
            }
            Ok(r)
        }
        Fault::CloseAfterHeaders => {
            let (tx, rx) = mpsc::unbounded_channel();
            let _ = tx.send(Chunk::Abort);
            let mut r = sse(rx);
            let h = r.headers_mut();
            h.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
            h.insert(CONTENT_LENGTH, HeaderValue::from_static("4096"));
            Ok(r)
        }
    }
}

/// A JSON-RPC answer to `id` of about `bytes` bytes (a text content padded with `x`).
fn big_answer(id: &Value, bytes: usize) -> Vec<u8> {
    let pad = "x".repeat(bytes);
    json!({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": pad}]}})
        .to_string()
        .into_bytes()
}

/// Hands the request to the session and answers with what it says (JSON or SSE).
async fn answer(
    state: &State,
    session: &Session,
    msg: Message,
    id: &Value,
    cut: Option<Cut>,
) -> Response<Body> {
    if state.config.json && cut.is_none() {
        let rx = session.expect_json(id);
        session.send(msg.line);
        return match rx.await {
            Ok(line) => json_response(StatusCode::OK, line),
            Err(_) => unknown_session(state),
        };
    }
    let (ids, retry, how) = match cut {
        Some(Cut::Drop { ids, after }) => (ids, Some(100), session::Cut::After(after)),
        Some(Cut::Close) => (true, Some(100), session::Cut::AfterPriming),
        _ => (true, state.config.retry_ms, session::Cut::No),
    };
    let rx = session.expect_stream(id, msg.token.as_ref(), ids, retry, how);
    session.send(msg.line);
    if let Some(Cut::Garbage(garbage)) = cut {
        return garbage_first(garbage, rx);
    }
    sse(rx)
}

/// The garbage a `garbage-sse` stream starts with: well framed.
const GARBAGE: &[&[u8]] = &[
    b"data: this is not JSON\n\n",
    b"a line without a colon\n\n",
    b"data: {\"jsonrpc\": \"2.0\", \"method\":\n\n",
    b"data: \"notifications/message\"}\n\n",
    b"event: surprise\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/x\"}\n\n",
    b": a comment\n\n",
];

/// What a `broken-sse` stream starts with: not UTF-8, then a field line never ended by an
/// empty line before the next field's garbage.
const BROKEN: &[&[u8]] = &[
    b"data: \xff\xfe not UTF-8\n\n",
    b"id: \xc3\x28\n",
    b"data: {\"half\": \r\r\n\n",
];

fn garbage_first(
    garbage: &[&'static [u8]],
    mut rx: mpsc::UnboundedReceiver<Chunk>,
) -> Response<Body> {
    let (tx, out) = mpsc::unbounded_channel();
    for g in garbage {
        let _ = tx.send(Chunk::Data(Bytes::from_static(g)));
    }
    tokio::spawn(async move {
        while let Some(c) = rx.recv().await {
            if tx.send(c).is_err() {
                return;
            }
        }
    });
    sse(out)
}

fn get(state: &State, req: &Request<Incoming>) -> Response<Body> {
    if state.config.fault == Some(Fault::Get405) {
        return text(
            StatusCode::METHOD_NOT_ALLOWED,
            "no GET stream (--http-chaos get-405)",
        );
    }
    let Some(id) = session_id(req) else {
        return text(StatusCode::BAD_REQUEST, "Bad Request: no Mcp-Session-Id");
    };
    let Some(session) = state.session(&id) else {
        return unknown_session(state);
    };
    let last = req
        .headers()
        .get("last-event-id")
        .and_then(|v| v.to_str().ok());
    match last {
        Some(last) => match session.resume(last) {
            Some(rx) => sse(rx),
            None if session.is_dead() => unknown_session(state),
            None => text(StatusCode::BAD_REQUEST, "unknown Last-Event-ID"),
        },
        None => sse(session.open_standalone(state.config.retry_ms)),
    }
}

fn legacy_open(state: &Arc<State>) -> Response<Body> {
    let session = state.new_session(true);
    let rx = session.open_standalone(None);
    let endpoint = format!(
        "event: endpoint\ndata: /message?sessionId={}\n\n",
        session.id
    );
    let (tx, out) = mpsc::unbounded_channel();
    let _ = tx.send(Chunk::Data(Bytes::from(endpoint)));
    let mut rx = rx;
    let weak = Arc::downgrade(state);
    let id = session.id.clone();
    drop(session);
    tokio::spawn(async move {
        // The session lives as long as its stream: when the client goes, it ends.
        while let Some(c) = rx.recv().await {
            if tx.send(c).is_err() {
                break;
            }
        }
        if let Some(state) = weak.upgrade() {
            state.forget(&id);
        }
    });
    sse(out)
}

async fn legacy_post(state: Arc<State>, req: Request<Incoming>, query: &str) -> Response<Body> {
    let id = query
        .split('&')
        .find_map(|kv| kv.strip_prefix("sessionId="))
        .unwrap_or("")
        .to_owned();
    let Some(session) = state.session(&id) else {
        return text(StatusCode::NOT_FOUND, "unknown session");
    };
    let msg = match message_of(req).await {
        Ok(m) => m,
        Err(r) => return *r,
    };
    let is_request = msg.method.is_some() && msg.id.is_some();
    let initialize = msg.method.as_deref() == Some("initialize");
    let fault = if is_request && !initialize {
        state.take_fault()
    } else {
        None
    };
    let accepted = || text(StatusCode::ACCEPTED, "accepted");
    match fault {
        None | Some(Fault::Get405) => session.send(msg.line),
        Some(Fault::Slow(d)) => {
            tokio::time::sleep(d).await;
            session.send(msg.line);
        }
        Some(Fault::Never | Fault::EndlessSse) => {}
        Some(Fault::DropStream(_) | Fault::DropStreamNoIds | Fault::CloseStream) => {
            session.send(msg.line);
            session.cut_standalone();
            state.forget(&id);
        }
        Some(f @ (Fault::GarbageSse | Fault::BrokenSse)) => {
            let garbage = if f == Fault::GarbageSse {
                GARBAGE
            } else {
                BROKEN
            };
            for g in garbage {
                session.push_raw(Bytes::from_static(g));
            }
            session.send(msg.line);
        }
        Some(Fault::BigEvent(n) | Fault::BigJson(n)) => {
            let id = msg.id.unwrap_or(Value::Null);
            session.push_raw(session::event(None, true, &big_answer(&id, n)));
        }
        Some(
            f @ (Fault::Expire404
            | Fault::Expire400
            | Fault::Status(_)
            | Fault::Redirect(_)
            | Fault::Html),
        ) => {
            return match faulty(&state, &session, f, &Value::Null).await {
                Ok(r) => r,
                Err(_) => accepted(),
            };
        }
        Some(Fault::CloseAfterHeaders) => {
            return match faulty(&state, &session, Fault::CloseAfterHeaders, &Value::Null).await {
                Ok(r) => r,
                Err(_) => accepted(),
            };
        }
    }
    accepted()
}
