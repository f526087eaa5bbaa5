//! `subscriptions/listen` (2026-07-28) on the built binaries, over raw JSON-RPC: stdio lines and
//! plain HTTP `POST`s. The acknowledgement comes first, then the changes made by tools (on other
//! requests, over HTTP) tagged with the listen's id; the honored filter; every way a listen ends;
//! `--listen off`, bad parameters, keep-alive comments.

mod common;

use std::process::Stdio;
use std::time::Duration;

use common::{Peer, text};
use mcp_testserver::{SUBSCRIPTION_ID, ServerConfig};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

const ECHO: &str = env!("CARGO_BIN_EXE_mcp-echo-server");
const MODERN: &str = "2026-07-28";
const LISTEN: &str = "subscriptions/listen";
const ACK: &str = "notifications/subscriptions/acknowledged";
/// How long a test waits for something that must come.
const WAIT: Duration = Duration::from_secs(5);
/// How long a test waits to be sure that something does not come.
const QUIET: Duration = Duration::from_millis(300);

type StdioPeer = Peer<ChildStdout, ChildStdin>;

fn spawn(args: &[&str]) -> (StdioPeer, Child) {
    let mut child = Command::new(ECHO)
        .args(["--era", "modern"])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    (Peer::new(stdout, stdin), child)
}

/// `params` with the modern `_meta`.
fn modern(mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "listen-test", "version": "0"},
    });
    params
}

/// A listen request asking for `filter`, with this id.
fn listen(id: Value, filter: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": LISTEN,
        "params": modern(json!({"notifications": filter}))})
}

/// The listen id a message is tagged with, if any.
fn tag(msg: &Value) -> Option<&Value> {
    msg.get("params")?.get("_meta")?.get(SUBSCRIPTION_ID)
}

fn is_tagged(msg: &Value, id: &Value) -> bool {
    tag(msg) == Some(id)
}

/// Whether `msg` is the response to `id`.
fn answers(msg: &Value, id: &Value) -> bool {
    msg.get("method").is_none() && msg.get("id") == Some(id)
}

async fn call(p: &mut StdioPeer, tool: &str, args: Value) -> Value {
    p.result(
        "tools/call",
        modern(json!({"name": tool, "arguments": args})),
    )
    .await
}

/// `session_info`'s `listens` (`{open, received}`).
async fn listens(p: &mut StdioPeer) -> Value {
    call(p, "session_info", json!({})).await["structuredContent"]["listens"].clone()
}

/// Sends a listen and returns its acknowledgement, checking that it is the first message
/// tagged with `id` (messages seen meanwhile stay in `p.seen`).
async fn open(p: &mut StdioPeer, id: Value, filter: Value) -> Value {
    p.send(listen(id.clone(), filter)).await;
    loop {
        let msg = p.recv().await;
        assert!(!answers(&msg, &id), "the listen was answered: {msg}");
        if is_tagged(&msg, &id) {
            assert_eq!(msg["method"], ACK, "first tagged message: {msg}");
            return msg;
        }
        p.seen.push(msg);
    }
}

/// Every message tagged with (or answering) `id`, from `p.seen` and then from the wire, until
/// `done` holds for the last one (panics after [`WAIT`]); the others stay in `p.seen`.
async fn until(p: &mut StdioPeer, id: &Value, done: impl Fn(&Value) -> bool) -> Vec<Value> {
    let mut got = Vec::new();
    let seen = std::mem::take(&mut p.seen);
    for msg in seen {
        if is_tagged(&msg, id) || answers(&msg, id) {
            got.push(msg);
        } else {
            p.seen.push(msg);
        }
    }
    let deadline = tokio::time::Instant::now() + WAIT;
    while !got.last().is_some_and(&done) {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        let msg = p
            .recv_within(left)
            .await
            .unwrap_or_else(|| panic!("nothing more for {id}; got {got:?}"));
        if is_tagged(&msg, id) || answers(&msg, id) {
            got.push(msg);
        } else {
            p.seen.push(msg);
        }
    }
    got
}

