//! OpenTelemetry by the MCP semantic conventions (runtime feature `otel`), read back from the
//! SDK's in-memory exporters: each span shape (a tool call, a list, a prompt, a resource read,
//! a server error, an `isError` result, a call that lives through a reconnect, a call inside
//! the host's `execute_tool` span, a request of the server), the metrics, and the trace
//! context carried in `_meta` both ways.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_runtime::CreateMessageResult;
use mcp_runtime::otel::{Telemetry, execute_tool_context, keys, metrics};
use mcp_runtime::{ClientBuilder, ConnState, Error, Handlers, RequestOptions};
use mcp_tests::in_process;
use mcp_testserver::ServerConfig;
use mcp_testserver::http::HttpConfig;
use opentelemetry::context::FutureExt;
use opentelemetry::trace::{SpanKind, Status, TraceContextExt, Tracer, TracerProvider as _};
use opentelemetry::{Context, KeyValue, Value};
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use serde_json::json;

/// Providers that keep what they get, and the telemetry over them.
struct Sink {
    spans: InMemorySpanExporter,
    metrics: InMemoryMetricExporter,
    tracer: SdkTracerProvider,
    meter: SdkMeterProvider,
}

impl Sink {
    fn new() -> Self {
        let spans = InMemorySpanExporter::default();
        let metrics = InMemoryMetricExporter::default();
        let tracer = SdkTracerProvider::builder()
            .with_simple_exporter(spans.clone())
            .build();
        let meter = SdkMeterProvider::builder()
            .with_reader(PeriodicReader::builder(metrics.clone()).build())
            .build();
        Sink {
            spans,
            metrics,
            tracer,
            meter,
        }
    }

    fn telemetry(&self) -> Telemetry {
        Telemetry::new(&self.tracer, &self.meter)
    }

    fn spans(&self) -> Vec<SpanData> {
        self.spans.get_finished_spans().unwrap()
    }

    /// The finished span named `name` (exactly one).
    fn span(&self, name: &str) -> SpanData {
        let all = self.spans();
        let mut found: Vec<_> = all.iter().filter(|s| s.name == name).cloned().collect();
        assert_eq!(
            found.len(),
            1,
            "spans named {name:?}: {:?}",
            all.iter().map(|s| &s.name).collect::<Vec<_>>()
        );
        found.remove(0)
    }

    /// Every point of histogram `name`: its attributes, count and bounds.
    fn histogram(&self, name: &str) -> Vec<(Vec<KeyValue>, u64, Vec<f64>)> {
        self.meter.force_flush().unwrap();
        let mut out = Vec::new();
        // Cumulative: the last export holds every point so far.
        if let Some(rm) = self.metrics.get_finished_metrics().unwrap().last() {
            for sm in rm.scope_metrics() {
                for m in sm.metrics().filter(|m| m.name() == name) {
                    assert_eq!(m.unit(), "s", "{name}");
                    if let AggregatedMetrics::F64(MetricData::Histogram(h)) = m.data() {
                        for p in h.data_points() {
                            out.push((
                                p.attributes().cloned().collect(),
                                p.count(),
                                p.bounds().collect(),
                            ));
                        }
                    }
                }
            }
        }
        out
    }

    /// The total of counter `name`.
    fn counter(&self, name: &str) -> u64 {
        self.meter.force_flush().unwrap();
        let mut total = 0;
        // Cumulative: the last export holds the running totals.
        if let Some(rm) = self.metrics.get_finished_metrics().unwrap().last() {
            for sm in rm.scope_metrics() {
                for m in sm.metrics().filter(|m| m.name() == name) {
                    if let AggregatedMetrics::U64(MetricData::Sum(s)) = m.data() {
                        total += s.data_points().map(|p| p.value()).sum::<u64>();
                    }
                }
            }
        }
        total
    }
}

fn attr<'a>(attributes: &'a [KeyValue], key: &str) -> Option<&'a Value> {
    attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| &kv.value)
}

fn text(attributes: &[KeyValue], key: &str) -> Option<String> {
    attr(attributes, key).map(|v| v.as_str().into_owned())
}

