//! [`LiveLists`]: one client's tools, prompts, resources and resource templates, kept current
//! by themselves ([`crate::Client::live_lists`]).
//!
//! What keeps them current:
//!
//! - **A `list_changed` notification** (`notifications/tools/list_changed`, `prompts/…`,
//!   `resources/…`; in the 2026-07-28 era the listen's list changes arrive as the same
//!   notifications) marks that list stale. Its re-fetch (every page) starts
//!   [`LiveListOptions::debounce`] after the first notification of a burst, so a burst is one
//!   fetch, and never sooner than [`LiveListOptions::min_interval`] after the previous fetch of
//!   that list started, so a server that sends nothing but notifications costs one fetch per
//!   interval. Notifications arriving while a fetch is in flight lead to exactly one more
//!   fetch after it. `resources/list_changed` re-fetches the resources and the templates.
//! - **Each time the connection becomes ready** (the first time, and after every reconnect or
//!   new session) every list is fetched again, without the debounce (the interval still
//!   holds).
//! - **No stale page.** The response cache drops a list's pages before any subscriber sees its
//!   `list_changed`, drops everything when the connection leaves ready, and does not store a
//!   page fetched across an invalidation (`crate::cache`); so a re-fetch never reads a page
//!   older than the notification that caused it.
//!
//! What subscribers get: the current lists as a watch ([`LiveLists::watch`], changed only
//! when a list's content changed; `None` until a list was first fetched) and a bounded feed
//! of what changed ([`LiveLists::changes`]: names added, removed or changed). A list the
//! server does not declare (no `tools` capability, ...) is an empty list, fetched without a
//! request.
//!
//! What it does not do: retry a fetch that failed (the error is in [`ListStats::last_error`];
//! the next notification or reconnect fetches again), poll (without notifications a list
//! changes only on reconnect), or keep the client alive: it holds the client weakly (a fetch
//! in flight holds it until that fetch ends), and ends when the client stops. Dropping the
//! last handle ends it.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::client::WeakClient;
use crate::feed::{FeedLimits, Hub};
use crate::types::{Notification, Prompt, Resource, ResourceTemplate, ServerNotification, Tool};
use crate::{Client, ConnState, Error, Feed, Transition};

/// [`LiveListOptions::debounce`] by default: 50 ms, long enough to coalesce a burst a server
/// sends in one go, short enough that a host shows the change at once.
pub const DEFAULT_DEBOUNCE: Duration = Duration::from_millis(50);

/// [`LiveListOptions::min_interval`] by default: at most four fetches a second per list.
pub const DEFAULT_MIN_INTERVAL: Duration = Duration::from_millis(250);

/// The bounds of each [`LiveLists::changes`] subscriber: 256 changes, 4 MiB of names.
pub const CHANGE_FEED_LIMITS: FeedLimits = FeedLimits {
    items: 256,
    bytes: 4 << 20,
};

/// One of the lists a server offers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ListKind {
    /// `tools/list`, keyed by tool name.
    Tools,
    /// `prompts/list`, keyed by prompt name.
    Prompts,
    /// `resources/list`, keyed by URI.
    Resources,
    /// `resources/templates/list`, keyed by URI template.
    ResourceTemplates,
}

impl ListKind {
    /// Every kind, in this order.
    pub const ALL: [ListKind; 4] = [
        ListKind::Tools,
        ListKind::Prompts,
        ListKind::Resources,
        ListKind::ResourceTemplates,
    ];

    /// The list method (`tools/list`, ...).
    pub fn method(self) -> &'static str {
        match self {
            ListKind::Tools => "tools/list",
            ListKind::Prompts => "prompts/list",
            ListKind::Resources => "resources/list",
            ListKind::ResourceTemplates => "resources/templates/list",
        }
    }

    pub(crate) fn index(self) -> usize {
        self as usize
    }

    /// The lists a notification says changed (none for other notifications).
    pub(crate) fn changed_by(notification: &ServerNotification) -> &'static [ListKind] {
        match notification {
            ServerNotification::ToolsListChanged => &[ListKind::Tools],
            ServerNotification::PromptsListChanged => &[ListKind::Prompts],
            ServerNotification::ResourcesListChanged => {
                &[ListKind::Resources, ListKind::ResourceTemplates]
            }
            _ => &[],
        }
    }
}

