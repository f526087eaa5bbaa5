//! The response cache (SEP-2549) end to end: the client against the in-repo server attaching
//! `ttlMs`/`cacheScope` to its list and read results (`--cache-ttl-ms N`, `--cache-private`),
//! in the 2026-07-28 era and in the handshake era (whose servers may send the hints too), over
//! stdio and over HTTP.
//!
//! What reaches the server is read from the server itself: `session_info`'s `served` counts
//! every request per method, over every connection of the process (each modern HTTP request is
//! a connection of its own).
//!
//! Checked: a fresh entry answers without a request (each list, every page, reads); the
//! `list_changed` notifications and `resources/updated` drop what they name and nothing else;
//! an expired entry is fetched again; nothing is cached without hints, with the cache off, or
//! for a result that came through an `input_required` round; an invalid cursor drops every page
//! of its list; a private scope is cached for the client; a reconnect starts empty;
//! `clear_cache` empties it.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_runtime::{
    CacheStats, Client, ClientBuilder, EraMode, Error, Notifications, ServerNotification,
};
use mcp_tests::{over_http, over_stdio};
use serde_json::{Value, json};
use tokio::process::Child;

const ECHO: &str = env!("CARGO_BIN_EXE_test-echo-server");
const CHAOS: &str = env!("CARGO_BIN_EXE_test-chaos-server");
const MODERN: &str = "2026-07-28";
const WAIT: Duration = mcp_tests::ERA_WAIT;
/// A TTL no test outlives: an entry is fresh for the whole test unless something drops it.
const LONG_TTL: &str = "600000";

/// The echo server binary serving HTTP; killed when dropped.
struct HttpServer {
    url: String,
    _child: Child,
}

impl HttpServer {
    /// `ECHO args... --http 127.0.0.1:0`.
    async fn start(args: &[&str]) -> HttpServer {
        let mut all = args.to_vec();
        all.extend(["--http", "127.0.0.1:0"]);
        let (child, url) = mcp_tests::spawn_http(ECHO, &all).await;
        HttpServer { url, _child: child }
    }
}

async fn connect(builder: ClientBuilder) -> Client {
    builder.connect().await.expect("connects")
}

/// Stops the client and waits until it is closed.
async fn finish(client: Client) {
    client.stop().await;
    tokio::time::timeout(WAIT, client.closed())
        .await
        .expect("closed in time");
}

/// How many requests of each method the server received so far (`session_info`'s `served`).
async fn served(client: &Client) -> Value {
    mcp_tests::session_info(client).await["served"].clone()
}

