//! The bridge's Streamable HTTP front (MCP 2025-03-26 … 2025-11-25), for hosts that speak
//! HTTP: one endpoint, `/mcp`.
//!
//! - `POST` of `initialize` without `Mcp-Session-Id` starts a session (its id in the answer's
//!   `Mcp-Session-Id`): a bridge session of its own, with its own upstream client, the same
//!   table-driven front as over stdio; every other `POST` names its session (missing: `400`;
//!   unknown or ended: `404`). A request is answered with an event stream (its progress, what
//!   the upstream asks meanwhile, then its answer) or, when the host accepts no event stream,
//!   one JSON body; a notification or a response gets `202`. A body that is not one JSON-RPC
//!   object gets `400`, one over the bound `413`.
//! - `GET` opens the standalone stream (the upstream's requests and notifications); with
//!   `Last-Event-ID` it resumes the stream that event belongs to.
//! - `DELETE` ends the session (its upstream is stopped).
//! - The host's trace context in the `POST`'s own headers (`traceparent`, `tracestate`,
//!   `baggage`, as an HTTP client's instrumentation writes them) goes into the message's
//!   `params._meta` when the message carries none of its own: the upstream call continues the
//!   host's trace either way.
//! - Every request is checked first: `Host` must name this front (DNS rebinding), `Origin`,
//!   when present, must be a loopback page or one allowed by name (`403`), and the bearer
//!   token, when one is set (always, for a front not on loopback), must be given (`401`).
//! - Sessions are bounded ([`HttpOptions::max_sessions`], then `503`) and end after
//!   [`HttpOptions::idle`] without a request and with no stream open.
//!
//! The 2026-07-28 stateless shape: a request without a session that carries the era's
//! `_meta` (or is `server/discover`) goes to the one stateless bridge session, answered on its
//! own stream (input rounds find their call by `requestState`; closing the stream cancels the
//! request, a listen included). Any other request without a session is refused with `400`.

mod guard;
mod session;
mod trace;

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::header::{CONTENT_TYPE, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::task::JoinSet;

use self::guard::{Guard, Refusal};
use self::session::{HttpSession, parse_event_id};
use crate::{Bridge, BridgeOptions, HostInfo, Upstream};

/// The session header.
const SESSION_HEADER: &str = "mcp-session-id";

/// Makes each session's upstream (called once per session).
pub type MakeUpstreams = Arc<dyn Fn(&HostInfo) -> Upstream + Send + Sync>;

/// The HTTP front's settings.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct HttpOptions {
    /// The bearer token every request must carry (required unless the front is on loopback).
    /// Never logged.
    pub token: Option<String>,
    /// Origins allowed besides loopback pages (`https://app.example`, exact).
    pub allowed_origins: Vec<String>,
    /// `Host` values allowed besides the listen address and the loopback names.
    pub allowed_hosts: Vec<String>,
    /// Sessions at once (default 64).
    pub max_sessions: usize,
    /// A session without a request and with no stream open for this long ends (default 30
    /// minutes).
    pub idle: Duration,
    /// The largest body accepted (default 16 MiB).
    pub max_body_bytes: usize,
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            token: None,
            allowed_origins: Vec::new(),
            allowed_hosts: Vec::new(),
            max_sessions: 64,
            idle: Duration::from_secs(30 * 60),
            max_body_bytes: 16 << 20,
        }
    }
}

/// Why the HTTP front cannot start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HttpFrontError {
    /// The address is not loopback and no token was given.
    #[error("a front on {addr} (not loopback) needs a bearer token")]
    TokenRequired {
        /// The address.
        addr: SocketAddr,
    },
    /// The address could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// A bound HTTP front, ready to [`HttpFront::run`].
pub struct HttpFront {
    listener: TcpListener,
    state: Arc<State>,
}

impl std::fmt::Debug for HttpFront {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpFront")
            .field("addr", &self.state.guard.addr)
            .finish_non_exhaustive()
    }
}

