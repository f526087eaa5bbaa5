//! Connect to a server of the legacy HTTP+SSE transport (MCP 2024-11-05), list its tools and
//! call one.
//!
//! Against server-everything (Node ≥ 20):
//! `PORT=3002 npx @modelcontextprotocol/server-everything sse`, then
//! `cargo run -p mcp-runtime --example sse -- http://127.0.0.1:3002/sse`.
//! [`ClientBuilder::http`] on the same URL finds the legacy transport by itself (the POST of
//! `initialize` is refused, so it falls back); [`ClientBuilder::sse`] goes there directly.

use mcp_runtime::ClientBuilder;
use serde_json::json;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "http://127.0.0.1:3002/sse".into());
    let client = ClientBuilder::sse(&url)?
        .client_info("sse-example", "0.1.0")
        .connect()
        .await?;
    let names: Vec<String> = client
        .list_all_tools()
        .await?
        .into_iter()
        .map(|t| t.name)
        .collect();
    println!("tools over the legacy transport: {}", names.join(", "));
    let echo = client.call_tool("echo", json!({"message": "hi"})).await?;
    println!("echo -> {}", echo.text());
    client.stop().await;
    client.closed().await;
    Ok(())
}
