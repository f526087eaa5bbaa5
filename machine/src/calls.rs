//! The request table (calls in flight or waiting to resend) and the tombstones of ended ids.

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use crate::io::{CallId, RequestId};

/// How far a call's request frame got.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Phase {
    /// Offered to the transport; its outcome is due (`attempt` sends so far).
    Sending { attempt: u8 },
    /// The last send was busy; the retry timer is armed.
    Retrying { attempt: u8 },
    /// Taken by the transport: the server may see it, so a cancel goes on the wire.
    Sent,
    /// Kept across a session expiry (the server never ran it): sent again, with a new id,
    /// once the new session is initialized.
    Parked,
    /// Answered `input_required` (2026-07-28): the client handler is giving the inputs; sent
    /// again, with a new id, once they are all in. Nothing of it is on the wire.
    AwaitingInput,
    /// Refused with -32020 (2026-07-28: its headers did not match): the tools are being
    /// listed again, and it is sent again, with a new id, once that listing is answered.
    /// Nothing of it is on the wire.
    AwaitingRelist,
    /// A modern subscribe (2026-07-28): its URI joined the listen, and it is answered when
    /// the server acknowledges a listen asking for it. Nothing of it is on the wire (its id
    /// is never sent).
    AwaitingAck,
    /// Refused for want of authorization (HTTP with OAuth): sent again, with a new id, once
    /// the authorization under way ends with a token. Nothing of it is on the wire.
    AwaitingAuth,
}

impl Phase {
    /// Answered already by the server, and waiting for something of the client's own before
    /// it is sent again: a second answer to its id is not its result.
    pub(crate) fn answered(self) -> bool {
        matches!(
            self,
            Phase::AwaitingInput | Phase::AwaitingRelist | Phase::AwaitingAck | Phase::AwaitingAuth
        )
    }
}

/// The `input_required` rounds of one call.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct InputRounds {
    /// Rounds so far.
    pub(crate) round: u8,
    /// The inputs of the current round by key: the handler's result as JSON text, once given.
    pub(crate) awaiting: BTreeMap<String, Option<String>>,
    /// The round's `requestState`, exactly as received.
    pub(crate) state: Option<String>,
}

/// Whose request an entry is: a caller's, or one of the client's own and what for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum RequestKind {
    /// A caller's call, answered to that caller.
    Caller(CallId),
    /// A request of the client's own restoring the session (log level, subscriptions).
    Restore,
    /// The client's own listing of the tools again after a -32020.
    Relist,
    /// A listen (`subscriptions/listen`).
    Listen,
    /// A request of a caller's task (`tasks/get`, `tasks/result`, `tasks/update`): the
    /// tasks rows answer its caller, never the generic ones.
    Task(CallId),
    /// A `tasks/cancel` of the client's own: nobody waits for its answer.
    TaskCancel,
}

impl RequestKind {
    /// The caller waiting for the answer, for a caller's call.
    pub(crate) fn caller(self) -> Option<CallId> {
        match self {
            RequestKind::Caller(call) => Some(call),
            RequestKind::Restore
            | RequestKind::Relist
            | RequestKind::Listen
            | RequestKind::Task(_)
            | RequestKind::TaskCancel => None,
        }
    }

    /// The caller whose call this request serves: its own request, or a request of the task
    /// its call runs as (`tasks/get`, `tasks/result`, `tasks/update`).
    pub(crate) fn served_call(self) -> Option<CallId> {
        match self {
            RequestKind::Caller(call) | RequestKind::Task(call) => Some(call),
            RequestKind::Restore
            | RequestKind::Relist
            | RequestKind::Listen
            | RequestKind::TaskCancel => None,
        }
    }

    /// The caller of the task this request is about (`tasks/get`, `tasks/result`,
    /// `tasks/update`): `None` for every other request.
    pub(crate) fn task(self) -> Option<CallId> {
        match self {
            RequestKind::Task(call) => Some(call),
            RequestKind::Caller(_)
            | RequestKind::Restore
            | RequestKind::Relist
            | RequestKind::Listen
            | RequestKind::TaskCancel => None,
        }
    }
}

/// A caller's call waiting for a ready connection (`CallOptions::wait_for_ready`): nothing of
/// it is on the wire, and it has no request id yet (its frame is written once the era of the
/// connection that takes it is known).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct WaitingCall {
    /// The call as the caller made it.
    pub(crate) request: crate::event::CallRequest,
    /// When it was made: its deadline runs from here.
    pub(crate) since: Duration,
}

impl std::hash::Hash for WaitingCall {
    // Consistent with `Eq`: the params (JSON) are left out of the hash.
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.request.call.hash(state);
        self.request.method.hash(state);
        self.request.options.hash(state);
        self.request.session.hash(state);
        self.since.hash(state);
    }
}

