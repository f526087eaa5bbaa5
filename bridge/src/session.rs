//! One host's session: the host's requests answered (each exactly once) through the upstream
//! client, the upstream's requests and notifications handed to the host.
//!
//! The session is one task that owns every decision about the host: which requests are in
//! flight, which are answered, which server requests wait for the host. Calls run on their
//! own tasks and report back to it ([`Event::Answered`]); an answer is written only if the
//! call is still in the session's table, so a call the host cancelled is never answered and
//! no call is answered twice. When the host is gone, nothing more is written: every call is
//! aborted, every server request waiting for the host is failed, and the client is stopped.

use std::collections::{HashMap, VecDeque};

use mcp_runtime::{
    Client, ClientBuilder, Error, LoggingLevel, Progress, Provides, RequestOptions, Root, RpcError,
    codes,
};
use serde_json::{Map, Value, json};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::AbortHandle;

use crate::forward;
use crate::handler::{ForwardingHandler, ServerRequest};
use crate::report::{BridgeReport, Ended};
use crate::wire::{self, HostMessage};
use crate::{BridgeOptions, HostInfo, MakeUpstream};

/// The handshake revisions the front answers `initialize` with: the host's own when it is one
/// of these, else the newest.
pub const HANDSHAKE_VERSIONS: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

/// What reaches the session from the host's link.
#[derive(Debug)]
pub(crate) enum HostInput {
    /// One message.
    Message(HostMessage),
    /// A line longer than the frame bound (skipped; answered with an error under no id).
    Oversized {
        /// Bytes seen before giving up on it.
        seen: usize,
    },
    /// The host closed its side (or reading it failed).
    Closed,
}

/// What reaches the session from its own tasks.
pub(crate) enum Event {
    /// The upstream connected, or could not.
    Connected(Box<Result<Client, Error>>),
    /// A call ended: its answer, written if the call is still in flight.
    Answered {
        /// The call's key (its host id, as JSON text).
        key: String,
        /// The answer frame.
        frame: Vec<u8>,
    },
    /// The upstream asks the host something.
    ServerRequest(ServerRequest),
    /// A server request ended without the host's answer (cancelled, lost, timed out).
    ServerRequestEnded {
        /// Its id on the host's side.
        id: u64,
    },
    /// Writing to the host failed: it is gone.
    HostWriteFailed,
}

enum Phase {
    /// Before the host's `initialize`.
    AwaitingInit,
    /// `initialize` received (its id), the upstream connecting.
    Connecting(Value),
    /// Forwarding.
    Ready,
}

struct Call {
    abort: AbortHandle,
}

/// The session's state (see the module doc).
pub(crate) struct Session {
    options: BridgeOptions,
    make: Option<MakeUpstream>,
    phase: Phase,
    client: Option<Client>,
    /// Host requests in flight, by key.
    calls: HashMap<String, Call>,
    /// Host requests that came while connecting, in order.
    held: VecDeque<(Value, String, Option<Value>)>,
    /// Server requests waiting for the host's answer, by the id the host sees.
    to_host: HashMap<u64, oneshot::Sender<Result<Value, RpcError>>>,
    out: mpsc::Sender<Vec<u8>>,
    events_tx: mpsc::UnboundedSender<Event>,
    roots: Option<watch::Sender<Vec<Root>>>,
    background: Vec<AbortHandle>,
    /// Which lists' changes the upstream itself told the host of.
    told: forward::Told,
    report: BridgeReport,
}

impl Session {
    pub(crate) fn new(
        options: BridgeOptions,
        make: MakeUpstream,
        out: mpsc::Sender<Vec<u8>>,
        events_tx: mpsc::UnboundedSender<Event>,
    ) -> Self {
        Session {
            options,
            make: Some(make),
            phase: Phase::AwaitingInit,
            client: None,
            calls: HashMap::new(),
            held: VecDeque::new(),
            to_host: HashMap::new(),
            out,
            events_tx,
            roots: None,
            background: Vec::new(),
            told: forward::Told::default(),
            report: BridgeReport::default(),
        }
    }

