//! A scripted HTTP/1.1 server on localhost for the HTTP transport tests (`http.rs`, `sse.rs`):
//! one request per connection, `Connection: close`, so each test says exactly what the server
//! answers, including SSE streams that end, and streams kept open and fed by the test.
#![allow(dead_code)] // each test file uses a part

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

/// One request as the server saw it.
#[derive(Clone, Debug)]
pub struct Seen {
    pub method: String,
    /// The request target (path and query, or an absolute URL through a proxy).
    pub target: String,
    pub headers: Vec<(String, String)>,
    pub body: Option<Value>,
    /// The body as text (a form, say).
    pub text: String,
    /// When the server saw it.
    pub at: std::time::Instant,
}

impl Seen {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn rpc_method(&self) -> Option<&str> {
        self.body.as_ref()?.get("method")?.as_str()
    }

    /// A parameter of the query (`path?a=b`) or, for a form body, of the body; decoded.
    pub fn param(&self, name: &str) -> Option<String> {
        let query = self.target.split_once('?').map(|(_, q)| q).unwrap_or("");
        [query, self.text.as_str()].into_iter().find_map(|pairs| {
            let url = reqwest::Url::parse(&format!("http://x/?{pairs}")).ok()?;
            url.query_pairs()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.into_owned())
        })
    }

    /// The path of the target, without its query.
    pub fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or("")
    }

    /// The JSON-RPC id of the request body (`null` when none).
    pub fn rpc_id(&self) -> Value {
        self.body
            .as_ref()
            .and_then(|b| b.get("id"))
            .cloned()
            .unwrap_or(Value::Null)
    }
}

