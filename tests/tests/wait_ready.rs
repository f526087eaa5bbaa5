//! Waiting for ready (`wait_for_ready`, per client or per call), and the single-connection
//! fixes a host of many servers needs: the server's process id, `ready()` right after the
//! process was killed, and `state()` agreeing with the transitions feed.

use std::time::Duration;

use mcp_runtime::{ClientBuilder, ConnState, Error, RequestOptions};
use mcp_tests::{eventually, pid_gone, session_info, stdio};
use serde_json::json;

const ECHO: &str = env!("CARGO_BIN_EXE_test-echo-server");

/// Whether the kernel says process `pid` is dead: a zombie, or gone.
fn dead(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

fn kill9(pid: u32) {
    std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap();
}

#[tokio::test]
async fn a_call_made_before_the_handshake_waits_for_it_when_asked_and_is_turned_away_when_not() {
    // Not asked: the call made while starting is answered at once with Unavailable.
    let client = stdio(ECHO, &[]).connect_lazy();
    let err = client
        .call_tool("echo", json!({"message": "early"}))
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::Unavailable { state, .. } if state != ConnState::Ready),
        "{err:?}"
    );
    client.stop().await;

    // Asked by the client's default: the same call waits and gets its result.
    let client = stdio(ECHO, &[]).wait_for_ready(true).connect_lazy();
    assert_ne!(client.state(), ConnState::Ready);
    let calls: Vec<_> = (0..20)
        .map(|i| {
            let c = client.clone();
            tokio::spawn(async move {
                c.call_tool("echo", json!({"message": format!("m{i}")}))
                    .await
            })
        })
        .collect();
    for (i, call) in calls.into_iter().enumerate() {
        assert_eq!(call.await.unwrap().unwrap().text(), format!("Echo: m{i}"));
    }
    client.stop().await;
    client.closed().await;
}

#[tokio::test]
async fn a_waiting_call_rides_out_a_crash_and_a_call_can_refuse_to_wait() {
    let client = stdio(ECHO, &[])
        .backoff(Duration::from_millis(300), Duration::from_secs(1), 0)
        .wait_for_ready(true)
        .connect()
        .await
        .unwrap();
    let pid = client
        .server_pid()
        .expect("a stdio client names its server's pid");
    let seen = session_info(&client).await;
    assert_eq!(seen["pid"].as_u64(), Some(u64::from(pid)));
    kill9(pid);
    // Once the kernel says the process is dead (a zombie not reaped yet, or gone), ready()
    // does not say ready for it, even before the driver has read its end. (Between the kill
    // and its delivery nothing can tell: SIGKILL is asynchronous.)
    assert!(eventually(Duration::from_secs(5), || dead(pid)).await);
    tokio::time::timeout(Duration::from_secs(20), client.ready())
        .await
        .expect("ready again within the bound")
        .unwrap();
    let new_pid = client.server_pid().unwrap();
    assert_ne!(new_pid, pid, "ready() returned before the exit was noticed");
    assert!(eventually(Duration::from_secs(5), || pid_gone(pid)).await);

    // Killed again: a call made in backoff that asks not to wait fails at once; one that
    // waits (the client's default) is answered by the next connection.
    kill9(new_pid);
    let mut state = client.watch_state();
    tokio::time::timeout(
        Duration::from_secs(10),
        state.wait_for(|s| *s == ConnState::Backoff),
    )
    .await
    .unwrap()
    .unwrap();
    let err = client
        .call_tool_with(
            "echo",
            json!({"message": "now"}),
            RequestOptions::new().wait_for_ready(false),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Unavailable { .. }), "{err:?}");
    let r = client
        .call_tool("echo", json!({"message": "later"}))
        .await
        .unwrap();
    assert_eq!(r.text(), "Echo: later");
    client.stop().await;
    client.closed().await;
}

#[tokio::test]
async fn a_waiting_call_is_answered_by_its_deadline_by_stop_and_by_its_cancel() {
    // A server that never answers the handshake: the waiting calls never go out.
    let client = ClientBuilder::stdio("sleep", ["30"])
        .init_timeout(Duration::from_secs(30))
        .connect_timeout(Duration::from_secs(30))
        .wait_for_ready(true)
        .connect_lazy();
    let started = tokio::time::Instant::now();
    let err = client
        .call_tool_with(
            "echo",
            json!({"message": "x"}),
            RequestOptions::new().timeout(Duration::from_millis(300)),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Timeout { .. }), "{err:?}");
    assert!(started.elapsed() >= Duration::from_millis(300));

    // Dropped: cancelled (nothing went out); the next one is answered by stop.
    let dropped = tokio::time::timeout(
        Duration::from_millis(50),
        client.call_tool("echo", json!({"message": "y"})),
    )
    .await;
    assert!(dropped.is_err(), "answered before the server was ready");
    let c = client.clone();
    let waiting = tokio::spawn(async move { c.call_tool("echo", json!({"message": "z"})).await });
    tokio::time::sleep(Duration::from_millis(50)).await;
    client.stop().await;
    let err = waiting.await.unwrap().unwrap_err();
    assert!(matches!(err, Error::Shutdown), "{err:?}");
    client.closed().await;
}

#[tokio::test]
async fn the_state_read_on_a_transition_is_that_transitions_state() {
    for _ in 0..5 {
        let builder = stdio(ECHO, &[]);
        let mut transitions = builder.transitions();
        let client = builder.connect_lazy();
        let state = client.watch_state();
        loop {
            let t = tokio::time::timeout(Duration::from_secs(20), transitions.recv())
                .await
                .unwrap()
                .unwrap();
            // The watch never lags the feed: its value is this transition's state or later.
            let now = *state.borrow();
            if t.to() == ConnState::Ready {
                assert_eq!(now, ConnState::Ready, "state() lagged the feed");
                assert_eq!(client.state(), ConnState::Ready);
                break;
            }
        }
        let info = client.server_info().unwrap();
        assert_eq!(info.name, info.name());
        assert!(!info.name.is_empty());
        client.stop().await;
    }
}

#[tokio::test]
async fn a_program_that_does_not_exist_answers_a_waiting_call_unavailable_not_at_its_deadline() {
    let client = ClientBuilder::stdio("/nonexistent/mcp-server", Vec::<String>::new())
        .wait_for_ready(true)
        .connect_lazy();
    // Its own deadline is ten minutes away: an answer well before it is the failure's.
    let answer = tokio::time::timeout(
        Duration::from_secs(60),
        client.call_tool_with(
            "echo",
            json!({"message": "x"}),
            RequestOptions::new().timeout(Duration::from_secs(600)),
        ),
    )
    .await
    .expect("answered by the spawn failure, not left waiting");
    let err = answer.unwrap_err();
    assert!(
        matches!(&err, Error::Unavailable { last_error: Some(mcp_runtime::Failure::Transport(t)), .. } if t.is_permanent()),
        "{err:?}"
    );
    client.stop().await;
}
