//! The Streamable HTTP transport (MCP 2025-03-26 … 2025-11-25) as a link: one HTTP session per
//! transport generation; and [`AutoHttpConnector`], which falls back to the legacy HTTP+SSE
//! transport ([`super::sse`]) when the server does not speak Streamable HTTP.
//!
//! The transport task speaks newline-delimited frames over a [`Link`], as for stdio; here the
//! link's other end is a bridge task (shared with [`super::sse`]) that turns each frame into
//! an HTTP `POST` and each message of the answers (a JSON body, or the messages of an SSE
//! stream) into a frame. So the frame limit, the read credit, the send queue and "exactly one
//! `Down`" work as for every link.
//!
//! What the bridge does, as the specification's transport page asks:
//! - every `POST` carries `Accept: application/json, text/event-stream`; `202` answers (to our
//!   notifications and responses) carry nothing; SSE events without data (priming events) are
//!   skipped, but their `id` and `retry` are kept;
//! - notifications and responses are posted one after the other, each until the headers of its
//!   answer, so the server sees them in order (`notifications/initialized` before the next
//!   request, a cancellation after its request); requests are posted concurrently. The headers
//!   are awaited within the header bound ([`HttpConnector::header_timeout`], 10 s): a
//!   notification or response the server does not answer in time is cut off (reported in the
//!   log) and the frames after it go out; the next one unanswered too, nothing answered in
//!   between ([`STUCK_AFTER`]), ends the link with [`TransportError::Io`] of kind `TimedOut`
//!   naming it ([`super::NoAnswer`]), so the calls on it fail as the connection lost (and the
//!   table reconnects) rather than wait for good;
//! - the `POST` of a request whose `2xx` answer holds no response to it (no body, `202`, a body
//!   that is neither JSON nor SSE, JSON that answers something else) gets at once a made-up
//!   error response ([`mcp_machine::headers::HTTP_REFUSED`]: "the server answered the POST of
//!   tools/call with HTTP 200 and no response"), the same as in the 2026-07-28 era;
//! - a request's `POST` (and its stream) ends once the `notifications/cancelled` naming it was
//!   posted: nobody waits for its answer any more, and a server that never answers keeps no
//!   connection per cancelled call;
//! - the `Mcp-Session-Id` of the `initialize` answer (visible ASCII only, else the link fails)
//!   is sent on every later request, and `MCP-Protocol-Version` once the handshake chose one;
//! - a POST's SSE stream that breaks or ends before the response to the POST's request is
//!   resumed with `GET` and `Last-Event-ID` (the last event id seen), after the server's
//!   `retry` (the last one seen, never under [`MIN_RETRY`]; else 1 s doubling), plus up to 20 %
//!   jitter, at most [`RESUME_ATTEMPTS`] times in a row without a delivered message (an end
//!   without progress does not reset the count) and [`RESUMES_PER_REQUEST`] times in all.
//!   Without an event id, or once the attempts are spent, the link ends with
//!   [`TransportError::StreamLost`]: a call is never left waiting on a stream that is gone;
//! - after `notifications/initialized`, a standalone `GET` stream carries what the server sends
//!   on its own (`405`: the server has none, and it is not asked again); when it ends it is
//!   opened again with `Last-Event-ID` after the same wait (the same floor), at most
//!   [`GET_STREAM_ATTEMPTS`] times in a row without a message, and at most
//!   `REOPENS_PER_WINDOW` times a minute whatever it brings. The frames after `initialized`
//!   wait for its answer (so that what the server sends on it first is not lost) at most twice
//!   as long as the server took to answer `initialized`, between 50 ms and 2 s: a server that
//!   never answers the `GET` holds the first request back no longer than its own answers take;
//! - a `404` to a request carrying the session id (or a `400` whose body names the session,
//!   as some servers answer an unknown session) ends the link with
//!   [`TransportError::SessionExpired`], listing the requests refused so (they never ran: the
//!   table sends them again on a new session, initialized at once); any other non-2xx status
//!   ends it with [`TransportError::Http`] (the table fails the calls in flight and reconnects);
//! - closing sends `DELETE` with the session id (bounded by the close grace; `405` is fine);
//! - static headers ([`HttpConnector::header`]) go on every request; redirects are never
//!   followed; `HTTP_PROXY`, `HTTPS_PROXY`, `ALL_PROXY` and `NO_PROXY` are honoured.
//!
//! Frames of the 2026-07-28 era (those whose `_meta` names the protocol version) take another
//! path, stateless, with the era's headers and without session, GET stream, resumption or
//! `DELETE`; a refusal never ends the link there (the `modern` module).
//!
//! Like every transport it decides nothing about the protocol: it reads a frame's JSON only
//! to find the `initialize` exchange (for the session's headers) and which response answers
//! a POST (to know whether its stream must be resumed).

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_machine::codes;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderValue};
use reqwest::{Method, StatusCode};
use serde::de::IgnoredAny;
use serde_json::Value;
use tokio::sync::oneshot;

