//! Task-backed tool calls end to end, in both eras, against the in-repo server's task tools
//! (`--tasks`): `call_tool` polls a task to its end (one await), tells the caller its status,
//! gives the outcome (an `isError` result stays a result), answers a lost, cancelled or failed
//! task with a typed error, cancels the task on the server when the caller gives up (and only
//! then), bounds the whole task when asked, routes a task's input to the handler, and keeps a
//! task across a server crash (a server started again on the same task store answers it).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_runtime::{
    Client, ClientBuilder, ElicitParams, ElicitResult, EraMode, Error, Handlers, RequestOptions,
    TaskOptions, TaskState, TaskStatus,
};
use mcp_tests::{in_process, over_http, over_stdio};
use mcp_testserver::ServerConfig;
use serde_json::{Value, json};

const ECHO: &str = env!("CARGO_BIN_EXE_test-echo-server");
const WAIT: Duration = Duration::from_secs(20);

fn config(era: EraMode) -> ServerConfig {
    let mut c = ServerConfig::echo();
    c.tasks = true;
    c.era = match era {
        EraMode::Modern => mcp_testserver::Era::Modern,
        _ => mcp_testserver::Era::Legacy,
    };
    c
}

/// A handler that accepts every elicitation with `{"value": "yes"}`.
fn accepting() -> Handlers {
    Handlers::new().elicitation(|_p: ElicitParams, _cx| async move {
        let mut content = serde_json::Map::new();
        content.insert("value".into(), json!("yes"));
        Ok(ElicitResult::accept(content))
    })
}

async fn client(era: EraMode, tasks: Option<TaskOptions>) -> Client {
    let mut b = in_process(config(era)).era(era).handler(accepting());
    if let Some(t) = tasks {
        b = b.tasks(t.poll_bounds(Duration::from_millis(20), Duration::from_secs(1)));
    }
    tokio::time::timeout(WAIT, b.connect())
        .await
        .expect("connects in time")
        .expect("connects")
}

/// Calls `tool` with `args`, collecting the task statuses told.
async fn call(
    client: &Client,
    tool: &str,
    args: Value,
) -> (
    Result<mcp_runtime::types::CallToolResult, Error>,
    Vec<TaskStatus>,
) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    let options =
        RequestOptions::new().on_task_status(move |s| sink.lock().unwrap().push(s.clone()));
    let result = tokio::time::timeout(WAIT, client.call_tool_with(tool, args, options))
        .await
        .expect("answered in time");
    let seen = seen.lock().unwrap().clone();
    (result, seen)
}

const ERAS: [EraMode; 2] = [EraMode::Legacy, EraMode::Modern];

#[tokio::test]
async fn a_task_is_polled_to_its_result_and_its_status_told() {
    for era in ERAS {
        let client = client(era, Some(TaskOptions::new())).await;
        let (result, seen) =
            call(&client, "task_slow", json!({"ms": 300, "interval_ms": 30})).await;
        let result = result.unwrap_or_else(|e| panic!("{era:?}: {e}"));
        assert_eq!(result.text(), "done after 300 ms", "{era:?}");
        assert!(!seen.is_empty(), "{era:?}: no status told");
        let id = &seen[0].task_id;
        assert!(seen.iter().all(|s| &s.task_id == id), "{era:?}: {seen:?}");
        assert_eq!(seen[0].state, TaskState::Working, "{era:?}");
        // The server's interval (30 ms) is above the floor (20 ms): kept.
        assert_eq!(seen[0].poll_interval, Duration::from_millis(30), "{era:?}");
        client.stop().await;
    }
}

#[tokio::test]
async fn poll_intervals_are_floored_and_capped() {
    for era in ERAS {
        let client = client(era, Some(TaskOptions::new())).await;
        let (result, seen) = call(&client, "task_slow", json!({"ms": 100, "interval_ms": 0})).await;
        assert!(result.is_ok(), "{era:?}: {result:?}");
        assert_eq!(
            seen[0].poll_interval,
            Duration::from_millis(20),
            "{era:?}: floored"
        );
        let (result, seen) = call(
            &client,
            "task_slow",
            json!({"ms": 100, "interval_ms": 31_536_000_000u64}),
        )
        .await;
        assert!(result.is_ok(), "{era:?}: {result:?}");
        assert_eq!(
            seen[0].poll_interval,
            Duration::from_secs(1),
            "{era:?}: capped"
        );
        client.stop().await;
    }
}