impl std::fmt::Display for ListKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ListKind::Tools => "tools",
            ListKind::Prompts => "prompts",
            ListKind::Resources => "resources",
            ListKind::ResourceTemplates => "resource templates",
        })
    }
}

/// The lists as last fetched: `None` until a list was first fetched (a list the server does
/// not offer is empty once known). Cheap to clone (each list is shared).
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct Lists {
    /// The tools.
    pub tools: Option<Arc<[Tool]>>,
    /// The prompts.
    pub prompts: Option<Arc<[Prompt]>>,
    /// The resources.
    pub resources: Option<Arc<[Resource]>>,
    /// The resource templates.
    pub resource_templates: Option<Arc<[ResourceTemplate]>>,
}

impl Lists {
    /// How many items list `kind` holds, `None` before its first fetch.
    pub fn count(&self, kind: ListKind) -> Option<usize> {
        match kind {
            ListKind::Tools => self.tools.as_ref().map(|l| l.len()),
            ListKind::Prompts => self.prompts.as_ref().map(|l| l.len()),
            ListKind::Resources => self.resources.as_ref().map(|l| l.len()),
            ListKind::ResourceTemplates => self.resource_templates.as_ref().map(|l| l.len()),
        }
    }
}

/// What one re-fetch changed in one list, by key (tool or prompt name, resource URI, URI
/// template): keys new to the list, keys gone, keys whose item differs. A first fetch lists
/// every key as added. Never empty when published.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ListChange {
    /// Which list.
    pub kind: ListKind,
    /// Keys new to the list, in the new list's order.
    pub added: Vec<String>,
    /// Keys no longer listed, in the old list's order.
    pub removed: Vec<String>,
    /// Keys still listed whose item changed (description, schema, ...), in the new order.
    pub changed: Vec<String>,
}

impl ListChange {
    /// Whether nothing changed.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty()
    }

    /// The approximate size in bytes, for the feed's bound.
    fn size(&self) -> usize {
        [&self.added, &self.removed, &self.changed]
            .iter()
            .flat_map(|v| v.iter())
            .map(|k| k.len() + 8)
            .sum::<usize>()
            + 16
    }
}

/// What one list's refreshing did so far.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct ListStats {
    /// `list_changed` notifications seen for it.
    pub signals: u64,
    /// Fetches that succeeded (every page read; a list the server does not offer counts,
    /// without a request).
    pub fetches: u64,
    /// Fetches that failed (kept the previous list).
    pub failures: u64,
    /// A fetch is due or in flight.
    pub pending: bool,
    /// Why the last failed fetch failed (cleared by the next success).
    pub last_error: Option<Error>,
}

/// What the refreshing of every list did so far ([`LiveLists::stats`]).
#[derive(Clone, Debug, Default)]
pub struct LiveStats {
    lists: [ListStats; 4],
    /// Transitions into ready seen (the first connection included).
    pub readies: u64,
}

impl LiveStats {
    /// The counts of list `kind`.
    pub fn get(&self, kind: ListKind) -> &ListStats {
        &self.lists[kind.index()]
    }

    /// Whether no fetch is due or in flight.
    pub fn idle(&self) -> bool {
        self.lists.iter().all(|l| !l.pending)
    }
}

/// How [`LiveLists`] refreshes: the debounce, the rate bound, which lists.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LiveListOptions {
    debounce: Duration,
    min_interval: Duration,
    kinds: [bool; 4],
}

impl Default for LiveListOptions {
    /// Every list, [`DEFAULT_DEBOUNCE`], [`DEFAULT_MIN_INTERVAL`].
    fn default() -> Self {
        LiveListOptions {
            debounce: DEFAULT_DEBOUNCE,
            min_interval: DEFAULT_MIN_INTERVAL,
            kinds: [true; 4],
        }
    }
}

impl LiveListOptions {
    /// The default options.
    pub fn new() -> Self {
        Self::default()
    }

    /// How long after the first `list_changed` of a burst its re-fetch starts (later ones
    /// within it join the same fetch).
    pub fn debounce(mut self, debounce: Duration) -> Self {
        self.debounce = debounce;
        self
    }

    /// The least time between the starts of two fetches of one list.
    pub fn min_interval(mut self, interval: Duration) -> Self {
        self.min_interval = interval;
        self
    }

