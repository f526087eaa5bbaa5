//! What goes into the machine ([`Input`]) and what comes out ([`Action`]).

use std::time::Duration;

use serde_json::Value;

use crate::event::{
    CallRequest, HandlerReply, Notification, NotifyRequest, ResponseId, ServerRequest,
    ServerRequestId, SessionChange,
};
use crate::failure::{Failure, TransportError};
use crate::generated::{EventKind, State};
use crate::listen::{ListenFilter, ListenStatus};
use crate::outgoing::Outgoing;

pub use crate::request::{CallId, CallOptions, Generation, RequestId, RpcError};

/// Which send an [`Input::SendResult`] answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SendToken {
    /// The frame of this request (a call, or `initialize`).
    Request(RequestId),
    /// A caller's notification: its caller is answered by the outcome.
    Notify(CallId),
    /// `notifications/initialized`.
    Initialized,
    /// The frame at the head of the outbox: one we owe the server (a response to its request,
    /// a rejection, a cancel).
    Owed,
}

/// How a transport took a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SendOutcome {
    /// Queued for writing.
    Ok,
    /// The bounded queue was full; try again later.
    Busy,
    /// The transport is gone.
    Failed,
}

/// An input from the driver.
#[derive(Clone, Debug, PartialEq)]
pub enum Input {
    /// A caller's request to poll a task by its id (see [`crate::TaskResume`]).
    ResumeTask(crate::event::TaskResume),
    /// A transport generation is up.
    TransportUp {
        /// Its generation.
        generation: Generation,
    },
    /// A transport generation is down (or could not be spawned).
    TransportDown {
        /// Its generation.
        generation: Generation,
        /// Why, typed.
        error: TransportError,
    },
    /// One frame as read (at most one per granted credit).
    Frame {
        /// Its generation.
        generation: Generation,
        /// The bytes, without the newline.
        bytes: Vec<u8>,
    },
    /// The transport met a frame over its limit and stopped reading it.
    Oversized {
        /// Its generation.
        generation: Generation,
        /// How many bytes it saw.
        size: usize,
    },
    /// The outcome of the [`Action::Send`] just drained: due at once, before any other input
    /// and before the next [`crate::Machine::poll_action`] (checked in debug builds).
    SendResult {
        /// The generation the frame was offered to.
        generation: Generation,
        /// Which send.
        token: SendToken,
        /// What happened.
        outcome: SendOutcome,
    },
    /// The client handler answered one input request of a call's MRTR round.
    InputReply {
        /// The generation the round came from.
        generation: Generation,
        /// The answer.
        reply: crate::event::InputReply,
    },
    /// The client handler answered a server request.
    HandlerReply {
        /// The generation the request came from.
        generation: Generation,
        /// The answer.
        reply: HandlerReply,
    },
    /// The authorization asked for by [`Action::Authorize`] ended with a token held.
    Authorized {
        /// The generation the authorization was asked for by.
        generation: Generation,
    },
    /// The authorization asked for by [`Action::Authorize`] failed.
    AuthorizationFailed {
        /// The generation the authorization was asked for by.
        generation: Generation,
        /// Why.
        failure: crate::event::AuthFailure,
    },
    /// A caller wants a request made.
    Call(CallRequest),
    /// A caller wants a notification sent.
    Notify(NotifyRequest),
    /// A caller gives up on a call.
    Cancel {
        /// The call.
        call: CallId,
    },
    /// A caller asks to stop.
    Stop {
        /// Who to answer.
        call: CallId,
    },
}

