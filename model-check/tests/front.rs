//! The bridge front's checker at a small bound: the real core holds every property, and a
//! deliberate bug is caught with a trace that shows it.

use mcp_machine::front::FrontMutant;
use model_check::front::world::FrontBounds;
use model_check::front::{FrontConfiguration, check};

fn small() -> FrontConfiguration {
    FrontConfiguration {
        name: "front-small",
        bounds: FrontBounds {
            host_requests: 3,
            host_cancels: 1,
            host_notes: 0,
            host_answers: 1,
            server_requests: 1,
            upstream_notes: 1,
            depth: 7,
            max_calls: 1,
            listens: true,
        },
        pinned_unique: 0,
    }
}

#[test]
fn the_real_front_holds_every_property_at_a_small_bound() {
    let out = check(&small(), None, 1);
    assert!(out.complete);
    let failures: Vec<_> = out
        .failures
        .iter()
        .map(|(n, t)| format!("{n}\n{t}"))
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    assert!(out.unique > 1000, "{}", out.unique);
}

#[test]
fn a_cancelled_call_answered_anyway_is_caught_with_its_trace() {
    let out = check(&small(), Some(FrontMutant::AnswerCancelled), 1);
    let (name, trace) = out.failures.first().expect("the mutant is caught");
    assert_eq!(name, "front: one answer per request");
    assert!(trace.contains("HostCancel"), "{trace}");
    assert!(trace.contains("CallEnds"), "{trace}");
}
