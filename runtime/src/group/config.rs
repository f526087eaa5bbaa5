//! The MCP server configuration files hosts share, read into [`ServerEntry`]s that make
//! [`ClientBuilder`]s.
//!
//! # Shapes
//!
//! - `{"mcpServers": {NAME: ENTRY, …}}`: Claude Desktop, Claude Code (`.mcp.json`, and the
//!   user-scope servers of `~/.claude.json`; its per-project `projects.*.mcpServers` are not
//!   read), Cursor, Gemini CLI, Windsurf.
//! - `{"servers": {NAME: ENTRY, …}, "inputs": […]}`: VS Code's `mcp.json`. `inputs` is kept
//!   ([`GroupConfig::inputs`]) and otherwise unused: `${input:ID}` is not asked for.
//!
//! A file with both has the servers of both (a name in both is an error); one with neither is
//! [`ConfigError::NoServers`]. The servers keep the file's order. Other top-level keys (a host
//! keeps its other settings in the same file) are skipped silently.
//!
//! # Entries
//!
//! | field | read as | builder |
//! | --- | --- | --- |
//! | `command`, `args`, `env`, `cwd` | a stdio server (`type` absent or `"stdio"`) | [`ClientBuilder::stdio`], [`ClientBuilder::env`] per variable, [`ClientBuilder::current_dir`] |
//! | `url` (or `httpUrl`, Gemini CLI; `serverUrl`, Windsurf), `headers` | an HTTP server: `type` absent, `"http"`, `"streamable-http"` or `"streamableHttp"` | [`ClientBuilder::http`] (Streamable HTTP, falling back to the legacy HTTP+SSE transport by itself), [`ClientBuilder::header`] per header |
//! | the same with `type: "sse"` | a legacy HTTP+SSE server | [`ClientBuilder::sse`], [`ClientBuilder::header`] |
//! | `timeout` | milliseconds (a number, as Gemini CLI writes it; Cline's seconds are not guessed: a number below 1000 is a [`ConfigWarning::ShortTimeout`]) or a string: `"500ms"`, `"30s"`, `"2m"`, `"1h"`; above zero, at most 24 h | [`ClientBuilder::request_timeout`] |
//! | `enabled`, `disabled` (Cline, Cursor) | [`ServerEntry::enabled`]; both, contradicting, is an error | — (the group starts only enabled servers) |
//! | `era` | `"auto"`, `"legacy"` or `"modern"` | [`ClientBuilder::era`] |
//! | `tools` `{"allow": [glob], "deny": [glob]}`; Gemini CLI's `includeTools` / `excludeTools` add to them | a [`ToolFilter`] (`*`, `?`; deny wins; no `allow`: all) | — (applied by the group) |
//! | `oauth` `{clientId, clientSecret, scopes, callbackPort, redirectUri, authServerMetadataUrl}` | [`OAuthSettings`] | — (needs the host's user agent: [`OAuthSettings::apply`]) |
//!
//! The environment a stdio server gets is the runtime's default allowlist (`HOME`, `PATH`, …;
//! see [`crate::transport::stdio`]) plus `env`. `cwd` and `command` are used as written after
//! expansion (no `~`; a relative `cwd` is relative to the host's current directory).
//!
//! A field of another transport (`headers` on a stdio server, `args` on an HTTP one) is ignored
//! with a [`ConfigWarning::IgnoredField`]. Any other field is kept in [`ServerEntry::extra`] and
//! ignored, with a [`ConfigWarning::UnknownField`]: never an error.
//!
//! # Variables
//!
//! `${VAR}`, `${VAR:-default}` and `${env:VAR}` are expanded in `command`, `args`, the values of
//! `env`, `cwd`, the URL, the values of `headers`, and `oauth.clientId` / `oauth.clientSecret`;
//! bare `$VAR` is not. A variable that is not set (without a default) stays as written and is
//! reported as a [`ConfigWarning::UnsetVariable`] naming the server, the field and the
//! variable (never a value). A set but empty variable is used as it is (Claude Code's rule).
//! The default is literal and ends at the first `}`; a value is not expanded again; there is
//! no escape (`$${X}` is `$` then the value of `X`). `${input:ID}` stays as written
//! ([`ConfigWarning::InputVariable`]). [`GroupConfig::parse_with_env`] takes the lookup, so a
//! test need not touch the process's environment.
//!
//! # Errors
//!
//! An error names the file (the label the caller gave, or the path), and where it can the
//! server and the field (`headers.Authorization`, `args[2]`), with the line and column where
//! reading stopped: just after the value at fault (an entry's fields that do not fit together,
//! such as both `command` and `url`, at the entry's closing brace). A value is never shown in an
//! error or a warning, only its kind ("a number"), except the `type` and `era` words.
//! [`ServerEntry::builder`] fails, with a [`BuildError`], only on what the builder refuses: a
//! URL that is not `http(s)`, a header the transport cannot send.
//!
//! Reading is bounded: a file larger than [`MAX_CONFIG_BYTES`] is [`ConfigError::TooLarge`].

