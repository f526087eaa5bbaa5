//! The stdio transport: the server is a child process speaking newline-delimited JSON on its
//! stdin and stdout (MCP `basic/transports/stdio`).
//!
//! - The program is started directly from a program name and an argument vector (no shell).
//! - stderr is always piped, never inherited: each line is forwarded to `tracing` as an INFO
//!   event with target [`SERVER_STDERR_TARGET`] and fields `line` and `pid`; lines are cut at
//!   8 KiB and at most 1000 lines per second are logged, followed by one "suppressed N lines"
//!   event. Server stderr is a log, never an error signal.
//! - The environment is not inherited wholesale: like the official TypeScript and Python SDKs
//!   the child gets only [`StdioConnector::DEFAULT_INHERITED_ENV`] (`HOME`, `LOGNAME`, `PATH`, `SHELL`,
//!   `TERM`, `USER`, each if set and not a shell function, i.e. a value starting with `()`)
//!   plus the variables given with [`StdioConnectorBuilder::env`]. Secrets in the host's
//!   environment (API keys, tokens) do not leak into every server. Opt in to the whole
//!   environment with [`StdioConnectorBuilder::inherit_env`], or start from nothing with
//!   [`StdioConnectorBuilder::env_clear`].
//! - The child runs in its own process group, so shutdown reaches everything it started.
//! - Orderly shutdown (the spec's SHOULD): stdin is closed by the transport, then the closer
//!   waits up to `grace` for an exit, sends SIGTERM to the group, waits `grace` again, sends
//!   SIGKILL to the group and reaps the child. Whatever is left in the group after the child
//!   exited is sent SIGKILL. Dropping the transport without closing sends SIGKILL to the group
//!   at once and reaps the child without the async runtime (which may be shutting down): at
//!   once if it is already gone, else on a small reaper thread that polls it (never a zombie
//!   left behind while this process lives).
//!
//! POSIX only for now (process groups and signals come from `nix`); Windows job objects are
//! not done.

use std::ffi::OsString;
use std::fmt;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, ChildStderr, Command};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::{Closer, Connector, IoCause, Link, TransportError};

/// `tracing` target of the events that carry the server's stderr lines. The client's own
/// events use targets under `mcp::` (`mcp::driver`, `mcp::http`, `mcp::auth`, and
/// `mcp::request` for one span per call at `DEBUG`).
///
/// ```
/// use tracing::Level;
/// use tracing_subscriber::filter::Targets;
/// use tracing_subscriber::prelude::*;
///
/// // The server's stderr at INFO, the client's own events from WARN up.
/// let filter = Targets::new()
///     .with_target(mcp_runtime::transport::SERVER_STDERR_TARGET, Level::INFO)
///     .with_target("mcp", Level::WARN);
/// tracing_subscriber::registry()
///     .with(tracing_subscriber::fmt::layer().with_writer(std::io::stderr).with_filter(filter))
///     .init();
/// ```
pub const SERVER_STDERR_TARGET: &str = "mcp_runtime::server_stderr";

/// See [`StdioConnector::DEFAULT_INHERITED_ENV`].
const DEFAULT_INHERITED_ENV: [&str; 6] = ["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"];

/// Default wait for each shutdown step.
const DEFAULT_GRACE: Duration = Duration::from_secs(2);
/// Longest stderr line forwarded; the rest of the line is dropped.
const MAX_STDERR_LINE: usize = 8 * 1024;
/// Stderr lines logged per second at most (also the burst size).
const STDERR_LINES_PER_SECOND: u32 = 1000;
/// Stderr lines kept for [`Connector::stderr_tail`].
const STDERR_TAIL_LINES: usize = 20;
/// Longest stderr line kept for [`Connector::stderr_tail`], in bytes.
const STDERR_TAIL_LINE: usize = 512;
/// How long the stderr forwarder may run on after the child was reaped (a grandchild outside
/// the process group may still hold the pipe).
const STDERR_DRAIN: Duration = Duration::from_millis(200);

