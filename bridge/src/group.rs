//! A group as the bridge's upstream (`mcpc bridge --config FILE`): every server of a host's
//! configuration behind one front, the host seeing the group's merged view.
//!
//! The host sees one server: its lists are the group's merged lists (a name two servers list
//! is prefixed with its server's name, as the group's naming rule says); a call goes to the
//! server that lists the name, under its name there, its result and errors as that server sent
//! them; `resources/read` and `subscribe` go to the server listing the URI (or whose template
//! matches it); `logging/setLevel` to every server; `completion/complete` of a prompt to that
//! prompt's server. Each server's requests (sampling, elicitation, roots) reach the host as the
//! bridge's own, their notifications as sent, and a change of the merged view as
//! `…/list_changed`. A server that is down keeps its items listed; its calls wait for it (within
//! the call's bound) or fail with -32000, as with one server.

use mcp_machine::front::UpstreamNotification;
use mcp_runtime::group::{ClientGroup, GroupError, GroupHandler};
use mcp_runtime::{
    Client, HandlerFuture, ListKind, LoggingLevel, Provides, RequestContext, RequestOptions, Root,
    RpcError, ServerNotification, codes,
};
use serde_json::{Value, json};
use tokio::sync::{mpsc, watch};
use tokio::task::AbortHandle;

use crate::handler::ForwardingHandler;
use crate::session::Inner;
use crate::upstream::to_rpc;

/// The group's handler: each server is told the host's capabilities, and its requests are
/// forwarded to the host like one server's.
pub(crate) struct GroupForwarding {
    inner: ForwardingHandler,
    roots: Option<watch::Receiver<Vec<Root>>>,
}

impl GroupForwarding {
    pub(crate) fn new(inner: ForwardingHandler, roots: Option<watch::Receiver<Vec<Root>>>) -> Self {
        GroupForwarding { inner, roots }
    }
}

impl GroupHandler for GroupForwarding {
    fn provides(&self, _server: &str) -> Provides {
        mcp_runtime::ClientHandler::provides(&self.inner)
    }

    fn roots_changes(&self, _server: &str) -> Option<watch::Receiver<Vec<Root>>> {
        self.roots.clone()
    }

    fn forwards(&self) -> bool {
        true
    }

    fn forward(
        &self,
        _server: &str,
        method: &str,
        params: Value,
        cx: RequestContext,
    ) -> HandlerFuture<Value> {
        mcp_runtime::ClientHandler::forward(&self.inner, method, params, cx)
    }
}

/// Hands the group's notifications and view changes to the session. Ends with the group.
pub(crate) fn forward(
    group: &ClientGroup,
    to_session: mpsc::UnboundedSender<Inner>,
) -> AbortHandle {
    let mut notes = group.notifications();
    let mut changes = group.changes();
    let task = tokio::spawn(async move {
        loop {
            let note = tokio::select! {
                n = notes.recv() => {
                    let Some(n) = n else { break };
                    match n.notification.parsed {
                        // Lists: told from the merged view's changes (names may differ).
                        ServerNotification::ToolsListChanged
                        | ServerNotification::PromptsListChanged
                        | ServerNotification::ResourcesListChanged
                        | ServerNotification::Progress { .. }
                        | ServerNotification::Cancelled { .. } => continue,
                        _ => UpstreamNotification {
                            method: n.notification.method,
                            params: n.notification.params,
                        },
                    }
                }
                c = changes.recv() => {
                    let Some(c) = c else { break };
                    let method = match c.kind {
                        ListKind::Tools => "notifications/tools/list_changed",
                        ListKind::Prompts => "notifications/prompts/list_changed",
                        _ => "notifications/resources/list_changed",
                    };
                    UpstreamNotification { method: method.into(), params: None }
                }
            };
            if to_session.send(Inner::Notification(note)).is_err() {
                break;
            }
        }
    });
    task.abort_handle()
}

/// The group's answer to the host's `initialize`: the bridge as the server, the union of the
/// servers' capabilities (lists said to change), and each server's instructions under its
/// name.
pub(crate) fn initialize_result(group: &ClientGroup, version: &str) -> Value {
    let mut caps = serde_json::Map::new();
    let mut instructions = Vec::new();
    for name in group.names() {
        let Some(client) = group.client(&name) else {
            continue;
        };
        let Some(info) = client.server_info() else {
            continue;
        };
        if let Some(c) = info.capabilities.as_object() {
            for key in ["tools", "prompts", "resources", "logging", "completions"] {
                if let Some(v) = c.get(key) {
                    let entry = caps.entry(key).or_insert_with(|| json!({}));
                    if key == "resources"
                        && v.get("subscribe").and_then(Value::as_bool) == Some(true)
                    {
                        entry["subscribe"] = json!(true);
                    }
                }
            }
        }
        if let Some(text) = info.instructions.filter(|t| !t.is_empty()) {
            instructions.push(format!("## {name}\n{text}"));
        }
    }
    // The view changes as servers come and go: every list is said to change.
    for list in ["tools", "prompts", "resources"] {
        caps.entry(list)
            .or_insert_with(|| json!({}))
            .as_object_mut()
            .map(|l| l.insert("listChanged".into(), json!(true)));
    }
    let mut result = json!({
        "protocolVersion": version,
        "capabilities": caps,
        "serverInfo": {"name": "mcpc-bridge", "title": "mcpc bridge (a group of servers)",
                       "version": env!("CARGO_PKG_VERSION")},
    });
    if !instructions.is_empty() {
        result["instructions"] = Value::String(instructions.join("\n\n"));
    }
    result
}

fn rpc(code: i64, message: String) -> RpcError {
    RpcError {
        code,
        message,
        data: None,
    }
}

