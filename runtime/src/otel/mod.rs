//! OpenTelemetry for the client, by the MCP semantic conventions (OpenTelemetry GenAI
//! semantic conventions, `docs/gen-ai/mcp.md`, status Development): a CLIENT span per request
//! and per notification the client sends, a SERVER span per request (sampling, elicitation,
//! roots) and notification of the server, the `mcp.client.operation.duration`,
//! `mcp.server.operation.duration` and `mcp.client.session.duration` histograms, a few metrics
//! of our own under [`PREFIX`], and the W3C trace context and baggage carried in `params._meta`
//! both ways (SEP-414). Only with the `otel` feature.
//!
//! A client records nothing until its builder is given a [`Telemetry`]
//! ([`crate::ClientBuilder::telemetry`]); then every request it sends is a span whose parent is
//! the OpenTelemetry context current where the request was made
//! ([`opentelemetry::Context::current`]: attach one, or run the future under
//! [`opentelemetry::context::FutureExt::with_context`]). This module exports nothing itself:
//! the host installs the providers and exporters it wants (`mcpc` exports OTLP when
//! `OTEL_EXPORTER_OTLP_ENDPOINT` is set).
//!
//! What `error.type` says (low cardinality, as the conventions ask): the JSON-RPC error code of
//! the server's error (`-32602`), `tool_error` for a tool result with `isError: true`, else one
//! of `timeout`, `cancelled`, `shutdown`, `unavailable`, `connection_lost`, `send_failed`,
//! `backpressure`, `invalid_response`, `invalid_result`, `unauthorized`, `input_required`,
//! `input_failed`, `task_cancelled`, `task_lost`, `task_unreachable`, `output_schema_mismatch`,
//! `connect`, or `_OTHER`. A session that ends on a failure says which: `transport`,
//! `oversized`, `init_timeout`, `refused`, `unsupported_version`, `bad_handshake`,
//! `no_common_version`, `not_modern`, `probe_timeout`, `unauthorized`, `init_not_sent`, or
//! `_OTHER`.

mod call;
mod meta;
mod notify;
mod operation;
mod server;
mod session;

use std::borrow::Cow;
use std::sync::Arc;

use opentelemetry::global::{self, BoxedTracer};
use opentelemetry::metrics::{Counter, Histogram, Meter, MeterProvider};
use opentelemetry::propagation::{TextMapCompositePropagator, TextMapPropagator};
use opentelemetry::trace::{Tracer, TracerProvider};
use opentelemetry::{InstrumentationScope, KeyValue};

pub(crate) use call::CallSpan;
pub use meta::{context_from_meta, inject_into_meta};
pub(crate) use notify::NotificationSpan;
pub(crate) use server::ServerSpan;
pub(crate) use session::SessionClock;

/// The prefix of the attributes and metrics of our own (the conventions name none of them):
/// `mcp_client_rs.server.name`, `mcp_client_rs.client.reconnects`, and so on.
pub const PREFIX: &str = "mcp_client_rs";

/// The bucket boundaries, in seconds, the conventions give the MCP duration histograms.
pub const DURATION_BUCKETS: [f64; 14] = [
    0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];

/// The instrumentation scope the client's spans and metrics carry.
pub const SCOPE_NAME: &str = "mcp-runtime";

