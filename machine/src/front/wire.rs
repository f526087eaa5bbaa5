//! The host's side of the bridge's wire: what one line from the host is, and the frames
//! written back.
//!
//! A line is one JSON-RPC 2.0 message (MCP stdio framing). Anything else (bad JSON, a batch,
//! a message without `"jsonrpc": "2.0"`, an id that is neither a string nor an integer) is
//! [`HostMessage::Invalid`], answered with a JSON-RPC error and never forwarded.

use serde::Serialize;
use serde_json::{Map, Value};

use crate::codes;
use crate::request::RpcError;

/// One message from the host, classified.
#[derive(Debug, PartialEq)]
pub enum HostMessage {
    /// A request: the host waits for exactly one answer under `id`.
    Request {
        /// The host's id (a string or an integer), echoed in the answer.
        id: Value,
        /// The method.
        method: String,
        /// The params, as sent.
        params: Option<Value>,
    },
    /// A notification.
    Notification {
        /// The method.
        method: String,
        /// The params, as sent.
        params: Option<Value>,
    },
    /// The host's answer to a request the bridge forwarded to it (a server request).
    Response {
        /// The id the bridge gave the request.
        id: Value,
        /// The result, or the host's error.
        outcome: Result<Value, RpcError>,
    },
    /// Not a message the bridge can take; answered with `error` under `id` (`null` when the
    /// message had no usable id).
    Invalid {
        /// The id to answer under, when the message had one.
        id: Value,
        /// The error to answer with.
        error: RpcError,
    },
}

/// Classifies one line from the host.
pub fn parse(line: &[u8]) -> HostMessage {
    let value: Value = match serde_json::from_slice(line) {
        Ok(v) => v,
        Err(e) => {
            return invalid(Value::Null, codes::PARSE_ERROR, format!("parse error: {e}"));
        }
    };
    let Value::Object(mut msg) = value else {
        let why = if value.is_array() {
            "batches are not accepted (MCP removed JSON-RPC batching in 2025-06-18)"
        } else {
            "a message must be a JSON object"
        };
        return invalid(Value::Null, codes::INVALID_REQUEST, why.into());
    };
    let id = msg.remove("id");
    let id_ok = matches!(&id, Some(Value::String(_))) || id.as_ref().is_some_and(is_integer);
    if msg.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        let answer_id = if id_ok {
            id.unwrap_or_default()
        } else {
            Value::Null
        };
        return invalid(
            answer_id,
            codes::INVALID_REQUEST,
            "not JSON-RPC 2.0 (\"jsonrpc\": \"2.0\" is missing)".into(),
        );
    }
    let params = msg.remove("params");
    if let Some(p) = &params
        && !(p.is_object() || p.is_array())
    {
        let answer_id = if id_ok {
            id.unwrap_or_default()
        } else {
            Value::Null
        };
        return invalid(
            answer_id,
            codes::INVALID_REQUEST,
            "params must be an object".into(),
        );
    }
    match (msg.remove("method"), id) {
        (Some(Value::String(method)), None) => HostMessage::Notification { method, params },
        (Some(Value::String(method)), Some(id)) if id_ok => {
            HostMessage::Request { id, method, params }
        }
        (Some(_), Some(id)) if id_ok => invalid(
            id,
            codes::INVALID_REQUEST,
            "the method must be a string".into(),
        ),
        (Some(_), _) => invalid(
            Value::Null,
            codes::INVALID_REQUEST,
            "the id must be a string or an integer, and the method a string".into(),
        ),
        (None, Some(id)) if id_ok => match response_outcome(&mut msg) {
            Some(outcome) => HostMessage::Response { id, outcome },
            None => invalid(
                Value::Null,
                codes::INVALID_REQUEST,
                "a response needs exactly one of result and error".into(),
            ),
        },
        (None, _) => invalid(
            Value::Null,
            codes::INVALID_REQUEST,
            "neither a request, a notification nor a response".into(),
        ),
    }
}

fn is_integer(v: &Value) -> bool {
    v.as_i64().is_some() || v.as_u64().is_some()
}

fn invalid(id: Value, code: i64, message: String) -> HostMessage {
    HostMessage::Invalid {
        id,
        error: RpcError {
            code,
            message,
            data: None,
        },
    }
}

/// The outcome of a response object: its result, or its error (an error that is not an
/// error object becomes an internal error naming that).
fn response_outcome(msg: &mut Map<String, Value>) -> Option<Result<Value, RpcError>> {
    match (msg.remove("result"), msg.remove("error")) {
        (Some(result), None) => Some(Ok(result)),
        (None, Some(error)) => Some(Err(match error {
            Value::Object(mut e) => RpcError {
                code: e
                    .get("code")
                    .and_then(Value::as_i64)
                    .unwrap_or(codes::INTERNAL_ERROR),
                message: match e.remove("message") {
                    Some(Value::String(m)) => m,
                    _ => "the host answered with an error".into(),
                },
                data: e.remove("data"),
            },
            _ => RpcError {
                code: codes::INTERNAL_ERROR,
                message: "the host answered with an error that is not an error object".into(),
                data: None,
            },
        })),
        _ => None,
    }
}

