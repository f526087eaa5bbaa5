//! The Streamable HTTP transport against a scripted HTTP server on localhost: the session's
//! headers, answers as JSON and as SSE streams, the standalone GET stream's 405, a session
//! expiry, DELETE on stop, and a redirect that is not followed.
//!
//! Also: resuming a POST's SSE stream with `Last-Event-ID` (and not without event ids), the
//! resumption budget, the server's `retry`, the standalone GET stream's resumption, the
//! fallback to the legacy HTTP+SSE transport and its verdict kept across reconnects, static
//! headers, the per-request timeout, oversized events, and proxies from the environment.
//!
//! The server (`scripted_http`) is a few lines of HTTP/1.1 over a `TcpListener` (one request
//! per connection, `Connection: close`), so each test says exactly what the server answers.

mod scripted_http;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_runtime::transport::{AutoHttpConnector, HttpConnector, HttpVerdict};
use mcp_runtime::{
    ClientBuilder, ConnState, EraMode, Error, Failure, RequestOptions, TransportError,
};
use scripted_http::{
    Answer, Script, Seen, end_stream_and_reconnect, init_result, legacy, serve, wait_for,
};
use serde_json::{Value, json};

/// A well-behaved server: a session per `initialize`, tool calls answered over SSE with a
/// priming event and a progress notification first, no GET stream, DELETE accepted.
fn well_behaved(sessions: Arc<Mutex<u32>>) -> Script {
    Arc::new(move |req, _| {
        let body = req.body.clone().unwrap_or(Value::Null);
        match (req.method.as_str(), req.rpc_method()) {
            ("POST", Some("initialize")) => {
                let mut n = sessions.lock().unwrap();
                *n += 1;
                Answer::Json(
                    init_result(&body["id"]),
                    vec![("mcp-session-id", format!("s-{n}"))],
                )
            }
            ("POST", Some("tools/call")) => {
                let token = body["params"]["_meta"]["progressToken"].clone();
                let progress = json!({"jsonrpc": "2.0", "method": "notifications/progress",
                    "params": {"progressToken": token, "progress": 1, "total": 2}});
                let result = json!({"jsonrpc": "2.0", "id": body["id"],
                    "result": {"content": [{"type": "text", "text": "over sse"}]}});
                Answer::Sse(vec![
                    "id: e0\ndata: ".into(),
                    format!("id: e1\ndata: {progress}"),
                    format!("id: e2\ndata: {result}"),
                ])
            }
            ("POST", Some("ping")) => Answer::Json(
                json!({"jsonrpc": "2.0", "id": body["id"], "result": {}}),
                vec![],
            ),
            // A 2025-11-25 server refuses what comes before `initialize`, as the TypeScript
            // SDK's does (400, a JSON-RPC error that is not the modern one).
            ("POST", Some("server/discover")) => Answer::StatusJson(
                400,
                json!({"jsonrpc": "2.0", "id": null,
                    "error": {"code": -32000, "message": "Bad Request: Server not initialized"}}),
            ),
            ("POST", _) => Answer::Status(202, vec![]),
            ("GET", _) => Answer::Status(405, vec![]),
            ("DELETE", _) => Answer::Status(200, vec![]),
            _ => Answer::Status(400, vec![]),
        }
    })
}

