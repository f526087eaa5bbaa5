//! The bridge's front, sans-IO: one host's session with `mcpc bridge`, decided by the table of
//! `spec/front.toml` (generated into [`table`]) and run by [`FrontCore`].
//!
//! The core owns every decision about what the host is owed and what the upstream is owed:
//! which host request is answered and with what (exactly once, never after the host cancelled
//! it, never after the host is gone), which upstream request waits for the host, until when,
//! and how it ends (the host's answer, or failed upstream and cancelled at the host). It reads
//! no clock (every event comes with `now`), does no IO and runs no task: the bridge
//! (`mcp-bridge`) feeds it events ([`FrontCore::handle`]) and carries out what it asks
//! ([`FrontCore::poll_output`]): frames to write, calls to start or drop, upstream requests
//! to answer, the upstream to connect or stop.

pub mod wire;

use std::collections::{BTreeMap, VecDeque};
use std::hash::{Hash, Hasher};
use std::time::Duration;

use serde_json::{Value, json};

use crate::codes;
use crate::listen::ListenFilter;
use crate::request::RpcError;

/// The generated table of the front (`spec/front.toml`): its states, events, rows and dispatch.
#[allow(missing_docs, clippy::all)]
pub mod table {
    use super::{
        CallAnswer, CallKey, HostNotification, HostRequest, HostResponse, Invalid, ServerRequest,
        ServerRequestId, UpstreamFailed, UpstreamNotification, UpstreamReady,
    };

    include!(concat!(env!("OUT_DIR"), "/front.rs"));
}

pub use table::{Event, EventKind, Fired, State};

/// A host request's key: its id as JSON text (`7`, `"a"`): two requests with the same key are
/// the same id to the host.
pub type CallKey = String;

/// An upstream request's id on the host's side (the bridge numbers them from 1).
pub type ServerRequestId = u64;

/// The protocol revision of the 2026-07-28 era.
pub const MODERN_VERSION: &str = "2026-07-28";

/// Whether a host request is of the 2026-07-28 era (`server/discover`, or the protocol version
/// in its `_meta`).
pub fn is_modern(request: &HostRequest) -> bool {
    request.method == "server/discover"
        || request
            .params
            .as_ref()
            .and_then(|p| p.get("_meta"))
            .and_then(|m| m.get("io.modelcontextprotocol/protocolVersion"))
            .is_some()
}

/// The bound on the JSON-RPC error code of the bridge's own failures: the SDKs' "connection
/// closed" code, used for an upstream that cannot be reached or was lost.
pub const UPSTREAM_ERROR: i64 = -32000;

/// A request from the host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostRequest {
    /// Its id as JSON text (the key of the call it starts).
    pub key: CallKey,
    /// Its id.
    pub id: Value,
    /// The method.
    pub method: String,
    /// The params, as sent.
    pub params: Option<Value>,
}

impl HostRequest {
    /// A request with this id, method and params.
    pub fn new(id: Value, method: impl Into<String>, params: Option<Value>) -> Self {
        HostRequest {
            key: id.to_string(),
            id,
            method: method.into(),
            params,
        }
    }
}

impl Hash for HostRequest {
    // Consistent with `Eq`; the params are left out of the hash.
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.key.hash(state);
        self.method.hash(state);
    }
}

/// A notification from the host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostNotification {
    /// The method.
    pub method: String,
    /// The params, as sent.
    pub params: Option<Value>,
}

impl HostNotification {
    /// The key of the request a `notifications/cancelled` names.
    fn cancelled_key(&self) -> Option<CallKey> {
        if self.method != "notifications/cancelled" {
            return None;
        }
        let id = self.params.as_ref()?.get("requestId")?;
        Some(id.to_string())
    }
}

impl Hash for HostNotification {
    // Consistent with `Eq`; the params are left out of the hash but for a cancellation's id.
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.method.hash(state);
        self.cancelled_key().hash(state);
    }
}

/// The host's answer to a request the bridge sent it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostResponse {
    /// The id it answers.
    pub id: Value,
    /// Its result or error.
    pub outcome: Result<Value, RpcError>,
}

impl Hash for HostResponse {
    // Consistent with `Eq`; the result is left out of the hash.
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.id.as_u64().hash(state);
        self.outcome.is_ok().hash(state);
    }
}

/// A line from the host that is no usable message, and the error that answers it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Invalid {
    /// The id to answer under (`null` when the line had none).
    pub id: Value,
    /// The error.
    pub error: RpcError,
}

impl Hash for Invalid {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.id.to_string().hash(state);
        self.error.hash(state);
    }
}

/// The upstream is connected: the answers to the host's `initialize` and `server/discover`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UpstreamReady {
    /// The `initialize` result for a handshake-era host.
    pub result: Value,
    /// The `server/discover` result for a 2026-07-28 host.
    pub discover: Value,
}

impl Hash for UpstreamReady {
    fn hash<H: Hasher>(&self, _state: &mut H) {}
}

/// The upstream could not connect.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct UpstreamFailed {
    /// Why, in words (never a secret).
    pub reason: String,
}

