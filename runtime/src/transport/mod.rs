//! Transports: one tokio task per transport generation, moving newline-delimited JSON frames
//! between a byte link and the connection driver.
//!
//! The driver calls [`spawn`] with a [`Connector`] (a factory called again on every reconnect)
//! and gets a [`TransportHandle`]. The task reports [`TransportEvent`]s tagged with the
//! generation: `Up`, then `Frame`s (one per read credit), possibly `Oversized`, and always
//! exactly one final `Down`, even when the handle is dropped or the task is aborted.
//!
//! Flow control is credit-based: a frame is read from the link only while a credit granted with
//! [`TransportHandle::grant_credits`] is available (the machine opens a read window of several
//! credits and gives one back per frame taken), and, beyond the first frame waiting, only while
//! the frames delivered and not yet taken ([`TransportHandle::frame_taken`]) hold less than
//! [`READ_AHEAD_BYTES`]. So a fast server is held back by the OS pipe or socket buffer, and
//! what waits between the link and the driver stays bounded in frames and in bytes. Writing is independent of credit and goes through a bounded queue that
//! never makes the caller wait ([`TransportHandle::try_send`]).
//!
//! When a server process exits on its own, the frames it left in the pipe are still delivered
//! against credit, for at most the closer's flush timeout, before `Down(ChildExited)`.
//!
//! The HTTP transports' links carry whole messages instead of bytes: the task hands the
//! driver's frames straight to the link, and the link delivers each message straight to the
//! driver under the same credit, read-ahead and frame-limit rules (a hidden `Delivery`), so
//! no pipe, line splitting or extra task sits between the driver and the HTTP client.
//!
//! This module is not a protocol layer: what a message means for the connection is the
//! machine's business, and every message reaches the driver as it came. The stdio and stream
//! transports never parse JSON; they move lines (the driver hands them a frame's bytes alone:
//! [`TransportHandle::reads_heads`]).
//! The HTTP transports need to know what each outgoing frame is, and take it from the head the
//! machine wrote with it ([`mcp_machine::Head`], carried by [`Outbound`]): its method and id
//! (to pair a request with its POST), its era, its `MCP-Protocol-Version`, `Mcp-Method` and
//! `Mcp-Name` headers, and the request a cancellation names (to end that POST). They read an
//! outgoing frame the machine wrote only for a modern `tools/call` of a tool whose arguments
//! some `x-mcp-header` maps to an `Mcp-Param-*` header, and then only its `params.arguments`,
//! once. A frame handed over bare (bytes without a head: [`TransportHandle::try_send`] with a
//! `Vec<u8>`, or a line through a byte link's pipe) is read once for the same head. Of what
//! comes back they read: the id of a response (which POST it answers), the answers to modern
//! `tools/list` requests no client reads (for the tools' header mappings in the
//! [`ToolCatalog`](crate::ToolCatalog): the machine's own relist, or every answer on a link
//! whose catalog no client adopted), the `initialize` answer (for the session's protocol
//! version header), and the body of a refusal (to tell an expired session or a modern server).
//! When HTTP loses a request's answer they make one up: a JSON-RPC error with
//! [`HTTP_REFUSED`], [`STREAM_LOST`] or [`AUTH_REQUIRED`].

mod bridge;
#[doc(hidden)]
pub mod event_stream; // pub for fuzz/ only: not part of the API
#[doc(hidden)]
pub mod framing; // pub for fuzz/ only: not part of the API
pub mod http;
mod modern;
mod pending;
pub mod sse;
pub mod stdio;
pub mod stream;
mod web;

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufWriter};
use tokio::sync::{Semaphore, TryAcquireError, mpsc, watch};
use tokio::task::JoinHandle;
use tracing::Instrument;

use crate::quiet::Quiet;
use framing::{FrameReader, ReadFrame, write_frame};

pub use http::{AutoHttpConnector, HttpConnector, HttpVerdict};
pub use sse::SseConnector;
pub use stdio::{SERVER_STDERR_TARGET, StdioConnector, StdioConnectorBuilder};
pub use stream::StreamConnector;

/// The former name of [`ToolCatalog`](crate::ToolCatalog), the one catalog of listed tools
/// whose header mappings the HTTP transports read. Not a separate registry any more.
pub type ToolHeaderRegistry = crate::ToolCatalog;
pub(crate) use web::WebOptions;
pub use web::{
    DEFAULT_HTTP_CONNECT_TIMEOUT, DEFAULT_HTTP_HEADER_TIMEOUT, NoAnswer, RESERVED_HEADERS,
    RESERVED_PREFIX,
};

/// Default frame limit: 16 MiB. A frame of exactly this many bytes is accepted.
pub const DEFAULT_MAX_FRAME_BYTES: usize = 16 * 1024 * 1024;

