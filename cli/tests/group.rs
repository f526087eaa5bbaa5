//! End to end: `mcpc --config FILE` over a group of real child processes (mcpc's own test
//! server, plain and chaos) plus one program that does not exist, from a configuration file
//! written to a temporary directory: `servers`, the merged `tools list`, `tools call` by merged
//! name and by `SERVER/TOOL`, unknown tools and servers, `info SERVER`, a bad configuration's
//! error with its line and column, `${VAR}` from mcpc's environment, `--config-from`, and
//! `watch` across a kill, every child reaped at the end.

mod common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use common::*;
use serde_json::Value;

/// The variable the configurations name the server program by (set on mcpc's environment).
const BIN_VAR: &str = "MCPC_GROUP_TEST_BIN";

/// A scratch directory, removed at the end.
struct Scratch(PathBuf);

impl Scratch {
    fn new(test: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("mcpc-group-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("scratch dir");
        Scratch(dir)
    }

    fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.0.join(name);
        std::fs::write(&path, text).expect("write");
        path
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `alpha` (the test server), `beta` (the chaos server), `missing` (no such program), `off`
/// (disabled); the program named through `${MCPC_GROUP_TEST_BIN}`. Each server writes its
/// pid to `<dir>/<name>.pids`.
fn config(dir: &Scratch) -> PathBuf {
    let pids = |name: &str| dir.0.join(format!("{name}.pids")).display().to_string();
    let text = format!(
        r#"{{
  "mcpServers": {{
    "alpha": {{"command": "${{{BIN_VAR}}}", "args": ["__test-server", "--", "--pid-file", "{alpha}"]}},
    "beta": {{"command": "${{{BIN_VAR}}}", "args": ["__test-server", "--chaos", "--", "--pid-file", "{beta}"],
              "env": {{"TOKEN": "${{MCPC_GROUP_TEST_SURELY_UNSET}}"}}}},
    "missing": {{"command": "/nonexistent/mcpc-group-test-server"}},
    "off": {{"command": "/nonexistent/off", "disabled": true}}
  }}
}}"#,
        alpha = pids("alpha"),
        beta = pids("beta"),
    );
    dir.write("mcp.json", &text)
}

/// `mcpc ARGS` with `${MCPC_GROUP_TEST_BIN}` set to mcpc itself.
fn group_run(args: &[&str]) -> Run {
    Command::new(MCPC)
        .args(args)
        .env(BIN_VAR, MCPC)
        .stdin(Stdio::null())
        .output()
        .expect("mcpc runs")
        .into()
}

fn with_config(file: &Path, args: &[&str]) -> Run {
    let file = file.display().to_string();
    let mut all = vec!["--config", file.as_str()];
    all.extend_from_slice(args);
    group_run(&all)
}

fn json(run: &Run) -> Value {
    serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("not one JSON document ({e}): {run:#?}"))
}

