//! The tasks the client polls for its callers (task-backed tool calls, both eras): what the
//! machine keeps of each, and how a task's wire shapes read. The rows that move them are in
//! `spec/tasks.toml`, their handlers in `core/tasks.rs`.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde_json::Value;

use crate::config::{Config, Era};
use crate::io::{CallId, RequestId};

/// A task's status as the server reports it (both eras use the same five words).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TaskState {
    /// The server is working on it.
    Working,
    /// It waits for input from the client.
    InputRequired,
    /// Done: its result is ready.
    Completed,
    /// Done: it failed.
    Failed,
    /// Done: cancelled.
    Cancelled,
}

impl TaskState {
    /// The status named `word` on the wire, if it is one.
    pub fn parse(word: &str) -> Option<Self> {
        Some(match word {
            "working" => TaskState::Working,
            "input_required" => TaskState::InputRequired,
            "completed" => TaskState::Completed,
            "failed" => TaskState::Failed,
            "cancelled" => TaskState::Cancelled,
            _ => return None,
        })
    }

    /// The wire word.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskState::Working => "working",
            TaskState::InputRequired => "input_required",
            TaskState::Completed => "completed",
            TaskState::Failed => "failed",
            TaskState::Cancelled => "cancelled",
        }
    }

    /// Whether the status is final (completed, failed, cancelled).
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskState::Completed | TaskState::Failed | TaskState::Cancelled
        )
    }
}

/// What a caller is told of its task: given when the task is created and whenever its status
/// or status message changes (like progress; the runtime passes it to the caller's sink).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TaskStatus {
    /// The server's task id (persist it to resume the task after a restart).
    pub task_id: String,
    /// The status.
    pub state: TaskState,
    /// The server's message, if it gave one.
    pub message: Option<String>,
    /// The poll interval in use (the server's, floored and capped).
    pub poll_interval: Duration,
}

/// Where one task is.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum TaskPhase {
    /// Its poll timer is armed.
    Waiting,
    /// One of its requests (a poll, a fetch, an update) is in flight, under this id.
    InFlight(RequestId),
    /// The connection was lost (or not ready when its poll came due): polled as soon as one is.
    Due,
    /// 2026-07-28: the handler is giving the inputs the server asked for with the answer to
    /// this poll id; sent with `tasks/update` once all are in.
    Input {
        /// The poll the round came with (input replies name it).
        poll: RequestId,
        /// The inputs by key: the handler's result as JSON text, once given.
        awaiting: BTreeMap<String, Option<String>>,
    },
    /// Its caller was answered (cancelled, timed out) while disconnected: `tasks/cancel` is
    /// owed on the next connection ready.
    Cancelling,
}

/// One task polled for a caller.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct TaskRun {
    /// The server's task id.
    pub(crate) id: String,
    /// The era it was created in (its wire shapes).
    pub(crate) era: Era,
    pub(crate) phase: TaskPhase,
    /// The last status reported to the caller.
    pub(crate) state: TaskState,
    pub(crate) message: Option<String>,
    /// The poll interval in use (floored and capped).
    pub(crate) interval: Duration,
    /// Failed exchanges in a row.
    pub(crate) failures: u8,
    /// What the last failed exchange was, in words.
    pub(crate) last_failure: Option<String>,
    /// 2026-07-28: input keys answered (acknowledged by `tasks/update`) for the task's life.
    pub(crate) answered: BTreeSet<String>,
    /// The keys the update in flight carries (answered once it is acknowledged).
    pub(crate) updating: BTreeSet<String>,
    /// When the caller's call started (a task timeout reports the whole wait).
    pub(crate) started: Duration,
    /// The caller was told a status already (a resumed task's first answer is told whatever
    /// it says).
    pub(crate) told: bool,
}

/// The live tasks by caller.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct Tasks {
    by_call: BTreeMap<CallId, Box<TaskRun>>,
}

impl Tasks {
    pub(crate) fn insert(&mut self, call: CallId, task: TaskRun) {
        self.by_call.insert(call, Box::new(task));
    }

    pub(crate) fn get(&self, call: CallId) -> Option<&TaskRun> {
        self.by_call.get(&call).map(|t| &**t)
    }

    pub(crate) fn get_mut(&mut self, call: CallId) -> Option<&mut TaskRun> {
        self.by_call.get_mut(&call).map(|t| &mut **t)
    }

