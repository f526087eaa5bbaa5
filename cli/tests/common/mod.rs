//! Running the built `mcpc` against its own hidden test server (`mcpc __test-server`).
#![allow(dead_code)]

use std::process::{Command, Output};

/// The built binary.
pub const MCPC: &str = env!("CARGO_BIN_EXE_mcpc");

/// The `--stdio` command line of the in-repo test server (`--chaos` adds the chaos tools).
pub fn server(chaos: bool) -> String {
    let bin = shlex::try_quote(MCPC).expect("quotable path").into_owned();
    if chaos {
        format!("{bin} __test-server --chaos")
    } else {
        format!("{bin} __test-server")
    }
}

/// What one run printed and how it ended.
#[derive(Debug)]
pub struct Run {
    /// Exit code (-1 if killed by a signal).
    pub code: i32,
    /// stdout.
    pub stdout: String,
    /// stderr.
    pub stderr: String,
}

impl From<Output> for Run {
    fn from(o: Output) -> Self {
        Run {
            code: o.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        }
    }
}

/// Runs `mcpc ARGS` (stdin closed).
pub fn mcpc(args: &[&str]) -> Run {
    Command::new(MCPC)
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("mcpc runs")
        .into()
}

/// Runs `mcpc --stdio <test server> ARGS`.
pub fn against_server(args: &[&str]) -> Run {
    let server = server(false);
    let mut all = vec!["--stdio", server.as_str()];
    all.extend_from_slice(args);
    mcpc(&all)
}

/// Runs `mcpc --stdio <chaos test server> ARGS`.
pub fn against_chaos(args: &[&str]) -> Run {
    let server = server(true);
    let mut all = vec!["--stdio", server.as_str()];
    all.extend_from_slice(args);
    mcpc(&all)
}

/// Asserts the exit code, showing the whole run when it differs.
pub fn expect_code(run: &Run, code: i32) {
    assert_eq!(run.code, code, "unexpected exit code: {run:#?}");
}

/// Asserts that stderr is exactly one line starting with `mcpc: `.
pub fn one_error_line(run: &Run) -> &str {
    let lines: Vec<&str> = run.stderr.lines().filter(|l| !l.is_empty()).collect();
    assert_eq!(lines.len(), 1, "expected one line on stderr: {run:#?}");
    assert!(lines[0].starts_with("mcpc: "), "{run:#?}");
    lines[0]
}
