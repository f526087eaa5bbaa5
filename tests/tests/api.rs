//! Every typed API method of the client against the in-repo server, in process.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use mcp_runtime::{
    CompleteRef, ConnState, CreateMessageParams, CreateMessageResult, ElicitParams, ElicitResult,
    Error, Handlers, LoggingLevel, RequestContext, RequestOptions, Root, Roots, RpcError,
    ServerNotification,
};
use mcp_tests::{in_process, session_info};
use mcp_testserver::ServerConfig;
use serde_json::json;

async fn next_matching(
    rx: &mut mcp_runtime::Notifications,
    f: impl Fn(&ServerNotification) -> bool,
) -> ServerNotification {
    tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            let n = rx.recv().await.expect("notification stream open");
            if f(&n.parsed) {
                return n.parsed;
            }
        }
    })
    .await
    .expect("notification arrives")
}

#[tokio::test]
async fn handshake_tools_and_pagination() {
    let config = ServerConfig {
        page_size: 2,
        ..ServerConfig::echo()
    };
    let client = in_process(config)
        .client_info("api-test", "1.2.3")
        .connect()
        .await
        .unwrap();
    assert_eq!(client.state(), ConnState::Ready);
    let info = client.server_info().unwrap();
    assert_eq!(info.protocol_version, "2025-11-25");
    assert!(info.has_capability("tools"));
    assert!(!info.name().is_empty());

    client.ping().await.unwrap();
    let first = client.list_tools(None).await.unwrap();
    assert_eq!(first.tools.len(), 2);
    assert!(first.next_cursor.is_some());
    let all = client.list_all_tools().await.unwrap();
    assert!(all.len() > 2);
    let names: Vec<_> = all.iter().map(|t| t.name.as_str()).collect();
    assert!(
        names.contains(&"echo") && names.contains(&"add"),
        "{names:?}"
    );

    let echo = client
        .call_tool("echo", json!({"message": "hello"}))
        .await
        .unwrap();
    assert_eq!(echo.text(), "Echo: hello");
    let add = client
        .call_tool("add", json!({"a": 2, "b": 3}))
        .await
        .unwrap();
    assert_eq!(add.structured_content.unwrap()["sum"], json!(5));

    let err = client
        .call_tool("no-such-tool", json!({}))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Server { code: -32602, .. }), "{err:?}");

    let raw = client.request("tools/list", None).await.unwrap();
    assert!(raw["tools"].is_array());
    let unknown = client.request("no/such/method", None).await.unwrap_err();
    assert!(
        matches!(unknown, Error::Server { code: -32601, .. }),
        "{unknown:?}"
    );

    client
        .notify("notifications/roots/list_changed", None)
        .await
        .unwrap();
    let s = session_info(&client).await;
    assert_eq!(s["clientInfo"]["name"], "api-test");
    assert_eq!(s["initializedCount"], 1);
    assert_eq!(s["rootsListChanged"], 1, "{s}");
    client.stop().await;
    assert_ne!(client.state(), ConnState::Ready);
    assert!(matches!(client.ping().await, Err(Error::Shutdown)));
}