/// Attribute keys of the conventions and our own.
pub mod keys {
    /// `mcp.method.name`.
    pub const METHOD: &str = "mcp.method.name";
    /// `mcp.protocol.version`.
    pub const PROTOCOL_VERSION: &str = "mcp.protocol.version";
    /// `mcp.session.id`.
    pub const SESSION_ID: &str = "mcp.session.id";
    /// `mcp.resource.uri`.
    pub const RESOURCE_URI: &str = "mcp.resource.uri";
    /// `jsonrpc.request.id`.
    pub const REQUEST_ID: &str = "jsonrpc.request.id";
    /// `gen_ai.tool.name`.
    pub const TOOL_NAME: &str = "gen_ai.tool.name";
    /// `gen_ai.prompt.name`.
    pub const PROMPT_NAME: &str = "gen_ai.prompt.name";
    /// `gen_ai.operation.name` (`execute_tool` for `tools/call` only).
    pub const OPERATION_NAME: &str = "gen_ai.operation.name";
    /// `gen_ai.tool.call.arguments` (opt-in: [`super::Telemetry::capture_tool_io`]).
    pub const TOOL_ARGUMENTS: &str = "gen_ai.tool.call.arguments";
    /// `gen_ai.tool.call.result` (opt-in: [`super::Telemetry::capture_tool_io`]).
    pub const TOOL_RESULT: &str = "gen_ai.tool.call.result";
    /// `error.type`.
    pub const ERROR_TYPE: &str = "error.type";
    /// `rpc.response.status_code`: the JSON-RPC error code of an error answer.
    pub const STATUS_CODE: &str = "rpc.response.status_code";
    /// `network.transport`: `pipe` (stdio) or `tcp` (HTTP).
    pub const NETWORK_TRANSPORT: &str = "network.transport";
    /// `network.protocol.name`: `http` over HTTP.
    pub const NETWORK_PROTOCOL: &str = "network.protocol.name";
    /// `network.protocol.version`: the HTTP version of the server's latest response (`1.1`,
    /// `2`), over HTTP, once one came.
    pub const NETWORK_PROTOCOL_VERSION: &str = "network.protocol.version";
    /// `server.address`.
    pub const SERVER_ADDRESS: &str = "server.address";
    /// `server.port`.
    pub const SERVER_PORT: &str = "server.port";
    /// Ours: the server's name in a group or a host's configuration.
    pub const SERVER_NAME: &str = "mcp_client_rs.server.name";
}

/// Metric names of the conventions and our own.
pub mod metrics {
    /// The conventions' histogram of each request's duration, in seconds.
    pub const OPERATION_DURATION: &str = "mcp.client.operation.duration";
    /// The conventions' histogram of each session's duration (ready until it ended), seconds.
    pub const SESSION_DURATION: &str = "mcp.client.session.duration";
    /// The conventions' histogram of the time the client took over what the server initiated
    /// (a request: until its handler answered; a notification: until it was delivered), in
    /// seconds. The conventions name the side that receives an operation the "server" of
    /// it: here, the client.
    pub const SERVER_OPERATION_DURATION: &str = "mcp.server.operation.duration";
    /// Ours: sessions that ended on a failure and were followed by a new attempt (counter).
    pub const RECONNECTS: &str = "mcp_client_rs.client.reconnects";
    /// Ours: time spent waiting in backoff before a new attempt (histogram, seconds).
    pub const BACKOFF_DURATION: &str = "mcp_client_rs.client.backoff.duration";
    /// Ours: calls answered at once because the server was unavailable (counter).
    pub const CALLS_REFUSED: &str = "mcp_client_rs.client.calls.refused";
    /// Ours: server notifications a slow subscriber lost (counter).
    pub const NOTIFICATIONS_DROPPED: &str = "mcp_client_rs.client.notifications.dropped";
}

/// The instruments a client records into.
pub(crate) struct Instruments {
    pub(crate) operation: Histogram<f64>,
    pub(crate) server_operation: Histogram<f64>,
    pub(crate) session: Histogram<f64>,
    pub(crate) reconnects: Counter<u64>,
    pub(crate) backoff: Histogram<f64>,
    pub(crate) refused: Counter<u64>,
    pub(crate) dropped: Counter<u64>,
}

impl Instruments {
    fn new(meter: &Meter) -> Self {
        let seconds = |name: &'static str, description: &'static str| {
            meter
                .f64_histogram(name)
                .with_unit("s")
                .with_description(description)
                .with_boundaries(DURATION_BUCKETS.to_vec())
                .build()
        };
        Instruments {
            operation: seconds(
                metrics::OPERATION_DURATION,
                "The duration of the MCP request or notification as observed on the sender from the time it was sent until the response or ack is received.",
            ),
            server_operation: seconds(
                metrics::SERVER_OPERATION_DURATION,
                "The duration of the MCP request or notification as observed on the receiver from the time it was received until the result or ack is sent.",
            ),
            session: seconds(
                metrics::SESSION_DURATION,
                "The duration of the MCP session as observed on the MCP client.",
            ),
            reconnects: meter
                .u64_counter(metrics::RECONNECTS)
                .with_description(
                    "Sessions that ended on a failure and were followed by a new attempt.",
                )
                .build(),
            backoff: seconds(
                metrics::BACKOFF_DURATION,
                "Time spent in backoff before a new connection attempt.",
            ),
            refused: meter
                .u64_counter(metrics::CALLS_REFUSED)
                .with_description("Calls answered at once because the server was unavailable.")
                .build(),
            dropped: meter
                .u64_counter(metrics::NOTIFICATIONS_DROPPED)
                .with_description("Server notifications a slow subscriber lost.")
                .build(),
        }
    }
}