/// Default capacity of the outgoing frame queue.
pub const DEFAULT_SEND_QUEUE: usize = 256;

/// How long an orderly close may spend flushing queued frames when the link has no
/// [`Closer`] to say otherwise; also how long a link that failed waits for the peer's exit.
const DEFAULT_FLUSH_TIMEOUT: Duration = Duration::from_secs(2);

/// Capacity of the write buffer in front of the link's writer.
const WRITE_BUFFER: usize = 64 * 1024;

/// Bytes of frames delivered and not yet taken past which no further frame is read, however
/// many credits remain (a lone frame waiting may be larger: it is bounded by the frame limit).
pub const READ_AHEAD_BYTES: usize = 1024 * 1024;

/// What a transport task reports to the driver, tagged by the task with its generation.
///
/// Not a protocol message: frames are opaque bytes; classifying them is the machine's job.
#[derive(Debug)]
pub enum TransportEvent {
    /// The link is connected and can send and receive.
    Up,
    /// One complete frame (one JSON-RPC message as bytes, no line ending, never empty).
    /// Only delivered after a credit.
    Frame(Vec<u8>),
    /// A frame exceeded the frame limit; `seen` bytes were read before giving up (it was NOT
    /// buffered whole). The task then ends the link (a `Down` follows).
    Oversized {
        /// Bytes of the oversized line read before giving up (always more than the limit).
        seen: usize,
    },
    /// The link ended (closed by us, EOF, spawn/connect error, write error, child exit).
    /// Exactly one per generation, always the last event.
    Down(TransportError),
}

pub use mcp_machine::codes::{AUTH_REQUIRED, HTTP_REFUSED, STREAM_LOST};
use mcp_machine::{Head, Outgoing};
pub use mcp_machine::{IoCause, SendOutcome, TransportError};

/// Transport settings, shared by every generation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TransportConfig {
    /// Largest accepted frame in bytes, line ending excluded (default 16 MiB; exactly that is
    /// accepted, one more byte is rejected with [`TransportEvent::Oversized`]).
    pub max_frame_bytes: usize,
    /// Capacity of the outgoing frame queue (default 256; 0 is treated as 1).
    pub send_queue: usize,
}

impl Default for TransportConfig {
    fn default() -> Self {
        Self {
            max_frame_bytes: DEFAULT_MAX_FRAME_BYTES,
            send_queue: DEFAULT_SEND_QUEUE,
        }
    }
}

/// Something that can open one link per generation: a factory, called again on every
/// reconnect. Not a link itself and holds no connection state.
pub trait Connector: Send + Sync + 'static {
    /// Opens a byte link. Errors become [`TransportEvent::Down`].
    fn connect(
        &self,
    ) -> Pin<Box<dyn Future<Output = Result<Link, TransportError>> + Send + 'static>>;
    /// Short human description for logs ("stdio: npx server-everything", "tcp 127.0.0.1:9000").
    fn describe(&self) -> String;
    /// What the latest link's peer said on the side, oldest first: the last lines of a child
    /// process's stderr (bounded). For error reports (a connect error shows it); not a protocol
    /// channel. Empty for links without one (the default).
    fn stderr_tail(&self) -> Vec<String> {
        Vec::new()
    }
    /// The process id of the server process the latest link talks to, while it runs (a
    /// stdio child); `None` for links without one (the default) and once it was reaped.
    fn server_pid(&self) -> Option<u32> {
        None
    }
    /// The URL of the server when it is reached over the network (the HTTP transports), for
    /// telemetry's `server.address` and `server.port`; `None` (the default) for a pipe.
    fn server_url(&self) -> Option<&reqwest::Url> {
        None
    }
    /// The session id the server gave the latest link (Streamable HTTP's `Mcp-Session-Id`),
    /// for telemetry's `mcp.session.id`; `None` (the default) where there is none.
    fn session_id(&self) -> Option<String> {
        None
    }
    /// The HTTP version of the latest response the server sent (`1.1`, `2`), for
    /// telemetry's `network.protocol.version`; `None` (the default) for a pipe and before
    /// the first response.
    fn protocol_version(&self) -> Option<&'static str> {
        None
    }
    /// Whether each request travels as an HTTP request whose headers mirror the tool arguments
    /// a tool's `x-mcp-header` annotations name (Streamable HTTP, 2026-07-28): the client then
    /// leaves out of its tool listings the tools whose annotations are invalid. `false` (the
    /// default) for byte-stream links, where the annotations may be ignored.
    fn mirrors_tool_headers(&self) -> bool {
        false
    }
    /// Not part of the API: opens a link that carries whole messages rather than bytes (the
    /// HTTP transports), whose messages reach the driver through `delivery`. `None` (the
    /// default) for byte links; the transport task then calls [`Connector::connect`].
    #[doc(hidden)]
    fn connect_messages(&self, _delivery: Delivery) -> Option<ConnectMessages> {
        None
    }
    /// Not part of the API: the catalog of listed tools this connector's links read (the
    /// Streamable HTTP transports, for the `Mcp-Param-*` headers), which the client built on
    /// it feeds. `None` (the default) for links that read none; the client keeps its own.
    #[doc(hidden)]
    fn tool_catalog(&self) -> Option<crate::ToolCatalog> {
        None
    }
    /// Not part of the API: whether this connector's links read the machine's [`Head`] of
    /// each frame (the HTTP transports: they would read the frame otherwise). `false` (the
    /// default) for byte links, to which the driver hands the bytes alone.
    #[doc(hidden)]
    fn reads_heads(&self) -> bool {
        false
    }
}

