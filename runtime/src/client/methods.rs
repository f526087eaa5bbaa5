//! The MCP methods of a [`Client`], written out one by one over its core (`typed`, `cached`,
//! `start`): tools, resources (and subscriptions), prompts, completion, logging, `ping`, and
//! the walk over every page of a list.

use mcp_machine::{Era, SessionChange, codes};
use serde_json::{Value, json};

use super::options::RequestOptions;
use super::{Client, decoded};
use crate::cache::{CacheRequest, Cacheable};
use crate::tasks::TaskSupport;
use crate::tool_catalog::{Keep, Listed};
use crate::types::*;
use crate::{Error, PaginationStop, Result};

impl Client {
    /// A round trip proving the server answers: `ping` in the handshake era; in the 2026-07-28
    /// era, which removed `ping`, a `server/discover` (every modern server implements it and it
    /// changes nothing). Its result is dropped.
    pub async fn ping(&self) -> Result<()> {
        self.request("ping", None).await.map(|_| ())
    }

    /// One page of `tools/list`. Over Streamable HTTP in the 2026-07-28 era, a tool whose
    /// `x-mcp-header` annotations are invalid is left out (with a warning naming the tool and
    /// why): its calls could not carry the headers the server checks. Cached as the page's
    /// `ttlMs` and `cacheScope` say ([`crate::ClientBuilder::response_cache`]). Each listed tool's
    /// `outputSchema` is recorded (the latest listing wins) to check its call results
    /// ([`crate::ClientBuilder::validate_output`]).
    pub async fn list_tools(&self, cursor: Option<String>) -> Result<ListToolsResult> {
        let mut page: ListToolsResult = self
            .cached(CacheRequest::list(Cacheable::ToolsList, cursor))
            .await?;
        // The catalog reads the page once: each tool's annotations validated (when its calls
        // carry headers) and its output schema kept (when results are checked).
        let keep = Keep {
            headers: self.mirrors_headers(),
            outputs: self.shared.output_schemas.enabled(),
        };
        let invalid = self
            .shared
            .catalog
            .record(page.tools.iter().map(Listed::from), keep);
        self.shared.task_tools.record(&page.tools);
        if !invalid.is_empty() {
            for (_, e) in &invalid {
                tracing::warn!(target: "mcp::tools", tool = ?e.tool, reason = ?e.reason, "tool left out: invalid x-mcp-header annotations");
            }
            let mut next = invalid.iter().map(|(i, _)| *i).peekable();
            let mut index = 0;
            page.tools.retain(|_| {
                let left_out = next.next_if_eq(&index).is_some();
                index += 1;
                !left_out
            });
        }
        Ok(page)
    }

    /// Whether this client's tool calls carry the headers tools ask for with `x-mcp-header`
    /// (Streamable HTTP in the 2026-07-28 era): then a listing's annotations are validated.
    fn mirrors_headers(&self) -> bool {
        self.era() == Some(Era::Modern) && self.shared.connector.mirrors_tool_headers()
    }

    /// Feeds the catalog the header mappings of a `tools/list` result read by
    /// [`Client::request`] (its tools' output schemas are not kept: only [`Client::list_tools`]
    /// keeps them).
    pub(super) fn catalog_tools(&self, result: &Value) {
        if !self.mirrors_headers() {
            return;
        }
        let Some(tools) = result.get("tools").and_then(Value::as_array) else {
            return;
        };
        let listed = tools.iter().filter_map(|tool| {
            Some(Listed {
                name: tool.get("name")?.as_str()?,
                input_schema: tool.get("inputSchema"),
                output_schema: None,
            })
        });
        let keep = Keep {
            headers: true,
            outputs: false,
        };
        self.shared.catalog.record(listed, keep);
    }

    /// Every tool, following `nextCursor` until it is absent (an empty cursor is a cursor).
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
    /// # let client = mcp_runtime::ClientBuilder::new(connector).connect().await?;
    /// for tool in client.list_all_tools().await? {
    ///     println!("{}: {}", tool.name, tool.description.unwrap_or_default());
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn list_all_tools(&self) -> Result<Vec<Tool>> {
        self.all_pages(
            "tools/list",
            |c| self.list_tools(c),
            |p| (p.tools, p.next_cursor),
        )
        .await
    }