/// Calls the chaos server's `die` and waits until the client is in backoff; the call's error.
async fn crash_into_backoff(client: &mcp_runtime::Client) -> Error {
    let err = client.call_tool("die", json!({})).await.unwrap_err();
    let mut state = client.watch_state();
    tokio::time::timeout(
        Duration::from_secs(10),
        state.wait_for(|s| *s == ConnState::Backoff),
    )
    .await
    .unwrap()
    .unwrap();
    err
}

/// Calls `slow` for 5 s with a 50 ms timeout: the call fails with `Timeout` (and the client
/// cancels it).
async fn give_up_a_slow_call(client: &mcp_runtime::Client) {
    let err = client
        .call_tool_with(
            "slow",
            json!({"ms": 5_000}),
            RequestOptions::new().timeout(Duration::from_millis(50)),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Timeout { .. }), "{err:?}");
}

/// Serves `config` over Streamable HTTP and connects a handshake-era client (a session)
/// recording into `sink`, reconnecting at once; the client and the server's port.
async fn over_http(config: HttpConfig, sink: &Sink) -> (mcp_runtime::Client, u16) {
    let server = mcp_testserver::http::serve("127.0.0.1:0".parse().unwrap(), config)
        .await
        .unwrap();
    let (url, port) = (server.url(), server.addr().port());
    tokio::spawn(server.run());
    let client = ClientBuilder::streamable_http(&url)
        .unwrap()
        .era(mcp_runtime::EraMode::Legacy)
        .backoff(Duration::from_millis(10), Duration::from_millis(50), 0)
        .telemetry(sink.telemetry())
        .connect()
        .await
        .unwrap();
    (client, port)
}

/// The states a span's transition events say the connection entered, in order.
fn states_entered(span: &SpanData) -> Vec<String> {
    span.events
        .iter()
        .filter(|e| e.name == "mcp_client_rs.transition")
        .filter_map(|e| text(&e.attributes, "mcp_client_rs.state.to"))
        .collect()
}

const BUCKETS: [f64; 14] = [
    0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];

#[tokio::test]
async fn a_tool_call_is_a_client_span_under_the_callers_context_with_the_conventions_attributes() {
    let sink = Sink::new();
    let client = in_process(ServerConfig::echo())
        .telemetry(sink.telemetry())
        .connect()
        .await
        .unwrap();
    let host = sink.tracer.tracer("host");
    let parent = host.start("agent turn");
    let parent_cx = Context::current_with_span(parent);
    let parent_id = parent_cx.span().span_context().clone();
    let r = client
        .call_tool("add", json!({"a": 2, "b": 3}))
        .with_context(parent_cx.clone())
        .await
        .unwrap();
    assert!(!r.failed());
    client.list_tools(None).await.unwrap();
    client.stop().await;

    let call = sink.span("tools/call add");
    assert_eq!(call.span_kind, SpanKind::Client);
    assert_eq!(call.span_context.trace_id(), parent_id.trace_id());
    assert_eq!(call.parent_span_id, parent_id.span_id());
    assert_eq!(call.status, Status::Unset);
    let a = &call.attributes;
    assert_eq!(text(a, keys::METHOD).as_deref(), Some("tools/call"));
    assert_eq!(text(a, keys::TOOL_NAME).as_deref(), Some("add"));
    assert_eq!(
        text(a, keys::OPERATION_NAME).as_deref(),
        Some("execute_tool")
    );
    assert_eq!(text(a, keys::NETWORK_TRANSPORT).as_deref(), Some("pipe"));
    assert_eq!(
        text(a, keys::PROTOCOL_VERSION).as_deref(),
        Some("2025-11-25")
    );
    let id = text(a, keys::REQUEST_ID).expect("jsonrpc.request.id");
    assert!(id.parse::<u64>().is_ok(), "{id}");
    for absent in [
        keys::ERROR_TYPE,
        keys::STATUS_CODE,
        keys::TOOL_ARGUMENTS,
        keys::TOOL_RESULT,
        keys::SESSION_ID,
        keys::SERVER_ADDRESS,
    ] {
        assert!(attr(a, absent).is_none(), "{absent} on {a:?}");
    }

    // A list: named by its method alone, no GenAI operation; a root span (no caller context).
    let list = sink.span("tools/list");
    assert_eq!(list.span_kind, SpanKind::Client);
    assert!(attr(&list.attributes, keys::OPERATION_NAME).is_none());
    assert!(attr(&list.attributes, keys::TOOL_NAME).is_none());
    assert_ne!(list.span_context.trace_id(), parent_id.trace_id());

    // The handshake: an `initialize` span (after a `server/discover` probe when the client
    // probes), a root of its own, with the version it agreed.
    let init = sink.span("initialize");
    assert_eq!(init.span_kind, SpanKind::Client);
    assert_eq!(init.status, Status::Unset);
    assert_eq!(
        text(&init.attributes, keys::METHOD).as_deref(),
        Some("initialize")
    );
    assert!(text(&init.attributes, keys::REQUEST_ID).is_some());
    assert_eq!(
        text(&init.attributes, keys::PROTOCOL_VERSION).as_deref(),
        Some("2025-11-25")
    );

    // One point per request in the conventions' histogram, with the conventions' buckets.
    let points = sink.histogram(metrics::OPERATION_DURATION);
    let call_point = points
        .iter()
        .find(|(a, _, _)| text(a, keys::TOOL_NAME).as_deref() == Some("add"))
        .expect("a tools/call point");
    assert_eq!(call_point.1, 1);
    assert_eq!(call_point.2, BUCKETS);
    assert_eq!(
        text(&call_point.0, keys::METHOD).as_deref(),
        Some("tools/call")
    );
    assert!(attr(&call_point.0, keys::ERROR_TYPE).is_none());
    assert!(
        attr(&call_point.0, keys::REQUEST_ID).is_none(),
        "no per-request id on a metric"
    );
    // The session: ready until the stop, no error.
    let sessions = sink.histogram(metrics::SESSION_DURATION);
    assert_eq!(sessions.len(), 1, "{sessions:?}");
    assert_eq!(sessions[0].1, 1);
    assert_eq!(sessions[0].2, BUCKETS);
    assert!(attr(&sessions[0].0, keys::ERROR_TYPE).is_none());
    assert_eq!(
        text(&sessions[0].0, keys::PROTOCOL_VERSION).as_deref(),
        Some("2025-11-25")
    );
}

