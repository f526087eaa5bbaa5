//! The demo's group step: two test servers as child processes (this very binary in its hidden
//! server mode, so nothing needs installing), started from an `mcpServers` configuration as a
//! [`ClientGroup`]; their tools merged; one killed with SIGKILL while the other keeps answering;
//! a call to the killed one waiting for its handshake; the killed one back with its tools
//! fetched again; the group stopped.

use std::time::Duration;

use mcp_runtime::group::{GroupConfig, GroupTransition};
use mcp_runtime::{ClientGroup, ConnState, Feed, ListKind};
use serde_json::json;
use tokio::time::Instant;

use crate::connect::SHUTDOWN_GRACE;
use crate::demo::ms;
use crate::error::{CliError, Exit};

/// The group's configuration, as a host's file would hold it (`${MCPC}`: this binary).
const CONFIG: &str = r#"{"mcpServers": {
        "alpha": {"command": "${MCPC}", "args": ["__test-server"]},
        "beta":  {"command": "${MCPC}", "args": ["__test-server", "--chaos"]}
      }}"#;

/// The bound on each wait of the step.
const LIMIT: Duration = Duration::from_secs(10);

fn failed(what: &str, why: impl std::fmt::Display) -> CliError {
    CliError::new(
        Exit::Transport,
        format!("demo: group: {what}"),
        why.to_string(),
    )
}

fn line(t: &GroupTransition, start: Instant) -> String {
    let tr = &t.transition;
    format!(
        "      {:>7}  [{}] {:<12} -> {:<12} event {:<18} row {}",
        format!("+{}ms", tr.at.saturating_duration_since(start).as_millis()),
        t.server,
        tr.from().name(),
        tr.to().name(),
        tr.event(),
        tr.step.row
    )
}

/// Prints the group's transitions until `server` enters `state` (bounded by [`LIMIT`]).
async fn print_until(
    transitions: &mut Feed<GroupTransition>,
    server: &str,
    state: ConnState,
    start: Instant,
) -> Result<(), CliError> {
    let wait = async {
        while let Some(t) = transitions.recv().await {
            outln!("{}", line(&t, start));
            if &*t.server == server && t.transition.to() == state {
                return Ok(());
            }
        }
        Err(failed("transitions", "the group stopped"))
    };
    tokio::time::timeout(LIMIT, wait)
        .await
        .map_err(|_| failed(server, format!("not {state} within {} s", LIMIT.as_secs())))?
}

/// Runs the step (its title is printed by the caller).
pub async fn step() -> Result<(), CliError> {
    let exe = std::env::current_exe().map_err(|e| failed("this binary", e))?;
    let exe = exe.to_string_lossy().into_owned();
    let config = GroupConfig::parse_with_env(CONFIG, "demo.json", |name| {
        (name == "MCPC").then(|| exe.clone())
    })
    .map_err(|e| failed("configuration", e))?;
    outln!("      {CONFIG}");
    let began = Instant::now();
    let group = ClientGroup::builder()
        .configure(|_, b| {
            b.client_info("mcpc-demo", env!("CARGO_PKG_VERSION"))
                .backoff(Duration::from_millis(200), Duration::from_secs(2), 20)
                .seed(7)
                .request_timeout(LIMIT)
                .shutdown_grace(SHUTDOWN_GRACE)
                .wait_for_ready(true)
        })
        .start_config(&config)
        .await
        .map_err(|e| failed("start", e))?;
    let result = run(&group, began).await;
    let stopping = Instant::now();
    group.stop().await;
    if result.is_ok() {
        outln!(
            "      group.stop(): both servers stopped and reaped in {}",
            ms(stopping.elapsed())
        );
    }
    result
}

