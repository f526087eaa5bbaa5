//! The response cache of MCP 2026-07-28 (SEP-2549, `server/utilities/caching.mdx`): results of
//! `tools/list`, `prompts/list`, `resources/list`, `resources/templates/list` (one entry per
//! page) and `resources/read` (one per URI) kept for as long as the server's `ttlMs` hint says,
//! in the partition its `cacheScope` hint says.
//!
//! What it does, for [`crate::Client`]:
//!
//! - **Key.** The method, the one parameter that affects the result (the list's `cursor`, absent
//!   and `""` being different cursors; the read's `uri`), and the partition: `public` entries
//!   are shared by every authorization context, a `private` entry belongs to the context it was
//!   fetched in and is never served to another. A client has one context for its whole life,
//!   also when it authorizes with OAuth (a new authorization does not start a new one), but the
//!   context is part of every lookup and every private key.
//! - **Freshness.** Fresh while `now < received + ttlMs`, on tokio's clock
//!   ([`tokio::time::Instant`], so paused time drives it in tests). `ttlMs` absent, negative, not
//!   an integer, or 0: not cached. A TTL over [`CacheConfig::max_ttl`] is cut to it.
//!   `cacheScope` absent or unknown: `private`.
//! - **Never cached:** errors (and `isError: true` results), results whose `resultType` is not
//!   `complete`, results that do not decode as the method's result, and a result that arrived
//!   after an `input_required` round of any call started (a retry of 2026-07-28's multi
//!   round-trip requests carries `inputResponses`/`requestState`, which are not in the key; the
//!   runtime cannot tell which call a round belongs to, so it drops every result that may be
//!   one).
//! - **Invalidation.** `notifications/tools/list_changed` drops every `tools/list` page,
//!   `prompts/list_changed` every `prompts/list` page, `resources/list_changed` every
//!   `resources/list` and `resources/templates/list` page, `resources/updated {uri}` the read of
//!   that URI (every read when the URI is missing). A `-32602` answer to a list call with a cursor
//!   (an invalid cursor) drops every page of that list. The connection leaving `ready` (a
//!   reconnect, an expired session, a stop) drops everything: a restarted server may serve
//!   something else. A result fetched while an invalidation of its method happened is returned
//!   but not stored (it may predate the change). This holds in both eras: a legacy server may
//!   send `ttlMs` too, and its hints are honoured.
//! - **Bounds.** At most [`CacheConfig::max_entries`] entries and [`CacheConfig::max_bytes`] of
//!   results (as their JSON size); storing past either evicts expired entries, then the oldest
//!   stored. A single result over `max_bytes` is not cached.
//!
//! What it does not do: cache `server/discover` (the connection state machine decides
//! discovery, not the client), cache any other method, coalesce concurrent identical misses
//! (each goes to the server; the last answer stored wins), serve a stale entry when a re-fetch
//! fails, or refresh anything in the background (a TTL is not a polling interval).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use mcp_machine::codes;
use mcp_machine::generated::ActionId;
use mcp_machine::{ListenFilter, ListenStatus, ROWS, State, Step};
use serde_json::Value;
use tokio::time::Instant;

use crate::feed::json_size;
use crate::types::ServerNotification;

/// How a [`crate::Client`] caches results (SEP-2549): on by default, with bounds. Set it with
/// [`crate::ClientBuilder::cache_config`], or only switch it with
/// [`crate::ClientBuilder::response_cache`].
///
/// It configures the client's own cache of what its server said; it is not a shared or
/// persistent store, and it cannot make the client cache a result the server did not give a
/// positive `ttlMs`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CacheConfig {
    /// Whether results are cached at all (true). When false, nothing is stored, looked up or
    /// counted.
    pub enabled: bool,
    /// Most entries held (1024); 0 caches nothing.
    pub max_entries: usize,
    /// Most bytes of results held, as their JSON size (8 MiB); a single larger result is not
    /// cached.
    pub max_bytes: usize,
    /// Longest an entry stays fresh, whatever its `ttlMs` (24 h).
    pub max_ttl: Duration,
}

impl CacheConfig {
    /// The default: on, 1024 entries, 8 MiB, 24 h.
    pub const DEFAULT: CacheConfig = CacheConfig {
        enabled: true,
        max_entries: 1024,
        max_bytes: 8 << 20,
        max_ttl: Duration::from_secs(24 * 60 * 60),
    };

    /// The cache turned off: every call goes to the server.
    pub const DISABLED: CacheConfig = CacheConfig {
        enabled: false,
        ..CacheConfig::DEFAULT
    };
}

impl Default for CacheConfig {
    /// [`CacheConfig::DEFAULT`].
    fn default() -> Self {
        CacheConfig::DEFAULT
    }
}

/// What a client's response cache did since the client started ([`crate::Client::cache_stats`]):
/// counts, and what it holds now. All zero when the cache is off. A snapshot, not a live view;
/// it says nothing about other clients.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CacheStats {
    /// Calls answered from the cache, without a request.
    pub hits: u64,
    /// Calls of a cacheable method that found no fresh entry and went to the server.
    pub misses: u64,
    /// Results stored (a result not stored — no positive `ttlMs`, an error, too large, fetched
    /// across an invalidation — is not counted).
    pub stores: u64,
    /// Entries dropped to keep within [`CacheConfig::max_entries`] or
    /// [`CacheConfig::max_bytes`] (oldest first).
    pub evictions: u64,
    /// Entries dropped because their TTL had passed.
    pub expirations: u64,
    /// Entries dropped because they became invalid: a `list_changed` or `resources/updated`
    /// notification, an invalid cursor, the connection leaving `ready`, or
    /// [`crate::Client::clear_cache`].
    pub invalidations: u64,
    /// Entries held now (some may have expired without being looked up since).
    pub entries: usize,
    /// Bytes of results held now (their JSON size).
    pub bytes: usize,
}

