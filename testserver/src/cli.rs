//! What the two binaries share: flag parsing and the stdio main loop.
//!
//! Flags (parsed by hand, `--flag value` or `--flag=value`):
//! `--version-override V` (answer `initialize` with protocol version `V`),
//! `--page-size N` (paginate `tools/list` by `N`), `--die-on-start` (exit 1 at once),
//! `--stderr-noise N` (print `N` lines to stderr first), `--linger MODE` (misbehave at the end:
//! `ignore-eof`, `ignore-term`, `stall-mid-frame`, `close-stdout`; see [`Linger`]),
//! `--handshake MODE` (answer `initialize` badly: `error`, `twice`, `early-requests`; see
//! [`Handshake`]), `--endless-cursor` (`tools/list` always has a next page),
//! `--stderr-flood BYTES` (write that much noise to stderr while serving), `--once PATH` (the
//! misbehaving flags apply only to the first process that creates `PATH`: later processes,
//! e.g. a client's respawns, behave), `--pid-file PATH` (append this process's pid to `PATH`,
//! one line each, so that a test can check that every server it caused is gone), `--help`.
//!
//! Eras (see [`crate::Era`]): `--era legacy|modern|dual` (default `legacy`: the handshake era
//! only, as before; `modern`: the stateless 2026-07-28 era only, `initialize` refused with
//! -32022; `dual`: both, requests carrying the modern `_meta` take the modern path),
//! `--modern-versions V1,V2` (the modern versions offered and accepted, default `2026-07-28`),
//! `--omit-result-type` (modern results leave `resultType` out), `--cache-ttl-ms N` (the
//! `ttlMs` of list results and `resources/read`, in every era: see
//! [`ServerConfig::cache_ttl_ms`]), `--cache-private` (their `cacheScope` is `private`),
//! `--probe MODE` (how a
//! `legacy` server reacts to `server/discover`: `error` (default, -32601), `silent` (never
//! answers it), `die` (exits at once with code 3), `garbage` (answers `{}`); see
//! [`crate::Probe`]; over HTTP a sessionless `server/discover` gets `400` as before, no
//! answer, a cut connection or `{}`).
//!
//! `subscriptions/listen` (modern era): `--listen on|off` (default `on`; `off`: the method
//! answers -32601 and `server/discover` advertises no `listChanged` nor `resources.subscribe`),
//! `--listen-end complete|cancel` (how the `end_listens` tool ends every open listen: the
//! `complete` result, or `notifications/cancelled` naming it and no response),
//! `--listen-honor SPEC` (what an acknowledgement leaves out although asked: `all`, the
//! default, or comma-separated exclusions `-tools`, `-prompts`, `-resources`, `-subscriptions`
//! or `-URI`; repeatable; see [`crate::ListenHonor`]), `--modern-unsolicited on|off` (default
//! `on`: modern requests also get the handshake era's untagged change notifications and
//! `resources/subscribe|unsubscribe`; `off`: only listens hear changes, and those methods
//! answer -32601), `--sse-keepalive-ms N` (HTTP: a `: keep-alive` comment every `N` ms on a
//! listen stream; default 15000, 0: none).
//!
//! HTTP instead of stdio (see [`crate::http`]): `--http ADDR` (e.g. `127.0.0.1:0`) serves
//! Streamable HTTP at `/mcp` and legacy HTTP+SSE at `/sse` and prints the endpoint URL
//! (`http://IP:PORT/mcp`) as the first line of stdout; `--sse ADDR` is the same but prints the
//! legacy URL (`http://IP:PORT/sse`); `--url-file PATH` also writes the URL there;
//! `--json` answers requests with JSON bodies instead of SSE streams; `--retry MS` puts
//! `retry: MS` in every stream's priming event; `--http-chaos NAME[:ARG]` makes HTTP
//! misbehave (see [`crate::http::Fault`]; `auth:KIND` is [`crate::http::AuthKind`]) and
//! `--http-chaos-times N` limits it to the first `N` requests (`--http-chaos-method NAME`: of
//! that method only); `--other-origin ADDR` is where
//! the second origin listens (the other place the `auth:KIND` faults point a client at; it
//! records what reaches it). The server runs until it is killed.
//!
//! `--conformance` adds the official conformance suite's fixture tools, resources and prompts
//! ([`ServerConfig::conformance`]) and, over HTTP, the DNS-rebinding check of `Host` and
//! `Origin` ([`crate::http::HttpConfig::check_host`]): what the suite's server scenarios expect.
//!
//! Exit codes: 0 after EOF on stdin, 1 for `--die-on-start` or a stdout write failure,
//! 2 for bad flags, 3 for the `die` and `exit_after` chaos tools and `--probe die`.

use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::AsyncWrite;

use crate::{Ended, Era, Handshake, Linger, ListenEnd, ListenHonor, Probe, ServerConfig, serve};

