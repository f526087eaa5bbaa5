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
    for n in 1..=6 {
        assert!(
            out.contains(&format!("[{n}/6] ")),
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
        "Done in ",
    ];
    let mut at = 0;
    for e in expect {
        match out[at..].find(e) {
            Some(i) => at += i + e.len(),
            None => panic!("{e:?} missing (or out of order) in:\n{out}"),
        }
    }
    // The reconnect shows the backoff, a fresh transport, and the handshake again, without a
    // probe: the server was found legacy and the verdict is kept.
    let step4 = &out[out.find("[4/6]").unwrap()..out.find("[5/6]").unwrap()];
    assert!(step4.contains("starting     -> initializing"), "{step4}");
    assert!(step4.contains("initializing -> ready"), "{step4}");
    assert!(!step4.contains("-> probing"), "{step4}");
}
