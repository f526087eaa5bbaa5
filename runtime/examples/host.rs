//! A small host, end to end: everything a host author does with the client, against the
//! in-repo test server (in process, chaos flavour, so it can crash on request).
//!
//! `cargo run -p mcp-runtime --example host`
//!
//! Observes the first connection from its first transition, answers sampling, elicitation and
//! roots with typed handlers, changes its roots at run time, calls a tool with progress, sets
//! the log level, subscribes to a resource, survives a crash of the server (the subscription
//! is restored by the client), and stops.

use std::time::Duration;

use mcp_runtime::transport::StreamConnector;
use mcp_runtime::{
    ClientBuilder, CreateMessageParams, CreateMessageResult, ElicitParams, ElicitResult, Handlers,
    LoggingLevel, RequestContext, RequestOptions, Root, Roots, ServerNotification, Transitions,
};
use serde_json::json;

/// The server: a fresh in-process test server for every connection the client opens.
fn server() -> StreamConnector {
    StreamConnector::from_fn(|| async {
        let (client, server) = tokio::io::duplex(1 << 16);
        let (read, write) = tokio::io::split(server);
        tokio::spawn(mcp_testserver::serve(
            read,
            write,
            mcp_testserver::ServerConfig::chaos(),
        ));
        Ok(tokio::io::split(client))
    })
    .with_description("in-process test server")
}

/// What the host answers when the server asks: a canned model, a user who says "Ada".
fn handlers(roots: Roots) -> Handlers {
    Handlers::new()
        .sampling(
            |params: CreateMessageParams, cx: RequestContext| async move {
                cx.progress(1.0, Some(1.0), Some("sampled")).await.ok();
                let prompt = params
                    .messages
                    .last()
                    .map(|m| m.content.joined_text())
                    .unwrap_or_default();
                Ok(CreateMessageResult::text(
                    "canned-model",
                    format!("echo: {prompt}"),
                ))
            },
        )
        .elicitation(|params: ElicitParams, _cx| async move {
            println!("  the server asks the user: {}", params.message());
            let ElicitParams::Form(_) = params else {
                return Ok(ElicitResult::decline());
            };
            let mut form = serde_json::Map::new();
            form.insert("name".into(), json!("Ada"));
            Ok(ElicitResult::accept(form))
        })
        .roots(roots)
}

fn print_transitions(transitions: &mut Transitions) {
    while let Some(t) = transitions.try_recv() {
        println!(
            "  {} -> {} ({}, {}:{})",
            t.from(),
            t.to(),
            t.event(),
            t.spec_file(),
            t.line()
        );
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let roots = Roots::new([Root::new("file:///work").named("work")]);
    let builder = ClientBuilder::new(server())
        .client_info("example-host", "0.1.0")
        .handler(handlers(roots.clone()))
        .request_timeout(Duration::from_secs(10))
        .backoff(Duration::from_millis(50), Duration::from_secs(2), 20);
    // Taken before connecting: nothing of the first connection is missed.
    let mut transitions = builder.transitions();
    let mut notifications = builder.notifications();
    let client = builder.connect().await?;
    println!("connected:");
    print_transitions(&mut transitions);
    let caps = client.server_capabilities().unwrap_or_default();
    println!(
        "server declares tools: {}, resource subscriptions: {}",
        caps.tools.is_some(),
        caps.resources.as_ref().is_some_and(|r| r.subscribe)
    );

    let (options, mut progress) = RequestOptions::new()
        .timeout(Duration::from_secs(5))
        .progress_channel();
    let slow = client
        .call_tool_with("slow", json!({"ms": 60, "steps": 3}), options)
        .await?;
    while let Ok(p) = progress.try_recv() {
        println!("  progress {}/{:?}", p.progress, p.total);
    }
    println!("slow -> {}", slow.text());

    for (tool, args) in [
        ("sample", json!({"prompt": "a haiku"})),
        ("elicit", json!({"message": "who are you?"})),
        ("roots", json!({})),
    ] {
        let r = client.call_tool(tool, args).await?;
        let shown = match &r.structured_content {
            Some(v) => v.to_string(),
            None => r.text(),
        };
        println!("{tool} -> {shown}");
    }
    roots.update(|r| r.push(Root::new("file:///home/me/notes").named("notes")));
    println!(
        "roots changed; the server now lists: {}",
        client.call_tool("roots", json!({})).await?.text()
    );

    client.set_logging_level(LoggingLevel::Info).await?;
    client.subscribe("test://static/1").await?;
    let touched = client
        .call_tool("touch", json!({"uri": "test://static/1"}))
        .await?;
    println!("touch -> {}", touched.text());

    println!("the server crashes mid-call:");
    let err = client.call_tool("die", json!({})).await.unwrap_err();
    println!("  die -> {err}");
    client.ready().await?;
    print_transitions(&mut transitions);
    // The subscription comes back with the new connection: the table sends the restoring
    // `resources/subscribe` before any other call, but this server runs requests concurrently,
    // so a call right after `ready()` may overtake it (calls wait for the restore to be sent,
    // not for its answer).
    for _ in 0..20 {
        let touched = client
            .call_tool("touch", json!({"uri": "test://static/1"}))
            .await?;
        if touched.text().starts_with("sent") {
            println!("touch -> {}", touched.text());
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
    let mut updates = 0;
    while let Some(n) = notifications.try_recv() {
        if let ServerNotification::ResourceUpdated { uri } = &n.parsed {
            updates += 1;
            println!("  resource updated: {uri}");
        }
    }
    println!(
        "{updates} resource updates ({} notifications lost to a slow reader)",
        notifications.dropped()
    );

    client.stop().await;
    client.closed().await;
    println!("stopped:");
    print_transitions(&mut transitions);
    Ok(())
}
