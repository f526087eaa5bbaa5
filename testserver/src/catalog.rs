//! Static catalogue: tool definitions, resources, prompts, completion, logging levels.

use serde_json::{Value, json};

use crate::config::{HOSTILE_TEXT, ServerConfig};
use crate::protocol::codes;
use crate::rpc::RpcError;

/// Logging levels of RFC 5424 as MCP names them, least severe first.
const LEVELS: [&str; 8] = [
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
];

/// Severity rank of a logging level (`None` if unknown).
pub(crate) fn level_rank(level: &str) -> Option<usize> {
    LEVELS.iter().position(|l| *l == level)
}

/// Names of the chaos tools (listed and answered only with [`ServerConfig::chaos`]).
pub(crate) const CHAOS_TOOLS: [&str; 16] = [
    "die",
    "hang",
    "garbage",
    "oversized",
    "late",
    "duplicate",
    "unknown_id",
    "flood",
    "exit_after",
    "silent",
    "partial",
    "invalid_utf8",
    "surrogate",
    "sigkill",
    "close_stdout",
    "stderr_flood",
];

pub(crate) fn object(properties: Value, required: &[&str]) -> Value {
    json!({"type": "object", "properties": properties, "required": required})
}

pub(crate) fn tool(name: &str, description: &str, input: Value) -> Value {
    json!({"name": name, "description": description, "inputSchema": input})
}

fn tool_with_output(name: &str, description: &str, input: Value, output: Value) -> Value {
    let mut t = tool(name, description, input);
    t["outputSchema"] = output;
    t
}

/// Every tool definition this configuration offers, in listing order.
pub(crate) fn tools(config: &ServerConfig) -> Vec<Value> {
    let int = |d: &str| json!({"type": "integer", "minimum": 0, "description": d});
    let string = |d: &str| json!({"type": "string", "description": d});
    let mut v = vec![
        tool(
            "echo",
            "Echo the message back as \"Echo: <message>\"",
            object(json!({"message": string("text to echo")}), &["message"]),
        ),
        tool_with_output(
            "add",
            "Add two numbers; the sum is also given as structuredContent",
            object(
                json!({"a": {"type": "number"}, "b": {"type": "number"}}),
                &["a", "b"],
            ),
            object(json!({"sum": {"type": "number"}}), &["sum"]),
        ),
        tool(
            "slow",
            "Take ms milliseconds; with _meta.progressToken, send `steps` progress notifications",
            object(
                json!({"ms": int("total duration"), "steps": int("progress steps (default 1)")}),
                &["ms"],
            ),
        ),
        tool(
            "sample",
            "Ask the client for a completion (sampling/createMessage) and return its text",
            object(
                json!({"prompt": string("user message"), "maxTokens": int("default 100")}),
                &["prompt"],
            ),
        ),
        tool_with_output(
            "elicit",
            "Ask the user for input (elicitation/create, form mode); return action and content",
            object(
                json!({
                    "message": string("what to ask"),
                    "mode": {"type": "string", "enum": ["form", "url"],
                             "description": "url: a URL-mode request (default form)"},
                    "fields": {"type": "boolean", "description": "false: a form without fields"},
                }),
                &["message"],
            ),
            object(
                json!({"action": {"type": "string"}, "content": {"type": "object"}}),
                &["action"],
            ),
        ),
        tool_with_output(
            "roots",
            "Ask the client for its roots (roots/list) and return them",
            object(json!({}), &[]),
            object(json!({"roots": {"type": "array"}}), &["roots"]),
        ),
        tool(
            "log",
            "Send notifications/message at this level if logging/setLevel lets it through",
            object(
                json!({"level": {"type": "string", "enum": LEVELS}, "message": string("data")}),
                &["level", "message"],
            ),
        ),
        tool(
            "notify_changed",
            "Send notifications/<list>/list_changed (default: tools), also to the listens that \
             asked for it",
            object(
                json!({"list": {"type": "string", "enum": ["tools", "resources", "prompts"]}}),
                &[],
            ),
        ),
        tool(
            "touch",
            "Send notifications/resources/updated for the URI if the client subscribed to it (and \
             to the listens that asked for it)",
            object(json!({"uri": string("resource URI")}), &["uri"]),
        ),
        tool(
            "session_info",
            "What the server recorded about this session (handshake, early requests, cancels, \
             open listens…)",
            object(json!({}), &[]),
        ),
        tool(
            "test_trigger_tool_change",
            "The same as notify_changed for tools: the tool list changed",
            object(json!({}), &[]),
        ),
        tool(
            "end_listens",
            "End every open subscriptions/listen (a complete result, or notifications/cancelled \
             with --listen-end cancel)",
            object(json!({}), &[]),
        ),
        tool(
            "break_listens",
            "Drop every open subscriptions/listen without a response (over HTTP: cut its stream)",
            object(json!({}), &[]),
        ),
        tool_with_output(
            "structured",
            "Return structuredContent {count, label} as the outputSchema says; shape `wrong` \
             breaks the schema, `missing` leaves structuredContent out, `error` reports isError",
            object(
                json!({"shape": {"type": "string", "enum": ["valid", "wrong", "missing", "error"],
                                 "description": "valid (default), wrong, missing or error"}}),
                &[],
            ),
            json!({
                "type": "object",
                "properties": {"count": {"type": "integer", "minimum": 0},
                               "label": {"type": "string"}},
                "required": ["count", "label"],
                "additionalProperties": false,
            }),
        ),
    ];
    if config.conformance {
        v.extend(crate::conformance::tools());
    }
    if config.chaos {
        v.extend(chaos_tools());
    }
    if config.tasks {
        v.extend(crate::tasks::tools());
    }
    if config.hostile {
        for t in &mut v {
            if let Some(Value::String(d)) = t.get_mut("description") {
                d.push_str(HOSTILE_TEXT);
            }
        }
    }
    v
}

