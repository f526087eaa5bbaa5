//! The command line (clap derive).

use std::path::PathBuf;
use std::time::Duration;

use clap::{ArgAction, ArgGroup, Args, Parser, Subcommand, ValueEnum};
use mcp_runtime::LoggingLevel;

use crate::error::{EXIT_CODES, LONG_HELP};

/// `mcpc`: a command-line client for MCP (Model Context Protocol) servers.
#[derive(Debug, Parser)]
#[command(
    name = "mcpc",
    version,
    about = "A command-line client for MCP (Model Context Protocol) servers",
    long_about = "A command-line client for MCP (Model Context Protocol) servers.\n\n\
        Start a server over stdio with --stdio 'command args…' (split like a shell does, never \
        run through a shell), or reach one over Streamable HTTP with --http URL (or a legacy HTTP+SSE one with --sse \
        URL; headers with -H 'Name: value'), then list and call its tools, read its resources, get its prompts, \
        or watch its notifications. With --config FILE (a host's `mcpServers` file, or --config-from HOST), \
        every server of the file at once: `servers`, merged `tools list`, `tools call SERVER/TOOL`, `info SERVER`, \
        `watch`. `mcpc demo` runs a guided tour against a built-in test server.",
    after_help = EXIT_CODES,
    after_long_help = LONG_HELP,
)]
pub struct Cli {
    /// Options shared by every command.
    #[command(flatten)]
    pub global: Global,
    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

/// Options shared by every command (they may come before or after it).
#[derive(Clone, Debug, Args)]
pub struct Global {
    /// The server to start, as a command line split like a shell does (no shell runs it).
    #[arg(long, global = true, value_name = "COMMAND")]
    pub stdio: Option<String>,

    /// Every server of a host's configuration file (`{"mcpServers": …}`: Claude Desktop,
    /// Claude Code, Cursor; `{"servers": …}`: VS Code), as one group: `${VAR}` expanded from
    /// mcpc's environment, each server started at once, one that fails retrying on its own.
    #[arg(
        long,
        global = true,
        value_name = "FILE",
        conflicts_with_all = ["stdio", "http", "sse", "env", "inherit_env", "headers", "config_from"]
    )]
    pub config: Option<PathBuf>,

    /// Like --config, with the file(s) a host keeps on this machine (user-wide, then the
    /// project's in the current directory; a server in both: the project's).
    #[arg(
        long,
        global = true,
        value_name = "HOST",
        value_enum,
        conflicts_with_all = ["stdio", "http", "sse", "env", "inherit_env", "headers"]
    )]
    pub config_from: Option<ConfigHost>,

    /// An environment variable for the stdio server (repeatable).
    #[arg(long = "env", global = true, value_name = "K=V", value_parser = parse_env)]
    pub env: Vec<(String, String)>,

    /// Let the stdio server inherit mcpc's whole environment (default: only HOME, LOGNAME,
    /// PATH, SHELL, TERM and USER, plus --env).
    #[arg(long, global = true)]
    pub inherit_env: bool,

    /// The Streamable HTTP endpoint of a server (`http://host:port/mcp`; MCP 2025-03-26 …
    /// 2025-11-25): POST, JSON or SSE answers, a session, the GET stream, DELETE at the end. A
    /// server that refuses `initialize` with 400, 404 or 405 is tried over legacy HTTP+SSE.
    #[arg(long, global = true, value_name = "URL", conflicts_with_all = ["stdio", "sse"])]
    pub http: Option<String>,

    /// The event-stream URL of a legacy HTTP+SSE server (MCP 2024-11-05; `http://host/sse`).
    #[arg(long, global = true, value_name = "URL", conflicts_with = "stdio")]
    pub sse: Option<String>,

    /// An HTTP header sent with every request of --http/--sse, as 'Name: value' (repeatable).
    /// The value is never printed, not in errors nor in logs.
    #[arg(
        short = 'H',
        long = "header",
        global = true,
        value_name = "NAME: VALUE"
    )]
    pub headers: Vec<String>,

    /// Protocol era: ask the server (auto: `server/discover`, then the handshake if the server is a
    /// legacy one), the handshake era only (legacy), or the stateless 2026-07-28 era only (modern).
    /// Default: auto; legacy for --sse (a handshake-era transport).
    #[arg(long, global = true, value_enum)]
    pub era: Option<Era>,

    /// Per-call timeout in seconds. Over HTTP, half of it (at most 10 s) bounds the answer to
    /// what a server answers at once (a notification's POST, a GET): a server that never
    /// answers one fails the call as the connection lost (exit 5) rather than timed out.
    #[arg(long, global = true, value_name = "SECS", default_value = "30", value_parser = parse_secs)]
    pub timeout: Duration,

    /// Bound on starting the server and its handshake, in seconds (a server that installs
    /// itself first, like `npx -y …`, may need long). Over HTTP it also bounds opening each
    /// connection (at most 10 s).
    #[arg(long, global = true, value_name = "SECS", default_value = "60", value_parser = parse_secs)]
    pub connect_timeout: Duration,

    /// Machine output: one JSON document on stdout (watch/state: one per line).
    #[arg(long, global = true)]
    pub json: bool,

    /// Log to stderr (-v: info, transitions and server stderr; -vv: debug; -vvv: trace).
    #[arg(short, long, global = true, action = ArgAction::Count)]
    pub verbose: u8,

    /// Answer the server's sampling requests with this text (declined without it).
    #[arg(long, global = true, value_name = "TEXT")]
    pub sampling_reply: Option<String>,

    /// A root offered to the server (repeatable; roots are declared only if given).
    #[arg(long = "root", global = true, value_name = "URI")]
    pub roots: Vec<String>,

    /// Do not check a tool's structuredContent against its outputSchema (checked by default:
    /// `tools call` lists the tools first to learn it).
    #[arg(long, global = true)]
    pub no_validate_output: bool,
}

