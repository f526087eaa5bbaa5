//! What the ghost knows of authorizations (HTTP with OAuth), from the environment's refusals
//! (AUTH_REQUIRED), the machine's `Authorize` actions and how the environment ends them: who
//! waits for one, whether the handshake request does, who must be sent again, and the
//! authorizations asked for in a row ([`crate::properties::auth`] judges them).

use mcp_machine::State;

use crate::world::{Move, Owner, ServerFrame, World};

/// The environment ends the authorization of generation `g` (`ok`: with a token): the driver
/// forgets it; a token on the current generation makes every caller waiting for it due to go
/// out again in this step.
pub(crate) fn authorize_move(n: &mut World, g: u64, ok: bool, stale: bool) {
    n.ghost.auth_pending.remove(&g);
    if ok && !stale {
        let due: Vec<u8> = n
            .ghost
            .auth_waiting
            .iter()
            .filter(|(_, on)| **on == g)
            .map(|(c, _)| *c)
            .collect();
        for c in due {
            n.ghost.auth_waiting.remove(&c);
            n.ghost.auth_resend_due.insert(c);
        }
    }
}

/// What the step taught the ghost of authorizations: a refusal of a live caller's request
/// (it waits for an authorization, the first time) or of the live handshake request; the
/// budget counted afresh once a request is answered, or at a backoff delay; answered callers
/// wait no more. Whether a caller was refused after an authorization already and is not
/// answered (that refusal must have been its answer).
pub(crate) fn after_move(w: &World, n: &mut World, mv: Move, stale: bool) -> bool {
    let unanswered = |n: &World, c: u8| n.ghost.calls.get(&c).is_some_and(|x| x.replies == 0);
    let closed = |n: &World, g: u64| n.env.gens.get(&g).is_none_or(|e| e.closed);
    let mut refused_again = false;
    // (On the current transport, open; also one that refused a frame for good: its frames
    // still arrive, and the machine takes them.)
    if let Move::Frame(g, ServerFrame::AuthRequired(id)) = mv
        && !stale
        && !closed(w, g)
        && w.env.gens.get(&g).is_some_and(|e| e.up && !e.down)
        && w.env.on_wire.get(&id).is_some_and(|(_, a)| *a == 0)
    {
        match w.ghost.owners.get(&id) {
            Some(Owner::Call(c))
                if w.m.state() == State::Ready
                    && w.ghost
                        .calls
                        .get(c)
                        .is_some_and(|x| x.replies == 0 && x.request == Some(id)) =>
            {
                let refusals = n.ghost.auth_refusals.entry(*c).or_default();
                *refusals += 1;
                let again = *refusals > 1;
                if unanswered(n, *c) {
                    if again {
                        refused_again = true;
                    } else {
                        n.ghost.auth_waiting.insert(*c, g);
                    }
                }
            }
            // The live handshake request waits for an authorization, or (past the budget)
            // its attempt ended.
            Some(Owner::Probe(on))
                if *on == g
                    && w.m.state() == State::Probing
                    && w.ghost.probes.get(&g) == Some(&id)
                    && !closed(n, g) =>
            {
                n.ghost.handshake_auth = Some(g);
            }
            Some(Owner::Init(on))
                if *on == g && w.m.state() == State::Initializing && !closed(n, g) =>
            {
                n.ghost.handshake_auth = Some(g);
            }
            _ => {}
        }
    }
    // The budget counts authorizations since a call or a request of the client's own was
    // last answered (the ghost forgets on any such answer: never later than the machine).
    if let Move::Frame(_, f) = mv
        && !matches!(f, ServerFrame::AuthRequired(_))
        && f.answered_id().is_some_and(|id| {
            matches!(
                w.ghost.owners.get(&id),
                Some(Owner::Call(_) | Owner::Restore(_) | Owner::Relist(_) | Owner::Listen(_))
            )
        })
    {
        n.ghost.authorizations = 0;
    }
    // And at a backoff delay (the machine's next attempt may authorize again).
    if n.m.state() == State::Backoff && w.m.state() != State::Backoff {
        n.ghost.authorizations = 0;
    }
    n.ghost
        .auth_waiting
        .retain(|c, _| n.ghost.calls.get(c).is_some_and(|x| x.replies == 0));
    refused_again
}
