//! `mcpc demo`: a guided run against the in-process chaos test server, and a group of two
//! test servers as child processes (step 7, [`crate::group::demo`]).
//!
//! Every connection (and every reconnect) gets a fresh `mcp_testserver` behind a
//! `tokio::io::duplex` pipe, so nothing needs installing. The client→server direction goes
//! through a small relay that can hold back `notifications/cancelled` (step 5): the test
//! server honours cancellations, so without that it would never send the late answer the
//! step is about. A real server may well miss a cancel (it is advisory, and races the answer).

use std::io::IsTerminal;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use mcp_runtime::transport::StreamConnector;
use mcp_runtime::{Client, ClientBuilder, ConnState, Error, RequestOptions, Transition};
use mcp_testserver::ServerConfig;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::broadcast;
use tokio::time::Instant;

use crate::capture;
use crate::error::{CliError, Exit};
use crate::output::capabilities_summary;
use crate::progress::{Lines, ProgressView};
use crate::signals::Interrupt;

/// The in-process server's connector; `ignore_cancel` makes the relay drop cancellations.
fn connector(ignore_cancel: Arc<AtomicBool>) -> StreamConnector {
    StreamConnector::from_fn(move || {
        let ignore = Arc::clone(&ignore_cancel);
        async move {
            // client → relay → server, and server → client.
            let (client_w, relay_r) = tokio::io::duplex(1 << 16);
            let (mut relay_w, server_r) = tokio::io::duplex(1 << 16);
            let (server_w, client_r) = tokio::io::duplex(1 << 16);
            tokio::spawn(async move {
                let mut lines = BufReader::new(relay_r).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    if ignore.load(Ordering::SeqCst) && line.contains("\"notifications/cancelled\"")
                    {
                        continue;
                    }
                    let framed = format!("{line}\n");
                    if relay_w.write_all(framed.as_bytes()).await.is_err() {
                        break;
                    }
                }
            });
            let mut config = ServerConfig::chaos();
            config.tasks = true;
            tokio::spawn(mcp_testserver::serve(server_r, server_w, config));
            Ok((client_r, client_w))
        }
    })
}

fn step(n: u32, title: &str, explain: &str) {
    outln!("\n[{n}/7] {title}");
    for line in explain.lines() {
        outln!("      {line}");
    }
}

fn transition_line(t: &Transition, start: Instant) -> String {
    format!(
        "      {:>7}  {:<12} -> {:<12} event {:<18} row {}",
        format!("+{}ms", t.at.saturating_duration_since(start).as_millis()),
        t.from().name(),
        t.to().name(),
        t.event(),
        t.step.row
    )
}

/// Prints transitions as they come until one enters `ready` (or `limit` passes).
async fn print_until_ready(
    transitions: &mut mcp_runtime::Transitions,
    start: Instant,
    limit: Duration,
) -> Result<(), CliError> {
    let deadline = tokio::time::sleep(limit);
    tokio::pin!(deadline);
    loop {
        tokio::select! {
            () = &mut deadline => {
                return Err(CliError::new(
                    Exit::Connect,
                    "demo",
                    format!("not ready after {} s", limit.as_secs()),
                ));
            }
            t = transitions.recv() => match t {
                Some(t) => {
                    outln!("{}", transition_line(&t, start));
                    if t.to() == ConnState::Ready {
                        return Ok(());
                    }
                }
                None => {
                    return Err(CliError::new(Exit::Transport, "demo", "the client stopped"));
                }
            },
        }
    }
}

fn demo_err(what: &str) -> impl Fn(Error) -> CliError + '_ {
    move |e| CliError::call(format!("demo: {what}"), &e)
}

/// A duration for the demo's lines: `1.2 ms`, `240 ms`.
pub(crate) fn ms(d: Duration) -> String {
    if d < Duration::from_millis(10) {
        format!("{:.1} ms", d.as_secs_f64() * 1000.0)
    } else {
        format!("{} ms", d.as_millis())
    }
}

/// Runs the demo; Ctrl-C interrupts it (exit 130).
pub async fn run(interrupt: &Interrupt) -> Result<(), CliError> {
    let ignore_cancel = Arc::new(AtomicBool::new(false));
    let client = ClientBuilder::new(connector(Arc::clone(&ignore_cancel)))
        .client_info("mcpc-demo", env!("CARGO_PKG_VERSION"))
        .request_timeout(Duration::from_secs(10))
        .backoff(Duration::from_millis(200), Duration::from_secs(2), 20)
        .seed(7)
        .tasks(mcp_runtime::TaskOptions::new())
        .connect_lazy();
    let result = tokio::select! {
        biased;
        caught = interrupt.fired() => Err(CliError::signalled("demo", caught)),
        r = steps(&client, &ignore_cancel) => r,
    };
    if result.is_err() {
        crate::connect::finish(&client).await;
    }
    result
}

