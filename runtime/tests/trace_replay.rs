//! Trace validation: real runs of the client (the driver over a transport to the in-repo test
//! server) are recorded and replayed into a fresh machine, which must fire the same rows and
//! give the same actions, and the monitors must hold (no impossible row, every caller
//! answered once, nothing sent after a stop, one exit).
//!
//! The scenarios are those of the cross-crate tests in `tests/tests/` (api and resilience).

mod common;

use std::time::Duration;

use common::traced::{assert_replays, in_process, stop_and_replay};
use mcp_machine::{Action, CallError, Input, Payload, Report, State};
use mcp_runtime::trace::Record;
use mcp_runtime::{
    ConnState, CreateMessageParams, CreateMessageResult, Error, Handlers, RequestOptions,
};
use mcp_testserver::ServerConfig;
use serde_json::json;

fn is_reply(a: &Action, f: impl Fn(&Result<Payload, CallError>) -> bool) -> bool {
    matches!(a, Action::Reply { outcome, .. } if f(outcome))
}

#[tokio::test]
async fn handshake_calls_pagination_notify_and_stop_replay() {
    let config = ServerConfig {
        page_size: 2,
        ..ServerConfig::echo()
    };
    let (builder, recorder) = in_process(config);
    let client = builder.connect().await.unwrap();
    client.ping().await.unwrap();
    let all = client.list_all_tools().await.unwrap();
    assert!(all.len() > 2);
    let echo = client
        .call_tool("echo", json!({"message": "hello"}))
        .await
        .unwrap();
    assert_eq!(echo.text(), "Echo: hello");
    let err = client
        .call_tool("no-such-tool", json!({}))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Server { code: -32602, .. }), "{err:?}");
    client
        .notify("notifications/roots/list_changed", None)
        .await
        .unwrap();
    let run = stop_and_replay(client, &recorder).await;
    // ping, the pages, echo, the failed call, the notify: each answered once.
    let pages = all.len().div_ceil(2);
    let ok = run.count(|a| is_reply(a, Result::is_ok));
    assert_eq!(ok, 1 + pages + 1 + 1, "{:?}", run.report);
    assert_eq!(run.count(|a| is_reply(a, Result::is_err)), 1);
    assert_eq!(run.count(|a| matches!(a, Action::StopDone { .. })), 1);
    assert_eq!(run.count(|a| matches!(a, Action::SpawnTransport { .. })), 1);
    assert!(run.report.inputs >= 20, "{:?}", run.report);
}

#[tokio::test(start_paused = true)]
async fn a_timed_out_call_and_its_cancel_replay() {
    let (builder, recorder) = in_process(ServerConfig::chaos());
    let client = builder.connect().await.unwrap();
    let err = client
        .call_tool_with(
            "late",
            json!({"ms": 5_000}),
            RequestOptions::new().timeout(Duration::from_secs(1)),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Timeout { .. }), "{err:?}");
    tokio::time::sleep(Duration::from_secs(6)).await; // past the tool's 5 s
    client.ping().await.unwrap();
    let run = stop_and_replay(client, &recorder).await;
    assert!(run.report.timeouts >= 1, "{:?}", run.report);
    assert_eq!(
        run.count(|a| is_reply(a, |o| matches!(o, Err(CallError::Timeout { .. })))),
        1
    );
    // The cancel went on the wire (the server then never answers: nothing late to drop).
    let cancel = |a: &Action| {
        matches!(a, Action::Send { frame, .. }
            if String::from_utf8_lossy(frame).contains("notifications/cancelled"))
    };
    assert_eq!(run.count(cancel), 1);
    assert_eq!(
        run.count(|a| matches!(a, Action::Report(Report::LateResponse { .. }))),
        0
    );
    // The timeout fired at the recorded time: one second after the call went in.
    let call_at = run.trace.records.iter().find_map(|r| match r {
        Record::Input {
            input: Input::Call(c),
            now,
        } if c.method == "tools/call" => Some(*now),
        _ => None,
    });
    let timed_out_at = run.trace.records.iter().find_map(|r| match r {
        Record::Timeout { now } if Some(*now) >= call_at.map(|t| t + Duration::from_secs(1)) => {
            Some(*now)
        }
        _ => None,
    });
    assert_eq!(
        timed_out_at,
        call_at.map(|t| t + Duration::from_secs(1)),
        "{call_at:?}"
    );
}

#[tokio::test]
async fn a_server_crash_and_the_reconnect_replay() {
    let (builder, recorder) = in_process(ServerConfig::chaos());
    let client = builder
        .backoff(Duration::from_millis(50), Duration::from_millis(200), 20)
        .connect()
        .await
        .unwrap();
    let mut states = client.watch_state();
    let err = client.call_tool("die", json!({})).await.unwrap_err();
    assert!(matches!(err, Error::ConnectionLost(_)), "{err:?}");
    tokio::time::timeout(Duration::from_secs(10), async {
        states.wait_for(|s| *s == ConnState::Backoff).await.unwrap();
        states.wait_for(|s| *s == ConnState::Ready).await.unwrap();
    })
    .await
    .expect("back to ready");
    let again = client
        .call_tool("echo", json!({"message": "back"}))
        .await
        .unwrap();
    assert_eq!(again.text(), "Echo: back");
    let run = stop_and_replay(client, &recorder).await;
    assert_eq!(run.count(|a| matches!(a, Action::SpawnTransport { .. })), 2);
    assert_eq!(
        run.count(|a| is_reply(a, |o| matches!(o, Err(CallError::ConnectionLost(_))))),
        1
    );
    let through = |from: State, to: State| {
        run.trace
            .records
            .iter()
            .any(|r| matches!(r, Record::Step(s) if s.from == from && s.to == to))
    };
    assert!(through(State::Ready, State::Backoff));
    assert!(through(State::Backoff, State::Starting));
    assert!(run.report.timeouts >= 1, "the reconnect is a timer");
}