#[tokio::test]
async fn failures_say_their_error_type_and_status() {
    let sink = Sink::new();
    let client = in_process(ServerConfig::echo())
        .telemetry(sink.telemetry())
        .connect()
        .await
        .unwrap();
    // A JSON-RPC error: error.type and rpc.response.status_code are its code, the status its
    // message.
    let err = client
        .call_tool("no-such-tool", json!({}))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Server { code: -32602, .. }), "{err:?}");
    // A tool error: isError true.
    let r = client
        .call_tool("structured", json!({"shape": "error"}))
        .await
        .unwrap();
    assert!(r.failed());
    // A timeout: the client's own error class.
    give_up_a_slow_call(&client).await;
    client.stop().await;

    let rpc = sink.span("tools/call no-such-tool");
    assert_eq!(
        text(&rpc.attributes, keys::ERROR_TYPE).as_deref(),
        Some("-32602")
    );
    assert_eq!(
        text(&rpc.attributes, keys::STATUS_CODE).as_deref(),
        Some("-32602")
    );
    match &rpc.status {
        Status::Error { description } => {
            assert!(description.contains("Unknown tool"), "{description}")
        }
        other => panic!("{other:?}"),
    }
    let tool = sink.span("tools/call structured");
    assert_eq!(
        text(&tool.attributes, keys::ERROR_TYPE).as_deref(),
        Some("tool_error")
    );
    assert!(attr(&tool.attributes, keys::STATUS_CODE).is_none());
    assert!(matches!(tool.status, Status::Error { .. }));
    let slow = sink.span("tools/call slow");
    assert_eq!(
        text(&slow.attributes, keys::ERROR_TYPE).as_deref(),
        Some("timeout")
    );
    assert!(matches!(slow.status, Status::Error { .. }));

    let points = sink.histogram(metrics::OPERATION_DURATION);
    let kinds: Vec<_> = points
        .iter()
        .filter_map(|(a, _, _)| text(a, keys::ERROR_TYPE))
        .collect();
    for kind in ["-32602", "tool_error", "timeout"] {
        assert!(kinds.iter().any(|k| k == kind), "{kind} not in {kinds:?}");
    }
}

