//! The modern era's HTTP headers ([`mcp_machine::headers`]) on arbitrary input: never a panic;
//! an encoded value is always a valid header value and reads back as the input.

use mcp_machine::headers::{decode_value, encode_value, params, standard, validate_tool};
use serde_json::{Value, json};

/// Checks one value's encoding: visible ASCII and inner spaces only, and it decodes back.
fn check_value(v: &str) {
    let encoded = encode_value(v);
    assert!(
        encoded.bytes().all(|b| (0x20..=0x7e).contains(&b)),
        "{encoded:?} is not a header value"
    );
    assert!(
        !encoded.starts_with(' ') && !encoded.ends_with(' '),
        "{encoded:?}"
    );
    if encoded != v {
        assert!(
            encoded.starts_with("=?base64?") && encoded.ends_with("?="),
            "{encoded:?}"
        );
    }
    assert_eq!(decode_value(&encoded).as_deref(), Some(v), "{encoded:?}");
}

/// The input as text (lossily) through `encode_value`; as JSON (when it is) as a tool for
/// `validate_tool`, as a frame for `standard`, and as arguments for the tool's own headers.
pub fn check(bytes: &[u8]) {
    check_value(&String::from_utf8_lossy(bytes));
    let Ok(value) = serde_json::from_slice::<Value>(bytes) else {
        return;
    };
    for (_, v) in standard(&value) {
        check_value(&decode_value(&v).unwrap_or_default());
        assert!(v.bytes().all(|b| (0x20..=0x7e).contains(&b)), "{v:?}");
    }
    // The value as a tool, and as the input schema of one.
    let wrapped = json!({"name": "t", "inputSchema": value});
    for tool in [&value, &wrapped] {
        if let Ok(headers) = validate_tool(tool) {
            for m in headers.mappings() {
                assert!(!m.name.is_empty() && !m.path.is_empty(), "{m:?}");
            }
            let arguments = tool.get("arguments").unwrap_or(&value);
            for (name, v) in params(arguments, &headers) {
                assert!(name.starts_with("Mcp-Param-"), "{name}");
                assert!(v.bytes().all(|b| (0x20..=0x7e).contains(&b)), "{v:?}");
            }
        }
    }
}
