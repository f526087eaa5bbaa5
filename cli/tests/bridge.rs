//! End to end: `mcpc bridge` as a host starts it (a child process, JSON-RPC lines on its
//! stdin and stdout) in front of mcpc's own test server: the answers, stdout holding nothing
//! but JSON-RPC even with `-vv`, and the end: the host closing stdin, or a signal, ends the
//! bridge and its server process with it (no orphan).

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::*;
use serde_json::{Value, json};

/// Every wait is bounded by this.
const BOUND: Duration = Duration::from_secs(30);

struct Bridge {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    pid_file: PathBuf,
}

impl Bridge {
    fn start(test: &str, extra: &[&str]) -> Bridge {
        let pid_file =
            std::env::temp_dir().join(format!("mcpc-bridge-{test}-{}.pids", std::process::id()));
        let _ = std::fs::remove_file(&pid_file);
        let upstream = format!("{} -- --pid-file {}", server(false), pid_file.display());
        let mut child = Command::new(MCPC)
            .args(["bridge", "--stdio", &upstream])
            .args(extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn mcpc bridge");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        Bridge {
            child,
            stdin,
            lines,
            pid_file,
        }
    }

    fn send(&mut self, v: Value) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        writeln!(stdin, "{v}").expect("write to the bridge");
        stdin.flush().expect("flush");
    }

    /// The answer to `id`; every line read must be JSON-RPC.
    fn answer(&mut self, id: Value) -> Value {
        let deadline = Instant::now() + BOUND;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self.lines.recv_timeout(left).expect("an answer in time");
            let v: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("stdout holds a line that is not JSON ({e}): {line}"));
            assert_eq!(v["jsonrpc"], "2.0", "{line}");
            if v["id"] == id && v.get("method").is_none() {
                return v;
            }
        }
    }

    fn init_and_echo(&mut self) {
        self.send(
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "cli-test-host", "version": "1"}}}),
        );
        let init = self.answer(json!(1));
        assert!(init["result"]["serverInfo"]["name"].is_string(), "{init}");
        self.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        self.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"message": "through"}}}));
        let echo = self.answer(json!(2));
        assert_eq!(
            echo["result"]["content"][0]["text"], "Echo: through",
            "{echo}"
        );
    }

    /// Waits for the bridge to exit; its exit code.
    fn wait(&mut self) -> i32 {
        let deadline = Instant::now() + BOUND;
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                return status.code().unwrap_or(-1);
            }
            assert!(Instant::now() < deadline, "the bridge did not exit");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The pids the upstream server wrote.
    fn server_pids(&self) -> Vec<i32> {
        std::fs::read_to_string(&self.pid_file)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect()
    }
}

impl Drop for Bridge {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.pid_file);
    }
}

/// Whether a process with this pid exists (a zombie counts as gone: it runs nothing).
fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

#[test]
fn the_host_closing_stdin_ends_the_bridge_and_its_server() {
    let mut bridge = Bridge::start("eof", &["-vv"]);
    bridge.init_and_echo();
    let pids = bridge.server_pids();
    assert_eq!(pids.len(), 1, "one server process: {pids:?}");
    assert!(alive(pids[0]));
    drop(bridge.stdin.take());
    assert_eq!(bridge.wait(), 0);
    assert!(
        !alive(pids[0]),
        "the server {} outlived the bridge",
        pids[0]
    );
}

