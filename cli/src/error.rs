//! Exit codes and the one-line error every failure ends with: `mcpc: <what failed>: <why>`.

use std::fmt;

use crate::sanitize::clean_line;
use crate::signals::Caught;

/// The exit code table as a literal (for `concat!`).
macro_rules! exit_codes {
    () => {
        "\
Exit codes:
  0    success (watch/state: also after Ctrl-C)
  1    the server answered with an error, the tool reported isError, or its result does
       not match the outputSchema it declared (--no-validate-output skips that check)
  2    usage error: bad flags or arguments, invalid --args JSON, an argument the tool's
       schema does not have, a bad -H header, or what this build does not have yet
       (a conformance scenario)
  3    could not connect: spawn failed, handshake failed or timed out (--connect-timeout,
       default 60 s), the server exited
  4    the call timed out (--timeout, default 30 s)
  5    transport or protocol failure during the call (an HTTP answer without the
       call's response or refusing it, in either era, included)
  6    the server needs a login that cannot happen here (no terminal, or declined at the
       prompt): run `mcpc --http URL login`
  7    the --config file cannot be read or is not a server configuration (the error names
       the file, the server, the field, and the line and column)
  129  SIGHUP, 130 interrupted (Ctrl-C), 143 SIGTERM: the call in flight is cancelled on
       the wire and the server is stopped first"
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
  mcpc --http http://127.0.0.1:3001/mcp -H 'Authorization: Bearer …' tools list
  mcpc --config claude_desktop_config.json servers
  mcpc --config-from vscode tools call github/search_repositories query=mcp

OpenTelemetry: with OTEL_EXPORTER_OTLP_ENDPOINT set (e.g. http://localhost:4318), every request
is a span by the MCP semantic conventions and the duration metrics are recorded, exported over
OTLP/HTTP (OTEL_SERVICE_NAME, OTEL_EXPORTER_OTLP_HEADERS and the other standard variables
honoured); nothing is recorded or sent otherwise.

",
    exit_codes!()
);

/// What a command ends with, as a process exit code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// 0: success.
    Ok = 0,
    /// 1: the server answered with an error, the tool reported `isError`, or its result does
    /// not match its `outputSchema`.
    Server = 1,
    /// 2: usage error (clap's, and ours).
    Usage = 2,
    /// 3: could not connect (spawn failed, handshake failed, server exited).
    Connect = 3,
    /// 4: the call timed out.
    Timeout = 4,
    /// 5: transport or protocol failure during the call (an HTTP answer that holds no
    /// response, or refuses the POST, as the transport reports it in either era).
    Transport = 5,
    /// 6: the server needs a new authorization and no person could be asked here (no
    /// terminal, or declined): `mcpc --http URL login`.
    Login = 6,
    /// 7: the `--config` file cannot be read or is not a server configuration.
    Config = 7,
    /// 129: SIGHUP (128 + 1).
    HangUp = 129,
    /// 130: interrupted by Ctrl-C (SIGINT, 128 + 2).
    Interrupted = 130,
    /// 143: SIGTERM (128 + 15).
    Terminated = 143,
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

    /// A signal during `what`: exit 128 + its number.
    pub fn signalled(what: impl Into<String>, caught: Caught) -> Self {
        let stopped = format!("{}; the server was stopped", caught.name());
        let e = match caught {
            Caught::Interrupt => Self::cancelled(what),
            Caught::Terminate => {
                Self::new(Exit::Terminated, what, format!("terminated ({stopped})"))
            }
            Caught::HangUp => Self::new(Exit::HangUp, what, format!("hung up ({stopped})")),
        };
        debug_assert_eq!(e.exit.code(), 128 + caught.number());
        e
    }

    /// A failed call of the client library, mapped to its exit code.
    pub fn call(what: impl Into<String>, e: &mcp_runtime::Error) -> Self {
        use mcp_runtime::Error as E;
        let exit = match e {
            // Made up by the HTTP transport, not the server's answer: a 2xx without the
            // response, a refused POST (2026-07-28), a stream lost.
            E::Server { code, .. }
                if *code == mcp_runtime::codes::HTTP_REFUSED
                    || *code == mcp_runtime::codes::STREAM_LOST =>
            {
                Exit::Transport
            }
            // The server's answer (or what it asked for) ended the call.
            E::Server { .. }
            | E::MissingCapability { .. }
            | E::ResourceNotFound { .. }
            | E::UnknownResultType { .. }
            | E::InputRequired { .. }
            | E::InputFailed { .. }
            // The tool's result broke the schema the server declared for it.
            | E::OutputSchemaMismatch { .. }
            | E::InvalidOutputSchema { .. } => Exit::Server,
            E::Timeout { .. } => Exit::Timeout,
            E::Unavailable { .. } | E::Connect(_) => Exit::Connect,
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
        // One line, and no server text may drive the terminal.
        write!(
            f,
            "mcpc: {}: {}",
            clean_line(&self.what),
            clean_line(&self.why)
        )
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
            code: mcp_runtime::codes::INVALID_PARAMS,
            message: "Unknown tool: nope".into(),
            data: None,
        };
        assert_eq!(CliError::call("x", &server).exit.code(), 1);
        let made_up = mcp_runtime::Error::Server {
            code: mcp_runtime::codes::HTTP_REFUSED,
            message: "the server answered the POST of tools/call with HTTP 200 and no response"
                .into(),
            data: None,
        };
        assert_eq!(CliError::call("x", &made_up).exit.code(), 5);
        let lost = mcp_runtime::Error::ConnectionLost(mcp_runtime::Failure::Transport(
            mcp_runtime::TransportError::Eof,
        ));
        assert_eq!(CliError::call("x", &lost).exit.code(), 5);
    }

    #[test]
    fn signals_exit_with_128_plus_their_number() {
        for caught in [Caught::Interrupt, Caught::Terminate, Caught::HangUp] {
            assert_eq!(
                CliError::signalled("x", caught).exit.code(),
                128 + caught.number()
            );
        }
    }

    #[test]
    fn the_error_line_is_one_clean_line() {
        let server = mcp_runtime::Error::Server {
            code: 1,
            message: "bad\x1b]0;pwned\x07\nnext\rline".into(),
            data: None,
        };
        let line = CliError::call("tools call x", &server).to_string();
        assert_eq!(
            line,
            "mcpc: tools call x: server error 1: bad\\x1b]0;pwned\\x07 next\\x0dline"
        );
    }
}
