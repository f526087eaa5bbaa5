//! The bridge's stdio front against the in-repo test server, in process: a host written here
//! speaks JSON-RPC lines to the bridge; the bridge's upstream is the test server over an
//! in-memory stream (a new server for every connect, so a server that dies comes back).

use std::time::Duration;

use mcp_bridge::{Bridge, BridgeOptions, BridgeReport, Ended};
use mcp_runtime::ClientBuilder;
use mcp_runtime::transport::StreamConnector;
use mcp_testserver::ServerConfig;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, ReadHalf, WriteHalf};
use tokio::task::JoinHandle;

/// Every wait of a test is bounded by this: a test fails, never hangs.
const BOUND: Duration = Duration::from_secs(20);

struct Host {
    tx: WriteHalf<DuplexStream>,
    rx: tokio::io::Lines<BufReader<ReadHalf<DuplexStream>>>,
    /// Messages read while waiting for another one (notifications, server requests).
    seen: Vec<Value>,
    bridge: JoinHandle<BridgeReport>,
}

fn upstream(config: ServerConfig) -> ClientBuilder {
    let connector = StreamConnector::from_fn(move || {
        let config = config.clone();
        async move {
            let (ours, theirs) = tokio::io::duplex(1 << 20);
            let (r, w) = tokio::io::split(theirs);
            tokio::spawn(mcp_testserver::serve(r, w, config));
            Ok(tokio::io::split(ours))
        }
    });
    ClientBuilder::new(connector).backoff(Duration::from_millis(10), Duration::from_millis(50), 0)
}

fn start_with(config: ServerConfig, options: BridgeOptions) -> Host {
    let (host_side, bridge_side) = tokio::io::duplex(1 << 20);
    let (br, bw) = tokio::io::split(bridge_side);
    let bridge = Bridge::new(move |_host| upstream(config)).options(options);
    let bridge = tokio::spawn(bridge.serve(br, bw, std::future::pending()));
    let (hr, hw) = tokio::io::split(host_side);
    Host {
        tx: hw,
        rx: BufReader::new(hr).lines(),
        seen: Vec::new(),
        bridge,
    }
}

fn start(config: ServerConfig) -> Host {
    start_with(config, BridgeOptions::default())
}

impl Host {
    async fn send_raw(&mut self, line: &[u8]) {
        self.tx.write_all(line).await.unwrap();
        self.tx.write_all(b"\n").await.unwrap();
        self.tx.flush().await.unwrap();
    }

    async fn send(&mut self, v: Value) {
        self.send_raw(v.to_string().as_bytes()).await;
    }

    async fn next(&mut self) -> Value {
        let line = tokio::time::timeout(BOUND, self.rx.next_line())
            .await
            .expect("the bridge wrote nothing in time")
            .unwrap()
            .expect("the bridge closed its output");
        serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("not JSON from the bridge: {e}: {line}"))
    }

    /// The answer to request `id` (what comes before it is kept in `seen`).
    async fn answer(&mut self, id: Value) -> Value {
        loop {
            let m = self.next().await;
            if m.get("id") == Some(&id) && m.get("method").is_none() {
                return m;
            }
            self.seen.push(m);
        }
    }

    async fn request(&mut self, id: Value, method: &str, params: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        self.answer(id).await
    }

    /// The next message for which `pick` holds, looking at what was kept first.
    async fn wait_for(&mut self, pick: impl Fn(&Value) -> bool) -> Value {
        if let Some(at) = self.seen.iter().position(&pick) {
            return self.seen.remove(at);
        }
        loop {
            let m = self.next().await;
            if pick(&m) {
                return m;
            }
            self.seen.push(m);
        }
    }

    async fn init(&mut self, capabilities: Value) -> Value {
        let r = self
            .request(
                json!(0),
                "initialize",
                json!({"protocolVersion": "2025-06-18", "capabilities": capabilities,
                       "clientInfo": {"name": "test-host", "version": "1"}}),
            )
            .await;
        self.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        r
    }

    async fn call(&mut self, id: Value, tool: &str, args: Value) -> Value {
        self.request(id, "tools/call", json!({"name": tool, "arguments": args}))
            .await
    }

    /// Closes the host's side and waits for the bridge to end.
    async fn close(mut self) -> BridgeReport {
        self.tx.shutdown().await.unwrap();
        tokio::time::timeout(BOUND, self.bridge)
            .await
            .expect("the bridge did not end after the host left")
            .unwrap()
    }
}