/// Every message arriving within [`QUIET`] (and those already seen).
async fn drain(p: &mut StdioPeer) -> Vec<Value> {
    let mut got = std::mem::take(&mut p.seen);
    while let Some(msg) = p.recv_within(QUIET).await {
        got.push(msg);
    }
    got
}

fn method_is(m: &'static str) -> impl Fn(&Value) -> bool {
    move |msg| msg["method"] == m
}

#[tokio::test]
async fn stdio_acknowledges_first_then_delivers_tagged_changes() {
    let (mut p, _child) = spawn(&[]);
    let caps = p.result("server/discover", modern(json!({}))).await["capabilities"].clone();
    assert_eq!(caps["tools"]["listChanged"], true);
    assert_eq!(caps["prompts"]["listChanged"], true);
    assert_eq!(caps["resources"]["listChanged"], true);
    assert_eq!(caps["resources"]["subscribe"], true);

    let id = json!(7);
    let ack = open(
        &mut p,
        id.clone(),
        json!({"toolsListChanged": true, "promptsListChanged": false,
               "resourceSubscriptions": ["test://static/1", "test://nope", "test://dynamic/x"]}),
    )
    .await;
    assert_eq!(
        ack["params"],
        json!({"_meta": {SUBSCRIPTION_ID: 7}, "notifications": {
            "toolsListChanged": true,
            "resourceSubscriptions": ["test://dynamic/x", "test://static/1"]}})
    );
    let info = listens(&mut p).await;
    assert_eq!(info["received"], 1);
    assert_eq!(info["open"][0]["id"], 7);
    assert_eq!(
        info["open"][0]["notifications"],
        ack["params"]["notifications"]
    );
    assert_eq!(
        info["open"][0]["asked"]["resourceSubscriptions"]
            .as_array()
            .map(Vec::len),
        Some(3)
    );

    // Not asked, or not honored: nothing tagged. Then asked: tagged, in order.
    call(&mut p, "notify_changed", json!({"list": "prompts"})).await;
    call(&mut p, "notify_changed", json!({"list": "resources"})).await;
    call(&mut p, "touch", json!({"uri": "test://static/2"})).await;
    call(&mut p, "touch", json!({"uri": "test://nope"})).await;
    call(&mut p, "touch", json!({"uri": "test://static/1"})).await;
    call(&mut p, "notify_changed", json!({})).await;
    call(&mut p, "test_trigger_tool_change", json!({})).await;
    let got = until(&mut p, &id, |m| {
        m["method"] == "notifications/tools/list_changed"
    })
    .await;
    assert_eq!(
        got,
        [
            json!({"jsonrpc": "2.0", "method": "notifications/resources/updated",
            "params": {"_meta": {SUBSCRIPTION_ID: 7}, "uri": "test://static/1"}}),
            json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed",
            "params": {"_meta": {SUBSCRIPTION_ID: 7}}})
        ]
    );
    let got = until(&mut p, &id, method_is("notifications/tools/list_changed")).await;
    assert_eq!(got.len(), 1, "test_trigger_tool_change: {got:?}");
    // --modern-unsolicited is on by default: the untagged notifications of before stay.
    let rest = drain(&mut p).await;
    assert!(rest.iter().all(|m| tag(m).is_none()), "{rest:?}");
    assert!(
        rest.iter()
            .any(|m| m["method"] == "notifications/prompts/list_changed"),
        "{rest:?}"
    );
}

