//! The OAuth 2.1 authorization of `mcp_runtime::auth` against a scripted authorization
//! server on localhost (one server: the MCP endpoint, its protected resource metadata, the
//! authorization server's metadata and endpoints), headless: its authorization endpoint
//! redirects at once.
//!
//! Checked: the discovery order (the challenge's metadata URL; the well-known paths; RFC 8414
//! then OpenID Connect for an issuer with a path, never the root), the checks that end an
//! authorization before a token is asked for (a resource for another server, an issuer that
//! differs, a state or `iss` that does not match, a missing `iss` the server promised, no
//! PKCE S256), the requests themselves (PKCE S256 and a verifier that matches, `state`, the
//! RFC 8707 `resource` verbatim on the authorization, token and refresh requests, the scopes,
//! registration with `application_type`, the token endpoint authentication), the token kept
//! and refreshed, a refused refresh forgetting it, and no secret in any error.

mod scripted_http;

use std::sync::Arc;

use mcp_runtime::auth::{
    AuthError, AuthRequest, Challenge, HeadlessUserAgent, MemoryStore, OAuth, TokenStore,
};
use reqwest::Url;
use scripted_http::{Answer, Log, Script, Seen, serve};
use serde_json::{Value, json};

const REDIRECT: &str = "http://localhost:3000/callback";

/// How the scripted authorization server behaves.
#[derive(Clone)]
struct Server {
    /// Where the resource metadata is served (a path).
    prm_path: &'static str,
    /// The issuer's path ("" or "/tenant1").
    issuer_path: &'static str,
    /// Where the authorization server metadata is served (a path).
    as_path: &'static str,
    /// The `issuer` the metadata states (`None`: the right one).
    stated_issuer: Option<String>,
    /// The resource the metadata states (`None`: the endpoint).
    stated_resource: Option<String>,
    /// Extra members of the authorization server metadata.
    as_extra: Value,
    /// The resource metadata's `scopes_supported`.
    scopes_supported: Option<Value>,
    /// The `iss` of the redirect: the issuer, none, or this.
    iss: Iss,
    /// The token endpoint answers this error instead.
    token_error: Option<&'static str>,
    /// A registration's extra members (`token_endpoint_auth_method`, …).
    registration: Value,
    /// The tokens' `expires_in`.
    expires_in: u64,
    /// `tools/call` needs the `mcp:write` scope: without it, 403 `insufficient_scope`.
    calls_need_write: bool,
    /// `tools/call` refuses (401) a token from the authorization code grant: only a
    /// refreshed one is taken (a token revoked mid-connection that a refresh replaces).
    calls_need_refreshed: bool,
    /// The scopes of the last authorization request (what the next code grants).
    granted: Arc<std::sync::Mutex<String>>,
}

#[derive(Clone)]
enum Iss {
    Right,
    Missing,
    /// The issuer with a `/` after it: another string.
    Slash,
    Other(String),
}

impl Default for Server {
    fn default() -> Self {
        Server {
            prm_path: "/.well-known/oauth-protected-resource/mcp",
            issuer_path: "",
            as_path: "/.well-known/oauth-authorization-server",
            stated_issuer: None,
            stated_resource: None,
            as_extra: json!({}),
            scopes_supported: None,
            iss: Iss::Right,
            token_error: None,
            registration: json!({"client_secret": "reg-secret-1"}),
            expires_in: 3600,
            calls_need_write: false,
            calls_need_refreshed: false,
            granted: Arc::default(),
        }
    }
}

/// The base URL of the server that saw `req` (`http://127.0.0.1:PORT`).
fn base(req: &Seen) -> String {
    format!("http://{}", req.header("host").unwrap())
}

