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
/// `duplicate {}`, `unknown_id {id?: any}`, `flood {count: integer}`, `exit_after {ms: integer}`.
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
        }
    }

    /// The controllable server: like [`ServerConfig::echo`] plus the chaos tools.
    pub fn chaos() -> Self {
        Self {
            name: "mcp-chaos-server".to_owned(),
            instructions: Some(
                "In-repo MCP test server with chaos tools (die, hang, garbage, oversized, late, \
                 duplicate, unknown_id, flood, exit_after) besides echo, add, slow, sample, \
                 elicit, roots, log, notify_changed, touch, session_info."
                    .to_owned(),
            ),
            chaos: true,
            ..Self::echo()
        }
    }
}
