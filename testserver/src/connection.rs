//! One connection's state, shared by its reader and its request tasks: what the server
//! recorded about the session, the queue to the writer, the requests in flight (to cancel them),
//! and the server's own requests to the client awaiting an answer.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::AbortHandle;

use crate::bus::ListenBus;
use crate::catalog;
use crate::config::{Era, ServerConfig};
use crate::protocol::{LATEST_PROTOCOL_VERSION, codes, is_modern_request};
use crate::rpc::RpcError;

/// What goes to the writer.
pub(crate) enum Out {
    Line(String),
    /// A line of raw bytes (not necessarily UTF-8); the newline is added.
    Bytes(Vec<u8>),
    /// [`crate::Linger::StallMidFrame`]: these bytes without a newline.
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
    /// [`crate::Linger::CloseStdout`]: flush, shut the stream down, drop it, write nothing more.
    Close,
    /// `exit_after` fired: flush and end with [`crate::Ended::Exited`].
    Exit,
    /// The reader hit EOF and in-flight work is over: flush and end with [`crate::Ended::Eof`].
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
    /// connections when [`crate::serve_with`] was given one).
    pub(crate) listen: ListenBus,
    /// Set when the client's stream ended: the open listens end without a response.
    closing: watch::Sender<bool>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Shared {
    /// The state of a new connection served as `config` says, with the [`ListenBus`] its
    /// tools publish to (`None`: a bus of its own), and what its writer reads.
    pub(crate) fn new(
        config: ServerConfig,
        bus: Option<ListenBus>,
    ) -> (Arc<Shared>, mpsc::UnboundedReceiver<Out>) {
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
        (shared, out_rx)
    }

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

    /// Queue anything for the writer (a pause, a stop, the end).
    pub(crate) fn queue(&self, out: Out) {
        let _ = self.out.send(out);
    }

    /// Queue [`Out::Exit`] once `delay` has passed (`exit_after`).
    pub(crate) fn exit_after(&self, delay: Duration) {
        let out = self.out.clone();
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            let _ = out.send(Out::Exit);
        });
    }

    /// Records a request in flight under `key` (its id, serialized): its serial.
    pub(crate) fn start_request(&self, key: &str) -> u64 {
        let mut inf = lock(&self.inflight);
        inf.next_serial += 1;
        let serial = inf.next_serial;
        inf.by_id.insert(key.to_owned(), (serial, None));
        serial
    }

    /// Keeps how to abort the task of the request `serial`, if it is still the one in flight
    /// under `key`.
    pub(crate) fn track_request(&self, key: &str, serial: u64, task: AbortHandle) {
        if let Some(entry) = lock(&self.inflight).by_id.get_mut(key)
            && entry.0 == serial
        {
            entry.1 = Some(task);
        }
    }

    /// Forgets the finished request `serial`: whether it is to be answered (not if the client
    /// cancelled it).
    pub(crate) fn end_request(&self, key: &str, serial: u64) -> bool {
        let mut inf = lock(&self.inflight);
        if inf.cancelled.remove(&serial) {
            return false;
        }
        if inf.by_id.get(key).is_some_and(|e| e.0 == serial) {
            inf.by_id.remove(key);
        }
        true
    }

    /// Cancels the request in flight under `key` (the client's `notifications/cancelled`): its
    /// task is aborted and it is never answered. Whether one was in flight.
    pub(crate) fn cancel_request(&self, key: &str) -> bool {
        let mut inf = lock(&self.inflight);
        let Some((serial, task)) = inf.by_id.remove(key) else {
            return false;
        };
        inf.cancelled.insert(serial);
        if let Some(task) = task {
            task.abort();
        }
        true
    }

    /// The waiter of our request `id` to the client, taken (`None`: not ours, or no longer
    /// awaited).
    pub(crate) fn take_waiter(&self, id: &str) -> Option<oneshot::Sender<Result<Value, RpcError>>> {
        lock(&self.pending).remove(id)
    }

    /// The client's stream ended: nobody will answer our requests any more, and the open
    /// listens end.
    pub(crate) fn close(&self) {
        lock(&self.pending).clear();
        self.closing.send_replace(true);
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

    pub(crate) fn respond_error(&self, id: &Value, err: &RpcError) {
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
            Era::Dual => is_modern_request(method, params),
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