#[tokio::test]
async fn failed_lost_and_cancelled_tasks_answer_with_what_happened() {
    for era in ERAS {
        let client = client(era, Some(TaskOptions::new())).await;
        let (failed, _) = call(&client, "task_fail", json!({"ms": 50, "interval_ms": 20})).await;
        match era {
            // 2025-11-25: a failed tool call is its isError result.
            EraMode::Legacy => assert!(failed.as_ref().is_ok_and(|r| r.failed()), "{failed:?}"),
            // 2026-07-28: a failed task carries a JSON-RPC error.
            _ => assert!(
                matches!(&failed, Err(Error::Server { code: -32603, .. })),
                "{failed:?}"
            ),
        }
        let (lost, _) = call(&client, "task_forget", json!({"ms": 50, "interval_ms": 20})).await;
        assert!(
            matches!(&lost, Err(Error::TaskLost { .. })),
            "{era:?}: {lost:?}"
        );
        let (cancelled, _) =
            call(&client, "task_cancel", json!({"ms": 50, "interval_ms": 20})).await;
        assert!(
            matches!(&cancelled, Err(Error::TaskCancelled { .. })),
            "{era:?}: {cancelled:?}"
        );
        client.stop().await;
    }
}

#[tokio::test]
async fn a_tasks_input_goes_to_the_handler_once_per_key() {
    for era in ERAS {
        let client = client(era, Some(TaskOptions::new())).await;
        let (result, seen) = call(
            &client,
            "task_input",
            json!({"ms": 400, "interval_ms": 20, "inputs": 3}),
        )
        .await;
        let result = result.unwrap_or_else(|e| panic!("{era:?}: {e}"));
        assert_eq!(
            result.text(),
            r#"answered: answer1=accept {"value":"yes"}, answer2=accept {"value":"yes"}, answer3=accept {"value":"yes"}"#,
            "{era:?}"
        );
        assert!(
            seen.iter().any(|s| s.state == TaskState::InputRequired),
            "{era:?}: {seen:?}"
        );
        client.stop().await;
    }
}

#[tokio::test]
async fn a_tool_that_requires_a_task_fails_clearly_without_tasks() {
    let legacy = client(EraMode::Legacy, None).await;
    legacy.list_all_tools().await.unwrap();
    let err = legacy
        .call_tool("task_slow", json!({"ms": 10}))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::TaskRequired { tool } if tool == "task_slow"),
        "{err:?}"
    );
    legacy.stop().await;
    let modern = client(EraMode::Modern, None).await;
    let err = modern
        .call_tool("task_slow", json!({"ms": 10}))
        .await
        .unwrap_err();
    assert!(matches!(&err, Error::MissingCapability { .. }), "{err:?}");
    modern.stop().await;
}

#[tokio::test]
async fn optional_tools_run_as_tasks_only_when_asked() {
    let plain = client(EraMode::Legacy, Some(TaskOptions::new())).await;
    let (r, seen) = call(&plain, "task_maybe", json!({"ms": 20})).await;
    assert_eq!(r.unwrap().text(), "done after 20 ms (no task)");
    assert!(seen.is_empty());
    plain.stop().await;
    let tasked = client(
        EraMode::Legacy,
        Some(TaskOptions::new().optional_tools(true)),
    )
    .await;
    let (r, seen) = call(&tasked, "task_maybe", json!({"ms": 20, "interval_ms": 20})).await;
    assert_eq!(r.unwrap().text(), "done after 20 ms");
    assert!(!seen.is_empty());
    tasked.stop().await;
}

/// The status the server gives for `task_id` now (2025-11-25 `tasks/get`, or the 2026-07-28
/// one: both read the same store).
async fn server_status(client: &Client, task_id: &str) -> String {
    let got = client
        .request("tasks/get", Some(json!({"taskId": task_id})))
        .await
        .expect("tasks/get answered");
    got["status"].as_str().unwrap_or_default().to_owned()
}

