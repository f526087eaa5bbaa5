//! Interop of a group with real servers of several implementations and eras, from one
//! `mcpServers` file: `interop_group CONFIG`. The file (written by `scripts/interop`) names
//! server-everything over stdio (`everything`) and Streamable HTTP (`everything-http`), the
//! Python SDK server (`python`), a FastMCP 2026-07-28 server with tasks (`fastmcp`), the
//! memory reference server (`memory`, npm), `mcp-server-time` (`time`, PyPI) and a program
//! that does not exist (`missing`). Checks: the group starts fail-open with every real server
//! ready and the missing one retrying; colliding tool names are prefixed and route to their
//! own server; a call to each implementation; a tool-list change on one server reaches the
//! merged view; one server killed comes back while the others answer; stop reaps every child.
//! Prints one line per check and `interop group: N failed`.

use std::time::Duration;

use mcp_runtime::group::{ClientGroup, GroupConfig};
use mcp_runtime::{ConnState, Era, TaskOptions};
use serde_json::json;

struct Report {
    failures: usize,
}

impl Report {
    fn check(&mut self, what: &str, ok: bool, detail: impl std::fmt::Display) {
        if ok {
            println!("ok   {what}");
        } else {
            self.failures += 1;
            println!("FAIL {what}: {detail}");
        }
    }
}

const WAIT: Duration = Duration::from_secs(60);

fn pid_gone(pid: u32) -> bool {
    !std::path::Path::new(&format!("/proc/{pid}")).exists()
}

#[tokio::main]
async fn main() {
    let path = std::env::args()
        .nth(1)
        .expect("usage: interop_group CONFIG");
    let config = GroupConfig::load(&path).unwrap_or_else(|e| {
        println!("FAIL config: {e}");
        std::process::exit(1);
    });
    let mut report = Report { failures: 0 };
    for w in config.warnings() {
        println!("note {w}");
    }
    let started = tokio::time::Instant::now();
    let group = tokio::time::timeout(
        WAIT,
        ClientGroup::builder()
            .configure(|_, b| {
                b.client_info("mcp-interop-group", "0.1.0")
                    .wait_for_ready(true)
                    .init_timeout(Duration::from_secs(60))
                    .tasks(TaskOptions::new())
            })
            .start_config(&config),
    )
    .await
    .expect("the group starts within 60 s")
    .expect("fail-open start");
    let snapshot = group.snapshot();
    for s in &snapshot.servers {
        println!(
            "     {}: {} era={:?} tools={:?} pid={:?}",
            s.name, s.state, s.era, s.tools, s.pid
        );
    }
    let real = [
        "everything",
        "everything-http",
        "python",
        "fastmcp",
        "memory",
        "time",
    ];
    let not_ready: Vec<&str> = real
        .iter()
        .copied()
        .filter(|n| snapshot.get(n).map(|s| s.state) != Some(ConnState::Ready))
        .collect();
    report.check(
        &format!(
            "six real servers ready at once ({} ms)",
            started.elapsed().as_millis()
        ),
        not_ready.is_empty(),
        format!("not ready: {not_ready:?}"),
    );
    let missing = snapshot.get("missing");
    report.check(
        "the missing program does not stop the others, and says why",
        missing.is_some_and(|s| s.state != ConnState::Ready && s.last_error.is_some()),
        format!("{:?}", missing.map(|s| (s.state, &s.last_error))),
    );
    let eras: Vec<Option<Era>> = real
        .iter()
        .filter_map(|n| snapshot.get(n).map(|s| s.era))
        .collect();
    report.check(
        "both eras in one group",
        eras.contains(&Some(Era::Modern)) && eras.contains(&Some(Era::Legacy)),
        format!("{eras:?}"),
    );
    let view = group.view();
    let echo_servers: Vec<&str> = view
        .tools
        .iter()
        .filter(|t| t.original == "echo")
        .map(|t| &*t.server)
        .collect();
    report.check(
        "`echo` of three servers: prefixed for each, none bare",
        echo_servers.len() >= 3
            && view.tool("echo").is_none()
            && view.tool("everything__echo").is_some()
            && view.tool("python__echo").is_some(),
        format!("{echo_servers:?}"),
    );
    // A call to each implementation, routed by merged name.
    let calls = [
        ("everything__echo", json!({"message": "interop"}), "interop"),
        (
            "everything-http__echo",
            json!({"message": "over http"}),
            "over http",
        ),
        ("python__echo", json!({"message": "py"}), "py"),
        ("get_current_time", json!({"timezone": "UTC"}), "UTC"),
        ("read_graph", json!({}), "entities"),
        ("fastmcp__slow", json!({"ms": 100}), "slept"),
    ];
    for (name, args, want) in calls {
        let r = tokio::time::timeout(WAIT, group.call_tool(name, args)).await;
        let text = match &r {
            Ok(Ok(result)) => result.text(),
            Ok(Err(e)) => format!("error: {e}"),
            Err(_) => "no answer within 60 s".into(),
        };
        report.check(&format!("call {name} (routed)"), text.contains(want), &text);
    }
    // A tool-list change on one server: the view is told (the server re-lists the same tools,
    // so the change may be empty; the re-fetch is what is checked).
    let lists = group.live_lists("python").expect("python's lists");
    let fetches = lists.stats().get(mcp_runtime::ListKind::Tools).fetches;
    let _ = group.call_tool("change_tools", json!({})).await;
    let refetched = tokio::time::timeout(Duration::from_secs(10), async {
        let mut stats = lists.watch_stats();
        stats
            .wait_for(|s| s.get(mcp_runtime::ListKind::Tools).fetches > fetches)
            .await
            .is_ok()
    })
    .await
    .unwrap_or(false);
    report.check(
        "python's tools/list_changed re-fetches its tools",
        refetched,
        "no re-fetch within 10 s",
    );
    // Kill server-everything (stdio): the others keep answering; it comes back.
    let pid = group.snapshot().get("everything").and_then(|s| s.pid);
    report.check("server-everything's pid is known", pid.is_some(), "none");
    if let Some(pid) = pid {
        let _ = std::process::Command::new("kill")
            .args(["-9", &pid.to_string()])
            .status();
        let r = group
            .call_tool("python__echo", json!({"message": "still"}))
            .await;
        report.check(
            "another server answers while server-everything is down",
            r.as_ref().is_ok_and(|r| r.text().contains("still")),
            format!("{r:?}"),
        );
        let back = tokio::time::timeout(WAIT, async {
            loop {
                let s = group.snapshot();
                let s = s.get("everything");
                if s.is_some_and(|s| s.state == ConnState::Ready && s.pid != Some(pid)) {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
        .await
        .is_ok();
        let r = group
            .call_tool("everything__echo", json!({"message": "back"}))
            .await;
        report.check(
            "server-everything comes back by itself and answers",
            back && r.as_ref().is_ok_and(|r| r.text().contains("back")),
            format!("{r:?}"),
        );
    }
    let pids: Vec<u32> = group
        .snapshot()
        .servers
        .iter()
        .filter_map(|s| s.pid)
        .collect();
    tokio::time::timeout(WAIT, group.stop())
        .await
        .expect("stop within 60 s");
    let reaped = tokio::time::timeout(Duration::from_secs(10), async {
        while !pids.iter().all(|p| pid_gone(*p)) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .is_ok();
    report.check(
        &format!("stop reaps every child ({} processes)", pids.len()),
        reaped,
        format!("{pids:?}"),
    );
    println!("interop group: {} failed", report.failures);
    std::process::exit(i32::from(report.failures > 0));
}
