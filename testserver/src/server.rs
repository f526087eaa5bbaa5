//! The connection loop: reading, dispatching to tasks, writing, chaos endings.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::future::pending;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::{Map, Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, BufWriter};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::{AbortHandle, JoinSet};

use crate::config::{Era, Handshake, Linger, Probe, ServerConfig};
use crate::listen::ListenBus;
use crate::{LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS, catalog, codes, modern, tools};

/// How a served connection ended; returned by [`serve`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Ended {
    /// The client's stream hit EOF (or a read error); in-flight answers were flushed
    /// (within [`ServerConfig::eof_grace`]).
    Eof,
    /// The `die` chaos tool: the stream was dropped without answering (binaries exit 3).
    Died,
    /// The `exit_after` chaos tool: its answer was written, then after `ms` the server
    /// stopped (binaries exit 3).
    Exited,
    /// Writing to the client failed (e.g. a broken pipe).
    WriteFailed,
}

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message} ({code})")]
pub(crate) struct RpcError {
    pub(crate) code: i64,
    pub(crate) message: String,
    pub(crate) data: Option<Value>,
}

impl RpcError {
    pub(crate) fn new(code: i64, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            data: None,
        }
    }

    pub(crate) fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(codes::INVALID_PARAMS, message)
    }

    pub(crate) fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    pub(crate) fn to_json(&self) -> Value {
        let mut e = json!({"code": self.code, "message": self.message});
        if let Some(d) = &self.data {
            e["data"] = d.clone();
        }
        e
    }

    /// Read a JSON-RPC error object sent by the client.
    fn from_json(v: &Value) -> Self {
        Self {
            code: v.get("code").and_then(Value::as_i64).unwrap_or(0),
            message: v
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("(no message)")
                .to_owned(),
            data: v.get("data").cloned(),
        }
    }
}

/// What a method handler produced.
pub(crate) enum Reply {
    /// Answer with this result.
    Result(Value),
    /// Answer with this result, then stop the server after the delay (`exit_after`).
    ResultThenExit(Value, Duration),
    /// The tool wrote its answer itself (raw bytes, a stalled frame): nothing more to send.
    Answered,
}

pub(crate) type Handled = Result<Reply, RpcError>;

/// What goes to the writer.
enum Out {
    Line(String),
    /// A line of raw bytes (not necessarily UTF-8); the newline is added.
    Bytes(Vec<u8>),
    /// [`Linger::StallMidFrame`]: these bytes without a newline.
    Partial(String),
    /// `partial`: `head` without a newline, flushed, nothing for `pause`, then `tail` and a
    /// newline (one message, so that nothing else is written in between).
    Stalled {
        head: String,
        pause: Duration,
        tail: String,
    },
    /// `silent`: flush, then write nothing for this long.
    Pause(Duration),
    /// `hang`: write nothing more, keep the stream open.
    Stop,
    /// [`Linger::CloseStdout`]: flush, shut the stream down, drop it, write nothing more.
    Close,
    /// `exit_after` fired: flush and end with [`Ended::Exited`].
    Exit,
    /// The reader hit EOF and in-flight work is over: flush and end with [`Ended::Eof`].
    Finish,
}

/// What the server recorded about the session; shown by the `session_info` tool.
#[derive(Debug, Default)]
pub(crate) struct Session {
    pub(crate) initialize_count: u32,
    pub(crate) client_protocol_version: Option<Value>,
    pub(crate) protocol_version: Option<String>,
    pub(crate) client_info: Option<Value>,
    pub(crate) client_capabilities: Option<Value>,
    pub(crate) initialized: bool,
    pub(crate) initialized_count: u32,
    /// Methods of requests (other than `initialize` and `ping`) received before
    /// `notifications/initialized`.
    pub(crate) early_requests: Vec<String>,
    pub(crate) cancelled: Vec<Value>,
    pub(crate) roots_list_changed: u32,
    pub(crate) notifications: Vec<String>,
    pub(crate) unknown_responses: Vec<Value>,
    pub(crate) log_level: Option<String>,
    pub(crate) subscriptions: BTreeSet<String>,
}