fn text(result: &Value) -> String {
    result["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn a_host_initializes_lists_and_calls_with_its_own_progress_token() {
    let mut host = start(ServerConfig::echo());
    let init = host.init(json!({})).await;
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18");
    assert_eq!(init["result"]["serverInfo"]["name"], "mcp-echo-server");
    assert_eq!(init["result"]["capabilities"]["tools"]["listChanged"], true);
    let tools = host.request(json!("t"), "tools/list", json!({})).await;
    let names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(names.contains(&"echo"), "{names:?}");
    let echo = host.call(json!(1), "echo", json!({"message": "hi"})).await;
    assert_eq!(text(&echo), "Echo: hi");
    // Progress under the host's token, before the answer.
    host.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "slow", "arguments": {"ms": 30, "steps": 3},
                   "_meta": {"progressToken": "host-token"}}}))
        .await;
    let done = host.answer(json!(2)).await;
    assert!(done.get("result").is_some(), "{done}");
    let progress: Vec<&Value> = host
        .seen
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .collect();
    assert_eq!(progress.len(), 3, "{:?}", host.seen);
    assert!(
        progress
            .iter()
            .all(|p| p["params"]["progressToken"] == "host-token")
    );
    let ping = host.request(json!(3), "ping", json!({})).await;
    assert_eq!(ping["result"], json!({}));
    let report = host.close().await;
    assert_eq!(report.ended, Ended::HostClosed);
    assert!(report.upstream_closed);
    assert_eq!(report.answered, 3, "tools/list, echo, slow");
}

#[tokio::test]
async fn a_cancelled_call_is_never_answered_and_the_upstream_is_told() {
    let mut host = start(ServerConfig::echo());
    host.init(json!({})).await;
    host.send(json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "slow", "arguments": {"ms": 60000, "steps": 6000},
                   "_meta": {"progressToken": 1}}}))
        .await;
    // In flight upstream once its progress comes.
    host.wait_for(|m| m["method"] == "notifications/progress")
        .await;
    host.send(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 7, "reason": "user"}}),
    )
    .await;
    // The server records the cancellation of its request (under the client's own id).
    let mut cancelled_upstream = 0;
    for attempt in 0..200 {
        let info = session_info(&mut host, json!(100 + attempt)).await;
        cancelled_upstream = info["cancelled"].as_array().map_or(0, Vec::len);
        if cancelled_upstream > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        cancelled_upstream, 1,
        "the server never saw the cancellation"
    );
    assert!(
        !host
            .seen
            .iter()
            .any(|m| m["id"] == 7 && m.get("method").is_none()),
        "the cancelled call was answered: {:?}",
        host.seen
    );
    let report = host.close().await;
    assert_eq!(report.cancelled, 1);
}

/// What the test server recorded about the bridge's session.
async fn session_info(host: &mut Host, id: Value) -> Value {
    let info = host.call(id, "session_info", json!({})).await;
    serde_json::from_str(&text(&info))
        .unwrap_or_else(|_| info["result"]["structuredContent"].clone())
}

