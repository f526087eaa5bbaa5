//! The host's trace context from its HTTP request's own headers (`traceparent`, `tracestate`,
//! `baggage`: what an HTTP client's instrumentation writes), carried into the message's
//! `params._meta` when the message has none of its own (SEP-414 puts an MCP message's context
//! in `_meta`; a host whose MCP instrumentation wrote one there keeps it). The message then
//! travels as if the host had written it: with `otel` the upstream call runs under it, and
//! without, the upstream server reads it from the forwarded `_meta`.

use hyper::HeaderMap;
use serde_json::{Map, Value};

/// The W3C headers carried, in the order they are read.
const KEYS: [&str; 3] = ["traceparent", "tracestate", "baggage"];

/// Bound on each header's value (the W3C baggage limit is 8192 bytes).
const MAX_VALUE: usize = 8192;

/// The trace headers of a request (empty when it has none), kept while its body is read.
pub(crate) fn trace_headers(headers: &HeaderMap) -> HeaderMap {
    let mut out = HeaderMap::new();
    for key in KEYS {
        if let Some(v) = headers.get(key) {
            out.insert(key, v.clone());
        }
    }
    out
}

/// Writes the request's trace headers into `msg`'s `params._meta` when `msg` is a request or a
/// notification whose `_meta` has no `traceparent` and the request has a well-formed one.
/// Params that are not an object (or a `_meta` that is not) are left alone.
pub(crate) fn carry_trace_headers(headers: &HeaderMap, msg: &mut Value) {
    let value = |name: &str| {
        let v = headers.get(name)?.to_str().ok()?;
        (v.len() <= MAX_VALUE && v.bytes().all(|b| (0x20..0x7f).contains(&b))).then_some(v)
    };
    let Some(parent) = value("traceparent").filter(|v| well_formed(v)) else {
        return;
    };
    let Some(object) = msg.as_object_mut() else {
        return;
    };
    if !object.get("method").is_some_and(Value::is_string) {
        return;
    }
    let params = object
        .entry("params")
        .or_insert_with(|| Value::Object(Map::new()));
    let Some(meta) = params.as_object_mut().and_then(|p| {
        p.entry("_meta")
            .or_insert_with(|| Value::Object(Map::new()))
            .as_object_mut()
    }) else {
        return;
    };
    if meta.contains_key("traceparent") {
        return;
    }
    meta.insert("traceparent".to_owned(), Value::String(parent.to_owned()));
    for key in &KEYS[1..] {
        if let Some(v) = value(key)
            && !meta.contains_key(*key)
        {
            meta.insert((*key).to_owned(), Value::String(v.to_owned()));
        }
    }
}

/// Whether `v` has the W3C `traceparent` shape: `version-traceid-spanid-flags`, lowercase hex
/// of 2, 32, 16 and 2 digits (a later version may append fields after a dash), ids not all
/// zeros, version not `ff`.
fn well_formed(v: &str) -> bool {
    let hex = |s: &str, n: usize| {
        s.len() == n
            && s.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    };
    let mut parts = v.splitn(5, '-');
    let (Some(version), Some(trace), Some(span), Some(flags)) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    let later = parts.next();
    hex(version, 2)
        && version != "ff"
        && (version != "00" || later.is_none())
        && hex(trace, 32)
        && trace.bytes().any(|b| b != b'0')
        && hex(span, 16)
        && span.bytes().any(|b| b != b'0')
        && hex(flags, 2)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, v.parse().unwrap());
        }
        h
    }

    #[test]
    fn the_headers_go_into_meta_beside_what_is_there() {
        let h = headers(&[
            ("traceparent", PARENT),
            ("tracestate", "rojo=00f067aa0ba902b7"),
            ("baggage", "tenant=blue"),
        ]);
        let mut msg = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "x", "_meta": {"progressToken": 7}}});
        carry_trace_headers(&h, &mut msg);
        assert_eq!(
            msg["params"]["_meta"],
            json!({"progressToken": 7, "traceparent": PARENT,
                   "tracestate": "rojo=00f067aa0ba902b7", "baggage": "tenant=blue"})
        );
        // A notification without params gets them.
        let mut n = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        carry_trace_headers(&h, &mut n);
        assert_eq!(n["params"]["_meta"]["traceparent"], PARENT);
    }

    #[test]
    fn the_hosts_own_meta_context_wins() {
        let own = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
        let h = headers(&[("traceparent", PARENT), ("baggage", "tenant=blue")]);
        let mut msg = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list",
            "params": {"_meta": {"traceparent": own}}});
        let before = msg.clone();
        carry_trace_headers(&h, &mut msg);
        assert_eq!(msg, before);
    }

    #[test]
    fn nothing_is_carried_without_a_well_formed_traceparent_or_into_odd_shapes() {
        let tracestate_only = headers(&[("tracestate", "a=b"), ("baggage", "k=v")]);
        let mut msg = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
        carry_trace_headers(&tracestate_only, &mut msg);
        assert!(msg.get("params").is_none());
        for bad in [
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
        ] {
            let mut msg = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
            carry_trace_headers(&headers(&[("traceparent", bad)]), &mut msg);
            assert!(msg.get("params").is_none(), "{bad}");
        }
        // A later version may carry more fields.
        assert!(well_formed(
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-more"
        ));
        let h = headers(&[("traceparent", PARENT)]);
        // Params that are not an object, a `_meta` that is not, a response: left alone.
        for odd in [
            json!({"jsonrpc": "2.0", "id": 1, "method": "x", "params": [1, 2]}),
            json!({"jsonrpc": "2.0", "id": 1, "method": "x", "params": {"_meta": "m"}}),
            json!({"jsonrpc": "2.0", "id": 1, "result": {}}),
        ] {
            let mut msg = odd.clone();
            carry_trace_headers(&h, &mut msg);
            assert_eq!(msg, odd);
        }
    }
}
