//! The link of the HTTP transports: a bridge task between a duplex pipe of newline-delimited
//! frames (the transport task's end of the [`Link`]) and HTTP requests.
//!
//! Each frame the transport writes is handed to the current [`Leg`] (Streamable HTTP, or the
//! legacy HTTP+SSE transport), which posts it and forwards what comes back as frames. Every
//! request and stream the bridge starts is owned by the bridge task (its `Work`: the posts it
//! polls, the streams in a task set), so closing or dropping the link stops them all. The first failure ends the link: the pipe
//! closes and the closer's `exited` reports the typed reason.
//!
//! The transport task may also take the bridge's messages directly ([`open_messages`]): its
//! frames go straight to the leg and what comes back goes straight to the driver (credit
//! permitting, [`Delivery`]), with no pipe, no line splitting and no task between them. The
//! byte link ([`open`]) stays for [`Connector::connect`](super::Connector::connect).
//!
//! An automatic link starts with the Streamable HTTP leg and, when the server refuses the POST
//! of `initialize` (400, 404, 405, before any session), switches once to the [`Fallback`] leg
//! and posts `initialize` again there.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinSet;

use super::{Closer, Delivery, Link, Outbound, TransportError};
use crate::quiet::Quiet;
use mcp_machine::{Head, Modern, headers};
use serde_json::Value;
use std::borrow::Cow;

/// A boxed future, as legs return them.
pub(crate) type BoxFut<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// Bytes of the duplex pipe between the bridge and the transport task.
const PIPE: usize = 64 * 1024;

/// Why a leg could not post a frame.
pub(crate) enum PostError {
    /// The link ends with this reason.
    Fail(TransportError),
    /// The server refused `initialize` in a way that asks for the legacy transport; the link
    /// ends with this reason unless it can fall back.
    Fallback(TransportError),
}

impl From<TransportError> for PostError {
    fn from(e: TransportError) -> Self {
        PostError::Fail(e)
    }
}

/// Tells the bridge that the server has a frame posted in order (the headers of its answer
/// came), so the frames after it may go out while the rest of its answer is read. A post that
/// ends tells it as well; a `Received` dropped without [`Received::fire`] tells nothing.
pub(crate) struct Received(Option<oneshot::Sender<()>>);

impl Received {
    /// A signal, and what the bridge waits on.
    fn new() -> (Self, oneshot::Receiver<()>) {
        let (tx, rx) = oneshot::channel();
        (Received(Some(tx)), rx)
    }

    /// A signal nobody waits for (a frame not posted in order).
    pub(crate) fn none() -> Self {
        Received(None)
    }

    /// The server has the frame: the frames after it may go out.
    pub(crate) fn fire(&mut self) {
        if let Some(tx) = self.0.take() {
            let _ = tx.send(());
        }
    }
}

/// One HTTP transport's way of sending frames and receiving messages.
pub(crate) trait Leg: Send + Sync + 'static {
    /// Sends one frame (read as `head`); forwards what comes back through `out`. A frame
    /// posted in order may fire `received` once the server has it (its answer's headers came),
    /// so that the next frames need not wait for the rest of its answer.
    fn post(
        self: Arc<Self>,
        frame: String,
        head: Frame,
        out: Out,
        received: Received,
    ) -> BoxFut<Result<(), PostError>>;
    /// Teardown after the link ended (`DELETE` of a session), given why it ended.
    fn close(self: Arc<Self>, ended: Option<TransportError>) -> BoxFut<()>;
    /// Whether `frame` must be posted until the server has it (its post ended, or fired its
    /// [`Received`]) before the next frame is posted (its answer is quick, and bounded by the
    /// header bound), so that the server sees the frames in the order they were sent:
    /// `notifications/initialized` before the first request, a cancellation after its
    /// request. Other frames are posted concurrently.
    fn in_order(&self, frame: &Frame) -> bool;
    /// Called with each frame (its head) as soon as it is read, in order, before any frame
    /// after it is posted (and before its own post starts): for what must be known at once,
    /// such as which requests a later cancellation may name. Nothing by default.
    fn admit(&self, _frame: &Frame) {}
}

