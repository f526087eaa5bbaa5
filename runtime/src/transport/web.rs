//! What the HTTP transports ([`super::http`], [`super::sse`]) share: the HTTP client and its
//! options (static headers, the bounds, the frame limit), sending one request within its
//! bound, reading a body or an SSE stream without buffering past the frame limit, and the wait
//! before opening a stream again.
//!
//! The bounds of every HTTP request:
//! - connecting (DNS, TCP, TLS) takes at most the connect bound
//!   ([`DEFAULT_HTTP_CONNECT_TIMEOUT`], 10 s): a black-hole address fails with
//!   [`TransportError::Connect`] of kind `TimedOut`;
//! - an exchange whose answer comes at once (the `POST` of a notification or of a response, a
//!   `GET`, the `DELETE`) gets its response headers within the header bound
//!   ([`DEFAULT_HTTP_HEADER_TIMEOUT`], 10 s), else it fails with [`TransportError::Io`] of
//!   kind `TimedOut` whose source is a [`NoAnswer`] naming the exchange ("the server did not
//!   answer the POST of notifications/initialized within 10 s"): the link ends, but for a
//!   Streamable HTTP notification or response, which is cut off once (see `http`);
//! - the `POST` of a request has no header bound by default (a server may answer it with JSON
//!   only once the call is done: the MCP request timeout bounds the call); the HTTP timeout,
//!   when set, bounds every request, that one included (and the header bound too, when shorter).
//!
//! Not a transport: it opens no link and decides nothing.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, Bytes};
use futures_util::StreamExt;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

use super::event_stream::{Event, EventStream, EventStreamError};
use super::{IoCause, TransportError};

/// Headers the HTTP transports set themselves (lower case); a static header may not replace
/// them: a user's value would break the session or the framing. Names starting with
/// [`RESERVED_PREFIX`] are the transport's too.
pub const RESERVED_HEADERS: &[&str] = &[
    "accept",
    "connection",
    "content-length",
    "content-type",
    "host",
    "last-event-id",
    "mcp-method",
    "mcp-name",
    "mcp-protocol-version",
    "mcp-session-id",
    "transfer-encoding",
];

/// The prefix of the headers a modern `tools/call` carries for its tool (`Mcp-Param-*`, lower
/// case): a static header may not take such a name.
pub const RESERVED_PREFIX: &str = "mcp-param-";

