//! The HTTP headers of a modern (2026-07-28) request: the standard ones mirrored from the
//! JSON-RPC body (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`), the `Mcp-Param-*` ones a
//! tool asks for with `x-mcp-header` in its `inputSchema`, and the encoding of their values.
//!
//! Pure functions over `serde_json` values: no IO, no HTTP types. The HTTP transport turns the
//! pairs into real headers; this module only says which, and with what text. It also holds
//! the two error codes the transport uses for the answers it has to make up itself
//! ([`HTTP_REFUSED`], [`STREAM_LOST`]).
//!
//! Not the validation of a whole `tools/list` result (dropping invalid tools is the client's
//! job): [`validate_tool`] judges one tool.

use std::collections::HashSet;

use base64::prelude::{BASE64_STANDARD, Engine as _};
use serde_json::Value;

use crate::outgoing::Head;

/// The `_meta` key whose presence (a string) makes a frame modern: the protocol version of
/// the 2026-07-28 era and later.
pub const PROTOCOL_VERSION_META: &str = "io.modelcontextprotocol/protocolVersion";

pub use crate::codes::{AUTH_REQUIRED, HTTP_REFUSED, STREAM_LOST};

/// The prefix of an encoded value.
const SENTINEL_START: &str = "=?base64?";
/// The suffix of an encoded value.
const SENTINEL_END: &str = "?=";

/// The largest integer magnitude an `Mcp-Param-*` header carries: 2^53 − 1, the range where
/// every integer is exact in an IEEE double (a JavaScript server reads it back unchanged).
pub const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// Whether `v` looks like an encoded value (`^=\?base64\?.*\?=$`), compared without regard to
/// case, so that a receiver that matches case-insensitively never misreads a plain value.
fn is_sentinel(v: &str) -> bool {
    let (start, end) = (SENTINEL_START.len(), SENTINEL_END.len());
    v.len() >= start + end
        && v.get(..start)
            .is_some_and(|s| s.eq_ignore_ascii_case(SENTINEL_START))
        && v.ends_with(SENTINEL_END)
}

/// The text of a header value for `v`: `v` itself when every character is visible ASCII or
/// space (0x20–0x7E), it neither starts nor ends with a space, and it does not look like an
/// encoded value; otherwise `=?base64?<RFC 4648 base64, padded, of its UTF-8>?=`. A tab, CR,
/// LF, any other control character or any non-ASCII character forces the encoding. The empty
/// string stays empty.
///
/// The result is always a valid header value (visible ASCII and inner spaces only). Not a
/// validation: every string has an encoding.
pub fn encode_value(v: &str) -> String {
    let plain = v.bytes().all(|b| (0x20..=0x7e).contains(&b))
        && !v.starts_with(' ')
        && !v.ends_with(' ')
        && !is_sentinel(v);
    if plain {
        v.to_owned()
    } else {
        format!(
            "{SENTINEL_START}{}{SENTINEL_END}",
            BASE64_STANDARD.encode(v.as_bytes())
        )
    }
}

/// The inverse of [`encode_value`], as a server reads a header: a value of the form
/// `=?base64?…?=` is decoded (`None` when its middle is not padded standard base64 of UTF-8);
/// any other value is returned as it is. For tests and servers; the client never decodes.
pub fn decode_value(v: &str) -> Option<String> {
    if !is_sentinel(v) {
        return Some(v.to_owned());
    }
    let inner = v.get(SENTINEL_START.len()..v.len() - SENTINEL_END.len())?;
    let bytes = BASE64_STANDARD.decode(inner).ok()?;
    String::from_utf8(bytes).ok()
}

/// The text of an argument for an `Mcp-Param-*` header, before encoding: a string as it is,
/// an integer in decimal, a boolean as `true` or `false`. `None` (no header) for `null` and
/// every other value (a float, an array, an object).
///
/// Does not bound integers: [`params`] leaves out those beyond ±[`MAX_SAFE_INTEGER`].
pub fn param_value(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) if n.is_i64() || n.is_u64() => Some(n.to_string()),
        _ => None,
    }
}

