//! What the client keeps between authorizations: its registration at each authorization
//! server (by issuer) and its tokens for each MCP server (by canonical resource URI), behind
//! [`TokenStore`]. [`MemoryStore`] keeps them for the process's life; [`FileStore`] in one
//! JSON file readable by its owner only (`0600`), shared by the user's processes: each change
//! is merged, under a lock, into what the file holds (see [`mod@file`]).
//!
//! Secrets are [`Secret`]s: their `Debug` and `Display` never show the value.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

pub mod file;

pub use file::FileStore;

/// A credential (a token, a client secret): shown as `***` by `Debug` and `Display`; its
/// value only through [`Secret::expose`].
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    /// Wraps a credential.
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// The credential itself: for the one header or form field it belongs in, nowhere else.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

/// The client's identity at one authorization server.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientCredentials {
    /// The issuer it was made for (never used with another).
    pub issuer: String,
    /// The client id (a URL when it is a Client ID Metadata Document).
    pub client_id: String,
    /// The secret, for a confidential client.
    #[serde(default)]
    pub client_secret: Option<Secret>,
    /// `client_secret_basic`, `client_secret_post` or `none`, when the registration said.
    #[serde(default)]
    pub token_endpoint_auth_method: Option<String>,
}

/// Tokens for one MCP server from one authorization server.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Token {
    /// The issuer that granted it (a token is never sent after a migration to another).
    pub issuer: String,
    /// The RFC 8707 `resource` it was asked for (the metadata's string, verbatim), asked
    /// again on a refresh.
    #[serde(default)]
    pub resource: Option<String>,
    /// The bearer token.
    pub access_token: Secret,
    /// The refresh token, when one was granted.
    #[serde(default)]
    pub refresh_token: Option<Secret>,
    /// When the access token expires, in seconds since the Unix epoch (unknown: `None`).
    #[serde(default)]
    pub expires_at: Option<u64>,
    /// The scopes granted (or asked for, when the server did not say).
    #[serde(default)]
    pub scopes: Vec<String>,
}

impl Token {
    /// Whether the access token is past its expiry, or will be within `margin` of `now`.
    pub fn expires_within(&self, now: SystemTime, margin: Duration) -> bool {
        let Some(at) = self.expires_at else {
            return false;
        };
        let now = now.duration_since(UNIX_EPOCH).unwrap_or_default();
        now.saturating_add(margin) >= Duration::from_secs(at)
    }

    /// How long until it expires, from `now` (zero when past); `None` when unknown.
    pub fn expires_in(&self, now: SystemTime) -> Option<Duration> {
        let at = Duration::from_secs(self.expires_at?);
        let now = now.duration_since(UNIX_EPOCH).unwrap_or_default();
        Some(at.saturating_sub(now))
    }
}

/// Where registrations and tokens are kept. Implementations must be cheap and must not
/// block for long: they are called on the client's tasks.
pub trait TokenStore: Send + Sync + 'static {
    /// The registration at the authorization server `issuer`.
    fn client(&self, issuer: &str) -> Option<ClientCredentials>;
    /// Keeps a registration (replacing the issuer's previous one).
    fn set_client(&self, credentials: ClientCredentials);
    /// The tokens for the MCP server whose canonical URI is `resource`.
    fn token(&self, resource: &str) -> Option<Token>;
    /// Keeps tokens for `resource` (replacing the previous ones).
    fn set_token(&self, resource: &str, token: Token);
    /// Forgets the tokens for `resource` (a logout, a refused refresh).
    fn remove_token(&self, resource: &str);
}

/// What a store holds, as [`FileStore`] writes it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
struct Contents {
    #[serde(default)]
    clients: BTreeMap<String, ClientCredentials>,
    #[serde(default)]
    tokens: BTreeMap<String, Token>,
}

/// A store for the process's life (the default).
#[derive(Debug, Default)]
pub struct MemoryStore(Mutex<Contents>);

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Contents> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl TokenStore for MemoryStore {
    fn client(&self, issuer: &str) -> Option<ClientCredentials> {
        self.lock().clients.get(issuer).cloned()
    }
    fn set_client(&self, credentials: ClientCredentials) {
        self.lock()
            .clients
            .insert(credentials.issuer.clone(), credentials);
    }
    fn token(&self, resource: &str) -> Option<Token> {
        self.lock().tokens.get(resource).cloned()
    }
    fn set_token(&self, resource: &str, token: Token) {
        self.lock().tokens.insert(resource.to_owned(), token);
    }
    fn remove_token(&self, resource: &str) {
        self.lock().tokens.remove(resource);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(issuer: &str) -> Token {
        Token {
            issuer: issuer.into(),
            resource: Some("https://mcp.example/mcp".into()),
            access_token: Secret::new("at-123"),
            refresh_token: Some(Secret::new("rt-456")),
            expires_at: Some(1_000),
            scopes: vec!["a".into()],
        }
    }

    #[test]
    fn secrets_never_show() {
        let t = token("https://as.example");
        let shown = format!("{t:?} {}", t.access_token);
        assert!(
            !shown.contains("at-123") && !shown.contains("rt-456"),
            "{shown}"
        );
    }

    #[test]
    fn expiry_with_a_margin() {
        let t = token("i");
        let at = |s| UNIX_EPOCH + Duration::from_secs(s);
        assert!(!t.expires_within(at(900), Duration::from_secs(60)));
        assert!(t.expires_within(at(940), Duration::from_secs(60)));
        assert!(t.expires_within(at(2_000), Duration::ZERO));
        assert_eq!(t.expires_in(at(990)), Some(Duration::from_secs(10)));
        assert_eq!(t.expires_in(at(2_000)), Some(Duration::ZERO));
    }
}
