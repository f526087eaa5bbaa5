//! [`ServerConfig`]: what one served connection looks like.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

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
/// `touch {uri: string}` (→ `notifications/resources/updated` while subscribed),
/// `session_info {}` (what the server recorded about the session, the open listens included),
/// `test_trigger_tool_change {}` (the same as `notify_changed` for tools), `end_listens {}`
/// (ends every open `subscriptions/listen` as [`ServerConfig::listen_end`] says),
/// `break_listens {}` (drops every open listen without a response: over HTTP its stream is
/// cut) and
/// `structured {shape?: "valid"|"wrong"|"missing"|"error"}` (`structuredContent {count, label}`
/// as its `outputSchema` says; `wrong` breaks the schema, `missing` leaves it out, `error`
/// reports `isError`: for clients that check results against the schema).
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
/// Eras ([`ServerConfig::era`]): by default the handshake era only. In the modern era
/// (2026-07-28) the same catalogue is served statelessly (every result says
/// `"resultType": "complete"` unless [`ServerConfig::omit_result_type`]; list results and
/// `resources/read` carry `ttlMs` and `cacheScope`: [`ServerConfig::cache_ttl_ms`]), `sample`,
/// `elicit` and `roots` answer a tool error (the server never sends requests), and two MRTR tools are added:
/// `confirm_action {}` (answers `input_required` with an `elicitation/create` input request
/// `confirm` and a `requestState`; the retry carrying `inputResponses.confirm` and that exact
/// `requestState` completes, naming the answer) and `always_input {}` (answers
/// `input_required` every time, counting the rounds in its `requestState`); both answer -32021
/// unless the request's `_meta` client capabilities declare `elicitation`.
///
/// Resources `test://static/1..3`, template `test://dynamic/{id}`; prompts `greeting {name}` and
/// `plain`; completion of `greeting`'s `name` from `["alice", "alfred", "bob"]`.
///
/// The official conformance suite's fixtures, listed and served only with
/// [`ServerConfig::conformance`] (after the tools above, before the chaos ones): tools
/// `test_simple_text`, `test_image_content`, `test_audio_content`, `test_embedded_resource`,
/// `test_multiple_content_types`, `test_tool_with_logging`, `test_error_handling`,
/// `test_tool_with_progress`, `test_sampling {prompt}`, `test_elicitation {message}`,
/// `test_elicitation_sep1034_defaults`, `test_elicitation_sep1330_enums`,
/// `json_schema_2020_12_tool` and `test_reconnection` (over HTTP its stream is closed after
/// the priming event; the answer comes to the resumption); resources `test://static-text`,
/// `test://static-binary`, `test://watched-resource` and template `test://template/{id}/data`;
/// prompts `test_simple_prompt`, `test_prompt_with_arguments {arg1, arg2}`,
/// `test_prompt_with_embedded_resource {resourceUri}` and `test_prompt_with_image`.
///
/// `subscriptions/listen` (modern era, [`ServerConfig::listen`]): the acknowledgement first,
/// then the changes published by `notify_changed`, `test_trigger_tool_change` and `touch` (on
/// every connection sharing the [`crate::ListenBus`]), tagged with the listen's id; see
/// `listen` for the wire shapes.
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
    /// Which protocol era the server speaks (`--era NAME`; default: the handshake era only,
    /// exactly as before the 2026-07-28 revision).
    pub era: Era,
    /// How a [`Era::Legacy`] server reacts to `server/discover` (`--probe NAME`); ignored by
    /// the other eras.
    pub probe: Probe,
    /// The modern revisions this server supports (`--modern-versions V1,V2`; default
    /// [`crate::MODERN_PROTOCOL_VERSIONS`]): `server/discover`'s `supportedVersions` and the
    /// versions accepted in a modern request's `_meta`.
    pub modern_versions: Vec<String>,
    /// Modern results leave `resultType` out (absent means `complete`) instead of saying
    /// `"resultType": "complete"` (`--omit-result-type`).
    pub omit_result_type: bool,
    /// The `ttlMs` of the cacheable results (`tools/list`, `prompts/list`, `resources/list`,
    /// `resources/templates/list`, `resources/read`; `server/discover` too in the modern era)
    /// (`--cache-ttl-ms N`). `Some`: in every era, the handshake era included (a legacy server
    /// may send the hints too); `None`: only modern results carry hints, with a `ttlMs` of 60 s.
    pub cache_ttl_ms: Option<u64>,
    /// The `cacheScope` of those results is `"private"` instead of `"public"`
    /// (`--cache-private`).
    pub cache_private: bool,
    /// The modern era serves `subscriptions/listen` and advertises `listChanged` and
    /// `resources.subscribe` in `server/discover` (`--listen on|off`, default on). Off: the
    /// method answers -32601 and none of those capabilities is advertised.
    pub listen: bool,
    /// Task-backed tools in both eras (`--tasks`): the `task_*` tools, the 2025-11-25 `tasks`
    /// capability and methods, and the 2026-07-28 extension `io.modelcontextprotocol/tasks`
    /// (see the `tasks` module).
    pub tasks: bool,
    /// Where the tasks are kept besides memory (`--task-store FILE`): a server started again
    /// on the same file knows the tasks of the one before.
    pub task_store: Option<std::path::PathBuf>,
    /// How `end_listens` ends every open listen (`--listen-end complete|cancel`).
    pub listen_end: ListenEnd,
    /// What a listen's acknowledgement leaves out even when it was asked for and the server has
    /// it (`--listen-honor SPEC`), so that a client can be tested against a narrower
    /// acknowledgement.
    pub listen_honor: ListenHonor,
    /// Modern era: besides the tagged notifications of `subscriptions/listen`, the server also
    /// sends the untagged `notifications/*/list_changed` and `notifications/resources/updated`
    /// of the handshake era, and answers `resources/subscribe|unsubscribe`
    /// (`--modern-unsolicited on|off`, default on, as before listen existed). The handshake era
    /// always does.
    pub modern_unsolicited: bool,
    /// The official conformance suite's fixture tools, resources and prompts besides the
    /// catalogue (`--conformance`; see the catalogue above), so that the server passes the
    /// suite's server scenarios itself. Off by default: the catalogue's counts stay as they are.
    pub conformance: bool,
    /// What every connection served with this configuration received (not configuration:
    /// clones share it, equality ignores it). Shown by `session_info` as `served`.
    pub served: Served,
}

