//! [`Payload`]: a response's `result` as the server wrote it, read into a JSON tree only when
//! something reads it.
//!
//! A call's result is mostly read once, by its caller, into a type of its own (a tool's
//! result, a listing). Building a `serde_json::Value` tree of it first and converting that
//! tree after costs a map node per object, a string per key, and freeing them all (for a
//! small `tools/call` over stdio, about 5 % of the client's instructions per call, measured
//! with callgrind). So classification keeps the result's text
//! (checked to be JSON, one copy), and the tree is built only when the machine reads the result
//! (a handshake, an era's `resultType`, a listen acknowledgement) or a caller asks for a
//! `Value`; a caller that wants its own type reads it straight from the text
//! ([`Body::deserialize`]).
//!
//! Not a parser of its own: serde_json reads the text, the same way it would have read the
//! whole frame. Two payloads are equal when their JSON values are, whatever their text.

use std::sync::OnceLock;

use serde::de::DeserializeOwned;
use serde_json::Value;
use serde_json::value::RawValue;

/// A response's result: its JSON text, its tree once built, or both (see the module's doc).
#[derive(Clone)]
pub struct Payload {
    /// The text as received (`None` when the payload was made from a tree).
    text: Option<Box<RawValue>>,
    /// The tree, built on first read (or given); `None` inside when the text does not read
    /// as a `Value` (a number past f64, nesting past serde_json's limit), so the failure is
    /// not mistaken for a `null` result when the payload is handed on.
    tree: OnceLock<Option<Value>>,
}

/// A payload taken apart: its text when no tree was built, its tree otherwise. For carrying a
/// result further without the payload's cache (it is smaller); not a parsed form of its own.
#[derive(Debug)]
pub enum Body {
    /// The text as received; no tree was built.
    Text(Box<RawValue>),
    /// The tree (built, or given).
    Tree(Value),
}

impl Payload {
    /// A payload of `text`, already checked to be one JSON value.
    pub fn from_text(text: Box<RawValue>) -> Self {
        Payload {
            text: Some(text),
            tree: OnceLock::new(),
        }
    }

    /// A payload of a tree already built (a result the machine makes itself, or a frame read
    /// the general way).
    pub fn from_value(value: Value) -> Self {
        Payload {
            text: None,
            tree: OnceLock::from(Some(value)),
        }
    }

    /// The result as a JSON tree, built on the first call. Text that is JSON but no `Value`
    /// (a number past f64, nesting past serde_json's limit) reads as `null` here, for the
    /// machine's rows (which then find no result they expect); handed on, such a payload
    /// stays text, and its reader gets the real error ([`Payload::into_body`]).
    pub fn value(&self) -> &Value {
        const NULL: &Value = &Value::Null;
        self.tree
            .get_or_init(|| {
                self.text
                    .as_ref()
                    .and_then(|text| serde_json::from_str(text.get()).ok())
            })
            .as_ref()
            .unwrap_or(NULL)
    }

    /// Whether the payload may hold `needle`: its text holds it (a cheap check that builds no
    /// tree), or it has no text to look in. A `false` is certain; a `true` is to be read.
    pub(crate) fn may_hold(&self, needle: &str) -> bool {
        match (&self.text, self.tree.get()) {
            (Some(text), None) => text.get().contains(needle),
            _ => true,
        }
    }

    /// The tree when one was built, the text otherwise (also when the text does not read as
    /// a tree: its reader then gets the error).
    pub fn into_body(self) -> Body {
        match (self.tree.into_inner(), self.text) {
            (Some(Some(tree)), _) => Body::Tree(tree),
            (_, Some(text)) => Body::Text(text),
            (_, None) => Body::Tree(Value::Null),
        }
    }
}

