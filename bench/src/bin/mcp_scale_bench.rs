//! Scale benchmark: N calls in flight at once against `shuffle_echo_server` (which holds them
//! all, then answers in a random order after random delays). For each N given it prints one
//! JSON line: throughput (N over the time from the first call to the last answer), and, with
//! the `count-allocs` feature, the heap held per call in flight, measured with a counting
//! allocator once the server has read every call (the bytes of the request frames the
//! client keeps for a resend left out, and counted apart).
//!
//! `mcp_scale_bench [--rt current|multi] [-n N]... -- SERVER CMD`

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use mcp_runtime::{Client, ClientBuilder};
use serde_json::json;

#[cfg(feature = "count-allocs")]
#[global_allocator]
static GLOBAL: &stats_alloc::StatsAlloc<std::alloc::System> = &stats_alloc::INSTRUMENTED_SYSTEM;

/// Heap bytes held right now (0 without the `count-allocs` feature).
fn live_bytes() -> i64 {
    #[cfg(feature = "count-allocs")]
    {
        let s = GLOBAL.stats();
        s.bytes_allocated as i64 - s.bytes_deallocated as i64 + s.bytes_reallocated as i64
    }
    #[cfg(not(feature = "count-allocs"))]
    {
        0
    }
}

/// The message of call `i`: every frame the same length (so their bytes are known).
fn message(i: usize) -> String {
    format!("m{i:09}")
}

/// One round of `n` calls in flight; printed unless `rt` is `None` (the warm-up).
async fn round(client: &Client, n: usize, rt: Option<&str>) {
    // What the client keeps of each call's request: its frame, as the machine writes it (keys
    // sorted). The id is taken with 7 digits: the ids of these runs have 4 to 6, so this
    // counts up to 3 bytes per call more as frame than there are (the heap excluded is, if
    // anything, under-stated by that much; the allocator rounds it away).
    let frame_len = format!(
        r#"{{"id":{},"jsonrpc":"2.0","method":"tools/call","params":{{"arguments":{{"message":"{}"}},"name":"echo"}}}}"#,
        1_000_000u64,
        message(0)
    )
    .len();
    // The caller's future (never polled: nothing is sent), which its task holds meanwhile.
    let future_bytes = std::mem::size_of_val(&client.call_tool("echo", json!({})));
    let before = live_bytes();
    let t0 = Instant::now();
    let mut set = tokio::task::JoinSet::new();
    let submitted = Arc::new(AtomicUsize::new(0));
    for i in 0..n {
        let client = client.clone();
        let submitted = Arc::clone(&submitted);
        set.spawn(async move {
            let call = client.call_tool("echo", json!({"message": message(i)}));
            let mut call = std::pin::pin!(call);
            // The first poll hands the call to the driver; count it only then.
            let first =
                std::future::poll_fn(|cx| std::task::Poll::Ready(call.as_mut().poll(cx))).await;
            submitted.fetch_add(1, Ordering::Release);
            let result = match first {
                std::task::Poll::Ready(r) => r,
                std::task::Poll::Pending => call.await,
            };
            result.map(|r| !r.failed())
        });
    }
    while submitted.load(Ordering::Acquire) < n {
        tokio::task::yield_now().await;
    }
    // Requests go out in order: once this ping is answered, the server holds every call.
    client.ping().await.expect("ping");
    let held = live_bytes() - before;
    let released = {
        let client = client.clone();
        tokio::spawn(async move { client.call_tool("release", json!({})).await })
    };
    let mut ok = 0usize;
    while let Some(r) = set.join_next().await {
        if matches!(r, Ok(Ok(true))) {
            ok += 1;
        }
    }
    released.await.expect("release task").expect("release");
    let secs = t0.elapsed().as_secs_f64();
    assert_eq!(ok, n, "every call answered with its echo");
    let per_call = held as f64 / n as f64;
    let Some(rt) = rt else { return };
    println!(
        "{{\"client\":\"mcp-runtime ({rt})\",\"mode\":\"scale\",\"n\":{n},\"secs\":{secs:.3},\"rps\":{:.1},\"bytes_per_inflight\":{:.0},\"frame_bytes\":{frame_len},\"bytes_per_inflight_frame_excluded\":{:.0},\"future_bytes\":{future_bytes}}}",
        n as f64 / secs,
        per_call,
        per_call - frame_len as f64,
    );
}

async fn run(ns: Vec<usize>, rt: &str, cmd: Vec<String>) {
    let client = ClientBuilder::stdio(&cmd[0], &cmd[1..])
        .request_timeout(Duration::from_secs(300))
        .send_queue(1 << 16)
        .connect()
        .await
        .expect("connect");
    // Warm the allocator and the runtime once.
    round(
        &client,
        1000.min(ns.iter().copied().min().unwrap_or(1000)),
        None,
    )
    .await;
    for n in ns {
        round(&client, n, Some(rt)).await;
    }
    client.stop().await;
}

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let Some(dd) = args.iter().position(|a| a == "--") else {
        eprintln!("usage: mcp_scale_bench [--rt current|multi] [-n N]... -- SERVER CMD");
        std::process::exit(2);
    };
    let cmd = args.split_off(dd + 1);
    args.pop();
    let (mut ns, mut rt) = (Vec::new(), "current".to_string());
    let mut it = args.into_iter();
    while let Some(a) = it.next() {
        let mut value = || it.next().unwrap_or_default();
        match a.as_str() {
            "-n" => ns.push(value().parse().expect("-n N")),
            "--rt" => rt = value(),
            other => {
                eprintln!("unknown argument {other}");
                std::process::exit(2);
            }
        }
    }
    if ns.is_empty() {
        ns = vec![1_000, 10_000, 100_000];
    }
    let runtime = mcp_bench::runtime(&rt);
    runtime.block_on(run(ns, &rt, cmd));
}
