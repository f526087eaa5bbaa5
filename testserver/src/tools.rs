//! `tools/call`: the tool implementations.

use std::time::Duration;

use serde_json::{Value, json};

use crate::bus::ListenEvent;
use crate::catalog::{self, CHAOS_TOOLS};
use crate::config::HOSTILE_TEXT;
use crate::connection::Shared;
use crate::protocol::LOGGER_NAME;
use crate::rpc::{Handled, Reply, RpcError};

/// Largest `oversized` line (1 GiB): a guard against typos, not a protocol limit.
const MAX_OVERSIZED: u64 = 1 << 30;

/// [`crate::HOSTILE_TEXT`] when the configuration is hostile, else nothing.
fn hostile(shared: &Shared) -> &'static str {
    if shared.config.hostile {
        HOSTILE_TEXT
    } else {
        ""
    }
}

fn text_result(text: impl Into<String>) -> Value {
    json!({"content": [{"type": "text", "text": text.into()}]})
}

fn structured_result(structured: Value) -> Value {
    json!({
        "content": [{"type": "text", "text": structured.to_string()}],
        "structuredContent": structured,
    })
}

/// A tool execution error: a result with `isError: true`.
fn tool_error(text: impl Into<String>) -> Value {
    json!({"content": [{"type": "text", "text": text.into()}], "isError": true})
}

fn ok(v: Value) -> Handled {
    Ok(Reply::Result(v))
}

fn arg_str<'a>(args: &'a Value, name: &str) -> Result<&'a str, Value> {
    args.get(name)
        .and_then(Value::as_str)
        .ok_or_else(|| tool_error(format!("argument `{name}` must be a string")))
}

fn arg_u64(args: &Value, name: &str) -> Result<u64, Value> {
    args.get(name)
        .and_then(Value::as_u64)
        .ok_or_else(|| tool_error(format!("argument `{name}` must be a non-negative integer")))
}

fn opt_u64(args: &Value, name: &str, default: u64) -> Result<u64, Value> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(default),
        Some(_) => arg_u64(args, name),
    }
}

/// Handle `tools/call` (`die` and `hang` are handled by the reader before it gets here).
pub(crate) async fn call(shared: &Shared, params: &Value, id: &Value) -> Handled {
    let name = params
        .get("name")
        .and_then(Value::as_str)
        .ok_or_else(|| RpcError::invalid_params("missing tool name"))?;
    let known = shared.has_tool(name);
    if !known || (!shared.config.chaos && CHAOS_TOOLS.contains(&name)) {
        return Err(RpcError::invalid_params(format!("Unknown tool: {name}")));
    }
    let args = params.get("arguments").cloned().unwrap_or(json!({}));
    let progress_token = params
        .get("_meta")
        .and_then(|m| m.get("progressToken"))
        .cloned();
    if shared.config.conformance
        && let Some(result) =
            crate::conformance::call(shared, name, &args, progress_token.clone()).await
    {
        return ok(result);
    }
    let unsolicited = shared.unsolicited("tools/call", params);
    // The call's trace context (W3C `traceparent` in `_meta`), carried into the requests the
    // call makes of the client, as an instrumented server would.
    let trace = params
        .get("_meta")
        .and_then(|m| m.get("traceparent"))
        .filter(|t| t.is_string())
        .cloned();
    let call = Call {
        progress_token,
        id,
        unsolicited,
        trace,
    };
    match run(shared, name, &args, call).await {
        Ok(reply) => Ok(reply),
        // Argument problems are tool execution errors (isError), not protocol errors.
        Err(result) => ok(result),
    }
}

/// What a tool call carries beside its arguments.
struct Call<'a> {
    progress_token: Option<Value>,
    id: &'a Value,
    unsolicited: bool,
    /// The `traceparent` of the call's `_meta`, if any.
    trace: Option<Value>,
}

