//! The library over `tokio::io::duplex`, driven with raw JSON lines.

mod common;

use std::time::{Duration, Instant};

use common::{Peer, text};
use mcp_testserver::{Ended, Linger, ServerConfig, codes, serve};
use serde_json::{Value, json};
use tokio::io::{DuplexStream, ReadHalf, WriteHalf};
use tokio::task::JoinHandle;

type DPeer = Peer<ReadHalf<DuplexStream>, WriteHalf<DuplexStream>>;

fn start(config: ServerConfig) -> (DPeer, JoinHandle<Ended>) {
    let (client, server) = tokio::io::duplex(1 << 16);
    let (sr, sw) = tokio::io::split(server);
    let handle = tokio::spawn(serve(sr, sw, config));
    let (cr, cw) = tokio::io::split(client);
    (Peer::new(cr, cw), handle)
}

async fn ready(config: ServerConfig) -> (DPeer, JoinHandle<Ended>) {
    let (mut p, h) = start(config);
    p.handshake("2025-11-25").await;
    (p, h)
}

async fn ended(h: JoinHandle<Ended>) -> Ended {
    tokio::time::timeout(Duration::from_secs(2), h)
        .await
        .expect("serve did not return")
        .unwrap()
}

fn tool_names(list: &Value) -> Vec<String> {
    list["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn handshake_echoes_known_versions_and_answers_latest_otherwise() {
    for (asked, answered) in [
        ("2025-11-25", "2025-11-25"),
        ("2025-06-18", "2025-06-18"),
        ("2025-03-26", "2025-03-26"),
        ("2024-11-05", "2024-11-05"),
        ("1999-01-01", "2025-11-25"),
        ("2026-07-28", "2025-11-25"),
    ] {
        let (mut p, h) = start(ServerConfig::echo());
        let r = p.handshake(asked).await;
        assert_eq!(r["protocolVersion"], answered, "asked {asked}");
        assert_eq!(r["serverInfo"]["name"], "mcp-echo-server");
        assert!(r["serverInfo"]["version"].is_string());
        assert!(r["instructions"].is_string());
        let caps = &r["capabilities"];
        assert_eq!(caps["tools"]["listChanged"], true);
        assert_eq!(
            caps["resources"],
            json!({"subscribe": true, "listChanged": true})
        );
        assert_eq!(caps["prompts"]["listChanged"], true);
        assert_eq!(caps["logging"], json!({}));
        assert_eq!(caps["completions"], json!({}));
        p.close().await;
        assert_eq!(ended(h).await, Ended::Eof);
    }
}

#[tokio::test]
async fn version_override_and_no_instructions() {
    let config = ServerConfig {
        version_override: Some("1999-01-01".into()),
        instructions: None,
        name: "custom".into(),
        ..ServerConfig::echo()
    };
    let (mut p, _h) = start(config);
    let r = p.handshake("2025-11-25").await;
    assert_eq!(r["protocolVersion"], "1999-01-01");
    assert_eq!(r["serverInfo"]["name"], "custom");
    assert!(r.get("instructions").is_none());
}

#[tokio::test]
async fn ping_errors_and_early_requests() {
    let (mut p, _h) = start(ServerConfig::echo());
    // Before initialize: ping is fine, tools/list is answered but recorded.
    assert_eq!(p.result("ping", json!({})).await, json!({}));
    let early = p.result("tools/list", json!({})).await;
    assert!(!early["tools"].as_array().unwrap().is_empty());
    p.handshake("2025-06-18").await;

    let resp = p.request("no/such/method", json!({})).await;
    assert_eq!(resp["error"]["code"], codes::METHOD_NOT_FOUND);

    p.send_raw("{not json").await;
    let resp = p.recv().await;
    assert_eq!(resp["error"]["code"], codes::PARSE_ERROR);
    assert_eq!(resp["id"], Value::Null);

    p.send_raw(r#"[{"jsonrpc":"2.0","id":99,"method":"ping"}]"#)
        .await;
    let resp = p.recv().await;
    assert_eq!(resp["error"]["code"], codes::INVALID_REQUEST);

    // Blank lines are ignored; a ping still works after all that.
    p.send_raw("").await;
    assert_eq!(p.result("ping", json!({})).await, json!({}));

    let info = p.call("session_info", json!({})).await;
    let s = &info["structuredContent"];
    assert_eq!(s["earlyRequests"], json!(["tools/list"]));
    assert_eq!(s["initialized"], true);
    assert_eq!(s["protocolVersion"], "2025-06-18");
    assert_eq!(s["clientInfo"]["name"], "raw-test-client");
    assert!(s["clientCapabilities"]["sampling"].is_object());
}

#[tokio::test]
async fn tools_list_echo_vs_chaos_and_pagination() {
    let (mut p, _h) = ready(ServerConfig::echo()).await;
    let echo_list = p.result("tools/list", json!({})).await;
    let names = tool_names(&echo_list);
    for t in [
        "echo",
        "add",
        "slow",
        "sample",
        "elicit",
        "roots",
        "log",
        "notify_changed",
        "touch",
        "session_info",
        "structured",
        "test_trigger_tool_change",
        "end_listens",
        "break_listens",
    ] {
        assert!(names.contains(&t.to_owned()), "{t} missing");
    }
    assert!(!names.contains(&"die".to_owned()));
    assert!(echo_list.get("nextCursor").is_none());
    for t in echo_list["tools"].as_array().unwrap() {
        assert_eq!(t["inputSchema"]["type"], "object", "{t}");
    }
    // Chaos tools are unknown to the echo flavour.
    let resp = p
        .request("tools/call", json!({"name": "die", "arguments": {}}))
        .await;
    assert_eq!(resp["error"]["code"], codes::INVALID_PARAMS);

    let (mut c, _h2) = ready(ServerConfig {
        page_size: 4,
        ..ServerConfig::chaos()
    })
    .await;
    let mut paged = Vec::new();
    let mut cursor: Option<Value> = None;
    let mut pages = 0;
    loop {
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let page = c.result("tools/list", params).await;
        let n = tool_names(&page);
        assert!(n.len() <= 4);
        paged.extend(n);
        pages += 1;
        match page.get("nextCursor") {
            Some(next) => cursor = Some(next.clone()),
            None => break,
        }
    }
    // 14 tools (11 + the listen ones: test_trigger_tool_change, end_listens, break_listens)
    // and 16 chaos tools, by 4.
    assert_eq!(paged.len(), 30);
    assert_eq!(pages, 8);
    for t in [
        "die",
        "hang",
        "garbage",
        "oversized",
        "late",
        "duplicate",
        "unknown_id",
        "flood",
        "exit_after",
        "silent",
        "partial",
        "invalid_utf8",
        "surrogate",
        "sigkill",
        "close_stdout",
        "stderr_flood",
    ] {
        assert!(paged.contains(&t.to_owned()), "{t} missing");
    }
    let resp = c.request("tools/list", json!({"cursor": "garbage"})).await;
    assert_eq!(resp["error"]["code"], codes::INVALID_PARAMS);
}

#[tokio::test]
async fn structured_answers_each_shape() {
    let (mut p, _h) = ready(ServerConfig::echo()).await;
    let r = p.call("structured", json!({})).await;
    assert_eq!(
        r["structuredContent"],
        json!({"count": 3, "label": "three"})
    );
    let r = p.call("structured", json!({"shape": "wrong"})).await;
    assert_eq!(
        r["structuredContent"],
        json!({"count": "three", "extra": true})
    );
    let r = p.call("structured", json!({"shape": "missing"})).await;
    assert!(r.get("structuredContent").is_none() && r.get("isError").is_none());
    let r = p.call("structured", json!({"shape": "error"})).await;
    assert_eq!(r["isError"], true);
    let r = p.call("structured", json!({"shape": "other"})).await;
    assert_eq!(r["isError"], true);
    let list = p.result("tools/list", json!({})).await;
    let tool = list["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "structured")
        .unwrap();
    assert_eq!(tool["outputSchema"]["required"], json!(["count", "label"]));
}

#[tokio::test]
async fn echo_and_add() {
    let (mut p, _h) = ready(ServerConfig::echo()).await;
    let r = p.call("echo", json!({"message": "hello"})).await;
    assert_eq!(text(&r), "Echo: hello");

    let r = p.call("add", json!({"a": 2, "b": 40})).await;
    assert_eq!(text(&r), "42");
    assert_eq!(r["structuredContent"], json!({"sum": 42}));
    let r = p.call("add", json!({"a": 0.5, "b": 0.25})).await;
    assert_eq!(r["structuredContent"]["sum"], 0.75);

    let list = p.result("tools/list", json!({})).await;
    let add = list["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "add")
        .unwrap();
    assert_eq!(add["outputSchema"]["required"], json!(["sum"]));

    // Bad arguments are tool execution errors, an unknown tool a protocol error.
    let r = p.call("echo", json!({})).await;
    assert_eq!(r["isError"], true);
    let r = p.call("add", json!({"a": "x", "b": 1})).await;
    assert_eq!(r["isError"], true);
    let resp = p
        .request("tools/call", json!({"name": "nope", "arguments": {}}))
        .await;
    assert_eq!(resp["error"]["code"], codes::INVALID_PARAMS);
}

#[tokio::test]
async fn log_honours_set_level() {
    let (mut p, _h) = ready(ServerConfig::echo()).await;
    p.call("log", json!({"level": "debug", "message": "d1"}))
        .await;
    let logs = p.seen_with_method("notifications/message");
    assert_eq!(logs.len(), 1);
    assert_eq!(
        logs[0]["params"],
        json!({"level": "debug", "logger": "testserver", "data": "d1"})
    );

    assert_eq!(
        p.result("logging/setLevel", json!({"level": "warning"}))
            .await,
        json!({})
    );
    p.seen.clear();
    let r = p
        .call("log", json!({"level": "info", "message": "i"}))
        .await;
    assert!(text(&r).starts_with("suppressed"));
    p.call("log", json!({"level": "error", "message": "e"}))
        .await;
    let logs = p.seen_with_method("notifications/message");
    assert_eq!(logs.len(), 1);
    assert_eq!(logs[0]["params"]["data"], "e");

    let resp = p
        .request("logging/setLevel", json!({"level": "loud"}))
        .await;
    assert_eq!(resp["error"]["code"], codes::INVALID_PARAMS);
    let r = p
        .call("log", json!({"level": "loud", "message": "x"}))
        .await;
    assert_eq!(r["isError"], true);
}

#[tokio::test]
async fn notify_changed_sends_list_changed() {
    let (mut p, _h) = ready(ServerConfig::echo()).await;
    p.call("notify_changed", json!({})).await;
    p.call("notify_changed", json!({"list": "prompts"})).await;
    assert_eq!(
        p.seen_with_method("notifications/tools/list_changed").len(),
        1
    );
    assert_eq!(
        p.seen_with_method("notifications/prompts/list_changed")
            .len(),
        1
    );
}

#[tokio::test]
async fn resources_read_subscribe_touch() {
    let (mut p, _h) = ready(ServerConfig::echo()).await;
    let list = p.result("resources/list", json!({})).await;
    let uris: Vec<&str> = list["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["uri"].as_str().unwrap())
        .collect();
    assert_eq!(
        uris,
        ["test://static/1", "test://static/2", "test://static/3"]
    );
    let t = p.result("resources/templates/list", json!({})).await;
    assert_eq!(
        t["resourceTemplates"][0]["uriTemplate"],
        "test://dynamic/{id}"
    );

    let r = p
        .result("resources/read", json!({"uri": "test://static/2"}))
        .await;
    assert_eq!(r["contents"][0]["text"], "Static resource 2");
    assert_eq!(r["contents"][0]["uri"], "test://static/2");
    let r = p
        .result("resources/read", json!({"uri": "test://dynamic/abc"}))
        .await;
    assert_eq!(r["contents"][0]["text"], "Dynamic resource abc");
    let resp = p
        .request("resources/read", json!({"uri": "test://static/9"}))
        .await;
    assert_eq!(resp["error"]["code"], codes::RESOURCE_NOT_FOUND);
    assert_eq!(resp["error"]["message"], "resource not found");

    // Not subscribed: touch sends nothing.
    p.call("touch", json!({"uri": "test://static/1"})).await;
    assert!(
        p.seen_with_method("notifications/resources/updated")
            .is_empty()
    );
    assert_eq!(
        p.result("resources/subscribe", json!({"uri": "test://static/1"}))
            .await,
        json!({})
    );
    p.call("touch", json!({"uri": "test://static/1"})).await;
    let upd = p.seen_with_method("notifications/resources/updated");
    assert_eq!(upd.len(), 1);
    assert_eq!(upd[0]["params"]["uri"], "test://static/1");
    p.result("resources/unsubscribe", json!({"uri": "test://static/1"}))
        .await;
    p.call("touch", json!({"uri": "test://static/1"})).await;
    assert_eq!(
        p.seen_with_method("notifications/resources/updated").len(),
        1
    );
}

#[tokio::test]
async fn prompts_and_completion() {
    let (mut p, _h) = ready(ServerConfig::echo()).await;
    let list = p.result("prompts/list", json!({})).await;
    assert_eq!(list["prompts"][0]["name"], "greeting");
    assert_eq!(list["prompts"][0]["arguments"][0]["required"], true);
    assert_eq!(list["prompts"][1]["name"], "plain");

    let g = p
        .result(
            "prompts/get",
            json!({"name": "greeting", "arguments": {"name": "Ada"}}),
        )
        .await;
    assert_eq!(g["messages"][0]["role"], "user");
    assert_eq!(g["messages"][0]["content"]["text"], "Hello, Ada!");
    let plain = p.result("prompts/get", json!({"name": "plain"})).await;
    assert!(plain["messages"][0]["content"]["text"].is_string());
    let resp = p.request("prompts/get", json!({"name": "greeting"})).await;
    assert_eq!(resp["error"]["code"], codes::INVALID_PARAMS);
    let resp = p.request("prompts/get", json!({"name": "nope"})).await;
    assert_eq!(resp["error"]["code"], codes::INVALID_PARAMS);

    let complete = |value: &str| {
        json!({
            "ref": {"type": "ref/prompt", "name": "greeting"},
            "argument": {"name": "name", "value": value},
        })
    };
    let c = p.result("completion/complete", complete("al")).await;
    assert_eq!(c["completion"]["values"], json!(["alice", "alfred"]));
    assert_eq!(c["completion"]["total"], 2);
    assert_eq!(c["completion"]["hasMore"], false);
    let c = p.result("completion/complete", complete("")).await;
    assert_eq!(c["completion"]["values"], json!(["alice", "alfred", "bob"]));
    let c = p.result("completion/complete", complete("z")).await;
    assert_eq!(c["completion"]["values"], json!([]));
}

#[tokio::test]
async fn slow_sends_progress_then_answers() {
    let (mut p, _h) = ready(ServerConfig::echo()).await;
    let r = p
        .result(
            "tools/call",
            json!({"name": "slow", "arguments": {"ms": 90, "steps": 3}, "_meta": {"progressToken": "tok"}}),
        )
        .await;
    assert!(text(&r).starts_with("slept 90"));
    let progress = p.seen_with_method("notifications/progress");
    assert_eq!(progress.len(), 3);
    for (i, n) in progress.iter().enumerate() {
        assert_eq!(n["params"]["progressToken"], "tok");
        assert_eq!(n["params"]["progress"], i + 1);
        assert_eq!(n["params"]["total"], 3);
        assert!(n["params"]["message"].is_string());
    }
    // Without a token: no progress.
    p.seen.clear();
    p.call("slow", json!({"ms": 10, "steps": 3})).await;
    assert!(p.seen_with_method("notifications/progress").is_empty());
}

#[tokio::test]
async fn requests_are_concurrent() {
    let (mut p, _h) = ready(ServerConfig::echo()).await;
    let slow = p
        .send_request(
            "tools/call",
            json!({"name": "slow", "arguments": {"ms": 400}}),
        )
        .await;
    let t0 = Instant::now();
    let echo = p
        .send_request(
            "tools/call",
            json!({"name": "echo", "arguments": {"message": "fast"}}),
        )
        .await;
    let first = p.recv().await;
    assert_eq!(first["id"], echo, "the echo must overtake the slow call");
    assert!(t0.elapsed() < Duration::from_millis(300));
    let second = p.recv().await;
    assert_eq!(second["id"], slow);
}

#[tokio::test]
async fn cancelled_slow_is_never_answered() {
    let (mut p, _h) = ready(ServerConfig::echo()).await;
    let id = p
        .send_request(
            "tools/call",
            json!({"name": "slow", "arguments": {"ms": 300, "steps": 30}, "_meta": {"progressToken": 7}}),
        )
        .await;
    // Wait for the first progress so that the call is surely under way.
    let first = p.recv().await;
    assert_eq!(first["method"], "notifications/progress");
    p.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": id, "reason": "test"}}))
        .await;
    assert_eq!(p.result("ping", json!({})).await, json!({}));
    // Nothing about the cancelled call, for longer than it would have taken.
    let deadline = Instant::now() + Duration::from_millis(400);
    while let Some(msg) = p
        .recv_within(deadline.saturating_duration_since(Instant::now()))
        .await
    {
        assert_ne!(msg["id"], id, "cancelled request answered: {msg}");
        assert_ne!(
            msg["method"], "notifications/progress",
            "progress after cancel: {msg}"
        );
    }
    let info = p.call("session_info", json!({})).await;
    assert_eq!(info["structuredContent"]["cancelled"], json!([id]));
}

#[tokio::test]
async fn sampling_round_trip() {
    let (mut p, _h) = ready(ServerConfig::echo()).await;
    let id = p
        .send_request(
            "tools/call",
            json!({"name": "sample", "arguments": {"prompt": "Say hi"}}),
        )
        .await;
    let req = p.recv().await;
    assert_eq!(req["method"], "sampling/createMessage");
    assert_eq!(req["params"]["messages"][0]["content"]["text"], "Say hi");
    assert!(req["params"]["maxTokens"].is_u64());
    let sid = req["id"].clone();
    assert!(sid.as_str().unwrap().starts_with("s-"));
    p.send(json!({"jsonrpc": "2.0", "id": sid, "result": {
        "role": "assistant", "content": {"type": "text", "text": "hi there"}, "model": "test-model", "stopReason": "endTurn"
    }}))
    .await;
    let resp = p.response(&json!(id)).await;
    assert_eq!(text(&resp["result"]), "hi there");
    assert!(resp["result"].get("isError").is_none());

    // The client refuses: the tool reports the error's message.
    let id = p
        .send_request(
            "tools/call",
            json!({"name": "sample", "arguments": {"prompt": "again"}}),
        )
        .await;
    let req = p.recv().await;
    assert_eq!(req["id"], "s-2");
    p.send(json!({"jsonrpc": "2.0", "id": req["id"], "error": {"code": -1, "message": "User rejected sampling request"}}))
        .await;
    let resp = p.response(&json!(id)).await;
    assert_eq!(resp["result"]["isError"], true);
    assert_eq!(text(&resp["result"]), "User rejected sampling request");
}

#[tokio::test]
async fn elicit_and_roots_round_trips() {
    let (mut p, _h) = ready(ServerConfig::echo()).await;
    let id = p
        .send_request(
            "tools/call",
            json!({"name": "elicit", "arguments": {"message": "Who are you?"}}),
        )
        .await;
    let req = p.recv().await;
    assert_eq!(req["method"], "elicitation/create");
    assert_eq!(req["params"]["message"], "Who are you?");
    assert_eq!(req["params"]["mode"], "form");
    let schema = &req["params"]["requestedSchema"];
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["properties"]["name"]["default"], "Ada");
    p.send(json!({"jsonrpc": "2.0", "id": req["id"], "result": {"action": "accept", "content": {"name": "Ada", "confirm": true}}}))
        .await;
    let resp = p.response(&json!(id)).await;
    assert_eq!(
        resp["result"]["structuredContent"],
        json!({"action": "accept", "content": {"name": "Ada", "confirm": true}})
    );

    let id = p
        .send_request("tools/call", json!({"name": "roots", "arguments": {}}))
        .await;
    let req = p.recv().await;
    assert_eq!(req["method"], "roots/list");
    let roots = json!([{"uri": "file:///tmp/project", "name": "project"}]);
    p.send(json!({"jsonrpc": "2.0", "id": req["id"], "result": {"roots": roots}}))
        .await;
    let resp = p.response(&json!(id)).await;
    assert_eq!(resp["result"]["structuredContent"]["roots"], roots);

    // An error answer from the client.
    let id = p
        .send_request("tools/call", json!({"name": "roots", "arguments": {}}))
        .await;
    let req = p.recv().await;
    p.send(json!({"jsonrpc": "2.0", "id": req["id"], "error": {"code": -32601, "message": "Method not found"}}))
        .await;
    let resp = p.response(&json!(id)).await;
    assert_eq!(resp["result"]["isError"], true);
    assert_eq!(text(&resp["result"]), "Method not found");
}

#[tokio::test]
async fn eof_flushes_in_flight_answers() {
    let (mut p, h) = ready(ServerConfig::echo()).await;
    let id = p
        .send_request(
            "tools/call",
            json!({"name": "slow", "arguments": {"ms": 50}}),
        )
        .await;
    p.close().await;
    let resp = p.response(&json!(id)).await;
    assert!(text(&resp["result"]).starts_with("slept"));
    assert_eq!(p.recv_raw().await, None);
    assert_eq!(ended(h).await, Ended::Eof);
}

#[tokio::test]
async fn eof_abandons_pending_client_requests() {
    let (mut p, h) = ready(ServerConfig::echo()).await;
    let id = p
        .send_request(
            "tools/call",
            json!({"name": "sample", "arguments": {"prompt": "x"}}),
        )
        .await;
    let req = p.recv().await;
    assert_eq!(req["method"], "sampling/createMessage");
    p.close().await;
    // The waiting tool gives up at once and reports it.
    let resp = p.response(&json!(id)).await;
    assert_eq!(resp["result"]["isError"], true);
    assert_eq!(ended(h).await, Ended::Eof);
}

// ---- chaos ----

#[tokio::test]
async fn die_drops_the_stream_without_answering() {
    let (mut p, h) = ready(ServerConfig::chaos()).await;
    p.send_request("tools/call", json!({"name": "die", "arguments": {}}))
        .await;
    assert_eq!(p.recv_raw().await, None, "expected EOF, not an answer");
    assert_eq!(ended(h).await, Ended::Died);
}

#[tokio::test]
async fn hang_answers_nothing_and_keeps_the_stream_open() {
    let (mut p, h) = ready(ServerConfig::chaos()).await;
    p.send_request("tools/call", json!({"name": "hang", "arguments": {}}))
        .await;
    p.send_request("ping", json!({})).await;
    assert_eq!(
        p.recv_raw_within(Duration::from_millis(300)).await,
        Err(()),
        "expected silence (no answer, no EOF)"
    );
    assert!(!h.is_finished());
    h.abort();
}

#[tokio::test]
async fn garbage_then_a_normal_answer() {
    let (mut p, _h) = ready(ServerConfig::chaos()).await;
    let id = p
        .send_request("tools/call", json!({"name": "garbage", "arguments": {}}))
        .await;
    assert_eq!(p.recv_raw().await.as_deref(), Some("{not json"));
    let resp = p.response(&json!(id)).await;
    assert!(resp["result"]["content"].is_array());
    let id = p
        .send_request(
            "tools/call",
            json!({"name": "garbage", "arguments": {"text": "\u{1}\u{2} hello"}}),
        )
        .await;
    assert_eq!(p.recv_raw().await.as_deref(), Some("\u{1}\u{2} hello"));
    p.response(&json!(id)).await;
}

#[tokio::test]
async fn oversized_writes_one_long_line() {
    let (mut p, _h) = ready(ServerConfig::chaos()).await;
    let id = p
        .send_request(
            "tools/call",
            json!({"name": "oversized", "arguments": {"bytes": 200_000}}),
        )
        .await;
    let line = p.recv_raw().await.unwrap();
    assert_eq!(line.len(), 200_000);
    let v: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(v["method"], "x");
    let resp = p.response(&json!(id)).await;
    assert!(text(&resp["result"]).contains("200000"));
}

#[tokio::test]
async fn late_answers_after_the_delay() {
    let (mut p, _h) = ready(ServerConfig::chaos()).await;
    let t0 = Instant::now();
    let id = p
        .send_request(
            "tools/call",
            json!({"name": "late", "arguments": {"ms": 200}}),
        )
        .await;
    assert!(p.recv_within(Duration::from_millis(100)).await.is_none());
    let resp = p.response(&json!(id)).await;
    assert!(t0.elapsed() >= Duration::from_millis(200));
    assert!(text(&resp["result"]).contains("200"));
}

#[tokio::test]
async fn duplicate_answers_twice() {
    let (mut p, _h) = ready(ServerConfig::chaos()).await;
    let id = p
        .send_request("tools/call", json!({"name": "duplicate", "arguments": {}}))
        .await;
    let a = p.recv().await;
    let b = p.recv().await;
    assert_eq!(a["id"], id);
    assert_eq!(a, b);
}

#[tokio::test]
async fn unknown_id_then_a_normal_answer() {
    let (mut p, _h) = ready(ServerConfig::chaos()).await;
    let id = p
        .send_request("tools/call", json!({"name": "unknown_id", "arguments": {}}))
        .await;
    let bogus = p.recv().await;
    assert_eq!(bogus["id"], 987_654_321);
    assert!(bogus.get("result").is_some());
    let resp = p.recv().await;
    assert_eq!(resp["id"], id);
    let id = p
        .send_request(
            "tools/call",
            json!({"name": "unknown_id", "arguments": {"id": "zzz"}}),
        )
        .await;
    assert_eq!(p.recv().await["id"], "zzz");
    assert_eq!(p.recv().await["id"], id);
}

#[tokio::test]
async fn flood_sends_many_notifications_then_answers() {
    let (mut p, _h) = ready(ServerConfig::chaos()).await;
    p.call("flood", json!({"count": 500})).await;
    let logs = p.seen_with_method("notifications/message");
    assert_eq!(logs.len(), 500);
    assert_eq!(logs[499]["params"]["data"], "flood 500/500");
}

#[tokio::test]
async fn exit_after_answers_then_ends() {
    let (mut p, h) = ready(ServerConfig::chaos()).await;
    let t0 = Instant::now();
    let r = p.call("exit_after", json!({"ms": 100})).await;
    assert!(text(&r).contains("100"));
    assert_eq!(ended(h).await, Ended::Exited);
    assert!(t0.elapsed() >= Duration::from_millis(100));
    assert_eq!(p.recv_raw().await, None);

    // ms = 0 still answers first.
    let (mut p, h) = ready(ServerConfig::chaos()).await;
    p.call("exit_after", json!({"ms": 0})).await;
    assert_eq!(ended(h).await, Ended::Exited);
}

#[tokio::test]
async fn unknown_response_is_recorded() {
    let (mut p, _h) = ready(ServerConfig::echo()).await;
    p.send(json!({"jsonrpc": "2.0", "id": "s-77", "result": {}}))
        .await;
    p.send(json!({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}))
        .await;
    let info = p.call("session_info", json!({})).await;
    assert_eq!(
        info["structuredContent"]["unknownResponses"],
        json!(["s-77"])
    );
    assert_eq!(info["structuredContent"]["rootsListChanged"], 1);
}

fn lingering(linger: Linger) -> ServerConfig {
    ServerConfig {
        linger,
        ..ServerConfig::echo()
    }
}

/// `serve` is still running `for` after the client closed its side.
async fn still_serving(h: &JoinHandle<Ended>, after: Duration) {
    tokio::time::sleep(after).await;
    assert!(!h.is_finished(), "serve returned");
}

#[tokio::test]
async fn linger_ignore_eof_and_ignore_term_stay_after_eof() {
    for linger in [Linger::IgnoreEof, Linger::IgnoreTerm] {
        let (mut p, h) = ready(lingering(linger)).await;
        assert_eq!(
            text(&p.call("echo", json!({"message": "hi"})).await),
            "Echo: hi"
        );
        p.close().await;
        still_serving(&h, Duration::from_millis(1500)).await;
        // Its output stays open too: no EOF.
        assert_eq!(p.recv_raw_within(Duration::from_millis(100)).await, Err(()));
        h.abort();
    }
}

#[tokio::test]
async fn linger_stall_mid_frame_writes_half_a_frame_after_the_answer() {
    let (mut p, h) = ready(lingering(Linger::StallMidFrame)).await;
    assert_eq!(
        text(&p.call("echo", json!({"message": "hi"})).await),
        "Echo: hi"
    );
    // Half a frame, never finished, and the stream stays open.
    assert_eq!(p.recv_raw_within(Duration::from_millis(300)).await, Err(()));
    p.close().await;
    still_serving(&h, Duration::from_millis(1500)).await;
    h.abort();
}

#[tokio::test]
async fn linger_close_stdout_closes_the_output_after_the_answer() {
    let (mut p, h) = ready(lingering(Linger::CloseStdout)).await;
    assert_eq!(
        text(&p.call("echo", json!({"message": "hi"})).await),
        "Echo: hi"
    );
    assert_eq!(p.recv_raw_within(Duration::from_secs(2)).await, Ok(None));
    p.close().await;
    still_serving(&h, Duration::from_millis(1500)).await;
    h.abort();
    assert_eq!(Linger::from_name("close-stdout"), Some(Linger::CloseStdout));
    assert_eq!(Linger::StallMidFrame.name(), "stall-mid-frame");
}

#[tokio::test]
async fn elicit_in_url_mode_and_without_fields() {
    let (mut p, _h) = ready(ServerConfig::echo()).await;
    let id = p
        .send_request(
            "tools/call",
            json!({"name": "elicit", "arguments": {"message": "Open it", "mode": "url"}}),
        )
        .await;
    let req = p.recv().await;
    assert_eq!(req["params"]["mode"], "url");
    assert_eq!(req["params"]["url"], "https://example.com/connect");
    assert!(req["params"].get("requestedSchema").is_none());
    p.send(json!({"jsonrpc": "2.0", "id": req["id"], "error": {"code": -32602, "message": "mode not declared"}}))
        .await;
    let resp = p.response(&json!(id)).await;
    assert_eq!(resp["result"]["isError"], true);
    assert_eq!(
        text(&resp["result"]),
        "client error -32602: mode not declared"
    );

    let id = p
        .send_request(
            "tools/call",
            json!({"name": "elicit", "arguments": {"message": "Go?", "fields": false}}),
        )
        .await;
    let req = p.recv().await;
    assert_eq!(req["params"]["mode"], "form");
    assert_eq!(req["params"]["requestedSchema"]["properties"], json!({}));
    p.send(json!({"jsonrpc": "2.0", "id": req["id"], "result": {"action": "decline"}}))
        .await;
    let resp = p.response(&json!(id)).await;
    assert_eq!(
        resp["result"]["structuredContent"],
        json!({"action": "decline"})
    );
}

#[tokio::test]
async fn silent_reads_and_writes_nothing_for_a_while_then_goes_on() {
    let (mut p, _h) = ready(ServerConfig::chaos()).await;
    let t0 = Instant::now();
    p.send_request(
        "tools/call",
        json!({"name": "silent", "arguments": {"ms": 400}}),
    )
    .await;
    let echo = p
        .send_request(
            "tools/call",
            json!({"name": "echo", "arguments": {"message": "after"}}),
        )
        .await;
    // Nothing at all during the silence; the silent call itself is never answered.
    assert_eq!(p.recv_raw_within(Duration::from_millis(300)).await, Err(()));
    let resp = p.recv().await;
    assert_eq!(resp["id"], echo, "{resp}");
    assert!(t0.elapsed() >= Duration::from_millis(400));
    assert_eq!(p.recv_raw_within(Duration::from_millis(200)).await, Err(()));
}

#[tokio::test]
async fn partial_writes_half_a_frame_stalls_then_finishes_it() {
    let (mut p, _h) = ready(ServerConfig::chaos()).await;
    let t0 = Instant::now();
    let id = p
        .send_request(
            "tools/call",
            json!({"name": "partial", "arguments": {"ms": 300}}),
        )
        .await;
    let ping = p.send_request("ping", json!({})).await;
    let first = p.recv().await;
    assert!(t0.elapsed() >= Duration::from_millis(300));
    assert_eq!(first["id"], id, "the stalled frame is one line: {first}");
    assert!(text(&first["result"]).contains("stalled 300 ms"));
    assert_eq!(p.recv().await["id"], ping);
}

#[tokio::test]
async fn invalid_utf8_in_a_notification_or_in_the_answer() {
    let (mut p, _h) = ready(ServerConfig::chaos()).await;
    let id = p
        .send_request(
            "tools/call",
            json!({"name": "invalid_utf8", "arguments": {}}),
        )
        .await;
    let bad = p
        .recv_bytes_within(Duration::from_secs(2))
        .await
        .unwrap()
        .unwrap();
    assert!(std::str::from_utf8(&bad).is_err());
    assert!(bad.starts_with(br#"{"jsonrpc":"2.0","method":"notifications/message""#));
    assert_eq!(p.recv().await["id"], id);
    let id = p
        .send_request(
            "tools/call",
            json!({"name": "invalid_utf8", "arguments": {"in_answer": true}}),
        )
        .await;
    let bad = p
        .recv_bytes_within(Duration::from_secs(2))
        .await
        .unwrap()
        .unwrap();
    assert!(std::str::from_utf8(&bad).is_err());
    let lossy = String::from_utf8_lossy(&bad);
    assert!(lossy.contains(&format!(r#""id":{id}"#)), "{lossy}");
}

#[tokio::test]
async fn surrogate_answers_with_a_lone_surrogate_escape() {
    let (mut p, _h) = ready(ServerConfig::chaos()).await;
    let id = p
        .send_request("tools/call", json!({"name": "surrogate", "arguments": {}}))
        .await;
    let line = p.recv_raw().await.unwrap();
    assert!(line.contains(r"lone \ud800 surrogate"), "{line}");
    assert!(line.contains(&format!(r#""id":{id}"#)), "{line}");
    assert!(serde_json::from_str::<Value>(&line).is_err());
}

#[tokio::test]
async fn sigkill_in_process_is_die_and_stderr_flood_is_refused() {
    let (mut p, _h) = ready(ServerConfig::chaos()).await;
    let r = p.call("stderr_flood", json!({"bytes": 10})).await;
    assert_eq!(r["isError"], true, "{r}");
    let (mut p, h) = ready(ServerConfig::chaos()).await;
    p.send_request("tools/call", json!({"name": "sigkill", "arguments": {}}))
        .await;
    assert_eq!(ended(h).await, Ended::Died);
}

#[tokio::test]
async fn close_stdout_closes_the_output_without_answering_and_stays() {
    let (mut p, h) = ready(ServerConfig::chaos()).await;
    p.send_request(
        "tools/call",
        json!({"name": "close_stdout", "arguments": {}}),
    )
    .await;
    assert_eq!(p.recv_raw_within(Duration::from_secs(2)).await, Ok(None));
    p.close().await;
    still_serving(&h, Duration::from_millis(1500)).await;
    h.abort();
}

#[tokio::test]
async fn handshake_modes() {
    use mcp_testserver::Handshake;
    let with = |handshake| ServerConfig {
        handshake,
        ..ServerConfig::echo()
    };
    let init = json!({"protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"}});

    let (mut p, _h) = start(with(Handshake::Error));
    let resp = p.request("initialize", init.clone()).await;
    assert_eq!(resp["error"]["code"], codes::INTERNAL_ERROR, "{resp}");

    let (mut p, _h) = start(with(Handshake::Twice));
    let first = p.request("initialize", init.clone()).await;
    let second = p.recv().await;
    assert_eq!(first["id"], second["id"]);
    assert_eq!(first["result"]["protocolVersion"], "2025-06-18");
    assert_ne!(second["result"]["protocolVersion"], "2025-06-18");
    assert_eq!(
        second["result"]["serverInfo"]["name"],
        "mcp-echo-server (second answer)"
    );

    let (mut p, _h) = start(with(Handshake::EarlyRequests));
    let resp = p.request("initialize", init).await;
    assert!(resp.get("result").is_some());
    let early: Vec<&str> = p
        .seen
        .iter()
        .filter(|m| m.get("id").is_some())
        .map(|m| m["method"].as_str().unwrap())
        .collect();
    assert_eq!(
        early,
        [
            "ping",
            "roots/list",
            "sampling/createMessage",
            "elicitation/create"
        ]
    );
    assert_eq!(p.seen_with_method("notifications/message").len(), 1);
    for n in 1..=4 {
        p.send(json!({"jsonrpc": "2.0", "id": format!("early-{n}"), "result": {}}))
            .await;
    }
    p.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await;
    let info = p.call("session_info", json!({})).await;
    assert_eq!(
        info["structuredContent"]["unknownResponses"],
        json!(["early-1", "early-2", "early-3", "early-4"])
    );
    assert_eq!(Handshake::from_name("twice"), Some(Handshake::Twice));
    assert_eq!(Handshake::EarlyRequests.name(), "early-requests");
}