struct State {
    guard: Guard,
    options: HttpOptions,
    bridge: BridgeOptions,
    make: MakeUpstreams,
    sessions: Mutex<HashMap<String, Arc<HttpSession>>>,
}

impl HttpFront {
    /// Binds `addr` (port 0: any free port). A front not on loopback needs
    /// [`HttpOptions::token`].
    pub async fn bind(
        addr: SocketAddr,
        make: MakeUpstreams,
        bridge: BridgeOptions,
        options: HttpOptions,
    ) -> Result<Self, HttpFrontError> {
        if !addr.ip().is_loopback() && options.token.is_none() {
            return Err(HttpFrontError::TokenRequired { addr });
        }
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|source| HttpFrontError::Bind { addr, source })?;
        let addr = listener.local_addr().unwrap_or(addr);
        let guard = Guard {
            addr,
            token: options.token.clone(),
            origins: options.allowed_origins.clone(),
            hosts: options.allowed_hosts.clone(),
        };
        Ok(HttpFront {
            listener,
            state: Arc::new(State {
                guard,
                options,
                bridge,
                make,
                sessions: Mutex::new(HashMap::new()),
            }),
        })
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.state.guard.addr
    }

    /// Serves until `shutdown` resolves; then ends every session (their upstreams stopped,
    /// waiting at most the bridge's close bound).
    pub async fn run(self, shutdown: impl std::future::Future<Output = ()>) {
        let state = Arc::clone(&self.state);
        let sweeper = tokio::spawn(sweep(Arc::clone(&state)));
        let mut connections = JoinSet::new();
        tokio::pin!(shutdown);
        loop {
            tokio::select! {
                () = &mut shutdown => break,
                accepted = self.listener.accept() => {
                    let Ok((stream, _)) = accepted else {
                        tokio::time::sleep(Duration::from_millis(10)).await;
                        continue;
                    };
                    let state = Arc::clone(&state);
                    connections.spawn(async move {
                        let service = hyper::service::service_fn(move |req| {
                            let state = Arc::clone(&state);
                            async move { Ok::<_, Infallible>(handle(state, req).await) }
                        });
                        let io = hyper_util::rt::TokioIo::new(stream);
                        let _ = hyper::server::conn::http1::Builder::new()
                            .serve_connection(io, service)
                            .await;
                    });
                    while connections.try_join_next().is_some() {}
                }
            }
        }
        sweeper.abort();
        let sessions: Vec<_> = lock(&state.sessions).drain().map(|(_, s)| s).collect();
        for session in &sessions {
            session.end().await;
        }
        // Each bridge stops its upstream within its close bound once its host is gone.
        let bound = state.bridge.close_bound;
        tokio::time::sleep(Duration::from_millis(50).min(bound)).await;
        for session in sessions {
            session.wait_closed(bound).await;
        }
        connections.abort_all();
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Ends the sessions idle for longer than the bound.
async fn sweep(state: Arc<State>) {
    let every = (state.options.idle / 4).clamp(Duration::from_millis(50), Duration::from_secs(60));
    loop {
        tokio::time::sleep(every).await;
        let idle: Vec<_> = lock(&state.sessions)
            .values()
            .filter(|s| !s.has_streams() && lock(&s.last_seen).elapsed() >= state.options.idle)
            .cloned()
            .collect();
        for session in idle {
            lock(&state.sessions).remove(&session.id);
            session.end().await;
        }
    }
}

type Body = BoxBody<Bytes, Infallible>;

fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into()).boxed()
}

fn text(status: StatusCode, message: &str) -> Response<Body> {
    let mut r = Response::new(full(format!("{message}\n")));
    *r.status_mut() = status;
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    r
}

fn rpc_error(status: StatusCode, code: i64, message: &str) -> Response<Body> {
    let body = json!({"jsonrpc": "2.0", "id": null, "error": {"code": code, "message": message}});
    let mut r = Response::new(full(body.to_string()));
    *r.status_mut() = status;
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r
}