/// A forwarded call ended: the upstream's result or error (or the bridge's own error).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallAnswer {
    /// The call's key (the key of the host request that started it).
    pub key: CallKey,
    /// Its outcome.
    pub outcome: Result<Value, RpcError>,
}

impl Hash for CallAnswer {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.key.hash(state);
        self.outcome.is_ok().hash(state);
    }
}

/// A request of the upstream's for the host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerRequest {
    /// Its id on the host's side.
    pub id: ServerRequestId,
    /// The method.
    pub method: String,
    /// The params, as the upstream sent them.
    pub params: Value,
}

impl Hash for ServerRequest {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.id.hash(state);
        self.method.hash(state);
    }
}

/// A notification of the upstream's for the host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UpstreamNotification {
    /// The method.
    pub method: String,
    /// The params, as sent.
    pub params: Option<Value>,
}

impl Hash for UpstreamNotification {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.method.hash(state);
    }
}

/// What the core asks of the bridge, in order ([`FrontCore::poll_output`]).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FrontOutput {
    /// Write this frame to the host (a JSON-RPC message, no newline).
    Write(Vec<u8>),
    /// Connect the upstream client, declaring what this `initialize` request's params say.
    Connect(HostRequest),
    /// Start the host's call (its answer comes back as [`Event::CallAnswered`]).
    StartCall(HostRequest),
    /// Drop the call: it is never answered (its upstream request is cancelled by the drop).
    AbortCall(CallKey),
    /// Answer the upstream's request (`id` is its id on the host's side): the host's answer,
    /// or the bridge's error.
    ReplyServerRequest(HostResponse),
    /// Send the host's notification to the upstream.
    Notify(HostNotification),
    /// Tell the upstream client the host's roots changed.
    RootsChanged,
    /// Subscribe to these resources' updates (a 2026-07-28 host's listen asked for them).
    Subscribe(Vec<String>),
    /// The call `.0` (by the key of the request that started it) now answers the host's request
    /// `.1` (sent again with its input): its progress goes under that request's token.
    CallResumed(CallKey, HostRequest),
    /// Stop the upstream client: the session is closed.
    StopUpstream,
}

/// The bounds of a front session.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FrontConfig {
    /// Host requests in flight or held at once.
    pub max_calls: usize,
    /// How long an upstream request waits for the host's answer.
    pub host_answer_timeout: Duration,
}

impl Default for FrontConfig {
    fn default() -> Self {
        FrontConfig {
            max_calls: 1024,
            host_answer_timeout: Duration::from_secs(600),
        }
    }
}

/// An upstream request waiting for the host.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Waiting {
    /// Sent to the host (not held): as a request of the bridge's, or asked in a call's
    /// `input_required` answer (`via_round`).
    sent: bool,
    /// Asked in a call's `input_required` answer (a 2026-07-28 host), not as a request.
    via_round: bool,
    /// When the host's answer stops being waited for.
    due: Duration,
}

/// An `input_required` answer the host holds: the state it must send back, the upstream
/// requests it asked, and when the bridge stops waiting for it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Round {
    state: String,
    asked: Vec<ServerRequestId>,
    due: Duration,
}

/// A host call running upstream.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Flight {
    /// The host request waiting for the call's answer (its key and id); `None` while the host
    /// holds an `input_required` answer for it.
    waiter: Option<(CallKey, Value)>,
    /// Of a 2026-07-28 host: its answers carry `resultType`.
    modern: bool,
    /// It may ask for input (`tools/call`, `prompts/get`, `resources/read` of a 2026-07-28 host).
    can_ask: bool,
    /// Its result carries cache hints in the 2026-07-28 era (the four lists, `resources/read`).
    cacheable: bool,
    /// The round the host holds.
    round: Option<Round>,
    /// Upstream requests waiting for the next round.
    queued: VecDeque<ServerRequest>,
    /// The upstream's answer, come while the host held a round.
    outcome: Option<Result<Value, RpcError>>,
}

impl Hash for Flight {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.waiter.as_ref().map(|(k, _)| k).hash(state);
        self.modern.hash(state);
        self.can_ask.hash(state);
        self.cacheable.hash(state);
        self.round.hash(state);
        self.queued.hash(state);
        self.outcome.as_ref().map(Result::is_ok).hash(state);
    }
}

/// An open listen of a 2026-07-28 host.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Listen {
    id: Value,
    /// The notifications it asked for (read as the client reads its own listens' filters).
    filter: ListenFilter,
}

impl Hash for Listen {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.id.to_string().hash(state);
        self.filter.hash(state);
    }
}

