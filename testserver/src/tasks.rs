//! Task-backed tools (with [`ServerConfig::tasks`], `--tasks`): the 2025-11-25 tasks utility
//! (`params.task`, `tasks/get|result|list|cancel`) and the 2026-07-28 extension
//! `io.modelcontextprotocol/tasks` (`resultType: "task"`, `tasks/get|update|cancel`).
//!
//! A task's status is a function of the time since it was created (and of what the client
//! sent: a cancel, an input), so tasks live in one store per process, keyed by id, and, with
//! [`ServerConfig::task_store`] (`--task-store FILE`), in a file: a server started again on the
//! same file still knows them (a task survives the server's crash, as tasks are meant to).
//!
//! The tools, each taking `ms` (how long it runs, 300 by default) and `interval_ms` (the poll
//! interval it asks for, 100 by default; 0 and years are allowed):
//! - `task_slow` (required): working (`step k/4`), then completed with `done after <ms> ms`;
//!   `changing: true` changes the interval at every poll.
//! - `task_maybe` (optional): the same as a task, or a plain call without one.
//! - `task_input` (required): from half its time, input_required until the client answers an
//!   elicitation (2025: sent while `tasks/result` waits; 2026: `inputRequests` answered with
//!   `tasks/update`; `inputs: N` asks for N keys at once), then completed with the answers.
//! - `task_fail` (required): failed at the end (2025: an `isError` result; 2026: an error).
//! - `task_forget` (required): the server forgets it at the end (`tasks/get` says -32602).
//! - `task_cancel` (required): the server cancels it at the end.
//! - `task_endless` (required): working for ever.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::config::ServerConfig;
use crate::connection::Shared;
use crate::protocol::codes;
use crate::rpc::{Handled, Reply, RpcError};

/// The task tools, with their `taskSupport`.
pub(crate) const TASK_TOOLS: [(&str, &str); 7] = [
    ("task_slow", "required"),
    ("task_maybe", "optional"),
    ("task_input", "required"),
    ("task_fail", "required"),
    ("task_forget", "required"),
    ("task_cancel", "required"),
    ("task_endless", "required"),
];

/// The extension's name.
pub(crate) const EXT_TASKS: &str = "io.modelcontextprotocol/tasks";
const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";
/// The TTL every task is given (5 minutes).
const TTL_MS: u64 = 300_000;

/// Whether `name` is a task tool this configuration offers.
pub(crate) fn is_task_tool(config: &ServerConfig, name: &str) -> bool {
    config.tasks && TASK_TOOLS.iter().any(|(n, _)| *n == name)
}

/// The task tools' definitions (`execution.taskSupport` said).
pub(crate) fn tools() -> Vec<Value> {
    let int = |d: &str| json!({"type": "integer", "minimum": 0, "description": d});
    TASK_TOOLS
        .iter()
        .map(|(name, support)| {
            json!({
                "name": name,
                "description": format!("A task-backed tool ({support}): see the test server's tasks module"),
                "inputSchema": {"type": "object", "properties": {
                    "ms": int("how long it runs (300)"),
                    "interval_ms": int("the poll interval it asks for (100)"),
                    "inputs": int("task_input: keys asked at once (1)"),
                    "changing": {"type": "boolean", "description": "a new interval at every poll"},
                }},
                "execution": {"taskSupport": support},
            })
        })
        .collect()
}

/// One task as the store keeps it.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct TaskRec {
    tool: String,
    args: Value,
    /// Milliseconds since the Unix epoch.
    created: u64,
    modern: bool,
    cancelled: bool,
    /// The answers given, by key.
    answers: BTreeMap<String, Value>,
    polls: u64,
}

#[derive(Default)]
struct Store {
    tasks: BTreeMap<String, TaskRec>,
    next: u64,
    loaded: bool,
}

fn store() -> &'static Mutex<Store> {
    static STORE: OnceLock<Mutex<Store>> = OnceLock::new();
    STORE.get_or_init(|| Mutex::new(Store::default()))
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Runs `f` on the store, loaded from (and saved to) the configured file.
fn with_store<T>(config: &ServerConfig, f: impl FnOnce(&mut Store) -> T) -> T {
    let mut s = store().lock().unwrap_or_else(|e| e.into_inner());
    if let Some(path) = &config.task_store
        && !s.loaded
    {
        s.loaded = true;
        if let Ok(text) = std::fs::read_to_string(path)
            && let Ok(tasks) = serde_json::from_str::<BTreeMap<String, TaskRec>>(&text)
        {
            s.tasks.extend(tasks);
        }
    }
    let out = f(&mut s);
    if let Some(path) = &config.task_store {
        save(path, &s.tasks);
    }
    out
}

