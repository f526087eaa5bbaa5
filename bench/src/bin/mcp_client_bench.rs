//! Echo benchmark of this client, with the same command line and output as the rmcp
//! benchmark client in shared/peers/rmcp-bench, so both run side by side against one server:
//! `mcp_client_bench [-n N] [-c CONC] [--warmup W] [--connects K] [--rt multi|current]
//! [--era auto|legacy] -- SERVER CMD` (stdio), or `-- http://HOST:PORT/mcp` (Streamable HTTP).
//! `--era legacy` skips the 2026-07-28 probe (`server/discover`) before `initialize`: the
//! connect time without its round trip. `--seq-only` skips the run with calls in flight.
//! `--cpu` also prints the CPU time of the process's threads per call of each run (Linux:
//! `/proc/self/task/*/schedstat`), one JSON line of mode `cpu`.
//! With the `otel` feature, `--otel` gives the client a telemetry whose exporters drop
//! everything (see `drop_sink`): every call records a span and a metric point.
//! Prints one JSON line for the connect time (median of K connects: spawn or connect, then the
//! handshake, to ready), one for the sequential run and one for CONC calls in flight.

use std::time::{Duration, Instant};

use mcp_runtime::{Client, ClientBuilder, EraMode};
use serde_json::json;

#[cfg(feature = "count-allocs")]
#[global_allocator]
static GLOBAL: &stats_alloc::StatsAlloc<std::alloc::System> = &stats_alloc::INSTRUMENTED_SYSTEM;

/// Allocations and bytes allocated so far (zero without the `count-allocs` feature).
fn allocated() -> (usize, usize) {
    #[cfg(feature = "count-allocs")]
    {
        let s = GLOBAL.stats();
        (s.allocations + s.reallocations, s.bytes_allocated)
    }
    #[cfg(not(feature = "count-allocs"))]
    {
        (0, 0)
    }
}

/// The CPU time so far of this process's live threads, in nanoseconds (`/proc`, Linux; 0
/// elsewhere). Threads that ended are not counted: the runtime's and the OpenTelemetry SDK's
/// threads live through the whole run.
fn cpu_ns() -> u64 {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

fn report(label: &str, rt: &str, n: usize, conc: usize, secs: f64, lat: Vec<f64>) {
    mcp_bench::report(&format!("mcp-runtime ({rt})"), label, n, conc, secs, lat);
}

/// OpenTelemetry providers whose exporters drop everything (feature `otel`): the cost of
/// recording a call's span and metric point, without the cost of any export format or network.
#[cfg(feature = "otel")]
mod drop_sink {
    use std::sync::atomic::{AtomicU64, Ordering};

    use opentelemetry_sdk::error::OTelSdkResult;
    use opentelemetry_sdk::metrics::data::ResourceMetrics;
    use opentelemetry_sdk::metrics::exporter::PushMetricExporter;
    use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider, Temporality};
    use opentelemetry_sdk::trace::{Sampler, SdkTracerProvider, SpanData, SpanExporter};

    /// Spans the exporter was given (one atomic add per batch: what shows that the calls'
    /// spans were recorded and reached the exporter, not dropped on the way).
    static SPANS: AtomicU64 = AtomicU64::new(0);
    /// Metric collections the exporter was given.
    static COLLECTIONS: AtomicU64 = AtomicU64::new(0);

    /// A span exporter that takes every batch and keeps nothing (it counts the spans).
    #[derive(Debug)]
    struct DropSpans;

    impl SpanExporter for DropSpans {
        async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
            SPANS.fetch_add(batch.len() as u64, Ordering::Relaxed);
            Ok(())
        }
    }

    /// A metric exporter that takes every collection and keeps nothing (it counts them).
    struct DropMetrics;

    impl PushMetricExporter for DropMetrics {
        async fn export(&self, _metrics: &ResourceMetrics) -> OTelSdkResult {
            COLLECTIONS.fetch_add(1, Ordering::Relaxed);
            Ok(())
        }

        fn force_flush(&self) -> OTelSdkResult {
            Ok(())
        }

        fn shutdown_with_timeout(&self, _timeout: std::time::Duration) -> OTelSdkResult {
            Ok(())
        }

        fn temporality(&self) -> Temporality {
            Temporality::Cumulative
        }
    }

    /// The providers, as a host would install them: every span sampled (AlwaysOn) and handed
    /// to a BatchSpanProcessor (its own thread), metrics aggregated and collected by a
    /// PeriodicReader (its own thread, the SDK's default interval). Dropping it shuts both down.
    pub struct Sink {
        tracer: SdkTracerProvider,
        meter: SdkMeterProvider,
    }

    impl Sink {
        pub fn new() -> Self {
            Sink {
                tracer: SdkTracerProvider::builder()
                    .with_sampler(Sampler::AlwaysOn)
                    .with_batch_exporter(DropSpans)
                    .build(),
                meter: SdkMeterProvider::builder()
                    .with_reader(PeriodicReader::builder(DropMetrics).build())
                    .build(),
            }
        }

        /// The telemetry a client records into these providers with.
        pub fn telemetry(&self) -> mcp_runtime::otel::Telemetry {
            mcp_runtime::otel::Telemetry::new(&self.tracer, &self.meter)
        }

        /// Shuts both providers down (the last spans and a last collection are exported) and
        /// returns how many spans and metric collections the exporters were given.
        pub fn finish(self) -> (u64, u64) {
            // A provider already shut down (nothing else is) is no error worth a word here.
            let _ = self.tracer.shutdown();
            let _ = self.meter.shutdown();
            (
                SPANS.load(Ordering::Relaxed),
                COLLECTIONS.load(Ordering::Relaxed),
            )
        }
    }
}

