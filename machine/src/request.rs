//! The names every input, output and payload of the machine shares: a request's id, a caller's
//! ticket, a transport generation, a call's options and a JSON-RPC error object. A leaf: it
//! imports nothing of the crate, so the vocabulary modules (`io`, `event`, `failure`, `listen`)
//! build on it without importing each other in a loop.

use std::time::Duration;

use serde_json::Value;

/// A JSON-RPC request id issued by this client: one counter per machine lifetime, never reset,
/// never reused (across reconnects, and `initialize` takes one too).
pub type RequestId = u64;

/// A transport generation: each spawned transport gets the next one; inputs tagged with an
/// older generation never change anything.
pub type Generation = u64;

/// The driver's name for one caller waiting for an answer (a call, a notify or a stop).
///
/// Chosen by the driver, opaque to the machine; every `CallId` given in an input is answered by
/// exactly one [`crate::Action::Reply`] (or [`crate::Action::StopDone`] for a stop).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CallId(pub u64);

/// Per-call options.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct CallOptions {
    /// This call's timeout instead of the configured default.
    pub timeout: Option<Duration>,
    /// Ask the server for progress (`_meta.progressToken`, the request id).
    pub progress: bool,
    /// Each progress notification restarts the timeout...
    pub reset_timeout_on_progress: bool,
    /// ...but never beyond this total since the call started.
    pub max_total_timeout: Option<Duration>,
    /// A bound on the whole call when the server runs it as a task (none: a task may run for
    /// hours, each of its polls bounded by the request timeout). When it passes, the caller
    /// is answered with a timeout and the server asked to cancel the task.
    pub task_timeout: Option<Duration>,
    /// Made while no connection is ready (starting, reconnecting, in backoff), the call waits
    /// for one, up to its own deadline, instead of being answered with `Unavailable` at once
    /// (`spec/calls.toml`, `waits_for_ready`). It goes out after the handshake and the
    /// session's restore. Off by default; a call made while ready is sent at once either way.
    pub wait_for_ready: bool,
}

/// A JSON-RPC error object (from the server, or sent by us).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RpcError {
    /// The error code.
    pub code: i64,
    /// The message.
    pub message: String,
    /// Optional data.
    pub data: Option<Value>,
}

impl std::hash::Hash for RpcError {
    // Consistent with `Eq`; `data` is left out of the hash.
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.code.hash(state);
        self.message.hash(state);
    }
}

impl std::fmt::Display for RpcError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.message, self.code)
    }
}
