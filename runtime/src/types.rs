//! Protocol types of the handshake era (2024-11-05 … 2025-11-25) that the typed calls return.
//!
//! Why our own types: `rust-mcp-schema` 2.0 was evaluated (shared/design/dependency-notes.md):
//! its `2025_11_25` and `2026_07_28` features cannot be built together, and the second era is
//! coming to this client. These types are deliberately lenient: every struct keeps the fields
//! it does not name in `extra`, optional fields default, and nothing is rejected for having
//! more than the schema says, so a newer server never breaks an older client.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A tool the server offers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tool {
    /// Its name, used to call it.
    pub name: String,
    /// A human title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The JSON Schema of its arguments.
    #[serde(default)]
    pub input_schema: Value,
    /// The JSON Schema of its `structuredContent`, if it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// Hints (untrusted unless the server is).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Value>,
    /// Everything else the server sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One page of `tools/list`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListToolsResult {
    /// The tools.
    #[serde(default)]
    pub tools: Vec<Tool>,
    /// Present when there are more pages (an empty string is a valid cursor).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// One piece of content (text, image, audio, resource link, embedded resource, ...).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Content {
    /// `text`, `image`, `audio`, `resource_link`, `resource`, ...
    #[serde(rename = "type")]
    pub kind: String,
    /// The text, for text content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Everything else (data, mimeType, uri, resource, annotations, ...).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Content {
    /// The text of a text content.
    pub fn as_text(&self) -> Option<&str> {
        (self.kind == "text")
            .then_some(self.text.as_deref())
            .flatten()
    }
}

/// The result of `tools/call`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolResult {
    /// The content.
    #[serde(default)]
    pub content: Vec<Content>,
    /// Structured output, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// Whether the tool reported an error (a tool error, not a protocol error).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// Everything else.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl CallToolResult {
    /// Whether the tool reported an error.
    pub fn failed(&self) -> bool {
        self.is_error == Some(true)
    }

    /// All text content joined by newlines.
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(Content::as_text)
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// A resource.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Resource {
    /// Its URI.
    pub uri: String,
    /// Its name.
    #[serde(default)]
    pub name: String,
    /// A human title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// A description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Everything else.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One page of `resources/list`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListResourcesResult {
    /// The resources.
    #[serde(default)]
    pub resources: Vec<Resource>,
    /// The next page's cursor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// A resource template.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceTemplate {
    /// The RFC 6570 URI template.
    pub uri_template: String,
    /// Its name.
    #[serde(default)]
    pub name: String,
    /// A description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Everything else.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One page of `resources/templates/list`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListResourceTemplatesResult {
    /// The templates.
    #[serde(default)]
    pub resource_templates: Vec<ResourceTemplate>,
    /// The next page's cursor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// The contents of a resource (text or base64 blob).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceContents {
    /// Its URI.
    pub uri: String,
    /// Its MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Text contents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Base64 binary contents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blob: Option<String>,
    /// Everything else.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The result of `resources/read`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReadResourceResult {
    /// The contents.
    #[serde(default)]
    pub contents: Vec<ResourceContents>,
}

/// An argument of a prompt.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PromptArgument {
    /// Its name.
    pub name: String,
    /// A description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether it must be given.
    #[serde(default)]
    pub required: bool,
}

/// A prompt template.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Prompt {
    /// Its name.
    pub name: String,
    /// A human title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// A description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its arguments.
    #[serde(default)]
    pub arguments: Vec<PromptArgument>,
}

/// One page of `prompts/list`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListPromptsResult {
    /// The prompts.
    #[serde(default)]
    pub prompts: Vec<Prompt>,
    /// The next page's cursor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// A message of a prompt.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PromptMessage {
    /// `user` or `assistant`.
    pub role: String,
    /// Its content.
    pub content: Content,
}

/// The result of `prompts/get`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GetPromptResult {
    /// A description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The messages.
    #[serde(default)]
    pub messages: Vec<PromptMessage>,
}

/// What `completion/complete` completes an argument of.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CompleteRef {
    /// A prompt, by name.
    Prompt(String),
    /// A resource template, by URI template.
    Resource(String),
}

impl CompleteRef {
    pub(crate) fn to_json(&self) -> Value {
        match self {
            CompleteRef::Prompt(name) => serde_json::json!({"type": "ref/prompt", "name": name}),
            CompleteRef::Resource(uri) => serde_json::json!({"type": "ref/resource", "uri": uri}),
        }
    }
}

/// Completion values.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Completion {
    /// Up to 100 values.
    #[serde(default)]
    pub values: Vec<String>,
    /// How many there are in all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
    /// Whether there are more than these.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub has_more: Option<bool>,
}