#[tokio::test]
async fn server_requests_reach_the_host_and_its_answers_go_back() {
    let mut host = start(ServerConfig::echo());
    host.init(json!({"sampling": {}, "elicitation": {}, "roots": {"listChanged": true}}))
        .await;
    // sampling
    host.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "sample", "arguments": {"prompt": "2+2?"}}}))
        .await;
    let req = host
        .wait_for(|m| m["method"] == "sampling/createMessage")
        .await;
    assert!(req["id"].is_u64(), "{req}");
    host.send(json!({"jsonrpc": "2.0", "id": req["id"], "result": {
        "role": "assistant", "content": {"type": "text", "text": "four"}, "model": "m"}}))
        .await;
    let r = host.answer(json!(1)).await;
    assert!(r.to_string().contains("four"), "{r}");
    // elicitation
    host.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "elicit", "arguments": {"message": "name?"}}}))
        .await;
    let req = host.wait_for(|m| m["method"] == "elicitation/create").await;
    host.send(json!({"jsonrpc": "2.0", "id": req["id"], "result": {
        "action": "accept", "content": {"name": "ada"}}}))
        .await;
    let r = host.answer(json!(2)).await;
    assert!(r.to_string().contains("accept"), "{r}");
    // roots
    host.send(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "roots", "arguments": {}}}))
        .await;
    let req = host.wait_for(|m| m["method"] == "roots/list").await;
    // No params, not `"params": null` (which the TypeScript SDK refuses).
    assert!(req.get("params").is_none_or(Value::is_object), "{req}");
    host.send(json!({"jsonrpc": "2.0", "id": req["id"], "result": {
        "roots": [{"uri": "file:///work", "name": "work"}]}}))
        .await;
    let r = host.answer(json!(3)).await;
    assert!(r.to_string().contains("file:///work"), "{r}");
    // The host's error goes back as the server's request's error.
    host.send(json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
        "params": {"name": "sample", "arguments": {"prompt": "no"}}}))
        .await;
    let req = host
        .wait_for(|m| m["method"] == "sampling/createMessage")
        .await;
    host.send(json!({"jsonrpc": "2.0", "id": req["id"],
        "error": {"code": -1, "message": "user declined"}}))
        .await;
    let r = host.answer(json!(4)).await;
    assert!(r.to_string().contains("user declined"), "{r}");
    let report = host.close().await;
    assert_eq!(report.server_requests, 4);
}

#[tokio::test]
async fn a_server_that_dies_fails_only_the_call_in_flight() {
    let mut host = start(ServerConfig::chaos());
    host.init(json!({})).await;
    let dead = host.call(json!(1), "die", json!({})).await;
    assert_eq!(dead["error"]["code"], -32000, "{dead}");
    // The next call waits for the reconnect and is answered.
    let echo = host
        .call(json!(2), "echo", json!({"message": "back"}))
        .await;
    assert_eq!(text(&echo), "Echo: back", "{echo}");
    host.close().await;
}

#[tokio::test]
async fn garbage_oversized_and_duplicate_ids_are_answered_and_the_session_goes_on() {
    let mut options = BridgeOptions::default();
    options.max_frame_bytes = 1024;
    let mut host = start_with(ServerConfig::chaos(), options);
    host.init(json!({})).await;
    host.send_raw(b"{not json").await;
    let e = host.next().await;
    assert_eq!(
        (e["id"].clone(), e["error"]["code"].clone()),
        (Value::Null, json!(-32700))
    );
    host.send_raw(b"[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]")
        .await;
    assert_eq!(host.next().await["error"]["code"], -32600);
    let long = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"ping\",\"params\":{{\"x\":\"{}\"}}}}",
        "a".repeat(5000)
    );
    host.send_raw(long.as_bytes()).await;
    let e = host.next().await;
    assert_eq!(e["error"]["code"], -32600, "{e}");
    assert!(
        e["error"]["message"]
            .as_str()
            .unwrap()
            .contains("too large")
    );
    // Two calls under one id at once: the second is refused, the first answered once.
    host.send(json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
        "params": {"name": "late", "arguments": {"ms": 200}}}))
        .await;
    host.send(json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"message": "dup"}}}))
        .await;
    let first = host.answer(json!(5)).await;
    assert_eq!(first["error"]["code"], -32600, "{first}");
    let second = host.answer(json!(5)).await;
    assert!(second.get("result").is_some(), "{second}");
    // A request before it is answered is fine, a second initialize is not.
    let again = host.init(json!({})).await;
    assert_eq!(again["error"]["code"], -32600);
    let echo = host
        .call(json!(6), "echo", json!({"message": "still"}))
        .await;
    assert_eq!(text(&echo), "Echo: still");
    let report = host.close().await;
    assert_eq!(report.invalid, 3);
}

#[tokio::test]
async fn requests_before_initialize_are_refused() {
    let mut host = start(ServerConfig::echo());
    let r = host.request(json!(1), "tools/list", json!({})).await;
    assert_eq!(r["error"]["code"], -32600);
    let init = host.init(json!({})).await;
    assert!(init.get("result").is_some(), "{init}");
    host.close().await;
}

/// The `_meta` of a 2026-07-28 request.
fn modern_meta() -> Value {
    json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
           "io.modelcontextprotocol/clientCapabilities": {"sampling": {}, "elicitation": {}},
           "io.modelcontextprotocol/clientInfo": {"name": "modern-host", "version": "1"}})
}

