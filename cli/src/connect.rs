//! Starting the server (`--stdio`) or reaching it (`--http`) and ending it: the client builder
//! from the global options (`-H` headers checked first, see [`crate::headers`]), the wait
//! for the handshake (a spinner on stderr at a terminal after 1.5 s; on timeout an error that
//! names what went unanswered, the bound, the flag and, for a `--stdio` server, its last stderr
//! line), and a stop that mcpc bounds so that it exits soon after its answer whatever the
//! server does.
//!
//! The bounds go down to the HTTP transports: each HTTP connection is opened within
//! `--connect-timeout`, at most 10 s (the library's default); the exchanges a server answers
//! at once (the `POST` of a notification or of a response, a `GET`, the `DELETE`) get their
//! answer's headers within half of `--timeout`, at most 10 s (the library's rule), so that a
//! notification the server never answers fails the call behind it as the connection lost
//! (exit 5, naming the notification) before the call would time out.
//!
//! The server's environment is the runtime's allowlist (`HOME`, `LOGNAME`, `PATH`, `SHELL`,
//! `TERM`, `USER`) plus `--env K=V`, or everything with `--inherit-env`. Its shutdown grace
//! (close stdin, wait, SIGTERM to its group, wait, SIGKILL) is [`SHUTDOWN_GRACE`] per step,
//! and [`finish`] gives up after [`FINISH_BOUND`]: what is left is killed when the runtime
//! shuts down (SIGKILL to the group) and reaped by `main` before mcpc exits.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use mcp_runtime::trace::{TraceRecorder, replay};
use mcp_runtime::transport::StdioConnector;
use mcp_runtime::{Client, ClientBuilder, ConnState, Failure};
use tokio::time::Instant;

use crate::args::Global;
use crate::error::{CliError, Exit};
use crate::headers::{self, Header};
use crate::sanitize::{clean_line, redact_url};
use crate::signals::Interrupt;
use crate::{capture, interact};

/// mcpc's wait for each step of the server's shutdown (the library's default is 2 s).
pub const SHUTDOWN_GRACE: Duration = Duration::from_millis(100);

/// The longest [`finish`] waits for the client to stop and the server to be reaped.
pub const FINISH_BOUND: Duration = Duration::from_millis(300);

/// Set (to anything but empty), mcpc records what its client's driver fed the machine and, once
/// stopped, replays it on a fresh machine; a run that is not a behaviour of the machine exits
/// 70 with the first difference on stderr. For tests (`scripts/interop` sets it).
pub const CHECK_TRACE: &str = "MCPC_CHECK_TRACE";

/// The trace recorder of this process's client, when [`CHECK_TRACE`] is set.
static TRACE: std::sync::OnceLock<TraceRecorder> = std::sync::OnceLock::new();

/// How long connecting may take before the spinner appears.
const SPINNER_AFTER: Duration = Duration::from_millis(1500);

/// The client builder for the server the global options name (`--stdio` or `--http`), and
/// the server as mcpc names it in messages (the command line, or the URL without its
/// password).
pub fn builder(g: &Global) -> Result<(ClientBuilder, String), CliError> {
    // Checked first, whatever the transport: a bad header is a usage error on its own.
    let headers = headers::parse_all(&g.headers)?;
    let web = match (&g.http, &g.sse) {
        (Some(url), _) => Some(("--http", url)),
        (None, Some(url)) => Some(("--sse", url)),
        (None, None) => None,
    };
    let (builder, line) = match web {
        Some((flag, url)) => (http_builder(g, flag, url, &headers)?, redact_url(url)),
        None => {
            if !headers.is_empty() {
                return Err(CliError::usage(
                    "-H/--header",
                    "headers are for --http and --sse servers, not --stdio ones",
                ));
            }
            stdio_builder(g)?
        }
    };
    let handler = interact::handlers(g.sampling_reply.clone(), &g.roots, &line);
    Ok((configure(builder, g, handler), line))
}

