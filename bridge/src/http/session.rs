//! One host session of the HTTP front: a bridge session ([`crate::Bridge::serve`], the same
//! table-driven front as over stdio) behind an in-memory pipe, and the routing of what it
//! writes to the host's HTTP streams.
//!
//! Routing: an answer goes to the stream of the `POST` that carried its request; a progress
//! notification to the stream of the request that gave its token; anything else (the
//! upstream's requests, log messages, list changes) to the standalone `GET` stream when one is
//! open, else to the one request stream open if there is exactly one (a tool call's sampling
//! request), else to the newest request stream, else it waits (bounded) for a stream to open.
//! Every stream starts with a priming event (an id, `retry`, no data: SEP-1699) and every event
//! carries an id `{stream}-{seq}`; the last events of each stream are kept, so a host that lost
//! a stream resumes it with `GET` and `Last-Event-ID`.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use bytes::Bytes;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, WriteHalf};
use tokio::sync::{mpsc, oneshot};
use tokio::task::AbortHandle;

/// Events kept per stream for a resume.
const REPLAY_EVENTS: usize = 64;
/// Streams whose events are kept.
const KEPT_STREAMS: usize = 64;
/// Messages waiting for a stream to open.
const PENDING: usize = 256;
/// Events queued for a stream whose host does not read; then the stream is cut (resumable).
const STREAM_QUEUE: usize = 256;

/// One SSE stream's sending side.
#[derive(Clone)]
pub(crate) struct StreamTx {
    id: u64,
    tx: mpsc::Sender<Bytes>,
}

/// A stream's kept events, for a resume.
#[derive(Default)]
struct Kept {
    events: VecDeque<(u64, Bytes)>,
    next_seq: u64,
    /// The request key the stream answers (`None`: the standalone stream).
    request: Option<String>,
    /// The stream's answer was sent: it is complete.
    done: bool,
}

#[derive(Default)]
struct Routes {
    /// Request streams waiting for their answer, by request key.
    requests: HashMap<String, StreamTx>,
    /// Progress tokens (JSON text) to request keys.
    progress: HashMap<String, String>,
    /// A host waiting for a plain JSON answer, by request key (no SSE).
    plain: HashMap<String, oneshot::Sender<Bytes>>,
    /// The standalone stream.
    standalone: Option<StreamTx>,
    /// Messages no stream could take yet.
    pending: VecDeque<Bytes>,
    /// Kept events, by stream id.
    kept: HashMap<u64, Kept>,
    /// Stream ids in the order they opened (for dropping the oldest kept).
    order: VecDeque<u64>,
    next_stream: u64,
    /// The newest request stream opened.
    newest: Option<String>,
}

