//! `mcpc --http` end to end against a scripted Streamable HTTP server in the test process (a
//! few lines of HTTP/1.1 over a `TcpListener`, one request per connection), and `-H`: what it
//! refuses, with exit 2, and that a header's value never shows in mcpc's output.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

use common::mcpc;
use serde_json::{Value, json};

/// A secret header value: it must never appear in mcpc's output.
const SECRET: &str = "tok-5ecr3t-Zq9";

/// One request as the server saw it.
#[derive(Clone, Debug)]
struct Seen {
    method: String,
    headers: Vec<(String, String)>,
    body: Value,
}

/// Serves a well-behaved MCP server on a free port in a thread; returns its endpoint URL and
/// what it saw.
fn serve() -> (String, Arc<Mutex<Vec<Seen>>>) {
    serve_with(answer)
}

/// Serves `answer` (the status and JSON answer to one request) on a free port in a thread.
fn serve_with(answer: fn(&str, &Value) -> (u16, Option<Value>)) -> (String, Arc<Mutex<Vec<Seen>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            let log = Arc::clone(&log);
            std::thread::spawn(move || {
                let mut w = stream.try_clone().unwrap();
                let mut r = BufReader::new(stream);
                let mut line = String::new();
                if r.read_line(&mut line).unwrap_or(0) == 0 {
                    return;
                }
                let method = line.split(' ').next().unwrap_or("").to_owned();
                let mut headers = Vec::new();
                loop {
                    let mut h = String::new();
                    r.read_line(&mut h).unwrap();
                    let h = h.trim_end();
                    if h.is_empty() {
                        break;
                    }
                    if let Some((k, v)) = h.split_once(':') {
                        headers.push((k.trim().to_lowercase(), v.trim().to_owned()));
                    }
                }
                let len = headers
                    .iter()
                    .find(|(k, _)| k == "content-length")
                    .and_then(|(_, v)| v.parse::<usize>().ok())
                    .unwrap_or(0);
                let mut body = vec![0; len];
                r.read_exact(&mut body).unwrap();
                let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                log.lock().unwrap().push(Seen {
                    method: method.clone(),
                    headers,
                    body: body.clone(),
                });
                let (status, answer) = answer(&method, &body);
                let mut reply = format!("HTTP/1.1 {status} X\r\nconnection: close\r\n");
                match answer {
                    Some(a) => {
                        let a = a.to_string();
                        reply.push_str(&format!(
                            "content-type: application/json\r\nmcp-session-id: s-1\r\n\
                             content-length: {}\r\n\r\n{a}",
                            a.len()
                        ));
                    }
                    None => reply.push_str("content-length: 0\r\n\r\n"),
                }
                let _ = w.write_all(reply.as_bytes());
            });
        }
    });
    (url, seen)
}

