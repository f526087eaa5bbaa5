//! What the runs went through, counted from their histories: to show (and check) that the
//! faults and outcomes the oracles judge do happen, so a property that holds is not a vacuous
//! one.

use std::collections::BTreeMap;

use mcp_runtime::ConnState;

use super::history::{Entry, Event, Outcome};
use super::reconnect;

/// Counts by name, summed over runs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Coverage(pub BTreeMap<&'static str, u64>);

impl Coverage {
    /// Adds what `history` went through.
    pub fn add(&mut self, history: &[Entry]) {
        self.add_reconnects(history);
        self.add_tasks(history);
        for e in history {
            let name = match &e.event {
                Event::Issued { .. } => "calls",
                Event::Progress { .. } => "progress delivered",
                Event::Outcome { outcome, .. } => match outcome {
                    Outcome::Ok { .. } => "answered ok",
                    Outcome::Timeout { .. } => "timed out",
                    Outcome::Shutdown => "shut down",
                    Outcome::Unavailable => "unavailable",
                    Outcome::ConnectionLost(_) => "connection lost",
                    Outcome::SendFailed => "send failed",
                    Outcome::Backpressure => "backpressure",
                    Outcome::Server { .. } => "server error",
                    Outcome::Cancelled => "cancelled",
                    Outcome::TaskLost | Outcome::TaskCancelled | Outcome::TaskUnreachable => {
                        "task errors"
                    }
                    Outcome::Other(_) => "other error",
                },
                Event::Dropped { .. } => "futures dropped",
                Event::StopIssued { .. } => "stops",
                Event::HandlesDropped => "handles dropped",
                Event::Calm { .. } => "calm",
                Event::Ready => "ready again",
                Event::Quiet => "quiet",
                Event::Connect { plan, .. } => match plan.split_once(',') {
                    Some((p, _)) if p.contains("Refuse") => "connections refused",
                    Some((p, _)) if p.contains("Hang") => "connections hung",
                    _ => "connections",
                },
                Event::ServerGot { method, .. } if method == "server/discover" => "probes",
                Event::ServerGot { .. } => "requests on the wire",
                Event::CancelGot { .. } => "cancels on the wire",
                Event::Crash { .. } => "server crashes",
                Event::TraceReplayed { error: None } => "traces replayed",
                Event::Refused { .. } => "requests refused by an expiry",
                Event::LinkFault { fault, .. } => match fault.as_str() {
                    "session expired" => "sessions expired",
                    "stuck POST" => "stuck POSTs",
                    "stream lost" => "streams lost",
                    _ => "frames cut",
                },
                Event::Config {
                    looping: Some(l), ..
                } if l == "Expire" => "expiry loops",
                Event::Config {
                    looping: Some(_), ..
                } => "drop loops",
                Event::Transition {
                    from: ConnState::Ready,
                    to: ConnState::Starting,
                    expired: true,
                    ..
                } => "sessions initialized again",
                Event::Transition {
                    to: ConnState::Backoff,
                    expired: true,
                    ..
                } => "expiries backed off",
                Event::Listed => "tools listed",
                Event::CallMade { wait: true, .. } => "calls waiting for ready",
                Event::GroupStarted => "group members started",
                Event::Config { .. }
                | Event::CallMade { .. }
                | Event::TaskStatus { .. }
                | Event::TaskCreated { .. }
                | Event::TaskUnknown { .. }
                | Event::TaskCancelGot { .. }
                | Event::TasksForgotten { .. }
                | Event::Transition { .. }
                | Event::TransitionsLost { .. }
                | Event::LinkDown { .. }
                | Event::Closed
                | Event::Finished
                | Event::TasksLeft { .. }
                | Event::StopReturned { .. }
                | Event::ConnEnded { .. }
                | Event::Answered { .. }
                | Event::ServerSaw { .. }
                | Event::RuntimeError { .. }
                | Event::TraceReplayed { .. }
                | Event::End => continue,
            };
            *self.0.entry(name).or_default() += 1;
        }
    }

    /// Counts what only the whole history shows: calls sent again after an expiry, backoff
    /// delays judged, and those judged at step 2 or more (the sequence grew: no answer
    /// restarted it).
    fn add_reconnects(&mut self, history: &[Entry]) {
        let mut tokens = std::collections::BTreeSet::new();
        for e in history {
            if let Event::ServerGot { token: Some(t), .. } = &e.event
                && !tokens.insert(t.as_str())
            {
                *self
                    .0
                    .entry("calls sent again after an expiry")
                    .or_default() += 1;
            }
        }
        for d in reconnect::delays(history) {
            *self.0.entry("backoff delays judged").or_default() += 1;
            if d.step >= 2 {
                *self.0.entry("backoff delays grown").or_default() += 1;
            }
        }
    }

    /// Counts what became of the task calls whose task was created: how they ended, those
    /// that ended well after the client reconnected meanwhile (the task survived), and the
    /// tasks cancelled by their caller (`tasks/cancel` taken) or forgotten by a restart.
    fn add_tasks(&mut self, history: &[Entry]) {
        let mut created: BTreeMap<usize, usize> = BTreeMap::new();
        let mut readies: Vec<usize> = Vec::new();
        for (i, e) in history.iter().enumerate() {
            let name = match &e.event {
                Event::TaskStatus { call, .. } => {
                    if created.contains_key(call) {
                        continue;
                    }
                    created.insert(*call, i);
                    "tasks created"
                }
                Event::TaskCancelGot { .. } => "tasks cancelled by their caller",
                Event::TasksForgotten { .. } => "task stores forgotten by a restart",
                Event::Transition {
                    to: ConnState::Ready,
                    ..
                } => {
                    readies.push(i);
                    continue;
                }
                Event::Outcome { call, outcome } => {
                    let Some(&since) = created.get(call) else {
                        continue;
                    };
                    let survived = matches!(
                        outcome,
                        Outcome::Ok { .. } | Outcome::Server { .. } | Outcome::TaskCancelled
                    ) && readies.iter().any(|r| *r > since);
                    if survived {
                        *self.0.entry("tasks survived a reconnect").or_default() += 1;
                    }
                    match outcome {
                        Outcome::Ok { .. } => "tasks completed",
                        Outcome::Server { .. } => "tasks failed",
                        Outcome::TaskLost => "tasks lost",
                        Outcome::TaskCancelled => "tasks cancelled by the server",
                        Outcome::TaskUnreachable => "tasks unreachable",
                        Outcome::Timeout { .. } => "tasks timed out",
                        Outcome::Shutdown => "tasks shut down",
                        _ => "tasks answered otherwise",
                    }
                }
                _ => continue,
            };
            *self.0.entry(name).or_default() += 1;
        }
    }

    /// The count of `name` (0 if it never happened).
    pub fn get(&self, name: &str) -> u64 {
        self.0.get(name).copied().unwrap_or(0)
    }
}

impl std::fmt::Display for Coverage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parts: Vec<String> = self.0.iter().map(|(k, v)| format!("{k} {v}")).collect();
        write!(f, "{}", parts.join(", "))
    }
}
