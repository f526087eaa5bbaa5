//! The bridge's Streamable HTTP front, in process: our own client (Streamable HTTP) as the
//! host, the in-repo test server as the upstream (a new one per upstream connect, counted), and
//! raw HTTP for what a client library would not do (wrong hosts, origins and tokens, a
//! resumed stream).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use mcp_bridge::http::{HttpFront, HttpOptions, MakeUpstreams};
use mcp_bridge::{BridgeOptions, Upstream};
use mcp_runtime::transport::StreamConnector;
use mcp_runtime::{ClientBuilder, CreateMessageResult, Handlers, RequestOptions};
use mcp_testserver::ServerConfig;
use serde_json::{Value, json};

const BOUND: Duration = Duration::from_secs(20);

/// A running front; `live` counts upstream servers still serving.
struct Front {
    url: String,
    live: Arc<AtomicUsize>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
}

async fn start(options: HttpOptions) -> Front {
    let live = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&live);
    let make: MakeUpstreams = Arc::new(move |_host| {
        let live = Arc::clone(&counted);
        let connector = StreamConnector::from_fn(move || {
            let live = Arc::clone(&live);
            async move {
                let (ours, theirs) = tokio::io::duplex(1 << 20);
                let (r, w) = tokio::io::split(theirs);
                live.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(async move {
                    mcp_testserver::serve(r, w, ServerConfig::echo()).await;
                    live.fetch_sub(1, Ordering::SeqCst);
                });
                Ok(tokio::io::split(ours))
            }
        });
        Upstream::Client(Box::new(ClientBuilder::new(connector)))
    });
    let front = HttpFront::bind(
        "127.0.0.1:0".parse().unwrap(),
        make,
        BridgeOptions::default(),
        options,
    )
    .await
    .expect("bind");
    let url = format!("http://{}/mcp", front.local_addr());
    let (stop, stopped) = tokio::sync::oneshot::channel();
    let task = tokio::spawn(front.run(async {
        let _ = stopped.await;
    }));
    Front {
        url,
        live,
        stop: Some(stop),
        task,
    }
}