/// Whether a frame is of the modern era: its `params._meta` holds
/// [`PROTOCOL_VERSION_META`] as a string. Every other frame (the handshake era's, responses,
/// anything unparsed) is not.
pub fn is_modern(frame: &Value) -> bool {
    protocol_version(frame).is_some()
}

/// The protocol version a modern frame names in its `_meta`.
fn protocol_version(frame: &Value) -> Option<&str> {
    frame
        .get("params")?
        .get("_meta")?
        .get(PROTOCOL_VERSION_META)?
        .as_str()
}

/// The standard headers of a modern request frame, in this order: `MCP-Protocol-Version` (the
/// version of its `_meta`), `Mcp-Method` (when it has a method), and `Mcp-Name` (`params.name`
/// of `tools/call` and `prompts/get`, `params.uri` of `resources/read`, when a string), each
/// value encoded with [`encode_value`].
///
/// Empty for a frame that is not modern ([`is_modern`]). Not the `Mcp-Param-*` headers (see
/// [`params`]) and not the transport's own (`Accept`, `Content-Type`).
pub fn standard(frame: &Value) -> Vec<(&'static str, String)> {
    let Some(version) = protocol_version(frame) else {
        return Vec::new();
    };
    let method = frame.get("method").and_then(Value::as_str);
    let name = method
        .and_then(name_field)
        .and_then(|f| frame.get("params")?.get(f))
        .and_then(Value::as_str);
    standard_from(version, method, name)
}

/// [`standard`] of a frame the machine wrote, from its [`Head`] (without reading the frame):
/// the same headers, in the same order. Empty for a frame that is not modern.
pub fn standard_of(head: &Head) -> Vec<(&'static str, String)> {
    match &head.modern {
        Some(m) => standard_from(&m.version, head.method.as_deref(), m.name.as_deref()),
        None => Vec::new(),
    }
}

/// The standard headers of a modern frame whose `_meta` names `version`, whose method is
/// `method` and whose `Mcp-Name` value ([`name_field`]) is `name`: what [`standard`] gives,
/// from what the frame's head says rather than the frame.
pub fn standard_from(
    version: &str,
    method: Option<&str>,
    name: Option<&str>,
) -> Vec<(&'static str, String)> {
    let mut headers = vec![("MCP-Protocol-Version", encode_value(version))];
    let Some(method) = method else {
        return headers;
    };
    headers.push(("Mcp-Method", encode_value(method)));
    if let Some(name) = name {
        headers.push(("Mcp-Name", encode_value(name)));
    }
    headers
}

/// The member of a modern request's `params` its `Mcp-Name` header mirrors: `name` for
/// `tools/call` and `prompts/get`, `uri` for `resources/read`, `taskId` for the tasks
/// extension's `tasks/get`, `tasks/update` and `tasks/cancel`; `None` for every other method
/// (no `Mcp-Name`).
pub fn name_field(method: &str) -> Option<&'static str> {
    match method {
        "tools/call" | "prompts/get" => Some("name"),
        "resources/read" => Some("uri"),
        // The tasks extension routes a task's requests by its id.
        "tasks/get" | "tasks/update" | "tasks/cancel" => Some("taskId"),
        _ => None,
    }
}

/// One `x-mcp-header` mapping of a tool: the header `Mcp-Param-<name>` carries the argument
/// at `path`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeaderMapping {
    /// The header's suffix, as the schema spells it (an RFC 9110 token).
    pub name: String,
    /// The property names leading from the arguments object to the argument (never empty).
    pub path: Vec<String>,
}

/// The `x-mcp-header` mappings of one valid tool, depth first through its schema's
/// properties (each map in key order). Empty for a tool without annotations. Built only by [`validate_tool`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ToolHeaders {
    mappings: Vec<HeaderMapping>,
}

impl ToolHeaders {
    /// The mappings.
    pub fn mappings(&self) -> &[HeaderMapping] {
        &self.mappings
    }

    /// Whether the tool asks for no header.
    pub fn is_empty(&self) -> bool {
        self.mappings.is_empty()
    }
}