#[tokio::test]
async fn a_2026_07_28_host_discovers_calls_and_answers_input_rounds() {
    let mut host = start(ServerConfig::echo());
    let d = host
        .request(json!(1), "server/discover", json!({"_meta": modern_meta()}))
        .await;
    assert_eq!(
        d["result"]["supportedVersions"],
        json!(["2026-07-28"]),
        "{d}"
    );
    assert_eq!(
        d["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "mcp-echo-server"
    );
    let echo = host
        .request(
            json!(2),
            "tools/call",
            json!({"name": "echo", "arguments": {"message": "m"}, "_meta": modern_meta()}),
        )
        .await;
    assert_eq!(echo["result"]["resultType"], "complete", "{echo}");
    assert_eq!(text(&echo), "Echo: m");
    // A list of a handshake-era upstream gets the cache hints a 2026-07-28 host requires
    // (nothing may be kept), and no call's result does.
    let tools = host
        .request(json!(20), "tools/list", json!({"_meta": modern_meta()}))
        .await;
    assert_eq!(
        (&tools["result"]["ttlMs"], &tools["result"]["cacheScope"]),
        (&json!(0), &json!("private")),
        "{tools}"
    );
    assert!(echo["result"].get("ttlMs").is_none());
    // The upstream (a handshake-era server) asks for sampling during the call: the host gets
    // it as input asked in the call's answer, never as a request.
    let asked = host
        .request(
            json!(3),
            "tools/call",
            json!({"name": "sample", "arguments": {"prompt": "2+2?"}, "_meta": modern_meta()}),
        )
        .await;
    assert_eq!(asked["result"]["resultType"], "input_required", "{asked}");
    let inputs = asked["result"]["inputRequests"].as_object().unwrap();
    assert_eq!(inputs.len(), 1);
    let (key, input) = inputs.iter().next().unwrap();
    assert_eq!(input["method"], "sampling/createMessage");
    let state = asked["result"]["requestState"].clone();
    assert!(state.is_string());
    let done = host
        .request(
            json!(4),
            "tools/call",
            json!({"name": "sample", "arguments": {"prompt": "2+2?"}, "_meta": modern_meta(),
                   "requestState": state,
                   "inputResponses": {key.clone(): {"role": "assistant", "model": "m",
                       "content": {"type": "text", "text": "four"}}}}),
        )
        .await;
    assert_eq!(done["result"]["resultType"], "complete", "{done}");
    assert!(done.to_string().contains("four"), "{done}");
    assert!(
        !host
            .seen
            .iter()
            .any(|m| m["method"] == "sampling/createMessage"),
        "a 2026-07-28 host got a request: {:?}",
        host.seen
    );
    host.close().await;
}

#[tokio::test]
async fn a_2026_07_28_host_hears_list_changes_on_its_listen_only() {
    let mut host = start(ServerConfig::echo());
    host.request(json!(1), "server/discover", json!({"_meta": modern_meta()}))
        .await;
    host.send(
        json!({"jsonrpc": "2.0", "id": "L", "method": "subscriptions/listen",
        // Malformed parts of the filter (a flag that is not `true`, a URI that is not a
        // string) are not honored, and the acknowledgement says so.
        "params": {"notifications": {"toolsListChanged": true, "promptsListChanged": "yes",
                                     "resourceSubscriptions": [7]},
                   "_meta": modern_meta()}}),
    )
    .await;
    let ack = host
        .wait_for(|m| m["method"] == "notifications/subscriptions/acknowledged")
        .await;
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "L"
    );
    host.request(
        json!(2),
        "tools/call",
        json!({"name": "notify_changed", "arguments": {"list": "tools"}, "_meta": modern_meta()}),
    )
    .await;
    let change = host
        .wait_for(|m| m["method"] == "notifications/tools/list_changed")
        .await;
    assert_eq!(
        change["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "L"
    );
    host.close().await;
}

#[tokio::test]
async fn the_host_leaving_mid_call_ends_the_bridge_and_stops_the_upstream() {
    let mut host = start(ServerConfig::echo());
    host.init(json!({})).await;
    host.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "slow", "arguments": {"ms": 60000}}}))
        .await;
    let report = host.close().await;
    assert_eq!(report.ended, Ended::HostClosed);
    assert!(report.upstream_closed);
    assert_eq!(report.answered, 0);
}