/// What the client records into: with `--otel` (feature `otel`), the drop sink; else nothing.
#[derive(Clone, Default)]
struct Recording {
    #[cfg(feature = "otel")]
    telemetry: Option<mcp_runtime::otel::Telemetry>,
}

impl Recording {
    fn apply(&self, builder: ClientBuilder) -> ClientBuilder {
        #[cfg(feature = "otel")]
        if let Some(t) = &self.telemetry {
            return builder.telemetry(t.clone());
        }
        builder
    }
}

async fn echo(client: &Client, i: usize) {
    let r = client
        .call_tool("echo", json!({"message": format!("m{i}")}))
        .await
        .expect("echo call");
    assert!(!r.failed());
}

fn builder(cmd: &[String], era: EraMode, rec: &Recording) -> ClientBuilder {
    let builder = if cmd[0].starts_with("http://") || cmd[0].starts_with("https://") {
        ClientBuilder::streamable_http(&cmd[0]).expect("an HTTP URL")
    } else {
        ClientBuilder::stdio(&cmd[0], &cmd[1..])
    };
    rec.apply(
        builder
            .request_timeout(Duration::from_secs(60))
            .send_queue(4096)
            .era(era),
    )
}

/// What to run: calls, calls in flight, warm-up calls, connects, whether to skip the
/// sequential run or the concurrent one, and what the client records into.
struct Plan {
    n: usize,
    conc: usize,
    warmup: usize,
    connects: usize,
    conc_only: bool,
    seq_only: bool,
    cpu: bool,
    era: EraMode,
    rec: Recording,
}