/// The server's status for `task_id` once it is `cancelled`, or the last one after 2 s (a
/// cancel is sent as the caller gives up, and may land a moment later).
async fn settled_status(client: &Client, task_id: &str) -> String {
    let mut status = String::new();
    for _ in 0..100 {
        status = server_status(client, task_id).await;
        if status == "cancelled" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    status
}

#[tokio::test]
async fn a_caller_that_gives_up_cancels_the_task_on_the_server_once() {
    for era in ERAS {
        let client = client(era, Some(TaskOptions::new())).await;
        let seen = Arc::new(Mutex::new(Vec::<TaskStatus>::new()));
        let sink = Arc::clone(&seen);
        let options =
            RequestOptions::new().on_task_status(move |s| sink.lock().unwrap().push(s.clone()));
        let call = client.call_tool_with("task_endless", json!({"interval_ms": 20}), options);
        // Dropped once the task exists: the caller gives up.
        let gave_up = tokio::time::timeout(Duration::from_millis(300), call).await;
        assert!(
            gave_up.is_err(),
            "{era:?}: an endless task answered: {gave_up:?}"
        );
        let id = seen.lock().unwrap()[0].task_id.clone();
        assert_eq!(settled_status(&client, &id).await, "cancelled", "{era:?}");
        client.stop().await;
    }
}

#[tokio::test]
async fn a_task_bound_answers_with_a_timeout_and_cancels_the_task() {
    for era in ERAS {
        let client = client(era, Some(TaskOptions::new())).await;
        let seen = Arc::new(Mutex::new(Vec::<TaskStatus>::new()));
        let sink = Arc::clone(&seen);
        let options = RequestOptions::new()
            .task_timeout(Duration::from_millis(200))
            .on_task_status(move |s| sink.lock().unwrap().push(s.clone()));
        let r = tokio::time::timeout(
            WAIT,
            client.call_tool_with("task_endless", json!({"interval_ms": 20}), options),
        )
        .await
        .expect("answered in time");
        assert!(matches!(&r, Err(Error::Timeout { .. })), "{era:?}: {r:?}");
        let id = seen.lock().unwrap()[0].task_id.clone();
        assert_eq!(server_status(&client, &id).await, "cancelled", "{era:?}");
        client.stop().await;
    }
}

#[tokio::test]
async fn stop_answers_a_task_and_leaves_it_on_the_server() {
    let client = client(EraMode::Legacy, Some(TaskOptions::new())).await;
    let seen = Arc::new(Mutex::new(Vec::<TaskStatus>::new()));
    let sink = Arc::clone(&seen);
    let options =
        RequestOptions::new().on_task_status(move |s| sink.lock().unwrap().push(s.clone()));
    let other = client.clone();
    let call = tokio::spawn(async move {
        other
            .call_tool_with("task_endless", json!({"interval_ms": 20}), options)
            .await
    });
    assert!(
        mcp_tests::eventually(WAIT, || !seen.lock().unwrap().is_empty()).await,
        "the task was created"
    );
    client.stop().await;
    let r = tokio::time::timeout(WAIT, call).await.unwrap().unwrap();
    assert!(matches!(r, Err(Error::Shutdown)), "{r:?}");
    // A new client on the same (in-process) store sees the task still working.
    let id = seen.lock().unwrap()[0].task_id.clone();
    let again = client_for_store(EraMode::Legacy).await;
    assert_eq!(server_status(&again, &id).await, "working");
    again.stop().await;
}

async fn client_for_store(era: EraMode) -> Client {
    client(era, Some(TaskOptions::new())).await
}

/// The process id of the server the client talks to now.
async fn server_pid(client: &Client) -> u32 {
    let info = mcp_tests::session_info(client).await;
    u32::try_from(info["pid"].as_u64().expect("a pid")).unwrap()
}

fn quick(builder: ClientBuilder) -> ClientBuilder {
    builder
        .handler(accepting())
        .tasks(TaskOptions::new().poll_bounds(Duration::from_millis(20), Duration::from_secs(1)))
        .backoff(Duration::from_millis(20), Duration::from_millis(50), 0)
}

#[tokio::test]
async fn a_task_survives_a_server_crash_and_is_answered_by_the_new_server() {
    for era in ERAS {
        let store = std::env::temp_dir().join(format!(
            "mcp-tasks-{}-{}.json",
            std::process::id(),
            era_name(era)
        ));
        let _ = std::fs::remove_file(&store);
        let store = store.to_str().unwrap().to_owned();
        let store = store.as_str();
        let args = ["--tasks", "--task-store", store, "--era", era_name(era)];
        let client = quick(over_stdio(ECHO, &args, era)).connect().await.unwrap();
        let first = server_pid(&client).await;
        let seen = Arc::new(Mutex::new(Vec::<TaskStatus>::new()));
        let sink = Arc::clone(&seen);
        let options =
            RequestOptions::new().on_task_status(move |s| sink.lock().unwrap().push(s.clone()));
        let other = client.clone();
        let call = tokio::spawn(async move {
            other
                .call_tool_with("task_slow", json!({"ms": 1500, "interval_ms": 50}), options)
                .await
        });
        assert!(
            mcp_tests::eventually(WAIT, || !seen.lock().unwrap().is_empty()).await,
            "{era:?}: the task was created"
        );
        // The server dies under the task; the client starts another on the same store.
        let _ = std::process::Command::new("kill")
            .args(["-9", &first.to_string()])
            .status();
        let r = tokio::time::timeout(WAIT, call).await.unwrap().unwrap();
        let r = r.unwrap_or_else(|e| panic!("{era:?}: the task was lost with the server: {e}"));
        assert_eq!(r.text(), "done after 1500 ms", "{era:?}");
        let second = server_pid(&client).await;
        assert_ne!(first, second, "{era:?}: answered by a new server");
        client.stop().await;
        let _ = std::fs::remove_file(store);
    }
}

fn era_name(era: EraMode) -> &'static str {
    match era {
        EraMode::Modern => "modern",
        _ => "legacy",
    }
}