#[tokio::test]
async fn the_context_travels_in_meta_and_a_server_request_runs_in_the_servers_trace() {
    let sink = Sink::new();
    let seen = Arc::new(Mutex::new(None));
    let seen_in = Arc::clone(&seen);
    let handlers = Handlers::new().sampling(move |_params, _cx| {
        // What the handler runs under: the server's context, in the SERVER span.
        let here = Context::current().span().span_context().clone();
        *seen_in.lock().unwrap() = Some(here);
        async move { Ok(CreateMessageResult::text("m", "sampled")) }
    });
    let client = in_process(ServerConfig::echo())
        .handler(handlers)
        .telemetry(sink.telemetry())
        .connect()
        .await
        .unwrap();
    let r = client
        .call_tool("sample", json!({"prompt": "hi"}))
        .await
        .unwrap();
    assert_eq!(r.text(), "sampled");
    client.stop().await;

    let call = sink.span("tools/call sample");
    // The test server copies the call's `_meta.traceparent` into its request: the SERVER span
    // of that request is a child of our CLIENT span, in its trace.
    let server = sink.span("sampling/createMessage");
    assert_eq!(server.span_kind, SpanKind::Server);
    assert_eq!(server.span_context.trace_id(), call.span_context.trace_id());
    assert_eq!(server.parent_span_id, call.span_context.span_id());
    assert!(server.parent_span_is_remote);
    assert_eq!(
        text(&server.attributes, keys::METHOD).as_deref(),
        Some("sampling/createMessage")
    );
    assert!(text(&server.attributes, keys::REQUEST_ID).is_some());
    let handler = seen.lock().unwrap().clone().expect("the handler ran");
    assert_eq!(handler.span_id(), server.span_context.span_id());
    // The time the client took over the server's request: a point of the server-side
    // histogram (the client is the receiver of that operation), without an error.
    let points = sink.histogram(metrics::SERVER_OPERATION_DURATION);
    let sampling: Vec<_> = points
        .iter()
        .filter(|(a, _, _)| text(a, keys::METHOD).as_deref() == Some("sampling/createMessage"))
        .collect();
    assert_eq!(sampling.len(), 1, "{points:?}");
    let (a, count, bounds) = sampling[0];
    assert_eq!((*count, bounds.as_slice()), (1, &BUCKETS[..]));
    assert!(text(a, keys::ERROR_TYPE).is_none());
    assert!(text(a, keys::REQUEST_ID).is_none(), "no id on a point");
}