/// What the bridge and its leg know of a frame: its method, its id when it is a request, its
/// era and what its standard headers mirror, and the request a cancellation names. Taken from
/// the machine's [`Head`] when the machine wrote the frame (nothing is read); read once from
/// the bytes otherwise (frames handed to a transport bare, or through a byte link's pipe).
#[derive(Clone, Debug, Default)]
pub(crate) struct Frame {
    /// The JSON-RPC method, for requests and notifications.
    pub(crate) method: Option<Cow<'static, str>>,
    /// The id of a request (a frame with an id and a method); `None` otherwise.
    pub(crate) request: Option<Value>,
    /// What a frame of the 2026-07-28 era says of itself (its version and `Mcp-Name`):
    /// `Some` exactly for such a frame ([`mcp_machine::headers::is_modern`]).
    pub(crate) modern: Option<Box<Modern>>,
    /// The `params.requestId` of a `notifications/cancelled`.
    pub(crate) cancels: Option<Value>,
    /// A request of the machine's own, whose answer no caller reads (see [`Head::own`]);
    /// `false` for a frame read from its bytes.
    pub(crate) own: bool,
}

impl From<Head> for Frame {
    /// The machine's head, as it is: nothing to read.
    fn from(head: Head) -> Frame {
        Frame {
            request: head.request().map(Value::from),
            own: head.own(),
            method: head.method,
            modern: head.modern,
            cancels: head.cancels.map(Value::from),
        }
    }
}

impl Frame {
    /// Reads the head of a frame the machine did not describe: its method and id (a frame
    /// that is not a JSON object reads as neither), and, only when the frame may be modern or
    /// is a cancellation, the rest from one parse of the whole frame.
    pub(crate) fn read(frame: &str) -> Frame {
        #[derive(serde::Deserialize)]
        struct Head {
            id: Option<Value>,
            method: Option<String>,
        }
        let Ok(h) = serde_json::from_str::<Head>(frame) else {
            return Frame::default();
        };
        let mut read = Frame {
            request: h.id.filter(|_| h.method.is_some()),
            method: h.method.map(Cow::Owned),
            ..Frame::default()
        };
        // The searcher is built once: a `str::contains` would build one for every frame.
        static META: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
            std::sync::LazyLock::new(|| {
                memchr::memmem::Finder::new(headers::PROTOCOL_VERSION_META)
            });
        let cancellation = read.method.as_deref() == Some("notifications/cancelled");
        if !cancellation && META.find(frame.as_bytes()).is_none() {
            return read;
        }
        let Ok(value) = serde_json::from_str::<Value>(frame) else {
            return read;
        };
        let params = value.get("params");
        if cancellation {
            read.cancels = params.and_then(|p| p.get("requestId")).cloned();
        }
        let version = params
            .and_then(|p| p.get("_meta"))
            .and_then(|m| m.get(headers::PROTOCOL_VERSION_META))
            .and_then(Value::as_str);
        if let Some(version) = version {
            let name = read
                .method
                .as_deref()
                .and_then(headers::name_field)
                .and_then(|f| params?.get(f)?.as_str())
                .map(str::to_owned);
            read.modern = Some(Box::new(Modern {
                version: Cow::Owned(version.to_owned()),
                name,
            }));
        }
        read
    }

    /// Whether it has an id and a method.
    pub(crate) fn is_request(&self) -> bool {
        self.request.is_some()
    }

    /// Whether it is of the 2026-07-28 era.
    pub(crate) fn is_modern(&self) -> bool {
        self.modern.is_some()
    }

    /// What a modern frame's `Mcp-Name` header carries.
    pub(crate) fn name(&self) -> Option<&str> {
        self.modern.as_ref()?.name.as_deref()
    }

    /// Its standard headers when it is modern ([`headers::standard`]); none otherwise.
    pub(crate) fn standard_headers(&self) -> Vec<(&'static str, String)> {
        match &self.modern {
            Some(m) => {
                headers::standard_from(&m.version, self.method.as_deref(), m.name.as_deref())
            }
            None => Vec::new(),
        }
    }
}