use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Map, Value};

use super::expand::{Unexpanded, expand};
use crate::auth::{OAuthBuilder, Secret};
use crate::{ClientBuilder, EraMode};

mod read;

/// The largest configuration file read (16 MiB): `~/.claude.json` keeps much more than its
/// servers.
pub const MAX_CONFIG_BYTES: usize = 16 << 20;

/// The longest `timeout` an entry may give (24 h).
pub const MAX_TIMEOUT: Duration = Duration::from_secs(24 * 3600);

/// The servers of one configuration file, in the file's order, with their variables expanded,
/// and what reading them found worth telling ([`GroupConfig::warnings`]). Not a running group:
/// it only says what to start.
///
/// ```
/// use mcp_runtime::group::{GroupConfig, ServerTransport};
///
/// // A Claude Desktop `claude_desktop_config.json` (`GroupConfig::load(path)` reads a file).
/// let text = r#"{
///   "mcpServers": {
///     "filesystem": {
///       "command": "npx",
///       "args": ["-y", "@modelcontextprotocol/server-filesystem", "${HOME}/Documents"]
///     },
///     "github": {
///       "command": "docker",
///       "args": ["run", "-i", "--rm", "-e", "GITHUB_PERSONAL_ACCESS_TOKEN", "ghcr.io/github/github-mcp-server"],
///       "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "${GITHUB_TOKEN}"}
///     }
///   }
/// }"#;
/// let env = |name: &str| (name == "HOME").then(|| "/home/me".to_string());
/// let config = GroupConfig::parse_with_env(text, "claude_desktop_config.json", env)?;
///
/// for entry in config.servers().iter().filter(|e| e.enabled) {
///     let builder = entry.builder()?; // then .client_info(..), .handler(..), .connect()
///     # drop(builder);
///     if let ServerTransport::Stdio { command, args, .. } = &entry.transport {
///         println!("{}: {command} {}", entry.name, args.join(" "));
///     }
/// }
/// let ServerTransport::Stdio { args, .. } = &config.servers()[0].transport else { panic!() };
/// assert_eq!(args[2], "/home/me/Documents");
/// // GITHUB_TOKEN is not set: left as written, and said.
/// for warning in config.warnings() {
///     eprintln!("{warning}"); // claude_desktop_config.json: server `github`, field `env.GITHUB_PERSONAL_ACCESS_TOKEN`: ...
/// }
/// assert_eq!(config.warnings().len(), 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct GroupConfig {
    file: String,
    servers: Vec<ServerEntry>,
    inputs: Option<Value>,
    warnings: Vec<ConfigWarning>,
}

impl GroupConfig {
    /// Reads the configuration in `text`, labelled `file` in errors and warnings (its path,
    /// say), expanding variables from the process's environment.
    pub fn parse(text: &str, file: impl Into<String>) -> Result<Self, ConfigError> {
        Self::parse_with_env(text, file, process_env)
    }

