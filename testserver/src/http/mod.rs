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
//!
//! Every request is recorded ([`RequestLog`], [`HttpServer::log`]). With
//! [`HttpConfig::other_origin`], or an `auth:KIND` fault ([`AuthKind`]), a second listener runs:
//! "another origin" the hostile authorization documents point a client at, which records what
//! reaches it (bodies too) so that a test can tell whether a secret left its origin.

mod auth;
mod fault;
mod modern;
mod prefix;
mod record;
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

pub use auth::{
    FILE_ENDPOINT, HUGE_METADATA_BYTES, INVALID_ISSUER, LINK_LOCAL_METADATA, SECRET_PREFIX,
};
pub use fault::{AuthKind, Fault};
pub use modern::{METHOD_HEADER, NAME_HEADER, PROTOCOL_VERSION_HEADER};
use prefix::Prefix;
pub use record::{KEPT_BODY_BYTES, KEPT_REQUESTS, Origin, RequestLog, Seen};
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
    /// Only requests of this method take the fault (`--http-chaos-method NAME`); `None`: every
    /// request it can hit. A client's own requests (a list it fetches when ready) then race
    /// nothing: the fault waits for the request a test names.
    pub fault_method: Option<String>,
    /// The period of the keep-alive comments (`: keep-alive`) on a `subscriptions/listen`
    /// stream, in ms (`--sse-keepalive-ms N`; default [`DEFAULT_SSE_KEEPALIVE_MS`]; 0: none).
    pub sse_keepalive_ms: u64,
    /// Where the second origin listens (`--other-origin ADDR`): the "other place" the
    /// `auth:KIND` faults send a client to, which records what reaches it. Without it, an
    /// `auth:KIND` server listens on `127.0.0.1:0`; other servers have no second origin.
    pub other_origin: Option<SocketAddr>,
    /// DNS-rebinding protection (`--conformance` turns it on): a request to `/mcp`, `/sse` or
    /// `/message` whose `Host` is not `localhost`, `127.0.0.1` or `[::1]` (any port), or whose
    /// `Origin`, if it has one, is not on one of those hosts, gets `403`. Off: any `Host` and
    /// `Origin` are served.
    pub check_host: bool,
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
            fault_method: None,
            sse_keepalive_ms: DEFAULT_SSE_KEEPALIVE_MS,
            other_origin: None,
            check_host: false,
        }
    }

    /// This configuration with `fault` hitting the first `times` requests (`None`: all).
    pub fn with_fault(mut self, fault: Fault, times: Option<u32>) -> Self {
        self.fault = Some(fault);
        self.fault_times = times;
        self
    }

    /// This configuration with its fault hitting only requests of `method` (see
    /// [`HttpConfig::fault_method`]).
    pub fn with_fault_method(mut self, method: &str) -> Self {
        self.fault_method = Some(method.to_owned());
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
    /// Where the second origin listens, if there is one.
    other: Option<SocketAddr>,
    /// What both origins saw.
    log: RequestLog,
    /// Sessions dropped at their next request (`expire-loop`).
    doomed: Mutex<HashSet<String>>,
    /// The secrets of `auth:KIND`.
    issued: auth::Issued,
}

impl State {
    /// The fault for this request, if it is one of those the fault hits (the faults that hit
    /// requests one by one, counted).
    fn take_fault(&self, method: Option<&str>) -> Option<Fault> {
        let fault = self.config.fault.filter(|f| f.per_request())?;
        if let Some(only) = &self.config.fault_method
            && method != Some(only.as_str())
        {
            return None;
        }
        self.count_one().then_some(fault)
    }

    /// Whether the fault count allows one more hit (and counts it).
    fn count_one(&self) -> bool {
        let mut left = lock(&self.faults_left);
        match left.as_mut() {
            None => true,
            Some(0) => false,
            Some(n) => {
                *n -= 1;
                true
            }
        }
    }

