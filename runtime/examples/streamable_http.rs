//! Connect to a Streamable HTTP MCP server only (no fallback to the legacy HTTP+SSE transport),
//! with a static header and a per-request HTTP timeout; list its tools and call one.
//!
//! Against server-everything (Node ≥ 20):
//! `PORT=3001 npx @modelcontextprotocol/server-everything streamableHttp`, then
//! `cargo run -p mcp-runtime --example streamable_http -- http://127.0.0.1:3001/mcp`
//! (`MCP_TOKEN=…` in the environment is sent as `Authorization: Bearer …`).

use std::time::Duration;

use mcp_runtime::ClientBuilder;
use serde_json::json;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "http://127.0.0.1:3001/mcp".into());
    let mut builder = ClientBuilder::streamable_http(&url)?
        .client_info("streamable-http-example", "0.1.0")
        .http_timeout(Duration::from_secs(20));
    if let Ok(token) = std::env::var("MCP_TOKEN") {
        builder = builder.header("Authorization", &format!("Bearer {token}"))?;
    }
    let client = builder.connect().await?;
    if let Some(server) = client.server_info() {
        println!("{} speaks {}", server.name(), server.protocol_version);
    }
    let sum = client.call_tool("get-sum", json!({"a": 2, "b": 3})).await?;
    println!("get-sum(2, 3) -> {}", sum.text());
    client.stop().await;
    client.closed().await;
    Ok(())
}
