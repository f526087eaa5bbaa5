//! [`ClientGroup`]: the servers of a group, each its own [`Client`] (transport, connection
//! table, backoff, session), started concurrently, added, removed and replaced at run time,
//! and stopped together; the merged view kept from each server's [`LiveLists`]; the feeds
//! tagged with the server.

use std::any::Any;
use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};

use futures_util::future::join_all;
use tokio::sync::watch;

use super::builder::{GroupBuilder, Settings, StartMode};
use super::error::{GroupError, StartFailure};
use super::events::{
    GROUP_CHANGE_LIMITS, GROUP_TRANSITION_LIMITS, GroupNotification, GroupTransition,
};
use super::merged::{self, GroupChange, MergedView};
use super::snapshot::{Counters, GroupSnapshot, ServerSnapshot};
use crate::feed::{FeedLimits, Hub};
use crate::live_lists::{AbortOnDrop, ListKind, Lists, LiveLists};
use crate::{Client, ClientBuilder, ConnState, Failure, Feed, Transition, TransportError};

/// A fingerprint of a server's configuration entry ([`ClientGroup::apply_builders`]).
type Fingerprint = Box<dyn Any + Send + Sync>;

/// A group of named MCP servers: each its own [`Client`] (own transport, connection table,
/// backoff and session), one merged view of their tools, prompts, resources and templates
/// with calls routed to the owning server, and feeds of what they say tagged with their name.
/// A cheap, clonable handle; dropping the last one stops every server (as dropping a
/// [`Client`] does), [`ClientGroup::stop`] also waits until every child is reaped.
///
/// **A server that goes down keeps its items in the merged view** (its last fetched lists)
/// while it reconnects, and its calls fail with [`crate::Error::Unavailable`] (with when it
/// retries) until it is back; the snapshot says its state. Why not hide them: hiding would
/// rename the other servers' items whenever a collision appears or disappears, and make a
/// host re-send its tool list to its model on every crash and every return; keeping them keeps
/// the names stable. When it is back its lists are fetched again, and only a real difference
/// is a change. A server that never connected lists nothing; a removed one's items go.
///
/// The lists come from each server's [`LiveLists`] (debounced re-fetch on `list_changed`,
/// re-fetch on reconnect); [`ClientGroup::changes`] says what changed, tagged by server.
#[derive(Clone)]
pub struct ClientGroup {
    inner: Arc<GroupInner>,
}

impl std::fmt::Debug for ClientGroup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientGroup")
            .field("servers", &self.names())
            .finish_non_exhaustive()
    }
}

/// What every handle of a group shares.
pub(super) struct GroupInner {
    settings: Settings,
    members: Mutex<Members>,
    /// Held through each add, remove, replace, apply and stop: one at a time.
    ops: tokio::sync::Mutex<()>,
    view: watch::Sender<Arc<MergedView>>,
    changes: Hub<GroupChange>,
    notifications: Hub<GroupNotification>,
    transitions: Hub<GroupTransition>,
}

impl Drop for GroupInner {
    fn drop(&mut self) {
        self.close_feeds();
    }
}

#[derive(Default)]
struct Members {
    map: BTreeMap<Arc<str>, Member>,
    stopped: bool,
}

/// One server of the group.
struct Member {
    client: Client,
    live: LiveLists,
    counters: Arc<Counters>,
    fingerprint: Option<Fingerprint>,
    /// The tools its configuration entry allows (`tools.allow` / `tools.deny`), when it
    /// names any: the others are left out of the merged view and refused by the group.
    tools: Option<crate::group::config::ToolFilter>,
    /// Forwards its feeds to the group's (ends with the client, or when dropped).
    _forward: AbortOnDrop,
}

/// What [`ClientGroup::apply_builders`] did, by server name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Applied {
    /// Servers new to the group.
    pub added: Vec<String>,
    /// Servers whose entry changed: stopped, then started again from the new entry.
    pub replaced: Vec<String>,
    /// Servers no longer in the entries: stopped and reaped.
    pub removed: Vec<String>,
    /// Servers whose entry was equal: left running as they were.
    pub unchanged: Vec<String>,
}