#[tokio::test]
async fn stdio_honor_exclusions_narrow_the_acknowledgement() {
    let (mut p, _child) = spawn(&[
        "--listen-honor=-tools,-test://static/2",
        "--listen-honor",
        "-resources",
        "--modern-unsolicited",
        "off",
    ]);
    let id = json!("l-1");
    let ack = open(
        &mut p,
        id.clone(),
        json!({"toolsListChanged": true, "promptsListChanged": true,
               "resourcesListChanged": true,
               "resourceSubscriptions": ["test://static/2", "test://static/3"]}),
    )
    .await;
    assert_eq!(
        ack["params"]["notifications"],
        json!({"promptsListChanged": true, "resourceSubscriptions": ["test://static/3"]})
    );
    call(&mut p, "notify_changed", json!({"list": "tools"})).await;
    call(&mut p, "notify_changed", json!({"list": "resources"})).await;
    call(&mut p, "touch", json!({"uri": "test://static/2"})).await;
    call(&mut p, "notify_changed", json!({"list": "prompts"})).await;
    call(&mut p, "touch", json!({"uri": "test://static/3"})).await;
    let got = until(&mut p, &id, method_is("notifications/resources/updated")).await;
    let methods: Vec<&str> = got.iter().filter_map(|m| m["method"].as_str()).collect();
    assert_eq!(
        methods,
        [
            "notifications/prompts/list_changed",
            "notifications/resources/updated"
        ]
    );
    assert_eq!(got[1]["params"]["uri"], "test://static/3");
    // --modern-unsolicited off: nothing untagged either.
    let rest = drain(&mut p).await;
    assert!(rest.is_empty(), "{rest:?}");
    let r = p
        .request(
            "resources/subscribe",
            modern(json!({"uri": "test://static/3"})),
        )
        .await;
    assert_eq!(r["error"]["code"], -32601);
}

#[tokio::test]
async fn stdio_cancel_ends_the_listen_without_a_response() {
    let (mut p, _child) = spawn(&["--modern-unsolicited", "off"]);
    let gone = json!(5);
    open(&mut p, gone.clone(), json!({"toolsListChanged": true})).await;
    assert_eq!(listens(&mut p).await["open"][0]["id"], 5);
    p.send(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 5, "reason": "done"}}),
    )
    .await;
    let info = listens(&mut p).await;
    assert_eq!(info["open"], json!([]), "{info}");
    assert_eq!(info["received"], 1);
    // A second listen hears the change; the cancelled one neither hears it nor is answered.
    let kept = json!(6);
    open(&mut p, kept.clone(), json!({"toolsListChanged": true})).await;
    call(&mut p, "notify_changed", json!({})).await;
    until(&mut p, &kept, method_is("notifications/tools/list_changed")).await;
    let rest = drain(&mut p).await;
    assert!(
        rest.iter()
            .all(|m| !is_tagged(m, &gone) && !answers(m, &gone)),
        "{rest:?}"
    );
    assert_eq!(
        listens(&mut p).await["open"].as_array().map(Vec::len),
        Some(1)
    );
}

#[tokio::test]
async fn stdio_end_listens_completes_every_listen() {
    let (mut p, _child) = spawn(&[]);
    let ids = [json!(3), json!("three")];
    for id in &ids {
        open(&mut p, id.clone(), json!({"promptsListChanged": true})).await;
    }
    assert_eq!(
        listens(&mut p).await["open"].as_array().map(Vec::len),
        Some(2)
    );
    let r = call(&mut p, "end_listens", json!({})).await;
    assert_eq!(text(&r), "ending 2 open listen(s) (complete)");
    for id in &ids {
        let got = until(&mut p, id, |m| answers(m, id)).await;
        assert_eq!(
            got,
            [json!({"jsonrpc": "2.0", "id": id, "result": {
                "resultType": "complete", "_meta": {SUBSCRIPTION_ID: id}}})]
        );
    }
    assert_eq!(listens(&mut p).await["open"], json!([]));
    // Ended: a later change reaches nobody.
    call(&mut p, "notify_changed", json!({"list": "prompts"})).await;
    let rest = drain(&mut p).await;
    assert!(rest.iter().all(|m| tag(m).is_none()), "{rest:?}");
}

