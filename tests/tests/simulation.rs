//! Deterministic simulation of the runtime: the real driver and client over a simulated
//! network on tokio's paused clock, with seeded faults (refused, hung and crashing connections,
//! handshakes refused or never answered, delays, reordered, duplicated, lost and late answers,
//! garbage, oversized frames, stalls that make sends busy; callers that time out, drop their
//! futures, get aborted; stops during all that; and the faults of the HTTP transports as their
//! links show them: sessions that expire refusing the requests posted meanwhile, alone or in a
//! loop, POSTs that get no answer within the header bound, response streams dropped before
//! their answer, frames cut in the middle, connections dropped right after the handshake in a
//! loop; task-backed tool calls whose tasks live on the server across its crashes, or are
//! forgotten, fail, or are cancelled by it, while their callers drop them or bound them), the
//! model checker's properties checked on what the callers saw (see
//! `mcp_tests::sim::oracle` and `mcp_tests::sim::reconnect`).
//!
//! `SIM_CALLS` (default 100,000) sets how many calls the test makes at least, over consecutive
//! seeds from `SIM_BASE` (default 0); a failing seed is printed with the command that replays
//! it. `SIM_SEED=n` runs that seed alone (twice, to check it replays exactly); `SIM_VERBOSE=1`
//! prints its whole history at the end, `SIM_LIVE=1` each entry as it happens (for a run that
//! does not end).

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use mcp_tests::sim::coverage::Coverage;
use mcp_tests::sim::{self, Run};

fn env_u64(name: &str) -> Option<u64> {
    let v = std::env::var(name).ok()?;
    Some(
        v.parse()
            .unwrap_or_else(|_| panic!("{name}={v} is not a number")),
    )
}

fn assert_holds(run: &Run) {
    assert!(run.violations.is_empty(), "{}", run.report());
}

#[test]
fn simulated_calls_hold_the_properties() {
    if let Some(seed) = env_u64("SIM_SEED") {
        let run = sim::run_seed(seed);
        if std::env::var_os("SIM_VERBOSE").is_some() {
            eprintln!("{}", sim::history::render(&run.history, 0));
        }
        // A failing seed replays exactly too: compare before judging.
        assert_same(&run, &sim::run_seed(seed));
        assert_holds(&run);
        eprintln!(
            "simulation: seed {seed}: {} calls, every property holds",
            run.calls
        );
        return;
    }
    let target = env_u64("SIM_CALLS").unwrap_or(100_000);
    let base = env_u64("SIM_BASE").unwrap_or(0);
    let started = std::time::Instant::now();
    let (mut calls, mut seeds) = (0, 0);
    let mut failed: Vec<Run> = Vec::new();
    let mut coverage = Coverage::default();
    while (calls as u64) < target && failed.len() < 10 {
        for run in run_batch(base + seeds) {
            calls += run.calls;
            seeds += 1;
            coverage.add(&run.history);
            if !run.violations.is_empty() {
                failed.push(run);
            }
        }
    }
    eprintln!(
        "simulation: {calls} calls over {seeds} seeds (from {base}) in {:.1?}",
        started.elapsed()
    );
    eprintln!("simulation: {coverage}");
    // Vacuity: the faults and outcomes the properties judge did happen (the default run).
    if target >= 100_000 && failed.is_empty() {
        for what in [
            "timed out",
            "backpressure",
            "connection lost",
            "unavailable",
            "shut down",
            "server error",
            "send failed",
            "progress delivered",
            "futures dropped",
            "server crashes",
            "connections refused",
            "connections hung",
            "cancels on the wire",
            "stops",
            "handles dropped",
            "ready again",
            "probes",
            "sessions expired",
            "requests refused by an expiry",
            "calls sent again after an expiry",
            "sessions initialized again",
            "expiries backed off",
            "stuck POSTs",
            "streams lost",
            "frames cut",
            "expiry loops",
            "drop loops",
            "backoff delays grown",
            // Task calls: a property of tasks no run exercised would prove nothing.
            "tasks created",
            "tasks completed",
            "tasks lost",
            "tasks cancelled by the server",
            "tasks cancelled by their caller",
            "tasks timed out",
            "tasks survived a reconnect",
            // Calls that wait for a ready connection (a fifth of the tool calls).
            "calls waiting for ready",
        ] {
            assert!(coverage.get(what) > 0, "no run had {what}: {coverage}");
        }
    }
    if let Some(first) = failed.first() {
        let seeds: Vec<String> = failed.iter().map(|r| r.seed.to_string()).collect();
        panic!(
            "{}\nfailing seeds (it stops after the batch with the 10th): {}",
            first.report(),
            seeds.join(" ")
        );
    }
}

