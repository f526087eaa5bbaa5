//! The Streamable HTTP transport's path for frames of the 2026-07-28 era, at the transport
//! level (the core does not yet send such frames): raw frames whose `_meta` names the protocol
//! version go through an `HttpConnector`'s link to a scripted HTTP server on localhost.
//!
//! Checked: the standard headers and the `Mcp-Param-*` headers byte for byte (plain and
//! base64), no session id even after the server sent one, no GET stream and no DELETE; a
//! refusal with a JSON-RPC body delivered as it is, one without made up as `HTTP_REFUSED`,
//! and the link staying up after either; a stream that ends or breaks early made up as
//! `STREAM_LOST` (no resumption); a cancellation closing the request's stream and posting
//! nothing; and the legacy fallback not taken on a modern refusal.

mod scripted_http;

use std::sync::Arc;
use std::time::Duration;

use mcp_machine::headers::{HTTP_REFUSED, STREAM_LOST};
use mcp_runtime::transport::{
    self, AutoHttpConnector, Connector, HttpConnector, SendOutcome, ToolHeaderRegistry,
    TransportConfig, TransportEvent, TransportHandle,
};
use scripted_http::{Answer, Log, Script, Seen, serve, wait_for};
use serde_json::{Value, json};
use tokio::sync::mpsc;

const VERSION: &str = "2026-07-28";

/// A modern request frame: `params` plus the era's `_meta`.
fn modern(id: u64, method: &str, params: Value) -> Value {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
    });
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// One link of `connector`, driven by hand.
struct Link {
    handle: TransportHandle,
    events: mpsc::UnboundedReceiver<(u64, TransportEvent)>,
}

impl Link {
    async fn open(connector: Arc<dyn Connector>) -> Link {
        let (tx, mut events) = mpsc::unbounded_channel();
        let handle = transport::spawn(connector, 1, TransportConfig::default(), tx);
        match tokio::time::timeout(Duration::from_secs(10), events.recv()).await {
            Ok(Some((1, TransportEvent::Up))) => {}
            other => panic!("not up: {other:?}"),
        }
        Link { handle, events }
    }

    async fn http(url: &str) -> Link {
        Link::open(Arc::new(HttpConnector::new(url).unwrap())).await
    }

    fn send(&self, frame: &Value) {
        assert_eq!(
            self.handle.try_send(frame.to_string().into_bytes()),
            SendOutcome::Ok
        );
    }

    /// The next frame from the server (one credit).
    async fn frame(&mut self) -> Value {
        self.handle.grant_credit();
        match tokio::time::timeout(Duration::from_secs(10), self.events.recv()).await {
            Ok(Some((_, TransportEvent::Frame(bytes)))) => serde_json::from_slice(&bytes)
                .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&bytes))),
            other => panic!("no frame: {other:?}"),
        }
    }

    /// Nothing arrives for a while: no frame (a credit is granted) and no `Down`.
    async fn quiet(&mut self) {
        self.handle.grant_credit();
        if let Ok(e) = tokio::time::timeout(Duration::from_millis(300), self.events.recv()).await {
            panic!("unexpected: {e:?}");
        }
    }

    /// Closes the link; returns once it is down.
    async fn close(mut self) {
        self.handle.close();
        loop {
            match tokio::time::timeout(Duration::from_secs(10), self.events.recv()).await {
                Ok(Some((_, TransportEvent::Down(_)))) | Ok(None) => return,
                Ok(Some(_)) => {}
                Err(_) => panic!("not down"),
            }
        }
    }
}

/// The requests the server saw whose JSON-RPC method is `method`.
fn posts_of(log: &Log, method: &str) -> Vec<Seen> {
    log.lock()
        .unwrap()
        .iter()
        .filter(|r| r.rpc_method() == Some(method))
        .cloned()
        .collect()
}

/// The headers of `seen` whose names start with `mcp-` or are `last-event-id`, lower-cased
/// names, sorted.
fn mcp_headers(seen: &Seen) -> Vec<(String, String)> {
    let mut h: Vec<_> = seen
        .headers
        .iter()
        .map(|(k, v)| (k.to_ascii_lowercase(), v.clone()))
        .filter(|(k, _)| k.starts_with("mcp-") || k == "last-event-id")
        .collect();
    h.sort();
    h
}

