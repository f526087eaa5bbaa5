//! The one error type of the client: one variant per outcome a caller can act on, each keeping
//! its typed cause (`source()` reaches the transport's `io::Error` where there is one).

use std::sync::Arc;
use std::time::Duration;

use mcp_machine::{CallError, Failure};
use serde_json::Value;

use crate::ConnState;

/// Why a call (or connect, or notify) failed.
///
/// Local failures (timeout, shutdown, unavailable, connection lost, send failed, backpressure,
/// cancelled, invalid result) can never be mistaken for the server's own JSON-RPC errors, which
/// are [`Error::Server`].
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The server did not answer in time; the request was cancelled on the wire.
    #[error("request timed out after {}", fmt_duration(*after))]
    Timeout {
        /// How long the call waited.
        after: Duration,
    },
    /// The client is stopping or stopped.
    #[error("client is shut down")]
    Shutdown,
    /// [`crate::ClientBuilder::connect`] failed: see [`ConnectError`] (typed cause, the
    /// server's stderr tail). Only `connect` returns it; calls on a client that is not
    /// connected get [`Error::Unavailable`].
    #[error(transparent)]
    Connect(Box<ConnectError>),
    /// Not connected right now (connecting, or waiting to reconnect).
    #[error("server unavailable ({state}{}{})",
        retry_in.map(|d| format!(", reconnecting in {}", fmt_duration(d))).unwrap_or_default(),
        last_error.as_ref().map(|e| format!("; last error: {e}")).unwrap_or_default())]
    Unavailable {
        /// The connection state.
        state: ConnState,
        /// When the next reconnect attempt is due.
        retry_in: Option<Duration>,
        /// Why the last attempt or connection failed, typed.
        last_error: Option<Failure>,
    },
    /// The connection was lost while the call was in flight. The call is not retried: the server
    /// may or may not have run it, and only the caller knows whether running it twice is safe.
    #[error("connection lost: {0}")]
    ConnectionLost(#[source] Failure),
    /// The transport refused the frame for good (it is closing or gone).
    #[error("the transport refused the frame (it is closing or gone)")]
    SendFailed,
    /// The transport's outgoing queue stayed full for every send attempt.
    #[error("transport busy: gave up after {attempts} sends")]
    Backpressure {
        /// Sends tried.
        attempts: u8,
    },
    /// The server's answer is not a valid JSON-RPC response (an error member that is not an
    /// error object); the call failed at once.
    #[error("invalid response from the server: {reason}")]
    InvalidResponse {
        /// What is wrong with it.
        reason: String,
    },
    /// The server's result does not have the shape the method's result must have.
    #[error("invalid {method} result from the server: {source}")]
    InvalidResult {
        /// The method called.
        method: String,
        /// What did not fit.
        #[source]
        source: Arc<serde_json::Error>,
    },
    /// The server answered with a JSON-RPC error.
    #[error("server error {code}: {message}")]
    Server {
        /// The JSON-RPC error code.
        code: i64,
        /// The message.
        message: String,
        /// Optional data.
        data: Option<Value>,
    },
    /// The call was cancelled by its caller.
    #[error("request cancelled")]
    Cancelled,
    /// A `list_all_*` walk stopped: the server repeated a cursor (it would loop forever) or
    /// gave more pages than the client's bound ([`crate::ClientBuilder::max_pages`]).
    #[error("{method}: pagination stopped after {pages} pages: {reason}")]
    EndlessPagination {
        /// The list method.
        method: String,
        /// Pages received.
        pages: usize,
        /// Why it stopped.
        reason: PaginationStop,
    },
}

/// Why [`crate::ClientBuilder::connect`] failed: the first attempt's typed cause, what was
/// connected to, and the last lines the server wrote on its stderr (stdio servers).
///
/// Match on [`ConnectError::cause`] to act: a [`Failure::Transport`] of
/// [`crate::TransportError::Spawn`] with [`std::io::ErrorKind::NotFound`] (the program does
/// not exist: [`ConnectError::is_permanent`]), [`crate::TransportError::ChildExited`] (exit code
/// or signal), [`Failure::Refused`] (the server's error to `initialize`),
/// [`Failure::UnsupportedVersion`], [`Failure::InitTimeout`] (with the bound that ran out).
/// The client was stopped; nothing is retried.
///
/// Its `Display` is one line for a host's log, ending with the server's last stderr line:
/// `could not connect to stdio: my-server: server process exited (exit code 3); the server's
/// last stderr line: boom: missing API_KEY` (control characters in server text escaped).
#[derive(Debug, Clone, thiserror::Error)]
#[error("could not connect to {}: {cause}{}", clean(target),
    last_line(stderr_tail).map(|l| format!("; the server's last stderr line: {}", clean(l))).unwrap_or_default())]
