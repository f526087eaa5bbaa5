//! The exhaustive check at a smaller bound, the long random walks, and the harness's own
//! ability to fail (a mutant, with a readable trace), and hand-minimised counterexamples replayed
//! against the real machine and a mutant.

use model_check::coverage::Coverage;
use model_check::model::{Bounds, Harness, Variant};
use model_check::properties::{era, session};
use model_check::world::{Move, Owner, ServerFrame, ServerKind, World};
use model_check::{check, configurations, mutants, small_configuration, walk};

#[test]
fn small_exhaustive_configuration_holds_every_property() {
    let config = small_configuration();
    let out = check(&config, Variant::Real, &Coverage::for_table(), false);
    assert!(out.done, "search incomplete");
    let failures: Vec<_> = out
        .failures
        .iter()
        .map(|(n, t)| format!("{n}\n{t}"))
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    assert_eq!(
        out.unique, config.pinned_unique,
        "pinned unique-state count changed"
    );
}

#[test]
fn long_random_walks_keep_every_property() {
    // Over 1,000,000 events in all: 5 seeds × 500 walks × up to 500 moves.
    let mut events = 0;
    for seed in 1..=5 {
        let report = walk::run(seed, 500, 500).unwrap_or_else(|e| panic!("{e}"));
        assert!(
            report.reached_ready > 250,
            "walks rarely reach ready: {report:?}"
        );
        assert!(
            report.calls_ok > 1000,
            "walks rarely answer calls: {report:?}"
        );
        events += report.events;
    }
    assert!(events >= 1_000_000, "only {events} events");
}

#[test]
fn a_mutant_is_caught_with_a_readable_trace() {
    let case = mutants::all()
        .into_iter()
        .find(|c| c.name.contains("stop answers in-flight calls twice"))
        .unwrap();
    let out = check(
        &small_configuration(),
        case.variant,
        &Coverage::for_table(),
        true,
    );
    let (name, trace) = out.failures.first().expect("the mutant is caught");
    assert_eq!(name, "no caller is answered twice");
    assert!(
        trace.contains("event stop") && trace.contains("row #"),
        "{trace}"
    );
}

#[test]
fn hand_minimised_counterexample_replays() {
    // Connect, call, the call is sent, stop: with the doubled reply row the caller is answered twice.
    let case = mutants::all()
        .into_iter()
        .find(|c| c.name.contains("stop answers in-flight calls twice"))
        .unwrap();
    let model = Harness::new(small_configuration().bounds, case.variant);
    let mut w = model.initial();
    let path = [
        Move::Up(1, ServerKind::Legacy),
        Move::Frame(1, ServerFrame::InitOk(1)),
        Move::Call(1),
        Move::Stop(1),
    ];
    for mv in path {
        w = model.apply(&w, mv, None);
    }
    assert_ne!(
        w.ghost.violations & model_check::properties::replies::DOUBLE_REPLY,
        0
    );
    let real = Harness::new(small_configuration().bounds, Variant::Real);
    let mut w = real.initial();
    for mv in path {
        w = real.apply(&w, mv, None);
    }
    assert_eq!(w.ghost.violations, 0);
    assert_eq!(w.ghost.calls[&1].replies, 1);
}

/// The id last issued for `owner`.
fn id_of(w: &World, owner: Owner) -> u64 {
    w.ghost
        .owners
        .iter()
        .rev()
        .find(|(_, o)| **o == owner)
        .map(|(id, _)| *id)
        .expect("an id issued for the owner")
}

fn bounds_of(name: &str) -> Bounds {
    configurations()
        .into_iter()
        .find(|c| c.name == name)
        .expect("a configuration of that name")
        .bounds
}

fn mutant(name: &str) -> Variant {
    mutants::all()
        .into_iter()
        .find(|c| c.name.contains(name))
        .expect("a mutant of that name")
        .variant
}

