//! `mcpc --http` against hostile HTTP servers (a few lines of HTTP/1.1 over a `TcpListener`
//! in a thread, one request per connection): what it says and how it exits when the server
//! never answers `notifications/initialized` (the bound from `--timeout`, exit 5 naming it,
//! not a timeout), answers a call's POST with `2xx` and no response (exit 5 in both eras), or
//! never answers at all (the connect message names what went unanswered and says nothing of a
//! stderr an HTTP server does not have).

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use common::{expect_code, mcpc, one_error_line};
use serde_json::{Value, json};

/// What the server does with one request (its HTTP method and JSON body): the whole response,
/// or `None` to leave it unanswered (the connection stays open).
type Answer = fn(&str, &Value) -> Option<String>;

/// Serves `answer` on a free port in a thread; returns the endpoint URL.
fn serve(answer: Answer) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            std::thread::spawn(move || handle(stream, answer));
        }
    });
    url
}

fn handle(stream: TcpStream, answer: Answer) {
    let Ok(mut w) = stream.try_clone() else {
        return;
    };
    let mut r = BufReader::new(stream);
    let mut line = String::new();
    if r.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    let method = line.split(' ').next().unwrap_or("").to_owned();
    let mut len = 0;
    loop {
        let mut h = String::new();
        if r.read_line(&mut h).unwrap_or(0) == 0 {
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
    if r.read_exact(&mut body).is_err() {
        return;
    }
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    match answer(&method, &body) {
        Some(reply) => {
            let _ = w.write_all(reply.as_bytes());
        }
        // Held open, silent, until mcpc gives up.
        None => std::thread::sleep(Duration::from_secs(30)),
    }
}

fn reply(status: u16, headers: &[(&str, &str)], body: &str) -> Option<String> {
    let mut r = format!(
        "HTTP/1.1 {status} X\r\nconnection: close\r\ncontent-length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        r.push_str(&format!("{k}: {v}\r\n"));
    }
    r.push_str("\r\n");
    r.push_str(body);
    Some(r)
}

fn result(id: &Value, result: Value) -> Option<String> {
    let body = json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string();
    reply(
        200,
        &[
            ("content-type", "application/json"),
            ("mcp-session-id", "s-1"),
        ],
        &body,
    )
}

/// A handshake-era server; `initialized` and `call` say how the POST of
/// `notifications/initialized` and of `tools/call` are answered.
fn handshake(body: &Value, initialized: Option<String>, call: Option<String>) -> Option<String> {
    let id = &body["id"];
    match body["method"].as_str() {
        Some("initialize") => result(
            id,
            json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                "serverInfo": {"name": "hostile", "version": "1"}}),
        ),
        Some("notifications/initialized") => initialized,
        Some("tools/list") => result(
            id,
            json!({"tools": [{"name": "t", "inputSchema": {"type": "object"}}]}),
        ),
        Some("tools/call") => call,
        Some("ping") => result(id, json!({})),
        Some("server/discover") => reply(400, &[], ""),
        _ if id.is_null() => reply(202, &[], ""),
        _ => reply(400, &[], ""),
    }
}

/// The answer of a call's POST with a 200 and an empty body.
fn empty_200() -> Option<String> {
    reply(200, &[("content-type", "application/json")], "")
}

#[test]
fn an_unanswered_initialized_holds_the_call_back_only_half_the_timeout() {
    let url = serve(|method, body| match method {
        "POST" => handshake(body, None, None),
        "GET" => reply(405, &[], ""),
        _ => reply(200, &[], ""),
    });
    let started = Instant::now();
    let run = mcpc(&["--http", &url, "--era", "legacy", "--timeout", "2", "ping"]);
    let took = started.elapsed();
    // `initialized` is cut off after 1 s (half of --timeout) and the ping goes out.
    expect_code(&run, 0);
    assert!(took < Duration::from_secs(5), "took {took:?}");
}

#[test]
fn a_server_answering_nothing_after_initialize_times_the_call_out_not_before_it_was_sent() {
    let url = serve(|method, body| match method {
        "POST" if body["method"] == "initialize" => handshake(body, None, None),
        "POST" => None,
        "GET" => reply(405, &[], ""),
        _ => reply(200, &[], ""),
    });
    let started = Instant::now();
    let run = mcpc(&["--http", &url, "--era", "legacy", "--timeout", "2", "ping"]);
    let took = started.elapsed();
    // The ping went out (after `initialized` was cut off) and got no answer: timed out.
    expect_code(&run, 4);
    assert!(took < Duration::from_secs(8), "took {took:?}");
}

#[test]
fn a_2xx_without_a_response_exits_5_in_both_eras() {
    let legacy = serve(|method, body| match method {
        "POST" => handshake(body, reply(202, &[], ""), empty_200()),
        "GET" => reply(405, &[], ""),
        _ => reply(200, &[], ""),
    });
    let modern = serve(|_, body| {
        let id = &body["id"];
        match body["method"].as_str() {
            Some("server/discover") => result(
                id,
                json!({"resultType": "complete", "supportedVersions": ["2026-07-28"],
                    "capabilities": {"tools": {}},
                    "_meta": {"io.modelcontextprotocol/serverInfo":
                        {"name": "hostile", "version": "1"}}}),
            ),
            Some("tools/list") => result(
                id,
                json!({"resultType": "complete",
                    "tools": [{"name": "t", "inputSchema": {"type": "object"}}]}),
            ),
            Some("tools/call") => empty_200(),
            _ if id.is_null() => reply(202, &[], ""),
            _ => result(id, json!({"resultType": "complete"})),
        }
    });
    for (url, era) in [(legacy, "legacy"), (modern, "modern")] {
        let started = Instant::now();
        let run = mcpc(&[
            "--http",
            &url,
            "--era",
            era,
            "--timeout",
            "10",
            "tools",
            "call",
            "t",
        ]);
        expect_code(&run, 5);
        let line = one_error_line(&run);
        assert!(
            line.contains(
                "the server answered the POST of tools/call with HTTP 200 and no response"
            ),
            "{era}: {line}"
        );
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{era}: not at once"
        );
    }
}

#[test]
fn an_http_server_that_never_answers_is_not_said_to_have_written_nothing_on_stderr() {
    let url = serve(|_, _| None);
    for (era, unanswered) in [
        ("auto", "no answer to server/discover within 1 s"),
        ("legacy", "no answer to initialize within 1 s"),
    ] {
        let run = mcpc(&[
            "--http",
            &url,
            "--era",
            era,
            "--connect-timeout",
            "1",
            "ping",
        ]);
        expect_code(&run, 3);
        let line = one_error_line(&run);
        assert!(line.contains(unanswered), "{era}: {line}");
        assert!(!line.contains("stderr"), "{era}: {line}");
        assert!(!line.contains("npx"), "{era}: {line}");
    }
}