fn group_error(e: GroupError, hint: Option<&str>) -> RpcError {
    match e {
        GroupError::Server { source, .. } => to_rpc(&source, hint),
        GroupError::UnknownTool { .. }
        | GroupError::UnknownPrompt { .. }
        | GroupError::UnknownResource { .. }
        | GroupError::AmbiguousResource { .. }
        | GroupError::ToolNotAllowed { .. } => rpc(codes::INVALID_PARAMS, e.to_string()),
        other => rpc(codes::SERVER_ERROR, other.to_string()),
    }
}

/// The params with `key` (a name) replaced by the server's own name for it.
fn renamed(params: Option<Value>, key: &str, original: &str) -> Option<Value> {
    let mut params = params.unwrap_or_else(|| json!({}));
    if let Some(p) = params.as_object_mut() {
        p.insert(key.into(), Value::String(original.to_owned()));
    }
    Some(params)
}

fn text_param<'a>(params: &'a Option<Value>, key: &str) -> Option<&'a str> {
    params.as_ref()?.get(key)?.as_str()
}

/// Runs one host request against the group (see the module doc).
pub(crate) async fn call(
    group: &ClientGroup,
    method: &str,
    params: Option<Value>,
    options: RequestOptions,
    hint: Option<&str>,
) -> Result<Value, RpcError> {
    let view = group.view();
    let member = |server: &str| -> Result<Client, RpcError> {
        group
            .client(server)
            .ok_or_else(|| rpc(codes::SERVER_ERROR, format!("server {server} is gone")))
    };
    let forward = |client: Client, method: &'static str, params: Option<Value>, options| async move {
        client
            .request_with(method, params, options)
            .await
            .map_err(|e| to_rpc(&e, hint))
    };
    match method {
        "tools/list" => {
            let tools: Vec<_> = view.tools.iter().map(|t| t.listed()).collect();
            Ok(crate::upstream::without_task_support(
                json!({"tools": tools}),
            ))
        }
        "prompts/list" => {
            let prompts: Vec<_> = view.prompts.iter().map(|p| p.listed()).collect();
            Ok(json!({"prompts": prompts}))
        }
        "resources/list" => {
            let resources: Vec<_> = view.resources.iter().map(|r| &r.item).collect();
            Ok(json!({"resources": resources}))
        }
        "resources/templates/list" => {
            let templates: Vec<_> = view.resource_templates.iter().map(|t| &t.item).collect();
            Ok(json!({"resourceTemplates": templates}))
        }
        "tools/call" => {
            let name = text_param(&params, "name").unwrap_or_default().to_owned();
            let Some(tool) = view.tool(&name) else {
                return Err(group_error(GroupError::UnknownTool { name }, hint));
            };
            let client = member(&tool.server)?;
            let params = renamed(params, "name", &tool.original).unwrap_or_default();
            client
                .call_tool_value(params, options)
                .await
                .map_err(|e| to_rpc(&e, hint))
        }
        "prompts/get" => {
            let name = text_param(&params, "name").unwrap_or_default().to_owned();
            let Some(prompt) = view.prompt(&name) else {
                return Err(group_error(GroupError::UnknownPrompt { name }, hint));
            };
            let client = member(&prompt.server)?;
            let params = renamed(params, "name", &prompt.original);
            forward(client, "prompts/get", params, options).await
        }
        "resources/read" => {
            let uri = text_param(&params, "uri").unwrap_or_default().to_owned();
            let read = group
                .read_resource(&uri)
                .await
                .map_err(|e| group_error(e, hint))?;
            serde_json::to_value(read).map_err(|e| rpc(codes::INTERNAL_ERROR, e.to_string()))
        }
        "resources/subscribe" | "resources/unsubscribe" => {
            let uri = text_param(&params, "uri").unwrap_or_default().to_owned();
            let Some(server) = view.resources_at(&uri).next().map(|r| r.server.clone()) else {
                return Err(group_error(GroupError::UnknownResource { uri }, hint));
            };
            let client = member(&server)?;
            let done = if method == "resources/subscribe" {
                client.subscribe(&uri).await
            } else {
                client.unsubscribe(&uri).await
            };
            done.map(|()| json!({})).map_err(|e| to_rpc(&e, hint))
        }
        "logging/setLevel" => {
            let level = params
                .as_ref()
                .and_then(|p| p.get("level"))
                .cloned()
                .and_then(|l| serde_json::from_value::<LoggingLevel>(l).ok())
                .ok_or_else(|| rpc(codes::INVALID_PARAMS, "a valid level is needed".into()))?;
            for name in group.names() {
                if let Some(client) = group.client(&name) {
                    // A server without logging refuses; the others still get the level.
                    let _ = client.set_logging_level(level).await;
                }
            }
            Ok(json!({}))
        }
        "completion/complete" => {
            let reference = params.as_ref().and_then(|p| p.get("ref"));
            let prompt = reference
                .filter(|r| r.get("type").and_then(Value::as_str) == Some("ref/prompt"))
                .and_then(|r| r.get("name"))
                .and_then(Value::as_str)
                .and_then(|n| view.prompt(n));
            let Some(prompt) = prompt else {
                return Err(rpc(
                    codes::INVALID_PARAMS,
                    "a group bridge completes prompt arguments only".into(),
                ));
            };
            let client = member(&prompt.server)?;
            let mut params = params.unwrap_or_default();
            params["ref"]["name"] = Value::String(prompt.original.clone());
            forward(client, "completion/complete", Some(params), options).await
        }
        other => Err(rpc(
            codes::METHOD_NOT_FOUND,
            format!("method not found: {other} (not offered by a bridge of a group)"),
        )),
    }
}
