//! The probe against scripted stdio servers: the version retry of `server/discover`, the
//! shapes of a DiscoverResult, and a late answer after the probe timeout.

use super::*;

#[tokio::test]
async fn a_version_refusal_naming_ours_is_retried_once_then_modern() {
    let log = Received::default();
    let builder = scripted_logging(Arc::clone(&log), |_, msg, before| {
        let id = &msg["id"];
        match msg["method"].as_str() {
            Some("server/discover") if before == 0 => vec![json!({"jsonrpc": "2.0", "id": id,
                "error": {"code": -32022, "message": "unsupported version",
                    "data": {"supported": ["2099-01-01", MODERN], "requested": "x"}}})],
            Some("server/discover") => vec![discover_result(id, &[MODERN])],
            Some("tools/list") => vec![json!({"jsonrpc": "2.0", "id": id,
                "result": {"resultType": "complete", "tools": []}})],
            _ => vec![],
        }
    });
    let (client, mut feed) = connect(builder).await;
    assert_eq!(client.era(), Some(Era::Modern));
    assert_eq!(client.server_info().unwrap().protocol_version, MODERN);
    assert_eq!(states(&mut feed), PROBED_MODERN);
    assert!(client.list_tools(None).await.unwrap().tools.is_empty());
    assert_eq!(
        methods(&log),
        ["server/discover", "server/discover", "tools/list"]
    );
    let seen = log.lock().unwrap().clone();
    assert_ne!(
        seen[0]["id"], seen[1]["id"],
        "the retry has an id of its own"
    );
    for m in &seen {
        assert_eq!(
            m["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"], MODERN,
            "{m}"
        );
    }
    finish(client).await;
}

#[tokio::test]
async fn a_version_refusal_naming_ours_twice_is_a_refusal_not_a_fallback() {
    let log = Received::default();
    let builder = scripted_logging(Arc::clone(&log), |_, msg, _| match msg["method"].as_str() {
        Some("server/discover") => vec![json!({"jsonrpc": "2.0", "id": msg["id"],
                "error": {"code": -32022, "message": "unsupported version",
                    "data": {"supported": [MODERN], "requested": MODERN}}})],
        _ => vec![],
    });
    let e = connect_error(builder).await;
    assert!(
        matches!(&e.cause, Failure::Refused(rpc) if rpc.code == -32022),
        "{e:?}"
    );
    let sent = methods(&log);
    assert!(
        !sent.iter().any(|m| m == "initialize"),
        "a modern server is never sent initialize: {sent:?}"
    );
    assert_eq!(sent, ["server/discover", "server/discover"]);
}

/// A scripted server answering `server/discover` with `discover` (a `result` member), then
/// `initialize` at 2025-11-25 and anything else with `{}`.
fn discover_then_handshake(log: Received, discover: Value) -> ClientBuilder {
    scripted_logging(log, move |_, msg, _| {
        let id = &msg["id"];
        match msg["method"].as_str() {
            Some("server/discover") => {
                vec![json!({"jsonrpc": "2.0", "id": id, "result": discover.clone()})]
            }
            Some("initialize") => vec![mcp_tests::initialize_result(
                id,
                "2025-11-25",
                json!({"tools": {}}),
                "legacy",
            )],
            Some(_) if msg.get("id").is_some() => {
                vec![json!({"jsonrpc": "2.0", "id": id, "result": {"tools": []}})]
            }
            _ => vec![],
        }
    })
}

#[tokio::test]
async fn a_discover_result_with_server_info_at_the_top_level_is_accepted() {
    let log = Received::default();
    let builder = discover_then_handshake(
        Arc::clone(&log),
        json!({"supportedVersions": [MODERN], "serverInfo": {"name": "top", "version": "2"}}),
    );
    let (client, mut feed) = connect(builder).await;
    assert_eq!(client.era(), Some(Era::Modern));
    assert_eq!(states(&mut feed), PROBED_MODERN);
    assert_eq!(client.server_info().unwrap().name(), "top");
    assert_eq!(methods(&log), ["server/discover"]);
    finish(client).await;
}

#[tokio::test]
async fn a_discover_answer_that_is_not_complete_is_no_discover_result() {
    let log = Received::default();
    let builder = discover_then_handshake(
        Arc::clone(&log),
        json!({"supportedVersions": [MODERN], "resultType": "input_required"}),
    );
    let (client, mut feed) = connect(builder).await;
    assert_eq!(client.era(), Some(Era::Legacy));
    assert_eq!(states(&mut feed), PROBED_THEN_HANDSHAKE);
    assert_eq!(
        methods(&log),
        ["server/discover", "initialize", "notifications/initialized"]
    );
    finish(client).await;
}

#[tokio::test]
async fn a_discover_result_offering_only_handshake_versions_means_the_handshake() {
    // No modern version in common, but a legacy one: legacy.
    let log = Received::default();
    let builder = discover_then_handshake(
        Arc::clone(&log),
        json!({"supportedVersions": ["2025-06-18", "2025-11-25"], "capabilities": {}}),
    );
    let (client, mut feed) = connect(builder).await;
    assert_eq!(client.era(), Some(Era::Legacy));
    assert_eq!(states(&mut feed), PROBED_THEN_HANDSHAKE);
    assert_eq!(client.server_info().unwrap().protocol_version, "2025-11-25");
    finish(client).await;
}

#[tokio::test]
async fn a_late_discover_result_after_the_probe_timeout_is_ignored() {
    let log = Received::default();
    let probe_id = Arc::new(Mutex::new(Value::Null));
    let remembered = Arc::clone(&probe_id);
    let builder = scripted_logging(Arc::clone(&log), move |_, msg, _| {
        let id = &msg["id"];
        match msg["method"].as_str() {
            // Silent at first; the answer comes just before the handshake's.
            Some("server/discover") => {
                *remembered.lock().unwrap() = id.clone();
                vec![]
            }
            Some("initialize") => vec![
                discover_result(&remembered.lock().unwrap(), &[MODERN]),
                mcp_tests::initialize_result(id, "2025-11-25", json!({"tools": {}}), "late"),
            ],
            Some(_) if msg.get("id").is_some() => {
                vec![json!({"jsonrpc": "2.0", "id": id, "result": {"tools": []}})]
            }
            _ => vec![],
        }
    })
    .probe_timeout(Duration::from_millis(200));
    let (client, mut feed) = connect(builder).await;
    assert_eq!(client.era(), Some(Era::Legacy));
    assert_eq!(client.server_info().unwrap().protocol_version, "2025-11-25");
    assert_eq!(states(&mut feed), PROBED_THEN_HANDSHAKE);
    assert!(client.list_tools(None).await.unwrap().tools.is_empty());
    assert_eq!(client.state(), ConnState::Ready);
    assert_ne!(*probe_id.lock().unwrap(), Value::Null);
    finish(client).await;
}