/// Seeds are run in batches of this many, so the seeds a run covers do not depend on the
/// number of cores.
const BATCH: u64 = 16;

/// Runs the seeds `first..first + BATCH` (each on its own runtime and thread, as many at once
/// as there are cores), in seed order.
fn run_batch(first: u64) -> Vec<Run> {
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    let next = AtomicU64::new(0);
    let runs = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..workers.min(BATCH as usize) {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= BATCH {
                        break;
                    }
                    let run = sim::run_seed(first + i);
                    runs.lock().unwrap_or_else(|e| e.into_inner()).push(run);
                }
            });
        }
    });
    let mut runs = runs.into_inner().unwrap_or_else(|e| e.into_inner());
    runs.sort_by_key(|r| r.seed);
    runs
}

/// The full histories of two runs are the same, entry by entry.
fn assert_same(a: &Run, b: &Run) {
    if let Some(i) =
        (0..a.history.len().max(b.history.len())).find(|&i| a.history.get(i) != b.history.get(i))
    {
        panic!(
            "seed {} did not replay exactly: entry {i} was {:?}, then {:?}\n{}",
            a.seed,
            a.history.get(i),
            b.history.get(i),
            sim::replay_command(a.seed)
        );
    }
}

#[test]
fn a_seed_replays_exactly() {
    for seed in [1, 2, 3, 8, 1_000_003] {
        let first = sim::run_seed(seed);
        assert!(first.calls > 0);
        assert_same(&first, &sim::run_seed(seed));
    }
}

/// The first seeds whose every connection expires (or is dropped) right after its handshake
/// until the calm (which comes after every call is done): the sessions are initialized again at once three times, then each end backs
/// off, with delays that grow (no call is answered, so nothing restarts the sequence), and every
/// property holds.
#[test]
fn expiry_and_drop_loops_back_off_with_growing_delays() {
    use mcp_tests::sim::history::Event;
    use mcp_tests::sim::reconnect;
    use mcp_tests::sim::scenario::{Ending, Looping, Scenario};

    for looping in [Looping::Expire, Looping::Drop] {
        let seed = (0..1_000)
            .find(|s| {
                let sc = Scenario::draw(*s);
                sc.looping == Some(looping) && sc.ending == Ending::StopAfterCalm
            })
            .expect("a looping seed");
        let run = sim::run_seed(seed);
        assert_holds(&run);
        let grown = reconnect::delays(&run.history)
            .iter()
            .filter(|d| d.step >= 2)
            .count();
        assert!(
            grown >= 2,
            "seed {seed} ({looping:?}): {grown} delays at step 2 or more"
        );
        let reinits = run
            .history
            .iter()
            .filter(|e| matches!(e.event, Event::Transition { expired: true, .. }))
            .count();
        eprintln!(
            "simulation: seed {seed} ({looping:?} loop): {grown} backoff delays at step 2 or more, \
             {reinits} expiries"
        );
        if looping == Looping::Expire {
            assert!(reinits >= 4, "seed {seed}: {reinits} expiries");
        } else {
            assert_eq!(reinits, 0, "seed {seed}: a dropped connection is no expiry");
        }
    }
}