    /// Runs until the host is gone or `shutdown` resolves; then stops the upstream (its child
    /// processes reaped within the options' bound) and says what happened.
    pub(crate) async fn run(
        mut self,
        mut host: mpsc::Receiver<HostInput>,
        mut events: mpsc::UnboundedReceiver<Event>,
        shutdown: impl std::future::Future<Output = ()>,
    ) -> BridgeReport {
        tokio::pin!(shutdown);
        let ended = loop {
            tokio::select! {
                biased;
                () = &mut shutdown => break Ended::Shutdown,
                Some(event) = events.recv() => {
                    if let Some(ended) = self.on_event(event).await {
                        break ended;
                    }
                }
                input = host.recv() => match input {
                    Some(HostInput::Message(m)) => self.on_host(m).await,
                    Some(HostInput::Oversized { seen }) => {
                        self.report.invalid += 1;
                        let e = RpcError {
                            code: codes::INVALID_REQUEST,
                            message: format!(
                                "message too large: more than {} bytes (read {seen})",
                                self.options.max_frame_bytes
                            ),
                            data: None,
                        };
                        self.write(wire::error(&Value::Null, &e)).await;
                    }
                    Some(HostInput::Closed) | None => break Ended::HostClosed,
                },
            }
        };
        self.finish(ended).await
    }

    async fn finish(mut self, ended: Ended) -> BridgeReport {
        // Nothing more goes to the host: calls aborted unanswered (the host is gone or
        // leaving), server requests failed by dropping their reply.
        for (_, call) in self.calls.drain() {
            call.abort.abort();
        }
        self.to_host.clear();
        for task in self.background.drain(..) {
            task.abort();
        }
        if let Some(client) = self.client.take() {
            let bound = self.options.close_bound;
            let closed = tokio::time::timeout(bound, async {
                client.stop().await;
                client.closed().await;
            })
            .await;
            self.report.upstream_closed = closed.is_ok();
        } else {
            self.report.upstream_closed = true;
        }
        self.report.ended = ended;
        self.report
    }

    /// Writes a frame to the host (waiting for room: a host that does not read slows the
    /// bridge down, nothing grows).
    async fn write(&mut self, frame: Vec<u8>) {
        if self.out.send(frame).await.is_err() {
            let _ = self.events_tx.send(Event::HostWriteFailed);
        }
    }

    async fn answer(&mut self, id: &Value, outcome: Result<Value, RpcError>) {
        let frame = match &outcome {
            Ok(v) => wire::result(id, v),
            Err(e) => wire::error(id, e),
        };
        self.write(frame).await;
    }

    async fn on_event(&mut self, event: Event) -> Option<Ended> {
        match event {
            Event::Connected(result) => self.on_connected(*result).await,
            Event::Answered { key, frame } => {
                if self.calls.remove(&key).is_some() {
                    self.report.answered += 1;
                    self.write(frame).await;
                }
            }
            Event::ServerRequest(request) => {
                self.report.server_requests += 1;
                let id = Value::from(request.id);
                let frame = wire::request(&id, &request.method, Some(&request.params));
                self.to_host.insert(request.id, request.reply);
                self.write(frame).await;
            }
            Event::ServerRequestEnded { id } => {
                if self.to_host.remove(&id).is_some() {
                    self.report.server_requests_cancelled += 1;
                    let params = json!({
                        "requestId": id,
                        "reason": "the server no longer needs the answer",
                    });
                    self.write(wire::notification("notifications/cancelled", Some(&params)))
                        .await;
                }
            }
            Event::HostWriteFailed => return Some(Ended::HostClosed),
        }
        None
    }

    async fn on_host(&mut self, message: HostMessage) {
        match message {
            HostMessage::Request { id, method, params } => {
                self.on_request(id, method, params).await
            }
            HostMessage::Notification { method, params } => self.on_notification(method, params),
            HostMessage::Response { id, outcome } => {
                let slot = id.as_u64().and_then(|n| self.to_host.remove(&n));
                if let Some(reply) = slot {
                    let _ = reply.send(outcome);
                }
            }
            HostMessage::Invalid { id, error } => {
                self.report.invalid += 1;
                self.write(wire::error(&id, &error)).await;
            }
        }
    }