fn chaos_tools() -> Vec<Value> {
    let int = |d: &str| json!({"type": "integer", "minimum": 0, "description": d});
    let string = |d: &str| json!({"type": "string", "description": d});
    vec![
        tool(
            "die",
            "Drop the connection without answering (the binary exits with code 3)",
            object(json!({}), &[]),
        ),
        tool(
            "hang",
            "Stop reading and answering anything, forever, keeping the stream open",
            object(json!({}), &[]),
        ),
        tool(
            "garbage",
            "Write a raw line (default `{not json`), then answer normally",
            object(json!({"text": string("the raw line")}), &[]),
        ),
        tool(
            "oversized",
            "Write one JSON line of `bytes` bytes (newline excluded), then answer normally",
            object(json!({"bytes": int("line length")}), &["bytes"]),
        ),
        tool(
            "late",
            "Answer after ms milliseconds (for client timeouts)",
            object(json!({"ms": int("delay")}), &["ms"]),
        ),
        tool(
            "duplicate",
            "Answer this request twice",
            object(json!({}), &[]),
        ),
        tool(
            "unknown_id",
            "Send a response with an id the client never used (default 987654321), then answer",
            object(json!({"id": {"description": "the bogus id"}}), &[]),
        ),
        tool(
            "flood",
            "Send `count` notifications/message quickly (whatever the level), then answer",
            object(json!({"count": int("how many")}), &["count"]),
        ),
        tool(
            "exit_after",
            "Answer, then stop the server after ms milliseconds (the binary exits with code 3)",
            object(json!({"ms": int("delay")}), &["ms"]),
        ),
        tool(
            "silent",
            "Read and write nothing for ms milliseconds, then go on; this call is never answered",
            object(json!({"ms": int("how long")}), &["ms"]),
        ),
        tool(
            "partial",
            "Write half of the answer, stall the output for ms milliseconds, then the rest",
            object(json!({"ms": int("stall")}), &["ms"]),
        ),
        tool(
            "invalid_utf8",
            "Write a line with bytes that are not UTF-8 (in_answer: as this call's answer)",
            object(
                json!({"in_answer": {"type": "boolean", "description": "the answer carries them"}}),
                &[],
            ),
        ),
        tool(
            "surrogate",
            "Answer with a lone UTF-16 surrogate escape (\\ud800) in the text",
            object(json!({}), &[]),
        ),
        tool(
            "sigkill",
            "The server process sends itself SIGKILL without answering (in process: like die)",
            object(json!({}), &[]),
        ),
        tool(
            "close_stdout",
            "Close the output stream without answering and stay alive",
            object(json!({}), &[]),
        ),
        tool(
            "stderr_flood",
            "Write `bytes` bytes of noise lines to the process's stderr, then answer",
            object(json!({"bytes": int("how much")}), &["bytes"]),
        ),
    ]
}

