//! The bus that carries one server's changes to its open `subscriptions/listen` requests, and
//! the record of which listens are open.
//!
//! A leaf: the connection holds a bus, the tools publish on it, and the listens hear it.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::{Value, json};
use tokio::sync::broadcast;

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
    /// Every open listen ends as [`crate::ServerConfig::listen_end`] says.
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
    /// The filter the listen asked for, as JSON.
    asked: Value,
    /// The part of it the server honors, as JSON.
    honored: Value,
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
            .map(|o| json!({"id": o.id, "notifications": o.honored, "asked": o.asked}))
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

    /// Records an open listen (its id, and the filters it asked for and is honored, as
    /// JSON) until the returned guard is dropped.
    pub(crate) fn register(&self, id: &Value, asked: Value, honored: Value) -> Registered {
        let key = self.inner.next.fetch_add(1, Ordering::Relaxed);
        self.open().insert(
            key,
            Open {
                id: id.clone(),
                asked,
                honored,
            },
        );
        Registered {
            bus: self.clone(),
            key,
        }
    }
}

/// Forgets an open listen when dropped (the listen ended, was cancelled or aborted).
pub(crate) struct Registered {
    bus: ListenBus,
    key: u64,
}

impl Drop for Registered {
    fn drop(&mut self) {
        self.bus.open().remove(&self.key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registrations_are_forgotten_on_drop() {
        let bus = ListenBus::new();
        let a = bus.register(&json!(1), json!({}), json!({}));
        let b = bus.register(&json!("two"), json!({}), json!({}));
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