/// The front's sans-IO core (see the module doc).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FrontCore {
    config: FrontConfig,
    state: State,
    now: Duration,
    /// The host's `initialize` while connecting.
    init: Option<HostRequest>,
    /// Host calls running upstream, by the key of the request that started each.
    in_flight: BTreeMap<CallKey, Flight>,
    /// The host speaks the 2026-07-28 era.
    modern: bool,
    /// The `server/discover` answer, once the upstream is connected.
    discover: Option<UpstreamReady>,
    /// The `requestState` of the next round.
    next_round: u64,
    /// Open listens of a 2026-07-28 host, by key.
    listens: BTreeMap<CallKey, Listen>,
    /// Host requests held while connecting.
    held: VecDeque<HostRequest>,
    /// Upstream requests waiting for the host.
    waiting: BTreeMap<ServerRequestId, Waiting>,
    /// Upstream requests held while connecting (also in `waiting`, not sent).
    held_server: VecDeque<ServerRequest>,
    out: VecDeque<FrontOutput>,
    #[cfg(feature = "checker")]
    mutant: Option<FrontMutant>,
}

/// Deliberate bugs of the front for the model checker's mutation self-test (feature `checker`
/// only): each must be caught by a property of the front's model.
#[cfg(feature = "checker")]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum FrontMutant {
    /// A call the host cancelled is answered anyway when it ends.
    AnswerCancelled,
    /// The requests held while connecting are forgotten when the upstream cannot connect.
    ForgetHeldOnFailure,
    /// Closing the session leaves the upstream's requests waiting for the host unanswered.
    NoReplyOnClose,
    /// An upstream request that comes while connecting is sent to the host at once, before
    /// its `initialize` is answered.
    ForwardBeforeInit,
    /// An upstream request the upstream gave up on is not cancelled at the host.
    SilentCancel,
    /// A duplicate id starts a second call under the same key (the first one's answer lost).
    DuplicateStarts,
    /// The host's answer is delivered but its request keeps waiting (answered twice at its
    /// deadline).
    AnswerKeepsWaiting,
    /// A 2026-07-28 host's input is taken, but the upstream requests it answers are forgotten
    /// (never replied).
    ResumeForgetsInputs,
    /// The upstream's answer to a call whose round the host holds is dropped (the call sent
    /// again then waits forever).
    ForgetParkedAnswer,
    /// A 2026-07-28 host is sent the upstream's request as a request of the bridge's.
    AskModernHostDirectly,
}

impl FrontCore {
    /// A session in `awaiting_init`.
    pub fn new(config: FrontConfig) -> Self {
        FrontCore {
            config,
            state: State::INITIAL,
            now: Duration::ZERO,
            init: None,
            in_flight: BTreeMap::new(),
            modern: false,
            discover: None,
            next_round: 0,
            listens: BTreeMap::new(),
            held: VecDeque::new(),
            waiting: BTreeMap::new(),
            held_server: VecDeque::new(),
            out: VecDeque::new(),
            #[cfg(feature = "checker")]
            mutant: None,
        }
    }

    /// The same session with a deliberate bug (the checker's mutation self-test).
    #[cfg(feature = "checker")]
    pub fn with_mutant(mut self, mutant: Option<FrontMutant>) -> Self {
        self.mutant = mutant;
        self
    }

    /// Runs `event` at time `now` (a duration since any fixed start) through the table; what
    /// it asks of the bridge is queued for [`FrontCore::poll_output`].
    pub fn handle(&mut self, now: Duration, event: Event) -> Fired {
        self.now = self.now.max(now);
        let fired = table::dispatch(self, self.state, event);
        self.state = fired.to;
        fired
    }

    /// The next thing the bridge must do, in order.
    pub fn poll_output(&mut self) -> Option<FrontOutput> {
        self.out.pop_front()
    }

    /// The earliest deadline: of an upstream request waiting for the host, or of a round the
    /// host holds.
    pub fn next_deadline(&self) -> Option<Duration> {
        let rounds = self
            .in_flight
            .values()
            .filter_map(|f| f.round.as_ref().map(|r| r.due));
        self.waiting.values().map(|w| w.due).chain(rounds).min()
    }

    /// The calls whose round's deadline passed at `now`, for [`Event::RoundDue`].
    pub fn due_rounds(&self, now: Duration) -> Vec<CallKey> {
        self.in_flight
            .iter()
            .filter(|(_, f)| f.waiter.is_none() && f.round.as_ref().is_some_and(|r| r.due <= now))
            .map(|(k, _)| k.clone())
            .collect()
    }

    /// The upstream requests whose deadline passed at `now`, for
    /// [`Event::HostAnswerDue`] (in id order).
    pub fn due(&self, now: Duration) -> Vec<ServerRequestId> {
        self.waiting
            .iter()
            .filter(|(_, w)| w.due <= now)
            .map(|(id, _)| *id)
            .collect()
    }

    /// The session's state.
    pub fn state(&self) -> State {
        self.state
    }

    /// The keys of the host's calls running upstream (by the request that started each).
    pub fn in_flight(&self) -> impl Iterator<Item = &CallKey> {
        self.in_flight.keys()
    }

    /// The keys of the calls whose `input_required` answer the host holds (no request of the
    /// host's waits for them until it sends them again).
    pub fn parked(&self) -> impl Iterator<Item = &CallKey> {
        self.in_flight
            .iter()
            .filter(|(_, f)| f.waiter.is_none())
            .map(|(k, _)| k)
    }

    /// The keys of the host requests waiting for a call's answer.
    pub fn waiters(&self) -> impl Iterator<Item = &CallKey> {
        self.in_flight
            .values()
            .filter_map(|f| f.waiter.as_ref().map(|(k, _)| k))
    }

