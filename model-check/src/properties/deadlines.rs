//! Deadlines, as safety on the model clock: no call is pending past its deadline (its
//! timeout, as moved by progress when asked, never past its cap); starting plus initializing
//! end within the init bound, backoff within its jittered delay, closing within its exit
//! bound; request timers die with their calls. The [`crate::world::Move::Tick`] move lets time
//! run to just past the earliest deadline owed, so a forgotten timer is a counterexample.

use mcp_machine::{State, TimerKind};
use stateright::Property;

use crate::env::SUBSCRIBER;
use crate::model::Harness;
use crate::world::{Owner, World};

pub(super) fn request_timers_die() -> Property<Harness> {
    Property::<Harness>::always("request timers die with their calls", |_, w| {
        w.m.armed_timers().iter().all(|(k, _)| match k.id {
            // A task's own timers are keyed by caller ([`super::tasks`] judges them).
            _ if matches!(k.kind, TimerKind::TaskPoll | TimerKind::TaskDeadline) => true,
            // A waiting call's deadline lives while it waits (keyed by caller).
            Some(c) if k.kind == TimerKind::ReadyWait => {
                u8::try_from(c).is_ok_and(|c| crate::properties::waiting::waiting(w, c))
            }
            None => true,
            Some(id) => match w.ghost.owners.get(&id) {
                Some(Owner::Call(c)) => w.ghost.calls.get(c).is_some_and(|g| g.replies == 0),
                Some(Owner::Restore(g) | Owner::Relist(g)) => *g == w.m.generation(),
                // A task's request lives while its caller waits; a `tasks/cancel` on the
                // connection it went out on.
                Some(Owner::Task(c, _)) => w.ghost.calls.get(c).is_some_and(|g| g.replies == 0),
                Some(Owner::TaskCancel(_)) => w.m.state() == State::Ready,
                // A listen's timer bounds its acknowledgement only.
                Some(Owner::Listen(g)) => {
                    *g == w.m.generation()
                        && w.ghost
                            .listens
                            .get(&id)
                            .is_some_and(|l| l.alive() && !l.taken)
                }
                // A modern subscribe waits for an acknowledgement under an id never
                // sent.
                None => w
                    .ghost
                    .calls
                    .get(&SUBSCRIBER)
                    .is_some_and(|g| g.replies == 0),
                _ => false,
            },
        })
    })
}

pub(super) fn calls_within_deadline() -> Property<Harness> {
    Property::<Harness>::always("no call is pending past its deadline", |_, w| {
        let now = w.m.now();
        w.ghost
            .calls
            .values()
            .all(|g| g.replies > 0 || now <= g.deadline)
    })
}

pub(super) fn phases_within_bounds() -> Property<Harness> {
    Property::<Harness>::always(
        "starting, initializing, backoff and closing end within their bounds",
        |_, w| w.ghost.phase_deadline.is_none_or(|d| w.m.now() <= d),
    )
}

/// At the end of a step that entered a new state: the bound of that state, as a model-time
/// deadline ([`crate::world::Ghost::phase_deadline`]).
pub(crate) fn enter_phase(w: &World, n: &mut World) {
    let state = n.m.state();
    if state == w.m.state() {
        return;
    }
    let c = n.m.config();
    let now = n.m.now();
    n.ghost.phase_deadline = match state {
        // The init bound covers spawning and the handshake together.
        State::Starting => {
            let bound = if n.m.generation() <= 1 {
                c.connect_timeout
            } else {
                c.init_timeout
            };
            Some(now.saturating_add(bound))
        }
        // Only a transport coming up starts a handshake (or the probe, which the
        // handshake may follow, or the reverse): the init bound covers them all; from
        // anywhere else the machine owes leaving at once.
        State::Initializing | State::Probing
            if matches!(
                w.m.state(),
                State::Starting | State::Probing | State::Initializing
            ) =>
        {
            n.ghost.phase_deadline
        }
        State::Initializing | State::Probing => Some(now),
        State::Backoff => {
            let factor = 1u32 << n.ghost.backoff_hi.min(20);
            let base = c.backoff_min.saturating_mul(factor).min(c.backoff_max);
            let most = base * (100 + c.backoff_jitter_pct) / 100;
            Some(now.saturating_add(most))
        }
        State::Closing => Some(now.saturating_add(c.closing_exit)),
        State::Ready | State::Closed => None,
    };
}