    async fn on_request(&mut self, id: Value, method: String, params: Option<Value>) {
        self.report.requests += 1;
        if method == "ping" {
            return self.answer(&id, Ok(json!({}))).await;
        }
        if method == "initialize" {
            return self.on_initialize(id, params).await;
        }
        match self.phase {
            Phase::AwaitingInit => {
                let e = if method == "server/discover" {
                    // A legacy front: a dual-era host falls back to `initialize`.
                    rpc(codes::METHOD_NOT_FOUND, "method not found: server/discover")
                } else {
                    rpc(
                        codes::INVALID_REQUEST,
                        "the session is not initialized: send initialize first",
                    )
                };
                self.answer(&id, Err(e)).await;
            }
            Phase::Connecting(_) => {
                if self.held.len() >= self.options.max_in_flight {
                    let e = too_many(self.options.max_in_flight);
                    self.answer(&id, Err(e)).await;
                } else {
                    self.held.push_back((id, method, params));
                }
            }
            Phase::Ready => self.start_call(id, method, params).await,
        }
    }

    async fn on_initialize(&mut self, id: Value, params: Option<Value>) {
        if !matches!(self.phase, Phase::AwaitingInit) {
            let e = rpc(codes::INVALID_REQUEST, "the session is already initialized");
            return self.answer(&id, Err(e)).await;
        }
        let Some(make) = self.make.take() else {
            let e = rpc(codes::INTERNAL_ERROR, "the upstream could not be started");
            return self.answer(&id, Err(e)).await;
        };
        let params = params.unwrap_or_default();
        let host = host_info(&params);
        let (roots_tx, roots_rx) = watch::channel(Vec::new());
        let roots_changes = host.roots_list_changed.then_some(roots_rx);
        if roots_changes.is_some() {
            self.roots = Some(roots_tx);
        }
        let handler = ForwardingHandler::new(
            host.capabilities.clone(),
            self.events_tx.clone(),
            self.options.server_request_timeout,
            roots_changes,
        );
        let builder: ClientBuilder = make(&host)
            .handler(handler)
            .wait_for_ready(self.options.wait_for_ready);
        self.told = forward::Told::default();
        let task = forward::notifications(&builder, self.out.clone(), self.told.clone());
        self.background.push(task);
        let events = self.events_tx.clone();
        tokio::spawn(async move {
            let result = builder.connect().await;
            let _ = events.send(Event::Connected(Box::new(result)));
        });
        self.phase = Phase::Connecting(id);
        self.report.host = Some(host);
    }

    async fn on_connected(&mut self, result: Result<Client, Error>) {
        let Phase::Connecting(init_id) = std::mem::replace(&mut self.phase, Phase::AwaitingInit)
        else {
            return;
        };
        let client = match result {
            Ok(client) => client,
            Err(e) => {
                let e = rpc(
                    codes::SERVER_ERROR,
                    &format!(
                        "the bridge could not reach its server: {e}{}",
                        self.hint(&e)
                    ),
                );
                self.answer(&init_id, Err(e.clone())).await;
                while let Some((id, _, _)) = self.held.pop_front() {
                    self.answer(&id, Err(e.clone())).await;
                }
                return;
            }
        };
        let host_version = self
            .report
            .host
            .as_ref()
            .map(|h| h.protocol_version.clone())
            .unwrap_or_default();
        let result = initialize_result(&client, &host_version);
        self.answer(&init_id, Ok(result)).await;
        let task = forward::list_changes(&client, self.out.clone(), self.told.clone());
        self.background.push(task);
        self.client = Some(client);
        self.phase = Phase::Ready;
        while let Some((id, method, params)) = self.held.pop_front() {
            self.start_call(id, method, params).await;
        }
    }

