//! The client side of the 2025-11-25 tasks utility: a server may ask the client to run a
//! `sampling/createMessage` or an `elicitation/create` as a task (`params.task`), then polls it
//! with `tasks/get`, fetches its outcome with `tasks/result`, lists them with `tasks/list` and
//! cancels one with `tasks/cancel`. Declared only when the host asks
//! ([`crate::TaskOptions::serve_requests`]); bounded in count ([`MAX_CLIENT_TASKS`]) and in
//! time (a task is forgotten its TTL after it was created, at most [`MAX_TTL`]).
//!
//! The handler runs as for any server request (the same typed handlers); only its answer is
//! kept for the server to fetch. Not a part of the lifecycle table: these are answers to
//! server requests, which the table hands to the handler layer.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use mcp_machine::{RpcError, ServerInfo, ServerRequestId, codes};
use serde_json::{Value, json};
use tokio::sync::watch;
use tokio::task::AbortHandle;

use crate::handler::{ClientHandler, HandlerFuture, RequestContext, route};

/// The most tasks the client keeps for servers at once; past it, a request for another is
/// answered with an error (the server may send it again as a plain request).
pub const MAX_CLIENT_TASKS: usize = 64;
/// The longest a task is kept (10 minutes), whatever TTL the server asked for.
pub const MAX_TTL: Duration = Duration::from_secs(600);
/// The TTL of a task whose server asked for none (1 minute).
const DEFAULT_TTL: Duration = Duration::from_secs(60);
/// The poll interval suggested to the server.
const POLL_INTERVAL_MS: u64 = 500;
const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";

/// Where one task is.
#[derive(Clone, Debug)]
enum Outcome {
    Working,
    Done(Result<Value, RpcError>),
    Cancelled,
}

struct Entry {
    created: SystemTime,
    ttl: Duration,
    updated: SystemTime,
    outcome: watch::Receiver<Outcome>,
    abort: AbortHandle,
    cancelled: watch::Sender<bool>,
}

