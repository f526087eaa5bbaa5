//! [`Client::call_tool_as_task`]: a tool call with a handle on its task.

use std::sync::Arc;

use serde_json::Value;
use tokio::sync::{oneshot, watch};

use super::options::RequestOptions;
use super::{Client, decoded};
use crate::Result;
use crate::task_handle::TaskHandle;
use crate::types::CallToolResult;

impl Client {
    /// `tools/call` with a handle on the task it may run as: returns once the server made it a
    /// task (the handle has its id) or answered it plainly (the handle's `wait` gives the
    /// answer at once). The polling is `call_tool`'s; the handle sees and steers it: its
    /// status, `wait`, `cancel`. Task-backed calls must be on ([`crate::ClientBuilder::tasks`]).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> mcp_runtime::Result<()> {
    /// # let mut config = mcp_testserver::ServerConfig::echo();
    /// # config.tasks = true;
    /// # let connector = mcp_runtime::transport::StreamConnector::from_fn(move || {
    /// #     let config = config.clone();
    /// #     async move {
    /// #         let (ours, theirs) = tokio::io::duplex(1 << 16);
    /// #         let (r, w) = tokio::io::split(theirs);
    /// #         tokio::spawn(mcp_testserver::serve(r, w, config));
    /// #         Ok(tokio::io::split(ours))
    /// #     }
    /// # });
    /// use mcp_runtime::{ClientBuilder, RequestOptions, TaskOptions};
    /// let client = ClientBuilder::new(connector).tasks(TaskOptions::new()).connect().await?;
    /// let args = serde_json::json!({"ms": 100});
    /// let task = client.call_tool_as_task("task_slow", args, RequestOptions::new()).await?;
    /// println!("task {:?}", task.task_id()); // keep it to look the task up later
    /// let result = task.wait().await?;
    /// assert_eq!(result.text(), "done after 100 ms");
    /// # Ok(()) }
    /// ```
    pub async fn call_tool_as_task(
        &self,
        name: &str,
        arguments: Value,
        options: RequestOptions,
    ) -> Result<TaskHandle> {
        let (status_tx, status) = watch::channel(None);
        let status_tx = Arc::new(status_tx);
        let sink = Arc::clone(&status_tx);
        let theirs = options.task_status.clone();
        let options = options.on_task_status(move |s| {
            if let Some(f) = &theirs {
                f(s);
            }
            sink.send_replace(Some(s.clone()));
        });
        let (outcome_tx, mut outcome) = oneshot::channel();
        let client = self.clone();
        let name = name.to_owned();
        let call = tokio::spawn(async move {
            let result = client.call_tool_with(&name, arguments, options).await;
            let _ = outcome_tx.send(result);
        });
        let abort = call.abort_handle();
        // Until the task exists, or the call is answered without one.
        let mut watching = status.clone();
        let task_id = tokio::select! {
            biased;
            changed = watching.wait_for(Option::is_some) => {
                changed.ok().and_then(|s| s.as_ref().map(|s| s.task_id.clone()))
            }
            answered = &mut outcome => {
                let answered = answered.unwrap_or(Err(crate::Error::Cancelled));
                let (tx, rx) = oneshot::channel();
                let _ = tx.send(answered);
                return Ok(TaskHandle::new(None, status, rx, abort));
            }
        };
        Ok(TaskHandle::new(task_id, status, outcome, abort))
    }

    /// Polls a task by its id, one the host kept (`TaskHandle::task_id`, `TaskStatus::task_id`,
    /// an error's `task_id`), e.g. across its own restart: a handle as
    /// [`Client::call_tool_as_task`] gives, whose `wait` is the task's tool result. The task
    /// is polled in the era the connection speaks now; a server that does not know it answers
    /// [`crate::Error::TaskLost`]. Needs a connection ready (else
    /// [`crate::Error::Unavailable`] through `wait`). The result is not checked against an
    /// `outputSchema` (the tool is not known).
    pub fn resume_task(&self, task_id: &str, options: RequestOptions) -> TaskHandle {
        let (status_tx, status) = watch::channel(None);
        let theirs = options.task_status.clone();
        let options = options.on_task_status(move |s| {
            if let Some(f) = &theirs {
                f(s);
            }
            status_tx.send_replace(Some(s.clone()));
        });
        let (outcome_tx, outcome) = oneshot::channel();
        let client = self.clone();
        let id = task_id.to_owned();
        let call = tokio::spawn(async move {
            let answer = client.start_resume(&id, options).await;
            let result = answer.and_then(|body| decoded::<CallToolResult>("tasks/get", body));
            let _ = outcome_tx.send(result);
        });
        TaskHandle::new(
            Some(task_id.to_owned()),
            status,
            outcome,
            call.abort_handle(),
        )
    }
}
