//! `subscriptions/listen` (MCP 2026-07-28): the bus that carries changes to the open listens,
//! the filter a listen asks for and the part of it the server honors, and the listen itself.
//!
//! Wire shapes (`ID` is the listen request's JSON-RPC id, whatever its type):
//!
//! ```text
//! → {"id":ID,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true,
//!      "resourceSubscriptions":["test://static/1"]},"_meta":{…}}}
//! ← {"method":"notifications/subscriptions/acknowledged","params":{
//!      "_meta":{"io.modelcontextprotocol/subscriptionId":ID},"notifications":{…honored…}}}
//! ← {"method":"notifications/tools/list_changed","params":{"_meta":{…subscriptionId…}}}
//! ← {"method":"notifications/resources/updated","params":{"_meta":{…},"uri":"test://static/1"}}
//! ← {"id":ID,"result":{"resultType":"complete","_meta":{"io.modelcontextprotocol/subscriptionId":ID}}}
//! ```
//!
//! The acknowledgement is the first message tagged with the listen's id. The honored filter
//! holds only `true` flags, and its URIs (sorted) only when there are some. A listen ends:
//! - on the client's `notifications/cancelled {requestId: ID}` (stdio; no response, as for any
//!   cancelled request), or when its HTTP stream closes;
//! - at EOF of the connection (no response);
//! - on the `end_listens` tool: the `complete` result above, or, with
//!   [`ListenEnd::Cancel`], `notifications/cancelled {requestId: ID}` and no response;
//! - on the `break_listens` tool: no response at all (over HTTP the stream is cut).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::{Map, Value, json};
use tokio::sync::broadcast;

use crate::catalog;
use crate::config::{ListenEnd, ServerConfig};
use crate::server::{Handled, Reply, RpcError, Shared};

/// The method.
pub(crate) const LISTEN: &str = "subscriptions/listen";
/// The acknowledgement's method.
pub(crate) const ACKNOWLEDGED: &str = "notifications/subscriptions/acknowledged";
/// `_meta` key tagging every message of a listen with its id.
pub const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
/// How many events a slow listen may fall behind before it misses some.
const CAPACITY: usize = 1024;

/// What goes on a [`ListenBus`]: a change the open listens may be told about, or an order to
/// them from the `end_listens` and `break_listens` tools.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListenEvent {
    /// The tool list changed (`notifications/tools/list_changed`).
    ToolsChanged,
    /// The prompt list changed (`notifications/prompts/list_changed`).
    PromptsChanged,
    /// The resource list changed (`notifications/resources/list_changed`).
    ResourcesChanged,
    /// This resource changed (`notifications/resources/updated`).
    Updated(String),
    /// Every open listen ends as [`ServerConfig::listen_end`] says.
    End,
    /// Every open listen is dropped without a response.
    Break,
}

/// The changes of one server (one stdio connection, or every request and session of one HTTP
/// server), broadcast to its open `subscriptions/listen` requests, and what those are. Clones
/// share everything.
#[derive(Clone)]
pub struct ListenBus {
    inner: Arc<Bus>,
}

struct Bus {
    tx: broadcast::Sender<ListenEvent>,
    open: Mutex<BTreeMap<u64, Open>>,
    received: AtomicU64,
    next: AtomicU64,
}

/// One open listen, as `session_info` shows it.
struct Open {
    id: Value,
    asked: Filter,
    honored: Filter,
}

impl Default for ListenBus {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for ListenBus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ListenBus")
            .field("open", &self.open_count())
            .field("received", &self.received())
            .finish()
    }
}

impl ListenBus {
    /// A bus with no listen.
    pub fn new() -> Self {
        let (tx, _) = broadcast::channel(CAPACITY);
        ListenBus {
            inner: Arc::new(Bus {
                tx,
                open: Mutex::new(BTreeMap::new()),
                received: AtomicU64::new(0),
                next: AtomicU64::new(0),
            }),
        }
    }

    /// Tells every open listen (each keeps what its filter honors).
    pub fn publish(&self, event: ListenEvent) {
        // No receiver is no error: nobody listens.
        let _ = self.inner.tx.send(event);
    }

