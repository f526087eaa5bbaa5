//! The properties, one module per concern. Each module declares its violation bits, its
//! properties (the name the run reports and the condition on a state), and the checks that
//! set its bits, side by side; the environment ([`crate::env`](mod@crate::env)) and the ghost
//! ([`crate::ghost`]) call those checks at the moment of a step they judge.
//!
//! A check reads the ghost history (built from the machine's outputs) and the environment,
//! never the machine's own bookkeeping, so a buggy machine cannot hide its own bug. A broken
//! property leaves its bit in [`crate::world::Ghost::violations`]; a correct machine never
//! sets one, so the bits change no count.
//!
//! | module | what it proves |
//! |---|---|
//! | [`replies`] | each caller is answered once, by its own request, at once, with the cause of a failure |
//! | [`stop`] | stop answers every call once, sends nothing after, and is the only way to close |
//! | [`transport`] | only the open transport is written to, credited and read; stale inputs change nothing |
//! | [`wire`] | ids are never reused; `initialized`, cancels and what the server is owed go on the wire once |
//! | [`deadlines`] | calls, phases and request timers keep their deadlines |
//! | [`backoff`] | reconnect delays stay within their bounds, restarting only after a proof |
//! | [`reports`] | every frame is reported, delivered or answered; late answers are known as late |
//! | [`sends`] | a busy request is offered again in time; a refused one is answered |
//! | [`session`] | restore and session expiry: kept calls, the re-initialization budget |
//! | [`era`] | the era is decided before it is used; the handshake and its verdict |
//! | [`mrtr`] | `input_required` rounds are retried exactly |
//! | [`reissue`] | lost modern requests and -32020 are sent again as the protocol says |
//! | [`listen`] | `subscriptions/listen` asks for what is wanted, and delivers what is due |
//! | [`auth`] | authorization: one at a time, within the budget, and what waits for it |
//! | [`tasks`] | tasks: polled when due, cancelled once with `tasks/cancel`, inputs once, kept across reconnects, resumed by id |
//! | [`waiting`] | a call that waits for ready is neither turned away nor failed by a connection it was not sent on, and goes out only once ready |
//! | [`rows`] | rows marked impossible never fire |
//! | [`guards`] | the vacuity guards (`sometimes`) |

pub mod auth;
pub mod backoff;
pub mod deadlines;
pub mod era;
pub mod guards;
pub mod listen;
pub mod mrtr;
pub mod reissue;
pub mod replies;
pub mod reports;
pub mod rows;
pub mod sends;
pub mod session;
pub mod stop;
pub mod tasks;
pub mod transport;
pub mod waiting;
pub mod wire;

use stateright::Property;

use crate::model::Harness;
use crate::world::World;

/// Whether none of the violation bits `bit` is set.
pub(crate) fn ok(w: &World, bit: u64) -> bool {
    w.ghost.violations & bit == 0
}

/// Sets violation bit `bit`: a check failed.
pub(crate) fn fail(n: &mut World, bit: u64) {
    n.ghost.violations |= bit;
}

/// Every property, in the order the run reports them (invariants first, then the vacuity
/// guards).
pub fn all() -> Vec<Property<Harness>> {
    let mut all = vec![
        replies::answered_once(),
        replies::ended_never_delivered(),
        stop::every_call_answered(),
        stop::nothing_sent(),
        session::no_call_outlives_ready(),
        wire::ids_not_reused(),
        backoff::within_bounds(),
        transport::stale_changes_nothing(),
        wire::cancels_once(),
        transport::credit_only_open(),
        transport::credit_within_window(),
        transport::frames_only_open(),
        transport::closed_before_spawn(),
        wire::initialized_once(),
        reports::late_known_as_late(),
        replies::cancel_answered(),
        stop::stop_answered_once(),
        replies::no_progress_after_answer(),
        session::restores_live_subscriptions(),
        replies::answer_to_its_caller(),
        rows::impossible_never_fire(),
        deadlines::request_timers_die(),
        deadlines::calls_within_deadline(),
        deadlines::phases_within_bounds(),
        replies::live_answer_at_once(),
        reports::tombstones_bounded(),
        era::ready_knows_server(),
        transport::open_always_read(),
        wire::owed_once_or_retried(),
        reports::every_frame_handled(),
        sends::busy_offered_again(),
        stop::closes_only_when_stopped(),
        replies::cause_told(),
        session::kept_calls(),
        session::reinit_budget(),
        era::era_decided(),
        listen::listen(),
        auth::auth(),
        era::verdict_probed_again(),
        reissue::reissue(),
        era::respawn(),
        mrtr::mrtr(),
        session::restored_first(),
        era::abandoned_answer_late(),
        tasks::polled_when_due(),
        tasks::cancelled_once(),
        tasks::inputs_once(),
        tasks::kept_across_reconnects(),
        tasks::resumed(),
        tasks::timers_die(),
        waiting::waits_for_ready(),
    ];
    all.extend(guards::properties());
    all
}

/// Every violation bit, each once: a new bit that collides with another fails the test.
pub const VIOLATIONS: [u64; 42] = [
    replies::DOUBLE_REPLY,
    replies::LATE_DELIVERED,
    stop::SENT_AFTER_STOP,
    wire::ID_REUSED,
    backoff::BACKOFF_BOUNDS,
    transport::STALE_CHANGED,
    wire::BAD_CANCEL,
    transport::CREDIT_AFTER_CLOSE,
    wire::INITIALIZED,
    reports::LATE_MISREPORTED,
    replies::CANCEL_UNANSWERED,
    stop::STOP_REPLY,
    replies::PHANTOM_REPLY,
    replies::PROGRESS_AFTER_REPLY,
    rows::IMPOSSIBLE_ROW,
    transport::SENT_ON_DEAD,
    transport::LEAKED_TRANSPORT,
    session::RESTORE,
    replies::WRONG_CALLER,
    replies::ANSWER_LOST,
    transport::DEAF,
    wire::OWED,
    reports::UNREPORTED,
    stop::UNASKED_CLOSE,
    replies::WRONG_CAUSE,
    session::SESSION,
    session::REINIT,
    era::ERA,
    era::VERDICT,
    mrtr::MRTR,
    era::RESPAWN,
    reissue::REISSUE,
    listen::LISTEN,
    auth::AUTH,
    session::RESTORED_FIRST,
    era::ABANDONED_LATE,
    tasks::TASK_POLL,
    tasks::TASK_CANCEL,
    tasks::TASK_INPUT,
    tasks::TASK_KEPT,
    tasks::TASK_RESUME,
    waiting::WAIT,
];

#[cfg(test)]
mod tests {
    #[test]
    fn violation_bits_are_distinct() {
        let mut seen = 0u64;
        for bit in super::VIOLATIONS {
            assert_eq!(bit.count_ones(), 1);
            assert_eq!(seen & bit, 0, "bit {bit:#x} used twice");
            seen |= bit;
        }
    }
}