use super::bridge::{self, BoxFut, Fallback, Frame, Leg, Out, PostError, Received};
use super::modern::{self, ModernPosts};
use super::pending::Pending;
use super::sse::SseConnector;
use super::web::{
    ReopenBudget, SseError, SseEvents, Wait, WebOptions, into_one_line, is_sse, message_of,
    one_line, parse_url, read_capped, reconnect_wait, web_options,
};
use super::{ConnectMessages, Connector, Delivery, Link, TransportError};
use crate::ToolCatalog;

/// `Mcp-Session-Id`.
const SESSION_HEADER: &str = "mcp-session-id";
/// `MCP-Protocol-Version`.
const VERSION_HEADER: &str = "mcp-protocol-version";
/// `Last-Event-ID`.
const LAST_EVENT_HEADER: &str = "last-event-id";
/// How often in a row the standalone GET stream is opened again without bringing a message.
pub const GET_STREAM_ATTEMPTS: u32 = 5;
/// How often in a row a POST's broken SSE stream is resumed without bringing a message.
pub const RESUME_ATTEMPTS: u32 = 5;
/// How often in all a POST's SSE stream is resumed, messages or not: a server that sends a
/// message and breaks the stream each time cannot keep a request resuming for ever.
pub const RESUMES_PER_REQUEST: u32 = 20;
pub use super::web::MIN_RETRY;
/// Default bound on the `DELETE` at close.
const DEFAULT_GRACE: Duration = Duration::from_secs(2);
/// The most the frames after `notifications/initialized` wait for the standalone GET stream
/// to open (its response headers), so that what the server sends on it first is not lost.
const GET_STREAM_OPEN_WAIT: Duration = Duration::from_secs(2);
/// The least they wait for it (when the server answered `initialized` faster than half this).
const GET_STREAM_OPEN_MIN: Duration = Duration::from_millis(50);
/// How many notifications or responses in a row, the server answering no POST in between,
/// may go unanswered within the header bound before the link counts as stuck and fails: the
/// first is cut off and reported, and the frames after it go out.
pub const STUCK_AFTER: u32 = 2;
/// How much of a `400` body is read to tell "unknown session" from other bad requests.
const UNKNOWN_SESSION_BODY: usize = 4096;

/// Whether a body is a JSON-RPC error response whose code only a 2026-07-28 server answers
/// with (-32020, -32021, -32022): the server is a modern one, not a legacy HTTP+SSE one.
fn is_modern_refusal(body: &[u8]) -> bool {
    let Ok(v) = serde_json::from_slice::<Value>(body) else {
        return false;
    };
    let code = v
        .get("error")
        .and_then(|e| e.get("code"))
        .and_then(Value::as_i64);
    v.get("method").is_none()
        && matches!(
            code,
            Some(codes::UNSUPPORTED_VERSION | codes::HEADER_MISMATCH | codes::MISSING_CAPABILITY)
        )
}

/// Whether a `400` body says the session is unknown (some servers answer an expired session
/// so instead of `404`): it names the session.
fn names_session(body: &[u8]) -> bool {
    String::from_utf8_lossy(body)
        .to_ascii_lowercase()
        .contains("session")
}

/// Opens a Streamable HTTP link to one MCP endpoint per generation. A factory: it holds no
/// session itself. It never falls back to the legacy HTTP+SSE transport (see
/// [`AutoHttpConnector`] for that).
///
/// Its `Debug` output shows the names of the static headers, never their values.
#[derive(Clone, Debug)]
pub struct HttpConnector {
    endpoint: reqwest::Url,
    web: WebOptions,
    /// The tools' header mappings, shared by every link of this connector (a reconnect keeps
    /// what the tools listed before said) and by the client built on it.
    tool_headers: ToolCatalog,
    /// The session id of the latest link, once its server gave one (for telemetry).
    session_id: SessionSlot,
}

/// The `Mcp-Session-Id` of a connector's latest link, shared with that link (a new link
/// empties it).
type SessionSlot = Arc<Mutex<Option<String>>>;

impl HttpConnector {
    /// A connector for the MCP endpoint at `url` (`http://` or `https://`).
    pub fn new(url: &str) -> Result<Self, TransportError> {
        let endpoint = parse_url(url)?;
        let mut web = WebOptions::new(DEFAULT_GRACE)?;
        web.endpoint = Some(endpoint.clone());
        Ok(HttpConnector {
            endpoint,
            web,
            tool_headers: ToolCatalog::new(),
            session_id: SessionSlot::default(),
        })
    }

    /// Shares `registry` between every link of this connector (and whoever else holds a clone
    /// of it): the `x-mcp-header` mappings of the listed tools, used for the `Mcp-Param-*`
    /// headers of modern `tools/call`s, learned from modern `tools/list` answers (by the
    /// client built on this connector, or by the links themselves when none is). Without it
    /// the connector's links share a catalog of their own.
    pub fn tool_headers(mut self, registry: ToolCatalog) -> Self {
        self.tool_headers = registry;
        self
    }

    /// How long the `DELETE` at close may take (2 s).
    pub fn grace(mut self, grace: Duration) -> Self {
        self.web.grace = grace;
        self
    }