fn lock(m: &Mutex<Members>) -> MutexGuard<'_, Members> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl ClientGroup {
    /// A builder of a group.
    pub fn builder() -> GroupBuilder {
        GroupBuilder::default()
    }

    /// [`GroupBuilder::start`]: a group of `servers` with `settings`.
    pub(super) async fn start_with(
        settings: Settings,
        servers: Vec<(String, ClientBuilder)>,
    ) -> Result<ClientGroup, GroupError> {
        let inner = Arc::new(GroupInner {
            settings,
            members: Mutex::new(Members::default()),
            ops: tokio::sync::Mutex::new(()),
            view: watch::channel(Arc::new(MergedView::default())).0,
            changes: Hub::new(GROUP_CHANGE_LIMITS),
            notifications: Hub::new(FeedLimits::NOTIFICATIONS),
            transitions: Hub::new(GROUP_TRANSITION_LIMITS),
        });
        let group = ClientGroup { inner };
        let entries = servers
            .into_iter()
            .map(|(name, builder)| (name, None, builder))
            .collect();
        let started = {
            let _ops = group.inner.ops.lock().await;
            group.inner.start_members(entries).await
        };
        match started {
            Ok(()) => Ok(group),
            Err(e) => {
                group.stop().await;
                Err(e)
            }
        }
    }

    /// Adds server `name` and waits for its first connection attempt (and, if ready, its
    /// lists' first fetch), as [`GroupBuilder::start`] does for each. Fail-open it joins the
    /// group whatever happened; fail-closed a failure is [`GroupError::Start`] and the server
    /// is gone. [`GroupError::DuplicateServer`] if the name is taken, [`GroupError::Stopped`]
    /// after [`ClientGroup::stop`].
    pub async fn add(
        &self,
        name: impl Into<String>,
        builder: ClientBuilder,
    ) -> Result<(), GroupError> {
        let _ops = self.inner.ops.lock().await;
        self.inner
            .start_members(vec![(name.into(), None, builder)])
            .await
    }

    /// Adds servers started from configuration entries, each entry kept as its fingerprint
    /// (see [`ClientGroup::apply_builders`]).
    pub(super) async fn add_configured<K: PartialEq + Send + Sync + 'static>(
        &self,
        servers: Vec<(String, Option<K>, ClientBuilder)>,
    ) -> Result<(), GroupError> {
        let _ops = self.inner.ops.lock().await;
        let servers = servers
            .into_iter()
            .map(|(name, k, b)| (name, k.map(|k| Box::new(k) as Fingerprint), b))
            .collect();
        self.inner.start_members(servers).await
    }

    /// Removes server `name`: its items leave the merged view, its client is stopped and its
    /// process reaped before this returns. [`GroupError::UnknownServer`] if there is none.
    pub async fn remove(&self, name: &str) -> Result<(), GroupError> {
        let _ops = self.inner.ops.lock().await;
        let member = lock(&self.inner.members).map.remove(name);
        let Some(member) = member else {
            return Err(GroupError::UnknownServer {
                server: name.to_owned(),
            });
        };
        self.inner.remerge();
        retire(vec![member]).await;
        Ok(())
    }

    /// Replaces server `name` by a new one connected as `builder` says: the old one is
    /// stopped and reaped first, then the new one starts as [`ClientGroup::add`] says.
    /// [`GroupError::UnknownServer`] if there is none.
    pub async fn replace(&self, name: &str, builder: ClientBuilder) -> Result<(), GroupError> {
        let _ops = self.inner.ops.lock().await;
        let old = lock(&self.inner.members).map.remove(name);
        let Some(old) = old else {
            return Err(GroupError::UnknownServer {
                server: name.to_owned(),
            });
        };
        self.inner.remerge();
        retire(vec![old]).await;
        self.inner
            .start_members(vec![(name.to_owned(), None, builder)])
            .await
    }

    /// Makes the group exactly `servers`, changing only what changed: each entry is a name,
    /// a fingerprint `K` of its configuration (compared with `==`) and the builder to start it
    /// from. A server whose fingerprint is equal to the one it was started with stays as it is
    /// (its builder is dropped unused); one whose fingerprint differs, or that was started
    /// without one ([`ClientGroup::add`], [`GroupBuilder::server`]), is replaced; one missing
    /// from `servers` is removed; a new one is added. Stopped servers are reaped before the
    /// new ones start; the new ones start concurrently, as [`GroupBuilder::start`] does.
    ///
    /// The seam for a host's settings reload: `apply(config)` is this with each entry of the
    /// parsed configuration as its own fingerprint. Fail-closed, new servers that fail are
    /// removed and the result is [`GroupError::Start`] (the rest is applied).
    pub async fn apply_builders<K>(
        &self,
        servers: impl IntoIterator<Item = (String, K, ClientBuilder)>,
    ) -> Result<Applied, GroupError>
    where
        K: PartialEq + Send + Sync + 'static,
    {
        let _ops = self.inner.ops.lock().await;
        let wanted: Vec<(String, K, ClientBuilder)> = servers.into_iter().collect();
        let mut names = HashSet::with_capacity(wanted.len());
        for (name, _, _) in &wanted {
            if !names.insert(name.as_str()) {
                return Err(GroupError::DuplicateServer {
                    server: name.clone(),
                });
            }
        }
        let mut applied = Applied::default();
        let mut retiring = Vec::new();
        let mut starting: Vec<(String, Option<Fingerprint>, ClientBuilder)> = Vec::new();
        {
            let mut members = lock(&self.inner.members);
            if members.stopped {
                return Err(GroupError::Stopped);
            }
            let gone: Vec<Arc<str>> = members
                .map
                .keys()
                .filter(|n| !names.contains(&***n))
                .cloned()
                .collect();
            for name in gone {
                applied.removed.push(name.to_string());
                retiring.extend(members.map.remove(&name));
            }
            for (name, fingerprint, builder) in wanted {
                let same = members.map.get(name.as_str()).map(|m| {
                    m.fingerprint
                        .as_ref()
                        .and_then(|f| f.downcast_ref::<K>())
                        .is_some_and(|f| *f == fingerprint)
                });
                match same {
                    Some(true) => applied.unchanged.push(name),
                    Some(false) => {
                        retiring.extend(members.map.remove(name.as_str()));
                        applied.replaced.push(name.clone());
                        starting.push((name, Some(Box::new(fingerprint)), builder));
                    }
                    None => {
                        applied.added.push(name.clone());
                        starting.push((name, Some(Box::new(fingerprint)), builder));
                    }
                }
            }
        }
        self.inner.remerge();
        retire(retiring).await;
        self.inner.start_members(starting).await?;
        Ok(applied)
    }

    /// Stops every server at once and returns when every call in flight was answered and
    /// every server process is reaped (each [`Client::stop`] then [`Client::closed`], all in
    /// parallel: the time of the slowest one, not of their sum). The feeds end; calls fail
    /// with [`GroupError::Stopped`] or the client's [`crate::Error::Shutdown`]; the merged
    /// view keeps what it last held. Idempotent.
    pub async fn stop(&self) {
        let _ops = self.inner.ops.lock().await;
        let clients: Vec<Client> = {
            let mut members = lock(&self.inner.members);
            members.stopped = true;
            members.map.values().map(|m| m.client.clone()).collect()
        };
        join_all(clients.iter().map(Client::stop)).await;
        join_all(clients.iter().map(Client::closed)).await;
        self.inner.close_feeds();
    }

    /// The servers' names, in order.
    pub fn names(&self) -> Vec<String> {
        lock(&self.inner.members)
            .map
            .keys()
            .map(|n| n.to_string())
            .collect()
    }

    /// The client of server `name`, for what the group does not route (subscriptions,
    /// completion, its own feeds).
    pub fn client(&self, name: &str) -> Option<Client> {
        lock(&self.inner.members)
            .map
            .get(name)
            .map(|m| m.client.clone())
    }

    /// The live lists of server `name` (its lists and their refresh counts).
    pub fn live_lists(&self, name: &str) -> Option<LiveLists> {
        lock(&self.inner.members)
            .map
            .get(name)
            .map(|m| m.live.clone())
    }

    /// The merged view now.
    pub fn view(&self) -> Arc<MergedView> {
        Arc::clone(&self.inner.view.borrow())
    }

    /// A watch of the merged view (changed whenever it changes).
    pub fn watch_view(&self) -> watch::Receiver<Arc<MergedView>> {
        self.inner.view.subscribe()
    }

    /// What changes in the merged view from now on, one [`GroupChange`] per list changed,
    /// its items tagged by server; bounded ([`super::GROUP_CHANGE_LIMITS`]: a subscriber that
    /// falls behind loses the oldest, counted by [`Feed::dropped`]). Ends after
    /// [`ClientGroup::stop`].
    pub fn changes(&self) -> Feed<GroupChange> {
        self.inner.changes.subscribe()
    }

    /// Every server's notifications from now on, tagged with the server; bounded as a
    /// client's ([`FeedLimits::NOTIFICATIONS`]). Ends after [`ClientGroup::stop`].
    pub fn notifications(&self) -> Feed<GroupNotification> {
        self.inner.notifications.subscribe()
    }

    /// Every server's connection transitions from now on, tagged with the server
    /// ([`super::GROUP_TRANSITION_LIMITS`]). Ends after [`ClientGroup::stop`].
    pub fn transitions(&self) -> Feed<GroupTransition> {
        self.inner.transitions.subscribe()
    }

    /// Every server now: state, era, last error, list sizes, counters.
    pub fn snapshot(&self) -> GroupSnapshot {
        let members = lock(&self.inner.members);
        let servers = members
            .map
            .iter()
            .map(|(name, m)| {
                let lists = m.live.lists();
                let (calls, errors, reconnects) = m.counters.get();
                ServerSnapshot {
                    name: name.to_string(),
                    state: m.client.state(),
                    era: m.client.era(),
                    last_error: m.client.last_error(),
                    tools: lists.count(ListKind::Tools),
                    prompts: lists.count(ListKind::Prompts),
                    resources: lists.count(ListKind::Resources),
                    calls,
                    errors,
                    reconnects,
                    pid: m.client.server_pid(),
                }
            })
            .collect();
        GroupSnapshot { servers }
    }

    /// Server `name`'s client and counters, for routing.
    /// Server `name`'s client and counters, for a call of tool `tool` its configuration
    /// entry must allow ([`GroupError::ToolNotAllowed`] otherwise).
    pub(super) fn member_for_tool(
        &self,
        name: &str,
        tool: &str,
    ) -> Result<(Client, Arc<Counters>), GroupError> {
        let members = lock(&self.inner.members);
        if let Some(filter) = members.map.get(name).and_then(|m| m.tools.as_ref())
            && !filter.allows(tool)
        {
            return Err(GroupError::ToolNotAllowed {
                server: name.to_owned(),
                tool: tool.to_owned(),
            });
        }
        drop(members);
        self.member(name)
    }

    pub(super) fn member(&self, name: &str) -> Result<(Client, Arc<Counters>), GroupError> {
        let members = lock(&self.inner.members);
        match members.map.get(name) {
            Some(m) => Ok((m.client.clone(), Arc::clone(&m.counters))),
            None if members.stopped => Err(GroupError::Stopped),
            None => Err(GroupError::UnknownServer {
                server: name.to_owned(),
            }),
        }
    }
}