    /// [`GroupConfig::parse`] with the variables looked up by `env` (`None`: not set).
    pub fn parse_with_env(
        text: &str,
        file: impl Into<String>,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, ConfigError> {
        Self::from_bytes(text.as_bytes(), file.into(), &env)
    }

    /// Reads the configuration file at `path` (blocking; at most [`MAX_CONFIG_BYTES`]),
    /// expanding variables from the process's environment. Errors name the file by its path.
    pub fn load(path: impl AsRef<Path>) -> Result<Self, ConfigError> {
        Self::load_with_env(path, process_env)
    }

    /// [`GroupConfig::load`] with the variables looked up by `env`.
    pub fn load_with_env(
        path: impl AsRef<Path>,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, ConfigError> {
        let path = path.as_ref();
        let failed = |cause| ConfigError::Read {
            path: path.to_owned(),
            cause,
        };
        let file = std::fs::File::open(path).map_err(failed)?;
        let mut bytes = Vec::new();
        file.take(MAX_CONFIG_BYTES as u64 + 1)
            .read_to_end(&mut bytes)
            .map_err(failed)?;
        Self::from_bytes(&bytes, path.display().to_string(), &env)
    }

    /// A configuration of `servers` made in code (no file to read), labelled `file`. Fails
    /// only on two servers of one name.
    pub fn from_entries(
        file: impl Into<String>,
        servers: impl IntoIterator<Item = ServerEntry>,
    ) -> Result<Self, ConfigError> {
        let file = file.into();
        let mut out: Vec<ServerEntry> = Vec::new();
        for entry in servers {
            if out.iter().any(|e| e.name == entry.name) {
                return Err(ConfigError::DuplicateServer {
                    file,
                    server: entry.name,
                });
            }
            out.push(entry);
        }
        Ok(GroupConfig {
            file,
            servers: out,
            inputs: None,
            warnings: Vec::new(),
        })
    }

    fn from_bytes(
        bytes: &[u8],
        file: String,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, ConfigError> {
        if bytes.len() > MAX_CONFIG_BYTES {
            return Err(ConfigError::TooLarge {
                file,
                limit: MAX_CONFIG_BYTES,
            });
        }
        let read::Parsed {
            mut servers,
            inputs,
            mut warnings,
        } = read::read(bytes, &file)?;
        for entry in &mut servers {
            entry.expand(&file, env, &mut warnings);
        }
        Ok(GroupConfig {
            file,
            servers,
            inputs,
            warnings,
        })
    }

    /// The label of the file in errors and warnings.
    pub fn file(&self) -> &str {
        &self.file
    }

    /// The servers, in the file's order (the disabled ones too: see [`ServerEntry::enabled`]).
    pub fn servers(&self) -> &[ServerEntry] {
        &self.servers
    }

    /// The server named `name`.
    pub fn server(&self, name: &str) -> Option<&ServerEntry> {
        self.servers.iter().find(|e| e.name == name)
    }

    /// The servers, owned.
    pub fn into_servers(self) -> Vec<ServerEntry> {
        self.servers
    }

    /// What reading found and went on past: unset variables, unknown or ignored fields.
    pub fn warnings(&self) -> &[ConfigWarning] {
        &self.warnings
    }

    /// VS Code's `inputs` (the prompts its `${input:ID}` refer to), as written; unused here.
    pub fn inputs(&self) -> Option<&Value> {
        self.inputs.as_ref()
    }
}

fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// One server of a configuration file, its variables expanded. Two entries are equal when
/// they would make the same client: [`ServerEntry::extra`] (fields this crate ignores) is not
/// compared, so a host reloading its settings restarts only the servers that changed.
///
/// `Debug` shows neither the values of `env` and `headers` nor a URL's query and user info.
#[derive(Clone)]
#[non_exhaustive]
pub struct ServerEntry {
    /// The server's name (its key in the file).
    pub name: String,
    /// How to reach it.
    pub transport: ServerTransport,
    /// The default timeout of each of its calls (`timeout`); `None`: the builder's (30 s).
    pub timeout: Option<Duration>,
    /// Whether the host should start it (`enabled`, or not `disabled`; `true` when neither).
    pub enabled: bool,
    /// Which era to speak (`era`); `None`: the builder's default ([`EraMode::Auto`], or
    /// legacy for `sse`).
    pub era: Option<EraMode>,
    /// Which of its tools the host shows (`tools`, `includeTools`, `excludeTools`).
    pub tools: ToolFilter,
    /// What the file says about its authorization (`oauth`).
    pub oauth: Option<OAuthSettings>,
    /// The fields this crate does not read, as written (each also a warning).
    pub extra: Map<String, Value>,
}

/// How a [`ServerEntry`] reaches its server.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServerTransport {
    /// A child process speaking over its stdio.
    #[non_exhaustive]
    Stdio {
        /// The program (no shell).
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Variables set in its environment, in the file's order.
        env: Vec<(String, Secret)>,
        /// Its working directory.
        cwd: Option<PathBuf>,
    },
    /// Streamable HTTP, or the legacy HTTP+SSE transport when the server refuses it
    /// ([`ClientBuilder::http`]).
    #[non_exhaustive]
    Http {
        /// The endpoint.
        url: String,
        /// Headers sent on every request, in the file's order.
        headers: Vec<(String, Secret)>,
    },
    /// The legacy HTTP+SSE transport only ([`ClientBuilder::sse`]).
    #[non_exhaustive]
    Sse {
        /// The event stream's URL.
        url: String,
        /// Headers sent on every request, in the file's order.
        headers: Vec<(String, Secret)>,
    },
}

impl fmt::Debug for ServerTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fn keys(pairs: &[(String, Secret)]) -> Vec<&str> {
            pairs.iter().map(|(k, _)| k.as_str()).collect()
        }
        match self {
            ServerTransport::Stdio {
                command,
                args,
                env,
                cwd,
            } => f
                .debug_struct("Stdio")
                .field("command", command)
                .field("args", args)
                .field("env", &keys(env))
                .field("cwd", cwd)
                .finish(),
            ServerTransport::Http { url, headers } | ServerTransport::Sse { url, headers } => f
                .debug_struct(if matches!(self, ServerTransport::Http { .. }) {
                    "Http"
                } else {
                    "Sse"
                })
                .field("url", &crate::auth::policy::redact_str(url))
                .field("headers", &keys(headers))
                .finish(),
        }
    }
}

