//! Answering the server's requests: sampling, roots and elicitation.
//!
//! The client declares exactly the capabilities its handler [`Provides`]; a server request
//! for anything else is answered with method-not-found by the core, and `ping` is always
//! answered by the core without reaching the handler.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use mcp_machine::RpcError;
use serde_json::Value;

/// A boxed future answering one server request.
pub type HandlerFuture = Pin<Box<dyn Future<Output = Result<Value, RpcError>> + Send + 'static>>;

/// Which server requests a handler answers, and so exactly the capabilities the client
/// declares in `initialize`: `sampling` declares `sampling` (answers `sampling/createMessage`),
/// `roots` declares `roots` (answers `roots/list`), `elicitation` declares `elicitation.form`
/// and `elicitation_url` `elicitation.url` (answers `elicitation/create` in that mode; a request
/// for a mode not declared is refused with method-not-found). The machine's own type: one
/// definition decides both what is declared and what is routed.
pub use mcp_machine::ClientCapabilities as Provides;

/// Answers the server's requests. Each method gets the request's `params` and returns the
/// result object or a JSON-RPC error. Handlers run in their own tasks (one per request); a
/// handler that panics is answered with an internal error, and the server's
/// `notifications/cancelled` or a lost connection aborts it.
pub trait ClientHandler: Send + Sync + 'static {
    /// What this handler answers.
    fn provides(&self) -> Provides;

    /// `sampling/createMessage`.
    fn create_message(&self, params: Value) -> HandlerFuture {
        let _ = params;
        unsupported("sampling/createMessage")
    }

    /// `roots/list`.
    fn list_roots(&self, params: Value) -> HandlerFuture {
        let _ = params;
        unsupported("roots/list")
    }

    /// `elicitation/create`.
    fn elicit(&self, params: Value) -> HandlerFuture {
        let _ = params;
        unsupported("elicitation/create")
    }
}

fn unsupported(method: &str) -> HandlerFuture {
    let err = RpcError {
        code: -32601,
        message: format!("method not found: {method}"),
        data: None,
    };
    Box::pin(async move { Err(err) })
}

type Callback = Arc<dyn Fn(Value) -> HandlerFuture + Send + Sync>;

/// A [`ClientHandler`] made of closures: it provides exactly what was set.
///
/// ```
/// use mcp_runtime::Handlers;
/// use serde_json::json;
/// let h = Handlers::new()
///     .roots(vec![("file:///work".into(), "work".into())])
///     .sampling(|_params| async { Ok(json!({"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m"})) });
/// ```
#[derive(Clone, Default)]
pub struct Handlers {
    sampling: Option<Callback>,
    roots: Option<Callback>,
    elicitation: Option<Callback>,
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
        F: Fn(Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, RpcError>> + Send + 'static,
    {
        self.sampling = Some(Arc::new(move |p| Box::pin(f(p))));
        self
    }

    /// Answer `roots/list` with this fixed list of `(uri, name)`.
    pub fn roots(mut self, roots: Vec<(String, String)>) -> Self {
        let list: Vec<Value> = roots
            .into_iter()
            .map(|(uri, name)| serde_json::json!({"uri": uri, "name": name}))
            .collect();
        let result = serde_json::json!({ "roots": list });
        self.roots = Some(Arc::new(move |_| {
            let r = result.clone();
            Box::pin(async move { Ok(r) })
        }));
        self
    }

    /// Answer `elicitation/create` (form mode) with `f`.
    pub fn elicitation<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, RpcError>> + Send + 'static,
    {
        self.elicitation = Some(Arc::new(move |p| Box::pin(f(p))));
        self
    }

    /// Also declare URL-mode elicitation (the elicitation callback gets those requests too).
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

    fn create_message(&self, params: Value) -> HandlerFuture {
        match &self.sampling {
            Some(f) => f(params),
            None => unsupported("sampling/createMessage"),
        }
    }

    fn list_roots(&self, params: Value) -> HandlerFuture {
        match &self.roots {
            Some(f) => f(params),
            None => unsupported("roots/list"),
        }
    }

    fn elicit(&self, params: Value) -> HandlerFuture {
        match &self.elicitation {
            Some(f) => f(params),
            None => unsupported("elicitation/create"),
        }
    }
}

/// Routes one server request to the handler method for its method.
pub(crate) fn route(handler: &dyn ClientHandler, method: &str, params: Value) -> HandlerFuture {
    match method {
        "sampling/createMessage" => handler.create_message(params),
        "roots/list" => handler.list_roots(params),
        "elicitation/create" => handler.elicit(params),
        other => unsupported(other),
    }
}
