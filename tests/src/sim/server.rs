//! The simulated MCP server: one task per connection, speaking newline-delimited JSON over an
//! in-memory stream, misbehaving as its [`ConnPlan`] and its seeded generator say.
//!
//! It is a 2025-11-25 server: a `server/discover` probe before `initialize` is answered "method
//! not found". It answers `initialize` (or refuses it, or answers a version nobody speaks, or never
//! answers), `ping`, and `tools/call` of a tool that echoes the caller's token: after a delay,
//! with progress carrying the token, sometimes twice, sometimes never, sometimes with an error
//! carrying the token, sometimes even after the client cancelled it. Between answers it may
//! send answers to ids nobody asked, garbage, an oversized frame, pings of its own; it may
//! hold answers and release them in reverse order, stop reading for a while (the client's
//! sends then go busy), or crash (close its side of the stream). Once the run turns calm,
//! every new decision is a good one.
//!
//! Its connection may also fail the way a Streamable HTTP link does ([`HttpFault`]): the
//! session expires (the requests posted meanwhile are refused, never run, and the link ends
//! with `SessionExpired` listing them), a POST sent in order is never answered (the server
//! takes nothing more, and the link ends with an `Io` error of kind `TimedOut` after the header
//! bound), a tool call's response stream drops before its answer (`StreamLost`), an answer's
//! frame is cut in the middle, or the connection is dropped right after the handshake.
//!
//! It runs the task tool (`sim_task`, listed with `execution.taskSupport: "required"`) as a
//! 2025-11-25 task when the call carries `params.task`: the task lives in a [`TaskStore`] the
//! run's servers share (a server started again after a crash still knows it, unless the seed
//! says it restarted without its store, or the task is forgotten when it ends, as when its TTL
//! passes: -32602), `tasks/get` says `working` (at a seeded interval, 0 and a year included)
//! until the task's end (completed, failed, or cancelled by the server), `tasks/result` gives
//! the tool's result or error, `tasks/cancel` is acknowledged. Its answers meet the same faults
//! as the others (delays, none at all, errors, reordering, crashes, expiries).
//!
//! It also checks what the client sends: `initialize` first (after the probe, if any) and once, `notifications/initialized`
//! once after the answer and before any other request, no request id ever reused (across
//! connections), a `notifications/cancelled` only for a request it saw and at most once, and
//! never for a task's request (`tasks/get`, `tasks/result`, `tasks/cancel`), an answer to each
//! of its pings at most once.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, WriteHalf};
use tokio::sync::watch;
use tokio::time::Instant;

use mcp_runtime::transport::TransportError;

use super::history::{Event, Log};
use super::link::{Fate, Unanswered};
use super::rng::Rng;
use super::scenario::Looping;

/// How a connection attempt goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConnectPlan {
    /// Connected after this delay.
    Ok(Duration),
    /// Refused at once.
    Refuse,
    /// Never completes (the client's connect bound ends it).
    Hang,
}

/// How the server answers `initialize`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InitPlan {
    /// Accepted after this delay.
    Accept(Duration),
    /// A JSON-RPC error after this delay.
    Refuse(Duration),
    /// A protocol version the client does not speak, after this delay.
    BadVersion(Duration),
    /// No answer.
    Never,
}

/// A fault of the HTTP transports, as their link shows it to the driver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HttpFault {
    /// A 404 expiry: `after` the server got `notifications/initialized` it forgets the session;
    /// the requests it gets for `window` more are refused (they never run), and then the link
    /// ends with `SessionExpired` listing them (all of them, or only the first: a transport
    /// fails its link at the first refusal, and those refused after it are not listed).
    Expire {
        /// From `notifications/initialized` to the expiry.
        after: Duration,
        /// From the expiry to the end of the link.
        window: Duration,
        /// Whether every refused request is listed (else only the first).
        list_all: bool,
    },
    /// A stuck POST: the `nth` frame the client sends in order (0: `notifications/initialized`,
    /// then cancellations and answers to the server's pings) is never answered; the server
    /// takes nothing more, and the link ends with an `Io` error of kind `TimedOut` after the
    /// header bound.
    Stuck {
        /// Which frame sent in order.
        nth: u32,
    },
    /// A tool call's response stream drops before its answer (after its first progress, when
    /// it has some): the link ends with `StreamLost`.
    StreamLost,
    /// An answer's frame is cut in the middle: half of it is written, then the server closes
    /// its side (the link ends with `Truncated`).
    Cut,
    /// The connection is dropped (the server closes its side) this long after the server got
    /// `notifications/initialized`.
    DropAfterInit(Duration),
}

/// Everything decided about a connection when it opens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConnPlan {
    /// The connection attempt.
    pub connect: ConnectPlan,
    /// The handshake.
    pub init: InitPlan,
    /// Crash this long after the connection opened.
    pub crash_after: Option<Duration>,
    /// Stop reading every so often (the first), for up to the second.
    pub stalls: Option<(Duration, Duration)>,
    /// Hold answers and release them in reverse order at this period.
    pub reorder: Option<Duration>,
    /// Whether a `notifications/cancelled` stops the answer (else it is sent anyway: late).
    pub honour_cancel: bool,
    /// A fault of the HTTP transports.
    pub http: Option<HttpFault>,
}

