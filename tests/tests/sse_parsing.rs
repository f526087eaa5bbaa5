//! SSE as a hostile or merely unusual server sends it, against a scripted server on localhost
//! (issue 29, defects 5, 6 and the transport part of 10):
//! - keepalive comments, however many, never count toward the frame limit: 17 MiB of them
//!   before a response (on a POST's stream, and on a legacy transport's stream) still deliver
//!   the response;
//! - lines the WHATWG event-stream rules accept (a line without a colon, an unknown field, a
//!   `retry` that is not all digits, repeated fields, a BOM, CR and CRLF line ends) deliver
//!   the message and keep the last id for resuming;
//! - a server asking for `retry: 0` sets no pace: resumes of a POST's stream and reopenings of
//!   the standalone GET stream are spaced by at least `MIN_RETRY`, and a POST's stream is
//!   resumed at most `RESUMES_PER_REQUEST` times in all, even when each resume brings a
//!   message.

mod scripted_http;

use std::sync::Arc;
use std::time::Duration;

use mcp_runtime::transport::http::{GET_STREAM_ATTEMPTS, MIN_RETRY, RESUMES_PER_REQUEST};
use mcp_runtime::{ClientBuilder, Error, Failure, TransportError};
use scripted_http::{Answer, Script, Seen, init_result, legacy, serve, serve_at, wait_for};
use serde_json::{Value, json};

/// 17 MiB of keepalive comments, in lines of about 1 KiB (more than the 16 MiB frame limit).
fn keepalives() -> String {
    let line = format!(": keepalive {}\n", ".".repeat(1000));
    line.repeat(17 * 1024 * 1024 / line.len() + 1)
}

/// A Streamable HTTP server: a session per `initialize`, no GET stream unless `get` answers
/// it, `tools/call` answered by `call` (given the call's id and the requests seen before),
/// GETs resuming a stream (with `Last-Event-ID`) by `resume`.
fn server(
    call: impl Fn(&Value, &[Seen]) -> Answer + Send + Sync + 'static,
    resume: impl Fn(&Value, &[Seen]) -> Answer + Send + Sync + 'static,
    get: impl Fn(&[Seen]) -> Answer + Send + Sync + 'static,
) -> Script {
    Arc::new(move |req, before| {
        let body = req.body.clone().unwrap_or(Value::Null);
        match (req.method.as_str(), req.rpc_method()) {
            ("POST", Some("initialize")) => Answer::Json(
                init_result(&body["id"]),
                vec![("mcp-session-id", "s-1".into())],
            ),
            ("POST", Some("tools/call")) => call(&body["id"], before),
            // As a 2025-11-25 server refuses what comes before `initialize`.
            ("POST", Some("server/discover")) => Answer::StatusJson(
                400,
                json!({"jsonrpc": "2.0", "id": null,
                    "error": {"code": -32000, "message": "Bad Request: Server not initialized"}}),
            ),
            ("POST", _) => Answer::Status(202, vec![]),
            ("GET", _) if req.header("last-event-id").is_some() => {
                let id = before
                    .iter()
                    .find(|r| r.rpc_method() == Some("tools/call"))
                    .map(Seen::rpc_id)
                    .unwrap_or(Value::Null);
                resume(&id, before)
            }
            ("GET", _) => get(before),
            ("DELETE", _) => Answer::Status(200, vec![]),
            _ => Answer::Status(400, vec![]),
        }
    })
}

fn result(id: &Value, text: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": text}]}})
}

fn no_get(_: &[Seen]) -> Answer {
    Answer::Status(405, vec![])
}

fn no_resume(_: &Value, _: &[Seen]) -> Answer {
    Answer::Status(404, vec![])
}

/// The resuming GETs the server saw.
fn resumes(seen: &[Seen]) -> Vec<Seen> {
    seen.iter()
        .filter(|r| r.method == "GET" && r.header("last-event-id").is_some())
        .cloned()
        .collect()
}

/// The shortest gap between two requests in a row of `requests`.
fn shortest_gap(requests: &[Seen]) -> Duration {
    requests
        .windows(2)
        .map(|w| w[1].at - w[0].at)
        .min()
        .unwrap_or(Duration::MAX)
}

#[tokio::test]
async fn seventeen_mib_of_keepalive_comments_before_a_response_deliver_it() {
    let comments = keepalives();
    let script = server(
        move |id, _| {
            Answer::Sse(vec![
                comments.clone(),
                format!("id: r-1\ndata: {}", result(id, "after the keepalives")),
            ])
        },
        no_resume,
        no_get,
    );
    let (url, _) = serve(script).await;
    let client = ClientBuilder::http(&url).unwrap().connect().await.unwrap();
    let r = tokio::time::timeout(Duration::from_secs(30), client.call_tool("any", json!({})))
        .await
        .expect("the call does not hang")
        .unwrap();
    assert_eq!(r.text(), "after the keepalives");
    client.stop().await;
}