    fn leg(&self) -> Arc<StreamableLeg> {
        *self.session_id.lock().unwrap_or_else(|e| e.into_inner()) = None;
        Arc::new(StreamableLeg {
            session_id: Arc::clone(&self.session_id),
            endpoint: self.endpoint.clone(),
            web: self.web.clone(),
            session: Mutex::new(Session::default()),
            modern: ModernPosts::new(self.tool_headers.clone()),
            pending: Pending::default(),
        })
    }
}

web_options!(HttpConnector);

impl Connector for HttpConnector {
    fn connect(
        &self,
    ) -> Pin<Box<dyn Future<Output = Result<Link, TransportError>> + Send + 'static>> {
        let link = bridge::open(self.leg(), None, None, self.web.grace);
        Box::pin(async move { Ok(link) })
    }

    fn connect_messages(&self, delivery: Delivery) -> Option<ConnectMessages> {
        let link = bridge::open_messages(self.leg(), None, None, self.web.grace, delivery);
        Some(Box::pin(async move { Ok(link) }))
    }

    fn mirrors_tool_headers(&self) -> bool {
        true
    }

    fn server_url(&self) -> Option<&reqwest::Url> {
        Some(&self.endpoint)
    }

    fn protocol_version(&self) -> Option<&'static str> {
        self.web.http_version()
    }

    fn session_id(&self) -> Option<String> {
        self.session_id
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn tool_catalog(&self) -> Option<ToolCatalog> {
        Some(self.tool_headers.clone())
    }

    fn reads_heads(&self) -> bool {
        true
    }

    fn describe(&self) -> String {
        format!("http: {}", crate::auth::policy::redact(&self.endpoint))
    }
}

/// Which HTTP transport an [`AutoHttpConnector`] found the server to speak.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HttpVerdict {
    /// Streamable HTTP (MCP 2025-03-26 and later).
    Streamable,
    /// Only the legacy HTTP+SSE transport (MCP 2024-11-05).
    Legacy,
}

/// Streamable HTTP with the specification's backwards compatibility: when the POST of
/// `initialize` is answered `400`, `404` or `405` (no session yet), the link falls back to the
/// legacy HTTP+SSE transport on the same URL (`GET` it for the event stream) and sends
/// `initialize` there. The verdict is kept for the connector's lifetime (its clones share it),
/// so later generations use the remembered transport directly and are never probed again.
///
/// Not a probe of its own: the only request is the client's `initialize`.
#[derive(Clone, Debug)]
pub struct AutoHttpConnector {
    http: HttpConnector,
    sse: SseConnector,
    verdict: Arc<Mutex<Option<HttpVerdict>>>,
}

impl AutoHttpConnector {
    /// A connector for the MCP server at `url` (`http://` or `https://`).
    pub fn new(url: &str) -> Result<Self, TransportError> {
        Ok(AutoHttpConnector {
            http: HttpConnector::new(url)?,
            sse: SseConnector::new(url)?,
            verdict: Arc::new(Mutex::new(None)),
        })
    }

    /// A static header for every request of either transport; see [`HttpConnector::header`].
    pub fn header(mut self, name: &str, value: &str) -> Result<Self, TransportError> {
        self.edit_web(&|web| web.set_header(name, value))?;
        Ok(self)
    }

    /// Bound on connect plus response headers of each request; see
    /// [`HttpConnector::http_timeout`].
    pub fn http_timeout(mut self, timeout: Duration) -> Self {
        let _ = self.edit_web(&|web| {
            web.http_timeout = Some(timeout);
            Ok(())
        });
        self
    }