/// One host session (see the module doc).
pub(crate) struct HttpSession {
    /// Its `Mcp-Session-Id`.
    pub(crate) id: String,
    to_bridge: tokio::sync::Mutex<Option<WriteHalf<DuplexStream>>>,
    routes: Mutex<Routes>,
    /// When the host last sent something.
    pub(crate) last_seen: Mutex<Instant>,
    tasks: Mutex<Vec<AbortHandle>>,
    /// The bridge's task (it ends once its host is gone and its upstream stopped).
    bridge: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl HttpSession {
    /// A session whose bridge reads `to_bridge`'s other end; call [`HttpSession::route_from`]
    /// with the bridge's output.
    pub(crate) fn new(id: String, to_bridge: WriteHalf<DuplexStream>) -> Arc<Self> {
        Arc::new(HttpSession {
            id,
            to_bridge: tokio::sync::Mutex::new(Some(to_bridge)),
            routes: Mutex::new(Routes::default()),
            last_seen: Mutex::new(Instant::now()),
            tasks: Mutex::new(Vec::new()),
            bridge: Mutex::new(None),
        })
    }

    /// Keeps the bridge's task.
    pub(crate) fn keep_bridge(&self, task: tokio::task::JoinHandle<()>) {
        *lock(&self.bridge) = Some(task);
    }

    /// Waits, at most `bound`, for the bridge to end (after [`HttpSession::end`]); then aborts
    /// what is left.
    pub(crate) async fn wait_closed(&self, bound: std::time::Duration) {
        let task = lock(&self.bridge).take();
        if let Some(task) = task {
            let abort = task.abort_handle();
            if tokio::time::timeout(bound, task).await.is_err() {
                abort.abort();
            }
        }
        self.abort();
    }

    /// Keeps a task that ends with the session.
    pub(crate) fn keep(&self, task: AbortHandle) {
        lock(&self.tasks).push(task);
    }

    /// Hands one message (one JSON line) to the bridge; `false` when the session is over.
    pub(crate) async fn send(&self, line: &[u8]) -> bool {
        *lock(&self.last_seen) = Instant::now();
        let mut to = self.to_bridge.lock().await;
        let Some(w) = to.as_mut() else {
            return false;
        };
        let ok = w.write_all(line).await.is_ok()
            && w.write_all(b"\n").await.is_ok()
            && w.flush().await.is_ok();
        if !ok {
            *to = None;
        }
        ok
    }

    /// Ends the session: the bridge sees its host leave (and stops its upstream).
    pub(crate) async fn end(&self) {
        if let Some(mut w) = self.to_bridge.lock().await.take() {
            let _ = w.shutdown().await;
        }
        let mut routes = lock(&self.routes);
        routes.requests.clear();
        routes.standalone = None;
        routes.plain.clear();
    }

    /// Aborts the session's tasks (after [`HttpSession::end`] had its chance).
    pub(crate) fn abort(&self) {
        for task in lock(&self.tasks).drain(..) {
            task.abort();
        }
    }

    /// Whether a stream is open (a session with an open stream is never idle).
    pub(crate) fn has_streams(&self) -> bool {
        let routes = lock(&self.routes);
        routes.standalone.is_some() || !routes.requests.is_empty() || !routes.plain.is_empty()
    }

    /// Opens the stream of a request with `key` (and its progress `token`): its receiver.
    pub(crate) fn open_request(&self, key: &str, token: Option<&Value>) -> mpsc::Receiver<Bytes> {
        let mut routes = lock(&self.routes);
        let (tx, rx) = mpsc::channel(STREAM_QUEUE);
        let id = routes.open_stream(Some(key.to_owned()));
        let _ = tx.try_send(priming(id));
        routes.requests.insert(key.to_owned(), StreamTx { id, tx });
        if let Some(token) = token {
            routes.progress.insert(token.to_string(), key.to_owned());
        }
        routes.newest = Some(key.to_owned());
        routes.flush_pending();
        rx
    }

    /// Waits for a request's answer as one JSON body (a host that takes no event stream).
    pub(crate) fn open_plain(&self, key: &str) -> oneshot::Receiver<Bytes> {
        let (tx, rx) = oneshot::channel();
        lock(&self.routes).plain.insert(key.to_owned(), tx);
        rx
    }

    /// Opens the standalone stream, or resumes stream `last` after its event `seq`.
    pub(crate) fn open_standalone(&self, last: Option<(u64, u64)>) -> mpsc::Receiver<Bytes> {
        let mut routes = lock(&self.routes);
        let (tx, rx) = mpsc::channel(STREAM_QUEUE);
        if let Some((stream, seq)) = last
            && let Some(kept) = routes.kept.get(&stream)
        {
            // Replay what followed `seq`, then carry on as that stream (if it is not over).
            for (s, event) in &kept.events {
                if *s > seq {
                    let _ = tx.try_send(event.clone());
                }
            }
            let request = kept.request.clone();
            let done = kept.done;
            if !done {
                let stream = StreamTx { id: stream, tx };
                match request {
                    Some(key) => {
                        routes.requests.insert(key, stream);
                    }
                    None => routes.standalone = Some(stream),
                }
            }
            return rx;
        }
        let id = routes.open_stream(None);
        let _ = tx.try_send(priming(id));
        routes.standalone = Some(StreamTx { id, tx });
        routes.flush_pending();
        rx
    }

    /// Reads the bridge's output and routes each line until the bridge ends.
    pub(crate) async fn route_from(
        self: Arc<Self>,
        from_bridge: tokio::io::ReadHalf<DuplexStream>,
    ) {
        let mut lines = BufReader::new(from_bridge).split(b'\n');
        while let Ok(Some(line)) = lines.next_segment().await {
            if line.is_empty() {
                continue;
            }
            self.route(Bytes::from(line));
        }
        // The bridge ended (the host left, or the upstream is gone for good): close the
        // streams.
        let mut routes = lock(&self.routes);
        routes.requests.clear();
        routes.standalone = None;
        routes.plain.clear();
    }

    fn route(&self, frame: Bytes) {
        let Ok(msg) = serde_json::from_slice::<Value>(&frame) else {
            return;
        };
        let mut routes = lock(&self.routes);
        let method = msg.get("method").and_then(Value::as_str);
        match (method, msg.get("id")) {
            (None, Some(id)) if !id.is_null() => {
                let key = id.to_string();
                routes.progress.retain(|_, k| *k != key);
                if let Some(plain) = routes.plain.remove(&key) {
                    let _ = plain.send(frame);
                    return;
                }
                match routes.requests.remove(&key) {
                    Some(stream) => {
                        routes.deliver(&stream, frame);
                        if let Some(kept) = routes.kept.get_mut(&stream.id) {
                            kept.done = true;
                        }
                    }
                    // Its stream is gone (the host may resume it): kept for the resume.
                    None => routes.keep_for(&key, frame),
                }
            }
            (None, _) => {} // the answer to a line the front already refused
            (Some("notifications/progress"), None) => {
                let token = msg
                    .get("params")
                    .and_then(|p| p.get("progressToken"))
                    .map(Value::to_string);
                let stream = token
                    .and_then(|t| routes.progress.get(&t).cloned())
                    .and_then(|key| routes.requests.get(&key).cloned());
                match stream {
                    Some(stream) => routes.deliver(&stream, frame),
                    None => routes.other(frame),
                }
            }
            _ => routes.other(frame),
        }
    }
}

impl Routes {
    fn open_stream(&mut self, request: Option<String>) -> u64 {
        self.next_stream += 1;
        let id = self.next_stream;
        self.kept.insert(
            id,
            Kept {
                request,
                ..Kept::default()
            },
        );
        self.order.push_back(id);
        while self.order.len() > KEPT_STREAMS {
            if let Some(old) = self.order.pop_front() {
                self.kept.remove(&old);
            }
        }
        id
    }

