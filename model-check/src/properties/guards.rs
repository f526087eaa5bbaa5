//! The vacuity guards: things that must happen at least once (`sometimes` properties), so
//! that the invariants are not true only because nothing interesting happened. Ready and a
//! call succeeding must happen in every configuration; each of [`RUN_GUARDS`] in at least
//! one configuration of a run. The ghost sets these bits where it sees the thing happen.

use stateright::Property;

use crate::model::Harness;

/// Ready was reached.
pub const READY: u64 = 1 << 0;
/// A call got a server result.
pub const CALL_OK: u64 = 1 << 1;
/// A call that had a busy send got a server result.
pub const BUSY_THEN_OK: u64 = 1 << 2;
/// Ready on a second or later generation.
pub const RECONNECT_READY: u64 = 1 << 3;
/// A late response was dropped as late.
pub const LATE_DROPPED: u64 = 1 << 4;
/// A call timed out.
pub const TIMED_OUT: u64 = 1 << 5;
/// A stop found calls in flight.
pub const STOP_WITH_CALLS: u64 = 1 << 6;
/// A subscription was restored after a reconnect.
pub const RESTORED: u64 = 1 << 7;
/// Ready on a third or later generation (two full reconnect cycles).
pub const SECOND_RECONNECT_READY: u64 = 1 << 8;
/// A transport died while a server request was with the handler.
pub const CRASH_WITH_SERVER_REQUEST: u64 = 1 << 9;
/// Three calls were in flight at once.
pub const THREE_IN_FLIGHT: u64 = 1 << 10;
/// A call kept across a session expiry got the new session's answer.
pub const RESENT_ANSWERED: u64 = 1 << 11;
/// A session expiry past the re-initialization budget took the backoff path.
pub const REINITS_SPENT: u64 = 1 << 12;
/// Ready in the modern era.
pub const READY_MODERN: u64 = 1 << 13;
/// Ready in the legacy era after the probe was answered (the fallback).
pub const READY_LEGACY_AFTER_PROBE: u64 = 1 << 14;
/// Ready in the legacy era on a fresh process, after the server died of the probe.
pub const READY_LEGACY_RESPAWNED: u64 = 1 << 15;
/// Ready in the modern era after an unsupported-version answer was retried.
pub const READY_MODERN_AFTER_RETRY: u64 = 1 << 16;
/// Ready in the modern era after `initialize` was refused as by a modern server.
pub const REPROBED_MODERN: u64 = 1 << 17;
/// Modern forced: a server that is not modern was refused.
pub const FORCED_REFUSED: u64 = 1 << 18;
/// A modern result of a type the client cannot use was answered to its caller.
pub const BAD_RESULT_TYPE: u64 = 1 << 19;
/// Ready in the legacy era after a probe that got no answer.
pub const READY_LEGACY_AFTER_SILENCE: u64 = 1 << 20;
/// A call sent again with the inputs of an `input_required` round got a result.
pub const MRTR_ANSWERED: u64 = 1 << 21;
/// A handler's error to an input was answered to its caller.
pub const INPUT_FAILED: u64 = 1 << 22;
/// A call past the round cap was answered with the error.
pub const ROUNDS_SPENT: u64 = 1 << 23;
/// A call sent again after its request was lost got a result.
pub const REISSUED_ANSWERED: u64 = 1 << 24;
/// A call lost once more than the reissue cap was answered with the error.
pub const REISSUES_SPENT: u64 = 1 << 25;
/// A call sent again after the tools were listed again (a -32020) got a result.
pub const RELISTED_ANSWERED: u64 = 1 << 26;
/// A notification tagged with a listen whose notifications are due was delivered.
pub const LISTEN_DELIVERED: u64 = 1 << 27;
/// A notification tagged with a listen whose notifications are not due was dropped.
pub const LISTEN_STRAY: u64 = 1 << 28;
/// A modern subscriber was answered done by an acknowledgement.
pub const LISTEN_SUBSCRIBED: u64 = 1 << 29;
/// A modern subscriber was told its resource is not honored.
pub const LISTEN_NOT_HONORED: u64 = 1 << 30;
/// A listen's acknowledgement replaced an acknowledged one (make before break).
pub const LISTEN_REPLACED: u64 = 1 << 31;
/// A lost listen was opened again by its retry timer.
pub const LISTEN_REOPENED: u64 = 1 << 32;
/// Lost listens were given up past the cap.
pub const LISTEN_GAVE_UP: u64 = 1 << 33;
/// A refused listen was not opened again.
pub const LISTEN_REFUSED: u64 = 1 << 34;
/// A call sent again after an authorization got a result.
pub const AUTH_RESENT_ANSWERED: u64 = 1 << 35;
/// Ready after the handshake request was authorized.
pub const AUTH_HANDSHAKE_READY: u64 = 1 << 36;
/// A failed authorization answered a caller waiting for it.
pub const AUTH_FAILED_ANSWERED: u64 = 1 << 37;
/// A call refused again after an authorization was answered with the error.
pub const AUTH_REFUSED_AGAIN: u64 = 1 << 38;
/// A session that stayed up for `session_stable` restarted the backoff sequence.
pub const STABLE_RESTART: u64 = 1 << 39;
/// A ready session that proved nothing was followed by a grown backoff delay.
pub const UNPROVEN_SESSION_BACKOFF: u64 = 1 << 40;

