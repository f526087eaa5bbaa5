//! [`ClientBuilder`]: the transport (stdio, Streamable HTTP, legacy HTTP+SSE, any connector),
//! who the client is, what it answers, its bounds and timeouts; and the start of a
//! [`Client`], which spawns the driver.

use std::sync::atomic::AtomicU64;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use mcp_machine::{Config, EraMode, Failure, ListenStatus, Machine};
use tokio::sync::{mpsc, watch};

use super::{Client, Limits, Shared};
use crate::cache::{AuthContext, CacheConfig};
use crate::command::Notifier;
use crate::driver::{Driver, Outputs, Wiring};
use crate::feed::{FeedLimits, Hub};
use crate::handler::{ClientHandler, Handlers};
use crate::trace::{TraceRecorder, TraceSink};
use crate::transport::{Connector, StdioConnector, StdioConnectorBuilder, TransportConfig};
use crate::types::Notification;
use crate::{ConnState, ConnectError, Error, Notifications, Result, Transitions};

/// The smallest reconnect delay [`ClientBuilder::backoff`] accepts.
pub const MIN_BACKOFF: Duration = Duration::from_millis(10);

/// Builds a [`Client`]: the transport, who we are, what we answer, and the timeouts.
pub struct ClientBuilder {
    connector: Transport,
    config: Config,
    transport: TransportConfig,
    handler: Arc<dyn ClientHandler>,
    seed: Option<u64>,
    limits: Limits,
    cache: CacheConfig,
    trace: Option<TraceRecorder>,
    notifications: Arc<Hub<Notification>>,
    transitions: Arc<Hub<crate::state::Transition>>,
    /// The HTTP connector still taking options ([`ClientBuilder::header`]), for HTTP builders.
    http: Option<HttpSetup>,
    /// Check results against the listed `outputSchema` ([`ClientBuilder::validate_output`]).
    validate_output: bool,
    /// Who authorizes the connection when the server asks ([`ClientBuilder::oauth`]).
    authorizer: Option<crate::driver::Authorizer>,
    /// Whether [`ClientBuilder::http_header_timeout`] was given (else the header bound
    /// follows the request timeout).
    header_timeout_set: bool,
    /// Task-backed tool calls ([`ClientBuilder::tasks`]).
    tasks: Option<crate::tasks::TaskOptions>,
    /// The calls' default for [`RequestOptions::wait_for_ready`].
    wait_for_ready: bool,
    /// Where spans and metrics go ([`ClientBuilder::telemetry`]).
    #[cfg(feature = "otel")]
    telemetry: Option<crate::otel::Telemetry>,
}

/// The connector of an HTTP builder, kept to take more options; `connector` is rebuilt from it.
#[derive(Clone, Debug)]
enum HttpSetup {
    Auto(Box<crate::transport::AutoHttpConnector>),
    Streamable(crate::transport::HttpConnector),
    Sse(crate::transport::SseConnector),
}