/// How the `end_listens` tool ends the open `subscriptions/listen` requests (`--listen-end`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ListenEnd {
    /// `complete`: the graceful end, a result `{"resultType": "complete", "_meta":
    /// {"io.modelcontextprotocol/subscriptionId": ID}}`.
    #[default]
    Complete,
    /// `cancel`: a `notifications/cancelled {requestId: ID}` from the server and no response
    /// (the stdio way; over HTTP the stream then ends).
    Cancel,
}

impl ListenEnd {
    /// Every mode and its command-line name (`--listen-end NAME`).
    pub const ALL: [(ListenEnd, &'static str); 2] = [
        (ListenEnd::Complete, "complete"),
        (ListenEnd::Cancel, "cancel"),
    ];

    /// The mode called `name` (see [`ListenEnd::ALL`]).
    pub fn from_name(name: &str) -> Option<ListenEnd> {
        Self::ALL.iter().find(|(_, n)| *n == name).map(|(m, _)| *m)
    }

    /// The command-line name of this mode.
    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(m, _)| *m == self)
            .map_or("complete", |(_, n)| n)
    }
}

/// What a `subscriptions/listen` acknowledgement leaves out although the client asked for it
/// and the server has it (`--listen-honor SPEC`). The default honors everything.
///
/// `SPEC` is `all` (the default) or a comma-separated list of exclusions, each starting with
/// `-`: `-tools`, `-prompts`, `-resources` (the `toolsListChanged`, `promptsListChanged` and
/// `resourcesListChanged` flags), `-subscriptions` (every URI of `resourceSubscriptions`) or
/// `-URI` (that one URI, e.g. `-test://static/2`; a URI holding a comma cannot be named). The
/// flag may be given more than once; the exclusions add up.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ListenHonor {
    /// `-tools`: `toolsListChanged` is never honored.
    pub no_tools: bool,
    /// `-prompts`: `promptsListChanged` is never honored.
    pub no_prompts: bool,
    /// `-resources`: `resourcesListChanged` is never honored.
    pub no_resources: bool,
    /// `-subscriptions`: no URI of `resourceSubscriptions` is honored.
    pub no_subscriptions: bool,
    /// `-URI`: these URIs are never honored.
    pub no_uris: std::collections::BTreeSet<String>,
}

impl ListenHonor {
    /// Adds the exclusions of `spec` (see [`ListenHonor`]); `None` if an item is not one.
    pub fn add(&mut self, spec: &str) -> Option<()> {
        for item in spec.split(',').map(str::trim) {
            match item {
                "all" => {}
                "-tools" => self.no_tools = true,
                "-prompts" => self.no_prompts = true,
                "-resources" => self.no_resources = true,
                "-subscriptions" => self.no_subscriptions = true,
                uri => {
                    let uri = uri.strip_prefix('-').filter(|u| u.contains(':'))?;
                    self.no_uris.insert(uri.to_owned());
                }
            }
        }
        Some(())
    }

    /// The exclusions of `spec` (see [`ListenHonor`]); `None` if an item is not one.
    pub fn parse(spec: &str) -> Option<ListenHonor> {
        let mut honor = ListenHonor::default();
        honor.add(spec)?;
        Some(honor)
    }
}

