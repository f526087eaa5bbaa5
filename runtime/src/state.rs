//! [`ConnState`]: the connection state as the public API shows it.

use mcp_machine::State;

/// The state of a client's connection (the states of `spec/transitions.toml`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ConnState {
    /// Spawning or connecting a transport.
    Starting,
    /// The handshake is under way.
    Initializing,
    /// Connected: calls go through.
    Ready,
    /// The connection failed; waiting to reconnect.
    Backoff,
    /// Stopping.
    Closing,
    /// Stopped for good.
    Closed,
}

impl ConnState {
    /// The state's name in the spec.
    pub fn name(self) -> &'static str {
        match self {
            ConnState::Starting => "starting",
            ConnState::Initializing => "initializing",
            ConnState::Ready => "ready",
            ConnState::Backoff => "backoff",
            ConnState::Closing => "closing",
            ConnState::Closed => "closed",
        }
    }

    /// Whether the connection is over for good.
    pub fn is_terminal(self) -> bool {
        self == ConnState::Closed
    }
}

impl std::fmt::Display for ConnState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl From<State> for ConnState {
    fn from(s: State) -> Self {
        match s {
            State::Starting => ConnState::Starting,
            State::Initializing => ConnState::Initializing,
            State::Ready => ConnState::Ready,
            State::Backoff => ConnState::Backoff,
            State::Closing => ConnState::Closing,
            State::Closed => ConnState::Closed,
        }
    }
}

/// One state change of the connection, as the table's row decided it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transition {
    /// The state before.
    pub from: ConnState,
    /// The state after.
    pub to: ConnState,
    /// The event that caused it (its name in the spec).
    pub event: &'static str,
    /// The index of the row that fired (`mcp_machine::ROWS`).
    pub row: u16,
    /// When, on the tokio clock.
    pub at: tokio::time::Instant,
}