/// Found by the simulation: a busy request whose send retry falls due just before its timeout,
/// and the driver waking (as tokio's millisecond timers make it) once both are due. Both timers
/// used to fire in one `handle_timeout`, the retry first, so its `Send` was drained after the
/// call had been answered with its timeout: the frame went out for an ended call (with no
/// cancel after it) and its outcome fired an impossible row. Now `handle_timeout` stops after
/// the retry's send; its outcome comes first, then the timeout fires and cancels the request
/// on the wire.
#[test]
fn a_send_retry_due_with_its_timeout_is_sent_before_the_timeout() {
    use mcp_machine::{
        Action, CallError, CallId, CallOptions, CallRequest, Config, Input, Machine, Report,
        SendOutcome, SendToken, TimerKind,
    };
    use serde_json::json;
    use std::time::Duration;

    const MS: Duration = Duration::from_millis(1);
    /// Drains the machine, answering every send with `outcome`.
    fn settle(m: &mut Machine, now: Duration, outcome: SendOutcome) -> Vec<Action> {
        let mut all = Vec::new();
        while let Some(a) = m.poll_action() {
            if let Action::Send {
                generation, token, ..
            } = &a
            {
                let (generation, token) = (*generation, *token);
                m.handle(
                    Input::SendResult {
                        generation,
                        token,
                        outcome,
                    },
                    now,
                );
            }
            all.push(a);
        }
        all
    }
    /// A machine in ready with one call (timeout `timeout`, at 10 ms) whose send was busy.
    fn busy_call(timeout: Duration) -> Machine {
        let config = Config {
            era: mcp_machine::EraMode::Legacy,
            ..Config::default()
        };
        let mut m = Machine::new(config, 42, Duration::ZERO);
        settle(&mut m, Duration::ZERO, SendOutcome::Ok);
        m.handle(Input::TransportUp { generation: 1 }, MS);
        settle(&mut m, MS, SendOutcome::Ok);
        let init = json!({"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": "2025-11-25", "capabilities": {}}});
        let bytes = serde_json::to_vec(&init).unwrap();
        m.handle(
            Input::Frame {
                generation: 1,
                bytes,
            },
            2 * MS,
        );
        settle(&mut m, 2 * MS, SendOutcome::Ok);
        let call = Input::Call(CallRequest {
            call: CallId(1),
            method: "tools/call".into(),
            params: Some(json!({"name": "t"})),
            options: CallOptions {
                timeout: Some(timeout),
                ..CallOptions::default()
            },
            session: None,
        });
        m.handle(call, 10 * MS);
        settle(&mut m, 10 * MS, SendOutcome::Busy);
        m
    }
    // When the retry falls due (the jitter is the seed's), then a call timing out just then.
    let retry_at = |m: &Machine| {
        m.armed_timers()
            .into_iter()
            .find(|(k, _)| k.kind == TimerKind::SendRetry)
            .map(|(_, at)| at)
            .expect("a send retry armed")
    };
    let at = retry_at(&busy_call(Duration::from_secs(1)));
    // The call's deadline a microsecond after the retry's; the driver wakes at the deadline.
    let deadline = at + Duration::from_micros(1);
    let mut m = busy_call(deadline - 10 * MS);
    assert_eq!(retry_at(&m), at);
    // The first call fires the retry only: its send's outcome is due before anything else.
    let steps = m.handle_timeout(deadline);
    assert_eq!(steps.len(), 1, "{steps:?}");
    let first = settle(&mut m, deadline, SendOutcome::Ok);
    assert!(
        first.iter().any(|a| matches!(
            a,
            Action::Send {
                token: SendToken::Request(2),
                ..
            }
        )),
        "{first:?}"
    );
    assert!(
        !first.iter().any(|a| matches!(a, Action::Reply { .. })),
        "{first:?}"
    );
    // The timeout is still due: it fires next, answers the caller and cancels on the wire.
    assert!(m.poll_timeout().is_some_and(|d| d <= deadline));
    let steps = m.handle_timeout(deadline);
    assert_eq!(steps.len(), 1, "{steps:?}");
    let second = settle(&mut m, deadline, SendOutcome::Ok);
    assert!(
        second.iter().any(|a| matches!(
            a,
            Action::Reply {
                outcome: Err(CallError::Timeout { .. }),
                ..
            }
        )),
        "{second:?}"
    );
    assert!(
        second.iter().any(|a| matches!(
            a,
            Action::Send {
                token: SendToken::Owed,
                frame,
                ..
            } if String::from_utf8_lossy(frame).contains("notifications/cancelled")
        )),
        "{second:?}"
    );
    assert!(
        !first
            .iter()
            .chain(&second)
            .any(|a| matches!(a, Action::Report(Report::ImpossibleRow { .. }))),
        "{first:?} {second:?}"
    );
}

