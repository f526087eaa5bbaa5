//! The explored state: the real machine, the environment around it, and ghost history.
//!
//! The environment is an honest transport (it delivers a frame only against a granted credit,
//! says up and down once per generation) carrying an adversarial server and adversarial
//! callers: any request the server has seen may be answered late or twice, unknown ids,
//! garbage, oversized frames, pings, server requests and notifications arrive whenever credit
//! allows, sends may be busy or fail, transports may die at any point, callers call, cancel
//! and stop concurrently, and any armed timer may fire at any time.
//!
//! Properties read the ghost history kept here from the machine's *outputs* (actions and
//! armed deadlines), never the machine's own bookkeeping, so a buggy machine cannot hide its
//! own bug.

use crate::sorted::{SortedMap, SortedSet};
use std::time::Duration;

use mcp_machine::{Machine, RequestId, SendOutcome, TimerKey};

pub use crate::env::frames::{ListenEndKind, ServerFrame, TaskReply};

/// What the ghost knows of one listen the client sent (2026-07-28 `subscriptions/listen`),
/// from the wire and the environment's moves alone.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct ListenGhost {
    /// The generation it went out on.
    pub generation: u64,
    /// It asks for the resource (`resourceSubscriptions`).
    pub uri: bool,
    /// It asks for list changes.
    pub lists: bool,
    /// When it was sent (model time): unacknowledged at its request timeout, it is lost.
    pub sent_at: Duration,
    /// Busy outcomes of its send.
    pub busy: u8,
    /// The environment acknowledged it (taken or not).
    pub acked: bool,
    /// The environment ended it (a response or its cancel).
    pub ended: bool,
    /// The client took its acknowledgement (it was the client's listen then): its
    /// notifications are due until it is dropped or ends.
    pub taken: bool,
    /// Its acknowledgement honored the resource.
    pub honored: bool,
    /// When the client took its acknowledgement (model time).
    pub acked_at: Duration,
    /// The client gave it up (replaced, timed out, its send refused, nothing wanted): a
    /// cancel is owed when the server saw it.
    pub dropped: bool,
    /// The server ended it while the client kept it: nothing is owed for it.
    pub dead: bool,
}

impl ListenGhost {
    /// Neither given up by the client nor ended by the server while kept.
    pub fn alive(&self) -> bool {
        !self.dropped && !self.dead
    }
}

/// What kind of server a transport generation talks to, chosen when it comes up: which
/// answers the environment may give to `server/discover` and to `initialize`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum ServerKind {
    /// The handshake era only: `server/discover` is an unknown method (or never answered, or
    /// kills it); `initialize` is answered.
    #[default]
    Legacy = 1 << 0,
    /// The stateless era only: `server/discover` answered (possibly with -32022 first);
    /// `initialize` refused with -32022.
    Modern = 1 << 1,
    /// Both: `server/discover` and `initialize` answered.
    Dual = 1 << 2,
    /// A legacy server that answers `server/discover` with a result that is not a
    /// DiscoverResult.
    Garbage = 1 << 3,
}

impl ServerKind {
    /// Every kind, in order.
    pub const ALL: [ServerKind; 4] = [
        ServerKind::Legacy,
        ServerKind::Modern,
        ServerKind::Dual,
        ServerKind::Garbage,
    ];
}

/// One move of the environment (the model's action).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Move {
    /// Caller `n` makes its call.
    Call(u8),
    /// Caller `n` cancels its call (also after its answer: the race of a dropped future).
    Cancel(u8),
    /// Notifier `n` sends a notification.
    Notify(u8),
    /// Stopper `n` asks to stop.
    Stop(u8),
    /// Generation `g` comes up, talking to a server of this kind.
    Up(u64, ServerKind),
    /// Generation `g` goes down.
    Down(u64),
    /// Generation `g` ends because the server ended its session, saying it refused the
    /// requests picked by the mask (bit `i`: the `i`-th unanswered call request of `g` on the
    /// wire, in id order).
    Expire(u64, u8),
    /// Generation `g` delivers a frame (spending a credit).
    Frame(u64, ServerFrame),
    /// The current transport starts answering sends this way (Ok, Busy: its queue is full,
    /// Failed: it refuses frames). The driver feeds each outcome back at once (the machine's
    /// send contract), so the outcome of a send is the transport's mode when it is made.
    SendMode(SendOutcome),
    /// The handler answers server request `id` of generation `g`.
    HandlerReply(u64, i64),
    /// The handler gives (`true`) or fails (`false`) input `key` (0: `q`, 1: `r`) of the
    /// round of request `id` of generation `g`.
    InputReply(u64, RequestId, u8, bool),
    /// An armed timer fires.
    Timer(TimerKey),
    /// The subscriber subscribes to the resource.
    Subscribe,
    /// The subscriber's subscription is ended by another caller's unsubscribe.
    Unsubscribe,
    /// The world falls silent until just past the earliest deadline the machine owes (a
    /// caller's, or its state's bound), firing every timer due on the way. Enabled only when
    /// no timer that could meet that deadline is armed before it: a machine that forgot one
    /// is caught past its deadline.
    Tick,
    /// A long silence: time runs for a tombstone's TTL plus one sweep period, every timer due
    /// on the way firing in order (bounded per configuration).
    Wait,
    /// The authorization the machine asked for on generation `g` ends: with a token (`true`)
    /// or failed (`false`). The driver reports it whenever it ends, also after its generation
    /// was closed (stale then).
    Authorize(u64, bool),
    /// Caller `n` asks the client to poll a task by its id ([`crate::env::RESUMED_TASK`], a
    /// task the server may know or not), as a host does with a task id it kept.
    Resume(u8),
}