impl Global {
    /// Whether the servers come from a configuration file (`--config`, `--config-from`).
    pub fn group(&self) -> bool {
        self.config.is_some() || self.config_from.is_some()
    }

    /// The era to speak: `--era`, or by default auto (legacy for `--sse`, a transport of the
    /// handshake era only).
    pub fn era(&self) -> Era {
        self.era.unwrap_or(if self.sse.is_some() {
            Era::Legacy
        } else {
            Era::Auto
        })
    }
}

/// A host whose configuration files `--config-from` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ConfigHost {
    /// Claude Desktop's `claude_desktop_config.json`.
    ClaudeDesktop,
    /// Claude Code's `~/.claude.json` (user-scope servers) and `.mcp.json`.
    ClaudeCode,
    /// Cursor's `~/.cursor/mcp.json` and `.cursor/mcp.json`.
    Cursor,
    /// VS Code's user `mcp.json` and `.vscode/mcp.json`.
    #[value(name = "vscode")]
    VsCode,
}

/// The protocol era to speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Era {
    /// Ask the server: `server/discover` first, the handshake when it is a legacy server.
    Auto,
    /// The handshake era (2024-11-05 … 2025-11-25).
    Legacy,
    /// The stateless era (2026-07-28).
    Modern,
}

impl Era {
    /// The library's mode for this choice.
    pub fn mode(self) -> mcp_runtime::EraMode {
        match self {
            Era::Auto => mcp_runtime::EraMode::Auto,
            Era::Legacy => mcp_runtime::EraMode::Legacy,
            Era::Modern => mcp_runtime::EraMode::Modern,
        }
    }
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Server name and version, protocol version, era, capabilities, instructions.
    Info {
        /// With --config: the server (its name in the file); also its state and pid.
        server: Option<String>,
    },
    /// With --config: every server's state, era, tools count, pid and last error.
    Servers,
    /// List or call tools.
    #[command(subcommand)]
    Tools(ToolsCommand),
    /// The server's tasks: list (2025-11-25 only), get or cancel one by id (a tool call that
    /// runs as a task is polled by `tools call` itself).
    #[command(subcommand)]
    Tasks(TasksCommand),
    /// List resources and templates, read a resource.
    #[command(subcommand)]
    Resources(ResourcesCommand),
    /// List prompts, get one.
    #[command(subcommand)]
    Prompts(PromptsCommand),
    /// Complete an argument of a prompt or a resource template.
    Complete(CompleteArgs),
    /// Ping the server and show the round trip.
    Ping,
    /// Print notifications and log messages until Ctrl-C.
    Watch(WatchArgs),
    /// Print the connection's state transitions (event and table row) until Ctrl-C.
    State,
    /// Authorize mcpc with the --http server's authorization server (OAuth 2.1: a browser, or
    /// the URL printed), and keep the token for every later command.
    Login,
    /// Forget the token of the --http server.
    Logout,
    /// Authorization state.
    #[command(subcommand)]
    Auth(AuthCommand),
    /// Print a shell completion script.
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Serve MCP on stdin/stdout to the host that started mcpc, forwarding everything to the
    /// server of --http, --sse or --stdio through mcpc's client (reconnects, new sessions,
    /// both protocol eras, the stored OAuth token refreshed). Ends when the host closes stdin.
    Bridge(BridgeArgs),
    /// A guided tour against the built-in test server: progress, a crash and the reconnect,
    /// a timeout and the late answer, stop.
    Demo,
    /// The client of the official MCP conformance suite: runs the scenario named by
    /// MCP_CONFORMANCE_SCENARIO against URL (see scripts/conformance).
    #[command(hide = true)]
    Conformance {
        /// The scenario's server (the harness appends it as the last argument).
        url: String,
    },
    /// Serve the in-repo test server on stdin/stdout (for tests).
    #[command(name = "__test-server", hide = true)]
    TestServer {
        /// Also offer the chaos tools (die, hang, late, ...).
        #[arg(long)]
        chaos: bool,
        /// Misbehave at the end: ignore-eof, ignore-term, stall-mid-frame, close-stdout.
        #[arg(long, value_name = "MODE", value_parser = parse_linger)]
        linger: Option<mcp_testserver::Linger>,
        /// The instructions of the initialize answer.
        #[arg(long, value_name = "TEXT")]
        instructions: Option<String>,
        /// Hostile text: terminal control sequences in the name, instructions, tool
        /// descriptions, progress and log messages.
        #[arg(long)]
        hostile: bool,
        /// After `--`: the flags of the in-repo server binaries (`--handshake MODE`,
        /// `--stderr-flood BYTES`, `--once PATH`, `--pid-file PATH`, ...; see
        /// `mcp_testserver::cli`).
        #[arg(last = true, value_name = "SERVER FLAGS")]
        server_flags: Vec<String>,
    },
}

