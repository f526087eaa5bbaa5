//! The Streamable HTTP transport against a scripted HTTP server on localhost: the session's
//! headers, answers as JSON and as SSE streams, the standalone GET stream's 405, a session
//! expiry, DELETE on stop, and a redirect that is not followed.
//!
//! The server is a few lines of HTTP/1.1 over a `TcpListener` (one request per connection,
//! `Connection: close`), so each test says exactly what the server answers.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_runtime::{ClientBuilder, ConnState, Error, Failure, RequestOptions, TransportError};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

/// One request as the server saw it.
#[derive(Clone, Debug)]
struct Seen {
    method: String,
    headers: Vec<(String, String)>,
    body: Option<Value>,
}

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn rpc_method(&self) -> Option<&str> {
        self.body.as_ref()?.get("method")?.as_str()
    }
}

/// What the server answers to one request.
enum Answer {
    Json(Value, Vec<(&'static str, String)>),
    Sse(Vec<String>),
    Status(u16, Vec<(&'static str, String)>),
}

type Script = Arc<dyn Fn(&Seen, &[Seen]) -> Answer + Send + Sync>;

/// Serves `script` on a free port; returns the endpoint URL and what the server saw.
async fn serve(script: Script) -> (String, Arc<Mutex<Vec<Seen>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let (log, script) = (Arc::clone(&log), Arc::clone(&script));
            tokio::spawn(async move {
                let (r, mut w) = stream.into_split();
                let mut r = BufReader::new(r);
                let mut line = String::new();
                if r.read_line(&mut line).await.unwrap_or(0) == 0 {
                    return;
                }
                let method = line.split(' ').next().unwrap_or("").to_owned();
                let mut headers = Vec::new();
                loop {
                    let mut h = String::new();
                    r.read_line(&mut h).await.unwrap();
                    let h = h.trim_end();
                    if h.is_empty() {
                        break;
                    }
                    if let Some((k, v)) = h.split_once(':') {
                        headers.push((k.trim().to_owned(), v.trim().to_owned()));
                    }
                }
                let len = headers
                    .iter()
                    .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
                    .and_then(|(_, v)| v.parse::<usize>().ok())
                    .unwrap_or(0);
                let mut body = vec![0; len];
                r.read_exact(&mut body).await.unwrap();
                let req = Seen {
                    method,
                    headers,
                    body: serde_json::from_slice(&body).ok(),
                };
                let before = log.lock().unwrap().clone();
                log.lock().unwrap().push(req.clone());
                let answer = script(&req, &before);
                let head = |status: u16, extra: &[(&str, String)], kind: Option<&str>| {
                    let mut h = format!("HTTP/1.1 {status} X\r\nconnection: close\r\n");
                    if let Some(kind) = kind {
                        h.push_str(&format!("content-type: {kind}\r\n"));
                    }
                    for (k, v) in extra {
                        h.push_str(&format!("{k}: {v}\r\n"));
                    }
                    h
                };
                let _ = match answer {
                    Answer::Json(v, extra) => {
                        let body = v.to_string();
                        let mut h = head(200, &extra, Some("application/json"));
                        h.push_str(&format!("content-length: {}\r\n\r\n{body}", body.len()));
                        w.write_all(h.as_bytes()).await
                    }
                    Answer::Sse(events) => {
                        let mut h = head(200, &[], Some("text/event-stream"));
                        h.push_str("\r\n");
                        for e in events {
                            h.push_str(&e);
                            h.push_str("\n\n");
                        }
                        w.write_all(h.as_bytes()).await
                    }
                    Answer::Status(status, extra) => {
                        let mut h = head(status, &extra, None);
                        h.push_str("content-length: 0\r\n\r\n");
                        w.write_all(h.as_bytes()).await
                    }
                };
                let _ = w.shutdown().await;
            });
        }
    });
    (url, seen)
}

fn init_result(id: &Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": {"protocolVersion": "2025-11-25",
        "capabilities": {"tools": {}}, "serverInfo": {"name": "scripted-http", "version": "1"}}})
}

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
    let init = &seen[0];
    assert_eq!(init.rpc_method(), Some("initialize"));
    assert!(init.header("mcp-session-id").is_none());
    assert_eq!(
        init.header("accept"),
        Some("application/json, text/event-stream")
    );
    // Every later request carries the session and the negotiated version.
    for req in &seen[1..] {
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

#[tokio::test]
async fn a_404_for_the_session_ends_it_and_the_client_starts_a_new_one() {
    let sessions = Arc::new(Mutex::new(0));
    let inner = well_behaved(Arc::clone(&sessions));
    let expired = Arc::new(Mutex::new(false));
    let flag = Arc::clone(&expired);
    let script: Script = Arc::new(move |req, before| {
        // The first session expires at its first ping.
        if req.rpc_method() == Some("ping") && req.header("mcp-session-id") == Some("s-1") {
            *flag.lock().unwrap() = true;
            return Answer::Status(404, vec![]);
        }
        inner(req, before)
    });
    let (url, seen) = serve(script).await;
    let builder = ClientBuilder::http(&url).unwrap().backoff(
        Duration::from_millis(10),
        Duration::from_millis(50),
        0,
    );
    let mut transitions = builder.transitions();
    let client = builder.connect().await.unwrap();
    let err = client.ping().await.unwrap_err();
    assert!(
        matches!(
            &err,
            Error::ConnectionLost(Failure::Transport(TransportError::SessionExpired { session_hint }))
                if session_hint == "s-1"
        ),
        "{err:?}"
    );
    assert!(*expired.lock().unwrap());
    // The failed link ends at once (not after the transport's flush bound of 2 s).
    tokio::time::timeout(Duration::from_secs(1), client.ready())
        .await
        .expect("a new session within 1 s")
        .unwrap();
    client.ping().await.unwrap();
    assert_eq!(*sessions.lock().unwrap(), 2);
    let mut readies = 0;
    let mut into_backoff = Vec::new();
    while let Some(t) = transitions.try_recv() {
        readies += usize::from(t.to() == ConnState::Ready);
        if t.to() == ConnState::Backoff {
            into_backoff.push(t);
        }
    }
    assert_eq!(readies, 2);
    // The transition into backoff says why, and when the next attempt is due.
    let [t] = &into_backoff[..] else {
        panic!("{into_backoff:?}")
    };
    assert!(
        matches!(
            &t.cause,
            Some(Failure::Transport(TransportError::SessionExpired { .. }))
        ),
        "{t:?}"
    );
    assert!(
        t.retry_in.is_some_and(|d| d <= Duration::from_millis(10)),
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

#[tokio::test]
async fn a_redirect_is_not_followed_and_an_error_status_is_typed() {
    let script: Script = Arc::new(|_, _| {
        Answer::Status(
            307,
            vec![("location", "http://127.0.0.1:9/elsewhere".into())],
        )
    });
    let (url, seen) = serve(script).await;
    let err = ClientBuilder::http(&url)
        .unwrap()
        .connect()
        .await
        .unwrap_err();
    let Error::Connect(e) = &err else {
        panic!("{err:?}")
    };
    assert!(
        matches!(
            &e.cause,
            Failure::Transport(TransportError::Http { status: 307, .. })
        ),
        "{e:?}"
    );
    assert_eq!(
        seen.lock().unwrap().len(),
        1,
        "one request, no redirect followed"
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
    let err = ClientBuilder::http(&url)
        .unwrap()
        .connect()
        .await
        .unwrap_err();
    let Error::Connect(e) = &err else {
        panic!("{err:?}")
    };
    assert!(
        matches!(&e.cause, Failure::Transport(TransportError::Http { reason, .. }) if reason.contains("visible ASCII")),
        "{e:?}"
    );
}
