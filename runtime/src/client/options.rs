//! [`RequestOptions`]: what one call asks beyond the client's defaults (its timeout, its
//! progress, and how progress moves the timeout).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::sync::mpsc;

use crate::command::ProgressSink;
use crate::types::Progress;

/// How many progress notifications [`RequestOptions::progress_channel`] holds for a slow
/// receiver.
pub const PROGRESS_CHANNEL_CAPACITY: usize = 256;

/// Per-call options: timeout, progress, and how progress moves the timeout.
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
/// use std::time::Duration;
/// use mcp_runtime::RequestOptions;
/// use serde_json::json;
///
/// let (options, mut progress) = RequestOptions::new()
///     .timeout(Duration::from_secs(60))
///     .progress_channel();
/// // The server's `slow` tool sends `steps` progress notifications.
/// let result = client
///     .call_tool_with("slow", json!({"ms": 30, "steps": 3}), options)
///     .await?;
/// // Every notification that came before the answer is in the channel.
/// let mut steps = Vec::new();
/// while let Ok(p) = progress.try_recv() {
///     steps.push(p.progress);
/// }
/// assert_eq!(steps, [1.0, 2.0, 3.0]);
/// assert_eq!(result.text(), "slept 30 ms in 3 steps");
/// # Ok(()) }
/// ```
#[derive(Clone, Default)]
pub struct RequestOptions {
    pub(super) timeout: Option<Duration>,
    pub(super) progress: Option<ProgressSink>,
    pub(super) reset_timeout_on_progress: bool,
    pub(super) max_total_timeout: Option<Duration>,
    pub(super) task_status: Option<crate::command::TaskStatusSink>,
    pub(super) task_timeout: Option<Duration>,
    pub(super) wait_for_ready: Option<bool>,
}

impl std::fmt::Debug for RequestOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestOptions")
            .field("timeout", &self.timeout)
            .field("progress", &self.progress.is_some())
            .field("reset_timeout_on_progress", &self.reset_timeout_on_progress)
            .field("max_total_timeout", &self.max_total_timeout)
            .field("task_status", &self.task_status.is_some())
            .field("task_timeout", &self.task_timeout)
            .field("wait_for_ready", &self.wait_for_ready)
            .finish()
    }
}

impl RequestOptions {
    /// Default options (the client's request timeout, no progress).
    pub fn new() -> Self {
        Self::default()
    }

    /// This call's timeout.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Ask for progress and pass each notification to `f`.
    pub fn on_progress(mut self, f: impl Fn(Progress) + Send + Sync + 'static) -> Self {
        self.progress = Some(Arc::new(f));
        self
    }

    /// Ask for progress and deliver it on a bounded channel. Every notification that arrived
    /// before the call's answer is in the channel before the call resolves: poll the channel
    /// first (`biased` in a `select!`), or drain it with `try_recv` after the call.
    ///
    /// The channel holds [`PROGRESS_CHANNEL_CAPACITY`] notifications; when the receiver lags,
    /// newer ones are dropped and counted in a `tracing` debug event, so a flooding server
    /// cannot grow memory.
    pub fn progress_channel(self) -> (Self, mpsc::Receiver<Progress>) {
        let (tx, rx) = mpsc::channel(PROGRESS_CHANNEL_CAPACITY);
        let dropped = std::sync::atomic::AtomicU64::new(0);
        (
            self.on_progress(move |p| {
                if let Err(mpsc::error::TrySendError::Full(_)) = tx.try_send(p) {
                    let n = dropped.fetch_add(1, Ordering::Relaxed) + 1;
                    tracing::debug!(target: "mcp::progress", dropped = n, "progress receiver lags; notification dropped");
                }
            }),
            rx,
        )
    }

    /// Pass the status of the task the call runs as to `f` (when the server makes the call a
    /// task, and whenever its status or message changes). Called on the client's driver: keep
    /// it short. Nothing is called for a call that is not a task.
    pub fn on_task_status(
        mut self,
        f: impl Fn(&mcp_machine::TaskStatus) + Send + Sync + 'static,
    ) -> Self {
        self.task_status = Some(Arc::new(f));
        self
    }

    /// A bound on the whole call should the server run it as a task (none by default: a task
    /// may run for hours; each poll has the request timeout). When it passes the call fails
    /// with [`crate::Error::Timeout`] and the server is asked to cancel the task.
    pub fn task_timeout(mut self, bound: Duration) -> Self {
        self.task_timeout = Some(bound);
        self
    }

    /// Whether this call, made while the connection is not ready (starting, reconnecting, in
    /// backoff), waits for a ready connection up to its own timeout instead of failing at
    /// once with [`crate::Error::Unavailable`]; overrides
    /// [`crate::ClientBuilder::wait_for_ready`]. A waiting call goes out once the handshake
    /// and the session's restore are done, in the order the calls were made; it is answered
    /// exactly once (its result, a timeout by its deadline, its cancel, or
    /// [`crate::Error::Shutdown`] at stop). It does not wait when the last attempt failed for
    /// good (the program does not exist, permission denied). Decided by the table
    /// (`spec/calls.toml`, `waits_for_ready`), model-checked.
    pub fn wait_for_ready(mut self, wait: bool) -> Self {
        self.wait_for_ready = Some(wait);
        self
    }

    /// Restart the timeout at each progress notification, but never wait more than `max_total`
    /// in all.
    pub fn reset_timeout_on_progress(mut self, max_total: Duration) -> Self {
        self.reset_timeout_on_progress = true;
        self.max_total_timeout = Some(max_total);
        self
    }
}
