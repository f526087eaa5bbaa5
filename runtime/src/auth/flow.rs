//! The OAuth 2.1 authorization of an MCP client (the MCP specification's Authorization part):
//! from a server's challenge to a token, and from a token to a fresher one.
//!
//! [`OAuth::authorize`]: protected resource metadata (the challenge's `resource_metadata`,
//! else the well-known paths), its `resource` checked against the server; the authorization
//! server's metadata (RFC 8414 then OpenID Connect, in the specification's order), its
//! `issuer` compared as a string with the one the URL was built from; PKCE S256 required; the
//! client's identity (pre-registered, else a Client ID Metadata Document, else dynamic
//! registration), kept per issuer; the scopes (the challenge's, else the resource's
//! `scopes_supported`, else none; `offline_access` when the server offers it; the union with
//! what was held on a step-up); the user sent to the authorization URL through a
//! [`UserAgent`]; `state` and the RFC 9207 `iss` checked before the code is redeemed; the RFC
//! 8707 `resource` (the metadata's string, verbatim) on the authorization, token and refresh
//! requests; the token endpoint authentication the registration or the metadata names.
//!
//! PKCE, `state`, the authorization URL and the token requests are the `oauth2` crate's; its
//! HTTP goes through this client's `reqwest` client (no redirects followed, answers read up to
//! a bound). Values compared with what a server sent (the resource, the issuers, `iss`) are
//! kept as the strings received: a URL parser would add a `/` to a bare origin.
//!
//! No error and no log line holds a token, a code, a verifier or a client secret.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use oauth2::basic::{BasicClient, BasicErrorResponse, BasicTokenResponse};
use oauth2::{
    AuthType, AuthUrl, AuthorizationCode, ClientId, ClientSecret, CsrfToken, PkceCodeChallenge,
    RedirectUrl, RefreshToken, RequestTokenError, Scope, TokenResponse, TokenUrl,
};
use reqwest::Url;
use serde_json::{Value, json};

use super::challenge::Challenge;
use super::discovery::{
    ResourceMetadata, ServerMetadata, resource_matches, resource_metadata_urls,
    server_metadata_urls,
};
use super::policy::{self, Reachable, UrlRule, redact, redact_str};
use super::store::{ClientCredentials, MemoryStore, Secret, Token, TokenStore};

/// The most bytes of a metadata document, a registration or a token response read.
const MAX_BODY: usize = 1 << 20;
/// Bound on connecting to an authorization URL.
const CONNECT_BOUND: Duration = Duration::from_secs(10);
/// Bound on one authorization exchange, its answer read whole.
const EXCHANGE_BOUND: Duration = Duration::from_secs(30);

/// Why an authorization failed. Never holds a token, a code or a secret.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AuthError {
    /// No protected resource metadata at any of the places looked at.
    #[error("no protected resource metadata for {endpoint} (looked at {tried})")]
    NoResourceMetadata {
        /// The MCP server.
        endpoint: String,
        /// The URLs tried, comma-separated.
        tried: String,
    },
    /// The metadata's `resource` is not this server: its tokens are not for it.
    #[error("the protected resource metadata is for {resource}, not for {endpoint}")]
    ResourceMismatch {
        /// What the metadata says.
        resource: String,
        /// The MCP server.
        endpoint: String,
    },
    /// The resource names no authorization server.
    #[error("the protected resource metadata names no authorization server")]
    NoAuthorizationServer,
    /// No authorization server metadata at any of the places looked at.
    #[error("no authorization server metadata for issuer {issuer} (looked at {tried})")]
    NoServerMetadata {
        /// The issuer.
        issuer: String,
        /// The URLs tried, comma-separated.
        tried: String,
    },
    /// The metadata's `issuer` differs from the issuer its URL was built from (RFC 8414 §3.3).
    #[error("the authorization server metadata names issuer {found}, not {expected}")]
    IssuerMismatch {
        /// The issuer the URL was built from.
        expected: String,
        /// The metadata's.
        found: String,
    },
    /// The authorization server does not advertise PKCE with S256.
    #[error("the authorization server {issuer} does not advertise PKCE with S256")]
    NoPkce {
        /// The issuer.
        issuer: String,
    },
    /// No pre-registered credentials, no Client ID Metadata Document support, no registration.
    #[error(
        "no way to identify this client at {issuer}: no pre-registered credentials for it, \
         no Client ID Metadata Document support, no registration endpoint"
    )]
    NoClientIdentity {
        /// The issuer.
        issuer: String,
    },
    /// Dynamic client registration failed.
    #[error("client registration at {issuer} failed: {reason}")]
    Registration {
        /// The issuer.
        issuer: String,
        /// Why (a status and the server's error, never a secret).
        reason: String,
    },
    /// The user agent did not bring an authorization response back.
    #[error("the authorization was not completed: {0}")]
    UserAgent(String),
    /// The authorization response's `state` is not the one sent (or is missing).
    #[error("the authorization response's state does not match the request's")]
    StateMismatch,
    /// The authorization server said why it refused (`error` in the redirect).
    #[error("the authorization server refused: {error}{}", .description.as_deref().map(|d| format!(" ({d})")).unwrap_or_default())]
    Denied {
        /// The OAuth error code.
        error: String,
        /// `error_description`.
        description: Option<String>,
    },
    /// The response has no code.
    #[error("the authorization response has no code")]
    NoCode,
    /// RFC 9207: the server advertises `iss` in its responses and this one has none.
    #[error("the authorization response has no iss, though {expected} says it sends one")]
    MissingIss {
        /// The issuer.
        expected: String,
    },
    /// RFC 9207: the response's `iss` is not the issuer (compared as strings).
    #[error("the authorization response is from {found}, not from {expected}")]
    IssMismatch {
        /// The issuer.
        expected: String,
        /// The response's `iss`.
        found: String,
    },
    /// The token endpoint refused (its OAuth error).
    #[error("the token endpoint refused: {error}{}", .description.as_deref().map(|d| format!(" ({d})")).unwrap_or_default())]
    TokenRefused {
        /// The OAuth error code (`invalid_grant` for a dead refresh token).
        error: String,
        /// `error_description`.
        description: Option<String>,
    },
    /// The token endpoint's answer could not be used.
    #[error("the token endpoint's answer is not usable: {0}")]
    TokenResponse(String),
    /// There is nothing to refresh with.
    #[error("no refresh token")]
    NoRefreshToken,
    /// A URL a server named (or one built from it) breaks the authorization URL policy
    /// ([`super::policy`]): nothing was sent to it.
    #[error("refused the {what} URL {url}: {rule}")]
    UrlRefused {
        /// Which URL (`protected resource metadata`, `authorization endpoint`, …).
        what: &'static str,
        /// The URL, without user information, query or fragment.
        url: String,
        /// The rule it breaks.
        rule: UrlRule,
    },
    /// The server asks for a new authorization and this client's user agent cannot involve a
    /// person ([`UserAgent::interactive`] is `false`, or it declined in
    /// [`UserAgent::approve`]); nothing was fetched or registered.
    #[error("the server {endpoint} needs a new authorization, which needs a person: {reason}")]
    InteractionRequired {
        /// The MCP server, without user information, query or fragment.
        endpoint: String,
        /// Why no person could be asked.
        reason: String,
    },
    /// An HTTP exchange failed (connect, timeout, a body over the bound).
    #[error("HTTP error while authorizing ({what}): {reason}")]
    Http {
        /// Which request.
        what: &'static str,
        /// Why (never a secret: no URL query, no body).
        reason: String,
    },
}

