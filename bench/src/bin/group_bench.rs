//! Group benchmark: N stdio servers (the same server command each) started as one
//! `ClientGroup` beside N single connects, a call through the group's router beside the same
//! call on its `Client`, and the client-side memory a group holds per idle server.
//!
//! For each of `--rounds` rounds (alternating, so the machine's noise falls on both):
//! - single: N connects one after another (spawn + handshake to ready, then `tools/list`),
//!   each client stopped and reaped before the next; the slowest and the median;
//! - group: `ClientGroup::builder().start()` of the N servers (all at once; it returns once
//!   each first attempt ended and each ready server's lists were fetched once);
//! - router: `--calls` sequential `echo` calls through `group.call_tool(merged name)` and
//!   the same number on that server's `Client` directly, interleaved in blocks of 100;
//! - memory: the heap the group holds per idle server once started (client side only: the
//!   servers are other processes), exact with `--features count-allocs` (a counting
//!   allocator), else the resident set's growth (coarse).
//!
//! `group_bench [-n N] [--rounds R] [--calls C] -- SERVER CMD...`
//! Prints one JSON line per round and a summary line.

use std::time::{Duration, Instant};

use mcp_runtime::{ClientBuilder, ClientGroup};
use serde_json::json;

#[cfg(feature = "count-allocs")]
#[global_allocator]
static GLOBAL: &stats_alloc::StatsAlloc<std::alloc::System> = &stats_alloc::INSTRUMENTED_SYSTEM;

/// Heap bytes held now: the counting allocator's figure with the `count-allocs` feature (the
/// client's own heap, exact), else the process's resident set (pages, coarse: the allocator
/// keeps freed pages).
fn held_bytes() -> u64 {
    #[cfg(feature = "count-allocs")]
    {
        let s = GLOBAL.stats();
        let held =
            s.bytes_allocated as i64 - s.bytes_deallocated as i64 + s.bytes_reallocated as i64;
        u64::try_from(held).unwrap_or(0)
    }
    #[cfg(not(feature = "count-allocs"))]
    {
        rss_bytes()
    }
}

#[cfg(not(feature = "count-allocs"))]
fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn builder(cmd: &[String]) -> ClientBuilder {
    ClientBuilder::stdio(&cmd[0], cmd[1..].iter().cloned()).client_info("group-bench", "1")
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let split = args.iter().position(|a| a == "--").expect("-- SERVER CMD");
    let (opts, cmd) = (&args[..split], args[split + 1..].to_vec());
    let get = |name: &str, default: usize| {
        opts.iter()
            .position(|a| a == name)
            .and_then(|i| opts.get(i + 1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let (n, rounds, calls) = (get("-n", 20), get("--rounds", 5), get("--calls", 2000));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async move {
        let (mut ratios_start, mut ratios_call, mut per_server) = (vec![], vec![], vec![]);
        for round in 0..rounds {
            // N single connects, one after another.
            let mut single = Vec::with_capacity(n);
            for _ in 0..n {
                let t = Instant::now();
                let client = builder(&cmd).connect().await.expect("connect");
                client.list_all_tools().await.expect("tools/list");
                single.push(t.elapsed().as_secs_f64() * 1e6);
                client.stop().await;
                client.closed().await;
            }
            let slowest = single.iter().copied().fold(0.0, f64::max);
            let single_median = median(&mut single.clone());

            // The group of N.
            let before = held_bytes();
            let t = Instant::now();
            let mut group = ClientGroup::builder();
            for i in 0..n {
                group = group.server(format!("s{i}"), builder(&cmd));
            }
            let group = group.start().await.expect("group start");
            let group_us = t.elapsed().as_secs_f64() * 1e6;
            let ready = group.snapshot().servers.iter().filter(|s| s.state == mcp_runtime::ConnState::Ready).count();
            assert_eq!(ready, n, "every server ready");
            tokio::time::sleep(Duration::from_millis(200)).await;
            let idle = held_bytes().saturating_sub(before);

            // Router vs direct, interleaved in blocks of 100.
            let client = group.client("s0").expect("s0");
            let merged = "s0__echo";
            assert!(group.view().tool(merged).is_some(), "collisions prefix every echo");
            let (mut routed, mut direct) = (Duration::ZERO, Duration::ZERO);
            for _ in 0..calls / 100 {
                let t = Instant::now();
                for _ in 0..100 {
                    group.call_tool(merged, json!({"message": "x"})).await.expect("routed");
                }
                routed += t.elapsed();
                let t = Instant::now();
                for _ in 0..100 {
                    client.call_tool("echo", json!({"message": "x"})).await.expect("direct");
                }
                direct += t.elapsed();
            }
            group.stop().await;
            let routed_us = routed.as_secs_f64() * 1e6 / calls as f64;
            let direct_us = direct.as_secs_f64() * 1e6 / calls as f64;
            println!(
                "{{\"round\":{round},\"servers\":{n},\"single_slowest_us\":{slowest:.0},\"single_median_us\":{single_median:.0},\"group_start_us\":{group_us:.0},\"start_ratio\":{:.3},\"routed_call_us\":{routed_us:.1},\"direct_call_us\":{direct_us:.1},\"call_ratio\":{:.3},\"idle_bytes_per_server\":{}}}",
                group_us / slowest,
                routed_us / direct_us,
                idle / n as u64,
            );
            ratios_start.push(group_us / slowest);
            ratios_call.push(routed_us / direct_us);
            per_server.push((idle / n as u64) as f64);
        }
        println!(
            "{{\"summary\":true,\"servers\":{n},\"rounds\":{rounds},\"median_start_ratio\":{:.3},\"median_call_ratio\":{:.3},\"median_idle_bytes_per_server\":{:.0}}}",
            median(&mut ratios_start),
            median(&mut ratios_call),
            median(&mut per_server),
        );
    });
}
