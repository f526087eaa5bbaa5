//! `mcp-bridge`: an MCP server front for a host, forwarding everything to one upstream server
//! through the client library (`mcp-runtime`), so that a host that only starts stdio servers
//! reaches a remote server (Streamable HTTP, legacy HTTP+SSE, either protocol era, OAuth) or
//! another stdio server with the client's guarantees: reconnect, session re-initialization,
//! era translation, bounded everything.
//!
//! What the host sees is one server speaking its era, the handshake one (`initialize`,
//! 2024-11-05 … 2025-11-25) or 2026-07-28 (`server/discover`, stateless requests, input asked
//! in a call's `input_required` answer), over newline-delimited JSON-RPC (or Streamable HTTP,
//! [`http`]); every decision about what it is owed is the front's table (`spec/front.toml`,
//! run by [`mcp_machine::front::FrontCore`]):
//!
//! - its requests are answered exactly once (a request it cancels with
//!   `notifications/cancelled`, never), with the upstream's result or JSON-RPC error as sent,
//!   or with the bridge's own error: -32001 when the upstream did not answer within
//!   [`BridgeOptions::call_timeout`], -32000 when the upstream is unavailable or the
//!   connection was lost during the call (a call is never sent twice);
//! - its progress tokens are kept: the upstream's progress reaches it under its own token;
//! - the upstream's requests (sampling, elicitation, roots, and the input rounds of a
//!   2026-07-28 server, which the client asks as the same requests) reach it as requests of
//!   the bridge's, answered back; one the upstream gives up on is cancelled with
//!   `notifications/cancelled`;
//! - the upstream's notifications reach it as sent (logging, resource updates,
//!   `…/list_changed`, …); a list that changed across a reconnect is told with
//!   `…/list_changed` too;
//! - a reconnect, a new session or a crash of the upstream is invisible except to a call in
//!   flight at that moment, which fails with -32000.
//!
//! What it is not (yet): task-augmented requests are not offered to the host (the `tasks`
//! capability is removed from what it sees; a tool that needs a task runs as one, polled by
//! the bridge).
//!
//! ```no_run
//! # async fn run() {
//! use mcp_bridge::Bridge;
//! use mcp_runtime::ClientBuilder;
//!
//! let bridge = Bridge::new(|_host| {
//!     ClientBuilder::http("https://example.com/mcp").expect("a URL")
//! });
//! let report = bridge.serve_stdio(std::future::pending()).await;
//! eprintln!("{} requests, {} answered", report.requests, report.answered);
//! # }
//! ```

mod forward;
mod group;
mod handler;
pub mod http;
mod report;
mod session;
mod stdio;
mod upstream;

use std::future::Future;
use std::time::Duration;

use mcp_runtime::group::{GroupBuilder, GroupConfig};
use mcp_runtime::{ClientBuilder, Provides};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;

pub use crate::report::{BridgeReport, Ended};
pub use crate::upstream::HANDSHAKE_VERSIONS;

/// What the bridge connects to, made once the host said who it is (the bridge sets the
/// handler: whatever handler a builder had is replaced).
#[non_exhaustive]
pub enum Upstream {
    /// One server, through this client.
    Client(Box<ClientBuilder>),
    /// Every enabled server of a host's configuration, as one group whose merged view the host
    /// sees ([`mcp_runtime::group`]).
    Group(Box<GroupBuilder>, Box<GroupConfig>),
}

/// Makes the upstream once the host said who it is.
pub type MakeUpstream = Box<dyn FnOnce(&HostInfo) -> Upstream + Send>;

/// What the host declared in its `initialize`: the capabilities the upstream client declares
/// in its turn, and the handshake revision the bridge answers with.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct HostInfo {
    /// The host's `clientInfo.name`.
    pub name: String,
    /// The host's `clientInfo.version`.
    pub version: String,
    /// The revision agreed with the host (its own, when it is one of [`HANDSHAKE_VERSIONS`]).
    pub protocol_version: String,
    /// The server requests the host answers (sampling, roots, elicitation and its URL mode).
    pub capabilities: Provides,
    /// Whether the host says when its roots change.
    pub roots_list_changed: bool,
}

/// The bounds of a bridge session. Every one has a default fit for a desktop host.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct BridgeOptions {
    /// The longest line accepted from the host (default 16 MiB); a longer one is answered
    /// with -32600 and skipped.
    pub max_frame_bytes: usize,
    /// Host requests in flight at once (default 1024); more are answered with -32000.
    pub max_in_flight: usize,
    /// How long a forwarded request may wait for the upstream (default 10 minutes: the host
    /// has its own bound and can cancel).
    pub call_timeout: Duration,
    /// How long a server request forwarded to the host waits for its answer (default 10
    /// minutes: a person may be answering); then the upstream gets an error and the host
    /// `notifications/cancelled`.
    pub server_request_timeout: Duration,
    /// How long the end of a session waits for the upstream to stop and its processes to be
    /// reaped (default 10 s; the stdio transport escalates to SIGKILL within it).
    pub close_bound: Duration,
    /// What an authorization failure tells the host to do (for `mcpc bridge`: run
    /// `mcpc --http URL login`); never a token.
    pub login_hint: Option<String>,
    /// Frames queued for the host before the bridge waits for it to read (default 1024).
    pub out_queue: usize,
    /// Whether a call that comes while the upstream reconnects waits for it (within
    /// [`BridgeOptions::call_timeout`]) rather than failing at once (default `true`: a
    /// reconnect is invisible to the host but for the calls it cut).
    pub wait_for_ready: bool,
}