/// How many requests of each method the connections of one [`ServerConfig`] received, over
/// every connection (each modern HTTP request is a connection of its own), for tests that check
/// what a client did or did not send (e.g. what its cache answered). Clones share the counts;
/// in the binaries they cover the whole process. Not configuration: any two are equal.
#[derive(Clone, Default)]
pub struct Served(Arc<Mutex<BTreeMap<String, u64>>>);

impl Served {
    fn counts(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, u64>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Counts one request of `method`.
    pub fn count(&self, method: &str) {
        *self.counts().entry(method.to_owned()).or_default() += 1;
    }

    /// How many requests of `method` were received.
    pub fn get(&self, method: &str) -> u64 {
        self.counts().get(method).copied().unwrap_or(0)
    }

    /// Every count, as a JSON object `{method: count}`.
    pub fn to_json(&self) -> Value {
        Value::Object(
            self.counts()
                .iter()
                .map(|(m, n)| (m.clone(), Value::from(*n)))
                .collect(),
        )
    }
}

impl std::fmt::Debug for Served {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Served").field(&*self.counts()).finish()
    }
}

impl PartialEq for Served {
    /// Always: counts are not configuration.
    fn eq(&self, _other: &Self) -> bool {
        true
    }
}

impl Eq for Served {}

/// Which protocol era a server speaks (`--era NAME` on the binaries).
///
/// The handshake era starts with `initialize` (revisions 2024-11-05 … 2025-11-25); the modern
/// era (2026-07-28) is stateless: no `initialize`, `server/discover`, and every request carries
/// `params._meta["io.modelcontextprotocol/protocolVersion"]` and
/// `["io.modelcontextprotocol/clientCapabilities"]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Era {
    /// `legacy`: the handshake era only (a `server/discover` is answered as [`Probe`] says).
    #[default]
    Legacy,
    /// `modern`: the 2026-07-28 era only; `initialize` is refused with -32022.
    Modern,
    /// `dual`: both; requests carrying the modern `_meta` (and `server/discover`) take the
    /// modern path, the others the handshake-era one.
    Dual,
}

impl Era {
    /// Every era and its command-line name (`--era NAME`).
    pub const ALL: [(Era, &'static str); 3] = [
        (Era::Legacy, "legacy"),
        (Era::Modern, "modern"),
        (Era::Dual, "dual"),
    ];

    /// The era called `name` (see [`Era::ALL`]).
    pub fn from_name(name: &str) -> Option<Era> {
        Self::ALL.iter().find(|(_, n)| *n == name).map(|(e, _)| *e)
    }

    /// The command-line name of this era.
    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(e, _)| *e == self)
            .map_or("legacy", |(_, n)| n)
    }
}

/// How a handshake-era server reacts to the modern probe `server/discover` (`--probe NAME`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Probe {
    /// `error`: -32601 method not found, like any unknown method.
    #[default]
    Error,
    /// `silent`: never answers it, keeps serving everything else.
    Silent,
    /// `die`: drops the connection at once (the binaries exit with code 3).
    Die,
    /// `garbage`: answers with a result that is not a DiscoverResult (`{}`).
    Garbage,
}

impl Probe {
    /// Every mode and its command-line name (`--probe NAME`).
    pub const ALL: [(Probe, &'static str); 4] = [
        (Probe::Error, "error"),
        (Probe::Silent, "silent"),
        (Probe::Die, "die"),
        (Probe::Garbage, "garbage"),
    ];

    /// The mode called `name` (see [`Probe::ALL`]).
    pub fn from_name(name: &str) -> Option<Probe> {
        Self::ALL.iter().find(|(_, n)| *n == name).map(|(p, _)| *p)
    }

    /// The command-line name of this mode.
    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(p, _)| *p == self)
            .map_or("error", |(_, n)| n)
    }
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
                 notify_changed, touch, session_info, structured, test_trigger_tool_change, \
                 end_listens, break_listens."
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
            era: Era::Legacy,
            probe: Probe::Error,
            modern_versions: crate::protocol::MODERN_PROTOCOL_VERSIONS
                .iter()
                .map(|v| (*v).to_owned())
                .collect(),
            omit_result_type: false,
            cache_ttl_ms: None,
            cache_private: false,
            listen: true,
            tasks: false,
            task_store: None,
            listen_end: ListenEnd::Complete,
            listen_honor: ListenHonor::default(),
            modern_unsolicited: true,
            conformance: false,
            served: Served::default(),
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
                 sample, elicit, roots, log, notify_changed, touch, session_info, structured, \
                 test_trigger_tool_change, end_listens, break_listens."
                    .to_owned(),
            ),
            chaos: true,
            ..Self::echo()
        }
    }
}
