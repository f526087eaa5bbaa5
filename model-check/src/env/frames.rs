//! The server's frames: what the simulated server may send ([`ServerFrame`]), what each kind
//! of frame is (the predicates the environment, the ghost and the properties ask of a frame:
//! one exhaustive `match` each, here, so that a new kind is one edit per predicate, and the
//! compiler names every predicate that must decide about it), and its JSON text.

use std::cell::RefCell;
use std::collections::HashMap;

use mcp_machine::RequestId;
use serde_json::json;

use super::URI;
use crate::world::Junk;

/// The id of the sampling request, shared by the frames that may collide with it: a ping, a
/// URL elicitation and the same request again (a duplicate while it is being handled).
pub const SAMPLING_ID: i64 = 7;
/// The id of the other sampling request.
pub const OTHER_SAMPLING_ID: i64 = 17;
/// The id of the undeclared `roots/list` request.
pub const UNDECLARED_ID: i64 = 8;
/// The `_meta` key of a listen's tag.
const SUBSCRIPTION_ID: &str = mcp_machine::META_SUBSCRIPTION_ID;

/// A frame the simulated server may send.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ServerFrame {
    /// A good `initialize` result.
    InitOk(RequestId),
    /// An `initialize` result with a version the client does not speak.
    InitBadVersion(RequestId),
    /// An error answering `initialize`.
    InitError(RequestId),
    /// A result for a call's request (first answer, or a duplicate, or late).
    Answer(RequestId),
    /// A response with an id never issued.
    Unknown,
    /// Not JSON.
    Malformed,
    /// Over the frame limit.
    Oversized,
    /// A server `ping` request.
    Ping,
    /// A `sampling/createMessage` request (a declared capability).
    Sampling,
    /// A `roots/list` request (not declared).
    Undeclared,
    /// The sampling request again, with the same id, while the first is being handled.
    SamplingAgain,
    /// An elicitation in URL mode (only form mode is declared).
    ElicitUrl,
    /// `notifications/cancelled` for the sampling request.
    ServerCancel,
    /// Another sampling request, with its own id (the model's handler cap is one).
    SamplingOther,
    /// A logging notification.
    Log,
    /// Progress for a call.
    Progress(RequestId),
    /// A DiscoverResult naming the modern version (and `serverInfo`).
    DiscoverOk(RequestId),
    /// -32022 naming the modern version as supported (the request-metadata scenario's trick:
    /// even when that version was asked for).
    DiscoverVersion(RequestId),
    /// A legacy server's answer to an unknown method (-32601).
    ProbeError(RequestId),
    /// A result to `server/discover` that is not a DiscoverResult (`{}`).
    DiscoverGarbage(RequestId),
    /// A modern server's refusal of `initialize` (-32022 naming the modern version).
    InitModernRefusal(RequestId),
    /// A modern result of a type the client does not know (`resultType: task`).
    AnswerBadType(RequestId),
    /// `input_required` asking for one sampling input (key `q`), with a `requestState`
    /// naming the id it answers.
    InputRequired(RequestId),
    /// `input_required` asking for two sampling inputs (keys `q` and `r`), without a
    /// `requestState`.
    InputRequiredNoState(RequestId),
    /// `input_required` with a `requestState` only (nothing to ask).
    InputRequiredStateOnly(RequestId),
    /// The HTTP transport's answer for a modern request whose response stream broke
    /// (STREAM_LOST): the request is lost.
    CallLost(RequestId),
    /// -32022 naming the modern version, answering a call.
    CallVersionRefused(RequestId),
    /// -32020 (the call's headers did not match), answering a call.
    HeaderMismatch(RequestId),
    /// The acknowledgement of a listen: honoring all it asks for (`true`: list changes and
    /// the resource) or only the list changes (`false`).
    ListenAck(RequestId, bool),
    /// `notifications/resources/updated` tagged with a listen's id.
    ListenNote(RequestId),
    /// A list change tagged with an id no listen ever had.
    ListenStray,
    /// The server ends a listen with a response.
    ListenEnd(RequestId, ListenEndKind),
    /// The server ends a listen with `notifications/cancelled` (stdio).
    ListenCancel(RequestId),
    /// The HTTP transport's AUTH_REQUIRED answering a request: the server answered it 401
    /// (the client can authorize).
    AuthRequired(RequestId),
    /// The task server: creating a task answering a caller's `tools/call` (`id` is `task`),
    /// or answering one of a task's requests (`id`), in the 2026-07-28 shapes (`modern`) or
    /// the 2025-11-25 ones.
    Task {
        /// The request answered.
        id: RequestId,
        /// The task's number (its id on the wire is `t<task>`): the `tools/call` it answered.
        task: RequestId,
        /// What it says.
        reply: TaskReply,
        /// The 2026-07-28 shapes.
        modern: bool,
    },
}