/// Default bound on opening the connection of an HTTP request (DNS, TCP, TLS): 10 s.
pub const DEFAULT_HTTP_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Default bound on the response headers of an HTTP exchange whose answer comes at once (the
/// `POST` of a notification or of a response, a `GET`, the `DELETE`): 10 s. Not applied to the
/// `POST` of a request, whose answer may come only once the call is done.
pub const DEFAULT_HTTP_HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// An HTTP request whose response headers did not come within its bound: the source of the
/// [`TransportError::Io`] (kind `TimedOut`) that ends the link. It names the exchange (`POST of
/// notifications/initialized`, `GET of the event stream`) and the bound; nothing else (no URL,
/// no header).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the server did not answer the {exchange} within {}", fmt_bound(*.bound))]
#[non_exhaustive]
pub struct NoAnswer {
    /// The exchange that got no answer ("POST of notifications/initialized").
    pub exchange: String,
    /// The bound that ran out.
    pub bound: Duration,
}

/// "300 ms", "10 s", "2.5 s".
pub(crate) fn fmt_bound(d: Duration) -> String {
    if d < Duration::from_secs(1) {
        format!("{} ms", d.as_millis())
    } else if d.subsec_millis() == 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

/// What an HTTP request waits for, which says its bound; with the exchange's name for the
/// error that reports a bound run out ("POST of notifications/initialized").
#[derive(Clone, Copy, Debug)]
pub(crate) enum Wait<'a> {
    /// An answer that comes at once (the `POST` of a notification or of a response, a `GET`,
    /// the `DELETE`): the header bound, or the HTTP timeout when shorter.
    Prompt(&'a str),
    /// The `POST` of a request, whose answer may come only once the call is done: only the
    /// HTTP timeout, when one is set.
    Call(&'a str),
}

/// The longest wait between two attempts to open a stream when the server gave no `retry`.
const MAX_WAIT: Duration = Duration::from_secs(30);
/// The first wait when the server gave no `retry`.
const FIRST_WAIT: Duration = Duration::from_secs(1);
/// The shortest wait between two attempts to open a stream, whatever `retry` the server gave:
/// `retry: 0` would otherwise have a stream that breaks resumed hundreds of times a second.
pub const MIN_RETRY: Duration = Duration::from_millis(250);

/// Whether `e` is an exchange that got no answer within its bound ([`NoAnswer`]).
pub(crate) fn is_no_answer(e: &TransportError) -> bool {
    match e {
        TransportError::Io(io) if io.kind() == std::io::ErrorKind::TimedOut => {
            io.0.get_ref()
                .is_some_and(|inner| inner.downcast_ref::<NoAnswer>().is_some())
        }
        _ => false,
    }
}

/// The HTTP client and the options every request of an HTTP transport uses.
#[derive(Clone)]
pub(crate) struct WebOptions {
    pub(crate) client: reqwest::Client,
    /// Static headers, sent on every request; their values are marked sensitive.
    pub(crate) headers: HeaderMap,
    pub(crate) max_frame_bytes: usize,
    /// Bound on the teardown request at close (`DELETE`).
    pub(crate) grace: Duration,
    /// Bound on connecting plus receiving the response headers of each request, the `POST` of
    /// a request included (none by default).
    pub(crate) http_timeout: Option<Duration>,
    /// Bound on connecting (DNS, TCP, TLS); the client was built with it.
    connect_timeout: Duration,
    /// Bound on the response headers of an exchange whose answer comes at once.
    pub(crate) header_timeout: Duration,
    /// The MCP endpoint (the key of its tokens, and the origin a token may go to).
    pub(crate) endpoint: Option<reqwest::Url>,
    /// Where the bearer token of the endpoint comes from, when the client is authorized.
    pub(crate) oauth: Option<crate::auth::OAuth>,
    /// The HTTP version of the latest response (shared by every clone: the connector reads
    /// what its links saw), for telemetry's `network.protocol.version`.
    http_version: HttpVersionSlot,
}

/// The HTTP version of the latest response of a connector's links (0: none yet).
#[derive(Clone, Debug, Default)]
pub(crate) struct HttpVersionSlot(Arc<std::sync::atomic::AtomicU8>);

impl HttpVersionSlot {
    fn set(&self, version: reqwest::Version) {
        let code = match version {
            reqwest::Version::HTTP_09 => 1,
            reqwest::Version::HTTP_10 => 2,
            reqwest::Version::HTTP_11 => 3,
            reqwest::Version::HTTP_2 => 4,
            reqwest::Version::HTTP_3 => 5,
            _ => 0,
        };
        self.0.store(code, std::sync::atomic::Ordering::Relaxed);
    }

    /// The version as the conventions write it (`1.1`, `2`), once a response came.
    pub(crate) fn get(&self) -> Option<&'static str> {
        match self.0.load(std::sync::atomic::Ordering::Relaxed) {
            1 => Some("0.9"),
            2 => Some("1.0"),
            3 => Some("1.1"),
            4 => Some("2"),
            5 => Some("3"),
            _ => None,
        }
    }
}

impl fmt::Debug for WebOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Header values can be credentials: names only.
        f.debug_struct("WebOptions")
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .field("max_frame_bytes", &self.max_frame_bytes)
            .field("grace", &self.grace)
            .field("http_timeout", &self.http_timeout)
            .field("connect_timeout", &self.connect_timeout)
            .field("header_timeout", &self.header_timeout)
            .field("oauth", &self.oauth.is_some())
            .finish_non_exhaustive()
    }
}

impl WebOptions {
    /// The defaults: no redirects followed, proxies from the environment (`HTTP_PROXY`,
    /// `HTTPS_PROXY`, `ALL_PROXY`, `NO_PROXY`: reqwest's default), no static header, the
    /// default connect and header bounds, no HTTP timeout.
    pub(crate) fn new(grace: Duration) -> Result<Self, TransportError> {
        Ok(WebOptions {
            client: build_client(DEFAULT_HTTP_CONNECT_TIMEOUT)?,
            headers: HeaderMap::new(),
            max_frame_bytes: super::DEFAULT_MAX_FRAME_BYTES,
            grace,
            http_timeout: None,
            connect_timeout: DEFAULT_HTTP_CONNECT_TIMEOUT,
            header_timeout: DEFAULT_HTTP_HEADER_TIMEOUT,
            endpoint: None,
            oauth: None,
            http_version: HttpVersionSlot::default(),
        })
    }