impl AuthError {
    /// Whether the failure proves the held token (or refresh token) is dead, so that a new
    /// authorization, not a retry, is what can help.
    pub fn needs_new_authorization(&self) -> bool {
        matches!(self, AuthError::TokenRefused { error, .. } if error == "invalid_grant")
            || matches!(self, AuthError::NoRefreshToken)
    }
}

/// A boxed future, as the [`UserAgent`] returns.
pub type AuthFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, AuthError>> + Send + 'a>>;

/// How the user is sent to the authorization URL and how the redirect back is received: a
/// browser and a loopback listener (mcpc), an embedded web view, or a headless fetch
/// ([`HeadlessUserAgent`], for a server that redirects without a person).
pub trait UserAgent: Send + Sync + 'static {
    /// The redirect URI of the next authorization (registered with the server when the
    /// client registers; a loopback URI may differ by port from one authorization to the
    /// next, RFC 8252 §7.3).
    fn redirect_uri(&self) -> AuthFuture<'_, String>;

    /// Sends the user to `url` and returns the URL the authorization server redirected back
    /// to (with `code`, `state`, `iss` or `error` in its query). The flow gives it only URLs
    /// that passed the URL policy (`https`, or `http` to a loopback host).
    fn authorize(&self, url: Url) -> AuthFuture<'_, Url>;

    /// Whether a person can be involved at all (a browser opened, a prompt answered). `false`
    /// makes a refused token that cannot be refreshed fail at once with
    /// [`AuthError::InteractionRequired`], before any discovery. `true` by default.
    fn interactive(&self) -> bool {
        true
    }

    /// Asked once the authorization server `issuer` of the MCP server `endpoint` is known and
    /// its metadata checked, before registering or sending anyone anywhere: a user agent may
    /// ask the user whether to log in there ([`AuthError::InteractionRequired`] to decline).
    /// Agrees by default.
    fn approve<'a>(&'a self, endpoint: &'a Url, issuer: &'a Url) -> AuthFuture<'a, ()> {
        let _ = (endpoint, issuer);
        Box::pin(async { Ok(()) })
    }
}

/// A user agent without a user: it GETs the authorization URL itself, without following the
/// redirect, and takes the `Location` it is sent to. For authorization servers that grant
/// without a person (test servers, the conformance suite's); a real one answers with a login
/// page, which this reports as an error.
#[derive(Clone, Debug)]
pub struct HeadlessUserAgent {
    redirect_uri: String,
    http: reqwest::Client,
}

impl HeadlessUserAgent {
    /// One whose redirect URI is `redirect_uri` (never contacted).
    pub fn new(redirect_uri: impl Into<String>) -> Self {
        HeadlessUserAgent {
            redirect_uri: redirect_uri.into(),
            http: http_client(Reachable::ANY, EXCHANGE_BOUND),
        }
    }
}

impl UserAgent for HeadlessUserAgent {
    fn redirect_uri(&self) -> AuthFuture<'_, String> {
        Box::pin(async move { Ok(self.redirect_uri.clone()) })
    }

    fn authorize(&self, url: Url) -> AuthFuture<'_, Url> {
        Box::pin(async move {
            policy::check_scheme(&url).map_err(|rule| AuthError::UrlRefused {
                what: "authorization",
                url: redact(&url),
                rule,
            })?;
            let response = self
                .http
                .get(url)
                .send()
                .await
                .map_err(|e| http_error("authorization", &e))?;
            let status = response.status();
            if !status.is_redirection() {
                return Err(AuthError::UserAgent(format!(
                    "the authorization endpoint answered {status}, not a redirect (it needs a person)"
                )));
            }
            let location = response
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|v| v.to_str().ok())
                .ok_or_else(|| AuthError::UserAgent("a redirect without a Location".into()))?;
            Url::parse(location)
                .map_err(|_| AuthError::UserAgent("the redirect's Location is not a URL".into()))
        })
    }
}