#[non_exhaustive]
pub struct ConnectError {
    /// What was connected to ("stdio: npx -y server", "tcp 127.0.0.1:9000").
    pub target: String,
    /// Why the attempt failed, typed.
    #[source]
    pub cause: Failure,
    /// The last lines (at most 20, each at most 512 bytes) the server wrote on its stderr,
    /// oldest first, raw (escape them before showing them on a terminal). Empty for transports
    /// without stderr.
    pub stderr_tail: Vec<String>,
}

impl ConnectError {
    /// Whether trying again cannot help (the program does not exist, permission denied).
    pub fn is_permanent(&self) -> bool {
        matches!(&self.cause, Failure::Transport(t) if t.is_permanent())
    }
}

fn last_line(lines: &[String]) -> Option<&String> {
    lines.iter().rev().find(|l| !l.trim().is_empty())
}

/// `text` with control characters (terminal escapes, carriage returns, bidi overrides) shown
/// as escapes, so server text in an error cannot drive a terminal or forge a log line.
fn clean(text: &str) -> String {
    text.chars()
        .flat_map(|c| {
            let bidi = matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
            let shown: Box<dyn Iterator<Item = char>> = if c.is_control() || bidi {
                Box::new(c.escape_unicode())
            } else {
                Box::new(std::iter::once(c))
            };
            shown
        })
        .collect()
}

/// Why a pagination walk stopped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PaginationStop {
    /// The server gave a cursor it had given before.
    #[error("the server repeated the cursor {0:?}")]
    RepeatedCursor(String),
    /// More pages than the bound.
    #[error("more pages than the bound")]
    TooManyPages,
}

impl Error {
    /// The connection failure behind this error, if there is one (lost, or why unavailable).
    pub fn failure(&self) -> Option<&Failure> {
        match self {
            Error::ConnectionLost(f) => Some(f),
            Error::Unavailable { last_error, .. } => last_error.as_ref(),
            Error::Connect(e) => Some(&e.cause),
            _ => None,
        }
    }
}

fn fmt_duration(d: Duration) -> String {
    if d < Duration::from_secs(1) {
        format!("{} ms", d.as_millis())
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

impl From<CallError> for Error {
    fn from(e: CallError) -> Self {
        match e {
            CallError::Timeout { after } => Error::Timeout { after },
            CallError::Shutdown => Error::Shutdown,
            CallError::Unavailable {
                state,
                retry_in,
                last_error,
            } => Error::Unavailable {
                state,
                retry_in,
                last_error,
            },
            CallError::ConnectionLost(f) => Error::ConnectionLost(f),
            CallError::SendFailed => Error::SendFailed,
            CallError::Backpressure { attempts } => Error::Backpressure { attempts },
            CallError::Server(e) => Error::Server {
                code: e.code,
                message: e.message,
                data: e.data,
            },
            CallError::Cancelled => Error::Cancelled,
            CallError::InvalidResponse { reason } => Error::InvalidResponse { reason },
        }
    }
}

/// The result type of the client's calls.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_machine::TransportError;
    use std::error::Error as _;

    #[test]
    fn messages_are_clear_and_causes_typed() {
        let lost = Failure::Transport(TransportError::ChildExited {
            code: None,
            signal: Some(9),
        });
        let e = Error::Unavailable {
            state: ConnState::Backoff,
            retry_in: Some(Duration::from_millis(1500)),
            last_error: Some(lost.clone()),
        };
        assert_eq!(
            e.to_string(),
            "server unavailable (backoff, reconnecting in 1.5 s; last error: server process exited (killed by signal 9))"
        );
        assert_eq!(e.failure(), Some(&lost));
        let spawn = Failure::Transport(TransportError::Spawn(
            std::io::Error::from(std::io::ErrorKind::NotFound).into(),
        ));
        let e = Error::ConnectionLost(spawn);
        let io = e.source().and_then(|s| s.source()).and_then(|s| s.source());
        assert!(io.is_some_and(|s| s.downcast_ref::<std::io::Error>().is_some()));
        assert_eq!(
            Error::Timeout {
                after: Duration::from_millis(250)
            }
            .to_string(),
            "request timed out after 250 ms"
        );
    }
}
