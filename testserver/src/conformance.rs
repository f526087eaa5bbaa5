//! The fixtures of the official conformance suite's server scenarios
//! (`@modelcontextprotocol/conformance`, `conformance server --scenario NAME`): the tools,
//! resources and prompts its "everything server" is expected to have, served only with
//! [`crate::ServerConfig::conformance`] (`--conformance`), so that the in-repo server passes
//! those scenarios itself and a bridge in front of it can be held to the same verdicts.
//!
//! What each fixture does is what the scenario checks (names, shapes, the requests the tool
//! sends the client); the contents are this module's own (a 1×1 red PNG, a WAV of eight
//! samples of silence). Not here: the HTTP side of `test_reconnection` (the server closes the
//! call's stream after its priming event: see `crate::http`) and the DNS-rebinding check of
//! the `Host` and `Origin` headers (`crate::http::HttpConfig::check_host`).

use std::time::Duration;

use serde_json::{Value, json};

use crate::catalog::{object, tool};
use crate::connection::Shared;
use crate::protocol::LOGGER_NAME;

/// A 1×1 red PNG (RGB, 8 bits), base64.
pub(crate) const PNG_BASE64: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR42mP4z8AAAAMBAQD3A0FDAAAAAElFTkSuQmCC";

/// A WAV of eight 8-bit mono samples of silence at 8 kHz, base64.
pub(crate) const WAV_BASE64: &str =
    "UklGRiwAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQgAAACAgICAgICAgA==";

/// The tool whose call's SSE stream the HTTP server closes after the priming event, before
/// the answer (which a `GET` with `Last-Event-ID` then gets): scenario `server-sse-polling`.
pub(crate) const RECONNECTION_TOOL: &str = "test_reconnection";

/// How long the paced tools wait between their notifications (the scenarios ask for ~50 ms).
const PACE: Duration = Duration::from_millis(50);

/// The tools, in listing order.
pub(crate) fn tools() -> Vec<Value> {
    let none = || object(json!({}), &[]);
    let string = |d: &str| json!({"type": "string", "description": d});
    vec![
        tool("test_simple_text", "Return a simple text content", none()),
        tool("test_image_content", "Return an image content", none()),
        tool("test_audio_content", "Return an audio content", none()),
        tool(
            "test_embedded_resource",
            "Return an embedded resource",
            none(),
        ),
        tool(
            "test_multiple_content_types",
            "Return text, image and resource contents together",
            none(),
        ),
        tool(
            "test_tool_with_logging",
            "Send three log notifications (info) about 50 ms apart, then answer",
            none(),
        ),
        tool(
            "test_error_handling",
            "Always fail with a tool error (isError)",
            none(),
        ),
        tool(
            "test_tool_with_progress",
            "With _meta.progressToken, report progress 0, 50 and 100 of 100 about 50 ms apart",
            none(),
        ),
        tool(
            "test_sampling",
            "Ask the client for a completion of the prompt (sampling/createMessage)",
            object(json!({"prompt": string("the prompt to send")}), &["prompt"]),
        ),
        tool(
            "test_elicitation",
            "Ask the user for a username and an email (elicitation/create)",
            object(
                json!({"message": string("what to show the user")}),
                &["message"],
            ),
        ),
        tool(
            "test_elicitation_sep1034_defaults",
            "Elicit a form whose fields of every primitive type have defaults (SEP-1034)",
            none(),
        ),
        tool(
            "test_elicitation_sep1330_enums",
            "Elicit a form with the five enum shapes of SEP-1330",
            none(),
        ),
        tool(
            "json_schema_2020_12_tool",
            "Tool with JSON Schema 2020-12 features",
            json_schema_2020_12(),
        ),
        tool(
            RECONNECTION_TOOL,
            "Over HTTP the server closes this call's stream before answering; the answer comes \
             to a GET resuming it with Last-Event-ID",
            none(),
        ),
    ]
}

/// The input schema of `json_schema_2020_12_tool`: `$schema`, `$defs` with an `$anchor`, a
/// `$ref`, `allOf`/`anyOf`, `if`/`then`/`else` and `additionalProperties: false`.
fn json_schema_2020_12() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "$anchor": "addressDef",
                "type": "object",
                "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
            },
        },
        "properties": {
            "name": {"type": "string"},
            "address": {"$ref": "#/$defs/address"},
            "contactMethod": {"type": "string", "enum": ["phone", "email"]},
            "phone": {"type": "string"},
            "email": {"type": "string"},
        },
        "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
        "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
        "then": {"required": ["phone"]},
        "else": {"required": ["email"]},
        "additionalProperties": false,
    })
}