async fn run(shared: &Shared, name: &str, args: &Value, call: Call<'_>) -> Result<Reply, Value> {
    let Call {
        progress_token,
        id,
        unsolicited,
        trace,
    } = call;
    let result = match name {
        "echo" => text_result(format!("Echo: {}", arg_str(args, "message")?)),
        "add" => add(args)?,
        "slow" => {
            let ms = arg_u64(args, "ms")?;
            let steps = opt_u64(args, "steps", 1)?;
            slow(shared, ms, steps, progress_token).await
        }
        "sample" => {
            let prompt = arg_str(args, "prompt")?;
            let max_tokens = opt_u64(args, "maxTokens", 100)?;
            sample(shared, prompt, max_tokens, trace).await
        }
        "elicit" => {
            let url = args.get("mode").and_then(Value::as_str) == Some("url");
            let fields = args.get("fields").and_then(Value::as_bool) != Some(false);
            elicit(shared, arg_str(args, "message")?, url, fields).await
        }
        "roots" => match shared.request_client("roots/list", json!({})).await {
            Ok(r) => {
                structured_result(json!({"roots": r.get("roots").cloned().unwrap_or(json!([]))}))
            }
            Err(e) => tool_error(e.message),
        },
        "log" => {
            let level = arg_str(args, "level")?;
            let message = arg_str(args, "message")?;
            let Some(rank) = catalog::level_rank(level) else {
                return Err(tool_error(format!("unknown logging level: {level}")));
            };
            let threshold = shared.session().log_level.clone();
            let passes = threshold
                .as_deref()
                .and_then(catalog::level_rank)
                .is_none_or(|t| rank >= t);
            if passes {
                shared.notify(
                    "notifications/message",
                    json!({"level": level, "logger": LOGGER_NAME,
                           "data": format!("{message}{}", hostile(shared))}),
                );
                text_result(format!("logged at {level}"))
            } else {
                text_result(format!(
                    "suppressed: {level} is below the level set by logging/setLevel ({})",
                    threshold.unwrap_or_default()
                ))
            }
        }
        "notify_changed" | "test_trigger_tool_change" => {
            let list = match args.get("list") {
                None | Some(Value::Null) => "tools",
                Some(_) if name == "test_trigger_tool_change" => "tools",
                Some(_) => arg_str(args, "list")?,
            };
            let event = match list {
                "tools" => ListenEvent::ToolsChanged,
                "prompts" => ListenEvent::PromptsChanged,
                "resources" => ListenEvent::ResourcesChanged,
                _ => return Err(tool_error(format!("unknown list: {list}"))),
            };
            let method = format!("notifications/{list}/list_changed");
            let listens = shared.listen.open_count();
            shared.listen.publish(event);
            if unsolicited {
                shared.notify(&method, json!({}));
                text_result(format!("sent {method}"))
            } else {
                text_result(format!("{method} published to {listens} open listen(s)"))
            }
        }
        "touch" => {
            let uri = arg_str(args, "uri")?;
            let listens = shared.listen.open_count();
            shared.listen.publish(ListenEvent::Updated(uri.to_owned()));
            let subscribed = unsolicited && shared.session().subscriptions.contains(uri);
            if subscribed {
                shared.notify("notifications/resources/updated", json!({"uri": uri}));
                text_result(format!("sent notifications/resources/updated for {uri}"))
            } else if unsolicited {
                text_result(format!("not subscribed to {uri}: nothing sent"))
            } else {
                text_result(format!(
                    "notifications/resources/updated for {uri} published to {listens} open \
                     listen(s)"
                ))
            }
        }
        "session_info" => {
            let mut info = shared.session().to_json();
            info["served"] = shared.config.served.to_json();
            info["listens"] = shared.listen.to_json();
            structured_result(info)
        }
        "end_listens" | "break_listens" => {
            let listens = shared.listen.open_count();
            let (event, how) = if name == "end_listens" {
                (ListenEvent::End, shared.config.listen_end.name())
            } else {
                (ListenEvent::Break, "without a response")
            };
            shared.listen.publish(event);
            text_result(format!("ending {listens} open listen(s) ({how})"))
        }
        "structured" => {
            let shape = match args.get("shape") {
                None | Some(Value::Null) => "valid",
                Some(_) => arg_str(args, "shape")?,
            };
            match shape {
                "valid" => structured_result(json!({"count": 3, "label": "three"})),
                // `count` of the wrong type, `label` missing, a member the schema forbids.
                "wrong" => structured_result(json!({"count": "three", "extra": true})),
                "missing" => {
                    text_result("no structuredContent, though the outputSchema asks for it")
                }
                "error" => tool_error("the tool failed (isError), so its result is not structured"),
                other => return Err(tool_error(format!("unknown shape: {other}"))),
            }
        }
        // Chaos tools.
        "garbage" => {
            let text = match args.get("text") {
                None | Some(Value::Null) => "{not json",
                Some(_) => arg_str(args, "text")?,
            };
            shared.send_raw(text.to_owned());
            text_result("wrote a garbage line")
        }
        "oversized" => {
            let bytes = arg_u64(args, "bytes")?;
            if bytes > MAX_OVERSIZED {
                return Err(tool_error(format!("bytes must be at most {MAX_OVERSIZED}")));
            }
            let line = oversized_line(usize::try_from(bytes).unwrap_or(usize::MAX));
            let len = line.len();
            shared.send_raw(line);
            text_result(format!("wrote a line of {len} bytes"))
        }
        "late" => {
            let ms = arg_u64(args, "ms")?;
            tokio::time::sleep(Duration::from_millis(ms)).await;
            text_result(format!("answered {ms} ms late"))
        }
        "duplicate" => {
            let result = text_result("duplicate");
            shared.respond(id, result.clone());
            result
        }
        "unknown_id" => {
            let bogus = match args.get("id") {
                None | Some(Value::Null) => json!(987_654_321),
                Some(v) => v.clone(),
            };
            shared.respond(&bogus, text_result("unsolicited"));
            text_result(format!("sent a response with id {bogus}"))
        }
        "flood" => {
            let count = arg_u64(args, "count")?;
            for i in 1..=count {
                shared.notify(
                    "notifications/message",
                    json!({"level": "info", "logger": LOGGER_NAME, "data": format!("flood {i}/{count}")}),
                );
            }
            text_result(format!("sent {count} notifications"))
        }
        "partial" => {
            let ms = arg_u64(args, "ms")?;
            let line = json!({"jsonrpc": "2.0", "id": id,
                "result": text_result(format!("stalled {ms} ms mid-frame"))})
            .to_string();
            let half = line.len() / 2;
            shared.send_stalled(line, half, Duration::from_millis(ms));
            return Ok(Reply::Answered);
        }
        "invalid_utf8" => {
            let in_answer = args.get("in_answer").and_then(Value::as_bool) == Some(true);
            let (head, tail) = if in_answer {
                (
                    format!(
                        r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":"bad "#
                    ),
                    r#" bytes"}]}}"#,
                )
            } else {
                (
                    r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"bad "#.to_owned(),
                    r#" bytes"}}"#,
                )
            };
            let mut line = head.into_bytes();
            line.extend_from_slice(b"\xff\xfe\xc3");
            line.extend_from_slice(tail.as_bytes());
            shared.send_bytes(line);
            if in_answer {
                return Ok(Reply::Answered);
            }
            text_result("wrote a line that is not UTF-8")
        }
        "surrogate" => {
            let line = format!(
                r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":"lone \ud800 surrogate"}}]}}}}"#
            );
            shared.send_raw(line);
            return Ok(Reply::Answered);
        }
        "stderr_flood" => {
            let bytes = arg_u64(args, "bytes")?;
            if !shared.config.own_process {
                return Err(tool_error(
                    "stderr_flood writes to the process's stderr: only in the binaries",
                ));
            }
            let written = tokio::task::spawn_blocking(move || flood_stderr(bytes))
                .await
                .map_err(|e| tool_error(format!("the flood failed: {e}")))?
                .map_err(|e| tool_error(format!("the flood failed: {e}")))?;
            text_result(format!("wrote {written} bytes to stderr"))
        }
        "exit_after" => {
            let ms = arg_u64(args, "ms")?;
            return Ok(Reply::ResultThenExit(
                text_result(format!("exiting in {ms} ms")),
                Duration::from_millis(ms),
            ));
        }
        other => {
            return Err(tool_error(format!("tool {other} is not implemented here")));
        }
    };
    Ok(Reply::Result(result))
}

