//! Connecting, and every command that talks to a server.

use mcp_runtime::{
    Client, CompleteRef, Notification, RequestOptions, ServerNotification, TaskSupport,
};
use serde_json::{Map, Value, json};
use tokio::time::Instant;

use crate::args::{
    CallArgs, Command, CompleteArgs, Global, PromptsCommand, ResourcesCommand, TasksCommand,
    ToolsCommand, WatchArgs,
};
use crate::connect::{builder, finish};
use crate::error::{CliError, Exit};
use crate::output::{Table, capabilities_summary, content_text, field, print_json, schema_summary};
use crate::progress::{Lines, ProgressView};
use crate::sanitize::out_exact;
use crate::signals::{Caught, Interrupt};
use crate::typed;

fn call_error(what: &str, step: Option<&str>, e: &mcp_runtime::Error) -> CliError {
    let mut err = CliError::call(what, e);
    if let Some(step) = step {
        err.why = format!("{step}: {}", err.why);
    }
    err
}

pub(crate) fn to_json<T: serde::Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}

/// Runs one command against a connected client.
pub async fn dispatch(
    client: &Client,
    g: &Global,
    command: Command,
    interrupt: &Interrupt,
) -> Result<(), CliError> {
    let what = command.label();
    let fail = |e: mcp_runtime::Error| CliError::call(&what, &e);
    match command {
        Command::Info { server: None } => info(client, g, g.json),
        Command::Tools(ToolsCommand::List) => {
            let tools = client.list_all_tools().await.map_err(fail)?;
            if g.json {
                print_json(&json!({"tools": to_json(&tools)}));
            } else if tools.is_empty() {
                outln!("(no tools)");
            } else {
                // A column says which tools run as tasks, when any does.
                let runs = |tool: &mcp_runtime::types::Tool| match TaskSupport::of(tool) {
                    TaskSupport::Required => "task",
                    TaskSupport::Optional => "task?",
                    _ => "",
                };
                let tasks = tools.iter().any(|t| !runs(t).is_empty());
                let mut t = if tasks {
                    Table::new(&["NAME", "RUNS", "ARGUMENTS", "DESCRIPTION"])
                } else {
                    Table::new(&["NAME", "ARGUMENTS", "DESCRIPTION"])
                };
                for tool in &tools {
                    let mut row = vec![tool.name.clone()];
                    if tasks {
                        row.push(runs(tool).to_owned());
                    }
                    row.push(schema_summary(&tool.input_schema));
                    row.push(tool.description.clone().unwrap_or_default());
                    t.row(row);
                }
                out!("{}", t.render());
            }
            Ok(())
        }
        Command::Tools(ToolsCommand::Call(call)) => tools_call(client, g, call, interrupt).await,
        Command::Resources(ResourcesCommand::List) => {
            let resources = client.list_all_resources().await.map_err(fail)?;
            if g.json {
                print_json(&json!({"resources": to_json(&resources)}));
            } else if resources.is_empty() {
                outln!("(no resources)");
            } else {
                let mut t = Table::new(&["URI", "NAME", "MIME", "DESCRIPTION"]);
                for r in &resources {
                    t.row(vec![
                        r.uri.clone(),
                        r.name.clone(),
                        r.mime_type.clone().unwrap_or_default(),
                        r.description.clone().unwrap_or_default(),
                    ]);
                }
                out!("{}", t.render());
            }
            Ok(())
        }
        Command::Resources(ResourcesCommand::Templates) => {
            // The library's walker: a repeated cursor or too many pages is an error, not a loop.
            let templates = client.list_all_resource_templates().await.map_err(fail)?;
            if g.json {
                print_json(&json!({"resourceTemplates": to_json(&templates)}));
            } else if templates.is_empty() {
                outln!("(no resource templates)");
            } else {
                let mut t = Table::new(&["URI TEMPLATE", "NAME", "MIME", "DESCRIPTION"]);
                for r in &templates {
                    t.row(vec![
                        r.uri_template.clone(),
                        r.name.clone(),
                        r.mime_type.clone().unwrap_or_default(),
                        r.description.clone().unwrap_or_default(),
                    ]);
                }
                out!("{}", t.render());
            }
            Ok(())
        }
        Command::Resources(ResourcesCommand::Read { uri }) => {
            let result = client.read_resource(&uri).await.map_err(fail)?;
            if g.json {
                print_json(&to_json(&result));
                return Ok(());
            }
            let many = result.contents.len() > 1;
            for c in &result.contents {
                if many {
                    outln!("--- {} ({})", c.uri, c.mime_type.as_deref().unwrap_or("?"));
                }
                match (&c.text, &c.blob) {
                    (Some(text), _) => outln!("{text}"),
                    (None, Some(blob)) => outln!(
                        "[blob {} {}, {} bytes base64]",
                        c.uri,
                        c.mime_type.as_deref().unwrap_or(""),
                        blob.len()
                    ),
                    (None, None) => outln!("[empty {}]", c.uri),
                }
            }
            Ok(())
        }
        Command::Prompts(PromptsCommand::List) => {
            // The library's walker: a repeated cursor or too many pages is an error, not a loop.
            let prompts = client.list_all_prompts().await.map_err(fail)?;
            if g.json {
                print_json(&json!({"prompts": to_json(&prompts)}));
            } else if prompts.is_empty() {
                outln!("(no prompts)");
            } else {
                let mut t = Table::new(&["NAME", "ARGUMENTS", "DESCRIPTION"]);
                for p in &prompts {
                    let args: Vec<String> = p
                        .arguments
                        .iter()
                        .map(|a| format!("{}{}", a.name, if a.required { "" } else { "?" }))
                        .collect();
                    t.row(vec![
                        p.name.clone(),
                        args.join(" "),
                        p.description.clone().unwrap_or_default(),
                    ]);
                }
                out!("{}", t.render());
            }
            Ok(())
        }
        Command::Prompts(PromptsCommand::Get { name, pairs }) => {
            let args = typed::string_arguments(&pairs).map_err(|e| CliError::usage(&what, e))?;
            let result = client
                .get_prompt(&name, Value::Object(args))
                .await
                .map_err(fail)?;
            if g.json {
                print_json(&to_json(&result));
                return Ok(());
            }
            if let Some(d) = &result.description {
                outln!("# {d}");
            }
            for m in &result.messages {
                outln!("{}: {}", m.role, content_text(&to_json(&m.content)));
            }
            Ok(())
        }
        Command::Complete(c) => complete(client, g.json, c, &what).await,
        Command::Ping => {
            let start = Instant::now();
            client.ping().await.map_err(fail)?;
            let ms = start.elapsed().as_secs_f64() * 1000.0;
            if g.json {
                print_json(&json!({"ok": true, "ms": (ms * 1000.0).round() / 1000.0}));
            } else {
                let name = client
                    .server_info()
                    .map(|s| s.name().to_owned())
                    .unwrap_or_default();
                outln!("pong from {name} in {ms:.1} ms");
            }
            Ok(())
        }
        Command::Watch(w) => watch(client, g.json, w, interrupt).await,
        Command::Tasks(t) => tasks(client, g, t).await.map_err(fail),
        Command::State
        | Command::Info { server: Some(_) }
        | Command::Servers
        | Command::Login
        | Command::Logout
        | Command::Auth(_)
        | Command::Completions { .. }
        | Command::Demo
        | Command::Bridge(_)
        | Command::Conformance { .. }
        | Command::TestServer { .. } => Err(CliError::new(
            Exit::Usage,
            what,
            "this command does not talk to a connected server",
        )),
    }
}