/// Opens a stdio link by spawning a fresh server process per generation.
///
/// Built with [`StdioConnector::builder`]. It is a factory: it holds no process itself.
#[derive(Clone, Debug)]
pub struct StdioConnector {
    spec: Arc<Spec>,
    /// The last stderr lines of the latest child (see [`Connector::stderr_tail`]).
    tail: Arc<StderrTail>,
    /// The process id of the live child (0: none), see [`Connector::server_pid`].
    pid: Arc<AtomicU32>,
}

/// The last [`STDERR_TAIL_LINES`] stderr lines of the latest child process, each cut at
/// [`STDERR_TAIL_LINE`] bytes: what a connect error shows of the server's own words.
#[derive(Debug, Default)]
struct StderrTail(std::sync::Mutex<std::collections::VecDeque<String>>);

impl StderrTail {
    fn lines(&self) -> std::sync::MutexGuard<'_, std::collections::VecDeque<String>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn push(&self, line: &[u8]) {
        let mut cut = &line[..line.len().min(STDERR_TAIL_LINE)];
        // Not in the middle of a character (invalid bytes elsewhere read as U+FFFD).
        if let Err(e) = std::str::from_utf8(cut)
            && e.error_len().is_none()
        {
            cut = &cut[..e.valid_up_to()];
        }
        let text = String::from_utf8_lossy(cut).into_owned();
        let mut lines = self.lines();
        if lines.len() == STDERR_TAIL_LINES {
            lines.pop_front();
        }
        lines.push_back(text);
    }
}

struct Spec {
    program: OsString,
    args: Vec<OsString>,
    env: Vec<(OsString, OsString)>,
    base_env: BaseEnv,
    current_dir: Option<PathBuf>,
    grace: Duration,
}

impl Spec {
    /// "stdio: program arg …" (no environment: its values may be secrets).
    fn describe(&self) -> String {
        let mut s = format!("stdio: {}", self.program.to_string_lossy());
        for a in &self.args {
            s.push(' ');
            s.push_str(&a.to_string_lossy());
        }
        s
    }
}

impl fmt::Debug for Spec {
    /// The environment's names only: its values may be secrets (API keys, tokens).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Spec")
            .field("program", &self.program)
            .field("args", &self.args)
            .field("env", &self.env.iter().map(|(k, _)| k).collect::<Vec<_>>())
            .field("base_env", &self.base_env)
            .field("current_dir", &self.current_dir)
            .field("grace", &self.grace)
            .finish()
    }
}

/// What the server's environment starts from, before the variables given with `env`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BaseEnv {
    /// [`StdioConnector::DEFAULT_INHERITED_ENV`] only.
    Allowlist,
    /// The host's whole environment.
    Inherit,
    /// Nothing.
    Empty,
}

/// Builder for a [`StdioConnector`]. Not a process: nothing runs until a transport connects.
#[derive(Debug)]
pub struct StdioConnectorBuilder {
    spec: Spec,
}

impl StdioConnector {
    /// The variables a server inherits from the host's environment by default (POSIX), as in
    /// the official TypeScript and Python SDKs. Everything else must be given with
    /// [`StdioConnectorBuilder::env`], or opted into with [`StdioConnectorBuilder::inherit_env`].
    pub const DEFAULT_INHERITED_ENV: [&'static str; 6] = DEFAULT_INHERITED_ENV;

    /// Starts building a connector for `program` (looked up in `PATH` like `execvp`; no shell).
    pub fn builder(program: impl Into<OsString>) -> StdioConnectorBuilder {
        StdioConnectorBuilder {
            spec: Spec {
                program: program.into(),
                args: Vec::new(),
                env: Vec::new(),
                base_env: BaseEnv::Allowlist,
                current_dir: None,
                grace: DEFAULT_GRACE,
            },
        }
    }

    /// The wait used for each shutdown step.
    pub fn grace(&self) -> Duration {
        self.spec.grace
    }
}

impl StdioConnectorBuilder {
    /// Appends one argument (passed as is, never through a shell).
    pub fn arg(mut self, arg: impl Into<OsString>) -> Self {
        self.spec.args.push(arg.into());
        self
    }