impl Move {
    /// The transport generation the move is an input of (a transport's, the handler's or
    /// the authorization's), if any: an older one's is stale.
    pub fn generation(self) -> Option<u64> {
        match self {
            Move::Up(g, _)
            | Move::Down(g)
            | Move::Expire(g, _)
            | Move::Frame(g, _)
            | Move::HandlerReply(g, _)
            | Move::InputReply(g, ..)
            | Move::Authorize(g, _) => Some(g),
            Move::Call(_)
            | Move::Resume(_)
            | Move::Cancel(_)
            | Move::Notify(_)
            | Move::Stop(_)
            | Move::SendMode(_)
            | Move::Timer(_)
            | Move::Subscribe
            | Move::Unsubscribe
            | Move::Tick
            | Move::Wait => None,
        }
    }
}

/// One-shot kinds of server traffic, each enabled per configuration and used at most once.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u32)]
pub enum Junk {
    /// [`ServerFrame::InitBadVersion`].
    InitBadVersion = 1 << 0,
    /// [`ServerFrame::InitError`].
    InitError = 1 << 1,
    /// [`ServerFrame::Unknown`].
    Unknown = 1 << 2,
    /// [`ServerFrame::Malformed`].
    Malformed = 1 << 3,
    /// [`ServerFrame::Oversized`].
    Oversized = 1 << 4,
    /// [`ServerFrame::Ping`].
    Ping = 1 << 5,
    /// [`ServerFrame::Sampling`] (and its cancel).
    Sampling = 1 << 6,
    /// [`ServerFrame::Undeclared`].
    Undeclared = 1 << 7,
    /// [`ServerFrame::Log`].
    Log = 1 << 8,
    /// [`ServerFrame::Progress`].
    Progress = 1 << 9,
    /// A second answer to a request.
    Duplicate = 1 << 10,
    /// A send outcome `Failed`.
    SendFailed = 1 << 11,
    /// [`ServerFrame::ServerCancel`] for a server request being handled.
    ServerCancel = 1 << 12,
    /// [`ServerFrame::SamplingAgain`] while the first is being handled.
    SamplingAgain = 1 << 13,
    /// [`ServerFrame::ElicitUrl`].
    ElicitUrl = 1 << 14,
    /// [`ServerFrame::SamplingOther`].
    SamplingOther = 1 << 15,
    /// [`ServerFrame::AnswerBadType`] (modern generations only).
    BadResultType = 1 << 16,
    /// [`ServerFrame::InputRequired`] and its variants (modern generations only; repeatable).
    InputRequired = 1 << 17,
    /// A handler error to an input request.
    InputError = 1 << 18,
    /// [`ServerFrame::CallLost`] and [`ServerFrame::CallVersionRefused`] (modern generations
    /// only; repeatable: the reissue cap is what bounds them).
    Reissue = 1 << 19,
    /// [`ServerFrame::HeaderMismatch`] (modern generations only; repeatable: once per call is
    /// what bounds the listing again).
    Relist = 1 << 20,
    /// [`ServerFrame::AuthRequired`] for the handshake request or a call (repeatable: the
    /// authorization budget and once per call are what bound them).
    Auth = 1 << 21,
    /// A generation that goes down before it came up could not be spawned for good (the
    /// program does not exist): [`Move::Down`] carries a permanent spawn error then.
    Permanent = 1 << 22,
}

