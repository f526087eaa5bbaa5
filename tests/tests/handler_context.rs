//! What a typed handler sees of its request ([`mcp_runtime::RequestContext`]): the request's id
//! and the server, progress it reports to the server, cancellation by the server; and params
//! that do not fit their type answered with invalid-params without reaching the handler.

use std::time::Duration;

use mcp_runtime::{ClientBuilder, CreateMessageResult, ElicitResult, Handlers, RequestContext};
use mcp_tests::initialize_result;
use serde_json::{Value, json};
use tokio::sync::mpsc;

/// A scripted server: after the handshake it sends `script` (server requests and
/// notifications), then reports every message the client sends (after `initialized`).
fn scripted(script: Vec<Value>, seen: mpsc::UnboundedSender<Value>) -> ClientBuilder {
    mcp_tests::scripted(move |_, msg| {
        Some(match msg["method"].as_str() {
            Some("initialize") => {
                vec![initialize_result(
                    &msg["id"],
                    "2025-11-25",
                    json!({}),
                    "scripted",
                )]
            }
            Some("notifications/initialized") => script.clone(),
            _ if msg.is_null() => vec![],
            _ => {
                let _ = seen.send(msg);
                vec![]
            }
        })
    })
    .seed(9)
}

async fn next(seen: &mut mpsc::UnboundedReceiver<Value>) -> Value {
    tokio::time::timeout(Duration::from_secs(5), seen.recv())
        .await
        .expect("the client sends something")
        .expect("server alive")
}

#[tokio::test]
async fn a_handler_knows_its_request_and_reports_progress_to_the_server() {
    let (tx, mut seen) = mpsc::unbounded_channel();
    let request = json!({"jsonrpc": "2.0", "id": "s-1", "method": "sampling/createMessage",
        "params": {"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
                   "maxTokens": 10, "_meta": {"progressToken": "p-7"}}});
    let handlers = Handlers::new().sampling(|_params, cx: RequestContext| async move {
        assert_eq!(cx.id().to_string(), "\"s-1\"");
        assert_eq!(
            cx.server().map(|s| s.name().to_owned()).as_deref(),
            Some("scripted")
        );
        cx.progress(0.5, Some(1.0), Some("half way")).await.unwrap();
        Ok(CreateMessageResult::text("m", "done"))
    });
    let client = scripted(vec![request], tx)
        .handler(handlers)
        .connect()
        .await
        .unwrap();
    let progress = next(&mut seen).await;
    assert_eq!(
        progress,
        json!({"jsonrpc": "2.0", "method": "notifications/progress", "params":
            {"progressToken": "p-7", "progress": 0.5, "total": 1.0, "message": "half way"}})
    );
    let answer = next(&mut seen).await;
    assert_eq!(answer["id"], "s-1");
    assert_eq!(answer["result"]["content"]["text"], "done");
    client.stop().await;
}

#[tokio::test]
async fn params_that_do_not_fit_are_invalid_params_and_never_reach_the_handler() {
    let (tx, mut seen) = mpsc::unbounded_channel();
    let bad = json!({"jsonrpc": "2.0", "id": 3, "method": "sampling/createMessage",
        "params": {"messages": [{"role": "narrator", "content": {"type": "text", "text": "x"}}]}});
    let handlers = Handlers::new().sampling(|_p, _cx| async move {
        panic!("the handler must not be called with params that do not fit")
    });
    let client = scripted(vec![bad], tx)
        .handler(handlers)
        .connect()
        .await
        .unwrap();
    let answer = next(&mut seen).await;
    assert_eq!(answer["id"], 3);
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("invalid params for sampling/createMessage"),
        "{answer}"
    );
    client.stop().await;
}

#[tokio::test]
async fn a_cancelled_request_is_seen_by_work_that_does_not_await() {
    let (tx, _seen) = mpsc::unbounded_channel();
    let script = vec![
        json!({"jsonrpc": "2.0", "id": "e-1", "method": "elicitation/create",
            "params": {"message": "name?", "requestedSchema": {"type": "object", "properties": {}}}}),
    ];
    let (noticed_tx, noticed) = std::sync::mpsc::channel();
    let (started_tx, mut started) = mpsc::unbounded_channel();
    let handlers = Handlers::new().elicitation(move |_p, cx: RequestContext| {
        let noticed_tx = noticed_tx.clone();
        let started_tx = started_tx.clone();
        async move {
            // A blocking prompt on a thread: it polls the flag, as mcpc's terminal form would.
            let worker = std::thread::spawn(move || {
                let _ = started_tx.send(());
                while !cx.is_cancelled() {
                    std::thread::sleep(Duration::from_millis(5));
                }
                let _ = noticed_tx.send(());
            });
            let _ = tokio::task::spawn_blocking(move || worker.join()).await;
            Ok(ElicitResult::cancel())
        }
    });
    let builder = scripted(script, tx).handler(handlers);
    let client = builder.connect().await.unwrap();
    tokio::time::timeout(Duration::from_secs(5), started.recv())
        .await
        .unwrap();
    // The connection ends (as a server's cancel does): the handler's context says so.
    client.stop().await;
    noticed
        .recv_timeout(Duration::from_secs(5))
        .expect("the worker saw the cancellation");
}