/// Opens the legacy leg of an automatic link, and remembers which transport the server speaks.
pub(crate) trait Fallback: Send + Sync + 'static {
    /// Opens the fallback leg (its streams are started through `out`).
    fn open(&self, out: Out) -> BoxFut<Result<Arc<dyn Leg>, TransportError>>;
    /// The verdict: `true` if the server speaks only the legacy transport.
    fn decided(&self, legacy: bool);
}

/// What a leg hands messages, failures and background work to.
#[derive(Clone)]
pub(crate) struct Out {
    sink: Sink,
    ended: Arc<watch::Sender<Option<TransportError>>>,
    tasks: mpsc::UnboundedSender<BoxFut<()>>,
}

/// Where the messages a leg delivers go.
#[derive(Clone)]
enum Sink {
    /// Into the duplex pipe, as lines (a byte link).
    Pipe(mpsc::Sender<Vec<u8>>),
    /// Straight to the driver (a message link).
    Direct(Delivery),
}

impl Out {
    /// Hands one message (one line) to the transport; `false` once the link is gone.
    pub(crate) async fn deliver(&self, message: Vec<u8>) -> bool {
        match &self.sink {
            Sink::Pipe(frames) => frames.send(message).await.is_ok(),
            Sink::Direct(delivery) => match delivery.deliver(message).await {
                Ok(()) => true,
                Err(Some(reason)) => {
                    self.fail(reason);
                    false
                }
                Err(None) => false,
            },
        }
    }