#[tokio::test]
async fn seventeen_mib_of_keepalive_comments_on_a_legacy_stream_leave_it_working() {
    let (script, stream) = legacy("/messages".into(), 405);
    let (url, _) = serve_at("/sse", script).await;
    let client = ClientBuilder::sse(&url).unwrap().connect().await.unwrap();
    let tx = stream.lock().unwrap().clone().unwrap();
    // Keepalives fill the stream between answers; the answer after them still comes.
    tx.send(keepalives()).unwrap();
    let r = tokio::time::timeout(Duration::from_secs(30), client.call_tool("any", json!({})))
        .await
        .expect("the call does not hang")
        .unwrap();
    assert_eq!(r.text(), "over legacy sse");
    client.ping().await.unwrap();
    client.stop().await;
}

#[tokio::test]
async fn lines_the_event_stream_rules_accept_deliver_the_message_and_keep_the_last_id() {
    // The first stream: a BOM, a line without a colon, an unknown field, a retry that is not
    // digits, two ids (the last wins), CR and CRLF line ends, a comment; a notification split
    // over two data lines; then it ends before the response. The resume brings the response.
    let script = server(
        |_, _| {
            let note = json!({"jsonrpc": "2.0", "method": "notifications/message",
                "params": {"level": "info", "data": "lenient"}})
            .to_string();
            let (head, tail) = note.split_at(note.len() / 2);
            Answer::Sse(vec![format!(
                "\u{FEFF}no-colon-here\rfoo: bar\r\nretry: soon\n: a comment\nid: a\nid: b\r\
                 event: message\ndata: {head}\ndata:{tail}"
            )])
        },
        |id, _| Answer::Sse(vec![format!("data: {}", result(id, "resumed"))]),
        no_get,
    );
    let (url, seen) = serve(script).await;
    let builder = ClientBuilder::http(&url).unwrap();
    let mut notifications = builder.notifications();
    let client = builder.connect().await.unwrap();
    let r = tokio::time::timeout(Duration::from_secs(20), client.call_tool("any", json!({})))
        .await
        .expect("the call does not hang")
        .unwrap();
    assert_eq!(r.text(), "resumed");
    let got: Vec<_> = std::iter::from_fn(|| notifications.try_recv()).collect();
    assert!(
        got.iter().any(|n| format!("{n:?}").contains("lenient")),
        "{got:?}"
    );
    client.stop().await;
    let resumes = resumes(&seen.lock().unwrap());
    let [resume] = &resumes[..] else {
        panic!("{resumes:?}")
    };
    assert_eq!(resume.header("last-event-id"), Some("b"));
}

#[tokio::test]
async fn a_server_asking_for_retry_0_is_resumed_at_the_floor_and_at_most_the_cap() {
    // Every stream brings a message (so "in a row without a message" never runs out), asks
    // for `retry: 0`, and breaks before the response.
    let broken = |n: usize| {
        let note = json!({"jsonrpc": "2.0", "method": "notifications/message",
            "params": {"level": "info", "data": n}});
        Answer::SseBroken(vec![format!("id: {n}\nretry: 0\ndata: {note}")])
    };
    let script = server(
        move |_, _| broken(0),
        move |_, before| broken(resumes(before).len() + 1),
        no_get,
    );
    let (url, seen) = serve(script).await;
    let client = ClientBuilder::http(&url)
        .unwrap()
        .request_timeout(Duration::from_secs(60))
        .connect()
        .await
        .unwrap();
    let err = tokio::time::timeout(Duration::from_secs(30), client.call_tool("any", json!({})))
        .await
        .expect("the resumes stop")
        .unwrap_err();
    assert!(
        matches!(&err, Error::ConnectionLost(Failure::Transport(TransportError::StreamLost { reason }))
            if reason.contains(&format!("{RESUMES_PER_REQUEST} times"))),
        "{err:?}"
    );
    client.stop().await;
    let resumes = resumes(&seen.lock().unwrap());
    assert_eq!(resumes.len(), RESUMES_PER_REQUEST as usize);
    let gap = shortest_gap(&resumes);
    assert!(gap >= MIN_RETRY, "resumed {gap:?} after the last");
}

#[tokio::test]
async fn a_get_stream_asking_for_retry_0_is_reopened_at_the_floor() {
    // The standalone GET stream asks for `retry: 0` and breaks at once, each time.
    let script = server(
        |id, _| Answer::Json(result(id, "ok"), vec![]),
        no_resume,
        |_| Answer::SseBroken(vec!["retry: 0\n: nothing here".into()]),
    );
    let (url, seen) = serve(script).await;
    let client = ClientBuilder::http(&url).unwrap().connect().await.unwrap();
    let attempts = GET_STREAM_ATTEMPTS as usize;
    let gets = wait_for(&seen, attempts, |r| r.method == "GET").await;
    assert_eq!(gets.len(), attempts, "{gets:?}");
    let gap = shortest_gap(&gets);
    assert!(gap >= MIN_RETRY, "reopened {gap:?} after the last");
    // Then no more: the attempts in a row without a message are spent.
    tokio::time::sleep(MIN_RETRY * 3).await;
    let all = seen
        .lock()
        .unwrap()
        .iter()
        .filter(|r| r.method == "GET")
        .count();
    assert_eq!(all, attempts);
    client.stop().await;
}
