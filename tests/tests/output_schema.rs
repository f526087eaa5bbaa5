//! A tool's `structuredContent` checked against its `outputSchema` by `Client::call_tool`, end
//! to end, in both eras: the in-repo server's `structured` tool (`shape` valid, wrong, missing,
//! error) in process, over stdio and over HTTP; the off switch; a tool never listed; schemas
//! given back exactly as the server sent them; and, against a scripted server, an
//! `outputSchema` with a network `$ref` rejected without any connection.

use std::time::Duration;

use mcp_runtime::types::CallToolResult;
use mcp_runtime::{Client, ClientBuilder, EraMode, Error};
use mcp_tests::{in_process, initialize_result, stdio};
use mcp_testserver::{Era, ServerConfig};
use serde_json::{Value, json};

const ECHO: &str = env!("CARGO_BIN_EXE_test-echo-server");
const WAIT: Duration = Duration::from_secs(10);

/// The in-process server speaking `era`, and a client speaking it too.
fn in_era(era: Era) -> ClientBuilder {
    let mode = match era {
        Era::Modern => EraMode::Modern,
        _ => EraMode::Legacy,
    };
    in_process(ServerConfig {
        era,
        ..ServerConfig::echo()
    })
    .era(mode)
    .request_timeout(WAIT)
}

async fn call(client: &Client, shape: &str) -> mcp_runtime::Result<CallToolResult> {
    client
        .call_tool("structured", json!({"shape": shape}))
        .await
}

/// Lists the tools, then checks every shape of `structured`.
async fn check_every_shape(client: &Client) {
    let tools = client.list_all_tools().await.expect("tools/list");
    let structured = tools
        .iter()
        .find(|t| t.name == "structured")
        .expect("listed");
    assert!(structured.output_schema.is_some(), "{structured:?}");

    let valid = call(client, "valid").await.expect("a conforming result");
    assert_eq!(
        valid.structured_content,
        Some(json!({"count": 3, "label": "three"}))
    );

    match call(client, "wrong").await {
        Err(Error::OutputSchemaMismatch {
            tool,
            errors,
            result,
        }) => {
            assert_eq!(tool, "structured");
            assert!(
                errors.iter().any(|e| e.starts_with("/count: ")),
                "{errors:?}"
            );
            assert!(
                errors
                    .iter()
                    .any(|e| e.starts_with("(root): ") && e.contains("label")),
                "{errors:?}"
            );
            // The caller still has the server's result, unchanged.
            assert_eq!(
                result.structured_content,
                Some(json!({"count": "three", "extra": true}))
            );
        }
        other => panic!("not a mismatch: {other:?}"),
    }

    match call(client, "missing").await {
        Err(Error::OutputSchemaMismatch { errors, result, .. }) => {
            assert!(
                errors[0].contains("structuredContent is missing"),
                "{errors:?}"
            );
            assert!(result.structured_content.is_none());
            assert!(!result.text().is_empty());
        }
        other => panic!("not a mismatch: {other:?}"),
    }

    // A tool error is not checked.
    let failed = call(client, "error")
        .await
        .expect("a tool error is a result");
    assert!(failed.failed());

    // Other tools with an outputSchema conform.
    let add = client
        .call_tool("add", json!({"a": 2, "b": 3}))
        .await
        .expect("add conforms");
    assert_eq!(add.structured_content, Some(json!({"sum": 5})));
}

#[tokio::test]
async fn a_mismatch_is_a_typed_error_in_the_handshake_era() {
    let client = in_era(Era::Legacy).connect().await.expect("connects");
    assert_eq!(client.era(), Some(mcp_runtime::Era::Legacy));
    check_every_shape(&client).await;
    client.stop().await;
}

#[tokio::test]
async fn a_mismatch_is_a_typed_error_in_the_modern_era() {
    let client = in_era(Era::Modern).connect().await.expect("connects");
    assert_eq!(client.era(), Some(mcp_runtime::Era::Modern));
    check_every_shape(&client).await;
    client.stop().await;
}

#[tokio::test]
async fn a_mismatch_is_a_typed_error_over_stdio_in_both_eras() {
    for (flag, mode) in [("legacy", EraMode::Legacy), ("modern", EraMode::Modern)] {
        let client = stdio(ECHO, &["--era", flag])
            .era(mode)
            .connect_timeout(WAIT)
            .request_timeout(WAIT)
            .connect()
            .await
            .expect("connects");
        check_every_shape(&client).await;
        client.stop().await;
        tokio::time::timeout(WAIT, client.closed())
            .await
            .expect("closed");
    }
}

