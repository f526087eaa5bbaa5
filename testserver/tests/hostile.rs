//! The hostile faults of the HTTP test server (issue 29), on the wire, driven by a plain HTTP
//! client (no redirects followed): what each sends, in both eras where it applies, the
//! authorization documents of `auth:KIND` and the request log of both origins. mcpc against
//! them is `cli/tests/hostile_matrix.rs`.

use std::time::Duration;

use mcp_testserver::http::{
    AuthKind, BIG_HEADER, FILE_ENDPOINT, Fault, HttpConfig, HttpServer, LINK_LOCAL_METADATA,
    Origin, SECRET_PREFIX, SESSION_HEADER, serve,
};
use mcp_testserver::{Era, ServerConfig};
use serde_json::{Value, json};

const MODERN: &str = "2026-07-28";
const WAIT: Duration = Duration::from_secs(5);
/// How long a test waits to see that nothing comes.
const NOTHING: Duration = Duration::from_millis(300);

async fn start(fault: Fault) -> HttpServer {
    let mut server = ServerConfig::echo();
    server.era = Era::Dual;
    let config = HttpConfig::new(server).with_fault(fault, None);
    serve("127.0.0.1:0".parse().unwrap(), config)
        .await
        .expect("binds")
}

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}})
}

fn echo(id: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"message": "hi"}}})
}

fn post(
    http: &reqwest::Client,
    url: &str,
    session: Option<&str>,
    body: &Value,
) -> reqwest::RequestBuilder {
    let mut req = http
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(body.to_string());
    if let Some(s) = session {
        req = req.header(SESSION_HEADER, s);
    }
    req
}

