//! The modern era (MCP 2026-07-28): stateless requests, `server/discover`, per-request
//! `_meta`, `resultType`, cache hints and MRTR (`input_required`).
//!
//! Every modern request carries `params._meta["io.modelcontextprotocol/protocolVersion"]` (one
//! of [`ServerConfig::modern_versions`], else -32022 with `data: {supported, requested}`) and
//! `["io.modelcontextprotocol/clientCapabilities"]` (an object); either missing: -32602.
//! `initialize` is refused with -32022 (a modern refusal a client recognises). The server never
//! sends requests: the tools that would (`sample`, `elicit`, `roots`) answer a tool error, and
//! `confirm_action` asks through MRTR instead. `subscriptions/listen` is served by `listen`
//! (unless [`ServerConfig::listen`] is off); `resources/subscribe|unsubscribe` only with
//! [`ServerConfig::modern_unsolicited`].

use serde_json::{Value, json};

use crate::catalog;
use crate::config::ServerConfig;
use crate::connection::Shared;
use crate::listen::{self, LISTEN};
use crate::methods;
use crate::protocol::{
    DISCOVER, META_CAPABILITIES, META_CLIENT_INFO, META_SERVER_INFO, META_VERSION,
    MODERN_PROTOCOL_VERSIONS, codes, meta,
};
use crate::rpc::{Handled, Reply, RpcError};
use crate::tasks;

/// `ttlMs` of every cacheable modern result, unless [`ServerConfig::cache_ttl_ms`] says.
pub(crate) const TTL_MS: u64 = 60_000;

/// Methods whose complete results carry `ttlMs` and `cacheScope`.
const CACHEABLE: [&str; 6] = [
    DISCOVER,
    "tools/list",
    "prompts/list",
    "resources/list",
    "resources/templates/list",
    "resources/read",
];

/// Methods the modern era answers (anything else: -32601), some only as configured (see
/// [`serves`]).
pub(crate) const METHODS: [&str; 12] = [
    DISCOVER,
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "prompts/list",
    "prompts/get",
    "completion/complete",
    LISTEN,
];

/// Whether the modern era answers `method` with this configuration.
fn serves(config: &ServerConfig, method: &str) -> bool {
    match method {
        "tasks/get" | "tasks/update" | "tasks/cancel" => config.tasks,
        "resources/subscribe" | "resources/unsubscribe" => config.modern_unsolicited,
        // Answered -32601 by `listen::listen` itself, which counts it first.
        _ => METHODS.contains(&method),
    }
}

/// The modern era's capabilities: with [`ServerConfig::listen`], `listChanged` (tools, prompts,
/// resources) and `resources.subscribe`, which `subscriptions/listen` serves; without it, none
/// of them.
pub(crate) fn capabilities(config: &ServerConfig) -> Value {
    if config.listen {
        return methods::capabilities();
    }
    json!({
        "tools": {},
        "resources": {},
        "prompts": {},
        "logging": {},
        "completions": {},
    })
}

/// `requestState` of `confirm_action`'s first round.
pub(crate) const CONFIRM_STATE: &str = r#"{"tool":"confirm_action","round":1}"#;

/// The request's protocol version, if its `_meta` has both required keys (else -32602).
pub(crate) fn meta_version(params: &Value) -> Result<&str, RpcError> {
    let meta = meta(params).ok_or_else(|| {
        RpcError::invalid_params(format!(
            "missing params._meta (a {} request needs {META_VERSION} and {META_CAPABILITIES})",
            MODERN_PROTOCOL_VERSIONS[0]
        ))
    })?;
    let version = meta
        .get(META_VERSION)
        .and_then(Value::as_str)
        .ok_or_else(|| {
            RpcError::invalid_params(format!("missing or non-string _meta[{META_VERSION:?}]"))
        })?;
    if !meta.get(META_CAPABILITIES).is_some_and(Value::is_object) {
        return Err(RpcError::invalid_params(format!(
            "missing or non-object _meta[{META_CAPABILITIES:?}]"
        )));
    }
    Ok(version)
}

/// -32022 for `requested` (`None`: the request named none, e.g. `initialize`).
pub(crate) fn unsupported_version(config: &ServerConfig, requested: Option<&Value>) -> RpcError {
    let shown = requested.map_or_else(|| "none".to_owned(), Value::to_string);
    RpcError::new(
        codes::UNSUPPORTED_PROTOCOL_VERSION,
        format!("Unsupported protocol version: {shown}"),
    )
    .with_data(json!({
        "supported": config.modern_versions,
        "requested": requested.cloned().unwrap_or(Value::Null),
    }))
}

