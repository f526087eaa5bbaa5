//! Drives a real MCP server over stdio or HTTP through the client library and checks what it sees.
//!
//! `interop everything -- node .../mcp-server-everything stdio` exercises every tool of
//! server-everything, the sampling, elicitation and roots round trips, progress, logging,
//! resources, prompts and completion. `interop python -- python server.py` exercises a server
//! built on the official Python SDK. Instead of a command, a URL: `http(s)://…` is an HTTP server
//! (Streamable HTTP, or the legacy HTTP+SSE transport found by the fallback), `sse+http(s)://…`
//! a server of the legacy HTTP+SSE transport only. Prints one line per check and exits 1 if
//! any failed.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use mcp_runtime::{
    Client, ClientBuilder, CompleteRef, CreateMessageResult, ElicitParams, ElicitResult, Handlers,
    LoggingLevel, RequestOptions, Root, Roots, ServerNotification, TaskState,
};
use serde_json::{Map, Value, json};

struct Report {
    failures: usize,
}

impl Report {
    fn check(&mut self, what: &str, ok: bool, detail: impl std::fmt::Display) {
        if ok {
            println!("ok   {what}");
        } else {
            self.failures += 1;
            println!("FAIL {what}: {detail}");
        }
    }
}

/// Arguments for a tool from its input schema: every required property gets a plain value of
/// its type (the first enum value, the default, or a small literal).
fn arguments_for(schema: &Value) -> Value {
    let mut args = Map::new();
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if let Some(props) = schema["properties"].as_object() {
        for (name, p) in props {
            if !required.contains(&name.as_str()) {
                continue;
            }
            let v = if let Some(d) = p.get("default") {
                d.clone()
            } else if let Some(e) = p["enum"].as_array().and_then(|e| e.first()) {
                e.clone()
            } else if let Some(c) = p["oneOf"].as_array().and_then(|o| o.first()?.get("const")) {
                c.clone()
            } else {
                match p["type"].as_str() {
                    Some("number" | "integer") => json!(1),
                    Some("boolean") => json!(false),
                    Some("array") => json!([]),
                    Some("object") => json!({}),
                    _ if name.contains("uri") || name.contains("url") => {
                        json!("https://example.com")
                    }
                    _ => json!("test"),
                }
            };
            args.insert(name.clone(), v);
        }
    }
    Value::Object(args)
}

fn handlers(elicited: Arc<AtomicUsize>, sampled: Arc<AtomicUsize>) -> Handlers {
    Handlers::new()
        .roots(Roots::new([Root::new("file:///tmp").named("tmp")]))
        .sampling(move |_p, _cx| {
            sampled.fetch_add(1, Ordering::SeqCst);
            async move { Ok(CreateMessageResult::text("interop", "interop sample")) }
        })
        .elicitation(move |p, _cx| {
            elicited.fetch_add(1, Ordering::SeqCst);
            async move {
                let ElicitParams::Form(form) = p else {
                    return Ok(ElicitResult::accept_url());
                };
                // Accept the form with each property's default, or a plain value of its type.
                let properties = &form.requested_schema["properties"];
                let content = arguments_for(&json!({
                    "properties": properties,
                    "required": properties.as_object()
                        .map(|o| o.keys().cloned().collect::<Vec<_>>()).unwrap_or_default(),
                }));
                Ok(ElicitResult::accept(match content {
                    Value::Object(map) => map,
                    _ => Default::default(),
                }))
            }
        })
        .with_url_elicitation()
}