/// The methods whose results the cache holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Cacheable {
    ToolsList,
    PromptsList,
    ResourcesList,
    ResourceTemplatesList,
    ResourcesRead,
}

impl Cacheable {
    const ALL: [Cacheable; 5] = [
        Cacheable::ToolsList,
        Cacheable::PromptsList,
        Cacheable::ResourcesList,
        Cacheable::ResourceTemplatesList,
        Cacheable::ResourcesRead,
    ];

    /// The JSON-RPC method.
    pub(crate) fn method(self) -> &'static str {
        match self {
            Cacheable::ToolsList => "tools/list",
            Cacheable::PromptsList => "prompts/list",
            Cacheable::ResourcesList => "resources/list",
            Cacheable::ResourceTemplatesList => "resources/templates/list",
            Cacheable::ResourcesRead => "resources/read",
        }
    }

    fn index(self) -> usize {
        self as usize
    }

    fn is_list(self) -> bool {
        self != Cacheable::ResourcesRead
    }
}

/// One request the cache can answer: the method and the parameter that affects its result
/// (the cursor of a list, `None` for the first page; the URI of a read).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct CacheRequest {
    method: Cacheable,
    param: Option<String>,
}

impl CacheRequest {
    /// A page of a list method.
    pub(crate) fn list(method: Cacheable, cursor: Option<String>) -> Self {
        debug_assert!(method.is_list());
        CacheRequest {
            method,
            param: cursor,
        }
    }

    /// `resources/read` of `uri`.
    pub(crate) fn read(uri: &str) -> Self {
        CacheRequest {
            method: Cacheable::ResourcesRead,
            param: Some(uri.to_owned()),
        }
    }

    /// The JSON-RPC method.
    pub(crate) fn method(&self) -> &'static str {
        self.method.method()
    }

    /// The request's params: `{"cursor"}` (none for a first page) or `{"uri"}`.
    pub(crate) fn params(&self) -> Option<Value> {
        let name = if self.method.is_list() {
            "cursor"
        } else {
            "uri"
        };
        self.param.as_ref().map(|p| {
            Value::Object(std::iter::once((name.to_owned(), Value::from(p.as_str()))).collect())
        })
    }
}

/// The authorization context a lookup is made in: a private entry is served only to the
/// context it was fetched in. Opaque; compared by value.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct AuthContext(Arc<str>);

impl AuthContext {
    /// The context named `key` (e.g. a digest of an access token).
    pub(crate) fn new(key: &str) -> Self {
        AuthContext(key.into())
    }

    /// The context every client uses today, authorized or not (see the module's documentation).
    pub(crate) fn unauthenticated() -> Self {
        AuthContext::new("")
    }
}

/// Who an entry may be served to.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Partition {
    Public,
    Private(AuthContext),
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Key {
    request: CacheRequest,
    partition: Partition,
}

struct Entry {
    result: Arc<Value>,
    expires: Instant,
    /// Insertion order: the key of [`Inner::order`].
    seq: u64,
    size: usize,
}

/// What a lookup found.
pub(crate) enum Lookup {
    /// A fresh result: answer with it, send nothing.
    Hit(Arc<Value>),
    /// Nothing fresh: send the request, then hand its result and this ticket to
    /// [`ResponseCache::store`].
    Miss(Ticket),
}

/// A miss's claim to store the result it fetches: remembers what the cache looked like when the
/// request went out, so that a result overtaken by an invalidation (or that may be an MRTR
/// retry's) is not stored.
pub(crate) struct Ticket {
    request: CacheRequest,
    context: AuthContext,
    /// `None`: the cache is off.
    marks: Option<Marks>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
struct Marks {
    epoch: u64,
    rounds: u64,
}

/// A result's caching hints, when it may be cached.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Hints {
    ttl: Duration,
    public: bool,
}

/// The cache of one client. Cheap to consult; every method takes one short lock.
pub(crate) struct ResponseCache {
    config: CacheConfig,
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    entries: HashMap<Key, Entry>,
    /// Insertion sequence → key, oldest first.
    order: BTreeMap<u64, Key>,
    next_seq: u64,
    bytes: usize,
    /// Per method, bumped by each invalidation of it.
    epochs: [u64; Cacheable::ALL.len()],
    /// Bumped by each `input_required` round of any call.
    rounds: u64,
    /// What the 2026-07-28 listens want and cover: a change of a kind the server is asked to
    /// tell of but does not (yet) may go unheard, so nothing of it is stored.
    listening: ListenStatus,
    stats: CacheStats,
}