/// The request's protocol version once it is checked: required `_meta` keys (-32602), a
/// supported version (-32022).
pub(crate) fn check_meta<'a>(
    config: &ServerConfig,
    params: &'a Value,
) -> Result<&'a str, RpcError> {
    let version = meta_version(params)?;
    if !config.modern_versions.iter().any(|v| v == version) {
        return Err(unsupported_version(config, Some(&json!(version))));
    }
    Ok(version)
}

/// The answer to `initialize` of a modern-only server: -32022 listing the modern versions.
pub(crate) fn refuse_initialize(config: &ServerConfig, params: &Value) -> RpcError {
    let mut e = unsupported_version(config, params.get("protocolVersion"));
    e.message = format!(
        "this server speaks only the modern era ({}): use server/discover, not initialize",
        config.modern_versions.join(", ")
    );
    e
}

/// The `server/discover` result.
pub(crate) fn discover(config: &ServerConfig) -> Value {
    let mut result = json!({
        "supportedVersions": config.modern_versions,
        "capabilities": capabilities(config),
        "_meta": {META_SERVER_INFO: {"name": config.name, "version": config.server_version}},
    });
    if let Some(instructions) = &config.instructions {
        result["instructions"] = json!(instructions);
    }
    if config.tasks {
        result["capabilities"]["extensions"] = json!({ tasks::EXT_TASKS: {} });
    }
    result
}

/// Adds `resultType` (unless [`ServerConfig::omit_result_type`]) and, for cacheable methods,
/// `ttlMs` and `cacheScope` to a complete result; fields already there are kept.
pub(crate) fn decorate(config: &ServerConfig, method: &str, mut result: Value) -> Value {
    let Some(obj) = result.as_object_mut() else {
        return result;
    };
    let complete = obj
        .get("resultType")
        .is_none_or(|t| t.as_str() == Some("complete"));
    if !config.omit_result_type {
        obj.entry("resultType").or_insert_with(|| json!("complete"));
    }
    if complete {
        add_cache_hints(config, method, obj, TTL_MS);
    }
    result
}

/// Adds `ttlMs` ([`ServerConfig::cache_ttl_ms`], else `default_ttl`) and `cacheScope` to the
/// result of a cacheable method; fields already there are kept.
fn add_cache_hints(
    config: &ServerConfig,
    method: &str,
    obj: &mut serde_json::Map<String, Value>,
    default_ttl: u64,
) {
    if CACHEABLE.contains(&method) {
        let ttl = config.cache_ttl_ms.unwrap_or(default_ttl);
        let scope = if config.cache_private {
            "private"
        } else {
            "public"
        };
        obj.entry("ttlMs").or_insert_with(|| json!(ttl));
        obj.entry("cacheScope").or_insert_with(|| json!(scope));
    }
}

/// A handshake-era result with the cache hints when [`ServerConfig::cache_ttl_ms`] is set (a
/// legacy server may send them too); as it is otherwise.
pub(crate) fn legacy_hints(config: &ServerConfig, method: &str, mut result: Value) -> Value {
    if config.cache_ttl_ms.is_some()
        && let Some(obj) = result.as_object_mut()
    {
        add_cache_hints(config, method, obj, 0);
    }
    result
}

