//! The Streamable HTTP transport (MCP 2025-03-26 … 2025-11-25) as a link: one HTTP session per
//! transport generation.
//!
//! The transport task speaks newline-delimited frames over a [`Link`], as for stdio; here the
//! link's other end is a bridge task that turns each frame into an HTTP `POST` and each message
//! of the answers (a JSON body, or the messages of an SSE stream) into a frame. So the frame
//! limit, the read credit, the send queue and "exactly one `Down`" work as for every link.
//!
//! What the bridge does, as the specification's transport page asks:
//! - every `POST` carries `Accept: application/json, text/event-stream`; `202` answers (to our
//!   notifications and responses) carry nothing; SSE events without data (priming events) are
//!   skipped;
//! - the `Mcp-Session-Id` of the `initialize` answer (visible ASCII only, else the link fails)
//!   is sent on every later request, and `MCP-Protocol-Version` once the handshake chose one;
//! - after `notifications/initialized`, a standalone `GET` stream carries what the server sends
//!   on its own (`405`: the server has none, and it is not asked again); when it ends it is
//!   opened again after the server's `retry` (or 1 s), at most [`GET_STREAM_ATTEMPTS`] times
//!   in a row without an event;
//! - a `404` to a request carrying the session id ends the link with
//!   [`TransportError::SessionExpired`]; any other non-2xx status ends it with
//!   [`TransportError::Http`] (the table then fails the calls in flight and reconnects);
//! - closing sends `DELETE` with the session id (bounded by the close grace; `405` is fine).
//!
//! Not yet: resuming a broken response stream with `Last-Event-ID` (a broken stream ends the
//! link), and the legacy HTTP+SSE transport of 2024-11-05.
//!
//! Like every transport it decides nothing about the protocol: it reads a frame's JSON only
//! to find the `initialize` exchange (for the session's headers).

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use futures_util::{Stream, StreamExt, TryStreamExt};
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderValue};
use reqwest::{Method, StatusCode};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, watch};

use super::{Closer, Connector, IoCause, Link, TransportError};

/// `Mcp-Session-Id`.
const SESSION_HEADER: &str = "mcp-session-id";
/// `MCP-Protocol-Version`.
const VERSION_HEADER: &str = "mcp-protocol-version";
/// How often in a row the standalone GET stream is opened again without bringing an event.
pub const GET_STREAM_ATTEMPTS: u32 = 5;
/// The wait before opening the GET stream again when the server gave no `retry`.
const GET_STREAM_RETRY: Duration = Duration::from_secs(1);
/// Bytes of the duplex pipe between the bridge and the transport task.
const PIPE: usize = 64 * 1024;
/// Default bound on the `DELETE` at close.
const DEFAULT_GRACE: Duration = Duration::from_secs(2);

/// Opens a Streamable HTTP link to one MCP endpoint per generation. A factory: it holds no
/// session itself.
#[derive(Clone, Debug)]
pub struct HttpConnector {
    endpoint: reqwest::Url,
    client: reqwest::Client,
    headers: HeaderMap,
    max_frame_bytes: usize,
    grace: Duration,
}

impl HttpConnector {
    /// A connector for the MCP endpoint at `url` (`http://` or `https://`).
    pub fn new(url: &str) -> Result<Self, TransportError> {
        let endpoint = reqwest::Url::parse(url).map_err(|e| TransportError::Http {
            status: 0,
            reason: format!("invalid endpoint URL: {e}"),
        })?;
        if !matches!(endpoint.scheme(), "http" | "https") {
            return Err(TransportError::Http {
                status: 0,
                reason: format!("not an http(s) URL: {}", endpoint.scheme()),
            });
        }
        let client = reqwest::Client::builder()
            // A redirect could carry our headers (the session id, later a token) elsewhere.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| TransportError::Connect(IoCause::new(std::io::Error::other(e))))?;
        Ok(HttpConnector {
            endpoint,
            client,
            headers: HeaderMap::new(),
            max_frame_bytes: super::DEFAULT_MAX_FRAME_BYTES,
            grace: DEFAULT_GRACE,
        })
    }

    /// Largest message accepted from the server (the client's frame limit: 16 MiB); a JSON
    /// body or an SSE event over it ends the link.
    pub fn max_frame_bytes(mut self, bytes: usize) -> Self {
        self.max_frame_bytes = bytes;
        self
    }

    /// How long the `DELETE` at close may take (2 s).
    pub fn grace(mut self, grace: Duration) -> Self {
        self.grace = grace;
        self
    }
}