#[tokio::test]
async fn a_session_over_http_carries_its_headers_and_reads_json_and_sse() {
    let (url, seen) = serve(well_behaved(Arc::new(Mutex::new(0)))).await;
    let client = ClientBuilder::http(&url).unwrap().connect().await.unwrap();
    let (options, mut progress) = RequestOptions::new().progress_channel();
    let r = client
        .call_tool_with("any", json!({}), options)
        .await
        .unwrap();
    assert_eq!(r.text(), "over sse");
    assert_eq!(progress.try_recv().map(|p| p.progress).ok(), Some(1.0));
    client.ping().await.unwrap();
    client.stop().await;
    client.closed().await;
    let seen = seen.lock().unwrap().clone();
    // The probe (`auto`, the default), refused, then the legacy handshake.
    let (probe, init) = (&seen[0], &seen[1]);
    assert_eq!(probe.rpc_method(), Some("server/discover"));
    assert_eq!(probe.header("mcp-protocol-version"), Some("2026-07-28"));
    assert_eq!(init.rpc_method(), Some("initialize"));
    for req in [probe, init] {
        assert!(req.header("mcp-session-id").is_none(), "{req:?}");
        assert_eq!(
            req.header("accept"),
            Some("application/json, text/event-stream")
        );
    }
    // Every later request carries the session and the negotiated version.
    for req in &seen[2..] {
        assert_eq!(req.header("mcp-session-id"), Some("s-1"), "{req:?}");
        assert_eq!(
            req.header("mcp-protocol-version"),
            Some("2025-11-25"),
            "{req:?}"
        );
    }
    // The GET stream was asked once; its 405 means none, never a retry loop.
    assert_eq!(seen.iter().filter(|r| r.method == "GET").count(), 1);
    // Stop ends the session.
    assert_eq!(seen.last().map(|r| r.method.as_str()), Some("DELETE"));
}

/// The client's transport task takes the HTTP connectors' messages directly; their byte link
/// (`Connector::connect`, for callers of their own) still carries the same exchange as lines.
#[tokio::test]
async fn the_http_connectors_byte_link_carries_lines_both_ways() {
    use mcp_runtime::transport::Connector;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

    let (url, seen) = serve(well_behaved(Arc::new(Mutex::new(0)))).await;
    let link = HttpConnector::new(&url).unwrap().connect().await.unwrap();
    let (mut writer, reader) = (link.writer, link.reader);
    let mut lines = BufReader::new(reader).lines();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"}}});
    writer
        .write_all(format!("{init}\n").as_bytes())
        .await
        .unwrap();
    let answer: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
    assert_eq!(answer["id"], 1);
    assert!(answer["result"]["serverInfo"].is_object(), "{answer}");
    let ping = json!({"jsonrpc": "2.0", "id": 2, "method": "ping"});
    writer
        .write_all(format!("{ping}\n").as_bytes())
        .await
        .unwrap();
    let answer: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
    assert_eq!(answer, json!({"jsonrpc": "2.0", "id": 2, "result": {}}));
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen[1].header("mcp-session-id"), Some("s-1"), "{seen:?}");
    if let Some(closer) = link.closer {
        closer.close().await;
    }
}

/// A server whose first session (`s-1`) expires at the first request `expire` picks: it
/// answers that request `status` (with `body`), and everything of `s-1` after it the same.
fn expiring_at(
    sessions: Arc<Mutex<u32>>,
    status: u16,
    body: &'static str,
    expire: impl Fn(&scripted_http::Seen) -> bool + Send + Sync + 'static,
) -> Script {
    let inner = well_behaved(sessions);
    let expired = Arc::new(Mutex::new(false));
    Arc::new(move |req, before| {
        let on_first = req.header("mcp-session-id") == Some("s-1");
        if on_first && (*expired.lock().unwrap() || expire(req)) {
            *expired.lock().unwrap() = true;
            return if body.is_empty() {
                Answer::Status(status, vec![])
            } else {
                Answer::StatusText(status, body)
            };
        }
        inner(req, before)
    })
}

/// Checks a session expiry took the table's re-initialization path: two sessions made ready,
/// straight from ready to starting (no backoff), the cause said; only the live session deleted.
async fn reinitialized_at_once(
    client: mcp_runtime::Client,
    mut transitions: mcp_runtime::Transitions,
    sessions: &Arc<Mutex<u32>>,
    seen: &scripted_http::Log,
) {
    assert_eq!(*sessions.lock().unwrap(), 2);
    let mut readies = 0;
    let mut reinits = Vec::new();
    while let Some(t) = transitions.try_recv() {
        readies += usize::from(t.to() == ConnState::Ready);
        assert_ne!(t.to(), ConnState::Backoff, "{t:?}");
        if t.from() == ConnState::Ready && t.to() == ConnState::Starting {
            reinits.push(t);
        }
    }
    assert_eq!(readies, 2);
    let [t] = &reinits[..] else {
        panic!("{reinits:?}")
    };
    assert!(
        matches!(
            &t.cause,
            Some(Failure::Transport(TransportError::SessionExpired { session_hint, .. }))
                if session_hint == "s-1"
        ),
        "{t:?}"
    );
    client.stop().await;
    client.closed().await;
    // The expired session is not deleted; the new one is.
    let deletes: Vec<_> = seen
        .lock()
        .unwrap()
        .iter()
        .filter(|r| r.method == "DELETE")
        .map(|r| r.header("mcp-session-id").unwrap_or("").to_owned())
        .collect();
    assert_eq!(deletes, ["s-2"]);
}