#[tokio::test]
async fn stdio_end_listens_with_cancel_and_break() {
    let (mut p, _child) = spawn(&["--listen-end", "cancel"]);
    let id = json!(11);
    open(&mut p, id.clone(), json!({"toolsListChanged": true})).await;
    let r = call(&mut p, "end_listens", json!({})).await;
    assert_eq!(text(&r), "ending 1 open listen(s) (cancel)");
    let mut pending = std::mem::take(&mut p.seen).into_iter();
    let cancel = loop {
        let m = match pending.next() {
            Some(m) => m,
            None => p.recv().await,
        };
        assert!(!answers(&m, &id), "answered: {m}");
        if m["method"] == "notifications/cancelled" {
            break m;
        }
    };
    p.seen.extend(pending);
    assert_eq!(
        cancel["params"],
        json!({"requestId": 11, "reason": "end_listens (--listen-end cancel)"})
    );
    let rest = drain(&mut p).await;
    assert!(rest.iter().all(|m| !answers(m, &id)), "{rest:?}");
    assert_eq!(listens(&mut p).await["open"], json!([]));

    // break_listens: forgotten without any message.
    let id = json!(12);
    open(&mut p, id.clone(), json!({"toolsListChanged": true})).await;
    let r = call(&mut p, "break_listens", json!({})).await;
    assert_eq!(text(&r), "ending 1 open listen(s) (without a response)");
    let rest = drain(&mut p).await;
    assert!(
        rest.iter().all(|m| !answers(m, &id)
            && !is_tagged(m, &id)
            && m["method"] != "notifications/cancelled"),
        "{rest:?}"
    );
    assert_eq!(listens(&mut p).await["open"], json!([]));
}

#[tokio::test]
async fn stdio_listen_off_and_bad_params() {
    let (mut p, _child) = spawn(&["--listen", "off"]);
    let caps = p.result("server/discover", modern(json!({}))).await["capabilities"].clone();
    assert_eq!(caps["tools"], json!({}));
    assert_eq!(caps["prompts"], json!({}));
    assert_eq!(caps["resources"], json!({}));
    p.send(listen(json!(1), json!({"toolsListChanged": true})))
        .await;
    let r = p.response(&json!(1)).await;
    assert_eq!(r["error"]["code"], -32601, "{r}");
    assert_eq!(listens(&mut p).await["received"], 1);

    let (mut p, _child) = spawn(&[]);
    let bad = [
        modern(json!({})),
        modern(json!({"notifications": true})),
        modern(json!({"notifications": {"toolsListChanged": "yes"}})),
        modern(json!({"notifications": {"resourceSubscriptions": "test://static/1"}})),
        modern(json!({"notifications": {"resourceSubscriptions": [1]}})),
    ];
    for params in bad {
        let r = p.request(LISTEN, params.clone()).await;
        assert_eq!(r["error"]["code"], -32602, "{params}: {r}");
    }
    // Not even the acknowledgement was sent for them.
    assert!(p.seen.iter().all(|m| m["method"] != ACK), "{:?}", p.seen);
    let info = listens(&mut p).await;
    assert_eq!(
        (info["received"].clone(), info["open"].clone()),
        (json!(5), json!([]))
    );
    // Nothing asked is valid: an empty acknowledgement.
    let ack = open(&mut p, json!(9), json!({})).await;
    assert_eq!(ack["params"]["notifications"], json!({}));
}

#[tokio::test]
async fn eof_ends_the_open_listens_at_once() {
    // A long grace: if the listen kept the connection, `serve` would take 30 s to return.
    let config = ServerConfig {
        era: mcp_testserver::Era::Modern,
        eof_grace: Duration::from_secs(30),
        ..ServerConfig::echo()
    };
    let (ours, theirs) = tokio::io::duplex(1 << 16);
    let (sr, sw) = tokio::io::split(theirs);
    let server = tokio::spawn(mcp_testserver::serve(sr, sw, config));
    let (r, w) = tokio::io::split(ours);
    let mut p = Peer::new(r, w);
    p.send(listen(json!(1), json!({"toolsListChanged": true})))
        .await;
    assert_eq!(p.recv().await["method"], ACK);
    p.close().await;
    let ended = tokio::time::timeout(WAIT, server)
        .await
        .expect("serve returned at once")
        .unwrap();
    assert_eq!(ended, mcp_testserver::Ended::Eof);
    assert_eq!(p.recv_raw().await, None, "no response to the listen");
}

