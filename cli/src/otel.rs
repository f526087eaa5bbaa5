//! OpenTelemetry export for mcpc: when the standard `OTEL_EXPORTER_OTLP_ENDPOINT` (or the
//! per-signal `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` / `OTEL_EXPORTER_OTLP_METRICS_ENDPOINT`) is
//! set, every client mcpc builds records its spans and metrics (the runtime's `otel` feature,
//! by the MCP semantic conventions) and they are exported over OTLP/HTTP (protobuf bodies, or
//! JSON when `OTEL_EXPORTER_OTLP_PROTOCOL=http/json`), through our own HTTP client. Nothing is
//! exported, and nothing recorded, otherwise.
//!
//! The exporter reads the other standard variables itself (`OTEL_EXPORTER_OTLP_HEADERS`,
//! `OTEL_EXPORTER_OTLP_TIMEOUT`, `OTEL_EXPORTER_OTLP_COMPRESSION` (`gzip`), their per-signal
//! forms); the resource reads `OTEL_SERVICE_NAME` and `OTEL_RESOURCE_ATTRIBUTES` (service name
//! `mcpc` unless they name one). `OTEL_SDK_DISABLED=true` turns it all off; a gRPC protocol is
//! refused with a warning (mcpc speaks OTLP over HTTP only). A collector that does not take an
//! export costs one line on stderr at exit, never the command's result.

use std::sync::OnceLock;
use std::time::Duration;

use mcp_runtime::otel::Telemetry;
use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};
use opentelemetry_otlp::{
    MetricExporter, Protocol, SpanExporter, WithExportConfig, WithHttpConfig,
};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::trace::SdkTracerProvider;

/// The telemetry every client of this run records into, once export started.
static TELEMETRY: OnceLock<Telemetry> = OnceLock::new();

/// How long the flush at exit may take before mcpc gives up on the collector.
const FLUSH_BOUND: Duration = Duration::from_secs(5);

/// How much of a collector's answer is read.
const MAX_ANSWER: usize = 64 * 1024;

/// How long one export request may take.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);

/// The providers exporting this run's telemetry; [`Exporting::shutdown`] flushes them.
pub struct Exporting {
    tracer: SdkTracerProvider,
    meter: SdkMeterProvider,
}

/// The telemetry to give a client builder, when export is on.
pub fn telemetry() -> Option<Telemetry> {
    TELEMETRY.get().cloned()
}

fn set(name: &str) -> bool {
    std::env::var_os(name).is_some_and(|v| !v.is_empty())
}

/// Starts exporting when the environment asks for it (see the module's documentation). Must
/// be called inside the tokio runtime the exports will run on.
pub fn start() -> Option<Exporting> {
    if std::env::var("OTEL_SDK_DISABLED").is_ok_and(|v| v.eq_ignore_ascii_case("true")) {
        return None;
    }
    let wanted = [
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
    ]
    .iter()
    .any(|v| set(v));
    if !wanted {
        return None;
    }
    let (Some(span_protocol), Some(metric_protocol)) = (
        protocol("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"),
        protocol("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL"),
    ) else {
        return None;
    };
    let client = match ReqwestExport::new() {
        Ok(c) => c,
        Err(e) => {
            errln!("mcpc: cannot start the OpenTelemetry exporter: {e}");
            return None;
        }
    };
    let spans = SpanExporter::builder()
        .with_http()
        .with_protocol(span_protocol)
        .with_http_client(client.clone())
        .build();
    let metrics = MetricExporter::builder()
        .with_http()
        .with_protocol(metric_protocol)
        .with_http_client(client)
        .build();
    let (spans, metrics) = match (spans, metrics) {
        (Ok(s), Ok(m)) => (s, m),
        (Err(e), _) | (_, Err(e)) => {
            errln!("mcpc: cannot start the OpenTelemetry exporter: {e}");
            return None;
        }
    };
    let resource = resource();
    let tracer = SdkTracerProvider::builder()
        .with_resource(resource.clone())
        .with_batch_exporter(spans)
        .build();
    let meter = SdkMeterProvider::builder()
        .with_resource(resource)
        .with_periodic_exporter(metrics)
        .build();
    let _ = TELEMETRY.set(Telemetry::new(&tracer, &meter));
    Some(Exporting { tracer, meter })
}

