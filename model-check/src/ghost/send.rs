//! A frame the machine offers to a transport (`Action::Send`), read as the server would read
//! it: who its id was issued for ([`Owner`]), the handshake requests of each generation, the
//! listens, the restores and the listing of the tools, and which of a caller's new requests
//! are the resends the protocol calls for (after a session expiry, a lost request, -32020, an
//! authorization, an `input_required` round). The properties of what may be sent judge it
//! as it goes.

use serde_json::Value;

use super::listen::listen_sent;
use super::tasks;
use crate::env::{SUBSCRIBER, UNSUBSCRIBER, URI};
use crate::properties;
use crate::properties::{auth, era, mrtr, stop, transport, wire};
use crate::world::{Move, Owner, TaskReq, World};

/// The machine offers `frame` to `generation` in a step of move `mv` (`None`: a timer's,
/// or the initial actions).
pub(crate) fn send(n: &mut World, mv: Option<Move>, generation: u64, frame: &[u8]) {
    stop::on_send(n);
    transport::on_send(n, generation);
    let v: Value = serde_json::from_slice(frame).unwrap_or(Value::Null);
    let method = v.get("method").and_then(Value::as_str).unwrap_or("");
    if let Some(id) = v
        .get("id")
        .and_then(Value::as_u64)
        .filter(|_| !method.is_empty())
    {
        request(n, mv, generation, id, method, &v);
    } else if v.get("method").is_none() && v.get("id").is_some() {
        // A response to a server request.
        era::response_sent(n, generation);
    }
}

