//! The chaos matrix through `mcpc`: for every mode of the library's matrix
//! (`tests/tests/chaos.rs`), one `mcpc --stdio '<chaos test server>' ...` run must end with the
//! expected exit status, exit within 0.5 s of printing its answer or error, leave no server
//! process behind (zombie or not), and the next run against the same server (which behaves by
//! then) must succeed. Each run's figures (answer time, exit delay, mcpc's peak RSS) are
//! printed (`cargo test -p mcp-cli --test chaos -- --nocapture`).
//!
//! `MCP_CHAOS_STDERR_BYTES` sets the size of the stderr floods (default 64 MiB).

mod common;

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::{MCPC, server};

/// mcpc must exit within this after its last line (the answer or the error).
const EXIT_AFTER_ANSWER: Duration = Duration::from_millis(500);
/// A run may take at most its call timeout plus this (start-up, the handshake, the exit).
const RUN_ALLOWANCE: Duration = Duration::from_secs(5);
/// mcpc's peak resident size must stay under this (a 1 GiB stderr flood must not show).
const PEAK_BOUND_MIB: u64 = 100;
const DEFAULT_STDERR_BYTES: u64 = 64 << 20;

/// One mode: server flags, mcpc's command, what it must end with.
struct Mode {
    name: &'static str,
    /// Flags of the test server (after `--`); `--pid-file` is added, and `--once` when `once`.
    flags: Vec<String>,
    once: bool,
    /// mcpc's arguments after `--stdio SERVER`.
    args: Vec<String>,
    /// The call timeout given with `--timeout` (seconds).
    timeout_s: u64,
    code: i32,
    /// Text the output (stdout and stderr) must contain.
    contains: Option<String>,
    /// Text the output must not contain.
    lacks: Option<&'static str>,
}

fn call(name: &'static str, tool_args: &[&str], code: i32) -> Mode {
    let mut args = vec!["tools".to_owned(), "call".to_owned()];
    args.extend(tool_args.iter().map(|s| (*s).to_owned()));
    Mode {
        name,
        flags: Vec::new(),
        once: false,
        args,
        timeout_s: 1,
        code,
        contains: None,
        lacks: None,
    }
}

impl Mode {
    /// Start-up chaos; a mode that cannot connect (exit 3) misbehaves once.
    fn flags(mut self, flags: &[&str]) -> Self {
        self.flags = flags.iter().map(|s| (*s).to_owned()).collect();
        self.once = self.code == 3;
        self
    }

    fn contains(mut self, text: impl Into<String>) -> Self {
        self.contains = Some(text.into());
        self
    }

    fn timeout(mut self, secs: u64) -> Self {
        self.timeout_s = secs;
        self
    }
}