/// Options given on a binary's command line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CliOptions {
    /// `--version-override V`: force `protocolVersion` in the `initialize` answer.
    pub version_override: Option<String>,
    /// `--page-size N`: paginate `tools/list` by `N` (0 = off).
    pub page_size: Option<usize>,
    /// `--die-on-start`: exit with code 1 before reading anything.
    pub die_on_start: bool,
    /// `--stderr-noise N`: print `N` lines to stderr before serving.
    pub stderr_noise: usize,
    /// `--linger MODE`: how the server misbehaves at the end.
    pub linger: Option<Linger>,
    /// `--handshake MODE`: how the server answers `initialize`.
    pub handshake: Option<Handshake>,
    /// `--endless-cursor`: `tools/list` always answers `nextCursor: "again"`.
    pub endless_cursor: bool,
    /// `--stderr-flood BYTES`: noise written to stderr while serving.
    pub stderr_flood: u64,
    /// `--once PATH`: misbehave only if this process is the first to create `PATH`.
    pub once: Option<std::path::PathBuf>,
    /// `--pid-file PATH`: append this process's pid to `PATH`.
    pub pid_file: Option<std::path::PathBuf>,
    /// `--help`: print usage and exit 0.
    pub help: bool,
    /// `--http ADDR` or `--sse ADDR`: serve HTTP there instead of stdio.
    pub http: Option<String>,
    /// `--sse ADDR` was given: print the legacy endpoint's URL.
    pub sse: bool,
    /// `--url-file PATH`: also write the endpoint URL there.
    pub url_file: Option<std::path::PathBuf>,
    /// `--json`: HTTP answers are JSON bodies, not SSE streams.
    pub json: bool,
    /// `--retry MS`: the `retry` of every SSE stream's priming event.
    pub retry_ms: Option<u64>,
    /// `--http-chaos NAME[:ARG]`: how HTTP misbehaves.
    pub http_chaos: Option<crate::http::Fault>,
    /// `--http-chaos-times N`: the fault hits the first `N` requests only.
    pub http_chaos_times: Option<u32>,
    /// `--http-chaos-method NAME`: the fault hits requests of this method only.
    pub http_chaos_method: Option<String>,
    /// `--era NAME`: which protocol era the server speaks.
    pub era: Option<Era>,
    /// `--probe MODE`: how a legacy server reacts to `server/discover`.
    pub probe: Option<Probe>,
    /// `--modern-versions V1,V2`: the modern revisions supported.
    pub modern_versions: Option<Vec<String>>,
    /// `--omit-result-type`: modern results leave `resultType` out.
    pub omit_result_type: bool,
    /// `--cache-ttl-ms N`: the `ttlMs` of cacheable results, in every era.
    pub cache_ttl_ms: Option<u64>,
    /// `--cache-private`: cacheable results say `cacheScope: "private"`.
    pub cache_private: bool,
    /// `--listen on|off`: whether the modern era serves `subscriptions/listen`.
    pub listen: Option<bool>,
    /// `--tasks`: the task-backed tools, both eras.
    pub tasks: bool,
    /// `--task-store FILE`: where the tasks are kept besides memory.
    pub task_store: Option<std::path::PathBuf>,
    /// `--listen-end complete|cancel`: how `end_listens` ends the open listens.
    pub listen_end: Option<ListenEnd>,
    /// `--listen-honor SPEC` (repeatable): what a listen's acknowledgement leaves out.
    pub listen_honor: Option<ListenHonor>,
    /// `--modern-unsolicited on|off`: the handshake era's untagged change notifications (and
    /// `resources/subscribe|unsubscribe`) in the modern era too.
    pub modern_unsolicited: Option<bool>,
    /// `--sse-keepalive-ms N`: the period of a listen stream's keep-alive comments (0: none).
    pub sse_keepalive_ms: Option<u64>,
    /// `--other-origin ADDR`: where the second origin listens (see
    /// [`crate::http::HttpConfig::other_origin`]).
    pub other_origin: Option<std::net::SocketAddr>,
    /// `--conformance`: the conformance suite's fixtures, and over HTTP the `Host`/`Origin`
    /// check.
    pub conformance: bool,
}