/// One call in flight.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Entry {
    /// Whose request it is.
    pub(crate) kind: RequestKind,
    /// What the call changes in the session, recorded when the server acknowledges it.
    pub(crate) session: Option<crate::event::SessionChange>,
    /// Its frame as sent (the copy kept to send it again).
    pub(crate) frame: crate::outgoing::Outgoing,
    pub(crate) phase: Phase,
    pub(crate) started: Duration,
    pub(crate) timeout: Duration,
    pub(crate) progress: bool,
    pub(crate) reset_on_progress: bool,
    pub(crate) max_total: Option<Duration>,
    /// The caller's bound on the whole call should the server run it as a task.
    pub(crate) task_timeout: Option<Duration>,
    /// Sent again after a session expiry (a call is sent again at most once).
    pub(crate) resent: bool,
    /// Its `input_required` rounds, once it had one.
    pub(crate) input_rounds: Option<Box<InputRounds>>,
    /// Times it was sent again after its request was lost without an answer.
    pub(crate) reissues: u8,
    /// It was refused with -32020 once already (the tools were listed again for it).
    pub(crate) relisted: bool,
    /// It was refused for want of authorization once already (a second refusal is its answer).
    pub(crate) auth_refused: bool,
}

/// Calls by request id, with the reverse index by caller.
///
/// Entries are boxed: a B-tree node holds eleven slots whether they are used or not, and
/// ids come in ascending order (nodes left about half full), so inline entries cost a client
/// with many calls in flight about twice their size each, and every checked state with a
/// call in flight a whole node of them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct Calls {
    by_id: BTreeMap<RequestId, Box<Entry>>,
    by_call: BTreeMap<CallId, RequestId>,
}

impl Calls {
    pub(crate) fn insert(&mut self, id: RequestId, entry: Entry) {
        if let Some(call) = entry.kind.caller() {
            self.by_call.insert(call, id);
        }
        self.by_id.insert(id, Box::new(entry));
    }

    pub(crate) fn get(&self, id: RequestId) -> Option<&Entry> {
        self.by_id.get(&id).map(|e| &**e)
    }

    pub(crate) fn get_mut(&mut self, id: RequestId) -> Option<&mut Entry> {
        self.by_id.get_mut(&id).map(|e| &mut **e)
    }

    pub(crate) fn id_of(&self, call: CallId) -> Option<RequestId> {
        self.by_call.get(&call).copied()
    }

    pub(crate) fn remove(&mut self, id: RequestId) -> Option<Entry> {
        let entry = self.by_id.remove(&id)?;
        if let Some(call) = entry.kind.caller() {
            self.by_call.remove(&call);
        }
        Some(*entry)
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = (RequestId, &Entry)> {
        self.by_id.iter().map(|(id, e)| (*id, &**e))
    }

    /// The ids of the calls in `phase`, in id order.
    pub(crate) fn in_phase(&self, phase: Phase) -> Vec<RequestId> {
        self.by_id
            .iter()
            .filter(|(_, e)| e.phase == phase)
            .map(|(id, _)| *id)
            .collect()
    }

    pub(crate) fn ids(&self) -> Vec<RequestId> {
        self.by_id.keys().copied().collect()
    }

    pub(crate) fn len(&self) -> usize {
        self.by_id.len()
    }
}

/// Ids that ended (timed out, cancelled, failed, abandoned), remembered for a TTL so that a
/// late answer is recognised as late rather than unknown. The TTL is the same for every
/// entry and time never goes back, so insertion order is expiry order: a sweep pops from the
/// front and costs what it drops.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct Tombstones {
    order: VecDeque<(Duration, RequestId)>,
    live: BTreeMap<RequestId, Duration>,
}

impl Tombstones {
    pub(crate) fn insert(&mut self, id: RequestId, expires: Duration) {
        if self.live.insert(id, expires).is_none() {
            self.order.push_back((expires, id));
        }
    }

    /// Whether `id` is tombstoned and not expired at `now` (`age >= ttl` means expired).
    pub(crate) fn contains(&self, id: RequestId, now: Duration) -> bool {
        self.live.get(&id).is_some_and(|exp| now < *exp)
    }

    /// Drops every entry expired at `now`; returns how many.
    pub(crate) fn sweep(&mut self, now: Duration) -> usize {
        let mut dropped = 0;
        while let Some(&(exp, id)) = self.order.front() {
            if exp > now {
                break;
            }
            self.order.pop_front();
            self.live.remove(&id);
            dropped += 1;
        }
        dropped
    }

    pub(crate) fn len(&self) -> usize {
        self.live.len()
    }

    /// When the oldest tombstone held expired (or expires).
    #[cfg(feature = "checker")]
    pub(crate) fn oldest_expiry(&self) -> Option<Duration> {
        self.order.front().map(|(exp, _)| *exp)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tombstones_expire_in_order() {
        let mut t = Tombstones::default();
        t.insert(1, Duration::from_secs(10));
        t.insert(2, Duration::from_secs(20));
        assert!(t.contains(1, Duration::from_secs(9)));
        assert!(!t.contains(1, Duration::from_secs(10)));
        assert_eq!(t.sweep(Duration::from_secs(15)), 1);
        assert_eq!(t.len(), 1);
        assert!(t.contains(2, Duration::from_secs(15)));
        assert!(!t.contains(3, Duration::from_secs(0)));
    }
}
