//! The soak: many concurrent callers drive `tools/call echo` through one client against the
//! in-repo server over stdio for a fixed time, while the server process is killed (SIGKILL,
//! from outside) every few seconds; then every figure that could show a leak is checked.
//!
//! ```text
//! cargo run --release -p mcp-tests --bin soak -- --seconds 120 --min-calls 1000000
//! ```
//!
//! Flags: `--seconds N` (120), `--kill-every-ms N` (3000), `--callers N` (64),
//! `--min-calls N` (0: none; the run goes on past `--seconds` until that many calls were made,
//! for at most three times `--seconds`, so a loaded machine still reaches the count),
//! `--rss-growth-mib N` (16: the bound on resident memory from the middle of the run to its
//! end). The server is this binary (`soak __serve`), so nothing else needs building.
//!
//! It prints calls, answers by kind, calls per second, the resident size at the start (after
//! 5 s), the middle and the end, the open descriptors, tokio's alive tasks and the child
//! processes before and after. It exits 1 if memory grew past the bound between the middle and
//! the end, if a descriptor, task or child process was left, if a caller was not answered
//! within its timeout + 100 ms, or if fewer calls than `--min-calls` were made.

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use mcp_runtime::transport::StdioConnector;
use mcp_runtime::{Client, ClientBuilder, ConnState, Error, RequestOptions};
use mcp_tests::probe::{self, Memory};
use serde_json::json;

/// Every call's timeout.
const TIMEOUT: Duration = Duration::from_secs(1);
/// How late past its timeout an answer may come.
const SLACK: Duration = Duration::from_millis(100);

/// The command line.
#[derive(Debug, Clone)]
struct Options {
    seconds: u64,
    kill_every: Duration,
    callers: usize,
    min_calls: u64,
    rss_growth_mib: u64,
}

fn parse(args: &[String]) -> Result<Options, String> {
    let mut o = Options {
        seconds: 120,
        kill_every: Duration::from_millis(3000),
        callers: 64,
        min_calls: 0,
        rss_growth_mib: 16,
    };
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let mut value = || -> Result<u64, String> {
            it.next()
                .ok_or(format!("{flag} needs a value"))?
                .parse()
                .map_err(|e| format!("{flag}: {e}"))
        };
        match flag.as_str() {
            "--seconds" => o.seconds = value()?,
            "--kill-every-ms" => o.kill_every = Duration::from_millis(value()?.max(1)),
            "--callers" => o.callers = usize::try_from(value()?.max(1)).unwrap_or(64),
            "--min-calls" => o.min_calls = value()?,
            "--rss-growth-mib" => o.rss_growth_mib = value()?,
            other => return Err(format!("unknown flag {other}")),
        }
    }
    Ok(o)
}

/// Answers by kind.
#[derive(Default)]
struct Counts {
    ok: AtomicU64,
    timeout: AtomicU64,
    lost: AtomicU64,
    unavailable: AtomicU64,
    other: AtomicU64,
    /// Callers answered later than their timeout + 100 ms.
    late: AtomicU64,
    /// The slowest answer, in µs.
    slowest_us: AtomicU64,
}

impl Counts {
    fn record(&self, r: &Result<impl Sized, Error>, took: Duration) {
        let counter = match r {
            Ok(_) => &self.ok,
            Err(Error::Timeout { .. }) => &self.timeout,
            Err(Error::ConnectionLost(_)) => &self.lost,
            Err(Error::Unavailable { .. }) => &self.unavailable,
            Err(_) => &self.other,
        };
        counter.fetch_add(1, Ordering::Relaxed);
        if took > TIMEOUT + SLACK {
            self.late.fetch_add(1, Ordering::Relaxed);
        }
        let us = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
        self.slowest_us.fetch_max(us, Ordering::Relaxed);
    }

    fn total(&self) -> u64 {
        [
            &self.ok,
            &self.timeout,
            &self.lost,
            &self.unavailable,
            &self.other,
        ]
        .iter()
        .map(|c| c.load(Ordering::Relaxed))
        .sum()
    }
}

fn alive_tasks() -> usize {
    tokio::runtime::Handle::current()
        .metrics()
        .num_alive_tasks()
}

