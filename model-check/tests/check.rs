//! The exhaustive check at a smaller bound, the long random walks, and the harness's own
//! ability to fail (a mutant, with a readable trace).

use model_check::coverage::Coverage;
use model_check::model::{Harness, Variant};
use model_check::world::{Move, ServerKind};
use model_check::{check, mutants, small_configuration, walk};

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
        Move::Frame(1, model_check::world::ServerFrame::InitOk(1)),
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
