//! Session restore after a reconnect, against a server that stalls it: dropping every `Client`
//! while the restore waits ends the driver and the connection at once (the restore is rows of
//! the table, not a task of the client that would wait out its timeouts).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use mcp_runtime::transport::StreamConnector;
use mcp_runtime::{ClientBuilder, ConnState, Error};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
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
    let generation = Arc::new(AtomicU64::new(0));
    let connector = StreamConnector::from_fn(move || {
        let seen = seen.clone();
        let generation = generation.fetch_add(1, Ordering::SeqCst) + 1;
        async move {
            let (client, server) = tokio::io::duplex(1 << 16);
            let (sr, mut sw) = tokio::io::split(server);
            tokio::spawn(async move {
                let mut lines = BufReader::new(sr).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    let msg: Value = serde_json::from_str(&line).unwrap();
                    let id = msg.get("id").cloned();
                    let result = match msg["method"].as_str() {
                        Some("initialize") => json!({"protocolVersion": "2025-06-18",
                            "capabilities": {"resources": {"subscribe": true}},
                            "serverInfo": {"name": "staller", "version": "1"}}),
                        Some("resources/subscribe") if generation > 1 => {
                            let _ = seen.send(Seen::StalledRestore(generation));
                            continue;
                        }
                        Some("tools/call") => return,
                        _ if id.is_none() => continue,
                        _ => json!({}),
                    };
                    let reply = json!({"jsonrpc": "2.0", "id": id, "result": result});
                    let mut bytes = serde_json::to_vec(&reply).unwrap();
                    bytes.push(b'\n');
                    if sw.write_all(&bytes).await.is_err() {
                        return;
                    }
                }
                let _ = seen.send(Seen::Eof(generation));
            });
            let (cr, cw) = tokio::io::split(client);
            Ok((cr, cw))
        }
    });
    ClientBuilder::new(connector).seed(5).backoff(
        Duration::from_millis(10),
        Duration::from_millis(10),
        0,
    )
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