/// The settings every mcpc client has, whatever the transport: its name, the handler of the
/// server's requests, the bounds, and the trace recorder when [`CHECK_TRACE`] is set.
pub fn configure(
    mut builder: ClientBuilder,
    g: &Global,
    handler: impl mcp_runtime::ClientHandler,
) -> ClientBuilder {
    if std::env::var_os(CHECK_TRACE).is_some_and(|v| !v.is_empty()) {
        let recorder = TRACE.get_or_init(TraceRecorder::new);
        builder = builder.record_trace(recorder.clone());
    }
    #[cfg(feature = "otel")]
    if let Some(telemetry) = crate::otel::telemetry() {
        builder = builder.telemetry(telemetry);
    }
    builder
        .client_info("mcpc", env!("CARGO_PKG_VERSION"))
        .era(g.era().mode())
        .handler(handler)
        .request_timeout(g.timeout)
        .connect_timeout(g.connect_timeout)
        .validate_output(!g.no_validate_output)
        // A shell user wants a tool that runs only as a task to work: tasks are on.
        .tasks(mcp_runtime::TaskOptions::new().serve_requests(true))
}

/// The HTTP builder for `url` with the checked `-H` headers: `--http` is Streamable HTTP
/// (falling back to the legacy transport if the server refuses `initialize` with 400, 404 or
/// 405, as the specification's compatibility note asks), `--sse` the legacy HTTP+SSE one.
pub fn http_builder(
    g: &Global,
    flag: &str,
    url: &str,
    headers: &[Header],
) -> Result<ClientBuilder, CliError> {
    if !g.env.is_empty() || g.inherit_env {
        return Err(CliError::usage(
            if g.inherit_env {
                "--inherit-env"
            } else {
                "--env"
            },
            format!("the server's environment is for --stdio servers, not {flag} ones"),
        ));
    }
    let built = if flag == "--sse" {
        ClientBuilder::sse(url)
    } else {
        ClientBuilder::http(url)
    };
    let mut builder = built.map_err(|e| {
        CliError::usage(
            format!("{flag} {}", redact_url(url)),
            format!("not a usable URL ({})", clean_line(&e.to_string())),
        )
    })?;
    // Each connection within --connect-timeout, at most the library's 10 s: a black-hole
    // address fails as such rather than as a handshake that timed out.
    builder = builder.http_connect_timeout(
        g.connect_timeout
            .min(mcp_runtime::transport::DEFAULT_HTTP_CONNECT_TIMEOUT),
    );
    // The token `mcpc login` kept for this server, if any.
    builder = builder.oauth(crate::auth::oauth_for_commands(g.connect_timeout));
    for h in headers {
        // The library's errors never contain the value either.
        builder = builder
            .header(&h.name, &h.value)
            .map_err(|e| CliError::usage(format!("-H/--header {}", h.name), e.to_string()))?;
    }
    Ok(builder)
}

/// The stdio builder for `--stdio 'command args…'`, and the command line.
pub fn stdio_builder(g: &Global) -> Result<(ClientBuilder, String), CliError> {
    let Some(line) = g.stdio.as_deref() else {
        return Err(CliError::usage(
            "no server",
            "give one with --stdio 'command args…' or --http URL (or try `mcpc demo`)",
        ));
    };
    let words = shlex::split(line)
        .ok_or_else(|| CliError::usage("--stdio", format!("unbalanced quotes in `{line}`")))?;
    let Some((program, args)) = words.split_first() else {
        return Err(CliError::usage("--stdio", "the command is empty"));
    };
    let mut connector = StdioConnector::builder(program)
        .args(args)
        .grace(SHUTDOWN_GRACE);
    if g.inherit_env {
        connector = connector.inherit_env();
    }
    for (k, v) in &g.env {
        connector = connector.env(k, v);
    }
    Ok((ClientBuilder::new(connector.build()), line.to_owned()))
}

/// What connecting waits for, in words.
fn waiting_for(state: ConnState, line: &str) -> String {
    match state {
        ConnState::Starting if line.starts_with("http://") || line.starts_with("https://") => {
            format!("connecting to `{line}`")
        }
        ConnState::Starting => format!("starting `{line}`"),
        ConnState::Probing => format!("asking the server which protocol era it speaks (`{line}`)"),
        _ => format!("waiting for the server's initialize answer (`{line}`)"),
    }
}

