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
    /// A DiscoverResult naming the modern version (and `serverInfo`).
    DiscoverOk(RequestId),
    /// -32022 naming the modern version as supported (the request-metadata scenario's trick:
    /// even when that version was asked for).
    DiscoverVersion(RequestId),
    /// A legacy server's answer to an unknown method (-32601).
    ProbeError(RequestId),
    /// A result to `server/discover` that is not a DiscoverResult (`{}`).
    DiscoverGarbage(RequestId),
    /// A modern server's refusal of `initialize` (-32022 naming the modern version).
    InitModernRefusal(RequestId),
    /// A modern result of a type the client does not know (`resultType: task`).
    AnswerBadType(RequestId),
    /// `input_required` asking for one sampling input (key `q`), with a `requestState`
    /// naming the id it answers.
    InputRequired(RequestId),
    /// `input_required` asking for two sampling inputs (keys `q` and `r`), without a
    /// `requestState`.
    InputRequiredNoState(RequestId),
    /// `input_required` with a `requestState` only (nothing to ask).
    InputRequiredStateOnly(RequestId),
    /// The HTTP transport's answer for a modern request whose response stream broke
    /// (STREAM_LOST): the request is lost.
    CallLost(RequestId),
    /// -32022 naming the modern version, answering a call.
    CallVersionRefused(RequestId),
    /// -32020 (the call's headers did not match), answering a call.
    HeaderMismatch(RequestId),
    /// The acknowledgement of a listen: honoring all it asks for (`true`: list changes and
    /// the resource) or only the list changes (`false`).
    ListenAck(RequestId, bool),
    /// `notifications/resources/updated` tagged with a listen's id.
    ListenNote(RequestId),
    /// A list change tagged with an id no listen ever had.
    ListenStray,
    /// The server ends a listen with a response.
    ListenEnd(RequestId, ListenEndKind),
    /// The server ends a listen with `notifications/cancelled` (stdio).
    ListenCancel(RequestId),
    /// The HTTP transport's AUTH_REQUIRED answering a request: the server answered it 401
    /// (the client can authorize).
    AuthRequired(RequestId),
}

/// How the server ends a listen with a response.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ListenEndKind {
    /// Its `complete` result (the graceful end).
    Complete,
    /// STREAM_LOST: its stream broke.
    Lost,
    /// -32601: the server serves no listen.
    Refused,
    /// -32603: any other error.
    Error,
}

