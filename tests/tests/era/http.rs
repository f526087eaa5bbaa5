//! Auto over HTTP (Streamable HTTP, the fall-through to legacy HTTP+SSE, the Streamable-only
//! builder), and scripted modern HTTP servers: refusals with a modern body, reissues, header
//! mismatches, a broken response stream, the modern `ping` and notifications.

use super::*;

#[tokio::test]
async fn auto_finds_a_modern_server_over_http() {
    let server = HttpServer::start(&["--era", "modern", "--http", "127.0.0.1:0"]).await;
    let (client, mut feed) = connect(over_http(&server.url, EraMode::Auto)).await;
    assert_modern(&client);
    assert_eq!(states(&mut feed), PROBED_MODERN);
    exercise(&client).await;
    finish(client).await;
}

#[tokio::test]
async fn auto_finds_a_modern_server_over_http_with_json_answers() {
    let server = HttpServer::start(&["--era", "modern", "--http", "127.0.0.1:0", "--json"]).await;
    let (client, _feed) = connect(over_http(&server.url, EraMode::Auto)).await;
    assert_modern(&client);
    exercise(&client).await;
    finish(client).await;
}

#[tokio::test]
async fn auto_over_http_falls_back_to_the_handshake_for_a_legacy_server() {
    let server = HttpServer::start(&["--http", "127.0.0.1:0"]).await;
    let (client, mut feed) = connect(over_http(&server.url, EraMode::Auto)).await;
    assert_legacy(&client);
    assert_eq!(states(&mut feed), PROBED_THEN_HANDSHAKE);
    exercise(&client).await;
    let info = mcp_tests::session_info(&client).await;
    assert_eq!(info["initializeCount"], 1, "{info}");
    finish(client).await;
}

#[tokio::test]
async fn auto_over_http_falls_through_to_legacy_sse() {
    let server = HttpServer::start(&["--sse", "127.0.0.1:0"]).await;
    assert!(server.url.ends_with("/sse"), "{}", server.url);
    let (client, mut feed) = connect(over_http(&server.url, EraMode::Auto)).await;
    assert_legacy(&client);
    assert_eq!(states(&mut feed), PROBED_THEN_HANDSHAKE);
    exercise(&client).await;
    finish(client).await;
}

/// Auto over Streamable HTTP against a legacy server reacting to the probe with `--probe mode`:
/// legacy, after probing, and calls work.
async fn auto_over_http_falls_back(mode: &str) {
    let server = HttpServer::start(&["--http", "127.0.0.1:0", "--probe", mode]).await;
    let builder = over_http(&server.url, EraMode::Auto).probe_timeout(Duration::from_millis(300));
    let (client, mut feed) = connect(builder).await;
    assert_legacy(&client);
    let path = states(&mut feed);
    assert_eq!(path.first(), Some(&ConnState::Starting), "{path:?}");
    assert_eq!(path.get(1), Some(&ConnState::Probing), "{path:?}");
    assert_eq!(
        path.get(path.len().saturating_sub(2)..),
        Some(&[ConnState::Initializing, ConnState::Ready][..]),
        "{path:?}"
    );
    assert!(!path.contains(&ConnState::Backoff), "{path:?}");
    exercise(&client).await;
    finish(client).await;
}

#[tokio::test]
async fn auto_over_http_falls_back_when_discover_is_unanswered() {
    auto_over_http_falls_back("silent").await;
}

#[tokio::test]
async fn auto_over_http_falls_back_when_discover_answers_garbage() {
    auto_over_http_falls_back("garbage").await;
}

#[tokio::test]
async fn auto_over_http_falls_back_when_discover_cuts_the_connection() {
    auto_over_http_falls_back("die").await;
}

#[tokio::test]
async fn auto_over_http_speaks_modern_to_a_dual_server() {
    let server = HttpServer::start(&["--era", "dual", "--http", "127.0.0.1:0"]).await;
    let (client, mut feed) = connect(over_http(&server.url, EraMode::Auto)).await;
    assert_modern(&client);
    assert_eq!(states(&mut feed), PROBED_MODERN);
    exercise(&client).await;
    finish(client).await;
}

