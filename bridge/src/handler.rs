//! The upstream's requests to the client (sampling, elicitation, roots, and the input rounds
//! of a 2026-07-28 server, which the client turns into the same requests), handed to the
//! session to forward to the host.
//!
//! Each request waits for the host's answer at most [`crate::BridgeOptions::server_request_timeout`].
//! When the wait ends without an answer (the upstream cancelled the request, its connection
//! was lost, the bound ran out), the session is told, so that it sends the host
//! `notifications/cancelled` for it: a request forwarded to the host is always answered or
//! cancelled.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use mcp_runtime::codes;
use mcp_runtime::{ClientHandler, HandlerFuture, Provides, RequestContext, Root, RpcError};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot, watch};

use crate::session::Event;

/// One server request on its way to the host.
pub(crate) struct ServerRequest {
    /// The id the bridge gives it on the host's side.
    pub(crate) id: u64,
    /// The method.
    pub(crate) method: String,
    /// The params as the upstream sent them.
    pub(crate) params: Value,
    /// Where the host's answer goes.
    pub(crate) reply: oneshot::Sender<Result<Value, RpcError>>,
}

/// The client handler of a bridge: declares what the host declared, forwards every request.
pub(crate) struct ForwardingHandler {
    provides: Provides,
    events: mpsc::UnboundedSender<Event>,
    next_id: Arc<AtomicU64>,
    timeout: Duration,
    roots: Option<watch::Receiver<Vec<Root>>>,
}

impl ForwardingHandler {
    pub(crate) fn new(
        provides: Provides,
        events: mpsc::UnboundedSender<Event>,
        timeout: Duration,
        roots: Option<watch::Receiver<Vec<Root>>>,
    ) -> Self {
        ForwardingHandler {
            provides,
            events,
            next_id: Arc::new(AtomicU64::new(1)),
            timeout,
            roots,
        }
    }
}

/// Tells the session, when dropped before it was disarmed, that the request ended unanswered.
struct Unanswered {
    id: u64,
    events: mpsc::UnboundedSender<Event>,
    armed: bool,
}

impl Drop for Unanswered {
    fn drop(&mut self) {
        if self.armed {
            let _ = self.events.send(Event::ServerRequestEnded { id: self.id });
        }
    }
}

impl ClientHandler for ForwardingHandler {
    fn provides(&self) -> Provides {
        self.provides.clone()
    }

    fn forwards(&self) -> bool {
        true
    }

    /// Changes when the host says its roots changed (the client then tells the upstream).
    fn roots_changes(&self) -> Option<watch::Receiver<Vec<Root>>> {
        self.roots.clone()
    }

    fn forward(&self, method: &str, params: Value, _cx: RequestContext) -> HandlerFuture<Value> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (reply, answer) = oneshot::channel();
        let request = ServerRequest {
            id,
            method: method.to_owned(),
            params,
            reply,
        };
        let events = self.events.clone();
        let timeout = self.timeout;
        Box::pin(async move {
            if events.send(Event::ServerRequest(request)).is_err() {
                return Err(gone());
            }
            let mut unanswered = Unanswered {
                id,
                events,
                armed: true,
            };
            match tokio::time::timeout(timeout, answer).await {
                Ok(Ok(outcome)) => {
                    unanswered.armed = false;
                    outcome
                }
                // The session dropped the request: the host is gone.
                Ok(Err(_)) => {
                    unanswered.armed = false;
                    Err(gone())
                }
                Err(_) => Err(RpcError {
                    code: codes::INTERNAL_ERROR,
                    message: format!("the host did not answer within {} s", timeout.as_secs_f64()),
                    data: None,
                }),
            }
        })
    }
}

fn gone() -> RpcError {
    RpcError {
        code: codes::INTERNAL_ERROR,
        message: "the host is gone".into(),
        data: None,
    }
}
