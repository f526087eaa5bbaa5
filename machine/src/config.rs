//! The machine's configuration and its defaults (those of the seed design, fixed where wrong).

use std::time::Duration;

/// What the client declares it can do for the server (server-to-client requests it answers).
///
/// The declared capabilities decide which server requests go to the client handler
/// (`has_handler`); a request for an undeclared capability is answered with method-not-found.
/// Ping is always answered by the core and needs no capability.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct ClientCapabilities {
    /// Answers `sampling/createMessage`.
    pub sampling: bool,
    /// Answers `roots/list`.
    pub roots: bool,
    /// Will send `notifications/roots/list_changed`.
    pub roots_list_changed: bool,
    /// Answers `elicitation/create` in form mode.
    pub elicitation: bool,
    /// Answers `elicitation/create` in URL mode too.
    pub elicitation_url: bool,
    /// Runs sampling and elicitation as tasks when a 2025-11-25 server asks (`params.task`),
    /// and answers its `tasks/get`, `tasks/result`, `tasks/list` and `tasks/cancel` (declared
    /// as the `tasks` capability in `initialize`; the 2026-07-28 era has no client tasks).
    pub tasks: bool,
}

impl ClientCapabilities {
    /// Whether a server request with this method (and, for elicitation, this mode) is one the
    /// declared capabilities promise to answer. An elicitation without `mode` is form mode.
    pub fn handles(&self, method: &str, params: Option<&serde_json::Value>) -> bool {
        match method {
            "sampling/createMessage" => self.sampling,
            "roots/list" => self.roots,
            "tasks/get" | "tasks/result" | "tasks/list" | "tasks/cancel" => self.tasks,
            "elicitation/create" => {
                match params.and_then(|p| p.get("mode")).and_then(|m| m.as_str()) {
                    None | Some("form") => self.elicitation,
                    Some("url") => self.elicitation_url,
                    Some(_) => false,
                }
            }
            _other => false,
        }
    }

    /// The `io.modelcontextprotocol/clientCapabilities` of a modern request: as in
    /// `initialize`, except that `roots` has no `listChanged` any more (2026-07-28).
    pub fn to_json_modern(&self) -> serde_json::Value {
        let mut caps = self.to_json();
        if let Some(roots) = caps.get_mut("roots") {
            *roots = serde_json::json!({});
        }
        if let Some(caps) = caps.as_object_mut() {
            caps.remove("tasks");
        }
        caps
    }

    /// The `capabilities` object sent in `initialize`.
    pub fn to_json(&self) -> serde_json::Value {
        let mut caps = serde_json::Map::new();
        if self.sampling {
            caps.insert("sampling".into(), serde_json::json!({}));
        }
        if self.roots {
            caps.insert(
                "roots".into(),
                serde_json::json!({ "listChanged": self.roots_list_changed }),
            );
        }
        if self.elicitation || self.elicitation_url {
            let mut e = serde_json::Map::new();
            if self.elicitation {
                e.insert("form".into(), serde_json::json!({}));
            }
            if self.elicitation_url {
                e.insert("url".into(), serde_json::json!({}));
            }
            caps.insert("elicitation".into(), serde_json::Value::Object(e));
        }
        if self.tasks {
            let mut requests = serde_json::Map::new();
            if self.sampling {
                requests.insert("sampling".into(), serde_json::json!({"createMessage": {}}));
            }
            if self.elicitation || self.elicitation_url {
                requests.insert("elicitation".into(), serde_json::json!({"create": {}}));
            }
            caps.insert(
                "tasks".into(),
                serde_json::json!({"list": {}, "cancel": {}, "requests": requests}),
            );
        }
        serde_json::Value::Object(caps)
    }
}

/// An era of MCP: what a server was found to speak.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Era {
    /// The handshake era (`initialize`; 2024-11-05 .. 2025-11-25).
    Legacy,
    /// The stateless era (2026-07-28 on): `server/discover`, the version in every request.
    Modern,
}

/// Which era of MCP the client speaks to a server.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum EraMode {
    /// Decide per server: `server/discover` first, the legacy handshake when the answer (or
    /// the silence) says the server is a legacy one. The verdict is kept for the client's
    /// lifetime and decided again when it proves wrong. The default.
    #[default]
    Auto,
    /// The handshake era only (`initialize`; 2024-11-05 .. 2025-11-25): no probe.
    Legacy,
    /// The stateless era only (2026-07-28): a server that does not answer `server/discover`
    /// as a modern one is an error.
    Modern,
}

