//! Frame classification: one received frame becomes exactly one [`Frame`], before dispatch.
//!
//! The size limit is checked before any parsing (a frame of exactly the limit is accepted).
//! Classification never panics and never fails: anything that is not a single JSON-RPC 2.0
//! message is [`Frame::Malformed`] with a reason. A batch is one frame too, unless the
//! negotiated revision has batches: then [`batch_elements`] unpacks it first.

use serde_json::Value;
use serde_json::value::RawValue;

use crate::Payload;
pub use crate::event::ResponseId;
use crate::event::{
    Malformed, Notification, Oversized, Response, ResponseError, ServerRequest, ServerRequestId,
};
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
    // Most frames are read straight into their members; the rest (not an object, a member
    // twice, text to repair, a `jsonrpc` that is not a plain string) take the general way.
    match Members::read(bytes) {
        Some(members) => members.classify(),
        None => classify_by_value(bytes),
    }
}

/// [`classify`]'s general way alone, for a frame within the limit: by way of the frame's
/// whole JSON value, never the one-pass read. Public for the fuzz target's differential check
/// (the two must agree), not for use.
#[doc(hidden)]
pub fn classify_by_value(bytes: &[u8]) -> Frame {
    let value = match parse(bytes) {
        Ok(v) => v,
        Err(e) => return malformed(format!("invalid JSON: {e}")),
    };
    let Value::Object(mut obj) = value else {
        return malformed(if value.is_array() {
            "a JSON-RPC batch (only MCP 2025-03-26 has them)"
        } else {
            "not a JSON object"
        });
    };
    Members {
        jsonrpc: match obj.get("jsonrpc") {
            None => Tag::Absent,
            Some(Value::String(v)) if v == "2.0" => Tag::Two,
            Some(_) => Tag::Other,
        },
        id: obj.remove("id"),
        method: obj.remove("method"),
        params: obj.remove("params"),
        result: obj.remove("result").map(Payload::from_value),
        error: obj.remove("error"),
    }
    .classify()
}

/// Whether the general way's `general` frame may differ from the one-pass read's: only when
/// it refused the frame for a number out of f64 range or nesting past serde_json's limit,
/// which the one pass does not check in a member nobody reads or a result kept as text (its
/// reader gets that error, [`Payload`]). Public for the fuzz target's differential check and
/// the proptest, not for use.
#[doc(hidden)]
pub fn refused_only_by_the_general_way(general: &Frame) -> bool {
    matches!(general, Frame::Malformed(m)
        if m.reason.contains("out of range") || m.reason.contains("recursion limit"))
}

/// What a frame's `jsonrpc` member says.
enum Tag {
    Absent,
    Two,
    Other,
}

/// The members of a JSON-RPC message that classification reads (any other member is ignored).
/// A member present with the value `null` is `Some(Value::Null)`.
struct Members {
    jsonrpc: Tag,
    id: Option<Value>,
    method: Option<Value>,
    params: Option<Value>,
    result: Option<Payload>,
    error: Option<Value>,
}

/// Whether JSON text holds a `\u` escape of a surrogate (`\uD800` to `\uDFFF`, any case):
/// conservatively, any `\ud` (an escaped backslash followed by `ud` counts too).
fn has_surrogate_escape(text: &str) -> bool {
    // Backslashes are found a word at a time (most results have none).
    let bytes = text.as_bytes();
    text.match_indices('\\').any(|(i, _)| {
        bytes.get(i + 1) == Some(&b'u') && bytes.get(i + 2).is_some_and(|c| c | 0x20 == b'd')
    })
}