    /// The HTTP version of the latest response any link of these options received.
    pub(crate) fn http_version(&self) -> Option<&'static str> {
        self.http_version.get()
    }

    /// Bounds connecting (DNS, TCP, TLS) by `bound`: the client is built again with it.
    pub(crate) fn set_connect_timeout(&mut self, bound: Duration) -> Result<(), TransportError> {
        self.client = build_client(bound)?;
        self.connect_timeout = bound;
        Ok(())
    }

    /// The bound on the response headers of a request that waits for `wait`.
    fn bound(&self, wait: Wait<'_>) -> Option<Duration> {
        match wait {
            Wait::Prompt(_) => Some(
                self.http_timeout
                    .map_or(self.header_timeout, |t| t.min(self.header_timeout)),
            ),
            Wait::Call(_) => self.http_timeout,
        }
    }

    /// Adds (or replaces) a static header. The value is never shown in an error, a log or a
    /// `Debug` output.
    pub(crate) fn set_header(&mut self, name: &str, value: &str) -> Result<(), TransportError> {
        let invalid = |reason: String| TransportError::Http { status: 0, reason };
        let header = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| invalid(format!("invalid header name {name:?}")))?;
        if RESERVED_HEADERS.contains(&header.as_str())
            || header.as_str().starts_with(RESERVED_PREFIX)
        {
            return Err(invalid(format!(
                "the header {header} is set by the transport itself"
            )));
        }
        // Refuses CR, LF and every other control character but tab.
        let mut value = HeaderValue::from_str(value).map_err(|_| {
            invalid(format!(
                "the value of the header {header} holds a character a header may not carry (CR, LF, another control character or non-ASCII)"
            ))
        })?;
        value.set_sensitive(true);
        self.headers.insert(header, value);
        Ok(())
    }

    /// Sends `request`, bounding connect plus response headers by the bound of what it waits
    /// for (see the module's documentation); a bound run out is a [`TransportError::Io`] of
    /// kind `TimedOut` whose source is a [`NoAnswer`] naming the exchange.
    /// A request to the endpoint's origin carries the endpoint's bearer token when the client
    /// is authorized ([`crate::auth::OAuth::bearer`]); a request anywhere else never does.
    pub(crate) async fn send(
        &self,
        request: reqwest::RequestBuilder,
        wait: Wait<'_>,
    ) -> Result<reqwest::Response, TransportError> {
        let mut request = request.headers(self.headers.clone());
        if let (Some(oauth), Some(endpoint)) = (&self.oauth, &self.endpoint)
            && let Some(token) = oauth.bearer(endpoint).await
            && let Ok(mut value) = HeaderValue::from_str(&format!("Bearer {}", token.expose()))
        {
            value.set_sensitive(true);
            let same_origin = request
                .try_clone()
                .and_then(|r| r.build().ok())
                .is_some_and(|r| r.url().origin() == endpoint.origin());
            if same_origin {
                // Replaces a static `Authorization` header rather than adding a second one.
                let mut bearer = HeaderMap::new();
                bearer.insert(reqwest::header::AUTHORIZATION, value);
                request = request.headers(bearer);
            }
        }
        let send = request.send();
        let response = match self.bound(wait) {
            Some(bound) => tokio::time::timeout(bound, send).await.map_err(|_| {
                let exchange = match wait {
                    Wait::Prompt(what) | Wait::Call(what) => what.to_owned(),
                };
                TransportError::Io(IoCause::new(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    NoAnswer { exchange, bound },
                )))
            })?,
            None => send.await,
        };
        if let Ok(r) = &response {
            self.http_version.set(r.version());
        }
        response.map_err(|e| request_error(e, self.connect_timeout))
    }

    /// The made-up AUTH_REQUIRED answer for the request `id` when `response` refused it for
    /// want of authorization and this client can authorize (OAuth is configured): a 401, or a
    /// 403 whose Bearer challenge says `insufficient_scope`. The table decides what follows
    /// (an authorization, then the request again, within a budget). `None` otherwise: the
    /// status is handled as any HTTP error.
    pub(crate) fn auth_refusal(
        &self,
        response: &reqwest::Response,
        id: &serde_json::Value,
    ) -> Option<Vec<u8>> {
        self.oauth.as_ref()?;
        let status = response.status().as_u16();
        let challenges: Vec<&str> = response
            .headers()
            .get_all(reqwest::header::WWW_AUTHENTICATE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .collect();
        let insufficient = crate::auth::Challenge::parse(challenges.iter().copied())
            .is_some_and(|c| c.is_insufficient_scope());
        if !(status == 401 || (status == 403 && insufficient)) {
            return None;
        }
        let reason = response.status().canonical_reason().unwrap_or("refused");
        let error = serde_json::json!({
            "code": mcp_machine::codes::AUTH_REQUIRED,
            "message": format!("HTTP {status} {reason}"),
            "data": {"httpStatus": status, "wwwAuthenticate": challenges.join(", ")},
        });
        let frame = serde_json::json!({"jsonrpc": "2.0", "id": id, "error": error});
        Some(frame.to_string().into_bytes())
    }
}

