//! [`Client`]: the handle over the driver, its core (state, feeds, a request handed to the
//! driver and the wait for its answer, the response cache's lookups, stop), and where the rest
//! lives: [`crate::ClientBuilder`] in `builder`, [`crate::RequestOptions`] in `options`, the MCP
//! methods in `methods`.

pub(crate) mod builder;
mod lists;
mod methods;
pub(crate) mod options;
mod task_call;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use mcp_machine::{
    CallId, CallOptions, CallRequest, Era, Failure, Input, ListenStatus, SessionChange,
};
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot, watch};

use crate::cache::{AuthContext, CacheRequest, CacheStats, Lookup};
use crate::command::{Command, Notifier, Outcome, received};
use crate::driver::Outputs;
use crate::transport::Connector;
use crate::types::{ServerCapabilities, ServerInfo};
use crate::{ConnState, Error, Notifications, Result, Transitions};
use options::RequestOptions;

pub(crate) use lists::WeakClient;

/// What every handle of one client shares: the way into the driver's command queue, what the
/// driver publishes, and the client's own bounds, cache context and output schemas.
struct Shared {
    connector: Arc<dyn Connector>,
    commands: mpsc::UnboundedSender<Command>,
    state: watch::Receiver<ConnState>,
    closed: watch::Receiver<bool>,
    out: Arc<Outputs>,
    next_call: Arc<AtomicU64>,
    limits: Limits,
    /// The authorization context of the cache's lookups: one for the client's lifetime, the
    /// unauthenticated one, also when the client authorizes with OAuth (the cache is this
    /// client's own, and a new authorization does not start a new context).
    auth: AuthContext,
    /// The compiled validators of the listed tools' `outputSchema`s (kept in `catalog`).
    output_schemas: crate::output_schema::OutputSchemas,
    /// What the latest tool listings said (header mappings, output schemas), fed by
    /// `list_tools` (and a `tools/list` made with [`Client::request`]); shared with the
    /// connector's links when it has any.
    catalog: crate::tool_catalog::ToolCatalog,
    /// What the host chose for task-backed tool calls (none: tasks off).
    tasks: Option<crate::tasks::TaskOptions>,
    /// Which listed tools may run as tasks.
    task_tools: crate::tasks::TaskTools,
    /// Whether a call made while not ready waits for ready unless its options say
    /// otherwise ([`crate::ClientBuilder::wait_for_ready`]).
    wait_for_ready: bool,
    /// What requests are recorded into (OpenTelemetry), if anything.
    #[cfg(feature = "otel")]
    recorder: Option<crate::otel::Recorder>,
}

/// Bounds the client keeps on what a server can make it do.
#[derive(Clone, Copy, Debug)]
struct Limits {
    /// Pages one `list_all_*` call follows at most.
    max_pages: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { max_pages: 1000 }
    }
}

/// A connection to one MCP server: a cheap, clonable handle. The connection lives until
/// [`Client::stop`] or until every handle is dropped (then it stops by itself).
#[derive(Clone)]
pub struct Client {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("state", &self.state())
            .finish_non_exhaustive()
    }
}

/// Sends a cancel for a call whose future is dropped before its answer.
struct CancelOnDrop<'a> {
    call: CallId,
    commands: &'a mpsc::UnboundedSender<Command>,
    armed: bool,
}

impl Drop for CancelOnDrop<'_> {
    fn drop(&mut self) {
        if self.armed {
            let _ = self.commands.send(Command::Cancel(self.call));
        }
    }
}

/// The wait for a request's answer, once handed to the driver: dropping it before the answer
/// cancels the request (`notifications/cancelled` goes out if it was sent).
enum Answer<'a> {
    /// The driver is gone: answers `Error::Shutdown`.
    Shutdown,
    /// Handed over; the driver answers on `rx`.
    Waiting {
        rx: oneshot::Receiver<Outcome>,
        guard: CancelOnDrop<'a>,
    },
}

