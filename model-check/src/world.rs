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

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use mcp_machine::{Machine, RequestId, SendOutcome, TimerKey};

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
    /// Generation `g` comes up.
    Up(u64),
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
}

/// One-shot kinds of server traffic, each enabled per configuration and used at most once.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u16)]
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
}

/// The environment: transports and the server.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Env {
    /// Every spawned generation.
    pub gens: BTreeMap<u64, GenEnv>,
    /// How the transport answers sends now (`None`: it takes them).
    pub send_mode: Option<SendOutcome>,
    /// Requests the server has seen: generation and how many answers it sent.
    pub on_wire: BTreeMap<RequestId, (u64, u8)>,
    /// Server requests with the handler: (generation, id).
    pub server_requests: BTreeSet<(u64, i64)>,
    /// Calls made so far.
    pub calls: u8,
    /// Callers that cancelled.
    pub cancelled: BTreeSet<u8>,
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
    pub junk_used: u16,
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
}

/// Properties that were broken (bits).
pub mod violation {
    /// A caller was answered twice.
    pub const DOUBLE_REPLY: u32 = 1 << 0;
    /// A call whose id ended (timeout, cancel, failure) got a server answer afterwards.
    pub const LATE_DELIVERED: u32 = 1 << 1;
    /// A frame was sent after the stop was accepted.
    pub const SENT_AFTER_STOP: u32 = 1 << 2;
    /// An id was issued twice.
    pub const ID_REUSED: u32 = 1 << 3;
    /// A reconnect delay outside the backoff bounds.
    pub const BACKOFF_BOUNDS: u32 = 1 << 4;
    /// An input of an older generation changed something.
    pub const STALE_CHANGED: u32 = 1 << 5;
    /// `notifications/cancelled` for a request the server never saw, or twice.
    pub const BAD_CANCEL: u32 = 1 << 6;
    /// Credit granted to a closed or dead transport.
    pub const CREDIT_AFTER_CLOSE: u32 = 1 << 7;
    /// `notifications/initialized` missing before a call, or sent twice.
    pub const INITIALIZED: u32 = 1 << 8;
    /// A late answer within the tombstone TTL was reported as unknown.
    pub const LATE_MISREPORTED: u32 = 1 << 9;
    /// A cancelled call was not answered at once.
    pub const CANCEL_UNANSWERED: u32 = 1 << 10;
    /// A stop was not answered at once, or two stops were both told "stopped".
    pub const STOP_REPLY: u32 = 1 << 11;
    /// An answer went to a caller that never called.
    pub const PHANTOM_REPLY: u32 = 1 << 12;
    /// A server answer to a live call did not reach its caller at once, or a good
    /// `initialize` answer did not make the connection ready.
    pub const ANSWER_LOST: u32 = 1 << 19;
    /// A transport open in initializing or ready had no read credit.
    pub const DEAF: u32 = 1 << 20;
    /// A server request (or a cancel we owe) is neither on the wire nor being retried, or
    /// went on the wire twice.
    pub const OWED: u32 = 1 << 21;
    /// A move did not bring about what it must: a dropped frame reported, a notification or
    /// progress delivered, a server request answered with the right code or handed to the
    /// handler, a refused or spent request answered, a busy one offered again in time.
    pub const UNREPORTED: u32 = 1 << 22;
    /// The connection closed without a stop, or closed without its exit, or a transport
    /// generation was never closed.
    pub const UNASKED_CLOSE: u32 = 1 << 23;
    /// A call told the connection is unavailable was not given the cause of the last failure.
    pub const WRONG_CAUSE: u32 = 1 << 24;
    /// When a session expired, a call that never ran on it was failed, or a call that may
    /// have run was not answered at once, or a kept call was not sent again as soon as the
    /// new session was initialized (or was sent again twice).
    pub const SESSION: u32 = 1 << 25;
    /// An expired session was not initialized again at once while the budget lasted, or
    /// was initialized again at once past it.
    pub const REINIT: u32 = 1 << 26;
    /// Progress delivered for a call already answered.
    pub const PROGRESS_AFTER_REPLY: u32 = 1 << 13;
    /// A row marked impossible in the table fired.
    pub const IMPOSSIBLE_ROW: u32 = 1 << 14;
    /// A new generation's ready did not ask again for exactly the live subscription.
    pub const RESTORE: u32 = 1 << 17;
    /// A caller got the answer to another request.
    pub const WRONG_CALLER: u32 = 1 << 18;
    /// A frame was offered to a closed or dead generation, or to one that is not current.
    pub const SENT_ON_DEAD: u32 = 1 << 15;
    /// A new transport was spawned while an older one was neither closed nor down.
    pub const LEAKED_TRANSPORT: u32 = 1 << 16;