impl Connector for HttpConnector {
    fn connect(
        &self,
    ) -> Pin<Box<dyn Future<Output = Result<Link, TransportError>> + Send + 'static>> {
        let this = self.clone();
        Box::pin(async move {
            let (ours, theirs) = tokio::io::duplex(PIPE);
            let (reader, writer) = tokio::io::split(ours);
            let (ended_tx, ended) = watch::channel(None);
            let session = Arc::new(Mutex::new(Session::default()));
            let bridge = Bridge {
                http: Arc::new(this.clone()),
                session: Arc::clone(&session),
                ended: ended_tx,
            };
            let task = tokio::spawn(bridge.run(theirs));
            Ok(Link {
                reader: Box::new(reader),
                writer: Box::new(writer),
                closer: Some(Box::new(HttpCloser {
                    http: this,
                    session,
                    ended,
                    task,
                })),
            })
        })
    }

    fn describe(&self) -> String {
        format!("http: {}", self.endpoint)
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
    initialize_id: Option<serde_json::Value>,
    /// Whether the standalone GET stream was started.
    get_started: bool,
}

/// The bridge between the link's frames and HTTP.
struct Bridge {
    http: Arc<HttpConnector>,
    session: Arc<Mutex<Session>>,
    /// Why the bridge ended the link (read by the closer's `exited`).
    ended: watch::Sender<Option<TransportError>>,
}

fn lock(s: &Mutex<Session>) -> std::sync::MutexGuard<'_, Session> {
    s.lock().unwrap_or_else(|e| e.into_inner())
}