/// A request with id `id` and method `method` (the frame `v`).
fn request(n: &mut World, mv: Option<Move>, generation: u64, id: u64, method: &str, v: &Value) {
    let caller = v["params"]["caller"]
        .as_u64()
        .and_then(|c| u8::try_from(c).ok());
    let modern_frame = v["params"]["_meta"]
        .get("io.modelcontextprotocol/protocolVersion")
        .is_some();
    let first_of_generation =
        !n.ghost.init_sent.contains(&generation) && !n.ghost.probes.contains_key(&generation);
    // A handshake request refused for want of authorization goes out again only when the
    // authorization ends with a token.
    if matches!(method, "server/discover" | "initialize") {
        auth::handshake_request_sent(n, mv, generation);
    }
    match method {
        "server/discover" => {
            if first_of_generation {
                n.ghost.must_probe = false;
            }
            n.ghost.probes.insert(generation, id);
        }
        "initialize" => {
            era::initialize_sent(n, generation, first_of_generation);
            // The probe went unanswered (it was abandoned).
            if n.ghost
                .probes
                .get(&generation)
                .is_some_and(|probe| n.env.on_wire.get(probe).is_some_and(|(_, a)| *a == 0))
            {
                n.ghost.silent.insert(generation);
            }
            n.ghost.init_sent.insert(generation);
        }
        // No modern request before the server answered the probe as modern.
        _ => era::request_sent(n, generation, modern_frame),
    }
    if method == "subscriptions/listen" && !n.ghost.owners.contains_key(&id) {
        listen_sent(n, mv, generation, id, v);
    }
    // An `input_required` retry carries exactly what its round owes: the inputs it asked for
    // and its state as received (none when none was given); nothing else carries them.
    let fresh = !n.ghost.owners.contains_key(&id);
    let params = &v["params"];
    if let Some(c) = caller
        && fresh
    {
        match n.ghost.mrtr.remove(&c) {
            Some((state, asks)) => {
                let rounds = n.ghost.rounds.entry(c).or_default();
                *rounds += 1;
                let rounds = *rounds;
                mrtr::retry_sent(n, params, state.as_deref(), asks, rounds);
                n.ghost.retried.insert(c);
                if let Some(g) = n.ghost.calls.get_mut(&c) {
                    // A retry is the call's request from now on (a new id).
                    g.request = None;
                }
            }
            // A reissue, or a call sent again after a listing of the tools or an
            // authorization, carries what its last request carried.
            None => {
                let resend = n.ghost.reissue_due.contains(&c)
                    || n.ghost.relist_waiting.contains(&c)
                    || n.ghost.auth_resend_due.contains(&c);
                mrtr::other_request_sent(n, params, resend);
            }
        }
    }
    // A task's request names its task (`taskId`): the caller it polls for.
    let task = match method {
        "tasks/get" => Some(Some(TaskReq::Get)),
        "tasks/result" => Some(Some(TaskReq::Result)),
        "tasks/update" => Some(Some(TaskReq::Update)),
        "tasks/cancel" => Some(None),
        _ => None,
    }
    .and_then(|req| tasks::caller_of(n, v).map(|c| (c, req)));
    if let Some((c, req)) = task
        && !n.ghost.owners.contains_key(&id)
    {
        match req {
            Some(TaskReq::Get) => properties::tasks::get_sent(n, c),
            None => properties::tasks::cancel_sent(n, c),
            Some(_) => {}
        }
        tasks::sent(n, c, req, id, v);
    }
    let owner = match (method, mv, n.ghost.owners.get(&id)) {
        _ if task.is_some() => match task {
            Some((c, Some(req))) => Owner::Task(c, req),
            Some((c, None)) => Owner::TaskCancel(c),
            None => Owner::Init(0),
        },
        ("initialize", _, _) => Owner::Init(generation),
        ("server/discover", _, _) => Owner::Probe(generation),
        ("subscriptions/listen", _, _) => Owner::Listen(generation),
        _ if caller.is_some() => Owner::Call(caller.unwrap_or_default()),
        (_, Some(Move::Call(c)), _) => Owner::Call(c),
        (_, Some(Move::Subscribe), _) => Owner::Call(SUBSCRIBER),
        (_, Some(Move::Unsubscribe), _) => Owner::Call(UNSUBSCRIBER),
        (_, _, Some(o)) => *o,
        ("resources/subscribe" | "logging/setLevel", _, None) => Owner::Restore(generation),
        ("tools/list", _, None) => Owner::Relist(generation),
        (_, _, None) => Owner::Init(0),
    };
    if owner == Owner::Relist(generation) && !n.ghost.owners.contains_key(&id) {
        n.ghost.relist_in_flight = Some(id);
    }
    if owner == Owner::Restore(generation)
        && !n.ghost.owners.contains_key(&id)
        && v["params"]["uri"] == URI
    {
        *n.ghost.restores.entry(generation).or_default() += 1;
    }
    match n.ghost.owners.get(&id) {
        Some(o) if *o != owner => wire::reused(n),
        Some(_) => {}
        None => {
            if let Owner::Call(c) = owner {
                new_request(n, c, id);
            }
            n.ghost.owners.insert(id, owner);
        }
    }
    // A legacy request goes out only after `notifications/initialized`.
    wire::request_after_initialized(n, generation, method, modern_frame);
}

/// Caller `c`'s request goes out under a new id `id`. Only a call kept across a session
/// expiry is sent again (once), or one whose request was lost, refused with -32020 or
/// refused for want of an authorization that then ended with a token: the ghost moves it on
/// to what it waits for next.
fn new_request(n: &mut World, c: u8, id: u64) {
    let Some(request) = n.ghost.calls.get(&c).map(|g| g.request) else {
        return;
    };
    if request.is_some() {
        if n.ghost.parked.remove(&c) {
            n.ghost.resent.insert(c);
        } else if n.ghost.reissue_due.remove(&c) {
            *n.ghost.reissues.entry(c).or_default() += 1;
        } else if n.ghost.relist_waiting.remove(&c) {
            n.ghost.resent_relisted.insert(c);
        } else if n.ghost.auth_resend_due.remove(&c) {
            n.ghost.auth_resent.insert(c);
        } else if n.ghost.auth_waiting.contains_key(&c) {
            auth::sent_while_waiting(n);
        } else {
            wire::reused(n);
        }
    }
    if request.is_none() {
        crate::properties::waiting::first_sent(n, c);
    }
    if let Some(g) = n.ghost.calls.get_mut(&c) {
        g.request = Some(id);
        // A new request's sends start over (its own attempts).
        g.busy = 0;
    }
}
