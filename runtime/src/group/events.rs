//! What a group's servers tell the host, tagged with the server: [`GroupNotification`] (list
//! changes, resource updates, log messages, progress not claimed by a call, cancellations) and
//! [`GroupTransition`] (each server's connection transitions), each in a bounded feed
//! ([`super::ClientGroup::notifications`], [`super::ClientGroup::transitions`]).
//!
//! Progress of a call made with a progress channel ([`crate::RequestOptions`]) goes to that
//! channel, as on a single client; server requests go to the group's handler, told the server
//! ([`super::GroupHandler`]).

use std::sync::Arc;

use crate::Transition;
use crate::feed::FeedLimits;
use crate::types::Notification;

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