/// A task's caller got the task's result.
pub const TASK_OK: u64 = 1 << 41;
/// A task was polled again after a lost connection.
pub const TASK_RESUMED: u64 = 1 << 42;
/// A task's caller was answered with a timeout (its bound on the whole task).
pub const TASK_TIMED_OUT: u64 = 1 << 43;
/// A task resumed by its id got the server's answer (its result, or lost).
pub const TASK_RESUME_ANSWERED: u64 = 1 << 44;
/// A call that waited for ready (made while no connection was) got the server's result.
pub const WAITED_ANSWERED: u64 = 1 << 45;
/// A call that waited for ready was answered at its deadline before a connection was ready.
pub const WAIT_TIMED_OUT: u64 = 1 << 46;
/// A call waited through a failed attempt or a lost connection and then got the server's
/// result.
pub const WAITED_ACROSS_LOSS: u64 = 1 << 47;
/// A transport that failed for good answered a waiting call at once.
pub const WAIT_RELEASED: u64 = 1 << 48;

/// Vacuity guards beyond the two every configuration must meet; each must be met by at
/// least one configuration of a run.
pub const RUN_GUARDS: [(&str, u64); 47] = [
    (
        "two full reconnect cycles reach ready",
        SECOND_RECONNECT_READY,
    ),
    (
        "a transport dies while the handler holds a server request",
        CRASH_WITH_SERVER_REQUEST,
    ),
    ("three calls are in flight at once", THREE_IN_FLIGHT),
    ("a busy send later succeeds", BUSY_THEN_OK),
    ("a reconnect reaches ready", RECONNECT_READY),
    ("a late response is dropped", LATE_DROPPED),
    ("a call times out", TIMED_OUT),
    ("a stop finds calls in flight", STOP_WITH_CALLS),
    ("a subscription is restored after a reconnect", RESTORED),
    (
        "a call kept across a session expiry is answered by the new session",
        RESENT_ANSWERED,
    ),
    (
        "a session expiry past the budget takes the backoff path",
        REINITS_SPENT,
    ),
    ("ready in the modern era", READY_MODERN),
    (
        "ready in the legacy era after the probe was answered",
        READY_LEGACY_AFTER_PROBE,
    ),
    (
        "ready in the legacy era on a fresh process after the server died of the probe",
        READY_LEGACY_RESPAWNED,
    ),
    (
        "ready in the modern era after an unsupported-version answer",
        READY_MODERN_AFTER_RETRY,
    ),
    (
        "ready in the modern era after initialize was refused by a modern server",
        REPROBED_MODERN,
    ),
    (
        "modern forced refuses a server that is not modern",
        FORCED_REFUSED,
    ),
    (
        "a modern result of an unusable type is answered to its caller",
        BAD_RESULT_TYPE,
    ),
    (
        "ready in the legacy era after a probe that got no answer",
        READY_LEGACY_AFTER_SILENCE,
    ),
    (
        "a call sent again with its input_required inputs gets a result",
        MRTR_ANSWERED,
    ),
    (
        "a handler's error to an input is answered to its caller",
        INPUT_FAILED,
    ),
    ("a call past the round cap is answered", ROUNDS_SPENT),
    (
        "a call sent again after its request was lost gets a result",
        REISSUED_ANSWERED,
    ),
    (
        "a call lost past the reissue cap is answered with the error",
        REISSUES_SPENT,
    ),
    (
        "a call sent again after the tools were listed again gets a result",
        RELISTED_ANSWERED,
    ),
    ("a listen's notification is delivered", LISTEN_DELIVERED),
    (
        "a notification of a listen whose notifications are not due is dropped",
        LISTEN_STRAY,
    ),
    (
        "a modern subscribe is answered done by the listen's acknowledgement",
        LISTEN_SUBSCRIBED,
    ),
    (
        "a modern subscribe the acknowledgement left out is told so",
        LISTEN_NOT_HONORED,
    ),
    (
        "a listen's acknowledgement replaces an acknowledged one",
        LISTEN_REPLACED,
    ),
    (
        "a lost listen is opened again by its retry timer",
        LISTEN_REOPENED,
    ),
    ("lost listens are given up past the cap", LISTEN_GAVE_UP),
    ("a refused listen is not opened again", LISTEN_REFUSED),
    (
        "a call sent again after an authorization gets a result",
        AUTH_RESENT_ANSWERED,
    ),
    (
        "ready after the handshake request was authorized",
        AUTH_HANDSHAKE_READY,
    ),
    (
        "a failed authorization answers a caller waiting for it",
        AUTH_FAILED_ANSWERED,
    ),
    (
        "a call refused again after an authorization is answered with the error",
        AUTH_REFUSED_AGAIN,
    ),
    (
        "a session that stayed up restarts the backoff sequence",
        STABLE_RESTART,
    ),
    (
        "a session that proved nothing is followed by a grown delay",
        UNPROVEN_SESSION_BACKOFF,
    ),
    ("a task's caller gets the task's result", TASK_OK),
    (
        "a task is polled again after a lost connection",
        TASK_RESUMED,
    ),
    (
        "a task's caller is answered at its bound on the whole task",
        TASK_TIMED_OUT,
    ),
    (
        "a task resumed by its id gets the server's answer",
        TASK_RESUME_ANSWERED,
    ),
    (
        "a call that waited for ready gets the server's result",
        WAITED_ANSWERED,
    ),
    (
        "a call that waits for ready is answered at its deadline",
        WAIT_TIMED_OUT,
    ),
    (
        "a call waits through a lost connection and gets the server's result",
        WAITED_ACROSS_LOSS,
    ),
    (
        "a transport that failed for good answers a waiting call at once",
        WAIT_RELEASED,
    ),
];

/// The guards every configuration must meet, then [`RUN_GUARDS`].
pub(super) fn properties() -> Vec<Property<Harness>> {
    macro_rules! run_guards {
        ($($i:literal)*) => {
            vec![$(Property::<Harness>::sometimes(RUN_GUARDS[$i].0, |_, w| {
                w.ghost.seen & RUN_GUARDS[$i].1 != 0
            })),*]
        };
    }
    let mut all = vec![
        Property::<Harness>::sometimes("ready is reached", |_, w| w.ghost.seen & READY != 0),
        Property::<Harness>::sometimes("a call succeeds", |_, w| w.ghost.seen & CALL_OK != 0),
    ];
    all.extend(run_guards!(
        0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32
        33 34 35 36 37 38 39 40 41 42 43 44 45 46
    ));
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_run_guard_is_a_property() {
        let names: Vec<_> = properties().iter().map(|p| p.name).collect();
        for (name, _) in RUN_GUARDS {
            assert!(names.contains(&name), "run guard \"{name}\" is not checked");
        }
        assert_eq!(names.len(), RUN_GUARDS.len() + 2);
    }
}