/// The tasks this client runs for the server of its connection.
#[derive(Default)]
pub(crate) struct ClientTasks {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    tasks: BTreeMap<String, Entry>,
    next: u64,
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

fn iso(t: SystemTime) -> String {
    let secs = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Days since the epoch to a civil date (Howard Hinnant's algorithm).
    let z = i64::try_from(days).unwrap_or(0) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

fn error(code: i64, message: impl Into<String>) -> RpcError {
    RpcError {
        code,
        message: message.into(),
        data: None,
    }
}

fn ready(v: Result<Value, RpcError>) -> HandlerFuture<Value> {
    Box::pin(async move { v })
}

impl ClientTasks {
    /// The answer to a server request this store handles, or `None` for one it does not (a
    /// plain request, which goes to the handler as usual).
    pub(crate) fn handle(
        self: &Arc<Self>,
        handler: &Arc<dyn ClientHandler>,
        method: &str,
        params: &Value,
        server: Option<ServerInfo>,
        notifier: Option<crate::command::Notifier>,
    ) -> Option<HandlerFuture<Value>> {
        match method {
            "sampling/createMessage" | "elicitation/create" => {
                let task = params.get("task")?.as_object()?;
                let ttl = task
                    .get("ttl")
                    .and_then(Value::as_u64)
                    .map_or(DEFAULT_TTL, Duration::from_millis)
                    .min(MAX_TTL);
                let mut plain = params.clone();
                if let Some(obj) = plain.as_object_mut() {
                    obj.remove("task");
                }
                Some(ready(
                    self.create(handler, method, plain, ttl, server, notifier),
                ))
            }
            "tasks/get" => Some(ready(self.get(params))),
            "tasks/result" => Some(self.result(params)),
            "tasks/list" => Some(ready(Ok(self.list()))),
            "tasks/cancel" => Some(ready(self.cancel(params))),
            _ => None,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Forgets the tasks whose TTL passed (a running one is aborted).
    fn sweep(inner: &mut Inner, now: SystemTime) {
        inner.tasks.retain(|_, e| {
            let alive = now.duration_since(e.created).unwrap_or_default() < e.ttl;
            if !alive {
                e.abort.abort();
            }
            alive
        });
    }

    fn create(
        self: &Arc<Self>,
        handler: &Arc<dyn ClientHandler>,
        method: &str,
        params: Value,
        ttl: Duration,
        server: Option<ServerInfo>,
        notifier: Option<crate::command::Notifier>,
    ) -> Result<Value, RpcError> {
        let now = SystemTime::now();
        let mut inner = self.lock();
        Self::sweep(&mut inner, now);
        if inner.tasks.len() >= MAX_CLIENT_TASKS {
            return Err(error(
                codes::INTERNAL_ERROR,
                format!("the client runs {MAX_CLIENT_TASKS} tasks already"),
            ));
        }
        inner.next += 1;
        let id = format!("client-task-{}", inner.next);
        let (cancelled_tx, cancelled) = watch::channel(false);
        let cx = RequestContext::new(
            ServerRequestId::Str(id.clone()),
            method.to_owned(),
            &params,
            server,
            cancelled,
            notifier,
        );
        let fut = route(&**handler, method, params, cx);
        let (outcome_tx, outcome) = watch::channel(Outcome::Working);
        let store = Arc::downgrade(self);
        let task_id = id.clone();
        let join = tokio::spawn(async move {
            let result = fut.await;
            outcome_tx.send_replace(Outcome::Done(result));
            if let Some(store) = store.upgrade()
                && let Some(e) = store.lock().tasks.get_mut(&task_id)
            {
                e.updated = SystemTime::now();
            }
        });
        inner.tasks.insert(
            id.clone(),
            Entry {
                created: now,
                ttl,
                updated: now,
                outcome,
                abort: join.abort_handle(),
                cancelled: cancelled_tx,
            },
        );
        let task = Self::task(&id, inner.tasks.get(&id).expect("just inserted"));
        Ok(json!({ "task": task }))
    }

    fn task(id: &str, e: &Entry) -> Value {
        let status = match &*e.outcome.borrow() {
            Outcome::Working => "working",
            Outcome::Done(Ok(_)) => "completed",
            Outcome::Done(Err(_)) => "failed",
            Outcome::Cancelled => "cancelled",
        };
        json!({
            "taskId": id,
            "status": status,
            "createdAt": iso(e.created),
            "lastUpdatedAt": iso(e.updated),
            "ttl": ms(e.ttl),
            "pollInterval": POLL_INTERVAL_MS,
        })
    }

    fn task_id(params: &Value) -> Result<&str, RpcError> {
        params
            .get("taskId")
            .and_then(Value::as_str)
            .ok_or_else(|| error(codes::INVALID_PARAMS, "missing taskId"))
    }

    fn unknown(id: &str) -> RpcError {
        error(
            codes::INVALID_PARAMS,
            format!("Failed to retrieve task: Task not found ({id})"),
        )
    }

    fn get(&self, params: &Value) -> Result<Value, RpcError> {
        let id = Self::task_id(params)?;
        let mut inner = self.lock();
        Self::sweep(&mut inner, SystemTime::now());
        let e = inner.tasks.get(id).ok_or_else(|| Self::unknown(id))?;
        Ok(Self::task(id, e))
    }

    fn result(&self, params: &Value) -> HandlerFuture<Value> {
        let found = Self::task_id(params).and_then(|id| {
            let mut inner = self.lock();
            Self::sweep(&mut inner, SystemTime::now());
            let e = inner.tasks.get(id).ok_or_else(|| Self::unknown(id))?;
            Ok((id.to_owned(), e.outcome.clone()))
        });
        Box::pin(async move {
            let (id, mut outcome) = found?;
            // Waits until the task ends (the store dropping it ends the wait too).
            let ended = outcome
                .wait_for(|o| !matches!(o, Outcome::Working))
                .await
                .map(|o| o.clone());
            match ended {
                Ok(Outcome::Done(Ok(mut result))) => {
                    if let Some(obj) = result.as_object_mut() {
                        obj.insert("_meta".into(), json!({ RELATED_TASK: {"taskId": id} }));
                    }
                    Ok(result)
                }
                Ok(Outcome::Done(Err(e))) => Err(e),
                Ok(Outcome::Cancelled) => Err(error(
                    codes::INTERNAL_ERROR,
                    format!("task {id} was cancelled: it has no result"),
                )),
                Ok(Outcome::Working) | Err(_) => Err(error(
                    codes::INTERNAL_ERROR,
                    format!("task {id} ended without a result (cancelled or forgotten)"),
                )),
            }
        })
    }

    fn list(&self) -> Value {
        let mut inner = self.lock();
        Self::sweep(&mut inner, SystemTime::now());
        let tasks: Vec<Value> = inner
            .tasks
            .iter()
            .map(|(id, e)| Self::task(id, e))
            .collect();
        json!({ "tasks": tasks })
    }

    fn cancel(&self, params: &Value) -> Result<Value, RpcError> {
        let id = Self::task_id(params)?;
        let mut inner = self.lock();
        Self::sweep(&mut inner, SystemTime::now());
        let e = inner.tasks.get_mut(id).ok_or_else(|| Self::unknown(id))?;
        if !matches!(&*e.outcome.borrow(), Outcome::Working) {
            return Err(error(
                codes::INVALID_PARAMS,
                format!("Cannot cancel task {id}: already in a terminal status"),
            ));
        }
        e.cancelled.send_replace(true);
        e.abort.abort();
        e.updated = SystemTime::now();
        // The handler's task is aborted: its outcome is set here, once.
        let (tx, rx) = watch::channel(Outcome::Cancelled);
        drop(tx);
        e.outcome = rx;
        Ok(Self::task(id, e))
    }
}

impl Drop for ClientTasks {
    fn drop(&mut self) {
        for e in self.lock().tasks.values() {
            e.abort.abort();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_rfc3339() {
        assert_eq!(iso(UNIX_EPOCH), "1970-01-01T00:00:00Z");
        let t = UNIX_EPOCH + Duration::from_secs(1_764_288_000);
        assert_eq!(iso(t), "2025-11-28T00:00:00Z");
    }
}
