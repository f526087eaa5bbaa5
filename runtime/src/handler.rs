//! Answering the server's requests: sampling, roots and elicitation, typed.
//!
//! The client declares exactly the capabilities its handler [`Provides`]; a server request
//! for anything else is answered with method-not-found by the core, and `ping` is always
//! answered by the core without reaching the handler. Params that do not fit their type are
//! answered with invalid-params (-32602) without reaching the handler.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use mcp_machine::{RpcError, ServerRequestId, codes};
use serde::Serialize;
use serde_json::{Value, json};
use tokio::sync::watch;

use crate::requests::{
    CreateMessageParams, CreateMessageResult, ElicitParams, ElicitResult, ListRootsResult, Root,
};
use crate::types::ServerInfo;

/// A boxed future answering one server request with a `T` or a JSON-RPC error.
pub type HandlerFuture<T> = Pin<Box<dyn Future<Output = Result<T, RpcError>> + Send + 'static>>;

/// Which server requests a handler answers, and so exactly the capabilities the client
/// declares in `initialize`: `sampling` declares `sampling` (answers `sampling/createMessage`),
/// `roots` declares `roots` (answers `roots/list`; `roots_list_changed` is set by the client
/// when the handler has a [`Roots`] handle), `elicitation` declares `elicitation.form` and
/// `elicitation_url` `elicitation.url` (answers `elicitation/create` in that mode; a request
/// for a mode not declared is refused with method-not-found). The machine's own type: one
/// definition decides both what is declared and what is routed.
pub use mcp_machine::ClientCapabilities as Provides;

/// What a handler knows about the request it answers: its id, the server, whether the server
/// (or a lost connection) cancelled it, and a way to report progress to the server.
///
/// Cancellation also aborts the handler's future at its next `.await`; check
/// [`RequestContext::is_cancelled`] in work that does not await (a blocking prompt on a
/// thread, for example).
#[derive(Clone)]
pub struct RequestContext {
    id: ServerRequestId,
    method: String,
    server: Option<ServerInfo>,
    progress_token: Option<Value>,
    cancelled: watch::Receiver<bool>,
    notifier: Option<crate::command::Notifier>,
}

impl std::fmt::Debug for RequestContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestContext")
            .field("id", &self.id)
            .field("method", &self.method)
            .field("progress_token", &self.progress_token)
            .field("cancelled", &self.is_cancelled())
            .finish_non_exhaustive()
    }
}

impl RequestContext {
    pub(crate) fn new(
        id: ServerRequestId,
        method: String,
        params: &Value,
        server: Option<ServerInfo>,
        cancelled: watch::Receiver<bool>,
        notifier: Option<crate::command::Notifier>,
    ) -> Self {
        let progress_token = params
            .get("_meta")
            .and_then(|m| m.get("progressToken"))
            .cloned();
        RequestContext {
            id,
            method,
            server,
            progress_token,
            cancelled,
            notifier,
        }
    }

    /// The request's JSON-RPC id.
    pub fn id(&self) -> &ServerRequestId {
        &self.id
    }

    /// The request's method.
    pub fn method(&self) -> &str {
        &self.method
    }

    /// What the server said in the handshake of the connection the request came on.
    pub fn server(&self) -> Option<&ServerInfo> {
        self.server.as_ref()
    }

    /// Whether the server cancelled the request or its connection ended.
    pub fn is_cancelled(&self) -> bool {
        *self.cancelled.borrow()
    }

    /// Resolves when the request is cancelled (never, if it is not).
    pub async fn cancelled(&self) {
        let mut rx = self.cancelled.clone();
        if rx.wait_for(|c| *c).await.is_err() {
            std::future::pending::<()>().await;
        }
    }

    /// Sends `notifications/progress` for this request, if the server asked for progress
    /// (gave `_meta.progressToken`); otherwise does nothing. `progress` should increase.
    pub async fn progress(
        &self,
        progress: f64,
        total: Option<f64>,
        message: Option<&str>,
    ) -> crate::Result<()> {
        let (Some(token), Some(notifier)) = (&self.progress_token, &self.notifier) else {
            return Ok(());
        };
        let mut params = json!({"progressToken": token, "progress": progress});
        if let Some(total) = total {
            params["total"] = json!(total);
        }
        if let Some(message) = message {
            params["message"] = json!(message);
        }
        notifier
            .notify("notifications/progress", Some(params))
            .await
    }
}

