//! The payloads the table's events carry (named in the spec, `spec/`), and the witnesses
//! its guards yield. Each is built once (a frame is parsed once, by [`crate::classify`]) and
//! moved, never deep-copied, to the action that consumes it.

use std::hash::{Hash, Hasher};
use std::time::Duration;

use serde_json::Value;

use crate::request::{CallId, CallOptions, RequestId, RpcError};

/// The id of a response, as far as matching goes.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ResponseId {
    /// A non-negative integer id: the only kind this client issues.
    Number(u64),
    /// Anything else (string, negative, fractional, null), as its JSON text: never one of ours.
    Other(String),
}

impl std::fmt::Display for ResponseId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ResponseId::Number(n) => n.fmt(f),
            ResponseId::Other(s) => f.write_str(s),
        }
    }
}

/// A JSON-RPC response from the server: its id, and its result or error, parsed once.
#[derive(Clone, Debug, PartialEq)]
pub struct Response {
    /// Its id.
    pub id: ResponseId,
    /// The result (its text, read into a tree only when something reads it), or the
    /// server's error (or why the error it sent is not a JSON-RPC error).
    pub body: Result<crate::Payload, ResponseError>,
}

/// What a response carried instead of a result.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum ResponseError {
    /// A JSON-RPC error.
    Rpc(RpcError),
    /// An `error` member that is not a JSON-RPC error object (no integer `code`, no string
    /// `message`): the server broke the protocol, and the caller is told so at once.
    Invalid {
        /// What is wrong with it.
        reason: String,
    },
}

/// The id of a request the server sent us (JSON-RPC allows a string or a number).
///
/// Kept typed (not as JSON text) so the machine can store and compare it; written back exactly
/// as received.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ServerRequestId {
    /// An integer id.
    Int(i64),
    /// A string id.
    Str(String),
    /// Any other number (beyond `i64`, or with a fraction), as its JSON text.
    Number(String),
}

impl ServerRequestId {
    /// The id of a JSON value that is a string or a number.
    pub fn from_json(v: &Value) -> Option<Self> {
        match v {
            Value::String(s) => Some(ServerRequestId::Str(s.clone())),
            Value::Number(n) => Some(match n.as_i64() {
                Some(i) => ServerRequestId::Int(i),
                None => ServerRequestId::Number(n.to_string()),
            }),
            Value::Null | Value::Bool(_) | Value::Array(_) | Value::Object(_) => None,
        }
    }

    /// The id as JSON, exactly as the server sent it.
    pub fn to_json(&self) -> Value {
        match self {
            ServerRequestId::Int(i) => Value::from(*i),
            ServerRequestId::Str(s) => Value::String(s.clone()),
            ServerRequestId::Number(text) => {
                serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.clone()))
            }
        }
    }
}

impl std::fmt::Display for ServerRequestId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ServerRequestId::Int(i) => i.fmt(f),
            ServerRequestId::Str(s) => write!(f, "{s:?}"),
            ServerRequestId::Number(t) => f.write_str(t),
        }
    }
}

/// A request from the server (method and id).
#[derive(Clone, Debug, PartialEq)]
pub struct ServerRequest {
    /// Its id.
    pub id: ServerRequestId,
    /// Its method.
    pub method: String,
    /// Its params.
    pub params: Option<Value>,
}

/// A notification from the server.
#[derive(Clone, Debug, PartialEq)]
pub struct Notification {
    /// The method, e.g. `notifications/message`.
    pub method: String,
    /// The params.
    pub params: Option<Value>,
}

impl Notification {
    /// One param of this notification, if its method is `method`.
    pub fn param(&self, method: &str, key: &str) -> Option<&Value> {
        self.params
            .as_ref()
            .filter(|_| self.method == method)?
            .get(key)
    }
}

/// A frame that is not a JSON-RPC message.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Malformed {
    /// What is wrong with it.
    pub reason: String,
}

/// A frame over the frame limit, not parsed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Oversized {
    /// Bytes seen.
    pub size: usize,
}

/// The client handler's answer to a server request.
#[derive(Clone, Debug, PartialEq)]
pub struct HandlerReply {
    /// The server's request id.
    pub id: ServerRequestId,
    /// The answer.
    pub result: Result<Value, RpcError>,
}

/// The client handler's answer to one input request of a call's `input_required` round
/// (2026-07-28, MRTR).
#[derive(Clone, Debug, PartialEq)]
pub struct InputReply {
    /// The id of the call's request the server answered with `input_required`.
    pub request: RequestId,
    /// The input request's key in `inputRequests`.
    pub key: String,
    /// The input (the handler's result), or the handler's error.
    pub outcome: Result<Value, RpcError>,
}

/// Why an authorization the machine asked for failed (the payload of `authorization_failed`):
/// said in words without a secret (no token, code or client secret).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct AuthFailure {
    /// What went wrong.
    pub reason: String,
}