    /// Bound on opening each connection (10 s); see [`HttpConnector::connect_timeout`].
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.http = self.http.connect_timeout(timeout);
        self.sse = self.sse.connect_timeout(timeout);
        self
    }

    /// Bound on the response headers of the exchanges answered at once (10 s); see
    /// [`HttpConnector::header_timeout`].
    pub fn header_timeout(mut self, timeout: Duration) -> Self {
        let _ = self.edit_web(&|web| {
            web.header_timeout = timeout;
            Ok(())
        });
        self
    }

    /// Largest message accepted from the server (16 MiB).
    pub fn max_frame_bytes(mut self, bytes: usize) -> Self {
        let _ = self.edit_web(&|web| {
            web.max_frame_bytes = bytes;
            Ok(())
        });
        self
    }

    /// Shares `registry` between every Streamable HTTP link of this connector; see
    /// [`HttpConnector::tool_headers`]. The legacy transport has no use for it.
    pub fn tool_headers(mut self, registry: ToolCatalog) -> Self {
        self.http = self.http.tool_headers(registry);
        self
    }

    /// Changes the options of both transports in place.
    pub(crate) fn edit_web(
        &mut self,
        f: &dyn Fn(&mut super::WebOptions) -> Result<(), TransportError>,
    ) -> Result<(), TransportError> {
        self.http.edit_web(f)?;
        self.sse.edit_web(f)
    }

    /// Which transport the server was found to speak, once an `initialize` told.
    pub fn verdict(&self) -> Option<HttpVerdict> {
        *self.verdict.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Connector for AutoHttpConnector {
    fn connect(
        &self,
    ) -> Pin<Box<dyn Future<Output = Result<Link, TransportError>> + Send + 'static>> {
        match self.verdict() {
            Some(HttpVerdict::Streamable) => self.http.connect(),
            Some(HttpVerdict::Legacy) => self.sse.connect(),
            None => {
                let fallback = Arc::new(AutoFallback {
                    sse: self.sse.clone(),
                    verdict: Arc::clone(&self.verdict),
                });
                let link = bridge::open(self.http.leg(), None, Some(fallback), self.http.web.grace);
                Box::pin(async move { Ok(link) })
            }
        }
    }

    fn connect_messages(&self, delivery: Delivery) -> Option<ConnectMessages> {
        match self.verdict() {
            Some(HttpVerdict::Streamable) => self.http.connect_messages(delivery),
            Some(HttpVerdict::Legacy) => self.sse.connect_messages(delivery),
            None => {
                let fallback = Arc::new(AutoFallback {
                    sse: self.sse.clone(),
                    verdict: Arc::clone(&self.verdict),
                });
                let link = bridge::open_messages(
                    self.http.leg(),
                    None,
                    Some(fallback),
                    self.http.web.grace,
                    delivery,
                );
                Some(Box::pin(async move { Ok(link) }))
            }
        }
    }

    fn mirrors_tool_headers(&self) -> bool {
        true
    }

    fn tool_catalog(&self) -> Option<ToolCatalog> {
        self.http.tool_catalog()
    }

    fn server_url(&self) -> Option<&reqwest::Url> {
        self.http.server_url()
    }

    fn protocol_version(&self) -> Option<&'static str> {
        match self.verdict() {
            Some(HttpVerdict::Legacy) => self.sse.protocol_version(),
            _ => self.http.protocol_version(),
        }
    }

    fn session_id(&self) -> Option<String> {
        match self.verdict() {
            Some(HttpVerdict::Legacy) => None,
            _ => self.http.session_id(),
        }
    }

    fn reads_heads(&self) -> bool {
        true
    }

    fn describe(&self) -> String {
        match self.verdict() {
            Some(HttpVerdict::Legacy) => self.sse.describe(),
            _ => self.http.describe(),
        }
    }
}

struct AutoFallback {
    sse: SseConnector,
    verdict: Arc<Mutex<Option<HttpVerdict>>>,
}

impl Fallback for AutoFallback {
    fn open(&self, out: Out) -> BoxFut<Result<Arc<dyn Leg>, TransportError>> {
        let sse = self.sse.clone();
        Box::pin(async move { sse.open_leg(out).await })
    }

    fn decided(&self, legacy: bool) {
        let verdict = if legacy {
            HttpVerdict::Legacy
        } else {
            HttpVerdict::Streamable
        };
        tracing::debug!(target: "mcp::http", ?verdict, "the server's HTTP transport");
        *self.verdict.lock().unwrap_or_else(|e| e.into_inner()) = Some(verdict);
    }
}

/// What one HTTP session knows.
#[derive(Default, Debug)]
struct Session {
    /// `Mcp-Session-Id`, once the `initialize` answer gave one.
    id: Option<HeaderValue>,
    /// `MCP-Protocol-Version`, once the handshake chose one.
    version: Option<HeaderValue>,
    /// The id of our `initialize` request, while its answer is awaited.
    initialize_id: Option<Value>,
    /// Whether the standalone GET stream was started.
    get_started: bool,
    /// Ids of our requests the server refused because it no longer knew the session.
    refused: Vec<u64>,
    /// Frames posted in order (notifications, responses) cut off unanswered since the server
    /// last answered a POST (see [`STUCK_AFTER`]).
    cut_off: u32,
}

/// Where an SSE stream is, for resuming it.
#[derive(Default)]
struct Cursor {
    /// The last event id seen (priming events included).
    last_id: Option<String>,
    /// The last `retry` the server asked for.
    retry: Option<Duration>,
    /// Whether a message was delivered since the flag was last cleared.
    delivered: bool,
    /// Whether the response awaited arrived.
    answered: bool,
}

impl Cursor {
    /// Takes the last event id and `retry` of `events` (a stream's own id survives only in
    /// it until the stream ends).
    fn note(&mut self, events: &SseEvents) {
        let id = events.last_event_id();
        if self.last_id.as_deref() != id {
            self.last_id = id.map(str::to_owned);
        }
        if let Some(retry) = events.retry() {
            self.retry = Some(retry);
        }
    }
}

/// A message's id when it is a response (an id and no method).
#[derive(serde::Deserialize)]
struct ResponseHead {
    id: Option<Value>,
    method: Option<IgnoredAny>,
}