fn text(t: impl Into<String>) -> Value {
    json!({"type": "text", "text": t.into()})
}

fn image() -> Value {
    json!({"type": "image", "data": PNG_BASE64, "mimeType": "image/png"})
}

fn content(blocks: Vec<Value>) -> Value {
    json!({"content": blocks})
}

fn tool_error(t: impl Into<String>) -> Value {
    json!({"content": [text(t)], "isError": true})
}

/// Runs fixture tool `name` (`None`: not one of them). Argument problems and client errors
/// are tool errors (`isError`).
pub(crate) async fn call(
    shared: &Shared,
    name: &str,
    args: &Value,
    progress_token: Option<Value>,
) -> Option<Value> {
    let arg = |k: &str| args.get(k).and_then(Value::as_str).map(str::to_owned);
    Some(match name {
        "test_simple_text" => content(vec![text("This is a simple text response for testing.")]),
        "test_image_content" => content(vec![image()]),
        "test_audio_content" => content(vec![
            json!({"type": "audio", "data": WAV_BASE64, "mimeType": "audio/wav"}),
        ]),
        "test_embedded_resource" => content(vec![json!({
            "type": "resource",
            "resource": {
                "uri": "test://embedded-resource",
                "mimeType": "text/plain",
                "text": "This is an embedded resource content.",
            },
        })]),
        "test_multiple_content_types" => content(vec![
            text("Multiple content types test:"),
            image(),
            json!({
                "type": "resource",
                "resource": {
                    "uri": "test://mixed-content-resource",
                    "mimeType": "application/json",
                    "text": json!({"test": "data", "value": 123}).to_string(),
                },
            }),
        ]),
        "test_tool_with_logging" => {
            let steps = [
                "Tool execution started",
                "Tool processing data",
                "Tool execution completed",
            ];
            for (i, message) in steps.into_iter().enumerate() {
                if i > 0 {
                    tokio::time::sleep(PACE).await;
                }
                log_info(shared, message);
            }
            content(vec![text("Tool with logging executed successfully")])
        }
        "test_error_handling" => tool_error("This tool intentionally returns an error for testing"),
        "test_tool_with_progress" => {
            for (i, progress) in [0, 50, 100].into_iter().enumerate() {
                if i > 0 {
                    tokio::time::sleep(PACE).await;
                }
                if let Some(token) = &progress_token {
                    shared.notify(
                        "notifications/progress",
                        json!({"progressToken": token, "progress": progress, "total": 100,
                               "message": format!("{progress}% done")}),
                    );
                }
            }
            content(vec![text("Tool with progress executed successfully")])
        }
        "test_sampling" => {
            let Some(prompt) = arg("prompt") else {
                return Some(tool_error("argument `prompt` must be a string"));
            };
            let params = json!({
                "messages": [{"role": "user", "content": {"type": "text", "text": prompt}}],
                "maxTokens": 100,
            });
            match shared
                .request_client("sampling/createMessage", params)
                .await
            {
                Ok(r) => {
                    let said = r
                        .get("content")
                        .map(sampled_text)
                        .unwrap_or_else(|| r.to_string());
                    content(vec![text(format!("LLM response: {said}"))])
                }
                Err(e) => tool_error(format!("sampling failed: {}", e.message)),
            }
        }
        "test_elicitation" => {
            let Some(message) = arg("message") else {
                return Some(tool_error("argument `message` must be a string"));
            };
            let schema = json!({
                "type": "object",
                "properties": {
                    "username": {"type": "string", "description": "User's response"},
                    "email": {"type": "string", "description": "User's email address"},
                },
                "required": ["username", "email"],
            });
            elicit(shared, &message, schema, "User response").await
        }
        "test_elicitation_sep1034_defaults" => {
            let schema = json!({
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "User name", "default": "John Doe"},
                    "age": {"type": "integer", "description": "User age", "default": 30},
                    "score": {"type": "number", "description": "User score", "default": 95.5},
                    "status": {"type": "string", "description": "User status",
                               "enum": ["active", "inactive", "pending"], "default": "active"},
                    "verified": {"type": "boolean", "description": "Verification status",
                                 "default": true},
                },
                "required": [],
            });
            let message = "Please review your profile (every field has a default)";
            elicit(shared, message, schema, "Elicitation completed").await
        }
        "test_elicitation_sep1330_enums" => {
            let titled = |pairs: &[(&str, &str)]| -> Vec<Value> {
                pairs
                    .iter()
                    .map(|(c, t)| json!({"const": c, "title": t}))
                    .collect()
            };
            let schema = json!({
                "type": "object",
                "properties": {
                    "untitledSingle": {"type": "string",
                                       "enum": ["option1", "option2", "option3"]},
                    "titledSingle": {"type": "string", "oneOf": titled(&[
                        ("value1", "First Option"), ("value2", "Second Option"),
                        ("value3", "Third Option")])},
                    "legacyEnum": {"type": "string", "enum": ["opt1", "opt2", "opt3"],
                                   "enumNames": ["Option One", "Option Two", "Option Three"]},
                    "untitledMulti": {"type": "array", "items": {"type": "string",
                                      "enum": ["option1", "option2", "option3"]}},
                    "titledMulti": {"type": "array", "items": {"anyOf": titled(&[
                        ("value1", "First Choice"), ("value2", "Second Choice"),
                        ("value3", "Third Choice")])}},
                },
                "required": [],
            });
            let message = "Pick from each of the five kinds of enum";
            elicit(shared, message, schema, "Elicitation completed").await
        }
        "json_schema_2020_12_tool" => content(vec![text(format!(
            "json_schema_2020_12_tool called with {args}"
        ))]),
        RECONNECTION_TOOL => {
            // Answer a little later, so that the answer is not on the stream that was closed
            // in any case (it is kept for the resumption either way).
            tokio::time::sleep(PACE * 2).await;
            content(vec![text("Reconnection test completed successfully")])
        }
        _ => return None,
    })
}