    /// Keep only these lists (the others stay `None` and are never fetched).
    pub fn only(mut self, kinds: impl IntoIterator<Item = ListKind>) -> Self {
        self.kinds = [false; 4];
        for kind in kinds {
            self.kinds[kind.index()] = true;
        }
        self
    }

    /// Whether list `kind` is kept.
    pub fn keeps(&self, kind: ListKind) -> bool {
        self.kinds[kind.index()]
    }
}

/// A client's lists kept current (see the module documentation): a cheap, clonable handle on
/// one background task, which ends when the client stops or the last handle is dropped.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> mcp_runtime::Result<()> {
/// # let connector = mcp_runtime::transport::StreamConnector::from_fn(|| async {
/// #     let (ours, theirs) = tokio::io::duplex(1 << 16);
/// #     let (r, w) = tokio::io::split(theirs);
/// #     tokio::spawn(mcp_testserver::serve(r, w, mcp_testserver::ServerConfig::echo()));
/// #     Ok(tokio::io::split(ours))
/// # });
/// # let client = mcp_runtime::ClientBuilder::new(connector).connect().await?;
/// use mcp_runtime::ListKind;
///
/// let live = client.live_lists();
/// live.fetched_once().await;
/// let tools = live.lists().tools.expect("fetched");
/// assert!(tools.iter().any(|t| t.name == "echo"));
/// // The server's `notify_changed` tool sends `notifications/tools/list_changed`: one more fetch.
/// client.call_tool("notify_changed", serde_json::json!({})).await?;
/// let mut stats = live.watch_stats();
/// stats.wait_for(|s| s.get(ListKind::Tools).fetches == 2).await.expect("running");
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct LiveLists {
    shared: Arc<LiveShared>,
    _task: Arc<AbortOnDrop>,
}

impl std::fmt::Debug for LiveLists {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveLists")
            .field("lists", &*self.shared.lists.borrow())
            .finish_non_exhaustive()
    }
}

/// What the task publishes and the handles read.
struct LiveShared {
    /// The task's lists (its sender ends with it: a waiter then stops waiting).
    lists: watch::Receiver<Lists>,
    /// The task's counts (likewise).
    stats: watch::Receiver<LiveStats>,
    changes: Hub<ListChange>,
    /// Which lists are kept ([`LiveListOptions::only`]).
    kept: [bool; 4],
}

impl Drop for LiveShared {
    fn drop(&mut self) {
        // Every change feed ends once nothing can publish any more.
        self.changes.close();
    }
}

