//! [`Feed`]: a bounded, drop-oldest queue per subscriber of what the driver publishes (server
//! notifications, connection transitions), with a count of what a slow subscriber lost.
//!
//! Why not a `tokio::sync::broadcast`: a broadcast channel bounds the number of messages, not
//! their size, so one idle receiver of 1024 notifications of up to 16 MiB each could pin 16 GiB.
//! A feed bounds both, per subscriber, and drops the oldest when either bound is passed, so what
//! a server sends can never grow the host's memory past `subscribers × bytes`.
//!
//! A feed can be taken from the [`crate::ClientBuilder`] before the client starts, so nothing
//! published from the first transition on is missed.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, Weak};

use tokio::sync::Notify;

/// The bounds of one subscriber's queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FeedLimits {
    /// Most items held (at least 1).
    pub items: usize,
    /// Most bytes held, as the publisher sizes its items (for notifications: the JSON size of
    /// their params). The newest item is always kept, even alone over the budget.
    pub bytes: usize,
}

impl FeedLimits {
    /// Notifications: 1024 items, 16 MiB.
    pub const NOTIFICATIONS: FeedLimits = FeedLimits {
        items: 1024,
        bytes: 16 << 20,
    };

    /// Transitions: 256 items (each is a few dozen bytes).
    pub const TRANSITIONS: FeedLimits = FeedLimits {
        items: 256,
        bytes: usize::MAX,
    };
}

/// The publishing side: the subscribers alive, their bounds, and whether publishing is over.
pub(crate) struct Hub<T> {
    inner: Mutex<HubInner<T>>,
}

struct HubInner<T> {
    subscribers: Vec<Weak<Slot<T>>>,
    limits: FeedLimits,
    closed: bool,
}

/// One subscriber's queue.
struct Slot<T> {
    queue: Mutex<Queue<T>>,
    ready: Notify,
}

struct Queue<T> {
    items: VecDeque<(T, usize)>,
    bytes: usize,
    dropped: u64,
    closed: bool,
}

impl<T: Clone> Hub<T> {
    /// A hub whose subscribers get `limits` each.
    pub(crate) fn new(limits: FeedLimits) -> Self {
        Hub {
            inner: Mutex::new(HubInner {
                subscribers: Vec::new(),
                limits,
                closed: false,
            }),
        }
    }

    /// Changes the bounds of subscribers that subscribe from now on.
    pub(crate) fn set_limits(&self, limits: FeedLimits) {
        lock(&self.inner).limits = FeedLimits {
            items: limits.items.max(1),
            bytes: limits.bytes,
        };
    }

    /// A new subscriber, which sees everything published from now on.
    pub(crate) fn subscribe(&self) -> Feed<T> {
        let mut inner = lock(&self.inner);
        let slot = Arc::new(Slot {
            queue: Mutex::new(Queue {
                items: VecDeque::new(),
                bytes: 0,
                dropped: 0,
                closed: inner.closed,
            }),
            ready: Notify::new(),
        });
        inner.subscribers.push(Arc::downgrade(&slot));
        Feed {
            slot,
            limits: inner.limits,
        }
    }

    /// Gives `item`, sized `bytes`, to every live subscriber, dropping each one's oldest items
    /// past its bounds; returns how many items were dropped so (across subscribers). Costs
    /// nothing when nobody subscribed.
    pub(crate) fn publish(&self, item: &T, bytes: usize) -> u64 {
        let mut inner = lock(&self.inner);
        let limits = inner.limits;
        let mut dropped = 0;
        inner.subscribers.retain(|weak| {
            let Some(slot) = weak.upgrade() else {
                return false;
            };
            {
                let mut q = lock(&slot.queue);
                q.items.push_back((item.clone(), bytes));
                q.bytes = q.bytes.saturating_add(bytes);
                while q.items.len() > 1
                    && (q.items.len() > limits.items.max(1) || q.bytes > limits.bytes)
                {
                    if let Some((_, b)) = q.items.pop_front() {
                        q.bytes -= b;
                        q.dropped += 1;
                        dropped += 1;
                    }
                }
            }
            slot.ready.notify_one();
            true
        });
        dropped
    }

    /// No more items: each subscriber receives what it holds, then `None`.
    pub(crate) fn close(&self) {
        let mut inner = lock(&self.inner);
        inner.closed = true;
        for slot in inner.subscribers.drain(..).filter_map(|w| w.upgrade()) {
            lock(&slot.queue).closed = true;
            slot.ready.notify_one();
        }
    }
}

/// One subscriber's view of a client's notifications ([`crate::Notifications`]) or transitions
/// ([`crate::Transitions`]): everything published after it was created, oldest first, within
/// its [`FeedLimits`]. A subscriber that falls behind loses the oldest items, never the newest,
/// and [`Feed::dropped`] counts them. Dropping it unsubscribes.
///
/// It is not a broadcast channel (no `Lagged` error: the loss is a count you read when you
/// want) and not a log of the past (a feed created late sees nothing earlier; take one from the
/// [`crate::ClientBuilder`] to see everything).
pub struct Feed<T> {
    slot: Arc<Slot<T>>,
    limits: FeedLimits,
}