/// The environment's view of one transport generation.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct GenEnv {
    /// It said up.
    pub up: bool,
    /// It said down (nothing more comes from it).
    pub down: bool,
    /// The machine closed it.
    pub closed: bool,
    /// Frames it may still deliver.
    pub credit: u8,
    /// The server it talks to.
    pub kind: ServerKind,
}

/// The environment: transports and the server.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Env {
    /// Every spawned generation.
    pub gens: SortedMap<u64, GenEnv>,
    /// How the transport answers sends now (`None`: it takes them).
    pub send_mode: Option<SendOutcome>,
    /// Requests the server has seen: generation and how many answers it sent.
    pub on_wire: SortedMap<RequestId, (u64, u8)>,
    /// Server requests with the handler: (generation, id).
    pub server_requests: SortedSet<(u64, i64)>,
    /// Input requests with the handler: (generation, the id the round answered, the key: 0
    /// for `q`, 1 for `r`).
    pub inputs: SortedSet<(u64, RequestId, u8)>,
    /// Calls made so far.
    pub calls: u8,
    /// Callers that cancelled.
    pub cancelled: SortedSet<u8>,
    /// Notifies made so far.
    pub notifies: u8,
    /// Stops made so far.
    pub stops: u8,
    /// Transports that died on their own.
    pub crashes: u8,
    /// Sessions the server ended.
    pub expiries: u8,
    /// Switches to the busy mode so far.
    pub busy: u8,
    /// Long silences so far.
    pub waits: u8,
    /// Junk already used (bits of [`Junk`]).
    pub junk_used: u32,
    /// Subscribes made so far.
    pub subscribes: u8,
    /// Listen-tagged notifications sent so far.
    pub listen_notes: u8,
    /// Listen ends sent so far.
    pub listen_ends: u8,
    /// Tasks the server created so far.
    pub tasks_created: u8,
    /// Tasks resumed by their id so far.
    pub resumes: u8,
}

/// Why a transport attempt ended, as the environment caused it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Cause {
    /// The transport died.
    Down,
    /// Spawning plus the handshake ran out of time.
    InitTimeout,
    /// An oversized frame.
    Oversized,
    /// `initialize` answered with an error.
    Refused,
    /// `initialize` answered with an unknown version.
    UnsupportedVersion,
    /// `initialize` could not be sent.
    InitNotSent,
    /// `notifications/initialized` could not be sent.
    InitializedNotSent,
    /// Modern forced: the server did not answer `server/discover` as a modern one.
    NotModern,
    /// Modern forced: `server/discover` went unanswered.
    ProbeTimeout,
    /// The handshake request was refused for want of authorization past the budget, or the
    /// authorization failed.
    Unauthorized,
}

/// Who an id was issued for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Owner {
    /// `initialize` on a generation.
    Init(u64),
    /// A caller's call.
    Call(u8),
    /// A request of the client's own restoring the session on a generation.
    Restore(u64),
    /// The client's own listing of the tools after a -32020, on a generation.
    Relist(u64),
    /// `server/discover` on a generation.
    Probe(u64),
    /// `subscriptions/listen` on a generation.
    Listen(u64),
    /// A request of caller `u8`'s task (`tasks/get`, `tasks/result`, `tasks/update`).
    Task(u8, TaskReq),
    /// A `tasks/cancel` for caller `u8`'s task.
    TaskCancel(u8),
}

/// Which of a task's requests an id is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TaskReq {
    /// `tasks/get`: a poll.
    Get,
    /// `tasks/result` (2025-11-25): the outcome.
    Result,
    /// `tasks/update` (2026-07-28): the inputs.
    Update,
}