impl GroupInner {
    /// Gives a server's notification to the group's subscribers.
    pub(super) fn publish_notification(&self, tagged: GroupNotification) {
        let n = &tagged.notification;
        let size = n.method.len() + n.params.as_ref().map_or(0, crate::feed::json_size);
        self.notifications.publish(&tagged, size);
    }

    /// Gives a server's transition to the group's subscribers.
    pub(super) fn publish_transition(&self, tagged: GroupTransition) {
        self.transitions.publish(&tagged, 64);
    }

    fn close_feeds(&self) {
        self.changes.close();
        self.notifications.close();
        self.transitions.close();
    }

    /// Starts `entries` (the caller holds `ops`): each joins the group at once (its items
    /// appear as its lists are fetched), then this waits for every first attempt in parallel.
    /// Fail-closed, the servers that failed are removed again and named in the error.
    async fn start_members(
        self: &Arc<Self>,
        entries: Vec<(String, Option<Fingerprint>, ClientBuilder)>,
    ) -> Result<(), GroupError> {
        let mut waits = Vec::with_capacity(entries.len());
        {
            let mut members = lock(&self.members);
            if members.stopped {
                return Err(GroupError::Stopped);
            }
            let mut names = HashSet::with_capacity(entries.len());
            for (name, _, _) in &entries {
                if members.map.contains_key(name.as_str()) || !names.insert(name.as_str()) {
                    return Err(GroupError::DuplicateServer {
                        server: name.clone(),
                    });
                }
            }
            for (name, fingerprint, builder) in entries {
                let name: Arc<str> = Arc::from(name);
                let (member, first) = self.launch(&name, builder, fingerprint);
                waits.push((
                    Arc::clone(&name),
                    member.client.clone(),
                    member.live.clone(),
                    first,
                ));
                members.map.insert(name, member);
            }
        }
        self.remerge();
        let outcomes = join_all(waits.into_iter().map(
            |(name, client, live, mut first)| async move {
                if first_attempt_ready(&mut first).await {
                    live.fetched_once().await;
                    return None;
                }
                Some(StartFailure {
                    server: name.to_string(),
                    cause: client
                        .last_error()
                        .unwrap_or(Failure::Transport(TransportError::Closed)),
                    stderr_tail: client.server_stderr(),
                })
            },
        ))
        .await;
        // The lists fetched meanwhile are in the view when this returns (their forwarding
        // tasks may not have run yet).
        self.remerge();
        let failures: Vec<StartFailure> = outcomes.into_iter().flatten().collect();
        if failures.is_empty() || self.settings.mode == StartMode::FailOpen {
            for f in &failures {
                tracing::warn!(target: "mcp::group", server = %crate::shown::shown_name(&f.server),
                    cause = %f.cause, "a server failed to start; it keeps retrying");
            }
            return Ok(());
        }
        let failed: Vec<Member> = {
            let mut members = lock(&self.members);
            failures
                .iter()
                .filter_map(|f| members.map.remove(f.server.as_str()))
                .collect()
        };
        self.remerge();
        retire(failed).await;
        Err(GroupError::Start { failures })
    }

