//! What a frame the environment sends tells the ghost before the machine takes it (judged
//! from the state before the step): what the server is now owed, the retry an
//! `input_required` round owes, a lost request's reissue, a -32020's wait for a listing of
//! the tools, the era the probe's answer shows, a cancelled server request, what the frame
//! must bring about in its step, and the listen frames' facts.

use mcp_machine::State;

use super::listen::listen_frame;
use crate::env::frames::SAMPLING_ID;
use crate::env::{SUBSCRIBER, UNSUBSCRIBER, live_generation};
use crate::properties::replies::{Expected, expected_answer};
use crate::world::{Owner, ServerFrame, World};

/// What the properties judge at the end of a frame's step, noted before it.
#[derive(Debug, Default)]
pub(crate) struct FrameNotes {
    /// What the frame must bring about in its step.
    pub expect: Option<Expected>,
    /// A live call's request lost without an answer: the caller, and whether it had
    /// reissues left.
    pub lost: Option<(u8, bool)>,
    /// A live call refused with -32020: the caller, and whether it is the first time (it
    /// waits for a listing of the tools).
    pub mismatch: Option<(u8, bool)>,
}

/// Frame `f` of generation `g` (`stale`: not the current one) arrives: what the ghost learns
/// of it, and what the step must bring about.
pub(crate) fn before(w: &World, n: &mut World, g: u64, f: ServerFrame, stale: bool) -> FrameNotes {
    let mut notes = FrameNotes::default();
    let live = !stale
        && live_generation(w, g)
        && matches!(w.m.state(), State::Initializing | State::Ready);
    // A modern server is never answered (it never sends requests).
    if live
        && !w.ghost.discovered.contains(&g)
        && let Some(id) = f.server_request_id()
    {
        *n.ghost.owed.entry((g, id)).or_default() += 1;
    }
    // A live modern call's `input_required` round: the retry it owes.
    if let Some((id, state, asks)) = f.input_round()
        && !stale
        && w.m.state() == State::Ready
        && w.ghost.discovered.contains(&g)
        && w.env.on_wire.get(&id).is_some_and(|(_, a)| *a == 0)
        && let Some(Owner::Call(c)) = w.ghost.owners.get(&id)
        && w.ghost.calls.get(c).is_some_and(|x| x.replies == 0)
    {
        n.ghost.mrtr.insert(*c, (state, asks));
    }
    // A live call's request lost without an answer: with reissues left, its next
    // fresh id is the reissue.
    if let Some(id) = f.loses_request()
        && !stale
        && w.m.state() == State::Ready
        && w.ghost.discovered.contains(&g)
        && w.env.on_wire.get(&id).is_some_and(|(_, a)| *a == 0)
        && let Some(Owner::Call(c)) = w.ghost.owners.get(&id)
        && w.ghost
            .calls
            .get(c)
            .is_some_and(|x| x.replies == 0 && x.request == Some(id))
    {
        let left = w.ghost.reissues.get(c).copied().unwrap_or(0) < w.m.config().max_reissues;
        if left {
            n.ghost.reissue_due.insert(*c);
        }
        notes.lost = Some((*c, left));
    }
    // -32020 for a live call: the first time it waits for a listing of the tools.
    if let ServerFrame::HeaderMismatch(id) = f
        && !stale
        && w.m.state() == State::Ready
        && w.ghost.discovered.contains(&g)
        && w.env.on_wire.get(&id).is_some_and(|(_, a)| *a == 0)
        && let Some(Owner::Call(c)) = w.ghost.owners.get(&id)
        && w.ghost
            .calls
            .get(c)
            .is_some_and(|x| x.replies == 0 && x.request == Some(id))
    {
        // Only a tool call is listed again for (the subscriber's calls are
        // `resources/subscribe` and `resources/unsubscribe`): another is answered.
        let tool_call = *c != SUBSCRIBER && *c != UNSUBSCRIBER;
        let first = tool_call && n.ghost.relisted.insert(*c);
        if first {
            n.ghost.relist_waiting.insert(*c);
        }
        notes.mismatch = Some((*c, first));
    }
    // A modern refusal of the live `initialize`: the server is a modern one, owed
    // no response; what was owed to it until now is void (new debts, should it be
    // taken for legacy after all, are owed again).
    if let ServerFrame::InitModernRefusal(id) = f
        && !stale
        && w.m.state() == State::Initializing
        && w.ghost.owners.get(&id) == Some(&Owner::Init(g))
        && w.env.on_wire.get(&id).is_some_and(|(_, a)| *a == 0)
        && !w.ghost.ended.contains_key(&id)
    {
        n.ghost.owed.retain(|(on, _), _| *on != g);
        // Whatever the server was found to speak before, it is deciding again.
        n.ghost.verdict_modern = false;
    }
    let probing = !stale && w.m.state() == State::Probing;
    // The environment answers the live probe as a modern server.
    // (Also on a transport that refused a frame for good: its frames still arrive.)
    // (A probe refused for want of authorization is no longer live: a second
    // answer to it is late.)
    if let Some(id) = f.modern_probe_answer()
        && probing
        && w.ghost.probes.get(&g) == Some(&id)
        && w.ghost.handshake_auth != Some(g)
    {
        n.ghost.modern_answered.insert(g);
        if matches!(f, ServerFrame::DiscoverOk(_)) {
            n.ghost.discovered.insert(g);
        } else {
            n.ghost.version_refused.insert(g);
        }
    }
    if live
        && f == ServerFrame::ServerCancel
        && w.env.server_requests.contains(&(g, SAMPLING_ID))
        && n.ghost.server_cancelled.insert((g, SAMPLING_ID))
    {
        // A cancelled server request is owed nothing more (cancelled once).
        if let Some(c) = n.ghost.owed.get_mut(&(g, SAMPLING_ID)) {
            *c = c.saturating_sub(1);
        }
    }
    notes.expect = live.then(|| expected_answer(w, f)).flatten();
    // A live restore answered shows the session works, as a call answered does
    // (a restore is live while its deadline is armed).
    if let ServerFrame::Answer(id) = f
        && live
        && w.m.state() == State::Ready
        && w.ghost.owners.get(&id) == Some(&Owner::Restore(g))
        && w.m.armed_timers().iter().any(|(k, _)| k.id == Some(id))
    {
        n.ghost.reinits = 0;
    }
    let ready = !stale && w.m.state() == State::Ready;
    listen_frame(w, n, g, f, ready);
    notes
}
