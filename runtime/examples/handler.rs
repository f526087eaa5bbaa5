//! A `ClientHandler` answering the server's sampling, roots and elicitation requests.
//!
//! `cargo run -p mcp-runtime --example handler`: runs the in-repo test server in process and
//! calls its tools that ask the client for a sample, the roots and a form.

use mcp_runtime::transport::StreamConnector;
use mcp_runtime::{
    ClientBuilder, ClientHandler, CreateMessageParams, CreateMessageResult, ElicitParams,
    ElicitResult, HandlerFuture, ListRootsResult, Provides, RequestContext, Root,
};
use serde_json::json;

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

    fn create_message(
        &self,
        params: CreateMessageParams,
        cx: RequestContext,
    ) -> HandlerFuture<CreateMessageResult> {
        Box::pin(async move {
            let asked = params
                .messages
                .first()
                .map(|m| m.content.joined_text())
                .unwrap_or_default();
            // Long work reports progress, if the server asked for it.
            cx.progress(1.0, Some(1.0), Some("sampled")).await.ok();
            Ok(CreateMessageResult::text(
                "canned",
                format!("you asked: {asked}"),
            ))
        })
    }

    fn list_roots(&self, _cx: RequestContext) -> HandlerFuture<ListRootsResult> {
        Box::pin(async {
            Ok(ListRootsResult {
                roots: vec![Root::new("file:///work").named("work")],
                ..Default::default()
            })
        })
    }

    fn elicit(&self, params: ElicitParams, _cx: RequestContext) -> HandlerFuture<ElicitResult> {
        Box::pin(async move {
            println!("server asks: {}", params.message());
            let mut form = serde_json::Map::new();
            form.insert("name".into(), json!("Ada"));
            form.insert("confirm".into(), json!(true));
            Ok(ElicitResult::accept(form))
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
