//! What a bridge session did, said when it ends.

use crate::HostInfo;

/// Why a bridge session ended.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Ended {
    /// The host closed its side (end of stdin, or its output could not be written).
    #[default]
    HostClosed,
    /// The caller's shutdown future resolved (a signal, for `mcpc bridge`).
    Shutdown,
}

/// What one bridge session did: counts of what crossed it, and how it ended. Not a log: no
/// message content is kept.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct BridgeReport {
    /// What the host declared in `initialize`, when it sent one.
    pub host: Option<HostInfo>,
    /// Requests from the host (answered locally or forwarded).
    pub requests: u64,
    /// Forwarded requests answered (with a result or an error).
    pub answered: u64,
    /// Forwarded requests the host cancelled (never answered, the upstream told).
    pub cancelled: u64,
    /// Messages from the host that were not valid JSON-RPC (each answered with an error).
    pub invalid: u64,
    /// Server requests forwarded to the host.
    pub server_requests: u64,
    /// Server requests that ended without the host's answer: the upstream gave up on them,
    /// or the host did not answer in time (the host told with `notifications/cancelled` when
    /// it had been asked).
    pub server_requests_ended: u64,
    /// Whether the upstream was stopped and its processes reaped within the bound.
    pub upstream_closed: bool,
    /// How the session ended.
    pub ended: Ended,
}