    /// Appends arguments (passed as is, never through a shell).
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        self.spec.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Sets an environment variable for the server process (on top of what it inherits:
    /// by default only [`StdioConnector::DEFAULT_INHERITED_ENV`]).
    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.spec.env.push((key.into(), value.into()));
        self
    }

    /// Starts the server with an empty environment plus the variables given with
    /// [`env`](Self::env) (whatever the call order). The last of `env_clear` and
    /// [`inherit_env`](Self::inherit_env) wins.
    pub fn env_clear(mut self) -> Self {
        self.spec.base_env = BaseEnv::Empty;
        self
    }

    /// Lets the server inherit the host's whole environment (plus the variables given with
    /// [`env`](Self::env)) instead of only [`StdioConnector::DEFAULT_INHERITED_ENV`]. Everything in the host's
    /// environment, secrets included, then reaches the server. The last of
    /// [`env_clear`](Self::env_clear) and `inherit_env` wins.
    pub fn inherit_env(mut self) -> Self {
        self.spec.base_env = BaseEnv::Inherit;
        self
    }

    /// Sets the server's working directory (default: the caller's).
    pub fn current_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.spec.current_dir = Some(dir.into());
        self
    }

    /// Sets the wait for each shutdown step: after stdin is closed, and after SIGTERM
    /// (default 2 s). Also bounds the flush of queued frames on close.
    pub fn grace(mut self, grace: Duration) -> Self {
        self.spec.grace = grace;
        self
    }

    /// "stdio: program arg …", as the built connector describes itself.
    pub fn describe(&self) -> String {
        self.spec.describe()
    }

    /// Finishes the connector.
    pub fn build(self) -> StdioConnector {
        StdioConnector {
            spec: Arc::new(self.spec),
            tail: Arc::default(),
            pid: Arc::default(),
        }
    }
}

impl Connector for StdioConnector {
    fn connect(
        &self,
    ) -> Pin<Box<dyn Future<Output = Result<Link, TransportError>> + Send + 'static>> {
        let spec = Arc::clone(&self.spec);
        let tail = Arc::clone(&self.tail);
        let slot = Arc::clone(&self.pid);
        Box::pin(async move { spawn_child(&spec, tail, slot) })
    }

    /// The process id of the server process the live link talks to; `None` when none is
    /// running (before the first spawn, once it was reaped).
    fn server_pid(&self) -> Option<u32> {
        Some(self.pid.load(Ordering::Acquire)).filter(|&pid| pid != 0)
    }

    /// The last stderr lines (at most 20, each cut at 512 bytes) of the latest server process,
    /// complete once its transport reported it down.
    fn stderr_tail(&self) -> Vec<String> {
        self.tail.lines().iter().cloned().collect()
    }

    fn describe(&self) -> String {
        self.spec.describe()
    }
}

fn spawn_child(
    spec: &Spec,
    tail: Arc<StderrTail>,
    slot: Arc<AtomicU32>,
) -> Result<Link, TransportError> {
    tail.lines().clear();
    let mut cmd = Command::new(&spec.program);
    cmd.args(&spec.args);
    match spec.base_env {
        BaseEnv::Inherit => {}
        BaseEnv::Empty => {
            cmd.env_clear();
        }
        BaseEnv::Allowlist => {
            cmd.env_clear();
            cmd.envs(allowlisted_env(|name| std::env::var_os(name)));
        }
    }
    cmd.envs(spec.env.iter().map(|(k, v)| (k, v)));
    if let Some(dir) = &spec.current_dir {
        cmd.current_dir(dir);
    }
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = cmd.spawn().map_err(|e| TransportError::Spawn(e.into()))?;
    let pid = child.id();
    tracing::debug!(pid, "server process spawned");
    slot.store(pid.unwrap_or(0), Ordering::Release);
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        // Cannot happen with all three piped; the child is killed on drop.
        return Err(TransportError::Spawn(IoCause::new(std::io::Error::other(
            "child pipes missing",
        ))));
    };
    let stderr_task = tokio::spawn(forward_stderr(stderr, pid.unwrap_or(0), tail));
    let closer = ChildCloser {
        child: Some(child),
        pid,
        slot,
        grace: spec.grace,
        stderr_task: Some(stderr_task),
    };
    Ok(Link {
        reader: Box::new(stdout),
        writer: Box::new(stdin),
        closer: Some(Box::new(closer)),
    })
}