impl std::future::Future for Answer<'_> {
    /// The result as its text (or its tree, when the machine read it): the caller reads it
    /// into the type it wants, with no tree in between.
    type Output = Result<mcp_machine::Body>;

    fn poll(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<mcp_machine::Body>> {
        match self.get_mut() {
            Answer::Shutdown => std::task::Poll::Ready(Err(Error::Shutdown)),
            Answer::Waiting { rx, guard } => {
                let outcome = std::task::ready!(std::pin::Pin::new(rx).poll(cx));
                guard.armed = false;
                std::task::Poll::Ready(received(outcome))
            }
        }
    }
}

impl Client {
    fn next_call(&self) -> CallId {
        CallId(self.shared.next_call.fetch_add(1, Ordering::Relaxed))
    }

    /// The connection state now.
    pub fn state(&self) -> ConnState {
        *self.shared.state.borrow()
    }

    /// A watch of the connection state (every transition).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> mcp_runtime::Result<()> {
    /// # let connector = mcp_runtime::transport::StreamConnector::from_fn(|| async {
    /// #     let (ours, theirs) = tokio::io::duplex(1 << 16);
    /// #     let (r, w) = tokio::io::split(theirs);
    /// #     tokio::spawn(mcp_testserver::serve(r, w, mcp_testserver::ServerConfig::echo()));
    /// #     Ok(tokio::io::split(ours))
    /// # });
    /// # let client = mcp_runtime::ClientBuilder::new(connector).connect().await?;
    /// use mcp_runtime::ConnState;
    ///
    /// let mut state = client.watch_state();
    /// assert_eq!(*state.borrow(), ConnState::Ready);
    /// client.stop().await;
    /// state.wait_for(|s| *s == ConnState::Closed).await.expect("the driver publishes the end");
    /// # Ok(()) }
    /// ```
    pub fn watch_state(&self) -> watch::Receiver<ConnState> {
        self.shared.state.clone()
    }

    /// What the client wants told by a 2026-07-28 server (list changes, resource updates) and
    /// what the server's acknowledged listens cover now. Empty in the handshake era, where
    /// subscriptions are `resources/subscribe` requests and list changes arrive unasked.
    pub fn listen_status(&self) -> ListenStatus {
        self.shared.out.listening.borrow().clone()
    }

    /// A watch of [`Client::listen_status`] (every change).
    pub fn watch_listen_status(&self) -> watch::Receiver<ListenStatus> {
        self.shared.out.listening.subscribe()
    }

