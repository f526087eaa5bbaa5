//! A handle on one tool call that may run as a task ([`crate::Client::call_tool_as_task`]):
//! its task id, a watch of its status, `wait` for the outcome, `cancel`. The polling is the
//! same as `call_tool`'s (the machine's rows); the handle only lets the host see and steer it.

use mcp_machine::TaskStatus;
use tokio::sync::{oneshot, watch};
use tokio::task::AbortHandle;

use crate::types::CallToolResult;
use crate::{Error, Result};

/// One tool call, maybe running as a task. Made by [`crate::Client::call_tool_as_task`].
///
/// Dropping the handle does not cancel the call (the call goes on, and its outcome is
/// dropped); [`TaskHandle::cancel`] does (for a task, the server is asked once with
/// `tasks/cancel`). Not a way to resume a task in another process: keep
/// [`TaskHandle::task_id`] for that.
#[derive(Debug)]
pub struct TaskHandle {
    task_id: Option<String>,
    status: watch::Receiver<Option<TaskStatus>>,
    outcome: oneshot::Receiver<Result<CallToolResult>>,
    abort: AbortHandle,
}

impl TaskHandle {
    pub(crate) fn new(
        task_id: Option<String>,
        status: watch::Receiver<Option<TaskStatus>>,
        outcome: oneshot::Receiver<Result<CallToolResult>>,
        abort: AbortHandle,
    ) -> Self {
        TaskHandle {
            task_id,
            status,
            outcome,
            abort,
        }
    }

    /// The server's task id; `None` when the server answered the call without a task (then
    /// [`TaskHandle::wait`] gives the answer at once).
    pub fn task_id(&self) -> Option<&str> {
        self.task_id.as_deref()
    }

    /// The last status told (`None` for a call that is not a task).
    pub fn status(&self) -> Option<TaskStatus> {
        self.status.borrow().clone()
    }

    /// A watch of the status: every change the server tells, the final one included.
    pub fn watch_status(&self) -> watch::Receiver<Option<TaskStatus>> {
        self.status.clone()
    }

    /// The call's outcome: the tool's result (an `isError` result stays a result) or the
    /// error, exactly once.
    pub async fn wait(self) -> Result<CallToolResult> {
        self.outcome.await.unwrap_or(Err(Error::Cancelled))
    }

    /// Cancels the call: [`TaskHandle::wait`] answers [`Error::Cancelled`], and the server is
    /// asked once to cancel the task (`tasks/cancel`, never `notifications/cancelled`).
    pub fn cancel(&self) {
        self.abort.abort();
    }
}