fn sse(rx: tokio::sync::mpsc::Receiver<Bytes>, session: Option<&str>) -> Response<Body> {
    sse_events(rx, session, None)
}

/// The `_meta` key that marks a 2026-07-28 request.
const MODERN_META: &str = "io.modelcontextprotocol/protocolVersion";

/// Sends `notifications/cancelled` for a request into its session when its stream is closed
/// before the answer (a 2026-07-28 host cancels so).
struct CancelOnDrop {
    session: Arc<HttpSession>,
    id: Value,
    armed: bool,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let session = Arc::clone(&self.session);
        let line = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                          "params": {"requestId": self.id, "reason": "the stream was closed"}})
        .to_string();
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(async move {
                session.send(line.as_bytes()).await;
            });
        }
    }
}

/// A stream's events; ended by the session (after the answer) or by the host (then `cancel`,
/// if any, tells the session).
struct Events {
    rx: tokio::sync::mpsc::Receiver<Bytes>,
    cancel: Option<CancelOnDrop>,
}

impl futures_util::Stream for Events {
    type Item = Result<Frame<Bytes>, Infallible>;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        match self.rx.poll_recv(cx) {
            std::task::Poll::Ready(Some(event)) => {
                std::task::Poll::Ready(Some(Ok(Frame::data(event))))
            }
            std::task::Poll::Ready(None) => {
                // Ended by the session: nothing to cancel.
                if let Some(c) = self.cancel.as_mut() {
                    c.armed = false;
                }
                std::task::Poll::Ready(None)
            }
            std::task::Poll::Pending => std::task::Poll::Pending,
        }
    }
}

fn sse_events(
    rx: tokio::sync::mpsc::Receiver<Bytes>,
    session: Option<&str>,
    cancel: Option<CancelOnDrop>,
) -> Response<Body> {
    let body = Events { rx, cancel };
    let mut r = Response::new(BodyExt::boxed(StreamBody::new(body)));
    let h = r.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    h.insert("cache-control", HeaderValue::from_static("no-cache"));
    if let Some(id) = session.and_then(|s| HeaderValue::from_str(s).ok()) {
        h.insert(SESSION_HEADER, id);
    }
    r
}

fn header<'a>(req: &'a Request<Incoming>, name: &str) -> Option<&'a str> {
    req.headers().get(name).and_then(|v| v.to_str().ok())
}

async fn handle(state: Arc<State>, req: Request<Incoming>) -> Response<Body> {
    let refused = state.guard.check(
        header(&req, "host"),
        header(&req, "origin"),
        header(&req, "authorization"),
    );
    match refused {
        Err(Refusal::Host) => return text(StatusCode::FORBIDDEN, "forbidden: unknown Host"),
        Err(Refusal::Origin) => {
            return text(StatusCode::FORBIDDEN, "forbidden: Origin not allowed");
        }
        Err(Refusal::Token) => {
            let mut r = text(StatusCode::UNAUTHORIZED, "a bearer token is required");
            r.headers_mut()
                .insert("www-authenticate", HeaderValue::from_static("Bearer"));
            return r;
        }
        Ok(()) => {}
    }
    if req.uri().path() != "/mcp" {
        return text(StatusCode::NOT_FOUND, "not found: the endpoint is /mcp");
    }
    match *req.method() {
        Method::POST => post(state, req).await,
        Method::GET => get(&state, &req),
        Method::DELETE => match session_of(&state, &req) {
            Some(session) => {
                lock(&state.sessions).remove(&session.id);
                session.end().await;
                text(StatusCode::OK, "session ended")
            }
            None => text(StatusCode::NOT_FOUND, "unknown session"),
        },
        _ => text(StatusCode::METHOD_NOT_ALLOWED, "method not allowed"),
    }
}