/// The group runs: `SIM_GROUPS` seeds (default [`GROUP_SEEDS`]) from `SIM_GROUP_BASE` (default
/// 0), each 2 to 4 servers with their own faults started as one fail-open group, callers
/// calling through it (some waiting for ready), the group stopped or dropped; every server's
/// history judged by the single client's oracles and the group's (no cross-talk: each answer
/// from its own server). `SIM_GROUP_SEED=n` runs that seed alone (twice, to check it replays).
#[test]
fn simulated_groups_hold_the_properties() {
    use mcp_tests::sim::group::{self, GroupRun};

    if let Some(seed) = env_u64("SIM_GROUP_SEED") {
        let run = group::run_group_seed(seed);
        if std::env::var_os("SIM_VERBOSE").is_some() {
            for m in &run.members {
                eprintln!(
                    "server {}:\n{}",
                    m.name,
                    sim::history::render(&m.history, 0)
                );
            }
        }
        assert_same_group(&run, &group::run_group_seed(seed));
        assert!(run.holds(), "{}", run.report());
        eprintln!(
            "group simulation: seed {seed}: {} servers, {} calls, every property holds",
            run.members.len(),
            run.calls
        );
        return;
    }
    let count = env_u64("SIM_GROUPS").unwrap_or(GROUP_SEEDS);
    let base = env_u64("SIM_GROUP_BASE").unwrap_or(0);
    let started = std::time::Instant::now();
    let runs: Vec<GroupRun> = run_parallel(base, count, group::run_group_seed);
    let mut coverage = Coverage::default();
    let (mut calls, mut servers) = (0, 0);
    let mut failed: Vec<&GroupRun> = Vec::new();
    let mut group_coverage = std::collections::BTreeMap::<&str, u64>::new();
    for run in &runs {
        calls += run.calls;
        servers += run.members.len();
        for m in &run.members {
            coverage.add(&m.history);
            for what in group_facts(&m.history) {
                *group_coverage.entry(what).or_default() += 1;
            }
        }
        if !run.holds() {
            failed.push(run);
        }
    }
    eprintln!(
        "group simulation: {count} seeds (from {base}), {servers} servers, {calls} calls in {:.1?}",
        started.elapsed()
    );
    eprintln!("group simulation: {coverage}");
    eprintln!("group simulation: {group_coverage:?}");
    if let Some(first) = failed.first() {
        let seeds: Vec<String> = failed.iter().map(|r| r.seed.to_string()).collect();
        panic!(
            "{}\nfailing group seeds: {}",
            first.report(),
            seeds.join(" ")
        );
    }
    // Vacuity: what the group's properties judge did happen.
    if count >= GROUP_SEEDS {
        for what in [
            "first attempt failed",
            "waited while not ready, then answered",
            "unavailable at once in backoff",
            "waiting call timed out while not ready",
        ] {
            assert!(
                group_coverage.get(what).copied().unwrap_or(0) > 0,
                "no group run had {what}: {group_coverage:?}"
            );
        }
        for what in [
            "stops",
            "handles dropped",
            "ready again",
            "server crashes",
            "calls waiting for ready",
        ] {
            assert!(
                coverage.get(what) > 0,
                "no group run had {what}: {coverage}"
            );
        }
    }
}