fn pairs(expected: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut v: Vec<_> = expected
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    v.sort();
    v
}

fn tools_page() -> Value {
    json!({"tools": [
        {"name": "weather", "inputSchema": {"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "days": {"type": "integer", "x-mcp-header": "Days"},
            "verbose": {"type": "boolean"}}}},
        {"name": "broken", "inputSchema": {"type": "object", "properties": {
            "n": {"type": "number", "x-mcp-header": "N"}}}},
    ]})
}

/// A modern server: JSON answers with an `mcp-session-id` (as the conformance mocks send),
/// `tools/call` over SSE with a priming event first.
fn modern_server() -> Script {
    Arc::new(|req, _| {
        let id = req.rpc_id();
        let session = vec![("mcp-session-id", "should-be-ignored".to_owned())];
        match (req.method.as_str(), req.rpc_method()) {
            ("POST", Some("tools/list")) => Answer::Json(
                json!({"jsonrpc": "2.0", "id": id, "result": tools_page()}),
                session,
            ),
            ("POST", Some("tools/call")) => {
                let result = json!({"jsonrpc": "2.0", "id": id,
                    "result": {"content": [{"type": "text", "text": "sunny"}]}});
                Answer::Sse(vec![
                    "id: p0\ndata: ".into(),
                    format!("id: p1\ndata: {result}"),
                ])
            }
            ("POST", Some(_)) => Answer::Json(
                json!({"jsonrpc": "2.0", "id": id, "result": {"contents": []}}),
                session,
            ),
            _ => Answer::Status(405, vec![]),
        }
    })
}

#[tokio::test]
async fn a_modern_tools_call_carries_the_standard_and_param_headers_byte_for_byte() {
    let (url, log) = serve(modern_server()).await;
    let mut link = Link::http(&url).await;
    link.send(&modern(1, "tools/list", json!({})));
    let page = link.frame().await;
    // Delivered as the server sent it: the invalid tool is the client's to drop.
    assert_eq!(page["result"], tools_page());
    let args = json!({"region": "eu west", "days": 3, "verbose": true});
    link.send(&modern(
        2,
        "tools/call",
        json!({"name": "weather", "arguments": args}),
    ));
    let answer = link.frame().await;
    assert_eq!(answer["id"], 2);
    assert_eq!(answer["result"]["content"][0]["text"], "sunny");
    // Values that need it are base64; a broken tool's annotation is never used.
    link.send(&modern(
        3,
        "tools/call",
        json!({"name": "weather", "arguments": {"region": " 東京", "days": 9007199254740992_u64}}),
    ));
    link.frame().await;
    link.send(&modern(
        4,
        "tools/call",
        json!({"name": "broken", "arguments": {"n": 1}}),
    ));
    link.frame().await;
    link.send(&modern(5, "tools/call", json!({"name": "日本語"})));
    link.frame().await;
    link.close().await;

    let list = &posts_of(&log, "tools/list")[0];
    assert_eq!(
        mcp_headers(list),
        pairs(&[
            ("mcp-protocol-version", VERSION),
            ("mcp-method", "tools/list")
        ])
    );
    assert_eq!(
        list.header("accept"),
        Some("application/json, text/event-stream")
    );
    let calls = posts_of(&log, "tools/call");
    assert_eq!(calls.len(), 4);
    assert_eq!(
        mcp_headers(&calls[0]),
        pairs(&[
            ("mcp-protocol-version", VERSION),
            ("mcp-method", "tools/call"),
            ("mcp-name", "weather"),
            ("mcp-param-region", "eu west"),
            ("mcp-param-days", "3"),
        ])
    );
    // " 東京" has a leading space and non-ASCII; 2^53 is beyond the safe range: no header.
    assert_eq!(
        mcp_headers(&calls[1]),
        pairs(&[
            ("mcp-protocol-version", VERSION),
            ("mcp-method", "tools/call"),
            ("mcp-name", "weather"),
            ("mcp-param-region", "=?base64?IOadseS6rA==?="),
        ])
    );
    assert_eq!(
        mcp_headers(&calls[2]),
        pairs(&[
            ("mcp-protocol-version", VERSION),
            ("mcp-method", "tools/call"),
            ("mcp-name", "broken"),
        ])
    );
    assert_eq!(
        mcp_headers(&calls[3]),
        pairs(&[
            ("mcp-protocol-version", VERSION),
            ("mcp-method", "tools/call"),
            ("mcp-name", "=?base64?5pel5pys6Kqe?="),
        ])
    );
    // No session even though the server sent one; no GET stream, no DELETE.
    let all = log.lock().unwrap().clone();
    assert!(all.iter().all(|r| r.method == "POST"), "{all:?}");
}

