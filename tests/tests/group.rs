//! A group of servers as real child processes (the in-repo echo and chaos servers over stdio,
//! and a scripted server whose tool list changes): fail-open and fail-closed starts, the
//! collision rule and routing, a killed server coming back, a burst of `list_changed` as one
//! re-fetch, removal and stop reaping every child, a settings reload changing only what
//! changed, server requests and notifications tagged with their server; and live lists on a
//! single client.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use mcp_runtime::group::{GroupHandler, Naming};
use mcp_runtime::{
    ClientBuilder, ClientGroup, ConnState, Error, Failure, GroupError, HandlerFuture, ListKind,
    ListRootsResult, LiveListOptions, Provides, RequestContext, Root, ServerNotification,
};
use mcp_tests::{initialize_result, pid_gone, session_info, stdio};
use serde_json::{Value, json};

const ECHO: &str = env!("CARGO_BIN_EXE_test-echo-server");
const CHAOS: &str = env!("CARGO_BIN_EXE_test-chaos-server");

/// The bound on every wait of these tests (none should come near it).
const WAIT: Duration = Duration::from_secs(20);

async fn within<T>(what: &str, f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(WAIT, f)
        .await
        .unwrap_or_else(|_| panic!("{what}: not within {WAIT:?}"))
}

/// A server binary over stdio, reconnecting fast.
fn server(binary: &str, args: &[&str]) -> ClientBuilder {
    stdio(binary, args)
        .connect_timeout(Duration::from_secs(10))
        .backoff(Duration::from_millis(50), Duration::from_millis(200), 0)
}

fn echo() -> ClientBuilder {
    server(ECHO, &[])
}

/// A server whose program does not exist.
fn missing() -> ClientBuilder {
    ClientBuilder::stdio("/nonexistent/mcp-group-test-server", ["--stdio"]).backoff(
        Duration::from_millis(20),
        Duration::from_millis(50),
        0,
    )
}

async fn pid_of(group: &ClientGroup, server: &str) -> u32 {
    let client = group.client(server).expect("a member");
    u32::try_from(session_info(&client).await["pid"].as_u64().unwrap()).unwrap()
}

fn kill(pid: u32) {
    use nix::sys::signal::{Signal, kill};
    use nix::unistd::Pid;
    kill(Pid::from_raw(i32::try_from(pid).unwrap()), Signal::SIGKILL).expect("kill");
}

/// A file for a server's `--pid-file`, empty.
fn pid_file(test: &str) -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!("mcp-group-{test}-{}", std::process::id()));
    let _ = std::fs::remove_file(&path);
    path
}

fn pids_in(path: &std::path::Path) -> Vec<u32> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| l.parse().unwrap())
        .collect()
}

/// A scripted server whose tools are `tool_v{N}`, `bump` and `echo`: `bump {notifications}`
/// moves to the next version and sends that many `tools/list_changed` before its answer. Its
/// `tools/list` pages carry a long `ttlMs` (the response cache keeps them). The counter is the
/// number of `tools/list` requests it answered.
fn dynamic() -> (ClientBuilder, Arc<AtomicUsize>) {
    let version = Arc::new(AtomicU64::new(1));
    let lists = Arc::new(AtomicUsize::new(0));
    let answered = Arc::clone(&lists);
    let builder = mcp_tests::scripted(move |_, msg| {
        let id = msg.get("id").cloned().unwrap_or(Value::Null);
        let result = |result: Value| json!({"jsonrpc": "2.0", "id": id, "result": result});
        let text = |t: String| result(json!({"content": [{"type": "text", "text": t}]}));
        Some(match msg["method"].as_str() {
            Some("initialize") => vec![initialize_result(
                &id,
                "2025-06-18",
                json!({"tools": {"listChanged": true}}),
                "dynamic",
            )],
            Some("tools/list") => {
                lists.fetch_add(1, Ordering::SeqCst);
                let v = version.load(Ordering::SeqCst);
                let tool = |name: String| json!({"name": name, "inputSchema": {"type": "object"}});
                vec![result(json!({
                    "tools": [tool(format!("tool_v{v}")), tool("bump".into()), tool("echo".into())],
                    "ttlMs": 60_000,
                }))]
            }
            Some("tools/call") => match msg["params"]["name"].as_str() {
                Some("bump") => {
                    let n = msg["params"]["arguments"]["notifications"]
                        .as_u64()
                        .unwrap_or(1);
                    version.fetch_add(1, Ordering::SeqCst);
                    let mut out: Vec<Value> = (0..n)
                        .map(|_| json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}))
                        .collect();
                    out.push(text("bumped".into()));
                    out
                }
                Some(name) => vec![text(format!("{name} v{}", version.load(Ordering::SeqCst)))],
                None => vec![],
            },
            _ => vec![],
        })
    });
    (builder, answered)
}

