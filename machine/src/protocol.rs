//! The JSON-RPC frames the machine writes (requests, notifications, responses), the protocol
//! versions of both eras, and how the answers that decide the era are read: a DiscoverResult,
//! and the errors a modern server answers with.
//!
//! Protocol types: the machine builds its few frames with `serde_json` directly and keeps
//! results as `serde_json::Value`. rust-mcp-schema cannot give both eras' types in one build
//! (see shared/design/dependency-notes.md), and the core only needs the envelope.

use serde_json::{Map, Value, json};

use crate::event::{ServerInfo, ServerRequestId};
use crate::failure::Failure;
use crate::io::RpcError;
use crate::outgoing::{FrameKind, Head, Outgoing};

/// The newest handshake revision, offered in `initialize`.
pub const LATEST_PROTOCOL_VERSION: &str = "2025-11-25";

/// Every revision this client accepts from a server's `initialize` result.
pub const SUPPORTED_PROTOCOL_VERSIONS: [&str; 4] =
    ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// Every revision of the stateless (modern) era this client speaks, newest first: no
/// `initialize`, each request carries its version in `_meta`.
pub const MODERN_PROTOCOL_VERSIONS: [&str; 1] = ["2026-07-28"];

/// The `_meta` key of a modern request's protocol version.
pub const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// The `_meta` key of a modern request's client capabilities.
pub const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// The 2026-07-28 tasks extension's name (in capabilities' `extensions`).
pub const EXT_TASKS: &str = "io.modelcontextprotocol/tasks";
/// The `_meta` key of a modern request's client name and version.
pub const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
/// The `_meta` key of a modern result's server name and version.
pub const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";

pub(crate) use crate::codes::{
    HEADER_MISMATCH, INVALID_PARAMS, METHOD_NOT_FOUND, MISSING_CAPABILITY, UNSUPPORTED_VERSION,
};

/// What every modern request carries in `_meta`: the version, and who the client is.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Envelope<'a> {
    pub(crate) version: &'a str,
    pub(crate) config: &'a crate::Config,
}

impl Envelope<'_> {
    fn write(&self, meta: &mut Map<String, Value>) {
        meta.insert(META_PROTOCOL_VERSION.into(), self.version.into());
        meta.insert(
            META_CLIENT_CAPABILITIES.into(),
            self.config.capabilities.to_json_modern(),
        );
        // The tasks extension is declared per request (2026-07-28): on every request once on.
        if self.config.tasks
            && let Some(Value::Object(caps)) = meta.get_mut(META_CLIENT_CAPABILITIES)
            && let Value::Object(ext) = caps
                .entry("extensions")
                .or_insert_with(|| Value::Object(Map::new()))
        {
            ext.insert(EXT_TASKS.into(), Value::Object(Map::new()));
        }
        meta.insert(
            META_CLIENT_INFO.into(),
            json!({"name": self.config.client_name, "version": self.config.client_version}),
        );
    }
}

/// What a modern server's error says about the era, as far as the client acts on it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ModernError {
    /// -32022 with the versions the server supports.
    UnsupportedVersion(Vec<String>),
    /// -32020 or -32021.
    Other,
}

/// Whether `e` is an error only a modern server answers with (-32020, -32021, or -32022 with
/// `data.supported` an array of strings); `None` for any other error, which says nothing about
/// the era (the fallback never keys off one code alone).
pub(crate) fn modern_error(e: &RpcError) -> Option<ModernError> {
    match e.code {
        UNSUPPORTED_VERSION => {
            let supported = e.data.as_ref()?.get("supported")?.as_array()?;
            let versions: Option<Vec<String>> = supported
                .iter()
                .map(|v| v.as_str().map(str::to_owned))
                .collect();
            Some(ModernError::UnsupportedVersion(versions?))
        }
        HEADER_MISMATCH | MISSING_CAPABILITY => Some(ModernError::Other),
        _ => None,
    }
}

/// The newest modern version of `offered` this client speaks.
pub(crate) fn common_modern<S: AsRef<str>>(offered: &[S]) -> Option<&'static str> {
    MODERN_PROTOCOL_VERSIONS
        .into_iter()
        .find(|v| offered.iter().any(|o| o.as_ref() == *v))
}

