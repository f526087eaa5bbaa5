//! Tombstone sweep benchmark: what one sweep of the sans-IO machine costs against how many
//! tombstones it drops and how many it keeps. No IO, no runtime: the machine alone, driven as
//! the driver drives it.
//!
//! For each (held, expiring) pair a ready machine gets `expiring` calls cancelled at one
//! instant (each leaves a tombstone) and, one sweep period later, `held - expiring` more; the
//! sweep timed is the first one due after the first batch expired and before the second did.
//! It must drop exactly `expiring` tombstones (checked); the sweeps before it, which drop
//! nothing, are timed too. Prints one JSON line per pair: the median over the rounds of the
//! sweep's time, of its time per tombstone dropped, and of an empty sweep's time.
//!
//! `tombstone_sweep_bench [--rounds R]`

use std::time::{Duration, Instant};

use mcp_machine::{
    Action, CallId, CallOptions, CallRequest, Config, EraMode, Input, Machine, SendOutcome, State,
};
use serde_json::json;

/// Carries out the machine's actions as the driver does: every send is taken.
fn settle(m: &mut Machine, now: Duration) {
    while let Some(action) = m.poll_action() {
        if let Action::Send {
            generation, token, ..
        } = action
        {
            m.handle(
                Input::SendResult {
                    generation,
                    token,
                    outcome: SendOutcome::Ok,
                },
                now,
            );
        }
    }
}

/// A machine past its handshake (generation 1, `initialize` answered) at 2 ms.
fn ready() -> Machine {
    let config = Config {
        era: EraMode::Legacy,
        ..Config::default()
    };
    let mut m = Machine::new(config, 7, Duration::ZERO);
    settle(&mut m, Duration::ZERO);
    let now = Duration::from_millis(1);
    m.handle(Input::TransportUp { generation: 1 }, now);
    settle(&mut m, now);
    let answer = json!({"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": "2025-06-18",
        "capabilities": {}, "serverInfo": {"name": "bench", "version": "1"}}});
    let now = Duration::from_millis(2);
    m.handle(
        Input::Frame {
            generation: 1,
            bytes: serde_json::to_vec(&answer).unwrap_or_default(),
        },
        now,
    );
    settle(&mut m, now);
    assert_eq!(m.state(), State::Ready, "the handshake failed");
    m
}

/// `count` calls made and cancelled at `now`, numbered from `first`.
fn cancelled(m: &mut Machine, first: u64, count: u64, now: Duration) {
    for call in first..first + count {
        m.handle(
            Input::Call(CallRequest {
                call: CallId(call),
                method: "tools/call".into(),
                params: Some(json!({"name": "t"})),
                options: CallOptions::default(),
                session: None,
            }),
            now,
        );
        settle(m, now);
        m.handle(Input::Cancel { call: CallId(call) }, now);
        settle(m, now);
    }
}

/// One round: (the sweep's time, an empty sweep's time), both in nanoseconds.
fn round(held: u64, expiring: u64) -> (f64, f64) {
    let mut m = ready();
    let period = m.config().tombstone_sweep;
    let ttl = m.config().tombstone_ttl;
    let first = Duration::from_millis(10);
    let second = first + period;
    cancelled(&mut m, 1, expiring, first);
    cancelled(&mut m, 1 + expiring, held - expiring, second);
    assert_eq!(
        m.tombstones() as u64,
        held,
        "every cancelled call leaves a tombstone"
    );
    let (mut empty, mut timed) = (Vec::new(), None);
    while let Some(at) = m.poll_timeout() {
        if at >= second + ttl {
            break;
        }
        let before = m.tombstones();
        let start = Instant::now();
        m.handle_timeout(at);
        let took = start.elapsed().as_nanos() as f64;
        settle(&mut m, at);
        let dropped = (before - m.tombstones()) as u64;
        if dropped == 0 {
            empty.push(took);
        } else {
            assert_eq!(dropped, expiring, "the sweep dropped what expired, no more");
            timed = Some(took);
            break;
        }
    }
    let timed = timed.expect("a sweep fell between the two expiries");
    (timed, median(&mut empty))
}

fn median(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rounds = match args.as_slice() {
        [] => 5,
        [flag, r] if flag == "--rounds" => r.parse().unwrap_or(5),
        _ => {
            eprintln!("usage: tombstone_sweep_bench [--rounds R]");
            std::process::exit(2);
        }
    };
    for (held, expiring) in [
        (1_000, 100),
        (10_000, 100),
        (100_000, 100),
        (100_000, 1_000),
        (100_000, 10_000),
        (100_000, 100_000),
    ] {
        let (mut sweeps, mut empties) = (Vec::new(), Vec::new());
        for _ in 0..rounds {
            let (sweep, empty) = round(held, expiring);
            sweeps.push(sweep);
            empties.push(empty);
        }
        let sweep_ns = median(&mut sweeps);
        println!(
            "{{\"mode\":\"sweep\",\"held\":{held},\"expiring\":{expiring},\"sweep_us\":{:.1},\"ns_per_dropped\":{:.1},\"empty_sweep_us\":{:.2}}}",
            sweep_ns / 1e3,
            sweep_ns / expiring as f64,
            median(&mut empties) / 1e3
        );
    }
}
