//! Benchmarks of the MCP client (see `src/bin/mcp_client_bench.rs` and `scripts/bench`): what
//! the benchmark binaries share. Not part of the client.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

/// The `p` quantile of `v` (sorted in place); 0 when empty.
pub fn pct(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    let i = ((v.len() as f64 * p) as usize).min(v.len().saturating_sub(1));
    v.get(i).copied().unwrap_or(0.0)
}

/// Prints one JSON line of a run: `client` did `n` calls with `conc` in flight in `secs`,
/// with these latencies (seconds).
pub fn report(client: &str, mode: &str, n: usize, conc: usize, secs: f64, mut lat: Vec<f64>) {
    println!(
        "{{\"client\":\"{client}\",\"mode\":\"{mode}\",\"n\":{n},\"conc\":{conc},\"secs\":{secs:.3},\"rps\":{:.1},\"p50_us\":{:.1},\"p99_us\":{:.1}}}",
        n as f64 / secs,
        pct(&mut lat, 0.5) * 1e6,
        pct(&mut lat, 0.99) * 1e6
    );
}

/// A tokio runtime: `current` is current_thread, anything else multi_thread.
pub fn runtime(rt: &str) -> tokio::runtime::Runtime {
    if rt == "current" {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
    }
    .expect("tokio runtime")
}

/// Runs calls `0..n` with `conc` workers each taking the next index, and returns the elapsed
/// seconds and every call's latency.
pub async fn concurrent<C, F>(n: usize, conc: usize, call: C) -> (f64, Vec<f64>)
where
    C: Fn(usize) -> F + Clone + Send + 'static,
    F: Future<Output = ()> + Send,
{
    let next = Arc::new(AtomicUsize::new(0));
    let t0 = Instant::now();
    let mut set = tokio::task::JoinSet::new();
    for _ in 0..conc {
        let next = Arc::clone(&next);
        let call = call.clone();
        set.spawn(async move {
            let mut lat = Vec::new();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n {
                    break;
                }
                let t = Instant::now();
                call(i).await;
                lat.push(t.elapsed().as_secs_f64());
            }
            lat
        });
    }
    let mut lat = Vec::with_capacity(n);
    while let Some(r) = set.join_next().await {
        lat.extend(r.expect("worker"));
    }
    (t0.elapsed().as_secs_f64(), lat)
}

/// The command line the raw floors share: `[-n N] [-c CONC] [--warmup W] [--rt current|multi]
/// -- TARGET...` (what follows `--`: a server command, or a URL).
pub struct Options {
    /// Calls per mode.
    pub n: usize,
    /// Calls in flight in the concurrent mode.
    pub conc: usize,
    /// Calls made before the measured ones.
    pub warmup: usize,
    /// The tokio runtime (see [`runtime`]).
    pub rt: String,
    /// Everything after `--`.
    pub target: Vec<String>,
}

impl Options {
    /// Parses the process's arguments; prints `usage` and exits on a missing `--` or an
    /// unknown argument.
    pub fn parse(usage: &str) -> Options {
        let mut args: Vec<String> = std::env::args().skip(1).collect();
        let Some(dd) = args.iter().position(|a| a == "--") else {
            eprintln!("usage: {usage}");
            std::process::exit(2);
        };
        let target = args.split_off(dd + 1);
        args.pop();
        let mut o = Options {
            n: 10_000,
            conc: 100,
            warmup: 200,
            rt: "multi".to_string(),
            target,
        };
        let mut it = args.into_iter();
        while let Some(a) = it.next() {
            let mut value = || it.next().unwrap_or_default();
            match a.as_str() {
                "-n" => o.n = value().parse().expect("-n N"),
                "-c" => o.conc = value().parse().expect("-c CONC"),
                "--warmup" => o.warmup = value().parse().expect("--warmup W"),
                "--rt" => o.rt = value(),
                other => {
                    eprintln!("unknown argument {other}\nusage: {usage}");
                    std::process::exit(2);
                }
            }
        }
        if o.target.is_empty() {
            eprintln!("nothing after --\nusage: {usage}");
            std::process::exit(2);
        }
        o
    }
}
