//! Scripted scenarios through the sans-IO machine: inputs with explicit time, actions checked.

use std::time::Duration;

use mcp_machine::{
    Action, CallError, CallId, CallOptions, CallRequest, Config, EraMode, Failure, Input, Machine,
    ROWS, Report, SendOutcome, SendToken, State, TransportError,
};
use serde_json::{Value, json};

const MS: Duration = Duration::from_millis(1);

/// The default configuration in the handshake era: these scenarios script the `initialize`
/// handshake, without the `server/discover` probe that the default (`auto`) sends first.
fn legacy() -> Config {
    Config {
        era: EraMode::Legacy,
        ..Config::default()
    }
}

fn drain(m: &mut Machine) -> Vec<Action> {
    std::iter::from_fn(|| m.poll_action()).collect()
}

/// Feeds an input and answers every send with `outcome` (as the driver does), returning all actions.
fn feed(m: &mut Machine, input: Input, now: Duration, outcome: SendOutcome) -> Vec<Action> {
    m.handle(input, now);
    settle(m, now, outcome)
}

fn settle(m: &mut Machine, now: Duration, outcome: SendOutcome) -> Vec<Action> {
    let mut all = Vec::new();
    while let Some(a) = m.poll_action() {
        if let Action::Send {
            generation, token, ..
        } = &a
        {
            m.handle(
                Input::SendResult {
                    generation: *generation,
                    token: *token,
                    outcome,
                },
                now,
            );
        }
        all.push(a);
    }
    all
}

fn sent(actions: &[Action]) -> Vec<Value> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::Send { frame, .. } => serde_json::from_slice(frame).ok(),
            _ => None,
        })
        .collect()
}

fn frame(v: Value) -> Vec<u8> {
    serde_json::to_vec(&v).unwrap()
}

/// A machine in ready on generation 1, its init id 1 answered.
fn ready(config: Config) -> Machine {
    let (m, acts) = handshake(config, SendOutcome::Ok);
    assert_eq!(sent(&acts)[0]["method"], "notifications/initialized");
    assert_eq!(m.state(), State::Ready);
    assert_eq!(m.server().unwrap().protocol_version, "2025-06-18");
    m
}

/// Generation 1 up and its `initialize` answered; the sends of that answer's step get
/// `outcome`. Returns the machine and that step's actions.
fn handshake(config: Config, outcome: SendOutcome) -> (Machine, Vec<Action>) {
    let mut m = Machine::new(config, 42, Duration::ZERO);
    assert_eq!(drain(&mut m), [Action::SpawnTransport { generation: 1 }]);
    let acts = feed(
        &mut m,
        Input::TransportUp { generation: 1 },
        MS,
        SendOutcome::Ok,
    );
    let init = &sent(&acts)[0];
    assert_eq!(init["method"], "initialize");
    assert_eq!(init["id"], 1);
    assert_eq!(init["params"]["protocolVersion"], "2025-11-25");
    assert!(
        acts.iter()
            .any(|a| matches!(a, Action::GrantCredit { generation: 1, .. }))
    );
    let result = json!({"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": "2025-06-18", "capabilities": {}, "serverInfo": {"name": "s", "version": "1"}}});
    let acts = feed(
        &mut m,
        Input::Frame {
            generation: 1,
            bytes: frame(result),
        },
        2 * MS,
        outcome,
    );
    (m, acts)
}

fn call(id: u64) -> Input {
    call_with(id, CallOptions::default())
}

fn call_with(id: u64, options: CallOptions) -> Input {
    Input::Call(CallRequest {
        call: CallId(id),
        method: "tools/call".into(),
        params: Some(json!({"name": "t"})),
        options,
        session: None,
    })
}

fn reply_of(actions: &[Action], id: u64) -> Option<&Result<mcp_machine::Payload, CallError>> {
    actions.iter().find_map(|a| match a {
        Action::Reply { call, outcome, .. } if call.0 == id => Some(outcome),
        _ => None,
    })
}

#[test]
fn busy_sends_retry_three_times_then_backpressure() {
    let mut m = ready(legacy());
    let acts = feed(&mut m, call(7), 10 * MS, SendOutcome::Busy);
    assert_eq!(sent(&acts).len(), 1);
    let mut sends = 1;
    let mut now = 10 * MS;
    let mut last = Vec::new();
    for _ in 0..5 {
        let Some(at) = m.poll_timeout() else { break };
        assert!(at <= now + 15 * MS, "retry within 10 ms ± 50 %");
        now = at;
        m.handle_timeout(now);
        last = settle(&mut m, now, SendOutcome::Busy);
        sends += sent(&last).len();
        if reply_of(&last, 7).is_some() {
            break;
        }
    }
    assert_eq!(sends, 3);
    assert_eq!(
        reply_of(&last, 7),
        Some(&Err(CallError::Backpressure { attempts: 3 }))
    );
    assert_eq!(m.calls_in_flight(), 0);
}