/// The client's authorization settings: who it is, where it keeps what it gets, how it sends
/// the user to the authorization server. Cheap to clone (shared).
#[derive(Clone)]
pub struct OAuth {
    inner: Arc<Settings>,
}

struct Settings {
    client_name: String,
    pre_registered: Vec<ClientCredentials>,
    metadata_document: Option<String>,
    user_agent: Arc<dyn UserAgent>,
    store: Arc<dyn TokenStore>,
    application_type: &'static str,
    /// The HTTP clients of authorization, one per set of reachable address classes (each
    /// with its resolver under the address rule).
    clients: std::sync::Mutex<std::collections::HashMap<Reachable, reqwest::Client>>,
    /// Whether the address rule is off (every class but reserved ones reachable).
    allow_non_public: bool,
    /// Bound on one authorization exchange ([`EXCHANGE_BOUND`] by default).
    exchange_bound: Duration,
    /// One refresh at a time (concurrent requests of one client wait for it).
    refreshing: tokio::sync::Mutex<()>,
    /// The endpoints whose last refusal was answered with a refresh (a second refusal
    /// authorizes anew).
    refreshed_on_challenge: std::sync::Mutex<std::collections::HashSet<String>>,
    /// How long before its expiry a token is refreshed rather than sent.
    refresh_margin: Duration,
}

impl std::fmt::Debug for OAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuth")
            .field("client_name", &self.inner.client_name)
            .field("pre_registered", &self.inner.pre_registered)
            .field("metadata_document", &self.inner.metadata_document)
            .finish_non_exhaustive()
    }
}

/// Builds an [`OAuth`].
pub struct OAuthBuilder {
    settings: Settings,
}

impl OAuthBuilder {
    /// Credentials registered beforehand with the authorization server `issuer` (used only
    /// with it). Repeatable, one per issuer.
    pub fn pre_registered(
        mut self,
        issuer: impl Into<String>,
        client_id: impl Into<String>,
        client_secret: Option<String>,
    ) -> Self {
        self.settings.pre_registered.push(ClientCredentials {
            issuer: issuer.into(),
            client_id: client_id.into(),
            client_secret: client_secret.map(Secret::new),
            token_endpoint_auth_method: None,
        });
        self
    }

    /// The URL of this client's Client ID Metadata Document, used as its client id where the
    /// authorization server supports them (before dynamic registration).
    pub fn metadata_document(mut self, url: impl Into<String>) -> Self {
        self.settings.metadata_document = Some(url.into());
        self
    }

    /// Where registrations and tokens are kept ([`MemoryStore`] by default).
    pub fn store(mut self, store: Arc<dyn TokenStore>) -> Self {
        self.settings.store = store;
        self
    }

    /// The name registered with authorization servers ("mcp-runtime" by default).
    pub fn client_name(mut self, name: impl Into<String>) -> Self {
        self.settings.client_name = name.into();
        self
    }

    /// How long before its expiry a token is refreshed rather than sent (60 s).
    pub fn refresh_margin(mut self, margin: Duration) -> Self {
        self.settings.refresh_margin = margin;
        self
    }

    /// Lets authorization reach loopback, private and link-local addresses even when the MCP
    /// server is not on one (an authorization server on a company network behind a public
    /// MCP server). Off by default: such a URL is refused ([`AuthError::UrlRefused`]). The
    /// scheme rule (`https`, or `http` to a loopback host) still holds.
    pub fn allow_non_public_addresses(mut self) -> Self {
        self.settings.allow_non_public = true;
        self
    }

    /// Bounds each exchange with an authorization server or a metadata document, connecting
    /// included and the answer read whole (30 s by default; connecting alone at most 10 s).
    /// Not the wait for the user ([`UserAgent::authorize`] bounds that).
    pub fn http_timeout(mut self, bound: Duration) -> Self {
        self.settings.exchange_bound = bound;
        self
    }

    /// A web application rather than a native one (the registration's `application_type`).
    pub fn web_application(mut self) -> Self {
        self.settings.application_type = "web";
        self
    }

    /// The settings.
    pub fn build(self) -> OAuth {
        OAuth {
            inner: Arc::new(self.settings),
        }
    }
}

/// What an authorization needs to know of the connection that met the challenge.
#[derive(Clone, Debug, Default)]
pub struct AuthRequest {
    /// The challenge of the 401 or 403 (empty when the server gave none).
    pub challenge: Challenge,
    /// The scopes of the token that was refused with `insufficient_scope` (a step-up asks for
    /// their union with the challenge's).
    pub held_scopes: Vec<String>,
}

impl OAuth {
    /// Settings sending the user through `user_agent`.
    pub fn builder(user_agent: Arc<dyn UserAgent>) -> OAuthBuilder {
        OAuthBuilder {
            settings: Settings {
                client_name: "mcp-runtime".into(),
                pre_registered: Vec::new(),
                metadata_document: None,
                user_agent,
                store: Arc::new(MemoryStore::new()),
                application_type: "native",
                clients: std::sync::Mutex::default(),
                allow_non_public: false,
                exchange_bound: EXCHANGE_BOUND,
                refreshing: tokio::sync::Mutex::new(()),
                refreshed_on_challenge: std::sync::Mutex::default(),
                refresh_margin: Duration::from_secs(60),
            },
        }
    }

    /// The store of registrations and tokens.
    pub fn store(&self) -> &Arc<dyn TokenStore> {
        &self.inner.store
    }

