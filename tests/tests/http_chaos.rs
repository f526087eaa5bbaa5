//! The chaos matrix over HTTP: the in-repo chaos server (a child process serving Streamable HTTP,
//! `--http 127.0.0.1:0`) misbehaves in one HTTP way per mode (`--http-chaos NAME`, see
//! `mcp_testserver::http::Fault`), and for every mode a client built by
//! `ClientBuilder::http(url)` with short timeouts must give:
//!
//! - every caller (three `tools/call echo` and two `ping`, sent together) exactly one answer of
//!   an expected kind (a result or a typed error), within its timeout plus [`MARGIN`] (a tokio
//!   timeout around each call; a call that trips it hangs); each echo answer is its own;
//! - no tokio task and no descriptor left once the client is stopped and dropped (the runtime's
//!   alive tasks and `/proc/self/fd` counted before and after, with [`SETTLE`] to settle; the
//!   server is another process, so only the client is counted);
//! - where the fault hits only the first requests (`--http-chaos-times`), recovery: `ready()`
//!   and then a call succeeds within [`RECOVERY_BOUND`].
//!
//! The modes run one after the other (and the tests of this file one at a time), so that
//! nothing else in this process opens descriptors or spawns tasks meanwhile. The figures (with the largest overshoot of an answer
//! past its timeout) are printed as a table:
//! `cargo test -p mcp-tests --test http_chaos -- --nocapture`; `MCP_HTTP_CHAOS_ONLY=TEXT`
//! runs the modes whose name contains `TEXT`.

use std::future::Future;
use std::io::BufRead;
use std::pin::Pin;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use mcp_runtime::{Client, ClientBuilder, Error, RequestOptions};
use mcp_tests::chaos::{Outcome, alive_tasks, outcome_of};
use mcp_tests::probe;
use serde_json::json;

const CHAOS: &str = env!("CARGO_BIN_EXE_test-chaos-server");

/// The request timeout of every call of the matrix.
const TIMEOUT: Duration = Duration::from_secs(1);
/// How late past its timeout an answer may come before the call counts as hung.
const MARGIN: Duration = Duration::from_secs(1);
/// The bound on the first handshake.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// How long the client may take to come back once the server behaves again.
const RECOVERY_BOUND: Duration = Duration::from_secs(8);
/// How long the descriptor and task counts may take to settle after the client is dropped.
const SETTLE: Duration = Duration::from_secs(2);
/// How long tasks of an earlier mode (a known leak, ended by its server's death) may take to
/// end before the next mode starts.
const LEFTOVER_BOUND: Duration = Duration::from_secs(8);
/// The client's frame limit in the matrix (the oversized faults send twice that).
const FRAME_LIMIT: usize = 1 << 20;
/// How many requests a fault with recovery hits.
const TIMES: &str = "5";

/// How the first handshake of a mode must go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Handshake {
    /// It succeeds within [`CONNECT_TIMEOUT`].
    Required,
    /// It may not (the client does not speak the transport yet): waited for
    /// [`IF_SPOKEN_WAIT`]; if it fails the mode asks no recovery.
    IfSpoken,
}

/// How long a [`Handshake::IfSpoken`] handshake is waited for.
const IF_SPOKEN_WAIT: Duration = Duration::from_millis(500);

/// Which endpoint the client is given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Endpoint {
    /// Streamable HTTP, `/mcp`.
    Mcp,
    /// The legacy HTTP+SSE endpoint, `/sse` (the client does not speak it yet).
    LegacySse,
}

#[derive(Clone, Debug)]
struct Mode {
    name: &'static str,
    /// Server flags besides `--http ADDR`.
    flags: Vec<String>,
    endpoint: Endpoint,
    /// What the callers may get.
    expect: &'static [Outcome],
    /// How the first handshake must go.
    handshake: Handshake,
    /// The client must recover (the fault hits the first requests only, or none).
    recovers: bool,
    /// A call of a chaos tool sent with the others: tool, arguments, what it may get, text an
    /// `Ok` answer must contain.
    probe: Option<Probe>,
}

fn mode(name: &'static str, flags: &[&str], expect: &'static [Outcome]) -> Mode {
    Mode {
        name,
        flags: flags.iter().map(|s| (*s).to_owned()).collect(),
        endpoint: Endpoint::Mcp,
        expect,
        handshake: Handshake::Required,
        recovers: true,
        probe: None,
    }
}