/// The era the client speaks to the server, and how it was chosen: `("modern", "forced by
/// --era modern")`.
fn era_of(client: &Client, g: &Global) -> (&'static str, &'static str) {
    use crate::args::Era as Asked;
    let era = match client.era() {
        Some(mcp_runtime::Era::Modern) => "modern",
        Some(mcp_runtime::Era::Legacy) | None => "legacy",
    };
    let how = match (g.era, era) {
        (None | Some(Asked::Auto), "modern") => "the server answered server/discover",
        (Some(Asked::Auto), _) => "the server is not a 2026-07-28 one (server/discover fell back)",
        // Without --era only --sse speaks the handshake era without asking.
        (None, _) if g.sse.is_some() => "the legacy HTTP+SSE transport",
        (None, _) => "the server is not a 2026-07-28 one (server/discover fell back)",
        (Some(Asked::Legacy), _) => "forced by --era legacy",
        (Some(Asked::Modern), _) => "forced by --era modern",
    };
    (era, how)
}

fn info(client: &Client, g: &Global, json_out: bool) -> Result<(), CliError> {
    let Some(s) = client.server_info() else {
        return Err(CliError::new(
            Exit::Connect,
            "info",
            "not connected (no handshake answer)",
        ));
    };
    if json_out {
        print_json(&json!({
            "serverInfo": s.server_info,
            "protocolVersion": s.protocol_version,
            "era": era_of(client, g).0,
            "eraChosen": era_of(client, g).1,
            "capabilities": s.capabilities,
            "instructions": s.instructions,
        }));
        return Ok(());
    }
    let mut t = Table::new(&["", ""]);
    let title = field(&s.server_info, "title");
    t.row(vec![
        "server".into(),
        format!(
            "{} {}{}",
            s.name(),
            s.version(),
            if title.is_empty() {
                String::new()
            } else {
                format!(" ({title})")
            }
        ),
    ]);
    t.row(vec!["protocol".into(), s.protocol_version.clone()]);
    let (era, how) = era_of(client, g);
    let kind = if era == "modern" {
        "stateless"
    } else {
        "handshake"
    };
    t.row(vec!["era".into(), format!("{era} ({kind}; {how})")]);
    t.row(vec![
        "capabilities".into(),
        capabilities_summary(&s.capabilities),
    ]);
    // The instructions keep their line breaks (they are often several paragraphs).
    t.row_multiline(vec![
        "instructions".into(),
        s.instructions.clone().unwrap_or_else(|| "(none)".into()),
    ]);
    // Skip the empty header line.
    let text = t.render();
    out!("{}", text.split_once('\n').map_or("", |(_, rest)| rest));
    Ok(())
}