/// The server's first session expires at the first ping, answered `status` (with `body`):
/// the client starts a new session at once and the refused ping is answered by it.
async fn ping_refused_by_an_expired_session(status: u16, body: &'static str) {
    let sessions = Arc::new(Mutex::new(0));
    let script = expiring_at(Arc::clone(&sessions), status, body, |req| {
        req.rpc_method() == Some("ping")
    });
    let (url, seen) = serve(script).await;
    // A backoff long enough that the test would time out if the expiry took that path.
    let builder = ClientBuilder::http(&url).unwrap().backoff(
        Duration::from_secs(60),
        Duration::from_secs(60),
        0,
    );
    let transitions = builder.transitions();
    let client = builder.connect().await.unwrap();
    // The ping the server refused never ran: it is answered by the new session.
    tokio::time::timeout(Duration::from_secs(10), client.ping())
        .await
        .expect("answered by the new session")
        .unwrap();
    let pings: Vec<_> = seen
        .lock()
        .unwrap()
        .iter()
        .filter(|r| r.rpc_method() == Some("ping"))
        .map(|r| {
            (
                r.header("mcp-session-id").unwrap_or("").to_owned(),
                r.rpc_id(),
            )
        })
        .collect();
    // Sent once on each session, under a new id the second time.
    assert_eq!(pings.len(), 2, "{pings:?}");
    assert_eq!((pings[0].0.as_str(), pings[1].0.as_str()), ("s-1", "s-2"));
    assert_ne!(pings[0].1, pings[1].1);
    reinitialized_at_once(client, transitions, &sessions, &seen).await;
}

#[tokio::test]
async fn a_404_for_the_session_starts_a_new_one_at_once_and_the_refused_call_is_sent_again() {
    ping_refused_by_an_expired_session(404, "").await;
}

#[tokio::test]
async fn a_400_naming_the_session_is_an_expiry_too() {
    ping_refused_by_an_expired_session(400, "Bad Request: No valid session ID provided").await;
}

#[tokio::test]
async fn a_call_whose_answer_was_streaming_fails_retriably_when_the_session_expires() {
    let sessions = Arc::new(Mutex::new(0));
    let (feed, stream) = tokio::sync::mpsc::unbounded_channel::<String>();
    let stream = Arc::new(Mutex::new(Some(stream)));
    let inner = expiring_at(Arc::clone(&sessions), 404, "", |req| {
        req.rpc_method() == Some("ping")
    });
    // The first tools/call of s-1 gets a stream that stays open without its answer.
    let script: Script = Arc::new(move |req, before| {
        if req.rpc_method() == Some("tools/call")
            && req.header("mcp-session-id") == Some("s-1")
            && let Some(rx) = stream.lock().unwrap().take()
        {
            return Answer::Stream(rx, vec![]);
        }
        inner(req, before)
    });
    let (url, seen) = serve(script).await;
    let builder = ClientBuilder::http(&url).unwrap().backoff(
        Duration::from_secs(60),
        Duration::from_secs(60),
        0,
    );
    let transitions = builder.transitions();
    let client = builder.connect().await.unwrap();
    let slow = {
        let client = client.clone();
        tokio::spawn(async move { client.call_tool("slow", json!({})).await })
    };
    // The stream is open (its priming event went out) before the session expires.
    feed.send("id: p0\ndata: ".into()).unwrap();
    scripted_http::wait_for(&seen, 1, |r| r.rpc_method() == Some("tools/call")).await;
    tokio::time::timeout(Duration::from_secs(10), client.ping())
        .await
        .expect("answered by the new session")
        .unwrap();
    let err = tokio::time::timeout(Duration::from_secs(10), slow)
        .await
        .expect("answered at once")
        .unwrap()
        .unwrap_err();
    assert!(
        matches!(
            &err,
            Error::ConnectionLost(Failure::Transport(TransportError::SessionExpired { .. }))
        ),
        "{err:?}"
    );
    drop(feed);
    reinitialized_at_once(client, transitions, &sessions, &seen).await;
}