#[tokio::test]
async fn fail_open_keeps_the_others_answering_and_the_missing_one_retrying() {
    let group = within(
        "start",
        ClientGroup::builder()
            .server("one", echo())
            .server("two", echo())
            .server("missing", missing())
            .start(),
    )
    .await
    .expect("fail-open: the start succeeds");
    let mut transitions = group.transitions();
    let snapshot = group.snapshot();
    assert_eq!(snapshot.ready(), 2, "{snapshot:?}");
    let down = snapshot.get("missing").unwrap();
    assert_ne!(down.state, ConnState::Ready);
    assert!(
        matches!(&down.last_error, Some(Failure::Transport(t)) if t.is_permanent()),
        "{down:?}"
    );
    assert!(snapshot.get("one").unwrap().tools.is_some_and(|n| n > 0));
    assert_eq!(down.tools, None, "never connected: no list");
    // Both echo servers list the same tools: every one is prefixed; nothing from the missing.
    let view = group.view();
    assert!(view.tool("one__echo").is_some() && view.tool("two__echo").is_some());
    assert!(view.tool("echo").is_none());
    assert!(view.tools.iter().all(|t| &*t.server != "missing"));
    let answer = group
        .call_tool("two__echo", json!({"message": "hi"}))
        .await
        .unwrap();
    assert_eq!(answer.text(), "Echo: hi");
    // The missing one keeps retrying under its own backoff.
    within("a retry of the missing server", async {
        loop {
            let t = transitions.recv().await.expect("the group runs");
            if &*t.server == "missing" && t.transition.from() == ConnState::Backoff {
                break;
            }
        }
    })
    .await;
    let err = group
        .call_tool_on("missing", "echo", json!({"message": "x"}))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, GroupError::Server { server, source: Error::Unavailable { .. } } if server == "missing"),
        "{err:?}"
    );
    within("stop", group.stop()).await;
}

#[tokio::test]
async fn fail_closed_names_every_server_that_failed_and_reaps_the_one_that_started() {
    let pids = pid_file("fail-closed");
    let err = within(
        "start",
        ClientGroup::builder()
            .fail_closed()
            .server(
                "good",
                server(ECHO, &["--pid-file", pids.to_str().unwrap()]),
            )
            .server("gone1", missing())
            .server("gone2", missing())
            .start(),
    )
    .await
    .expect_err("fail-closed: the start fails");
    let GroupError::Start { failures } = &err else {
        panic!("{err:?}");
    };
    let mut names: Vec<&str> = failures.iter().map(|f| f.server.as_str()).collect();
    names.sort_unstable();
    assert_eq!(names, ["gone1", "gone2"]);
    assert!(
        failures
            .iter()
            .all(|f| matches!(&f.cause, Failure::Transport(t) if t.is_permanent()))
    );
    let message = err.to_string();
    assert!(
        message.contains("gone1") && message.contains("gone2") && !message.contains("good"),
        "{message}"
    );
    // Servers are named by their name in the group, not by their command line.
    assert!(!message.contains("/nonexistent"), "{message}");
    // The server that did start was stopped and reaped before the error.
    let started = pids_in(&pids);
    assert_eq!(started.len(), 1);
    assert!(pid_gone(started[0]), "{started:?} still there");
    let _ = std::fs::remove_file(&pids);
}