    /// Walks every page of a list method. A cursor the server already gave (a loop), or more
    /// than the builder's page bound, is an [`Error::EndlessPagination`], not a hang.
    async fn all_pages<P, T, F, Fut>(
        &self,
        method: &str,
        page: F,
        split: fn(P) -> (Vec<T>, Option<String>),
    ) -> Result<Vec<T>>
    where
        F: Fn(Option<String>) -> Fut,
        Fut: std::future::Future<Output = Result<P>>,
    {
        let max_pages = self.shared.limits.max_pages;
        let mut all = Vec::new();
        let mut seen = std::collections::HashSet::new();
        let mut cursor = None;
        for pages in 1.. {
            let (items, next) = split(page(cursor).await?);
            all.extend(items);
            match next {
                None => return Ok(all),
                Some(c) if !seen.insert(c.clone()) => {
                    return Err(Error::EndlessPagination {
                        method: method.to_owned(),
                        pages,
                        reason: PaginationStop::RepeatedCursor(c),
                    });
                }
                Some(_) if pages >= max_pages => {
                    return Err(Error::EndlessPagination {
                        method: method.to_owned(),
                        pages,
                        reason: PaginationStop::TooManyPages,
                    });
                }
                Some(c) => cursor = Some(c),
            }
        }
        Ok(all)
    }

    /// `tools/call`. If the tool declared an `outputSchema` in the client's latest listing of
    /// it, a successful result's `structuredContent` is checked against it (see
    /// [`crate::ClientBuilder::validate_output`]): [`Error::OutputSchemaMismatch`] or
    /// [`Error::InvalidOutputSchema`] then carry the result. A tool never listed is not
    /// checked.
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
    /// # let client = mcp_runtime::ClientBuilder::new(connector).connect().await?;
    /// use serde_json::json;
    ///
    /// client.list_all_tools().await?; // records each tool's outputSchema
    /// let sum = client.call_tool("add", json!({"a": 2, "b": 3})).await?;
    /// assert_eq!(sum.text(), "5");
    /// assert_eq!(sum.structured_content, Some(json!({"sum": 5})));
    /// // A tool that failed is a result (isError), not an Err.
    /// let failed = client.call_tool("add", json!({"a": "two", "b": 3})).await?;
    /// assert!(failed.failed());
    /// # Ok(()) }
    /// ```
    pub async fn call_tool(&self, name: &str, arguments: Value) -> Result<CallToolResult> {
        self.call_tool_with(name, arguments, RequestOptions::default())
            .await
    }

    /// `tools/call` with options (timeout, progress); the result is checked as
    /// [`Client::call_tool`] says.
    pub async fn call_tool_with(
        &self,
        name: &str,
        arguments: Value,
        options: RequestOptions,
    ) -> Result<CallToolResult> {
        let mut params = named_arguments(name, arguments);
        if let Some(task) = self.task_param(name).await? {
            params["task"] = task;
        }
        self.typed("tools/call", Some(params), options)
            .await
            .and_then(|result| self.shared.output_schemas.check(name, result))
    }

    /// `tools/call` with its params as given (`name`, `arguments`, `_meta`, …) and the
    /// server's JSON result: for a proxy or bridge that hands calls on unchanged. Like
    /// [`Client::call_tool_with`] it runs a tool that needs a task as one (polled to its end,
    /// with tasks enabled, [`crate::ClientBuilder::tasks`]); unlike it, the result is not
    /// decoded nor checked against the tool's `outputSchema`.
    pub async fn call_tool_value(&self, params: Value, options: RequestOptions) -> Result<Value> {
        let mut params = params;
        let name = params
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        if let Some(task) = self.task_param(&name).await?
            && let Some(p) = params.as_object_mut()
        {
            p.insert("task".into(), task);
        }
        self.request_with("tools/call", Some(params), options).await
    }

    /// The `params.task` a 2025-11-25 `tools/call` of `tool` carries, if it runs as a task
    /// (the tool requires one, or may run as one and the host asked for that, and the server
    /// takes task-backed tool calls); a tool that requires a task is an error when tasks are
    /// off. The tools are listed once first when tasks are on and they never were. Nothing in
    /// the 2026-07-28 era, where the server alone decides.
    async fn task_param(&self, tool: &str) -> Result<Option<Value>> {
        let Some(options) = &self.shared.tasks else {
            if !self.shared.task_tools.any() {
                return Ok(None);
            }
            return match self.shared.task_tools.get(tool) {
                Some(TaskSupport::Required) if self.era() == Some(Era::Legacy) => {
                    Err(Error::TaskRequired {
                        tool: tool.to_owned(),
                    })
                }
                _ => Ok(None),
            };
        };
        if !self.server_runs_tool_tasks() {
            return Ok(None);
        }
        let support = match self.shared.task_tools.get(tool) {
            Some(support) => support,
            None => {
                // Never listed: list once (a failure leaves the call plain; its answer says).
                if let Err(e) = self.list_all_tools().await {
                    tracing::debug!(target: "mcp::task", error = %e, "listing the tools for their task support failed");
                }
                self.shared.task_tools.get(tool).unwrap_or_default()
            }
        };
        Ok(options.use_task(support).then(|| options.task_param()))
    }