    /// The keys of the calls whose `input_required` answer the host holds, with the state it
    /// must send back.
    pub fn rounds(&self) -> impl Iterator<Item = (&CallKey, &str)> {
        self.in_flight
            .iter()
            .filter_map(|(k, f)| f.round.as_ref().map(|r| (k, r.state.as_str())))
    }

    /// The keys of the host's open listens.
    pub fn listens(&self) -> impl Iterator<Item = &CallKey> {
        self.listens.keys()
    }

    /// Whether the host speaks the 2026-07-28 era.
    pub fn is_modern(&self) -> bool {
        self.modern
    }

    /// The keys of the host's requests held while connecting, in order.
    pub fn held(&self) -> impl Iterator<Item = &CallKey> {
        self.held.iter().map(|r| &r.key)
    }

    /// The upstream requests waiting for the host, and whether each was sent to it.
    pub fn waiting(&self) -> impl Iterator<Item = (ServerRequestId, bool)> + '_ {
        self.waiting.iter().map(|(id, w)| (*id, w.sent))
    }

    /// The key of the `initialize` being answered, while connecting.
    pub fn initializing(&self) -> Option<&CallKey> {
        self.init.as_ref().map(|r| &r.key)
    }

    fn write(&mut self, frame: Vec<u8>) {
        self.out.push_back(FrontOutput::Write(frame));
    }

    fn answer_ok(&mut self, id: &Value, result: &Value) {
        self.write(wire::result(id, result));
    }

    fn answer_err(&mut self, id: &Value, code: i64, message: &str) {
        let e = RpcError {
            code,
            message: message.to_owned(),
            data: None,
        };
        self.write(wire::error(id, &e));
    }

    fn reply_upstream(&mut self, id: ServerRequestId, outcome: Result<Value, RpcError>) {
        self.out
            .push_back(FrontOutput::ReplyServerRequest(HostResponse {
                id: Value::from(id),
                outcome,
            }));
    }

    fn cancelled_at_host(&mut self, id: ServerRequestId, reason: &str) {
        let params = json!({"requestId": id, "reason": reason});
        self.write(wire::notification("notifications/cancelled", Some(&params)));
    }

    /// Stops waiting for the host's answer to `id`: `true` if it was sent to the host as a
    /// request of the bridge's (then it is cancelled there).
    fn stop_waiting(&mut self, id: ServerRequestId) -> bool {
        let w = self.waiting.remove(&id);
        if !w.is_some_and(|w| w.sent) {
            self.held_server.retain(|r| r.id != id);
            for f in self.in_flight.values_mut() {
                f.queued.retain(|r| r.id != id);
            }
        }
        w.is_some_and(|w| w.sent && !w.via_round)
    }

    fn start(&mut self, request: HostRequest) {
        if request.method == "server/discover" {
            // Held while connecting: answered by the bridge.
            return self.discovered(&request);
        }
        let modern = self.modern || is_modern(&request);
        let can_ask = modern
            && matches!(
                request.method.as_str(),
                "tools/call" | "prompts/get" | "resources/read"
            );
        let cacheable = matches!(
            request.method.as_str(),
            "tools/list"
                | "prompts/list"
                | "resources/list"
                | "resources/templates/list"
                | "resources/read"
        );
        let flight = Flight {
            waiter: Some((request.key.clone(), request.id.clone())),
            modern,
            can_ask,
            cacheable,
            round: None,
            queued: VecDeque::new(),
            outcome: None,
        };
        self.in_flight.insert(request.key.clone(), flight);
        self.out.push_back(FrontOutput::StartCall(request));
    }

    fn discovered(&mut self, request: &HostRequest) {
        let mut result = self
            .discover
            .as_ref()
            .map(|d| d.discover.clone())
            .unwrap_or_else(|| json!({"supportedVersions": [MODERN_VERSION]}));
        if let Some(r) = result.as_object_mut() {
            r.entry("resultType").or_insert_with(|| json!("complete"));
            r.entry("ttlMs").or_insert_with(|| json!(0));
            r.entry("cacheScope").or_insert_with(|| json!("private"));
        }
        self.answer_ok(&request.id, &result);
    }

    /// Writes the call's final answer to the request waiting for it (a 2026-07-28 host's
    /// result says `resultType: complete`).
    fn finish_call(&mut self, id: &Value, flight: (bool, bool), outcome: Result<Value, RpcError>) {
        let (modern, cacheable) = flight;
        match outcome {
            Ok(mut result) => {
                if let Some(r) = result.as_object_mut() {
                    if modern {
                        r.entry("resultType").or_insert_with(|| json!("complete"));
                        if cacheable {
                            // A handshake-era upstream gives no cache hints: the result may
                            // not be kept (a 2026-07-28 host requires the fields).
                            r.entry("ttlMs").or_insert_with(|| json!(0));
                            r.entry("cacheScope").or_insert_with(|| json!("private"));
                        }
                    } else {
                        // A handshake-era host gets a handshake-era result: what only a
                        // 2026-07-28 server says (its result type, cache hints, its info in
                        // `_meta`) is left out.
                        for key in ["resultType", "ttlMs", "cacheScope"] {
                            r.remove(key);
                        }
                        if let Some(Value::Object(meta)) = r.get_mut("_meta") {
                            meta.remove("io.modelcontextprotocol/serverInfo");
                            if meta.is_empty() {
                                r.remove("_meta");
                            }
                        }
                    }
                }
                self.answer_ok(id, &result);
            }
            Err(e) => self.write(wire::error(id, &e)),
        }
    }

    /// Answers the call `key`'s waiting request with `input_required`, asking for `requests`;
    /// the host now holds the round.
    fn ask(&mut self, key: &CallKey, requests: Vec<ServerRequest>) {
        let due = crate::event::later(self.now, self.config.host_answer_timeout);
        self.next_round += 1;
        let state = format!("mcpc-bridge-round-{}", self.next_round);
        let mut inputs = serde_json::Map::new();
        for r in &requests {
            inputs.insert(
                format!("s{}", r.id),
                json!({"method": r.method, "params": r.params}),
            );
            self.waiting.insert(
                r.id,
                Waiting {
                    sent: true,
                    via_round: true,
                    due,
                },
            );
        }
        let Some(flight) = self.in_flight.get_mut(key) else {
            return;
        };
        let Some((_, id)) = flight.waiter.take() else {
            return;
        };
        flight.round = Some(Round {
            state: state.clone(),
            asked: requests.iter().map(|r| r.id).collect(),
            due,
        });
        let result = json!({
            "resultType": "input_required",
            "inputRequests": inputs,
            "requestState": state,
        });
        self.answer_ok(&id, &result);
    }

    /// Fails the upstream requests `ids` still waiting (their call is gone).
    fn fail_asked(&mut self, ids: impl IntoIterator<Item = ServerRequestId>, reason: &str) {
        for id in ids {
            if self.waiting.remove(&id).is_some() {
                self.reply_upstream(id, Err(Self::upstream_error(reason)));
            }
        }
    }

    fn send_to_host(&mut self, request: &ServerRequest) {
        // A request without params (`roots/list`) goes without: `null` is no params object.
        let params = Some(&request.params).filter(|p| !p.is_null());
        self.write(wire::request(
            &Value::from(request.id),
            &request.method,
            params,
        ));
    }

    fn upstream_error(reason: &str) -> RpcError {
        RpcError {
            code: codes::INTERNAL_ERROR,
            message: reason.to_owned(),
            data: None,
        }
    }
}