impl ConnPlan {
    /// A connection that behaves.
    pub fn calm() -> Self {
        ConnPlan {
            connect: ConnectPlan::Ok(Duration::ZERO),
            init: InitPlan::Accept(Duration::from_millis(1)),
            crash_after: None,
            stalls: None,
            reorder: None,
            honour_cancel: true,
            http: None,
        }
    }

    /// A connection of a looping run: it connects and shakes hands, then fails as `looping`
    /// says, right after the handshake.
    pub fn looping(looping: Looping, rng: &mut Rng) -> Self {
        let connect = ConnectPlan::Ok(rng.ms(0, 3));
        let init = InitPlan::Accept(rng.ms(0, 5));
        let http = match looping {
            Looping::Expire => HttpFault::Expire {
                after: rng.ms(0, 3),
                window: rng.ms(0, 10),
                list_all: rng.chance(80),
            },
            Looping::Drop => HttpFault::DropAfterInit(rng.ms(0, 3)),
        };
        ConnPlan {
            connect,
            init,
            crash_after: None,
            stalls: None,
            reorder: None,
            honour_cancel: rng.chance(50),
            http: Some(http),
        }
    }

    /// Whether the link may end with a typed error (its fate may be sealed).
    pub fn typed(&self) -> bool {
        matches!(
            self.http,
            Some(HttpFault::Expire { .. } | HttpFault::Stuck { .. } | HttpFault::StreamLost)
        )
    }

    /// A connection drawn from `rng`.
    pub fn draw(rng: &mut Rng) -> Self {
        let connect = match rng.range(0, 99) {
            0..=4 => ConnectPlan::Refuse,
            5..=6 => ConnectPlan::Hang,
            _ => ConnectPlan::Ok(rng.ms(0, 5)),
        };
        let delay = if rng.chance(5) {
            rng.ms(0, 1_500)
        } else {
            rng.ms(0, 30)
        };
        let init = match rng.range(0, 99) {
            0..=2 => InitPlan::Never,
            3..=5 => InitPlan::Refuse(delay),
            6..=7 => InitPlan::BadVersion(delay),
            _ => InitPlan::Accept(delay),
        };
        let crash_after = rng.chance(25).then(|| rng.ms(0, 1_500));
        let stalls = rng.chance(20).then(|| (rng.ms(20, 300), rng.ms(10, 400)));
        let reorder = rng.chance(20).then(|| rng.ms(1, 50));
        let honour_cancel = rng.chance(50);
        let http = match rng.range(0, 99) {
            0..=3 => Some(HttpFault::Expire {
                after: rng.ms(0, 400),
                window: rng.ms(0, 20),
                list_all: rng.chance(80),
            }),
            4..=6 => Some(HttpFault::Stuck {
                nth: u32::try_from(rng.range(0, 3)).unwrap_or(0),
            }),
            7..=9 => Some(HttpFault::StreamLost),
            10..=11 => Some(HttpFault::Cut),
            12 => Some(HttpFault::DropAfterInit(rng.ms(0, 5))),
            _ => None,
        };
        let mut plan = ConnPlan {
            connect,
            init,
            crash_after,
            stalls,
            reorder,
            honour_cancel,
            http,
        };
        // A link that ends with a typed error ends only so (or closed by the client): the
        // server does not crash, so the link's end is its fault's.
        if plan.typed() {
            plan.crash_after = None;
        }
        plan
    }
}

/// How a task of the simulated server ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TaskEnd {
    /// Completed: `tasks/result` gives the tool's result (the token).
    Completed,
    /// Failed: `tasks/result` gives a JSON-RPC error carrying the token (`error`), or an
    /// `isError` result carrying it.
    Failed { error: bool },
    /// Cancelled by the server.
    Cancelled,
    /// Forgotten when it ends (its TTL passed): -32602 from then on.
    Lost,
}

impl TaskEnd {
    fn name(self) -> &'static str {
        match self {
            TaskEnd::Completed => "completed",
            TaskEnd::Failed { .. } => "failed",
            TaskEnd::Cancelled => "cancelled",
            TaskEnd::Lost => "lost",
        }
    }
}

#[derive(Debug)]
struct SimTask {
    token: String,
    done_at: Instant,
    end: TaskEnd,
    /// The poll interval it asks for, in milliseconds.
    interval: u64,
    /// The client cancelled it (`tasks/cancel`) before it ended.
    cancelled: bool,
}

/// The tasks of a run's server: they live on the server, not on a connection, so a server
/// started again after a crash still has them (unless it restarted without them:
/// [`TaskStore::forget_all`]).
#[derive(Debug, Default)]
pub struct TaskStore {
    tasks: BTreeMap<String, SimTask>,
    next: u64,
}