    /// Whether the server speaks the handshake era and declared task-backed tool calls
    /// (`capabilities.tasks.requests.tools.call`, 2025-11-25).
    fn server_runs_tool_tasks(&self) -> bool {
        let server = self
            .shared
            .out
            .server
            .read()
            .unwrap_or_else(|e| e.into_inner());
        server.as_ref().is_some_and(|info| {
            !mcp_machine::MODERN_PROTOCOL_VERSIONS.contains(&info.protocol_version.as_str())
                && info
                    .capabilities
                    .pointer("/tasks/requests/tools/call")
                    .is_some()
        })
    }

    /// One page of `resources/list` (cached as its hints say, like [`Client::list_tools`]).
    pub async fn list_resources(&self, cursor: Option<String>) -> Result<ListResourcesResult> {
        self.cached(CacheRequest::list(Cacheable::ResourcesList, cursor))
            .await
    }

    /// Every resource, across pages.
    pub async fn list_all_resources(&self) -> Result<Vec<Resource>> {
        self.all_pages(
            "resources/list",
            |c| self.list_resources(c),
            |p| (p.resources, p.next_cursor),
        )
        .await
    }

    /// One page of `resources/templates/list` (cached as its hints say, like
    /// [`Client::list_tools`]).
    pub async fn list_resource_templates(
        &self,
        cursor: Option<String>,
    ) -> Result<ListResourceTemplatesResult> {
        self.cached(CacheRequest::list(Cacheable::ResourceTemplatesList, cursor))
            .await
    }

    /// Every resource template, across pages.
    pub async fn list_all_resource_templates(&self) -> Result<Vec<ResourceTemplate>> {
        self.all_pages(
            "resources/templates/list",
            |c| self.list_resource_templates(c),
            |p| (p.resource_templates, p.next_cursor),
        )
        .await
    }

    /// `resources/read`. A server that does not have the resource answers -32002 (the
    /// handshake era) or -32602 (2026-07-28): either is [`Error::ResourceNotFound`]. Cached
    /// per URI as the result's hints say, until a `notifications/resources/updated` for it
    /// ([`crate::ClientBuilder::response_cache`]).
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
    /// # let client = mcp_runtime::ClientBuilder::new(connector).connect().await?;
    /// use mcp_runtime::Error;
    ///
    /// let first = &client.list_all_resources().await?[0];
    /// let read = client.read_resource(&first.uri).await?;
    /// assert_eq!(read.contents[0].text.as_deref(), Some("Static resource 1"));
    /// let missing = client.read_resource("test://static/404").await;
    /// assert!(matches!(missing, Err(Error::ResourceNotFound { .. })));
    /// # Ok(()) }
    /// ```
    pub async fn read_resource(&self, uri: &str) -> Result<ReadResourceResult> {
        let read = self.cached(CacheRequest::read(uri)).await;
        match read {
            Err(Error::Server { code, message, .. })
                // The handshake era's answer to an unknown resource, and the 2026-07-28 one.
                if code == codes::RESOURCE_NOT_FOUND
                    || (code == codes::INVALID_PARAMS && self.era() == Some(Era::Modern)) =>
            {
                Err(Error::ResourceNotFound {
                    uri: uri.to_owned(),
                    code,
                    message,
                })
            }
            other => other,
        }
    }

    /// `resources/subscribe`: updates arrive as [`ServerNotification::ResourceUpdated`].
    /// Once the server acknowledged it, the subscription is restored after every reconnect (the
    /// connection table does it, before any other call reaches the new server).
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
    /// # let client = mcp_runtime::ClientBuilder::new(connector).connect().await?;
    /// use mcp_runtime::ServerNotification;
    /// use serde_json::json;
    ///
    /// let mut notifications = client.notifications();
    /// client.subscribe("test://static/1").await?;
    /// // The server's `touch` tool changes a resource.
    /// client.call_tool("touch", json!({"uri": "test://static/1"})).await?;
    /// let n = notifications.recv().await.expect("the client is running");
    /// assert_eq!(n.parsed, ServerNotification::ResourceUpdated { uri: "test://static/1".into() });
    /// # Ok(()) }
    /// ```
    pub async fn subscribe(&self, uri: &str) -> Result<()> {
        let change = SessionChange::Subscribe(uri.to_owned());
        self.session_request("resources/subscribe", json!({"uri": uri}), change)
            .await
            .map(|_| ())
    }