/// The tools only the modern era offers (MRTR), in listing order.
pub(crate) fn modern_tools() -> Vec<Value> {
    vec![
        tool(
            "confirm_action",
            "Ask the client to confirm (input_required with an elicitation/create request \
             `confirm`), then say what it answered",
            object(json!({}), &[]),
        ),
        tool(
            "always_input",
            "Answer input_required every time (to test a client's cap on rounds)",
            object(json!({}), &[]),
        ),
    ]
}

/// `tools/list`, paginated when `page_size > 0`; with `modern`, [`modern_tools`] come last.
pub(crate) fn list_tools(
    config: &ServerConfig,
    params: &Value,
    modern: bool,
) -> Result<Value, RpcError> {
    let mut all = tools(config);
    if modern {
        all.extend(modern_tools());
    }
    let start = match params.get("cursor") {
        None | Some(Value::Null) => 0,
        Some(Value::String(c)) if config.endless_cursor && c == "again" => 0,
        Some(c) => c
            .as_str()
            .and_then(|c| c.strip_prefix('c'))
            .and_then(|n| n.parse::<usize>().ok())
            .filter(|n| *n <= all.len())
            .ok_or_else(|| RpcError::invalid_params(format!("invalid cursor: {c}")))?,
    };
    let end = if config.page_size == 0 {
        all.len()
    } else {
        (start + config.page_size).min(all.len())
    };
    let mut result = json!({"tools": all[start..end]});
    if config.endless_cursor {
        result["nextCursor"] = json!("again");
    } else if end < all.len() {
        result["nextCursor"] = json!(format!("c{end}"));
    }
    Ok(result)
}

fn static_text(n: u32) -> String {
    format!("Static resource {n}")
}

/// `resources/list`: three static text resources (and the conformance fixtures with
/// [`ServerConfig::conformance`]).
pub(crate) fn list_resources(config: &ServerConfig) -> Value {
    let resources: Vec<Value> = (1..=3)
        .map(|n| {
            json!({
                "uri": format!("test://static/{n}"),
                "name": format!("static-{n}"),
                "description": format!("Static text resource {n}"),
                "mimeType": "text/plain",
            })
        })
        .collect();
    let mut resources = resources;
    if config.conformance {
        resources.extend(crate::conformance::resources());
    }
    json!({"resources": resources})
}

/// `resources/templates/list`: one template (and the conformance fixture's with
/// [`ServerConfig::conformance`]).
pub(crate) fn list_resource_templates(config: &ServerConfig) -> Value {
    let mut templates = vec![json!({
        "uriTemplate": "test://dynamic/{id}",
        "name": "dynamic",
        "description": "A text resource made up for any id",
        "mimeType": "text/plain",
    })];
    if config.conformance {
        templates.extend(crate::conformance::templates());
    }
    json!({"resourceTemplates": templates})
}

/// The text of the resource at `uri`, if the catalogue has it (a static resource, or one of the
/// template's).
fn resource_text(uri: &str) -> Option<String> {
    if let Some(n) = uri.strip_prefix("test://static/") {
        match n {
            "1" => Some(static_text(1)),
            "2" => Some(static_text(2)),
            "3" => Some(static_text(3)),
            _ => None,
        }
    } else {
        uri.strip_prefix("test://dynamic/")
            .filter(|id| !id.is_empty())
            .map(|id| format!("Dynamic resource {id}"))
    }
}

/// Whether `resources/read` of `uri` succeeds (a listen honors only those URIs).
pub(crate) fn has_resource(uri: &str) -> bool {
    resource_text(uri).is_some()
}

