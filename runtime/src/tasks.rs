//! Task-backed tool calls, the runtime's side: what the host chose ([`TaskOptions`]), and
//! which listed tools run as tasks ([`TaskTools`]). The polling itself (when, how often, what
//! a reconnect, a cancel or a stop does to a task) is the machine's, decided by the rows of
//! `spec/tasks.toml`; see `docs/guide/tasks.md`.

use std::collections::HashMap;
use std::sync::RwLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::types::Tool;

/// How a tool says it runs (`execution.taskSupport`, 2025-11-25): never as a task (the
/// default), optionally, or only as one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TaskSupport {
    /// It never runs as a task (`forbidden`, or nothing said).
    #[default]
    Forbidden,
    /// It may run as a task (`optional`).
    Optional,
    /// It runs only as a task (`required`).
    Required,
}

impl TaskSupport {
    /// What a listed tool says (`execution.taskSupport`; anything else is `Forbidden`).
    pub fn of(tool: &Tool) -> Self {
        let said = tool
            .extra
            .get("execution")
            .and_then(|e| e.get("taskSupport"))
            .and_then(Value::as_str);
        match said {
            Some("optional") => TaskSupport::Optional,
            Some("required") => TaskSupport::Required,
            _ => TaskSupport::Forbidden,
        }
    }
}

/// What a host chose for task-backed tool calls ([`crate::ClientBuilder::tasks`]). Made with
/// [`TaskOptions::new`]: tasks for the tools that require them, the server's TTL, polls
/// between 250 ms and 30 s. Not a handle on a task (a task is answered through `call_tool`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskOptions {
    pub(crate) optional: bool,
    pub(crate) ttl: Option<Duration>,
    pub(crate) poll_min: Duration,
    pub(crate) poll_max: Duration,
    pub(crate) max_failures: u8,
    pub(crate) serve: bool,
}

impl Default for TaskOptions {
    fn default() -> Self {
        TaskOptions {
            optional: false,
            ttl: None,
            poll_min: Duration::from_millis(250),
            poll_max: Duration::from_secs(30),
            max_failures: 3,
            serve: false,
        }
    }
}

impl TaskOptions {
    /// Tasks for the tools that require them; the server's TTL; polls between 250 ms and 30 s.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether a tool whose `taskSupport` is `optional` is called as a task too (false: as a
    /// plain call). A 2025-11-25 choice: in the 2026-07-28 era the server alone decides.
    pub fn optional_tools(mut self, on: bool) -> Self {
        self.optional = on;
        self
    }

    /// The TTL asked for a 2025-11-25 task (`params.task.ttl`; the server may choose another).
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = Some(ttl);
        self
    }

    /// The floor and the cap of the poll interval: a server asking for less is polled every
    /// `min`, one asking for more every `max` (the server's interval is re-read at each poll).
    pub fn poll_bounds(mut self, min: Duration, max: Duration) -> Self {
        self.poll_min = min;
        self.poll_max = max.max(min);
        self
    }

    /// How many of a task's polls may fail in a row (not answered, not sent, an error) before
    /// the call fails with [`crate::Error::TaskUnreachable`] (3; at least 1).
    pub fn max_failures(mut self, n: u8) -> Self {
        self.max_failures = n.max(1);
        self
    }

    /// Run the server's sampling and elicitation requests as tasks when a 2025-11-25 server
    /// asks (`params.task`), and answer its `tasks/get`, `tasks/result`, `tasks/list` and
    /// `tasks/cancel` (false: not declared; such a server then sends plain requests). The
    /// handlers are the same; at most [`crate::MAX_CLIENT_TASKS`] tasks are kept, each for its
    /// TTL (at most 10 minutes).
    pub fn serve_requests(mut self, on: bool) -> Self {
        self.serve = on;
        self
    }

    /// The `params.task` of a 2025-11-25 `tools/call`.
    pub(crate) fn task_param(&self) -> Value {
        match self.ttl {
            Some(ttl) => json!({ "ttl": u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX) }),
            None => Value::Object(Map::new()),
        }
    }

    /// Whether a tool that says `support` is called as a task.
    pub(crate) fn use_task(&self, support: TaskSupport) -> bool {
        match support {
            TaskSupport::Required => true,
            TaskSupport::Optional => self.optional,
            TaskSupport::Forbidden => false,
        }
    }
}