    /// What the server said in the last handshake (name, version, negotiated protocol
    /// version, capabilities, instructions).
    pub fn server_info(&self) -> Option<ServerInfo> {
        self.shared
            .out
            .server
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The era of MCP this server speaks, as the last handshake or discovery found it; `None`
    /// before the first one.
    pub fn era(&self) -> Option<Era> {
        let info = self.server_info()?;
        let modern =
            mcp_machine::MODERN_PROTOCOL_VERSIONS.contains(&info.protocol_version.as_str());
        Some(if modern { Era::Modern } else { Era::Legacy })
    }

    /// What the server declared in the last handshake, typed (see [`ServerCapabilities`]);
    /// `None` before the first handshake.
    pub fn server_capabilities(&self) -> Option<ServerCapabilities> {
        self.server_info().map(|info| ServerCapabilities::of(&info))
    }

    /// The last lines (at most 20) the latest server process wrote on its stderr, oldest
    /// first, raw: what a host shows beside [`Client::last_error`]. Empty for transports
    /// without stderr. Every line is also a `tracing` event
    /// ([`crate::transport::SERVER_STDERR_TARGET`]).
    pub fn server_stderr(&self) -> Vec<String> {
        self.shared.connector.stderr_tail()
    }

    /// The process id of the server process (stdio transports) while it runs: what a host
    /// shows, or signals, beside the server's name. `None` for other transports, before the
    /// first spawn and once the process was reaped. A reconnect spawns a new process (a new
    /// id).
    pub fn server_pid(&self) -> Option<u32> {
        self.shared.connector.server_pid()
    }

    /// Why the last connection attempt or connection failed, typed (cleared by a successful
    /// handshake).
    pub fn last_error(&self) -> Option<Failure> {
        self.shared
            .out
            .last_error
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Every state transition from now on, with the event and the row that caused it (unlike
    /// [`Client::watch_state`], which keeps only the latest state, no transition is skipped
    /// unless this feed falls 256 behind; [`crate::Feed::dropped`] counts those). To see the
    /// transitions of the first connection, take the feed from
    /// [`crate::ClientBuilder::transitions`].
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> mcp_runtime::Result<()> {
    /// # let connector = mcp_runtime::transport::StreamConnector::from_fn(|| async {
    /// #     let (ours, theirs) = tokio::io::duplex(1 << 16);
    /// #     let (r, w) = tokio::io::split(theirs);
    /// #     tokio::spawn(mcp_testserver::serve(r, w, mcp_testserver::ServerConfig::echo()));
    /// #     Ok(tokio::io::split(ours))
    /// # });
    /// # let client = mcp_runtime::ClientBuilder::new(connector).connect().await?;
    /// use mcp_runtime::ConnState;
    ///
    /// let mut transitions = client.transitions();
    /// client.stop().await;
    /// let mut last = None;
    /// while let Some(t) = transitions.recv().await {
    ///     println!("{} -> {} ({})", t.from(), t.to(), t.event());
    ///     last = Some(t.to());
    /// }
    /// // The feed ends once the client has stopped.
    /// assert_eq!(last, Some(ConnState::Closed));
    /// # Ok(()) }
    /// ```
    pub fn transitions(&self) -> Transitions {
        self.shared.out.transitions.subscribe()
    }

    /// Server notifications from now on (list changes, resource updates, log messages,
    /// progress not claimed by a call, cancellations). Each feed holds at most what
    /// [`crate::ClientBuilder::notification_limits`] allows; one that falls behind loses the oldest,
    /// counted by [`crate::Feed::dropped`]. [`crate::Feed::recv`] gives `None` once the client
    /// has stopped. To see the notifications of the first connection, take the feed from
    /// [`crate::ClientBuilder::notifications`].
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> mcp_runtime::Result<()> {
    /// # let connector = mcp_runtime::transport::StreamConnector::from_fn(|| async {
    /// #     let (ours, theirs) = tokio::io::duplex(1 << 16);
    /// #     let (r, w) = tokio::io::split(theirs);
    /// #     tokio::spawn(mcp_testserver::serve(r, w, mcp_testserver::ServerConfig::echo()));
    /// #     Ok(tokio::io::split(ours))
    /// # });
    /// # let client = mcp_runtime::ClientBuilder::new(connector).connect().await?;
    /// use mcp_runtime::ServerNotification;
    /// use serde_json::json;
    ///
    /// let mut notifications = client.notifications();
    /// // The server's `notify_changed` tool sends `notifications/tools/list_changed`.
    /// client.call_tool("notify_changed", json!({"list": "tools"})).await?;
    /// let n = notifications.recv().await.expect("the client is running");
    /// assert_eq!(n.method, "notifications/tools/list_changed");
    /// assert_eq!(n.parsed, ServerNotification::ToolsListChanged);
    /// # Ok(()) }
    /// ```
    pub fn notifications(&self) -> Notifications {
        self.shared.out.notifications.subscribe()
    }

    /// Waits until the connection is ready (at once if it is). A client in backoff keeps
    /// waiting through its reconnects, except when the last attempt failed for good (the
    /// program does not exist, permission denied: [`crate::TransportError::is_permanent`]); a
    /// client that stopped, or failed for good, gives [`Error::Unavailable`] with the reason in
    /// `last_error`. Bound it with `tokio::time::timeout` if you need a limit.
    pub async fn ready(&self) -> Result<()> {
        let mut states = self.watch_state();
        loop {
            let state = *states.borrow_and_update();
            let last_error = self.last_error();
            let permanent = matches!(&last_error, Some(Failure::Transport(t)) if t.is_permanent());
            match state {
                // A server process that exited (killed from outside, say) an instant ago is
                // not ready, even before the driver has read its end: wait for the state
                // to leave ready.
                ConnState::Ready if self.server_exited() => {}
                ConnState::Ready => return Ok(()),
                s if s.is_terminal() || (s == ConnState::Backoff && permanent) => {
                    return Err(Error::Unavailable {
                        state,
                        retry_in: None,
                        last_error,
                    });
                }
                _ => {}
            }
            states.changed().await.map_err(|_| Error::Shutdown)?;
        }
    }

    /// Whether the server process of the live link has exited (a zombie not reaped yet, or
    /// already reaped), as the kernel says now. Linux only; elsewhere `false` (the driver's
    /// own notice of the exit is what `ready` waits for then).
    fn server_exited(&self) -> bool {
        let Some(pid) = self.server_pid() else {
            return false;
        };
        process_exited(pid)
    }

    /// Sends a request and waits for its result. Dropping the future cancels the request
    /// (`notifications/cancelled` is sent if it went out).
    /// For a method the typed ones do not cover; the result is the server's JSON.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> mcp_runtime::Result<()> {
    /// # let connector = mcp_runtime::transport::StreamConnector::from_fn(|| async {
    /// #     let (ours, theirs) = tokio::io::duplex(1 << 16);
    /// #     let (r, w) = tokio::io::split(theirs);
    /// #     tokio::spawn(mcp_testserver::serve(r, w, mcp_testserver::ServerConfig::echo()));
    /// #     Ok(tokio::io::split(ours))
    /// # });
    /// # let client = mcp_runtime::ClientBuilder::new(connector).connect().await?;
    /// use serde_json::json;
    ///
    /// let page = client.request("tools/list", Some(json!({}))).await?;
    /// assert!(page["tools"].as_array().is_some_and(|t| !t.is_empty()));
    /// # Ok(()) }
    /// ```
    pub async fn request(&self, method: &str, params: Option<Value>) -> Result<Value> {
        self.request_with(method, params, RequestOptions::default())
            .await
    }

    /// [`Client::request`] with options.
    pub async fn request_with(
        &self,
        method: &str,
        params: Option<Value>,
        options: RequestOptions,
    ) -> Result<Value> {
        let value = self.value(method, params, options).await?;
        if method == "tools/list" {
            // A listing read here feeds the catalog as `list_tools` does, its header mappings
            // only (no tool is left out of this answer).
            self.catalog_tools(&value);
        }
        Ok(value)
    }

    /// [`Client::request_with`] without a look at what it answered.
    async fn value(
        &self,
        method: &str,
        params: Option<Value>,
        options: RequestOptions,
    ) -> Result<Value> {
        let body = self.start(method, params, options, None).await?;
        decoded(method, body)
    }

    /// Hands a request to the driver now and returns the wait for its answer. Not async on
    /// purpose: the request's method, params and options are not kept in the future that
    /// waits (an `async fn` keeps its arguments for its whole life), so a call in flight
    /// costs its caller a few words.
    fn start(
        &self,
        method: &str,
        params: Option<Value>,
        options: RequestOptions,
        session: Option<SessionChange>,
    ) -> Answer<'_> {
        let call = self.next_call();
        let (reply, rx) = oneshot::channel();
        #[cfg(feature = "otel")]
        let mut params = params;
        #[cfg(feature = "otel")]
        let span = self
            .shared
            .recorder
            .as_ref()
            .map(|r| crate::otel::CallSpan::start(r, method, &mut params));
        let input = Input::Call(CallRequest {
            call,
            method: method.to_owned(),
            params,
            options: CallOptions {
                timeout: options.timeout,
                // Resetting the timeout on progress needs progress, with or without a sink.
                progress: options.progress.is_some() || options.reset_timeout_on_progress,
                reset_timeout_on_progress: options.reset_timeout_on_progress,
                max_total_timeout: options.max_total_timeout,
                task_timeout: options.task_timeout,
                wait_for_ready: options.wait_for_ready.unwrap_or(self.shared.wait_for_ready),
            },
            session,
        });
        let cmd = Command::Call {
            input,
            progress: options.progress,
            task_status: options.task_status,
            reply,
            #[cfg(feature = "otel")]
            span,
        };
        self.hand_over(call, cmd, rx)
    }

    /// Sends the command of caller `call` to the driver; the wait for its answer on `rx`.
    fn hand_over(
        &self,
        call: CallId,
        cmd: Command,
        rx: oneshot::Receiver<crate::command::Outcome>,
    ) -> Answer<'_> {
        if self.shared.commands.send(cmd).is_err() {
            return Answer::Shutdown;
        }
        Answer::Waiting {
            rx,
            guard: CancelOnDrop {
                call,
                commands: &self.shared.commands,
                armed: true,
            },
        }
    }

    /// Hands a resume of the task `task_id` to the driver and returns the wait for its
    /// answer (the tool call's result), as [`Client::start`] does for a request.
    fn start_resume(&self, task_id: &str, options: RequestOptions) -> Answer<'_> {
        let call = self.next_call();
        let (reply, rx) = oneshot::channel();
        let input = Input::ResumeTask(mcp_machine::TaskResume {
            call,
            task_id: task_id.to_owned(),
            options: CallOptions {
                task_timeout: options.task_timeout,
                ..CallOptions::default()
            },
        });
        let cmd = Command::Call {
            input,
            progress: None,
            task_status: options.task_status,
            reply,
            #[cfg(feature = "otel")]
            span: None,
        };
        self.hand_over(call, cmd, rx)
    }

    /// A request whose result decodes as `T`. Hands the request over when called (see
    /// [`Client::start`]): called only from the bodies of `async fn`s, which run at their
    /// first poll, so the public futures stay lazy.
    fn typed<'a, T: DeserializeOwned>(
        &'a self,
        method: &'a str,
        params: Option<Value>,
        options: RequestOptions,
    ) -> impl std::future::Future<Output = Result<T>> + 'a {
        let answer = self.start(method, params, options, None);
        async move { decoded(method, answer.await?) }
    }