#[tokio::test]
async fn a_modern_resources_read_names_its_uri() {
    let (url, log) = serve(modern_server()).await;
    let mut link = Link::http(&url).await;
    for (id, uri) in [(1, "file:///notes/a.txt"), (2, "file:///é")] {
        link.send(&modern(id, "resources/read", json!({"uri": uri})));
        assert_eq!(link.frame().await["id"], id);
    }
    link.close().await;
    let reads = posts_of(&log, "resources/read");
    let names: Vec<_> = reads.iter().map(|r| r.header("mcp-name")).collect();
    assert_eq!(
        names,
        [
            Some("file:///notes/a.txt"),
            Some("=?base64?ZmlsZTovLy/DqQ==?=")
        ]
    );
    for r in &reads {
        assert_eq!(r.header("mcp-method"), Some("resources/read"));
        assert_eq!(r.header("mcp-protocol-version"), Some(VERSION));
        assert_eq!(r.header("mcp-session-id"), None);
    }
}

/// A server that answers the first POST with `first` and every later one normally.
fn refusing_first(first: impl Fn(&Value) -> Answer + Send + Sync + 'static) -> Script {
    let inner = modern_server();
    Arc::new(move |req, before| {
        if before.is_empty() {
            first(&req.rpc_id())
        } else {
            inner(req, before)
        }
    })
}

#[tokio::test]
async fn a_400_with_a_json_rpc_error_is_delivered_as_it_is_and_the_link_stays_up() {
    let error = |id: &Value| {
        json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32022,
            "message": "Unsupported protocol version",
            "data": {"supported": ["2026-07-28"], "requested": "2099-01-01"}}})
    };
    let (url, log) = serve(refusing_first(move |id| Answer::StatusJson(400, error(id)))).await;
    let mut link = Link::http(&url).await;
    link.send(&modern(1, "tools/list", json!({})));
    assert_eq!(link.frame().await, error(&json!(1)));
    // The link is up: the next request is answered.
    link.send(&modern(2, "resources/read", json!({"uri": "x:y"})));
    let next = link.frame().await;
    assert_eq!(next["id"], 2);
    assert!(next.get("result").is_some(), "{next}");
    link.quiet().await;
    link.close().await;
    assert_eq!(log.lock().unwrap().len(), 2);
}

#[tokio::test]
async fn a_404_without_a_body_is_made_up_as_http_refused() {
    let (url, _log) = serve(refusing_first(|_| Answer::Status(404, vec![]))).await;
    let mut link = Link::http(&url).await;
    link.send(&modern(7, "tools/list", json!({})));
    assert_eq!(
        link.frame().await,
        json!({"jsonrpc": "2.0", "id": 7, "error": {"code": HTTP_REFUSED,
            "message": "HTTP 404 Not Found", "data": {"httpStatus": 404}}})
    );
    link.send(&modern(8, "tools/list", json!({})));
    assert_eq!(link.frame().await["id"], 8);
    link.close().await;
}

