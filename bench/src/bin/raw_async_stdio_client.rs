//! The async raw floor over stdio: no MCP SDK, tokio's child-process pipes alone, on the same
//! tokio runtime as the client measured. It spawns the server, does the handshake by hand, then
//! writes one JSON-RPC `tools/call` line and reads its answer line, N times in a row, and then
//! N with CONC in flight (a reader task hands each answer to its caller by id). Every request is
//! built and every answer parsed with serde_json, as any client must.
//!
//! What it shows: what an async client on this runtime pays before any MCP work (the blocking
//! floor `raw_client` reads with a blocking `read`; an async client waits in the reactor and,
//! on multi_thread, hands each answer from a worker thread to the caller's). Same command line
//! and output as `mcp_client_bench`:
//! `raw_async_stdio_client [-n N] [-c CONC] [--warmup W] [--rt current|multi] -- CMD ARGS...`.

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{ChildStdin, ChildStdout, Command};
use tokio::sync::oneshot;

type Waiting = Arc<Mutex<HashMap<u64, oneshot::Sender<Value>>>>;

fn request(id: u64) -> Vec<u8> {
    let mut line = serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"message": format!("m{id}")}}}))
    .expect("json");
    line.push(b'\n');
    line
}

/// Reads lines until an answer (a member `id` and a `result` or `error`) comes.
async fn answer(reader: &mut BufReader<ChildStdout>, line: &mut String) -> Value {
    loop {
        line.clear();
        assert!(
            reader.read_line(line).await.expect("read") > 0,
            "server closed stdout"
        );
        let v: Value = serde_json::from_str(line).expect("a JSON line");
        if v.get("id").is_some() && (v.get("result").is_some() || v.get("error").is_some()) {
            return v;
        }
    }
}

async fn send(writer: &mut ChildStdin, line: &[u8]) {
    writer.write_all(line).await.expect("write");
    writer.flush().await.expect("flush");
}

async fn run(n: usize, conc: usize, warmup: usize, rt: &str, cmd: Vec<String>) {
    let client = format!("raw-async (tokio pipes, serde_json; {rt})");
    let mut child = Command::new(&cmd[0])
        .args(&cmd[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn the server");
    let mut writer = child.stdin.take().expect("stdin");
    let mut reader = BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    let mut init = serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "raw-async", "version": "0"}}}))
    .expect("json");
    init.push(b'\n');
    send(&mut writer, &init).await;
    answer(&mut reader, &mut line).await;
    send(
        &mut writer,
        b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n",
    )
    .await;
    let mut id = 0;
    for _ in 0..warmup {
        id += 1;
        send(&mut writer, &request(id)).await;
        answer(&mut reader, &mut line).await;
    }
    let mut lat = Vec::with_capacity(n);
    let t0 = Instant::now();
    for _ in 0..n {
        let t = Instant::now();
        id += 1;
        send(&mut writer, &request(id)).await;
        let v = answer(&mut reader, &mut line).await;
        assert!(v.get("result").is_some(), "echo failed: {v}");
        lat.push(t.elapsed().as_secs_f64());
    }
    mcp_bench::report(&client, "seq", n, 1, t0.elapsed().as_secs_f64(), lat);

    // In flight: callers share the writer; one reader task answers each by id.
    let waiting: Waiting = Arc::default();
    let reading = tokio::spawn({
        let waiting = Arc::clone(&waiting);
        async move {
            let mut line = String::new();
            loop {
                let v = answer(&mut reader, &mut line).await;
                let id = v.get("id").and_then(Value::as_u64).expect("a numeric id");
                let caller = waiting.lock().expect("lock").remove(&id);
                if let Some(caller) = caller {
                    let _ = caller.send(v);
                }
            }
        }
    });
    let writer = Arc::new(tokio::sync::Mutex::new(writer));
    let base = id;
    let (secs, lat) = mcp_bench::concurrent(n, conc, move |i| {
        let (writer, waiting) = (Arc::clone(&writer), Arc::clone(&waiting));
        async move {
            let id = base + 1 + i as u64;
            let (tx, rx) = oneshot::channel();
            waiting.lock().expect("lock").insert(id, tx);
            send(&mut *writer.lock().await, &request(id)).await;
            let v = rx.await.expect("an answer");
            assert!(v.get("result").is_some(), "echo failed: {v}");
        }
    })
    .await;
    mcp_bench::report(&client, "conc", n, conc, secs, lat);
    reading.abort();
}

fn main() {
    let o = mcp_bench::Options::parse(
        "raw_async_stdio_client [-n N] [-c CONC] [--warmup W] [--rt multi|current] -- CMD ARGS...",
    );
    let runtime = mcp_bench::runtime(&o.rt);
    runtime.block_on(run(o.n, o.conc, o.warmup, &o.rt, o.target));
}