/// What the task server says (see [`ServerFrame::Task`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TaskReply {
    /// A `tools/call` answered with a new task (`working`, a poll interval of 0).
    Created,
    /// `tasks/get`: `working`, a poll interval of 3 s.
    Working,
    /// `tasks/get`: `input_required` (2026-07-28: asking for two sampling inputs, `q` and
    /// `r`).
    InputRequired,
    /// `tasks/get` (2026-07-28): `input_required` asking for `roots/list`, which the client
    /// did not declare.
    InputRefused,
    /// `tasks/get`: `completed` (2026-07-28: with its `result`).
    Completed,
    /// `tasks/get`: `failed` (2026-07-28: with its `error`).
    Failed,
    /// `tasks/get`: `cancelled`.
    Cancelled,
    /// -32602: the server does not know the task.
    Lost,
    /// -32603: another error.
    Error,
    /// The acknowledgement of `tasks/update` or `tasks/cancel`.
    Ack,
    /// `tasks/result` (2025-11-25): the call's result.
    Outcome,
    /// `tasks/result` (2025-11-25): the call's error.
    OutcomeError,
}

impl TaskReply {
    /// The answers a task server may give to a task's request of kind `req`, in an era.
    pub fn answers(req: crate::world::TaskReq, modern: bool) -> &'static [TaskReply] {
        use crate::world::TaskReq;
        use TaskReply::*;
        match (req, modern) {
            (TaskReq::Get, false) => &[Working, InputRequired, Completed, Cancelled, Error],
            (TaskReq::Get, true) => &[
                Working,
                InputRequired,
                InputRefused,
                Completed,
                Failed,
                Lost,
                Error,
            ],
            (TaskReq::Result, _) => &[Outcome, OutcomeError],
            (TaskReq::Update, _) => &[Ack, Error],
        }
    }
}

/// How the server ends a listen with a response.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ListenEndKind {
    /// Its `complete` result (the graceful end).
    Complete,
    /// STREAM_LOST: its stream broke.
    Lost,
    /// -32601: the server serves no listen.
    Refused,
    /// -32603: any other error.
    Error,
}

impl ListenEndKind {
    /// Every kind, in order.
    pub const ALL: [ListenEndKind; 4] = [
        ListenEndKind::Complete,
        ListenEndKind::Lost,
        ListenEndKind::Refused,
        ListenEndKind::Error,
    ];
}

impl ServerFrame {
    /// The id of our request the frame answers, if it is a response to one.
    pub fn answered_id(self) -> Option<RequestId> {
        match self {
            ServerFrame::InitOk(id)
            | ServerFrame::InitBadVersion(id)
            | ServerFrame::InitError(id)
            | ServerFrame::Answer(id)
            | ServerFrame::DiscoverOk(id)
            | ServerFrame::DiscoverVersion(id)
            | ServerFrame::ProbeError(id)
            | ServerFrame::DiscoverGarbage(id)
            | ServerFrame::InitModernRefusal(id)
            | ServerFrame::AnswerBadType(id)
            | ServerFrame::InputRequired(id)
            | ServerFrame::InputRequiredNoState(id)
            | ServerFrame::InputRequiredStateOnly(id)
            | ServerFrame::CallLost(id)
            | ServerFrame::CallVersionRefused(id)
            | ServerFrame::HeaderMismatch(id)
            | ServerFrame::AuthRequired(id)
            | ServerFrame::Task { id, .. }
            | ServerFrame::ListenEnd(id, _) => Some(id),
            ServerFrame::ListenAck(..)
            | ServerFrame::ListenNote(_)
            | ServerFrame::ListenStray
            | ServerFrame::ListenCancel(_)
            | ServerFrame::Unknown
            | ServerFrame::Malformed
            | ServerFrame::Oversized
            | ServerFrame::Ping
            | ServerFrame::Sampling
            | ServerFrame::Undeclared
            | ServerFrame::SamplingAgain
            | ServerFrame::ElicitUrl
            | ServerFrame::ServerCancel
            | ServerFrame::SamplingOther
            | ServerFrame::Log
            | ServerFrame::Progress(_) => None,
        }
    }