    /// [`Client::typed`] through the response cache: a fresh entry answers without a request;
    /// a miss sends it and stores the result as its hints say (only one that decodes). Two
    /// identical misses at once both go to the server.
    async fn cached<T: DeserializeOwned>(&self, request: CacheRequest) -> Result<T> {
        let method = request.method();
        let decode = |v: &Value| {
            T::deserialize(v).map_err(|e| Error::InvalidResult {
                method: method.to_owned(),
                source: Arc::new(e),
            })
        };
        let cache = &self.shared.out.cache;
        let ticket = match cache.lookup(&request, &self.shared.auth) {
            Lookup::Hit(v) => return decode(&v),
            Lookup::Miss(ticket) => ticket,
        };
        let outcome = self
            .value(method, request.params(), RequestOptions::default())
            .await;
        match outcome {
            Ok(v) => {
                let typed = decode(&v)?;
                cache.store(ticket, v);
                Ok(typed)
            }
            Err(e) => {
                if let Error::Server { code, .. } = &e {
                    cache.failed(&ticket, *code);
                }
                Err(e)
            }
        }
    }

    /// What the response cache did so far (hits, misses, stores, evictions, expirations,
    /// invalidations) and what it holds; all zero when it is off
    /// ([`crate::ClientBuilder::response_cache`]).
    pub fn cache_stats(&self) -> CacheStats {
        self.shared.out.cache.stats()
    }