/// Not part of the API: the future of [`Connector::connect_messages`].
#[doc(hidden)]
pub type ConnectMessages =
    Pin<Box<dyn Future<Output = Result<MessageLink, TransportError>> + Send + 'static>>;

#[doc(hidden)]
pub use bridge::MessageLink;

/// Not part of the API: the way from a message link straight to the driver. It keeps the
/// rules of a byte link's reader: one frame per read credit, within the read-ahead budget,
/// no frame over the frame limit (that one is reported and ends the link), no empty frame,
/// and nothing after the generation's `Down`.
#[doc(hidden)]
#[derive(Clone)]
pub struct Delivery(Arc<DeliveryInner>);

struct DeliveryInner {
    events: mpsc::UnboundedSender<(u64, TransportEvent)>,
    generation: u64,
    credits: Arc<Semaphore>,
    ahead: Arc<Semaphore>,
    max_frame_bytes: usize,
    state: std::sync::Mutex<DeliveryState>,
    idle: tokio::sync::Notify,
}

/// Whether a [`Delivery`] takes new frames and sends any, and how many are under way.
struct DeliveryState {
    accepting: bool,
    open: bool,
    active: usize,
}

impl fmt::Debug for Delivery {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Delivery")
            .field("generation", &self.0.generation)
            .finish_non_exhaustive()
    }
}

/// Counts a delivery under way; wakes [`Delivery::settle`] when the last one ends.
struct Active<'a>(&'a DeliveryInner);

impl Drop for Active<'_> {
    fn drop(&mut self) {
        let mut state = self.0.lock();
        state.active -= 1;
        if state.active == 0 {
            self.0.idle.notify_waiters();
        }
    }
}

impl DeliveryInner {
    fn lock(&self) -> std::sync::MutexGuard<'_, DeliveryState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Delivery {
    fn new(events: &Events, credits: &Arc<Semaphore>, ahead: &Arc<Semaphore>, max: usize) -> Self {
        Delivery(Arc::new(DeliveryInner {
            events: events.tx.clone(),
            generation: events.generation,
            credits: Arc::clone(credits),
            ahead: Arc::clone(ahead),
            max_frame_bytes: max,
            state: std::sync::Mutex::new(DeliveryState {
                accepting: true,
                open: true,
                active: 0,
            }),
            idle: tokio::sync::Notify::new(),
        }))
    }

    /// Delivers one message once a credit and room in the read-ahead budget allow. `Err(None)`
    /// once the link no longer delivers; `Err(Some(reason))` when the message is over the
    /// frame limit (reported, and the link must end with `reason`).
    pub(crate) async fn deliver(&self, frame: Vec<u8>) -> Result<(), Option<TransportError>> {
        let d = &*self.0;
        if frame.is_empty() {
            return Ok(());
        }
        if frame.len() > d.max_frame_bytes {
            let seen = frame.len();
            let mut state = d.lock();
            if state.open {
                state.accepting = false;
                state.open = false;
                let _ = d
                    .events
                    .send((d.generation, TransportEvent::Oversized { seen }));
            }
            return Err(Some(TransportError::Oversized {
                seen,
                max: d.max_frame_bytes,
            }));
        }
        {
            let mut state = d.lock();
            if !state.accepting {
                return Err(None);
            }
            state.active += 1;
        }
        let _active = Active(d);
        let Ok(credit) = d.credits.acquire().await else {
            return Err(None);
        };
        let cost = u32::try_from(ahead_cost(frame.len())).unwrap_or(u32::MAX);
        let Ok(room) = d.ahead.acquire_many(cost).await else {
            return Err(None);
        };
        let state = d.lock();
        if !state.open {
            return Err(None);
        }
        credit.forget();
        room.forget();
        let _ = d.events.send((d.generation, TransportEvent::Frame(frame)));
        Ok(())
    }

