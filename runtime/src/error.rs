//! The one error type of the client: one variant per outcome a caller can act on, each keeping
//! its typed cause (`source()` reaches the transport's `io::Error` where there is one).

use std::sync::Arc;
use std::time::Duration;

use mcp_machine::{CallError, Failure};
use serde_json::Value;

use crate::ConnState;
use crate::shown::clean;

/// Why a call (or connect, or notify) failed.
///
/// Local failures (timeout, shutdown, unavailable, connection lost, send failed, backpressure,
/// cancelled, invalid result) can never be mistaken for the server's own JSON-RPC errors, which
/// are [`Error::Server`]; their codes are in [`crate::codes`].
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> mcp_runtime::Result<()> {
/// # let connector = mcp_runtime::transport::StreamConnector::from_fn(|| async {
/// #     let (ours, theirs) = tokio::io::duplex(1 << 16);
/// #     let (r, w) = tokio::io::split(theirs);
/// #     tokio::spawn(mcp_testserver::serve(r, w, mcp_testserver::ServerConfig::echo()));
/// #     Ok(tokio::io::split(ours))
/// # });
/// use mcp_runtime::{ClientBuilder, Error, codes};
/// use serde_json::json;
///
/// // Connecting: the first attempt's cause, typed, with the server's last stderr lines.
/// match ClientBuilder::stdio("no-such-mcp-server", ["--stdio"]).connect().await {
///     Err(Error::Connect(e)) => assert!(e.is_permanent(), "the program does not exist: {e}"),
///     other => panic!("{other:?}"),
/// }
///
/// let client = ClientBuilder::new(connector).connect().await?;
/// match client.call_tool("no-such-tool", json!({})).await {
///     // The server's own JSON-RPC error.
///     Err(Error::Server { code, message, .. }) => {
///         assert_eq!(code, codes::INVALID_PARAMS);
///         println!("refused: {message}");
///     }
///     // Local outcomes: no answer in time, a lost connection, a stopped client, ...
///     Err(Error::Timeout { after }) => panic!("no answer within {after:?}"),
///     Err(e) => panic!("{e}"),
///     Ok(result) => panic!("{}", result.text()),
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The server did not answer in time; the request was cancelled on the wire.
    #[error("request timed out after {}", fmt_duration(*after))]
    Timeout {
        /// How long the call waited.
        after: Duration,
    },
    /// The client is stopping or stopped.
    #[error("client is shut down")]
    Shutdown,
    /// [`crate::ClientBuilder::connect`] failed: see [`ConnectError`] (typed cause, the
    /// server's stderr tail). Only `connect` returns it; calls on a client that is not
    /// connected get [`Error::Unavailable`].
    #[error(transparent)]
    Connect(Box<ConnectError>),
    /// Not connected right now (connecting, or waiting to reconnect).
    #[error("server unavailable ({state}{}{})",
        retry_in.map(|d| format!(", reconnecting in {}", fmt_duration(d))).unwrap_or_default(),
        last_error.as_ref().map(|e| format!("; last error: {e}")).unwrap_or_default())]
    Unavailable {
        /// The connection state.
        state: ConnState,
        /// When the next reconnect attempt is due.
        retry_in: Option<Duration>,
        /// Why the last attempt or connection failed, typed.
        last_error: Option<Failure>,
    },
    /// The connection was lost while the call was in flight. The call is not retried: the server
    /// may or may not have run it, and only the caller knows whether running it twice is safe.
    #[error("connection lost: {0}")]
    ConnectionLost(#[source] Failure),
    /// The transport refused the frame for good (it is closing or gone).
    #[error("the transport refused the frame (it is closing or gone)")]
    SendFailed,
    /// The transport's outgoing queue stayed full for every send attempt.
    #[error("transport busy: gave up after {attempts} sends")]
    Backpressure {
        /// Sends tried.
        attempts: u8,
    },
    /// The server's answer is not a valid JSON-RPC response (an error member that is not an
    /// error object); the call failed at once.
    #[error("invalid response from the server: {reason}")]
    InvalidResponse {
        /// What is wrong with it.
        reason: String,
    },
    /// A 2026-07-28 server answered with a `resultType` this client cannot use (one it does not
    /// know, or `input_required` where it cannot give the input); the call failed at once.
    #[error("the server answered with result type {result_type:?}, which this client cannot use")]
    UnknownResultType {
        /// The result type the server named.
        result_type: String,
    },
    /// A 2026-07-28 server's `input_required` result could not be met (more rounds than
    /// [`crate::ClientBuilder::max_input_rounds`], input the client did not declare it gives,
    /// a method that cannot ask for input); the call failed at once.
    #[error("the server's request for input cannot be met: {reason}")]
    InputRequired {
        /// Why.
        reason: String,
    },
    /// The client's handler failed to give one input of a 2026-07-28 `input_required` round;
    /// the call failed (nothing of it is left on the wire).
    #[error("the client's handler failed input {key:?}: {error}")]
    InputFailed {
        /// The input's key in `inputRequests`.
        key: String,
        /// The handler's error.
        error: mcp_machine::RpcError,
    },
    /// The server cancelled the task the tool call ran as.
    #[error("the server cancelled task {task_id}")]
    TaskCancelled {
        /// The server's task id.
        task_id: String,
    },
    /// The server no longer knows the task the tool call ran as (unknown, or its TTL
    /// passed), or the task was created in the other protocol era than the server speaks now.
    #[error("task {task_id} is lost: {reason}")]
    TaskLost {
        /// The server's task id.
        task_id: String,
        /// Why, as the server (or the client) said it.
        reason: String,
    },
    /// The polls of the task the tool call ran as failed too many times in a row; the server
    /// may still have the task (its id is here to resume it).
    #[error("task {task_id} unreachable after {failures} failed exchanges in a row (last: {last})")]
    TaskUnreachable {
        /// The server's task id.
        task_id: String,
        /// The failures in a row.
        failures: u8,
        /// The last one, in words.
        last: String,
    },
    /// The tool runs only as a task (`execution.taskSupport: "required"`) and this client
    /// was built without tasks (`ClientBuilder::tasks`); nothing was sent.
    #[error(
        "tool {tool:?} runs only as a task: build the client with tasks enabled (ClientBuilder::tasks)"
    )]
    TaskRequired {
        /// The tool.
        tool: String,
    },
    /// The server refused the call for want of authorization (HTTP 401, or 403
    /// `insufficient_scope`), and authorizing did not help: the authorization failed, the
    /// server refused the call again after one, or the authorizations in a row are spent
    /// (`Config::max_authorizations`). Never holds a token or a secret.
    #[error("the server requires authorization: {reason}")]
    Unauthorized {
        /// Why authorizing did not help.
        reason: String,
    },
    /// A 2026-07-28 subscribe: the server acknowledged the listen asking for the resource
    /// without it, so it will not tell of its updates.
    #[error("the server does not honor a subscription to {uri}")]
    SubscriptionNotHonored {
        /// The resource.
        uri: String,
    },
    /// A 2026-07-28 subscribe: the listen that was to carry it ended before the server
    /// acknowledged it (or is not opened again).
    #[error("the listen carrying the subscription ended: {reason}")]
    ListenEnded {
        /// How.
        reason: String,
    },
    /// A 2026-07-28 server refused the request because it needs client capabilities the client
    /// did not declare (-32021); `required` is its `data.requiredCapabilities` (`null` when it
    /// gave none).
    #[error("the server needs client capabilities this client did not declare: {message}")]
    MissingCapability {
        /// The capabilities the server named, as it sent them.
        required: Value,
        /// The server's message.
        message: String,
    },
    /// The server does not have the resource (`resources/read` answered -32002, or -32602 by a
    /// 2026-07-28 server).
    #[error("resource not found: {uri} ({message})")]
    ResourceNotFound {
        /// The URI asked for.
        uri: String,
        /// The server's error code.
        code: i64,
        /// The server's message.
        message: String,
    },
    /// The server's result does not have the shape the method's result must have.
    #[error("invalid {method} result from the server: {source}")]
    InvalidResult {
        /// The method called.
        method: String,
        /// What did not fit.
        #[source]
        source: Arc<serde_json::Error>,
    },
    /// The server answered with a JSON-RPC error.
    #[error("server error {code}: {message}")]
    Server {
        /// The JSON-RPC error code.
        code: i64,
        /// The message.
        message: String,
        /// Optional data.
        data: Option<Value>,
    },
    /// The `structuredContent` of a `tools/call` result does not match the `outputSchema` the
    /// tool declared in the client's latest listing of it, or is missing from a result that is
    /// not a tool error (the specification says such a server MUST return conforming
    /// structured content). The call itself succeeded: the server's result is in `result`.
    ///
    /// Only tools the client listed ([`crate::Client::list_tools`],
    /// [`crate::Client::list_all_tools`]) are checked, and never a result with
    /// `isError: true`; [`crate::ClientBuilder::validate_output`] turns the check off. Not a
    /// transport or protocol failure.
    #[error(
        "tool {}: the result does not match the tool's outputSchema: {}",
        crate::shown::shown_name(tool),
        summary(errors)
    )]
    OutputSchemaMismatch {
        /// The tool called.
        tool: String,
        /// What does not match: at most 16 lines (then one saying how many more), each
        /// starting with the JSON pointer of the place in `structuredContent` (`(root)` for
        /// the whole), control characters escaped and each line bounded (instance values are
        /// not repeated).
        errors: Vec<String>,
        /// The server's result, unchanged.
        result: Box<crate::types::CallToolResult>,
    },
    /// The `outputSchema` a listed tool declared cannot be used to check its results: it is
    /// not valid JSON Schema, has a `$ref` that does not resolve inside it (an `http:`,
    /// `https:` or `file:` one included: references are never fetched), is larger or more
    /// complex than the client's bounds (1 MiB; subschemas 64 deep and 10 000 with every
    /// `$ref` expanded), or could make validation take exponential time. Such a schema is
    /// rejected, never treated as accepting everything. The call itself succeeded: the
    /// server's result is in `result`, unchecked.
    #[error(
        "tool {}: its outputSchema cannot be used to check the result: {reason}",
        crate::shown::shown_name(tool)
    )]
    InvalidOutputSchema {
        /// The tool called.
        tool: String,
        /// Why (control characters escaped, bounded).
        reason: String,
        /// The server's result, unchanged.
        result: Box<crate::types::CallToolResult>,
    },
    /// The call was cancelled by its caller.
    #[error("request cancelled")]
    Cancelled,
    /// A `list_all_*` walk stopped: the server repeated a cursor (it would loop forever) or
    /// gave more pages than the client's bound ([`crate::ClientBuilder::max_pages`]).
    #[error("{method}: pagination stopped after {pages} pages: {reason}")]
    EndlessPagination {
        /// The list method.
        method: String,
        /// Pages received.
        pages: usize,
        /// Why it stopped.
        reason: PaginationStop,
    },
}