/// A command line the binaries do not understand.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CliError {
    /// A flag that takes a value came last.
    #[error("flag {0} needs a value")]
    MissingValue(String),
    /// A numeric flag got something else.
    #[error("flag {flag}: not a non-negative integer: {value:?}")]
    BadNumber {
        /// The flag.
        flag: String,
        /// What it got.
        value: String,
    },
    /// `--handshake` got an unknown mode.
    #[error("flag --handshake: unknown mode {0:?} (normal, error, twice, early-requests)")]
    BadHandshake(String),
    /// `--linger` got an unknown mode.
    #[error(
        "flag --linger: unknown mode {0:?} (no, ignore-eof, ignore-term, stall-mid-frame, close-stdout)"
    )]
    BadLinger(String),
    /// `--http-chaos` got an unknown fault.
    #[error(
        "flag --http-chaos: unknown fault {0:?} (one of: {names}; auth KIND: {kinds})",
        names = crate::http::Fault::NAMES.join(", "),
        kinds = crate::http::AuthKind::ALL.map(|(_, n)| n).join(", ")
    )]
    BadFault(String),
    /// `--era` got an unknown era.
    #[error("flag --era: unknown era {0:?} (legacy, modern, dual)")]
    BadEra(String),
    /// `--probe` got an unknown mode.
    #[error("flag --probe: unknown mode {0:?} (error, silent, die, garbage)")]
    BadProbe(String),
    /// An `on|off` flag got something else.
    #[error("flag {flag}: expected on or off, got {value:?}")]
    BadSwitch {
        /// The flag.
        flag: String,
        /// What it got.
        value: String,
    },
    /// `--listen-end` got an unknown mode.
    #[error("flag --listen-end: unknown mode {0:?} (complete, cancel)")]
    BadListenEnd(String),
    /// `--listen-honor` got something that is not a list of exclusions.
    #[error(
        "flag --listen-honor: {0:?} is not `all` nor a comma-separated list of exclusions \
         (-tools, -prompts, -resources, -subscriptions, -URI)"
    )]
    BadListenHonor(String),
    /// An address flag got something that is not `IP:PORT`.
    #[error("flag {flag}: not an address (IP:PORT): {value:?}")]
    BadAddress {
        /// The flag.
        flag: String,
        /// What it got.
        value: String,
    },
    /// `--modern-versions` got an empty list or an empty version.
    #[error("flag --modern-versions: not a comma-separated list of versions: {0:?}")]
    BadVersions(String),
    /// A flag (or argument) nobody knows.
    #[error("unknown argument: {0}")]
    Unknown(String),
}

/// Usage text of the binaries.
pub const USAGE: &str = "usage: mcp-{echo,chaos}-server [--version-override V] [--page-size N] \
[--die-on-start] [--stderr-noise N] [--linger MODE] [--handshake MODE] [--endless-cursor] \
[--stderr-flood BYTES] [--once PATH] [--pid-file PATH] [--http ADDR | --sse ADDR] [--url-file PATH] [--json] \
[--retry MS] [--http-chaos NAME[:ARG]] [--http-chaos-times N] [--http-chaos-method NAME] [--era legacy|modern|dual] \
[--probe error|silent|die|garbage] [--modern-versions V1,V2] [--omit-result-type] \
[--cache-ttl-ms N] [--cache-private] [--listen on|off] [--listen-end complete|cancel] \
[--listen-honor all|-tools,-prompts,-resources,-subscriptions,-URI] [--modern-unsolicited on|off] \
[--sse-keepalive-ms N] [--other-origin ADDR] [--tasks] [--task-store FILE] [--conformance] [--help]\nServes one MCP connection on stdin/stdout \
(newline-delimited JSON-RPC), or with --http/--sse MCP over HTTP (Streamable HTTP at /mcp, HTTP+SSE at /sse; \
the URL is stdout's first line); logs go to stderr. --era picks the protocol era (legacy: initialize \
only; modern: 2026-07-28 only; dual: both); --probe says how a legacy server treats server/discover. \
--tasks adds the task_* tools (task-backed, both eras); --task-store FILE keeps their tasks in FILE \
too, so that a server started again on it knows them. Modern subscriptions/listen: --listen off answers it -32601 and advertises no listChanged/subscribe; \
--listen-end says how the end_listens tool ends listens (a complete result, or notifications/cancelled); \
--listen-honor leaves the listed kinds or URIs out of every acknowledgement (e.g. \
--listen-honor=-prompts,-test://static/2); --modern-unsolicited off stops the untagged change \
notifications and resources/subscribe of modern requests (default on); --sse-keepalive-ms sets the \
period of a listen stream's ': keep-alive' comments over HTTP (default 15000, 0: none); \
--other-origin is where the second origin of the auth:KIND faults listens (default 127.0.0.1:0); \
--conformance adds the official conformance suite's fixture tools, resources and prompts and, over \
HTTP, refuses (403) a Host or Origin that is not local (DNS-rebinding protection).";

/// `on` or `off`.
fn switch(flag: &str, value: String) -> Result<bool, CliError> {
    match value.as_str() {
        "on" => Ok(true),
        "off" => Ok(false),
        _ => Err(CliError::BadSwitch {
            flag: flag.to_owned(),
            value,
        }),
    }
}