/// The variables a server inherits by default: those of
/// [`StdioConnector::DEFAULT_INHERITED_ENV`] that `lookup` finds, except values that are shell
/// functions (start with `()`). Each name is looked up on its own: the host's whole
/// environment is not copied for every spawn (two allocations a variable).
fn allowlisted_env(
    lookup: impl Fn(&str) -> Option<OsString>,
) -> impl Iterator<Item = (&'static str, OsString)> {
    DEFAULT_INHERITED_ENV.iter().filter_map(move |&name| {
        let value = lookup(name)?;
        (!value.as_encoded_bytes().starts_with(b"()")).then_some((name, value))
    })
}

/// Stops and reaps one child process. Dropping it kills the process group (see `kill_now`).
struct ChildCloser {
    /// `None` once reaped or handed to a reaper task.
    child: Option<Child>,
    pid: Option<u32>,
    /// The connector's live pid, cleared (if still this child's) once the child is gone.
    slot: Arc<AtomicU32>,
    grace: Duration,
    stderr_task: Option<JoinHandle<()>>,
}

impl fmt::Debug for ChildCloser {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChildCloser")
            .field("pid", &self.pid)
            .field("grace", &self.grace)
            .finish_non_exhaustive()
    }
}

impl ChildCloser {
    fn signal_group(&self, signal: Signal) {
        let Some(pid) = self.pid.and_then(|p| i32::try_from(p).ok()) else {
            return;
        };
        match killpg(Pid::from_raw(pid), signal) {
            Ok(()) => tracing::debug!(pid, ?signal, "signalled server process group"),
            Err(nix::errno::Errno::ESRCH) => {}
            Err(e) => {
                tracing::debug!(pid, ?signal, error = %e, "could not signal server process group")
            }
        }
    }

    async fn shutdown(mut self: Box<Self>) {
        let Some(child) = self.child.as_mut() else {
            return;
        };
        let grace = self.grace;
        let status = match tokio::time::timeout(grace, child.wait()).await {
            Ok(status) => status.ok(),
            Err(_) => {
                self.signal_group(Signal::SIGTERM);
                let child = self.child.as_mut().expect("child present until reaped");
                match tokio::time::timeout(grace, child.wait()).await {
                    Ok(status) => status.ok(),
                    Err(_) => {
                        self.signal_group(Signal::SIGKILL);
                        let child = self.child.as_mut().expect("child present until reaped");
                        tokio::time::timeout(grace, child.wait())
                            .await
                            .ok()
                            .and_then(Result::ok)
                    }
                }
            }
        };
        // The leader is reaped (or unkillable): stop whatever it left behind in its group.
        self.signal_group(Signal::SIGKILL);
        let pid = self.pid;
        match status {
            Some(status) => {
                self.child = None;
                tracing::debug!(pid, %status, "server process reaped");
            }
            None => {
                tracing::warn!(
                    pid,
                    "server process did not exit after SIGKILL; leaving it to the reaper"
                );
                self.kill_now();
            }
        }
        self.forget_pid();
        if let Some(task) = self.stderr_task.take() {
            drain_stderr(task).await;
        }
    }

    /// The child is gone: the connector no longer names it (unless a newer one replaced it).
    fn forget_pid(&self) {
        if let Some(pid) = self.pid {
            let _ = self
                .slot
                .compare_exchange(pid, 0, Ordering::AcqRel, Ordering::Acquire);
        }
    }
}