/// Why a tool's `x-mcp-header` annotations are invalid (the tool must then not be offered over
/// HTTP). `at` is a JSON pointer into the tool's `inputSchema`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HeaderRule {
    /// The annotation's value is not a string.
    #[error("the x-mcp-header at {at:?} is not a string")]
    NotAString {
        /// Where.
        at: String,
    },
    /// The annotation is the empty string.
    #[error("the x-mcp-header at {at:?} is empty")]
    Empty {
        /// Where.
        at: String,
    },
    /// The annotation holds a character an HTTP header name may not (a space, a colon, a
    /// control character, a non-ASCII character, …).
    #[error("the x-mcp-header {name:?} at {at:?} is not an HTTP token")]
    NotAToken {
        /// The annotation.
        name: String,
        /// Where.
        at: String,
    },
    /// Two annotations name the same header, ignoring case.
    #[error("the x-mcp-header {name:?} is given twice (case-insensitively)")]
    Duplicate {
        /// The second annotation.
        name: String,
    },
    /// The annotated property's `type` is not exactly `"string"`, `"integer"` or `"boolean"`.
    #[error(
        "the x-mcp-header {name:?} at {at:?} is on a property of type {found}, not string, integer or boolean"
    )]
    NotPrimitive {
        /// The annotation.
        name: String,
        /// Where.
        at: String,
        /// The `type` found (`missing` when none), as JSON.
        found: String,
    },
    /// The annotation sits where no argument is found from the root through `properties`
    /// alone (under `items`, `anyOf`, `$defs`, …, or on the root itself).
    #[error("the x-mcp-header at {at:?} is not on a property reached through properties alone")]
    NotReachable {
        /// Where.
        at: String,
    },
}

/// A tool whose `x-mcp-header` annotations break a rule.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("tool {tool:?}: {reason}")]
#[non_exhaustive]
pub struct InvalidToolHeaders {
    /// The tool's `name` (empty when it has none).
    pub tool: String,
    /// The first rule broken.
    pub reason: HeaderRule,
}

/// Keywords whose values are data, not schemas: an `x-mcp-header` key inside them is not an
/// annotation.
const DATA_KEYWORDS: &[&str] = &[
    "const",
    "default",
    "enum",
    "examples",
    "example",
    "description",
    "title",
    "$comment",
];

/// Whether `c` is an RFC 9110 `tchar`.
fn is_tchar(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c)
}

/// Appends `key` to a JSON pointer (RFC 6901 escaping).
fn pointer(base: &str, key: &str) -> String {
    format!("{base}/{}", key.replace('~', "~0").replace('/', "~1"))
}

/// Checks the `x-mcp-header` annotations of a tool (an entry of a `tools/list` result) and
/// returns its mappings.
///
/// Valid when every `x-mcp-header` in its `inputSchema` is a non-empty RFC 9110 token, unique
/// case-insensitively, on a property whose `type` is exactly `"string"`, `"integer"` or
/// `"boolean"`, reached from the root only through `properties` maps; an annotation anywhere
/// else (`items`, `anyOf`, `oneOf`, `allOf`, `not`, `if`/`then`/`else`, `$defs`, an unknown
/// keyword, …) makes the tool invalid. Property names are not keywords: a property *named*
/// `x-mcp-header` is just a property. A tool without annotations (or without an
/// `inputSchema`) is valid with no mappings. Never panics, whatever the value; walks the
/// schema without recursion.
pub fn validate_tool(tool: &Value) -> Result<ToolHeaders, InvalidToolHeaders> {
    let name = tool.get("name").and_then(Value::as_str).unwrap_or_default();
    match tool.get("inputSchema") {
        Some(schema) => validate_input_schema(name, schema),
        None => Ok(ToolHeaders::default()),
    }
}

