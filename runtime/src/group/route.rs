//! Calls through a group: a merged name (or URI) looked up in the merged view, sent to the
//! server that listed it under the server's own name; or sent to a named server directly.
//! Each routed call is counted in the server's [`super::ServerSnapshot`].

use serde_json::Value;

use super::error::GroupError;
use super::merged::UriRoute;
use super::supervise::ClientGroup;
use crate::RequestOptions;
use crate::types::{CallToolResult, GetPromptResult, ReadResourceResult};

impl ClientGroup {
    /// Calls the tool listed as `name` in the merged view, on its server, under the server's
    /// own name. [`GroupError::UnknownTool`] if no tool is listed so; the server's error as
    /// [`GroupError::Server`] (a server that is reconnecting: [`crate::Error::Unavailable`]).
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Value,
    ) -> Result<CallToolResult, GroupError> {
        self.call_tool_with(name, arguments, RequestOptions::default())
            .await
    }

    /// [`ClientGroup::call_tool`] with options (timeout, progress).
    pub async fn call_tool_with(
        &self,
        name: &str,
        arguments: Value,
        options: RequestOptions,
    ) -> Result<CallToolResult, GroupError> {
        // The view is shared, not copied: the names are borrowed from it for the call.
        let view = self.view();
        let merged = view.tool(name).ok_or_else(|| GroupError::UnknownTool {
            name: name.to_owned(),
        })?;
        self.call_tool_on_with(&merged.server, &merged.original, arguments, options)
            .await
    }

    /// Calls tool `tool` (its name on the server) on server `server`, listed or not.
    pub async fn call_tool_on(
        &self,
        server: &str,
        tool: &str,
        arguments: Value,
    ) -> Result<CallToolResult, GroupError> {
        self.call_tool_on_with(server, tool, arguments, RequestOptions::default())
            .await
    }

    /// [`ClientGroup::call_tool_on`] with options.
    pub async fn call_tool_on_with(
        &self,
        server: &str,
        tool: &str,
        arguments: Value,
        options: RequestOptions,
    ) -> Result<CallToolResult, GroupError> {
        let (client, counters) = self.member_for_tool(server, tool)?;
        let result = client.call_tool_with(tool, arguments, options).await;
        counters.call(&result);
        result.map_err(|source| GroupError::Server {
            server: server.to_owned(),
            source,
        })
    }

    /// Gets the prompt listed as `name` in the merged view, from its server.
    /// [`GroupError::UnknownPrompt`] if no prompt is listed so.
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: Value,
    ) -> Result<GetPromptResult, GroupError> {
        let view = self.view();
        let merged = view.prompt(name).ok_or_else(|| GroupError::UnknownPrompt {
            name: name.to_owned(),
        })?;
        self.get_prompt_on(&merged.server, &merged.original, arguments)
            .await
    }

    /// Gets prompt `prompt` (its name on the server) from server `server`.
    pub async fn get_prompt_on(
        &self,
        server: &str,
        prompt: &str,
        arguments: Value,
    ) -> Result<GetPromptResult, GroupError> {
        let (client, counters) = self.member(server)?;
        let result = client.get_prompt(prompt, arguments).await;
        counters.call(&result);
        result.map_err(|source| GroupError::Server {
            server: server.to_owned(),
            source,
        })
    }

    /// Reads `uri` from the server that lists it, or else from the server one of whose
    /// resource templates matches it. [`GroupError::UnknownResource`] if none does,
    /// [`GroupError::AmbiguousResource`] if several do (then name the server with
    /// [`ClientGroup::read_resource_on`]).
    pub async fn read_resource(&self, uri: &str) -> Result<ReadResourceResult, GroupError> {
        let route = self.view().route_uri(uri);
        match route {
            UriRoute::One(server) => self.read_resource_on(&server, uri).await,
            UriRoute::Ambiguous(servers) => Err(GroupError::AmbiguousResource {
                uri: uri.to_owned(),
                servers,
            }),
            UriRoute::None => Err(GroupError::UnknownResource {
                uri: uri.to_owned(),
            }),
        }
    }

    /// Reads `uri` from server `server`, listed or not.
    pub async fn read_resource_on(
        &self,
        server: &str,
        uri: &str,
    ) -> Result<ReadResourceResult, GroupError> {
        let (client, counters) = self.member(server)?;
        let result = client.read_resource(uri).await;
        counters.call(&result);
        result.map_err(|source| GroupError::Server {
            server: server.to_owned(),
            source,
        })
    }
}
