//! The bounds of the HTTP transports against a hostile HTTP server on localhost (a few lines
//! of HTTP/1.1 over a `TcpListener` in this file: one request per connection, each answered
//! with raw bytes, or never):
//!
//! - a server that never answers the `POST` of `notifications/initialized`: the call behind it
//!   fails within the header bound as the connection lost, naming the notification (not as
//!   timed out), and the client reconnects;
//! - a server that accepts the connection and never sends headers: bounded by the header bound;
//! - a standalone `GET` never answered: the first request still goes out at once;
//! - a connect into a full listen backlog (a black hole on loopback): bounded by the connect
//!   bound;
//! - a `2xx` answer to a request's `POST` that holds no response (no body, `202`, an SSE stream
//!   served as `application/json`, JSON answering another id): the call fails at once with the
//!   same made-up error in both eras;
//! - a response header over hyper's limit on a response head (about 400 KiB: one of 100 KiB
//!   is accepted): the error says hyper's cause, not just "error sending request".

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mcp_machine::headers::HTTP_REFUSED;
use mcp_runtime::transport::NoAnswer;
use mcp_runtime::{ClientBuilder, EraMode, Error, Failure, TransportError};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

/// One request as the server saw it.
#[derive(Clone, Debug)]
struct Seen {
    method: String,
    body: Value,
    at: Instant,
    /// When the client closed the connection of a request left unanswered.
    closed: Arc<Mutex<Option<Instant>>>,
}

impl Seen {
    fn rpc_method(&self) -> Option<&str> {
        self.body.get("method")?.as_str()
    }
}

/// What the server does with one request.
enum Reply {
    /// These bytes (a whole HTTP response), then the connection closes.
    Raw(Vec<u8>),
    /// Nothing: the connection stays open, silent.
    Hang,
}

type Script = Arc<dyn Fn(&Seen) -> Reply + Send + Sync>;
type Log = Arc<Mutex<Vec<Seen>>>;

/// A response of `status` with `headers` and `body`.
fn raw(status: u16, headers: &[(&str, &str)], body: &str) -> Reply {
    let mut r = format!(
        "HTTP/1.1 {status} X\r\nconnection: close\r\ncontent-length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        r.push_str(&format!("{k}: {v}\r\n"));
    }
    r.push_str("\r\n");
    r.push_str(body);
    Reply::Raw(r.into_bytes())
}

/// A JSON answer of status 200.
fn json_reply(v: &Value, headers: &[(&str, &str)]) -> Reply {
    let mut all = vec![("content-type", "application/json")];
    all.extend_from_slice(headers);
    raw(200, &all, &v.to_string())
}

/// Serves `script` on a free port; the URL of `/mcp`, and what the server saw.
async fn serve(script: Script) -> (String, Log) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let log: Log = Arc::default();
    let seen = Arc::clone(&log);
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let (log, script) = (Arc::clone(&seen), Arc::clone(&script));
            tokio::spawn(async move {
                let (r, mut w) = stream.into_split();
                let mut r = BufReader::new(r);
                let mut line = String::new();
                if r.read_line(&mut line).await.unwrap_or(0) == 0 {
                    return;
                }
                let method = line.split(' ').next().unwrap_or("").to_owned();
                let mut len = 0;
                loop {
                    let mut h = String::new();
                    if r.read_line(&mut h).await.unwrap_or(0) == 0 {
                        return;
                    }
                    let h = h.trim_end();
                    if h.is_empty() {
                        break;
                    }
                    if let Some((k, v)) = h.split_once(':')
                        && k.trim().eq_ignore_ascii_case("content-length")
                    {
                        len = v.trim().parse().unwrap_or(0);
                    }
                }
                let mut body = vec![0; len];
                if r.read_exact(&mut body).await.is_err() {
                    return;
                }
                let req = Seen {
                    method,
                    body: serde_json::from_slice(&body).unwrap_or(Value::Null),
                    at: Instant::now(),
                    closed: Arc::default(),
                };
                log.lock().unwrap().push(req.clone());
                match script(&req) {
                    Reply::Raw(bytes) => {
                        let _ = w.write_all(&bytes).await;
                        let _ = w.shutdown().await;
                    }
                    Reply::Hang => {
                        // Holds the connection until the client closes it (or the test ends).
                        let mut buf = [0; 256];
                        while let Ok(n) = r.read(&mut buf).await {
                            if n == 0 {
                                break;
                            }
                        }
                        *req.closed.lock().unwrap() = Some(Instant::now());
                    }
                }
            });
        }
    });
    (url, log)
}

