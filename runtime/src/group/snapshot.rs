//! [`GroupSnapshot`]: every server of a group at one moment (state, era, last error, list
//! sizes, counters), for a host's status view.

use std::sync::atomic::{AtomicU64, Ordering};

use mcp_machine::{Era, Failure};

use crate::ConnState;

/// One server at the moment of the snapshot.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ServerSnapshot {
    /// Its name in the group.
    pub name: String,
    /// Its connection state.
    pub state: ConnState,
    /// The era it speaks, as its last handshake or discovery found it (`None` before one).
    pub era: Option<Era>,
    /// Why its last connection attempt or connection failed (cleared by a handshake).
    pub last_error: Option<Failure>,
    /// Tools in its last fetched list (`None` before the first fetch).
    pub tools: Option<usize>,
    /// Prompts in its last fetched list.
    pub prompts: Option<usize>,
    /// Resources in its last fetched list.
    pub resources: Option<usize>,
    /// Calls routed to it by the group (tools, prompts, resource reads).
    pub calls: u64,
    /// Of those, how many failed (an `Err`, not a tool's `isError` result).
    pub errors: u64,
    /// Times it became ready again after its first connection.
    pub reconnects: u64,
    /// Its process id: not known to the client yet, always `None` for now.
    pub pid: Option<u32>,
}

/// Every server of a group, by name.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct GroupSnapshot {
    /// The servers, in name order.
    pub servers: Vec<ServerSnapshot>,
}

impl GroupSnapshot {
    /// The server named `name`.
    pub fn get(&self, name: &str) -> Option<&ServerSnapshot> {
        self.servers.iter().find(|s| s.name == name)
    }

    /// How many servers are ready.
    pub fn ready(&self) -> usize {
        self.servers
            .iter()
            .filter(|s| s.state == ConnState::Ready)
            .count()
    }
}

/// A server's counters, kept by the group.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) calls: AtomicU64,
    pub(crate) errors: AtomicU64,
    pub(crate) reconnects: AtomicU64,
}

impl Counters {
    /// Counts one call and whether it failed.
    pub(crate) fn call<T, E>(&self, result: &Result<T, E>) {
        self.calls.fetch_add(1, Ordering::Relaxed);
        if result.is_err() {
            self.errors.fetch_add(1, Ordering::Relaxed);
        }
    }

    pub(crate) fn get(&self) -> (u64, u64, u64) {
        (
            self.calls.load(Ordering::Relaxed),
            self.errors.load(Ordering::Relaxed),
            self.reconnects.load(Ordering::Relaxed),
        )
    }
}
