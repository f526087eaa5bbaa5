//! The timer table: state-scoped, periodic and keyed (one per request id) deadlines.
//!
//! Unlike the seeds' gen_statem `state_timeout` (one per state, cancelled by any transition),
//! every timer here has its own slot: a keyed timer lives until its call ends, whatever the
//! state does; state-scoped and periodic timers are cancelled when the machine enters a state
//! outside their `states` in the spec ([`TimerKind::armed_in`]).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use crate::generated::{State, TimerKind};
use crate::io::RequestId;

/// One armed timer: its kind, and the request id for keyed kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TimerKey {
    /// Which timer.
    pub kind: TimerKind,
    /// The request it belongs to (keyed timers only).
    pub id: Option<RequestId>,
}

impl TimerKey {
    /// A state-scoped or periodic timer.
    pub const fn plain(kind: TimerKind) -> Self {
        TimerKey { kind, id: None }
    }

    /// A keyed timer.
    pub const fn keyed(kind: TimerKind, id: RequestId) -> Self {
        TimerKey { kind, id: Some(id) }
    }
}

/// Armed timers by key and by deadline (both kept in step).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct Timers {
    by_key: BTreeMap<TimerKey, Duration>,
    by_deadline: BTreeSet<(Duration, TimerKey)>,
}

impl Timers {
    /// Arms (or re-arms) `key` at `at`.
    pub(crate) fn arm(&mut self, key: TimerKey, at: Duration) {
        if let Some(old) = self.by_key.insert(key, at) {
            self.by_deadline.remove(&(old, key));
        }
        self.by_deadline.insert((at, key));
    }

    /// Disarms `key` if armed.
    pub(crate) fn cancel(&mut self, key: TimerKey) {
        if let Some(old) = self.by_key.remove(&key) {
            self.by_deadline.remove(&(old, key));
        }
    }

    /// The deadline of `key`, if armed.
    pub(crate) fn deadline(&self, key: TimerKey) -> Option<Duration> {
        self.by_key.get(&key).copied()
    }

    /// The earliest deadline.
    pub(crate) fn next(&self) -> Option<Duration> {
        self.by_deadline.first().map(|(at, _)| *at)
    }

    /// Removes and returns the earliest timer due at `now` (ties broken by key order).
    pub(crate) fn pop_due(&mut self, now: Duration) -> Option<TimerKey> {
        let &(at, key) = self.by_deadline.first()?;
        if at > now {
            return None;
        }
        self.by_deadline.remove(&(at, key));
        self.by_key.remove(&key);
        Some(key)
    }

    /// Cancels the state-scoped and periodic timers that may not stay armed in `state`.
    pub(crate) fn leave_for(&mut self, state: State) {
        let stale: Vec<TimerKey> = self
            .by_key
            .keys()
            .filter(|k| !k.kind.armed_in(state))
            .copied()
            .collect();
        for key in stale {
            self.cancel(key);
        }
    }

    /// Every armed timer, in key order.
    pub(crate) fn armed(&self) -> impl Iterator<Item = (TimerKey, Duration)> + '_ {
        self.by_key.iter().map(|(k, d)| (*k, *d))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn earliest_first_and_rearm_moves() {
        let mut t = Timers::default();
        let a = TimerKey::keyed(TimerKind::RequestTimeout, 1);
        let b = TimerKey::keyed(TimerKind::RequestTimeout, 2);
        t.arm(a, Duration::from_secs(5));
        t.arm(b, Duration::from_secs(3));
        assert_eq!(t.next(), Some(Duration::from_secs(3)));
        t.arm(b, Duration::from_secs(9));
        assert_eq!(t.pop_due(Duration::from_secs(6)), Some(a));
        assert_eq!(t.pop_due(Duration::from_secs(6)), None);
        t.cancel(b);
        assert_eq!(t.next(), None);
    }

    #[test]
    fn leaving_cancels_scoped_timers_only() {
        let mut t = Timers::default();
        t.arm(
            TimerKey::plain(TimerKind::InitTimeout),
            Duration::from_secs(1),
        );
        t.arm(
            TimerKey::keyed(TimerKind::RequestTimeout, 4),
            Duration::from_secs(1),
        );
        t.arm(
            TimerKey::plain(TimerKind::TombstoneSweep),
            Duration::from_secs(1),
        );
        t.leave_for(State::Ready);
        let mut kinds: Vec<_> = t.armed().map(|(k, _)| k.kind).collect();
        kinds.sort_by_key(|k| format!("{k:?}"));
        assert_eq!(
            kinds,
            [TimerKind::RequestTimeout, TimerKind::TombstoneSweep]
        );
        t.leave_for(State::Closing);
        let kinds: Vec<_> = t.armed().map(|(k, _)| k.kind).collect();
        assert_eq!(kinds, [TimerKind::RequestTimeout]);
    }
}