async fn everything(
    client: &Client,
    r: &mut Report,
    elicited: &AtomicUsize,
    sampled: &AtomicUsize,
) {
    let tools = client.list_all_tools().await.unwrap_or_default();
    r.check(
        &format!(
            "tools/list gives {} tools (sampling, elicitation, roots declared)",
            tools.len()
        ),
        tools.len() >= 17,
        "expected at least 17",
    );
    let mut notes = client.notifications();
    for tool in &tools {
        if tool.name == "toggle-simulated-logging" {
            continue; // exercised below, with logging/setLevel
        }
        let mut args = arguments_for(&tool.input_schema);
        let mut options = RequestOptions::new().timeout(Duration::from_secs(30));
        let mut progress = None;
        match tool.name.as_str() {
            "trigger-long-running-operation" => {
                args = json!({"duration": 1, "steps": 3});
                let (o, rx) = options.progress_channel();
                options = o;
                progress = Some(rx);
            }
            "get-sum" => args = json!({"a": 2, "b": 3}),
            "echo" => args = json!({"message": "interop"}),
            "trigger-sampling-request" => args = json!({"prompt": "hi", "maxTokens": 10}),
            "trigger-url-elicitation" => {
                args =
                    json!({"url": "https://example.com", "message": "go", "elicitationId": "e1"});
            }
            _ => {}
        }
        let outcome = client.call_tool_with(&tool.name, args, options).await;
        // A tool may answer with a tool error or a JSON-RPC error (e.g. one that needs a task):
        // what matters is exactly one answer, and a sane one for the tools we know.
        let (ok, detail) = match (&outcome, tool.name.as_str()) {
            (Ok(res), "echo") => (res.text().contains("interop"), res.text()),
            (Ok(res), "get-sum") => (res.text().contains('5'), res.text()),
            (Ok(res), "trigger-long-running-operation") => {
                let mut n = 0;
                if let Some(rx) = progress.as_mut() {
                    while rx.try_recv().is_ok() {
                        n += 1;
                    }
                }
                (
                    !res.failed() && n == 3,
                    format!("{n} progress notifications"),
                )
            }
            (Ok(res), "trigger-sampling-request") => {
                (res.text().contains("interop sample"), res.text())
            }
            (Ok(res), "get-roots-list") => (res.text().contains("file:///tmp"), res.text()),
            // The server asks the client to run the request as a task, polls it and fetches
            // its result ("[SYNC]" would mean the client answered it plainly).
            (Ok(res), "trigger-sampling-request-async" | "trigger-elicitation-request-async") => (
                !res.failed() && res.text().contains("[COMPLETED]"),
                res.text(),
            ),
            // It runs only as a task: polled to its end inside call_tool.
            (Ok(res), "simulate-research-query") => (
                !res.failed() && res.text().contains("Research Report"),
                res.text().lines().next().unwrap_or_default().to_owned(),
            ),
            (Ok(res), _) => (true, res.text()),
            (Err(mcp_runtime::Error::Server { .. }), _) => (true, format!("{outcome:?}")),
            (Err(e), _) => (false, e.to_string()),
        };
        r.check(&format!("tools/call {}", tool.name), ok, detail);
    }
    r.check(
        "sampling round trip reached the handler",
        sampled.load(Ordering::SeqCst) >= 1,
        "no sampling request",
    );
    r.check(
        "elicitation round trips reached the handler",
        elicited.load(Ordering::SeqCst) >= 2,
        "fewer than 2 elicitations",
    );

    // A task that needs input: the server's elicitation comes while `tasks/result` waits.
    if tools.iter().any(|t| t.name == "simulate-research-query") {
        let before = elicited.load(Ordering::SeqCst);
        let statuses = Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = Arc::clone(&statuses);
        let options = RequestOptions::new()
            .timeout(Duration::from_secs(30))
            .on_task_status(move |s| sink.lock().unwrap_or_else(|e| e.into_inner()).push(s.state));
        let args = json!({"topic": "python", "ambiguous": true});
        let outcome = client
            .call_tool_with("simulate-research-query", args, options)
            .await;
        let seen = statuses.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let asked = elicited.load(Ordering::SeqCst) - before;
        r.check(
            "a task with input (simulate-research-query ambiguous=true): its elicitation reaches the handler, the task completes",
            outcome
                .as_ref()
                .is_ok_and(|x| !x.failed() && x.text().contains("Research Report"))
                && asked == 1
                && seen.contains(&TaskState::InputRequired)
                && seen.contains(&TaskState::Completed),
            format!("{asked} elicitations, statuses {seen:?}, {outcome:?}"),
        );
    }

    let level = client.set_logging_level(LoggingLevel::Debug).await;
    r.check("logging/setLevel", level.is_ok(), format!("{level:?}"));
    let toggled = client
        .call_tool("toggle-simulated-logging", json!({}))
        .await;
    r.check(
        "toggle-simulated-logging on",
        toggled.is_ok(),
        format!("{toggled:?}"),
    );
    let got_log = tokio::time::timeout(Duration::from_secs(12), async {
        loop {
            match notes.recv().await {
                Some(n) if matches!(n.parsed, ServerNotification::Log { .. }) => return true,
                Some(_) => {}
                None => return false,
            }
        }
    })
    .await
    .unwrap_or(false);
    r.check(
        "a logging notification arrives after logging/setLevel",
        got_log,
        "none within 12 s",
    );
    let _ = client
        .call_tool("toggle-simulated-logging", json!({}))
        .await;

    let resources = client.list_all_resources().await.unwrap_or_default();
    r.check("resources/list", !resources.is_empty(), "empty");
    if let Some(first) = resources.first() {
        let read = client.read_resource(&first.uri).await;
        r.check(
            "resources/read",
            read.as_ref().is_ok_and(|x| !x.contents.is_empty()),
            format!("{read:?}"),
        );
        let sub = client.subscribe(&first.uri).await;
        r.check("resources/subscribe", sub.is_ok(), format!("{sub:?}"));
        let unsub = client.unsubscribe(&first.uri).await;
        r.check("resources/unsubscribe", unsub.is_ok(), format!("{unsub:?}"));
    }
    let templates = client.list_resource_templates(None).await;
    r.check(
        "resources/templates/list",
        templates
            .as_ref()
            .is_ok_and(|t| !t.resource_templates.is_empty()),
        format!("{templates:?}"),
    );
    let prompts = client
        .list_prompts(None)
        .await
        .map(|p| p.prompts)
        .unwrap_or_default();
    r.check("prompts/list", !prompts.is_empty(), "empty");
    let simple = client.get_prompt("simple-prompt", json!({})).await;
    r.check(
        "prompts/get simple-prompt",
        simple.as_ref().is_ok_and(|p| !p.messages.is_empty()),
        format!("{simple:?}"),
    );
    if let Some(p) = prompts.iter().find(|p| p.name == "completable-prompt")
        && let Some(arg) = p.arguments.first()
    {
        let done = client
            .complete(CompleteRef::Prompt(p.name.clone()), &arg.name, "")
            .await;
        r.check("completion/complete", done.is_ok(), format!("{done:?}"));
    }
    let ping = client.ping().await;
    r.check("ping", ping.is_ok(), format!("{ping:?}"));
}

