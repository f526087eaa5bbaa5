//! The upstream's side of a host's call: running it on the client (progress under the host's
//! token), what the host declared, the `initialize` answer made from what the upstream said,
//! and the host's error for a failed call.

use std::sync::Arc;

use mcp_runtime::group::ClientGroup;
use mcp_runtime::{
    Client, Error, LoggingLevel, Progress, Provides, RequestOptions, RpcError, codes,
};
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;

use crate::HostInfo;
use mcp_machine::front::MODERN_VERSION;
use mcp_machine::front::wire;

/// The handshake revisions the front answers `initialize` with: the host's own when it is one
/// of these, else the newest.
pub const HANDSHAKE_VERSIONS: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

/// The host's progress token of a call, changeable while the call runs (a 2026-07-28 host sends
/// the call again, with another token, after each input round).
#[derive(Clone, Default)]
pub(crate) struct Token(Arc<std::sync::Mutex<Option<Value>>>);

impl Token {
    /// A token cell holding `token`.
    pub(crate) fn new(token: Option<Value>) -> Self {
        Token(Arc::new(std::sync::Mutex::new(token)))
    }

    /// Reports progress under `token` from now on.
    pub(crate) fn set(&self, token: Option<Value>) {
        *self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = token;
    }

    fn get(&self) -> Option<Value> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    fn is_set(&self) -> bool {
        self.get().is_some()
    }

    /// The call's options with progress sent to the host under the token of the moment
    /// (asked of the upstream when `always`, or when the host gave a token).
    pub(crate) fn options(
        &self,
        options: RequestOptions,
        out: mpsc::Sender<Vec<u8>>,
        always: bool,
    ) -> RequestOptions {
        if !always && !self.is_set() {
            return options;
        }
        let token = self.clone();
        options.on_progress(move |p: Progress| {
            // A host that does not read loses progress, never an answer.
            if let Some(t) = token.get() {
                let _ = out.try_send(progress_frame(&t, &p));
            }
        })
    }
}

/// The bridge's upstream, connected: one client, or a group of them.
#[derive(Clone)]
pub(crate) enum Up {
    /// One server.
    One(Client),
    /// Every server of a configuration ([`crate::group`]).
    Group(Arc<ClientGroup>),
}

impl Up {
    /// Runs one host request (see [`call`] and [`crate::group::call`]).
    pub(crate) async fn call(
        &self,
        method: &str,
        params: Option<Value>,
        options: RequestOptions,
        hint: Option<&str>,
    ) -> Result<Value, RpcError> {
        // The host's trace, when its `_meta` carries one: the upstream call runs under it.
        #[cfg(feature = "otel")]
        let cx = mcp_runtime::otel::context_from_meta(
            &mcp_runtime::otel::default_propagator(),
            params.as_ref(),
            &opentelemetry::Context::current(),
        );
        let answer = async move {
            match self {
                Up::One(client) => call(client, method, params, options)
                    .await
                    .map_err(|e| to_rpc(&e, hint)),
                Up::Group(group) => crate::group::call(group, method, params, options, hint).await,
            }
        };
        #[cfg(feature = "otel")]
        let answer = opentelemetry::context::FutureExt::with_context(answer, cx);
        answer.await
    }

    /// The answer to the host's `initialize`.
    pub(crate) fn initialize_result(&self, version: &str) -> Value {
        match self {
            Up::One(client) => initialize_result(client, version),
            Up::Group(group) => crate::group::initialize_result(group, version),
        }
    }

    /// The answer to a 2026-07-28 host's `server/discover`.
    pub(crate) fn discover_result(&self) -> Value {
        let init = self.initialize_result(MODERN_VERSION);
        let mut result = json!({
            "resultType": "complete",
            "supportedVersions": [MODERN_VERSION],
            "capabilities": init["capabilities"],
            "_meta": {"io.modelcontextprotocol/serverInfo": init["serverInfo"]},
        });
        if let Some(instructions) = init.get("instructions") {
            result["instructions"] = instructions.clone();
        }
        result
    }

    /// Subscribes to a resource's updates (on the server listing it, for a group).
    pub(crate) async fn subscribe(&self, uri: &str) {
        let params = Some(json!({"uri": uri}));
        let options = RequestOptions::new().timeout(std::time::Duration::from_secs(60));
        let _ = self
            .call("resources/subscribe", params, options, None)
            .await;
    }