impl Session {
    pub(crate) fn to_json(&self) -> Value {
        json!({
            "pid": std::process::id(),
            "initializeCount": self.initialize_count,
            "clientProtocolVersion": self.client_protocol_version,
            "protocolVersion": self.protocol_version,
            "clientInfo": self.client_info,
            "clientCapabilities": self.client_capabilities,
            "initialized": self.initialized,
            "initializedCount": self.initialized_count,
            "earlyRequests": self.early_requests,
            "cancelled": self.cancelled,
            "rootsListChanged": self.roots_list_changed,
            "notifications": self.notifications,
            "unknownResponses": self.unknown_responses,
            "logLevel": self.log_level,
            "subscriptions": self.subscriptions,
        })
    }
}

#[derive(Default)]
struct Inflight {
    /// Request id (serialized) → (serial, abort handle of its task).
    by_id: HashMap<String, (u64, Option<AbortHandle>)>,
    /// Serials of cancelled requests whose task may still be finishing: never answered.
    cancelled: HashSet<u64>,
    next_serial: u64,
}

/// State shared by the reader and the request tasks of one connection.
pub(crate) struct Shared {
    pub(crate) config: ServerConfig,
    /// The names of the tools `config` offers, read from the catalog at the first
    /// `tools/call` (which checks a name against them) and kept: the definitions, JSON
    /// schemas and all, are not built again for every call. Lazy, as a 2026-07-28 request
    /// over HTTP gets a connection of its own.
    tool_names: std::sync::OnceLock<Vec<String>>,
    out: mpsc::UnboundedSender<Out>,
    session: Mutex<Session>,
    inflight: Mutex<Inflight>,
    /// Our requests to the client awaiting an answer, by id.
    pending: Mutex<HashMap<String, oneshot::Sender<Result<Value, RpcError>>>>,
    next_request: AtomicU64,
    /// Where `notify_changed` and `touch` publish, and what the listens hear (shared with other
    /// connections when [`serve_with`] was given one).
    pub(crate) listen: ListenBus,
    /// Set when the client's stream ended: the open listens end without a response.
    closing: watch::Sender<bool>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Shared {
    pub(crate) fn session(&self) -> MutexGuard<'_, Session> {
        lock(&self.session)
    }

    /// Whether `config` offers a tool named `name`.
    pub(crate) fn has_tool(&self, name: &str) -> bool {
        self.tool_names
            .get_or_init(|| {
                catalog::tools(&self.config)
                    .iter()
                    .filter_map(|t| t["name"].as_str().map(str::to_owned))
                    .collect()
            })
            .iter()
            .any(|t| t == name)
    }

    /// Queue a raw line (without its newline).
    pub(crate) fn send_raw(&self, line: String) {
        let _ = self.out.send(Out::Line(line));
    }

    /// Queue a line of raw bytes (without its newline; need not be UTF-8).
    pub(crate) fn send_bytes(&self, line: Vec<u8>) {
        let _ = self.out.send(Out::Bytes(line));
    }

    /// Queue one line written in two parts with a stall of `pause` in between.
    pub(crate) fn send_stalled(&self, line: String, at: usize, pause: Duration) {
        let at = (0..=at.min(line.len()))
            .rev()
            .find(|i| line.is_char_boundary(*i))
            .unwrap_or(0);
        let (head, tail) = line.split_at(at);
        let _ = self.out.send(Out::Stalled {
            head: head.to_owned(),
            pause,
            tail: tail.to_owned(),
        });
    }

    /// Queue one JSON message.
    pub(crate) fn send(&self, msg: &Value) {
        self.send_raw(msg.to_string());
    }