#[derive(Serialize)]
struct ResultFrame<'a> {
    jsonrpc: &'static str,
    id: &'a Value,
    result: &'a Value,
}

#[derive(Serialize)]
struct ErrorFrame<'a> {
    jsonrpc: &'static str,
    id: &'a Value,
    error: ErrorObject<'a>,
}

#[derive(Serialize)]
struct ErrorObject<'a> {
    code: i64,
    message: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    data: Option<&'a Value>,
}

#[derive(Serialize)]
struct RequestFrame<'a> {
    jsonrpc: &'static str,
    id: &'a Value,
    method: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    params: Option<&'a Value>,
}

#[derive(Serialize)]
struct NotificationFrame<'a> {
    jsonrpc: &'static str,
    method: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    params: Option<&'a Value>,
}

fn encode(frame: &impl Serialize) -> Vec<u8> {
    // Serializing borrowed `Value`s and strings into memory cannot fail.
    serde_json::to_vec(frame).unwrap_or_default()
}

/// The answer `result` to the host's request `id`.
pub fn result(id: &Value, result: &Value) -> Vec<u8> {
    encode(&ResultFrame {
        jsonrpc: "2.0",
        id,
        result,
    })
}

/// The error answer to the host's request `id`.
pub fn error(id: &Value, error: &RpcError) -> Vec<u8> {
    encode(&ErrorFrame {
        jsonrpc: "2.0",
        id,
        error: ErrorObject {
            code: error.code,
            message: &error.message,
            data: error.data.as_ref(),
        },
    })
}

/// A request to the host (a server request the bridge forwards).
pub fn request(id: &Value, method: &str, params: Option<&Value>) -> Vec<u8> {
    encode(&RequestFrame {
        jsonrpc: "2.0",
        id,
        method,
        params,
    })
}

/// A notification to the host.
pub fn notification(method: &str, params: Option<&Value>) -> Vec<u8> {
    encode(&NotificationFrame {
        jsonrpc: "2.0",
        method,
        params,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn code_of(m: &HostMessage) -> i64 {
        match m {
            HostMessage::Invalid { error, .. } => error.code,
            other => panic!("not invalid: {other:?}"),
        }
    }

    #[test]
    fn requests_notifications_and_responses_are_told_apart() {
        assert_eq!(
            parse(br#"{"jsonrpc":"2.0","id":"a","method":"tools/list","params":{}}"#),
            HostMessage::Request {
                id: json!("a"),
                method: "tools/list".into(),
                params: Some(json!({}))
            }
        );
        assert_eq!(
            parse(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            HostMessage::Notification {
                method: "notifications/initialized".into(),
                params: None
            }
        );
        assert_eq!(
            parse(br#"{"jsonrpc":"2.0","id":3,"result":{"ok":true}}"#),
            HostMessage::Response {
                id: json!(3),
                outcome: Ok(json!({"ok": true}))
            }
        );
        match parse(br#"{"jsonrpc":"2.0","id":3,"error":{"code":-1,"message":"no"}}"#) {
            HostMessage::Response {
                outcome: Err(e), ..
            } => {
                assert_eq!((e.code, e.message.as_str()), (-1, "no"));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn garbage_is_answered_with_the_right_code() {
        assert_eq!(code_of(&parse(b"{not json")), codes::PARSE_ERROR);
        assert_eq!(code_of(&parse(b"[1,2]")), codes::INVALID_REQUEST);
        assert_eq!(code_of(&parse(b"42")), codes::INVALID_REQUEST);
        assert_eq!(
            code_of(&parse(br#"{"id":1,"method":"ping"}"#)),
            codes::INVALID_REQUEST
        );
        assert_eq!(
            code_of(&parse(br#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#)),
            codes::INVALID_REQUEST
        );
        assert_eq!(
            code_of(&parse(
                br#"{"jsonrpc":"2.0","id":1,"method":"ping","params":3}"#
            )),
            codes::INVALID_REQUEST
        );
        assert_eq!(
            code_of(&parse(br#"{"jsonrpc":"2.0","id":1}"#)),
            codes::INVALID_REQUEST
        );
        // A usable id is answered under that id.
        match parse(br#"{"id":7,"method":"ping"}"#) {
            HostMessage::Invalid { id, .. } => assert_eq!(id, json!(7)),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn frames_are_compact_json_rpc() {
        let id = json!(5);
        assert_eq!(
            result(&id, &json!({})),
            br#"{"jsonrpc":"2.0","id":5,"result":{}}"#.to_vec()
        );
        let e = RpcError {
            code: -32000,
            message: "gone\nline".into(),
            data: None,
        };
        let frame = error(&id, &e);
        assert!(!frame.contains(&b'\n'));
        assert_eq!(
            notification("notifications/tools/list_changed", None),
            br#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#.to_vec()
        );
    }
}
