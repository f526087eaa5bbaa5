//! `mcpc` against a hostile protected server (issue 29, defect 1): the URLs it names never
//! reach the desktop opener unless they are `https` (or `http` to a loopback host), a plain
//! command without a terminal never starts a login, and `mcpc login` refuses what the URL
//! policy refuses, with the rule in its one error line.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;

/// A server answering by path: `/mcp` with 401 and a challenge naming its metadata, the
/// metadata documents naming `authorization_endpoint`; every request's path is logged.
fn hostile(authorization_endpoint: &'static str) -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    let origin = base.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            let mut w = stream.try_clone().unwrap();
            let mut r = BufReader::new(stream);
            let mut line = String::new();
            if r.read_line(&mut line).unwrap_or(0) == 0 {
                continue;
            }
            let path = line.split(' ').nth(1).unwrap_or("").to_owned();
            let mut len = 0;
            loop {
                let mut h = String::new();
                if r.read_line(&mut h).unwrap_or(0) == 0 {
                    break;
                }
                let h = h.trim_end().to_ascii_lowercase();
                if h.is_empty() {
                    break;
                }
                if let Some(v) = h.strip_prefix("content-length:") {
                    len = v.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0; len];
            let _ = r.read_exact(&mut body);
            log.lock().unwrap().push(path.clone());
            let (status, extra, doc) = if path.starts_with("/.well-known/oauth-protected-resource")
            {
                (
                    200,
                    String::new(),
                    json!({"resource": format!("{origin}/mcp"), "authorization_servers": [origin.clone()]}),
                )
            } else if path.starts_with("/.well-known/oauth-authorization-server") {
                (
                    200,
                    String::new(),
                    json!({"issuer": origin.clone(),
                        "authorization_endpoint": authorization_endpoint,
                        "token_endpoint": format!("{origin}/token"),
                        "registration_endpoint": format!("{origin}/register"),
                        "code_challenge_methods_supported": ["S256"]}),
                )
            } else if path.starts_with("/register") {
                (200, String::new(), json!({"client_id": "c1"}))
            } else {
                (
                    401,
                    format!(
                        "www-authenticate: Bearer resource_metadata=\"{origin}/.well-known/oauth-protected-resource/mcp\"\r\n"
                    ),
                    json!({"error": "invalid_token"}),
                )
            };
            let doc = doc.to_string();
            let _ = write!(
                w,
                "HTTP/1.1 {status} X\r\nconnection: close\r\n{extra}content-type: application/json\r\ncontent-length: {}\r\n\r\n{doc}",
                doc.len()
            );
        }
    });
    (format!("{base}/mcp"), seen)
}

/// A directory holding fake `xdg-open` and `open` that record their argument in `opened`.
fn fake_opener(dir: &std::path::Path) -> std::path::PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let opened = dir.join("opened");
    for name in ["xdg-open", "open"] {
        let path = dir.join(name);
        std::fs::write(
            &path,
            format!(
                "#!/bin/sh\nprintf '%s\\n' \"$1\" >> '{}'\n",
                opened.display()
            ),
        )
        .unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
    }
    opened
}

fn run(dir: &std::path::Path, args: &[&str]) -> (common::Run, Duration) {
    let path = format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let started = Instant::now();
    let out = Command::new(common::MCPC)
        .args(args)
        .env("MCPC_TOKEN_STORE", dir.join("tokens.json"))
        .env("PATH", path)
        .env("DISPLAY", ":0")
        .stdin(Stdio::null())
        .output()
        .expect("mcpc runs");
    (out.into(), started.elapsed())
}

#[test]
fn a_login_never_opens_a_url_of_another_scheme() {
    let dir = std::env::temp_dir().join(format!("mcpc-hostile-auth-{}", std::process::id()));
    let opened = fake_opener(&dir);
    for endpoint in [
        "file:///etc/passwd",
        "http://as.example/authorize",
        "smb://attacker/share",
    ] {
        let (url, seen) = hostile(endpoint);
        let (run, took) = run(&dir, &["--http", &url, "login"]);
        assert_eq!(run.code, 3, "{endpoint}: {run:?}");
        assert!(
            run.stderr.contains("authorization endpoint") && run.stderr.contains("only https"),
            "{endpoint}: {run:?}"
        );
        assert!(took < Duration::from_secs(10), "{endpoint}: {took:?}");
        assert!(
            !opened.exists(),
            "{endpoint}: opened {:?}",
            std::fs::read_to_string(&opened)
        );
        // Nothing registered with a server whose endpoints break the policy.
        assert!(
            !seen
                .lock()
                .unwrap()
                .iter()
                .any(|p| p.starts_with("/register")),
            "{endpoint}: {:?}",
            seen.lock().unwrap()
        );
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_plain_command_without_a_terminal_never_starts_a_login() {
    let dir = std::env::temp_dir().join(format!("mcpc-hostile-cmd-{}", std::process::id()));
    let opened = fake_opener(&dir);
    // An authorization endpoint that would pass the policy: still not opened by `tools call`.
    let (url, seen) = hostile("https://as.example/authorize");
    let (run, took) = run(
        &dir,
        &[
            "--http",
            &url,
            "--connect-timeout",
            "30",
            "tools",
            "call",
            "echo",
        ],
    );
    assert_eq!(run.code, 6, "{run:?}");
    assert_eq!(
        run.stderr.trim(),
        format!("mcpc: authorization: the server needs a login: run `mcpc --http {url} login`")
    );
    assert!(took < Duration::from_secs(10), "{took:?}");
    assert!(!opened.exists());
    // No discovery either: only the MCP endpoint was asked.
    assert!(
        seen.lock().unwrap().iter().all(|p| p == "/mcp"),
        "{:?}",
        seen.lock().unwrap()
    );
    let _ = std::fs::remove_dir_all(dir);
}
