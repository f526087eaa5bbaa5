//! Scale benchmark: N calls in flight at once against `shuffle_echo_server` (which holds them
//! all, then answers in a random order after random delays). For each N given it prints one
//! JSON line: throughput (N over the time from the first call to the last answer), and, with
//! the `count-allocs` feature, the heap held per call in flight, measured with a counting
//! allocator once the server has read every call (the bytes of the request frames the
//! client keeps for a resend left out, and counted apart). Each N runs twice: with one tokio
//! task per call (the heap counted includes the tasks), then with every call in one
//! `FuturesUnordered` (the heap counted is the client's own: each call's future and what the
//! client keeps for it). Each N runs as many rounds as make `--calls` calls in all (at least
//! one; default 300,000: 300 rounds of 1,000, 3 of 100,000), the sizes' rounds interleaved, so
//! that a round of a few milliseconds is not one sample of this machine's noise; the line
//! gives the median round's throughput (and the slowest and fastest) and the most heap any
//! round held per call.
//!
//! `mcp_scale_bench [--rt current|multi] [--holder tasks|set|both] [--calls M] [-n N]... -- SERVER CMD`

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
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

/// How the calls in flight are held by the caller.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Holder {
    /// One tokio task per call (a `JoinSet`): the heap counted includes each task.
    Tasks,
    /// Every call in one `FuturesUnordered` polled by the bench's task: the heap counted is
    /// the client's own (each call's future and what the client keeps for it) plus the set's
    /// node per future.
    Set,
}

/// One caller: counts itself submitted after its first poll (when the call has reached the
/// driver), then waits for the answer; true when it is the echo. Nothing but the call's own
/// future, the client handle and the counter is kept while it waits.
async fn caller(client: Client, i: usize, submitted: Arc<AtomicUsize>) -> bool {
    let mut call = std::pin::pin!(client.call_tool("echo", json!({"message": message(i)})));
    let mut uncounted = Some(submitted);
    let result = std::future::poll_fn(|cx| {
        let poll = call.as_mut().poll(cx);
        if let Some(submitted) = uncounted.take() {
            submitted.fetch_add(1, Ordering::Release);
        }
        poll
    })
    .await;
    result.is_ok_and(|r| !r.failed())
}

/// What one round measured.
struct Round {
    /// Calls per second, from the first call to the last answer.
    rps: f64,
    /// Heap held per call in flight (0 without the `count-allocs` feature).
    per_call: f64,
}

/// The request frame's length and the sizes of a call's future and of the bench's caller.
fn sizes(client: &Client) -> (usize, usize, usize) {
    // What the client keeps of each call's request: its frame, as the machine writes it (keys
    // sorted). The id is taken with 7 digits: the ids of a run with the default `--calls`
    // have 4 to 7, so this counts up to 3 bytes per call more as frame than there are (the
    // heap excluded is, if anything, under-stated by that much; the allocator rounds it away).
    let frame_len = format!(
        r#"{{"id":{},"jsonrpc":"2.0","method":"tools/call","params":{{"arguments":{{"message":"{}"}},"name":"echo"}}}}"#,
        1_000_000u64,
        message(0)
    )
    .len();
    // The caller's future (never polled: nothing is sent).
    let future_bytes = std::mem::size_of_val(&client.call_tool("echo", json!({})));
    // The bench's caller around it (what each set slot or task holds).
    let caller_bytes = std::mem::size_of_val(&caller(client.clone(), 0, Arc::default()));
    (frame_len, future_bytes, caller_bytes)
}

/// One round of `n` calls in flight.
async fn round(client: &Client, n: usize, holder: Holder) -> Round {
    let before = live_bytes();
    let t0 = Instant::now();
    let submitted = Arc::new(AtomicUsize::new(0));
    let mut tasks = tokio::task::JoinSet::new();
    let mut set = FuturesUnordered::new();
    for i in 0..n {
        let call = caller(client.clone(), i, Arc::clone(&submitted));
        match holder {
            Holder::Tasks => drop(tasks.spawn(call)),
            Holder::Set => set.push(call),
        }
    }
    let mut ok = 0usize;
    while submitted.load(Ordering::Acquire) < n {
        if holder == Holder::Set {
            // Polls the calls not yet polled (the set yields now and then). Unconstrained
            // here and below: a `FuturesUnordered` of many receivers under tokio's
            // cooperative budget polls its futures again and again once the budget is spent
            // (futures-rs #2053): at 100,000 calls on current_thread that made the bench, not
            // the client, the bottleneck (11k against 72k calls/s).
            tokio::task::unconstrained(std::future::poll_fn(|cx| {
                while let std::task::Poll::Ready(Some(echoed)) = set.poll_next_unpin(cx) {
                    ok += usize::from(echoed);
                }
                std::task::Poll::Ready(())
            }))
            .await;
        }
        tokio::task::yield_now().await;
    }
    // Requests go out in order: once this ping is answered, the server holds every call.
    client.ping().await.expect("ping");
    let t_sub = t0.elapsed();
    let held = live_bytes() - before;
    let released = {
        let client = client.clone();
        tokio::spawn(async move { client.call_tool("release", json!({})).await })
    };
    match holder {
        Holder::Tasks => {
            while let Some(r) = tasks.join_next().await {
                ok += usize::from(matches!(r, Ok(true)));
            }
        }
        Holder::Set => {
            while let Some(echoed) = tokio::task::unconstrained(set.next()).await {
                ok += usize::from(echoed);
            }
        }
    }
    released.await.expect("release task").expect("release");
    if std::env::var_os("SCALE_PHASES").is_some() {
        eprintln!("n={n} submit {:?} total {:?}", t_sub, t0.elapsed());
    }
    let secs = t0.elapsed().as_secs_f64();
    assert_eq!(ok, n, "every call answered with its echo");
    Round {
        rps: n as f64 / secs,
        per_call: held as f64 / n as f64,
    }
}

