//! The chaos matrix: the in-repo chaos server (a child process over stdio) misbehaves in every
//! way the hardening issue lists, one mode at a time, and for every mode:
//!
//! - every caller (the misbehaving call and two bystander calls sent right after it, or the
//!   first handshake) gets exactly one answer, of the expected kind, within its timeout plus
//!   100 ms;
//! - the peak resident memory of this process grows by less than [`PEAK_GROWTH_BOUND_MIB`]
//!   (the peak is reset before each mode; a 1 GiB stderr flood must not show);
//! - `stop()` returns within 200 ms;
//! - every server process the mode caused (listed by the server's `--pid-file`) is gone and
//!   reaped, and this process has no child left, zombie or not;
//! - no descriptor and no tokio task leaks (`/proc/self/fd` and the runtime's alive tasks
//!   counted before and after);
//! - the client recovers once the server behaves again (a call succeeds, on the same process or
//!   a respawned one; start-up modes misbehave in the first process only, `--once`).
//!
//! Everything runs in one `#[test]`, mode after mode, so that nothing else in this process
//! opens descriptors or spawns children meanwhile. The figures are printed as a table
//! (`cargo test -p mcp-tests --test chaos -- --nocapture`). `MCP_CHAOS_STDERR_BYTES` sets the
//! size of the stderr floods (default 64 MiB; the 1 GiB:
//! `MCP_CHAOS_STDERR_BYTES=1073741824`).

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::time::{Duration, Instant};

use mcp_runtime::transport::StdioConnector;
use mcp_runtime::{Client, ClientBuilder, ConnState, Error, Failure, RequestOptions};
use mcp_tests::chaos::{Outcome, alive_tasks, outcome_of};
use mcp_tests::probe::{self, Memory};
use serde_json::{Value, json};

const CHAOS: &str = env!("CARGO_BIN_EXE_test-chaos-server");

/// The timeout of every call of the matrix (but the stderr and notification floods).
const TIMEOUT: Duration = Duration::from_secs(1);
/// How late past its timeout an answer may come.
const SLACK: Duration = Duration::from_millis(100);
/// `stop()` must return within this.
const STOP_BOUND: Duration = Duration::from_millis(200);
/// The bound on spawning plus the handshake.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// How much the peak resident size may grow during one mode.
const PEAK_GROWTH_BOUND_MIB: u64 = 64;
/// How long the client may take to come back once the server behaves again.
const RECOVERY_BOUND: Duration = Duration::from_secs(15);
/// How long `closed()` (every server process stopped and reaped) may take after stop.
const CLOSED_BOUND: Duration = Duration::from_secs(15);
/// How long the descriptor and task checks wait for the count to settle (a stderr drain
/// ending after a kill).
const SETTLE: Duration = Duration::from_secs(2);
/// Default size of the stderr floods.
const DEFAULT_STDERR_BYTES: u64 = 64 << 20;

fn outcome_of_failure(f: Option<&Failure>) -> Outcome {
    match f {
        Some(Failure::Refused(_)) => Outcome::Refused,
        Some(Failure::UnsupportedVersion { .. }) => Outcome::UnsupportedVersion,
        Some(Failure::InitTimeout { .. }) => Outcome::Timeout,
        Some(_) => Outcome::Lost,
        None => Outcome::Other,
    }
}

/// How the first handshake of a mode must end.
#[derive(Clone, Copy, Debug)]
enum FirstHandshake {
    Ready,
    /// It fails with this (the respawned server then behaves).
    Fails(Outcome),
}