    fn hint(&self, e: &Error) -> String {
        match (e, &self.options.login_hint) {
            (Error::Unauthorized { .. }, Some(hint)) => format!(" ({hint})"),
            (Error::Connect(c), Some(hint)) if c.to_string().contains("authoriz") => {
                format!(" ({hint})")
            }
            _ => String::new(),
        }
    }

    async fn start_call(&mut self, id: Value, method: String, params: Option<Value>) {
        let key = id.to_string();
        if self.calls.contains_key(&key) {
            let e = rpc(
                codes::INVALID_REQUEST,
                "a request with this id is still in flight",
            );
            return self.answer(&id, Err(e)).await;
        }
        if self.calls.len() >= self.options.max_in_flight {
            let e = too_many(self.options.max_in_flight);
            return self.answer(&id, Err(e)).await;
        }
        let Some(client) = self.client.clone() else {
            return;
        };
        let (params, token) = take_progress_token(params);
        let out = self.out.clone();
        let events = self.events_tx.clone();
        let timeout = self.options.call_timeout;
        let hint = self.options.login_hint.clone();
        let task_key = key.clone();
        let task = tokio::spawn(async move {
            let outcome = call(&client, &method, params, token, out, timeout).await;
            let frame = match outcome {
                Ok(v) => wire::result(&id, &v),
                Err(e) => wire::error(&id, &to_rpc(&e, hint.as_deref())),
            };
            let _ = events.send(Event::Answered {
                key: task_key,
                frame,
            });
        });
        self.calls.insert(
            key,
            Call {
                abort: task.abort_handle(),
            },
        );
    }

    fn on_notification(&mut self, method: String, params: Option<Value>) {
        match method.as_str() {
            "notifications/initialized" => {}
            "notifications/cancelled" => {
                let Some(request_id) = params.as_ref().and_then(|p| p.get("requestId")) else {
                    return;
                };
                let key = request_id.to_string();
                if let Some(call) = self.calls.remove(&key) {
                    // Dropping the call's future sends the upstream its cancellation.
                    call.abort.abort();
                    self.report.cancelled += 1;
                } else {
                    self.held.retain(|(id, _, _)| id != request_id);
                }
            }
            "notifications/roots/list_changed" => {
                if let Some(roots) = &self.roots {
                    roots.send_modify(|_| {});
                }
            }
            _ => {
                // Anything else (progress of a server request, extensions' notifications)
                // goes to the upstream as sent.
                if let Some(client) = self.client.clone() {
                    tokio::spawn(async move {
                        let _ = client.notify(&method, params).await;
                    });
                }
            }
        }
    }
}

/// Runs one host request against the upstream.
async fn call(
    client: &Client,
    method: &str,
    params: Option<Value>,
    token: Option<Value>,
    out: mpsc::Sender<Vec<u8>>,
    timeout: std::time::Duration,
) -> Result<Value, Error> {
    match method {
        "logging/setLevel" => {
            let level = params
                .as_ref()
                .and_then(|p| p.get("level"))
                .cloned()
                .and_then(|l| serde_json::from_value::<LoggingLevel>(l).ok());
            let Some(level) = level else {
                return Err(invalid_params("logging/setLevel needs a valid level"));
            };
            client.set_logging_level(level).await.map(|()| json!({}))
        }
        "resources/subscribe" | "resources/unsubscribe" => {
            let Some(uri) = params
                .as_ref()
                .and_then(|p| p.get("uri"))
                .and_then(Value::as_str)
            else {
                return Err(invalid_params("a uri is needed"));
            };
            let done = if method == "resources/subscribe" {
                client.subscribe(uri).await
            } else {
                client.unsubscribe(uri).await
            };
            done.map(|()| json!({}))
        }
        _ => {
            let mut options = RequestOptions::new().timeout(timeout);
            if let Some(token) = token {
                options = options.on_progress(move |p: Progress| {
                    // A host that does not read loses progress, never an answer.
                    let _ = out.try_send(progress_frame(&token, &p));
                });
            }
            client.request_with(method, params, options).await
        }
    }
}