impl Closer for ChildCloser {
    fn close(self: Box<Self>) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        Box::pin(self.shutdown())
    }

    fn kill_now(&mut self) {
        let Some(child) = self.child.take() else {
            return;
        };
        self.forget_pid();
        self.signal_group(Signal::SIGKILL);
        if let Some(task) = self.stderr_task.take()
            && let Ok(rt) = tokio::runtime::Handle::try_current()
        {
            // Bounded like after an orderly close (a runtime shutting down drops it at once).
            rt.spawn(drain_stderr(task));
        }
        reap_killed(child, self.pid);
    }

    fn exited(&mut self) -> Option<Pin<Box<dyn Future<Output = TransportError> + Send + '_>>> {
        let child = self.child.as_mut()?;
        Some(Box::pin(async move {
            match child.wait().await {
                Ok(status) => exit_error(status),
                Err(e) => TransportError::io(e),
            }
        }))
    }

    fn flush_timeout(&self) -> Duration {
        self.grace
    }
}

impl Drop for ChildCloser {
    fn drop(&mut self) {
        self.kill_now();
    }
}

/// Reaps a child that was just sent SIGKILL, without the async runtime: the runtime may be
/// shutting down (a task spawned then never runs, and tokio's orphan queue is only drained
/// by later process activity). At once if the child is already gone, else on a small thread
/// that polls it (1 ms, doubling to 100 ms) until it is reaped.
fn reap_killed(mut child: Child, pid: Option<u32>) {
    match child.try_wait() {
        Ok(Some(status)) => {
            tracing::debug!(pid, %status, "server process reaped after kill");
            return;
        }
        Ok(None) => {}
        Err(e) => {
            tracing::debug!(pid, error = %e, "waiting for the killed server process failed");
            return;
        }
    }
    let spawned = std::thread::Builder::new()
        .name("mcp-stdio-reaper".into())
        .spawn(move || {
            let mut pause = Duration::from_millis(1);
            loop {
                match child.try_wait() {
                    Ok(None) => {
                        std::thread::sleep(pause);
                        pause = (pause * 2).min(Duration::from_millis(100));
                    }
                    Ok(Some(status)) => {
                        tracing::debug!(pid, %status, "server process reaped after kill");
                        return;
                    }
                    Err(e) => {
                        tracing::debug!(pid, error = %e, "waiting for the killed server process failed");
                        return;
                    }
                }
            }
        });
    if let Err(e) = spawned {
        // The closure (and the child) was dropped: `kill_on_drop` and tokio's orphan queue.
        tracing::warn!(pid, error = %e, "no reaper thread for the killed server process");
    }
}

fn exit_error(status: ExitStatus) -> TransportError {
    use std::os::unix::process::ExitStatusExt;
    TransportError::ChildExited {
        code: status.code(),
        signal: status.signal(),
    }
}

async fn drain_stderr(mut task: JoinHandle<()>) {
    if tokio::time::timeout(STDERR_DRAIN, &mut task).await.is_err() {
        task.abort();
    }
}

/// Forwards the child's stderr to `tracing`, line by line, truncated and rate-limited, and
/// keeps the last lines in `tail`.
async fn forward_stderr(stderr: ChildStderr, pid: u32, tail: Arc<StderrTail>) {
    let mut reader = BufReader::with_capacity(MAX_STDERR_LINE, stderr);
    let mut line: Vec<u8> = Vec::with_capacity(256);
    let mut truncated = false;
    let mut limit = StderrLimit::new(Instant::now());
    loop {
        let avail = match reader.fill_buf().await {
            Ok(avail) => avail,
            Err(e) => {
                tracing::debug!(pid, error = %e, "reading server stderr failed");
                break;
            }
        };
        if avail.is_empty() {
            if !line.is_empty() {
                keep(&tail, &line);
                limit.emit(pid, &line, truncated);
            }
            break;
        }
        let newline = avail.iter().position(|&b| b == b'\n');
        let chunk = &avail[..newline.unwrap_or(avail.len())];
        let room = MAX_STDERR_LINE - line.len();
        if chunk.len() > room {
            truncated = true;
        }
        line.extend_from_slice(&chunk[..chunk.len().min(room)]);
        let used = newline.map_or(avail.len(), |i| i + 1);
        reader.consume(used);
        if newline.is_some() {
            keep(&tail, &line);
            limit.emit(pid, &line, truncated);
            line.clear();
            truncated = false;
        }
    }
    limit.flush(pid);
}