// ---- HTTP ----

/// Spawns the binary over HTTP (modern) with `args`; the endpoint URL.
async fn spawn_http(args: &[&str]) -> (String, Child) {
    let mut child = Command::new(ECHO)
        .args(["--era", "modern", "--http", "127.0.0.1:0"])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let url = tokio::time::timeout(WAIT, lines.next_line())
        .await
        .expect("no URL in time")
        .unwrap()
        .expect("no URL");
    (url, child)
}

/// A modern `POST` of `body` with the headers it needs.
async fn post(http: &reqwest::Client, url: &str, body: &Value) -> reqwest::Response {
    let method = body["method"].as_str().unwrap();
    let mut req = http
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("mcp-protocol-version", MODERN)
        .header("mcp-method", method);
    if let Some(name) = body["params"]["name"].as_str() {
        req = req.header("mcp-name", name);
    }
    req.body(body.to_string())
        .timeout(Duration::from_secs(30))
        .send()
        .await
        .expect("POST")
}

/// Calls a tool in a `POST` of its own; its result (the server answers JSON or SSE).
async fn http_call(http: &reqwest::Client, url: &str, tool: &str, args: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": "call", "method": "tools/call",
        "params": modern(json!({"name": tool, "arguments": args}))});
    let r = post(http, url, &body).await;
    assert_eq!(r.status(), 200);
    let text = r.text().await.unwrap();
    let answer = match serde_json::from_str::<Value>(&text) {
        Ok(v) => v,
        Err(_) => text
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
            .find(|v| v["id"] == "call")
            .expect("an answer event"),
    };
    answer["result"].clone()
}

async fn http_listens(http: &reqwest::Client, url: &str) -> Value {
    http_call(http, url, "session_info", json!({})).await["structuredContent"]["listens"].clone()
}

/// One item of an SSE stream.
#[derive(Debug, Clone, PartialEq)]
enum Sse {
    /// A comment line (without its colon).
    Comment(String),
    /// An event's data, parsed.
    Event(Value),
}

/// Reads an SSE response item by item.
struct Stream {
    response: reqwest::Response,
    buf: String,
}

/// How a read of a [`Stream`] ended, when no item came.
#[derive(Debug, PartialEq)]
enum End {
    /// The body ended cleanly.
    Clean,
    /// The body failed (the connection was cut).
    Cut,
    /// Nothing within the time given.
    Timeout,
}

impl Stream {
    fn new(response: reqwest::Response) -> Self {
        assert_eq!(response.status(), 200);
        let ct = response.headers()["content-type"].to_str().unwrap();
        assert!(ct.starts_with("text/event-stream"), "{ct}");
        Stream {
            response,
            buf: String::new(),
        }
    }

    /// The next item within `t`.
    async fn next(&mut self, t: Duration) -> Result<Sse, End> {
        let deadline = tokio::time::Instant::now() + t;
        loop {
            if let Some(at) = self.buf.find("\n\n") {
                let block: String = self.buf.drain(..at + 2).collect();
                let block = block.trim_end();
                if let Some(c) = block.strip_prefix(':') {
                    return Ok(Sse::Comment(c.trim().to_owned()));
                }
                let data: String = block
                    .lines()
                    .filter_map(|l| l.strip_prefix("data:"))
                    .map(str::trim)
                    .collect();
                return Ok(Sse::Event(serde_json::from_str(&data).unwrap()));
            }
            match tokio::time::timeout_at(deadline, self.response.chunk()).await {
                Err(_) => return Err(End::Timeout),
                Ok(Err(_)) => return Err(End::Cut),
                Ok(Ok(None)) => return Err(End::Clean),
                Ok(Ok(Some(c))) => self.buf.push_str(&String::from_utf8_lossy(&c)),
            }
        }
    }