#[tokio::test]
async fn a_refusal_whose_body_answers_another_id_or_is_not_json_is_made_up() {
    for first in [
        Answer::StatusJson(
            400,
            json!({"jsonrpc": "2.0", "id": 99, "error": {"code": -32600, "message": "x"}}),
        ),
        Answer::StatusText(500, "<html>oops</html>"),
    ] {
        let first = Arc::new(std::sync::Mutex::new(Some(first)));
        let script = refusing_first(move |_| first.lock().unwrap().take().unwrap());
        let (url, _log) = serve(script).await;
        let mut link = Link::http(&url).await;
        link.send(&modern(1, "tools/list", json!({})));
        let made_up = link.frame().await;
        assert_eq!(made_up["error"]["code"], HTTP_REFUSED, "{made_up}");
        assert_eq!(made_up["id"], 1);
        link.close().await;
    }
}

#[tokio::test]
async fn a_2xx_that_is_neither_json_nor_sse_is_made_up_as_http_refused() {
    let (url, _log) = serve(refusing_first(|_| Answer::StatusText(200, "hello"))).await;
    let mut link = Link::http(&url).await;
    link.send(&modern(3, "tools/list", json!({})));
    let made_up = link.frame().await;
    assert_eq!(made_up["error"]["code"], HTTP_REFUSED);
    assert_eq!(made_up["error"]["data"]["httpStatus"], 200);
    link.send(&modern(4, "tools/list", json!({})));
    assert_eq!(link.frame().await["id"], 4);
    link.close().await;
}

#[tokio::test]
async fn a_stream_that_ends_or_breaks_before_its_response_is_made_up_as_stream_lost() {
    let progress = json!({"jsonrpc": "2.0", "method": "notifications/progress",
        "params": {"progressToken": 1, "progress": 1}});
    for broken in [false, true] {
        let events = vec![
            "id: e0\nretry: 10\ndata: ".to_owned(),
            format!("id: e1\ndata: {progress}"),
        ];
        let events = Arc::new(std::sync::Mutex::new(Some(events)));
        let script = refusing_first(move |_| {
            let events = events.lock().unwrap().take().unwrap();
            if broken {
                Answer::SseBroken(events)
            } else {
                Answer::Sse(events)
            }
        });
        let (url, log) = serve(script).await;
        let mut link = Link::http(&url).await;
        link.send(&modern(
            5,
            "tools/call",
            json!({"name": "slow", "arguments": {}}),
        ));
        assert_eq!(link.frame().await, progress);
        let lost = link.frame().await;
        assert_eq!(lost["id"], 5, "{lost}");
        assert_eq!(lost["error"]["code"], STREAM_LOST, "{lost}");
        let message = lost["error"]["message"].as_str().unwrap();
        assert!(
            message.contains(if broken { "broke" } else { "ended" }),
            "{message}"
        );
        // The link is up, and nothing tried to resume the stream.
        link.send(&modern(6, "tools/list", json!({})));
        assert_eq!(link.frame().await["id"], 6);
        link.close().await;
        let all = log.lock().unwrap().clone();
        assert!(all.iter().all(|r| r.method == "POST"), "{all:?}");
        assert!(
            all.iter().all(|r| r.header("last-event-id").is_none()),
            "{all:?}"
        );
    }
}

#[tokio::test]
async fn a_cancellation_closes_the_requests_stream_and_posts_nothing() {
    // Both forms of the notification: with the era's `_meta`, and without.
    for with_meta in [true, false] {
        let (tx, rx) = mpsc::unbounded_channel::<String>();
        let stream = Arc::new(std::sync::Mutex::new(Some(rx)));
        let script =
            refusing_first(move |_| Answer::Stream(stream.lock().unwrap().take().unwrap(), vec![]));
        let (url, log) = serve(script).await;
        let mut link = Link::http(&url).await;
        link.send(&modern(
            9,
            "tools/call",
            json!({"name": "slow", "arguments": {}}),
        ));
        let progress = json!({"jsonrpc": "2.0", "method": "notifications/progress",
            "params": {"progressToken": 9, "progress": 1}});
        tx.send(format!("data: {progress}")).unwrap();
        assert_eq!(link.frame().await, progress);
        let mut cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": 9, "reason": "user"}});
        if with_meta {
            cancel["params"]["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": VERSION});
        }
        link.send(&cancel);
        // The server sees its stream closed: writing to it fails (after a few tries).
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while !tx.is_closed() {
            assert!(
                tokio::time::Instant::now() < deadline,
                "the stream stayed open"
            );
            let _ = tx.send(": keep-alive".into());
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // Nothing was delivered for the cancelled request (not even a made-up error).
        link.quiet().await;
        // The link is up.
        link.send(&modern(10, "tools/list", json!({})));
        assert_eq!(link.frame().await["id"], 10);
        link.close().await;
        assert!(posts_of(&log, "notifications/cancelled").is_empty());
        assert_eq!(log.lock().unwrap().len(), 2);
    }
}