#[tokio::test]
async fn stop_with_calls_in_flight_replays() {
    let (builder, recorder) = in_process(ServerConfig::echo());
    let client = builder.connect().await.unwrap();
    let mut calls = Vec::new();
    for _ in 0..100 {
        let c = client.clone();
        calls.push(tokio::spawn(async move {
            c.call_tool("slow", json!({"ms": 60_000, "steps": 1})).await
        }));
    }
    // Every call is in flight (its request sent) before the stop.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let run = stop_and_replay(client, &recorder).await;
    for call in calls {
        assert!(matches!(call.await.unwrap(), Err(Error::Shutdown)));
    }
    assert_eq!(
        run.count(|a| is_reply(a, |o| matches!(o, Err(CallError::Shutdown)))),
        100
    );
    assert_eq!(
        run.count(|a| matches!(a, Action::StopDone { already: false, .. })),
        1
    );
}

#[tokio::test]
async fn server_requests_and_handler_replies_replay() {
    let handlers = Handlers::new().sampling(|params: CreateMessageParams, _cx| async move {
        let n = params.messages.len();
        Ok(CreateMessageResult::text("test", format!("sampled {n}")))
    });
    let (builder, recorder) = in_process(ServerConfig::echo());
    let client = builder.handler(handlers).connect().await.unwrap();
    let sampled = client
        .call_tool("sample", json!({"prompt": "hi"}))
        .await
        .unwrap();
    assert!(sampled.text().contains("sampled 1"), "{sampled:?}");
    let run = stop_and_replay(client, &recorder).await;
    assert_eq!(run.count(|a| matches!(a, Action::ServerRequest { .. })), 1);
    let replies = run
        .trace
        .records
        .iter()
        .filter(|r| {
            matches!(
                r,
                Record::Input {
                    input: Input::HandlerReply { .. },
                    ..
                }
            )
        })
        .count();
    assert_eq!(replies, 1);
}

#[tokio::test]
async fn a_dropped_client_stops_by_itself_and_replays() {
    let (builder, recorder) = in_process(ServerConfig::echo());
    let client = builder.connect().await.unwrap();
    client.ping().await.unwrap();
    drop(client);
    // Nobody is left to wait on: wait for the exit in the trace.
    let exited = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let trace = recorder.trace().unwrap();
            if trace
                .records
                .iter()
                .any(|r| matches!(r, Record::Action(Action::Exit)))
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    assert!(exited.is_ok(), "the dropped client never exited");
    let run = assert_replays(&recorder);
    assert!(run.report.exited);
    assert_eq!(
        run.count(|a| matches!(a, Action::StopDone { already: false, .. })),
        1
    );
}

/// A minimal MCP server in Python: answers `initialize`, `ping` and `tools/call` (with its pid),
/// except the tool `hang`, which it never answers.
const PY_SERVER: &str = r#"
import json, os, sys
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg or "method" not in msg:
        continue
    method = msg["method"]
    if method == "initialize":
        result = {"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
                  "serverInfo": {"name": "py", "version": "1"}}
    elif method == "tools/call" and msg["params"]["name"] == "hang":
        continue
    elif method == "tools/call":
        result = {"content": [{"type": "text", "text": str(os.getpid())}]}
    else:
        result = {}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}) + "\n")
    sys.stdout.flush()
"#;

/// A real child over stdio, killed with SIGKILL under a call: the call fails, the client
/// respawns it, and the whole run replays.
#[tokio::test]
async fn a_killed_stdio_child_and_its_respawn_replay() {
    let recorder = mcp_runtime::trace::TraceRecorder::new();
    let client = mcp_runtime::ClientBuilder::stdio("python3", ["-u", "-c", PY_SERVER])
        .seed(7)
        .backoff(Duration::from_millis(100), Duration::from_secs(1), 20)
        .record_trace(recorder.clone())
        .connect()
        .await
        .unwrap();
    let pid_of = |client: mcp_runtime::Client| async move {
        let r = client.call_tool("pid", json!({})).await.unwrap();
        r.text().parse::<u32>().unwrap()
    };
    let pid = pid_of(client.clone()).await;
    let c = client.clone();
    let hung = tokio::spawn(async move { c.call_tool("hang", json!({})).await });
    tokio::time::sleep(Duration::from_millis(200)).await;
    std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap();
    let err = hung.await.unwrap().unwrap_err();
    assert!(matches!(err, Error::ConnectionLost(_)), "{err:?}");
    let mut states = client.watch_state();
    tokio::time::timeout(
        Duration::from_secs(10),
        states.wait_for(|s| *s == ConnState::Ready),
    )
    .await
    .expect("respawned")
    .unwrap();
    let new_pid = pid_of(client.clone()).await;
    assert_ne!(pid, new_pid);
    let run = stop_and_replay(client, &recorder).await;
    assert_eq!(run.count(|a| matches!(a, Action::SpawnTransport { .. })), 2);
    assert_eq!(
        run.count(|a| is_reply(a, |o| matches!(o, Err(CallError::ConnectionLost(_))))),
        1
    );
    assert!(run.report.rows.len() >= 10, "{:?}", run.report);
}