    /// Ends the link with `reason` (the first reason wins).
    pub(crate) fn fail(&self, reason: TransportError) {
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

    /// Runs `task` for as long as the link lives.
    pub(crate) fn spawn(&self, task: impl Future<Output = ()> + Send + 'static) {
        let _ = self.tasks.send(Box::pin(task));
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

struct Bridge {
    leg: Mutex<Arc<dyn Leg>>,
    /// Until the verdict: how to fall back (automatic links only).
    fallback: Mutex<Option<Arc<dyn Fallback>>>,
    out: Out,
}

impl Bridge {
    fn leg(&self) -> Arc<dyn Leg> {
        Arc::clone(&lock(&self.leg))
    }

    async fn post_line(
        self: Arc<Self>,
        frame: String,
        head: Frame,
        initialize: bool,
        received: Received,
    ) {
        // Kept for the legacy leg only while the link may still fall back to it (a fallback
        // is only ever taken away, never given, after the link opened).
        let again = lock(&self.fallback)
            .is_some()
            .then(|| (frame.clone(), head.clone()));
        let result = self
            .leg()
            .post(frame, head, self.out.clone(), received)
            .await;
        let pending = lock(&self.fallback).clone();
        let reason = match (result, pending) {
            (Ok(()), None) => return,
            (Ok(()), Some(fallback)) => {
                if initialize {
                    lock(&self.fallback).take();
                    fallback.decided(false);
                }
                return;
            }
            (Err(PostError::Fail(e)), _) | (Err(PostError::Fallback(e)), None) => e,
            (Err(PostError::Fallback(refused)), Some(fallback)) => {
                let Some((frame, head)) = again else {
                    // Not reached: a fallback pending now was pending before the post.
                    self.out.fail(refused);
                    return;
                };
                lock(&self.fallback).take();
                tracing::debug!(target: "mcp::http", %refused, "falling back to the HTTP+SSE transport");
                match fallback.open(self.out.clone()).await {
                    Ok(leg) => {
                        fallback.decided(true);
                        *lock(&self.leg) = Arc::clone(&leg);
                        match leg
                            .post(frame, head, self.out.clone(), Received::none())
                            .await
                        {
                            Ok(()) => return,
                            Err(PostError::Fail(e) | PostError::Fallback(e)) => e,
                        }
                    }
                    Err(e) => match refused {
                        TransportError::Http { status, reason } => TransportError::Http {
                            status,
                            reason: format!(
                                "{reason}; the legacy HTTP+SSE transport failed too: {e}"
                            ),
                        },
                        other => other,
                    },
                }
            }
        };
        self.out.fail(reason);
    }
}

/// Work a link runs from its start (a stream its leg already opened), given the link's [`Out`].
pub(crate) type Start = Box<dyn FnOnce(Out) -> BoxFut<()> + Send>;

/// The bridge of a link over `leg` with `sink`, and the receiving end of its task queue.
fn bridge(
    leg: Arc<dyn Leg>,
    start: Option<Start>,
    fallback: Option<Arc<dyn Fallback>>,
    sink: Sink,
) -> (
    Arc<Bridge>,
    watch::Receiver<Option<TransportError>>,
    mpsc::UnboundedReceiver<BoxFut<()>>,
) {
    let (ended_tx, ended) = watch::channel(None);
    let (tasks_tx, tasks_rx) = mpsc::unbounded_channel();
    let bridge = Arc::new(Bridge {
        leg: Mutex::new(leg),
        fallback: Mutex::new(fallback),
        out: Out {
            sink,
            ended: Arc::new(ended_tx),
            tasks: tasks_tx,
        },
    });
    if let Some(start) = start {
        bridge.out.spawn(start(bridge.out.clone()));
    }
    (bridge, ended, tasks_rx)
}

/// Opens a bridged link over `leg`; `start` runs inside the link for its lifetime;
/// `fallback` makes it an automatic link.
pub(crate) fn open(
    leg: Arc<dyn Leg>,
    start: Option<Start>,
    fallback: Option<Arc<dyn Fallback>>,
    grace: Duration,
) -> Link {
    let (ours, theirs) = tokio::io::duplex(PIPE);
    let (reader, writer) = tokio::io::split(ours);
    let (frames_tx, frames_rx) = mpsc::channel::<Vec<u8>>(64);
    let (bridge, ended, tasks_rx) = bridge(leg, start, fallback, Sink::Pipe(frames_tx));
    let task = tokio::spawn(run(Arc::clone(&bridge), theirs, frames_rx, tasks_rx));
    Link {
        reader: Box::new(reader),
        writer: Box::new(writer),
        closer: Some(Box::new(BridgeCloser {
            bridge,
            ended,
            task: Some(task),
            grace,
        })),
    }
}

/// A link over a leg that carries whole messages: the transport task splits it
/// (`into_parts`), runs its pump with the driver's frames and its closer after,
/// and its messages reach the driver through the [`Delivery`] it was opened with. Not part of the API (see [`Connector`](super::Connector)'s hidden method).
pub struct MessageLink {
    bridge: Arc<Bridge>,
    tasks: mpsc::UnboundedReceiver<BoxFut<()>>,
    closer: Box<dyn Closer>,
}

impl std::fmt::Debug for MessageLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MessageLink").finish_non_exhaustive()
    }
}

/// Opens a message link over `leg` (see [`open`] for `start` and `fallback`) delivering
/// through `delivery`.
pub(crate) fn open_messages(
    leg: Arc<dyn Leg>,
    start: Option<Start>,
    fallback: Option<Arc<dyn Fallback>>,
    grace: Duration,
    delivery: Delivery,
) -> MessageLink {
    let (bridge, ended, tasks) = bridge(leg, start, fallback, Sink::Direct(delivery));
    MessageLink {
        bridge: Arc::clone(&bridge),
        tasks,
        closer: Box::new(BridgeCloser {
            bridge,
            ended,
            task: None,
            grace,
        }),
    }
}

impl MessageLink {
    /// Splits off the closer (run by the transport task after the pump ends).
    pub(crate) fn into_parts(self) -> (MessagePump, Box<dyn Closer>) {
        (
            MessagePump {
                bridge: self.bridge,
                tasks: self.tasks,
            },
            self.closer,
        )
    }
}

/// The running side of a [`MessageLink`].
pub(crate) struct MessagePump {
    bridge: Arc<Bridge>,
    tasks: mpsc::UnboundedReceiver<BoxFut<()>>,
}

impl MessagePump {
    /// Posts the frames the driver queues until `closing`; then posts the frames still queued
    /// and returns (the requests and streams it started end when the returned future is
    /// dropped). Failures end the link through its closer, not here.
    pub(crate) async fn run(
        self,
        frames: &mut mpsc::Receiver<Outbound>,
        closing: impl Future<Output = ()>,
    ) {
        let mut ended = self.bridge.out.ended.subscribe();
        let mut work = Work::new(self.bridge, self.tasks);
        // The rare branches are polled only when they woke (not once per message).
        let mut closing = Quiet::new(closing);
        let mut ended = Quiet::new(async move {
            let _ = ended.wait_for(Option::is_some).await;
        });
        let mut draining = false;
        // Once the link failed, no frame is posted any more (as a byte link's pipe closes):
        // what is under way goes on while the transport task lets it.
        let mut failed = false;
        loop {
            let frame = if draining {
                match frames.try_recv() {
                    Ok(frame) => frame,
                    Err(_) => return,
                }
            } else {
                tokio::select! {
                    biased;
                    () = &mut closing, if !failed => {
                        frames.close();
                        draining = true;
                        continue;
                    }
                    () = &mut ended, if !failed => {
                        failed = true;
                        continue;
                    }
                    () = work.step() => continue,
                    frame = frames.recv(), if !failed => match frame {
                        Some(frame) => frame,
                        None => return,
                    },
                }
            };
            let (bytes, head) = frame.into_parts();
            let line = String::from_utf8(bytes)
                .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
            // The machine's head when it wrote the frame; read from the bytes otherwise.
            let head = match head {
                Some(head) => Frame::from(head),
                None => Frame::read(&line),
            };
            work.take(line, head).await;
        }
    }
}

/// A link's work under way: its posts, polled by whoever runs the link (no task of their
/// own: an answer reaches the transport without another task's wake), and the background
/// work its leg starts (streams), each in a task. All of it ends when this is dropped.
struct Work {
    bridge: Arc<Bridge>,
    tasks: mpsc::UnboundedReceiver<BoxFut<()>>,
    set: JoinSet<()>,
    posts: FuturesUnordered<BoxFut<()>>,
}

impl Work {
    fn new(bridge: Arc<Bridge>, tasks: mpsc::UnboundedReceiver<BoxFut<()>>) -> Self {
        Work {
            bridge,
            tasks,
            set: JoinSet::new(),
            posts: FuturesUnordered::new(),
        }
    }