/// What the misbehaving caller does.
#[derive(Clone, Debug)]
enum What {
    Tool(&'static str, Value),
    ListAllTools,
}

/// The misbehaving call of a mode.
#[derive(Clone, Debug)]
struct Probe {
    what: What,
    timeout: Duration,
    expect: &'static [Outcome],
    /// Text an `Ok` answer must contain.
    text: Option<String>,
    /// What the two bystander calls (`echo`, sent right after it) may get.
    bystanders: &'static [Outcome],
}

/// A check of what the client kept, once it recovered.
#[derive(Clone, Copy, Debug)]
enum After {
    /// The second `initialize` result changed nothing.
    SecondInitIgnored,
    /// The requests the server sent before its `initialize` answer were answered, once each.
    EarlyRequestsAnswered,
}

#[derive(Clone, Debug)]
struct Mode {
    name: &'static str,
    /// Server flags (`--pid-file` is added, and `--once` when `once`).
    flags: Vec<String>,
    once: bool,
    handshake: FirstHandshake,
    probe: Option<Probe>,
    after: Option<After>,
}

fn tool(
    name: &'static str,
    tool: &'static str,
    args: Value,
    expect: &'static [Outcome],
    bystanders: &'static [Outcome],
) -> Mode {
    Mode {
        name,
        flags: Vec::new(),
        once: false,
        handshake: FirstHandshake::Ready,
        probe: Some(Probe {
            what: What::Tool(tool, args),
            timeout: TIMEOUT,
            expect,
            text: None,
            bystanders,
        }),
        after: None,
    }
}

fn startup(name: &'static str, flags: &[&str], handshake: FirstHandshake) -> Mode {
    Mode {
        name,
        flags: flags.iter().map(|s| (*s).to_owned()).collect(),
        once: matches!(handshake, FirstHandshake::Fails(_)),
        handshake,
        probe: None,
        after: None,
    }
}

impl Mode {
    fn text(mut self, text: impl Into<String>) -> Self {
        if let Some(p) = self.probe.as_mut() {
            p.text = Some(text.into());
        }
        self
    }