impl table::Handlers for FrontCore {
    fn is_ping(&self, p: &HostRequest) -> bool {
        p.method == "ping"
    }

    fn is_initialize(&self, p: &HostRequest) -> bool {
        p.method == "initialize"
    }

    fn is_discover(&self, p: &HostRequest) -> bool {
        p.method == "server/discover"
    }

    fn is_modern_request(&self, p: &HostRequest) -> bool {
        is_modern(p)
    }

    fn is_round_answer(&self, p: &HostRequest) -> Option<CallKey> {
        let state = p.params.as_ref()?.get("requestState")?.as_str()?;
        self.in_flight
            .iter()
            .find(|(_, f)| f.round.as_ref().is_some_and(|r| r.state == state))
            .map(|(k, _)| k.clone())
    }

    fn is_listen(&self, p: &HostRequest) -> bool {
        p.method == "subscriptions/listen"
    }

    fn is_duplicate_call(&self, p: &HostRequest) -> bool {
        let known = self.waiters().any(|k| *k == p.key)
            || self.held.iter().any(|r| r.key == p.key)
            || self.init.as_ref().is_some_and(|r| r.key == p.key)
            || self.listens.contains_key(&p.key);
        known && !self.mutant_duplicate_starts()
    }

    fn is_over_call_cap(&self, _p: &HostRequest) -> bool {
        self.in_flight.len() + self.held.len() + self.listens.len() >= self.config.max_calls
    }

    fn is_call_cancel(&self, p: &HostNotification) -> Option<CallKey> {
        let key = p.cancelled_key()?;
        self.in_flight
            .iter()
            .find(|(_, f)| f.waiter.as_ref().is_some_and(|(k, _)| *k == key))
            .map(|(k, _)| k.clone())
    }

    fn is_listen_cancel(&self, p: &HostNotification) -> Option<CallKey> {
        p.cancelled_key().filter(|k| self.listens.contains_key(k))
    }

    fn is_held_cancel(&self, p: &HostNotification) -> Option<CallKey> {
        p.cancelled_key()
            .filter(|k| self.held.iter().any(|r| &r.key == k))
    }

    fn is_roots_changed(&self, p: &HostNotification) -> bool {
        p.method == "notifications/roots/list_changed"
    }

    fn is_own_notification(&self, p: &HostNotification) -> bool {
        p.method == "notifications/initialized" || p.method == "notifications/cancelled"
    }

    fn is_host_answer(&self, p: &HostResponse) -> Option<ServerRequestId> {
        let id = p.id.as_u64()?;
        self.waiting
            .get(&id)
            .filter(|w| w.sent && !w.via_round)
            .map(|_| id)
    }

