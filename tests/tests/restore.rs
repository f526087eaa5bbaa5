//! Session restore after a reconnect, against a server that stalls it: dropping every `Client`
//! while the restore waits ends the driver and the connection at once (the restore is rows of
//! the table, not a task of the client that would wait out its timeouts).

use std::time::Duration;

use mcp_runtime::{ClientBuilder, ConnState, Error};
use mcp_tests::initialize_result;
use serde_json::json;
use tokio::sync::mpsc;

/// What the scripted server tells the test.
#[derive(Debug, PartialEq)]
enum Seen {
    /// Generation `n` received `resources/subscribe` and will never answer it.
    StalledRestore(u64),
    /// Generation `n` saw its input end.
    Eof(u64),
}

/// Generation 1 answers everything and closes the link on `tools/call`; every later generation
/// answers `initialize` but never `resources/subscribe`.
fn stalling_restore(seen: mpsc::UnboundedSender<Seen>) -> ClientBuilder {
    mcp_tests::scripted(move |generation, msg| {
        if msg.is_null() {
            let _ = seen.send(Seen::Eof(generation));
            return None;
        }
        let id = msg.get("id").cloned();
        let result = match msg["method"].as_str() {
            Some("initialize") => {
                let caps = json!({"resources": {"subscribe": true}});
                return Some(vec![initialize_result(
                    &id.unwrap_or_default(),
                    "2025-06-18",
                    caps,
                    "staller",
                )]);
            }
            Some("resources/subscribe") if generation > 1 => {
                let _ = seen.send(Seen::StalledRestore(generation));
                return Some(vec![]);
            }
            Some("tools/call") => return None,
            _ if id.is_none() => return Some(vec![]),
            _ => json!({}),
        };
        Some(vec![json!({"jsonrpc": "2.0", "id": id, "result": result})])
    })
    .seed(5)
    .backoff(Duration::from_millis(10), Duration::from_millis(10), 0)
}

#[tokio::test]
async fn dropping_every_client_during_a_stalled_restore_ends_the_driver_at_once() {
    let (tx, mut seen) = mpsc::unbounded_channel();
    let builder = stalling_restore(tx);
    let mut transitions = builder.transitions();
    let client = builder.connect().await.unwrap();
    client.subscribe("test://a").await.unwrap();
    let other = client.clone();
    let err = client.call_tool("crash", json!({})).await.unwrap_err();
    assert!(matches!(err, Error::ConnectionLost(_)), "{err:?}");
    let wait = Duration::from_secs(5);
    assert_eq!(
        tokio::time::timeout(wait, seen.recv()).await.unwrap(),
        Some(Seen::StalledRestore(2))
    );
    // The restore waits on a server that will never answer (the request timeout is 30 s).
    drop(client);
    drop(other);
    let started = tokio::time::Instant::now();
    assert_eq!(
        tokio::time::timeout(wait, seen.recv()).await.unwrap(),
        Some(Seen::Eof(2)),
        "the stalled connection is closed"
    );
    // The driver ended: the feed ends after Closing and Closed.
    let mut last = None;
    while let Some(t) = tokio::time::timeout(wait, transitions.recv())
        .await
        .unwrap()
    {
        last = Some(t.to());
    }
    assert_eq!(last, Some(ConnState::Closed));
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "ended after {:?}",
        started.elapsed()
    );
}