fn progress_frame(token: &Value, p: &Progress) -> Vec<u8> {
    let mut params = Map::new();
    params.insert("progressToken".into(), token.clone());
    params.insert("progress".into(), json!(p.progress));
    if let Some(total) = p.total {
        params.insert("total".into(), json!(total));
    }
    if let Some(message) = &p.message {
        params.insert("message".into(), json!(message));
    }
    wire::notification("notifications/progress", Some(&Value::Object(params)))
}

/// The params without the host's progress token (the client asks the upstream for progress
/// under its own), and that token.
fn take_progress_token(params: Option<Value>) -> (Option<Value>, Option<Value>) {
    let Some(Value::Object(mut p)) = params else {
        return (params, None);
    };
    let mut token = None;
    if let Some(Value::Object(meta)) = p.get_mut("_meta") {
        token = meta.remove("progressToken");
        if meta.is_empty() {
            p.remove("_meta");
        }
    }
    (Some(Value::Object(p)), token)
}

/// What the host declared in `initialize`.
fn host_info(params: &Value) -> HostInfo {
    let caps = params.get("capabilities").cloned().unwrap_or_default();
    let elicitation = caps.get("elicitation");
    let form = elicitation.is_some_and(|e| {
        e.as_object()
            .is_none_or(|o| o.is_empty() || o.contains_key("form"))
    });
    let url = elicitation.is_some_and(|e| e.get("url").is_some());
    let capabilities = Provides {
        sampling: caps.get("sampling").is_some(),
        roots: caps.get("roots").is_some(),
        elicitation: form || url,
        elicitation_url: url,
        ..Provides::default()
    };
    let text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or_default().to_owned();
    let info = params.get("clientInfo");
    let asked = text(params.get("protocolVersion"));
    let protocol_version = if HANDSHAKE_VERSIONS.contains(&asked.as_str()) {
        asked
    } else {
        HANDSHAKE_VERSIONS[HANDSHAKE_VERSIONS.len() - 1].to_owned()
    };
    HostInfo {
        name: text(info.and_then(|i| i.get("name"))),
        version: text(info.and_then(|i| i.get("version"))),
        protocol_version,
        roots_list_changed: caps
            .get("roots")
            .and_then(|r| r.get("listChanged"))
            .and_then(Value::as_bool)
            .unwrap_or(false),
        capabilities,
    }
}

/// The bridge's answer to the host's `initialize`: the upstream's server info, instructions
/// and capabilities (lists said to change: the bridge tells after a reconnect), in the
/// handshake revision agreed with the host.
fn initialize_result(client: &Client, version: &str) -> Value {
    let info = client.server_info();
    let mut caps = info
        .as_ref()
        .map(|i| i.capabilities.clone())
        .filter(Value::is_object)
        .unwrap_or_else(|| json!({}));
    if let Some(c) = caps.as_object_mut() {
        // Task-augmented requests and 2026-07-28 extensions are not forwarded (yet).
        c.remove("tasks");
        c.remove("extensions");
        for list in ["tools", "prompts", "resources"] {
            if let Some(Value::Object(l)) = c.get_mut(list) {
                l.insert("listChanged".into(), Value::Bool(true));
            } else if c.contains_key(list) {
                c.insert(list.into(), json!({"listChanged": true}));
            }
        }
    }
    let server_info = info
        .as_ref()
        .map(|i| i.server_info.clone())
        .filter(Value::is_object)
        .unwrap_or_else(|| json!({"name": "mcp-bridge", "version": env!("CARGO_PKG_VERSION")}));
    let mut result = json!({
        "protocolVersion": version,
        "capabilities": caps,
        "serverInfo": server_info,
    });
    if let Some(instructions) = info.and_then(|i| i.instructions) {
        result["instructions"] = Value::String(instructions);
    }
    result
}

fn rpc(code: i64, message: &str) -> RpcError {
    RpcError {
        code,
        message: message.to_owned(),
        data: None,
    }
}