/// Streamable HTTP for one session.
struct StreamableLeg {
    /// Where the session id is told to the connector (telemetry).
    session_id: SessionSlot,
    endpoint: reqwest::Url,
    web: WebOptions,
    session: Mutex<Session>,
    /// Its frames of the 2026-07-28 era.
    modern: ModernPosts,
    /// Its request POSTs of the handshake era, ended by the cancellation posted for them.
    pending: Pending,
}

fn lock(s: &Mutex<Session>) -> std::sync::MutexGuard<'_, Session> {
    s.lock().unwrap_or_else(|e| e.into_inner())
}

/// The link ends because a POST's stream is gone before the response to its request.
fn stream_lost(why: String) -> TransportError {
    TransportError::StreamLost { reason: why }
}

impl Leg for StreamableLeg {
    fn post(
        self: Arc<Self>,
        frame: String,
        head: Frame,
        out: Out,
        received: Received,
    ) -> BoxFut<Result<(), PostError>> {
        Box::pin(async move { self.post_frame(frame, head, out, received).await })
    }

    fn close(self: Arc<Self>, ended: Option<TransportError>) -> BoxFut<()> {
        Box::pin(async move { self.delete(ended).await })
    }

    /// Notifications and responses (answered `202` at once, within the header bound); a
    /// request's answer can take as long as the call.
    fn in_order(&self, frame: &Frame) -> bool {
        !frame.is_request()
    }

    /// A modern request is known as in flight from here on, so that a cancellation read
    /// after it finds it even before its POST started.
    fn admit(&self, frame: &Frame) {
        if frame.is_modern() {
            self.modern.admit(frame);
        }
    }
}

impl StreamableLeg {
    fn request(&self, method: Method) -> reqwest::RequestBuilder {
        let session = lock(&self.session);
        let mut req = self.web.client.request(method, self.endpoint.clone());
        if let Some(id) = &session.id {
            req = req.header(SESSION_HEADER, id.clone());
        }
        if let Some(v) = &session.version {
            req = req.header(VERSION_HEADER, v.clone());
        }
        req
    }

    /// POSTs one frame and forwards what comes back; fires `received` once the server has it.
    async fn post_frame(
        self: &Arc<Self>,
        frame: String,
        head: Frame,
        out: Out,
        received: Received,
    ) -> Result<(), PostError> {
        if head.is_modern() {
            return self
                .modern
                .post(&self.web, &self.endpoint, frame, head, &out)
                .await;
        }
        if self.modern.intercepts(&head) {
            return Ok(());
        }
        if let Some(id) = head.request.clone() {
            // Ended once its cancellation was posted: nobody waits for its answer any more.
            let mut started = self.pending.start(&id);
            return tokio::select! {
                biased;
                () = started.aborted() => Ok(()),
                result = self.post_handshake(frame, head, out, received) => result,
            };
        }
        let cancellation = (head.method.as_deref() == Some("notifications/cancelled"))
            .then(|| head.cancels.clone());
        let result = self.post_handshake(frame, head, out, received).await;
        if let Some(named) = cancellation {
            self.pending.cancelled(named.as_ref());
        }
        result
    }