#[test]
fn a_signal_ends_the_bridge_and_its_server() {
    let mut bridge = Bridge::start("term", &[]);
    bridge.init_and_echo();
    let pids = bridge.server_pids();
    assert_eq!(pids.len(), 1, "{pids:?}");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(bridge.child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .expect("signal the bridge");
    bridge.wait();
    assert!(
        !alive(pids[0]),
        "the server {} outlived the bridge",
        pids[0]
    );
}

#[test]
fn a_bad_upstream_flag_is_a_usage_error_before_anything_is_served() {
    let run = mcpc(&["bridge", "--http", "not a url"]);
    expect_code(&run, 2);
    assert!(
        run.stdout.is_empty(),
        "stdout must stay clean: {}",
        run.stdout
    );
}

/// README's host configurations for the bridge: each parses as a host's file (the group's own
/// reader), names `mcpc bridge`, and its arguments are a command line mcpc accepts (with stdin
/// closed at once, the bridge ends before connecting: exit 0 means the flags parsed).
#[test]
fn the_readme_host_configurations_start_a_bridge() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md"))
        .expect("README");
    let (_, rest) = readme
        .split_once("<!-- bridge-config:begin -->")
        .expect("begin marker");
    let (section, _) = rest
        .split_once("<!-- bridge-config:end -->")
        .expect("end marker");
    let blocks: Vec<&str> = section
        .split("```json")
        .skip(1)
        .map(|b| b.split("```").next().unwrap_or_default())
        .collect();
    assert_eq!(blocks.len(), 2, "Claude Desktop and VS Code");
    for block in blocks {
        let env = |name: &str| (name == "TEAM").then(|| "blue".to_owned());
        let config = mcp_runtime::group::GroupConfig::parse_with_env(block, "README.md", env)
            .unwrap_or_else(|e| panic!("README's configuration does not parse: {e}"));
        let server = config.server("remote-tools").expect("remote-tools");
        let mcp_runtime::group::ServerTransport::Stdio { command, args, .. } = &server.transport
        else {
            panic!("a stdio entry");
        };
        assert_eq!(command, "mcpc");
        assert_eq!(args[0], "bridge");
        let run = Command::new(MCPC)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("run mcpc");
        assert_eq!(
            run.status.code(),
            Some(0),
            "mcpc {args:?}: {}",
            String::from_utf8_lossy(&run.stderr)
        );
        assert!(run.stdout.is_empty());
    }
}

/// `mcpc bridge --config FILE`: the host sees the group's merged view; calls are routed by
/// merged name; an unknown name is -32602; closing stdin ends every server.
#[test]
fn a_group_bridge_serves_the_merged_view_and_ends_every_server() {
    let dir = std::env::temp_dir().join(format!("mcpc-bridge-group-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let pids = |name: &str| dir.join(format!("{name}.pids")).display().to_string();
    let config = dir.join("config.json");
    let text = json!({"mcpServers": {
        "a": {"command": MCPC, "args": ["__test-server", "--", "--pid-file", pids("a")]},
        "b": {"command": MCPC, "args": ["__test-server", "--chaos", "--", "--pid-file", pids("b")]},
    }});
    std::fs::write(&config, text.to_string()).unwrap();
    let mut child = Command::new(MCPC)
        .args(["bridge", "--config", config.to_str().unwrap()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut bridge = Bridge {
        child,
        stdin: None,
        lines,
        pid_file: dir.join("unused"),
    };
    bridge.stdin = bridge.child.stdin.take();
    bridge.send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "cli-test-host", "version": "1"}}}),
    );
    let init = bridge.answer(json!(1));
    assert_eq!(
        init["result"]["serverInfo"]["name"], "mcpc-bridge",
        "{init}"
    );
    bridge.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}));
    let tools = bridge.answer(json!(2));
    let names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(
        names.contains(&"a__echo") && names.contains(&"b__echo"),
        "{names:?}"
    );
    assert!(
        names.contains(&"die"),
        "a tool only b lists keeps its name: {names:?}"
    );
    bridge.send(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "b__echo", "arguments": {"message": "to b"}}}));
    let echo = bridge.answer(json!(3));
    assert_eq!(echo["result"]["content"][0]["text"], "Echo: to b", "{echo}");
    bridge.send(json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
        "params": {"name": "nope", "arguments": {}}}));
    assert_eq!(bridge.answer(json!(4))["error"]["code"], -32602);
    let read = |name: &str| -> Vec<i32> {
        std::fs::read_to_string(pids(name))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect()
    };
    let (a, b) = (read("a"), read("b"));
    assert_eq!((a.len(), b.len()), (1, 1), "{a:?} {b:?}");
    drop(bridge.stdin.take());
    assert_eq!(bridge.wait(), 0);
    assert!(!alive(a[0]) && !alive(b[0]), "a server outlived the bridge");
    let _ = std::fs::remove_dir_all(&dir);
}