/// How many group seeds the test runs by default: about 20 s of a debug build on two busy
/// cores (see docs/proven.md).
const GROUP_SEEDS: u64 = 280;

/// What a server's history shows of the group's properties (each at most once per history):
/// its first attempt failed (the group started it anyway); a call that waits for ready, made
/// while not ready, was then answered by its server; a call that does not wait, made in
/// backoff, was answered `Unavailable` at once; a waiting call made while not ready timed out.
fn group_facts(history: &[sim::history::Entry]) -> Vec<&'static str> {
    use mcp_runtime::ConnState;
    use sim::history::{Event, Outcome};
    let mut facts = std::collections::BTreeSet::new();
    let first = history.iter().find_map(|e| match e.event {
        Event::Transition {
            to: to @ (ConnState::Ready | ConnState::Backoff),
            ..
        } => Some(to),
        _ => None,
    });
    if first == Some(ConnState::Backoff) {
        facts.insert("first attempt failed");
    }
    let mut made = std::collections::BTreeMap::new();
    for e in history {
        match &e.event {
            Event::CallMade { call, wait, seen } => {
                made.insert(*call, (e.at, *wait, *seen));
            }
            Event::Outcome { call, outcome } => {
                let Some((at, wait, seen)) = made.get(call) else {
                    continue;
                };
                let not_ready = *seen != ConnState::Ready;
                match outcome {
                    Outcome::Ok { .. } if *wait && not_ready => {
                        facts.insert("waited while not ready, then answered");
                    }
                    Outcome::Unavailable if !wait && *seen == ConnState::Backoff && e.at == *at => {
                        facts.insert("unavailable at once in backoff");
                    }
                    Outcome::Timeout { .. } if *wait && not_ready => {
                        facts.insert("waiting call timed out while not ready");
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }
    facts.into_iter().collect()
}

/// Runs `f` on the seeds `base..base + count`, as many at once as there are cores, in seed
/// order.
fn run_parallel<R: Send>(base: u64, count: u64, f: fn(u64) -> R) -> Vec<R> {
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    let next = AtomicU64::new(0);
    let runs = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..workers.min(count as usize) {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= count {
                        break;
                    }
                    let run = f(base + i);
                    runs.lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push((i, run));
                }
            });
        }
    });
    let mut runs = runs.into_inner().unwrap_or_else(|e| e.into_inner());
    runs.sort_by_key(|(i, _)| *i);
    runs.into_iter().map(|(_, r)| r).collect()
}

/// Every server's full history is the same in both runs, entry by entry.
fn assert_same_group(a: &mcp_tests::sim::group::GroupRun, b: &mcp_tests::sim::group::GroupRun) {
    assert_eq!(a.members.len(), b.members.len(), "group seed {}", a.seed);
    for (x, y) in a.members.iter().zip(&b.members) {
        if let Some(i) = (0..x.history.len().max(y.history.len()))
            .find(|&i| x.history.get(i) != y.history.get(i))
        {
            panic!(
                "group seed {} did not replay exactly: server {}'s entry {i} was {:?}, then {:?}\n{}",
                a.seed,
                x.name,
                x.history.get(i),
                y.history.get(i),
                mcp_tests::sim::group::replay_command(a.seed)
            );
        }
    }
}

#[test]
fn a_group_seed_replays_exactly() {
    use mcp_tests::sim::group;
    for seed in [1, 2, 1_000_003] {
        let first = group::run_group_seed(seed);
        assert!(first.calls > 0 && first.members.len() >= 2);
        assert_same_group(&first, &group::run_group_seed(seed));
    }
}