    /// Sends the host's notification on (to every server of a group).
    pub(crate) async fn notify(&self, method: &str, params: Option<Value>) {
        match self {
            Up::One(client) => {
                let _ = client.notify(method, params).await;
            }
            Up::Group(group) => {
                for name in group.names() {
                    if let Some(client) = group.client(&name) {
                        let _ = client.notify(method, params.clone()).await;
                    }
                }
            }
        }
    }

    /// Stops it and waits for its processes to be reaped.
    pub(crate) async fn stop(&self) {
        match self {
            Up::One(client) => {
                client.stop().await;
                client.closed().await;
            }
            Up::Group(group) => group.stop().await,
        }
    }
}

/// Runs one host request against the upstream.
pub(crate) async fn call(
    client: &Client,
    method: &str,
    params: Option<Value>,
    options: RequestOptions,
) -> Result<Value, Error> {
    match method {
        "logging/setLevel" => {
            let level = params
                .as_ref()
                .and_then(|p| p.get("level"))
                .cloned()
                .and_then(|l| serde_json::from_value::<LoggingLevel>(l).ok());
            let Some(level) = level else {
                return Err(invalid_params("logging/setLevel needs a valid level"));
            };
            client.set_logging_level(level).await.map(|()| json!({}))
        }
        "resources/subscribe" | "resources/unsubscribe" => {
            let Some(uri) = params
                .as_ref()
                .and_then(|p| p.get("uri"))
                .and_then(Value::as_str)
            else {
                return Err(invalid_params("a uri is needed"));
            };
            let done = if method == "resources/subscribe" {
                client.subscribe(uri).await
            } else {
                client.unsubscribe(uri).await
            };
            done.map(|()| json!({}))
        }
        _ => {
            match method {
                // A tool that runs as a task runs as one here, polled to its end: the host
                // sees a plain call.
                "tools/call" => {
                    let params = params.unwrap_or_else(|| json!({}));
                    client.call_tool_value(params, options).await
                }
                "tools/list" => client
                    .request_with(method, params, options)
                    .await
                    .map(without_task_support),
                _ => client.request_with(method, params, options).await,
            }
        }
    }
}

/// A tools listing as a host of the bridge sees it: the bridge runs a tool that needs a task as
/// one itself, so no tool says it needs one (`execution.taskSupport` is left out).
pub(crate) fn without_task_support(mut listing: Value) -> Value {
    if let Some(tools) = listing.get_mut("tools").and_then(Value::as_array_mut) {
        for tool in tools {
            if let Some(execution) = tool.get_mut("execution").and_then(Value::as_object_mut) {
                execution.remove("taskSupport");
                if execution.is_empty()
                    && let Some(t) = tool.as_object_mut()
                {
                    t.remove("execution");
                }
            }
        }
    }
    listing
}

/// A number as JSON: an integer when it is one (`1`, not `1.0`).
fn number(n: f64) -> Value {
    if n.fract() == 0.0 && n.abs() < 9.0e15 {
        json!(n as i64)
    } else {
        json!(n)
    }
}

pub(crate) fn progress_frame(token: &Value, p: &Progress) -> Vec<u8> {
    let mut params = Map::new();
    params.insert("progressToken".into(), token.clone());
    params.insert("progress".into(), number(p.progress));
    if let Some(total) = p.total {
        params.insert("total".into(), number(total));
    }
    if let Some(message) = &p.message {
        params.insert("message".into(), json!(message));
    }
    wire::notification("notifications/progress", Some(&Value::Object(params)))
}

/// The params without the host's progress token (the client asks the upstream for progress
/// under its own), and that token.
pub(crate) fn take_progress_token(params: Option<Value>) -> (Option<Value>, Option<Value>) {
    let Some(Value::Object(mut p)) = params else {
        return (params, None);
    };
    let mut token = None;
    if let Some(Value::Object(meta)) = p.get_mut("_meta") {
        token = meta.remove("progressToken");
        if meta.is_empty() {
            p.remove("_meta");
        }
    }
    (Some(Value::Object(p)), token)
}