    /// Sends `frame` on `stream` as an SSE event with the next id of that stream, kept for a
    /// resume. A stream whose host does not read is cut (it may resume).
    fn deliver(&mut self, stream: &StreamTx, frame: Bytes) {
        let event = match self.kept.get_mut(&stream.id) {
            Some(kept) => {
                kept.next_seq += 1;
                let event = sse_event(stream.id, kept.next_seq, &frame);
                kept.events.push_back((kept.next_seq, event.clone()));
                while kept.events.len() > REPLAY_EVENTS {
                    kept.events.pop_front();
                }
                event
            }
            None => sse_event(stream.id, 0, &frame),
        };
        if stream.tx.try_send(event).is_err() {
            // Full or closed: drop this connection of the stream.
            self.requests.retain(|_, s| s.id != stream.id);
            if self.standalone.as_ref().is_some_and(|s| s.id == stream.id) {
                self.standalone = None;
            }
        }
    }

    /// A message for no request in particular (see the module doc).
    fn other(&mut self, frame: Bytes) {
        let target = self
            .standalone
            .clone()
            .or_else(|| {
                (self.requests.len() == 1)
                    .then(|| self.requests.values().next().cloned())
                    .flatten()
            })
            .or_else(|| {
                self.newest
                    .as_ref()
                    .and_then(|k| self.requests.get(k).cloned())
            });
        match target {
            Some(stream) => self.deliver(&stream, frame),
            None => {
                if self.pending.len() >= PENDING {
                    self.pending.pop_front();
                }
                self.pending.push_back(frame);
            }
        }
    }

    fn flush_pending(&mut self) {
        while let Some(frame) = self.pending.pop_front() {
            self.other(frame);
            if self.standalone.is_none() && self.requests.is_empty() {
                break;
            }
        }
    }

    /// Keeps an answer whose stream is gone in that stream's events (for a resume).
    fn keep_for(&mut self, key: &str, frame: Bytes) {
        let stream = self
            .kept
            .iter()
            .find(|(_, k)| k.request.as_deref() == Some(key) && !k.done)
            .map(|(id, _)| *id);
        if let Some(id) = stream
            && let Some(kept) = self.kept.get_mut(&id)
        {
            kept.next_seq += 1;
            let event = sse_event(id, kept.next_seq, &frame);
            kept.events.push_back((kept.next_seq, event));
            kept.done = true;
        }
    }
}

/// How long a host waits before it resumes a lost stream (SSE `retry`, ms).
const RETRY_MS: u64 = 1000;

/// The first event of every stream (SEP-1699): an id to resume from (`{stream}-0`), the
/// `retry` delay, and no data (a host reads it as nothing).
fn priming(stream: u64) -> Bytes {
    Bytes::from(format!("id: {stream}-0\nretry: {RETRY_MS}\ndata: \n\n"))
}

/// One SSE event: `id: {stream}-{seq}` and the message as its data.
fn sse_event(stream: u64, seq: u64, frame: &[u8]) -> Bytes {
    let mut e = Vec::with_capacity(frame.len() + 48);
    e.extend_from_slice(format!("id: {stream}-{seq}\nevent: message\ndata: ").as_bytes());
    e.extend_from_slice(frame);
    e.extend_from_slice(b"\n\n");
    Bytes::from(e)
}

/// `Last-Event-ID: {stream}-{seq}` read back.
pub(crate) fn parse_event_id(id: &str) -> Option<(u64, u64)> {
    let (stream, seq) = id.trim().split_once('-')?;
    Some((stream.parse().ok()?, seq.parse().ok()?))
}