/// The pids a server wrote to its pid file, one per process it was.
fn pids(dir: &Scratch, server: &str) -> Vec<i32> {
    std::fs::read_to_string(dir.0.join(format!("{server}.pids")))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

/// Whether process `pid` still runs as a test server (gone, or a zombie about to be reaped,
/// is not running).
fn running(pid: i32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    let state = stat.rsplit(')').next().unwrap_or("").trim_start();
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    !state.starts_with('Z') && String::from_utf8_lossy(&cmdline).contains("__test-server")
}

/// Every process the servers were is gone once mcpc has exited.
fn assert_all_reaped(dir: &Scratch) {
    for server in ["alpha", "beta"] {
        let pids = pids(dir, server);
        assert!(!pids.is_empty(), "{server} wrote no pid");
        for pid in pids {
            assert!(!running(pid), "{server}'s process {pid} outlived mcpc");
        }
    }
}

#[test]
fn servers_shows_each_state_and_the_config_warnings() {
    let dir = Scratch::new("servers");
    let file = config(&dir);
    let run = with_config(&file, &["servers"]);
    expect_code(&run, 0);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert!(
        lines[0].starts_with("NAME") && lines[0].contains("STATE") && lines[0].contains("ERA"),
        "{run:#?}"
    );
    for h in ["TOOLS", "PID", "LAST ERROR"] {
        assert!(lines[0].contains(h), "{h}: {run:#?}");
    }
    let row = |name: &str| -> Vec<&str> {
        lines
            .iter()
            .find(|l| l.starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no row for {name}: {run:#?}"))
            .split_whitespace()
            .collect()
    };
    // Both ready (through ${MCPC_GROUP_TEST_BIN}), with their tool counts and a pid.
    let alpha = row("alpha");
    assert_eq!(&alpha[1..4], ["ready", "legacy", "14"], "{run:#?}");
    assert!(alpha[4].parse::<u32>().is_ok(), "{run:#?}");
    assert_eq!(&row("beta")[1..4], ["ready", "legacy", "30"], "{run:#?}");
    // The missing program: retrying, with why.
    let missing = lines.iter().find(|l| l.starts_with("missing ")).unwrap();
    assert!(missing.contains(" backoff "), "{run:#?}");
    assert!(missing.contains("No such file or directory"), "{run:#?}");
    assert_eq!(row("off")[1], "disabled", "{run:#?}");
    // The unset variable is a warning naming the server, the field and the variable.
    assert!(
        run.stderr.contains(
            "server `beta`, field `env.TOKEN`: variable `MCPC_GROUP_TEST_SURELY_UNSET` is not set"
        ),
        "{run:#?}"
    );
    assert_all_reaped(&dir);

    let run = with_config(&file, &["servers", "--json"]);
    expect_code(&run, 0);
    let v = json(&run);
    let servers = v["servers"].as_array().unwrap();
    let by = |name: &str| servers.iter().find(|s| s["name"] == name).unwrap();
    assert_eq!(by("alpha")["state"], "ready");
    assert_eq!(by("beta")["tools"], 30);
    assert!(by("beta")["pid"].as_u64().is_some());
    assert_eq!(by("missing")["state"], "backoff");
    assert!(
        by("missing")["lastError"]
            .as_str()
            .unwrap()
            .contains("spawn")
    );
    assert_eq!(by("off")["state"], "disabled");
}

#[test]
fn tools_list_is_merged_with_each_tool_s_server_and_own_name() {
    let dir = Scratch::new("tools");
    let file = config(&dir);
    let run = with_config(&file, &["tools", "list"]);
    expect_code(&run, 0);
    let first = run.stdout.lines().next().unwrap();
    for h in ["NAME", "SERVER", "ORIGINAL", "ARGUMENTS", "DESCRIPTION"] {
        assert!(first.contains(h), "{h}: {run:#?}");
    }
    let row = |name: &str| -> Vec<String> {
        run.stdout
            .lines()
            .find(|l| l.starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no row for {name}: {run:#?}"))
            .split_whitespace()
            .map(str::to_owned)
            .collect()
    };
    // `echo` is listed by both: prefixed for each; `die` only by beta: bare.
    assert_eq!(row("alpha__echo")[1..3], ["alpha", "echo"]);
    assert_eq!(row("beta__echo")[1..3], ["beta", "echo"]);
    assert_eq!(row("die")[1..3], ["beta", "die"]);
    assert!(
        !run.stdout.lines().any(|l| l.starts_with("echo ")),
        "{run:#?}"
    );
    // The server that never started is named on stderr.
    assert!(
        run.stderr
            .contains("tools list: server `missing` (backoff) has not listed them yet"),
        "{run:#?}"
    );

    let run = with_config(&file, &["--json", "tools", "list"]);
    expect_code(&run, 0);
    let v = json(&run);
    let tools = v["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 14 + 30);
    let add = tools.iter().find(|t| t["name"] == "beta__add").unwrap();
    assert_eq!(add["server"], "beta");
    assert_eq!(add["original"], "add");
    assert_eq!(add["tool"]["name"], "add");
}

#[test]
fn tools_call_by_server_slash_tool_and_by_merged_name() {
    let dir = Scratch::new("call");
    let file = config(&dir);
    let run = with_config(&file, &["tools", "call", "alpha/add", "a=2", "b=3"]);
    expect_code(&run, 0);
    assert_eq!(run.stdout.trim(), "5", "{run:#?}");

    let run = with_config(&file, &["tools", "call", "beta__echo", "message=hi"]);
    expect_code(&run, 0);
    assert_eq!(run.stdout.trim(), "Echo: hi", "{run:#?}");

    // A bare merged name, routed to the one server that lists it.
    let run = with_config(&file, &["tools", "call", "late", "ms=1"]);
    expect_code(&run, 0);
    assert!(run.stdout.contains("late"), "{run:#?}");

    // --json: the result as the server sent it.
    let run = with_config(
        &file,
        &[
            "--json",
            "tools",
            "call",
            "beta/add",
            "--args",
            r#"{"a": 1, "b": 1}"#,
        ],
    );
    expect_code(&run, 0);
    assert_eq!(json(&run)["structuredContent"]["sum"], 2.0, "{run:#?}");
    assert_all_reaped(&dir);
}

#[test]
fn unknown_tools_and_servers_exit_with_one_line() {
    let dir = Scratch::new("unknown");
    let file = config(&dir);
    // A name no server lists: exit 1, as a server's own "no such tool".
    let run = with_config(&file, &["tools", "call", "nope"]);
    expect_code(&run, 1);
    let line = one_error_line_after_warnings(&run);
    assert!(
        line.starts_with("mcpc: tools call nope: no server of the group lists a tool named nope"),
        "{run:#?}"
    );
    assert!(
        line.contains("not listed yet: missing (backoff)"),
        "{run:#?}"
    );
    // `echo` is listed by both servers under prefixed names only.
    let run = with_config(&file, &["tools", "call", "echo", "message=x"]);
    expect_code(&run, 1);
    // A server the file does not have: a usage error naming the servers there are.
    let run = with_config(&file, &["tools", "call", "zzz/echo"]);
    expect_code(&run, 2);
    let line = one_error_line_after_warnings(&run);
    assert!(line.contains("no server named `zzz` in "), "{run:#?}");
    assert!(
        line.ends_with("(servers: alpha, beta, missing)"),
        "{run:#?}"
    );
    let run = with_config(&file, &["tools", "call", "off/echo"]);
    expect_code(&run, 2);
    assert!(
        one_error_line_after_warnings(&run).contains("server `off` is disabled in "),
        "{run:#?}"
    );
    // A tool the server does not have, by SERVER/TOOL: the server's answer.
    let run = with_config(&file, &["tools", "call", "alpha/die"]);
    expect_code(&run, 1);
    // Commands for one server only are usage errors with --config, before anything starts.
    let started = pids(&dir, "alpha").len();
    let run = with_config(&file, &["ping"]);
    expect_code(&run, 2);
    assert_eq!(pids(&dir, "alpha").len(), started, "{run:#?}");
}

/// The one `mcpc:` error line, past the configuration's warnings.
fn one_error_line_after_warnings(run: &Run) -> &str {
    let lines: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with("mcpc: warning: "))
        .collect();
    assert_eq!(lines.len(), 1, "expected one error line: {run:#?}");
    assert!(lines[0].starts_with("mcpc: "), "{run:#?}");
    lines[0]
}

#[test]
fn info_server_shows_its_handshake_state_and_pid() {
    let dir = Scratch::new("info");
    let file = config(&dir);
    let run = with_config(&file, &["info", "beta"]);
    expect_code(&run, 0);
    assert!(
        run.stdout.contains("server        mcp-chaos-server"),
        "{run:#?}"
    );
    assert!(run.stdout.contains("state         ready"), "{run:#?}");
    assert!(
        run.stdout.contains("era           legacy (handshake)"),
        "{run:#?}"
    );
    assert!(run.stdout.contains("tools (listChanged)"), "{run:#?}");
    let pid_line = run.stdout.lines().find(|l| l.starts_with("pid ")).unwrap();
    let pid: i32 = pid_line.split_whitespace().nth(1).unwrap().parse().unwrap();
    assert!(pids(&dir, "beta").contains(&pid), "{run:#?}");

    let run = with_config(&file, &["--json", "info", "alpha"]);
    expect_code(&run, 0);
    let v = json(&run);
    assert_eq!(v["serverInfo"]["name"], "mcp-echo-server");
    assert_eq!(v["state"], "ready");
    assert!(v["pid"].as_u64().is_some());

    // Not connected: exit 3 with its state and last error.
    let run = with_config(&file, &["info", "missing"]);
    expect_code(&run, 3);
    assert!(
        one_error_line_after_warnings(&run).contains("not connected (backoff): failed to spawn"),
        "{run:#?}"
    );
    // No such server, or none named: usage errors.
    expect_code(&with_config(&file, &["info", "zzz"]), 2);
    expect_code(&with_config(&file, &["info"]), 2);
    expect_code(&with_config(&file, &["info", "off"]), 2);
}

#[test]
fn a_bad_configuration_exits_7_naming_the_file_server_field_line_and_column() {
    let dir = Scratch::new("bad");
    let second = r#"  "bad": {"command": "x", "args": 5}"#;
    let file = dir.write(
        "bad.json",
        &format!("{{\"mcpServers\": {{\n{second}\n}}}}\n"),
    );
    let run = with_config(&file, &["servers"]);
    expect_code(&run, 7);
    // Reading stops at the value at fault (its last character: the `5`, 1-based).
    let column = second.find('5').unwrap() + 1;
    assert_eq!(
        one_error_line(&run),
        format!(
            "mcpc: --config: {}:2:{column}: server `bad`, field `args`: must be an array of strings, not a number",
            file.display()
        )
    );
    // Not JSON: where it stops.
    let file = dir.write(
        "syntax.json",
        "{\"mcpServers\": {\n  \"a\": {\"command\": \"x\"}\n  \"b\": {}\n}}\n",
    );
    let run = with_config(&file, &["tools", "list"]);
    expect_code(&run, 7);
    assert!(
        one_error_line(&run).starts_with(&format!(
            "mcpc: --config: {}:3:3: not valid JSON",
            file.display()
        )),
        "{run:#?}"
    );
    // No such file.
    let run = with_config(&dir.0.join("absent.json"), &["servers"]);
    expect_code(&run, 7);
    assert!(
        one_error_line(&run).contains("cannot read the configuration"),
        "{run:#?}"
    );
    // With a single-server flag: clap's usage error.
    let run = group_run(&["--config", "x.json", "--stdio", "srv", "servers"]);
    expect_code(&run, 2);
}

#[test]
fn variables_expand_from_mcpc_s_environment_and_config_from_reads_the_host_s_file() {
    let dir = Scratch::new("from");
    // Claude Desktop's file on Linux: $XDG_CONFIG_HOME/Claude/claude_desktop_config.json.
    std::fs::create_dir_all(dir.0.join("xdg/Claude")).unwrap();
    dir.write(
        "xdg/Claude/claude_desktop_config.json",
        &format!(
            r#"{{"mcpServers": {{"echo": {{"command": "${{{BIN_VAR}}}", "args": ["${{MCPC_GROUP_TEST_MODE:-__test-server}}"]}}}}}}"#
        ),
    );
    let run: Run = Command::new(MCPC)
        .args([
            "--config-from",
            "claude-desktop",
            "tools",
            "call",
            "echo",
            "message=from the desktop",
        ])
        .env(BIN_VAR, MCPC)
        .env("HOME", &dir.0)
        .env("XDG_CONFIG_HOME", dir.0.join("xdg"))
        .current_dir(&dir.0)
        .stdin(Stdio::null())
        .output()
        .expect("mcpc runs")
        .into();
    expect_code(&run, 0);
    assert_eq!(run.stdout.trim(), "Echo: from the desktop", "{run:#?}");
    // No file of that host: exit 7, saying where it looked.
    let run: Run = Command::new(MCPC)
        .args(["--config-from", "cursor", "servers"])
        .env("HOME", &dir.0)
        .current_dir(&dir.0)
        .stdin(Stdio::null())
        .output()
        .expect("mcpc runs")
        .into();
    expect_code(&run, 7);
    assert!(
        one_error_line(&run).contains("no Cursor configuration with servers found (looked at: "),
        "{run:#?}"
    );
}

#[cfg(target_os = "linux")]
#[test]
fn watch_tags_each_server_s_transitions_across_a_kill_and_ctrl_c_reaps_every_child() {
    let dir = Scratch::new("watch");
    let file = config(&dir);
    let mut child = Command::new(MCPC)
        .args(["--config", &file.display().to_string(), "watch"])
        .env(BIN_VAR, MCPC)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("mcpc runs");
    let (tx, lines) = mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    // A bound so that a broken build fails instead of hanging; not a timing assertion.
    let next = |what: &str| {
        lines
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|_| panic!("no line while waiting for {what}"))
    };
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut banner = String::new();
    while !banner.contains("mcpc: watching") {
        banner.clear();
        assert!(stderr.read_line(&mut banner).unwrap() > 0, "mcpc ended");
    }
    assert!(banner.contains("watching 3 servers (2 ready)"), "{banner}");
    let beta = pids(&dir, "beta");
    assert_eq!(beta.len(), 1);
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(beta[0]),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let mut seen = Vec::new();
    loop {
        let line = next("beta back");
        // `missing` retries meanwhile: its lines are tagged with its own name.
        assert!(
            line.contains("[beta] ") || line.contains("[missing] "),
            "{line}"
        );
        if line.contains("[beta] ") {
            seen.push(line.clone());
        }
        if line.contains("[beta] initializing -> ready (response)") {
            break;
        }
    }
    assert!(
        seen[0].contains(
            "[beta] ready -> backoff (transport_down): server process exited (killed by signal 9) (retry in "
        ),
        "{seen:#?}"
    );
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap()),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0), "Ctrl-C ends watch with 0");
    // Both of beta's processes (killed, then respawned) and alpha's are gone.
    assert_eq!(pids(&dir, "beta").len(), 2);
    assert_all_reaped(&dir);
}

#[test]
fn what_a_server_says_reaches_the_terminal_escaped() {
    let dir = Scratch::new("hostile");
    let text = format!(
        r#"{{"mcpServers": {{"h": {{"command": "${{{BIN_VAR}}}", "args": ["__test-server", "--hostile"]}},
            "plain": {{"command": "${{{BIN_VAR}}}", "args": ["__test-server"]}}}}}}"#
    );
    let file = dir.write("mcp.json", &text);
    for args in [
        &["tools", "list"][..],
        &["info", "h"],
        &["servers"],
        &["prompts", "list"],
        &["tools", "call", "h/log", "level=error", "message=x"],
    ] {
        let run = with_config(&file, args);
        for (stream, out) in [("stdout", &run.stdout), ("stderr", &run.stderr)] {
            assert!(
                !out.contains('\x1b') && !out.contains('\x07') && !out.contains('\r'),
                "{args:?}: raw control characters on {stream}: {run:#?}"
            );
        }
        // The name, instructions and tool descriptions carry it.
        if args == ["tools", "list"] || args == ["info", "h"] {
            assert!(
                run.stdout.contains("\\x1b"),
                "{args:?}: the hostile text is shown escaped: {run:#?}"
            );
        }
    }
}

