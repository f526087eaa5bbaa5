//! Sends: a caller's request the transport refused is answered at once; a busy one is
//! answered at once when its sends are spent, and otherwise offered again within its retry
//! delay (a request of the client's own too, while it lives); a refused handshake request ends
//! the attempt at once. The ghost keeps, per request, its busy outcomes and when its next
//! offer is due.

use mcp_machine::{SendOutcome, SendToken, State};
use stateright::Property;

use super::fail;
use super::reports::UNREPORTED;
use crate::env::drain::StepLog;
use crate::model::Harness;
use crate::world::{Owner, World};

pub(super) fn busy_offered_again() -> Property<Harness> {
    Property::<Harness>::always("a busy request is offered again in time", |_, w| {
        let now = w.m.now();
        w.ghost
            .calls
            .values()
            .all(|g| g.replies > 0 || g.resend_due.is_none_or(|d| now <= d))
            && w.ghost
                .own_busy
                .values()
                .all(|(_, due)| due.is_none_or(|d| now <= d))
    })
}

/// The outcomes of the step's request frames (see the module doc); `w` is the state before
/// the step.
pub(crate) fn outcomes(w: &World, n: &mut World, record: &StepLog) {
    let fail = |n: &mut World| fail(n, UNREPORTED);
    // A caller's request the transport refused is answered at once; a busy one is
    // answered at once when its sends are spent, and otherwise offered again in time.
    let attempts = n.m.config().send_attempts;
    let c = n.m.config();
    let bound = c.retry_delay * (100 + c.retry_jitter_pct) / 100;
    let now = n.m.now();
    let replied_before = |c: u8| w.ghost.calls.get(&c).map_or(0, |g| g.replies);
    for (id, outcome) in &record.request_outcomes {
        let owner = n.ghost.owners.get(id).copied();
        // A refused `initialize` ends the attempt at once.
        if let Some(Owner::Init(_) | Owner::Probe(_)) = owner
            && *outcome != SendOutcome::Ok
            && n.m.state() != State::Backoff
        {
            fail(n);
        }
        let resent = record
            .sends
            .iter()
            .filter(|(_, t, _)| *t == SendToken::Request(*id))
            .count()
            > 1;
        // A request of the client's own (a listen, a listing of the tools, a restore)
        // found busy is offered again in time too, while it has sends left.
        if let Some(Owner::Listen(_) | Owner::Relist(_) | Owner::Restore(_)) = owner {
            let entry = n.ghost.own_busy.entry(*id).or_default();
            match outcome {
                SendOutcome::Busy => {
                    entry.0 = entry.0.saturating_add(1);
                    entry.1 = (entry.0 < attempts && !resent).then(|| now.saturating_add(bound));
                }
                SendOutcome::Ok | SendOutcome::Failed => entry.1 = None,
            }
            continue;
        }
        let Some(Owner::Call(caller)) = owner else {
            continue;
        };
        let Some(g) = n.ghost.calls.get_mut(&caller) else {
            continue;
        };
        match outcome {
            SendOutcome::Failed if g.replies == 0 => fail(n),
            SendOutcome::Busy => {
                g.busy += 1;
                let answered_now = g.replies > replied_before(caller);
                // (Answered in the same step by its deadline, which may fall there too.)
                let early = answered_now && g.busy < attempts && now < g.deadline;
                if (g.replies == 0 && g.busy >= attempts) || early {
                    fail(n);
                } else if g.replies == 0 && !resent {
                    g.resend_due = Some(now.saturating_add(bound));
                }
            }
            SendOutcome::Ok => g.resend_due = None,
            SendOutcome::Failed => {}
        }
    }
}