async fn run(group: &ClientGroup, began: Instant) -> Result<(), CliError> {
    let mut transitions = group.transitions();
    let snapshot = group.snapshot();
    let started: Vec<String> = snapshot
        .servers
        .iter()
        .map(|s| {
            format!(
                "{} {} (pid {})",
                s.name,
                s.state,
                s.pid.map_or_else(|| "?".to_owned(), |p| p.to_string())
            )
        })
        .collect();
    outln!(
        "      started at once in {}: {}",
        ms(began.elapsed()),
        started.join(", ")
    );

    let view = group.view();
    let (prefixed, bare): (Vec<_>, Vec<_>) = view.tools.iter().partition(|t| t.name != t.original);
    // The names both list, in alpha's order; the first two shown as each server's.
    let mut shared: Vec<&str> = Vec::new();
    for t in &prefixed {
        if !shared.contains(&t.original.as_str()) {
            shared.push(&t.original);
        }
    }
    let mut pairs: Vec<&str> = shared
        .iter()
        .take(2)
        .flat_map(|o| prefixed.iter().filter(move |t| t.original == *o))
        .map(|t| t.name.as_str())
        .collect();
    pairs.push("…");
    let mut others: Vec<&str> = bare.iter().take(4).map(|t| t.name.as_str()).collect();
    others.push("…");
    outln!(
        "      {} tools merged: the {} names both servers list, each prefixed with its server\n      \
         ({}); beta's {} others bare ({})",
        view.tools.len(),
        shared.len(),
        pairs.join(", "),
        bare.len(),
        others.join(", ")
    );
    let args = json!({"a": 2, "b": 3});
    let add = group
        .call_tool("alpha__add", args.clone())
        .await
        .map_err(|e| failed("alpha__add", e))?;
    outln!(
        "      alpha__add {args} -> {} (routed to alpha as add)",
        add.text()
    );

    let Some(pid) = group.snapshot().get("beta").and_then(|s| s.pid) else {
        return Err(failed("beta", "no pid in the snapshot"));
    };
    let fetches = group
        .live_lists("beta")
        .map_or(0, |l| l.stats().get(ListKind::Tools).fetches);
    outln!("      kill -9 {pid} (beta, its pid from group.snapshot()):");
    let killed = Instant::now();
    kill(pid)?;
    print_until(&mut transitions, "beta", ConnState::Backoff, killed).await?;

    let asked = Instant::now();
    let echo = group
        .call_tool("alpha__echo", json!({"message": "still answering"}))
        .await
        .map_err(|e| failed("alpha__echo", e))?;
    let beta_state = group.client("beta").map(|c| c.state());
    outln!(
        "      beta: {}; alpha__echo -> {} (in {})",
        beta_state.map_or_else(|| "?".to_owned(), |s| s.to_string()),
        echo.text(),
        ms(asked.elapsed())
    );
    outln!("      beta__echo, called now, waits for beta's handshake (wait_for_ready):");
    let asked = Instant::now();
    let call = group.call_tool("beta__echo", json!({"message": "back"}));
    tokio::pin!(call);
    let mut answer = None;
    let mut back = false;
    let both = async {
        while answer.is_none() || !back {
            tokio::select! {
                r = &mut call, if answer.is_none() => answer = Some((r, asked.elapsed())),
                r = print_until(&mut transitions, "beta", ConnState::Ready, killed), if !back => {
                    r?;
                    back = true;
                }
            }
        }
        Ok::<_, CliError>(())
    };
    tokio::time::timeout(LIMIT, both)
        .await
        .map_err(|_| failed("beta__echo", "no answer"))??;
    let Some((answer, after)) = answer else {
        return Err(failed("beta__echo", "no answer"));
    };
    let answer = answer.map_err(|e| failed("beta__echo", e))?;
    outln!(
        "      beta__echo -> {} (answered {} after the call)",
        answer.text(),
        ms(after)
    );

    // The reconnect fetches every list again.
    let live = group
        .live_lists("beta")
        .ok_or_else(|| failed("beta", "gone from the group"))?;
    let mut stats = live.watch_stats();
    tokio::time::timeout(
        LIMIT,
        stats.wait_for(|s| s.get(ListKind::Tools).fetches > fetches),
    )
    .await
    .map_err(|_| failed("beta", "its tools were not fetched again"))?
    .map_err(|_| failed("beta", "its lists stopped"))?;
    let snapshot = group.snapshot();
    let beta = snapshot
        .get("beta")
        .ok_or_else(|| failed("beta", "gone from the group"))?;
    outln!(
        "      beta back {} after the kill: {}, pid {}, reconnects {}, its {} tools listed again; the merged view still has {}",
        ms(killed.elapsed()),
        beta.state,
        beta.pid.map_or_else(|| "?".to_owned(), |p| p.to_string()),
        beta.reconnects,
        beta.tools.unwrap_or(0),
        group.view().tools.len()
    );
    Ok(())
}

fn kill(pid: u32) -> Result<(), CliError> {
    use nix::sys::signal::{Signal, kill};
    use nix::unistd::Pid;
    let pid = i32::try_from(pid).map_err(|e| failed("kill", e))?;
    kill(Pid::from_raw(pid), Signal::SIGKILL).map_err(|e| failed("kill", e))
}