/// The newest handshake-era version of `offered` this client speaks.
pub(crate) fn common_legacy<S: AsRef<str>>(offered: &[S]) -> Option<&'static str> {
    SUPPORTED_PROTOCOL_VERSIONS
        .into_iter()
        .find(|v| offered.iter().any(|o| o.as_ref() == *v))
}

/// A result that is a DiscoverResult: an object whose `supportedVersions` is a non-empty array
/// of strings, whose `capabilities` is an object or absent, and whose `resultType` is absent
/// or `complete`. Yields the versions offered.
pub(crate) fn discover_versions(result: &Value) -> Option<Vec<String>> {
    let obj = result.as_object()?;
    let versions: Vec<String> = obj
        .get("supportedVersions")?
        .as_array()?
        .iter()
        .map(|v| v.as_str().map(str::to_owned))
        .collect::<Option<_>>()?;
    let capabilities_ok = matches!(obj.get("capabilities"), None | Some(Value::Object(_)));
    let complete = obj
        .get("resultType")
        .is_none_or(|t| t.as_str() == Some("complete"));
    (!versions.is_empty() && capabilities_ok && complete).then_some(versions)
}

/// The server's description from a DiscoverResult, at `version` (one both speak).
pub(crate) fn discovered(result: &Value, version: &str) -> ServerInfo {
    let server_info = result
        .get("_meta")
        .and_then(|m| m.get(META_SERVER_INFO))
        .or_else(|| result.get("serverInfo"))
        .cloned()
        .unwrap_or(Value::Null);
    ServerInfo::new(
        version.to_owned(),
        server_info,
        result
            .get("capabilities")
            .filter(|c| c.is_object())
            .cloned()
            .unwrap_or_else(|| Value::Object(Map::new())),
        result
            .get("instructions")
            .and_then(Value::as_str)
            .map(str::to_owned),
    )
}

/// A modern result's `resultType`: `None` when absent (complete); the string otherwise (a
/// non-string is reported as its JSON text).
pub(crate) fn result_type(result: &Value) -> Option<String> {
    match result.get("resultType")? {
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

fn encode(v: &Value) -> Vec<u8> {
    serde_json::to_vec(v).expect("a Value always serializes")
}

/// The method a caller's request is sent as: in the modern era (2026-07-28), which removed
/// `ping`, a `ping` is a `server/discover` (every modern server implements it, it changes
/// nothing, and it proves the server answers); every other method is itself.
pub(crate) fn method_in_era(method: &str, modern: bool) -> &str {
    if modern && method == "ping" {
        "server/discover"
    } else {
        method
    }
}

/// `params` as an object (params that are not one are replaced by an empty object) whose
/// `_meta` object (made when absent or not an object) `write` has added to.
fn with_meta(params: Option<Value>, write: impl FnOnce(&mut Map<String, Value>)) -> Value {
    let mut obj = match params {
        Some(Value::Object(obj)) => obj,
        Some(_) | None => Map::new(),
    };
    let meta = obj
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()));
    if !meta.is_object() {
        *meta = Value::Object(Map::new());
    }
    if let Value::Object(meta) = meta {
        write(meta);
    }
    Value::Object(obj)
}

/// The room a request frame starts with, beside its method's length.
const FRAME_START: usize = 256;

