//! The one error type of the client: one variant per outcome a caller can act on.

use std::time::Duration;

use mcp_machine::CallError;
use serde_json::Value;

use crate::ConnState;

/// Why a call (or connect, or notify) failed.
///
/// Local failures (timeout, shutdown, unavailable, transport, backpressure, cancelled,
/// protocol) can never be mistaken for the server's own JSON-RPC errors, which are
/// [`Error::Server`].
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
    /// Not connected right now (connecting, or waiting to reconnect).
    #[error("server unavailable ({state}{}{})",
        retry_in.map(|d| format!(", reconnecting in {}", fmt_duration(d))).unwrap_or_default(),
        last_error.as_ref().map(|e| format!("; last error: {e}")).unwrap_or_default())]
    Unavailable {
        /// The connection state.
        state: ConnState,
        /// When the next reconnect attempt is due.
        retry_in: Option<Duration>,
        /// Why the last attempt or connection failed.
        last_error: Option<String>,
    },
    /// The transport failed under the call (connection lost, send failed, spawn failed).
    #[error("transport error: {0}")]
    Transport(String),
    /// The transport's outgoing queue stayed full for every send attempt.
    #[error("transport busy: gave up after {attempts} sends")]
    Backpressure {
        /// Sends tried.
        attempts: u8,
    },
    /// The server broke the protocol (an answer of the wrong shape, a bad handshake).
    #[error("protocol violation: {0}")]
    Protocol(String),
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
                state: state.into(),
                retry_in,
                last_error,
            },
            CallError::Transport { reason } => Error::Transport(reason),
            CallError::Backpressure { attempts } => Error::Backpressure { attempts },
            CallError::Server(e) => Error::Server {
                code: e.code,
                message: e.message,
                data: e.data,
            },
            CallError::Cancelled => Error::Cancelled,
            CallError::Protocol { reason } => Error::Protocol(reason),
        }
    }
}

/// The result type of the client's calls.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_clear() {
        let e = Error::Unavailable {
            state: ConnState::Backoff,
            retry_in: Some(Duration::from_millis(1500)),
            last_error: Some("connection lost: child exited".into()),
        };
        assert_eq!(
            e.to_string(),
            "server unavailable (backoff, reconnecting in 1.5 s; last error: connection lost: child exited)"
        );
        assert_eq!(
            Error::Timeout {
                after: Duration::from_millis(250)
            }
            .to_string(),
            "request timed out after 250 ms"
        );
    }
}
