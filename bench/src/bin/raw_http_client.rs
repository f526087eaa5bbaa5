//! The raw floor over Streamable HTTP: no MCP SDK, the HTTP client crate alone (reqwest, the
//! one this client uses). It does the handshake by hand (`initialize`, then
//! `notifications/initialized` with the session id), then POSTs one JSON-RPC `tools/call` per
//! request and parses each JSON answer with serde_json, as any client must: N sequential, then
//! N with CONC in flight. Same command line and output as `mcp_client_bench`:
//! `raw_http_client [-n N] [-c CONC] [--warmup W] [--rt current|multi] -- URL`.
//!
//! The server must answer requests with JSON bodies (the test server's `--json`).

use std::sync::Arc;
use std::time::Instant;

use serde_json::{Value, json};

fn report(label: &str, rt: &str, n: usize, conc: usize, secs: f64, lat: Vec<f64>) {
    let client = format!("raw-http (reqwest, serde_json; {rt})");
    mcp_bench::report(&client, label, n, conc, secs, lat);
}

/// One Streamable HTTP session, by hand.
struct Session {
    http: reqwest::Client,
    url: String,
    id: String,
}

impl Session {
    async fn post(&self, body: &Value) -> reqwest::Response {
        self.http
            .post(&self.url)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .header("mcp-protocol-version", "2025-11-25")
            .header("mcp-session-id", &self.id)
            .body(serde_json::to_vec(body).expect("json"))
            .send()
            .await
            .expect("POST")
    }

    async fn open(url: String) -> Session {
        let http = reqwest::Client::new();
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "raw-http", "version": "0"}}});
        let response = http
            .post(&url)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .body(serde_json::to_vec(&init).expect("json"))
            .send()
            .await
            .expect("initialize");
        let id = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        let answer: Value = serde_json::from_slice(&response.bytes().await.expect("body"))
            .expect("initialize answered with JSON (run the server with --json)");
        assert!(
            answer.get("result").is_some(),
            "initialize failed: {answer}"
        );
        let session = Session { http, url, id };
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        session
            .post(&initialized)
            .await
            .bytes()
            .await
            .expect("body");
        session
    }

    async fn echo(&self, i: usize) {
        let call = json!({"jsonrpc": "2.0", "id": i + 1, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"message": format!("m{i}")}}});
        let body = self.post(&call).await.bytes().await.expect("body");
        let answer: Value = serde_json::from_slice(&body).expect("a JSON answer");
        assert!(answer.get("result").is_some(), "echo failed: {answer}");
    }
}

async fn run(n: usize, conc: usize, warmup: usize, rt: &str, url: String) {
    let session = Arc::new(Session::open(url).await);
    for i in 0..warmup {
        session.echo(i).await;
    }
    let mut lat = Vec::with_capacity(n);
    let t0 = Instant::now();
    for i in 0..n {
        let t = Instant::now();
        session.echo(i).await;
        lat.push(t.elapsed().as_secs_f64());
    }
    report("seq", rt, n, 1, t0.elapsed().as_secs_f64(), lat);
    let (secs, lat) = mcp_bench::concurrent(n, conc, move |i| {
        let session = Arc::clone(&session);
        async move { session.echo(i).await }
    })
    .await;
    report("conc", rt, n, conc, secs, lat);
}

fn main() {
    let o = mcp_bench::Options::parse(
        "raw_http_client [-n N] [-c CONC] [--warmup W] [--rt multi|current] -- URL",
    );
    let url = o.target.into_iter().next().expect("URL");
    let runtime = mcp_bench::runtime(&o.rt);
    runtime.block_on(run(o.n, o.conc, o.warmup, &o.rt, url));
}