/// A log notification at `info`, unless `logging/setLevel` asked for less.
fn log_info(shared: &Shared, message: &str) {
    let threshold = shared.session().log_level.clone();
    let info = crate::catalog::level_rank("info");
    let passes = threshold
        .as_deref()
        .and_then(crate::catalog::level_rank)
        .is_none_or(|t| info.is_some_and(|i| i >= t));
    if passes {
        shared.notify(
            "notifications/message",
            json!({"level": "info", "logger": LOGGER_NAME, "data": message}),
        );
    }
}

/// The text of a sampling result's `content` (one block or, since 2025-11-25, several).
fn sampled_text(content: &Value) -> String {
    let blocks = match content {
        Value::Array(a) => a.iter().collect(),
        block => vec![block],
    };
    blocks
        .iter()
        .filter_map(|b| b.get("text").and_then(Value::as_str))
        .collect::<Vec<_>>()
        .concat()
}

/// `elicitation/create` of a form; the answer told as `"{lead}: action=A, content={...}"`.
async fn elicit(shared: &Shared, message: &str, schema: Value, lead: &str) -> Value {
    let mut params = json!({"message": message, "requestedSchema": schema});
    if shared.protocol_version().as_str() >= "2025-11-25" {
        params["mode"] = json!("form");
    }
    match shared.request_client("elicitation/create", params).await {
        Ok(r) => {
            let action = r.get("action").and_then(Value::as_str).unwrap_or("unknown");
            let given = r.get("content").cloned().unwrap_or(json!({}));
            content(vec![text(format!(
                "{lead}: action={action}, content={given}"
            ))])
        }
        Err(e) => tool_error(format!("elicitation failed: {}", e.message)),
    }
}

/// The resources `resources/list` adds.
pub(crate) fn resources() -> Vec<Value> {
    vec![
        json!({"uri": "test://static-text", "name": "static-text",
               "description": "A static text resource", "mimeType": "text/plain"}),
        json!({"uri": "test://static-binary", "name": "static-binary",
               "description": "A static binary resource (a PNG)", "mimeType": "image/png"}),
        json!({"uri": "test://watched-resource", "name": "watched-resource",
               "description": "A resource to subscribe to", "mimeType": "text/plain"}),
    ]
}