    fn timeout(mut self, timeout: Duration) -> Self {
        if let Some(p) = self.probe.as_mut() {
            p.timeout = timeout;
        }
        self
    }
}

/// Every mode of the list.
fn modes(stderr_bytes: u64) -> Vec<Mode> {
    use Outcome::*;
    vec![
        tool("slow", "slow", json!({"ms": 300}), &[Ok], &[Ok]).text("slept 300 ms"),
        tool(
            "silent",
            "silent",
            json!({"ms": 1500}),
            &[Timeout],
            &[Timeout],
        ),
        tool("dies: exit", "die", json!({}), &[Lost], &[Lost]),
        tool("dies: SIGKILL", "sigkill", json!({}), &[Lost], &[Lost]),
        // The transport reports the loss once the process is gone (close stdin, the grace
        // period, SIGTERM): with the default 2 s grace the callers time out first.
        tool(
            "dies: closes stdout, stays alive",
            "close_stdout",
            json!({}),
            &[Lost, Timeout],
            &[Lost, Timeout],
        ),
        tool(
            "garbage lines",
            "garbage",
            json!({"text": "{not json at all"}),
            &[Ok],
            &[Ok],
        )
        .text("wrote a garbage line"),
        tool(
            "partial line, stall (under the timeout)",
            "partial",
            json!({"ms": 300}),
            &[Ok],
            &[Ok],
        )
        .text("stalled 300 ms"),
        tool(
            "partial line, stall (past the timeout)",
            "partial",
            json!({"ms": 1500}),
            &[Timeout],
            &[Timeout],
        ),
        // Over the default 16 MiB frame limit: the server needs a moment to write it (its
        // call has more time), so the bystanders may time out first.
        tool(
            "line over the limit",
            "oversized",
            json!({"bytes": 17 << 20}),
            &[Lost],
            &[Lost, Timeout],
        )
        .timeout(Duration::from_secs(10)),
        tool(
            "invalid UTF-8 (a notification)",
            "invalid_utf8",
            json!({}),
            &[Ok],
            &[Ok],
        )
        .text("not UTF-8"),
        // The bytes that are not UTF-8 are read as U+FFFD: the caller gets its answer.
        tool(
            "invalid UTF-8 (the answer)",
            "invalid_utf8",
            json!({"in_answer": true}),
            &[Ok],
            &[Ok],
        )
        .text("bad \u{fffd}"),
        Mode {
            flags: vec!["--stderr-flood".into(), stderr_bytes.to_string()],
            ..tool(
                "stderr flood from the start",
                "echo",
                json!({"message": "through the flood"}),
                &[Ok],
                &[Ok],
            )
        }
        .text("Echo: through the flood"),
        tool(
            "stderr flood during a call",
            "stderr_flood",
            json!({"bytes": stderr_bytes}),
            &[Ok],
            &[Ok],
        )
        .timeout(Duration::from_secs(300))
        .text(format!("wrote {stderr_bytes} bytes")),
        // Bystanders are answered after the flood, which may take longer than their timeout.
        tool(
            "notification flood",
            "flood",
            json!({"count": 20_000}),
            &[Ok],
            &[Ok, Timeout],
        )
        .timeout(Duration::from_secs(30)),
        tool("answers twice", "duplicate", json!({}), &[Ok], &[Ok]).text("duplicate"),
        tool("answers unknown ids", "unknown_id", json!({}), &[Ok], &[Ok])
            .text("sent a response with id 987654321"),
        tool(
            "answers after the timeout",
            "late",
            json!({"ms": 1500}),
            &[Timeout],
            &[Ok],
        ),
        Mode {
            after: Some(After::EarlyRequestsAnswered),
            ..startup(
                "server requests during initializing",
                &["--handshake", "early-requests"],
                FirstHandshake::Ready,
            )
        },
        startup(
            "initialize error",
            &["--handshake", "error"],
            FirstHandshake::Fails(Refused),
        ),
        startup(
            "unsupported protocol version",
            &["--version-override", "1999-01-01"],
            FirstHandshake::Fails(UnsupportedVersion),
        ),
        Mode {
            after: Some(After::SecondInitIgnored),
            ..startup(
                "second initialize result",
                &["--handshake", "twice"],
                FirstHandshake::Ready,
            )
        },
        Mode {
            probe: Some(Probe {
                what: What::ListAllTools,
                timeout: TIMEOUT,
                expect: &[Endless],
                text: None,
                bystanders: &[Ok],
            }),
            ..startup(
                "endless cursors",
                &["--endless-cursor"],
                FirstHandshake::Ready,
            )
        },
        tool("lone surrogates", "surrogate", json!({}), &[Ok], &[Ok])
            .text("lone \u{fffd} surrogate"),
    ]
}

/// One caller's answer and how long it took.
#[derive(Debug)]
struct Answer {
    who: &'static str,
    outcome: Outcome,
    took: Duration,
    bound: Duration,
    detail: String,
}

/// What one mode did, and what went wrong.
#[derive(Debug, Default)]
struct Report {
    name: String,
    answers: Vec<Answer>,
    recovered_in: Option<Duration>,
    same_process: Option<bool>,
    stop: Duration,
    closed: Duration,
    rss_start_kib: u64,
    peak_kib: u64,
    fds: (usize, usize),
    tasks: (usize, usize),
    servers: usize,
    failures: Vec<String>,
}

impl Report {
    fn check(&mut self, ok: bool, what: impl FnOnce() -> String) {
        if !ok {
            self.failures.push(what());
        }
    }