    /// POSTs one frame of the handshake era and forwards what comes back; fires `received`
    /// once the server has it.
    async fn post_handshake(
        self: &Arc<Self>,
        frame: String,
        head: Frame,
        out: Out,
        mut received: Received,
    ) -> Result<(), PostError> {
        // The request whose response the answer must bring (none for notifications).
        let Frame {
            method, request, ..
        } = head;
        let initialize = method.as_deref() == Some("initialize");
        if initialize {
            self.modern.initializing();
            lock(&self.session).initialize_id = request.clone();
        }
        let had_session = lock(&self.session).id.is_some();
        let exchange = format!("POST of {}", method.as_deref().unwrap_or("a response"));
        // A request's answer may come only once the call is done; anything else is answered
        // at once.
        let wait = if request.is_some() {
            Wait::Call(&exchange)
        } else {
            Wait::Prompt(&exchange)
        };
        let started = tokio::time::Instant::now();
        let sent = self
            .web
            .send(
                self.request(Method::POST)
                    .header(ACCEPT, "application/json, text/event-stream")
                    .header(CONTENT_TYPE, "application/json")
                    .body(frame),
                wait,
            )
            .await;
        let response = match sent {
            Ok(response) => {
                lock(&self.session).cut_off = 0;
                response
            }
            // A notification or a response the server does not answer within the header
            // bound is cut off, reported, and no longer holds the frames after it back; the
            // link is stuck (and fails, so the table reconnects) only when the next one is not
            // answered either, nothing having been answered in between.
            Err(e) if request.is_none() && super::web::is_no_answer(&e) => {
                let cut_off = {
                    let mut session = lock(&self.session);
                    session.cut_off += 1;
                    session.cut_off
                };
                if cut_off >= STUCK_AFTER {
                    return Err(e.into());
                }
                tracing::warn!(target: "mcp::http", error = %e,
                    "cut off unanswered: the frames after it go out");
                return Ok(());
            }
            Err(e) => return Err(e.into()),
        };
        let status = response.status();
        // Refused for want of authorization, and the client can authorize: the table decides
        // (an authorization, then the request again).
        if let Some(id) = &request
            && let Some(refusal) = self.web.auth_refusal(&response, id)
        {
            self.deliver(refusal, &out, false).await;
            return Ok(());
        }
        // The server no longer knows the session: a 404, or a 400 that says so (some servers
        // answer an unknown session that way). The request never ran: the machine sends it
        // again on the next session.
        if had_session && status == StatusCode::NOT_FOUND {
            return Err(self.expired(request.as_ref()).into());
        }
        if had_session && status == StatusCode::BAD_REQUEST {
            let body = read_capped(response, UNKNOWN_SESSION_BODY)
                .await
                .unwrap_or_default();
            if names_session(&body) {
                return Err(self.expired(request.as_ref()).into());
            }
            return Err(PostError::Fail(TransportError::Http {
                status: 400,
                reason: format!("to a POST of {}", method.as_deref().unwrap_or("a response")),
            }));
        }
        if !status.is_success() {
            let error = TransportError::Http {
                status: status.as_u16(),
                reason: format!("to a POST of {}", method.as_deref().unwrap_or("a response")),
            };
            if initialize && !had_session && matches!(status.as_u16(), 400 | 404 | 405) {
                // A 2026-07-28 server refuses `initialize` with a modern error in the body: that
                // answer goes to the machine (which asks the server again as a modern one),
                // never to the fallback.
                let body = read_capped(response, UNKNOWN_SESSION_BODY)
                    .await
                    .unwrap_or_default();
                if is_modern_refusal(&body) {
                    self.deliver(one_line(&body), &out, false).await;
                    return Ok(());
                }
                // The backwards-compatibility rule: a server of the 2024-11-05 transport
                // refuses the POST of initialize this way.
                return Err(PostError::Fallback(error));
            }
            return Err(PostError::Fail(error));
        }
        if let Some(id) = response.headers().get(SESSION_HEADER) {
            if !id.as_bytes().iter().all(|b| (0x21..=0x7e).contains(b)) {
                return Err(TransportError::Protocol {
                    reason: "the Mcp-Session-Id is not visible ASCII".into(),
                }
                .into());
            }
            let mut session = lock(&self.session);
            if session.id.is_none() {
                session.id = Some(id.clone());
                if let Ok(text) = id.to_str() {
                    *self.session_id.lock().unwrap_or_else(|e| e.into_inner()) =
                        Some(text.to_owned());
                }
            }
        }
        if method.as_deref() == Some("notifications/initialized")
            && let Some(opened) = self.start_get_stream(&out)
        {
            // What the server sends on its own may go only to the GET stream (and be dropped
            // while none is open): the frames after `initialized` wait until it is open, or
            // refused, at most twice as long as the server took to answer `initialized`
            // (between GET_STREAM_OPEN_MIN and GET_STREAM_OPEN_WAIT), so that a GET the server
            // never answers does not hold them back longer than its own answers do.
            let wait = started
                .elapsed()
                .saturating_mul(2)
                .clamp(GET_STREAM_OPEN_MIN, GET_STREAM_OPEN_WAIT);
            let _ = tokio::time::timeout(wait, opened).await;
        }
        // The server has the frame: the next ones may go while its answer is read.
        received.fire();
        let method = method.as_deref().unwrap_or("a response");
        if status == StatusCode::ACCEPTED || status == StatusCode::NO_CONTENT {
            if let Some(id) = &request {
                // A request's answer must hold its response: it would be waited for in vain.
                self.deliver(modern::no_response(id, method, status), &out, false)
                    .await;
            }
            return Ok(());
        }
        if is_sse(&response) {
            self.forward_post_stream(response, request.as_ref(), &out)
                .await?;
            return Ok(());
        }
        let body = read_capped(response, self.web.max_frame_bytes).await?;
        let Some(id) = &request else {
            if !body.iter().all(u8::is_ascii_whitespace) {
                self.deliver(into_one_line(body), &out, false).await;
            }
            return Ok(());
        };
        // A request's JSON answer holds its response; an empty body, one that is not JSON (an
        // SSE stream served as `application/json`), or JSON that answers something else, fail
        // the request at once, as in the 2026-07-28 era.
        if serde_json::from_slice::<IgnoredAny>(&body).is_err() {
            self.deliver(modern::no_response(id, method, status), &out, false)
                .await;
            return Ok(());
        }
        // Read once, by `deliver`, for the id it answers.
        let answered = self.deliver(into_one_line(body), &out, true).await;
        if answered.as_ref() != Some(id) {
            self.deliver(modern::no_response(id, method, status), &out, false)
                .await;
        }
        Ok(())
    }

    /// The session ended; `refused` is the id of the request whose POST the server refused
    /// for it (it never ran), added to those refused before on this link.
    fn expired(&self, refused: Option<&Value>) -> TransportError {
        let mut session = lock(&self.session);
        if let Some(id) = refused.and_then(Value::as_u64) {
            session.refused.push(id);
        }
        let hint = session
            .id
            .as_ref()
            .and_then(|v| v.to_str().ok())
            .map(|s| s.chars().take(8).collect())
            .unwrap_or_default();
        TransportError::SessionExpired {
            session_hint: hint,
            refused: session.refused.clone(),
        }
    }