/// A call of a chaos tool.
#[derive(Clone, Debug)]
struct Probe {
    tool: &'static str,
    args: serde_json::Value,
    expect: &'static [Outcome],
    text: &'static str,
    /// Ask for progress: the progress values must be delivered once each, in order, and all
    /// of them (`steps`) when the call succeeds.
    progress: Option<usize>,
}

/// A mode whose server behaves at the HTTP level (but `flags`) and whose chaos is a tool call.
fn tool(name: &'static str, flags: &[&str], probe: Probe, others: &'static [Outcome]) -> Mode {
    Mode {
        probe: Some(probe),
        ..mode(name, flags, others)
    }
}

/// A mode whose fault hits the first [`TIMES`] requests, then the server behaves.
fn fault(name: &'static str, fault: &str, expect: &'static [Outcome]) -> Mode {
    mode(
        name,
        &["--http-chaos", fault, "--http-chaos-times", TIMES],
        expect,
    )
}

/// A mode whose chaos is a server request (`roots/list`, through the `roots` tool).
fn roots(name: &'static str, flags: &[&str]) -> Mode {
    let probe = Probe {
        tool: "roots",
        args: json!({}),
        expect: &[Outcome::Ok],
        // The roots, or the client's error to `roots/list`: it was answered.
        text: "roots",
        progress: None,
    };
    tool(name, flags, probe, &[Outcome::Ok])
}

/// A mode of the legacy HTTP+SSE endpoint (`/sse`) with `fault` hitting the first [`TIMES`]
/// requests. Until the client speaks HTTP+SSE (branch `transport`) its calls fail
/// ([`Outcome::Unavailable`], accepted too) and nothing more is asked; once it does, the
/// handshake succeeds and recovery is checked.
fn legacy(name: &'static str, fault: &[&str], expect: &'static [Outcome]) -> Mode {
    let mut flags = Vec::new();
    if let Some(f) = fault.first() {
        flags = vec!["--http-chaos", f, "--http-chaos-times", TIMES];
    }
    let expect: Vec<Outcome> = expect
        .iter()
        .copied()
        .chain([Outcome::Unavailable])
        .collect();
    Mode {
        endpoint: Endpoint::LegacySse,
        handshake: Handshake::IfSpoken,
        ..mode(name, &flags, expect.leak())
    }
}