/// The result of `completion/complete`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CompleteResult {
    /// The completion.
    pub completion: Completion,
}

/// Logging levels (RFC 5424), for `logging/setLevel` and log notifications.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[allow(missing_docs)]
pub enum LoggingLevel {
    Debug,
    Info,
    Notice,
    Warning,
    Error,
    Critical,
    Alert,
    Emergency,
}

impl LoggingLevel {
    /// The level's name on the wire (`"info"`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            LoggingLevel::Debug => "debug",
            LoggingLevel::Info => "info",
            LoggingLevel::Notice => "notice",
            LoggingLevel::Warning => "warning",
            LoggingLevel::Error => "error",
            LoggingLevel::Critical => "critical",
            LoggingLevel::Alert => "alert",
            LoggingLevel::Emergency => "emergency",
        }
    }
}

/// Progress of a call, from `notifications/progress`.
#[derive(Clone, Debug, PartialEq)]
pub struct Progress {
    /// Progress so far (increases).
    pub progress: f64,
    /// The total, if known.
    pub total: Option<f64>,
    /// A message, if any.
    pub message: Option<String>,
}

impl Progress {
    pub(crate) fn from_params(p: &Value) -> Self {
        Progress {
            progress: p.get("progress").and_then(Value::as_f64).unwrap_or(0.0),
            total: p.get("total").and_then(Value::as_f64),
            message: p.get("message").and_then(Value::as_str).map(str::to_owned),
        }
    }
}

/// A notification from the server as [`crate::Client::notifications`] delivers it: exactly as
/// sent (`method`, `params`) and parsed where the method is known (`parsed`). Nothing is turned
/// back into JSON: `--json` output and forwarding use the fields as received.
#[derive(Clone, Debug, PartialEq)]
pub struct Notification {
    /// The method, e.g. `notifications/message`.
    pub method: String,
    /// The params as sent.
    pub params: Option<Value>,
    /// The parsed form.
    pub parsed: ServerNotification,
}

impl Notification {
    /// Parses a notification received as `method` and `params`.
    pub fn new(method: String, params: Option<Value>) -> Self {
        let parsed = ServerNotification::parse(&method, params.clone());
        Notification {
            method,
            params,
            parsed,
        }
    }
}

/// A notification from the server, parsed where the method is known.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum ServerNotification {
    /// `notifications/tools/list_changed`.
    ToolsListChanged,
    /// `notifications/resources/list_changed`.
    ResourcesListChanged,
    /// `notifications/prompts/list_changed`.
    PromptsListChanged,
    /// `notifications/resources/updated`.
    ResourceUpdated {
        /// The resource.
        uri: String,
    },
    /// `notifications/message` (a log message).
    Log {
        /// Its level.
        level: Option<LoggingLevel>,
        /// The logger's name.
        logger: Option<String>,
        /// The data.
        data: Value,
    },
    /// `notifications/progress` not tied to a call of this client's that asked for progress.
    Progress {
        /// The token.
        token: Value,
        /// The progress.
        progress: Progress,
    },
    /// `notifications/cancelled` (the server cancelled one of its requests to us).
    Cancelled {
        /// The server's request id.
        request_id: Value,
        /// Why.
        reason: Option<String>,
    },
    /// Anything else.
    Other {
        /// The method.
        method: String,
        /// The params.
        params: Option<Value>,
    },
}

impl ServerNotification {
    /// Parses a notification by its method.
    pub fn parse(method: &str, params: Option<Value>) -> Self {
        let p = params.clone().unwrap_or(Value::Null);
        let s = |k: &str| p.get(k).and_then(Value::as_str).map(str::to_owned);
        match method {
            "notifications/tools/list_changed" => ServerNotification::ToolsListChanged,
            "notifications/resources/list_changed" => ServerNotification::ResourcesListChanged,
            "notifications/prompts/list_changed" => ServerNotification::PromptsListChanged,
            "notifications/resources/updated" => ServerNotification::ResourceUpdated {
                uri: s("uri").unwrap_or_default(),
            },
            "notifications/message" => ServerNotification::Log {
                level: p
                    .get("level")
                    .and_then(|l| serde_json::from_value(l.clone()).ok()),
                logger: s("logger"),
                data: p.get("data").cloned().unwrap_or(Value::Null),
            },
            "notifications/progress" => ServerNotification::Progress {
                token: p.get("progressToken").cloned().unwrap_or(Value::Null),
                progress: Progress::from_params(&p),
            },
            "notifications/cancelled" => ServerNotification::Cancelled {
                request_id: p.get("requestId").cloned().unwrap_or(Value::Null),
                reason: s("reason"),
            },
            _ => ServerNotification::Other {
                method: method.to_owned(),
                params,
            },
        }
    }
}