impl Members {
    /// The members of `bytes` read in one pass, without building the object around them (no
    /// map, no key strings: a third of a small response's allocations). `None` when `bytes`
    /// is anything else than one JSON object with each member at most once and a `jsonrpc`
    /// that is a string without escapes: the general way then reads it, and gives the same
    /// frame for every message read here (an ignored member, and a result kept as text, are
    /// only checked to be JSON, so a number out of f64 range or nesting past serde_json's
    /// 128 levels there no longer costs the whole message: the result's reader gets the
    /// error, [`Payload`]).
    fn read(bytes: &[u8]) -> Option<Members> {
        #[derive(serde::Deserialize)]
        struct Wire<'a> {
            #[serde(default, borrow, deserialize_with = "present_str")]
            jsonrpc: Option<&'a str>,
            #[serde(default, deserialize_with = "present")]
            id: Option<Value>,
            #[serde(default, deserialize_with = "present")]
            method: Option<Value>,
            #[serde(default, deserialize_with = "present")]
            params: Option<Value>,
            #[serde(default, borrow, deserialize_with = "present_raw")]
            result: Option<&'a RawValue>,
            #[serde(default, deserialize_with = "present")]
            error: Option<Value>,
        }
        fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
            serde::Deserialize::deserialize(d).map(Some)
        }
        fn present_str<'de, D: serde::Deserializer<'de>>(
            d: D,
        ) -> Result<Option<&'de str>, D::Error> {
            serde::Deserialize::deserialize(d).map(Some)
        }
        fn present_raw<'de, D: serde::Deserializer<'de>>(
            d: D,
        ) -> Result<Option<&'de RawValue>, D::Error> {
            serde::Deserialize::deserialize(d).map(Some)
        }
        // A struct also reads from an array (members by position): objects only.
        if bytes.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
            return None;
        }
        let w: Wire<'_> = serde_json::from_slice(bytes).ok()?;
        // A result is kept as its text (checked to be JSON and UTF-8, not read into a tree):
        // one with a surrogate escape goes the general way, whose repair of a lone surrogate
        // a later read of the text would not make.
        if w.result.is_some_and(|r| has_surrogate_escape(r.get())) {
            return None;
        }
        Some(Members {
            jsonrpc: match w.jsonrpc {
                None => Tag::Absent,
                Some("2.0") => Tag::Two,
                Some(_) => Tag::Other,
            },
            id: w.id,
            method: w.method,
            params: w.params,
            result: w.result.map(|r| Payload::from_text(r.to_owned())),
            error: w.error,
        })
    }

    fn classify(self) -> Frame {
        if let Tag::Other = self.jsonrpc {
            return malformed("jsonrpc is not \"2.0\"");
        }
        let params = self.params;
        if let Some(p) = &params
            && !(p.is_object() || p.is_array())
        {
            return malformed("params is neither an object nor an array");
        }
        match self.method {
            Some(Value::String(method)) => match self.id {
                None => Frame::Notification(Notification { method, params }),
                Some(id) => match ServerRequestId::from_json(&id) {
                    Some(id) => Frame::Request(ServerRequest { id, method, params }),
                    None => malformed("request id is neither a string nor a number"),
                },
            },
            Some(_) => malformed("method is not a string"),
            None => {
                let Some(id) = self.id else {
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
                match (self.result, self.error) {
                    (Some(result), None) => Frame::Response(Response {
                        id,
                        body: Ok(result),
                    }),
                    // An error that is not an error object still names its call: fail it now.
                    (None, Some(error)) => Frame::Response(Response {
                        id,
                        body: Err(match rpc_error(error) {
                            Ok(e) => ResponseError::Rpc(e),
                            Err(reason) => ResponseError::Invalid {
                                reason: reason.into(),
                            },
                        }),
                    }),
                    (Some(_), Some(_)) => malformed("response has both result and error"),
                    (None, None) => malformed("response has neither result nor error"),
                }
            }
        }
    }
}

/// The JSON value of `bytes`. Two kinds of damage a server's text takes are repaired rather
/// than losing the whole message and leaving its caller waiting: a lone UTF-16 surrogate
/// escape (a JavaScript server that cut a string in half) and bytes that are not UTF-8 (a
/// server that cut a multi-byte character, or wrote Latin-1); both are read as U+FFFD, as
/// JavaScript's and Python's lenient decoders do.
fn parse(bytes: &[u8]) -> Result<Value, serde_json::Error> {
    serde_json::from_slice(bytes).or_else(|e| {
        let lossy = String::from_utf8_lossy(bytes);
        let repaired = repair_lone_surrogates(lossy.as_bytes());
        serde_json::from_slice(repaired.as_deref().unwrap_or(lossy.as_bytes())).map_err(|_| e)
    })
}

/// The messages of a JSON-RPC batch frame (a non-empty array), each as the bytes of one frame
/// to classify; `None` when `bytes` is not a batch (or over the limit, or an empty array: those
/// stay one frame, which [`classify`] reports as malformed).
///
/// Only MCP 2025-03-26 has batches (a receiver MUST accept them; 2025-06-18 removed them): the
/// machine unpacks them only when that revision was negotiated ([`crate::Machine::unbatch`]).
pub fn batch_elements(bytes: &[u8], max_frame_bytes: usize) -> Option<Vec<Vec<u8>>> {
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace())?;
    if *first != b'[' || bytes.len() > max_frame_bytes {
        return None;
    }
    let Ok(Value::Array(items)) = parse(bytes) else {
        return None;
    };
    (!items.is_empty()).then(|| {
        items
            .iter()
            .map(|item| serde_json::to_vec(item).unwrap_or_default())
            .collect()
    })
}