/// Aborts a task when dropped.
pub(crate) struct AbortOnDrop(pub(crate) tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl LiveLists {
    /// Starts the task keeping `client`'s lists. Must be called inside a tokio runtime.
    pub(crate) fn start(client: &Client, options: LiveListOptions) -> Self {
        let (lists_tx, lists) = watch::channel(Lists::default());
        let (stats_tx, stats) = watch::channel(LiveStats::default());
        let shared = Arc::new(LiveShared {
            lists,
            stats,
            changes: Hub::new(CHANGE_FEED_LIMITS),
            kept: options.kinds,
        });
        // Subscribed before the state is read: a transition into ready after the read is in
        // the feed, one before it is seen by the read.
        let transitions = client.transitions();
        let notifications = client.notifications();
        let ready = client.state() == ConnState::Ready;
        let mut task = Refresher {
            client: client.downgrade(),
            shared: Arc::clone(&shared),
            lists: lists_tx,
            stats: stats_tx,
            schedule: Schedule::new(&options),
            notifications,
            notes_dropped: 0,
            transitions,
            transitions_dropped: 0,
            fetches: JoinSet::new(),
        };
        if ready {
            task.became_ready(Instant::now());
        }
        let handle = tokio::spawn(task.run());
        LiveLists {
            shared,
            _task: Arc::new(AbortOnDrop(handle.abort_handle())),
        }
    }

    /// The lists now.
    pub fn lists(&self) -> Lists {
        self.shared.lists.borrow().clone()
    }

    /// A watch of the lists, changed only when a list's content changed (a re-fetch that found
    /// the same list changes nothing).
    pub fn watch(&self) -> watch::Receiver<Lists> {
        let mut lists = self.shared.lists.clone();
        lists.mark_unchanged();
        lists
    }

    /// What changed from now on, one [`ListChange`] per re-fetch that changed a list; bounded
    /// by [`CHANGE_FEED_LIMITS`] (a subscriber that falls behind loses the oldest, counted by
    /// [`Feed::dropped`]). Ends once the client stopped.
    pub fn changes(&self) -> Feed<ListChange> {
        self.shared.changes.subscribe()
    }

    /// The counts of the refreshing so far.
    pub fn stats(&self) -> LiveStats {
        self.shared.stats.borrow().clone()
    }

    /// A watch of [`LiveLists::stats`] (every notification seen, fetch done).
    pub fn watch_stats(&self) -> watch::Receiver<LiveStats> {
        let mut stats = self.shared.stats.clone();
        stats.mark_unchanged();
        stats
    }

    /// Waits until every kept list was fetched (or its fetch failed) at least once. Waits as
    /// long as the client is not connected; returns once the client stopped (or is gone).
    pub async fn fetched_once(&self) {
        let kept = self.shared.kept;
        let mut stats = self.shared.stats.clone();
        let _ = stats
            .wait_for(|s| {
                ListKind::ALL.into_iter().all(|k| {
                    let l = s.get(k);
                    !kept[k.index()] || l.fetches + l.failures > 0
                })
            })
            .await;
    }
}

/// The refresh timing of one list.
#[derive(Clone, Copy, Debug, Default)]
struct Slot {
    /// A fetch is wanted: since when, and how long to wait from then.
    stale: Option<(Instant, Duration)>,
    /// A fetch is in flight.
    in_flight: bool,
    /// When the last fetch started.
    last_start: Option<Instant>,
}

/// When each list is fetched: a pure state machine over instants (unit-tested on its own).
#[derive(Clone, Debug)]
struct Schedule {
    slots: [Slot; 4],
    kept: [bool; 4],
    debounce: Duration,
    min_interval: Duration,
}

impl Schedule {
    fn new(options: &LiveListOptions) -> Self {
        Schedule {
            slots: [Slot::default(); 4],
            kept: options.kinds,
            debounce: options.debounce,
            min_interval: options.min_interval,
        }
    }

    /// List `kind` changed at `now`: fetch it after the debounce (`immediate`: without).
    fn stale(&mut self, kind: ListKind, now: Instant, immediate: bool) {
        if !self.kept[kind.index()] {
            return;
        }
        let delay = if immediate {
            Duration::ZERO
        } else {
            self.debounce
        };
        let slot = &mut self.slots[kind.index()];
        slot.stale = Some(match slot.stale {
            Some((since, d)) => (since, d.min(delay)),
            None => (now, delay),
        });
    }

    /// When list `kind` is due, if it is stale and not in flight.
    fn due(&self, kind: ListKind) -> Option<Instant> {
        let slot = &self.slots[kind.index()];
        if slot.in_flight {
            return None;
        }
        let (since, delay) = slot.stale?;
        let debounced = since + delay;
        Some(match slot.last_start {
            Some(last) => debounced.max(last + self.min_interval),
            None => debounced,
        })
    }

    /// The earliest instant a list is due.
    fn next_due(&self) -> Option<Instant> {
        ListKind::ALL.into_iter().filter_map(|k| self.due(k)).min()
    }

    /// Starts every list due at `now`; the ones started.
    fn start_due(&mut self, now: Instant) -> Vec<ListKind> {
        let due: Vec<ListKind> = ListKind::ALL
            .into_iter()
            .filter(|k| self.due(*k).is_some_and(|d| d <= now))
            .collect();
        for kind in &due {
            let slot = &mut self.slots[kind.index()];
            slot.stale = None;
            slot.in_flight = true;
            slot.last_start = Some(now);
        }
        due
    }

    /// The fetch of `kind` ended.
    fn done(&mut self, kind: ListKind) {
        self.slots[kind.index()].in_flight = false;
    }

    /// Whether a fetch of `kind` is due or in flight.
    fn pending(&self, kind: ListKind) -> bool {
        let slot = &self.slots[kind.index()];
        slot.in_flight || slot.stale.is_some()
    }
}

/// A fetched list.
enum Fetched {
    Tools(Vec<Tool>),
    Prompts(Vec<Prompt>),
    Resources(Vec<Resource>),
    ResourceTemplates(Vec<ResourceTemplate>),
}

/// The background task.
struct Refresher {
    client: WeakClient,
    shared: Arc<LiveShared>,
    lists: watch::Sender<Lists>,
    stats: watch::Sender<LiveStats>,
    schedule: Schedule,
    notifications: Feed<Notification>,
    notes_dropped: u64,
    transitions: Feed<Transition>,
    transitions_dropped: u64,
    fetches: JoinSet<(ListKind, Result<Fetched, Error>)>,
}

impl Refresher {
    async fn run(mut self) {
        loop {
            let due = self.schedule.next_due();
            tokio::select! {
                n = self.notifications.recv() => {
                    let Some(n) = n else { break };
                    self.notified(&n, Instant::now());
                }
                t = self.transitions.recv() => {
                    let Some(t) = t else { break };
                    self.transitioned(&t, Instant::now());
                }
                () = sleep_until(due), if due.is_some() => {
                    if !self.start_due(Instant::now()) {
                        break;
                    }
                }
                Some(done) = self.fetches.join_next(), if !self.fetches.is_empty() => {
                    match done {
                        Ok((kind, result)) => self.fetched(kind, result),
                        Err(e) => tracing::error!(target: "mcp::live_lists", error = %e, "a list fetch panicked"),
                    }
                }
            }
        }
        // The client stopped (or is gone): nothing more will change.
        self.shared.changes.close();
    }

    fn notified(&mut self, n: &Notification, now: Instant) {
        let dropped = self.notifications.dropped();
        let kinds: &[ListKind] = if dropped > self.notes_dropped {
            // Some notifications were lost: any list may have changed.
            self.notes_dropped = dropped;
            &ListKind::ALL
        } else {
            ListKind::changed_by(&n.parsed)
        };
        if kinds.is_empty() {
            return;
        }
        for kind in kinds {
            self.schedule.stale(*kind, now, false);
        }
        self.publish_pending(|s, kind| {
            if kinds.contains(&kind) {
                s.signals += 1;
            }
        });
    }

    fn transitioned(&mut self, t: &Transition, now: Instant) {
        let dropped = self.transitions.dropped();
        let lost = dropped > self.transitions_dropped;
        self.transitions_dropped = dropped;
        let into_ready = t.to() == ConnState::Ready && t.from() != ConnState::Ready;
        if into_ready || (lost && t.to() == ConnState::Ready) {
            self.became_ready(now);
        }
    }

    fn became_ready(&mut self, now: Instant) {
        for kind in ListKind::ALL {
            self.schedule.stale(kind, now, true);
        }
        self.stats.send_modify(|s| s.readies += 1);
        self.publish_pending(|_, _| {});
    }

    /// Publishes each list's pending flag after `edit`.
    fn publish_pending(&self, edit: impl Fn(&mut ListStats, ListKind)) {
        self.stats.send_modify(|s| {
            for kind in ListKind::ALL {
                let l = &mut s.lists[kind.index()];
                edit(l, kind);
                l.pending = self.schedule.pending(kind);
            }
        });
    }

    /// Starts the fetches due; false when the client is gone.
    fn start_due(&mut self, now: Instant) -> bool {
        let kinds = self.schedule.start_due(now);
        if kinds.is_empty() {
            return true;
        }
        let Some(client) = self.client.upgrade() else {
            return false;
        };
        for kind in kinds {
            let client = client.clone();
            self.fetches
                .spawn(async move { (kind, fetch(&client, kind).await) });
        }
        true
    }

    fn fetched(&mut self, kind: ListKind, result: Result<Fetched, Error>) {
        self.schedule.done(kind);
        let failed = result.as_ref().err().cloned();
        if let Ok(fetched) = result {
            let mut change = None;
            self.lists.send_if_modified(|lists| {
                change = match fetched {
                    Fetched::Tools(v) => replace(kind, &mut lists.tools, v, |t| &t.name),
                    Fetched::Prompts(v) => replace(kind, &mut lists.prompts, v, |p| &p.name),
                    Fetched::Resources(v) => replace(kind, &mut lists.resources, v, |r| &r.uri),
                    Fetched::ResourceTemplates(v) => {
                        replace(kind, &mut lists.resource_templates, v, |t| &t.uri_template)
                    }
                };
                change.is_some()
            });
            if let Some(change) = change.filter(|c| !c.is_empty()) {
                self.shared.changes.publish(&change, change.size());
            }
        } else if let Some(e) = &failed {
            tracing::debug!(target: "mcp::live_lists", list = %kind, error = %e, "a list re-fetch failed; the previous list stays");
        }
        self.publish_pending(|s, k| {
            if k == kind {
                match &failed {
                    None => {
                        s.fetches += 1;
                        s.last_error = None;
                    }
                    Some(e) => {
                        s.failures += 1;
                        s.last_error = Some(e.clone());
                    }
                }
            }
        });
    }
}

async fn sleep_until(due: Option<Instant>) {
    match due {
        Some(due) => tokio::time::sleep_until(due).await,
        None => std::future::pending().await,
    }
}

/// Fetches every page of list `kind`; a list the server does not declare is empty, without a
/// request.
async fn fetch(client: &Client, kind: ListKind) -> Result<Fetched, Error> {
    let offered = client.server_capabilities().map(|c| match kind {
        ListKind::Tools => c.tools.is_some(),
        ListKind::Prompts => c.prompts.is_some(),
        ListKind::Resources | ListKind::ResourceTemplates => c.resources.is_some(),
    });
    let offered = offered != Some(false);
    Ok(match kind {
        ListKind::Tools if !offered => Fetched::Tools(Vec::new()),
        ListKind::Tools => Fetched::Tools(client.list_all_tools().await?),
        ListKind::Prompts if !offered => Fetched::Prompts(Vec::new()),
        ListKind::Prompts => Fetched::Prompts(client.list_all_prompts().await?),
        ListKind::Resources if !offered => Fetched::Resources(Vec::new()),
        ListKind::Resources => Fetched::Resources(client.list_all_resources().await?),
        ListKind::ResourceTemplates if !offered => Fetched::ResourceTemplates(Vec::new()),
        ListKind::ResourceTemplates => {
            Fetched::ResourceTemplates(client.list_all_resource_templates().await?)
        }
    })
}

/// Puts `new` in `slot`; what changed, `None` if nothing did (the slot is then untouched).
fn replace<T: PartialEq>(
    kind: ListKind,
    slot: &mut Option<Arc<[T]>>,
    new: Vec<T>,
    key: fn(&T) -> &String,
) -> Option<ListChange> {
    if slot.as_deref() == Some(new.as_slice()) {
        return None;
    }
    let change = diff(kind, slot.as_deref().unwrap_or(&[]), &new, key);
    *slot = Some(new.into());
    Some(change)
}

/// What changed from `old` to `new`, by key. A key listed twice (a server's mistake) is
/// compared as the sequence of its items.
pub(crate) fn diff<T: PartialEq>(
    kind: ListKind,
    old: &[T],
    new: &[T],
    key: fn(&T) -> &String,
) -> ListChange {
    let (before, after) = (by_key(old, key), by_key(new, key));
    let mut change = ListChange {
        kind,
        added: Vec::new(),
        removed: Vec::new(),
        changed: Vec::new(),
    };
    let mut seen = std::collections::HashSet::new();
    for item in new {
        let k = key(item).as_str();
        if !seen.insert(k) {
            continue;
        }
        match before.get(k) {
            None => change.added.push(k.to_owned()),
            Some(was) if *was != after[k] => change.changed.push(k.to_owned()),
            Some(_) => {}
        }
    }
    let mut gone = std::collections::HashSet::new();
    for item in old {
        let k = key(item).as_str();
        if !after.contains_key(k) && gone.insert(k) {
            change.removed.push(k.to_owned());
        }
    }
    change
}

/// The items of a list by key, each key's items in listing order.
fn by_key<T>(items: &[T], key: fn(&T) -> &String) -> HashMap<&str, Vec<&T>> {
    let mut map: HashMap<&str, Vec<&T>> = HashMap::with_capacity(items.len());
    for item in items {
        map.entry(key(item).as_str()).or_default().push(item);
    }
    map
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str, description: &str) -> Tool {
        serde_json::from_value(serde_json::json!({
            "name": name, "description": description, "inputSchema": {}
        }))
        .unwrap()
    }

    #[test]
    fn diff_names_what_was_added_removed_and_changed() {
        let old = [tool("a", "1"), tool("b", "1"), tool("c", "1")];
        let new = [tool("c", "2"), tool("a", "1"), tool("d", "1")];
        let change = diff(ListKind::Tools, &old, &new, |t| &t.name);
        assert_eq!(change.added, ["d"]);
        assert_eq!(change.removed, ["b"]);
        assert_eq!(change.changed, ["c"]);
        assert!(diff(ListKind::Tools, &new, &new, |t| &t.name).is_empty());
        // A first fetch: everything is added.
        assert_eq!(
            diff(ListKind::Tools, &[], &old, |t| &t.name).added,
            ["a", "b", "c"]
        );
    }

    #[test]
    fn a_key_listed_twice_is_compared_as_a_whole() {
        let old = [tool("a", "1"), tool("a", "2")];
        let new = [tool("a", "1")];
        let change = diff(ListKind::Tools, &old, &new, |t| &t.name);
        assert_eq!(change.changed, ["a"]);
        assert!(change.added.is_empty() && change.removed.is_empty());
    }

    #[test]
    fn replace_leaves_an_equal_list_untouched() {
        let mut slot = None;
        let first = replace(ListKind::Tools, &mut slot, vec![tool("a", "1")], |t| {
            &t.name
        })
        .unwrap();
        assert_eq!(first.added, ["a"]);
        assert!(
            replace(ListKind::Tools, &mut slot, vec![tool("a", "1")], |t| &t
                .name)
            .is_none()
        );
        // An empty first list is a change of the slot (known now) but an empty change.
        let mut empty: Option<Arc<[Tool]>> = None;
        assert!(
            replace(ListKind::Tools, &mut empty, vec![], |t| &t.name).is_some_and(|c| c.is_empty())
        );
        assert_eq!(empty.as_deref().map(<[Tool]>::len), Some(0));
    }

    fn schedule() -> Schedule {
        Schedule::new(
            &LiveListOptions::new()
                .debounce(Duration::from_millis(50))
                .min_interval(Duration::from_millis(200)),
        )
    }

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn a_burst_is_one_fetch_after_the_debounce_of_its_first_notification() {
        let t0 = Instant::now();
        let mut s = schedule();
        for i in 0..5 {
            s.stale(ListKind::Tools, t0 + i * 10 * MS, false);
        }
        assert_eq!(s.next_due(), Some(t0 + 50 * MS));
        assert!(s.start_due(t0 + 49 * MS).is_empty());
        assert_eq!(s.start_due(t0 + 50 * MS), [ListKind::Tools]);
        assert_eq!(s.next_due(), None);
        assert!(s.pending(ListKind::Tools));
        s.done(ListKind::Tools);
        assert!(!s.pending(ListKind::Tools));
        assert!(s.start_due(t0 + 1000 * MS).is_empty());
    }

    #[test]
    fn a_burst_during_a_fetch_is_exactly_one_more_fetch_within_the_rate_bound() {
        let t0 = Instant::now();
        let mut s = schedule();
        s.stale(ListKind::Tools, t0, false);
        assert_eq!(s.start_due(t0 + 50 * MS), [ListKind::Tools]);
        for i in 0..10 {
            s.stale(ListKind::Tools, t0 + (60 + i) * MS, false);
        }
        // In flight: nothing more is due until it ends.
        assert_eq!(s.next_due(), None);
        s.done(ListKind::Tools);
        // One more, no sooner than the interval after the first fetch started.
        assert_eq!(s.next_due(), Some(t0 + 250 * MS));
        assert_eq!(s.start_due(t0 + 250 * MS), [ListKind::Tools]);
        s.done(ListKind::Tools);
        assert_eq!(s.next_due(), None);
    }

    #[test]
    fn ready_is_immediate_but_still_rate_bounded_and_lists_not_kept_never_fetch() {
        let t0 = Instant::now();
        let mut s = Schedule::new(
            &LiveListOptions::new()
                .min_interval(Duration::from_millis(200))
                .only([ListKind::Tools]),
        );
        for kind in ListKind::ALL {
            s.stale(kind, t0, true);
        }
        assert_eq!(s.start_due(t0), [ListKind::Tools]);
        s.done(ListKind::Tools);
        s.stale(ListKind::Tools, t0 + 10 * MS, false);
        s.stale(ListKind::Tools, t0 + 20 * MS, true);
        assert_eq!(s.next_due(), Some(t0 + 200 * MS));
        assert!(!s.pending(ListKind::Prompts));
    }
}