/// Why [`crate::ClientBuilder::connect`] failed: the first attempt's typed cause, what was
/// connected to, and the last lines the server wrote on its stderr (stdio servers).
///
/// Match on [`ConnectError::cause`] to act: a [`Failure::Transport`] of
/// [`crate::TransportError::Spawn`] with [`std::io::ErrorKind::NotFound`] (the program does
/// not exist: [`ConnectError::is_permanent`]), [`crate::TransportError::ChildExited`] (exit code
/// or signal), [`Failure::Refused`] (the server's error to `initialize`),
/// [`Failure::UnsupportedVersion`], [`Failure::InitTimeout`] (with the bound that ran out).
/// The client was stopped; nothing is retried.
///
/// Its `Display` is one line for a host's log, ending with the server's last stderr line:
/// `could not connect to stdio: my-server: server process exited (exit code 3); the server's
/// last stderr line: boom: missing API_KEY` (control characters in server text escaped).
#[derive(Debug, Clone, thiserror::Error)]
#[error("could not connect to {}: {cause}{}", clean(target),
    last_line(stderr_tail).map(|l| format!("; the server's last stderr line: {}", clean(l))).unwrap_or_default())]
#[non_exhaustive]
pub struct ConnectError {
    /// What was connected to ("stdio: npx -y server", "tcp 127.0.0.1:9000").
    pub target: String,
    /// Why the attempt failed, typed.
    #[source]
    pub cause: Failure,
    /// The last lines (at most 20, each at most 512 bytes) the server wrote on its stderr,
    /// oldest first, raw (escape them before showing them on a terminal). Empty for transports
    /// without stderr.
    pub stderr_tail: Vec<String>,
}