impl std::fmt::Debug for ClientBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientBuilder")
            .field("transport", &self.connector.describe())
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl ClientBuilder {
    /// A builder over any transport connector: here an in-process server on a
    /// `tokio::io::duplex`, a fresh one for every connection.
    ///
    /// ```
    /// use mcp_runtime::ClientBuilder;
    /// use mcp_runtime::transport::StreamConnector;
    /// use mcp_testserver::ServerConfig;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> mcp_runtime::Result<()> {
    /// let connector = StreamConnector::from_fn(|| async {
    ///     let (ours, theirs) = tokio::io::duplex(1 << 16);
    ///     let (read, write) = tokio::io::split(theirs);
    ///     tokio::spawn(mcp_testserver::serve(read, write, ServerConfig::echo()));
    ///     Ok(tokio::io::split(ours))
    /// });
    /// let client = ClientBuilder::new(connector).connect().await?;
    /// assert_eq!(client.server_info().unwrap().name(), "mcp-echo-server");
    /// client.stop().await;
    /// # Ok(()) }
    /// ```
    pub fn new(connector: impl Connector) -> Self {
        Self::over(Transport::Built(Arc::new(connector)))
    }

    fn over(connector: Transport) -> Self {
        ClientBuilder {
            connector,
            config: Config {
                client_name: "mcp-runtime".into(),
                ..Config::default()
            },
            transport: TransportConfig::default(),
            handler: Arc::new(Handlers::new()),
            seed: None,
            limits: Limits::default(),
            cache: CacheConfig::DEFAULT,
            trace: None,
            notifications: Arc::new(Hub::new(FeedLimits::NOTIFICATIONS)),
            transitions: Arc::new(Hub::new(FeedLimits::TRANSITIONS)),
            http: None,
            validate_output: true,
            authorizer: None,
            header_timeout_set: false,
            tasks: None,
            wait_for_ready: false,
            #[cfg(feature = "otel")]
            telemetry: None,
        }
    }

    /// A builder that spawns `program` with `args` (no shell) and speaks MCP over its stdio.
    ///
    /// The stdio options ([`ClientBuilder::env`], [`ClientBuilder::inherit_env`],
    /// [`ClientBuilder::env_clear`], [`ClientBuilder::current_dir`],
    /// [`ClientBuilder::shutdown_grace`]) apply to it; see
    /// [`crate::transport::stdio`] for the environment the server gets by default.
    ///
    /// ```no_run
    /// # async fn demo() -> mcp_runtime::Result<()> {
    /// use std::time::Duration;
    /// let client = mcp_runtime::ClientBuilder::stdio("npx", ["-y", "@modelcontextprotocol/server-everything"])
    ///     .env("API_KEY", "…")
    ///     .current_dir("/tmp")
    ///     .shutdown_grace(Duration::from_millis(500))
    ///     .connect()
    ///     .await?;
    /// # drop(client); Ok(()) }
    /// ```
    pub fn stdio(
        program: impl Into<std::ffi::OsString>,
        args: impl IntoIterator<Item = impl Into<std::ffi::OsString>>,
    ) -> Self {
        Self::over(Transport::Stdio(
            StdioConnector::builder(program).args(args),
        ))
    }

    /// A builder for the MCP server at `url` over HTTP: Streamable HTTP (MCP 2025-03-26 …
    /// 2025-11-25; see [`crate::transport::http`]), falling back to the legacy HTTP+SSE
    /// transport of 2024-11-05 on the same URL when the server refuses the POST of
    /// `initialize` with 400, 404 or 405; the verdict is kept for the client's lifetime
    /// ([`crate::transport::AutoHttpConnector`]). Fails only on a URL that is not `http(s)`.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # use mcp_testserver::{ServerConfig, http::{HttpConfig, serve}};
    /// # let server = serve("127.0.0.1:0".parse()?, HttpConfig::new(ServerConfig::echo())).await?;
    /// # let url = server.url();
    /// let client = mcp_runtime::ClientBuilder::http(&url)? // e.g. "https://mcp.example.com/mcp"
    ///     .header("Authorization", "Bearer …")?
    ///     .http_timeout(std::time::Duration::from_secs(20))
    ///     .connect()
    ///     .await?;
    /// let echo = client.call_tool("echo", serde_json::json!({"message": "hi"})).await?;
    /// assert_eq!(echo.text(), "Echo: hi");
    /// # Ok(()) }
    /// ```
    pub fn http(url: &str) -> Result<Self> {
        let connector = crate::transport::AutoHttpConnector::new(url).map_err(|e| {
            http_error(format!("http: {}", crate::auth::policy::redact_str(url)), e)
        })?;
        Ok(Self::new_http(HttpSetup::Auto(Box::new(connector))))
    }

    /// A builder for a Streamable HTTP server at `url`, without the fallback of
    /// [`ClientBuilder::http`]. Fails only on a URL that is not `http(s)`.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # use mcp_testserver::{ServerConfig, http::{HttpConfig, serve}};
    /// # let server = serve("127.0.0.1:0".parse()?, HttpConfig::new(ServerConfig::echo())).await?;
    /// # let url = server.url();
    /// let client = mcp_runtime::ClientBuilder::streamable_http(&url)?.connect().await?;
    /// assert!(client.server_info().is_some());
    /// client.stop().await;
    /// # Ok(()) }
    /// ```
    pub fn streamable_http(url: &str) -> Result<Self> {
        let connector = crate::transport::HttpConnector::new(url).map_err(|e| {
            http_error(format!("http: {}", crate::auth::policy::redact_str(url)), e)
        })?;
        Ok(Self::new_http(HttpSetup::Streamable(connector)))
    }

    /// A builder for a server of the legacy HTTP+SSE transport (MCP 2024-11-05) whose event
    /// stream is at `url` (see [`crate::transport::sse`]); never Streamable HTTP. That
    /// transport belongs to the handshake era, so the builder speaks it only
    /// ([`EraMode::Legacy`]: no `server/discover` probe). Fails only on a URL that is not
    /// `http(s)`.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # use mcp_testserver::{ServerConfig, http::{HttpConfig, serve}};
    /// # let server = serve("127.0.0.1:0".parse()?, HttpConfig::new(ServerConfig::echo())).await?;
    /// # let url = server.sse_url();
    /// let client = mcp_runtime::ClientBuilder::sse(&url)?.connect().await?; // ".../sse"
    /// assert_eq!(client.era(), Some(mcp_runtime::Era::Legacy));
    /// # Ok(()) }
    /// ```
    pub fn sse(url: &str) -> Result<Self> {
        let connector = crate::transport::SseConnector::new(url)
            .map_err(|e| http_error(format!("sse: {}", crate::auth::policy::redact_str(url)), e))?;
        Ok(Self::new_http(HttpSetup::Sse(connector)).era(EraMode::Legacy))
    }

    fn new_http(setup: HttpSetup) -> Self {
        let mut builder = Self::over(Transport::Built(setup.connector()));
        builder.http = Some(setup);
        builder
    }

    /// HTTP: a static header sent on every HTTP request (an `Authorization` token, an API
    /// key), replacing an earlier one of the same name. Fails on a builder that is not an
    /// HTTP one, an invalid name, a value with CR, LF or another control character, or a
    /// header the transport sets itself; nothing is sent before. The value never appears in
    /// errors, logs or `Debug` output.
    pub fn header(mut self, name: &str, value: &str) -> Result<Self> {
        let target = self.connector.describe();
        match self.edit_http(&|web| web.set_header(name, value)) {
            Some(Ok(())) => Ok(self),
            Some(Err(e)) => Err(http_error(target, e)),
            None => Err(http_error(
                target,
                crate::TransportError::Http {
                    status: 0,
                    reason: "header() on a builder that is not an HTTP one".into(),
                },
            )),
        }
    }

    /// HTTP: bounds connecting plus receiving the response headers of each HTTP request, the
    /// `POST` of a request included (no bound by default: a server may answer a request's
    /// `POST` only once the call is done); not the length of an SSE stream, and distinct from
    /// [`ClientBuilder::request_timeout`]. Ignored, with a warning, by a builder that is not
    /// an HTTP one.
    pub fn http_timeout(mut self, timeout: Duration) -> Self {
        let edited = self.edit_http(&|web| {
            web.http_timeout = Some(timeout);
            Ok(())
        });
        self.warn_unless_http(edited, "http_timeout");
        self
    }

    /// HTTP: bounds opening the connection of each HTTP request: DNS, TCP and TLS
    /// ([`crate::transport::DEFAULT_HTTP_CONNECT_TIMEOUT`], 10 s). Past it the request fails
    /// with [`crate::TransportError::Connect`] of kind `TimedOut` (the first connect: a
    /// [`Error::Connect`]; later ones: the table reconnects). Ignored, with a warning, by a
    /// builder that is not an HTTP one.
    pub fn http_connect_timeout(mut self, timeout: Duration) -> Self {
        let edited = self.edit_http(&|web| web.set_connect_timeout(timeout));
        self.warn_unless_http(edited, "http_connect_timeout");
        self
    }

    /// HTTP: bounds the response headers of the exchanges a server answers at once: the `POST`
    /// of a notification or of a response, a `GET`, the `DELETE` (the `POST` of a request is
    /// bounded by [`ClientBuilder::http_timeout`] only). By default the smaller of
    /// [`crate::transport::DEFAULT_HTTP_HEADER_TIMEOUT`] (10 s) and half the request timeout,
    /// so that a call held back behind a notification the server does not answer fails as
    /// [`Error::ConnectionLost`] naming that notification, before its own timeout (a call with
    /// a shorter timeout of its own may still time out first). Past it the connection fails
    /// with [`crate::TransportError::Io`] of kind `TimedOut`, whose source is a
    /// [`crate::transport::NoAnswer`], and the client reconnects. Ignored, with a warning, by
    /// a builder that is not an HTTP one.
    pub fn http_header_timeout(mut self, timeout: Duration) -> Self {
        self.header_timeout_set = true;
        let edited = self.edit_http(&|web| {
            web.header_timeout = timeout;
            Ok(())
        });
        self.warn_unless_http(edited, "http_header_timeout");
        self
    }

    /// Warns when an HTTP option was given to a builder that is not an HTTP one.
    fn warn_unless_http(
        &self,
        edited: Option<std::result::Result<(), crate::TransportError>>,
        option: &str,
    ) {
        match edited {
            None => {
                tracing::warn!(target: "mcp::builder", option, transport = %self.connector.describe(),
                    "an HTTP option on a builder that is not HTTP is ignored");
            }
            Some(Err(e)) => {
                tracing::warn!(target: "mcp::builder", option, error = %e,
                    "an HTTP option could not be applied");
            }
            Some(Ok(())) => {}
        }
    }

    /// HTTP: authorize with OAuth 2.1 ([`crate::auth::OAuth`]): every request to the server's
    /// origin carries the token `oauth` holds for this server (refreshed before it expires;
    /// never sent elsewhere, never shown). Get the first token with
    /// [`crate::auth::OAuth::login`], or let the connection authorize when the server asks:
    /// a request refused with 401 (or 403 `insufficient_scope`) waits while
    /// [`crate::auth::OAuth::on_challenge`] authorizes (one authorization at a time), then goes
    /// out again; refused again after that, or when the authorization fails, the caller gets
    /// [`Error::Unauthorized`] (the connection's handshake: [`crate::Failure::Unauthorized`]).
    /// At most `Config::max_authorizations` (3) authorizations in a row without a call
    /// answered. Ignored, with a warning, by a builder that is not an HTTP one
    /// (authorization is not for stdio).
    pub fn oauth(mut self, oauth: crate::auth::OAuth) -> Self {
        let endpoint = std::cell::RefCell::new(None);
        let edited = self.edit_http(&|web| {
            web.oauth = Some(oauth.clone());
            endpoint.replace(web.endpoint.clone());
            Ok(())
        });
        if let Some(endpoint) = endpoint.into_inner() {
            self.authorizer = Some(crate::driver::Authorizer { oauth, endpoint });
        }
        if edited.is_none() {
            tracing::warn!(target: "mcp::builder", option = "oauth", transport = %self.connector.describe(),
                "an HTTP option on a builder that is not HTTP is ignored");
        }
        self
    }

    /// Changes the options of this builder's HTTP connector in place (`None`: it has none).
    fn edit_http(
        &mut self,
        f: &dyn Fn(
            &mut crate::transport::WebOptions,
        ) -> std::result::Result<(), crate::TransportError>,
    ) -> Option<std::result::Result<(), crate::TransportError>> {
        let setup = self.http.as_mut()?;
        let result = match setup {
            HttpSetup::Auto(c) => c.edit_web(f),
            HttpSetup::Streamable(c) => c.edit_web(f),
            HttpSetup::Sse(c) => c.edit_web(f),
        };
        self.connector = Transport::Built(setup.connector());
        Some(result)
    }

    /// A builder that spawns `program` over stdio, its arguments given with
    /// [`ClientBuilder::arg`] (like `std::process::Command`); the same as
    /// [`ClientBuilder::stdio`] with no arguments.
    ///
    /// ```no_run
    /// # async fn demo() -> mcp_runtime::Result<()> {
    /// let client = mcp_runtime::ClientBuilder::command("my-server").connect().await?;
    /// # drop(client); Ok(()) }
    /// ```
    pub fn command(program: impl Into<std::ffi::OsString>) -> Self {
        Self::over(Transport::Stdio(StdioConnector::builder(program)))
    }

    /// Stdio: appends an argument of the server's command line.
    pub fn arg(self, arg: impl Into<std::ffi::OsString>) -> Self {
        self.stdio_option("arg", |b| b.arg(arg))
    }

    /// Stdio: sets a variable of the server's environment (on top of the default allowlist).
    /// Ignored, with a warning, by a builder that is not [`ClientBuilder::stdio`].
    pub fn env(
        self,
        key: impl Into<std::ffi::OsString>,
        value: impl Into<std::ffi::OsString>,
    ) -> Self {
        self.stdio_option("env", |b| b.env(key, value))
    }

    /// Stdio: the server inherits the host's whole environment, not only the default allowlist
    /// (`HOME`, `LOGNAME`, `PATH`, `SHELL`, `TERM`, `USER`). Secrets in the host's environment
    /// then reach the server.
    pub fn inherit_env(self) -> Self {
        self.stdio_option("inherit_env", StdioConnectorBuilder::inherit_env)
    }

    /// Stdio: the server's environment starts empty (only what [`ClientBuilder::env`] sets).
    pub fn env_clear(self) -> Self {
        self.stdio_option("env_clear", StdioConnectorBuilder::env_clear)
    }

    /// Stdio: the server's working directory.
    pub fn current_dir(self, dir: impl Into<std::path::PathBuf>) -> Self {
        self.stdio_option("current_dir", |b| b.current_dir(dir))
    }

    /// Stdio: how long each step of the server's shutdown waits (2 s): stdin is closed, then
    /// after `grace` SIGTERM to its process group, after `grace` again SIGKILL. [`Client::stop`]
    /// does not wait for this; [`Client::closed`] does.
    pub fn shutdown_grace(self, grace: Duration) -> Self {
        self.stdio_option("shutdown_grace", |b| b.grace(grace))
    }

    fn stdio_option(
        mut self,
        name: &str,
        f: impl FnOnce(StdioConnectorBuilder) -> StdioConnectorBuilder,
    ) -> Self {
        self.connector = match self.connector {
            Transport::Stdio(b) => Transport::Stdio(f(b)),
            built @ Transport::Built(_) => {
                tracing::warn!(target: "mcp::builder", option = name, transport = %built.describe(),
                    "a stdio option on a builder that is not stdio is ignored");
                built
            }
        };
        self
    }

    /// `clientInfo` sent in the handshake.
    pub fn client_info(mut self, name: impl Into<String>, version: impl Into<String>) -> Self {
        self.config.client_name = name.into();
        self.config.client_version = version.into();
        self
    }

    /// The handler answering the server's requests; the client declares what it provides.
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
    /// # let builder = mcp_runtime::ClientBuilder::new(connector);
    /// use mcp_runtime::{CreateMessageResult, Handlers};
    ///
    /// let handlers = Handlers::new().sampling(|params, _cx| async move {
    ///     let asked = params.messages[0].content.joined_text();
    ///     Ok(CreateMessageResult::text("my-model", format!("you said: {asked}")))
    /// });
    /// let client = builder.handler(handlers).connect().await?;
    /// // The server's `sample` tool asks the client for a completion.
    /// let result = client.call_tool("sample", serde_json::json!({"prompt": "hi"})).await?;
    /// assert_eq!(result.text(), "you said: hi");
    /// # Ok(()) }
    /// ```
    pub fn handler(mut self, handler: impl ClientHandler) -> Self {
        self.handler = Arc::new(handler);
        self
    }

    /// Turn task-backed tool calls on (both eras): a tool call the server runs as a task is
    /// polled to its end inside `call_tool` (one await; an `isError` result stays a result),
    /// kept across reconnects, and cancelled on the server when the caller drops or cancels
    /// it. In the 2025-11-25 era a tool whose `execution.taskSupport` is `required` (and,
    /// when `options` say so, `optional`) is called with `params.task`; in the 2026-07-28
    /// era the client declares the `io.modelcontextprotocol/tasks` extension on its requests
    /// and the server decides. Off (the default), a tool that requires a task fails with
    /// [`Error::TaskRequired`] once the tools were listed. See `docs/guide/tasks.md`.
    pub fn tasks(mut self, options: crate::tasks::TaskOptions) -> Self {
        self.config.tasks = true;
        self.config.task_poll_min = options.poll_min;
        self.config.task_poll_max = options.poll_max;
        self.config.max_task_failures = options.max_failures;
        self.tasks = Some(options);
        self
    }

    /// Whether a call made while the connection is not ready (starting, reconnecting, in
    /// backoff) waits for a ready connection up to its own timeout (`true`), or fails at once
    /// with [`Error::Unavailable`] (`false`, the default, which tells a host at once that the
    /// server is away). Each call can say otherwise with
    /// [`crate::RequestOptions::wait_for_ready`]. At most `max` calls wait at once (1024 by
    /// default); past it a call fails at once. See [`crate::RequestOptions::wait_for_ready`] for what
    /// a waiting call is promised.
    pub fn wait_for_ready(mut self, wait: bool) -> Self {
        self.wait_for_ready = wait;
        self
    }

    /// Records this client by the MCP semantic conventions of OpenTelemetry into
    /// `telemetry`'s providers: a CLIENT span per request (parent: the caller's current
    /// OpenTelemetry context; its context written into `params._meta`), a SERVER span per
    /// request of the server (parent: the context in its `_meta`), the transitions a call
    /// lived through as span events, and the duration metrics. Without it the client records
    /// nothing. See [`crate::otel`]. Only with the `otel` feature.
    #[cfg(feature = "otel")]
    pub fn telemetry(mut self, telemetry: crate::otel::Telemetry) -> Self {
        self.telemetry = Some(telemetry);
        self
    }

    /// The most calls that wait for a ready connection at once (1024); past it, a call made
    /// while not ready fails with [`Error::Unavailable`] even when it asked to wait.
    pub fn max_waiting_calls(mut self, max: usize) -> Self {
        self.config.max_waiting_calls = max;
        self
    }

    /// Which era of MCP to speak. [`EraMode::Auto`], the default, asks the server with
    /// `server/discover` and falls back to the handshake when the server is a legacy one (on
    /// the same process or link); the verdict is kept for the client's lifetime and decided
    /// again when it proves wrong.
    /// [`EraMode::Legacy`] speaks the `initialize` handshake only (no probe);
    /// [`EraMode::Modern`] speaks 2026-07-28 only.
    pub fn era(mut self, mode: EraMode) -> Self {
        self.config.era = mode;
        self
    }

    /// The most `input_required` rounds (2026-07-28) one call goes through before it fails
    /// with [`Error::InputRequired`] (10; at least 1).
    pub fn max_input_rounds(mut self, rounds: u8) -> Self {
        self.config.max_input_rounds = rounds.max(1);
        self
    }

    /// How many times one modern call (2026-07-28) is sent again under a new id after its
    /// request was lost without an answer: its response stream broke, or the server refused
    /// it with -32022 naming a version this client speaks (2; 0 never sends one again). Past
    /// it, that error is the call's answer. A lost request is re-issued, never resumed.
    pub fn max_reissues(mut self, reissues: u8) -> Self {
        self.config.max_reissues = reissues;
        self
    }

    /// Whether the listen of a 2026-07-28 connection asks for the list changes (tools,
    /// prompts, resources) of every kind the server advertises `listChanged` for (on by
    /// default). Off, a listen carries only the resources subscribed, and the response cache
    /// relies on its TTLs alone for the lists.
    pub fn listen_list_changed(mut self, on: bool) -> Self {
        self.config.listen_list_changed = on;
        self
    }

    /// How often a listen the server ended (or that was not acknowledged in time) is opened
    /// again per connection (3), and the delay before the first reopening (1 s, doubled each
    /// time, ±20 %). A listen that stayed acknowledged for 60 s starts the count again.
    pub fn relisten(mut self, max: u8, delay: Duration) -> Self {
        self.config.max_relistens = max;
        self.config.relisten_delay = delay;
        self
    }

    /// Whether [`Client::call_tool`] checks a result's `structuredContent` against the
    /// `outputSchema` its tool declared (on by default): a result that does not match, or a
    /// successful one without `structuredContent`, is [`Error::OutputSchemaMismatch`] (the
    /// result inside); a schema that cannot be used (invalid, a `$ref` outside it, too large or
    /// complex) is [`Error::InvalidOutputSchema`]. Schemas come from the client's latest
    /// [`Client::list_tools`] / [`Client::list_all_tools`] (a tool never listed is not
    /// checked), are JSON Schema 2020-12 unless `$schema` says otherwise, and no `$ref` is
    /// ever fetched. `false` checks nothing and records no schema.
    pub fn validate_output(mut self, on: bool) -> Self {
        self.validate_output = on;
        self
    }

    /// How long `server/discover` may go unanswered before the server is taken for a legacy
    /// one (auto) or given up on (modern) (5 s).
    pub fn probe_timeout(mut self, timeout: Duration) -> Self {
        self.config.probe_timeout = timeout;
        self
    }

    /// Default per-call timeout (30 s). Over HTTP, unless
    /// [`ClientBuilder::http_header_timeout`] was given, the header bound follows it (the
    /// smaller of 10 s and half of it). A call can have its own
    /// ([`crate::RequestOptions::timeout`]).
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
    /// # let builder = mcp_runtime::ClientBuilder::new(connector);
    /// use std::time::Duration;
    /// use mcp_runtime::Error;
    ///
    /// let client = builder.request_timeout(Duration::from_millis(50)).connect().await?;
    /// // The server's `slow` tool takes `ms` milliseconds; the call is cancelled on the wire.
    /// let late = client.call_tool("slow", serde_json::json!({"ms": 5000})).await;
    /// assert!(matches!(late, Err(Error::Timeout { .. })));
    /// # Ok(()) }
    /// ```
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.config.request_timeout = timeout;
        self.update_ttl();
        if !self.header_timeout_set {
            let bound = crate::transport::DEFAULT_HTTP_HEADER_TIMEOUT.min(timeout / 2);
            let _ = self.edit_http(&|web| {
                web.header_timeout = bound;
                Ok(())
            });
        }
        self
    }

    /// Bound on spawning the first transport plus its handshake (60 s: a package runner such as
    /// `npx` may install the server first). Reconnects use [`ClientBuilder::init_timeout`].
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.config.connect_timeout = timeout;
        self
    }

    /// The most server requests (sampling, elicitation, roots) the handler holds at once (64;
    /// at least 1); more are answered busy (-32000) at once, so a server cannot tie up the host.
    pub fn max_server_requests(mut self, max: usize) -> Self {
        self.config.max_server_requests = max.max(1);
        self
    }

    /// Bound on spawning plus the handshake after a reconnect (10 s).
    pub fn init_timeout(mut self, timeout: Duration) -> Self {
        self.config.init_timeout = timeout;
        self.update_ttl();
        self
    }

    /// Reconnect backoff: from `min` doubling to `max` (1 s to 30 s), ±`jitter_pct` % (20).
    /// `min` is floored at 10 ms: a zero delay would respawn a crashing server in a busy loop.
    pub fn backoff(mut self, min: Duration, max: Duration, jitter_pct: u32) -> Self {
        let min = min.max(MIN_BACKOFF);
        self.config.backoff_min = min;
        self.config.backoff_max = max.max(min);
        self.config.backoff_jitter_pct = jitter_pct.min(100);
        self.update_ttl();
        self
    }

    /// Largest frame accepted from the server (16 MiB; exactly that is accepted); over HTTP
    /// also the largest JSON body or SSE event.
    pub fn max_frame_bytes(mut self, bytes: usize) -> Self {
        self.config.max_frame_bytes = bytes;
        // The HTTP transports refuse a body or an SSE event over it before buffering it whole.
        let _ = self.edit_http(&|web| {
            web.max_frame_bytes = bytes;
            Ok(())
        });
        self
    }

    /// Capacity of the transport's outgoing queue; a full queue is "busy" (256).
    pub fn send_queue(mut self, frames: usize) -> Self {
        self.transport.send_queue = frames.max(1);
        self
    }

    /// How many frames the transport may read ahead of the client (32; 0 is taken as 1). The
    /// connection table opens this window when a transport comes up and gives one credit back
    /// per frame it takes; a burst of answers then crosses in one wake-up instead of one per
    /// frame. What waits is bounded by the window and by 1 MiB of frames not yet taken
    /// ([`crate::transport::READ_AHEAD_BYTES`]); 1 reads one frame at a time.
    pub fn read_window(mut self, frames: u32) -> Self {
        self.config.read_window = frames.max(1);
        self
    }

    /// How many pages one `list_all_*` call follows at most (1000) before it fails with
    /// [`Error::EndlessPagination`]; a repeated cursor fails at once.
    pub fn max_pages(mut self, pages: usize) -> Self {
        self.limits.max_pages = pages.max(1);
        self
    }

    /// Switches the response cache (SEP-2549) on (the default) or off, keeping its bounds. On,
    /// `list_*` pages and `read_resource` results the server gave a positive `ttlMs` are
    /// answered from memory while fresh; off, every call goes to the server. See
    /// [`CacheConfig`] and [`Client::cache_stats`].
    pub fn response_cache(mut self, enabled: bool) -> Self {
        self.cache.enabled = enabled;
        self
    }

    /// The response cache's whole configuration: on or off, its entry and byte bounds, the
    /// longest TTL it honours ([`CacheConfig::DEFAULT`] unless set).
    pub fn cache_config(mut self, config: CacheConfig) -> Self {
        self.cache = config;
        self
    }

    /// Seed of the jitter (random by default); fix it for reproducible runs.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }

    /// Record this client's trace into `recorder`: the machine's configuration and seed, and
    /// every input, timeout, row fired and action, for [`crate::trace::replay`] to check that
    /// the run is one the machine allows. For tests and diagnosis: the trace is held in memory
    /// (bounded by the recorder's limit) and costs a copy of every input and action; without
    /// this option nothing is recorded. One recorder per client.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let connector = mcp_runtime::transport::StreamConnector::from_fn(|| async {
    /// #     let (ours, theirs) = tokio::io::duplex(1 << 16);
    /// #     let (r, w) = tokio::io::split(theirs);
    /// #     tokio::spawn(mcp_testserver::serve(r, w, mcp_testserver::ServerConfig::echo()));
    /// #     Ok(tokio::io::split(ours))
    /// # });
    /// # let builder = mcp_runtime::ClientBuilder::new(connector);
    /// use mcp_runtime::trace::{TraceRecorder, replay};
    ///
    /// let recorder = TraceRecorder::new();
    /// let client = builder.record_trace(recorder.clone()).connect().await?;
    /// client.ping().await?;
    /// client.stop().await;
    /// let report = replay(&recorder.trace()?)?; // Err: the run is not one the machine allows
    /// assert!(report.steps > 0);
    /// # Ok(()) }
    /// ```
    pub fn record_trace(mut self, recorder: TraceRecorder) -> Self {
        self.trace = Some(recorder);
        self
    }

    /// Bounds of each notification subscriber's queue taken from now on (1024 notifications,
    /// 16 MiB of params): a subscriber that falls behind loses the oldest, counted in
    /// [`crate::Feed::dropped`]. Set it before taking feeds.
    pub fn notification_limits(self, limits: FeedLimits) -> Self {
        self.notifications.set_limits(limits);
        self
    }

    /// Server notifications from the very start of the client (before `connect` returns), for
    /// a host that must not miss one between the handshake and its own subscription. Same as
    /// [`Client::notifications`] otherwise; take as many as you like.
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
    /// # let builder = mcp_runtime::ClientBuilder::new(connector);
    /// // `builder` is any builder: ClientBuilder::stdio(..), ClientBuilder::http(..), ...
    /// let mut transitions = builder.transitions();
    /// let mut notifications = builder.notifications();
    /// let client = builder.connect().await?;
    /// // Starting -> ... -> Ready, as they happened.
    /// while let Some(t) = transitions.try_recv() {
    ///     println!("{} -> {} ({})", t.from(), t.to(), t.event());
    /// }
    /// assert_eq!(client.state(), mcp_runtime::ConnState::Ready);
    /// # drop(notifications); Ok(()) }
    /// ```
    pub fn notifications(&self) -> Notifications {
        self.notifications.subscribe()
    }

    /// Every connection transition from the very first one (see
    /// [`ClientBuilder::notifications`] for an example).
    pub fn transitions(&self) -> Transitions {
        self.transitions.subscribe()
    }

    fn update_ttl(&mut self) {
        let c = &mut self.config;
        c.tombstone_ttl = Config::ttl_for(c.request_timeout, c.init_timeout, c.backoff_max);
    }

    /// Starts the client and waits until it is ready, bounded by the connect timeout
    /// ([`ClientBuilder::connect_timeout`], 60 s). If the first attempt fails, the client is
    /// stopped (and its server process shut down) and the error is [`Error::Connect`]: the
    /// typed cause (spawn error, exit code or signal, the server's refusal, timeout with its
    /// bound) and the server's last stderr lines. To keep retrying in the background instead,
    /// use [`ClientBuilder::connect_lazy`] and [`Client::ready`].
    pub async fn connect(mut self) -> Result<Client> {
        let connector = self.connector.resolve();
        self.connector = Transport::Built(Arc::clone(&connector));
        let client = self.connect_lazy();
        let mut states = client.watch_state();
        loop {
            let state = *states.borrow_and_update();
            match state {
                ConnState::Ready => return Ok(client),
                ConnState::Backoff | ConnState::Closing | ConnState::Closed => {
                    let cause = client
                        .last_error()
                        .unwrap_or(Failure::Transport(crate::TransportError::Closed));
                    client.stop().await;
                    return Err(Error::Connect(Box::new(ConnectError {
                        target: connector.describe(),
                        cause,
                        stderr_tail: connector.stderr_tail(),
                    })));
                }
                ConnState::Starting | ConnState::Probing | ConnState::Initializing => {}
            }
            if states.changed().await.is_err() {
                return Err(Error::Shutdown);
            }
        }
    }

    /// Starts the client and returns at once; it connects (and reconnects) in the background,
    /// with backoff, until [`Client::stop`] or until every handle is dropped. It never gives
    /// up by itself, not even when the program does not exist (it may be installed later):
    /// [`Client::ready`] returns an error for such a permanent failure, and
    /// [`Client::last_error`] says why at any time. Calls made while not ready fail at once
    /// with [`Error::Unavailable`]. Must be called inside a tokio runtime.
    pub fn connect_lazy(self) -> Client {
        let connector = self.connector.resolve();
        // The catalog the connector's links read (HTTP), fed by this client from now on; a
        // catalog of its own otherwise.
        let catalog = connector.tool_catalog().unwrap_or_default();
        catalog.adopt();
        let seed = self.seed.unwrap_or_else(random_seed);
        let epoch = tokio::time::Instant::now();
        // The frame limit is the machine's; the transport enforces the same number.
        let transport = TransportConfig {
            max_frame_bytes: self.config.max_frame_bytes,
            ..self.transport
        };
        let mut caps = self.handler.provides();
        caps.roots_list_changed = caps.roots && self.handler.roots_changes().is_some();
        caps.tasks = self.tasks.as_ref().is_some_and(|t| t.serve)
            && (caps.sampling || caps.elicitation || caps.elicitation_url);
        let caps_tasks = caps.tasks;
        let config = Config {
            capabilities: caps,
            ..self.config
        };
        if let Some(recorder) = &self.trace {
            recorder.begin(&config, seed);
        }
        let machine = Machine::new(config, seed, std::time::Duration::ZERO);
        let (commands_tx, commands_rx) = mpsc::unbounded_channel();
        let next_call = Arc::new(AtomicU64::new(1));
        let notifier = Notifier::new(commands_tx.downgrade(), Arc::clone(&next_call));
        let (state_tx, state_rx) = watch::channel(ConnState::Starting);
        let (closed_tx, closed_rx) = watch::channel(false);
        let (listening, _) = watch::channel(ListenStatus::default());
        let out = Arc::new(Outputs {
            state: state_tx,
            listening,
            server: RwLock::new(None),
            last_error: RwLock::new(None),
            notifications: self.notifications,
            transitions: self.transitions,
            cache: crate::cache::ResponseCache::new(self.cache),
            closed: closed_tx,
        });
        #[cfg(feature = "otel")]
        let recorder = self
            .telemetry
            .map(|t| crate::otel::Recorder::new(t, &*connector));
        let wiring = Wiring {
            #[cfg(feature = "otel")]
            recorder: recorder.clone(),
            connector: Arc::clone(&connector),
            transport_config: transport,
            handler: self.handler,
            notifier,
            authorizer: self.authorizer,
            client_tasks: caps_tasks,
        };
        let driver = Driver::new(
            machine,
            epoch,
            wiring,
            Arc::clone(&out),
            self.trace.map(TraceSink::new),
        );
        let task = tokio::spawn(driver.run(commands_rx));
        let monitor_out = Arc::clone(&out);
        tokio::spawn(async move {
            if let Err(e) = task.await {
                let why = if e.is_panic() {
                    "the client driver panicked"
                } else {
                    "the client driver was cancelled"
                };
                tracing::error!(target: "mcp::driver", "{why}");
                *monitor_out
                    .last_error
                    .write()
                    .unwrap_or_else(|e| e.into_inner()) = Some(Failure::Internal(why.to_owned()));
                monitor_out.state.send_replace(ConnState::Closed);
                let _ = monitor_out.closed.send(true);
            }
        });
        let shared = Arc::new(Shared {
            connector,
            commands: commands_tx,
            state: state_rx,
            closed: closed_rx,
            out,
            next_call,
            limits: self.limits,
            auth: AuthContext::unauthenticated(),
            output_schemas: crate::output_schema::OutputSchemas::new(
                self.validate_output,
                catalog.clone(),
            ),
            catalog,
            tasks: self.tasks,
            task_tools: crate::tasks::TaskTools::default(),
            wait_for_ready: self.wait_for_ready,
            #[cfg(feature = "otel")]
            recorder,
        });
        Client { shared }
    }
}