    /// Drops every cached result: the next call of each cacheable method goes to the server.
    /// Results in flight when it is called are not stored. Does not turn the cache off.
    pub fn clear_cache(&self) {
        self.shared.out.cache.clear();
    }

    /// Sends a notification; answers once the transport took it (or with why it did not).
    pub async fn notify(&self, method: &str, params: Option<Value>) -> Result<()> {
        let notifier = Notifier::new(
            self.shared.commands.downgrade(),
            Arc::clone(&self.shared.next_call),
        );
        notifier.notify(method, params).await
    }

    /// Stops the client and returns as soon as every call in flight was answered with
    /// [`Error::Shutdown`] (at once: it does not wait for the server). From then on every call
    /// fails with [`Error::Shutdown`]; the state is `Closing`, then `Closed` when the transport
    /// confirmed it is down (within 100 ms even if the server hangs). Idempotent.
    ///
    /// The server process is shut down in the background as the MCP specification's stdio
    /// shutdown says: its stdin is closed, then after a grace period
    /// ([`crate::ClientBuilder::shutdown_grace`], 2 s) SIGTERM to its process group, after another
    /// grace SIGKILL, and it is reaped. [`Client::closed`] waits for all of that.
    pub async fn stop(&self) {
        let (reply, rx) = oneshot::channel();
        if self
            .shared
            .commands
            .send(Command::Stop {
                call: self.next_call(),
                reply,
            })
            .is_ok()
        {
            // Answered when the table entered closing (every caller answered), or dropped if
            // the driver is gone (its runtime was shut down): either way, done.
            let _ = rx.await;
        }
    }