    /// The id of the server request the frame is, if it is one.
    pub fn server_request_id(self) -> Option<i64> {
        match self {
            ServerFrame::Ping
            | ServerFrame::Sampling
            | ServerFrame::SamplingAgain
            | ServerFrame::ElicitUrl => Some(SAMPLING_ID),
            ServerFrame::Undeclared => Some(UNDECLARED_ID),
            ServerFrame::SamplingOther => Some(OTHER_SAMPLING_ID),
            ServerFrame::InitOk(_)
            | ServerFrame::InitBadVersion(_)
            | ServerFrame::InitError(_)
            | ServerFrame::Answer(_)
            | ServerFrame::Unknown
            | ServerFrame::Malformed
            | ServerFrame::Oversized
            | ServerFrame::ServerCancel
            | ServerFrame::Log
            | ServerFrame::Progress(_)
            | ServerFrame::DiscoverOk(_)
            | ServerFrame::DiscoverVersion(_)
            | ServerFrame::ProbeError(_)
            | ServerFrame::DiscoverGarbage(_)
            | ServerFrame::InitModernRefusal(_)
            | ServerFrame::AnswerBadType(_)
            | ServerFrame::InputRequired(_)
            | ServerFrame::InputRequiredNoState(_)
            | ServerFrame::InputRequiredStateOnly(_)
            | ServerFrame::CallLost(_)
            | ServerFrame::CallVersionRefused(_)
            | ServerFrame::HeaderMismatch(_)
            | ServerFrame::ListenAck(..)
            | ServerFrame::ListenNote(_)
            | ServerFrame::ListenStray
            | ServerFrame::ListenEnd(..)
            | ServerFrame::ListenCancel(_)
            | ServerFrame::Task { .. }
            | ServerFrame::AuthRequired(_) => None,
        }
    }

    /// The one-shot kind of server traffic sending the frame uses up, if it is one (frames
    /// the environment may send any number of times, or that answer what the client asked
    /// for, use up none: their own bounds limit them).
    pub fn junk(self) -> Option<Junk> {
        match self {
            ServerFrame::InitBadVersion(_) => Some(Junk::InitBadVersion),
            ServerFrame::InitError(_) => Some(Junk::InitError),
            ServerFrame::Unknown => Some(Junk::Unknown),
            ServerFrame::Malformed => Some(Junk::Malformed),
            ServerFrame::Oversized => Some(Junk::Oversized),
            ServerFrame::Ping => Some(Junk::Ping),
            ServerFrame::Sampling => Some(Junk::Sampling),
            ServerFrame::SamplingAgain => Some(Junk::SamplingAgain),
            ServerFrame::ElicitUrl => Some(Junk::ElicitUrl),
            ServerFrame::Undeclared => Some(Junk::Undeclared),
            ServerFrame::Log => Some(Junk::Log),
            ServerFrame::Progress(_) => Some(Junk::Progress),
            ServerFrame::ServerCancel => Some(Junk::ServerCancel),
            ServerFrame::SamplingOther => Some(Junk::SamplingOther),
            ServerFrame::AnswerBadType(_) => Some(Junk::BadResultType),
            // Repeatable: their own bounds (round cap, reissue cap, once per call, the
            // authorization budget, the listen bounds) limit them.
            ServerFrame::InputRequired(_)
            | ServerFrame::InputRequiredNoState(_)
            | ServerFrame::InputRequiredStateOnly(_)
            | ServerFrame::CallLost(_)
            | ServerFrame::CallVersionRefused(_)
            | ServerFrame::HeaderMismatch(_)
            | ServerFrame::ListenAck(..)
            | ServerFrame::ListenNote(_)
            | ServerFrame::ListenStray
            | ServerFrame::ListenEnd(..)
            | ServerFrame::ListenCancel(_)
            | ServerFrame::AuthRequired(_) => None,
            // The task server's: the creations have their bound, the rest answer requests.
            ServerFrame::Task { .. } => None,
            // The answers the client asked for.
            ServerFrame::InitOk(_)
            | ServerFrame::Answer(_)
            | ServerFrame::DiscoverOk(_)
            | ServerFrame::DiscoverVersion(_)
            | ServerFrame::ProbeError(_)
            | ServerFrame::DiscoverGarbage(_)
            | ServerFrame::InitModernRefusal(_) => None,
        }
    }