impl Bridge {
    async fn run(self, pipe: tokio::io::DuplexStream) {
        let (from_transport, mut to_transport) = tokio::io::split(pipe);
        let (frames_tx, mut frames_rx) = mpsc::channel::<Vec<u8>>(64);
        let bridge = Arc::new(self);
        // One writer into the pipe: frames are whole lines, never interleaved.
        let writer = async move {
            while let Some(mut frame) = frames_rx.recv().await {
                frame.push(b'\n');
                if to_transport.write_all(&frame).await.is_err() {
                    return;
                }
            }
        };
        let reader = {
            let bridge = Arc::clone(&bridge);
            async move {
                let mut lines = BufReader::new(from_transport).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    let bridge = Arc::clone(&bridge);
                    let frames = frames_tx.clone();
                    tokio::spawn(async move {
                        if let Err(e) = bridge.post(line, frames).await {
                            bridge.fail(e);
                        }
                    });
                }
            }
        };
        // Once the link is failed, the pipe closes at once: the transport reads what was
        // delivered, then EOF, rather than waiting out its flush bound.
        let mut ended = bridge.ended.subscribe();
        let failed = async move {
            let _ = ended.wait_for(Option::is_some).await;
        };
        tokio::select! {
            () = writer => {}
            () = reader => {}
            () = failed => {}
        }
    }

    /// Ends the link with `reason` (the first reason wins).
    fn fail(&self, reason: TransportError) {
        self.ended.send_if_modified(|r| {
            if r.is_none() {
                tracing::debug!(target: "mcp::http", %reason, "http link ends");
                *r = Some(reason);
                true
            } else {
                false
            }
        });
    }

    fn request(&self, method: Method) -> reqwest::RequestBuilder {
        let session = lock(&self.session);
        let mut req = self
            .http
            .client
            .request(method, self.http.endpoint.clone())
            .headers(self.http.headers.clone());
        if let Some(id) = &session.id {
            req = req.header(SESSION_HEADER, id.clone());
        }
        if let Some(v) = &session.version {
            req = req.header(VERSION_HEADER, v.clone());
        }
        req
    }

    /// POSTs one frame and forwards what comes back.
    async fn post(
        self: &Arc<Self>,
        frame: String,
        frames: mpsc::Sender<Vec<u8>>,
    ) -> Result<(), TransportError> {
        let parsed = serde_json::from_str::<serde_json::Value>(&frame).ok();
        let method = parsed
            .as_ref()
            .and_then(|v| v.get("method"))
            .and_then(|m| m.as_str())
            .map(str::to_owned);
        if method.as_deref() == Some("initialize") {
            lock(&self.session).initialize_id = parsed.as_ref().and_then(|v| v.get("id")).cloned();
        }
        let had_session = lock(&self.session).id.is_some();
        let response = self
            .request(Method::POST)
            .header(ACCEPT, "application/json, text/event-stream")
            .header(CONTENT_TYPE, "application/json")
            .body(frame)
            .send()
            .await
            .map_err(connect_error)?;
        let status = response.status();
        if status == StatusCode::NOT_FOUND && had_session {
            return Err(self.expired());
        }
        if !status.is_success() {
            return Err(TransportError::Http {
                status: status.as_u16(),
                reason: format!("to a POST of {}", method.as_deref().unwrap_or("a response")),
            });
        }
        if let Some(id) = response.headers().get(SESSION_HEADER) {
            if !id.as_bytes().iter().all(|b| (0x21..=0x7e).contains(b)) {
                return Err(TransportError::Http {
                    status: status.as_u16(),
                    reason: "the Mcp-Session-Id is not visible ASCII".into(),
                });
            }
            let mut session = lock(&self.session);
            if session.id.is_none() {
                session.id = Some(id.clone());
            }
        }
        if method.as_deref() == Some("notifications/initialized") {
            self.start_get_stream(frames.clone());
        }
        if status == StatusCode::ACCEPTED || status == StatusCode::NO_CONTENT {
            return Ok(());
        }
        let is_sse = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if is_sse {
            self.forward_sse(response.bytes_stream(), &frames).await?;
        } else {
            let body = read_capped(response, self.http.max_frame_bytes).await?;
            if !body.iter().all(u8::is_ascii_whitespace) {
                self.deliver(one_line(&body), &frames).await;
            }
        }
        Ok(())
    }

    fn expired(&self) -> TransportError {
        let hint = lock(&self.session)
            .id
            .as_ref()
            .and_then(|v| v.to_str().ok())
            .map(|s| s.chars().take(8).collect())
            .unwrap_or_default();
        TransportError::SessionExpired {
            session_hint: hint,
            refused: Vec::new(),
        }
    }

    /// Hands one message to the transport; learns the protocol version from the `initialize`
    /// answer on the way.
    async fn deliver(&self, message: Vec<u8>, frames: &mpsc::Sender<Vec<u8>>) {
        let awaiting = lock(&self.session).initialize_id.clone();
        if let Some(init_id) = awaiting
            && let Ok(v) = serde_json::from_slice::<serde_json::Value>(&message)
            && v.get("id") == Some(&init_id)
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
        let _ = frames.send(message).await;
    }

    /// Forwards every message of an SSE stream; returns the last `retry` the server asked for.
    async fn forward_sse(
        &self,
        body: impl Stream<Item = reqwest::Result<Bytes>> + Send + Unpin,
        frames: &mpsc::Sender<Vec<u8>>,
    ) -> Result<Option<Duration>, TransportError> {
        let max = self.http.max_frame_bytes;
        let pending = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = {
            let pending = Arc::clone(&pending);
            body.map_err(std::io::Error::other).map(move |chunk| {
                let chunk = chunk?;
                let seen = pending.fetch_add(chunk.len(), std::sync::atomic::Ordering::Relaxed)
                    + chunk.len();
                // An event may not grow past the frame limit (plus room for its field names).
                if seen > max.saturating_add(4096) {
                    Err(std::io::Error::other("an SSE event over the frame limit"))
                } else {
                    Ok(chunk)
                }
            })
        };
        let mut events = sse_stream::SseStream::from_bytes_stream(counted);
        let mut retry = None;
        while let Some(event) = events.next().await {
            let event = event.map_err(|e| {
                if pending.load(std::sync::atomic::Ordering::Relaxed) > max {
                    TransportError::Oversized {
                        seen: pending.load(std::sync::atomic::Ordering::Relaxed),
                        max,
                    }
                } else {
                    TransportError::Io(IoCause::new(std::io::Error::other(e.to_string())))
                }
            })?;
            pending.store(0, std::sync::atomic::Ordering::Relaxed);
            if let Some(ms) = event.retry {
                retry = Some(Duration::from_millis(ms));
            }
            let Some(data) = event.data.filter(|d| !d.trim().is_empty()) else {
                continue; // a priming event, or a comment
            };
            if event.event.as_deref().is_some_and(|e| e != "message") {
                continue;
            }
            self.deliver(one_line(data.as_bytes()), frames).await;
        }
        Ok(retry)
    }

    /// Opens the standalone GET stream once, in the background, for the link's lifetime.
    fn start_get_stream(self: &Arc<Self>, frames: mpsc::Sender<Vec<u8>>) {
        {
            let mut session = lock(&self.session);
            if session.get_started {
                return;
            }
            session.get_started = true;
        }
        let bridge = Arc::clone(self);
        tokio::spawn(async move {
            let mut quiet = 0;
            while quiet < GET_STREAM_ATTEMPTS {
                let response = match bridge
                    .request(Method::GET)
                    .header(ACCEPT, "text/event-stream")
                    .send()
                    .await
                {
                    Ok(r) => r,
                    Err(e) => {
                        tracing::debug!(target: "mcp::http", error = %e, "GET stream failed");
                        quiet += 1;
                        tokio::time::sleep(GET_STREAM_RETRY).await;
                        continue;
                    }
                };
                match response.status() {
                    StatusCode::METHOD_NOT_ALLOWED => {
                        tracing::debug!(target: "mcp::http", "the server offers no GET stream");
                        return;
                    }
                    StatusCode::NOT_FOUND => return bridge.fail(bridge.expired()),
                    s if !s.is_success() => {
                        tracing::debug!(target: "mcp::http", status = s.as_u16(), "GET stream refused");
                        return;
                    }
                    _ => {}
                }
                let before = frames.capacity();
                let retry = bridge
                    .forward_sse(response.bytes_stream(), &frames)
                    .await
                    .unwrap_or(None);
                // A normal end does not reset the budget: only an event does.
                if frames.capacity() == before {
                    quiet += 1;
                } else {
                    quiet = 0;
                }
                tokio::time::sleep(retry.unwrap_or(GET_STREAM_RETRY)).await;
            }
        });
    }
}