#[tokio::test]
async fn colliding_tools_are_prefixed_and_calls_route_to_their_own_server() {
    let group = within(
        "start",
        ClientGroup::builder()
            .server("left", echo())
            .server("right", server(CHAOS, &[]))
            .start(),
    )
    .await
    .unwrap();
    let view = group.view();
    // Listed by both: prefixed for both; listed by the chaos server only: bare.
    let left = view.tool("left__echo").expect("left__echo");
    assert_eq!((&*left.server, left.original.as_str()), ("left", "echo"));
    assert!(view.tool("right__echo").is_some() && view.tool("echo").is_none());
    let die = view
        .tool("die")
        .expect("a tool only the chaos server lists stays bare");
    assert_eq!(&*die.server, "right");
    assert!(view.tool("left__die").is_none());
    // Each merged name reaches its own server's process.
    let left_pid = pid_of(&group, "left").await;
    let right_pid = pid_of(&group, "right").await;
    assert_ne!(left_pid, right_pid);
    for (name, pid) in [
        ("left__session_info", left_pid),
        ("right__session_info", right_pid),
    ] {
        let info = group.call_tool(name, json!({})).await.unwrap();
        assert_eq!(
            info.structured_content.unwrap()["pid"],
            json!(pid),
            "{name}"
        );
    }
    let echoed = group
        .call_tool("right__echo", json!({"message": "routed"}))
        .await
        .unwrap();
    assert_eq!(echoed.text(), "Echo: routed");
    let unknown = group.call_tool("echo", json!({})).await.unwrap_err();
    assert!(
        matches!(&unknown, GroupError::UnknownTool { name } if name == "echo"),
        "{unknown:?}"
    );
    let snapshot = group.snapshot();
    assert_eq!(snapshot.get("left").unwrap().calls, 1);
    assert_eq!(snapshot.get("right").unwrap().calls, 2);
    within("stop", group.stop()).await;
}

#[tokio::test]
async fn always_prefix_and_a_rename_hook_route_by_the_names_they_give() {
    let group = within(
        "start",
        ClientGroup::builder()
            .server("a", echo())
            .server("b", server(CHAOS, &[]))
            .naming(Naming::AlwaysPrefix)
            .separator("-")
            .start(),
    )
    .await
    .unwrap();
    let view = group.view();
    assert!(
        view.tools
            .iter()
            .all(|t| t.name == format!("{}-{}", t.server, t.original))
    );
    assert!(view.tool("b-die").is_some() && view.tool("die").is_none());
    let echoed = group
        .call_tool("a-echo", json!({"message": "x"}))
        .await
        .unwrap();
    assert_eq!(echoed.text(), "Echo: x");
    within("stop", group.stop()).await;
    // A hook that gives both servers' `echo` the same name: both prefixed, none dropped.
    let group = within(
        "start",
        ClientGroup::builder()
            .server("a", echo())
            .server("b", echo())
            .rename(|_, tool| {
                if tool == "echo" {
                    "say".into()
                } else {
                    format!("x_{tool}")
                }
            })
            .start(),
    )
    .await
    .unwrap();
    let view = group.view();
    assert!(view.tool("a__say").is_some() && view.tool("b__say").is_some());
    assert!(view.tool("say").is_none());
    let said = group
        .call_tool("b__say", json!({"message": "y"}))
        .await
        .unwrap();
    assert_eq!(said.text(), "Echo: y");
    within("stop", group.stop()).await;
}