/// The templates `resources/templates/list` adds.
pub(crate) fn templates() -> Vec<Value> {
    vec![json!({
        "uriTemplate": "test://template/{id}/data",
        "name": "template-data",
        "description": "A JSON resource made up for any id",
        "mimeType": "application/json",
    })]
}

/// The `contents` entry of fixture resource `uri` (`None`: not one of them).
pub(crate) fn read(uri: &str) -> Option<Value> {
    match uri {
        "test://static-text" => Some(json!({"uri": uri, "mimeType": "text/plain",
            "text": "This is the content of the static text resource."})),
        "test://static-binary" => {
            Some(json!({"uri": uri, "mimeType": "image/png", "blob": PNG_BASE64}))
        }
        "test://watched-resource" => Some(json!({"uri": uri, "mimeType": "text/plain",
            "text": "Watched resource content"})),
        _ => {
            let id = uri
                .strip_prefix("test://template/")?
                .strip_suffix("/data")
                .filter(|id| !id.is_empty() && !id.contains('/'))?;
            Some(json!({"uri": uri, "mimeType": "application/json",
                "text": json!({"id": id, "templateTest": true,
                               "data": format!("Data for ID: {id}")}).to_string()}))
        }
    }
}

/// The prompts `prompts/list` adds.
pub(crate) fn prompts() -> Vec<Value> {
    let arg = |name: &str, description: &str| json!({"name": name, "description": description, "required": true});
    vec![
        json!({"name": "test_simple_prompt", "description": "A prompt without arguments"}),
        json!({"name": "test_prompt_with_arguments",
               "description": "A prompt that says both its arguments",
               "arguments": [arg("arg1", "First test argument"),
                             arg("arg2", "Second test argument")]}),
        json!({"name": "test_prompt_with_embedded_resource",
               "description": "A prompt embedding a resource",
               "arguments": [arg("resourceUri", "URI of the resource to embed")]}),
        json!({"name": "test_prompt_with_image", "description": "A prompt with an image"}),
    ]
}

fn user(content: Value) -> Value {
    json!({"role": "user", "content": content})
}

