//! One HTTP session: a [`crate::serve`] connection over an in-memory pipe, and the routing of
//! what it writes to the SSE streams and JSON answers of the HTTP requests.
//!
//! Answers go to the request that asked (by JSON-RPC id); progress notifications to the stream
//! of the request that gave the token (kept for its resumption while it is disconnected);
//! everything else the server sends on its own to the
//! standalone `GET` stream, else to the newest open request stream, else it waits for the next
//! `GET` stream. Every SSE event is kept (the last [`KEPT_EVENTS`] of each stream, the last
//! [`KEPT_STREAMS`] streams) so that a `GET` with `Last-Event-ID` can replay it.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use bytes::Bytes;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot};
use tokio::task::AbortHandle;

use super::State;
use crate::ServerConfig;

/// Events kept per stream for resumption.
pub(super) const KEPT_EVENTS: usize = 256;
/// Streams kept per session for resumption.
pub(super) const KEPT_STREAMS: usize = 64;
/// Messages kept for the next standalone stream when none is open.
const BACKLOG: usize = 1024;

/// What an SSE body is fed with.
pub(super) enum Chunk {
    /// Bytes to send.
    Data(Bytes),
    /// Cut the connection (after a short pause, so that what was sent is flushed).
    Abort,
}

/// How a request stream misbehaves.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Cut {
    /// It does not.
    No,
    /// Cut the connection in the middle of an event, after this many whole ones (and the
    /// priming one).
    After(u32),
    /// End cleanly right after the priming event.
    AfterPriming,
}

/// Sends to an SSE body.
pub(super) type Sink = mpsc::UnboundedSender<Chunk>;

/// Where an answer goes.
enum Target {
    Json(oneshot::Sender<Vec<u8>>),
    Stream(u64),
}

/// One SSE stream of the session (a POST's answer stream or a standalone GET stream).
struct Stream {
    /// Events sent so far, `(seq, data)`, for replay.
    log: VecDeque<(u64, Bytes)>,
    next_seq: u64,
    sink: Option<Sink>,
    /// Tag events with `id: {stream}-{seq}`.
    ids: bool,
    /// The stream's answer was sent: it ends once its events are out.
    done: bool,
    /// Cut the connection in the middle of an event after this many whole ones (fault
    /// `drop-stream`).
    cut_after: Option<u32>,
    standalone: bool,
}

/// What the session's router knows.
#[derive(Default)]
pub(super) struct Routes {
    pending: HashMap<String, Target>,
    tokens: HashMap<String, u64>,
    streams: BTreeMap<u64, Stream>,
    /// The open standalone stream.
    get: Option<u64>,
    backlog: VecDeque<Bytes>,
    next_stream: u64,
    /// Legacy HTTP+SSE: events are `event: message`, everything goes to the one stream.
    legacy: bool,
    /// The session's server ended (the `die` tool): its streams were cut, nothing is served.
    dead: bool,
}

/// One session: its server's input, its routes, its tasks (aborted when it is dropped).
pub(super) struct Session {
    pub(super) id: String,
    input: mpsc::UnboundedSender<Vec<u8>>,
    routes: Arc<Mutex<Routes>>,
    tasks: Vec<AbortHandle>,
}

impl Drop for Session {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
        // Open streams end (cleanly) with the session.
        lock(&self.routes).streams.clear();
    }
}

pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The SSE bytes of one event.
pub(super) fn event(id: Option<String>, legacy: bool, data: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(data.len() + 48);
    if let Some(id) = id {
        out.extend_from_slice(format!("id: {id}\n").as_bytes());
    }
    if legacy {
        out.extend_from_slice(b"event: message\n");
    }
    out.extend_from_slice(b"data: ");
    out.extend_from_slice(data);
    out.extend_from_slice(b"\n\n");
    Bytes::from(out)
}