fn session_of(state: &State, req: &Request<Incoming>) -> Option<Arc<HttpSession>> {
    let id = header(req, SESSION_HEADER).filter(|id| *id != STATELESS)?;
    lock(&state.sessions).get(id).cloned()
}

fn get(state: &State, req: &Request<Incoming>) -> Response<Body> {
    let accepts = header(req, "accept").is_some_and(|a| a.contains("text/event-stream"));
    if !accepts {
        return text(
            StatusCode::NOT_ACCEPTABLE,
            "GET needs Accept: text/event-stream",
        );
    }
    let Some(session) = session_of(state, req) else {
        return match header(req, SESSION_HEADER) {
            Some(_) => text(StatusCode::NOT_FOUND, "unknown session"),
            None => text(StatusCode::BAD_REQUEST, "Mcp-Session-Id is required"),
        };
    };
    let last = header(req, "last-event-id").and_then(parse_event_id);
    let rx = session.open_standalone(last);
    sse(rx, None)
}

async fn post(state: Arc<State>, req: Request<Incoming>) -> Response<Body> {
    if let Some(version) = header(&req, "mcp-protocol-version")
        && !crate::HANDSHAKE_VERSIONS.contains(&version)
        && version != mcp_machine::front::MODERN_VERSION
    {
        return rpc_error(
            StatusCode::BAD_REQUEST,
            mcp_runtime::codes::INVALID_REQUEST,
            &format!("unsupported MCP-Protocol-Version {version:?}"),
        );
    }
    let sse_ok = header(&req, "accept").is_none_or(|a| a.contains("text/event-stream"));
    let given = header(&req, SESSION_HEADER).map(str::to_owned);
    let trace = trace::trace_headers(req.headers());
    let limited = http_body_util::Limited::new(req.into_body(), state.options.max_body_bytes);
    let body = match limited.collect().await {
        Ok(c) => c.to_bytes(),
        Err(_) => return text(StatusCode::PAYLOAD_TOO_LARGE, "the body is too large"),
    };
    let mut msg: Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => {
            return rpc_error(
                StatusCode::BAD_REQUEST,
                mcp_runtime::codes::PARSE_ERROR,
                &format!("parse error: {e}"),
            );
        }
    };
    if !msg.is_object() {
        return rpc_error(
            StatusCode::BAD_REQUEST,
            mcp_runtime::codes::INVALID_REQUEST,
            "one JSON-RPC object per POST (batches are not accepted)",
        );
    }
    // The host's trace from its HTTP headers, when the message carries none of its own.
    trace::carry_trace_headers(&trace, &mut msg);
    let method = msg.get("method").and_then(Value::as_str);
    let id = msg.get("id").filter(|i| !i.is_null());
    let modern = method == Some("server/discover")
        || msg
            .get("params")
            .and_then(|p| p.get("_meta"))
            .and_then(|m| m.get(MODERN_META))
            .is_some();
    let session = match (&given, method) {
        (None, Some("initialize")) if id.is_some() => match start_session(&state) {
            Ok(s) => s,
            Err(r) => return *r,
        },
        // The 2026-07-28 stateless shape: every sessionless request of that era goes to the
        // one stateless bridge session (its input rounds find their call by `requestState`).
        (None, _) if modern => match stateless_session(&state) {
            Ok(s) => s,
            Err(r) => return *r,
        },
        (None, _) => {
            return rpc_error(
                StatusCode::BAD_REQUEST,
                mcp_runtime::codes::INVALID_REQUEST,
                "Mcp-Session-Id is required (start a session with initialize)",
            );
        }
        (Some(sid), _) => match lock(&state.sessions)
            .get(sid)
            .filter(|_| sid != STATELESS)
            .cloned()
        {
            Some(s) => s,
            None => return text(StatusCode::NOT_FOUND, "unknown session"),
        },
    };
    let line = msg.to_string().into_bytes();
    let new_session = given.is_none() && !modern;
    match (method, id) {
        (Some(_), Some(id)) => {
            let key = id.to_string();
            let token = msg
                .get("params")
                .and_then(|p| p.get("_meta"))
                .and_then(|m| m.get("progressToken"));
            if sse_ok {
                let rx = session.open_request(&key, token);
                if !session.send(&line).await {
                    return text(StatusCode::NOT_FOUND, "the session ended");
                }
                // In the 2026-07-28 era closing the stream is the request's cancellation.
                let cancel = modern.then(|| CancelOnDrop {
                    session: Arc::clone(&session),
                    id: id.clone(),
                    armed: true,
                });
                sse_events(rx, new_session.then_some(session.id.as_str()), cancel)
            } else {
                let answer = session.open_plain(&key);
                if !session.send(&line).await {
                    return text(StatusCode::NOT_FOUND, "the session ended");
                }
                match answer.await {
                    Ok(frame) => {
                        let mut r = Response::new(full(frame));
                        r.headers_mut()
                            .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
                        if new_session && let Ok(v) = HeaderValue::from_str(&session.id) {
                            r.headers_mut().insert(SESSION_HEADER, v);
                        }
                        r
                    }
                    Err(_) => text(StatusCode::NOT_FOUND, "the session ended"),
                }
            }
        }
        _ => {
            if !session.send(&line).await {
                return text(StatusCode::NOT_FOUND, "the session ended");
            }
            let mut r = Response::new(full(Bytes::new()));
            *r.status_mut() = StatusCode::ACCEPTED;
            r
        }
    }
}