#[tokio::test]
async fn a_mismatch_is_a_typed_error_over_http_in_the_modern_era() {
    let (mut server, url) =
        mcp_tests::spawn_http(ECHO, &["--era", "modern", "--http", "127.0.0.1:0"]).await;
    let client = ClientBuilder::http(&url)
        .expect("an http URL")
        .era(EraMode::Modern)
        .connect_timeout(WAIT)
        .request_timeout(WAIT)
        .connect()
        .await
        .expect("connects");
    assert_eq!(client.era(), Some(mcp_runtime::Era::Modern));
    check_every_shape(&client).await;
    client.stop().await;
    let _ = server.kill().await;
}

#[tokio::test]
async fn the_off_switch_and_a_tool_never_listed_check_nothing() {
    // Not listed: not checked (the client knows no schema for it).
    let client = in_era(Era::Legacy).connect().await.expect("connects");
    let wrong = call(&client, "wrong").await.expect("unchecked");
    assert_eq!(
        wrong.structured_content,
        Some(json!({"count": "three", "extra": true}))
    );
    client.stop().await;
    // Off: listed, still not checked.
    for era in [Era::Legacy, Era::Modern] {
        let client = in_era(era)
            .validate_output(false)
            .connect()
            .await
            .expect("connects");
        client.list_all_tools().await.expect("tools/list");
        assert!(call(&client, "wrong").await.is_ok());
        assert!(call(&client, "missing").await.is_ok());
        client.stop().await;
    }
}

#[tokio::test]
async fn schemas_are_given_back_exactly_as_the_server_sent_them() {
    let expected = json!({
        "type": "object",
        "properties": {"count": {"type": "integer", "minimum": 0},
                       "label": {"type": "string"}},
        "required": ["count", "label"],
        "additionalProperties": false,
    });
    for era in [Era::Legacy, Era::Modern] {
        let client = in_era(era).connect().await.expect("connects");
        let tools = client.list_all_tools().await.expect("tools/list");
        let t = tools
            .iter()
            .find(|t| t.name == "structured")
            .expect("listed");
        assert_eq!(t.output_schema.as_ref(), Some(&expected));
        assert_eq!(t.input_schema["properties"]["shape"]["enum"][3], "error");
        client.stop().await;
    }
}

/// A scripted handshake-era server whose one tool `t` declares `schema` and answers `result`.
fn scripted_tool(schema: Value, result: Value) -> ClientBuilder {
    mcp_tests::scripted(move |_, msg| {
        let id = msg.get("id").cloned().unwrap_or(Value::Null);
        Some(match msg["method"].as_str() {
            Some("initialize") => vec![initialize_result(
                &id,
                "2025-11-25",
                json!({"tools": {}}),
                "schemas",
            )],
            Some("tools/list") => vec![json!({"jsonrpc": "2.0", "id": id, "result": {
                "tools": [{"name": "t", "inputSchema": {"type": "object"},
                           "outputSchema": schema}]}})],
            Some("tools/call") => vec![json!({"jsonrpc": "2.0", "id": id, "result": result})],
            _ => vec![],
        })
    })
    .request_timeout(WAIT)
}

#[tokio::test]
async fn an_output_schema_with_a_network_ref_is_rejected_and_never_fetched() {
    let canary = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    canary.set_nonblocking(true).expect("nonblocking");
    let port = canary.local_addr().expect("its address").port();
    let schemas = [
        json!({"type": "object", "properties": {
            "profile": {"$ref": format!("http://127.0.0.1:{port}/profile.json")}}}),
        json!({"$ref": format!("https://127.0.0.1:{port}/s.json")}),
        json!({"$schema": format!("http://127.0.0.1:{port}/meta"), "type": "object"}),
        json!({"$ref": "file:///etc/passwd"}),
    ];
    for schema in schemas {
        let result = json!({"content": [], "structuredContent": {"profile": {}}});
        let client = scripted_tool(schema.clone(), result)
            .connect()
            .await
            .expect("connects");
        let tools = client.list_all_tools().await.expect("tools/list");
        // Given back exactly, the `$ref` included.
        assert_eq!(tools[0].output_schema.as_ref(), Some(&schema));
        match client.call_tool("t", json!({})).await {
            Err(Error::InvalidOutputSchema {
                tool,
                reason,
                result,
            }) => {
                assert_eq!(tool, "t");
                assert!(!reason.is_empty());
                assert_eq!(result.structured_content, Some(json!({"profile": {}})));
            }
            other => panic!("{schema}: not an invalid schema: {other:?}"),
        }
        client.stop().await;
    }
    match canary.accept() {
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
        other => panic!("the canary was contacted: {other:?}"),
    }
}