    /// How many listens are open.
    pub fn open_count(&self) -> usize {
        self.open().len()
    }

    /// How many `subscriptions/listen` requests reached the server, refused ones included.
    pub fn received(&self) -> u64 {
        self.inner.received.load(Ordering::Relaxed)
    }

    /// `{"open": [{"id", "notifications" (honored), "asked"}], "received": N}`, for
    /// `session_info`.
    pub(crate) fn to_json(&self) -> Value {
        let open: Vec<Value> = self
            .open()
            .values()
            .map(|o| {
                json!({"id": o.id, "notifications": o.honored.to_json(), "asked": o.asked.to_json()})
            })
            .collect();
        json!({"open": open, "received": self.received()})
    }

    pub(crate) fn subscribe(&self) -> broadcast::Receiver<ListenEvent> {
        self.inner.tx.subscribe()
    }

    pub(crate) fn count_received(&self) {
        self.inner.received.fetch_add(1, Ordering::Relaxed);
    }

    fn open(&self) -> MutexGuard<'_, BTreeMap<u64, Open>> {
        self.inner.open.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records an open listen until the returned guard is dropped.
    fn register(&self, id: &Value, asked: &Filter, honored: &Filter) -> Registered {
        let key = self.inner.next.fetch_add(1, Ordering::Relaxed);
        self.open().insert(
            key,
            Open {
                id: id.clone(),
                asked: asked.clone(),
                honored: honored.clone(),
            },
        );
        Registered {
            bus: self.clone(),
            key,
        }
    }
}

/// Forgets an open listen when dropped (the listen ended, was cancelled or aborted).
struct Registered {
    bus: ListenBus,
    key: u64,
}

impl Drop for Registered {
    fn drop(&mut self) {
        self.bus.open().remove(&self.key);
    }
}

/// A `SubscriptionFilter`: what a listen asks for, or what the server honors of it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Filter {
    tools: bool,
    prompts: bool,
    resources: bool,
    uris: BTreeSet<String>,
}

impl Filter {
    /// The filter of a listen's `params.notifications` (required, an object whose flags are
    /// booleans and whose `resourceSubscriptions` is an array of strings; unknown members are
    /// ignored), else -32602.
    pub(crate) fn parse(params: &Value) -> Result<Filter, RpcError> {
        let n = params
            .get("notifications")
            .and_then(Value::as_object)
            .ok_or_else(|| {
                RpcError::invalid_params(format!(
                    "{LISTEN}: params.notifications must be an object"
                ))
            })?;
        let flag = |name: &str| match n.get(name) {
            None => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(other) => Err(RpcError::invalid_params(format!(
                "{LISTEN}: notifications.{name} must be a boolean, not {other}"
            ))),
        };
        let uris = match n.get("resourceSubscriptions") {
            None => BTreeSet::new(),
            Some(Value::Array(a)) => a
                .iter()
                .map(|u| {
                    u.as_str().map(str::to_owned).ok_or_else(|| {
                        RpcError::invalid_params(format!(
                            "{LISTEN}: notifications.resourceSubscriptions must hold strings, \
                             not {u}"
                        ))
                    })
                })
                .collect::<Result<_, _>>()?,
            Some(other) => {
                return Err(RpcError::invalid_params(format!(
                    "{LISTEN}: notifications.resourceSubscriptions must be an array, not {other}"
                )));
            }
        };
        Ok(Filter {
            tools: flag("toolsListChanged")?,
            prompts: flag("promptsListChanged")?,
            resources: flag("resourcesListChanged")?,
            uris,
        })
    }

    /// What the server honors of this filter: everything asked, minus URIs outside the
    /// catalogue and minus [`ServerConfig::listen_honor`]'s exclusions.
    pub(crate) fn honored(&self, config: &ServerConfig) -> Filter {
        let x = &config.listen_honor;
        Filter {
            tools: self.tools && !x.no_tools,
            prompts: self.prompts && !x.no_prompts,
            resources: self.resources && !x.no_resources,
            uris: if x.no_subscriptions {
                BTreeSet::new()
            } else {
                self.uris
                    .iter()
                    .filter(|u| catalog::has_resource(u) && !x.no_uris.contains(*u))
                    .cloned()
                    .collect()
            },
        }
    }

