//! A `ClientHandler` answering the server's sampling, roots and elicitation requests.
//!
//! `cargo run -p mcp-runtime --example handler`: runs the in-repo test server in process and
//! calls its tools that ask the client for a sample, the roots and a form.

use mcp_runtime::transport::StreamConnector;
use mcp_runtime::{ClientBuilder, ClientHandler, HandlerFuture, Provides};
use serde_json::{Value, json};

/// Answers with canned values; a real host would ask a model or the user.
struct Host;

impl ClientHandler for Host {
    fn provides(&self) -> Provides {
        Provides {
            sampling: true,
            roots: true,
            elicitation: true,
            ..Provides::default()
        }
    }

    fn create_message(&self, params: Value) -> HandlerFuture {
        Box::pin(async move {
            let asked = params["messages"][0]["content"]["text"]
                .as_str()
                .unwrap_or("")
                .to_owned();
            Ok(json!({"role": "assistant", "model": "canned",
                "content": {"type": "text", "text": format!("you asked: {asked}")}}))
        })
    }

    fn list_roots(&self, _params: Value) -> HandlerFuture {
        Box::pin(async { Ok(json!({"roots": [{"uri": "file:///work", "name": "work"}]})) })
    }

    fn elicit(&self, params: Value) -> HandlerFuture {
        Box::pin(async move {
            println!("server asks: {}", params["message"]);
            Ok(json!({"action": "accept", "content": {"name": "Ada", "confirm": true}}))
        })
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let connector = StreamConnector::from_fn(|| async {
        let (client, server) = tokio::io::duplex(1 << 16);
        let (read, write) = tokio::io::split(server);
        tokio::spawn(mcp_testserver::serve(
            read,
            write,
            mcp_testserver::ServerConfig::echo(),
        ));
        Ok(tokio::io::split(client))
    });
    let client = ClientBuilder::new(connector)
        .handler(Host)
        .connect()
        .await?;
    for (tool, args) in [
        ("sample", json!({"prompt": "a haiku"})),
        ("roots", json!({})),
        ("elicit", json!({"message": "who?"})),
    ] {
        let result = client.call_tool(tool, args).await?;
        println!(
            "{tool} -> {}",
            if result.text().is_empty() {
                format!("{:?}", result.structured_content)
            } else {
                result.text()
            }
        );
    }
    client.stop().await;
    Ok(())
}