    /// Moves the work on by one event: a post ended, a background task started or ended.
    /// Never resolves when there is nothing to wait for. Cancel-safe.
    async fn step(&mut self) {
        tokio::select! {
            Some(()) = self.posts.next(), if !self.posts.is_empty() => {}
            Some(task) = self.tasks.recv() => {
                self.set.spawn(task);
            }
            Some(_) = self.set.join_next(), if !self.set.is_empty() => {}
            else => std::future::pending().await,
        }
    }

    /// Hands one frame to the leg: posted alongside the others, or, when the leg wants it in
    /// order, first until the server has it (the post ended, or the leg fired its
    /// [`Received`]: the rest of its answer is then read alongside the others). The link's
    /// other work goes on meanwhile. The wait is as long as the leg's bound on the answer's
    /// headers (the header bound), past which the post fails and with it the link.
    async fn take(&mut self, line: String, head: Frame) {
        self.bridge.leg().admit(&head);
        let initialize = head.method.as_deref() == Some("initialize");
        let in_order = self.bridge.leg().in_order(&head);
        let (received, released) = if in_order {
            let (received, released) = Received::new();
            (received, Some(released))
        } else {
            (Received::none(), None)
        };
        let mut post: BoxFut<()> =
            Box::pin(Arc::clone(&self.bridge).post_line(line, head, initialize, received));
        if let Some(released) = released {
            // A signal dropped unfired releases nothing: the post's end does.
            let released = async move {
                if released.await.is_err() {
                    std::future::pending::<()>().await;
                }
            };
            let mut released = std::pin::pin!(released);
            loop {
                tokio::select! {
                    () = &mut post => return,
                    () = &mut released => break,
                    () = self.step() => {}
                }
            }
        }
        self.posts.push(post);
    }
}

async fn run(
    bridge: Arc<Bridge>,
    pipe: tokio::io::DuplexStream,
    mut frames: mpsc::Receiver<Vec<u8>>,
    tasks: mpsc::UnboundedReceiver<BoxFut<()>>,
) {
    let (from_transport, mut to_transport) = tokio::io::split(pipe);
    // One writer into the pipe: frames are whole lines, never interleaved.
    let writer = async move {
        while let Some(mut frame) = frames.recv().await {
            frame.push(b'\n');
            if to_transport.write_all(&frame).await.is_err() {
                return;
            }
        }
    };
    // Every request and stream of the link; dropped (aborted) with the bridge.
    let mut work = Work::new(Arc::clone(&bridge), tasks);
    let work = async move {
        let mut lines = BufReader::new(from_transport).lines();
        loop {
            tokio::select! {
                line = lines.next_line() => match line {
                    Ok(Some(line)) => {
                        let head = Frame::read(&line);
                        work.take(line, head).await
                    }
                    // The transport closed its end: the link is closing.
                    _ => return,
                },
                () = work.step() => {}
            }
        }
    };
    // Once the link is failed, the pipe closes at once: the transport reads what was
    // delivered, then EOF, rather than waiting out its flush bound.
    let mut ended = bridge.out.ended.subscribe();
    let failed = async move {
        let _ = ended.wait_for(Option::is_some).await;
    };
    tokio::select! {
        () = writer => {}
        () = work => {}
        () = failed => {}
    }
}

/// Ends a bridged link: stops the bridge (and every request and stream it runs), then the
/// leg's teardown, bounded by the grace.
struct BridgeCloser {
    bridge: Arc<Bridge>,
    ended: watch::Receiver<Option<TransportError>>,
    /// The bridge task of a byte link (a message link has none: the transport task pumps it).
    task: Option<tokio::task::JoinHandle<()>>,
    grace: Duration,
}

impl BridgeCloser {
    fn abort(&self) {
        if let Some(task) = &self.task {
            task.abort();
        }
    }
}

impl Drop for BridgeCloser {
    fn drop(&mut self) {
        self.abort();
    }
}

impl Closer for BridgeCloser {
    fn close(self: Box<Self>) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        Box::pin(async move {
            self.abort();
            let ended = self.ended.borrow().clone();
            let teardown = self.bridge.leg().close(ended);
            if tokio::time::timeout(self.grace, teardown).await.is_err() {
                tracing::debug!(target: "mcp::http", "teardown at close timed out");
            }
        })
    }