/// Answers one modern request (the era's checks, then the method).
pub(crate) async fn dispatch(shared: &Shared, method: &str, params: Value, id: &Value) -> Handled {
    let config = &shared.config;
    if method == "initialize" {
        return Err(refuse_initialize(config, &params));
    }
    if method == LISTEN {
        shared.listen.count_received();
    }
    let version = check_meta(config, &params)?.to_owned();
    // Shown by `session_info`; a dual server's handshake-era session is left alone.
    if shared.session().initialize_count == 0 {
        let meta = meta(&params);
        let mut s = shared.session();
        s.protocol_version = Some(version);
        s.client_capabilities = meta.and_then(|m| m.get(META_CAPABILITIES)).cloned();
        if let Some(info) = meta.and_then(|m| m.get(META_CLIENT_INFO)) {
            s.client_info = Some(info.clone());
        }
    }
    if !serves(config, method) {
        return Err(RpcError::new(
            codes::METHOD_NOT_FOUND,
            format!("Method not found: {method}"),
        ));
    }
    let reply = match method {
        DISCOVER => Reply::Result(discover(config)),
        LISTEN => listen::listen(shared, &params, id).await?,
        "tools/list" => Reply::Result(catalog::list_tools(config, &params, true)?),
        "tasks/get" if config.tasks => tasks::get(config, &params)?,
        "tasks/update" if config.tasks => tasks::update(config, &params)?,
        "tasks/cancel" if config.tasks => tasks::cancel(config, &params)?,
        "tools/call" => match params.get("name").and_then(Value::as_str) {
            Some(name) if tasks::is_task_tool(config, name) => {
                tasks::call_modern(config, name, &params).await?
            }
            Some("confirm_action") => {
                needs_elicitation(&params)?;
                Reply::Result(confirm_action(&params)?)
            }
            Some("always_input") => {
                needs_elicitation(&params)?;
                Reply::Result(always_input(&params))
            }
            Some(name @ ("sample" | "elicit" | "roots")) => Reply::Result(json!({
                "content": [{"type": "text", "text": format!(
                    "{name} sends the client a request, which the modern era does not allow \
                     (try confirm_action)"
                )}],
                "isError": true,
            })),
            _ => methods::dispatch(shared, method, params, id).await?,
        },
        // The modern era says -32602 where the handshake era said -32002.
        "resources/read" => methods::dispatch(shared, method, params, id)
            .await
            .map_err(|mut e| {
                if e.code == codes::RESOURCE_NOT_FOUND {
                    e.code = codes::INVALID_PARAMS;
                }
                e
            })?,
        _ => methods::dispatch(shared, method, params, id).await?,
    };
    Ok(match reply {
        Reply::Result(r) => Reply::Result(decorate(config, method, r)),
        Reply::ResultThenExit(r, d) => Reply::ResultThenExit(decorate(config, method, r), d),
        Reply::Answered => Reply::Answered,
    })
}

/// -32021 unless the client declared `elicitation` (an object) in its `_meta` capabilities:
/// the MRTR tools may only ask for what the client can give.
fn needs_elicitation(params: &Value) -> Result<(), RpcError> {
    let declared = meta(params)
        .and_then(|m| m.get(META_CAPABILITIES))
        .and_then(|c| c.get("elicitation"))
        .is_some_and(Value::is_object);
    if declared {
        return Ok(());
    }
    Err(RpcError::new(
        codes::MISSING_CLIENT_CAPABILITY,
        "this tool asks for input through elicitation/create: declare the elicitation capability",
    )
    .with_data(json!({"requiredCapabilities": {"elicitation": {}}})))
}

/// An `input_required` result asking for the `confirm` elicitation, with `state`.
fn input_required(state: &str) -> Value {
    json!({
        "resultType": "input_required",
        "inputRequests": {"confirm": {"method": "elicitation/create", "params": {
            "mode": "form",
            "message": "Confirm?",
            "requestedSchema": {
                "type": "object",
                "properties": {"confirmed": {"type": "boolean"}},
                "required": ["confirmed"],
            },
        }}},
        "requestState": state,
    })
}

/// `confirm_action`: round 1 asks; the retry with the exact state and `inputResponses.confirm`
/// completes; a retry with a wrong or missing state (or no answer) is -32602.
fn confirm_action(params: &Value) -> Result<Value, RpcError> {
    let responses = params.get("inputResponses");
    let state = params.get("requestState");
    if responses.is_none() && state.is_none() {
        return Ok(input_required(CONFIRM_STATE));
    }
    if state.and_then(Value::as_str) != Some(CONFIRM_STATE) {
        return Err(RpcError::invalid_params(format!(
            "confirm_action: requestState missing or not the one sent (got {})",
            state.map_or_else(|| "none".to_owned(), Value::to_string)
        )));
    }
    let answer = responses.and_then(|r| r.get("confirm")).ok_or_else(|| {
        RpcError::invalid_params("confirm_action: inputResponses.confirm missing")
    })?;
    let action = answer
        .get("action")
        .and_then(Value::as_str)
        .unwrap_or("(no action)");
    let confirmed = answer
        .get("content")
        .and_then(|c| c.get("confirmed"))
        .cloned()
        .unwrap_or(Value::Null);
    Ok(json!({
        "content": [{"type": "text", "text": format!(
            "confirm_action: {action} (confirmed: {confirmed})"
        )}],
        "structuredContent": {"action": action, "confirmed": confirmed},
    }))
}

