//! The two eras of MCP end to end: the client in `EraMode::Auto`, `Legacy` and `Modern` against
//! the in-repo server pretending to be each kind of server (`--era legacy|modern|dual`, the
//! legacy server's `--probe` reactions to `server/discover`, `--modern-versions`,
//! `--omit-result-type`), over stdio and over HTTP.
//!
//! Checked: the era and protocol version found, the states the connection went through
//! (`probing` before the verdict, never `initializing` for a modern server), calls working in
//! either era, the fallback to the handshake on the same process (error, garbage, silence) or
//! on a respawned one (a server that dies of the probe), the typed connect errors of a forced
//! era, the legacy verdict kept across a reconnect (and decided again when a restarted server
//! refuses `initialize` as a modern one, or a tentative one fails), a modern verdict confirmed
//! by probing again, `resultType` handling, progress and timeouts of modern calls, what modern
//! requests say about the client; and, against scripted servers (stdio and HTTP), the version
//! retry of the probe, the shapes of DiscoverResult, a late probe answer, and a modern
//! server's requests left unanswered.
//!
//! One test binary, its modules by topic: `auto`, `forced`, `verdict`, `mrtr`, `discover`, `http`.

#[path = "../scripted_http/mod.rs"]
mod scripted_http;

mod auto;
mod discover;
mod forced;
mod http;
mod mrtr;
mod verdict;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_runtime::{
    Client, ClientBuilder, ConnState, ConnectError, ElicitResult, Era, EraMode, Error, Failure,
    Handlers, RequestOptions, Root, Roots, RpcError, Transitions,
};
use mcp_tests::probe::pids_in;
use mcp_tests::{eventually, over_http, over_stdio, pid_gone};
use serde_json::{Value, json};
use tokio::process::Child;

const ECHO: &str = env!("CARGO_BIN_EXE_test-echo-server");

const CHAOS: &str = env!("CARGO_BIN_EXE_test-chaos-server");

const MODERN: &str = "2026-07-28";

const WAIT: Duration = mcp_tests::ERA_WAIT;

/// The states of a first connection that probed, then fell back to the handshake.
const PROBED_THEN_HANDSHAKE: [ConnState; 4] = [
    ConnState::Starting,
    ConnState::Probing,
    ConnState::Initializing,
    ConnState::Ready,
];

/// The states of a first connection that found a modern server.
const PROBED_MODERN: [ConnState; 3] = [ConnState::Starting, ConnState::Probing, ConnState::Ready];

/// Connects, expecting success, returning the client and the transitions seen so far.
async fn connect(builder: ClientBuilder) -> (Client, Transitions) {
    let transitions = builder.transitions();
    let client = builder.connect().await.expect("connects");
    (client, transitions)
}

/// Connects, expecting failure.
async fn connect_error(builder: ClientBuilder) -> ConnectError {
    match builder.connect().await {
        Err(Error::Connect(e)) => *e,
        Err(other) => panic!("not a connect error: {other:?}"),
        Ok(client) => {
            let info = client.server_info();
            client.stop().await;
            panic!("connected: {info:?}")
        }
    }
}

/// The states the connection went through so far: the first transition's `from`, then every
/// `to` (rows that leave the state as it was are skipped).
fn states(feed: &mut Transitions) -> Vec<ConnState> {
    let mut path = Vec::new();
    while let Some(t) = feed.try_recv() {
        if path.is_empty() {
            path.push(t.from());
        }
        if t.from() != t.to() {
            path.push(t.to());
        }
    }
    path
}

/// Every call family of the echo server works, whatever the era.
async fn exercise(client: &Client) {
    let tools = client.list_tools(None).await.expect("tools/list").tools;
    assert!(tools.iter().any(|t| t.name == "echo"), "{tools:?}");
    let all = client.list_all_tools().await.expect("list_all_tools");
    assert_eq!(all.len(), tools.len());
    let r = client
        .call_tool("echo", json!({"message": "hi"}))
        .await
        .expect("tools/call echo");
    assert_eq!(r.text(), "Echo: hi");
    let r = client
        .call_tool("add", json!({"a": 2, "b": 3}))
        .await
        .expect("tools/call add");
    assert!(r.text().contains('5'), "{r:?}");
    let resources = client
        .list_resources(None)
        .await
        .expect("resources/list")
        .resources;
    assert_eq!(resources.len(), 3, "{resources:?}");
    let read = client
        .read_resource("test://static/1")
        .await
        .expect("resources/read");
    assert!(
        format!("{read:?}").contains("Static resource 1"),
        "{read:?}"
    );
    let templates = client
        .list_resource_templates(None)
        .await
        .expect("resources/templates/list");
    assert_eq!(templates.resource_templates.len(), 1);
    let prompts = client
        .list_prompts(None)
        .await
        .expect("prompts/list")
        .prompts;
    assert!(prompts.iter().any(|p| p.name == "greeting"), "{prompts:?}");
    let p = client
        .get_prompt("greeting", json!({"name": "Ada"}))
        .await
        .expect("prompts/get");
    assert!(format!("{p:?}").contains("Ada"), "{p:?}");
    assert!(!p.messages.is_empty());
}

