//! Known-bad variants of the table and of the handlers: the checker must catch every one, or
//! its properties are too weak to trust.

use mcp_machine::generated::{ActionId, EventKind, GuardId};
use mcp_machine::{Mutant, ROWS, Row, State};

use crate::harness::Variant;

/// One mutant: a name saying what is broken, and the broken machine.
pub struct Case {
    /// What is broken.
    pub name: &'static str,
    /// The broken machine.
    pub variant: Variant,
}

fn find(state: State, event: EventKind, guard: Option<GuardId>) -> usize {
    ROWS.iter()
        .position(|r| r.from.contains(&state) && r.on.contains(&event) && r.guard == guard)
        .unwrap_or_else(|| {
            panic!(
                "no row for {state:?} {event:?} {guard:?}: the table changed, update the mutants"
            )
        })
}

fn leak(actions: Vec<ActionId>) -> &'static [ActionId] {
    Box::leak(actions.into_boxed_slice())
}

/// A copy of the table with one row's actions edited.
fn edit(
    state: State,
    event: EventKind,
    guard: Option<GuardId>,
    f: impl FnOnce(&mut Vec<ActionId>),
) -> Variant {
    let mut rows: Vec<Row> = ROWS.to_vec();
    let i = find(state, event, guard);
    let mut actions = rows[i].actions.to_vec();
    f(&mut actions);
    rows[i].actions = leak(actions);
    rows[i].ignore = false;
    Variant::Table(rows)
}

fn without(state: State, event: EventKind, guard: Option<GuardId>, action: ActionId) -> Variant {
    edit(state, event, guard, |a| {
        let before = a.len();
        a.retain(|x| *x != action);
        assert!(
            a.len() < before,
            "{action:?} not in the row of {state:?} {event:?}: update the mutants"
        );
    })
}

/// Every mutant.
pub fn all() -> Vec<Case> {
    use ActionId as A;
    use EventKind as E;
    use State as S;
    let mut cases = vec![
        Case {
            name: "table: stop answers in-flight calls twice",
            variant: edit(S::Ready, E::Stop, None, |a| {
                a.insert(1, A::FailCallsShutdown)
            }),
        },
        Case {
            name: "table: backoff not reset on ready",
            variant: without(
                S::Initializing,
                E::Response,
                Some(GuardId::IsInitAccepted),
                A::ResetBackoff,
            ),
        },
        Case {
            name: "table: calls not failed when the transport goes down",
            variant: without(S::Ready, E::TransportDown, None, A::FailCallsLost),
        },
        Case {
            name: "table: stop in backoff not answered",
            variant: without(S::Backoff, E::Stop, None, A::ReplyStopped),
        },
        Case {
            name: "table: calls sent while closing",
            variant: edit(S::Closing, E::Call, None, |a| *a = vec![A::StartCall]),
        },
        Case {
            name: "table: notifications/initialized never sent",
            variant: without(
                S::Initializing,
                E::Response,
                Some(GuardId::IsInitAccepted),
                A::SendInitialized,
            ),
        },
        Case {
            name: "table: cancel of a live call ignored",
            variant: {
                let mut rows: Vec<Row> = ROWS.to_vec();
                let i = find(S::Ready, E::Cancel, Some(GuardId::IsLiveCall));
                rows[i].ignore = true;
                rows[i].actions = &[];
                Variant::Table(rows)
            },
        },
        Case {
            name: "table: transport left open on init timeout",
            variant: without(S::Initializing, E::InitTimeout, None, A::CloseTransport),
        },
        Case {
            name: "table: credit granted to the closed transport in backoff",
            variant: edit(S::Backoff, E::Response, None, |a| *a = vec![A::GrantCredit]),
        },
        Case {
            name: "table: the session is not restored after a reconnect",
            variant: without(
                S::Initializing,
                E::Response,
                Some(GuardId::IsInitAccepted),
                A::RestoreSession,
            ),
        },
        Case {
            name: "table: an unsubscribe during an outage does not end the subscription",
            variant: without(
                S::Backoff,
                E::Call,
                Some(GuardId::IsUnsubscribe),
                A::ForgetSubscription,
            ),
        },
        Case {
            name: "table: acknowledged subscriptions not recorded",
            variant: without(
                S::Ready,
                E::Response,
                Some(GuardId::IsSessionAck),
                A::RecordSession,
            ),
        },
        Case {
            name: "table: transport left open after an oversized frame",
            variant: without(S::Ready, E::OversizedFrame, None, A::CloseTransport),
        },
    ];
    let handlers = [
        (
            "handlers: ended ids not tombstoned",
            Mutant::NoTombstoneOnEnd,
        ),
        (
            "handlers: request timer left armed after the reply",
            Mutant::KeepTimerAfterReply,
        ),
        (
            "handlers: retries kept when leaving ready",
            Mutant::ForgetRetries,
        ),
        ("handlers: ids reused after reconnect", Mutant::ReuseIds),
        (
            "handlers: frames from a stale generation accepted",
            Mutant::AcceptStaleGeneration,
        ),
        (
            "handlers: cancel sent for unsent requests",
            Mutant::CancelUnsent,
        ),
        (
            "handlers: tombstones swept before their TTL",
            Mutant::SweepTooEarly,
        ),
        (
            "handlers: answered call kept in flight",
            Mutant::ReplyKeepsEntry,
        ),
        (
            "handlers: a response consumed by another call",
            Mutant::AnswerWrongCall,
        ),
    ];
    cases.extend(handlers.into_iter().map(|(name, m)| Case {
        name,
        variant: Variant::Handler(m),
    }));
    cases
}
