//! The handshake era's request POSTs in flight over Streamable HTTP, by id, so that a
//! `notifications/cancelled` posted for one ends its POST: the client no longer waits for that
//! answer, and a server that never answers would otherwise keep a connection (and a task) per
//! cancelled call for as long as the link lives.
//!
//! Only what is ended after the cancellation was posted: the server is told first, as the
//! handshake era asks (closing a stream is no cancellation there). Not the 2026-07-28 era's
//! requests (see the `modern` module: closing the stream is the cancellation there).

use std::collections::HashMap;
use std::sync::Mutex;

use serde_json::Value;
use tokio::sync::oneshot;

/// The request POSTs in flight on one link.
#[derive(Default)]
pub(crate) struct Pending {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// By the JSON text of the request's id: the POST's token and what aborts it.
    posts: HashMap<String, (u64, oneshot::Sender<()>)>,
    next: u64,
}

/// One POST in flight: its entry leaves the map when this is dropped (however the POST ended).
pub(crate) struct Started<'a> {
    pending: &'a Pending,
    key: String,
    token: u64,
    aborted: Option<oneshot::Receiver<()>>,
}

impl Pending {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Notes the POST of the request `id` (replacing the entry of a reused id).
    pub(crate) fn start(&self, id: &Value) -> Started<'_> {
        let key = id.to_string();
        let (abort, aborted) = oneshot::channel();
        let mut state = self.lock();
        state.next += 1;
        let token = state.next;
        state.posts.insert(key.clone(), (token, abort));
        Started {
            pending: self,
            key,
            token,
            aborted: Some(aborted),
        }
    }

    /// Ends the POST of the request a cancellation names (its `params.requestId`, `None` when
    /// it names none), when it is in flight.
    pub(crate) fn cancelled(&self, named: Option<&Value>) {
        let Some(id) = named else {
            return;
        };
        if let Some((_, abort)) = self.lock().posts.remove(&id.to_string()) {
            tracing::debug!(target: "mcp::http", "cancelled: the request's POST is ended");
            let _ = abort.send(());
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.lock().posts.len()
    }
}

impl Started<'_> {
    /// Resolves once a cancellation of the request was posted; never otherwise (an entry
    /// replaced by a reused id is no cancellation). Once only.
    pub(crate) async fn aborted(&mut self) {
        let cancelled = match self.aborted.take() {
            Some(aborted) => aborted.await.is_ok(),
            None => false,
        };
        if !cancelled {
            std::future::pending::<()>().await;
        }
    }
}

impl Drop for Started<'_> {
    fn drop(&mut self) {
        let mut state = self.pending.lock();
        if state
            .posts
            .get(&self.key)
            .is_some_and(|(token, _)| *token == self.token)
        {
            state.posts.remove(&self.key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The request a cancellation names, as the bridge reads it off the cancellation.
    fn cancel(id: Value) -> Option<Value> {
        let frame = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": id, "reason": "timeout"}});
        super::super::bridge::Frame::read(&frame.to_string()).cancels
    }

    #[tokio::test]
    async fn a_cancellation_ends_only_the_post_it_names() {
        let pending = Pending::default();
        let mut one = pending.start(&json!(1));
        let mut two = pending.start(&json!("1"));
        pending.cancelled(cancel(json!(1)).as_ref());
        tokio::time::timeout(std::time::Duration::from_secs(1), one.aborted())
            .await
            .expect("aborted");
        let not_yet = tokio::time::timeout(std::time::Duration::from_millis(20), two.aborted());
        assert!(not_yet.await.is_err(), "\"1\" is not 1");
        drop(one);
        drop(two);
        assert_eq!(pending.len(), 0);
    }

    #[tokio::test]
    async fn a_reused_id_keeps_its_own_entry_and_garbage_is_ignored() {
        let pending = Pending::default();
        let first = pending.start(&json!(5));
        let mut second = pending.start(&json!(5));
        drop(first);
        assert_eq!(
            pending.len(),
            1,
            "the first POST's end left the second's entry"
        );
        pending.cancelled(
            super::super::bridge::Frame::read("not json")
                .cancels
                .as_ref(),
        );
        pending.cancelled(None);
        pending.cancelled(cancel(json!(6)).as_ref());
        pending.cancelled(cancel(json!(5)).as_ref());
        tokio::time::timeout(std::time::Duration::from_secs(1), second.aborted())
            .await
            .expect("aborted");
    }
}
