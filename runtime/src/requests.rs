//! Typed params and results of the server's requests to the client: sampling
//! (`sampling/createMessage`, with tools), elicitation (`elicitation/create`, form and URL
//! modes) and roots (`roots/list`).
//!
//! Lenient on input: every params struct keeps the fields it does not name in `extra`, and
//! optional fields default, so a newer server never breaks the handler. Strict on output: a
//! result's closed sets are enums ([`Role`], [`ElicitAction`]), so a typo such as `"acton"`
//! does not compile instead of failing on the server; `extra` on a result adds fields for
//! extensions.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::types::{Content, Tool};

/// Who speaks in a sampled conversation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The user.
    User,
    /// The model.
    Assistant,
}

/// A message's content: one block, or several (sampling with tools sends arrays).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum MessageContent {
    /// One content block.
    One(Content),
    /// Several content blocks.
    Many(Vec<Content>),
}

impl MessageContent {
    /// One text block.
    pub fn text(text: impl Into<String>) -> Self {
        MessageContent::One(Content {
            kind: "text".into(),
            text: Some(text.into()),
            extra: Map::new(),
        })
    }

    /// Every block, in order.
    pub fn blocks(&self) -> &[Content] {
        match self {
            MessageContent::One(c) => std::slice::from_ref(c),
            MessageContent::Many(v) => v,
        }
    }

    /// The text of the text blocks, joined by newlines.
    pub fn joined_text(&self) -> String {
        let texts: Vec<&str> = self.blocks().iter().filter_map(Content::as_text).collect();
        texts.join("\n")
    }
}

/// One message of a sampling request.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SamplingMessage {
    /// Who says it.
    pub role: Role,
    /// What is said.
    pub content: MessageContent,
    /// Everything else the server sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The server's model preferences (hints; the client chooses).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelPreferences {
    /// Model names or families, in order of preference (each `{name}`).
    #[serde(default)]
    pub hints: Vec<Value>,
    /// 0..1: how much cost matters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_priority: Option<f64>,
    /// 0..1: how much speed matters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speed_priority: Option<f64>,
    /// 0..1: how much capability matters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intelligence_priority: Option<f64>,
    /// Everything else the server sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The params of `sampling/createMessage`: the server asks the host's model for a message.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateMessageParams {
    /// The conversation so far.
    #[serde(default)]
    pub messages: Vec<SamplingMessage>,
    /// The server's preferences.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_preferences: Option<ModelPreferences>,
    /// A system prompt the server asks for (the client may change or omit it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// `none`, `thisServer` or `allServers` (the last two are deprecated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include_context: Option<String>,
    /// Sampling temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Most tokens to sample (required by the spec; `None` if the server left it out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    /// Stop sequences.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stop_sequences: Vec<String>,
    /// Provider-specific metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
    /// Tools the model may call (2025-11-25; only when the client declared `sampling.tools`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<Tool>,
    /// How the model may use the tools (`{mode: "auto" | "required" | "none"}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<Value>,
    /// Everything else the server sent (`_meta` included).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The result of `sampling/createMessage`: the sampled message.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateMessageResult {
    /// Normally [`Role::Assistant`].
    pub role: Role,
    /// The sampled content (tool calls as `tool_use` blocks).
    pub content: MessageContent,
    /// The model that sampled it.
    pub model: String,
    /// `endTurn`, `stopSequence`, `maxTokens`, `toolUse`, or another reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    /// Extra fields to send (extensions, `_meta`).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl CreateMessageResult {
    /// An assistant's text answer from `model`, ended normally (`endTurn`).
    pub fn text(model: impl Into<String>, text: impl Into<String>) -> Self {
        CreateMessageResult {
            role: Role::Assistant,
            content: MessageContent::text(text),
            model: model.into(),
            stop_reason: Some("endTurn".into()),
            extra: Map::new(),
        }
    }
}

/// The params of `elicitation/create`: the server asks the user something, in one of two modes.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum ElicitParams {
    /// Form mode (also a request without `mode`): fill in a flat form.
    Form(FormElicitation),
    /// URL mode (2025-11-25): open a URL out of band (only when declared; mcpc asks first).
    Url(UrlElicitation),
}

impl ElicitParams {
    /// Reads the params of an `elicitation/create` request (`mode` absent means form).
    pub fn from_value(params: Value) -> Result<Self, serde_json::Error> {
        match params.get("mode").and_then(Value::as_str) {
            Some("url") => serde_json::from_value(params).map(ElicitParams::Url),
            _ => serde_json::from_value(params).map(ElicitParams::Form),
        }
    }

    /// The message shown to the user.
    pub fn message(&self) -> &str {
        match self {
            ElicitParams::Form(f) => &f.message,
            ElicitParams::Url(u) => &u.message,
        }
    }
}

/// A form-mode elicitation.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FormElicitation {
    /// What the server asks.
    #[serde(default)]
    pub message: String,
    /// The form: a JSON Schema object of primitive properties (`properties`, `required`).
    #[serde(default)]
    pub requested_schema: Value,
    /// Everything else the server sent (`mode`, `_meta` included).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A URL-mode elicitation.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UrlElicitation {
    /// Why the user should open the URL.
    #[serde(default)]
    pub message: String,
    /// The URL to open (show its host before opening it; never prefetch it).
    #[serde(default)]
    pub url: String,
    /// The server's id for this elicitation.
    #[serde(default)]
    pub elicitation_id: String,
    /// Everything else the server sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// What the user did with an elicitation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ElicitAction {
    /// Submitted (form: with content; URL: agreed to open it).
    Accept,
    /// Explicitly said no.
    Decline,
    /// Dismissed without choosing.
    Cancel,
}