#[tokio::test]
async fn notifications_both_ways_are_spans_under_what_they_belong_to() {
    let sink = Sink::new();
    let client = in_process(ServerConfig::echo())
        .telemetry(sink.telemetry())
        .connect()
        .await
        .unwrap();
    // The server's notifications: a log message, and a call's progress.
    client
        .call_tool("log", json!({"level": "error", "message": "seen"}))
        .await
        .unwrap();
    let (options, mut progress) = RequestOptions::new().progress_channel();
    client
        .call_tool_with("slow", json!({"ms": 20, "steps": 2}), options)
        .await
        .unwrap();
    assert!(progress.recv().await.is_some());
    // A call given up on: the client's cancellation of it.
    give_up_a_slow_call(&client).await;
    client.stop().await;

    let spans = sink.spans();
    let named = |name: &str| -> Vec<SpanData> {
        spans.iter().filter(|s| s.name == name).cloned().collect()
    };
    // `notifications/initialized` is a CLIENT span of the handshake's trace.
    let init = sink.span("initialize");
    let initialized = sink.span("notifications/initialized");
    assert_eq!(initialized.span_kind, SpanKind::Client);
    assert_eq!(
        initialized.span_context.trace_id(),
        init.span_context.trace_id()
    );
    assert_eq!(initialized.parent_span_id, init.span_context.span_id());
    assert!(attr(&initialized.attributes, keys::ERROR_TYPE).is_none());
    // The cancellation is a child of the span of the call it cancels.
    let given_up = named("tools/call slow")
        .into_iter()
        .find(|s| text(&s.attributes, keys::ERROR_TYPE).as_deref() == Some("timeout"))
        .expect("the timed-out call's span");
    let cancelled = sink.span("notifications/cancelled");
    assert_eq!(cancelled.span_kind, SpanKind::Client);
    assert_eq!(cancelled.parent_span_id, given_up.span_context.span_id());
    assert_eq!(
        cancelled.span_context.trace_id(),
        given_up.span_context.trace_id()
    );
    // The server's log message: a SERVER span with the method, and its point.
    let message = sink.span("notifications/message");
    assert_eq!(message.span_kind, SpanKind::Server);
    assert_eq!(
        text(&message.attributes, keys::METHOD).as_deref(),
        Some("notifications/message")
    );
    assert!(attr(&message.attributes, keys::REQUEST_ID).is_none());
    // Progress: SERVER spans under the call they report on.
    let call = named("tools/call slow")
        .into_iter()
        .find(|s| attr(&s.attributes, keys::ERROR_TYPE).is_none())
        .expect("the answered call's span");
    let steps = named("notifications/progress");
    assert!(!steps.is_empty());
    for step in &steps {
        assert_eq!(step.span_kind, SpanKind::Server);
        assert_eq!(step.parent_span_id, call.span_context.span_id());
    }
    // Their points: the client's notifications in the client histogram, the server's in the
    // server one.
    let sent: Vec<_> = sink
        .histogram(metrics::OPERATION_DURATION)
        .into_iter()
        .filter_map(|(a, _, _)| text(&a, keys::METHOD))
        .collect();
    for method in ["notifications/initialized", "notifications/cancelled"] {
        assert!(sent.iter().any(|m| m == method), "{method} not in {sent:?}");
    }
    let received: Vec<_> = sink
        .histogram(metrics::SERVER_OPERATION_DURATION)
        .into_iter()
        .filter_map(|(a, _, _)| text(&a, keys::METHOD))
        .collect();
    for method in ["notifications/message", "notifications/progress"] {
        assert!(
            received.iter().any(|m| m == method),
            "{method} not in {received:?}"
        );
    }
}

#[tokio::test]
async fn an_input_of_a_round_runs_under_the_span_of_its_call() {
    let sink = Sink::new();
    let mut config = ServerConfig::echo();
    config.era = mcp_testserver::Era::Modern;
    let handlers = Handlers::new().elicitation(|_p, _cx| async {
        Ok(mcp_runtime::ElicitResult::accept(
            [("confirmed".to_owned(), json!(true))]
                .into_iter()
                .collect(),
        ))
    });
    let client = in_process(config)
        .era(mcp_runtime::EraMode::Modern)
        .handler(handlers)
        .telemetry(sink.telemetry())
        .connect()
        .await
        .unwrap();
    client.call_tool("confirm_action", json!({})).await.unwrap();
    client.stop().await;
    let call = sink.span("tools/call confirm_action");
    // The server wrote no context into its input request: the call it belongs to is its
    // parent (a local one: the client's own span).
    let input = sink.span("elicitation/create");
    assert_eq!(input.span_kind, SpanKind::Server);
    assert_eq!(input.span_context.trace_id(), call.span_context.trace_id());
    assert_eq!(input.parent_span_id, call.span_context.span_id());
    assert!(!input.parent_span_is_remote);
}