    pub(crate) fn notify(&self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    pub(crate) fn respond(&self, id: &Value, result: Value) {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "result": result}));
    }

    fn respond_error(&self, id: &Value, err: &RpcError) {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "error": err.to_json()}));
    }

    /// Send a request to the client and wait for its answer.
    pub(crate) async fn request_client(
        &self,
        method: &str,
        params: Value,
    ) -> Result<Value, RpcError> {
        let n = self.next_request.fetch_add(1, Ordering::Relaxed) + 1;
        let id = format!("s-{n}");
        let (tx, rx) = oneshot::channel();
        lock(&self.pending).insert(id.clone(), tx);
        let _guard = PendingGuard {
            shared: self,
            id: id.clone(),
        };
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        match rx.await {
            Ok(answer) => answer,
            Err(_) => Err(RpcError::new(
                codes::INVALID_REQUEST,
                format!("connection closed before the client answered {method}"),
            )),
        }
    }

    /// Whether the request takes the modern path (always in [`Era::Modern`], never in
    /// [`Era::Legacy`], by its `_meta` in [`Era::Dual`]).
    pub(crate) fn is_modern(&self, method: &str, params: &Value) -> bool {
        match self.config.era {
            Era::Legacy => false,
            Era::Modern => true,
            Era::Dual => modern::is_modern_request(method, params),
        }
    }

    /// Whether the tools send the handshake era's untagged change notifications for this
    /// request: always in the handshake era, in the modern one with
    /// [`ServerConfig::modern_unsolicited`].
    pub(crate) fn unsolicited(&self, method: &str, params: &Value) -> bool {
        self.config.modern_unsolicited || !self.is_modern(method, params)
    }

    /// Becomes `true` when the client's stream ended.
    pub(crate) fn closing(&self) -> watch::Receiver<bool> {
        self.closing.subscribe()
    }

    /// The negotiated protocol version (or the latest if `initialize` was not seen).
    pub(crate) fn protocol_version(&self) -> String {
        self.session()
            .protocol_version
            .clone()
            .unwrap_or_else(|| LATEST_PROTOCOL_VERSION.to_owned())
    }
}

/// Removes a pending server→client request when its waiter goes away (e.g. cancelled).
struct PendingGuard<'a> {
    shared: &'a Shared,
    id: String,
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        lock(&self.shared.pending).remove(&self.id);
    }
}

/// Serve one connection until the reader hits EOF or a chaos action ends it.
///
/// Reads newline-delimited JSON-RPC from `reader`, writes answers, notifications and
/// server→client requests to `writer` (one line each). Each request is handled in its own
/// task (spawned on the current tokio runtime), so answers may come out of order.
///
/// Returns how the connection ended. After the `hang` chaos tool it never returns (it keeps
/// both streams open, reading and writing nothing): drop the future to end it.
///
/// The connection's `subscriptions/listen` requests hear only its own tools: see
/// [`serve_with`] to share a [`ListenBus`] between connections.
pub async fn serve<R, W>(reader: R, writer: W, config: ServerConfig) -> Ended
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send,
{
    serve_with(reader, writer, config, None).await
}

/// [`serve`], with the [`ListenBus`] its tools publish to and its listens hear (`None`: a bus
/// of its own), so that a change made on one connection reaches a listen open on another (over
/// HTTP, every modern request is a connection of its own).
pub async fn serve_with<R, W>(
    reader: R,
    writer: W,
    config: ServerConfig,
    bus: Option<ListenBus>,
) -> Ended
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send,
{
    let (out_tx, out_rx) = mpsc::unbounded_channel();
    let shared = Arc::new(Shared {
        config,
        tool_names: std::sync::OnceLock::new(),
        out: out_tx,
        session: Mutex::new(Session::default()),
        inflight: Mutex::new(Inflight::default()),
        pending: Mutex::new(HashMap::new()),
        next_request: AtomicU64::new(0),
        listen: bus.unwrap_or_default(),
        closing: watch::Sender::new(false),
    });
    tracing::debug!(name = %shared.config.name, chaos = shared.config.chaos, "serving");
    let read_fut = read_loop(reader, shared);
    let write_fut = write_loop(BufWriter::new(writer), out_rx);
    tokio::pin!(read_fut, write_fut);
    let ended = tokio::select! {
        r = &mut read_fut => match r {
            ReadEnd::Died => Ended::Died,
            // The reader queued `Out::Finish` after the last in-flight answer.
            ReadEnd::Eof => match write_fut.await {
                WriteEnd::Exited => Ended::Exited,
                WriteEnd::Finished | WriteEnd::Failed => Ended::Eof,
            },
        },
        w = &mut write_fut => match w {
            WriteEnd::Exited => Ended::Exited,
            WriteEnd::Failed => Ended::WriteFailed,
            WriteEnd::Finished => Ended::Eof,
        },
    };
    tracing::debug!(?ended, "connection ended");
    ended
}

enum WriteEnd {
    Finished,
    Exited,
    Failed,
}

