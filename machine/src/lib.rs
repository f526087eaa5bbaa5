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
//! # A driver, in memory
//!
//! The whole contract in one loop: spawn and connect when asked, answer every send's outcome at
//! once, deliver frames only against the credit the machine grants, and hand replies to their
//! callers. The server here is a function that answers `initialize` and `tools/list`; the
//! runtime's driver does the same with real transports, a clock and tasks.
//!
//! ```
//! use std::collections::VecDeque;
//! use std::time::Duration;
//!
//! use mcp_machine::{Action, CallId, CallRequest, Config, EraMode, Input, Machine, SendOutcome, State};
//! use serde_json::{Value, json};
//!
//! /// A handshake-era server: the answer to a request, nothing for a notification.
//! fn serve(frame: &[u8]) -> Option<Vec<u8>> {
//!     let request: Value = serde_json::from_slice(frame).ok()?;
//!     let result = match request["method"].as_str()? {
//!         "initialize" => json!({"protocolVersion": "2025-11-25", "capabilities": {},
//!                                "serverInfo": {"name": "memory", "version": "1"}}),
//!         "tools/list" => json!({"tools": []}),
//!         _ => return None,
//!     };
//!     serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": request["id"], "result": result})).ok()
//! }
//!
//! let config = Config { era: EraMode::Legacy, ..Config::default() };
//! let mut machine = Machine::new(config, 7, Duration::ZERO);
//! let now = Duration::ZERO; // a real driver passes its clock; nothing times out here
//! let (mut inputs, mut frames, mut credit) = (VecDeque::new(), VecDeque::new(), 0);
//! let mut asked = false;
//! let mut answer = None;
//! loop {
//!     while let Some(action) = machine.poll_action() {
//!         match action {
//!             Action::SpawnTransport { generation } => {
//!                 inputs.push_back(Input::TransportUp { generation })
//!             }
//!             Action::Send { generation, token, frame } => {
//!                 // The outcome goes back at once, before the next action.
//!                 let outcome = SendOutcome::Ok;
//!                 machine.handle(Input::SendResult { generation, token, outcome }, now);
//!                 frames.extend(serve(&frame).map(|bytes| (generation, bytes)));
//!             }
//!             Action::GrantCredit { credits, .. } => credit += credits,
//!             Action::Reply { call, outcome, .. } => answer = Some((call, outcome)),
//!             _ => {} // reports, notifications, server requests: none here
//!         }
//!     }
//!     if machine.state() == State::Ready && !asked {
//!         asked = true;
//!         let call = CallRequest {
//!             call: CallId(1),
//!             method: "tools/list".into(),
//!             params: None,
//!             options: Default::default(),
//!             session: None,
//!         };
//!         inputs.push_back(Input::Call(call));
//!     }
//!     if credit > 0 && let Some((generation, bytes)) = frames.pop_front() {
//!         credit -= 1;
//!         inputs.push_back(Input::Frame { generation, bytes });
//!     }
//!     let Some(input) = inputs.pop_front() else { break };
//!     machine.handle(input, now);
//! }
//! let (call, outcome) = answer.expect("the call was answered");
//! assert_eq!(call, CallId(1));
//! assert_eq!(outcome.unwrap().value(), &json!({"tools": []}));
//! ```
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
pub mod front;
pub mod headers;
mod io;
mod listen;
mod machine;
#[cfg(feature = "checker")]
mod mutant;
mod outgoing;
mod payload;
mod protocol;
mod request;
mod rng;
mod tasks;
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
        ServerRequestId, TaskResume,
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
    ServerInfo, ServerRequest, ServerRequestId, SessionChange, TaskResume,
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
pub use crate::outgoing::{FrameKind, Head, Modern, Outgoing};
pub use crate::payload::{Body, Payload};
pub use crate::protocol::{
    LATEST_PROTOCOL_VERSION, META_CLIENT_CAPABILITIES, META_CLIENT_INFO, META_PROTOCOL_VERSION,
    META_SERVER_INFO, MODERN_PROTOCOL_VERSIONS, SUPPORTED_PROTOCOL_VERSIONS,
};
pub use crate::tasks::{TaskState, TaskStatus};
pub use crate::timers::TimerKey;

impl std::fmt::Display for State {
    /// The state's name as written in the spec.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