async fn tools_call(
    client: &Client,
    g: &Global,
    call: CallArgs,
    interrupt: &Interrupt,
) -> Result<(), CliError> {
    let what = format!("tools call {}", call.name);
    let base = match &call.args {
        Some(text) => typed::parse_args_json(text).map_err(|e| CliError::usage(&what, e))?,
        None => Map::new(),
    };
    // Listing the tools also tells the client the tool's outputSchema, so that the result is
    // checked against it (unless --no-validate-output); with pairs, it types them.
    let args = if call.pairs.is_empty() {
        if !g.no_validate_output
            && let Err(e) = client.list_all_tools().await
        {
            tracing::debug!(target: "mcpc", error = %e, "tools/list failed: the result is not checked");
        }
        base
    } else {
        let tools = client
            .list_all_tools()
            .await
            .map_err(|e| call_error(&what, Some("listing the tools"), &e))?;
        let Some(tool) = tools.iter().find(|t| t.name == call.name) else {
            let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
            return Err(CliError::new(
                Exit::Server,
                &what,
                format!(
                    "the server has no tool named `{}` (tools: {})",
                    call.name,
                    names.join(", ")
                ),
            ));
        };
        typed::tool_arguments(&call.name, &tool.input_schema, base, &call.pairs)
            .map_err(|e| CliError::usage(&what, e))?
    };
    let name = call.name.clone();
    let call_with = |options| client.call_tool_with(&name, Value::Object(args), options);
    run_call(
        client, g, &what, &call.name, g.timeout, call_with, interrupt,
    )
    .await
}

