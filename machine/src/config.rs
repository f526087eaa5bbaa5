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
}

impl ClientCapabilities {
    /// Whether a server request with this method (and, for elicitation, this mode) is one the
    /// declared capabilities promise to answer. An elicitation without `mode` is form mode.
    pub fn handles(&self, method: &str, params: Option<&serde_json::Value>) -> bool {
        match method {
            "sampling/createMessage" => self.sampling,
            "roots/list" => self.roots,
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
        serde_json::Value::Object(caps)
    }
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