/// The transport of a builder: a connector, or a stdio one still taking options.
enum Transport {
    Built(Arc<dyn Connector>),
    Stdio(StdioConnectorBuilder),
}

impl Transport {
    fn resolve(self) -> Arc<dyn Connector> {
        match self {
            Transport::Built(c) => c,
            Transport::Stdio(b) => Arc::new(b.build()),
        }
    }

    fn describe(&self) -> String {
        match self {
            Transport::Built(c) => c.describe(),
            Transport::Stdio(b) => b.describe(),
        }
    }
}

impl HttpSetup {
    fn connector(&self) -> Arc<dyn Connector> {
        match self.clone() {
            HttpSetup::Auto(c) => Arc::new(*c),
            HttpSetup::Streamable(c) => Arc::new(c),
            HttpSetup::Sse(c) => Arc::new(c),
        }
    }
}

/// An HTTP builder's error, as [`ClientBuilder::connect`] would report it.
fn http_error(target: String, e: crate::TransportError) -> Error {
    Error::Connect(Box::new(ConnectError {
        target,
        cause: Failure::Transport(e),
        stderr_tail: Vec::new(),
    }))
}

fn random_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(std::process::id().into());
    h.finish()
}

impl Client {
    /// A builder over a transport connector.
    pub fn builder(connector: impl Connector) -> ClientBuilder {
        ClientBuilder::new(connector)
    }
}