/// `bytes` with every `\uD800`..`\uDFFF` escape that is not part of a high-low pair replaced by
/// `\uFFFD`; `None` when there is none.
fn repair_lone_surrogates(bytes: &[u8]) -> Option<Vec<u8>> {
    fn escape_at(b: &[u8], i: usize) -> Option<u16> {
        let hex = b.get(i + 2..i + 6)?;
        if b.get(i) != Some(&b'\\') || b.get(i + 1) != Some(&b'u') {
            return None;
        }
        u16::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()
    }
    let mut out = Vec::with_capacity(bytes.len());
    let mut changed = false;
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\' {
            if let Some(u) = escape_at(bytes, i) {
                let high = (0xD800..0xDC00).contains(&u);
                let low = (0xDC00..0xE000).contains(&u);
                let paired =
                    high && escape_at(bytes, i + 6).is_some_and(|n| (0xDC00..0xE000).contains(&n));
                if paired {
                    out.extend_from_slice(&bytes[i..i + 12]);
                    i += 12;
                    continue;
                }
                if high || low {
                    out.extend_from_slice(b"\\uFFFD");
                    changed = true;
                    i += 6;
                    continue;
                }
            }
            // Any other escape: copy it whole, so an escaped backslash is not read twice.
            let end = (i + 2).min(bytes.len());
            out.extend_from_slice(&bytes[i..end]);
            i = end;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    changed.then_some(out)
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

    #[test]
    fn a_surrogate_escape_is_found_in_any_case_and_nothing_else_is() {
        assert!(has_surrogate_escape(r#""\ud800""#));
        assert!(has_surrogate_escape(r#"{"a":"x\uD83D\uDE00"}"#));
        // Conservative: an escaped backslash before `ud` counts too (the general way decides).
        assert!(has_surrogate_escape(r#""\\ud""#));
        assert!(!has_surrogate_escape(r#""caf\u00e9 \n \\""#));
        assert!(!has_surrogate_escape(r#"{"a":1}"#));
        assert!(!has_surrogate_escape("\\u"));
    }

    fn c(v: Value) -> Frame {
        classify(&serde_json::to_vec(&v).unwrap(), 1 << 20)
    }

    #[test]
    fn bytes_that_are_not_utf8_are_read_as_replacement_characters() {
        let mut frame = br#"{"jsonrpc":"2.0","id":5,"result":{"text":"caf"#.to_vec();
        frame.extend_from_slice(&[0xe9, 0xff]);
        frame.extend_from_slice(br#""}}"#);
        match classify(&frame, 1 << 20) {
            Frame::Response(Response { id, body: Ok(v) }) => {
                assert_eq!(id, ResponseId::Number(5));
                assert_eq!(v.value()["text"], "caf\u{fffd}\u{fffd}");
            }
            other => panic!("{other:?}"),
        }
        // Not JSON even when repaired: still malformed.
        assert!(matches!(classify(&[0xff, b'{'], 99), Frame::Malformed(_)));
    }

    #[test]
    fn batch_elements_unpacks_only_non_empty_arrays_within_the_limit() {
        let batch = br#" [{"jsonrpc":"2.0","id":1,"result":{}}, {"jsonrpc":"2.0","method":"x"}]"#;
        let parts = batch_elements(batch, 1 << 20).unwrap();
        assert_eq!(parts.len(), 2);
        assert!(matches!(classify(&parts[0], 1 << 20), Frame::Response(_)));
        assert!(matches!(
            classify(&parts[1], 1 << 20),
            Frame::Notification(_)
        ));
        assert_eq!(batch_elements(b"[]", 1 << 20), None);
        assert_eq!(batch_elements(br#"{"jsonrpc":"2.0"}"#, 1 << 20), None);
        assert_eq!(batch_elements(b"[1,", 1 << 20), None);
        assert_eq!(batch_elements(batch, 10), None);
        // A lone surrogate inside a batch is repaired as in a single frame.
        let parts = batch_elements(br#"[{"jsonrpc":"2.0","id":2,"result":"\ud800"}]"#, 99).unwrap();
        assert!(matches!(classify(&parts[0], 99), Frame::Response(_)));
        // Without unpacking, a batch is one malformed frame.
        assert!(matches!(classify(batch, 1 << 20), Frame::Malformed(_)));
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
                body: Err(ResponseError::Rpc(RpcError { code: -1, .. }))
            })
        ));
        // An error member that is not an error object still fails its call at once.
        for bad_error in [
            json!({"code": "x", "message": "m"}),
            json!({"code": -1}),
            json!("boom"),
        ] {
            assert!(matches!(
                c(json!({"jsonrpc":"2.0","id":7,"error": bad_error})),
                Frame::Response(Response {
                    id: ResponseId::Number(7),
                    body: Err(ResponseError::Invalid { .. })
                })
            ));
        }
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
    fn lone_surrogates_are_read_as_replacement_characters() {
        // A JavaScript server that cut a string between the halves of a surrogate pair.
        let frame = br#"{"jsonrpc":"2.0","id":4,"result":{"text":"a\ud83d","more":"\udc00b","ok":"\ud83d\ude00","esc":"\\ud800"}}"#;
        let Frame::Response(Response { id, body: Ok(v) }) = classify(frame, 1 << 20) else {
            panic!("not a response: {:?}", classify(frame, 1 << 20));
        };
        assert_eq!(id, ResponseId::Number(4));
        assert_eq!(v.value()["text"], "a\u{fffd}");
        assert_eq!(v.value()["more"], "\u{fffd}b");
        assert_eq!(v.value()["ok"], "\u{1f600}");
        // An escaped backslash followed by `ud800` is text, not an escape.
        assert_eq!(v.value()["esc"], "\\ud800");
        // Still not JSON for other reasons: malformed.
        assert!(matches!(
            classify(br#"{"id":1,"result":"\ud800"#, 1 << 20),
            Frame::Malformed(_)
        ));
    }

    #[test]
    fn what_the_one_pass_read_leaves_to_the_general_way() {
        // A member twice: the last one counts, as in the general way.
        let twice = br#"{"jsonrpc":"2.0","id":1,"id":2,"result":{}}"#;
        assert!(Members::read(twice).is_none());
        assert!(matches!(
            classify(twice, 99),
            Frame::Response(Response {
                id: ResponseId::Number(2),
                ..
            })
        ));
        // `jsonrpc` with an escape, or not a string: read by value.
        let escaped = br#"{"jsonrpc":"2\u002e0","method":"x"}"#;
        assert!(Members::read(escaped).is_none());
        assert!(matches!(classify(escaped, 99), Frame::Notification(_)));
        assert!(matches!(
            classify(br#"{"jsonrpc":2,"method":"x"}"#, 99),
            Frame::Malformed(_)
        ));
        // A member present as null is present.
        assert!(matches!(
            classify(br#"{"jsonrpc":"2.0","id":1,"result":null}"#, 99),
            Frame::Response(Response {
                body: Ok(p),
                ..
            }) if p == Value::Null
        ));
        assert!(matches!(
            classify(br#"{"jsonrpc":null,"id":1,"result":1}"#, 99),
            Frame::Malformed(_)
        ));
        // Not an object: an array is not read by position.
        assert!(Members::read(br#"["2.0",1]"#).is_none());
        // An ignored member out of f64 range no longer costs the message.
        assert!(matches!(
            classify(br#"{"jsonrpc":"2.0","id":1,"result":{},"x":1e400}"#, 99),
            Frame::Response(_)
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

    /// Objects made of the members classification reads (twice, sometimes), with values of
    /// every JSON type, `jsonrpc` strings with escapes, and a member nobody reads.
    fn message() -> impl Strategy<Value = String> {
        let value = prop_oneof![
            Just("null".to_owned()),
            Just("true".to_owned()),
            Just("\"2.0\"".to_owned()),
            Just(r#""2\u002e0""#.to_owned()),
            Just("\"1.0\"".to_owned()),
            Just("\"ping\"".to_owned()),
            Just("-1".to_owned()),
            Just("7".to_owned()),
            Just("1.5".to_owned()),
            Just("1e400".to_owned()),
            Just("[]".to_owned()),
            Just("{}".to_owned()),
            Just(r#"{"code":-32000,"message":"m","data":[1]}"#.to_owned()),
            Just(r#"{"code":"x"}"#.to_owned()),
        ];
        let key = prop_oneof![
            Just("jsonrpc"),
            Just("id"),
            Just("method"),
            Just("params"),
            Just("result"),
            Just("error"),
            Just("other"),
        ];
        proptest::collection::vec((key, value), 0..7).prop_map(|members| {
            let body: Vec<String> = members
                .iter()
                .map(|(k, v)| format!("\"{k}\":{v}"))
                .collect();
            format!("{{{}}}", body.join(","))
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        /// The one-pass read gives the frame the general way gives, whenever it reads one.
        #[test]
        fn the_one_pass_read_agrees_with_the_general_way(m in message()) {
            if let Some(members) = Members::read(m.as_bytes()) {
                let general = classify_by_value(m.as_bytes());
                if !refused_only_by_the_general_way(&general) {
                    prop_assert_eq!(members.classify(), general, "{}", m);
                }
            }
        }

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
