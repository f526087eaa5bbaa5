//! `subscriptions/listen` (2026-07-28) end to end: the client against the in-repo server in
//! the modern era, over stdio and over HTTP, with the server's unsolicited notifications off
//! (`--modern-unsolicited off`), so that whatever the client hears came through its listen.
//!
//! Checked: ready opens one listen for the list changes the server advertises; a subscribe
//! joins it and is answered by its acknowledgement (done, or not honored for a resource the
//! server does not serve); `touch` and `notify_changed` reach the client through it; an
//! unsubscribe leaves it (the server's filter no longer names the resource); a server that
//! serves no listen refuses the subscribe with its -32601; a listen the server ends is opened
//! again; a restarted server gets the subscription again.

use std::time::Duration;

use mcp_runtime::{
    Client, ClientBuilder, EraMode, Error, ListenStatus, Notifications, ServerNotification,
};
use mcp_tests::{over_http, over_stdio};
use serde_json::{Value, json};
use tokio::process::Child;

const ECHO: &str = env!("CARGO_BIN_EXE_test-echo-server");
const WAIT: Duration = mcp_tests::ERA_WAIT;
const URI: &str = "test://static/1";

/// The echo server serving HTTP; killed when dropped.
struct HttpServer {
    url: String,
    _child: Child,
}

impl HttpServer {
    async fn start(args: &[&str]) -> HttpServer {
        let mut all = args.to_vec();
        all.extend(["--http", "127.0.0.1:0"]);
        let (child, url) = mcp_tests::spawn_http(ECHO, &all).await;
        HttpServer { url, _child: child }
    }
}

const MODERN_ONLY: [&str; 4] = ["--era", "modern", "--modern-unsolicited", "off"];

async fn connect(builder: ClientBuilder) -> Client {
    builder.connect().await.expect("connects")
}

async fn finish(client: Client) {
    client.stop().await;
    tokio::time::timeout(WAIT, client.closed())
        .await
        .expect("closed in time");
}

/// Waits until the listens cover what the client wants (and `check` holds of the status).
async fn covered(client: &Client, check: impl Fn(&ListenStatus) -> bool) {
    let mut status = client.watch_listen_status();
    tokio::time::timeout(WAIT, async {
        loop {
            {
                let s = status.borrow_and_update();
                if !s.wanted.is_empty() && s.wanted.is_subset(&s.covered) && check(&s) {
                    return;
                }
            }
            status.changed().await.expect("the client is alive");
        }
    })
    .await
    .unwrap_or_else(|_| panic!("not covered in time: {:?}", client.listen_status()));
}

/// Waits for a notification matching `want` on `feed`.
async fn wait_for(feed: &mut Notifications, want: impl Fn(&ServerNotification) -> bool) {
    tokio::time::timeout(WAIT, async {
        loop {
            match feed.recv().await {
                Some(n) if want(&n.parsed) => return,
                Some(_) => {}
                None => panic!("the feed ended"),
            }
        }
    })
    .await
    .expect("the notification in time");
}