    /// Takes no new message; waits for those under way (credit permitting).
    async fn settle(&self) {
        self.0.lock().accepting = false;
        loop {
            let idle = self.0.idle.notified();
            let mut idle = std::pin::pin!(idle);
            idle.as_mut().enable();
            if self.0.lock().active == 0 {
                return;
            }
            idle.await;
        }
    }

    /// Sends nothing more (before the generation's `Down`).
    fn shut(&self) {
        let mut state = self.0.lock();
        state.accepting = false;
        state.open = false;
    }
}

/// An open byte link: newline-delimited JSON both ways (MCP stdio framing, also used for
/// TCP, Unix sockets and in-memory duplex pipes). Owned by one transport task.
pub struct Link {
    /// Bytes from the peer.
    pub reader: Box<dyn AsyncRead + Send + Unpin>,
    /// Bytes to the peer. Dropped (closed) before the closer runs.
    pub writer: Box<dyn AsyncWrite + Send + Unpin>,
    /// Teardown beyond closing the streams (a child process to stop and reap), if any.
    pub closer: Option<Box<dyn Closer>>,
}

impl fmt::Debug for Link {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Link")
            .field("closer", &self.closer.is_some())
            .finish_non_exhaustive()
    }
}

/// Graceful teardown of what lives behind a link, run after the writer was closed (child
/// processes: wait → SIGTERM group → wait → SIGKILL → reap). Not responsible for the streams.
pub trait Closer: Send {
    /// Orderly teardown; the transport awaits it before reporting `Down`. If this future is
    /// dropped before it completes, the implementation must still tear down (kill) promptly.
    fn close(self: Box<Self>) -> Pin<Box<dyn Future<Output = ()> + Send>>;
    /// Immediate teardown without waiting (used on drop/abort). Must be idempotent.
    fn kill_now(&mut self);
    /// A future that resolves when the peer ended on its own (a child process exited), with
    /// the reason; `None` (the default) when the closer cannot tell. Must be cancel-safe.
    fn exited(&mut self) -> Option<Pin<Box<dyn Future<Output = TransportError> + Send + '_>>> {
        None
    }
    /// How long the transport may spend flushing queued frames on close, and how long it waits
    /// for [`Closer::exited`] after the link failed. Default 2 s.
    fn flush_timeout(&self) -> Duration {
        DEFAULT_FLUSH_TIMEOUT
    }
}

/// The driver's handle on one transport generation (a spawned tokio task).
///
/// Dropping it without [`close`](TransportHandle::close) tears the link down promptly (for a
/// child process: SIGKILL to its process group, then it is reaped); the task still reports a
/// final `Down(Closed)`. Dropping it after `close` lets the orderly close finish.
pub struct TransportHandle {
    generation: u64,
    frames: mpsc::Sender<Outbound>,
    credits: Arc<Semaphore>,
    /// The read-ahead budget in bytes ([`READ_AHEAD_BYTES`] permits).
    ahead: Arc<Semaphore>,
    closing: watch::Sender<bool>,
    task: JoinHandle<()>,
    /// Its connector's [`Connector::reads_heads`].
    reads_heads: bool,
}

/// One frame for a transport to send: its JSON bytes (no newline) and, when the connection's
/// machine wrote it, the machine's [`Head`] of it, so that a transport that must know what the
/// frame is (HTTP: its method, its id, its era) knows it without reading the JSON.
///
/// Made from an [`Outgoing`] (bytes and head) or from bare bytes (no head: the HTTP transports
/// then read what they need of the bytes themselves). Not a parsed message: the byte-stream
/// transports only write the bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outbound {
    bytes: Vec<u8>,
    /// Boxed: a frame queued for a byte link carries none, and stays as small as its bytes.
    head: Option<Box<Head>>,
}

impl Outbound {
    /// The bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The machine's head of the frame, when the machine wrote it.
    pub fn head(&self) -> Option<&Head> {
        self.head.as_deref()
    }

    /// The bytes and the head, taken apart.
    pub(crate) fn into_parts(self) -> (Vec<u8>, Option<Head>) {
        (self.bytes, self.head.map(|h| *h))
    }
}

impl From<Vec<u8>> for Outbound {
    /// Bare bytes, without a head.
    fn from(bytes: Vec<u8>) -> Self {
        Outbound { bytes, head: None }
    }
}

impl From<Outgoing> for Outbound {
    /// A frame the machine wrote, with its head.
    fn from(frame: Outgoing) -> Self {
        Outbound {
            bytes: frame.bytes,
            head: Some(Box::new(frame.head)),
        }
    }
}

impl TransportHandle {
    /// The generation this handle was spawned for.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Whether its link reads the machine's [`Head`] of a frame (see [`Outbound`]): when not,
    /// a frame is best handed over as its bytes alone.
    pub fn reads_heads(&self) -> bool {
        self.reads_heads
    }