/// Parse the arguments after the program name.
pub fn parse_args<I: IntoIterator<Item = String>>(args: I) -> Result<CliOptions, CliError> {
    let mut opts = CliOptions::default();
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_owned(), Some(v.to_owned())),
            _ => (arg.clone(), None),
        };
        let mut value = |flag: &str| {
            inline
                .clone()
                .or_else(|| args.next())
                .ok_or_else(|| CliError::MissingValue(flag.to_owned()))
        };
        let number = |flag: &str, v: String| {
            v.parse::<usize>().map_err(|_| CliError::BadNumber {
                flag: flag.to_owned(),
                value: v,
            })
        };
        match flag.as_str() {
            "--version-override" => opts.version_override = Some(value(&flag)?),
            "--page-size" => opts.page_size = Some(number(&flag, value(&flag)?)?),
            "--stderr-noise" => opts.stderr_noise = number(&flag, value(&flag)?)?,
            "--linger" => {
                let mode = value(&flag)?;
                opts.linger = Some(Linger::from_name(&mode).ok_or(CliError::BadLinger(mode))?);
            }
            "--handshake" => {
                let mode = value(&flag)?;
                opts.handshake =
                    Some(Handshake::from_name(&mode).ok_or(CliError::BadHandshake(mode))?);
            }
            "--stderr-flood" => {
                let n = number(&flag, value(&flag)?)?;
                opts.stderr_flood = u64::try_from(n).unwrap_or(u64::MAX);
            }
            "--once" => opts.once = Some(value(&flag)?.into()),
            "--http" | "--sse" => {
                opts.http = Some(value(&flag)?);
                opts.sse = flag == "--sse";
            }
            "--url-file" => opts.url_file = Some(value(&flag)?.into()),
            "--retry" => opts.retry_ms = Some(number(&flag, value(&flag)?)? as u64),
            "--http-chaos" => {
                let name = value(&flag)?;
                opts.http_chaos =
                    Some(crate::http::Fault::from_name(&name).ok_or(CliError::BadFault(name))?);
            }
            "--http-chaos-times" => {
                let n = number(&flag, value(&flag)?)?;
                opts.http_chaos_times = Some(u32::try_from(n).unwrap_or(u32::MAX));
            }
            "--http-chaos-method" => opts.http_chaos_method = Some(value(&flag)?),
            "--era" => {
                let name = value(&flag)?;
                opts.era = Some(Era::from_name(&name).ok_or(CliError::BadEra(name))?);
            }
            "--probe" => {
                let mode = value(&flag)?;
                opts.probe = Some(Probe::from_name(&mode).ok_or(CliError::BadProbe(mode))?);
            }
            "--modern-versions" => {
                let list = value(&flag)?;
                let versions: Vec<String> = list.split(',').map(|v| v.trim().to_owned()).collect();
                if versions.iter().any(String::is_empty) {
                    return Err(CliError::BadVersions(list));
                }
                opts.modern_versions = Some(versions);
            }
            "--listen" => opts.listen = Some(switch(&flag, value(&flag)?)?),
            "--tasks" => opts.tasks = true,
            "--task-store" => opts.task_store = Some(value(&flag)?.into()),
            "--modern-unsolicited" => {
                opts.modern_unsolicited = Some(switch(&flag, value(&flag)?)?);
            }
            "--listen-end" => {
                let mode = value(&flag)?;
                opts.listen_end =
                    Some(ListenEnd::from_name(&mode).ok_or(CliError::BadListenEnd(mode))?);
            }
            "--listen-honor" => {
                let spec = value(&flag)?;
                let honor = opts.listen_honor.get_or_insert_with(ListenHonor::default);
                if honor.add(&spec).is_none() {
                    return Err(CliError::BadListenHonor(spec));
                }
            }
            "--sse-keepalive-ms" => {
                opts.sse_keepalive_ms = Some(number(&flag, value(&flag)?)? as u64);
            }
            "--other-origin" => {
                let addr = value(&flag)?;
                opts.other_origin = Some(addr.parse().map_err(|_| CliError::BadAddress {
                    flag: flag.clone(),
                    value: addr,
                })?);
            }
            "--omit-result-type" if inline.is_none() => opts.omit_result_type = true,
            "--cache-ttl-ms" => opts.cache_ttl_ms = Some(number(&flag, value(&flag)?)? as u64),
            "--cache-private" if inline.is_none() => opts.cache_private = true,
            "--conformance" if inline.is_none() => opts.conformance = true,
            "--json" if inline.is_none() => opts.json = true,
            "--pid-file" => opts.pid_file = Some(value(&flag)?.into()),
            "--endless-cursor" if inline.is_none() => opts.endless_cursor = true,
            "--die-on-start" if inline.is_none() => opts.die_on_start = true,
            "--help" | "-h" if inline.is_none() => opts.help = true,
            _ => return Err(CliError::Unknown(arg)),
        }
    }
    Ok(opts)
}