impl ConnectError {
    /// Whether trying again cannot help (the program does not exist, permission denied).
    pub fn is_permanent(&self) -> bool {
        matches!(&self.cause, Failure::Transport(t) if t.is_permanent())
    }
}

/// The first of `errors`, and how many more there are, for a one-line message.
fn summary(errors: &[String]) -> String {
    match errors {
        [] => "no details".to_owned(),
        [one] => one.clone(),
        [first, rest @ ..] => {
            // The last line may already say how many were left out ("… and 9 more").
            let left_out = rest
                .last()
                .and_then(|l| l.strip_prefix("… and "))
                .and_then(|l| l.strip_suffix(" more"))
                .and_then(|n| n.parse::<usize>().ok());
            let more = match left_out {
                Some(n) => rest.len() - 1 + n,
                None => rest.len(),
            };
            format!("{first} (and {more} more)")
        }
    }
}

fn last_line(lines: &[String]) -> Option<&String> {
    lines.iter().rev().find(|l| !l.trim().is_empty())
}

/// Why a pagination walk stopped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PaginationStop {
    /// The server gave a cursor it had given before.
    #[error("the server repeated the cursor {0:?}")]
    RepeatedCursor(String),
    /// More pages than the bound.
    #[error("more pages than the bound")]
    TooManyPages,
}

