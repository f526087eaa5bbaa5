//! Known-bad variants of the table and of the handlers: the checker must catch every one, or
//! its properties are too weak to trust.

use mcp_machine::generated::{ActionId, EventKind, GuardId};
use mcp_machine::{Mutant, ROWS, Row, State};

use crate::model::Variant;

/// One mutant: a name saying what is broken, and the broken machine.
pub struct Case {
    /// What is broken; for a generated mutant also its stable identity (see [`generated`]).
    pub name: String,
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
    Variant::Table(rows, Vec::new())
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

/// The hand-written mutants: realistic bugs, each named for what it breaks.
pub fn hand_written() -> Vec<Case> {
    use ActionId as A;
    use EventKind as E;
    use State as S;
    let mut cases = vec![
        Case {
            name: "table: stop answers in-flight calls twice".into(),
            variant: edit(S::Ready, E::Stop, None, |a| {
                a.insert(1, A::FailCallsShutdown)
            }),
        },
        Case {
            name: "table: backoff not restarted when a call is answered".into(),
            variant: without(
                S::Ready,
                E::Response,
                Some(GuardId::IsLiveResponse),
                A::ResetBackoff,
            ),
        },
        Case {
            name: "table: backoff restarted at the handshake (a session that proved nothing)"
                .into(),
            variant: edit(S::Ready, E::SendOk, Some(GuardId::IsInitializedSend), |a| {
                a.insert(0, A::ResetBackoff)
            }),
        },
        Case {
            name: "table: backoff restarted when a modern server is discovered".into(),
            variant: edit(
                S::Probing,
                E::Response,
                Some(GuardId::IsDiscoverAccepted),
                |a| a.insert(0, A::ResetBackoff),
            ),
        },
        Case {
            name: "table: calls not failed when the transport goes down".into(),
            variant: without(S::Ready, E::TransportDown, None, A::FailCallsLost),
        },
        Case {
            name: "table: stop in backoff not answered".into(),
            variant: without(S::Backoff, E::Stop, None, A::ReplyStopped),
        },
        Case {
            name: "table: calls sent while closing".into(),
            variant: edit(S::Closing, E::Call, None, |a| *a = vec![A::StartCall]),
        },
        Case {
            name: "table: notifications/initialized never sent".into(),
            variant: without(
                S::Initializing,
                E::Response,
                Some(GuardId::IsInitAccepted),
                A::SendInitialized,
            ),
        },
        Case {
            name: "table: cancel of a live call ignored".into(),
            variant: {
                let mut rows: Vec<Row> = ROWS.to_vec();
                let i = find(S::Ready, E::Cancel, Some(GuardId::IsLiveCall));
                rows[i].ignore = true;
                rows[i].actions = &[];
                Variant::Table(rows, Vec::new())
            },
        },
        Case {
            name: "table: transport left open on init timeout".into(),
            variant: without(S::Initializing, E::InitTimeout, None, A::CloseTransport),
        },
        Case {
            name: "table: credit granted to the closed transport in backoff".into(),
            variant: edit(S::Backoff, E::Response, None, |a| *a = vec![A::GrantCredit]),
        },
        Case {
            name: "table: the session is not restored after a reconnect".into(),
            variant: without(
                S::Ready,
                E::SendOk,
                Some(GuardId::IsInitializedSend),
                A::RestoreSession,
            ),
        },
        Case {
            name: "table: an unsubscribe during an outage does not end the subscription".into(),
            variant: without(
                S::Backoff,
                E::Call,
                Some(GuardId::IsUnsubscribe),
                A::ForgetSubscription,
            ),
        },
        Case {
            name: "table: acknowledged subscriptions not recorded".into(),
            variant: without(
                S::Ready,
                E::Response,
                Some(GuardId::IsSessionAck),
                A::RecordSession,
            ),
        },
        Case {
            name: "table: an expired session waits out a backoff delay".into(),
            variant: edit(
                S::Ready,
                E::TransportDown,
                Some(GuardId::CanReinitialize),
                |a| {
                    let spawn = a.iter().position(|x| *x == A::SpawnTransport);
                    if let Some(i) = spawn {
                        a[i] = A::ScheduleBackoff;
                    }
                    a.retain(|x| *x != A::ArmInitTimeout);
                },
            ),
        },
        Case {
            name: "table: calls kept across a session expiry not answered when stopped".into(),
            variant: without(S::Starting, E::Stop, None, A::FailCallsShutdown),
        },
        Case {
            name: "table: transport left open after an oversized frame".into(),
            variant: without(S::Ready, E::OversizedFrame, None, A::CloseTransport),
        },
        Case {
            name: "table: a server request answered before the era is decided".into(),
            variant: edit(S::Probing, E::ServerRequest, None, |a| {
                *a = vec![A::RejectServerRequest, A::GrantCredit]
            }),
        },
        Case {
            name: "table: calls start while the era is being decided".into(),
            variant: edit(S::Probing, E::Call, None, |a| *a = vec![A::StartCall]),
        },
        Case {
            name: "table: a modern server's request is handled like a legacy one's".into(),
            variant: edit(
                S::Ready,
                E::ServerRequest,
                Some(GuardId::EraIsModern),
                |a| *a = vec![A::DispatchServerRequest, A::GrantCredit],
            ),
        },
        Case {
            name: "table: the last input of a round recorded, the call never sent again".into(),
            variant: without(
                S::Ready,
                E::InputReply,
                Some(GuardId::CompletesInputRound),
                A::RetryWithInputs,
            ),
        },
        Case {
            name: "table: a handler's error to an input leaves its call waiting".into(),
            variant: {
                let mut rows: Vec<Row> = ROWS.to_vec();
                let i = find(S::Ready, E::InputReply, Some(GuardId::IsInputFailure));
                rows[i].ignore = true;
                rows[i].actions = &[];
                Variant::Table(rows, Vec::new())
            },
        },
        Case {
            name: "table: kept calls sent again before the new session is restored".into(),
            variant: edit(S::Ready, E::SendOk, Some(GuardId::IsInitializedSend), |a| {
                let restore = a.iter().position(|x| *x == A::RestoreSession);
                let resend = a.iter().position(|x| *x == A::ResendParked);
                let (Some(i), Some(j)) = (restore, resend) else {
                    panic!("restore_session or resend_parked not in the initialized row");
                };
                a.swap(i, j);
            }),
        },
        Case {
            name: "table: a probe fallen back from not tombstoned (a second answer unknown)".into(),
            variant: without(
                S::Probing,
                E::Response,
                Some(GuardId::CanFallBack),
                A::AbandonInit,
            ),
        },
        Case {
            name: "table: the version a modern server names is answered with initialize".into(),
            variant: edit(
                S::Probing,
                E::Response,
                Some(GuardId::CanRetryVersion),
                |a| *a = vec![A::AbandonInit, A::SendInitialize, A::GrantCredit],
            ),
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
        (
            "handlers: an expired session's refused calls failed, not kept",
            Mutant::ParkNothing,
        ),
        (
            "handlers: calls kept across a session expiry never sent again",
            Mutant::NoResend,
        ),
        (
            "handlers: kept calls sent again on the expired session (a stale session id)",
            Mutant::ResendOnExpired,
        ),
        (
            "handlers: expired sessions initialized again at once without bound",
            Mutant::UnboundedReinit,
        ),
        (
            "handlers: a call sent again after an expiry kept again at the next",
            Mutant::ParkResentAgain,
        ),
        (
            "handlers: the modern envelope on every request, whatever the era",
            Mutant::EnvelopeAlways,
        ),
        (
            "handlers: a server request with no answer is answered all the same",
            Mutant::AnswerUnexpected,
        ),
        (
            "handlers: a tentative legacy verdict outlives its failed handshake",
            Mutant::KeepTentativeVerdict,
        ),
        (
            "handlers: a modern server's probe answer taken for a legacy one's",
            Mutant::NoModernRefusal,
        ),
        (
            "handlers: an input_required retry without its requestState",
            Mutant::DropRequestState,
        ),
        (
            "handlers: input_required rounds not capped",
            Mutant::NoRoundCap,
        ),
        (
            "handlers: a lost modern request sent again without a bound (reissue)",
            Mutant::NoReissueCap,
        ),
        (
            "handlers: every -32020 lists the tools again (relist)",
            Mutant::RelistAlways,
        ),
        (
            "handlers: calls waiting for a listing of the tools never sent again (relist)",
            Mutant::NoResendAfterRelist,
        ),
        (
            "handlers: a listen leaves the subscribed resources out (listen)",
            Mutant::ListenDropsUris,
        ),
        (
            "handlers: a notification tagged with any listen id is delivered (listen)",
            Mutant::DeliverAnyListenId,
        ),
        (
            "handlers: an acknowledgement answers every waiting subscribe done (listen)",
            Mutant::AckIgnoresFilter,
        ),
        (
            "handlers: a replaced listen is never cancelled (listen)",
            Mutant::NoListenCancel,
        ),
        (
            "handlers: a listen the server ended is cancelled all the same (listen)",
            Mutant::CancelEndedListen,
        ),
        (
            "handlers: lost listens reopened without a bound (listen)",
            Mutant::NoRelistenCap,
        ),
        (
            "handlers: a call refused again after an authorization waits for another (auth)",
            Mutant::AuthRetryAlways,
        ),
        (
            "handlers: calls waiting for an authorization not sent again after it (auth)",
            Mutant::NoResendAfterAuth,
        ),
        (
            "handlers: authorizations asked for without a bound (auth)",
            Mutant::UnboundedAuth,
        ),
        (
            "handlers: a refused call sent again before the authorization ends (auth)",
            Mutant::ResendBeforeAuth,
        ),
        (
            "handlers: every frame taken gives the whole read window back (read-window)",
            Mutant::WindowOnEveryCredit,
        ),
        (
            "handlers: a session that stayed up does not restart the backoff sequence",
            Mutant::StableNeverResets,
        ),
        (
            "handlers: a task result taken as a task with tasks off (tasks)",
            Mutant::TasksAlways,
        ),
        (
            "handlers: a task polled again at once, whatever its interval (tasks)",
            Mutant::PollAtOnce,
        ),
        (
            "handlers: tasks/cancel sent twice (tasks)",
            Mutant::CancelTwice,
        ),
        ("handlers: a task never polled (tasks)", Mutant::NoPoll),
        (
            "handlers: a task's input keys handed to the handler at every poll (tasks)",
            Mutant::NoInputDedupe,
        ),
        (
            "handlers: tasks dropped when the connection is lost (tasks)",
            Mutant::DropTasksOnLoss,
        ),
        (
            "handlers: a caller's bound on its whole task never armed (tasks)",
            Mutant::NoTaskDeadline,
        ),
        (
            "handlers: a call that asked to wait for ready is turned away (wait-ready)",
            Mutant::WaitNever,
        ),
        (
            "handlers: a call that asked to wait for ready is sent at once (wait-ready)",
            Mutant::WaitSentAtOnce,
        ),
        (
            "handlers: stop leaves the calls waiting for ready unanswered (wait-ready)",
            Mutant::WaitForgottenAtStop,
        ),
        (
            "handlers: a waiting call's deadline never armed (wait-ready)",
            Mutant::NoWaitDeadline,
        ),
        (
            "handlers: a waiting call goes out with a whole new timeout (wait-ready)",
            Mutant::WaitFreshDeadline,
        ),
        (
            "handlers: a lost connection fails the calls waiting for ready (wait-ready)",
            Mutant::WaitFailedOnLoss,
        ),
        (
            "handlers: a transport that failed for good leaves the waiting calls waiting (wait-ready)",
            Mutant::KeepWaitingOnPermanent,
        ),
    ];
    cases.extend(handlers.into_iter().map(|(name, m)| Case {
        name: name.to_string(),
        variant: Variant::Handler(m),
    }));
    cases
}

/// The configuration that catches `case` only at its full depth, where one is known: the full
/// pass tries it first instead of after every smaller one (the verdict is the same; a run of
/// `-- --mutants` takes minutes less). A mutant that needs several expiries in a row past the
/// budget, or a task's polls after an input, is caught only deep in the configurations that
/// have them.
fn deep_config(case: &Case) -> Option<&'static str> {
    match case.variant {
        Variant::Handler(Mutant::UnboundedReinit) => Some("session-expiry"),
        Variant::Handler(Mutant::NoInputDedupe) => Some("tasks-modern"),
        _ => None,
    }
}

/// Every mutant: the hand-written ones, then those generated from the table.
pub fn all() -> Vec<Case> {
    let mut cases = hand_written();
    cases.extend(generated());
    cases
}

/// A row's stable identity: its cells and guard, not its position or line (which move when
/// the table is edited), e.g. `ready×response[is_live_response]`.
pub fn row_key(row: &Row) -> String {
    let from: Vec<_> = row.from.iter().map(|s| s.name()).collect();
    let on: Vec<_> = row.on.iter().map(|e| e.name()).collect();
    let guard = row
        .guard
        .map_or(String::new(), |g| format!("[{}]", g.name()));
    format!("{}×{}{guard}", from.join("|"), on.join("|"))
}

fn table(rows: Vec<Row>) -> Variant {
    Variant::Table(rows, Vec::new())
}

/// The mutants generated from the table: every single-action deletion in every row, every
/// other target state of every row, every guard negated, every pair of guarded rows adjacent
/// in some cell swapped, and every `do` row turned into an ignore row. Rows marked impossible
/// are left alone (they never fire, so mutating them cannot change behaviour).
pub fn generated() -> Vec<Case> {
    let mut cases = Vec::new();
    for (i, row) in ROWS.iter().enumerate() {
        if row.impossible {
            continue;
        }
        let key = row_key(row);
        if !row.ignore {
            for (k, action) in row.actions.iter().enumerate() {
                let mut rows = ROWS.to_vec();
                let mut actions = row.actions.to_vec();
                actions.remove(k);
                rows[i].actions = leak(actions);
                cases.push(Case {
                    name: format!("{key}: without {}", action.name()),
                    variant: table(rows),
                });
            }
            let mut rows = ROWS.to_vec();
            rows[i].ignore = true;
            rows[i].to = None;
            cases.push(Case {
                name: format!("{key}: ignored"),
                variant: table(rows),
            });
        }
        for to in State::ALL {
            if row.to == Some(to) || (row.to.is_none() && row.from == [to]) {
                continue;
            }
            let mut rows = ROWS.to_vec();
            rows[i].to = Some(to);
            cases.push(Case {
                name: format!("{key}: to {}", to.name()),
                variant: table(rows),
            });
        }
        if row.guard.is_some() {
            let index = u16::try_from(i).unwrap_or(u16::MAX);
            cases.push(Case {
                name: format!("{key}: guard negated"),
                variant: Variant::Table(ROWS.to_vec(), vec![index]),
            });
        }
    }
    // Guarded rows adjacent in some cell, swapped (each pair once).
    let mut pairs = std::collections::BTreeSet::new();
    for state in State::ALL {
        for event in EventKind::ALL {
            let cell: Vec<usize> = ROWS
                .iter()
                .enumerate()
                .filter(|(_, r)| r.from.contains(&state) && r.on.contains(&event))
                .map(|(i, _)| i)
                .collect();
            for w in cell.windows(2) {
                if ROWS[w[0]].guard.is_some() && ROWS[w[1]].guard.is_some() {
                    pairs.insert((w[0], w[1]));
                }
            }
        }
    }
    for (a, b) in pairs {
        let mut rows = ROWS.to_vec();
        let moved = rows.remove(b);
        rows.insert(a, moved);
        cases.push(Case {
            name: format!("{} before {}", row_key(&ROWS[b]), row_key(&ROWS[a])),
            variant: table(rows),
        });
    }
    cases
}

/// The reviewed list of mutants that cannot be caught because they change nothing a caller or
/// a server can observe, each with the argument why.
pub const EQUIVALENT_FILE: &str = "model-check/equivalent-mutants.txt";

/// The names of the mutants argued equivalent in [`EQUIVALENT_FILE`]: every line that starts
/// with neither `#`, a space nor a tab (the argument is indented below it).
pub fn equivalent() -> std::collections::BTreeSet<String> {
    include_str!("../equivalent-mutants.txt")
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with(['#', ' ', '\t']))
        .map(|l| l.trim_end().to_string())
        .collect()
}