    /// The HTTP client of authorization for URLs of the `reachable` classes (built once).
    fn client(&self, reachable: Reachable) -> reqwest::Client {
        self.inner
            .clients
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .entry(reachable)
            .or_insert_with(|| http_client(reachable, self.inner.exchange_bound))
            .clone()
    }

    /// What an authorization for the MCP server at `endpoint` may reach: public addresses
    /// and the classes of the endpoint's own (every class when the address rule is off).
    async fn guard(&self, endpoint: &Url) -> Guard {
        let reachable = if self.inner.allow_non_public {
            Reachable::ANY
        } else {
            match policy::addresses(endpoint).await {
                Ok(ips) => Reachable::beside(ips),
                Err(_) => Reachable::PUBLIC,
            }
        };
        Guard {
            reachable,
            http: self.client(reachable),
        }
    }

    /// The key tokens for the MCP server at `endpoint` are kept under: the endpoint without
    /// its fragment.
    pub fn key(endpoint: &Url) -> String {
        let mut url = endpoint.clone();
        url.set_fragment(None);
        url.to_string()
    }

    /// The held token for `endpoint`, if any.
    pub fn token(&self, endpoint: &Url) -> Option<Token> {
        self.inner.store.token(&Self::key(endpoint))
    }

    /// The access token to send to `endpoint` now: the held one, refreshed first when it
    /// expires within the refresh margin (one refresh at a time); `None` when there is none,
    /// or when it is expired and cannot be refreshed (a token known to be stale is never sent).
    pub fn bearer<'a>(
        &'a self,
        endpoint: &'a Url,
    ) -> Pin<Box<dyn Future<Output = Option<Secret>> + Send + 'a>> {
        Box::pin(self.bearer_now(endpoint))
    }

    async fn bearer_now(&self, endpoint: &Url) -> Option<Secret> {
        let margin = self.inner.refresh_margin;
        let fresh = |t: &Token| !t.expires_within(SystemTime::now(), margin);
        let held = self.token(endpoint)?;
        if fresh(&held) {
            return Some(held.access_token);
        }
        let _one = self.inner.refreshing.lock().await;
        // Another request may have refreshed it meanwhile.
        let held = self.token(endpoint)?;
        if fresh(&held) {
            return Some(held.access_token);
        }
        match self.refresh(endpoint).await {
            Ok(token) => Some(token.access_token),
            Err(e) => {
                tracing::warn!(target: "mcp::auth", error = %e, "the token could not be refreshed");
                let still = !held.expires_within(SystemTime::now(), Duration::ZERO);
                still.then_some(held.access_token)
            }
        }
    }

    /// Asks the MCP server at `endpoint` (with a `server/discover` POST and no token) whether
    /// it wants authorization, and authorizes when it answers 401 (or 403) with a challenge:
    /// the new token, or `None` when the server did not ask. What `mcpc login` does; a host
    /// may call it before connecting.
    pub async fn login(&self, endpoint: &Url) -> Result<Option<Token>, AuthError> {
        let body = json!({"jsonrpc": "2.0", "id": "login", "method": "server/discover",
        "params": {"_meta": {
            "io.modelcontextprotocol/protocolVersion": mcp_machine::MODERN_PROTOCOL_VERSIONS[0],
            "io.modelcontextprotocol/clientCapabilities": {},
        }}});
        let response = self
            .client(Reachable::ANY)
            .post(endpoint.clone())
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header(
                reqwest::header::ACCEPT,
                "application/json, text/event-stream",
            )
            .header(
                "mcp-protocol-version",
                mcp_machine::MODERN_PROTOCOL_VERSIONS[0],
            )
            .header("mcp-method", "server/discover")
            .body(body.to_string())
            .send()
            .await
            .map_err(|e| http_error("login", &e))?;
        let status = response.status().as_u16();
        if status != 401 && status != 403 {
            return Ok(None);
        }
        let challenge = Challenge::parse(
            response
                .headers()
                .get_all(reqwest::header::WWW_AUTHENTICATE)
                .iter()
                .filter_map(|v| v.to_str().ok()),
        )
        .unwrap_or_default();
        let request = AuthRequest {
            challenge,
            held_scopes: Vec::new(),
        };
        self.authorize(endpoint, &request).await.map(Some)
    }

    /// What the connection does when the MCP server at `endpoint` refused a request for want
    /// of authorization (`status` 401, or 403 with `insufficient_scope`; `www_authenticate` its
    /// challenge, the header values joined): a step-up authorizes with the union of the held
    /// scopes and the challenge's; a refused token is refreshed when its issuer still guards
    /// the resource (the resource metadata says so) and it can be, else forgotten (a
    /// migration: another issuer's credentials are never used) and a new authorization made.
    /// Whether the request is sent again, and how often, is the connection table's decision
    /// (`Config::max_authorizations`), not this method's.
    pub async fn on_challenge(
        &self,
        endpoint: &Url,
        status: u16,
        www_authenticate: &str,
    ) -> Result<Token, AuthError> {
        // The header values were joined with `, `: one header of several challenges.
        let challenge = Challenge::parse([www_authenticate]).unwrap_or_default();
        let held = self.token(endpoint);
        let step_up = status == 403 || challenge.is_insufficient_scope();
        let key = Self::key(endpoint);
        // A token refused right after a refresh made for a refusal: refreshing again would
        // only be refused again; authorize anew.
        let refreshed_before = self
            .inner
            .refreshed_on_challenge
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(&key);
        if !step_up && let Some(held) = &held {
            let guard = self.guard(endpoint).await;
            let resource = self.resource_metadata(&guard, endpoint, &challenge).await?;
            if !resource.authorization_servers.contains(&held.issuer) {
                tracing::info!(target: "mcp::auth", issuer = %held.issuer,
                    "the resource is no longer guarded by the token's issuer: authorizing anew");
                self.forget(endpoint);
            } else if held.refresh_token.is_some() && !refreshed_before {
                // One refresh at a time, with `bearer`'s (a rotated refresh token is spent once).
                let _one = self.inner.refreshing.lock().await;
                let refreshed = match self.token(endpoint) {
                    // Another refresh replaced the refused token meanwhile: that one is new.
                    Some(now) if now.access_token != held.access_token => Ok(now),
                    _ => self.refresh(endpoint).await,
                };
                match refreshed {
                    Ok(token) => {
                        self.inner
                            .refreshed_on_challenge
                            .lock()
                            .unwrap_or_else(std::sync::PoisonError::into_inner)
                            .insert(key);
                        return Ok(token);
                    }
                    Err(e) => tracing::info!(target: "mcp::auth", error = %e,
                        "the refused token could not be refreshed: authorizing anew"),
                }
            }
        }
        if !self.inner.user_agent.interactive() {
            return Err(AuthError::InteractionRequired {
                endpoint: redact(endpoint),
                reason: "this client's user agent is not interactive".into(),
            });
        }
        let held_scopes = match (step_up, &held) {
            (true, Some(held)) => held.scopes.clone(),
            _ => Vec::new(),
        };
        let request = AuthRequest {
            challenge,
            held_scopes,
        };
        self.authorize(endpoint, &request).await
    }

    /// Forgets the token for `endpoint` (a logout).
    pub fn forget(&self, endpoint: &Url) {
        self.inner.store.remove_token(&Self::key(endpoint));
    }

    /// Authorizes this client for the MCP server at `endpoint` after it answered with
    /// `request.challenge`, and keeps the token. Every step is bounded (HTTP timeouts, body
    /// bounds); the user agent's wait is its own.
    pub async fn authorize(
        &self,
        endpoint: &Url,
        request: &AuthRequest,
    ) -> Result<Token, AuthError> {
        let s = &self.inner;
        let guard = self.guard(endpoint).await;
        let resource = self
            .resource_metadata(&guard, endpoint, &request.challenge)
            .await?;
        let issuer = resource
            .authorization_servers
            .first()
            .cloned()
            .ok_or(AuthError::NoAuthorizationServer)?;
        let server = self.server_metadata(&guard, &issuer).await?;
        if !server.supports_s256() {
            return Err(AuthError::NoPkce {
                issuer: redact_str(&issuer),
            });
        }
        // Every endpoint the flow will use passes the URL policy before anything is sent.
        guard
            .check(&server.authorization_endpoint, "authorization endpoint")
            .await?;
        guard
            .check(&server.token_endpoint, "token endpoint")
            .await?;
        let issuer_url = guard.check(&server.issuer, "issuer").await?;
        s.user_agent.approve(endpoint, &issuer_url).await?;
        let redirect_uri = s.user_agent.redirect_uri().await?;
        let client = self.client_identity(&guard, &server, &redirect_uri).await?;
        let scopes = choose_scopes(request, &resource, &server);
        let oauth = oauth_client(&server, &client, Some(&redirect_uri))?;
        let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
        let mut authorization = oauth
            .authorize_url(CsrfToken::new_random)
            .set_pkce_challenge(challenge)
            .add_extra_param("resource", resource.resource.clone());
        if !scopes.is_empty() {
            authorization = authorization.add_scope(Scope::new(scopes.join(" ")));
        }
        let (url, state) = authorization.url();
        let back = s.user_agent.authorize(url).await?;
        let code = check_response(&back, &state, &server)?;
        let response = oauth
            .exchange_code(AuthorizationCode::new(code))
            .set_pkce_verifier(verifier)
            .add_extra_param("resource", resource.resource.clone())
            .request_async(&Http(guard.http.clone()))
            .await
            .map_err(token_error)?;
        let mut token = token_of(&response, &server.issuer, &scopes, None);
        token.resource = Some(resource.resource.clone());
        s.store.set_token(&Self::key(endpoint), token.clone());
        tracing::info!(target: "mcp::auth", issuer = %server.issuer, scopes = %token.scopes.join(" "),
            "authorized");
        Ok(token)
    }

    /// Exchanges the held refresh token of `endpoint` for a new token (the RFC 8707 `resource`
    /// again) and keeps it; a refused refresh forgets the token (the caller authorizes anew:
    /// [`AuthError::needs_new_authorization`]).
    pub async fn refresh(&self, endpoint: &Url) -> Result<Token, AuthError> {
        let s = &self.inner;
        let key = Self::key(endpoint);
        let held = s.store.token(&key).ok_or(AuthError::NoRefreshToken)?;
        let refresh = held
            .refresh_token
            .clone()
            .ok_or(AuthError::NoRefreshToken)?;
        let guard = self.guard(endpoint).await;
        let server = self.server_metadata(&guard, &held.issuer).await?;
        guard
            .check(&server.token_endpoint, "token endpoint")
            .await?;
        let resource = held.resource.clone();
        let client = self
            .known_identity(&server)
            .ok_or_else(|| AuthError::NoClientIdentity {
                issuer: server.issuer.clone(),
            })?;
        let oauth = oauth_client(&server, &client, None)?;
        let token = RefreshToken::new(refresh.expose().to_owned());
        let mut exchange = oauth.exchange_refresh_token(&token);
        if let Some(resource) = resource {
            exchange = exchange.add_extra_param("resource", resource);
        }
        let result = exchange.request_async(&Http(guard.http.clone())).await;
        match result.map_err(token_error) {
            Ok(response) => {
                let token = token_of(&response, &server.issuer, &held.scopes, Some(&held));
                s.store.set_token(&key, token.clone());
                Ok(token)
            }
            Err(e) => {
                if e.needs_new_authorization() {
                    s.store.remove_token(&key);
                }
                Err(e)
            }
        }
    }

    /// The protected resource metadata of `endpoint`, checked to be for it.
    async fn resource_metadata(
        &self,
        guard: &Guard,
        endpoint: &Url,
        challenge: &Challenge,
    ) -> Result<ResourceMetadata, AuthError> {
        let urls: Vec<String> = match &challenge.resource_metadata {
            Some(url) => vec![url.clone()],
            None => resource_metadata_urls(endpoint)
                .into_iter()
                .map(String::from)
                .collect(),
        };
        for url in &urls {
            let Some(doc) = self
                .fetch_json(guard, url, "protected resource metadata")
                .await?
            else {
                continue;
            };
            let Ok(metadata) = serde_json::from_value::<ResourceMetadata>(doc) else {
                continue;
            };
            if !resource_matches(&metadata.resource, endpoint) {
                return Err(AuthError::ResourceMismatch {
                    resource: redact_str(&metadata.resource),
                    endpoint: redact(endpoint),
                });
            }
            return Ok(metadata);
        }
        Err(AuthError::NoResourceMetadata {
            endpoint: redact(endpoint),
            tried: redacted_list(&urls),
        })
    }

    /// The metadata of the authorization server `issuer`, its `issuer` the same string.
    async fn server_metadata(
        &self,
        guard: &Guard,
        issuer: &str,
    ) -> Result<ServerMetadata, AuthError> {
        let parsed = guard.check(issuer, "issuer").await?;
        let urls: Vec<String> = server_metadata_urls(&parsed)
            .into_iter()
            .map(String::from)
            .collect();
        for url in &urls {
            let Some(doc) = self
                .fetch_json(guard, url, "authorization server metadata")
                .await?
            else {
                continue;
            };
            let Ok(metadata) = serde_json::from_value::<ServerMetadata>(doc) else {
                continue;
            };
            if metadata.issuer != issuer {
                return Err(AuthError::IssuerMismatch {
                    expected: redact_str(issuer),
                    found: redact_str(&metadata.issuer),
                });
            }
            return Ok(metadata);
        }
        Err(AuthError::NoServerMetadata {
            issuer: redact_str(issuer),
            tried: redacted_list(&urls),
        })
    }

    /// The client's credentials at `server`: held, pre-registered, a metadata document, or
    /// registered now.
    async fn client_identity(
        &self,
        guard: &Guard,
        server: &ServerMetadata,
        redirect_uri: &str,
    ) -> Result<ClientCredentials, AuthError> {
        let s = &self.inner;
        let issuer = &server.issuer;
        if let Some(known) = self.known_identity(server) {
            return Ok(known);
        }
        let Some(endpoint) = &server.registration_endpoint else {
            return Err(AuthError::NoClientIdentity {
                issuer: issuer.clone(),
            });
        };
        let credentials = self.register(guard, server, endpoint, redirect_uri).await?;
        s.store.set_client(credentials.clone());
        Ok(credentials)
    }

    /// The client's credentials at `server` without registering: pre-registered for its
    /// issuer, held from an earlier registration, or a metadata document it supports.
    fn known_identity(&self, server: &ServerMetadata) -> Option<ClientCredentials> {
        let s = &self.inner;
        let issuer = &server.issuer;
        if let Some(pre) = s.pre_registered.iter().find(|c| &c.issuer == issuer) {
            return Some(pre.clone());
        }
        if let Some(held) = s.store.client(issuer) {
            return Some(held);
        }
        match &s.metadata_document {
            Some(document) if server.client_id_metadata_document_supported == Some(true) => {
                Some(ClientCredentials {
                    issuer: issuer.clone(),
                    client_id: document.clone(),
                    client_secret: None,
                    token_endpoint_auth_method: Some("none".into()),
                })
            }
            _ => None,
        }
    }

    /// Dynamic client registration (RFC 7591).
    async fn register(
        &self,
        guard: &Guard,
        server: &ServerMetadata,
        endpoint: &str,
        redirect_uri: &str,
    ) -> Result<ClientCredentials, AuthError> {
        let endpoint = guard.check(endpoint, "registration endpoint").await?;
        let s = &self.inner;
        let failed = |reason: String| AuthError::Registration {
            issuer: server.issuer.clone(),
            reason,
        };
        let body = json!({
            "client_name": s.client_name,
            "redirect_uris": [redirect_uri],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
            "application_type": s.application_type,
        });
        let response = guard
            .http
            .post(endpoint)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header(reqwest::header::ACCEPT, "application/json")
            .body(body.to_string())
            .send()
            .await
            .map_err(|e| http_error("registration", &e))?;
        let status = response.status();
        let bytes = read_bounded(response, "registration").await?;
        let doc: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        if !status.is_success() {
            let error = doc["error"].as_str().unwrap_or("no OAuth error");
            return Err(failed(format!("{status}: {}", printable(error))));
        }
        let client_id = doc["client_id"]
            .as_str()
            .ok_or_else(|| failed("the answer has no client_id".into()))?;
        Ok(ClientCredentials {
            issuer: server.issuer.clone(),
            client_id: client_id.to_owned(),
            client_secret: doc["client_secret"].as_str().map(Secret::new),
            token_endpoint_auth_method: doc["token_endpoint_auth_method"]
                .as_str()
                .map(str::to_owned),
        })
    }

    /// A JSON document at `url`: `None` for a 4xx or 5xx or a body that is not JSON (the next
    /// place is tried), an error when the exchange itself fails.
    async fn fetch_json(
        &self,
        guard: &Guard,
        url: &str,
        what: &'static str,
    ) -> Result<Option<Value>, AuthError> {
        let url = guard.check(url, what).await?;
        let response = match guard.http.get(url.clone()).send().await {
            Ok(r) => r,
            Err(e) if e.is_builder() => return Ok(None),
            Err(e) => return Err(http_error(what, &e)),
        };
        if response.status().is_redirection() {
            // Redirects are never followed: a document is where its URL says, or nowhere.
            let to = response
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|v| v.to_str().ok())
                .map_or_else(|| "elsewhere".to_owned(), redact_str);
            return Err(AuthError::Http {
                what,
                reason: format!(
                    "{} answered with a redirect (HTTP {}) to {to}: redirects are not followed",
                    redact(&url),
                    response.status().as_u16()
                ),
            });
        }
        if !response.status().is_success() {
            return Ok(None);
        }
        let bytes = read_bounded(response, what).await?;
        Ok(serde_json::from_slice(&bytes).ok())
    }
}