#[test]
fn a_busy_send_then_ok_goes_through() {
    let mut m = ready(legacy());
    feed(&mut m, call(1), 10 * MS, SendOutcome::Busy);
    let at = m.poll_timeout().unwrap();
    m.handle_timeout(at);
    let acts = settle(&mut m, at, SendOutcome::Ok);
    let id = sent(&acts)[0]["id"].as_u64().unwrap();
    let acts = feed(
        &mut m,
        Input::Frame {
            generation: 1,
            bytes: frame(json!({"jsonrpc": "2.0", "id": id, "result": {"ok": 1}})),
        },
        at,
        SendOutcome::Ok,
    );
    assert_eq!(reply_of(&acts, 1), Some(&Ok(json!({"ok": 1}).into())));
}

#[test]
fn timeout_cancels_on_the_wire_and_the_late_answer_is_reported_late() {
    let mut m = ready(legacy());
    let acts = feed(&mut m, call(1), 10 * MS, SendOutcome::Ok);
    let id = sent(&acts)[0]["id"].as_u64().unwrap();
    let deadline = m.poll_timeout().unwrap();
    assert_eq!(deadline, 10 * MS + Duration::from_secs(30));
    m.handle_timeout(deadline);
    let acts = settle(&mut m, deadline, SendOutcome::Ok);
    assert!(matches!(
        reply_of(&acts, 1),
        Some(Err(CallError::Timeout { .. }))
    ));
    let cancel = &sent(&acts)[0];
    assert_eq!(cancel["method"], "notifications/cancelled");
    assert_eq!(cancel["params"]["requestId"], id);
    let late = frame(json!({"jsonrpc": "2.0", "id": id, "result": {}}));
    let acts = feed(
        &mut m,
        Input::Frame {
            generation: 1,
            bytes: late,
        },
        deadline + MS,
        SendOutcome::Ok,
    );
    assert!(acts.contains(&Action::Report(Report::LateResponse { id })));
    assert!(reply_of(&acts, 1).is_none());
}

#[test]
fn ids_are_never_reused_across_reconnects() {
    let mut m = ready(legacy());
    let acts = feed(&mut m, call(1), 10 * MS, SendOutcome::Ok);
    assert_eq!(sent(&acts)[0]["id"], 2);
    let acts = feed(
        &mut m,
        Input::TransportDown {
            generation: 1,
            error: TransportError::Truncated { partial: 1 },
        },
        20 * MS,
        SendOutcome::Ok,
    );
    assert!(matches!(
        reply_of(&acts, 1),
        Some(Err(CallError::ConnectionLost(Failure::Transport(
            TransportError::Truncated { .. }
        ))))
    ));
    assert_eq!(m.state(), State::Backoff);
    let at = m.poll_timeout().unwrap();
    m.handle_timeout(at);
    assert!(drain(&mut m).contains(&Action::SpawnTransport { generation: 2 }));
    let acts = feed(
        &mut m,
        Input::TransportUp { generation: 2 },
        at,
        SendOutcome::Ok,
    );
    assert_eq!(
        sent(&acts)[0]["id"],
        3,
        "initialize takes the next id, never 1 again"
    );
}

#[test]
fn stale_generations_change_nothing() {
    let mut m = ready(legacy());
    let before = m.clone();
    for input in [
        Input::TransportDown {
            generation: 0,
            error: TransportError::Truncated { partial: 1 },
        },
        Input::TransportUp { generation: 9 },
        Input::Frame {
            generation: 0,
            bytes: b"{}".to_vec(),
        },
        Input::SendResult {
            generation: 0,
            token: SendToken::Request(1),
            outcome: SendOutcome::Failed,
        },
    ] {
        m.handle(input, 2 * MS);
        assert!(drain(&mut m).is_empty());
        assert_eq!(m, before);
    }
}

