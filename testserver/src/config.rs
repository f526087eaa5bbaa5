//! [`ServerConfig`]: what one served connection looks like.

use std::time::Duration;

/// Configuration of one served connection.
///
/// # Catalogue
///
/// Tools always listed (argument shapes as in their `inputSchema`):
/// `echo {message: string}`, `add {a: number, b: number}` (with `structuredContent {sum}`),
/// `slow {ms: integer, steps?: integer}` (progress when `_meta.progressToken` is given),
/// `sample {prompt: string, maxTokens?: integer}` (→ `sampling/createMessage`),
/// `elicit {message: string}` (→ `elicitation/create`, form mode), `roots {}` (→ `roots/list`),
/// `log {level: string, message: string}`, `notify_changed {list?: "tools"|"resources"|"prompts"}`,
/// `touch {uri: string}` (→ `notifications/resources/updated` while subscribed) and
/// `session_info {}` (what the server recorded about the session).
///
/// Chaos tools, listed only when [`ServerConfig::chaos`] is set: `die {}`, `hang {}`,
/// `garbage {text?: string}`, `oversized {bytes: integer}`, `late {ms: integer}`,
/// `duplicate {}`, `unknown_id {id?: any}`, `flood {count: integer}`, `exit_after {ms: integer}`,
/// and:
/// - `silent {ms: integer}`: read nothing and write nothing for `ms`, then go on as before; the
///   `silent` call itself is never answered;
/// - `partial {ms: integer}`: write the first half of this call's answer, stall the output for
///   `ms`, then write the rest (a partial line then a stall);
/// - `invalid_utf8 {in_answer?: boolean}`: a line with bytes that are not UTF-8 (`\xff\xfe`);
///   by default a notification, then a normal answer; with `in_answer` the answer itself
///   carries them (so it cannot be read);
/// - `surrogate {}`: an answer whose text holds a lone UTF-16 surrogate escape (`"\ud800"`);
/// - `sigkill {}`: the process sends itself SIGKILL without answering (only when the server
///   owns its process, see [`ServerConfig::own_process`]; otherwise like `die`);
/// - `close_stdout {}`: close the output stream without answering (the binaries close their
///   real stdout) and stay alive, reading and answering nothing more;
/// - `stderr_flood {bytes: integer}`: write `bytes` of noise lines to stderr (only when the
///   server owns its process), then answer.
///
/// Chaos at start-up (any flavour): [`ServerConfig::handshake`] (an `initialize` error, a
/// second `initialize` answer, server requests before the `initialize` answer),
/// [`ServerConfig::version_override`] (an unsupported protocol version),
/// [`ServerConfig::endless_cursor`] and [`ServerConfig::stderr_flood`].
///
/// Resources `test://static/1..3`, template `test://dynamic/{id}`; prompts `greeting {name}` and
/// `plain`; completion of `greeting`'s `name` from `["alice", "alfred", "bob"]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    /// `serverInfo.name` in the `initialize` answer.
    pub name: String,
    /// `serverInfo.version` in the `initialize` answer.
    pub server_version: String,
    /// Answer `initialize` with this `protocolVersion` whatever the client asked for (e.g.
    /// `"1999-01-01"` to test that the client rejects it). `None`: echo the client's version
    /// if it is one of [`crate::SUPPORTED_PROTOCOL_VERSIONS`], else answer
    /// [`crate::LATEST_PROTOCOL_VERSION`].
    pub version_override: Option<String>,
    /// Page size of `tools/list` (`cursor` / `nextCursor`); 0 = everything in one page.
    pub page_size: usize,
    /// `instructions` in the `initialize` answer (`None`: the field is left out).
    pub instructions: Option<String>,
    /// Enable (list and answer) the chaos tools.
    pub chaos: bool,
    /// Chaos: `tools/list` always answers `nextCursor: "again"` (a client must not loop).
    pub endless_cursor: bool,
    /// After the client's stream hits EOF, how long requests still in flight may take to
    /// answer before they are abandoned and [`crate::serve`] returns.
    pub eof_grace: Duration,
    /// How the server misbehaves when it should go away (default: it does not).
    pub linger: Linger,
    /// Hostile text: [`HOSTILE_TEXT`] is appended to the server's name, its instructions,
    /// every tool description, every progress message and every log message (for tests that a
    /// client never lets server text drive the terminal).
    pub hostile: bool,
    /// How `initialize` is answered (default: properly, once).
    pub handshake: Handshake,
    /// Chaos: bytes of noise lines written to stderr from the start, in the background, while
    /// the connection is served (only when the server owns its process; 0: none).
    pub stderr_flood: u64,
    /// The server owns its process and its stdio (set by [`crate::cli::serve_stdio`]): the
    /// `sigkill` tool kills the process, `stderr_flood` writes to the real stderr. Never set it
    /// for a server inside a test process.
    pub own_process: bool,
}

