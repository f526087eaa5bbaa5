//! Echo benchmark of this client, with the same command line and output as the rmcp
//! benchmark client in shared/peers/rmcp-bench, so both run side by side against one server:
//! `mcp_client_bench [-n N] [-c CONC] [--warmup W] [--connects K] [--rt multi|current]
//! [--era auto|legacy] -- SERVER CMD` (stdio), or `-- http://HOST:PORT/mcp` (Streamable HTTP).
//! `--era legacy` skips the 2026-07-28 probe (`server/discover`) before `initialize`: the
//! connect time without its round trip.
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

fn report(label: &str, rt: &str, n: usize, conc: usize, secs: f64, lat: Vec<f64>) {
    mcp_bench::report(&format!("mcp-runtime ({rt})"), label, n, conc, secs, lat);
}

async fn echo(client: &Client, i: usize) {
    let r = client
        .call_tool("echo", json!({"message": format!("m{i}")}))
        .await
        .expect("echo call");
    assert!(!r.failed());
}

fn builder(cmd: &[String], era: EraMode) -> ClientBuilder {
    let builder = if cmd[0].starts_with("http://") || cmd[0].starts_with("https://") {
        ClientBuilder::streamable_http(&cmd[0]).expect("an HTTP URL")
    } else {
        ClientBuilder::stdio(&cmd[0], &cmd[1..])
    };
    builder
        .request_timeout(Duration::from_secs(60))
        .send_queue(4096)
        .era(era)
}

/// What to run: calls, calls in flight, warm-up calls, connects, and whether to skip the
/// sequential run.
struct Plan {
    n: usize,
    conc: usize,
    warmup: usize,
    connects: usize,
    conc_only: bool,
    era: EraMode,
}

async fn run(plan: Plan, rt: &str, cmd: Vec<String>) {
    let Plan {
        n,
        conc,
        warmup,
        connects,
        conc_only,
        era,
    } = plan;
    let mut times = Vec::with_capacity(connects);
    for _ in 0..connects {
        let t = Instant::now();
        let client = builder(&cmd, era).connect().await.expect("connect");
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
    let client = builder(&cmd, era).connect().await.expect("connect");
    for i in 0..warmup {
        echo(&client, i).await;
    }
    // `--conc-only` (for a profile of the concurrent run alone): no sequential calls.
    let seq_n = if conc_only { 0 } else { n };
    let mut lat = Vec::with_capacity(n);
    let (allocs0, bytes0) = allocated();
    let t0 = Instant::now();
    for i in 0..seq_n {
        let t = Instant::now();
        echo(&client, i).await;
        lat.push(t.elapsed().as_secs_f64());
    }
    let secs = t0.elapsed().as_secs_f64();
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
    let shared = client.clone();
    let (secs, lat) = mcp_bench::concurrent(n, conc, move |i| {
        let client = shared.clone();
        async move { echo(&client, i).await }
    })
    .await;
    report("conc", rt, n, conc, secs, lat);
    client.stop().await;
}

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let Some(dd) = args.iter().position(|a| a == "--") else {
        eprintln!(
            "usage: mcp_client_bench [-n N] [-c CONC] [--warmup W] [--connects K] [--conc-only] \
             [--rt multi|current] [--era auto|legacy] -- CMD... | URL"
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
        era: EraMode::Auto,
    };
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
}