/// What the server answered when it refused a request for want of authorization: the HTTP
/// status (401, or 403 with `insufficient_scope`) and its `WWW-Authenticate` challenge, as the
/// HTTP transport wrote them into the made-up [`crate::headers::AUTH_REQUIRED`] answer.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct AuthChallenge {
    /// The HTTP status.
    pub status: u16,
    /// The `WWW-Authenticate` header values, joined with `, ` (empty: none was sent).
    pub www_authenticate: String,
}

/// Witness of `is_input_required`: one `input_required` round of a call, parsed.
#[derive(Clone, Debug, PartialEq)]
pub struct InputRound {
    /// The id of the call's request the server answered.
    pub request: RequestId,
    /// The input requests: key, method, params.
    pub inputs: Vec<(String, String, Value)>,
    /// The `requestState`, exactly as received.
    pub state: Option<String>,
}

/// What a call changes in the session a server keeps for this client, which a restarted server
/// has forgotten and the client restores after a reconnect.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SessionChange {
    /// `resources/subscribe` to this URI.
    Subscribe(String),
    /// `resources/unsubscribe` from this URI.
    Unsubscribe(String),
    /// `logging/setLevel` to this level.
    SetLogLevel(String),
}

/// A caller's request to make.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallRequest {
    /// Who to answer.
    pub call: CallId,
    /// The JSON-RPC method.
    pub method: String,
    /// Its params (an object, or none).
    pub params: Option<Value>,
    /// Timeout and progress options.
    pub options: CallOptions,
    /// What the call changes in the session, if anything (restored after a reconnect).
    pub session: Option<SessionChange>,
}

/// A caller's request to poll a task the client did not create here (one whose id the host
/// kept, e.g. across a restart): answered like the tool call the task runs.
#[derive(Clone, Debug, PartialEq)]
pub struct TaskResume {
    /// Who to answer.
    pub call: CallId,
    /// The server's task id.
    pub task_id: String,
    /// Its options (`task_timeout` bounds the wait from now).
    pub options: CallOptions,
}

/// A caller's notification to send.
#[derive(Clone, Debug, PartialEq)]
pub struct NotifyRequest {
    /// Who to answer (once the transport took the frame, or did not).
    pub call: CallId,
    /// The method.
    pub method: String,
    /// Its params.
    pub params: Option<Value>,
}

/// Witness of `is_pending_send` / `can_retry_send`: the call whose frame the outcome is for,
/// and how many sends of it were tried.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PendingSend {
    /// The call's request id.
    pub id: RequestId,
    /// Sends tried so far, this one included.
    pub attempt: u8,
}

/// What the server said in the accepted handshake: the witness of `is_init_accepted`, kept by
/// the machine as typed data.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerInfo {
    /// The server's name (`serverInfo.name`; empty when the server sent none).
    pub name: String,
    /// The server's version (`serverInfo.version`; empty when the server sent none).
    pub version: String,
    /// The server's display name (`serverInfo.title`), when it sent one.
    pub title: Option<String>,
    /// The negotiated protocol version.
    pub protocol_version: String,
    /// `serverInfo` as the server sent it (name, version, title, icons, website, ...).
    pub server_info: Value,
    /// The server's capabilities.
    pub capabilities: Value,
    /// Optional instructions.
    pub instructions: Option<String>,
}

impl ServerInfo {
    /// What a handshake or discovery said: the typed fields are read from `server_info`.
    pub fn new(
        protocol_version: String,
        server_info: Value,
        capabilities: Value,
        instructions: Option<String>,
    ) -> Self {
        let text = |key: &str| {
            server_info
                .get(key)
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        ServerInfo {
            name: text("name").unwrap_or_default(),
            version: text("version").unwrap_or_default(),
            title: text("title"),
            protocol_version,
            server_info,
            capabilities,
            instructions,
        }
    }

    /// `serverInfo.name` (empty when missing): the field [`ServerInfo::name`](field@ServerInfo::name).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// `serverInfo.version` (empty when missing): the field
    /// [`ServerInfo::version`](field@ServerInfo::version).
    pub fn version(&self) -> &str {
        &self.version
    }

    /// Whether the server declared a capability (`tools`, `resources`, `prompts`, `logging`,
    /// `completions`, ...).
    pub fn has_capability(&self, name: &str) -> bool {
        self.capabilities.get(name).is_some_and(|v| !v.is_null())
    }
}

impl Hash for ServerInfo {
    // Consistent with `Eq` (equal values hash equal); the JSON values are left out of the hash.
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.protocol_version.hash(state);
        self.instructions.hash(state);
    }
}

/// Saturating `at + d`: a deadline that would not fit is "never" in practice.
pub(crate) fn later(at: Duration, d: Duration) -> Duration {
    at.saturating_add(d)
}
