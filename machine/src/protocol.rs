//! The JSON-RPC frames the machine writes (requests, notifications, responses), and the
//! protocol versions of the handshake era.
//!
//! Protocol types: the machine builds its few frames with `serde_json` directly and keeps
//! results as `serde_json::Value`. rust-mcp-schema cannot give both eras' types in one build
//! (see shared/design/dependency-notes.md), and the core only needs the envelope.

use serde_json::{Map, Value, json};

use crate::event::{ServerInfo, ServerRequestId};
use crate::failure::Failure;
use crate::io::RpcError;

/// The newest handshake revision, offered in `initialize`.
pub const LATEST_PROTOCOL_VERSION: &str = "2025-11-25";

/// Every revision this client accepts from a server's `initialize` result.
pub const SUPPORTED_PROTOCOL_VERSIONS: [&str; 4] =
    ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

fn encode(v: &Value) -> Vec<u8> {
    serde_json::to_vec(v).expect("a Value always serializes")
}

/// A request frame; `progress_token`, when given, is put in `params._meta.progressToken`.
pub(crate) fn request(
    id: u64,
    method: &str,
    params: Option<Value>,
    progress_token: Option<u64>,
) -> Vec<u8> {
    let mut msg = Map::new();
    msg.insert("jsonrpc".into(), "2.0".into());
    msg.insert("id".into(), id.into());
    msg.insert("method".into(), method.into());
    let params = match (params, progress_token) {
        (p, None) => p,
        (p, Some(token)) => {
            let mut obj = match p {
                Some(Value::Object(obj)) => obj,
                Some(_) | None => Map::new(),
            };
            let meta = obj
                .entry("_meta")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(meta) = meta {
                meta.insert("progressToken".into(), token.into());
            }
            Some(Value::Object(obj))
        }
    };
    if let Some(p) = params {
        msg.insert("params".into(), p);
    }
    encode(&Value::Object(msg))
}

/// A request frame the machine built, under a new id (its progress token, when it asked for
/// progress, follows the id). A frame that does not parse (never: the machine wrote it) is
/// returned unchanged.
pub(crate) fn with_new_id(frame: &[u8], id: u64, progress: bool) -> Vec<u8> {
    let Ok(Value::Object(mut msg)) = serde_json::from_slice::<Value>(frame) else {
        return frame.to_vec();
    };
    msg.insert("id".into(), id.into());
    if progress
        && let Some(Value::Object(params)) = msg.get_mut("params")
        && let Some(Value::Object(meta)) = params.get_mut("_meta")
    {
        meta.insert("progressToken".into(), id.into());
    }
    encode(&Value::Object(msg))
}

/// A notification frame.
pub(crate) fn notification(method: &str, params: Option<Value>) -> Vec<u8> {
    let mut msg = Map::new();
    msg.insert("jsonrpc".into(), "2.0".into());
    msg.insert("method".into(), method.into());
    if let Some(p) = params {
        msg.insert("params".into(), p);
    }
    encode(&Value::Object(msg))
}

/// A response frame to a server request.
pub(crate) fn response(id: &ServerRequestId, result: Result<&Value, &RpcError>) -> Vec<u8> {
    let id = id.to_json();
    match result {
        Ok(v) => encode(&json!({"jsonrpc": "2.0", "id": id, "result": v})),
        Err(e) => {
            let mut err = json!({"code": e.code, "message": e.message});
            if let Some(d) = &e.data {
                err["data"] = d.clone();
            }
            encode(&json!({"jsonrpc": "2.0", "id": id, "error": err}))
        }
    }
}

/// `notifications/cancelled` for one of our requests.
pub(crate) fn cancelled(id: u64, reason: &str) -> Vec<u8> {
    notification(
        "notifications/cancelled",
        Some(json!({"requestId": id, "reason": reason})),
    )
}

/// The `initialize` params.
pub(crate) fn initialize_params(config: &crate::Config) -> Value {
    json!({
        "protocolVersion": LATEST_PROTOCOL_VERSION,
        "capabilities": config.capabilities.to_json(),
        "clientInfo": {"name": config.client_name, "version": config.client_version},
    })
}