/// Answers the server's requests, typed. Each method gets the request's params and a
/// [`RequestContext`] and returns the result or a JSON-RPC error. Handlers run in their own
/// tasks (one per request, at most [`crate::ClientBuilder::max_server_requests`] at once); a
/// handler that panics is answered with an internal error, and the server's
/// `notifications/cancelled` or a lost connection aborts it.
///
/// Implement it for a handler with state, or use [`Handlers`] (closures).
pub trait ClientHandler: Send + Sync + 'static {
    /// What this handler answers.
    fn provides(&self) -> Provides;

    /// `sampling/createMessage`: sample a message with the host's model.
    fn create_message(
        &self,
        params: CreateMessageParams,
        cx: RequestContext,
    ) -> HandlerFuture<CreateMessageResult> {
        let _ = (params, cx);
        unsupported("sampling/createMessage")
    }

    /// `roots/list`: the roots the server may work in.
    fn list_roots(&self, cx: RequestContext) -> HandlerFuture<ListRootsResult> {
        let _ = cx;
        unsupported("roots/list")
    }

    /// `elicitation/create`: ask the user (form mode, or URL mode when declared).
    fn elicit(&self, params: ElicitParams, cx: RequestContext) -> HandlerFuture<ElicitResult> {
        let _ = (params, cx);
        unsupported("elicitation/create")
    }

    /// The roots as they change, if the host changes them at run time: the client then
    /// declares `roots.listChanged` and sends `notifications/roots/list_changed` on each
    /// change. [`Handlers::roots`] with a [`Roots`] handle does this.
    fn roots_changes(&self) -> Option<watch::Receiver<Vec<Root>>> {
        None
    }

    /// Whether [`ClientHandler::forward`] answers every server request, untyped, instead of
    /// the typed methods: a bridge or proxy that hands requests on unchanged says `true`.
    /// Default `false`.
    fn forwards(&self) -> bool {
        false
    }

    /// Answers a server request with its params exactly as the server sent them (only when
    /// [`ClientHandler::forwards`] says so; the typed methods are not called then). Only
    /// methods the declared capabilities promise reach it: the core refuses the others.
    fn forward(&self, method: &str, params: Value, cx: RequestContext) -> HandlerFuture<Value> {
        let _ = (params, cx);
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

type Callback<P, R> = Arc<dyn Fn(P, RequestContext) -> HandlerFuture<R> + Send + Sync>;

/// The roots a host offers, changeable at run time: a cheap, clonable handle. Give it to
/// [`Handlers::roots`]; every [`Roots::set`] or [`Roots::update`] makes each client using it
/// send `notifications/roots/list_changed` (the server then asks `roots/list` again).
///
/// ```
/// use mcp_runtime::{Handlers, Root, Roots};
/// let roots = Roots::new([Root::new("file:///work").named("work")]);
/// let handlers = Handlers::new().roots(roots.clone());
/// // Later, when the user opens another folder:
/// roots.update(|r| r.push(Root::new("file:///home/me/other")));
/// assert_eq!(roots.get().len(), 2);
/// # drop(handlers);
/// ```
#[derive(Clone, Debug)]
pub struct Roots {
    tx: Arc<watch::Sender<Vec<Root>>>,
}

impl Roots {
    /// A handle holding `roots`.
    pub fn new(roots: impl IntoIterator<Item = Root>) -> Self {
        Roots {
            tx: Arc::new(watch::channel(roots.into_iter().collect()).0),
        }
    }

    /// The roots now.
    pub fn get(&self) -> Vec<Root> {
        self.tx.borrow().clone()
    }

    /// Replaces the roots (servers are told).
    pub fn set(&self, roots: impl IntoIterator<Item = Root>) {
        self.tx.send_replace(roots.into_iter().collect());
    }

    /// Changes the roots in place (servers are told).
    pub fn update(&self, f: impl FnOnce(&mut Vec<Root>)) {
        self.tx.send_modify(f);
    }

    fn subscribe(&self) -> watch::Receiver<Vec<Root>> {
        self.tx.subscribe()
    }
}

/// A [`ClientHandler`] made of closures: it provides exactly what was set.
///
/// ```
/// use mcp_runtime::{CreateMessageResult, ElicitParams, ElicitResult, Handlers, Root, Roots};
/// let h = Handlers::new()
///     .roots(Roots::new([Root::new("file:///work").named("work")]))
///     .sampling(|params, _cx| async move {
///         let asked = params.messages.len();
///         Ok(CreateMessageResult::text("my-model", format!("{asked} messages read")))
///     })
///     .elicitation(|params, _cx| async move {
///         match params {
///             ElicitParams::Form(_) => Ok(ElicitResult::decline()),
///             _ => Ok(ElicitResult::cancel()),
///         }
///     });
/// ```
#[derive(Clone, Default)]
pub struct Handlers {
    sampling: Option<Callback<CreateMessageParams, CreateMessageResult>>,
    roots: Option<Roots>,
    elicitation: Option<Callback<ElicitParams, ElicitResult>>,
    elicitation_url: bool,
}

impl std::fmt::Debug for Handlers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Handlers")
            .field("provides", &self.provides())
            .finish()
    }
}

impl Handlers {
    /// A handler that answers nothing.
    pub fn new() -> Self {
        Self::default()
    }