#[tokio::test]
async fn inside_the_hosts_execute_tool_span_the_call_adds_to_it_instead_of_opening_one() {
    let sink = Sink::new();
    let client = in_process(ServerConfig::echo())
        .telemetry(sink.telemetry().capture_tool_io(true))
        .connect()
        .await
        .unwrap();
    let host = sink.tracer.tracer("host");
    let outer = host.start("execute_tool add");
    let cx = execute_tool_context(Context::current_with_span(outer));
    client
        .call_tool("add", json!({"a": 1, "b": 1}))
        .with_context(cx.clone())
        .await
        .unwrap();
    cx.span().end();
    client.stop().await;

    let spans = sink.spans();
    assert!(
        !spans.iter().any(|s| s.name == "tools/call add"),
        "a second span: {:?}",
        spans.iter().map(|s| &s.name).collect::<Vec<_>>()
    );
    let outer = sink.span("execute_tool add");
    let a = &outer.attributes;
    assert_eq!(text(a, keys::METHOD).as_deref(), Some("tools/call"));
    assert_eq!(text(a, keys::TOOL_NAME).as_deref(), Some("add"));
    assert!(text(a, keys::REQUEST_ID).is_some());
    // Opted in: the arguments and the result.
    assert_eq!(
        text(a, keys::TOOL_ARGUMENTS).as_deref(),
        Some(r#"{"a":1,"b":1}"#)
    );
    assert!(text(a, keys::TOOL_RESULT).is_some_and(|r| r.contains("2")));
}

#[tokio::test]
async fn a_call_that_waits_out_a_reconnect_shows_it_and_the_session_metrics_count_it() {
    let sink = Sink::new();
    let client = in_process(ServerConfig::chaos())
        .backoff(Duration::from_millis(200), Duration::from_millis(200), 0)
        .telemetry(sink.telemetry().server_name("chaotic"))
        .connect()
        .await
        .unwrap();
    // The server dies under this call: it fails, and its span says the session ended.
    let err = crash_into_backoff(&client).await;
    assert!(matches!(err, Error::ConnectionLost(_)), "{err:?}");
    // Made in backoff, this call waits for the reconnect and then succeeds.
    client
        .call_tool_with(
            "add",
            json!({"a": 1, "b": 2}),
            RequestOptions::new().wait_for_ready(true),
        )
        .await
        .unwrap();
    client.stop().await;

    let died = sink.span("tools/call die");
    assert_eq!(
        text(&died.attributes, keys::ERROR_TYPE).as_deref(),
        Some("connection_lost")
    );
    let waited = sink.span("tools/call add");
    assert!(waited.status == Status::Unset);
    let tos = states_entered(&waited);
    assert_eq!(tos.last().map(String::as_str), Some("ready"), "{tos:?}");
    assert!(tos.iter().any(|t| t == "starting"), "{tos:?}");
    // The server's name is on every span and point.
    assert_eq!(
        text(&waited.attributes, keys::SERVER_NAME).as_deref(),
        Some("chaotic")
    );

    let sessions = sink.histogram(metrics::SESSION_DURATION);
    assert_eq!(
        sessions.len(),
        2,
        "one ended by the crash, one by the stop: {sessions:?}"
    );
    let crashed: Vec<_> = sessions
        .iter()
        .filter_map(|(a, _, _)| text(a, keys::ERROR_TYPE))
        .collect();
    assert_eq!(crashed, ["transport"]);
    assert!(
        sessions
            .iter()
            .all(|(a, _, _)| text(a, keys::SERVER_NAME).as_deref() == Some("chaotic"))
    );
    assert_eq!(sink.counter(metrics::RECONNECTS), 1);
    let backoff = sink.histogram(metrics::BACKOFF_DURATION);
    assert_eq!(backoff.iter().map(|(_, n, _)| n).sum::<u64>(), 1);
}

#[tokio::test]
async fn a_call_refused_while_unavailable_is_counted() {
    let sink = Sink::new();
    let client = in_process(ServerConfig::chaos())
        .backoff(Duration::from_secs(30), Duration::from_secs(30), 0)
        .telemetry(sink.telemetry())
        .connect()
        .await
        .unwrap();
    crash_into_backoff(&client).await;
    let err = client
        .call_tool("add", json!({"a": 1, "b": 2}))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Unavailable { .. }), "{err:?}");
    client.stop().await;
    let refused = sink.span("tools/call add");
    assert_eq!(
        text(&refused.attributes, keys::ERROR_TYPE).as_deref(),
        Some("unavailable")
    );
    assert_eq!(sink.counter(metrics::CALLS_REFUSED), 1);
}

#[tokio::test]
async fn prompts_and_resources_name_what_they_touch() {
    let sink = Sink::new();
    let client = in_process(ServerConfig::echo())
        .telemetry(sink.telemetry())
        .connect()
        .await
        .unwrap();
    let prompts = client.list_all_prompts().await.unwrap();
    let resources = client.list_all_resources().await.unwrap();
    let prompt = prompts.first().expect("a prompt").name.clone();
    let uri = resources.first().expect("a resource").uri.clone();
    let _ = client.get_prompt(&prompt, json!({})).await;
    client.read_resource(&uri).await.unwrap();
    client.stop().await;
    let p = sink.span(&format!("prompts/get {prompt}"));
    assert_eq!(text(&p.attributes, keys::PROMPT_NAME), Some(prompt));
    assert!(attr(&p.attributes, keys::OPERATION_NAME).is_none());
    // The URI is an attribute, not part of the name (high cardinality) unless opted in.
    let r = sink.span("resources/read");
    assert_eq!(text(&r.attributes, keys::RESOURCE_URI), Some(uri));
}

