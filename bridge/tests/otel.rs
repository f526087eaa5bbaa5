//! With `otel`: the host's trace continues through the bridge. A host request whose
//! `params._meta` carries a W3C `traceparent` is forwarded under that context, so the upstream
//! client's CLIENT span is a child of the host's span, in its trace; and what reaches the
//! upstream server carries the client span's context, not the host's.
#![cfg(feature = "otel")]

use std::time::Duration;

use mcp_bridge::Bridge;
use mcp_runtime::ClientBuilder;
use mcp_runtime::otel::Telemetry;
use mcp_runtime::transport::StreamConnector;
use mcp_testserver::ServerConfig;
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

const BOUND: Duration = Duration::from_secs(30);
const HOST_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const HOST_SPAN: &str = "00f067aa0ba902b7";

/// Telemetry into an in-memory span exporter (the providers are kept alive with it).
fn recording() -> (
    InMemorySpanExporter,
    (SdkTracerProvider, SdkMeterProvider),
    Telemetry,
) {
    let spans = InMemorySpanExporter::default();
    let tracer = SdkTracerProvider::builder()
        .with_simple_exporter(spans.clone())
        .build();
    let meter = SdkMeterProvider::builder().build();
    let telemetry = Telemetry::new(&tracer, &meter);
    (spans, (tracer, meter), telemetry)
}

#[tokio::test]
async fn the_hosts_trace_continues_upstream() {
    let (spans, _providers, telemetry) = recording();
    let (host_side, bridge_side) = tokio::io::duplex(1 << 20);
    let (br, bw) = tokio::io::split(bridge_side);
    let bridge = Bridge::new(move |_| {
        ClientBuilder::new(StreamConnector::from_fn(|| async {
            let (ours, theirs) = tokio::io::duplex(1 << 16);
            let (r, w) = tokio::io::split(theirs);
            tokio::spawn(mcp_testserver::serve(r, w, ServerConfig::echo()));
            Ok(tokio::io::split(ours))
        }))
        .telemetry(telemetry)
    });
    let task = tokio::spawn(bridge.serve(br, bw, std::future::pending()));
    let (hr, mut hw) = tokio::io::split(host_side);
    let mut lines = BufReader::new(hr).lines();
    let requests = [
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {"sampling": {}},
            "clientInfo": {"name": "traced-host", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "add", "arguments": {"a": 2, "b": 3},
            "_meta": {"traceparent": format!("00-{HOST_TRACE}-{HOST_SPAN}-01"),
                      "baggage": "tenant=blue"}}}),
    ];
    for request in requests {
        let id = request["id"].clone();
        hw.write_all(format!("{request}\n").as_bytes())
            .await
            .unwrap();
        loop {
            let line = tokio::time::timeout(BOUND, lines.next_line())
                .await
                .expect("an answer in time")
                .unwrap()
                .expect("the bridge is up");
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["id"] == id && v.get("method").is_none() {
                assert!(v.get("result").is_some(), "{v}");
                break;
            }
        }
    }
    hw.shutdown().await.unwrap();
    tokio::time::timeout(BOUND, task).await.unwrap().unwrap();

    let finished = spans.get_finished_spans().unwrap();
    let call = finished
        .iter()
        .find(|s| s.name == "tools/call add")
        .unwrap_or_else(|| {
            panic!(
                "no upstream call span: {:?}",
                finished.iter().map(|s| &s.name).collect::<Vec<_>>()
            )
        });
    assert_eq!(call.span_context.trace_id().to_string(), HOST_TRACE);
    assert_eq!(call.parent_span_id.to_string(), HOST_SPAN);
    assert!(call.parent_span_is_remote);
    // The bridge's own start-up requests (its live lists) are not in the host's trace.
    for other in finished.iter().filter(|s| s.name != "tools/call add") {
        assert_ne!(
            other.span_context.trace_id().to_string(),
            HOST_TRACE,
            "{}",
            other.name
        );
    }
}