    /// Answer `sampling/createMessage` with `f`.
    pub fn sampling<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(CreateMessageParams, RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<CreateMessageResult, RpcError>> + Send + 'static,
    {
        self.sampling = Some(Arc::new(move |p, cx| Box::pin(f(p, cx))));
        self
    }

    /// Answer `roots/list` from `roots`, and tell servers when it changes.
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
    /// # let builder = mcp_runtime::ClientBuilder::new(connector);
    /// use mcp_runtime::{Handlers, Root, Roots};
    /// use serde_json::json;
    ///
    /// let roots = Roots::new([Root::new("file:///work").named("work")]);
    /// let client = builder.handler(Handlers::new().roots(roots.clone())).connect().await?;
    /// // The server's `roots` tool asks the client for its roots.
    /// let listed = client.call_tool("roots", json!({})).await?;
    /// assert_eq!(listed.structured_content.unwrap()["roots"][0]["uri"], "file:///work");
    /// # Ok(()) }
    /// ```
    pub fn roots(mut self, roots: Roots) -> Self {
        self.roots = Some(roots);
        self
    }

    /// Answer `elicitation/create` (form mode) with `f`.
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
    /// # let builder = mcp_runtime::ClientBuilder::new(connector);
    /// use mcp_runtime::{ElicitParams, ElicitResult, Handlers};
    /// use serde_json::json;
    ///
    /// let handlers = Handlers::new().elicitation(|params, _cx| async move {
    ///     let ElicitParams::Form(form) = params else {
    ///         return Ok(ElicitResult::decline());
    ///     };
    ///     println!("the server asks: {}", form.message); // a host shows the form
    ///     let mut answer = serde_json::Map::new();
    ///     answer.insert("name".into(), json!("Ada"));
    ///     Ok(ElicitResult::accept(answer))
    /// });
    /// let client = builder.handler(handlers).connect().await?;
    /// // The server's `elicit` tool asks the user, through the client, and returns the answer.
    /// let asked = client.call_tool("elicit", json!({"message": "Who are you?"})).await?;
    /// let answer = asked.structured_content.unwrap();
    /// assert_eq!(answer, json!({"action": "accept", "content": {"name": "Ada"}}));
    /// # Ok(()) }
    /// ```
    pub fn elicitation<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(ElicitParams, RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ElicitResult, RpcError>> + Send + 'static,
    {
        self.elicitation = Some(Arc::new(move |p, cx| Box::pin(f(p, cx))));
        self
    }

    /// Also declare URL-mode elicitation (the elicitation callback gets
    /// [`ElicitParams::Url`] requests too).
    pub fn with_url_elicitation(mut self) -> Self {
        self.elicitation_url = true;
        self
    }
}

impl ClientHandler for Handlers {
    fn provides(&self) -> Provides {
        Provides {
            sampling: self.sampling.is_some(),
            roots: self.roots.is_some(),
            elicitation: self.elicitation.is_some(),
            elicitation_url: self.elicitation.is_some() && self.elicitation_url,
            ..Provides::default()
        }
    }

    fn create_message(
        &self,
        params: CreateMessageParams,
        cx: RequestContext,
    ) -> HandlerFuture<CreateMessageResult> {
        match &self.sampling {
            Some(f) => f(params, cx),
            None => unsupported("sampling/createMessage"),
        }
    }

    fn list_roots(&self, _cx: RequestContext) -> HandlerFuture<ListRootsResult> {
        match &self.roots {
            Some(roots) => {
                let result = ListRootsResult {
                    roots: roots.get(),
                    extra: Default::default(),
                };
                Box::pin(async move { Ok(result) })
            }
            None => unsupported("roots/list"),
        }
    }

    fn elicit(&self, params: ElicitParams, cx: RequestContext) -> HandlerFuture<ElicitResult> {
        match &self.elicitation {
            Some(f) => f(params, cx),
            None => unsupported("elicitation/create"),
        }
    }

    fn roots_changes(&self) -> Option<watch::Receiver<Vec<Root>>> {
        self.roots.as_ref().map(Roots::subscribe)
    }
}

/// The wire form of a typed handler's answer.
fn to_wire<T: Serialize + Send + 'static>(fut: HandlerFuture<T>) -> HandlerFuture<Value> {
    Box::pin(async move {
        let result = fut.await?;
        serde_json::to_value(result).map_err(|e| RpcError {
            code: codes::INTERNAL_ERROR,
            message: format!("the client could not encode its answer: {e}"),
            data: None,
        })
    })
}

fn invalid_params(method: &str, e: serde_json::Error) -> HandlerFuture<Value> {
    let err = RpcError {
        code: codes::INVALID_PARAMS,
        message: format!("invalid params for {method}: {e}"),
        data: None,
    };
    Box::pin(async move { Err(err) })
}

/// Routes one server request to the handler method for its method, typed.
pub(crate) fn route(
    handler: &dyn ClientHandler,
    method: &str,
    params: Value,
    cx: RequestContext,
) -> HandlerFuture<Value> {
    if handler.forwards() {
        return handler.forward(method, params, cx);
    }
    match method {
        "sampling/createMessage" => match serde_json::from_value(params) {
            Ok(p) => to_wire(handler.create_message(p, cx)),
            Err(e) => invalid_params(method, e),
        },
        "roots/list" => to_wire(handler.list_roots(cx)),
        "elicitation/create" => match ElicitParams::from_value(params) {
            Ok(p) => to_wire(handler.elicit(p, cx)),
            Err(e) => invalid_params(method, e),
        },
        other => unsupported(other),
    }
}