#[tokio::test]
async fn resources_prompts_completion_logging() {
    let client = in_process(ServerConfig::echo()).connect().await.unwrap();
    let resources = client.list_all_resources().await.unwrap();
    assert_eq!(resources.len(), 3);
    let templates = client.list_resource_templates(None).await.unwrap();
    assert_eq!(
        templates.resource_templates[0].uri_template,
        "test://dynamic/{id}"
    );
    let read = client.read_resource(&resources[0].uri).await.unwrap();
    assert!(read.contents[0].text.is_some());
    let missing = client.read_resource("test://nope").await.unwrap_err();
    assert!(
        matches!(&missing, Error::ResourceNotFound { code: -32002, uri, .. } if uri == "test://nope"),
        "{missing:?}"
    );

    let mut notes = client.notifications();
    let uri = resources[0].uri.clone();
    client.subscribe(&uri).await.unwrap();
    client
        .call_tool("touch", json!({"uri": uri}))
        .await
        .unwrap();
    let n = next_matching(&mut notes, |n| {
        matches!(n, ServerNotification::ResourceUpdated { .. })
    })
    .await;
    assert_eq!(n, ServerNotification::ResourceUpdated { uri: uri.clone() });
    client.unsubscribe(&uri).await.unwrap();

    let prompts = client.list_prompts(None).await.unwrap();
    assert!(prompts.prompts.iter().any(|p| p.name == "greeting"));
    let prompt = client
        .get_prompt("greeting", json!({"name": "Ada"}))
        .await
        .unwrap();
    assert!(!prompt.messages.is_empty());

    let done = client
        .complete(CompleteRef::Prompt("greeting".into()), "name", "al")
        .await
        .unwrap();
    assert_eq!(done.completion.values, ["alice", "alfred"]);

    client
        .set_logging_level(LoggingLevel::Warning)
        .await
        .unwrap();
    client
        .call_tool("log", json!({"level": "info", "message": "quiet"}))
        .await
        .unwrap();
    client
        .call_tool("log", json!({"level": "error", "message": "loud"}))
        .await
        .unwrap();
    let log = next_matching(&mut notes, |n| matches!(n, ServerNotification::Log { .. })).await;
    let ServerNotification::Log { level, data, .. } = log else {
        unreachable!()
    };
    assert_eq!(level, Some(LoggingLevel::Error));
    assert_eq!(data, json!("loud"));

    client
        .call_tool("notify_changed", json!({"list": "tools"}))
        .await
        .unwrap();
    next_matching(&mut notes, |n| *n == ServerNotification::ToolsListChanged).await;
    client.stop().await;
}

#[tokio::test]
async fn progress_by_callback_and_by_channel() {
    let client = in_process(ServerConfig::echo()).connect().await.unwrap();
    let seen = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&seen);
    let opts = RequestOptions::new().on_progress(move |p| {
        assert!(p.progress >= 1.0);
        counter.fetch_add(1, Ordering::SeqCst);
    });
    let r = client
        .call_tool_with("slow", json!({"ms": 60, "steps": 3}), opts)
        .await
        .unwrap();
    assert!(!r.failed());
    assert_eq!(seen.load(Ordering::SeqCst), 3);

    let (opts, mut rx) = RequestOptions::new().progress_channel();
    client
        .call_tool_with("slow", json!({"ms": 40, "steps": 2}), opts)
        .await
        .unwrap();
    let mut got = Vec::new();
    while let Ok(p) = rx.try_recv() {
        got.push(p.progress);
    }
    assert_eq!(got, [1.0, 2.0]);
    client.stop().await;
}

