//! A stdio MCP server for the scale benchmark: it holds every `echo` call it is sent until a
//! call of the `release` tool arrives, then answers the held calls in a random order, in
//! bursts separated by random delays (0–200 µs), and answers `release` last. Everything else
//! (`initialize`, `ping`, `tools/list`) is answered at once, so a `ping` sent after a burst of
//! calls tells the client the server has read them all. `server/discover` is method-not-found
//! (a handshake-era server). Seeded: `shuffle_echo_server [SEED]`.
//!
//! Not a test double of anything: a load generator. It parses each request with serde_json
//! and writes answers with one flush per burst.

use std::io::{BufRead, BufReader, BufWriter, Write};
use std::time::Duration;

use serde_json::{Value, json};

fn answer(out: &mut impl Write, v: &Value) {
    serde_json::to_writer(&mut *out, v).expect("stdout");
    out.write_all(b"\n").expect("stdout");
}

fn main() {
    let seed = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(7);
    let mut rng = fastrand::Rng::with_seed(seed);
    let stdin = std::io::stdin();
    let mut input = BufReader::with_capacity(1 << 16, stdin.lock());
    let mut out = BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    let mut held: Vec<(Value, String)> = Vec::new();
    let mut line = String::new();
    loop {
        line.clear();
        if input.read_line(&mut line).unwrap_or(0) == 0 {
            break;
        }
        let Ok(m) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let (Some(id), Some(method)) = (m.get("id"), m.get("method").and_then(Value::as_str))
        else {
            continue;
        };
        let params = &m["params"];
        match method {
            "initialize" => answer(
                &mut out,
                &json!({"jsonrpc": "2.0", "id": id, "result": {
                    "protocolVersion": params["protocolVersion"].as_str().unwrap_or("2025-11-25"),
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "shuffle-echo", "version": "0.1.0"}}}),
            ),
            "ping" => answer(&mut out, &json!({"jsonrpc": "2.0", "id": id, "result": {}})),
            "tools/call" if params["name"] == "release" => {
                rng.shuffle(&mut held);
                let mut rest = held.as_slice();
                while !rest.is_empty() {
                    let burst = rng.usize(1..=64).min(rest.len());
                    for (id, text) in &rest[..burst] {
                        answer(
                            &mut out,
                            &json!({"jsonrpc": "2.0", "id": id, "result": {
                                "content": [{"type": "text", "text": text}], "isError": false}}),
                        );
                    }
                    out.flush().expect("stdout");
                    rest = &rest[burst..];
                    std::thread::sleep(Duration::from_micros(rng.u64(0..=200)));
                }
                held.clear();
                answer(
                    &mut out,
                    &json!({"jsonrpc": "2.0", "id": id, "result": {"content": [], "isError": false}}),
                );
            }
            "tools/call" => {
                let text = params["arguments"]["message"]
                    .as_str()
                    .unwrap_or("")
                    .to_owned();
                held.push((id.clone(), text));
            }
            _ => answer(
                &mut out,
                &json!({"jsonrpc": "2.0", "id": id,
                    "error": {"code": -32601, "message": "Method not found"}}),
            ),
        }
        if input.buffer().is_empty() {
            out.flush().expect("stdout");
        }
    }
    let _ = out.flush();
}
