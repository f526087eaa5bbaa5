//! End to end, against misbehaving servers: hostile text, undeclared elicitation modes,
//! signals, servers that linger after the answer, slow starts; and the environment.

mod common;

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::*;

/// What a hostile server slips into its text (see `mcp_testserver::HOSTILE_TEXT`).
const HOSTILE: &str = "\u{1b}]0;pwned\u{7}\u{1b}[2J\r\u{202e}\u{9b}";

/// Runs `mcpc ARGS` and returns its raw output bytes (stdout, stderr) and exit code.
fn raw(args: &[&str]) -> (Vec<u8>, Vec<u8>, i32) {
    let out = Command::new(MCPC)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("mcpc runs");
    (out.stdout, out.stderr, out.status.code().unwrap_or(-1))
}

/// Whether `bytes` hold any of the bytes or characters that must not reach a terminal raw.
fn unsafe_bytes(bytes: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(bytes);
    let mut found = Vec::new();
    for c in text.chars() {
        let bad = matches!(c, '\u{0}'..='\u{8}' | '\u{b}'..='\u{1f}' | '\u{7f}'..='\u{9f}')
            || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
        if bad {
            found.push(format!("U+{:04X}", u32::from(c)));
        }
    }
    found
}

#[test]
fn hostile_server_text_never_reaches_the_terminal_raw() {
    let server = format!("{} --hostile", server(false));
    let shell_stderr = "sh -c 'printf \"boom\\033]0;pwned\\007\\r\\n\" >&2; exit 1'";
    let hostile_arg = format!("message={HOSTILE}");
    let greeting = format!("name={HOSTILE}");
    let nope = format!("nope{HOSTILE}");
    let runs: Vec<Vec<&str>> = vec![
        vec!["info"],
        vec!["tools", "list"],
        vec!["ping"],
        vec!["prompts", "get", "greeting", &greeting],
        vec!["tools", "call", "echo", &hostile_arg],
        vec!["tools", "call", "slow", "ms=100", "steps=2"],
        vec!["tools", "call", &nope],
        vec!["tools", "call", "elicit", &hostile_arg],
        vec!["-vv", "info"],
    ];
    for args in runs {
        let mut all = vec!["--stdio", server.as_str()];
        all.extend_from_slice(&args);
        let (stdout, stderr, code) = raw(&all);
        assert!(code == 0 || code == 1, "{args:?}: exit {code}");
        for (name, bytes) in [("stdout", &stdout), ("stderr", &stderr)] {
            let bad = unsafe_bytes(bytes);
            assert!(
                bad.is_empty(),
                "{args:?}: {name} has {bad:?}: {}",
                String::from_utf8_lossy(bytes)
            );
        }
        let all_text = String::from_utf8_lossy(&stdout) + String::from_utf8_lossy(&stderr);
        assert!(
            all_text.contains("\\x1b]0;pwned\\x07"),
            "{args:?}: {all_text}"
        );
    }
    // The server's stderr, in a connection error and in the -v log.
    for verbose in [false, true] {
        let mut all = vec!["--stdio", shell_stderr, "info"];
        if verbose {
            all.push("-v");
        }
        let (stdout, stderr, code) = raw(&all);
        assert_eq!(code, 3);
        assert!(unsafe_bytes(&stdout).is_empty() && unsafe_bytes(&stderr).is_empty());
        assert!(String::from_utf8_lossy(&stderr).contains("boom\\x1b]0;pwned\\x07"));
    }
    // --json stays exact.
    let (stdout, _, code) = raw(&[
        "--stdio",
        &server,
        "--json",
        "tools",
        "call",
        "echo",
        &hostile_arg,
    ]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_slice(&stdout).unwrap();
    assert_eq!(v["content"][0]["text"], format!("Echo: {HOSTILE}"));
}

#[test]
fn undeclared_elicitation_modes_are_refused_and_empty_forms_not_accepted() {
    let run = against_server(&["tools", "call", "elicit", "message=open", "mode=url"]);
    expect_code(&run, 1);
    assert!(
        one_error_line(&run)
            .contains("client error -32602: elicitation mode \"url\" was not declared"),
        "{run:#?}"
    );
    let run = against_server(&["tools", "call", "elicit", "message=go?", "fields=false"]);
    expect_code(&run, 0);
    assert!(run.stdout.contains(r#""action":"decline""#), "{run:#?}");
}

#[test]
fn info_keeps_the_line_breaks_of_the_instructions() {
    let server = format!(
        "{} --instructions 'First paragraph.\n\n- point one\n- point two'",
        server(false)
    );
    let run = mcpc(&["--stdio", &server, "info"]);
    expect_code(&run, 0);
    assert!(
        run.stdout.contains(
            "instructions  First paragraph.\n\n              - point one\n              - point two\n"
        ),
        "{run:#?}"
    );
}

/// Processes whose parent is `pid` (Linux `/proc`).
fn children_of(pid: u32) -> Vec<u32> {
    procs()
        .into_iter()
        .filter(|p| p.ppid == pid)
        .map(|p| p.pid)
        .collect()
}

struct Proc {
    pid: u32,
    ppid: u32,
    pgrp: u32,
}

fn procs() -> Vec<Proc> {
    let mut all = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let Some((_, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        // After the name: state, ppid, pgrp.
        if let (Some(ppid), Some(pgrp)) = (fields.get(1), fields.get(2)) {
            all.push(Proc {
                pid,
                ppid: ppid.parse().unwrap_or(0),
                pgrp: pgrp.parse().unwrap_or(0),
            });
        }
    }
    all
}

/// Asserts that `pid` and every process of its group are gone (zombies count as present).
fn assert_gone(pid: u32) {
    let left: Vec<u32> = procs()
        .into_iter()
        .filter(|p| p.pid == pid || p.pgrp == pid)
        .map(|p| p.pid)
        .collect();
    assert!(
        left.is_empty(),
        "server {pid} or its group left behind: {left:?}"
    );
}

/// A running mcpc whose output lines arrive with the time they were read.
struct Running {
    child: Child,
    lines: mpsc::Receiver<(Instant, String)>,
    seen: String,
}

impl Running {
    fn start(args: &[&str]) -> Running {
        let mut child = Command::new(MCPC)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("mcpc starts");
        let (tx, lines) = mpsc::channel();
        let out: Box<dyn Read + Send> = Box::new(child.stdout.take().unwrap());
        let err: Box<dyn Read + Send> = Box::new(child.stderr.take().unwrap());
        for stream in [out, err] {
            let tx = tx.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(stream).lines().map_while(Result::ok) {
                    let _ = tx.send((Instant::now(), line));
                }
            });
        }
        Running {
            child,
            lines,
            seen: String::new(),
        }
    }

    /// Waits (up to 10 s) for a line containing `marker`; when it was read.
    fn wait_for(&mut self, marker: &str) -> (Instant, String) {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok((at, line)) => {
                    self.seen.push_str(&line);
                    self.seen.push('\n');
                    if line.contains(marker) {
                        return (at, line);
                    }
                }
                Err(_) => panic!("never saw {marker:?}; output:\n{}", self.seen),
            }
        }
    }

    /// Waits (up to 10 s) for mcpc to exit: its exit code and when.
    fn exit(&mut self) -> (i32, Instant) {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return (status.code().unwrap_or(-1), Instant::now());
            }
            assert!(
                Instant::now() < deadline,
                "mcpc did not exit:\n{}",
                self.seen
            );
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    fn signal(&self, name: &str) {
        let ok = Command::new("kill")
            .args([&format!("-{name}"), &self.child.id().to_string()])
            .status()
            .expect("kill runs")
            .success();
        assert!(ok);
    }
}