impl ListenEndKind {
    /// Every kind, in order.
    pub const ALL: [ListenEndKind; 4] = [
        ListenEndKind::Complete,
        ListenEndKind::Lost,
        ListenEndKind::Refused,
        ListenEndKind::Error,
    ];
}

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
    pub const DOUBLE_REPLY: u64 = 1 << 0;
    /// A call whose id ended (timeout, cancel, failure) got a server answer afterwards.
    pub const LATE_DELIVERED: u64 = 1 << 1;
    /// A frame was sent after the stop was accepted.
    pub const SENT_AFTER_STOP: u64 = 1 << 2;
    /// An id was issued twice.
    pub const ID_REUSED: u64 = 1 << 3;
    /// A reconnect delay outside the backoff bounds.
    pub const BACKOFF_BOUNDS: u64 = 1 << 4;
    /// An input of an older generation changed something.
    pub const STALE_CHANGED: u64 = 1 << 5;
    /// `notifications/cancelled` for a request the server never saw, or twice.
    pub const BAD_CANCEL: u64 = 1 << 6;
    /// Credit granted to a closed or dead transport.
    pub const CREDIT_AFTER_CLOSE: u64 = 1 << 7;
    /// `notifications/initialized` missing before a call, or sent twice.
    pub const INITIALIZED: u64 = 1 << 8;
    /// A late answer within the tombstone TTL was reported as unknown.
    pub const LATE_MISREPORTED: u64 = 1 << 9;
    /// A cancelled call was not answered at once.
    pub const CANCEL_UNANSWERED: u64 = 1 << 10;
    /// A stop was not answered at once, or two stops were both told "stopped".
    pub const STOP_REPLY: u64 = 1 << 11;
    /// An answer went to a caller that never called.
    pub const PHANTOM_REPLY: u64 = 1 << 12;
    /// A server answer to a live call did not reach its caller at once, or a good
    /// `initialize` answer did not make the connection ready.
    pub const ANSWER_LOST: u64 = 1 << 19;
    /// A transport open in initializing or ready had no read credit.
    pub const DEAF: u64 = 1 << 20;
    /// A server request (or a cancel we owe) is neither on the wire nor being retried, or
    /// went on the wire twice.
    pub const OWED: u64 = 1 << 21;
    /// A move did not bring about what it must: a dropped frame reported, a notification or
    /// progress delivered, a server request answered with the right code or handed to the
    /// handler, a refused or spent request answered, a busy one offered again in time.
    pub const UNREPORTED: u64 = 1 << 22;
    /// The connection closed without a stop, or closed without its exit, or a transport
    /// generation was never closed.
    pub const UNASKED_CLOSE: u64 = 1 << 23;
    /// A call told the connection is unavailable was not given the cause of the last failure.
    pub const WRONG_CAUSE: u64 = 1 << 24;
    /// When a session expired, a call that never ran on it was failed, or a call that may
    /// have run was not answered at once, or a kept call was not sent again as soon as the
    /// new session was initialized (or was sent again twice).
    pub const SESSION: u64 = 1 << 25;
    /// An expired session was not initialized again at once while the budget lasted, or
    /// was initialized again at once past it.
    pub const REINIT: u64 = 1 << 26;
    /// A modern request went out on a generation before the server answered its probe as a
    /// modern server, `initialize` went to a server that answered the probe as a modern one,
    /// or a response (to a server request) went to a server whose era is modern or undecided.
    pub const ERA: u64 = 1 << 27;
    /// A generation taken for legacy after its server died of the probe failed its
    /// handshake, and the next generation did not probe again.
    pub const VERDICT: u64 = 1 << 28;
    /// An `input_required` round was not retried exactly: not under a new id, not with the
    /// round's inputs and its `requestState` as received (none when none was given), for
    /// another call, twice, or past the round cap.
    pub const MRTR: u64 = 1 << 29;
    /// A server that died of the probe was not spawned again at once in auto (the server not
    /// last found modern), or was spawned again without a backoff delay otherwise.
    pub const RESPAWN: u64 = 1 << 30;
    /// A modern call whose request was lost without an answer was not sent again at once
    /// under a new id while it had reissues left, or was not answered with the error past
    /// them; or, refused with -32020 the first time, it was answered, or no listing of the
    /// tools was in flight, or that listing ended and it was not sent again; or, refused so a
    /// second time, it was not answered.
    pub const REISSUE: u64 = 1 << 31;
    /// In modern ready, something was wanted and the client's listen did not ask for it (or
    /// asked for an unsubscribed resource), with no reopening armed and no excuse (a refusal
    /// since the interest last changed, or more losses than reopenings allowed); or a listen
    /// went out when nothing was wanted; or a tagged notification was delivered for a listen
    /// whose notifications are not due, or not delivered for one whose are; or a subscriber
    /// was answered done or not-honored by anything but an acknowledgement that kept or left
    /// out its resource; or a listen was reopened other than by its retry timer, past the
    /// reopening cap, or after a refusal.
    pub const LISTEN: u64 = 1 << 32;
    /// Authorization (HTTP with OAuth): an authorization was asked for while one for the same
    /// generation was under way, or past the budget of authorizations in a row; a request
    /// refused for want of authorization was sent again before the authorization ended with a
    /// token, or not sent again in the step it did; a call refused again after one was not
    /// answered; a failed authorization left a caller waiting or the handshake's attempt open;
    /// or a caller (or the handshake) waited for an authorization nobody was running.
    pub const AUTH: u64 = 1 << 33;
    /// Progress delivered for a call already answered.
    pub const PROGRESS_AFTER_REPLY: u64 = 1 << 13;
    /// A row marked impossible in the table fired.
    pub const IMPOSSIBLE_ROW: u64 = 1 << 14;
    /// A new generation's ready did not ask again for exactly the live subscription.
    pub const RESTORE: u64 = 1 << 17;
    /// A caller got the answer to another request.
    pub const WRONG_CALLER: u64 = 1 << 18;
    /// A frame was offered to a closed or dead generation, or to one that is not current.
    pub const SENT_ON_DEAD: u64 = 1 << 15;
    /// A new transport was spawned while an older one was neither closed nor down.
    pub const LEAKED_TRANSPORT: u64 = 1 << 16;

    /// Every violation bit, each once: a new bit that collides with another fails the test.
    pub const ALL: [u64; 34] = [
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
        ERA,
        VERDICT,
        MRTR,
        RESPAWN,
        REISSUE,
        LISTEN,
        AUTH,
    ];

    #[cfg(test)]
    mod tests {
        #[test]
        fn violation_bits_are_distinct() {
            let mut seen = 0u64;
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
    pub const READY: u64 = 1 << 0;
    /// A call got a server result.
    pub const CALL_OK: u64 = 1 << 1;
    /// A call that had a busy send got a server result.
    pub const BUSY_THEN_OK: u64 = 1 << 2;
    /// Ready on a second or later generation.
    pub const RECONNECT_READY: u64 = 1 << 3;
    /// A late response was dropped as late.
    pub const LATE_DROPPED: u64 = 1 << 4;
    /// A call timed out.
    pub const TIMED_OUT: u64 = 1 << 5;
    /// A stop found calls in flight.
    pub const STOP_WITH_CALLS: u64 = 1 << 6;
    /// A subscription was restored after a reconnect.
    pub const RESTORED: u64 = 1 << 7;
    /// Ready on a third or later generation (two full reconnect cycles).
    pub const SECOND_RECONNECT_READY: u64 = 1 << 8;
    /// A transport died while a server request was with the handler.
    pub const CRASH_WITH_SERVER_REQUEST: u64 = 1 << 9;
    /// Three calls were in flight at once.
    pub const THREE_IN_FLIGHT: u64 = 1 << 10;
    /// A call kept across a session expiry got the new session's answer.
    pub const RESENT_ANSWERED: u64 = 1 << 11;
    /// A session expiry past the re-initialization budget took the backoff path.
    pub const REINITS_SPENT: u64 = 1 << 12;
    /// Ready in the modern era.
    pub const READY_MODERN: u64 = 1 << 13;
    /// Ready in the legacy era after the probe was answered (the fallback).
    pub const READY_LEGACY_AFTER_PROBE: u64 = 1 << 14;
    /// Ready in the legacy era on a fresh process, after the server died of the probe.
    pub const READY_LEGACY_RESPAWNED: u64 = 1 << 15;
    /// Ready in the modern era after an unsupported-version answer was retried.
    pub const READY_MODERN_AFTER_RETRY: u64 = 1 << 16;
    /// Ready in the modern era after `initialize` was refused as by a modern server.
    pub const REPROBED_MODERN: u64 = 1 << 17;
    /// Modern forced: a server that is not modern was refused.
    pub const FORCED_REFUSED: u64 = 1 << 18;
    /// A modern result of a type the client cannot use was answered to its caller.
    pub const BAD_RESULT_TYPE: u64 = 1 << 19;
    /// Ready in the legacy era after a probe that got no answer.
    pub const READY_LEGACY_AFTER_SILENCE: u64 = 1 << 20;
    /// A call sent again with the inputs of an `input_required` round got a result.
    pub const MRTR_ANSWERED: u64 = 1 << 21;
    /// A handler's error to an input was answered to its caller.
    pub const INPUT_FAILED: u64 = 1 << 22;
    /// A call past the round cap was answered with the error.
    pub const ROUNDS_SPENT: u64 = 1 << 23;
    /// A call sent again after its request was lost got a result.
    pub const REISSUED_ANSWERED: u64 = 1 << 24;
    /// A call lost once more than the reissue cap was answered with the error.
    pub const REISSUES_SPENT: u64 = 1 << 25;
    /// A call sent again after the tools were listed again (a -32020) got a result.
    pub const RELISTED_ANSWERED: u64 = 1 << 26;
    /// A notification tagged with a listen whose notifications are due was delivered.
    pub const LISTEN_DELIVERED: u64 = 1 << 27;
    /// A notification tagged with a listen whose notifications are not due was dropped.
    pub const LISTEN_STRAY: u64 = 1 << 28;
    /// A modern subscriber was answered done by an acknowledgement.
    pub const LISTEN_SUBSCRIBED: u64 = 1 << 29;
    /// A modern subscriber was told its resource is not honored.
    pub const LISTEN_NOT_HONORED: u64 = 1 << 30;
    /// A listen's acknowledgement replaced an acknowledged one (make before break).
    pub const LISTEN_REPLACED: u64 = 1 << 31;
    /// A lost listen was opened again by its retry timer.
    pub const LISTEN_REOPENED: u64 = 1 << 32;
    /// Lost listens were given up past the cap.
    pub const LISTEN_GAVE_UP: u64 = 1 << 33;
    /// A refused listen was not opened again.
    pub const LISTEN_REFUSED: u64 = 1 << 34;
    /// A call sent again after an authorization got a result.
    pub const AUTH_RESENT_ANSWERED: u64 = 1 << 35;
    /// Ready after the handshake request was authorized.
    pub const AUTH_HANDSHAKE_READY: u64 = 1 << 36;
    /// A failed authorization answered a caller waiting for it.
    pub const AUTH_FAILED_ANSWERED: u64 = 1 << 37;
    /// A call refused again after an authorization was answered with the error.
    pub const AUTH_REFUSED_AGAIN: u64 = 1 << 38;
    /// A session that stayed up for `session_stable` restarted the backoff sequence.
    pub const STABLE_RESTART: u64 = 1 << 39;
    /// A ready session that proved nothing was followed by a grown backoff delay.
    pub const UNPROVEN_SESSION_BACKOFF: u64 = 1 << 40;
}

/// Ghost history.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Ghost {
    /// Calls by caller.
    pub calls: SortedMap<u8, CallGhost>,
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
    /// Broken properties (bits of [`violation`]).
    pub violations: u64,
    /// Vacuity guards met (bits of [`seen`]).
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
