//! The guards and actions of `spec/tasks.toml`: task-backed tool calls polled to their end in
//! both eras, kept across reconnects, cancelled on the server only when the caller asks.
//!
//! One method per guard and action the spec file declares, in its order; the shared helpers
//! are in [`super`] and below. What fires when is the table's: nothing here decides a
//! transition.

use super::*;
use crate::generated::TasksHandlers;
use crate::tasks::{self as task_wire, TaskFields};

/// What an answer to a task's request says, as the guards read it.
enum TaskAnswer<'p> {
    /// An answer to its `tasks/get`.
    Get(Result<&'p Value, &'p ResponseError>),
    /// An answer to its `tasks/result` (2025-11-25).
    Result,
    /// An answer to its `tasks/update` (2026-07-28).
    Update(Result<&'p Value, &'p ResponseError>),
}

impl TasksHandlers for Ctx<'_> {
    fn is_task_created(&self, p: &Response) -> Option<RequestId> {
        if !self.core.config.tasks && !mutant!(self.core, TasksAlways) {
            return None;
        }
        let id = Self::response_id(p)?;
        let entry = self.core.calls.get(id)?;
        if entry.phase.answered()
            || entry.kind.caller().is_none()
            || entry.frame.head.method.as_deref() != Some("tools/call")
        {
            return None;
        }
        let body = p.body.as_ref().ok()?;
        // A plain result's text is not read into a tree for this question (the caller reads
        // it into its own type); a task's names itself.
        if !body.may_hold("\"task") {
            return None;
        }
        let result = body.value();
        let era = self.era();
        if era == Era::Modern && protocol::result_type(result).as_deref() != Some("task") {
            return None;
        }
        task_wire::fields(result, era, true).map(|_| id)
    }

    fn is_task_running(&self, p: &Response) -> Option<CallId> {
        let (call, task, answer) = self.task_answer(p)?;
        match answer {
            TaskAnswer::Update(Ok(_)) => Some(call),
            TaskAnswer::Get(Ok(result)) => {
                let fields = task_wire::fields(result, task.era, false)?;
                let running = match fields.state? {
                    TaskState::Working => true,
                    TaskState::InputRequired => {
                        task.era == Era::Modern && self.new_inputs(task, result).is_empty()
                    }
                    TaskState::Completed | TaskState::Failed | TaskState::Cancelled => false,
                };
                running.then_some(call)
            }
            TaskAnswer::Get(Err(_)) | TaskAnswer::Update(Err(_)) | TaskAnswer::Result => None,
        }
    }

    fn is_task_input(&self, p: &Response) -> Option<InputRound> {
        let (_, task, result) = self.modern_input_required(p)?;
        let inputs = self.new_inputs(task, result);
        if inputs.is_empty() || self.task_input_refusal(task, &inputs).is_some() {
            return None;
        }
        Some(InputRound {
            request: Self::response_id(p)?,
            inputs,
            state: None,
        })
    }

    fn is_task_input_refused(&self, p: &Response) -> Option<CallId> {
        let (call, task, result) = self.modern_input_required(p)?;
        let inputs = self.new_inputs(task, result);
        self.task_input_refusal(task, &inputs).map(|_| call)
    }

    fn is_task_fetch_due(&self, p: &Response) -> Option<CallId> {
        let (call, task, answer) = self.task_answer(p)?;
        let TaskAnswer::Get(Ok(result)) = answer else {
            return None;
        };
        let state = task_wire::fields(result, task.era, false)?.state?;
        (task.era == Era::Legacy
            && matches!(
                state,
                TaskState::InputRequired | TaskState::Completed | TaskState::Failed
            ))
        .then_some(call)
    }

    fn is_task_finished(&self, p: &Response) -> Option<CallId> {
        let (call, task, answer) = self.task_answer(p)?;
        match answer {
            // The outcome of a 2025-11-25 task is exactly what the call would have answered:
            // a result, or a JSON-RPC error.
            TaskAnswer::Result => {
                matches!(p.body, Ok(_) | Err(ResponseError::Rpc(_))).then_some(call)
            }
            TaskAnswer::Get(Ok(result)) if task.era == Era::Modern => {
                let state = task_wire::fields(result, task.era, false)?.state?;
                let done = match state {
                    TaskState::Completed => result.get("result").is_some_and(Value::is_object),
                    TaskState::Failed => modern_task_error(result).is_some(),
                    TaskState::Working | TaskState::InputRequired | TaskState::Cancelled => false,
                };
                done.then_some(call)
            }
            TaskAnswer::Get(_) | TaskAnswer::Update(_) => None,
        }
    }

    fn is_task_cancelled(&self, p: &Response) -> Option<CallId> {
        let (call, task, answer) = self.task_answer(p)?;
        let TaskAnswer::Get(Ok(result)) = answer else {
            return None;
        };
        (task_wire::fields(result, task.era, false)?.state? == TaskState::Cancelled).then_some(call)
    }

    fn is_task_lost(&self, p: &Response) -> Option<CallId> {
        let (call, _, answer) = self.task_answer(p)?;
        match answer {
            TaskAnswer::Get(Err(ResponseError::Rpc(e)))
            | TaskAnswer::Update(Err(ResponseError::Rpc(e)))
                if e.code == codes::INVALID_PARAMS =>
            {
                Some(call)
            }
            _ => None,
        }
    }

    fn can_retry_task_answer(&self, p: &Response) -> Option<CallId> {
        let (call, task, _) = self.task_answer(p)?;
        self.has_failures_left(task).then_some(call)
    }

    fn is_task_answer(&self, p: &Response) -> Option<CallId> {
        self.task_answer(p).map(|(call, _, _)| call)
    }

    fn can_retry_task_timeout(&self, p: &RequestId) -> Option<CallId> {
        let call = self.task_of_request(*p)?;
        self.has_failures_left(self.core.tasks.get(call)?)
            .then_some(call)
    }

    fn is_task_timeout(&self, p: &RequestId) -> Option<CallId> {
        self.task_of_request(*p)
    }

    fn is_task_cancel_timeout(&self, p: &RequestId) -> Option<RequestId> {
        self.core
            .calls
            .get(*p)
            .is_some_and(|e| e.kind == RequestKind::TaskCancel)
            .then_some(*p)
    }

    fn can_retry_task_send(&self, p: &SendToken) -> Option<CallId> {
        if self.core.tasks.is_empty() {
            return None;
        }
        let call = self.task_of_request(self.pending_send(p)?.id)?;
        self.has_failures_left(self.core.tasks.get(call)?)
            .then_some(call)
    }

    fn is_task_send_end(&self, p: &SendToken) -> Option<CallId> {
        if self.core.tasks.is_empty() {
            return None;
        }
        self.task_of_request(self.pending_send(p)?.id)
    }

    fn is_live_task(&self, p: &CallId) -> Option<CallId> {
        self.core
            .tasks
            .get(*p)
            .is_some_and(|t| t.phase != TaskPhase::Cancelling)
            .then_some(*p)
    }

    fn is_task_waiting(&self, p: &CallId) -> Option<CallId> {
        self.core
            .tasks
            .get(*p)
            .is_some_and(|t| t.phase == TaskPhase::Waiting)
            .then_some(*p)
    }

    fn is_task_input_failure(&self, p: &InputReply) -> Option<CallId> {
        let call = self.awaited_task_input(p)?;
        p.outcome.is_err().then_some(call)
    }

    fn completes_task_input(&self, p: &InputReply) -> Option<CallId> {
        let call = self.awaited_task_input(p)?;
        let TaskPhase::Input { awaiting, .. } = &self.core.tasks.get(call)?.phase else {
            return None;
        };
        let others_given = awaiting.iter().all(|(k, v)| *k == p.key || v.is_some());
        (p.outcome.is_ok() && others_given).then_some(call)
    }

    fn is_task_input_reply(&self, p: &InputReply) -> Option<CallId> {
        let call = self.awaited_task_input(p)?;
        p.outcome.is_ok().then_some(call)
    }

    fn start_task(&mut self, p: Response, w: RequestId) {
        let Some(entry) = self.core.calls.remove(w) else {
            return;
        };
        self.cancel_call_timers(w);
        self.tombstone(w);
        let Some(call) = entry.kind.caller() else {
            return;
        };
        let era = self.era();
        let Ok(body) = p.body else {
            return;
        };
        let Some(fields) = task_wire::fields(body.value(), era, true) else {
            return;
        };
        let interval = task_wire::interval(&self.core.config, fields.interval_ms, None);
        let task = TaskRun {
            id: fields.id.to_owned(),
            era,
            phase: TaskPhase::Waiting,
            state: fields.state.unwrap_or(TaskState::Working),
            message: fields.message.map(str::to_owned),
            interval,
            failures: 0,
            last_failure: None,
            answered: BTreeSet::new(),
            updating: BTreeSet::new(),
            started: entry.started,
            told: false,
        };
        self.tell_status(call, &task);
        self.core.tasks.insert(call, task);
        self.arm_task_poll(call, interval);
        if let Some(bound) = entry.task_timeout
            && !mutant!(self.core, NoTaskDeadline)
        {
            let at = later(entry.started, bound);
            self.core
                .timers
                .arm(TimerKey::keyed(TimerKind::TaskDeadline, call.0), at);
        }
    }

    fn schedule_task_poll(&mut self, p: Response, w: CallId) {
        self.forget_task_request(w, false);
        let Some(task) = self.core.tasks.get_mut(w) else {
            return;
        };
        task.failures = 0;
        task.last_failure = None;
        let updating = std::mem::take(&mut task.updating);
        let is_update =
            matches!(&p.body, Ok(b) if task_wire::fields(b.value(), task.era, false).is_none());
        if is_update {
            task.answered.extend(updating);
        }
        let changed = match &p.body {
            Ok(body) => self.note_fields(w, body.value()),
            Err(_) => false,
        };
        let Some(task) = self.core.tasks.get_mut(w) else {
            return;
        };
        task.phase = TaskPhase::Waiting;
        let interval = task.interval;
        if changed {
            let task = task.clone();
            self.tell_status(w, &task);
        }
        let interval = if mutant!(self.core, PollAtOnce) {
            Duration::ZERO
        } else {
            interval
        };
        self.arm_task_poll(w, interval);
    }

    fn start_task_input(&mut self, p: &Response, w: InputRound) {
        let Some(call) = self.task_of_request(w.request) else {
            return;
        };
        self.forget_task_request(call, false);
        let changed = match &p.body {
            Ok(body) => self.note_fields(call, body.value()),
            Err(_) => false,
        };
        let Some(task) = self.core.tasks.get_mut(call) else {
            return;
        };
        task.failures = 0;
        task.phase = TaskPhase::Input {
            poll: w.request,
            awaiting: w.inputs.iter().map(|(k, _, _)| (k.clone(), None)).collect(),
        };
        if changed {
            let task = task.clone();
            self.tell_status(call, &task);
        }
        self.hand_inputs(w.request, w.inputs);
    }

    fn fail_task_input_refused(&mut self, p: &Response, w: &CallId) {
        let reason = match (&p.body, self.core.tasks.get(*w)) {
            (Ok(body), Some(task)) => {
                let inputs = self.new_inputs(task, body.value());
                self.task_input_refusal(task, &inputs)
            }
            _ => None,
        }
        .unwrap_or_else(|| "it asks for input the client cannot give".to_owned());
        self.end_task_wait(*w, Err(CallError::InputRequired { reason }));
    }

    fn fetch_task_result(&mut self, p: &Response, w: CallId) {
        self.forget_task_request(w, false);
        let changed = match &p.body {
            Ok(body) => self.note_fields(w, body.value()),
            Err(_) => false,
        };
        if changed && let Some(task) = self.core.tasks.get(w).cloned() {
            self.tell_status(w, &task);
        }
        self.send_task_request(w, "tasks/result", None);
    }

    fn finish_task(&mut self, p: Response, w: CallId) {
        let request = self.forget_task_request(w, true);
        let Some(mut task) = self.core.tasks.remove(w) else {
            return;
        };
        self.cancel_task_timers(w);
        self.core.authorizations = 0;
        // The caller is told the final status once, before the answer.
        let last = match (&p.body, task.era) {
            (Ok(body), Era::Modern) => task_state(body.value()).unwrap_or(TaskState::Completed),
            (Ok(body), Era::Legacy) => match body.value().get("isError") {
                Some(Value::Bool(true)) => TaskState::Failed,
                _ => TaskState::Completed,
            },
            (Err(_), _) => TaskState::Failed,
        };
        if last != task.state {
            task.state = last;
            self.tell_status(w, &task);
        }
        let outcome = match (task.era, p.body) {
            (Era::Modern, Ok(body)) => {
                let mut value = body.value().clone();
                match value.get_mut("result").map(Value::take) {
                    Some(result) if task_state(&value) == Some(TaskState::Completed) => {
                        Ok(Payload::from_value(result))
                    }
                    _ => Err(CallError::Server(modern_task_error(&value).unwrap_or(
                        RpcError {
                            code: codes::INTERNAL_ERROR,
                            message: "the task failed".into(),
                            data: None,
                        },
                    ))),
                }
            }
            (Era::Legacy, Ok(body)) => Ok(body),
            (_, Err(ResponseError::Rpc(e))) => Err(CallError::Server(e)),
            (_, Err(ResponseError::Invalid { reason })) => {
                Err(CallError::InvalidResponse { reason })
            }
        };
        self.reply(w, request, outcome);
    }

    fn fail_task_cancelled(&mut self, w: CallId) {
        let request = self.forget_task_request(w, true);
        if let Some(task) = self.core.tasks.remove(w) {
            self.cancel_task_timers(w);
            self.reply(
                w,
                request,
                Err(CallError::TaskCancelled { task_id: task.id }),
            );
        }
    }

    fn fail_task_lost(&mut self, p: Response, w: CallId) {
        let request = self.forget_task_request(w, true);
        if let Some(task) = self.core.tasks.remove(w) {
            self.cancel_task_timers(w);
            let reason = match p.body {
                Err(ResponseError::Rpc(e)) => e.message,
                _ => "the server does not know the task".into(),
            };
            let task_id = task.id;
            self.reply(w, request, Err(CallError::TaskLost { task_id, reason }));
        }
    }

    fn retry_task_later(&mut self, w: CallId) {
        let why = self.failed_exchange(w);
        self.forget_task_request(w, true);
        let Some(task) = self.core.tasks.get_mut(w) else {
            return;
        };
        task.failures = task.failures.saturating_add(1);
        task.last_failure = Some(why);
        task.updating.clear();
        task.phase = TaskPhase::Waiting;
        let interval = task.interval;
        self.arm_task_poll(w, interval);
    }

    fn fail_task_unreachable(&mut self, w: CallId) {
        let why = self.failed_exchange(w);
        let request = self.forget_task_request(w, true);
        if let Some(task) = self.core.tasks.remove(w) {
            self.cancel_task_timers(w);
            let error = CallError::TaskUnreachable {
                task_id: task.id,
                failures: task.failures.saturating_add(1),
                last: why,
            };
            self.reply(w, request, Err(error));
        }
    }

    fn forget_task_cancel(&mut self, w: RequestId) {
        if self.core.calls.remove(w).is_some() {
            self.cancel_call_timers(w);
            self.tombstone(w);
        }
    }

    fn answer_task_cancelled(&mut self, w: &CallId) {
        self.end_task_wait(*w, Err(CallError::Cancelled));
    }

    fn answer_task_timeout(&mut self, w: &CallId) {
        let started = self.core.tasks.get(*w).map_or(self.core.now, |t| t.started);
        let after = self.core.now.saturating_sub(started);
        self.end_task_wait(*w, Err(CallError::Timeout { after }));
    }

    fn send_task_cancel(&mut self, w: CallId) {
        let Some(task) = self.core.tasks.remove(w) else {
            return;
        };
        self.cancel_task_timers(w);
        self.send_cancel_of(&task);
        if mutant!(self.core, CancelTwice) {
            self.send_cancel_of(&task);
        }
    }

    fn poll_task(&mut self, w: CallId) {
        if mutant!(self.core, NoPoll) {
            return;
        }
        self.send_task_request(w, "tasks/get", None);
    }

    fn defer_task_poll(&mut self, w: CallId) {
        if let Some(task) = self.core.tasks.get_mut(w) {
            task.phase = TaskPhase::Due;
        }
    }

    fn record_task_input(&mut self, p: InputReply, w: &CallId) {
        let Ok(value) = p.outcome else {
            return;
        };
        if let Some(task) = self.core.tasks.get_mut(*w)
            && let TaskPhase::Input { awaiting, .. } = &mut task.phase
            && let Some(slot) = awaiting.get_mut(&p.key)
        {
            *slot = Some(value.to_string());
        }
    }

    fn send_task_update(&mut self, w: CallId) {
        let Some(task) = self.core.tasks.get_mut(w) else {
            return;
        };
        let TaskPhase::Input { awaiting, .. } = &task.phase else {
            return;
        };
        let mut responses = serde_json::Map::new();
        for (key, given) in awaiting {
            let value = given
                .as_deref()
                .and_then(|text| serde_json::from_str(text).ok())
                .unwrap_or(Value::Null);
            responses.insert(key.clone(), value);
        }
        task.updating = responses.keys().cloned().collect();
        let extra = json!({ "inputResponses": responses });
        self.send_task_request(w, "tasks/update", Some(extra));
    }

    fn fail_task_input(&mut self, p: InputReply, w: &CallId) {
        let Err(error) = p.outcome else {
            return;
        };
        let key = p.key;
        self.end_task_wait(*w, Err(CallError::InputFailed { key, error }));
    }

    fn resume_task(&mut self, p: TaskResume) {
        let era = self.era();
        let interval = task_wire::interval(&self.core.config, None, None);
        let task = TaskRun {
            id: p.task_id,
            era,
            phase: TaskPhase::Due,
            state: TaskState::Working,
            message: None,
            interval,
            failures: 0,
            last_failure: None,
            answered: BTreeSet::new(),
            updating: BTreeSet::new(),
            started: self.core.now,
            told: false,
        };
        self.core.tasks.insert(p.call, task);
        if let Some(bound) = p.options.task_timeout {
            let at = later(self.core.now, bound);
            self.core
                .timers
                .arm(TimerKey::keyed(TimerKind::TaskDeadline, p.call.0), at);
        }
        self.poll_task(p.call);
    }

    fn reject_resume_unavailable(&mut self, p: &TaskResume) {
        let error = self.unavailable();
        self.reply(p.call, None, Err(error));
    }

    fn reject_resume_shutdown(&mut self, p: &TaskResume) {
        self.reply(p.call, None, Err(CallError::Shutdown));
    }

    fn keep_tasks(&mut self) {
        if mutant!(self.core, DropTasksOnLoss) {
            return;
        }
        for call in self.core.tasks.calls() {
            let Some(task) = self.core.tasks.get(call) else {
                continue;
            };
            // A task waiting for its poll keeps waiting (its timer runs on); one whose request
            // or input round the connection took waits its interval again from now.
            let lost = matches!(task.phase, TaskPhase::InFlight(_) | TaskPhase::Input { .. });
            if !lost {
                continue;
            }
            self.forget_task_request(call, true);
            let Some(task) = self.core.tasks.get_mut(call) else {
                continue;
            };
            task.updating.clear();
            task.phase = TaskPhase::Waiting;
            let interval = task.interval;
            self.arm_task_poll(call, interval);
        }
    }

    fn resume_tasks(&mut self) {
        let era = self.era();
        for call in self.core.tasks.calls() {
            let Some(task) = self.core.tasks.get(call) else {
                continue;
            };
            match (&task.phase, task.era == era) {
                (TaskPhase::Cancelling, true) => self.send_task_cancel(call),
                (TaskPhase::Cancelling, false) => {
                    self.core.tasks.remove(call);
                }
                (
                    TaskPhase::Waiting
                    | TaskPhase::InFlight(_)
                    | TaskPhase::Due
                    | TaskPhase::Input { .. },
                    false,
                ) => {
                    let task_id = task.id.clone();
                    self.core.tasks.remove(call);
                    self.cancel_task_timers(call);
                    let reason =
                        "it was created in the other era than the server speaks now".to_owned();
                    self.reply(call, None, Err(CallError::TaskLost { task_id, reason }));
                }
                (TaskPhase::Due, true) => self.poll_task(call),
                // A poll in flight or armed, or inputs with the handler: they go on as they
                // are on the new connection.
                (TaskPhase::Waiting | TaskPhase::InFlight(_) | TaskPhase::Input { .. }, true) => {}
            }
        }
    }

    fn fail_tasks_shutdown(&mut self) {
        for call in self.core.tasks.calls() {
            let request = self.forget_task_request(call, true);
            self.cancel_task_timers(call);
            if let Some(task) = self.core.tasks.remove(call)
                && task.phase != TaskPhase::Cancelling
            {
                self.reply(call, request, Err(CallError::Shutdown));
            }
        }
    }
}