impl TaskStore {
    /// Whether it has no task.
    pub fn is_empty(&self) -> bool {
        self.tasks.is_empty()
    }

    /// Forgets every task (the server restarted without its store); how many there were.
    pub fn forget_all(&mut self) -> usize {
        std::mem::take(&mut self.tasks).len()
    }
}

/// The task store the run's servers share.
pub type Tasks = Arc<Mutex<TaskStore>>;

/// The simulated tools (`tools/list`): `sim` runs as a plain call, `sim_task` only as a task.
fn tool_list() -> Value {
    let schema = json!({"type": "object", "properties": {"token": {"type": "string"}}});
    json!({"tools": [
        {"name": "sim", "inputSchema": schema},
        {"name": "sim_task", "inputSchema": schema, "execution": {"taskSupport": "required"}},
    ]})
}

/// Something the server will do at a set time.
#[derive(Debug)]
enum Item {
    /// Write a frame; skipped if it belongs to a request the client cancelled (when the plan
    /// honours cancels), or if it is a fault (oversized) and the run turned calm. An answer
    /// may be held for reordering.
    Frame {
        bytes: Vec<u8>,
        request: Option<u64>,
        answer: bool,
        init: bool,
        fault: bool,
    },
    /// Stop reading for a while (and schedule the next stall).
    Stall,
    /// Release the held answers in reverse order (and schedule the next release).
    Flush,
    /// Close our side of the stream.
    Crash,
    /// Forget the session: refuse every request from now on, and end the link after the
    /// plan's window.
    Expire,
    /// End the link with a typed error (the plan's fault).
    Fail,
    /// Write the first half of this frame, then close our side of the stream.
    Cut(Vec<u8>),
}

/// What became of the server after a step.
enum Next {
    Continue,
    Crash,
    /// The link was ended with a typed error: answer nothing more.
    Failed,
    Gone,
}

/// The largest frame the client accepts in a simulation (the server's oversized frames are one
/// byte more).
pub const MAX_FRAME: usize = 8 * 1024;

/// One connection's server.
pub struct Server {
    conn: u64,
    log: Log,
    rng: Rng,
    plan: ConnPlan,
    calm: bool,
    queue: BTreeMap<(Instant, u64), Item>,
    seq: u64,
    held: Vec<(Option<u64>, Vec<u8>)>,
    answered: BTreeSet<u64>,
    stall_until: Option<Instant>,
    saw_initialize: bool,
    init_answered: bool,
    initialized: bool,
    requests: BTreeSet<u64>,
    cancels: BTreeSet<u64>,
    pings: BTreeMap<String, bool>,
    /// The header bound of the simulated HTTP transport.
    header_bound: Duration,
    /// How the link ends, when the plan's fault ends it with a typed error.
    fate: Fate,
    /// Frames sent in order (notifications, answers) read so far.
    in_order: u32,
    /// A POST sent in order got no answer (its exchange, and its frame): nothing more is read
    /// until the calm, when the frame is taken after all.
    stuck: Option<(String, String)>,
    /// The session expired: the requests refused since.
    expired: Option<Vec<u64>>,
    /// The plan's one-off fault (a stream lost, a frame cut) was scheduled.
    armed: bool,
    /// The tasks, shared with the run's other servers.
    tasks: Tasks,
    /// The ids of the task requests (`tasks/*`) received: never cancelled with
    /// `notifications/cancelled`.
    task_requests: BTreeSet<u64>,
}

impl Server {
    /// The server of connection `conn`; `fate` ends its link when the plan's fault is typed.
    pub fn new(
        conn: u64,
        log: Log,
        rng: Rng,
        plan: ConnPlan,
        header_bound: Duration,
        fate: Fate,
        tasks: Tasks,
    ) -> Self {
        Server {
            conn,
            log,
            rng,
            plan,
            calm: false,
            queue: BTreeMap::new(),
            seq: 0,
            held: Vec::new(),
            answered: BTreeSet::new(),
            stall_until: None,
            saw_initialize: false,
            init_answered: false,
            initialized: false,
            requests: BTreeSet::new(),
            cancels: BTreeSet::new(),
            pings: BTreeMap::new(),
            header_bound,
            fate,
            in_order: 0,
            stuck: None,
            expired: None,
            armed: false,
            tasks,
            task_requests: BTreeSet::new(),
        }
    }