    /// Queue one frame (bounded queue; never waits). `Busy` when full, `Failed` when the task
    /// is gone or closing. The frame must not contain `\n`; the task appends it. Bare bytes
    /// (`Vec<u8>`) or the machine's [`Outgoing`] (whose head spares the HTTP transports
    /// reading the frame).
    pub fn try_send(&self, frame: impl Into<Outbound>) -> SendOutcome {
        if *self.closing.borrow() {
            return SendOutcome::Failed;
        }
        match self.frames.try_send(frame.into()) {
            Ok(()) => SendOutcome::Ok,
            Err(mpsc::error::TrySendError::Full(_)) => SendOutcome::Busy,
            Err(mpsc::error::TrySendError::Closed(_)) => SendOutcome::Failed,
        }
    }

    /// Allow exactly one more frame to be read and delivered. Credits accumulate.
    pub fn grant_credit(&self) {
        self.grant_credits(1);
    }

    /// Allow `credits` more frames to be read and delivered (a read window when the link
    /// opens, one per frame taken after). Credits accumulate.
    pub fn grant_credits(&self, credits: u32) {
        self.credits.add_permits(
            usize::try_from(credits)
                .unwrap_or(usize::MAX)
                .min(Semaphore::MAX_PERMITS / 2),
        );
    }

    /// Says a delivered frame was taken off the event queue: its bytes leave the read-ahead
    /// budget. Call it once per [`TransportEvent::Frame`] of this generation.
    pub fn frame_taken(&self, frame: &[u8]) {
        self.ahead.add_permits(ahead_cost(frame.len()));
    }

    /// Begin an orderly close (idempotent, non-blocking). The task flushes queued frames
    /// (bounded by the closer's flush timeout), closes the writer, runs the closer (child
    /// shutdown), then sends `Down(Closed)`.
    pub fn close(&self) {
        self.closing.send_replace(true);
    }

    /// Whether the task has finished.
    pub fn is_finished(&self) -> bool {
        self.task.is_finished()
    }
}

impl fmt::Debug for TransportHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TransportHandle")
            .field("generation", &self.generation)
            .field("closing", &*self.closing.borrow())
            .field("finished", &self.task.is_finished())
            .finish()
    }
}

impl Drop for TransportHandle {
    fn drop(&mut self) {
        if !*self.closing.borrow() {
            // Dropping the task's future runs its guards: the closer's kill_now and Down(Closed).
            self.task.abort();
        }
    }
}