/// A 2026-07-28 host's request params without what belongs to the bridge: the era's
/// envelope in `_meta` (the client writes its own for the upstream), and the input of a round
/// (`inputResponses`, `requestState`: the bridge's own rounds).
pub(crate) fn without_envelope(params: Option<Value>) -> Option<Value> {
    let Some(Value::Object(mut p)) = params else {
        return params;
    };
    p.remove("inputResponses");
    p.remove("requestState");
    if let Some(Value::Object(meta)) = p.get_mut("_meta") {
        meta.retain(|k, _| !k.starts_with("io.modelcontextprotocol/"));
        if meta.is_empty() {
            p.remove("_meta");
        }
    }
    Some(Value::Object(p))
}

/// What a 2026-07-28 host says of itself in its first request's `_meta`. Its capabilities come
/// with each request; the upstream client declares every input the bridge can ask the host
/// for in a round (sampling, elicitation in both modes, roots).
pub(crate) fn modern_host_info(params: Option<&Value>) -> HostInfo {
    let meta = params.and_then(|p| p.get("_meta"));
    let info = meta.and_then(|m| m.get("io.modelcontextprotocol/clientInfo"));
    let text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or_default().to_owned();
    HostInfo {
        name: text(info.and_then(|i| i.get("name"))),
        version: text(info.and_then(|i| i.get("version"))),
        protocol_version: MODERN_VERSION.to_owned(),
        capabilities: Provides {
            sampling: true,
            roots: true,
            elicitation: true,
            elicitation_url: true,
            ..Provides::default()
        },
        roots_list_changed: false,
    }
}

/// What the host declared in `initialize`.
pub(crate) fn host_info(params: &Value) -> HostInfo {
    let caps = params.get("capabilities").cloned().unwrap_or_default();
    let elicitation = caps.get("elicitation");
    let form = elicitation.is_some_and(|e| {
        e.as_object()
            .is_none_or(|o| o.is_empty() || o.contains_key("form"))
    });
    let url = elicitation.is_some_and(|e| e.get("url").is_some());
    let capabilities = Provides {
        sampling: caps.get("sampling").is_some(),
        roots: caps.get("roots").is_some(),
        elicitation: form || url,
        elicitation_url: url,
        ..Provides::default()
    };
    let text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or_default().to_owned();
    let info = params.get("clientInfo");
    let asked = text(params.get("protocolVersion"));
    let protocol_version = if HANDSHAKE_VERSIONS.contains(&asked.as_str()) {
        asked
    } else {
        HANDSHAKE_VERSIONS[HANDSHAKE_VERSIONS.len() - 1].to_owned()
    };
    HostInfo {
        name: text(info.and_then(|i| i.get("name"))),
        version: text(info.and_then(|i| i.get("version"))),
        protocol_version,
        roots_list_changed: caps
            .get("roots")
            .and_then(|r| r.get("listChanged"))
            .and_then(Value::as_bool)
            .unwrap_or(false),
        capabilities,
    }
}

/// The bridge's answer to the host's `initialize`: the upstream's server info, instructions
/// and capabilities (lists said to change: the bridge tells after a reconnect), in the
/// handshake revision agreed with the host.
pub(crate) fn initialize_result(client: &Client, version: &str) -> Value {
    let info = client.server_info();
    let mut caps = info
        .as_ref()
        .map(|i| i.capabilities.clone())
        .filter(Value::is_object)
        .unwrap_or_else(|| json!({}));
    if let Some(c) = caps.as_object_mut() {
        // Task-augmented requests and 2026-07-28 extensions are not forwarded (yet).
        c.remove("tasks");
        c.remove("extensions");
        for list in ["tools", "prompts", "resources"] {
            if let Some(Value::Object(l)) = c.get_mut(list) {
                l.insert("listChanged".into(), Value::Bool(true));
            } else if c.contains_key(list) {
                c.insert(list.into(), json!({"listChanged": true}));
            }
        }
    }
    let server_info = info
        .as_ref()
        .map(|i| i.server_info.clone())
        .filter(Value::is_object)
        .unwrap_or_else(|| json!({"name": "mcp-bridge", "version": env!("CARGO_PKG_VERSION")}));
    let mut result = json!({
        "protocolVersion": version,
        "capabilities": caps,
        "serverInfo": server_info,
    });
    if let Some(instructions) = info.and_then(|i| i.instructions) {
        result["instructions"] = Value::String(instructions);
    }
    result
}