async fn write_loop<W: AsyncWrite + Unpin>(
    mut w: BufWriter<W>,
    mut rx: mpsc::UnboundedReceiver<Out>,
) -> WriteEnd {
    loop {
        let mut next = rx.recv().await;
        if next.is_none() {
            let _ = w.flush().await;
            return WriteEnd::Finished;
        }
        // Write everything already queued, then flush once.
        while let Some(msg) = next {
            match msg {
                Out::Line(line) => {
                    if w.write_all(line.as_bytes()).await.is_err()
                        || w.write_all(b"\n").await.is_err()
                    {
                        return WriteEnd::Failed;
                    }
                }
                Out::Bytes(bytes) => {
                    if w.write_all(&bytes).await.is_err() || w.write_all(b"\n").await.is_err() {
                        return WriteEnd::Failed;
                    }
                }
                Out::Partial(bytes) => {
                    if w.write_all(bytes.as_bytes()).await.is_err() {
                        return WriteEnd::Failed;
                    }
                }
                Out::Stalled { head, pause, tail } => {
                    if w.write_all(head.as_bytes()).await.is_err() || w.flush().await.is_err() {
                        return WriteEnd::Failed;
                    }
                    tokio::time::sleep(pause).await;
                    if w.write_all(tail.as_bytes()).await.is_err()
                        || w.write_all(b"\n").await.is_err()
                    {
                        return WriteEnd::Failed;
                    }
                }
                Out::Pause(pause) => {
                    if w.flush().await.is_err() {
                        return WriteEnd::Failed;
                    }
                    tokio::time::sleep(pause).await;
                }
                Out::Close => {
                    let _ = w.flush().await;
                    let _ = w.shutdown().await;
                    drop(w);
                    tracing::debug!("close-stdout: output closed");
                    let never = pending::<std::convert::Infallible>().await;
                    match never {}
                }
                Out::Stop => {
                    let _ = w.flush().await;
                    tracing::debug!("hang: writer stopped");
                    // Keep the writer (and so the stream) alive forever.
                    pending::<()>().await;
                }
                Out::Exit => {
                    let _ = w.flush().await;
                    return WriteEnd::Exited;
                }
                Out::Finish => {
                    let _ = w.flush().await;
                    return WriteEnd::Finished;
                }
            }
            next = rx.try_recv().ok();
        }
        if w.flush().await.is_err() {
            return WriteEnd::Failed;
        }
    }
}

enum ReadEnd {
    Eof,
    Died,
}

/// What the reader must do after a line.
enum Flow {
    Continue,
    Die,
    Hang,
    /// `silent`: read nothing for this long (the writer was told to pause too).
    Silent(Duration),
}

async fn read_loop<R: AsyncRead + Unpin>(reader: R, shared: Arc<Shared>) -> ReadEnd {
    let mut reader = BufReader::new(reader);
    let mut tasks = JoinSet::new();
    let mut buf = Vec::new();
    loop {
        buf.clear();
        match reader.read_until(b'\n', &mut buf).await {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => {
                tracing::debug!(error = %e, "read error: treated as EOF");
                break;
            }
        }
        match handle_line(&shared, &buf, &mut tasks) {
            Flow::Continue => {}
            Flow::Die => {
                tracing::debug!("die: dropping the connection");
                tasks.abort_all();
                return ReadEnd::Died;
            }
            Flow::Hang => {
                tracing::debug!("hang: reading and answering nothing from now on");
                tasks.abort_all();
                let _ = shared.out.send(Out::Stop);
                // Keep the reader (and so the stream) alive forever.
                pending::<()>().await;
            }
            Flow::Silent(pause) => {
                tracing::debug!(?pause, "silent: reading and writing nothing for a while");
                tokio::time::sleep(pause).await;
            }
        }
        while tasks.try_join_next().is_some() {}
    }
    if shared.config.linger != Linger::No {
        tracing::debug!(linger = shared.config.linger.name(), "EOF ignored");
        pending::<()>().await;
    }
    // EOF: nobody will answer our requests any more, nor hear the listens; let in-flight
    // requests finish (within the grace period), then tell the writer to finish.
    lock(&shared.pending).clear();
    shared.closing.send_replace(true);
    let grace = shared.config.eof_grace;
    let drained =
        tokio::time::timeout(grace, async { while tasks.join_next().await.is_some() {} }).await;
    if drained.is_err() {
        tracing::debug!("EOF: abandoning requests still in flight");
        tasks.abort_all();
        while tasks.join_next().await.is_some() {}
    }
    let _ = shared.out.send(Out::Finish);
    ReadEnd::Eof
}