/// A listener that accepts connections and never writes a byte: every request waits for its
/// headers for good. The URL of `/mcp`.
async fn silent() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = listener.accept().await {
            held.push(stream);
        }
    });
    url
}

fn init_result(id: &Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": {"protocolVersion": "2025-11-25",
        "capabilities": {"tools": {}}, "serverInfo": {"name": "hostile", "version": "1"}}})
}

fn discover_result(id: &Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": {"resultType": "complete",
        "supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "hostile", "version": "1"}}}})
}

/// A handshake-era server: a session per `initialize`, `GET` answered by `get`, the POST of
/// `notifications/initialized` by `initialized`, `tools/call` by `call`, everything else
/// answered as a well-behaved server does.
fn handshake_server(
    initialized: impl Fn() -> Reply + Send + Sync + 'static,
    get: impl Fn() -> Reply + Send + Sync + 'static,
    call: impl Fn(&Value) -> Reply + Send + Sync + 'static,
) -> Script {
    Arc::new(move |req| {
        let id = req.body["id"].clone();
        match (req.method.as_str(), req.rpc_method()) {
            ("GET", _) => get(),
            ("DELETE", _) => raw(200, &[], ""),
            ("POST", Some("initialize")) => {
                json_reply(&init_result(&id), &[("mcp-session-id", "s-1")])
            }
            ("POST", Some("notifications/initialized")) => initialized(),
            ("POST", Some("tools/call")) => call(&id),
            ("POST", Some("ping")) => {
                json_reply(&json!({"jsonrpc": "2.0", "id": id, "result": {}}), &[])
            }
            ("POST", _) if id.is_null() => raw(202, &[], ""),
            _ => raw(400, &[], ""),
        }
    })
}

/// A 2026-07-28 server: `server/discover` answered, `tools/call` by `call`.
fn modern_server(call: impl Fn(&Value) -> Reply + Send + Sync + 'static) -> Script {
    Arc::new(move |req| {
        let id = req.body["id"].clone();
        match req.rpc_method() {
            Some("server/discover") => json_reply(&discover_result(&id), &[]),
            Some("tools/call") => call(&id),
            _ if id.is_null() => raw(202, &[], ""),
            _ => json_reply(
                &json!({"jsonrpc": "2.0", "id": id, "result": {"resultType": "complete"}}),
                &[],
            ),
        }
    })
}

fn accepted() -> Reply {
    raw(202, &[], "")
}

fn no_get() -> Reply {
    raw(405, &[], "")
}

/// Quick reconnects, and a request timeout far above the bounds under test.
fn builder(url: &str, era: EraMode) -> ClientBuilder {
    ClientBuilder::http(url)
        .unwrap()
        .era(era)
        .request_timeout(Duration::from_secs(8))
        .connect_timeout(Duration::from_secs(8))
        .init_timeout(Duration::from_secs(8))
        .backoff(Duration::from_millis(20), Duration::from_millis(50), 0)
}

/// The `NoAnswer` inside a timed-out exchange's transport error.
fn no_answer(e: &TransportError) -> Option<&NoAnswer> {
    match e {
        TransportError::Io(io) if io.kind() == std::io::ErrorKind::TimedOut => {
            io.0.get_ref()?.downcast_ref::<NoAnswer>()
        }
        _ => None,
    }
}

