//! The connection loop: reading, dispatching to tasks, writing, chaos endings.

use std::future::pending;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, BufWriter};
use tokio::sync::mpsc;
use tokio::task::JoinSet;

use crate::bus::ListenBus;
use crate::config::{Era, Handshake, Linger, Probe, ServerConfig};
use crate::connection::{Out, Shared};
use crate::methods::dispatch;
use crate::modern;
use crate::protocol::{
    DISCOVER, LATEST_PROTOCOL_VERSION, LOGGER_NAME, SUPPORTED_PROTOCOL_VERSIONS, codes,
};
use crate::rpc::{Handled, Reply, RpcError};

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
    let (shared, out_rx) = Shared::new(config, bus);
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
                shared.queue(Out::Stop);
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
    shared.close();
    let grace = shared.config.eof_grace;
    let drained =
        tokio::time::timeout(grace, async { while tasks.join_next().await.is_some() {} }).await;
    if drained.is_err() {
        tracing::debug!("EOF: abandoning requests still in flight");
        tasks.abort_all();
        while tasks.join_next().await.is_some() {}
    }
    shared.queue(Out::Finish);
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
        if method == DISCOVER && shared.config.era == Era::Legacy {
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
                shared.queue(Out::Pause(pause));
                return Flow::Silent(pause);
            }
            Some("close_stdout") => {
                tracing::debug!("close_stdout: closing the output, staying alive");
                shared.queue(Out::Close);
                return Flow::Continue;
            }
            _ => {}
        }
    }
    let key = id.to_string();
    let serial = shared.start_request(&key);
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
    shared.track_request(&key, serial, handle);
    Flow::Continue
}

/// Send the answer of a finished request unless it was cancelled.
fn finish(shared: &Shared, key: &str, serial: u64, id: &Value, handled: Handled) {
    if !shared.end_request(key, serial) {
        return;
    }
    match handled {
        Ok(Reply::Result(result)) => shared.respond(id, result),
        Ok(Reply::Answered) => {}
        Ok(Reply::ResultThenExit(result, delay)) => {
            shared.respond(id, result);
            shared.exit_after(delay);
        }
        Err(e) => shared.respond_error(id, &e),
    }
}

/// What a lingering server does once it answered a `tools/call`.
fn after_answer(shared: &Shared) {
    match shared.config.linger {
        Linger::StallMidFrame => {
            shared.queue(Out::Partial(
                r#"{"jsonrpc":"2.0","method":"notifications/mes"#.into(),
            ));
            shared.queue(Out::Stop);
        }
        Linger::CloseStdout => {
            shared.queue(Out::Close);
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
            if shared.cancel_request(&request_id.to_string()) {
                tracing::debug!(%request_id, "request cancelled by the client");
            }
        }
        "notifications/roots/list_changed" => shared.session().roots_list_changed += 1,
        _ => tracing::debug!(method, "notification ignored"),
    }
}

fn handle_response(shared: &Shared, id: Value, obj: &Map<String, Value>) {
    let waiter = id.as_str().and_then(|k| shared.take_waiter(k));
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
                json!({"level": "info", "logger": LOGGER_NAME, "data": "before the initialize answer"}),
            );
            shared.respond(id, result);
        }
    }
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
        "capabilities": crate::methods::capabilities_for(config),
        "serverInfo": {"name": config.name, "version": config.server_version},
    });
    if let Some(instructions) = &config.instructions {
        result["instructions"] = json!(instructions);
    }
    result
}
