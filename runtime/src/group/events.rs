//! What a group's servers tell the host, tagged with the server: [`GroupNotification`] (list
//! changes, resource updates, log messages, progress not claimed by a call, cancellations) and
//! [`GroupTransition`] (each server's connection transitions), each in a bounded feed
//! ([`super::ClientGroup::notifications`], [`super::ClientGroup::transitions`]).
//!
//! Progress of a call made with a progress channel ([`crate::RequestOptions`]) goes to that
//! channel, as on a single client; server requests go to the group's handler, told the server
//! ([`super::GroupHandler`]). One task per server forwards its feeds (`forward`).

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

use tokio::sync::watch;

use super::snapshot::Counters;
use super::supervise::GroupInner;
use crate::feed::FeedLimits;
use crate::live_lists::Lists;
use crate::types::Notification;
use crate::{ConnState, Feed, Transition};

/// A server notification, with the server that sent it.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct GroupNotification {
    /// The server's name in the group.
    pub server: Arc<str>,
    /// The notification as the server's client delivers it.
    pub notification: Notification,
}

/// A connection transition of one server.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct GroupTransition {
    /// The server's name in the group.
    pub server: Arc<str>,
    /// The transition.
    pub transition: Transition,
}

/// The bounds of each [`super::ClientGroup::transitions`] subscriber: 1024 transitions.
pub const GROUP_TRANSITION_LIMITS: FeedLimits = FeedLimits {
    items: 1024,
    bytes: usize::MAX,
};

/// The bounds of each [`super::ClientGroup::changes`] subscriber: 256 changes, 4 MiB of names.
pub const GROUP_CHANGE_LIMITS: FeedLimits = FeedLimits {
    items: 256,
    bytes: 4 << 20,
};

/// Forwards one server's notifications and transitions to the group's feeds, tagged, counts
/// its reconnects, and rebuilds the merged view when its lists change. Ends when the server's
/// client has stopped or the group is gone.
pub(super) async fn forward(
    group: Weak<GroupInner>,
    server: Arc<str>,
    mut notifications: Feed<Notification>,
    mut transitions: Feed<Transition>,
    mut lists: watch::Receiver<Lists>,
    counters: Arc<Counters>,
) {
    let (mut notes_open, mut transitions_open, mut lists_open) = (true, true, true);
    let mut was_ready = false;
    loop {
        tokio::select! {
            n = notifications.recv(), if notes_open => {
                let Some(notification) = n else {
                    notes_open = false;
                    continue;
                };
                let Some(group) = group.upgrade() else { return };
                group.publish_notification(GroupNotification { server: Arc::clone(&server), notification });
            }
            t = transitions.recv(), if transitions_open => {
                let Some(transition) = t else {
                    transitions_open = false;
                    continue;
                };
                if transition.to() == ConnState::Ready && transition.from() != ConnState::Ready {
                    if was_ready {
                        counters.reconnects.fetch_add(1, Ordering::Relaxed);
                    }
                    was_ready = true;
                }
                let Some(group) = group.upgrade() else { return };
                group.publish_transition(GroupTransition { server: Arc::clone(&server), transition });
            }
            changed = lists.changed(), if lists_open => {
                if changed.is_err() {
                    lists_open = false;
                    continue;
                }
                let Some(group) = group.upgrade() else { return };
                group.remerge();
            }
            else => return,
        }
    }
}