    /// The next event (comments skipped) within [`WAIT`].
    async fn event(&mut self) -> Value {
        loop {
            match self.next(WAIT).await {
                Ok(Sse::Event(v)) => return v,
                Ok(Sse::Comment(_)) => {}
                Err(e) => panic!("no event: {e:?}"),
            }
        }
    }

    /// How the stream ends (events and comments skipped, collected), within [`WAIT`].
    async fn end(&mut self) -> (End, Vec<Value>) {
        let mut events = Vec::new();
        loop {
            match self.next(WAIT).await {
                Ok(Sse::Event(v)) => events.push(v),
                Ok(Sse::Comment(_)) => {}
                Err(e) => return (e, events),
            }
        }
    }
}

/// Opens a listen over HTTP; its stream, after checking that its first event is the
/// acknowledgement (returned too).
async fn http_open(http: &reqwest::Client, url: &str, id: Value, filter: Value) -> (Stream, Value) {
    let mut s = Stream::new(post(http, url, &listen(id.clone(), filter)).await);
    let ack = s.event().await;
    assert_eq!(ack["method"], ACK, "{ack}");
    assert_eq!(tag(&ack), Some(&id));
    (s, ack)
}

#[tokio::test]
async fn http_listen_hears_tools_called_on_other_posts_even_in_json_mode() {
    let (url, _child) = spawn_http(&["--json", "--modern-unsolicited", "off"]).await;
    let http = reqwest::Client::new();
    let id = json!(21);
    let (mut s, ack) = http_open(
        &http,
        &url,
        id.clone(),
        json!({"toolsListChanged": true,
               "resourceSubscriptions": ["test://static/1", "test://nope"]}),
    )
    .await;
    assert_eq!(
        ack["params"]["notifications"],
        json!({"toolsListChanged": true, "resourceSubscriptions": ["test://static/1"]})
    );
    let info = http_listens(&http, &url).await;
    assert_eq!(info["open"][0]["id"], 21, "{info}");
    assert_eq!(info["received"], 1);

    let r = http_call(&http, &url, "touch", json!({"uri": "test://nope"})).await;
    assert!(text(&r).contains("published to 1 open listen"), "{r}");
    http_call(&http, &url, "notify_changed", json!({"list": "prompts"})).await;
    http_call(&http, &url, "touch", json!({"uri": "test://static/1"})).await;
    http_call(&http, &url, "test_trigger_tool_change", json!({})).await;
    assert_eq!(
        s.event().await,
        json!({"jsonrpc": "2.0", "method": "notifications/resources/updated",
            "params": {"_meta": {SUBSCRIPTION_ID: 21}, "uri": "test://static/1"}})
    );
    assert_eq!(
        s.event().await,
        json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed",
            "params": {"_meta": {SUBSCRIPTION_ID: 21}}})
    );

    let r = http_call(&http, &url, "end_listens", json!({})).await;
    assert_eq!(text(&r), "ending 1 open listen(s) (complete)");
    let (end, events) = s.end().await;
    assert_eq!(
        events,
        [json!({"jsonrpc": "2.0", "id": 21, "result": {
            "resultType": "complete", "_meta": {SUBSCRIPTION_ID: 21}}})]
    );
    assert_eq!(end, End::Clean);
    assert_eq!(http_listens(&http, &url).await["open"], json!([]));
}