/// Why a call failed, as the machine knows it (the runtime maps it to its public error).
#[derive(Clone, Debug, PartialEq)]
pub enum CallError {
    /// The server did not answer in time; `notifications/cancelled` was sent if the request was.
    Timeout {
        /// How long the call waited.
        after: Duration,
    },
    /// The connection is stopping or stopped.
    Shutdown,
    /// Not connected now.
    Unavailable {
        /// The state the connection is in.
        state: State,
        /// When the next reconnect is due, in backoff.
        retry_in: Option<Duration>,
        /// Why the last connection attempt or connection failed, if it did.
        last_error: Option<Failure>,
    },
    /// The connection was lost under the call; the call is not retried (the server may or may
    /// not have run it).
    ConnectionLost(Failure),
    /// The transport refused the frame for good (it is closing or gone).
    SendFailed,
    /// The transport stayed busy for every send attempt.
    Backpressure {
        /// How many sends were tried.
        attempts: u8,
    },
    /// The server answered with a JSON-RPC error.
    Server(RpcError),
    /// The server's answer to this call is not a valid JSON-RPC response (an error member that
    /// is not an error object); the call is failed at once rather than left to time out.
    InvalidResponse {
        /// What is wrong with it.
        reason: String,
    },
    /// The caller cancelled it.
    Cancelled,
    /// The server refused the call for want of authorization, and no authorization helped
    /// (it failed, the server refused the call again after one, or the authorizations in a
    /// row are spent).
    Unauthorized {
        /// Why, in words without a secret.
        reason: String,
    },
    /// A modern server answered with a `resultType` this client cannot use.
    UnknownResultType {
        /// The result type it named.
        result_type: String,
    },
    /// A modern server's `input_required` result cannot be met: another round past the cap,
    /// input the client did not declare it gives, a method that cannot ask for input, or a
    /// round that asks for nothing and carries no state.
    InputRequired {
        /// Which.
        reason: String,
    },
    /// The client handler failed one input of the call's `input_required` round.
    InputFailed {
        /// The input's key.
        key: String,
        /// The handler's error.
        error: RpcError,
    },
    /// A modern subscribe: the server acknowledged the listen asking for the URI without it
    /// (it will not tell the client of the resource's updates).
    SubscriptionNotHonored {
        /// The resource.
        uri: String,
    },
    /// A modern subscribe: the listen that was to carry it ended before the server
    /// acknowledged it, or is not opened again (reopened too often).
    ListenEnded {
        /// How, in words.
        reason: String,
    },
    /// The server cancelled the task the call ran as.
    TaskCancelled {
        /// The task.
        task_id: String,
    },
    /// The server no longer knows the task the call ran as (-32602: unknown, or its TTL
    /// passed), or it was created in the other era than the connection's now.
    TaskLost {
        /// The task.
        task_id: String,
        /// Why, as the server (or the client) said it.
        reason: String,
    },
    /// The exchanges of the task the call ran as failed too many times in a row (not
    /// answered, not sent, answered with an error); the server may still have the task.
    TaskUnreachable {
        /// The task.
        task_id: String,
        /// The failures in a row.
        failures: u8,
        /// The last one, in words.
        last: String,
    },
}

/// Telemetry: things worth a log line or a metric that change nothing.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Report {
    /// A frame that is not JSON-RPC.
    Malformed {
        /// What is wrong with it.
        reason: String,
    },
    /// A frame over the limit.
    Oversized {
        /// Bytes seen.
        size: usize,
        /// The limit.
        max: usize,
    },
    /// A response for an id that already ended (timed out, cancelled, failed).
    LateResponse {
        /// The id.
        id: RequestId,
    },
    /// A response for an id we do not know.
    UnknownResponse {
        /// The id as sent by the server.
        id: ResponseId,
    },
    /// A busy send will be retried.
    SendRetry {
        /// The request.
        id: RequestId,
        /// Sends tried so far.
        attempt: u8,
    },
    /// The outbox of frames owed to the server was full (a server that sends requests and
    /// does not read its input): a frame was dropped.
    OwedDropped {
        /// Its size.
        bytes: usize,
    },
    /// The handshake failed.
    InitRejected(Failure),
    /// The server answered `server/discover` as a legacy server would; the legacy handshake
    /// follows.
    ProbeFallback {
        /// The answer, in short.
        reason: String,
    },
    /// `server/discover` got no answer within the probe timeout.
    ProbeTimeout,
    /// A server request that gets no answer: before the era was decided, or from a modern
    /// server (which never sends requests).
    UnexpectedServerRequest {
        /// Its method.
        method: String,
    },
    /// A session restore request (after a reconnect) did not succeed; the server's session
    /// lacks it until the application asks again.
    RestoreFailed(SessionChange),
    /// A listen's acknowledgement honors less than it asked for (a kind or URI left out).
    ListenNarrowed {
        /// The listen's id.
        id: RequestId,
        /// What was asked and not honored.
        missing: ListenFilter,
    },
    /// A listen's acknowledgement names more than was asked for (only what was asked is
    /// taken).
    ListenWider {
        /// The listen's id.
        id: RequestId,
    },
    /// A notification tagged with a listen whose notifications are not delivered (ended,
    /// replaced, unknown, or not acknowledged yet): dropped.
    StrayListenNotification {
        /// Its method.
        method: String,
    },
    /// The server refused a listen (-32601: it serves none; -32602: not this filter); none is
    /// opened again until what is wanted changes.
    ListenRefused {
        /// The listen's id.
        id: RequestId,
        /// The error code.
        code: i64,
    },
    /// A listen ended (its end, a broken stream, no acknowledgement in time, a send refused);
    /// it is opened again later while the budget lasts.
    ListenLost {
        /// The listen's id.
        id: RequestId,
        /// How, in words.
        reason: String,
    },
    /// Lost listens were opened again as often as allowed: none is until what is wanted
    /// changes or the next connection.
    ListenGaveUp,
    /// A row the table marks impossible fired (it was ignored): a transport or a timer broke
    /// its contract.
    ImpossibleRow {
        /// The row's index.
        row: u16,
    },
}

