//! What the ghost knows of the client's listens (2026-07-28 `subscriptions/listen`), from the
//! wire and the environment's moves alone: what each listen asks for, whether the server
//! acknowledged or ended it, whether the client took its acknowledgement or gave it up, and
//! the counts of losses and reopenings per ready that excuse or bound them
//! ([`crate::properties::listen`] judges them).

use mcp_machine::{RequestId, SendOutcome, State};
use serde_json::Value;

use crate::env::{SUBSCRIBER, URI};
use crate::properties::guards as seen;
use crate::properties::listen;
use crate::world::{ListenEndKind, ListenGhost, Move, ServerFrame, World};

/// The listen counts are per ready: outside it they start afresh.
pub(crate) fn new_ready_counts(w: &World, n: &mut World) {
    if w.m.state() != State::Ready {
        n.ghost.listen_losses = 0;
        n.ghost.listen_reopens = 0;
        n.ghost.listen_refused = false;
    }
}

/// The unsubscriber ends the subscription: when nothing is wanted any more, every listen of
/// the client's on the ready modern generation is given up.
pub(crate) fn unsubscribed(w: &World, n: &mut World) {
    let g = w.m.generation();
    if w.m.state() == State::Ready
        && w.ghost.discovered.contains(&g)
        && listen_wanted(n) == (false, false)
    {
        let alive: Vec<RequestId> = n
            .ghost
            .listens
            .iter()
            .filter(|(_, l)| l.generation == g && l.alive())
            .map(|(id, _)| *id)
            .collect();
        for id in alive {
            drop_listen(n, id);
        }
    }
}

/// The client's listen on generation `g`: the latest it sent there, unless that is gone.
pub(crate) fn client_listen(w: &World, g: u64) -> Option<RequestId> {
    let (&id, l) = w
        .ghost
        .listens
        .iter()
        .rev()
        .find(|(_, l)| l.generation == g)?;
    l.alive().then_some(id)
}

/// What the client wants told now: list changes (as configured), and the resource (live, or
/// its subscriber waiting).
pub(crate) fn listen_wanted(w: &World) -> (bool, bool) {
    let waiting = w
        .ghost
        .calls
        .get(&SUBSCRIBER)
        .is_some_and(|c| c.replies == 0)
        && !w.ghost.unsubscribed;
    (
        w.m.config().listen_list_changed,
        w.ghost.sub_live || waiting,
    )
}

/// The client gives listen `id` up: a cancel is owed when the server saw it and has not
/// ended it (and none went out yet).
pub(crate) fn drop_listen(n: &mut World, id: RequestId) {
    let Some(l) = n.ghost.listens.get_mut(&id) else {
        return;
    };
    l.dropped = true;
    if !l.ended && n.env.on_wire.contains_key(&id) && !n.ghost.cancels.contains(&id) {
        n.ghost.cancel_owed.insert(id);
    }
}

/// The client's listen is lost (a step toward giving up).
pub(crate) fn lose_listen(n: &mut World, id: RequestId) {
    drop_listen(n, id);
    n.ghost.listen_losses = n.ghost.listen_losses.saturating_add(1);
}

/// The client's listen not acknowledged by its request timeout is lost.
pub(crate) fn listen_timeouts(n: &mut World) {
    let g = n.m.generation();
    let Some(id) = client_listen(n, g) else {
        return;
    };
    let timeout = n.m.config().request_timeout;
    if n.ghost
        .listens
        .get(&id)
        .is_some_and(|l| !l.taken && n.m.now() >= l.sent_at.saturating_add(timeout))
    {
        lose_listen(n, id);
    }
}

/// A listen's send refused, or busy for every attempt: it is lost.
pub(crate) fn listen_send_outcome(n: &mut World, id: RequestId, outcome: SendOutcome) {
    let attempts = n.m.config().send_attempts;
    let Some(l) = n.ghost.listens.get_mut(&id) else {
        return;
    };
    let spent = match outcome {
        SendOutcome::Ok => false,
        SendOutcome::Failed => true,
        SendOutcome::Busy => {
            l.busy = l.busy.saturating_add(1);
            l.busy >= attempts
        }
    };
    if spent && l.alive() {
        lose_listen(n, id);
    }
}