    /// Serves `stream` until the client closes it or the server crashes.
    pub async fn run(mut self, stream: DuplexStream, mut calm: watch::Receiver<bool>) {
        let (reader, mut writer) = tokio::io::split(stream);
        let mut reader = BufReader::new(reader);
        // A line is read into this buffer across polls (`read_until` is cancel-safe with it).
        let mut line = Vec::new();
        if let Some(after) = self.plan.crash_after {
            self.at(after, Item::Crash);
        }
        if let Some((every, _)) = self.plan.stalls {
            self.at(every, Item::Stall);
        }
        if let Some(period) = self.plan.reorder {
            self.at(period, Item::Flush);
        }
        let mut calm_open = true;
        loop {
            if !self.calm && *calm.borrow() {
                self.calm = true;
                self.stall_until = None;
                // A POST stuck or a session expiring gets its answer after all; a request
                // refused meanwhile stays unanswered.
                self.expired = None;
                if let Some((_, line)) = self.stuck.take() {
                    self.on_line(&line);
                }
            }
            let next = self.queue.keys().next().map(|k| k.0);
            let stall = self.stall_until;
            let reading = stall.is_none() && self.stuck.is_none();
            let step = tokio::select! {
                biased;
                changed = calm.changed(), if calm_open && !self.calm => {
                    calm_open = changed.is_ok();
                    Next::Continue
                }
                () = sleep_until(next), if next.is_some() => self.due(&mut writer).await,
                () = sleep_until(stall), if stall.is_some() => {
                    self.stall_until = None;
                    Next::Continue
                }
                read = reader.read_until(b'\n', &mut line), if reading => match read {
                    // A line cut short by the end of the stream (the client gave up flushing
                    // on close) is not a frame.
                    Ok(_) if line.ends_with(b"\n") => {
                        let text = String::from_utf8_lossy(&line[..line.len() - 1]).into_owned();
                        line.clear();
                        self.on_line(&text);
                        Next::Continue
                    }
                    _ => Next::Gone,
                },
            };
            match step {
                Next::Continue => {}
                Next::Gone => {
                    self.log.push(Event::ConnEnded { conn: self.conn });
                    return;
                }
                Next::Crash | Next::Failed => {
                    if matches!(step, Next::Crash) {
                        self.log.push(Event::Crash { conn: self.conn });
                        let _ = writer.shutdown().await;
                    }
                    self.log.push(Event::ConnEnded { conn: self.conn });
                    // A crashed server answers nothing; drain until the client lets go.
                    while matches!(reader.read_until(b'\n', &mut line).await, Ok(n) if n > 0) {
                        line.clear();
                    }
                    return;
                }
            }
        }
    }

    fn at(&mut self, after: Duration, item: Item) {
        self.seq += 1;
        self.queue.insert((Instant::now() + after, self.seq), item);
    }

    fn frame(&mut self, after: Duration, value: &Value, request: Option<u64>, answer: bool) {
        let mut bytes = serde_json::to_vec(value).expect("a Value serializes");
        bytes.push(b'\n');
        self.at(
            after,
            Item::Frame {
                bytes,
                request,
                answer,
                init: false,
                fault: false,
            },
        );
    }

    fn saw(&self, what: String) {
        self.log.push(Event::ServerSaw {
            conn: self.conn,
            what,
        });
    }

    /// Notes the first answer to `request` that went into the stream.
    fn wrote_answer(&mut self, request: Option<u64>) {
        if let Some(id) = request
            && self.answered.insert(id)
        {
            self.log.push(Event::Answered {
                conn: self.conn,
                id,
            });
        }
    }

    /// Carries out every item due now, in order.
    async fn due(&mut self, writer: &mut WriteHalf<DuplexStream>) -> Next {
        let now = Instant::now();
        while let Some(entry) = self.queue.first_entry() {
            if entry.key().0 > now {
                break;
            }
            match entry.remove() {
                Item::Frame {
                    bytes,
                    request,
                    answer,
                    init,
                    fault,
                } => {
                    let cancelled = request.is_some_and(|id| self.cancels.contains(&id));
                    if (cancelled && (self.plan.honour_cancel || self.calm))
                        || (fault && self.calm)
                        || self.expired.is_some()
                    {
                        continue;
                    }
                    if answer && self.plan.reorder.is_some() && !self.calm {
                        self.held.push((request, bytes));
                        continue;
                    }
                    if writer.write_all(&bytes).await.is_err() {
                        return Next::Gone;
                    }
                    if init {
                        self.init_answered = true;
                    }
                    if answer {
                        self.wrote_answer(request);
                    }
                }
                Item::Stall => {
                    if let (Some((every, longest)), false) = (self.plan.stalls, self.calm) {
                        let ms = u64::try_from(longest.as_millis()).unwrap_or(u64::MAX);
                        self.stall_until = Some(now + Duration::from_millis(self.rng.range(1, ms)));
                        self.at(every, Item::Stall);
                    }
                }
                Item::Flush => {
                    let held = std::mem::take(&mut self.held);
                    for (request, bytes) in held.iter().rev() {
                        if writer.write_all(bytes).await.is_err() {
                            return Next::Gone;
                        }
                        self.wrote_answer(*request);
                    }
                    if let (Some(period), false) = (self.plan.reorder, self.calm) {
                        self.at(period, Item::Flush);
                    }
                }
                Item::Crash if !self.calm => return Next::Crash,
                Item::Crash => {}
                Item::Expire if !self.calm => {
                    self.expired = Some(Vec::new());
                    if let Some(HttpFault::Expire { window, .. }) = self.plan.http {
                        self.at(window, Item::Fail);
                    }
                }
                Item::Fail if !self.calm => {
                    if self.fail() {
                        return Next::Failed;
                    }
                }
                Item::Cut(bytes) if !self.calm => {
                    let half = &bytes[..bytes.len() / 2];
                    if writer.write_all(half).await.is_err() {
                        return Next::Gone;
                    }
                    self.log.push(Event::LinkFault {
                        conn: self.conn,
                        fault: "frame cut".to_owned(),
                        refused: Vec::new(),
                    });
                    return Next::Crash;
                }
                Item::Expire | Item::Fail | Item::Cut(_) => {}
            }
        }
        Next::Continue
    }

