//! JSON-RPC batches: a server that negotiated MCP 2025-03-26 (where a receiver MUST accept
//! batches) may send several messages in one array; under any later revision an array is a
//! malformed frame and the call it would have answered times out.

use std::time::Duration;

use mcp_runtime::{ClientBuilder, Error, ServerNotification};
use mcp_tests::initialize_result;
use serde_json::{Value, json};

/// A scripted server: answers `initialize` with `version`, then answers the first `tools/call`
/// with one batch holding a log notification, a `ping` request and the call's result, and
/// records (on `seen`) every later message it receives.
fn scripted(
    version: &'static str,
    seen: tokio::sync::mpsc::UnboundedSender<Value>,
) -> ClientBuilder {
    mcp_tests::scripted(move |_, msg| {
        let id = msg.get("id").cloned().unwrap_or(Value::Null);
        Some(match msg["method"].as_str() {
            Some("initialize") => vec![initialize_result(
                &id,
                version,
                json!({"tools": {}}),
                "batcher",
            )],
            Some("tools/call") => vec![json!([
                {"jsonrpc": "2.0", "method": "notifications/message",
                 "params": {"level": "info", "data": "in a batch"}},
                {"jsonrpc": "2.0", "id": "s1", "method": "ping"},
                {"jsonrpc": "2.0", "id": id, "result": {
                    "content": [{"type": "text", "text": "batched"}]}}
            ])],
            _ => {
                let _ = seen.send(msg);
                vec![]
            }
        })
    })
}

#[tokio::test]
async fn a_batch_under_2025_03_26_is_unpacked_message_by_message() {
    let (tx, mut seen) = tokio::sync::mpsc::unbounded_channel();
    let builder = scripted("2025-03-26", tx);
    let mut notes = builder.notifications();
    let client = builder.connect().await.unwrap();
    let r = client.call_tool("any", json!({})).await.unwrap();
    assert_eq!(r.text(), "batched");
    let n = tokio::time::timeout(Duration::from_secs(5), notes.recv())
        .await
        .unwrap()
        .unwrap();
    assert!(matches!(n.parsed, ServerNotification::Log { .. }), "{n:?}");
    // The ping inside the batch was answered (on its own, not as a batch).
    let answer = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            let m = seen.recv().await.unwrap();
            if m.get("id") == Some(&json!("s1")) {
                return m;
            }
        }
    })
    .await
    .unwrap();
    assert_eq!(answer["result"], json!({}));
    client.stop().await;
}

#[tokio::test]
async fn a_batch_under_a_later_revision_is_malformed_and_answers_nobody() {
    let (tx, _seen) = tokio::sync::mpsc::unbounded_channel();
    let client = scripted("2025-06-18", tx)
        .request_timeout(Duration::from_millis(300))
        .connect()
        .await
        .unwrap();
    let err = client.call_tool("any", json!({})).await.unwrap_err();
    assert!(matches!(err, Error::Timeout { .. }), "{err:?}");
    client.stop().await;
}