/// Runs one tool call to its end and prints its result: `start` sends it with the options it
/// is given (`timeout`, progress, task statuses), shown on stderr as they come; Ctrl-C drops
/// the call (cancelled on the wire) and, for a task, asks `client` for its state. Shared by
/// `tools call` on one server and through a `--config` group.
pub(crate) async fn run_call<F>(
    client: &Client,
    g: &Global,
    what: &str,
    tool: &str,
    timeout: std::time::Duration,
    start: impl FnOnce(RequestOptions) -> F,
    interrupt: &Interrupt,
) -> Result<(), CliError>
where
    F: std::future::Future<Output = mcp_runtime::Result<mcp_runtime::types::CallToolResult>>,
{
    let (status_tx, mut statuses) = tokio::sync::mpsc::channel(64);
    let (options, mut progress) = RequestOptions::new()
        .timeout(timeout)
        .on_task_status(move |s| {
            // A lagging terminal loses status lines, never the call.
            let _ = status_tx.try_send(s.clone());
        })
        .progress_channel();
    let mut view = ProgressView::new(tool.to_owned(), Lines::Stderr);
    let mut fut = Box::pin(start(options));
    let mut task: Option<String> = None;
    let result = loop {
        tokio::select! {
            biased;
            caught = interrupt.fired() => {
                view.clear();
                // Dropping the call cancels it: the library sends notifications/cancelled, or
                // for a task tasks/cancel (once); then the task's state is asked for and shown.
                drop(fut);
                if let Some(id) = task {
                    report_cancelled_task(client, what, &id).await;
                }
                return Err(CliError::signalled(what, caught));
            }
            Some(p) = progress.recv() => view.update(&p),
            Some(s) = statuses.recv() => {
                task = Some(s.task_id.clone());
                view.task(&s);
            }
            r = &mut fut => break r,
        }
    };
    while let Ok(p) = progress.try_recv() {
        view.update(&p);
    }
    while let Ok(s) = statuses.try_recv() {
        view.task(&s);
    }
    view.clear();
    let result = result.map_err(|e| call_failed(what, g.json, &e))?;
    if g.json {
        print_json(&to_json(&result));
    } else if !result.failed() {
        for block in &result.content {
            outln!("{}", content_text(&to_json(block)));
        }
        if result.content.is_empty()
            && let Some(s) = &result.structured_content
        {
            print_json(s);
        }
    }
    if result.failed() {
        let text = result.text();
        return Err(CliError::new(
            Exit::Server,
            what,
            format!(
                "the tool reported an error: {}",
                if text.is_empty() {
                    "(no text)".to_owned()
                } else {
                    text.split_whitespace().collect::<Vec<_>>().join(" ")
                }
            ),
        ));
    }
    Ok(())
}

/// `tasks list|get|cancel`: the server's answer, one task a line (or as JSON).
async fn tasks(client: &Client, g: &Global, command: TasksCommand) -> mcp_runtime::Result<()> {
    let (method, params) = match &command {
        TasksCommand::List => ("tasks/list", None),
        TasksCommand::Get { id } => ("tasks/get", Some(json!({ "taskId": id }))),
        TasksCommand::Cancel { id } => ("tasks/cancel", Some(json!({ "taskId": id }))),
    };
    let result = client.request(method, params).await?;
    if g.json {
        print_json(&result);
        return Ok(());
    }
    let line = |t: &Value| {
        let field = |k: &str| t.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
        let message = field("statusMessage");
        format!(
            "{} {}{}",
            field("taskId"),
            field("status"),
            if message.is_empty() {
                String::new()
            } else {
                format!(": {message}")
            }
        )
    };
    match command {
        TasksCommand::List => {
            let tasks = result.get("tasks").and_then(Value::as_array);
            match tasks {
                Some(tasks) if !tasks.is_empty() => {
                    for t in tasks {
                        outln!("{}", line(t));
                    }
                }
                _ => outln!("(no tasks)"),
            }
        }
        TasksCommand::Get { .. } => outln!("{}", line(&result)),
        // 2026-07-28 acknowledges with an empty result; 2025-11-25 gives the task.
        TasksCommand::Cancel { id } => {
            if result.get("status").is_some() {
                outln!("{}", line(&result));
            } else {
                outln!("{id}: cancel asked");
            }
        }
    }
    Ok(())
}

/// After Ctrl-C on a task: what the server says of it now (within 2 s), on stderr.
async fn report_cancelled_task(client: &Client, what: &str, id: &str) {
    let asked = client.request("tasks/get", Some(json!({ "taskId": id })));
    let status = match tokio::time::timeout(std::time::Duration::from_secs(2), asked).await {
        Ok(Ok(task)) => task
            .get("status")
            .and_then(Value::as_str)
            .unwrap_or("unknown")
            .to_owned(),
        Ok(Err(e)) => format!("unknown ({e})"),
        Err(_) => "unknown (the server did not say within 2 s)".to_owned(),
    };
    errln!("mcpc: {what}: tasks/cancel sent; task {id} is {status}");
}

