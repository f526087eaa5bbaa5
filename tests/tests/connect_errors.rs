//! A failed `connect()` explains itself: a typed cause (spawn error with its kind, exit code,
//! the server's refusal, an unsupported version, a timeout with its bound), the server's last
//! stderr lines, and a one-line `Display` for a host's log.

use std::time::Duration;

use mcp_runtime::transport::StreamConnector;
use mcp_runtime::{ClientBuilder, ConnectError, Error, Failure, TransportError};
use mcp_tests::stdio;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

const ECHO: &str = env!("CARGO_BIN_EXE_test-echo-server");

async fn connect_error(builder: ClientBuilder) -> ConnectError {
    match builder.connect().await {
        Err(Error::Connect(e)) => *e,
        Err(other) => panic!("not a connect error: {other:?}"),
        Ok(_) => panic!("connected"),
    }
}

fn sh(script: &str) -> ClientBuilder {
    ClientBuilder::stdio("sh", ["-c", script])
}

#[tokio::test]
async fn a_program_that_does_not_exist_is_a_permanent_spawn_error() {
    let e = connect_error(stdio("/nonexistent/server", &[])).await;
    assert!(
        matches!(&e.cause, Failure::Transport(TransportError::Spawn(io)) if io.kind() == std::io::ErrorKind::NotFound),
        "{e:?}"
    );
    assert!(e.is_permanent());
    assert!(e.stderr_tail.is_empty());
    assert!(
        e.to_string().starts_with(
            "could not connect to stdio: /nonexistent/server: failed to spawn the server process"
        ),
        "{e}"
    );
}

#[tokio::test]
async fn a_server_that_exits_gives_its_exit_code_and_its_last_stderr_lines() {
    let e = connect_error(sh(
        "echo starting >&2; printf 'boom: missing API_KEY\\r\\n' >&2; exit 3",
    ))
    .await;
    assert!(
        matches!(
            &e.cause,
            Failure::Transport(TransportError::ChildExited {
                code: Some(3),
                signal: None
            })
        ),
        "{e:?}"
    );
    assert!(!e.is_permanent());
    assert_eq!(e.stderr_tail, ["starting", "boom: missing API_KEY"]);
    assert!(
        e.to_string().ends_with(
            "server process exited (exit code 3); the server's last stderr line: boom: missing API_KEY"
        ),
        "{e}"
    );
}

#[tokio::test]
async fn the_stderr_tail_is_bounded_and_server_text_cannot_drive_a_terminal() {
    let e = connect_error(sh(
        "i=0; while [ $i -lt 50 ]; do echo line $i >&2; i=$((i+1)); done; \
         printf 'evil \\033]0;pwned\\007 end\\n' >&2; exit 1",
    ))
    .await;
    assert_eq!(e.stderr_tail.len(), 20);
    assert_eq!(e.stderr_tail[0], "line 31");
    // Raw in the field, escaped in the message.
    assert!(e.stderr_tail[19].contains('\u{1b}'));
    let shown = e.to_string();
    assert!(!shown.chars().any(|c| c.is_control()), "{shown:?}");
    assert!(shown.ends_with("evil \\u{1b}]0;pwned\\u{7} end"), "{shown}");
}

#[tokio::test]
async fn a_server_that_never_answers_times_out_with_the_bound() {
    let e = connect_error(
        sh("echo 'installing...' >&2; exec sleep 30").connect_timeout(Duration::from_millis(300)),
    )
    .await;
    assert!(
        matches!(&e.cause, Failure::InitTimeout { after } if *after == Duration::from_millis(300)),
        "{e:?}"
    );
    assert!(e.to_string().contains("within 300 ms"), "{e}");
    assert_eq!(e.stderr_tail, ["installing..."]);
}

#[tokio::test]
async fn an_unsupported_protocol_version_is_refused() {
    let e = connect_error(stdio(ECHO, &["--version-override", "1999-01-01"])).await;
    assert!(
        matches!(&e.cause, Failure::UnsupportedVersion { version } if version == "1999-01-01"),
        "{e:?}"
    );
}

#[tokio::test]
async fn the_servers_refusal_of_initialize_is_kept_typed() {
    let connector = StreamConnector::from_fn(|| async {
        let (client, server) = tokio::io::duplex(1 << 16);
        let (sr, mut sw) = tokio::io::split(server);
        tokio::spawn(async move {
            // A 2025-11-25 server: the probe is an unknown method, `initialize` is refused.
            let mut lines = BufReader::new(sr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let msg: Value = serde_json::from_str(&line).unwrap();
                let error = match msg["method"].as_str() {
                    Some("server/discover") => json!({"code": -32601, "message": "no such method"}),
                    Some("initialize") => json!({"code": -32001, "message": "license expired"}),
                    _ => continue,
                };
                let reply = json!({"jsonrpc": "2.0", "id": msg["id"], "error": error});
                let mut bytes = serde_json::to_vec(&reply).unwrap();
                bytes.push(b'\n');
                let _ = sw.write_all(&bytes).await;
            }
        });
        let (cr, cw) = tokio::io::split(client);
        Ok((cr, cw))
    });
    let e = connect_error(ClientBuilder::new(connector)).await;
    assert!(
        matches!(&e.cause, Failure::Refused(rpc) if rpc.code == -32001 && rpc.message == "license expired"),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        "could not connect to in-process stream: the server refused initialize: license expired (-32001)"
    );
}

#[tokio::test]
async fn the_builders_stdio_options_reach_the_server() {
    let dir = std::env::temp_dir();
    let e = connect_error(
        sh("echo \"key=$API_KEY home=[$HOME] cwd=$(pwd)\" >&2; exit 1")
            .env("API_KEY", "k1")
            .current_dir(&dir)
            .shutdown_grace(Duration::from_millis(100)),
    )
    .await;
    let home = std::env::var("HOME").unwrap_or_default();
    let cwd = dir.canonicalize().unwrap();
    assert_eq!(
        e.stderr_tail,
        [format!("key=k1 home=[{home}] cwd={}", cwd.display())]
    );
    // A command built argument by argument, as with std::process::Command.
    let e = connect_error(
        ClientBuilder::command("sh")
            .arg("-c")
            .arg("echo \"args=$0\" >&2; exit 1")
            .arg("zero"),
    )
    .await;
    assert_eq!(e.stderr_tail, ["args=zero"]);
    // env_clear: nothing inherited, not even HOME.
    let e = connect_error(sh("echo \"home=[$HOME]\" >&2; exit 1").env_clear()).await;
    assert_eq!(e.stderr_tail, ["home=[]"]);
}

#[tokio::test]
async fn a_lazy_client_keeps_trying_but_ready_reports_a_permanent_failure() {
    let client = stdio("/nonexistent/server", &[])
        .backoff(Duration::from_millis(10), Duration::from_millis(20), 0)
        .connect_lazy();
    let err = tokio::time::timeout(Duration::from_secs(5), client.ready())
        .await
        .expect("ready returns for a permanent failure")
        .unwrap_err();
    assert!(
        matches!(&err, Error::Unavailable { last_error: Some(Failure::Transport(TransportError::Spawn(io))), .. } if io.kind() == std::io::ErrorKind::NotFound),
        "{err:?}"
    );
    // It keeps trying in the background (the program may be installed later).
    assert!(!client.state().is_terminal());
    client.stop().await;
}