    /// Waits until the client has stopped and every transport has ended (child processes
    /// reaped).
    pub async fn closed(&self) {
        let mut closed = self.shared.closed.clone();
        tokio::select! {
            _ = closed.wait_for(|c| *c) => {}
            () = self.shared.commands.closed() => {}
        }
    }
}

/// A result read as `T` (a `Value` included): straight from its text when no tree was built.
/// Text that does not read as `T` (for a `Value`: a number past f64 or nesting past
/// serde_json's limit, which the frame's check lets through) is the request's
/// `InvalidResult`, never a silent `null`.
fn decoded<T: DeserializeOwned>(method: &str, body: mcp_machine::Body) -> Result<T> {
    body.deserialize().map_err(|e| Error::InvalidResult {
        method: method.to_owned(),
        source: Arc::new(e),
    })
}

/// Whether child process `pid` has exited, without reaping it (`waitid` with `WNOWAIT`): a
/// child gone already (reaped: not our child any more) counts as exited.
#[cfg(target_os = "linux")]
fn process_exited(pid: u32) -> bool {
    use nix::sys::wait::{Id, WaitPidFlag, WaitStatus, waitid};
    let Ok(raw) = i32::try_from(pid) else {
        return false;
    };
    // What the kernel shows first: no such process, or a zombie (`Z`) or one being torn down
    // (`X`), has exited, whoever its parent is (a zombie can still be signalled).
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // (Only where /proc is there at all: without it this says nothing.)
        Err(e)
            if e.kind() == std::io::ErrorKind::NotFound
                && std::path::Path::new("/proc/self/stat").exists() =>
        {
            return true;
        }
        Err(_) => {}
        Ok(stat) => {
            let state = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.trim_start().chars().next());
            if matches!(state, Some('Z' | 'X')) {
                return true;
            }
        }
    }
    let flags = WaitPidFlag::WEXITED | WaitPidFlag::WNOHANG | WaitPidFlag::WNOWAIT;
    match waitid(Id::Pid(nix::unistd::Pid::from_raw(raw)), flags) {
        Ok(WaitStatus::StillAlive) => false,
        Ok(_) => true,
        // Reaped already, or not ours to wait for (SIGCHLD ignored): gone if it cannot be
        // signalled.
        Err(nix::errno::Errno::ECHILD) => {
            nix::sys::signal::kill(nix::unistd::Pid::from_raw(raw), None)
                == Err(nix::errno::Errno::ESRCH)
        }
        Err(_) => false,
    }
}

#[cfg(not(target_os = "linux"))]
fn process_exited(_pid: u32) -> bool {
    false
}