#[tokio::test]
async fn tasks_over_http_in_both_eras() {
    for era in ERAS {
        let (_child, url) = mcp_tests::spawn_http(
            ECHO,
            &["--tasks", "--era", era_name(era), "--http", "127.0.0.1:0"],
        )
        .await;
        let client = quick(over_http(&url, era)).connect().await.unwrap();
        let (r, seen) = call(&client, "task_slow", json!({"ms": 200, "interval_ms": 20})).await;
        assert_eq!(
            r.unwrap_or_else(|e| panic!("{era:?}: {e}")).text(),
            "done after 200 ms"
        );
        assert!(!seen.is_empty());
        let (r, _) = call(&client, "task_input", json!({"ms": 200, "interval_ms": 20})).await;
        assert_eq!(
            r.unwrap_or_else(|e| panic!("{era:?}: {e}")).text(),
            r#"answered: answer1=accept {"value":"yes"}"#
        );
        client.stop().await;
    }
}

/// The client side of the 2025-11-25 utility: a scripted server asks the client to run a
/// sampling request as a task, fetches the result, polls and lists the task, and tries to
/// cancel it once it is done.
#[tokio::test]
async fn the_client_runs_a_servers_sampling_request_as_a_task() {
    use mcp_runtime::{CreateMessageParams, CreateMessageResult};
    let (tx, mut answers) = tokio::sync::mpsc::unbounded_channel::<Value>();
    let builder = mcp_tests::scripted(move |_generation, msg| {
        let ask = |id: &str, method: &str, params: Value| json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let id = msg.get("id").cloned().unwrap_or(Value::Null);
        match msg.get("method").and_then(Value::as_str) {
            Some("initialize") => {
                let caps = &msg["params"]["capabilities"];
                let _ = tx.send(json!({"declared": caps["tasks"]}));
                return Some(vec![mcp_tests::initialize_result(
                    &id,
                    "2025-11-25",
                    json!({}),
                    "asks-for-tasks",
                )]);
            }
            Some("notifications/initialized") => {
                return Some(vec![ask(
                    "s1",
                    "sampling/createMessage",
                    json!({"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
                           "maxTokens": 5, "task": {"ttl": 60000}}),
                )]);
            }
            Some(_) => return Some(vec![]),
            None => {}
        }
        if msg.is_null() {
            return None;
        }
        let _ = tx.send(msg.clone());
        let task_id = msg["result"]["task"]["taskId"].as_str().map(str::to_owned);
        Some(match msg["id"].as_str() {
            Some("s1") => vec![ask("s2", "tasks/result", json!({"taskId": task_id}))],
            Some("s2") => {
                let id = msg["result"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"]
                    .clone();
                vec![ask("s3", "tasks/get", json!({"taskId": id}))]
            }
            Some("s3") => vec![ask("s4", "tasks/list", json!({}))],
            Some("s4") => {
                let id = msg["result"]["tasks"][0]["taskId"].clone();
                vec![ask("s5", "tasks/cancel", json!({"taskId": id}))]
            }
            _ => vec![],
        })
    });
    let handlers = Handlers::new().sampling(|_p: CreateMessageParams, _cx| async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        Ok(CreateMessageResult::text("m", "sampled as a task"))
    });
    let client = builder
        .handler(handlers)
        .tasks(TaskOptions::new().serve_requests(true))
        .connect()
        .await
        .unwrap();
    async fn next(answers: &mut tokio::sync::mpsc::UnboundedReceiver<Value>) -> Value {
        tokio::time::timeout(WAIT, answers.recv())
            .await
            .expect("in time")
            .expect("an answer")
    }
    let declared = next(&mut answers).await;
    assert_eq!(
        declared["declared"],
        json!({"list": {}, "cancel": {}, "requests": {"sampling": {"createMessage": {}}}})
    );
    let created = next(&mut answers).await;
    assert_eq!(created["id"], "s1");
    assert_eq!(created["result"]["task"]["status"], "working", "{created}");
    let result = next(&mut answers).await;
    assert_eq!(result["id"], "s2");
    assert_eq!(
        result["result"]["content"]["text"], "sampled as a task",
        "{result}"
    );
    let got = next(&mut answers).await;
    assert_eq!(got["result"]["status"], "completed", "{got}");
    let listed = next(&mut answers).await;
    assert_eq!(
        listed["result"]["tasks"].as_array().map(Vec::len),
        Some(1),
        "{listed}"
    );
    let cancel = next(&mut answers).await;
    assert_eq!(
        cancel["error"]["code"], -32602,
        "a done task cannot be cancelled: {cancel}"
    );
    client.stop().await;
}