/// Asserts the client found a modern server at 2026-07-28.
fn assert_modern(client: &Client) {
    assert_eq!(client.era(), Some(Era::Modern));
    let info = client.server_info().expect("server info");
    assert_eq!(info.protocol_version, MODERN);
    assert_eq!(info.name(), "mcp-echo-server");
}

/// Asserts the client found a legacy server (a handshake-era version).
fn assert_legacy(client: &Client) {
    assert_eq!(client.era(), Some(Era::Legacy));
    let info = client.server_info().expect("server info");
    assert!(
        mcp_runtime::SUPPORTED_PROTOCOL_VERSIONS.contains(&info.protocol_version.as_str())
            && info.protocol_version != MODERN,
        "{info:?}"
    );
}

/// A directory of its own under the system's temporary directory, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("mcp-era-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        TempDir(dir)
    }

    fn file(&self, name: &str) -> String {
        self.0.join(name).display().to_string()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A server binary serving HTTP; killed when dropped.
struct HttpServer {
    url: String,
    child: Child,
}

impl HttpServer {
    /// `ECHO args...` (which must contain `--http ADDR` or `--sse ADDR`).
    async fn start(args: &[&str]) -> HttpServer {
        let (child, url) = mcp_tests::spawn_http(ECHO, args).await;
        HttpServer { url, child }
    }

    /// `host:port` of the URL.
    fn addr(&self) -> String {
        let rest = self.url.trim_start_matches("http://");
        rest.split('/').next().unwrap_or_default().to_owned()
    }

    /// Kills the server and waits until it is gone.
    async fn kill(mut self) {
        let _ = self.child.kill().await;
    }
}

/// Stops the client and waits until it is closed.
async fn finish(client: Client) {
    client.stop().await;
    tokio::time::timeout(WAIT, client.closed())
        .await
        .expect("closed in time");
}

/// What a scripted server received, in order.
type Received = Arc<Mutex<Vec<Value>>>;

/// A DiscoverResult offering `versions`.
fn discover_result(id: &Value, versions: &[&str]) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": {"resultType": "complete",
        "supportedVersions": versions, "capabilities": {"tools": {}},
        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "scripted", "version": "1"}}}})
}

/// A scripted server logging what it receives into `log` and answering with `answer` (given
/// the generation, the message and how many messages of the same method came before it).
fn scripted_logging(
    log: Received,
    answer: impl Fn(u64, &Value, usize) -> Vec<Value> + Send + Sync + 'static,
) -> ClientBuilder {
    mcp_tests::scripted(move |generation, msg| {
        if msg.is_null() {
            return None;
        }
        let mut seen = log.lock().unwrap();
        let before = seen
            .iter()
            .filter(|m| m["method"] == msg["method"] && m.get("method").is_some())
            .count();
        seen.push(msg.clone());
        drop(seen);
        Some(answer(generation, &msg, before))
    })
    .era(EraMode::Auto)
    .probe_timeout(Duration::from_secs(3))
    .connect_timeout(WAIT)
    .request_timeout(WAIT)
    .backoff(Duration::from_millis(20), Duration::from_millis(50), 0)
}

fn methods(log: &Received) -> Vec<String> {
    log.lock()
        .unwrap()
        .iter()
        .filter_map(|m| m["method"].as_str().map(str::to_owned))
        .collect()
}

/// The states entered from now until the next `Ready` (state changes only).
async fn until_ready(feed: &mut Transitions) -> Vec<ConnState> {
    let mut path = Vec::new();
    let done = tokio::time::timeout(WAIT, async {
        while let Some(t) = feed.recv().await {
            if t.from() != t.to() {
                path.push(t.to());
            }
            if t.to() == ConnState::Ready {
                return;
            }
        }
    })
    .await;
    assert!(done.is_ok(), "not ready: {path:?}");
    path
}

/// A modern `slow` call in 3 steps reports its progress; one past its timeout fails alone.
async fn progress_and_timeout(client: &Client) {
    let (options, mut progress) = RequestOptions::new().progress_channel();
    let r = client
        .call_tool_with("slow", json!({"ms": 90, "steps": 3}), options)
        .await
        .expect("slow");
    assert_eq!(r.text(), "slept 90 ms in 3 steps");
    let mut seen = Vec::new();
    while let Ok(p) = progress.try_recv() {
        seen.push(p.progress);
    }
    assert_eq!(seen, [1.0, 2.0, 3.0]);

    let started = tokio::time::Instant::now();
    let err = client
        .call_tool_with(
            "slow",
            json!({"ms": 5000}),
            RequestOptions::new().timeout(Duration::from_millis(200)),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Timeout { .. }), "{err:?}");
    assert!(started.elapsed() < Duration::from_secs(2));
    let r = client
        .call_tool("echo", json!({"message": "still"}))
        .await
        .unwrap();
    assert_eq!(r.text(), "Echo: still");
    assert_eq!(client.state(), ConnState::Ready);
}