fn script(server: Server) -> Script {
    Arc::new(move |req, _| {
        let base = base(req);
        let issuer = format!("{base}{}", server.issuer_path);
        let path = req.path().to_owned();
        if path == server.prm_path {
            let mut prm = json!({
                "resource": server.stated_resource.clone().unwrap_or(format!("{base}/mcp")),
                "authorization_servers": [issuer],
            });
            if let Some(s) = &server.scopes_supported {
                prm["scopes_supported"] = s.clone();
            }
            return Answer::Json(prm, vec![]);
        }
        if path == server.as_path {
            let mut meta = json!({
                "issuer": server.stated_issuer.clone().unwrap_or(issuer.clone()),
                "authorization_endpoint": format!("{issuer}/authorize"),
                "token_endpoint": format!("{issuer}/token"),
                "registration_endpoint": format!("{issuer}/register"),
                "code_challenge_methods_supported": ["S256"],
                "authorization_response_iss_parameter_supported": true,
                "token_endpoint_auth_methods_supported": ["none"],
            });
            for (k, v) in server.as_extra.as_object().unwrap() {
                if v.is_null() {
                    meta.as_object_mut().unwrap().remove(k);
                } else {
                    meta[k] = v.clone();
                }
            }
            return Answer::Json(meta, vec![]);
        }
        if path == format!("{}/register", server.issuer_path) {
            let mut reg = json!({"client_id": "reg-client-1"});
            for (k, v) in server.registration.as_object().unwrap() {
                reg[k] = v.clone();
            }
            return Answer::Json(reg, vec![]);
        }
        if path == format!("{}/authorize", server.issuer_path) {
            *server.granted.lock().unwrap() = req.param("scope").unwrap_or_default();
            let mut to = Url::parse(&req.param("redirect_uri").unwrap()).unwrap();
            to.query_pairs_mut().append_pair("code", "code-secret-1");
            if let Some(state) = req.param("state") {
                to.query_pairs_mut().append_pair("state", &state);
            }
            match &server.iss {
                Iss::Right => {
                    to.query_pairs_mut().append_pair("iss", &issuer);
                }
                Iss::Missing => {}
                Iss::Slash => {
                    to.query_pairs_mut()
                        .append_pair("iss", &format!("{issuer}/"));
                }
                Iss::Other(other) => {
                    to.query_pairs_mut().append_pair("iss", other);
                }
            }
            return Answer::Status(302, vec![("location", to.to_string())]);
        }
        if path == format!("{}/token", server.issuer_path) {
            if let Some(error) = server.token_error {
                return Answer::StatusJson(400, json!({"error": error}));
            }
            let n = req.text.len();
            // The token says what it is: `w` with the write scope, `r` when refreshed.
            let write = if server.granted.lock().unwrap().contains("mcp:write") {
                "w"
            } else {
                ""
            };
            let refreshed = if req.param("grant_type").as_deref() == Some("refresh_token") {
                "r"
            } else {
                ""
            };
            return Answer::Json(
                json!({"access_token": format!("access-secret-{write}{refreshed}{n}"), "token_type": "Bearer",
                    "expires_in": server.expires_in, "refresh_token": "refresh-secret-1"}),
                vec![],
            );
        }
        if path == "/mcp" {
            return mcp(req, &base, &server);
        }
        Answer::Status(404, vec![])
    })
}