/// What a client records into and how: the tracer and meter, the propagator of `_meta`, and
/// the options. Cheap to clone (a group gives each server's client a clone with its name).
///
/// It is not an exporter and installs nothing: spans and metrics go wherever the providers it
/// was made from send them.
#[derive(Clone)]
pub struct Telemetry {
    tracer: Arc<BoxedTracer>,
    instruments: Arc<Instruments>,
    /// `None`: W3C trace context and baggage, written without a propagator's detour.
    propagator: Option<Arc<dyn TextMapPropagator + Send + Sync>>,
    server_name: Option<Arc<str>>,
    capture_tool_io: bool,
    uri_in_span_name: bool,
    raw_session_id: bool,
}

impl std::fmt::Debug for Telemetry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Telemetry")
            .field("server_name", &self.server_name)
            .field("capture_tool_io", &self.capture_tool_io)
            .field("uri_in_span_name", &self.uri_in_span_name)
            .finish_non_exhaustive()
    }
}

impl Telemetry {
    /// Records into the global providers ([`opentelemetry::global::tracer_provider`],
    /// [`opentelemetry::global::meter_provider`]) as they are when this is called.
    pub fn global() -> Self {
        let tracer = global::tracer_with_scope(scope());
        let meter = global::meter_with_scope(scope());
        Telemetry::from_parts(tracer, &meter)
    }

    /// Records into these providers.
    pub fn new<T, M>(tracer_provider: &T, meter_provider: &M) -> Self
    where
        T: TracerProvider,
        T::Tracer: Send + Sync + 'static,
        <T::Tracer as Tracer>::Span: Send + Sync + 'static,
        M: MeterProvider,
    {
        let tracer = BoxedTracer::new(Box::new(tracer_provider.tracer_with_scope(scope())));
        let meter = meter_provider.meter_with_scope(scope());
        Telemetry::from_parts(tracer, &meter)
    }

    fn from_parts(tracer: BoxedTracer, meter: &Meter) -> Self {
        Telemetry {
            tracer: Arc::new(tracer),
            instruments: Arc::new(Instruments::new(meter)),
            propagator: None,
            server_name: None,
            capture_tool_io: false,
            uri_in_span_name: false,
            raw_session_id: false,
        }
    }

    /// The server's name (in a group, a host's configuration), on every span and metric as
    /// `mcp_client_rs.server.name`. A group sets it for each of its servers.
    pub fn server_name(mut self, name: impl Into<String>) -> Self {
        self.server_name = Some(Arc::from(name.into()));
        self
    }

    /// The propagator that writes the context into `params._meta` of each request and reads it
    /// from the server's requests. Default: W3C trace context and W3C baggage (`traceparent`,
    /// `tracestate`, `baggage`), whatever the global propagator is.
    pub fn propagator(
        mut self,
        propagator: impl TextMapPropagator + Send + Sync + 'static,
    ) -> Self {
        self.propagator = Some(Arc::new(propagator));
        self
    }

    /// Records the opt-in `gen_ai.tool.call.arguments` and `gen_ai.tool.call.result` on tool
    /// call spans (off by default: they may hold anything the user or the server wrote).
    pub fn capture_tool_io(mut self, on: bool) -> Self {
        self.capture_tool_io = on;
        self
    }

    /// Names a `resources/read` (and subscribe) span `{method} {uri}` (off by default: URIs
    /// make span names of high cardinality).
    pub fn resource_uri_in_span_name(mut self, on: bool) -> Self {
        self.uri_in_span_name = on;
        self
    }

    /// Records the server's `Mcp-Session-Id` itself as `mcp.session.id` (off by default).
    /// Whoever holds a Streamable HTTP session id can make requests in that session, so by
    /// default the attribute is a digest of it instead: the same for every span of one session
    /// of one process, different for another session, and useless to send requests with.
    pub fn raw_session_id(mut self, on: bool) -> Self {
        self.raw_session_id = on;
        self
    }