fn save(path: &Path, tasks: &BTreeMap<String, TaskRec>) {
    if let Ok(text) = serde_json::to_string(tasks) {
        let tmp = path.with_extension("tmp");
        if std::fs::write(&tmp, text).is_ok() {
            let _ = std::fs::rename(&tmp, path);
        }
    }
}

fn arg(args: &Value, name: &str, default: u64) -> u64 {
    args.get(name).and_then(Value::as_u64).unwrap_or(default)
}

/// Where a task is now.
enum Now {
    Working(String),
    Input(Vec<String>),
    Completed(Value),
    Failed(String),
    Cancelled,
    Gone,
}

fn now_of(rec: &TaskRec, at: u64) -> Now {
    if rec.cancelled {
        return Now::Cancelled;
    }
    let ms = arg(&rec.args, "ms", 300);
    let elapsed = at.saturating_sub(rec.created);
    let step = (elapsed * 4).checked_div(ms).map_or(4, |s| s.min(3) + 1);
    let working = Now::Working(format!("step {step}/4"));
    if rec.tool == "task_endless" {
        return working;
    }
    if rec.tool == "task_input" {
        let keys: Vec<String> = (1..=arg(&rec.args, "inputs", 1))
            .map(|i| format!("answer{i}"))
            .collect();
        let missing: Vec<String> = keys
            .iter()
            .filter(|k| !rec.answers.contains_key(*k))
            .cloned()
            .collect();
        if elapsed >= ms / 2 && !missing.is_empty() {
            return Now::Input(missing);
        }
        if elapsed < ms {
            return working;
        }
        let given: Vec<String> = keys
            .iter()
            .map(|k| {
                let a = &rec.answers[k];
                let action = a.get("action").and_then(Value::as_str).unwrap_or("?");
                format!(
                    "{k}={action} {}",
                    a.get("content").cloned().unwrap_or(Value::Null)
                )
            })
            .collect();
        return Now::Completed(text(format!("answered: {}", given.join(", "))));
    }
    if elapsed < ms {
        return working;
    }
    match rec.tool.as_str() {
        "task_fail" => Now::Failed(format!("{} failed after {ms} ms", rec.tool)),
        "task_forget" => Now::Gone,
        "task_cancel" => Now::Cancelled,
        _ => Now::Completed(text(format!("done after {ms} ms"))),
    }
}

fn text(t: String) -> Value {
    json!({"content": [{"type": "text", "text": t}]})
}