impl fmt::Debug for ServerEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerEntry")
            .field("name", &self.name)
            .field("transport", &self.transport)
            .field("timeout", &self.timeout)
            .field("enabled", &self.enabled)
            .field("era", &self.era)
            .field("tools", &self.tools)
            .field("oauth", &self.oauth)
            .field("extra", &self.extra.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl PartialEq for ServerEntry {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
            && self.transport == other.transport
            && self.timeout == other.timeout
            && self.enabled == other.enabled
            && self.era == other.era
            && self.tools == other.tools
            && self.oauth == other.oauth
    }
}

impl ServerEntry {
    fn with(name: impl Into<String>, transport: ServerTransport) -> Self {
        ServerEntry {
            name: name.into(),
            transport,
            timeout: None,
            enabled: true,
            era: None,
            tools: ToolFilter::default(),
            oauth: None,
            extra: Map::new(),
        }
    }

    /// An entry for the stdio server `command args…` named `name`, with no other option.
    pub fn stdio(
        name: impl Into<String>,
        command: impl Into<String>,
        args: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        let transport = ServerTransport::Stdio {
            command: command.into(),
            args: args.into_iter().map(Into::into).collect(),
            env: Vec::new(),
            cwd: None,
        };
        Self::with(name, transport)
    }

    /// An entry for the HTTP server at `url` (Streamable HTTP, or legacy HTTP+SSE) named `name`.
    pub fn http(name: impl Into<String>, url: impl Into<String>) -> Self {
        let transport = ServerTransport::Http {
            url: url.into(),
            headers: Vec::new(),
        };
        Self::with(name, transport)
    }

    /// An entry for the legacy HTTP+SSE server whose event stream is at `url`, named `name`.
    pub fn sse(name: impl Into<String>, url: impl Into<String>) -> Self {
        let transport = ServerTransport::Sse {
            url: url.into(),
            headers: Vec::new(),
        };
        Self::with(name, transport)
    }

