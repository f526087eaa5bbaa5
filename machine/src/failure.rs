//! Why a transport, a handshake or a connection ended: typed, matchable causes that travel from
//! the transport through the machine to the caller's error and `last_error`, keeping their
//! `source()`.
//!
//! These are data, not IO: the machine never performs IO, but it carries the transport's
//! `io::Error` (shared in an [`Arc`]) so that a host can tell "command not found" (do not retry)
//! from "the server crashed" by matching, not by reading text.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::io;
use std::sync::Arc;
use std::time::Duration;

use crate::request::RpcError;

/// An `io::Error` shared by every copy of the failure that carries it.
///
/// Compared and hashed by its kind and message (the model checker stores failures in its states;
/// two errors that read the same are the same cause).
#[derive(Clone, Debug)]
pub struct IoCause(pub Arc<io::Error>);

impl IoCause {
    /// Wraps an `io::Error`.
    pub fn new(error: io::Error) -> Self {
        IoCause(Arc::new(error))
    }

    /// The error's kind (`NotFound` for a program that does not exist, ...).
    pub fn kind(&self) -> io::ErrorKind {
        self.0.kind()
    }
}

impl From<io::Error> for IoCause {
    fn from(e: io::Error) -> Self {
        IoCause::new(e)
    }
}

impl PartialEq for IoCause {
    fn eq(&self, other: &Self) -> bool {
        self.0.kind() == other.0.kind() && self.0.to_string() == other.0.to_string()
    }
}
impl Eq for IoCause {}

impl Hash for IoCause {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.kind().hash(state);
        self.0.to_string().hash(state);
    }
}

impl fmt::Display for IoCause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for IoCause {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&*self.0)
    }
}