/// A 2026-07-28 server of another implementation with the tasks extension
/// (`scripts/fastmcp_tasks_server.py`, FastMCP with `fastmcp-tasks`): a task completed, one
/// that asks for input (through `inputRequests` and `tasks/update`), one cancelled, and a tool
/// the server may run as a task.
async fn fastmcp_tasks(client: &Client, r: &mut Report, elicited: &AtomicUsize) {
    let wait = Duration::from_secs(60);
    let statuses = Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = Arc::clone(&statuses);
    let options = RequestOptions::new()
        .timeout(wait)
        .on_task_status(move |s| {
            sink.lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(s.clone())
        });
    let slow = client
        .call_tool_with("slow", json!({"ms": 300}), options)
        .await;
    let seen = statuses.lock().unwrap_or_else(|e| e.into_inner()).clone();
    r.check(
        "tools/call slow runs as a task, polled to its result",
        slow.as_ref().is_ok_and(|x| x.text() == "slept 300 ms")
            && seen.first().is_some_and(|s| s.state == TaskState::Working)
            && seen.last().is_some_and(|s| s.state == TaskState::Completed),
        format!("{slow:?}, statuses {seen:?}"),
    );
    let quick = client.call_tool("quick", json!({"x": 4})).await;
    r.check(
        "tools/call quick (the server decides) answers 8",
        quick.as_ref().is_ok_and(|x| x.text() == "8"),
        format!("{quick:?}"),
    );
    let before = elicited.load(Ordering::SeqCst);
    let ask = client
        .call_tool("ask", json!({"question": "your name?"}))
        .await;
    let asked = elicited.load(Ordering::SeqCst) - before;
    r.check(
        "a task that asks for input: the handler answers once, tasks/update carries it",
        ask.as_ref().is_ok_and(|x| x.text().starts_with("accept")) && asked == 1,
        format!("{asked} elicitations, {ask:?}"),
    );
    let statuses = Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = Arc::clone(&statuses);
    let options = RequestOptions::new().on_task_status(move |s| {
        sink.lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(s.clone())
    });
    let call = client.call_tool_with("forever", json!({}), options);
    let created = async {
        loop {
            if let Some(s) = statuses.lock().unwrap_or_else(|e| e.into_inner()).first() {
                return s.task_id.clone();
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    let id = tokio::select! {
        answered = call => {
            r.check("forever never answers", false, format!("{answered:?}"));
            return;
        }
        id = tokio::time::timeout(wait, created) => id.unwrap_or_default(),
    };
    // The call was dropped: the client sent tasks/cancel; the server ends the task.
    let mut status = String::new();
    for _ in 0..100 {
        let got = client
            .request("tasks/get", Some(json!({"taskId": id})))
            .await;
        status = got
            .ok()
            .and_then(|v| v.get("status").and_then(Value::as_str).map(str::to_owned))
            .unwrap_or_default();
        if status == "cancelled" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    r.check(
        "a task whose caller gives up is cancelled on the server",
        status == "cancelled",
        format!("task {id:?}: {status:?}"),
    );
}

async fn python(client: &Client, r: &mut Report) {
    let tools = client.list_all_tools().await.unwrap_or_default();
    r.check(
        "tools/list (python)",
        tools.iter().any(|t| t.name == "echo"),
        format!("{tools:?}"),
    );
    let echo = client
        .call_tool("echo", json!({"message": "from rust"}))
        .await;
    r.check(
        "tools/call echo (python)",
        echo.as_ref().is_ok_and(|x| x.text().contains("from rust")),
        format!("{echo:?}"),
    );
    let slow = client
        .call_tool_with(
            "slow",
            json!({"ms": 2000}),
            RequestOptions::new().timeout(Duration::from_millis(300)),
        )
        .await;
    r.check(
        "timeout on a slow python tool",
        matches!(slow, Err(mcp_runtime::Error::Timeout { .. })),
        format!("{slow:?}"),
    );
    let after = client
        .call_tool("echo", json!({"message": "still here"}))
        .await;
    r.check(
        "next call after a timeout (python)",
        after.is_ok(),
        format!("{after:?}"),
    );
    let ping = client.ping().await;
    r.check("ping (python)", ping.is_ok(), format!("{ping:?}"));
    if client.era() == Some(mcp_runtime::Era::Modern) {
        python_listen(client, r).await;
    }
}

/// `subscriptions/listen` against the Python SDK's `ListenHandler` (2026-07-28): the listen
/// ready opens is acknowledged, a list change and a resource update published by a tool reach
/// the client through it, and a subscribe and an unsubscribe are answered.
async fn python_listen(client: &Client, r: &mut Report) {
    const URI: &str = "py://note";
    const WAIT: Duration = Duration::from_secs(10);
    let mut status = client.watch_listen_status();
    let covered = tokio::time::timeout(WAIT, async {
        loop {
            {
                let s = status.borrow_and_update();
                if s.wanted.tools && s.wanted.is_subset(&s.covered) {
                    return;
                }
            }
            if status.changed().await.is_err() {
                std::future::pending::<()>().await;
            }
        }
    })
    .await;
    r.check(
        "listen acknowledged for the list changes (python)",
        covered.is_ok(),
        format!("{:?}", client.listen_status()),
    );
    let mut feed = client.notifications();
    let changed = client.call_tool("change_tools", json!({})).await;
    let got = heard(&mut feed, WAIT, |n| {
        matches!(n, ServerNotification::ToolsListChanged)
    })
    .await;
    r.check(
        "tools list change through the listen (python)",
        changed.is_ok() && got,
        format!("{changed:?}, heard: {got}"),
    );
    let subscribed = client.subscribe(URI).await;
    // The status is published by the driver right after the answer, from another task: read
    // it once it is there (within 2 s), not the instant the answer arrives.
    let mut status = client.watch_listen_status();
    let covered = tokio::time::timeout(
        Duration::from_secs(2),
        status.wait_for(|s| s.covered.uris.contains(URI)),
    )
    .await
    .is_ok_and(|r| r.is_ok());
    r.check(
        "subscribe answered by the acknowledgement (python)",
        subscribed.is_ok() && covered,
        format!("{subscribed:?}, {:?}", client.listen_status()),
    );
    let touched = client.call_tool("touch", json!({"uri": URI})).await;
    let got = heard(
        &mut feed,
        WAIT,
        |n| matches!(n, ServerNotification::ResourceUpdated { uri } if uri == URI),
    )
    .await;
    r.check(
        "resource update through the listen (python)",
        touched.is_ok() && got,
        format!("{touched:?}, heard: {got}"),
    );
    let unsubscribed = client.unsubscribe(URI).await;
    r.check(
        "unsubscribe (python)",
        unsubscribed.is_ok() && !client.listen_status().wanted.uris.contains(URI),
        format!("{unsubscribed:?}, {:?}", client.listen_status()),
    );
}

/// Whether a notification matching `want` arrives on `feed` within `wait`.
async fn heard(
    feed: &mut mcp_runtime::Notifications,
    wait: Duration,
    want: impl Fn(&ServerNotification) -> bool,
) -> bool {
    tokio::time::timeout(wait, async {
        while let Some(n) = feed.recv().await {
            if want(&n.parsed) {
                return true;
            }
        }
        false
    })
    .await
    .unwrap_or(false)
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (kind, cmd) = match args.iter().position(|a| a == "--") {
        Some(i) if i == 1 && args.len() > 2 => (args[0].clone(), args[2..].to_vec()),
        _ => {
            eprintln!(
                "usage: interop everything|python|fastmcp-tasks -- COMMAND [ARGS...] | URL | sse+URL"
            );
            std::process::exit(2);
        }
    };
    let elicited = Arc::new(AtomicUsize::new(0));
    let sampled = Arc::new(AtomicUsize::new(0));
    // Everything the driver feeds its machine is recorded, and replayed at the end: what the
    // runtime did against a real server must be a behaviour of the machine (trace validation).
    let recorder = mcp_runtime::trace::TraceRecorder::new();
    // A URL is an HTTP server (Streamable HTTP, falling back to the legacy HTTP+SSE transport
    // by itself); `sse+http://…` forces the legacy transport; anything else is a command to
    // spawn over stdio.
    let http = |url: &str, legacy: bool| {
        let builder = if legacy {
            ClientBuilder::sse(url)
        } else {
            ClientBuilder::http(url)
        };
        builder.unwrap_or_else(|e| {
            println!("FAIL connect: {e}");
            std::process::exit(1);
        })
    };
    let builder = if let Some(url) = cmd[0].strip_prefix("sse+") {
        http(url, true)
    } else if cmd[0].starts_with("http://") || cmd[0].starts_with("https://") {
        http(&cmd[0], false)
    } else {
        ClientBuilder::stdio(&cmd[0], &cmd[1..])
    };
    let client = builder
        .record_trace(recorder.clone())
        .client_info("mcp-interop", "0.1.0")
        .handler(handlers(Arc::clone(&elicited), Arc::clone(&sampled)))
        .init_timeout(Duration::from_secs(60))
        .tasks(mcp_runtime::TaskOptions::new().serve_requests(true))
        .connect()
        .await;
    let client = match client {
        Ok(c) => c,
        Err(e) => {
            println!("FAIL connect: {e}");
            std::process::exit(1);
        }
    };
    let mut report = Report { failures: 0 };
    let info = client.server_info();
    report.check(
        &format!(
            "handshake ({})",
            info.as_ref().map_or("?".into(), |i| format!(
                "{} {} at {}",
                i.name(),
                i.version(),
                i.protocol_version
            ))
        ),
        info.is_some(),
        "no server info",
    );
    match kind.as_str() {
        "everything" => everything(&client, &mut report, &elicited, &sampled).await,
        "python" => python(&client, &mut report).await,
        "fastmcp-tasks" => fastmcp_tasks(&client, &mut report, &elicited).await,
        other => {
            eprintln!("unknown kind {other}");
            std::process::exit(2);
        }
    }
    client.stop().await;
    let reaped = tokio::time::timeout(Duration::from_secs(10), client.closed())
        .await
        .is_ok();
    report.check(
        "stop, and the server process is reaped",
        reaped,
        "not within 10 s",
    );
    let replayed = recorder
        .trace()
        .and_then(|t| mcp_runtime::trace::replay(&t));
    report.check(
        &match &replayed {
            Ok(r) => format!(
                "the run replays on a fresh machine ({} inputs, {} rows fired, {} actions)",
                r.inputs, r.steps, r.actions
            ),
            Err(_) => "the run replays on a fresh machine".to_string(),
        },
        replayed.is_ok(),
        replayed.err().map(|e| e.to_string()).unwrap_or_default(),
    );
    println!("interop {kind}: {} failed", report.failures);
    std::process::exit(i32::from(report.failures > 0));
}