    /// The name given with [`Telemetry::server_name`], if any.
    pub fn name(&self) -> Option<&str> {
        self.server_name.as_deref()
    }

    /// Writes `cx` into `params._meta` with the propagator in use.
    pub(crate) fn inject(
        &self,
        cx: &opentelemetry::Context,
        params: &mut Option<serde_json::Value>,
    ) {
        match &self.propagator {
            Some(p) => inject_into_meta(&**p, cx, params),
            None => meta::inject_w3c(cx, params),
        }
    }

    /// The context `params._meta` carries, read with the propagator in use, over `parent`.
    pub(crate) fn extract(
        &self,
        params: Option<&serde_json::Value>,
        parent: &opentelemetry::Context,
    ) -> opentelemetry::Context {
        match &self.propagator {
            Some(p) => context_from_meta(&**p, params, parent),
            None => context_from_meta(w3c(), params, parent),
        }
    }
}

fn scope() -> InstrumentationScope {
    InstrumentationScope::builder(SCOPE_NAME)
        .with_version(env!("CARGO_PKG_VERSION"))
        .build()
}

/// The default propagator, made once.
fn w3c() -> &'static TextMapCompositePropagator {
    static W3C: std::sync::OnceLock<TextMapCompositePropagator> = std::sync::OnceLock::new();
    W3C.get_or_init(default_propagator)
}

/// The propagator a [`Telemetry`] uses unless told otherwise: W3C trace context and W3C
/// baggage, as SEP-414 names them in `_meta` (a [`Telemetry`] writes them itself, to the
/// same effect, without going through it).
pub fn default_propagator() -> TextMapCompositePropagator {
    TextMapCompositePropagator::new(vec![
        Box::new(opentelemetry_sdk::propagation::TraceContextPropagator::new()),
        Box::new(opentelemetry_sdk::propagation::BaggagePropagator::new()),
    ])
}

/// Marks `cx` as the context of a GenAI `execute_tool` span the host opened around a tool
/// call: a `tools/call` made under it adds its MCP attributes to that span instead of opening
/// a span of its own (as the conventions ask when the outer instrumentation is known). The
/// span must be the context's active span; nothing is checked of its name or attributes (the
/// API cannot read them back), so mark only an `execute_tool` span.
pub fn execute_tool_context(cx: opentelemetry::Context) -> opentelemetry::Context {
    cx.with_value(OuterToolSpan)
}

/// The mark [`execute_tool_context`] puts in a context.
#[derive(Clone, Copy, Debug)]
struct OuterToolSpan;

/// Where the server is, as the conventions' network attributes say it.
#[derive(Clone, Debug, Default)]
pub(crate) struct Peer {
    /// `pipe` or `tcp`.
    transport: &'static str,
    /// `http` over HTTP.
    protocol: Option<&'static str>,
    address: Option<Arc<str>>,
    port: Option<i64>,
}

impl Peer {
    /// The peer of a connector: a URL's host and port over TCP, else a pipe.
    pub(crate) fn of(connector: &dyn crate::transport::Connector) -> Peer {
        match connector.server_url() {
            Some(url) => Peer {
                transport: "tcp",
                protocol: Some("http"),
                address: url
                    .host_str()
                    .map(|h| Arc::from(h.trim_matches(['[', ']']))),
                port: url.port_or_known_default().map(i64::from),
            },
            None => Peer {
                transport: "pipe",
                ..Peer::default()
            },
        }
    }

    /// The attributes of the peer.
    fn attributes(&self, out: &mut Vec<KeyValue>) {
        out.push(KeyValue::new(keys::NETWORK_TRANSPORT, self.transport));
        if let Some(p) = self.protocol {
            out.push(KeyValue::new(keys::NETWORK_PROTOCOL, p));
        }
        if let Some(a) = &self.address {
            out.push(KeyValue::new(
                keys::SERVER_ADDRESS,
                opentelemetry::StringValue::from(Arc::clone(a)),
            ));
            if let Some(port) = self.port {
                out.push(KeyValue::new(keys::SERVER_PORT, port));
            }
        }
    }
}