    /// As a `SubscriptionFilter`: only the `true` flags, the URIs (sorted) only if any.
    pub(crate) fn to_json(&self) -> Value {
        let mut o = Map::new();
        for (on, name) in [
            (self.tools, "toolsListChanged"),
            (self.prompts, "promptsListChanged"),
            (self.resources, "resourcesListChanged"),
        ] {
            if on {
                o.insert(name.to_owned(), json!(true));
            }
        }
        if !self.uris.is_empty() {
            o.insert("resourceSubscriptions".to_owned(), json!(self.uris));
        }
        Value::Object(o)
    }

    /// The notification (method, params without the tag) this filter lets `event` through as.
    fn notification(&self, event: &ListenEvent) -> Option<(&'static str, Map<String, Value>)> {
        let mut params = Map::new();
        let method = match event {
            ListenEvent::ToolsChanged if self.tools => "notifications/tools/list_changed",
            ListenEvent::PromptsChanged if self.prompts => "notifications/prompts/list_changed",
            ListenEvent::ResourcesChanged if self.resources => {
                "notifications/resources/list_changed"
            }
            ListenEvent::Updated(uri) if self.uris.contains(uri) => {
                params.insert("uri".to_owned(), json!(uri));
                "notifications/resources/updated"
            }
            _ => return None,
        };
        Some((method, params))
    }
}

/// `params._meta` tagging a message with the listen `id`.
fn tag(id: &Value) -> Value {
    json!({SUBSCRIPTION_ID: id})
}

/// `params` (an object) with the listen's tag in its `_meta`.
fn tagged(id: &Value, mut params: Map<String, Value>) -> Value {
    params.insert("_meta".to_owned(), tag(id));
    Value::Object(params)
}