/// How a server answers `initialize` (`--handshake NAME` on the binaries).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Handshake {
    /// `normal`: one proper answer.
    #[default]
    Normal,
    /// `error`: a JSON-RPC error (-32603) instead of a result.
    Error,
    /// `twice`: the proper answer, then a second result for the same id (another server name
    /// and protocol version).
    Twice,
    /// `early-requests`: before answering, send the client `ping`, `roots/list`,
    /// `sampling/createMessage` and `elicitation/create` (ids `early-1` … `early-4`) and a log
    /// notification; their answers show in `session_info`'s `unknownResponses`.
    EarlyRequests,
}

impl Handshake {
    /// Every mode and its command-line name (`--handshake NAME`).
    pub const ALL: [(Handshake, &'static str); 4] = [
        (Handshake::Normal, "normal"),
        (Handshake::Error, "error"),
        (Handshake::Twice, "twice"),
        (Handshake::EarlyRequests, "early-requests"),
    ];

    /// The mode called `name` (see [`Handshake::ALL`]).
    pub fn from_name(name: &str) -> Option<Handshake> {
        Self::ALL.iter().find(|(_, n)| *n == name).map(|(h, _)| *h)
    }

    /// The command-line name of this mode.
    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(h, _)| *h == self)
            .map_or("normal", |(_, n)| n)
    }
}

/// Terminal control sequences a hostile server slips into its text: set the window title,
/// clear the screen, a carriage return, a bell, a bidi override, a C1 control.
pub const HOSTILE_TEXT: &str = "\u{1b}]0;pwned\u{7}\u{1b}[2J\r\u{202e}\u{9b}";

/// A misbehaving end of a connection, for tests of a client's shutdown: with anything but
/// [`Linger::No`], [`crate::serve`] never returns after EOF (it keeps its streams and keeps
/// reading, answering nothing that is written any more).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Linger {
    /// Well behaved: EOF on input ends the connection.
    #[default]
    No,
    /// `ignore-eof`: EOF on input changes nothing; the server stays.
    IgnoreEof,
    /// `ignore-term`: like `ignore-eof`, and the binaries ignore SIGTERM (only SIGKILL ends
    /// them), like a server sleeping in a signal-blind call.
    IgnoreTerm,
    /// `stall-mid-frame`: after answering the first `tools/call`, write half of a frame, then
    /// nothing more.
    StallMidFrame,
    /// `close-stdout`: after answering the first `tools/call`, close the output stream (the
    /// binaries close their real stdout) and stay.
    CloseStdout,
}

impl Linger {
    /// Every mode and its command-line name (`--linger NAME`).
    pub const ALL: [(Linger, &'static str); 5] = [
        (Linger::No, "no"),
        (Linger::IgnoreEof, "ignore-eof"),
        (Linger::IgnoreTerm, "ignore-term"),
        (Linger::StallMidFrame, "stall-mid-frame"),
        (Linger::CloseStdout, "close-stdout"),
    ];

    /// The mode called `name` (see [`Linger::ALL`]).
    pub fn from_name(name: &str) -> Option<Linger> {
        Self::ALL.iter().find(|(_, n)| *n == name).map(|(l, _)| *l)
    }

    /// The command-line name of this mode.
    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(l, _)| *l == self)
            .map_or("no", |(_, n)| n)
    }
}

impl Default for ServerConfig {
    /// The echo flavour: see [`ServerConfig::echo`].
    fn default() -> Self {
        Self::echo()
    }
}

impl ServerConfig {
    /// The well-behaved server: every non-chaos tool, no pagination.
    pub fn echo() -> Self {
        Self {
            name: "mcp-echo-server".to_owned(),
            server_version: env!("CARGO_PKG_VERSION").to_owned(),
            version_override: None,
            page_size: 0,
            instructions: Some(
                "In-repo MCP test server. Tools: echo, add, slow, sample, elicit, roots, log, \
                 notify_changed, touch, session_info."
                    .to_owned(),
            ),
            chaos: false,
            endless_cursor: false,
            eof_grace: Duration::from_secs(1),
            linger: Linger::No,
            hostile: false,
            handshake: Handshake::Normal,
            stderr_flood: 0,
            own_process: false,
        }
    }

    /// This configuration with hostile text (see [`ServerConfig::hostile`]).
    pub fn with_hostile_text(mut self) -> Self {
        self.hostile = true;
        self.name.push_str(HOSTILE_TEXT);
        if let Some(i) = self.instructions.as_mut() {
            i.push_str(HOSTILE_TEXT);
        }
        self
    }

    /// The controllable server: like [`ServerConfig::echo`] plus the chaos tools.
    pub fn chaos() -> Self {
        Self {
            name: "mcp-chaos-server".to_owned(),
            instructions: Some(
                "In-repo MCP test server with chaos tools (die, hang, garbage, oversized, late, \
                 duplicate, unknown_id, flood, exit_after, silent, partial, invalid_utf8, \
                 surrogate, sigkill, close_stdout, stderr_flood) besides echo, add, slow, \
                 sample, elicit, roots, log, notify_changed, touch, session_info."
                    .to_owned(),
            ),
            chaos: true,
            ..Self::echo()
        }
    }
}