/// What the connection is at the moment a span ends or a point is recorded: the protocol
/// version and session of the server, and the HTTP version of its latest response.
#[derive(Default)]
pub(crate) struct Moment<'a> {
    pub(crate) version: Option<&'a str>,
    pub(crate) session: Option<String>,
    pub(crate) http: Option<&'static str>,
}

/// A client's telemetry and where its server is: what the client and its driver record with.
#[derive(Clone)]
pub(crate) struct Recorder {
    pub(crate) telemetry: Telemetry,
    /// The key of the session ids' digest (random per client).
    session_key: std::hash::RandomState,
    /// The attributes every metric point of this client carries (peer, server name).
    common: Arc<[KeyValue]>,
}

impl Recorder {
    pub(crate) fn new(telemetry: Telemetry, connector: &dyn crate::transport::Connector) -> Self {
        let peer = Peer::of(connector);
        let mut common = Vec::new();
        peer.attributes(&mut common);
        if let Some(name) = &telemetry.server_name {
            common.push(KeyValue::new(
                keys::SERVER_NAME,
                opentelemetry::StringValue::from(Arc::clone(name)),
            ));
        }
        Recorder {
            telemetry,
            session_key: std::hash::RandomState::new(),
            common: common.into(),
        }
    }

    pub(crate) fn instruments(&self) -> &Instruments {
        &self.telemetry.instruments
    }

    /// The attributes every point and span of this client carries.
    pub(crate) fn common(&self) -> &[KeyValue] {
        &self.common
    }

    /// The `mcp.session.id` of session `id`: the id itself only when asked
    /// ([`Telemetry::raw_session_id`]), else a keyed digest of it (32 hex digits).
    pub(crate) fn session_attribute(&self, id: String) -> String {
        use std::hash::{BuildHasher, Hasher};
        if self.telemetry.raw_session_id {
            return id;
        }
        let mut digest = String::with_capacity(32);
        for salt in [0u8, 1] {
            let mut h = self.session_key.build_hasher();
            h.write_u8(salt);
            h.write(id.as_bytes());
            digest.push_str(&format!("{:016x}", h.finish()));
        }
        digest
    }

    /// Counts notifications lost by slow subscribers.
    pub(crate) fn dropped_notifications(&self, n: u64) {
        if n > 0 {
            self.instruments().dropped.add(n, &self.common);
        }
    }
}

/// The `error.type` of a call's error (see the module's documentation).
pub(crate) fn error_type(e: &crate::Error) -> Cow<'static, str> {
    use crate::Error as E;
    Cow::Borrowed(match e {
        E::Server { code, .. } => return Cow::Owned(code.to_string()),
        E::MissingCapability { .. } => {
            return Cow::Owned(mcp_machine::codes::MISSING_CAPABILITY.to_string());
        }
        E::ResourceNotFound { .. } => {
            return Cow::Owned(mcp_machine::codes::RESOURCE_NOT_FOUND.to_string());
        }
        E::Timeout { .. } => "timeout",
        E::Cancelled => "cancelled",
        E::Shutdown => "shutdown",
        E::Unavailable { .. } => "unavailable",
        E::ConnectionLost(_) => "connection_lost",
        E::SendFailed => "send_failed",
        E::Backpressure { .. } => "backpressure",
        E::InvalidResponse { .. } | E::UnknownResultType { .. } => "invalid_response",
        E::InvalidResult { .. } => "invalid_result",
        E::Unauthorized { .. } => "unauthorized",
        E::InputRequired { .. } => "input_required",
        E::InputFailed { .. } => "input_failed",
        E::TaskCancelled { .. } => "task_cancelled",
        E::TaskLost { .. } => "task_lost",
        E::TaskUnreachable { .. } => "task_unreachable",
        E::OutputSchemaMismatch { .. } | E::InvalidOutputSchema { .. } => "output_schema_mismatch",
        E::Connect(_) => "connect",
        _ => "_OTHER",
    })
}

/// The `error.type` of a session that ended on `failure`.
pub(crate) fn failure_type(failure: &mcp_machine::Failure) -> &'static str {
    use mcp_machine::Failure as F;
    match failure {
        F::Transport(_) => "transport",
        F::Oversized { .. } => "oversized",
        F::InitTimeout { .. } => "init_timeout",
        F::Refused(_) => "refused",
        F::UnsupportedVersion { .. } => "unsupported_version",
        F::BadHandshake { .. } => "bad_handshake",
        F::NoCommonVersion { .. } => "no_common_version",
        F::NotModern { .. } => "not_modern",
        F::ProbeTimeout { .. } => "probe_timeout",
        F::Unauthorized { .. } => "unauthorized",
        F::InitNotSent => "init_not_sent",
        F::InitializedNotSent => "init_not_sent",
        _ => "_OTHER",
    }
}