impl CliOptions {
    /// What a process does with its options first: it appends its pid to the `--pid-file`, and
    /// returns these options, or, with `--once PATH` when `PATH` already exists, only the ones
    /// that do not misbehave (page size, help): a later process behaves. The first process
    /// creates `PATH` (atomically: of processes started together exactly one misbehaves).
    /// Files that cannot be written are reported on stderr (and the options kept).
    pub fn for_this_process(self) -> CliOptions {
        if let Some(path) = &self.pid_file {
            use std::io::Write;
            let written = std::fs::OpenOptions::new()
                .append(true)
                .create(true)
                .open(path)
                .and_then(|mut f| writeln!(f, "{}", std::process::id()));
            if let Err(e) = written {
                eprintln!("--pid-file {}: {e}", path.display());
            }
        }
        let Some(path) = &self.once else {
            return self;
        };
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
        {
            Ok(_) => self,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => CliOptions {
                page_size: self.page_size,
                help: self.help,
                pid_file: self.pid_file,
                http: self.http,
                sse: self.sse,
                url_file: self.url_file,
                json: self.json,
                retry_ms: self.retry_ms,
                era: self.era,
                modern_versions: self.modern_versions,
                omit_result_type: self.omit_result_type,
                cache_ttl_ms: self.cache_ttl_ms,
                cache_private: self.cache_private,
                listen: self.listen,
                tasks: self.tasks,
                task_store: self.task_store,
                listen_end: self.listen_end,
                listen_honor: self.listen_honor,
                modern_unsolicited: self.modern_unsolicited,
                sse_keepalive_ms: self.sse_keepalive_ms,
                conformance: self.conformance,
                ..CliOptions::default()
            },
            Err(e) => {
                eprintln!("--once {}: {e} (misbehaving anyway)", path.display());
                self
            }
        }
    }
}

/// Apply the options to a configuration.
pub fn apply(opts: &CliOptions, mut config: ServerConfig) -> ServerConfig {
    if let Some(v) = &opts.version_override {
        config.version_override = Some(v.clone());
    }
    if let Some(n) = opts.page_size {
        config.page_size = n;
    }
    if let Some(linger) = opts.linger {
        config.linger = linger;
    }
    if let Some(handshake) = opts.handshake {
        config.handshake = handshake;
    }
    if opts.endless_cursor {
        config.endless_cursor = true;
    }
    if opts.stderr_flood > 0 {
        config.stderr_flood = opts.stderr_flood;
    }
    if let Some(era) = opts.era {
        config.era = era;
    }
    if let Some(probe) = opts.probe {
        config.probe = probe;
    }
    if let Some(versions) = &opts.modern_versions {
        config.modern_versions = versions.clone();
    }
    if opts.omit_result_type {
        config.omit_result_type = true;
    }
    if let Some(ttl) = opts.cache_ttl_ms {
        config.cache_ttl_ms = Some(ttl);
    }
    if opts.cache_private {
        config.cache_private = true;
    }
    if let Some(listen) = opts.listen {
        config.listen = listen;
    }
    if opts.tasks {
        config.tasks = true;
    }
    if let Some(path) = &opts.task_store {
        config.tasks = true;
        config.task_store = Some(path.clone());
    }
    if let Some(end) = opts.listen_end {
        config.listen_end = end;
    }
    if let Some(honor) = &opts.listen_honor {
        config.listen_honor = honor.clone();
    }
    if let Some(on) = opts.modern_unsolicited {
        config.modern_unsolicited = on;
    }
    if opts.conformance {
        config.conformance = true;
    }
    config
}

/// Serves `config` on this process's stdin and stdout (inside a tokio runtime with IO and
/// time enabled). The server owns the process ([`ServerConfig::own_process`] is set). With
/// [`Linger::IgnoreTerm`] SIGTERM is ignored from now on; with [`Linger::CloseStdout`] (and
/// the `close_stdout` tool) closing the output closes the real stdout (fd 1 then points at
/// `/dev/null`), so the client sees EOF while the process stays. With
/// [`ServerConfig::stderr_flood`] a thread writes the noise to stderr meanwhile.
pub async fn serve_stdio(mut config: ServerConfig) -> Ended {
    config.own_process = true;
    if config.stderr_flood > 0 {
        let bytes = config.stderr_flood;
        let spawned = std::thread::Builder::new()
            .name("stderr-flood".into())
            .spawn(move || crate::tools::flood_stderr(bytes));
        if let Err(e) = spawned {
            eprintln!("{}: cannot start the stderr flood: {e}", config.name);
        }
    }
    let _ignored = match config.linger {
        Linger::IgnoreTerm => {
            use tokio::signal::unix::{SignalKind, signal};
            match signal(SignalKind::terminate()) {
                Ok(s) => Some(s),
                Err(e) => {
                    eprintln!("{}: cannot ignore SIGTERM: {e}", config.name);
                    None
                }
            }
        }
        _ => None,
    };
    serve(
        tokio::io::stdin(),
        ClosableStdout(tokio::io::stdout()),
        config,
    )
    .await
}