fn modes() -> Vec<Mode> {
    use Outcome::*;
    let big = (2 * FRAME_LIMIT).to_string();
    let big_json = format!("big-json:{big}");
    let big_event = format!("big-event:{big}");
    vec![
        mode("well behaved (SSE answers)", &[], &[Ok]),
        mode("well behaved (JSON answers)", &["--json"], &[Ok]),
        fault("slow (under the timeout)", "slow:300", &[Ok]),
        fault("slow (past the timeout)", "slow:1500", &[Timeout]),
        Mode {
            ..fault("never answers", "never", &[Timeout])
        },
        // Until the client resumes with Last-Event-ID the answer is lost with the stream.
        fault(
            "drops the SSE stream (event ids)",
            "drop-stream",
            &[Ok, Lost, Timeout],
        ),
        // Resumption must replay what follows the last event received, not more: progress
        // once each.
        tool(
            "drops the SSE stream after a progress event (ids)",
            &["--http-chaos", "drop-stream:1", "--http-chaos-times", "6"],
            Probe {
                tool: "slow",
                args: json!({"ms": 300, "steps": 3}),
                expect: &[Ok, Lost],
                text: "slept 300 ms in 3 steps",
                progress: Some(3),
            },
            &[Ok, Lost],
        ),
        fault(
            "drops the SSE stream (no event ids)",
            "drop-stream-no-ids",
            &[Lost, Timeout],
        ),
        // SEP-1699 polling: the stream ends after its priming event; until the client resumes
        // with Last-Event-ID the answer does not come.
        fault(
            "ends the SSE stream before the answer (polling)",
            "close-stream",
            &[Ok, Timeout],
        ),
        // A 200 that holds no response fails the call at once (a made-up HTTP_REFUSED answer,
        // as in the 2026-07-28 era), not at its timeout.
        fault("HTML instead of an answer", "html", &[Server]),
        // The session expires at the first request: it and those in flight are lost, the
        // client initializes a new session.
        fault("session expiry (404)", "expire-404", &[Ok, Lost]),
        fault(
            "session expiry (400 unknown session)",
            "expire-400",
            &[Ok, Lost],
        ),
        Mode {
            recovers: true,
            ..mode("GET answered 405", &["--http-chaos", "get-405"], &[Ok])
        },
        fault("503 on POST", "status:503", &[Lost]),
        fault("500 on POST", "status:500", &[Lost]),
        fault("JSON body over the frame limit", &big_json, &[Lost]),
        fault("SSE event over the frame limit", &big_event, &[Lost]),
        fault("garbage SSE (well framed)", "garbage-sse", &[Ok, Lost]),
        fault("broken SSE framing", "broken-sse", &[Ok, Lost]),
        Mode {
            ..fault("SSE stream that never ends", "endless-sse", &[Timeout])
        },
        fault("redirect 307 to another origin", "redirect:307", &[Lost]),
        fault("redirect 308 to another origin", "redirect:308", &[Lost]),
        fault(
            "closes the connection after the headers",
            "close-after-headers",
            &[Lost],
        ),
        // The session's streams are cut (their priming events had ids, no `retry`): a client
        // that resumes after a default wait longer than the timeout (the `transport` branch:
        // 1 s) times out, then finds the session gone (404).
        tool(
            "server dies mid-session (die tool)",
            &[],
            Probe {
                tool: "die",
                args: json!({}),
                expect: &[Lost, Timeout],
                text: "",
                progress: None,
            },
            &[Ok, Lost, Timeout],
        ),
        tool(
            "answers twice (duplicate tool)",
            &[],
            Probe {
                tool: "duplicate",
                args: json!({}),
                expect: &[Ok],
                text: "duplicate",
                progress: None,
            },
            &[Ok],
        ),
        tool(
            "answers an unknown id (unknown_id tool)",
            &[],
            Probe {
                tool: "unknown_id",
                args: json!({}),
                expect: &[Ok],
                text: "sent a response with id 987654321",
                progress: None,
            },
            &[Ok],
        ),
        roots("server request on the GET stream (roots tool)", &[]),
        roots(
            "server request on the POST stream (GET 405, roots tool)",
            &["--http-chaos", "get-405"],
        ),
        tool(
            "notification flood on the SSE answer (flood tool)",
            &["--http-chaos", "get-405"],
            Probe {
                tool: "flood",
                args: json!({"count": 2000}),
                expect: &[Ok],
                text: "sent 2000 notifications",
                progress: None,
            },
            &[Ok],
        ),
        legacy("legacy HTTP+SSE: well behaved", &[], &[Ok]),
        // Every POST of the legacy transport is in order, answered `202` at once by a working
        // server: one answered past the header bound (half the 1 s request timeout here) ends
        // the link, naming it, and the calls behind it are lost rather than held.
        legacy(
            "legacy HTTP+SSE: slow (past the timeout)",
            &["slow:1500"],
            &[Timeout, Lost],
        ),
        legacy("legacy HTTP+SSE: never answers", &["never"], &[Timeout]),
        legacy(
            "legacy HTTP+SSE: drops the stream",
            &["drop-stream"],
            &[Lost, Timeout],
        ),
        legacy("legacy HTTP+SSE: 503 on POST", &["status:503"], &[Lost]),
        legacy(
            "legacy HTTP+SSE: garbage events",
            &["garbage-sse"],
            &[Ok, Lost],
        ),
        legacy(
            "legacy HTTP+SSE: event over the frame limit",
            &[&big_event],
            &[Lost, Timeout],
        ),
    ]
}

/// One caller's answer and how long it took.
#[derive(Debug)]
struct Answer {
    who: &'static str,
    outcome: Outcome,
    took: Duration,
    detail: String,
}

/// What one mode did, and what went wrong.
#[derive(Debug, Default)]
struct Report {
    name: String,
    answers: Vec<Answer>,
    recovered_in: Option<Duration>,
    fds: (usize, usize),
    tasks: (usize, usize),
    /// How long after the client was dropped its tasks were all gone.
    tasks_settled: Option<Duration>,
    /// How long after the client was dropped its descriptors were all closed.
    fds_settled: Option<Duration>,
    failures: Vec<String>,
}

impl Report {
    fn check(&mut self, ok: bool, what: impl FnOnce() -> String) {
        if !ok {
            self.failures.push(what());
        }
    }

    fn overshoot(&self) -> Duration {
        self.answers
            .iter()
            .map(|a| a.took.saturating_sub(TIMEOUT))
            .max()
            .unwrap_or_default()
    }