/// Depth of the first, shallow pass over every configuration: most mutants break an
/// invariant within a few moves, and a shallow pass finds them in any configuration quickly.
const SHALLOW: usize = 8;

/// Runs a mutant against every configuration (only the shallow pass with `shallow_only`, a
/// quick survey); `Some(what caught it)` or `None` (survived).
/// Caught means: an invariant fails (a shallow pass over every configuration first, then the
/// full bounds), the machine panics, a configuration misses an example it must find, a run
/// guard is met by no configuration, or a row or cell of the real table never fires.
pub fn judge(case: &Case, shallow_only: bool) -> Option<String> {
    use crate::coverage::Coverage;
    use crate::properties::guards::RUN_GUARDS;
    let run = |config: &crate::Configuration, coverage: &Coverage| {
        let variant = case.variant.clone();
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            crate::check(config, variant, coverage, true)
        }))
    };
    let configs = crate::configurations();
    for config in &configs {
        let mut shallow = *config;
        shallow.bounds.depth = config.bounds.depth.min(SHALLOW);
        match run(&shallow, &Coverage::for_table()) {
            Err(_) => return Some(format!("a panic in {}", config.name)),
            Ok(out) if out.invariant_failed => {
                let (name, _) = out.failures.into_iter().next()?;
                return Some(format!("\"{name}\" in {} (shallow)", config.name));
            }
            Ok(_) => {}
        }
    }
    if shallow_only {
        return None;
    }
    let coverage = Coverage::for_table();
    let mut guards = Vec::new();
    // Smallest first: a mutant one of them catches costs less; the configuration a mutant is
    // known to need deep goes first (only the order: every configuration still runs until
    // one catches it).
    let mut configs = configs;
    let first = deep_config(case);
    configs.sort_by_key(|c| (Some(c.name) != first, c.pinned_unique));
    for config in &configs {
        match run(config, &coverage) {
            Err(_) => return Some(format!("a panic in {}", config.name)),
            Ok(out) => {
                if let Some((name, _)) = out.failures.into_iter().next() {
                    return Some(format!("\"{name}\" in {}", config.name));
                }
                guards.extend(out.guards_met);
            }
        }
    }
    if let Some((name, _)) = RUN_GUARDS.iter().find(|(n, _)| !guards.contains(n)) {
        return Some(format!("run guard \"{name}\""));
    }
    let (_, _, rows) = crate::coverage_summary(&coverage);
    let (_, _, cells) = crate::cell_summary(&coverage);
    rows.into_iter()
        .chain(cells)
        .next()
        .map(|m| format!("coverage: {m} never fired"))
}
