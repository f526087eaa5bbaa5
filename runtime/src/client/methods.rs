//! The MCP methods of a [`Client`], written out one by one over its core (`typed`, `cached`,
//! `start`): tools, resources (and subscriptions), prompts, completion, logging, `ping`, and
//! the walk over every page of a list.

use mcp_machine::{Era, SessionChange, codes};
use serde_json::{Value, json};

use super::options::RequestOptions;
use super::{Client, decoded};
use crate::cache::{CacheRequest, Cacheable};
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
        if self.era() == Some(Era::Modern) && self.shared.connector.mirrors_tool_headers() {
            page.tools.retain(|tool| {
                let listed = json!({"name": tool.name, "inputSchema": tool.input_schema});
                match mcp_machine::headers::validate_tool(&listed) {
                    Ok(_) => true,
                    Err(invalid) => {
                        tracing::warn!(target: "mcp::tools", tool = ?tool.name, reason = ?invalid.reason, "tool left out: invalid x-mcp-header annotations");
                        false
                    }
                }
            });
        }
        self.shared.output_schemas.record(&page.tools);
        Ok(page)
    }

    /// Every tool, following `nextCursor` until it is absent (an empty cursor is a cursor).
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
        self.typed(
            "tools/call",
            Some(named_arguments(name, arguments)),
            options,
        )
        .await
        .and_then(|result| self.shared.output_schemas.check(name, result))
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
    pub async fn get_prompt(&self, name: &str, arguments: Value) -> Result<GetPromptResult> {
        self.typed(
            "prompts/get",
            Some(named_arguments(name, arguments)),
            RequestOptions::default(),
        )
        .await
    }

    /// `completion/complete` of argument `argument` currently typed as `value`.
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