#[tokio::test]
async fn a_killed_server_comes_back_with_its_tools_while_the_other_keeps_answering() {
    let group = within(
        "start",
        ClientGroup::builder()
            .server("steady", echo())
            .server(
                "crashy",
                server(CHAOS, &[]).backoff(Duration::from_millis(500), Duration::from_secs(1), 0),
            )
            .start(),
    )
    .await
    .unwrap();
    let mut transitions = group.transitions();
    let mut changes = group.changes();
    let crashy_live = group.live_lists("crashy").unwrap();
    assert_eq!(crashy_live.stats().get(ListKind::Tools).fetches, 1);
    let tools_before: Vec<String> = group.view().tools.iter().map(|t| t.name.clone()).collect();
    let pid = pid_of(&group, "crashy").await;
    kill(pid);
    within("crashy in backoff", async {
        loop {
            let t = transitions.recv().await.expect("the group runs");
            if &*t.server == "crashy" && t.transition.to() == ConnState::Backoff {
                break;
            }
        }
    })
    .await;
    // Down: the other answers, the dead one's calls fail typed, its tools stay listed.
    let echoed = group
        .call_tool("steady__echo", json!({"message": "still here"}))
        .await
        .unwrap();
    assert_eq!(echoed.text(), "Echo: still here");
    let down = group.call_tool("die", json!({})).await.unwrap_err();
    assert!(
        matches!(
            &down,
            GroupError::Server {
                source: Error::Unavailable { .. },
                ..
            }
        ),
        "{down:?}"
    );
    assert!(group.view().tool("die").is_some());
    // Back by itself: ready again, its tools fetched again, its calls answered.
    within("crashy ready again", async {
        loop {
            let t = transitions.recv().await.expect("the group runs");
            if &*t.server == "crashy" && t.transition.to() == ConnState::Ready {
                break;
            }
        }
    })
    .await;
    within(
        "crashy's tools fetched again",
        crashy_live
            .watch_stats()
            .wait_for(|s| s.get(ListKind::Tools).fetches == 2 && s.idle()),
    )
    .await
    .unwrap();
    let names: Vec<String> = group.view().tools.iter().map(|t| t.name.clone()).collect();
    assert_eq!(names, tools_before);
    // The same tools after the reconnect: not a change.
    assert!(changes.try_recv().is_none());
    let new_pid = pid_of(&group, "crashy").await;
    assert_ne!(new_pid, pid);
    assert!(pid_gone(pid), "the killed child was reaped");
    let snapshot = group.snapshot();
    assert_eq!(snapshot.get("crashy").unwrap().reconnects, 1);
    assert_eq!(snapshot.get("steady").unwrap().reconnects, 0);
    assert_eq!(snapshot.get("crashy").unwrap().errors, 1);
    within("stop", group.stop()).await;
    assert!(pid_gone(new_pid));
}