/// `text` as an attribute value: a static string when it is one of the conventions'
/// well-known method names or a protocol version (no allocation), else its own copy.
pub(crate) fn interned(text: &str) -> opentelemetry::Value {
    match known(text) {
        Some(known) => opentelemetry::Value::from(known),
        None => opentelemetry::Value::from(text.to_owned()),
    }
}

/// `text` as a static string when it is one of the conventions' well-known method names (and
/// the other methods of both eras and of the tasks extension) or a protocol version.
fn known(text: &str) -> Option<&'static str> {
    Some(match text {
        "completion/complete" => "completion/complete",
        "elicitation/create" => "elicitation/create",
        "initialize" => "initialize",
        "logging/setLevel" => "logging/setLevel",
        "ping" => "ping",
        "prompts/get" => "prompts/get",
        "prompts/list" => "prompts/list",
        "resources/list" => "resources/list",
        "resources/read" => "resources/read",
        "resources/subscribe" => "resources/subscribe",
        "resources/templates/list" => "resources/templates/list",
        "resources/unsubscribe" => "resources/unsubscribe",
        "roots/list" => "roots/list",
        "sampling/createMessage" => "sampling/createMessage",
        "tools/call" => "tools/call",
        "tools/list" => "tools/list",
        "server/discover" => "server/discover",
        "subscriptions/listen" => "subscriptions/listen",
        "tasks/get" => "tasks/get",
        "tasks/result" => "tasks/result",
        "tasks/list" => "tasks/list",
        "tasks/cancel" => "tasks/cancel",
        "tasks/update" => "tasks/update",
        "notifications/cancelled" => "notifications/cancelled",
        "notifications/initialized" => "notifications/initialized",
        "notifications/message" => "notifications/message",
        "notifications/progress" => "notifications/progress",
        "notifications/prompts/list_changed" => "notifications/prompts/list_changed",
        "notifications/resources/list_changed" => "notifications/resources/list_changed",
        "notifications/resources/updated" => "notifications/resources/updated",
        "notifications/roots/list_changed" => "notifications/roots/list_changed",
        "notifications/tools/list_changed" => "notifications/tools/list_changed",
        "notifications/elicitation/complete" => "notifications/elicitation/complete",
        "notifications/tasks/status" => "notifications/tasks/status",
        "2024-11-05" => "2024-11-05",
        "2025-03-26" => "2025-03-26",
        "2025-06-18" => "2025-06-18",
        "2025-11-25" => "2025-11-25",
        "2026-07-28" => "2026-07-28",
        _ => return None,
    })
}

/// A method the server named, as a metric attribute: the method when it is one this module
/// knows (the conventions' well-known ones, both eras', the tasks extension's), else `_OTHER`
/// (a server that makes up method names cannot grow the number of metric series).
pub(crate) fn known_method(method: &str) -> opentelemetry::Value {
    opentelemetry::Value::from(known(method).unwrap_or("_OTHER"))
}

/// `text` as an attribute value that clones without copying.
pub(crate) fn shared(text: &str) -> opentelemetry::Value {
    opentelemetry::Value::String(opentelemetry::StringValue::from(Arc::<str>::from(text)))
}

/// `text` cut to at most `max` bytes at a character boundary.
pub(crate) fn bounded(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_method_the_server_made_up_is_other_on_a_point_and_itself_on_a_span() {
        for known in [
            "notifications/progress",
            "notifications/tasks/status",
            "sampling/createMessage",
            "elicitation/create",
            "roots/list",
        ] {
            assert_eq!(known_method(known), opentelemetry::Value::from(known));
        }
        for made_up in ["notifications/x-1", "sampling/createMessage2", ""] {
            assert_eq!(known_method(made_up), opentelemetry::Value::from("_OTHER"));
            assert_eq!(
                interned(made_up),
                opentelemetry::Value::from(made_up.to_owned())
            );
        }
    }
}