#[tokio::test]
async fn server_requests_reach_the_handler_and_capabilities_follow() {
    let handlers = Handlers::new()
        .sampling(
            |params: CreateMessageParams, cx: RequestContext| async move {
                assert_eq!(cx.method(), "sampling/createMessage");
                assert_eq!(
                    cx.server().map(|s| s.name().to_owned()).as_deref(),
                    Some("mcp-echo-server")
                );
                let n = params.messages.len();
                let asked = params.messages[0].content.joined_text();
                Ok(CreateMessageResult::text(
                    "test",
                    format!("sampled {n}: {asked}"),
                ))
            },
        )
        .roots(Roots::new([Root::new("file:///work").named("work")]))
        .elicitation(|params: ElicitParams, _cx| async move {
            let ElicitParams::Form(form) = params else {
                return Ok(ElicitResult::cancel());
            };
            assert!(form.requested_schema["properties"].is_object(), "{form:?}");
            let mut content = serde_json::Map::new();
            content.insert("name".into(), json!("Ada"));
            Ok(ElicitResult::accept(content))
        });
    let client = in_process(ServerConfig::echo())
        .handler(handlers)
        .connect()
        .await
        .unwrap();
    let s = session_info(&client).await;
    let caps = &s["clientCapabilities"];
    assert!(
        caps["sampling"].is_object()
            && caps["roots"].is_object()
            && caps["elicitation"].is_object(),
        "{caps}"
    );

    let sampled = client
        .call_tool("sample", json!({"prompt": "hi"}))
        .await
        .unwrap();
    assert!(sampled.text().contains("sampled 1: hi"), "{sampled:?}");
    let roots = client.call_tool("roots", json!({})).await.unwrap();
    assert_eq!(
        roots.structured_content.unwrap()["roots"][0]["uri"],
        "file:///work"
    );
    let elicited = client
        .call_tool("elicit", json!({"message": "name?"}))
        .await
        .unwrap();
    assert!(
        elicited.text().contains("accept") || elicited.structured_content.is_some(),
        "{elicited:?}"
    );
    client.stop().await;

    // Nothing declared: the same requests are refused with method-not-found by the core.
    let bare = in_process(ServerConfig::echo()).connect().await.unwrap();
    let s = session_info(&bare).await;
    assert_eq!(s["clientCapabilities"], json!({}));
    let refused = bare
        .call_tool("sample", json!({"prompt": "hi"}))
        .await
        .unwrap();
    assert!(refused.failed(), "{refused:?}");
    assert!(
        refused.text().contains("method not found"),
        "{}",
        refused.text()
    );
    bare.stop().await;
}

#[tokio::test]
async fn a_panicking_handler_answers_an_internal_error() {
    let handlers = Handlers::new().sampling(|_p, _cx| async move {
        if true {
            panic!("handler bug");
        }
        Err::<CreateMessageResult, RpcError>(RpcError {
            code: 0,
            message: String::new(),
            data: None,
        })
    });
    let client = in_process(ServerConfig::echo())
        .handler(handlers)
        .connect()
        .await
        .unwrap();
    let r = client
        .call_tool("sample", json!({"prompt": "hi"}))
        .await
        .unwrap();
    assert!(r.failed());
    assert!(r.text().contains("panicked"), "{}", r.text());
    client.ping().await.unwrap();
    client.stop().await;
}

#[tokio::test]
async fn panicking_user_callbacks_do_not_take_the_client_down() {
    struct Eager;
    impl mcp_runtime::ClientHandler for Eager {
        fn provides(&self) -> mcp_runtime::Provides {
            mcp_runtime::Provides {
                sampling: true,
                ..Default::default()
            }
        }
        fn create_message(
            &self,
            _params: CreateMessageParams,
            _cx: RequestContext,
        ) -> mcp_runtime::HandlerFuture<CreateMessageResult> {
            panic!("panics before returning its future")
        }
    }
    let client = in_process(ServerConfig::echo())
        .handler(Eager)
        .connect()
        .await
        .unwrap();
    let r = client
        .call_tool("sample", json!({"prompt": "hi"}))
        .await
        .unwrap();
    assert!(r.failed() && r.text().contains("panicked"), "{r:?}");
    let opts = RequestOptions::new().on_progress(|_| panic!("progress callback bug"));
    let r = client
        .call_tool_with("slow", json!({"ms": 30, "steps": 2}), opts)
        .await
        .unwrap();
    assert!(!r.failed());
    assert_eq!(client.state(), ConnState::Ready);
    client.ping().await.unwrap();
    client.stop().await;
}

#[tokio::test]
async fn an_endless_cursor_is_an_error_not_a_hang() {
    let config = ServerConfig {
        endless_cursor: true,
        ..ServerConfig::echo()
    };
    let client = in_process(config).connect().await.unwrap();
    let err = tokio::time::timeout(Duration::from_secs(5), client.list_all_tools())
        .await
        .expect("list_all_tools returns")
        .unwrap_err();
    assert!(
        matches!(
            &err,
            mcp_runtime::Error::EndlessPagination { method, pages: 2, reason: mcp_runtime::PaginationStop::RepeatedCursor(c) }
                if method == "tools/list" && c == "again"
        ),
        "{err:?}"
    );
    client.stop().await;
}