    /// An `input_required` round answering request `id`: the `requestState` it carries
    /// (`None`: none), and how many inputs it asks for.
    pub fn input_round(self) -> Option<(RequestId, Option<String>, u8)> {
        match self {
            ServerFrame::InputRequired(id) => Some((id, Some(format!("s{id}")), 1)),
            ServerFrame::InputRequiredNoState(id) => Some((id, None, 2)),
            ServerFrame::InputRequiredStateOnly(id) => Some((id, Some(format!("s{id}")), 0)),
            _ => None,
        }
    }

    /// A modern request the frame says was lost without an answer (its response stream
    /// broke, or -32022 naming a version the client speaks): its id.
    pub fn loses_request(self) -> Option<RequestId> {
        match self {
            ServerFrame::CallLost(id) | ServerFrame::CallVersionRefused(id) => Some(id),
            _ => None,
        }
    }

    /// An answer to the probe that says the server is a modern one (a DiscoverResult, or
    /// -32022 naming a modern version): the probe's id.
    pub fn modern_probe_answer(self) -> Option<RequestId> {
        match self {
            ServerFrame::DiscoverOk(id) | ServerFrame::DiscoverVersion(id) => Some(id),
            _ => None,
        }
    }
}

/// The bytes of `f`, built once per thread and copied after: a frame is a pure function of
/// its [`ServerFrame`], and building its JSON tree and writing it out on every delivery was a
/// tenth of the checker's time in the larger configurations.
pub fn frame_bytes(f: ServerFrame) -> Vec<u8> {
    thread_local! {
        static BUILT: RefCell<HashMap<ServerFrame, Vec<u8>>> = RefCell::new(HashMap::new());
    }
    BUILT.with(|built| {
        built
            .borrow_mut()
            .entry(f)
            .or_insert_with(|| build_frame(f))
            .clone()
    })
}