#[tokio::test]
async fn http_listen_gets_keepalive_comments() {
    let (url, _child) = spawn_http(&["--sse-keepalive-ms", "50"]).await;
    let http = reqwest::Client::new();
    let (mut s, _) = http_open(&http, &url, json!(1), json!({"toolsListChanged": true})).await;
    let mut comments = 0;
    while comments < 3 {
        match s.next(WAIT).await {
            Ok(Sse::Comment(c)) => {
                assert_eq!(c, "keep-alive");
                comments += 1;
            }
            other => panic!("a keep-alive comment, not {other:?}"),
        }
    }
    // Still a live listen after them.
    http_call(&http, &url, "notify_changed", json!({})).await;
    assert_eq!(
        s.event().await["method"],
        "notifications/tools/list_changed"
    );

    // Without the flag (15 s), none within a short while.
    let (url, _child) = spawn_http(&[]).await;
    let (mut s, _) = http_open(&http, &url, json!(1), json!({"toolsListChanged": true})).await;
    assert_eq!(s.next(QUIET).await, Err(End::Timeout));
}

#[tokio::test]
async fn http_break_listens_cuts_the_stream_without_a_response() {
    let (url, _child) = spawn_http(&["--sse-keepalive-ms", "0"]).await;
    let http = reqwest::Client::new();
    let (mut s, _) = http_open(&http, &url, json!("b"), json!({"toolsListChanged": true})).await;
    let r = http_call(&http, &url, "break_listens", json!({})).await;
    assert_eq!(text(&r), "ending 1 open listen(s) (without a response)");
    let (end, events) = s.end().await;
    assert!(events.is_empty(), "{events:?}");
    assert_eq!(end, End::Cut);
    assert_eq!(http_listens(&http, &url).await["open"], json!([]));
}

#[tokio::test]
async fn http_listen_end_cancel_sends_cancelled_then_ends_the_stream() {
    let (url, _child) = spawn_http(&["--listen-end", "cancel"]).await;
    let http = reqwest::Client::new();
    let (mut s, _) = http_open(&http, &url, json!(4), json!({"toolsListChanged": true})).await;
    http_call(&http, &url, "end_listens", json!({})).await;
    let (end, events) = s.end().await;
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["method"], "notifications/cancelled");
    assert_eq!(events[0]["params"]["requestId"], 4);
    assert_eq!(end, End::Clean);
}

#[tokio::test]
async fn http_closing_the_stream_ends_the_listen() {
    // No keep-alive: the server notices the closed connection by itself.
    let (url, _child) = spawn_http(&["--sse-keepalive-ms", "0"]).await;
    let http = reqwest::Client::new();
    let (s, _) = http_open(&http, &url, json!(8), json!({"toolsListChanged": true})).await;
    assert_eq!(http_listens(&http, &url).await["open"][0]["id"], 8);
    drop(s);
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let open = http_listens(&http, &url).await["open"].clone();
        if open == json!([]) {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "still open: {open}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn http_listen_off_and_bad_params_are_json_errors() {
    let (url, _child) = spawn_http(&["--listen", "off"]).await;
    let http = reqwest::Client::new();
    let r = post(
        &http,
        &url,
        &listen(json!(1), json!({"toolsListChanged": true})),
    )
    .await;
    assert_eq!(r.status(), 404);
    let v: Value = serde_json::from_slice(&r.bytes().await.unwrap()).unwrap();
    assert_eq!(
        (v["id"].clone(), v["error"]["code"].clone()),
        (json!(1), json!(-32601))
    );
    let discover = json!({"jsonrpc": "2.0", "id": 2, "method": "server/discover",
        "params": modern(json!({}))});
    let body = post(&http, &url, &discover).await.text().await.unwrap();
    assert!(
        !body.contains("listChanged") && !body.contains("subscribe"),
        "{body}"
    );

    let (url, _child) = spawn_http(&[]).await;
    let bad = json!({"jsonrpc": "2.0", "id": 3, "method": LISTEN,
        "params": modern(json!({"notifications": {"promptsListChanged": 1}}))});
    let r = post(&http, &url, &bad).await;
    assert_eq!(r.status(), 400);
    let v: Value = serde_json::from_slice(&r.bytes().await.unwrap()).unwrap();
    assert_eq!(v["error"]["code"], -32602);
    let info = http_listens(&http, &url).await;
    assert_eq!(
        (info["received"].clone(), info["open"].clone()),
        (json!(1), json!([]))
    );
}