impl Command {
    /// The command's name for error messages.
    pub fn label(&self) -> String {
        match self {
            Command::Info { server: None } => "info".into(),
            Command::Info { server: Some(s) } => format!("info {s}"),
            Command::Servers => "servers".into(),
            Command::Tools(ToolsCommand::List) => "tools list".into(),
            Command::Tools(ToolsCommand::Call(c)) => format!("tools call {}", c.name),
            Command::Tasks(TasksCommand::List) => "tasks list".into(),
            Command::Tasks(TasksCommand::Get { id }) => format!("tasks get {id}"),
            Command::Tasks(TasksCommand::Cancel { id }) => format!("tasks cancel {id}"),
            Command::Resources(ResourcesCommand::List) => "resources list".into(),
            Command::Resources(ResourcesCommand::Templates) => "resources templates".into(),
            Command::Resources(ResourcesCommand::Read { uri }) => format!("resources read {uri}"),
            Command::Prompts(PromptsCommand::List) => "prompts list".into(),
            Command::Prompts(PromptsCommand::Get { name, .. }) => format!("prompts get {name}"),
            Command::Complete(_) => "complete".into(),
            Command::Ping => "ping".into(),
            Command::Watch(_) => "watch".into(),
            Command::State => "state".into(),
            Command::Login => "login".into(),
            Command::Logout => "logout".into(),
            Command::Auth(AuthCommand::Status) => "auth status".into(),
            Command::Completions { .. } => "completions".into(),
            Command::Demo => "demo".into(),
            Command::Bridge(_) => "bridge".into(),
            Command::Conformance { .. } => "conformance".into(),
            Command::TestServer { .. } => "__test-server".into(),
        }
    }
}

/// `bridge …`.
#[derive(Clone, Debug, Args)]
pub struct BridgeArgs {
    /// How long a forwarded call may wait for the server, in seconds (the host has its own
    /// bound, and can cancel).
    #[arg(long, value_name = "SECS", default_value = "600", value_parser = parse_secs)]
    pub call_timeout: Duration,

    /// When the server needs a new authorization (no stored token, or one that cannot be
    /// refreshed), open the login page (https only) in a browser. Without it such a call
    /// fails with a message saying to run `mcpc --http URL login`.
    #[arg(long)]
    pub allow_browser_login: bool,

    /// Serve Streamable HTTP at http://ADDR/mcp instead of stdin/stdout (each host session
    /// gets its own upstream connection). Loopback only unless a token is given.
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<std::net::SocketAddr>,

    /// With --listen: a file holding the bearer token every request must carry (required for
    /// an address that is not loopback; the MCPC_BRIDGE_TOKEN variable works too). Never
    /// printed.
    #[arg(long, value_name = "FILE", requires = "listen")]
    pub token_file: Option<PathBuf>,

    /// With --listen: a browser Origin allowed besides loopback pages (repeatable).
    #[arg(long = "allow-origin", value_name = "ORIGIN", requires = "listen")]
    pub allow_origins: Vec<String>,

    /// With --listen: a Host header value allowed besides the listen address and the
    /// loopback names (repeatable), e.g. the name a reverse proxy forwards.
    #[arg(long = "allow-host", value_name = "HOST", requires = "listen")]
    pub allow_hosts: Vec<String>,
}

/// `auth …`.
#[derive(Debug, Subcommand)]
pub enum AuthCommand {
    /// The --http server's token: issuer, scopes, expiry (never the token itself).
    Status,
}

/// `tools …`.
#[derive(Debug, Subcommand)]
pub enum ToolsCommand {
    /// List the tools with their arguments.
    List,
    /// Call a tool: arguments as --args JSON and/or KEY=VALUE pairs typed by its inputSchema.
    Call(CallArgs),
}

