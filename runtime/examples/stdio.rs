//! Connect to an MCP server over stdio, list its tools and call one.
//!
//! `cargo run -p mcp-runtime --example stdio -- npx -y @modelcontextprotocol/server-everything`
//! (with no command, it runs the in-repo test server binary built by `cargo build -p mcp-tests`).

use std::time::Duration;

use mcp_runtime::{ClientBuilder, RequestOptions};
use serde_json::json;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut command: Vec<String> = std::env::args().skip(1).collect();
    if command.is_empty() {
        command.push(
            concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../target/debug/test-echo-server"
            )
            .into(),
        );
    }
    let client = ClientBuilder::stdio(&command[0], &command[1..])
        .client_info("stdio-example", "0.1.0")
        .request_timeout(Duration::from_secs(20))
        .connect()
        .await?;
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
    for tool in &tools {
        println!(
            "- {}: {}",
            tool.name,
            tool.description.as_deref().unwrap_or("")
        );
    }
    if tools.iter().any(|t| t.name == "echo") {
        let (options, mut progress) = RequestOptions::new().progress_channel();
        let result = client
            .call_tool_with("echo", json!({"message": "hello"}), options)
            .await?;
        while let Ok(p) = progress.try_recv() {
            println!("progress {}", p.progress);
        }
        println!("echo -> {}", result.text());
    }
    client.stop().await;
    Ok(())
}
