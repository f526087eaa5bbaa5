//! The upstream's requests to the client (sampling, elicitation, roots, and the input rounds
//! of a 2026-07-28 server, which the client turns into the same requests), handed to the
//! session to forward to the host.
//!
//! The front's table decides how each ends (`spec/front.toml`): the host's answer, or an error
//! when the host is gone or did not answer within
//! [`crate::BridgeOptions::server_request_timeout`]. When the upstream stops waiting first
//! (it cancelled the request, its connection was lost), the session is told, and the table
//! cancels it at the host: a request forwarded to the host is always answered or cancelled.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use mcp_runtime::codes;
use mcp_runtime::{ClientHandler, HandlerFuture, Provides, RequestContext, Root, RpcError};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot, watch};

use crate::session::Inner;

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
    events: mpsc::UnboundedSender<Inner>,
    next_id: Arc<AtomicU64>,
    roots: Option<watch::Receiver<Vec<Root>>>,
}

impl ForwardingHandler {
    pub(crate) fn new(
        provides: Provides,
        events: mpsc::UnboundedSender<Inner>,
        roots: Option<watch::Receiver<Vec<Root>>>,
    ) -> Self {
        ForwardingHandler {
            provides,
            events,
            next_id: Arc::new(AtomicU64::new(1)),
            roots,
        }
    }
}

/// Tells the session, when dropped before it was disarmed, that the request ended unanswered.
struct Unanswered {
    id: u64,
    events: mpsc::UnboundedSender<Inner>,
    armed: bool,
}

impl Drop for Unanswered {
    fn drop(&mut self) {
        if self.armed {
            let _ = self.events.send(Inner::ServerRequestEnded { id: self.id });
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
        Box::pin(async move {
            if events.send(Inner::ServerRequest(request)).is_err() {
                return Err(gone());
            }
            let mut unanswered = Unanswered {
                id,
                events,
                armed: true,
            };
            // The front's table answers it: the host's answer, or an error when the host is
            // gone or did not answer in time. Dropped unanswered (the upstream cancelled it,
            // its connection was lost): the table is told, and cancels it at the host.
            let outcome = answer.await;
            unanswered.armed = false;
            outcome.unwrap_or_else(|_| Err(gone()))
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