fn add(args: &Value) -> Result<Value, Value> {
    let (Some(a), Some(b)) = (args.get("a"), args.get("b")) else {
        return Err(tool_error("arguments `a` and `b` are required"));
    };
    let sum = match (a.as_i64(), b.as_i64()) {
        (Some(a), Some(b)) if a.checked_add(b).is_some() => json!(a + b),
        _ => match (a.as_f64(), b.as_f64()) {
            (Some(a), Some(b)) => json!(a + b),
            _ => return Err(tool_error("arguments `a` and `b` must be numbers")),
        },
    };
    Ok(json!({
        "content": [{"type": "text", "text": sum.to_string()}],
        "structuredContent": {"sum": sum},
    }))
}

async fn slow(shared: &Shared, ms: u64, steps: u64, progress_token: Option<Value>) -> Value {
    let total = Duration::from_millis(ms);
    match progress_token {
        Some(token) if steps > 0 => {
            let step = total / u32::try_from(steps).unwrap_or(u32::MAX);
            for i in 1..=steps {
                tokio::time::sleep(step).await;
                shared.notify(
                    "notifications/progress",
                    json!({
                        "progressToken": token,
                        "progress": i,
                        "total": steps,
                        "message": format!("step {i} of {steps}{}", hostile(shared)),
                    }),
                );
            }
        }
        _ => tokio::time::sleep(total).await,
    }
    text_result(format!("slept {ms} ms in {steps} steps"))
}

