//! rmcp 3.11 (the official Rust SDK) benchmark client, for `scripts/bench`: like
//! shared/peers/rmcp-bench's `rmcp_client` (same command line and output, which this client's
//! own benchmark shares), plus Streamable HTTP (`-- http://HOST:PORT/mcp`, rmcp's reqwest
//! client) and the connect time (`--connects K`: the median of K connects, spawn or connect
//! plus the handshake, to ready). Built by scripts/bench inside target/rmcp-bench, against the
//! rmcp-bench manifest; not part of this workspace.
use std::sync::{
    Arc,
    atomic::{AtomicUsize, Ordering},
};
use std::time::Instant;

use rmcp::{
    RoleClient, ServiceExt,
    model::CallToolRequestParams,
    service::RunningService,
    transport::{ConfigureCommandExt, StreamableHttpClientTransport, TokioChildProcess},
};

fn pct(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    let i = ((v.len() as f64 * p) as usize).min(v.len().saturating_sub(1));
    v.get(i).copied().unwrap_or(0.0)
}

fn params(i: usize) -> CallToolRequestParams {
    let mut args = serde_json::Map::new();
    args.insert("message".into(), serde_json::Value::String(format!("m{i}")));
    CallToolRequestParams::new("echo").with_arguments(args)
}

fn report(label: &str, rt: &str, n: usize, conc: usize, secs: f64, mut lat: Vec<f64>) {
    println!(
        "{{\"client\":\"rust-rmcp 3.11 ({rt})\",\"mode\":\"{label}\",\"n\":{n},\"conc\":{conc},\"secs\":{secs:.3},\"rps\":{:.1},\"p50_us\":{:.1},\"p99_us\":{:.1}}}",
        n as f64 / secs,
        pct(&mut lat, 0.5) * 1e6,
        pct(&mut lat, 0.99) * 1e6
    );
}

async fn connect(cmd: &[String]) -> anyhow::Result<RunningService<RoleClient, ()>> {
    if cmd[0].starts_with("http://") || cmd[0].starts_with("https://") {
        let transport = StreamableHttpClientTransport::from_uri(cmd[0].clone());
        Ok(().serve(transport).await?)
    } else {
        let transport =
            TokioChildProcess::new(tokio::process::Command::new(&cmd[0]).configure(|c| {
                c.args(&cmd[1..]);
            }))?;
        Ok(().serve(transport).await?)
    }
}

async fn run(
    n: usize,
    conc: usize,
    warmup: usize,
    connects: usize,
    rt: &str,
    cmd: Vec<String>,
) -> anyhow::Result<()> {
    let mut times = Vec::new();
    for _ in 0..connects {
        let t = Instant::now();
        let client = connect(&cmd).await?;
        times.push(t.elapsed().as_secs_f64());
        client.cancel().await?;
    }
    if connects > 0 {
        println!(
            "{{\"client\":\"rust-rmcp 3.11 ({rt})\",\"mode\":\"connect\",\"n\":{connects},\"p50_us\":{:.1}}}",
            pct(&mut times, 0.5) * 1e6
        );
    }
    let client = connect(&cmd).await?;
    let peer = client.peer().clone();
    for i in 0..warmup {
        peer.call_tool(params(i)).await?;
    }
    let mut lat = Vec::with_capacity(n);
    let t0 = Instant::now();
    for i in 0..n {
        let t = Instant::now();
        let r = peer.call_tool(params(i)).await?;
        lat.push(t.elapsed().as_secs_f64());
        assert!(r.is_error != Some(true));
    }
    report("seq", rt, n, 1, t0.elapsed().as_secs_f64(), lat);
    let next = Arc::new(AtomicUsize::new(0));
    let t0 = Instant::now();
    let mut set = tokio::task::JoinSet::new();
    for _ in 0..conc {
        let peer = peer.clone();
        let next = next.clone();
        set.spawn(async move {
            let mut lat = Vec::new();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n {
                    break;
                }
                let t = Instant::now();
                peer.call_tool(params(i)).await.expect("call");
                lat.push(t.elapsed().as_secs_f64());
            }
            lat
        });
    }
    let mut lat = Vec::with_capacity(n);
    while let Some(r) = set.join_next().await {
        lat.extend(r?);
    }
    report("conc", rt, n, conc, t0.elapsed().as_secs_f64(), lat);
    client.cancel().await?;
    Ok(())
}

fn main() -> anyhow::Result<()> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let (mut n, mut conc, mut warmup, mut connects, mut rt) =
        (10000usize, 100usize, 200usize, 0usize, "multi".to_string());
    let dd = args.iter().position(|a| a == "--").expect("need -- CMD");
    let cmd = args.split_off(dd + 1);
    args.pop();
    let mut it = args.into_iter();
    while let Some(a) = it.next() {
        let mut value = || it.next().unwrap_or_default();
        match a.as_str() {
            "-n" => n = value().parse()?,
            "-c" => conc = value().parse()?,
            "--warmup" => warmup = value().parse()?,
            "--connects" => connects = value().parse()?,
            "--rt" => rt = value(),
            o => anyhow::bail!("unknown arg {o}"),
        }
    }
    let runtime = if rt == "current" {
        tokio::runtime::Builder::new_current_thread().enable_all().build()?
    } else {
        tokio::runtime::Builder::new_multi_thread().enable_all().build()?
    };
    runtime.block_on(run(n, conc, warmup, connects, &rt, cmd))
}