/// Everything the machine needs to know that does not change during a connection's life.
///
/// Durations are plain `Duration`s; jitter percentages are whole numbers (20 = ±20 %).
/// This is not the runtime's builder: the runtime fills one of these from its own options.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Config {
    /// `clientInfo.name` sent in `initialize`.
    pub client_name: String,
    /// `clientInfo.version` sent in `initialize`.
    pub client_version: String,
    /// Declared client capabilities.
    pub capabilities: ClientCapabilities,
    /// Default per-call timeout (30 s).
    pub request_timeout: Duration,
    /// Bound on spawning the first transport plus its handshake (60 s: the first start of a
    /// server through a package runner may install it first).
    pub connect_timeout: Duration,
    /// Bound on spawning a transport plus the handshake after a reconnect (10 s).
    pub init_timeout: Duration,
    /// First backoff delay (1 s).
    pub backoff_min: Duration,
    /// Backoff cap (30 s).
    pub backoff_max: Duration,
    /// Backoff jitter in percent (20).
    pub backoff_jitter_pct: u32,
    /// Total sends of one frame before a backpressure error (3).
    pub send_attempts: u8,
    /// Delay between busy sends (10 ms).
    pub retry_delay: Duration,
    /// Jitter of that delay in percent (50).
    pub retry_jitter_pct: u32,
    /// Largest accepted frame in bytes (16 MiB; exactly this size is accepted).
    pub max_frame_bytes: usize,
    /// How long ended ids are remembered (request + init + backoff max + 5 s = 75 s).
    pub tombstone_ttl: Duration,
    /// How often expired tombstones are dropped (60 s).
    pub tombstone_sweep: Duration,
    /// How long `closing` waits for the transport to confirm it is down (100 ms).
    pub closing_exit: Duration,
    /// The most server requests the handler holds at once (64); more are answered busy
    /// (-32000) at once.
    pub max_server_requests: usize,
    /// How many times in a row an expired session is initialized again at once, without a
    /// backoff delay (3); the count starts again when a call of the new session is answered.
    /// Past it, an expiry takes the reconnect path (backoff) like any transport failure.
    pub max_session_reinits: u32,
    /// Which era to speak (`auto` by default: probe, then the era the server speaks).
    pub era: EraMode,
    /// The most `input_required` rounds one call goes through (10); one more fails the call.
    pub max_input_rounds: u8,
    /// The most input requests one `input_required` round may ask for (16); a round asking
    /// for more fails its call.
    pub max_round_inputs: usize,
    /// How long `server/discover` may go unanswered before the server is taken for a legacy
    /// one (auto) or given up on (modern) (5 s). Spawning is bounded by the init timeout, not
    /// by this.
    pub probe_timeout: Duration,
    /// How many times one modern call is sent again under a new id after its request was
    /// lost without an answer (a broken response stream, or -32022 naming a version we speak)
    /// (2); past it, that error is the call's answer.
    pub max_reissues: u8,
    /// Whether the listen of a 2026-07-28 connection asks for the list changes (tools,
    /// prompts, resources) of every kind the server advertises `listChanged` for (true).
    /// Resource subscriptions join the listen whatever this says.
    pub listen_list_changed: bool,
    /// How many times a listen the server ended is opened again per connection (3); one that
    /// stayed acknowledged for `listen_stable` makes the count start again.
    pub max_relistens: u8,
    /// The delay before a lost listen is opened again (1 s), doubled per reopening, ±20 %.
    pub relisten_delay: Duration,
    /// How long a listen must stay acknowledged for its end to count as a fresh start (60 s).
    pub listen_stable: Duration,
    /// How long a session must stay ready for the backoff sequence to start again from its
    /// minimum when it ends (60 s), for a session in which no call was answered. Being ready
    /// proves nothing: a server that drops every session right after its handshake is met
    /// with growing delays, not a new session every second.
    pub session_stable: Duration,
    /// How many authorizations (HTTP with OAuth) are asked for in a row without a call
    /// answered in between (3); past it, a refusal for want of authorization is the answer.
    /// A backoff delay makes it whole again (the next attempt may authorize).
    pub max_authorizations: u32,
    /// How many frames a new transport may deliver ahead of the next credit: its read window
    /// (32; 0 is taken as 1, active-once). Each frame taken gives one credit back, so at most
    /// this many frames wait between the transport and the machine (the runtime's transports
    /// also stop reading ahead past 1 MiB of frames not yet taken). A window lets a
    /// burst of answers cross in one wake-up instead of one per frame.
    pub read_window: u32,
    /// Task-backed tool calls (both eras): whether a `tools/call` the server answers with a
    /// task is polled to its end (false: off, the default; the runtime's builder turns it on
    /// with `tasks(..)`, which also declares the capability). Off, a task result is an error
    /// for a 2026-07-28 call and a plain (odd) result for a 2025-11-25 one.
    pub tasks: bool,
    /// The shortest poll interval a server may ask for (250 ms): a server asking for 0 is
    /// polled at this pace.
    pub task_poll_min: Duration,
    /// The longest poll interval a server may ask for (30 s): a server asking for years is
    /// polled at this pace.
    pub task_poll_max: Duration,
    /// The poll interval when the server names none (1 s).
    pub task_poll_default: Duration,
    /// How many of a task's exchanges (polls, fetches, updates) may fail in a row (3) before
    /// the caller is answered with the last failure; any exchange answered makes it whole.
    pub max_task_failures: u8,
    /// How many inputs a 2026-07-28 task may ask for over its life (64); past it, the caller
    /// is answered with an error (a server cannot keep the host's handler busy forever).
    pub max_task_inputs: usize,
    /// How many calls may wait for a ready connection at once (1024,
    /// `CallOptions::wait_for_ready`); past it, a call is answered with `Unavailable` at once.
    pub max_waiting_calls: usize,
}