/// Keeps a non-empty stderr line (without its `\r`) in the tail.
fn keep(tail: &StderrTail, line: &[u8]) {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if !line.is_empty() {
        tail.push(line);
    }
}

/// Token bucket: a burst of up to 1000 lines, refilled at 1000 lines per second.
struct StderrLimit {
    tokens: f64,
    last: Instant,
    suppressed: u64,
}

impl StderrLimit {
    fn new(now: Instant) -> Self {
        Self {
            tokens: f64::from(STDERR_LINES_PER_SECOND),
            last: now,
            suppressed: 0,
        }
    }

    fn take(&mut self, now: Instant) -> bool {
        let rate = f64::from(STDERR_LINES_PER_SECOND);
        let elapsed = now.saturating_duration_since(self.last).as_secs_f64();
        self.last = now;
        self.tokens = (self.tokens + elapsed * rate).min(rate);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }

    fn emit(&mut self, pid: u32, line: &[u8], truncated: bool) {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            return;
        }
        if !self.take(Instant::now()) {
            self.suppressed += 1;
            return;
        }
        self.flush(pid);
        let text = String::from_utf8_lossy(line);
        if truncated {
            tracing::info!(target: SERVER_STDERR_TARGET, pid, line = %text, truncated, "server stderr");
        } else {
            tracing::info!(target: SERVER_STDERR_TARGET, pid, line = %text, "server stderr");
        }
    }

    fn flush(&mut self, pid: u32) {
        if self.suppressed > 0 {
            let n = self.suppressed;
            self.suppressed = 0;
            tracing::warn!(target: SERVER_STDERR_TARGET, pid, suppressed = n, "suppressed {n} lines of server stderr");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_and_describe_never_show_environment_values() {
        let b = StdioConnector::builder("srv")
            .arg("-x")
            .env("API_KEY", "s3cret");
        assert_eq!(b.describe(), "stdio: srv -x");
        let c = b.build();
        let shown = format!("{c:?} {}", c.describe());
        assert!(
            shown.contains("API_KEY") && !shown.contains("s3cret"),
            "{shown}"
        );
    }

    #[test]
    fn only_allowlisted_variables_that_are_no_shell_functions_are_inherited() {
        let host = |name: &str| match name {
            "PATH" => Some(OsString::from("/bin")),
            "SHELL" => Some(OsString::from("() { evil; }")),
            "HOME" => Some(OsString::from("/home/me")),
            "API_KEY" => Some(OsString::from("s3cret")),
            _ => None,
        };
        let inherited: Vec<_> = allowlisted_env(host).collect();
        assert_eq!(
            inherited,
            [
                ("HOME", OsString::from("/home/me")),
                ("PATH", OsString::from("/bin"))
            ]
        );
    }

    #[test]
    fn token_bucket_allows_a_burst_then_refills() {
        let t0 = Instant::now();
        let mut limit = StderrLimit::new(t0);
        let allowed = (0..1500).filter(|_| limit.take(t0)).count();
        assert_eq!(allowed, 1000);
        assert!(!limit.take(t0));
        assert!(limit.take(t0 + Duration::from_millis(2)));
    }

    #[test]
    fn describe_lists_program_and_args() {
        let c = StdioConnector::builder("npx")
            .args(["-y", "server-everything"])
            .build();
        assert_eq!(c.describe(), "stdio: npx -y server-everything");
        assert_eq!(c.grace(), DEFAULT_GRACE);
    }
}