    fn kill_now(&mut self) {
        self.abort();
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
        self.grace
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bare_frame_is_read_once_for_what_its_head_would_say() {
        let legacy = Frame::read(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#);
        assert_eq!(legacy.method.as_deref(), Some("ping"));
        assert_eq!(legacy.request, Some(Value::from(1)));
        assert!(!legacy.is_modern());
        let call = r#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"w","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#;
        let modern = Frame::read(call);
        assert_eq!(modern.modern.as_ref().unwrap().version, "2026-07-28");
        assert_eq!(modern.name(), Some("w"));
        assert_eq!(modern.request, Some(Value::from("a")));
        let value: Value = serde_json::from_str(call).unwrap();
        assert_eq!(modern.standard_headers(), headers::standard(&value));
        // The key elsewhere, or not a string: not modern.
        for not_modern in [
            r#"{"id":1,"method":"x","params":{"io.modelcontextprotocol/protocolVersion":"v"}}"#,
            r#"{"id":1,"method":"x","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":1}}}"#,
        ] {
            assert!(!Frame::read(not_modern).is_modern(), "{not_modern}");
        }
        let cancel = Frame::read(
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"r"}}"#,
        );
        assert_eq!(cancel.cancels, Some(Value::from("r")));
        assert!(!cancel.is_request());
        let garbage = Frame::read("not json");
        assert!(garbage.method.is_none() && garbage.request.is_none());
    }

    #[test]
    fn the_machines_head_is_taken_as_it_is() {
        let head = Head {
            kind: mcp_machine::FrameKind::Request { id: 7, own: false },
            method: Some(Cow::Borrowed("tools/call")),
            modern: Some(Box::new(Modern {
                version: Cow::Borrowed("2026-07-28"),
                name: Some("w".into()),
            })),
            cancels: None,
        };
        let frame = Frame::from(head);
        assert_eq!(frame.request, Some(Value::from(7)));
        assert!(frame.is_modern() && frame.is_request());
        assert_eq!(frame.standard_headers()[2], ("Mcp-Name", "w".to_owned()));
    }
}