fn rpc(code: i64, message: &str) -> RpcError {
    RpcError {
        code,
        message: message.to_owned(),
        data: None,
    }
}

fn invalid_params(message: &str) -> Error {
    Error::Server {
        code: codes::INVALID_PARAMS,
        message: message.to_owned(),
        data: None,
    }
}

/// The host's error for a failed call: the upstream's own JSON-RPC error as it sent it; the
/// bridge's (timeout, upstream unavailable or lost, authorization) under the codes the SDKs
/// use for them (-32001 request timeout, -32000 connection), with the reason in words.
pub(crate) fn to_rpc(e: &Error, login_hint: Option<&str>) -> RpcError {
    match e {
        Error::Server {
            code,
            message,
            data,
        } => RpcError {
            code: *code,
            message: message.clone(),
            data: data.clone(),
        },
        Error::ResourceNotFound { code, message, .. } => rpc(*code, message),
        Error::MissingCapability { required, message } => RpcError {
            code: codes::MISSING_CAPABILITY,
            message: message.clone(),
            data: Some(json!({"requiredCapabilities": required})),
        },
        Error::Timeout { .. } => rpc(-32001, &format!("the bridge's server: {e}")),
        Error::Unauthorized { .. } => {
            let hint = login_hint.map(|h| format!(" ({h})")).unwrap_or_default();
            rpc(codes::SERVER_ERROR, &format!("{e}{hint}"))
        }
        Error::Unavailable { .. }
        | Error::ConnectionLost(_)
        | Error::SendFailed
        | Error::Backpressure { .. }
        | Error::Shutdown => rpc(codes::SERVER_ERROR, &format!("the bridge's server: {e}")),
        other => rpc(codes::INTERNAL_ERROR, &other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_token_is_taken_and_the_rest_of_meta_kept() {
        let (p, t) = take_progress_token(Some(
            json!({"name": "x", "_meta": {"progressToken": "h1", "traceparent": "00-ab"}}),
        ));
        assert_eq!(t, Some(json!("h1")));
        assert_eq!(
            p,
            Some(json!({"name": "x", "_meta": {"traceparent": "00-ab"}}))
        );
        let (p, t) = take_progress_token(Some(json!({"_meta": {"progressToken": 3}})));
        assert_eq!((p, t), (Some(json!({})), Some(json!(3))));
        assert_eq!(take_progress_token(None), (None, None));
    }

    #[test]
    fn the_host_capabilities_become_what_the_client_declares() {
        let h = host_info(&json!({
            "protocolVersion": "2025-06-18",
            "capabilities": {"sampling": {}, "elicitation": {}, "roots": {"listChanged": true}},
            "clientInfo": {"name": "host", "version": "1"}
        }));
        assert!(h.capabilities.sampling && h.capabilities.roots && h.capabilities.elicitation);
        assert!(!h.capabilities.elicitation_url);
        assert!(h.roots_list_changed);
        assert_eq!(h.protocol_version, "2025-06-18");
        let h = host_info(&json!({"protocolVersion": "2099-01-01",
            "capabilities": {"elicitation": {"url": {}}}}));
        assert!(h.capabilities.elicitation_url && h.capabilities.elicitation);
        assert!(!h.capabilities.sampling);
        assert_eq!(h.protocol_version, "2025-11-25");
    }

    #[test]
    fn upstream_errors_keep_their_code_and_bridge_errors_get_the_sdk_codes() {
        let e = to_rpc(
            &Error::Server {
                code: -32602,
                message: "bad".into(),
                data: None,
            },
            None,
        );
        assert_eq!((e.code, e.message.as_str()), (-32602, "bad"));
        let e = to_rpc(
            &Error::Timeout {
                after: std::time::Duration::from_secs(1),
            },
            None,
        );
        assert_eq!(e.code, -32001);
        let e = to_rpc(
            &Error::Unauthorized {
                reason: "no token".into(),
            },
            Some("run `mcpc --http https://x login`"),
        );
        assert!(
            e.message.contains("mcpc --http https://x login"),
            "{}",
            e.message
        );
    }
}