    fn row(&self) -> String {
        let answers: Vec<String> = self
            .answers
            .iter()
            .map(|a| format!("{} {:?} {} ms", a.who, a.outcome, a.took.as_millis()))
            .collect();
        format!(
            "{:<42} | {:<60} | recovered {:>5} ms ({}) | stop {:>3} ms | closed {:>5} ms | peak +{:>3} MiB | fds {}/{} | tasks {}/{} | servers {}",
            self.name,
            answers.join(", "),
            self.recovered_in
                .map_or("-".into(), |d| d.as_millis().to_string()),
            match self.same_process {
                Some(true) => "same",
                Some(false) => "respawned",
                None => "-",
            },
            self.stop.as_millis(),
            self.closed.as_millis(),
            self.peak_kib.saturating_sub(self.rss_start_kib) / 1024,
            self.fds.0,
            self.fds.1,
            self.tasks.0,
            self.tasks.1,
            self.servers,
        )
    }
}

/// Polls `f` until it holds or [`SETTLE`] passes; whether it held.
async fn settles(mut f: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    loop {
        if f() {
            return true;
        }
        if start.elapsed() > SETTLE {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn builder(flags: &[String]) -> ClientBuilder {
    let connector = StdioConnector::builder(CHAOS).args(flags).build();
    ClientBuilder::new(connector)
        .seed(7)
        .connect_timeout(CONNECT_TIMEOUT)
        .init_timeout(CONNECT_TIMEOUT)
        .request_timeout(TIMEOUT)
        .backoff(Duration::from_millis(100), Duration::from_millis(400), 0)
}

type Boxed<'a> = Pin<Box<dyn Future<Output = (Result<String, Error>, Duration)> + Send + 'a>>;

/// The call, timed from its first poll (when it is sent) to its answer.
fn timed<'a>(fut: impl Future<Output = Result<String, Error>> + Send + 'a) -> Boxed<'a> {
    Box::pin(async move {
        let start = Instant::now();
        let r = fut.await;
        (r, start.elapsed())
    })
}

fn echo<'a>(client: &'a Client, message: &'static str) -> Boxed<'a> {
    timed(async move {
        client
            .call_tool_with(
                "echo",
                json!({"message": message}),
                RequestOptions::new().timeout(TIMEOUT),
            )
            .await
            .map(|r| r.text())
    })
}

fn probe_call<'a>(client: &'a Client, probe: &Probe) -> Boxed<'a> {
    let timeout = probe.timeout;
    match probe.what.clone() {
        What::Tool(name, args) => timed(async move {
            client
                .call_tool_with(name, args, RequestOptions::new().timeout(timeout))
                .await
                .map(|r| r.text())
        }),
        What::ListAllTools => timed(async move {
            client
                .list_all_tools()
                .await
                .map(|t| format!("{} tools", t.len()))
        }),
    }
}

async fn pid_of(client: &Client) -> Option<u64> {
    let r = client
        .call_tool_with(
            "session_info",
            json!({}),
            RequestOptions::new().timeout(TIMEOUT),
        )
        .await
        .ok()?;
    r.structured_content?["pid"].as_u64()
}

/// Waits for the next transition into `Ready` or `Backoff`; which one.
async fn handshake_end(
    transitions: &mut mcp_runtime::Transitions,
    bound: Duration,
) -> Option<ConnState> {
    tokio::time::timeout(bound, async {
        while let Some(t) = transitions.recv().await {
            if matches!(t.to(), ConnState::Ready | ConnState::Backoff) {
                return Some(t.to());
            }
        }
        None
    })
    .await
    .ok()
    .flatten()
}

