//! Frame classification: one received frame becomes exactly one [`Frame`], before dispatch.
//!
//! The size limit is checked before any parsing (a frame of exactly the limit is accepted).
//! Classification never panics and never fails: anything that is not a single JSON-RPC 2.0
//! message is [`Frame::Malformed`] with a reason (batches included: they left MCP in
//! 2025-06-18).

use serde_json::Value;

pub use crate::event::ResponseId;
use crate::event::{Malformed, Notification, Oversized, Response, ServerRequest, ServerRequestId};
use crate::io::RpcError;

/// What a frame is: the payload of the event it becomes.
#[derive(Clone, Debug, PartialEq)]
pub enum Frame {
    /// A response (result or error).
    Response(Response),
    /// A request from the server.
    Request(ServerRequest),
    /// A notification from the server.
    Notification(Notification),
    /// Not a JSON-RPC message.
    Malformed(Malformed),
    /// Over the size limit; not parsed.
    Oversized(Oversized),
}

fn malformed(reason: impl Into<String>) -> Frame {
    Frame::Malformed(Malformed {
        reason: reason.into(),
    })
}

/// Classifies one frame of `bytes` under the limit `max_frame_bytes`.
pub fn classify(bytes: &[u8], max_frame_bytes: usize) -> Frame {
    if bytes.len() > max_frame_bytes {
        return Frame::Oversized(Oversized { size: bytes.len() });
    }
    let value: Value = match serde_json::from_slice(bytes) {
        Ok(v) => v,
        Err(e) => return malformed(format!("invalid JSON: {e}")),
    };
    let Value::Object(mut obj) = value else {
        return malformed(if value.is_array() {
            "a JSON-RPC batch (not part of MCP since 2025-06-18)"
        } else {
            "not a JSON object"
        });
    };
    match obj.get("jsonrpc") {
        None => {}
        Some(Value::String(v)) if v == "2.0" => {}
        Some(_) => return malformed("jsonrpc is not \"2.0\""),
    }
    let params = obj.remove("params");
    if let Some(p) = &params
        && !(p.is_object() || p.is_array())
    {
        return malformed("params is neither an object nor an array");
    }
    match obj.remove("method") {
        Some(Value::String(method)) => match obj.remove("id") {
            None => Frame::Notification(Notification { method, params }),
            Some(id) => match ServerRequestId::from_json(&id) {
                Some(id) => Frame::Request(ServerRequest { id, method, params }),
                None => malformed("request id is neither a string nor a number"),
            },
        },
        Some(_) => malformed("method is not a string"),
        None => {
            let Some(id) = obj.remove("id") else {
                return malformed("neither a request, a notification nor a response");
            };
            let id = match id {
                Value::Number(n) if n.as_u64().is_some() => {
                    ResponseId::Number(n.as_u64().unwrap_or_default())
                }
                Value::String(_) | Value::Number(_) | Value::Null => {
                    ResponseId::Other(id.to_string())
                }
                Value::Bool(_) | Value::Array(_) | Value::Object(_) => {
                    return malformed("response id is neither a string nor a number");
                }
            };
            match (obj.remove("result"), obj.remove("error")) {
                (Some(result), None) => Frame::Response(Response {
                    id,
                    body: Ok(result),
                }),
                (None, Some(error)) => match rpc_error(error) {
                    Ok(e) => Frame::Response(Response { id, body: Err(e) }),
                    Err(reason) => malformed(reason),
                },
                (Some(_), Some(_)) => malformed("response has both result and error"),
                (None, None) => malformed("response has neither result nor error"),
            }
        }
    }
}

fn rpc_error(error: Value) -> Result<RpcError, &'static str> {
    let Value::Object(mut e) = error else {
        return Err("error is not an object");
    };
    let code = e
        .get("code")
        .and_then(Value::as_i64)
        .ok_or("error code is not an integer")?;
    let Some(Value::String(message)) = e.remove("message") else {
        return Err("error message is not a string");
    };
    Ok(RpcError {
        code,
        message,
        data: e.remove("data"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn c(v: Value) -> Frame {
        classify(&serde_json::to_vec(&v).unwrap(), 1 << 20)
    }

    #[test]
    fn shapes() {
        assert!(matches!(
            c(json!({"jsonrpc":"2.0","id":3,"result":{}})),
            Frame::Response(Response {
                id: ResponseId::Number(3),
                body: Ok(_)
            })
        ));
        assert!(matches!(
            c(json!({"jsonrpc":"2.0","id":"x","error":{"code":-1,"message":"m"}})),
            Frame::Response(Response {
                id: ResponseId::Other(_),
                body: Err(RpcError { code: -1, .. })
            })
        ));
        assert!(matches!(
            c(json!({"jsonrpc":"2.0","id":1,"method":"ping"})),
            Frame::Request(_)
        ));
        assert!(matches!(
            c(json!({"jsonrpc":"2.0","method":"notifications/message","params":{}})),
            Frame::Notification(_)
        ));
        for bad in [
            json!([]),
            json!(1),
            json!({"jsonrpc":"1.0","id":1,"result":1}),
            json!({"id":1}),
            json!({"id":1,"result":1,"error":{"code":1,"message":""}}),
            json!({"method":5}),
            json!({"id":[1],"result":1}),
            json!({"id":1,"error":{"code":"x","message":"m"}}),
            json!({"method":"x","params":3}),
            json!({"method":"x","id":null}),
        ] {
            assert!(matches!(c(bad.clone()), Frame::Malformed(_)), "{bad}");
        }
        assert!(matches!(classify(b"{not json", 100), Frame::Malformed(_)));
        assert!(matches!(
            c(json!({"jsonrpc":"2.0","id":-1,"result":{}})),
            Frame::Response(Response {
                id: ResponseId::Other(_),
                ..
            })
        ));
    }

    #[test]
    fn the_limit_itself_is_accepted() {
        let frame = br#"{"jsonrpc":"2.0","id":1,"result":{}}"#;
        assert!(matches!(classify(frame, frame.len()), Frame::Response(_)));
        assert_eq!(
            classify(frame, frame.len() - 1),
            Frame::Oversized(Oversized { size: frame.len() })
        );
    }

    #[test]
    fn exactly_16_mib_is_accepted() {
        let max = 16 * 1024 * 1024;
        let head = br#"{"jsonrpc":"2.0","method":"x","params":{"p":""#;
        let tail = br#""}}"#;
        let mut frame = head.to_vec();
        frame.resize(max - tail.len(), b'a');
        frame.extend_from_slice(tail);
        assert_eq!(frame.len(), max);
        assert!(matches!(classify(&frame, max), Frame::Notification(_)));
        frame.insert(head.len(), b'a');
        assert!(matches!(classify(&frame, max), Frame::Oversized(_)));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
            let _ = classify(&bytes, 128);
        }

        #[test]
        fn arbitrary_json_never_panics(s in "[\\[\\]{}\":,a-z0-9 .-]{0,80}") {
            let _ = classify(s.as_bytes(), 1 << 16);
            let wrapped = format!(r#"{{"jsonrpc":"2.0","id":{s},"result":{s}}}"#);
            let _ = classify(wrapped.as_bytes(), 1 << 16);
        }
    }
}