fn handle_line(shared: &Arc<Shared>, raw: &[u8], tasks: &mut JoinSet<()>) -> Flow {
    let line = raw.trim_ascii();
    if line.is_empty() {
        return Flow::Continue;
    }
    let msg: Value = match serde_json::from_slice(line) {
        Ok(v) => v,
        Err(e) => {
            tracing::debug!(error = %e, "parse error");
            shared.respond_error(
                &Value::Null,
                &RpcError::new(codes::PARSE_ERROR, format!("Parse error: {e}")),
            );
            return Flow::Continue;
        }
    };
    let Value::Object(obj) = msg else {
        let what = if msg.is_array() {
            "batches are not supported"
        } else {
            "a JSON-RPC message must be an object"
        };
        shared.respond_error(&Value::Null, &RpcError::new(codes::INVALID_REQUEST, what));
        return Flow::Continue;
    };
    let method = obj.get("method").and_then(Value::as_str).map(str::to_owned);
    let id = obj.get("id").cloned();
    match (method, id) {
        (Some(method), Some(id)) => {
            let params = obj.get("params").cloned().unwrap_or(Value::Null);
            handle_request(shared, method, params, id, tasks)
        }
        (Some(method), None) => {
            handle_notification(shared, &method, obj.get("params").unwrap_or(&Value::Null));
            Flow::Continue
        }
        (None, Some(id)) if obj.contains_key("result") || obj.contains_key("error") => {
            handle_response(shared, id, &obj);
            Flow::Continue
        }
        (None, id) => {
            shared.respond_error(
                &id.unwrap_or(Value::Null),
                &RpcError::new(
                    codes::INVALID_REQUEST,
                    "not a request, notification or response",
                ),
            );
            Flow::Continue
        }
    }
}

fn handle_request(
    shared: &Arc<Shared>,
    method: String,
    params: Value,
    id: Value,
    tasks: &mut JoinSet<()>,
) -> Flow {
    shared.config.served.count(&method);
    let modern = shared.is_modern(&method, &params);
    if !modern {
        {
            let mut s = shared.session();
            if !s.initialized && method != "initialize" && method != "ping" {
                tracing::warn!(%method, "request before notifications/initialized (answered anyway)");
                s.early_requests.push(method.clone());
            }
        }
        if method == modern::DISCOVER && shared.config.era == Era::Legacy {
            match shared.config.probe {
                // Answered below like any unknown method.
                Probe::Error => {}
                Probe::Silent => {
                    tracing::debug!("--probe silent: server/discover left unanswered");
                    return Flow::Continue;
                }
                Probe::Die => {
                    tracing::debug!("--probe die: dying on server/discover");
                    return Flow::Die;
                }
                Probe::Garbage => {
                    shared.respond(&id, json!({}));
                    return Flow::Continue;
                }
            }
        }
        if method == "initialize" {
            // Inline, so that the session is set up before the next line is read.
            answer_initialize(shared, &params, &id);
            return Flow::Continue;
        }
    }
    if method == "tools/call" && shared.config.chaos {
        let args = params.get("arguments").unwrap_or(&Value::Null);
        match params.get("name").and_then(Value::as_str) {
            Some("die") => return Flow::Die,
            Some("hang") => return Flow::Hang,
            Some("sigkill") if shared.config.own_process => {
                tracing::debug!("sigkill: killing this process");
                let _ = nix::sys::signal::raise(nix::sys::signal::Signal::SIGKILL);
                return Flow::Die;
            }
            Some("sigkill") => return Flow::Die,
            Some("silent") => {
                let ms = args.get("ms").and_then(Value::as_u64).unwrap_or(1000);
                let pause = Duration::from_millis(ms);
                let _ = shared.out.send(Out::Pause(pause));
                return Flow::Silent(pause);
            }
            Some("close_stdout") => {
                tracing::debug!("close_stdout: closing the output, staying alive");
                let _ = shared.out.send(Out::Close);
                return Flow::Continue;
            }
            _ => {}
        }
    }
    let key = id.to_string();
    let serial = {
        let mut inf = lock(&shared.inflight);
        inf.next_serial += 1;
        let serial = inf.next_serial;
        inf.by_id.insert(key.clone(), (serial, None));
        serial
    };
    let sh = Arc::clone(shared);
    let task_key = key.clone();
    let handle = tasks.spawn(async move {
        let handled = if modern {
            modern::dispatch(&sh, &method, params, &id).await
        } else {
            dispatch(&sh, &method, params, &id)
                .await
                .map(|reply| match reply {
                    Reply::Result(r) => Reply::Result(modern::legacy_hints(&sh.config, &method, r)),
                    other => other,
                })
        };
        finish(&sh, &task_key, serial, &id, handled);
        if method == "tools/call" {
            after_answer(&sh);
        }
    });
    if let Some(entry) = lock(&shared.inflight).by_id.get_mut(&key)
        && entry.0 == serial
    {
        entry.1 = Some(handle);
    }
    Flow::Continue
}