/// `always_input`: `input_required` every time; the state counts the rounds (a missing or
/// unreadable state starts again at 1).
fn always_input(params: &Value) -> Value {
    let round = params
        .get("requestState")
        .and_then(Value::as_str)
        .and_then(|s| serde_json::from_str::<Value>(s).ok())
        .and_then(|s| s.get("round").and_then(Value::as_u64))
        .map_or(1, |r| r.saturating_add(1));
    input_required(&json!({"tool": "always_input", "round": round}).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Era;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

    /// Serves `config`, feeds it `lines` (then EOF) and returns every line it wrote, parsed.
    async fn exchange(config: ServerConfig, lines: &[Value]) -> Vec<Value> {
        let (ours, theirs) = tokio::io::duplex(1 << 16);
        let (sr, sw) = tokio::io::split(theirs);
        let server = tokio::spawn(crate::serve(sr, sw, config));
        let (r, mut w) = tokio::io::split(ours);
        for l in lines {
            w.write_all(format!("{l}\n").as_bytes()).await.unwrap();
        }
        w.shutdown().await.unwrap();
        let mut out = Vec::new();
        let mut reader = BufReader::new(r).lines();
        while let Some(line) = reader.next_line().await.unwrap() {
            out.push(serde_json::from_str(&line).unwrap());
        }
        server.await.unwrap();
        out.sort_by_key(|v: &Value| v["id"].as_i64());
        out
    }

    fn modern() -> ServerConfig {
        ServerConfig {
            era: Era::Modern,
            ..ServerConfig::echo()
        }
    }

    fn request(id: i64, method: &str, mut params: Value) -> Value {
        params["_meta"] =
            json!({META_VERSION: "2026-07-28", META_CAPABILITIES: {"elicitation": {}}});
        json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
    }

    #[tokio::test]
    async fn discover_lists_and_decorates() {
        let out = exchange(
            modern(),
            &[
                request(1, DISCOVER, json!({})),
                request(2, "tools/list", json!({})),
                request(
                    3,
                    "tools/call",
                    json!({"name": "echo", "arguments": {"message": "x"}}),
                ),
                request(4, "ping", json!({})),
                request(5, "resources/read", json!({"uri": "test://nope"})),
                request(6, "resources/read", json!({"uri": "test://static/1"})),
            ],
        )
        .await;
        let d = &out[0]["result"];
        assert_eq!(d["resultType"], "complete");
        assert_eq!(d["supportedVersions"], json!(["2026-07-28"]));
        assert_eq!(d["capabilities"], methods::capabilities());
        assert_eq!(d["_meta"][META_SERVER_INFO]["name"], "mcp-echo-server");
        assert_eq!(
            (d["ttlMs"].as_u64(), d["cacheScope"].as_str()),
            (Some(TTL_MS), Some("public"))
        );
        let tools = out[1]["result"]["tools"].as_array().unwrap();
        assert!(tools.iter().any(|t| t["name"] == "confirm_action"));
        assert_eq!(out[1]["result"]["cacheScope"], "public");
        assert_eq!(out[2]["result"]["resultType"], "complete");
        assert!(out[2]["result"].get("ttlMs").is_none());
        assert_eq!(out[2]["result"]["content"][0]["text"], "Echo: x");
        assert_eq!(out[3]["error"]["code"], codes::METHOD_NOT_FOUND);
        assert_eq!(out[4]["error"]["code"], codes::INVALID_PARAMS);
        assert_eq!(out[4]["error"]["data"]["uri"], "test://nope");
        assert_eq!(out[5]["result"]["ttlMs"], TTL_MS);
    }

    #[tokio::test]
    async fn meta_and_versions_are_checked() {
        let mut wrong = request(2, "tools/list", json!({}));
        wrong["params"]["_meta"][META_VERSION] = json!("2025-11-25");
        let mut no_caps = request(3, "tools/list", json!({}));
        no_caps["params"]["_meta"]
            .as_object_mut()
            .unwrap()
            .remove(META_CAPABILITIES);
        let out = exchange(
            modern(),
            &[
                json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}),
                wrong,
                no_caps,
                json!({"jsonrpc": "2.0", "id": 4, "method": "initialize",
                    "params": {"protocolVersion": "2025-11-25", "capabilities": {}}}),
            ],
        )
        .await;
        assert_eq!(out[0]["error"]["code"], codes::INVALID_PARAMS);
        assert_eq!(out[1]["error"]["code"], codes::UNSUPPORTED_PROTOCOL_VERSION);
        assert_eq!(
            out[1]["error"]["data"],
            json!({"supported": ["2026-07-28"], "requested": "2025-11-25"})
        );
        assert_eq!(out[2]["error"]["code"], codes::INVALID_PARAMS);
        assert_eq!(out[3]["error"]["code"], codes::UNSUPPORTED_PROTOCOL_VERSION);
        assert_eq!(out[3]["error"]["data"]["supported"], json!(["2026-07-28"]));
        let only_later = ServerConfig {
            modern_versions: vec!["2099-01-01".into()],
            omit_result_type: true,
            ..modern()
        };
        let out = exchange(only_later.clone(), &[request(1, "tools/list", json!({}))]).await;
        assert_eq!(out[0]["error"]["data"]["supported"], json!(["2099-01-01"]));
        let mut later = request(1, DISCOVER, json!({}));
        later["params"]["_meta"][META_VERSION] = json!("2099-01-01");
        let out = exchange(only_later, &[later]).await;
        assert!(out[0]["result"].get("resultType").is_none());
        assert_eq!(out[0]["result"]["supportedVersions"], json!(["2099-01-01"]));
    }

    #[tokio::test]
    async fn mrtr_rounds() {
        let call = |id, extra: Value| {
            let mut params = json!({"name": "confirm_action", "arguments": {}});
            if let Some(o) = extra.as_object() {
                for (k, v) in o {
                    params[k] = v.clone();
                }
            }
            request(id, "tools/call", params)
        };
        let answer = json!({"confirm": {"action": "accept", "content": {"confirmed": true}}});
        let out = exchange(
            modern(),
            &[
                call(1, json!({})),
                call(
                    2,
                    json!({"inputResponses": answer, "requestState": CONFIRM_STATE}),
                ),
                call(
                    3,
                    json!({"inputResponses": answer, "requestState": "forged"}),
                ),
                call(4, json!({"inputResponses": answer})),
                request(
                    5,
                    "tools/call",
                    json!({"name": "always_input",
                    "requestState": r#"{"tool":"always_input","round":4}"#}),
                ),
                json!({"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {
                    "name": "confirm_action",
                    "_meta": {META_VERSION: "2026-07-28", META_CAPABILITIES: {}}}}),
            ],
        )
        .await;
        let first = &out[0]["result"];
        assert_eq!(first["resultType"], "input_required");
        assert_eq!(first["requestState"], CONFIRM_STATE);
        assert_eq!(
            first["inputRequests"]["confirm"]["method"],
            "elicitation/create"
        );
        assert!(first.get("ttlMs").is_none());
        assert_eq!(out[1]["result"]["resultType"], "complete");
        assert_eq!(
            out[1]["result"]["content"][0]["text"],
            "confirm_action: accept (confirmed: true)"
        );
        assert_eq!(out[2]["error"]["code"], codes::INVALID_PARAMS);
        assert_eq!(out[3]["error"]["code"], codes::INVALID_PARAMS);
        assert_eq!(out[4]["result"]["resultType"], "input_required");
        assert_eq!(
            out[4]["result"]["requestState"],
            r#"{"round":5,"tool":"always_input"}"#
        );
        assert_eq!(out[5]["error"]["code"], codes::MISSING_CLIENT_CAPABILITY);
        assert_eq!(
            out[5]["error"]["data"]["requiredCapabilities"],
            json!({"elicitation": {}})
        );
    }

    #[tokio::test]
    async fn dual_answers_both_and_legacy_probes() {
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {}}});
        let dual = ServerConfig {
            era: Era::Dual,
            ..ServerConfig::echo()
        };
        let out = exchange(dual, &[init.clone(), request(2, DISCOVER, json!({}))]).await;
        assert_eq!(out[0]["result"]["protocolVersion"], "2025-11-25");
        assert_eq!(out[1]["result"]["supportedVersions"], json!(["2026-07-28"]));
        let discover = request(2, DISCOVER, json!({}));
        let legacy = |probe| ServerConfig {
            probe,
            ..ServerConfig::echo()
        };
        let out = exchange(legacy(crate::Probe::Error), std::slice::from_ref(&discover)).await;
        assert_eq!(out[0]["error"]["code"], codes::METHOD_NOT_FOUND);
        let out = exchange(
            legacy(crate::Probe::Garbage),
            std::slice::from_ref(&discover),
        )
        .await;
        assert_eq!(out[0]["result"], json!({}));
        let out = exchange(legacy(crate::Probe::Silent), &[discover.clone(), init]).await;
        assert_eq!(out.len(), 1);
        assert_eq!(out[0]["id"], 1);
        let out = exchange(legacy(crate::Probe::Die), &[discover]).await;
        assert!(out.is_empty());
    }
}