/// A host over the HTTP front whose MCP messages carry no context, but whose HTTP requests do
/// (an HTTP client's instrumentation writes `traceparent` as a header): the upstream call
/// continues the trace of the header; a message whose `_meta` has a context of its own keeps it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_the_http_front_the_hosts_trace_headers_are_continued() {
    use mcp_bridge::http::{HttpFront, HttpOptions, MakeUpstreams};
    use mcp_bridge::{BridgeOptions, Upstream};
    use std::sync::Arc;

    const OWN_TRACE: &str = "0af7651916cd43dd8448eb211c80319c";
    const OWN_SPAN: &str = "b7ad6b7169203331";
    let (spans, _providers, telemetry) = recording();
    let make: MakeUpstreams = Arc::new(move |_host| {
        let connector = StreamConnector::from_fn(|| async {
            let (ours, theirs) = tokio::io::duplex(1 << 16);
            let (r, w) = tokio::io::split(theirs);
            tokio::spawn(mcp_testserver::serve(r, w, ServerConfig::echo()));
            Ok(tokio::io::split(ours))
        });
        Upstream::Client(Box::new(
            ClientBuilder::new(connector).telemetry(telemetry.clone()),
        ))
    });
    let front = HttpFront::bind(
        "127.0.0.1:0".parse().unwrap(),
        make,
        BridgeOptions::default(),
        HttpOptions::default(),
    )
    .await
    .unwrap();
    let url = format!("http://{}/mcp", front.local_addr());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let served = tokio::spawn(front.run(async {
        let _ = stopped.await;
    }));
    let http = reqwest::Client::new();
    let post = |body: Value, session: Option<String>| {
        let mut req = http
            .post(&url)
            .header("content-type", "application/json")
            .header("accept", "application/json")
            .header("traceparent", format!("00-{HOST_TRACE}-{HOST_SPAN}-01"))
            .header("baggage", "tenant=blue");
        if let Some(s) = session {
            req = req.header("mcp-session-id", s);
        }
        let sent = req.body(body.to_string()).send();
        async move {
            tokio::time::timeout(BOUND, sent)
                .await
                .expect("an answer in time")
                .expect("the request went")
        }
    };
    let init = post(
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "http-traced-host", "version": "1"}}}),
        None,
    )
    .await;
    let session = init.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    post(
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        Some(session.clone()),
    )
    .await;
    for call in [
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
               "params": {"name": "add", "arguments": {"a": 2, "b": 3}}}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
               "params": {"name": "echo", "arguments": {"message": "m"},
                          "_meta": {"traceparent": format!("00-{OWN_TRACE}-{OWN_SPAN}-01")}}}),
    ] {
        let body = post(call, Some(session.clone()))
            .await
            .bytes()
            .await
            .unwrap();
        let answer: Value = serde_json::from_slice(&body).unwrap();
        assert!(answer.get("result").is_some(), "{answer}");
    }
    let _ = stop.send(());
    tokio::time::timeout(BOUND, served).await.unwrap().unwrap();

    let finished = spans.get_finished_spans().unwrap();
    let named = |name: &str| {
        finished
            .iter()
            .find(|s| s.name == name)
            .unwrap_or_else(|| {
                panic!(
                    "no span {name}: {:?}",
                    finished.iter().map(|s| &s.name).collect::<Vec<_>>()
                )
            })
            .clone()
    };
    let add = named("tools/call add");
    assert_eq!(add.span_context.trace_id().to_string(), HOST_TRACE);
    assert_eq!(add.parent_span_id.to_string(), HOST_SPAN);
    assert!(add.parent_span_is_remote);
    let echo = named("tools/call echo");
    assert_eq!(echo.span_context.trace_id().to_string(), OWN_TRACE);
    assert_eq!(echo.parent_span_id.to_string(), OWN_SPAN);
}