    /// The [`ClientBuilder`] of this entry: transport, `env`, `cwd`, `headers`, `timeout` and
    /// `era` applied (see the [module](self)'s table); the host adds its own options
    /// (`client_info`, a handler, [`ClientBuilder::oauth`]) before connecting. Nothing is
    /// spawned or sent. Fails on a URL that is not `http(s)` or a header the transport refuses.
    pub fn builder(&self) -> Result<ClientBuilder, BuildError> {
        let mut builder = match &self.transport {
            ServerTransport::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                let mut builder = ClientBuilder::stdio(command, args);
                for (key, value) in env {
                    builder = builder.env(key, value.expose());
                }
                if let Some(cwd) = cwd {
                    builder = builder.current_dir(cwd);
                }
                builder
            }
            ServerTransport::Http { url, headers } => {
                let builder = ClientBuilder::http(url).map_err(|cause| self.url_error(cause))?;
                self.with_headers(builder, headers)?
            }
            ServerTransport::Sse { url, headers } => {
                let builder = ClientBuilder::sse(url).map_err(|cause| self.url_error(cause))?;
                self.with_headers(builder, headers)?
            }
        };
        if let Some(timeout) = self.timeout {
            builder = builder.request_timeout(timeout);
        }
        if let Some(era) = self.era {
            builder = builder.era(era);
        }
        Ok(builder)
    }

    fn url_error(&self, cause: crate::Error) -> BuildError {
        BuildError::Url {
            server: self.name.clone(),
            cause: Box::new(cause),
        }
    }

    fn with_headers(
        &self,
        mut builder: ClientBuilder,
        headers: &[(String, Secret)],
    ) -> Result<ClientBuilder, BuildError> {
        for (name, value) in headers {
            builder = builder
                .header(name, value.expose())
                .map_err(|cause| BuildError::Header {
                    server: self.name.clone(),
                    header: name.clone(),
                    cause: Box::new(cause),
                })?;
        }
        Ok(builder)
    }

    /// Expands the variables of the fields that take them, reporting what was left.
    fn expand(
        &mut self,
        file: &str,
        env: &dyn Fn(&str) -> Option<String>,
        warnings: &mut Vec<ConfigWarning>,
    ) {
        let server = self.name.clone();
        let mut one = |field: &dyn Fn() -> String, text: &str| {
            let mut left = Vec::new();
            let out = expand(text, env, &mut left);
            for reference in left {
                let (file, server, field) = (file.to_owned(), server.clone(), field());
                warnings.push(match reference {
                    Unexpanded::Unset(variable) => ConfigWarning::UnsetVariable {
                        file,
                        server,
                        field,
                        variable,
                    },
                    Unexpanded::Input(id) => ConfigWarning::InputVariable {
                        file,
                        server,
                        field,
                        id,
                    },
                });
            }
            out
        };
        let secrets = |one: &mut dyn FnMut(&dyn Fn() -> String, &str) -> String,
                       field: &str,
                       pairs: &mut Vec<(String, Secret)>| {
            for (key, value) in pairs {
                *value = Secret::new(one(&|| format!("{field}.{key}"), value.expose()));
            }
        };
        match &mut self.transport {
            ServerTransport::Stdio {
                command,
                args,
                env: vars,
                cwd,
            } => {
                *command = one(&|| "command".into(), command);
                for (i, arg) in args.iter_mut().enumerate() {
                    *arg = one(&|| format!("args[{i}]"), arg);
                }
                secrets(&mut one, "env", vars);
                if let Some(dir) = cwd {
                    let text = dir.to_string_lossy().into_owned();
                    *dir = one(&|| "cwd".into(), &text).into();
                }
            }
            ServerTransport::Http { url, headers } | ServerTransport::Sse { url, headers } => {
                *url = one(&|| "url".into(), url);
                secrets(&mut one, "headers", headers);
            }
        }
        if let Some(oauth) = &mut self.oauth {
            if let Some(id) = &mut oauth.client_id {
                *id = one(&|| "oauth.clientId".into(), id);
            }
            if let Some(secret) = &mut oauth.client_secret {
                *secret = Secret::new(one(&|| "oauth.clientSecret".into(), secret.expose()));
            }
        }
    }
}

/// Which of a server's tools a host shows and routes to: `tools.allow` and `tools.deny`, globs
/// where `*` matches any run of characters and `?` one character (no other syntax, no
/// escape). A name matching a `deny` glob is refused; otherwise, with no `allow` list every
/// name is allowed, with one only the names matching one of its globs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ToolFilter {
    allow: Option<Vec<String>>,
    deny: Vec<String>,
}

impl ToolFilter {
    /// A filter allowing `allow` (`None`: every name) but `deny`.
    pub fn new(
        allow: Option<impl IntoIterator<Item = impl Into<String>>>,
        deny: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        ToolFilter {
            allow: allow.map(|a| a.into_iter().map(Into::into).collect()),
            deny: deny.into_iter().map(Into::into).collect(),
        }
    }

    /// Whether the tool `name` passes.
    pub fn allows(&self, name: &str) -> bool {
        if self.deny.iter().any(|g| glob(g, name)) {
            return false;
        }
        match &self.allow {
            None => true,
            Some(allow) => allow.iter().any(|g| glob(g, name)),
        }
    }

    /// Whether every name passes (no `allow` list, no `deny` glob).
    pub fn allows_all(&self) -> bool {
        self.allow.is_none() && self.deny.is_empty()
    }

    /// The `allow` globs (`None`: every name).
    pub fn allow(&self) -> Option<&[String]> {
        self.allow.as_deref()
    }

    /// The `deny` globs.
    pub fn deny(&self) -> &[String] {
        &self.deny
    }
}