    /// Starts server `name`'s client, its live lists and the task forwarding its feeds; the
    /// transitions feed from its very first transition, to wait for its first attempt.
    fn launch(
        self: &Arc<Self>,
        name: &Arc<str>,
        mut builder: ClientBuilder,
        fingerprint: Option<Fingerprint>,
    ) -> (Member, Feed<Transition>) {
        if let Some(source) = &self.settings.handler {
            builder = builder.handler(source(name));
        }
        #[cfg(feature = "otel")]
        if let Some(telemetry) = &self.settings.telemetry {
            builder = builder.telemetry(telemetry.clone().server_name(&**name));
        }
        if let Some(configure) = &self.settings.configure {
            builder = configure(name, builder);
        }
        let first = builder.transitions();
        let transitions = builder.transitions();
        let notifications = builder.notifications();
        let client = builder.connect_lazy();
        let live = client.live_lists_with(self.settings.live.clone());
        let counters = Arc::new(Counters::default());
        let forward = tokio::spawn(super::events::forward(
            Arc::downgrade(self),
            Arc::clone(name),
            notifications,
            transitions,
            live.watch(),
            Arc::clone(&counters),
        ));
        let tools = fingerprint
            .as_ref()
            .and_then(|f| f.downcast_ref::<crate::group::config::ServerEntry>())
            .map(|entry| entry.tools.clone())
            .filter(|filter| !filter.allows_all());
        let member = Member {
            client,
            live,
            counters,
            fingerprint,
            tools,
            _forward: AbortOnDrop(forward.abort_handle()),
        };
        (member, first)
    }

