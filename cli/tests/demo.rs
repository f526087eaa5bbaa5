//! `mcpc demo` runs by itself, quickly, and shows every step.

mod common;

use std::time::{Duration, Instant};

use common::*;

#[test]
fn demo_shows_every_step_and_exits_0() {
    let start = Instant::now();
    let run = mcpc(&["demo"]);
    let took = start.elapsed();
    expect_code(&run, 0);
    assert!(took < Duration::from_secs(15), "the demo took {took:?}");
    let out = &run.stdout;
    for n in 1..=7 {
        assert!(
            out.contains(&format!("[{n}/7] ")),
            "step {n} missing:\n{out}"
        );
    }
    let expect = [
        // 1: connect, live transitions and server info.
        "starting     -> probing      event transport_up",
        "probing      -> initializing event response",
        "initializing -> ready        event response",
        "connected in ",
        "mcp-chaos-server",
        "era legacy (handshake)",
        // 2: tools.
        " tools: echo, add, slow",
        r#"echo {"message":"hello from mcpc"} -> Echo: hello from mcpc"#,
        r#"add {"a":2,"b":3} -> 5"#,
        // 3: progress, as lines without a terminal.
        "progress 1/5 step 1 of 5",
        "progress 5/5 step 5 of 5",
        "-> slept 1500 ms in 5 steps (5 progress notifications)",
        // 3: a task, polled to its end.
        "task task-",
        " completed",
        "-> done after 400 ms",
        // 4: crash, backoff, reconnect, then a successful call.
        "ready        -> backoff      event transport_down",
        "backoff      -> starting     event reconnect",
        "the die call was answered with an error: connection lost: the peer closed the connection",
        "echo -> Echo: still here",
        // 5: timeout, then the late answer dropped.
        "error: request timed out after 3",
        "late answer for id ",
        " dropped (kind \"late\"",
        // 6: stop.
        "ready        -> closing      event stop",
        "closing      -> closed",
        "stop() returned in ",
        "state closed; transport closed",
        "a call now: error: client is shut down",
        // 7: a group of two child processes from an mcpServers configuration.
        r#""alpha": {"command": "${MCPC}", "args": ["__test-server"]}"#,
        "started at once in ",
        "alpha ready (pid ",
        "beta ready (pid ",
        "44 tools merged: the 14 names both servers list, each prefixed with its server",
        "(alpha__echo, beta__echo, alpha__add, beta__add, …); beta's 16 others bare (die, hang,",
        r#"alpha__add {"a":2,"b":3} -> 5 (routed to alpha as add)"#,
        "kill -9 ",
        "[beta] ready        -> backoff      event transport_down",
        "alpha__echo -> Echo: still answering",
        "beta__echo, called now, waits for beta's handshake (wait_for_ready):",
        "[beta] initializing -> ready        event response",
        "beta__echo -> Echo: back (answered ",
        "reconnects 1, its 30 tools listed again; the merged view still has 44",
        "group.stop(): both servers stopped and reaped in ",
        "Done in ",
    ];
    let mut at = 0;
    for e in expect {
        match out[at..].find(e) {
            Some(i) => at += i + e.len(),
            None => panic!("{e:?} missing (or out of order) in:\n{out}"),
        }
    }
    // The killed server is the one that moves; the other one never does.
    let step7 = &out[out.find("[7/7]").unwrap()..];
    assert!(!step7.contains("[alpha] ready "), "{step7}");
    // The reconnect shows the backoff, a fresh transport, and the handshake again, without a
    // probe: the server was found legacy and the verdict is kept.
    let step4 = &out[out.find("[4/7]").unwrap()..out.find("[5/7]").unwrap()];
    assert!(step4.contains("starting     -> initializing"), "{step4}");
    assert!(step4.contains("initializing -> ready"), "{step4}");
    assert!(!step4.contains("-> probing"), "{step4}");
}
