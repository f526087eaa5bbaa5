//! End to end: `mcpc` against the in-repo test server over stdio, outputs and exit codes.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;
use serde_json::Value;

fn json(run: &Run) -> Value {
    serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("not one JSON document ({e}): {run:#?}"))
}

#[test]
fn info_shows_the_handshake() {
    let run = against_server(&["info"]);
    expect_code(&run, 0);
    assert!(
        run.stdout.contains("server        mcp-echo-server"),
        "{run:#?}"
    );
    assert!(
        run.stdout
            .contains("era           legacy (handshake; the server is not a 2026-07-28 one (server/discover fell back))"),
        "{run:#?}"
    );
    assert!(run.stdout.contains("protocol      2025-11-25"), "{run:#?}");
    assert!(run.stdout.contains("tools (listChanged)"), "{run:#?}");
    assert!(run.stdout.contains("In-repo MCP test server"), "{run:#?}");
    let run = against_server(&["info", "--json"]);
    expect_code(&run, 0);
    let v = json(&run);
    assert_eq!(v["serverInfo"]["name"], "mcp-echo-server");
    assert_eq!(v["era"], "legacy");
    assert!(v["capabilities"]["tools"].is_object());
}

/// The `--stdio` line of the test server speaking the given era flags.
fn era_server(flags: &str) -> String {
    format!("{} -- {flags}", server(false))
}

#[test]
fn auto_negotiates_the_modern_era_with_a_modern_server_and_calls_work() {
    let line = era_server("--era modern");
    let run = mcpc(&["--stdio", &line, "--era", "auto", "info"]);
    expect_code(&run, 0);
    assert!(
        run.stdout
            .contains("era           modern (stateless; the server answered server/discover)"),
        "{run:#?}"
    );
    assert!(run.stdout.contains("protocol      2026-07-28"), "{run:#?}");
    let run = mcpc(&["--stdio", &line, "--era", "auto", "--json", "info"]);
    assert_eq!(json(&run)["era"], "modern");
    let run = mcpc(&[
        "--stdio",
        &line,
        "--era",
        "auto",
        "tools",
        "call",
        "echo",
        "message=hi",
    ]);
    expect_code(&run, 0);
    assert!(run.stdout.contains("hi"), "{run:#?}");
}

#[test]
fn auto_falls_back_to_the_handshake_with_a_legacy_server() {
    for probe in ["error", "garbage"] {
        let line = era_server(&format!("--probe {probe}"));
        let run = mcpc(&["--stdio", &line, "--era", "auto", "--json", "info"]);
        expect_code(&run, 0);
        let v = json(&run);
        assert_eq!(v["era"], "legacy", "{probe}: {run:#?}");
        assert_eq!(v["protocolVersion"], "2025-11-25", "{probe}");
    }
}

#[test]
fn modern_forced_refuses_a_legacy_server_with_a_clear_error() {
    let line = era_server("--probe error");
    let run = mcpc(&["--stdio", &line, "--era", "modern", "info"]);
    expect_code(&run, 3);
    assert!(
        one_error_line(&run).contains("not a 2026-07-28 (stateless) server"),
        "{run:#?}"
    );
}

#[test]
fn tools_list_as_a_table_and_as_json() {
    let run = against_server(&["tools", "list"]);
    expect_code(&run, 0);
    let first = run.stdout.lines().next().unwrap_or_default();
    assert!(
        first.starts_with("NAME") && first.contains("ARGUMENTS") && first.contains("DESCRIPTION")
    );
    assert!(
        run.stdout
            .lines()
            .any(|l| l.starts_with("add ") && l.contains("a:number b:number")),
        "{run:#?}"
    );
    assert!(
        run.stdout
            .lines()
            .any(|l| l.starts_with("slow ") && l.contains("steps?:integer")),
        "{run:#?}"
    );
    // Columns are aligned: every description starts at the same column.
    let col = first.find("DESCRIPTION").unwrap();
    let echo = run.stdout.lines().find(|l| l.starts_with("echo ")).unwrap();
    assert_eq!(echo.find("Echo the message").unwrap(), col);

    let run = against_server(&["--json", "tools", "list"]);
    expect_code(&run, 0);
    let v = json(&run);
    let tools = v["tools"].as_array().expect("tools array");
    assert!(
        tools
            .iter()
            .any(|t| t["name"] == "echo" && t["inputSchema"]["type"] == "object")
    );
    assert!(
        !tools.iter().any(|t| t["name"] == "die"),
        "chaos tools only with --chaos"
    );
}