/// How many requests of `method` reached the server since `before` was read.
async fn sent_since(client: &Client, before: &Value, method: &str) -> u64 {
    let now = served(client).await;
    now[method].as_u64().unwrap_or(0) - before[method].as_u64().unwrap_or(0)
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

/// Has the server send `notifications/<list>/list_changed` and waits until the client got it.
async fn list_changed(client: &Client, list: &str) {
    let mut feed = client.notifications();
    client
        .call_tool("notify_changed", json!({"list": list}))
        .await
        .expect("notify_changed");
    wait_for(&mut feed, |n| {
        matches!(
            (list, n),
            ("tools", ServerNotification::ToolsListChanged)
                | ("prompts", ServerNotification::PromptsListChanged)
                | ("resources", ServerNotification::ResourcesListChanged)
        )
    })
    .await;
}

/// Every cacheable call once: all misses.
async fn fetch_all(client: &Client) {
    client.list_all_tools().await.expect("tools");
    client.list_prompts(None).await.expect("prompts");
    client.list_resources(None).await.expect("resources");
    client
        .list_resource_templates(None)
        .await
        .expect("templates");
    client
        .read_resource("test://static/1")
        .await
        .expect("read 1");
    client
        .read_resource("test://static/2")
        .await
        .expect("read 2");
}

/// The requests per cacheable method since `before`, in [`fetch_all`]'s order.
async fn sent(client: &Client, before: &Value) -> [u64; 5] {
    let now = served(client).await;
    let n = |m: &str| now[m].as_u64().unwrap_or(0) - before[m].as_u64().unwrap_or(0);
    [
        n("tools/list"),
        n("prompts/list"),
        n("resources/list"),
        n("resources/templates/list"),
        n("resources/read"),
    ]
}

/// The scenario every era and transport goes through, against a server giving a long TTL and
/// paginating `tools/list` by 4: hits reach no server, each notification drops what it names.
/// `updates`: the server can send `resources/updated` (it keeps subscriptions: not a modern
/// HTTP one, whose every request is a new connection).
async fn scenario(client: &Client, updates: bool) {
    let pages = {
        let mut n = 1;
        let mut page = client.list_tools(None).await.expect("tools/list");
        while let Some(c) = page.next_cursor.clone() {
            page = client.list_tools(Some(c)).await.expect("a page");
            n += 1;
        }
        n
    };
    assert!(pages > 1, "the server paginates");
    client.clear_cache();
    let start = served(client).await;
    let stores = client.cache_stats().stores;
    fetch_all(client).await;
    assert_eq!(sent(client, &start).await, [pages, 1, 1, 1, 2]);
    let stats = client.cache_stats();
    let stored = pages + 5;
    assert_eq!(
        (stats.stores - stores, stats.entries as u64),
        (stored, stored),
        "{stats:?}"
    );

    // The same again: every answer from the cache, nothing sent, the same results.
    let tools = client.list_all_tools().await.expect("tools");
    let before = served(client).await;
    let hits = client.cache_stats().hits;
    fetch_all(client).await;
    assert_eq!(client.list_all_tools().await.expect("tools"), tools);
    assert_eq!(sent(client, &before).await, [0; 5]);
    assert_eq!(client.cache_stats().hits - hits, stored + pages);

    // tools/list_changed drops the tools pages only.
    let before = served(client).await;
    list_changed(client, "tools").await;
    fetch_all(client).await;
    assert_eq!(sent(client, &before).await, [pages, 0, 0, 0, 0]);
    // prompts/list_changed: the prompts page only.
    let before = served(client).await;
    list_changed(client, "prompts").await;
    fetch_all(client).await;
    assert_eq!(sent(client, &before).await, [0, 1, 0, 0, 0]);
    // resources/list_changed: resources and templates, not the reads.
    let before = served(client).await;
    list_changed(client, "resources").await;
    fetch_all(client).await;
    assert_eq!(sent(client, &before).await, [0, 0, 1, 1, 0]);

    if updates {
        // resources/updated drops that URI's read only.
        client
            .subscribe("test://static/1")
            .await
            .expect("subscribe");
        let mut feed = client.notifications();
        let before = served(client).await;
        client
            .call_tool("touch", json!({"uri": "test://static/1"}))
            .await
            .expect("touch");
        wait_for(&mut feed, |n| {
            matches!(n, ServerNotification::ResourceUpdated { uri } if uri == "test://static/1")
        })
        .await;
        fetch_all(client).await;
        assert_eq!(sent(client, &before).await, [0, 0, 0, 0, 1]);
    }
    let stats = client.cache_stats();
    assert!(stats.invalidations >= pages + 3, "{stats:?}");
    assert_eq!(stats.evictions, 0, "{stats:?}");
}

#[tokio::test]
async fn modern_over_stdio() {
    let args = [
        "--era",
        "modern",
        "--page-size",
        "4",
        "--cache-ttl-ms",
        LONG_TTL,
    ];
    let client = connect(over_stdio(ECHO, &args, EraMode::Modern)).await;
    assert_eq!(client.era(), Some(mcp_runtime::Era::Modern));
    scenario(&client, true).await;
    finish(client).await;
}

#[tokio::test]
async fn legacy_over_stdio() {
    let args = ["--page-size", "4", "--cache-ttl-ms", LONG_TTL];
    let client = connect(over_stdio(ECHO, &args, EraMode::Legacy)).await;
    assert_eq!(client.era(), Some(mcp_runtime::Era::Legacy));
    scenario(&client, true).await;
    finish(client).await;
}

#[tokio::test]
async fn modern_over_http() {
    let args = [
        "--era",
        "modern",
        "--page-size",
        "4",
        "--cache-ttl-ms",
        LONG_TTL,
    ];
    let server = HttpServer::start(&args).await;
    let client = connect(over_http(&server.url, EraMode::Modern)).await;
    assert_eq!(client.era(), Some(mcp_runtime::Era::Modern));
    scenario(&client, false).await;
    finish(client).await;
}

#[tokio::test]
async fn legacy_over_http() {
    let args = ["--page-size", "4", "--cache-ttl-ms", LONG_TTL];
    let server = HttpServer::start(&args).await;
    let client = connect(over_http(&server.url, EraMode::Legacy)).await;
    assert_eq!(client.era(), Some(mcp_runtime::Era::Legacy));
    scenario(&client, true).await;
    finish(client).await;
}

#[tokio::test]
async fn an_expired_entry_is_fetched_again_in_either_era() {
    for (mode, era) in [(EraMode::Modern, "modern"), (EraMode::Legacy, "legacy")] {
        let args = ["--era", era, "--cache-ttl-ms", "1500"];
        let client = connect(over_stdio(ECHO, &args, mode)).await;
        let before = served(&client).await;
        let first = client.list_tools(None).await.expect("tools/list");
        let read = client.read_resource("test://static/3").await.expect("read");
        // Well within 1.5 s: fresh.
        assert_eq!(client.list_tools(None).await.expect("tools/list"), first);
        assert_eq!(
            client.read_resource("test://static/3").await.expect("read"),
            read
        );
        assert_eq!(sent_since(&client, &before, "tools/list").await, 1, "{era}");
        assert_eq!(
            sent_since(&client, &before, "resources/read").await,
            1,
            "{era}"
        );
        tokio::time::sleep(Duration::from_millis(1600)).await;
        assert_eq!(client.list_tools(None).await.expect("tools/list"), first);
        client.read_resource("test://static/3").await.expect("read");
        assert_eq!(sent_since(&client, &before, "tools/list").await, 2, "{era}");
        assert_eq!(
            sent_since(&client, &before, "resources/read").await,
            2,
            "{era}"
        );
        let s = client.cache_stats();
        assert_eq!((s.hits, s.stores, s.expirations), (2, 4, 2), "{era}: {s:?}");
        finish(client).await;
    }
}

#[tokio::test]
async fn nothing_is_cached_without_hints() {
    // A legacy server without --cache-ttl-ms sends no ttlMs.
    let client = connect(over_stdio(ECHO, &[], EraMode::Legacy)).await;
    let before = served(&client).await;
    for _ in 0..2 {
        client.list_tools(None).await.expect("tools/list");
        client.read_resource("test://static/1").await.expect("read");
    }
    assert_eq!(sent_since(&client, &before, "tools/list").await, 2);
    assert_eq!(sent_since(&client, &before, "resources/read").await, 2);
    let s = client.cache_stats();
    assert_eq!(
        (s.hits, s.misses, s.stores, s.entries),
        (0, 4, 0, 0),
        "{s:?}"
    );
    // A ttlMs of 0 is not cached either.
    let client2 = connect(over_stdio(
        ECHO,
        &["--era", "modern", "--cache-ttl-ms", "0"],
        EraMode::Modern,
    ))
    .await;
    let before = served(&client2).await;
    client2.list_tools(None).await.expect("tools/list");
    client2.list_tools(None).await.expect("tools/list");
    assert_eq!(sent_since(&client2, &before, "tools/list").await, 2);
    assert_eq!(client2.cache_stats().stores, 0);
    finish(client).await;
    finish(client2).await;
}

#[tokio::test]
async fn the_cache_can_be_turned_off() {
    // The modern server's default hints (60 s, public) are ignored.
    let builder = over_stdio(ECHO, &["--era", "modern"], EraMode::Modern).response_cache(false);
    let client = connect(builder).await;
    let before = served(&client).await;
    for _ in 0..3 {
        client.list_tools(None).await.expect("tools/list");
        client.read_resource("test://static/1").await.expect("read");
    }
    assert_eq!(sent_since(&client, &before, "tools/list").await, 3);
    assert_eq!(sent_since(&client, &before, "resources/read").await, 3);
    assert_eq!(client.cache_stats(), CacheStats::default());
    finish(client).await;
}

#[tokio::test]
async fn an_invalid_cursor_drops_every_page_of_its_list() {
    for (mode, era) in [(EraMode::Modern, "modern"), (EraMode::Legacy, "legacy")] {
        let args = ["--era", era, "--page-size", "3", "--cache-ttl-ms", LONG_TTL];
        let client = connect(over_stdio(ECHO, &args, mode)).await;
        let first = client.list_tools(None).await.expect("page 1");
        let cursor = first.next_cursor.clone().expect("a second page");
        client
            .list_tools(Some(cursor.clone()))
            .await
            .expect("page 2");
        client.list_prompts(None).await.expect("prompts");
        let before = served(&client).await;
        let e = client
            .list_tools(Some("bogus".into()))
            .await
            .expect_err("an invalid cursor");
        assert!(matches!(e, Error::Server { code: -32602, .. }), "{e:?}");
        // Both pages go to the server again; the prompts page does not.
        client.list_tools(None).await.expect("page 1");
        client.list_tools(Some(cursor)).await.expect("page 2");
        client.list_prompts(None).await.expect("prompts");
        assert_eq!(sent_since(&client, &before, "tools/list").await, 3, "{era}");
        assert_eq!(
            sent_since(&client, &before, "prompts/list").await,
            0,
            "{era}"
        );
        finish(client).await;
    }
}

#[tokio::test]
async fn a_private_scope_is_cached_for_the_client() {
    let args = [
        "--era",
        "modern",
        "--cache-private",
        "--cache-ttl-ms",
        LONG_TTL,
    ];
    let client = connect(over_stdio(ECHO, &args, EraMode::Modern)).await;
    let before = served(&client).await;
    client.read_resource("test://static/2").await.expect("read");
    client.read_resource("test://static/2").await.expect("read");
    assert_eq!(sent_since(&client, &before, "resources/read").await, 1);
    assert_eq!(client.cache_stats().hits, 1);
    finish(client).await;
}

#[tokio::test]
async fn a_reconnect_starts_empty() {
    let args = ["--cache-ttl-ms", LONG_TTL];
    let client = connect(over_stdio(CHAOS, &args, EraMode::Legacy)).await;
    client.list_tools(None).await.expect("tools/list");
    client.list_tools(None).await.expect("tools/list");
    assert_eq!(client.cache_stats().hits, 1);
    // The server dies; its successor (a new process, its counts from 0) is asked again.
    let _ = client.call_tool("die", json!({})).await;
    tokio::time::timeout(WAIT, async {
        while client.cache_stats().entries > 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the cache emptied when the connection dropped");
    tokio::time::timeout(WAIT, client.ready())
        .await
        .expect("reconnected in time")
        .expect("ready");
    client.list_tools(None).await.expect("tools/list");
    assert_eq!(served(&client).await["tools/list"], 1);
    finish(client).await;
}

#[tokio::test]
async fn clear_cache_empties_it() {
    let args = ["--era", "modern", "--cache-ttl-ms", LONG_TTL];
    let client = connect(over_stdio(ECHO, &args, EraMode::Modern)).await;
    let before = served(&client).await;
    client.list_prompts(None).await.expect("prompts");
    client.list_prompts(None).await.expect("prompts");
    client.clear_cache();
    assert_eq!(client.cache_stats().entries, 0);
    client.list_prompts(None).await.expect("prompts");
    assert_eq!(sent_since(&client, &before, "prompts/list").await, 2);
    let s = client.cache_stats();
    assert_eq!((s.hits, s.stores, s.invalidations), (1, 2, 1), "{s:?}");
    finish(client).await;
}

/// A result that came through an `input_required` round (its last request carried
/// `requestState`, which is not part of the key) is never stored; a plain read is.
#[tokio::test]
async fn a_read_answered_after_an_input_round_is_not_cached() {
    let log: Arc<Mutex<Vec<Value>>> = Arc::default();
    let seen = Arc::clone(&log);
    let builder = mcp_tests::scripted(move |_, msg| {
        if msg.is_null() {
            return None;
        }
        seen.lock().unwrap().push(msg.clone());
        let id = &msg["id"];
        let params = &msg["params"];
        let result = match msg["method"].as_str() {
            Some("server/discover") => json!({"resultType": "complete",
                "supportedVersions": [MODERN], "capabilities": {"resources": {}},
                "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "scripted", "version": "1"}}}),
            Some("resources/read")
                if params["uri"] == "test://gated" && params.get("requestState").is_none() =>
            {
                json!({"resultType": "input_required", "requestState": "round-1"})
            }
            Some("resources/read") => json!({"resultType": "complete",
                "contents": [{"uri": params["uri"], "text": "body"}],
                "ttlMs": 600_000, "cacheScope": "public"}),
            _ => return Some(vec![]),
        };
        Some(vec![json!({"jsonrpc": "2.0", "id": id, "result": result})])
    })
    .era(EraMode::Modern)
    .connect_timeout(WAIT)
    .request_timeout(WAIT);
    let client = connect(builder).await;
    let reads = |uri: &str| {
        log.lock()
            .unwrap()
            .iter()
            .filter(|m| m["method"] == "resources/read" && m["params"]["uri"] == uri)
            .count()
    };
    for _ in 0..2 {
        let r = client
            .read_resource("test://gated")
            .await
            .expect("gated read");
        assert_eq!(r.contents.len(), 1);
    }
    // Two calls, two rounds each: nothing answered from the cache.
    assert_eq!(reads("test://gated"), 4);
    assert_eq!(client.cache_stats().stores, 0);
    for _ in 0..2 {
        client
            .read_resource("test://open")
            .await
            .expect("open read");
    }
    assert_eq!(reads("test://open"), 1);
    let s = client.cache_stats();
    assert_eq!((s.stores, s.hits), (1, 1), "{s:?}");
    finish(client).await;
}