/// The server's status and JSON answer to one request.
fn answer(method: &str, body: &Value) -> (u16, Option<Value>) {
    let id = &body["id"];
    let result = |r: Value| (200, Some(json!({"jsonrpc": "2.0", "id": id, "result": r})));
    match (method, body["method"].as_str()) {
        ("POST", Some("initialize")) => result(json!({"protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "scripted-http", "version": "7.1"}})),
        ("POST", Some("tools/list")) => result(json!({"tools": [{"name": "add",
            "description": "Adds", "inputSchema": {"type": "object",
            "properties": {"a": {"type": "number"}, "b": {"type": "number"}}}}]})),
        ("POST", Some("tools/call")) => {
            let args = &body["params"]["arguments"];
            let sum = args["a"].as_f64().unwrap_or(0.0) + args["b"].as_f64().unwrap_or(0.0);
            result(json!({"content": [{"type": "text", "text": format!("sum {sum}")}]}))
        }
        ("POST", Some("ping")) => result(json!({})),
        ("POST", _) => (202, None),
        ("GET", _) => (405, None),
        ("DELETE", _) => (200, None),
        _ => (400, None),
    }
}

#[test]
fn every_command_works_over_http() {
    let (url, seen) = serve();
    let info = mcpc(&["--http", &url, "info"]);
    assert_eq!(info.code, 0, "{info:?}");
    assert!(info.stdout.contains("scripted-http 7.1"), "{info:?}");
    assert!(info.stdout.contains("2025-11-25"), "{info:?}");

    let list = mcpc(&["--http", &url, "--json", "tools", "list"]);
    assert_eq!(list.code, 0, "{list:?}");
    let doc: Value = serde_json::from_str(&list.stdout).expect("one JSON document");
    assert_eq!(doc["tools"][0]["name"], "add");

    let call = mcpc(&["--http", &url, "tools", "call", "add", "a=2", "b=3.5"]);
    assert_eq!(call.code, 0, "{call:?}");
    assert_eq!(call.stdout.trim(), "sum 5.5");

    let ping = mcpc(&["--http", &url, "ping"]);
    assert_eq!(ping.code, 0, "{ping:?}");
    assert!(ping.stdout.contains("pong from scripted-http"), "{ping:?}");

    // Typed by the schema: numbers went as numbers, and every session ended with DELETE.
    let seen = seen.lock().unwrap();
    let call = seen
        .iter()
        .find(|s| s.body["method"] == "tools/call")
        .expect("a tools/call");
    assert_eq!(call.body["params"]["arguments"], json!({"a": 2, "b": 3.5}));
    let sessions = seen
        .iter()
        .filter(|s| s.body["method"] == "initialize")
        .count();
    let deletes = seen.iter().filter(|s| s.method == "DELETE").count();
    assert_eq!((sessions, deletes), (4, 4), "{seen:?}");
    let later = seen
        .iter()
        .find(|s| s.body["method"] == "ping")
        .expect("a ping");
    assert!(
        later
            .headers
            .iter()
            .any(|(k, v)| k == "mcp-session-id" && v == "s-1"),
        "{later:?}"
    );
}

#[test]
fn state_shows_the_transitions_over_http() {
    let (url, _) = serve();
    let mut child = Command::new(common::MCPC)
        .args(["--http", &url, "state"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("mcpc starts");
    let pid = child.id().to_string();
    let mut out = String::new();
    for line in BufReader::new(child.stdout.take().unwrap())
        .lines()
        .map_while(Result::ok)
    {
        out.push_str(&line);
        out.push('\n');
        if line.contains("-> ready") {
            // Ctrl-C is `state`'s normal end.
            let sent = Command::new("kill").args(["-INT", &pid]).status();
            assert!(sent.expect("kill runs").success());
        }
    }
    let status = child.wait().expect("mcpc exits");
    assert_eq!(status.code(), Some(0), "{out}");
    assert!(
        out.contains("starting     -> probing       event transport_up"),
        "{out}"
    );
    assert!(
        out.contains("probing      -> initializing  event response"),
        "{out}"
    );
    assert!(out.contains("initializing -> ready"), "{out}");
    assert!(out.contains("(scripted-http 7.1)"), "{out}");
}

#[test]
fn a_header_with_cr_or_lf_is_refused_without_showing_it() {
    for value in [
        format!("{SECRET}\r\nX-Injected: 1"),
        format!("{SECRET}\nX"),
        format!("{SECRET}\r"),
    ] {
        let header = format!("X-Api-Key: {value}");
        for flag in ["-H", "--header"] {
            let run = mcpc(&[
                "--http",
                "http://127.0.0.1:9/mcp",
                flag,
                &header,
                "-vvv",
                "ping",
            ]);
            assert_eq!(run.code, 2, "{run:?}");
            assert!(run.stderr.contains("CR or LF"), "{run:?}");
            assert!(run.stderr.contains("X-Api-Key"), "{run:?}");
            assert!(!run.stderr.contains(SECRET), "{run:?}");
            assert!(!run.stdout.contains(SECRET), "{run:?}");
        }
    }
}

#[test]
fn a_bad_header_name_or_form_is_refused_without_showing_it() {
    for header in [
        format!("X Api Key: {SECRET}"),
        format!("Bearer {SECRET}"),
        format!(": {SECRET}"),
        format!("Mcp-Session-Id: {SECRET}"),
    ] {
        let run = mcpc(&["--http", "http://127.0.0.1:9/mcp", "-H", &header, "ping"]);
        assert_eq!(run.code, 2, "{run:?}");
        assert!(run.stderr.starts_with("mcpc: -H/--header"), "{run:?}");
        assert!(!run.stderr.contains(SECRET), "{run:?}");
    }
    let stdio = mcpc(&["--stdio", "true", "-H", &format!("X-Key: {SECRET}"), "ping"]);
    assert_eq!(stdio.code, 2, "{stdio:?}");
    assert!(stdio.stderr.contains("not --stdio"), "{stdio:?}");
    assert!(!stdio.stderr.contains(SECRET), "{stdio:?}");
}

#[test]
fn a_header_is_sent_and_its_value_never_shows_in_errors_or_logs() {
    let (url, seen) = serve();
    let header = format!("Authorization: Bearer {SECRET}");
    let run = mcpc(&[
        "--http",
        &url,
        "-H",
        &header,
        "-H",
        "X-Tenant: blue",
        "-vvv",
        "ping",
    ]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        !run.stderr.contains(SECRET),
        "the -vvv logs: {}",
        run.stderr
    );
    assert!(!run.stdout.contains(SECRET), "{run:?}");
    // Every request carried both headers, the session's own ones too.
    let seen = seen.lock().unwrap();
    assert!(seen.len() >= 3, "{seen:?}");
    for s in seen.iter() {
        let has = |name: &str, value: &str| s.headers.iter().any(|(k, v)| k == name && v == value);
        assert!(has("authorization", &format!("Bearer {SECRET}")), "{s:?}");
        assert!(has("x-tenant", "blue"), "{s:?}");
    }

    // Nothing listens on port 9 (discard): connecting fails, with every log on.
    let run = mcpc(&[
        "--http",
        "http://127.0.0.1:9/mcp",
        "-H",
        &header,
        "-vvv",
        "--connect-timeout",
        "5",
        "ping",
    ]);
    assert_eq!(run.code, 3, "{run:?}");
    assert!(!run.stderr.contains(SECRET), "{run:?}");
    assert!(!run.stdout.contains(SECRET), "{run:?}");
}

#[test]
fn a_url_password_is_not_shown() {
    let run = mcpc(&[
        "--http",
        &format!("http://user:{SECRET}@127.0.0.1:9/mcp"),
        "--connect-timeout",
        "5",
        "ping",
    ]);
    assert_eq!(run.code, 3, "{run:?}");
    assert!(run.stderr.contains("user:***@127.0.0.1:9"), "{run:?}");
    assert!(!run.stderr.contains(SECRET), "{run:?}");
}

/// Runs `mcpc ARGS` with its token store at `store`.
fn mcpc_with_store(store: &std::path::Path, args: &[&str]) -> common::Run {
    Command::new(env!("CARGO_BIN_EXE_mcpc"))
        .args(args)
        .env("MCPC_TOKEN_STORE", store)
        .stdin(Stdio::null())
        .output()
        .expect("mcpc runs")
        .into()
}

#[test]
fn a_kept_token_is_sent_to_its_server_and_never_shown() {
    let (url, seen) = serve();
    let dir = std::env::temp_dir().join(format!("mcpc-auth-{}", std::process::id()));
    let store = dir.join("tokens.json");
    let token = json!({"clients": {}, "tokens": {url.clone(): {
        "issuer": "https://as.example", "resource": url.clone(),
        "access_token": SECRET, "refresh_token": "refresh-5ecr3t",
        "expires_at": 4_000_000_000u64, "scopes": ["mcp:read", "mcp:write"]}}});
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(&store, token.to_string()).unwrap();

    // Every request to the server carries it; no output shows it, not even -vvv logs.
    let run = mcpc_with_store(&store, &["--http", &url, "-vvv", "tools", "list"]);
    assert_eq!(run.code, 0, "{run:?}");
    for shown in [&run.stdout, &run.stderr] {
        assert!(
            !shown.contains(SECRET) && !shown.contains("refresh-5ecr3t"),
            "{run:?}"
        );
    }
    let seen = seen.lock().unwrap().clone();
    assert!(seen.len() >= 3, "{seen:?}");
    for s in &seen {
        let bearer = format!("Bearer {SECRET}");
        assert!(
            s.headers
                .iter()
                .any(|(k, v)| k == "authorization" && *v == bearer),
            "{s:?}"
        );
    }

    // `auth status` shows the issuer, the scopes and the expiry, never the tokens.
    for args in [
        vec!["--http", url.as_str(), "auth", "status"],
        vec!["--http", url.as_str(), "--json", "auth", "status"],
    ] {
        let run = mcpc_with_store(&store, &args);
        assert_eq!(run.code, 0, "{run:?}");
        assert!(run.stdout.contains("https://as.example"), "{run:?}");
        assert!(run.stdout.contains("mcp:read"), "{run:?}");
        assert!(!run.stdout.contains(SECRET) && !run.stdout.contains("refresh-5ecr3t"));
    }

    // `logout` forgets it: the next command sends none.
    let run = mcpc_with_store(&store, &["--http", &url, "logout"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.contains("logged out"), "{run:?}");
    let run = mcpc_with_store(&store, &["--http", &url, "auth", "status"]);
    assert!(run.stdout.contains("not logged in"), "{run:?}");
    assert!(!std::fs::read_to_string(&store).unwrap().contains(SECRET));
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_server_that_wants_authorization_says_how_to_log_in() {
    let (url, _) = serve_with(|_, _| (401, None));
    let store = std::env::temp_dir().join(format!("mcpc-no-store-{}.json", std::process::id()));
    let started = std::time::Instant::now();
    let run = mcpc_with_store(&store, &["--http", &url, "--connect-timeout", "20", "ping"]);
    // No terminal: no browser, no prompt, no discovery; at once, exit 6, one line.
    assert_eq!(run.code, 6, "{run:?}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(10),
        "{run:?}"
    );
    assert_eq!(
        run.stderr.trim(),
        format!("mcpc: authorization: the server needs a login: run `mcpc --http {url} login`"),
        "{run:?}"
    );
    assert!(!store.exists(), "nothing written without a login");
}