/// Whether a change of `request`'s result is something `filter` tells of.
fn told(filter: &ListenFilter, request: &CacheRequest) -> bool {
    match request.method {
        Cacheable::ToolsList => filter.tools,
        Cacheable::PromptsList => filter.prompts,
        Cacheable::ResourcesList | Cacheable::ResourceTemplatesList => filter.resources,
        Cacheable::ResourcesRead => request
            .param
            .as_ref()
            .is_some_and(|uri| filter.uris.contains(uri)),
    }
}

impl Inner {
    fn remove(&mut self, key: &Key) -> Option<Entry> {
        let entry = self.entries.remove(key)?;
        self.order.remove(&entry.seq);
        self.bytes -= entry.size;
        Some(entry)
    }

    fn remove_oldest(&mut self) -> bool {
        let Some((_, key)) = self.order.pop_first() else {
            return false;
        };
        if let Some(entry) = self.entries.remove(&key) {
            self.bytes -= entry.size;
        }
        true
    }

    /// Drops the entries of every method in `methods` (and bumps their epochs).
    fn invalidate(&mut self, methods: &[Cacheable], also: impl Fn(&CacheRequest) -> bool) {
        for m in methods {
            self.epochs[m.index()] += 1;
        }
        let doomed: Vec<Key> = self
            .entries
            .keys()
            .filter(|k| methods.contains(&k.request.method) && also(&k.request))
            .cloned()
            .collect();
        for key in &doomed {
            self.remove(key);
        }
        self.stats.invalidations += doomed.len() as u64;
    }

    fn invalidate_all(&mut self) {
        self.invalidate(&Cacheable::ALL, |_| true);
    }

    fn marks(&self, method: Cacheable) -> Marks {
        Marks {
            epoch: self.epochs[method.index()],
            rounds: self.rounds,
        }
    }

    /// Drops every expired entry.
    fn purge_expired(&mut self, now: Instant) {
        let expired: Vec<Key> = self
            .entries
            .iter()
            .filter(|(_, e)| e.expires <= now)
            .map(|(k, _)| k.clone())
            .collect();
        for key in &expired {
            self.remove(key);
        }
        self.stats.expirations += expired.len() as u64;
    }
}

