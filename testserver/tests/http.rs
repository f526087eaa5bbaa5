//! The HTTP transports of the test server, in process, driven by a plain HTTP client: sessions,
//! SSE and JSON answers, the standalone stream, resumption with `Last-Event-ID`, legacy
//! HTTP+SSE, and a few faults.

use std::time::Duration;

use mcp_testserver::ServerConfig;
use mcp_testserver::http::{Fault, HttpConfig, HttpServer, SESSION_HEADER, serve};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(5);

async fn start(config: HttpConfig) -> HttpServer {
    serve("127.0.0.1:0".parse().unwrap(), config)
        .await
        .expect("binds")
}

fn initialize(id: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}})
}

fn echo(id: u64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"message": message}}})
}

async fn post(
    http: &reqwest::Client,
    url: &str,
    session: Option<&str>,
    body: &Value,
) -> reqwest::Response {
    let mut req = http
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(body.to_string());
    if let Some(s) = session {
        req = req.header(SESSION_HEADER, s);
    }
    req.send().await.expect("POST")
}

/// A `GET` of the session's stream (resuming after `last`, if given).
async fn get(
    http: &reqwest::Client,
    url: &str,
    session: &str,
    last: Option<&str>,
) -> reqwest::Response {
    let mut req = http
        .get(url)
        .header(SESSION_HEADER, session)
        .header("accept", "text/event-stream");
    if let Some(last) = last {
        req = req.header("last-event-id", last);
    }
    req.send().await.expect("GET")
}

/// Reads a streamed body until it contains `want` (or ends, or fails); what was read.
async fn read_until(response: &mut reqwest::Response, want: &str) -> String {
    let mut text = String::new();
    let _ = tokio::time::timeout(WAIT, async {
        while let Ok(Some(chunk)) = response.chunk().await {
            text.push_str(&String::from_utf8_lossy(&chunk));
            if text.contains(want) {
                return;
            }
        }
    })
    .await;
    text
}

/// Initializes a session; its id.
async fn session(http: &reqwest::Client, url: &str) -> String {
    let mut r = post(http, url, None, &initialize(1)).await;
    assert_eq!(r.status(), 200);
    let id = r.headers()[SESSION_HEADER].to_str().unwrap().to_owned();
    let body = read_until(&mut r, "protocolVersion").await;
    assert!(body.contains("serverInfo"), "{body}");
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(post(http, url, Some(&id), &initialized).await.status(), 202);
    id
}

#[tokio::test]
async fn streamable_http_sessions() {
    let server = start(HttpConfig::new(ServerConfig::chaos())).await;
    let (http, url) = (reqwest::Client::new(), server.url());
    // No session: only initialize is served.
    assert_eq!(post(&http, &url, None, &echo(2, "x")).await.status(), 400);
    let id = session(&http, &url).await;
    assert_eq!(server.sessions(), 1);
    let mut r = post(&http, &url, Some(&id), &echo(2, "over SSE")).await;
    assert_eq!(r.headers()["content-type"], "text/event-stream");
    let body = read_until(&mut r, "Echo: over SSE").await;
    assert!(body.contains("id: "), "events have ids: {body}");
    // Batches and bodies that are not JSON are refused.
    assert_eq!(
        post(&http, &url, Some(&id), &json!([echo(3, "a")]))
            .await
            .status(),
        400
    );
    // The standalone stream gets what the server sends on its own.
    let mut get = get(&http, &url, &id, None).await;
    assert_eq!(get.status(), 200);
    let log = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
        "params": {"name": "log", "arguments": {"level": "error", "message": "to the GET stream"}}});
    let mut answer = post(&http, &url, Some(&id), &log).await;
    assert!(read_until(&mut answer, "\"id\":4").await.contains("result"));
    assert!(
        read_until(&mut get, "to the GET stream")
            .await
            .contains("notifications/message")
    );
    // DELETE ends the session: then 404.
    let deleted = http
        .delete(&url)
        .header(SESSION_HEADER, &id)
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), 200);
    assert_eq!(server.sessions(), 0);
    assert_eq!(
        post(&http, &url, Some(&id), &echo(5, "x")).await.status(),
        404
    );
}

#[tokio::test]
async fn json_answers() {
    let mut config = HttpConfig::new(ServerConfig::echo());
    config.json = true;
    let server = start(config).await;
    let (http, url) = (reqwest::Client::new(), server.url());
    let r = post(&http, &url, None, &initialize(1)).await;
    let id = r.headers()[SESSION_HEADER].to_str().unwrap().to_owned();
    assert_eq!(r.headers()["content-type"], "application/json");
    let r = post(&http, &url, Some(&id), &echo(2, "as JSON")).await;
    let v: Value = serde_json::from_slice(&r.bytes().await.unwrap()).unwrap();
    assert_eq!(v["result"]["content"][0]["text"], "Echo: as JSON");
}

#[tokio::test]
async fn a_dropped_stream_is_resumed_with_last_event_id() {
    resumed_after(Fault::DropStream(0)).await;
}

#[tokio::test]
async fn a_closed_stream_is_resumed_with_last_event_id() {
    resumed_after(Fault::CloseStream).await;
}