#[test]
fn frame_limit_exactly_accepted_one_more_byte_closes() {
    let mut m = ready(Config {
        max_frame_bytes: 256,
        ..legacy()
    });
    let mut ok = br#"{"jsonrpc":"2.0","method":"x","params":{"p":""#.to_vec();
    ok.resize(256 - 3, b'a');
    ok.extend_from_slice(br#""}}"#);
    assert_eq!(ok.len(), 256);
    let acts = feed(
        &mut m,
        Input::Frame {
            generation: 1,
            bytes: ok.clone(),
        },
        3 * MS,
        SendOutcome::Ok,
    );
    assert!(acts.iter().any(|a| matches!(a, Action::Notification(_))));
    ok.insert(10, b' ');
    let acts = feed(
        &mut m,
        Input::Frame {
            generation: 1,
            bytes: ok,
        },
        4 * MS,
        SendOutcome::Ok,
    );
    assert!(acts.contains(&Action::Report(Report::Oversized {
        size: 257,
        max: 256
    })));
    assert!(acts.contains(&Action::CloseTransport { generation: 1 }));
    assert_eq!(m.state(), State::Backoff);
}

#[test]
fn stop_answers_every_call_once_and_is_idempotent() {
    let mut m = ready(legacy());
    feed(&mut m, call(1), 10 * MS, SendOutcome::Ok);
    feed(&mut m, call(2), 10 * MS, SendOutcome::Busy);
    let acts = feed(
        &mut m,
        Input::Stop { call: CallId(100) },
        11 * MS,
        SendOutcome::Ok,
    );
    assert_eq!(reply_of(&acts, 1), Some(&Err(CallError::Shutdown)));
    assert_eq!(reply_of(&acts, 2), Some(&Err(CallError::Shutdown)));
    assert!(acts.contains(&Action::StopDone {
        call: CallId(100),
        already: false
    }));
    assert!(sent(&acts).is_empty(), "no cancel on shutdown");
    assert_eq!(m.state(), State::Closing);
    let acts = feed(
        &mut m,
        Input::Stop { call: CallId(101) },
        12 * MS,
        SendOutcome::Ok,
    );
    assert_eq!(
        acts,
        [Action::StopDone {
            call: CallId(101),
            already: true
        }]
    );
    let at = m.poll_timeout().unwrap();
    assert_eq!(at, 11 * MS + Duration::from_millis(100));
    m.handle_timeout(at);
    assert_eq!(drain(&mut m), [Action::Exit]);
    assert_eq!(m.state(), State::Closed);
    assert_eq!(m.poll_timeout(), None, "no timer outlives closing");
    let acts = feed(&mut m, call(3), at, SendOutcome::Ok);
    assert_eq!(reply_of(&acts, 3), Some(&Err(CallError::Shutdown)));
}

#[test]
fn server_ping_is_answered_during_the_handshake() {
    let mut m = Machine::new(legacy(), 1, Duration::ZERO);
    drain(&mut m);
    feed(
        &mut m,
        Input::TransportUp { generation: 1 },
        MS,
        SendOutcome::Ok,
    );
    let ping = frame(json!({"jsonrpc": "2.0", "id": "p1", "method": "ping"}));
    let acts = feed(
        &mut m,
        Input::Frame {
            generation: 1,
            bytes: ping,
        },
        2 * MS,
        SendOutcome::Ok,
    );
    assert_eq!(
        sent(&acts),
        [json!({"jsonrpc": "2.0", "id": "p1", "result": {}})]
    );
    assert_eq!(m.state(), State::Initializing);
}

#[test]
fn an_unsupported_version_backs_off_with_the_reason() {
    let mut m = Machine::new(legacy(), 1, Duration::ZERO);
    drain(&mut m);
    feed(
        &mut m,
        Input::TransportUp { generation: 1 },
        MS,
        SendOutcome::Ok,
    );
    let bad =
        frame(json!({"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": "1999-01-01"}}));
    let acts = feed(
        &mut m,
        Input::Frame {
            generation: 1,
            bytes: bad,
        },
        2 * MS,
        SendOutcome::Ok,
    );
    assert!(acts.contains(&Action::CloseTransport { generation: 1 }));
    assert_eq!(m.state(), State::Backoff);
    assert!(
        matches!(m.last_error(), Some(Failure::UnsupportedVersion { version }) if version == "1999-01-01")
    );
    let acts = feed(&mut m, call(1), 3 * MS, SendOutcome::Ok);
    assert!(matches!(
        reply_of(&acts, 1),
        Some(Err(CallError::Unavailable {
            state: State::Backoff,
            retry_in: Some(_),
            ..
        }))
    ));
}

