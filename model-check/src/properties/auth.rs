//! Authorization (HTTP with OAuth; the ghost follows the refusals, the machine's `Authorize`
//! actions and the environment's answers to them, [`crate::ghost::auth`]): an authorization
//! is asked for only for the current generation, never while one for it is under way, and
//! at most the budget in a row; a request refused for want of one waits, and goes out again
//! exactly when it ends with a token; refused again, or the authorization failed, it is
//! answered (the handshake's attempt ends); nobody waits for an authorization nobody runs.

use mcp_machine::State;
use stateright::Property;

use super::{fail, ok};
use crate::model::Harness;
use crate::properties::guards as seen;
use crate::world::{Move, World};

/// Authorization (HTTP with OAuth): an authorization was asked for while one for the same
/// generation was under way, or past the budget of authorizations in a row; a request
/// refused for want of authorization was sent again before the authorization ended with a
/// token, or not sent again in the step it did; a call refused again after one was not
/// answered; a failed authorization left a caller waiting or the handshake's attempt open;
/// or a caller (or the handshake) waited for an authorization nobody was running.
pub const AUTH: u64 = 1 << 33;

pub(super) fn auth() -> Property<Harness> {
    Property::<Harness>::always(
        "a request refused for want of authorization waits for one authorization at a time, within the budget, and goes out again exactly when it ends with a token; refused again, or the authorization failed, it is answered",
        |_, w| ok(w, AUTH),
    )
}

/// The machine asks for an authorization for `generation`: one at a time, for the generation
/// that met the refusal, within the budget (counted here).
pub(crate) fn asked(n: &mut World, generation: u64) {
    if !n.ghost.auth_pending.insert(generation) || generation != n.m.generation() {
        fail(n, AUTH);
    }
    n.ghost.authorizations += 1;
    if n.ghost.authorizations > n.m.config().max_authorizations {
        fail(n, AUTH);
    }
}

/// A handshake request goes out on `generation` in a step of move `mv`: if it was refused for
/// want of authorization, only when the authorization ends with a token (then it waits no
/// more).
pub(crate) fn handshake_request_sent(n: &mut World, mv: Option<Move>, generation: u64) {
    if n.ghost.handshake_auth == Some(generation) {
        if mv == Some(Move::Authorize(generation, true)) {
            n.ghost.handshake_auth = None;
            n.ghost.handshake_authorized.insert(generation);
        } else {
            fail(n, AUTH);
        }
    }
}

/// A caller waiting for an authorization was sent again before it ended with a token.
pub(crate) fn sent_while_waiting(n: &mut World) {
    fail(n, AUTH);
}

/// The authorization obligations of one step, after the ghost learnt what it did
/// ([`crate::ghost::auth::after_move`]; `refused_again`: a caller refused for want of
/// authorization after one already, and not answered).
pub(crate) fn judge(w: &World, n: &mut World, mv: Move, stale: bool, refused_again: bool) {
    let unanswered = |n: &World, c: u8| n.ghost.calls.get(&c).is_some_and(|x| x.replies == 0);
    let closed = |n: &World, g: u64| n.env.gens.get(&g).is_none_or(|e| e.closed);
    // Refused after an authorization already: that is its answer.
    if refused_again {
        fail(n, AUTH);
    }
    if let Move::Authorize(g, ok) = mv
        && !stale
        && !closed(w, g)
    {
        let waited: Vec<u8> = w
            .ghost
            .auth_waiting
            .iter()
            .filter(|(c, on)| **on == g && unanswered(w, **c))
            .map(|(c, _)| *c)
            .collect();
        let missed = if ok {
            // Sent again in this step (or answered), the handshake request too.
            waited
                .iter()
                .any(|c| n.ghost.auth_resend_due.contains(c) && unanswered(n, *c))
                || (w.ghost.handshake_auth == Some(g) && n.ghost.handshake_auth == Some(g))
        } else {
            // Answered in this step, the handshake's attempt ended.
            waited.iter().any(|c| unanswered(n, *c))
                || (w.ghost.handshake_auth == Some(g) && !closed(n, g))
        };
        if missed {
            fail(n, AUTH);
        }
    }
    // Nobody waits for an authorization nobody runs.
    let g = n.m.generation();
    if !closed(n, g)
        && !n.ghost.auth_pending.contains(&g)
        && (n.ghost.auth_waiting.values().any(|on| *on == g) || n.ghost.handshake_auth == Some(g))
    {
        fail(n, AUTH);
    }
    if n.m.state() == State::Ready
        && w.m.state() != State::Ready
        && n.ghost.handshake_authorized.contains(&g)
    {
        n.ghost.seen |= seen::AUTH_HANDSHAKE_READY;
    }
}