#[test]
fn sigterm_and_sighup_take_the_server_down_and_exit_128_plus_signal() {
    let server = server(false);
    for (signal, code) in [("TERM", 143), ("HUP", 129), ("INT", 130)] {
        let mut mcpc = Running::start(&[
            "--stdio", &server, "tools", "call", "slow", "ms=20000", "steps=40",
        ]);
        mcpc.wait_for("progress 1/40");
        let servers = children_of(mcpc.child.id());
        assert_eq!(servers.len(), 1, "one server: {servers:?}");
        mcpc.signal(signal);
        let (exit, _) = mcpc.exit();
        assert_eq!(exit, code, "SIG{signal}:\n{}", mcpc.seen);
        assert_gone(servers[0]);
    }
}

#[test]
fn mcpc_exits_soon_after_its_answer_whatever_the_server_does() {
    let mut report = Vec::new();
    for mode in [
        "no",
        "ignore-eof",
        "ignore-term",
        "stall-mid-frame",
        "close-stdout",
    ] {
        let server = format!("{} --linger {mode}", server(false));
        let started = Instant::now();
        let mut mcpc = Running::start(&["--stdio", &server, "tools", "call", "session_info"]);
        let (answered, line) = mcpc.wait_for("\"pid\":");
        let pid: u32 = line
            .split("\"pid\":")
            .nth(1)
            .and_then(|s| s.split(|c: char| !c.is_ascii_digit()).next())
            .and_then(|s| s.parse().ok())
            .expect("the server's pid");
        let (code, exited) = mcpc.exit();
        assert_eq!(code, 0, "{mode}:\n{}", mcpc.seen);
        let after = exited.saturating_duration_since(answered);
        report.push(format!(
            "{mode}: exit {} ms after the answer (run {} ms)",
            after.as_millis(),
            exited.saturating_duration_since(started).as_millis()
        ));
        // The requirement is 0.5 s; the bound here is generous for loaded machines.
        assert!(after < Duration::from_secs(2), "{mode}: {after:?}");
        assert_gone(pid);
    }
    eprintln!("{}", report.join("\n"));
}