fn too_many(max: usize) -> RpcError {
    rpc(
        codes::SERVER_ERROR,
        &format!("too many requests in flight through the bridge (at most {max})"),
    )
}

fn invalid_params(message: &str) -> Error {
    Error::Server {
        code: codes::INVALID_PARAMS,
        message: message.to_owned(),
        data: None,
    }
}

/// The host's error for a failed call: the upstream's own JSON-RPC error as it sent it; the
/// bridge's (timeout, upstream unavailable or lost, authorization) under the codes the SDKs
/// use for them (-32001 request timeout, -32000 connection), with the reason in words.
pub(crate) fn to_rpc(e: &Error, login_hint: Option<&str>) -> RpcError {
    match e {
        Error::Server {
            code,
            message,
            data,
        } => RpcError {
            code: *code,
            message: message.clone(),
            data: data.clone(),
        },
        Error::ResourceNotFound { code, message, .. } => rpc(*code, message),
        Error::MissingCapability { required, message } => RpcError {
            code: codes::MISSING_CAPABILITY,
            message: message.clone(),
            data: Some(json!({"requiredCapabilities": required})),
        },
        Error::Timeout { .. } => rpc(-32001, &format!("the bridge's server: {e}")),
        Error::Unauthorized { .. } => {
            let hint = login_hint.map(|h| format!(" ({h})")).unwrap_or_default();
            rpc(codes::SERVER_ERROR, &format!("{e}{hint}"))
        }
        Error::Unavailable { .. }
        | Error::ConnectionLost(_)
        | Error::SendFailed
        | Error::Backpressure { .. }
        | Error::Shutdown => rpc(codes::SERVER_ERROR, &format!("the bridge's server: {e}")),
        other => rpc(codes::INTERNAL_ERROR, &other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_token_is_taken_and_the_rest_of_meta_kept() {
        let (p, t) = take_progress_token(Some(
            json!({"name": "x", "_meta": {"progressToken": "h1", "traceparent": "00-ab"}}),
        ));
        assert_eq!(t, Some(json!("h1")));
        assert_eq!(
            p,
            Some(json!({"name": "x", "_meta": {"traceparent": "00-ab"}}))
        );
        let (p, t) = take_progress_token(Some(json!({"_meta": {"progressToken": 3}})));
        assert_eq!((p, t), (Some(json!({})), Some(json!(3))));
        assert_eq!(take_progress_token(None), (None, None));
    }

    #[test]
    fn the_host_capabilities_become_what_the_client_declares() {
        let h = host_info(&json!({
            "protocolVersion": "2025-06-18",
            "capabilities": {"sampling": {}, "elicitation": {}, "roots": {"listChanged": true}},
            "clientInfo": {"name": "host", "version": "1"}
        }));
        assert!(h.capabilities.sampling && h.capabilities.roots && h.capabilities.elicitation);
        assert!(!h.capabilities.elicitation_url);
        assert!(h.roots_list_changed);
        assert_eq!(h.protocol_version, "2025-06-18");
        let h = host_info(&json!({"protocolVersion": "2099-01-01",
            "capabilities": {"elicitation": {"url": {}}}}));
        assert!(h.capabilities.elicitation_url && h.capabilities.elicitation);
        assert!(!h.capabilities.sampling);
        assert_eq!(h.protocol_version, "2025-11-25");
    }

    #[test]
    fn upstream_errors_keep_their_code_and_bridge_errors_get_the_sdk_codes() {
        let e = to_rpc(
            &Error::Server {
                code: -32602,
                message: "bad".into(),
                data: None,
            },
            None,
        );
        assert_eq!((e.code, e.message.as_str()), (-32602, "bad"));
        let e = to_rpc(
            &Error::Timeout {
                after: std::time::Duration::from_secs(1),
            },
            None,
        );
        assert_eq!(e.code, -32001);
        let e = to_rpc(
            &Error::Unauthorized {
                reason: "no token".into(),
            },
            Some("run `mcpc --http https://x login`"),
        );
        assert!(
            e.message.contains("mcpc --http https://x login"),
            "{}",
            e.message
        );
    }
}