/// `tasks …`.
#[derive(Debug, Subcommand)]
pub enum TasksCommand {
    /// List the server's tasks (2025-11-25: `tasks/list`; the 2026-07-28 extension has none).
    List,
    /// A task's status (`tasks/get`).
    Get {
        /// The task id.
        id: String,
    },
    /// Ask the server to cancel a task (`tasks/cancel`).
    Cancel {
        /// The task id.
        id: String,
    },
}

/// `tools call`.
#[derive(Debug, Args)]
pub struct CallArgs {
    /// The tool's name (with --config: its merged name, or SERVER/TOOL).
    pub name: String,
    /// The arguments as one JSON object (KEY=VALUE pairs are applied on top).
    #[arg(long, value_name = "JSON")]
    pub args: Option<String>,
    /// Arguments, each typed by the tool's inputSchema (integer, number, boolean, array and
    /// object values are parsed as JSON; strings are taken as they are).
    #[arg(value_name = "KEY=VALUE")]
    pub pairs: Vec<String>,
}

/// `resources …`.
#[derive(Debug, Subcommand)]
pub enum ResourcesCommand {
    /// List the resources.
    List,
    /// List the resource templates.
    Templates,
    /// Read a resource.
    Read {
        /// Its URI.
        uri: String,
    },
}

/// `prompts …`.
#[derive(Debug, Subcommand)]
pub enum PromptsCommand {
    /// List the prompts with their arguments.
    List,
    /// Get a prompt, with its arguments as KEY=VALUE pairs.
    Get {
        /// The prompt's name.
        name: String,
        /// Its arguments (strings).
        #[arg(value_name = "KEY=VALUE")]
        pairs: Vec<String>,
    },
}

/// `complete`.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("target").required(true).args(["prompt", "resource"])))]
pub struct CompleteArgs {
    /// Complete an argument of this prompt.
    #[arg(long, value_name = "NAME")]
    pub prompt: Option<String>,
    /// Complete an argument of this resource template (its URI template).
    #[arg(long, value_name = "URI")]
    pub resource: Option<String>,
    /// The argument's name.
    pub argument: String,
    /// What has been typed so far.
    #[arg(default_value = "")]
    pub value: String,
}

/// `watch`.
#[derive(Debug, Args)]
pub struct WatchArgs {
    /// Ask the server for log messages at this level and above (logging/setLevel).
    #[arg(long, value_name = "LEVEL", value_parser = parse_level)]
    pub level: Option<LoggingLevel>,
    /// Subscribe to updates of this resource (repeatable).
    #[arg(long, value_name = "URI")]
    pub subscribe: Vec<String>,
}

fn parse_env(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_owned(), v.to_owned())),
        _ => Err(format!("`{s}` is not K=V")),
    }
}

fn parse_secs(s: &str) -> Result<Duration, String> {
    let secs: f64 = s
        .parse()
        .map_err(|_| format!("`{s}` is not a number of seconds"))?;
    if secs.is_finite() && secs > 0.0 && secs <= 86_400.0 {
        Ok(Duration::from_secs_f64(secs))
    } else {
        Err(format!(
            "`{s}`: the timeout must be above 0 and at most 86400 s"
        ))
    }
}

fn parse_linger(s: &str) -> Result<mcp_testserver::Linger, String> {
    mcp_testserver::Linger::from_name(s).ok_or_else(|| format!("`{s}` is not a linger mode"))
}

fn parse_level(s: &str) -> Result<LoggingLevel, String> {
    serde_json::from_value(serde_json::Value::String(s.to_owned())).map_err(|_| {
        format!(
            "`{s}` is not a logging level (debug, info, notice, warning, error, critical, alert, emergency)"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn globals_go_anywhere() {
        let cli = Cli::try_parse_from([
            "mcpc", "tools", "call", "add", "a=1", "--stdio", "srv x", "--json", "b=2",
        ])
        .unwrap();
        assert_eq!(cli.global.stdio.as_deref(), Some("srv x"));
        assert!(cli.global.json);
        let Command::Tools(ToolsCommand::Call(call)) = cli.command else {
            panic!("not a call")
        };
        assert_eq!(call.pairs, ["a=1", "b=2"]);
    }

    #[test]
    fn values_parse() {
        assert_eq!(parse_secs("0.5").unwrap(), Duration::from_millis(500));
        assert!(parse_secs("0").is_err());
        assert!(parse_secs("x").is_err());
        assert_eq!(parse_env("A=b=c").unwrap(), ("A".into(), "b=c".into()));
        assert!(parse_env("=x").is_err());
        assert_eq!(parse_level("warning").unwrap(), LoggingLevel::Warning);
        assert!(parse_level("loud").is_err());
    }
}