/// A task server's frame (see [`ServerFrame::Task`]). Results name the `tools/call` they
/// answer in the end (`for`), so a caller can tell it got its own.
fn task_frame(id: RequestId, task: RequestId, reply: TaskReply, modern: bool) -> serde_json::Value {
    let tid = format!("t{task}");
    let sampling = json!({"method": "sampling/createMessage",
        "params": {"messages": [], "maxTokens": 1}});
    let status = |word: &str| {
        if modern {
            json!({"resultType": "complete", "taskId": tid, "status": word})
        } else {
            json!({"taskId": tid, "status": word})
        }
    };
    let error =
        |code: i64| json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": "no"}});
    let result = match reply {
        TaskReply::Created if modern => json!({"resultType": "task", "taskId": tid,
            "status": "working", "pollIntervalMs": 0, "for": task}),
        TaskReply::Created => json!({"task": {"taskId": tid, "status": "working",
            "pollInterval": 0}, "for": task}),
        TaskReply::Working => {
            let mut v = status("working");
            let key = if modern {
                "pollIntervalMs"
            } else {
                "pollInterval"
            };
            v[key] = json!(3000);
            v
        }
        TaskReply::InputRequired => {
            let mut v = status("input_required");
            if modern {
                v["inputRequests"] = json!({"q": sampling, "r": sampling});
            }
            v
        }
        TaskReply::InputRefused => {
            let mut v = status("input_required");
            v["inputRequests"] = json!({"x": {"method": "roots/list", "params": {}}});
            v
        }
        TaskReply::Completed => {
            let mut v = status("completed");
            if modern {
                v["result"] = json!({"content": [], "for": task});
            }
            v
        }
        TaskReply::Failed => {
            let mut v = status("failed");
            if modern {
                v["error"] = json!({"code": -32603, "message": "failed"});
            }
            v
        }
        TaskReply::Cancelled => status("cancelled"),
        TaskReply::Lost => return error(-32602),
        TaskReply::Error | TaskReply::OutcomeError => return error(-32603),
        TaskReply::Ack => json!({"resultType": "complete"}),
        TaskReply::Outcome => json!({"content": [], "for": task,
            "_meta": {"io.modelcontextprotocol/related-task": {"taskId": tid}}}),
    };
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

/// The JSON text of `f`.
pub fn build_frame(f: ServerFrame) -> Vec<u8> {
    let v = match f {
        ServerFrame::InitOk(id) => json!({"jsonrpc": "2.0", "id": id, "result": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "serverInfo": {"name": "model", "version": "0"}}}),
        ServerFrame::InitBadVersion(id) => json!({"jsonrpc": "2.0", "id": id, "result": {
            "protocolVersion": "1999-01-01", "capabilities": {}}}),
        ServerFrame::InitError(id) => {
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32603, "message": "no"}})
        }
        // The body names the request it answers, so a caller can tell it got its own.
        ServerFrame::Answer(id) => {
            json!({"jsonrpc": "2.0", "id": id, "result": {"content": [], "for": id}})
        }
        ServerFrame::Unknown => json!({"jsonrpc": "2.0", "id": 999, "result": {}}),
        ServerFrame::Malformed => return b"{not json".to_vec(),
        ServerFrame::Oversized => return Vec::new(),
        // The sampling request's id: while that is being handled, this is a duplicate.
        ServerFrame::Ping => json!({"jsonrpc": "2.0", "id": SAMPLING_ID, "method": "ping"}),
        ServerFrame::Sampling | ServerFrame::SamplingAgain => {
            json!({"jsonrpc": "2.0", "id": SAMPLING_ID,
            "method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 1}})
        }
        ServerFrame::Undeclared => {
            json!({"jsonrpc": "2.0", "id": UNDECLARED_ID, "method": "roots/list"})
        }
        ServerFrame::SamplingOther => {
            json!({"jsonrpc": "2.0", "id": OTHER_SAMPLING_ID,
            "method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 1}})
        }
        // The sampling request's id: while that is being handled, this is a duplicate.
        ServerFrame::ElicitUrl => {
            json!({"jsonrpc": "2.0", "id": SAMPLING_ID, "method": "elicitation/create",
            "params": {"mode": "url", "url": "https://example.invalid", "message": "m", "elicitationId": "e"}})
        }
        ServerFrame::ServerCancel => json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": SAMPLING_ID}}),
        ServerFrame::Log => json!({"jsonrpc": "2.0", "method": "notifications/message",
            "params": {"level": "info", "data": "x"}}),
        ServerFrame::Progress(id) => json!({"jsonrpc": "2.0", "method": "notifications/progress",
            "params": {"progressToken": id, "progress": 1}}),
        ServerFrame::DiscoverOk(id) => json!({"jsonrpc": "2.0", "id": id, "result": {
            "supportedVersions": ["2026-07-28"], "capabilities": {"tools": {"listChanged": true}},
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "model", "version": "0"}}}}),
        ServerFrame::DiscoverVersion(id) | ServerFrame::InitModernRefusal(id) => {
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32022, "message": "unsupported",
                "data": {"supported": ["2026-07-28"], "requested": "x"}}})
        }
        ServerFrame::ProbeError(id) => json!({"jsonrpc": "2.0", "id": id,
            "error": {"code": -32601, "message": "method not found"}}),
        ServerFrame::DiscoverGarbage(id) => json!({"jsonrpc": "2.0", "id": id, "result": {}}),
        ServerFrame::AnswerBadType(id) => json!({"jsonrpc": "2.0", "id": id,
            "result": {"resultType": "task", "for": id}}),
        ServerFrame::InputRequired(id) => json!({"jsonrpc": "2.0", "id": id, "result": {
            "resultType": "input_required", "requestState": format!("s{id}"),
            "inputRequests": {"q": {"method": "sampling/createMessage",
                "params": {"messages": [], "maxTokens": 1}}}}}),
        ServerFrame::InputRequiredNoState(id) => json!({"jsonrpc": "2.0", "id": id, "result": {
            "resultType": "input_required",
            "inputRequests": {"q": {"method": "sampling/createMessage",
                "params": {"messages": [], "maxTokens": 1}},
                "r": {"method": "sampling/createMessage",
                "params": {"messages": [], "maxTokens": 1}}}}}),
        ServerFrame::InputRequiredStateOnly(id) => json!({"jsonrpc": "2.0", "id": id, "result": {
            "resultType": "input_required", "requestState": format!("s{id}")}}),
        ServerFrame::CallLost(id) => json!({"jsonrpc": "2.0", "id": id, "error": {
            "code": mcp_machine::headers::STREAM_LOST, "message": "stream lost"}}),
        ServerFrame::CallVersionRefused(id) => json!({"jsonrpc": "2.0", "id": id, "error": {
            "code": -32022, "message": "unsupported",
            "data": {"supported": ["2026-07-28"], "requested": "x"}}}),
        ServerFrame::HeaderMismatch(id) => json!({"jsonrpc": "2.0", "id": id, "error": {
            "code": -32020, "message": "header mismatch"}}),
        ServerFrame::ListenAck(id, full) => {
            let honored = if full {
                json!({"toolsListChanged": true, "resourceSubscriptions": [URI]})
            } else {
                json!({"toolsListChanged": true})
            };
            json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
                "params": {"_meta": {SUBSCRIPTION_ID: id}, "notifications": honored}})
        }
        ServerFrame::ListenNote(id) => json!({"jsonrpc": "2.0",
            "method": "notifications/resources/updated",
            "params": {"uri": URI, "_meta": {SUBSCRIPTION_ID: id}}}),
        ServerFrame::ListenStray => json!({"jsonrpc": "2.0",
            "method": "notifications/tools/list_changed",
            "params": {"_meta": {SUBSCRIPTION_ID: 999}}}),
        ServerFrame::ListenEnd(id, kind) => match kind {
            ListenEndKind::Complete => json!({"jsonrpc": "2.0", "id": id, "result": {
                "resultType": "complete", "_meta": {SUBSCRIPTION_ID: id}}}),
            ListenEndKind::Lost => json!({"jsonrpc": "2.0", "id": id, "error": {
                "code": mcp_machine::headers::STREAM_LOST, "message": "stream lost"}}),
            ListenEndKind::Refused => json!({"jsonrpc": "2.0", "id": id, "error": {
                "code": -32601, "message": "method not found"}}),
            ListenEndKind::Error => json!({"jsonrpc": "2.0", "id": id, "error": {
                "code": -32603, "message": "internal error"}}),
        },
        ServerFrame::ListenCancel(id) => json!({"jsonrpc": "2.0",
            "method": "notifications/cancelled", "params": {"requestId": id}}),
        ServerFrame::AuthRequired(id) => json!({"jsonrpc": "2.0", "id": id, "error": {
            "code": mcp_machine::headers::AUTH_REQUIRED, "message": "HTTP 401 Unauthorized",
            "data": {"httpStatus": 401, "wwwAuthenticate": "Bearer scope=\"s\""}}}),
        ServerFrame::Task {
            id,
            task,
            reply,
            modern,
        } => task_frame(id, task, reply, modern),
    };
    serde_json::to_vec(&v).unwrap_or_default()
}