/// The scopes to ask for: the challenge's, else the resource's `scopes_supported`, else none;
/// on a step-up their union with what was held; `offline_access` when the server offers it.
fn choose_scopes(
    request: &AuthRequest,
    resource: &ResourceMetadata,
    server: &ServerMetadata,
) -> Vec<String> {
    let mut scopes = request.challenge.scopes();
    if scopes.is_empty() {
        scopes = resource.scopes_supported.clone().unwrap_or_default();
    }
    if request.challenge.is_insufficient_scope() {
        for held in &request.held_scopes {
            if !scopes.contains(held) {
                scopes.insert(0, held.clone());
            }
        }
    }
    if !scopes.is_empty()
        && server.offers_scope("offline_access")
        && !scopes.iter().any(|s| s == "offline_access")
    {
        scopes.push("offline_access".into());
    }
    scopes
}

/// The authorization response's code, once its `state`, `error` and `iss` are checked.
fn check_response(
    back: &Url,
    state: &CsrfToken,
    server: &ServerMetadata,
) -> Result<String, AuthError> {
    let get = |name: &str| {
        back.query_pairs()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.into_owned())
    };
    if get("state").as_deref() != Some(state.secret().as_str()) {
        return Err(AuthError::StateMismatch);
    }
    if let Some(error) = get("error") {
        return Err(AuthError::Denied {
            error: printable(&error),
            description: get("error_description").map(|d| printable(&d)),
        });
    }
    match get("iss") {
        Some(iss) if iss != server.issuer => {
            return Err(AuthError::IssMismatch {
                expected: server.issuer.clone(),
                found: printable(&iss),
            });
        }
        None if server.requires_iss() => {
            return Err(AuthError::MissingIss {
                expected: server.issuer.clone(),
            });
        }
        _ => {}
    }
    get("code").ok_or(AuthError::NoCode)
}

