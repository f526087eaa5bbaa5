//! What the chaos matrices (over stdio and over HTTP) share: the kinds of answer a caller may
//! get, and the count of the runtime's live tasks (for leak checks).

use mcp_runtime::Error;

/// What a caller got, as a kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// A result.
    Ok,
    /// The call timed out.
    Timeout,
    /// The connection was lost while the call was in flight.
    Lost,
    /// The connection was not ready (reconnecting, or never up).
    Unavailable,
    /// The server answered with an error.
    Server,
    /// The handshake was refused.
    Refused,
    /// The server chose a protocol version this client does not speak.
    UnsupportedVersion,
    /// A paginated list never ended.
    Endless,
    /// No answer at all within the caller's bound (a hang).
    Hung,
    /// Anything else.
    Other,
}

/// The kind of a call's result.
pub fn outcome_of<T>(r: &Result<T, Error>) -> Outcome {
    match r {
        Ok(_) => Outcome::Ok,
        Err(Error::Timeout { .. }) => Outcome::Timeout,
        Err(Error::ConnectionLost(_)) => Outcome::Lost,
        Err(Error::Unavailable { .. }) => Outcome::Unavailable,
        Err(Error::Server { .. }) => Outcome::Server,
        Err(Error::EndlessPagination { .. }) => Outcome::Endless,
        Err(_) => Outcome::Other,
    }
}

/// Tasks alive on the current tokio runtime.
pub fn alive_tasks() -> usize {
    tokio::runtime::Handle::current()
        .metrics()
        .num_alive_tasks()
}