#[tokio::test]
async fn upstream_notifications_reach_the_host() {
    let mut host = start(ServerConfig::echo());
    host.init(json!({})).await;
    let r = host
        .request(json!(1), "logging/setLevel", json!({"level": "info"}))
        .await;
    assert_eq!(r["result"], json!({}), "{r}");
    host.call(
        json!(2),
        "log",
        json!({"level": "warning", "message": "careful"}),
    )
    .await;
    let log = host
        .wait_for(|m| m["method"] == "notifications/message")
        .await;
    assert_eq!(log["params"]["data"], "careful");
    host.call(json!(3), "notify_changed", json!({"list": "prompts"}))
        .await;
    host.wait_for(|m| m["method"] == "notifications/prompts/list_changed")
        .await;
    let r = host
        .request(
            json!(4),
            "resources/subscribe",
            json!({"uri": "test://static/1"}),
        )
        .await;
    assert_eq!(r["result"], json!({}), "{r}");
    host.call(json!(5), "touch", json!({"uri": "test://static/1"}))
        .await;
    let updated = host
        .wait_for(|m| m["method"] == "notifications/resources/updated")
        .await;
    assert_eq!(updated["params"]["uri"], "test://static/1");
    host.close().await;
}

#[tokio::test]
async fn a_silent_upstream_times_the_call_out_and_the_next_call_is_answered() {
    let mut options = BridgeOptions::default();
    options.call_timeout = Duration::from_millis(300);
    let mut host = start_with(ServerConfig::chaos(), options);
    host.init(json!({})).await;
    let r = host.call(json!(1), "hang", json!({})).await;
    assert_eq!(r["error"]["code"], -32001, "{r}");
    // The hung server is replaced (the client's own liveness), or answers again: either way
    // the host's next call gets one answer.
    let r = host.call(json!(2), "echo", json!({"message": "x"})).await;
    assert!(r.get("result").is_some() || r.get("error").is_some(), "{r}");
    host.close().await;
}

#[tokio::test]
async fn a_flooding_upstream_reaches_the_host_in_order_and_the_answer_follows() {
    let mut host = start(ServerConfig::chaos());
    host.init(json!({})).await;
    host.request(json!(1), "logging/setLevel", json!({"level": "debug"}))
        .await;
    let r = host.call(json!(2), "flood", json!({"count": 2000})).await;
    assert!(r.get("result").is_some(), "{r}");
    let logs = host
        .seen
        .iter()
        .filter(|m| m["method"] == "notifications/message")
        .count();
    // Forwarded as sent; the client's notification feed is bounded, so some may be dropped
    // under a flood, none is invented.
    assert!(logs > 0 && logs <= 2000, "{logs}");
    let r = host
        .call(json!(3), "echo", json!({"message": "after"}))
        .await;
    assert_eq!(text(&r), "Echo: after");
    host.close().await;
}

#[tokio::test]
async fn a_server_request_the_upstream_gives_up_on_is_cancelled_at_the_host() {
    let mut options = BridgeOptions::default();
    options.server_request_timeout = Duration::from_millis(200);
    let mut host = start_with(ServerConfig::echo(), options);
    host.init(json!({"sampling": {}})).await;
    host.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "sample", "arguments": {"prompt": "never answered"}}}))
        .await;
    let req = host
        .wait_for(|m| m["method"] == "sampling/createMessage")
        .await;
    // The host never answers: the bridge's bound runs out, the upstream gets an error and
    // the host is told the request is cancelled.
    let cancel = host
        .wait_for(|m| m["method"] == "notifications/cancelled")
        .await;
    assert_eq!(cancel["params"]["requestId"], req["id"]);
    let r = host.answer(json!(1)).await;
    assert!(r.get("result").is_some() || r.get("error").is_some(), "{r}");
    // A late answer from the host is dropped, the session goes on.
    host.send(json!({"jsonrpc": "2.0", "id": req["id"], "result": {
        "role": "assistant", "content": {"type": "text", "text": "late"}, "model": "m"}}))
        .await;
    let r = host.call(json!(2), "echo", json!({"message": "on"})).await;
    assert_eq!(text(&r), "Echo: on");
    let report = host.close().await;
    assert_eq!(report.server_requests_ended, 1);
}