/// The id under which the stateless session (2026-07-28 hosts) is kept: not a session id a
/// host can name (session ids are hex).
const STATELESS: &str = "stateless";

/// The one bridge session of every 2026-07-28 host (made at the first such request).
fn stateless_session(state: &Arc<State>) -> Result<Arc<HttpSession>, Box<Response<Body>>> {
    if let Some(s) = lock(&state.sessions).get(STATELESS) {
        return Ok(Arc::clone(s));
    }
    new_session(state, STATELESS.to_owned())
}

/// A new session: its bridge (with its own upstream client) and the routing of its output.
fn start_session(state: &Arc<State>) -> Result<Arc<HttpSession>, Box<Response<Body>>> {
    new_session(state, session_id())
}

fn new_session(state: &Arc<State>, id: String) -> Result<Arc<HttpSession>, Box<Response<Body>>> {
    let mut sessions = lock(&state.sessions);
    if let Some(s) = sessions.get(&id) {
        return Ok(Arc::clone(s));
    }
    if sessions.len() >= state.options.max_sessions {
        return Err(Box::new(text(
            StatusCode::SERVICE_UNAVAILABLE,
            "too many sessions",
        )));
    }
    let (host_side, bridge_side) = tokio::io::duplex(1 << 20);
    let (from_bridge, to_bridge) = tokio::io::split(host_side);
    let (bridge_r, bridge_w) = tokio::io::split(bridge_side);
    let session = HttpSession::new(id.clone(), to_bridge);
    let make = Arc::clone(&state.make);
    let bridge = Bridge::with(move |host| make(host)).options(state.bridge.clone());
    let task = tokio::spawn(async move {
        bridge
            .serve(bridge_r, bridge_w, std::future::pending())
            .await;
    });
    session.keep_bridge(task);
    let router = tokio::spawn(Arc::clone(&session).route_from(from_bridge));
    session.keep(router.abort_handle());
    sessions.insert(id, Arc::clone(&session));
    Ok(session)
}

/// A session id: 128 bits from the operating system's random source, as hex (visible ASCII,
/// as the specification asks; not guessable, so a session cannot be taken over by its id).
fn session_id() -> String {
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_err() {
        // No random source: unique still (time and a counter), guarded by Host and token.
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        return format!("{t:032x}{n:016x}");
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