async fn settles(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while !f() {
        if start.elapsed() > limit {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    true
}

fn builder() -> std::io::Result<ClientBuilder> {
    let exe = std::env::current_exe()?;
    let connector = StdioConnector::builder(exe).arg("__serve").build();
    Ok(ClientBuilder::new(connector)
        .seed(1)
        .request_timeout(TIMEOUT)
        .connect_timeout(Duration::from_secs(10))
        .init_timeout(Duration::from_secs(10))
        .backoff(Duration::from_millis(50), Duration::from_millis(500), 20))
}

/// One caller: calls until `done`; while the server is away it waits for ready.
async fn caller(client: Client, counts: Arc<Counts>, done: Arc<AtomicBool>) {
    let mut states = client.watch_state();
    while !done.load(Ordering::Relaxed) {
        let started = Instant::now();
        let r = client
            .call_tool_with(
                "echo",
                json!({"message": "soak"}),
                RequestOptions::new().timeout(TIMEOUT),
            )
            .await;
        counts.record(&r, started.elapsed());
        if matches!(r, Err(Error::Unavailable { .. })) {
            let _ = tokio::time::timeout(
                Duration::from_secs(2),
                states.wait_for(|s| *s == ConnState::Ready),
            )
            .await;
        }
    }
}

/// Sends SIGKILL to every live child (the server) every `every` until `done`; how many were
/// killed.
async fn killer(every: Duration, done: Arc<AtomicBool>) -> u64 {
    let mut killed = 0;
    loop {
        tokio::time::sleep(every).await;
        if done.load(Ordering::Relaxed) {
            return killed;
        }
        for child in probe::children() {
            if child.state == 'Z' {
                continue;
            }
            let pid = nix::unistd::Pid::from_raw(i32::try_from(child.pid).unwrap_or(i32::MAX));
            if nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL).is_ok() {
                killed += 1;
            }
        }
    }
}

/// A resident-size sample.
#[derive(Clone, Copy, Debug)]
struct Sample {
    at: Duration,
    rss_kib: u64,
    tasks: usize,
}

async fn soak(o: Options) -> Result<Vec<String>, String> {
    let mut failures = Vec::new();
    // Warm up what the process creates once (the child signal pipe, worker threads).
    let warm = builder()
        .map_err(|e| e.to_string())?
        .connect()
        .await
        .map_err(|e| format!("the server does not start: {e}"))?;
    warm.stop().await;
    warm.closed().await;
    drop(warm);
    settles(Duration::from_secs(2), || alive_tasks() == 0).await;

    let fds_before = probe::open_fds();
    let fd_targets_before = probe::fd_targets();
    let tasks_before = alive_tasks();
    let children_before = probe::children().len();
    let rss_before = Memory::now().rss_kib;

    let client = builder()
        .map_err(|e| e.to_string())?
        .connect()
        .await
        .map_err(|e| format!("the server does not start: {e}"))?;
    let counts = Arc::new(Counts::default());
    let started = Instant::now();
    let planned = Duration::from_secs(o.seconds);
    let done = Arc::new(AtomicBool::new(false));
    let callers: Vec<_> = (0..o.callers)
        .map(|_| {
            tokio::spawn(caller(
                client.clone(),
                Arc::clone(&counts),
                Arc::clone(&done),
            ))
        })
        .collect();
    let killer = tokio::spawn(killer(o.kill_every, Arc::clone(&done)));
    let mut samples = Vec::new();
    loop {
        let elapsed = started.elapsed();
        if (elapsed >= planned && counts.total() >= o.min_calls) || elapsed >= planned * 3 {
            done.store(true, Ordering::Relaxed);
            break;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
        samples.push(Sample {
            at: started.elapsed(),
            rss_kib: Memory::now().rss_kib,
            tasks: alive_tasks(),
        });
        let calls = counts.total();
        let secs = started.elapsed().as_secs();
        if secs.is_multiple_of(10) {
            println!(
                "soak: {secs:>4} s, {calls} calls, RSS {} KiB, {} tasks",
                Memory::now().rss_kib,
                alive_tasks()
            );
        }
    }
    for c in callers {
        c.await.map_err(|e| format!("a caller failed: {e}"))?;
    }
    let elapsed = started.elapsed();
    let killed = killer
        .await
        .map_err(|e| format!("the killer failed: {e}"))?;
    let tasks_during = samples.iter().map(|s| s.tasks).max().unwrap_or(0);

    let t = Instant::now();
    client.stop().await;
    let stop = t.elapsed();
    let closed = tokio::time::timeout(Duration::from_secs(15), client.closed())
        .await
        .is_ok();
    drop(client);
    let children_ok = settles(Duration::from_secs(5), || {
        probe::children().len() == children_before
    })
    .await;
    let fds_ok = settles(Duration::from_secs(5), || probe::open_fds() == fds_before).await;
    let tasks_ok = settles(Duration::from_secs(5), || alive_tasks() == tasks_before).await;
    let fds_after = probe::open_fds();
    let tasks_after = alive_tasks();
    let children_after = probe::children();

    let at = |frac: f64| -> Sample {
        let target = elapsed.mul_f64(frac);
        samples
            .iter()
            .copied()
            .min_by_key(|s| s.at.abs_diff(target))
            .unwrap_or(Sample {
                at: Duration::ZERO,
                rss_kib: 0,
                tasks: 0,
            })
    };
    let start = samples
        .iter()
        .copied()
        .find(|s| s.at >= Duration::from_secs(5))
        .unwrap_or_else(|| at(0.0));
    let mid = at(0.5);
    let end = at(1.0);
    let max_rss = samples.iter().map(|s| s.rss_kib).max().unwrap_or(0);
    let total = counts.total();
    let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
    println!(
        "soak: {} s planned ({:.1} s run), {} callers, server killed every {:?}",
        o.seconds,
        elapsed.as_secs_f64(),
        o.callers,
        o.kill_every
    );
    println!(
        "calls: {total} in {:.1} s = {:.0} calls/s ({:.0} answered ok/s)",
        elapsed.as_secs_f64(),
        total as f64 / elapsed.as_secs_f64(),
        load(&counts.ok) as f64 / elapsed.as_secs_f64()
    );
    println!(
        "answers: ok {}, timeout {}, connection lost {}, unavailable {}, other {}; slowest {} ms; past timeout + 100 ms: {}",
        load(&counts.ok),
        load(&counts.timeout),
        load(&counts.lost),
        load(&counts.unavailable),
        load(&counts.other),
        load(&counts.slowest_us) / 1000,
        load(&counts.late),
    );
    println!("server processes killed: {killed}");
    println!(
        "RSS: before {} KiB; start (5 s) {} KiB, middle ({} s) {} KiB, end ({} s) {} KiB; max {} KiB",
        rss_before,
        start.rss_kib,
        mid.at.as_secs(),
        mid.rss_kib,
        end.at.as_secs(),
        end.rss_kib,
        max_rss
    );
    println!(
        "descriptors: {fds_before} before, {fds_after} after; tokio tasks: {tasks_before} before, at most {tasks_during} during, {tasks_after} after; child processes: {children_before} before, {} after",
        children_after.len()
    );
    println!("stop: {} ms; closed: {closed}", stop.as_millis());

    if end.rss_kib > mid.rss_kib + o.rss_growth_mib * 1024 {
        failures.push(format!(
            "resident memory grew from {} KiB (middle) to {} KiB (end), over {} MiB",
            mid.rss_kib, end.rss_kib, o.rss_growth_mib
        ));
    }
    if !fds_ok {
        let now = probe::fd_targets();
        let new: Vec<&String> = now
            .iter()
            .filter(|t| !fd_targets_before.contains(t))
            .collect();
        failures.push(format!("descriptors leaked: {new:?}"));
    }
    if !tasks_ok {
        failures.push(format!(
            "tasks leaked: {tasks_before} before, {tasks_after} after"
        ));
    }
    if !children_ok {
        failures.push(format!("child processes left: {children_after:?}"));
    }
    if !closed {
        failures.push("closed() did not resolve within 15 s".into());
    }
    if load(&counts.late) > 0 {
        failures.push(format!(
            "{} callers answered past their timeout + 100 ms",
            load(&counts.late)
        ));
    }
    if total < o.min_calls {
        failures.push(format!("{total} calls, fewer than {}", o.min_calls));
    }
    if killed == 0 && o.seconds * 1000 > u64::try_from(o.kill_every.as_millis()).unwrap_or(0) {
        failures.push("the server was never killed".into());
    }
    Ok(failures)
}

/// `soak __serve`: the in-repo echo server on stdio.
fn serve() -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("soak __serve: {e}");
            return ExitCode::FAILURE;
        }
    };
    let ended = runtime.block_on(mcp_testserver::cli::serve_stdio(
        mcp_testserver::ServerConfig::echo(),
    ));
    runtime.shutdown_background();
    ExitCode::from(u8::try_from(mcp_testserver::cli::exit_code(ended)).unwrap_or(1))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("__serve") {
        return serve();
    }
    let options = match parse(&args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("soak: {e}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("soak: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(soak(options));
    runtime.shutdown_timeout(Duration::from_secs(5));
    match result {
        Ok(failures) if failures.is_empty() => {
            println!("soak: OK");
            ExitCode::SUCCESS
        }
        Ok(failures) => {
            for f in failures {
                println!("soak: FAIL {f}");
            }
            ExitCode::FAILURE
        }
        Err(e) => {
            println!("soak: FAIL {e}");
            ExitCode::FAILURE
        }
    }
}
