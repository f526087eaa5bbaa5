//! The legacy HTTP+SSE transport (MCP 2024-11-05) against a scripted server on localhost: the
//! endpoint event, messages posted to it and answered on the stream, static headers, the
//! endpoint's origin, the wait for the endpoint, oversized events, and the stream's end.

mod scripted_http;

use std::sync::Arc;
use std::time::Duration;

use mcp_runtime::transport::SseConnector;
use mcp_runtime::{ClientBuilder, ConnState, Error, Failure, TransportError};
use scripted_http::{Answer, Script, end_stream_and_reconnect, legacy, serve_at};
use serde_json::json;
use tokio::sync::mpsc;

#[tokio::test]
async fn a_legacy_session_posts_to_the_endpoint_and_reads_answers_on_the_stream() {
    let (script, _stream) = legacy("/messages?sessionId=abc".into(), 405);
    let (url, seen) = serve_at("/sse", script).await;
    let client = ClientBuilder::sse(&url)
        .unwrap()
        .header("x-api-key", "k-1")
        .unwrap()
        .connect()
        .await
        .unwrap();
    assert_eq!(client.server_info().unwrap().protocol_version, "2024-11-05");
    let r = client.call_tool("any", json!({})).await.unwrap();
    assert_eq!(r.text(), "over legacy sse");
    client.ping().await.unwrap();
    client.stop().await;
    client.closed().await;
    let seen = seen.lock().unwrap().clone();
    let [get, posts @ ..] = &seen[..] else {
        panic!("{seen:?}")
    };
    assert_eq!(get.method, "GET");
    assert_eq!(get.target, "/sse");
    assert_eq!(get.header("accept"), Some("text/event-stream"));
    let methods: Vec<_> = posts.iter().filter_map(|p| p.rpc_method()).collect();
    assert_eq!(
        methods,
        [
            "initialize",
            "notifications/initialized",
            "tools/call",
            "ping"
        ]
    );
    for req in &seen {
        assert_eq!(req.header("x-api-key"), Some("k-1"), "{req:?}");
    }
    for post in posts {
        assert_eq!(post.method, "POST");
        assert_eq!(post.target, "/messages?sessionId=abc");
        assert_eq!(post.header("content-type"), Some("application/json"));
    }
}

#[tokio::test]
async fn an_endpoint_of_another_origin_is_refused() {
    for endpoint in [
        "http://127.0.0.1:1/messages?sessionId=abc",
        "https://evil.example/messages",
        "//evil.example/messages",
    ] {
        let (script, _stream) = legacy(endpoint.into(), 405);
        let (url, seen) = serve_at("/sse", script).await;
        let err = ClientBuilder::sse(&url)
            .unwrap()
            .connect()
            .await
            .unwrap_err();
        assert!(
            matches!(&err, Error::Connect(e) if matches!(&e.cause,
                Failure::Transport(TransportError::Protocol { reason }) if reason.contains("another origin"))),
            "{endpoint}: {err:?}"
        );
        assert!(
            !err.to_string().contains("sessionId"),
            "no query in the error: {err}"
        );
        assert!(
            !seen.lock().unwrap().iter().any(|r| r.method == "POST"),
            "{endpoint}: nothing posted"
        );
    }
}

#[tokio::test]
async fn no_endpoint_event_within_the_bound_fails_the_link() {
    let keep: Arc<std::sync::Mutex<Vec<mpsc::UnboundedSender<String>>>> = Arc::default();
    let held = Arc::clone(&keep);
    let script: Script = Arc::new(move |_, _| {
        let (tx, rx) = mpsc::unbounded_channel();
        // A message, but no endpoint: the stream stays open and silent.
        tx.send("event: message\ndata: {}".into()).unwrap();
        held.lock().unwrap().push(tx);
        Answer::Stream(rx, vec![])
    });
    let (url, _) = serve_at("/sse", script).await;
    let connector = SseConnector::new(&url)
        .unwrap()
        .endpoint_timeout(Duration::from_millis(200));
    let err = ClientBuilder::new(connector)
        .init_timeout(Duration::from_secs(30))
        .connect()
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::Connect(e) if matches!(&e.cause,
            Failure::Transport(TransportError::Protocol { reason }) if reason.contains("no endpoint event"))),
        "{err:?}"
    );
}

#[tokio::test]
async fn a_message_event_over_the_frame_limit_ends_the_link() {
    let (script, stream) = legacy("/messages".into(), 405);
    let (url, _) = serve_at("/sse", script).await;
    let connector = SseConnector::new(&url).unwrap().max_frame_bytes(4096);
    let client = ClientBuilder::new(connector)
        .backoff(Duration::from_secs(30), Duration::from_secs(30), 0)
        .connect()
        .await
        .unwrap();
    let mut state = client.watch_state();
    let huge = format!("event: message\ndata: \"{}\"", "x".repeat(64 * 1024));
    stream.lock().unwrap().as_ref().unwrap().send(huge).unwrap();
    tokio::time::timeout(
        Duration::from_secs(20),
        state.wait_for(|s| *s != ConnState::Ready),
    )
    .await
    .expect("the link ends")
    .unwrap();
    let last = client.last_error();
    assert!(
        matches!(
            &last,
            Some(Failure::Transport(TransportError::Oversized {
                max: 4096,
                ..
            }))
        ),
        "{last:?}"
    );
    client.stop().await;
}

#[tokio::test]
async fn the_end_of_the_stream_ends_the_link_and_the_client_reconnects() {
    let (script, stream) = legacy("/messages".into(), 405);
    let (url, seen) = serve_at("/sse", script).await;
    let builder = ClientBuilder::sse(&url).unwrap().backoff(
        Duration::from_millis(10),
        Duration::from_millis(50),
        0,
    );
    let mut transitions = builder.transitions();
    let client = builder.connect().await.unwrap();
    end_stream_and_reconnect(&stream, &seen, &client).await;
    let mut causes = Vec::new();
    while let Some(t) = transitions.try_recv() {
        if t.to() == ConnState::Backoff {
            causes.push(t.cause.clone());
        }
    }
    assert!(
        matches!(&causes[..], [Some(Failure::Transport(TransportError::Eof))]),
        "{causes:?}"
    );
    client.stop().await;
    client.closed().await;
    assert!(!seen.lock().unwrap().iter().any(|r| r.method == "DELETE"));
}