#[tokio::test]
async fn too_many_pages_is_an_error() {
    let config = ServerConfig {
        page_size: 1,
        ..ServerConfig::echo()
    };
    let client = in_process(config).max_pages(3).connect().await.unwrap();
    let err = client.list_all_tools().await.unwrap_err();
    assert!(
        matches!(
            &err,
            mcp_runtime::Error::EndlessPagination {
                pages: 3,
                reason: mcp_runtime::PaginationStop::TooManyPages,
                ..
            }
        ),
        "{err:?}"
    );
    client.stop().await;
}

#[test]
fn stop_and_closed_return_when_the_runtime_is_gone() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let client = rt.block_on(async { in_process(ServerConfig::echo()).connect().await.unwrap() });
    drop(rt);
    // The driver went with its runtime: stop and closed must not wait for it.
    let other = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    other.block_on(async {
        tokio::time::timeout(Duration::from_secs(5), client.stop())
            .await
            .expect("stop returns");
        tokio::time::timeout(Duration::from_secs(5), client.closed())
            .await
            .expect("closed returns");
    });
}

#[tokio::test(start_paused = true)]
async fn reset_timeout_on_progress_works_without_a_sink() {
    let client = in_process(ServerConfig::echo()).connect().await.unwrap();
    // slow sends progress every 200 ms for 2 s; a 500 ms timeout reset by progress holds.
    let options = RequestOptions::new()
        .timeout(Duration::from_millis(500))
        .reset_timeout_on_progress(Duration::from_secs(10));
    let r = client
        .call_tool_with("slow", json!({"ms": 2000, "steps": 10}), options)
        .await;
    assert!(r.is_ok(), "{r:?}");
    client.stop().await;
}

#[tokio::test]
async fn a_roots_handle_declares_list_changed_and_tells_the_server_of_each_change() {
    let roots = Roots::new([Root::new("file:///a").named("a")]);
    let client = in_process(ServerConfig::echo())
        .handler(Handlers::new().roots(roots.clone()))
        .connect()
        .await
        .unwrap();
    let s = session_info(&client).await;
    assert_eq!(
        s["clientCapabilities"]["roots"],
        json!({"listChanged": true})
    );
    assert_eq!(s["rootsListChanged"], 0);
    roots.update(|r| r.push(Root::new("file:///b")));
    // The server heard of the change and, asking again, gets the new list.
    let mut heard = json!(0);
    for _ in 0..100 {
        heard = session_info(&client).await["rootsListChanged"].clone();
        if heard == json!(1) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(heard, json!(1));
    let listed = client.call_tool("roots", json!({})).await.unwrap();
    assert_eq!(
        listed.structured_content.unwrap()["roots"],
        json!([{"uri": "file:///a", "name": "a"}, {"uri": "file:///b"}])
    );
    client.stop().await;
}

/// A read window of one frame (active-once) and the default window both answer every call of
/// a burst with its own result.
#[tokio::test]
async fn every_read_window_answers_a_burst_of_calls() {
    for window in [1, 32] {
        let client = in_process(ServerConfig::echo())
            .read_window(window)
            .connect()
            .await
            .expect("connect");
        let calls = (0..64).map(|i| {
            let client = client.clone();
            tokio::spawn(async move {
                let r = client
                    .call_tool("echo", json!({"message": format!("m{i}")}))
                    .await
                    .expect("echo answered");
                (i, r)
            })
        });
        for call in calls.collect::<Vec<_>>() {
            let (i, r) = call.await.expect("caller task");
            let text = serde_json::to_string(&r.content).expect("content");
            assert!(text.contains(&format!("m{i}\"")), "window {window}: {text}");
        }
        client.stop().await;
    }
}
