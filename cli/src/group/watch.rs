//! `watch` across a group, until Ctrl-C: every server's notifications and connection
//! transitions, and the merged lists' changes, each line tagged `[server]` (one JSON document a
//! line with `--json`). `--level` and `--subscribe` are asked of the servers in the background:
//! a server that is away answers when it is back (or its call times out), and its failure is a
//! line on stderr, not the end of the watch.

use mcp_runtime::ClientGroup;
use mcp_runtime::group::{ChangedItem, GroupChange, GroupNotification, GroupTransition};
use serde_json::json;
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::args::WatchArgs;
use crate::commands::{after_signal, notification_line, stamp};
use crate::error::{CliError, Exit};
use crate::sanitize::out_exact;
use crate::signals::Interrupt;

/// What a background request of the watch said: its server, what it asked, how it ended.
type Asked = (String, String, mcp_runtime::Result<()>);

/// Asks `--level` of every server and `--subscribe URI` of the server(s) listing the URI.
fn ask(group: &ClientGroup, w: &WatchArgs) -> Result<JoinSet<Asked>, CliError> {
    let mut asks = JoinSet::new();
    for uri in &w.subscribe {
        let view = group.view();
        let servers: Vec<String> = view
            .resources_at(uri)
            .map(|r| r.server.to_string())
            .collect();
        if servers.is_empty() {
            return Err(CliError::usage(
                "watch",
                format!("--subscribe {uri}: no server of the group lists this resource"),
            ));
        }
        for server in servers {
            if let Some(client) = group.client(&server) {
                let uri = uri.clone();
                asks.spawn(async move {
                    let r = client.subscribe(&uri).await;
                    (server, format!("subscribe {uri}"), r)
                });
            }
        }
    }
    if let Some(level) = w.level {
        for server in group.names() {
            if let Some(client) = group.client(&server) {
                asks.spawn(async move {
                    let r = client.set_logging_level(level).await;
                    (server, "logging/setLevel".to_owned(), r)
                });
            }
        }
    }
    Ok(asks)
}

fn items(items: &[ChangedItem]) -> Vec<serde_json::Value> {
    items
        .iter()
        .map(|i| json!({"name": i.name, "server": &*i.server, "original": i.original}))
        .collect()
}

fn change_line(c: &GroupChange) -> String {
    let tag: Vec<String> = c.servers().iter().map(ToString::to_string).collect();
    let mut parts = Vec::new();
    for (word, list) in [
        ("added", &c.added),
        ("removed", &c.removed),
        ("changed", &c.changed),
    ] {
        if !list.is_empty() {
            let names: Vec<&str> = list.iter().map(|i| i.name.as_str()).collect();
            parts.push(format!("{word} {}", names.join(", ")));
        }
    }
    format!("[{}] {} {}", tag.join(", "), c.kind, parts.join("; "))
}

fn transition_line(t: &GroupTransition) -> String {
    let tr = &t.transition;
    let why = tr
        .cause
        .as_ref()
        .map(|e| format!(": {e}"))
        .unwrap_or_default();
    let retry = tr
        .retry_in
        .map(|d| format!(" (retry in {:.1} s)", d.as_secs_f64()))
        .unwrap_or_default();
    format!(
        "[{}] {} -> {} ({}){why}{retry}",
        t.server,
        tr.from(),
        tr.to(),
        tr.event()
    )
}

/// Counts what a feed lost since the last report, and says so on stderr.
fn report_lost(what: &str, lost: u64, reported: &mut u64) {
    if lost > *reported {
        errln!(
            "mcpc: watch: {} {what} were lost (output too slow)",
            lost - *reported
        );
        *reported = lost;
    }
}

/// `watch` with `--config`.
pub async fn watch(
    group: &ClientGroup,
    json_out: bool,
    w: WatchArgs,
    interrupt: &Interrupt,
) -> Result<(), CliError> {
    let start = Instant::now();
    let mut notes = group.notifications();
    let mut transitions = group.transitions();
    let mut changes = group.changes();
    let mut lost = [0u64; 3];
    let mut asks = ask(group, &w)?;
    let snapshot = group.snapshot();
    errln!(
        "mcpc: watching {} servers ({} ready) (Ctrl-C to stop)",
        snapshot.servers.len(),
        snapshot.ready()
    );
    let ended = || CliError::new(Exit::Transport, "watch", "the group stopped");
    loop {
        tokio::select! {
            biased;
            caught = interrupt.fired() => return after_signal("watch", caught),
            Some(done) = asks.join_next(), if !asks.is_empty() => {
                if let Ok((server, asked, Err(e))) = done {
                    errln!("mcpc: watch: [{server}] {asked}: {e}");
                }
            }
            t = transitions.recv() => {
                let Some(t) = t else { return Err(ended()) };
                report_lost("transitions", transitions.dropped(), &mut lost[0]);
                if json_out {
                    let at = t.transition.at.saturating_duration_since(start).as_secs_f64();
                    out_exact(&json!({"at": at, "server": &*t.server, "from": t.transition.from().name(),
                        "to": t.transition.to().name(), "event": t.transition.event(),
                        "row": t.transition.step.row,
                        "cause": t.transition.cause.as_ref().map(ToString::to_string),
                        "retryInMs": t.transition.retry_in.map(|d| d.as_millis())}).to_string());
                } else {
                    outln!("{}  {}", stamp(start), transition_line(&t));
                }
            }
            n = notes.recv() => {
                let Some(GroupNotification { server, notification: n, .. }) = n else {
                    return Err(ended());
                };
                report_lost("notifications", notes.dropped(), &mut lost[1]);
                if json_out {
                    // Exactly as the server sent it.
                    out_exact(&json!({"at": start.elapsed().as_secs_f64(), "server": &*server,
                        "method": n.method, "params": n.params}).to_string());
                } else {
                    outln!("{}  [{server}] {}", stamp(start), notification_line(&n));
                }
            }
            c = changes.recv() => {
                let Some(c) = c else { return Err(ended()) };
                report_lost("list changes", changes.dropped(), &mut lost[2]);
                if json_out {
                    out_exact(&json!({"at": start.elapsed().as_secs_f64(), "list": c.kind.method(),
                        "added": items(&c.added), "removed": items(&c.removed),
                        "changed": items(&c.changed)}).to_string());
                } else {
                    outln!("{}  {}", stamp(start), change_line(&c));
                }
            }
        }
    }
}
