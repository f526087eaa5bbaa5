//! Memory and CPU of the bridge a bench client spawns (`scripts/bench-bridge`):
//! `bridge_rss [--every-ms MS] -- CMD ARGS...` runs CMD (a bench client whose server command
//! is the bridge) with its stdout and stderr passed through, samples every MS (default 20)
//! CMD's own child processes (the bridges; not their children, such as the upstream server a
//! bridge of a stdio server starts) from `/proc`, and when CMD has ended prints one JSON line:
//! `{"mode":"rss","children":K,"hwm_kib":H,"last_rss_kib":R,"last_cpu_ms":C,"last_threads":T}`:
//! K child processes seen, H the largest `VmHWM` (peak resident set) of any of them; R, C and
//! T of the last one (the bridge of the measured run: the connects come first) at its last
//! sample: its `VmRSS`, the CPU time of its threads (`/proc/PID/task/*/schedstat`: threads
//! that ended before the sample are not counted) and the most threads it had. Exits with
//! CMD's status. Linux only (reads `/proc`); not a general process monitor.

use std::collections::HashSet;
use std::process::{Command, ExitCode};
use std::time::Duration;

/// `VmHWM` and `VmRSS` of a process, in KiB; `None` once it is gone.
fn memory(pid: u32) -> Option<(u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
    };
    Some((field("VmHWM:")?, field("VmRSS:")?))
}

/// The CPU time of `pid`'s live threads in nanoseconds, and how many there are.
fn cpu(pid: u32) -> (u64, usize) {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return (0, 0);
    };
    let (mut ns, mut threads) = (0, 0);
    for task in tasks.flatten() {
        threads += 1;
        if let Ok(stat) = std::fs::read_to_string(task.path().join("schedstat")) {
            ns += stat
                .split_whitespace()
                .next()
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(0);
        }
    }
    (ns, threads)
}

/// The children of `pid` (over all its threads: a multi-thread runtime spawns from any).
fn children(pid: u32) -> Vec<u32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for task in tasks.flatten() {
        if let Ok(list) = std::fs::read_to_string(task.path().join("children")) {
            out.extend(
                list.split_whitespace()
                    .filter_map(|p| p.parse::<u32>().ok()),
            );
        }
    }
    out
}

fn main() -> ExitCode {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let Some(dd) = args.iter().position(|a| a == "--") else {
        eprintln!("usage: bridge_rss [--every-ms MS] -- CMD ARGS...");
        return ExitCode::from(2);
    };
    let cmd = args.split_off(dd + 1);
    args.pop();
    let mut every = Duration::from_millis(20);
    let mut it = args.into_iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--every-ms" => {
                let ms = it.next().and_then(|v| v.parse().ok()).unwrap_or(20);
                every = Duration::from_millis(ms);
            }
            other => {
                eprintln!("bridge_rss: unknown argument {other}");
                return ExitCode::from(2);
            }
        }
    }
    if cmd.is_empty() {
        eprintln!("bridge_rss: no command after --");
        return ExitCode::from(2);
    }
    let mut child = match Command::new(&cmd[0]).args(&cmd[1..]).spawn() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("bridge_rss: cannot start {}: {e}", cmd[0]);
            return ExitCode::from(2);
        }
    };
    let pid = child.id();
    let mut seen = HashSet::new();
    let (mut hwm, mut last_rss, mut last_pid) = (0u64, 0u64, 0u32);
    let (mut last_cpu, mut last_threads) = (0u64, 0usize);
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) => {}
            Err(e) => {
                eprintln!("bridge_rss: waiting for {}: {e}", cmd[0]);
                return ExitCode::from(2);
            }
        }
        for c in children(pid) {
            if let Some((h, r)) = memory(c) {
                hwm = hwm.max(h);
                // The child seen last is the measured run's bridge (the connects come first).
                let new = seen.insert(c);
                if new || c == last_pid {
                    let (ns, threads) = cpu(c);
                    if new {
                        last_threads = 0;
                    }
                    last_pid = c;
                    last_rss = r;
                    last_cpu = ns;
                    last_threads = last_threads.max(threads);
                }
            }
        }
        std::thread::sleep(every);
    };
    println!(
        "{{\"mode\":\"rss\",\"children\":{},\"hwm_kib\":{hwm},\"last_rss_kib\":{last_rss},\"last_cpu_ms\":{:.1},\"last_threads\":{last_threads}}}",
        seen.len(),
        last_cpu as f64 / 1e6
    );
    match status.code() {
        Some(0) => ExitCode::SUCCESS,
        Some(c) => ExitCode::from(u8::try_from(c).unwrap_or(1)),
        None => ExitCode::from(1),
    }
}
