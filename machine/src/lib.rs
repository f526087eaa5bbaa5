//! The sans-IO core of the MCP client: the connection lifecycle of the spec (`spec/`),
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
//!    carry out each [`Action`] in order. An [`Action::Send`] is answered with its
//!    [`Input::SendResult`] at once, before the next `poll_action` and before any other input
//!    (the transports' queues never wait, so the driver knows the outcome at once). The model
//!    checker and the scenario tests keep the same contract, and debug builds assert it;
//! 4. [`Machine::poll_timeout`]: the next deadline, if any.
//!
//! What happens for an event in a state is decided only by the generated dispatch
//! ([`generated::dispatch`]); the handlers in this crate carry out the named actions and answer
//! the named guards, nothing else.
//!
//! The `checker` feature (enabled only by the model checker and tests) adds the table
//! interpreter, [`Machine::fire_timer`] and the deliberate handler bugs of the mutation
//! self-test; a product build contains none of them.

mod backoff;
mod calls;
pub mod classify;
pub mod codes;
mod config;
mod core;
mod event;
mod failure;
pub mod headers;
mod io;
mod listen;
mod machine;
#[cfg(feature = "checker")]
mod mutant;
mod payload;
mod protocol;
mod request;
mod rng;
mod timers;

/// The code generated from the spec, `spec/` (states, event kinds, the typed `Event`,
/// timers, the handler trait, the exhaustive dispatch and the row metadata). Not hand-written:
/// change the spec. With the `checker` feature it also holds the table interpreter that runs
/// mutated copies of the rows.
#[allow(missing_docs, clippy::all)]
pub mod generated {
    use crate::event::{
        AuthFailure, CallRequest, HandlerReply, InputReply, InputRound, Malformed, Notification,
        NotifyRequest, Oversized, PendingSend, Response, ServerInfo, ServerRequest,
        ServerRequestId,
    };
    use crate::failure::TransportError;
    use crate::io::{CallId, RequestId, SendToken};
    use crate::listen::ListenEnd;

    include!(concat!(env!("OUT_DIR"), "/connection.rs"));

    #[cfg(feature = "checker")]
    include!(concat!(env!("OUT_DIR"), "/connection_interpreter.rs"));
}

pub use crate::codes::{HEADER_MISMATCH, MISSING_CAPABILITY, UNSUPPORTED_VERSION};
pub use crate::config::{ClientCapabilities, Config, Era, EraMode};
pub use crate::event::{
    AuthChallenge, AuthFailure, CallRequest, HandlerReply, InputReply, InputRound, Malformed,
    Notification, NotifyRequest, Oversized, PendingSend, Response, ResponseError, ResponseId,
    ServerInfo, ServerRequest, ServerRequestId, SessionChange,
};
pub use crate::failure::{Failure, IoCause, TransportError, exit_description};
pub use crate::generated::{Event, EventKind, Fired, ROWS, Row, State, TimerKind};
pub use crate::io::{
    Action, CallError, CallId, CallOptions, Generation, Input, Report, RequestId, RpcError,
    SendOutcome, SendToken, Step,
};
pub use crate::listen::{
    ListenEnd, ListenEndReason, ListenFilter, ListenStatus, META_SUBSCRIPTION_ID,
};
pub use crate::machine::Machine;
#[cfg(feature = "checker")]
pub use crate::mutant::Mutant;
pub use crate::payload::{Body, Payload};
pub use crate::protocol::{
    LATEST_PROTOCOL_VERSION, META_CLIENT_CAPABILITIES, META_CLIENT_INFO, META_PROTOCOL_VERSION,
    META_SERVER_INFO, MODERN_PROTOCOL_VERSIONS, SUPPORTED_PROTOCOL_VERSIONS,
};
pub use crate::timers::TimerKey;

impl std::fmt::Display for State {
    /// The state's name as written in the spec.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