/// [`validate_tool`] of the tool `name` whose `inputSchema` is `schema`, without a tool
/// object built to hold them (`Value::Null`, a schema that is absent, has no mappings). The
/// same rules and the same errors.
pub fn validate_input_schema(name: &str, root: &Value) -> Result<ToolHeaders, InvalidToolHeaders> {
    let invalid = |reason| InvalidToolHeaders {
        tool: name.to_owned(),
        reason,
    };
    let mut mappings = Vec::new();
    let mut seen = HashSet::new();
    // (schema, the property path when reached through `properties` alone, its pointer)
    let mut stack: Vec<(&Value, Option<Vec<String>>, String)> =
        vec![(root, Some(Vec::new()), String::new())];
    while let Some((schema, path, at)) = stack.pop() {
        let Value::Object(map) = schema else {
            // A boolean schema, or an array of schemas (an old `items`): walk the elements.
            if let Value::Array(items) = schema {
                for (i, item) in items.iter().enumerate().rev() {
                    stack.push((item, None, pointer(&at, &i.to_string())));
                }
            }
            continue;
        };
        if let Some(header) = map.get("x-mcp-header") {
            let at = pointer(&at, "x-mcp-header");
            let Value::String(name) = header else {
                return Err(invalid(HeaderRule::NotAString { at }));
            };
            if name.is_empty() {
                return Err(invalid(HeaderRule::Empty { at }));
            }
            if !name.chars().all(is_tchar) {
                let name = name.clone();
                return Err(invalid(HeaderRule::NotAToken { name, at }));
            }
            let path = match path.as_ref() {
                Some(p) if !p.is_empty() => p.clone(),
                _ => return Err(invalid(HeaderRule::NotReachable { at })),
            };
            match map.get("type") {
                Some(Value::String(t))
                    if matches!(t.as_str(), "string" | "integer" | "boolean") => {}
                other => {
                    let found = other.map_or_else(|| "missing".to_owned(), Value::to_string);
                    let name = name.clone();
                    return Err(invalid(HeaderRule::NotPrimitive { name, at, found }));
                }
            }
            if !seen.insert(name.to_ascii_lowercase()) {
                let name = name.clone();
                return Err(invalid(HeaderRule::Duplicate { name }));
            }
            mappings.push(HeaderMapping {
                name: name.clone(),
                path,
            });
        }
        // Reverse order on the stack: the walk visits keys in their map order.
        for (key, value) in map.iter().rev() {
            let here = pointer(&at, key);
            match key.as_str() {
                "x-mcp-header" => {}
                k if DATA_KEYWORDS.contains(&k) => {}
                "properties" => {
                    // A map of property names to schemas: the names are not keywords.
                    let Value::Object(properties) = value else {
                        continue;
                    };
                    for (name, sub) in properties.iter().rev() {
                        let sub_path = path.as_ref().map(|p| {
                            let mut p = p.clone();
                            p.push(name.clone());
                            p
                        });
                        stack.push((sub, sub_path, pointer(&here, name)));
                    }
                }
                "$defs" | "definitions" | "patternProperties" | "dependentSchemas"
                | "dependencies" => {
                    // Maps of names to schemas, none reached through `properties`.
                    if let Value::Object(schemas) = value {
                        for (name, sub) in schemas.iter().rev() {
                            stack.push((sub, None, pointer(&here, name)));
                        }
                    }
                }
                // Any other keyword that holds objects or arrays may hold schemas (`items`,
                // `anyOf`, `not`, `if`, an extension): none is reached through `properties`.
                _ if value.is_object() || value.is_array() => stack.push((value, None, here)),
                _ => {}
            }
        }
    }
    Ok(ToolHeaders { mappings })
}