/// The options every HTTP connector takes, as builder methods of `$connector` (a struct with
/// a `web: WebOptions` field).
macro_rules! web_options {
    ($connector:ty) => {
        impl $connector {
            /// Largest message accepted from the server (the client's frame limit: 16 MiB); a
            /// JSON body or an SSE event over it ends the link (it is never buffered whole).
            pub fn max_frame_bytes(mut self, bytes: usize) -> Self {
                self.web.max_frame_bytes = bytes;
                self
            }

            /// A static header sent on every request (an `Authorization` token, an API key),
            /// replacing an earlier one of the same name. Fails, before anything is sent, on an
            /// invalid name, a value with CR, LF or another control character, or a header the
            /// transport sets itself (`Accept`, `Content-Type`, `Mcp-Session-Id`,
            /// `MCP-Protocol-Version`, `Last-Event-ID`, …). The value never appears in errors,
            /// logs or `Debug` output.
            pub fn header(mut self, name: &str, value: &str) -> Result<Self, TransportError> {
                self.web.set_header(name, value)?;
                Ok(self)
            }

            /// Bounds connecting plus receiving the response headers of each HTTP request,
            /// the `POST` of a request included (none by default); not the length of an SSE
            /// stream, and not the MCP request timeout. A request over it ends the link with
            /// [`TransportError::Io`] of kind `TimedOut`. A server that answers a POST with
            /// JSON only once the call is done needs a bound above its longest call.
            pub fn http_timeout(mut self, timeout: std::time::Duration) -> Self {
                self.web.http_timeout = Some(timeout);
                self
            }

            /// Bounds opening the connection of each HTTP request: DNS, TCP and TLS
            /// ([`DEFAULT_HTTP_CONNECT_TIMEOUT`](crate::transport::DEFAULT_HTTP_CONNECT_TIMEOUT),
            /// 10 s). Past it the request fails with [`TransportError::Connect`] of kind
            /// `TimedOut`.
            pub fn connect_timeout(mut self, timeout: std::time::Duration) -> Self {
                if let Err(e) = self.web.set_connect_timeout(timeout) {
                    tracing::warn!(target: "mcp::http", error = %e,
                        "the HTTP client could not be built with the connect bound: kept as it was");
                }
                self
            }

            /// Bounds the response headers of the exchanges whose answer comes at once: the
            /// `POST` of a notification or of a response, a `GET`, the `DELETE`
            /// ([`DEFAULT_HTTP_HEADER_TIMEOUT`](crate::transport::DEFAULT_HTTP_HEADER_TIMEOUT),
            /// 10 s; the HTTP timeout instead when shorter). Not the `POST` of a request. An
            /// exchange over it ends the link with [`TransportError::Io`] of kind `TimedOut`,
            /// whose source is a [`NoAnswer`](crate::transport::NoAnswer) naming it; so a
            /// notification the server never answers holds the requests after it back for
            /// that long at most.
            pub fn header_timeout(mut self, timeout: std::time::Duration) -> Self {
                self.web.header_timeout = timeout;
                self
            }

            /// Changes its options in place (the builder's one path to every HTTP connector).
            pub(crate) fn edit_web(
                &mut self,
                f: &dyn Fn(&mut $crate::transport::WebOptions) -> Result<(), TransportError>,
            ) -> Result<(), TransportError> {
                f(&mut self.web)
            }
        }
    };
}
pub(crate) use web_options;