/// The protected MCP endpoint: 401 with a challenge without a bearer token; a modern server
/// (2026-07-28) with one.
fn mcp(req: &Seen, base: &str, server: &Server) -> Answer {
    let token = req
        .header("authorization")
        .and_then(|h| h.strip_prefix("Bearer access-secret-").map(str::to_owned));
    let metadata = format!("{base}/.well-known/oauth-protected-resource/mcp");
    let refuse = |status: u16, error: &str, scope: &str| {
        Answer::StatusJsonHeaders(
            status,
            json!({"error": error}),
            vec![(
                "www-authenticate",
                format!(
                    "Bearer error=\"{error}\", scope=\"{scope}\", resource_metadata=\"{metadata}\""
                ),
            )],
        )
    };
    let Some(token) = token else {
        return refuse(401, "invalid_token", "mcp:basic");
    };
    if req.rpc_method() == Some("tools/call") {
        if server.calls_need_write && !token.starts_with('w') {
            return refuse(403, "insufficient_scope", "mcp:basic mcp:write");
        }
        if server.calls_need_refreshed && !token.trim_start_matches('w').starts_with('r') {
            return refuse(401, "invalid_token", "mcp:basic");
        }
    }
    let id = req.rpc_id();
    let result = match req.rpc_method() {
        Some("server/discover") => json!({"resultType": "complete",
            "supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "protected", "version": "1"}}}),
        Some("tools/list") => json!({"resultType": "complete", "tools": [
            {"name": "t", "inputSchema": {"type": "object"}}]}),
        Some(_) => json!({"resultType": "complete"}),
        None => return Answer::Status(202, vec![]),
    };
    Answer::Json(
        json!({"jsonrpc": "2.0", "id": id, "result": result}),
        vec![],
    )
}

async fn start(server: Server) -> (Url, Log) {
    let (url, log) = serve(script(server)).await;
    (Url::parse(&url).unwrap(), log)
}

fn client() -> (OAuth, Arc<MemoryStore>) {
    let store = Arc::new(MemoryStore::new());
    let oauth = OAuth::builder(Arc::new(HeadlessUserAgent::new(REDIRECT)))
        .store(store.clone())
        .build();
    (oauth, store)
}

fn challenge(endpoint: &Url, scope: Option<&str>) -> AuthRequest {
    let mut header = format!(
        "Bearer resource_metadata=\"{}\"",
        endpoint
            .join("/.well-known/oauth-protected-resource/mcp")
            .unwrap()
    );
    if let Some(scope) = scope {
        header.push_str(&format!(", scope=\"{scope}\""));
    }
    AuthRequest {
        challenge: Challenge::parse([header.as_str()]).unwrap(),
        held_scopes: vec![],
    }
}

fn seen(log: &Log) -> Vec<Seen> {
    log.lock().unwrap().clone()
}

fn paths(log: &Log) -> Vec<String> {
    seen(log).iter().map(|r| r.path().to_owned()).collect()
}

fn one(log: &Log, path: &str) -> Seen {
    let all: Vec<Seen> = seen(log).into_iter().filter(|r| r.path() == path).collect();
    assert_eq!(all.len(), 1, "{path}: {all:?}");
    all.into_iter().next().unwrap()
}

/// No secret of the flow in `shown`.
fn no_secret(shown: &str) {
    for secret in [
        "code-secret",
        "access-secret",
        "refresh-secret",
        "reg-secret",
    ] {
        assert!(!shown.contains(secret), "{secret} in {shown}");
    }
}

#[tokio::test]
async fn the_whole_flow_from_the_challenge_to_a_kept_token() {
    let (endpoint, log) = start(Server::default()).await;
    let (oauth, store) = client();
    let token = oauth
        .authorize(&endpoint, &challenge(&endpoint, Some("mcp:basic")))
        .await
        .unwrap();
    let resource = format!("{}mcp", endpoint.join("/").unwrap());
    assert_eq!(
        paths(&log),
        [
            "/.well-known/oauth-protected-resource/mcp",
            "/.well-known/oauth-authorization-server",
            "/register",
            "/authorize",
            "/token",
        ]
    );
    let register = one(&log, "/register");
    let body = register.body.clone().unwrap();
    assert_eq!(body["application_type"], "native");
    assert_eq!(body["redirect_uris"], json!([REDIRECT]));
    assert_eq!(
        body["grant_types"],
        json!(["authorization_code", "refresh_token"])
    );
    let authorize = one(&log, "/authorize");
    assert_eq!(authorize.param("response_type").as_deref(), Some("code"));
    assert_eq!(
        authorize.param("client_id").as_deref(),
        Some("reg-client-1")
    );
    assert_eq!(authorize.param("redirect_uri").as_deref(), Some(REDIRECT));
    assert_eq!(
        authorize.param("code_challenge_method").as_deref(),
        Some("S256")
    );
    assert_eq!(authorize.param("scope").as_deref(), Some("mcp:basic"));
    assert_eq!(authorize.param("resource"), Some(resource.clone()));
    assert!(authorize.param("state").is_some_and(|s| s.len() >= 16));
    let token_request = one(&log, "/token");
    assert_eq!(
        token_request.param("grant_type").as_deref(),
        Some("authorization_code")
    );
    assert_eq!(
        token_request.param("code").as_deref(),
        Some("code-secret-1")
    );
    assert_eq!(token_request.param("resource"), Some(resource.clone()));
    assert_eq!(
        token_request.param("redirect_uri").as_deref(),
        Some(REDIRECT)
    );
    // `none`: the client id in the body, no secret anywhere.
    assert_eq!(
        token_request.param("client_id").as_deref(),
        Some("reg-client-1")
    );
    assert!(token_request.param("client_secret").is_none());
    assert!(token_request.header("authorization").is_none());
    let verifier = token_request.param("code_verifier").unwrap();
    let expected = oauth2::PkceCodeChallenge::from_code_verifier_sha256(
        &oauth2::PkceCodeVerifier::new(verifier),
    );
    assert_eq!(
        authorize.param("code_challenge").as_deref(),
        Some(expected.as_str())
    );
    // Kept, under the endpoint; the issuer and the resource with it.
    assert_eq!(oauth.token(&endpoint), Some(token.clone()));
    assert_eq!(token.resource, Some(resource));
    assert_eq!(
        token.issuer,
        endpoint.join("/").unwrap().as_str().trim_end_matches('/')
    );
    assert_eq!(token.scopes, ["mcp:basic"]);
    assert!(token.expires_at.is_some());
    assert!(store.client(&token.issuer).is_some());
    no_secret(&format!("{token:?} {:?}", store.client(&token.issuer)));
}

#[tokio::test]
async fn a_refresh_asks_for_the_resource_again_and_a_refused_one_forgets_the_token() {
    let (endpoint, log) = start(Server::default()).await;
    let (oauth, _) = client();
    let first = oauth
        .authorize(&endpoint, &challenge(&endpoint, None))
        .await
        .unwrap();
    let second = oauth.refresh(&endpoint).await.unwrap();
    assert_ne!(first.access_token, second.access_token);
    let refresh = seen(&log)
        .into_iter()
        .filter(|r| r.path() == "/token")
        .nth(1)
        .unwrap();
    assert_eq!(
        refresh.param("grant_type").as_deref(),
        Some("refresh_token")
    );
    assert_eq!(
        refresh.param("refresh_token").as_deref(),
        Some("refresh-secret-1")
    );
    assert_eq!(refresh.param("resource"), first.resource);
    assert_eq!(oauth.token(&endpoint), Some(second));

    let (endpoint, _) = start(Server {
        token_error: Some("invalid_grant"),
        ..Server::default()
    })
    .await;
    let (oauth, store) = client();
    let mut token = first.clone();
    token.issuer = endpoint.origin().ascii_serialization();
    store.set_client(mcp_runtime::auth::ClientCredentials {
        issuer: token.issuer.clone(),
        client_id: "reg-client-1".into(),
        client_secret: None,
        token_endpoint_auth_method: None,
    });
    store.set_token(&OAuth::key(&endpoint), token);
    let err = oauth.refresh(&endpoint).await.unwrap_err();
    assert!(err.needs_new_authorization(), "{err:?}");
    assert_eq!(
        oauth.token(&endpoint),
        None,
        "a dead refresh token is forgotten"
    );
    no_secret(&format!("{err} {err:?}"));
}

#[tokio::test]
async fn well_known_paths_and_an_issuer_with_a_path_never_reach_the_root() {
    let (endpoint, log) = start(Server {
        prm_path: "/.well-known/oauth-protected-resource",
        issuer_path: "/tenant1",
        as_path: "/tenant1/.well-known/openid-configuration",
        ..Server::default()
    })
    .await;
    let (oauth, _) = client();
    oauth
        .authorize(&endpoint, &AuthRequest::default())
        .await
        .unwrap();
    assert_eq!(
        &paths(&log)[..5],
        [
            "/.well-known/oauth-protected-resource/mcp",
            "/.well-known/oauth-protected-resource",
            "/.well-known/oauth-authorization-server/tenant1",
            "/.well-known/openid-configuration/tenant1",
            "/tenant1/.well-known/openid-configuration",
        ]
    );
    // No scope anywhere: none asked for.
    assert_eq!(one(&log, "/tenant1/authorize").param("scope"), None);
}

#[tokio::test]
async fn scopes_from_the_metadata_offline_access_when_offered_and_the_union_on_a_step_up() {
    let (endpoint, log) = start(Server {
        scopes_supported: Some(json!(["mcp:read", "mcp:write"])),
        as_extra: json!({"scopes_supported": ["mcp:read", "offline_access"]}),
        ..Server::default()
    })
    .await;
    let (oauth, _) = client();
    oauth
        .authorize(&endpoint, &challenge(&endpoint, None))
        .await
        .unwrap();
    let step_up = AuthRequest {
        challenge: Challenge::parse([r#"Bearer error="insufficient_scope", scope="mcp:admin""#])
            .unwrap(),
        held_scopes: vec!["mcp:read".into()],
    };
    oauth.authorize(&endpoint, &step_up).await.unwrap();
    let scopes: Vec<_> = seen(&log)
        .into_iter()
        .filter(|r| r.path() == "/authorize")
        .map(|r| r.param("scope"))
        .collect();
    assert_eq!(
        scopes,
        [
            Some("mcp:read mcp:write offline_access".into()),
            Some("mcp:read mcp:admin offline_access".into())
        ]
    );
}

/// An authorization that must stop before any token is asked for; its error.
async fn refused(server: Server, oauth_of: fn() -> (OAuth, Arc<MemoryStore>)) -> (AuthError, Log) {
    let (endpoint, log) = start(server).await;
    let (oauth, _) = oauth_of();
    let err = oauth
        .authorize(&endpoint, &challenge(&endpoint, None))
        .await
        .unwrap_err();
    assert!(
        !paths(&log).iter().any(|p| p.ends_with("/token")),
        "no token request after {err:?}: {:?}",
        paths(&log)
    );
    assert_eq!(oauth.token(&endpoint), None);
    no_secret(&format!("{err} {err:?}"));
    (err, log)
}

#[tokio::test]
async fn a_resource_for_another_server_is_refused_before_anything_else() {
    let (err, log) = refused(
        Server {
            stated_resource: Some("https://evil.example.com/mcp".into()),
            ..Server::default()
        },
        client,
    )
    .await;
    assert!(matches!(err, AuthError::ResourceMismatch { .. }), "{err:?}");
    assert_eq!(paths(&log), ["/.well-known/oauth-protected-resource/mcp"]);
}

#[tokio::test]
async fn metadata_naming_another_issuer_is_refused() {
    let (err, log) = refused(
        Server {
            stated_issuer: Some("https://attacker.example.com".into()),
            ..Server::default()
        },
        client,
    )
    .await;
    assert!(matches!(err, AuthError::IssuerMismatch { .. }), "{err:?}");
    assert!(
        !paths(&log)
            .iter()
            .any(|p| p == "/authorize" || p == "/register")
    );
}

#[tokio::test]
async fn the_iss_of_the_response_is_compared_as_a_string() {
    let not_advertised = json!({"authorization_response_iss_parameter_supported": null});
    for (iss, extra) in [
        (Iss::Missing, json!({})),
        (Iss::Other("https://evil.example.com".into()), json!({})),
        (
            Iss::Other("https://evil.example.com".into()),
            not_advertised.clone(),
        ),
        (Iss::Slash, json!({})),
    ] {
        let missing = matches!(iss, Iss::Missing);
        let (err, _) = refused(
            Server {
                iss,
                as_extra: extra,
                ..Server::default()
            },
            client,
        )
        .await;
        if missing {
            assert!(matches!(err, AuthError::MissingIss { .. }), "{err:?}");
        } else {
            assert!(matches!(err, AuthError::IssMismatch { .. }), "{err:?}");
        }
    }
    // Not advertised and absent: it proceeds.
    let (endpoint, _) = start(Server {
        iss: Iss::Missing,
        as_extra: not_advertised,
        ..Server::default()
    })
    .await;
    let (oauth, _) = client();
    oauth
        .authorize(&endpoint, &challenge(&endpoint, None))
        .await
        .unwrap();
}

#[tokio::test]
async fn a_server_without_pkce_s256_is_refused() {
    let (err, _) = refused(
        Server {
            as_extra: json!({"code_challenge_methods_supported": ["plain"]}),
            ..Server::default()
        },
        client,
    )
    .await;
    assert!(matches!(err, AuthError::NoPkce { .. }), "{err:?}");
}

#[tokio::test]
async fn the_token_endpoint_authentication_follows_the_registration_and_the_metadata() {
    for (method, basic, post) in [
        ("client_secret_basic", true, false),
        ("client_secret_post", false, true),
        ("none", false, false),
    ] {
        let (endpoint, log) = start(Server {
            as_extra: json!({"token_endpoint_auth_methods_supported": [method]}),
            registration: json!({"client_secret": "reg-secret-1",
                "token_endpoint_auth_method": method}),
            ..Server::default()
        })
        .await;
        let (oauth, _) = client();
        oauth
            .authorize(&endpoint, &challenge(&endpoint, None))
            .await
            .unwrap();
        let token = one(&log, "/token");
        assert_eq!(
            token
                .header("authorization")
                .is_some_and(|h| h.starts_with("Basic ")),
            basic,
            "{method}: {token:?}"
        );
        assert_eq!(token.param("client_secret").is_some(), post, "{method}");
        assert_eq!(token.param("client_id").is_some(), !basic, "{method}");
    }
}

#[tokio::test]
async fn pre_registered_credentials_are_used_with_their_issuer_only() {
    let (endpoint, log) = start(Server {
        as_extra: json!({"registration_endpoint": null,
            "token_endpoint_auth_methods_supported": ["client_secret_basic"]}),
        ..Server::default()
    })
    .await;
    let issuer = endpoint.origin().ascii_serialization();
    let oauth = OAuth::builder(Arc::new(HeadlessUserAgent::new(REDIRECT)))
        .pre_registered("https://other.example", "wrong-client", Some("x".into()))
        .pre_registered(issuer, "pre-client", Some("pre-secret".into()))
        .build();
    oauth
        .authorize(&endpoint, &challenge(&endpoint, None))
        .await
        .unwrap();
    assert_eq!(
        one(&log, "/authorize").param("client_id").as_deref(),
        Some("pre-client")
    );
    let basic = one(&log, "/token")
        .header("authorization")
        .unwrap()
        .to_owned();
    let expected = format!("Basic {}", base64_of("pre-client:pre-secret"));
    assert_eq!(basic, expected);
    assert!(!paths(&log).iter().any(|p| p == "/register"));
}

#[tokio::test]
async fn a_metadata_document_is_the_client_id_where_supported() {
    let (endpoint, log) = start(Server {
        as_extra: json!({"client_id_metadata_document_supported": true}),
        ..Server::default()
    })
    .await;
    let oauth = OAuth::builder(Arc::new(HeadlessUserAgent::new(REDIRECT)))
        .metadata_document("https://client.example/metadata.json")
        .build();
    oauth
        .authorize(&endpoint, &challenge(&endpoint, None))
        .await
        .unwrap();
    assert_eq!(
        one(&log, "/authorize").param("client_id").as_deref(),
        Some("https://client.example/metadata.json")
    );
    assert!(!paths(&log).iter().any(|p| p == "/register"));
}

#[tokio::test]
async fn after_a_login_every_request_to_the_server_carries_the_token() {
    let (endpoint, log) = start(Server::default()).await;
    let (oauth, _) = client();
    let token = oauth
        .login(&endpoint)
        .await
        .unwrap()
        .expect("the server asked");
    let client = mcp_runtime::ClientBuilder::streamable_http(endpoint.as_str())
        .unwrap()
        .era(mcp_runtime::EraMode::Modern)
        .oauth(oauth.clone())
        .connect()
        .await
        .unwrap();
    assert_eq!(client.list_tools(None).await.unwrap().tools.len(), 1);
    client.stop().await;
    client.closed().await;
    let posts: Vec<Seen> = seen(&log)
        .into_iter()
        .filter(|r| r.path() == "/mcp")
        .collect();
    assert!(
        posts[0].header("authorization").is_none(),
        "the login's probe has none"
    );
    let bearer = format!("Bearer {}", token.access_token.expose());
    assert!(posts.len() >= 3, "{posts:?}");
    for post in &posts[1..] {
        assert_eq!(
            post.header("authorization"),
            Some(bearer.as_str()),
            "{post:?}"
        );
    }
    // Nothing else saw it.
    for r in seen(&log).iter().filter(|r| r.path() != "/mcp") {
        assert!(
            r.header("authorization")
                .is_none_or(|h| !h.contains("access-secret")),
            "{r:?}"
        );
    }
    // No login needed where nothing asks: a server that does not answer 401.
    assert!(
        oauth
            .login(&endpoint.join("/elsewhere").unwrap())
            .await
            .unwrap()
            .is_none()
    );
}

#[tokio::test]
async fn a_token_about_to_expire_is_refreshed_before_it_is_sent() {
    let (endpoint, log) = start(Server {
        expires_in: 30,
        ..Server::default()
    })
    .await;
    let (oauth, _) = client();
    let first = oauth.login(&endpoint).await.unwrap().unwrap();
    // Within the 60 s margin: refreshed, and the new one sent.
    let sent = oauth.bearer(&endpoint).await.unwrap();
    assert_ne!(sent, first.access_token);
    assert_eq!(Some(sent), oauth.token(&endpoint).map(|t| t.access_token));
    let grants: Vec<_> = seen(&log)
        .into_iter()
        .filter(|r| r.path() == "/token")
        .map(|r| r.param("grant_type"))
        .collect();
    assert_eq!(
        grants,
        [
            Some("authorization_code".into()),
            Some("refresh_token".into())
        ]
    );
    // An expired token that cannot be refreshed is not sent.
    let (endpoint, _) = start(Server {
        token_error: Some("invalid_grant"),
        ..Server::default()
    })
    .await;
    let (oauth, store) = client();
    let mut stale = first.clone();
    stale.issuer = endpoint.origin().ascii_serialization();
    stale.expires_at = Some(1);
    store.set_token(&OAuth::key(&endpoint), stale);
    assert_eq!(oauth.bearer(&endpoint).await, None);
}

/// A client of the MCP endpoint that authorizes with `oauth` when the server asks, connected.
async fn connected(endpoint: &Url, oauth: OAuth) -> mcp_runtime::Client {
    mcp_runtime::ClientBuilder::streamable_http(endpoint.as_str())
        .unwrap()
        .oauth(oauth)
        .connect()
        .await
        .unwrap()
}

/// The `tools/call` POSTs the MCP endpoint saw: the JSON-RPC id of each, and whether it
/// carried a token.
fn tool_calls(log: &Log) -> Vec<(Value, bool)> {
    seen(log)
        .iter()
        .filter(|r| r.path() == "/mcp" && r.rpc_method() == Some("tools/call"))
        .map(|r| (r.rpc_id(), r.header("authorization").is_some()))
        .collect()
}

#[tokio::test]
async fn the_connection_authorizes_when_asked_then_steps_up_for_a_call() {
    let (endpoint, log) = start(Server {
        calls_need_write: true,
        ..Server::default()
    })
    .await;
    let (oauth, store) = client();
    // No login first: the probe meets the 401, and the connection authorizes.
    let client = connected(&endpoint, oauth).await;
    assert_eq!(client.era(), Some(mcp_runtime::Era::Modern));
    let scopes = |store: &MemoryStore| store.token(&OAuth::key(&endpoint)).unwrap().scopes;
    assert_eq!(scopes(&store), ["mcp:basic"]);
    // The call meets a 403 asking for more scope: one more authorization (the union of
    // scopes), and the call sent again under a new id.
    client.call_tool("t", json!({})).await.unwrap();
    assert_eq!(scopes(&store), ["mcp:basic", "mcp:write"]);
    let calls = tool_calls(&log);
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert_ne!(calls[0].0, calls[1].0, "sent again under a new id");
    let authorizations: Vec<_> = seen(&log)
        .into_iter()
        .filter(|r| r.path() == "/authorize")
        .map(|r| r.param("scope"))
        .collect();
    assert_eq!(
        authorizations,
        [Some("mcp:basic".into()), Some("mcp:basic mcp:write".into())]
    );
    client.stop().await;
}

#[tokio::test]
async fn a_token_refused_mid_connection_is_refreshed_and_the_call_sent_again() {
    let (endpoint, log) = start(Server {
        calls_need_refreshed: true,
        ..Server::default()
    })
    .await;
    let (oauth, _) = client();
    oauth.login(&endpoint).await.unwrap().unwrap();
    let client = connected(&endpoint, oauth).await;
    client.call_tool("t", json!({})).await.unwrap();
    let grants: Vec<_> = seen(&log)
        .into_iter()
        .filter(|r| r.path() == "/token")
        .map(|r| r.param("grant_type"))
        .collect();
    // Refreshed, not authorized anew: the token's issuer still guards the resource.
    assert_eq!(
        grants,
        [
            Some("authorization_code".into()),
            Some("refresh_token".into())
        ]
    );
    assert_eq!(paths(&log).iter().filter(|p| *p == "/authorize").count(), 1);
    assert_eq!(tool_calls(&log).len(), 2);
    client.stop().await;
}

#[tokio::test]
async fn a_call_refused_again_after_an_authorization_is_answered_with_the_error() {
    // Calls need the write scope and a refreshed token: the step-up grants the scope, but the
    // call sent again is refused once more, and that refusal is its answer.
    let (endpoint, log) = start(Server {
        calls_need_write: true,
        calls_need_refreshed: true,
        ..Server::default()
    })
    .await;
    let (oauth, _) = client();
    let client = connected(&endpoint, oauth).await;
    let err = client.call_tool("t", json!({})).await.unwrap_err();
    assert!(
        matches!(err, mcp_runtime::Error::Unauthorized { .. }),
        "{err:?}"
    );
    no_secret(&format!("{err} {err:?}"));
    assert_eq!(tool_calls(&log).len(), 2);
    client.stop().await;
}

#[tokio::test]
async fn a_failed_authorization_is_the_connect_error() {
    let (endpoint, _) = start(Server {
        token_error: Some("access_denied"),
        ..Server::default()
    })
    .await;
    let (oauth, _) = client();
    let err = mcp_runtime::ClientBuilder::streamable_http(endpoint.as_str())
        .unwrap()
        .oauth(oauth)
        .connect()
        .await
        .unwrap_err();
    let mcp_runtime::Error::Connect(e) = &err else {
        panic!("{err:?}");
    };
    assert!(
        matches!(e.cause, mcp_runtime::Failure::Unauthorized { .. }),
        "{e:?}"
    );
    no_secret(&format!("{err} {err:?}"));
}

/// Standard base64 (for the expected Basic header).
fn base64_of(s: &str) -> String {
    const T: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let b = s.as_bytes();
    let mut out = String::new();
    for chunk in b.chunks(3) {
        let n =
            chunk.iter().fold(0u32, |acc, &x| (acc << 8) | u32::from(x)) << (8 * (3 - chunk.len()));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(T[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

// ---- The authorization URL policy (issue 29: a hostile server gets nothing) ----

/// A user agent that records what it was asked and never reaches anything itself.
#[derive(Default)]
struct Recording {
    interactive: bool,
    decline: bool,
    opened: std::sync::Mutex<Vec<String>>,
    approved: std::sync::Mutex<Vec<String>>,
}

impl mcp_runtime::auth::UserAgent for Recording {
    fn redirect_uri(&self) -> mcp_runtime::auth::flow::AuthFuture<'_, String> {
        Box::pin(async { Ok(REDIRECT.to_owned()) })
    }

    fn authorize(&self, url: Url) -> mcp_runtime::auth::flow::AuthFuture<'_, Url> {
        self.opened.lock().unwrap().push(url.to_string());
        Box::pin(async { Err(AuthError::UserAgent("recorded only".into())) })
    }

    fn interactive(&self) -> bool {
        self.interactive
    }

    fn approve<'a>(
        &'a self,
        _endpoint: &'a Url,
        issuer: &'a Url,
    ) -> mcp_runtime::auth::flow::AuthFuture<'a, ()> {
        self.approved.lock().unwrap().push(issuer.to_string());
        let decline = self.decline;
        Box::pin(async move {
            if decline {
                Err(AuthError::InteractionRequired {
                    endpoint: "x".into(),
                    reason: "declined".into(),
                })
            } else {
                Ok(())
            }
        })
    }
}

fn recording(agent: Arc<Recording>) -> OAuth {
    OAuth::builder(agent)
        .store(Arc::new(MemoryStore::new()))
        .build()
}

/// Authorizes against `server` with a recording user agent: the error, the log, what the
/// user agent was asked to open.
async fn refused_by_policy(
    server: Server,
    request: Option<AuthRequest>,
) -> (AuthError, Log, Vec<String>) {
    let (endpoint, log) = start(server).await;
    let agent = Arc::new(Recording {
        interactive: true,
        ..Recording::default()
    });
    let oauth = recording(agent.clone());
    let request = request.unwrap_or_else(|| challenge(&endpoint, None));
    let err = oauth.authorize(&endpoint, &request).await.unwrap_err();
    assert!(
        !paths(&log)
            .iter()
            .any(|p| p.ends_with("/token") || p.ends_with("/register")),
        "nothing registered or redeemed after {err:?}: {:?}",
        paths(&log)
    );
    let opened = agent.opened.lock().unwrap().clone();
    (err, log, opened)
}

#[tokio::test]
async fn an_authorization_endpoint_of_another_scheme_is_never_opened() {
    for endpoint in [
        "file:///etc/passwd",
        "javascript:alert(1)",
        "http://as.example/authorize",
        "smb://attacker/share",
    ] {
        let (err, _, opened) = refused_by_policy(
            Server {
                as_extra: json!({"authorization_endpoint": endpoint}),
                ..Server::default()
            },
            None,
        )
        .await;
        assert!(
            matches!(
                &err,
                AuthError::UrlRefused {
                    what: "authorization endpoint",
                    rule: mcp_runtime::auth::UrlRule::Scheme { .. }
                        | mcp_runtime::auth::UrlRule::NotAUrl,
                    ..
                }
            ),
            "{endpoint}: {err:?}"
        );
        assert!(opened.is_empty(), "{endpoint}: opened {opened:?}");
    }
}

#[tokio::test]
async fn metadata_on_private_or_link_local_addresses_is_never_fetched() {
    let (endpoint, _) = start(Server::default()).await;
    for (metadata, class) in [
        (
            "https://169.254.169.254/latest/meta-data/",
            mcp_runtime::auth::AddressClass::LinkLocal,
        ),
        (
            "https://10.0.0.1/prm",
            mcp_runtime::auth::AddressClass::Private,
        ),
        (
            "https://[fd00::1]/prm",
            mcp_runtime::auth::AddressClass::Private,
        ),
        (
            "https://[::ffff:192.168.1.1]/prm",
            mcp_runtime::auth::AddressClass::Private,
        ),
    ] {
        let header = format!("Bearer resource_metadata=\"{metadata}\"");
        let request = AuthRequest {
            challenge: Challenge::parse([header.as_str()]).unwrap(),
            held_scopes: vec![],
        };
        let (oauth, _) = client();
        let started = std::time::Instant::now();
        let err = oauth.authorize(&endpoint, &request).await.unwrap_err();
        assert!(
            matches!(&err, AuthError::UrlRefused { what: "protected resource metadata", rule: mcp_runtime::auth::UrlRule::Address { class: c, .. }, .. } if *c == class),
            "{metadata}: {err:?}"
        );
        // Refused before any connection is tried (an unroutable address would hang).
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
        assert!(err.to_string().contains("resolves to the"), "{err}");
    }
}

#[tokio::test]
async fn an_issuer_or_token_endpoint_in_clear_text_is_refused() {
    // An issuer on plain HTTP off this machine: its metadata is never fetched.
    let (oauth, _) = client();
    let script: scripted_http::Script = Arc::new(|req, _| {
        if req
            .path()
            .starts_with("/.well-known/oauth-protected-resource")
        {
            let base = base(req);
            return Answer::Json(
                json!({"resource": format!("{base}/mcp"), "authorization_servers": ["http://as.example"]}),
                vec![],
            );
        }
        Answer::Status(404, vec![])
    });
    let (url, log2) = serve(script).await;
    let endpoint2 = Url::parse(&url).unwrap();
    let err = oauth
        .authorize(&endpoint2, &challenge(&endpoint2, None))
        .await
        .unwrap_err();
    assert!(
        matches!(
            &err,
            AuthError::UrlRefused {
                what: "issuer",
                rule: mcp_runtime::auth::UrlRule::Scheme { .. },
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(paths(&log2).len(), 1, "{:?}", paths(&log2));
    // A token endpoint in clear text: no code is ever redeemed there.
    let (err, _, opened) = refused_by_policy(
        Server {
            as_extra: json!({"token_endpoint": "http://as.example/token"}),
            ..Server::default()
        },
        None,
    )
    .await;
    assert!(
        matches!(
            &err,
            AuthError::UrlRefused {
                what: "token endpoint",
                ..
            }
        ),
        "{err:?}"
    );
    assert!(opened.is_empty());
}

#[tokio::test]
async fn a_registration_endpoint_elsewhere_gets_no_post() {
    let (err, log, _) = refused_by_policy(
        Server {
            as_extra: json!({"registration_endpoint": "https://10.9.9.9/register"}),
            ..Server::default()
        },
        None,
    )
    .await;
    assert!(
        matches!(
            &err,
            AuthError::UrlRefused {
                what: "registration endpoint",
                ..
            }
        ),
        "{err:?}"
    );
    assert!(
        seen(&log).iter().all(|r| r.method != "POST"),
        "{:?}",
        paths(&log)
    );
}

#[tokio::test]
async fn a_huge_expires_in_is_a_token_that_never_expires_not_a_panic() {
    let (endpoint, _) = start(Server {
        expires_in: u64::MAX,
        ..Server::default()
    })
    .await;
    let (oauth, _) = client();
    let token = oauth
        .authorize(&endpoint, &challenge(&endpoint, None))
        .await
        .unwrap();
    assert!(
        token.expires_at.is_some_and(|at| at > 4_000_000_000),
        "{token:?}"
    );
    assert!(!token.expires_within(
        std::time::SystemTime::now(),
        std::time::Duration::from_secs(60)
    ));
    // The refresh path takes the same sum.
    let refreshed = oauth.refresh(&endpoint).await.unwrap();
    assert!(refreshed.expires_at.is_some());
    assert!(oauth.bearer(&endpoint).await.is_some());
}

#[tokio::test]
async fn a_password_in_the_endpoint_url_is_never_shown() {
    let script: scripted_http::Script = Arc::new(|_, _| Answer::Status(404, vec![]));
    let (url, _) = serve(script).await;
    let endpoint = Url::parse(&url.replacen("http://", "http://alice:hunter2@", 1))
        .unwrap()
        .join("/mcp?api_key=k3y")
        .unwrap();
    let (oauth, _) = client();
    let err = oauth
        .authorize(&endpoint, &AuthRequest::default())
        .await
        .unwrap_err();
    let shown = format!("{err} {err:?}");
    assert!(
        matches!(err, AuthError::NoResourceMetadata { .. }),
        "{err:?}"
    );
    for secret in ["hunter2", "alice", "k3y"] {
        assert!(!shown.contains(secret), "{secret} in {shown}");
    }
}

#[tokio::test]
async fn a_user_agent_that_cannot_involve_a_person_fails_at_once_without_discovery() {
    let (endpoint, log) = start(Server::default()).await;
    let agent = Arc::new(Recording::default());
    let oauth = recording(agent.clone());
    let header = format!(
        "Bearer resource_metadata=\"{}\"",
        endpoint
            .join("/.well-known/oauth-protected-resource/mcp")
            .unwrap()
    );
    let err = oauth
        .on_challenge(&endpoint, 401, &header)
        .await
        .unwrap_err();
    assert!(
        matches!(err, AuthError::InteractionRequired { .. }),
        "{err:?}"
    );
    assert!(seen(&log).is_empty(), "{:?}", paths(&log));
    // Declining at the approval: nothing registered, nothing opened.
    let agent = Arc::new(Recording {
        interactive: true,
        decline: true,
        ..Recording::default()
    });
    let oauth = recording(agent.clone());
    let err = oauth
        .on_challenge(&endpoint, 401, &header)
        .await
        .unwrap_err();
    assert!(
        matches!(err, AuthError::InteractionRequired { .. }),
        "{err:?}"
    );
    assert_eq!(agent.approved.lock().unwrap().len(), 1);
    assert!(agent.opened.lock().unwrap().is_empty());
    assert!(
        !paths(&log).iter().any(|p| p == "/register"),
        "{:?}",
        paths(&log)
    );
}