/// The open listens the server knows of (`session_info`), and how many it received.
async fn server_listens(client: &Client) -> (Vec<Value>, u64) {
    let info = mcp_tests::session_info(client).await;
    let open = info["listens"]["open"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let received = info["listens"]["received"].as_u64().unwrap_or(0);
    (open, received)
}

/// Waits until the server has exactly one open listen satisfying `check`.
async fn one_server_listen(client: &Client, check: impl Fn(&Value) -> bool) -> Value {
    tokio::time::timeout(WAIT, async {
        loop {
            let (open, _) = server_listens(client).await;
            if let [only] = open.as_slice()
                && check(only)
            {
                return only.clone();
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .unwrap_or_else(|_| {
        panic!(
            "the server's listens (client: {:?})",
            client.listen_status()
        )
    })
}

fn names_uri(listen: &Value, uri: &str) -> bool {
    listen["notifications"]["resourceSubscriptions"]
        .as_array()
        .is_some_and(|a| a.iter().any(|u| u == uri))
}

/// The scenario of both transports.
async fn scenario(client: &Client) {
    // Ready opened one listen for the list changes the server advertises.
    covered(client, |s| {
        s.covered.tools && s.covered.prompts && s.covered.resources
    })
    .await;
    one_server_listen(client, |l| l["notifications"]["toolsListChanged"] == true).await;

    // A subscribe joins the listen and is answered by the acknowledgement.
    client.subscribe(URI).await.expect("subscribe");
    assert!(client.listen_status().covered.uris.contains(URI));
    let listen = one_server_listen(client, |l| names_uri(l, URI)).await;
    assert_eq!(listen["notifications"]["toolsListChanged"], true);

    let mut feed = client.notifications();
    client
        .call_tool("touch", json!({"uri": URI}))
        .await
        .expect("touch");
    wait_for(
        &mut feed,
        |n| matches!(n, ServerNotification::ResourceUpdated { uri } if uri == URI),
    )
    .await;
    client
        .call_tool("notify_changed", json!({"list": "tools"}))
        .await
        .expect("notify_changed");
    wait_for(&mut feed, |n| {
        matches!(n, ServerNotification::ToolsListChanged)
    })
    .await;

    // A resource the server does not serve is not honored.
    let err = client.subscribe("test://nowhere").await.unwrap_err();
    assert!(
        matches!(&err, Error::SubscriptionNotHonored { uri } if uri == "test://nowhere"),
        "{err:?}"
    );

    // An unsubscribe leaves the listen: the server's one listen no longer names it.
    client.unsubscribe(URI).await.expect("unsubscribe");
    one_server_listen(client, |l| {
        !names_uri(l, URI) && l["notifications"]["toolsListChanged"] == true
    })
    .await;
    assert!(!client.listen_status().wanted.uris.contains(URI));
}

#[tokio::test]
async fn a_listen_over_stdio() {
    let client = connect(over_stdio(ECHO, &MODERN_ONLY, EraMode::Modern)).await;
    scenario(&client).await;
    finish(client).await;
}

#[tokio::test]
async fn a_listen_over_http() {
    let server = HttpServer::start(&MODERN_ONLY).await;
    let client = connect(over_http(&server.url, EraMode::Modern)).await;
    scenario(&client).await;
    finish(client).await;
}

#[tokio::test]
async fn a_server_that_serves_no_listen_refuses_the_subscribe() {
    let mut args = MODERN_ONLY.to_vec();
    args.extend(["--listen", "off"]);
    let client = connect(over_stdio(ECHO, &args, EraMode::Modern)).await;
    // Nothing advertised: nothing wanted, no listen.
    assert!(client.listen_status().wanted.is_empty());
    let err = client.subscribe(URI).await.unwrap_err();
    assert!(matches!(err, Error::Server { code: -32601, .. }), "{err:?}");
    let (open, received) = server_listens(&client).await;
    assert!(open.is_empty());
    assert_eq!(received, 1, "one listen, refused");
    finish(client).await;
}

#[tokio::test]
async fn a_listen_the_server_ends_is_opened_again() {
    let client = connect(over_stdio(ECHO, &MODERN_ONLY, EraMode::Modern)).await;
    covered(&client, |s| s.covered.tools).await;
    let (_, before) = server_listens(&client).await;
    client
        .call_tool("end_listens", json!({}))
        .await
        .expect("end_listens");
    // Reopened after about a second (the default delay), and acknowledged again.
    tokio::time::timeout(WAIT, async {
        loop {
            let (open, received) = server_listens(&client).await;
            if received > before && open.len() == 1 {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("reopened in time");
    covered(&client, |s| s.covered.tools).await;
    finish(client).await;
}

#[tokio::test]
async fn a_restarted_server_is_asked_again_for_the_subscription() {
    let client = connect(over_stdio(ECHO, &MODERN_ONLY, EraMode::Modern)).await;
    covered(&client, |s| s.covered.tools).await;
    client.subscribe(URI).await.expect("subscribe");
    // The server process exits; a new one is spawned and listened to again.
    let _ = client.call_tool("exit_after", json!({"ms": 0})).await;
    tokio::time::timeout(WAIT, async {
        loop {
            if let Ok(info) = client.call_tool("session_info", json!({})).await
                && let Some(open) = info
                    .structured_content
                    .as_ref()
                    .and_then(|s| s["listens"]["open"].as_array().cloned())
                && open.iter().any(|l| names_uri(l, URI))
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("the new server gets the subscription");
    finish(client).await;
}