impl Ctx<'_> {
    /// The era requests are written in now (the verdict's; legacy before one).
    fn era(&self) -> Era {
        if self.modern_version().is_some() {
            Era::Modern
        } else {
            Era::Legacy
        }
    }

    /// The caller of the task whose request `id` is.
    fn task_of_request(&self, id: RequestId) -> Option<CallId> {
        // Without a task there is no task's request: a plain call's answer pays one branch.
        if self.core.tasks.is_empty() {
            return None;
        }
        self.core.calls.get(id)?.kind.task()
    }

    /// A response to a task's request: its caller, the task, and what it answers.
    fn task_answer<'p>(&self, p: &'p Response) -> Option<(CallId, &TaskRun, TaskAnswer<'p>)> {
        if self.core.tasks.is_empty() {
            return None;
        }
        let id = Self::response_id(p)?;
        let entry = self.core.calls.get(id)?;
        let call = entry.kind.task()?;
        let task = self.core.tasks.get(call)?;
        let body = p.body.as_ref().map(|b| b.value());
        let answer = match entry.frame.head.method.as_deref() {
            Some("tasks/result") => TaskAnswer::Result,
            Some("tasks/update") => TaskAnswer::Update(body),
            _ => TaskAnswer::Get(body),
        };
        Some((call, task, answer))
    }

    /// A 2026-07-28 `tasks/get` answer saying `input_required`.
    fn modern_input_required<'p>(&self, p: &'p Response) -> Option<(CallId, &TaskRun, &'p Value)> {
        let (call, task, answer) = self.task_answer(p)?;
        let TaskAnswer::Get(Ok(result)) = answer else {
            return None;
        };
        (task.era == Era::Modern
            && task_wire::fields(result, task.era, false)?.state? == TaskState::InputRequired)
            .then_some((call, task, result))
    }

    /// The input requests of a `tasks/get` answer not answered (nor being answered) for the
    /// task yet: key, method, params. A request without a method names the empty method
    /// (refused as undeclared).
    fn new_inputs(&self, task: &TaskRun, result: &Value) -> Vec<(String, String, Value)> {
        let Some(Value::Object(requests)) = result.get("inputRequests") else {
            return Vec::new();
        };
        requests
            .iter()
            .filter(|(key, _)| {
                mutant!(self.core, NoInputDedupe)
                    || !(task.answered.contains(*key) || task.updating.contains(*key))
            })
            .map(|(key, request)| {
                let method = request.get("method").and_then(Value::as_str).unwrap_or("");
                let params = request.get("params").cloned().unwrap_or(Value::Null);
                (key.clone(), method.to_owned(), params)
            })
            .collect()
    }

    /// Why a task's new inputs cannot be given, if they cannot.
    fn task_input_refusal(
        &self,
        task: &TaskRun,
        inputs: &[(String, String, Value)],
    ) -> Option<String> {
        let caps = &self.core.config.capabilities;
        for (key, method, params) in inputs {
            if !caps.handles(method, Some(params)) {
                return Some(format!(
                    "task input {key:?} asks for {method:?}, which this client did not declare"
                ));
            }
        }
        let most = self.core.config.max_task_inputs;
        let total = task.answered.len() + inputs.len();
        (total > most).then(|| format!("the task asks for {total} inputs (at most {most})"))
    }

    /// The task awaiting the input `p` gives (its key not given yet).
    fn awaited_task_input(&self, p: &InputReply) -> Option<CallId> {
        let call = self.core.tasks.by_input_poll(p.request)?;
        let TaskPhase::Input { awaiting, .. } = &self.core.tasks.get(call)?.phase else {
            return None;
        };
        matches!(awaiting.get(&p.key), Some(None)).then_some(call)
    }

    fn has_failures_left(&self, task: &TaskRun) -> bool {
        task.failures.saturating_add(1) < self.core.config.max_task_failures
    }

    /// Forgets the task's request in flight, if any (removed, its timers cancelled, and, when
    /// `tombstone`, its id tombstoned: a late answer is known as late); returns its id. Never
    /// `notifications/cancelled`: a task is cancelled with `tasks/cancel` or not at all.
    fn forget_task_request(&mut self, call: CallId, tombstone: bool) -> Option<RequestId> {
        let task = self.core.tasks.get_mut(call)?;
        let id = match std::mem::replace(&mut task.phase, TaskPhase::Due) {
            TaskPhase::InFlight(id) => id,
            TaskPhase::Input { poll, .. } => {
                self.abort_inputs(poll);
                return None;
            }
            other => {
                task.phase = other;
                return None;
            }
        };
        if self.core.calls.remove(id).is_some() {
            self.cancel_call_timers(id);
            if tombstone {
                self.tombstone(id);
            }
        }
        Some(id)
    }

    fn cancel_task_timers(&mut self, call: CallId) {
        let timers = &mut self.core.timers;
        timers.cancel(TimerKey::keyed(TimerKind::TaskPoll, call.0));
        timers.cancel(TimerKey::keyed(TimerKind::TaskDeadline, call.0));
    }

    fn arm_task_poll(&mut self, call: CallId, after: Duration) {
        let at = later(self.core.now, after);
        self.core
            .timers
            .arm(TimerKey::keyed(TimerKind::TaskPoll, call.0), at);
    }

    /// Answers the caller of a task it stops waiting for (cancelled, timed out, its input
    /// failed): its request, timers and input requests forgotten; the task kept only to
    /// cancel it on the server.
    fn end_task_wait(&mut self, call: CallId, outcome: Result<Payload, CallError>) {
        let request = self.forget_task_request(call, true);
        self.cancel_task_timers(call);
        if let Some(task) = self.core.tasks.get_mut(call) {
            task.phase = TaskPhase::Cancelling;
            self.reply(call, request, outcome);
        }
    }

    /// Sends one of a task's requests (`tasks/get`, `tasks/result`, `tasks/update`) with
    /// `taskId` and the `extra` params, and marks it in flight.
    fn send_task_request(&mut self, call: CallId, method: &str, extra: Option<Value>) {
        let Some(task) = self.core.tasks.get(call) else {
            return;
        };
        let mut params = json!({ "taskId": task.id });
        if let (Some(Value::Object(extra)), Value::Object(obj)) = (extra, &mut params) {
            obj.extend(extra);
        }
        let id = self.issue(
            RequestKind::Task(call),
            method,
            Some(params),
            CallOptions::default(),
            None,
        );
        if let Some(task) = self.core.tasks.get_mut(call) {
            task.phase = TaskPhase::InFlight(id);
        }
    }

    fn send_cancel_of(&mut self, task: &TaskRun) {
        let params = json!({ "taskId": task.id });
        self.issue(
            RequestKind::TaskCancel,
            "tasks/cancel",
            Some(params),
            CallOptions::default(),
            None,
        );
    }

    /// Reads a task's status fields from an answer into it; whether the status or its
    /// message changed.
    fn note_fields(&mut self, call: CallId, result: &Value) -> bool {
        let config = Arc::clone(&self.core.config);
        let Some(task) = self.core.tasks.get_mut(call) else {
            return false;
        };
        let Some(TaskFields {
            state,
            message,
            interval_ms,
            ..
        }) = task_wire::fields(result, task.era, false)
        else {
            return false;
        };
        task.interval = task_wire::interval(&config, interval_ms, Some(task.interval));
        let state = state.unwrap_or(task.state);
        let message = message.map(str::to_owned);
        let changed = state != task.state || message != task.message || !task.told;
        task.state = state;
        task.message = message;
        changed
    }

    fn tell_status(&mut self, call: CallId, task: &TaskRun) {
        if let Some(t) = self.core.tasks.get_mut(call) {
            t.told = true;
        }
        let status = TaskStatus {
            task_id: task.id.clone(),
            state: task.state,
            message: task.message.clone(),
            poll_interval: task.interval,
        };
        self.push(Action::TaskStatus { call, status });
    }

    /// What the task's failing exchange was, in words.
    fn failed_exchange(&self, call: CallId) -> String {
        let Some(TaskPhase::InFlight(id)) = self.core.tasks.get(call).map(|t| &t.phase) else {
            return "its exchange failed".into();
        };
        let method = self
            .core
            .calls
            .get(*id)
            .and_then(|e| e.frame.head.method.clone())
            .unwrap_or_else(|| "tasks/get".into());
        match self.core.calls.get(*id).map(|e| e.phase) {
            Some(Phase::Sending { .. } | Phase::Retrying { .. }) => {
                format!("{method} could not be sent")
            }
            Some(_)
                if self
                    .core
                    .timers
                    .deadline(TimerKey::keyed(TimerKind::RequestTimeout, *id))
                    .is_some_and(|at| at <= self.core.now) =>
            {
                format!("{method} was not answered in time")
            }
            _ => format!("{method} was answered with an error or a status the client cannot read"),
        }
    }
}

/// The status word of a task object.
fn task_state(task: &Value) -> Option<TaskState> {
    task.get("status")
        .and_then(Value::as_str)
        .and_then(TaskState::parse)
}

/// The JSON-RPC error a failed 2026-07-28 task carries.
fn modern_task_error(result: &Value) -> Option<RpcError> {
    let e = result.get("error")?;
    Some(RpcError {
        code: e.get("code")?.as_i64()?,
        message: e.get("message")?.as_str()?.to_owned(),
        data: e.get("data").cloned(),
    })
}