/// The result of `elicitation/create`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ElicitResult {
    /// What the user did.
    pub action: ElicitAction,
    /// The form's values (accepted form mode only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Map<String, Value>>,
    /// Extra fields to send.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ElicitResult {
    /// Accepted in form mode, with the form's values.
    pub fn accept(content: Map<String, Value>) -> Self {
        ElicitResult {
            action: ElicitAction::Accept,
            content: Some(content),
            extra: Map::new(),
        }
    }

    /// Accepted in form mode, with the form's values given as anything serializable to a
    /// JSON object (`json!({...})`, a struct); an error, not an empty form, if it is not one.
    pub fn accept_with(content: impl Serialize) -> Result<Self, serde_json::Error> {
        match serde_json::to_value(content)? {
            Value::Object(map) => Ok(Self::accept(map)),
            other => Err(serde::de::Error::custom(format!(
                "elicitation content must be a JSON object, not {other}"
            ))),
        }
    }

    /// Accepted in URL mode: the user agreed to open the URL (no content).
    pub fn accept_url() -> Self {
        Self::without_content(ElicitAction::Accept)
    }

    /// Declined.
    pub fn decline() -> Self {
        Self::without_content(ElicitAction::Decline)
    }

    /// Cancelled.
    pub fn cancel() -> Self {
        Self::without_content(ElicitAction::Cancel)
    }

    fn without_content(action: ElicitAction) -> Self {
        ElicitResult {
            action,
            content: None,
            extra: Map::new(),
        }
    }
}

/// A root: a directory or file the server may work in (a `file://` URI).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Root {
    /// The URI (`file:///home/me/project`).
    pub uri: String,
    /// A human name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Extra fields (`_meta`).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Root {
    /// A root at `uri`, without a name.
    pub fn new(uri: impl Into<String>) -> Self {
        Root {
            uri: uri.into(),
            name: None,
            extra: Map::new(),
        }
    }

    /// This root, named.
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }
}

/// The result of `roots/list`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListRootsResult {
    /// The roots.
    pub roots: Vec<Root>,
    /// Extra fields.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sampling_params_are_read_leniently_and_keep_what_they_do_not_name() {
        let p: CreateMessageParams = serde_json::from_value(json!({
            "messages": [
                {"role": "user", "content": {"type": "text", "text": "hi"}},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "x", "input": {}}]}
            ],
            "maxTokens": 100,
            "tools": [{"name": "x", "inputSchema": {"type": "object"}}],
            "toolChoice": {"mode": "auto"},
            "_meta": {"progressToken": 4},
            "futureField": true
        }))
        .unwrap();
        assert_eq!(p.messages[0].content.joined_text(), "hi");
        assert_eq!(p.messages[1].content.blocks()[0].kind, "tool_use");
        assert_eq!(p.max_tokens, Some(100));
        assert_eq!(p.tools[0].name, "x");
        assert_eq!(p.extra["futureField"], json!(true));
        // A server that leaves out what it should still reaches the handler.
        let bare: CreateMessageParams = serde_json::from_value(json!({})).unwrap();
        assert!(bare.messages.is_empty() && bare.max_tokens.is_none());
    }

    #[test]
    fn results_serialize_to_the_wire_shape() {
        assert_eq!(
            serde_json::to_value(CreateMessageResult::text("m", "hello")).unwrap(),
            json!({"role": "assistant", "content": {"type": "text", "text": "hello"},
                   "model": "m", "stopReason": "endTurn"})
        );
        let mut form = Map::new();
        form.insert("name".into(), json!("Ada"));
        assert_eq!(
            serde_json::to_value(ElicitResult::accept(form)).unwrap(),
            json!({"action": "accept", "content": {"name": "Ada"}})
        );
        assert_eq!(
            ElicitResult::accept_with(json!({"name": "Ada"})).unwrap(),
            ElicitResult::accept(
                json!({"name": "Ada"})
                    .as_object()
                    .cloned()
                    .unwrap_or_default()
            )
        );
        assert!(ElicitResult::accept_with(json!(["not", "an", "object"])).is_err());
        assert_eq!(
            serde_json::to_value(ElicitResult::decline()).unwrap(),
            json!({"action": "decline"})
        );
        let roots = ListRootsResult {
            roots: vec![Root::new("file:///w").named("w"), Root::new("file:///x")],
            extra: Map::new(),
        };
        assert_eq!(
            serde_json::to_value(roots).unwrap(),
            json!({"roots": [{"uri": "file:///w", "name": "w"}, {"uri": "file:///x"}]})
        );
    }

    #[test]
    fn elicitation_modes() {
        let form = ElicitParams::from_value(json!({"message": "name?",
            "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}}))
        .unwrap();
        assert!(
            matches!(&form, ElicitParams::Form(f) if f.requested_schema["properties"]["name"].is_object())
        );
        let url = ElicitParams::from_value(json!({"mode": "url", "message": "sign in",
            "url": "https://example.com/x", "elicitationId": "e1"}))
        .unwrap();
        assert!(matches!(&url, ElicitParams::Url(u) if u.elicitation_id == "e1"));
        assert_eq!(url.message(), "sign in");
        assert!(ElicitParams::from_value(json!({"message": 3})).is_err());
    }
}
