//! One frame through [`mcp_machine::classify::classify`]: never a panic, what it read can be
//! read back from the frame itself, and its one-pass read of a frame's members gives the frame
//! the general way (the whole JSON value) gives.

use std::hint::black_box;

use mcp_machine::classify::{Frame, classify, classify_by_value, refused_only_by_the_general_way};
use mcp_machine::{Response, ResponseError, ResponseId, ServerRequestId};
use serde_json::Value;

/// The frame limit used here: large enough for any input the fuzzer makes.
const MAX: usize = 1 << 20;

/// Classifies `bytes` and checks the result against the frame's own JSON.
pub fn check(bytes: &[u8]) {
    let frame = classify(bytes, MAX);
    // The one-pass read and the general way give the same frame, but where the general way
    // alone refuses what the one pass only checks to be JSON.
    let general = classify_by_value(bytes);
    if general != frame {
        assert!(
            refused_only_by_the_general_way(&general),
            "one pass: {frame:?}, general: {general:?}"
        );
    }
    // Exactly the limit is accepted, one byte less is not: the size is checked first.
    if let Some(less) = bytes.len().checked_sub(1) {
        assert!(matches!(classify(bytes, less), Frame::Oversized(o) if o.size == bytes.len()));
    }
    // The frame as plain JSON, when it is (a lone surrogate is repaired by `classify` only).
    let json: Option<Value> = serde_json::from_slice(bytes).ok();
    match &frame {
        Frame::Response(Response { id, body }) => {
            if let Some(v) = &json {
                check_response_id(id, &v["id"]);
                match body {
                    Ok(result) => assert_eq!(result, &v["result"]),
                    Err(ResponseError::Rpc(e)) => {
                        assert_eq!(Some(e.code), v["error"]["code"].as_i64());
                        assert_eq!(Some(e.message.as_str()), v["error"]["message"].as_str());
                    }
                    Err(_) => assert!(v["result"].is_null() && v.get("error").is_some()),
                }
            }
        }
        Frame::Request(r) => {
            check_request_id(&r.id);
            if let Some(v) = &json {
                assert_eq!(
                    r.id.to_json(),
                    v["id"],
                    "a request id is written back as received"
                );
                assert_eq!(Some(r.method.as_str()), v["method"].as_str());
            }
        }
        Frame::Notification(n) => {
            if let Some(v) = &json {
                assert_eq!(Some(n.method.as_str()), v["method"].as_str());
                assert!(v.get("id").is_none());
            }
        }
        Frame::Malformed(m) => assert!(!m.reason.is_empty()),
        Frame::Oversized(_) => panic!("under the limit, yet oversized"),
    }
    black_box(format!("{frame:?}"));
}

/// A response id names exactly the JSON id of the frame.
fn check_response_id(id: &ResponseId, json: &Value) {
    match id {
        ResponseId::Number(n) => assert_eq!(json.as_u64(), Some(*n)),
        ResponseId::Other(text) => {
            assert_eq!(json.as_u64(), None, "an id of ours read as foreign");
            assert_eq!(text, &json.to_string());
        }
    }
    black_box(id.to_string());
}

/// A server's request id survives the trip to JSON and back (it is echoed in our answer).
pub fn check_request_id(id: &ServerRequestId) {
    let back = ServerRequestId::from_json(&id.to_json());
    assert_eq!(
        back.as_ref(),
        Some(id),
        "request id {id} does not round-trip"
    );
    black_box(id.to_string());
}