    /// Ends the link with the plan's typed fault; false if there is none to end it with.
    fn fail(&mut self) -> bool {
        let (fault, refused, reason) = match (self.plan.http, &self.stuck) {
            (Some(HttpFault::Stuck { .. }), Some((exchange, _))) => {
                let reason = Unanswered {
                    exchange: exchange.clone(),
                    bound: self.header_bound,
                }
                .into_error();
                ("stuck POST", Vec::new(), reason)
            }
            (Some(HttpFault::StreamLost), _) => (
                "stream lost",
                Vec::new(),
                TransportError::StreamLost {
                    reason: "the response stream of a tool call ended before its answer".into(),
                },
            ),
            (Some(HttpFault::Expire { list_all, .. }), _) => {
                let mut refused = self.expired.take().unwrap_or_default();
                if !list_all {
                    refused.truncate(1);
                }
                let reason = TransportError::SessionExpired {
                    session_hint: format!("sim{}", self.conn),
                    refused: refused.clone(),
                };
                ("session expired", refused, reason)
            }
            _ => return false,
        };
        self.log.push(Event::LinkFault {
            conn: self.conn,
            fault: fault.to_owned(),
            refused,
        });
        self.fate.seal(reason)
    }

    fn on_line(&mut self, line: &str) {
        let msg: Value = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(e) => return self.saw(format!("a frame that is not JSON ({e}): {line}")),
        };
        let method = msg.get("method").and_then(Value::as_str);
        let id = msg.get("id");
        // A frame sent in order (a notification, an answer) may be the POST that is never
        // answered: the server then takes nothing more, and the link fails after the bound.
        let in_order = !(method.is_some() && id.is_some());
        if in_order && !self.calm {
            let nth = self.in_order;
            self.in_order += 1;
            if self.plan.http == Some(HttpFault::Stuck { nth }) {
                let exchange = format!("POST of {}", method.unwrap_or("a response"));
                self.stuck = Some((exchange, line.to_owned()));
                self.at(self.header_bound, Item::Fail);
                return;
            }
        }
        if self.expired.is_some()
            && let (Some(method), Some(id)) = (method, id.and_then(Value::as_u64))
        {
            // The session is gone: a request is refused (it never runs). What else comes is
            // taken as before (a cancellation is seen, though its POST is refused too).
            let token = msg
                .pointer("/params/arguments/token")
                .and_then(Value::as_str)
                .map(str::to_owned);
            self.log.push(Event::ServerGot {
                conn: self.conn,
                id,
                method: method.to_owned(),
                token,
            });
            if !self.log.first_sight_of(id) {
                self.saw(format!("request id {id} reused"));
            }
            self.log.push(Event::Refused {
                conn: self.conn,
                id,
            });
            if method.starts_with("tasks/") {
                self.task_requests.insert(id);
            }
            self.requests.insert(id);
            if let Some(refused) = &mut self.expired {
                refused.push(id);
            }
            return;
        }
        match (method, id) {
            (Some(method), Some(id)) => {
                let Some(id) = id.as_u64() else {
                    return self.saw(format!("a request id that is not a number: {line}"));
                };
                let token = msg
                    .pointer("/params/arguments/token")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                self.log.push(Event::ServerGot {
                    conn: self.conn,
                    id,
                    method: method.to_owned(),
                    token,
                });
                if !self.log.first_sight_of(id) {
                    self.saw(format!("request id {id} reused"));
                }
                self.requests.insert(id);
                self.on_request(id, method, msg.get("params"));
            }
            (Some(method), None) => self.on_notification(method, msg.get("params")),
            (None, Some(id)) => {
                let key = id.as_str().unwrap_or_default().to_owned();
                match self.pings.get_mut(&key) {
                    Some(answered @ false) => *answered = true,
                    Some(true) => self.saw(format!("our ping {key} answered twice")),
                    None => self.saw(format!("an answer to a request we never sent: {line}")),
                }
            }
            (None, None) => self.saw(format!("a frame that is neither: {line}")),
        }
    }

    fn on_request(&mut self, id: u64, method: &str, params: Option<&Value>) {
        if method == "server/discover" {
            // A 2025-11-25 server: the probe is an unknown method, answered as such.
            if self.saw_initialize {
                return self.saw("server/discover after initialize".to_owned());
            }
            let after = self.rng.ms(0, 5);
            let frame = json!({"jsonrpc": "2.0", "id": id,
                "error": {"code": -32601, "message": "Method not found"}});
            self.frame(after, &frame, Some(id), true);
            return;
        }
        if method == "initialize" {
            if self.saw_initialize {
                return self.saw("initialize twice on one connection".to_owned());
            }
            self.saw_initialize = true;
            let init = if self.calm {
                InitPlan::Accept(Duration::from_millis(1))
            } else {
                self.plan.init
            };
            let (after, result) = match init {
                InitPlan::Accept(after) => (
                    after,
                    json!({"result": {"protocolVersion": "2025-11-25",
                        "capabilities": {"tools": {},
                            "tasks": {"cancel": {}, "requests": {"tools": {"call": {}}}}},
                        "serverInfo": {"name": "sim", "version": "0"}}}),
                ),
                InitPlan::Refuse(after) => (
                    after,
                    json!({"error": {"code": -32603, "message": "not today"}}),
                ),
                InitPlan::BadVersion(after) => (
                    after,
                    json!({"result": {"protocolVersion": "1999-01-01", "capabilities": {}}}),
                ),
                InitPlan::Never => return,
            };
            let mut frame = result;
            frame["jsonrpc"] = json!("2.0");
            frame["id"] = json!(id);
            let mut bytes = serde_json::to_vec(&frame).expect("a Value serializes");
            bytes.push(b'\n');
            self.at(
                after,
                Item::Frame {
                    bytes,
                    request: None,
                    answer: false,
                    init: true,
                    fault: false,
                },
            );
            return;
        }
        if !self.saw_initialize {
            self.saw(format!("{method} before initialize"));
        } else if !self.initialized {
            self.saw(format!("{method} before notifications/initialized"));
        }
        match method {
            "tools/call" if params.is_some_and(|p| p.get("task").is_some()) => {
                self.on_task_call(id, params)
            }
            "tools/call" => self.on_call(id, params),
            "tools/list" => {
                let after = self.rng.ms(0, 5);
                let frame = json!({"jsonrpc": "2.0", "id": id, "result": tool_list()});
                self.frame(after, &frame, Some(id), true);
            }
            "tasks/get" | "tasks/result" | "tasks/cancel" => {
                self.task_requests.insert(id);
                self.on_task_request(id, method, params);
            }
            "ping" => {
                let after = self.rng.ms(0, 5);
                self.frame(
                    after,
                    &json!({"jsonrpc": "2.0", "id": id, "result": {}}),
                    Some(id),
                    true,
                );
            }
            other => {
                let frame = json!({"jsonrpc": "2.0", "id": id,
                    "error": {"code": -32601, "message": format!("no {other}")}});
                self.frame(Duration::ZERO, &frame, Some(id), true);
            }
        }
    }

    fn on_notification(&mut self, method: &str, params: Option<&Value>) {
        match method {
            "notifications/initialized" => {
                if !self.init_answered {
                    self.saw("notifications/initialized before the initialize answer".to_owned());
                }
                if self.initialized {
                    self.saw("notifications/initialized twice".to_owned());
                }
                self.initialized = true;
                match self.plan.http {
                    Some(HttpFault::Expire { after, .. }) if !self.calm => {
                        self.at(after, Item::Expire);
                    }
                    Some(HttpFault::DropAfterInit(after)) if !self.calm => {
                        self.at(after, Item::Crash);
                    }
                    _ => {}
                }
            }
            "notifications/cancelled" => {
                let id = params
                    .and_then(|p| p.get("requestId"))
                    .and_then(Value::as_u64);
                let Some(id) = id else {
                    return self.saw(format!("a cancel without a request id: {params:?}"));
                };
                if !self.requests.contains(&id) {
                    self.saw(format!(
                        "a cancel of request {id}, never sent on this connection"
                    ));
                }
                if !self.cancels.insert(id) {
                    self.saw(format!("request {id} cancelled twice"));
                }
                if self.task_requests.contains(&id) {
                    self.saw(format!(
                        "notifications/cancelled for request {id}, a task's request (a task's \
                         requests are never cancelled so: a task is cancelled with tasks/cancel)"
                    ));
                }
                self.log.push(Event::CancelGot {
                    conn: self.conn,
                    id,
                });
            }
            _ => {}
        }
    }

    fn on_call(&mut self, id: u64, params: Option<&Value>) {
        let token = params
            .and_then(|p| p.get("arguments"))
            .and_then(|a| a.get("token"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let progress = params
            .and_then(|p| p.get("_meta"))
            .and_then(|m| m.get("progressToken"))
            .cloned();
        let answer = json!({"jsonrpc": "2.0", "id": id,
            "result": {"content": [{"type": "text", "text": token}]}});
        if self.calm {
            let after = self.rng.ms(0, 5);
            return self.frame(after, &answer, Some(id), true);
        }
        let r = &mut self.rng;
        let delay = match r.range(0, 9) {
            0..=5 => r.ms(0, 40),
            6..=8 => r.ms(0, 400),
            _ => r.ms(0, 2_500),
        };
        let some_time = |r: &mut Rng| Duration::from_millis(r.range(0, delay.as_millis() as u64));
        if let Some(p) = progress
            && r.chance(70)
        {
            let steps = r.range(1, 5);
            for step in 1..=steps {
                let at = delay * u32::try_from(step).unwrap_or(1)
                    / u32::try_from(steps + 1).unwrap_or(1);
                let frame = json!({"jsonrpc": "2.0", "method": "notifications/progress",
                    "params": {"progressToken": p, "progress": step, "total": steps, "message": token}});
                self.frame(at, &frame, Some(id), false);
            }
            if self.rng.chance(5) {
                // Progress after the answer: the client must drop it.
                let at = delay + self.rng.ms(1, 50);
                let frame = json!({"jsonrpc": "2.0", "method": "notifications/progress",
                    "params": {"progressToken": p, "progress": 99, "message": token}});
                self.frame(at, &frame, Some(id), false);
            }
        }
        // The plan's one-off fault, on one call in a few: its stream is lost mid-answer (after
        // its first progress, if any, before the answer), or its answer's frame is cut.
        if !self.armed
            && matches!(self.plan.http, Some(HttpFault::StreamLost | HttpFault::Cut))
            && self.rng.chance(40)
        {
            self.armed = true;
            if self.plan.http == Some(HttpFault::StreamLost) {
                let ms = delay.as_millis() as u64;
                let at = self.rng.ms(ms / 2, ms.saturating_sub(1).max(ms / 2));
                self.at(at, Item::Fail);
            } else {
                let mut bytes = serde_json::to_vec(&answer).expect("a Value serializes");
                bytes.push(b'\n');
                self.at(delay, Item::Cut(bytes));
                return;
            }
        }
        let r = &mut self.rng;
        match r.range(0, 99) {
            0..=3 => {} // never answered
            4..=8 => {
                let frame = json!({"jsonrpc": "2.0", "id": id,
                    "error": {"code": -32000, "message": format!("failed {token}")}});
                self.frame(delay, &frame, Some(id), true);
            }
            _ => {
                self.frame(delay, &answer, Some(id), true);
                if self.rng.chance(5) {
                    let again = delay + self.rng.ms(0, 100);
                    self.frame(again, &answer, Some(id), true);
                }
            }
        }
        let r = &mut self.rng;
        if r.chance(2) {
            let at = some_time(r);
            let n = r.range(0, 1_000);
            let frame = json!({"jsonrpc": "2.0", "id": 1_000_000_000u64 + n,
                "result": {"content": [{"type": "text", "text": "nobody asked"}]}});
            self.frame(at, &frame, None, false);
        }
        let r = &mut self.rng;
        if r.chance(1) {
            let at = some_time(r);
            let mut bytes = b"}{ not json".to_vec();
            bytes.push(b'\n');
            self.at(at, raw(bytes, false));
        }
        let r = &mut self.rng;
        if r.chance(2) {
            let at = some_time(r);
            let key = format!("sp{}", self.seq);
            self.pings.insert(key.clone(), false);
            let frame = json!({"jsonrpc": "2.0", "id": key, "method": "ping"});
            self.frame(at, &frame, None, false);
        }
        let r = &mut self.rng;
        if r.chance(1) {
            let at = some_time(r);
            let mut bytes = vec![b'x'; MAX_FRAME + 1];
            bytes.push(b'\n');
            self.at(at, raw(bytes, true));
        }
        let r = &mut self.rng;
        if r.chance(1) && !self.plan.typed() {
            let at = some_time(r);
            self.at(at, Item::Crash);
        }
    }
}

impl Server {
    /// A `tools/call` carrying `params.task`: the task is created at once (it runs from now),
    /// and its creation answered after a delay (or never, or refused with an error).
    fn on_task_call(&mut self, id: u64, params: Option<&Value>) {
        let token = params
            .and_then(|p| p.pointer("/arguments/token"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let r = &mut self.rng;
        let (after, duration, end, interval) = if self.calm {
            (r.ms(0, 5), r.ms(0, 50), TaskEnd::Completed, r.range(0, 50))
        } else {
            let after = if r.chance(85) {
                r.ms(0, 30)
            } else {
                r.ms(0, 400)
            };
            match r.range(0, 99) {
                0..=2 => return, // never answered (nor created)
                3..=5 => {
                    let frame = json!({"jsonrpc": "2.0", "id": id,
                        "error": {"code": -32000, "message": format!("failed {token}")}});
                    return self.frame(after, &frame, Some(id), true);
                }
                _ => {}
            }
            let duration = match r.range(0, 9) {
                0..=5 => r.ms(0, 100),
                6..=8 => r.ms(0, 500),
                _ => r.ms(0, 2_500),
            };
            let end = match r.range(0, 99) {
                0..=69 => TaskEnd::Completed,
                70..=79 => TaskEnd::Failed {
                    error: r.chance(50),
                },
                80..=89 => TaskEnd::Cancelled,
                _ => TaskEnd::Lost,
            };
            (after, duration, end, draw_interval(r))
        };
        let task = {
            let mut store = self.tasks.lock().unwrap_or_else(|e| e.into_inner());
            store.next += 1;
            let task = format!("task-{}", store.next);
            store.tasks.insert(
                task.clone(),
                SimTask {
                    token: token.clone(),
                    done_at: Instant::now() + duration,
                    end,
                    interval,
                    cancelled: false,
                },
            );
            task
        };
        self.log.push(Event::TaskCreated {
            conn: self.conn,
            id,
            task: task.clone(),
            token,
            end: end.name().to_owned(),
        });
        let frame = json!({"jsonrpc": "2.0", "id": id, "result": {"task": {
            "taskId": task, "status": "working", "pollInterval": interval}}});
        self.frame(after, &frame, Some(id), true);
    }

    /// `tasks/get`, `tasks/result`, `tasks/cancel`: answered from the store (after a delay,
    /// or never, or with an error, unless the run turned calm).
    fn on_task_request(&mut self, id: u64, method: &str, params: Option<&Value>) {
        let task = params
            .and_then(|p| p.get("taskId"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        if method == "tasks/cancel" {
            // Taken (and the task cancelled) whether or not its answer comes.
            self.log.push(Event::TaskCancelGot {
                conn: self.conn,
                task: task.clone(),
            });
            let now = Instant::now();
            let mut store = self.tasks.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(t) = store.tasks.get_mut(&task)
                && now < t.done_at
            {
                t.cancelled = true;
            }
        }
        let r = &mut self.rng;
        let after = if self.calm {
            r.ms(0, 5)
        } else {
            match r.range(0, 99) {
                0..=89 => r.ms(0, 5),
                90..=95 => r.ms(0, 300),
                96..=97 => return, // never answered
                // An error (the poll fails, and is tried again); not to `tasks/result`, whose
                // error is the tool's.
                _ if method != "tasks/result" => {
                    let frame = json!({"jsonrpc": "2.0", "id": id,
                        "error": {"code": -32603, "message": "busy"}});
                    let after = r.ms(0, 5);
                    return self.frame(after, &frame, Some(id), true);
                }
                _ => r.ms(0, 5),
            }
        };
        let fresh_interval = (!self.calm && r.chance(10)).then(|| draw_interval(r));
        let now = Instant::now();
        let mut store = self.tasks.lock().unwrap_or_else(|e| e.into_inner());
        let known = store
            .tasks
            .get_mut(&task)
            .filter(|t| !(t.end == TaskEnd::Lost && now >= t.done_at));
        let Some(t) = known else {
            drop(store);
            self.log.push(Event::TaskUnknown {
                conn: self.conn,
                task: task.clone(),
            });
            let frame = json!({"jsonrpc": "2.0", "id": id,
                "error": {"code": -32602, "message": format!("unknown task {task}")}});
            return self.frame(after, &frame, Some(id), true);
        };
        if let Some(interval) = fresh_interval {
            t.interval = interval;
        }
        let ended = now >= t.done_at;
        let status = match (t.cancelled, ended, t.end) {
            (true, _, _) => "cancelled",
            (false, false, _) => "working",
            (false, true, end) => end.name(),
        };
        let object = json!({"taskId": task, "status": status, "pollInterval": t.interval});
        let frame = match method {
            "tasks/result" => {
                // The tool's outcome, when the task ends (at once if it has).
                let wait = t.done_at.saturating_duration_since(now);
                let token = &t.token;
                let body = match (t.cancelled, t.end) {
                    (false, TaskEnd::Completed) => {
                        json!({"result": {"content": [{"type": "text", "text": token}]}})
                    }
                    (false, TaskEnd::Failed { error: false }) => json!({"result": {
                        "content": [{"type": "text", "text": token}], "isError": true}}),
                    (false, TaskEnd::Failed { error: true }) => {
                        json!({"error": {"code": -32000, "message": format!("failed {token}")}})
                    }
                    (false, TaskEnd::Lost) => json!({"error": {"code": -32602,
                        "message": format!("unknown task {task}")}}),
                    (true, _) | (false, TaskEnd::Cancelled) => json!({"error": {"code": -32000,
                        "message": format!("cancelled {token}")}}),
                };
                drop(store);
                let mut frame = body;
                frame["jsonrpc"] = json!("2.0");
                frame["id"] = json!(id);
                return self.frame(wait + after, &frame, Some(id), true);
            }
            _ => {
                drop(store);
                json!({"jsonrpc": "2.0", "id": id, "result": object})
            }
        };
        self.frame(after, &frame, Some(id), true);
    }
}

/// A task's poll interval, in milliseconds: mostly short, sometimes 0 (the client's floor
/// applies), sometimes a year (its cap applies).
fn draw_interval(r: &mut Rng) -> u64 {
    match r.range(0, 99) {
        0..=9 => 0,
        10..=14 => 31_536_000_000,
        _ => r.range(1, 250),
    }
}

fn raw(bytes: Vec<u8>, fault: bool) -> Item {
    Item::Frame {
        bytes,
        request: None,
        answer: false,
        init: false,
        fault,
    }
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}