async fn run_mode(mode: &Mode, dir: &Path, n: usize) -> Report {
    let mut report = Report {
        name: mode.name.to_owned(),
        ..Report::default()
    };
    let fds_before = probe::open_fds();
    let targets_before = probe::fd_targets();
    let tasks_before = alive_tasks();
    probe::reset_peak();
    report.rss_start_kib = Memory::now().rss_kib;

    let pid_file = dir.join(format!("pids-{n}"));
    let mut flags = mode.flags.clone();
    flags.extend(["--pid-file".into(), pid_file.display().to_string()]);
    if mode.once {
        flags.extend([
            "--once".into(),
            dir.join(format!("once-{n}")).display().to_string(),
        ]);
    }
    // Every transition from the first one: the first handshake cannot be missed.
    let builder = builder(&flags);
    let mut transitions = builder.transitions();
    let client = builder.connect_lazy();

    // The first handshake is a caller too: bounded by the connect timeout.
    let started = Instant::now();
    let first = handshake_end(&mut transitions, CONNECT_TIMEOUT + SLACK * 5).await;
    let took = started.elapsed();
    let (outcome, detail) = match first {
        Some(ConnState::Ready) => (Outcome::Ok, "ready".to_owned()),
        Some(_) => {
            let e = client.last_error();
            (outcome_of_failure(e.as_ref()), format!("{e:?}"))
        }
        None => (
            Outcome::Other,
            format!("no end of the handshake, {}", client.state()),
        ),
    };
    let expected = match mode.handshake {
        FirstHandshake::Ready => Outcome::Ok,
        FirstHandshake::Fails(o) => o,
    };
    report.check(outcome == expected, || {
        format!("handshake: {outcome:?} ({detail}), expected {expected:?}")
    });
    report.answers.push(Answer {
        who: "handshake",
        outcome,
        took,
        bound: CONNECT_TIMEOUT + SLACK,
        detail,
    });
    if first == Some(ConnState::Backoff) {
        let again = handshake_end(&mut transitions, RECOVERY_BOUND).await;
        report.check(again == Some(ConnState::Ready), || {
            format!("no ready after the failed handshake: {again:?}")
        });
    }

    let pid_before = pid_of(&client).await;
    let chaos_end = if let Some(probe) = &mode.probe {
        let (chaos, by1, by2) = tokio::join!(
            probe_call(&client, probe),
            echo(&client, "bystander 1"),
            echo(&client, "bystander 2"),
        );
        let end = Instant::now();
        for (who, (result, took), bound, allowed) in [
            ("call", chaos, probe.timeout + SLACK, probe.expect),
            ("by1", by1, TIMEOUT + SLACK, probe.bystanders),
            ("by2", by2, TIMEOUT + SLACK, probe.bystanders),
        ] {
            let outcome = outcome_of(&result);
            let detail = match &result {
                Ok(text) => text.chars().take(80).collect(),
                Err(e) => e.to_string(),
            };
            report.check(allowed.contains(&outcome), || {
                format!("{who}: {outcome:?} ({detail}), expected one of {allowed:?}")
            });
            // Each answer reaches the caller that asked (a duplicate or a stray id goes to
            // nobody else).
            let want = match who {
                "call" => probe.text.clone(),
                "by1" => Some("Echo: bystander 1".to_owned()),
                _ => Some("Echo: bystander 2".to_owned()),
            };
            if let (Ok(text), Some(want)) = (&result, want) {
                report.check(text.contains(want.as_str()), || {
                    format!("{who}: answer {text:?} lacks {want:?}")
                });
            }
            report.answers.push(Answer {
                who,
                outcome,
                took,
                bound,
                detail,
            });
        }
        end
    } else {
        Instant::now()
    };

    // Recovery: a call succeeds once the server behaves again.
    loop {
        let (r, _) = echo(&client, "recovered").await;
        if r.is_ok() {
            report.recovered_in = Some(chaos_end.elapsed());
            break;
        }
        if chaos_end.elapsed() > RECOVERY_BOUND {
            report.check(false, || {
                format!("no recovery within {RECOVERY_BOUND:?}: {r:?}")
            });
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let pid_after = pid_of(&client).await;
    report.same_process = match (pid_before, pid_after) {
        (Some(a), Some(b)) => Some(a == b),
        _ => None,
    };
    match mode.after {
        Some(After::SecondInitIgnored) => {
            let info = client.server_info();
            let name = info.as_ref().map(|i| i.name().to_owned());
            let version = info.as_ref().map(|i| i.protocol_version.clone());
            report.check(
                name.as_deref() == Some("mcp-chaos-server")
                    && version.as_deref() == Some(mcp_testserver::LATEST_PROTOCOL_VERSION),
                || format!("the second initialize result changed the session: {info:?}"),
            );
        }
        Some(After::EarlyRequestsAnswered) => {
            let s = mcp_tests::session_info(&client).await;
            let mut answered: Vec<String> = s["unknownResponses"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .map(|v| v.as_str().unwrap_or("?").to_owned())
                        .collect()
                })
                .unwrap_or_default();
            answered.sort();
            report.check(
                answered == ["early-1", "early-2", "early-3", "early-4"],
                || format!("early requests answered: {answered:?}"),
            );
        }
        None => {}
    }

    // Stop, then the leak checks.
    let t = Instant::now();
    client.stop().await;
    report.stop = t.elapsed();
    let t = Instant::now();
    let closed = tokio::time::timeout(CLOSED_BOUND, client.closed()).await;
    report.closed = t.elapsed();
    report.check(closed.is_ok(), || {
        format!("closed() not within {CLOSED_BOUND:?}")
    });
    drop(client);
    drop(transitions);

    let servers = probe::pids_in(&pid_file);
    report.servers = servers.len();
    report.check(!servers.is_empty(), || "no server pid recorded".into());
    // `closed()` promises every child reaped: nothing may be left at this point, not even a
    // zombie.
    let gone = servers.iter().all(|p| probe::state_of(*p).is_none());
    report.check(gone, || {
        let left: Vec<(u32, Option<char>)> =
            servers.iter().map(|p| (*p, probe::state_of(*p))).collect();
        format!("server processes left (pid, state; Z = zombie): {left:?}")
    });
    let no_children = probe::children().is_empty();
    report.check(no_children, || {
        format!("children left: {:?}", probe::children())
    });
    let fds_ok = settles(|| probe::open_fds() == fds_before).await;
    report.fds = (fds_before, probe::open_fds());
    report.check(fds_ok, || {
        let now = probe::fd_targets();
        let new: Vec<&String> = now.iter().filter(|t| !targets_before.contains(t)).collect();
        format!(
            "descriptors {fds_before} before, {} after; new: {new:?}",
            now.len()
        )
    });
    let tasks_ok = settles(|| alive_tasks() == tasks_before).await;
    report.tasks = (tasks_before, alive_tasks());
    report.check(tasks_ok, || {
        format!("tokio tasks {tasks_before} before, {} after", alive_tasks())
    });
    report.peak_kib = Memory::now().peak_kib;

    // The timing bounds, last, so that every figure is in the report.
    for a in &report.answers {
        if a.took > a.bound {
            report.failures.push(format!(
                "{}: answered after {:?}, past its bound {:?} ({:?}: {})",
                a.who, a.took, a.bound, a.outcome, a.detail
            ));
        }
    }
    let stop = report.stop;
    report.check(stop <= STOP_BOUND, || {
        format!("stop took {stop:?} (bound {STOP_BOUND:?})")
    });
    let growth_mib = report.peak_kib.saturating_sub(report.rss_start_kib) / 1024;
    report.check(growth_mib < PEAK_GROWTH_BOUND_MIB, || {
        format!("peak resident size grew by {growth_mib} MiB (bound {PEAK_GROWTH_BOUND_MIB} MiB)")
    });
    report
}

/// A scratch directory for pid files and `--once` markers, removed at the end.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

async fn matrix() -> Vec<Report> {
    let stderr_bytes = std::env::var("MCP_CHAOS_STDERR_BYTES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_STDERR_BYTES);
    let scratch = Scratch(std::env::temp_dir().join(format!("mcp-chaos-{}", std::process::id())));
    std::fs::create_dir_all(&scratch.0).expect("scratch directory");
    // Warm up what the process creates once (the child-process signal pipe, worker threads).
    let warm = builder(&[])
        .connect()
        .await
        .expect("the chaos server starts");
    warm.stop().await;
    warm.closed().await;
    drop(warm);
    // Its last tasks (the stderr forwarder's drain, the driver's monitor) end just after.
    assert!(
        settles(|| alive_tasks() == 0).await,
        "tasks left after the warm-up: {}",
        alive_tasks()
    );

    let only = std::env::var("MCP_CHAOS_ONLY").ok();
    let mut reports = Vec::new();
    for (n, mode) in modes(stderr_bytes).iter().enumerate() {
        if only.as_deref().is_some_and(|o| !mode.name.contains(o)) {
            continue;
        }
        reports.push(run_mode(mode, &scratch.0, n).await);
    }
    reports
}

#[test]
fn chaos_matrix_over_stdio() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let started = Instant::now();
    let reports = runtime.block_on(matrix());
    runtime.shutdown_timeout(Duration::from_secs(5));
    let peak = Memory::now();
    let mut out = String::new();
    for r in &reports {
        out.push_str(&r.row());
        out.push('\n');
    }
    out.push_str(&format!(
        "{} modes in {:.1} s; process RSS now {} MiB, peak since the last reset {} MiB\n",
        reports.len(),
        started.elapsed().as_secs_f64(),
        peak.rss_kib / 1024,
        peak.peak_kib / 1024
    ));
    let failures: Vec<String> = reports
        .iter()
        .flat_map(|r| r.failures.iter().map(move |f| format!("{}: {f}", r.name)))
        .collect();
    eprintln!("{out}");
    assert!(
        failures.is_empty(),
        "chaos matrix failures:\n{}",
        failures.join("\n")
    );
}