#[tokio::test]
async fn without_telemetry_nothing_is_recorded_and_meta_is_untouched() {
    let sink = Sink::new();
    let _global = sink.tracer.tracer("host");
    let client: mcp_runtime::Client =
        ClientBuilder::new(mcp_runtime::transport::StreamConnector::from_fn(|| async {
            let (ours, theirs) = tokio::io::duplex(1 << 16);
            let (r, w) = tokio::io::split(theirs);
            tokio::spawn(mcp_testserver::serve(r, w, ServerConfig::echo()));
            Ok(tokio::io::split(ours))
        }))
        .connect()
        .await
        .unwrap();
    let host = sink.tracer.tracer("host");
    let cx = Context::current_with_span(host.start("turn"));
    client
        .call_tool("add", json!({"a": 1, "b": 2}))
        .with_context(cx.clone())
        .await
        .unwrap();
    cx.span().end();
    client.stop().await;
    assert_eq!(
        sink.spans()
            .iter()
            .map(|s| s.name.to_string())
            .collect::<Vec<_>>(),
        ["turn"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_streamable_http_the_span_names_the_server_and_the_session() {
    let sink = Sink::new();
    let (client, port) = over_http(HttpConfig::new(ServerConfig::echo()), &sink).await;
    let port = i64::from(port);
    client
        .call_tool("add", json!({"a": 1, "b": 2}))
        .await
        .unwrap();
    client.list_tools(None).await.unwrap();
    client.stop().await;
    let call = sink.span("tools/call add");
    let a = &call.attributes;
    assert_eq!(text(a, keys::NETWORK_TRANSPORT).as_deref(), Some("tcp"));
    assert_eq!(text(a, keys::NETWORK_PROTOCOL).as_deref(), Some("http"));
    assert_eq!(text(a, keys::SERVER_ADDRESS).as_deref(), Some("127.0.0.1"));
    assert_eq!(attr(a, keys::SERVER_PORT), Some(&Value::I64(port)));
    // The session's id is a credential: what is recorded is a digest of it, the same on every
    // span of the session.
    let session = text(a, keys::SESSION_ID).expect("mcp.session.id");
    assert_eq!(session.len(), 32, "{session}");
    assert!(session.bytes().all(|b| b.is_ascii_hexdigit()), "{session}");
    let list = sink.span("tools/list");
    assert_eq!(text(&list.attributes, keys::SESSION_ID), Some(session));
    // The HTTP version of the server's answers, on the span and the point.
    assert_eq!(
        text(a, keys::NETWORK_PROTOCOL_VERSION).as_deref(),
        Some("1.1")
    );
    let points = sink.histogram(metrics::OPERATION_DURATION);
    assert!(
        points
            .iter()
            .all(|(a, _, _)| text(a, keys::NETWORK_PROTOCOL_VERSION).as_deref() == Some("1.1")),
        "{points:?}"
    );
}

#[tokio::test]
async fn notifications_a_slow_subscriber_lost_are_counted() {
    let sink = Sink::new();
    let builder = in_process(ServerConfig::chaos())
        .notification_limits(mcp_runtime::FeedLimits {
            items: 10,
            bytes: 1 << 20,
        })
        .telemetry(sink.telemetry());
    let idle = builder.notifications();
    let client = builder.connect().await.unwrap();
    client
        .call_tool("flood", json!({"count": 200}))
        .await
        .unwrap();
    client.ping().await.unwrap();
    let lost = idle.dropped();
    assert!(lost >= 190, "{lost}");
    client.stop().await;
    assert_eq!(sink.counter(metrics::NOTIFICATIONS_DROPPED), lost);
}

#[tokio::test]
async fn a_group_names_each_server_on_its_spans_and_points() {
    let sink = Sink::new();
    let group = mcp_runtime::ClientGroup::builder()
        .server("left", in_process(ServerConfig::echo()))
        .server("right", in_process(ServerConfig::echo()))
        .telemetry(sink.telemetry())
        .start()
        .await
        .unwrap();
    group
        .call_tool_on("left", "add", json!({"a": 1, "b": 1}))
        .await
        .unwrap();
    group
        .call_tool_on("right", "echo", json!({"message": "hi"}))
        .await
        .unwrap();
    group.stop().await;
    let left = sink.span("tools/call add");
    assert_eq!(
        text(&left.attributes, keys::SERVER_NAME).as_deref(),
        Some("left")
    );
    let right = sink.span("tools/call echo");
    assert_eq!(
        text(&right.attributes, keys::SERVER_NAME).as_deref(),
        Some("right")
    );
    let points = sink.histogram(metrics::OPERATION_DURATION);
    for (tool, server) in [("add", "left"), ("echo", "right")] {
        assert!(
            points.iter().any(|(a, _, _)| {
                text(a, keys::TOOL_NAME).as_deref() == Some(tool)
                    && text(a, keys::SERVER_NAME).as_deref() == Some(server)
            }),
            "{tool} on {server}: {points:?}"
        );
    }
    // Every span of the group's clients (handshakes and list fetches included) names its server.
    for span in sink.spans() {
        assert!(
            text(&span.attributes, keys::SERVER_NAME).is_some(),
            "{} without a server name",
            span.name
        );
    }
}

#[tokio::test]
async fn a_task_runs_under_its_calls_span_and_its_polls_carry_its_context() {
    let sink = Sink::new();
    let mut config = ServerConfig::echo();
    config.tasks = true;
    config.era = mcp_testserver::Era::Legacy;
    let client = in_process(config)
        .era(mcp_runtime::EraMode::Legacy)
        .tasks(
            mcp_runtime::TaskOptions::new()
                .poll_bounds(Duration::from_millis(20), Duration::from_secs(1)),
        )
        .telemetry(sink.telemetry())
        .connect()
        .await
        .unwrap();
    client.list_all_tools().await.unwrap();
    let r = client
        .call_tool("task_slow", json!({"ms": 100, "interval_ms": 0}))
        .await
        .unwrap();
    assert!(!r.failed());
    client.stop().await;
    // One span for the whole call, task included; each of the task's requests an event on it.
    let call = sink.span("tools/call task_slow");
    let polls: Vec<String> = call
        .events
        .iter()
        .filter(|e| e.name == "mcp_client_rs.task_request")
        .filter_map(|e| text(&e.attributes, keys::METHOD))
        .collect();
    assert!(!polls.is_empty(), "{:?}", call.events);
    assert!(polls.iter().all(|m| m.starts_with("tasks/")), "{polls:?}");
    assert!(
        sink.spans().iter().all(|s| !s.name.starts_with("tasks/")),
        "no span of its own for a poll"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_sent_again_on_a_new_session_says_so() {
    use mcp_testserver::http::Fault;
    let sink = Sink::new();
    // Only the call takes the fault (a request of the client's own would race it otherwise).
    let config = HttpConfig::new(ServerConfig::echo())
        .with_fault(Fault::Expire404, Some(1))
        .with_fault_method("tools/call");
    let (client, _) = over_http(config, &sink).await;
    // The server forgets the session at this request: the client starts a new session and
    // sends the refused request again there.
    client
        .call_tool("add", json!({"a": 1, "b": 2}))
        .await
        .unwrap();
    client.stop().await;
    let call = sink.span("tools/call add");
    let resends: Vec<_> = call
        .events
        .iter()
        .filter(|e| e.name == "mcp_client_rs.resend")
        .collect();
    assert_eq!(resends.len(), 1, "{:?}", call.events);
    let tos = states_entered(&call);
    assert_eq!(tos.last().map(String::as_str), Some("ready"), "{tos:?}");
    // The span's id is the request that was answered (the one sent on the new session).
    assert_eq!(
        text(&resends[0].attributes, keys::REQUEST_ID),
        text(&call.attributes, keys::REQUEST_ID)
    );
    assert_eq!(
        sink.spans()
            .iter()
            .filter(|s| s.name == "initialize")
            .count(),
        2
    );
}