type Oauth2Client = oauth2::Client<
    BasicErrorResponse,
    BasicTokenResponse,
    oauth2::basic::BasicTokenIntrospectionResponse,
    oauth2::StandardRevocableToken,
    oauth2::basic::BasicRevocationErrorResponse,
    oauth2::EndpointSet,
    oauth2::EndpointNotSet,
    oauth2::EndpointNotSet,
    oauth2::EndpointNotSet,
    oauth2::EndpointSet,
>;

/// The `oauth2` client for `server` as `client`, authenticating at the token endpoint as the
/// registration or, failing that, the metadata says.
fn oauth_client(
    server: &ServerMetadata,
    client: &ClientCredentials,
    redirect_uri: Option<&str>,
) -> Result<Oauth2Client, AuthError> {
    let bad = |what: &str| AuthError::NoServerMetadata {
        issuer: server.issuer.clone(),
        tried: format!("its {what} is not a URL"),
    };
    let mut oauth = BasicClient::new(ClientId::new(client.client_id.clone()))
        .set_auth_uri(
            AuthUrl::new(server.authorization_endpoint.clone())
                .map_err(|_| bad("authorization_endpoint"))?,
        )
        .set_token_uri(
            TokenUrl::new(server.token_endpoint.clone()).map_err(|_| bad("token_endpoint"))?,
        );
    if let Some(uri) = redirect_uri {
        oauth = oauth.set_redirect_uri(
            RedirectUrl::new(uri.to_owned())
                .map_err(|_| AuthError::UserAgent("the redirect URI is not a URL".into()))?,
        );
    }
    let method = auth_method(server, client);
    if let (Some(secret), true) = (&client.client_secret, method != "none") {
        oauth = oauth.set_client_secret(ClientSecret::new(secret.expose().to_owned()));
    }
    Ok(oauth.set_auth_type(if method == "client_secret_basic" {
        AuthType::BasicAuth
    } else {
        AuthType::RequestBody
    }))
}