#[tokio::test]
async fn a_redirect_is_not_followed_and_an_error_status_is_typed() {
    let script: Script = Arc::new(|_, _| {
        Answer::Status(
            307,
            vec![("location", "http://127.0.0.1:9/elsewhere".into())],
        )
    });
    let (url, seen) = serve(script).await;
    let cause = refused(ClientBuilder::http(&url).unwrap()).await;
    assert!(
        matches!(
            &cause,
            Failure::Transport(TransportError::Http { status: 307, .. })
        ),
        "{cause:?}"
    );
    // The probe and `initialize` (`auto` takes any other answer to the probe for a legacy
    // server), each refused: no redirect followed.
    let methods: Vec<_> = seen
        .lock()
        .unwrap()
        .iter()
        .map(|r| r.rpc_method().map(str::to_owned))
        .collect();
    assert_eq!(
        methods,
        [Some("server/discover".into()), Some("initialize".into())],
        "no redirect followed"
    );
}

#[tokio::test]
async fn a_session_id_that_is_not_visible_ascii_is_refused() {
    let script: Script = Arc::new(|req, _| {
        let id = req
            .body
            .as_ref()
            .map(|b| b["id"].clone())
            .unwrap_or(Value::Null);
        Answer::Json(init_result(&id), vec![("mcp-session-id", "bad id".into())])
    });
    let (url, _) = serve(script).await;
    let cause = refused(ClientBuilder::http(&url).unwrap()).await;
    assert!(
        matches!(&cause, Failure::Transport(TransportError::Protocol { reason }) if reason.contains("visible ASCII")),
        "{cause:?}"
    );
}

/// A server whose tools/call answers with `first` (a POST's SSE stream) and whose resuming
/// GETs are answered by `resume`, given how many came before and the id of the call;
/// everything else as [`well_behaved`].
fn resuming(
    first: Vec<String>,
    resume: impl Fn(usize, &Value) -> Answer + Send + Sync + 'static,
) -> Script {
    let inner = well_behaved(Arc::new(Mutex::new(0)));
    Arc::new(
        move |req, before| match (req.method.as_str(), req.rpc_method()) {
            ("POST", Some("tools/call")) => Answer::Sse(first.clone()),
            ("GET", _) if req.header("last-event-id").is_some() => {
                resume(resumes(before).len(), &call_id(before))
            }
            _ => inner(req, before),
        },
    )
}

fn tool_result(id: &Value, text: &str) -> String {
    let result = json!({"jsonrpc": "2.0", "id": id,
        "result": {"content": [{"type": "text", "text": text}]}});
    format!("id: r-final\ndata: {result}")
}

/// The id of the first tools/call the server saw.
fn call_id(seen: &[Seen]) -> Value {
    seen.iter()
        .find(|r| r.rpc_method() == Some("tools/call"))
        .map(Seen::rpc_id)
        .unwrap_or(Value::Null)
}

fn resumes(seen: &[Seen]) -> Vec<Seen> {
    seen.iter()
        .filter(|r| r.method == "GET" && r.header("last-event-id").is_some())
        .cloned()
        .collect()
}