    fn is_live_call(&self, p: &CallAnswer) -> bool {
        self.in_flight
            .get(&p.key)
            .is_some_and(|f| f.waiter.is_some())
            || self.mutant_answer_cancelled()
    }

    fn is_parked_call(&self, p: &CallAnswer) -> bool {
        self.in_flight
            .get(&p.key)
            .is_some_and(|f| f.waiter.is_none())
    }

    fn is_parked_round(&self, p: &CallKey) -> bool {
        self.in_flight
            .get(p)
            .is_some_and(|f| f.waiter.is_none() && f.round.is_some())
    }

    fn is_modern_host(&self, _p: &ServerRequest) -> bool {
        self.modern && !self.mutant_ask_directly()
    }

    fn has_asking_call(&self, _p: &ServerRequest) -> Option<CallKey> {
        if !self.modern || self.mutant_ask_directly() {
            return None;
        }
        let asking = |waiting: bool| {
            self.in_flight
                .iter()
                .find(|(_, f)| f.can_ask && f.waiter.is_some() == waiting && f.outcome.is_none())
                .map(|(k, _)| k.clone())
        };
        // A call whose host waits is asked now; else one whose round the host holds, next.
        asking(true).or_else(|| asking(false))
    }

    fn is_waiting_server_request(&self, p: &ServerRequestId) -> bool {
        self.waiting.contains_key(p)
    }

    fn answer_ping(&mut self, p: &HostRequest) {
        self.answer_ok(&p.id, &json!({}));
    }

    fn start_upstream(&mut self, p: HostRequest) {
        self.out.push_back(FrontOutput::Connect(p.clone()));
        self.init = Some(p);
    }

    fn refuse_uninitialized(&mut self, p: &HostRequest) {
        self.answer_err(
            &p.id,
            codes::INVALID_REQUEST,
            "the session is not initialized: send initialize first",
        );
    }

    fn answer_discover(&mut self, p: &HostRequest) {
        self.discovered(p);
    }

    fn start_upstream_modern(&mut self, p: &HostRequest) {
        self.modern = true;
        self.out.push_back(FrontOutput::Connect(p.clone()));
    }

    fn resume_round(&mut self, p: HostRequest, w: CallKey) {
        let Some(flight) = self.in_flight.get_mut(&w) else {
            return;
        };
        let round = flight.round.take();
        flight.waiter = Some((p.key.clone(), p.id.clone()));
        let inputs = p
            .params
            .as_ref()
            .and_then(|params| params.get("inputResponses"))
            .cloned()
            .unwrap_or_default();
        for id in round.map(|r| r.asked).unwrap_or_default() {
            if self.waiting.remove(&id).is_none() {
                continue; // given up on meanwhile, or expired
            }
            if self.mutant_resume_forgets() {
                continue;
            }
            let outcome = match inputs.get(format!("s{id}")) {
                Some(answer) => Ok(answer.clone()),
                None => Err(Self::upstream_error("the host gave no input for it")),
            };
            self.reply_upstream(id, outcome);
        }
        self.out
            .push_back(FrontOutput::CallResumed(w.clone(), p.clone()));
        let Some(flight) = self.in_flight.get_mut(&w) else {
            return;
        };
        if let Some(outcome) = flight.outcome.take() {
            let kind = (flight.modern, flight.cacheable);
            self.in_flight.remove(&w);
            self.finish_call(&p.id, kind, outcome);
        } else if !flight.queued.is_empty() {
            let next: Vec<ServerRequest> = flight.queued.drain(..).collect();
            self.ask(&w, next);
        }
    }

    fn open_listen(&mut self, p: HostRequest) {
        let filter = ListenFilter::from_json(
            p.params
                .as_ref()
                .and_then(|params| params.get("notifications")),
        );
        // The acknowledgement says what the bridge honors: all of what was well asked for.
        let params = json!({
            "_meta": {crate::listen::META_SUBSCRIPTION_ID: p.id},
            "notifications": filter.to_json(),
        });
        self.write(wire::notification(
            "notifications/subscriptions/acknowledged",
            Some(&params),
        ));
        if !filter.uris.is_empty() {
            let uris = filter.uris.iter().cloned().collect();
            self.out.push_back(FrontOutput::Subscribe(uris));
        }
        self.listens.insert(p.key, Listen { id: p.id, filter });
    }

    fn close_listen(&mut self, w: CallKey) {
        self.listens.remove(&w);
    }

    fn ask_in_round(&mut self, p: ServerRequest, w: CallKey) {
        let waiting_host = self.in_flight.get(&w).is_some_and(|f| f.waiter.is_some());
        if waiting_host {
            self.ask(&w, vec![p]);
            return;
        }
        let due = crate::event::later(self.now, self.config.host_answer_timeout);
        self.waiting.insert(
            p.id,
            Waiting {
                sent: false,
                via_round: true,
                due,
            },
        );
        if let Some(flight) = self.in_flight.get_mut(&w) {
            flight.queued.push_back(p);
        }
    }