impl<T> std::fmt::Debug for Feed<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let q = lock(&self.slot.queue);
        f.debug_struct("Feed")
            .field("held", &q.items.len())
            .field("bytes", &q.bytes)
            .field("dropped", &q.dropped)
            .field("closed", &q.closed)
            .field("limits", &self.limits)
            .finish()
    }
}

impl<T> Feed<T> {
    /// The next item, waiting for one; `None` once the client has stopped and everything held
    /// was received. Cancel-safe: dropping the future loses nothing.
    pub async fn recv(&mut self) -> Option<T> {
        loop {
            if let Some(item) = self.try_recv() {
                return Some(item);
            }
            if lock(&self.slot.queue).closed {
                return None;
            }
            self.slot.ready.notified().await;
        }
    }

    /// The next item if one is held, without waiting.
    pub fn try_recv(&mut self) -> Option<T> {
        let mut q = lock(&self.slot.queue);
        let (item, bytes) = q.items.pop_front()?;
        q.bytes -= bytes;
        Some(item)
    }

    /// How many items this subscriber lost because it fell behind (the oldest were dropped).
    pub fn dropped(&self) -> u64 {
        lock(&self.slot.queue).dropped
    }

    /// How many items are held, waiting to be received.
    pub fn len(&self) -> usize {
        lock(&self.slot.queue).items.len()
    }

    /// Whether no item is waiting.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bounds of this subscriber's queue.
    pub fn limits(&self) -> FeedLimits {
        self.limits
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The approximate size of `value` as JSON text, in bytes (strings and numbers by their
/// length, plus punctuation), without serializing it.
pub(crate) fn json_size(value: &serde_json::Value) -> usize {
    use serde_json::Value;
    match value {
        Value::Null | Value::Bool(_) => 5,
        Value::Number(_) => 8,
        Value::String(s) => s.len() + 2,
        Value::Array(a) => a.iter().map(|v| json_size(v) + 1).sum::<usize>() + 2,
        Value::Object(o) => {
            o.iter()
                .map(|(k, v)| k.len() + 4 + json_size(v))
                .sum::<usize>()
                + 2
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_idle_subscriber_keeps_only_the_newest_within_its_byte_budget() {
        let hub = Hub::new(FeedLimits {
            items: 100,
            bytes: 10,
        });
        let mut feed = hub.subscribe();
        for i in 0..10u32 {
            hub.publish(&i, 4);
        }
        // 10 bytes hold two items of 4: the eight oldest were dropped and counted.
        assert_eq!(feed.len(), 2);
        assert_eq!(feed.dropped(), 8);
        assert_eq!(feed.try_recv(), Some(8));
        assert_eq!(feed.try_recv(), Some(9));
        assert_eq!(feed.try_recv(), None);
    }

    #[test]
    fn the_item_bound_drops_the_oldest() {
        let hub = Hub::new(FeedLimits {
            items: 3,
            bytes: usize::MAX,
        });
        let mut feed = hub.subscribe();
        for i in 0..5u32 {
            hub.publish(&i, 1);
        }
        assert_eq!(feed.dropped(), 2);
        assert_eq!(
            std::iter::from_fn(|| feed.try_recv()).collect::<Vec<_>>(),
            vec![2, 3, 4]
        );
    }

    #[test]
    fn an_item_over_the_budget_alone_is_still_delivered() {
        let hub = Hub::new(FeedLimits { items: 8, bytes: 4 });
        let mut feed = hub.subscribe();
        hub.publish(&1u8, 100);
        assert_eq!(feed.try_recv(), Some(1));
        assert_eq!(feed.dropped(), 0);
    }

    #[test]
    fn a_dropped_subscriber_is_forgotten_and_a_late_one_sees_only_what_follows() {
        let hub = Hub::new(FeedLimits::NOTIFICATIONS);
        let early = hub.subscribe();
        hub.publish(&1u8, 1);
        drop(early);
        let mut late = hub.subscribe();
        hub.publish(&2u8, 1);
        assert_eq!(lock(&hub.inner).subscribers.len(), 1);
        assert_eq!(late.try_recv(), Some(2));
    }

    #[tokio::test]
    async fn recv_waits_for_an_item_and_ends_after_close_once_drained() {
        let hub = Arc::new(Hub::new(FeedLimits::NOTIFICATIONS));
        let mut feed = hub.subscribe();
        let publisher = Arc::clone(&hub);
        let task = tokio::spawn(async move {
            tokio::task::yield_now().await;
            publisher.publish(&7u8, 1);
            publisher.close();
        });
        assert_eq!(feed.recv().await, Some(7));
        assert_eq!(feed.recv().await, None);
        task.await.unwrap();
        // Subscribing after the close gives a feed that ends at once.
        assert_eq!(hub.subscribe().recv().await, None);
    }

    #[test]
    fn json_size_is_close_to_the_serialized_length() {
        let v = serde_json::json!({"level": "info", "data": ["a".repeat(1000), 12, null]});
        let real = serde_json::to_vec(&v).unwrap().len();
        let est = json_size(&v);
        assert!(
            est >= real && est < real + 32,
            "estimate {est}, real {real}"
        );
    }
}
