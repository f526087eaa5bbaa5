//! The trace context in `params._meta` (SEP-414): written unprefixed (`traceparent`,
//! `tracestate`, `baggage`) into the requests the client sends, read from the server's.

use opentelemetry::Context;
use opentelemetry::baggage::BaggageExt;
use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator};
use opentelemetry::trace::{SpanContext, TraceContextExt, TraceFlags};
use serde_json::{Map, Value};

/// Writes into a `_meta` object.
struct MetaInjector<'a>(&'a mut Map<String, Value>);

impl Injector for MetaInjector<'_> {
    fn set(&mut self, key: &str, value: String) {
        self.0.insert(key.to_owned(), Value::String(value));
    }
}

/// Reads a `_meta` object's string entries (others are not context).
struct MetaExtractor<'a>(&'a Map<String, Value>);

impl Extractor for MetaExtractor<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(Value::as_str)
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(String::as_str).collect()
    }
}

/// Writes `cx` into `params._meta` with `propagator` (creating `params` and `_meta` when they
/// are absent; params that are not an object, or a `_meta` that is not, are left alone).
/// Nothing is written for a context without a valid span and without baggage.
pub fn inject_into_meta(
    propagator: &dyn TextMapPropagator,
    cx: &Context,
    params: &mut Option<Value>,
) {
    let mut fields = Map::new();
    propagator.inject_context(cx, &mut MetaInjector(&mut fields));
    if fields.is_empty() {
        return;
    }
    if let Some(meta) = meta_object(params) {
        meta.extend(fields);
    }
}

/// `params._meta` to write into, made when absent; `None` when `params` or its `_meta` is
/// there but not an object (left alone).
fn meta_object(params: &mut Option<Value>) -> Option<&mut Map<String, Value>> {
    params
        .get_or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()?
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
}

/// [`inject_into_meta`] with W3C trace context and baggage, written directly: `traceparent`
/// (and `tracestate` when there is one) of `cx`'s span when it is valid, `baggage` when `cx`
/// has any (through the SDK's baggage propagator, which escapes it). The same text the SDK's
/// propagators write (tested), for a fraction of the work: it is on every call's path.
pub(crate) fn inject_w3c(cx: &Context, params: &mut Option<Value>) {
    let span = cx.span();
    let sc = span.span_context();
    let baggage = !cx.baggage().is_empty();
    if !sc.is_valid() && !baggage {
        return;
    }
    let Some(meta) = meta_object(params) else {
        return;
    };
    if sc.is_valid() {
        meta.insert("traceparent".to_owned(), Value::String(traceparent(sc)));
        let state = sc.trace_state().header();
        if !state.is_empty() {
            meta.insert("tracestate".to_owned(), Value::String(state));
        }
    }
    if baggage {
        opentelemetry_sdk::propagation::BaggagePropagator::new()
            .inject_context(cx, &mut MetaInjector(meta));
    }
}

/// `00-{trace id}-{span id}-{flags}` in lowercase hex, the sampled flag alone (version 00).
fn traceparent(sc: &SpanContext) -> String {
    fn hex(out: &mut String, bytes: &[u8]) {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        for b in bytes {
            out.push(char::from(DIGITS[usize::from(b >> 4)]));
            out.push(char::from(DIGITS[usize::from(b & 0x0f)]));
        }
    }
    let mut out = String::with_capacity(55);
    out.push_str("00-");
    hex(&mut out, &sc.trace_id().to_bytes());
    out.push('-');
    hex(&mut out, &sc.span_id().to_bytes());
    out.push('-');
    hex(
        &mut out,
        &[(sc.trace_flags() & TraceFlags::SAMPLED).to_u8()],
    );
    out
}

/// Writes `cx` into the `params._meta` of a request frame the machine wrote (the client's own
/// requests, which no caller's params went into). A frame that does not read as a JSON object
/// is left as it is.
pub(crate) fn inject_into_frame(telemetry: &super::Telemetry, cx: &Context, bytes: &mut Vec<u8>) {
    let Ok(mut frame) = serde_json::from_slice::<Value>(bytes) else {
        return;
    };
    let Some(object) = frame.as_object_mut() else {
        return;
    };
    let mut params = object.remove("params");
    telemetry.inject(cx, &mut params);
    if let Some(params) = params {
        object.insert("params".to_owned(), params);
    }
    if let Ok(written) = serde_json::to_vec(&frame) {
        *bytes = written;
    }
}