fn iso(ms: u64) -> String {
    // Seconds precision is enough for a test server; RFC 3339 in UTC.
    let secs = ms / 1000;
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil(days as i64);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Days since 1970-01-01 to a civil date (Howard Hinnant's algorithm).
fn civil(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// The task object (flat) of `id`, in the era's field names.
fn task_object(id: &str, rec: &TaskRec, now: &Now, at: u64) -> Map<String, Value> {
    let (status, message) = match now {
        Now::Working(m) => ("working", Some(m.clone())),
        Now::Input(_) => ("input_required", Some("waiting for an answer".to_owned())),
        Now::Completed(_) => ("completed", None),
        Now::Failed(m) => ("failed", Some(m.clone())),
        Now::Cancelled | Now::Gone => ("cancelled", None),
    };
    let base = arg(&rec.args, "interval_ms", 100);
    let interval = if rec.args.get("changing").and_then(Value::as_bool) == Some(true) {
        base.saturating_mul(rec.polls % 4 + 1)
    } else {
        base
    };
    let mut t = Map::new();
    t.insert("taskId".into(), json!(id));
    t.insert("status".into(), json!(status));
    if let Some(m) = message {
        t.insert("statusMessage".into(), json!(m));
    }
    t.insert("createdAt".into(), json!(iso(rec.created)));
    t.insert("lastUpdatedAt".into(), json!(iso(at)));
    if rec.modern {
        t.insert("ttlMs".into(), json!(TTL_MS));
        t.insert("pollIntervalMs".into(), json!(interval));
    } else {
        t.insert("ttl".into(), json!(TTL_MS));
        t.insert("pollInterval".into(), json!(interval));
    }
    t
}

fn unknown(id: &str) -> RpcError {
    RpcError::invalid_params(format!("Failed to retrieve task: Task not found ({id})"))
}

fn task_id(params: &Value) -> Result<String, RpcError> {
    params
        .get("taskId")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| RpcError::invalid_params("missing taskId"))
}

/// Creates a task for a tool call; its `CreateTaskResult` in the era's shape.
fn create(config: &ServerConfig, name: &str, params: &Value, modern: bool) -> Value {
    let args = params.get("arguments").cloned().unwrap_or(json!({}));
    let at = now_ms();
    let (id, rec) = with_store(config, |s| {
        s.next += 1;
        let id = format!("task-{}-{}", std::process::id(), s.next);
        let rec = TaskRec {
            tool: name.to_owned(),
            args,
            created: at,
            modern,
            cancelled: false,
            answers: BTreeMap::new(),
            polls: 0,
        };
        s.tasks.insert(id.clone(), rec.clone());
        (id, rec)
    });
    let mut t = task_object(&id, &rec, &Now::Working("step 1/4".into()), at);
    if modern {
        t.insert("resultType".into(), json!("task"));
        Value::Object(t)
    } else {
        json!({ "task": t })
    }
}

/// Runs a task tool's work without a task (`task_maybe` called plainly).
async fn run_plain(params: &Value) -> Value {
    let args = params.get("arguments").cloned().unwrap_or(json!({}));
    let ms = arg(&args, "ms", 300);
    tokio::time::sleep(Duration::from_millis(ms)).await;
    text(format!("done after {ms} ms (no task)"))
}

/// A 2025-11-25 `tools/call` of a task tool.
pub(crate) async fn call_legacy(config: &ServerConfig, name: &str, params: &Value) -> Handled {
    if params.get("task").is_some_and(Value::is_object) {
        return Ok(Reply::Result(create(config, name, params, false)));
    }
    if name == "task_maybe" {
        return Ok(Reply::Result(run_plain(params).await));
    }
    Err(RpcError::new(
        codes::METHOD_NOT_FOUND,
        format!("Tool {name} requires task augmentation (taskSupport: 'required')"),
    ))
}

/// A 2026-07-28 `tools/call` of a task tool: a task when the request declared the extension.
pub(crate) async fn call_modern(config: &ServerConfig, name: &str, params: &Value) -> Handled {
    let declared = params
        .pointer("/_meta/io.modelcontextprotocol~1clientCapabilities/extensions")
        .and_then(|e| e.get(EXT_TASKS))
        .is_some();
    if declared {
        return Ok(Reply::Result(create(config, name, params, true)));
    }
    if name == "task_maybe" {
        return Ok(Reply::Result(run_plain(params).await));
    }
    Err(RpcError::new(
        codes::MISSING_CLIENT_CAPABILITY,
        "Missing required client capability",
    )
    .with_data(json!({"requiredCapabilities": {"extensions": {EXT_TASKS: {}}}})))
}

/// `tasks/get`, both eras.
pub(crate) fn get(config: &ServerConfig, params: &Value) -> Handled {
    let id = task_id(params)?;
    let at = now_ms();
    let (rec, now) = with_store(config, |s| {
        let rec = s.tasks.get_mut(&id)?;
        rec.polls += 1;
        let rec = rec.clone();
        let now = now_of(&rec, at);
        if matches!(now, Now::Gone) {
            s.tasks.remove(&id);
        }
        Some((rec, now))
    })
    .ok_or_else(|| unknown(&id))?;
    if matches!(now, Now::Gone) {
        return Err(unknown(&id));
    }
    let mut t = task_object(&id, &rec, &now, at);
    if rec.modern {
        match &now {
            Now::Completed(result) => {
                t.insert("result".into(), result.clone());
            }
            Now::Failed(m) => {
                t.insert(
                    "error".into(),
                    json!({"code": codes::INTERNAL_ERROR, "message": m}),
                );
            }
            Now::Input(keys) => {
                let requests: Map<String, Value> = keys
                    .iter()
                    .map(|k| {
                        (
                            k.clone(),
                            json!({"method": "elicitation/create", "params": {
                                "mode": "form",
                                "message": format!("{k}?"),
                                "requestedSchema": {"type": "object", "properties": {
                                    "value": {"type": "string"}}},
                            }}),
                        )
                    })
                    .collect();
                t.insert("inputRequests".into(), Value::Object(requests));
            }
            _ => {}
        }
    }
    Ok(Reply::Result(Value::Object(t)))
}

/// `tasks/result` (2025-11-25): waits until the task is terminal, asking the client for the
/// input it needs meanwhile (an elicitation tagged with the task), then answers what the tool
/// call would have.
pub(crate) async fn result(shared: &Shared, params: &Value) -> Handled {
    let config = &shared.config;
    let id = task_id(params)?;
    loop {
        let at = now_ms();
        let (rec, now) = with_store(config, |s| {
            let rec = s.tasks.get(&id)?.clone();
            let now = now_of(&rec, at);
            Some((rec, now))
        })
        .ok_or_else(|| unknown(&id))?;
        let related = json!({ RELATED_TASK: {"taskId": id} });
        match now {
            Now::Working(_) => tokio::time::sleep(Duration::from_millis(20)).await,
            Now::Input(keys) => {
                for key in keys {
                    let asked = json!({
                        "message": format!("{key}?"),
                        "requestedSchema": {"type": "object", "properties": {
                            "value": {"type": "string"}}},
                        "_meta": related,
                    });
                    let answer = match shared.request_client("elicitation/create", asked).await {
                        Ok(a) => a,
                        Err(e) => json!({"action": "error", "content": {"message": e.message}}),
                    };
                    with_store(config, |s| {
                        if let Some(r) = s.tasks.get_mut(&id) {
                            r.answers.insert(key.clone(), answer.clone());
                        }
                    });
                }
            }
            Now::Completed(mut result) => {
                result["_meta"] = related;
                return Ok(Reply::Result(result));
            }
            Now::Failed(m) => {
                let mut result = json!({"content": [{"type": "text", "text": m}], "isError": true});
                result["_meta"] = related;
                return Ok(Reply::Result(result));
            }
            Now::Cancelled => {
                return Err(RpcError::new(
                    codes::INTERNAL_ERROR,
                    format!("Task {id} was cancelled: it has no result"),
                ));
            }
            Now::Gone => return Err(unknown(&id)),
        }
        let _ = rec;
    }
}

/// `tasks/cancel`, both eras (2025: the task, or -32602 when terminal; 2026: an empty ack).
pub(crate) fn cancel(config: &ServerConfig, params: &Value) -> Handled {
    let id = task_id(params)?;
    let at = now_ms();
    let (rec, before) = with_store(config, |s| {
        let rec = s.tasks.get_mut(&id)?;
        let before = now_of(rec, at);
        if matches!(before, Now::Working(_) | Now::Input(_)) {
            rec.cancelled = true;
        }
        Some((rec.clone(), before))
    })
    .ok_or_else(|| unknown(&id))?;
    if rec.modern {
        return Ok(Reply::Result(json!({})));
    }
    if !matches!(before, Now::Working(_) | Now::Input(_)) {
        return Err(RpcError::invalid_params(
            "Cannot cancel task: already in terminal status",
        ));
    }
    Ok(Reply::Result(Value::Object(task_object(
        &id,
        &rec,
        &Now::Cancelled,
        at,
    ))))
}

/// `tasks/update` (2026-07-28): records the answers to outstanding keys; an empty ack.
pub(crate) fn update(config: &ServerConfig, params: &Value) -> Handled {
    let id = task_id(params)?;
    let responses = params
        .get("inputResponses")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    with_store(config, |s| {
        let rec = s.tasks.get_mut(&id)?;
        for (k, v) in responses {
            // Only keys it asks for; unknown or answered ones are ignored, as the spec says.
            if k.starts_with("answer") && !rec.answers.contains_key(&k) {
                rec.answers.insert(k, v);
            }
        }
        Some(())
    })
    .ok_or_else(|| unknown(&id))?;
    Ok(Reply::Result(json!({})))
}

/// `tasks/list` (2025-11-25): the tasks of this era, first page only.
pub(crate) fn list(config: &ServerConfig) -> Handled {
    let at = now_ms();
    let tasks: Vec<Value> = with_store(config, |s| {
        s.tasks
            .iter()
            .filter(|(_, r)| !r.modern)
            .take(50)
            .map(|(id, r)| Value::Object(task_object(id, r, &now_of(r, at), at)))
            .collect()
    });
    Ok(Reply::Result(json!({ "tasks": tasks })))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_rfc3339() {
        assert_eq!(iso(0), "1970-01-01T00:00:00Z");
        assert_eq!(iso(1_764_288_000_000), "2025-11-28T00:00:00Z");
    }

    #[test]
    fn a_task_moves_with_time_and_answers() {
        let mut rec = TaskRec {
            tool: "task_input".into(),
            args: json!({"ms": 100, "inputs": 2}),
            created: 1000,
            modern: true,
            cancelled: false,
            answers: BTreeMap::new(),
            polls: 0,
        };
        assert!(matches!(now_of(&rec, 1010), Now::Working(_)));
        assert!(matches!(now_of(&rec, 1060), Now::Input(k) if k.len() == 2));
        rec.answers
            .insert("answer1".into(), json!({"action": "accept"}));
        rec.answers
            .insert("answer2".into(), json!({"action": "decline"}));
        assert!(matches!(now_of(&rec, 1060), Now::Working(_)));
        assert!(matches!(now_of(&rec, 1100), Now::Completed(_)));
        rec.cancelled = true;
        assert!(matches!(now_of(&rec, 1100), Now::Cancelled));
    }
}