/// A stream broken by `fault` is resumed with `Last-Event-ID`.
async fn resumed_after(fault: Fault) {
    let config = HttpConfig::new(ServerConfig::echo()).with_fault(fault, Some(1));
    let server = start(config).await;
    let (http, url) = (reqwest::Client::new(), server.url());
    let id = session(&http, &url).await;
    let mut r = post(&http, &url, Some(&id), &echo(2, "resumed")).await;
    // The priming event, then the connection is cut in the middle of the answer.
    let mut seen = String::new();
    let cut = loop {
        match tokio::time::timeout(WAIT, r.chunk())
            .await
            .expect("no hang")
        {
            Ok(Some(c)) => seen.push_str(&String::from_utf8_lossy(&c)),
            Ok(None) => break false,
            Err(_) => break true,
        }
    };
    assert_eq!(cut, fault == Fault::DropStream(0), "cut or ended: {seen}");
    assert!(seen.contains("retry: 100"), "{seen}");
    assert!(!seen.contains("Echo: resumed\"}"), "{seen}");
    let last = seen
        .lines()
        .find_map(|l| l.strip_prefix("id: "))
        .expect("a priming event id")
        .to_owned();
    let mut resumed = get(&http, &url, &id, Some(&last)).await;
    assert_eq!(resumed.status(), 200);
    let replay = read_until(&mut resumed, "Echo: resumed").await;
    assert!(replay.contains("Echo: resumed"), "{replay}");
    // The stream is over once its answer was replayed.
    assert!(matches!(resumed.chunk().await, Ok(None)));
    // An unknown event id is refused.
    let unknown = get(&http, &url, &id, Some("999-0")).await;
    assert_eq!(unknown.status(), 400);
    // The fault hit once: the next answer is whole.
    let mut r = post(&http, &url, Some(&id), &echo(3, "whole")).await;
    assert!(
        read_until(&mut r, "Echo: whole")
            .await
            .contains("Echo: whole")
    );
}

#[tokio::test]
async fn expiry_and_status_faults() {
    for (fault, status) in [
        (Fault::Expire404, 404),
        (Fault::Expire400, 400),
        (Fault::Status(503), 503),
        (Fault::Redirect(307), 307),
        (Fault::BigJson(1000), 200),
    ] {
        let server = start(HttpConfig::new(ServerConfig::echo()).with_fault(fault, Some(1))).await;
        let (http, url) = (
            reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap(),
            server.url(),
        );
        let id = session(&http, &url).await;
        let r = post(&http, &url, Some(&id), &echo(2, "x")).await;
        assert_eq!(r.status(), status, "{}", fault.name());
        let expired = matches!(fault, Fault::Expire404 | Fault::Expire400);
        let body = r.text().await.unwrap();
        if fault == Fault::Expire400 {
            assert!(body.contains("unknown session"), "{body}");
        }
        if let Fault::BigJson(n) = fault {
            assert!(body.len() > n, "{}", body.len());
        }
        // After the one fault: an expired session stays expired, others behave.
        let again = post(&http, &url, Some(&id), &echo(3, "y")).await.status();
        assert_eq!(
            again,
            if expired { status } else { 200 },
            "{}",
            fault.name()
        );
    }
}

#[tokio::test]
async fn legacy_http_sse() {
    let server = start(HttpConfig::new(ServerConfig::echo())).await;
    let http = reqwest::Client::new();
    let mut stream = http.get(server.sse_url()).send().await.unwrap();
    assert_eq!(stream.status(), 200);
    let head = read_until(&mut stream, "sessionId=").await;
    assert!(
        head.starts_with("event: endpoint\ndata: /message?sessionId="),
        "{head}"
    );
    let path = head
        .lines()
        .find_map(|l| l.strip_prefix("data: "))
        .unwrap()
        .to_owned();
    let endpoint = format!("http://{}{path}", server.addr());
    let r = post(&http, &endpoint, None, &initialize(1)).await;
    assert_eq!(r.status(), 202);
    let init = read_until(&mut stream, "protocolVersion").await;
    assert!(init.contains("event: message\ndata: {"), "{init}");
    let r = post(&http, &endpoint, None, &echo(2, "legacy")).await;
    assert_eq!(r.status(), 202);
    assert!(
        read_until(&mut stream, "Echo: legacy")
            .await
            .contains("Echo: legacy")
    );
    let unknown = format!("http://{}/message?sessionId=nope", server.addr());
    assert_eq!(
        post(&http, &unknown, None, &echo(3, "x")).await.status(),
        404
    );
}

#[tokio::test]
async fn a_fault_of_one_method_spares_the_others() {
    let config = HttpConfig::new(ServerConfig::echo())
        .with_fault(Fault::Status(503), Some(1))
        .with_fault_method("tools/call");
    let server = start(config).await;
    let (http, url) = (reqwest::Client::new(), server.url());
    let id = session(&http, &url).await;
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    assert_eq!(post(&http, &url, Some(&id), &list).await.status(), 200);
    // The first call takes the fault, the next is served.
    assert_eq!(
        post(&http, &url, Some(&id), &echo(3, "x")).await.status(),
        503
    );
    assert_eq!(
        post(&http, &url, Some(&id), &echo(4, "y")).await.status(),
        200
    );
}