#[tokio::test]
async fn a_handle_gives_the_task_id_the_status_the_outcome_and_a_cancel() {
    for era in ERAS {
        let client = client(era, Some(TaskOptions::new())).await;
        let slow = client
            .call_tool_as_task(
                "task_slow",
                json!({"ms": 200, "interval_ms": 20}),
                RequestOptions::new(),
            )
            .await
            .unwrap();
        let id = slow.task_id().expect("a task").to_owned();
        assert_eq!(slow.status().map(|s| s.task_id), Some(id.clone()));
        let mut watch = slow.watch_status();
        let result = tokio::time::timeout(WAIT, slow.wait()).await.unwrap();
        assert_eq!(result.unwrap().text(), "done after 200 ms", "{era:?}");
        let last = watch.borrow_and_update().clone();
        assert_eq!(last.map(|s| s.state), Some(TaskState::Completed), "{era:?}");

        let endless = client
            .call_tool_as_task(
                "task_endless",
                json!({"interval_ms": 20}),
                RequestOptions::new(),
            )
            .await
            .unwrap();
        let id = endless.task_id().expect("a task").to_owned();
        endless.cancel();
        let r = tokio::time::timeout(WAIT, endless.wait()).await.unwrap();
        assert!(matches!(r, Err(Error::Cancelled)), "{era:?}: {r:?}");
        assert_eq!(settled_status(&client, &id).await, "cancelled", "{era:?}");

        let plain = client
            .call_tool_as_task("echo", json!({"message": "hi"}), RequestOptions::new())
            .await
            .unwrap();
        assert_eq!(plain.task_id(), None);
        assert_eq!(plain.wait().await.unwrap().text(), "Echo: hi");
        client.stop().await;
    }
}