    /// Rebuilds the merged view from every server's lists; publishes what changed.
    pub(super) fn remerge(&self) {
        let members = lock(&self.members);
        let servers: Vec<(Arc<str>, Lists)> = members
            .map
            .iter()
            .map(|(name, m)| (Arc::clone(name), allowed(m.live.lists(), m.tools.as_ref())))
            .collect();
        let view = MergedView::build(&servers, &self.settings.naming);
        let changes = merged::diff(&self.view.borrow(), &view);
        if changes.is_empty() {
            return;
        }
        // The changes first: a host that sees the new view finds its changes in the feed.
        for change in &changes {
            self.changes.publish(change, change.size());
        }
        self.view.send_replace(Arc::new(view));
        drop(members);
    }
}

/// A server's lists with the tools its filter refuses left out (as they are without one).
fn allowed(mut lists: Lists, filter: Option<&crate::group::config::ToolFilter>) -> Lists {
    if let (Some(filter), Some(tools)) = (filter, lists.tools.as_ref()) {
        let kept: Vec<_> = tools
            .iter()
            .filter(|t| filter.allows(&t.name))
            .cloned()
            .collect();
        lists.tools = Some(kept.into());
    }
    lists
}

/// Whether the first attempt that `transitions` (taken before the start) shows ends ready.
async fn first_attempt_ready(transitions: &mut Feed<Transition>) -> bool {
    while let Some(t) = transitions.recv().await {
        match t.to() {
            ConnState::Ready => return true,
            ConnState::Backoff | ConnState::Closing | ConnState::Closed => return false,
            _ => {}
        }
    }
    false
}

/// Stops `members` at once and waits until each one's process is reaped.
async fn retire(members: Vec<Member>) {
    join_all(members.iter().map(|m| m.client.stop())).await;
    join_all(members.iter().map(|m| m.client.closed())).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A host spawns a group's futures: they must be `Send` (no lock held across an await).
    #[allow(dead_code)]
    fn futures_are_send(group: &ClientGroup, builder: ClientBuilder, other: ClientBuilder) {
        fn send<T: Send>(_: T) {}
        send(group.call_tool("t", serde_json::Value::Null));
        send(group.get_prompt("p", serde_json::Value::Null));
        send(group.read_resource("u"));
        send(group.add("a", builder));
        send(group.replace("a", other));
        send(group.remove("a"));
        send(group.apply_builders(Vec::<(String, u8, ClientBuilder)>::new()));
        send(group.stop());
        send(ClientGroup::builder().start());
    }

    #[test]
    fn a_group_handle_is_send_and_sync() {
        fn check<T: Send + Sync + 'static>() {}
        check::<ClientGroup>();
        check::<LiveLists>();
        check::<GroupBuilder>();
    }
}