/// Whether `name` matches `pattern` (`*`: any run of characters, `?`: one). Linear
/// backtracking to the last `*`: at most `pattern × name` steps.
fn glob(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    let (mut pi, mut ni) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ni < n.len() {
        if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ni));
            pi += 1;
        } else if pi < p.len() && (p[pi] == '?' || p[pi] == n[ni]) {
            pi += 1;
            ni += 1;
        } else if let Some((sp, sn)) = star {
            pi = sp + 1;
            ni = sn + 1;
            star = Some((sp, sn + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

/// What a file says about a server's OAuth authorization (`oauth`, in Claude Code's and
/// Gemini CLI's names). The runtime's [`crate::auth::OAuth`] needs a user agent only the host
/// has, so [`ServerEntry::builder`] does not apply these: the host does, with
/// [`OAuthSettings::apply`].
///
/// The runtime discovers the authorization server and the scopes itself (from the server's
/// challenge and metadata) and its loopback user agent listens on a port the system picks: so
/// `scopes`, `callbackPort` and `redirectUri` are kept as data, unused here (each a
/// [`ConfigWarning::IgnoredField`]). `Debug` shows neither the client secret nor the values of
/// the other fields.
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct OAuthSettings {
    /// `clientId`: a client registered beforehand (its variables expanded).
    pub client_id: Option<String>,
    /// `clientSecret`: its secret, for a confidential client (its variables expanded).
    pub client_secret: Option<Secret>,
    /// `scopes`: the scopes to ask for (a space-separated string or an array in the file).
    pub scopes: Vec<String>,
    /// `callbackPort`: the loopback port of the redirect URI.
    pub callback_port: Option<u16>,
    /// `redirectUri`: the redirect URI.
    pub redirect_uri: Option<String>,
    /// `authServerMetadataUrl`: the authorization server's metadata document (RFC 8414).
    pub auth_server_metadata_url: Option<String>,
    /// The other fields, as written (each also a warning).
    pub extra: Map<String, Value>,
}

impl fmt::Debug for OAuthSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuthSettings")
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret)
            .field("scopes", &self.scopes)
            .field("callback_port", &self.callback_port)
            .field("redirect_uri", &self.redirect_uri)
            .field("auth_server_metadata_url", &self.auth_server_metadata_url)
            .field("extra", &self.extra.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl PartialEq for OAuthSettings {
    fn eq(&self, other: &Self) -> bool {
        self.client_id == other.client_id
            && self.client_secret == other.client_secret
            && self.scopes == other.scopes
            && self.callback_port == other.callback_port
            && self.redirect_uri == other.redirect_uri
            && self.auth_server_metadata_url == other.auth_server_metadata_url
    }
}

impl OAuthSettings {
    /// The issuer of the authorization server, as its RFC 8414 metadata URL names it:
    /// `https://as.example/.well-known/oauth-authorization-server/tenant` →
    /// `https://as.example/tenant`; `https://as.example/tenant/.well-known/openid-configuration`
    /// → `https://as.example/tenant`. `None` without such a URL.
    pub fn issuer(&self) -> Option<String> {
        let url = crate::auth::Url::parse(self.auth_server_metadata_url.as_deref()?).ok()?;
        let path = url.path();
        let issuer_path =
            if let Some(rest) = path.strip_prefix("/.well-known/oauth-authorization-server") {
                rest
            } else {
                path.strip_suffix("/.well-known/openid-configuration")?
            };
        let origin = url.origin().ascii_serialization();
        Some(format!("{origin}{}", issuer_path.trim_end_matches('/')))
    }

    /// `builder` with what the runtime can use of these settings: the client id (and secret)
    /// as a client pre-registered with [`OAuthSettings::issuer`], when both are known. The
    /// rest is the host's: see the type's documentation.
    pub fn apply(&self, builder: OAuthBuilder) -> OAuthBuilder {
        match (&self.client_id, self.issuer()) {
            (Some(id), Some(issuer)) => builder.pre_registered(
                issuer,
                id.clone(),
                self.client_secret.as_ref().map(|s| s.expose().to_owned()),
            ),
            _ => builder,
        }
    }
}

/// Why a configuration could not be read. Each names the file; those of a server's entry name
/// the server and the field; those met while reading have the line and column (1-based) where
/// reading stopped. Never shows a value of the file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file could not be opened or read.
    #[error("{}: cannot read the configuration: {cause}", path.display())]
    Read {
        /// The path.
        path: PathBuf,
        /// Why.
        #[source]
        cause: std::io::Error,
    },
    /// The file is larger than [`MAX_CONFIG_BYTES`].
    #[error("{file}: larger than {limit} bytes: not read")]
    TooLarge {
        /// The file.
        file: String,
        /// The bound.
        limit: usize,
    },
    /// Not JSON (or not UTF-8), or cut short.
    #[error(
        "{file}:{line}:{column}: {}not valid JSON: {}",
        place(server, field),
        bare(cause)
    )]
    Syntax {
        /// The file.
        file: String,
        /// The line.
        line: usize,
        /// The column.
        column: usize,
        /// The server whose entry was being read.
        server: Option<String>,
        /// The field being read.
        field: Option<String>,
        /// serde_json's error.
        #[source]
        cause: serde_json::Error,
    },
    /// JSON that is not a configuration: a value of the wrong kind, a server with neither
    /// `command` nor `url` or with both, an unknown `type` or `era`, a bad `timeout`, a name
    /// given twice.
    #[error("{file}:{line}:{column}: {}{reason}", place(server, field))]
    Invalid {
        /// The file.
        file: String,
        /// The line.
        line: usize,
        /// The column.
        column: usize,
        /// The server, when the error is in an entry (or names one given twice).
        server: Option<String>,
        /// The field (`url`, `headers.Authorization`, `args[2]`, `mcpServers`).
        field: Option<String>,
        /// What is wrong (never a value of the file).
        reason: String,
    },
    /// The file has neither `mcpServers` nor `servers`.
    #[error("{file}: no `mcpServers` (nor VS Code's `servers`) object")]
    NoServers {
        /// The file.
        file: String,
    },
    /// [`GroupConfig::from_entries`]: two servers of one name.
    #[error("{file}: server `{server}` is given twice")]
    DuplicateServer {
        /// The label.
        file: String,
        /// The name.
        server: String,
    },
}

