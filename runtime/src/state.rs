//! [`ConnState`] and [`Transition`]: the connection state and its changes as the public API
//! shows them. Both are the machine's own types: a state added to the table needs no edit here.

/// The state of a client's connection: the states of the spec (`spec/lifecycle.toml`), as generated.
pub type ConnState = mcp_machine::State;

/// One state change of the connection: the row that fired (its [`mcp_machine::Step`]), when,
/// and, for a transition that ends an attempt (into backoff, or from ready straight into a
/// new session when the server ended the session), why it ended; into backoff also when the
/// next attempt is due.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Transition {
    /// The row that fired: from, event, row index, spec line, to.
    pub step: mcp_machine::Step,
    /// When, on the tokio clock.
    pub at: tokio::time::Instant,
    /// Into backoff, or into a new session at once: why the connection or the attempt ended.
    pub cause: Option<mcp_machine::Failure>,
    /// Into backoff: how long until the next attempt.
    pub retry_in: Option<std::time::Duration>,
}

impl Transition {
    /// The state before.
    pub fn from(&self) -> ConnState {
        self.step.from
    }

    /// The state after.
    pub fn to(&self) -> ConnState {
        self.step.to
    }

    /// The event's name in the spec.
    pub fn event(&self) -> &'static str {
        self.step.event.name()
    }

    /// The spec file of the row that fired, as `spec/<concern>.toml`.
    pub fn spec_file(&self) -> &'static str {
        self.step.file
    }

    /// The row's line in its spec file ([`Transition::spec_file`]).
    pub fn line(&self) -> u32 {
        self.step.line
    }
}