async fn run(plan: Plan, rt: &str, cmd: Vec<String>) {
    let Plan {
        n,
        conc,
        warmup,
        connects,
        conc_only,
        seq_only,
        cpu,
        era,
        rec,
    } = plan;
    let mut times = Vec::with_capacity(connects);
    for _ in 0..connects {
        let t = Instant::now();
        let client = builder(&cmd, era, &rec).connect().await.expect("connect");
        times.push(t.elapsed().as_secs_f64());
        // Torn down whole before the next connect, as rmcp's `cancel` does (it waits for the
        // server's exit): a server still exiting would share the CPU with the next one's start.
        client.stop().await;
        client.closed().await;
    }
    if connects > 0 {
        let p50 = mcp_bench::pct(&mut times, 0.5);
        println!(
            "{{\"client\":\"mcp-runtime ({rt})\",\"mode\":\"connect\",\"n\":{connects},\"p50_us\":{:.1}}}",
            p50 * 1e6
        );
    }
    let client = builder(&cmd, era, &rec).connect().await.expect("connect");
    for i in 0..warmup {
        echo(&client, i).await;
    }
    // `--conc-only` (for a profile of the concurrent run alone): no sequential calls.
    let seq_n = if conc_only { 0 } else { n };
    let mut lat = Vec::with_capacity(n);
    let (allocs0, bytes0) = allocated();
    let cpu0 = cpu_ns();
    let t0 = Instant::now();
    for i in 0..seq_n {
        let t = Instant::now();
        echo(&client, i).await;
        lat.push(t.elapsed().as_secs_f64());
    }
    let secs = t0.elapsed().as_secs_f64();
    let seq_cpu = cpu_ns() - cpu0;
    let (allocs1, bytes1) = allocated();
    if cfg!(feature = "count-allocs") && !conc_only {
        // Every allocation of the process in the sequential run (client and runtime), per call.
        println!(
            "{{\"client\":\"mcp-runtime ({rt})\",\"mode\":\"allocs\",\"n\":{n},\"allocs_per_call\":{:.1},\"bytes_per_call\":{:.0}}}",
            (allocs1 - allocs0) as f64 / n as f64,
            (bytes1 - bytes0) as f64 / n as f64
        );
    }
    if !conc_only {
        report("seq", rt, n, 1, secs, lat);
    }
    let per_call = |ns: u64| ns as f64 / 1e3 / n.max(1) as f64;
    if seq_only {
        if cpu {
            println!(
                "{{\"client\":\"mcp-runtime ({rt})\",\"mode\":\"cpu\",\"seq_us_per_call\":{:.2}}}",
                per_call(seq_cpu)
            );
        }
        client.stop().await;
        return;
    }
    let shared = client.clone();
    let cpu0 = cpu_ns();
    let (secs, lat) = mcp_bench::concurrent(n, conc, move |i| {
        let client = shared.clone();
        async move { echo(&client, i).await }
    })
    .await;
    let conc_cpu = cpu_ns() - cpu0;
    report("conc", rt, n, conc, secs, lat);
    if cpu {
        // Of the process's threads: the client, the runtime and (with --otel) the SDK's
        // export threads; not the server's.
        let seq = if conc_only {
            String::new()
        } else {
            format!("\"seq_us_per_call\":{:.2},", per_call(seq_cpu))
        };
        println!(
            "{{\"client\":\"mcp-runtime ({rt})\",\"mode\":\"cpu\",{seq}\"conc_us_per_call\":{:.2}}}",
            per_call(conc_cpu)
        );
    }
    client.stop().await;
}

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let Some(dd) = args.iter().position(|a| a == "--") else {
        eprintln!(
            "usage: mcp_client_bench [-n N] [-c CONC] [--warmup W] [--connects K] [--conc-only] \
             [--seq-only] [--cpu] [--rt multi|current] [--era auto|legacy] [--otel] -- CMD... | URL"
        );
        std::process::exit(2);
    };
    let cmd = args.split_off(dd + 1);
    args.pop();
    let mut plan = Plan {
        n: 10_000,
        conc: 100,
        warmup: 200,
        connects: 0,
        conc_only: false,
        seq_only: false,
        cpu: false,
        era: EraMode::Auto,
        rec: Recording::default(),
    };
    // Kept until the end of the run: dropping it shuts the providers down.
    #[cfg(feature = "otel")]
    let mut sink = None;
    let mut rt = "multi".to_string();
    let mut it = args.into_iter();
    while let Some(a) = it.next() {
        let mut value = || it.next().unwrap_or_default();
        match a.as_str() {
            "-n" => plan.n = value().parse().expect("-n N"),
            "-c" => plan.conc = value().parse().expect("-c CONC"),
            "--warmup" => plan.warmup = value().parse().expect("--warmup W"),
            "--connects" => plan.connects = value().parse().expect("--connects K"),
            "--conc-only" => plan.conc_only = true,
            "--seq-only" => plan.seq_only = true,
            "--cpu" => plan.cpu = true,
            #[cfg(feature = "otel")]
            "--otel" => {
                let s = drop_sink::Sink::new();
                plan.rec.telemetry = Some(s.telemetry());
                sink = Some(s);
            }
            "--rt" => rt = value(),
            "--era" => {
                plan.era = match value().as_str() {
                    "auto" => EraMode::Auto,
                    "legacy" => EraMode::Legacy,
                    other => {
                        eprintln!("--era auto|legacy, not {other}");
                        std::process::exit(2);
                    }
                }
            }
            other => {
                eprintln!("unknown argument {other}");
                std::process::exit(2);
            }
        }
    }
    let runtime = mcp_bench::runtime(&rt);
    runtime.block_on(run(plan, &rt, cmd));
    drop(runtime);
    #[cfg(feature = "otel")]
    if let Some(sink) = sink {
        let (spans, collections) = sink.finish();
        println!(
            "{{\"client\":\"mcp-runtime ({rt})\",\"mode\":\"otel\",\"spans_exported\":{spans},\"metric_collections\":{collections}}}"
        );
    }
}
