//! The interpreter: the machine's actions carried out as the runtime's driver would, each
//! recorded as ghost history (what the transports, the server, the callers and the handler
//! now know), with the properties of each action judged as it is carried out.

use std::time::Duration;

use mcp_machine::{Action, Report, ServerRequestId};

use super::{reply, send};
use crate::env::call_options;
use crate::properties::guards as seen;
use crate::properties::{auth, replies, reports, stop, tasks, transport};
use crate::world::{Move, World};

/// Carries out `action`, of a step of move `mv` (`None`: a timer's, or the initial actions).
pub(crate) fn interpret(n: &mut World, mv: Option<Move>, action: Action) {
    match action {
        Action::SpawnTransport { generation } => {
            transport::spawned(n);
            n.env.gens.insert(generation, Default::default());
        }
        Action::CloseTransport { generation } => {
            if let Some(g) = n.env.gens.get_mut(&generation) {
                g.closed = true;
            }
            // Nobody waits for an authorization of a closed generation (kept calls go out
            // on the next one, under the session rules).
            n.ghost.auth_waiting.retain(|_, on| *on != generation);
            if n.ghost.handshake_auth == Some(generation) {
                n.ghost.handshake_auth = None;
            }
        }
        Action::Authorize { generation, .. } => auth::asked(n, generation),
        Action::GrantCredit {
            generation,
            credits,
        } => {
            if transport::credit_for_open(n, generation)
                && let Some(g) = n.env.gens.get_mut(&generation)
            {
                g.credit = g
                    .credit
                    .saturating_add(u8::try_from(credits).unwrap_or(u8::MAX));
            }
        }
        Action::Send {
            generation, frame, ..
        } => send::send(n, mv, generation, &frame),
        Action::Reply {
            call,
            request,
            outcome,
        } => reply::reply(n, mv, call, request, outcome),
        Action::StopDone { call, already } => stop::stop_done(n, call, already),
        Action::ServerRequest {
            generation,
            request,
        } => {
            let id = match request.id {
                ServerRequestId::Int(i) => i,
                ServerRequestId::Str(_) | ServerRequestId::Number(_) => -1,
            };
            n.env.server_requests.insert((generation, id));
            n.ghost.server_cancelled.remove(&(generation, id));
        }
        Action::InputRequest {
            generation,
            request,
            key,
            ..
        } => {
            tasks::input_handed(n, request, &key);
            n.env
                .inputs
                .insert((generation, request, u8::from(key != "q")));
        }
        // An abort races the handler: its answer may still come, and must change nothing.
        Action::AbortServerRequest { .. }
        | Action::AbortServerRequests { .. }
        | Action::AbortInputs { .. } => {}
        // A task's status is like progress: nothing after the answer.
        Action::TaskStatus { call, .. } => replies::progress(n, call.0),
        Action::Progress { call, .. } => {
            replies::progress(n, call.0);
            // Progress moves the deadline of a call that asked for it, never past its cap.
            let now = n.m.now();
            let timeout = n.m.config().request_timeout;
            if let Ok(c) = u8::try_from(call.0)
                && let options = call_options(c, n.m.config().tasks)
                && options.reset_timeout_on_progress
                && let Some(g) = n.ghost.calls.get_mut(&c)
            {
                let cap = options
                    .max_total_timeout
                    .map_or(Duration::MAX, |t| g.started.saturating_add(t));
                let moved = now.saturating_add(options.timeout.unwrap_or(timeout));
                g.deadline = moved.min(cap);
            }
        }
        Action::Report(Report::LateResponse { .. }) => n.ghost.seen |= seen::LATE_DROPPED,
        Action::Report(Report::ListenGaveUp) => n.ghost.seen |= seen::LISTEN_GAVE_UP,
        Action::Report(Report::UnknownResponse { id }) => reports::unknown_response(n, &id),
        Action::Exit => stop::exit(n),
        Action::Report(_) | Action::Notification(_) | Action::Listening(_) => {}
    }
}