/// The spinner shown while connecting takes long (stderr, at a terminal only).
struct Spinner {
    bar: Option<ProgressBar>,
    terminal: bool,
}

impl Spinner {
    fn new() -> Self {
        Spinner {
            bar: None,
            terminal: std::io::stderr().is_terminal(),
        }
    }

    fn show(&mut self, message: &str) {
        if !self.terminal {
            return;
        }
        let bar = self.bar.get_or_insert_with(|| {
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr()).with_style(
                ProgressStyle::with_template("{spinner} {msg} ({elapsed})")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            bar.enable_steady_tick(Duration::from_millis(100));
            bar
        });
        let mut message = clean_line(message);
        if let Some(stderr) = capture::last_server_stderr() {
            let stderr = clean_line(&stderr);
            let short: String = stderr.chars().take(60).collect();
            let more = if short.len() < stderr.len() {
                "…"
            } else {
                ""
            };
            message.push_str(&format!(" - server stderr: {short}{more}"));
        }
        bar.set_message(message);
    }

    fn clear(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        self.clear();
    }
}

/// Why connecting failed, in one sentence: for a bound run out, what went unanswered in the
/// `phase` the connection was in (`server/discover` while probing, `initialize` in the
/// handshake); with the server's last stderr line for a `--stdio` server (an HTTP server has
/// none).
fn connect_failure(g: &Global, last_error: Option<Failure>, phase: ConnState) -> String {
    let stdio = g.http.is_none() && g.sse.is_none();
    let stderr = capture::last_server_stderr().filter(|_| stdio);
    if let Some(Failure::InitTimeout { .. }) = last_error {
        let secs = g.connect_timeout.as_secs_f64();
        let unanswered = match phase {
            ConnState::Probing => "no answer to server/discover",
            ConnState::Initializing => "no answer to initialize",
            _ if stdio => "the server did not start",
            _ => "no connection to the server",
        };
        let mut why = format!("{unanswered} within {secs} s (the --connect-timeout bound; ");
        if stdio {
            why.push_str(
                "a server that installs itself first, like `npx -y …`, may need more: \
                 --connect-timeout SECS); ",
            );
            why.push_str(&match stderr {
                Some(line) => format!("the server's last stderr line: {line}"),
                None => "the server wrote nothing on stderr".to_owned(),
            });
        } else {
            why.push_str("more: --connect-timeout SECS)");
        }
        return why;
    }
    let unauthorized = matches!(
        &last_error,
        Some(
            Failure::Unauthorized { .. }
                | Failure::Transport(mcp_runtime::TransportError::Http {
                    status: 401 | 403,
                    ..
                })
        )
    );
    let mut why = last_error.map_or_else(|| "the connection failed".to_owned(), |e| e.to_string());
    if unauthorized && let Some(url) = g.http.as_deref().or(g.sse.as_deref()) {
        why.push_str(&format!(
            "; the server wants authorization: mcpc --http {} login",
            redact_url(url)
        ));
    }
    if let Some(line) = stderr {
        why.push_str(&format!(" (server stderr: {line})"));
    }
    why
}

/// Connects to the server and waits for the handshake, bounded by `--connect-timeout`. A
/// signal stops the server and ends mcpc.
pub async fn connect(g: &Global, interrupt: &Interrupt, what: &str) -> Result<Client, CliError> {
    let (builder, line) = builder(g)?;
    connect_built(builder, line, g, interrupt, what).await
}