/// How the client authenticates at the token endpoint: what its registration says (when the
/// server lists it, or lists nothing); else, with a secret, `client_secret_basic`,
/// `client_secret_post` or `none`, the first the server lists (basic when it lists nothing);
/// without a secret, `none`.
fn auth_method(server: &ServerMetadata, client: &ClientCredentials) -> &'static str {
    const KNOWN: [&str; 3] = ["client_secret_basic", "client_secret_post", "none"];
    let listed = |m: &str| {
        server
            .token_endpoint_auth_methods_supported
            .as_ref()
            .is_none_or(|l| l.iter().any(|x| x == m))
    };
    if let Some(m) = &client.token_endpoint_auth_method
        && let Some(known) = KNOWN.iter().find(|k| *k == m)
        && listed(known)
    {
        return known;
    }
    if client.client_secret.is_none() {
        return "none";
    }
    match &server.token_endpoint_auth_methods_supported {
        None => "client_secret_basic",
        Some(_) => KNOWN.into_iter().find(|m| listed(m)).unwrap_or("none"),
    }
}

/// The kept token of a token response (the scopes asked for when it names none; a refresh
/// that returns no refresh token keeps the old one).
fn token_of(
    response: &BasicTokenResponse,
    issuer: &str,
    asked: &[String],
    previous: Option<&Token>,
) -> Token {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let scopes = match response.scopes() {
        Some(s) => s.iter().map(|s| s.to_string()).collect(),
        None => asked.to_vec(),
    };
    Token {
        issuer: issuer.to_owned(),
        resource: previous.and_then(|p| p.resource.clone()),
        access_token: Secret::new(response.access_token().secret().clone()),
        refresh_token: response
            .refresh_token()
            .map(|r| Secret::new(r.secret().clone()))
            .or_else(|| previous.and_then(|p| p.refresh_token.clone())),
        // Saturated: a server's `expires_in` of 2^64-1 s is "never", not an overflow.
        expires_at: response
            .expires_in()
            .map(|d| now.saturating_add(d).as_secs()),
        scopes,
    }
}