/// `resources/read` of a static or template URI (or a conformance fixture's with
/// [`ServerConfig::conformance`]).
pub(crate) fn read_resource(config: &ServerConfig, params: &Value) -> Result<Value, RpcError> {
    let uri = params
        .get("uri")
        .and_then(Value::as_str)
        .ok_or_else(|| RpcError::invalid_params("missing uri"))?;
    if config.conformance
        && let Some(contents) = crate::conformance::read(uri)
    {
        return Ok(json!({"contents": [contents]}));
    }
    match resource_text(uri) {
        Some(text) => {
            Ok(json!({"contents": [{"uri": uri, "mimeType": "text/plain", "text": text}]}))
        }
        None => Err(
            RpcError::new(codes::RESOURCE_NOT_FOUND, "resource not found")
                .with_data(json!({"uri": uri})),
        ),
    }
}

/// `prompts/list` (the conformance fixtures last with [`ServerConfig::conformance`]).
pub(crate) fn list_prompts(config: &ServerConfig) -> Value {
    let mut result = json!({"prompts": [
        {
            "name": "greeting",
            "description": "Greets someone by name",
            "arguments": [{"name": "name", "description": "who to greet", "required": true}],
        },
        {"name": "plain", "description": "A prompt without arguments"},
    ]});
    if config.conformance
        && let Some(Value::Array(prompts)) = result.get_mut("prompts")
    {
        prompts.extend(crate::conformance::prompts());
    }
    result
}

fn user_text(text: String) -> Value {
    json!({"role": "user", "content": {"type": "text", "text": text}})
}

/// `prompts/get` (of a conformance fixture too with [`ServerConfig::conformance`]).
pub(crate) fn get_prompt(config: &ServerConfig, params: &Value) -> Result<Value, RpcError> {
    let name = params.get("name").and_then(Value::as_str).unwrap_or("");
    if config.conformance {
        let args = params.get("arguments").unwrap_or(&Value::Null);
        if let Some(got) = crate::conformance::get_prompt(name, args) {
            return got.map_err(RpcError::invalid_params);
        }
    }
    match name {
        "greeting" => {
            let who = params
                .get("arguments")
                .and_then(|a| a.get("name"))
                .and_then(Value::as_str)
                .ok_or_else(|| RpcError::invalid_params("missing required argument: name"))?;
            Ok(json!({
                "description": "Greets someone by name",
                "messages": [user_text(format!("Hello, {who}!"))],
            }))
        }
        "plain" => Ok(json!({
            "description": "A prompt without arguments",
            "messages": [user_text("A plain prompt with no arguments.".to_owned())],
        })),
        other => Err(RpcError::invalid_params(format!("Unknown prompt: {other}"))),
    }
}

/// Names offered when completing `greeting`'s `name`.
const NAMES: [&str; 3] = ["alice", "alfred", "bob"];

/// `completion/complete`: `greeting`'s `name` from a fixed list, the template's `id` from
/// `1..3`, nothing otherwise.
pub(crate) fn complete(params: &Value) -> Value {
    let r = params.get("ref").unwrap_or(&Value::Null);
    let arg = params.get("argument").unwrap_or(&Value::Null);
    let arg_name = arg.get("name").and_then(Value::as_str).unwrap_or("");
    let typed = arg.get("value").and_then(Value::as_str).unwrap_or("");
    let kind = r.get("type").and_then(Value::as_str).unwrap_or("");
    let candidates: &[&str] = match (kind, arg_name) {
        ("ref/prompt", "name") if r.get("name").and_then(Value::as_str) == Some("greeting") => {
            &NAMES
        }
        ("ref/resource", "id")
            if r.get("uri").and_then(Value::as_str) == Some("test://dynamic/{id}") =>
        {
            &["1", "2", "3"]
        }
        _ => &[],
    };
    let values: Vec<&str> = candidates
        .iter()
        .copied()
        .filter(|c| c.starts_with(typed))
        .collect();
    json!({"completion": {"values": values, "total": values.len(), "hasMore": false}})
}