/// Why connecting with `builder` failed (it must fail).
async fn refused(builder: ClientBuilder) -> Failure {
    match builder.connect().await {
        Err(Error::Connect(e)) => e.cause.clone(),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn notifications_initialized_reaches_the_server_before_the_next_request() {
    // The server takes its time to accept notifications/initialized; the tool call must not
    // overtake it (on its own connection).
    let inner = well_behaved(Arc::new(Mutex::new(0)));
    let script: Script = Arc::new(move |req, before| {
        let answer = inner(req, before);
        if req.rpc_method() == Some("notifications/initialized") {
            Answer::Delayed(Duration::from_millis(300), Box::new(answer))
        } else {
            answer
        }
    });
    let (url, seen) = serve(script).await;
    let client = ClientBuilder::http(&url).unwrap().connect().await.unwrap();
    client.call_tool("any", json!({})).await.unwrap();
    client.stop().await;
    let seen = seen.lock().unwrap().clone();
    let at = |m: &str| seen.iter().find(|r| r.rpc_method() == Some(m)).unwrap().at;
    let gap = at("tools/call") - at("notifications/initialized");
    assert!(gap >= Duration::from_millis(300), "{gap:?}");
}

/// Serves `script`, calls a tool through `ClientBuilder::http`, checks the result's text, stops;
/// returns what the server saw.
async fn call_through(script: Script, text: &str) -> Vec<Seen> {
    let (url, seen) = serve(script).await;
    let client = ClientBuilder::http(&url).unwrap().connect().await.unwrap();
    let r = client.call_tool("any", json!({})).await.unwrap();
    assert_eq!(r.text(), text);
    client.stop().await;
    seen.lock().unwrap().clone()
}

#[tokio::test]
async fn a_post_stream_that_ends_before_its_response_is_resumed_after_the_servers_retry() {
    // The stream ends after a priming event with an id and `retry: 1500`, as in the
    // conformance scenario sse-retry; the resumed GET brings the result.
    let script = resuming(vec!["id: p-1\nretry: 1500\ndata: ".into()], |_, id| {
        Answer::Sse(vec![tool_result(id, "resumed")])
    });
    let seen = call_through(script, "resumed").await;
    let post = seen
        .iter()
        .find(|r| r.rpc_method() == Some("tools/call"))
        .unwrap();
    let gets = resumes(&seen);
    let [get] = &gets[..] else { panic!("{gets:?}") };
    assert_eq!(get.header("last-event-id"), Some("p-1"));
    assert_eq!(get.header("mcp-session-id"), Some("s-1"));
    assert_eq!(get.header("accept"), Some("text/event-stream"));
    // Not sooner than the server asked (the default wait would be about 1 s).
    let waited = get.at - post.at;
    assert!(waited >= Duration::from_millis(1500), "{waited:?}");
}

/// Serves `script`, calls a tool that must fail, within 20 s (not after its 60 s timeout),
/// because its response stream is lost (a message with `why`); returns what the server saw.
async fn lost_call(script: Script, why: &str) -> Vec<Seen> {
    let (url, seen) = serve(script).await;
    let client = ClientBuilder::http(&url)
        .unwrap()
        .request_timeout(Duration::from_secs(60))
        .connect()
        .await
        .unwrap();
    let err = tokio::time::timeout(Duration::from_secs(20), client.call_tool("any", json!({})))
        .await
        .expect("the call does not hang")
        .unwrap_err();
    assert!(
        matches!(&err, Error::ConnectionLost(Failure::Transport(TransportError::StreamLost { reason }))
            if reason.contains(why)),
        "{err:?}"
    );
    client.stop().await;
    seen.lock().unwrap().clone()
}

#[tokio::test]
async fn a_post_stream_whose_connection_breaks_is_resumed_after_the_last_event() {
    // A progress notification with an id, then the connection breaks mid-body.
    let script: Script = {
        let inner = resuming(vec![], |_, id| {
            Answer::Sse(vec![tool_result(id, "resumed after a break")])
        });
        Arc::new(move |req, before| match req.rpc_method() {
            Some("tools/call") => {
                let note = json!({"jsonrpc": "2.0", "method": "notifications/message",
                    "params": {"level": "info", "data": "before the break"}});
                Answer::SseBroken(vec![format!("id: b-7\nretry: 10\ndata: {note}")])
            }
            _ => inner(req, before),
        })
    };
    let seen = call_through(script, "resumed after a break").await;
    let gets = resumes(&seen);
    let [get] = &gets[..] else { panic!("{gets:?}") };
    assert_eq!(get.header("last-event-id"), Some("b-7"));
}

#[tokio::test]
async fn a_post_stream_without_event_ids_that_ends_early_fails_the_call_rather_than_hang() {
    let script = resuming(vec!["data: ".into()], |_, _| Answer::Status(500, vec![]));
    let seen = lost_call(script, "no event id").await;
    assert!(resumes(&seen).is_empty());
}

#[tokio::test]
async fn streams_that_end_without_a_message_spend_the_resumption_budget() {
    // Every resumed stream brings a priming event and ends: no progress, so the budget of
    // five attempts is spent, never reset.
    let script = resuming(vec!["id: a\nretry: 20\ndata: ".into()], |_, _| {
        Answer::Sse(vec!["id: a\ndata: ".into()])
    });
    let seen = lost_call(script, "gave up after 5 attempts").await;
    assert_eq!(
        resumes(&seen).len(),
        mcp_runtime::transport::http::RESUME_ATTEMPTS as usize
    );
}

#[tokio::test]
async fn a_resumed_stream_that_brings_a_message_resets_the_budget() {
    // Seven resumptions in a row, each bringing a log notification: more than the budget,
    // so only the reset on progress lets the eighth bring the result.
    let script = resuming(vec!["id: 0\nretry: 20\ndata: ".into()], |before, id| {
        if before < 7 {
            let note = json!({"jsonrpc": "2.0", "method": "notifications/message",
                "params": {"level": "info", "data": before}});
            Answer::Sse(vec![format!("id: {}\ndata: {note}", before + 1)])
        } else {
            Answer::Sse(vec![tool_result(id, "after eight")])
        }
    });
    let seen = call_through(script, "after eight").await;
    // Each resumption starts after the last event seen.
    let ids: Vec<_> = resumes(&seen)
        .iter()
        .map(|g| g.header("last-event-id").unwrap().to_owned())
        .collect();
    assert_eq!(ids, ["0", "1", "2", "3", "4", "5", "6", "7"]);
}

#[tokio::test]
async fn the_standalone_get_stream_resumes_with_the_last_event_id() {
    let inner = well_behaved(Arc::new(Mutex::new(0)));
    let script: Script = Arc::new(move |req, before| {
        let gets = before.iter().filter(|r| r.method == "GET").count();
        match (req.method.as_str(), gets) {
            ("GET", 0) => {
                let note = json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"});
                Answer::Sse(vec![format!("id: g-1\nretry: 50\ndata: {note}")])
            }
            ("GET", _) => Answer::Status(405, vec![]),
            _ => inner(req, before),
        }
    });
    let (url, seen) = serve(script).await;
    let builder = ClientBuilder::http(&url).unwrap();
    let mut notifications = builder.notifications();
    let client = builder.connect().await.unwrap();
    let gets = wait_for(&seen, 2, |r| r.method == "GET").await;
    assert_eq!(gets.len(), 2, "{gets:?}");
    assert_eq!(gets[0].header("last-event-id"), None);
    assert_eq!(gets[1].header("last-event-id"), Some("g-1"));
    assert!(gets[1].at - gets[0].at >= Duration::from_millis(50));
    assert!(std::iter::from_fn(|| notifications.try_recv()).count() >= 1);
    client.stop().await;
}

#[tokio::test]
async fn an_sse_event_over_the_frame_limit_ends_the_link() {
    let script: Script = {
        let inner = well_behaved(Arc::new(Mutex::new(0)));
        Arc::new(move |req, before| match req.rpc_method() {
            Some("tools/call") => Answer::Sse(vec![format!("data: {}", "x".repeat(64 * 1024))]),
            _ => inner(req, before),
        })
    };
    let (url, _) = serve(script).await;
    // The connector's limit, and the builder's (which reaches the HTTP transport: the event is
    // refused there, before it is read whole).
    let connector = HttpConnector::new(&url).unwrap().max_frame_bytes(4096);
    for builder in [
        ClientBuilder::new(connector),
        ClientBuilder::http(&url).unwrap().max_frame_bytes(4096),
    ] {
        let client = builder.connect().await.unwrap();
        let err = client.call_tool("any", json!({})).await.unwrap_err();
        assert!(
            matches!(
                &err,
                Error::ConnectionLost(Failure::Transport(TransportError::Oversized {
                    max: 4096,
                    ..
                }))
            ),
            "{err:?}"
        );
        client.stop().await;
    }
}

#[tokio::test]
async fn static_headers_go_on_every_request_and_bad_values_are_refused_before_sending() {
    let (url, seen) = serve(well_behaved(Arc::new(Mutex::new(0)))).await;
    for bad in ["a\r\nx-injected: 1", "a\nb", "a\rb"] {
        let err = ClientBuilder::http(&url)
            .unwrap()
            .header("x-api-key", bad)
            .unwrap_err();
        assert!(!err.to_string().contains(bad), "{err}");
    }
    assert!(
        ClientBuilder::http(&url)
            .unwrap()
            .header("mcp-session-id", "mine")
            .is_err()
    );
    assert!(
        ClientBuilder::stdio("true", [""; 0])
            .header("x-api-key", "k")
            .is_err()
    );
    assert!(seen.lock().unwrap().is_empty(), "nothing sent");
    let builder = ClientBuilder::http(&url)
        .unwrap()
        .header("X-Api-Key", "k-1")
        .unwrap()
        .header("x-api-key", "k-2")
        .unwrap()
        .header("Authorization", "Bearer secret-token")
        .unwrap();
    assert!(!format!("{builder:?}").contains("secret-token"));
    let client = builder.connect().await.unwrap();
    client.call_tool("any", json!({})).await.unwrap();
    client.stop().await;
    client.closed().await;
    let seen = seen.lock().unwrap().clone();
    assert!(seen.iter().any(|r| r.method == "GET"));
    assert!(seen.iter().any(|r| r.method == "DELETE"));
    for req in &seen {
        assert_eq!(req.header("x-api-key"), Some("k-2"), "{req:?}");
        assert_eq!(
            req.header("authorization"),
            Some("Bearer secret-token"),
            "{req:?}"
        );
    }
}

#[tokio::test]
async fn the_http_timeout_bounds_a_request_that_gets_no_answer() {
    let (url, _) = serve(Arc::new(|_, _| Answer::Hang)).await;
    let started = std::time::Instant::now();
    let builder = ClientBuilder::streamable_http(&url)
        .unwrap()
        .http_timeout(Duration::from_millis(300))
        .init_timeout(Duration::from_secs(30));
    let cause = refused(builder).await;
    assert!(
        matches!(&cause, Failure::Transport(TransportError::Io(io))
            if io.kind() == std::io::ErrorKind::TimedOut),
        "{cause:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(20));
}

/// The fallback of `ClientBuilder::http` for one status of the POST of `initialize` (in `auto`,
/// of the `server/discover` probe before it, too).
async fn falls_back_on(status: u16, era: EraMode) {
    let (script, stream) = legacy("/messages?session=abc".into(), status);
    let (url, seen) = serve(script).await;
    let connector = AutoHttpConnector::new(&url).unwrap();
    let builder = ClientBuilder::new(connector.clone()).era(era).backoff(
        Duration::from_millis(10),
        Duration::from_millis(50),
        0,
    );
    let client = builder.connect().await.unwrap();
    assert_eq!(connector.verdict(), Some(HttpVerdict::Legacy));
    assert_eq!(client.server_info().unwrap().protocol_version, "2024-11-05");
    let r = client.call_tool("any", json!({})).await.unwrap();
    assert_eq!(r.text(), "over legacy sse");
    // The server ends the stream: the client reconnects, straight to the legacy transport.
    end_stream_and_reconnect(&stream, &seen, &client).await;
    client.stop().await;
    client.closed().await;
    let seen = seen.lock().unwrap().clone();
    let refused: Vec<_> = seen
        .iter()
        .filter(|r| r.method == "POST" && !r.target.starts_with("/messages"))
        .collect();
    // The probe (in auto) and `initialize`, once each: the verdicts are kept across the
    // reconnect.
    let methods: Vec<_> = refused.iter().map(|r| r.rpc_method()).collect();
    let expected = match era {
        EraMode::Auto => vec![Some("server/discover"), Some("initialize")],
        _ => vec![Some("initialize")],
    };
    assert_eq!(methods, expected, "Streamable POSTs: {refused:?}");
    assert_eq!(seen.iter().filter(|r| r.method == "GET").count(), 2);
    let inits = seen
        .iter()
        .filter(|r| r.target.starts_with("/messages") && r.rpc_method() == Some("initialize"))
        .count();
    assert_eq!(
        inits, 2,
        "initialize again on the legacy transport after the reconnect"
    );
    assert!(!seen.iter().any(|r| r.method == "DELETE"));
}

#[tokio::test]
async fn a_400_to_initialize_falls_back_to_legacy_sse_and_the_verdict_is_kept() {
    falls_back_on(400, EraMode::Legacy).await;
    falls_back_on(400, EraMode::Auto).await;
}

#[tokio::test]
async fn a_404_to_initialize_falls_back_to_legacy_sse_and_the_verdict_is_kept() {
    falls_back_on(404, EraMode::Legacy).await;
    falls_back_on(404, EraMode::Auto).await;
}

#[tokio::test]
async fn a_405_to_initialize_falls_back_to_legacy_sse_and_the_verdict_is_kept() {
    falls_back_on(405, EraMode::Legacy).await;
    falls_back_on(405, EraMode::Auto).await;
}

#[tokio::test]
async fn other_statuses_and_streamable_only_builders_do_not_fall_back() {
    type Builder = fn(&str) -> mcp_runtime::Result<ClientBuilder>;
    let cases: [(u16, Builder); 2] = [
        (500, ClientBuilder::http),
        (405, ClientBuilder::streamable_http),
    ];
    for (status, builder) in cases {
        let (script, _) = legacy("/messages".into(), status);
        let (url, seen) = serve(script).await;
        let cause = refused(builder(&url).unwrap()).await;
        assert!(
            matches!(cause, Failure::Transport(TransportError::Http { status: s, .. }) if s == status),
            "{cause:?}"
        );
        assert!(!seen.lock().unwrap().iter().any(|r| r.method == "GET"));
    }
}

/// Runs in a child process only (it needs its own environment): connects through whatever
/// proxy the environment names and reports what happened by its exit status.
#[tokio::test]
async fn proxy_child() {
    let Ok(expect) = std::env::var("MCP_PROXY_CHILD_EXPECT") else {
        return;
    };
    let result = ClientBuilder::streamable_http("http://mcp-upstream.invalid/mcp")
        .unwrap()
        .init_timeout(Duration::from_secs(10))
        .connect()
        .await;
    assert_eq!(result.is_ok(), expect == "ok", "{result:?}");
    if let Ok(client) = result {
        client.stop().await;
        client.closed().await;
    }
}

#[tokio::test]
async fn http_proxy_and_no_proxy_from_the_environment_are_honoured() {
    let (proxy, seen) = serve(well_behaved(Arc::new(Mutex::new(0)))).await;
    let proxy = proxy.trim_end_matches("/mcp").to_owned();
    let run = move |no_proxy: Option<&str>, expect: &str| {
        let mut child = std::process::Command::new(std::env::current_exe().unwrap());
        child
            .args(["proxy_child", "--exact", "--test-threads=1"])
            .env("MCP_PROXY_CHILD_EXPECT", expect)
            .env("HTTP_PROXY", &proxy)
            .env_remove("http_proxy")
            .env_remove("HTTPS_PROXY")
            .env_remove("https_proxy")
            .env_remove("ALL_PROXY")
            .env_remove("all_proxy")
            .env_remove("no_proxy")
            .env_remove("REQUEST_METHOD")
            .stdout(std::process::Stdio::null());
        match no_proxy {
            Some(n) => child.env("NO_PROXY", n),
            None => child.env_remove("NO_PROXY"),
        };
        child.status().unwrap()
    };
    let status = tokio::task::spawn_blocking({
        let run = run.clone();
        move || run(None, "ok")
    })
    .await
    .unwrap();
    assert!(status.success(), "through the proxy: {status:?}");
    let through = seen.lock().unwrap().clone();
    assert!(
        through
            .iter()
            .any(|r| r.method == "POST" && r.target == "http://mcp-upstream.invalid/mcp"),
        "{through:?}"
    );
    let before = through.len();
    let status = tokio::task::spawn_blocking(move || run(Some("mcp-upstream.invalid"), "fail"))
        .await
        .unwrap();
    assert!(status.success(), "around the proxy: {status:?}");
    assert_eq!(
        seen.lock().unwrap().len(),
        before,
        "NO_PROXY: not through the proxy"
    );
}