/// `prompts/get` of fixture prompt `name` (`None`: not one of them; `Some(Err)`: a required
/// argument is missing, named).
pub(crate) fn get_prompt(name: &str, args: &Value) -> Option<Result<Value, String>> {
    let arg = |k: &str| {
        args.get(k)
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| format!("missing required argument: {k}"))
    };
    let messages = match name {
        "test_simple_prompt" => Ok(vec![user(text("This is a simple prompt for testing."))]),
        "test_prompt_with_arguments" => arg("arg1").and_then(|a1| {
            let a2 = arg("arg2")?;
            Ok(vec![user(text(format!(
                "Prompt with arguments: arg1='{a1}', arg2='{a2}'"
            )))])
        }),
        "test_prompt_with_embedded_resource" => arg("resourceUri").map(|uri| {
            vec![
                user(json!({"type": "resource", "resource": {"uri": uri,
                    "mimeType": "text/plain", "text": "Embedded resource content for testing."}})),
                user(text("Please process the embedded resource above.")),
            ]
        }),
        "test_prompt_with_image" => Ok(vec![
            user(image()),
            user(text("Please analyze the image above.")),
        ]),
        _ => return None,
    };
    Some(messages.map(|m| json!({"messages": m})))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_names_are_unique_and_follow_the_naming_rule() {
        let names: Vec<String> = tools()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect();
        let unique: std::collections::BTreeSet<&String> = names.iter().collect();
        assert_eq!(unique.len(), names.len());
        for n in &names {
            assert!(
                n.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c)),
                "{n}"
            );
        }
        for t in tools() {
            assert!(t["description"].is_string() && t["inputSchema"].is_object());
        }
    }

    #[test]
    fn the_2020_12_schema_keeps_its_keywords() {
        let t = tools()
            .into_iter()
            .find(|t| t["name"] == "json_schema_2020_12_tool")
            .unwrap();
        let s = &t["inputSchema"];
        assert_eq!(s["$schema"], "https://json-schema.org/draft/2020-12/schema");
        assert_eq!(s["$defs"]["address"]["$anchor"], "addressDef");
        assert_eq!(s["additionalProperties"], false);
        assert!(s["allOf"][0]["anyOf"].is_array());
        assert!(s["if"].is_object() && s["then"].is_object() && s["else"].is_object());
    }

    #[test]
    fn media_are_a_png_and_a_wav() {
        // The base64 of "\x89PNG\r\n\x1a\n" and of "RIFF".
        assert!(PNG_BASE64.starts_with("iVBORw0KGgo"));
        assert!(WAV_BASE64.starts_with("UklGR"));
    }

    #[test]
    fn resources_read_and_templates_substitute() {
        for r in resources() {
            let uri = r["uri"].as_str().unwrap();
            let c = read(uri).unwrap();
            assert_eq!(c["uri"], uri);
            assert_eq!(c["mimeType"], r["mimeType"]);
        }
        assert!(read("test://static-binary").unwrap()["blob"].is_string());
        let t = read("test://template/123/data").unwrap();
        assert!(t["text"].as_str().unwrap().contains("123"));
        assert_eq!(read("test://template//data"), None);
        assert_eq!(read("test://template/1/2/data"), None);
        assert_eq!(read("test://static/1"), None);
    }

    #[test]
    fn prompts_substitute_their_arguments() {
        let names: Vec<Value> = prompts().iter().map(|p| p["name"].clone()).collect();
        for n in &names {
            let args = json!({"arg1": "A", "arg2": "B", "resourceUri": "test://x"});
            let r = get_prompt(n.as_str().unwrap(), &args).unwrap().unwrap();
            assert!(!r["messages"].as_array().unwrap().is_empty(), "{n}");
        }
        let r = get_prompt(
            "test_prompt_with_arguments",
            &json!({"arg1": "testValue1", "arg2": "testValue2"}),
        )
        .unwrap()
        .unwrap();
        let said = r["messages"].to_string();
        assert!(said.contains("testValue1") && said.contains("testValue2"));
        let embedded = get_prompt(
            "test_prompt_with_embedded_resource",
            &json!({"resourceUri": "test://example-resource"}),
        )
        .unwrap()
        .unwrap();
        assert_eq!(embedded["messages"][0]["content"]["type"], "resource");
        assert_eq!(
            get_prompt("test_prompt_with_arguments", &json!({"arg1": "x"})),
            Some(Err("missing required argument: arg2".to_owned()))
        );
        assert_eq!(get_prompt("greeting", &json!({})), None);
    }

    /// One connection served in process, driven with raw JSON lines.
    struct Peer {
        lines: tokio::io::Lines<tokio::io::BufReader<tokio::io::ReadHalf<tokio::io::DuplexStream>>>,
        write: tokio::io::WriteHalf<tokio::io::DuplexStream>,
    }

    const WAIT: Duration = Duration::from_secs(5);

    impl Peer {
        async fn start(config: crate::ServerConfig) -> Peer {
            use tokio::io::AsyncBufReadExt;
            let (client, server) = tokio::io::duplex(1 << 16);
            let (sr, sw) = tokio::io::split(server);
            tokio::spawn(crate::serve(sr, sw, config));
            let (cr, cw) = tokio::io::split(client);
            let mut p = Peer {
                lines: tokio::io::BufReader::new(cr).lines(),
                write: cw,
            };
            p.send(
                json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "clientInfo": {"name": "t", "version": "1"},
                "capabilities": {"sampling": {}, "elicitation": {"form": {}}}}}),
            )
            .await;
            assert_eq!(p.next().await["id"], 0);
            p.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
                .await;
            p
        }

        async fn send(&mut self, msg: Value) {
            use tokio::io::AsyncWriteExt;
            let mut line = msg.to_string().into_bytes();
            line.push(b'\n');
            self.write.write_all(&line).await.unwrap();
        }

        async fn next(&mut self) -> Value {
            let line = tokio::time::timeout(WAIT, self.lines.next_line())
                .await
                .expect("the server said nothing")
                .unwrap()
                .expect("the server hung up");
            serde_json::from_str(&line).unwrap()
        }

        /// Calls tool `name`; what the server sent before the answer, and the answer.
        async fn call(&mut self, id: u64, name: &str, params: Value) -> (Vec<Value>, Value) {
            let mut p = params;
            p["name"] = json!(name);
            self.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": p}))
                .await;
            let mut before = Vec::new();
            loop {
                let m = self.next().await;
                if m["id"] == id && m.get("method").is_none() {
                    return (before, m);
                }
                before.push(m);
            }
        }
    }

    fn conformance() -> crate::ServerConfig {
        crate::ServerConfig {
            conformance: true,
            ..crate::ServerConfig::echo()
        }
    }

    #[tokio::test]
    async fn fixtures_are_listed_and_served_only_with_the_flag() {
        let mut plain = Peer::start(crate::ServerConfig::echo()).await;
        plain
            .send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
            .await;
        let list = plain.next().await;
        let n_plain = list["result"]["tools"].as_array().unwrap().len();
        assert!(!list.to_string().contains("test_simple_text"));
        let (_, r) = plain.call(2, "test_simple_text", json!({})).await;
        assert!(r["error"].is_object(), "{r}");
        plain
            .send(json!({"jsonrpc": "2.0", "id": 3, "method": "prompts/get",
                         "params": {"name": "test_simple_prompt"}}))
            .await;
        assert!(plain.next().await["error"].is_object());

        let mut p = Peer::start(conformance()).await;
        p.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
            .await;
        let list = p.next().await;
        let n = list["result"]["tools"].as_array().unwrap().len();
        assert_eq!(n, n_plain + tools().len());
        let (_, r) = p.call(2, "test_simple_text", json!({})).await;
        assert_eq!(
            r["result"]["content"][0]["text"],
            "This is a simple text response for testing."
        );
        let (_, r) = p.call(3, "test_error_handling", json!({})).await;
        assert_eq!(r["result"]["isError"], true);
        p.send(
            json!({"jsonrpc": "2.0", "id": 4, "method": "resources/read",
                      "params": {"uri": "test://template/123/data"}}),
        )
        .await;
        let r = p.next().await;
        assert!(
            r["result"]["contents"][0]["text"]
                .as_str()
                .unwrap()
                .contains("123")
        );
        p.send(json!({"jsonrpc": "2.0", "id": 5, "method": "prompts/get",
                      "params": {"name": "test_prompt_with_arguments", "arguments": {"arg1": "x"}}}))
            .await;
        assert_eq!(p.next().await["error"]["code"], -32602);
        // The catalogue of before is still there.
        let (_, r) = p
            .call(6, "echo", json!({"arguments": {"message": "hi"}}))
            .await;
        assert_eq!(r["result"]["content"][0]["text"], "Echo: hi");
    }

    #[tokio::test]
    async fn progress_and_logging_fixtures_notify_before_answering() {
        let mut p = Peer::start(conformance()).await;
        let (before, r) = p
            .call(
                1,
                "test_tool_with_progress",
                json!({"_meta": {"progressToken": "t1"}}),
            )
            .await;
        assert!(r["result"]["content"].is_array());
        let progress: Vec<&Value> = before
            .iter()
            .filter(|m| m["method"] == "notifications/progress")
            .map(|m| &m["params"]["progress"])
            .collect();
        assert_eq!(progress, [&json!(0), &json!(50), &json!(100)]);
        assert!(before.iter().all(|m| m["params"]["progressToken"] == "t1"));

        let (before, _) = p.call(2, "test_tool_with_logging", json!({})).await;
        let logs = before
            .iter()
            .filter(|m| m["method"] == "notifications/message" && m["params"]["level"] == "info")
            .count();
        assert_eq!(logs, 3);
        // Above info, nothing is logged.
        p.send(
            json!({"jsonrpc": "2.0", "id": 3, "method": "logging/setLevel",
                      "params": {"level": "error"}}),
        )
        .await;
        assert_eq!(p.next().await["id"], 3);
        let (before, _) = p.call(4, "test_tool_with_logging", json!({})).await;
        assert!(before.is_empty(), "{before:?}");
    }

    #[tokio::test]
    async fn elicitation_and_sampling_fixtures_ask_the_client() {
        let mut p = Peer::start(conformance()).await;
        p.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": "test_elicitation_sep1034_defaults", "arguments": {}}}))
            .await;
        let ask = p.next().await;
        assert_eq!(ask["method"], "elicitation/create");
        let props = &ask["params"]["requestedSchema"]["properties"];
        assert_eq!(props["name"]["default"], "John Doe");
        assert_eq!(props["age"]["default"], 30);
        assert_eq!(props["score"]["default"], 95.5);
        assert_eq!(props["status"]["default"], "active");
        assert_eq!(props["verified"]["default"], true);
        p.send(json!({"jsonrpc": "2.0", "id": ask["id"],
                      "result": {"action": "accept", "content": {"name": "Jane"}}}))
            .await;
        let r = p.next().await;
        let said = r["result"]["content"][0]["text"].as_str().unwrap();
        assert!(
            said.contains("action=accept") && said.contains("Jane"),
            "{said}"
        );

        p.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                      "params": {"name": "test_sampling", "arguments": {"prompt": "hello"}}}))
            .await;
        let ask = p.next().await;
        assert_eq!(ask["method"], "sampling/createMessage");
        assert_eq!(ask["params"]["messages"][0]["content"]["text"], "hello");
        p.send(
            json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"role": "assistant",
                      "content": {"type": "text", "text": "hi there"}, "model": "m"}}),
        )
        .await;
        let r = p.next().await;
        assert_eq!(r["result"]["content"][0]["text"], "LLM response: hi there");
    }

    async fn http_server() -> crate::http::HttpServer {
        let mut config = crate::http::HttpConfig::new(conformance());
        config.check_host = true;
        crate::http::serve("127.0.0.1:0".parse().unwrap(), config)
            .await
            .unwrap()
    }

    fn initialize() -> String {
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}})
        .to_string()
    }

    #[tokio::test]
    async fn a_foreign_host_or_origin_is_refused_over_http() {
        let server = http_server().await;
        let http = reqwest::Client::new();
        let port = server.addr().port();
        let post = |host: String, origin: Option<&str>| {
            let mut req = http
                .post(server.url())
                .header("host", host)
                .header("accept", "application/json, text/event-stream")
                .header("content-type", "application/json")
                .body(initialize());
            if let Some(o) = origin {
                req = req.header("origin", o);
            }
            req.send()
        };
        let status = |r: reqwest::Response| r.status().as_u16();
        assert_eq!(
            status(post("evil.example.com".into(), None).await.unwrap()),
            403
        );
        let evil = post(format!("127.0.0.1:{port}"), Some("http://evil.example.com"));
        assert_eq!(status(evil.await.unwrap()), 403);
        for (host, origin) in [
            (format!("127.0.0.1:{port}"), None),
            (
                format!("localhost:{port}"),
                Some(format!("http://localhost:{port}")),
            ),
            (
                format!("[::1]:{port}"),
                Some("https://127.0.0.1".to_owned()),
            ),
        ] {
            let r = post(host.clone(), origin.as_deref()).await.unwrap();
            assert_eq!(status(r), 200, "{host} {origin:?}");
        }
    }

    #[tokio::test]
    async fn the_reconnection_call_is_answered_on_the_resumed_stream() {
        let server = http_server().await;
        let http = reqwest::Client::new();
        let init = http
            .post(server.url())
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .body(initialize())
            .send()
            .await
            .unwrap();
        let session = init.headers()[crate::http::SESSION_HEADER]
            .to_str()
            .unwrap()
            .to_owned();
        drop(init);
        let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                          "params": {"name": RECONNECTION_TOOL, "arguments": {}}});
        let stream = http
            .post(server.url())
            .header(crate::http::SESSION_HEADER, &session)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .body(call.to_string())
            .send()
            .await
            .unwrap();
        // The stream ends after its priming event, without the answer.
        let first = tokio::time::timeout(WAIT, stream.text())
            .await
            .unwrap()
            .unwrap();
        assert!(
            first.contains("retry:") && !first.contains("Reconnection"),
            "{first}"
        );
        let last = first
            .lines()
            .find_map(|l| l.strip_prefix("id: "))
            .expect("a priming event id")
            .to_owned();
        let resumed = http
            .get(server.url())
            .header(crate::http::SESSION_HEADER, &session)
            .header("accept", "text/event-stream")
            .header("last-event-id", &last)
            .send()
            .await
            .unwrap();
        let rest = tokio::time::timeout(WAIT, resumed.text())
            .await
            .unwrap()
            .unwrap();
        assert!(
            rest.contains(r#""id":7"#) && rest.contains("Reconnection test completed"),
            "{rest}"
        );
    }
}