/// `bytes` as one line: a JSON text's raw line breaks can only be whitespace between tokens
/// (inside strings they are escaped), so they become spaces.
fn one_line(bytes: &[u8]) -> Vec<u8> {
    bytes
        .iter()
        .map(|&b| if b == b'\n' || b == b'\r' { b' ' } else { b })
        .collect()
}

/// The body of a JSON answer, failing once it passes `max` bytes (never buffered past it).
async fn read_capped(response: reqwest::Response, max: usize) -> Result<Vec<u8>, TransportError> {
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk =
            chunk.map_err(|e| TransportError::Io(IoCause::new(std::io::Error::other(e))))?;
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

fn connect_error(e: reqwest::Error) -> TransportError {
    // Never the URL's query (it could hold a secret): reqwest's message without it.
    let e = e.without_url();
    if e.is_connect() {
        TransportError::Connect(IoCause::new(std::io::Error::new(
            std::io::ErrorKind::ConnectionRefused,
            e,
        )))
    } else {
        TransportError::Io(IoCause::new(std::io::Error::other(e)))
    }
}

/// Ends an HTTP link: stops the bridge, sends `DELETE` for the session.
struct HttpCloser {
    http: HttpConnector,
    session: Arc<Mutex<Session>>,
    ended: watch::Receiver<Option<TransportError>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for HttpCloser {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Closer for HttpCloser {
    fn close(self: Box<Self>) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        Box::pin(async move {
            self.task.abort();
            let (id, version) = {
                let session = lock(&self.session);
                (session.id.clone(), session.version.clone())
            };
            let expired = matches!(
                &*self.ended.borrow(),
                Some(TransportError::SessionExpired { .. })
            );
            if let Some(id) = id
                && !expired
            {
                let mut delete = self
                    .http
                    .client
                    .delete(self.http.endpoint.clone())
                    .headers(self.http.headers.clone())
                    .header(SESSION_HEADER, id);
                if let Some(version) = version {
                    delete = delete.header(VERSION_HEADER, version);
                }
                let delete = delete.send();
                match tokio::time::timeout(self.http.grace, delete).await {
                    Ok(Ok(r)) => {
                        tracing::debug!(target: "mcp::http", status = r.status().as_u16(), "session deleted")
                    }
                    Ok(Err(e)) => {
                        tracing::debug!(target: "mcp::http", error = %e.without_url(), "DELETE failed")
                    }
                    Err(_) => tracing::debug!(target: "mcp::http", "DELETE timed out"),
                }
            }
        })
    }

    fn kill_now(&mut self) {
        self.task.abort();
    }

    fn exited(&mut self) -> Option<Pin<Box<dyn Future<Output = TransportError> + Send + '_>>> {
        let mut ended = self.ended.clone();
        Some(Box::pin(async move {
            let reason = match ended.wait_for(Option::is_some).await {
                Ok(reason) => reason.clone(),
                Err(_) => None,
            };
            match reason {
                Some(reason) => reason,
                None => std::future::pending().await,
            }
        }))
    }

    fn flush_timeout(&self) -> Duration {
        self.http.grace
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_keeps_json_meaning() {
        let pretty = b"{\n  \"a\": \"x\\ny\",\r\n  \"b\": [1,\n2]\n}";
        let line = one_line(pretty);
        assert!(!line.contains(&b'\n'));
        let v: serde_json::Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(v["a"], "x\ny");
        assert_eq!(v["b"], serde_json::json!([1, 2]));
    }

    #[test]
    fn only_http_urls() {
        assert!(HttpConnector::new("ftp://x/mcp").is_err());
        assert!(HttpConnector::new("not a url").is_err());
        let c = HttpConnector::new("http://127.0.0.1:9/mcp").unwrap();
        assert_eq!(c.describe(), "http: http://127.0.0.1:9/mcp");
    }
}
