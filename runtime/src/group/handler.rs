//! [`GroupHandler`]: the host's answers to the requests of every server of a group (sampling,
//! roots, elicitation), each told which server asks. Each server's client gets its own
//! [`ClientHandler`] wrapping the group's handler with the server's name, so what a server
//! declares and is answered is exactly what the host's handler provides for that server.

use std::sync::Arc;

use mcp_machine::{RpcError, codes};
use tokio::sync::watch;

use crate::handler::{ClientHandler, HandlerFuture, Provides, RequestContext};
use crate::requests::{
    CreateMessageParams, CreateMessageResult, ElicitParams, ElicitResult, ListRootsResult, Root,
};

/// Answers the requests of every server of a group, told which server asks (its name in the
/// group). The same contract as [`ClientHandler`] otherwise: each method gets the request's
/// params and its [`RequestContext`], runs in a task of its own, and is aborted when the server
/// cancels. What is not overridden answers method-not-found.
///
/// For a handler that needs no server name, or one built per server, see
/// [`super::GroupBuilder::handler_for`].
pub trait GroupHandler: Send + Sync + 'static {
    /// What this handler answers for `server` (the capabilities that server is told).
    fn provides(&self, server: &str) -> Provides;

    /// `sampling/createMessage` from `server`.
    fn create_message(
        &self,
        server: &str,
        params: CreateMessageParams,
        cx: RequestContext,
    ) -> HandlerFuture<CreateMessageResult> {
        let _ = (server, params, cx);
        unsupported("sampling/createMessage")
    }

    /// `roots/list` from `server`.
    fn list_roots(&self, server: &str, cx: RequestContext) -> HandlerFuture<ListRootsResult> {
        let _ = (server, cx);
        unsupported("roots/list")
    }

    /// `elicitation/create` from `server`.
    fn elicit(
        &self,
        server: &str,
        params: ElicitParams,
        cx: RequestContext,
    ) -> HandlerFuture<ElicitResult> {
        let _ = (server, params, cx);
        unsupported("elicitation/create")
    }

    /// The roots `server` is offered as they change, if they change at run time (the client
    /// then declares `roots.listChanged` to it).
    fn roots_changes(&self, server: &str) -> Option<watch::Receiver<Vec<Root>>> {
        let _ = server;
        None
    }

    /// Whether [`GroupHandler::forward`] answers every request, untyped (a bridge or proxy
    /// that hands requests on unchanged). Default `false`.
    fn forwards(&self) -> bool {
        false
    }

    /// A request of `server`'s with its params exactly as sent (only when
    /// [`GroupHandler::forwards`] says so; the typed methods are not called then).
    fn forward(
        &self,
        server: &str,
        method: &str,
        params: serde_json::Value,
        cx: RequestContext,
    ) -> HandlerFuture<serde_json::Value> {
        let _ = (server, params, cx);
        unsupported(method)
    }
}

fn unsupported<T: Send + 'static>(method: &str) -> HandlerFuture<T> {
    let err = RpcError {
        code: codes::METHOD_NOT_FOUND,
        message: format!("method not found: {method}"),
        data: None,
    };
    Box::pin(async move { Err(err) })
}

/// Builds the handler of one server from its name.
pub(crate) type HandlerSource = Arc<dyn Fn(&str) -> ServerHandler + Send + Sync>;

/// The handler a group gives one server's client.
pub(crate) struct ServerHandler(Arc<dyn ClientHandler>);

impl ServerHandler {
    /// The source giving each server `handler` told its name.
    pub(crate) fn tagging(handler: Arc<dyn GroupHandler>) -> HandlerSource {
        Arc::new(move |server| {
            ServerHandler(Arc::new(Tagged {
                server: Arc::from(server),
                inner: Arc::clone(&handler),
            }))
        })
    }

    /// The source giving each server what `f` builds for it.
    pub(crate) fn built<H: ClientHandler>(
        f: impl Fn(&str) -> H + Send + Sync + 'static,
    ) -> HandlerSource {
        Arc::new(move |server| ServerHandler(Arc::new(f(server))))
    }
}

impl ClientHandler for ServerHandler {
    fn provides(&self) -> Provides {
        self.0.provides()
    }

    fn create_message(
        &self,
        params: CreateMessageParams,
        cx: RequestContext,
    ) -> HandlerFuture<CreateMessageResult> {
        self.0.create_message(params, cx)
    }

    fn list_roots(&self, cx: RequestContext) -> HandlerFuture<ListRootsResult> {
        self.0.list_roots(cx)
    }

    fn elicit(&self, params: ElicitParams, cx: RequestContext) -> HandlerFuture<ElicitResult> {
        self.0.elicit(params, cx)
    }

    fn roots_changes(&self) -> Option<watch::Receiver<Vec<Root>>> {
        self.0.roots_changes()
    }

    fn forwards(&self) -> bool {
        self.0.forwards()
    }

    fn forward(
        &self,
        method: &str,
        params: serde_json::Value,
        cx: RequestContext,
    ) -> HandlerFuture<serde_json::Value> {
        self.0.forward(method, params, cx)
    }
}

/// A group handler told one server's name.
struct Tagged {
    server: Arc<str>,
    inner: Arc<dyn GroupHandler>,
}

impl ClientHandler for Tagged {
    fn provides(&self) -> Provides {
        self.inner.provides(&self.server)
    }

    fn create_message(
        &self,
        params: CreateMessageParams,
        cx: RequestContext,
    ) -> HandlerFuture<CreateMessageResult> {
        self.inner.create_message(&self.server, params, cx)
    }

    fn list_roots(&self, cx: RequestContext) -> HandlerFuture<ListRootsResult> {
        self.inner.list_roots(&self.server, cx)
    }

    fn elicit(&self, params: ElicitParams, cx: RequestContext) -> HandlerFuture<ElicitResult> {
        self.inner.elicit(&self.server, params, cx)
    }

    fn roots_changes(&self) -> Option<watch::Receiver<Vec<Root>>> {
        self.inner.roots_changes(&self.server)
    }

    fn forwards(&self) -> bool {
        self.inner.forwards()
    }

    fn forward(
        &self,
        method: &str,
        params: serde_json::Value,
        cx: RequestContext,
    ) -> HandlerFuture<serde_json::Value> {
        self.inner.forward(&self.server, method, params, cx)
    }
}