/// Send the answer of a finished request unless it was cancelled.
fn finish(shared: &Shared, key: &str, serial: u64, id: &Value, handled: Handled) {
    {
        let mut inf = lock(&shared.inflight);
        if inf.cancelled.remove(&serial) {
            return;
        }
        if inf.by_id.get(key).is_some_and(|e| e.0 == serial) {
            inf.by_id.remove(key);
        }
    }
    match handled {
        Ok(Reply::Result(result)) => shared.respond(id, result),
        Ok(Reply::Answered) => {}
        Ok(Reply::ResultThenExit(result, delay)) => {
            shared.respond(id, result);
            let out = shared.out.clone();
            tokio::spawn(async move {
                tokio::time::sleep(delay).await;
                let _ = out.send(Out::Exit);
            });
        }
        Err(e) => shared.respond_error(id, &e),
    }
}

/// What a lingering server does once it answered a `tools/call`.
fn after_answer(shared: &Shared) {
    match shared.config.linger {
        Linger::StallMidFrame => {
            let _ = shared.out.send(Out::Partial(
                r#"{"jsonrpc":"2.0","method":"notifications/mes"#.into(),
            ));
            let _ = shared.out.send(Out::Stop);
        }
        Linger::CloseStdout => {
            let _ = shared.out.send(Out::Close);
        }
        Linger::No | Linger::IgnoreEof | Linger::IgnoreTerm => {}
    }
}

fn handle_notification(shared: &Shared, method: &str, params: &Value) {
    shared.session().notifications.push(method.to_owned());
    match method {
        "notifications/initialized" => {
            let mut s = shared.session();
            s.initialized = true;
            s.initialized_count += 1;
        }
        "notifications/cancelled" => {
            let Some(request_id) = params.get("requestId") else {
                tracing::debug!("notifications/cancelled without requestId");
                return;
            };
            shared.session().cancelled.push(request_id.clone());
            let mut inf = lock(&shared.inflight);
            if let Some((serial, handle)) = inf.by_id.remove(&request_id.to_string()) {
                inf.cancelled.insert(serial);
                if let Some(h) = handle {
                    h.abort();
                }
                tracing::debug!(%request_id, "request cancelled by the client");
            }
        }
        "notifications/roots/list_changed" => shared.session().roots_list_changed += 1,
        _ => tracing::debug!(method, "notification ignored"),
    }
}

fn handle_response(shared: &Shared, id: Value, obj: &Map<String, Value>) {
    let waiter = id.as_str().and_then(|k| lock(&shared.pending).remove(k));
    let Some(waiter) = waiter else {
        tracing::warn!(%id, "response to a request this server did not send (or no longer awaits)");
        shared.session().unknown_responses.push(id);
        return;
    };
    let answer = match obj.get("error") {
        Some(e) => Err(RpcError::from_json(e)),
        None => Ok(obj.get("result").cloned().unwrap_or(Value::Null)),
    };
    let _ = waiter.send(answer);
}