    pub(crate) fn remove(&mut self, call: CallId) -> Option<TaskRun> {
        self.by_call.remove(&call).map(|t| *t)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.by_call.is_empty()
    }

    pub(crate) fn calls(&self) -> Vec<CallId> {
        self.by_call.keys().copied().collect()
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = (CallId, &TaskRun)> {
        self.by_call.iter().map(|(c, t)| (*c, &**t))
    }

    /// The task awaiting the inputs of the round that came with poll `poll`.
    pub(crate) fn by_input_poll(&self, poll: RequestId) -> Option<CallId> {
        self.iter().find_map(|(call, t)| match &t.phase {
            TaskPhase::Input { poll: p, .. } if *p == poll => Some(call),
            _ => None,
        })
    }
}

/// The wire fields of a task, read from a `CreateTaskResult` or a `tasks/get` answer.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct TaskFields<'a> {
    pub(crate) id: &'a str,
    pub(crate) state: Option<TaskState>,
    pub(crate) message: Option<&'a str>,
    /// The server's poll interval, in milliseconds, if it named one.
    pub(crate) interval_ms: Option<u64>,
}

/// The task object of a result in `era`: 2025-11-25 nests a created task under `task` (a
/// `tasks/get` answer is flat), 2026-07-28 is flat. `None` when it names no task id.
pub(crate) fn fields(result: &Value, era: Era, created: bool) -> Option<TaskFields<'_>> {
    let task = match era {
        Era::Legacy if created => result.get("task")?,
        Era::Legacy | Era::Modern => result,
    };
    let id = task.get("taskId")?.as_str().filter(|s| !s.is_empty())?;
    let interval_key = match era {
        Era::Legacy => "pollInterval",
        Era::Modern => "pollIntervalMs",
    };
    Some(TaskFields {
        id,
        state: task
            .get("status")
            .and_then(Value::as_str)
            .and_then(TaskState::parse),
        message: task.get("statusMessage").and_then(Value::as_str),
        interval_ms: task
            .get(interval_key)
            .and_then(Value::as_f64)
            .filter(|ms| ms.is_finite() && *ms >= 0.0)
            .map(|ms| ms.min(u64::MAX as f64) as u64),
    })
}

/// The poll interval to use: the server's (when it named one, else the last in use, else the
/// default), floored and capped by the configuration.
pub(crate) fn interval(
    config: &Config,
    server_ms: Option<u64>,
    last: Option<Duration>,
) -> Duration {
    let wanted = server_ms
        .map(Duration::from_millis)
        .or(last)
        .unwrap_or(config.task_poll_default);
    wanted.clamp(
        config.task_poll_min,
        config.task_poll_max.max(config.task_poll_min),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn legacy_created_tasks_are_nested_and_modern_ones_flat() {
        let legacy = json!({"task": {"taskId": "t1", "status": "working", "pollInterval": 1000}});
        let f = fields(&legacy, Era::Legacy, true).unwrap();
        assert_eq!(
            (f.id, f.state, f.interval_ms),
            ("t1", Some(TaskState::Working), Some(1000))
        );
        assert!(fields(&legacy, Era::Modern, true).is_none());
        let modern = json!({"resultType": "task", "taskId": "t2", "status": "input_required", "pollIntervalMs": 5});
        let f = fields(&modern, Era::Modern, true).unwrap();
        assert_eq!(
            (f.id, f.state, f.interval_ms),
            ("t2", Some(TaskState::InputRequired), Some(5))
        );
        assert!(fields(&json!({"taskId": ""}), Era::Modern, false).is_none());
    }

    #[test]
    fn the_interval_is_floored_capped_and_remembered() {
        let c = Config::default();
        assert_eq!(interval(&c, Some(0), None), c.task_poll_min);
        assert_eq!(interval(&c, Some(u64::MAX), None), c.task_poll_max);
        assert_eq!(interval(&c, None, None), c.task_poll_default);
        let last = Duration::from_secs(2);
        assert_eq!(interval(&c, None, Some(last)), last);
    }

    #[test]
    fn statuses_read_both_ways() {
        for s in [
            "working",
            "input_required",
            "completed",
            "failed",
            "cancelled",
        ] {
            assert_eq!(TaskState::parse(s).unwrap().as_str(), s);
        }
        assert!(TaskState::parse("submitted").is_none());
        assert!(TaskState::Cancelled.is_terminal() && !TaskState::Working.is_terminal());
    }
}