/// Waits (at most 10 s) until the server saw `n` POSTs of `method`.
async fn wait_for_posts(log: &Log, method: &str, n: usize) -> Vec<Seen> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let seen: Vec<Seen> = log
            .lock()
            .unwrap()
            .iter()
            .filter(|r| r.rpc_method() == Some(method))
            .cloned()
            .collect();
        if seen.len() >= n || Instant::now() >= deadline {
            return seen;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn an_unanswered_initialized_is_cut_off_and_the_call_behind_it_goes_out() {
    let script = handshake_server(|| Reply::Hang, no_get, |_| Reply::Hang);
    let (url, log) = serve(script).await;
    let bound = Duration::from_millis(300);
    let client = builder(&url, EraMode::Legacy)
        .http_header_timeout(bound)
        .connect()
        .await
        .expect("connects: initialize is answered");
    let started = Instant::now();
    // Held back by the unanswered notification only until its bound: then it goes out.
    client.ping().await.expect("the ping is answered");
    let took = started.elapsed();
    assert!(took < Duration::from_secs(3), "answered after {took:?}");
    let seen = log.lock().unwrap().clone();
    let at = |method: &str| {
        seen.iter()
            .find(|r| r.rpc_method() == Some(method))
            .unwrap_or_else(|| panic!("no {method}: {seen:?}"))
            .at
    };
    // In order: the ping only after the notification was cut off.
    assert!(at("ping").duration_since(at("notifications/initialized")) >= bound);
    client.stop().await;
}

#[tokio::test]
async fn a_link_where_two_notifications_in_a_row_go_unanswered_fails_and_the_table_reconnects() {
    // Nothing after `initialize` is answered: the call goes out (after `initialized` was cut
    // off) and times out; its cancellation goes unanswered too: the link is stuck, it fails,
    // and the table connects again.
    let script: Script = Arc::new(|req| {
        let id = req.body["id"].clone();
        match (req.method.as_str(), req.rpc_method()) {
            ("GET", _) => raw(405, &[], ""),
            ("DELETE", _) => raw(200, &[], ""),
            ("POST", Some("initialize")) => {
                json_reply(&init_result(&id), &[("mcp-session-id", "s-1")])
            }
            _ => Reply::Hang,
        }
    });
    let (url, log) = serve(script).await;
    let bound = Duration::from_millis(300);
    let client = builder(&url, EraMode::Legacy)
        .http_header_timeout(bound)
        .request_timeout(Duration::from_millis(800))
        .connect()
        .await
        .expect("connects: initialize is answered");
    let error = client.ping().await.expect_err("never answered");
    // It was sent: a timeout is what happened to it.
    assert!(matches!(error, Error::Timeout { .. }), "{error:?}");
    assert!(
        log.lock()
            .unwrap()
            .iter()
            .any(|r| r.rpc_method() == Some("ping")),
        "the ping was never posted"
    );
    // The cancellation is the second unanswered notification in a row: the link fails and a
    // second session is initialized.
    let inits = wait_for_posts(&log, "initialize", 2).await;
    assert_eq!(inits.len(), 2, "no reconnect");
    client.stop().await;
}

#[tokio::test]
async fn a_server_that_never_sends_headers_fails_within_the_header_bound() {
    // The legacy transport's first exchange is the GET of its event stream, answered at once
    // by a working server: held to the header bound, not to the 20 s connect bound.
    let url = silent().await;
    let started = Instant::now();
    let error = ClientBuilder::sse(&url)
        .unwrap()
        .http_header_timeout(Duration::from_millis(300))
        .connect_timeout(Duration::from_secs(20))
        .connect()
        .await
        .expect_err("nothing is answered");
    let took = started.elapsed();
    let Error::Connect(e) = &error else {
        panic!("{error:?}")
    };
    let Failure::Transport(cause) = &e.cause else {
        panic!("{e:?}")
    };
    let stuck = no_answer(cause).unwrap_or_else(|| panic!("no NoAnswer in {cause:?}"));
    assert_eq!(stuck.exchange, "GET of the SSE stream");
    assert!(took < Duration::from_secs(3), "failed after {took:?}");
}

#[tokio::test]
async fn the_default_header_bound_follows_the_request_timeout() {
    // No header bound given: half the request timeout (here 600 ms) holds an unanswered
    // notification back, so the call behind it still goes out in time.
    let script = handshake_server(|| Reply::Hang, no_get, |_| Reply::Hang);
    let (url, log) = serve(script).await;
    let client = ClientBuilder::http(&url)
        .unwrap()
        .era(EraMode::Legacy)
        .request_timeout(Duration::from_millis(1200))
        .connect()
        .await
        .unwrap();
    client.ping().await.expect("answered");
    let seen = log.lock().unwrap().clone();
    let at = |method: &str| {
        seen.iter()
            .find(|r| r.rpc_method() == Some(method))
            .unwrap_or_else(|| panic!("no {method}: {seen:?}"))
            .at
    };
    let gap = at("ping").duration_since(at("notifications/initialized"));
    assert!(
        gap >= Duration::from_millis(600) && gap < Duration::from_millis(1100),
        "{gap:?}"
    );
    client.stop().await;
}

#[tokio::test]
async fn a_get_stream_never_answered_does_not_hold_the_first_request_back() {
    let script = handshake_server(accepted, || Reply::Hang, |_| Reply::Hang);
    let (url, log) = serve(script).await;
    let client = builder(&url, EraMode::Legacy).connect().await.unwrap();
    client.ping().await.expect("the ping is answered");
    let seen = log.lock().unwrap().clone();
    let at = |method: &str| {
        seen.iter()
            .find(|r| r.rpc_method() == Some(method))
            .unwrap_or_else(|| panic!("no {method}: {seen:?}"))
            .at
    };
    let gap = at("ping").duration_since(at("notifications/initialized"));
    // It waited for the GET's answer at most twice as long as `initialized` took (50 ms on
    // loopback), not 2 s.
    assert!(gap < Duration::from_millis(500), "the ping waited {gap:?}");
    assert!(seen.iter().any(|r| r.method == "GET"), "no GET: {seen:?}");
    client.stop().await;
}

/// A loopback address whose listen backlog is full: a connect to it gets no answer (its SYN
/// is dropped), as with a black-hole address. The listener and the connections filling it
/// must live as long as the address is used.
async fn black_hole() -> (String, TcpListener, Vec<tokio::net::TcpStream>) {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let addr = socket.local_addr().unwrap();
    let listener = socket.listen(0).unwrap();
    // Fill the backlog (it holds one connection with a backlog of 0): the connect after the
    // last one that completes gets no answer.
    let mut filling = Vec::new();
    for _ in 0..4 {
        let connect = tokio::net::TcpStream::connect(addr);
        match tokio::time::timeout(Duration::from_millis(200), connect).await {
            Ok(Ok(stream)) => filling.push(stream),
            _ => break,
        }
    }
    (format!("http://{addr}/mcp"), listener, filling)
}

#[tokio::test]
async fn a_black_hole_connect_fails_within_the_connect_bound() {
    let (url, _listener, _filling) = black_hole().await;
    let started = Instant::now();
    let error = ClientBuilder::http(&url)
        .unwrap()
        .era(EraMode::Legacy)
        .http_connect_timeout(Duration::from_millis(300))
        .connect_timeout(Duration::from_secs(20))
        .connect()
        .await
        .expect_err("nothing answers");
    let took = started.elapsed();
    let Error::Connect(e) = &error else {
        panic!("{error:?}")
    };
    let Failure::Transport(TransportError::Connect(io)) = &e.cause else {
        panic!("expected a connect failure: {e:?}");
    };
    assert_eq!(io.kind(), std::io::ErrorKind::TimedOut, "{io}");
    assert!(
        io.to_string().contains("could not connect within 300 ms"),
        "{io}"
    );
    assert!(took < Duration::from_secs(3), "failed after {took:?}");
}

/// How a `tools/call` POST is answered, given the request's id.
type CallReply = Arc<dyn Fn(&Value) -> Reply + Send + Sync>;

/// The answers to a request's POST that hold no response to it.
fn no_responses() -> Vec<(&'static str, CallReply)> {
    vec![
        (
            "an empty 200",
            Arc::new(|_: &Value| raw(200, &[("content-type", "application/json")], "")),
        ),
        ("an empty 202", Arc::new(|_: &Value| raw(202, &[], ""))),
        (
            "an SSE stream served as application/json",
            Arc::new(|id: &Value| {
                let answer = json!({"jsonrpc": "2.0", "id": id, "result": {"content": []}});
                raw(
                    200,
                    &[("content-type", "application/json")],
                    &format!("event: message\ndata: {answer}\n\n"),
                )
            }),
        ),
        (
            "JSON answering another id",
            Arc::new(|_: &Value| {
                json_reply(&json!({"jsonrpc": "2.0", "id": 987_654, "result": {}}), &[])
            }),
        ),
    ]
}

/// A call to a server of `era` whose `tools/call` is answered `call` fails at once with the
/// made-up error naming the POST.
async fn fails_at_once(era: EraMode, what: &str, call: CallReply) {
    let reply = move |id: &Value| call(id);
    let script = match era {
        EraMode::Modern => modern_server(reply),
        _ => handshake_server(accepted, no_get, reply),
    };
    let (url, _log) = serve(script).await;
    let client = builder(&url, era).connect().await.unwrap();
    let started = Instant::now();
    let error = client
        .call_tool("t", json!({}))
        .await
        .expect_err("no response");
    let took = started.elapsed();
    match &error {
        Error::Server {
            code,
            message,
            data,
        } => {
            assert_eq!(*code, HTTP_REFUSED, "{era:?}, {what}: {error:?}");
            assert!(
                message.starts_with("the server answered the POST of tools/call with HTTP 20")
                    && message.ends_with("and no response"),
                "{era:?}, {what}: {message}"
            );
            assert!(data.as_ref().is_some_and(|d| d["httpStatus"].is_u64()));
        }
        other => panic!("{era:?}, {what}: {other:?}"),
    }
    assert!(
        took < Duration::from_secs(2),
        "{era:?}, {what}: after {took:?}"
    );
    // The connection is still up: the next call gets the same answer at once.
    assert!(client.call_tool("t", json!({})).await.is_err());
    client.stop().await;
}

#[tokio::test]
async fn a_2xx_without_a_response_fails_the_call_at_once_in_the_handshake_era() {
    for (what, call) in no_responses() {
        fails_at_once(EraMode::Legacy, what, call).await;
    }
}

#[tokio::test]
async fn a_2xx_without_a_response_fails_the_call_at_once_in_the_modern_era() {
    for (what, call) in no_responses() {
        fails_at_once(EraMode::Modern, what, call).await;
    }
}

#[tokio::test]
async fn an_oversized_response_header_says_hypers_cause() {
    let big = "a".repeat(512 * 1024);
    let script: Script = Arc::new(move |_| raw(200, &[("x-big", big.as_str())], ""));
    let (url, _log) = serve(script).await;
    let error = ClientBuilder::http(&url)
        .unwrap()
        .era(EraMode::Legacy)
        .connect_timeout(Duration::from_secs(8))
        .connect()
        .await
        .expect_err("the answer is refused");
    let Error::Connect(e) = &error else {
        panic!("{error:?}")
    };
    let shown = e.cause.to_string();
    // hyper's words for it, not just reqwest's "error sending request".
    assert!(
        shown.contains("error sending request") && shown.contains("message head is too large"),
        "{shown}"
    );
    assert!(!shown.contains("127.0.0.1"), "the URL is left out: {shown}");
}

#[tokio::test]
async fn a_cancelled_call_whose_post_is_never_answered_leaves_no_connection_behind() {
    // Each call the server never answers times out and is cancelled; its POST (a connection
    // and a task of the link) ends with the cancellation instead of living as long as the link.
    let script = handshake_server(accepted, no_get, |_| Reply::Hang);
    let (url, log) = serve(script).await;
    let client = builder(&url, EraMode::Legacy)
        .request_timeout(Duration::from_millis(300))
        .connect()
        .await
        .unwrap();
    for _ in 0..3 {
        let e = client
            .call_tool("t", json!({}))
            .await
            .expect_err("never answered");
        assert!(matches!(e, Error::Timeout { .. }), "{e:?}");
    }
    wait_for_posts(&log, "notifications/cancelled", 3).await;
    let deadline = Instant::now() + Duration::from_secs(5);
    let open = || {
        log.lock()
            .unwrap()
            .iter()
            .filter(|r| r.rpc_method() == Some("tools/call"))
            .filter(|r| r.closed.lock().unwrap().is_none())
            .count()
    };
    while open() > 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(open(), 0, "POSTs of cancelled calls still open");
    client.stop().await;
}