    /// Hands one message to the transport; learns the protocol version from the `initialize`
    /// answer on the way. Returns the id the message answers, when it is a response and
    /// `want_id` asks for it (the message is read only for that, or while the `initialize`
    /// answer is awaited).
    async fn deliver(&self, message: Vec<u8>, out: &Out, want_id: bool) -> Option<Value> {
        let awaiting = lock(&self.session).initialize_id.clone();
        let answers = if want_id || awaiting.is_some() {
            serde_json::from_slice::<ResponseHead>(&message)
                .ok()
                .filter(|h| h.method.is_none())
                .and_then(|h| h.id)
        } else {
            None
        };
        if let Some(init_id) = awaiting
            && answers.as_ref() == Some(&init_id)
            && let Ok(v) = serde_json::from_slice::<Value>(&message)
        {
            let version = v
                .get("result")
                .and_then(|r| r.get("protocolVersion"))
                .and_then(|p| p.as_str())
                .and_then(|p| HeaderValue::from_str(p).ok());
            let mut session = lock(&self.session);
            session.initialize_id = None;
            session.version = version;
        }
        out.deliver(message).await;
        answers
    }

    /// Forwards the messages of an SSE stream until it ends, or until the response to
    /// `request` was delivered; keeps the stream's position in `cursor`.
    async fn forward(
        &self,
        events: &mut SseEvents,
        cursor: &mut Cursor,
        request: Option<&Value>,
        out: &Out,
    ) -> Result<(), SseError> {
        loop {
            let next = events.next().await;
            cursor.note(events);
            let Some(event) = next? else {
                return Ok(());
            };
            let Some(message) = message_of(event) else {
                continue; // a priming event, another event type
            };
            let answers = self.deliver(message, out, request.is_some()).await;
            cursor.delivered = true;
            if request.is_some() && answers.as_ref() == request {
                cursor.answered = true;
                return Ok(());
            }
        }
    }

    /// Opens a GET stream, resuming after `last_id` when given.
    async fn get(&self, last_id: Option<&str>) -> Result<reqwest::Response, TransportError> {
        let mut get = self
            .request(Method::GET)
            .header(ACCEPT, "text/event-stream");
        if let Some(id) = last_id {
            get = get.header(LAST_EVENT_HEADER, id);
        }
        self.web
            .send(get, Wait::Prompt("GET of an event stream"))
            .await
    }

    /// Forwards a POST's SSE answer, resuming it while the response to `request` is missing.
    async fn forward_post_stream(
        &self,
        response: reqwest::Response,
        request: Option<&Value>,
        out: &Out,
    ) -> Result<(), TransportError> {
        let max = self.web.max_frame_bytes;
        let mut cursor = Cursor::default();
        let mut stream = Some(SseEvents::new(response, max));
        let mut why = String::new();
        let mut attempts = 0;
        let mut resumed = 0;
        loop {
            if let Some(mut events) = stream.take() {
                let result = self.forward(&mut events, &mut cursor, request, out).await;
                if cursor.answered {
                    return Ok(());
                }
                why = match result {
                    Err(SseError::Invalid(e)) => return Err(e),
                    Err(SseError::Broken(e)) => format!("the response stream broke ({e})"),
                    Ok(()) => "the response stream ended".into(),
                };
            }
            if request.is_none() {
                return Ok(()); // nothing is awaited on it
            }
            if std::mem::take(&mut cursor.delivered) {
                attempts = 0;
            }
            let Some(last_id) = cursor.last_id.clone() else {
                return Err(stream_lost(format!(
                    "{why} before the response, and the server gave no event id to resume it"
                )));
            };
            attempts += 1;
            if attempts > RESUME_ATTEMPTS {
                return Err(stream_lost(format!(
                    "{why} before the response; gave up after {RESUME_ATTEMPTS} attempts to resume it"
                )));
            }
            resumed += 1;
            if resumed > RESUMES_PER_REQUEST {
                return Err(stream_lost(format!(
                    "{why} before the response; gave up after resuming it {RESUMES_PER_REQUEST} times (the limit per request)"
                )));
            }
            tokio::time::sleep(reconnect_wait(cursor.retry, attempts)).await;
            tracing::debug!(target: "mcp::http", attempts, "resuming a response stream");
            let response = match self.get(Some(&last_id)).await {
                Ok(r) => r,
                Err(e) => {
                    why = format!("resuming the response stream failed ({e})");
                    continue;
                }
            };
            let status = response.status();
            if status == StatusCode::NOT_FOUND && lock(&self.session).id.is_some() {
                return Err(self.expired(None));
            }
            if !status.is_success() || !is_sse(&response) {
                return Err(TransportError::Http {
                    status: status.as_u16(),
                    reason: "to the GET resuming a response stream".into(),
                });
            }
            stream = Some(SseEvents::new(response, max).resuming(&last_id));
        }
    }