    /// `resources/unsubscribe`. The subscription is never restored again, even if this call
    /// fails; while disconnected it is ended locally and the call succeeds.
    pub async fn unsubscribe(&self, uri: &str) -> Result<()> {
        let change = SessionChange::Unsubscribe(uri.to_owned());
        self.session_request("resources/unsubscribe", json!({"uri": uri}), change)
            .await
            .map(|_| ())
    }

    async fn session_request(
        &self,
        method: &str,
        params: Value,
        change: SessionChange,
    ) -> Result<Value> {
        let body = self
            .start(
                method,
                Some(params),
                RequestOptions::default(),
                Some(change),
            )
            .await?;
        decoded(method, body)
    }

    /// One page of `prompts/list` (cached as its hints say, like [`Client::list_tools`]).
    pub async fn list_prompts(&self, cursor: Option<String>) -> Result<ListPromptsResult> {
        self.cached(CacheRequest::list(Cacheable::PromptsList, cursor))
            .await
    }

    /// Every prompt, across pages.
    pub async fn list_all_prompts(&self) -> Result<Vec<Prompt>> {
        self.all_pages(
            "prompts/list",
            |c| self.list_prompts(c),
            |p| (p.prompts, p.next_cursor),
        )
        .await
    }

    /// `prompts/get`.
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
    /// # let client = mcp_runtime::ClientBuilder::new(connector).connect().await?;
    /// use serde_json::json;
    ///
    /// let prompts = client.list_all_prompts().await?;
    /// assert!(prompts.iter().any(|p| p.name == "greeting"));
    /// let prompt = client.get_prompt("greeting", json!({"name": "Ada"})).await?;
    /// assert_eq!(prompt.messages[0].content.as_text(), Some("Hello, Ada!"));
    /// # Ok(()) }
    /// ```
    pub async fn get_prompt(&self, name: &str, arguments: Value) -> Result<GetPromptResult> {
        self.typed(
            "prompts/get",
            Some(named_arguments(name, arguments)),
            RequestOptions::default(),
        )
        .await
    }

    /// `completion/complete` of argument `argument` currently typed as `value`.
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
    /// # let client = mcp_runtime::ClientBuilder::new(connector).connect().await?;
    /// use mcp_runtime::CompleteRef;
    ///
    /// let greeting = CompleteRef::Prompt("greeting".into());
    /// let result = client.complete(greeting, "name", "al").await?;
    /// assert_eq!(result.completion.values, ["alice", "alfred"]);
    /// # Ok(()) }
    /// ```
    pub async fn complete(
        &self,
        reference: CompleteRef,
        argument: &str,
        value: &str,
    ) -> Result<CompleteResult> {
        let params =
            json!({"ref": reference.to_json(), "argument": {"name": argument, "value": value}});
        self.typed(
            "completion/complete",
            Some(params),
            RequestOptions::default(),
        )
        .await
    }

    /// `logging/setLevel`: log messages at this level and above arrive as notifications.
    /// The level is restored by the client after a reconnect.
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
    /// # let client = mcp_runtime::ClientBuilder::new(connector).connect().await?;
    /// use mcp_runtime::{LoggingLevel, ServerNotification};
    /// use serde_json::json;
    ///
    /// let mut notifications = client.notifications();
    /// client.set_logging_level(LoggingLevel::Warning).await?;
    /// // The server's `log` tool logs at the level asked, if the level set lets it through.
    /// client.call_tool("log", json!({"level": "info", "message": "quiet"})).await?;
    /// client.call_tool("log", json!({"level": "error", "message": "loud"})).await?;
    /// let n = notifications.recv().await.expect("the client is running");
    /// let ServerNotification::Log { level, data, .. } = n.parsed else { panic!("{n:?}") };
    /// assert_eq!((level, data), (Some(LoggingLevel::Error), json!("loud")));
    /// # Ok(()) }
    /// ```
    pub async fn set_logging_level(&self, level: LoggingLevel) -> Result<()> {
        let change = SessionChange::SetLogLevel(level.as_str().to_owned());
        self.session_request("logging/setLevel", json!({"level": level}), change)
            .await
            .map(|_| ())
    }
}

/// `{"name": name, "arguments": arguments}` with the arguments moved in. `json!` would
/// serialize a deep copy and leave the caller's value alive in the call's future until the
/// answer: a second copy of every argument object for every call in flight.
fn named_arguments(name: &str, arguments: Value) -> Value {
    let mut params = serde_json::Map::new();
    params.insert("name".to_owned(), Value::String(name.to_owned()));
    params.insert("arguments".to_owned(), arguments);
    Value::Object(params)
}