    fn keep_round_answer(&mut self, p: CallAnswer) {
        if self.mutant_forget_parked() {
            return;
        }
        if let Some(flight) = self.in_flight.get_mut(&p.key) {
            flight.outcome = Some(p.outcome);
        }
    }

    fn abandon_round(&mut self, p: CallKey) {
        let Some(flight) = self.in_flight.remove(&p) else {
            return;
        };
        let asked = flight.round.map(|r| r.asked).unwrap_or_default();
        let queued = flight.queued.iter().map(|r| r.id);
        let ids: Vec<ServerRequestId> = asked.into_iter().chain(queued).collect();
        self.fail_asked(ids, "the host never sent the call again with its input");
        self.out.push_back(FrontOutput::AbortCall(p));
    }

    fn refuse_reinitialize(&mut self, p: &HostRequest) {
        self.answer_err(
            &p.id,
            codes::INVALID_REQUEST,
            "the session is already initialized",
        );
    }

    fn refuse_duplicate(&mut self, p: &HostRequest) {
        self.answer_err(
            &p.id,
            codes::INVALID_REQUEST,
            "a request with this id is still in flight",
        );
    }

    fn refuse_over_cap(&mut self, p: &HostRequest) {
        let message = format!(
            "too many requests in flight through the bridge (at most {})",
            self.config.max_calls
        );
        self.answer_err(&p.id, UPSTREAM_ERROR, &message);
    }

    fn hold_call(&mut self, p: HostRequest) {
        self.held.push_back(p);
    }

    fn start_call(&mut self, p: HostRequest) {
        self.start(p);
    }

    fn cancel_call(&mut self, w: CallKey) {
        if self.mutant_answer_cancelled() {
            self.out.push_back(FrontOutput::AbortCall(w));
            return;
        }
        if let Some(flight) = self.in_flight.remove(&w) {
            let asked = flight.round.map(|r| r.asked).unwrap_or_default();
            let ids: Vec<_> = asked
                .into_iter()
                .chain(flight.queued.iter().map(|r| r.id))
                .collect();
            self.fail_asked(ids, "the host cancelled the call");
        }
        self.out.push_back(FrontOutput::AbortCall(w));
    }

    fn drop_held(&mut self, w: CallKey) {
        self.held.retain(|r| r.key != w);
    }

    fn tell_roots_changed(&mut self) {
        self.out.push_back(FrontOutput::RootsChanged);
    }

    fn forward_notification(&mut self, p: HostNotification) {
        self.out.push_back(FrontOutput::Notify(p));
    }

    fn deliver_host_answer(&mut self, p: HostResponse, w: ServerRequestId) {
        if !self.mutant_answer_keeps_waiting() {
            self.waiting.remove(&w);
        }
        self.out.push_back(FrontOutput::ReplyServerRequest(p));
    }

    fn answer_invalid(&mut self, p: Invalid) {
        self.write(wire::error(&p.id, &p.error));
    }

    fn answer_initialize(&mut self, p: UpstreamReady) {
        if let Some(init) = self.init.take() {
            self.answer_ok(&init.id, &p.result);
        }
        self.discover = Some(p);
    }

    fn release_held_calls(&mut self) {
        while let Some(request) = self.held.pop_front() {
            self.start(request);
        }
    }

    fn release_held_server_requests(&mut self) {
        if self.modern {
            // A 2026-07-28 host is asked only in a call's answer, and none runs yet.
            let held: Vec<_> = self.held_server.drain(..).map(|r| r.id).collect();
            self.fail_asked(held, "a 2026-07-28 host is asked only during its call");
            return;
        }
        while let Some(request) = self.held_server.pop_front() {
            if let Some(w) = self.waiting.get_mut(&request.id) {
                w.sent = true;
            }
            self.send_to_host(&request);
        }
    }

    fn fail_initialize(&mut self, p: &UpstreamFailed) {
        if let Some(init) = self.init.take() {
            let message = format!("the bridge could not reach its server: {}", p.reason);
            self.answer_err(&init.id, UPSTREAM_ERROR, &message);
        }
    }

    fn fail_held_calls(&mut self, p: &UpstreamFailed) {
        let message = format!("the bridge could not reach its server: {}", p.reason);
        let held = std::mem::take(&mut self.held);
        if self.mutant_forget_held() {
            return;
        }
        for request in held {
            self.answer_err(&request.id, UPSTREAM_ERROR, &message);
        }
    }

    fn fail_held_server_requests(&mut self) {
        while let Some(request) = self.held_server.pop_front() {
            self.waiting.remove(&request.id);
            self.reply_upstream(
                request.id,
                Err(Self::upstream_error("the host could not be asked")),
            );
        }
    }

    fn write_answer(&mut self, p: CallAnswer) {
        let flight = self.in_flight.remove(&p.key);
        let (id, kind) = match flight {
            Some(Flight {
                waiter: Some((_, id)),
                modern,
                cacheable,
                ..
            }) => (id, (modern, cacheable)),
            // (A mutant answering a cancelled call: under the call's own key.)
            _ => (
                serde_json::from_str(&p.key).unwrap_or_default(),
                (self.modern, false),
            ),
        };
        self.finish_call(&id, kind, p.outcome);
    }