    /// Opens the standalone GET stream once, in the background, for the link's lifetime.
    /// Starts the standalone GET stream (once per link); the receiver is told when the server
    /// first answered it (or the attempt failed).
    fn start_get_stream(self: &Arc<Self>, out: &Out) -> Option<oneshot::Receiver<()>> {
        {
            let mut session = lock(&self.session);
            if session.get_started {
                return None;
            }
            session.get_started = true;
        }
        let (opened, rx) = oneshot::channel();
        let leg = Arc::clone(self);
        let out2 = out.clone();
        out.spawn(async move { leg.get_stream(out2, opened).await });
        Some(rx)
    }

    async fn get_stream(&self, out: Out, opened: oneshot::Sender<()>) {
        let mut opened = Some(opened);
        let mut cursor = Cursor::default();
        let mut quiet = 0;
        let mut budget = ReopenBudget::default();
        while quiet < GET_STREAM_ATTEMPTS {
            // Whatever the streams bring, at most REOPENS_PER_WINDOW openings a minute.
            let wait = budget.take(tokio::time::Instant::now());
            if !wait.is_zero() {
                tracing::debug!(target: "mcp::http", ?wait, "GET stream reopened too often: waiting");
                tokio::time::sleep(wait).await;
            }
            let response = self.get(cursor.last_id.as_deref()).await;
            if let Some(opened) = opened.take() {
                let _ = opened.send(());
            }
            let response = match response {
                Ok(r) => r,
                Err(e) => {
                    tracing::debug!(target: "mcp::http", error = %e, "GET stream failed");
                    quiet += 1;
                    tokio::time::sleep(reconnect_wait(cursor.retry, quiet)).await;
                    continue;
                }
            };
            match response.status() {
                StatusCode::METHOD_NOT_ALLOWED => {
                    tracing::debug!(target: "mcp::http", "the server offers no GET stream");
                    return;
                }
                StatusCode::NOT_FOUND if lock(&self.session).id.is_some() => {
                    return out.fail(self.expired(None));
                }
                s if !s.is_success() || !is_sse(&response) => {
                    tracing::debug!(target: "mcp::http", status = s.as_u16(), "GET stream refused");
                    return;
                }
                _ => {}
            }
            let mut events = SseEvents::new(response, self.web.max_frame_bytes)
                .resuming(cursor.last_id.as_deref().unwrap_or(""));
            if let Err(SseError::Invalid(e)) =
                self.forward(&mut events, &mut cursor, None, &out).await
            {
                return out.fail(e);
            }
            // A normal end does not reset the budget: only a message does.
            if std::mem::take(&mut cursor.delivered) {
                quiet = 0;
            } else {
                quiet += 1;
            }
            tokio::time::sleep(reconnect_wait(cursor.retry, quiet.max(1))).await;
        }
        tracing::debug!(target: "mcp::http", "the GET stream brought nothing: not opened again");
    }

    /// Sends `DELETE` for the session, unless the server already ended it.
    async fn delete(&self, ended: Option<TransportError>) {
        let (id, version) = {
            let session = lock(&self.session);
            (session.id.clone(), session.version.clone())
        };
        let expired = matches!(ended, Some(TransportError::SessionExpired { .. }));
        let Some(id) = id.filter(|_| !expired) else {
            return;
        };
        let mut delete = self
            .web
            .client
            .delete(self.endpoint.clone())
            .header(SESSION_HEADER, id);
        if let Some(version) = version {
            delete = delete.header(VERSION_HEADER, version);
        }
        match self
            .web
            .send(delete, Wait::Prompt("DELETE of the session"))
            .await
        {
            Ok(r) => {
                tracing::debug!(target: "mcp::http", status = r.status().as_u16(), "session deleted")
            }
            Err(e) => tracing::debug!(target: "mcp::http", error = %e, "DELETE failed"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_400_naming_the_session_is_an_expiry() {
        assert!(names_session(
            br#"{"error":"Bad Request: No valid session ID provided"}"#
        ));
        assert!(names_session(b"Unknown SESSION"));
        assert!(!names_session(b"Bad Request: invalid JSON"));
        assert!(!names_session(&[0xff, 0xfe]));
    }

    #[test]
    fn only_http_urls() {
        assert!(HttpConnector::new("ftp://x/mcp").is_err());
        assert!(HttpConnector::new("not a url").is_err());
        let c = HttpConnector::new("http://127.0.0.1:9/mcp").unwrap();
        assert_eq!(c.describe(), "http: http://127.0.0.1:9/mcp");
    }

    #[test]
    fn debug_output_shows_header_names_not_values() {
        let c = AutoHttpConnector::new("http://127.0.0.1:9/mcp")
            .unwrap()
            .header("Authorization", "Bearer top-secret")
            .unwrap();
        let shown = format!("{c:?}");
        assert!(shown.contains("authorization"), "{shown}");
        assert!(!shown.contains("top-secret"), "{shown}");
        assert!(c.clone().header("x-key", "a\r\nb").is_err());
        assert_eq!(c.verdict(), None);
    }
}
