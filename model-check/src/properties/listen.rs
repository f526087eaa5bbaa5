//! `subscriptions/listen` (2026-07-28; the ghost follows every listen from the wire and the
//! environment's moves alone, [`crate::ghost::listen`]): in modern ready the client's listen
//! asks for what is wanted (or its reopening is armed, or it is excused); no listen goes out
//! when nothing is wanted; a listen goes out only at ready, on an interest change, or, as a
//! reopening, by its retry timer within the cap and never after a refusal; a tagged
//! notification is delivered exactly while due (judged with the frames, in
//! [`super::reports`]); a subscribe is answered done or not-honored only by the
//! acknowledgement.

use mcp_machine::{CallError, Payload, State, TimerKind};
use stateright::Property;

use super::{fail, ok};
use crate::env::SUBSCRIBER;
use crate::ghost::listen::{client_listen, listen_wanted};
use crate::model::Harness;
use crate::properties::guards as seen;
use crate::world::{Move, ServerFrame, World};

/// In modern ready, something was wanted and the client's listen did not ask for it (or
/// asked for an unsubscribed resource), with no reopening armed and no excuse (a refusal
/// since the interest last changed, or more losses than reopenings allowed); or a listen
/// went out when nothing was wanted; or a tagged notification was delivered for a listen
/// whose notifications are not due, or not delivered for one whose are; or a subscriber
/// was answered done or not-honored by anything but an acknowledgement that kept or left
/// out its resource; or a listen was reopened other than by its retry timer, past the
/// reopening cap, or after a refusal.
pub const LISTEN: u64 = 1 << 32;

pub(super) fn listen() -> Property<Harness> {
    Property::<Harness>::always(
        "in modern ready the listen asks for what is wanted, its notifications are delivered exactly while due, a subscribe is answered by the acknowledgement, and a lost listen is reopened only by its timer, within the cap",
        |_, w| ok(w, LISTEN),
    )
}

/// At the end of a step, in modern ready: what is wanted is asked for by the client's listen,
/// or its reopening is armed, or it is excused (a refusal since the interest changed, or more
/// losses than reopenings allowed).
pub(crate) fn wanted_asked(n: &mut World) {
    let g = n.m.generation();
    if n.m.state() != State::Ready || !n.ghost.discovered.contains(&g) {
        return;
    }
    let (lists, uri) = listen_wanted(n);
    if !lists && !uri {
        return;
    }
    let unsubscribed = n.ghost.unsubscribed;
    let asks = client_listen(n, g)
        .and_then(|id| n.ghost.listens.get(&id))
        .is_some_and(|l| (!lists || l.lists) && (!uri || l.uri) && !(unsubscribed && l.uri));
    let retry =
        n.m.armed_timers()
            .iter()
            .any(|(k, _)| k.kind == TimerKind::ListenRetry);
    let excused = n.ghost.listen_refused || n.ghost.listen_losses > n.m.config().max_relistens;
    if !(asks || retry || excused) {
        fail(n, LISTEN);
    }
}

/// A listen went out in a step of move `mv` (`None`: a timer's, with no move of its own):
/// only when something is wanted; at ready, on a subscribe or an unsubscribe, or, as a
/// reopening, when its retry timer fires: at most the cap per ready (counted here), never
/// after a refusal.
pub(crate) fn sent(n: &mut World, mv: Option<Move>) {
    if listen_wanted(n) == (false, false) {
        fail(n, LISTEN);
    }
    match mv {
        Some(Move::Subscribe | Move::Unsubscribe | Move::Frame(_, ServerFrame::DiscoverOk(_))) => {}
        // Timers fire with no move of their own (`None`), inside a timer, tick or wait move.
        None | Some(Move::Timer(_) | Move::Tick | Move::Wait) => {
            n.ghost.listen_reopens = n.ghost.listen_reopens.saturating_add(1);
            n.ghost.seen |= seen::LISTEN_REOPENED;
            let cap = n.m.config().max_relistens;
            if n.ghost.listen_refused || n.ghost.listen_reopens > cap {
                fail(n, LISTEN);
            }
        }
        _ => fail(n, LISTEN),
    }
}

/// The subscriber of a modern generation is answered: done only by an acknowledgement that
/// kept its resource (or its unsubscribe), not-honored only by one that left it out.
pub(crate) fn subscriber_answered(
    n: &mut World,
    mv: Option<Move>,
    outcome: &Result<Payload, CallError>,
) {
    let by_ack =
        |full: bool| matches!(mv, Some(Move::Frame(_, ServerFrame::ListenAck(_, f))) if f == full);
    let by_call = matches!(mv, Some(Move::Subscribe));
    match outcome {
        Ok(_) => {
            if by_ack(true) {
                n.ghost.seen |= seen::LISTEN_SUBSCRIBED;
            } else if !by_call && mv != Some(Move::Unsubscribe) {
                fail(n, LISTEN);
            }
        }
        Err(CallError::SubscriptionNotHonored { .. }) => {
            if by_ack(false) {
                n.ghost.seen |= seen::LISTEN_NOT_HONORED;
            } else if !by_call {
                fail(n, LISTEN);
            }
        }
        Err(_) => {}
    }
}

/// A subscribe of a resource the client's acknowledged listen asks for is answered at once
/// (done, or not honored): it waits for nothing.
pub(crate) fn subscribe_answered_at_once(w: &World, n: &mut World, mv: Move) {
    if mv == Move::Subscribe
        && w.m.state() == State::Ready
        && w.ghost.discovered.contains(&w.m.generation())
        && client_listen(w, w.m.generation())
            .and_then(|id| w.ghost.listens.get(&id))
            .is_some_and(|l| l.taken && l.uri)
        && n.ghost
            .calls
            .get(&SUBSCRIBER)
            .is_none_or(|c| c.replies == 0)
    {
        fail(n, LISTEN);
    }
}
