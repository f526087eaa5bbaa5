//! The sans-IO core of the MCP client: the connection lifecycle of `spec/transitions.toml`,
//! generated into Rust at build time, and the handlers that carry out its actions.
//!
//! This crate has **no networking code, no tokio, no clock reads and no unseeded randomness**.
//! It is a deterministic function of its inputs (in the style of quinn-proto): the driver owns
//! the transports and the clock and talks to a [`Machine`] through four families of methods:
//!
//! 1. getters ([`Machine::state`], [`Machine::server`], ...);
//! 2. inputs, each carrying `now` (time since the driver's epoch, never going backwards):
//!    [`Machine::handle`] for transport and caller inputs, [`Machine::handle_timeout`] when the
//!    deadline of [`Machine::poll_timeout`] has passed;
//! 3. outputs: after every input, drain [`Machine::poll_action`] until it returns `None` and
//!    carry out each [`Action`] in order. An [`Action::Send`] must be answered with an
//!    [`Input::SendResult`] before the next other input (the transports' queues never wait, so
//!    the driver knows the outcome at once);
//! 4. [`Machine::poll_timeout`]: the next deadline, if any.
//!
//! What happens for an event in a state is decided only by the generated dispatch
//! ([`generated::dispatch`]); the handlers in this crate carry out the named actions and answer
//! the named guards, nothing else.

mod backoff;
mod calls;
pub mod classify;
mod config;
mod core;
mod io;
mod machine;
mod protocol;
mod rng;
mod timers;

/// The code generated from `spec/transitions.toml` (states, event kinds, timers, the handler
/// trait, the exhaustive dispatch and the row metadata). Not hand-written: change the spec.
#[allow(missing_docs, clippy::all)]
pub mod generated {
    include!(concat!(env!("OUT_DIR"), "/connection.rs"));
}

pub use crate::config::{ClientCapabilities, Config};
pub use crate::generated::{EventKind, Fired, ROWS, Row, State, TimerKind};
pub use crate::io::{
    Action, CallError, CallId, CallOptions, Generation, Input, Notification, Report, RequestId,
    RpcError, SendOutcome, SendToken, ServerInfo, Step,
};
pub use crate::machine::{Machine, Mutant};
pub use crate::protocol::{LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS};
pub use crate::timers::TimerKey;
