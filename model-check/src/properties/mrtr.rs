//! `input_required` (2026-07-28, MRTR): a request carrying `inputResponses` or
//! `requestState` goes out only as the retry an `input_required` round of that same call owes,
//! once, under a new id, with exactly the inputs the round asked for and its `requestState` as
//! received (none when the round had none), never past the round cap; the retry goes out in
//! the step the round's last input is given, and a handler's error to an input answers its
//! call in that step.

use serde_json::Value;
use stateright::Property;

use super::{fail, ok};
use crate::model::Harness;
use crate::world::{Move, Owner, World};
use mcp_machine::State;

/// An `input_required` round was not retried exactly: not under a new id, not with the
/// round's inputs and its `requestState` as received (none when none was given), for
/// another call, twice, or past the round cap.
pub const MRTR: u64 = 1 << 29;

pub(super) fn mrtr() -> Property<Harness> {
    Property::<Harness>::always(
        "an input_required round is sent again exactly: a new id, its inputs, its state as received, within the round cap",
        |_, w| ok(w, MRTR),
    )
}

/// A caller's request went out under a new id as the retry its round owes (`state`: the
/// `requestState` expected, `asks`: the inputs asked for), the `rounds`-th retry of the
/// call: exactly the inputs and the state, within the cap.
pub(crate) fn retry_sent(n: &mut World, params: &Value, state: Option<&str>, asks: u8, rounds: u8) {
    let has_state = params.get("requestState").is_some();
    let has_inputs = params.get("inputResponses").is_some();
    let sent_state = params.get("requestState").and_then(Value::as_str);
    let keys_ok = match asks {
        0 => !has_inputs,
        n => params["inputResponses"].as_object().is_some_and(|r| {
            r.len() == usize::from(n) && r.contains_key("q") && (n == 1 || r.contains_key("r"))
        }),
    };
    let cap = n.m.config().max_input_rounds;
    if sent_state != state || (state.is_none() && has_state) || !keys_ok || rounds > cap {
        fail(n, MRTR);
    }
}

/// A caller's request went out under a new id that is no round's retry: it carries no
/// inputs nor state, unless it is sent again as its last request was (`resend`: a reissue,
/// after a listing of the tools, after an authorization).
pub(crate) fn other_request_sent(n: &mut World, params: &Value, resend: bool) {
    let has_state = params.get("requestState").is_some();
    let has_inputs = params.get("inputResponses").is_some();
    if (has_state || has_inputs) && !resend {
        fail(n, MRTR);
    }
}

/// The last input of a round given: the round's retry goes out in the same step (or the
/// call was answered).
pub(crate) fn retried_at_last_input(w: &World, n: &mut World, mv: Move) {
    if let Move::InputReply(g, id, _, true) = mv
        && g == w.m.generation()
        && w.m.state() == State::Ready
        && let Some(Owner::Call(c)) = w.ghost.owners.get(&id)
        && w.ghost.mrtr.contains_key(c)
        && !n.env.inputs.iter().any(|(on, r, _)| *on == g && *r == id)
        && n.ghost.mrtr.contains_key(c)
        && n.ghost.calls.get(c).is_some_and(|x| x.replies == 0)
    {
        fail(n, MRTR);
    }
}

/// A handler's error to an input a live call awaits answers that call at once.
pub(crate) fn input_error_answers(w: &World, n: &mut World, mv: Move) {
    if let Move::InputReply(g, id, _, false) = mv
        && g == w.m.generation()
        && w.m.state() == State::Ready
        && let Some(Owner::Call(c)) = w.ghost.owners.get(&id)
        && w.ghost.mrtr.contains_key(c)
        && n.ghost.calls.get(c).is_some_and(|x| x.replies == 0)
    {
        fail(n, MRTR);
    }
}