/// The OTLP encoding a signal asks for (its own variable, else `OTEL_EXPORTER_OTLP_PROTOCOL`):
/// `http/json` or, by default as the specification says, `http/protobuf`. `None`, with a
/// warning, for gRPC (mcpc exports over HTTP only) or a value that is not a protocol.
fn protocol(signal: &str) -> Option<Protocol> {
    let (name, value) = [signal, "OTEL_EXPORTER_OTLP_PROTOCOL"]
        .into_iter()
        .find_map(|name| {
            let v = std::env::var(name).ok()?;
            (!v.trim().is_empty()).then(|| (name, v.trim().to_ascii_lowercase()))
        })
        .unwrap_or(("", "http/protobuf".to_owned()));
    match value.as_str() {
        "http/protobuf" => Some(Protocol::HttpBinary),
        "http/json" => Some(Protocol::HttpJson),
        _ => {
            errln!(
                "mcpc: {name}={} is not supported (OTLP over HTTP only: http/protobuf or http/json): no telemetry exported",
                crate::sanitize::clean(&value)
            );
            None
        }
    }
}

/// The resource: the environment's, with service name `mcpc` unless it names one.
fn resource() -> Resource {
    let named = set("OTEL_SERVICE_NAME")
        || std::env::var("OTEL_RESOURCE_ATTRIBUTES").is_ok_and(|a| {
            a.split(',')
                .any(|kv| kv.trim_start().starts_with("service.name="))
        });
    let builder = Resource::builder();
    if named {
        builder.build()
    } else {
        builder.with_service_name("mcpc").build()
    }
}

impl Exporting {
    /// Flushes what is buffered and stops the exporters, bounded (a collector that does not
    /// answer costs at most a few seconds at exit, with a warning).
    pub async fn shutdown(self) {
        let Exporting { tracer, meter } = self;
        let flush = tokio::task::spawn_blocking(move || {
            let spans = tracer.shutdown();
            let metrics = meter.shutdown();
            (spans, metrics)
        });
        match tokio::time::timeout(FLUSH_BOUND, flush).await {
            Ok(Ok((Ok(()), Ok(())))) => {}
            Ok(Ok((spans, metrics))) => {
                let failed: Vec<&str> = [("spans", spans.is_err()), ("metrics", metrics.is_err())]
                    .into_iter()
                    .filter_map(|(what, failed)| failed.then_some(what))
                    .collect();
                errln!(
                    "mcpc: OpenTelemetry: the collector did not take the {} (is OTEL_EXPORTER_OTLP_ENDPOINT right and the collector up?)",
                    failed.join(" and ")
                );
            }
            Ok(Err(_)) | Err(_) => {
                errln!("mcpc: OpenTelemetry export did not finish in {FLUSH_BOUND:?}");
            }
        }
    }
}

/// The exporter's HTTP client: our reqwest client, each request run on the runtime mcpc
/// started export on (the exporters call it from threads of their own).
#[derive(Clone, Debug)]
struct ReqwestExport {
    client: reqwest::Client,
    runtime: tokio::runtime::Handle,
}

impl ReqwestExport {
    fn new() -> Result<Self, reqwest::Error> {
        Ok(ReqwestExport {
            client: reqwest::Client::builder()
                .timeout(EXPORT_TIMEOUT)
                .redirect(reqwest::redirect::Policy::none())
                .build()?,
            runtime: tokio::runtime::Handle::current(),
        })
    }
}

#[async_trait::async_trait]
impl HttpClient for ReqwestExport {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let client = self.client.clone();
        let sent = self.runtime.spawn(async move {
            let request = reqwest::Request::try_from(request)?;
            let response = client.execute(request).await?;
            let mut out = Response::builder().status(response.status());
            for (k, v) in response.headers() {
                out = out.header(k, v);
            }
            // The collector's answer is small and only its status counts: past 64 KiB the
            // rest is not read.
            let mut response = response;
            let mut body = Vec::new();
            while let Ok(Some(chunk)) = response.chunk().await {
                if body.len() + chunk.len() > MAX_ANSWER {
                    break;
                }
                body.extend_from_slice(&chunk);
            }
            Ok::<_, HttpError>(out.body(Bytes::from(body))?)
        });
        sent.await?
    }
}