#[test]
fn a_connect_timeout_names_the_bound_the_flag_and_the_last_stderr_line() {
    let slow = "sh -c 'echo pid=$$ >&2; echo installing packages... >&2; exec sleep 30'";
    let started = Instant::now();
    let run = mcpc(&["--stdio", slow, "--connect-timeout", "1", "-v", "info"]);
    let took = started.elapsed();
    expect_code(&run, 3);
    let last = run.stderr.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("mcpc: could not connect to `sh -c"),
        "{run:#?}"
    );
    // In auto, the server is asked first which era it speaks: that went unanswered.
    assert!(
        last.contains("no answer to server/discover within 1 s"),
        "{run:#?}"
    );
    assert!(last.contains("--connect-timeout SECS"), "{run:#?}");
    assert!(
        last.contains("the server's last stderr line: installing packages..."),
        "{run:#?}"
    );
    assert!(took < Duration::from_secs(4), "{took:?}");
    let pid: u32 = run
        .stderr
        .split("pid=")
        .nth(1)
        .and_then(|s| s.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|s| s.parse().ok())
        .expect("the server's pid in the -v log");
    assert_gone(pid);
}

#[test]
fn the_server_gets_the_allowlisted_environment_unless_inherit_env() {
    let show = "sh -c 'echo \"v=$MCPC_HOST_SECRET p=${PATH:+set}\" >&2; exit 1'";
    let run = |extra: &[&str]| -> Run {
        let mut args = vec!["--stdio", show];
        args.extend_from_slice(extra);
        args.push("info");
        Command::new(MCPC)
            .args(&args)
            .env("MCPC_HOST_SECRET", "hunter2")
            .stdin(Stdio::null())
            .output()
            .expect("mcpc runs")
            .into()
    };
    let plain = run(&[]);
    assert!(
        one_error_line(&plain).contains("server stderr: v= p=set"),
        "{plain:#?}"
    );
    let given = run(&["--env", "MCPC_HOST_SECRET=given"]);
    assert!(one_error_line(&given).contains("v=given"), "{given:#?}");
    let inherited = run(&["--inherit-env"]);
    assert!(
        one_error_line(&inherited).contains("v=hunter2"),
        "{inherited:#?}"
    );
}