    fn forward_server_request(&mut self, p: ServerRequest) {
        let due = crate::event::later(self.now, self.config.host_answer_timeout);
        self.waiting.insert(
            p.id,
            Waiting {
                sent: true,
                via_round: false,
                due,
            },
        );
        self.send_to_host(&p);
    }

    fn hold_server_request(&mut self, p: ServerRequest) {
        let due = crate::event::later(self.now, self.config.host_answer_timeout);
        if self.mutant_forward_before_init() {
            self.waiting.insert(
                p.id,
                Waiting {
                    sent: true,
                    via_round: false,
                    due,
                },
            );
            self.send_to_host(&p);
            return;
        }
        self.waiting.insert(
            p.id,
            Waiting {
                sent: false,
                via_round: false,
                due,
            },
        );
        self.held_server.push_back(p);
    }

    fn refuse_server_request(&mut self, p: ServerRequest) {
        self.reply_upstream(p.id, Err(Self::upstream_error("the host is gone")));
    }

    fn cancel_at_host(&mut self, p: ServerRequestId) {
        if self.stop_waiting(p) && !self.mutant_silent_cancel() {
            self.cancelled_at_host(p, "the server no longer needs the answer");
        }
    }

    fn expire_server_request(&mut self, p: ServerRequestId) {
        let sent = self.stop_waiting(p);
        let message = format!(
            "the host did not answer within {} s",
            self.config.host_answer_timeout.as_secs_f64()
        );
        self.reply_upstream(p, Err(Self::upstream_error(&message)));
        if sent {
            self.cancelled_at_host(p, "the bridge stopped waiting for the answer");
        }
    }

    fn forward_upstream_notification(&mut self, p: UpstreamNotification) {
        if !self.modern {
            return self.write(wire::notification(&p.method, p.params.as_ref()));
        }
        // A 2026-07-28 host hears of list changes and resource updates on its listens only,
        // each tagged with the listen's id.
        let uri = p
            .params
            .as_ref()
            .and_then(|params| params.get("uri"))
            .and_then(Value::as_str);
        let wants = |f: &ListenFilter| match p.method.as_str() {
            "notifications/tools/list_changed" => Some(f.tools),
            "notifications/prompts/list_changed" => Some(f.prompts),
            "notifications/resources/list_changed" => Some(f.resources),
            "notifications/resources/updated" => Some(uri.is_some_and(|u| f.uris.contains(u))),
            _ => None,
        };
        if wants(&ListenFilter::default()).is_none() {
            // Not a listen's business: as it came.
            return self.write(wire::notification(&p.method, p.params.as_ref()));
        }
        let targets: Vec<Value> = self
            .listens
            .values()
            .filter(|l| wants(&l.filter) == Some(true))
            .map(|l| l.id.clone())
            .collect();
        for id in targets {
            let mut params = p.params.clone().unwrap_or_else(|| json!({}));
            if let Some(obj) = params.as_object_mut() {
                obj.insert(
                    "_meta".into(),
                    json!({crate::listen::META_SUBSCRIPTION_ID: id}),
                );
            }
            self.write(wire::notification(&p.method, Some(&params)));
        }
    }

    fn close_session(&mut self) {
        for (key, _) in std::mem::take(&mut self.in_flight) {
            self.out.push_back(FrontOutput::AbortCall(key));
        }
        self.listens.clear();
        self.held.clear();
        self.init = None;
        self.held_server.clear();
        let waiting = std::mem::take(&mut self.waiting);
        if !self.mutant_no_reply_on_close() {
            for id in waiting.into_keys() {
                self.reply_upstream(id, Err(Self::upstream_error("the host is gone")));
            }
        }
        self.out.push_back(FrontOutput::StopUpstream);
    }

    fn stop_late_upstream(&mut self, _p: UpstreamReady) {
        self.out.push_back(FrontOutput::StopUpstream);
    }
}

/// The mutants' switches, one per deliberate bug: `false` in a product build.
macro_rules! switches {
    ($($switch:ident => $mutant:ident),* $(,)?) => {
        impl FrontCore {
            $(
                #[cfg(feature = "checker")]
                fn $switch(&self) -> bool {
                    self.mutant == Some(FrontMutant::$mutant)
                }
                #[cfg(not(feature = "checker"))]
                fn $switch(&self) -> bool {
                    false
                }
            )*
        }
    };
}

switches! {
    mutant_duplicate_starts => DuplicateStarts,
    mutant_answer_cancelled => AnswerCancelled,
    mutant_answer_keeps_waiting => AnswerKeepsWaiting,
    mutant_forget_held => ForgetHeldOnFailure,
    mutant_forward_before_init => ForwardBeforeInit,
    mutant_silent_cancel => SilentCancel,
    mutant_no_reply_on_close => NoReplyOnClose,
    mutant_resume_forgets => ResumeForgetsInputs,
    mutant_forget_parked => ForgetParkedAnswer,
    mutant_ask_directly => AskModernHostDirectly,
}