/// Parses an `http://` or `https://` URL.
pub(crate) fn parse_url(url: &str) -> Result<reqwest::Url, TransportError> {
    let parsed = reqwest::Url::parse(url).map_err(|e| TransportError::Http {
        status: 0,
        reason: format!("invalid endpoint URL: {e}"),
    })?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(TransportError::Http {
            status: 0,
            reason: format!("not an http(s) URL: {}", parsed.scheme()),
        });
    }
    Ok(parsed)
}

/// Whether an answer is an SSE stream.
pub(crate) fn is_sse(response: &reqwest::Response) -> bool {
    response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"))
}

/// `bytes` as one line: a JSON text's raw line breaks can only be whitespace between tokens
/// (inside strings they are escaped), so they become spaces.
pub(crate) fn one_line(bytes: &[u8]) -> Vec<u8> {
    into_one_line(bytes.to_vec())
}

/// [`one_line`] of bytes already owned, in place: no copy.
pub(crate) fn into_one_line(mut bytes: Vec<u8>) -> Vec<u8> {
    for b in &mut bytes {
        if *b == b'\n' || *b == b'\r' {
            *b = b' ';
        }
    }
    bytes
}

/// The body of a JSON answer, failing once it passes `max` bytes (never buffered past it).
pub(crate) async fn read_capped(
    response: reqwest::Response,
    max: usize,
) -> Result<Vec<u8>, TransportError> {
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(body_error)?;
        if body.len() + chunk.len() > max {
            return Err(TransportError::Oversized {
                seen: body.len() + chunk.len(),
                max,
            });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// The HTTP client of the transports, connecting within `connect`.
fn build_client(connect: Duration) -> Result<reqwest::Client, TransportError> {
    reqwest::Client::builder()
        // A redirect could carry our headers (the session id, a token) elsewhere.
        .redirect(reqwest::redirect::Policy::none())
        // A listen's stream may stay quiet for hours: a peer that vanished (no FIN, no
        // RST) is found by TCP keepalive rather than by a timeout on a legitimate silence.
        .tcp_keepalive(Duration::from_secs(30))
        .connect_timeout(connect)
        .build()
        .map_err(|e| {
            TransportError::Connect(IoCause::new(std::io::Error::other(RequestFailed::new(e))))
        })
}

/// A failed request (connect, TLS, a broken or malformed answer): its message is its whole
/// chain of causes, as reqwest's own message ("error sending request") says nothing of why;
/// its source is the reqwest error (without the URL).
#[derive(Debug)]
struct RequestFailed {
    message: String,
    source: reqwest::Error,
}

impl RequestFailed {
    fn new(e: reqwest::Error) -> Self {
        let source = e.without_url();
        RequestFailed {
            message: chain(&source),
            source,
        }
    }
}

impl fmt::Display for RequestFailed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for RequestFailed {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

/// An error and its causes in one line, outermost first, joined by `: ` (a cause its outer
/// error already spells out is not repeated); at most 8 causes and 1024 characters.
pub(crate) fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    let mut depth = 0;
    while let Some(c) = cause {
        depth += 1;
        if depth > 8 {
            break;
        }
        let part = c.to_string();
        if !part.is_empty() && !text.contains(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        cause = c.source();
    }
    if text.len() > 1024 {
        let mut end = 1024;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push('…');
    }
    text
}

/// The kind of the first `io::Error` among the causes of `e`.
fn io_kind(e: &(dyn std::error::Error + 'static)) -> Option<std::io::ErrorKind> {
    let mut cause = Some(e);
    while let Some(c) = cause {
        if let Some(io) = c.downcast_ref::<std::io::Error>() {
            return Some(io.kind());
        }
        cause = c.source();
    }
    None
}

/// A `reqwest` error as a transport error, with its causes and without the URL (its query
/// could hold a secret): a connect failure is [`TransportError::Connect`] (kind `TimedOut`
/// when the connect bound `connect` ran out), anything else [`TransportError::Io`].
pub(crate) fn request_error(e: reqwest::Error, connect: Duration) -> TransportError {
    let failed = RequestFailed::new(e);
    let kind = io_kind(&failed.source);
    if failed.source.is_connect() {
        let timed_out = failed.source.is_timeout() || kind == Some(std::io::ErrorKind::TimedOut);
        let error = if timed_out {
            let message = format!("could not connect within {} ({failed})", fmt_bound(connect));
            let failed = RequestFailed { message, ..failed };
            std::io::Error::new(std::io::ErrorKind::TimedOut, failed)
        } else {
            std::io::Error::new(
                kind.unwrap_or(std::io::ErrorKind::ConnectionRefused),
                failed,
            )
        };
        TransportError::Connect(IoCause::new(error))
    } else {
        let kind = if failed.source.is_timeout() {
            std::io::ErrorKind::TimedOut
        } else {
            kind.unwrap_or(std::io::ErrorKind::Other)
        };
        TransportError::Io(IoCause::new(std::io::Error::new(kind, failed)))
    }
}

/// A `reqwest` error met while reading a body, with its causes and without the URL.
pub(crate) fn body_error(e: reqwest::Error) -> TransportError {
    let failed = RequestFailed::new(e);
    let kind = io_kind(&failed.source).unwrap_or(std::io::ErrorKind::Other);
    TransportError::Io(IoCause::new(std::io::Error::new(kind, failed)))
}

/// Why reading an SSE stream stopped before its end.
#[derive(Debug)]
pub(crate) enum SseError {
    /// The connection broke: the stream may be resumed.
    Broken(TransportError),
    /// The stream broke the rules (an event over the frame limit): it is not resumed.
    Invalid(TransportError),
}

/// The events of an SSE answer, parsed by the WHATWG rules ([`EventStream`]) as the body
/// arrives: what is held is the event being built and the unfinished line, never more than the
/// frame limit (plus room for field names); comments and events already handed out count for
/// nothing. Keeps the stream's last event id and `retry` for resuming it.
pub(crate) struct SseEvents {
    response: reqwest::Response,
    parser: EventStream,
    /// What is left of the body's last chunk.
    chunk: Bytes,
    max: usize,
}

impl SseEvents {
    /// Reads the SSE stream of `response`; an event's data may not pass `max` bytes.
    pub(crate) fn new(response: reqwest::Response, max: usize) -> Self {
        SseEvents {
            response,
            parser: EventStream::new(max),
            chunk: Bytes::new(),
            max,
        }
    }

    /// The stream resumes one whose last event id was `id`: events without an `id` keep it.
    pub(crate) fn resuming(mut self, id: &str) -> Self {
        self.parser = self.parser.resuming(id);
        self
    }

    /// The last event id the stream set (the one it resumed after, else none); `None` when
    /// empty.
    pub(crate) fn last_event_id(&self) -> Option<&str> {
        Some(self.parser.last_event_id()).filter(|id| !id.is_empty())
    }

    /// The wait the server asked for before a stream is opened again (its last valid `retry`);
    /// [`reconnect_wait`] puts a floor under it.
    pub(crate) fn retry(&self) -> Option<Duration> {
        self.parser.retry().map(Duration::from_millis)
    }

    /// The next event; `Ok(None)` at the stream's normal end (an event it cuts short is
    /// dropped). Cancel-safe: a call dropped while waiting for the body loses nothing.
    pub(crate) async fn next(&mut self) -> Result<Option<Event>, SseError> {
        loop {
            if !self.chunk.is_empty() {
                let mut rest = &self.chunk[..];
                let parsed = self.parser.feed(&mut rest);
                let used = self.chunk.len() - rest.len();
                self.chunk.advance(used);
                match parsed {
                    Ok(Some(event)) => return Ok(Some(event)),
                    Ok(None) => {}
                    Err(EventStreamError::Oversized { seen, .. }) => {
                        return Err(SseError::Invalid(TransportError::Oversized {
                            seen,
                            max: self.max,
                        }));
                    }
                }
            }
            match self.response.chunk().await {
                Ok(Some(chunk)) => self.chunk = chunk,
                Ok(None) => return Ok(None),
                Err(e) => {
                    return Err(SseError::Broken(TransportError::Io(IoCause::new(
                        std::io::Error::other(e.without_url()),
                    ))));
                }
            }
        }
    }
}

/// The message an event carries, as one line: it has data (a priming event has none) and is
/// of the `message` type (the default).
pub(crate) fn message_of(event: Event) -> Option<Vec<u8>> {
    if event.kind() != "message" || event.data.trim().is_empty() {
        return None;
    }
    Some(into_one_line(event.data.into_bytes()))
}

/// The wait before attempt `attempt` (1, 2, …) to open a stream again: the server's `retry`
/// when it gave one (never less than [`MIN_RETRY`]), else 1 s doubling up to 30 s; plus 0–20 %
/// jitter (never less than what the server asked for).
pub(crate) fn reconnect_wait(retry: Option<Duration>, attempt: u32) -> Duration {
    let base = match retry {
        Some(retry) => retry.max(MIN_RETRY),
        None => FIRST_WAIT
            .saturating_mul(1 << attempt.saturating_sub(1).min(5))
            .min(MAX_WAIT),
    };
    base.mul_f64(1.0 + fastrand::f64() * 0.2)
}

/// How many times a standalone stream may be opened again within [`REOPEN_WINDOW`], whatever
/// it brought: a server that sends one message and ends its stream, asking for `retry: 0`,
/// sets no pace of its own past this.
pub const REOPENS_PER_WINDOW: usize = 30;
/// The window [`REOPENS_PER_WINDOW`] counts in.
pub const REOPEN_WINDOW: Duration = Duration::from_secs(60);

/// The times a stream was opened again within the last window: how long the next opening
/// must wait besides its own wait.
#[derive(Debug, Default)]
pub(crate) struct ReopenBudget {
    recent: std::collections::VecDeque<tokio::time::Instant>,
}

impl ReopenBudget {
    /// Records an opening at `now`, and returns how long it must wait first: zero while fewer
    /// than [`REOPENS_PER_WINDOW`] openings fell within the window, else until the oldest of
    /// them leaves it.
    pub(crate) fn take(&mut self, now: tokio::time::Instant) -> Duration {
        while self
            .recent
            .front()
            .is_some_and(|t| now.saturating_duration_since(*t) >= REOPEN_WINDOW)
        {
            self.recent.pop_front();
        }
        let wait = if self.recent.len() >= REOPENS_PER_WINDOW {
            self.recent.front().map_or(Duration::ZERO, |t| {
                (*t + REOPEN_WINDOW).saturating_duration_since(now)
            })
        } else {
            Duration::ZERO
        };
        self.recent.push_back(now + wait);
        if self.recent.len() > REOPENS_PER_WINDOW {
            self.recent.pop_front();
        }
        wait
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reopenings_are_capped_per_window_whatever_they_bring() {
        let mut budget = ReopenBudget::default();
        let start = tokio::time::Instant::now();
        let mut at = start;
        let mut opened = Vec::new();
        // Asked to reopen every 250 ms (the floor) for 3 minutes.
        while at < start + Duration::from_secs(180) {
            at += budget.take(at);
            opened.push(at);
            at += MIN_RETRY;
        }
        // No 60 s window holds more than the cap.
        for (i, t) in opened.iter().enumerate() {
            let within = opened[i..]
                .iter()
                .take_while(|u| u.saturating_duration_since(*t) < REOPEN_WINDOW)
                .count();
            assert!(within <= REOPENS_PER_WINDOW, "{within} in a window");
        }
        // About the cap per minute, not 240.
        assert!(opened.len() <= 4 * REOPENS_PER_WINDOW, "{}", opened.len());
        assert!(opened.len() >= 2 * REOPENS_PER_WINDOW, "{}", opened.len());
    }

    #[test]
    fn one_line_keeps_json_meaning() {
        let pretty = b"{\n  \"a\": \"x\\ny\",\r\n  \"b\": [1,\n2]\n}";
        let line = one_line(pretty);
        assert_eq!(into_one_line(pretty.to_vec()), line);
        assert!(!line.contains(&b'\n'));
        let v: serde_json::Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(v["a"], "x\ny");
        assert_eq!(v["b"], serde_json::json!([1, 2]));
    }

    #[test]
    fn the_servers_retry_has_a_floor() {
        for retry in [0, 1, 249] {
            for attempt in 1..=3 {
                let w = reconnect_wait(Some(Duration::from_millis(retry)), attempt);
                assert!(w >= MIN_RETRY && w <= MIN_RETRY.mul_f64(1.2), "{w:?}");
            }
        }
        // The longest `retry` a stream can carry: a long wait, not a panic.
        let w = reconnect_wait(Some(Duration::from_millis(u64::MAX)), 1);
        assert!(w >= Duration::from_millis(u64::MAX));
    }

    #[test]
    fn the_wait_honours_retry_and_grows_without_it() {
        for attempt in 1..=5 {
            let w = reconnect_wait(Some(Duration::from_millis(500)), attempt);
            assert!(
                w >= Duration::from_millis(500) && w <= Duration::from_millis(600),
                "{w:?}"
            );
        }
        let first = reconnect_wait(None, 1);
        assert!(first >= FIRST_WAIT && first <= FIRST_WAIT.mul_f64(1.2));
        let late = reconnect_wait(None, 40);
        assert!(late >= MAX_WAIT && late <= MAX_WAIT.mul_f64(1.2));
    }

    #[test]
    fn a_chain_says_each_cause_once_and_stays_short() {
        #[derive(Debug)]
        struct Layer(String, Option<Box<Layer>>);
        impl fmt::Display for Layer {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
        impl std::error::Error for Layer {
            fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
                self.1.as_deref().map(|l| l as _)
            }
        }
        let layer = |text: &str, source: Option<Layer>| Layer(text.into(), source.map(Box::new));
        let e = layer(
            "error sending request",
            Some(layer(
                "client error (SendRequest)",
                Some(layer("SendRequest", None)),
            )),
        );
        assert_eq!(
            chain(&e),
            "error sending request: client error (SendRequest)"
        );
        let long = layer("x", Some(layer(&"é".repeat(600), None)));
        let shown = chain(&long);
        assert!(
            shown.len() <= 1024 + '…'.len_utf8() && shown.ends_with('…'),
            "{}",
            shown.len()
        );
    }

    #[test]
    fn bounds_read_well() {
        assert_eq!(fmt_bound(Duration::from_millis(300)), "300 ms");
        assert_eq!(fmt_bound(Duration::from_secs(10)), "10 s");
        assert_eq!(fmt_bound(Duration::from_millis(2500)), "2.5 s");
        let e = NoAnswer {
            exchange: "POST of notifications/initialized".into(),
            bound: Duration::from_secs(10),
        };
        assert_eq!(
            e.to_string(),
            "the server did not answer the POST of notifications/initialized within 10 s"
        );
    }

    #[test]
    fn the_header_bound_is_for_prompt_answers_and_the_http_timeout_for_all() {
        let mut o = WebOptions::new(Duration::from_secs(1)).unwrap();
        assert_eq!(
            o.bound(Wait::Prompt("GET")),
            Some(DEFAULT_HTTP_HEADER_TIMEOUT)
        );
        assert_eq!(o.bound(Wait::Call("POST of tools/call")), None);
        o.http_timeout = Some(Duration::from_secs(3));
        assert_eq!(o.bound(Wait::Prompt("GET")), Some(Duration::from_secs(3)));
        assert_eq!(o.bound(Wait::Call("POST")), Some(Duration::from_secs(3)));
        o.http_timeout = Some(Duration::from_secs(60));
        assert_eq!(
            o.bound(Wait::Prompt("GET")),
            Some(DEFAULT_HTTP_HEADER_TIMEOUT)
        );
    }

    #[test]
    fn header_values_with_line_breaks_are_refused_and_never_shown() {
        let mut o = WebOptions::new(Duration::from_secs(1)).unwrap();
        for bad in ["a\r\nx-evil: 1", "a\nb", "a\rb", "nul\0"] {
            let e = o.set_header("authorization", bad).unwrap_err();
            assert!(!e.to_string().contains(bad), "{e}");
        }
        assert!(o.set_header("bad name", "v").is_err());
        assert!(o.set_header("Mcp-Session-Id", "v").is_err());
        assert!(o.set_header("Mcp-Method", "v").is_err());
        assert!(o.set_header("Mcp-Param-Region", "v").is_err());
        o.set_header("Authorization", "Bearer s3cret").unwrap();
        assert_eq!(o.headers.len(), 1);
        let shown = format!("{o:?}");
        assert!(shown.contains("authorization"), "{shown}");
        assert!(!shown.contains("s3cret"), "{shown}");
    }
}