impl Session {
    /// Starts a session: its server (a [`crate::serve`] over a pipe) and its router.
    pub(super) fn start(
        id: String,
        config: ServerConfig,
        state: Weak<State>,
        legacy: bool,
        bus: crate::ListenBus,
    ) -> Self {
        let (ours, theirs) = tokio::io::duplex(1 << 16);
        let (sr, sw) = tokio::io::split(theirs);
        let (mut from_server, mut to_server) = tokio::io::split(ours);
        let (input, mut input_rx) = mpsc::unbounded_channel::<Vec<u8>>();
        let routes = Arc::new(Mutex::new(Routes {
            legacy,
            ..Routes::default()
        }));
        let server = tokio::spawn(async move {
            crate::serve_with(sr, sw, config, Some(bus)).await;
        });
        let writer = tokio::spawn(async move {
            while let Some(mut line) = input_rx.recv().await {
                line.push(b'\n');
                if to_server.write_all(&line).await.is_err() {
                    return;
                }
            }
        });
        let reader = {
            let routes = Arc::clone(&routes);
            let id = id.clone();
            tokio::spawn(async move {
                let mut reader = BufReader::new(&mut from_server);
                let mut line = Vec::new();
                loop {
                    line.clear();
                    match reader.read_until(b'\n', &mut line).await {
                        Ok(0) | Err(_) => break,
                        Ok(_) => {}
                    }
                    if line.last() == Some(&b'\n') {
                        line.pop();
                    }
                    route(&routes, Bytes::copy_from_slice(&line));
                }
                // The server ended (the `die` tool): its streams are cut, the session is gone.
                tracing::debug!(session = %id, "session server ended");
                let mut r = lock(&routes);
                r.dead = true;
                for s in r.streams.values_mut() {
                    if let Some(sink) = s.sink.take() {
                        let _ = sink.send(Chunk::Abort);
                    }
                }
                r.pending.clear();
                drop(r);
                if let Some(state) = state.upgrade() {
                    state.forget(&id);
                }
            })
        };
        Session {
            id,
            input,
            routes,
            tasks: vec![
                server.abort_handle(),
                writer.abort_handle(),
                reader.abort_handle(),
            ],
        }
    }

    /// Whether the session's server ended (then the session answers like an unknown one).
    pub(super) fn is_dead(&self) -> bool {
        lock(&self.routes).dead
    }

    /// Hands one message (one line of JSON) to the session's server.
    pub(super) fn send(&self, line: Vec<u8>) {
        let _ = self.input.send(line);
    }

    /// Awaits the answer to request `id` as a JSON body.
    pub(super) fn expect_json(&self, id: &Value) -> oneshot::Receiver<Vec<u8>> {
        let (tx, rx) = oneshot::channel();
        lock(&self.routes)
            .pending
            .insert(id.to_string(), Target::Json(tx));
        rx
    }

    /// Opens a request stream for the answer to `id` (and the progress of `token`): its sink
    /// gets the priming event (when `ids`) and every event routed to it, but as `cut` says.
    pub(super) fn expect_stream(
        &self,
        id: &Value,
        token: Option<&Value>,
        ids: bool,
        retry_ms: Option<u64>,
        cut: Cut,
    ) -> mpsc::UnboundedReceiver<Chunk> {
        let (sink, rx) = mpsc::unbounded_channel();
        let mut r = lock(&self.routes);
        let sid = r.open(sink, ids, false, retry_ms);
        if let Some(s) = r.streams.get_mut(&sid) {
            if let Cut::After(n) = cut {
                s.cut_after = Some(n);
            }
            if cut == Cut::AfterPriming {
                s.sink = None;
            }
        }
        r.pending.insert(id.to_string(), Target::Stream(sid));
        if let Some(token) = token {
            r.tokens.insert(token.to_string(), sid);
        }
        rx
    }

    /// Opens the standalone stream (replacing the previous one); the backlog goes to it.
    pub(super) fn open_standalone(&self, retry_ms: Option<u64>) -> mpsc::UnboundedReceiver<Chunk> {
        let (sink, rx) = mpsc::unbounded_channel();
        let mut r = lock(&self.routes);
        let ids = !r.legacy;
        let sid = r.open(sink, ids, true, retry_ms);
        if let Some(old) = r.get.replace(sid)
            && let Some(s) = r.streams.get_mut(&old)
        {
            s.sink = None;
        }
        for data in std::mem::take(&mut r.backlog) {
            r.push(sid, data);
        }
        rx
    }

    /// Resumes the stream of event `last` (`{stream}-{seq}`): the events after it are
    /// replayed, later ones follow. `None` if the id is not one of this session's.
    pub(super) fn resume(&self, last: &str) -> Option<mpsc::UnboundedReceiver<Chunk>> {
        let (sid, seq) = last.split_once('-')?;
        let (sid, seq) = (sid.parse::<u64>().ok()?, seq.parse::<u64>().ok()?);
        let mut r = lock(&self.routes);
        if r.dead {
            return None;
        }
        let s = r.streams.get_mut(&sid)?;
        let (sink, rx) = mpsc::unbounded_channel();
        for (n, data) in s.log.iter().filter(|(n, _)| *n > seq) {
            let _ = sink.send(Chunk::Data(event(Some(format!("{sid}-{n}")), false, data)));
        }
        s.cut_after = None;
        let standalone = s.standalone;
        if !s.done {
            s.sink = Some(sink);
        }
        if standalone {
            r.get = Some(sid);
        }
        Some(rx)
    }

    /// Sends raw bytes on the standalone stream (legacy: garbage, oversized events).
    pub(super) fn push_raw(&self, data: Bytes) {
        let r = lock(&self.routes);
        if let Some(sink) = r
            .get
            .and_then(|g| r.streams.get(&g))
            .and_then(|s| s.sink.as_ref())
        {
            let _ = sink.send(Chunk::Data(data));
        }
    }