/// Serves one `subscriptions/listen` (its `_meta` already checked, its receipt counted): -32601
/// when [`ServerConfig::listen`] is off, -32602 for a bad filter; else the acknowledgement, then
/// the honored changes, until the listen ends (see the module's documentation). Cancelled or
/// aborted, it is forgotten (its future dropped).
pub(crate) async fn listen(shared: &Shared, params: &Value, id: &Value) -> Handled {
    let config = &shared.config;
    if !config.listen {
        return Err(RpcError::new(
            crate::codes::METHOD_NOT_FOUND,
            format!("Method not found: {LISTEN} (the server runs with --listen off)"),
        ));
    }
    let asked = Filter::parse(params)?;
    let honored = asked.honored(config);
    let bus = &shared.listen;
    // Subscribed before the acknowledgement: nothing published after it is missed.
    let mut events = bus.subscribe();
    let _registered = bus.register(id, &asked, &honored);
    let mut closing = shared.closing();
    let mut ack = Map::new();
    ack.insert("notifications".to_owned(), honored.to_json());
    shared.notify(ACKNOWLEDGED, tagged(id, ack));
    tracing::debug!(%id, honored = %honored.to_json(), "listen acknowledged");
    loop {
        let event = tokio::select! {
            e = events.recv() => e,
            _ = closing.wait_for(|c| *c) => {
                tracing::debug!(%id, "listen dropped: the connection is closing");
                return Ok(Reply::Answered);
            }
        };
        match event {
            Ok(ListenEvent::End) => {
                tracing::debug!(%id, how = config.listen_end.name(), "listen ended by the server");
                return Ok(match config.listen_end {
                    ListenEnd::Complete => Reply::Result(json!({"_meta": tag(id)})),
                    ListenEnd::Cancel => {
                        shared.notify(
                            "notifications/cancelled",
                            json!({"requestId": id, "reason": "end_listens (--listen-end cancel)"}),
                        );
                        Reply::Answered
                    }
                });
            }
            Ok(ListenEvent::Break) => {
                tracing::debug!(%id, "listen broken: no response");
                return Ok(Reply::Answered);
            }
            Ok(event) => {
                if let Some((method, params)) = honored.notification(&event) {
                    shared.notify(method, tagged(id, params));
                }
            }
            Err(broadcast::error::RecvError::Lagged(n)) => {
                tracing::warn!(%id, missed = n, "listen fell behind: events missed");
            }
            // The bus lives as long as the connection: not reached.
            Err(broadcast::error::RecvError::Closed) => return Ok(Reply::Answered),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ListenHonor;

    #[test]
    fn filters_parse_and_reject() {
        let f = Filter::parse(&json!({"notifications": {
            "toolsListChanged": true, "promptsListChanged": false,
            "resourceSubscriptions": ["b", "a"], "future": 1}}))
        .unwrap();
        assert_eq!(
            f.to_json(),
            json!({"toolsListChanged": true, "resourceSubscriptions": ["a", "b"]})
        );
        assert_eq!(
            Filter::parse(&json!({"notifications": {}}))
                .unwrap()
                .to_json(),
            json!({})
        );
        for bad in [
            json!({}),
            json!({"notifications": []}),
            json!({"notifications": {"toolsListChanged": "yes"}}),
            json!({"notifications": {"resourceSubscriptions": "test://static/1"}}),
            json!({"notifications": {"resourceSubscriptions": [1]}}),
        ] {
            let e = Filter::parse(&bad).unwrap_err();
            assert_eq!(e.code, crate::codes::INVALID_PARAMS, "{bad}");
        }
    }

    #[test]
    fn honored_drops_unknown_uris_and_exclusions() {
        let asked = Filter::parse(&json!({"notifications": {
            "toolsListChanged": true, "promptsListChanged": true, "resourcesListChanged": true,
            "resourceSubscriptions": ["test://static/1", "test://static/2", "test://nope",
                                      "test://dynamic/7"]}}))
        .unwrap();
        let all = asked.honored(&ServerConfig::echo());
        assert_eq!(
            all.to_json()["resourceSubscriptions"],
            json!(["test://dynamic/7", "test://static/1", "test://static/2"])
        );
        let config = ServerConfig {
            listen_honor: ListenHonor::parse("-prompts,-test://static/2").unwrap(),
            ..ServerConfig::echo()
        };
        assert_eq!(
            asked.honored(&config).to_json(),
            json!({"toolsListChanged": true, "resourcesListChanged": true,
                   "resourceSubscriptions": ["test://dynamic/7", "test://static/1"]})
        );
        let config = ServerConfig {
            listen_honor: ListenHonor::parse("-tools,-resources,-subscriptions").unwrap(),
            ..ServerConfig::echo()
        };
        assert_eq!(
            asked.honored(&config).to_json(),
            json!({"promptsListChanged": true})
        );
    }

    #[test]
    fn notifications_follow_the_filter() {
        let f = Filter::parse(&json!({"notifications": {
            "toolsListChanged": true, "resourceSubscriptions": ["test://static/1"]}}))
        .unwrap();
        let method = |e: ListenEvent| f.notification(&e).map(|(m, p)| (m, Value::Object(p)));
        assert_eq!(
            method(ListenEvent::ToolsChanged),
            Some(("notifications/tools/list_changed", json!({})))
        );
        assert_eq!(method(ListenEvent::PromptsChanged), None);
        assert_eq!(method(ListenEvent::ResourcesChanged), None);
        assert_eq!(
            method(ListenEvent::Updated("test://static/1".into())),
            Some((
                "notifications/resources/updated",
                json!({"uri": "test://static/1"})
            ))
        );
        assert_eq!(method(ListenEvent::Updated("test://static/2".into())), None);
        assert_eq!(
            tagged(&json!("l-1"), Map::new()),
            json!({"_meta": {SUBSCRIPTION_ID: "l-1"}})
        );
    }

    #[test]
    fn registrations_are_forgotten_on_drop() {
        let bus = ListenBus::new();
        let f = Filter::default();
        let a = bus.register(&json!(1), &f, &f);
        let b = bus.register(&json!("two"), &f, &f);
        assert_eq!(bus.open_count(), 2);
        drop(a);
        assert_eq!(
            bus.to_json()["open"],
            json!([{"id": "two", "notifications": {}, "asked": {}}])
        );
        drop(b);
        assert_eq!(bus.open_count(), 0);
    }
}
