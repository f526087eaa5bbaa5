//! The session (legacy, Streamable HTTP): a reconnect asks the new server again for exactly
//! the subscriptions that were live, once each; a session the server ended is initialized
//! again at once while the budget lasts (past it, the backoff path); its calls that never ran
//! are kept (only in starting and initializing) and go on the wire again, once, under a new
//! id, in the step the new session's `initialized` is taken, after the session was asked for
//! again; the calls that may have run are answered at once.

use mcp_machine::{RequestId, SendToken, State};
use stateright::Property;

use super::{fail, ok};
use crate::env::drain::StepLog;
use crate::env::{NOTIFY_BASE, SUBSCRIBER, refusable};
use crate::model::Harness;
use crate::properties::guards as seen;
use crate::world::{Owner, World};

/// A new generation's ready did not ask again for exactly the live subscription.
pub const RESTORE: u64 = 1 << 17;
/// When a session expired, a call that never ran on it was failed, or a call that may
/// have run was not answered at once, or a kept call was not sent again as soon as the
/// new session was initialized (or was sent again twice).
pub const SESSION: u64 = 1 << 25;
/// An expired session was not initialized again at once while the budget lasted, or
/// was initialized again at once past it.
pub const REINIT: u64 = 1 << 26;
/// In the step a new session was initialized, a call kept across the expiry of the last one
/// went on the wire again before the new session was asked for what the last one held (its
/// subscriptions, its logging level).
pub const RESTORED_FIRST: u64 = 1 << 34;

pub(super) fn no_call_outlives_ready() -> Property<Harness> {
    Property::<Harness>::always(
        "no call outlives ready, but those kept across a session expiry and those of tasks",
        |_, w| {
            let keeping = matches!(w.m.state(), State::Starting | State::Initializing);
            w.m.state() == State::Ready
                || w.ghost.calls.iter().all(|(c, g)| {
                    g.replies > 0
                            || (keeping && w.ghost.parked.contains(c))
                            // A task lives on the server: its caller waits across reconnects.
                            || w.ghost.tasks.contains_key(c)
                            // A call that waits for ready waits outside it.
                            || (!w.m.state().is_terminal()
                                && crate::properties::waiting::waiting(w, *c))
                })
        },
    )
}

pub(super) fn restores_live_subscriptions() -> Property<Harness> {
    Property::<Harness>::always(
        "a reconnect asks again for exactly the live subscriptions, once",
        |_, w| ok(w, RESTORE),
    )
}

pub(super) fn kept_calls() -> Property<Harness> {
    Property::<Harness>::always(
        "an expired session's calls that never ran are sent again once on the new one; the others are answered at once",
        |_, w| ok(w, SESSION),
    )
}

pub(super) fn reinit_budget() -> Property<Harness> {
    Property::<Harness>::always(
        "an expired session is initialized again at once, at most the budget in a row",
        |_, w| ok(w, REINIT),
    )
}

pub(super) fn restored_first() -> Property<Harness> {
    Property::<Harness>::always(
        "after a session expiry the new session is restored before the kept calls are sent again",
        |_, w| ok(w, RESTORED_FIRST),
    )
}

/// The checks of a session expiry in ready (generation `g`, the server saying it refused the
/// requests picked by `mask`): while the budget lasts a new session at once, the calls that
/// never ran kept and those that may have run answered now; past it, backoff.
pub(crate) fn expired(w: &World, n: &mut World, g: u64, mask: u8) {
    if w.ghost.reinits >= w.m.config().max_session_reinits {
        if n.m.state() != State::Backoff {
            fail(n, REINIT);
        }
        n.ghost.seen |= seen::REINITS_SPENT;
        return;
    }
    if n.m.state() != State::Starting || n.m.generation() != g + 1 {
        fail(n, REINIT);
    }
    n.ghost.reinits += 1;
    let refused: Vec<RequestId> = refusable(w, g)
        .into_iter()
        .enumerate()
        .filter(|(i, _)| mask & (1 << i) != 0)
        .map(|(_, id)| id)
        .collect();
    for (&c, before) in &w.ghost.calls {
        // A task's caller is neither kept nor answered: its task lives on the server.
        if before.replies > 0
            || (NOTIFY_BASE..SUBSCRIBER).contains(&c)
            || w.ghost.tasks.contains_key(&c)
        {
            continue;
        }
        let answered = n.ghost.calls.get(&c).is_some_and(|x| x.replies > 0);
        let on_wire = before
            .request
            .and_then(|id| w.env.on_wire.get(&id))
            .is_some_and(|(on, _)| *on == g);
        // A call already sent again once is not kept a second time.
        // A call refused for want of authorization (and waiting) never ran either.
        let ran = (on_wire
            && !before.request.is_some_and(|id| refused.contains(&id))
            && !w.ghost.auth_waiting.contains_key(&c))
            || w.ghost.resent.contains(&c);
        if ran != answered {
            fail(n, SESSION);
        }
        if !answered {
            // Kept: nothing is offered to the dead transport; it goes out on the next.
            n.ghost.parked.insert(c);
            if let Some(x) = n.ghost.calls.get_mut(&c) {
                x.resend_due = None;
            }
        }
    }
}

/// At the end of a step: calls kept across a session expiry go out as soon as the new session
/// is initialized (the ghost forgets answered ones).
pub(crate) fn kept_calls_sent(n: &mut World) {
    let calls = &n.ghost.calls;
    n.ghost
        .parked
        .retain(|c| calls.get(c).is_some_and(|g| g.replies == 0));
    n.ghost
        .resent
        .retain(|c| calls.get(c).is_some_and(|g| g.replies == 0));
    let initialized = n
        .ghost
        .initialized
        .get(&n.m.generation())
        .is_some_and(|k| *k > 0);
    if n.m.state() == State::Ready && initialized && !n.ghost.parked.is_empty() {
        fail(n, SESSION);
    }
}

/// In the step a new session is initialized, it is asked again for what the last one held
/// before the calls kept across its expiry go out again: no request of the client's own
/// restoring the session is first offered after the first offer of a kept call's new request.
/// (Judged from the order of the step's sends alone: the restores and the new requests are
/// the step's fresh ids, owned by a restore and by a caller kept before the step.)
pub(crate) fn restored_before_resent(w: &World, n: &mut World, record: &StepLog) {
    let mut resent = false;
    for (_, token, _) in &record.sends {
        let SendToken::Request(id) = token else {
            continue;
        };
        if w.ghost.owners.contains_key(id) {
            continue;
        }
        match n.ghost.owners.get(id) {
            Some(Owner::Call(c)) if w.ghost.parked.contains(c) => resent = true,
            Some(Owner::Restore(_)) if resent => {
                fail(n, RESTORED_FIRST);
                return;
            }
            _ => {}
        }
    }
}

/// At the end of a step that made a new legacy generation ready: it asked again for exactly
/// the live subscription, once (a modern server keeps no session).
pub(crate) fn restored(w: &World, n: &mut World) {
    let g = n.m.generation();
    if n.m.state() == State::Ready
        && w.m.state() != State::Ready
        && !n.ghost.discovered.contains(&g)
    {
        let sent = n.ghost.restores.get(&g).copied().unwrap_or(0);
        if sent != u8::from(n.ghost.sub_live) {
            fail(n, RESTORE);
        }
        if sent == 1 {
            n.ghost.seen |= seen::RESTORED;
        }
    }
}