    fn row(&self) -> String {
        let mut kinds: Vec<String> = Vec::new();
        for a in &self.answers {
            let k = format!("{:?}", a.outcome);
            if !kinds.contains(&k) {
                kinds.push(k);
            }
        }
        format!(
            "{:<56} | {:<22} | max overshoot {:>4} ms | recovered {:>5} | fds {}/{} ({:>5}) | tasks {}/{} ({:>5}) | {}",
            self.name,
            kinds.join(","),
            self.overshoot().as_millis(),
            self.recovered_in
                .map_or("-".into(), |d| format!("{} ms", d.as_millis())),
            self.fds.0,
            self.fds.1,
            ms(self.fds_settled),
            self.tasks.0,
            self.tasks.1,
            ms(self.tasks_settled),
            if self.failures.is_empty() {
                "ok"
            } else {
                "FAILED"
            },
        )
    }
}

fn ms(d: Option<Duration>) -> String {
    d.map_or("never".into(), |d| format!("{} ms", d.as_millis()))
}

/// Polls `f` until it holds or `bound` passes; how long it took.
async fn settle_time(mut f: impl FnMut() -> bool, bound: Duration) -> Option<Duration> {
    let start = Instant::now();
    loop {
        if f() {
            return Some(start.elapsed());
        }
        if start.elapsed() > bound {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Polls until the descriptors and the tasks are back to their counts, or [`SETTLE`] passes;
/// how long each took.
async fn settle_both(fds: usize, tasks: usize) -> (Option<Duration>, Option<Duration>) {
    let start = Instant::now();
    let (mut fds_at, mut tasks_at) = (None, None);
    loop {
        if fds_at.is_none() && probe::open_fds() == fds {
            fds_at = Some(start.elapsed());
        }
        if tasks_at.is_none() && alive_tasks() == tasks {
            tasks_at = Some(start.elapsed());
        }
        if (fds_at.is_some() && tasks_at.is_some()) || start.elapsed() > SETTLE {
            return (fds_at, tasks_at);
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The server child process; killed and reaped when dropped.
struct Server {
    child: Child,
    url: String,
    _stdout: std::process::ChildStdout,
}

impl Server {
    fn start(flags: &[String], endpoint: Endpoint) -> Server {
        let listen = match endpoint {
            Endpoint::Mcp => "--http",
            Endpoint::LegacySse => "--sse",
        };
        let mut child = Command::new(CHAOS)
            .args([listen, "127.0.0.1:0"])
            .args(flags)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("the chaos server starts");
        let stdout = child.stdout.take().expect("stdout");
        let mut reader = std::io::BufReader::new(stdout);
        let mut url = String::new();
        reader
            .read_line(&mut url)
            .expect("the server prints its URL");
        assert!(url.starts_with("http://"), "not a URL: {url:?}");
        Server {
            child,
            url: url.trim().to_owned(),
            _stdout: reader.into_inner(),
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn builder(url: &str) -> ClientBuilder {
    ClientBuilder::http(url)
        .expect("an http URL")
        .seed(7)
        .connect_timeout(CONNECT_TIMEOUT)
        .init_timeout(CONNECT_TIMEOUT)
        .request_timeout(TIMEOUT)
        .max_frame_bytes(FRAME_LIMIT)
        .backoff(Duration::from_millis(50), Duration::from_millis(200), 0)
}

type Boxed<'a> = Pin<Box<dyn Future<Output = (Result<String, Error>, Duration, bool)> + Send + 'a>>;

/// The call, timed from its first poll; `false` if it did not answer within its timeout plus
/// [`MARGIN`].
fn timed<'a>(fut: impl Future<Output = Result<String, Error>> + Send + 'a) -> Boxed<'a> {
    Box::pin(async move {
        let start = Instant::now();
        match tokio::time::timeout(TIMEOUT + MARGIN, fut).await {
            Ok(r) => (r, start.elapsed(), true),
            Err(_) => (Err(Error::Shutdown), start.elapsed(), false),
        }
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

fn ping(client: &Client) -> Boxed<'_> {
    timed(async move { client.ping().await.map(|()| "pong".to_owned()) })
}

/// How a run judges leaks.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Leaks {
    /// Every leak fails.
    Strict,
    /// Every leak fails, and so does a task or descriptor that outlives `closed()` by more
    /// than [`PROMPT`].
    Prompt,
}

/// How soon after `closed()` and drop the client's tasks and descriptors should be gone.
const PROMPT: Duration = Duration::from_millis(200);

/// Runs one mode.
async fn run_mode(mode: &Mode, leaks_are: Leaks) -> Report {
    let mut report = Report {
        name: mode.name.to_owned(),
        ..Report::default()
    };
    // What an earlier mode leaked must be gone first (a known leak ends with its server).
    let leftover = alive_tasks();
    let cleared = settle_time(|| alive_tasks() == 0, LEFTOVER_BOUND).await;
    report.check(cleared.is_some(), || {
        format!("{leftover} tasks of earlier modes still alive after {LEFTOVER_BOUND:?}")
    });
    let server = Server::start(&mode.flags, mode.endpoint);
    // Counted with the server's pipe open: only what the client opens shows.
    let fds_before = probe::open_fds();
    let targets_before = probe::fd_targets();
    let tasks_before = alive_tasks();

    let client = builder(&server.url).connect_lazy();
    let wait = match mode.handshake {
        Handshake::Required => CONNECT_TIMEOUT,
        Handshake::IfSpoken => IF_SPOKEN_WAIT,
    };
    let ready = tokio::time::timeout(wait, client.ready()).await;
    let spoken = matches!(ready, Ok(Ok(())));
    report.check(spoken || mode.handshake == Handshake::IfSpoken, || {
        format!("first handshake: {ready:?}, {}", client.state())
    });

    let client_ref = &client;
    let progress = std::sync::Arc::new(std::sync::Mutex::new(Vec::<f64>::new()));
    let seen = std::sync::Arc::clone(&progress);
    let probe = async {
        match &mode.probe {
            Some(p) => Some(
                timed(async move {
                    let mut options = RequestOptions::new().timeout(TIMEOUT);
                    if p.progress.is_some() {
                        options = options.on_progress(move |pr| {
                            seen.lock()
                                .unwrap_or_else(|e| e.into_inner())
                                .push(pr.progress);
                        });
                    }
                    client_ref
                        .call_tool_with(p.tool, p.args.clone(), options)
                        .await
                        .map(|r| format!("{} {:?}", r.text(), r.structured_content))
                })
                .await,
            ),
            None => None,
        }
    };
    let (c1, c2, c3, p1, p2, chaos) = tokio::join!(
        echo(&client, "call 1"),
        echo(&client, "call 2"),
        echo(&client, "call 3"),
        ping(&client),
        ping(&client),
        probe,
    );
    let chaos_end = Instant::now();
    let calls = [
        ("echo1", c1),
        ("echo2", c2),
        ("echo3", c3),
        ("ping1", p1),
        ("ping2", p2),
    ];
    for (who, (result, took, answered)) in calls.into_iter().chain(chaos.map(|c| ("probe", c))) {
        let expect = match (&mode.probe, who) {
            (Some(p), "probe") => p.expect,
            _ => mode.expect,
        };
        let outcome = if answered {
            outcome_of(&result)
        } else {
            Outcome::Hung
        };
        let detail = match &result {
            Ok(text) => text.chars().take(60).collect(),
            Err(e) => e.to_string().chars().take(160).collect(),
        };
        report.check(answered, || {
            format!("{who}: no answer within {:?}", TIMEOUT + MARGIN)
        });
        report.check(!answered || expect.contains(&outcome), || {
            format!("{who}: {outcome:?} ({detail}), expected one of {expect:?}")
        });
        if let (Ok(text), Some(p), "probe") = (&result, &mode.probe, who) {
            report.check(text.contains(p.text), || {
                format!("probe: answer {text:?} lacks {:?}", p.text)
            });
        }
        if let (
            Some(Probe {
                progress: Some(steps),
                ..
            }),
            "probe",
        ) = (&mode.probe, who)
        {
            let got = progress.lock().unwrap_or_else(|e| e.into_inner()).clone();
            report.check(got.windows(2).all(|w| w[0] < w[1]), || {
                format!("progress delivered out of order or twice: {got:?}")
            });
            report.check(result.is_err() || got.len() == *steps, || {
                format!("progress: {got:?}, expected {steps} steps")
            });
        }
        // Each answer reaches the caller that asked.
        if let (Ok(text), Some(n)) = (&result, who.strip_prefix("echo")) {
            let want = format!("Echo: call {n}");
            report.check(text.contains(&want), || {
                format!("{who}: answer {text:?} is not its own ({want:?})")
            });
        }
        report.answers.push(Answer {
            who,
            outcome,
            took,
            detail,
        });
    }

    if mode.recovers && spoken {
        loop {
            let left = RECOVERY_BOUND.saturating_sub(chaos_end.elapsed());
            let ready = tokio::time::timeout(left, client.ready()).await;
            let (r, _, _) = echo(&client, "call 0").await;
            if matches!(ready, Ok(Ok(()))) && r.is_ok() {
                report.recovered_in = Some(chaos_end.elapsed());
                break;
            }
            if chaos_end.elapsed() > RECOVERY_BOUND {
                report.check(false, || {
                    format!(
                        "no recovery within {RECOVERY_BOUND:?}: ready {ready:?}, call {r:?}, {}",
                        client.state()
                    )
                });
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    let stop = tokio::time::timeout(CONNECT_TIMEOUT, async {
        client.stop().await;
        client.closed().await;
    })
    .await;
    report.check(stop.is_ok(), || {
        format!("stop and closed() not within {CONNECT_TIMEOUT:?}")
    });
    drop(client);
    let (fds_settled, tasks_settled) = settle_both(fds_before, tasks_before).await;
    report.fds = (fds_before, probe::open_fds());
    report.tasks = (tasks_before, alive_tasks());
    report.tasks_settled = tasks_settled;
    report.fds_settled = fds_settled;
    let mut leaks = Vec::new();
    if fds_settled.is_none() {
        let now = probe::fd_targets();
        let new: Vec<&String> = now.iter().filter(|t| !targets_before.contains(t)).collect();
        leaks.push(format!(
            "descriptors {fds_before} before, {} after; new: {new:?}",
            now.len()
        ));
    }
    if tasks_settled.is_none() {
        leaks.push(format!(
            "tokio tasks {tasks_before} before, {} after",
            alive_tasks()
        ));
    }
    if leaks_are == Leaks::Prompt {
        for (what, settled) in [("tasks", tasks_settled), ("descriptors", fds_settled)] {
            if settled.is_some_and(|d| d > PROMPT) {
                leaks.push(format!(
                    "{what} outlived closed() and drop by {} (bound {PROMPT:?})",
                    ms(settled)
                ));
            }
        }
    }
    report.failures.extend(leaks);
    drop(server);
    report
}

async fn warm_up() {
    // Warm up what the process creates once (worker threads, the blocking pool).
    let server = Server::start(&[], Endpoint::Mcp);
    let warm = builder(&server.url)
        .connect()
        .await
        .expect("the HTTP chaos server answers");
    warm.ping().await.expect("ping");
    warm.stop().await;
    warm.closed().await;
    drop(warm);
    assert!(
        settle_time(|| alive_tasks() == 0, LEFTOVER_BOUND)
            .await
            .is_some(),
        "tasks left after the warm-up: {}",
        alive_tasks()
    );
    drop(server);
}

/// Runs the modes `pick` takes (and `MCP_HTTP_CHAOS_ONLY` names), then prints the table and
/// fails on any failure.
fn matrix(pick: impl Fn(&Mode) -> bool, leaks_are: Leaks) {
    // One run at a time: the counts are of the whole process.
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let started = Instant::now();
    let only = std::env::var("MCP_HTTP_CHAOS_ONLY").ok();
    let reports = runtime.block_on(async {
        warm_up().await;
        let mut reports = Vec::new();
        for mode in modes() {
            if !pick(&mode) || only.as_deref().is_some_and(|o| !mode.name.contains(o)) {
                continue;
            }
            reports.push(run_mode(&mode, leaks_are).await);
        }
        reports
    });
    runtime.shutdown_timeout(Duration::from_secs(5));
    let mut out = String::new();
    for r in &reports {
        out.push_str(&r.row());
        out.push('\n');
    }
    out.push_str(&format!(
        "{} modes in {:.1} s\n",
        reports.len(),
        started.elapsed().as_secs_f64()
    ));
    let failures: Vec<String> = reports
        .iter()
        .flat_map(|r| r.failures.iter().map(move |f| format!("{}: {f}", r.name)))
        .collect();
    eprintln!("{out}");
    for r in &reports {
        for a in &r.answers {
            eprintln!(
                "  {:<56} {} {:?} {} ms: {}",
                r.name,
                a.who,
                a.outcome,
                a.took.as_millis(),
                a.detail
            );
        }
    }
    assert!(
        failures.is_empty(),
        "http chaos matrix failures:\n{}",
        failures.join("\n")
    );
}

/// Every mode: answers, bounds, recovery and leaks (requests the server never answers
/// included: the link's tasks die with it).
#[test]
fn chaos_matrix_over_http() {
    matrix(|_| true, Leaks::Strict);
}

/// Once `closed()` returned, the transport is over: no task or descriptor of it stays.
#[test]
fn transport_is_over_when_closed_returns() {
    matrix(|m| m.name.starts_with("well behaved"), Leaks::Prompt);
}