/// A request frame; `progress_token`, when given, is put in `params._meta.progressToken`, and
/// a modern request's envelope goes into `params._meta` too (its keys are the client's; the
/// caller's own `_meta` keys are kept).
pub(crate) fn request(
    id: u64,
    method: &str,
    params: Option<Value>,
    progress_token: Option<u64>,
    envelope: Option<&Envelope<'_>>,
) -> Outgoing {
    let params = match (params, progress_token, envelope) {
        (p, None, None) => p,
        (p, token, envelope) => Some(with_meta(p, |meta| {
            if let Some(token) = token {
                meta.insert("progressToken".into(), token.into());
            }
            if let Some(envelope) = envelope {
                envelope.write(meta);
            }
        })),
    };
    // Written straight out (no map built first), keys in the order a map would sort them.
    // Room for the envelope and small params at once (the buffer is sent and freed; the copy
    // kept for a resend is made to measure), so it is not grown while the params are written.
    let kind = FrameKind::Request { id, own: false };
    let head = Head::new(kind, method, params.as_ref());
    let mut frame = Vec::with_capacity(FRAME_START + method.len());
    frame.extend_from_slice(b"{\"id\":");
    serde_json::to_writer(&mut frame, &id).expect("a number always serializes");
    frame.extend_from_slice(b",\"jsonrpc\":\"2.0\",\"method\":");
    serde_json::to_writer(&mut frame, method).expect("a string always serializes");
    if let Some(p) = params {
        frame.extend_from_slice(b",\"params\":");
        serde_json::to_writer(&mut frame, &p).expect("a Value always serializes");
    }
    frame.push(b'}');
    Outgoing { head, bytes: frame }
}

/// A request frame the machine built, under a new id (its progress token, when it asked for
/// progress, follows the id). A frame that does not parse (never: the machine wrote it) is
/// returned unchanged.
pub(crate) fn with_new_id(frame: &Outgoing, id: u64, progress: bool) -> Outgoing {
    let Ok(Value::Object(mut msg)) = serde_json::from_slice::<Value>(frame) else {
        return frame.clone();
    };
    msg.insert("id".into(), id.into());
    if progress
        && let Some(Value::Object(params)) = msg.get_mut("params")
        && let Some(Value::Object(meta)) = params.get_mut("_meta")
    {
        meta.insert("progressToken".into(), id.into());
    }
    renumbered(frame, id, &Value::Object(msg))
}

/// The frame `msg`, which is `frame` under the new id `id` (its method and the params its head
/// mirrors unchanged).
fn renumbered(frame: &Outgoing, id: u64, msg: &Value) -> Outgoing {
    Outgoing {
        head: Head {
            kind: FrameKind::Request {
                id,
                own: frame.head.own(),
            },
            ..frame.head.clone()
        },
        bytes: encode(msg),
    }
}

/// A request frame the machine built, sent again for the next round of an `input_required`
/// answer: under a new id (its progress token following it), with `inputResponses` and the
/// round's `requestState` exactly as received, or without any `requestState` when the round
/// had none (a previous round's is removed). A frame that does not parse (never: the machine
/// wrote it) is returned unchanged.
pub(crate) fn with_inputs(
    frame: &Outgoing,
    id: u64,
    progress: bool,
    inputs: Map<String, Value>,
    state: Option<&str>,
) -> Outgoing {
    let Ok(Value::Object(mut msg)) = serde_json::from_slice::<Value>(frame) else {
        return frame.clone();
    };
    msg.insert("id".into(), id.into());
    if let Some(Value::Object(params)) = msg.get_mut("params") {
        if progress && let Some(Value::Object(meta)) = params.get_mut("_meta") {
            meta.insert("progressToken".into(), id.into());
        }
        if inputs.is_empty() {
            params.remove("inputResponses");
        } else {
            params.insert("inputResponses".into(), Value::Object(inputs));
        }
        match state {
            Some(s) => params.insert("requestState".into(), s.into()),
            None => params.remove("requestState"),
        };
    }
    renumbered(frame, id, &Value::Object(msg))
}

/// The methods whose result may be `input_required` (2026-07-28).
pub(crate) const INPUT_METHODS: [&str; 3] = ["tools/call", "prompts/get", "resources/read"];

/// A notification frame. In the modern era (`version` given) its `params._meta` names the
/// protocol version, as a request's does (the caller's own `_meta` keys are kept), so that
/// Streamable HTTP posts it the modern way (`MCP-Protocol-Version`, `Mcp-Method`, no session).
pub(crate) fn notification(method: &str, params: Option<Value>, version: Option<&str>) -> Outgoing {
    let mut msg = Map::new();
    msg.insert("jsonrpc".into(), "2.0".into());
    msg.insert("method".into(), method.into());
    let params = match version {
        None => params,
        Some(version) => Some(with_meta(params, |meta| {
            meta.insert(META_PROTOCOL_VERSION.into(), version.into());
        })),
    };
    let head = Head::new(FrameKind::Notification, method, params.as_ref());
    if let Some(p) = params {
        msg.insert("params".into(), p);
    }
    Outgoing {
        head,
        bytes: encode(&Value::Object(msg)),
    }
}