async fn steps(client: &Client, ignore_cancel: &AtomicBool) -> Result<(), CliError> {
    let begin = Instant::now();
    // Subscribed before the driver task first runs (single-threaded runtime).
    let mut transitions = client.transitions();
    outln!(
        "mcpc demo: a guided run against the in-repo test server, in process (nothing to install)."
    );
    outln!(
        "Each step says what the client does; state changes come live from client.transitions()."
    );

    // 1. Connect.
    step(
        1,
        "Connect",
        "The client opens a transport (here an in-process pipe to a fresh test server) and asks\n\
         which era it speaks (server/discover). This server is a handshake-era one, so the client\n\
         falls back to initialize on the same pipe and is ready once the handshake is done. The\n\
         lifecycle is the table in spec/ (one file per concern): each line is one transition with the\n\
         event and row that fired.",
    );
    let start = Instant::now();
    print_until_ready(&mut transitions, start, Duration::from_secs(10)).await?;
    let info = client
        .server_info()
        .ok_or_else(|| CliError::new(Exit::Connect, "demo: connect", "no server info"))?;
    let era = match client.era() {
        Some(mcp_runtime::Era::Modern) => "modern (stateless)",
        Some(mcp_runtime::Era::Legacy) | None => "legacy (handshake)",
    };
    outln!(
        "      connected in {}: {} {}, protocol {}, era {era}",
        ms(start.elapsed()),
        info.name(),
        info.version(),
        info.protocol_version
    );
    outln!(
        "      capabilities: {}",
        capabilities_summary(&info.capabilities)
    );

    // 2. Tools.
    step(
        2,
        "List tools, call echo and add",
        "tools/list (following pages), then two tools/call requests.",
    );
    let tools = client
        .list_all_tools()
        .await
        .map_err(demo_err("tools/list"))?;
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    outln!("      {} tools: {}", tools.len(), names.join(", "));
    let args = json!({"message": "hello from mcpc"});
    let echo = client
        .call_tool("echo", args.clone())
        .await
        .map_err(demo_err("echo"))?;
    outln!("      echo {args} -> {}", echo.text());
    let args = json!({"a": 2, "b": 3});
    let add = client
        .call_tool("add", args.clone())
        .await
        .map_err(demo_err("add"))?;
    outln!(
        "      add {args} -> {} (structuredContent {})",
        add.text(),
        add.structured_content.clone().unwrap_or(Value::Null)
    );

    // 3. Progress.
    let bar = std::io::stderr().is_terminal();
    step(
        3,
        "A long call with progress, and one that runs as a task",
        &format!(
            "slow {{\"ms\":1500,\"steps\":5}} with a progress token: the server sends\n\
             notifications/progress, which the client routes to this call ({}). Then task_slow,\n\
             which runs only as a task: the server answers with a task id at once, and call_tool\n\
             polls tasks/get (at the server's interval) and fetches tasks/result.",
            if bar {
                "shown as a bar"
            } else {
                "one line each"
            }
        ),
    );
    let (options, mut progress) = RequestOptions::new().progress_channel();
    let mut view = ProgressView::new("    slow", Lines::Stdout);
    let call = client.call_tool_with("slow", json!({"ms": 1500, "steps": 5}), options);
    tokio::pin!(call);
    let slow = loop {
        tokio::select! {
            r = &mut call => break r,
            Some(p) = progress.recv() => view.update(&p),
        }
    };
    while let Ok(p) = progress.try_recv() {
        view.update(&p);
    }
    view.finish();
    let slow = slow.map_err(demo_err("slow"))?;
    outln!(
        "      -> {} ({} progress notifications)",
        slow.text(),
        view.seen()
    );
    let mut view = ProgressView::new("    task_slow", Lines::Stdout);
    let (tx, mut statuses) = tokio::sync::mpsc::unbounded_channel();
    let options = RequestOptions::new().on_task_status(move |s| {
        let _ = tx.send(s.clone());
    });
    let args = json!({"ms": 400, "interval_ms": 100});
    let call = client.call_tool_with("task_slow", args, options);
    tokio::pin!(call);
    let task = loop {
        tokio::select! {
            r = &mut call => break r,
            Some(s) = statuses.recv() => view.task(&s),
        }
    };
    while let Ok(s) = statuses.try_recv() {
        view.task(&s);
    }
    view.finish();
    let task = task.map_err(demo_err("task_slow"))?;
    outln!("      -> {}", task.text());

    // 4. Crash and reconnect.
    step(
        4,
        "The server crashes; the client reconnects by itself",
        "The chaos tool `die` drops the connection without answering. The client answers the\n\
         call with an error, backs off (200 ms here, doubling up to 2 s, ±20 %), starts a fresh\n\
         server and does the handshake again:",
    );
    let crash = Instant::now();
    let died_result = {
        let died = client.call_tool("die", json!({}));
        tokio::pin!(died);
        // Transitions are printed live while the call waits for its answer.
        let mut died_result = None;
        let reconnect = print_until_ready(&mut transitions, crash, Duration::from_secs(10));
        tokio::pin!(reconnect);
        loop {
            tokio::select! {
                r = &mut died, if died_result.is_none() => died_result = Some(r),
                r = &mut reconnect => { r?; break; }
            }
        }
        match died_result {
            Some(r) => r,
            None => died.await,
        }
    };
    match died_result {
        Ok(r) => outln!("      the die call was answered: {}", r.text()),
        Err(e) => outln!("      the die call was answered with an error: {e}"),
    }
    let again = client
        .call_tool("echo", json!({"message": "still here"}))
        .await
        .map_err(demo_err("echo after the reconnect"))?;
    outln!(
        "      reconnected {} after the crash; echo -> {}",
        ms(crash.elapsed()),
        again.text()
    );

    // 5. Timeout, then the late answer.
    step(
        5,
        "A timeout, and the late answer that follows",
        "late {\"ms\":1500} with a 300 ms timeout. On timeout the caller gets the error at once\n\
         and the client sends notifications/cancelled. This server would honour it, so the demo's\n\
         pipe holds the cancel back, like a server that missed it: its answer still arrives.",
    );
    let mut dropped = capture::dropped_responses();
    ignore_cancel.store(true, Ordering::SeqCst);
    let sent = Instant::now();
    let late = client
        .call_tool_with(
            "late",
            json!({"ms": 1500}),
            RequestOptions::new().timeout(Duration::from_millis(300)),
        )
        .await;
    match late {
        Err(e @ Error::Timeout { .. }) => {
            outln!("      after {}: error: {e}", ms(sent.elapsed()))
        }
        Err(e) => return Err(CliError::call("demo: late", &e)),
        Ok(r) => {
            return Err(CliError::new(
                Exit::Transport,
                "demo: late",
                format!("expected a timeout, got an answer: {}", r.text()),
            ));
        }
    }
    outln!("      waiting for the server's answer...");
    let seen = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            match dropped.recv().await {
                Ok(d) => return Some(d),
                Err(broadcast::error::RecvError::Lagged(_)) => {}
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    })
    .await
    .ok()
    .flatten();
    ignore_cancel.store(false, Ordering::SeqCst);
    match seen {
        Some(d) => outln!(
            "      after {}: late answer for id {} dropped (kind \"{}\": its call had already ended;\n      \
             the caller was answered exactly once)",
            ms(sent.elapsed()),
            d.id,
            d.kind
        ),
        None => {
            return Err(CliError::new(
                Exit::Transport,
                "demo: late",
                "the late answer was not reported as dropped within 5 s",
            ));
        }
    }

    // 6. Stop.
    step(
        6,
        "Stop",
        "stop() answers every call in flight, closes the transport and returns quickly even if\n\
         the server hangs.",
    );
    let stopping = Instant::now();
    client.stop().await;
    let stopped = stopping.elapsed();
    while let Some(t) = transitions.try_recv() {
        outln!("{}", transition_line(&t, stopping));
    }
    tokio::time::timeout(Duration::from_secs(5), client.closed())
        .await
        .map_err(|_| {
            CliError::new(
                Exit::Transport,
                "demo: stop",
                "the transport did not close in 5 s",
            )
        })?;
    outln!(
        "      stop() returned in {}; state {}; transport closed after {}",
        ms(stopped),
        client.state(),
        ms(stopping.elapsed())
    );
    let after = client.ping().await;
    outln!(
        "      a call now: {}",
        match after {
            Ok(()) => "answered (unexpected)".to_owned(),
            Err(e) => format!("error: {e}"),
        }
    );

    // 7. A group of two servers, one killed.
    step(
        7,
        "Two servers in a group; one is killed, the other keeps answering",
        "A host's mcpServers configuration (${MCPC} is this binary, run as the test server and as\n\
         the chaos server): ClientGroup starts both at once, each its own client (transport,\n\
         table, backoff); their tools merged, a name both list prefixed with its server. Then\n\
         beta's process is killed (SIGKILL): alpha answers at once while beta backs off and\n\
         comes back by itself; a call to beta made meanwhile waits for its handshake.",
    );
    crate::group::demo::step().await?;
    outln!("\nDone in {:.1} s.", begin.elapsed().as_secs_f64());
    Ok(())
}