/// What the server said in the handshake: the machine's own type (its `name()`, `version()`
/// and `has_capability()` read the JSON it keeps; [`ServerCapabilities::of`] types them).
pub use mcp_machine::ServerInfo;

/// A capability with an optional `listChanged` (tools, prompts).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListCapability {
    /// The server sends `notifications/*/list_changed`.
    #[serde(default)]
    pub list_changed: bool,
    /// Everything else the server sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The `resources` capability.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourcesCapability {
    /// `resources/subscribe` is supported.
    #[serde(default)]
    pub subscribe: bool,
    /// The server sends `notifications/resources/list_changed`.
    #[serde(default)]
    pub list_changed: bool,
    /// Everything else the server sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// What the server declared it offers, typed. A capability is `Some` when declared (an empty
/// object declares it); what this type does not name is kept in `extra` (and `experimental`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerCapabilities {
    /// `tools/list`, `tools/call`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<ListCapability>,
    /// `resources/*`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourcesCapability>,
    /// `prompts/*`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompts: Option<ListCapability>,
    /// `logging/setLevel` and log notifications.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logging: Option<Value>,
    /// `completion/complete`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completions: Option<Value>,
    /// Experimental, non-standard capabilities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub experimental: Option<Map<String, Value>>,
    /// Everything else the server declared (`tasks`, `extensions`, ...).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ServerCapabilities {
    /// The capabilities in a handshake's answer. Leniently: a capability whose shape is wrong
    /// (`"tools": true`) counts as declared with defaults, never as an error.
    pub fn of(info: &ServerInfo) -> Self {
        Self::from_value(&info.capabilities)
    }

    /// The capabilities of a `capabilities` JSON object (see [`ServerCapabilities::of`]).
    pub fn from_value(caps: &Value) -> Self {
        if let Ok(typed) = serde_json::from_value::<ServerCapabilities>(caps.clone()) {
            return typed;
        }
        // Field by field, so one malformed capability does not hide the others.
        let field = |name: &str| caps.get(name).filter(|v| !v.is_null());
        let list =
            |name: &str| field(name).map(|v| serde_json::from_value(v.clone()).unwrap_or_default());
        ServerCapabilities {
            tools: list("tools"),
            resources: field("resources")
                .map(|v| serde_json::from_value(v.clone()).unwrap_or_default()),
            prompts: list("prompts"),
            logging: field("logging").cloned(),
            completions: field("completions").cloned(),
            experimental: field("experimental").and_then(|v| v.as_object().cloned()),
            extra: Map::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lenient_parsing_keeps_extras() {
        let t: Tool =
            serde_json::from_value(json!({"name": "x", "inputSchema": {}, "icons": [1]})).unwrap();
        assert_eq!(t.extra["icons"], json!([1]));
        let r: CallToolResult = serde_json::from_value(
            json!({"content": [{"type": "text", "text": "hi"}, {"type": "image", "data": "AA"}]}),
        )
        .unwrap();
        assert_eq!(r.text(), "hi");
        assert!(!r.failed());
    }

    #[test]
    fn server_capabilities_are_typed_leniently() {
        let caps = ServerCapabilities::from_value(&json!({
            "tools": {"listChanged": true}, "resources": {"subscribe": true},
            "logging": {}, "tasks": {"list": {}}
        }));
        assert!(caps.tools.as_ref().is_some_and(|t| t.list_changed));
        assert!(
            caps.resources
                .as_ref()
                .is_some_and(|r| r.subscribe && !r.list_changed)
        );
        assert!(caps.prompts.is_none() && caps.logging.is_some());
        assert_eq!(caps.extra["tasks"], json!({"list": {}}));
        // A malformed capability is still declared, and hides nothing else.
        let odd = ServerCapabilities::from_value(&json!({"tools": true, "prompts": {}}));
        assert_eq!(odd.tools, Some(ListCapability::default()));
        assert!(odd.prompts.is_some());
    }

    #[test]
    fn notifications_parse() {
        let n = ServerNotification::parse(
            "notifications/message",
            Some(json!({"level": "error", "data": "d"})),
        );
        assert_eq!(
            n,
            ServerNotification::Log {
                level: Some(LoggingLevel::Error),
                logger: None,
                data: json!("d")
            }
        );
        assert!(matches!(
            ServerNotification::parse("x/y", None),
            ServerNotification::Other { .. }
        ));
    }
}