/// An output of the machine, carried out by the driver in order.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// Start transport generation `generation` (report its up/down/frames tagged with it).
    SpawnTransport {
        /// The new generation.
        generation: Generation,
    },
    /// Close that generation (flush, then shut it down); grant it nothing more.
    CloseTransport {
        /// The generation.
        generation: Generation,
    },
    /// Offer a frame to the transport without waiting, then feed back [`Input::SendResult`].
    Send {
        /// The generation.
        generation: Generation,
        /// Which send, to echo back.
        token: SendToken,
        /// The JSON bytes (no newline) and their typed head; derefs to the bytes.
        frame: Outgoing,
    },
    /// Let that generation deliver `credits` more frames.
    GrantCredit {
        /// The generation.
        generation: Generation,
        /// How many frames more (1, or the read window when a transport opens).
        credits: u32,
    },
    /// Answer a caller of a call or a notify.
    Reply {
        /// The caller.
        call: CallId,
        /// The request id, when one was issued.
        request: Option<RequestId>,
        /// The answer (a result as its text until something reads it).
        outcome: Result<crate::Payload, CallError>,
    },
    /// Tell a caller the status of the task its call runs as (when it is created, and when
    /// its status or message changes): like progress, nothing to answer.
    TaskStatus {
        /// The caller.
        call: CallId,
        /// The status.
        status: crate::tasks::TaskStatus,
    },
    /// Answer a stop.
    StopDone {
        /// The caller.
        call: CallId,
        /// Whether it was already stopping or stopped.
        already: bool,
    },
    /// A server notification for subscribers.
    Notification(Notification),
    /// Progress for a call (the params of `notifications/progress`).
    Progress {
        /// The call.
        call: CallId,
        /// The params.
        params: Value,
    },
    /// A server request for the client handler; answer with [`Input::HandlerReply`].
    ServerRequest {
        /// The generation it came from.
        generation: Generation,
        /// The request.
        request: ServerRequest,
    },
    /// An input request of a call's `input_required` round, for the client handler (the same
    /// handler methods as server requests); answer with [`Input::InputReply`].
    InputRequest {
        /// The generation the round came from.
        generation: Generation,
        /// The id of the call's request the server answered.
        request: RequestId,
        /// The input's key.
        key: String,
        /// Its method (`elicitation/create`, `sampling/createMessage`, `roots/list`).
        method: String,
        /// Its params.
        params: Value,
    },
    /// Abort the handler tasks of one call's input requests (the call ended).
    AbortInputs {
        /// The generation.
        generation: Generation,
        /// The id of the call's request the server answered.
        request: RequestId,
    },
    /// Abort the handler task of one server request.
    AbortServerRequest {
        /// The generation.
        generation: Generation,
        /// The server's request id.
        id: ServerRequestId,
    },
    /// Abort every handler task of a generation.
    AbortServerRequests {
        /// The generation.
        generation: Generation,
    },
    /// Authorize this client for the server (HTTP with OAuth): it refused a request for want
    /// of authorization. Answer with [`Input::Authorized`] or [`Input::AuthorizationFailed`],
    /// tagged with `generation`. The machine asks for one at a time.
    Authorize {
        /// The generation that met the refusal.
        generation: Generation,
        /// What the server answered.
        challenge: crate::event::AuthChallenge,
    },
    /// What the client wants told by the server and what its listens cover now (2026-07-28):
    /// emitted whenever either changes.
    Listening(ListenStatus),
    /// Something worth reporting.
    Report(Report),
    /// The connection is over.
    Exit,
}

/// What one input did: the row that fired, for tracing and coverage.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Step {
    /// The state before.
    pub from: State,
    /// The classified event.
    pub event: EventKind,
    /// The index of the row in [`crate::ROWS`].
    pub row: u16,
    /// The spec file of the row, as `spec/<concern>.toml` ("" for a row outside the table).
    pub file: &'static str,
    /// The line of the row in its spec file (0 for a row outside the table).
    pub line: u32,
    /// The state after.
    pub to: State,
}