#[tokio::test]
async fn auto_over_http_waits_out_the_probe_timeout_of_a_silent_legacy_server() {
    let timeout = Duration::from_millis(300);
    let server = HttpServer::start(&["--http", "127.0.0.1:0", "--probe", "silent"]).await;
    let started = tokio::time::Instant::now();
    let (client, mut feed) =
        connect(over_http(&server.url, EraMode::Auto).probe_timeout(timeout)).await;
    assert!(started.elapsed() >= timeout, "{:?}", started.elapsed());
    assert_legacy(&client);
    assert_eq!(states(&mut feed), PROBED_THEN_HANDSHAKE);
    finish(client).await;
}

#[tokio::test]
async fn modern_calls_over_http_report_progress_and_time_out_alone() {
    let server = HttpServer::start(&["--era", "modern", "--http", "127.0.0.1:0"]).await;
    let (client, _feed) = connect(over_http(&server.url, EraMode::Auto)).await;
    assert_modern(&client);
    progress_and_timeout(&client).await;
    finish(client).await;
}

/// A modern HTTP server: `refuse(method, n)` says whether the `n`th (from 0) POST of `method`
/// is refused with `status` and the JSON-RPC error `error`; everything else is answered.
fn modern_http(
    refuse: impl Fn(&str, usize) -> bool + Send + Sync + 'static,
    status: u16,
    error: Value,
) -> scripted_http::Script {
    use scripted_http::Answer;
    Arc::new(move |req, before| {
        let Some(method) = req.rpc_method() else {
            return Answer::Status(405, vec![]);
        };
        let id = req.rpc_id();
        if id.is_null() {
            // A notification: accepted, nothing to answer.
            return Answer::Status(202, vec![]);
        }
        let n = before
            .iter()
            .filter(|r| r.rpc_method() == Some(method))
            .count();
        if refuse(method, n) {
            return Answer::StatusJson(
                status,
                json!({"jsonrpc": "2.0", "id": id, "error": error.clone()}),
            );
        }
        let result = match method {
            "server/discover" => discover_result(&id, &[MODERN])["result"].clone(),
            "tools/list" => json!({"resultType": "complete", "tools": [
                {"name": "t", "inputSchema": {"type": "object"}}]}),
            "tools/call" => json!({"resultType": "complete",
                "content": [{"type": "text", "text": "called"}]}),
            _ => json!({"resultType": "complete"}),
        };
        Answer::Json(
            json!({"jsonrpc": "2.0", "id": id, "result": result}),
            vec![],
        )
    })
}

#[tokio::test]
async fn over_http_a_modern_ping_is_a_discover_and_a_notification_is_posted_the_modern_way() {
    let script = modern_http(|_, _| false, 400, unsupported_version());
    let (url, log) = scripted_http::serve(script).await;
    let (client, _feed) = connect(over_http(&url, EraMode::Auto)).await;
    client
        .notify(
            "notifications/custom",
            Some(json!({"x": 1, "_meta": {"k": "v"}})),
        )
        .await
        .unwrap();
    client.ping().await.unwrap();
    finish(client).await;
    assert_eq!(
        posts(&log),
        ["server/discover", "notifications/custom", "server/discover"],
        "ping was removed in 2026-07-28: the round trip is a discover"
    );
    let seen = log.lock().unwrap().clone();
    let note = &seen[1];
    assert_eq!(
        note.header("mcp-protocol-version"),
        Some(MODERN),
        "{note:?}"
    );
    assert_eq!(
        note.header("mcp-method"),
        Some("notifications/custom"),
        "{note:?}"
    );
    assert!(note.header("mcp-session-id").is_none(), "{note:?}");
    let params = &note.body.as_ref().unwrap()["params"];
    assert_eq!(params["x"], 1);
    assert_eq!(params["_meta"]["k"], "v", "the caller's _meta is kept");
    assert_eq!(
        params["_meta"]["io.modelcontextprotocol/protocolVersion"],
        MODERN
    );
}

fn posts(log: &scripted_http::Log) -> Vec<String> {
    log.lock()
        .unwrap()
        .iter()
        .filter(|r| r.method == "POST")
        .filter_map(|r| r.rpc_method().map(str::to_owned))
        .collect()
}