/// How many `method` requests the in-repo server served in this process.
async fn served(client: &Client, method: &str) -> u64 {
    mcp_tests::session_info(client).await["served"][method]
        .as_u64()
        .unwrap_or(0)
}

/// What a hostile task server may do: ask for polls every 0 ms (the floor holds), for polls
/// once in years (the cap holds), change its interval at every poll, flood the client with
/// input requests (the budget holds, the task is cancelled), or keep a task working for ever
/// (the caller's bound holds).
#[tokio::test]
async fn a_hostile_task_server_is_bounded() {
    for era in ERAS {
        let client = client(era, Some(TaskOptions::new())).await;
        let before = served(&client, "tasks/get").await;
        let started = tokio::time::Instant::now();
        let (r, _) = call(&client, "task_slow", json!({"ms": 400, "interval_ms": 0})).await;
        assert!(r.is_ok(), "{era:?}: {r:?}");
        let polls = served(&client, "tasks/get").await - before;
        let most = (started.elapsed().as_millis() / 20 + 2) as u64;
        assert!(
            (1..=most).contains(&polls),
            "{era:?}: {polls} polls in {:?} with a floor of 20 ms",
            started.elapsed()
        );

        let started = tokio::time::Instant::now();
        let (r, _) = call(
            &client,
            "task_slow",
            json!({"ms": 50, "interval_ms": u64::MAX}),
        )
        .await;
        assert!(r.is_ok(), "{era:?}: {r:?}");
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{era:?}: the cap (1 s) held"
        );

        let (r, seen) = call(
            &client,
            "task_slow",
            json!({"ms": 300, "interval_ms": 20, "changing": true}),
        )
        .await;
        assert!(r.is_ok(), "{era:?}: {r:?}");
        assert!(!seen.is_empty());

        let (r, _) = call(
            &client,
            "task_input",
            json!({"ms": 100, "interval_ms": 20, "inputs": 500}),
        )
        .await;
        match (&r, era) {
            // 2026-07-28: the inputs come as inputRequests, past the task's input budget.
            (Err(Error::InputRequired { reason }), EraMode::Modern) => {
                assert!(reason.contains("at most 64"), "{reason}");
            }
            // 2025-11-25: the server asks one elicitation at a time while tasks/result waits;
            // each is a server request, bounded by the handler's cap and answered.
            (Ok(res), EraMode::Legacy) => assert!(res.text().starts_with("answered: ")),
            _ => panic!("{era:?}: {r:?}"),
        }
        client.stop().await;
    }
}

/// A host that kept a task's id (e.g. across its own restart) polls it from another client:
/// the result comes as the tool call's would; an id the server does not know is lost.
#[tokio::test]
async fn a_task_is_resumed_by_its_id_from_another_client() {
    for era in ERAS {
        let first = client(era, Some(TaskOptions::new())).await;
        let task = first
            .call_tool_as_task(
                "task_slow",
                json!({"ms": 300, "interval_ms": 20}),
                RequestOptions::new(),
            )
            .await
            .unwrap();
        let id = task.task_id().unwrap().to_owned();
        // The first host goes away without cancelling (stop leaves the task on the server).
        drop(task);
        first.stop().await;
        let second = client(era, Some(TaskOptions::new())).await;
        let seen = Arc::new(Mutex::new(Vec::<TaskStatus>::new()));
        let sink = Arc::clone(&seen);
        let options =
            RequestOptions::new().on_task_status(move |s| sink.lock().unwrap().push(s.clone()));
        let resumed = second.resume_task(&id, options);
        assert_eq!(resumed.task_id(), Some(id.as_str()));
        let r = tokio::time::timeout(WAIT, resumed.wait()).await.unwrap();
        assert_eq!(r.unwrap().text(), "done after 300 ms", "{era:?}");
        let seen = seen.lock().unwrap().clone();
        assert!(
            !seen.is_empty() && seen.iter().all(|s| s.task_id == id),
            "{seen:?}"
        );
        let unknown = second.resume_task("no-such-task", RequestOptions::new());
        let r = tokio::time::timeout(WAIT, unknown.wait()).await.unwrap();
        assert!(matches!(r, Err(Error::TaskLost { .. })), "{era:?}: {r:?}");
        second.stop().await;
    }
}