/// What the ghost knows of a caller's task (the server created it answering the caller's
/// live `tools/call`), from the wire and the environment's moves alone.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct TaskGhost {
    /// The task's number: the id of the `tools/call` the server answered with it, or
    /// [`crate::env::RESUMED_TASK`] for a task a caller resumed by its id (its task id on the
    /// wire is `t<number>`).
    pub task: RequestId,
    /// Created in the 2026-07-28 era.
    pub modern: bool,
    /// The poll interval in force (the server's last one, floored and capped as configured).
    pub interval: Duration,
    /// When a `tasks/get` may go out at the earliest: the interval past the last answer to
    /// the task (or its creation), or past the last `tasks/get` sent.
    pub not_before: Duration,
    /// 2025-11-25: the server said `input_required`, `completed` or `failed`: the next
    /// request for the task is `tasks/result`, not `tasks/get` (on this connection).
    pub settled: bool,
    /// The client may cancel the task on the server: its caller cancelled, its task deadline
    /// passed, or its input failed or was refused.
    pub may_cancel: bool,
    /// `tasks/cancel` sent for it.
    pub cancels: u8,
    /// Input keys (bit 0: `q`, bit 1: `r`) the server acknowledged (by a `tasks/update` ack).
    pub answered_keys: u8,
    /// Input keys the update in flight carries.
    pub updating: u8,
    /// Input keys handed to the handler in the round under way.
    pub handed: u8,
    /// The connection was lost while the task lived: it must be polled again at the next
    /// ready.
    pub repoll: bool,
    /// The server ended it for the client (an outcome, a cancel, lost): nothing more to poll.
    pub over: bool,
    /// Its request on the wire not answered yet (as the ghost saw it go out).
    pub inflight: Option<RequestId>,
    /// A caller resumed it by its id and its first `tasks/get` has not gone out yet (it must,
    /// in the step of the resume).
    pub resumed: bool,
}

/// What the ghost knows of one call.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct CallGhost {
    /// Answers it got.
    pub replies: u8,
    /// Its request id, once sent.
    pub request: Option<RequestId>,
    /// One of its sends was busy.
    pub busy_seen: bool,
    /// When it was made (model time).
    pub started: Duration,
    /// When it must be answered by (model time): its timeout from the call, moved by progress
    /// when it asked for that, never past its total cap.
    pub deadline: Duration,
    /// Busy outcomes of its request frame.
    pub busy: u8,
    /// A busy request frame must be offered again by then (model time).
    pub resend_due: Option<Duration>,
    /// It asked to wait for ready and was made while no connection was ready: it may not be
    /// turned away as unavailable, nor go out before a connection is ready.
    pub waits: bool,
    /// While it waited, an attempt failed or a connection was lost.
    pub waited_across_loss: bool,
}