impl Front {
    async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        tokio::time::timeout(BOUND, &mut self.task)
            .await
            .expect("the front stops")
            .unwrap();
    }

    /// Waits until `n` upstream servers are serving.
    async fn live_is(&self, n: usize) {
        tokio::time::timeout(BOUND, async {
            while self.live.load(Ordering::SeqCst) != n {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await
        .unwrap_or_else(|_| {
            panic!(
                "{} upstreams live, not {n}",
                self.live.load(Ordering::SeqCst)
            )
        });
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_works_through_the_http_front_and_its_session_ends_with_it() {
    let front = start(HttpOptions::default()).await;
    let handlers = Handlers::new().sampling(|_params, _cx| {
        Box::pin(async { Ok(CreateMessageResult::text("m", "sampled through")) })
    });
    // The handshake era: a session of its own (a 2026-07-28 client is served statelessly).
    let client = ClientBuilder::streamable_http(&front.url)
        .unwrap()
        .era(mcp_runtime::EraMode::Legacy)
        .handler(handlers)
        .connect()
        .await
        .expect("connect through the front");
    assert_eq!(client.server_info().unwrap().name, "mcp-echo-server");
    let echo = client
        .call_tool("echo", json!({"message": "over http"}))
        .await
        .unwrap();
    assert_eq!(echo.text(), "Echo: over http");
    // Progress routed to the request's stream.
    let (options, mut progress) = RequestOptions::new().progress_channel();
    let slow = client
        .call_tool_with("slow", json!({"ms": 30, "steps": 3}), options)
        .await
        .unwrap();
    assert!(slow.text().contains("3 steps"), "{}", slow.text());
    let mut seen = 0;
    while progress.try_recv().is_ok() {
        seen += 1;
    }
    assert_eq!(seen, 3);
    // The upstream's request reaches the client on the call's stream, the answer goes back.
    let sampled = client
        .call_tool("sample", json!({"prompt": "hi"}))
        .await
        .unwrap();
    assert!(
        sampled.text().contains("sampled through"),
        "{}",
        sampled.text()
    );
    front.live_is(1).await;
    // The client's DELETE ends the session: its upstream is stopped.
    client.stop().await;
    client.closed().await;
    front.live_is(0).await;
    front.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hosts_get_two_sessions_with_their_own_upstreams() {
    let front = start(HttpOptions::default()).await;
    // The handshake era: a session each (2026-07-28 clients share the stateless one).
    let legacy = || {
        ClientBuilder::streamable_http(&front.url)
            .unwrap()
            .era(mcp_runtime::EraMode::Legacy)
    };
    let a = legacy().connect().await.unwrap();
    let b = legacy().connect().await.unwrap();
    front.live_is(2).await;
    let (x, y) = tokio::join!(
        a.call_tool("echo", json!({"message": "a"})),
        b.call_tool("echo", json!({"message": "b"}))
    );
    assert_eq!(x.unwrap().text(), "Echo: a");
    assert_eq!(y.unwrap().text(), "Echo: b");
    // The front's end ends every session.
    front.stop().await;
    drop((a, b));
}

async fn post(
    http: &reqwest::Client,
    url: &str,
    headers: &[(&str, &str)],
    body: Value,
) -> reqwest::Response {
    let mut req = http
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    tokio::time::timeout(BOUND, req.body(body.to_string()).send())
        .await
        .expect("an answer in time")
        .expect("the request went")
}

fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hosts_origins_and_tokens_are_checked_before_anything() {
    let mut options = HttpOptions::default();
    options.token = Some("s3cret-token".into());
    let front = start(options).await;
    let http = reqwest::Client::new();
    let port = front
        .url
        .split(':')
        .nth(2)
        .unwrap()
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    let evil_host = format!("evil.example:{port}");
    let r = post(&http, &front.url, &[("host", &evil_host)], initialize()).await;
    assert_eq!(r.status(), 403, "DNS rebinding: a foreign Host");
    let r = post(
        &http,
        &front.url,
        &[("origin", "https://evil.example")],
        initialize(),
    )
    .await;
    assert_eq!(r.status(), 403, "a foreign Origin");
    let r = post(&http, &front.url, &[], initialize()).await;
    assert_eq!(r.status(), 401, "no token");
    assert_eq!(r.headers()["www-authenticate"], "Bearer");
    let r = post(
        &http,
        &front.url,
        &[("authorization", "Bearer wrong")],
        initialize(),
    )
    .await;
    assert_eq!(r.status(), 401, "a wrong token");
    let body = r.text().await.unwrap();
    assert!(!body.contains("s3cret"), "the token leaked: {body}");
    front.live_is(0).await;
    let r = post(
        &http,
        &front.url,
        &[("authorization", "Bearer s3cret-token")],
        initialize(),
    )
    .await;
    assert_eq!(r.status(), 200);
    assert!(r.headers().contains_key("mcp-session-id"));
    front.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_bodies_and_methods_are_checked() {
    let front = start(HttpOptions::default()).await;
    let http = reqwest::Client::new();
    let ping = json!({"jsonrpc": "2.0", "id": 2, "method": "ping"});
    let r = post(&http, &front.url, &[], ping.clone()).await;
    assert_eq!(r.status(), 400, "no session");
    let body: Value = serde_json::from_str(&r.text().await.unwrap()).unwrap();
    assert_eq!(
        body["error"]["code"], -32600,
        "not a 2026-07-28 error: a host falls back"
    );
    let r = post(
        &http,
        &front.url,
        &[("mcp-session-id", "nope")],
        ping.clone(),
    )
    .await;
    assert_eq!(r.status(), 404, "an unknown session");
    let r = post(&http, &front.url, &[], json!([ping.clone()])).await;
    assert_eq!(r.status(), 400, "a batch");
    let r = http
        .post(&front.url)
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400, "garbage");
    let r = http.put(&front.url).send().await.unwrap();
    assert_eq!(r.status(), 405);
    let r = http
        .get(front.url.replace("/mcp", "/other"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    // A session, then DELETE: later requests get 404.
    let r = post(&http, &front.url, &[], initialize()).await;
    let sid = r.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let r = http
        .delete(&front.url)
        .header("mcp-session-id", &sid)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let r = post(&http, &front.url, &[("mcp-session-id", &sid)], ping).await;
    assert_eq!(r.status(), 404);
    front.live_is(0).await;
    front.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_request_stream_is_resumed_with_last_event_id() {
    let front = start(HttpOptions::default()).await;
    let http = reqwest::Client::new();
    let r = post(&http, &front.url, &[], initialize()).await;
    let sid = r.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    drop(r);
    let s = [("mcp-session-id", sid.as_str())];
    post(
        &http,
        &front.url,
        &s,
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    .await;
    let call = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {
        "name": "slow", "arguments": {"ms": 600, "steps": 3}, "_meta": {"progressToken": "t"}}});
    let mut r = post(&http, &front.url, &s, call).await;
    // The stream's priming event (an id, `retry`, no data), then a progress notification;
    // then drop the connection.
    let mut read = String::new();
    while !read.contains("notifications/progress") || !read.ends_with("\n\n") {
        let chunk = tokio::time::timeout(BOUND, r.chunk())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        read.push_str(&String::from_utf8_lossy(&chunk));
    }
    assert!(
        read.starts_with("id: ") && read.contains("retry: "),
        "priming first: {read}"
    );
    let progress_event = read
        .split("\n\n")
        .find(|e| e.contains("notifications/progress"))
        .unwrap();
    let id = progress_event
        .lines()
        .find_map(|l| l.strip_prefix("id: "))
        .expect("events carry ids")
        .to_owned();
    drop(r);
    let resumed = tokio::time::timeout(
        BOUND,
        http.get(&front.url)
            .header("accept", "text/event-stream")
            .header("mcp-session-id", &sid)
            .header("last-event-id", &id)
            .send(),
    )
    .await
    .unwrap()
    .unwrap();
    let rest = tokio::time::timeout(BOUND, resumed.text())
        .await
        .unwrap()
        .unwrap();
    assert!(
        rest.contains(r#""id":9"#),
        "the answer comes on the resumed stream: {rest}"
    );
    assert!(
        !rest.contains(&format!("id: {id}\n")),
        "nothing before the last event: {rest}"
    );
    front.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2026_07_28_client_is_served_statelessly_with_input_rounds() {
    let front = start(HttpOptions::default()).await;
    let handlers = Handlers::new().sampling(|_params, _cx| {
        Box::pin(async { Ok(CreateMessageResult::text("m", "sampled in a round")) })
    });
    let client = ClientBuilder::streamable_http(&front.url)
        .unwrap()
        .era(mcp_runtime::EraMode::Modern)
        .handler(handlers)
        .connect()
        .await
        .expect("a 2026-07-28 client connects through the front");
    assert_eq!(client.era(), Some(mcp_runtime::Era::Modern));
    let echo = client
        .call_tool("echo", json!({"message": "stateless"}))
        .await
        .unwrap();
    assert_eq!(echo.text(), "Echo: stateless");
    // The upstream (a handshake-era server) asks for sampling: the client is asked in the
    // call's answer (input_required), answers, and the call completes.
    let sampled = client
        .call_tool("sample", json!({"prompt": "hi"}))
        .await
        .unwrap();
    assert!(
        sampled.text().contains("sampled in a round"),
        "{}",
        sampled.text()
    );
    client.stop().await;
    front.stop().await;
}