/// A listen went out: what it asks for is recorded; the client's earlier listens on the
/// generation are given up, but for the latest acknowledged one (kept until this one is
/// acknowledged). It goes out at ready, on an interest change, or, as a reopening, when its
/// retry timer fires: at most the cap per ready (unless a long silence let one become
/// stable), never after a refusal, never when nothing is wanted.
pub(crate) fn listen_sent(
    n: &mut World,
    mv: Option<Move>,
    generation: u64,
    id: RequestId,
    v: &Value,
) {
    listen_timeouts(n);
    let asks = &v["params"]["notifications"];
    let uri = asks["resourceSubscriptions"]
        .as_array()
        .is_some_and(|a| a.iter().any(|u| u == URI));
    let lists = asks["toolsListChanged"] == Value::Bool(true);
    let earlier: Vec<(RequestId, bool)> = n
        .ghost
        .listens
        .iter()
        .filter(|(_, l)| l.generation == generation && l.alive())
        .map(|(i, l)| (*i, l.taken))
        .collect();
    let keep = earlier.iter().filter(|(_, t)| *t).map(|(i, _)| *i).max();
    for (i, _) in earlier {
        if Some(i) != keep {
            drop_listen(n, i);
        }
    }
    let sent_at = n.m.now();
    n.ghost.listens.insert(
        id,
        ListenGhost {
            generation,
            uri,
            lists,
            sent_at,
            ..ListenGhost::default()
        },
    );
    listen::sent(n, mv);
}

/// What a listen frame tells the ghost: the environment's facts (acknowledged, ended)
/// always; in ready, what the client takes of it: the acknowledgement of its listen (the
/// listens before it given up), or the end of its listen (lost, or refused) or of the one it
/// replaces.
pub(crate) fn listen_frame(w: &World, n: &mut World, g: u64, f: ServerFrame, ready: bool) {
    match f {
        ServerFrame::ListenNote(_) | ServerFrame::ListenStray => n.env.listen_notes += 1,
        ServerFrame::ListenEnd(..) | ServerFrame::ListenCancel(_) => n.env.listen_ends += 1,
        _ => {}
    }
    let modern = ready && w.ghost.discovered.contains(&g);
    let current = client_listen(w, g);
    match f {
        ServerFrame::ListenAck(id, full) => {
            let Some(l) = n.ghost.listens.get_mut(&id) else {
                return;
            };
            l.acked = true;
            if !modern || current != Some(id) || l.taken {
                return;
            }
            l.taken = true;
            l.honored = full && l.uri;
            l.acked_at = w.m.now();
            let earlier: Vec<(RequestId, bool)> = n
                .ghost
                .listens
                .range(..id)
                .filter(|(_, l)| l.generation == g && l.alive())
                .map(|(i, l)| (*i, l.taken))
                .collect();
            for (i, taken) in earlier {
                if taken {
                    n.ghost.seen |= seen::LISTEN_REPLACED;
                }
                drop_listen(n, i);
            }
        }
        ServerFrame::ListenEnd(id, _) | ServerFrame::ListenCancel(id) => {
            let refused = f == ServerFrame::ListenEnd(id, ListenEndKind::Refused);
            let Some(l) = n.ghost.listens.get_mut(&id) else {
                return;
            };
            let kept = l.alive() && !l.ended;
            l.ended = true;
            if !modern || !kept {
                return;
            }
            if current == Some(id) {
                l.dead = true;
                // One that stayed acknowledged long enough makes the count start again (its
                // refusal does not: it stops the reopenings).
                let stable = w.m.config().listen_stable;
                if !refused && l.taken && w.m.now() >= l.acked_at.saturating_add(stable) {
                    n.ghost.listen_reopens = 0;
                    n.ghost.listen_losses = 0;
                }
                if refused {
                    n.ghost.listen_refused = true;
                    n.ghost.seen |= seen::LISTEN_REFUSED;
                } else {
                    n.ghost.listen_losses = n.ghost.listen_losses.saturating_add(1);
                }
            } else if l.taken {
                l.dead = true;
            }
        }
        _ => {}
    }
}