impl Default for BridgeOptions {
    fn default() -> Self {
        BridgeOptions {
            max_frame_bytes: 16 << 20,
            max_in_flight: 1024,
            call_timeout: Duration::from_secs(600),
            server_request_timeout: Duration::from_secs(600),
            close_bound: Duration::from_secs(10),
            login_hint: None,
            out_queue: 1024,
            wait_for_ready: true,
        }
    }
}

/// A bridge: a server front for one host, an upstream client made when the host initializes.
pub struct Bridge {
    make: MakeUpstream,
    options: BridgeOptions,
}

impl std::fmt::Debug for Bridge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bridge")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl Bridge {
    /// A bridge whose upstream client is built by `make` when the host's `initialize` arrives
    /// (so that the client declares what the host answers).
    pub fn new(make: impl FnOnce(&HostInfo) -> ClientBuilder + Send + 'static) -> Self {
        Bridge {
            make: Box::new(move |host| Upstream::Client(Box::new(make(host)))),
            options: BridgeOptions::default(),
        }
    }

    /// A bridge whose upstream is what `make` says (one client, or a group of every server
    /// of a configuration), made when the host's `initialize` arrives.
    pub fn with(make: impl FnOnce(&HostInfo) -> Upstream + Send + 'static) -> Self {
        Bridge {
            make: Box::new(make),
            options: BridgeOptions::default(),
        }
    }

    /// Sets the bounds.
    pub fn options(mut self, options: BridgeOptions) -> Self {
        self.options = options;
        self
    }

    /// Serves the host over the process's stdin and stdout until the host closes stdin or
    /// `shutdown` resolves; then stops the upstream (its processes reaped) and returns.
    pub async fn serve_stdio(self, shutdown: impl Future<Output = ()>) -> BridgeReport {
        // Pipes (what a host gives its servers) are read and written by the runtime's own
        // reactor; anything else (a terminal, a file) through tokio's blocking stdio, whose
        // thread hand-offs cost a call several times the bridge's own work.
        #[cfg(unix)]
        if let Some((reader, writer)) = stdio_pipes() {
            let writer = tokio::io::BufWriter::with_capacity(64 << 10, writer);
            return self.serve(reader, writer, shutdown).await;
        }
        let writer = tokio::io::BufWriter::with_capacity(64 << 10, tokio::io::stdout());
        self.serve(tokio::io::stdin(), writer, shutdown).await
    }

    /// Serves the host over `reader` and `writer` (newline-delimited JSON-RPC) until the host
    /// closes `reader`, a write to it fails, or `shutdown` resolves; then stops the upstream
    /// and returns what the session did. Must run inside a tokio runtime.
    pub async fn serve<R, W>(
        self,
        reader: R,
        writer: W,
        shutdown: impl Future<Output = ()>,
    ) -> BridgeReport
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (host_tx, host_rx) = mpsc::channel(64);
        let (out_tx, out_rx) = mpsc::channel(self.options.out_queue.max(1));
        let (events_tx, events_rx) = mpsc::unbounded_channel();
        let reader_task = tokio::spawn(stdio::read_host(
            reader,
            self.options.max_frame_bytes,
            host_tx,
        ));
        let failed = events_tx.clone();
        let writer_task = tokio::spawn(async move {
            if stdio::write_host(writer, out_rx).await.is_err() {
                let _ = failed.send(session::Inner::HostWriteFailed);
            }
        });
        let session = session::Session::new(self.options, self.make, out_tx, events_tx);
        let report = session.run(host_rx, events_rx, shutdown).await;
        reader_task.abort();
        // Every sender of frames is gone with the session: the writer flushes and ends.
        let _ = tokio::time::timeout(Duration::from_secs(1), writer_task).await;
        report
    }
}

/// The process's stdin and stdout as non-blocking pipes, when both are pipes (copies of the
/// descriptors: no `unsafe`). Setting them non-blocking affects the pipes' other users too:
/// the bridge is their only reader and writer.
#[cfg(unix)]
fn stdio_pipes() -> Option<(
    tokio::net::unix::pipe::Receiver,
    tokio::net::unix::pipe::Sender,
)> {
    use std::os::fd::AsFd;
    let input = std::io::stdin().as_fd().try_clone_to_owned().ok()?;
    let output = std::io::stdout().as_fd().try_clone_to_owned().ok()?;
    let reader = tokio::net::unix::pipe::Receiver::from_file(std::fs::File::from(input)).ok()?;
    let writer = tokio::net::unix::pipe::Sender::from_file(std::fs::File::from(output)).ok()?;
    Some((reader, writer))
}