#[tokio::test]
async fn a_burst_of_list_changed_is_one_refetch_and_one_change_of_the_view() {
    let (dynamic, lists) = dynamic();
    let group = within(
        "start",
        ClientGroup::builder()
            .server("dyn", dynamic)
            .server("echo", echo())
            .start(),
    )
    .await
    .unwrap();
    let view = group.view();
    assert_eq!(&*view.tool("tool_v1").expect("bare").server, "dyn");
    assert!(view.tool("dyn__echo").is_some() && view.tool("echo__echo").is_some());
    let mut changes = group.changes();
    let mut views = group.watch_view();
    let live = group.live_lists("dyn").unwrap();
    let before = lists.load(Ordering::SeqCst);
    let bumped = group
        .call_tool("bump", json!({"notifications": 5}))
        .await
        .unwrap();
    assert_eq!(bumped.text(), "bumped");
    within(
        "the new tool in the view",
        views.wait_for(|v| v.tool("tool_v2").is_some()),
    )
    .await
    .unwrap();
    within(
        "the five notifications seen and nothing pending",
        live.watch_stats()
            .wait_for(|s| s.get(ListKind::Tools).signals == 5 && s.idle()),
    )
    .await
    .unwrap();
    assert_eq!(
        lists.load(Ordering::SeqCst) - before,
        1,
        "one tools/list for a burst of five (and none answered from the cache)"
    );
    let change = changes.try_recv().expect("one change");
    assert_eq!(change.kind, ListKind::Tools);
    let named = |items: &[mcp_runtime::group::ChangedItem]| {
        items
            .iter()
            .map(|i| (i.server.to_string(), i.name.clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(named(&change.added), [("dyn".into(), "tool_v2".into())]);
    assert_eq!(named(&change.removed), [("dyn".into(), "tool_v1".into())]);
    assert!(change.changed.is_empty());
    assert!(changes.try_recv().is_none(), "exactly one change");
    // The other server was not asked again.
    let echo_live = group.live_lists("echo").unwrap();
    assert_eq!(echo_live.stats().get(ListKind::Tools).fetches, 1);
    let called = group.call_tool("tool_v2", json!({})).await.unwrap();
    assert_eq!(called.text(), "tool_v2 v2");
    within("stop", group.stop()).await;
}

#[tokio::test]
async fn remove_reaps_the_child_and_its_tools_leave_the_view() {
    let group = within(
        "start",
        ClientGroup::builder()
            .server("a", echo())
            .server("b", echo())
            .start(),
    )
    .await
    .unwrap();
    let pid = pid_of(&group, "b").await;
    let mut changes = group.changes();
    within("remove", group.remove("b")).await.unwrap();
    assert!(pid_gone(pid), "the removed server's child {pid} is reaped");
    assert_eq!(group.names(), ["a"]);
    // No collision any more: a's tools are bare again.
    let view = group.view();
    assert_eq!(&*view.tool("echo").expect("bare").server, "a");
    assert!(view.tools.iter().all(|t| &*t.server == "a"));
    let change = changes.try_recv().expect("the removal is a change");
    assert!(
        change
            .removed
            .iter()
            .any(|i| &*i.server == "b" && i.name == "b__echo")
    );
    assert!(matches!(
        group.call_tool("b__echo", json!({})).await,
        Err(GroupError::UnknownTool { .. })
    ));
    assert!(matches!(
        group.call_tool_on("b", "echo", json!({})).await,
        Err(GroupError::UnknownServer { .. })
    ));
    assert!(matches!(
        group.remove("b").await,
        Err(GroupError::UnknownServer { .. })
    ));
    within("stop", group.stop()).await;
}

#[tokio::test]
async fn stop_stops_every_server_and_reaps_every_child() {
    let group = within(
        "start",
        ClientGroup::builder()
            .server("a", echo())
            .server("b", echo())
            .server("c", server(CHAOS, &[]))
            .start(),
    )
    .await
    .unwrap();
    let mut pids = Vec::new();
    for name in ["a", "b", "c"] {
        pids.push(pid_of(&group, name).await);
    }
    let mut notifications = group.notifications();
    within("stop", group.stop()).await;
    for pid in &pids {
        assert!(pid_gone(*pid), "child {pid} not reaped");
    }
    assert!(
        within("the feed's end", notifications.recv())
            .await
            .is_none(),
        "the feed ends"
    );
    assert!(matches!(
        group.add("d", echo()).await,
        Err(GroupError::Stopped)
    ));
    assert!(
        group
            .call_tool("a__echo", json!({"message": "x"}))
            .await
            .is_err()
    );
    within("a second stop", group.stop()).await;
}

#[tokio::test]
async fn apply_changes_only_the_servers_whose_entry_changed() {
    let group = within("start", ClientGroup::builder().start())
        .await
        .unwrap();
    let entry = |name: &str, version: u32| (name.to_owned(), version, echo());
    let applied = within(
        "first apply",
        group.apply_builders([entry("a", 1), entry("b", 1)]),
    )
    .await
    .unwrap();
    assert_eq!(applied.added, ["a", "b"]);
    let a_pid = pid_of(&group, "a").await;
    let b_pid = pid_of(&group, "b").await;
    let applied = within(
        "second apply",
        group.apply_builders([entry("a", 1), entry("b", 2), entry("c", 1)]),
    )
    .await
    .unwrap();
    assert_eq!(
        (applied.unchanged, applied.replaced, applied.added),
        (
            vec!["a".to_owned()],
            vec!["b".to_owned()],
            vec!["c".to_owned()]
        )
    );
    assert_eq!(
        pid_of(&group, "a").await,
        a_pid,
        "an equal entry is left running"
    );
    assert_ne!(
        pid_of(&group, "b").await,
        b_pid,
        "a changed entry is restarted"
    );
    assert!(pid_gone(b_pid), "the replaced server's child is reaped");
    let c_pid = pid_of(&group, "c").await;
    let applied = within("third apply", group.apply_builders([entry("a", 1)]))
        .await
        .unwrap();
    let mut removed = applied.removed.clone();
    removed.sort();
    assert_eq!(removed, ["b", "c"]);
    assert!(pid_gone(c_pid));
    assert_eq!(group.names(), ["a"]);
    assert!(matches!(
        group.apply_builders([entry("a", 1), entry("a", 2)]).await,
        Err(GroupError::DuplicateServer { .. })
    ));
    within("stop", group.stop()).await;
}

/// Answers `roots/list` with one root naming the server that asks.
struct RootsPerServer;

impl GroupHandler for RootsPerServer {
    fn provides(&self, _server: &str) -> Provides {
        Provides {
            roots: true,
            ..Provides::default()
        }
    }

    fn list_roots(&self, server: &str, _cx: RequestContext) -> HandlerFuture<ListRootsResult> {
        let roots = vec![Root::new(format!("file:///{server}"))];
        Box::pin(async move {
            Ok(ListRootsResult {
                roots,
                extra: Default::default(),
            })
        })
    }
}

#[tokio::test]
async fn server_requests_and_notifications_reach_the_host_tagged_with_their_server() {
    let group = within(
        "start",
        ClientGroup::builder()
            .server("a", echo())
            .server("b", echo())
            .handler(RootsPerServer)
            .start(),
    )
    .await
    .unwrap();
    for server in ["a", "b"] {
        // The server's `roots` tool asks the client for its roots.
        let listed = group
            .call_tool(&format!("{server}__roots"), json!({}))
            .await
            .unwrap();
        assert_eq!(
            listed.structured_content.unwrap()["roots"][0]["uri"],
            json!(format!("file:///{server}"))
        );
    }
    let mut notifications = group.notifications();
    group
        .call_tool_on("b", "notify_changed", json!({"list": "prompts"}))
        .await
        .unwrap();
    let n = within("the notification", notifications.recv())
        .await
        .expect("the group runs");
    assert_eq!(&*n.server, "b");
    assert_eq!(
        n.notification.parsed,
        ServerNotification::PromptsListChanged
    );
    within("stop", group.stop()).await;
}

#[tokio::test]
async fn live_lists_on_a_single_client_follow_list_changed_past_the_cache() {
    let (builder, lists) = dynamic();
    let client = within("connect", builder.connect()).await.unwrap();
    let live = client.live_lists();
    within("the first fetch", live.fetched_once()).await;
    let names = |l: &mcp_runtime::Lists| -> Vec<String> {
        l.tools
            .as_deref()
            .unwrap_or(&[])
            .iter()
            .map(|t| t.name.clone())
            .collect()
    };
    assert_eq!(names(&live.lists()), ["tool_v1", "bump", "echo"]);
    assert_eq!(
        live.lists().prompts.as_deref().map(<[_]>::len),
        Some(0),
        "not offered: empty"
    );
    let mut changes = live.changes();
    client
        .call_tool("bump", json!({"notifications": 3}))
        .await
        .unwrap();
    let change = within("the change", changes.recv()).await.expect("running");
    assert_eq!(change.kind, ListKind::Tools);
    assert_eq!(change.added, ["tool_v2"]);
    assert_eq!(change.removed, ["tool_v1"]);
    assert!(change.changed.is_empty());
    assert_eq!(names(&live.lists()), ["tool_v2", "bump", "echo"]);
    // The first page was cached for a minute: the re-fetch went to the server anyway.
    assert_eq!(lists.load(Ordering::SeqCst), 2);
    assert!(client.cache_stats().invalidations >= 1);
    client.stop().await;
    assert!(
        within("the change feed's end", changes.recv())
            .await
            .is_none(),
        "the feed ends with the client"
    );
}

#[tokio::test]
async fn live_lists_coalesce_a_burst_from_a_real_server_and_refetch_after_a_reconnect() {
    let client = within("connect", server(CHAOS, &[]).connect())
        .await
        .unwrap();
    let live = client.live_lists_with(LiveListOptions::new().debounce(Duration::from_millis(300)));
    within("the first fetch", live.fetched_once()).await;
    let mut stats = live.watch_stats();
    let mut changes = live.changes();
    // Five `tools/list_changed` at once.
    let mut calls = tokio::task::JoinSet::new();
    for _ in 0..5 {
        let c = client.clone();
        calls.spawn(async move { c.call_tool("notify_changed", json!({})).await });
    }
    while let Some(done) = calls.join_next().await {
        done.unwrap().unwrap();
    }
    within(
        "the burst seen and fetched",
        stats.wait_for(|s| s.get(ListKind::Tools).signals == 5 && s.idle()),
    )
    .await
    .unwrap();
    assert_eq!(
        live.stats().get(ListKind::Tools).fetches,
        2,
        "one re-fetch for five"
    );
    // A reconnect fetches every list again.
    let pid = u32::try_from(session_info(&client).await["pid"].as_u64().unwrap()).unwrap();
    kill(pid);
    within(
        "the lists fetched after the reconnect",
        stats.wait_for(|s| s.readies == 2 && s.get(ListKind::Tools).fetches == 3 && s.idle()),
    )
    .await
    .unwrap();
    assert_eq!(live.stats().get(ListKind::Prompts).fetches, 2);
    // The same lists: no change was published.
    assert!(changes.try_recv().is_none());
    client.stop().await;
}

#[tokio::test]
async fn resources_route_by_listing_or_template_and_prompts_by_their_merged_name() {
    let (dynamic, _) = dynamic();
    let group = within(
        "start",
        ClientGroup::builder()
            .server("files", echo())
            .server("dyn", dynamic)
            .start(),
    )
    .await
    .unwrap();
    // Only the echo server lists resources and templates, and prompts.
    let listed = group.read_resource("test://static/1").await.unwrap();
    assert_eq!(
        listed.contents[0].text.as_deref(),
        Some("Static resource 1")
    );
    let templated = group.read_resource("test://dynamic/7").await.unwrap();
    assert!(!templated.contents.is_empty());
    assert!(matches!(
        group.read_resource("nope://x").await,
        Err(GroupError::UnknownResource { .. })
    ));
    let prompt = group
        .get_prompt("greeting", json!({"name": "Ada"}))
        .await
        .unwrap();
    assert_eq!(prompt.messages[0].content.as_text(), Some("Hello, Ada!"));
    assert!(matches!(
        group.get_prompt("nope", json!({})).await,
        Err(GroupError::UnknownPrompt { .. })
    ));
    // A second server listing the same URIs: reading one needs the server named.
    within("add", group.add("more", echo())).await.unwrap();
    let err = group.read_resource("test://static/1").await.unwrap_err();
    let GroupError::AmbiguousResource { servers, .. } = &err else {
        panic!("{err:?}");
    };
    assert_eq!(servers, &["files".to_owned(), "more".to_owned()]);
    let on = group
        .read_resource_on("more", "test://static/1")
        .await
        .unwrap();
    assert_eq!(on.contents[0].text.as_deref(), Some("Static resource 1"));
    // Prompts collide now too: prefixed, and routed.
    assert!(group.view().prompt("greeting").is_none());
    let prompt = group
        .get_prompt("more__greeting", json!({"name": "Bo"}))
        .await
        .unwrap();
    assert_eq!(prompt.messages[0].content.as_text(), Some("Hello, Bo!"));
    assert_eq!(group.snapshot().get("more").unwrap().calls, 2);
    within("stop", group.stop()).await;
}

#[tokio::test]
async fn a_handler_built_per_server_answers_that_server() {
    use mcp_runtime::{Handlers, Roots};
    let group = within(
        "start",
        ClientGroup::builder()
            .server("a", echo())
            .server("b", echo())
            .handler_for(|server| {
                Handlers::new().roots(Roots::new([Root::new(format!("file:///{server}"))]))
            })
            .configure(|server, builder| builder.client_info(format!("host-for-{server}"), "1"))
            .start(),
    )
    .await
    .unwrap();
    let listed = group.call_tool("b__roots", json!({})).await.unwrap();
    assert_eq!(
        listed.structured_content.unwrap()["roots"][0]["uri"],
        json!("file:///b")
    );
    // The configure hook ran for each server.
    let info = session_info(&group.client("a").unwrap()).await;
    assert!(info.to_string().contains("host-for-a"), "{info}");
    within("stop", group.stop()).await;
}

#[tokio::test]
async fn live_lists_end_with_a_client_that_never_connected() {
    let client = missing().connect_lazy();
    let live = client.live_lists();
    let waiting = {
        let live = live.clone();
        tokio::spawn(async move { live.fetched_once().await })
    };
    let mut changes = live.changes();
    client.stop().await;
    within("fetched_once returns once the client stopped", waiting)
        .await
        .unwrap();
    assert!(
        within("the change feed's end", changes.recv())
            .await
            .is_none()
    );
    assert_eq!(live.lists(), mcp_runtime::Lists::default());
    assert_eq!(live.stats().get(ListKind::Tools).fetches, 0);
}

/// A Claude Desktop file naming the echo and chaos servers, a disabled one and a missing
/// program; `extra` goes into the echo server's env (to make its entry differ).
fn desktop_config(extra: &str) -> String {
    format!(
        r#"{{
  "mcpServers": {{
    "echo": {{"command": "${{ECHO_BIN}}", "env": {{"MARK": "{extra}"}}, "tools": {{"deny": ["notify_*"]}}}},
    "chaos": {{"command": "{CHAOS}", "timeout": 20000}},
    "off": {{"command": "{ECHO}", "disabled": true}},
    "missing": {{"command": "/nonexistent/mcp-server-{extra}"}}
  }}
}}"#
    )
}

#[tokio::test]
async fn a_group_from_a_desktop_config_starts_the_enabled_servers_and_a_reload_changes_only_what_changed()
 {
    use mcp_runtime::group::GroupConfig;
    let env = |name: &str| (name == "ECHO_BIN").then(|| ECHO.to_owned());
    let config = GroupConfig::parse_with_env(&desktop_config("a"), "desktop.json", env).unwrap();
    let group = within(
        "start",
        ClientGroup::builder()
            .configure(|_, b| b.wait_for_ready(true))
            .start_config(&config),
    )
    .await
    .unwrap();
    let mut names = group.names();
    names.sort();
    assert_eq!(
        names,
        ["chaos", "echo", "missing"],
        "the disabled one is not started"
    );
    let snapshot = group.snapshot();
    let echo_pid = snapshot
        .get("echo")
        .and_then(|s| s.pid)
        .expect("echo's pid");
    assert_eq!(
        snapshot.get("echo").map(|s| s.state),
        Some(ConnState::Ready)
    );
    assert_ne!(
        snapshot.get("missing").map(|s| s.state),
        Some(ConnState::Ready)
    );
    // Routed, waiting for ready when needed; the missing program is turned away at once.
    let r = within(
        "call",
        group.call_tool_on("echo", "echo", json!({"message": "hi"})),
    )
    .await
    .unwrap();
    assert_eq!(r.text(), "Echo: hi");
    // The entry's `tools.deny` leaves its tools out of the view, and the group refuses them.
    let view = group.view();
    assert!(view.tools.iter().any(|t| &*t.server == "echo"));
    assert!(
        !view
            .tools
            .iter()
            .any(|t| &*t.server == "echo" && t.original.starts_with("notify_")),
        "a denied tool is in the view"
    );
    let refused = group
        .call_tool_on("echo", "notify_changed", json!({"list": "tools"}))
        .await
        .unwrap_err();
    assert!(
        matches!(&refused, GroupError::ToolNotAllowed { server, tool } if server == "echo" && tool == "notify_changed"),
        "{refused:?}"
    );
    // The same file again changes nothing.
    let applied = within("apply", group.apply(&config)).await.unwrap();
    assert_eq!(applied.unchanged.len(), 3, "{applied:?}");
    assert!(applied.replaced.is_empty() && applied.added.is_empty());
    // A changed env restarts echo (and the renamed missing program), nothing else.
    let changed = GroupConfig::parse_with_env(&desktop_config("b"), "desktop.json", env).unwrap();
    let applied = within("apply", group.apply(&changed)).await.unwrap();
    let mut replaced = applied.replaced.clone();
    replaced.sort();
    assert_eq!(replaced, ["echo", "missing"], "{applied:?}");
    assert_eq!(applied.unchanged, ["chaos"]);
    let r = within(
        "call",
        group.call_tool_on("echo", "echo", json!({"message": "again"})),
    )
    .await
    .unwrap();
    assert_eq!(r.text(), "Echo: again");
    assert_ne!(
        group.snapshot().get("echo").and_then(|s| s.pid),
        Some(echo_pid)
    );
    assert!(mcp_tests::eventually(WAIT, || pid_gone(echo_pid)).await);
    within("stop", group.stop()).await;
}