/// Spawn the task for generation `gen`; events go to `events` tagged with `gen`.
///
/// Must be called inside a tokio runtime. Never blocks; connecting happens in the task.
pub fn spawn(
    connector: Arc<dyn Connector>,
    r#gen: u64,
    config: TransportConfig,
    events: mpsc::UnboundedSender<(u64, TransportEvent)>,
) -> TransportHandle {
    let (frames_tx, frames_rx) = mpsc::channel(config.send_queue.max(1));
    let credits = Arc::new(Semaphore::new(0));
    let ahead = Arc::new(Semaphore::new(READ_AHEAD_BYTES));
    let (closing_tx, closing_rx) = watch::channel(false);
    let reads_heads = connector.reads_heads();
    let span = tracing::debug_span!("transport", generation = r#gen, link = %connector.describe());
    let task = Task {
        events: Events {
            tx: events,
            generation: r#gen,
            down_sent: false,
        },
        config,
        frames: frames_rx,
        credits: Arc::clone(&credits),
        ahead: Arc::clone(&ahead),
        closing: closing_rx,
    };
    let task = tokio::spawn(task.run(connector).instrument(span));
    TransportHandle {
        generation: r#gen,
        frames: frames_tx,
        credits,
        ahead,
        closing: closing_tx,
        task,
        reads_heads,
    }
}

/// The event sender; reports `Down(Closed)` when dropped without having sent a `Down`, so a
/// generation always ends with exactly one `Down` (also on abort or panic).
struct Events {
    tx: mpsc::UnboundedSender<(u64, TransportEvent)>,
    generation: u64,
    down_sent: bool,
}

impl Events {
    fn send(&self, event: TransportEvent) {
        let _ = self.tx.send((self.generation, event));
    }

    fn down(mut self, reason: TransportError) {
        tracing::debug!(%reason, "transport down");
        self.down_sent = true;
        self.send(TransportEvent::Down(reason));
    }
}

impl Drop for Events {
    fn drop(&mut self) {
        if !self.down_sent {
            self.down_sent = true;
            self.send(TransportEvent::Down(TransportError::Closed));
        }
    }
}

/// Holds the link's closer; kills immediately when dropped before the orderly close ran.
struct CloserSlot(Option<Box<dyn Closer>>);

impl CloserSlot {
    async fn exited(&mut self) -> TransportError {
        match self.0.as_mut().and_then(|c| c.exited()) {
            Some(f) => f.await,
            None => std::future::pending().await,
        }
    }

    /// How long the link may flush on close and wait for its peer's exit.
    fn flush_bound(&self) -> Duration {
        self.0
            .as_ref()
            .map_or(DEFAULT_FLUSH_TIMEOUT, |c| c.flush_timeout())
    }

    fn watches_exit(&mut self) -> bool {
        self.0.as_mut().is_some_and(|c| c.exited().is_some())
    }
}

impl Drop for CloserSlot {
    fn drop(&mut self) {
        if let Some(c) = self.0.as_mut() {
            c.kill_now();
        }
    }
}

/// How the connected phase ended.
enum End {
    /// We closed: queued frames were flushed (or the flush timed out).
    Closed,
    /// A frame was too large.
    Oversized { seen: usize },
    /// The peer process ended on its own.
    Exited(TransportError),
    /// The link failed (EOF, truncated frame, read or write error).
    Failed(TransportError),
}

struct Task {
    events: Events,
    config: TransportConfig,
    frames: mpsc::Receiver<Outbound>,
    credits: Arc<Semaphore>,
    ahead: Arc<Semaphore>,
    closing: watch::Receiver<bool>,
}

/// A link as its connector opened it.
enum Opened {
    Bytes(Link),
    Messages(MessageLink),
}

impl Task {
    async fn run(self, connector: Arc<dyn Connector>) {
        let delivery = Delivery::new(
            &self.events,
            &self.credits,
            &self.ahead,
            self.config.max_frame_bytes,
        );
        let connect: Pin<Box<dyn Future<Output = Result<Opened, TransportError>> + Send>> =
            match connector.connect_messages(delivery.clone()) {
                Some(open) => Box::pin(async move { open.await.map(Opened::Messages) }),
                None => {
                    let open = connector.connect();
                    Box::pin(async move { open.await.map(Opened::Bytes) })
                }
            };
        let opened = tokio::select! {
            biased;
            _ = wait_closing(self.closing.clone()) => Err(TransportError::Closed),
            opened = connect => opened,
        };
        match opened {
            Ok(Opened::Bytes(link)) => self.run_bytes(link).await,
            Ok(Opened::Messages(link)) => self.run_messages(link, delivery).await,
            Err(e) => self.events.down(e),
        }
    }

    /// Runs a message link: the driver's frames go to its pump, its messages come back
    /// through `delivery`.
    async fn run_messages(mut self, link: MessageLink, delivery: Delivery) {
        let (pump, closer) = link.into_parts();
        let mut closer = CloserSlot(Some(closer));
        let flush_bound = closer.flush_bound();
        tracing::debug!("transport up (messages)");
        self.events.send(TransportEvent::Up);
        let close_deadline = Quiet::new(close_deadline(self.closing.clone(), flush_bound));
        // The pump owns the link's requests and streams: they run (and answers are delivered)
        // while it is polled, and end when it is dropped, at the end of this block.
        let reason = {
            let pump = pump.run(&mut self.frames, wait_closing(self.closing.clone()));
            let mut pump = std::pin::pin!(pump);
            tokio::select! {
                biased;
                () = &mut pump => TransportError::Closed,
                reason = Quiet::new(closer.exited()) => {
                    // What is being delivered still reaches the driver (credit permitting),
                    // bounded as a byte link's reader is after its peer ended.
                    let settle = tokio::time::timeout(flush_bound, delivery.settle());
                    tokio::select! {
                        _ = settle => {}
                        () = &mut pump => {}
                    }
                    reason
                }
                () = close_deadline => {
                    tracing::debug!(?flush_bound, "flush on close timed out");
                    TransportError::Closed
                }
            }
        };
        delivery.shut();
        if let Some(c) = closer.0.take() {
            c.close().await;
        }
        self.events.down(reason);
    }

    /// Runs a byte link: frames are written to it as lines, read from it against credit.
    async fn run_bytes(mut self, link: Link) {
        let Link {
            reader,
            writer,
            closer,
        } = link;
        let mut closer = CloserSlot(closer);
        let flush_bound = closer.flush_bound();
        tracing::debug!("transport up");
        self.events.send(TransportEvent::Up);

        let mut pump = Pump {
            frames: FrameReader::new(reader, self.config.max_frame_bytes),
            credits: Arc::clone(&self.credits),
            ahead: Arc::clone(&self.ahead),
            have_credit: false,
            held: None,
        };
        let mut writer = BufWriter::with_capacity(WRITE_BUFFER, writer);

        let end = {
            // The rare branches are polled only when they woke (not once per frame).
            let close_deadline = Quiet::new(close_deadline(self.closing.clone(), flush_bound));
            // Biased: the branches are polled in a fixed order (each runs until the link ends,
            // so none starves), which makes a run on a paused clock replay exactly.
            tokio::select! {
                biased;
                end = write_loop(&mut self.frames, &mut writer, self.closing.clone()) => end,
                end = pump.run(&self.events) => end,
                reason = Quiet::new(closer.exited()) => End::Exited(reason),
                () = close_deadline => {
                    tracing::debug!(?flush_bound, "flush on close timed out");
                    End::Closed
                }
            }
        };

        let max = self.config.max_frame_bytes;
        let (reason, failed) = match end {
            End::Closed => (TransportError::Closed, false),
            End::Oversized { seen } => {
                self.events.send(TransportEvent::Oversized { seen });
                (TransportError::Oversized { seen, max }, false)
            }
            End::Exited(reason) => {
                // Deliver what the process left in the pipe (credit permitting), bounded.
                if let Ok(End::Oversized { seen }) =
                    tokio::time::timeout(flush_bound, pump.run(&self.events)).await
                {
                    self.events.send(TransportEvent::Oversized { seen });
                }
                (reason, false)
            }
            End::Failed(error) => (error, true),
        };
        // Closing the writer (for a child: its stdin) is the first step of every shutdown.
        drop(writer);
        // A failed link often means the server is exiting; prefer its exit status as reason.
        let reason = if failed && closer.watches_exit() {
            tokio::time::timeout(flush_bound, closer.exited())
                .await
                .unwrap_or(reason)
        } else {
            reason
        };
        drop(pump);
        if let Some(c) = closer.0.take() {
            c.close().await;
        }
        self.events.down(reason);
    }
}

/// Resolves `bound` after a close was requested: the most an orderly close may take.
async fn close_deadline(closing: watch::Receiver<bool>, bound: Duration) {
    wait_closing(closing).await;
    tokio::time::sleep(bound).await;
}

/// Resolves once a close was requested (or the handle is gone).
async fn wait_closing(mut closing: watch::Receiver<bool>) {
    let _ = closing.wait_for(|c| *c).await;
}

/// Writes queued frames, batching and flushing; on close drains the queue, flushes and shuts
/// the writer down.
async fn write_loop<W: AsyncWrite + Unpin>(
    frames: &mut mpsc::Receiver<Outbound>,
    writer: &mut W,
    closing: watch::Receiver<bool>,
) -> End {
    // Polled only when it woke, not once per frame written.
    let mut closed = Quiet::new(wait_closing(closing));
    loop {
        tokio::select! {
            biased;
            () = &mut closed => {
                frames.close();
                let result = async {
                    while let Ok(frame) = frames.try_recv() {
                        write_frame(writer, &frame.bytes).await?;
                    }
                    writer.flush().await?;
                    writer.shutdown().await
                }
                .await;
                if let Err(e) = result {
                    tracing::debug!(error = %e, "write failed while closing");
                }
                return End::Closed;
            }
            frame = frames.recv() => {
                let Some(frame) = frame else { return End::Closed };
                let result = async {
                    write_frame(writer, &frame.bytes).await?;
                    while let Ok(frame) = frames.try_recv() {
                        write_frame(writer, &frame.bytes).await?;
                    }
                    writer.flush().await
                }
                .await;
                if let Err(e) = result {
                    return End::Failed(TransportError::io(e));
                }
            }
        }
    }
}

/// What a frame weighs against the read-ahead budget: its size, at most the whole budget (a
/// frame larger than the budget waits until nothing else is waiting).
fn ahead_cost(len: usize) -> usize {
    len.clamp(1, READ_AHEAD_BYTES)
}

/// Takes `n` permits of `semaphore` for good: at once when they are at hand (no wait is
/// built: the common case, the read window being several frames wide), else once they come.
/// `false` when the semaphore was closed.
async fn take_permits(semaphore: &Semaphore, n: u32) -> bool {
    let permit = match semaphore.try_acquire_many(n) {
        Ok(permit) => Some(permit),
        Err(TryAcquireError::NoPermits) => semaphore.acquire_many(n).await.ok(),
        Err(TryAcquireError::Closed) => None,
    };
    permit.map(tokio::sync::SemaphorePermit::forget).is_some()
}

/// The credit-gated read side. Its state lives outside the `run` future, so `run` can be
/// cancelled and resumed without losing a credit, a partial line or a frame read.
struct Pump {
    frames: FrameReader<Box<dyn AsyncRead + Send + Unpin>>,
    credits: Arc<Semaphore>,
    ahead: Arc<Semaphore>,
    have_credit: bool,
    /// A frame read and waiting for room in the read-ahead budget.
    held: Option<Vec<u8>>,
}

impl Pump {
    async fn run(&mut self, events: &Events) -> End {
        loop {
            if !self.have_credit {
                // The semaphore is never closed; treat it like a close anyway.
                if !take_permits(&self.credits, 1).await {
                    return End::Closed;
                }
                self.have_credit = true;
            }
            // Cancel-safe: a frame read is held here until the budget has room for it.
            let frame = match self.held.take() {
                Some(frame) => frame,
                None => match self.frames.next_frame().await {
                    Ok(ReadFrame::Frame(frame)) => frame,
                    Ok(ReadFrame::Oversized { seen }) => return End::Oversized { seen },
                    Ok(ReadFrame::Eof) => return End::Failed(TransportError::Eof),
                    Ok(ReadFrame::Truncated { partial }) => {
                        return End::Failed(TransportError::Truncated { partial });
                    }
                    Err(e) => return End::Failed(TransportError::io(e)),
                },
            };
            let cost = u32::try_from(ahead_cost(frame.len())).unwrap_or(u32::MAX);
            self.held = Some(frame);
            if !take_permits(&self.ahead, cost).await {
                return End::Closed;
            }
            if let Some(frame) = self.held.take() {
                self.have_credit = false;
                events.send(TransportEvent::Frame(frame));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A delivery for generation 7 with no credit yet, and the driver's end of its events.
    fn delivery(
        max: usize,
    ) -> (
        Delivery,
        Arc<Semaphore>,
        mpsc::UnboundedReceiver<(u64, TransportEvent)>,
    ) {
        let (tx, rx) = mpsc::unbounded_channel();
        let events = Events {
            tx,
            generation: 7,
            down_sent: true,
        };
        let credits = Arc::new(Semaphore::new(0));
        let ahead = Arc::new(Semaphore::new(READ_AHEAD_BYTES));
        (Delivery::new(&events, &credits, &ahead, max), credits, rx)
    }

    #[tokio::test]
    async fn a_message_waits_for_a_credit_and_goes_out_tagged() {
        let (d, credits, mut rx) = delivery(64);
        let pending = tokio::spawn({
            let d = d.clone();
            async move { d.deliver(b"{\"a\":1}".to_vec()).await }
        });
        tokio::task::yield_now().await;
        assert!(rx.try_recv().is_err(), "delivered without a credit");
        credits.add_permits(1);
        assert!(pending.await.unwrap().is_ok());
        match rx.recv().await {
            Some((7, TransportEvent::Frame(f))) => assert_eq!(f, b"{\"a\":1}"),
            other => panic!("unexpected {other:?}"),
        }
        // An empty message is no frame and takes no credit.
        assert!(d.deliver(Vec::new()).await.is_ok());
        assert!(rx.try_recv().is_err());
    }

    #[tokio::test]
    async fn an_oversized_message_is_reported_once_and_nothing_follows() {
        let (d, credits, mut rx) = delivery(4);
        credits.add_permits(10);
        match d.deliver(b"12345".to_vec()).await {
            Err(Some(TransportError::Oversized { seen: 5, max: 4 })) => {}
            other => panic!("unexpected {other:?}"),
        }
        assert!(matches!(
            rx.try_recv(),
            Ok((7, TransportEvent::Oversized { seen: 5 }))
        ));
        assert!(matches!(d.deliver(b"1".to_vec()).await, Err(None)));
        assert!(rx.try_recv().is_err());
    }

    #[tokio::test]
    async fn nothing_is_sent_after_shut_even_when_a_credit_comes() {
        let (d, credits, mut rx) = delivery(64);
        let pending = tokio::spawn({
            let d = d.clone();
            async move { d.deliver(b"{}".to_vec()).await }
        });
        tokio::task::yield_now().await;
        d.shut();
        credits.add_permits(1);
        assert!(matches!(pending.await.unwrap(), Err(None)));
        assert!(rx.try_recv().is_err());
        assert!(matches!(d.deliver(b"{}".to_vec()).await, Err(None)));
    }

    #[tokio::test]
    async fn settling_lets_deliveries_under_way_finish_and_refuses_new_ones() {
        let (d, credits, mut rx) = delivery(64);
        let pending = tokio::spawn({
            let d = d.clone();
            async move { d.deliver(b"{}".to_vec()).await }
        });
        tokio::task::yield_now().await;
        let settled = tokio::spawn({
            let d = d.clone();
            async move { d.settle().await }
        });
        tokio::task::yield_now().await;
        assert!(!settled.is_finished(), "settled with a delivery under way");
        assert!(matches!(d.deliver(b"{}".to_vec()).await, Err(None)));
        credits.add_permits(1);
        assert!(pending.await.unwrap().is_ok());
        settled.await.unwrap();
        assert!(matches!(rx.try_recv(), Ok((7, TransportEvent::Frame(_)))));
        assert!(rx.try_recv().is_err());
    }
}