    /// Whether the POST of `msg` is a notification `stuck-notification` never answers.
    fn stuck(&self, msg: &Message) -> bool {
        let Some(Fault::StuckNotification { all }) = self.config.fault else {
            return false;
        };
        msg.id.is_none()
            && msg
                .method
                .as_deref()
                .is_some_and(|m| all || m == "notifications/initialized")
    }

    /// Whether session `id` is doomed (`expire-loop`): then it is forgotten, and its request
    /// is answered as an unknown session's.
    fn doomed_now(&self, id: &str) -> bool {
        let doomed = lock(&self.doomed).remove(id);
        if doomed {
            tracing::debug!(session = %id, "expire-loop: the session is dropped");
            self.forget(id);
        }
        doomed
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

pub(super) fn fastish_random(n: u64) -> u64 {
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
    /// The second origin's accept loop.
    other_task: Option<tokio::task::JoinHandle<()>>,
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

    /// The second origin's base URL (`http://ADDR`), if it runs ([`HttpConfig::other_origin`],
    /// or an `auth:KIND` fault).
    pub fn other_url(&self) -> Option<String> {
        self.state.other.map(|a| format!("http://{a}"))
    }

    /// What both origins saw so far (a handle: later requests show in it too).
    pub fn log(&self) -> RequestLog {
        self.state.log.clone()
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
        if let Some(t) = &self.other_task {
            t.abort();
        }
        let sessions = std::mem::take(&mut *lock(&self.state.sessions));
        drop(sessions);
    }
}

/// Binds `addr` (e.g. `127.0.0.1:0`) and serves `config` there, in tasks of the current tokio
/// runtime, until the returned [`HttpServer`] is dropped.
pub async fn serve(addr: SocketAddr, config: HttpConfig) -> std::io::Result<HttpServer> {
    let listener = TcpListener::bind(addr).await?;
    let addr = listener.local_addr()?;
    let other_at = match (config.other_origin, config.fault) {
        (Some(at), _) => Some(at),
        (None, Some(Fault::Auth(_))) => Some(SocketAddr::from(([127, 0, 0, 1], 0))),
        (None, _) => None,
    };
    let other_listener = match other_at {
        Some(at) => Some(TcpListener::bind(at).await?),
        None => None,
    };
    let other = match &other_listener {
        Some(l) => Some(l.local_addr()?),
        None => None,
    };
    let state = Arc::new(State {
        faults_left: Mutex::new(config.fault_times),
        config,
        addr,
        sessions: Mutex::new(HashMap::new()),
        expired: Mutex::new(HashSet::new()),
        next_session: AtomicU64::new(0),
        bus: ListenBus::new(),
        other,
        log: RequestLog::default(),
        doomed: Mutex::new(HashSet::new()),
        issued: auth::Issued::default(),
    });
    let weak = Arc::downgrade(&state);
    let task = tokio::spawn(accept_loop(listener, weak.clone(), Origin::Main));
    let other_task = other_listener.map(|l| tokio::spawn(accept_loop(l, weak, Origin::Other)));
    Ok(HttpServer {
        addr,
        state,
        task,
        other_task,
    })
}

async fn accept_loop(listener: TcpListener, state: Weak<State>, origin: Origin) {
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
                        Some(state) if origin == Origin::Main => handle(state, req).await,
                        Some(state) => handle_other(state, req).await,
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

/// A body of these frames, sent as they are (no `Content-Length`).
fn frames_body(frames: Vec<Bytes>) -> Body {
    let frames = futures_util::stream::iter(frames.into_iter().map(|b| Ok(Frame::data(b))));
    BodyExt::boxed(StreamBody::new(frames))
}

/// An SSE response fed by `rx`; [`Chunk::Abort`] cuts the connection.
fn sse(rx: mpsc::UnboundedReceiver<Chunk>) -> Response<Body> {
    sse_after(None, rx)
}

/// An SSE response that sends `prefix` first, then what `rx` is fed with; [`Chunk::Abort`]
/// cuts the connection.
fn sse_after(prefix: Option<Prefix>, rx: mpsc::UnboundedReceiver<Chunk>) -> Response<Body> {
    use futures_util::StreamExt;
    let first = prefix.map(Prefix::frames).unwrap_or_default();
    let first = futures_util::stream::iter(first.into_iter().map(|b| Ok(Frame::data(b))));
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
    let mut r = Response::new(BodyExt::boxed(StreamBody::new(first.chain(body))));
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
    state.log.push(Seen {
        origin: Origin::Main,
        method: req.method().to_string(),
        target: req
            .uri()
            .path_and_query()
            .map_or_else(|| path.clone(), |p| p.as_str().to_owned()),
        headers: record::headers_of(req.headers()),
        body: Vec::new(),
    });
    if let Some(Fault::Auth(kind)) = state.config.fault {
        if let Some(r) =
            auth::document(&state, kind, Origin::Main, req.method(), &path, &query).await
        {
            return r;
        }
        let endpoint = matches!(path.as_str(), "/mcp" | "/sse" | "/message");
        if endpoint && !auth::authorized(&state, req.headers()) {
            return auth::challenge(&state, kind);
        }
    }
    if state.config.check_host
        && matches!(path.as_str(), "/mcp" | "/sse" | "/message")
        && !local_host_and_origin(req.headers())
    {
        return text(
            StatusCode::FORBIDDEN,
            "forbidden: Host or Origin is not a local one (DNS-rebinding protection)",
        );
    }
    let modern_only = state.config.server.era == Era::Modern;
    match (req.method().clone(), path.as_str()) {
        (Method::POST, "/mcp") => post(state, req).await,
        (_, "/mcp") if modern_only => text(
            StatusCode::METHOD_NOT_ALLOWED,
            "method not allowed (a modern server answers POST only)",
        ),
        (_, "/sse" | "/message") if modern_only => text(StatusCode::NOT_FOUND, "not found"),
        (Method::GET, "/mcp") => match get(&state, &req) {
            Some(r) => r,
            None => std::future::pending().await,
        },
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

/// The second origin: records every request (with the first [`record::KEPT_BODY_BYTES`] of
/// its body) and serves the authorization documents of an `auth:KIND` server.
async fn handle_other(state: Arc<State>, req: Request<Incoming>) -> Response<Body> {
    let (parts, body) = req.into_parts();
    let limited = http_body_util::Limited::new(body, MAX_REQUEST_BYTES);
    let mut body = limited
        .collect()
        .await
        .map(|c| c.to_bytes().to_vec())
        .unwrap_or_default();
    body.truncate(record::KEPT_BODY_BYTES);
    let path = parts.uri.path().to_owned();
    let query = parts.uri.query().unwrap_or("").to_owned();
    state.log.push(Seen {
        origin: Origin::Other,
        method: parts.method.to_string(),
        target: parts
            .uri
            .path_and_query()
            .map_or_else(|| path.clone(), |p| p.as_str().to_owned()),
        headers: record::headers_of(&parts.headers),
        body,
    });
    let kind = match state.config.fault {
        Some(Fault::Auth(kind)) => kind,
        _ => return text(StatusCode::NOT_FOUND, "not found"),
    };
    match auth::document(&state, kind, Origin::Other, &parts.method, &path, &query).await {
        Some(r) => r,
        None => text(StatusCode::NOT_FOUND, "not found"),
    }
}

/// Whether `host` (a `Host` header, or the authority of an `Origin`) names a loopback host:
/// `localhost`, `127.0.0.1` or `[::1]`, with or without a port.
fn is_local_host(host: &str) -> bool {
    let name = if let Some(rest) = host.strip_prefix('[') {
        match rest.split_once(']') {
            Some((inside, after)) if after.is_empty() || after.starts_with(':') => inside,
            _ => return false,
        }
    } else {
        host.split_once(':').map_or(host, |(name, _)| name)
    };
    name.eq_ignore_ascii_case("localhost") || name == "127.0.0.1" || name == "::1"
}

/// The check of [`HttpConfig::check_host`]: a local `Host`, and a local `Origin` if there is
/// one (`null` and other unreadable origins are refused).
fn local_host_and_origin(headers: &hyper::HeaderMap) -> bool {
    let host = headers
        .get(hyper::header::HOST)
        .and_then(|v| v.to_str().ok());
    if !host.is_some_and(is_local_host) {
        return false;
    }
    match headers.get(hyper::header::ORIGIN) {
        None => true,
        Some(origin) => origin
            .to_str()
            .ok()
            .and_then(|o| o.split_once("://"))
            .filter(|(scheme, _)| matches!(*scheme, "http" | "https"))
            .is_some_and(|(_, authority)| is_local_host(authority)),
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
            crate::protocol::codes::INVALID_REQUEST,
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
            crate::protocol::codes::PARSE_ERROR,
            &format!("Parse error: {e}"),
        ))
    })?;
    let Value::Object(obj) = &v else {
        return Err(Box::new(rpc_error(
            StatusCode::BAD_REQUEST,
            crate::protocol::codes::INVALID_REQUEST,
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
    let stuck = state.stuck(&msg);
    if let Some(headers) = headers {
        let modern = era == Era::Modern
            || msg
                .method
                .as_deref()
                .is_some_and(|m| crate::protocol::is_modern_request(m, &msg.params));
        if modern {
            if stuck {
                return std::future::pending().await;
            }
            // `server/discover` is the modern handshake: spared, as `initialize` is.
            let spared = matches!(
                msg.method.as_deref(),
                None | Some("initialize" | crate::protocol::DISCOVER)
            );
            let fault = if spared || msg.id.is_none() {
                None
            } else {
                state.take_fault(msg.method.as_deref())
            };
            return modern::post(&state, &headers, msg, fault).await;
        }
    }
    if sid.is_none()
        && era == Era::Legacy
        && msg.method.as_deref() == Some(crate::protocol::DISCOVER)
        && let Some(r) = probe(state.config.server.probe, msg.id.as_ref()).await
    {
        return r;
    }
    let initialize = msg.method.as_deref() == Some("initialize");
    let session = match &sid {
        Some(id) if state.doomed_now(id) => return unknown_session(&state),
        Some(id) => match state.session(id) {
            Some(s) => s,
            None => return unknown_session(&state),
        },
        None if initialize => {
            let session = state.new_session(false);
            if state.config.fault == Some(Fault::ExpireLoop) && state.count_one() {
                lock(&state.doomed).insert(session.id.clone());
            }
            session
        }
        None => {
            return rpc_error(
                StatusCode::BAD_REQUEST,
                crate::protocol::codes::INVALID_REQUEST,
                "Bad Request: no Mcp-Session-Id",
            );
        }
    };
    let Some(id) = msg.id.clone().filter(|_| msg.method.is_some()) else {
        // A notification or a response.
        session.send(msg.line);
        if stuck {
            tracing::debug!(session = %session.id, "stuck-notification: never answered");
            return std::future::pending().await;
        }
        return text(StatusCode::ACCEPTED, "accepted");
    };
    let fault = if initialize {
        None
    } else {
        state.take_fault(msg.method.as_deref())
    };
    let mut response = match fault {
        Some(f) => match faulty(&state, Some(&session), f, &id).await {
            Ok(r) => return r,
            Err(cut) => answer(&state, &session, msg, &id, cut).await,
        },
        None => {
            let cut = reconnection_call(&state, &msg).then_some(Cut::Close);
            answer(&state, &session, msg, &id, cut).await
        }
    };
    if let Ok(v) = HeaderValue::from_str(&session.id) {
        response.headers_mut().insert(SESSION_HEADER, v);
    }
    response
}

/// Whether `msg` calls the conformance fixture `test_reconnection` (with
/// [`ServerConfig::conformance`]): its stream is closed after the priming event, before the
/// answer, which a `GET` with `Last-Event-ID` then gets (SEP-1699 polling).
fn reconnection_call(state: &State, msg: &Message) -> bool {
    state.config.server.conformance
        && !state.config.json
        && msg.method.as_deref() == Some("tools/call")
        && msg.params.get("name").and_then(Value::as_str)
            == Some(crate::conformance::RECONNECTION_TOOL)
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

/// How a request's real answer misbehaves on the way.
#[derive(Clone, Copy)]
enum Cut {
    /// Cut the connection after `after` whole events (and the priming one), with or without
    /// ids (not in the modern era).
    Drop { ids: bool, after: u32 },
    /// End the stream cleanly after the priming event (not in the modern era).
    Close,
    /// These bytes before the events (always an SSE stream, even with JSON answers).
    Prefix(Prefix),
    /// The answer framed as an SSE event, served as `application/json`.
    SseAsJson,
    /// One more header line of this many bytes.
    BigHeader(usize),
}

/// The name of the header line of `big-header`.
pub const BIG_HEADER: &str = "x-hostile-padding";

/// Adds the header of a [`Cut::BigHeader`] to `response`.
fn pad_headers(response: &mut Response<Body>, cut: Option<Cut>) {
    if let Some(Cut::BigHeader(n)) = cut
        && let Ok(v) = HeaderValue::from_str(&"a".repeat(n))
    {
        response.headers_mut().insert(BIG_HEADER, v);
    }
}

/// The answer of `retry-zero`: a priming event (an id, `retry: 0`), one log notification
/// (so that the stream made progress, and is worth resuming), then the connection is cut.
fn retry_zero() -> Response<Body> {
    let (tx, rx) = mpsc::unbounded_channel();
    let _ = tx.send(Chunk::Data(Bytes::from_static(
        b"id: retry-zero-0\nretry: 0\ndata: \n\n\
          id: retry-zero-1\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\
          \"params\":{\"level\":\"debug\",\"logger\":\"retry-zero\",\"data\":\"again\"}}\n\n",
    )));
    let _ = tx.send(Chunk::Abort);
    sse(rx)
}

/// The response of a faulty request, or (`Err`) how the normal answer misbehaves. `session`
/// is `None` for a modern request (the faults that need a session then change nothing).
async fn faulty(
    state: &State,
    session: Option<&Session>,
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
        Fault::GarbageSse => Err(Some(Cut::Prefix(Prefix::Chunks(prefix::GARBAGE)))),
        Fault::BrokenSse => Err(Some(Cut::Prefix(Prefix::Chunks(prefix::BROKEN)))),
        Fault::LenientSse => Err(Some(Cut::Prefix(Prefix::Chunks(prefix::LENIENT)))),
        Fault::KeepaliveFlood(n) => Err(Some(Cut::Prefix(Prefix::Keepalive(n)))),
        Fault::Expire404 | Fault::Expire400 => match session {
            Some(session) => {
                state.forget(&session.id);
                Ok(unknown_session(state))
            }
            None => Err(None),
        },
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
        Fault::RetryZero => Ok(retry_zero()),
        Fault::Empty200 => Ok(json_response(StatusCode::OK, Vec::new())),
        Fault::SseAsJson => Err(Some(Cut::SseAsJson)),
        Fault::BigHeader(n) => Err(Some(Cut::BigHeader(n))),
        // Not per request: never taken here.
        Fault::Get405
        | Fault::GetNever
        | Fault::StuckNotification { .. }
        | Fault::ExpireLoop
        | Fault::Auth(_) => Err(None),
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
    let json = match cut {
        None | Some(Cut::BigHeader(_)) => state.config.json,
        Some(Cut::SseAsJson) => true,
        Some(Cut::Drop { .. } | Cut::Close | Cut::Prefix(_)) => false,
    };
    if json {
        let rx = session.expect_json(id);
        session.send(msg.line);
        let Ok(line) = rx.await else {
            return unknown_session(state);
        };
        let body = if matches!(cut, Some(Cut::SseAsJson)) {
            session::event(None, false, &line).to_vec()
        } else {
            line
        };
        let mut r = json_response(StatusCode::OK, body);
        pad_headers(&mut r, cut);
        return r;
    }
    let (ids, retry, how) = match cut {
        Some(Cut::Drop { ids, after }) => (ids, Some(100), session::Cut::After(after)),
        Some(Cut::Close) => (true, Some(100), session::Cut::AfterPriming),
        _ => (true, state.config.retry_ms, session::Cut::No),
    };
    let rx = session.expect_stream(id, msg.token.as_ref(), ids, retry, how);
    session.send(msg.line);
    let prefix = match cut {
        Some(Cut::Prefix(p)) => Some(p),
        _ => None,
    };
    let mut r = sse_after(prefix, rx);
    pad_headers(&mut r, cut);
    r
}

/// The answer to a `GET` of `/mcp`; `None`: never answered (`get-never`).
fn get(state: &State, req: &Request<Incoming>) -> Option<Response<Body>> {
    if state.config.fault == Some(Fault::Get405) {
        return Some(text(
            StatusCode::METHOD_NOT_ALLOWED,
            "no GET stream (--http-chaos get-405)",
        ));
    }
    let last = req
        .headers()
        .get("last-event-id")
        .and_then(|v| v.to_str().ok());
    if state.config.fault == Some(Fault::RetryZero) {
        // The standalone stream and every resumption: never counted.
        return Some(retry_zero());
    }
    let Some(id) = session_id(req) else {
        return Some(text(
            StatusCode::BAD_REQUEST,
            "Bad Request: no Mcp-Session-Id",
        ));
    };
    if state.doomed_now(&id) {
        return Some(unknown_session(state));
    }
    let Some(session) = state.session(&id) else {
        return Some(unknown_session(state));
    };
    Some(match last {
        Some(last) => match session.resume(last) {
            Some(rx) => sse(rx),
            None if session.is_dead() => unknown_session(state),
            None => text(StatusCode::BAD_REQUEST, "unknown Last-Event-ID"),
        },
        None if state.config.fault == Some(Fault::GetNever) => {
            tracing::debug!(session = %id, "get-never: the standalone stream is never answered");
            return None;
        }
        None => sse(session.open_standalone(state.config.retry_ms)),
    })
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

/// A `POST /message` of the legacy HTTP+SSE transport. Its faults: those that make sense when
/// answers come on the event stream; `retry-zero`, `empty-200`, `sse-as-json`, `big-header`,
/// `expire-loop`, `get-never` change nothing here.
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
    if state.stuck(&msg) {
        session.send(msg.line);
        return std::future::pending().await;
    }
    let is_request = msg.method.is_some() && msg.id.is_some();
    let initialize = msg.method.as_deref() == Some("initialize");
    let fault = if is_request && !initialize {
        state.take_fault(msg.method.as_deref())
    } else {
        None
    };
    let accepted = || text(StatusCode::ACCEPTED, "accepted");
    match fault {
        None
        | Some(
            Fault::Get405
            | Fault::GetNever
            | Fault::RetryZero
            | Fault::Empty200
            | Fault::SseAsJson
            | Fault::BigHeader(_)
            | Fault::ExpireLoop
            | Fault::StuckNotification { .. }
            | Fault::Auth(_),
        ) => session.send(msg.line),
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
        Some(f @ (Fault::GarbageSse | Fault::BrokenSse | Fault::LenientSse)) => {
            let chunks = match f {
                Fault::GarbageSse => prefix::GARBAGE,
                Fault::BrokenSse => prefix::BROKEN,
                // Not the byte order mark: this stream started long ago.
                _ => &prefix::LENIENT[1..],
            };
            for g in chunks {
                session.push_raw(Bytes::from_static(g));
            }
            session.send(msg.line);
        }
        Some(Fault::KeepaliveFlood(n)) => {
            for frame in Prefix::Keepalive(n).frames() {
                session.push_raw(frame);
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
            | Fault::Html
            | Fault::CloseAfterHeaders),
        ) => {
            return match faulty(&state, Some(&session), f, &Value::Null).await {
                Ok(r) => r,
                Err(_) => accepted(),
            };
        }
    }
    accepted()
}