impl ConfigError {
    /// The server the error is about, if any.
    pub fn server(&self) -> Option<&str> {
        match self {
            ConfigError::Syntax { server, .. } | ConfigError::Invalid { server, .. } => {
                server.as_deref()
            }
            ConfigError::DuplicateServer { server, .. } => Some(server),
            _ => None,
        }
    }

    /// The field the error is about, if any.
    pub fn field(&self) -> Option<&str> {
        match self {
            ConfigError::Syntax { field, .. } | ConfigError::Invalid { field, .. } => {
                field.as_deref()
            }
            _ => None,
        }
    }

    /// The line and column (1-based) where reading stopped, if it started.
    pub fn position(&self) -> Option<(usize, usize)> {
        match self {
            ConfigError::Syntax { line, column, .. }
            | ConfigError::Invalid { line, column, .. } => Some((*line, *column)),
            _ => None,
        }
    }
}

fn place(server: &Option<String>, field: &Option<String>) -> String {
    match (server, field) {
        (Some(s), Some(f)) => format!("server `{s}`, field `{f}`: "),
        (Some(s), None) => format!("server `{s}`: "),
        (None, Some(f)) => format!("field `{f}`: "),
        (None, None) => String::new(),
    }
}

/// serde_json's message without the position it appends (the error's own fields have it).
fn bare(e: &serde_json::Error) -> String {
    let text = e.to_string();
    match text.rfind(" at line ") {
        Some(at) => text[..at].to_owned(),
        None => text,
    }
}

/// Something reading a configuration went on past. Names the file, the server and the field;
/// never a value.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigWarning {
    /// `${variable}` of a variable that is not set, left as written.
    #[error(
        "{file}: server `{server}`, field `{field}`: variable `{variable}` is not set: left as written"
    )]
    UnsetVariable {
        /// The file.
        file: String,
        /// The server.
        server: String,
        /// The field (`env.API_KEY`, `args[3]`, `headers.Authorization`).
        field: String,
        /// The variable's name.
        variable: String,
    },
    /// `${input:ID}` (a VS Code input, asked of the user by VS Code only), left as written.
    #[error(
        "{file}: server `{server}`, field `{field}`: `${{input:{id}}}` is a VS Code input, not asked for here: left as written"
    )]
    InputVariable {
        /// The file.
        file: String,
        /// The server.
        server: String,
        /// The field.
        field: String,
        /// The input's id.
        id: String,
    },
    /// A field this crate does not read: kept in [`ServerEntry::extra`] (or
    /// [`OAuthSettings::extra`]) and otherwise ignored.
    #[error("{file}: server `{server}`: unknown field `{field}` ignored")]
    UnknownField {
        /// The file.
        file: String,
        /// The server.
        server: String,
        /// The field (`alwaysAllow`, `tools.transform`, `oauth.audiences`).
        field: String,
    },
    /// A `timeout` written as a number below 1000: milliseconds here (as Gemini CLI reads
    /// it), while Cline writes seconds. Write `"60s"` if seconds were meant.
    #[error(
        "{file}: server `{server}`, field `timeout`: {} ms, a number is milliseconds (write \"60s\" for seconds)",
        timeout.as_millis()
    )]
    ShortTimeout {
        /// The file.
        file: String,
        /// The server.
        server: String,
        /// The timeout read.
        timeout: Duration,
    },
    /// A field read but not used: one of another transport, or a setting the runtime cannot
    /// apply.
    #[error("{file}: server `{server}`, field `{field}` ignored: {reason}")]
    IgnoredField {
        /// The file.
        file: String,
        /// The server.
        server: String,
        /// The field.
        field: String,
        /// Why.
        reason: &'static str,
    },
}