/// The context `params._meta` carries, read with `propagator`, over `parent` (a `_meta`
/// without one gives `parent` back).
pub fn context_from_meta(
    propagator: &dyn TextMapPropagator,
    params: Option<&Value>,
    parent: &Context,
) -> Context {
    match params
        .and_then(|p| p.get("_meta"))
        .and_then(Value::as_object)
    {
        Some(meta) => propagator.extract_with_context(parent, &MetaExtractor(meta)),
        None => parent.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry::trace::{
        SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState,
    };
    use opentelemetry_sdk::propagation::TraceContextPropagator;
    use serde_json::json;

    fn remote() -> Context {
        Context::new().with_remote_span_context(SpanContext::new(
            TraceId::from_hex("4bf92f3577b34da6a3ce929d0e0e4736").unwrap(),
            SpanId::from_hex("00f067aa0ba902b7").unwrap(),
            TraceFlags::SAMPLED,
            true,
            TraceState::default(),
        ))
    }

    #[test]
    fn a_context_is_written_unprefixed_beside_what_meta_holds() {
        let p = TraceContextPropagator::new();
        let mut params = Some(json!({"name": "t", "_meta": {"progressToken": 3}}));
        inject_into_meta(&p, &remote(), &mut params);
        let meta = &params.as_ref().unwrap()["_meta"];
        assert_eq!(meta["progressToken"], 3);
        assert_eq!(
            meta["traceparent"],
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        );
        let mut none = None;
        inject_into_meta(&p, &remote(), &mut none);
        assert!(none.unwrap()["_meta"]["traceparent"].is_string());
    }

    #[test]
    fn the_direct_w3c_writer_writes_what_the_sdks_propagators_write() {
        use opentelemetry::KeyValue;
        use opentelemetry::trace::TraceState;
        let sdk = crate::otel::default_propagator();
        let state =
            TraceState::from_key_value([("rojo", "00f067aa0ba902b7"), ("congo", "t61rcWkgMzE")])
                .unwrap();
        let contexts = [
            remote(),
            Context::new().with_remote_span_context(SpanContext::new(
                TraceId::from_hex("0af7651916cd43dd8448eb211c80319c").unwrap(),
                SpanId::from_hex("b7ad6b7169203331").unwrap(),
                TraceFlags::default(),
                false,
                state,
            )),
            remote().with_baggage([
                KeyValue::new("user id", "alice, bob"),
                KeyValue::new("n", 7),
            ]),
            Context::new().with_baggage([KeyValue::new("only", "baggage")]),
            Context::new(),
        ];
        for cx in contexts {
            for start in [
                None,
                Some(json!({"name": "t", "_meta": {"progressToken": 1}})),
            ] {
                let (mut ours, mut theirs) = (start.clone(), start);
                inject_w3c(&cx, &mut ours);
                inject_into_meta(&sdk, &cx, &mut theirs);
                // The SDK writes an empty `tracestate` too; ours leaves it out.
                if let Some(meta) = theirs
                    .as_mut()
                    .and_then(|p| p.get_mut("_meta"))
                    .and_then(Value::as_object_mut)
                    && meta.get("tracestate") == Some(&json!(""))
                {
                    meta.remove("tracestate");
                }
                assert_eq!(ours, theirs);
            }
        }
    }

    #[test]
    fn no_context_writes_nothing_and_odd_params_are_left_alone() {
        let p = TraceContextPropagator::new();
        let mut none = None;
        inject_into_meta(&p, &Context::new(), &mut none);
        assert!(none.is_none());
        let mut list = Some(json!([1, 2]));
        inject_into_meta(&p, &remote(), &mut list);
        assert_eq!(list, Some(json!([1, 2])));
        let mut odd = Some(json!({"_meta": 7}));
        inject_into_meta(&p, &remote(), &mut odd);
        assert_eq!(odd, Some(json!({"_meta": 7})));
    }

    #[test]
    fn a_server_context_is_read_back_and_garbage_is_no_context() {
        let p = TraceContextPropagator::new();
        let params = json!({"_meta": {"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}});
        let cx = context_from_meta(&p, Some(&params), &Context::new());
        let span = cx.span();
        let sc = span.span_context();
        assert!(sc.is_remote());
        assert_eq!(sc.span_id(), SpanId::from_hex("00f067aa0ba902b7").unwrap());
        for bad in [
            json!({"_meta": {"traceparent": "zz"}}),
            json!({"_meta": {"traceparent": 5}}),
            json!({"_meta": []}),
            json!(null),
        ] {
            let cx = context_from_meta(&p, Some(&bad), &Context::new());
            assert!(!cx.span().span_context().is_valid(), "{bad}");
        }
    }
}