/// A modern (2026-07-28) `tools/call` of `echo`.
fn modern_echo(http: &reqwest::Client, url: &str) -> reqwest::RequestBuilder {
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
        "name": "echo", "arguments": {"message": "hi"},
        "_meta": {"io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {}}}});
    post(http, url, None, &body)
        .header("mcp-protocol-version", MODERN)
        .header("mcp-method", "tools/call")
        .header("mcp-name", "echo")
}

/// A session: its id (after `notifications/initialized`).
async fn session(http: &reqwest::Client, url: &str) -> String {
    let r = post(http, url, None, &initialize()).send().await.unwrap();
    assert_eq!(r.status(), 200);
    let id = r.headers()[SESSION_HEADER].to_str().unwrap().to_owned();
    let _ = r.bytes().await;
    id
}

/// The whole body, or what came before it failed (a cut connection).
async fn body_of(mut r: reqwest::Response) -> (Vec<u8>, bool) {
    let mut bytes = Vec::new();
    let read = tokio::time::timeout(WAIT, async {
        loop {
            match r.chunk().await {
                Ok(Some(c)) => bytes.extend_from_slice(&c),
                Ok(None) => return true,
                Err(_) => return false,
            }
        }
    })
    .await;
    (bytes, read == Ok(true))
}

#[tokio::test]
async fn lenient_and_flood_prefixes_come_first_then_the_answer_in_both_eras() {
    for fault in [Fault::LenientSse, Fault::KeepaliveFlood(100_000)] {
        let server = start(fault).await;
        let http = client();
        let url = server.url();
        let sid = session(&http, &url).await;
        let legacy = post(&http, &url, Some(&sid), &echo(1))
            .send()
            .await
            .unwrap();
        let modern = modern_echo(&http, &url).send().await.unwrap();
        for r in [legacy, modern] {
            assert_eq!(r.headers()["content-type"], "text/event-stream");
            let (bytes, ended) = body_of(r).await;
            assert!(ended, "{fault:?}");
            let text = String::from_utf8_lossy(&bytes);
            assert!(text.contains("Echo: hi"), "{fault:?}: {text:.300}");
            match fault {
                Fault::LenientSse => {
                    assert!(bytes.starts_with(b"\xef\xbb\xbf: a comment first\n"));
                    for legal in ["a line without a colon\n", "retry: abc\n", "\r\r", "data:{"] {
                        assert!(text.contains(legal), "{legal:?}");
                    }
                }
                _ => {
                    let comments = bytes
                        .windows(b": keepalive\n\n".len())
                        .filter(|w| w == b": keepalive\n\n")
                        .count();
                    assert!(comments * 13 >= 100_000, "{comments}");
                    assert!(bytes.starts_with(b": keepalive\n\n"));
                }
            }
        }
    }
}

#[tokio::test]
async fn retry_zero_cuts_every_stream_after_a_notification() {
    let server = start(Fault::RetryZero).await;
    let http = client();
    let url = server.url();
    let sid = session(&http, &url).await;
    let first = post(&http, &url, Some(&sid), &echo(1))
        .send()
        .await
        .unwrap();
    let resumed = http
        .get(&url)
        .header(SESSION_HEADER, &sid)
        .header("last-event-id", "retry-zero-1")
        .send()
        .await
        .unwrap();
    let standalone = http
        .get(&url)
        .header(SESSION_HEADER, &sid)
        .send()
        .await
        .unwrap();
    for r in [first, resumed, standalone] {
        let (bytes, ended) = body_of(r).await;
        assert!(!ended, "the connection is cut");
        let text = String::from_utf8_lossy(&bytes);
        assert!(text.starts_with("id: retry-zero-0\nretry: 0\n"), "{text}");
        assert!(text.contains("notifications/message") && !text.contains("Echo"));
    }
    let gets = server
        .log()
        .all()
        .iter()
        .filter(|r| r.method == "GET")
        .count();
    assert_eq!(gets, 2);
}

#[tokio::test]
async fn a_stuck_notification_and_a_get_that_never_answer() {
    let server = start(Fault::StuckNotification { all: false }).await;
    let http = client();
    let url = server.url();
    let sid = session(&http, &url).await;
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let stuck =
        tokio::time::timeout(NOTHING, post(&http, &url, Some(&sid), &initialized).send()).await;
    assert!(stuck.is_err(), "answered: {stuck:?}");
    // Other notifications, and requests, are answered.
    let other = json!({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"});
    let r = post(&http, &url, Some(&sid), &other).send().await.unwrap();
    assert_eq!(r.status(), 202);
    let (bytes, _) = body_of(
        post(&http, &url, Some(&sid), &echo(1))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert!(String::from_utf8_lossy(&bytes).contains("Echo: hi"));

    let all = start(Fault::StuckNotification { all: true }).await;
    let sid = session(&http, &all.url()).await;
    let stuck =
        tokio::time::timeout(NOTHING, post(&http, &all.url(), Some(&sid), &other).send()).await;
    assert!(stuck.is_err());

    let never = start(Fault::GetNever).await;
    let sid = session(&http, &never.url()).await;
    let get = tokio::time::timeout(
        NOTHING,
        http.get(never.url()).header(SESSION_HEADER, &sid).send(),
    )
    .await;
    assert!(get.is_err(), "answered: {get:?}");
}

#[tokio::test]
async fn bodies_without_an_answer_and_a_big_header_in_both_eras() {
    let http = client();
    for (fault, want) in [
        (Fault::Empty200, ""),
        (Fault::SseAsJson, "data: {"),
        (Fault::BigHeader(10_000), "{"),
    ] {
        let server = start(fault).await;
        let url = server.url();
        let sid = session(&http, &url).await;
        let legacy = post(&http, &url, Some(&sid), &echo(1))
            .send()
            .await
            .unwrap();
        let modern = modern_echo(&http, &url).send().await.unwrap();
        for r in [legacy, modern] {
            assert_eq!(r.status(), 200, "{fault:?}");
            let padded = r.headers().get(BIG_HEADER).map(|v| v.len());
            let ct = r.headers()["content-type"].to_str().unwrap().to_owned();
            let (bytes, ended) = body_of(r).await;
            assert!(ended);
            let text = String::from_utf8_lossy(&bytes);
            match fault {
                Fault::Empty200 => assert!(bytes.is_empty() && ct == "application/json"),
                Fault::SseAsJson => {
                    assert_eq!(ct, "application/json");
                    assert!(
                        text.starts_with(want) && text.contains("Echo: hi"),
                        "{text}"
                    );
                }
                _ => {
                    assert_eq!(padded, Some(10_000));
                    assert!(text.contains("Echo: hi"));
                }
            }
        }
    }
}

#[tokio::test]
async fn expire_loop_drops_each_session_after_its_handshake() {
    let server = start(Fault::ExpireLoop).await;
    let http = client();
    let url = server.url();
    for _ in 0..3 {
        let sid = session(&http, &url).await;
        let r = post(&http, &url, Some(&sid), &echo(1))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 404);
    }
    // Counted at `initialize`: with one hit, the second session lives.
    let mut config = HttpConfig::new(ServerConfig::echo()).with_fault(Fault::ExpireLoop, Some(1));
    config.json = true;
    let once = serve("127.0.0.1:0".parse().unwrap(), config).await.unwrap();
    let doomed = session(&http, &once.url()).await;
    let alive = session(&http, &once.url()).await;
    let r = post(&http, &once.url(), Some(&doomed), &echo(1))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    let r = post(&http, &once.url(), Some(&alive), &echo(1))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
}

async fn json_at(http: &reqwest::Client, url: &str) -> Value {
    let r = http.get(url).send().await.unwrap();
    assert_eq!(r.status(), 200, "{url}");
    serde_json::from_slice(&r.bytes().await.unwrap()).unwrap()
}

/// A whole grant flow against `auth:expires-max`: every document, the token's `expires_in` of
/// 2^64-1, the endpoint serving a request carrying it; nothing reaches the other origin.
#[tokio::test]
async fn auth_expires_max_serves_a_whole_grant_flow() {
    let server = start(Fault::Auth(AuthKind::ExpiresMax)).await;
    let http = client();
    let url = server.url();
    let base = url.trim_end_matches("/mcp").to_owned();
    let refused = post(&http, &url, None, &initialize()).send().await.unwrap();
    assert_eq!(refused.status(), 401);
    let challenge = refused.headers()["www-authenticate"]
        .to_str()
        .unwrap()
        .to_owned();
    let prm_url = format!("{base}/.well-known/oauth-protected-resource/mcp");
    assert!(
        challenge.starts_with("Bearer ")
            && challenge.contains(&format!("resource_metadata=\"{prm_url}\"")),
        "{challenge}"
    );
    let prm = json_at(&http, &prm_url).await;
    assert_eq!(prm["resource"], url);
    assert_eq!(prm["authorization_servers"], json!([base]));
    let asm = json_at(
        &http,
        &format!("{base}/.well-known/oauth-authorization-server"),
    )
    .await;
    assert_eq!(asm["issuer"], base);
    assert_eq!(asm["code_challenge_methods_supported"], json!(["S256"]));
    let reg = http
        .post(asm["registration_endpoint"].as_str().unwrap())
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(reg.status(), 201);
    let authorize = format!(
        "{}?response_type=code&client_id=c&state=st%2B1&redirect_uri=http%3A%2F%2F127.0.0.1%3A9%2Fcallback",
        asm["authorization_endpoint"].as_str().unwrap()
    );
    let back = http.get(&authorize).send().await.unwrap();
    assert_eq!(back.status(), 302);
    let to = back.headers()["location"].to_str().unwrap().to_owned();
    assert!(
        to.starts_with(&format!(
            "http://127.0.0.1:9/callback?code={SECRET_PREFIX}code-"
        )),
        "{to}"
    );
    assert!(
        to.contains("&state=st%2B1&iss=http%3A%2F%2F127.0.0.1%3A"),
        "{to}"
    );
    let token = http
        .post(asm["token_endpoint"].as_str().unwrap())
        .body("grant_type=authorization_code")
        .send()
        .await
        .unwrap();
    let token: Value = serde_json::from_slice(&token.bytes().await.unwrap()).unwrap();
    assert_eq!(token["expires_in"], json!(u64::MAX));
    let access = token["access_token"].as_str().unwrap();
    assert!(access.starts_with(SECRET_PREFIX));
    let served = post(&http, &url, None, &initialize())
        .header("authorization", format!("Bearer {access}"))
        .send()
        .await
        .unwrap();
    assert_eq!(served.status(), 200);
    let wrong = post(&http, &url, None, &initialize())
        .header("authorization", "Bearer nope")
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 401);
    assert!(server.other_url().is_some());
    assert!(server.log().at(Origin::Other).is_empty());
    assert_eq!(server.log().at(Origin::Main).len(), server.log().total());
}

#[tokio::test]
async fn auth_kinds_mislead_as_documented() {
    let http = client();
    let prm_path = "/.well-known/oauth-protected-resource/mcp";

    let file = start(Fault::Auth(AuthKind::FileEndpoint)).await;
    let base = file.url().trim_end_matches("/mcp").to_owned();
    let asm = json_at(
        &http,
        &format!("{base}/.well-known/oauth-authorization-server"),
    )
    .await;
    assert_eq!(asm["authorization_endpoint"], FILE_ENDPOINT);

    let private = start(Fault::Auth(AuthKind::PrivateMetadata)).await;
    let r = post(&http, &private.url(), None, &initialize())
        .send()
        .await
        .unwrap();
    let challenge = r.headers()["www-authenticate"].to_str().unwrap().to_owned();
    assert!(challenge.contains(LINK_LOCAL_METADATA), "{challenge}");

    let issuer = start(Fault::Auth(AuthKind::HttpIssuer)).await;
    let base = issuer.url().trim_end_matches("/mcp").to_owned();
    let prm = json_at(&http, &format!("{base}{prm_path}")).await;
    assert_eq!(
        prm["authorization_servers"],
        json!([mcp_testserver::http::INVALID_ISSUER])
    );

    let redirect = start(Fault::Auth(AuthKind::RedirectMetadata)).await;
    let base = redirect.url().trim_end_matches("/mcp").to_owned();
    let other = redirect.other_url().unwrap();
    let r = http.get(format!("{base}{prm_path}")).send().await.unwrap();
    assert_eq!(r.status(), 302);
    assert_eq!(
        r.headers()["location"],
        format!("{other}{prm_path}").as_str()
    );
    let there = json_at(&http, &format!("{other}{prm_path}")).await;
    assert_eq!(there["authorization_servers"], json!([other]));
    let seen = redirect.log().at(Origin::Other);
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].path(), prm_path);

    let password = start(Fault::Auth(AuthKind::PasswordUrl)).await;
    let r = post(&http, &password.url(), None, &initialize())
        .send()
        .await
        .unwrap();
    let challenge = r.headers()["www-authenticate"].to_str().unwrap().to_owned();
    assert!(!challenge.contains("resource_metadata"), "{challenge}");
    let base = password.url().trim_end_matches("/mcp").to_owned();
    assert_eq!(
        http.get(format!("{base}{prm_path}"))
            .send()
            .await
            .unwrap()
            .status(),
        404
    );

    let slow = start(Fault::Auth(AuthKind::SlowMetadata)).await;
    let base = slow.url().trim_end_matches("/mcp").to_owned();
    let r = tokio::time::timeout(NOTHING, http.get(format!("{base}{prm_path}")).send()).await;
    assert!(r.is_err());

    let grant = start(Fault::Auth(AuthKind::Grant)).await;
    let base = grant.url().trim_end_matches("/mcp").to_owned();
    let token = http.post(format!("{base}/token")).send().await.unwrap();
    let token: Value = serde_json::from_slice(&token.bytes().await.unwrap()).unwrap();
    assert_eq!(token["expires_in"], 3600);

    let huge = start(Fault::Auth(AuthKind::HugeMetadata)).await;
    let base = huge.url().trim_end_matches("/mcp").to_owned();
    let r = http.get(format!("{base}{prm_path}")).send().await.unwrap();
    assert!(r.content_length().is_none());
    let (bytes, ended) = body_of(r).await;
    assert!(ended);
    assert!(bytes.len() >= mcp_testserver::http::HUGE_METADATA_BYTES);
    let doc: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(doc["resource"], huge.url());
}

/// The other origin records bodies (a secret sent there shows), and serves the documents of
/// its own issuer.
#[tokio::test]
async fn the_other_origin_records_what_reaches_it() {
    let server = start(Fault::Auth(AuthKind::RedirectMetadata)).await;
    let http = client();
    let other = server.other_url().unwrap();
    let r = http
        .post(format!("{other}/token"))
        .header("authorization", "Basic c2VjcmV0")
        .body("refresh_token=leaked-refresh")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let seen = server.log().at(Origin::Other);
    assert_eq!(seen.len(), 1);
    assert!(seen[0].contains("leaked-refresh") && seen[0].contains("Basic c2VjcmV0"));
    assert_eq!(seen[0].method, "POST");
}