/// Why [`ServerEntry::builder`] could not make a builder. Never shows a header's value.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// The URL is not an `http(s)` one.
    #[error("server `{server}`, field `url`: {cause}")]
    Url {
        /// The server.
        server: String,
        /// The builder's error.
        #[source]
        cause: Box<crate::Error>,
    },
    /// The transport refused a header (an invalid name, a value with a control character, a
    /// header it sets itself).
    #[error("server `{server}`, field `headers.{header}`: {cause}")]
    Header {
        /// The server.
        server: String,
        /// The header's name.
        header: String,
        /// The builder's error.
        #[source]
        cause: Box<crate::Error>,
    },
}

/// A host whose configuration files [`well_known_paths`] knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum HostKind {
    /// Claude Desktop.
    ClaudeDesktop,
    /// Claude Code.
    ClaudeCode,
    /// Cursor.
    Cursor,
    /// Visual Studio Code.
    VsCode,
}

impl fmt::Display for HostKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            HostKind::ClaudeDesktop => "Claude Desktop",
            HostKind::ClaudeCode => "Claude Code",
            HostKind::Cursor => "Cursor",
            HostKind::VsCode => "VS Code",
        })
    }
}

/// Where the hosts keep their server configuration on this machine (Linux or macOS), whether
/// or not each file exists: user-wide files under `$HOME` (none when it is unset), then the
/// project's, relative to the current directory.
///
/// - Claude Desktop: `~/Library/Application Support/Claude/claude_desktop_config.json`
///   (macOS), `$XDG_CONFIG_HOME/Claude/claude_desktop_config.json` (Linux; `~/.config`
///   without it).
/// - Claude Code: `~/.claude.json` (its user-scope servers), `.mcp.json`.
/// - Cursor: `~/.cursor/mcp.json`, `.cursor/mcp.json`.
/// - VS Code: `~/Library/Application Support/Code/User/mcp.json` (macOS),
///   `$XDG_CONFIG_HOME/Code/User/mcp.json` (Linux), `.vscode/mcp.json`.
pub fn well_known_paths() -> Vec<(HostKind, PathBuf)> {
    let var = |name| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    paths_for(
        var("HOME"),
        var("XDG_CONFIG_HOME"),
        cfg!(target_os = "macos"),
    )
}

fn paths_for(
    home: Option<PathBuf>,
    xdg_config: Option<PathBuf>,
    macos: bool,
) -> Vec<(HostKind, PathBuf)> {
    let mut out = Vec::new();
    if let Some(home) = &home {
        let app_config = if macos {
            home.join("Library/Application Support")
        } else {
            xdg_config.unwrap_or_else(|| home.join(".config"))
        };
        out.push((
            HostKind::ClaudeDesktop,
            app_config.join("Claude/claude_desktop_config.json"),
        ));
        out.push((HostKind::ClaudeCode, home.join(".claude.json")));
        out.push((HostKind::Cursor, home.join(".cursor/mcp.json")));
        out.push((HostKind::VsCode, app_config.join("Code/User/mcp.json")));
    }
    out.push((HostKind::ClaudeCode, PathBuf::from(".mcp.json")));
    out.push((HostKind::Cursor, PathBuf::from(".cursor/mcp.json")));
    out.push((HostKind::VsCode, PathBuf::from(".vscode/mcp.json")));
    out
}

#[cfg(test)]
mod tests;
