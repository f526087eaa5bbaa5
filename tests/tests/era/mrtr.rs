//! Results in the modern era: `resultType` (absent, `complete`, unknown), `input_required`
//! rounds fulfilled by the handler (MRTR) and their cap, and a modern server's requests left
//! unanswered.

use super::*;

/// Handlers declaring form elicitation that accept with `confirmed: true`, counting calls.
fn confirming(calls: Arc<AtomicUsize>) -> Handlers {
    Handlers::new().elicitation(move |_p, _cx| {
        calls.fetch_add(1, Ordering::SeqCst);
        async {
            Ok(ElicitResult::accept(
                [("confirmed".to_owned(), json!(true))]
                    .into_iter()
                    .collect(),
            ))
        }
    })
}

#[tokio::test]
async fn an_input_required_round_is_fulfilled_by_the_handler_and_sent_again() {
    for http in [false, true] {
        let asked = Arc::new(AtomicUsize::new(0));
        let server;
        let builder = if http {
            server = Some(HttpServer::start(&["--era", "modern", "--http", "127.0.0.1:0"]).await);
            over_http(&server.as_ref().unwrap().url, EraMode::Modern)
        } else {
            server = None;
            over_stdio(ECHO, &["--era", "modern"], EraMode::Auto)
        };
        let (client, _feed) = connect(builder.handler(confirming(Arc::clone(&asked)))).await;
        assert_modern(&client);
        let r = client
            .call_tool("confirm_action", json!({}))
            .await
            .unwrap_or_else(|e| panic!("http={http}: {e:?}"));
        assert!(r.text().contains("accept"), "http={http}: {}", r.text());
        assert_eq!(asked.load(Ordering::SeqCst), 1, "http={http}");
        finish(client).await;
        drop(server);
    }
}

#[tokio::test]
async fn endless_input_rounds_stop_at_the_cap_and_the_client_stays_usable() {
    let asked = Arc::new(AtomicUsize::new(0));
    let builder = over_stdio(ECHO, &["--era", "modern"], EraMode::Auto)
        .handler(confirming(Arc::clone(&asked)))
        .max_input_rounds(3);
    let (client, _feed) = connect(builder).await;
    let err = client
        .call_tool("always_input", json!({}))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::InputRequired { reason } if reason.contains("3 times")),
        "{err:?}"
    );
    assert_eq!(
        asked.load(Ordering::SeqCst),
        3,
        "one handler call per round"
    );
    let r = client
        .call_tool("echo", json!({"message": "after"}))
        .await
        .unwrap();
    assert_eq!(r.text(), "Echo: after");
    assert_eq!(client.state(), ConnState::Ready);
    finish(client).await;
}

#[tokio::test]
async fn a_handler_error_to_an_input_fails_only_that_call() {
    let handlers = Handlers::new().elicitation(|_p, _cx| async {
        Err(RpcError {
            code: -1,
            message: "the user closed the dialog".into(),
            data: None,
        })
    });
    let builder = over_stdio(ECHO, &["--era", "modern"], EraMode::Auto).handler(handlers);
    let (client, _feed) = connect(builder).await;
    let err = client
        .call_tool("confirm_action", json!({}))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::InputFailed { key, error } if key == "confirm" && error.code == -1),
        "{err:?}"
    );
    let r = client
        .call_tool("echo", json!({"message": "after"}))
        .await
        .unwrap();
    assert_eq!(r.text(), "Echo: after");
    finish(client).await;
}

#[tokio::test]
async fn an_input_the_client_did_not_declare_fails_the_call_at_once() {
    // No elicitation declared: the test server answers -32021 (it needs the capability).
    let (client, _feed) = connect(over_stdio(ECHO, &["--era", "modern"], EraMode::Auto)).await;
    let err = client
        .call_tool("confirm_action", json!({}))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::MissingCapability { required, .. } if required.get("elicitation").is_some()),
        "{err:?}"
    );
    finish(client).await;
}

#[tokio::test]
async fn a_modern_unknown_resource_is_resource_not_found() {
    let (client, _feed) = connect(over_stdio(ECHO, &["--era", "modern"], EraMode::Auto)).await;
    let err = client.read_resource("test://no-such").await.unwrap_err();
    assert!(
        matches!(&err, Error::ResourceNotFound { code: -32602, uri, .. } if uri == "test://no-such"),
        "{err:?}"
    );
    finish(client).await;
}

#[tokio::test]
async fn results_without_a_result_type_are_complete() {
    let (client, mut feed) = connect(over_stdio(
        ECHO,
        &["--era", "modern", "--omit-result-type"],
        EraMode::Auto,
    ))
    .await;
    assert_modern(&client);
    assert_eq!(states(&mut feed), PROBED_MODERN);
    exercise(&client).await;
    finish(client).await;
}

#[tokio::test]
async fn an_unknown_result_type_fails_the_call_only() {
    let log = Received::default();
    let builder = scripted_logging(Arc::clone(&log), |_, msg, before| {
        let id = &msg["id"];
        match msg["method"].as_str() {
            Some("server/discover") => vec![discover_result(id, &[MODERN])],
            Some("tools/call") if before == 0 => vec![json!({"jsonrpc": "2.0", "id": id,
                "result": {"resultType": "something_new", "content": []}})],
            Some("tools/call") => vec![json!({"jsonrpc": "2.0", "id": id,
                "result": {"resultType": "complete",
                    "content": [{"type": "text", "text": "fine"}]}})],
            _ => vec![],
        }
    });
    let (client, _feed) = connect(builder).await;
    let err = client.call_tool("x", json!({})).await.unwrap_err();
    assert!(
        matches!(&err, Error::UnknownResultType { result_type } if result_type == "something_new"),
        "{err:?}"
    );
    assert_eq!(
        client.call_tool("x", json!({})).await.unwrap().text(),
        "fine"
    );
    finish(client).await;
}

#[tokio::test]
async fn a_modern_servers_requests_are_dropped_unanswered() {
    let log = Received::default();
    let builder = scripted_logging(Arc::clone(&log), |_, msg, _| {
        let id = &msg["id"];
        match msg["method"].as_str() {
            Some("server/discover") => vec![discover_result(id, &[MODERN])],
            Some("tools/call") => vec![
                json!({"jsonrpc": "2.0", "id": "srv-1", "method": "roots/list"}),
                json!({"jsonrpc": "2.0", "id": "srv-2", "method": "ping"}),
                json!({"jsonrpc": "2.0", "id": id, "result": {"resultType": "complete",
                    "content": [{"type": "text", "text": "done"}]}}),
            ],
            _ => vec![],
        }
    })
    .handler(Handlers::new().roots(Roots::new([Root::new("file:///tmp")])));
    let (client, _feed) = connect(builder).await;
    assert_eq!(
        client.call_tool("x", json!({})).await.unwrap().text(),
        "done"
    );
    // A second round trip: a wrongly sent answer would have arrived before its request.
    assert_eq!(
        client.call_tool("x", json!({})).await.unwrap().text(),
        "done"
    );
    finish(client).await;
    let seen = log.lock().unwrap().clone();
    let answers: Vec<&Value> = seen.iter().filter(|m| m.get("method").is_none()).collect();
    assert!(answers.is_empty(), "answered a modern server: {answers:?}");
}