/// Why a transport generation ended (or never started), as the transport reports it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, thiserror::Error)]
#[non_exhaustive]
pub enum TransportError {
    /// The server process could not be started (program not found, permission denied, ...).
    #[error("failed to spawn the server process: {0}")]
    Spawn(#[source] IoCause),
    /// The byte stream could not be opened (connection refused, no such socket, ...).
    #[error("failed to connect: {0}")]
    Connect(#[source] IoCause),
    /// Reading from or writing to the link failed.
    #[error("transport i/o error: {0}")]
    Io(#[source] IoCause),
    /// The peer closed its end of the link at a frame boundary.
    #[error("the peer closed the connection")]
    Eof,
    /// The peer closed its end of the link in the middle of a frame.
    #[error("the peer closed the connection in the middle of a frame ({partial} bytes)")]
    Truncated {
        /// Bytes of the unfinished frame that were read.
        partial: usize,
    },
    /// A frame exceeded the frame limit, so the link was ended (it was not buffered whole).
    #[error("frame larger than {max} bytes ({seen} bytes read before giving up)")]
    Oversized {
        /// Bytes of the oversized frame read before giving up.
        seen: usize,
        /// The limit in force.
        max: usize,
    },
    /// The server process exited (on its own, or after the link failed).
    #[error("server process exited ({})", exit_description(*.code, *.signal))]
    ChildExited {
        /// Exit code, when it exited normally.
        code: Option<i32>,
        /// Signal number, when a signal ended it.
        signal: Option<i32>,
    },
    /// The link was closed by us.
    #[error("transport closed")]
    Closed,
    /// An HTTP server answered with a status that ends the link (not 2xx, and not a session
    /// expiry).
    #[error("HTTP {status} from the server{}", if reason.is_empty() { String::new() } else { format!(": {reason}") })]
    Http {
        /// The HTTP status code.
        status: u16,
        /// What the status was an answer to, or what was wrong with the answer.
        reason: String,
    },
    /// A response stream ended or broke before its answer and could not be resumed (the server
    /// gave no event ids, or the resumption attempts were spent).
    #[error("the response stream was lost: {reason}")]
    StreamLost {
        /// How it was lost.
        reason: String,
    },
    /// The server broke the transport's rules: an endpoint event of another origin, or none
    /// within its bound, a session id that is not visible ASCII.
    #[error("the server broke the transport's rules: {reason}")]
    Protocol {
        /// Which rule.
        reason: String,
    },
    /// The HTTP server no longer knows the session (404, or a 400 naming the session, to a
    /// request carrying its `Mcp-Session-Id`): a new session must be initialized. Calls failed
    /// with it may be retried: the server did not finish them on the session it lost.
    #[error("the server ended the session (session {session_hint})")]
    SessionExpired {
        /// The first characters of the expired session id (never the whole id: it is a
        /// credential for the session).
        session_hint: String,
        /// Ids of our requests the server refused with that status: they never ran, so the
        /// machine sends them again on the new session.
        refused: Vec<crate::request::RequestId>,
    },
}

impl TransportError {
    /// A read or write error of the link.
    pub fn io(e: io::Error) -> Self {
        TransportError::Io(e.into())
    }

    /// Whether retrying the same transport cannot help (the program does not exist, permission
    /// denied): a host should report it rather than wait for reconnects.
    pub fn is_permanent(&self) -> bool {
        matches!(self, TransportError::Spawn(c)
            if matches!(c.kind(), io::ErrorKind::NotFound | io::ErrorKind::PermissionDenied))
    }
}

/// "exit code 3", "signal 9", or "status unknown".
pub fn exit_description(code: Option<i32>, signal: Option<i32>) -> String {
    match (code, signal) {
        (Some(c), _) => format!("exit code {c}"),
        (None, Some(s)) => format!("killed by signal {s}"),
        (None, None) => "unknown status".into(),
    }
}

/// Why a connection attempt or an established connection ended.
#[derive(Clone, Debug, PartialEq, Eq, Hash, thiserror::Error)]
#[non_exhaustive]
pub enum Failure {
    /// The transport failed or ended.
    #[error(transparent)]
    Transport(#[from] TransportError),
    /// The server sent a frame over the frame limit; the connection was dropped.
    #[error("the server sent an oversized frame ({size} bytes; the limit is {max})")]
    Oversized {
        /// Bytes seen.
        size: usize,
        /// The limit.
        max: usize,
    },
    /// Spawning plus the handshake took longer than its bound.
    #[error("no answer to initialize within {}", fmt_bound(*.after))]
    InitTimeout {
        /// The bound that ran out.
        after: Duration,
    },
    /// The server answered `initialize` with an error.
    #[error("the server refused initialize: {} ({})", .0.message, .0.code)]
    Refused(RpcError),
    /// The server chose a protocol version this client does not speak.
    #[error("the server chose protocol version {version:?}, which this client does not speak")]
    UnsupportedVersion {
        /// The version it chose.
        version: String,
    },
    /// The `initialize` result broke the protocol.
    #[error("invalid initialize result: {reason}")]
    BadHandshake {
        /// What is wrong with it.
        reason: String,
    },
    /// A modern server (it answered `server/discover`, or a modern error) offers no protocol
    /// version this client may speak to it.
    #[error(
        "the server speaks only protocol versions {offered:?}, none of which this client speaks"
    )]
    NoCommonVersion {
        /// The versions it offered.
        offered: Vec<String>,
    },
    /// The modern era was required, and the server did not answer `server/discover` as a
    /// modern server does.
    #[error("the server is not a 2026-07-28 (stateless) server: {reason}")]
    NotModern {
        /// What it answered instead.
        reason: String,
    },
    /// The modern era was required, and `server/discover` got no answer in time.
    #[error("no answer to server/discover within {}", fmt_bound(*.after))]
    ProbeTimeout {
        /// The bound that ran out.
        after: Duration,
    },
    /// The server refused the handshake request for want of authorization, and the
    /// authorization failed or the authorizations in a row are spent.
    #[error("the server requires authorization: {reason}")]
    Unauthorized {
        /// Why the authorization did not help, in words without a secret.
        reason: String,
    },
    /// `initialize` (or `server/discover`) could not be handed to the transport.
    #[error("could not send the handshake request")]
    InitNotSent,
    /// `notifications/initialized` could not be handed to the transport right after the
    /// handshake.
    #[error("could not send notifications/initialized")]
    InitializedNotSent,
    /// The client itself failed (its driver task panicked or was cancelled); a bug, reported.
    #[error("internal error: {0}")]
    Internal(String),
}

fn fmt_bound(d: Duration) -> String {
    if d < Duration::from_secs(1) {
        format!("{} ms", d.as_millis())
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error as _;

    #[test]
    fn causes_keep_their_source_and_kind() {
        let e = TransportError::Spawn(io::Error::from(io::ErrorKind::NotFound).into());
        assert!(e.is_permanent());
        let f = Failure::from(e.clone());
        assert_eq!(f.to_string(), e.to_string());
        let io = e.source().and_then(|s| s.source());
        assert!(io.is_some_and(|s| s.downcast_ref::<io::Error>().is_some()));
        let exited = TransportError::ChildExited {
            code: Some(3),
            signal: None,
        };
        assert!(!exited.is_permanent());
        assert_eq!(exited.to_string(), "server process exited (exit code 3)");
    }
}