/// The generated match and the table-driven interpretation of `ROWS` agree, input for input.
#[test]
fn compiled_dispatch_equals_the_interpreted_table() {
    let mut a = Machine::new(legacy(), 5, Duration::ZERO);
    let mut b = Machine::new(legacy(), 5, Duration::ZERO).with_rows(ROWS.to_vec(), Vec::new());
    let inputs = [
        Input::TransportUp { generation: 1 },
        Input::Frame {
            generation: 1,
            bytes: frame(
                json!({"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": "2025-11-25"}}),
            ),
        },
        call(1),
        Input::Frame {
            generation: 1,
            bytes: b"garbage".to_vec(),
        },
        Input::Frame {
            generation: 1,
            bytes: frame(json!({"jsonrpc": "2.0", "id": "x", "method": "roots/list"})),
        },
        Input::Cancel { call: CallId(1) },
        call(2),
        Input::TransportDown {
            generation: 1,
            error: TransportError::Truncated { partial: 1 },
        },
        call(3),
        Input::Stop { call: CallId(9) },
        Input::Stop { call: CallId(10) },
    ];
    for (i, input) in inputs.into_iter().enumerate() {
        let now = MS * u32::try_from(i).unwrap();
        let sa = a.handle(input.clone(), now);
        let sb = b.handle(input, now);
        assert_eq!(sa, sb);
        assert_eq!(
            settle(&mut a, now, SendOutcome::Ok),
            settle(&mut b, now, SendOutcome::Ok)
        );
        let (ta, tb) = (
            a.handle_timeout(now + Duration::from_secs(40)),
            b.handle_timeout(now + Duration::from_secs(40)),
        );
        assert_eq!(ta, tb);
        assert_eq!(
            settle(&mut a, now, SendOutcome::Ok),
            settle(&mut b, now, SendOutcome::Ok)
        );
    }
}

#[test]
fn owed_frames_wait_out_a_busy_transport_in_order_and_are_never_dropped() {
    let mut m = ready(legacy());
    // Two pings while the transport is busy: the first answer is offered and found busy, the
    // second waits behind it; nothing is lost.
    let ping = |id: u64| Input::Frame {
        generation: 1,
        bytes: frame(json!({"jsonrpc": "2.0", "id": id, "method": "ping"})),
    };
    let acts = feed(&mut m, ping(10), 10 * MS, SendOutcome::Busy);
    assert_eq!(sent(&acts).len(), 1, "{acts:?}");
    let acts = feed(&mut m, ping(11), 11 * MS, SendOutcome::Busy);
    assert!(sent(&acts).is_empty(), "the second answer waits: {acts:?}");
    // The owed retry timer offers the head again; once taken, the next follows at once.
    let at = m.poll_timeout().expect("the owed retry timer is armed");
    assert!(at <= 10 * MS + Duration::from_millis(15), "{at:?}");
    m.handle_timeout(at);
    let acts = settle(&mut m, at, SendOutcome::Ok);
    let ids: Vec<_> = sent(&acts).iter().map(|v| v["id"].clone()).collect();
    assert_eq!(ids, [json!(10), json!(11)], "{acts:?}");
    // A cancel owed for a timed-out call goes the same way.
    let acts = feed(
        &mut m,
        call_with(
            1,
            CallOptions {
                timeout: Some(Duration::from_secs(1)),
                ..CallOptions::default()
            },
        ),
        20 * MS,
        SendOutcome::Ok,
    );
    assert_eq!(sent(&acts).len(), 1);
    m.handle_timeout(20 * MS + Duration::from_secs(1));
    let acts = settle(&mut m, 20 * MS + Duration::from_secs(1), SendOutcome::Busy);
    assert_eq!(sent(&acts)[0]["method"], "notifications/cancelled");
    let at = m.poll_timeout().expect("retry armed");
    m.handle_timeout(at);
    let acts = settle(&mut m, at, SendOutcome::Ok);
    assert_eq!(
        sent(&acts)[0]["method"],
        "notifications/cancelled",
        "{acts:?}"
    );
}

#[test]
fn initialized_refused_ends_the_attempt() {
    let (m, acts) = handshake(legacy(), SendOutcome::Failed);
    assert_eq!(m.state(), State::Backoff, "{acts:?}");
    assert!(acts.contains(&Action::CloseTransport { generation: 1 }));
}

#[test]
fn an_invalid_error_fails_its_call_at_once_with_a_typed_error() {
    let mut m = ready(legacy());
    let acts = feed(&mut m, call(1), 10 * MS, SendOutcome::Ok);
    let id = sent(&acts)[0]["id"].clone();
    let acts = feed(
        &mut m,
        Input::Frame {
            generation: 1,
            bytes: frame(json!({"jsonrpc": "2.0", "id": id, "error": {"code": "E42"}})),
        },
        11 * MS,
        SendOutcome::Ok,
    );
    assert!(
        acts.iter().any(|a| matches!(
            a,
            Action::Reply {
                call: CallId(1),
                outcome: Err(CallError::InvalidResponse { .. }),
                ..
            }
        )),
        "{acts:?}"
    );
}