/// Checks an `initialize` result: an object whose `protocolVersion` is one we speak and whose
/// `capabilities`, if present, is an object.
pub(crate) fn check_init_result(result: &Value) -> Result<ServerInfo, Failure> {
    let bad = |reason: &str| Failure::BadHandshake {
        reason: reason.into(),
    };
    let obj = result
        .as_object()
        .ok_or_else(|| bad("initialize result is not an object"))?;
    let version = match obj.get("protocolVersion") {
        Some(Value::String(v)) => v,
        Some(_) => return Err(bad("protocolVersion is not a string")),
        None => return Err(bad("initialize result has no protocolVersion")),
    };
    if !SUPPORTED_PROTOCOL_VERSIONS.contains(&version.as_str()) {
        return Err(Failure::UnsupportedVersion {
            version: version.clone(),
        });
    }
    let capabilities = match obj.get("capabilities") {
        None => Value::Object(Map::new()),
        Some(c @ Value::Object(_)) => c.clone(),
        Some(_) => return Err(bad("capabilities is not an object")),
    };
    Ok(ServerInfo {
        protocol_version: version.clone(),
        server_info: obj.get("serverInfo").cloned().unwrap_or(Value::Null),
        capabilities,
        instructions: obj
            .get("instructions")
            .and_then(Value::as_str)
            .map(str::to_owned),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_under_a_new_id_keeps_everything_else() {
        let old = request(
            4,
            "tools/call",
            Some(json!({"name": "t", "x": [1]})),
            Some(4),
        );
        let new: Value = serde_json::from_slice(&with_new_id(&old, 9, true)).unwrap();
        assert_eq!(new["id"], 9);
        assert_eq!(new["method"], "tools/call");
        assert_eq!(new["params"]["x"], json!([1]));
        assert_eq!(new["params"]["_meta"]["progressToken"], 9);
        let plain = request(5, "ping", None, None);
        let new: Value = serde_json::from_slice(&with_new_id(&plain, 6, false)).unwrap();
        assert_eq!(new, json!({"jsonrpc": "2.0", "id": 6, "method": "ping"}));
    }

    #[test]
    fn progress_token_goes_into_meta() {
        let f = request(7, "tools/call", Some(json!({"name": "x"})), Some(7));
        let v: Value = serde_json::from_slice(&f).unwrap();
        assert_eq!(v["params"]["_meta"]["progressToken"], 7);
        assert_eq!(v["params"]["name"], "x");
        assert_eq!(v["id"], 7);
    }

    /// The answer to a server request names its id as the server sent it, also an id that is
    /// not an `i64` (found by `fuzz/`: `fuzz/regressions/classify/float-request-id`).
    #[test]
    fn a_response_names_the_request_id_as_received() {
        // Beyond i64, fractional, and floats whose shortest text a fast (not correctly rounded)
        // parser reads back one unit in the last place off.
        for text in [
            "18446744073709551615",
            "1.5",
            "-0.25",
            "1e300",
            "10008290831194222231552",
            "1.0008290831194223e22",
        ] {
            let received: Value = serde_json::from_str(text).unwrap();
            let id = ServerRequestId::from_json(&received).unwrap();
            assert_eq!(id.to_json(), received, "id {text}");
            let sent: Value = serde_json::from_slice(&response(&id, Ok(&json!({})))).unwrap();
            assert_eq!(sent["id"], received, "id {text}");
        }
    }

    #[test]
    fn init_result_versions() {
        for v in SUPPORTED_PROTOCOL_VERSIONS {
            assert!(check_init_result(&json!({"protocolVersion": v, "capabilities": {}})).is_ok());
        }
        assert!(check_init_result(&json!({"protocolVersion": "1999-01-01"})).is_err());
        assert!(check_init_result(&json!({"protocolVersion": 5})).is_err());
        assert!(check_init_result(&json!([])).is_err());
        assert!(
            check_init_result(&json!({"protocolVersion": "2025-06-18", "capabilities": 1}))
                .is_err()
        );
    }
}
