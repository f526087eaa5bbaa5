//! What the cross-crate integration tests in `tests/tests/` share: ways to start the in-repo
//! servers (in process over a duplex stream, or as child processes over stdio), [`probe`], what
//! leak checks read about the process, and the deterministic simulation of the runtime
//! ([`sim`]).

pub mod chaos;
pub mod probe;
pub mod sim;

use std::time::Duration;

use mcp_runtime::transport::StreamConnector;
use mcp_runtime::{Client, ClientBuilder};
use mcp_testserver::ServerConfig;

/// A builder whose every transport generation is a fresh in-process server over a duplex
/// stream.
pub fn in_process(config: ServerConfig) -> ClientBuilder {
    let connector = StreamConnector::from_fn(move || {
        let config = config.clone();
        async move {
            let (client, server) = tokio::io::duplex(1 << 16);
            let (sr, sw) = tokio::io::split(server);
            tokio::spawn(async move {
                mcp_testserver::serve(sr, sw, config).await;
            });
            let (cr, cw) = tokio::io::split(client);
            Ok((cr, cw))
        }
    });
    ClientBuilder::new(connector).seed(7)
}

/// A builder whose every transport generation is a scripted server over a duplex stream, for
/// tests that need exact control of what a server says. `reply` gets the generation (from 1)
/// and each message the client sends, and returns the messages to write back, one a line (an
/// array is written as one line: a JSON-RPC batch); `None` closes the connection. At the end of
/// the client's stream it gets `Value::Null` (its answer is then ignored). Scripts are written
/// in the handshake era, so the builder speaks it only ([`EraMode::Legacy`], no
/// `server/discover` probe); a test of another era sets its own with `.era(…)`.
pub fn scripted<F>(reply: F) -> ClientBuilder
where
    F: Fn(u64, serde_json::Value) -> Option<Vec<serde_json::Value>> + Send + Sync + 'static,
{
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let reply = Arc::new(reply);
    let generations = Arc::new(AtomicU64::new(0));
    let connector = StreamConnector::from_fn(move || {
        let reply = Arc::clone(&reply);
        let generation = generations.fetch_add(1, Ordering::SeqCst) + 1;
        async move {
            let (client, server) = tokio::io::duplex(1 << 16);
            let (sr, mut sw) = tokio::io::split(server);
            tokio::spawn(async move {
                let mut lines = tokio::io::BufReader::new(sr).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    let msg = serde_json::from_str(&line).unwrap_or(serde_json::Value::Null);
                    let Some(out) = reply(generation, msg) else {
                        return;
                    };
                    for m in out {
                        let mut bytes = serde_json::to_vec(&m).unwrap_or_default();
                        bytes.push(b'\n');
                        if sw.write_all(&bytes).await.is_err() {
                            return;
                        }
                    }
                }
                reply(generation, serde_json::Value::Null);
            });
            let (cr, cw) = tokio::io::split(client);
            Ok((cr, cw))
        }
    });
    ClientBuilder::new(connector)
        .seed(11)
        .era(mcp_runtime::EraMode::Legacy)
}

/// The `initialize` result of a scripted server named `name` at `version`.
pub fn initialize_result(
    id: &serde_json::Value,
    version: &str,
    capabilities: serde_json::Value,
    name: &str,
) -> serde_json::Value {
    serde_json::json!({"jsonrpc": "2.0", "id": id, "result": {"protocolVersion": version,
        "capabilities": capabilities, "serverInfo": {"name": name, "version": "1"}}})
}

/// A builder spawning a server binary of this package over stdio.
pub fn stdio(binary: &str, args: &[&str]) -> ClientBuilder {
    ClientBuilder::stdio(binary, args.iter().copied())
        .seed(7)
        .init_timeout(Duration::from_secs(10))
}

/// How long the era and cache tests wait for a connect, a handshake or an answer.
pub const ERA_WAIT: Duration = Duration::from_secs(10);

/// Short timeouts and a fast backoff for the era and cache tests, in `mode`.
fn quick(builder: ClientBuilder, mode: mcp_runtime::EraMode) -> ClientBuilder {
    builder
        .era(mode)
        .probe_timeout(Duration::from_secs(3))
        .connect_timeout(ERA_WAIT)
        .init_timeout(ERA_WAIT)
        .request_timeout(ERA_WAIT)
        .backoff(Duration::from_millis(20), Duration::from_millis(50), 0)
}

/// A builder for `binary args` over stdio in `mode`, with short timeouts.
pub fn over_stdio(binary: &str, args: &[&str], mode: mcp_runtime::EraMode) -> ClientBuilder {
    quick(stdio(binary, args), mode)
}

/// A builder for an HTTP URL (Streamable HTTP, falling back to HTTP+SSE) in `mode`, with short
/// timeouts.
pub fn over_http(url: &str, mode: mcp_runtime::EraMode) -> ClientBuilder {
    quick(ClientBuilder::http(url).expect("an http URL").seed(7), mode)
}

/// Spawns `binary args` (the args must serve HTTP, e.g. `--http 127.0.0.1:0`) and waits up to
/// [`ERA_WAIT`] for the URL it prints first; the child is killed when dropped.
pub async fn spawn_http(binary: &str, args: &[&str]) -> (tokio::process::Child, String) {
    use tokio::io::AsyncBufReadExt;
    let mut child = tokio::process::Command::new(binary)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("the server starts");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = tokio::io::BufReader::new(stdout).lines();
    let url = tokio::time::timeout(ERA_WAIT, lines.next_line())
        .await
        .expect("a URL in time")
        .expect("stdout readable")
        .expect("a URL line");
    assert!(url.starts_with("http://"), "{url:?}");
    (child, url)
}

/// Whether a process id is gone (not running and reaped).
pub fn pid_gone(pid: u32) -> bool {
    !std::path::Path::new(&format!("/proc/{pid}")).exists()
}

/// Waits up to `limit` for `f` to hold, polling.
pub async fn eventually(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let start = tokio::time::Instant::now();
    while start.elapsed() < limit {
        if f() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    f()
}

/// What the in-repo server recorded about this session (`session_info` tool): pid, handshake,
/// client capabilities, cancelled ids, ...
pub async fn session_info(client: &Client) -> serde_json::Value {
    let result = client
        .call_tool("session_info", serde_json::json!({}))
        .await
        .expect("session_info");
    result
        .structured_content
        .expect("session_info has structured content")
}