#[test]
fn tools_call_with_pairs_typed_by_the_schema() {
    let run = against_server(&["tools", "call", "echo", "message=hi"]);
    expect_code(&run, 0);
    assert_eq!(run.stdout.trim(), "Echo: hi");

    let run = against_server(&["tools", "call", "add", "a=2", "b=3"]);
    expect_code(&run, 0);
    assert_eq!(run.stdout.trim(), "5");

    let run = against_server(&["tools", "call", "add", "a=2", "b=3", "--json"]);
    expect_code(&run, 0);
    assert_eq!(json(&run)["structuredContent"]["sum"], 5);
}

#[test]
fn tools_call_with_args_json() {
    let run = against_server(&["tools", "call", "add", "--args", r#"{"a":1,"b":2}"#]);
    expect_code(&run, 0);
    assert_eq!(run.stdout.trim(), "3");
    // Pairs apply on top of --args.
    let run = against_server(&["tools", "call", "add", "--args", r#"{"a":1,"b":2}"#, "b=10"]);
    expect_code(&run, 0);
    assert_eq!(run.stdout.trim(), "11");
}

#[test]
fn progress_goes_to_stderr_as_lines_without_a_terminal() {
    let run = against_server(&["tools", "call", "slow", "ms=300", "steps=3"]);
    expect_code(&run, 0);
    assert_eq!(run.stdout.trim(), "slept 300 ms in 3 steps");
    for i in 1..=3 {
        assert!(
            run.stderr
                .contains(&format!("progress {i}/3 step {i} of 3")),
            "{run:#?}"
        );
    }
}

#[test]
fn resources_list_templates_and_read() {
    let run = against_server(&["resources", "list"]);
    expect_code(&run, 0);
    assert!(run.stdout.starts_with("URI"), "{run:#?}");
    assert!(
        run.stdout.contains("test://static/1  static-1  text/plain"),
        "{run:#?}"
    );
    let run = against_server(&["resources", "templates"]);
    expect_code(&run, 0);
    assert!(run.stdout.contains("test://dynamic/{id}"), "{run:#?}");
    let run = against_server(&["resources", "read", "test://static/2"]);
    expect_code(&run, 0);
    assert_eq!(run.stdout.trim(), "Static resource 2");
    let run = against_server(&["resources", "read", "test://dynamic/42", "--json"]);
    expect_code(&run, 0);
    assert_eq!(json(&run)["contents"][0]["text"], "Dynamic resource 42");
    let run = against_server(&["resources", "read", "test://nowhere"]);
    expect_code(&run, 1);
    assert!(
        one_error_line(&run).contains("resource not found"),
        "{run:#?}"
    );
}

#[test]
fn prompts_list_and_get() {
    let run = against_server(&["prompts", "list"]);
    expect_code(&run, 0);
    assert!(run.stdout.contains("greeting  name"), "{run:#?}");
    let run = against_server(&["prompts", "get", "greeting", "name=Ada"]);
    expect_code(&run, 0);
    assert!(run.stdout.contains("user: Hello, Ada!"), "{run:#?}");
    let run = against_server(&["prompts", "get", "greeting"]);
    expect_code(&run, 1);
    assert!(
        one_error_line(&run).contains("missing required argument: name"),
        "{run:#?}"
    );
}

#[test]
fn complete_a_prompt_argument_and_a_template() {
    let run = against_server(&["complete", "--prompt", "greeting", "name", "al"]);
    expect_code(&run, 0);
    assert_eq!(run.stdout.lines().collect::<Vec<_>>(), ["alice", "alfred"]);
    let run = against_server(&[
        "complete",
        "--resource",
        "test://dynamic/{id}",
        "id",
        "",
        "--json",
    ]);
    expect_code(&run, 0);
    assert_eq!(
        json(&run)["completion"]["values"],
        serde_json::json!(["1", "2", "3"])
    );
    // One of --prompt / --resource is required.
    expect_code(&against_server(&["complete", "name", "al"]), 2);
}

#[test]
fn ping() {
    let run = against_server(&["ping"]);
    expect_code(&run, 0);
    assert!(
        run.stdout.starts_with("pong from mcp-echo-server in "),
        "{run:#?}"
    );
    let run = against_server(&["ping", "--json"]);
    expect_code(&run, 0);
    assert_eq!(json(&run)["ok"], true);
}

#[test]
fn sampling_and_roots_come_from_flags() {
    let run = against_server(&[
        "tools",
        "call",
        "sample",
        "prompt=hi",
        "--sampling-reply",
        "canned",
    ]);
    expect_code(&run, 0);
    assert_eq!(run.stdout.trim(), "canned");
    let run = against_server(&["tools", "call", "sample", "prompt=hi"]);
    expect_code(&run, 1);
    assert!(
        one_error_line(&run).contains("sampling declined"),
        "{run:#?}"
    );
    let run = against_server(&[
        "tools",
        "call",
        "roots",
        "--root",
        "file:///work/project",
        "--json",
    ]);
    expect_code(&run, 0);
    assert_eq!(
        json(&run)["structuredContent"]["roots"][0],
        serde_json::json!({"uri": "file:///work/project", "name": "project"})
    );
    // Without --root the client does not declare roots: the server gets method-not-found.
    expect_code(&against_server(&["tools", "call", "roots"]), 1);
}

#[test]
fn elicitation_is_declined_without_a_terminal() {
    let run = against_server(&["tools", "call", "elicit", "message=who?"]);
    expect_code(&run, 0);
    assert!(run.stdout.contains(r#""action":"decline""#), "{run:#?}");
    assert!(run.stderr.contains("stdin is not a terminal"), "{run:#?}");
}

#[test]
fn usage_errors_exit_2() {
    let run = mcpc(&["frobnicate"]);
    expect_code(&run, 2);
    assert!(run.stderr.contains("unrecognized subcommand"), "{run:#?}");
    let run = mcpc(&["info", "--no-such-flag"]);
    expect_code(&run, 2);
    assert!(run.stderr.contains("--no-such-flag"), "{run:#?}");

    let run = against_server(&["tools", "call", "add", "--args", "{a:1}"]);
    expect_code(&run, 2);
    assert!(
        one_error_line(&run).starts_with("mcpc: tools call add: --args is not valid JSON"),
        "{run:#?}"
    );

    let run = against_server(&["tools", "call", "add", "c=1"]);
    expect_code(&run, 2);
    assert_eq!(
        one_error_line(&run),
        "mcpc: tools call add: unknown argument `c` for tool `add` (valid: a, b)"
    );
    let run = against_server(&["tools", "call", "add", "a=x", "b=1"]);
    expect_code(&run, 2);
    assert!(
        one_error_line(&run).contains("argument `a` must be a number"),
        "{run:#?}"
    );

    let run = mcpc(&["info"]);
    expect_code(&run, 2);
    assert!(one_error_line(&run).contains("--stdio"), "{run:#?}");
}

#[test]
fn an_http_or_sse_server_that_is_not_there_is_a_connect_error() {
    let run = mcpc(&["--http", "http://localhost:9/mcp", "info"]);
    expect_code(&run, 3);
    assert!(
        one_error_line(&run).starts_with("mcpc: could not connect to `http://localhost:9/mcp`: "),
        "{run:?}"
    );
    let sse = mcpc(&["--sse", "http://localhost:9/sse", "tools", "list"]);
    expect_code(&sse, 3);
    assert!(
        one_error_line(&sse).starts_with("mcpc: could not connect to `http://localhost:9/sse`: "),
        "{sse:?}"
    );
}

#[test]
fn a_server_that_exits_at_once_is_a_connect_error() {
    for cmd in ["false", "sh -c 'echo broken >&2; exit 1'"] {
        let start = Instant::now();
        let run = mcpc(&["--stdio", cmd, "info"]);
        expect_code(&run, 3);
        let line = one_error_line(&run);
        assert!(
            line.starts_with(&format!("mcpc: could not connect to `{cmd}`: ")),
            "{run:#?}"
        );
        assert!(line.contains("exit code 1"), "{run:#?}");
        assert!(start.elapsed() < Duration::from_secs(5));
    }
    let run = mcpc(&["--stdio", "/nonexistent/server", "ping"]);
    expect_code(&run, 3);
    assert!(one_error_line(&run).contains("failed to spawn"), "{run:#?}");
}

#[test]
fn unknown_tool_is_a_server_error() {
    let run = against_server(&["tools", "call", "nope"]);
    expect_code(&run, 1);
    assert_eq!(
        one_error_line(&run),
        "mcpc: tools call nope: server error -32602: Unknown tool: nope"
    );
    // With pairs the tool list is checked first.
    let run = against_server(&["tools", "call", "nope", "x=1"]);
    expect_code(&run, 1);
    assert!(
        one_error_line(&run).contains("no tool named `nope`"),
        "{run:#?}"
    );
    // A tool that reports isError.
    let run = against_server(&["tools", "call", "echo"]);
    expect_code(&run, 1);
    assert!(
        one_error_line(&run).contains("the tool reported an error"),
        "{run:#?}"
    );
}

#[test]
fn a_result_that_breaks_the_output_schema_lists_why_and_exits_1() {
    for era in ["legacy", "modern"] {
        let line = era_server(&format!("--era {era}"));
        let call = |extra: &[&str]| {
            let mut args = vec!["--stdio", line.as_str(), "--era", era];
            args.extend_from_slice(extra);
            mcpc(&args)
        };
        let run = call(&["tools", "call", "structured", "shape=wrong"]);
        expect_code(&run, 1);
        let lines: Vec<&str> = run.stderr.lines().collect();
        assert_eq!(
            lines,
            [
                "mcpc: structuredContent does not match the tool's outputSchema:",
                "  (root): \"label\" is a required property",
                "  /count: value is not of type \"integer\"",
                "  (root): Additional properties are not allowed ('extra' was unexpected)",
                "mcpc: tools call structured: the result does not match the tool's outputSchema \
                 (errors above; --no-validate-output skips the check)",
            ],
            "{run:#?}"
        );
        assert!(run.stdout.is_empty(), "{run:#?}");
        // Without structuredContent (and without pairs: the tools are listed anyway).
        let run = call(&[
            "tools",
            "call",
            "structured",
            "--args",
            r#"{"shape":"missing"}"#,
        ]);
        expect_code(&run, 1);
        assert!(
            run.stderr.contains("structuredContent is missing"),
            "{run:#?}"
        );
        // --json still prints the result as the server sent it.
        let run = call(&["--json", "tools", "call", "structured", "shape=wrong"]);
        expect_code(&run, 1);
        assert_eq!(json(&run)["structuredContent"]["count"], "three");
        // Conforming, a tool error, and the off switch.
        expect_code(&call(&["tools", "call", "structured"]), 0);
        expect_code(&call(&["tools", "call", "structured", "shape=error"]), 1);
        let run = call(&[
            "--no-validate-output",
            "tools",
            "call",
            "structured",
            "shape=wrong",
        ]);
        expect_code(&run, 0);
        assert!(run.stdout.contains(r#""count":"three""#), "{run:#?}");
    }
}

#[test]
fn timeouts_and_crashes_have_their_own_codes() {
    let run = against_chaos(&["--timeout", "0.3", "tools", "call", "late", "ms=3000"]);
    expect_code(&run, 4);
    assert!(
        one_error_line(&run).starts_with("mcpc: tools call late: request timed out after 3"),
        "{run:#?}"
    );
    let run = against_chaos(&["tools", "call", "die"]);
    expect_code(&run, 5);
    assert!(one_error_line(&run).contains("connection lost"), "{run:#?}");
}

#[test]
fn env_reaches_the_stdio_server() {
    let run = mcpc(&[
        "--stdio",
        "sh -c 'echo \"$MCPC_TEST_VAR\" >&2; exit 1'",
        "--env",
        "MCPC_TEST_VAR=from-env",
        "info",
    ]);
    expect_code(&run, 3);
    assert!(
        one_error_line(&run).contains("server stderr: from-env"),
        "{run:#?}"
    );
}

#[test]
fn completions_for_bash() {
    let run = mcpc(&["completions", "bash"]);
    expect_code(&run, 0);
    assert!(run.stdout.contains("_mcpc()"), "{run:#?}");
    let help = mcpc(&["--help"]);
    expect_code(&help, 0);
    assert!(help.stdout.contains("Exit codes:") && help.stdout.contains("130"));
    assert!(!help.stdout.contains("__test-server"), "hidden from help");
}

/// Starts `mcpc ARGS` with piped output, waits until stdout or stderr contains `ready_marker`,
/// sends SIGINT, and returns the exit code and all output.
fn interrupt_when(args: &[&str], ready_marker: &str) -> (i32, String) {
    let mut child = Command::new(MCPC)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("mcpc starts");
    let seen = Arc::new(Mutex::new(String::new()));
    let mut readers = Vec::new();
    let out = child.stdout.take().unwrap();
    let err = child.stderr.take().unwrap();
    for stream in [
        Box::new(out) as Box<dyn std::io::Read + Send>,
        Box::new(err),
    ] {
        let seen = Arc::clone(&seen);
        readers.push(std::thread::spawn(move || {
            for line in BufReader::new(stream).lines().map_while(Result::ok) {
                let mut s = seen.lock().unwrap();
                s.push_str(&line);
                s.push('\n');
            }
        }));
    }
    let start = Instant::now();
    while !seen.lock().unwrap().contains(ready_marker) {
        assert!(
            start.elapsed() < Duration::from_secs(8),
            "never saw {ready_marker:?}: {}",
            seen.lock().unwrap()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let pid = child.id().to_string();
    let killed = Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .expect("kill runs");
    assert!(killed.success());
    let status = child.wait().expect("mcpc exits");
    for r in readers {
        let _ = r.join();
    }
    let text = seen.lock().unwrap().clone();
    (status.code().unwrap_or(-1), text)
}

#[test]
fn watch_runs_until_ctrl_c_and_exits_0() {
    let server = server(false);
    let (code, out) = interrupt_when(
        &[
            "--stdio",
            &server,
            "watch",
            "--level",
            "debug",
            "--subscribe",
            "test://static/1",
        ],
        "watching notifications from mcp-echo-server",
    );
    assert_eq!(code, 0, "{out}");
}

#[test]
fn state_prints_transitions_until_ctrl_c() {
    let server = server(false);
    let (code, out) = interrupt_when(&["--stdio", &server, "state"], "-> ready");
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("starting     -> probing       event transport_up"),
        "{out}"
    );
    assert!(
        out.contains("probing      -> initializing  event response"),
        "{out}"
    );
    assert!(out.contains("initializing -> ready"), "{out}");
    assert!(out.contains("(mcp-echo-server "), "{out}");
}

#[test]
fn ctrl_c_during_a_call_exits_130() {
    let server = server(false);
    let (code, out) = interrupt_when(
        &[
            "--stdio", &server, "tools", "call", "slow", "ms=20000", "steps=40",
        ],
        "progress 1/40",
    );
    assert_eq!(code, 130, "{out}");
    assert!(out.contains("mcpc: tools call slow: cancelled"), "{out}");
}

#[test]
fn tools_call_polls_a_task_and_ctrl_c_cancels_it_and_says_its_state() {
    let server = format!("{} -- --tasks", server(false));
    let run = mcpc(&[
        "--stdio",
        &server,
        "tools",
        "call",
        "task_slow",
        "ms=200",
        "interval_ms=50",
    ]);
    expect_code(&run, 0);
    assert_eq!(run.stdout.trim(), "done after 200 ms", "{run:#?}");
    assert!(
        run.stderr.contains("working"),
        "the status is shown: {run:#?}"
    );
    let listed = mcpc(&["--stdio", &server, "tools", "list"]);
    assert!(
        listed
            .stdout
            .lines()
            .any(|l| l.starts_with("task_slow") && l.contains(" task ")),
        "tools list marks the task tools: {listed:#?}"
    );
    let (code, out) = interrupt_when(
        &[
            "--stdio",
            &server,
            "tools",
            "call",
            "task_endless",
            "interval_ms=50",
        ],
        "working",
    );
    assert_eq!(code, 130, "{out}");
    assert!(
        out.contains("tasks/cancel sent; task ") && out.contains(" is cancelled"),
        "{out}"
    );
}