fn modes(stderr_bytes: u64) -> Vec<Mode> {
    let flood = format!("bytes={stderr_bytes}");
    let flood_flag = stderr_bytes.to_string();
    vec![
        call("slow", &["slow", "ms=300"], 0).contains("slept 300 ms"),
        call("silent", &["silent", "ms=1500"], 4).contains("timed out"),
        call("dies: exit", &["die"], 5).contains("exit code 3"),
        call("dies: SIGKILL", &["sigkill"], 5).contains("signal 9"),
        call("dies: closes stdout, stays alive", &["close_stdout"], 5).contains("connection lost"),
        call("garbage lines", &["garbage"], 0).contains("wrote a garbage line"),
        call("partial line, stall (under)", &["partial", "ms=300"], 0).contains("stalled 300"),
        call("partial line, stall (past)", &["partial", "ms=1500"], 4).contains("timed out"),
        call("line over the limit", &["oversized", "bytes=17825792"], 5)
            .timeout(10)
            .contains("oversized frame"),
        call("invalid UTF-8 (a notification)", &["invalid_utf8"], 0).contains("not UTF-8"),
        call(
            "invalid UTF-8 (the answer)",
            &["invalid_utf8", "in_answer=true"],
            0,
        )
        .contains("bad"),
        call(
            "stderr flood from the start",
            &["echo", "message=through"],
            0,
        )
        .flags(&["--stderr-flood", &flood_flag])
        .contains("Echo: through"),
        call("stderr flood during a call", &["stderr_flood", &flood], 0)
            .timeout(300)
            .contains(format!("wrote {stderr_bytes} bytes")),
        call("notification flood", &["flood", "count=20000"], 0)
            .timeout(30)
            .contains("sent 20000 notifications"),
        call("answers twice", &["duplicate"], 0).contains("duplicate"),
        call("answers unknown ids", &["unknown_id"], 0).contains("987654321"),
        call("answers after the timeout", &["late", "ms=1500"], 4).contains("timed out"),
        call(
            "server requests during initializing",
            &["echo", "message=early"],
            0,
        )
        .flags(&["--handshake", "early-requests"])
        .contains("Echo: early"),
        call("initialize error", &["echo", "message=x"], 3)
            .flags(&["--handshake", "error"])
            .contains("refused initialize"),
        call("unsupported protocol version", &["echo", "message=x"], 3)
            .flags(&["--version-override", "1999-01-01"])
            .contains("1999-01-01"),
        Mode {
            args: vec!["info".into()],
            lacks: Some("second answer"),
            ..call("second initialize result", &[], 0)
                .flags(&["--handshake", "twice"])
                .contains("mcp-chaos-server")
        },
        // `tools call` lists the tools first (for the argument types), so the endless cursor
        // fails every call: the next run behaves thanks to `--once`.
        Mode {
            args: vec!["tools".into(), "list".into()],
            once: true,
            ..call("endless cursors", &[], 5)
                .flags(&["--endless-cursor"])
                .contains("repeated the cursor")
        },
        call("lone surrogates", &["surrogate"], 0).contains("lone \u{fffd} surrogate"),
    ]
}

/// What one mcpc run did.
struct Run {
    code: i32,
    output: String,
    /// From the start to the last line.
    answered: Duration,
    /// From the last line to the exit.
    exit_after: Duration,
    /// mcpc's peak resident size (its last `VmHWM` read before it exited), KiB.
    peak_kib: u64,
}

/// mcpc's `VmHWM`, KiB; `None` unless the process holding `pid` is mcpc (before its `exec`
/// a forked child shows this test process's peak).
fn peak_of(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let name = status.lines().find_map(|l| l.strip_prefix("Name:"))?;
    if name.trim() != "mcpc" {
        return None;
    }
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|r| r.split_whitespace().next())
        .and_then(|n| n.parse().ok())
}

/// Runs mcpc with `args`, reading its output lines as they come, until it exits.
fn run(args: &[String], limit: Duration) -> Run {
    let started = Instant::now();
    let mut child = Command::new(MCPC)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("mcpc starts");
    let (tx, lines) = mpsc::channel::<(Instant, String)>();
    let out: Box<dyn Read + Send> = Box::new(child.stdout.take().unwrap());
    let err: Box<dyn Read + Send> = Box::new(child.stderr.take().unwrap());
    let readers: Vec<_> = [out, err]
        .into_iter()
        .map(|stream| {
            let tx = tx.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(stream).lines().map_while(Result::ok) {
                    let _ = tx.send((Instant::now(), line));
                }
            })
        })
        .collect();
    drop(tx);
    let mut peak_kib = 0;
    let (code, exited) = loop {
        if let Some(p) = peak_of(child.id()) {
            peak_kib = peak_kib.max(p);
        }
        if let Some(status) = child.try_wait().unwrap() {
            break (status.code().unwrap_or(-1), Instant::now());
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("mcpc {args:?} did not exit within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    for r in readers {
        r.join().unwrap();
    }
    let mut output = String::new();
    let mut last = started;
    for (at, line) in lines.try_iter() {
        last = last.max(at);
        output.push_str(&line);
        output.push('\n');
    }
    Run {
        code,
        output,
        answered: last.saturating_duration_since(started),
        exit_after: exited.saturating_duration_since(last),
        peak_kib,
    }
}

fn pids_in(path: &Path) -> Vec<u32> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

/// The pids that still exist (a zombie exists until reaped), with their state.
fn left(pids: &[u32]) -> Vec<(u32, String)> {
    pids.iter()
        .filter_map(|p| {
            let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).ok()?;
            let state = stat
                .rsplit_once(')')?
                .1
                .split_whitespace()
                .next()?
                .to_owned();
            Some((*p, state))
        })
        .collect()
}

struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn chaos_matrix_through_mcpc() {
    let stderr_bytes = std::env::var("MCP_CHAOS_STDERR_BYTES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_STDERR_BYTES);
    let only = std::env::var("MCP_CHAOS_ONLY").ok();
    let scratch = Scratch(std::env::temp_dir().join(format!("mcpc-chaos-{}", std::process::id())));
    std::fs::create_dir_all(&scratch.0).unwrap();
    let mut report = Vec::new();
    let mut failures = Vec::new();
    for (n, mode) in modes(stderr_bytes).iter().enumerate() {
        if only.as_deref().is_some_and(|o| !mode.name.contains(o)) {
            continue;
        }
        let pid_file = scratch.0.join(format!("pids-{n}"));
        let mut flags = mode.flags.clone();
        flags.extend(["--pid-file".into(), pid_file.display().to_string()]);
        if mode.once {
            flags.extend([
                "--once".into(),
                scratch.0.join(format!("once-{n}")).display().to_string(),
            ]);
        }
        let server_line = format!(
            "{} -- {}",
            server(true),
            flags
                .iter()
                .map(|f| shlex::try_quote(f).unwrap().into_owned())
                .collect::<Vec<_>>()
                .join(" ")
        );
        let mut args = vec![
            "--stdio".to_owned(),
            server_line,
            "--timeout".into(),
            mode.timeout_s.to_string(),
        ];
        args.extend(mode.args.iter().cloned());
        let limit = Duration::from_secs(mode.timeout_s) + RUN_ALLOWANCE;
        let r = run(&args, limit);
        let mut fail = |what: String| failures.push(format!("{}: {what}\n{}", mode.name, r.output));
        if r.code != mode.code {
            fail(format!("exit {}, expected {}", r.code, mode.code));
        }
        if r.exit_after > EXIT_AFTER_ANSWER {
            fail(format!("exited {:?} after its last line", r.exit_after));
        }
        if let Some(want) = &mode.contains
            && !r.output.contains(want.as_str())
        {
            fail(format!("output lacks {want:?}"));
        }
        if let Some(bad) = mode.lacks
            && r.output.contains(bad)
        {
            fail(format!("output has {bad:?}"));
        }
        if r.peak_kib / 1024 >= PEAK_BOUND_MIB {
            fail(format!("mcpc's peak RSS {} MiB", r.peak_kib / 1024));
        }
        // mcpc reaps its server before it exits: nothing may be left, not even a zombie.
        let servers = pids_in(&pid_file);
        if servers.is_empty() {
            fail("no server pid recorded".into());
        }
        let remaining = left(&servers);
        if !remaining.is_empty() {
            fail(format!("server processes left (pid, state): {remaining:?}"));
        }
        // Recovery: the next run against the same server (it behaves by now) succeeds.
        let mut again = args.clone();
        let at = again.len() - mode.args.len();
        again.truncate(at);
        again.extend(["tools", "call", "echo", "message=back"].map(String::from));
        let back = run(&again, RUN_ALLOWANCE + Duration::from_secs(1));
        if back.code != 0 || !back.output.contains("Echo: back") {
            failures.push(format!(
                "{}: no recovery: exit {}\n{}",
                mode.name, back.code, back.output
            ));
        }
        let remaining = left(&pids_in(&pid_file));
        if !remaining.is_empty() {
            failures.push(format!(
                "{}: after recovery, left: {remaining:?}",
                mode.name
            ));
        }
        report.push(format!(
            "{:<36} | exit {} (want {}) | last line at {:>5} ms | exit {:>3} ms after it | peak RSS {:>3} MiB | servers {} | recovery exit {}",
            mode.name,
            r.code,
            mode.code,
            r.answered.as_millis(),
            r.exit_after.as_millis(),
            r.peak_kib / 1024,
            servers.len(),
            back.code,
        ));
    }
    eprintln!("{}", report.join("\n"));
    assert!(
        failures.is_empty(),
        "mcpc chaos failures:\n{}",
        failures.join("\n")
    );
}