impl Default for Config {
    fn default() -> Self {
        let request_timeout = Duration::from_secs(30);
        let init_timeout = Duration::from_secs(10);
        let backoff_max = Duration::from_secs(30);
        Config {
            client_name: "mcp-client-rs".into(),
            client_version: env!("CARGO_PKG_VERSION").into(),
            capabilities: ClientCapabilities::default(),
            request_timeout,
            connect_timeout: Duration::from_secs(60),
            init_timeout,
            backoff_min: Duration::from_secs(1),
            backoff_max,
            backoff_jitter_pct: 20,
            send_attempts: 3,
            retry_delay: Duration::from_millis(10),
            retry_jitter_pct: 50,
            max_frame_bytes: 16 * 1024 * 1024,
            tombstone_ttl: Self::ttl_for(request_timeout, init_timeout, backoff_max),
            tombstone_sweep: Duration::from_secs(60),
            closing_exit: Duration::from_millis(100),
            max_server_requests: 64,
            max_session_reinits: 3,
            era: EraMode::default(),
            max_input_rounds: 10,
            max_round_inputs: 16,
            probe_timeout: Duration::from_secs(5),
            max_reissues: 2,
            listen_list_changed: true,
            max_relistens: 3,
            relisten_delay: Duration::from_secs(1),
            listen_stable: Duration::from_secs(60),
            session_stable: Duration::from_secs(60),
            max_authorizations: 3,
            read_window: 32,
            tasks: false,
            task_poll_min: Duration::from_millis(250),
            task_poll_max: Duration::from_secs(30),
            task_poll_default: Duration::from_secs(1),
            max_task_failures: 3,
            max_task_inputs: 64,
            max_waiting_calls: 1024,
        }
    }
}

impl Config {
    /// The tombstone TTL the seed design derives from the other timeouts: long enough that any
    /// answer the server could still send for an ended id arrives while it is remembered.
    pub fn ttl_for(request: Duration, init: Duration, backoff_max: Duration) -> Duration {
        request
            .saturating_add(init)
            .saturating_add(backoff_max)
            .saturating_add(Duration::from_secs(5))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_match_the_design() {
        let c = Config::default();
        assert_eq!(c.tombstone_ttl, Duration::from_secs(75));
        assert_eq!(c.max_frame_bytes, 16_777_216);
        assert_eq!(c.send_attempts, 3);
    }

    #[test]
    fn capabilities_decide_handled_methods() {
        let caps = ClientCapabilities {
            sampling: true,
            ..Default::default()
        };
        assert!(caps.handles("sampling/createMessage", None));
        assert!(!caps.handles("roots/list", None));
        assert!(!caps.handles("ping", None));
        let form = ClientCapabilities {
            elicitation: true,
            ..Default::default()
        };
        let url = serde_json::json!({"mode": "url", "url": "https://x"});
        assert!(form.handles("elicitation/create", None));
        assert!(!form.handles("elicitation/create", Some(&url)));
        assert_eq!(
            Config::ttl_for(Duration::MAX, Duration::ZERO, Duration::ZERO),
            Duration::MAX
        );
        assert_eq!(caps.to_json(), serde_json::json!({"sampling": {}}));
    }
}