impl Error {
    /// The connection failure behind this error, if there is one (lost, or why unavailable).
    pub fn failure(&self) -> Option<&Failure> {
        match self {
            Error::ConnectionLost(f) => Some(f),
            Error::Unavailable { last_error, .. } => last_error.as_ref(),
            Error::Connect(e) => Some(&e.cause),
            _ => None,
        }
    }
}

fn fmt_duration(d: Duration) -> String {
    if d < Duration::from_secs(1) {
        format!("{} ms", d.as_millis())
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

impl From<CallError> for Error {
    fn from(e: CallError) -> Self {
        match e {
            CallError::Timeout { after } => Error::Timeout { after },
            CallError::Shutdown => Error::Shutdown,
            CallError::Unavailable {
                state,
                retry_in,
                last_error,
            } => Error::Unavailable {
                state,
                retry_in,
                last_error,
            },
            CallError::ConnectionLost(f) => Error::ConnectionLost(f),
            CallError::SendFailed => Error::SendFailed,
            CallError::Backpressure { attempts } => Error::Backpressure { attempts },
            // -32021: a 2026-07-28 server needs client capabilities the request did not
            // declare; it names them.
            CallError::Server(e) if e.code == mcp_machine::codes::MISSING_CAPABILITY => {
                Error::MissingCapability {
                    required: e
                        .data
                        .as_ref()
                        .and_then(|d| d.get("requiredCapabilities"))
                        .cloned()
                        .unwrap_or(Value::Null),
                    message: e.message,
                }
            }
            CallError::Server(e) => Error::Server {
                code: e.code,
                message: e.message,
                data: e.data,
            },
            CallError::Cancelled => Error::Cancelled,
            CallError::InvalidResponse { reason } => Error::InvalidResponse { reason },
            CallError::InputRequired { reason } => Error::InputRequired { reason },
            CallError::InputFailed { key, error } => Error::InputFailed { key, error },
            CallError::Unauthorized { reason } => Error::Unauthorized { reason },
            CallError::UnknownResultType { result_type } => {
                Error::UnknownResultType { result_type }
            }
            CallError::SubscriptionNotHonored { uri } => Error::SubscriptionNotHonored { uri },
            CallError::ListenEnded { reason } => Error::ListenEnded { reason },
            CallError::TaskCancelled { task_id } => Error::TaskCancelled { task_id },
            CallError::TaskLost { task_id, reason } => Error::TaskLost { task_id, reason },
            CallError::TaskUnreachable {
                task_id,
                failures,
                last,
            } => Error::TaskUnreachable {
                task_id,
                failures,
                last,
            },
        }
    }
}

/// The result type of the client's calls.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_machine::TransportError;
    use std::error::Error as _;

    #[test]
    fn messages_are_clear_and_causes_typed() {
        let lost = Failure::Transport(TransportError::ChildExited {
            code: None,
            signal: Some(9),
        });
        let e = Error::Unavailable {
            state: ConnState::Backoff,
            retry_in: Some(Duration::from_millis(1500)),
            last_error: Some(lost.clone()),
        };
        assert_eq!(
            e.to_string(),
            "server unavailable (backoff, reconnecting in 1.5 s; last error: server process exited (killed by signal 9))"
        );
        assert_eq!(e.failure(), Some(&lost));
        let spawn = Failure::Transport(TransportError::Spawn(
            std::io::Error::from(std::io::ErrorKind::NotFound).into(),
        ));
        let e = Error::ConnectionLost(spawn);
        let io = e.source().and_then(|s| s.source()).and_then(|s| s.source());
        assert!(io.is_some_and(|s| s.downcast_ref::<std::io::Error>().is_some()));
        assert_eq!(
            Error::Timeout {
                after: Duration::from_millis(250)
            }
            .to_string(),
            "request timed out after 250 ms"
        );
    }
}