impl ResponseCache {
    /// An empty cache.
    pub(crate) fn new(config: CacheConfig) -> Self {
        ResponseCache {
            config,
            inner: Mutex::new(Inner::default()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn enabled(&self) -> bool {
        self.config.enabled && self.config.max_entries > 0
    }

    /// A fresh result for `request` servable in `context` (its private entry first, then the
    /// public one), or a ticket to store what the server answers.
    pub(crate) fn lookup(&self, request: &CacheRequest, context: &AuthContext) -> Lookup {
        let ticket = |marks| {
            Lookup::Miss(Ticket {
                request: request.clone(),
                context: context.clone(),
                marks,
            })
        };
        if !self.enabled() {
            return ticket(None);
        }
        let now = Instant::now();
        let mut inner = self.lock();
        for partition in [Partition::Private(context.clone()), Partition::Public] {
            let key = Key {
                request: request.clone(),
                partition,
            };
            let Some(entry) = inner.entries.get(&key) else {
                continue;
            };
            if now < entry.expires {
                let result = Arc::clone(&entry.result);
                inner.stats.hits += 1;
                return Lookup::Hit(result);
            }
            inner.remove(&key);
            inner.stats.expirations += 1;
        }
        inner.stats.misses += 1;
        let marks = inner.marks(request.method);
        drop(inner);
        ticket(Some(marks))
    }

    /// Stores the result a miss fetched, as its hints say; whether it was stored.
    pub(crate) fn store(&self, ticket: Ticket, result: Value) -> bool {
        let Some(marks) = ticket.marks else {
            return false;
        };
        let Some(hints) = hints(&result, self.config.max_ttl) else {
            return false;
        };
        let size = json_size(&result) + ticket.request.param.as_ref().map_or(0, String::len);
        if size > self.config.max_bytes {
            return false;
        }
        let now = Instant::now();
        let Some(expires) = now.checked_add(hints.ttl) else {
            return false;
        };
        let mut inner = self.lock();
        if inner.marks(ticket.request.method) != marks {
            // Invalidated (or an input round ran) while the request was out.
            return false;
        }
        // Wanted from a listen that does not cover it now (before its acknowledgement, or
        // while it is reopened): a change would go unheard.
        let l = &inner.listening;
        if told(&l.wanted, &ticket.request) && !told(&l.covered, &ticket.request) {
            return false;
        }
        let private = Key {
            request: ticket.request.clone(),
            partition: Partition::Private(ticket.context),
        };
        let public = Key {
            request: ticket.request,
            partition: Partition::Public,
        };
        // The newer answer replaces both: an older private one would shadow a new public one
        // for this context, and an older public one must not outlive a private answer.
        inner.remove(&private);
        inner.remove(&public);
        let key = if hints.public { public } else { private };
        let over = |inner: &Inner| {
            inner.entries.len() >= self.config.max_entries
                || inner.bytes + size > self.config.max_bytes
        };
        if over(&inner) {
            inner.purge_expired(now);
        }
        while over(&inner) && inner.remove_oldest() {
            inner.stats.evictions += 1;
        }
        let seq = inner.next_seq;
        inner.next_seq += 1;
        inner.order.insert(seq, key.clone());
        inner.bytes += size;
        inner.entries.insert(
            key,
            Entry {
                result: Arc::new(result),
                expires,
                seq,
                size,
            },
        );
        inner.stats.stores += 1;
        true
    }

    /// A miss's request failed with `code`: a list call with a cursor answered invalid params
    /// drops every page of that list (the cursor turned invalid; the spec says to start over).
    pub(crate) fn failed(&self, ticket: &Ticket, code: i64) {
        let request = &ticket.request;
        if !self.enabled()
            || !request.method.is_list()
            || request.param.is_none()
            || code != codes::INVALID_PARAMS
        {
            return;
        }
        self.lock().invalidate(&[request.method], |_| true);
    }

    /// A server notification: drops what it invalidates. Called for every notification, before
    /// subscribers see it.
    pub(crate) fn observe_notification(&self, notification: &ServerNotification) {
        if !self.enabled() {
            return;
        }
        match notification {
            ServerNotification::ToolsListChanged => {
                self.lock().invalidate(&[Cacheable::ToolsList], |_| true);
            }
            ServerNotification::PromptsListChanged => {
                self.lock().invalidate(&[Cacheable::PromptsList], |_| true);
            }
            ServerNotification::ResourcesListChanged => self.lock().invalidate(
                &[Cacheable::ResourcesList, Cacheable::ResourceTemplatesList],
                |_| true,
            ),
            ServerNotification::ResourceUpdated { uri } => {
                // No URI (a malformed notification): every read, to be safe.
                self.lock().invalidate(&[Cacheable::ResourcesRead], |r| {
                    uri.is_empty() || r.param.as_deref() == Some(uri.as_str())
                });
            }
            _ => {}
        }
    }

    /// What the listens of a 2026-07-28 connection want and cover now: a kind (or resource)
    /// they stop covering is dropped, since its changes may go unheard from now on.
    pub(crate) fn observe_listening(&self, status: &ListenStatus) {
        if !self.enabled() {
            return;
        }
        let mut inner = self.lock();
        let before = std::mem::replace(&mut inner.listening, status.clone());
        let lost = before.covered.minus(&status.covered);
        let mut lists = Vec::new();
        if lost.tools {
            lists.push(Cacheable::ToolsList);
        }
        if lost.prompts {
            lists.push(Cacheable::PromptsList);
        }
        if lost.resources {
            lists.extend([Cacheable::ResourcesList, Cacheable::ResourceTemplatesList]);
        }
        if !lists.is_empty() {
            inner.invalidate(&lists, |_| true);
        }
        if !lost.uris.is_empty() {
            inner.invalidate(&[Cacheable::ResourcesRead], |r| {
                r.param.as_ref().is_some_and(|uri| lost.uris.contains(uri))
            });
        }
    }

    /// A step of the connection machine: an `input_required` round marks every result fetched
    /// across it as unstorable; leaving `ready` drops everything.
    pub(crate) fn observe_step(&self, step: &Step) {
        if !self.enabled() {
            return;
        }
        let round = ROWS
            .get(usize::from(step.row))
            .is_some_and(|row| row.actions.contains(&ActionId::StartInputRound));
        let left_ready = step.from == State::Ready && step.to != State::Ready;
        if round || left_ready {
            let mut inner = self.lock();
            if round {
                inner.rounds += 1;
            }
            if left_ready {
                inner.invalidate_all();
            }
        }
    }

    /// Drops every entry (counted as invalidations); results in flight are not stored.
    pub(crate) fn clear(&self) {
        if self.enabled() {
            self.lock().invalidate_all();
        }
    }

    /// The counts so far and what is held now.
    pub(crate) fn stats(&self) -> CacheStats {
        let inner = self.lock();
        CacheStats {
            entries: inner.entries.len(),
            bytes: inner.bytes,
            ..inner.stats
        }
    }
}

/// The hints of a result that may be cached: an object that is not a tool error, whose
/// `resultType` is absent or `complete`, with a positive `ttlMs` (capped at `max_ttl`).
/// `cacheScope` other than `"public"` (absent included) is private.
fn hints(result: &Value, max_ttl: Duration) -> Option<Hints> {
    let obj = result.as_object()?;
    if obj.get("isError").and_then(Value::as_bool) == Some(true) {
        return None;
    }
    if obj
        .get("resultType")
        .is_some_and(|t| t.as_str() != Some("complete"))
    {
        return None;
    }
    let ttl = ttl_ms(obj.get("ttlMs")?)?.min(max_ttl);
    if ttl.is_zero() {
        return None;
    }
    let public = obj.get("cacheScope").and_then(Value::as_str) == Some("public");
    Some(Hints { ttl, public })
}

/// `ttlMs` as a duration: a non-negative integer (`60000.0` counts: JSON does not tell the
/// two apart); anything else is `None` (treated as 0).
fn ttl_ms(v: &Value) -> Option<Duration> {
    if let Some(ms) = v.as_u64() {
        return Some(Duration::from_millis(ms));
    }
    let ms = v.as_f64()?;
    (ms.is_finite() && ms >= 0.0 && ms.fract() == 0.0).then(|| Duration::from_secs_f64(ms / 1e3))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cache() -> ResponseCache {
        ResponseCache::new(CacheConfig::DEFAULT)
    }

    fn ctx() -> AuthContext {
        AuthContext::unauthenticated()
    }

    fn tools(cursor: Option<&str>) -> CacheRequest {
        CacheRequest::list(Cacheable::ToolsList, cursor.map(str::to_owned))
    }

    fn page(name: &str, ttl: Value, scope: &str) -> Value {
        json!({"tools": [{"name": name}], "ttlMs": ttl, "cacheScope": scope})
    }

    /// Looks `request` up in `cx` and, on a miss, stores `answer`; the hit's result, or `None`
    /// (a miss, whatever was stored).
    fn fetch(
        cache: &ResponseCache,
        request: &CacheRequest,
        cx: &AuthContext,
        answer: Value,
    ) -> Option<Value> {
        match cache.lookup(request, cx) {
            Lookup::Hit(v) => Some((*v).clone()),
            Lookup::Miss(ticket) => {
                cache.store(ticket, answer);
                None
            }
        }
    }

    fn hit(cache: &ResponseCache, request: &CacheRequest, cx: &AuthContext) -> Option<Value> {
        match cache.lookup(request, cx) {
            Lookup::Hit(v) => Some((*v).clone()),
            Lookup::Miss(_) => None,
        }
    }

    fn miss(cache: &ResponseCache, request: &CacheRequest) -> Ticket {
        match cache.lookup(request, &ctx()) {
            Lookup::Miss(t) => t,
            Lookup::Hit(v) => panic!("a hit: {v}"),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn an_entry_is_fresh_for_its_ttl_then_refetched() {
        let cache = cache();
        let req = tools(None);
        assert!(fetch(&cache, &req, &ctx(), page("a", json!(1000), "public")).is_none());
        tokio::time::advance(Duration::from_millis(999)).await;
        assert_eq!(
            hit(&cache, &req, &ctx()),
            Some(page("a", json!(1000), "public"))
        );
        tokio::time::advance(Duration::from_millis(1)).await;
        // now == received + ttl: stale.
        assert!(hit(&cache, &req, &ctx()).is_none());
        let s = cache.stats();
        assert_eq!(
            (s.hits, s.misses, s.stores, s.expirations, s.entries),
            (1, 2, 1, 1, 0)
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_listen_gap_stores_nothing_and_a_lost_kind_is_dropped() {
        let cache = cache();
        let req = tools(None);
        let tools_only = ListenFilter {
            tools: true,
            ..ListenFilter::default()
        };
        // Wanted, not covered yet (no acknowledgement): a change could go unheard.
        cache.observe_listening(&ListenStatus {
            wanted: tools_only.clone(),
            covered: ListenFilter::default(),
        });
        fetch(&cache, &req, &ctx(), page("a", json!(60000), "public"));
        assert!(hit(&cache, &req, &ctx()).is_none());
        // Covered: stored, and served.
        cache.observe_listening(&ListenStatus {
            wanted: tools_only.clone(),
            covered: tools_only.clone(),
        });
        fetch(&cache, &req, &ctx(), page("a", json!(60000), "public"));
        assert!(hit(&cache, &req, &ctx()).is_some());
        // The listen is lost: what it covered is dropped.
        cache.observe_listening(&ListenStatus {
            wanted: tools_only,
            covered: ListenFilter::default(),
        });
        assert!(hit(&cache, &req, &ctx()).is_none());
        // Nothing wanted (the handshake era, or a server that advertises no changes): the TTL
        // alone rules.
        cache.observe_listening(&ListenStatus::default());
        fetch(&cache, &req, &ctx(), page("a", json!(60000), "public"));
        assert!(hit(&cache, &req, &ctx()).is_some());
    }

    #[tokio::test(start_paused = true)]
    async fn the_ttl_is_capped() {
        let cache = ResponseCache::new(CacheConfig {
            max_ttl: Duration::from_secs(10),
            ..CacheConfig::DEFAULT
        });
        let req = tools(None);
        fetch(&cache, &req, &ctx(), page("a", json!(u64::MAX), "public"));
        tokio::time::advance(Duration::from_secs(9)).await;
        assert!(hit(&cache, &req, &ctx()).is_some());
        tokio::time::advance(Duration::from_secs(1)).await;
        assert!(hit(&cache, &req, &ctx()).is_none());
    }

    #[test]
    fn ttl_and_scope_hints() {
        let max = CacheConfig::DEFAULT.max_ttl;
        let h = |v: Value| hints(&v, max);
        let ms = Duration::from_millis;
        assert_eq!(
            h(json!({"ttlMs": 5, "cacheScope": "public"})),
            Some(Hints {
                ttl: ms(5),
                public: true
            })
        );
        assert_eq!(
            h(json!({"ttlMs": 5.0})),
            Some(Hints {
                ttl: ms(5),
                public: false
            })
        );
        for scope in [json!("private"), json!("PUBLIC"), json!(1), Value::Null] {
            assert_eq!(
                h(json!({"ttlMs": 5, "cacheScope": scope})).map(|h| h.public),
                Some(false)
            );
        }
        for ttl in [
            json!(0),
            json!(-5),
            json!(1.5),
            json!("5"),
            Value::Null,
            json!(-0.0),
        ] {
            let r = h(json!({"ttlMs": ttl, "cacheScope": "public"}));
            assert_eq!(r, None, "{ttl}");
        }
        assert_eq!(h(json!({"cacheScope": "public"})), None);
        assert_eq!(h(json!({"ttlMs": 5, "isError": true})), None);
        assert_eq!(h(json!({"ttlMs": 5, "resultType": "input_required"})), None);
        assert!(h(json!({"ttlMs": 5, "resultType": "complete"})).is_some());
        assert_eq!(h(json!([1])), None);
    }

    #[tokio::test(start_paused = true)]
    async fn keys_separate_cursors_uris_and_methods() {
        let cache = cache();
        fetch(
            &cache,
            &tools(None),
            &ctx(),
            page("first", json!(60_000), "public"),
        );
        fetch(
            &cache,
            &tools(Some("c1")),
            &ctx(),
            page("c1", json!(60_000), "public"),
        );
        assert_eq!(
            hit(&cache, &tools(None), &ctx()).unwrap()["tools"][0]["name"],
            "first"
        );
        assert_eq!(
            hit(&cache, &tools(Some("c1")), &ctx()).unwrap()["tools"][0]["name"],
            "c1"
        );
        // An empty cursor is a cursor, not the first page.
        assert!(hit(&cache, &tools(Some("")), &ctx()).is_none());
        assert!(hit(&cache, &tools(Some("c2")), &ctx()).is_none());
        let prompts = CacheRequest::list(Cacheable::PromptsList, None);
        assert!(hit(&cache, &prompts, &ctx()).is_none());
        let read = |uri| CacheRequest::read(uri);
        let body = |t: &str| json!({"contents": [{"uri": t, "text": t}], "ttlMs": 60_000});
        fetch(&cache, &read("test://a"), &ctx(), body("test://a"));
        fetch(&cache, &read("test://b"), &ctx(), body("test://b"));
        assert_eq!(
            hit(&cache, &read("test://a"), &ctx()),
            Some(body("test://a"))
        );
        assert_eq!(
            hit(&cache, &read("test://b"), &ctx()),
            Some(body("test://b"))
        );
        assert!(hit(&cache, &read("test://c"), &ctx()).is_none());
        assert_eq!(read("test://a").params(), Some(json!({"uri": "test://a"})));
        assert_eq!(tools(Some("")).params(), Some(json!({"cursor": ""})));
        assert_eq!(tools(None).params(), None);
    }

    #[tokio::test(start_paused = true)]
    async fn private_entries_stay_in_their_context_and_public_ones_are_shared() {
        let cache = cache();
        let alice = AuthContext::new("alice");
        let bob = AuthContext::new("bob");
        let read = CacheRequest::read("test://me");
        fetch(
            &cache,
            &read,
            &alice,
            json!({"contents": ["alice's"], "ttlMs": 60_000, "cacheScope": "private"}),
        );
        assert!(hit(&cache, &read, &alice).is_some());
        assert!(
            hit(&cache, &read, &bob).is_none(),
            "a private entry crossed contexts"
        );
        // Absent scope is private too.
        let list = tools(None);
        fetch(&cache, &list, &alice, json!({"tools": [], "ttlMs": 60_000}));
        assert!(hit(&cache, &list, &bob).is_none());
        // Bob's own private answer is his; alice keeps hers.
        fetch(
            &cache,
            &read,
            &bob,
            json!({"contents": ["bob's"], "ttlMs": 60_000, "cacheScope": "private"}),
        );
        assert_eq!(hit(&cache, &read, &bob).unwrap()["contents"][0], "bob's");
        assert_eq!(
            hit(&cache, &read, &alice).unwrap()["contents"][0],
            "alice's"
        );
        // A public entry is served to every context.
        let prompts = CacheRequest::list(Cacheable::PromptsList, None);
        fetch(
            &cache,
            &prompts,
            &alice,
            json!({"prompts": [], "ttlMs": 60_000, "cacheScope": "public"}),
        );
        assert!(hit(&cache, &prompts, &bob).is_some());
        assert!(hit(&cache, &prompts, &AuthContext::unauthenticated()).is_some());
    }

    #[tokio::test(start_paused = true)]
    async fn a_newer_answer_replaces_the_older_in_either_partition() {
        let cache = cache();
        let alice = AuthContext::new("alice");
        let bob = AuthContext::new("bob");
        let list = tools(None);
        fetch(
            &cache,
            &list,
            &alice,
            page("public", json!(60_000), "public"),
        );
        // Alice fetches again (a ticket of her own) and the server now says private: the older
        // public answer must not outlive it for bob.
        let t = Ticket {
            request: list.clone(),
            context: alice.clone(),
            marks: Some(cache.lock().marks(Cacheable::ToolsList)),
        };
        assert!(cache.store(t, page("private", json!(60_000), "private")));
        assert_eq!(
            hit(&cache, &list, &alice).unwrap()["tools"][0]["name"],
            "private"
        );
        assert!(
            hit(&cache, &list, &bob).is_none(),
            "the older public answer outlived it"
        );
        assert_eq!(cache.stats().entries, 1);
        // And a public answer replaces alice's private one (which would shadow it for her).
        let t = Ticket {
            request: list.clone(),
            context: alice.clone(),
            marks: Some(cache.lock().marks(Cacheable::ToolsList)),
        };
        assert!(cache.store(t, page("public again", json!(60_000), "public")));
        assert_eq!(
            hit(&cache, &list, &alice).unwrap()["tools"][0]["name"],
            "public again"
        );
        assert_eq!(
            hit(&cache, &list, &bob).unwrap()["tools"][0]["name"],
            "public again"
        );
        assert_eq!(cache.stats().entries, 1);
    }

    #[tokio::test(start_paused = true)]
    async fn the_entry_bound_evicts_the_oldest() {
        let cache = ResponseCache::new(CacheConfig {
            max_entries: 3,
            ..CacheConfig::DEFAULT
        });
        for i in 0..5 {
            let c = format!("c{i}");
            fetch(
                &cache,
                &tools(Some(&c)),
                &ctx(),
                page(&c, json!(60_000), "public"),
            );
        }
        let held: Vec<bool> = (0..5)
            .map(|i| hit(&cache, &tools(Some(&format!("c{i}"))), &ctx()).is_some())
            .collect();
        assert_eq!(held, [false, false, true, true, true]);
        let s = cache.stats();
        assert_eq!((s.entries, s.evictions, s.stores), (3, 2, 5));
    }

    #[tokio::test(start_paused = true)]
    async fn expired_entries_go_before_fresh_ones() {
        let cache = ResponseCache::new(CacheConfig {
            max_entries: 2,
            ..CacheConfig::DEFAULT
        });
        fetch(
            &cache,
            &tools(Some("long")),
            &ctx(),
            page("l", json!(60_000), "public"),
        );
        fetch(
            &cache,
            &tools(Some("short")),
            &ctx(),
            page("s", json!(10), "public"),
        );
        tokio::time::advance(Duration::from_millis(20)).await;
        fetch(
            &cache,
            &tools(Some("new")),
            &ctx(),
            page("n", json!(60_000), "public"),
        );
        // The oldest (long) is still fresh: the expired one made room.
        assert!(hit(&cache, &tools(Some("long")), &ctx()).is_some());
        assert!(hit(&cache, &tools(Some("new")), &ctx()).is_some());
        let s = cache.stats();
        assert_eq!((s.evictions, s.expirations, s.entries), (0, 1, 2));
    }

    #[tokio::test(start_paused = true)]
    async fn the_byte_bound_evicts_and_an_oversized_result_is_not_cached() {
        let big = |name: &str| json!({"tools": [{"name": name, "description": "x".repeat(400)}], "ttlMs": 60_000, "cacheScope": "public"});
        let one = json_size(&big("c0")) + 2;
        let cache = ResponseCache::new(CacheConfig {
            max_bytes: one * 2 + one / 2,
            ..CacheConfig::DEFAULT
        });
        for i in 0..3 {
            let c = format!("c{i}");
            fetch(&cache, &tools(Some(&c)), &ctx(), big(&c));
        }
        let s = cache.stats();
        assert_eq!((s.entries, s.evictions), (2, 1));
        assert!(s.bytes <= one * 2 + one / 2);
        assert!(hit(&cache, &tools(Some("c0")), &ctx()).is_none());
        assert!(hit(&cache, &tools(Some("c2")), &ctx()).is_some());
        // A result alone over the budget is refused, and evicts nothing.
        let huge =
            json!({"tools": [{"name": "h", "description": "x".repeat(one * 3)}], "ttlMs": 60_000});
        let t = miss(&cache, &tools(Some("huge")));
        assert!(!cache.store(t, huge));
        assert_eq!(cache.stats().entries, 2);
    }

    #[tokio::test(start_paused = true)]
    async fn never_cached() {
        let cache = cache();
        let req = tools(None);
        let not_stored = |answer: Value| {
            let t = miss(&cache, &req);
            assert!(!cache.store(t, answer.clone()), "stored {answer}");
        };
        not_stored(json!({"tools": [], "ttlMs": 60_000, "isError": true}));
        not_stored(
            json!({"tools": [], "ttlMs": 60_000, "resultType": "input_required",
            "inputRequests": {}, "requestState": "s"}),
        );
        not_stored(json!({"tools": []}));
        not_stored(json!({"tools": [], "ttlMs": 0}));
        not_stored(json!({"tools": [], "ttlMs": -1}));
        // A result that arrived after an input_required round (maybe this call's retry, which
        // carried inputResponses/requestState) is not stored.
        let read = CacheRequest::read("test://r");
        let Lookup::Miss(t) = cache.lookup(&read, &ctx()) else {
            panic!()
        };
        cache.lock().rounds += 1;
        assert!(!cache.store(t, json!({"contents": [], "ttlMs": 60_000})));
        assert_eq!(cache.stats().stores, 0);
        // Off: nothing stored, looked up or counted.
        let off = ResponseCache::new(CacheConfig::DISABLED);
        assert!(fetch(&off, &req, &ctx(), page("a", json!(60_000), "public")).is_none());
        assert!(hit(&off, &req, &ctx()).is_none());
        assert_eq!(off.stats(), CacheStats::default());
    }

    #[test]
    fn the_round_row_is_found_in_the_table() {
        // observe_step recognises an input round by the row's action: the table must have one.
        assert!(
            ROWS.iter()
                .any(|r| r.actions.contains(&ActionId::StartInputRound))
        );
    }

    /// Fills the cache with two pages of each list and two reads.
    fn filled() -> ResponseCache {
        let cache = cache();
        for m in Cacheable::ALL {
            for p in ["p1", "p2"] {
                let req = if m.is_list() {
                    CacheRequest::list(m, (p == "p2").then(|| p.to_owned()))
                } else {
                    CacheRequest::read(&format!("test://{p}"))
                };
                fetch(
                    &cache,
                    &req,
                    &ctx(),
                    json!({"ttlMs": 60_000, "cacheScope": "public"}),
                );
            }
        }
        assert_eq!(cache.stats().entries, 10);
        cache
    }

    /// Which of the filled entries are still held, per method in [`Cacheable::ALL`] order.
    fn held(cache: &ResponseCache) -> Vec<usize> {
        let inner = cache.lock();
        Cacheable::ALL
            .iter()
            .map(|m| {
                inner
                    .entries
                    .keys()
                    .filter(|k| k.request.method == *m)
                    .count()
            })
            .collect()
    }

    #[tokio::test(start_paused = true)]
    async fn each_notification_drops_what_it_names() {
        let cases = [
            (ServerNotification::ToolsListChanged, vec![0, 2, 2, 2, 2]),
            (ServerNotification::PromptsListChanged, vec![2, 0, 2, 2, 2]),
            (
                ServerNotification::ResourcesListChanged,
                vec![2, 2, 0, 0, 2],
            ),
            (
                ServerNotification::ResourceUpdated {
                    uri: "test://p1".into(),
                },
                vec![2, 2, 2, 2, 1],
            ),
            (
                ServerNotification::ResourceUpdated { uri: String::new() },
                vec![2, 2, 2, 2, 0],
            ),
            (
                ServerNotification::parse(
                    "notifications/message",
                    Some(json!({"level": "info", "data": 1})),
                ),
                vec![2, 2, 2, 2, 2],
            ),
        ];
        for (n, want) in cases {
            let cache = filled();
            cache.observe_notification(&n);
            assert_eq!(held(&cache), want, "{n:?}");
            assert_eq!(
                cache.stats().invalidations,
                10 - want.iter().sum::<usize>() as u64
            );
        }
        let cache = filled();
        let n = ServerNotification::ResourceUpdated {
            uri: "test://p2".into(),
        };
        cache.observe_notification(&n);
        assert!(hit(&cache, &CacheRequest::read("test://p1"), &ctx()).is_some());
        assert!(hit(&cache, &CacheRequest::read("test://p2"), &ctx()).is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn an_answer_overtaken_by_an_invalidation_is_not_stored() {
        let cache = cache();
        let t = miss(&cache, &tools(None));
        let other = miss(&cache, &CacheRequest::list(Cacheable::PromptsList, None));
        cache.observe_notification(&ServerNotification::ToolsListChanged);
        assert!(!cache.store(t, page("old", json!(60_000), "public")));
        // Another method's invalidation does not concern it.
        assert!(cache.store(other, json!({"prompts": [], "ttlMs": 60_000})));
        let t = miss(&cache, &tools(None));
        cache.clear();
        assert!(!cache.store(t, page("old", json!(60_000), "public")));
    }

    #[tokio::test(start_paused = true)]
    async fn an_invalid_cursor_drops_every_page_of_its_list() {
        let cache = filled();
        // Another error code, or -32602 for a first page (no cursor): nothing dropped.
        cache.failed(&miss(&cache, &tools(Some("gone"))), codes::INTERNAL_ERROR);
        cache.failed(&miss(&cache, &tools(Some("p9"))), codes::INTERNAL_ERROR);
        let first = Ticket {
            request: tools(None),
            context: ctx(),
            marks: None,
        };
        cache.failed(&first, codes::INVALID_PARAMS);
        assert_eq!(held(&cache), [2, 2, 2, 2, 2]);
        cache.failed(&miss(&cache, &tools(Some("gone"))), codes::INVALID_PARAMS);
        assert_eq!(held(&cache), [0, 2, 2, 2, 2]);
        let prompts = CacheRequest::list(Cacheable::PromptsList, Some("x".into()));
        cache.failed(&miss(&cache, &prompts), codes::INVALID_PARAMS);
        assert_eq!(held(&cache), [0, 0, 2, 2, 2]);
        // A read's -32602 is "no such resource", not a cursor.
        let read = Ticket {
            request: CacheRequest::read("test://p1"),
            context: ctx(),
            marks: None,
        };
        cache.failed(&read, codes::INVALID_PARAMS);
        assert_eq!(held(&cache), [0, 0, 2, 2, 2]);
    }

    #[tokio::test(start_paused = true)]
    async fn leaving_ready_drops_everything_and_a_round_blocks_stores() {
        let step = |from, to, row| Step {
            from,
            event: mcp_machine::EventKind::Response,
            row,
            file: "",
            line: 0,
            to,
        };
        let cache = filled();
        cache.observe_step(&step(State::Ready, State::Ready, 0));
        assert_eq!(cache.stats().entries, 10);
        cache.observe_step(&step(State::Ready, State::Backoff, 0));
        assert_eq!(cache.stats().entries, 0);
        assert_eq!(cache.stats().invalidations, 10);
        let round_row = ROWS
            .iter()
            .find(|r| r.actions.contains(&ActionId::StartInputRound))
            .unwrap()
            .index;
        let t = miss(&cache, &CacheRequest::read("test://r"));
        cache.observe_step(&step(State::Ready, State::Ready, round_row));
        assert!(!cache.store(t, json!({"contents": [], "ttlMs": 60_000})));
        let t = miss(&cache, &CacheRequest::read("test://r"));
        assert!(cache.store(t, json!({"contents": [], "ttlMs": 60_000})));
    }
}