fn unsupported_version() -> Value {
    json!({"code": -32022, "message": "unsupported protocol version",
        "data": {"supported": ["2099-01-01", MODERN], "requested": "x"}})
}

#[tokio::test]
async fn over_http_a_discover_refused_with_our_version_listed_is_retried_once() {
    let script = modern_http(
        |m, n| m == "server/discover" && n == 0,
        400,
        unsupported_version(),
    );
    let (url, log) = scripted_http::serve(script).await;
    let (client, mut feed) = connect(over_http(&url, EraMode::Auto)).await;
    assert_eq!(client.era(), Some(Era::Modern));
    assert_eq!(states(&mut feed), PROBED_MODERN);
    assert_eq!(client.list_tools(None).await.unwrap().tools.len(), 1);
    finish(client).await;
    assert_eq!(
        posts(&log),
        ["server/discover", "server/discover", "tools/list"]
    );
    let seen = log.lock().unwrap().clone();
    assert!(
        seen.iter().all(|r| r.method == "POST"),
        "no GET, no DELETE in the modern era: {seen:?}"
    );
    for r in &seen {
        assert_eq!(r.header("mcp-protocol-version"), Some(MODERN), "{r:?}");
        assert!(r.header("mcp-session-id").is_none(), "{r:?}");
    }
}

#[tokio::test]
async fn over_http_a_live_call_refused_with_our_version_listed_is_sent_again() {
    let script = modern_http(
        |m, n| m == "tools/list" && n == 0,
        400,
        unsupported_version(),
    );
    let (url, log) = scripted_http::serve(script).await;
    let (client, _feed) = connect(over_http(&url, EraMode::Auto)).await;
    let tools = client.list_tools(None).await;
    assert_eq!(
        tools.as_ref().map(|t| t.tools.len()).ok(),
        Some(1),
        "{tools:?}"
    );
    finish(client).await;
    assert_eq!(posts(&log), ["server/discover", "tools/list", "tools/list"]);
}

#[tokio::test]
async fn over_http_a_call_refused_with_our_version_past_the_reissue_cap_gets_the_error() {
    // Every tools/list is refused: the first is sent again twice (the default cap), then the
    // third refusal is the caller's answer.
    let script = modern_http(|m, _| m == "tools/list", 400, unsupported_version());
    let (url, log) = scripted_http::serve(script).await;
    let (client, _feed) = connect(over_http(&url, EraMode::Auto)).await;
    let err = client.list_tools(None).await.unwrap_err();
    assert!(
        matches!(&err, Error::Server { code: -32022, .. }),
        "{err:?}"
    );
    assert_eq!(client.state(), ConnState::Ready);
    assert_eq!(
        client.call_tool("t", json!({})).await.unwrap().text(),
        "called"
    );
    finish(client).await;
    assert_eq!(
        posts(&log),
        [
            "server/discover",
            "tools/list",
            "tools/list",
            "tools/list",
            "tools/call"
        ]
    );
}

#[tokio::test]
async fn over_http_a_header_mismatch_lists_the_tools_again_then_sends_the_call_again() {
    let script = modern_http(
        |m, n| m == "tools/call" && n == 0,
        400,
        json!({"code": -32020, "message": "header mismatch"}),
    );
    let (url, log) = scripted_http::serve(script).await;
    let (client, _feed) = connect(over_http(&url, EraMode::Auto)).await;
    assert_eq!(
        client.call_tool("t", json!({})).await.unwrap().text(),
        "called"
    );
    finish(client).await;
    assert_eq!(
        posts(&log),
        ["server/discover", "tools/call", "tools/list", "tools/call"]
    );
}

#[tokio::test]
async fn over_http_a_second_header_mismatch_is_the_callers_answer() {
    let script = modern_http(
        |m, _| m == "tools/call",
        400,
        json!({"code": -32020, "message": "header mismatch"}),
    );
    let (url, log) = scripted_http::serve(script).await;
    let (client, _feed) = connect(over_http(&url, EraMode::Auto)).await;
    let err = client.call_tool("t", json!({})).await.unwrap_err();
    assert!(
        matches!(&err, Error::Server { code: -32020, .. }),
        "{err:?}"
    );
    assert_eq!(client.state(), ConnState::Ready);
    finish(client).await;
    assert_eq!(
        posts(&log),
        ["server/discover", "tools/call", "tools/list", "tools/call"]
    );
}