/// A response frame to a server request.
pub(crate) fn response(id: &ServerRequestId, result: Result<&Value, &RpcError>) -> Outgoing {
    let id = id.to_json();
    let bytes = match result {
        Ok(v) => encode(&json!({"jsonrpc": "2.0", "id": id, "result": v})),
        Err(e) => {
            let mut err = json!({"code": e.code, "message": e.message});
            if let Some(d) = &e.data {
                err["data"] = d.clone();
            }
            encode(&json!({"jsonrpc": "2.0", "id": id, "error": err}))
        }
    };
    Outgoing {
        head: Head::response(),
        bytes,
    }
}

/// `notifications/cancelled` for one of our requests.
pub(crate) fn cancelled(id: u64, reason: &str) -> Outgoing {
    notification(
        "notifications/cancelled",
        Some(json!({"requestId": id, "reason": reason})),
        None,
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
    Ok(ServerInfo::new(
        version.clone(),
        obj.get("serverInfo").cloned().unwrap_or(Value::Null),
        capabilities,
        obj.get("instructions")
            .and_then(Value::as_str)
            .map(str::to_owned),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_frame_is_the_compact_json_of_its_message() {
        let cases = [
            (
                7,
                "tools/call",
                Some(json!({"name": "e\"cho\n", "arguments": {"b": [1, 2.5], "a": null}})),
            ),
            (u64::MAX, "m\u{1}é", None),
            (0, "ping", Some(json!([]))),
            (9, "a", None),
            (10, "b", None),
            ((1 << 53) + 1, "c", None),
        ];
        for (id, method, params) in cases {
            let mut msg = json!({"jsonrpc": "2.0", "id": id, "method": method});
            if let Some(p) = &params {
                msg["params"] = p.clone();
            }
            let frame = request(id, method, params, None, None);
            assert_eq!(frame.bytes, serde_json::to_vec(&msg).unwrap());
            assert_eq!(frame.head.request(), Some(id));
            assert!(!frame.head.own());
            assert_eq!(frame.head.method.as_deref(), Some(method));
            assert_eq!(frame.head.modern, None);
            assert!(frame.starts_with(format!("{{\"id\":{id},").as_bytes()));
            assert!(!frame.contains(&b'\n'));
        }
    }

    /// The head says what the bytes say: read back from them, the same standard headers,
    /// era, kind, method and cancelled request.
    #[test]
    fn the_head_says_what_the_bytes_say() {
        let config = crate::Config::default();
        let envelope = Envelope {
            version: "2026-07-28",
            config: &config,
        };
        let caller_meta = json!({"name": "n", "_meta": {META_PROTOCOL_VERSION: "1999-x"}});
        let frames = [
            request(
                1,
                "tools/call",
                Some(json!({"name": "w", "arguments": {}})),
                None,
                None,
            ),
            request(
                2,
                "tools/call",
                Some(json!({"name": "w é"})),
                Some(2),
                Some(&envelope),
            ),
            request(
                3,
                "resources/read",
                Some(json!({"uri": "x:y"})),
                None,
                Some(&envelope),
            ),
            request(
                4,
                "prompts/get",
                Some(json!({"name": 5})),
                None,
                Some(&envelope),
            ),
            request(5, "tools/list", None, None, Some(&envelope)),
            request(6, "my/method", Some(json!([1])), None, None),
            request(7, "prompts/get", Some(caller_meta), None, None),
            notification("notifications/x", Some(json!({"a": 1})), Some("2026-07-28")),
            notification("notifications/initialized", None, None),
            notification(
                "notifications/cancelled",
                Some(json!({"requestId": "s"})),
                None,
            ),
            cancelled(9, "timeout"),
            response(
                &ServerRequestId::from_json(&json!(3)).unwrap(),
                Ok(&json!({})),
            ),
        ];
        for frame in frames {
            let v: Value = serde_json::from_slice(&frame).unwrap();
            let shown = String::from_utf8_lossy(&frame).into_owned();
            let head = &frame.head;
            assert_eq!(
                crate::headers::standard(&v),
                crate::headers::standard_of(head),
                "{shown}"
            );
            assert_eq!(crate::headers::is_modern(&v), head.is_modern(), "{shown}");
            assert_eq!(
                v.get("method").and_then(Value::as_str),
                head.method.as_deref(),
                "{shown}"
            );
            let kind = match (v.get("id"), v.get("method")) {
                (Some(id), Some(_)) => FrameKind::Request {
                    id: id.as_u64().unwrap(),
                    own: false,
                },
                (None, Some(_)) => FrameKind::Notification,
                (Some(_) | None, None) => FrameKind::Response,
            };
            assert_eq!(kind, head.kind, "{shown}");
            let cancels = (head.method.as_deref() == Some("notifications/cancelled"))
                .then(|| v["params"]["requestId"].as_u64())
                .flatten();
            assert_eq!(cancels, head.cancels, "{shown}");
        }
        assert_eq!(cancelled(9, "x").head.cancels, Some(9));
    }

    #[test]
    fn a_modern_notification_names_the_version_and_keeps_the_callers_meta() {
        let legacy = notification("notifications/x", Some(json!({"a": 1})), None);
        let legacy: Value = serde_json::from_slice(&legacy).unwrap();
        assert_eq!(
            legacy,
            json!({"jsonrpc": "2.0", "method": "notifications/x", "params": {"a": 1}})
        );
        let params = json!({"a": 1, "_meta": {"k": "v"}});
        let modern = notification("notifications/x", Some(params), Some("2026-07-28"));
        let modern: Value = serde_json::from_slice(&modern).unwrap();
        assert_eq!(
            modern["params"],
            json!({"a": 1, "_meta": {"k": "v", META_PROTOCOL_VERSION: "2026-07-28"}})
        );
        assert!(crate::headers::is_modern(&modern));
        let bare = notification("notifications/x", None, Some("2026-07-28"));
        let bare: Value = serde_json::from_slice(&bare).unwrap();
        assert_eq!(
            bare["params"],
            json!({"_meta": {META_PROTOCOL_VERSION: "2026-07-28"}})
        );
    }

    #[test]
    fn a_request_under_a_new_id_keeps_everything_else() {
        let old = request(
            4,
            "tools/call",
            Some(json!({"name": "t", "x": [1]})),
            Some(4),
            None,
        );
        let new: Value = serde_json::from_slice(&with_new_id(&old, 9, true)).unwrap();
        assert_eq!(new["id"], 9);
        assert_eq!(new["method"], "tools/call");
        assert_eq!(new["params"]["x"], json!([1]));
        assert_eq!(new["params"]["_meta"]["progressToken"], 9);
        let plain = request(5, "ping", None, None, None);
        let new: Value = serde_json::from_slice(&with_new_id(&plain, 6, false)).unwrap();
        assert_eq!(new, json!({"jsonrpc": "2.0", "id": 6, "method": "ping"}));
    }

    #[test]
    fn progress_token_goes_into_meta() {
        let f = request(7, "tools/call", Some(json!({"name": "x"})), Some(7), None);
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
    fn a_modern_request_carries_the_envelope_and_keeps_the_callers_meta() {
        let config = crate::Config::default();
        let envelope = Envelope {
            version: "2026-07-28",
            config: &config,
        };
        let params =
            json!({"name": "t", "_meta": {"traceparent": "x", META_PROTOCOL_VERSION: "1"}});
        let f = request(3, "tools/call", Some(params), Some(3), Some(&envelope));
        let v: Value = serde_json::from_slice(&f).unwrap();
        let meta = &v["params"]["_meta"];
        assert_eq!(meta[META_PROTOCOL_VERSION], "2026-07-28");
        assert_eq!(meta["traceparent"], "x");
        assert_eq!(meta["progressToken"], 3);
        assert!(meta[META_CLIENT_CAPABILITIES].is_object());
        assert_eq!(meta[META_CLIENT_INFO]["name"], "mcp-client-rs");
        let bare: Value =
            serde_json::from_slice(&request(4, "server/discover", None, None, Some(&envelope)))
                .unwrap();
        assert_eq!(bare["params"]["_meta"][META_PROTOCOL_VERSION], "2026-07-28");
    }

    #[test]
    fn an_input_round_is_sent_again_with_its_inputs_and_its_exact_state() {
        let config = crate::Config::default();
        let envelope = Envelope {
            version: "2026-07-28",
            config: &config,
        };
        let first = request(
            3,
            "tools/call",
            Some(json!({"name": "t", "arguments": {"a": 1}})),
            Some(3),
            Some(&envelope),
        );
        let mut inputs = Map::new();
        inputs.insert("confirm".into(), json!({"action": "accept"}));
        // A state is echoed byte for byte, whatever it holds (never parsed).
        let state = r#"{"round":1,"x":"é"}"#;
        let second = with_inputs(&first, 9, true, inputs, Some(state));
        let v: Value = serde_json::from_slice(&second).unwrap();
        assert_eq!(v["id"], 9);
        assert_eq!(v["params"]["requestState"], state);
        assert_eq!(v["params"]["inputResponses"]["confirm"]["action"], "accept");
        assert_eq!(v["params"]["arguments"]["a"], 1);
        assert_eq!(v["params"]["_meta"]["progressToken"], 9);
        assert_eq!(v["params"]["_meta"][META_PROTOCOL_VERSION], "2026-07-28");
        // The next round without a state carries none, and no inputs when none were asked.
        let third = with_inputs(&second, 10, false, Map::new(), None);
        let v: Value = serde_json::from_slice(&third).unwrap();
        assert!(v["params"].get("requestState").is_none());
        assert!(v["params"].get("inputResponses").is_none());
        assert_eq!(third.head.method.as_deref(), Some("tools/call"));
        assert_eq!(third.head.request(), Some(10));
        assert_eq!(third.head.name(), Some("t"));
    }

    #[test]
    fn only_modern_errors_say_modern() {
        let err = |code, data| RpcError {
            code,
            message: "m".into(),
            data,
        };
        assert_eq!(
            modern_error(&err(-32022, Some(json!({"supported": ["2026-07-28"]})))),
            Some(ModernError::UnsupportedVersion(vec!["2026-07-28".into()]))
        );
        assert_eq!(modern_error(&err(-32022, None)), None);
        assert_eq!(
            modern_error(&err(-32022, Some(json!({"supported": [1]})))),
            None
        );
        assert_eq!(modern_error(&err(-32020, None)), Some(ModernError::Other));
        for code in [-32601, -32602, -32600, -32000] {
            assert_eq!(modern_error(&err(code, None)), None);
        }
    }

    #[test]
    fn discover_results() {
        let ok = json!({"supportedVersions": ["2026-07-28", "2099-01-01"], "capabilities": {},
            "_meta": {META_SERVER_INFO: {"name": "s", "version": "1"}}});
        assert_eq!(
            discover_versions(&ok),
            Some(vec!["2026-07-28".into(), "2099-01-01".into()])
        );
        let info = discovered(&ok, "2026-07-28");
        assert_eq!(info.name(), "s");
        let top = json!({"supportedVersions": ["2026-07-28"], "serverInfo": {"name": "t"}});
        assert_eq!(discovered(&top, "2026-07-28").name(), "t");
        for bad in [
            json!({}),
            json!({"supportedVersions": []}),
            json!({"supportedVersions": "2026-07-28"}),
            json!({"supportedVersions": ["2026-07-28"], "capabilities": 1}),
            json!({"supportedVersions": ["2026-07-28"], "resultType": "input_required"}),
            json!([]),
        ] {
            assert_eq!(discover_versions(&bad), None, "{bad}");
        }
        assert_eq!(
            common_modern(&["2099-01-01", "2026-07-28"]),
            Some("2026-07-28")
        );
        assert_eq!(common_modern(&["2025-06-18"]), None);
        assert_eq!(common_legacy(&["2025-06-18"]), Some("2025-06-18"));
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