/// What the server answers to one request.
pub enum Answer {
    /// A JSON body with extra headers.
    Json(Value, Vec<(&'static str, String)>),
    /// A JSON body with this status (a JSON-RPC error refused with `400`, say).
    StatusJson(u16, Value),
    /// A JSON body with this status and extra headers (a 401 with its challenge, say).
    StatusJsonHeaders(u16, Value, Vec<(&'static str, String)>),
    /// An SSE stream of these events (each without its blank line), then the end.
    Sse(Vec<String>),
    /// An SSE stream with extra headers, fed by the test until the sender is dropped.
    Stream(mpsc::UnboundedReceiver<String>, Vec<(&'static str, String)>),
    /// A status without body, with extra headers.
    Status(u16, Vec<(&'static str, String)>),
    /// A status with a plain-text body.
    StatusText(u16, &'static str),
    /// An SSE stream of these events in a chunked body cut off before its last chunk: the
    /// client sees a broken connection, not a normal end.
    SseBroken(Vec<String>),
    /// No answer at all: the connection stays open, silent.
    Hang,
    /// This answer, after a pause.
    Delayed(std::time::Duration, Box<Answer>),
}

pub type Script = Arc<dyn Fn(&Seen, &[Seen]) -> Answer + Send + Sync>;

/// What the server saw, in order.
pub type Log = Arc<Mutex<Vec<Seen>>>;

/// Serves `script` on a free port; returns the URL of `path` and what the server saw.
pub async fn serve_at(path: &str, script: Script) -> (String, Log) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}{path}", listener.local_addr().unwrap());
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
                let mut parts = line.split(' ');
                let method = parts.next().unwrap_or("").to_owned();
                let target = parts.next().unwrap_or("").to_owned();
                let mut headers = Vec::new();
                loop {
                    let mut h = String::new();
                    if r.read_line(&mut h).await.unwrap_or(0) == 0 {
                        return;
                    }
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
                if r.read_exact(&mut body).await.is_err() {
                    return;
                }
                let req = Seen {
                    method,
                    target,
                    headers,
                    body: serde_json::from_slice(&body).ok(),
                    text: String::from_utf8_lossy(&body).into_owned(),
                    at: std::time::Instant::now(),
                };
                let before = log.lock().unwrap().clone();
                log.lock().unwrap().push(req.clone());
                let mut answer = script(&req, &before);
                while let Answer::Delayed(pause, then) = answer {
                    tokio::time::sleep(pause).await;
                    answer = *then;
                }
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
                    Answer::StatusJson(status, v) => {
                        let body = v.to_string();
                        let mut h = head(status, &[], Some("application/json"));
                        h.push_str(&format!("content-length: {}\r\n\r\n{body}", body.len()));
                        w.write_all(h.as_bytes()).await
                    }
                    Answer::StatusJsonHeaders(status, v, extra) => {
                        let body = v.to_string();
                        let mut h = head(status, &extra, Some("application/json"));
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
                    Answer::Stream(mut events, extra) => {
                        let mut h = head(200, &extra, Some("text/event-stream"));
                        h.push_str("\r\n");
                        let mut result = w.write_all(h.as_bytes()).await;
                        while let (Ok(()), Some(e)) = (&result, events.recv().await) {
                            result = w.write_all(format!("{e}\n\n").as_bytes()).await;
                        }
                        result
                    }
                    Answer::SseBroken(events) => {
                        let mut h = head(200, &[], Some("text/event-stream"));
                        h.push_str("transfer-encoding: chunked\r\n\r\n");
                        for e in events {
                            let chunk = format!("{e}\n\n");
                            h.push_str(&format!("{:x}\r\n{chunk}\r\n", chunk.len()));
                        }
                        // A chunk announced, never sent: the body breaks off.
                        h.push_str("100\r\npartial");
                        w.write_all(h.as_bytes()).await
                    }
                    Answer::Delayed(..) => unreachable!("unwrapped above"),
                    Answer::Hang => {
                        std::future::pending::<()>().await;
                        Ok(())
                    }
                    Answer::StatusText(status, text) => {
                        let mut h = head(status, &[], Some("text/plain"));
                        h.push_str(&format!("content-length: {}\r\n\r\n{text}", text.len()));
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

/// [`serve_at`] on `/mcp`.
pub async fn serve(script: Script) -> (String, Log) {
    serve_at("/mcp", script).await
}

pub fn init_result(id: &Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": {"protocolVersion": "2025-11-25",
        "capabilities": {"tools": {}}, "serverInfo": {"name": "scripted-http", "version": "1"}}})
}

/// The open event stream of a legacy server, to feed or end it.
pub type LegacyStream = Arc<Mutex<Option<mpsc::UnboundedSender<String>>>>;

/// A legacy HTTP+SSE server (2024-11-05): `GET` opens the event stream, whose first event is
/// `endpoint` with `endpoint` (as given: relative or absolute); `POST`s to a target starting
/// with `/messages` are answered 202 and their answer goes on the stream. A `POST` anywhere
/// else (a Streamable HTTP client trying the SSE URL) is answered `refuse_post`.
pub fn legacy(endpoint: String, refuse_post: u16) -> (Script, LegacyStream) {
    let stream: LegacyStream = Arc::new(Mutex::new(None));
    let current = Arc::clone(&stream);
    let script: Script = Arc::new(move |req, _| match req.method.as_str() {
        "GET" => {
            let (tx, rx) = mpsc::unbounded_channel();
            tx.send(format!("event: endpoint\ndata: {endpoint}"))
                .unwrap();
            *current.lock().unwrap() = Some(tx);
            Answer::Stream(rx, Vec::new())
        }
        "POST" if req.target.starts_with("/messages") => {
            let id = req.rpc_id();
            let answer = match req.rpc_method() {
                Some("initialize") => {
                    let mut r = init_result(&id);
                    r["result"]["protocolVersion"] = json!("2024-11-05");
                    Some(r)
                }
                Some("tools/call") => Some(json!({"jsonrpc": "2.0", "id": id,
                    "result": {"content": [{"type": "text", "text": "over legacy sse"}]}})),
                Some("ping") => Some(json!({"jsonrpc": "2.0", "id": id, "result": {}})),
                _ => None,
            };
            if let (Some(answer), Some(tx)) = (answer, current.lock().unwrap().as_ref()) {
                let _ = tx.send(format!("event: message\ndata: {answer}"));
            }
            Answer::Status(202, Vec::new())
        }
        _ => Answer::Status(refuse_post, Vec::new()),
    });
    (script, stream)
}

/// Waits (at most 20 s) until the server saw `n` requests matching `which`; returns those it
/// saw by then.
pub async fn wait_for(log: &Log, n: usize, which: impl Fn(&Seen) -> bool) -> Vec<Seen> {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let matching: Vec<Seen> = log
            .lock()
            .unwrap()
            .iter()
            .filter(|r| which(r))
            .cloned()
            .collect();
        if matching.len() >= n || tokio::time::Instant::now() >= deadline {
            return matching;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
}

/// Ends the legacy server's open event stream, then waits (at most 20 s each) for the client's
/// next `GET` and for it to be ready again; pings over the new stream.
pub async fn end_stream_and_reconnect(
    stream: &LegacyStream,
    log: &Log,
    client: &mcp_runtime::Client,
) {
    let gets = log
        .lock()
        .unwrap()
        .iter()
        .filter(|r| r.method == "GET")
        .count();
    stream.lock().unwrap().take();
    wait_for(log, gets + 1, |r| r.method == "GET").await;
    tokio::time::timeout(std::time::Duration::from_secs(20), client.ready())
        .await
        .expect("ready again")
        .unwrap();
    client.ping().await.unwrap();
}