#[test]
fn the_session_is_restored_before_the_kept_calls_go_out() {
    // Ready with a live subscription and a call in flight; the session expires refusing the
    // call (kept); the new session's ready restores the subscription, then sends the call.
    let swapped = mutant("kept calls sent again before the new session is restored");
    for (variant, broken) in [(Variant::Real, false), (swapped, true)] {
        let model = Harness::new(bounds_of("session-expiry"), variant);
        let step = |w: &World, mv: Move| model.apply(w, mv, None);
        let mut w = step(&model.initial(), Move::Up(1, ServerKind::Legacy));
        w = step(
            &w,
            Move::Frame(1, ServerFrame::InitOk(id_of(&w, Owner::Init(1)))),
        );
        w = step(&w, Move::Subscribe);
        w = step(&w, Move::Call(1));
        let subscribe = id_of(&w, Owner::Call(60));
        w = step(&w, Move::Frame(1, ServerFrame::Answer(subscribe)));
        assert!(w.ghost.sub_live);
        w = step(&w, Move::Expire(1, 0b1));
        assert!(w.ghost.parked.contains(&1));
        w = step(&w, Move::Up(2, ServerKind::Legacy));
        w = step(
            &w,
            Move::Frame(2, ServerFrame::InitOk(id_of(&w, Owner::Init(2)))),
        );
        assert!(w.ghost.resent.contains(&1));
        let expected = if broken { session::RESTORED_FIRST } else { 0 };
        assert_eq!(w.ghost.violations, expected);
    }
}

#[test]
fn a_second_answer_to_a_probe_fallen_back_from_is_late() {
    // Auto against a legacy server: the probe is answered -32601, the machine falls back to
    // `initialize` on the same transport, and the probe's answer comes again.
    let unmarked = mutant("a probe fallen back from not tombstoned");
    for (variant, broken) in [(Variant::Real, false), (unmarked, true)] {
        let model = Harness::new(bounds_of("negotiation"), variant);
        let step = |w: &World, mv: Move| model.apply(w, mv, None);
        let w = step(&model.initial(), Move::Up(1, ServerKind::Legacy));
        let probe = id_of(&w, Owner::Probe(1));
        let w = step(&w, Move::Frame(1, ServerFrame::ProbeError(probe)));
        assert!(w.ghost.init_sent.contains(&1));
        let w = step(&w, Move::Frame(1, ServerFrame::ProbeError(probe)));
        let expected = if broken { era::ABANDONED_LATE } else { 0 };
        assert_eq!(w.ghost.violations, expected);
    }
}

#[test]
fn a_task_resumed_by_its_id_is_polled_at_once_in_ready_and_turned_away_elsewhere() {
    use model_check::env::{RESUMED_TASK, RESUMER};
    use model_check::world::{TaskReply, TaskReq};
    let model = Harness::new(bounds_of("tasks-resume"), Variant::Real);
    let step = |w: &World, mv: Move| model.apply(w, mv, None);
    // Starting: turned away at once (unavailable), no task recorded.
    let w = step(&model.initial(), Move::Resume(RESUMER));
    assert_eq!(w.ghost.calls[&RESUMER].replies, 1);
    assert!(!w.ghost.tasks.contains_key(&RESUMER));
    assert_eq!(w.ghost.violations, 0);
    // Ready (modern): its first `tasks/get` goes out in the step of the resume, and the
    // server's `completed` answers the caller with the task's result.
    let w = step(&model.initial(), Move::Up(1, ServerKind::Modern));
    let probe = id_of(&w, Owner::Probe(1));
    let w = step(&w, Move::Frame(1, ServerFrame::DiscoverOk(probe)));
    let w = step(&w, Move::Resume(RESUMER));
    let get = id_of(&w, Owner::Task(RESUMER, TaskReq::Get));
    assert_eq!(w.ghost.tasks[&RESUMER].inflight, Some(get));
    assert_eq!(w.ghost.calls[&RESUMER].replies, 0);
    let done = ServerFrame::Task {
        id: get,
        task: RESUMED_TASK,
        reply: TaskReply::Completed,
        modern: true,
    };
    let w = step(&w, Move::Frame(1, done));
    assert_eq!(w.ghost.calls[&RESUMER].replies, 1);
    assert_eq!(w.ghost.violations, 0);
}