/// Answer `initialize` as [`ServerConfig::handshake`] says.
fn answer_initialize(shared: &Shared, params: &Value, id: &Value) {
    let result = initialize(shared, params);
    match shared.config.handshake {
        Handshake::Normal => shared.respond(id, result),
        Handshake::Error => shared.respond_error(
            id,
            &RpcError::new(
                codes::INTERNAL_ERROR,
                "initialize refused on purpose (--handshake error)",
            ),
        ),
        Handshake::Twice => {
            let mut second = result.clone();
            let other = SUPPORTED_PROTOCOL_VERSIONS
                .iter()
                .find(|v| result["protocolVersion"] != **v)
                .copied()
                .unwrap_or(LATEST_PROTOCOL_VERSION);
            second["protocolVersion"] = json!(other);
            second["serverInfo"]["name"] = json!(format!("{} (second answer)", shared.config.name));
            shared.respond(id, result);
            shared.respond(id, second);
        }
        Handshake::EarlyRequests => {
            let early = [
                ("ping", json!({})),
                ("roots/list", json!({})),
                (
                    "sampling/createMessage",
                    json!({"messages": [{"role": "user", "content": {"type": "text", "text": "early"}}], "maxTokens": 10}),
                ),
                (
                    "elicitation/create",
                    json!({"message": "early", "requestedSchema": {"type": "object", "properties": {}}}),
                ),
            ];
            for (n, (method, params)) in early.into_iter().enumerate() {
                let id = format!("early-{}", n + 1);
                shared
                    .send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
            }
            shared.notify(
                "notifications/message",
                json!({"level": "info", "logger": crate::LOGGER_NAME, "data": "before the initialize answer"}),
            );
            shared.respond(id, result);
        }
    }
}

/// The server's capabilities (the same in both eras).
pub(crate) fn capabilities() -> Value {
    json!({
        "tools": {"listChanged": true},
        "resources": {"subscribe": true, "listChanged": true},
        "prompts": {"listChanged": true},
        "logging": {},
        "completions": {},
    })
}

fn initialize(shared: &Shared, params: &Value) -> Value {
    let config = &shared.config;
    let asked = params.get("protocolVersion");
    let version = match (&config.version_override, asked.and_then(Value::as_str)) {
        (Some(forced), _) => forced.clone(),
        (None, Some(v)) if SUPPORTED_PROTOCOL_VERSIONS.contains(&v) => v.to_owned(),
        (None, _) => LATEST_PROTOCOL_VERSION.to_owned(),
    };
    {
        let mut s = shared.session();
        s.initialize_count += 1;
        s.client_protocol_version = asked.cloned();
        s.protocol_version = Some(version.clone());
        s.client_info = params.get("clientInfo").cloned();
        s.client_capabilities = params.get("capabilities").cloned();
    }
    let mut result = json!({
        "protocolVersion": version,
        "capabilities": capabilities(),
        "serverInfo": {"name": config.name, "version": config.server_version},
    });
    if let Some(instructions) = &config.instructions {
        result["instructions"] = json!(instructions);
    }
    result
}

/// The handshake era's methods (the modern era's [`modern::dispatch`] ends up here too).
pub(crate) async fn dispatch(shared: &Shared, method: &str, params: Value, id: &Value) -> Handled {
    let ok = |v: Value| Ok(Reply::Result(v));
    match method {
        "ping" => ok(json!({})),
        "tools/list" => ok(catalog::list_tools(&shared.config, &params, false)?),
        "tools/call" => tools::call(shared, &params, id).await,
        "resources/list" => ok(catalog::list_resources()),
        "resources/templates/list" => ok(catalog::list_resource_templates()),
        "resources/read" => ok(catalog::read_resource(&params)?),
        "resources/subscribe" | "resources/unsubscribe" => {
            let uri = params
                .get("uri")
                .and_then(Value::as_str)
                .ok_or_else(|| RpcError::invalid_params("missing uri"))?;
            let mut s = shared.session();
            if method == "resources/subscribe" {
                s.subscriptions.insert(uri.to_owned());
            } else {
                s.subscriptions.remove(uri);
            }
            ok(json!({}))
        }
        "prompts/list" => ok(catalog::list_prompts()),
        "prompts/get" => ok(catalog::get_prompt(&params)?),
        "completion/complete" => ok(catalog::complete(&params)),
        "logging/setLevel" => {
            let level = params
                .get("level")
                .and_then(Value::as_str)
                .ok_or_else(|| RpcError::invalid_params("missing level"))?;
            if catalog::level_rank(level).is_none() {
                return Err(RpcError::invalid_params(format!(
                    "unknown logging level: {level}"
                )));
            }
            shared.session().log_level = Some(level.to_owned());
            ok(json!({}))
        }
        _ => Err(RpcError::new(
            codes::METHOD_NOT_FOUND,
            format!("Method not found: {method}"),
        )),
    }
}
