//! The built binaries as child processes over stdio.

mod common;

use std::process::Stdio;
use std::time::Duration;

use common::{Peer, text};
use serde_json::json;
use tokio::io::AsyncReadExt;
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};

const ECHO: &str = env!("CARGO_BIN_EXE_mcp-echo-server");
const CHAOS: &str = env!("CARGO_BIN_EXE_mcp-chaos-server");

fn spawn(bin: &str, args: &[&str]) -> (Peer<ChildStdout, ChildStdin>, ChildStderr, Child) {
    let mut child = Command::new(bin)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let stderr = child.stderr.take().unwrap();
    (Peer::new(stdout, stdin), stderr, child)
}

async fn exit_code(child: &mut Child) -> Option<i32> {
    tokio::time::timeout(Duration::from_secs(2), child.wait())
        .await
        .expect("the server did not exit")
        .unwrap()
        .code()
}

async fn read_all(mut stderr: ChildStderr) -> String {
    let mut s = String::new();
    stderr.read_to_string(&mut s).await.unwrap();
    s
}

#[tokio::test]
async fn echo_server_over_stdio() {
    let (mut p, stderr, mut child) = spawn(ECHO, &["--stderr-noise", "3", "--page-size", "100"]);
    let r = p.handshake("2025-03-26").await;
    assert_eq!(r["protocolVersion"], "2025-03-26");
    assert_eq!(r["serverInfo"]["name"], "mcp-echo-server");
    let list = p.result("tools/list", json!({})).await;
    let names: Vec<&str> = list["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"echo"));
    assert!(
        !names.contains(&"die"),
        "the echo binary lists no chaos tools"
    );
    let r = p.call("echo", json!({"message": "over stdio"})).await;
    assert_eq!(text(&r), "Echo: over stdio");
    p.send_raw("{oops").await;
    assert_eq!(p.recv().await["error"]["code"], -32700);
    p.close().await;
    assert_eq!(p.recv_raw().await, None);
    assert_eq!(exit_code(&mut child).await, Some(0));
    let err = read_all(stderr).await;
    assert_eq!(err.matches("stderr noise line").count(), 3, "{err}");
}

#[tokio::test]
async fn flags_version_override_and_paging() {
    let (mut p, _stderr, mut child) =
        spawn(ECHO, &["--version-override=1999-01-01", "--page-size", "3"]);
    let r = p.handshake("2025-11-25").await;
    assert_eq!(r["protocolVersion"], "1999-01-01");
    let page = p.result("tools/list", json!({})).await;
    assert_eq!(page["tools"].as_array().unwrap().len(), 3);
    assert!(page["nextCursor"].is_string());
    p.close().await;
    assert_eq!(exit_code(&mut child).await, Some(0));
}

#[tokio::test]
async fn die_on_start_and_bad_flags() {
    let (_p, _e, mut child) = spawn(ECHO, &["--die-on-start"]);
    assert_eq!(exit_code(&mut child).await, Some(1));
    let (_p, _e, mut child) = spawn(CHAOS, &["--no-such-flag"]);
    assert_eq!(exit_code(&mut child).await, Some(2));
}

#[tokio::test]
async fn chaos_binary_die_exits_3() {
    let (mut p, _stderr, mut child) = spawn(CHAOS, &[]);
    p.handshake("2025-11-25").await;
    let list = p.result("tools/list", json!({})).await;
    assert!(
        list["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "die")
    );
    p.send(json!({"jsonrpc": "2.0", "id": "d", "method": "tools/call", "params": {"name": "die", "arguments": {}}}))
        .await;
    assert_eq!(p.recv_raw().await, None::<String>);
    assert_eq!(exit_code(&mut child).await, Some(3));
}

#[tokio::test]
async fn chaos_binary_sigkill_kills_itself() {
    use std::os::unix::process::ExitStatusExt;
    let (mut p, _stderr, mut child) = spawn(CHAOS, &[]);
    p.handshake("2025-11-25").await;
    p.send(json!({"jsonrpc": "2.0", "id": "k", "method": "tools/call", "params": {"name": "sigkill", "arguments": {}}}))
        .await;
    assert_eq!(p.recv_raw().await, None::<String>);
    let status = tokio::time::timeout(Duration::from_secs(2), child.wait())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(status.signal(), Some(9), "{status:?}");
}

#[tokio::test]
async fn stderr_floods_at_start_and_on_call() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let (mut p, mut stderr, mut child) = spawn(CHAOS, &["--stderr-flood", "100000"]);
    // Everything the server writes on stderr, counted as it comes.
    let seen = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&seen);
    let reader = tokio::spawn(async move {
        let mut buf = vec![0; 1 << 16];
        loop {
            match stderr.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => counter.fetch_add(n, Ordering::SeqCst),
            };
        }
    });
    p.handshake("2025-11-25").await;
    let r = p.call("stderr_flood", json!({"bytes": 50000})).await;
    assert_eq!(text(&r), "wrote 50000 bytes to stderr");
    // The start-up flood runs beside the connection: wait for it before ending it.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while seen.load(Ordering::SeqCst) < 150_000 {
        assert!(tokio::time::Instant::now() < deadline, "{seen:?} bytes");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    p.close().await;
    assert_eq!(exit_code(&mut child).await, Some(0));
    reader.await.unwrap();
    // Both floods, and the server's few lines of its own.
    let total = seen.load(Ordering::SeqCst);
    assert!((150_000..=151_000).contains(&total), "{total}");
}

#[tokio::test]
async fn once_misbehaves_in_the_first_process_only() {
    let marker = std::env::temp_dir().join(format!("mcp-once-bin-{}", std::process::id()));
    let _ = std::fs::remove_file(&marker);
    let args = ["--handshake", "error", "--once", marker.to_str().unwrap()];
    let (mut p, _e, _child) = spawn(CHAOS, &args);
    let resp = p
        .request(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}),
        )
        .await;
    assert!(resp.get("error").is_some(), "{resp}");
    let (mut p, _e, _child) = spawn(CHAOS, &args);
    let r = p.handshake("2025-11-25").await;
    assert_eq!(r["protocolVersion"], "2025-11-25");
    std::fs::remove_file(&marker).unwrap();
}