    /// Every violation bit, each once: a new bit that collides with another fails the test.
    pub const ALL: [u32; 27] = [
        DOUBLE_REPLY,
        LATE_DELIVERED,
        SENT_AFTER_STOP,
        ID_REUSED,
        BACKOFF_BOUNDS,
        STALE_CHANGED,
        BAD_CANCEL,
        CREDIT_AFTER_CLOSE,
        INITIALIZED,
        LATE_MISREPORTED,
        CANCEL_UNANSWERED,
        STOP_REPLY,
        PHANTOM_REPLY,
        PROGRESS_AFTER_REPLY,
        IMPOSSIBLE_ROW,
        SENT_ON_DEAD,
        LEAKED_TRANSPORT,
        RESTORE,
        WRONG_CALLER,
        ANSWER_LOST,
        DEAF,
        OWED,
        UNREPORTED,
        UNASKED_CLOSE,
        WRONG_CAUSE,
        SESSION,
        REINIT,
    ];

    #[cfg(test)]
    mod tests {
        #[test]
        fn violation_bits_are_distinct() {
            let mut seen = 0u32;
            for bit in super::ALL {
                assert_eq!(bit.count_ones(), 1);
                assert_eq!(seen & bit, 0, "bit {bit:#x} used twice");
                seen |= bit;
            }
        }
    }
}

/// Things that happened at least once (bits), for the `sometimes` vacuity guards.
pub mod seen {
    /// Ready was reached.
    pub const READY: u32 = 1 << 0;
    /// A call got a server result.
    pub const CALL_OK: u32 = 1 << 1;
    /// A call that had a busy send got a server result.
    pub const BUSY_THEN_OK: u32 = 1 << 2;
    /// Ready on a second or later generation.
    pub const RECONNECT_READY: u32 = 1 << 3;
    /// A late response was dropped as late.
    pub const LATE_DROPPED: u32 = 1 << 4;
    /// A call timed out.
    pub const TIMED_OUT: u32 = 1 << 5;
    /// A stop found calls in flight.
    pub const STOP_WITH_CALLS: u32 = 1 << 6;
    /// A subscription was restored after a reconnect.
    pub const RESTORED: u32 = 1 << 7;
    /// Ready on a third or later generation (two full reconnect cycles).
    pub const SECOND_RECONNECT_READY: u32 = 1 << 8;
    /// A transport died while a server request was with the handler.
    pub const CRASH_WITH_SERVER_REQUEST: u32 = 1 << 9;
    /// Three calls were in flight at once.
    pub const THREE_IN_FLIGHT: u32 = 1 << 10;
    /// A call kept across a session expiry got the new session's answer.
    pub const RESENT_ANSWERED: u32 = 1 << 11;
    /// A session expiry past the re-initialization budget took the backoff path.
    pub const REINITS_SPENT: u32 = 1 << 12;
}

/// Ghost history.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Ghost {
    /// Calls by caller.
    pub calls: BTreeMap<u8, CallGhost>,
    /// Answers per stopper.
    pub stops: BTreeMap<u8, u8>,
    /// A stop was answered "stopped" (not "already").
    pub stop_accepted: bool,
    /// Who each issued id belongs to.
    pub owners: BTreeMap<RequestId, Owner>,
    /// Ids that ended without a server answer, with when.
    pub ended: BTreeMap<RequestId, Duration>,
    /// Ids a cancel was sent for.
    pub cancels: BTreeSet<RequestId>,
    /// `notifications/initialized` sent per generation.
    pub initialized: BTreeMap<u64, u8>,
    /// Reconnect delays scheduled since the last ready.
    pub backoff_n: u32,
    /// The subscription is live: acknowledged, and no unsubscribe was asked since it was asked.
    pub sub_live: bool,
    /// An unsubscribe was asked.
    pub unsubscribed: bool,
    /// Restore requests for the subscription sent, per generation.
    pub restores: BTreeMap<u64, u8>,
    /// Answers the server is owed for its requests, per (generation, id; -1 for a string id).
    pub owed: BTreeMap<(u64, i64), u8>,
    /// Ids of requests the server saw that ended early on a live transport: a cancel is owed.
    pub cancel_owed: BTreeSet<RequestId>,
    /// Server requests of the handler the server cancelled (owed nothing any more).
    pub server_cancelled: BTreeSet<(u64, i64)>,
    /// Generations whose transport refused a frame for good.
    pub refused: BTreeSet<u64>,
    /// The bound of the current state (starting and initializing: the init bound; backoff:
    /// its jittered delay at most; closing: its exit bound), as a model-time deadline.
    pub phase_deadline: Option<Duration>,
    /// The machine asked the driver to exit.
    pub exited: bool,
    /// Why the last transport attempt ended, as the machine must tell callers it turns away.
    pub cause: Option<Cause>,
    /// Callers whose request never ran on a session that expired: they must be sent again
    /// once the new session is initialized (removed when that send is seen).
    pub parked: BTreeSet<u8>,
    /// Callers whose request was sent again on a new session (until answered).
    pub resent: BTreeSet<u8>,
    /// Sessions initialized again at once since a call was last answered by the server.
    pub reinits: u32,
    /// Broken properties (bits of [`violation`]).
    pub violations: u32,
    /// Vacuity guards met (bits of [`seen`]).
    pub seen: u32,
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
