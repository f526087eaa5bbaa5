//! Exit codes and the one-line error every failure ends with: `mcpc: <what failed>: <why>`.

use std::fmt;

/// The exit code table as a literal (for `concat!`).
macro_rules! exit_codes {
    () => {
        "\
Exit codes:
  0    success (watch/state: also after Ctrl-C)
  1    the server answered with an error, or the tool reported isError
  2    usage error: bad flags or arguments, invalid --args JSON, an argument the tool's
       schema does not have, or a transport this build does not have yet (--http, --sse)
  3    could not connect: spawn failed, handshake failed, the server exited
  4    the call timed out (--timeout, default 30 s)
  5    transport or protocol failure during the call
  130  interrupted (Ctrl-C): the call in flight is cancelled on the wire"
    };
}

/// The table of exit codes, shown by `mcpc -h` and in the README.
pub const EXIT_CODES: &str = exit_codes!();

/// Examples and the exit codes, shown by `mcpc --help`.
pub const LONG_HELP: &str = concat!(
    "\
Examples:
  mcpc demo
  mcpc --stdio 'npx -y @modelcontextprotocol/server-everything' tools list
  mcpc --stdio 'python server.py' --env API_KEY=xyz tools call add a=2 b=3
  mcpc --stdio 'python server.py' tools call search --args '{\"query\": \"mcp\", \"limit\": 5}'
  mcpc --stdio 'python server.py' --json resources read file:///notes.txt
  mcpc --stdio 'python server.py' prompts get greeting name=Ada
  mcpc --stdio 'python server.py' watch --level debug

",
    exit_codes!()
);

/// What a command ends with, as a process exit code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// 0: success.
    Ok = 0,
    /// 1: the server answered with an error, or the tool reported `isError`.
    Server = 1,
    /// 2: usage error (clap's, and ours).
    Usage = 2,
    /// 3: could not connect (spawn failed, handshake failed, server exited).
    Connect = 3,
    /// 4: the call timed out.
    Timeout = 4,
    /// 5: transport or protocol failure during the call.
    Transport = 5,
    /// 130: interrupted by Ctrl-C.
    Interrupted = 130,
}

impl Exit {
    /// The process exit code.
    pub fn code(self) -> i32 {
        self as i32
    }
}

/// A failure: what failed, why, and the exit code it maps to.
#[derive(Debug, Clone)]
pub struct CliError {
    /// The exit code.
    pub exit: Exit,
    /// What failed (`tools call add`, `could not connect to ...`).
    pub what: String,
    /// Why.
    pub why: String,
}

impl CliError {
    /// A failure with an explicit exit code.
    pub fn new(exit: Exit, what: impl Into<String>, why: impl Into<String>) -> Self {
        CliError {
            exit,
            what: what.into(),
            why: why.into(),
        }
    }

    /// A usage error (exit 2).
    pub fn usage(what: impl Into<String>, why: impl Into<String>) -> Self {
        Self::new(Exit::Usage, what, why)
    }

    /// Ctrl-C during `what` (exit 130).
    pub fn cancelled(what: impl Into<String>) -> Self {
        Self::new(Exit::Interrupted, what, "cancelled")
    }

    /// A failed call of the client library, mapped to its exit code.
    pub fn call(what: impl Into<String>, e: &mcp_runtime::Error) -> Self {
        use mcp_runtime::Error as E;
        let exit = match e {
            E::Server { .. } => Exit::Server,
            E::Timeout { .. } => Exit::Timeout,
            E::Unavailable { .. } => Exit::Connect,
            E::Cancelled => Exit::Interrupted,
            _ => Exit::Transport,
        };
        let why = match e {
            E::Server {
                data: Some(data), ..
            } if !data.is_null() => format!("{e} ({data})"),
            _ => e.to_string(),
        };
        Self::new(exit, what, why)
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "mcpc: {}: {}", self.what, self.why)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn library_errors_map_to_exit_codes() {
        let timeout = mcp_runtime::Error::Timeout {
            after: Duration::from_millis(300),
        };
        let e = CliError::call("tools call late", &timeout);
        assert_eq!(e.exit, Exit::Timeout);
        assert_eq!(
            e.to_string(),
            "mcpc: tools call late: request timed out after 300 ms"
        );
        let server = mcp_runtime::Error::Server {
            code: -32602,
            message: "Unknown tool: nope".into(),
            data: None,
        };
        assert_eq!(CliError::call("x", &server).exit.code(), 1);
        let lost = mcp_runtime::Error::ConnectionLost(mcp_runtime::Failure::Transport(
            mcp_runtime::TransportError::Eof,
        ));
        assert_eq!(CliError::call("x", &lost).exit.code(), 5);
    }
}