#[tokio::test]
async fn a_cancellation_of_a_finished_modern_request_is_not_posted() {
    let (url, log) = serve(modern_server()).await;
    let mut link = Link::http(&url).await;
    link.send(&modern(1, "tools/list", json!({})));
    link.frame().await;
    link.send(
        &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 1}}),
    );
    link.send(&modern(2, "tools/list", json!({})));
    assert_eq!(link.frame().await["id"], 2);
    link.close().await;
    assert!(posts_of(&log, "notifications/cancelled").is_empty());
}

#[tokio::test]
async fn a_shared_registry_learns_the_tools_and_serves_later_links() {
    let (url, log) = serve(modern_server()).await;
    let registry = ToolHeaderRegistry::new();
    let connector = Arc::new(
        HttpConnector::new(&url)
            .unwrap()
            .tool_headers(registry.clone()),
    );
    let mut link = Link::open(connector.clone()).await;
    link.send(&modern(1, "tools/list", json!({})));
    link.frame().await;
    link.close().await;
    assert!(registry.get("weather").is_some());
    assert!(registry.get("broken").is_none());
    // A new link of the same connector knows the mappings without listing again.
    let mut link = Link::open(connector).await;
    link.send(&modern(
        2,
        "tools/call",
        json!({"name": "weather", "arguments": {"region": "x"}}),
    ));
    link.frame().await;
    link.close().await;
    let call = &posts_of(&log, "tools/call")[0];
    assert_eq!(call.header("mcp-param-region"), Some("x"));
}

#[tokio::test]
async fn a_modern_refusal_does_not_make_the_auto_connector_fall_back() {
    let (url, log) = serve(refusing_first(|_| Answer::Status(404, vec![]))).await;
    let auto = AutoHttpConnector::new(&url).unwrap();
    let mut link = Link::open(Arc::new(auto.clone())).await;
    link.send(&modern(1, "server/discover", json!({})));
    let made_up = link.frame().await;
    assert_eq!(made_up["error"]["code"], HTTP_REFUSED);
    link.send(&modern(2, "tools/list", json!({})));
    assert_eq!(link.frame().await["id"], 2);
    link.close().await;
    assert_eq!(auto.verdict(), None);
    // No GET for a legacy event stream.
    wait_for(&log, 2, |r| r.method == "POST").await;
    assert!(log.lock().unwrap().iter().all(|r| r.method == "POST"));
}

#[tokio::test]
async fn a_cancellation_right_behind_its_request_still_finds_it() {
    // The server never answers the call; the cancellation is written right behind it, so it
    // may reach the link before the call's POST started.
    let script: Script = {
        let inner = modern_server();
        Arc::new(move |req, before| match req.rpc_method() {
            Some("tools/call") => Answer::Hang,
            _ => inner(req, before),
        })
    };
    let (url, log) = serve(script).await;
    let mut link = Link::http(&url).await;
    for id in 1..=20 {
        link.send(&modern(
            id,
            "tools/call",
            json!({"name": "slow", "arguments": {}}),
        ));
        link.send(
            &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": id}}),
        );
    }
    link.send(&modern(21, "tools/list", json!({})));
    // Only the list is answered: every call was aborted, none made up.
    assert_eq!(link.frame().await["id"], 21);
    link.quiet().await;
    link.close().await;
    assert!(posts_of(&log, "notifications/cancelled").is_empty());
}
