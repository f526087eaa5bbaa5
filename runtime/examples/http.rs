//! Connect to an MCP server over HTTP (Streamable HTTP, falling back to the legacy HTTP+SSE
//! transport by itself), list its tools and call one with progress.
//!
//! Against server-everything: `PORT=3001 npx @modelcontextprotocol/server-everything
//! streamableHttp` (or `... sse`, then the URL ends in `/sse`), then
//! `cargo run -p mcp-runtime --example http -- http://127.0.0.1:3001/mcp`

use std::time::Duration;

use mcp_runtime::{ClientBuilder, RequestOptions};
use serde_json::json;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "http://127.0.0.1:3001/mcp".into());
    let builder = ClientBuilder::http(&url)?.client_info("http-example", "0.1.0");
    let mut notifications = builder.notifications();
    let client = builder.connect().await?;
    let info = client
        .server_info()
        .expect("ready clients know their server");
    println!(
        "connected to {} {} (protocol {})",
        info.name(),
        info.version(),
        info.protocol_version
    );
    let tools = client.list_all_tools().await?;
    println!("{} tools", tools.len());
    let echo = client
        .call_tool("echo", json!({"message": "over http"}))
        .await?;
    println!("echo -> {}", echo.text());
    let (options, mut progress) = RequestOptions::new()
        .timeout(Duration::from_secs(30))
        .progress_channel();
    let long = client
        .call_tool_with(
            "trigger-long-running-operation",
            json!({"duration": 1, "steps": 3}),
            options,
        )
        .await;
    let mut steps = 0;
    while progress.try_recv().is_ok() {
        steps += 1;
    }
    println!(
        "long-running -> {:?} ({steps} progress notifications)",
        long.map(|r| r.text())
    );
    client.stop().await;
    client.closed().await;
    println!(
        "{} notifications",
        std::iter::from_fn(|| notifications.try_recv()).count()
    );
    Ok(())
}
