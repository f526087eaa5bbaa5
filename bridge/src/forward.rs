//! The upstream's notifications on their way to the host, and the lists' changes the
//! upstream did not tell of (a reconnect, a new session, a new server process).
//!
//! Every notification goes to the host as the upstream sent it, `…/list_changed` included,
//! except progress that belongs to no call of the host's (a call's progress goes with the
//! call, under the host's token) and the upstream's cancellation of its own requests (which
//! ends the forwarded request: the session tells the host). Besides, the client keeps every
//! list fresh ([`mcp_runtime::LiveLists`]: fetched again after each `list_changed` and each
//! reconnect); a change found by a fetch the upstream did not announce (the first after a
//! reconnect, typically) is told to the host as `…/list_changed` too. The first fetch tells
//! nothing (the host has not listed yet), and a change the upstream announced is not told
//! twice.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use mcp_machine::front::UpstreamNotification;
use mcp_runtime::{Client, ClientBuilder, ConnState, Lists, ServerNotification};
use tokio::sync::mpsc;
use tokio::task::AbortHandle;

use crate::session::Inner;

/// The three `list_changed` notifications, in [`Told`]'s order.
const LIST_CHANGED: [&str; 3] = [
    "notifications/tools/list_changed",
    "notifications/prompts/list_changed",
    "notifications/resources/list_changed",
];

/// Which lists the upstream announced a change of since the lists were last fetched: the
/// fetch that follows does not announce it again.
#[derive(Clone, Default)]
pub(crate) struct Told(Arc<[AtomicBool; 3]>);

impl Told {
    fn set(&self, list: usize) {
        self.0[list].store(true, Ordering::Relaxed);
    }

    /// Whether the upstream announced this list's change (and forgets it).
    fn take(&self, list: usize) -> bool {
        self.0[list].swap(false, Ordering::Relaxed)
    }

    fn clear(&self) {
        for told in self.0.iter() {
            told.store(false, Ordering::Relaxed);
        }
    }
}

/// Hands the upstream's notifications to the session (subscribed on the builder, before it
/// connects: none is missed), which the front's table sends on. Ends when the client stops or
/// the session is gone.
pub(crate) fn notifications(
    builder: &ClientBuilder,
    to_session: mpsc::UnboundedSender<Inner>,
    told: Told,
) -> AbortHandle {
    let mut feed = builder.notifications();
    let task = tokio::spawn(async move {
        while let Some(n) = feed.recv().await {
            match n.parsed {
                ServerNotification::Progress { .. } | ServerNotification::Cancelled { .. } => {
                    continue;
                }
                ServerNotification::ToolsListChanged => told.set(0),
                ServerNotification::PromptsListChanged => told.set(1),
                ServerNotification::ResourcesListChanged => told.set(2),
                _ => {}
            }
            let note = UpstreamNotification {
                method: n.method,
                params: n.params,
            };
            if to_session.send(Inner::Notification(note)).is_err() {
                break;
            }
        }
    });
    task.abort_handle()
}

/// Tells the host of the lists' changes the upstream did not announce (see the module doc).
pub(crate) fn list_changes(
    client: &Client,
    to_session: mpsc::UnboundedSender<Inner>,
    told: Told,
) -> AbortHandle {
    let lists = client.live_lists();
    let mut states = client.watch_state();
    let task = tokio::spawn(async move {
        let mut watch = lists.watch();
        let mut last: Lists = lists.lists();
        loop {
            tokio::select! {
                changed = states.changed() => {
                    if changed.is_err() {
                        break;
                    }
                    // A new connection: what was announced on the old one says nothing of the
                    // fetch that follows.
                    if *states.borrow_and_update() == ConnState::Ready {
                        told.clear();
                    }
                    continue;
                }
                changed = watch.changed() => {
                    if changed.is_err() {
                        break;
                    }
                }
            }
            let now = watch.borrow_and_update().clone();
            let differs = [
                last.tools.is_some() && now.tools != last.tools,
                last.prompts.is_some() && now.prompts != last.prompts,
                (last.resources.is_some() && now.resources != last.resources)
                    || (last.resource_templates.is_some()
                        && now.resource_templates != last.resource_templates),
            ];
            last = now;
            for (list, changed) in differs.into_iter().enumerate() {
                if changed && !told.take(list) {
                    let note = UpstreamNotification {
                        method: LIST_CHANGED[list].to_owned(),
                        params: None,
                    };
                    if to_session.send(Inner::Notification(note)).is_err() {
                        return;
                    }
                }
            }
        }
        drop(lists);
    });
    task.abort_handle()
}
