//! A tiny raw-JSON-lines client for driving the test server.

#![allow(dead_code)]

use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

/// How long any single expected line may take.
pub const LINE_TIMEOUT: Duration = Duration::from_secs(2);

/// One side of a JSON-lines connection, playing the MCP client.
pub struct Peer<R, W> {
    reader: BufReader<R>,
    writer: Option<W>,
    next_id: i64,
    /// Lines received while waiting for some response (notifications, server requests…).
    pub seen: Vec<Value>,
}

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> Peer<R, W> {
    pub fn new(reader: R, writer: W) -> Self {
        Self {
            reader: BufReader::new(reader),
            writer: Some(writer),
            next_id: 0,
            seen: Vec::new(),
        }
    }

    /// Write one raw line (the newline is added).
    pub async fn send_raw(&mut self, line: &str) {
        let w = self.writer.as_mut().expect("writer closed");
        w.write_all(line.as_bytes()).await.unwrap();
        w.write_all(b"\n").await.unwrap();
        w.flush().await.unwrap();
    }

    pub async fn send(&mut self, msg: Value) {
        self.send_raw(&msg.to_string()).await;
    }

    /// Close our sending side (the server sees EOF).
    pub async fn close(&mut self) {
        if let Some(mut w) = self.writer.take() {
            w.shutdown().await.unwrap();
        }
    }

    /// The next raw line (without newline), `None` at EOF; panics after [`LINE_TIMEOUT`].
    pub async fn recv_raw(&mut self) -> Option<String> {
        self.recv_raw_within(LINE_TIMEOUT)
            .await
            .expect("timed out waiting for a line")
    }

    /// The next raw line within `t`: `Err` on timeout, `Ok(None)` at EOF.
    pub async fn recv_raw_within(&mut self, t: Duration) -> Result<Option<String>, ()> {
        let mut line = String::new();
        match tokio::time::timeout(t, self.reader.read_line(&mut line)).await {
            Err(_) => Err(()),
            Ok(Ok(0)) => Ok(None),
            Ok(Ok(_)) => Ok(Some(line.trim_end_matches(['\n', '\r']).to_owned())),
            Ok(Err(e)) => panic!("read error: {e}"),
        }
    }

    /// The next line as raw bytes (without newline) within `t`: `Err` on timeout, `Ok(None)`
    /// at EOF. For lines that need not be UTF-8.
    pub async fn recv_bytes_within(&mut self, t: Duration) -> Result<Option<Vec<u8>>, ()> {
        let mut line = Vec::new();
        match tokio::time::timeout(t, self.reader.read_until(b'\n', &mut line)).await {
            Err(_) => Err(()),
            Ok(Ok(0)) => Ok(None),
            Ok(Ok(_)) => {
                if line.last() == Some(&b'\n') {
                    line.pop();
                }
                Ok(Some(line))
            }
            Ok(Err(e)) => panic!("read error: {e}"),
        }
    }

    /// The next message; panics at EOF, on timeout or on bad JSON.
    pub async fn recv(&mut self) -> Value {
        let line = self.recv_raw().await.expect("unexpected EOF");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("bad JSON {line:?}: {e}"))
    }

    /// The next message within `t`, if any (`None` on timeout or EOF).
    pub async fn recv_within(&mut self, t: Duration) -> Option<Value> {
        match self.recv_raw_within(t).await {
            Ok(Some(line)) => Some(serde_json::from_str(&line).unwrap()),
            _ => None,
        }
    }

    /// Send a request with a fresh numeric id; return that id.
    pub async fn send_request(&mut self, method: &str, params: Value) -> i64 {
        self.next_id += 1;
        let id = self.next_id;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        id
    }

    /// Read until the response with this id; everything else goes to `seen`.
    pub async fn response(&mut self, id: &Value) -> Value {
        loop {
            let msg = self.recv().await;
            if msg.get("method").is_none() && msg.get("id") == Some(id) {
                return msg;
            }
            self.seen.push(msg);
        }
    }

    /// Send a request and return its whole response message.
    pub async fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.send_request(method, params).await;
        self.response(&json!(id)).await
    }

    /// Send a request and return its `result` (panics on an error response).
    pub async fn result(&mut self, method: &str, params: Value) -> Value {
        let resp = self.request(method, params).await;
        assert!(resp.get("error").is_none(), "error response: {resp}");
        resp["result"].clone()
    }

    /// Call a tool and return its result.
    pub async fn call(&mut self, tool: &str, args: Value) -> Value {
        self.result("tools/call", json!({"name": tool, "arguments": args}))
            .await
    }

    /// `initialize` (asking for `version`) then `notifications/initialized`; returns the result.
    pub async fn handshake(&mut self, version: &str) -> Value {
        let result = self
            .result(
                "initialize",
                json!({
                    "protocolVersion": version,
                    "capabilities": {"sampling": {}, "roots": {"listChanged": true}, "elicitation": {"form": {}}},
                    "clientInfo": {"name": "raw-test-client", "version": "0.0.0"},
                }),
            )
            .await;
        self.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        result
    }

    /// Notifications with this method among the messages seen so far.
    pub fn seen_with_method(&self, method: &str) -> Vec<Value> {
        self.seen
            .iter()
            .filter(|m| m["method"] == method)
            .cloned()
            .collect()
    }
}

/// The text of the first content block of a tool result.
pub fn text(result: &Value) -> &str {
    result["content"][0]["text"]
        .as_str()
        .expect("no text content")
}