impl Body {
    /// The result read as `T` (from the text, or from the tree). Text read as `T` straight
    /// means as a tree would: a text `T` refuses (a member twice, which a tree keeps the last
    /// of) is read again by way of its tree, and only when that fails too is it an error.
    pub fn deserialize<T: DeserializeOwned>(self) -> Result<T, serde_json::Error> {
        match self {
            Body::Tree(value) => serde_json::from_value(value),
            Body::Text(text) => serde_json::from_str(text.get()).or_else(|first| {
                serde_json::from_str::<Value>(text.get())
                    .and_then(serde_json::from_value)
                    .map_err(|_| first)
            }),
        }
    }
}

impl From<Value> for Payload {
    fn from(value: Value) -> Self {
        Payload::from_value(value)
    }
}

impl PartialEq for Payload {
    fn eq(&self, other: &Self) -> bool {
        self.value() == other.value()
    }
}

impl PartialEq<Value> for Payload {
    fn eq(&self, other: &Value) -> bool {
        self.value() == other
    }
}

/// As its JSON value's (the same whatever the text).
impl std::fmt::Debug for Payload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.value().fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn text(s: &str) -> Payload {
        Payload::from_text(RawValue::from_string(s.to_owned()).unwrap())
    }

    #[test]
    fn a_text_is_read_as_its_value_and_equals_the_same_value_written_otherwise() {
        let p = text(r#"{ "b": [1, 2], "a": "x" }"#);
        assert_eq!(p, Payload::from_value(json!({"a": "x", "b": [1, 2]})));
        assert_eq!(p, json!({"a": "x", "b": [1, 2]}));
        assert_ne!(p, json!({"a": "y", "b": [1, 2]}));
        assert_eq!(
            format!("{p:?}"),
            format!("{:?}", json!({"a": "x", "b": [1, 2]}))
        );
    }

    #[test]
    fn a_text_never_read_is_handed_on_as_text_and_a_read_one_as_its_tree() {
        let p = text(r#"{"a":1}"#);
        assert!(matches!(p.clone().into_body(), Body::Text(t) if t.get() == r#"{"a":1}"#));
        let _ = p.value();
        assert!(matches!(p.into_body(), Body::Tree(v) if v == json!({"a": 1})));
        assert!(matches!(
            Payload::from_value(json!(2)).into_body(),
            Body::Tree(v) if v == json!(2)
        ));
    }

    #[test]
    fn a_type_is_read_from_the_text_or_the_tree_alike() {
        #[derive(serde::Deserialize, Debug, PartialEq)]
        struct T {
            a: u32,
        }
        assert_eq!(
            text(r#"{"a":7}"#).into_body().deserialize::<T>().unwrap(),
            T { a: 7 }
        );
        let read = text(r#"{"a":7}"#);
        let _ = read.value();
        assert_eq!(read.into_body().deserialize::<T>().unwrap(), T { a: 7 });
        assert!(text(r#"{"a":"7"}"#).into_body().deserialize::<T>().is_err());
        assert_eq!(
            text("null").into_body().deserialize::<Value>().unwrap(),
            Value::Null
        );
        // A member twice reads as a tree would: the last one.
        assert_eq!(
            text(r#"{"a":1,"a":2}"#)
                .into_body()
                .deserialize::<T>()
                .unwrap(),
            T { a: 2 }
        );
    }

    #[test]
    fn a_text_that_is_no_value_reads_as_null_to_the_machine_and_fails_its_reader() {
        let p = text(r#"{"a":1e400}"#);
        assert_eq!(p.value(), &Value::Null);
        // Read once (as the machine's rows do), handed on as text: the reader's error is the
        // real one, not a `null` result.
        let e = p.into_body().deserialize::<Value>().unwrap_err();
        assert!(e.to_string().contains("out of range"), "{e}");
        let deep = format!("{}1{}", "[".repeat(200), "]".repeat(200));
        let p = text(&deep);
        assert_eq!(p.value(), &Value::Null);
        assert!(matches!(p.into_body(), Body::Text(_)));
    }
}