/// The most tools whose task support is kept (a listing of more keeps the first ones).
const MAX_TASK_TOOLS: usize = 4096;

/// The task support of the tools the latest listings named (only tools that may run as
/// tasks are kept, bounded), and whether a listing was read at all.
#[derive(Debug, Default)]
pub(crate) struct TaskTools {
    inner: RwLock<Known>,
    /// Some listed tool may run as a task (read without the lock: a plain tool call of a
    /// client whose tools never do pays one load).
    any: AtomicBool,
}

#[derive(Debug, Default)]
struct Known {
    listed: bool,
    tools: HashMap<String, TaskSupport>,
}

impl TaskTools {
    /// Records one listing page.
    pub(crate) fn record(&self, tools: &[Tool]) {
        let mut known = self.inner.write().unwrap_or_else(|e| e.into_inner());
        known.listed = true;
        if tools
            .iter()
            .any(|t| TaskSupport::of(t) != TaskSupport::Forbidden)
        {
            self.any.store(true, Ordering::Relaxed);
        }
        for tool in tools {
            match TaskSupport::of(tool) {
                TaskSupport::Forbidden => {
                    known.tools.remove(&tool.name);
                }
                support if known.tools.len() < MAX_TASK_TOOLS => {
                    known.tools.insert(tool.name.clone(), support);
                }
                _ => {}
            }
        }
    }

    /// Whether some listed tool may run as a task (cheap: no lock).
    pub(crate) fn any(&self) -> bool {
        self.any.load(Ordering::Relaxed)
    }

    /// What `tool` said, if a listing was read (`None`: the tools were never listed).
    pub(crate) fn get(&self, tool: &str) -> Option<TaskSupport> {
        let known = self.inner.read().unwrap_or_else(|e| e.into_inner());
        known
            .listed
            .then(|| known.tools.get(tool).copied().unwrap_or_default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str, support: Option<&str>) -> Tool {
        let mut v = json!({"name": name, "inputSchema": {"type": "object"}});
        if let Some(s) = support {
            v["execution"] = json!({"taskSupport": s});
        }
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn tools_say_how_they_run() {
        assert_eq!(TaskSupport::of(&tool("a", None)), TaskSupport::Forbidden);
        assert_eq!(
            TaskSupport::of(&tool("a", Some("optional"))),
            TaskSupport::Optional
        );
        assert_eq!(
            TaskSupport::of(&tool("a", Some("required"))),
            TaskSupport::Required
        );
        assert_eq!(
            TaskSupport::of(&tool("a", Some("always"))),
            TaskSupport::Forbidden
        );
    }

    #[test]
    fn the_listing_is_remembered_and_a_tool_can_change() {
        let t = TaskTools::default();
        assert_eq!(t.get("r"), None);
        t.record(&[tool("r", Some("required")), tool("f", None)]);
        assert_eq!(t.get("r"), Some(TaskSupport::Required));
        assert_eq!(t.get("f"), Some(TaskSupport::Forbidden));
        t.record(&[tool("r", Some("forbidden"))]);
        assert_eq!(t.get("r"), Some(TaskSupport::Forbidden));
    }

    #[test]
    fn options_choose_which_tools_run_as_tasks() {
        let o = TaskOptions::new();
        assert!(o.use_task(TaskSupport::Required) && !o.use_task(TaskSupport::Optional));
        assert!(
            o.clone()
                .optional_tools(true)
                .use_task(TaskSupport::Optional)
        );
        assert_eq!(o.task_param(), json!({}));
        assert_eq!(
            o.ttl(Duration::from_secs(2)).task_param(),
            json!({"ttl": 2000})
        );
    }
}