/// stdout whose shutdown really closes it: fd 1 is replaced by `/dev/null`.
struct ClosableStdout(tokio::io::Stdout);

impl AsyncWrite for ClosableStdout {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match Pin::new(&mut self.0).poll_flush(cx) {
            Poll::Ready(Ok(())) => {}
            other => return other,
        }
        let null = std::fs::OpenOptions::new().write(true).open("/dev/null")?;
        nix::unistd::dup2_stdout(null).map_err(std::io::Error::from)?;
        Poll::Ready(Ok(()))
    }
}

/// The exit code a binary uses for how its connection ended.
pub fn exit_code(ended: Ended) -> i32 {
    match ended {
        Ended::Eof => 0,
        Ended::Died | Ended::Exited => 3,
        Ended::WriteFailed => 1,
    }
}

/// The whole `main` of a binary: parse `std::env::args`, serve `base` on stdin/stdout,
/// and return the process exit code.
pub fn main(base: ServerConfig) -> i32 {
    let prog = base.name.clone();
    let opts = match parse_args(std::env::args().skip(1)) {
        Ok(o) => o.for_this_process(),
        Err(e) => {
            eprintln!("{prog}: {e}\n{USAGE}");
            return 2;
        }
    };
    if opts.help {
        eprintln!("{USAGE}");
        return 0;
    }
    if opts.die_on_start {
        eprintln!("{prog}: --die-on-start: exiting with code 1");
        return 1;
    }
    for i in 1..=opts.stderr_noise {
        eprintln!("{prog}: stderr noise line {i} of {}", opts.stderr_noise);
    }
    let config = apply(&opts, base);
    if let Some(addr) = &opts.http {
        return main_http(&prog, addr, &opts, config);
    }
    let Some(runtime) = runtime(&prog) else {
        return 1;
    };
    eprintln!("{prog}: serving MCP on stdio");
    let ended = runtime.block_on(serve_stdio(config));
    // A blocking read of stdin may still be under way: do not wait for it.
    runtime.shutdown_background();
    let code = exit_code(ended);
    eprintln!("{prog}: connection ended ({ended:?}), exit code {code}");
    code
}

/// The binaries' runtime (one thread); `None`, said on stderr, if it cannot start.
fn runtime(prog: &str) -> Option<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| eprintln!("{prog}: cannot start the runtime: {e}"))
        .ok()
}