async fn sample(shared: &Shared, prompt: &str, max_tokens: u64, trace: Option<Value>) -> Value {
    let mut params = json!({
        "messages": [{"role": "user", "content": {"type": "text", "text": prompt}}],
        "maxTokens": max_tokens,
    });
    if let Some(traceparent) = trace {
        params["_meta"] = json!({"traceparent": traceparent});
    }
    match shared
        .request_client("sampling/createMessage", params)
        .await
    {
        Ok(result) => {
            // `content` is one block, or (since 2025-11-25) possibly an array of blocks.
            let blocks = match result.get("content") {
                Some(Value::Array(a)) => a.clone(),
                Some(block) => vec![block.clone()],
                None => Vec::new(),
            };
            let texts: Vec<&str> = blocks
                .iter()
                .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect();
            if texts.is_empty() {
                tool_error("the sampling result has no text content")
            } else {
                text_result(texts.concat())
            }
        }
        Err(e) => tool_error(e.message),
    }
}

/// `elicitation/create`: a form with a name and a confirmation (or without fields), or a
/// URL-mode request (`url`).
async fn elicit(shared: &Shared, message: &str, url: bool, fields: bool) -> Value {
    let properties = if fields {
        json!({
            "name": {"type": "string", "title": "Name", "default": "Ada"},
            "confirm": {"type": "boolean", "title": "Confirm", "default": true},
        })
    } else {
        json!({})
    };
    let required = if fields { json!(["name"]) } else { json!([]) };
    let mut params = if url {
        json!({
            "mode": "url",
            "message": message,
            "url": "https://example.com/connect",
            "elicitationId": "testserver-1",
        })
    } else {
        json!({
            "message": message,
            "requestedSchema": {"type": "object", "properties": properties, "required": required},
        })
    };
    // `mode` exists since 2025-11-25 (URL mode); older clients never saw it.
    if !url && shared.protocol_version().as_str() >= "2025-11-25" {
        params["mode"] = json!("form");
    }
    match shared.request_client("elicitation/create", params).await {
        Ok(result) => {
            let mut out =
                json!({"action": result.get("action").cloned().unwrap_or(json!("unknown"))});
            if let Some(content) = result.get("content") {
                out["content"] = content.clone();
            }
            structured_result(out)
        }
        Err(e) => tool_error(format!("client error {}: {}", e.code, e.message)),
    }
}

/// Writes `bytes` bytes of noise lines (1 KiB each) to this process's stderr, fast (1 MiB per
/// write); returns how many were written. Blocking: run it on a thread.
pub(crate) fn flood_stderr(bytes: u64) -> std::io::Result<u64> {
    use std::io::Write;
    const LINE: usize = 1024;
    const CHUNK: usize = 1 << 20;
    let mut chunk = Vec::with_capacity(CHUNK);
    while chunk.len() < CHUNK {
        let n = chunk.len() / LINE;
        let head = format!("stderr flood line {n} ");
        chunk.extend_from_slice(head.as_bytes());
        chunk.extend(std::iter::repeat_n(b'x', LINE - 1 - head.len()));
        chunk.push(b'\n');
    }
    // stderr is locked per chunk, not for the whole flood: the server's own last words (and
    // its exit) must not wait for the flood to drain.
    let mut left = bytes;
    while left > 0 {
        let n = usize::try_from(left).unwrap_or(CHUNK).min(CHUNK);
        std::io::stderr().write_all(&chunk[..n])?;
        left -= n as u64;
    }
    Ok(bytes)
}

/// A JSON-RPC notification line of exactly `bytes` bytes (or the shortest possible).
fn oversized_line(bytes: usize) -> String {
    const HEAD: &str = r#"{"jsonrpc":"2.0","method":"x","params":""#;
    const TAIL: &str = r#""}"#;
    let pad = bytes.saturating_sub(HEAD.len() + TAIL.len());
    let mut line = String::with_capacity(HEAD.len() + pad + TAIL.len());
    line.push_str(HEAD);
    // `repeat` copies in doubling blocks: fast even in a debug build.
    line.push_str(&"A".repeat(pad));
    line.push_str(TAIL);
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oversized_line_has_the_asked_length() {
        assert_eq!(oversized_line(100_000).len(), 100_000);
        let short = oversized_line(1);
        assert!(serde_json::from_str::<Value>(&short).is_ok());
    }

    #[test]
    fn add_keeps_integers_integral() {
        assert_eq!(
            add(&json!({"a": 2, "b": 3})).unwrap()["structuredContent"]["sum"],
            json!(5)
        );
        assert_eq!(
            add(&json!({"a": 0.5, "b": 1})).unwrap()["structuredContent"]["sum"],
            json!(1.5)
        );
        assert!(add(&json!({"a": "x", "b": 1})).is_err());
    }
}