/// A failed `tools call`. A result the library refused for its tool's `outputSchema` is still
/// printed with `--json` (stdout, exact); the schema errors are listed on stderr, one a line
/// (escaped and bounded by the library), before the final error line.
fn call_failed(what: &str, json_out: bool, e: &mcp_runtime::Error) -> CliError {
    use mcp_runtime::Error as E;
    const SKIP: &str = "--no-validate-output skips the check";
    match e {
        E::OutputSchemaMismatch { errors, result, .. } => {
            if json_out {
                print_json(&to_json(result));
            }
            errln!("mcpc: structuredContent does not match the tool's outputSchema:");
            for line in errors {
                errln!("  {line}");
            }
            CliError::new(
                Exit::Server,
                what,
                format!("the result does not match the tool's outputSchema (errors above; {SKIP})"),
            )
        }
        E::InvalidOutputSchema { result, .. } => {
            if json_out {
                print_json(&to_json(result));
            }
            let mut err = CliError::call(what, e);
            err.why = format!("{} ({SKIP})", err.why);
            err
        }
        _ => CliError::call(what, e),
    }
}

async fn complete(
    client: &Client,
    json_out: bool,
    c: CompleteArgs,
    what: &str,
) -> Result<(), CliError> {
    let reference = match (c.prompt, c.resource) {
        (Some(p), _) => CompleteRef::Prompt(p),
        (None, Some(r)) => CompleteRef::Resource(r),
        (None, None) => {
            return Err(CliError::usage(
                what,
                "give --prompt NAME or --resource URI",
            ));
        }
    };
    let result = client
        .complete(reference, &c.argument, &c.value)
        .await
        .map_err(|e| CliError::call(what, &e))?;
    if json_out {
        print_json(&to_json(&result));
        return Ok(());
    }
    for v in &result.completion.values {
        outln!("{v}");
    }
    if result.completion.values.is_empty() {
        errln!("mcpc: complete: no completions");
    }
    if result.completion.has_more == Some(true) {
        let total = result
            .completion
            .total
            .map(|t| format!(" ({t} in all)"))
            .unwrap_or_default();
        errln!("mcpc: complete: more values available{total}");
    }
    Ok(())
}

