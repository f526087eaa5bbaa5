//! The eras of the built binaries: a modern server (`--era modern`), a dual one, and how a
//! legacy server reacts to the modern probe (`--probe`), over stdio and (modern) over HTTP.

mod common;

use std::process::Stdio;
use std::time::Duration;

use common::{Peer, text};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

const ECHO: &str = env!("CARGO_BIN_EXE_mcp-echo-server");
const MODERN: &str = "2026-07-28";

fn spawn(args: &[&str]) -> (Peer<ChildStdout, ChildStdin>, Child) {
    let mut child = Command::new(ECHO)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    (Peer::new(stdout, stdin), child)
}

/// `params` with the modern `_meta` asking for `version`.
fn modern(version: &str, mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
        "io.modelcontextprotocol/clientInfo": {"name": "era-test", "version": "0"},
    });
    params
}

fn initialize() -> Value {
    json!({"protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "era-test", "version": "0"}})
}

async fn exit_code(child: &mut Child) -> Option<i32> {
    tokio::time::timeout(Duration::from_secs(2), child.wait())
        .await
        .expect("the server did not exit")
        .unwrap()
        .code()
}

#[tokio::test]
async fn modern_server_discovers_refuses_and_confirms() {
    let (mut p, mut child) = spawn(&["--era", "modern"]);
    let d = p.result("server/discover", modern(MODERN, json!({}))).await;
    assert_eq!(d["resultType"], "complete");
    assert_eq!(d["supportedVersions"], json!([MODERN]));
    assert_eq!(d["capabilities"]["tools"], json!({"listChanged": true}));
    assert_eq!(
        d["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "mcp-echo-server"
    );
    assert_eq!(d["ttlMs"], 60000);
    assert_eq!(d["cacheScope"], "public");

    let wrong = p
        .request("tools/list", modern("2025-11-25", json!({})))
        .await;
    assert_eq!(wrong["error"]["code"], -32022);
    assert_eq!(
        wrong["error"]["data"],
        json!({"supported": [MODERN], "requested": "2025-11-25"})
    );
    let init = p.request("initialize", initialize()).await;
    assert_eq!(init["error"]["code"], -32022);
    assert_eq!(init["error"]["data"]["supported"], json!([MODERN]));
    let bare = p.request("tools/list", json!({})).await;
    assert_eq!(bare["error"]["code"], -32602);

    let call = |extra: Value| {
        let mut params = json!({"name": "confirm_action", "arguments": {}});
        for (k, v) in extra.as_object().unwrap() {
            params[k] = v.clone();
        }
        modern(MODERN, params)
    };
    let asked = p.result("tools/call", call(json!({}))).await;
    assert_eq!(asked["resultType"], "input_required");
    let state = asked["requestState"].clone();
    let answer = json!({"confirm": {"action": "accept", "content": {"confirmed": true}}});
    let done = p
        .result(
            "tools/call",
            call(json!({"inputResponses": answer, "requestState": state})),
        )
        .await;
    assert_eq!(done["resultType"], "complete");
    assert!(text(&done).contains("accept"), "{done}");
    let forged = p
        .request(
            "tools/call",
            call(json!({"inputResponses": answer, "requestState": "forged"})),
        )
        .await;
    assert_eq!(forged["error"]["code"], -32602);
    p.close().await;
    assert_eq!(exit_code(&mut child).await, Some(0));
}

#[tokio::test]
async fn modern_versions_and_omitted_result_type() {
    let (mut p, _child) = spawn(&[
        "--era=modern",
        "--modern-versions",
        "2099-01-01",
        "--omit-result-type",
    ]);
    let refused = p
        .request("server/discover", modern(MODERN, json!({})))
        .await;
    assert_eq!(refused["error"]["code"], -32022);
    assert_eq!(refused["error"]["data"]["supported"], json!(["2099-01-01"]));
    let d = p
        .result("server/discover", modern("2099-01-01", json!({})))
        .await;
    assert!(d.get("resultType").is_none(), "{d}");
    assert_eq!(d["supportedVersions"], json!(["2099-01-01"]));
}

#[tokio::test]
async fn legacy_probe_modes() {
    // Default: -32601, and the handshake goes on.
    let (mut p, _child) = spawn(&[]);
    let r = p
        .request("server/discover", modern(MODERN, json!({})))
        .await;
    assert_eq!(r["error"]["code"], -32601);
    assert_eq!(
        p.handshake("2025-11-25").await["protocolVersion"],
        "2025-11-25"
    );

    // die: exits at once with code 3.
    let (mut p, mut child) = spawn(&["--probe", "die"]);
    p.send_request("server/discover", modern(MODERN, json!({})))
        .await;
    assert_eq!(p.recv_raw().await, None);
    assert_eq!(exit_code(&mut child).await, Some(3));

    // silent: no answer, but initialize is answered after it.
    let (mut p, _child) = spawn(&["--probe", "silent"]);
    p.send_request("server/discover", modern(MODERN, json!({})))
        .await;
    assert!(p.recv_within(Duration::from_millis(300)).await.is_none());
    let r = p.handshake("2025-06-18").await;
    assert_eq!(r["protocolVersion"], "2025-06-18");
    assert!(p.seen.is_empty(), "{:?}", p.seen);

    // garbage: a result that is no DiscoverResult.
    let (mut p, _child) = spawn(&["--probe=garbage"]);
    let r = p.result("server/discover", modern(MODERN, json!({}))).await;
    assert_eq!(r, json!({}));
}

#[tokio::test]
async fn dual_server_answers_both_eras() {
    let (mut p, _child) = spawn(&["--era", "dual"]);
    let d = p.result("server/discover", modern(MODERN, json!({}))).await;
    assert_eq!(d["supportedVersions"], json!([MODERN]));
    let tools = p.result("tools/list", modern(MODERN, json!({}))).await;
    assert_eq!(tools["resultType"], "complete");
    let r = p.handshake("2025-11-25").await;
    assert_eq!(r["protocolVersion"], "2025-11-25");
    let legacy = p.result("tools/list", json!({})).await;
    assert!(legacy.get("resultType").is_none(), "{legacy}");
    let names: Vec<&str> = legacy["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(names.contains(&"echo") && !names.contains(&"confirm_action"));
}

/// Spawns the binary over HTTP with `args`; returns the endpoint URL.
async fn spawn_http(args: &[&str]) -> (String, Child) {
    let mut child = Command::new(ECHO)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let url = tokio::time::timeout(Duration::from_secs(5), lines.next_line())
        .await
        .expect("no URL in time")
        .unwrap()
        .expect("no URL");
    (url, child)
}

#[tokio::test]
async fn modern_over_http() {
    let (url, _child) = spawn_http(&["--era", "modern", "--http", "127.0.0.1:0", "--json"]).await;
    let http = reqwest::Client::new();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover",
        "params": modern(MODERN, json!({}))});
    let post = |version: &str, method: &str, body: &Value| {
        http.post(&url)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .header("mcp-protocol-version", version)
            .header("mcp-method", method)
            .body(body.to_string())
            .send()
    };
    let ok = post(MODERN, "server/discover", &body).await.unwrap();
    assert_eq!(ok.status(), 200);
    assert!(ok.headers().get("mcp-session-id").is_none());
    let v: Value = serde_json::from_slice(&ok.bytes().await.unwrap()).unwrap();
    assert_eq!(v["result"]["supportedVersions"], json!([MODERN]));

    let bad = post("2025-11-25", "server/discover", &body).await.unwrap();
    assert_eq!(bad.status(), 400);
    let v: Value = serde_json::from_slice(&bad.bytes().await.unwrap()).unwrap();
    assert_eq!(v["error"]["code"], -32020);
    assert_eq!(v["id"], 1);

    let bad = post(MODERN, "tools/list", &body).await.unwrap();
    assert_eq!(bad.status(), 400);

    // Mcp-Name, base64-encoded.
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": modern(MODERN, json!({"name": "echo", "arguments": {"message": "hi"}}))});
    let r = http
        .post(&url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", MODERN)
        .header("mcp-method", "tools/call")
        .header("mcp-name", "=?base64?ZWNobw==?=")
        .body(call.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let v: Value = serde_json::from_slice(&r.bytes().await.unwrap()).unwrap();
    assert_eq!(v["result"]["content"][0]["text"], "Echo: hi");
    let r = post(MODERN, "tools/call", &call).await.unwrap();
    assert_eq!(r.status(), 400, "no Mcp-Name");

    let unknown = json!({"jsonrpc": "2.0", "id": 3, "method": "nope",
        "params": modern(MODERN, json!({}))});
    let r = post(MODERN, "nope", &unknown).await.unwrap();
    assert_eq!(r.status(), 404);
    let v: Value = serde_json::from_slice(&r.bytes().await.unwrap()).unwrap();
    assert_eq!(v["error"]["code"], -32601);

    // -32022 for a version the server lacks, -32602 without `_meta`, -32020 without the header.
    let later = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list",
        "params": modern("2099-01-01", json!({}))});
    let bare = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/list", "params": {}});
    for (version, body, code) in [("2099-01-01", &later, -32022), (MODERN, &bare, -32602)] {
        let r = post(version, "tools/list", body).await.unwrap();
        assert_eq!(r.status(), 400);
        let v: Value = serde_json::from_slice(&r.bytes().await.unwrap()).unwrap();
        assert_eq!(v["error"]["code"], code, "{v}");
    }
    let r = http
        .post(&url)
        .header("content-type", "application/json")
        .header("mcp-method", "tools/list")
        .body(later.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let v: Value = serde_json::from_slice(&r.bytes().await.unwrap()).unwrap();
    assert_eq!(v["error"]["code"], -32020);

    // A modern-only server refuses initialize recognisably.
    let init = json!({"jsonrpc": "2.0", "id": 6, "method": "initialize", "params": initialize()});
    let r = http
        .post(&url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(init.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    assert!(r.headers().get("mcp-session-id").is_none());
    let v: Value = serde_json::from_slice(&r.bytes().await.unwrap()).unwrap();
    assert_eq!(v["error"]["code"], -32022);
    assert_eq!(v["error"]["data"]["supported"], json!([MODERN]));

    let r = http.get(&url).send().await.unwrap();
    assert_eq!(r.status(), 405);
}

/// The JSON-RPC messages of an SSE body.
fn events(body: &str) -> Vec<Value> {
    body.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}

#[tokio::test]
async fn dual_over_http_with_sse() {
    let (url, _child) = spawn_http(&["--era", "dual", "--http", "127.0.0.1:0"]).await;
    let http = reqwest::Client::new();
    let post = |headers: &[(&str, &str)], body: Value| {
        let mut req = http
            .post(&url)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json");
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        req.body(body.to_string()).send()
    };
    // Modern: a result streamed, progress first.
    let slow = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": modern(MODERN, json!({"name": "slow", "arguments": {"ms": 20, "steps": 2}}))});
    let mut slow_params = slow.clone();
    slow_params["params"]["_meta"]["progressToken"] = json!("p1");
    let r = post(
        &[
            ("mcp-protocol-version", MODERN),
            ("mcp-method", "tools/call"),
            ("mcp-name", "slow"),
        ],
        slow_params,
    )
    .await
    .unwrap();
    assert_eq!(r.status(), 200);
    assert!(r.headers().get("mcp-session-id").is_none());
    let got = events(&r.text().await.unwrap());
    assert_eq!(got.first().unwrap()["method"], "notifications/progress");
    let last = got.last().unwrap();
    assert_eq!(
        (last["id"].clone(), last["result"]["resultType"].clone()),
        (json!(1), json!("complete"))
    );

    // Modern error: 400 with a JSON body even without --json.
    let r = post(
        &[
            ("mcp-protocol-version", MODERN),
            ("mcp-method", "tools/list"),
        ],
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list",
            "params": modern("2025-11-25", json!({}))}),
    )
    .await
    .unwrap();
    assert_eq!(r.status(), 400);
    let v: Value = serde_json::from_slice(&r.bytes().await.unwrap()).unwrap();
    assert_eq!(v["error"]["code"], -32020);

    // Legacy: initialize starts a session as before.
    let r = post(
        &[],
        json!({"jsonrpc": "2.0", "id": 3, "method": "initialize", "params": initialize()}),
    )
    .await
    .unwrap();
    assert_eq!(r.status(), 200);
    assert!(r.headers().get("mcp-session-id").is_some());
    let got = events(&r.text().await.unwrap());
    assert_eq!(
        got.last().unwrap()["result"]["protocolVersion"],
        "2025-11-25"
    );
}

#[tokio::test]
async fn legacy_probe_over_http() {
    let discover = json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover",
        "params": modern(MODERN, json!({}))});
    let http = reqwest::Client::new();
    let send = |url: String| {
        http.post(url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", MODERN)
            .header("mcp-method", "server/discover")
            .body(discover.to_string())
            .timeout(Duration::from_millis(500))
            .send()
    };
    let (url, _a) = spawn_http(&["--http", "127.0.0.1:0", "--json"]).await;
    let r = send(url).await.unwrap();
    assert_eq!(r.status(), 400, "as before: no session id");
    let (url, _b) = spawn_http(&["--http", "127.0.0.1:0", "--probe", "garbage"]).await;
    let v: Value =
        serde_json::from_slice(&send(url).await.unwrap().bytes().await.unwrap()).unwrap();
    assert_eq!(v["result"], json!({}));
    let (url, _c) = spawn_http(&["--http", "127.0.0.1:0", "--probe", "silent"]).await;
    assert!(send(url).await.unwrap_err().is_timeout());
    let (url, _d) = spawn_http(&["--http", "127.0.0.1:0", "--probe", "die"]).await;
    let cut = match send(url).await {
        Err(_) => true,
        Ok(r) => r.bytes().await.is_err(),
    };
    assert!(cut, "die cuts the connection");
}