/// A token request's failure, without its body.
fn token_error(e: RequestTokenError<AuthError, BasicErrorResponse>) -> AuthError {
    match e {
        RequestTokenError::ServerResponse(r) => AuthError::TokenRefused {
            error: printable(r.error().as_ref()),
            description: r.error_description().map(|d| printable(d)),
        },
        RequestTokenError::Request(e) => e,
        RequestTokenError::Parse(e, _body) => {
            AuthError::TokenResponse(format!("not a token response (at {})", e.path()))
        }
        RequestTokenError::Other(reason) => AuthError::TokenResponse(printable(&reason)),
    }
}

/// The HTTP client of authorization: no redirects followed, a bound on connecting and on
/// every exchange (body included), its resolver under the address rule for `reachable`.
fn http_client(reachable: Reachable, bound: Duration) -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(CONNECT_BOUND.min(bound))
        .timeout(bound)
        .dns_resolver(policy::resolver(reachable))
        .build()
        .unwrap_or_default()
}

/// What one authorization request may reach, and the client that reaches only that.
struct Guard {
    reachable: Reachable,
    http: reqwest::Client,
}

impl Guard {
    /// `url` parsed and checked against the URL policy ([`policy::check`]).
    async fn check(&self, url: &str, what: &'static str) -> Result<Url, AuthError> {
        let parsed = Url::parse(url).map_err(|_| AuthError::UrlRefused {
            what,
            url: redact_str(url),
            rule: UrlRule::NotAUrl,
        })?;
        policy::check(&parsed, self.reachable)
            .await
            .map_err(|rule| {
                tracing::warn!(target: "mcp::auth", what, url = %redact(&parsed), %rule,
                    "an authorization URL was refused");
                AuthError::UrlRefused {
                    what,
                    url: redact(&parsed),
                    rule,
                }
            })?;
        Ok(parsed)
    }
}

/// The `oauth2` crate's HTTP client: ours (its futures are `Send`).
struct Http(reqwest::Client);

impl<'c> oauth2::AsyncHttpClient<'c> for Http {
    type Error = AuthError;
    type Future =
        Pin<Box<dyn Future<Output = Result<oauth2::HttpResponse, AuthError>> + Send + 'static>>;

    fn call(&'c self, request: oauth2::HttpRequest) -> Self::Future {
        let client = self.0.clone();
        Box::pin(async move { send(&client, request).await })
    }
}

/// One `oauth2` request through `http`, the answer read up to [`MAX_BODY`].
async fn send(
    http: &reqwest::Client,
    request: oauth2::HttpRequest,
) -> Result<oauth2::HttpResponse, AuthError> {
    let request = reqwest::Request::try_from(request).map_err(|e| http_error("token", &e))?;
    let response = http
        .execute(request)
        .await
        .map_err(|e| http_error("token", &e))?;
    let mut builder = http::Response::builder().status(response.status());
    for (name, value) in response.headers() {
        builder = builder.header(name, value);
    }
    let body = read_bounded(response, "token").await?;
    builder
        .body(body)
        .map_err(|_| AuthError::TokenResponse("a malformed answer".into()))
}

async fn read_bounded(
    response: reqwest::Response,
    what: &'static str,
) -> Result<Vec<u8>, AuthError> {
    use futures_util::StreamExt;
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| http_error(what, &e))?;
        if body.len() + chunk.len() > MAX_BODY {
            return Err(AuthError::Http {
                what,
                reason: format!("the answer is over {MAX_BODY} bytes"),
            });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// A reqwest error without its URL (a query could hold a code or a state).
fn http_error(what: &'static str, e: &reqwest::Error) -> AuthError {
    let reason = if e.is_timeout() {
        "timed out".to_owned()
    } else if e.is_connect() {
        "could not connect".to_owned()
    } else {
        let mut s = without_url(e);
        s.truncate(200);
        s
    };
    AuthError::Http { what, reason }
}

/// URLs as an error lists them: each without user information, query or fragment.
fn redacted_list(urls: &[String]) -> String {
    urls.iter()
        .map(|u| redact_str(u))
        .collect::<Vec<_>>()
        .join(", ")
}

/// What a server sent, made safe to show: control characters dropped, at most 200 characters.
fn printable(s: &str) -> String {
    s.chars().filter(|c| !c.is_control()).take(200).collect()
}

/// A reqwest error's message without the URL it names.
fn without_url(e: &reqwest::Error) -> String {
    let shown = e.to_string();
    match e.url() {
        Some(url) => shown.replace(url.as_str(), "<url>"),
        None => shown,
    }
}