/// Connects with `builder` (the server named `line` in messages) and waits for the handshake,
/// bounded by `--connect-timeout`. A signal stops the server and ends mcpc.
pub async fn connect_built(
    builder: ClientBuilder,
    line: String,
    g: &Global,
    interrupt: &Interrupt,
    what: &str,
) -> Result<Client, CliError> {
    let client = builder.connect_lazy();
    let mut states = client.watch_state();
    let start = Instant::now();
    let mut spinner = Spinner::new();
    let mut tick = tokio::time::interval(Duration::from_millis(250));
    // The last phase seen before the end: what a timeout went unanswered in.
    let mut phase = ConnState::Starting;
    loop {
        let state = *states.borrow_and_update();
        if matches!(
            state,
            ConnState::Starting | ConnState::Probing | ConnState::Initializing
        ) {
            phase = state;
        }
        match state {
            ConnState::Ready => {
                spinner.clear();
                return Ok(client);
            }
            ConnState::Backoff | ConnState::Closing | ConnState::Closed => {
                spinner.clear();
                // The typed cause says whether the bound ran out.
                let last_error = client.last_error();
                finish(&client).await;
                return Err(CliError::new(
                    Exit::Connect,
                    format!("could not connect to `{line}`"),
                    connect_failure(g, last_error, phase),
                ));
            }
            _ => {
                if start.elapsed() >= SPINNER_AFTER {
                    spinner.show(&waiting_for(state, &line));
                }
            }
        }
        tokio::select! {
            biased;
            caught = interrupt.fired() => {
                spinner.clear();
                finish(&client).await;
                return Err(CliError::signalled(what, caught));
            }
            changed = states.changed() => {
                if changed.is_err() {
                    return Err(CliError::new(Exit::Connect, what, "the client stopped"));
                }
            }
            _ = tick.tick() => {}
        }
    }
}

/// Stops the client and waits, at most [`FINISH_BOUND`], for the server process to be gone
/// (what is left then is killed when the runtime shuts down).
pub async fn finish(client: &Client) {
    let _ = tokio::time::timeout(FINISH_BOUND, async {
        client.stop().await;
        client.closed().await;
    })
    .await;
    if let Some(recorder) = TRACE.get()
        && let Err(e) = recorder.trace().and_then(|t| replay(&t))
    {
        errln!("mcpc: the run is not a behaviour of the machine: {e}");
        std::process::exit(70);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn global(args: &[&str]) -> Global {
        let mut all = vec!["mcpc"];
        all.extend_from_slice(args);
        all.push("ping");
        crate::args::Cli::parse_from(all).global
    }

    #[test]
    fn a_timeout_names_the_bound_and_the_flag() {
        let g = global(&["--connect-timeout", "2.5"]);
        let failure = mcp_runtime::Failure::InitTimeout {
            after: Duration::from_millis(2500),
        };
        let why = connect_failure(&g, Some(failure.clone()), ConnState::Initializing);
        assert!(
            why.starts_with("no answer to initialize within 2.5 s"),
            "{why}"
        );
        assert!(why.contains("--connect-timeout SECS"), "{why}");
        assert!(why.contains("stderr"), "a --stdio server's stderr: {why}");
        // An HTTP server has no stderr; a modern one is probed, never initialized.
        let g = global(&[
            "--http",
            "http://127.0.0.1:9/mcp",
            "--connect-timeout",
            "2.5",
        ]);
        let why = connect_failure(&g, Some(failure), ConnState::Probing);
        assert!(
            why.starts_with("no answer to server/discover within 2.5 s"),
            "{why}"
        );
        assert!(why.contains("--connect-timeout SECS"), "{why}");
        assert!(!why.contains("stderr"), "{why}");
        assert!(!why.contains("npx"), "{why}");
    }

    #[test]
    fn the_phases_read_well() {
        assert_eq!(
            waiting_for(ConnState::Starting, "npx -y x"),
            "starting `npx -y x`"
        );
        assert_eq!(
            waiting_for(ConnState::Initializing, "srv"),
            "waiting for the server's initialize answer (`srv`)"
        );
    }

    #[test]
    fn the_builder_takes_the_flags() {
        assert!(
            builder(&global(&[
                "--stdio",
                "srv --x",
                "--env",
                "A=b",
                "--inherit-env"
            ]))
            .is_ok()
        );
        assert_eq!(
            builder(&global(&["--stdio", "'x"])).unwrap_err().exit,
            Exit::Usage
        );
    }
}