/// A notification in one readable line.
pub(crate) fn notification_line(n: &Notification) -> String {
    match &n.parsed {
        ServerNotification::Log {
            level,
            logger,
            data,
        } => {
            let level = level
                .map(|l| to_json(&l).as_str().unwrap_or("?").to_owned())
                .unwrap_or_else(|| "?".into());
            let logger = logger
                .as_deref()
                .map(|l| format!(" [{l}]"))
                .unwrap_or_default();
            let data = match data {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            format!("log {level}{logger} {data}")
        }
        ServerNotification::ResourceUpdated { uri } => format!("resource updated {uri}"),
        ServerNotification::Progress { token, progress } => format!(
            "progress {token} {}{}{}",
            progress.progress,
            progress.total.map(|t| format!("/{t}")).unwrap_or_default(),
            progress
                .message
                .as_deref()
                .map(|m| format!(" {m}"))
                .unwrap_or_default()
        ),
        _ => {
            let method = n.method.trim_start_matches("notifications/").to_owned();
            match &n.params {
                None | Some(Value::Null) => method,
                Some(Value::Object(o)) if o.is_empty() => method,
                Some(p) => format!("{method} {p}"),
            }
        }
    }
}

pub(crate) fn stamp(start: Instant) -> String {
    format!("+{:.3}s", start.elapsed().as_secs_f64())
}

async fn watch(
    client: &Client,
    json_out: bool,
    w: WatchArgs,
    interrupt: &Interrupt,
) -> Result<(), CliError> {
    let start = Instant::now();
    let mut notes = client.notifications();
    let mut reported_lost = 0;
    let mut transitions = client.transitions();
    if let Some(level) = w.level {
        client
            .set_logging_level(level)
            .await
            .map_err(|e| call_error("watch", Some("logging/setLevel"), &e))?;
    }
    for uri in &w.subscribe {
        client
            .subscribe(uri)
            .await
            .map_err(|e| call_error("watch", Some(&format!("subscribe {uri}")), &e))?;
    }
    let name = client
        .server_info()
        .map(|s| s.name().to_owned())
        .unwrap_or_default();
    errln!("mcpc: watching notifications from {name} (Ctrl-C to stop)");
    loop {
        tokio::select! {
            biased;
            caught = interrupt.fired() => return after_signal("watch", caught),
            n = notes.recv() => match n {
                Some(n) => {
                    let lost = notes.dropped();
                    if lost > reported_lost {
                        errln!("mcpc: watch: {} notifications were lost (output too slow)", lost - reported_lost);
                        reported_lost = lost;
                    }
                    if json_out {
                        // Exactly as the server sent it.
                        out_exact(&json!({"at": start.elapsed().as_secs_f64(),
                            "method": n.method, "params": n.params}).to_string());
                    } else {
                        outln!("{}  {}", stamp(start), notification_line(&n));
                    }
                }
                None => {
                    return Err(CliError::new(Exit::Transport, "watch", "the client stopped"));
                }
            },
            t = transitions.recv() => {
                if let Some(t) = t {
                    let why = match (t.to(), client.last_error()) {
                        (mcp_runtime::ConnState::Backoff, Some(e)) => format!(": {e}"),
                        _ => String::new(),
                    };
                    errln!("mcpc: connection {} -> {} ({}){why}", t.from(), t.to(), t.event());
                }
            }
        }
    }
}

/// `state`: the live transitions of a fresh connection until Ctrl-C.
pub async fn state(g: &Global, interrupt: &Interrupt) -> Result<(), CliError> {
    let (builder, _) = builder(g)?;
    let start = Instant::now();
    let client = builder.connect_lazy();
    // Subscribed before the driver ran (single-threaded runtime): nothing is missed.
    let mut transitions = client.transitions();
    if g.json {
        out_exact(&json!({"at": 0.0, "state": client.state().name()}).to_string());
    } else {
        outln!("{}  {}", stamp(start), client.state());
    }
    let mut ended = Ok(());
    loop {
        tokio::select! {
            biased;
            caught = interrupt.fired() => {
                ended = after_signal("state", caught);
                break;
            }
            t = transitions.recv() => match t {
                Some(t) => {
                    let at = t.at.saturating_duration_since(start).as_secs_f64();
                    let note = match t.to() {
                        mcp_runtime::ConnState::Ready => client
                            .server_info()
                            .map(|s| format!("{} {}", s.name(), s.version())),
                        mcp_runtime::ConnState::Backoff => {
                            client.last_error().map(|e| e.to_string())
                        }
                        _ => None,
                    };
                    if g.json {
                        out_exact(&json!({"at": at, "from": t.from().name(), "to": t.to().name(),
                            "event": t.event(), "row": t.step.row, "file": t.spec_file(), "line": t.line(), "note": note}).to_string());
                    } else {
                        let line = format!(
                            "+{at:.3}s  {:<12} -> {:<12}  event {:<18} row {:<3}{}",
                            t.from().name(),
                            t.to().name(),
                            t.event(),
                            t.step.row,
                            note.map(|n| format!("  ({n})")).unwrap_or_default()
                        );
                        outln!("{}", line.trim_end());
                    }
                    if t.to().is_terminal() {
                        break;
                    }
                }
                None => break,
            },
        }
    }
    finish(&client).await;
    ended
}

/// How `watch` and `state` end on a signal: Ctrl-C is their normal end (exit 0), SIGTERM and
/// SIGHUP exit with 128 + the signal's number.
pub(crate) fn after_signal(what: &str, caught: Caught) -> Result<(), CliError> {
    match caught {
        Caught::Interrupt => Ok(()),
        other => Err(CliError::signalled(what, other)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notifications_read_well() {
        let log = Notification::new(
            "notifications/message".into(),
            Some(json!({"level": "info", "logger": "testserver", "data": "hello"})),
        );
        assert_eq!(notification_line(&log), "log info [testserver] hello");
        let changed = Notification::new("notifications/tools/list_changed".into(), None);
        assert_eq!(notification_line(&changed), "tools/list_changed");
        let other = Notification::new("x/custom".into(), Some(json!({"k": 1})));
        assert_eq!(notification_line(&other), "x/custom {\"k\":1}");
    }
}