#[test]
fn a_server_s_tool_filter_leaves_tools_out_of_the_list_and_refuses_their_calls() {
    let dir = Scratch::new("filter");
    let text = format!(
        r#"{{"mcpServers": {{
            "alpha": {{"command": "${{{BIN_VAR}}}", "args": ["__test-server"]}},
            "narrow": {{"command": "${{{BIN_VAR}}}", "args": ["__test-server"],
                        "tools": {{"allow": ["e*"], "deny": ["elicit"]}}}}}}}}"#
    );
    let file = dir.write("mcp.json", &text);
    let run = with_config(&file, &["--json", "tools", "list"]);
    expect_code(&run, 0);
    let v = json(&run);
    let mut narrow: Vec<&str> = v["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["server"] == "narrow")
        .map(|t| t["original"].as_str().unwrap())
        .collect();
    narrow.sort_unstable();
    assert_eq!(narrow, ["echo", "end_listens"], "{run:#?}");
    // Allowed: called; refused by the entry: exit 2 naming the filter, nothing sent.
    let run = with_config(&file, &["tools", "call", "narrow/echo", "message=hi"]);
    expect_code(&run, 0);
    assert_eq!(run.stdout.trim(), "Echo: hi", "{run:#?}");
    let run = with_config(
        &file,
        &[
            "tools",
            "call",
            "narrow/add",
            "--args",
            r#"{"a": 1, "b": 2}"#,
        ],
    );
    expect_code(&run, 2);
    let line = one_error_line_after_warnings(&run);
    assert!(line.contains("is not allowed tool"), "{run:#?}");
    assert!(line.contains("`tools.allow` / `tools.deny`"), "{run:#?}");
    // The same with pairs to type (the tool is not in the view to type them by).
    let run = with_config(&file, &["tools", "call", "narrow/add", "a=1", "b=2"]);
    expect_code(&run, 2);
    assert!(
        one_error_line_after_warnings(&run).contains("is not allowed tool"),
        "{run:#?}"
    );
}
