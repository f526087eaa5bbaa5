//! `KEY=VALUE` arguments typed by a tool's `inputSchema`.
//!
//! Each key must be one of the schema's `properties`. A value for a property of type
//! `integer`, `number`, `boolean`, `array` or `object` is parsed as JSON and must be of that
//! type; a `string` is taken as it is (no quotes needed). A property without a usable type
//! (no `type`, `anyOf`, ...) gets the JSON value if the text parses, else the string.

use serde_json::{Map, Value};

/// Splits `KEY=VALUE` at the first `=`.
pub fn split_pair(pair: &str) -> Result<(&str, &str), String> {
    match pair.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k, v)),
        _ => Err(format!("`{pair}` is not KEY=VALUE")),
    }
}

/// The JSON Schema types a property allows (`type` as a string or a list).
fn types_of(schema: &Value) -> Vec<&str> {
    match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ if schema.get("enum").is_some_and(|e| {
            e.as_array()
                .is_some_and(|a| !a.is_empty() && a.iter().all(Value::is_string))
        }) =>
        {
            vec!["string"]
        }
        _ => Vec::new(),
    }
}

fn type_matches(kind: &str, v: &Value) -> bool {
    match kind {
        "integer" => v.is_i64() || v.is_u64(),
        "number" => v.is_number(),
        "boolean" => v.is_boolean(),
        "array" => v.is_array(),
        "object" => v.is_object(),
        "null" => v.is_null(),
        "string" => v.is_string(),
        _ => false,
    }
}

/// Types one value for a property with this schema.
pub fn coerce(key: &str, raw: &str, schema: &Value) -> Result<Value, String> {
    let types = types_of(schema);
    let parsed = serde_json::from_str::<Value>(raw).ok();
    if types.is_empty() {
        return Ok(parsed.unwrap_or_else(|| Value::String(raw.to_owned())));
    }
    // JSON types first, so that `["integer", "string"]` takes 3 as a number.
    if let Some(v) = &parsed
        && types.iter().any(|t| *t != "string" && type_matches(t, v))
    {
        return Ok(v.clone());
    }
    if types.contains(&"string") {
        return Ok(Value::String(raw.to_owned()));
    }
    let expected = types.join(" or ");
    Err(format!(
        "argument `{key}` must be {} {expected} (JSON), got `{raw}`",
        if expected.starts_with(['a', 'e', 'i', 'o', 'u']) {
            "an"
        } else {
            "a"
        }
    ))
}

/// Builds a tool's arguments: `base` (from `--args`) with the typed pairs applied on top.
pub fn tool_arguments(
    tool: &str,
    input_schema: &Value,
    mut base: Map<String, Value>,
    pairs: &[String],
) -> Result<Map<String, Value>, String> {
    let empty = Map::new();
    let props = input_schema
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    for pair in pairs {
        let (key, raw) = split_pair(pair)?;
        let Some(schema) = props.get(key) else {
            return Err(if props.is_empty() {
                format!("unknown argument `{key}`: tool `{tool}` takes no arguments")
            } else {
                let valid: Vec<&str> = props.keys().map(String::as_str).collect();
                format!(
                    "unknown argument `{key}` for tool `{tool}` (valid: {})",
                    valid.join(", ")
                )
            });
        };
        base.insert(key.to_owned(), coerce(key, raw, schema)?);
    }
    Ok(base)
}

/// Parses `--args`: a JSON object.
pub fn parse_args_json(text: &str) -> Result<Map<String, Value>, String> {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(other) => Err(format!(
            "--args must be a JSON object, got {}",
            match other {
                Value::Null => "null",
                Value::Bool(_) => "a boolean",
                Value::Number(_) => "a number",
                Value::String(_) => "a string",
                Value::Array(_) => "an array",
                Value::Object(_) => "an object",
            }
        )),
        Err(e) => Err(format!("--args is not valid JSON: {e}")),
    }
}

/// Prompt arguments: every value is a string.
pub fn string_arguments(pairs: &[String]) -> Result<Map<String, Value>, String> {
    pairs
        .iter()
        .map(|p| split_pair(p).map(|(k, v)| (k.to_owned(), Value::String(v.to_owned()))))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({"type": "object", "properties": {
            "a": {"type": "number"},
            "n": {"type": "integer"},
            "s": {"type": "string"},
            "b": {"type": "boolean"},
            "l": {"type": "array"},
            "o": {"type": "object"},
            "e": {"enum": ["x", "y"]},
            "any": {"description": "no type"},
            "either": {"type": ["integer", "string"]},
        }})
    }

    fn args(pairs: &[&str]) -> Result<Value, String> {
        let pairs: Vec<String> = pairs.iter().map(|s| (*s).to_owned()).collect();
        tool_arguments("t", &schema(), Map::new(), &pairs).map(Value::Object)
    }

    #[test]
    fn values_are_typed_by_the_schema() {
        assert_eq!(
            args(&[
                "a=2.5",
                "n=3",
                "s=42",
                "b=true",
                "l=[1,2]",
                "o={\"k\":1}",
                "e=x",
                "any=7",
                "either=5"
            ])
            .unwrap(),
            json!({"a": 2.5, "n": 3, "s": "42", "b": true, "l": [1, 2], "o": {"k": 1},
                   "e": "x", "any": 7, "either": 5})
        );
        assert_eq!(
            args(&["s=a=b", "any=hello", "either=five"]).unwrap(),
            json!({"s": "a=b", "any": "hello", "either": "five"})
        );
        assert_eq!(args(&["s="]).unwrap(), json!({"s": ""}));
    }

    #[test]
    fn bad_values_and_keys_are_explained() {
        assert_eq!(
            args(&["n=2.5"]).unwrap_err(),
            "argument `n` must be an integer (JSON), got `2.5`"
        );
        assert_eq!(
            args(&["a=two"]).unwrap_err(),
            "argument `a` must be a number (JSON), got `two`"
        );
        assert!(args(&["b=yes"]).unwrap_err().contains("boolean"));
        let e = args(&["zzz=1"]).unwrap_err();
        assert!(
            e.contains("unknown argument `zzz`") && e.contains("valid: a, "),
            "{e}"
        );
        assert_eq!(
            args(&["novalue"]).unwrap_err(),
            "`novalue` is not KEY=VALUE"
        );
        let none = tool_arguments("t", &json!({}), Map::new(), &["x=1".to_owned()]);
        assert!(none.unwrap_err().contains("takes no arguments"));
    }

    #[test]
    fn pairs_override_args_json() {
        let base = parse_args_json(r#"{"a": 1, "s": "keep"}"#).unwrap();
        let out = tool_arguments("t", &schema(), base, &["a=2".to_owned()]).unwrap();
        assert_eq!(Value::Object(out), json!({"a": 2, "s": "keep"}));
        assert!(
            parse_args_json("{")
                .unwrap_err()
                .starts_with("--args is not valid JSON")
        );
        assert_eq!(
            parse_args_json("[1]").unwrap_err(),
            "--args must be a JSON object, got an array"
        );
    }
}