/// Prints the line of `n` calls in flight held by `holder`, from its rounds.
fn report(client: &Client, rt: &str, holder: Holder, n: usize, rounds: &[Round]) {
    let (frame_len, future_bytes, caller_bytes) = sizes(client);
    let mut rps: Vec<f64> = rounds.iter().map(|r| r.rps).collect();
    rps.sort_by(f64::total_cmp);
    let mid = rps.len() / 2;
    let median = if rps.len().is_multiple_of(2) {
        (rps[mid - 1] + rps[mid]) / 2.0
    } else {
        rps[mid]
    };
    let per_call = rounds.iter().map(|r| r.per_call).fold(f64::MIN, f64::max);
    let holder = match holder {
        Holder::Tasks => "tasks",
        Holder::Set => "set",
    };
    println!(
        "{{\"client\":\"mcp-runtime ({rt})\",\"mode\":\"scale\",\"holder\":\"{holder}\",\"n\":{n},\"rounds\":{},\"rps\":{median:.1},\"rps_min\":{:.1},\"rps_max\":{:.1},\"bytes_per_inflight\":{per_call:.0},\"frame_bytes\":{frame_len},\"bytes_per_inflight_frame_excluded\":{:.0},\"future_bytes\":{future_bytes},\"caller_bytes\":{caller_bytes}}}",
        rps.len(),
        rps[0],
        rps[rps.len() - 1],
        per_call - frame_len as f64,
    );
}

async fn run(ns: Vec<usize>, calls: usize, rt: &str, holders: &[Holder], cmd: Vec<String>) {
    let client = ClientBuilder::stdio(&cmd[0], &cmd[1..])
        .request_timeout(Duration::from_secs(300))
        .send_queue(1 << 16)
        .connect()
        .await
        .expect("connect");
    let rounds_of = |n: usize| calls.div_ceil(n.max(1)).max(1);
    let most = ns.iter().map(|&n| rounds_of(n)).max().unwrap_or(1);
    for &holder in holders {
        // Warm the allocator and the runtime once.
        round(
            &client,
            1000.min(ns.iter().copied().min().unwrap_or(1000)),
            holder,
        )
        .await;
        let mut measured: Vec<Vec<Round>> = ns.iter().map(|_| Vec::new()).collect();
        for r in 0..most {
            for (i, &n) in ns.iter().enumerate() {
                if r < rounds_of(n) {
                    measured[i].push(round(&client, n, holder).await);
                }
            }
        }
        for (&n, rounds) in ns.iter().zip(&measured) {
            report(&client, rt, holder, n, rounds);
        }
    }
    client.stop().await;
}

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let Some(dd) = args.iter().position(|a| a == "--") else {
        eprintln!(
            "usage: mcp_scale_bench [--rt current|multi] [--holder tasks|set|both] [--calls M] [-n N]... -- SERVER CMD"
        );
        std::process::exit(2);
    };
    let cmd = args.split_off(dd + 1);
    args.pop();
    let (mut ns, mut rt, mut calls) = (Vec::new(), "current".to_string(), 300_000);
    let mut holders = vec![Holder::Tasks, Holder::Set];
    let mut it = args.into_iter();
    while let Some(a) = it.next() {
        let mut value = || it.next().unwrap_or_default();
        match a.as_str() {
            "-n" => ns.push(value().parse().expect("-n N")),
            "--calls" => calls = value().parse().expect("--calls M"),
            "--rt" => rt = value(),
            "--holder" => {
                holders = match value().as_str() {
                    "tasks" => vec![Holder::Tasks],
                    "set" => vec![Holder::Set],
                    "both" => vec![Holder::Tasks, Holder::Set],
                    other => {
                        eprintln!("--holder tasks|set|both, not {other}");
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
    if ns.is_empty() {
        ns = vec![1_000, 10_000, 100_000];
    }
    let runtime = mcp_bench::runtime(&rt);
    runtime.block_on(run(ns, calls, &rt, &holders, cmd));
}