/// `main` with `--http ADDR`: serves HTTP until killed.
fn main_http(prog: &str, addr: &str, opts: &CliOptions, server: ServerConfig) -> i32 {
    use std::io::Write;
    let Ok(addr) = addr.parse::<std::net::SocketAddr>() else {
        eprintln!("{prog}: --http: not an address (IP:PORT): {addr}");
        return 2;
    };
    let config = crate::http::HttpConfig {
        server,
        json: opts.json,
        retry_ms: opts.retry_ms,
        fault: opts.http_chaos,
        fault_times: opts.http_chaos_times,
        fault_method: opts.http_chaos_method.clone(),
        sse_keepalive_ms: opts
            .sse_keepalive_ms
            .unwrap_or(crate::http::DEFAULT_SSE_KEEPALIVE_MS),
        other_origin: opts.other_origin,
        check_host: opts.conformance,
    };
    let Some(runtime) = runtime(prog) else {
        return 1;
    };
    runtime.block_on(async {
        let server = match crate::http::serve(addr, config).await {
            Ok(s) => s,
            Err(e) => {
                eprintln!("{prog}: cannot listen on {addr}: {e}");
                return 1;
            }
        };
        let url = if opts.sse {
            server.sse_url()
        } else {
            server.url()
        };
        let mut out = std::io::stdout();
        if writeln!(out, "{url}").and_then(|()| out.flush()).is_err() {
            eprintln!("{prog}: cannot write the URL to stdout");
        }
        if let Some(path) = &opts.url_file
            && let Err(e) = std::fs::write(path, format!("{url}\n"))
        {
            eprintln!("{prog}: --url-file {}: {e}", path.display());
            return 1;
        }
        eprintln!(
            "{prog}: serving MCP over HTTP at {url}{}",
            opts.http_chaos
                .map(|f| format!(" (chaos: {})", f.name()))
                .unwrap_or_default()
        );
        if let Some(other) = server.other_url() {
            eprintln!("{prog}: the other origin (it records what reaches it) is at {other}");
        }
        server.run().await;
        0
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<CliOptions, CliError> {
        parse_args(args.iter().map(|s| (*s).to_owned()))
    }

    #[test]
    fn flags_parse() {
        let o = parse(&[
            "--version-override",
            "1999-01-01",
            "--page-size=2",
            "--die-on-start",
            "--stderr-noise",
            "5",
            "--linger=close-stdout",
            "--handshake",
            "early-requests",
            "--endless-cursor",
            "--stderr-flood=1024",
            "--once",
            "/tmp/x",
        ])
        .unwrap();
        assert_eq!(o.handshake, Some(Handshake::EarlyRequests));
        assert!(o.endless_cursor);
        assert_eq!(o.stderr_flood, 1024);
        assert_eq!(o.once.as_deref(), Some(std::path::Path::new("/tmp/x")));
        assert_eq!(o.version_override.as_deref(), Some("1999-01-01"));
        assert_eq!(o.page_size, Some(2));
        assert!(o.die_on_start);
        assert_eq!(o.stderr_noise, 5);
        assert_eq!(o.linger, Some(Linger::CloseStdout));
        assert_eq!(parse(&[]).unwrap(), CliOptions::default());
        let h = parse(&[
            "--http",
            "127.0.0.1:0",
            "--http-chaos=status:503",
            "--http-chaos-times",
            "2",
            "--http-chaos-method",
            "tools/call",
            "--json",
            "--retry=50",
            "--url-file",
            "/tmp/u",
        ])
        .unwrap();
        assert_eq!(h.http.as_deref(), Some("127.0.0.1:0"));
        assert!(!h.sse && h.json);
        assert_eq!(h.http_chaos, Some(crate::http::Fault::Status(503)));
        assert_eq!(h.http_chaos_times, Some(2));
        assert_eq!(h.http_chaos_method.as_deref(), Some("tools/call"));
        assert_eq!(h.retry_ms, Some(50));
        assert!(parse(&["--sse", "127.0.0.1:0"]).unwrap().sse);
        assert!(matches!(
            parse(&["--http-chaos", "status:200"]),
            Err(CliError::BadFault(_))
        ));
        let a = parse(&[
            "--http-chaos=auth:private-metadata",
            "--other-origin",
            "127.0.0.1:0",
        ])
        .unwrap();
        assert_eq!(
            a.http_chaos,
            Some(crate::http::Fault::Auth(
                crate::http::AuthKind::PrivateMetadata
            ))
        );
        assert_eq!(a.other_origin, Some("127.0.0.1:0".parse().unwrap()));
        assert!(matches!(
            parse(&["--other-origin", "localhost"]),
            Err(CliError::BadAddress { .. })
        ));
        let unknown = parse(&["--http-chaos", "auth:nope"])
            .unwrap_err()
            .to_string();
        assert!(
            unknown.contains("keepalive-flood:BYTES") && unknown.contains("expires-max"),
            "{unknown}"
        );
    }

    #[test]
    fn conformance_flag_parses() {
        let o = parse(&["--conformance"]).unwrap();
        assert!(o.conformance);
        assert!(apply(&o, ServerConfig::echo()).conformance);
        assert!(!apply(&parse(&[]).unwrap(), ServerConfig::echo()).conformance);
        assert!(matches!(
            parse(&["--conformance=yes"]),
            Err(CliError::Unknown(_))
        ));
    }

    #[test]
    fn cache_flags_parse() {
        let o = parse(&["--cache-ttl-ms", "250", "--cache-private"]).unwrap();
        assert_eq!((o.cache_ttl_ms, o.cache_private), (Some(250), true));
        let c = apply(&o, ServerConfig::echo());
        assert_eq!((c.cache_ttl_ms, c.cache_private), (Some(250), true));
        let d = parse(&["--cache-ttl-ms=0"]).unwrap();
        assert_eq!((d.cache_ttl_ms, d.cache_private), (Some(0), false));
        assert!(matches!(
            parse(&["--cache-ttl-ms", "-1"]),
            Err(CliError::BadNumber { .. })
        ));
        assert!(matches!(
            parse(&["--cache-private=yes"]),
            Err(CliError::Unknown(_))
        ));
    }

    #[test]
    fn era_flags_parse() {
        let o = parse(&[
            "--era",
            "dual",
            "--probe=silent",
            "--modern-versions",
            "2026-07-28,2099-01-01",
            "--omit-result-type",
        ])
        .unwrap();
        assert_eq!(o.era, Some(Era::Dual));
        assert_eq!(o.probe, Some(Probe::Silent));
        assert_eq!(
            o.modern_versions,
            Some(vec!["2026-07-28".to_owned(), "2099-01-01".to_owned()])
        );
        assert!(o.omit_result_type);
        let c = apply(&o, ServerConfig::echo());
        assert_eq!((c.era, c.probe), (Era::Dual, Probe::Silent));
        assert_eq!(c.modern_versions.len(), 2);
        assert!(c.omit_result_type);
        let d = apply(&parse(&[]).unwrap(), ServerConfig::echo());
        assert_eq!(d, ServerConfig::echo());
        assert_eq!((d.era, d.probe), (Era::Legacy, Probe::Error));
        assert_eq!(d.modern_versions, vec!["2026-07-28".to_owned()]);
        for (era, name) in Era::ALL {
            assert_eq!(parse(&["--era", name]).unwrap().era, Some(era));
            assert_eq!(era.name(), name);
        }
        for (probe, name) in Probe::ALL {
            assert_eq!(parse(&["--probe", name]).unwrap().probe, Some(probe));
            assert_eq!(probe.name(), name);
        }
        assert!(matches!(
            parse(&["--era", "future"]),
            Err(CliError::BadEra(_))
        ));
        assert!(matches!(
            parse(&["--probe", "shout"]),
            Err(CliError::BadProbe(_))
        ));
        assert!(matches!(
            parse(&["--modern-versions", "a,,b"]),
            Err(CliError::BadVersions(_))
        ));
        assert!(matches!(
            parse(&["--omit-result-type=yes"]),
            Err(CliError::Unknown(_))
        ));
    }

    #[test]
    fn listen_flags_parse() {
        let o = parse(&[
            "--listen",
            "off",
            "--listen-end=cancel",
            "--listen-honor",
            "-tools,-test://static/2",
            "--listen-honor=-subscriptions",
            "--modern-unsolicited",
            "off",
            "--sse-keepalive-ms",
            "50",
        ])
        .unwrap();
        assert_eq!(o.sse_keepalive_ms, Some(50));
        let c = apply(&o, ServerConfig::echo());
        assert!(!c.listen && !c.modern_unsolicited);
        assert_eq!(c.listen_end, ListenEnd::Cancel);
        assert!(c.listen_honor.no_tools && c.listen_honor.no_subscriptions);
        assert!(!c.listen_honor.no_prompts && !c.listen_honor.no_resources);
        assert_eq!(
            c.listen_honor.no_uris.iter().collect::<Vec<_>>(),
            ["test://static/2"]
        );
        let d = apply(
            &parse(&["--listen-honor", "all"]).unwrap(),
            ServerConfig::echo(),
        );
        assert_eq!(d, ServerConfig::echo());
        assert!(d.listen && d.modern_unsolicited);
        assert_eq!(d.listen_end, ListenEnd::Complete);
        for (end, name) in ListenEnd::ALL {
            assert_eq!(
                parse(&["--listen-end", name]).unwrap().listen_end,
                Some(end)
            );
            assert_eq!(end.name(), name);
        }
        assert!(matches!(
            parse(&["--listen", "yes"]),
            Err(CliError::BadSwitch { .. })
        ));
        assert!(matches!(
            parse(&["--listen-end", "slam"]),
            Err(CliError::BadListenEnd(_))
        ));
        for bad in ["tools", "-nope", "-tools,prompts", ""] {
            assert!(
                matches!(
                    parse(&["--listen-honor", bad]),
                    Err(CliError::BadListenHonor(_))
                ),
                "{bad}"
            );
        }
    }

    #[test]
    fn bad_flags_are_errors() {
        assert!(matches!(
            parse(&["--page-size"]),
            Err(CliError::MissingValue(_))
        ));
        assert!(matches!(
            parse(&["--page-size", "x"]),
            Err(CliError::BadNumber { .. })
        ));
        assert!(matches!(parse(&["--nope"]), Err(CliError::Unknown(_))));
        assert!(matches!(
            parse(&["--linger", "forever"]),
            Err(CliError::BadLinger(_))
        ));
        assert!(matches!(
            parse(&["--handshake", "rude"]),
            Err(CliError::BadHandshake(_))
        ));
    }

    #[test]
    fn once_misbehaves_in_the_first_process_only() {
        let path = std::env::temp_dir().join(format!("mcp-once-{}", std::process::id()));
        let pids = std::env::temp_dir().join(format!("mcp-pids-{}", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let _ = std::fs::remove_file(&pids);
        let opts = || {
            parse(&[
                "--handshake",
                "error",
                "--page-size",
                "2",
                "--once",
                path.to_str().unwrap(),
                "--pid-file",
                pids.to_str().unwrap(),
            ])
            .unwrap()
        };
        let first = opts().for_this_process();
        assert_eq!(first.handshake, Some(Handshake::Error));
        let second = opts().for_this_process();
        assert_eq!(second.handshake, None);
        assert_eq!(second.page_size, Some(2));
        let me = std::process::id().to_string();
        assert_eq!(
            std::fs::read_to_string(&pids).unwrap(),
            format!("{me}\n{me}\n")
        );
        std::fs::remove_file(&path).unwrap();
        std::fs::remove_file(&pids).unwrap();
    }
}