    /// Cuts the standalone stream's connection (legacy `drop-stream`).
    pub(super) fn cut_standalone(&self) {
        let mut r = lock(&self.routes);
        if let Some(g) = r.get.take()
            && let Some(sink) = r.streams.get_mut(&g).and_then(|s| s.sink.take())
        {
            let _ = sink.send(Chunk::Abort);
        }
    }
}

impl Routes {
    fn open(&mut self, sink: Sink, ids: bool, standalone: bool, retry_ms: Option<u64>) -> u64 {
        self.next_stream += 1;
        let sid = self.next_stream;
        if ids {
            let mut priming = format!("id: {sid}-0\n");
            if let Some(ms) = retry_ms {
                priming.push_str(&format!("retry: {ms}\n"));
            }
            priming.push_str("data: \n\n");
            let _ = sink.send(Chunk::Data(Bytes::from(priming)));
        }
        self.streams.insert(
            sid,
            Stream {
                log: VecDeque::new(),
                next_seq: 1,
                sink: Some(sink),
                ids,
                done: false,
                cut_after: None,
                standalone,
            },
        );
        while self.streams.len() > KEPT_STREAMS {
            self.streams.pop_first();
        }
        sid
    }

    /// Sends one message on stream `sid` and keeps it (with ids). Whether the stream took it:
    /// sent it, or kept it for a resumption; a message is never taken by two streams.
    fn push(&mut self, sid: u64, data: Bytes) -> bool {
        let legacy = self.legacy;
        let Some(s) = self.streams.get_mut(&sid) else {
            return false;
        };
        let seq = s.next_seq;
        s.next_seq += 1;
        if s.ids {
            s.log.push_back((seq, data.clone()));
            if s.log.len() > KEPT_EVENTS {
                s.log.pop_front();
            }
        }
        let bytes = event(s.ids.then(|| format!("{sid}-{seq}")), legacy, &data);
        let sent = match (s.sink.take(), s.cut_after) {
            (None, _) => false,
            (Some(sink), Some(0)) => {
                let half = bytes.slice(..bytes.len() / 2);
                let _ = sink.send(Chunk::Data(half));
                let _ = sink.send(Chunk::Abort);
                false
            }
            (Some(sink), cut) => {
                s.cut_after = cut.map(|n| n - 1);
                let sent = sink.send(Chunk::Data(bytes)).is_ok();
                if sent {
                    s.sink = Some(sink);
                }
                sent
            }
        };
        sent || s.ids
    }

    /// Whether stream `sid` takes what belongs to it: it is not over, and it is connected or
    /// can be resumed.
    fn takes(&self, sid: u64) -> bool {
        self.streams
            .get(&sid)
            .is_some_and(|s| !s.done && (s.sink.is_some() || s.ids))
    }

    fn live(&self, sid: u64) -> bool {
        self.streams
            .get(&sid)
            .is_some_and(|s| s.sink.is_some() && !s.done)
    }

    /// Ends stream `sid` once its answer is out.
    fn finish(&mut self, sid: u64) {
        if let Some(s) = self.streams.get_mut(&sid) {
            s.done = true;
            s.sink = None;
        }
        self.tokens.retain(|_, s| *s != sid);
    }
}

/// Routes one line the server wrote.
fn route(routes: &Mutex<Routes>, line: Bytes) {
    let mut r = lock(routes);
    let msg = serde_json::from_slice::<Value>(&line).ok();
    let field = |k: &str| msg.as_ref().and_then(|m| m.get(k));
    let is_response =
        field("method").is_none() && (field("result").is_some() || field("error").is_some());
    if r.legacy {
        if let Some(g) = r.get {
            r.push(g, line);
        }
        return;
    }
    if is_response
        && let Some(id) = field("id")
        && let Some(target) = r.pending.remove(&id.to_string())
    {
        match target {
            Target::Json(tx) => {
                let _ = tx.send(line.to_vec());
            }
            Target::Stream(sid) => {
                r.push(sid, line);
                r.finish(sid);
            }
        }
        return;
    }
    let token = field("params")
        .and_then(|p| p.get("progressToken"))
        .map(Value::to_string);
    if let Some(sid) = token.and_then(|t| r.tokens.get(&t).copied())
        && r.takes(sid)
        && r.push(sid, line.clone())
    {
        return;
    }
    if let Some(g) = r.get
        && r.live(g)
        && r.push(g, line.clone())
    {
        return;
    }
    let newest = r
        .streams
        .iter()
        .rev()
        .find(|(_, s)| s.sink.is_some() && !s.done && !s.standalone)
        .map(|(sid, _)| *sid);
    if let Some(sid) = newest
        && r.push(sid, line.clone())
    {
        return;
    }
    r.backlog.push_back(line);
    if r.backlog.len() > BACKLOG {
        r.backlog.pop_front();
    }
}