/// The `Mcp-Param-<name>` headers of a `tools/call` for a tool with `headers`, given its
/// `arguments`: one per mapping whose argument is present with a usable value
/// ([`param_value`]), encoded with [`encode_value`]. An absent or `null` argument, one of
/// another kind, or an integer beyond ±[`MAX_SAFE_INTEGER`] gets no header (the client refuses
/// such a call before it is sent; the transport never sends a rounded value).
pub fn params(arguments: &Value, headers: &ToolHeaders) -> Vec<(String, String)> {
    headers
        .mappings
        .iter()
        .filter_map(|m| {
            let value = m
                .path
                .iter()
                .try_fold(arguments, |v, key| v.as_object()?.get(key))?;
            if let Value::Number(n) = value {
                let safe = n
                    .as_i64()
                    .map(|i| i.unsigned_abs() <= MAX_SAFE_INTEGER)
                    .or_else(|| n.as_u64().map(|u| u <= MAX_SAFE_INTEGER))
                    .unwrap_or(false);
                if !safe {
                    return None;
                }
            }
            let text = param_value(value)?;
            Some((format!("Mcp-Param-{}", m.name), encode_value(&text)))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(schema: Value) -> Value {
        json!({"name": "t", "inputSchema": schema})
    }

    fn reason(schema: Value) -> HeaderRule {
        validate_tool(&tool(schema)).unwrap_err().reason
    }

    #[test]
    fn plain_values_stay_plain() {
        for v in [
            "",
            "a",
            "us-west-1",
            "a b",
            "tools/call",
            "file:///x?y=1",
            "=?base64?",
        ] {
            assert_eq!(encode_value(v), v);
        }
    }

    #[test]
    fn values_that_need_it_are_base64() {
        assert_eq!(encode_value("日本"), "=?base64?5pel5pys?=");
        assert_eq!(encode_value(" a"), "=?base64?IGE=?=");
        assert_eq!(encode_value("a "), "=?base64?YSA=?=");
        assert_eq!(encode_value("a\tb"), "=?base64?YQli?=");
        assert_eq!(encode_value("a\r\nb"), "=?base64?YQ0KYg==?=");
        assert_eq!(encode_value("\u{7f}"), "=?base64?fw==?=");
        assert_eq!(encode_value(" "), "=?base64?IA==?=");
        // The sentinel itself, in any case.
        assert_eq!(encode_value("=?base64?x?="), "=?base64?PT9iYXNlNjQ/eD89?=");
        assert_eq!(encode_value("=?base64??="), "=?base64?PT9iYXNlNjQ/Pz0=?=");
        assert!(encode_value("=?BASE64?x?=").starts_with(SENTINEL_START));
        for v in ["日本", " a", "a\tb", "=?base64?x?=", "\0"] {
            assert_eq!(decode_value(&encode_value(v)).as_deref(), Some(v));
        }
        assert_eq!(decode_value("=?base64?!!?="), None);
    }

    #[test]
    fn param_values() {
        assert_eq!(param_value(&json!("x")).as_deref(), Some("x"));
        assert_eq!(param_value(&json!(-42)).as_deref(), Some("-42"));
        assert_eq!(
            param_value(&json!(u64::MAX)).as_deref(),
            Some("18446744073709551615")
        );
        assert_eq!(param_value(&json!(true)).as_deref(), Some("true"));
        assert_eq!(param_value(&json!(false)).as_deref(), Some("false"));
        for v in [json!(null), json!(1.5), json!([1]), json!({"a": 1})] {
            assert_eq!(param_value(&v), None, "{v}");
        }
    }

    fn modern(method: &str, params: Value) -> Value {
        let mut params = params;
        params["_meta"] = json!({PROTOCOL_VERSION_META: "2026-07-28"});
        json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
    }

    #[test]
    fn standard_headers() {
        let call = modern(
            "tools/call",
            json!({"name": "get weather", "arguments": {}}),
        );
        assert!(is_modern(&call));
        assert_eq!(
            standard(&call),
            [
                ("MCP-Protocol-Version", "2026-07-28".to_owned()),
                ("Mcp-Method", "tools/call".to_owned()),
                ("Mcp-Name", "get weather".to_owned()),
            ]
        );
        let read = modern("resources/read", json!({"uri": "file:///ü"}));
        assert_eq!(standard(&read)[2], ("Mcp-Name", encode_value("file:///ü")));
        let prompt = modern("prompts/get", json!({"name": "p"}));
        assert_eq!(standard(&prompt)[2], ("Mcp-Name", "p".to_owned()));
        let list = modern("tools/list", json!({}));
        assert_eq!(standard(&list).len(), 2);
        // No name, or not a string: no Mcp-Name.
        assert_eq!(standard(&modern("tools/call", json!({"name": 3}))).len(), 2);
        // The tasks extension: a task's requests are named by its id.
        for method in ["tasks/get", "tasks/update", "tasks/cancel"] {
            let task = modern(method, json!({"taskId": "t-1"}));
            assert_eq!(
                standard(&task)[2],
                ("Mcp-Name", "t-1".to_owned()),
                "{method}"
            );
        }
    }

    #[test]
    fn legacy_frames_have_no_standard_headers() {
        for frame in [
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "x"}}),
            json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}),
            json!({"jsonrpc": "2.0", "id": 1, "result": {}}),
            json!({"jsonrpc": "2.0", "id": 1, "method": "x", "params": {"_meta": {PROTOCOL_VERSION_META: 1}}}),
            json!(null),
            json!([1, 2]),
        ] {
            assert!(!is_modern(&frame), "{frame}");
            assert!(standard(&frame).is_empty(), "{frame}");
        }
    }

    #[test]
    fn a_tool_without_annotations_is_valid() {
        for t in [
            json!({"name": "t"}),
            tool(json!({"type": "object"})),
            tool(json!({"type": "object", "properties": {"a": {"type": "string"}}})),
            tool(json!(true)),
        ] {
            assert!(validate_tool(&t).unwrap().is_empty(), "{t}");
        }
    }

    #[test]
    fn valid_mappings_are_found_with_their_paths() {
        let t = tool(json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "n": {"type": "integer", "x-mcp-header": "N"},
            "deep": {"type": "object", "properties": {
                "flag": {"type": "boolean", "x-mcp-header": "Flag"}}},
            "x-mcp-header": {"type": "string", "x-mcp-header": "Named"},
            "properties": {"type": "string"},
        }}));
        let h = validate_tool(&t).unwrap();
        let got: Vec<_> = h
            .mappings()
            .iter()
            .map(|m| (m.name.as_str(), m.path.join(".")))
            .collect();
        assert_eq!(
            got,
            [
                ("Flag", "deep.flag".to_owned()),
                ("N", "n".to_owned()),
                ("Region", "region".to_owned()),
                ("Named", "x-mcp-header".to_owned()),
            ]
        );
    }

    #[test]
    fn a_property_named_like_a_keyword_is_a_property() {
        // `properties` as a property name, holding a property-name map walked as a schema.
        let t = tool(json!({"type": "object", "properties": {
            "properties": {"type": "object", "properties": {
                "x-mcp-header": {"type": "string", "x-mcp-header": "A"}}}}}));
        let h = validate_tool(&t).unwrap();
        assert_eq!(h.mappings()[0].path, ["properties", "x-mcp-header"]);
        // A property named `x-mcp-header` whose schema is a string is not an annotation.
        let t = tool(json!({"type": "object", "properties": {"x-mcp-header": "not a schema"}}));
        assert!(validate_tool(&t).unwrap().is_empty());
    }

    #[test]
    fn bad_names_are_refused() {
        let on = |h: Value| json!({"type": "object", "properties": {"a": {"type": "string", "x-mcp-header": h}}});
        assert!(matches!(reason(on(json!(""))), HeaderRule::Empty { .. }));
        assert!(matches!(
            reason(on(json!(1))),
            HeaderRule::NotAString { .. }
        ));
        for bad in ["a b", "a:b", "é", "a\u{1}", "a\tb", "(x)", "a/b"] {
            assert!(
                matches!(reason(on(json!(bad))), HeaderRule::NotAToken { .. }),
                "{bad}"
            );
        }
        assert!(validate_tool(&tool(on(json!("!#$%&'*+-.^_`|~09aZ")))).is_ok());
    }

    #[test]
    fn duplicates_are_refused_in_any_case() {
        for (a, b) in [("X", "X"), ("Region", "REGION")] {
            let s = json!({"type": "object", "properties": {
                "a": {"type": "string", "x-mcp-header": a},
                "b": {"type": "string", "x-mcp-header": b}}});
            assert!(matches!(reason(s), HeaderRule::Duplicate { .. }), "{a} {b}");
        }
    }

    #[test]
    fn only_primitive_types() {
        for ty in [
            json!("number"),
            json!("object"),
            json!("array"),
            json!("null"),
            json!(["string", "null"]),
        ] {
            let s =
                json!({"type": "object", "properties": {"a": {"type": ty, "x-mcp-header": "A"}}});
            assert!(matches!(reason(s), HeaderRule::NotPrimitive { .. }), "{ty}");
        }
        let s = json!({"type": "object", "properties": {"a": {"x-mcp-header": "A"}}});
        let HeaderRule::NotPrimitive { found, .. } = reason(s) else {
            panic!()
        };
        assert_eq!(found, "missing");
    }

    #[test]
    fn annotations_off_the_properties_path_are_refused() {
        let a = json!({"type": "string", "x-mcp-header": "A"});
        for s in [
            json!({"type": "object", "properties": {"l": {"type": "array", "items": a}}}),
            json!({"type": "object", "properties": {"l": {"type": "array", "items": [a]}}}),
            json!({"type": "object", "anyOf": [{"properties": {"a": a}}]}),
            json!({"type": "object", "oneOf": [a]}),
            json!({"type": "object", "allOf": [{"properties": {"a": a}}]}),
            json!({"type": "object", "not": a}),
            json!({"type": "object", "if": a, "then": a, "else": a}),
            json!({"type": "object", "$defs": {"d": a}, "properties": {"a": {"$ref": "#/$defs/d"}}}),
            json!({"type": "object", "definitions": {"d": a}}),
            json!({"type": "object", "additionalProperties": a}),
            json!({"type": "object", "patternProperties": {"^a": a}}),
            json!({"type": "object", "x-vendor": {"nested": a}}),
            json!({"type": "string", "x-mcp-header": "Root"}),
        ] {
            assert!(
                matches!(reason(s.clone()), HeaderRule::NotReachable { .. }),
                "{s}"
            );
        }
        // Data keywords hold values, not schemas.
        let s = json!({"type": "object", "default": {"x-mcp-header": "A"},
            "properties": {"a": {"type": "string", "examples": [{"x-mcp-header": 1}]}}});
        assert!(validate_tool(&tool(s)).unwrap().is_empty());
    }

    #[test]
    fn the_error_names_the_tool() {
        let t = json!({"name": "weather", "inputSchema": {"type": "object", "properties": {
            "a": {"type": "number", "x-mcp-header": "A"}}}});
        let e = validate_tool(&t).unwrap_err();
        assert_eq!(e.tool, "weather");
        let shown = e.to_string();
        assert!(
            shown.contains("weather") && shown.contains("/properties/a"),
            "{shown}"
        );
    }

    #[test]
    fn param_headers() {
        let t = tool(json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "n": {"type": "integer", "x-mcp-header": "N"},
            "flag": {"type": "boolean", "x-mcp-header": "Flag"},
            "deep": {"type": "object", "properties": {"s": {"type": "string", "x-mcp-header": "S"}}},
        }}));
        let h = validate_tool(&t).unwrap();
        let args =
            json!({"region": " eu", "n": 9007199254740991_i64, "flag": false, "deep": {"s": ""}});
        assert_eq!(
            params(&args, &h),
            [
                ("Mcp-Param-S".to_owned(), String::new()),
                ("Mcp-Param-Flag".to_owned(), "false".to_owned()),
                ("Mcp-Param-N".to_owned(), "9007199254740991".to_owned()),
                ("Mcp-Param-Region".to_owned(), "=?base64?IGV1?=".to_owned()),
            ]
        );
        // Absent, null, of another kind, or beyond 2^53 - 1: no header.
        for args in [
            json!({}),
            json!({"region": null, "n": 9007199254740992_i64, "deep": "x"}),
            json!({"n": -9007199254740992_i64, "flag": 1.5}),
            json!({"n": u64::MAX}),
            json!(null),
        ] {
            assert!(params(&args, &h).is_empty(), "{args}");
        }
        assert_eq!(
            params(&json!({"n": -9007199254740991_i64}), &h),
            [("Mcp-Param-N".to_owned(), "-9007199254740991".to_owned())]
        );
    }
}