#[tokio::test]
async fn over_http_a_call_whose_response_stream_breaks_is_sent_again_under_a_new_id() {
    use scripted_http::Answer;
    let inner = modern_http(|_, _| false, 400, json!({}));
    let script: scripted_http::Script = Arc::new(move |req, before| {
        let calls = before
            .iter()
            .filter(|r| r.rpc_method() == Some("tools/call"))
            .count();
        if req.rpc_method() == Some("tools/call") && calls == 0 {
            // Accepted as a stream that breaks before the response.
            return Answer::SseBroken(vec!["id: e0\ndata: ".to_owned()]);
        }
        inner(req, before)
    });
    let (url, log) = scripted_http::serve(script).await;
    let (client, _feed) = connect(over_http(&url, EraMode::Auto)).await;
    assert_eq!(
        client.call_tool("t", json!({})).await.unwrap().text(),
        "called"
    );
    finish(client).await;
    let seen = log.lock().unwrap().clone();
    let ids: Vec<Value> = seen
        .iter()
        .filter(|r| r.rpc_method() == Some("tools/call"))
        .map(scripted_http::Seen::rpc_id)
        .collect();
    assert_eq!(ids.len(), 2, "{seen:?}");
    assert_ne!(ids[0], ids[1], "a new id, never a resume");
    assert!(
        seen.iter().all(|r| r.header("last-event-id").is_none()),
        "{seen:?}"
    );
}

#[tokio::test]
async fn over_http_a_modern_refusal_without_our_version_fails_to_connect_without_fallback() {
    let script = modern_http(
        |m, _| m == "server/discover",
        400,
        json!({"code": -32022, "message": "unsupported protocol version",
            "data": {"supported": ["2099-01-01"], "requested": MODERN}}),
    );
    let (url, log) = scripted_http::serve(script).await;
    let e = connect_error(over_http(&url, EraMode::Auto)).await;
    assert!(
        matches!(&e.cause, Failure::NoCommonVersion { offered } if offered == &["2099-01-01"]),
        "{e:?}"
    );
    let seen = log.lock().unwrap().clone();
    assert!(
        seen.iter()
            .all(|r| r.rpc_method() == Some("server/discover")),
        "neither initialize nor the HTTP+SSE fallback: {seen:?}"
    );
}

#[tokio::test]
async fn over_http_a_modern_404_to_a_call_is_the_servers_error() {
    let script = modern_http(
        |m, _| m == "prompts/list",
        404,
        json!({"code": -32601, "message": "Method not found: prompts/list"}),
    );
    let (url, _log) = scripted_http::serve(script).await;
    let (client, _feed) = connect(over_http(&url, EraMode::Auto)).await;
    let err = client.list_prompts(None).await.unwrap_err();
    assert!(
        matches!(&err, Error::Server { code: -32601, .. }),
        "{err:?}"
    );
    assert_eq!(
        client.call_tool("t", json!({})).await.unwrap().text(),
        "called"
    );
    assert_eq!(client.state(), ConnState::Ready);
    finish(client).await;
}

#[tokio::test]
async fn auto_over_streamable_http_only_finds_either_era() {
    let legacy = HttpServer::start(&["--http", "127.0.0.1:0"]).await;
    let builder = ClientBuilder::streamable_http(&legacy.url)
        .unwrap()
        .seed(7)
        .era(EraMode::Auto)
        .connect_timeout(WAIT);
    let (client, mut feed) = connect(builder).await;
    assert_legacy(&client);
    assert_eq!(states(&mut feed), PROBED_THEN_HANDSHAKE);
    exercise(&client).await;
    finish(client).await;

    let modern = HttpServer::start(&["--era", "modern", "--http", "127.0.0.1:0"]).await;
    let builder = ClientBuilder::streamable_http(&modern.url)
        .unwrap()
        .seed(7)
        .era(EraMode::Auto)
        .connect_timeout(WAIT);
    let (client, mut feed) = connect(builder).await;
    assert_modern(&client);
    assert_eq!(states(&mut feed), PROBED_MODERN);
    exercise(&client).await;
    finish(client).await;
}