/// Ghost history.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Ghost {
    /// Calls by caller.
    pub calls: SortedMap<u8, CallGhost>,
    /// Within a step only: the step's input is a transport that failed for good (false
    /// between steps).
    pub permanent_step: bool,
    /// Answers per stopper.
    pub stops: SortedMap<u8, u8>,
    /// A stop was answered "stopped" (not "already").
    pub stop_accepted: bool,
    /// Who each issued id belongs to.
    pub owners: SortedMap<RequestId, Owner>,
    /// Ids that ended without a server answer, with when.
    pub ended: SortedMap<RequestId, Duration>,
    /// Ids a cancel was sent for.
    pub cancels: SortedSet<RequestId>,
    /// `notifications/initialized` sent per generation.
    pub initialized: SortedMap<u64, u8>,
    /// Reconnect delays scheduled since the backoff sequence last restarted for sure (a
    /// caller answered with a result by the live ready session, or that session stayed up
    /// for `session_stable`): the most the machine's count may be.
    pub backoff_hi: u32,
    /// The same since it last may have restarted (any frame of the live ready session): the
    /// least the machine's count may be.
    pub backoff_lo: u32,
    /// When the machine last entered ready, until the next reconnect delay is scheduled.
    pub ready_since: Option<Duration>,
    /// The subscription is live: acknowledged, and no unsubscribe was asked since it was asked.
    pub sub_live: bool,
    /// An unsubscribe was asked.
    pub unsubscribed: bool,
    /// Restore requests for the subscription sent, per generation.
    pub restores: SortedMap<u64, u8>,
    /// Answers the server is owed for its requests, per (generation, id; -1 for a string id).
    pub owed: SortedMap<(u64, i64), u8>,
    /// Ids of requests the server saw that ended early on a live transport: a cancel is owed.
    pub cancel_owed: SortedSet<RequestId>,
    /// Server requests of the handler the server cancelled (owed nothing any more).
    pub server_cancelled: SortedSet<(u64, i64)>,
    /// Generations whose transport refused a frame for good.
    pub refused: SortedSet<u64>,
    /// The bound of the current state (starting and initializing: the init bound; backoff:
    /// its jittered delay at most; closing: its exit bound), as a model-time deadline.
    pub phase_deadline: Option<Duration>,
    /// The machine asked the driver to exit.
    pub exited: bool,
    /// Why the last transport attempt ended, as the machine must tell callers it turns away.
    pub cause: Option<Cause>,
    /// Callers whose request never ran on a session that expired: they must be sent again
    /// once the new session is initialized (removed when that send is seen).
    pub parked: SortedSet<u8>,
    /// Callers whose request was sent again on a new session (until answered).
    pub resent: SortedSet<u8>,
    /// Sessions initialized again at once since a call was last answered by the server.
    pub reinits: u32,
    /// The latest `server/discover` id sent per generation.
    pub probes: SortedMap<u64, RequestId>,
    /// Generations whose live probe the environment answered as a modern server (a
    /// DiscoverResult or -32022).
    pub modern_answered: SortedSet<u64>,
    /// Generations whose live probe the environment answered with a DiscoverResult.
    pub discovered: SortedSet<u64>,
    /// Generations whose live probe got -32022 first.
    pub version_refused: SortedSet<u64>,
    /// Generations `initialize` was sent on.
    pub init_sent: SortedSet<u64>,
    /// Generations `initialize` was sent on while the probe had no answer.
    pub silent: SortedSet<u64>,
    /// Generations spawned at once after their predecessor's server died of the probe.
    pub respawned: SortedSet<u64>,
    /// The next generation must probe (a respawned one's handshake failed).
    pub must_probe: bool,
    /// Per caller: the retry its `input_required` round owes until it is sent: the
    /// `requestState` expected (`None` for none), and how many inputs were asked for.
    pub mrtr: SortedMap<u8, (Option<String>, u8)>,
    /// Per caller: `input_required` retries sent.
    pub rounds: SortedMap<u8, u8>,
    /// Callers sent again with inputs at least once (until answered).
    pub retried: SortedSet<u8>,
    /// Callers whose request was lost while they had reissues left: their next fresh id is
    /// the reissue.
    pub reissue_due: SortedSet<u8>,
    /// Reissues per caller.
    pub reissues: SortedMap<u8, u8>,
    /// The client's own listing of the tools in flight, once sent (until answered or ended).
    pub relist_in_flight: Option<RequestId>,
    /// Callers refused with -32020 once, waiting for that listing (until sent again).
    pub relist_waiting: SortedSet<u8>,
    /// Callers refused with -32020 once already.
    pub relisted: SortedSet<u8>,
    /// Callers sent again after a listing of the tools (until answered).
    pub resent_relisted: SortedSet<u8>,
    /// Requests of the client's own found busy: busy outcomes so far, and when the next offer
    /// is due while sends are left.
    pub own_busy: SortedMap<RequestId, (u8, Option<Duration>)>,
    /// The listens the client sent, by id.
    pub listens: SortedMap<RequestId, ListenGhost>,
    /// The server refused the client's listen since the interest last changed.
    pub listen_refused: bool,
    /// Listens of the client's lost since the last ready (ended by the server but refused,
    /// timed out, their send refused).
    pub listen_losses: u8,
    /// Listens sent in a step where timers fired (reopenings), since the last ready.
    pub listen_reopens: u8,
    /// The last ready generation spoke the modern era, and no `initialize` was refused as a
    /// modern server refuses it since (the client's verdict is modern).
    pub verdict_modern: bool,
    /// Generations with an authorization asked for and not ended (the driver's).
    pub auth_pending: SortedSet<u64>,
    /// Authorizations asked for since a call or a request of the client's own was last
    /// answered (the ghost forgets at least as often as the machine may).
    pub authorizations: u32,
    /// Callers refused for want of authorization, waiting for one, with the generation.
    pub auth_waiting: SortedMap<u8, u64>,
    /// Refusals for want of authorization per caller.
    pub auth_refusals: SortedMap<u8, u8>,
    /// Callers that must be sent again under a new id (an authorization ended with a token).
    pub auth_resend_due: SortedSet<u8>,
    /// Callers sent again after an authorization (until answered).
    pub auth_resent: SortedSet<u8>,
    /// The generation whose handshake request waits for an authorization.
    pub handshake_auth: Option<u64>,
    /// That generation's handshake request was sent again after its authorization.
    pub handshake_authorized: SortedSet<u64>,
    /// The tasks the server created for callers, by caller.
    pub tasks: SortedMap<u8, TaskGhost>,
    /// Broken properties (the bits each module of [`crate::properties`] declares).
    pub violations: u64,
    /// Vacuity guards met (bits of [`crate::properties::guards`]).
    pub seen: u64,
}

/// The explored state.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct World {
    /// The real machine.
    pub m: Machine,
    /// The environment.
    pub env: Env,
    /// Ghost history.
    pub ghost: Ghost,
}

impl World {
    /// Whether every call made so far has been answered.
    pub fn all_calls_answered(&self) -> bool {
        self.ghost.calls.values().all(|c| c.replies >= 1)
    }
}
